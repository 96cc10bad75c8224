//! A learned policy as the receiver-side estimator runs it: one decision per observation, with
//! whatever state the policy carries between decisions (an LSTM's hidden and cell states) kept
//! inside it. The ONNX runtime (`rtcbench-onnx`) is one implementation; a test's scripted
//! policy is another. Nothing here knows how a policy is stored.

use std::fmt;
use std::sync::{Arc, OnceLock};

use super::observation::OBSERVATION_LEN;

/// What a policy decided for one observation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decision {
    /// The estimate, bit/s (the challenge's `output[0, 0, 0]`).
    pub estimate: f64,
    /// The policy's second output (`output[0, 0, 1]`: a spread of the estimate), if it has one.
    pub spread: Option<f64>,
}

/// One call's instance of a policy, with its own recurrent state.
pub trait Policy: Send {
    /// The decision for `obs`, advancing the policy's state; an error is one line saying what
    /// went wrong (the runtime's message, or what was wrong with the outputs).
    fn decide(&mut self, obs: &[f32; OBSERVATION_LEN]) -> Result<Decision, String>;
}

/// A loaded policy, from which every call of a run gets an instance of its own.
pub trait PolicySource: Send + Sync {
    /// A fresh instance (zero state). An error is one line.
    fn instance(&self) -> Result<Box<dyn Policy>, String>;
}

/// The first failure of a run's policies, kept for whoever drives the run: a policy that fails
/// stops deciding, and its owner stops the run with this message.
#[derive(Clone, Debug, Default)]
pub struct PolicyFailure(Arc<OnceLock<String>>);

impl PolicyFailure {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `message` unless a failure was recorded already (later ones are consequences).
    pub fn set(&self, message: String) {
        let _ = self.0.set(message);
    }

    pub fn get(&self) -> Option<&str> {
        self.0.get().map(String::as_str)
    }
}

/// A policy as a run uses it: what builds each call's instance, the name errors give it, and the
/// run's failure slot. Two are equal if they share the loaded policy and the slot.
#[derive(Clone)]
pub struct LearnedPolicy {
    pub name: String,
    pub source: Arc<dyn PolicySource>,
    pub failure: PolicyFailure,
}

impl LearnedPolicy {
    pub fn new(name: impl Into<String>, source: Arc<dyn PolicySource>) -> Self {
        Self { name: name.into(), source, failure: PolicyFailure::new() }
    }
}

impl fmt::Debug for LearnedPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LearnedPolicy").field("name", &self.name).field("failure", &self.failure).finish()
    }
}

impl PartialEq for LearnedPolicy {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.source, &other.source) && Arc::ptr_eq(&self.failure.0, &other.failure.0)
    }
}

/// Checks a policy's outputs as every runtime must: a finite, non-negative estimate, and a
/// finite spread if there is one. `Err` is one line naming the output.
pub fn checked(estimate: f64, spread: Option<f64>) -> Result<Decision, String> {
    if !estimate.is_finite() || estimate < 0.0 {
        return Err(format!(
            "output[0,0,0] (the estimate, bit/s) is {estimate}: it must be a finite number >= 0"
        ));
    }
    if let Some(s) = spread.filter(|s| !s.is_finite()) {
        return Err(format!("output[0,0,1] (the spread) is {s}: it must be finite"));
    }
    Ok(Decision { estimate, spread })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_must_be_finite_and_the_estimate_non_negative() {
        assert_eq!(checked(1e6, Some(0.5)), Ok(Decision { estimate: 1e6, spread: Some(0.5) }));
        assert_eq!(checked(0.0, None), Ok(Decision { estimate: 0.0, spread: None }));
        for bad in [f64::NAN, f64::INFINITY, -1.0] {
            let e = checked(bad, None).unwrap_err();
            assert!(e.starts_with("output[0,0,0]"), "{e}");
        }
        assert!(checked(1e6, Some(f64::NAN)).unwrap_err().starts_with("output[0,0,1]"));
    }

    #[test]
    fn the_first_failure_is_kept() {
        let f = PolicyFailure::new();
        assert_eq!(f.get(), None);
        f.set("first".into());
        f.clone().set("second".into());
        assert_eq!(f.get(), Some("first"));
    }
}
