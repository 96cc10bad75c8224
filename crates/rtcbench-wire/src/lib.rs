//! RTP and RTCP wire formats used by rtcbench, in the smoltcp style: a small `Repr` per message
//! with `parse`, `emit` and `buffer_len`, one typed error ([`WireError`]), and tests on bytes
//! written by hand from the specifications.
//!
//! * [`rtp`]: the RTP fixed header (RFC 3550 §5.1) with the one-byte header extensions
//!   (RFC 8285 §4.2) that congestion control needs: abs-send-time, the transport-wide sequence
//!   number (draft-holmer-rmcat-transport-wide-cc-extensions-01 §2) and frame marking (RFC 9626).
//! * [`rtp_stats`]: the receiver statistics behind an RTCP report block (RFC 3550 §6.4.1, App. A.1,
//!   A.3, A.8).
//! * [`ntp`]: the mapping from simulated time to NTP and compact NTP (RFC 3550 §4, §6.4.1).
//! * [`rtcp`]: sender and receiver reports (RFC 3550 §6.4) and transport-wide congestion control
//!   feedback (TWCC-01 §3), parsed and written with the `rtcp-types` crate; REMB
//!   (draft-alvestrand-rmcat-remb-03), RFC 8888 congestion control feedback and the
//!   loss-recovery feedback (generic NACK and PLI, RFC 4585 §6.2.1 and §6.3.1; FIR, RFC 5104
//!   §4.3.1), written byte by byte; and compound packets.
//! * [`rtx`]: the original sequence number of a retransmission (RFC 4588 §4).
//! * [`red`]: the block headers of redundant data (RFC 2198 §3).
//! * [`vp8`]: the VP8 payload descriptor with its picture ID (RFC 7741 §4.2).
//! * [`fec`]: the FEC headers of ULPFEC (RFC 5109 §7.3, §7.4) and FlexFEC (RFC 8627 §4.2), and
//!   the XOR of header fields and lengths that builds them and recovers a lost packet.
//!
//! * [`ip`]: the ECN field (RFC 3168 §5) and the 5-tuple of IPv4 and IPv6 packets, what a network
//!   element reads and marks.
//!
//! Nothing here panics on malformed input: every parser returns a [`WireError`].

mod error;
pub mod fec;
pub mod ip;
pub mod ntp;
pub mod pcap;
pub mod red;
pub mod rtcp;
pub mod rtp;
pub mod rtp_stats;
pub mod rtx;
pub mod vp8;

pub use error::WireError;
pub use fec::flexfec::FlexfecHeaderRepr;
pub use fec::ulpfec::UlpfecHeaderRepr;
pub use fec::{ProtectedPacket, RecoveryFields};
pub use ip::{Ecn, FiveTuple};
pub use red::{RedBlock, RedHeaderRepr};
pub use rtcp::ccfb::{CcfbArrival, CcfbMetric, CcfbRepr, CcfbStream, CcfbStreamArrivals};
pub use rtcp::fir::FirRepr;
pub use rtcp::nack::NackRepr;
pub use rtcp::pli::PliRepr;
pub use rtcp::remb::RembRepr;
pub use rtcp::report::{ReceiverReportRepr, ReportBlock, SenderReportRepr};
pub use rtcp::twcc::{TransportFeedbackRepr, TwccEncoder};
pub use rtcp::xr::{DlrrSubBlock, XrRepr};
pub use rtcp::{emit_compound, parse_compound, RtcpMessage};
pub use rtp::{
    abs_send_time_delta, abs_send_time_from, FrameMarking, RtpHeader, RtpHeaderRepr, ABS_SEND_TIME_ID,
    FRAME_MARKING_ID, IPV4_UDP_OVERHEAD, TRANSPORT_CC_ID,
};
pub use rtp_stats::ReceiverStats;
pub use rtx::{rtx_osn, write_osn, OSN_LEN};
pub use vp8::Vp8DescriptorRepr;

/// `n / d` rounded to the nearest integer, halves away from zero; `d` must be positive.
///
/// Every conversion between microseconds and a binary wire unit (2^-18 s, 2^-32 s, 1/65536 s)
/// goes through here so that they all round the same way.
pub(crate) fn div_round(n: i128, d: i128) -> i128 {
    debug_assert!(d > 0);
    if n >= 0 {
        (n + d / 2) / d
    } else {
        (n - d / 2) / d
    }
}
