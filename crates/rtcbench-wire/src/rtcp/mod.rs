//! RTCP messages (RFC 3550 §6) that rtcbench's controllers read, and compound packets (§6.1).
//!
//! Parsing and writing go through the `rtcp-types` crate; this module converts its borrowed views
//! into owned `Repr`s with typed fields. Files mirror the messages:
//!
//! * [`report`]: sender and receiver reports and their report blocks (RFC 3550 §6.4.1, §6.4.2).
//! * [`twcc`]: transport-wide congestion control feedback
//!   (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3, "TWCC-01").
//! * Later: `remb.rs` (REMB, draft-alvestrand-rmcat-remb-03, PSFB FMT 15) and `ccfb.rs`
//!   (RFC 8888 congestion control feedback, RTPFB FMT 11). Until then they parse as
//!   [`RtcpMessage::Other`].
//!
//! Compound rules are not enforced on parse or emit: RFC 3550 §6.1 wants every compound packet to
//! start with an SR or RR, but feedback is often sent alone as reduced-size RTCP (RFC 5506).

pub mod report;
pub mod twcc;

use rtcp_types::prelude::*;

use crate::WireError;
use report::{ReceiverReportRepr, SenderReportRepr};
use twcc::TransportFeedbackRepr;

/// RTCP packet type of a sender report (RFC 3550 §6.4.1).
pub const PT_SR: u8 = 200;
/// RTCP packet type of a receiver report (RFC 3550 §6.4.2).
pub const PT_RR: u8 = 201;
/// RTCP packet type of transport-layer feedback, RTPFB (RFC 4585 §6.1).
pub const PT_RTPFB: u8 = 205;
/// RTCP packet type of payload-specific feedback, PSFB (RFC 4585 §6.1); REMB uses it.
pub const PT_PSFB: u8 = 206;
/// FMT of transport-wide CC feedback within RTPFB (TWCC-01 §3.1).
pub const FMT_TWCC: u8 = 15;

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
    // Later: Remb(RembRepr) for PT 206 FMT 15 with the "REMB" identifier, and
    // CongestionControlFeedback(CcfbRepr) for PT 205 FMT 11 (RFC 8888).
    /// Any other packet (SDES, BYE, NACK, PLI, ...), well formed but not decoded.
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
        write_vec(&self.builder()?)
    }

    fn builder(&self) -> Result<rtcp_types::PacketBuilder<'static>, WireError> {
        Ok(match self {
            Self::SenderReport(sr) => sr.builder()?.into(),
            Self::ReceiverReport(rr) => rr.builder()?.into(),
            Self::TransportFeedback(fb) => fb.builder()?.into(),
            Self::Other { .. } => return Err(WireError::Unsupported("an undecoded RTCP packet")),
        })
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
        // because rtcp-types' TWCC view does not expose the packet status count.
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
            other => RtcpMessage::Other { packet_type: other.type_(), fmt: other.count() },
        });
    }
    Ok(messages)
}

/// Writes `messages` back to back as one compound packet (RFC 3550 §6.1).
pub fn emit_compound(messages: &[RtcpMessage]) -> Result<Vec<u8>, WireError> {
    let mut compound = rtcp_types::Compound::builder();
    for message in messages {
        compound = compound.add_packet(message.builder()?);
    }
    write_vec(&compound)
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
    use super::report::ReportBlock;
    use super::*;
    use rtcbench_units::{Duration, SeqNo};

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

    #[test]
    fn compound_round_trips() {
        let messages = sample_messages();
        let bytes = emit_compound(&messages).unwrap();
        // RR with one block (8 + 24) + TWCC (12 + 8 + 2 + 3 deltas, padded to 16).
        assert_eq!(bytes.len(), 32 + 28);
        assert_eq!(parse_compound(&bytes), Ok(messages));
    }

    #[test]
    fn unknown_packets_are_kept_as_other() {
        // An RR without blocks followed by a PLI (PSFB FMT 1), as RFC 4585 §6.3.1 lays it out.
        let bytes = [
            0x80, 201, 0x00, 0x01, 0x00, 0x00, 0x00, 0x07, // RR, RC=0, length 1, SSRC 7
            0x81, 206, 0x00, 0x02, 0, 0, 0, 7, 0, 0, 0, 9, // PLI from SSRC 7 about SSRC 9
        ];
        let messages = parse_compound(&bytes).unwrap();
        assert_eq!(
            messages,
            vec![
                RtcpMessage::ReceiverReport(ReceiverReportRepr { ssrc: 7, blocks: vec![] }),
                RtcpMessage::Other { packet_type: PT_PSFB, fmt: 1 },
            ]
        );
        assert_eq!(emit_compound(&messages[1..]), Err(WireError::Unsupported("an undecoded RTCP packet")));
    }

    #[test]
    fn malformed_compounds_are_errors() {
        let bytes = emit_compound(&sample_messages()).unwrap();
        assert!(parse_compound(&bytes[..bytes.len() - 4]).is_err());
        assert!(parse_compound(&[]).is_err());
        let mut v1 = bytes.clone();
        v1[0] = 0x40;
        assert!(parse_compound(&v1).is_err());
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
