//! Generic NACK (RFC 4585 §6.2.1): a transport layer feedback message (RTPFB, FMT 1) in which a
//! receiver lists the RTP packets of one media source that it has not received, so that the
//! sender can retransmit them (RFC 4588).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! |V=2|P|  FMT=1  |   PT=205      |             length            |
//! |                  SSRC of packet sender                        |
//! |                  SSRC of media source                         |
//! |            PID                |             BLP               |  × one or more
//! ```
//!
//! Each FCI entry reports packet PID lost, and bit i of BLP (bit 1 the least significant, bit 16
//! the most) reports packet PID + i (modulo 2^16) lost too, so one entry covers up to 17
//! consecutive sequence numbers. [`NackRepr::emit`] packs the list greedily: each
//! entry starts at the first sequence number not yet written and takes every following one that
//! lies 1 to 16 after its PID and after the previous one it took. For a list in increasing RTP
//! order (a run may cross 65535 → 0) that is the fewest entries; for any list, parsing the
//! packet gives the list back, in the same order.

use rtcp_types::TransportFeedback;

use super::{emit_feedback_header, parse_feedback, FEEDBACK_HEADER_LEN, FMT_NACK, MAX_PACKET_LEN, PT_RTPFB};
use crate::WireError;

/// Bytes of one FCI entry: PID and BLP.
pub const FCI_ENTRY_LEN: usize = 4;
/// Sequence numbers one FCI entry can report: PID and the 16 after it.
pub const SEQS_PER_ENTRY: u16 = 17;

const MESSAGE: &str = "generic NACK";

/// One generic NACK message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct NackRepr {
    /// SSRC of the packet sender (the media receiver).
    pub sender_ssrc: u32,
    /// SSRC of the media source whose packets were lost.
    pub media_ssrc: u32,
    /// RTP sequence numbers of the lost packets, in the order the FCI entries list them: each
    /// entry's PID, then the packets its BLP marks in increasing order. Never empty on the wire
    /// (RFC 4585 §6.2.1: at least one entry).
    pub lost: Vec<u16>,
}

impl NackRepr {
    /// Length of the packet as emitted.
    pub fn buffer_len(&self) -> usize {
        FEEDBACK_HEADER_LEN + FCI_ENTRY_LEN * fci_entries(&self.lost).count()
    }

    /// Parses one RTPFB FMT 1 packet; `bytes` must be exactly the packet.
    ///
    /// Entries are expanded in packet order. A sequence number reported twice (by overlapping
    /// entries, which RFC 4585 does not forbid) appears twice.
    pub fn parse(bytes: &[u8]) -> Result<Self, WireError> {
        let fb = parse_feedback::<TransportFeedback<'_>>(
            bytes,
            FMT_NACK,
            "generic NACK (PT 205, FMT 1)",
            MESSAGE,
        )?;
        if fb.fci.is_empty() || fb.fci.len() % FCI_ENTRY_LEN != 0 {
            return Err(WireError::BadFeedback {
                message: MESSAGE,
                reason: format!(
                    "{} bytes of FCI, expected one or more {FCI_ENTRY_LEN}-byte PID/BLP entries",
                    fb.fci.len()
                ),
            });
        }
        let mut lost = Vec::with_capacity(fb.fci.len() / FCI_ENTRY_LEN);
        for entry in fb.fci.chunks_exact(FCI_ENTRY_LEN) {
            let pid = u16::from_be_bytes([entry[0], entry[1]]);
            let blp = u16::from_be_bytes([entry[2], entry[3]]);
            lost.push(pid);
            // Bit i (1-based from the least significant) is PID + i.
            lost.extend((1..SEQS_PER_ENTRY).filter(|i| blp & 1 << (i - 1) != 0).map(|i| pid.wrapping_add(i)));
        }
        Ok(Self { sender_ssrc: fb.sender_ssrc, media_ssrc: fb.media_ssrc, lost })
    }

    /// Writes the packet into the start of `buf`; returns the bytes written.
    ///
    /// Errors when `lost` is empty, when the packet would exceed the RTCP length field
    /// ([`MAX_PACKET_LEN`]), or when `buf` is shorter than [`buffer_len`](Self::buffer_len).
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        if self.lost.is_empty() {
            return Err(WireError::InvalidField {
                field: "lost",
                reason: "no sequence numbers; a generic NACK needs at least one (RFC 4585 §6.2.1)".into(),
            });
        }
        let len = self.buffer_len();
        if len > MAX_PACKET_LEN {
            return Err(WireError::InvalidField {
                field: "lost",
                reason: format!(
                    "{} FCI entries make {len} bytes, the RTCP length field allows {MAX_PACKET_LEN}",
                    (len - FEEDBACK_HEADER_LEN) / FCI_ENTRY_LEN
                ),
            });
        }
        let actual = buf.len();
        let buf =
            buf.get_mut(..len).ok_or(WireError::BufferTooSmall { what: MESSAGE, needed: len, actual })?;
        emit_feedback_header(buf, FMT_NACK, PT_RTPFB, len, self.sender_ssrc, self.media_ssrc);
        for (chunk, (pid, blp)) in
            buf[FEEDBACK_HEADER_LEN..].chunks_exact_mut(FCI_ENTRY_LEN).zip(fci_entries(&self.lost))
        {
            chunk[..2].copy_from_slice(&pid.to_be_bytes());
            chunk[2..].copy_from_slice(&blp.to_be_bytes());
        }
        Ok(len)
    }

    /// The packet's bytes; see [`emit`](Self::emit).
    pub fn to_bytes(&self) -> Result<Vec<u8>, WireError> {
        let mut buf = vec![0; self.buffer_len()];
        self.emit(&mut buf)?;
        Ok(buf)
    }
}

/// The (PID, BLP) entries that report `lost`, packed as the module docs describe.
fn fci_entries(lost: &[u16]) -> impl Iterator<Item = (u16, u16)> + '_ {
    let mut rest = lost;
    std::iter::from_fn(move || {
        let (&pid, tail) = rest.split_first()?;
        let (mut blp, mut last, mut taken) = (0u16, 0u16, 0);
        for &seq in tail {
            // Wrapping: 65535 → 0 is an offset of 1 like any other step.
            let offset = seq.wrapping_sub(pid);
            if offset <= last || offset >= SEQS_PER_ENTRY {
                break;
            }
            blp |= 1 << (offset - 1);
            (last, taken) = (offset, taken + 1);
        }
        rest = &tail[taken..];
        Some((pid, blp))
    })
}

// Keep the packet-type constant and the rtcp-types one in step.
const _: () = {
    use rtcp_types::RtcpPacket as _;
    assert!(TransportFeedback::PACKET_TYPE == PT_RTPFB);
};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A NACK written by hand from RFC 4585 §6.1 and §6.2.1: packets 65534, 65535, 0 and 2 of
    /// SSRC 0x0A0B0C0D are lost (one entry across the wrap), and 40.
    const HAND_WRITTEN: [u8; 20] = [
        0x81, 205, 0x00, 0x04, // V=2, P=0, FMT=1, PT=205, length 4 words (20 bytes)
        0x00, 0x00, 0x00, 0x01, // SSRC of packet sender: 1
        0x0A, 0x0B, 0x0C, 0x0D, // SSRC of media source
        0xFF, 0xFE, 0x00, 0x0B, // PID 65534, BLP 0b1011: PID+1 = 65535, PID+2 = 0, PID+4 = 2
        0x00, 0x28, 0x00, 0x00, // PID 40, BLP 0: 40 alone
    ];

    fn hand_written_repr() -> NackRepr {
        NackRepr { sender_ssrc: 1, media_ssrc: 0x0A0B_0C0D, lost: vec![65534, 65535, 0, 2, 40] }
    }

    fn nack(lost: Vec<u16>) -> NackRepr {
        NackRepr { sender_ssrc: 1, media_ssrc: 2, lost }
    }

    /// The (PID, BLP) pairs of an emitted packet.
    fn entries(bytes: &[u8]) -> Vec<(u16, u16)> {
        bytes[FEEDBACK_HEADER_LEN..]
            .chunks_exact(4)
            .map(|e| (u16::from_be_bytes([e[0], e[1]]), u16::from_be_bytes([e[2], e[3]])))
            .collect()
    }

    #[test]
    fn hand_written_nack_parses_and_emits_identically() {
        assert_eq!(NackRepr::parse(&HAND_WRITTEN), Ok(hand_written_repr()));
        assert_eq!(hand_written_repr().to_bytes().unwrap(), HAND_WRITTEN);
        assert_eq!(hand_written_repr().buffer_len(), 20);
        let mut small = [0u8; 19];
        assert!(matches!(
            hand_written_repr().emit(&mut small),
            Err(WireError::BufferTooSmall { needed: 20, .. })
        ));
    }

    #[test]
    fn a_run_across_the_wrap_takes_one_entry() {
        // 65530 ..= 65535 and 0 ..= 10: 17 consecutive sequence numbers, one full entry.
        let lost: Vec<u16> = (65530..=65535).chain(0..=10).collect();
        let bytes = nack(lost.clone()).to_bytes().unwrap();
        assert_eq!(entries(&bytes), [(65530, 0xFFFF)]);
        assert_eq!(NackRepr::parse(&bytes).unwrap().lost, lost);
        // One more and a second entry starts at 11.
        let lost: Vec<u16> = (65530..=65535).chain(0..=11).collect();
        let bytes = nack(lost.clone()).to_bytes().unwrap();
        assert_eq!(entries(&bytes), [(65530, 0xFFFF), (11, 0)]);
        assert_eq!(NackRepr::parse(&bytes).unwrap().lost, lost);
    }

    #[test]
    fn long_runs_take_one_entry_per_17_losses() {
        // 100 ..= 140: 41 losses, 17 + 17 + 7.
        let lost: Vec<u16> = (100..=140).collect();
        let bytes = nack(lost.clone()).to_bytes().unwrap();
        assert_eq!(entries(&bytes), [(100, 0xFFFF), (117, 0xFFFF), (134, 0x003F)]);
        assert_eq!(bytes.len(), 12 + 3 * 4);
        assert_eq!(NackRepr::parse(&bytes).unwrap().lost, lost);
        // Every other packet of 0 ..= 32: PID 0 takes 2 ..= 16 (bits 2, 4, ..., 16).
        let lost: Vec<u16> = (0..=32).step_by(2).collect();
        let bytes = nack(lost.clone()).to_bytes().unwrap();
        assert_eq!(entries(&bytes), [(0, 0xAAAA), (18, 0x2AAA)]);
        assert_eq!(NackRepr::parse(&bytes).unwrap().lost, lost);
    }

    #[test]
    fn out_of_order_and_repeated_losses_survive_a_round_trip() {
        // Each goes back in time or repeats, so it starts a new entry.
        let lost = vec![10, 12, 11, 11, 65535, 3];
        let bytes = nack(lost.clone()).to_bytes().unwrap();
        assert_eq!(entries(&bytes), [(10, 0x0002), (11, 0), (11, 0), (65535, 0x0008)]);
        assert_eq!(NackRepr::parse(&bytes).unwrap().lost, lost);
    }

    #[test]
    fn overlapping_entries_from_other_senders_parse() {
        // PID 5 with BLP 0b1 (6) and PID 6 again: 6 is reported twice.
        let bytes = [0x81, 205, 0x00, 0x04, 0, 0, 0, 1, 0, 0, 0, 2, 0, 5, 0, 1, 0, 6, 0, 0];
        assert_eq!(NackRepr::parse(&bytes).unwrap().lost, [5, 6, 6]);
    }

    #[test]
    fn malformed_nacks_are_errors() {
        // No FCI entry.
        let empty = [0x81, 205, 0x00, 0x02, 0, 0, 0, 1, 0, 0, 0, 2];
        assert!(matches!(NackRepr::parse(&empty), Err(WireError::BadFeedback { .. })));
        // Padding that leaves two bytes of FCI.
        let mut odd = HAND_WRITTEN;
        odd[0] |= 0x20;
        odd[19] = 2;
        assert!(matches!(NackRepr::parse(&odd), Err(WireError::BadFeedback { .. })));
        // Padding that eats into the header.
        let mut eaten = HAND_WRITTEN;
        eaten[0] |= 0x20;
        eaten[19] = 12;
        assert!(matches!(NackRepr::parse(&eaten), Err(WireError::BadFeedback { .. })));
        // TWCC (FMT 15) and PSFB are other packets.
        let mut twcc = HAND_WRITTEN;
        twcc[0] = 0x8F;
        assert!(matches!(NackRepr::parse(&twcc), Err(WireError::WrongPacketType { fmt: 15, .. })));
        let mut psfb = HAND_WRITTEN;
        psfb[1] = 206;
        assert!(matches!(NackRepr::parse(&psfb), Err(WireError::Rtcp(_))));
        // Truncated, and a length field that disagrees with the bytes.
        for cut in 0..HAND_WRITTEN.len() {
            assert!(NackRepr::parse(&HAND_WRITTEN[..cut]).is_err(), "cut at {cut}");
        }
        // Nothing to emit.
        assert!(matches!(nack(vec![]).to_bytes(), Err(WireError::InvalidField { field: "lost", .. })));
    }

    #[test]
    fn padding_is_skipped() {
        let mut padded = HAND_WRITTEN.to_vec();
        padded[0] |= 0x20;
        padded[3] = 5;
        padded.extend_from_slice(&[0, 0, 0, 4]);
        assert_eq!(NackRepr::parse(&padded), Ok(hand_written_repr()));
    }

    #[test]
    fn the_rtcp_length_field_limits_the_entries() {
        // 65533 entries of isolated losses fill the length field exactly; one more does not fit.
        let most: Vec<u16> = (0..65533u32).map(|i| (i * 18 % 65536) as u16).collect();
        let fits = nack(most.clone());
        assert_eq!(fits.buffer_len(), MAX_PACKET_LEN);
        assert_eq!(NackRepr::parse(&fits.to_bytes().unwrap()), Ok(fits));
        let mut too_many = most;
        too_many.push(too_many[0]);
        assert!(matches!(nack(too_many).to_bytes(), Err(WireError::InvalidField { field: "lost", .. })));
    }

    proptest! {
        #[test]
        fn any_list_round_trips(
            sender_ssrc in any::<u32>(),
            media_ssrc in any::<u32>(),
            lost in proptest::collection::vec(any::<u16>(), 1..80),
        ) {
            let repr = NackRepr { sender_ssrc, media_ssrc, lost };
            let bytes = repr.to_bytes().unwrap();
            prop_assert_eq!(bytes.len(), repr.buffer_len());
            prop_assert_eq!(NackRepr::parse(&bytes), Ok(repr));
        }

        /// Increasing losses with gaps of 1 to 20 from any start: an entry per greedy run, and
        /// no entry can be merged into the one before it.
        #[test]
        fn increasing_losses_take_the_fewest_entries(
            start in any::<u16>(),
            gaps in proptest::collection::vec(1u16..20, 0..60),
        ) {
            let mut lost = vec![start];
            for gap in gaps {
                let next = lost.last().unwrap().wrapping_add(gap);
                lost.push(next);
            }
            let bytes = nack(lost.clone()).to_bytes().unwrap();
            let pids: Vec<u16> = entries(&bytes).iter().map(|&(pid, _)| pid).collect();
            // Greedy covering of points on a line with windows of 17 is optimal: count the
            // windows the simple way, on unwrapped positions.
            let mut windows = 0;
            let mut end = None;
            let mut position = 0u32;
            for (k, _) in lost.iter().enumerate() {
                if k > 0 {
                    position += u32::from(lost[k].wrapping_sub(lost[k - 1]));
                }
                if end.is_none_or(|e| position > e) {
                    windows += 1;
                    end = Some(position + 16);
                }
            }
            prop_assert_eq!(pids.len(), windows);
            prop_assert_eq!(NackRepr::parse(&bytes).unwrap().lost, lost);
        }

        #[test]
        fn parsing_arbitrary_bodies_never_panics(body in proptest::collection::vec(any::<u8>(), 0..64)) {
            let words = body.len() / 4;
            let mut bytes = vec![0x81, 205, 0, (words + 2) as u8, 0, 0, 0, 1, 0, 0, 0, 2];
            bytes.extend_from_slice(&body[..words * 4]);
            let _ = NackRepr::parse(&bytes);
        }

        #[test]
        fn parsing_mutated_nacks_never_panics(
            edits in proptest::collection::vec((0usize..20, any::<u8>()), 1..6),
            cut in 0usize..=20,
        ) {
            let mut bytes = HAND_WRITTEN;
            for (at, value) in edits {
                bytes[at] = value;
            }
            let _ = NackRepr::parse(&bytes[..cut]);
        }
    }
}
