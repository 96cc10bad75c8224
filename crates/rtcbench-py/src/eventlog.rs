//! `rtcbench_eventlog` to Python: a log's bytes to tables of columns (lists, `None` where a
//! value is absent), for `rtcbench.eventlog` to make polars frames of.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use rtcbench_eventlog::{Direction, EventLog};

create_exception!(_core, EventLogError, PyValueError, "An RTC event log that cannot be read.");

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
            ("t_ms", r.t_ms.clone().into_pyobject(py)?.into_any()),
            ("direction", directions(&r.direction).into_pyobject(py)?.into_any()),
            ("ssrc", r.ssrc.clone().into_pyobject(py)?.into_any()),
            ("seq", r.seq.clone().into_pyobject(py)?.into_any()),
            ("rtp_timestamp", r.rtp_timestamp.clone().into_pyobject(py)?.into_any()),
            (
                "payload_type",
                r.payload_type
                    .iter()
                    .map(|v| u32::from(*v))
                    .collect::<Vec<_>>()
                    .into_pyobject(py)?
                    .into_any(),
            ),
            ("marker", r.marker.clone().into_pyobject(py)?.into_any()),
            ("header_size", r.header_size.clone().into_pyobject(py)?.into_any()),
            ("payload_size", r.payload_size.clone().into_pyobject(py)?.into_any()),
            ("padding_size", r.padding_size.clone().into_pyobject(py)?.into_any()),
            ("transport_seq", r.transport_seq.clone().into_pyobject(py)?.into_any()),
            ("abs_send_time", r.abs_send_time.clone().into_pyobject(py)?.into_any()),
            (
                "audio_level",
                r.audio_level
                    .iter()
                    .map(|v| v.map(u32::from))
                    .collect::<Vec<_>>()
                    .into_pyobject(py)?
                    .into_any(),
            ),
        ],
    )?;
    let c = &log.rtcp;
    table(
        "rtcp",
        vec![
            ("t_ms", c.t_ms.clone().into_pyobject(py)?.into_any()),
            ("direction", directions(&c.direction).into_pyobject(py)?.into_any()),
            ("size", c.size.clone().into_pyobject(py)?.into_any()),
            ("index", c.index.clone().into_pyobject(py)?.into_any()),
            ("kind", c.kind.clone().into_pyobject(py)?.into_any()),
            ("packet_type", c.packet_type.clone().into_pyobject(py)?.into_any()),
            ("fmt", c.fmt.clone().into_pyobject(py)?.into_any()),
            ("media_ssrc", c.media_ssrc.clone().into_pyobject(py)?.into_any()),
            ("feedback_base_seq", c.feedback_base_seq.clone().into_pyobject(py)?.into_any()),
            ("feedback_packets", c.feedback_packets.clone().into_pyobject(py)?.into_any()),
            ("feedback_received", c.feedback_received.clone().into_pyobject(py)?.into_any()),
            ("remb_bps", c.remb_bps.clone().into_pyobject(py)?.into_any()),
            ("nack_packets", c.nack_packets.clone().into_pyobject(py)?.into_any()),
        ],
    )?;
    let w = &log.twcc;
    table(
        "twcc",
        vec![
            ("t_ms", w.t_ms.clone().into_pyobject(py)?.into_any()),
            ("direction", directions(&w.direction).into_pyobject(py)?.into_any()),
            ("message", w.message.clone().into_pyobject(py)?.into_any()),
            (
                "feedback_count",
                w.feedback_count
                    .iter()
                    .map(|v| u32::from(*v))
                    .collect::<Vec<_>>()
                    .into_pyobject(py)?
                    .into_any(),
            ),
            ("transport_seq", w.transport_seq.clone().into_pyobject(py)?.into_any()),
            ("arrival_us", w.arrival_us.clone().into_pyobject(py)?.into_any()),
        ],
    )?;
    let d = &log.delay_based;
    table(
        "delay_based",
        vec![
            ("t_ms", d.t_ms.clone().into_pyobject(py)?.into_any()),
            ("bitrate_bps", d.bitrate_bps.clone().into_pyobject(py)?.into_any()),
            ("detector_state", d.detector_state.clone().into_pyobject(py)?.into_any()),
        ],
    )?;
    let l = &log.loss_based;
    table(
        "loss_based",
        vec![
            ("t_ms", l.t_ms.clone().into_pyobject(py)?.into_any()),
            ("bitrate_bps", l.bitrate_bps.clone().into_pyobject(py)?.into_any()),
            ("fraction_loss", l.fraction_loss.clone().into_pyobject(py)?.into_any()),
            ("total_packets", l.total_packets.clone().into_pyobject(py)?.into_any()),
        ],
    )?;
    let p = &log.probe_clusters;
    table(
        "probe_clusters",
        vec![
            ("t_ms", p.t_ms.clone().into_pyobject(py)?.into_any()),
            ("id", p.id.clone().into_pyobject(py)?.into_any()),
            ("bitrate_bps", p.bitrate_bps.clone().into_pyobject(py)?.into_any()),
            ("min_packets", p.min_packets.clone().into_pyobject(py)?.into_any()),
            ("min_bytes", p.min_bytes.clone().into_pyobject(py)?.into_any()),
        ],
    )?;
    let p = &log.probe_results;
    table(
        "probe_results",
        vec![
            ("t_ms", p.t_ms.clone().into_pyobject(py)?.into_any()),
            ("id", p.id.clone().into_pyobject(py)?.into_any()),
            ("bitrate_bps", p.bitrate_bps.clone().into_pyobject(py)?.into_any()),
            ("failure", p.failure.clone().into_pyobject(py)?.into_any()),
        ],
    )?;
    table(
        "alr",
        vec![
            ("t_ms", log.alr.t_ms.clone().into_pyobject(py)?.into_any()),
            ("in_alr", log.alr.in_alr.clone().into_pyobject(py)?.into_any()),
        ],
    )?;
    table(
        "routes",
        vec![
            ("t_ms", log.routes.t_ms.clone().into_pyobject(py)?.into_any()),
            ("connected", log.routes.connected.clone().into_pyobject(py)?.into_any()),
            ("overhead", log.routes.overhead.clone().into_pyobject(py)?.into_any()),
        ],
    )?;
    table(
        "targets",
        vec![
            ("t_ms", log.targets.t_ms.clone().into_pyobject(py)?.into_any()),
            ("target_bps", log.targets.target_bps.clone().into_pyobject(py)?.into_any()),
        ],
    )?;
    let s = &log.streams;
    table(
        "streams",
        vec![
            ("t_ms", s.t_ms.clone().into_pyobject(py)?.into_any()),
            ("direction", directions(&s.direction).into_pyobject(py)?.into_any()),
            ("media", s.media.clone().into_pyobject(py)?.into_any()),
            ("ssrc", s.ssrc.clone().into_pyobject(py)?.into_any()),
            ("rtx_ssrc", s.rtx_ssrc.clone().into_pyobject(py)?.into_any()),
        ],
    )?;
    Ok(out)
}
