//! FEC recovery at a receiver for one protected stream, from ULPFEC (RFC 5109 §9) or FlexFEC
//! (RFC 8627 §6.3) repair packets, as libwebrtc's `UlpfecReceiver`, `FlexfecReceiver` and
//! `ForwardErrorCorrection::DecodeFec` run it.
//!
//! Media packets that arrive and FEC packets are kept; whenever an FEC packet misses exactly one
//! of the packets it protects, that packet is rebuilt from the FEC packet and the others, and may
//! in turn complete another FEC packet. An FEC packet is dropped once it has nothing left to
//! recover.
//!
//! * **Bytes.** A packet is its recovery fields ([`ProtectedPacket`]) and its *body*: the bytes
//!   after the fixed header that the caller carries (the header extension and whatever payload
//!   bytes it writes; the simulator's payloads are otherwise zeros, and XOR-ing zeros changes
//!   nothing). An FEC packet's body is the XOR of the bodies it protects ([`xor_bytes`]), so a
//!   recovered packet gets its header extension back (frame marking, VP8 descriptor) exactly as
//!   a real receiver would.
//! * **Memory.** At most [`MAX_TRACKED_MEDIA`] media packets (the newest) and [`MAX_TRACKED_FEC`]
//!   FEC packets are kept (libwebrtc keeps the media packets one FEC packet can protect and
//!   discards FEC packets that are too old). An FEC packet protecting a packet older than the
//!   media kept is dropped: that packet may have arrived, and it would be "recovered" twice.

use std::collections::VecDeque;

use rtcbench_units::{SeqNo, SeqUnwrapper};
use smallvec::SmallVec;

use super::{xor_bytes, FecHeader, ProtectedPacket};
use crate::rtp::{RtpHeader, FIXED_HEADER_LEN};
use crate::WireError;

/// Media packets kept for recovery: as many as one ULPFEC packet protects.
pub const MAX_TRACKED_MEDIA: usize = 48;
/// FEC packets kept waiting for the one missing packet they can rebuild.
pub const MAX_TRACKED_FEC: usize = 48;

/// The written bytes after a packet's fixed header (see module docs); a header extension, a
/// payload descriptor and a label fit without a heap allocation.
pub type Body = SmallVec<[u8; 32]>;

/// A packet as FEC protects it: its recovery fields and its body (see module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedBytes {
    pub packet: ProtectedPacket,
    pub body: Body,
}

impl ProtectedBytes {
    /// A packet as FEC protects it: its RTP header as written (`header`: fixed header, CSRCs and
    /// extension block) with payload type `payload_type` (the media's, for a packet that
    /// travelled inside RED: RFC 5109 §8 protects the packet as it was before RED), and
    /// `payload` bytes after the header of which the first are `written` and the rest zeros.
    ///
    /// Errors when `header` is not a complete RTP header.
    pub fn from_rtp(
        header: &[u8],
        payload_type: u8,
        payload: u64,
        written: &[u8],
    ) -> Result<Self, WireError> {
        let h = RtpHeader::new_checked(header)?;
        // Copied as slices (not element by element, as `From<&[u8]>` would): this runs per packet.
        let mut body = Body::new();
        body.extend_from_slice(&header[FIXED_HEADER_LEN..h.header_len()]);
        body.extend_from_slice(&written[..written.len().min(payload as usize)]);
        let packet = ProtectedPacket {
            seq: h.sequence_number(),
            padding: h.padding_bit(),
            extension: h.extension_bit(),
            csrc_count: h.csrc_count() as u8,
            marker: h.marker(),
            payload_type,
            timestamp: h.timestamp(),
            length: rtcbench_units::DataSize::bytes((h.header_len() - FIXED_HEADER_LEN) as u64 + payload),
        };
        Ok(Self { packet, body })
    }

    /// The packet's bytes as far as they were written: its fixed header rebuilt from the
    /// recovered fields with the protected stream's `ssrc` (which FEC does not carry), then the
    /// body (RFC 5109 §9.1, RFC 8627 §6.3.2).
    pub fn rtp_bytes(&self, ssrc: u32) -> Vec<u8> {
        let p = &self.packet;
        let mut bytes = Vec::with_capacity(FIXED_HEADER_LEN + self.body.len());
        bytes.push(0x80 | u8::from(p.padding) << 5 | u8::from(p.extension) << 4 | (p.csrc_count & 0x0F));
        bytes.push(u8::from(p.marker) << 7 | (p.payload_type & 0x7F));
        bytes.extend_from_slice(&(p.seq.value() as u16).to_be_bytes());
        bytes.extend_from_slice(&p.timestamp.to_be_bytes());
        bytes.extend_from_slice(&ssrc.to_be_bytes());
        bytes.extend_from_slice(&self.body);
        bytes
    }
}

#[derive(Debug, Clone)]
struct PendingFec {
    header: FecHeader,
    body: Vec<u8>,
    /// Unwrapped protected sequence numbers.
    seqs: SmallVec<[i64; 16]>,
}

/// FEC recovery for one stream (see module docs).
#[derive(Debug, Clone, Default)]
pub struct FecDecoder {
    unwrapper: SeqUnwrapper<16>,
    /// By unwrapped sequence number, in order (packets mostly arrive in order: a push at the back).
    media: VecDeque<(i64, ProtectedBytes)>,
    fec: VecDeque<PendingFec>,
    /// Media below this sequence number were let go: they cannot be told from lost ones.
    forgotten_below: Option<i64>,
    recovered: u64,
}

impl FecDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Packets rebuilt so far.
    pub fn recovered(&self) -> u64 {
        self.recovered
    }

    /// A media packet arrived. Returns the packets it let FEC rebuild, oldest first.
    pub fn on_media(&mut self, p: ProtectedBytes) -> Vec<ProtectedBytes> {
        let seq = self.unwrapper.unwrap(p.packet.seq);
        if self.forgotten_below.is_some_and(|f| seq < f) || self.get(seq).is_some() {
            return Vec::new();
        }
        self.insert_media(seq, p);
        if self.fec.is_empty() {
            return Vec::new();
        }
        self.recover()
    }

    /// An FEC packet arrived: its header (ULPFEC or FlexFEC) and body (the FEC payload bytes the
    /// caller has). Returns the packets rebuilt, oldest first.
    pub fn on_fec(&mut self, header: impl Into<FecHeader>, body: Vec<u8>) -> Vec<ProtectedBytes> {
        let header = header.into();
        let seqs: SmallVec<[i64; 16]> = header.protected_seqs().map(|s| self.unwrapper.peek(s)).collect();
        if seqs.is_empty() || self.forgotten_below.is_some_and(|f| seqs[0] < f) {
            return Vec::new();
        }
        if self.fec.len() == MAX_TRACKED_FEC {
            self.fec.pop_front();
        }
        self.fec.push_back(PendingFec { header, body, seqs });
        self.recover()
    }

    fn get(&self, seq: i64) -> Option<&ProtectedBytes> {
        let k = self.media.binary_search_by_key(&seq, |&(s, _)| s).ok()?;
        Some(&self.media[k].1)
    }

    fn insert_media(&mut self, seq: i64, p: ProtectedBytes) {
        match self.media.back() {
            Some(&(last, _)) if last > seq => {
                let k = self.media.partition_point(|&(s, _)| s < seq);
                self.media.insert(k, (seq, p));
            }
            _ => self.media.push_back((seq, p)),
        }
        while self.media.len() > MAX_TRACKED_MEDIA {
            if let Some((oldest, _)) = self.media.pop_front() {
                self.forgotten_below = Some(oldest + 1);
            }
        }
        if let Some(f) = self.forgotten_below {
            self.fec.retain(|fec| fec.seqs[0] >= f);
        }
    }

    /// Rebuilds every packet some FEC packet can rebuild, until none can.
    fn recover(&mut self) -> Vec<ProtectedBytes> {
        let mut out = Vec::new();
        loop {
            // Drop FEC packets with nothing missing; find one missing exactly one packet.
            let media = &self.media;
            let missing = |f: &PendingFec| {
                f.seqs.iter().filter(|&&s| media.binary_search_by_key(&s, |&(m, _)| m).is_err()).count()
            };
            self.fec.retain(|f| missing(f) > 0);
            let Some(k) = self.fec.iter().position(|f| missing(f) == 1) else { break };
            let fec = self.fec.remove(k).expect("found above");
            let received: Vec<&ProtectedBytes> = fec.seqs.iter().filter_map(|&s| self.get(s)).collect();
            let fields: Vec<ProtectedPacket> = received.iter().map(|p| p.packet).collect();
            // A header that does not add up (corrupt, or not what it claims) recovers nothing.
            let Ok(packet) = fec.header.recover(&fields) else { continue };
            let mut body: Body = xor_bytes(
                std::iter::once(fec.body.as_slice()).chain(received.iter().map(|p| p.body.as_slice())),
            )
            .into();
            body.truncate(packet.length.as_bytes() as usize);
            let seq = self.unwrapper.peek(SeqNo::new(packet.seq.value()));
            let rebuilt = ProtectedBytes { packet, body };
            self.recovered += 1;
            self.insert_media(seq, rebuilt.clone());
            out.push((seq, rebuilt));
        }
        out.sort_by_key(|&(seq, _)| seq);
        out.into_iter().map(|(_, p)| p).collect()
    }
}

#[cfg(test)]
mod tests {
    use rtcbench_units::DataSize;

    use super::*;
    use crate::fec::flexfec::FlexfecHeaderRepr;
    use crate::fec::ulpfec::UlpfecHeaderRepr;
    use crate::rtp::{FrameMarking, RtpHeaderRepr};

    fn packet(seq: u16, body: &[u8]) -> ProtectedBytes {
        ProtectedBytes {
            packet: ProtectedPacket {
                seq: SeqNo::new(u64::from(seq)),
                extension: true,
                marker: seq % 3 == 2,
                payload_type: 96,
                timestamp: 3000 * u32::from(seq / 3),
                length: DataSize::bytes(1000 + u64::from(seq)),
                ..ProtectedPacket::default()
            },
            body: body.into(),
        }
    }

    fn fec_over(packets: &[ProtectedBytes]) -> (UlpfecHeaderRepr, Vec<u8>) {
        let fields: Vec<ProtectedPacket> = packets.iter().map(|p| p.packet).collect();
        let header = UlpfecHeaderRepr::protect(&fields).unwrap();
        (header, xor_bytes(packets.iter().map(|p| p.body.as_slice())))
    }

    #[test]
    fn one_lost_packet_comes_back_with_its_bytes() {
        let media: Vec<_> = (10..14).map(|s| packet(s, &[s as u8, 0xA0, 0x0F, s as u8 * 3])).collect();
        let (header, body) = fec_over(&media);
        let mut d = FecDecoder::new();
        for p in [&media[0], &media[1], &media[3]] {
            assert!(d.on_media(p.clone()).is_empty());
        }
        assert_eq!(d.on_fec(header, body), vec![media[2].clone()]);
        assert_eq!(d.recovered(), 1);
        // A late copy of it is not recovered again.
        assert!(d.on_media(media[2].clone()).is_empty());
    }

    #[test]
    fn the_fec_packet_may_come_first() {
        let media: Vec<_> = (0..3).map(|s| packet(s, &[s as u8])).collect();
        let (header, body) = fec_over(&media);
        let mut d = FecDecoder::new();
        assert!(d.on_media(media[0].clone()).is_empty());
        assert!(d.on_fec(header, body).is_empty(), "two missing");
        assert_eq!(d.on_media(media[2].clone()), vec![media[1].clone()]);
    }

    #[test]
    fn a_recovered_packet_completes_another_fec_packet() {
        // FEC a over {0, 1}, FEC b over {1, 2}: 1 and 2 lost; a gives 1, then b gives 2.
        let media: Vec<_> = (0..3).map(|s| packet(s, &[s as u8 + 1, 7])).collect();
        let (ha, ba) = fec_over(&media[0..2]);
        let (hb, bb) = fec_over(&media[1..3]);
        let mut d = FecDecoder::new();
        assert!(d.on_fec(hb, bb).is_empty());
        assert!(d.on_media(media[0].clone()).is_empty());
        assert_eq!(d.on_fec(ha, ba), vec![media[1].clone(), media[2].clone()]);
    }

    #[test]
    fn two_losses_under_one_fec_packet_stay_lost() {
        let media: Vec<_> = (0..4).map(|s| packet(s, &[1])).collect();
        let (header, body) = fec_over(&media);
        let mut d = FecDecoder::new();
        d.on_media(media[0].clone());
        d.on_media(media[3].clone());
        assert!(d.on_fec(header, body).is_empty());
        assert_eq!(d.recovered(), 0);
    }

    #[test]
    fn fec_for_packets_already_let_go_is_ignored() {
        let mut d = FecDecoder::new();
        let old: Vec<_> = (0..2).map(|s| packet(s, &[1])).collect();
        let (header, body) = fec_over(&old);
        for s in 0..(MAX_TRACKED_MEDIA as u16 + 5) {
            if s != 1 {
                d.on_media(packet(s, &[1]));
            }
        }
        // Packet 0 is no longer known: packet 1 cannot be told apart from it.
        assert!(d.on_fec(header, body).is_empty());
        assert!(d.media.len() <= MAX_TRACKED_MEDIA);
    }

    #[test]
    fn memory_is_bounded() {
        let mut d = FecDecoder::new();
        for s in 0..1000u16 {
            // Protects two packets that never arrive: it waits until it is let go.
            let never = [packet(s.wrapping_add(20_000), &[2]), packet(s.wrapping_add(20_001), &[3])];
            let (h, b) = fec_over(&never);
            d.on_fec(h, b);
            d.on_media(packet(s, &[1]));
        }
        assert!(d.media.len() <= MAX_TRACKED_MEDIA && d.fec.len() <= MAX_TRACKED_FEC);
    }

    #[test]
    fn flexfec_recovers_across_a_span_beyond_the_short_mask() {
        // One FlexFEC packet over 20 consecutive packets (Mask [0-14] and [15-45]).
        let media: Vec<_> = (65_530..65_550u32)
            .map(|s| {
                let mut p = packet(s as u16, &[s as u8, 0x5A]);
                p.packet.length = DataSize::bytes(900 + u64::from(s % 50));
                p
            })
            .collect();
        let fields: Vec<ProtectedPacket> = media.iter().map(|p| p.packet).collect();
        let header = FlexfecHeaderRepr::protect(&fields).unwrap();
        let body = xor_bytes(media.iter().map(|p| p.body.as_slice()));
        let mut d = FecDecoder::new();
        for (k, p) in media.iter().enumerate() {
            if k != 17 {
                assert!(d.on_media(p.clone()).is_empty());
            }
        }
        assert_eq!(d.on_fec(header, body), vec![media[17].clone()]);
    }

    #[test]
    fn a_packet_as_written_comes_back_as_written() {
        let header = RtpHeaderRepr {
            payload_type: 96,
            marker: true,
            seq: SeqNo::new(0xFFFE),
            timestamp: 0xDEAD_BEEF,
            ssrc: 0x0102_0304,
            abs_send_time: Some(0x12_3456),
            transport_seq: Some(SeqNo::new(77)),
            frame_marking: Some(FrameMarking { start: false, end: true, independent: true }),
            ..RtpHeaderRepr::default()
        };
        let mut bytes = vec![0; header.buffer_len()];
        header.emit(&mut bytes).unwrap();
        // Sent inside RED (PT 116), protected as PT 96: 1000 payload bytes, 8 of them written.
        let mut red = bytes.clone();
        red[1] = 0x80 | 116;
        let written = [0x90, 0x80, 0x81, 0x23, 0, 0, 0, 42];
        let p = ProtectedBytes::from_rtp(&red, 96, 1000, &written).unwrap();
        assert_eq!(p.packet, ProtectedPacket::from_rtp(&header, DataSize::bytes(1000)));
        let rebuilt = p.rtp_bytes(header.ssrc);
        assert_eq!(RtpHeaderRepr::parse(&rebuilt), Ok((header, bytes.len())));
        assert_eq!(&rebuilt[bytes.len()..], &written);
        assert!(ProtectedBytes::from_rtp(&bytes[..11], 96, 0, &[]).is_err());
    }

    #[test]
    fn ulpfec_and_flexfec_headers_protect_the_same_sets() {
        let media: Vec<_> = (0..12).map(|s| packet(s, &[s as u8])).collect();
        let fields: Vec<ProtectedPacket> = media.iter().map(|p| p.packet).collect();
        let ulp = FecHeader::from(UlpfecHeaderRepr::protect(&fields).unwrap());
        let flex = FecHeader::from(FlexfecHeaderRepr::protect(&fields).unwrap());
        assert!(ulp.protected_seqs().eq(flex.protected_seqs()));
        let received: Vec<_> = fields.iter().filter(|p| p.seq.value() != 5).copied().collect();
        assert_eq!(ulp.recover(&received), Ok(fields[5]));
        assert_eq!(flex.recover(&received), Ok(fields[5]));
    }
}
