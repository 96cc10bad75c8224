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
//! | TCP Prague (L4S) | draft-briscoe-iccrg-prague-congestion-control-04, RFC 9331 §4 | [`prague`] |
//! | AccECN's ACE counter | RFC 9768 §3.2.2 | [`accecn`] |
//! | BBR v1 (Linux `tcp_bbr`) | draft-cardwell-iccrg-bbr-congestion-control-00 | [`bbr`] |
//! | delivery-rate samples | draft-cheng-iccrg-delivery-rate-estimation-00 | [`rate`] |
//! | HyStart++ | RFC 9406 | [`hystart`] |
//! | sender: windows, recovery (SACK or NewReno), timeouts, ECN response, pacing | RFC 5681, 6582, 6675, 6298, 6928, 3168 | [`sender`] |
//! | receiver: cumulative ACK, SACK blocks, delayed ACKs, ECN feedback | RFC 5681 §4.2, RFC 2018 §4, RFC 3168 §6.1.3, RFC 9768 | [`receiver`] |
//!
//! Choices (details and deviations in `docs/tcp.md`): the connection starts established (no
//! handshake); SMSS 1460 with no TCP options on data segments, so a full segment is a
//! 1500-byte IPv4 packet; SACK and window scaling (and, with [`TcpEcn`], classic ECN or AccECN)
//! are assumed negotiated; NewReno and CUBIC unpaced (Linux without the fq qdisc), Prague and BBR
//! paced;
//! delayed ACKs on at the receiver; Linux's RTO bounds.
//!
//! # Drive loop
//!
//! Both ends are driven the same way: after an input (`on_ack` / `on_segment`) or a timeout
//! (`on_timeout(now)` once `now` reaches `poll_timeout()`), drain `poll_transmit(now)` until it
//! returns `None` and put each [`Segment`] on the wire, before the next input, even one that
//! arrives at the same instant (a stack transmits between packets); then wait until the earliest
//! deadline or the next arrival. The sender also reports [`SenderEvent`]s through `poll_event()`.

pub mod accecn;
pub mod bbr;
pub mod cubic;
pub mod hystart;
pub mod newreno;
pub mod prague;
pub mod prr;
pub mod rate;
pub mod receiver;
pub mod rtt;
pub mod scoreboard;
pub mod sender;
pub mod wire;

use rtcbench_units::DataSize;
use rtcbench_wire::Ecn;

pub use receiver::{DelayedAck, ReceiverConfig, ReceiverMetrics, TcpReceiver};
pub use sender::{
    Application, CongestionControl, CongestionState, SenderConfig, SenderEvent, SenderMetrics, TcpSender,
};

/// The window scale shift both ends use (RFC 7323 §2, assumed negotiated in the handshake):
/// Linux's usual 7, for windows up to 8 MB.
pub const WINDOW_SCALE_SHIFT: u8 = 7;

/// The ECN a connection uses, negotiated in the handshake that is not simulated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TcpEcn {
    /// Not ECN-capable: every packet Not-ECT.
    #[default]
    Off,
    /// Classic ECN (RFC 3168): data ECT(0), the receiver echoes CE with ECE until the sender's
    /// CWR, and the sender halves its window as for a loss, at most once per window.
    Classic,
    /// L4S (RFC 9331): data ECT(1), and Accurate ECN feedback (RFC 9768), the count of
    /// CE-marked packets in the ACE field; TCP Prague's.
    L4s,
}

/// A segment to put on the wire: real header bytes, the payload as a length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// The TCP header, options included (parse it with [`wire::TcpRepr::parse`]).
    pub header: Vec<u8>,
    /// Payload bytes carried (zero for a pure ACK).
    pub payload: DataSize,
    /// The payload was sent before.
    pub retransmission: bool,
    /// The ECN field of the IP header the segment goes out with.
    pub ecn: Ecn,
}

impl Segment {
    /// Bytes on the wire: IPv4 header, TCP header and payload.
    pub fn wire_size(&self) -> DataSize {
        wire::IPV4_HEADER + DataSize::bytes(self.header.len() as u64) + self.payload
    }
}

#[cfg(test)]
mod tests;
