//! PyO3 glue for rtcbench: the private `rtcbench._core` module. Logic lives in the Rust crates;
//! these functions only convert arguments and results and map errors (STYLE.md §9). Python-defined
//! controllers are adapted to the controller trait in [`controller`]; [`run`] runs a scenario
//! on a thread of its own and hands its trace to Python in pieces; [`simulation`] exposes a run
//! advanced in steps, for the learning environment.

mod controller;
mod eventlog;
mod learned;
mod run;
mod simulation;

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};

use numpy::IntoPyArray;
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use rtcbench_cc::ControllerKind;
use rtcbench_scenario::Scenario;
use rtcbench_scenario::{self as scenario, builtin};
use rtcbench_sim::trace::{self, ColumnData, Trace};
use rtcbench_sim::{CallSetup, ControllerChoice, RunOutput, UserController};

use crate::controller::{ControllerError, Prepared, PyController};

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

/// One variant as Python's `scenarios.Variant` takes it: (scenario id, variant, slug, resolved
/// TOML, fingerprint: the SHA-256 of what the variant runs, and the loaded variant itself).
type VariantRow = (String, String, String, String, String, PyResolved);

/// Expands scenario text into its variants.
#[pyfunction]
#[pyo3(signature = (text, origin, sets = Vec::new()))]
fn expand(text: &str, origin: &str, sets: Vec<String>) -> PyResult<Vec<VariantRow>> {
    let variants = scenario::load(text, origin, &sets).map_err(scenario_err)?;
    Ok(variants
        .into_iter()
        .map(|s| {
            let (slug, toml) = (s.variant_slug(), s.to_toml());
            let row = (s.spec.id.clone(), s.variant.clone(), slug, toml.clone(), s.fingerprint.clone());
            (row.0, row.1, row.2, row.3, row.4, PyResolved { scenario: Arc::new(s), toml })
        })
        .collect())
}

/// One variant as the loader resolved and checked it (`Variant.core`): what runs it, plans its
/// network and calls, or computes its `meta` takes it as it is, with no second parse. Pickled as
/// its resolved TOML (a worker process loads it again).
#[pyclass(frozen, module = "rtcbench._core", name = "Resolved")]
#[derive(Clone)]
pub(crate) struct PyResolved {
    scenario: Arc<Scenario>,
    toml: String,
}

#[pymethods]
impl PyResolved {
    /// Loads the one variant a resolved scenario (TOML from `expand`) describes.
    #[new]
    fn new(toml: &str) -> PyResult<Self> {
        let mut variants = scenario::load(toml, "resolved scenario", &[]).map_err(scenario_err)?;
        if variants.len() != 1 {
            return Err(PyValueError::new_err("a resolved scenario has one variant; use expand() first"));
        }
        Ok(Self { scenario: Arc::new(variants.remove(0)), toml: toml.to_string() })
    }

    /// The resolved TOML.
    #[getter]
    fn toml(&self) -> &str {
        &self.toml
    }

    /// The SHA-256 of what the variant runs.
    #[getter]
    fn fingerprint(&self) -> &str {
        &self.scenario.fingerprint
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (String,))> {
        Ok((slf.get_type().into_any(), (slf.get().toml.clone(),)))
    }

    fn __repr__(&self) -> String {
        format!("Resolved({} {:?})", self.scenario.spec.id, self.scenario.variant)
    }
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

/// The one variant `resolved` is: a [`PyResolved`] (`Variant.core`, loaded once by `expand`), or
/// resolved TOML, loaded here.
pub(crate) fn one_variant(resolved: &Bound<'_, PyAny>, what: &str) -> PyResult<Arc<Scenario>> {
    if let Ok(r) = resolved.cast::<PyResolved>() {
        return Ok(r.get().scenario.clone());
    }
    let toml: &str = resolved.extract().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!("{what} takes a Resolved variant or its TOML"))
    })?;
    Ok(PyResolved::new(toml)?.scenario)
}

/// The network an emulation relay realises for one resolved variant and seed, as JSON
/// (`rtcbench_scenario::elements::NetworkPlan`: every link's elements and the routes).
#[pyfunction]
fn network_plan(resolved: &Bound<'_, PyAny>, seed: u64) -> PyResult<String> {
    let s = one_variant(resolved, "network_plan")?;
    let plan = scenario::elements::NetworkPlan::new(&s, seed).map_err(scenario_err)?;
    serde_json::to_string(&plan).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The run's `meta` (nodes, links, calls, conferences, flows with their ids, paths and
/// bottlenecks) of one resolved variant with `seed`, every call labelled `controller`, as JSON
/// (`rtcbench_scenario::run::Meta`): what a simulated run of it writes, computed without running.
#[pyfunction]
fn run_meta(resolved: &Bound<'_, PyAny>, controller: &str, seed: u64) -> PyResult<String> {
    let s = one_variant(resolved, "run_meta")?;
    let plan = scenario::run::RunPlan::new(&s, controller, seed).map_err(scenario_err)?;
    serde_json::to_string(&plan.meta).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Why a scenario file of `size` bytes is refused before it is read (over `MAX_SCENARIO_BYTES`).
#[pyfunction]
fn scenario_too_large(size: usize) -> String {
    scenario::too_large(size)
}

/// A duration as a scenario writes it (`"50ms"`), in seconds: the loader's own parser, for the
/// text of a resolved variant or a plan (`ValueError` naming the units otherwise).
#[pyfunction]
fn duration_s(text: &str) -> PyResult<f64> {
    text.parse::<rtcbench_units::Duration>()
        .map(rtcbench_units::Duration::as_secs_f64)
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// A rate as a scenario writes it (`"2Mbps"`), in bit/s: the loader's own parser.
#[pyfunction]
fn rate_bps(text: &str) -> PyResult<u64> {
    text.parse::<rtcbench_units::Bitrate>()
        .map(rtcbench_units::Bitrate::as_bps)
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The cross traffic of one resolved variant as JSON (`rtcbench_scenario::cross::CrossPlan`):
/// every TCP connection and CBR flow as the simulator builds it, for the testbed's agents.
#[pyfunction]
fn cross_plan(resolved: &Bound<'_, PyAny>) -> PyResult<String> {
    let s = one_variant(resolved, "cross_plan")?;
    let end = rtcbench_units::Instant::ZERO + *s.spec.duration.get();
    let plan = scenario::cross::CrossPlan::new(&s.spec, end);
    serde_json::to_string(&plan).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The calls of one resolved variant as live agents build their endpoints, as JSON: per call (in
/// `meta.calls` order, `scenario::calls::run_calls`) its id, name, sending and receiving nodes,
/// relay (`via`), `role` and `CallPlan` for `seed`. An SFU's forward leg has no sender of its
/// own and no plan (`null`): the forwarding element builds it.
#[pyfunction]
fn call_plans(resolved: &Bound<'_, PyAny>, seed: u64) -> PyResult<String> {
    use scenario::calls::{run_calls, Role};
    let s = one_variant(resolved, "call_plans")?;
    let end = rtcbench_units::Instant::ZERO + *s.spec.duration.get();
    let calls: Vec<serde_json::Value> = run_calls(&s.spec)
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let plan = (c.role != Role::Forward).then(|| {
                scenario::elements::call_plan(&c.spec, k as u32, &c.label, &s.spec.controller, seed, end)
            });
            serde_json::json!({
                "id": k,
                "name": c.name,
                "from": c.spec.from,
                "to": c.spec.to,
                "via": c.spec.via,
                "role": c.role.name(),
                "codec": c.spec.video.as_ref().and_then(|v| v.codec).unwrap_or_default(),
                "picture": c.spec.video.as_ref().and_then(|v| v.picture).unwrap_or_default(),
                "degradation": c.spec.video.as_ref().and_then(|v| v.degradation),
                "plan": plan,
            })
        })
        .collect();
    serde_json::to_string(&calls).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// A built-in controller by name, or a `ValueError` that lists the names.
pub(crate) fn builtin_kind(controller: &str) -> PyResult<ControllerKind> {
    ControllerKind::from_name(controller).ok_or_else(|| {
        let known: Vec<&str> = ControllerKind::ALL.iter().map(|k| k.name()).collect();
        PyValueError::new_err(format!("unknown controller {controller:?} (allowed: {})", known.join(", ")))
    })
}

/// A finished run as `simulate` returns it: the trace tables, `meta` as JSON, `events`, `wall_s`.
pub(crate) fn output_dict(py: Python<'_>, out: RunOutput, wall_s: f64) -> PyResult<Bound<'_, PyDict>> {
    let meta = serde_json::to_string(&out.meta).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let d = trace_to_dict(py, out.trace)?;
    d.set_item("meta", meta)?;
    d.set_item("events", out.events)?;
    d.set_item("wall_s", wall_s)?;
    Ok(d)
}

/// A column's values as a numpy array.
fn array(py: Python<'_>, values: trace::schema::Values) -> Bound<'_, PyAny> {
    use trace::schema::Values;
    match values {
        Values::Bool(v) => v.into_pyarray(py).into_any(),
        Values::U8(v) => v.into_pyarray(py).into_any(),
        Values::I16(v) => v.into_pyarray(py).into_any(),
        Values::I32(v) => v.into_pyarray(py).into_any(),
        Values::I64(v) => v.into_pyarray(py).into_any(),
        Values::F64(v) => v.into_pyarray(py).into_any(),
    }
}

/// A table as `{column: array}`, named as `trace::schema` names it.
fn table<'py>(py: Python<'py>, cols: Vec<(&str, trace::schema::Values)>) -> PyResult<Bound<'py, PyDict>> {
    columns(py, cols.into_iter().map(|(name, v)| (name, array(py, v))).collect())
}

pub(crate) fn trace_to_dict<'py>(py: Python<'py>, t: Trace) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("packets", table(py, t.packets.into_columns())?)?;
    out.set_item("frames", table(py, t.frames.into_columns())?)?;
    let (fixed, own) = t.controller.into_columns();
    let controller = table(py, fixed)?;
    for col in own {
        let v = match col.data {
            ColumnData::Int(v) => v.into_pyarray(py).into_any(),
            ColumnData::Float(v) => v.into_pyarray(py).into_any(),
            ColumnData::Text(v) => PyList::new(py, v)?.into_any(),
        };
        controller.set_item(col.name, v)?;
    }
    out.set_item("controller", controller)?;
    out.set_item("links", table(py, t.links.into_columns())?)?;
    out.set_item("feedback", table(py, t.feedback.into_columns())?)?;
    out.set_item("codes", trace_codes(py)?)?;
    Ok(out)
}

/// The trace tables' columns (`rtcbench_sim::trace::schema`): per table, in order, each
/// column's `(name, type, presence, encoding)`: type `bool`, `int32`, `int64`, `float64` or
/// `text`; presence `required`, `nullable`, `optional` or `extra`; encoding `plain`,
/// `sentinel` (-1 or NaN is null), `link` (a link id) or the name of its list of codes
/// (`trace_codes`).
#[pyfunction]
fn trace_schema(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for (name, columns) in trace::schema::TABLES {
        let rows: Vec<(&str, &str, &str, &str)> =
            columns.iter().map(|c| (c.name, c.ty.name(), c.presence.name(), c.encoding.name())).collect();
        d.set_item(name, rows)?;
    }
    Ok(d)
}

/// The names behind the trace's coded columns, by code: `packets.event`, `packets.kind`,
/// `packets.ecn`, `packets.reason` and `feedback.kind` (as `feedback_kind`). Every producer of
/// trace tables (the simulator, the emulation and browser testbeds) codes them with these.
#[pyfunction]
fn trace_codes(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let codes = PyDict::new(py);
    codes.set_item("event", names(py, &trace::PacketEvent::NAMES)?)?;
    codes.set_item("kind", names(py, &trace::KIND_NAMES)?)?;
    codes.set_item("ecn", names(py, &trace::ECN_NAMES)?)?;
    codes.set_item("reason", names(py, &trace::REASON_NAMES)?)?;
    codes.set_item("feedback_kind", names(py, &trace::FEEDBACK_KIND_NAMES)?)?;
    Ok(codes)
}

/// The Python controllers of a run, one per call from `factory(call, calls)`, as the simulator
/// builds them; the first error any of them meets is left in the returned slot.
pub(crate) fn user_controller(
    factory: &Bound<'_, PyAny>,
    name: &str,
    calls: usize,
) -> PyResult<(ControllerChoice, Arc<OnceLock<PyErr>>)> {
    let mut prepared = VecDeque::with_capacity(calls);
    for call in 0..calls {
        let obj = factory.call1((call, calls))?;
        prepared.push_back(Prepared::new(&obj, name, call)?);
    }
    let feedback = prepared.front().map(Prepared::feedback).unwrap_or_default();
    if prepared.iter().any(|p| p.feedback() != feedback) {
        return Err(PyValueError::new_err(format!(
            "controller {name}: the controllers of one run must ask for the same feedback"
        )));
    }
    let failure = Arc::new(OnceLock::new());
    let slot = failure.clone();
    let build = move |setup: &CallSetup| -> Box<dyn rtcbench_cc::Controller> {
        let p = prepared.pop_front().expect("the simulator builds one controller per call");
        Box::new(PyController::new(p, setup, slot.clone()))
    };
    let user = UserController { name: name.to_string(), feedback, build: Box::new(build) };
    Ok((ControllerChoice::User(user), failure))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("ControllerError", m.py().get_type::<ControllerError>())?;
    m.add("EventLogError", m.py().get_type::<eventlog::EventLogError>())?;
    m.add_function(wrap_pyfunction!(eventlog::read_event_log, m)?)?;
    m.add_class::<controller::PySentPacket>()?;
    m.add_class::<controller::PyPacketResult>()?;
    m.add_class::<controller::PyFeedbackReport>()?;
    m.add_class::<controller::PyLossReport>()?;
    m.add_class::<controller::PyProbeInfo>()?;
    m.add_class::<controller::PyCallInfo>()?;
    m.add_class::<simulation::PySimulation>()?;
    m.add_class::<run::PyRun>()?;
    m.add_class::<PyResolved>()?;
    m.add_class::<learned::PyPolicy>()?;
    m.add_class::<simulation::PyIntervalStats>()?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(learned::observations, m)?)?;
    m.add_function(wrap_pyfunction!(network_plan, m)?)?;
    m.add_function(wrap_pyfunction!(run_meta, m)?)?;
    m.add_function(wrap_pyfunction!(trace_codes, m)?)?;
    m.add_function(wrap_pyfunction!(trace_schema, m)?)?;
    m.add_function(wrap_pyfunction!(call_plans, m)?)?;
    m.add_function(wrap_pyfunction!(cross_plan, m)?)?;
    m.add_function(wrap_pyfunction!(duration_s, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_too_large, m)?)?;
    m.add("MAX_SCENARIO_BYTES", scenario::limits::MAX_SCENARIO_BYTES)?;
    m.add_function(wrap_pyfunction!(rate_bps, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_scenarios, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_text, m)?)?;
    m.add_function(wrap_pyfunction!(controllers, m)?)?;
    m.add_function(wrap_pyfunction!(expand, m)?)?;
    Ok(())
}
