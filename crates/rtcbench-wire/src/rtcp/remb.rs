//! Receiver Estimated Maximum Bitrate, REMB (draft-alvestrand-rmcat-remb-03 §2.2; libwebrtc
//! `remb.cc`): an application layer feedback message (PSFB, FMT 15, RFC 4585 §6.4) in which a
//! receiver-side estimator tells the sender the total rate it may use for the listed streams.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! |V=2|P| FMT=15  |   PT=206      |             length            |
//! |                  SSRC of packet sender                        |
//! |                  SSRC of media source (0)                     |
//! |  Unique identifier 'R' 'E' 'M' 'B'                            |
//! |  Num SSRC     | BR Exp    |  BR Mantissa                      |
//! |   SSRC feedback                                               |  × Num SSRC
//! ```
//!
//! The bitrate is `mantissa × 2^exp` bit/s with an 18-bit mantissa and a 6-bit exponent. Only
//! the 18 most significant bits of a rate survive, so [`RembRepr::to_bytes`] rounds down to the
//! nearest representable rate (a relative error below 2^-17, 7.6 ppm): the encoder shifts the
//! rate right until it fits 18 bits and sends the shift as the exponent, as libwebrtc does. Rates
//! up to 2^18 - 1 bit/s are exact, and so are multiples of 2^k for rates below 2^(18+k); 10
//! Mbit/s, for one, is 156250 × 2^6.

use rtcbench_units::Bitrate;
use rtcp_types::prelude::*;

use super::{emit_common_header, strip_padding, FMT_AFB, PT_PSFB};
use crate::WireError;

/// The unique identifier that marks an application layer feedback message as REMB.
pub const REMB_IDENTIFIER: [u8; 4] = *b"REMB";
/// Bytes before the SSRC list: RTCP header (4), sender and media SSRC (8), identifier (4), and
/// Num SSRC, BR Exp, BR Mantissa (4).
pub const HEADER_LEN: usize = 20;

/// BR Mantissa is 18 bits.
const MANTISSA_MAX: u64 = 0x3_FFFF;
const MANTISSA_BITS: u32 = 18;
/// `mantissa << exp` fits 64 bits for every mantissa only up to this exponent.
const EXP_MAX_IN_U64: u32 = u64::BITS - MANTISSA_BITS;

/// One REMB message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RembRepr {
    /// SSRC of the packet sender (the media receiver that estimated the rate).
    pub sender_ssrc: u32,
    /// The estimated maximum total rate for the streams in `ssrcs`. On the wire it is rounded
    /// down to a representable value; see [`RembRepr::wire_bitrate`].
    pub bitrate: Bitrate,
    /// SSRCs of the media streams the estimate applies to, at most [`RembRepr::MAX_SSRCS`].
    pub ssrcs: Vec<u32>,
}

impl RembRepr {
    /// Num SSRC is 8 bits.
    pub const MAX_SSRCS: usize = 255;
    /// Largest rate a REMB can carry in 64 bits: an all-ones mantissa with exponent 46,
    /// about 1.8 × 10^19 bit/s. Larger rates, including [`Bitrate::INFINITE`], are sent as this.
    pub const MAX_BITRATE: Bitrate = Bitrate::bps(MANTISSA_MAX << EXP_MAX_IN_U64);

    /// The rate a REMB carrying `bitrate` announces: `bitrate` rounded down to its 18 most
    /// significant bits.
    pub fn wire_bitrate(bitrate: Bitrate) -> Bitrate {
        let (exp, mantissa) = exp_mantissa(bitrate);
        Bitrate::bps(u64::from(mantissa) << exp)
    }

    /// Length of the packet as emitted.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN + 4 * self.ssrcs.len()
    }

    /// Parses one PSFB FMT 15 packet carrying the "REMB" identifier; `bytes` must be exactly the
    /// packet.
    ///
    /// The media source SSRC should be 0 and is ignored. A packet whose Num SSRC disagrees with
    /// its length, or whose bitrate overflows 64 bits (an exponent above 46 with a large enough
    /// mantissa), is an error, as in libwebrtc.
    pub fn parse(bytes: &[u8]) -> Result<Self, WireError> {
        // Version, packet type, the length field and non-zero padding.
        let fb = rtcp_types::PayloadFeedback::parse(bytes)?;
        if fb.count() != FMT_AFB {
            return Err(WireError::WrongPacketType {
                expected: "REMB (PT 206, FMT 15)",
                packet_type: fb.type_(),
                fmt: fb.count(),
            });
        }
        let packet = strip_padding(bytes, HEADER_LEN).ok_or_else(|| {
            WireError::BadRemb(format!(
                "{} bytes without padding, at least {HEADER_LEN} needed for the REMB header",
                bytes.len().saturating_sub(usize::from(bytes[bytes.len() - 1]))
            ))
        })?;
        let word =
            |at: usize| u32::from_be_bytes([packet[at], packet[at + 1], packet[at + 2], packet[at + 3]]);
        if packet[12..16] != REMB_IDENTIFIER {
            return Err(WireError::BadRemb(format!(
                "application layer feedback with identifier {:02X?}, not \"REMB\"",
                &packet[12..16]
            )));
        }
        let num_ssrc = usize::from(packet[16]);
        let exp = u32::from(packet[17] >> 2);
        let mantissa = word(16) & MANTISSA_MAX as u32;
        let expected_len = HEADER_LEN + 4 * num_ssrc;
        if packet.len() != expected_len {
            return Err(WireError::BadRemb(format!(
                "Num SSRC {num_ssrc} needs {expected_len} bytes, the packet has {}",
                packet.len()
            )));
        }
        let bps = u64::from(mantissa)
            .checked_shl(exp)
            .filter(|bps| bps >> exp == u64::from(mantissa))
            .ok_or_else(|| WireError::BadRemb(format!("bitrate {mantissa} × 2^{exp} overflows 64 bits")))?;
        Ok(Self {
            sender_ssrc: word(4),
            bitrate: Bitrate::bps(bps),
            ssrcs: (0..num_ssrc).map(|i| word(HEADER_LEN + 4 * i)).collect(),
        })
    }

    /// Writes the packet into the start of `buf`; returns the bytes written.
    ///
    /// The bitrate is rounded down as [`wire_bitrate`](Self::wire_bitrate) describes. Errors
    /// when there are more than 255 SSRCs or `buf` is shorter than
    /// [`buffer_len`](Self::buffer_len).
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        if self.ssrcs.len() > Self::MAX_SSRCS {
            return Err(WireError::InvalidField {
                field: "ssrcs",
                reason: format!("{} SSRCs, at most {} fit", self.ssrcs.len(), Self::MAX_SSRCS),
            });
        }
        let (len, actual) = (self.buffer_len(), buf.len());
        let buf =
            buf.get_mut(..len).ok_or(WireError::BufferTooSmall { what: "REMB", needed: len, actual })?;
        emit_common_header(buf, FMT_AFB, PT_PSFB, len);
        buf[4..8].copy_from_slice(&self.sender_ssrc.to_be_bytes());
        // draft-alvestrand-rmcat-remb-03 §2.2: the media source SSRC is always 0.
        buf[8..12].fill(0);
        buf[12..16].copy_from_slice(&REMB_IDENTIFIER);
        let (exp, mantissa) = exp_mantissa(self.bitrate);
        let word = (self.ssrcs.len() as u32) << 24 | u32::from(exp) << MANTISSA_BITS | mantissa;
        buf[16..20].copy_from_slice(&word.to_be_bytes());
        for (chunk, ssrc) in buf[HEADER_LEN..].chunks_exact_mut(4).zip(&self.ssrcs) {
            chunk.copy_from_slice(&ssrc.to_be_bytes());
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

/// Whether an application layer feedback packet carries the REMB identifier.
pub(crate) fn has_remb_identifier(packet: &[u8]) -> bool {
    packet.get(12..16) == Some(&REMB_IDENTIFIER[..])
}

/// BR Exp and BR Mantissa of `bitrate`: the smallest exponent whose shift leaves 18 bits.
fn exp_mantissa(bitrate: Bitrate) -> (u8, u32) {
    let bps = bitrate.as_bps();
    let exp = (u64::BITS - bps.leading_zeros()).saturating_sub(MANTISSA_BITS);
    debug_assert!(exp <= EXP_MAX_IN_U64 && bps >> exp <= MANTISSA_MAX);
    (exp as u8, (bps >> exp) as u32)
}

// Keep the packet-type constant and the rtcp-types one in step.
const _: () = {
    use rtcp_types::RtcpPacket as _;
    assert!(rtcp_types::PayloadFeedback::PACKET_TYPE == PT_PSFB);
};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A REMB written by hand from draft-alvestrand-rmcat-remb-03 §2.2: 10 Mbit/s for two
    /// streams.
    const HAND_WRITTEN: [u8; 28] = [
        0x8F, 206, 0x00, 0x06, // V=2, P=0, FMT=15, PT=206, length 6 words (28 bytes)
        0x00, 0x00, 0x00, 0x01, // SSRC of packet sender: 1
        0x00, 0x00, 0x00, 0x00, // SSRC of media source: 0
        b'R', b'E', b'M', b'B', // unique identifier
        // Num SSRC 2 | BR Exp 6 | BR Mantissa 156250 (0x2625A): 156250 × 64 = 10 000 000.
        // Exp 6 = 000110 and the mantissa's top two bits 10 make the byte 0001_1010.
        0x02, 0x1A, 0x62, 0x5A, //
        0x00, 0x00, 0x00, 0x0A, // SSRC feedback: 10
        0x00, 0x00, 0x00, 0x0B, // SSRC feedback: 11
    ];

    fn hand_written_repr() -> RembRepr {
        RembRepr { sender_ssrc: 1, bitrate: Bitrate::mbps(10), ssrcs: vec![10, 11] }
    }

    #[test]
    fn hand_written_remb_parses_and_emits_identically() {
        assert_eq!(RembRepr::parse(&HAND_WRITTEN), Ok(hand_written_repr()));
        assert_eq!(hand_written_repr().to_bytes().unwrap(), HAND_WRITTEN);
        assert_eq!(hand_written_repr().buffer_len(), 28);
        let mut small = [0u8; 27];
        assert!(matches!(
            hand_written_repr().emit(&mut small),
            Err(WireError::BufferTooSmall { needed: 28, .. })
        ));
    }

    #[test]
    fn exponent_and_mantissa_follow_the_draft() {
        assert_eq!(exp_mantissa(Bitrate::ZERO), (0, 0));
        assert_eq!(exp_mantissa(Bitrate::bps(0x3_FFFF)), (0, 0x3_FFFF));
        assert_eq!(exp_mantissa(Bitrate::bps(0x4_0000)), (1, 0x2_0000));
        assert_eq!(exp_mantissa(Bitrate::mbps(10)), (6, 156_250));
        // One bit/s above 10 Mbit/s needs the same exponent and so rounds down to 10 Mbit/s.
        assert_eq!(RembRepr::wire_bitrate(Bitrate::bps(10_000_063)), Bitrate::mbps(10));
        assert_eq!(RembRepr::wire_bitrate(Bitrate::bps(10_000_064)), Bitrate::bps(10_000_064));
        // The largest rate, and everything above it, is an all-ones mantissa with exponent 46.
        assert_eq!(exp_mantissa(Bitrate::INFINITE), (46, 0x3_FFFF));
        assert_eq!(RembRepr::wire_bitrate(Bitrate::INFINITE), RembRepr::MAX_BITRATE);
        assert_eq!(RembRepr::MAX_BITRATE.as_bps(), 0xFFFF_C000_0000_0000);
    }

    #[test]
    fn the_largest_rate_round_trips() {
        let max = RembRepr { sender_ssrc: 7, bitrate: RembRepr::MAX_BITRATE, ssrcs: vec![] };
        let bytes = max.to_bytes().unwrap();
        // Num SSRC 0 | exp 46 = 101110 | mantissa all ones.
        assert_eq!(bytes[16..20], [0x00, 0xBB, 0xFF, 0xFF]);
        assert_eq!(RembRepr::parse(&bytes), Ok(max.clone()));
        let infinite = RembRepr { bitrate: Bitrate::INFINITE, ..max.clone() };
        assert_eq!(RembRepr::parse(&infinite.to_bytes().unwrap()), Ok(max));
    }

    #[test]
    fn malformed_rembs_are_errors() {
        // Num SSRC 3 but two SSRCs.
        let mut count = HAND_WRITTEN;
        count[16] = 3;
        assert!(matches!(RembRepr::parse(&count), Err(WireError::BadRemb(_))));
        // Exponent 47 with a mantissa of 2^17 overflows 64 bits.
        let mut overflow = HAND_WRITTEN;
        overflow[17] = 47 << 2 | 0b10;
        assert!(matches!(RembRepr::parse(&overflow), Err(WireError::BadRemb(_))));
        // Exponent 63 with mantissa 1 still fits.
        let mut big = HAND_WRITTEN;
        big[17..20].copy_from_slice(&[63 << 2, 0, 1]);
        assert_eq!(RembRepr::parse(&big).unwrap().bitrate, Bitrate::bps(1 << 63));
        // Another application's identifier.
        let mut other = HAND_WRITTEN;
        other[12..16].copy_from_slice(b"GOOG");
        assert!(matches!(RembRepr::parse(&other), Err(WireError::BadRemb(_))));
        // A PLI (FMT 1) is not application layer feedback.
        let mut pli = HAND_WRITTEN;
        pli[0] = 0x81;
        assert!(matches!(RembRepr::parse(&pli), Err(WireError::WrongPacketType { fmt: 1, .. })));
        // Too short for the identifier, and truncated.
        let short = [0x8F, 206, 0x00, 0x02, 0, 0, 0, 1, 0, 0, 0, 0];
        assert!(matches!(RembRepr::parse(&short), Err(WireError::BadRemb(_))));
        assert!(RembRepr::parse(&HAND_WRITTEN[..24]).is_err());
        // Padding that would eat into the header.
        let mut padded = HAND_WRITTEN;
        padded[0] |= 0x20;
        padded[27] = 12;
        assert!(matches!(RembRepr::parse(&padded), Err(WireError::BadRemb(_))));
    }

    #[test]
    fn padding_is_skipped() {
        // The hand-written packet plus one word of padding (RFC 3550 §6.4.1).
        let mut padded = HAND_WRITTEN.to_vec();
        padded[0] |= 0x20;
        padded[3] = 7;
        padded.extend_from_slice(&[0, 0, 0, 4]);
        assert_eq!(RembRepr::parse(&padded), Ok(hand_written_repr()));
    }

    #[test]
    fn too_many_ssrcs_are_refused() {
        let many = RembRepr { sender_ssrc: 1, bitrate: Bitrate::kbps(300), ssrcs: vec![5; 256] };
        assert!(matches!(many.to_bytes(), Err(WireError::InvalidField { field: "ssrcs", .. })));
        let most = RembRepr { ssrcs: vec![5; 255], ..many };
        assert_eq!(RembRepr::parse(&most.to_bytes().unwrap()), Ok(most));
    }

    proptest! {
        #[test]
        fn representable_rembs_round_trip(
            sender_ssrc in any::<u32>(),
            mantissa in 0u64..=MANTISSA_MAX,
            exp in 0u32..=EXP_MAX_IN_U64,
            ssrcs in proptest::collection::vec(any::<u32>(), 0..=40),
        ) {
            let repr = RembRepr { sender_ssrc, bitrate: Bitrate::bps(mantissa << exp), ssrcs };
            let bytes = repr.to_bytes().unwrap();
            prop_assert_eq!(bytes.len(), repr.buffer_len());
            prop_assert_eq!(RembRepr::parse(&bytes), Ok(repr));
        }

        /// Any rate is sent as the largest representable rate not above it.
        #[test]
        fn encoding_rounds_down_by_less_than_one_part_in_2_17(bps in any::<u64>()) {
            let wire = RembRepr::wire_bitrate(Bitrate::bps(bps)).as_bps();
            prop_assert!(wire <= bps);
            prop_assert!((bps - wire) as u128 * (1 << 17) <= u128::from(bps), "{bps} -> {wire}");
            prop_assert_eq!(RembRepr::wire_bitrate(Bitrate::bps(wire)).as_bps(), wire);
        }

        #[test]
        fn parsing_arbitrary_bodies_never_panics(body in proptest::collection::vec(any::<u8>(), 0..64)) {
            // A valid PSFB FMT 15 header in front, so the bytes reach the REMB checks.
            let words = body.len() / 4;
            let mut bytes = vec![0x8F, 206, 0, (words + 2) as u8, 0, 0, 0, 1, 0, 0, 0, 0];
            bytes.extend_from_slice(&body[..words * 4]);
            let _ = RembRepr::parse(&bytes);
            if bytes.len() >= 16 {
                bytes[12..16].copy_from_slice(b"REMB");
                let _ = RembRepr::parse(&bytes);
            }
        }

        #[test]
        fn parsing_mutated_rembs_never_panics(edits in proptest::collection::vec((0usize..28, any::<u8>()), 1..6)) {
            let mut bytes = HAND_WRITTEN;
            for (at, value) in edits {
                bytes[at] = value;
            }
            let _ = RembRepr::parse(&bytes);
        }
    }
}
