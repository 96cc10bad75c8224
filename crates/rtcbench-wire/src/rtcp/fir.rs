//! Full Intra Request, FIR (RFC 5104 §4.3.1): a payload-specific feedback command (PSFB, FMT 4)
//! that asks one or more media senders for a decoder refresh point (a keyframe).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! |V=2|P|  FMT=4  |   PT=206      |        length = 2 + 2N        |
//! |                  SSRC of packet sender                        |
//! |                  SSRC of media source (0)                     |
//! |                              SSRC                             |  \ × N ≥ 1
//! | Seq nr.       |    Reserved (0)                               |  /
//! ```
//!
//! The media source field is unused and set to 0 (RFC 5104 §4.3.1.2); the senders addressed are
//! the FCI entries' SSRCs. The command sequence number grows by one (modulo 256) with each new
//! request to a sender, so that a repeated FIR is not answered twice. The reserved bits are
//! written as 0 and ignored on parse, and so is the media source field.

use rtcp_types::PayloadFeedback;

use super::{
    be_u32, emit_feedback_header, parse_feedback, FEEDBACK_HEADER_LEN, FMT_FIR, MAX_PACKET_LEN, PT_PSFB,
};
use crate::WireError;

/// Bytes of one FCI entry: SSRC, Seq nr. and the reserved bits.
pub const FCI_ENTRY_LEN: usize = 8;

const MESSAGE: &str = "FIR";

/// One FIR message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct FirRepr {
    /// SSRC of the packet sender (the media receiver).
    pub sender_ssrc: u32,
    /// One `(SSRC of the media sender, command sequence number)` per FCI entry, in packet order;
    /// at least one on the wire.
    pub entries: Vec<(u32, u8)>,
}

impl FirRepr {
    /// Length of the packet as emitted.
    pub fn buffer_len(&self) -> usize {
        FEEDBACK_HEADER_LEN + FCI_ENTRY_LEN * self.entries.len()
    }

    /// Parses one PSFB FMT 4 packet; `bytes` must be exactly the packet.
    pub fn parse(bytes: &[u8]) -> Result<Self, WireError> {
        let fb = parse_feedback::<PayloadFeedback<'_>>(bytes, FMT_FIR, "FIR (PT 206, FMT 4)", MESSAGE)?;
        if fb.fci.is_empty() || fb.fci.len() % FCI_ENTRY_LEN != 0 {
            return Err(WireError::BadFeedback {
                message: MESSAGE,
                reason: format!(
                    "{} bytes of FCI, expected one or more {FCI_ENTRY_LEN}-byte entries (RFC 5104 §4.3.1.1)",
                    fb.fci.len()
                ),
            });
        }
        let entries = fb.fci.chunks_exact(FCI_ENTRY_LEN).map(|e| (be_u32(e), e[4])).collect();
        Ok(Self { sender_ssrc: fb.sender_ssrc, entries })
    }

    /// Writes the packet into the start of `buf`; returns the bytes written.
    ///
    /// Errors when there is no entry, when the packet would exceed the RTCP length field
    /// ([`MAX_PACKET_LEN`]), or when `buf` is shorter than [`buffer_len`](Self::buffer_len).
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let len = self.buffer_len();
        if self.entries.is_empty() || len > MAX_PACKET_LEN {
            return Err(WireError::InvalidField {
                field: "entries",
                reason: format!(
                    "{} entries; a FIR holds 1 to {} (RFC 5104 §4.3.1.1, RTCP length field)",
                    self.entries.len(),
                    (MAX_PACKET_LEN - FEEDBACK_HEADER_LEN) / FCI_ENTRY_LEN
                ),
            });
        }
        let actual = buf.len();
        let buf =
            buf.get_mut(..len).ok_or(WireError::BufferTooSmall { what: MESSAGE, needed: len, actual })?;
        // RFC 5104 §4.3.1.2: the media source SSRC is not used and set to 0.
        emit_feedback_header(buf, FMT_FIR, PT_PSFB, len, self.sender_ssrc, 0);
        for (chunk, &(ssrc, seq)) in
            buf[FEEDBACK_HEADER_LEN..].chunks_exact_mut(FCI_ENTRY_LEN).zip(&self.entries)
        {
            chunk[..4].copy_from_slice(&ssrc.to_be_bytes());
            chunk[4..].copy_from_slice(&[seq, 0, 0, 0]);
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A FIR to two senders, written by hand from RFC 4585 §6.1 and RFC 5104 §4.3.1.1.
    const HAND_WRITTEN: [u8; 28] = [
        0x84, 206, 0x00, 0x06, // V=2, P=0, FMT=4, PT=206, length 6 words (28 bytes)
        0x00, 0x00, 0x00, 0x07, // SSRC of packet sender: 7
        0x00, 0x00, 0x00, 0x00, // SSRC of media source: unused, 0
        0x11, 0x22, 0x33, 0x44, // FCI 1: SSRC 0x11223344
        0x05, 0x00, 0x00, 0x00, //        Seq nr. 5, reserved
        0x55, 0x66, 0x77, 0x88, // FCI 2: SSRC 0x55667788
        0xFF, 0x00, 0x00, 0x00, //        Seq nr. 255, reserved
    ];

    fn hand_written_repr() -> FirRepr {
        FirRepr { sender_ssrc: 7, entries: vec![(0x1122_3344, 5), (0x5566_7788, 255)] }
    }

    #[test]
    fn hand_written_fir_parses_and_emits_identically() {
        assert_eq!(FirRepr::parse(&HAND_WRITTEN), Ok(hand_written_repr()));
        assert_eq!(hand_written_repr().to_bytes().unwrap(), HAND_WRITTEN);
        assert!(matches!(
            hand_written_repr().emit(&mut [0; 27]),
            Err(WireError::BufferTooSmall { needed: 28, .. })
        ));
    }

    #[test]
    fn reserved_bits_and_the_media_source_are_ignored() {
        let mut bytes = HAND_WRITTEN;
        bytes[8..12].copy_from_slice(&[0, 0, 0, 9]);
        bytes[17..20].copy_from_slice(&[1, 2, 3]);
        assert_eq!(FirRepr::parse(&bytes), Ok(hand_written_repr()));
    }

    #[test]
    fn malformed_firs_are_errors() {
        // No entry.
        let empty = [0x84, 206, 0x00, 0x02, 0, 0, 0, 7, 0, 0, 0, 0];
        assert!(matches!(FirRepr::parse(&empty), Err(WireError::BadFeedback { message: "FIR", .. })));
        // Half an entry.
        let half = [0x84, 206, 0x00, 0x03, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 1];
        assert!(matches!(FirRepr::parse(&half), Err(WireError::BadFeedback { .. })));
        // PLI (FMT 1) is another packet.
        let mut pli = HAND_WRITTEN;
        pli[0] = 0x81;
        assert!(matches!(FirRepr::parse(&pli), Err(WireError::WrongPacketType { fmt: 1, .. })));
        for cut in 0..HAND_WRITTEN.len() {
            assert!(FirRepr::parse(&HAND_WRITTEN[..cut]).is_err(), "cut at {cut}");
        }
        let none = FirRepr { sender_ssrc: 7, entries: vec![] };
        assert!(matches!(none.to_bytes(), Err(WireError::InvalidField { field: "entries", .. })));
    }

    proptest! {
        #[test]
        fn firs_round_trip(
            sender_ssrc in any::<u32>(),
            entries in proptest::collection::vec((any::<u32>(), any::<u8>()), 1..20),
        ) {
            let repr = FirRepr { sender_ssrc, entries };
            let bytes = repr.to_bytes().unwrap();
            prop_assert_eq!(bytes.len(), repr.buffer_len());
            prop_assert_eq!(FirRepr::parse(&bytes), Ok(repr));
        }

        #[test]
        fn parsing_mutated_firs_never_panics(
            edits in proptest::collection::vec((0usize..28, any::<u8>()), 1..6),
            cut in 0usize..=28,
        ) {
            let mut bytes = HAND_WRITTEN;
            for (at, value) in edits {
                bytes[at] = value;
            }
            let _ = FirRepr::parse(&bytes[..cut]);
        }
    }
}
