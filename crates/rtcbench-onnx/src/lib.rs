//! Learned bandwidth estimators stored as ONNX models with the interface of the MMSys 2024
//! offline-RL bandwidth estimation challenge, run by `tract` (pure Rust) as
//! [`rtcbench_cc::learned::Policy`] instances (docs/controllers/onnx.md).
//!
//! The interface, by name, in any order:
//!
//! * inputs `obs` f32 [1, 1, 150] (the observation, `rtcbench_cc::learned::observation`),
//!   and, for a recurrent policy, `hidden_states` f32 [1, H] and `cell_states` f32 [1, H]
//!   (an LSTM's; a GRU has only `hidden_states`);
//! * outputs `output` f32 [1, 1, 2] (the estimate in bit/s at [0, 0, 0], a spread at [0, 0, 1];
//!   a model with one number gives no spread), and `state_out` and `cell_out` [1, H] for each
//!   state input, fed back as that input at the next decision.
//!
//! H is read from the model (the released baseline has 1, the example exports 128). A model
//! without state inputs is a feed-forward policy. Anything else is refused when the model is
//! loaded, with one line naming the input or output; a decision that fails (the runtime's error,
//! a panic inside it, NaN or a negative estimate) is one line too, and the run stops.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use rtcbench_cc::learned::{checked, Decision, Policy, PolicySource, OBSERVATION_LEN};
use sha2::{Digest, Sha256};
use tract_hir::infer::Factoid;
use tract_onnx::prelude::*;

/// The largest model loaded. The challenge asked for models under 10 MB; this leaves room and
/// refuses what is surely not a policy (a bigger file is read no further than this).
pub const MAX_MODEL_BYTES: usize = 32 << 20;

/// The largest recurrent state taken (H).
pub const MAX_STATE: usize = 1 << 16;

type Plan = TypedRunnableModel;

/// A recurrent state input and the output that carries it to the next decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Hidden,
    Cell,
}

impl State {
    fn input(self) -> &'static str {
        match self {
            Self::Hidden => "hidden_states",
            Self::Cell => "cell_states",
        }
    }
    fn output(self) -> &'static str {
        match self {
            Self::Hidden => "state_out",
            Self::Cell => "cell_out",
        }
    }
}

/// A loaded, checked and optimised ONNX policy; each call runs an [`OnnxPolicy`] of it.
pub struct OnnxModel {
    plan: Arc<Plan>,
    /// The model's inputs in its own order: `None` for `obs`, else the state it is.
    inputs: Vec<Option<State>>,
    /// The state outputs, in the order of the plan's outputs after `output`.
    states: Vec<State>,
    hidden: usize,
    sha256: String,
}

impl std::fmt::Debug for OnnxModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnnxModel").field("states", &self.states).field("hidden", &self.hidden).finish()
    }
}

/// Why a model cannot be used: one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError(pub String);

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LoadError {}

fn refuse<T>(message: impl Into<String>) -> Result<T, LoadError> {
    Err(LoadError(message.into()))
}

/// The first line of a tract error with its causes, as one line.
fn one_line(e: &TractError) -> String {
    let text = format!("{e:#}");
    text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(": ")
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

impl OnnxModel {
    /// The model in `bytes` (an ONNX protobuf), checked against the interface of the module
    /// docs and optimised for one observation at a time.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, LoadError> {
        if bytes.len() > MAX_MODEL_BYTES {
            return refuse(format!(
                "{} bytes: larger than the {} MiB a policy may have",
                bytes.len(),
                MAX_MODEL_BYTES >> 20
            ));
        }
        let sha256 = format!("{:x}", Sha256::digest(bytes));
        match catch_unwind(AssertUnwindSafe(|| Self::load(bytes))) {
            Ok(r) => r.map(|(plan, inputs, states, hidden)| Self { plan, inputs, states, hidden, sha256 }),
            Err(p) => refuse(format!("the ONNX runtime failed on it: {}", panic_message(p.as_ref()))),
        }
    }

    #[allow(clippy::type_complexity)]
    fn load(mut bytes: &[u8]) -> Result<(Arc<Plan>, Vec<Option<State>>, Vec<State>, usize), LoadError> {
        let onnx = tract_onnx::onnx();
        let mut model = onnx
            .model_for_read(&mut bytes)
            .or_else(|e| refuse(format!("not an ONNX model tract can read: {}", one_line(&e))))?;
        let outlets = model.input_outlets().map_err(|e| LoadError(one_line(&e)))?.to_vec();
        let mut inputs = Vec::with_capacity(outlets.len());
        let mut hidden: Option<usize> = None;
        for (ix, outlet) in outlets.iter().enumerate() {
            let name = model.node(outlet.node).name.clone();
            let state = match name.as_str() {
                "obs" => None,
                "hidden_states" => Some(State::Hidden),
                "cell_states" => Some(State::Cell),
                other => {
                    return refuse(format!(
                        "input {other:?} is not one of the challenge's (obs, hidden_states, cell_states)"
                    ))
                }
            };
            if inputs.contains(&state) {
                return refuse(format!("input {name:?} appears twice"));
            }
            let fact = match state {
                None => f32::fact([1, 1, OBSERVATION_LEN]).into(),
                Some(s) => {
                    let h = Self::state_size(&model, ix, s)?;
                    if hidden.is_some_and(|known| known != h) {
                        return refuse(format!(
                            "input {:?} has {h} units, the other state {}",
                            s.input(),
                            hidden.unwrap_or(0)
                        ));
                    }
                    hidden = Some(h);
                    f32::fact([1, h]).into()
                }
            };
            model.set_input_fact(ix, fact).map_err(|e| LoadError(one_line(&e)))?;
            inputs.push(state);
        }
        if !inputs.contains(&None) {
            return refuse("it has no input \"obs\" (f32 [1, 1, 150])");
        }
        let labels: Vec<(OutletId, String)> = model
            .output_outlets()
            .map_err(|e| LoadError(one_line(&e)))?
            .iter()
            .map(|&o| (o, model.outlet_label(o).unwrap_or(&model.node(o.node).name).to_string()))
            .collect();
        let find = |name: &str| labels.iter().find(|(_, l)| l == name).map(|(o, _)| *o);
        let Some(output) = find("output") else {
            let names: Vec<&str> = labels.iter().map(|(_, l)| l.as_str()).collect();
            return refuse(format!("it has no output \"output\" (its outputs: {})", names.join(", ")));
        };
        let states: Vec<State> = inputs.iter().flatten().copied().collect();
        let mut wanted = vec![output];
        for s in &states {
            match find(s.output()) {
                Some(o) => wanted.push(o),
                None => {
                    return refuse(format!(
                        "input {:?} needs the output {:?} to carry it",
                        s.input(),
                        s.output()
                    ))
                }
            }
        }
        model.select_output_outlets(&wanted).map_err(|e| LoadError(one_line(&e)))?;
        let plan = model
            .into_optimized()
            .and_then(|m| m.into_runnable())
            .or_else(|e| refuse(format!("the ONNX runtime cannot run it: {}", one_line(&e))))?;
        Ok((plan, inputs, states, hidden.unwrap_or(0)))
    }

    /// H of state input `ix`: its second dimension, which the model must fix.
    fn state_size(model: &InferenceModel, ix: usize, s: State) -> Result<usize, LoadError> {
        let fact = model.input_fact(ix).map_err(|e| LoadError(one_line(&e)))?;
        let dims: Vec<_> = fact.shape.dims().cloned().collect();
        let h = match dims.as_slice() {
            [_, h] => h.concretize().and_then(|d| d.to_i64().ok()),
            _ => None,
        };
        match h {
            Some(h) if h >= 1 && h as usize <= MAX_STATE => Ok(h as usize),
            _ => refuse(format!(
                "input {:?} must be f32 [1, H] with H a number from 1 to {MAX_STATE} (it is {})",
                s.input(),
                fact.format_dt_shape()
            )),
        }
    }

    /// H, the size of the recurrent state (0 for a feed-forward policy).
    pub fn hidden_size(&self) -> usize {
        self.hidden
    }

    /// Whether the policy carries an LSTM's cell state besides its hidden state.
    pub fn has_cell_state(&self) -> bool {
        self.states.contains(&State::Cell)
    }

    /// The SHA-256 of the model's bytes (hex), which keys the runs of it.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// A policy instance with zero state.
    pub fn instance(self: &Arc<Self>) -> Result<OnnxPolicy, String> {
        let run = self.plan.spawn().map_err(|e| one_line(&e))?;
        let zero = || Tensor::zero::<f32>(&[1, self.hidden]).map_err(|e| one_line(&e));
        let states = self.states.iter().map(|_| zero()).collect::<Result<Vec<_>, _>>()?;
        Ok(OnnxPolicy { model: self.clone(), run, states })
    }
}

/// An [`OnnxModel`] shared by a run's calls.
#[derive(Debug, Clone)]
pub struct SharedModel(pub Arc<OnnxModel>);

impl PolicySource for SharedModel {
    fn instance(&self) -> Result<Box<dyn Policy>, String> {
        Ok(Box::new(self.0.instance()?))
    }
}

/// One call's run of a model, with its recurrent state.
pub struct OnnxPolicy {
    model: Arc<OnnxModel>,
    run: TypedSimpleState,
    /// The current state per state input, in `model.states` order.
    states: Vec<Tensor>,
}

impl OnnxPolicy {
    /// The current recurrent state (hidden, then cell), flattened: for tests and inspection.
    pub fn state(&self) -> Vec<Vec<f32>> {
        self.states
            .iter()
            .map(|t| t.to_plain_array_view::<f32>().map(|a| a.iter().copied().collect()).unwrap_or_default())
            .collect()
    }

    fn step(&mut self, obs: &[f32; OBSERVATION_LEN]) -> Result<Decision, String> {
        let obs = Tensor::from_shape(&[1, 1, OBSERVATION_LEN], obs).map_err(|e| one_line(&e))?;
        let mut states = self.states.iter();
        let inputs: TVec<TValue> = self
            .model
            .inputs
            .iter()
            .map(|input| match input {
                None => obs.clone().into_tvalue(),
                Some(_) => states.next().expect("one tensor per state input").clone().into_tvalue(),
            })
            .collect();
        let outputs =
            self.run.run(inputs).map_err(|e| format!("the ONNX runtime failed: {}", one_line(&e)))?;
        let output = outputs[0].cast_to::<f32>().map_err(|e| one_line(&e))?;
        let values = output.to_plain_array_view::<f32>().map_err(|e| one_line(&e))?;
        let mut values = values.iter();
        let Some(&estimate) = values.next() else {
            return Err("output is empty: it must hold the estimate at [0,0,0]".into());
        };
        let spread = values.next().map(|&s| f64::from(s));
        let decision = checked(f64::from(estimate), spread)?;
        for (k, s) in self.model.states.iter().enumerate() {
            let next = outputs[k + 1].cast_to::<f32>().map_err(|e| one_line(&e))?.into_owned();
            if next.shape() != [1, self.model.hidden] {
                return Err(format!(
                    "{} has shape {:?}, not [1, {}]",
                    s.output(),
                    next.shape(),
                    self.model.hidden
                ));
            }
            self.states[k] = next;
        }
        Ok(decision)
    }
}

impl Policy for OnnxPolicy {
    fn decide(&mut self, obs: &[f32; OBSERVATION_LEN]) -> Result<Decision, String> {
        match catch_unwind(AssertUnwindSafe(|| self.step(obs))) {
            Ok(r) => r,
            Err(p) => Err(format!("the ONNX runtime failed: {}", panic_message(p.as_ref()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_onnx_is_refused_in_one_line() {
        for bytes in [&b""[..], b"not a model at all", &[0xff; 64]] {
            let e = OnnxModel::from_bytes(bytes).unwrap_err();
            assert!(!e.0.contains('\n'), "{e}");
        }
        let huge = vec![0u8; MAX_MODEL_BYTES + 1];
        assert!(OnnxModel::from_bytes(&huge).unwrap_err().0.contains("MiB"));
    }
}
