//! The receiver's side of transport-wide congestion control feedback
//! (draft-holmer-rmcat-transport-wide-cc-extensions-01): [`TwccReceiver`] records the arrival of
//! every packet carrying a transport-wide sequence number and, every feedback interval, encodes
//! what arrived since the last feedback as RTCP bytes (libwebrtc's `RemoteEstimatorProxy`). The
//! sender's side is [`crate::adapter::TransportFeedbackAdapter`].

use std::collections::BTreeMap;

use rtcbench_units::{Duration, Instant, SeqNo, SeqUnwrapper};
use rtcbench_wire::rtcp::twcc::TwccEncoder;
use rtcbench_wire::WireError;

/// How far back the receiver keeps arrivals, so a packet that arrives after its sequence range
/// was reported can be reported again with its neighbours.
const RECEIVE_HISTORY: i64 = 1 << 12;

/// The most sequence numbers one feedback spans: its entries are 16-bit deltas apart, and
/// libwebrtc's `PacketArrivalTimeMap` holds at most 2^15 packets.
const MAX_REPORTED_SPAN: i64 = (1 << 15) - 1;

/// The receiver's side: arrivals → periodic transport-wide feedback packets.
#[derive(Debug)]
pub struct TwccReceiver {
    unwrapper: SeqUnwrapper<16>,
    arrivals: BTreeMap<i64, Instant>,
    /// First sequence number the next feedback covers.
    next_to_report: Option<i64>,
    encoder: TwccEncoder,
    interval: Duration,
    next_send: Instant,
}

impl TwccReceiver {
    /// A receiver that sends feedback every `interval`, starting one interval after `now`.
    pub fn new(sender_ssrc: u32, media_ssrc: u32, interval: Duration, now: Instant) -> Self {
        Self {
            unwrapper: SeqUnwrapper::new(),
            arrivals: BTreeMap::new(),
            next_to_report: None,
            encoder: TwccEncoder::new(sender_ssrc, media_ssrc),
            interval,
            next_send: now + interval,
        }
    }

    /// A packet with transport-wide sequence number `seq` arrived at `now`.
    pub fn on_packet(&mut self, now: Instant, seq: SeqNo<16>) {
        let seq = self.unwrapper.unwrap(seq);
        self.arrivals.entry(seq).or_insert(now);
        match self.next_to_report {
            None => self.next_to_report = Some(seq),
            // Arrived after its range was reported: report from here again.
            Some(n) if seq < n => self.next_to_report = Some(seq),
            Some(_) => {}
        }
    }

    pub fn poll_timeout(&self) -> Instant {
        self.next_send
    }

    /// When the interval has passed: the feedback packets (RTCP bytes) to send, possibly none.
    pub fn on_timeout(&mut self, now: Instant) -> Result<Vec<Vec<u8>>, WireError> {
        if now < self.next_send {
            return Ok(Vec::new());
        }
        while self.next_send <= now {
            self.next_send += self.interval;
        }
        let (Some(start), Some((&end, _))) = (self.next_to_report, self.arrivals.last_key_value()) else {
            return Ok(Vec::new());
        };
        if start > end {
            return Ok(Vec::new());
        }
        // A longer gap (a jump in the numbers, or a packet from far back) reports its newest part.
        let start = start.max(end - MAX_REPORTED_SPAN);
        // The report starts at `start` even if that packet was lost: the encoder fills gaps
        // between listed packets, so a leading run of losses needs an explicit first entry.
        let mut range: Vec<(i64, Option<Instant>)> = Vec::new();
        if !self.arrivals.contains_key(&start) {
            range.push((start, None));
        }
        range.extend(self.arrivals.range(start..=end).map(|(&s, &t)| (s, Some(t))));
        let packets = self.encoder.encode(&range)?;
        self.next_to_report = Some(end + 1);
        // Keep a bounded history for late arrivals.
        let keep_from = end - RECEIVE_HISTORY;
        while self.arrivals.first_key_value().is_some_and(|(&s, _)| s < keep_from) {
            self.arrivals.pop_first();
        }
        Ok(packets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::TransportFeedbackAdapter;
    use rtcbench_units::DataSize;
    use rtcbench_wire::rtcp::{parse_compound, RtcpMessage};

    fn t(ms: i64) -> Instant {
        Instant::from_millis(ms)
    }

    /// Receiver and sender together: what the sender learns equals what happened, with
    /// arrival differences kept to 250 µs precision.
    #[test]
    fn round_trip_through_rtcp_bytes() {
        let mut tx = TransportFeedbackAdapter::new();
        let mut rx = TwccReceiver::new(1, 2, Duration::from_millis(50), t(0));
        let mut sent = Vec::new();
        for k in 0..20 {
            let p = tx.on_sent(t(k * 2), DataSize::bytes(1000), false, None, None);
            sent.push(p);
            // Packets 5 and 6 are lost; the rest arrive 30.1 ms later.
            if k != 5 && k != 6 {
                rx.on_packet(
                    t(k * 2) + Duration::from_micros(30_100),
                    TransportFeedbackAdapter::wire_seq(p.seq),
                );
            }
        }
        assert_eq!(tx.in_flight(), DataSize::bytes(20_000));
        let bytes = rx.on_timeout(t(50)).unwrap();
        assert_eq!(bytes.len(), 1);
        let RtcpMessage::TransportFeedback(fb) = &parse_compound(&bytes[0]).unwrap()[0] else { panic!() };
        let report = tx.on_twcc(t(60), fb);
        assert_eq!(report.packets.len(), 20);
        assert_eq!(report.data_in_flight, DataSize::ZERO);
        let lost: Vec<i64> = report.packets.iter().filter(|p| p.arrival.is_none()).map(|p| p.seq).collect();
        assert_eq!(lost, [5, 6]);
        let first = report.packets[0].arrival.unwrap();
        for p in report.packets.iter().filter(|p| p.arrival.is_some()) {
            let gap = (p.arrival.unwrap() - first) - (p.sent_at - report.packets[0].sent_at);
            assert!(gap.abs() <= Duration::from_micros(250), "seq {} off by {gap}", p.seq);
        }
        // Nothing new: no feedback.
        assert!(rx.on_timeout(t(100)).unwrap().is_empty());
    }

    /// Found by the `call-receiver` fuzz target: a datagram whose transport sequence number is
    /// half the space away from the others made a range the 16-bit format cannot hold, and
    /// building "our own" feedback panicked.
    #[test]
    fn numbers_far_apart_report_the_newest_part() {
        let mut rx = TwccReceiver::new(1, 2, Duration::from_millis(50), t(0));
        rx.on_packet(t(1), SeqNo::new(0));
        rx.on_packet(t(2), SeqNo::new(32_768)); // unwraps to −32768
        let bytes = rx.on_timeout(t(50)).expect("feedback encodes");
        let mut reported = Vec::new();
        for b in &bytes {
            let RtcpMessage::TransportFeedback(fb) = &parse_compound(b).unwrap()[0] else { panic!() };
            reported.extend(
                fb.packets.iter().filter(|(_, arrival)| arrival.is_some()).map(|(seq, _)| seq.value()),
            );
        }
        assert_eq!(reported, [0]);
        // Jumps forward, twice before a report: the newest 2^15 − 1 numbers are reported.
        rx.on_packet(t(60), SeqNo::new(32_767));
        rx.on_packet(t(61), SeqNo::new(65_534));
        assert!(!rx.on_timeout(t(100)).expect("feedback encodes").is_empty());
    }

    #[test]
    fn late_packet_is_reported_again_and_counted_once() {
        let mut tx = TransportFeedbackAdapter::new();
        let mut rx = TwccReceiver::new(1, 2, Duration::from_millis(50), t(0));
        for k in 0..3 {
            let p = tx.on_sent(t(k), DataSize::bytes(500), false, None, None);
            if k != 1 {
                rx.on_packet(t(k + 10), TransportFeedbackAdapter::wire_seq(p.seq));
            }
        }
        let fb = |bytes: Vec<Vec<u8>>| match parse_compound(&bytes[0]).unwrap().remove(0) {
            RtcpMessage::TransportFeedback(f) => f,
            other => panic!("{other:?}"),
        };
        let first = tx.on_twcc(t(60), &fb(rx.on_timeout(t(50)).unwrap()));
        assert_eq!(first.packets.iter().filter(|p| p.arrival.is_none()).count(), 1);
        rx.on_packet(t(70), SeqNo::new(1));
        let second = tx.on_twcc(t(110), &fb(rx.on_timeout(t(100)).unwrap()));
        // Packets 1 and 2 are covered again; 2 was already acknowledged, so only 1 is new.
        assert_eq!(second.packets.len(), 1);
        assert_eq!(second.packets[0].seq, 1);
        assert!(second.packets[0].arrival.is_some());
    }
}

#[cfg(test)]
mod in_flight_tests {
    use super::*;
    use crate::adapter::TransportFeedbackAdapter;
    use rtcbench_units::DataSize;
    use rtcbench_wire::rtcp::{parse_compound, RtcpMessage};

    /// Hands one encoded feedback datagram to the sender at `at`.
    fn deliver(tx: &mut TransportFeedbackAdapter, bytes: &[u8], at: Instant) {
        for m in parse_compound(bytes).unwrap() {
            if let RtcpMessage::TransportFeedback(fb) = m {
                tx.on_twcc(at, &fb);
            }
        }
    }

    #[test]
    /// Regression: a feedback interval that starts inside a run of losses used to report from
    /// the first *received* packet, so the losses were never reported and stayed in flight.
    fn regression_a_burst_of_losses_leaves_nothing_in_flight() {
        let mut tx = TransportFeedbackAdapter::new();
        let mut rx = TwccReceiver::new(1, 2, Duration::from_millis(50), Instant::ZERO);
        let mut now = Instant::ZERO;
        for k in 0..3000i64 {
            now = Instant::from_micros(k * 1000);
            let p = tx.on_sent(now, DataSize::bytes(1200), false, None, None);
            if !(1000..1400).contains(&k) && k % 7 != 3 {
                rx.on_packet(now + Duration::from_millis(40), TransportFeedbackAdapter::wire_seq(p.seq));
            }
            if now + Duration::from_millis(40) >= rx.poll_timeout() {
                for bytes in rx.on_timeout(now + Duration::from_millis(40)).unwrap() {
                    deliver(&mut tx, &bytes, now + Duration::from_millis(80));
                }
            }
        }
        // Everything up to the last received packet has been reported.
        let t = now + Duration::from_secs(1);
        for bytes in rx.on_timeout(t).unwrap() {
            deliver(&mut tx, &bytes, t);
        }
        // Every packet up to the last one received (2998) has been reported; 2999 was lost and no
        // later packet has arrived to reveal it, so it alone is still in flight.
        assert_eq!(tx.in_flight(), DataSize::bytes(1200));
    }

    /// A feedback message lost on the way leaves its packets unreported for good; the next one
    /// takes them out of the bytes in flight all the same, so the count is what is really in the
    /// network, not a minute of lost reports.
    #[test]
    fn a_lost_feedback_does_not_leave_its_packets_in_flight() {
        let mut tx = TransportFeedbackAdapter::new();
        let mut rx = TwccReceiver::new(1, 2, Duration::from_millis(50), Instant::ZERO);
        let mut made = 0;
        for k in 0..200i64 {
            let now = Instant::from_millis(k * 5);
            let p = tx.on_sent(now, DataSize::bytes(1000), false, None, None);
            rx.on_packet(now + Duration::from_millis(20), TransportFeedbackAdapter::wire_seq(p.seq));
            if now + Duration::from_millis(20) >= rx.poll_timeout() {
                for bytes in rx.on_timeout(now + Duration::from_millis(20)).unwrap() {
                    // Every other feedback message is lost.
                    made += 1;
                    if made % 2 == 1 {
                        deliver(&mut tx, &bytes, now + Duration::from_millis(40));
                    }
                }
            }
        }
        // What was sent since the last feedback that arrived covered it, at most two intervals and
        // the path's delay (24 packets); counting the unreported ones would leave about 100.
        assert!(tx.in_flight() <= DataSize::bytes(24_000), "{:?} in flight", tx.in_flight());
        assert!(made > 10);
    }
}
