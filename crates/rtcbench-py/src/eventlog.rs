//! `rtcbench_eventlog` to Python: a log's bytes to tables of columns (lists, `None` where a
//! value is absent), for `rtcbench.eventlog` to make polars frames of.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use pyo3::BoundObject;
use rtcbench_eventlog::{Direction, EventLog};

create_exception!(_core, EventLogError, PyValueError, "An RTC event log that cannot be read.");

/// One column as a Python list (`None` where a value is absent).
fn col<'py, T>(py: Python<'py>, values: &T) -> PyResult<Bound<'py, PyAny>>
where
    T: Clone + IntoPyObject<'py>,
{
    Ok(values.clone().into_pyobject(py).map_err(Into::into)?.into_any().into_bound())
}

/// Bytes as numbers: a `Vec<u8>` would become a Python `bytes`.
fn numbers(values: &[u8]) -> Vec<u32> {
    values.iter().map(|v| u32::from(*v)).collect()
}

fn optional_numbers(values: &[Option<u8>]) -> Vec<Option<u32>> {
    values.iter().map(|v| v.map(u32::from)).collect()
}

fn directions(d: &[Direction]) -> Vec<&'static str> {
    d.iter().map(|d| d.as_str()).collect()
}

/// The tables of the log in `data`: `{table: {column: list}}` plus `start` ((log ms, UTC ms,
/// version) or None), `end_ms` and `skipped` ((field, count) of events not read).
#[pyfunction]
pub(crate) fn read_event_log<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyBytes>,
) -> PyResult<Bound<'py, PyDict>> {
    let bytes = data.as_bytes();
    let log = py.detach(|| EventLog::parse(bytes)).map_err(|e| EventLogError::new_err(e.to_string()))?;
    let out = PyDict::new(py);
    out.set_item("start", log.start.map(|s| (s.timestamp_ms, s.utc_time_ms, s.version)))?;
    out.set_item("end_ms", log.end_ms)?;
    out.set_item("skipped", log.skipped.clone())?;
    let table = |name: &str, columns: Vec<(&str, Bound<'py, PyAny>)>| -> PyResult<()> {
        let d = PyDict::new(py);
        for (column, values) in columns {
            d.set_item(column, values)?;
        }
        out.set_item(name, d)
    };
    let r = &log.rtp;
    table(
        "rtp",
        vec![
            ("t_ms", col(py, &r.t_ms)?),
            ("direction", col(py, &directions(&r.direction))?),
            ("ssrc", col(py, &r.ssrc)?),
            ("seq", col(py, &r.seq)?),
            ("rtp_timestamp", col(py, &r.rtp_timestamp)?),
            ("payload_type", col(py, &numbers(&r.payload_type))?),
            ("marker", col(py, &r.marker)?),
            ("header_size", col(py, &r.header_size)?),
            ("payload_size", col(py, &r.payload_size)?),
            ("padding_size", col(py, &r.padding_size)?),
            ("transport_seq", col(py, &r.transport_seq)?),
            ("abs_send_time", col(py, &r.abs_send_time)?),
            ("audio_level", col(py, &optional_numbers(&r.audio_level))?),
        ],
    )?;
    let c = &log.rtcp;
    table(
        "rtcp",
        vec![
            ("t_ms", col(py, &c.t_ms)?),
            ("direction", col(py, &directions(&c.direction))?),
            ("size", col(py, &c.size)?),
            ("index", col(py, &c.index)?),
            ("kind", col(py, &c.kind)?),
            ("packet_type", col(py, &c.packet_type)?),
            ("fmt", col(py, &c.fmt)?),
            ("media_ssrc", col(py, &c.media_ssrc)?),
            ("feedback_base_seq", col(py, &c.feedback_base_seq)?),
            ("feedback_packets", col(py, &c.feedback_packets)?),
            ("feedback_received", col(py, &c.feedback_received)?),
            ("remb_bps", col(py, &c.remb_bps)?),
            ("nack_packets", col(py, &c.nack_packets)?),
            ("sr_ntp_mid", col(py, &c.sr_ntp_mid)?),
            ("report_fraction_lost", col(py, &optional_numbers(&c.report_fraction_lost))?),
            ("report_lsr", col(py, &c.report_lsr)?),
            ("report_dlsr", col(py, &c.report_dlsr)?),
        ],
    )?;
    let w = &log.twcc;
    table(
        "twcc",
        vec![
            ("t_ms", col(py, &w.t_ms)?),
            ("direction", col(py, &directions(&w.direction))?),
            ("message", col(py, &w.message)?),
            ("feedback_count", col(py, &numbers(&w.feedback_count))?),
            ("transport_seq", col(py, &w.transport_seq)?),
            ("arrival_us", col(py, &w.arrival_us)?),
        ],
    )?;
    let f = &log.ccfb;
    table(
        "ccfb",
        vec![
            ("t_ms", col(py, &f.t_ms)?),
            ("direction", col(py, &directions(&f.direction))?),
            ("message", col(py, &f.message)?),
            ("media_ssrc", col(py, &f.media_ssrc)?),
            ("seq", col(py, &f.seq)?),
            ("ecn", col(py, &f.ecn.iter().map(|v| v.map(u32::from)).collect::<Vec<_>>())?),
            ("arrival_us", col(py, &f.arrival_us)?),
        ],
    )?;
    let d = &log.delay_based;
    table(
        "delay_based",
        vec![
            ("t_ms", col(py, &d.t_ms)?),
            ("bitrate_bps", col(py, &d.bitrate_bps)?),
            ("detector_state", col(py, &d.detector_state)?),
        ],
    )?;
    let l = &log.loss_based;
    table(
        "loss_based",
        vec![
            ("t_ms", col(py, &l.t_ms)?),
            ("bitrate_bps", col(py, &l.bitrate_bps)?),
            ("fraction_loss", col(py, &l.fraction_loss)?),
            ("total_packets", col(py, &l.total_packets)?),
        ],
    )?;
    let p = &log.probe_clusters;
    table(
        "probe_clusters",
        vec![
            ("t_ms", col(py, &p.t_ms)?),
            ("id", col(py, &p.id)?),
            ("bitrate_bps", col(py, &p.bitrate_bps)?),
            ("min_packets", col(py, &p.min_packets)?),
            ("min_bytes", col(py, &p.min_bytes)?),
        ],
    )?;
    let p = &log.probe_results;
    table(
        "probe_results",
        vec![
            ("t_ms", col(py, &p.t_ms)?),
            ("id", col(py, &p.id)?),
            ("bitrate_bps", col(py, &p.bitrate_bps)?),
            ("failure", col(py, &p.failure)?),
        ],
    )?;
    table("alr", vec![("t_ms", col(py, &log.alr.t_ms)?), ("in_alr", col(py, &log.alr.in_alr)?)])?;
    table(
        "routes",
        vec![
            ("t_ms", col(py, &log.routes.t_ms)?),
            ("connected", col(py, &log.routes.connected)?),
            ("overhead", col(py, &log.routes.overhead)?),
        ],
    )?;
    table(
        "targets",
        vec![("t_ms", col(py, &log.targets.t_ms)?), ("target_bps", col(py, &log.targets.target_bps)?)],
    )?;
    let s = &log.streams;
    table(
        "streams",
        vec![
            ("t_ms", col(py, &s.t_ms)?),
            ("direction", col(py, &directions(&s.direction))?),
            ("media", col(py, &s.media)?),
            ("ssrc", col(py, &s.ssrc)?),
            ("rtx_ssrc", col(py, &s.rtx_ssrc)?),
        ],
    )?;
    Ok(out)
}
