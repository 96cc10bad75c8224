//! A run advanced in steps from Python (`rtcbench_sim::Simulation`), for the learning environment
//! `rtcbench.env.BandwidthEstimationEnv`: between steps, Python sets the target rate of one call
//! (its controller is `rtcbench_cc::external::ExternalRate`) and reads what that call's feedback
//! said in the step; or (`agent=True`, for `rtcbench.env.ChallengeEnv`) it reads the observation
//! that call's receiver will give its next 60 ms decision and sets the estimate the decision
//! sends, as an ONNX policy's would be (`rtcbench_cc::learned::Agent`).
//!
//! The steps keep the GIL. A 60 ms step of a call takes some 10 µs of simulation, less than
//! releasing and taking back the GIL would let another thread gain, and a `Simulation` is
//! `unsendable` anyway (it may hold controllers that are not `Send`); vectorised environments
//! run in parallel in processes, not threads.

use numpy::{PyArray1, ToPyArray};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rtcbench_cc::external::IntervalStats;
use rtcbench_cc::learned::Agent;
use rtcbench_sim::{RunOptions, Simulation};
use rtcbench_units::{Bitrate, Duration, Instant};

use crate::controller::PyCallInfo;
use crate::{builtin_kind, one_variant, output_dict, scenario_err};

/// What feedback said about the controlled call's packets in one step
/// (`rtcbench_cc::external::IntervalStats`). Times are microseconds, rates bit/s.
#[pyclass(frozen, get_all, module = "rtcbench", name = "IntervalStats")]
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PyIntervalStats {
    start_us: i64,
    end_us: i64,
    target_bps: u64,
    send_bps: u64,
    receive_bps: u64,
    packets_received: u32,
    packets_lost: u32,
    loss_ratio: f64,
    qdelay_mean_us: Option<i64>,
    qdelay_min_us: Option<i64>,
    qdelay_max_us: Option<i64>,
    jitter_us: Option<i64>,
    rtt_us: Option<i64>,
    reports: u32,
}

impl From<&IntervalStats> for PyIntervalStats {
    fn from(s: &IntervalStats) -> Self {
        let us = |d: Option<Duration>| d.map(Duration::as_micros);
        Self {
            start_us: s.start.as_micros(),
            end_us: s.end.as_micros(),
            target_bps: s.target.as_bps(),
            send_bps: s.send_rate.as_bps(),
            receive_bps: s.receive_rate.as_bps(),
            packets_received: s.packets_received,
            packets_lost: s.packets_lost,
            loss_ratio: s.loss_ratio(),
            qdelay_mean_us: us(s.queuing_delay_mean),
            qdelay_min_us: us(s.queuing_delay_min),
            qdelay_max_us: us(s.queuing_delay_max),
            jitter_us: us(s.jitter),
            rtt_us: us(s.rtt),
            reports: s.reports,
        }
    }
}

#[pymethods]
impl PyIntervalStats {
    fn __repr__(&self) -> String {
        format!("{self:?}").replacen("PyIntervalStats", "IntervalStats", 1)
    }
}

/// One run of a resolved scenario variant, advanced by `run_until`. Call `external_call` sends at
/// the rate `set_target` gives it (the call's start rate until then); the other calls run the
/// built-in `controller`.
#[pyclass(unsendable, module = "rtcbench", name = "Simulation")]
pub(crate) struct PySimulation {
    /// `None` once `finish` has taken the run.
    sim: Option<Simulation>,
    /// Sets the external call's estimates, if they are set at its receiver.
    agent: Option<Agent>,
}

impl PySimulation {
    fn sim(&self) -> PyResult<&Simulation> {
        self.sim.as_ref().ok_or_else(finished)
    }
    fn sim_mut(&mut self) -> PyResult<&mut Simulation> {
        self.sim.as_mut().ok_or_else(finished)
    }
}

impl PySimulation {
    fn agent(&self) -> PyResult<&Agent> {
        self.agent.as_ref().ok_or_else(|| {
            PyRuntimeError::new_err(
                "this simulation sets the call's rate (set_target); make it with agent=True",
            )
        })
    }
    fn no_agent(&self, what: &str) -> PyResult<()> {
        match self.agent {
            Some(_) => Err(PyRuntimeError::new_err(format!(
                "{what}: this simulation sets the call's estimates at its receiver (agent=True); use set_estimate"
            ))),
            None => Ok(()),
        }
    }
}

fn finished() -> PyErr {
    PyRuntimeError::new_err("the simulation has finished (finish() was called)")
}

#[pymethods]
impl PySimulation {
    #[new]
    #[pyo3(signature = (resolved, controller, seed, *, external_call = 0, agent = false))]
    fn new(
        resolved: &Bound<'_, PyAny>,
        controller: &str,
        seed: u64,
        external_call: u32,
        agent: bool,
    ) -> PyResult<Self> {
        let s = one_variant(resolved, "Simulation()")?;
        let kind = builtin_kind(controller)?;
        let agent = agent.then(Agent::new);
        let options =
            RunOptions { external: Some(external_call), agent: agent.clone(), ..RunOptions::default() };
        let sim = Simulation::new(&s, kind.into(), seed, options).map_err(scenario_err)?;
        Ok(Self { sim: Some(sim), agent })
    }

    /// With `agent=True`: the instant (µs) of the external call's next decision and the
    /// observation (150 float32) its receiver will give it, if every event before the instant
    /// has run and nothing arrives until it; `None` once a decision failed (`agent_failure`).
    fn next_observation<'py>(&self, py: Python<'py>) -> PyResult<Option<(i64, Bound<'py, PyArray1<f32>>)>> {
        self.agent()?;
        Ok(self.sim()?.next_observation().map(|(at, obs)| (at.as_micros(), obs.to_pyarray(py))))
    }

    /// With `agent=True`: the instant (µs) of the external call's next decision (as
    /// `next_observation` gives it, without building the observation); `None` once a decision
    /// failed.
    #[getter]
    fn next_decision_us(&self) -> PyResult<Option<i64>> {
        self.agent()?;
        Ok(self.sim()?.next_decision().map(Instant::as_micros))
    }

    /// With `agent=True`: the estimate (bit/s, finite, >= 0) the external call's next decision
    /// sends to its sender in a REMB.
    fn set_estimate(&mut self, bps: f64) -> PyResult<()> {
        if !(bps.is_finite() && bps >= 0.0) {
            return Err(PyValueError::new_err(format!(
                "an estimate is a finite number of bit/s, at least 0; got {bps}"
            )));
        }
        self.agent()?.set(bps);
        Ok(())
    }

    /// With `agent=True`: why the external call's decisions stopped (a decision came with no
    /// estimate set), or `None`.
    #[getter]
    fn agent_failure(&self) -> PyResult<Option<String>> {
        Ok(self.sim()?.agent_failure().map(str::to_owned))
    }

    /// Runs every event due at or before `t_us` (at most the end of the run).
    fn run_until(&mut self, t_us: i64) -> PyResult<()> {
        self.sim_mut()?.run_until(Instant::from_micros(t_us));
        Ok(())
    }

    /// Sets the controlled call's target rate (bit/s, at least 1) from now on.
    fn set_target(&mut self, bps: f64) -> PyResult<()> {
        self.no_agent("set_target")?;
        if !(bps.is_finite() && bps >= 1.0) {
            return Err(PyValueError::new_err(format!(
                "a target rate is a finite number of bit/s, at least 1; got {bps}"
            )));
        }
        self.sim_mut()?.set_external_target(Bitrate::from_bps_f64(bps));
        Ok(())
    }

    /// What feedback said since the last call (or the start of the run) until now.
    fn take_interval(&mut self) -> PyResult<PyIntervalStats> {
        self.no_agent("take_interval")?;
        Ok(PyIntervalStats::from(&self.sim_mut()?.take_external_interval()))
    }

    /// Trace rows recorded and not yet taken.
    #[getter]
    fn trace_rows(&self) -> PyResult<usize> {
        Ok(self.sim()?.trace_rows())
    }

    /// Drops the trace rows recorded so far that can no longer change (a run whose trace is not
    /// wanted, or is too long to keep, stays in bounded memory); `finish` then returns the rest.
    fn drop_trace(&mut self) -> PyResult<()> {
        drop(self.sim_mut()?.take_trace());
        Ok(())
    }

    /// Runs to the end and returns the trace tables, as `Run` gives them (`wall_s` is 0: the run
    /// was driven from outside).
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let sim = self.sim.take().ok_or_else(finished)?;
        output_dict(py, sim.finish(), 0.0)
    }

    #[getter]
    fn now_us(&self) -> PyResult<i64> {
        Ok(self.sim()?.now().as_micros())
    }

    #[getter]
    fn end_us(&self) -> PyResult<i64> {
        Ok(self.sim()?.end().as_micros())
    }

    #[getter]
    fn done(&self) -> PyResult<bool> {
        Ok(self.sim()?.is_done())
    }

    #[getter]
    fn events(&self) -> PyResult<u64> {
        Ok(self.sim()?.events())
    }

    #[getter]
    fn external_call(&self) -> PyResult<u32> {
        Ok(self.sim()?.external_call().expect("always set by the constructor"))
    }

    /// The controlled call: its start, rate limits and start rate (totals over its streams).
    #[getter]
    fn call_info(&self) -> PyResult<PyCallInfo> {
        let sim = self.sim()?;
        let call = sim.external_call().expect("always set by the constructor");
        Ok(PyCallInfo::from(sim.call_setup(call).expect("the constructor checked the call")))
    }

    /// The run's links, calls and flows as JSON (`meta` of `summary.json`).
    #[getter]
    fn meta(&self) -> PyResult<String> {
        serde_json::to_string(self.sim()?.meta()).map_err(|e| PyValueError::new_err(e.to_string()))
    }
}
