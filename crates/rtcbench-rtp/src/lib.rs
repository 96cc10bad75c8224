//! The two ends of a media call, sans-IO: [`call::Sender`] (video and audio sources, RTP
//! packetisation, pacer, the congestion controller, RTCP sender reports) and [`call::Receiver`]
//! (transport-wide or RFC 8888 feedback or REMB, receiver reports, frame assembly, freezes).
//!
//! Neither reads a clock or touches a socket. Time comes in as `now`; datagrams come in as bytes
//! ([`Incoming`]) and go out through an outbox ([`Outgoing`]: the RTP header or RTCP bytes, and
//! the wire size with the payload that follows); what a researcher measures goes to a
//! [`CallObserver`] as it happens. The simulator's world drives them from its event heap and
//! turns an [`Outgoing`] into a simulated packet on the call's route; a live agent drives the
//! same endpoints from a UDP socket and the monotonic clock.

pub mod call;
mod learned;
pub mod observe;
pub mod plan;
pub mod sfu;

pub use call::{FeedbackMode, Pause, Receiver, Sender, SenderParts, StreamIds};
pub use observe::{CallObserver, FeedbackKind, FeedbackRow, Ignore};
pub use plan::CallPlan;

use rtcbench_units::DataSize;
use rtcbench_wire::Ecn;

/// What an outgoing datagram carries, which decides its flow in a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutKind {
    /// Video media (RTP).
    Video,
    /// Audio media (RTP).
    Audio,
    /// Probe padding, sent as RTX: it belongs to the video flow, or to audio in an audio-only
    /// call.
    Padding,
    /// A retransmission of a video packet on the RTX stream (RFC 4588); video flow.
    Retransmission,
    /// A ULPFEC packet in RED (RFC 5109, RFC 2198) in the video stream; video flow.
    Fec,
    /// RTCP, from whichever end sent it.
    Rtcp,
}

/// A datagram an endpoint sends now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    pub kind: OutKind,
    /// On the wire: IPv4 and UDP headers, `data`, then `payload` bytes of media.
    pub size: DataSize,
    /// Media bytes after the header (zero for padding and RTCP, whose bytes are overhead; a
    /// retransmission's media payload after its original sequence number).
    pub payload: DataSize,
    /// The RTP header (with its extensions, and on the RTX stream the original sequence number
    /// that starts the payload) or the RTCP compound packet.
    pub data: Vec<u8>,
    /// The RTP sequence number of an RTP packet; for a retransmission, that of the packet it
    /// repairs (its original sequence number).
    pub seq: Option<u16>,
    /// The index of the video frame a media packet (or a retransmission) carries part of.
    pub frame: Option<u64>,
    /// The IP ECN field to send it with (RFC 6679).
    pub ecn: Ecn,
}

/// A datagram that arrived at an endpoint.
#[derive(Clone, Copy, Debug)]
pub struct Incoming<'a> {
    /// The RTP header or RTCP bytes (what follows an RTP header is not needed).
    pub data: &'a [u8],
    /// Its size on the wire, as sent.
    pub size: DataSize,
    /// The IP ECN field as it arrived (CE if a queue marked it).
    pub ecn: Ecn,
    /// RTCP rather than RTP (RTP and RTCP share a port, RFC 5761).
    pub rtcp: bool,
}
