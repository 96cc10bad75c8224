//! Learned bandwidth estimators: what they observe ([`observation`]), in the form the MMSys 2024
//! offline-RL bandwidth estimation challenge defined, so that policies trained on its data and on
//! rtcbench's runs read the same numbers; how a policy runs at a call's receiver
//! ([`estimator`], behind the [`policy`] trait), and the sender that follows its estimates
//! ([`follower`]); an [`agent`] is a policy driven from outside (the gym).

pub mod agent;
pub mod estimator;
pub mod follower;
pub mod observation;
pub mod policy;

pub use agent::Agent;
pub use estimator::{as_received, first_decision, send_instant, LearnedEstimator};
pub use follower::FollowEstimate;
pub use observation::{Arrival, Feature, ObservationBuilder, PacketClass, OBSERVATION_LEN};
pub use policy::{checked, Decision, LearnedPolicy, Policy, PolicyFailure, PolicySource};
