//! A run whose trace comes to Python in pieces while it goes (`rtcbench_sim::streamed`): the
//! runner writes each piece out, so a long run's memory stays bounded, and an interrupt (Ctrl-C,
//! SIGTERM turned into one by the CLI) stops the run within a slice of work wherever it is.
//!
//! The simulation runs on a thread of its own. Python waits for its pieces without the GIL and
//! looks for signals every [`WAIT`]; a run with a Python controller holds the GIL for each slice
//! of work (the controller is called for every feedback message) and gives it back between slices.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rtcbench_cc::learned::PolicyFailure;
use rtcbench_sim::streamed::{Message, RunFailure, StreamOptions, StreamedRun};
use rtcbench_sim::{ControllerChoice, RunOptions};

use crate::controller::ControllerError;
use crate::learned::PyPolicy;
use crate::{builtin_kind, one_variant, scenario_err, trace_to_dict, user_controller};

/// How long Python waits for a piece before it looks for signals again.
const WAIT: Duration = Duration::from_millis(50);

fn failure_err(e: RunFailure) -> PyErr {
    match e {
        RunFailure::Scenario(e) => scenario_err(e),
        RunFailure::Capture { path, message } => {
            PyOSError::new_err(format!("cannot write the capture {}: {message}", path.display()))
        }
        RunFailure::Ended => PyRuntimeError::new_err(RunFailure::Ended.to_string()),
    }
}

/// One run of a resolved scenario variant (TOML from `expand`) with a controller and seed,
/// started at once on its own thread.
///
/// `piece()` returns the trace rows recorded since the previous piece, as `simulate` used to
/// return a whole trace (dicts of numpy arrays, `codes`), once `piece_rows` rows are held and at
/// the end; then `None`. Appended in order, the pieces are the whole run's tables. `meta` (JSON)
/// is known from the start; `events` and `sim_wall_s` once `piece()` has returned `None`.
///
/// With `factory`, `controller` names a Python controller and `factory(call, calls)` returns the
/// `rtcbench.Controller` of each call. With `pcap`, every packet as its sender put it on the wire
/// is written to that file (under a temporary name until the run is complete).
///
/// An interrupt while waiting stops the run and raises `KeyboardInterrupt`; so does an exception
/// a Python controller raised, as `ControllerError`. `close()` (or dropping the object) stops a
/// run that is still going.
#[pyclass(unsendable, module = "rtcbench", name = "Run")]
pub(crate) struct PyRun {
    run: StreamedRun,
    meta: String,
    failure: Option<Arc<OnceLock<PyErr>>>,
    /// A learned policy's first failure (`--cc onnx:MODEL`).
    policy_failure: Option<PolicyFailure>,
    done: Option<(u64, f64)>,
    closed: bool,
}

impl PyRun {
    /// The next message, waiting without the GIL and stopping the run on a signal or a failed
    /// Python controller.
    fn next(&mut self, py: Python<'_>) -> PyResult<Message> {
        loop {
            // `&mut`: the run's receiver may be used from one thread at a time.
            let run = &mut self.run;
            let message = py.detach(move || run.next(WAIT));
            if let Err(e) = py.check_signals() {
                self.stop(py);
                return Err(e);
            }
            if let Some(e) = self.failure.as_ref().and_then(|f| f.get()) {
                let e = e.clone_ref(py);
                self.stop(py);
                return Err(e);
            }
            if let Some(e) = self.policy_failure.as_ref().and_then(PolicyFailure::get) {
                let e = ControllerError::new_err(e.to_string());
                self.stop(py);
                return Err(e);
            }
            match message {
                Some(m) => return Ok(m),
                None if self.closed => return Err(PyRuntimeError::new_err("the run was closed")),
                None => {}
            }
        }
    }

    /// Stops the run and waits for its thread, without the GIL: a run with a Python controller
    /// takes the GIL for each slice of work, so waiting for it while holding the GIL would wait
    /// forever (a run closed before its first piece, or stopped by Ctrl-C mid-slice).
    fn stop(&mut self, py: Python<'_>) {
        self.closed = true;
        let run = &mut self.run;
        py.detach(move || run.stop());
    }
}

impl Drop for PyRun {
    fn drop(&mut self) {
        // The same as `stop`: `StreamedRun`'s own drop would wait for the thread with the GIL held.
        let run = &mut self.run;
        Python::attach(|py| py.detach(move || run.stop()));
    }
}

#[pymethods]
impl PyRun {
    #[new]
    // The Python signature: keyword options of one constructor.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (resolved, controller, seed, *, factory = None, policy = None, pcap = None, piece_rows = 1 << 20, slice_events = 100_000))]
    fn new(
        py: Python<'_>,
        resolved: &Bound<'_, PyAny>,
        controller: &str,
        seed: u64,
        factory: Option<Bound<'_, PyAny>>,
        policy: Option<PyRef<'_, PyPolicy>>,
        pcap: Option<std::path::PathBuf>,
        piece_rows: usize,
        slice_events: u64,
    ) -> PyResult<Self> {
        let s = one_variant(resolved, "Run()")?;
        let mut policy_failure = None;
        let (choice, failure, hold) = match (factory, policy) {
            (Some(_), Some(_)) => {
                return Err(PyValueError::new_err(
                    "a run has a Python controller or a learned policy, not both",
                ))
            }
            (None, Some(policy)) => {
                let learned = policy.learned();
                policy_failure = Some(learned.failure.clone());
                (ControllerChoice::Learned(learned), None, None)
            }
            (Some(factory), None) => {
                let calls = rtcbench_scenario::calls::count(&s.spec);
                let (choice, failure) = user_controller(&factory, controller, calls)?;
                let hold: Box<rtcbench_sim::streamed::Hold> =
                    Box::new(|work: &mut dyn FnMut()| Python::attach(|_| work()));
                (choice, Some(failure), Some(hold))
            }
            (None, None) => (ControllerChoice::from(builtin_kind(controller)?), None, None),
        };
        if piece_rows == 0 || slice_events == 0 {
            return Err(PyValueError::new_err("piece_rows and slice_events must be at least 1"));
        }
        let stream = StreamOptions { slice_events, piece_rows, pcap, hold };
        let run = StreamedRun::start(s, choice, seed, RunOptions::default(), stream)
            .map_err(|e| PyOSError::new_err(format!("cannot start the run's thread: {e}")))?;
        let mut this = Self { run, meta: String::new(), failure, policy_failure, done: None, closed: false };
        match this.next(py)? {
            Message::Started(meta) => {
                this.meta = serde_json::to_string(&meta).map_err(|e| PyValueError::new_err(e.to_string()))?;
                Ok(this)
            }
            Message::Failed(e) => Err(failure_err(e)),
            _ => Err(PyRuntimeError::new_err("a run starts with its description")),
        }
    }

    /// The next piece of the trace, or `None` once the run is complete.
    fn piece<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        if self.done.is_some() {
            return Ok(None);
        }
        match self.next(py)? {
            Message::Piece(trace) => trace_to_dict(py, *trace).map(Some),
            Message::Done { events, simulating_s } => {
                self.done = Some((events, simulating_s));
                Ok(None)
            }
            Message::Failed(e) => {
                self.closed = true;
                Err(failure_err(e))
            }
            Message::Started(_) => Err(PyRuntimeError::new_err("a run starts once")),
        }
    }

    /// Stops the run if it is still going (its capture, if any, is not written).
    fn close(&mut self, py: Python<'_>) {
        if self.done.is_none() {
            self.stop(py);
        }
    }

    /// The run's links, calls and flows as JSON (`meta` of `summary.json`).
    #[getter]
    fn meta(&self) -> &str {
        &self.meta
    }

    /// Events processed; `None` until the run is complete.
    #[getter]
    fn events(&self) -> Option<u64> {
        self.done.map(|d| d.0)
    }

    /// Wall-clock seconds spent simulating (not waiting for Python); `None` until complete.
    #[getter]
    fn sim_wall_s(&self) -> Option<f64> {
        self.done.map(|d| d.1)
    }
}
