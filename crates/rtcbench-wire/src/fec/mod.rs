//! Parity forward error correction for RTP: the FEC headers of ULPFEC (RFC 5109) and FlexFEC
//! (RFC 8627), and the XOR over the protected packets' header fields that both share.
//!
//! * [`ulpfec`]: the RFC 5109 FEC header (§7.3) and level-0 ULP header (§7.4).
//! * [`flexfec`]: the RFC 8627 FEC header (§4.2) with the flexible mask (R=0, F=0).
//! * [`FecHeader`]: either header, as a receiver keeps it for recovery.
//! * [`decoder`]: recovery at a receiver from the FEC packets (of either scheme) and media that
//!   arrived.
//!
//! An FEC packet protects a set of source packets of one stream, named by an SN base and a
//! mask. Its header's *recovery* fields (P, X, CC, M, PT, TS and length recovery) are the XOR
//! of the same fields of the protected packets, where "length" counts every byte after the
//! 12-byte fixed RTP header: CSRC list, header extension, payload and padding (RFC 5109 §7.3,
//! RFC 8627 §4.2.2.1). When exactly one protected packet is lost, XOR-ing the recovery fields
//! with those of the packets that arrived gives the lost one's fields back, and the mask gives
//! its sequence number (RFC 5109 §9, RFC 8627 §6.3). [`RecoveryFields`] is that XOR;
//! [`UlpfecHeaderRepr::protect`](ulpfec::UlpfecHeaderRepr::protect) and
//! [`FlexfecHeaderRepr::protect`](flexfec::FlexfecHeaderRepr::protect) build a header for a
//! set of [`ProtectedPacket`]s, and their `recover` methods undo it.
//!
//! # Payloads are mostly zeros
//!
//! The FEC payload is the XOR of the protected packets' bytes after their fixed headers, zero
//! padded to the longest. rtcbench's simulator writes only the first of those bytes (the header
//! extension and the payload format's descriptor); the rest of a payload is a length whose bytes
//! are zeros, and XOR-ing zeros changes nothing. So the FEC payload is [`xor_bytes`] of the
//! written bytes followed by zeros up to the longest protected length (which ULPFEC also writes
//! as its level-0 protection length), and a recovered packet is its header fields, its length
//! and its written bytes ([`decoder`]).
//!
//! The SSRC is not protected: a ULPFEC packet sent inside RED (RFC 2198), as WebRTC sends it,
//! travels in the stream it protects, and a FlexFEC packet names the protected stream in its RTP
//! header's CSRC list (RFC 8627 §4.1); the caller knows it.

pub mod decoder;
pub mod flexfec;
pub mod ulpfec;

use rtcbench_units::{DataSize, SeqNo};

use crate::rtp::{RtpHeaderRepr, FIXED_HEADER_LEN};
use crate::WireError;
use flexfec::FlexfecHeaderRepr;
use ulpfec::UlpfecHeaderRepr;

/// The XOR of byte strings, each zero-padded to the longest: an FEC packet's payload over the
/// protected packets' bytes after their fixed headers (RFC 5109 §8), and, XOR-ed again with the
/// bytes of the packets that arrived, the missing packet's (§9).
pub fn xor_bytes<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out: Vec<u8> = Vec::new();
    for part in parts {
        if part.len() > out.len() {
            out.resize(part.len(), 0);
        }
        out.iter_mut().zip(part).for_each(|(o, b)| *o ^= b);
    }
    out
}

/// What FEC protects of one source packet: the header fields the recovery fields cover, its
/// sequence number, and its length.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ProtectedPacket {
    /// The RTP sequence number, told by the mask rather than XOR-ed.
    pub seq: SeqNo<16>,
    /// P: the packet ends with padding.
    pub padding: bool,
    /// X: the packet has a header extension.
    pub extension: bool,
    /// CC: number of CSRCs, 4 bits.
    pub csrc_count: u8,
    /// M: the marker bit.
    pub marker: bool,
    /// PT, 7 bits.
    pub payload_type: u8,
    /// The RTP timestamp.
    pub timestamp: u32,
    /// Bytes after the 12-byte fixed header: CSRC list, header extension, payload and padding;
    /// at most 65535 (a 16-bit field on the wire).
    pub length: DataSize,
}

impl ProtectedPacket {
    /// The protected fields of a packet with `header` and `payload` bytes of payload (padding
    /// not included: `header.padding_len` counts it).
    pub fn from_rtp(header: &RtpHeaderRepr, payload: DataSize) -> Self {
        let after_fixed_header = header.buffer_len() - FIXED_HEADER_LEN + usize::from(header.padding_len);
        Self {
            seq: header.seq,
            padding: header.padding_len > 0,
            extension: header.buffer_len() > FIXED_HEADER_LEN,
            csrc_count: u8::from(header.csrc.is_some()),
            marker: header.marker,
            payload_type: header.payload_type,
            timestamp: header.timestamp,
            length: DataSize::bytes(after_fixed_header as u64) + payload,
        }
    }
}

/// The longest FEC header of either scheme: FlexFEC's with Mask [0-109] (ULPFEC's is at most
/// 18 bytes).
pub const MAX_HEADER_LEN: usize = flexfec::HEADER_LEN_110;

/// The FEC header of a repair packet of either scheme: its recovery fields and the sequence
/// numbers it protects, which is all recovery needs (RFC 5109 §9, RFC 8627 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FecHeader {
    /// RFC 5109, sent inside RED in the protected stream.
    Ulpfec(UlpfecHeaderRepr),
    /// RFC 8627, sent in its own stream.
    Flexfec(FlexfecHeaderRepr),
}

impl FecHeader {
    fn sn_base_and_mask(&self) -> (SeqNo<16>, u128) {
        match self {
            Self::Ulpfec(h) => (h.sn_base, u128::from(h.mask)),
            Self::Flexfec(h) => (h.sn_base, h.mask),
        }
    }

    /// The protected sequence numbers, in increasing order from the SN base.
    pub fn protected_seqs(&self) -> impl Iterator<Item = SeqNo<16>> {
        let (base, mask) = self.sn_base_and_mask();
        (0..128u64).filter(move |j| mask >> j & 1 != 0).map(move |j| SeqNo::new(base.value() + j))
    }

    /// The protected packet missing from `received`; see [`UlpfecHeaderRepr::recover`] and
    /// [`FlexfecHeaderRepr::recover`].
    pub fn recover(&self, received: &[ProtectedPacket]) -> Result<ProtectedPacket, WireError> {
        match self {
            Self::Ulpfec(h) => h.recover(received),
            Self::Flexfec(h) => h.recover(received),
        }
    }

    /// Length of the header as emitted.
    pub fn buffer_len(&self) -> usize {
        match self {
            Self::Ulpfec(h) => h.buffer_len(),
            Self::Flexfec(h) => h.buffer_len(),
        }
    }

    /// Writes the header into the start of `buf`; returns the bytes written.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        match self {
            Self::Ulpfec(h) => h.emit(buf),
            Self::Flexfec(h) => h.emit(buf),
        }
    }
}

impl From<UlpfecHeaderRepr> for FecHeader {
    fn from(h: UlpfecHeaderRepr) -> Self {
        Self::Ulpfec(h)
    }
}

impl From<FlexfecHeaderRepr> for FecHeader {
    fn from(h: FlexfecHeaderRepr) -> Self {
        Self::Flexfec(h)
    }
}

/// The recovery fields of an FEC header: for each field, the XOR of that field over the
/// protected packets (RFC 5109 §7.3; RFC 8627 §4.2.2.1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct RecoveryFields {
    /// P recovery.
    pub padding: bool,
    /// X recovery.
    pub extension: bool,
    /// CC recovery, 4 bits.
    pub csrc_count: u8,
    /// M recovery.
    pub marker: bool,
    /// PT recovery, 7 bits.
    pub payload_type: u8,
    /// TS recovery.
    pub timestamp: u32,
    /// Length recovery: the XOR of the 16-bit lengths (not itself a length).
    pub length: u16,
}

impl RecoveryFields {
    /// The recovery fields of an FEC packet protecting `packets` (RFC 5109 §8, RFC 8627 §6.2).
    ///
    /// Errors when a packet's payload type, CSRC count or length does not fit its wire field.
    pub fn protect(packets: &[ProtectedPacket]) -> Result<Self, WireError> {
        packets.iter().try_fold(Self::default(), |acc, p| Ok(acc.xor(Self::of(p)?)))
    }

    /// The packet's own fields, checked against their wire widths.
    fn of(p: &ProtectedPacket) -> Result<Self, WireError> {
        let length = u16::try_from(p.length.as_bytes()).map_err(|_| WireError::InvalidField {
            field: "length",
            reason: format!("packet {} is {} long, length recovery has 16 bits", p.seq.value(), p.length),
        })?;
        let fields = Self {
            padding: p.padding,
            extension: p.extension,
            csrc_count: p.csrc_count,
            marker: p.marker,
            payload_type: p.payload_type,
            timestamp: p.timestamp,
            length,
        };
        fields.check()?;
        Ok(fields)
    }

    fn xor(self, o: Self) -> Self {
        Self {
            padding: self.padding ^ o.padding,
            extension: self.extension ^ o.extension,
            csrc_count: self.csrc_count ^ o.csrc_count,
            marker: self.marker ^ o.marker,
            payload_type: self.payload_type ^ o.payload_type,
            timestamp: self.timestamp ^ o.timestamp,
            length: self.length ^ o.length,
        }
    }

    /// The 4-bit CC and 7-bit PT fit their fields.
    fn check(&self) -> Result<(), WireError> {
        if self.csrc_count > 0x0F {
            return Err(WireError::InvalidField {
                field: "csrc_count",
                reason: format!("{} is above 15 (4 bits)", self.csrc_count),
            });
        }
        if self.payload_type > 0x7F {
            return Err(WireError::InvalidField {
                field: "payload_type",
                reason: format!("{} is above 127 (7 bits)", self.payload_type),
            });
        }
        Ok(())
    }

    /// Writes P, X, CC, M and PT recovery into `buf[0..2]` below the two flag bits `flags`
    /// (E and L for ULPFEC, R and F for FlexFEC), and TS recovery into `buf[4..8]`: the two
    /// formats share those positions. `buf` must hold 8 bytes.
    fn emit_shared(&self, flags: u8, buf: &mut [u8]) -> Result<(), WireError> {
        self.check()?;
        buf[0] = flags << 6 | u8::from(self.padding) << 5 | u8::from(self.extension) << 4 | self.csrc_count;
        buf[1] = u8::from(self.marker) << 7 | self.payload_type;
        buf[4..8].copy_from_slice(&self.timestamp.to_be_bytes());
        Ok(())
    }

    /// Reads what [`emit_shared`](Self::emit_shared) writes; returns the two flag bits and the
    /// fields, with `length` 0. `buf` must hold 8 bytes.
    fn parse_shared(buf: &[u8]) -> (u8, Self) {
        let fields = Self {
            padding: buf[0] & 0x20 != 0,
            extension: buf[0] & 0x10 != 0,
            csrc_count: buf[0] & 0x0F,
            marker: buf[1] & 0x80 != 0,
            payload_type: buf[1] & 0x7F,
            timestamp: u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]),
            length: 0,
        };
        (buf[0] >> 6, fields)
    }
}

/// The SN base and mask (bit i set: SN base + i protected) of `packets`, whose sequence numbers
/// must be distinct and span at most `max_span`.
///
/// The SN base is the lowest protected sequence number, taking wrap-around into account
/// (RFC 5109 §7.3): the one from which every other lies the shortest way forward.
fn protection(packets: &[ProtectedPacket], max_span: u16) -> Result<(SeqNo<16>, u128), WireError> {
    debug_assert!(max_span <= 128);
    let too_wide = || {
        WireError::InvalidInput(format!(
            "{} packets whose sequence numbers span more than {max_span}, the most one FEC mask covers",
            packets.len()
        ))
    };
    if packets.is_empty() {
        return Err(WireError::InvalidInput("an FEC packet must protect at least one packet".into()));
    }
    if packets.len() > usize::from(max_span) {
        return Err(too_wide());
    }
    let offset =
        |base: SeqNo<16>, p: &ProtectedPacket| (p.seq.value() as u16).wrapping_sub(base.value() as u16);
    // At most 128 packets: trying each as the base is cheap.
    let base = packets
        .iter()
        .map(|b| b.seq)
        .min_by_key(|&b| packets.iter().map(|p| offset(b, p)).max())
        .unwrap_or_default();
    let mut mask = 0u128;
    for p in packets {
        let i = offset(base, p);
        if i >= max_span {
            return Err(too_wide());
        }
        if mask & 1 << i != 0 {
            return Err(WireError::InvalidInput(format!("packet {} is given twice", p.seq.value())));
        }
        mask |= 1 << i;
    }
    Ok((base, mask))
}

/// The one packet of those that `sn_base` and `mask` protect that is missing from `received`,
/// from the FEC packet's recovery fields (RFC 5109 §9, RFC 8627 §6.3).
///
/// Received packets the mask does not cover are ignored. Errors when a protected packet is
/// given twice, or when not exactly one protected packet is missing (none: nothing to recover;
/// two or more: one FEC packet cannot tell them apart).
fn recover(
    recovery: RecoveryFields,
    sn_base: SeqNo<16>,
    mask: u128,
    received: &[ProtectedPacket],
) -> Result<ProtectedPacket, WireError> {
    let mut seen = 0u128;
    let mut acc = recovery;
    for p in received {
        let i = (p.seq.value() as u16).wrapping_sub(sn_base.value() as u16);
        if i >= 128 || mask & 1 << i == 0 {
            continue;
        }
        if seen & 1 << i != 0 {
            return Err(WireError::BadFec(format!("protected packet {} is given twice", p.seq.value())));
        }
        seen |= 1 << i;
        acc = acc.xor(RecoveryFields::of(p)?);
    }
    let missing = mask & !seen;
    if missing.count_ones() != 1 {
        return Err(WireError::BadFec(format!(
            "{} of the {} protected packets are missing; one FEC packet recovers exactly one",
            missing.count_ones(),
            mask.count_ones()
        )));
    }
    Ok(ProtectedPacket {
        seq: SeqNo::new(sn_base.value() + u64::from(missing.trailing_zeros())),
        padding: acc.padding,
        extension: acc.extension,
        csrc_count: acc.csrc_count,
        marker: acc.marker,
        payload_type: acc.payload_type,
        timestamp: acc.timestamp,
        length: DataSize::bytes(u64::from(acc.length)),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::rtp::FrameMarking;

    /// `n` packets from `first` with `step` between sequence numbers and fields that differ in
    /// every bit position across the set, from a fixed linear congruential sequence.
    pub(crate) fn packets(first: u16, step: u16, n: usize, seed: u64) -> Vec<ProtectedPacket> {
        let mut x = seed;
        let mut next = move || {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            x >> 16
        };
        (0..n)
            .map(|k| {
                let r = next();
                ProtectedPacket {
                    seq: SeqNo::new(u64::from(first.wrapping_add(step.wrapping_mul(k as u16)))),
                    padding: r & 1 != 0,
                    extension: r & 2 != 0,
                    csrc_count: (r >> 2) as u8 & 0x0F,
                    marker: r & 64 != 0,
                    payload_type: (r >> 7) as u8 & 0x7F,
                    timestamp: (r >> 14) as u32,
                    length: DataSize::bytes(next() & 0xFFFF),
                }
            })
            .collect()
    }

    #[test]
    fn from_rtp_counts_everything_after_the_fixed_header() {
        let header = RtpHeaderRepr {
            payload_type: 96,
            marker: true,
            seq: SeqNo::new(7),
            timestamp: 3000,
            frame_marking: Some(FrameMarking::default()),
            padding_len: 3,
            ..RtpHeaderRepr::default()
        };
        // 12 + 4 + 2 -> 20-byte header: 8 bytes of extension block, 1000 of payload, 3 of padding.
        let p = ProtectedPacket::from_rtp(&header, DataSize::bytes(1000));
        let expected = ProtectedPacket {
            seq: SeqNo::new(7),
            padding: true,
            extension: true,
            csrc_count: 0,
            marker: true,
            payload_type: 96,
            timestamp: 3000,
            length: DataSize::bytes(1011),
        };
        assert_eq!(p, expected);
        let plain = ProtectedPacket::from_rtp(&RtpHeaderRepr::default(), DataSize::bytes(10));
        assert!(!plain.padding && !plain.extension && plain.length == DataSize::bytes(10));
    }

    #[test]
    fn recovery_fields_are_the_xor_of_the_packets() {
        let a = ProtectedPacket {
            seq: SeqNo::new(1),
            padding: true,
            extension: false,
            csrc_count: 0b0101,
            marker: true,
            payload_type: 0b110_0000,
            timestamp: 0xFFFF_0000,
            length: DataSize::bytes(0x0F0F),
        };
        let b = ProtectedPacket {
            seq: SeqNo::new(2),
            padding: true,
            extension: true,
            csrc_count: 0b0011,
            marker: false,
            payload_type: 0b000_0110,
            timestamp: 0x00FF_FF00,
            length: DataSize::bytes(0x00FF),
        };
        let expected = RecoveryFields {
            padding: false,
            extension: true,
            csrc_count: 0b0110,
            marker: true,
            payload_type: 0b110_0110,
            timestamp: 0xFF00_FF00,
            length: 0x0FF0,
        };
        assert_eq!(RecoveryFields::protect(&[a, b]), Ok(expected));
        assert_eq!(RecoveryFields::protect(&[]), Ok(RecoveryFields::default()));
        let long = ProtectedPacket { length: DataSize::bytes(65536), ..a };
        assert!(matches!(
            RecoveryFields::protect(&[long]),
            Err(WireError::InvalidField { field: "length", .. })
        ));
        let pt = ProtectedPacket { payload_type: 128, ..a };
        assert!(matches!(RecoveryFields::protect(&[pt]), Err(WireError::InvalidField { .. })));
    }

    #[test]
    fn the_sn_base_is_the_lowest_across_the_wrap() {
        let around = packets(65530, 3, 5, 1); // 65530, 65533, 0, 3, 6
        let (base, mask) = protection(&around, 16).unwrap();
        assert_eq!(base, SeqNo::new(65530));
        assert_eq!(mask, 1 | 1 << 3 | 1 << 6 | 1 << 9 | 1 << 12);
        // In any order.
        let mut shuffled = around.clone();
        shuffled.reverse();
        assert_eq!(protection(&shuffled, 16), Ok((base, mask)));
        // 15 apart fits a 16-bit mask; 16 apart does not.
        assert!(protection(&packets(65530, 16, 2, 1), 16).is_err());
        assert!(protection(&packets(65530, 15, 2, 1), 16).is_ok());
        // Duplicates, nothing, too many.
        let twice = [around[0], around[1], around[0]];
        assert!(matches!(protection(&twice, 16), Err(WireError::InvalidInput(_))));
        assert!(matches!(protection(&[], 16), Err(WireError::InvalidInput(_))));
        assert!(matches!(protection(&packets(0, 1, 17, 1), 16), Err(WireError::InvalidInput(_))));
    }

    #[test]
    fn recovery_needs_exactly_one_missing_packet() {
        let sent = packets(100, 1, 4, 9);
        let recovery = RecoveryFields::protect(&sent).unwrap();
        let (base, mask) = protection(&sent, 16).unwrap();
        assert_eq!(recover(recovery, base, mask, &sent[1..]), Ok(sent[0]));
        // Unprotected packets are ignored.
        let mut with_stranger = sent[..3].to_vec();
        with_stranger.extend(packets(200, 1, 1, 3));
        assert_eq!(recover(recovery, base, mask, &with_stranger), Ok(sent[3]));
        for wrong in [&sent[..], &sent[2..]] {
            assert!(matches!(recover(recovery, base, mask, wrong), Err(WireError::BadFec(_))));
        }
        let twice = [sent[0], sent[1], sent[1]];
        assert!(matches!(recover(recovery, base, mask, &twice), Err(WireError::BadFec(_))));
    }
}
