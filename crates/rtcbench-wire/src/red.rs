//! Redundant audio data, RED (RFC 2198 §3): the block headers at the start of a RED packet's
//! payload, which list redundant copies of earlier data (or, in WebRTC, ULPFEC packets) ahead of
//! the primary data.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! |F|   block PT  |  timestamp offset         |   block length    |  F = 1: × redundant blocks
//! |0|   Block PT  |                                                  the primary block's header
//! ```
//!
//! * **F** is 1 when another header follows, 0 in the last (1-byte) header, which belongs to
//!   the primary block.
//! * **block PT** is the payload type of the block's data, 7 bits.
//! * **timestamp offset** (14 bits, unsigned) is how much earlier than the RTP header's
//!   timestamp the block's data was sampled: its timestamp is the header's minus the offset.
//! * **block length** (10 bits) is the length of the block's data in bytes. The primary block
//!   has no length: it is the rest of the payload.
//!
//! The data follow the headers in the same order: the redundant blocks, then the primary block.
//! In the simulator a payload is a length, not bytes, so [`RedHeaderRepr::parse`] reads only the
//! headers and does not check that the data they announce are there; a caller holding the whole
//! payload compares its length with [`RedHeaderRepr::buffer_len`] +
//! [`RedHeaderRepr::redundant_len`].

use crate::WireError;

/// Bytes of a redundant block's header.
pub const BLOCK_HEADER_LEN: usize = 4;
/// Bytes of the primary block's header.
pub const PRIMARY_HEADER_LEN: usize = 1;
/// Largest timestamp offset, 14 bits.
pub const TS_OFFSET_MAX: u16 = 0x3FFF;
/// Largest block length, 10 bits.
pub const BLOCK_LEN_MAX: u16 = 0x3FF;

const F_BIT: u8 = 0x80;

/// The header of one redundant block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct RedBlock {
    /// Block PT, 7 bits.
    pub pt: u8,
    /// Timestamp offset from the RTP header's timestamp, in media clock units, 14 bits.
    pub ts_offset: u16,
    /// Block length: bytes of the block's data, 10 bits.
    pub len: u16,
}

/// The block headers of one RED payload.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct RedHeaderRepr {
    /// The redundant blocks' headers, in payload order; may be empty.
    pub blocks: Vec<RedBlock>,
    /// Block PT of the primary block, 7 bits.
    pub primary_pt: u8,
}

impl RedHeaderRepr {
    /// Length of the headers: 4 bytes per redundant block and 1 for the primary block. The
    /// redundant data start here.
    pub fn buffer_len(&self) -> usize {
        BLOCK_HEADER_LEN * self.blocks.len() + PRIMARY_HEADER_LEN
    }

    /// Bytes of redundant data, after the headers and before the primary data.
    pub fn redundant_len(&self) -> usize {
        self.blocks.iter().map(|b| usize::from(b.len)).sum()
    }

    /// Parses the block headers at the start of `payload`, the RED packet's RTP payload;
    /// anything after them is ignored (see the module docs).
    pub fn parse(payload: &[u8]) -> Result<Self, WireError> {
        let mut blocks = Vec::new();
        let mut at = 0;
        loop {
            let Some(&first) = payload.get(at) else {
                return Err(WireError::Truncated {
                    what: "RED block headers",
                    needed: at + 1,
                    actual: payload.len(),
                });
            };
            if first & F_BIT == 0 {
                return Ok(Self { blocks, primary_pt: first & 0x7F });
            }
            let h = payload.get(at..at + BLOCK_HEADER_LEN).ok_or(WireError::Truncated {
                what: "RED block header",
                needed: at + BLOCK_HEADER_LEN,
                actual: payload.len(),
            })?;
            // 14-bit offset and 10-bit length in the last 24 bits.
            let rest = u32::from_be_bytes([0, h[1], h[2], h[3]]);
            blocks.push(RedBlock {
                pt: first & 0x7F,
                ts_offset: (rest >> 10) as u16,
                len: (rest & u32::from(BLOCK_LEN_MAX)) as u16,
            });
            at += BLOCK_HEADER_LEN;
        }
    }

    /// Writes the headers into the start of `buf`; returns the bytes written
    /// ([`buffer_len`](Self::buffer_len)).
    ///
    /// Errors when a payload type exceeds 7 bits, a timestamp offset 14 bits or a block length
    /// 10 bits, or when `buf` is too short.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let invalid = |field, value: u16, max: u16, bits| WireError::InvalidField {
            field,
            reason: format!("{value} is above {max} ({bits} bits, RFC 2198 §3)"),
        };
        for b in &self.blocks {
            if b.pt > 0x7F {
                return Err(invalid("blocks.pt", b.pt.into(), 0x7F, 7));
            }
            if b.ts_offset > TS_OFFSET_MAX {
                return Err(invalid("blocks.ts_offset", b.ts_offset, TS_OFFSET_MAX, 14));
            }
            if b.len > BLOCK_LEN_MAX {
                return Err(invalid("blocks.len", b.len, BLOCK_LEN_MAX, 10));
            }
        }
        if self.primary_pt > 0x7F {
            return Err(invalid("primary_pt", self.primary_pt.into(), 0x7F, 7));
        }
        let (len, actual) = (self.buffer_len(), buf.len());
        let buf = buf.get_mut(..len).ok_or(WireError::BufferTooSmall {
            what: "RED block headers",
            needed: len,
            actual,
        })?;
        for (h, b) in buf.chunks_exact_mut(BLOCK_HEADER_LEN).zip(&self.blocks) {
            let rest = u32::from(b.ts_offset) << 10 | u32::from(b.len);
            h.copy_from_slice(&(u32::from(F_BIT | b.pt) << 24 | rest).to_be_bytes());
        }
        buf[len - 1] = self.primary_pt;
        Ok(len)
    }

    /// The headers' bytes; see [`emit`](Self::emit).
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

    /// Two redundant Opus frames (PT 111, 20 ms = 960 ticks apart at 48 kHz) ahead of the
    /// primary one, written by hand from RFC 2198 §3.
    const TWO_REDUNDANT: [u8; 9] = [
        0xEF, // F=1, block PT 111
        0x1E, 0x00, 0x50, // timestamp offset 1920 (0x780 << 10 = 0x1E0000), block length 80
        0xEF, // F=1, block PT 111
        0x0F, 0x00, 0x5A, // timestamp offset 960 (0x3C0 << 10 = 0x0F0000), block length 90
        0x6F, // F=0, primary block PT 111
    ];

    fn two_redundant() -> RedHeaderRepr {
        RedHeaderRepr {
            blocks: vec![
                RedBlock { pt: 111, ts_offset: 1920, len: 80 },
                RedBlock { pt: 111, ts_offset: 960, len: 90 },
            ],
            primary_pt: 111,
        }
    }

    #[test]
    fn hand_written_headers_parse_and_emit_identically() {
        assert_eq!(RedHeaderRepr::parse(&TWO_REDUNDANT), Ok(two_redundant()));
        assert_eq!(two_redundant().to_bytes().unwrap(), TWO_REDUNDANT);
        assert_eq!((two_redundant().buffer_len(), two_redundant().redundant_len()), (9, 170));
        // Data after the headers are not read.
        let mut packet = TWO_REDUNDANT.to_vec();
        packet.extend_from_slice(&[0xFF; 3]);
        assert_eq!(RedHeaderRepr::parse(&packet), Ok(two_redundant()));
        assert!(matches!(
            two_redundant().emit(&mut [0; 8]),
            Err(WireError::BufferTooSmall { needed: 9, .. })
        ));
    }

    #[test]
    fn primary_only_and_field_maxima() {
        // The primary header alone, as WebRTC sends RED without redundancy.
        let primary = RedHeaderRepr { blocks: vec![], primary_pt: 96 };
        assert_eq!(primary.to_bytes().unwrap(), [96]);
        assert_eq!(RedHeaderRepr::parse(&[96]), Ok(primary));
        // All-ones offset and length fill the 24 bits.
        let max = RedHeaderRepr {
            blocks: vec![RedBlock { pt: 127, ts_offset: TS_OFFSET_MAX, len: BLOCK_LEN_MAX }],
            primary_pt: 0,
        };
        assert_eq!(max.to_bytes().unwrap(), [0xFF, 0xFF, 0xFF, 0xFF, 0x00]);
        assert_eq!(RedHeaderRepr::parse(&[0xFF, 0xFF, 0xFF, 0xFF, 0x00]), Ok(max));
    }

    #[test]
    fn malformed_and_unencodable_headers_are_errors() {
        // Every cut ends the chain early: no F=0 header.
        for cut in 0..TWO_REDUNDANT.len() {
            assert!(matches!(RedHeaderRepr::parse(&TWO_REDUNDANT[..cut]), Err(WireError::Truncated { .. })));
        }
        let block = |pt, ts_offset, len| RedHeaderRepr {
            blocks: vec![RedBlock { pt, ts_offset, len }],
            primary_pt: 1,
        };
        for (bad, field) in [
            (block(128, 0, 0), "blocks.pt"),
            (block(1, TS_OFFSET_MAX + 1, 0), "blocks.ts_offset"),
            (block(1, 0, BLOCK_LEN_MAX + 1), "blocks.len"),
            (RedHeaderRepr { blocks: vec![], primary_pt: 128 }, "primary_pt"),
        ] {
            assert!(matches!(bad.to_bytes(), Err(WireError::InvalidField { field: f, .. }) if f == field));
        }
    }

    proptest! {
        #[test]
        fn headers_round_trip(
            blocks in proptest::collection::vec((0u8..128, 0..=TS_OFFSET_MAX, 0..=BLOCK_LEN_MAX), 0..8),
            primary_pt in 0u8..128,
        ) {
            let blocks =
                blocks.into_iter().map(|(pt, ts_offset, len)| RedBlock { pt, ts_offset, len }).collect();
            let repr = RedHeaderRepr { blocks, primary_pt };
            let bytes = repr.to_bytes().unwrap();
            prop_assert_eq!(bytes.len(), repr.buffer_len());
            prop_assert_eq!(RedHeaderRepr::parse(&bytes), Ok(repr));
        }

        #[test]
        fn parsing_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..32)) {
            if let Ok(repr) = RedHeaderRepr::parse(&bytes) {
                prop_assert_eq!(repr.to_bytes().unwrap(), &bytes[..repr.buffer_len()]);
            }
        }
    }
}
