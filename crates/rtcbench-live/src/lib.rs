//! rtcbench on real packets. The emulation relay ([`relay`], driven by `bin/rtcbench-relay.rs`)
//! carries IP packets between the network namespaces of a testbed (`rtcbench.testbed`) through a
//! scenario's links, built from the same `rtcbench-net` elements the simulator runs, in real time
//! on the monotonic clock. docs/emulation.md describes it; docs/adr/0001-relay-packet-io.md says
//! why it uses packet sockets.

pub mod config;
pub mod media;
pub mod pipe_controller;
pub mod prague;
pub mod process;
pub mod relay;
pub mod stats;
pub mod sys;
