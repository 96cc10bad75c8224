//! The learned estimators' observation (`rtcbench_cc::learned`) over a run's table: what
//! `rtcbench.learned` exports and what the gym and the ONNX controller read, from one builder.

use std::sync::{Arc, Mutex, PoisonError};

use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rtcbench_cc::learned::{
    as_received, Arrival, Decision, LearnedPolicy, ObservationBuilder, PacketClass, Policy, OBSERVATION_LEN,
};
use rtcbench_onnx::{OnnxModel, OnnxPolicy, SharedModel};
use rtcbench_units::{DataSize, Duration, Instant};

use crate::controller::ControllerError;

/// `PacketClass` by code: 0 video, 1 audio, 2 probe, 3 other.
fn class(code: u8) -> PyResult<PacketClass> {
    Ok(match code {
        0 => PacketClass::Video,
        1 => PacketClass::Audio,
        2 => PacketClass::Probe,
        3 => PacketClass::Other,
        _ => {
            return Err(PyValueError::new_err(format!(
                "packet class {code} is not 0-3 (video, audio, probe, other)"
            )))
        }
    })
}

fn instant(us: i64) -> Instant {
    Instant::ZERO + Duration::from_micros(us)
}

/// Observations (float32, one row of 150 per instant of `steps_us`) of the packets a receiver
/// got: their arrival and send instants (µs), sizes (bytes), stream and sequence number (a
/// negative sequence number: not counted for loss) and class codes, in order of arrival; every
/// array the same length, `steps_us` increasing.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub(crate) fn observations<'py>(
    py: Python<'py>,
    arrival_us: PyReadonlyArray1<'py, i64>,
    sent_us: PyReadonlyArray1<'py, i64>,
    size: PyReadonlyArray1<'py, i64>,
    stream: PyReadonlyArray1<'py, i64>,
    seq: PyReadonlyArray1<'py, i64>,
    class_code: PyReadonlyArray1<'py, u8>,
    steps_us: PyReadonlyArray1<'py, i64>,
) -> PyResult<Bound<'py, PyArray2<f32>>> {
    let (arrival, sent, size, stream, seq, codes, steps) = (
        arrival_us.as_slice()?,
        sent_us.as_slice()?,
        size.as_slice()?,
        stream.as_slice()?,
        seq.as_slice()?,
        class_code.as_slice()?,
        steps_us.as_slice()?,
    );
    let n = arrival.len();
    if [sent.len(), size.len(), stream.len(), seq.len(), codes.len()].iter().any(|&l| l != n) {
        return Err(PyValueError::new_err("observations: the packet arrays differ in length"));
    }
    if arrival.windows(2).any(|w| w[1] < w[0]) || steps.windows(2).any(|w| w[1] <= w[0]) {
        return Err(PyValueError::new_err("observations: arrivals must be in order and steps increasing"));
    }
    let mut out = Array2::<f32>::zeros((steps.len(), OBSERVATION_LEN));
    let mut builder = ObservationBuilder::new();
    let mut next = 0;
    for (row, &step) in steps.iter().enumerate() {
        while next < n && arrival[next] < step {
            builder.on_arrival(&Arrival {
                arrival: instant(arrival[next]),
                // As the receiver reads it: from the packet's abs-send-time.
                sent: as_received(instant(arrival[next]), instant(sent[next])),
                size: DataSize::bytes(size[next].max(0) as u64),
                seq: (seq[next] >= 0).then(|| (stream[next] as u32, seq[next] as u64)),
                class: class(codes[next])?,
            });
            next += 1;
        }
        let o = builder.observe(instant(step));
        out.row_mut(row).iter_mut().zip(o).for_each(|(cell, v)| *cell = v);
    }
    Ok(out.into_pyarray(py))
}

/// A learned policy in ONNX (`rtcbench_onnx`), loaded from its bytes: what `--cc onnx:MODEL`
/// runs at each call's receiver, and what `rtcbench.learned` runs offline on observations.
///
/// `Policy(data, name)` raises `ValueError` (one line) for a model that is not ONNX, is too
/// large, or does not have the challenge's interface. `step(obs)` takes one observation
/// (150 float32) and returns `(estimate, spread)` (the spread `None` if the model gives
/// none), carrying the recurrent state to the next step; `reset()` zeroes it; `run(obs)`
/// runs a (steps, 150) array from a zero state and returns the estimates and spreads (NaN
/// where there is none); a failed decision raises `ControllerError`.
/// A column of numbers handed to Python.
type Series<'py> = Bound<'py, PyArray1<f64>>;

#[pyclass(module = "rtcbench", name = "Policy")]
pub(crate) struct PyPolicy {
    pub(crate) name: String,
    pub(crate) model: Arc<OnnxModel>,
    /// The instance `step` advances (a Python object may be shared between threads; one step
    /// runs at a time).
    instance: Mutex<OnnxPolicy>,
}

impl PyPolicy {
    /// The policy as a run's calls share it.
    pub(crate) fn learned(&self) -> LearnedPolicy {
        LearnedPolicy::new(self.name.clone(), Arc::new(SharedModel(self.model.clone())))
    }

    fn decide(&self, obs: &[f32]) -> PyResult<Decision> {
        let obs: &[f32; OBSERVATION_LEN] = obs.try_into().map_err(|_| {
            PyValueError::new_err(format!("an observation has {OBSERVATION_LEN} numbers, not {}", obs.len()))
        })?;
        let mut instance = self.instance.lock().unwrap_or_else(PoisonError::into_inner);
        instance.decide(obs).map_err(|e| ControllerError::new_err(format!("{}: {e}", self.name)))
    }
}

#[pymethods]
impl PyPolicy {
    #[new]
    fn new(data: &[u8], name: &str) -> PyResult<Self> {
        let model = Arc::new(OnnxModel::from_bytes(data).map_err(|e| PyValueError::new_err(e.0))?);
        let instance = model.instance().map_err(PyValueError::new_err)?;
        Ok(Self { name: name.to_string(), model, instance: Mutex::new(instance) })
    }

    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// H, the size of the recurrent state (0 for a feed-forward policy).
    #[getter]
    fn hidden_size(&self) -> usize {
        self.model.hidden_size()
    }

    #[getter]
    fn has_cell_state(&self) -> bool {
        self.model.has_cell_state()
    }

    /// SHA-256 of the model's bytes (hex).
    #[getter]
    fn sha256(&self) -> &str {
        self.model.sha256()
    }

    /// The current recurrent state, hidden then cell, each a list of H floats.
    fn state(&self) -> Vec<Vec<f32>> {
        self.instance.lock().unwrap_or_else(PoisonError::into_inner).state()
    }

    fn reset(&mut self) -> PyResult<()> {
        *self.instance.lock().unwrap_or_else(PoisonError::into_inner) =
            self.model.instance().map_err(PyValueError::new_err)?;
        Ok(())
    }

    fn step(&mut self, obs: PyReadonlyArray1<'_, f32>) -> PyResult<(f64, Option<f64>)> {
        let d = self.decide(obs.as_slice()?)?;
        Ok((d.estimate, d.spread))
    }

    fn run<'py>(
        &mut self,
        py: Python<'py>,
        obs: PyReadonlyArray2<'py, f32>,
    ) -> PyResult<(Series<'py>, Series<'py>)> {
        self.reset()?;
        let obs = obs.as_array();
        let (mut estimates, mut spreads) = (Vec::with_capacity(obs.nrows()), Vec::with_capacity(obs.nrows()));
        for row in obs.rows() {
            let row: Vec<f32> = row.iter().copied().collect();
            let d = self.decide(&row)?;
            estimates.push(d.estimate);
            spreads.push(d.spread.unwrap_or(f64::NAN));
        }
        Ok((estimates.into_pyarray(py), spreads.into_pyarray(py)))
    }
}
