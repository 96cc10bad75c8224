//! Packets as they travel through the simulated network.

use rtcbench_cc::feedback::Ecn;
use rtcbench_units::{DataSize, Instant};

/// Index of a flow in the run (`meta.flows` in the trace).
pub type FlowId = u32;
/// Index of a link in the run.
pub type LinkId = u16;
/// Index of a route (the list of links from a sender to a receiver).
pub type RouteId = u16;

/// What a packet carries, for tracing (`packets.kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketKind {
    Media,
    Padding,
    Rtcp,
    /// A TCP segment carrying data.
    Tcp,
    /// A TCP segment without data (a pure ACK).
    TcpAck,
    /// A constant-bit-rate UDP packet.
    Cbr,
}

impl PacketKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Media => "media",
            Self::Padding => "padding",
            Self::Rtcp => "rtcp",
            Self::Tcp => "tcp",
            Self::TcpAck => "tcp_ack",
            Self::Cbr => "cbr",
        }
    }
}

/// Why the network dropped a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// The queue had no room for it on arrival.
    QueueFull,
    /// The link's random loss process chose it.
    RandomLoss,
    /// An AQM's control law chose it: CoDel at dequeue, PIE at enqueue.
    Aqm,
    /// The buffer was full and FQ-CoDel dropped it from the head of its fattest flow queue
    /// (RFC 8290 §4.1) to make room for an arrival.
    Overflow,
}

impl DropReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::QueueFull => "queue_full",
            Self::RandomLoss => "random_loss",
            Self::Aqm => "aqm",
            Self::Overflow => "overflow",
        }
    }
}

/// One packet in the network. `data` holds its real protocol bytes: the RTP header with its
/// extensions (the payload is represented only by its length) or a whole RTCP packet.
#[derive(Clone, Debug)]
pub struct Packet {
    /// Unique within the run.
    pub id: u64,
    pub flow: FlowId,
    pub kind: PacketKind,
    /// Bytes on the wire, IP and UDP headers included.
    pub size: DataSize,
    /// Media payload bytes (zero for padding and RTCP).
    pub payload: DataSize,
    pub sent_at: Instant,
    pub route: RouteId,
    /// Index into the route of the link the packet is on (or will enter next).
    pub hop: u8,
    pub data: Vec<u8>,
    /// Trace annotations known to the sender (not used by any receiver logic).
    pub seq: Option<u16>,
    pub frame: Option<u64>,
    /// ECN field of the IP header (RFC 3168 §5): set by the sender, turned to CE by a marking
    /// queue.
    pub ecn: Ecn,
}
