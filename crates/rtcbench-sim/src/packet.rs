//! Packets as they travel through the simulated network.

use rtcbench_cc::feedback::Ecn;
pub use rtcbench_net::DropReason;
use rtcbench_net::{FlowKey, NetPacket};
use rtcbench_units::{DataSize, Instant};

pub use rtcbench_scenario::{FlowId, LinkId, RouteId};

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
    /// A retransmission of a media packet (RTX, RFC 4588).
    Rtx,
    /// A forward error correction packet (ULPFEC in RED, RFC 5109 and RFC 2198).
    Fec,
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
            Self::Rtx => "rtx",
            Self::Fec => "fec",
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
    /// Media payload bytes (zero for padding and RTCP; a retransmission's media payload).
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

/// The network elements of `rtcbench-net` see a packet's wire size, its flow id as the flow key
/// (each media stream, RTCP direction, TCP connection and CBR source is a flow) and its ECN field.
impl NetPacket for Packet {
    #[inline]
    fn size(&self) -> DataSize {
        self.size
    }

    #[inline]
    fn flow_key(&self) -> FlowKey {
        FlowKey(u64::from(self.flow))
    }

    #[inline]
    fn ecn(&self) -> Ecn {
        self.ecn
    }

    #[inline]
    fn set_ecn(&mut self, ecn: Ecn) {
        self.ecn = ecn;
    }
}

/// The flow of a packet, from the key its [`NetPacket`] implementation gave it (a link reports
/// the packets it serialised by key).
pub fn flow_of(key: FlowKey) -> FlowId {
    key.0 as FlowId
}
