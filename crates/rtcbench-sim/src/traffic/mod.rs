//! Cross traffic that competes with the media calls for the bottleneck.
//!
//! [`tcp`] (the `rtcbench-tcp` crate, which the emulated cross-traffic agents share) models TCP bulk and short flows with real dynamics (slow start, CUBIC or NewReno,
//! SACK loss recovery, retransmission timeouts) as sans-IO state machines; [`on_off`] is the
//! application of a short flow; [`cbr`] is constant-bit-rate UDP (its source lives with the
//! network elements, which generate UDP background traffic in emulation too).

pub use rtcbench_net::cbr;
pub mod on_off;
pub use rtcbench_tcp as tcp;
