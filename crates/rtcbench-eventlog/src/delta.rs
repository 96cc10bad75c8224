//! libwebrtc's fixed-length delta encoding of one column of a batch of events.
//!
//! A batch of N events of one kind is a protobuf message whose plain fields hold the first
//! event (the *base*) and whose `*_deltas` byte fields hold each column's N-1 later values. The
//! format of those bytes, as libwebrtc's `delta_encoding.cc` writes them (facts of the format;
//! the code here is this project's own):
//!
//! - No bytes at all: every value equals the base.
//! - Otherwise a bit stream, most significant bit first: 2 bits of encoding type (0 or 1;
//!   2 and 3 are reserved), 6 bits of delta width minus one. Type 1 adds 1 bit "deltas are
//!   signed", 1 bit "values are optional" and 6 bits of value width minus one; type 0 means
//!   unsigned deltas, every value present, values 64 bits wide.
//! - If values are optional, one existence bit per value follows.
//! - Then, for each present value: if there is no previous value (the base is absent and
//!   this is the first present one), the value itself as a varint, read a byte (8 bits) at a
//!   time; otherwise a delta of the delta width, added to the previous value modulo
//!   2^(value width). A signed delta is two's complement in the delta width.
//!
//! Signed fields (`int32`, `int64`) are encoded as their two's complement in their own width,
//! which [`as_i64`] and [`as_i32`] undo.

use thiserror::Error;

/// Why a column's bytes could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DeltaError {
    /// Encoding types 2 and 3 are reserved: a log from a newer writer, or damage.
    #[error("unknown delta encoding type {0}")]
    UnknownEncoding(u64),
    /// A delta wider than the values it steps between.
    #[error("delta width {delta} bits is wider than the values' {value} bits")]
    BadWidths {
        /// Bits per delta.
        delta: u32,
        /// Bits per value.
        value: u32,
    },
    /// The bit stream ended before every value was read.
    #[error("the deltas end before their {0} values")]
    Truncated(usize),
    /// A varint of more than ten bytes.
    #[error("a varint longer than 64 bits")]
    LongVarint,
}

/// Reads bits most significant first.
struct BitReader<'a> {
    bytes: &'a [u8],
    bit: usize,
}

impl<'a> BitReader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, bit: 0 }
    }

    fn remaining(&self) -> usize {
        self.bytes.len() * 8 - self.bit
    }

    /// The next `n` (at most 64) bits as an unsigned number, or `None` past the end.
    fn read(&mut self, n: u32) -> Option<u64> {
        if n as usize > self.remaining() {
            return None;
        }
        let mut value = 0u64;
        let mut left = n;
        while left > 0 {
            let byte = self.bytes[self.bit / 8];
            let offset = (self.bit % 8) as u32;
            let take = left.min(8 - offset);
            let bits = (u64::from(byte) >> (8 - offset - take)) & ((1u64 << take) - 1);
            // `take` is at most 8, so the shift cannot overflow even at 64 bits in total.
            value = (value << take) | bits;
            left -= take;
            self.bit += take as usize;
        }
        Some(value)
    }

    fn varint(&mut self, values: usize) -> Result<u64, DeltaError> {
        let mut value = 0u64;
        for i in 0..10 {
            let byte = self.read(8).ok_or(DeltaError::Truncated(values))?;
            value |= (byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(DeltaError::LongVarint)
    }
}

fn mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// The `count` values after `base` that `bytes` encodes (absent ones `None`).
pub fn decode(bytes: &[u8], base: Option<u64>, count: usize) -> Result<Vec<Option<u64>>, DeltaError> {
    if bytes.is_empty() {
        return Ok(vec![base; count]);
    }
    let mut bits = BitReader::new(bytes);
    let truncated = DeltaError::Truncated(count);
    let encoding = bits.read(2).ok_or(truncated.clone())?;
    let delta_width = bits.read(6).ok_or(truncated.clone())? as u32 + 1;
    let (signed, optional, value_width) = match encoding {
        0 => (false, false, 64),
        1 => {
            let signed = bits.read(1).ok_or(truncated.clone())? == 1;
            let optional = bits.read(1).ok_or(truncated.clone())? == 1;
            (signed, optional, bits.read(6).ok_or(truncated.clone())? as u32 + 1)
        }
        other => return Err(DeltaError::UnknownEncoding(other)),
    };
    if delta_width > value_width {
        return Err(DeltaError::BadWidths { delta: delta_width, value: value_width });
    }
    // Every present value costs at least one bit (or one existence bit): a count the stream
    // cannot hold is refused before anything is allocated for it.
    if count > bits.remaining() {
        return Err(truncated);
    }
    let present: Vec<bool> = if optional {
        (0..count).map(|_| bits.read(1).map(|b| b == 1)).collect::<Option<_>>().ok_or(truncated.clone())?
    } else {
        vec![true; count]
    };
    let (delta_mask, value_mask) = (mask(delta_width), mask(value_width));
    let sign_bit = 1u64 << (delta_width - 1);
    let mut previous = base;
    let mut values = Vec::with_capacity(count);
    for exists in present {
        if !exists {
            values.push(None);
            continue;
        }
        let value = match previous {
            None => bits.varint(count)?,
            Some(prev) => {
                let delta = bits.read(delta_width).ok_or(truncated.clone())?;
                if signed && delta & sign_bit != 0 {
                    let magnitude = (!delta & delta_mask).wrapping_add(1);
                    prev.wrapping_sub(magnitude) & value_mask
                } else {
                    prev.wrapping_add(delta) & value_mask
                }
            }
        };
        values.push(Some(value));
        previous = Some(value);
    }
    Ok(values)
}

/// An `int64` field's value from its encoded form.
pub fn as_i64(value: u64) -> i64 {
    value as i64
}

/// An `int32` field's value from its encoded form (two's complement in 32 bits).
pub fn as_i32(value: u64) -> i32 {
    value as u32 as i32
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Writes bits most significant first: the test's own encoder, the mirror of the reader.
    #[derive(Default)]
    pub(crate) struct BitWriter {
        bytes: Vec<u8>,
        bit: usize,
    }

    impl BitWriter {
        pub(crate) fn write(&mut self, value: u64, n: u32) {
            for i in (0..n).rev() {
                if self.bit.is_multiple_of(8) {
                    self.bytes.push(0);
                }
                let b = ((value >> i) & 1) as u8;
                let last = self.bytes.len() - 1;
                self.bytes[last] |= b << (7 - self.bit % 8);
                self.bit += 1;
            }
        }

        pub(crate) fn into_bytes(self) -> Vec<u8> {
            self.bytes
        }
    }

    fn width(x: u64) -> u32 {
        (64 - x.leading_zeros()).max(1)
    }

    /// Encodes `values` after `base` the way the format allows: type 1 always, unsigned deltas
    /// at the widest needed width, values at 64 bits unless they wrap in fewer.
    pub(crate) fn encode(base: Option<u64>, values: &[Option<u64>], value_width: u32) -> Vec<u8> {
        let vmask = mask(value_width);
        let mut prev = base;
        let mut deltas = Vec::new();
        for v in values.iter().flatten() {
            if let Some(p) = prev {
                deltas.push(v.wrapping_sub(p) & vmask);
            }
            prev = Some(*v);
        }
        let delta_width = deltas.iter().map(|d| width(*d)).max().unwrap_or(1).min(value_width);
        let optional = base.is_none() || values.iter().any(Option::is_none);
        let mut w = BitWriter::default();
        w.write(1, 2);
        w.write(u64::from(delta_width - 1), 6);
        w.write(0, 1);
        w.write(u64::from(optional), 1);
        w.write(u64::from(value_width - 1), 6);
        if optional {
            for v in values {
                w.write(u64::from(v.is_some()), 1);
            }
        }
        let mut prev = base;
        for v in values.iter().flatten() {
            match prev {
                None => {
                    let mut x = *v;
                    loop {
                        let byte = x & 0x7f;
                        x >>= 7;
                        if x == 0 {
                            w.write(byte, 8);
                            break;
                        }
                        w.write(byte | 0x80, 8);
                    }
                }
                Some(p) => w.write(v.wrapping_sub(p) & vmask, delta_width),
            }
            prev = Some(*v);
        }
        w.into_bytes()
    }

    #[test]
    fn no_bytes_means_every_value_is_the_base() {
        assert_eq!(decode(&[], Some(7), 3).unwrap(), vec![Some(7); 3]);
        assert_eq!(decode(&[], None, 2).unwrap(), vec![None, None]);
    }

    #[test]
    fn type_zero_steps_by_unsigned_deltas_of_its_width() {
        // Type 0, delta width 3 (stored as 2): 00 000010, then deltas 1, 5, 0.
        let mut w = BitWriter::default();
        w.write(0, 2);
        w.write(2, 6);
        for d in [1, 5, 0] {
            w.write(d, 3);
        }
        assert_eq!(decode(&w.into_bytes(), Some(100), 3).unwrap(), vec![Some(101), Some(106), Some(106)]);
    }

    #[test]
    fn signed_deltas_step_back_and_values_wrap_in_their_width() {
        // Type 1, delta width 4, signed, not optional, value width 16: 65535 + 1 wraps to 0,
        // then -3 (1101 in four bits) gives 65533.
        let mut w = BitWriter::default();
        w.write(1, 2);
        w.write(3, 6);
        w.write(1, 1);
        w.write(0, 1);
        w.write(15, 6);
        w.write(1, 4);
        w.write(0b1101, 4);
        assert_eq!(decode(&w.into_bytes(), Some(65535), 2).unwrap(), vec![Some(0), Some(65533)]);
    }

    #[test]
    fn an_absent_base_makes_the_first_value_a_varint() {
        let bytes = encode(None, &[None, Some(300), Some(301)], 64);
        assert_eq!(decode(&bytes, None, 3).unwrap(), vec![None, Some(300), Some(301)]);
    }

    #[test]
    fn damage_is_an_error_not_a_panic() {
        assert_eq!(decode(&[0b1000_0000], Some(0), 1), Err(DeltaError::UnknownEncoding(2)));
        assert_eq!(decode(&[0b0000_0111], Some(0), 4), Err(DeltaError::Truncated(4)));
        // A claim of a billion values in two bytes is refused before allocating for them.
        assert_eq!(decode(&[0, 0], Some(0), 1_000_000_000), Err(DeltaError::Truncated(1_000_000_000)));
        // Delta width 8 over values of 4 bits.
        let mut w = BitWriter::default();
        w.write(1, 2);
        w.write(7, 6);
        w.write(0, 2);
        w.write(3, 6);
        assert_eq!(decode(&w.into_bytes(), Some(0), 1), Err(DeltaError::BadWidths { delta: 8, value: 4 }));
    }

    #[test]
    fn signed_fields_come_back_from_their_twos_complement() {
        assert_eq!(as_i32(u64::from(u32::MAX)), -1);
        assert_eq!(as_i64(u64::MAX), -1);
        assert_eq!(as_i32(5), 5);
    }

    proptest! {
        #[test]
        fn what_the_format_encodes_decodes_back(
            base in proptest::option::of(any::<u16>()),
            values in proptest::collection::vec(proptest::option::of(any::<u16>()), 1..200),
        ) {
            let base = base.map(u64::from);
            let values: Vec<Option<u64>> = values.into_iter().map(|v| v.map(u64::from)).collect();
            let bytes = encode(base, &values, 16);
            prop_assert_eq!(decode(&bytes, base, values.len()).unwrap(), values);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64), n in 0usize..600) {
            let _ = decode(&bytes, Some(1), n);
            let _ = decode(&bytes, None, n);
        }
    }
}
