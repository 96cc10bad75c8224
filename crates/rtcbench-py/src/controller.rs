//! Python-defined controllers: the feedback vocabulary as Python classes, and [`PyController`],
//! which runs an `rtcbench.Controller` subclass behind the same [`Controller`] trait as the
//! built-in controllers (docs/controllers/python.md).
//!
//! Units on the Python side are those of the trace tables: times are integer microseconds
//! (`*_us`, on the simulation's clock), sizes bytes, rates bit/s.
//!
//! A run with a Python controller holds the GIL throughout (the controller is called for every
//! feedback message), so `Python::attach` in each method below only reads a thread-local count.

use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyString, PyTuple};
use rtcbench_cc::{
    user, Controller, ControllerMetrics, Ecn, FeedbackReport, LossReport, PacketResult, ProbeInfo, SentPacket,
};
use rtcbench_sim::{CallSetup, UserFeedback};
use rtcbench_units::{Bitrate, Instant};

create_exception!(
    rtcbench,
    ControllerError,
    PyRuntimeError,
    "A Python controller raised an exception or returned a value the simulator cannot use; the \
     message names the controller, its call and the method, and `__cause__` holds what it raised."
);

fn ecn_from_name(name: &str) -> PyResult<&'static str> {
    Ecn::from_name(name).map(Ecn::name).ok_or_else(|| {
        PyValueError::new_err(format!("unknown ECN codepoint {name:?} (allowed: {})", Ecn::NAMES.join(", ")))
    })
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "None".to_string(), |v| v.to_string())
}

/// Which probe cluster a packet belongs to (libwebrtc's `PacedPacketInfo`).
#[pyclass(frozen, get_all, eq, from_py_object, module = "rtcbench", name = "ProbeInfo")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PyProbeInfo {
    cluster_id: i32,
    min_probes: u32,
    min_bytes: u64,
}

impl From<ProbeInfo> for PyProbeInfo {
    fn from(p: ProbeInfo) -> Self {
        Self { cluster_id: p.cluster_id, min_probes: p.min_probes, min_bytes: p.min_bytes.as_bytes() }
    }
}

#[pymethods]
impl PyProbeInfo {
    #[new]
    #[pyo3(signature = (*, cluster_id, min_probes, min_bytes))]
    fn new(cluster_id: i32, min_probes: u32, min_bytes: u64) -> Self {
        Self { cluster_id, min_probes, min_bytes }
    }
    fn __repr__(&self) -> String {
        format!(
            "ProbeInfo(cluster_id={}, min_probes={}, min_bytes={})",
            self.cluster_id, self.min_probes, self.min_bytes
        )
    }
    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }
    fn __deepcopy__(slf: Py<Self>, _memo: &Bound<'_, PyAny>) -> Py<Self> {
        slf
    }
}

fn probe_repr(p: Option<PyProbeInfo>) -> String {
    p.map_or_else(|| "None".to_string(), |p| p.__repr__())
}

/// A packet the sender put on the wire (`rtcbench_cc::SentPacket`).
#[pyclass(frozen, get_all, eq, module = "rtcbench", name = "SentPacket")]
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PySentPacket {
    seq: i64,
    size: u64,
    sent_us: i64,
    is_audio: bool,
    probe: Option<PyProbeInfo>,
    data_in_flight: u64,
}

impl From<&SentPacket> for PySentPacket {
    fn from(p: &SentPacket) -> Self {
        Self {
            seq: p.seq,
            size: p.size.as_bytes(),
            sent_us: p.sent_at.as_micros(),
            is_audio: p.is_audio,
            probe: p.probe.map(PyProbeInfo::from),
            data_in_flight: p.data_in_flight.as_bytes(),
        }
    }
}

#[pymethods]
impl PySentPacket {
    #[new]
    #[pyo3(signature = (*, seq, size, sent_us, is_audio = false, probe = None, data_in_flight = 0))]
    fn new(
        seq: i64,
        size: u64,
        sent_us: i64,
        is_audio: bool,
        probe: Option<PyProbeInfo>,
        data_in_flight: u64,
    ) -> Self {
        Self { seq, size, sent_us, is_audio, probe, data_in_flight }
    }
    fn __repr__(&self) -> String {
        format!(
            "SentPacket(seq={}, size={}, sent_us={}, is_audio={}, probe={}, data_in_flight={})",
            self.seq,
            self.size,
            self.sent_us,
            if self.is_audio { "True" } else { "False" },
            probe_repr(self.probe),
            self.data_in_flight
        )
    }
    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }
    fn __deepcopy__(slf: Py<Self>, _memo: &Bound<'_, PyAny>) -> Py<Self> {
        slf
    }
}

/// What feedback says about one sent packet (`rtcbench_cc::PacketResult`).
#[pyclass(frozen, get_all, eq, module = "rtcbench", name = "PacketResult")]
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PyPacketResult {
    seq: i64,
    size: u64,
    sent_us: i64,
    arrival_us: Option<i64>,
    ecn: &'static str,
    is_audio: bool,
    probe: Option<PyProbeInfo>,
}

impl From<&PacketResult> for PyPacketResult {
    fn from(p: &PacketResult) -> Self {
        Self {
            seq: p.seq,
            size: p.size.as_bytes(),
            sent_us: p.sent_at.as_micros(),
            arrival_us: p.arrival.map(Instant::as_micros),
            ecn: p.ecn.name(),
            is_audio: p.is_audio,
            probe: p.probe.map(PyProbeInfo::from),
        }
    }
}

#[pymethods]
impl PyPacketResult {
    #[new]
    #[pyo3(signature = (*, seq, size, sent_us, arrival_us, ecn = "not-ect", is_audio = false, probe = None))]
    fn new(
        seq: i64,
        size: u64,
        sent_us: i64,
        arrival_us: Option<i64>,
        ecn: &str,
        is_audio: bool,
        probe: Option<PyProbeInfo>,
    ) -> PyResult<Self> {
        Ok(Self { seq, size, sent_us, arrival_us, ecn: ecn_from_name(ecn)?, is_audio, probe })
    }
    /// False if the feedback reports the packet as not received.
    #[getter]
    fn received(&self) -> bool {
        self.arrival_us.is_some()
    }
    fn __repr__(&self) -> String {
        format!(
            "PacketResult(seq={}, size={}, sent_us={}, arrival_us={}, ecn='{}', is_audio={}, probe={})",
            self.seq,
            self.size,
            self.sent_us,
            opt(self.arrival_us),
            self.ecn,
            if self.is_audio { "True" } else { "False" },
            probe_repr(self.probe)
        )
    }
    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }
    fn __deepcopy__(slf: Py<Self>, _memo: &Bound<'_, PyAny>) -> Py<Self> {
        slf
    }
}

/// Loss over one receiver-report interval (`rtcbench_cc::LossReport`).
#[pyclass(frozen, get_all, eq, from_py_object, module = "rtcbench", name = "LossReport")]
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PyLossReport {
    fraction_lost: f64,
    packets_lost_delta: u64,
    packets_received_delta: u64,
}

impl From<&LossReport> for PyLossReport {
    fn from(l: &LossReport) -> Self {
        Self {
            fraction_lost: l.fraction_lost,
            packets_lost_delta: l.packets_lost_delta,
            packets_received_delta: l.packets_received_delta,
        }
    }
}

#[pymethods]
impl PyLossReport {
    #[new]
    #[pyo3(signature = (*, fraction_lost, packets_lost_delta, packets_received_delta))]
    fn new(fraction_lost: f64, packets_lost_delta: u64, packets_received_delta: u64) -> Self {
        Self { fraction_lost, packets_lost_delta, packets_received_delta }
    }
    fn __repr__(&self) -> String {
        format!(
            "LossReport(fraction_lost={}, packets_lost_delta={}, packets_received_delta={})",
            self.fraction_lost, self.packets_lost_delta, self.packets_received_delta
        )
    }
    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }
    fn __deepcopy__(slf: Py<Self>, _memo: &Bound<'_, PyAny>) -> Py<Self> {
        slf
    }
}

/// One parsed feedback message (`rtcbench_cc::FeedbackReport`).
#[pyclass(frozen, get_all, module = "rtcbench", name = "FeedbackReport")]
pub(crate) struct PyFeedbackReport {
    packets: Py<PyTuple>,
    data_in_flight: u64,
    loss: Option<PyLossReport>,
    rtt_us: Option<i64>,
    remb_bps: Option<u64>,
}

impl PyFeedbackReport {
    fn from_report(py: Python<'_>, r: &FeedbackReport) -> PyResult<Self> {
        Ok(Self {
            packets: PyTuple::new(py, r.packets.iter().map(PyPacketResult::from))?.unbind(),
            data_in_flight: r.data_in_flight.as_bytes(),
            loss: r.loss.as_ref().map(PyLossReport::from),
            rtt_us: r.rtt.map(|d| d.as_micros()),
            remb_bps: r.remb.map(Bitrate::as_bps),
        })
    }
}

#[pymethods]
impl PyFeedbackReport {
    #[new]
    #[pyo3(signature = (*, packets = Vec::new(), data_in_flight = 0, loss = None, rtt_us = None, remb_bps = None))]
    fn new(
        py: Python<'_>,
        packets: Vec<Py<PyPacketResult>>,
        data_in_flight: u64,
        loss: Option<PyLossReport>,
        rtt_us: Option<i64>,
        remb_bps: Option<u64>,
    ) -> PyResult<Self> {
        Ok(Self { packets: PyTuple::new(py, packets)?.unbind(), data_in_flight, loss, rtt_us, remb_bps })
    }
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "FeedbackReport(packets={}, data_in_flight={}, loss={}, rtt_us={}, remb_bps={})",
            self.packets.bind(py).repr()?,
            self.data_in_flight,
            self.loss.map_or_else(|| "None".to_string(), |l| l.__repr__()),
            opt(self.rtt_us),
            opt(self.remb_bps)
        ))
    }
    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }
    fn __deepcopy__(slf: Py<Self>, _memo: &Bound<'_, PyAny>) -> Py<Self> {
        slf
    }
}

/// What a controller is told about its call before anything else (`rtcbench_sim::CallSetup`).
#[pyclass(frozen, get_all, eq, module = "rtcbench", name = "CallInfo")]
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct PyCallInfo {
    call: u32,
    start_us: i64,
    min_rate_bps: u64,
    max_rate_bps: u64,
    start_rate_bps: u64,
    priority: f64,
    seed: u64,
}

impl From<&CallSetup> for PyCallInfo {
    fn from(s: &CallSetup) -> Self {
        Self {
            call: s.call,
            start_us: s.start.as_micros(),
            min_rate_bps: s.min_rate.as_bps(),
            max_rate_bps: s.max_rate.as_bps(),
            start_rate_bps: s.start_rate.as_bps(),
            priority: s.priority,
            seed: s.seed,
        }
    }
}

#[pymethods]
impl PyCallInfo {
    #[new]
    #[pyo3(signature = (*, call = 0, start_us = 0, min_rate_bps, max_rate_bps, start_rate_bps, priority = 1.0, seed = 0))]
    fn new(
        call: u32,
        start_us: i64,
        min_rate_bps: u64,
        max_rate_bps: u64,
        start_rate_bps: u64,
        priority: f64,
        seed: u64,
    ) -> Self {
        Self { call, start_us, min_rate_bps, max_rate_bps, start_rate_bps, priority, seed }
    }
    fn __repr__(&self) -> String {
        format!(
            "CallInfo(call={}, start_us={}, min_rate_bps={}, max_rate_bps={}, start_rate_bps={}, priority={}, \
             seed={})",
            self.call,
            self.start_us,
            self.min_rate_bps,
            self.max_rate_bps,
            self.start_rate_bps,
            self.priority,
            self.seed
        )
    }
}

/// The methods of one controller object, bound once; `None` where the subclass keeps the base
/// class's default, which is then not called at all (a no-op, or `None`).
pub(crate) struct Methods {
    on_start: Option<Py<PyAny>>,
    on_packet_sent: Option<Py<PyAny>>,
    on_feedback: Py<PyAny>,
    on_timeout: Option<Py<PyAny>>,
    next_timeout_us: Option<Py<PyAny>>,
    target_rate: Py<PyAny>,
    pacing_rate: Option<Py<PyAny>>,
    metrics: Option<Py<PyAny>>,
}

/// A Python controller ready to run: its label for messages, its bound methods and the feedback it
/// asks for.
pub(crate) struct Prepared {
    label: String,
    methods: Methods,
    feedback: UserFeedback,
}

impl Prepared {
    pub(crate) fn feedback(&self) -> UserFeedback {
        self.feedback
    }

    /// Checks that `obj` is an `rtcbench.Controller` and binds its methods.
    pub(crate) fn new(obj: &Bound<'_, PyAny>, name: &str, call: usize) -> PyResult<Self> {
        let py = obj.py();
        let base = py.import("rtcbench.controller")?.getattr("Controller")?;
        let label = format!("controller {name} (call {call})");
        if !obj.is_instance(&base)? {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "{label}: the factory returned {}, which is not an rtcbench.Controller",
                obj.repr()?
            )));
        }
        let cls = obj.get_type();
        let overridden = |method: &str| -> PyResult<Option<Py<PyAny>>> {
            let own = cls.getattr(method)?;
            Ok((!own.is(&base.getattr(method)?)).then(|| obj.getattr(method)).transpose()?.map(Bound::unbind))
        };
        let feedback = match obj.getattr("feedback")?.extract::<String>()?.as_str() {
            "twcc" => UserFeedback::Twcc,
            "ccfb" => UserFeedback::Ccfb,
            other => {
                return Err(PyValueError::new_err(format!(
                    "{label}: feedback = '{other}'; allowed: 'twcc' (transport-wide feedback) or \
                     'ccfb' (RFC 8888)"
                )))
            }
        };
        let methods = Methods {
            on_start: overridden("on_start")?,
            on_packet_sent: overridden("on_packet_sent")?,
            on_feedback: obj.getattr("on_feedback")?.unbind(),
            on_timeout: overridden("on_timeout")?,
            next_timeout_us: overridden("next_timeout_us")?,
            target_rate: obj.getattr("target_rate")?.unbind(),
            pacing_rate: overridden("pacing_rate")?,
            metrics: overridden("metrics")?,
        };
        Ok(Self { label, methods, feedback })
    }
}

/// A getter's last answer, and whether it still holds: a controller's state changes only in its
/// `on_*` methods, so getters are asked again only after an input.
#[derive(Clone, Copy, Debug)]
struct Answer<T> {
    value: T,
    fresh: bool,
}

impl<T: Copy> Answer<T> {
    fn new(value: T) -> Self {
        Self { value, fresh: false }
    }
    /// The value, asking `ask` first if an input came since; a failed ask keeps the last value.
    fn get(cell: &RefCell<State>, field: fn(&mut State) -> &mut Self, ask: impl FnOnce() -> Option<T>) -> T {
        let answer = *field(&mut cell.borrow_mut());
        if answer.fresh {
            return answer.value;
        }
        // Not borrowed while Python runs.
        let value = ask().unwrap_or(answer.value);
        *field(&mut cell.borrow_mut()) = Self { value, fresh: true };
        value
    }
}

/// What the simulator last learnt from a controller.
struct State {
    /// `now` of the latest input.
    now: Instant,
    /// `now` of the latest `on_timeout`: the next deadline must be later.
    timed_out: Option<Instant>,
    target: Answer<Bitrate>,
    pacing: Answer<Option<Bitrate>>,
    timeout: Answer<Option<Instant>>,
    /// The checker of `metrics()`, which fixes the names and types at its first call.
    layout: user::Metrics,
    metrics: ControllerMetrics,
}

/// An `rtcbench.Controller` behind the [`Controller`] trait.
///
/// A Python exception, or a value the simulator cannot use, becomes a `ControllerError` stored in
/// `failure` (shared by the run's controllers; the first one is kept). From then on no controller
/// of the run calls Python again: inputs are ignored and getters repeat their last good answer,
/// so the run ends quickly and the caller raises the error.
pub(crate) struct PyController {
    label: String,
    methods: Methods,
    state: RefCell<State>,
    failure: Arc<OnceLock<PyErr>>,
}

/// A returned object as the shared checks see it (`rtcbench_cc::user`).
fn value(v: &Bound<'_, PyAny>) -> user::Value {
    use user::Value;
    if v.is_none() {
        Value::None
    } else if let Ok(x) = v.cast::<PyFloat>() {
        Value::Float(x.value())
    } else if let Ok(b) = v.cast::<PyBool>() {
        Value::Bool(b.is_true())
    } else if let Ok(s) = v.cast::<PyString>() {
        Value::Str(s.to_string_lossy().into_owned())
    } else if let Ok(i) = v.extract::<i64>() {
        Value::Int(i)
    } else if let Ok(x) = v.extract::<f64>() {
        Value::Float(x)
    } else {
        Value::Other
    }
}

/// `repr(v)`, for a message.
fn repr(v: &Bound<'_, PyAny>) -> String {
    v.repr().map_or_else(|_| "?".to_string(), |r| r.to_string())
}

impl PyController {
    pub(crate) fn new(prepared: Prepared, setup: &CallSetup, failure: Arc<OnceLock<PyErr>>) -> Self {
        let c = Self {
            label: prepared.label,
            methods: prepared.methods,
            state: RefCell::new(State {
                now: setup.start,
                timed_out: None,
                // Until the controller answers: the call's start rate, and the pacer's default.
                target: Answer::new(setup.start_rate),
                pacing: Answer::new(None),
                timeout: Answer::new(None),
                layout: user::Metrics::new(rtcbench_sim::trace::schema::CONTROLLER.map(|c| c.name)),
                metrics: ControllerMetrics::new(),
            }),
            failure,
        };
        if let Some(on_start) = &c.methods.on_start {
            Python::attach(|py| {
                let info = PyCallInfo::from(setup);
                let r = on_start.call1(py, (info,));
                c.check(py, r, "on_start", setup.start);
            });
        }
        c
    }

    fn failed(&self) -> bool {
        self.failure.get().is_some()
    }

    fn fail(&self, err: PyErr) {
        // Only the first failure of a run is reported; later ones are its consequences.
        let _ = self.failure.set(err);
    }

    /// The result of a call, or `None` after recording why it failed. Our own `ControllerError`s
    /// and exceptions that are not `Exception`s (KeyboardInterrupt, SystemExit) are kept as they
    /// are.
    fn check<T>(&self, py: Python<'_>, r: PyResult<T>, method: &str, now: Instant) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) if e.is_instance_of::<ControllerError>(py) || !e.is_instance_of::<PyException>(py) => {
                self.fail(e);
                None
            }
            Err(e) => {
                let kind =
                    e.get_type(py).qualname().map_or_else(|_| "Exception".to_string(), |n| n.to_string());
                let err = ControllerError::new_err(format!(
                    "{}: {method}(now_us={}) raised {kind}: {}",
                    self.label,
                    now.as_micros(),
                    e.value(py)
                ));
                err.set_cause(py, Some(e));
                self.fail(err);
                None
            }
        }
    }

    /// An input changed the controller's state: its getters must be asked again.
    fn input(&self, now: Instant, timeout: bool) {
        let mut s = self.state.borrow_mut();
        s.now = now;
        if timeout {
            s.timed_out = Some(now);
        }
        s.target.fresh = false;
        s.pacing.fresh = false;
        s.timeout.fresh = false;
    }

    fn now(&self) -> Instant {
        self.state.borrow().now
    }

    /// A value the shared checks refused, as this run's error.
    fn refused(&self, bad: user::BadAnswer) -> PyErr {
        ControllerError::new_err(format!("{}: {bad}", self.label))
    }

    fn ask_target(&self) -> Option<Bitrate> {
        self.ask_rate(&self.methods.target_rate, "target_rate", false).flatten()
    }

    fn ask_pacing(&self, method: &Py<PyAny>) -> Option<Option<Bitrate>> {
        self.ask_rate(method, "pacing_rate", true)
    }

    fn ask_rate(&self, method: &Py<PyAny>, name: &'static str, optional: bool) -> Option<Option<Bitrate>> {
        let now = self.now();
        Python::attach(|py| {
            let answer = method.call0(py);
            let answer = self.check(py, answer, name, now)?;
            let answer = answer.bind(py);
            let r = user::rate(name, now, &value(answer), optional, || repr(answer));
            self.check(py, r.map_err(|bad| self.refused(bad)), name, now)
        })
    }

    fn ask_timeout(&self, method: &Py<PyAny>) -> Option<Option<Instant>> {
        let (now, timed_out) = {
            let s = self.state.borrow();
            (s.now, s.timed_out)
        };
        Python::attach(|py| {
            let answer = method.call0(py);
            let answer = self.check(py, answer, "next_timeout_us", now)?;
            let answer = answer.bind(py);
            let r = user::timeout(now, timed_out, &value(answer), || repr(answer));
            self.check(py, r.map_err(|bad| self.refused(bad)), "next_timeout_us", now)
        })
    }

    /// The metrics dict as typed values, its names fixed by the first call.
    fn ask_metrics(&self, method: &Py<PyAny>) -> Option<ControllerMetrics> {
        let now = self.now();
        Python::attach(|py| {
            let answer = method.call0(py);
            let answer = self.check(py, answer, "metrics", now)?;
            let answer = answer.bind(py);
            let entries: Option<Vec<(user::Value, user::Value)>> =
                answer.cast::<PyDict>().ok().map(|d| d.iter().map(|(k, v)| (value(&k), value(&v))).collect());
            let r = self.state.borrow_mut().layout.check(now, entries.as_deref(), || repr(answer));
            self.check(py, r.map_err(|bad| self.refused(bad)), "metrics", now)
        })
    }
}

impl Controller for PyController {
    fn on_packet_sent(&mut self, now: Instant, pkt: &SentPacket) {
        let Some(method) = &self.methods.on_packet_sent else { return };
        if self.failed() {
            return;
        }
        self.input(now, false);
        Python::attach(|py| {
            let r = method.call1(py, (now.as_micros(), PySentPacket::from(pkt)));
            self.check(py, r, "on_packet_sent", now);
        });
    }

    fn on_feedback(&mut self, now: Instant, report: &FeedbackReport) {
        if self.failed() {
            return;
        }
        self.input(now, false);
        Python::attach(|py| {
            let r = PyFeedbackReport::from_report(py, report)
                .and_then(|report| self.methods.on_feedback.call1(py, (now.as_micros(), report)));
            self.check(py, r, "on_feedback", now);
        });
    }

    fn on_timeout(&mut self, now: Instant) {
        let Some(method) = &self.methods.on_timeout else { return };
        if self.failed() {
            return;
        }
        self.input(now, true);
        Python::attach(|py| {
            let r = method.call1(py, (now.as_micros(),));
            self.check(py, r, "on_timeout", now);
        });
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let method = self.methods.next_timeout_us.as_ref()?;
        if self.failed() {
            return None;
        }
        Answer::get(&self.state, |s| &mut s.timeout, || self.ask_timeout(method))
    }

    fn target_rate(&self) -> Bitrate {
        if self.failed() {
            return self.state.borrow().target.value;
        }
        Answer::get(&self.state, |s| &mut s.target, || self.ask_target())
    }

    fn pacing_rate(&self) -> Option<Bitrate> {
        let method = self.methods.pacing_rate.as_ref()?;
        if self.failed() {
            return self.state.borrow().pacing.value;
        }
        Answer::get(&self.state, |s| &mut s.pacing, || self.ask_pacing(method))
    }

    fn metrics(&self) -> ControllerMetrics {
        let Some(method) = &self.methods.metrics else { return ControllerMetrics::new() };
        if !self.failed() {
            if let Some(m) = self.ask_metrics(method) {
                self.state.borrow_mut().metrics = m;
            }
        }
        self.state.borrow().metrics.clone()
    }
}
