//! The RTP fixed header (RFC 3550 §5.1) with one-byte header extensions (RFC 8285 §4.2).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |V=2|P|X|  CC   |M|     PT      |       sequence number         |
//! |                           timestamp                           |
//! |                             SSRC                              |
//! |            CSRC list (CC × 32 bits)                           |
//! |      0xBE     |      0xDE     |   length (32-bit words)       |  (if X)
//! |  ID   |  len  |  data (len+1 bytes) ...   | 0-padding to 32 bits
//! ```
//!
//! The extension IDs are fixed in rtcbench rather than negotiated through SDP `a=extmap`:
//! [`ABS_SEND_TIME_ID`], [`TRANSPORT_CC_ID`] and [`FRAME_MARKING_ID`].
//!
//! # Header-only buffers and the P bit
//!
//! In the simulator a packet travels as its header bytes plus a payload *length*; payload and
//! padding bytes never exist. RFC 3550 puts the padding count in the last octet of the packet,
//! after the payload, so header bytes alone cannot carry it, and `rtp-types`' `RtpPacket::parse`
//! (which reads that last octet) rejects a header-only buffer whose P bit is set. Hence:
//!
//! * [`RtpHeaderRepr::parse`] reads header bytes only (anything after the header is ignored) with
//!   this crate's [`RtpHeader`] view. The P bit is reported separately by
//!   [`RtpHeader::padding_bit`]; the returned `padding_len` is always 0.
//! * [`RtpHeaderRepr::parse_packet`] reads a complete packet (live mode, captures). It lets
//!   `rtp_types::RtpPacket` validate the padding and fills in `padding_len`.
//! * [`RtpHeaderRepr::emit`] writes the header bytes (through `rtp-types`' builder) and sets the
//!   P bit when `padding_len > 0`; the padding octets belong to the payload and are not written.
//!
//! rtcbench has no mixers, and writes at most one CSRC: the protected stream's SSRC in a FlexFEC
//! repair packet (RFC 8627 §4.1). Parsing keeps the first CSRC and skips any others. Extension
//! blocks with a profile other than 0xBEDE (e.g. RFC 8285 §4.3 two-byte headers) are skipped.

use rtcbench_units::{DataSize, Duration, Instant, SeqNo};

use crate::{div_round, WireError};

/// One-byte-header extension ID of abs-send-time
/// (`http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time`): 3 bytes, 6.18 fixed-point
/// seconds.
pub const ABS_SEND_TIME_ID: u8 = 2;
/// One-byte-header extension ID of the transport-wide sequence number
/// (draft-holmer-rmcat-transport-wide-cc-extensions-01 §2): 2 bytes.
pub const TRANSPORT_CC_ID: u8 = 4;
/// One-byte-header extension ID of video frame marking (RFC 9626 §3.1): 1 byte (3 in the
/// scalable form, which is accepted on parse).
pub const FRAME_MARKING_ID: u8 = 5;

/// The "defined by profile" value of a one-byte-header extension block (RFC 8285 §4.2).
pub const ONE_BYTE_PROFILE: u16 = 0xBEDE;
/// Length of the fixed RTP header without CSRCs (RFC 3550 §5.1).
pub const FIXED_HEADER_LEN: usize = 12;
/// Bytes of one CSRC in the list after the fixed header.
pub const CSRC_LEN: usize = 4;
/// Bytes an IPv4 (20) and UDP (8) header add to every RTP or RTCP packet on the wire.
pub const IPV4_UDP_OVERHEAD: DataSize = DataSize::bytes(28);

const ABS_SEND_TIME_LEN: usize = 3;
const TRANSPORT_CC_LEN: usize = 2;
const FRAME_MARKING_LEN: usize = 1;
/// RFC 9626 §3.2 scalable-stream form (adds TID/LID/TL0PICIDX, which rtcbench ignores).
const FRAME_MARKING_SCALABLE_LEN: usize = 3;
/// ID 15 ends parsing of a one-byte extension block (RFC 8285 §4.2).
const ID_STOP: u8 = 15;

/// 2^18: abs-send-time ticks per second.
const ABS_SEND_TIME_TICKS_PER_SEC: i128 = 1 << 18;
/// abs-send-time wraps every 64 s (6 integer bits).
const ABS_SEND_TIME_WRAP_MICROS: i64 = 64_000_000;

/// The frame-marking bits rtcbench uses (RFC 9626 §3.1, first byte of the extension):
/// `S E I D 0 0 0 0` with S = 0x80, E = 0x40, I = 0x20. D (discardable, 0x10) and the scalable
/// fields are not modelled; they are written as 0 and ignored on parse.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FrameMarking {
    /// S: the first packet of a frame.
    pub start: bool,
    /// E: the last packet of a frame.
    pub end: bool,
    /// I: the frame can be decoded without earlier frames (a keyframe).
    pub independent: bool,
}

impl FrameMarking {
    const START: u8 = 0x80;
    const END: u8 = 0x40;
    const INDEPENDENT: u8 = 0x20;

    /// The first extension byte.
    pub const fn to_byte(self) -> u8 {
        (if self.start { Self::START } else { 0 })
            | (if self.end { Self::END } else { 0 })
            | (if self.independent { Self::INDEPENDENT } else { 0 })
    }

    /// Reads S, E and I from the first extension byte; other bits are ignored.
    pub const fn from_byte(b: u8) -> Self {
        Self { start: b & Self::START != 0, end: b & Self::END != 0, independent: b & Self::INDEPENDENT != 0 }
    }
}

/// The 24-bit abs-send-time of `t`: seconds modulo 64 in unsigned 6.18 fixed point, rounded to
/// the nearest tick (3.8 µs). Instants before zero wrap like any other.
pub fn abs_send_time_from(t: Instant) -> u32 {
    let us = t.as_micros().rem_euclid(ABS_SEND_TIME_WRAP_MICROS) as i128;
    // Rounding up just below 64 s gives 2^24, which is 0 again after the mask, as it should.
    (div_round(us * ABS_SEND_TIME_TICKS_PER_SEC, 1_000_000) as u32) & 0x00FF_FFFF
}

/// `a - b` for two abs-send-time values, correct across the 64 s wrap as long as the true
/// difference is within ±32 s.
///
/// As libwebrtc's inter-arrival code does, both values are shifted to the top of a 32-bit word so
/// that wrapping subtraction and a signed reinterpretation handle the wrap.
pub fn abs_send_time_delta(a: u32, b: u32) -> Duration {
    let ticks = ((a << 8).wrapping_sub(b << 8) as i32) >> 8;
    Duration::from_micros(div_round(ticks as i128 * 1_000_000, ABS_SEND_TIME_TICKS_PER_SEC) as i64)
}

/// A checked read-only view of the RTP header at the start of `buf` (RFC 3550 §5.1).
///
/// [`new_checked`](Self::new_checked) verifies the version and that the CSRC list and extension
/// block fit, so the accessors cannot go out of bounds. It does not look past the header, so it
/// works on header-only buffers (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct RtpHeader<'a> {
    buf: &'a [u8],
    header_len: usize,
}

impl<'a> RtpHeader<'a> {
    /// Checks that `buf` starts with a complete version-2 RTP header.
    pub fn new_checked(buf: &'a [u8]) -> Result<Self, WireError> {
        let truncated = |what, needed| WireError::Truncated { what, needed, actual: buf.len() };
        if buf.len() < FIXED_HEADER_LEN {
            return Err(truncated("RTP fixed header", FIXED_HEADER_LEN));
        }
        let version = buf[0] >> 6;
        if version != 2 {
            return Err(WireError::BadVersion { what: "RTP", version });
        }
        let mut header_len = FIXED_HEADER_LEN + 4 * usize::from(buf[0] & 0x0F);
        if buf.len() < header_len {
            return Err(truncated("RTP CSRC list", header_len));
        }
        if buf[0] & 0x10 != 0 {
            if buf.len() < header_len + 4 {
                return Err(truncated("RTP header extension header", header_len + 4));
            }
            let words = usize::from(u16::from_be_bytes([buf[header_len + 2], buf[header_len + 3]]));
            header_len += 4 + 4 * words;
            if buf.len() < header_len {
                return Err(truncated("RTP header extension", header_len));
            }
        }
        Ok(Self { buf, header_len })
    }

    /// Bytes of fixed header, CSRC list and extension block: where the payload starts.
    pub fn header_len(&self) -> usize {
        self.header_len
    }
    /// P: the packet ends with padding whose count is its last octet.
    pub fn padding_bit(&self) -> bool {
        self.buf[0] & 0x20 != 0
    }
    /// X: an extension block follows the CSRC list.
    pub fn extension_bit(&self) -> bool {
        self.buf[0] & 0x10 != 0
    }
    /// CC: number of CSRCs.
    pub fn csrc_count(&self) -> usize {
        usize::from(self.buf[0] & 0x0F)
    }
    /// M: marker bit (for video, the last packet of a frame).
    pub fn marker(&self) -> bool {
        self.buf[1] & 0x80 != 0
    }
    /// PT: payload type, 7 bits.
    pub fn payload_type(&self) -> u8 {
        self.buf[1] & 0x7F
    }
    /// The 16-bit RTP sequence number.
    pub fn sequence_number(&self) -> SeqNo<16> {
        SeqNo::new(u64::from(u16::from_be_bytes([self.buf[2], self.buf[3]])))
    }
    /// The RTP timestamp, in media clock units.
    pub fn timestamp(&self) -> u32 {
        u32::from_be_bytes([self.buf[4], self.buf[5], self.buf[6], self.buf[7]])
    }
    /// The synchronisation source.
    pub fn ssrc(&self) -> u32 {
        u32::from_be_bytes([self.buf[8], self.buf[9], self.buf[10], self.buf[11]])
    }
    /// The first contributing source, if CC ≥ 1.
    pub fn first_csrc(&self) -> Option<u32> {
        let b =
            self.buf.get(FIXED_HEADER_LEN..FIXED_HEADER_LEN + CSRC_LEN).filter(|_| self.csrc_count() > 0)?;
        Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    /// The extension block's profile value and data (without its 4-byte header), if X is set.
    pub fn extension(&self) -> Option<(u16, &'a [u8])> {
        if !self.extension_bit() {
            return None;
        }
        let start = FIXED_HEADER_LEN + 4 * self.csrc_count();
        let profile = u16::from_be_bytes([self.buf[start], self.buf[start + 1]]);
        Some((profile, &self.buf[start + 4..self.header_len]))
    }
}

/// The fields of an RTP header that rtcbench uses, with its header extensions decoded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct RtpHeaderRepr {
    /// PT, 7 bits.
    pub payload_type: u8,
    /// M, the marker bit.
    pub marker: bool,
    /// The RTP sequence number (per SSRC).
    pub seq: SeqNo<16>,
    /// The RTP timestamp, in media clock units.
    pub timestamp: u32,
    /// The synchronisation source.
    pub ssrc: u32,
    /// The first contributing source (CC ≥ 1); rtcbench writes one only in FlexFEC repair
    /// packets, where it names the protected stream (RFC 8627 §4.1).
    pub csrc: Option<u32>,
    /// abs-send-time: 24-bit, 6.18 fixed-point seconds; see [`abs_send_time_from`].
    pub abs_send_time: Option<u32>,
    /// The transport-wide sequence number (TWCC-01 §2), shared by all SSRCs of the transport.
    pub transport_seq: Option<SeqNo<16>>,
    /// Frame marking (RFC 9626).
    pub frame_marking: Option<FrameMarking>,
    /// RTP padding octets at the end of the payload, including the count octet itself; 0 means
    /// no padding (P bit clear). Not part of [`buffer_len`](Self::buffer_len): the padding
    /// follows the payload. See the module docs for how parsing reports it.
    pub padding_len: u8,
}

impl RtpHeaderRepr {
    /// Bytes of extension elements (ID/len byte plus data), before padding to 32 bits.
    fn extension_elements_len(&self) -> usize {
        self.abs_send_time.map_or(0, |_| 1 + ABS_SEND_TIME_LEN)
            + self.transport_seq.map_or(0, |_| 1 + TRANSPORT_CC_LEN)
            + self.frame_marking.map_or(0, |_| 1 + FRAME_MARKING_LEN)
    }

    /// Length of the header as emitted: 12 bytes, 4 for the CSRC if there is one, and, if any
    /// extension is present, the 4-byte extension header and the elements padded to a multiple
    /// of 4. Excludes payload and padding.
    pub fn buffer_len(&self) -> usize {
        let fixed = FIXED_HEADER_LEN + if self.csrc.is_some() { CSRC_LEN } else { 0 };
        match self.extension_elements_len() {
            0 => fixed,
            n => fixed + 4 + n.next_multiple_of(4),
        }
    }

    /// Writes the header into the start of `buf` and returns the bytes written
    /// ([`buffer_len`](Self::buffer_len)).
    ///
    /// Extension elements are written in ID order with the one-byte form. Errors when `buf` is
    /// too short, `payload_type` is above 127 or `abs_send_time` above 24 bits.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let needed = self.buffer_len();
        if buf.len() < needed {
            return Err(WireError::BufferTooSmall { what: "RTP header", needed, actual: buf.len() });
        }
        if self.payload_type > 0x7F {
            return Err(WireError::InvalidField {
                field: "payload_type",
                reason: format!("{} is above 127 (7 bits, RFC 3550 §5.1)", self.payload_type),
            });
        }

        // At most (1+3) + (1+2) + (1+1) = 9 bytes of elements, padded to 12.
        let mut ext = [0u8; 12];
        let mut n = 0;
        if let Some(abs) = self.abs_send_time {
            if abs > 0x00FF_FFFF {
                return Err(WireError::InvalidField {
                    field: "abs_send_time",
                    reason: format!("{abs:#x} does not fit in 24 bits"),
                });
            }
            ext[n] = element_header(ABS_SEND_TIME_ID, ABS_SEND_TIME_LEN);
            ext[n + 1..n + 4].copy_from_slice(&abs.to_be_bytes()[1..]);
            n += 1 + ABS_SEND_TIME_LEN;
        }
        if let Some(seq) = self.transport_seq {
            ext[n] = element_header(TRANSPORT_CC_ID, TRANSPORT_CC_LEN);
            ext[n + 1..n + 3].copy_from_slice(&(seq.value() as u16).to_be_bytes());
            n += 1 + TRANSPORT_CC_LEN;
        }
        if let Some(fm) = self.frame_marking {
            ext[n] = element_header(FRAME_MARKING_ID, FRAME_MARKING_LEN);
            ext[n + 1] = fm.to_byte();
            n += 1 + FRAME_MARKING_LEN;
        }

        let mut builder = rtp_types::RtpPacketBuilder::<&[u8], &[u8]>::new()
            .payload_type(self.payload_type)
            .marker_bit(self.marker)
            .sequence_number(self.seq.value() as u16)
            .timestamp(self.timestamp)
            .ssrc(self.ssrc);
        if let Some(csrc) = self.csrc {
            builder = builder.add_csrc(csrc);
        }
        if n > 0 {
            builder = builder.extension(ONE_BYTE_PROFILE, &ext[..n.next_multiple_of(4)]);
        }
        // The checks above cover every error rtp-types can return for this builder.
        let written = builder
            .write_into(&mut buf[..needed])
            .map_err(|e| WireError::InvalidField { field: "RTP header", reason: e.to_string() })?;
        debug_assert_eq!(written, needed);
        if self.padding_len > 0 {
            buf[0] |= 0x20;
        }
        Ok(written)
    }

    /// Parses the header at the start of `bytes`, which may be header-only or a whole packet;
    /// returns the header and its length (where the payload starts).
    ///
    /// `padding_len` is always 0 because the padding count is not in the header: read the P bit
    /// with [`RtpHeader::padding_bit`], or use [`parse_packet`](Self::parse_packet) on a complete
    /// packet. Unknown extension IDs are skipped; a known ID with the wrong length is an error.
    pub fn parse(bytes: &[u8]) -> Result<(Self, usize), WireError> {
        let header = RtpHeader::new_checked(bytes)?;
        let mut repr = Self {
            payload_type: header.payload_type(),
            marker: header.marker(),
            seq: header.sequence_number(),
            timestamp: header.timestamp(),
            ssrc: header.ssrc(),
            csrc: header.first_csrc(),
            ..Self::default()
        };
        if let Some((ONE_BYTE_PROFILE, data)) = header.extension() {
            repr.parse_one_byte_elements(data)?;
        }
        Ok((repr, header.header_len()))
    }

    /// Parses a complete RTP packet (header, payload and padding); returns the header, with
    /// `padding_len` read from the last octet, and the header length.
    ///
    /// The payload is `&packet[header_len..packet.len() - padding_len]`.
    pub fn parse_packet(packet: &[u8]) -> Result<(Self, usize), WireError> {
        // rtp-types checks the padding count against the payload length.
        let rtp = rtp_types::RtpPacket::parse(packet)?;
        let (mut repr, header_len) = Self::parse(packet)?;
        debug_assert_eq!(header_len, rtp.payload_offset());
        repr.padding_len = rtp.padding().unwrap_or(0);
        Ok((repr, header_len))
    }

    /// Decodes one-byte elements (RFC 8285 §4.2) into the extension fields.
    fn parse_one_byte_elements(&mut self, data: &[u8]) -> Result<(), WireError> {
        let mut i = 0;
        while i < data.len() {
            let id = data[i] >> 4;
            if id == 0 {
                // A padding byte; its length nibble is ignored (RFC 8285 §4.2).
                i += 1;
                continue;
            }
            if id == ID_STOP {
                break;
            }
            let len = usize::from(data[i] & 0x0F) + 1;
            let value = data.get(i + 1..i + 1 + len).ok_or_else(|| WireError::BadExtension {
                id,
                reason: format!(
                    "element of {len} bytes at offset {i} runs past the {}-byte block",
                    data.len()
                ),
            })?;
            match id {
                ABS_SEND_TIME_ID => {
                    expect_len(id, "abs-send-time", value, &[ABS_SEND_TIME_LEN])?;
                    self.abs_send_time = Some(u32::from_be_bytes([0, value[0], value[1], value[2]]));
                }
                TRANSPORT_CC_ID => {
                    expect_len(id, "transport-wide sequence number", value, &[TRANSPORT_CC_LEN])?;
                    let seq = u16::from_be_bytes([value[0], value[1]]);
                    self.transport_seq = Some(SeqNo::new(u64::from(seq)));
                }
                FRAME_MARKING_ID => {
                    let lens = [FRAME_MARKING_LEN, FRAME_MARKING_SCALABLE_LEN];
                    expect_len(id, "frame marking", value, &lens)?;
                    self.frame_marking = Some(FrameMarking::from_byte(value[0]));
                }
                // Extensions rtcbench does not use: skipped, as RFC 8285 §4.1 asks of receivers.
                _ => {}
            }
            i += 1 + len;
        }
        Ok(())
    }
}

/// The ID/len byte of a one-byte element; the len nibble is the data length minus one.
const fn element_header(id: u8, data_len: usize) -> u8 {
    (id << 4) | (data_len as u8 - 1)
}

fn expect_len(id: u8, name: &str, value: &[u8], allowed: &[usize]) -> Result<(), WireError> {
    if allowed.contains(&value.len()) {
        return Ok(());
    }
    Err(WireError::BadExtension {
        id,
        reason: format!("{name} has {} data bytes, expected {allowed:?}", value.len()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A video packet header written by hand from RFC 3550 §5.1 and RFC 8285 §4.2.
    const VIDEO_HEADER: [u8; 28] = [
        0x90, // V=2 (10), P=0, X=1, CC=0
        0xEF, // M=1, PT=111 (0x6F)
        0x12, 0x34, // sequence number 0x1234
        0xDE, 0xAD, 0xBE, 0xEF, // timestamp
        0x01, 0x02, 0x03, 0x04, // SSRC
        0xBE, 0xDE, // one-byte extension profile
        0x00, 0x03, // extension length: 3 words
        0x22, 0x12, 0x34, 0x56, // ID 2 (abs-send-time), len 3-1 = 2: 0x123456
        0x41, 0x00, 0x2A, // ID 4 (transport seq), len 2-1 = 1: 42
        0x50, 0xE0, // ID 5 (frame marking), len 1-1 = 0: S, E and I set
        0x00, 0x00, 0x00, // padding to the 32-bit boundary
    ];

    fn video_repr() -> RtpHeaderRepr {
        RtpHeaderRepr {
            payload_type: 111,
            marker: true,
            seq: SeqNo::new(0x1234),
            timestamp: 0xDEAD_BEEF,
            ssrc: 0x0102_0304,
            csrc: None,
            abs_send_time: Some(0x12_3456),
            transport_seq: Some(SeqNo::new(42)),
            frame_marking: Some(FrameMarking { start: true, end: true, independent: true }),
            padding_len: 0,
        }
    }

    #[test]
    fn hand_written_header_parses_and_emits_identically() {
        assert_eq!(RtpHeaderRepr::parse(&VIDEO_HEADER), Ok((video_repr(), 28)));
        let mut buf = [0xFFu8; 28];
        assert_eq!(video_repr().emit(&mut buf), Ok(28));
        assert_eq!(buf, VIDEO_HEADER);
    }

    #[test]
    fn buffer_len_pads_the_extension_block_to_32_bits() {
        let plain = RtpHeaderRepr::default();
        assert_eq!(plain.buffer_len(), 12);
        // Audio: 12 + 4 + (1+3 abs-send-time) + (1+2 transport seq) = 23 -> 24.
        let audio = RtpHeaderRepr {
            abs_send_time: Some(1),
            transport_seq: Some(SeqNo::new(1)),
            ..RtpHeaderRepr::default()
        };
        assert_eq!(audio.buffer_len(), 24);
        // Video: 12 + 4 + (4 + 3 + 2) = 25 -> 28.
        assert_eq!(video_repr().buffer_len(), 28);
        // Frame marking alone: 12 + 4 + 2 -> 20.
        let fm = RtpHeaderRepr { frame_marking: Some(FrameMarking::default()), ..plain };
        assert_eq!(fm.buffer_len(), 20);
    }

    #[test]
    fn parser_skips_padding_and_unknown_ids_and_stops_at_id_15() {
        let bytes = [
            0x90, 0x60, 0x00, 0x01, 0, 0, 0, 9, 0, 0, 0, 7, // V=2, X=1, PT=96, seq 1
            0xBE, 0xDE, 0x00, 0x03, // 3 words of elements
            0x00, // padding byte between elements
            0x31, 0xAA, 0xBB, // ID 3 (not used by rtcbench), 2 bytes: skipped
            0x41, 0x01, 0x02, // ID 4, transport seq 0x0102
            0xF0, // ID 15: stop, the rest must be ignored
            0x22, 0xFF, 0xFF, 0xFF, // would be abs-send-time
        ];
        let (repr, len) = RtpHeaderRepr::parse(&bytes).unwrap();
        assert_eq!(len, 28);
        assert_eq!(repr.transport_seq, Some(SeqNo::new(0x0102)));
        assert_eq!(repr.abs_send_time, None);
    }

    #[test]
    fn csrcs_and_foreign_profiles_are_skipped() {
        let bytes = [
            0x91, 0x60, 0x00, 0x01, 0, 0, 0, 9, 0, 0, 0, 7, // X=1, CC=1
            0xCA, 0xFE, 0xBA, 0xBE, // one CSRC
            0x10, 0x00, 0x00, 0x01, // two-byte-form profile (RFC 8285 §4.3), 1 word
            0x04, 0x02, 0x01, 0x02, // ID 4, len 2: would be a transport seq
        ];
        let (repr, len) = RtpHeaderRepr::parse(&bytes).unwrap();
        assert_eq!(len, 24);
        assert_eq!(repr.transport_seq, None);
        assert_eq!(repr.csrc, Some(0xCAFE_BABE));
    }

    /// A FlexFEC repair packet's header written by hand (RFC 3550 §5.1, RFC 8627 §4.1): the
    /// protected stream's SSRC as the one CSRC, before the extension block.
    #[test]
    fn one_csrc_is_written_before_the_extensions() {
        let repr = RtpHeaderRepr {
            payload_type: 49,
            seq: SeqNo::new(0x0102),
            timestamp: 0x0A0B_0C0D,
            ssrc: 0x1111_2222,
            csrc: Some(0x0102_0304),
            transport_seq: Some(SeqNo::new(9)),
            ..RtpHeaderRepr::default()
        };
        let expected = [
            0x91, // V=2, P=0, X=1, CC=1
            0x31, // M=0, PT=49
            0x01, 0x02, // sequence number
            0x0A, 0x0B, 0x0C, 0x0D, // timestamp
            0x11, 0x11, 0x22, 0x22, // SSRC
            0x01, 0x02, 0x03, 0x04, // CSRC: the protected stream
            0xBE, 0xDE, 0x00, 0x01, // one-byte extensions, 1 word
            0x41, 0x00, 0x09, 0x00, // ID 4 (transport seq) 9, padding
        ];
        assert_eq!(repr.buffer_len(), expected.len());
        let mut buf = [0u8; 24];
        assert_eq!(repr.emit(&mut buf), Ok(24));
        assert_eq!(buf, expected);
        assert_eq!(RtpHeaderRepr::parse(&expected), Ok((repr, 24)));
    }

    #[test]
    fn malformed_headers_are_errors() {
        assert!(matches!(RtpHeaderRepr::parse(&VIDEO_HEADER[..11]), Err(WireError::Truncated { .. })));
        assert!(matches!(RtpHeaderRepr::parse(&VIDEO_HEADER[..27]), Err(WireError::Truncated { .. })));
        let mut v1 = VIDEO_HEADER;
        v1[0] = 0x50;
        assert_eq!(RtpHeaderRepr::parse(&v1), Err(WireError::BadVersion { what: "RTP", version: 1 }));
        // abs-send-time announced with 4 bytes instead of 3.
        let mut wrong_len = VIDEO_HEADER;
        wrong_len[16] = 0x23;
        assert!(matches!(RtpHeaderRepr::parse(&wrong_len), Err(WireError::BadExtension { id: 2, .. })));
        // The last element claims 16 bytes that the block does not have.
        let mut overrun = VIDEO_HEADER;
        overrun[23] = 0x5F;
        assert!(matches!(RtpHeaderRepr::parse(&overrun), Err(WireError::BadExtension { id: 5, .. })));
        let mut small = [0u8; 27];
        assert!(matches!(video_repr().emit(&mut small), Err(WireError::BufferTooSmall { .. })));
        let bad_pt = RtpHeaderRepr { payload_type: 128, ..video_repr() };
        assert!(matches!(bad_pt.emit(&mut [0; 28]), Err(WireError::InvalidField { .. })));
    }

    #[test]
    fn padding_bit_on_header_only_and_full_packets() {
        let repr = RtpHeaderRepr { padding_len: 3, ..video_repr() };
        let mut packet = vec![0u8; 28];
        repr.emit(&mut packet).unwrap();
        // Header only: parses, P bit visible through the view, padding_len unknown (0).
        assert!(RtpHeader::new_checked(&packet).unwrap().padding_bit());
        assert_eq!(RtpHeaderRepr::parse(&packet), Ok((video_repr(), 28)));
        // Whole packet: 5 payload bytes, then 2 zero bytes and the count 3 (RFC 3550 §5.1).
        packet.extend_from_slice(&[1, 2, 3, 4, 5, 0, 0, 3]);
        assert_eq!(RtpHeaderRepr::parse_packet(&packet), Ok((repr, 28)));
        // A count larger than the payload is rejected.
        *packet.last_mut().unwrap() = 9;
        assert!(RtpHeaderRepr::parse_packet(&packet).is_err());
    }

    #[test]
    fn abs_send_time_is_6_18_fixed_point_mod_64_s() {
        assert_eq!(abs_send_time_from(Instant::ZERO), 0);
        assert_eq!(abs_send_time_from(Instant::from_secs(1)), 1 << 18);
        assert_eq!(abs_send_time_from(Instant::from_millis(1500)), 3 << 17);
        assert_eq!(abs_send_time_from(Instant::from_secs(64)), 0);
        assert_eq!(abs_send_time_from(Instant::from_micros(63_999_999)), 0);
        assert_eq!(abs_send_time_from(Instant::from_micros(63_999_990)), 0xFF_FFFF - 2);
        assert_eq!(abs_send_time_from(Instant::from_secs(-1)), 63 << 18);
        // 20 ms apart across the wrap, in both directions: 2621 and 16774595 ticks, 5242 ticks
        // apart, which is 19996.6 us.
        let a = abs_send_time_from(Instant::from_millis(64_010));
        let b = abs_send_time_from(Instant::from_millis(63_990));
        assert_eq!((a, b), (2621, 16_774_595));
        assert_eq!(abs_send_time_delta(a, b), Duration::from_micros(19_997));
        assert_eq!(abs_send_time_delta(b, a), Duration::from_micros(-19_997));
        // Multiples of 1/64 s are exact in 6.18 fixed point.
        let c = abs_send_time_from(Instant::from_micros(63_984_375));
        let d = abs_send_time_from(Instant::from_micros(64_015_625));
        assert_eq!((c, d), ((1 << 24) - 4096, 4096));
        assert_eq!(abs_send_time_delta(d, c), Duration::from_micros(31_250));
    }

    fn arb_repr() -> impl Strategy<Value = RtpHeaderRepr> {
        (
            (0u8..128, any::<bool>(), any::<u16>(), any::<u32>(), any::<u32>()),
            proptest::option::of(0u32..1 << 24),
            proptest::option::of(any::<u16>()),
            proptest::option::of((any::<bool>(), any::<bool>(), any::<bool>())),
            proptest::option::of(any::<u32>()),
        )
            .prop_map(|((payload_type, marker, seq, timestamp, ssrc), abs, tseq, fm, csrc)| {
                RtpHeaderRepr {
                    payload_type,
                    marker,
                    seq: SeqNo::new(u64::from(seq)),
                    timestamp,
                    ssrc,
                    csrc,
                    abs_send_time: abs,
                    transport_seq: tseq.map(|s| SeqNo::new(u64::from(s))),
                    frame_marking: fm.map(|(start, end, independent)| FrameMarking {
                        start,
                        end,
                        independent,
                    }),
                    padding_len: 0,
                }
            })
    }

    proptest! {
        #[test]
        fn emit_then_parse_round_trips(repr in arb_repr(), trailing in 0usize..8) {
            // Payload bytes after the header must not disturb header parsing.
            let mut buf = vec![0xA5u8; repr.buffer_len() + trailing];
            let n = repr.emit(&mut buf).unwrap();
            prop_assert_eq!(n, repr.buffer_len());
            prop_assert_eq!(n % 4, 0);
            prop_assert_eq!(RtpHeaderRepr::parse(&buf), Ok((repr, n)));
        }

        #[test]
        fn abs_send_time_delta_inverts_for_spans_under_32_s(
            t in 0i64..1_000_000_000_000, d in -31_000_000i64..31_000_000,
        ) {
            let a = abs_send_time_from(Instant::from_micros(t + d));
            let b = abs_send_time_from(Instant::from_micros(t));
            // Each value is rounded to 1/2^18 s (±1.9 µs), and the delta once more.
            let err = abs_send_time_delta(a, b) - Duration::from_micros(d);
            prop_assert!(err.abs() <= Duration::from_micros(5), "error {}", err);
        }

        #[test]
        fn parsing_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = RtpHeaderRepr::parse(&bytes);
            let _ = RtpHeaderRepr::parse_packet(&bytes);
        }

        #[test]
        fn parsing_mutated_headers_never_panics(
            edits in proptest::collection::vec((0usize..28, any::<u8>()), 1..6), cut in 0usize..=28,
        ) {
            let mut bytes = VIDEO_HEADER;
            for (at, value) in edits {
                bytes[at] = value;
            }
            let _ = RtpHeaderRepr::parse(&bytes[..cut]);
            let _ = RtpHeaderRepr::parse_packet(&bytes[..cut]);
        }
    }
}
