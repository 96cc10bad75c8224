//! Transport-wide congestion control feedback
//! (draft-holmer-rmcat-transport-wide-cc-extensions-01 §3, "TWCC-01"; libwebrtc
//! `transport_feedback.cc`).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! |V=2|P|  FMT=15 |    PT=205     |           length              |
//! |                     SSRC of packet sender                     |
//! |                      SSRC of media source                     |
//! |      base sequence number     |      packet status count      |
//! |                 reference time                | fb pkt. count |
//! |          packet chunk         |         packet chunk          |  ...
//! |         recv delta            |  recv delta   | zero padding  |  ...
//! ```
//!
//! Status symbols are 00 not received, 01 received with an 8-bit delta, 10 received with a
//! 16-bit signed delta; chunks are run-length (`0 S(2) run(13)`) or status vectors
//! (`1 0` + 14 one-bit symbols, `1 1` + 7 two-bit symbols). Deltas count 250 µs ticks; the first is
//! relative to the reference time (24-bit signed, 64 ms ticks), each later one to the previous
//! received packet. The chunk and delta coding itself is done by `rtcp_types::TwccBuilder` and
//! `rtcp_types::Twcc`; this module decides what goes into each packet and converts to and from
//! absolute arrival times.
//!
//! Erratum: TWCC-01 §3.1 says "payload type 206" but its figure and every implementation use 205.

use rtcbench_units::{DataSize, Duration, Instant, SeqNo};
use rtcp_types::prelude::*;
use rtcp_types::{TwccBuilder, TwccPacketStatus};

use super::{write_vec, FMT_TWCC, PT_RTPFB};
use crate::{div_round, WireError};

/// Unit of receive deltas, 250 µs (TWCC-01 §3.1.5).
pub const DELTA_TICK: Duration = Duration::from_micros(250);
/// Unit of the reference time, 64 ms = 256 delta ticks (TWCC-01 §3.1).
pub const REFERENCE_TICK: Duration = Duration::from_millis(64);
/// Bytes before the packet chunks: RTCP header (4), two SSRCs (8), base sequence number, status
/// count, reference time and feedback packet count (8).
pub const HEADER_LEN: usize = 20;

/// RTCP header and the two SSRCs, which `rtcp-types`' FCI size limit does not include.
const RTPFB_HEADER_LEN: usize = 12;
/// Packet status count is 16 bits.
const MAX_STATUSES_PER_PACKET: usize = 0xFFFF;
/// Consecutive transport sequence numbers further apart than this are ambiguous in 16 bits.
const MAX_SEQ_GAP: i64 = 0x7FFF;

/// One transport-wide feedback packet, as carried on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TransportFeedbackRepr {
    /// SSRC of the packet sender (the media receiver).
    pub sender_ssrc: u32,
    /// SSRC of the media source; libwebrtc sends the SSRC of one of the streams.
    pub media_ssrc: u32,
    /// Transport-wide sequence number of the first packet reported.
    pub base_seq: SeqNo<16>,
    /// Reference time in units of [`REFERENCE_TICK`] (64 ms), a 24-bit signed value on the wire,
    /// in the receiver's clock.
    pub reference_time: i32,
    /// Counter incremented per feedback packet sent, to detect lost feedback.
    pub feedback_count: u8,
    /// One entry per sequence number from `base_seq`, in order: the receive delta (a multiple of
    /// [`DELTA_TICK`]) for received packets, `None` for packets not received.
    pub packets: Vec<(SeqNo<16>, Option<Duration>)>,
}

impl TransportFeedbackRepr {
    /// Smallest reference time, -2^23.
    pub const REFERENCE_TIME_MIN: i32 = -0x80_0000;
    /// Largest reference time, 2^23 - 1.
    pub const REFERENCE_TIME_MAX: i32 = 0x7F_FFFF;

    /// Parses one RTPFB FMT 15 packet; `bytes` must be exactly the packet.
    pub fn parse(bytes: &[u8]) -> Result<Self, WireError> {
        let fb = rtcp_types::TransportFeedback::parse(bytes)?;
        if fb.count() != FMT_TWCC {
            return Err(WireError::WrongPacketType {
                expected: "transport-wide CC feedback (PT 205, FMT 15)",
                packet_type: fb.type_(),
                fmt: fb.count(),
            });
        }
        let twcc: rtcp_types::Twcc<'_> = fb.parse_fci()?;
        // Twcc::parse has required 8 FCI bytes after the 12-byte RTPFB header, so these exist;
        // rtcp-types does not expose the count, and stops silently when chunks run out.
        let status_count = usize::from(u16::from_be_bytes([bytes[14], bytes[15]]));
        let mut packets = Vec::with_capacity(status_count);
        for entry in twcc.packets() {
            let (seq, status) = entry?;
            let delta = match status {
                TwccPacketStatus::NotReceived => None,
                TwccPacketStatus::Received { delta } => Some(DELTA_TICK * i64::from(delta)),
            };
            packets.push((SeqNo::new(u64::from(seq)), delta));
        }
        if packets.len() != status_count {
            return Err(WireError::BadTransportFeedback(format!(
                "packet status count is {status_count} but the chunks describe {} packets",
                packets.len()
            )));
        }
        Ok(Self {
            sender_ssrc: fb.sender_ssrc(),
            media_ssrc: fb.media_ssrc(),
            base_seq: SeqNo::new(u64::from(twcc.base_sequence_number())),
            reference_time: sign_extend_24(twcc.reference_time()),
            feedback_count: twcc.feedback_packet_count(),
            packets,
        })
    }

    /// The reference time as an instant on the receiver's clock.
    pub fn reference_instant(&self) -> Instant {
        Instant::ZERO + REFERENCE_TICK * i64::from(self.reference_time)
    }

    /// Absolute receive times on the receiver's clock: the reference time plus the running sum
    /// of the deltas (TWCC-01 §3.1.5).
    ///
    /// Exact for receiver clocks within ±2^23 × 64 ms (6.2 days) of zero; beyond that the 24-bit
    /// reference time has wrapped and so have these instants (compare feedback packets with wrap
    /// handling, as libwebrtc's `GetBaseDelta` does, if that matters).
    pub fn arrivals(&self) -> Vec<(SeqNo<16>, Option<Instant>)> {
        let mut t = self.reference_instant();
        self.packets
            .iter()
            .map(|&(seq, delta)| {
                (
                    seq,
                    delta.map(|d| {
                        t += d;
                        t
                    }),
                )
            })
            .collect()
    }

    /// The packet's bytes (its length depends on the chunk coding `rtcp-types` chooses).
    ///
    /// Errors when the sequence numbers are not consecutive from `base_seq`, a delta is not a
    /// multiple of 250 µs or does not fit 16 bits, the reference time does not fit 24 bits, or
    /// there are more than 65535 packets.
    pub fn to_bytes(&self) -> Result<Vec<u8>, WireError> {
        write_vec(&self.builder()?)
    }

    pub(crate) fn builder(&self) -> Result<rtcp_types::TransportFeedbackBuilder<'static>, WireError> {
        if !(Self::REFERENCE_TIME_MIN..=Self::REFERENCE_TIME_MAX).contains(&self.reference_time) {
            return Err(WireError::InvalidField {
                field: "reference_time",
                reason: format!("{} is outside the 24-bit signed range", self.reference_time),
            });
        }
        if self.packets.len() > MAX_STATUSES_PER_PACKET {
            return Err(WireError::InvalidField {
                field: "packets",
                reason: format!("{} packets, at most {MAX_STATUSES_PER_PACKET} fit", self.packets.len()),
            });
        }
        let mut expected_seq = self.base_seq;
        let mut statuses = Vec::with_capacity(self.packets.len());
        for &(seq, delta) in &self.packets {
            if seq != expected_seq {
                return Err(WireError::InvalidField {
                    field: "packets",
                    reason: format!("sequence number {} where {} was due", seq.value(), expected_seq.value()),
                });
            }
            expected_seq = seq.next();
            statuses.push(match delta {
                None => TwccPacketStatus::NotReceived,
                Some(d) => TwccPacketStatus::Received { delta: delta_ticks(d)? },
            });
        }
        let fci = TwccBuilder::new(
            self.base_seq.value() as u16,
            self.reference_time as u32 & 0x00FF_FFFF,
            self.feedback_count,
            &statuses,
            None,
        );
        debug_assert_eq!(fci.packet_status_count(), statuses.len());
        Ok(rtcp_types::TransportFeedback::builder_owned(fci)
            .sender_ssrc(self.sender_ssrc)
            .media_ssrc(self.media_ssrc))
    }
}

/// A delta as a count of 250 µs ticks, if it is an exact multiple that fits 16 bits.
fn delta_ticks(d: Duration) -> Result<i16, WireError> {
    let us = d.as_micros();
    if us % DELTA_TICK.as_micros() != 0 {
        return Err(WireError::InvalidField {
            field: "packets",
            reason: format!("receive delta {d} is not a multiple of 250 us"),
        });
    }
    i16::try_from(us / DELTA_TICK.as_micros()).map_err(|_| WireError::InvalidField {
        field: "packets",
        reason: format!("receive delta {d} is outside [-8192, 8191.75] ms"),
    })
}

fn sign_extend_24(v: u32) -> i32 {
    ((v << 8) as i32) >> 8
}

/// Builds transport-wide feedback packets from absolute arrival times, as a receiver does.
///
/// Follows libwebrtc's `TransportFeedback`: the reference time is the first received arrival of
/// the packet floored to 64 ms, and each delta is rounded to 250 µs from the previously *encoded*
/// time, so the rounding error never exceeds 125 µs and does not accumulate. A new feedback
/// packet starts when a delta does not fit 16 bits (±8.19 s) or the packet would exceed the
/// maximum size.
#[derive(Debug, Clone)]
pub struct TwccEncoder {
    sender_ssrc: u32,
    media_ssrc: u32,
    max_packet_size: DataSize,
    feedback_count: u8,
}

impl TwccEncoder {
    /// Default packet size limit, which keeps feedback within common MTUs.
    pub const DEFAULT_MAX_PACKET_SIZE: DataSize = DataSize::bytes(1200);
    /// Smallest accepted limit: header plus a little room, so every packet holds a chunk.
    pub const MIN_PACKET_SIZE: DataSize = DataSize::bytes(64);

    /// An encoder whose first packet will carry feedback count 0.
    pub fn new(sender_ssrc: u32, media_ssrc: u32) -> Self {
        Self { sender_ssrc, media_ssrc, max_packet_size: Self::DEFAULT_MAX_PACKET_SIZE, feedback_count: 0 }
    }

    /// Limits each RTCP packet to `size` (clamped to at least [`Self::MIN_PACKET_SIZE`]).
    pub fn with_max_packet_size(mut self, size: DataSize) -> Self {
        self.max_packet_size = size.max(Self::MIN_PACKET_SIZE);
        self
    }

    /// Sets the feedback count of the next packet.
    pub fn with_feedback_count(mut self, next: u8) -> Self {
        self.feedback_count = next;
        self
    }

    /// The feedback count the next packet will carry.
    pub fn next_feedback_count(&self) -> u8 {
        self.feedback_count
    }

    /// Encodes `arrivals` into complete RTCP packets; see [`build`](Self::build).
    pub fn encode(&mut self, arrivals: &[(i64, Option<Instant>)]) -> Result<Vec<Vec<u8>>, WireError> {
        let reprs = self.build(arrivals)?;
        let packets = reprs.iter().map(TransportFeedbackRepr::to_bytes).collect::<Result<Vec<_>, _>>()?;
        debug_assert!(packets.iter().all(|p| p.len() as u64 <= self.max_packet_size.as_bytes()));
        Ok(packets)
    }

    /// Splits `arrivals` into feedback packets, without writing bytes.
    ///
    /// `arrivals` holds `(unwrapped transport sequence number, arrival)` sorted by strictly
    /// increasing sequence number. Sequence numbers missing from the list and entries with `None`
    /// are reported as not received. Each packet produced takes the next feedback count.
    pub fn build(
        &mut self,
        arrivals: &[(i64, Option<Instant>)],
    ) -> Result<Vec<TransportFeedbackRepr>, WireError> {
        let Some(&(first_seq, _)) = arrivals.first() else {
            return Ok(Vec::new());
        };
        let mut dense: Vec<Option<Instant>> = Vec::with_capacity(arrivals.len());
        let mut prev_seq = first_seq - 1;
        for &(seq, arrival) in arrivals {
            let gap = seq - prev_seq;
            if gap <= 0 {
                return Err(WireError::InvalidInput(format!(
                    "transport sequence numbers must increase: {seq} follows {prev_seq}"
                )));
            }
            if gap > MAX_SEQ_GAP {
                return Err(WireError::InvalidInput(format!(
                    "gap of {gap} between transport sequence numbers {prev_seq} and {seq} \
                     exceeds the 16-bit space's {MAX_SEQ_GAP}"
                )));
            }
            dense.extend(std::iter::repeat_n(None, (gap - 1) as usize));
            dense.push(arrival);
            prev_seq = seq;
        }

        // rtcp-types limits the FCI alone; keep it a whole number of 32-bit words.
        let max_fci = (self.max_packet_size.as_bytes() as usize - RTPFB_HEADER_LEN) & !3;
        let mut out = Vec::new();
        let mut feedback_count = self.feedback_count;
        let mut reference_ticks = 0i64;
        let mut start = 0;
        while start < dense.len() {
            let window = &dense[start..];
            // TWCC-01 §3.1: the first delta is relative to the reference time, so take it from
            // the first received packet; an all-lost window keeps the previous one.
            if let Some(first) = window.iter().flatten().next() {
                reference_ticks = first.as_micros().div_euclid(REFERENCE_TICK.as_micros());
            }
            let mut encoded = Instant::ZERO + REFERENCE_TICK * reference_ticks;
            let mut statuses = Vec::new();
            let mut received = 0;
            for arrival in window.iter().take(MAX_STATUSES_PER_PACKET) {
                let status = match arrival {
                    None => TwccPacketStatus::NotReceived,
                    // Each received packet takes at least one delta byte: no point looking further.
                    Some(_) if received == max_fci => break,
                    Some(t) => {
                        received += 1;
                        let ticks =
                            div_round((*t - encoded).as_micros().into(), DELTA_TICK.as_micros().into());
                        let Ok(delta) = i16::try_from(ticks) else {
                            // Out of range: this packet ends here and the next gets a new
                            // reference time. Never the window's first received packet, whose
                            // delta is below 64 ms.
                            break;
                        };
                        encoded += DELTA_TICK * i64::from(delta);
                        TwccPacketStatus::Received { delta }
                    }
                };
                statuses.push(status);
            }
            let reference_time = sign_extend_24((reference_ticks as u32) & 0x00FF_FFFF);
            let base_seq = first_seq + start as i64;
            let fci = TwccBuilder::new(
                base_seq as u16,
                reference_time as u32 & 0x00FF_FFFF,
                feedback_count,
                &statuses,
                Some(max_fci),
            );
            let consumed = fci.packet_status_count();
            if consumed == 0 {
                // Unreachable with MIN_PACKET_SIZE, which leaves room for any first chunk.
                return Err(WireError::InvalidInput(format!(
                    "maximum packet size {} leaves no room for a packet chunk",
                    self.max_packet_size
                )));
            }
            let packets = statuses[..consumed]
                .iter()
                .enumerate()
                .map(|(i, status)| {
                    let delta = match *status {
                        TwccPacketStatus::NotReceived => None,
                        TwccPacketStatus::Received { delta } => Some(DELTA_TICK * i64::from(delta)),
                    };
                    (SeqNo::new((base_seq + i as i64) as u64), delta)
                })
                .collect();
            out.push(TransportFeedbackRepr {
                sender_ssrc: self.sender_ssrc,
                media_ssrc: self.media_ssrc,
                base_seq: SeqNo::new(base_seq as u64),
                reference_time,
                feedback_count,
                packets,
            });
            feedback_count = feedback_count.wrapping_add(1);
            start += consumed;
        }
        self.feedback_count = feedback_count;
        Ok(out)
    }
}

// Keep the packet-type constant and the rtcp-types one in step.
const _: () = {
    use rtcp_types::RtcpPacket as _;
    assert!(rtcp_types::TransportFeedback::PACKET_TYPE == PT_RTPFB);
};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A feedback packet written by hand from TWCC-01 §3.1: packets 100..=115, with one
    /// run-length chunk, one two-bit status-vector chunk, 15 delta bytes and 1 padding byte.
    const HAND_WRITTEN: [u8; 40] = [
        0x8F, 205, 0x00, 0x09, // V=2, P=0, FMT=15, PT=205, length 9 words (40 bytes)
        0x00, 0x00, 0x00, 0x01, // SSRC of packet sender: 1
        0x00, 0x00, 0x00, 0x02, // SSRC of media source: 2
        0x00, 100, // base sequence number 100
        0x00, 16, // packet status count 16
        0x00, 0x03, 0xE8, // reference time 1000 × 64 ms = 64 s
        7,    // feedback packet count
        0x20, 0x0A, // run-length chunk: T=0, S=01 (small delta), run length 10: seq 100..=109
        // Two-bit vector chunk: T=1, S=1, then 10 00 01 00 00 10 00 for seq 110..=116; only
        // 110..=115 count (status count 16), the last symbol is unused.
        0xE1, 0x08, // Small deltas of 100..=109: 1 ms, then 2 ms eight times, then 50 ms.
        4, 8, 8, 8, 8, 8, 8, 8, 8, 200, 0xFF,
        0xFC, // 110: large/negative delta, -4 ticks = -1 ms (reordered)
        80,   // 112: small delta, 20 ms (111 was lost)
        0x01, 0x2C, // 115: large delta, 300 ticks = 75 ms (113 and 114 were lost)
        0x00, // zero padding to a 32-bit boundary
    ];

    #[test]
    fn hand_written_packet_parses_to_the_expected_arrivals() {
        let fb = TransportFeedbackRepr::parse(&HAND_WRITTEN).unwrap();
        assert_eq!((fb.sender_ssrc, fb.media_ssrc), (1, 2));
        assert_eq!((fb.base_seq, fb.reference_time, fb.feedback_count), (SeqNo::new(100), 1000, 7));
        let ms = |m: i64| Some(Instant::from_millis(64_000 + m));
        let mut expected: Vec<_> = [1, 3, 5, 7, 9, 11, 13, 15, 17, 67]
            .iter()
            .enumerate()
            .map(|(i, &m)| (SeqNo::new(100 + i as u64), ms(m)))
            .collect();
        expected.extend([
            (SeqNo::new(110), ms(66)),
            (SeqNo::new(111), None),
            (SeqNo::new(112), ms(86)),
            (SeqNo::new(113), None),
            (SeqNo::new(114), None),
            (SeqNo::new(115), ms(161)),
        ]);
        assert_eq!(fb.arrivals(), expected);
        // Written again (rtcp-types may pick other chunks), it parses to the same packet.
        assert_eq!(TransportFeedbackRepr::parse(&fb.to_bytes().unwrap()), Ok(fb));
    }

    #[test]
    fn malformed_packets_are_errors() {
        // A status count of 1 but no room for any chunk.
        let no_chunks = [
            0x8F, 205, 0x00, 0x04, 0, 0, 0, 1, 0, 0, 0, 2, // header, 5 words
            0x00, 100, 0x00, 0x01, 0x00, 0x00, 0x01, 0x00, // base 100, count 1, ref 1, fb 0
        ];
        assert!(matches!(TransportFeedbackRepr::parse(&no_chunks), Err(WireError::BadTransportFeedback(_))));
        // 17 makes the vector's unused last symbol (00, not received) count: still consistent.
        let mut seventeen = HAND_WRITTEN;
        seventeen[15] = 17;
        assert_eq!(TransportFeedbackRepr::parse(&seventeen).unwrap().packets.len(), 17);
        // A run of 40 small deltas needs 40 delta bytes; the packet has 18 after that chunk.
        let mut short = HAND_WRITTEN;
        short[15] = 40;
        short[21] = 40;
        assert!(matches!(TransportFeedbackRepr::parse(&short), Err(WireError::Rtcp(_))));
        // Not FMT 15 (a generic NACK is FMT 1).
        let mut nack = HAND_WRITTEN;
        nack[0] = 0x81;
        assert!(matches!(
            TransportFeedbackRepr::parse(&nack),
            Err(WireError::WrongPacketType { fmt: 1, .. })
        ));
        assert!(TransportFeedbackRepr::parse(&HAND_WRITTEN[..36]).is_err());
    }

    /// Arrival times in microseconds for seq 100..=120, `None` for lost packets.
    fn scripted_arrivals() -> Vec<(i64, Option<Instant>)> {
        let us = [
            Some(1_000_123),
            Some(1_004_567),
            None,
            Some(1_009_999),
            Some(1_009_001), // reordered: arrives before its predecessor, a negative delta
            Some(1_015_250),
            None,
            None,
            Some(1_120_777), // 105 ms gap, more than one reference tick and a large delta
            Some(1_120_778),
            Some(1_121_000),
            Some(1_140_001),
            None,
            Some(1_160_000),
            Some(1_160_125), // exactly half a tick: rounding must not accumulate
            Some(1_160_250),
            Some(1_160_375),
            Some(1_400_000),
            Some(1_400_001),
            None,
            Some(1_401_000),
        ];
        us.iter().enumerate().map(|(i, t)| (100 + i as i64, t.map(Instant::from_micros))).collect()
    }

    fn assert_decodes_within(
        packets: &[Vec<u8>],
        arrivals: &[(i64, Option<Instant>)],
        tolerance: Duration,
    ) -> Vec<TransportFeedbackRepr> {
        let reprs: Vec<_> =
            packets.iter().map(|p| TransportFeedbackRepr::parse(p).expect("our own packet parses")).collect();
        let decoded: Vec<_> = reprs.iter().flat_map(TransportFeedbackRepr::arrivals).collect();
        let first = arrivals[0].0;
        let span = (arrivals.last().unwrap().0 - first + 1) as usize;
        assert_eq!(decoded.len(), span, "every sequence number is reported once");
        for (i, (seq, got)) in decoded.iter().enumerate() {
            let want_seq = first + i as i64;
            assert_eq!(seq.value(), want_seq as u64 & 0xFFFF);
            let want = arrivals.iter().find(|a| a.0 == want_seq).and_then(|a| a.1);
            match (want, got) {
                (None, None) => {}
                (Some(w), Some(g)) => assert!((*g - w).abs() <= tolerance, "seq {want_seq}: {g} vs {w}"),
                _ => panic!("seq {want_seq}: expected {want:?}, decoded {got:?}"),
            }
        }
        reprs
    }

    #[test]
    fn encoded_arrivals_decode_within_quantisation() {
        let arrivals = scripted_arrivals();
        let mut enc = TwccEncoder::new(11, 22).with_feedback_count(250);
        let packets = enc.encode(&arrivals).unwrap();
        assert_eq!(packets.len(), 1);
        let reprs = assert_decodes_within(&packets, &arrivals, Duration::from_micros(125));
        // Reference time: floor(1.000123 s / 64 ms) = 15.
        assert_eq!(reprs[0].reference_time, 15);
        assert_eq!(reprs[0].feedback_count, 250);
        assert_eq!(enc.next_feedback_count(), 251);
    }

    #[test]
    fn arrivals_on_the_tick_grid_decode_exactly() {
        let arrivals: Vec<_> = scripted_arrivals()
            .into_iter()
            .map(|(s, t)| (s, t.map(|t| Instant::from_micros(t.as_micros() / 250 * 250))))
            .collect();
        let packets = TwccEncoder::new(1, 2).encode(&arrivals).unwrap();
        assert_decodes_within(&packets, &arrivals, Duration::ZERO);
    }

    #[test]
    fn gaps_in_the_sequence_are_reported_lost() {
        let t = Instant::from_millis(5);
        let arrivals = [(65_534, Some(t)), (65_537, Some(t + Duration::from_millis(1)))];
        let reprs = TwccEncoder::new(1, 2).build(&arrivals).unwrap();
        assert_eq!(
            reprs[0].arrivals(),
            vec![
                (SeqNo::new(65_534), Some(t)),
                (SeqNo::new(65_535), None),
                (SeqNo::new(0), None),
                (SeqNo::new(1), Some(t + Duration::from_millis(1))),
            ]
        );
        let bad = [(5, Some(t)), (5, Some(t))];
        assert!(matches!(TwccEncoder::new(1, 2).build(&bad), Err(WireError::InvalidInput(_))));
        assert_eq!(TwccEncoder::new(1, 2).encode(&[]), Ok(vec![]));
    }

    #[test]
    fn out_of_range_delta_splits_the_feedback() {
        // 9 s and then -9 s between packets: neither fits a 16-bit delta (±8.19 s).
        let arrivals = [
            (0, Some(Instant::from_millis(100))),
            (1, Some(Instant::from_millis(110))),
            (2, Some(Instant::from_millis(9_110))),
            (3, None),
            (4, Some(Instant::from_millis(120))),
        ];
        let mut enc = TwccEncoder::new(1, 2);
        let packets = enc.encode(&arrivals).unwrap();
        assert_eq!(packets.len(), 3);
        let reprs = assert_decodes_within(&packets, &arrivals, Duration::ZERO);
        let counts: Vec<_> = reprs.iter().map(|r| r.feedback_count).collect();
        assert_eq!(counts, [0, 1, 2]);
        assert_eq!(reprs[1].reference_time, 9_110 / 64);
    }

    #[test]
    fn size_limit_splits_the_feedback() {
        // 600 packets with large (2-byte) deltas alternating ±300 ms.
        let arrivals: Vec<_> = (0..600)
            .map(|i| (i, Some(Instant::from_millis(10_000 + if i % 2 == 0 { 0 } else { 300 }))))
            .collect();
        let limit = DataSize::bytes(200);
        let packets = TwccEncoder::new(1, 2).with_max_packet_size(limit).encode(&arrivals).unwrap();
        assert!(packets.len() >= 600 * 2 / 200);
        assert!(packets.iter().all(|p| p.len() <= 200));
        assert_decodes_within(&packets, &arrivals, Duration::ZERO);
    }

    const REFERENCE_TIME_MIN: i32 = TransportFeedbackRepr::REFERENCE_TIME_MIN;
    const REFERENCE_TIME_MAX: i32 = TransportFeedbackRepr::REFERENCE_TIME_MAX;

    fn arb_arrivals() -> impl Strategy<Value = Vec<(i64, Option<Instant>)>> {
        let step = (1i64..4, proptest::option::weighted(0.85, -20_000i64..120_000), 0u8..100);
        (0i64..200_000, -10_000_000i64..10_000_000, proptest::collection::vec(step, 1..300)).prop_map(
            |(first_seq, start_us, steps)| {
                let mut seq = first_seq;
                let mut t = start_us;
                steps
                    .into_iter()
                    .map(|(gap, jitter, jump)| {
                        seq += gap;
                        // Now and then a jump beyond the 16-bit delta range.
                        t += if jump == 0 { 9_000_000 } else { 0 };
                        (seq, jitter.map(|j| Instant::from_micros(t + j)))
                    })
                    .collect()
            },
        )
    }

    proptest! {
        #[test]
        fn encoder_round_trips(arrivals in arb_arrivals(), max in 64u64..1500) {
            let mut enc = TwccEncoder::new(3, 4).with_max_packet_size(DataSize::bytes(max));
            let packets = enc.encode(&arrivals).unwrap();
            for p in &packets {
                prop_assert!(p.len() as u64 <= max.max(64));
            }
            assert_decodes_within(&packets, &arrivals, Duration::from_micros(125));
        }

        #[test]
        fn repr_round_trips(
            base in any::<u16>(),
            reference_time in REFERENCE_TIME_MIN..=REFERENCE_TIME_MAX,
            feedback_count in any::<u8>(),
            deltas in proptest::collection::vec(proptest::option::of(any::<i16>()), 1..200),
        ) {
            let repr = TransportFeedbackRepr {
                sender_ssrc: 5,
                media_ssrc: 6,
                base_seq: SeqNo::new(u64::from(base)),
                reference_time,
                feedback_count,
                packets: deltas
                    .iter()
                    .enumerate()
                    .map(|(i, d)| {
                        let seq = SeqNo::new(u64::from(base) + i as u64);
                        (seq, d.map(|d| DELTA_TICK * i64::from(d)))
                    })
                    .collect(),
            };
            prop_assert_eq!(TransportFeedbackRepr::parse(&repr.to_bytes().unwrap()), Ok(repr));
        }
    }
}
