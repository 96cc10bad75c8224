//! Sans-IO leaky-bucket pacer modelled on libwebrtc's `PacingController`
//! (`modules/pacing/pacing_controller.cc`) and on the sending engine of draft-ietf-rmcat-gcc-02 §4.
//!
//! * **Media debt.** Each video packet sent adds its size to a debt that drains at the effective
//!   pacing rate. A video packet may leave while the debt is at most `burst_time` × rate (default
//!   5 ms, GCC-02 §4's burst_time), so after idle periods the pacer can send up to 5 ms worth of
//!   data plus one packet at once, and over a long run it sends exactly at the pacing rate. The
//!   debt is capped at `max_debt_time` × rate (libwebrtc `kMaxDebtInTime`, 500 ms).
//! * **Audio** has strict priority and is neither delayed by nor charged to the debt, like
//!   libwebrtc with its default `account_for_audio = false`.
//! * **Retransmissions** go before queued video (after audio) and are paced and charged like
//!   video, the order of libwebrtc's prioritized packet queue (audio, retransmission, video,
//!   padding).
//! * **Queue-time limit** (libwebrtc `drain_large_queues`, `kMaxExpectedQueueLength` = 2 s): the
//!   video rate is raised to queue_bytes / max(1 ms, limit − average queue time), so queued video
//!   drains within the limit. The average (not the oldest) age is used, as libwebrtc does.
//! * **Probing** (libwebrtc `BitrateProber`): a cluster is sent at its own rate, the n-th probe
//!   leaving at `first_probe_time + bytes_sent_so_far / probe_rate`, until both `min_probes`
//!   packets and `min_bytes` bytes were sent. Queued video is used first (it bypasses the media
//!   budget but is still charged to the debt); when the video queue is empty the pacer asks for
//!   padding of ceil(bytes left / probes left) bytes, clamped to
//!   [[`PROBE_PADDING_MIN_SIZE`], [`PROBE_PADDING_MAX_SIZE`]]. Every probe output carries its
//!   cluster's [`ProbeInfo`]. Clusters run one after another in the order they were started.
//!   Audio is never used for probes and is never tagged.
//!
//! Drive loop: after [`Pacer::enqueue`], [`Pacer::start_probe`] or [`Pacer::set_pacing_rate`],
//! drain [`Pacer::poll_send`] until it returns `None`, then wait until [`Pacer::poll_timeout`]
//! (`None`: nothing to do until the next input). A timeout at or before the last time the pacer
//! saw means "now".

use std::collections::VecDeque;

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

/// GCC-02 §4 burst_time: how far ahead of the pacing rate video may run.
pub const DEFAULT_BURST_TIME: Duration = Duration::from_millis(5);
/// libwebrtc `kMaxExpectedQueueLength`.
pub const MAX_EXPECTED_QUEUE_TIME: Duration = Duration::from_secs(2);
/// libwebrtc `kMaxDebtInTime`.
pub const MAX_DEBT_TIME: Duration = Duration::from_millis(500);
/// Largest padding packet requested for a probe: one full video packet's payload
/// ([`crate::packetizer::DEFAULT_MAX_PAYLOAD`]), so a probe looks like media on the wire.
pub const PROBE_PADDING_MAX_SIZE: DataSize = DataSize::bytes(1200);
/// Smallest padding packet requested for a probe: libwebrtc starts a probe only with packets of
/// at least 200 bytes, since tiny packets say little about the bottleneck rate.
pub const PROBE_PADDING_MIN_SIZE: DataSize = DataSize::bytes(200);
/// Shortest remaining time used by the queue-time limit (libwebrtc uses 1 ms as well).
const MIN_DRAIN_TIME: Duration = Duration::from_millis(1);

/// What the pacer needs to know about a queued packet.
pub trait Paced {
    /// Size charged to the pacing budget (what will go on the wire).
    fn size(&self) -> DataSize;
    /// Audio bypasses the budget and has strict priority.
    fn is_audio(&self) -> bool;
    /// A retransmission goes before queued video.
    fn is_retransmission(&self) -> bool {
        false
    }
}

/// Pacer parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacerConfig {
    /// Burst allowance in time at the pacing rate.
    pub burst_time: Duration,
    /// Queue-time limit; `None` disables the drain of large queues.
    pub queue_time_limit: Option<Duration>,
    /// Cap of the media debt in time at the pacing rate.
    pub max_debt_time: Duration,
}

impl Default for PacerConfig {
    fn default() -> Self {
        Self {
            burst_time: DEFAULT_BURST_TIME,
            queue_time_limit: Some(MAX_EXPECTED_QUEUE_TIME),
            max_debt_time: MAX_DEBT_TIME,
        }
    }
}

// Probe requests and the tag on probe packets are the controllers' vocabulary (libwebrtc's
// `ProbeClusterConfig` and `PacedPacketInfo`), shared with them rather than mirrored here.
pub use rtcbench_cc::{ProbeCluster, ProbeInfo};

/// A packet released by the pacer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PacedOutput<T> {
    /// A queued packet.
    Media { item: T, probe: Option<ProbeInfo> },
    /// The sender should send a padding packet with this payload size.
    Padding { size: DataSize, probe: Option<ProbeInfo> },
}

impl<T> PacedOutput<T> {
    /// The probe cluster this packet belongs to, if any.
    pub fn probe(&self) -> Option<ProbeInfo> {
        match self {
            Self::Media { probe, .. } | Self::Padding { probe, .. } => *probe,
        }
    }
}

impl<T: Paced> PacedOutput<T> {
    pub fn size(&self) -> DataSize {
        match self {
            Self::Media { item, .. } => item.size(),
            Self::Padding { size, .. } => *size,
        }
    }
}

#[derive(Clone, Debug)]
struct Queued<T> {
    enqueued: Instant,
    item: T,
}

#[derive(Clone, Debug)]
struct ProbeState {
    cluster: ProbeCluster,
    /// Time of the first probe packet.
    started: Option<Instant>,
    sent_bytes: DataSize,
    sent_probes: u32,
}

impl ProbeState {
    fn info(&self) -> ProbeInfo {
        let c = &self.cluster;
        ProbeInfo { cluster_id: c.id, min_probes: c.min_probes, min_bytes: c.min_bytes }
    }

    /// When the next probe may leave: `None` before the first probe ("now").
    fn next_send(&self) -> Option<Instant> {
        self.started.map(|s| s + self.cluster.rate.transmit_time(self.sent_bytes))
    }

    fn done(&self) -> bool {
        self.sent_probes >= self.cluster.min_probes && self.sent_bytes >= self.cluster.min_bytes
    }

    fn padding_size(&self) -> DataSize {
        let bytes_left = self.cluster.min_bytes.saturating_sub(self.sent_bytes).as_bytes();
        let probes_left = u64::from(self.cluster.min_probes.saturating_sub(self.sent_probes).max(1));
        DataSize::bytes(bytes_left.div_ceil(probes_left))
            .max(PROBE_PADDING_MIN_SIZE)
            .min(PROBE_PADDING_MAX_SIZE)
    }
}

/// Leaky-bucket pacer with audio priority, a queue-time limit and probing (see module docs).
#[derive(Clone, Debug)]
pub struct Pacer<T> {
    cfg: PacerConfig,
    pacing_rate: Bitrate,
    /// Pacing rate after the queue-time limit, as of `last_update`.
    effective_rate: Bitrate,
    audio: VecDeque<Queued<T>>,
    /// Queued retransmissions first, then video.
    video: VecDeque<Queued<T>>,
    /// Retransmissions at the front of `video`.
    retransmissions: usize,
    audio_bytes: DataSize,
    video_bytes: DataSize,
    /// Sum of the enqueue times of queued video, in µs, for the average queue time.
    video_enqueue_sum_us: i128,
    /// Media debt in bits × 10^6, so that draining (rate in bit/s × elapsed µs) is exact.
    debt_bits_e6: u128,
    last_update: Option<Instant>,
    probes: VecDeque<ProbeState>,
}

impl<T: Paced> Pacer<T> {
    pub fn new(cfg: PacerConfig, pacing_rate: Bitrate) -> Self {
        Self {
            cfg,
            pacing_rate,
            effective_rate: pacing_rate,
            audio: VecDeque::new(),
            video: VecDeque::new(),
            retransmissions: 0,
            audio_bytes: DataSize::ZERO,
            video_bytes: DataSize::ZERO,
            video_enqueue_sum_us: 0,
            debt_bits_e6: 0,
            last_update: None,
            probes: VecDeque::new(),
        }
    }

    /// Sets the pacing rate. It applies from the last time the pacer saw (there is no `now` here:
    /// the debt accrued until then was already drained at the old rate).
    pub fn set_pacing_rate(&mut self, rate: Bitrate) {
        self.pacing_rate = rate;
        self.effective_rate = self.compute_effective_rate(self.last_update.unwrap_or(Instant::ZERO));
    }

    pub fn pacing_rate(&self) -> Bitrate {
        self.pacing_rate
    }

    /// The video rate in use: the pacing rate, raised by the queue-time limit if needed.
    pub fn effective_rate(&self) -> Bitrate {
        self.effective_rate
    }

    /// Queues a packet; audio goes to its own strict-priority queue.
    pub fn enqueue(&mut self, now: Instant, item: T) {
        let now = self.advance(now);
        let size = item.size();
        if item.is_audio() {
            self.audio_bytes += size;
            self.audio.push_back(Queued { enqueued: now, item });
        } else {
            self.video_bytes += size;
            self.video_enqueue_sum_us += i128::from(now.as_micros());
            if item.is_retransmission() {
                self.video.insert(self.retransmissions, Queued { enqueued: now, item });
                self.retransmissions += 1;
            } else {
                self.video.push_back(Queued { enqueued: now, item });
            }
        }
        self.effective_rate = self.compute_effective_rate(now);
    }

    /// Starts a probe cluster after those already pending. A cluster with a zero rate, or with
    /// nothing to send (no probes and no bytes required), is ignored.
    pub fn start_probe(&mut self, cluster: ProbeCluster) {
        let state = ProbeState { cluster, started: None, sent_bytes: DataSize::ZERO, sent_probes: 0 };
        if !cluster.rate.is_zero() && !state.done() {
            self.probes.push_back(state);
        }
    }

    /// True while a probe cluster is pending or being sent.
    pub fn is_probing(&self) -> bool {
        !self.probes.is_empty()
    }

    /// The next packet to send at `now`, if any. Call until it returns `None`.
    pub fn poll_send(&mut self, now: Instant) -> Option<PacedOutput<T>> {
        let now = self.advance(now);
        if let Some(q) = self.audio.pop_front() {
            self.audio_bytes -= q.item.size();
            return Some(PacedOutput::Media { item: q.item, probe: None });
        }
        if let Some(probe) = self.probes.front() {
            if probe.next_send().is_some_and(|t| t > now) {
                return None;
            }
            let info = probe.info();
            let padding = probe.padding_size();
            let out = match self.pop_video(now) {
                Some(item) => PacedOutput::Media { item, probe: Some(info) },
                None => PacedOutput::Padding { size: padding, probe: Some(info) },
            };
            let probe = self.probes.front_mut().expect("checked above");
            probe.started.get_or_insert(now);
            probe.sent_bytes += out.size();
            probe.sent_probes += 1;
            if probe.done() {
                self.probes.pop_front();
            }
            return Some(out);
        }
        if !self.video.is_empty() && self.debt_bits_e6 <= self.burst_bits_e6() {
            return self.pop_video(now).map(|item| PacedOutput::Media { item, probe: None });
        }
        None
    }

    /// When [`Self::poll_send`] will next have something; `None` when idle.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let now = self.last_update.unwrap_or(Instant::ZERO);
        if !self.audio.is_empty() {
            return Some(now);
        }
        if let Some(probe) = self.probes.front() {
            return Some(probe.next_send().map_or(now, |t| t.max(now)));
        }
        if self.video.is_empty() {
            return None;
        }
        let burst = self.burst_bits_e6();
        if self.debt_bits_e6 <= burst {
            return Some(now);
        }
        let rate = u128::from(self.effective_rate.as_bps());
        if rate == 0 {
            return None;
        }
        let wait_us = (self.debt_bits_e6 - burst).div_ceil(rate);
        Some(now + Duration::from_micros(wait_us.min(Duration::MAX.as_micros() as u128) as i64))
    }

    /// Bytes queued (audio and video).
    pub fn queue_size(&self) -> DataSize {
        self.audio_bytes + self.video_bytes
    }

    /// Age of the oldest queued packet; zero when the queue is empty.
    pub fn queue_time(&self, now: Instant) -> Duration {
        let oldest = [self.audio.front(), self.video.front()].into_iter().flatten().map(|q| q.enqueued).min();
        oldest.map_or(Duration::ZERO, |t| now.saturating_since(t))
    }

    /// Drains the debt up to `now` and returns the time actually used (time never goes back).
    fn advance(&mut self, now: Instant) -> Instant {
        let now = match self.last_update {
            Some(last) if now <= last => return last,
            Some(last) => {
                let elapsed_us = (now - last).as_micros() as u128;
                let drained = u128::from(self.effective_rate.as_bps()).saturating_mul(elapsed_us);
                self.debt_bits_e6 = self.debt_bits_e6.saturating_sub(drained);
                now
            }
            None => now,
        };
        self.last_update = Some(now);
        self.effective_rate = self.compute_effective_rate(now);
        now
    }

    fn pop_video(&mut self, now: Instant) -> Option<T> {
        let q = self.video.pop_front()?;
        self.retransmissions = self.retransmissions.saturating_sub(1);
        let size = q.item.size();
        self.video_bytes -= size;
        self.video_enqueue_sum_us -= i128::from(q.enqueued.as_micros());
        let max_debt = u128::from(self.effective_rate.as_bps())
            .saturating_mul(self.cfg.max_debt_time.as_micros().max(0) as u128);
        let added = u128::from(size.as_bits()) * 1_000_000;
        // libwebrtc caps the debt, so a long burst (e.g. probe media) cannot stall video for long.
        self.debt_bits_e6 = (self.debt_bits_e6 + added).min(max_debt.max(added));
        self.effective_rate = self.compute_effective_rate(now);
        Some(q.item)
    }

    fn burst_bits_e6(&self) -> u128 {
        u128::from(self.effective_rate.as_bps())
            .saturating_mul(self.cfg.burst_time.as_micros().max(0) as u128)
    }

    /// libwebrtc `drain_large_queues`: rate = max(pacing, queue / max(1 ms, limit − avg queue time)).
    fn compute_effective_rate(&self, now: Instant) -> Bitrate {
        let Some(limit) = self.cfg.queue_time_limit else {
            return self.pacing_rate;
        };
        if self.video.is_empty() {
            return self.pacing_rate;
        }
        let avg_enqueue_us = self.video_enqueue_sum_us / self.video.len() as i128;
        let avg_age_us = i128::from(now.as_micros()) - avg_enqueue_us;
        let left_us =
            (i128::from(limit.as_micros()) - avg_age_us).max(i128::from(MIN_DRAIN_TIME.as_micros()));
        let needed = self.video_bytes / Duration::from_micros(left_us as i64);
        self.pacing_rate.max(needed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq, Eq)]
    struct Pkt {
        id: u32,
        size: DataSize,
        audio: bool,
    }

    impl Paced for Pkt {
        fn size(&self) -> DataSize {
            self.size
        }
        fn is_audio(&self) -> bool {
            self.audio
        }
        fn is_retransmission(&self) -> bool {
            self.id >= RTX_ID
        }
    }

    /// Test packets with ids from here on are retransmissions.
    const RTX_ID: u32 = 1_000_000;

    #[test]
    fn retransmissions_go_before_queued_video_and_are_paced() {
        let mut p = Pacer::new(
            PacerConfig { burst_time: Duration::ZERO, ..PacerConfig::default() },
            Bitrate::kbps(800),
        );
        let t0 = Instant::from_millis(0);
        for id in 0..3 {
            p.enqueue(t0, video(id, 1000));
        }
        p.enqueue(t0, video(RTX_ID, 1000));
        p.enqueue(t0, video(RTX_ID + 1, 1000));
        let order: Vec<u32> = std::iter::from_fn(|| {
            let t = p.poll_timeout()?;
            match p.poll_send(t)? {
                PacedOutput::Media { item, .. } => Some((item.id, t)),
                PacedOutput::Padding { .. } => None,
            }
        })
        .map(|(id, t)| {
            // 1000 B at 800 kbit/s: one packet every 10 ms, retransmissions included.
            assert_eq!(t.as_micros() % 10_000, 0);
            id
        })
        .collect();
        assert_eq!(order, vec![RTX_ID, RTX_ID + 1, 0, 1, 2]);
    }

    fn video(id: u32, bytes: u64) -> Pkt {
        Pkt { id, size: DataSize::bytes(bytes), audio: false }
    }

    /// Runs the drive loop until idle or `until`; returns (send time, output).
    fn drain(p: &mut Pacer<Pkt>, until: Instant) -> Vec<(Instant, PacedOutput<Pkt>)> {
        let mut out = Vec::new();
        while let Some(t) = p.poll_timeout() {
            if t > until {
                break;
            }
            let mut sent = false;
            while let Some(o) = p.poll_send(t) {
                out.push((t, o));
                sent = true;
            }
            assert!(sent || p.poll_timeout() != Some(t), "the pacer must make progress at its timeout");
        }
        out
    }

    #[test]
    fn paces_1200_byte_packets_9_6_ms_apart() {
        let mut p = Pacer::new(PacerConfig::default(), Bitrate::mbps(1));
        // 200 packets = 1.92 s at 1 Mbit/s: under the 2 s queue-time limit, so no drain boost.
        for i in 0..200 {
            p.enqueue(Instant::ZERO, video(i, 1200));
        }
        let out = drain(&mut p, Instant::from_secs(10));
        assert_eq!(out.len(), 200);
        assert!(out.iter().all(|(_, o)| o.probe().is_none()));
        let times: Vec<Instant> = out.iter().map(|(t, _)| *t).collect();
        // After the 5 ms burst allowance, exactly the pacing rate.
        assert!(times.windows(2).skip(1).all(|w| w[1] - w[0] == Duration::from_micros(9600)));
        let span = times[199] - times[0];
        let ideal = Duration::from_micros(9600) * 199;
        assert!((ideal - span) <= DEFAULT_BURST_TIME && span <= ideal, "span {span}");
        assert_eq!(p.queue_size(), DataSize::ZERO);
        assert_eq!(p.poll_timeout(), None);
    }

    #[test]
    fn long_run_rate_is_exact() {
        let cfg = PacerConfig { queue_time_limit: None, ..PacerConfig::default() };
        let mut p = Pacer::new(cfg, Bitrate::mbps(1));
        // Feed 1.44 Mbit/s of video (a 6000-byte frame every 33.33 ms) for 20 s.
        let mut sends = Vec::new();
        for frame in 0..600 {
            let now = Instant::from_micros(frame * 100_000 / 3);
            sends.extend(drain(&mut p, now));
            for k in 0..5 {
                p.enqueue(now, video((frame * 5 + k) as u32, 1200));
            }
        }
        let n = sends.len() as i64;
        let span = sends.last().unwrap().0 - sends[0].0;
        let ideal = Duration::from_micros(9600) * (n - 1);
        assert!((ideal - span).abs() <= DEFAULT_BURST_TIME, "span {span} vs {ideal}");
        assert!(p.queue_time(Instant::from_secs(20)) > Duration::from_secs(5));
    }

    #[test]
    fn audio_jumps_the_queue_and_ignores_the_budget() {
        let mut p = Pacer::new(PacerConfig::default(), Bitrate::kbps(100));
        for i in 0..10 {
            p.enqueue(Instant::ZERO, video(i, 1200));
        }
        assert!(matches!(p.poll_send(Instant::ZERO), Some(PacedOutput::Media { item, .. }) if item.id == 0));
        assert_eq!(p.poll_send(Instant::ZERO), None, "video waits for the budget");
        let t = Instant::from_millis(1);
        p.enqueue(t, Pkt { id: 100, size: DataSize::bytes(50), audio: true });
        assert_eq!(p.queue_time(t), Duration::from_millis(1));
        assert_eq!(p.poll_timeout(), Some(t));
        let out = p.poll_send(t).unwrap();
        assert!(matches!(out, PacedOutput::Media { ref item, probe: None } if item.id == 100));
        assert_eq!(p.poll_send(t), None);
        // Audio was not charged: the next video packet leaves when the first one's debt allows.
        assert_eq!(p.poll_timeout(), Some(Instant::from_micros(96_000 - 5_000)));
    }

    #[test]
    fn probe_on_empty_queue_sends_padding_at_probe_rate() {
        let mut p: Pacer<Pkt> = Pacer::new(PacerConfig::default(), Bitrate::kbps(300));
        assert_eq!(p.poll_timeout(), None);
        let cluster =
            ProbeCluster { id: 7, rate: Bitrate::mbps(2), min_probes: 5, min_bytes: DataSize::bytes(6000) };
        p.start_probe(cluster);
        assert!(p.is_probing());
        let out = drain(&mut p, Instant::from_secs(1));
        let info = ProbeInfo { cluster_id: 7, min_probes: 5, min_bytes: DataSize::bytes(6000) };
        assert_eq!(out.len(), 5);
        for (i, (t, o)) in out.iter().enumerate() {
            assert_eq!(*o, PacedOutput::Padding { size: DataSize::bytes(1200), probe: Some(info) });
            assert_eq!(*t, Instant::from_micros(4800 * i as i64), "1200 B at 2 Mbit/s = 4.8 ms");
        }
        assert!(!p.is_probing());
        assert_eq!(p.poll_timeout(), None, "the probe stops");
    }

    #[test]
    fn probe_uses_queued_media_first() {
        let mut p = Pacer::new(PacerConfig::default(), Bitrate::kbps(300));
        for i in 0..3 {
            p.enqueue(Instant::ZERO, video(i, 1000));
        }
        let cluster =
            ProbeCluster { id: 1, rate: Bitrate::mbps(4), min_probes: 5, min_bytes: DataSize::bytes(6000) };
        p.start_probe(cluster);
        let out = drain(&mut p, Instant::from_millis(100));
        let probe_out: Vec<&PacedOutput<Pkt>> =
            out.iter().map(|(_, o)| o).take_while(|o| o.probe().is_some()).collect();
        assert!(probe_out[..3].iter().all(|o| matches!(o, PacedOutput::Media { .. })));
        assert!(probe_out[3..].iter().all(|o| matches!(o, PacedOutput::Padding { .. })));
        let bytes: DataSize = probe_out.iter().map(|o| o.size()).sum();
        assert!(probe_out.len() >= 5 && bytes >= DataSize::bytes(6000));
        assert!(probe_out.iter().all(|o| o.size() <= PROBE_PADDING_MAX_SIZE));
    }

    #[test]
    fn queue_time_limit_raises_the_rate() {
        let mut p = Pacer::new(PacerConfig::default(), Bitrate::kbps(100));
        // 100 kB = 8 s at 100 kbit/s: must drain within the 2 s limit instead.
        for i in 0..100 {
            p.enqueue(Instant::ZERO, video(i, 1000));
        }
        assert_eq!(p.effective_rate(), Bitrate::kbps(400));
        let out = drain(&mut p, Instant::from_secs(10));
        assert_eq!(out.len(), 100);
        let last = out.last().unwrap().0;
        assert!(last <= Instant::from_secs(2), "drained at {last}");
        assert_eq!(p.effective_rate(), Bitrate::kbps(100), "back to the pacing rate when empty");

        let cfg = PacerConfig { queue_time_limit: None, ..PacerConfig::default() };
        let mut slow = Pacer::new(cfg, Bitrate::kbps(100));
        for i in 0..100 {
            slow.enqueue(Instant::ZERO, video(i, 1000));
        }
        assert!(drain(&mut slow, Instant::from_secs(10)).last().unwrap().0 > Instant::from_secs(7));
    }

    #[test]
    fn set_pacing_rate_changes_spacing() {
        let mut p = Pacer::new(PacerConfig::default(), Bitrate::mbps(1));
        for i in 0..20 {
            p.enqueue(Instant::ZERO, video(i, 1200));
        }
        drain(&mut p, Instant::from_millis(50));
        p.set_pacing_rate(Bitrate::mbps(2));
        let out = drain(&mut p, Instant::from_secs(1));
        let times: Vec<Instant> = out.iter().map(|(t, _)| *t).collect();
        assert!(times.windows(2).skip(1).all(|w| w[1] - w[0] == Duration::from_micros(4800)));
    }
}
