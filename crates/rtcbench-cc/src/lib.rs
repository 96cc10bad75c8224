//! Congestion controllers for real-time media behind one sans-IO trait.
//!
//! A controller never reads a clock, sleeps, does IO or owns a global RNG: time comes in as the
//! `now` argument of each input, decisions come out through getters and polls. The same object
//! therefore runs inside the simulator, inside a live UDP agent, or under a unit test fed
//! scripted input.
//!
//! # Drive loop
//!
//! The owner of a controller (a media sender) follows one loop, as str0m and quinn-proto do:
//!
//! 1. **mutate**: report what happened with [`Controller::on_packet_sent`] for every packet
//!    that leaves the sender, [`Controller::on_feedback`] for every parsed feedback message,
//!    and [`Controller::on_timeout`] when the deadline of [`Controller::poll_timeout`] passes;
//! 2. **drain**: read [`Controller::target_rate`] and [`Controller::pacing_rate`] and take
//!    probe requests from [`Controller::poll_probe`] until it returns `None`;
//! 3. **wait** until the earliest of the controller's deadline and the next input.
//!
//! Controllers see feedback only in the [`feedback`] vocabulary (`PacketResult` batches plus
//! receiver-report and REMB data); RTCP bytes are parsed by the sender before they get here.

pub mod adapter;
pub mod ccfb;
mod controller;
pub mod external;
pub mod factory;
pub mod feedback;
pub mod fixed;
pub mod gcc;
pub mod gcc_draft;
pub mod learned;
pub mod nada;
pub mod scream;
pub mod scream2;
pub mod twcc;
pub mod user;

pub use controller::{AnyController, Controller, ControllerKind, ControllerMetrics, Metric};
pub use feedback::{Ecn, FeedbackReport, LossReport, PacketResult, ProbeCluster, ProbeInfo, SentPacket};
