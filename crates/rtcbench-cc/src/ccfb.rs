//! The receiver's side of RFC 8888 congestion control feedback: [`CcfbReceiver`] records, per
//! media SSRC, the arrival time and ECN codepoint of every RTP packet and, every feedback
//! interval, reports the sequence range received since the last report (RFC 8888 §3.1; §4 on
//! how often). The sender's side is [`crate::adapter::TransportFeedbackAdapter::on_ccfb`].

use std::collections::BTreeMap;

use rtcbench_units::{Duration, Instant, SeqNo, SeqUnwrapper};
use rtcbench_wire::rtcp::ccfb::{CcfbRepr, CcfbStreamArrivals, MAX_REPORTS_PER_STREAM};
use rtcbench_wire::WireError;

/// Arrivals kept per SSRC for late packets (reported again with their neighbours).
const RECEIVE_HISTORY: i64 = 1 << 12;

/// One stream's part of a report: SSRC, first sequence number, (arrival, ECN) per packet.
type StreamRange = (u32, i64, Vec<Option<(Instant, u8)>>);

#[derive(Debug, Default)]
struct StreamState {
    unwrapper: SeqUnwrapper<16>,
    arrivals: BTreeMap<i64, (Instant, u8)>,
    next_to_report: Option<i64>,
}

/// Arrivals → periodic RFC 8888 reports.
#[derive(Debug)]
pub struct CcfbReceiver {
    sender_ssrc: u32,
    streams: BTreeMap<u32, StreamState>,
    interval: Duration,
    next_send: Instant,
}

impl CcfbReceiver {
    /// A receiver that reports every `interval`, the first one interval after `now`.
    pub fn new(sender_ssrc: u32, interval: Duration, now: Instant) -> Self {
        Self { sender_ssrc, streams: BTreeMap::new(), interval, next_send: now + interval }
    }

    /// An RTP packet of `ssrc` with sequence number `seq` and ECN codepoint `ecn` arrived at `now`.
    /// A duplicate keeps its first arrival but a CE mark on any copy wins (RFC 8888 §3.1).
    pub fn on_packet(&mut self, now: Instant, ssrc: u32, seq: SeqNo<16>, ecn: u8) {
        let s = self.streams.entry(ssrc).or_default();
        let seq = s.unwrapper.unwrap(seq);
        let entry = s.arrivals.entry(seq).or_insert((now, ecn));
        if ecn == rtcbench_wire::CcfbMetric::ECN_CE {
            entry.1 = ecn;
        }
        if s.next_to_report.is_none_or(|n| seq < n) {
            s.next_to_report = Some(seq);
        }
    }

    pub fn poll_timeout(&self) -> Instant {
        self.next_send
    }

    /// When the interval has passed: one report (RTCP bytes) covering every stream with news.
    pub fn on_timeout(&mut self, now: Instant) -> Result<Option<Vec<u8>>, WireError> {
        if now < self.next_send {
            return Ok(None);
        }
        while self.next_send <= now {
            self.next_send += self.interval;
        }
        let mut ranges: Vec<StreamRange> = Vec::new();
        for (&ssrc, s) in &mut self.streams {
            let (Some(start), Some((&end, _))) = (s.next_to_report, s.arrivals.last_key_value()) else {
                continue;
            };
            if start > end {
                continue;
            }
            // At most 16384 blocks per stream (RFC 8888 §3.1): a longer gap reports its newest part.
            let start = start.max(end + 1 - MAX_REPORTS_PER_STREAM as i64);
            let blocks = (start..=end).map(|q| s.arrivals.get(&q).copied()).collect();
            ranges.push((ssrc, start, blocks));
            s.next_to_report = Some(end + 1);
            let keep_from = end - RECEIVE_HISTORY;
            while s.arrivals.first_key_value().is_some_and(|(&q, _)| q < keep_from) {
                s.arrivals.pop_first();
            }
        }
        if ranges.is_empty() {
            return Ok(None);
        }
        let per_stream: Vec<CcfbStreamArrivals<'_>> =
            ranges.iter().map(|(ssrc, start, blocks)| (*ssrc, *start, blocks.as_slice())).collect();
        CcfbRepr::from_arrivals(self.sender_ssrc, now, &per_stream)?.to_bytes().map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::TransportFeedbackAdapter;
    use rtcbench_units::DataSize;
    use rtcbench_wire::rtcp::{parse_compound, RtcpMessage};

    fn t(us: i64) -> Instant {
        Instant::from_micros(us)
    }

    /// Receiver and sender together through real RFC 8888 bytes: lost packets are reported,
    /// arrival differences survive within the 1/1024 s ATO quantisation, and nothing stays in
    /// flight once everything up to the last arrival is reported.
    #[test]
    fn round_trip_two_streams_with_losses() {
        let mut tx = TransportFeedbackAdapter::new();
        let mut rx = CcfbReceiver::new(9, Duration::from_millis(100), t(0));
        let mut sent = Vec::new();
        for k in 0..40u64 {
            let (ssrc, rtp_seq) = if k % 4 == 0 { (2, 100 + k / 4) } else { (1, 65_530 + k) };
            let seq = SeqNo::new(rtp_seq);
            let p = tx.on_sent(t(k as i64 * 2000), DataSize::bytes(500), ssrc == 2, None, Some((ssrc, seq)));
            sent.push(p);
            if k != 7 && k != 8 {
                rx.on_packet(t(k as i64 * 2000 + 30_000), ssrc, seq, 0);
            }
        }
        // The last packet arrives at 108 ms; the report at 200 ms covers them all.
        let bytes = rx.on_timeout(t(200_000)).unwrap().expect("a report");
        let RtcpMessage::CongestionControlFeedback(fb) = &parse_compound(&bytes).unwrap()[0] else {
            panic!()
        };
        let report = tx.on_ccfb(t(220_000), fb);
        assert_eq!(report.packets.len(), 40);
        let lost: Vec<i64> = report.packets.iter().filter(|p| p.arrival.is_none()).map(|p| p.seq).collect();
        assert_eq!(lost, [7, 8]);
        assert_eq!(report.data_in_flight, DataSize::ZERO);
        let first = report.packets[0].arrival.unwrap();
        for p in report.packets.iter().filter(|p| p.arrival.is_some()) {
            let gap = (p.arrival.unwrap() - first) - (p.sent_at - report.packets[0].sent_at);
            // Each ATO is rounded to 1/1024 s: two of them differ by at most one unit.
            assert!(gap.abs() <= Duration::from_micros(977), "seq {} off by {gap}", p.seq);
        }
        assert!(rx.on_timeout(t(300_000)).unwrap().is_none(), "nothing new, no report");
    }

    #[test]
    fn ce_marks_reach_the_controller_vocabulary() {
        let mut tx = TransportFeedbackAdapter::new();
        let mut rx = CcfbReceiver::new(9, Duration::from_millis(50), t(0));
        for k in 0..3u64 {
            let seq = SeqNo::new(k);
            tx.on_sent(t(k as i64 * 1000), DataSize::bytes(100), false, None, Some((1, seq)));
            rx.on_packet(t(k as i64 * 1000 + 5000), 1, seq, if k == 1 { 0b11 } else { 0b10 });
        }
        let bytes = rx.on_timeout(t(50_000)).unwrap().unwrap();
        let RtcpMessage::CongestionControlFeedback(fb) = &parse_compound(&bytes).unwrap()[0] else {
            panic!()
        };
        let ecn: Vec<crate::Ecn> = tx.on_ccfb(t(60_000), fb).packets.iter().map(|p| p.ecn).collect();
        assert_eq!(ecn, [crate::Ecn::Ect0, crate::Ecn::Ce, crate::Ecn::Ect0]);
    }
}
