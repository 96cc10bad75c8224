//! FlexFEC (RFC 8627): the FEC header (§4.2) at the start of a repair packet's payload, in the
//! flexible-mask variant (R = 0, F = 0, §4.2.2.1) for one protected stream.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! |R|F|P|X|  CC   |M| PT recovery |        length recovery        |
//! |                          TS recovery                          |
//! |           SN base_i           |k|          Mask [0-14]        |
//! |k|                   Mask [15-45] (optional)                   |
//! |                     Mask [46-109] (optional)                  |
//! |                                                               |
//! ```
//!
//! * **R** and **F** are 0: R = 1 is the retransmission variant and F = 1 the fixed L × D
//!   mask, neither of which rtcbench models; parsing either is an error.
//! * **P, X, CC, M, PT, TS and length recovery** are the [`RecoveryFields`].
//! * **SN base_i** is the lowest protected sequence number of the protected stream, and mask
//!   bit j (Mask [0-14] first, each part's most significant bit first) is set when
//!   SN base_i + j is protected, so one repair packet covers at most 15, 46 or 110 consecutive
//!   sequence numbers.
//! * **k** is 1 when another part of the mask follows and 0 in the last part present; libwebrtc's
//!   and FFmpeg's RFC 8627 readers agree. The earlier draft-ietf-payload-flexible-fec-scheme-03,
//!   which browsers negotiate as `flexfec-03`, gives k the opposite sense and puts an SSRC count
//!   and SSRCs in the header: it is not this format. [`FlexfecHeaderRepr::emit`] writes the
//!   shortest mask that holds every set bit.
//!
//! The protected stream is named by the repair packet's CSRC list (RFC 8627 §4.1), with one
//! SN base and mask per CSRC. rtcbench protects one stream per repair packet (CC = 1), so the
//! header ends after the first mask; a header protecting several streams continues with further
//! SN base and mask pairs, which this parser leaves in the payload. Payload bytes are not XOR-ed
//! (see the [module docs](super)).

use rtcbench_units::SeqNo;

use super::{protection, recover, ProtectedPacket, RecoveryFields};
use crate::WireError;

/// Bytes of the header with Mask [0-14] only.
pub const HEADER_LEN_15: usize = 12;
/// Bytes of the header with Mask [0-45].
pub const HEADER_LEN_46: usize = 16;
/// Bytes of the header with Mask [0-109].
pub const HEADER_LEN_110: usize = 24;
/// Most sequence numbers one repair packet protects: the bits of Mask [0-109].
pub const MAX_SPAN: u16 = 110;

/// Mask bits in the first part, after its k bit.
const PART0_BITS: u32 = 15;
/// Mask bits in the first two parts.
const PART01_BITS: u32 = 46;
const K_BIT_16: u16 = 0x8000;
const K_BIT_32: u32 = 0x8000_0000;

/// The FEC header of one FlexFEC repair packet (flexible mask, one protected stream).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FlexfecHeaderRepr {
    /// P, X, CC, M, PT, TS and length recovery.
    pub recovery: RecoveryFields,
    /// SN base_i: the lowest sequence number protected.
    pub sn_base: SeqNo<16>,
    /// Bit j (from the least significant) set: SN base_i + j is protected. At most 110 bits.
    pub mask: u128,
}

impl FlexfecHeaderRepr {
    /// Length of the header as emitted: 12, 16 or 24 bytes, for the shortest mask that holds
    /// every set bit.
    pub fn buffer_len(&self) -> usize {
        if self.mask >> PART01_BITS != 0 {
            HEADER_LEN_110
        } else if self.mask >> PART0_BITS != 0 {
            HEADER_LEN_46
        } else {
            HEADER_LEN_15
        }
    }

    /// The protected sequence numbers, in increasing order from SN base_i.
    pub fn protected_seqs(&self) -> impl Iterator<Item = SeqNo<16>> + '_ {
        (0..u64::from(MAX_SPAN))
            .filter(|j| self.mask >> j & 1 != 0)
            .map(|j| SeqNo::new(self.sn_base.value() + j))
    }

    /// Parses the header at the start of `payload`, the repair packet's RTP payload; returns it
    /// and its length, where the repair payload starts.
    pub fn parse(payload: &[u8]) -> Result<(Self, usize), WireError> {
        let truncated =
            |needed| WireError::Truncated { what: "FlexFEC header", needed, actual: payload.len() };
        if payload.len() < HEADER_LEN_15 {
            return Err(truncated(HEADER_LEN_15));
        }
        let (flags, mut recovery) = RecoveryFields::parse_shared(payload);
        match flags {
            0b00 => {}
            0b10 | 0b11 => {
                return Err(WireError::BadFec("R = 1: a FlexFEC retransmission, not modelled".into()))
            }
            _ => return Err(WireError::BadFec("F = 1: a fixed L × D FlexFEC mask, not modelled".into())),
        }
        recovery.length = u16::from_be_bytes([payload[2], payload[3]]);
        let sn_base = SeqNo::new(u64::from(u16::from_be_bytes([payload[8], payload[9]])));
        let part0 = u16::from_be_bytes([payload[10], payload[11]]);
        // Each part's most significant mask bit is the lowest j: reversing the bits puts j at
        // bit j. The shift drops the k bit, which reversal moved to the bottom.
        let mut mask = u128::from((part0 << 1).reverse_bits());
        let mut len = HEADER_LEN_15;
        if part0 & K_BIT_16 != 0 {
            let p = payload.get(12..HEADER_LEN_46).ok_or(truncated(HEADER_LEN_46))?;
            let part1 = u32::from_be_bytes([p[0], p[1], p[2], p[3]]);
            mask |= u128::from((part1 << 1).reverse_bits()) << PART0_BITS;
            len = HEADER_LEN_46;
            if part1 & K_BIT_32 != 0 {
                let p = payload.get(16..HEADER_LEN_110).ok_or(truncated(HEADER_LEN_110))?;
                let part2 = u64::from_be_bytes([p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]]);
                mask |= u128::from(part2.reverse_bits()) << PART01_BITS;
                len = HEADER_LEN_110;
            }
        }
        Ok((Self { recovery, sn_base, mask }, len))
    }

    /// Writes the header into the start of `buf`; returns the bytes written
    /// ([`buffer_len`](Self::buffer_len)).
    ///
    /// Errors when the mask has bits beyond 110, PT or CC recovery do not fit their fields, or
    /// `buf` is too short.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        if self.mask >> MAX_SPAN != 0 {
            return Err(WireError::InvalidField {
                field: "mask",
                reason: format!("{:#x} has bits beyond the 110 of Mask [0-109]", self.mask),
            });
        }
        let (len, actual) = (self.buffer_len(), buf.len());
        let buf = buf.get_mut(..len).ok_or(WireError::BufferTooSmall {
            what: "FlexFEC header",
            needed: len,
            actual,
        })?;
        // R = 0, F = 0.
        self.recovery.emit_shared(0b00, buf)?;
        buf[2..4].copy_from_slice(&self.recovery.length.to_be_bytes());
        buf[8..10].copy_from_slice(&(self.sn_base.value() as u16).to_be_bytes());
        let more = |bits: u32| self.mask >> bits != 0;
        let part0 =
            (self.mask as u16 & 0x7FFF).reverse_bits() >> 1 | if more(PART0_BITS) { K_BIT_16 } else { 0 };
        buf[10..12].copy_from_slice(&part0.to_be_bytes());
        if len >= HEADER_LEN_46 {
            let bits = (self.mask >> PART0_BITS) as u32 & 0x7FFF_FFFF;
            let part1 = bits.reverse_bits() >> 1 | if more(PART01_BITS) { K_BIT_32 } else { 0 };
            buf[12..16].copy_from_slice(&part1.to_be_bytes());
        }
        if len == HEADER_LEN_110 {
            let part2 = ((self.mask >> PART01_BITS) as u64).reverse_bits();
            buf[16..24].copy_from_slice(&part2.to_be_bytes());
        }
        Ok(len)
    }

    /// The header's bytes; see [`emit`](Self::emit).
    pub fn to_bytes(&self) -> Result<Vec<u8>, WireError> {
        let mut buf = vec![0; self.buffer_len()];
        self.emit(&mut buf)?;
        Ok(buf)
    }

    /// The header of a repair packet protecting all of `packets` (RFC 8627 §6.2): the XOR of
    /// their fields, SN base_i the lowest sequence number (across the wrap).
    ///
    /// Errors when `packets` is empty, repeats a sequence number, spans more than 110 sequence
    /// numbers, or has a field too wide for the header.
    pub fn protect(packets: &[ProtectedPacket]) -> Result<Self, WireError> {
        let recovery = RecoveryFields::protect(packets)?;
        let (sn_base, mask) = protection(packets, MAX_SPAN)?;
        Ok(Self { recovery, sn_base, mask })
    }

    /// The protected packet missing from `received` (RFC 8627 §6.3): its sequence number, header
    /// fields and length. `received` holds the other protected packets, in any order; packets
    /// this repair packet does not protect are ignored.
    ///
    /// Errors when not exactly one protected packet is missing, or when one is given twice.
    pub fn recover(&self, received: &[ProtectedPacket]) -> Result<ProtectedPacket, WireError> {
        recover(self.recovery, self.sn_base, self.mask, received)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::packets;
    use super::*;
    use proptest::prelude::*;
    use rtcbench_units::DataSize;

    /// A header written by hand from RFC 8627 §4.2.2.1 protecting two packets across the wrap:
    /// 65535 (X, PT 96, TS 0x1000, 1000 bytes) and 0 (X, M, PT 96, TS 0x1000, 500 bytes).
    const TWO_PACKETS: [u8; 12] = [
        0x00, // R=0, F=0, P recovery 0, X recovery 0 (1 ^ 1), CC recovery 0
        0x80, // M recovery 1, PT recovery 0 (96 ^ 96)
        0x02, 0x1C, // length recovery 1000 ^ 500 = 0x03E8 ^ 0x01F4
        0x00, 0x00, 0x00, 0x00, // TS recovery 0x1000 ^ 0x1000
        0xFF, 0xFF, // SN base 65535
        0x60, 0x00, // k=0 (last part), Mask [0-14]: bits 0 and 1
    ];

    fn two_packets() -> [ProtectedPacket; 2] {
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
        [p(65535, false, 1000), p(0, true, 500)]
    }

    #[test]
    fn hand_written_header_parses_emits_and_recovers() {
        let header = FlexfecHeaderRepr::protect(&two_packets()).unwrap();
        assert_eq!(header.to_bytes().unwrap(), TWO_PACKETS);
        let (parsed, len) = FlexfecHeaderRepr::parse(&TWO_PACKETS).unwrap();
        assert_eq!((parsed, len), (header, 12));
        let sent = two_packets();
        assert_eq!(parsed.recover(&sent[..1]), Ok(sent[1]));
        assert_eq!(parsed.recover(&sent[1..]), Ok(sent[0]));
    }

    /// The three mask lengths, written by hand: bits 0, 20 and 100 need all three parts.
    #[test]
    fn the_k_bits_chain_the_mask_parts() {
        let header = |mask| FlexfecHeaderRepr { mask, ..FlexfecHeaderRepr::default() };
        let all = [
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // recovery fields, SN base 0
            0xC0, 0x00, // k=1, Mask [0-14]: bit 0 (the first bit after k)
            0x82, 0x00, 0x00, 0x00, // k=1, Mask [15-45]: bit 20 = the 6th bit after k
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, // Mask [46-109]: bit 100 = the 55th bit
        ];
        assert_eq!(header(1 | 1 << 20 | 1 << 100).to_bytes().unwrap(), all);
        assert_eq!(FlexfecHeaderRepr::parse(&all), Ok((header(1 | 1 << 20 | 1 << 100), 24)));
        let two_parts = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xC0, 0x00, 0x02, 0x00, 0x00, 0x00];
        assert_eq!(header(1 | 1 << 20).to_bytes().unwrap(), two_parts);
        assert_eq!(FlexfecHeaderRepr::parse(&two_parts), Ok((header(1 | 1 << 20), 16)));
        // The last bit of each part.
        let last = header(1 << 14 | 1 << 45 | 1 << 109);
        let bytes = last.to_bytes().unwrap();
        assert_eq!(bytes[10..], [0x80, 0x01, 0x80, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0x01]);
        assert_eq!(FlexfecHeaderRepr::parse(&bytes), Ok((last, 24)));
    }

    #[test]
    fn any_one_of_2_to_48_packets_is_recovered() {
        for n in 2..=48 {
            for (first, step) in [(65500, 1), (7, 2)] {
                let sent = packets(first, step, n, 100 + n as u64);
                let header = FlexfecHeaderRepr::protect(&sent).unwrap();
                let (parsed, len) = FlexfecHeaderRepr::parse(&header.to_bytes().unwrap()).unwrap();
                assert_eq!((parsed, len), (header, header.buffer_len()));
                for lost in 0..n {
                    let mut received = sent.clone();
                    let missing = received.remove(lost);
                    received.reverse();
                    assert_eq!(parsed.recover(&received), Ok(missing), "n {n}, lost {lost}");
                }
            }
        }
    }

    #[test]
    fn malformed_and_unencodable_headers_are_errors() {
        for cut in 0..TWO_PACKETS.len() {
            assert!(matches!(
                FlexfecHeaderRepr::parse(&TWO_PACKETS[..cut]),
                Err(WireError::Truncated { .. })
            ));
        }
        // k announces a part that is missing.
        let mut more = TWO_PACKETS;
        more[10] |= 0x80;
        assert!(matches!(FlexfecHeaderRepr::parse(&more), Err(WireError::Truncated { needed: 16, .. })));
        let mut more = [0u8; 16];
        more[10] = 0x80;
        more[12] = 0x80;
        assert!(matches!(FlexfecHeaderRepr::parse(&more), Err(WireError::Truncated { needed: 24, .. })));
        // R and F.
        for flags in [0x80, 0x40, 0xC0] {
            let mut other = TWO_PACKETS;
            other[0] |= flags;
            assert!(matches!(FlexfecHeaderRepr::parse(&other), Err(WireError::BadFec(_))));
        }
        let wide = FlexfecHeaderRepr { mask: 1 << 110, ..FlexfecHeaderRepr::default() };
        assert!(matches!(wide.to_bytes(), Err(WireError::InvalidField { field: "mask", .. })));
        assert!(matches!(
            FlexfecHeaderRepr::protect(&packets(0, 1, 111, 1)),
            Err(WireError::InvalidInput(_))
        ));
        assert!(FlexfecHeaderRepr::protect(&packets(0, 1, 110, 1)).is_ok());
    }

    proptest! {
        #[test]
        fn headers_round_trip(
            (padding, extension, marker) in (any::<bool>(), any::<bool>(), any::<bool>()),
            (csrc_count, payload_type) in (0u8..16, 0u8..128),
            (timestamp, length, sn_base) in (any::<u32>(), any::<u16>(), any::<u16>()),
            mask in 0u128..1 << 110,
        ) {
            let recovery =
                RecoveryFields { padding, extension, csrc_count, marker, payload_type, timestamp, length };
            let repr = FlexfecHeaderRepr { recovery, sn_base: SeqNo::new(u64::from(sn_base)), mask };
            let bytes = repr.to_bytes().unwrap();
            prop_assert_eq!(FlexfecHeaderRepr::parse(&bytes), Ok((repr, bytes.len())));
        }

        #[test]
        fn parsing_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..32)) {
            if let Ok((repr, len)) = FlexfecHeaderRepr::parse(&bytes) {
                prop_assert!(len <= bytes.len());
                let again = FlexfecHeaderRepr::parse(&repr.to_bytes().unwrap()).map(|(r, _)| r);
                prop_assert_eq!(again, Ok(repr));
            }
        }
    }
}
