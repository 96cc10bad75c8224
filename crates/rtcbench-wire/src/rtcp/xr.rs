//! RTCP extended reports (RFC 3611), the two blocks that give an RTP receiver its round-trip
//! time: the Receiver Reference Time report block (RRTR, §4.4) and the DLRR report block (§4.5).
//!
//! ```text
//! XR:   V=2 P reserved PT=207 length | SSRC of packet sender | report blocks
//! RRTR: BT=4 | reserved | block length = 2 | NTP timestamp, most significant word | least
//! DLRR: BT=5 | reserved | block length = 3·n | n × (SSRC_i | last RR (LRR) | delay since last RR (DLRR))
//! ```
//!
//! A receiver that sends no media (so no SR, and no RTT from RFC 3550 report blocks) sends an
//! RRTR; the media sender answers with a DLRR sub-block that echoes the middle 32 bits of that
//! timestamp (LRR) and the time it held it (DLRR, 1/65536 s), and the receiver computes
//! RTT = A − LRR − DLRR exactly as a sender does from LSR/DLSR (RFC 3611 §4.5).
//!
//! Written with `rtcp-types`. Read here from the bytes (after `rtcp-types` has checked that the
//! blocks tile the packet): `rtcp-types` 0.3.0 rejects a DLRR block unless its length is a
//! multiple of 16 bytes, which holds only for 1, 5, 9, ... sub-blocks. Blocks of other types are
//! skipped.

use rtcp_types::{
    DelaySinceLastReceiverReport, DelaySinceLastReceiverReportBlock, ReceiverReferenceTime, Xr,
};

use super::{be_u32, strip_padding, write_vec};
use crate::WireError;

/// Block type of the Receiver Reference Time block (RFC 3611 §4.4).
const BT_RRTR: u8 = 4;
/// Block type of the DLRR block (RFC 3611 §4.5).
const BT_DLRR: u8 = 5;
/// XR header: common header and the packet sender's SSRC (RFC 3611 §2).
const XR_HEADER_LEN: usize = 8;
const DLRR_SUB_BLOCK_LEN: usize = 12;

/// One DLRR sub-block (RFC 3611 §4.5): the answer to one receiver's RRTR.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct DlrrSubBlock {
    /// SSRC_i: the receiver whose RRTR this answers.
    pub ssrc: u32,
    /// LRR: the middle 32 bits of that RRTR's NTP timestamp.
    pub lrr: u32,
    /// DLRR: time between receiving that RRTR and sending this block, in 1/65536 s.
    pub dlrr: u32,
}

/// An XR packet with the blocks rtcbench uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct XrRepr {
    /// SSRC of the packet sender.
    pub sender_ssrc: u32,
    /// RRTR block: the sender's 64-bit NTP time when it sent this packet.
    pub rrtr: Option<u64>,
    /// DLRR block's sub-blocks (no block when empty).
    pub dlrr: Vec<DlrrSubBlock>,
}

impl XrRepr {
    /// Decodes one XR packet (`raw`: exactly its bytes, as split from a compound).
    pub fn parse(raw: &[u8]) -> Result<Self, WireError> {
        let truncated = |needed| WireError::Truncated { what: "RTCP XR", needed, actual: raw.len() };
        let packet = strip_padding(raw, XR_HEADER_LEN).ok_or(truncated(XR_HEADER_LEN))?;
        let mut repr = Self { sender_ssrc: be_u32(&packet[4..]), ..Self::default() };
        let mut rest = &packet[XR_HEADER_LEN..];
        while rest.len() >= 4 {
            // Block header: BT (8) | type-specific (8) | block length in words minus one (16).
            let len = 4 * (usize::from(u16::from_be_bytes([rest[2], rest[3]])) + 1);
            let block = rest.get(..len).ok_or(truncated(raw.len() - rest.len() + len))?;
            match block[0] {
                BT_RRTR if len >= 12 => {
                    repr.rrtr = Some(u64::from(be_u32(&block[4..])) << 32 | u64::from(be_u32(&block[8..])));
                }
                BT_DLRR => {
                    repr.dlrr.extend(block[4..].chunks_exact(DLRR_SUB_BLOCK_LEN).map(|b| DlrrSubBlock {
                        ssrc: be_u32(b),
                        lrr: be_u32(&b[4..]),
                        dlrr: be_u32(&b[8..]),
                    }))
                }
                _ => {}
            }
            rest = &rest[len..];
        }
        Ok(repr)
    }

    /// No block rtcbench reads: no RRTR and no DLRR sub-block.
    pub fn is_empty(&self) -> bool {
        self.rrtr.is_none() && self.dlrr.is_empty()
    }

    /// The packet's bytes. An XR needs a block: rtcp-types parses no XR without one (RFC 3611 §2
    /// would allow it).
    pub fn to_bytes(&self) -> Result<Vec<u8>, WireError> {
        if self.is_empty() {
            return Err(WireError::Unsupported("an XR without an RRTR or DLRR block"));
        }
        let mut builder = Xr::builder().sender_ssrc(self.sender_ssrc);
        if let Some(ntp) = self.rrtr {
            builder = builder.add_block(ReceiverReferenceTime::builder().ntp_timestamp(ntp));
        }
        if !self.dlrr.is_empty() {
            let dlrr = self.dlrr.iter().fold(DelaySinceLastReceiverReport::builder(), |b, sub| {
                b.add_block(
                    DelaySinceLastReceiverReportBlock::builder()
                        .ssrc(sub.ssrc)
                        .last_receiver_report(sub.lrr)
                        .delay_since_last_receiver_report_timestamp(sub.dlrr),
                )
            });
            builder = builder.add_block(dlrr);
        }
        write_vec(&builder)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rtcp::{parse_compound, RtcpMessage};

    /// RRTR then DLRR, written by hand from RFC 3611 §2 (header), §4.4 and §4.5.
    const XR_BYTES: [u8; 48] = [
        0x80, 207, 0x00, 0x0B, 0x12, 0x34, 0x56, 0x78, // XR, length 11 (48 bytes), SSRC
        4, 0, 0x00, 0x02, // RRTR: BT 4, reserved, block length 2
        0xE9, 0x00, 0x00, 0x01, 0x80, 0x00, 0x00, 0x00, // NTP 0xE9000001.80000000
        5, 0, 0x00, 0x06, // DLRR: BT 5, reserved, block length 6 (two sub-blocks)
        0, 0, 0, 1, 0x00, 0x01, 0x80, 0x00, 0x00, 0x00, 0x40, 0x00, // SSRC 1, LRR, DLRR 0.25 s
        0, 0, 0, 2, 0xAA, 0xBB, 0xCC, 0xDD, 0x00, 0x01, 0x00, 0x00, // SSRC 2, LRR, DLRR 1 s
    ];

    fn sample() -> XrRepr {
        XrRepr {
            sender_ssrc: 0x1234_5678,
            rrtr: Some(0xE900_0001_8000_0000),
            dlrr: vec![
                DlrrSubBlock { ssrc: 1, lrr: 0x0001_8000, dlrr: 0x4000 },
                DlrrSubBlock { ssrc: 2, lrr: 0xAABB_CCDD, dlrr: 0x0001_0000 },
            ],
        }
    }

    #[test]
    fn rrtr_and_dlrr_round_trip_through_hand_made_bytes() {
        assert_eq!(parse_compound(&XR_BYTES).unwrap(), vec![RtcpMessage::ExtendedReport(sample())]);
        assert_eq!(sample().to_bytes().unwrap(), XR_BYTES);
    }

    #[test]
    fn an_rrtr_alone_is_twenty_bytes() {
        let xr = XrRepr { sender_ssrc: 9, rrtr: Some(1 << 32), dlrr: vec![] };
        let bytes = xr.to_bytes().unwrap();
        assert_eq!(bytes, [0x80, 207, 0, 4, 0, 0, 0, 9, 4, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0]);
        assert_eq!(parse_compound(&bytes).unwrap(), vec![RtcpMessage::ExtendedReport(xr)]);
    }

    #[test]
    fn blocks_of_other_types_are_skipped() {
        // A Packet Receipt Times block (BT 3, §4.3) with one timestamp, then an RRTR.
        let bytes = [
            0x80, 207, 0x00, 0x08, 0, 0, 0, 9, // XR, length 8 (36 bytes)
            3, 0, 0x00, 0x03, 0, 0, 0, 1, 0x00, 0x10, 0x00, 0x11, 0, 0, 0, 42, // PRT, one time
            4, 0, 0x00, 0x02, 0, 0, 0, 7, 0, 0, 0, 0, // RRTR
        ];
        let xr = XrRepr { sender_ssrc: 9, rrtr: Some(7 << 32), dlrr: vec![] };
        assert_eq!(parse_compound(&bytes).unwrap(), vec![RtcpMessage::ExtendedReport(xr)]);
    }
}
