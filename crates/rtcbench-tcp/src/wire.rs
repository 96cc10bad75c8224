//! The TCP header (RFC 9293 §3.1, unchanged from RFC 793 §3.1) with the SACK option
//! (RFC 2018 §3).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |          Source Port          |       Destination Port        |
//! |                        Sequence Number                        |
//! |                    Acknowledgment Number                      |
//! |  Data |     |A|C|E|U|A|P|R|S|F|                               |
//! | Offset| Rsv |E|W|C|R|C|S|S|Y|I|            Window             |
//! |           Checksum            |         Urgent Pointer        |
//! |                    Options (0 to 40 bytes)                    |
//! ```
//!
//! The SACK option is kind 5, length 2 + 8·n, then n pairs of 32-bit left edge (first sequence
//! number of a received block) and right edge (the sequence number just after it). It is
//! emitted as Linux does, behind two NOPs so that the blocks are 32-bit aligned.
//!
//! The three ECN flags are AE (RFC 9768 §3.2.2, the former NS bit: the lowest bit of byte 12),
//! CWR and ECE (RFC 3168 §6.1, the top two bits of byte 13). Classic ECN uses ECE and CWR as RFC
//! 3168 defines them; Accurate ECN reads AE, CWR and ECE together as the 3-bit ACE counter
//! (RFC 9768 §3.2.2.2, [`TcpFlags::ace`]).
//!
//! Only what rtcbench's TCP uses is represented: ports, sequence and acknowledgment numbers,
//! the SYN/ACK/FIN and ECN flags, the window and SACK blocks. On parse, other flags are ignored and other
//! options (MSS, window scale, SACK-permitted, timestamps) are skipped by their length; on emit
//! they are zero or absent. The checksum is written as 0 (the simulator does not corrupt bits;
//! there is no IP pseudo-header to cover).
//!
//! Sequence numbers are 64-bit inside the endpoints and 32-bit on the wire;
//! [`unwrap_seq`] recovers the 64-bit value from the low 32 bits and a nearby reference.

use rtcbench_units::{DataSize, SeqNo};

/// Length of the TCP header without options (RFC 9293 §3.1: data offset 5).
pub const HEADER_LEN: usize = 20;
/// Longest TCP header: data offset 15 words.
pub const MAX_HEADER_LEN: usize = 60;
/// Bytes an IPv4 header without options adds to every segment on the wire.
pub const IPV4_HEADER: DataSize = DataSize::bytes(20);
/// At most four SACK blocks fit in the 40 bytes of option space (RFC 2018 §3: 2 + 4·8 = 34),
/// three when the timestamp option is present; rtcbench sends no timestamps.
pub const MAX_SACK_BLOCKS: usize = 4;

const OPT_END: u8 = 0;
const OPT_NOP: u8 = 1;
/// SACK option kind (RFC 2018 §3).
const OPT_SACK: u8 = 5;
const SACK_BLOCK_LEN: usize = 8;

const FLAG_FIN: u8 = 0x01;
const FLAG_SYN: u8 = 0x02;
const FLAG_ACK: u8 = 0x10;
/// ECN-Echo (RFC 3168 §6.1), byte 13.
const FLAG_ECE: u8 = 0x40;
/// Congestion Window Reduced (RFC 3168 §6.1), byte 13.
const FLAG_CWR: u8 = 0x80;
/// Accurate ECN (RFC 9768 §3.2.2), the lowest bit of byte 12 (below the data offset).
const FLAG_AE: u8 = 0x01;

/// Why bytes are not a TCP header rtcbench can read, or a [`TcpRepr`] cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TcpWireError {
    /// The input ends before the header its data offset announces.
    #[error("truncated TCP header: need {needed} bytes, have {actual}")]
    Truncated {
        /// Bytes the header needs.
        needed: usize,
        /// Bytes available.
        actual: usize,
    },
    /// The data offset is below 5 words, the length of the fixed header (RFC 9293 §3.1).
    #[error("TCP data offset {0} is below the minimum of 5 (32-bit words)")]
    BadDataOffset(u8),
    /// An option's length byte is missing, below 2, runs past the header, or (for SACK) is not
    /// 2 + 8·n with 1 ≤ n ≤ 4.
    #[error("malformed TCP option kind {kind}: {reason}")]
    BadOption {
        /// The option kind.
        kind: u8,
        /// What is wrong and what is allowed.
        reason: &'static str,
    },
    /// More SACK blocks than the option space holds.
    #[error("cannot encode {0} SACK blocks: the option space holds at most 4")]
    TooManySackBlocks(usize),
    /// The output buffer given to [`TcpRepr::emit`] is shorter than [`TcpRepr::buffer_len`].
    #[error("output buffer too small for the TCP header: need {needed} bytes, have {actual}")]
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes available.
        actual: usize,
    },
}

/// The 64-bit sequence number whose low 32 bits are `wire` and which is nearest to `reference`
/// (within ±2^31), never negative. Endpoints unwrap acknowledgment numbers against `SND.UNA`
/// and data sequence numbers against `RCV.NXT`, both within a window of the true value.
pub fn unwrap_seq(reference: u64, wire: SeqNo<32>) -> u64 {
    let distance = SeqNo::<32>::new(reference).distance_to(wire);
    let unwrapped = i128::from(reference) + i128::from(distance);
    // Below zero only when the reference is within 2^31 of the start: the value is in the
    // first lap.
    if unwrapped < 0 {
        (unwrapped + (1 << 32)) as u64
    } else {
        unwrapped as u64
    }
}

/// The control bits rtcbench uses: SYN, ACK and FIN (RFC 9293 §3.1) and the ECN flags AE, CWR
/// and ECE (RFC 3168 §6.1, RFC 9768 §3.2.2).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TcpFlags {
    pub syn: bool,
    pub ack: bool,
    pub fin: bool,
    pub ae: bool,
    pub cwr: bool,
    pub ece: bool,
}

impl TcpFlags {
    /// Only the ACK bit: every segment of an established connection.
    pub const ACK: Self = Self { syn: false, ack: true, fin: false, ae: false, cwr: false, ece: false };

    /// The ACE field (RFC 9768 §3.2.2): AE, CWR and ECE read as a 3-bit number, AE
    /// the most significant bit.
    pub const fn ace(self) -> u8 {
        (self.ae as u8) << 2 | (self.cwr as u8) << 1 | self.ece as u8
    }

    /// These flags with the ACE field set to the low 3 bits of `ace`.
    pub const fn with_ace(self, ace: u32) -> Self {
        Self { ae: ace & 4 != 0, cwr: ace & 2 != 0, ece: ace & 1 != 0, ..self }
    }

    /// Byte 12's flag bit (AE) and byte 13.
    const fn to_bytes(self) -> (u8, u8) {
        let b13 = (if self.fin { FLAG_FIN } else { 0 })
            | (if self.syn { FLAG_SYN } else { 0 })
            | (if self.ack { FLAG_ACK } else { 0 })
            | (if self.ece { FLAG_ECE } else { 0 })
            | (if self.cwr { FLAG_CWR } else { 0 });
        (if self.ae { FLAG_AE } else { 0 }, b13)
    }

    const fn from_bytes(b12: u8, b13: u8) -> Self {
        Self {
            syn: b13 & FLAG_SYN != 0,
            ack: b13 & FLAG_ACK != 0,
            fin: b13 & FLAG_FIN != 0,
            ae: b12 & FLAG_AE != 0,
            cwr: b13 & FLAG_CWR != 0,
            ece: b13 & FLAG_ECE != 0,
        }
    }
}

/// One SACK block (RFC 2018 §3): the received bytes `[left, right)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SackBlock {
    /// Left Edge of Block: the first sequence number of the block.
    pub left: SeqNo<32>,
    /// Right Edge of Block: the sequence number just after the block.
    pub right: SeqNo<32>,
}

/// A checked read-only view of the TCP header at the start of `buf`.
///
/// [`new_checked`](Self::new_checked) verifies that the data offset is valid and that the whole
/// header (options included) is present, so the accessors cannot go out of bounds. Bytes after
/// the header (the payload, absent in the simulator) are not looked at.
#[derive(Debug, Clone, Copy)]
pub struct TcpHeader<'a> {
    buf: &'a [u8],
}

impl<'a> TcpHeader<'a> {
    pub fn new_checked(buf: &'a [u8]) -> Result<Self, TcpWireError> {
        if buf.len() < HEADER_LEN {
            return Err(TcpWireError::Truncated { needed: HEADER_LEN, actual: buf.len() });
        }
        let offset = buf[12] >> 4;
        if offset < 5 {
            return Err(TcpWireError::BadDataOffset(offset));
        }
        let header_len = 4 * usize::from(offset);
        if buf.len() < header_len {
            return Err(TcpWireError::Truncated { needed: header_len, actual: buf.len() });
        }
        Ok(Self { buf })
    }

    fn u16_at(&self, i: usize) -> u16 {
        u16::from_be_bytes([self.buf[i], self.buf[i + 1]])
    }

    fn u32_at(&self, i: usize) -> u32 {
        u32::from_be_bytes([self.buf[i], self.buf[i + 1], self.buf[i + 2], self.buf[i + 3]])
    }

    pub fn src_port(&self) -> u16 {
        self.u16_at(0)
    }
    pub fn dst_port(&self) -> u16 {
        self.u16_at(2)
    }
    /// The first sequence number of the segment's data.
    pub fn seq_number(&self) -> SeqNo<32> {
        SeqNo::new(u64::from(self.u32_at(4)))
    }
    /// The next sequence number the sender of this segment expects (valid when ACK is set).
    pub fn ack_number(&self) -> SeqNo<32> {
        SeqNo::new(u64::from(self.u32_at(8)))
    }
    /// Header length in bytes: data offset × 4.
    pub fn header_len(&self) -> usize {
        4 * usize::from(self.buf[12] >> 4)
    }
    pub fn flags(&self) -> TcpFlags {
        TcpFlags::from_bytes(self.buf[12], self.buf[13])
    }
    /// The receive window field, before any window scaling.
    pub fn window(&self) -> u16 {
        self.u16_at(14)
    }
    pub fn checksum(&self) -> u16 {
        self.u16_at(16)
    }
    /// The option bytes between the fixed header and the data offset.
    pub fn options(&self) -> &'a [u8] {
        &self.buf[HEADER_LEN..self.header_len()]
    }

    /// The SACK blocks of the first SACK option, in the order they appear (RFC 2018 §4: the
    /// most recently changed block first). Other options are skipped by their length.
    pub fn sack_blocks(&self) -> Result<Vec<SackBlock>, TcpWireError> {
        let mut opts = self.options();
        while let Some((&kind, rest)) = opts.split_first() {
            match kind {
                OPT_END => break,
                OPT_NOP => opts = rest,
                _ => {
                    let bad = |reason| TcpWireError::BadOption { kind, reason };
                    let len = usize::from(*rest.first().ok_or(bad("no length byte"))?);
                    if len < 2 {
                        return Err(bad("length below 2"));
                    }
                    if len > opts.len() {
                        return Err(bad("runs past the end of the header"));
                    }
                    if kind == OPT_SACK {
                        return parse_sack(&opts[2..len]).ok_or(bad("SACK length must be 2 + 8·n, n = 1..4"));
                    }
                    opts = &opts[len..];
                }
            }
        }
        Ok(Vec::new())
    }
}

/// The blocks of a SACK option's body (after kind and length).
fn parse_sack(body: &[u8]) -> Option<Vec<SackBlock>> {
    let blocks = body.len() / SACK_BLOCK_LEN;
    if blocks == 0 || blocks > MAX_SACK_BLOCKS || blocks * SACK_BLOCK_LEN != body.len() {
        return None;
    }
    let edge = |b: &[u8]| SeqNo::new(u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]])));
    Some(
        body.chunks_exact(SACK_BLOCK_LEN)
            .map(|b| SackBlock { left: edge(&b[..4]), right: edge(&b[4..]) })
            .collect(),
    )
}

/// What rtcbench reads from and writes into a TCP header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpRepr {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: SeqNo<32>,
    pub ack: SeqNo<32>,
    pub flags: TcpFlags,
    /// The window field as sent (scaled by the shift negotiated in the handshake).
    pub window: u16,
    /// SACK blocks, most recent first; empty for no SACK option.
    pub sack: Vec<SackBlock>,
}

impl TcpRepr {
    /// Reads a header; the payload, if any follows, is ignored.
    pub fn parse(buf: &[u8]) -> Result<Self, TcpWireError> {
        let h = TcpHeader::new_checked(buf)?;
        Ok(Self {
            src_port: h.src_port(),
            dst_port: h.dst_port(),
            seq: h.seq_number(),
            ack: h.ack_number(),
            flags: h.flags(),
            window: h.window(),
            sack: h.sack_blocks()?,
        })
    }

    /// Bytes of the emitted header: 20, plus 2 NOPs, kind, length and 8 per block with SACK.
    pub fn buffer_len(&self) -> usize {
        if self.sack.is_empty() {
            HEADER_LEN
        } else {
            HEADER_LEN + 4 + SACK_BLOCK_LEN * self.sack.len()
        }
    }

    /// Writes the header into the start of `buf`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), TcpWireError> {
        if self.sack.len() > MAX_SACK_BLOCKS {
            return Err(TcpWireError::TooManySackBlocks(self.sack.len()));
        }
        let len = self.buffer_len();
        if buf.len() < len {
            return Err(TcpWireError::BufferTooSmall { needed: len, actual: buf.len() });
        }
        let buf = &mut buf[..len];
        buf[0..2].copy_from_slice(&self.src_port.to_be_bytes());
        buf[2..4].copy_from_slice(&self.dst_port.to_be_bytes());
        buf[4..8].copy_from_slice(&(self.seq.value() as u32).to_be_bytes());
        buf[8..12].copy_from_slice(&(self.ack.value() as u32).to_be_bytes());
        let (b12_flags, b13) = self.flags.to_bytes();
        buf[12] = ((len / 4) as u8) << 4 | b12_flags;
        buf[13] = b13;
        buf[14..16].copy_from_slice(&self.window.to_be_bytes());
        buf[16..20].fill(0); // checksum (see the module docs) and urgent pointer
        if !self.sack.is_empty() {
            buf[20..24].copy_from_slice(&[
                OPT_NOP,
                OPT_NOP,
                OPT_SACK,
                (2 + SACK_BLOCK_LEN * self.sack.len()) as u8,
            ]);
            for (block, out) in self.sack.iter().zip(buf[24..].chunks_exact_mut(SACK_BLOCK_LEN)) {
                out[..4].copy_from_slice(&(block.left.value() as u32).to_be_bytes());
                out[4..].copy_from_slice(&(block.right.value() as u32).to_be_bytes());
            }
        }
        Ok(())
    }

    /// The emitted header as a new buffer.
    pub fn to_bytes(&self) -> Result<Vec<u8>, TcpWireError> {
        let mut buf = vec![0; self.buffer_len()];
        self.emit(&mut buf)?;
        Ok(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn seq(v: u32) -> SeqNo<32> {
        SeqNo::new(u64::from(v))
    }

    /// A pure ACK laid out by hand after RFC 9293 §3.1: ports 80 → 49152, seq 0x01020304,
    /// ack 0xA0B0C0D0, data offset 5, ACK, window 0xFFFF, checksum and urgent pointer 0.
    const PURE_ACK: [u8; 20] = [
        0x00, 0x50, 0xC0, 0x00, // ports
        0x01, 0x02, 0x03, 0x04, // sequence number
        0xA0, 0xB0, 0xC0, 0xD0, // acknowledgment number
        0x50, 0x10, 0xFF, 0xFF, // data offset 5, ACK; window
        0x00, 0x00, 0x00, 0x00, // checksum, urgent pointer
    ];

    #[test]
    fn parses_a_hand_built_fixed_header() {
        let r = TcpRepr::parse(&PURE_ACK).unwrap();
        assert_eq!((r.src_port, r.dst_port), (80, 49152));
        assert_eq!((r.seq, r.ack), (seq(0x0102_0304), seq(0xA0B0_C0D0)));
        assert_eq!(r.flags, TcpFlags::ACK);
        assert_eq!(r.window, 0xFFFF);
        assert!(r.sack.is_empty());
        assert_eq!(r.to_bytes().unwrap(), PURE_ACK);
    }

    #[test]
    fn flags_sit_where_rfc_9293_puts_them() {
        let mut b = PURE_ACK;
        b[13] = 0x13; // ACK | SYN | FIN
        let f = TcpRepr::parse(&b).unwrap().flags;
        assert_eq!(f, TcpFlags { syn: true, ack: true, fin: true, ..TcpFlags::default() });
        b[13] = 0x08; // PSH alone: not represented
        assert_eq!(TcpRepr::parse(&b).unwrap().flags, TcpFlags::default());
        b[13] = 0xC0; // CWR | ECE (RFC 3168 §6.1)
        let f = TcpRepr::parse(&b).unwrap().flags;
        assert!(f.cwr && f.ece && !f.ae);
    }

    /// RFC 9768 §3.2.2: an ACK whose ACE field is 0b110 (AE and CWR set, ECE clear). AE is the
    /// lowest bit of byte 12, under the data offset; CWR and ECE the top of byte 13.
    #[test]
    fn ace_field_bits_sit_where_rfc_9768_puts_them() {
        let mut b = PURE_ACK;
        b[12] = 0x51; // data offset 5, AE
        b[13] = 0x90; // CWR, ACK
        let r = TcpRepr::parse(&b).unwrap();
        assert_eq!(r.flags.ace(), 0b110);
        assert_eq!(r.to_bytes().unwrap(), b);
        // Counters are written modulo 8: 13 = 0b1101 → 0b101 (AE and ECE).
        let f = TcpFlags::ACK.with_ace(13);
        assert_eq!((f.ae, f.cwr, f.ece, f.ace()), (true, false, true, 0b101));
        let mut r = TcpRepr::parse(&PURE_ACK).unwrap();
        r.flags = f;
        let bytes = r.to_bytes().unwrap();
        assert_eq!((bytes[12], bytes[13]), (0x51, 0x50));
    }

    /// An ACK with two SACK blocks as Linux lays it out (RFC 2018 §3): NOP, NOP, kind 5,
    /// length 18, then left/right edges; data offset 10 words = 40 bytes.
    #[test]
    fn sack_option_bytes_round_trip() {
        let mut b = PURE_ACK.to_vec();
        b[12] = 0xA0;
        b.extend_from_slice(&[1, 1, 5, 18]);
        b.extend_from_slice(&[0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x15, 0xB4]); // 4096..5556
        b.extend_from_slice(&[0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x05, 0xB4]); // wraps
        let r = TcpRepr::parse(&b).unwrap();
        assert_eq!(
            r.sack,
            vec![
                SackBlock { left: seq(4096), right: seq(5556) },
                SackBlock { left: seq(0xFFFF_FF00), right: seq(0x5B4) }
            ]
        );
        assert_eq!(r.buffer_len(), 40);
        assert_eq!(r.to_bytes().unwrap(), b);
    }

    /// Options Linux puts before the SACK blocks (timestamps, kind 8, length 10) are skipped.
    #[test]
    fn sack_after_timestamps_is_found() {
        let mut b = PURE_ACK.to_vec();
        b.extend_from_slice(&[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]);
        b.extend_from_slice(&[1, 1, 5, 10, 0, 0, 0, 100, 0, 0, 0, 200]);
        b[12] = 0xB0; // 44 bytes = 11 words
        let r = TcpRepr::parse(&b).unwrap();
        assert_eq!(r.sack, vec![SackBlock { left: seq(100), right: seq(200) }]);
    }

    #[test]
    fn malformed_headers_are_errors() {
        assert_eq!(TcpRepr::parse(&PURE_ACK[..19]), Err(TcpWireError::Truncated { needed: 20, actual: 19 }));
        let mut b = PURE_ACK;
        b[12] = 0x40;
        assert_eq!(TcpRepr::parse(&b), Err(TcpWireError::BadDataOffset(4)));
        b[12] = 0x60; // 24 bytes announced, 20 present
        assert_eq!(TcpRepr::parse(&b), Err(TcpWireError::Truncated { needed: 24, actual: 20 }));
        let mut opt = PURE_ACK.to_vec();
        opt[12] = 0x60;
        opt.extend_from_slice(&[5, 3, 0, 0]); // SACK of length 3
        assert!(matches!(TcpRepr::parse(&opt), Err(TcpWireError::BadOption { kind: 5, .. })));
        opt[20..].copy_from_slice(&[2, 9, 0, 0]); // MSS option running past the header
        assert!(matches!(TcpRepr::parse(&opt), Err(TcpWireError::BadOption { kind: 2, .. })));
        opt[20..].copy_from_slice(&[0, 9, 9, 9]); // end of option list: the rest is padding
        assert!(TcpRepr::parse(&opt).unwrap().sack.is_empty());
    }

    #[test]
    fn emit_checks_block_count_and_buffer() {
        let block = SackBlock { left: seq(1), right: seq(2) };
        let mut r = TcpRepr::parse(&PURE_ACK).unwrap();
        r.sack = vec![block; 5];
        assert_eq!(r.to_bytes(), Err(TcpWireError::TooManySackBlocks(5)));
        r.sack = vec![block; 4];
        assert_eq!(r.buffer_len(), 56);
        assert_eq!(r.emit(&mut [0; 40]), Err(TcpWireError::BufferTooSmall { needed: 56, actual: 40 }));
    }

    #[test]
    fn unwrap_seq_picks_the_nearest_lap() {
        assert_eq!(unwrap_seq(1000, seq(1460)), 1460);
        assert_eq!(unwrap_seq(1000, seq(10)), 10);
        // Across the wrap, forward and backward.
        assert_eq!(unwrap_seq(0xFFFF_FFF0, seq(0x10)), 0x1_0000_0010);
        assert_eq!(unwrap_seq(0x1_0000_0005, seq(0xFFFF_FFF0)), 0xFFFF_FFF0);
        // Several laps in.
        assert_eq!(unwrap_seq(5 << 32 | 7, seq(3)), 5 << 32 | 3);
        // Near zero the value never goes negative: it is in the first lap.
        assert_eq!(unwrap_seq(3, seq(0xFFFF_FFFF)), 0xFFFF_FFFF);
    }

    fn arb_repr() -> impl Strategy<Value = TcpRepr> {
        let block = (any::<u32>(), any::<u32>()).prop_map(|(l, r)| SackBlock { left: seq(l), right: seq(r) });
        (
            any::<(u16, u16, u32, u32, u16)>(),
            any::<(bool, bool, bool)>(),
            any::<u32>(),
            proptest::collection::vec(block, 0..=MAX_SACK_BLOCKS),
        )
            .prop_map(|((src_port, dst_port, s, a, window), (syn, ack, fin), ace, sack)| TcpRepr {
                src_port,
                dst_port,
                seq: seq(s),
                ack: seq(a),
                flags: TcpFlags { syn, ack, fin, ..TcpFlags::default() }.with_ace(ace),
                window,
                sack,
            })
    }

    proptest! {
        #[test]
        fn emit_then_parse_is_identity(r in arb_repr()) {
            let bytes = r.to_bytes().unwrap();
            prop_assert_eq!(bytes.len(), r.buffer_len());
            prop_assert_eq!(TcpRepr::parse(&bytes).unwrap(), r);
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = TcpRepr::parse(&bytes);
        }

        #[test]
        fn unwrap_inverts_truncation(value in 0u64..1 << 48, offset in -(1i64 << 30)..1 << 30) {
            let reference = value.saturating_add_signed(offset);
            prop_assert_eq!(unwrap_seq(reference, SeqNo::new(value)), value);
        }
    }
}
