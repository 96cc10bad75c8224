//! RTCP messages (RFC 3550 §6) that rtcbench's controllers read, and compound packets (§6.1).
//!
//! Compounds are split by the `rtcp-types` crate. Reports and TWCC are parsed and written with
//! it too, converting its borrowed views into owned `Repr`s with typed fields; `rtcp-types` has
//! no REMB or RFC 8888 support, so those two are read and written here byte by byte (after
//! `rtcp-types` has checked the common header), and XR is read here too (see [`xr`]). The
//! loss-recovery messages (generic NACK, PLI, FIR) are also read and written byte by byte,
//! although `rtcp-types` 0.3.0 has views and builders for them: its NACK builder sorts the
//! sequence numbers as plain integers, so a run of losses across 65535 → 0 costs two FCI entries
//! and the order is lost; its FIR builder keeps the entries in a `HashMap`, so their order on
//! the wire is not deterministic (STYLE.md §6); and its `parse_fci` hands the padding to the FCI
//! parsers, which then read padding octets as NACK entries. Files mirror the messages:
//!
//! * [`report`]: sender and receiver reports and their report blocks (RFC 3550 §6.4.1, §6.4.2).
//! * [`twcc`]: transport-wide congestion control feedback
//!   (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3, "TWCC-01").
//! * [`remb`]: receiver estimated maximum bitrate (draft-alvestrand-rmcat-remb-03, PSFB FMT 15
//!   with the "REMB" identifier).
//! * [`ccfb`]: RFC 8888 congestion control feedback (RTPFB FMT 11).
//! * [`xr`]: extended reports (RFC 3611): the receiver reference time and DLRR blocks.
//! * [`nack`]: generic NACK (RFC 4585 §6.2.1, RTPFB FMT 1), the lost packets a receiver asks
//!   to have retransmitted.
//! * [`pli`]: picture loss indication (RFC 4585 §6.3.1, PSFB FMT 1).
//! * [`fir`]: full intra request (RFC 5104 §4.3.1, PSFB FMT 4).
//!
//! Compound rules are not enforced on parse or emit: RFC 3550 §6.1 wants every compound packet to
//! start with an SR or RR, but feedback is often sent alone as reduced-size RTCP (RFC 5506).

pub mod ccfb;
pub mod fir;
pub mod nack;
pub mod pli;
pub mod remb;
pub mod report;
pub mod twcc;
pub mod xr;

use rtcp_types::prelude::*;

use crate::WireError;
use ccfb::CcfbRepr;
use fir::FirRepr;
use nack::NackRepr;
use pli::PliRepr;
use remb::RembRepr;
use report::{ReceiverReportRepr, SenderReportRepr};
use twcc::TransportFeedbackRepr;
use xr::XrRepr;

/// RTCP packet type of a sender report (RFC 3550 §6.4.1).
pub const PT_SR: u8 = 200;
/// RTCP packet type of a receiver report (RFC 3550 §6.4.2).
pub const PT_RR: u8 = 201;
/// RTCP packet type of an extended report (RFC 3611 §2).
pub const PT_XR: u8 = 207;
/// RTCP packet type of transport-layer feedback, RTPFB (RFC 4585 §6.1).
pub const PT_RTPFB: u8 = 205;
/// RTCP packet type of payload-specific feedback, PSFB (RFC 4585 §6.1); REMB, PLI and FIR use it.
pub const PT_PSFB: u8 = 206;
/// FMT of the generic NACK within RTPFB (RFC 4585 §6.2).
pub const FMT_NACK: u8 = 1;
/// FMT of picture loss indication within PSFB (RFC 4585 §6.3).
pub const FMT_PLI: u8 = 1;
/// FMT of the full intra request within PSFB (RFC 5104 §4.3).
pub const FMT_FIR: u8 = 4;
/// FMT of transport-wide CC feedback within RTPFB (TWCC-01 §3.1).
pub const FMT_TWCC: u8 = 15;
/// FMT of RFC 8888 congestion control feedback within RTPFB (RFC 8888 §3.1).
pub const FMT_CCFB: u8 = 11;
/// FMT of application layer feedback within PSFB (RFC 4585 §6.4); REMB is one application,
/// told apart by its identifier.
pub const FMT_AFB: u8 = 15;
/// Longest RTCP packet: the 16-bit length field counts 32-bit words minus one (RFC 3550 §6.4.1).
pub const MAX_PACKET_LEN: usize = 4 << 16;
/// Bytes of the common part of a feedback message (RFC 4585 §6.1) before its FCI: RTCP header,
/// SSRC of packet sender, SSRC of media source.
pub const FEEDBACK_HEADER_LEN: usize = 12;

/// One RTCP packet of a compound packet, decoded if rtcbench uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RtcpMessage {
    /// SR, PT 200.
    SenderReport(SenderReportRepr),
    /// RR, PT 201.
    ReceiverReport(ReceiverReportRepr),
    /// Transport-wide CC feedback, PT 205 FMT 15.
    TransportFeedback(TransportFeedbackRepr),
    /// REMB, PT 206 FMT 15 with the "REMB" identifier. Other application layer feedback is
    /// [`Other`](Self::Other).
    Remb(RembRepr),
    /// RFC 8888 congestion control feedback, PT 205 FMT 11.
    CongestionControlFeedback(CcfbRepr),
    /// XR, PT 207, with its RRTR and DLRR blocks (other block types are skipped).
    ExtendedReport(XrRepr),
    /// Generic NACK, PT 205 FMT 1.
    Nack(NackRepr),
    /// Picture loss indication, PT 206 FMT 1.
    Pli(PliRepr),
    /// Full intra request, PT 206 FMT 4.
    Fir(FirRepr),
    /// Any other packet (SDES, BYE, APP, SLI, RPSI, TMMBR, ...), well formed but not decoded.
    Other {
        /// The RTCP packet type.
        packet_type: u8,
        /// The 5-bit FMT (feedback) or RC/SC (count) field.
        fmt: u8,
    },
}

impl RtcpMessage {
    /// The packet's bytes. [`Other`](Self::Other) cannot be written (its body is not kept).
    pub fn to_bytes(&self) -> Result<Vec<u8>, WireError> {
        match self {
            Self::SenderReport(sr) => sr.to_bytes(),
            Self::ReceiverReport(rr) => rr.to_bytes(),
            Self::TransportFeedback(fb) => fb.to_bytes(),
            Self::Remb(remb) => remb.to_bytes(),
            Self::CongestionControlFeedback(ccfb) => ccfb.to_bytes(),
            Self::ExtendedReport(xr) => xr.to_bytes(),
            Self::Nack(nack) => nack.to_bytes(),
            Self::Pli(pli) => pli.to_bytes(),
            Self::Fir(fir) => fir.to_bytes(),
            Self::Other { .. } => Err(WireError::Unsupported("an undecoded RTCP packet")),
        }
    }
}

/// Parses a compound RTCP packet (RFC 3550 §6.1) into its messages, in order.
///
/// The whole datagram is rejected if any packet in it is malformed, as `rtcp_types::Compound`
/// does: its packet lengths must add up to exactly `bytes.len()`.
pub fn parse_compound(bytes: &[u8]) -> Result<Vec<RtcpMessage>, WireError> {
    let compound = rtcp_types::Compound::parse(bytes)?;
    let mut messages = Vec::new();
    let mut offset = 0;
    for packet in compound {
        let packet = packet?;
        // Compound::parse has checked that the lengths tile `bytes`; the raw slice is needed
        // because rtcp-types' TWCC view does not expose the packet status count, and for the
        // messages it does not know.
        let raw = bytes.get(offset..offset + packet.length()).ok_or(WireError::Truncated {
            what: "RTCP compound packet",
            needed: offset + packet.length(),
            actual: bytes.len(),
        })?;
        offset += packet.length();
        messages.push(match packet {
            rtcp_types::Packet::Sr(sr) => RtcpMessage::SenderReport(SenderReportRepr::from_rtcp(&sr)),
            rtcp_types::Packet::Rr(rr) => RtcpMessage::ReceiverReport(ReceiverReportRepr::from_rtcp(&rr)),
            rtcp_types::Packet::TransportFeedback(ref fb) if fb.count() == FMT_TWCC => {
                RtcpMessage::TransportFeedback(TransportFeedbackRepr::parse(raw)?)
            }
            rtcp_types::Packet::TransportFeedback(ref fb) if fb.count() == FMT_CCFB => {
                RtcpMessage::CongestionControlFeedback(CcfbRepr::parse(raw)?)
            }
            rtcp_types::Packet::TransportFeedback(ref fb) if fb.count() == FMT_NACK => {
                RtcpMessage::Nack(NackRepr::parse(raw)?)
            }
            rtcp_types::Packet::PayloadFeedback(ref fb) if fb.count() == FMT_PLI => {
                RtcpMessage::Pli(PliRepr::parse(raw)?)
            }
            rtcp_types::Packet::PayloadFeedback(ref fb) if fb.count() == FMT_FIR => {
                RtcpMessage::Fir(FirRepr::parse(raw)?)
            }
            rtcp_types::Packet::PayloadFeedback(ref fb)
                if fb.count() == FMT_AFB && remb::has_remb_identifier(raw) =>
            {
                RtcpMessage::Remb(RembRepr::parse(raw)?)
            }
            // An XR whose blocks are none rtcbench reads (RFC 3611 §4 defines seven) is not
            // decoded: as an empty XrRepr it would be written back as a bare 8-byte XR, which
            // RFC 3611 §2 allows ("possibly zero" blocks) but rtcp-types refuses to parse.
            rtcp_types::Packet::Xr(ref xr) => match XrRepr::parse(raw)? {
                decoded if decoded.is_empty() => RtcpMessage::Other { packet_type: PT_XR, fmt: xr.count() },
                decoded => RtcpMessage::ExtendedReport(decoded),
            },
            other => RtcpMessage::Other { packet_type: other.type_(), fmt: other.count() },
        });
    }
    Ok(messages)
}

/// Writes `messages` back to back as one compound packet (RFC 3550 §6.1).
///
/// No packet is padded, so plain concatenation is what `rtcp-types`' compound writer would do.
pub fn emit_compound(messages: &[RtcpMessage]) -> Result<Vec<u8>, WireError> {
    let mut compound = Vec::new();
    for message in messages {
        compound.extend_from_slice(&message.to_bytes()?);
    }
    Ok(compound)
}

/// Writes the common header (RFC 3550 §6.4.1) of an unpadded packet of `len` bytes into `buf`:
/// V=2, P=0, the 5-bit `fmt`, the packet type and the length in words minus one.
///
/// `len` must be a multiple of 4 from 4 to [`MAX_PACKET_LEN`], and `buf` at least 4 bytes.
pub(crate) fn emit_common_header(buf: &mut [u8], fmt: u8, packet_type: u8, len: usize) {
    debug_assert!(len & 3 == 0 && (4..=MAX_PACKET_LEN).contains(&len) && fmt < 32);
    buf[0] = 0x80 | fmt;
    buf[1] = packet_type;
    buf[2..4].copy_from_slice(&((len / 4 - 1) as u16).to_be_bytes());
}

/// The common part of a feedback message (RFC 4585 §6.1), with the padding removed from its FCI.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Feedback<'a> {
    pub(crate) sender_ssrc: u32,
    pub(crate) media_ssrc: u32,
    pub(crate) fci: &'a [u8],
}

/// Reads the feedback message `bytes` (exactly one packet) of type `P` (RTPFB or PSFB) whose FMT
/// must be `fmt`; `expected` names it for [`WireError::WrongPacketType`] and `message` for
/// [`WireError::BadFeedback`].
///
/// `rtcp-types` checks the version, packet type, length field and padding count first.
pub(crate) fn parse_feedback<'a, P: RtcpPacketParser<'a>>(
    bytes: &'a [u8],
    fmt: u8,
    expected: &'static str,
    message: &'static str,
) -> Result<Feedback<'a>, WireError> {
    let fb = P::parse(bytes)?;
    if fb.count() != fmt {
        return Err(WireError::WrongPacketType { expected, packet_type: fb.type_(), fmt: fb.count() });
    }
    let packet = strip_padding(bytes, FEEDBACK_HEADER_LEN).ok_or_else(|| WireError::BadFeedback {
        message,
        reason: format!(
            "{} bytes without padding, at least {FEEDBACK_HEADER_LEN} needed for the common header",
            bytes.len().saturating_sub(usize::from(bytes.last().copied().unwrap_or(0)))
        ),
    })?;
    Ok(Feedback {
        sender_ssrc: be_u32(&packet[4..]),
        media_ssrc: be_u32(&packet[8..]),
        fci: &packet[FEEDBACK_HEADER_LEN..],
    })
}

/// Writes the common part of an unpadded feedback message of `len` bytes (RFC 4585 §6.1) into
/// the start of `buf`, which must hold [`FEEDBACK_HEADER_LEN`] bytes; see [`emit_common_header`].
pub(crate) fn emit_feedback_header(
    buf: &mut [u8],
    fmt: u8,
    packet_type: u8,
    len: usize,
    sender_ssrc: u32,
    media_ssrc: u32,
) {
    emit_common_header(buf, fmt, packet_type, len);
    buf[4..8].copy_from_slice(&sender_ssrc.to_be_bytes());
    buf[8..12].copy_from_slice(&media_ssrc.to_be_bytes());
}

/// The big-endian 32-bit word at the start of `b`, which must hold 4 bytes.
pub(crate) fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// `packet` without the padding that its last octet counts when the P bit is set (RFC 3550
/// §6.4.1), or `None` if fewer than `min_len` bytes would remain.
pub(crate) fn strip_padding(packet: &[u8], min_len: usize) -> Option<&[u8]> {
    let padding = if packet.first()? & 0x20 != 0 { usize::from(*packet.last()?) } else { 0 };
    let unpadded = packet.get(..packet.len().checked_sub(padding)?)?;
    (unpadded.len() >= min_len).then_some(unpadded)
}

/// Runs an `rtcp-types` writer into a new vector of exactly its size.
pub(crate) fn write_vec(writer: &impl RtcpPacketWriter) -> Result<Vec<u8>, WireError> {
    let mut buf = vec![0; writer.calculate_size()?];
    let n = writer.write_into(&mut buf)?;
    buf.truncate(n);
    Ok(buf)
}

/// Runs an `rtcp-types` writer into the start of `buf`, returning the bytes written.
pub(crate) fn write_into(
    writer: &impl RtcpPacketWriter,
    what: &'static str,
    buf: &mut [u8],
) -> Result<usize, WireError> {
    let needed = writer.calculate_size()?;
    if buf.len() < needed {
        return Err(WireError::BufferTooSmall { what, needed, actual: buf.len() });
    }
    Ok(writer.write_into(&mut buf[..needed])?)
}

#[cfg(test)]
mod tests {
    use super::ccfb::{CcfbMetric, CcfbStream};
    use super::report::ReportBlock;
    use super::*;
    use rtcbench_units::{Bitrate, Duration, SeqNo};

    fn sample_messages() -> Vec<RtcpMessage> {
        let block = ReportBlock {
            ssrc: 0xAAAA_0001,
            fraction_lost: 5,
            cumulative_lost: -3,
            extended_highest_seq: 0x0001_0010,
            jitter: 77,
            lsr: 0x1234_5678,
            dlsr: 0x8000,
        };
        vec![
            RtcpMessage::ReceiverReport(ReceiverReportRepr { ssrc: 0xBBBB_0001, blocks: vec![block] }),
            RtcpMessage::TransportFeedback(TransportFeedbackRepr {
                sender_ssrc: 0xBBBB_0001,
                media_ssrc: 0xAAAA_0001,
                base_seq: SeqNo::new(65534),
                reference_time: -2,
                feedback_count: 9,
                packets: vec![
                    (SeqNo::new(65534), Some(Duration::from_micros(500))),
                    (SeqNo::new(65535), None),
                    (SeqNo::new(0), Some(Duration::from_millis(-3))),
                ],
            }),
        ]
    }

    /// An empty RR, an RFC 8888 report and a REMB, as a receiver running both a delay-based
    /// estimator and RFC 8888 feedback might send them together.
    fn feedback_compound() -> Vec<RtcpMessage> {
        vec![
            RtcpMessage::ReceiverReport(ReceiverReportRepr { ssrc: 7, blocks: vec![] }),
            RtcpMessage::CongestionControlFeedback(CcfbRepr {
                sender_ssrc: 7,
                report_timestamp: 0x378A_0000,
                streams: vec![CcfbStream {
                    media_ssrc: 9,
                    begin_seq: SeqNo::new(65535),
                    reports: vec![
                        Some(CcfbMetric { ecn: CcfbMetric::ECN_CE, arrival_offset: Some(Duration::ZERO) }),
                        None,
                        Some(CcfbMetric { ecn: 0, arrival_offset: None }),
                    ],
                }],
            }),
            RtcpMessage::Remb(RembRepr { sender_ssrc: 7, bitrate: Bitrate::mbps(10), ssrcs: vec![9] }),
        ]
    }

    #[test]
    fn compound_with_rr_ccfb_and_remb_parses_in_order() {
        // Written by hand: RFC 3550 §6.4.2, RFC 8888 §3.1, draft-alvestrand-rmcat-remb-03 §2.2.
        let bytes = [
            0x80, 201, 0x00, 0x01, 0, 0, 0, 7, // RR, RC=0, length 1, SSRC 7
            0x8B, 205, 0x00, 0x06, 0, 0, 0, 7, // CCFB, length 6 (28 bytes), sender SSRC 7
            0, 0, 0, 9, 0xFF, 0xFF, 0x00, 0x03, // media SSRC 9, begin_seq 65535, num_reports 3
            0xE0, 0x00, 0x00, 0x00, 0x9F, 0xFF, 0x00, 0x00, // CE at the RTS, lost, 0x1FFF, pad
            0x37, 0x8A, 0x00, 0x00, // RTS
            0x8F, 206, 0x00, 0x05, 0, 0, 0, 7, 0, 0, 0, 0, // REMB, length 5 (24 bytes), media 0
            b'R', b'E', b'M', b'B', 0x01, 0x1A, 0x62, 0x5A, 0, 0, 0, 9, // 1 SSRC, 10 Mbit/s, SSRC 9
        ];
        let messages = parse_compound(&bytes).unwrap();
        assert_eq!(messages, feedback_compound());
        assert_eq!(emit_compound(&messages).unwrap(), bytes);
    }

    #[test]
    fn other_application_layer_feedback_is_other() {
        // PSFB FMT 15 with another identifier, then a CCFB: only the CCFB is decoded.
        let mut bytes = vec![0x8F, 206, 0x00, 0x03, 0, 0, 0, 7, 0, 0, 0, 0, b'G', b'O', b'O', b'G'];
        bytes.extend(feedback_compound()[1].to_bytes().unwrap());
        let messages = parse_compound(&bytes).unwrap();
        assert_eq!(messages[0], RtcpMessage::Other { packet_type: PT_PSFB, fmt: FMT_AFB });
        assert!(matches!(messages[1], RtcpMessage::CongestionControlFeedback(_)));
    }

    #[test]
    fn compound_round_trips() {
        let messages = sample_messages();
        let bytes = emit_compound(&messages).unwrap();
        // RR with one block (8 + 24) + TWCC (12 + 8 + 2 + 3 deltas, padded to 16).
        assert_eq!(bytes.len(), 32 + 28);
        assert_eq!(parse_compound(&bytes), Ok(messages));
    }

    /// An RR, then what a receiver sends on losses: a NACK for the packets, a PLI and a FIR for
    /// the picture.
    fn loss_compound() -> Vec<RtcpMessage> {
        vec![
            RtcpMessage::ReceiverReport(ReceiverReportRepr { ssrc: 7, blocks: vec![] }),
            RtcpMessage::Nack(NackRepr { sender_ssrc: 7, media_ssrc: 9, lost: vec![65535, 0, 1, 40] }),
            RtcpMessage::Pli(PliRepr { sender_ssrc: 7, media_ssrc: 9 }),
            RtcpMessage::Fir(FirRepr { sender_ssrc: 7, entries: vec![(9, 3)] }),
        ]
    }

    #[test]
    fn compound_with_rr_nack_pli_and_fir_parses_in_order() {
        // Written by hand: RFC 3550 §6.4.2, RFC 4585 §6.2.1 and §6.3.1, RFC 5104 §4.3.1.
        let bytes = [
            0x80, 201, 0x00, 0x01, 0, 0, 0, 7, // RR, RC=0, length 1, SSRC 7
            0x81, 205, 0x00, 0x04, 0, 0, 0, 7, 0, 0, 0, 9, // NACK, length 4, from 7 about 9
            0xFF, 0xFF, 0x00, 0x03, // PID 65535, BLP 0b11: 0 and 1
            0x00, 0x28, 0x00, 0x00, // PID 40
            0x81, 206, 0x00, 0x02, 0, 0, 0, 7, 0, 0, 0, 9, // PLI from 7 about 9
            0x84, 206, 0x00, 0x04, 0, 0, 0, 7, 0, 0, 0, 0, // FIR, length 4, media source 0
            0, 0, 0, 9, 3, 0, 0, 0, // SSRC 9, Seq nr. 3
        ];
        let messages = parse_compound(&bytes).unwrap();
        assert_eq!(messages, loss_compound());
        assert_eq!(emit_compound(&messages).unwrap(), bytes);
    }

    #[test]
    fn unknown_packets_are_kept_as_other() {
        // An RR without blocks, a BYE (RFC 3550 §6.6) and an SLI (PSFB FMT 2, RFC 4585 §6.3.2).
        let bytes = [
            0x80, 201, 0x00, 0x01, 0x00, 0x00, 0x00, 0x07, // RR, RC=0, length 1, SSRC 7
            0x81, 203, 0x00, 0x01, 0, 0, 0, 7, // BYE, SC=1, SSRC 7
            0x82, 206, 0x00, 0x03, 0, 0, 0, 7, 0, 0, 0, 9, 0, 0, 0, 1, // SLI from 7 about 9
        ];
        let messages = parse_compound(&bytes).unwrap();
        assert_eq!(
            messages,
            vec![
                RtcpMessage::ReceiverReport(ReceiverReportRepr { ssrc: 7, blocks: vec![] }),
                RtcpMessage::Other { packet_type: 203, fmt: 1 },
                RtcpMessage::Other { packet_type: PT_PSFB, fmt: 2 },
            ]
        );
        assert_eq!(emit_compound(&messages[1..]), Err(WireError::Unsupported("an undecoded RTCP packet")));
    }

    #[test]
    fn malformed_compounds_are_errors() {
        let bytes = emit_compound(&sample_messages()).unwrap();
        assert!(parse_compound(&bytes[..bytes.len() - 4]).is_err());
        // A REMB whose Num SSRC disagrees with its length rejects the whole datagram.
        let mut feedback = emit_compound(&feedback_compound()).unwrap();
        let num_ssrc = feedback.len() - 8;
        feedback[num_ssrc] = 2;
        assert!(matches!(parse_compound(&feedback), Err(WireError::BadRemb(_))));
        assert!(parse_compound(&[]).is_err());
        let mut v1 = bytes.clone();
        v1[0] = 0x40;
        assert!(parse_compound(&v1).is_err());
        // A PLI with an FCI word, or a NACK without one, rejects the whole datagram.
        let mut loss = emit_compound(&loss_compound()).unwrap();
        let pli = 8 + 20;
        loss[pli + 3] = 3;
        loss.splice(pli + 12..pli + 12, [0, 0, 0, 0]);
        assert!(matches!(parse_compound(&loss), Err(WireError::BadFeedback { message: "PLI", .. })));
        let empty_nack = [0x81, 205, 0x00, 0x02, 0, 0, 0, 7, 0, 0, 0, 9];
        assert!(matches!(parse_compound(&empty_nack), Err(WireError::BadFeedback { .. })));
    }

    #[test]
    fn an_xr_with_no_block_rtcbench_reads_is_not_decoded() {
        // Found by the mutation property: a FIR turned into an XR whose one block is of a type
        // rtcbench does not read (BT 97). Decoded as an empty XR it wrote back as a bare XR
        // that rtcp-types refuses, so the round trip failed.
        let mut bytes = emit_compound(&loss_compound()).unwrap();
        for (at, value) in [(55, 0), (48, 97), (35, 236), (41, 207), (14, 66)] {
            bytes[at] = value;
        }
        let messages = parse_compound(&bytes).unwrap();
        assert_eq!(messages[3], RtcpMessage::Other { packet_type: PT_XR, fmt: 4 });
        let empty = XrRepr { sender_ssrc: 7, rrtr: None, dlrr: vec![] };
        assert!(matches!(empty.to_bytes(), Err(WireError::Unsupported(_))));
    }

    use proptest::prop_assert_eq;
    use proptest::test_runner::TestCaseError;

    /// `messages` written, with `edits` (offset, byte) applied: whatever then parses, except
    /// undecoded packets, can be written and reads back.
    fn mutated_reads_back(messages: &[RtcpMessage], edits: &[(usize, u8)]) -> Result<(), TestCaseError> {
        let mut bytes = emit_compound(messages).unwrap();
        for &(at, value) in edits {
            bytes[at] = value;
        }
        if let Ok(messages) = parse_compound(&bytes) {
            if !messages.iter().any(|m| matches!(m, RtcpMessage::Other { .. })) {
                prop_assert_eq!(parse_compound(&emit_compound(&messages).unwrap()), Ok(messages));
            }
        }
        Ok(())
    }

    proptest::proptest! {
        #[test]
        fn parsing_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(0u8..=255, 0..96)) {
            let _ = parse_compound(&bytes);
        }

        /// Valid packets with a few bytes overwritten get past the first checks more often than
        /// random bytes do.
        #[test]
        fn parsing_mutated_compounds_never_panics(
            edits in proptest::collection::vec((0usize..60, 0u8..=255), 1..6),
        ) {
            let mut bytes = emit_compound(&sample_messages()).unwrap();
            for (at, value) in edits {
                bytes[at] = value;
            }
            let _ = parse_compound(&bytes);
        }

        #[test]
        fn parsing_mutated_feedback_compounds_never_panics(
            edits in proptest::collection::vec((0usize..56, 0u8..=255), 1..6),
        ) {
            mutated_reads_back(&feedback_compound(), &edits)?;
        }

        /// Whatever a mutated loss-recovery compound parses to can be written and reads back.
        #[test]
        fn parsing_mutated_loss_compounds_never_panics(
            edits in proptest::collection::vec((0usize..60, 0u8..=255), 1..6),
        ) {
            mutated_reads_back(&loss_compound(), &edits)?;
        }

        /// Arbitrary bytes behind valid NACK, PLI and FIR headers reach those parsers.
        #[test]
        fn parsing_arbitrary_loss_feedback_bodies_never_panics(
            body in proptest::collection::vec(0u8..=255, 0..64),
        ) {
            let words = body.len() / 4;
            for (fmt, pt) in [(FMT_NACK, PT_RTPFB), (FMT_PLI, PT_PSFB), (FMT_FIR, PT_PSFB)] {
                let mut bytes = vec![0x80 | fmt, pt, 0, (words + 2) as u8, 0, 0, 0, 1, 0, 0, 0, 2];
                bytes.extend_from_slice(&body[..words * 4]);
                let _ = parse_compound(&bytes);
            }
        }

        /// Arbitrary bytes behind valid RTPFB FMT 11 and REMB headers reach those parsers.
        #[test]
        fn parsing_arbitrary_feedback_bodies_never_panics(body in proptest::collection::vec(0u8..=255, 0..64)) {
            let words = body.len() / 4;
            let mut ccfb = vec![0x8B, PT_RTPFB, 0, (words + 1) as u8, 0, 0, 0, 1];
            ccfb.extend_from_slice(&body[..words * 4]);
            let _ = parse_compound(&ccfb);
            let mut remb = vec![0x8F, PT_PSFB, 0, (words + 3) as u8, 0, 0, 0, 1, 0, 0, 0, 0, b'R', b'E', b'M', b'B'];
            remb.extend_from_slice(&body[..words * 4]);
            let _ = parse_compound(&remb);
        }

        /// Arbitrary bytes behind a valid RTPFB FMT 15 header reach the TWCC parser.
        #[test]
        fn parsing_arbitrary_twcc_bodies_never_panics(body in proptest::collection::vec(0u8..=255, 0..64)) {
            let words = body.len() / 4;
            let mut bytes = vec![0x8F, PT_RTPFB, 0, (words + 2) as u8, 0, 0, 0, 1, 0, 0, 0, 2];
            bytes.extend_from_slice(&body[..words * 4]);
            let _ = parse_compound(&bytes);
        }
    }
}
