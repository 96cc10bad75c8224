//! TCP cross traffic with real dynamics, as sans-IO state machines: a [`TcpSender`] and a
//! [`TcpReceiver`] exchange real TCP headers (the payload travels as a length only).
//!
//! | block | spec | file |
//! |---|---|---|
//! | header and SACK option, sequence unwrapping | RFC 9293 §3.1, RFC 2018 §3 | [`wire`] |
//! | RTT estimation, RTO and backoff | RFC 6298 | [`rtt`] |
//! | SACK scoreboard: IsLost, pipe, NextSeg | RFC 6675 §4 | [`scoreboard`] |
//! | proportional rate reduction | RFC 6937 | [`prr`] |
//! | Reno congestion avoidance | RFC 5681 §3.1, RFC 3465 | [`newreno`] |
//! | CUBIC | RFC 9438 | [`cubic`] |
//! | HyStart++ | RFC 9406 | [`hystart`] |
//! | sender: windows, recovery (SACK or NewReno), timeouts | RFC 5681, 6582, 6675, 6298, 6928 | [`sender`] |
//! | receiver: cumulative ACK, SACK blocks, delayed ACKs | RFC 5681 §4.2, RFC 2018 §4 | [`receiver`] |
//!
//! Choices (details and deviations in `docs/tcp.md`): the connection starts established (no
//! handshake); SMSS 1460 with no TCP options on data segments, so a full segment is a
//! 1500-byte IPv4 packet; SACK and window scaling are assumed negotiated; no pacing (Linux
//! CUBIC without the fq qdisc); delayed ACKs on at the receiver; Linux's RTO bounds.
//!
//! # Drive loop
//!
//! Both ends are driven the same way: after an input (`on_ack` / `on_segment`) or a timeout
//! (`on_timeout(now)` once `now` reaches `poll_timeout()`), drain `poll_transmit(now)` until it
//! returns `None` and put each [`Segment`] on the wire, before the next input, even one that
//! arrives at the same instant (a stack transmits between packets); then wait until the earliest
//! deadline or the next arrival. The sender also reports [`SenderEvent`]s through `poll_event()`.

pub mod cubic;
pub mod hystart;
pub mod newreno;
pub mod prr;
pub mod receiver;
pub mod rtt;
pub mod scoreboard;
pub mod sender;
pub mod wire;

use rtcbench_units::DataSize;

pub use receiver::{DelayedAck, ReceiverConfig, ReceiverMetrics, TcpReceiver};
pub use sender::{
    Application, CongestionControl, CongestionState, SenderConfig, SenderEvent, SenderMetrics, TcpSender,
};

/// The window scale shift both ends use (RFC 7323 §2, assumed negotiated in the handshake):
/// Linux's usual 7, for windows up to 8 MB.
pub const WINDOW_SCALE_SHIFT: u8 = 7;

/// A segment to put on the wire: real header bytes, the payload as a length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// The TCP header, options included (parse it with [`wire::TcpRepr::parse`]).
    pub header: Vec<u8>,
    /// Payload bytes carried (zero for a pure ACK).
    pub payload: DataSize,
    /// The payload was sent before.
    pub retransmission: bool,
}

impl Segment {
    /// Bytes on the wire: IPv4 header, TCP header and payload.
    pub fn wire_size(&self) -> DataSize {
        wire::IPV4_HEADER + DataSize::bytes(self.header.len() as u64) + self.payload
    }
}

#[cfg(test)]
mod tests;
