//! ULPFEC, the generic FEC of RFC 5109: the FEC header (§7.3) and the level-0 ULP header
//! (§7.4) at the start of an FEC packet's payload, as libwebrtc sends them inside RED
//! (RFC 2198).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! |E|L|P|X|  CC   |M| PT recovery |            SN base            |  FEC header
//! |                          TS recovery                          |
//! |        length recovery        |                                  (10 bytes)
//! |       Protection Length       |             mask              |  level 0
//! |              mask cont. (present only when L = 1)             |
//! ```
//!
//! * **E** is reserved for an extension of the format: written 0, ignored on parse.
//! * **L** selects a 16-bit mask (L = 0) or a 48-bit one (L = 1). [`UlpfecHeaderRepr::emit`]
//!   writes the shorter mask that holds every set bit, so a header parsed with L = 1 and a mask
//!   that fits 16 bits is written back with L = 0.
//! * **P, X, CC, M, PT, TS and length recovery** are the [`RecoveryFields`].
//! * **SN base** is the lowest protected sequence number, and bit i of the mask (the most
//!   significant bit first) is set when SN base + i is protected, so one FEC packet covers at
//!   most 16 or 48 consecutive sequence numbers.
//! * **Protection length** is the number of bytes after each protected packet's fixed header
//!   that level 0 protects; [`UlpfecHeaderRepr::protect`] protects whole packets, so it is the
//!   longest protected length, and it is also the length of the FEC payload.
//!
//! Only level 0 is read: the level-1 and later ULP headers of a packet with uneven level
//! protection follow level 0's protected bytes and are left to the caller. Payload bytes are not
//! XOR-ed (see the [module docs](super)).

use rtcbench_units::SeqNo;

use super::{protection, recover, ProtectedPacket, RecoveryFields};
use crate::WireError;

/// Bytes of the FEC header (RFC 5109 §7.3).
pub const FEC_HEADER_LEN: usize = 10;
/// Bytes of the level-0 header with a 16-bit mask (L = 0).
pub const LEVEL_HEADER_SHORT_LEN: usize = 4;
/// Bytes of the level-0 header with a 48-bit mask (L = 1).
pub const LEVEL_HEADER_LONG_LEN: usize = 8;
/// Most sequence numbers one FEC packet protects: the 48 bits of the long mask.
pub const MAX_SPAN: u16 = 48;

/// Bits of the short mask.
const SHORT_MASK_BITS: u32 = 16;
const L_BIT: u8 = 0b01;

/// The FEC header and level-0 ULP header of one ULPFEC packet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct UlpfecHeaderRepr {
    /// P, X, CC, M, PT, TS and length recovery.
    pub recovery: RecoveryFields,
    /// SN base: the lowest sequence number protected.
    pub sn_base: SeqNo<16>,
    /// Protection length of level 0, in bytes.
    pub protection_length: u16,
    /// Bit i (from the least significant) set: SN base + i is protected. At most 48 bits; on the
    /// wire bit 0 is the mask's most significant bit.
    pub mask: u64,
}

impl UlpfecHeaderRepr {
    /// L: whether the mask needs the 48-bit form.
    pub fn long_mask(&self) -> bool {
        self.mask >> SHORT_MASK_BITS != 0
    }

    /// Length of the headers as emitted: 14 bytes, or 18 with the long mask.
    pub fn buffer_len(&self) -> usize {
        FEC_HEADER_LEN + if self.long_mask() { LEVEL_HEADER_LONG_LEN } else { LEVEL_HEADER_SHORT_LEN }
    }

    /// The protected sequence numbers, in increasing order from SN base.
    pub fn protected_seqs(&self) -> impl Iterator<Item = SeqNo<16>> + '_ {
        (0..u64::from(MAX_SPAN))
            .filter(|i| self.mask >> i & 1 != 0)
            .map(|i| SeqNo::new(self.sn_base.value() + i))
    }

    /// Parses the headers at the start of `payload`, the FEC packet's RTP payload (after the RED
    /// header if it came in RED); returns them and their length, where the FEC payload starts.
    pub fn parse(payload: &[u8]) -> Result<(Self, usize), WireError> {
        let truncated =
            |needed| WireError::Truncated { what: "ULPFEC header", needed, actual: payload.len() };
        if payload.len() < FEC_HEADER_LEN + LEVEL_HEADER_SHORT_LEN {
            return Err(truncated(FEC_HEADER_LEN + LEVEL_HEADER_SHORT_LEN));
        }
        let (flags, mut recovery) = RecoveryFields::parse_shared(payload);
        recovery.length = u16::from_be_bytes([payload[8], payload[9]]);
        let wire_mask = if flags & L_BIT != 0 {
            let len = FEC_HEADER_LEN + LEVEL_HEADER_LONG_LEN;
            let m = payload.get(12..len).ok_or(truncated(len))?;
            // 48 bits, bit 0 (SN base) the most significant.
            (u64::from_be_bytes([m[0], m[1], m[2], m[3], m[4], m[5], 0, 0])).reverse_bits()
        } else {
            u64::from(u16::from_be_bytes([payload[12], payload[13]]).reverse_bits())
        };
        let repr = Self {
            recovery,
            sn_base: SeqNo::new(u64::from(u16::from_be_bytes([payload[2], payload[3]]))),
            protection_length: u16::from_be_bytes([payload[10], payload[11]]),
            mask: wire_mask,
        };
        let len =
            FEC_HEADER_LEN + if flags & L_BIT != 0 { LEVEL_HEADER_LONG_LEN } else { LEVEL_HEADER_SHORT_LEN };
        Ok((repr, len))
    }

    /// Writes the headers into the start of `buf`; returns the bytes written
    /// ([`buffer_len`](Self::buffer_len)).
    ///
    /// Errors when the mask has bits beyond 48, PT or CC recovery do not fit their fields, or
    /// `buf` is too short.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        if self.mask >> MAX_SPAN != 0 {
            return Err(WireError::InvalidField {
                field: "mask",
                reason: format!("{:#x} has bits beyond the 48 of the long mask", self.mask),
            });
        }
        let (len, actual) = (self.buffer_len(), buf.len());
        let buf = buf.get_mut(..len).ok_or(WireError::BufferTooSmall {
            what: "ULPFEC header",
            needed: len,
            actual,
        })?;
        // E = 0.
        self.recovery.emit_shared(if self.long_mask() { L_BIT } else { 0 }, buf)?;
        buf[2..4].copy_from_slice(&(self.sn_base.value() as u16).to_be_bytes());
        buf[8..10].copy_from_slice(&self.recovery.length.to_be_bytes());
        buf[10..12].copy_from_slice(&self.protection_length.to_be_bytes());
        if self.long_mask() {
            buf[12..18].copy_from_slice(&self.mask.reverse_bits().to_be_bytes()[..6]);
        } else {
            buf[12..14].copy_from_slice(&(self.mask as u16).reverse_bits().to_be_bytes());
        }
        Ok(len)
    }

    /// The headers' bytes; see [`emit`](Self::emit).
    pub fn to_bytes(&self) -> Result<Vec<u8>, WireError> {
        let mut buf = vec![0; self.buffer_len()];
        self.emit(&mut buf)?;
        Ok(buf)
    }

    /// The headers of an FEC packet protecting all of `packets` in full (RFC 5109 §8): the XOR
    /// of their fields, SN base the lowest sequence number (across the wrap), and the protection
    /// length the longest packet.
    ///
    /// Errors when `packets` is empty, repeats a sequence number, spans more than 48 sequence
    /// numbers, or has a field too wide for the FEC header.
    pub fn protect(packets: &[ProtectedPacket]) -> Result<Self, WireError> {
        let recovery = RecoveryFields::protect(packets)?;
        let (sn_base, mask) = protection(packets, MAX_SPAN)?;
        // RecoveryFields::protect has checked that every length fits 16 bits.
        let longest = packets.iter().map(|p| p.length.as_bytes()).max().unwrap_or(0);
        Ok(Self { recovery, sn_base, protection_length: longest as u16, mask: mask as u64 })
    }

    /// The protected packet missing from `received` (RFC 5109 §9): its sequence number, header
    /// fields and length. `received` holds the other protected packets, in any order; packets
    /// this FEC packet does not protect are ignored.
    ///
    /// Errors when not exactly one protected packet is missing, when one is given twice, or when
    /// the recovered length exceeds the protection length (level 0 would not restore all of it).
    pub fn recover(&self, received: &[ProtectedPacket]) -> Result<ProtectedPacket, WireError> {
        let packet = recover(self.recovery, self.sn_base, u128::from(self.mask), received)?;
        if packet.length.as_bytes() > u64::from(self.protection_length) {
            return Err(WireError::BadFec(format!(
                "packet {} is {} long, level 0 protects only {} bytes",
                packet.seq.value(),
                packet.length,
                self.protection_length
            )));
        }
        Ok(packet)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::packets;
    use super::*;
    use proptest::prelude::*;
    use rtcbench_units::DataSize;

    /// FEC and level-0 headers written by hand from RFC 5109 §7.3 and §7.4 (L = 0).
    const SHORT: [u8; 14] = [
        0x23, // E=0, L=0, P recovery 1, X recovery 0, CC recovery 0011
        0xD5, // M recovery 1, PT recovery 0x55
        0x12, 0x34, // SN base 0x1234
        0xDE, 0xAD, 0xBE, 0xEF, // TS recovery
        0x01, 0x02, // length recovery
        0x04, 0xB0, // protection length 1200
        0xC0, 0x00, // mask: SN base + 0 and + 1
    ];

    fn short_repr() -> UlpfecHeaderRepr {
        UlpfecHeaderRepr {
            recovery: RecoveryFields {
                padding: true,
                extension: false,
                csrc_count: 3,
                marker: true,
                payload_type: 0x55,
                timestamp: 0xDEAD_BEEF,
                length: 0x0102,
            },
            sn_base: SeqNo::new(0x1234),
            protection_length: 1200,
            mask: 0b11,
        }
    }

    /// The same with L = 1 and a 48-bit mask protecting SN base + 0 and + 47.
    const LONG: [u8; 18] = [
        0x63, // E=0, L=1, P=1, X=0, CC=0011
        0xD5, 0x12, 0x34, 0xDE, 0xAD, 0xBE, 0xEF, 0x01, 0x02, // as above
        0x04, 0xB0, // protection length
        0x80, 0x00, // mask: bit 0 (SN base)
        0x00, 0x00, 0x00, 0x01, // mask cont.: bit 47 (SN base + 47)
    ];

    #[test]
    fn hand_written_headers_parse_and_emit_identically() {
        assert_eq!(UlpfecHeaderRepr::parse(&SHORT), Ok((short_repr(), 14)));
        assert_eq!(short_repr().to_bytes().unwrap(), SHORT);
        let long = UlpfecHeaderRepr { mask: 1 | 1 << 47, ..short_repr() };
        assert!(long.long_mask());
        assert_eq!(UlpfecHeaderRepr::parse(&LONG), Ok((long, 18)));
        assert_eq!(long.to_bytes().unwrap(), LONG);
        // Bytes after the headers are the FEC payload.
        let mut with_payload = SHORT.to_vec();
        with_payload.extend_from_slice(&[9; 5]);
        assert_eq!(UlpfecHeaderRepr::parse(&with_payload), Ok((short_repr(), 14)));
        let seqs: Vec<SeqNo<16>> = long.protected_seqs().collect();
        assert_eq!(seqs, [SeqNo::new(0x1234), SeqNo::new(0x1234 + 47)]);
    }

    #[test]
    fn e_is_ignored_and_a_long_mask_that_fits_is_written_short() {
        let mut bytes = LONG;
        bytes[0] |= 0x80; // E
        bytes[12..18].copy_from_slice(&[0xC0, 0, 0, 0, 0, 0]);
        assert_eq!(UlpfecHeaderRepr::parse(&bytes), Ok((short_repr(), 18)));
        assert_eq!(short_repr().to_bytes().unwrap(), SHORT);
    }

    #[test]
    fn two_packets_across_the_wrap_give_the_hand_computed_header() {
        let p = |seq, marker, length| ProtectedPacket {
            seq: SeqNo::new(seq),
            padding: false,
            extension: true,
            csrc_count: 0,
            marker,
            payload_type: 96,
            timestamp: 0x1000,
            length: DataSize::bytes(length),
        };
        let sent = [p(65535, false, 1000), p(0, true, 500)];
        let header = UlpfecHeaderRepr::protect(&sent).unwrap();
        // X, PT and TS cancel out; M is the second packet's; 1000 ^ 500 = 0x03E8 ^ 0x01F4.
        let expected = [
            0x00, 0x80, // E L P X CC = 0, M recovery 1, PT recovery 0
            0xFF, 0xFF, // SN base 65535, before the wrap
            0x00, 0x00, 0x00, 0x00, // TS recovery
            0x02, 0x1C, // length recovery 0x021C
            0x03, 0xE8, // protection length 1000, the longer packet
            0xC0, 0x00, // mask: 65535 and 0
        ];
        assert_eq!(header.to_bytes().unwrap(), expected);
        assert_eq!(header.recover(&sent[..1]), Ok(sent[1]));
        assert_eq!(header.recover(&sent[1..]), Ok(sent[0]));
    }

    #[test]
    fn any_one_of_2_to_48_packets_is_recovered() {
        for n in 2..=48 {
            // Consecutive from near the wrap, and every other from elsewhere when they fit.
            for (first, step) in [(65520, 1), (1000, 2)] {
                if (n - 1) * usize::from(step) >= usize::from(MAX_SPAN) {
                    continue;
                }
                let sent = packets(first, step, n, n as u64);
                let header = UlpfecHeaderRepr::protect(&sent).unwrap();
                assert_eq!(header.long_mask(), (n - 1) * usize::from(step) >= 16);
                let (parsed, len) = UlpfecHeaderRepr::parse(&header.to_bytes().unwrap()).unwrap();
                assert_eq!((parsed, len), (header, header.buffer_len()));
                for lost in 0..n {
                    let mut received = sent.clone();
                    let missing = received.remove(lost);
                    assert_eq!(parsed.recover(&received), Ok(missing), "n {n}, lost {lost}");
                }
            }
        }
    }

    #[test]
    fn malformed_and_unencodable_headers_are_errors() {
        for cut in 0..SHORT.len() {
            assert!(matches!(UlpfecHeaderRepr::parse(&SHORT[..cut]), Err(WireError::Truncated { .. })));
        }
        for cut in 0..LONG.len() {
            assert!(matches!(UlpfecHeaderRepr::parse(&LONG[..cut]), Err(WireError::Truncated { .. })));
        }
        let wide = UlpfecHeaderRepr { mask: 1 << 48, ..short_repr() };
        assert!(matches!(wide.to_bytes(), Err(WireError::InvalidField { field: "mask", .. })));
        let pt = UlpfecHeaderRepr {
            recovery: RecoveryFields { payload_type: 128, ..short_repr().recovery },
            ..short_repr()
        };
        assert!(matches!(pt.to_bytes(), Err(WireError::InvalidField { field: "payload_type", .. })));
        assert!(matches!(short_repr().emit(&mut [0; 13]), Err(WireError::BufferTooSmall { needed: 14, .. })));
        // 49 packets do not fit, nor do two 48 apart.
        assert!(matches!(UlpfecHeaderRepr::protect(&packets(0, 1, 49, 1)), Err(WireError::InvalidInput(_))));
        assert!(matches!(UlpfecHeaderRepr::protect(&packets(0, 48, 2, 1)), Err(WireError::InvalidInput(_))));
        // A recovered length beyond the protection length.
        let sent = packets(10, 1, 3, 5);
        let short = UlpfecHeaderRepr { protection_length: 0, ..UlpfecHeaderRepr::protect(&sent).unwrap() };
        assert!(matches!(short.recover(&sent[1..]), Err(WireError::BadFec(_))));
    }

    proptest! {
        #[test]
        fn headers_round_trip(
            (padding, extension, marker) in (any::<bool>(), any::<bool>(), any::<bool>()),
            (csrc_count, payload_type) in (0u8..16, 0u8..128),
            (timestamp, length) in (any::<u32>(), any::<u16>()),
            (sn_base, protection_length) in (any::<u16>(), any::<u16>()),
            mask in 0u64..1 << 48,
        ) {
            let recovery =
                RecoveryFields { padding, extension, csrc_count, marker, payload_type, timestamp, length };
            let sn_base = SeqNo::new(u64::from(sn_base));
            let repr = UlpfecHeaderRepr { recovery, sn_base, protection_length, mask };
            let bytes = repr.to_bytes().unwrap();
            prop_assert_eq!(UlpfecHeaderRepr::parse(&bytes), Ok((repr, bytes.len())));
        }

        #[test]
        fn parsing_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..32)) {
            if let Ok((repr, len)) = UlpfecHeaderRepr::parse(&bytes) {
                prop_assert!(len <= bytes.len());
                let again = UlpfecHeaderRepr::parse(&repr.to_bytes().unwrap()).map(|(r, _)| r);
                prop_assert_eq!(again, Ok(repr));
            }
        }
    }
}
