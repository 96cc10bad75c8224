//! Sender reports, receiver reports and report blocks (RFC 3550 §6.4.1, §6.4.2).
//!
//! ```text
//! SR: V=2 P RC PT=200 length | SSRC of sender | NTP timestamp (64) | RTP timestamp
//!     | sender's packet count | sender's octet count | RC × report block
//! RR: V=2 P RC PT=201 length | SSRC of packet sender | RC × report block
//! report block (24 bytes): SSRC_n | fraction lost (8) | cumulative lost (24, signed)
//!     | extended highest sequence number | interarrival jitter | LSR | DLSR
//! ```
//!
//! At most 31 blocks fit the 5-bit RC field; RFC 3550 §6.4.2 sends further RRs for more sources.

use rtcbench_units::Duration;

use super::{write_into, write_vec, PT_RR, PT_SR};
use crate::{ntp, WireError};

/// Bytes of one report block.
pub const REPORT_BLOCK_LEN: usize = 24;
/// Most report blocks one SR or RR can carry (5-bit RC).
pub const MAX_REPORT_BLOCKS: usize = 31;
const SR_HEADER_LEN: usize = 28;
const RR_HEADER_LEN: usize = 8;

/// One reception report block (RFC 3550 §6.4.1), about one source.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ReportBlock {
    /// SSRC_n: the source this block is about.
    pub ssrc: u32,
    /// Fraction of packets lost since the previous report, in 1/256 (App. A.3).
    pub fraction_lost: u8,
    /// Cumulative number of packets lost, a 24-bit signed value on the wire; negative when
    /// duplicates outnumber losses.
    pub cumulative_lost: i32,
    /// Extended highest sequence number received: cycles << 16 | highest sequence number.
    pub extended_highest_seq: u32,
    /// Interarrival jitter in RTP timestamp units (§6.4.1, App. A.8).
    pub jitter: u32,
    /// LSR: the middle 32 bits of the last SR's NTP timestamp, 0 if none was received.
    pub lsr: u32,
    /// DLSR: time since that SR was received, in units of 1/65536 s; 0 if none.
    pub dlsr: u32,
}

impl ReportBlock {
    /// Largest cumulative-lost value, 2^23 - 1 (App. A.3 clamps to it).
    pub const CUMULATIVE_LOST_MAX: i32 = 0x7F_FFFF;
    /// Smallest cumulative-lost value, -2^23.
    pub const CUMULATIVE_LOST_MIN: i32 = -0x80_0000;

    /// `fraction_lost` as a ratio in [0, 1).
    pub fn loss_ratio(&self) -> f64 {
        f64::from(self.fraction_lost) / 256.0
    }

    /// DLSR as a duration.
    pub fn dlsr_duration(&self) -> Duration {
        ntp::compact_to_duration(self.dlsr)
    }

    fn from_rtcp(b: &rtcp_types::ReportBlock<'_>) -> Self {
        // Sign-extend the 24-bit field.
        let cumulative_lost = ((b.cumulative_lost() << 8) as i32) >> 8;
        Self {
            ssrc: b.ssrc(),
            fraction_lost: b.fraction_lost(),
            cumulative_lost,
            extended_highest_seq: b.extended_sequence_number(),
            jitter: b.interarrival_jitter(),
            lsr: b.last_sender_report_timestamp(),
            dlsr: b.delay_since_last_sender_report_timestamp(),
        }
    }

    fn builder(&self) -> Result<rtcp_types::ReportBlockBuilder, WireError> {
        if !(Self::CUMULATIVE_LOST_MIN..=Self::CUMULATIVE_LOST_MAX).contains(&self.cumulative_lost) {
            return Err(WireError::InvalidField {
                field: "cumulative_lost",
                reason: format!("{} is outside the 24-bit signed range", self.cumulative_lost),
            });
        }
        Ok(rtcp_types::ReportBlock::builder(self.ssrc)
            .fraction_lost(self.fraction_lost)
            .cumulative_lost(self.cumulative_lost as u32 & 0x00FF_FFFF)
            .extended_sequence_number(self.extended_highest_seq)
            .interarrival_jitter(self.jitter)
            .last_sender_report_timestamp(self.lsr)
            .delay_since_last_sender_report_timestamp(self.dlsr))
    }
}

fn check_block_count(blocks: &[ReportBlock]) -> Result<(), WireError> {
    if blocks.len() > MAX_REPORT_BLOCKS {
        return Err(WireError::InvalidField {
            field: "blocks",
            reason: format!("{} report blocks, at most {MAX_REPORT_BLOCKS} fit", blocks.len()),
        });
    }
    Ok(())
}

/// A sender report (RFC 3550 §6.4.1).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct SenderReportRepr {
    /// SSRC of the sender.
    pub ssrc: u32,
    /// 64-bit NTP time at which the report was sent; see [`ntp::to_ntp64`].
    pub ntp: u64,
    /// The RTP timestamp corresponding to `ntp`, in this source's media clock.
    pub rtp_timestamp: u32,
    /// RTP data packets sent since the start of transmission.
    pub packet_count: u32,
    /// RTP payload octets sent (excluding headers and padding), wrapping at 2^32.
    pub octet_count: u32,
    /// Reception reports about other sources, at most 31.
    pub blocks: Vec<ReportBlock>,
}

impl SenderReportRepr {
    /// Length of the packet as emitted.
    pub fn buffer_len(&self) -> usize {
        SR_HEADER_LEN + REPORT_BLOCK_LEN * self.blocks.len()
    }

    /// Parses one SR packet; `bytes` must be exactly the packet.
    pub fn parse(bytes: &[u8]) -> Result<Self, WireError> {
        use rtcp_types::RtcpPacketParser as _;
        Ok(Self::from_rtcp(&rtcp_types::SenderReport::parse(bytes)?))
    }

    /// Writes the packet into the start of `buf`; returns the bytes written.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        write_into(&self.builder()?, "RTCP sender report", buf)
    }

    /// The packet's bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>, WireError> {
        write_vec(&self.builder()?)
    }

    pub(crate) fn from_rtcp(sr: &rtcp_types::SenderReport<'_>) -> Self {
        Self {
            ssrc: sr.ssrc(),
            ntp: sr.ntp_timestamp(),
            rtp_timestamp: sr.rtp_timestamp(),
            packet_count: sr.packet_count(),
            octet_count: sr.octet_count(),
            blocks: sr.report_blocks().map(|b| ReportBlock::from_rtcp(&b)).collect(),
        }
    }

    pub(crate) fn builder(&self) -> Result<rtcp_types::SenderReportBuilder, WireError> {
        check_block_count(&self.blocks)?;
        let mut builder = rtcp_types::SenderReport::builder(self.ssrc)
            .ntp_timestamp(self.ntp)
            .rtp_timestamp(self.rtp_timestamp)
            .packet_count(self.packet_count)
            .octet_count(self.octet_count);
        for block in &self.blocks {
            builder = builder.add_report_block(block.builder()?);
        }
        Ok(builder)
    }
}

/// A receiver report (RFC 3550 §6.4.2).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ReceiverReportRepr {
    /// SSRC of the packet sender (the receiver).
    pub ssrc: u32,
    /// Reception reports, at most 31; may be empty (the empty RR that starts a compound packet).
    pub blocks: Vec<ReportBlock>,
}

impl ReceiverReportRepr {
    /// Length of the packet as emitted.
    pub fn buffer_len(&self) -> usize {
        RR_HEADER_LEN + REPORT_BLOCK_LEN * self.blocks.len()
    }

    /// Parses one RR packet; `bytes` must be exactly the packet.
    pub fn parse(bytes: &[u8]) -> Result<Self, WireError> {
        use rtcp_types::RtcpPacketParser as _;
        Ok(Self::from_rtcp(&rtcp_types::ReceiverReport::parse(bytes)?))
    }

    /// Writes the packet into the start of `buf`; returns the bytes written.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        write_into(&self.builder()?, "RTCP receiver report", buf)
    }

    /// The packet's bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>, WireError> {
        write_vec(&self.builder()?)
    }

    pub(crate) fn from_rtcp(rr: &rtcp_types::ReceiverReport<'_>) -> Self {
        Self { ssrc: rr.ssrc(), blocks: rr.report_blocks().map(|b| ReportBlock::from_rtcp(&b)).collect() }
    }

    pub(crate) fn builder(&self) -> Result<rtcp_types::ReceiverReportBuilder, WireError> {
        check_block_count(&self.blocks)?;
        let mut builder = rtcp_types::ReceiverReport::builder(self.ssrc);
        for block in &self.blocks {
            builder = builder.add_report_block(block.builder()?);
        }
        Ok(builder)
    }
}

// Keep the packet-type constants and the rtcp-types ones in step.
const _: () = {
    use rtcp_types::RtcpPacket as _;
    assert!(rtcp_types::SenderReport::PACKET_TYPE == PT_SR);
    assert!(rtcp_types::ReceiverReport::PACKET_TYPE == PT_RR);
};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An RR with one block, written by hand from RFC 3550 §6.4.2 and §6.4.1.
    const RR_BYTES: [u8; 32] = [
        0x81, 201, 0x00, 0x07, // V=2, P=0, RC=1, PT=201, length 7 words (32 bytes)
        0x00, 0x00, 0x00, 0x0A, // SSRC of packet sender: 10
        0x00, 0x00, 0x00, 0x14, // SSRC_1: 20
        0x05, // fraction lost 5/256
        0xFF, 0xFF, 0xFE, // cumulative lost -2 (24-bit two's complement)
        0x00, 0x01, 0x00, 0x63, // extended highest seq: 1 cycle, seq 99
        0x00, 0x00, 0x00, 0x2A, // jitter 42
        0x12, 0x34, 0x56, 0x78, // LSR
        0x00, 0x00, 0x80, 0x00, // DLSR 0.5 s
    ];

    fn rr() -> ReceiverReportRepr {
        ReceiverReportRepr {
            ssrc: 10,
            blocks: vec![ReportBlock {
                ssrc: 20,
                fraction_lost: 5,
                cumulative_lost: -2,
                extended_highest_seq: 0x0001_0063,
                jitter: 42,
                lsr: 0x1234_5678,
                dlsr: 0x8000,
            }],
        }
    }

    #[test]
    fn hand_written_rr_parses_and_emits_identically() {
        assert_eq!(ReceiverReportRepr::parse(&RR_BYTES), Ok(rr()));
        assert_eq!(rr().to_bytes().unwrap(), RR_BYTES);
        assert_eq!(rr().buffer_len(), 32);
        assert_eq!(rr().blocks[0].dlsr_duration(), Duration::from_millis(500));
        let mut small = [0u8; 31];
        assert!(matches!(rr().emit(&mut small), Err(WireError::BufferTooSmall { needed: 32, .. })));
    }

    #[test]
    fn sr_round_trips_and_checks_its_type() {
        let sr = SenderReportRepr {
            ssrc: 0xCAFE,
            ntp: 0xE900_0000_8000_0000,
            rtp_timestamp: 90_000,
            packet_count: 1000,
            octet_count: 1_200_000,
            blocks: rr().blocks,
        };
        let bytes = sr.to_bytes().unwrap();
        assert_eq!(bytes.len(), sr.buffer_len());
        assert_eq!(&bytes[..2], &[0x81, 200]);
        assert_eq!(SenderReportRepr::parse(&bytes), Ok(sr));
        assert!(matches!(ReceiverReportRepr::parse(&bytes), Err(WireError::Rtcp(_))));
    }

    #[test]
    fn out_of_range_fields_are_refused() {
        let mut big = rr();
        big.blocks[0].cumulative_lost = ReportBlock::CUMULATIVE_LOST_MAX + 1;
        assert!(matches!(big.to_bytes(), Err(WireError::InvalidField { field: "cumulative_lost", .. })));
        let many = ReceiverReportRepr { ssrc: 1, blocks: vec![ReportBlock::default(); 32] };
        assert!(matches!(many.to_bytes(), Err(WireError::InvalidField { field: "blocks", .. })));
    }

    fn arb_block() -> impl Strategy<Value = ReportBlock> {
        (
            any::<u32>(),
            any::<u8>(),
            ReportBlock::CUMULATIVE_LOST_MIN..=ReportBlock::CUMULATIVE_LOST_MAX,
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
        )
            .prop_map(
                |(ssrc, fraction_lost, cumulative_lost, extended_highest_seq, jitter, lsr, dlsr)| {
                    ReportBlock {
                        ssrc,
                        fraction_lost,
                        cumulative_lost,
                        extended_highest_seq,
                        jitter,
                        lsr,
                        dlsr,
                    }
                },
            )
    }

    proptest! {
        #[test]
        fn rr_round_trips(ssrc in any::<u32>(), blocks in proptest::collection::vec(arb_block(), 0..=31)) {
            let rr = ReceiverReportRepr { ssrc, blocks };
            prop_assert_eq!(ReceiverReportRepr::parse(&rr.to_bytes().unwrap()), Ok(rr));
        }

        #[test]
        fn sr_round_trips(
            fields in (any::<u32>(), any::<u64>(), any::<u32>(), any::<u32>(), any::<u32>()),
            blocks in proptest::collection::vec(arb_block(), 0..=31),
        ) {
            let (ssrc, ntp, rtp_timestamp, packet_count, octet_count) = fields;
            let sr = SenderReportRepr { ssrc, ntp, rtp_timestamp, packet_count, octet_count, blocks };
            prop_assert_eq!(SenderReportRepr::parse(&sr.to_bytes().unwrap()), Ok(sr));
        }
    }
}
