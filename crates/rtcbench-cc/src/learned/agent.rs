//! A policy whose decisions are set from outside, one per decision: the gym's agent
//! (`rtcbench.env.ChallengeEnv`). It runs where an ONNX policy runs, at the call's receiver
//! behind [`super::LearnedEstimator`], so an agent that gives a model's estimates makes the run
//! `--cc onnx:MODEL` makes (tests/test_env_challenge.py).
//!
//! Whoever drives the run reads the next decision's observation
//! ([`super::LearnedEstimator::next_observation`]), sets the estimate with [`Agent::set`], and
//! runs the simulation through the decision's instant. A decision with no estimate set fails the
//! run, as a model that raises does: a driver that skipped a step learns it at once.

use std::sync::{Arc, Mutex, PoisonError};

use super::observation::OBSERVATION_LEN;
use super::policy::{checked, Decision, LearnedPolicy, Policy, PolicySource};

/// The estimate for the next decision, shared between the driver and the policy's instance.
#[derive(Clone, Debug, Default)]
pub struct Agent {
    next: Arc<Mutex<Option<f64>>>,
}

impl Agent {
    /// The name the trace gives the controller of an agent's call: an external call's, however
    /// it is driven.
    pub const NAME: &'static str = crate::external::ExternalRate::NAME;

    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the estimate (bit/s) of the next decision; checked there as a model's output is.
    pub fn set(&self, estimate_bps: f64) {
        *self.next.lock().unwrap_or_else(PoisonError::into_inner) = Some(estimate_bps);
    }

    /// The policy a run builds for the agent's call.
    pub fn policy(&self) -> LearnedPolicy {
        LearnedPolicy::new(Self::NAME, Arc::new(self.clone()))
    }
}

impl PolicySource for Agent {
    fn instance(&self) -> Result<Box<dyn Policy>, String> {
        Ok(Box::new(self.clone()))
    }
}

impl Policy for Agent {
    fn decide(&mut self, _obs: &[f32; OBSERVATION_LEN]) -> Result<Decision, String> {
        let estimate = self.next.lock().unwrap_or_else(PoisonError::into_inner).take();
        let estimate = estimate.ok_or("no estimate was set for this decision (set one before each step)")?;
        checked(estimate, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_estimate_serves_one_decision() {
        let agent = Agent::new();
        let mut p = agent.policy().source.instance().unwrap();
        let obs = [0.0; OBSERVATION_LEN];
        agent.set(5e5);
        assert_eq!(p.decide(&obs), Ok(Decision { estimate: 5e5, spread: None }));
        assert!(p.decide(&obs).unwrap_err().starts_with("no estimate was set"));
        agent.set(f64::NAN);
        assert!(p.decide(&obs).unwrap_err().starts_with("output[0,0,0]"));
    }
}
