//! The VP8 payload descriptor (RFC 7741 §4.2) at the start of every VP8 RTP payload: where the
//! packet sits in its frame and, with the picture ID, which frame it belongs to.
//!
//! ```text
//!       0 1 2 3 4 5 6 7
//!      +-+-+-+-+-+-+-+-+
//!      |X|R|N|S|R| PID | (required)
//!      +-+-+-+-+-+-+-+-+
//! X:   |I|L|T|K| RSV   | (optional)
//!      +-+-+-+-+-+-+-+-+
//! I:   |M| PictureID   | (optional; 7 bits, or 15 with M = 1 and a second byte)
//!      +-+-+-+-+-+-+-+-+
//! L:   |   TL0PICIDX   | (optional)
//!      +-+-+-+-+-+-+-+-+
//! T/K: |TID|Y| KEYIDX  | (optional)
//!      +-+-+-+-+-+-+-+-+
//! ```
//!
//! * **N**: a non-reference frame (no other frame needs it). **S**: the packet starts a VP8
//!   partition; with PID = 0, the frame.
//! * **PictureID**: a running index of frames, one more for each frame, wrapping at 2^15 in the
//!   15-bit form libwebrtc always writes. A receiver learns from it whether the frames before a
//!   complete one all arrived, whatever other packets (FEC, padding) share the sequence numbers:
//!   libwebrtc's `RtpVp8RefFinder` decodes a delta frame once the previous picture ID is decoded.
//!
//! [`Vp8DescriptorRepr::emit`] writes what libwebrtc writes for one temporal layer: X = 1,
//! I = 1, M = 1 and the 15-bit picture ID (4 bytes). The parser reads every form of the RFC; it
//! keeps S, N, PID and the picture ID and skips TL0PICIDX and TID/KEYIDX.

use crate::WireError;

/// Bytes of the descriptor as [`Vp8DescriptorRepr::emit`] writes it.
pub const DESCRIPTOR_LEN: usize = 4;
/// The 15-bit picture ID wraps here.
pub const PICTURE_ID_MODULO: u32 = 1 << 15;

const X: u8 = 0x80;
const N: u8 = 0x20;
const S: u8 = 0x10;
const I: u8 = 0x80;
const L: u8 = 0x40;
const T: u8 = 0x20;
const K: u8 = 0x10;
const M: u8 = 0x80;

/// The fields of a VP8 payload descriptor that rtcbench uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Vp8DescriptorRepr {
    /// N: no other frame references this one.
    pub non_reference: bool,
    /// S: the packet starts a partition.
    pub start_of_partition: bool,
    /// PID: the partition index, 3 bits.
    pub partition: u8,
    /// The picture ID (7 or 15 bits), if present.
    pub picture_id: Option<u16>,
}

impl Vp8DescriptorRepr {
    /// Parses the descriptor at the start of `payload` (the RTP payload); returns it and its
    /// length, where the VP8 data start.
    pub fn parse(payload: &[u8]) -> Result<(Self, usize), WireError> {
        let byte = |at: usize| {
            payload.get(at).copied().ok_or(WireError::Truncated {
                what: "VP8 payload descriptor",
                needed: at + 1,
                actual: payload.len(),
            })
        };
        let first = byte(0)?;
        let mut repr = Self {
            non_reference: first & N != 0,
            start_of_partition: first & S != 0,
            partition: first & 0x07,
            picture_id: None,
        };
        let mut at = 1;
        if first & X != 0 {
            let ext = byte(1)?;
            at = 2;
            if ext & I != 0 {
                let id = byte(at)?;
                if id & M != 0 {
                    repr.picture_id = Some(u16::from_be_bytes([id & 0x7F, byte(at + 1)?]));
                    at += 2;
                } else {
                    repr.picture_id = Some(u16::from(id));
                    at += 1;
                }
            }
            if ext & L != 0 {
                byte(at)?;
                at += 1;
            }
            if ext & (T | K) != 0 {
                byte(at)?;
                at += 1;
            }
        }
        Ok((repr, at))
    }

    /// Length as emitted: 4 bytes with a picture ID, 1 without.
    pub fn buffer_len(&self) -> usize {
        if self.picture_id.is_some() {
            DESCRIPTOR_LEN
        } else {
            1
        }
    }

    /// Writes the descriptor at the start of `buf` (see the module docs for the form); returns
    /// the bytes written. Errors when the picture ID exceeds 15 bits, the partition index 3 bits,
    /// or `buf` is too short.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        if self.partition > 0x07 {
            return Err(WireError::InvalidField {
                field: "partition",
                reason: format!("{} is above 7 (3 bits, RFC 7741 §4.2)", self.partition),
            });
        }
        if self.picture_id.is_some_and(|id| u32::from(id) >= PICTURE_ID_MODULO) {
            return Err(WireError::InvalidField {
                field: "picture_id",
                reason: format!("{:?} is above 32767 (15 bits, RFC 7741 §4.2)", self.picture_id),
            });
        }
        let (len, actual) = (self.buffer_len(), buf.len());
        let buf = buf.get_mut(..len).ok_or(WireError::BufferTooSmall {
            what: "VP8 payload descriptor",
            needed: len,
            actual,
        })?;
        let flags = if self.non_reference { N } else { 0 } | if self.start_of_partition { S } else { 0 };
        buf[0] = flags | self.partition;
        if let Some(id) = self.picture_id {
            buf[0] |= X;
            buf[1] = I;
            buf[2..4].copy_from_slice(&(id | u16::from(M) << 8).to_be_bytes());
        }
        Ok(len)
    }

    /// The descriptor's bytes; see [`emit`](Self::emit).
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

    #[test]
    fn libwebrtcs_form_by_hand() {
        // X=1, S=1, PID=0 | I=1 | M=1, picture ID 0x1234.
        let bytes = [0x90, 0x80, 0x92, 0x34];
        let repr =
            Vp8DescriptorRepr { start_of_partition: true, picture_id: Some(0x1234), ..Default::default() };
        assert_eq!(repr.to_bytes().unwrap(), bytes);
        assert_eq!(Vp8DescriptorRepr::parse(&bytes).unwrap(), (repr, 4));
    }

    #[test]
    fn every_optional_field_is_read_or_skipped() {
        // X=1, N=1, PID=2 | I, L, T | 7-bit picture ID 0x55 | TL0PICIDX | TID/Y/KEYIDX; data.
        let bytes = [0xA2, 0xE0, 0x55, 0x07, 0x40, 0xFF];
        let (repr, len) = Vp8DescriptorRepr::parse(&bytes).unwrap();
        assert_eq!(len, 5);
        assert_eq!(
            repr,
            Vp8DescriptorRepr {
                non_reference: true,
                start_of_partition: false,
                partition: 2,
                picture_id: Some(0x55)
            }
        );
        // The required byte alone.
        assert_eq!(Vp8DescriptorRepr::parse(&[0x10]).unwrap().1, 1);
    }

    #[test]
    fn truncated_and_invalid_descriptors_are_errors() {
        assert!(Vp8DescriptorRepr::parse(&[]).is_err());
        assert!(Vp8DescriptorRepr::parse(&[0x80]).is_err(), "X without its byte");
        assert!(Vp8DescriptorRepr::parse(&[0x80, 0x80, 0x80]).is_err(), "15-bit ID cut short");
        let too_big = Vp8DescriptorRepr { picture_id: Some(0x8000), ..Default::default() };
        assert!(too_big.to_bytes().is_err());
        assert!(Vp8DescriptorRepr { partition: 8, ..Default::default() }.to_bytes().is_err());
        assert!(Vp8DescriptorRepr::default().emit(&mut []).is_err());
    }

    proptest! {
        #[test]
        fn emit_then_parse_is_identity(n: bool, s: bool, pid in 0u8..8, id in proptest::option::of(0u16..0x8000)) {
            let repr = Vp8DescriptorRepr { non_reference: n, start_of_partition: s, partition: pid, picture_id: id };
            let bytes = repr.to_bytes().unwrap();
            prop_assert_eq!(Vp8DescriptorRepr::parse(&bytes).unwrap(), (repr, bytes.len()));
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..8)) {
            let _ = Vp8DescriptorRepr::parse(&bytes);
        }
    }
}
