//! The rtcbench simulator: a deterministic discrete-event simulation of real-time media calls
//! over impaired networks.
//!
//! `rtcbench_scenario` loads and validates scenario files; [`simulate`] runs one resolved variant with
//! one controller and seed and returns its [`trace::Trace`] and [`Meta`]; [`simulate_with`] also
//! takes a [`UserController`] (built per call from outside the workspace, as rtcbench-py does for
//! Python classes) and [`RunOptions`]; a [`Simulation`] is the same run advanced in steps by its
//! owner, which may set one call's rate between steps (a learning environment). Every element (link,
//! sender, receiver, controller) is a sans-IO state machine driven from one event heap
//! ([`scheduler`]); every random draw comes from a generator derived from the seed and the
//! element's path ([`rng`]). The network elements ([`link`], [`queue`]) and the random streams
//! are the `rtcbench-net` crate's, re-exported here under their old paths; they carry this
//! crate's [`packet::Packet`]. A [`streamed::StreamedRun`] runs on a thread of its own and hands
//! its trace out in pieces, so a long run's memory does not grow with its duration.

pub mod call;
pub mod cross;
pub mod lte;
pub mod packet;
pub mod scheduler;
pub mod streamed;
pub mod trace;
pub mod traffic;
pub mod wifi;
mod world;

pub use rtcbench_net::{queue, rng};

/// `rtcbench_net::link`, with [`link::Link`] the link that carries this crate's packets, so code
/// written before the elements moved compiles as it was.
pub mod link {
    pub use rtcbench_net::link::*;

    /// A link carrying the simulator's [`Packet`](crate::packet::Packet)s.
    pub type Link = rtcbench_net::link::Link<crate::packet::Packet>;
}

pub use rtcbench_scenario::run::{CallMeta, FlowMeta, LinkMeta, Meta};
pub use world::{
    simulate, simulate_with, write_pcap, BuildController, CallSetup, CaptureWriter, Captured,
    CapturedTransport, ControllerChoice, ElementOverride, RunOptions, RunOutput, Simulation, UserController,
    UserFeedback, LINK_SAMPLE_INTERVAL,
};
