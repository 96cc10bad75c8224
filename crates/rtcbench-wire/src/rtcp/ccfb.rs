//! RTP Control Protocol feedback for congestion control (RFC 8888 §3.1, "CCFB"; libwebrtc
//! `congestion_control_feedback.cc`): per media stream, which packets arrived, with their ECN
//! marks and arrival times.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! |V=2|P| FMT=11  |   PT=205      |          length               |
//! |                 SSRC of RTCP packet sender                    |
//! |                   SSRC of 1st RTP Stream                      |  \
//! |          begin_seq            |          num_reports          |   | per stream
//! |R|ECN|  Arrival time offset    | ...                           |   |
//! |  ... (16 zero bits if num_reports is odd)                     |  /
//! |                 Report Timestamp (32 bits)                    |
//! ```
//!
//! Unlike other RTPFB messages there is no "SSRC of media source" word.
//!
//! * **num_reports** is the *count* of metric blocks, which cover `begin_seq` to
//!   `begin_seq + num_reports - 1`. RFC 8888's text says "inclusive" ranges; erratum EID 8166
//!   corrects it, and libwebrtc and current pion count the same way. A block holds at most 16384
//!   metric blocks, a quarter of the sequence space ([`MAX_REPORTS_PER_STREAM`]).
//! * **R** is 1 if the packet arrived. A metric block with R = 0 should have ECN and ATO zero;
//!   any other bits are ignored on parse, so such a packet is re-emitted with zeros.
//! * **ECN** holds the two ECN bits the packet arrived with (RFC 3168 §5).
//! * **ATO**, the arrival time offset, counts units of 1/1024 s (976.6 µs) *before* the report
//!   timestamp. 0x1FFE means "more than 8189/1024 s" and 0x1FFF "unavailable, or arrived after
//!   the report timestamp".
//! * **Report Timestamp** (RTS) is compact NTP, the middle 32 bits of the 64-bit NTP time
//!   (units of 1/65536 s, 15.26 µs), on the clock the receiver uses for its sender reports.
//!
//! Arrival offsets are [`Duration`]s here, the ATO rounded to the nearest microsecond, so every
//! value that came from the wire is written back to the same ATO.

use rtcbench_units::{Duration, Instant, SeqNo};
use rtcp_types::prelude::*;

use super::{emit_common_header, strip_padding, FMT_CCFB, MAX_PACKET_LEN, PT_RTPFB};
use crate::{div_round, ntp, WireError};

/// Most metric blocks in one report block (RFC 8888 §3.1): a quarter of the 16-bit sequence
/// space.
pub const MAX_REPORTS_PER_STREAM: usize = 16384;
/// Shortest packet: RTCP header (4), sender SSRC (4) and report timestamp (4), no streams.
pub const MIN_LEN: usize = 12;
/// ATO units per second (RFC 8888 §3.1).
pub const ATO_UNITS_PER_SEC: i64 = 1024;

/// SSRC of the stream, begin_seq and num_reports.
const STREAM_HEADER_LEN: usize = 8;
const METRIC_LEN: usize = 2;
/// ATO code for "more than 8189/1024 s before the report timestamp".
const ATO_OVER_RANGE: u16 = 0x1FFE;
/// ATO code for "unavailable, or after the report timestamp".
const ATO_UNAVAILABLE: u16 = 0x1FFF;
const RECEIVED_BIT: u16 = 0x8000;
const MICROS_PER_SEC: i128 = 1_000_000;

/// Input of [`CcfbRepr::from_arrivals`] for one media stream: SSRC, unwrapped RTP sequence
/// number of the first entry, and one entry per consecutive sequence number,
/// `Some((arrival, ECN bits))` or `None` if not received.
pub type CcfbStreamArrivals<'a> = (u32, i64, &'a [Option<(Instant, u8)>]);

/// Output of [`CcfbRepr::arrivals`] for one metric block: SSRC, sequence number, and
/// `Some((arrival on the receiver's clock, ECN bits))` or `None`.
pub type CcfbArrival = (u32, SeqNo<16>, Option<(Instant, u8)>);

/// One RFC 8888 congestion control feedback packet.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CcfbRepr {
    /// SSRC of the RTCP packet sender (the media receiver).
    pub sender_ssrc: u32,
    /// Report Timestamp, RTS: compact NTP time (middle 32 bits, units of 1/65536 s) at which the
    /// report was made, on the receiver's clock; see [`CcfbRepr::report_instant`].
    pub report_timestamp: u32,
    /// One report block per media stream, in packet order.
    pub streams: Vec<CcfbStream>,
}

/// The report block about one media stream.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CcfbStream {
    /// SSRC of the RTP stream reported on.
    pub media_ssrc: u32,
    /// RTP sequence number of the first metric block.
    pub begin_seq: SeqNo<16>,
    /// One entry per sequence number from `begin_seq`: `None` when the packet was not received
    /// (R = 0). At most [`MAX_REPORTS_PER_STREAM`].
    pub reports: Vec<Option<CcfbMetric>>,
}

/// What RFC 8888 reports about a received packet (a metric block with R = 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CcfbMetric {
    /// The two ECN bits of the IP header the packet arrived with (RFC 3168 §5), see
    /// [`CcfbMetric::ECN_CE`] and its siblings.
    pub ecn: u8,
    /// ATO: how long before the report timestamp the packet arrived, in whole 1/1024 s rounded
    /// to 1 µs. `None` for 0x1FFF, "unavailable or after the report timestamp". The over-range
    /// code 0x1FFE reads as [`CcfbMetric::OVER_RANGE`], meaning "at least that long".
    pub arrival_offset: Option<Duration>,
}

impl CcfbMetric {
    /// Not ECN-capable transport.
    pub const ECN_NOT_ECT: u8 = 0b00;
    /// ECN-capable transport, ECT(1) (the L4S codepoint, RFC 9331).
    pub const ECN_ECT1: u8 = 0b01;
    /// ECN-capable transport, ECT(0).
    pub const ECN_ECT0: u8 = 0b10;
    /// Congestion experienced.
    pub const ECN_CE: u8 = 0b11;
    /// The arrival offset of the over-range code 0x1FFE, 8190/1024 s; every longer offset is
    /// written as it.
    pub const OVER_RANGE: Duration = Duration::from_micros(7_998_047);

    /// Whether the arrival offset is the over-range code: the packet arrived at least
    /// [`OVER_RANGE`](Self::OVER_RANGE) before the report timestamp.
    pub fn is_over_range(&self) -> bool {
        self.arrival_offset.is_some_and(|d| d >= Self::OVER_RANGE)
    }
}

impl CcfbStream {
    /// Bytes of this report block: header, metric blocks and the padding of an odd count.
    pub fn buffer_len(&self) -> usize {
        STREAM_HEADER_LEN + self.reports.len().div_ceil(2) * 2 * METRIC_LEN
    }
}

impl CcfbRepr {
    /// Length of the packet as emitted.
    pub fn buffer_len(&self) -> usize {
        MIN_LEN + self.streams.iter().map(CcfbStream::buffer_len).sum::<usize>()
    }

    /// The report timestamp as an instant on the receiver's clock, exact to 1 µs for clocks
    /// within ±9.1 h of `Instant::ZERO` (see [`ntp::from_compact`]).
    pub fn report_instant(&self) -> Instant {
        ntp::from_compact(self.report_timestamp)
    }

    /// Parses one RTPFB FMT 11 packet; `bytes` must be exactly the packet.
    ///
    /// Errors when a report block announces more metric blocks than follow, more than 16384, or
    /// the report blocks do not tile the space between the sender SSRC and the report timestamp.
    pub fn parse(bytes: &[u8]) -> Result<Self, WireError> {
        // Version, packet type, the length field and non-zero padding.
        let fb = rtcp_types::TransportFeedback::parse(bytes)?;
        if fb.count() != FMT_CCFB {
            return Err(WireError::WrongPacketType {
                expected: "RFC 8888 congestion control feedback (PT 205, FMT 11)",
                packet_type: fb.type_(),
                fmt: fb.count(),
            });
        }
        let packet = strip_padding(bytes, MIN_LEN).ok_or_else(|| {
            WireError::BadCongestionControlFeedback(format!(
                "padding of {} bytes leaves less than the {MIN_LEN} bytes of header and report timestamp",
                bytes[bytes.len() - 1]
            ))
        })?;
        let word = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        let half = |b: &[u8]| u16::from_be_bytes([b[0], b[1]]);
        let (body, rts) = packet.split_at(packet.len() - 4);
        let mut rest = &body[8..];
        let mut streams = Vec::new();
        while !rest.is_empty() {
            let Some((header, after)) = rest.split_at_checked(STREAM_HEADER_LEN) else {
                return Err(WireError::BadCongestionControlFeedback(format!(
                    "{} bytes left before the report timestamp, too few for a report block header",
                    rest.len()
                )));
            };
            let media_ssrc = word(header);
            let num_reports = usize::from(half(&header[6..]));
            if num_reports > MAX_REPORTS_PER_STREAM {
                return Err(WireError::BadCongestionControlFeedback(format!(
                    "num_reports {num_reports} for SSRC {media_ssrc:#010x}, at most \
                     {MAX_REPORTS_PER_STREAM} are allowed"
                )));
            }
            let metrics_len = num_reports.div_ceil(2) * 2 * METRIC_LEN;
            let Some((metrics, after)) = after.split_at_checked(metrics_len) else {
                return Err(WireError::BadCongestionControlFeedback(format!(
                    "num_reports {num_reports} for SSRC {media_ssrc:#010x} needs {metrics_len} bytes, \
                     {} are left before the report timestamp",
                    after.len()
                )));
            };
            streams.push(CcfbStream {
                media_ssrc,
                begin_seq: SeqNo::new(u64::from(half(&header[4..]))),
                // An odd count leaves the last chunk as padding.
                reports: metrics
                    .chunks_exact(METRIC_LEN)
                    .take(num_reports)
                    .map(|m| decode(half(m)))
                    .collect(),
            });
            rest = after;
        }
        Ok(Self { sender_ssrc: word(&body[4..]), report_timestamp: word(rts), streams })
    }

    /// Writes the packet into the start of `buf`; returns the bytes written.
    ///
    /// Arrival offsets are rounded to the nearest 1/1024 s. Offsets from 8189.5/1024 s on are
    /// written as the over-range code 0x1FFE, and negative ones (arrivals after the report
    /// timestamp) as 0x1FFF, as RFC 8888 §3.1 requires. Errors when an ECN value does not fit 2
    /// bits, a stream has more than 16384 reports, the packet exceeds the 16-bit length field
    /// (256 KiB), or `buf` is shorter than [`buffer_len`](Self::buffer_len).
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        self.check()?;
        let (len, actual) = (self.buffer_len(), buf.len());
        let buf = buf.get_mut(..len).ok_or(WireError::BufferTooSmall {
            what: "RFC 8888 congestion control feedback",
            needed: len,
            actual,
        })?;
        emit_common_header(buf, FMT_CCFB, PT_RTPFB, len);
        buf[4..8].copy_from_slice(&self.sender_ssrc.to_be_bytes());
        let mut at = 8;
        for stream in &self.streams {
            let end = at + stream.buffer_len();
            let block = &mut buf[at..end];
            block[..4].copy_from_slice(&stream.media_ssrc.to_be_bytes());
            block[4..6].copy_from_slice(&(stream.begin_seq.value() as u16).to_be_bytes());
            block[6..8].copy_from_slice(&(stream.reports.len() as u16).to_be_bytes());
            let metrics = &mut block[STREAM_HEADER_LEN..];
            // Zero the padding of an odd count.
            metrics.fill(0);
            for (chunk, report) in metrics.chunks_exact_mut(METRIC_LEN).zip(&stream.reports) {
                chunk.copy_from_slice(&encode(report).to_be_bytes());
            }
            at = end;
        }
        buf[at..].copy_from_slice(&self.report_timestamp.to_be_bytes());
        Ok(len)
    }

    /// The packet's bytes; see [`emit`](Self::emit).
    pub fn to_bytes(&self) -> Result<Vec<u8>, WireError> {
        let mut buf = vec![0; self.buffer_len()];
        self.emit(&mut buf)?;
        Ok(buf)
    }

    fn check(&self) -> Result<(), WireError> {
        for stream in &self.streams {
            if stream.reports.len() > MAX_REPORTS_PER_STREAM {
                return Err(WireError::InvalidField {
                    field: "streams",
                    reason: format!(
                        "{} reports for SSRC {:#010x}, at most {MAX_REPORTS_PER_STREAM} are allowed",
                        stream.reports.len(),
                        stream.media_ssrc
                    ),
                });
            }
            if let Some(metric) = stream.reports.iter().flatten().find(|m| m.ecn > CcfbMetric::ECN_CE) {
                return Err(WireError::InvalidField {
                    field: "streams",
                    reason: format!(
                        "ECN value {} for SSRC {:#010x} does not fit 2 bits",
                        metric.ecn, stream.media_ssrc
                    ),
                });
            }
        }
        if self.buffer_len() > MAX_PACKET_LEN {
            return Err(WireError::InvalidField {
                field: "streams",
                reason: format!(
                    "the packet would be {} bytes, the RTCP length field allows {MAX_PACKET_LEN}",
                    self.buffer_len()
                ),
            });
        }
        Ok(())
    }

    /// Builds the feedback a receiver sends at `report_time` (its own clock).
    ///
    /// `per_stream` holds, per media stream, `(SSRC, unwrapped RTP sequence number of the first
    /// entry, one entry per consecutive sequence number)`, each entry `Some((arrival, ecn))` for a
    /// received packet (`ecn` the two ECN bits) and `None` for a missing one. An empty slice
    /// gives a report block without metric blocks.
    ///
    /// * The report timestamp is `report_time` in compact NTP ([`ntp::to_compact`]), truncated to
    ///   1/65536 s (15.26 µs).
    /// * Each ATO is measured from that truncated timestamp, not from `report_time`, so the
    ///   sender recovers arrivals within half an ATO unit (488 µs) whatever the truncation.
    ///   Rounded to the nearest 1/1024 s; 8189.5/1024 s and more become the over-range code
    ///   0x1FFE; arrivals after `report_time` become 0x1FFF, since RFC 8888 §3.1 has no
    ///   negative offsets.
    /// * A stream with more than 16384 entries keeps its most recent 16384 (RFC 8888 §3.1 forbids
    ///   more): congestion control needs the newest, and the older ones were due in earlier
    ///   reports.
    ///
    /// The result holds exactly what its bytes decode to: `CcfbRepr::parse(&r.to_bytes()?)` is
    /// `r`. Errors when an ECN value does not fit 2 bits.
    pub fn from_arrivals(
        sender_ssrc: u32,
        report_time: Instant,
        per_stream: &[CcfbStreamArrivals<'_>],
    ) -> Result<Self, WireError> {
        let report_timestamp = ntp::to_compact(report_time);
        // The instant of the truncated timestamp, on the sender's own clock whatever its range.
        let rts = ntp::from_ntp64(ntp::to_ntp64(report_time) & !0xFFFF);
        let mut streams = Vec::with_capacity(per_stream.len());
        for &(media_ssrc, first_seq, arrivals) in per_stream {
            let skip = arrivals.len().saturating_sub(MAX_REPORTS_PER_STREAM);
            let mut reports = Vec::with_capacity(arrivals.len() - skip);
            for (i, entry) in arrivals.iter().enumerate().skip(skip) {
                let Some((arrival, ecn)) = *entry else {
                    reports.push(None);
                    continue;
                };
                if ecn > CcfbMetric::ECN_CE {
                    return Err(WireError::InvalidInput(format!(
                        "ECN value {ecn} of SSRC {media_ssrc:#010x} sequence number {} does not fit 2 bits",
                        first_seq + i as i64
                    )));
                }
                let code = if arrival > report_time {
                    ATO_UNAVAILABLE
                } else {
                    // Arrivals between the truncated timestamp and report_time (< 15.26 µs)
                    // round to an ATO of 0.
                    ato_code(rts - arrival)
                };
                reports.push(Some(CcfbMetric { ecn, arrival_offset: ato_duration(code) }));
            }
            streams.push(CcfbStream {
                media_ssrc,
                begin_seq: SeqNo::new((first_seq + skip as i64) as u64),
                reports,
            });
        }
        Ok(Self { sender_ssrc, report_timestamp, streams })
    }

    /// Every metric block as `(SSRC, sequence number, arrival)` in packet order, the arrival
    /// being `(instant on the receiver's clock, ECN bits)`: the report instant minus the ATO.
    ///
    /// `None` for packets not received, and also for received packets whose ATO is 0x1FFF
    /// (their time is unknown; libwebrtc reads them the same way). Read
    /// [`streams`](Self::streams) to tell the two apart or to see their ECN marks. Over-range
    /// arrivals read as [`CcfbMetric::OVER_RANGE`] before the report instant, the latest time
    /// the code allows.
    ///
    /// Precision: the report instant is exact to 1 µs within ±9.1 h of `Instant::ZERO` (compact
    /// NTP wraps after 18.2 h; see [`report_instant`](Self::report_instant)), and ATOs have
    /// 1/1024 s (976.6 µs) steps, so an arrival encoded by
    /// [`from_arrivals`](Self::from_arrivals) comes back within 489 µs.
    pub fn arrivals(&self) -> Vec<CcfbArrival> {
        let rts = self.report_instant();
        self.streams
            .iter()
            .flat_map(|s| {
                s.reports.iter().enumerate().map(move |(i, report)| {
                    let arrival = report.and_then(|m| m.arrival_offset.map(|d| (rts - d, m.ecn)));
                    (s.media_ssrc, SeqNo::new(s.begin_seq.value() + i as u64), arrival)
                })
            })
            .collect()
    }
}

/// The ATO code of `offset`: the nearest number of units, capped at the over-range 0x1FFE, or
/// 0x1FFF ("after the report timestamp") if that number is negative.
fn ato_code(offset: Duration) -> u16 {
    let units = div_round(i128::from(offset.as_micros()) * i128::from(ATO_UNITS_PER_SEC), MICROS_PER_SEC);
    if units < 0 {
        ATO_UNAVAILABLE
    } else {
        units.min(i128::from(ATO_OVER_RANGE)) as u16
    }
}

/// The offset an ATO code stands for, rounded to 1 µs; `None` for 0x1FFF.
fn ato_duration(code: u16) -> Option<Duration> {
    (code != ATO_UNAVAILABLE).then(|| {
        let us = div_round(i128::from(code) * MICROS_PER_SEC, i128::from(ATO_UNITS_PER_SEC));
        Duration::from_micros(us as i64)
    })
}

/// A metric block: R | ECN | ATO.
fn decode(word: u16) -> Option<CcfbMetric> {
    (word & RECEIVED_BIT != 0).then(|| CcfbMetric {
        ecn: (word >> 13) as u8 & 0b11,
        arrival_offset: ato_duration(word & ATO_UNAVAILABLE),
    })
}

/// A metric block from a report whose ECN has been checked.
fn encode(report: &Option<CcfbMetric>) -> u16 {
    match report {
        None => 0,
        Some(m) => {
            let code = m.arrival_offset.map_or(ATO_UNAVAILABLE, ato_code);
            RECEIVED_BIT | u16::from(m.ecn) << 13 | code
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A feedback packet written by hand from RFC 8888 §3.1 (num_reports as the count, erratum
    /// EID 8166): two streams, the first across the sequence number wrap with an odd count.
    const HAND_WRITTEN: [u8; 44] = [
        0x8B, 205, 0x00, 0x0A, // V=2, P=0, FMT=11, PT=205, length 10 words (44 bytes)
        0x00, 0x00, 0x00, 0x01, // SSRC of RTCP packet sender: 1
        0x11, 0x11, 0x11, 0x11, // SSRC of 1st RTP stream
        0xFF, 0xFE, 0x00, 0x05, // begin_seq 65534, num_reports 5: 65534, 65535, 0, 1, 2
        0x82, 0x00, // 65534: R=1, ECN=00, ATO=0x200 = 512/1024 s = 0.5 s
        0x00, 0x00, // 65535: R=0, not received
        0xE1, 0x00, // 0: R=1, ECN=11 (CE), ATO=0x100 = 250 ms
        0xDF, 0xFF, // 1: R=1, ECN=10 (ECT(0)), ATO=0x1FFF unavailable
        0xA0, 0x00, // 2: R=1, ECN=01 (ECT(1)), ATO=0, arrived at the report timestamp
        0x00, 0x00, // padding: num_reports is odd
        0x22, 0x22, 0x22, 0x22, // SSRC of 2nd RTP stream
        0x00, 0x64, 0x00, 0x02, // begin_seq 100, num_reports 2
        0x9F, 0xFE, // 100: R=1, ECN=00, ATO=0x1FFE over-range
        0x80, 0x01, // 101: R=1, ECN=00, ATO=1 = 976.5625 µs
        // Report timestamp: NTP seconds 3 976 214 410 mod 2^16 = 0x378A, fraction 0, which is
        // 10 s after the simulator's NTP base (2026-01-01).
        0x37, 0x8A, 0x00, 0x00,
    ];

    fn metric(ecn: u8, offset_us: Option<i64>) -> Option<CcfbMetric> {
        Some(CcfbMetric { ecn, arrival_offset: offset_us.map(Duration::from_micros) })
    }

    fn hand_written_repr() -> CcfbRepr {
        CcfbRepr {
            sender_ssrc: 1,
            report_timestamp: 0x378A_0000,
            streams: vec![
                CcfbStream {
                    media_ssrc: 0x1111_1111,
                    begin_seq: SeqNo::new(65534),
                    reports: vec![
                        metric(CcfbMetric::ECN_NOT_ECT, Some(500_000)),
                        None,
                        metric(CcfbMetric::ECN_CE, Some(250_000)),
                        metric(CcfbMetric::ECN_ECT0, None),
                        metric(CcfbMetric::ECN_ECT1, Some(0)),
                    ],
                },
                CcfbStream {
                    media_ssrc: 0x2222_2222,
                    begin_seq: SeqNo::new(100),
                    reports: vec![metric(0, Some(7_998_047)), metric(0, Some(977))],
                },
            ],
        }
    }

    #[test]
    fn hand_written_packet_parses_and_emits_identically() {
        let repr = CcfbRepr::parse(&HAND_WRITTEN).unwrap();
        assert_eq!(repr, hand_written_repr());
        assert_eq!(repr.buffer_len(), 44);
        assert_eq!(repr.to_bytes().unwrap(), HAND_WRITTEN);
        assert!(repr.streams[1].reports[0].unwrap().is_over_range());
        assert!(!repr.streams[1].reports[1].unwrap().is_over_range());
        let mut small = [0u8; 43];
        assert!(matches!(repr.emit(&mut small), Err(WireError::BufferTooSmall { needed: 44, .. })));
    }

    #[test]
    fn hand_written_packet_gives_arrivals_before_the_report_timestamp() {
        let repr = CcfbRepr::parse(&HAND_WRITTEN).unwrap();
        assert_eq!(repr.report_instant(), Instant::from_secs(10));
        let at = |us: i64, ecn: u8| Some((Instant::from_micros(us), ecn));
        let (a, b) = (0x1111_1111, 0x2222_2222);
        assert_eq!(
            repr.arrivals(),
            vec![
                (a, SeqNo::new(65534), at(9_500_000, CcfbMetric::ECN_NOT_ECT)),
                (a, SeqNo::new(65535), None),
                (a, SeqNo::new(0), at(9_750_000, CcfbMetric::ECN_CE)),
                (a, SeqNo::new(1), None), // received, but 0x1FFF: no usable time
                (a, SeqNo::new(2), at(10_000_000, CcfbMetric::ECN_ECT1)),
                (b, SeqNo::new(100), at(10_000_000 - 7_998_047, 0)), // saturated
                (b, SeqNo::new(101), at(10_000_000 - 977, 0)),
            ]
        );
    }

    #[test]
    fn non_canonical_bits_are_read_leniently() {
        // R=0 with ECN and ATO bits set, and non-zero padding: read as "not received", and
        // written back canonically.
        let mut sloppy = HAND_WRITTEN;
        sloppy[18..20].copy_from_slice(&[0x7F, 0xFF]);
        sloppy[26..28].copy_from_slice(&[0xAB, 0xCD]);
        let repr = CcfbRepr::parse(&sloppy).unwrap();
        assert_eq!(repr, hand_written_repr());
        assert_eq!(repr.to_bytes().unwrap(), HAND_WRITTEN);
        // RTCP padding (P bit, last octet counts it) is skipped.
        let mut padded = HAND_WRITTEN.to_vec();
        padded[0] |= 0x20;
        padded[3] += 1;
        padded.extend_from_slice(&[0, 0, 0, 4]);
        assert_eq!(CcfbRepr::parse(&padded), Ok(hand_written_repr()));
    }

    #[test]
    fn empty_report_and_empty_stream() {
        let empty = [0x8B, 205, 0x00, 0x02, 0, 0, 0, 9, 0x12, 0x34, 0x56, 0x78];
        let repr = CcfbRepr { sender_ssrc: 9, report_timestamp: 0x1234_5678, streams: vec![] };
        assert_eq!(CcfbRepr::parse(&empty), Ok(repr.clone()));
        assert_eq!(repr.to_bytes().unwrap(), empty);
        // A report block with num_reports 0 has no metric blocks and no padding.
        let zero = [0x8B, 205, 0x00, 0x04, 0, 0, 0, 9, 0, 0, 0, 5, 0x00, 0x07, 0x00, 0x00, 0, 0, 0, 0];
        let repr = CcfbRepr::parse(&zero).unwrap();
        assert_eq!(
            repr.streams,
            vec![CcfbStream { media_ssrc: 5, begin_seq: SeqNo::new(7), reports: vec![] }]
        );
        assert_eq!(repr.to_bytes().unwrap(), zero);
    }

    #[test]
    fn malformed_packets_are_errors() {
        let bad =
            |bytes: &[u8]| matches!(CcfbRepr::parse(bytes), Err(WireError::BadCongestionControlFeedback(_)));
        // num_reports 7 where 5 fit.
        let mut count = HAND_WRITTEN;
        count[15] = 7;
        assert!(bad(&count));
        // num_reports 4: the block ends a word early, and the "header" read from there
        // announces 0x2222 reports.
        let mut short = HAND_WRITTEN;
        short[15] = 4;
        assert!(bad(&short));
        // More than a quarter of the sequence space.
        let mut quarter = HAND_WRITTEN;
        quarter[14..16].copy_from_slice(&0x4001u16.to_be_bytes());
        assert!(bad(&quarter));
        // Padding that eats the report timestamp.
        let mut padded = HAND_WRITTEN;
        padded[0] |= 0x20;
        padded[43] = 36;
        assert!(bad(&padded));
        // Not FMT 11 (TWCC is FMT 15), not RTPFB, truncated, wrong version.
        let mut twcc = HAND_WRITTEN;
        twcc[0] = 0x8F;
        assert!(matches!(CcfbRepr::parse(&twcc), Err(WireError::WrongPacketType { fmt: 15, .. })));
        let mut psfb = HAND_WRITTEN;
        psfb[1] = 206;
        assert!(matches!(CcfbRepr::parse(&psfb), Err(WireError::Rtcp(_))));
        assert!(CcfbRepr::parse(&HAND_WRITTEN[..40]).is_err());
        assert!(CcfbRepr::parse(&HAND_WRITTEN[..8]).is_err());
        let mut v1 = HAND_WRITTEN;
        v1[0] = 0x4B;
        assert!(CcfbRepr::parse(&v1).is_err());
    }

    #[test]
    fn out_of_range_fields_are_refused_or_saturated() {
        let mut repr = hand_written_repr();
        repr.streams[0].reports[0] = metric(4, Some(0));
        assert!(matches!(repr.to_bytes(), Err(WireError::InvalidField { field: "streams", .. })));
        let too_many = CcfbStream {
            media_ssrc: 1,
            begin_seq: SeqNo::new(0),
            reports: vec![None; MAX_REPORTS_PER_STREAM + 1],
        };
        let repr = CcfbRepr { sender_ssrc: 1, report_timestamp: 0, streams: vec![too_many] };
        assert!(matches!(repr.to_bytes(), Err(WireError::InvalidField { field: "streams", .. })));
        // Streams of 16384 reports take 32776 bytes each: 7 fit the 16-bit length field
        // (262144 bytes), 8 do not.
        let full = CcfbStream {
            media_ssrc: 1,
            begin_seq: SeqNo::new(0),
            reports: vec![None; MAX_REPORTS_PER_STREAM],
        };
        let mut repr = CcfbRepr { sender_ssrc: 1, report_timestamp: 0, streams: vec![full.clone(); 7] };
        assert_eq!(CcfbRepr::parse(&repr.to_bytes().unwrap()), Ok(repr.clone()));
        repr.streams.push(full);
        assert!(matches!(repr.to_bytes(), Err(WireError::InvalidField { field: "streams", .. })));

        // Offsets: 10 s saturates at 0x1FFE, a negative one is "after the RTS", 10 ms rounds to
        // 10/1024 s.
        let ato_of = |d: Duration| {
            let repr = CcfbRepr {
                sender_ssrc: 1,
                report_timestamp: 0,
                streams: vec![CcfbStream {
                    media_ssrc: 2,
                    begin_seq: SeqNo::new(0),
                    reports: vec![Some(CcfbMetric { ecn: 0, arrival_offset: Some(d) })],
                }],
            };
            let bytes = repr.to_bytes().unwrap();
            u16::from_be_bytes([bytes[16], bytes[17]]) & 0x1FFF
        };
        assert_eq!(ato_of(Duration::from_secs(10)), 0x1FFE);
        assert_eq!(ato_of(Duration::from_micros(7_997_559)), 0x1FFE); // 8189.5/1024 s, rounded up
        assert_eq!(ato_of(Duration::from_micros(7_997_558)), 0x1FFD);
        assert_eq!(ato_of(Duration::from_millis(-2)), 0x1FFF);
        assert_eq!(ato_of(Duration::from_micros(-400)), 0); // rounds to zero, not negative
        assert_eq!(ato_of(Duration::from_millis(10)), 10);
        assert_eq!(ato_of(CcfbMetric::OVER_RANGE), 0x1FFE);
    }

    #[test]
    fn from_arrivals_encodes_offsets_before_the_report_timestamp() {
        let report_time = Instant::from_micros(10_000_010); // 10 µs past a compact NTP tick
        let ms = |m: i64| Instant::from_millis(m);
        let arrivals = [
            Some((ms(9_500), CcfbMetric::ECN_NOT_ECT)),
            None,
            Some((ms(9_750), CcfbMetric::ECN_CE)),
            Some((report_time + Duration::from_micros(1), CcfbMetric::ECN_ECT0)), // after the report
            Some((ms(10_000) + Duration::from_micros(5), CcfbMetric::ECN_ECT1)),  // within the truncation
        ];
        // 9 s before the report (over range), and 977 µs before it (one unit).
        let second = [Some((ms(1_000), 0)), Some((ms(10_000) - Duration::from_micros(977), 0))];
        let per_stream = [(0x1111_1111, 65_534, &arrivals[..]), (0x2222_2222, 65_636, &second[..])];
        let repr = CcfbRepr::from_arrivals(1, report_time, &per_stream).unwrap();
        // The same packet as written by hand: sequence numbers taken mod 2^16, the report
        // timestamp truncated to 10 s, ATOs measured from there.
        assert_eq!(repr, hand_written_repr());
        assert_eq!(repr.to_bytes().unwrap(), HAND_WRITTEN);

        assert!(matches!(
            CcfbRepr::from_arrivals(1, report_time, &[(1, 0, &[Some((ms(1), 4))][..])]),
            Err(WireError::InvalidInput(_))
        ));
    }

    #[test]
    fn from_arrivals_keeps_the_newest_16384_reports() {
        let report_time = Instant::from_secs(60);
        let arrivals: Vec<_> = (0..20_000).map(|i| Some((Instant::from_millis(50_000 + i / 4), 0))).collect();
        let repr = CcfbRepr::from_arrivals(3, report_time, &[(4, 70_000, arrivals.as_slice())]).unwrap();
        let stream = &repr.streams[0];
        assert_eq!(stream.reports.len(), MAX_REPORTS_PER_STREAM);
        assert_eq!(stream.begin_seq, SeqNo::new(70_000 + 20_000 - 16_384));
        let last = *repr.arrivals().last().unwrap();
        assert_eq!(last.1, SeqNo::new(70_000 + 19_999));
        assert!((last.2.unwrap().0 - Instant::from_micros(54_999_000)).abs() <= Duration::from_micros(489));
        assert_eq!(CcfbRepr::parse(&repr.to_bytes().unwrap()), Ok(repr));
    }

    fn arb_metric() -> impl Strategy<Value = Option<CcfbMetric>> {
        let code = prop_oneof![0u16..=0x1FFF, Just(ATO_OVER_RANGE), Just(ATO_UNAVAILABLE), Just(0)];
        proptest::option::weighted(0.8, (0u8..4, code))
            .prop_map(|m| m.map(|(ecn, code)| CcfbMetric { ecn, arrival_offset: ato_duration(code) }))
    }

    fn arb_repr() -> impl Strategy<Value = CcfbRepr> {
        let stream = (any::<u32>(), any::<u16>(), proptest::collection::vec(arb_metric(), 0..80)).prop_map(
            |(media_ssrc, begin, reports)| CcfbStream {
                media_ssrc,
                begin_seq: SeqNo::new(u64::from(begin)),
                reports,
            },
        );
        (any::<u32>(), any::<u32>(), proptest::collection::vec(stream, 0..5)).prop_map(
            |(sender_ssrc, report_timestamp, streams)| CcfbRepr { sender_ssrc, report_timestamp, streams },
        )
    }

    /// Arrivals over ±9 s around a report time in the compact-NTP window, some lost, some after
    /// the report.
    type OwnedStreamArrivals = (u32, i64, Vec<Option<(Instant, u8)>>);

    fn arb_arrivals() -> impl Strategy<Value = (Instant, Vec<OwnedStreamArrivals>)> {
        let entry = proptest::option::weighted(0.85, (-200_000i64..9_000_000, 0u8..4));
        let stream = (any::<u32>(), -70_000i64..200_000, proptest::collection::vec(entry, 0..60));
        (-30_000_000_000i64..30_000_000_000, proptest::collection::vec(stream, 0..4)).prop_map(
            |(report_us, streams)| {
                let report_time = Instant::from_micros(report_us);
                let streams = streams
                    .into_iter()
                    .map(|(ssrc, first, entries)| {
                        let entries = entries
                            .into_iter()
                            .map(|e| {
                                e.map(|(before, ecn)| (report_time - Duration::from_micros(before), ecn))
                            })
                            .collect();
                        (ssrc, first, entries)
                    })
                    .collect();
                (report_time, streams)
            },
        )
    }

    proptest! {
        #[test]
        fn reprs_round_trip(repr in arb_repr()) {
            let bytes = repr.to_bytes().unwrap();
            prop_assert_eq!(bytes.len(), repr.buffer_len());
            prop_assert_eq!(CcfbRepr::parse(&bytes), Ok(repr));
        }

        #[test]
        fn from_arrivals_recovers_arrivals_within_half_an_ato_unit(
            (report_time, streams) in arb_arrivals(),
        ) {
            let per_stream: Vec<_> = streams.iter().map(|(s, f, e)| (*s, *f, e.as_slice())).collect();
            let repr = CcfbRepr::from_arrivals(7, report_time, &per_stream).unwrap();
            let bytes = repr.to_bytes().unwrap();
            let parsed = CcfbRepr::parse(&bytes).unwrap();
            prop_assert_eq!(&parsed, &repr);
            let rts = parsed.report_instant();
            prop_assert!(rts <= report_time && report_time - rts <= Duration::from_micros(16));

            let decoded = parsed.arrivals();
            let expected: Vec<_> = streams
                .iter()
                .flat_map(|(ssrc, first, entries)| {
                    entries.iter().enumerate().map(move |(i, e)| (*ssrc, SeqNo::new((first + i as i64) as u64), *e))
                })
                .collect();
            prop_assert_eq!(decoded.len(), expected.len());
            for ((ssrc, seq, got), (want_ssrc, want_seq, want)) in decoded.into_iter().zip(expected) {
                prop_assert_eq!((ssrc, seq), (want_ssrc, want_seq));
                match (want, got) {
                    (None, None) => {}
                    // After the report: 0x1FFF, which reads as no arrival time.
                    (Some((t, _)), None) => prop_assert!(t > report_time, "{t} lost"),
                    (Some((t, ecn)), Some((g, got_ecn))) => {
                        prop_assert_eq!(ecn, got_ecn);
                        if report_time - t >= CcfbMetric::OVER_RANGE + Duration::from_micros(489) {
                            // Over range: saturated at the latest time the code allows.
                            prop_assert_eq!(g, rts - CcfbMetric::OVER_RANGE);
                        } else {
                            prop_assert!((g - t).abs() <= Duration::from_micros(489), "{t} -> {g}");
                        }
                    }
                    (None, Some(g)) => prop_assert!(false, "lost packet decoded as {g:?}"),
                }
            }
        }

        #[test]
        fn parsing_arbitrary_bodies_never_panics(body in proptest::collection::vec(any::<u8>(), 0..96)) {
            // A valid RTPFB FMT 11 header in front, so the bytes reach the report block checks.
            let words = body.len() / 4;
            let mut bytes = vec![0x8B, 205, 0, (words + 1) as u8, 0, 0, 0, 1];
            bytes.extend_from_slice(&body[..words * 4]);
            let _ = CcfbRepr::parse(&bytes);
        }

        #[test]
        fn parsing_mutated_packets_never_panics(edits in proptest::collection::vec((0usize..44, any::<u8>()), 1..6)) {
            let mut bytes = HAND_WRITTEN;
            for (at, value) in edits {
                bytes[at] = value;
            }
            if let Ok(repr) = CcfbRepr::parse(&bytes) {
                // Whatever parses can be written again and reads back the same.
                let again = repr.to_bytes().unwrap();
                prop_assert_eq!(CcfbRepr::parse(&again), Ok(repr));
            }
        }
    }
}
