//! Delivery rate estimation (draft-cheng-iccrg-delivery-rate-estimation-00), the sampler BBR's
//! bandwidth model is built on, as Linux runs it (`net/ipv4/tcp_rate.c`).
//!
//! Each transmission takes a snapshot of the connection's delivery counters ([`TxState`], the
//! draft's per-packet "P" state, kept in the scoreboard); each ACK turns the snapshot of the most
//! recently sent segment it newly delivers into a [`RateSample`]: the data delivered since that
//! segment was sent, over the longer of its send and ACK intervals. Counters are in bytes (the
//! draft allows bytes or packets; Linux counts packets, which is the same here as every segment
//! but the last of a write is full-sized).
//!
//! The sender keeps a [`DeliveryRate`] for every controller; only BBR reads its samples.

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

/// What a transmission records of the connection's delivery state (the draft's P.delivered,
/// P.delivered_time, P.first_sent_time, P.is_app_limited).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxState {
    /// C.delivered when the segment was (re)sent.
    pub delivered: DataSize,
    /// C.delivered_time then.
    pub delivered_time: Instant,
    /// C.first_sent_time then: the send time of the first segment of the flight it belongs to.
    pub first_sent_time: Instant,
    /// C.app_limited was set: the application, not the network, was holding the flight back.
    pub app_limited: bool,
}

/// A newly delivered segment's snapshot with its send time, the candidate for the ACK's sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxRecord {
    pub sent_at: Instant,
    /// The segment's end sequence number: the later segment wins a tie of send times (Linux's
    /// `tcp_skb_sent_after`).
    pub end: u64,
    pub state: TxState,
}

impl TxRecord {
    /// The most recently sent of two ("Upon receiving an ACK": the sample comes from the most
    /// recently sent packet the ACK delivers).
    pub fn latest(a: Option<Self>, b: Option<Self>) -> Option<Self> {
        match (a, b) {
            (Some(x), Some(y)) => Some(if (y.sent_at, y.end) > (x.sent_at, x.end) { y } else { x }),
            (x, y) => x.or(y),
        }
    }
}

/// One ACK's rate sample (the draft's "rs"), with what Linux's `struct rate_sample` adds for BBR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateSample {
    /// rs.delivered: data delivered between the send of the sampled segment and this ACK.
    pub delivered: DataSize,
    /// rs.interval: max(send_elapsed, ack_elapsed); `None` if the sample is invalid (nothing
    /// delivered, or an interval shorter than the minimum RTT, which only ACK compression can
    /// produce).
    pub interval: Option<Duration>,
    /// rs.prior_delivered: C.delivered when the sampled segment was sent (BBR's round counting).
    pub prior_delivered: DataSize,
    /// rs.is_app_limited.
    pub app_limited: bool,
    /// Data this ACK newly acknowledged or SACKed (Linux's `acked_sacked`).
    pub acked_sacked: DataSize,
}

impl RateSample {
    /// delivered / interval, the delivery rate; `None` for an invalid sample.
    pub fn rate(&self) -> Option<Bitrate> {
        self.interval.map(|i| self.delivered / i)
    }
}

/// The connection's delivery state (the draft's "C" state).
#[derive(Clone, Debug)]
pub struct DeliveryRate {
    /// C.delivered: data delivered (acknowledged or SACKed) so far.
    delivered: DataSize,
    /// C.delivered_time: when C.delivered last grew.
    delivered_time: Instant,
    /// C.first_sent_time: the send time of the most recently sampled segment, or of the first
    /// segment sent after the connection had nothing outstanding.
    first_sent_time: Instant,
    /// C.app_limited: the delivered count at which an application-limited phase ends; `None`
    /// outside one.
    app_limited_until: Option<DataSize>,
    /// The least RTT seen, below which an interval is not believed (Linux's `tcp_min_rtt`,
    /// whose window of 5 minutes outlasts any run here).
    min_rtt: Option<Duration>,
}

impl DeliveryRate {
    pub fn new(now: Instant) -> Self {
        Self {
            delivered: DataSize::ZERO,
            delivered_time: now,
            first_sent_time: now,
            app_limited_until: None,
            min_rtt: None,
        }
    }

    /// C.delivered.
    pub fn delivered(&self) -> DataSize {
        self.delivered
    }

    /// C.delivered_time.
    pub fn delivered_time(&self) -> Instant {
        self.delivered_time
    }

    /// "Transmitting a data packet": the snapshot for a segment sent at `now`. When nothing was
    /// outstanding, the flight starts afresh here: first_sent_time and delivered_time are reset
    /// so that an idle period counts in neither interval.
    pub fn on_send(&mut self, now: Instant, nothing_outstanding: bool) -> TxState {
        if nothing_outstanding {
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        TxState {
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            app_limited: self.app_limited_until.is_some(),
        }
    }

    /// "Detecting application-limited phases": the sender had a window to fill and nothing to
    /// fill it with; samples until the data now in flight is delivered are app-limited.
    pub fn on_app_limited(&mut self, in_flight: DataSize) {
        self.app_limited_until = Some((self.delivered + in_flight).max(DataSize::bytes(1)));
    }

    /// "Upon receiving an ACK": `acked_sacked` bytes newly delivered, `latest` the most recently
    /// sent segment among them, `rtt` the ACK's RTT sample if any.
    pub fn on_ack(
        &mut self,
        now: Instant,
        acked_sacked: DataSize,
        latest: Option<TxRecord>,
        rtt: Option<Duration>,
    ) -> RateSample {
        if let Some(r) = rtt {
            self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        }
        if !acked_sacked.is_zero() {
            self.delivered += acked_sacked;
            self.delivered_time = now;
        }
        // The app-limited phase ends once its data is delivered.
        if self.app_limited_until.is_some_and(|until| self.delivered > until) {
            self.app_limited_until = None;
        }
        let Some(p) = latest else {
            return RateSample {
                delivered: DataSize::ZERO,
                interval: None,
                prior_delivered: DataSize::ZERO,
                app_limited: self.app_limited_until.is_some(),
                acked_sacked,
            };
        };
        self.first_sent_time = p.sent_at;
        // The send interval (the flight's pace) and the ACK interval (the bottleneck's): the
        // larger, as a burst on either side alone would overestimate the rate.
        let send_elapsed = p.sent_at - p.state.first_sent_time;
        let ack_elapsed = self.delivered_time - p.state.delivered_time;
        let interval = send_elapsed.max(ack_elapsed);
        let delivered = self.delivered - p.state.delivered;
        let valid =
            !delivered.is_zero() && interval > Duration::ZERO && self.min_rtt.is_none_or(|m| interval >= m);
        RateSample {
            delivered,
            interval: valid.then_some(interval),
            prior_delivered: p.state.delivered,
            app_limited: p.state.app_limited,
            acked_sacked,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: DataSize = DataSize::bytes(1000);

    fn ms(v: i64) -> Instant {
        Instant::from_millis(v)
    }

    /// A flow sending one segment per ms over a 100 ms RTT, each segment ACKed alone at
    /// `ack_time(i)` (sent at i ms); returns each ACK's sample in order of ACK time.
    fn pipelined(segments: i64, ack_time: impl Fn(i64) -> i64) -> Vec<(i64, RateSample)> {
        let mut c = DeliveryRate::new(ms(0));
        let mut events: Vec<(i64, bool, i64)> = Vec::new(); // (time, is_ack, segment)
        for i in 0..segments {
            events.push((i, false, i));
            events.push((ack_time(i), true, i));
        }
        // At equal times ACKs are processed before sends, as a stack reads before it writes.
        events.sort_by_key(|&(t, is_ack, i)| (t, !is_ack, i));
        let mut sent = vec![None; segments as usize];
        let mut outstanding = 0;
        let mut samples = Vec::new();
        for (t, is_ack, i) in events {
            if is_ack {
                outstanding -= 1;
                let rtt = Duration::from_millis(t - i);
                samples.push((i, c.on_ack(ms(t), MSS, sent[i as usize], Some(rtt))));
            } else {
                let state = c.on_send(ms(t), outstanding == 0);
                outstanding += 1;
                sent[i as usize] = Some(TxRecord { sent_at: ms(t), end: (i as u64 + 1) * 1000, state });
            }
        }
        samples
    }

    /// Once the pipe is full, every segment's sample is a window (100 segments) over an RTT:
    /// 1 segment per ms, 8 Mbit/s. The first round's samples count from the start of the flight,
    /// the RTT included, so they only approach it.
    #[test]
    fn a_paced_flow_measures_its_sending_rate() {
        let samples = pipelined(300, |i| i + 100);
        for (i, s) in samples {
            let rate = s.rate().expect("valid");
            if i < 100 {
                assert_eq!(rate, MSS * (i as u64 + 1) / Duration::from_millis(100 + i), "{i}");
            } else {
                assert_eq!(rate, Bitrate::kbps(8000), "{i}");
            }
            assert!(!s.app_limited);
        }
    }

    /// ACK compression: ten ACKs that arrive at once do not raise the sample above the rate the
    /// data was sent at, as the send interval bounds it.
    #[test]
    fn ack_compression_is_bounded_by_the_send_interval() {
        let samples = pipelined(300, |i| if (200..210).contains(&i) { 305 } else { i + 100 });
        let (_, s) = samples.iter().find(|(i, _)| *i == 209).unwrap();
        assert_eq!(s.delivered, MSS * 100);
        // The ACK interval is 305 − 209 = 96 ms; the send interval 209 − 109 = 100 ms.
        assert_eq!(s.interval, Some(Duration::from_millis(100)));
        assert!(samples.iter().all(|(_, s)| s.rate().is_none_or(|r| r <= Bitrate::kbps(8000))));
    }

    /// An application-limited phase marks the samples of the data sent in it, and ends when
    /// that data is delivered.
    #[test]
    fn app_limited_phase_marks_samples_until_its_data_is_delivered() {
        let mut c = DeliveryRate::new(ms(0));
        let a = TxRecord { sent_at: ms(0), end: 1000, state: c.on_send(ms(0), true) };
        c.on_app_limited(MSS);
        let b = TxRecord { sent_at: ms(50), end: 2000, state: c.on_send(ms(50), false) };
        assert!(!c.on_ack(ms(100), MSS, Some(a), None).app_limited);
        assert!(c.on_ack(ms(150), MSS, Some(b), None).app_limited);
        let d = TxRecord { sent_at: ms(150), end: 3000, state: c.on_send(ms(150), false) };
        assert!(!c.on_ack(ms(250), MSS, Some(d), None).app_limited, "delivered past the mark");
    }

    #[test]
    fn the_latest_sent_segment_is_sampled() {
        let st = TxState {
            delivered: DataSize::ZERO,
            delivered_time: ms(0),
            first_sent_time: ms(0),
            app_limited: false,
        };
        let a = TxRecord { sent_at: ms(5), end: 1000, state: st };
        let b = TxRecord { sent_at: ms(3), end: 9000, state: st };
        let c = TxRecord { sent_at: ms(5), end: 2000, state: st };
        assert_eq!(TxRecord::latest(Some(a), Some(b)), Some(a));
        assert_eq!(TxRecord::latest(Some(a), Some(c)), Some(c), "tie: the later sequence");
        assert_eq!(TxRecord::latest(None, Some(b)), Some(b));
    }
}
