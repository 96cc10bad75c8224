//! The one feedback vocabulary every controller consumes.
//!
//! Transport-wide feedback (and RFC 8888 later) becomes a batch of [`PacketResult`]s; receiver
//! reports become a [`LossReport`] and an RTT sample; REMB becomes a rate. Controllers never
//! parse RTCP (ARCHITECTURE.md, "One feedback vocabulary").

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

/// ECN codepoint of a packet (RFC 3168 §5). It is the IP header's, so it lives with the wire
/// formats; re-exported here, where controllers have always found it.
pub use rtcbench_wire::Ecn;

/// Which probe cluster a packet belongs to (libwebrtc `PacedPacketInfo`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeInfo {
    pub cluster_id: i32,
    pub min_probes: u32,
    pub min_bytes: DataSize,
}

/// A request to send a burst of packets at `rate` to probe for capacity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeCluster {
    pub id: i32,
    pub rate: Bitrate,
    pub min_probes: u32,
    pub min_bytes: DataSize,
}

/// A packet the sender put on the wire, as a controller learns of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentPacket {
    /// Transport-wide sequence number, unwrapped (unique and increasing per sender).
    pub seq: i64,
    /// Bytes on the wire (IP/UDP/RTP headers included).
    pub size: DataSize,
    pub sent_at: Instant,
    pub is_audio: bool,
    pub probe: Option<ProbeInfo>,
    /// Bytes sent and not yet acknowledged or declared lost, including this packet.
    pub data_in_flight: DataSize,
}

/// What feedback says about one sent packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketResult {
    /// Transport-wide sequence number, unwrapped.
    pub seq: i64,
    pub size: DataSize,
    pub sent_at: Instant,
    /// Arrival time on the receiver's clock, mapped to the sender's timeline the way libwebrtc's
    /// TransportFeedbackAdapter does (only differences between arrivals are meaningful);
    /// `None` if the feedback reports the packet as not received.
    pub arrival: Option<Instant>,
    pub ecn: Ecn,
    pub is_audio: bool,
    pub probe: Option<ProbeInfo>,
}

/// Loss over one receiver-report interval (RFC 3550 §6.4.1), summed over the sender's streams.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LossReport {
    /// Fraction lost in the interval (0..1), the largest of the report blocks.
    pub fraction_lost: f64,
    pub packets_lost_delta: u64,
    pub packets_received_delta: u64,
}

/// One parsed feedback message (or compound packet) as a controller sees it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FeedbackReport {
    /// Per-packet results from transport-wide feedback, in sequence order.
    pub packets: Vec<PacketResult>,
    /// Bytes sent and not yet acknowledged or declared lost, after this feedback.
    pub data_in_flight: DataSize,
    pub loss: Option<LossReport>,
    /// Round-trip time from a receiver report's LSR/DLSR.
    pub rtt: Option<Duration>,
    /// A receiver-estimated maximum bitrate (REMB).
    pub remb: Option<Bitrate>,
}
