//! PyO3 glue for rtcbench: the private `rtcbench._core` module. Logic lives in the Rust crates;
//! these functions only convert arguments and results and map errors (STYLE.md §9).

use numpy::IntoPyArray;
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use rtcbench_cc::ControllerKind;
use rtcbench_sim::scenario::{self, builtin};
use rtcbench_sim::trace::{self, ColumnData, Trace};

create_exception!(_core, ScenarioError, PyValueError, "A scenario file or override that cannot be used.");

fn scenario_err(e: scenario::ScenarioError) -> PyErr {
    ScenarioError::new_err(e.to_string())
}

/// The version of the native core.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// Built-in scenarios: (id, path in the repository, title, source).
#[pyfunction]
fn builtin_scenarios() -> PyResult<Vec<(String, String, String, String)>> {
    builtin::BUILTIN
        .iter()
        .map(|(id, path, text)| {
            let spec = scenario::parse(text, path).map_err(scenario_err)?;
            Ok((
                (*id).to_string(),
                (*path).to_string(),
                spec.title.unwrap_or_default(),
                spec.source.unwrap_or_default(),
            ))
        })
        .collect()
}

/// The text of a built-in scenario and its origin, or None.
#[pyfunction]
fn builtin_text(id: &str) -> Option<(String, String)> {
    builtin::find(id).map(|(t, o)| (t.to_string(), o))
}

/// Controllers: (name, description).
#[pyfunction]
fn controllers() -> Vec<(&'static str, &'static str)> {
    ControllerKind::ALL.iter().map(|k| (k.name(), k.description())).collect()
}

/// Expands scenario text into its variants: (scenario id, variant, slug, resolved TOML).
#[pyfunction]
#[pyo3(signature = (text, origin, sets = Vec::new()))]
fn expand(text: &str, origin: &str, sets: Vec<String>) -> PyResult<Vec<(String, String, String, String)>> {
    let variants = scenario::load(text, origin, &sets).map_err(scenario_err)?;
    Ok(variants
        .into_iter()
        .map(|s| (s.spec.id.clone(), s.variant.clone(), s.variant_slug(), s.to_toml()))
        .collect())
}

fn columns<'py>(py: Python<'py>, cols: Vec<(&str, Bound<'py, PyAny>)>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, v) in cols {
        d.set_item(name, v)?;
    }
    Ok(d)
}

fn names<'py>(py: Python<'py>, codes: &[&str]) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, codes)
}

fn trace_to_dict<'py>(py: Python<'py>, t: Trace) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    let p = t.packets;
    out.set_item(
        "packets",
        columns(
            py,
            vec![
                ("t_us", p.t_us.into_pyarray(py).into_any()),
                ("event", p.event.into_pyarray(py).into_any()),
                ("packet", p.packet.into_pyarray(py).into_any()),
                ("flow", p.flow.into_pyarray(py).into_any()),
                ("kind", p.kind.into_pyarray(py).into_any()),
                ("size", p.size.into_pyarray(py).into_any()),
                ("payload", p.payload.into_pyarray(py).into_any()),
                ("sent_us", p.sent_us.into_pyarray(py).into_any()),
                ("seq", p.seq.into_pyarray(py).into_any()),
                ("frame", p.frame.into_pyarray(py).into_any()),
                ("link", p.link.into_pyarray(py).into_any()),
                ("reason", p.reason.into_pyarray(py).into_any()),
                ("ecn", p.ecn.into_pyarray(py).into_any()),
            ],
        )?,
    )?;
    let f = t.frames;
    out.set_item(
        "frames",
        columns(
            py,
            vec![
                ("flow", f.flow.into_pyarray(py).into_any()),
                ("frame", f.frame.into_pyarray(py).into_any()),
                ("capture_us", f.capture_us.into_pyarray(py).into_any()),
                ("size", f.size.into_pyarray(py).into_any()),
                ("keyframe", f.keyframe.into_pyarray(py).into_any()),
                ("packets", f.packets.into_pyarray(py).into_any()),
                ("complete_us", f.complete_us.into_pyarray(py).into_any()),
                ("freeze", f.freeze.into_pyarray(py).into_any()),
            ],
        )?,
    )?;
    let c = t.controller;
    let mut cols = vec![
        ("t_us", c.t_us.into_pyarray(py).into_any()),
        ("call", c.call.into_pyarray(py).into_any()),
        ("target_bps", c.target_bps.into_pyarray(py).into_any()),
        ("pacing_bps", c.pacing_bps.into_pyarray(py).into_any()),
    ];
    let extra: Vec<(String, Bound<'py, PyAny>)> = c
        .columns
        .into_iter()
        .map(|col| {
            let v = match col.data {
                ColumnData::Int(v) => v.into_pyarray(py).into_any(),
                ColumnData::Float(v) => v.into_pyarray(py).into_any(),
                ColumnData::Text(v) => PyList::new(py, v)?.into_any(),
            };
            Ok((col.name, v))
        })
        .collect::<PyResult<_>>()?;
    cols.extend(extra.iter().map(|(n, v)| (n.as_str(), v.clone())));
    out.set_item("controller", columns(py, cols)?)?;
    let l = t.links;
    out.set_item(
        "links",
        columns(
            py,
            vec![
                ("t_us", l.t_us.into_pyarray(py).into_any()),
                ("link", l.link.into_pyarray(py).into_any()),
                ("capacity_bps", l.capacity_bps.into_pyarray(py).into_any()),
                ("queue_bytes", l.queue_bytes.into_pyarray(py).into_any()),
                ("queue_limit_bytes", l.queue_limit_bytes.into_pyarray(py).into_any()),
            ],
        )?,
    )?;
    let fb = t.feedback;
    out.set_item(
        "feedback",
        columns(
            py,
            vec![
                ("t_us", fb.t_us.into_pyarray(py).into_any()),
                ("call", fb.call.into_pyarray(py).into_any()),
                ("kind", fb.kind.into_pyarray(py).into_any()),
                ("size", fb.size.into_pyarray(py).into_any()),
                ("rtt_us", fb.rtt_us.into_pyarray(py).into_any()),
                ("fraction_lost", fb.fraction_lost.into_pyarray(py).into_any()),
                ("packets_reported", fb.packets_reported.into_pyarray(py).into_any()),
            ],
        )?,
    )?;
    let codes = PyDict::new(py);
    codes.set_item("event", names(py, &trace::PacketEvent::NAMES)?)?;
    codes.set_item("kind", names(py, &trace::KIND_NAMES)?)?;
    codes.set_item("ecn", names(py, &trace::ECN_NAMES)?)?;
    codes.set_item("reason", names(py, &trace::REASON_NAMES)?)?;
    codes.set_item("feedback_kind", names(py, &trace::FEEDBACK_KIND_NAMES)?)?;
    out.set_item("codes", codes)?;
    Ok(out)
}

/// Runs one resolved scenario (TOML from `expand`) with a controller and seed, without holding
/// the GIL. Returns the trace tables as dicts of numpy arrays (integer codes for categorical
/// columns, -1/NaN for nulls; `codes` names the categories), `meta` as JSON, `events` and
/// `wall_s` (simulation only).
///
/// With `pcap`, every packet as its sender put it on the wire is also written to that file
/// (written to a temporary name and renamed, so an interrupted run leaves no half capture).
#[pyfunction]
#[pyo3(signature = (resolved, controller, seed, pcap = None))]
fn simulate<'py>(
    py: Python<'py>,
    resolved: &str,
    controller: &str,
    seed: u64,
    pcap: Option<std::path::PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    let kind = ControllerKind::from_name(controller).ok_or_else(|| {
        let known: Vec<&str> = ControllerKind::ALL.iter().map(|k| k.name()).collect();
        PyValueError::new_err(format!("unknown controller {controller:?} (allowed: {})", known.join(", ")))
    })?;
    let mut variants = scenario::load(resolved, "resolved scenario", &[]).map_err(scenario_err)?;
    if variants.len() != 1 {
        return Err(PyValueError::new_err("simulate() takes one resolved variant; use expand() first"));
    }
    let s = variants.remove(0);
    let options = rtcbench_sim::RunOptions { capture: pcap.is_some() };
    let (out, wall) = py.detach(|| {
        let t0 = std::time::Instant::now();
        let out = rtcbench_sim::simulate_with(&s, kind, seed, options);
        (out, t0.elapsed().as_secs_f64())
    });
    let mut out = out.map_err(scenario_err)?;
    if let Some(path) = pcap {
        let packets = std::mem::take(&mut out.capture);
        py.detach(|| write_capture(&path, &packets))
            .map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("{}: {e}", path.display())))?;
    }
    let meta = serde_json::to_string(&out.meta).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let d = trace_to_dict(py, out.trace)?;
    d.set_item("meta", meta)?;
    d.set_item("events", out.events)?;
    d.set_item("wall_s", wall)?;
    Ok(d)
}

fn write_capture(path: &std::path::Path, packets: &[rtcbench_sim::Captured]) -> Result<(), String> {
    let tmp = path.with_extension("pcap.tmp");
    let file = std::fs::File::create(&tmp).map_err(|e| e.to_string())?;
    let w = rtcbench_sim::write_pcap(std::io::BufWriter::new(file), packets).map_err(|e| e.to_string())?;
    w.into_inner().map_err(|e| e.to_string())?.sync_all().map_err(|e| e.to_string())?;
    std::fs::rename(&tmp, path).map_err(|e| e.to_string())
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_scenarios, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_text, m)?)?;
    m.add_function(wrap_pyfunction!(controllers, m)?)?;
    m.add_function(wrap_pyfunction!(expand, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    Ok(())
}
