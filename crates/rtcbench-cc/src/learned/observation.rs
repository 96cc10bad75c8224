//! The observation a learned bandwidth estimator sees, as the MMSys 2024 offline-RL bandwidth
//! estimation challenge (Microsoft, "2nd Bandwidth Estimation Challenge at ACM MMSys 2024",
//! dataset description) defines it: 15 features of the packets the receiver got, over the 5 most
//! recent short monitor intervals (MI) of 60 ms and the 5 most recent long ones of 600 ms, 150
//! numbers in all, one vector per 60 ms decision.
//!
//! One builder serves every user of the observation (the ONNX controller, the gym and the
//! exporter of the challenge's per-call JSON), fed with what a receiver knows of each packet
//! ([`Arrival`]): when it arrived, when it was sent (the sender's timestamp on the run's clock),
//! its size, its stream and sequence number, and whether it is video, audio or probing.
//!
//! # Layout and choices (docs/learned.md, "The observation")
//!
//! Feature f (1 to 15, [`Feature`]) sits at indices (f − 1)·10 + i for short MI i and
//! (f − 1)·10 + 5 + i for long MI i, i = 0 the most recent. What the challenge does not state
//! publicly, chosen here and tested:
//!
//! * the intervals end at the decision instant and do not overlap: short MI i covers
//!   [t − (i + 1)·60 ms, t − i·60 ms), long MI i [t − (i + 1)·600 ms, t − i·600 ms);
//! * delays are one-way delays (arrival − send) in milliseconds, rates in bit/s, sizes in bytes of
//!   the packet as the receiver reads it (the IP packet), times between arrivals in milliseconds;
//! * a lost packet is a gap in its stream's sequence numbers, counted when the gap is seen (the
//!   next packet arrives), in the interval that packet arrives in; a gap is one loss event;
//! * probing packets are RTX padding (what rtcbench's senders and libwebrtc probe with);
//! * an interval with no packet has every feature 0, but for the minimum delay seen so far,
//!   which is the call's.

use std::collections::VecDeque;

use rtcbench_units::{DataSize, Duration, Instant};

/// Numbers in one observation.
pub const OBSERVATION_LEN: usize = 150;
/// The decision interval, and the short monitor interval.
pub const STEP: Duration = Duration::from_millis(60);
/// The long monitor interval.
pub const LONG: Duration = Duration::from_millis(600);
/// Monitor intervals of each length.
pub const INTERVALS: usize = 5;
/// What feature 5 subtracts from the mean delay (the challenge's fixed 200 ms).
pub const DELAY_OFFSET_MS: f64 = 200.0;

/// What a packet carries, for the shares of features 13-15.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketClass {
    Video,
    Audio,
    /// Padding sent to probe the path.
    Probe,
    /// Anything else the receiver counts (FEC, retransmissions): in the totals, in no share.
    Other,
}

/// One packet as the receiver knows it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Arrival {
    pub arrival: Instant,
    /// The sender's timestamp of it, on the same clock as `arrival`.
    pub sent: Instant,
    pub size: DataSize,
    /// Its stream (an SSRC, or any index) and its sequence number there, unwrapped; `None`:
    /// not counted for loss.
    pub seq: Option<(u32, u64)>,
    pub class: PacketClass,
}

/// The 15 features, in the challenge's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    ReceivingRate = 1,
    ReceivedPackets,
    ReceivedBytes,
    QueuingDelay,
    Delay,
    MinimumSeenDelay,
    DelayRatio,
    DelayMinusMinimum,
    InterarrivalTime,
    Jitter,
    LossRatio,
    LostPerLossEvent,
    VideoShare,
    AudioShare,
    ProbeShare,
}

impl Feature {
    pub const ALL: [Self; 15] = [
        Self::ReceivingRate,
        Self::ReceivedPackets,
        Self::ReceivedBytes,
        Self::QueuingDelay,
        Self::Delay,
        Self::MinimumSeenDelay,
        Self::DelayRatio,
        Self::DelayMinusMinimum,
        Self::InterarrivalTime,
        Self::Jitter,
        Self::LossRatio,
        Self::LostPerLossEvent,
        Self::VideoShare,
        Self::AudioShare,
        Self::ProbeShare,
    ];

    /// Where short (`long` false) or long monitor interval `i` (0 the most recent) of this
    /// feature sits in the observation.
    pub fn index(self, long: bool, i: usize) -> usize {
        assert!(i < INTERVALS, "monitor interval {i} of {INTERVALS}");
        (self as usize - 1) * 2 * INTERVALS + if long { INTERVALS } else { 0 } + i
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::ReceivingRate => "receiving_rate_bps",
            Self::ReceivedPackets => "received_packets",
            Self::ReceivedBytes => "received_bytes",
            Self::QueuingDelay => "queuing_delay_ms",
            Self::Delay => "delay_ms",
            Self::MinimumSeenDelay => "minimum_seen_delay_ms",
            Self::DelayRatio => "delay_ratio",
            Self::DelayMinusMinimum => "delay_minus_minimum_ms",
            Self::InterarrivalTime => "interarrival_ms",
            Self::Jitter => "jitter_ms",
            Self::LossRatio => "loss_ratio",
            Self::LostPerLossEvent => "lost_per_loss_event",
            Self::VideoShare => "video_share",
            Self::AudioShare => "audio_share",
            Self::ProbeShare => "probe_share",
        }
    }
}

/// A packet kept for the long intervals.
#[derive(Clone, Copy, Debug)]
struct Kept {
    arrival: Instant,
    delay_ms: f64,
    bytes: u64,
    class: PacketClass,
}

/// Losses seen when a packet arrived.
#[derive(Clone, Copy, Debug)]
struct LossEvent {
    at: Instant,
    lost: u64,
}

/// Builds observations from arrivals. Memory is what arrived in the last 3 s (the long
/// intervals' span), whatever the call's length.
#[derive(Clone, Debug, Default)]
pub struct ObservationBuilder {
    packets: VecDeque<Kept>,
    losses: VecDeque<LossEvent>,
    /// The highest sequence number seen per stream.
    highest: Vec<(u32, u64)>,
    min_delay_ms: Option<f64>,
}

impl ObservationBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// A packet arrived (arrivals in order of arrival time).
    pub fn on_arrival(&mut self, p: &Arrival) {
        let delay_ms = (p.arrival - p.sent).as_micros() as f64 / 1e3;
        self.min_delay_ms = Some(self.min_delay_ms.map_or(delay_ms, |m| m.min(delay_ms)));
        if let Some((stream, seq)) = p.seq {
            match self.highest.iter_mut().find(|(s, _)| *s == stream) {
                Some((_, highest)) if seq > *highest => {
                    let lost = seq - *highest - 1;
                    if lost > 0 {
                        self.losses.push_back(LossEvent { at: p.arrival, lost });
                    }
                    *highest = seq;
                }
                // A late (reordered or repaired) packet: its gap was counted already.
                Some(_) => {}
                None => self.highest.push((stream, seq)),
            }
        }
        self.packets.push_back(Kept {
            arrival: p.arrival,
            delay_ms,
            bytes: p.size.as_bytes(),
            class: p.class,
        });
    }

    /// The observation at decision instant `now`; forgets what no later observation needs.
    pub fn observe(&mut self, now: Instant) -> [f32; OBSERVATION_LEN] {
        let horizon = now - LONG * INTERVALS as i64;
        while self.packets.front().is_some_and(|p| p.arrival < horizon) {
            self.packets.pop_front();
        }
        while self.losses.front().is_some_and(|l| l.at < horizon) {
            self.losses.pop_front();
        }
        self.observation(now)
    }

    /// The observation at `now`, forgetting nothing: what [`ObservationBuilder::observe`] will
    /// return at `now` if nothing arrives before (every interval reads only its own span).
    pub fn observation(&self, now: Instant) -> [f32; OBSERVATION_LEN] {
        let mut out = [0f32; OBSERVATION_LEN];
        for (long, length) in [(false, STEP), (true, LONG)] {
            for i in 0..INTERVALS {
                let end = now - length * i as i64;
                let stats = self.interval(end - length, end);
                for f in Feature::ALL {
                    out[f.index(long, i)] = stats.feature(f, length, self.min_delay_ms) as f32;
                }
            }
        }
        out
    }

    fn interval(&self, from: Instant, to: Instant) -> Interval {
        let mut s = Interval::default();
        let inside = |t: Instant| from <= t && t < to;
        let mut previous: Option<Instant> = None;
        let mut gaps = Vec::new();
        for p in self.packets.iter().filter(|p| inside(p.arrival)) {
            s.packets += 1;
            s.bytes += p.bytes;
            s.delay_sum += p.delay_ms;
            s.delay_min = Some(s.delay_min.map_or(p.delay_ms, |m: f64| m.min(p.delay_ms)));
            match p.class {
                PacketClass::Video => s.video += 1,
                PacketClass::Audio => s.audio += 1,
                PacketClass::Probe => s.probe += 1,
                PacketClass::Other => {}
            }
            if let Some(t) = previous {
                gaps.push((p.arrival - t).as_micros() as f64 / 1e3);
            }
            previous = Some(p.arrival);
        }
        if !gaps.is_empty() {
            let n = gaps.len() as f64;
            let mean = gaps.iter().sum::<f64>() / n;
            s.interarrival_ms = mean;
            s.jitter_ms = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n).sqrt();
        }
        for l in self.losses.iter().filter(|l| inside(l.at)) {
            s.lost += l.lost;
            s.loss_events += 1;
        }
        s
    }
}

/// What one monitor interval held.
#[derive(Clone, Copy, Debug, Default)]
struct Interval {
    packets: u64,
    bytes: u64,
    delay_sum: f64,
    delay_min: Option<f64>,
    video: u64,
    audio: u64,
    probe: u64,
    interarrival_ms: f64,
    jitter_ms: f64,
    lost: u64,
    loss_events: u64,
}

impl Interval {
    fn feature(&self, f: Feature, length: Duration, min_seen_ms: Option<f64>) -> f64 {
        let n = self.packets as f64;
        let share = |k: u64| if self.packets == 0 { 0.0 } else { k as f64 / n };
        let mean = (self.packets > 0).then(|| self.delay_sum / n);
        match f {
            Feature::ReceivingRate => self.bytes as f64 * 8.0 / length.as_secs_f64(),
            Feature::ReceivedPackets => n,
            Feature::ReceivedBytes => self.bytes as f64,
            Feature::QueuingDelay => mean.zip(min_seen_ms).map_or(0.0, |(m, min)| m - min),
            Feature::Delay => mean.map_or(0.0, |m| m - DELAY_OFFSET_MS),
            Feature::MinimumSeenDelay => min_seen_ms.unwrap_or(0.0),
            Feature::DelayRatio => match (mean, self.delay_min) {
                (Some(m), Some(min)) if min > 0.0 => m / min,
                (Some(_), Some(_)) => 1.0,
                _ => 0.0,
            },
            Feature::DelayMinusMinimum => mean.zip(self.delay_min).map_or(0.0, |(m, min)| m - min),
            Feature::InterarrivalTime => self.interarrival_ms,
            Feature::Jitter => self.jitter_ms,
            Feature::LossRatio => {
                let total = self.packets + self.lost;
                if total == 0 {
                    0.0
                } else {
                    self.lost as f64 / total as f64
                }
            }
            Feature::LostPerLossEvent => {
                if self.loss_events == 0 {
                    0.0
                } else {
                    self.lost as f64 / self.loss_events as f64
                }
            }
            Feature::VideoShare => share(self.video),
            Feature::AudioShare => share(self.audio),
            Feature::ProbeShare => share(self.probe),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: i64) -> Instant {
        Instant::from_millis(v)
    }

    fn video(arrival_ms: i64, delay_ms: i64, seq: u64) -> Arrival {
        Arrival {
            arrival: ms(arrival_ms),
            sent: ms(arrival_ms - delay_ms),
            size: DataSize::bytes(1000),
            seq: Some((1, seq)),
            class: PacketClass::Video,
        }
    }

    fn at(o: &[f32; OBSERVATION_LEN], f: Feature, long: bool, i: usize) -> f32 {
        o[f.index(long, i)]
    }

    #[test]
    fn the_layout_is_feature_major_short_then_long_most_recent_first() {
        assert_eq!(Feature::ReceivingRate.index(false, 0), 0);
        assert_eq!(Feature::ReceivingRate.index(false, 4), 4);
        assert_eq!(Feature::ReceivingRate.index(true, 0), 5);
        assert_eq!(Feature::ReceivedPackets.index(false, 0), 10);
        assert_eq!(Feature::ProbeShare.index(true, 4), 149);
        let mut all: Vec<usize> = Feature::ALL
            .iter()
            .flat_map(|&f| (0..INTERVALS).flat_map(move |i| [f.index(false, i), f.index(true, i)]))
            .collect();
        all.sort_unstable();
        assert_eq!(all, (0..OBSERVATION_LEN).collect::<Vec<_>>());
    }

    #[test]
    fn a_steady_stream_gives_its_rate_delays_and_spacing() {
        // A 1000-byte packet every 10 ms (800 kbit/s), 50 ms one way, then 70 ms for the last
        // 60 ms before the decision at 3 s.
        let mut b = ObservationBuilder::new();
        for (k, t) in (0..300).map(|k| (k, k * 10)).collect::<Vec<_>>() {
            let delay = if t >= 2940 { 70 } else { 50 };
            b.on_arrival(&video(t, delay, k as u64));
        }
        let o = b.observe(ms(3000));
        assert_eq!(at(&o, Feature::ReceivedPackets, false, 0), 6.0);
        assert_eq!(at(&o, Feature::ReceivedBytes, false, 0), 6000.0);
        assert_eq!(at(&o, Feature::ReceivingRate, false, 0), 800_000.0);
        assert_eq!(at(&o, Feature::ReceivingRate, true, 3), 800_000.0);
        assert_eq!(at(&o, Feature::ReceivedPackets, true, 0), 60.0);
        // The most recent short MI saw 70 ms; the one before 50 ms.
        assert_eq!(at(&o, Feature::QueuingDelay, false, 0), 20.0);
        assert_eq!(at(&o, Feature::QueuingDelay, false, 1), 0.0);
        assert_eq!(at(&o, Feature::Delay, false, 0), -130.0);
        assert_eq!(at(&o, Feature::MinimumSeenDelay, true, 4), 50.0);
        assert_eq!(at(&o, Feature::DelayRatio, false, 1), 1.0);
        assert_eq!(at(&o, Feature::InterarrivalTime, false, 2), 10.0);
        assert_eq!(at(&o, Feature::Jitter, false, 2), 0.0);
        assert_eq!(at(&o, Feature::VideoShare, true, 0), 1.0);
        assert_eq!(at(&o, Feature::AudioShare, true, 0), 0.0);
        assert_eq!(at(&o, Feature::LossRatio, true, 0), 0.0);
    }

    #[test]
    fn gaps_in_a_stream_are_losses_counted_where_they_are_seen() {
        let mut b = ObservationBuilder::new();
        // Sequence numbers 0..10 every 5 ms, with 3 and 4 (one event of two) and 7 (one) missing.
        for seq in (0..10u64).filter(|s| ![3, 4, 7].contains(s)) {
            b.on_arrival(&video(5 * seq as i64, 20, seq));
        }
        // A late packet of the first gap counts nothing again.
        b.on_arrival(&video(49, 30, 3));
        let o = b.observe(ms(60));
        assert_eq!(at(&o, Feature::ReceivedPackets, false, 0), 8.0);
        assert!((at(&o, Feature::LossRatio, false, 0) - 3.0 / 11.0).abs() < 1e-6);
        assert_eq!(at(&o, Feature::LostPerLossEvent, false, 0), 1.5);
    }

    #[test]
    fn empty_intervals_are_zero_but_for_the_minimum_delay_seen() {
        let mut b = ObservationBuilder::new();
        b.on_arrival(&video(10, 40, 0));
        let o = b.observe(ms(1000));
        for f in Feature::ALL {
            let expected = if f == Feature::MinimumSeenDelay { 40.0 } else { 0.0 };
            assert_eq!(at(&o, f, false, 0), expected, "{f:?}");
        }
        // The packet is in the long MI 1 ([−200 ms, 400 ms)).
        assert_eq!(at(&o, Feature::ReceivedPackets, true, 1), 1.0);
    }

    #[test]
    fn classes_share_the_packets_and_memory_stays_bounded() {
        let mut b = ObservationBuilder::new();
        for k in 0..100_000i64 {
            let class = [PacketClass::Video, PacketClass::Video, PacketClass::Audio, PacketClass::Probe]
                [k as usize % 4];
            b.on_arrival(&Arrival { class, seq: None, ..video(k, 30, 0) });
            if k % 60 == 59 {
                b.observe(ms(k + 1));
            }
        }
        let o = b.observe(ms(100_000));
        assert_eq!(at(&o, Feature::VideoShare, true, 0), 0.5);
        assert_eq!(at(&o, Feature::AudioShare, true, 0), 0.25);
        assert_eq!(at(&o, Feature::ProbeShare, true, 0), 0.25);
        assert!(b.packets.len() <= 3_000, "kept {}", b.packets.len());
    }
}
