//! Cross traffic that competes with the media calls for the bottleneck.
//!
//! [`tcp`] models TCP bulk and short flows with real dynamics (slow start, CUBIC or NewReno,
//! SACK loss recovery, retransmission timeouts) as sans-IO state machines; [`on_off`] is the
//! application of a short flow; [`cbr`] is constant-bit-rate UDP.

pub mod cbr;
pub mod on_off;
pub mod tcp;
