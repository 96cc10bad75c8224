//! Picture Loss Indication, PLI (RFC 4585 §6.3.1): a payload-specific feedback message (PSFB,
//! FMT 1) by which a decoder tells the encoder that it has lost an undefined amount of coded
//! video and needs a new reference, which encoders answer with a keyframe.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! |V=2|P|  FMT=1  |   PT=206      |          length = 2           |
//! |                  SSRC of packet sender                        |
//! |                  SSRC of media source                         |
//! ```
//!
//! PLI has no FCI, so its length field must be 2 (RFC 4585 §6.3.1); anything longer is an error.

use rtcp_types::PayloadFeedback;

use super::{emit_feedback_header, parse_feedback, FEEDBACK_HEADER_LEN, FMT_PLI, PT_PSFB};
use crate::WireError;

const MESSAGE: &str = "PLI";

/// One PLI message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct PliRepr {
    /// SSRC of the packet sender (the media receiver).
    pub sender_ssrc: u32,
    /// SSRC of the media source that should send a new reference picture.
    pub media_ssrc: u32,
}

impl PliRepr {
    /// Length of the packet as emitted: always [`FEEDBACK_HEADER_LEN`].
    pub fn buffer_len(&self) -> usize {
        FEEDBACK_HEADER_LEN
    }

    /// Parses one PSFB FMT 1 packet; `bytes` must be exactly the packet (padding is allowed).
    pub fn parse(bytes: &[u8]) -> Result<Self, WireError> {
        let fb = parse_feedback::<PayloadFeedback<'_>>(bytes, FMT_PLI, "PLI (PT 206, FMT 1)", MESSAGE)?;
        if !fb.fci.is_empty() {
            return Err(WireError::BadFeedback {
                message: MESSAGE,
                reason: format!("{} bytes of FCI, PLI has none (RFC 4585 §6.3.1)", fb.fci.len()),
            });
        }
        Ok(Self { sender_ssrc: fb.sender_ssrc, media_ssrc: fb.media_ssrc })
    }

    /// Writes the packet into the start of `buf`; returns the bytes written. Errors only when
    /// `buf` is shorter than [`buffer_len`](Self::buffer_len).
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let (len, actual) = (self.buffer_len(), buf.len());
        let buf =
            buf.get_mut(..len).ok_or(WireError::BufferTooSmall { what: MESSAGE, needed: len, actual })?;
        emit_feedback_header(buf, FMT_PLI, PT_PSFB, len, self.sender_ssrc, self.media_ssrc);
        Ok(len)
    }

    /// The packet's bytes.
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

    /// A PLI written by hand from RFC 4585 §6.1 and §6.3.1.
    const HAND_WRITTEN: [u8; 12] = [
        0x81, 206, 0x00, 0x02, // V=2, P=0, FMT=1, PT=206, length 2 words (12 bytes)
        0x00, 0x00, 0x00, 0x07, // SSRC of packet sender: 7
        0xCA, 0xFE, 0xBA, 0xBE, // SSRC of media source
    ];

    #[test]
    fn hand_written_pli_parses_and_emits_identically() {
        let repr = PliRepr { sender_ssrc: 7, media_ssrc: 0xCAFE_BABE };
        assert_eq!(PliRepr::parse(&HAND_WRITTEN), Ok(repr));
        assert_eq!(repr.to_bytes().unwrap(), HAND_WRITTEN);
        assert!(matches!(repr.emit(&mut [0; 11]), Err(WireError::BufferTooSmall { needed: 12, .. })));
        // One word of padding (RFC 3550 §6.4.1) is skipped.
        let mut padded = HAND_WRITTEN.to_vec();
        padded[0] |= 0x20;
        padded[3] = 3;
        padded.extend_from_slice(&[0, 0, 0, 4]);
        assert_eq!(PliRepr::parse(&padded), Ok(repr));
    }

    #[test]
    fn malformed_plis_are_errors() {
        // A word of FCI.
        let mut long = HAND_WRITTEN.to_vec();
        long[3] = 3;
        long.extend_from_slice(&[0, 0, 0, 1]);
        assert!(matches!(PliRepr::parse(&long), Err(WireError::BadFeedback { message: "PLI", .. })));
        // FIR (FMT 4) and a generic NACK (PT 205) are other packets.
        let mut fir = HAND_WRITTEN;
        fir[0] = 0x84;
        assert!(matches!(PliRepr::parse(&fir), Err(WireError::WrongPacketType { fmt: 4, .. })));
        let mut nack = HAND_WRITTEN;
        nack[1] = 205;
        assert!(matches!(PliRepr::parse(&nack), Err(WireError::Rtcp(_))));
        for cut in 0..HAND_WRITTEN.len() {
            assert!(PliRepr::parse(&HAND_WRITTEN[..cut]).is_err(), "cut at {cut}");
        }
    }

    proptest! {
        #[test]
        fn plis_round_trip(sender_ssrc in any::<u32>(), media_ssrc in any::<u32>()) {
            let repr = PliRepr { sender_ssrc, media_ssrc };
            prop_assert_eq!(PliRepr::parse(&repr.to_bytes().unwrap()), Ok(repr));
        }

        #[test]
        fn parsing_mutated_plis_never_panics(
            edits in proptest::collection::vec((0usize..16, any::<u8>()), 1..6),
            cut in 0usize..=16,
        ) {
            let mut bytes = [0u8; 16];
            bytes[..12].copy_from_slice(&HAND_WRITTEN);
            for (at, value) in edits {
                bytes[at] = value;
            }
            let _ = PliRepr::parse(&bytes[..cut]);
        }
    }
}
