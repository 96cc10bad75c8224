//! Learned bandwidth estimators: what they observe ([`observation`]), in the form the MMSys 2024
//! offline-RL bandwidth estimation challenge defined, so that policies trained on its data and on
//! rtcbench's runs read the same numbers.

pub mod observation;

pub use observation::{Arrival, Feature, ObservationBuilder, PacketClass, OBSERVATION_LEN};
