//! A controller whose target rate is decided outside it: by a learning agent
//! (`rtcbench.env.BandwidthEstimationEnv`), a script or a test. [`ExternalRate`] holds the rate it
//! is given and condenses the per-packet feedback of each interval between two decisions into an
//! [`IntervalStats`]: what the decider observes.
//!
//! The statistics use only what a real sender learns from transport-wide feedback or RFC 8888
//! ([`PacketResult`]: send time, arrival time or loss, size), so a policy learnt on them could run
//! on a real sender. Arrival times are on the receiver's clock, mapped to the sender's timeline by
//! an unknown offset ([`PacketResult::arrival`]), so every delay statistic is built from
//! differences: the one-way delay above the smallest one seen so far (the queuing delay, as
//! OpenNetLab's gym and the `qdelay` metrics measure it), and the variation between consecutive
//! one-way delays (jitter).
//!
//! The round-trip time follows libwebrtc's GoogCC (`GoogCcNetworkController::
//! OnTransportPacketsFeedback`): for each received packet of a report, the feedback's arrival
//! minus the packet's send time, minus the time the packet waited at the receiver before the
//! report, counted from the report's latest arrival; the report's sample is the smallest. The
//! latest packet's own wait (at most the gap between two packets) is not known and stays in it.

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

use crate::controller::{Controller, ControllerMetrics, Metric};
use crate::feedback::{FeedbackReport, SentPacket};

/// What the feedback of one interval `[start, end)` said about the call's packets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IntervalStats {
    pub start: Instant,
    pub end: Instant,
    /// The target rate at the end of the interval.
    pub target: Bitrate,
    /// Bytes the sender put on the wire in the interval, over its length.
    pub send_rate: Bitrate,
    /// Bytes reported received, over the span of arrival times the interval's reports cover
    /// (from the latest arrival reported before the interval to the latest reported in it; the
    /// interval's length for the first report of a run). Zero if nothing was reported received.
    pub receive_rate: Bitrate,
    pub packets_received: u32,
    /// Packets reported as not received.
    pub packets_lost: u32,
    /// One-way delay above the smallest seen since the start of the run: mean, smallest and
    /// largest over the packets reported received; `None` if there were none.
    pub queuing_delay_mean: Option<Duration>,
    pub queuing_delay_min: Option<Duration>,
    pub queuing_delay_max: Option<Duration>,
    /// Mean absolute difference between the one-way delays of consecutive received packets
    /// (RFC 3550 §6.4.1's D(i-1, i), averaged over the interval instead of smoothed); `None` if
    /// no packet was reported received.
    pub jitter: Option<Duration>,
    /// Mean over the interval's reports of the GoogCC-style round-trip sample (module docs);
    /// `None` if no report had a received packet.
    pub rtt: Option<Duration>,
    /// Feedback messages with per-packet results.
    pub reports: u32,
}

impl IntervalStats {
    /// Packets reported lost over packets reported; 0 if none were reported.
    pub fn loss_ratio(&self) -> f64 {
        let n = self.packets_received + self.packets_lost;
        if n == 0 {
            0.0
        } else {
            f64::from(self.packets_lost) / f64::from(n)
        }
    }
}

/// Sums over the current interval.
#[derive(Clone, Copy, Debug, Default)]
struct Accumulator {
    sent: DataSize,
    received: DataSize,
    packets_received: u32,
    packets_lost: u32,
    /// Sum, smallest and largest one-way delay (offset included) of the received packets.
    owd_sum: i64,
    owd_min: Option<Duration>,
    owd_max: Option<Duration>,
    /// Sum of |one-way delay − the previous received packet's| and how many were added.
    jitter_sum: i64,
    jitter_n: u32,
    rtt_sum: i64,
    rtt_n: u32,
    reports: u32,
    /// The latest arrival reported in the interval.
    latest_arrival: Option<Instant>,
}

/// Sends at the rate it is told; records what feedback says for whoever tells it.
#[derive(Clone, Debug)]
pub struct ExternalRate {
    target: Bitrate,
    /// A rate set at an instant, applied by `on_timeout` at that instant so the sender re-reads
    /// the target in its own event (the drive loop of the crate docs).
    pending: Option<(Instant, Bitrate)>,
    interval_start: Instant,
    acc: Accumulator,
    /// The smallest one-way delay seen since the start (offset included): the queuing delay's zero.
    base_owd: Option<Duration>,
    /// The one-way delay of the latest received packet, for jitter across reports and intervals.
    last_owd: Option<Duration>,
    /// The latest arrival reported before the current interval: where its receive span starts.
    covered_until: Option<Instant>,
}

impl ExternalRate {
    /// The name traces give it.
    pub const NAME: &'static str = "external";

    /// Sends at `start_rate` until told otherwise; the first interval starts at `now`.
    pub fn new(start_rate: Bitrate, now: Instant) -> Self {
        Self {
            target: start_rate,
            pending: None,
            interval_start: now,
            acc: Accumulator::default(),
            base_owd: None,
            last_owd: None,
            covered_until: None,
        }
    }

    /// Sets the target from `now` on. Returns false, and changes nothing, if it is the rate already
    /// in force: a sender need not be woken for it.
    pub fn set_target(&mut self, now: Instant, rate: Bitrate) -> bool {
        let current = self.pending.map_or(self.target, |(_, r)| r);
        if rate == current {
            return false;
        }
        self.pending = Some((now, rate));
        true
    }

    /// The statistics of the interval since the last call (or since [`ExternalRate::new`]), which
    /// ends at `now`; the next interval starts there.
    pub fn take_interval(&mut self, now: Instant) -> IntervalStats {
        let a = std::mem::take(&mut self.acc);
        let length = now - self.interval_start;
        let rate = |size: DataSize, span: Duration| {
            if size.is_zero() || span <= Duration::ZERO {
                Bitrate::ZERO
            } else {
                size / span
            }
        };
        let span = match (self.covered_until, a.latest_arrival) {
            (Some(from), Some(to)) if to > from => to - from,
            _ => length,
        };
        if a.latest_arrival.is_some() {
            self.covered_until = self.covered_until.max(a.latest_arrival);
        }
        let n = i64::from(a.packets_received);
        let base = self.base_owd.unwrap_or(Duration::ZERO);
        let stats = IntervalStats {
            start: self.interval_start,
            end: now,
            target: self.pending.map_or(self.target, |(_, r)| r),
            send_rate: rate(a.sent, length),
            receive_rate: rate(a.received, span),
            packets_received: a.packets_received,
            packets_lost: a.packets_lost,
            queuing_delay_mean: (n > 0).then(|| Duration::from_micros(a.owd_sum / n) - base),
            queuing_delay_min: a.owd_min.map(|d| d - base),
            queuing_delay_max: a.owd_max.map(|d| d - base),
            jitter: (a.jitter_n > 0).then(|| Duration::from_micros(a.jitter_sum / i64::from(a.jitter_n))),
            rtt: (a.rtt_n > 0).then(|| Duration::from_micros(a.rtt_sum / i64::from(a.rtt_n))),
            reports: a.reports,
        };
        self.interval_start = now;
        stats
    }
}

impl Controller for ExternalRate {
    fn on_packet_sent(&mut self, _now: Instant, pkt: &SentPacket) {
        self.acc.sent += pkt.size;
    }

    fn on_feedback(&mut self, now: Instant, report: &FeedbackReport) {
        if report.packets.is_empty() {
            return; // a receiver report or REMB: no per-packet results
        }
        let a = &mut self.acc;
        a.reports += 1;
        let latest = report.packets.iter().filter_map(|p| p.arrival).max();
        let mut rtt: Option<Duration> = None;
        for p in &report.packets {
            let Some(arrival) = p.arrival else {
                a.packets_lost += 1;
                continue;
            };
            a.packets_received += 1;
            a.received += p.size;
            let owd = arrival - p.sent_at;
            a.owd_sum += owd.as_micros();
            a.owd_min = Some(a.owd_min.map_or(owd, |m| m.min(owd)));
            a.owd_max = Some(a.owd_max.map_or(owd, |m| m.max(owd)));
            self.base_owd = Some(self.base_owd.map_or(owd, |m| m.min(owd)));
            if let Some(last) = self.last_owd {
                a.jitter_sum += (owd - last).abs().as_micros();
                a.jitter_n += 1;
            }
            self.last_owd = Some(owd);
            // Waited at the receiver at least from its arrival to the report's latest one.
            let waited = latest.expect("a received packet exists") - arrival;
            let sample = ((now - p.sent_at) - waited).max(Duration::ZERO);
            rtt = Some(rtt.map_or(sample, |r| r.min(sample)));
        }
        if let Some(r) = rtt {
            a.rtt_sum += r.as_micros();
            a.rtt_n += 1;
        }
        a.latest_arrival = a.latest_arrival.max(latest);
    }

    fn on_timeout(&mut self, now: Instant) {
        if let Some((_, rate)) = self.pending.filter(|&(at, _)| at <= now) {
            self.target = rate;
            self.pending = None;
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.pending.map(|(at, _)| at)
    }

    fn target_rate(&self) -> Bitrate {
        self.target
    }

    /// libwebrtc's default pacing (2.5 × target), as `fixed` is paced: an external rate held
    /// constant gives the `fixed` run bit for bit.
    fn pacing_rate(&self) -> Option<Bitrate> {
        Some(self.target * 2.5)
    }

    fn metrics(&self) -> ControllerMetrics {
        ControllerMetrics::new().with("rate", Metric::Rate(Some(self.target)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feedback::{Ecn, PacketResult};

    const SIZE: DataSize = DataSize::bytes(1000);

    fn sent(seq: i64, at_ms: i64) -> SentPacket {
        SentPacket {
            seq,
            size: SIZE,
            sent_at: Instant::from_millis(at_ms),
            is_audio: false,
            probe: None,
            data_in_flight: SIZE,
        }
    }

    /// A packet sent at `sent_ms`, arrived at `arrival_ms` on the mapped clock (or lost).
    fn result(seq: i64, sent_ms: i64, arrival_ms: Option<i64>) -> PacketResult {
        PacketResult {
            seq,
            size: SIZE,
            sent_at: Instant::from_millis(sent_ms),
            arrival: arrival_ms.map(Instant::from_millis),
            ecn: Ecn::NotEct,
            is_audio: false,
            probe: None,
        }
    }

    fn report(packets: Vec<PacketResult>) -> FeedbackReport {
        FeedbackReport { packets, ..FeedbackReport::default() }
    }

    #[test]
    fn a_new_target_takes_effect_at_its_own_timeout() {
        let mut c = ExternalRate::new(Bitrate::kbps(300), Instant::ZERO);
        assert_eq!(c.poll_timeout(), None);
        assert!(c.set_target(Instant::from_millis(60), Bitrate::kbps(500)));
        // Until the sender handles the deadline, the old rate holds.
        assert_eq!(c.target_rate(), Bitrate::kbps(300));
        assert_eq!(c.poll_timeout(), Some(Instant::from_millis(60)));
        c.on_timeout(Instant::from_millis(60));
        assert_eq!(c.target_rate(), Bitrate::kbps(500));
        assert_eq!(c.poll_timeout(), None);
        // The same rate again needs no wake-up.
        assert!(!c.set_target(Instant::from_millis(120), Bitrate::kbps(500)));
        assert_eq!(c.poll_timeout(), None);
    }

    #[test]
    fn an_interval_condenses_its_feedback() {
        let mut c = ExternalRate::new(Bitrate::kbps(300), Instant::ZERO);
        // Four packets 10 ms apart, each seeing 10 ms more one-way delay than the one before
        // (the mapped clock's offset is 1000 ms: only differences mean anything); the third is lost.
        for (seq, t) in [(0, 0), (1, 10), (2, 20), (3, 30)] {
            c.on_packet_sent(Instant::from_millis(t), &sent(seq, t));
        }
        c.on_feedback(
            Instant::from_millis(90),
            &report(vec![
                result(0, 0, Some(1040)),
                result(1, 10, Some(1060)),
                result(2, 20, None),
                result(3, 30, Some(1100)),
            ]),
        );
        let s = c.take_interval(Instant::from_millis(100));
        assert_eq!((s.start, s.end), (Instant::ZERO, Instant::from_millis(100)));
        assert_eq!((s.packets_received, s.packets_lost, s.reports), (3, 1, 1));
        assert!((s.loss_ratio() - 0.25).abs() < 1e-12);
        // 4000 bytes sent in 100 ms; 3000 received, over the interval (the first report).
        assert_eq!(s.send_rate, Bitrate::kbps(320));
        assert_eq!(s.receive_rate, Bitrate::kbps(240));
        // One-way delays 1040, 1050, 1070 ms: above the smallest, 0, 10 and 30 ms.
        assert_eq!(s.queuing_delay_min, Some(Duration::ZERO));
        assert_eq!(s.queuing_delay_max, Some(Duration::from_millis(30)));
        assert_eq!(s.queuing_delay_mean, Some(Duration::from_micros(13_333)));
        // |1050 − 1040| and |1070 − 1050|.
        assert_eq!(s.jitter, Some(Duration::from_millis(15)));
        // Packet 3 (sent at 30, latest arrival) waited 0: 90 − 30 = 60 ms. Packet 0 waited 60 ms
        // after its arrival: 90 − 0 − 60 = 30 ms, the smallest.
        assert_eq!(s.rtt, Some(Duration::from_millis(30)));
        assert_eq!(s.target, Bitrate::kbps(300));
    }

    #[test]
    fn the_next_interval_starts_where_the_last_ended() {
        let mut c = ExternalRate::new(Bitrate::kbps(300), Instant::ZERO);
        c.on_feedback(Instant::from_millis(50), &report(vec![result(0, 0, Some(520))]));
        let first = c.take_interval(Instant::from_millis(60));
        assert_eq!(first.receive_rate, SIZE / Duration::from_millis(60));
        // Nothing reported: no delay statistics, no rates.
        let quiet = c.take_interval(Instant::from_millis(120));
        assert_eq!(quiet.start, Instant::from_millis(60));
        assert_eq!((quiet.packets_received, quiet.reports), (0, 0));
        assert_eq!((quiet.queuing_delay_mean, quiet.jitter, quiet.rtt), (None, None, None));
        assert_eq!((quiet.receive_rate, quiet.send_rate), (Bitrate::ZERO, Bitrate::ZERO));
        assert_eq!(quiet.loss_ratio(), 0.0);
        // Two packets that arrived 20 and 40 ms after the last reported one: 2000 bytes in 40 ms,
        // whatever the length of the interval. The first has the smallest one-way delay yet
        // (510 ms), which becomes the queuing delay's zero.
        c.on_feedback(
            Instant::from_millis(150),
            &report(vec![result(1, 30, Some(540)), result(2, 40, Some(560))]),
        );
        let s = c.take_interval(Instant::from_millis(180));
        assert_eq!(s.receive_rate, DataSize::bytes(2000) / Duration::from_millis(40));
        assert_eq!(s.queuing_delay_min, Some(Duration::ZERO));
        assert_eq!(s.queuing_delay_max, Some(Duration::from_millis(10)));
        // Jitter continues from the first interval's last packet: |510 − 520| and |520 − 510|.
        assert_eq!(s.jitter, Some(Duration::from_millis(10)));
    }

    #[test]
    fn reports_without_packet_results_are_not_counted() {
        let mut c = ExternalRate::new(Bitrate::kbps(300), Instant::ZERO);
        c.on_feedback(
            Instant::from_millis(10),
            &FeedbackReport { rtt: Some(Duration::from_millis(80)), ..FeedbackReport::default() },
        );
        let s = c.take_interval(Instant::from_millis(60));
        assert_eq!((s.reports, s.rtt), (0, None));
    }
}
