//! The learned estimators' observation (`rtcbench_cc::learned`) over a run's table: what
//! `rtcbench.learned` exports and what the gym and the ONNX controller read, from one builder.

use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray2, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rtcbench_cc::learned::{Arrival, ObservationBuilder, PacketClass, OBSERVATION_LEN};
use rtcbench_units::{DataSize, Duration, Instant};

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
                sent: instant(sent[next]),
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
