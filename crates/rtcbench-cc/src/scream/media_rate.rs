//! Media rate control of SCReAM v1 (RFC 8298 §4.1.3): the target bitrate for the media encoder,
//! from the RTP queue, the measured transmit / acknowledged / media rates and the network
//! congestion control's state (in_fast_increase, qdelay_trend, qdelay_trend_mem, congestion
//! events).
//!
//! The adjustment runs every RATE_ADJUST_INTERVAL; a loss or ECN event reduces the target at
//! once and restarts that interval ("the rate update frequency is limited by
//! RATE_ADJUST_INTERVAL, unless a loss event occurs").
//!
//! Rate measurements, all over the last RATE_MEASUREMENT_INTERVAL (200 ms, §4.1.3):
//! * rate_transmit: bytes the sender transmitted;
//! * rate_ack: bytes newly reported received by feedback;
//! * rate_media: bytes the encoder produced, derived as bytes transmitted plus the growth of the
//!   RTP queue (the sender reports the queue with `Controller::on_send_queue`; without reports
//!   rate_media equals rate_transmit);
//! * rate_media_median: the median of rate_media over RATE_MEDIA_MEDIAN_WINDOW.
//!
//! The RFC's "discard RTP packets when throughput becomes very low" is left to the sender (no
//! threshold is specified, and the `Controller` trait has no discard output).

use std::collections::VecDeque;

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

use super::config::ScreamConfig;
use super::network_cc::CongestionEvent;

/// What the media rate controller reads from the network congestion control at an adjustment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NetworkState {
    pub in_fast_increase: bool,
    pub qdelay_trend: f64,
    pub qdelay_trend_mem: f64,
}

/// The measured rates of §4.1.3 and §4.1.1.2.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateMeasurements {
    pub rate_transmit: Bitrate,
    pub rate_ack: Bitrate,
    pub rate_media: Bitrate,
    pub rate_media_median: Bitrate,
}

impl RateMeasurements {
    /// current_rate_t = max(rate_transmit, rate_ack) (§4.1.3).
    pub fn current_rate(&self) -> Bitrate {
        self.rate_transmit.max(self.rate_ack)
    }
}

/// rtp_queue_delay_t = rtp_queue_size / current_rate_t (§4.1.3); infinite if data is queued and
/// nothing is being transmitted, `None` if there is neither.
pub fn rtp_queue_delay(rtp_queue_size: DataSize, current_rate: Bitrate) -> Option<Duration> {
    if current_rate.is_zero() {
        return (!rtp_queue_size.is_zero()).then_some(Duration::MAX);
    }
    Some(rtp_queue_size / current_rate)
}

/// The media rate controller of §4.1.3.
#[derive(Clone, Debug)]
pub struct MediaRateControl {
    cfg: ScreamConfig,
    /// TARGET_BITRATE_MIN / MAX in bit/s.
    min_bps: f64,
    max_bps: f64,
    /// target_bitrate (§4.1.1.2) in bit/s.
    target_bitrate: f64,
    /// target_bitrate_last_max (§4.1.1.2) in bit/s, initially 1 bit/s.
    target_bitrate_last_max: f64,
    /// rtp_queue_size (§4.1.1.2) as last reported, when, and the oldest packet's waiting time.
    rtp_queue_size: DataSize,
    rtp_queue_reported_at: Instant,
    rtp_queue_oldest: Duration,
    /// ∫ rtp_queue_size dt (byte·µs) since `rtp_queue_avg_start`, for the time-weighted mean
    /// the adjustment uses.
    rtp_queue_integral: f64,
    rtp_queue_avg_start: Instant,
    /// rtp_queue_delay_t of the last adjustment.
    last_rtp_queue_delay: Option<Duration>,
    rates: RateMeasurements,
    window_start: Instant,
    next_measurement: Instant,
    bytes_transmitted: DataSize,
    bytes_acked: DataSize,
    queue_at_window_start: DataSize,
    /// rate_media samples within RATE_MEDIA_MEDIAN_WINDOW.
    media_hist: VecDeque<(Instant, Bitrate)>,
    next_adjust: Instant,
}

impl MediaRateControl {
    pub fn new(
        cfg: &ScreamConfig,
        min_rate: Bitrate,
        max_rate: Bitrate,
        start_rate: Bitrate,
        now: Instant,
    ) -> Self {
        let min_bps = min_rate.as_bps_f64();
        let max_bps = max_rate.as_bps_f64().max(min_bps);
        Self {
            cfg: *cfg,
            min_bps,
            max_bps,
            target_bitrate: start_rate.as_bps_f64().clamp(min_bps, max_bps),
            target_bitrate_last_max: 1.0,
            rtp_queue_size: DataSize::ZERO,
            rtp_queue_reported_at: now,
            rtp_queue_oldest: Duration::ZERO,
            rtp_queue_integral: 0.0,
            rtp_queue_avg_start: now,
            last_rtp_queue_delay: None,
            rates: RateMeasurements::default(),
            window_start: now,
            next_measurement: now + cfg.rate_measurement_interval,
            bytes_transmitted: DataSize::ZERO,
            bytes_acked: DataSize::ZERO,
            queue_at_window_start: DataSize::ZERO,
            media_hist: VecDeque::new(),
            next_adjust: now + cfg.rate_adjust_interval,
        }
    }

    pub fn target_bitrate(&self) -> Bitrate {
        Bitrate::from_bps_f64(self.target_bitrate)
    }
    pub fn target_bitrate_last_max(&self) -> Bitrate {
        Bitrate::from_bps_f64(self.target_bitrate_last_max)
    }
    pub fn rates(&self) -> RateMeasurements {
        self.rates
    }
    pub fn rtp_queue_size(&self) -> DataSize {
        self.rtp_queue_size
    }
    /// The oldest queued packet's waiting time as the sender reported it.
    pub fn rtp_queue_oldest(&self) -> Duration {
        self.rtp_queue_oldest
    }
    /// rtp_queue_delay_t of the last adjustment outside fast increase.
    pub fn rtp_queue_delay(&self) -> Option<Duration> {
        self.last_rtp_queue_delay
    }

    pub fn on_packet_sent(&mut self, size: DataSize) {
        self.bytes_transmitted += size;
    }
    pub fn on_bytes_acked(&mut self, bytes: DataSize) {
        self.bytes_acked += bytes;
    }
    /// The sender's RTP queue now holds `bytes`; the oldest packet has waited `oldest`.
    pub fn on_send_queue(&mut self, now: Instant, bytes: DataSize, oldest: Duration) {
        self.integrate_queue(now);
        self.rtp_queue_size = bytes;
        self.rtp_queue_oldest = oldest;
    }

    fn integrate_queue(&mut self, now: Instant) {
        let dt = now - self.rtp_queue_reported_at;
        if dt > Duration::ZERO {
            self.rtp_queue_integral += self.rtp_queue_size.as_bytes() as f64 * dt.as_micros() as f64;
            self.rtp_queue_reported_at = now;
        }
    }

    /// The time-weighted mean of rtp_queue_size since the last adjustment; restarts the mean.
    ///
    /// The RFC samples rtp_queue_size at the adjustment. With 30 frames/s and a 200 ms interval
    /// that sample always falls at the same phase of the frame cycle, and a frame just handed
    /// to the queue is by itself a frame interval (33 ms > RTP_QDELAY_TH) of data at the
    /// current rate; the reference code uses an average (`txSizeBitsAvg`) for the same reason.
    fn take_mean_rtp_queue_size(&mut self, now: Instant) -> DataSize {
        self.integrate_queue(now);
        let span = now - self.rtp_queue_avg_start;
        let mean = if span > Duration::ZERO {
            DataSize::bytes((self.rtp_queue_integral / span.as_micros() as f64).round() as u64)
        } else {
            self.rtp_queue_size
        };
        self.rtp_queue_integral = 0.0;
        self.rtp_queue_avg_start = now;
        mean
    }

    /// "target_bitrate_last_max is updated when congestion is detected" (§4.1.3): the target at
    /// the moment congestion was detected becomes the inflection point.
    pub fn on_congestion_detected(&mut self) {
        self.target_bitrate_last_max = self.target_bitrate.max(1.0);
    }

    /// `on loss` / `on ecn_mark` of §4.1.3, applied at once.
    pub fn on_congestion_event(&mut self, now: Instant, event: CongestionEvent) {
        self.on_congestion_detected();
        let beta = match event {
            CongestionEvent::Loss => self.cfg.beta_r,
            CongestionEvent::Ecn => self.cfg.beta_ecn,
        };
        self.target_bitrate = (beta * self.target_bitrate).max(self.min_bps);
        self.next_adjust = now + self.cfg.rate_adjust_interval;
    }

    pub fn poll_timeout(&self) -> Instant {
        self.next_measurement.min(self.next_adjust)
    }

    pub fn on_timeout(&mut self, now: Instant, net: &NetworkState) {
        if now >= self.next_measurement {
            self.measure(now);
            let interval = self.cfg.rate_measurement_interval;
            while self.next_measurement <= now {
                self.next_measurement += interval;
            }
        }
        if now >= self.next_adjust {
            let rates = self.rates;
            let queue = self.take_mean_rtp_queue_size(now);
            self.update_target_bitrate(net, &rates, queue);
            let interval = self.cfg.rate_adjust_interval;
            while self.next_adjust <= now {
                self.next_adjust += interval;
            }
        }
    }

    /// Closes a measurement window (§4.1.3: "Both estimates are updated every 200ms").
    fn measure(&mut self, now: Instant) {
        let elapsed = now - self.window_start;
        if elapsed <= Duration::ZERO {
            return;
        }
        let produced =
            (self.bytes_transmitted + self.rtp_queue_size).saturating_sub(self.queue_at_window_start);
        self.rates.rate_transmit = self.bytes_transmitted / elapsed;
        self.rates.rate_ack = self.bytes_acked / elapsed;
        self.rates.rate_media = produced / elapsed;
        self.media_hist.push_back((now, self.rates.rate_media));
        let window = self.cfg.rate_media_median_window;
        while self.media_hist.front().is_some_and(|&(t, _)| now - t > window) {
            self.media_hist.pop_front();
        }
        let mut v: Vec<Bitrate> = self.media_hist.iter().map(|&(_, r)| r).collect();
        v.sort_unstable();
        self.rates.rate_media_median = v[v.len() / 2];
        self.window_start = now;
        self.bytes_transmitted = DataSize::ZERO;
        self.bytes_acked = DataSize::ZERO;
        self.queue_at_window_start = self.rtp_queue_size;
    }

    /// The periodic target bitrate update of §4.1.3 (the part after `on loss` / `on ecn_mark`).
    pub fn update_target_bitrate(
        &mut self,
        net: &NetworkState,
        rates: &RateMeasurements,
        rtp_queue_size: DataSize,
    ) {
        let cfg = &self.cfg;
        let interval_s = cfg.rate_adjust_interval.as_secs_f64();
        let mut target = self.target_bitrate;
        let ramp_up_speed_t =
            cfg.ramp_up_speed_per_s.as_bps_f64().min(target * cfg.ramp_up_speed_target_fraction);
        // Slow down close to the last known congestion point: scale_t is small when the target
        // is near target_bitrate_last_max, at least LAST_MAX_SCALE_MIN.
        let last_max = self.target_bitrate_last_max;
        let scale_t = ((target - last_max) / last_max * cfg.last_max_scale_gain)
            .powi(2)
            .clamp(cfg.last_max_scale_min, 1.0);
        let current_rate_t = rates.current_rate().as_bps_f64();
        if net.in_fast_increase {
            target += ramp_up_speed_t * interval_s * scale_t;
        } else {
            let rtp_queue_bits = rtp_queue_size.as_bits() as f64;
            // The rate the path carries, less guards for incipient congestion and the RTP queue.
            let sustainable = current_rate_t * (1.0 - cfg.pre_congestion_guard * net.qdelay_trend)
                - cfg.tx_queue_size_factor_per_s * rtp_queue_bits;
            // RFC 8298's pseudo code adds `sustainable` itself to target_bitrate; its prose and
            // the reference code (`increment -= targetBitrate`) move the target towards it.
            // See ScreamConfig::delta_rate_relative_to_target.
            let mut delta_rate_t =
                if cfg.delta_rate_relative_to_target { sustainable - target } else { sustainable };
            if delta_rate_t > 0.0 {
                // Limit a positive increase if close to target_bitrate_last_max.
                delta_rate_t = (delta_rate_t * scale_t).min(ramp_up_speed_t * interval_s);
            }
            target += delta_rate_t;
            // Force a slight reduction if the RTP queue builds up.
            let rtp_queue_delay_t = rtp_queue_delay(rtp_queue_size, rates.current_rate());
            self.last_rtp_queue_delay = rtp_queue_delay_t;
            if rtp_queue_delay_t.is_some_and(|d| d > cfg.rtp_qdelay_th) {
                target *= cfg.target_rate_scale_rtp_qdelay;
            }
        }
        let rate_media_limit_t = current_rate_t
            .max(rates.rate_media.as_bps_f64().max(rates.rate_media_median.as_bps_f64()))
            * (2.0 - net.qdelay_trend_mem);
        // Before anything was measured the limit would be 0: skip it rather than collapse the
        // start rate to TARGET_BITRATE_MIN.
        if rate_media_limit_t > 0.0 {
            target = target.min(rate_media_limit_t);
        }
        self.target_bitrate = target.clamp(self.min_bps, self.max_bps);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kbps(v: u64) -> Bitrate {
        Bitrate::kbps(v)
    }

    fn control(target_kbps: u64, last_max_kbps: Option<u64>) -> MediaRateControl {
        let mut m = MediaRateControl::new(
            &ScreamConfig::default(),
            kbps(100),
            kbps(5000),
            kbps(target_kbps),
            Instant::ZERO,
        );
        if let Some(l) = last_max_kbps {
            m.target_bitrate_last_max = l as f64 * 1000.0;
        }
        m
    }

    fn net(in_fast_increase: bool, trend: f64, trend_mem: f64) -> NetworkState {
        NetworkState { in_fast_increase, qdelay_trend: trend, qdelay_trend_mem: trend_mem }
    }

    fn rates(transmit: u64, ack: u64, media: u64, median: u64) -> RateMeasurements {
        RateMeasurements {
            rate_transmit: kbps(transmit),
            rate_ack: kbps(ack),
            rate_media: kbps(media),
            rate_media_median: kbps(median),
        }
    }

    #[test]
    fn fast_increase_ramps_at_ramp_up_speed_scaled_near_last_max() {
        // last_max = 1 bit/s → scale_t = 1. ramp_up_speed_t = min(200 k, 1 M / 2) = 200 kbit/s/s;
        // +200 k · 0.2 s = +40 kbit/s.
        let mut m = control(1000, None);
        m.update_target_bitrate(&net(true, 0.0, 0.0), &rates(1000, 1000, 1000, 1000), DataSize::ZERO);
        assert_eq!(m.target_bitrate(), kbps(1040));
        // At last_max: scale_t = max(0.2, (0·4)²) = 0.2 → +8 kbit/s.
        let mut m = control(1000, Some(1000));
        m.update_target_bitrate(&net(true, 0.0, 0.0), &rates(1000, 1000, 1000, 1000), DataSize::ZERO);
        assert_eq!(m.target_bitrate(), kbps(1008));
        // 10 % above last_max: scale_t = (0.1·4)² = 0.16 → 0.2 as well; 25 % above: (1.0)² = 1.
        let mut m = control(1250, Some(1000));
        m.update_target_bitrate(&net(true, 0.0, 0.0), &rates(1250, 1250, 1250, 1250), DataSize::ZERO);
        assert_eq!(m.target_bitrate(), kbps(1290));
        // Low target: ramp_up_speed_t = min(200 k, 150 k / 2 = 75 k) → +15 kbit/s.
        let mut m = control(150, None);
        m.update_target_bitrate(&net(true, 0.0, 0.0), &rates(150, 150, 150, 150), DataSize::ZERO);
        assert_eq!(m.target_bitrate(), kbps(165));
    }

    #[test]
    fn normal_mode_moves_towards_the_rate_the_path_carries() {
        // current_rate = max(900 k, 950 k) = 950 k; trend 0.5; queue 2000 B = 16 000 bit;
        // sustainable = 950 k·(1 − 0.1·0.5) − 1.0·16 000 = 886 500.
        // Target 800 k: delta = 86 500 > 0 → min(86 500·scale 1, ramp 200 k·0.2 s = 40 000) → 840 k.
        // rtp queue delay = 16 000 / 950 000 = 16.8 ms ≤ 20 ms: no scaling.
        let mut m = control(800, None);
        m.update_target_bitrate(&net(false, 0.5, 0.3), &rates(900, 950, 1000, 980), DataSize::bytes(2000));
        assert_eq!(m.target_bitrate(), kbps(840));
        assert_eq!(m.rtp_queue_delay(), Some(Duration::from_micros(16_843)));
        // Target 870 k: delta = 16 500 < 40 000 → exactly the sustainable rate.
        let mut m = control(870, None);
        m.update_target_bitrate(&net(false, 0.5, 0.3), &rates(900, 950, 1000, 980), DataSize::bytes(2000));
        assert_eq!(m.target_bitrate(), Bitrate::bps(886_500));
        // At target_bitrate_last_max the increase is scaled by 0.2: 16 500·0.2 = 3300.
        let mut m = control(870, Some(870));
        m.update_target_bitrate(&net(false, 0.5, 0.3), &rates(900, 950, 1000, 980), DataSize::bytes(2000));
        assert_eq!(m.target_bitrate(), Bitrate::bps(873_300));
        // Target 1000 k, above what the path carries: delta = −113 500, unscaled → 886 500.
        let mut m = control(1000, None);
        m.update_target_bitrate(&net(false, 0.5, 0.3), &rates(900, 950, 1000, 980), DataSize::bytes(2000));
        assert_eq!(m.target_bitrate(), Bitrate::bps(886_500));
    }

    #[test]
    fn normal_mode_decreases_when_the_rtp_queue_delay_exceeds_the_threshold() {
        // Queue 5000 B = 40 000 bit: delay 40 000 / 950 000 = 42.1 ms > RTP_QDELAY_TH.
        // sustainable = 902 500 − 40 000 = 862 500; target 1000 k → 862 500; ×0.95 = 819 375.
        let mut m = control(1000, None);
        m.update_target_bitrate(&net(false, 0.5, 0.3), &rates(900, 950, 1000, 980), DataSize::bytes(5000));
        assert_eq!(m.target_bitrate(), Bitrate::bps(819_375));
        // A queue of more than 1 s worth: 200 000 B = 1.6 Mbit → sustainable < 0 → MIN (100 k).
        let mut m = control(1000, None);
        m.update_target_bitrate(&net(false, 0.5, 0.3), &rates(900, 950, 1000, 980), DataSize::bytes(200_000));
        assert_eq!(m.target_bitrate(), kbps(100));
    }

    #[test]
    fn literal_reading_adds_the_whole_rate_and_relies_on_the_rtp_queue_rule() {
        let cfg = ScreamConfig::rfc8298_literal();
        let literal = |target_kbps| {
            MediaRateControl::new(&cfg, kbps(100), kbps(5000), kbps(target_kbps), Instant::ZERO)
        };
        // delta = 886 500 > 0 → min(886 500, 40 000): +40 k whatever the path carries.
        let mut m = literal(1000);
        m.update_target_bitrate(&net(false, 0.5, 0.3), &rates(900, 950, 1000, 980), DataSize::bytes(2000));
        assert_eq!(m.target_bitrate(), kbps(1040));
        // Queue 5000 B: +40 k, then ×0.95 for the 42 ms RTP queue delay: 1 040 000·0.95 = 988 000.
        let mut m = literal(1000);
        m.update_target_bitrate(&net(false, 0.5, 0.3), &rates(900, 950, 1000, 980), DataSize::bytes(5000));
        assert_eq!(m.target_bitrate(), kbps(988));
        // Only a queue of more than 1 s worth makes delta negative: 902 500 − 1 600 000 = −697 500
        // → 302 500, ×0.95 = 287 375.
        let mut m = literal(1000);
        m.update_target_bitrate(&net(false, 0.5, 0.3), &rates(900, 950, 1000, 980), DataSize::bytes(200_000));
        assert_eq!(m.target_bitrate(), Bitrate::bps(287_375));
    }

    #[test]
    fn target_is_limited_by_the_measured_rates_and_the_trend_memory() {
        // Fast increase would give 1540 k, but limit = max(700 k, max(600 k, 650 k))·(2 − 1) = 700 k.
        let mut m = control(1500, None);
        m.update_target_bitrate(&net(true, 0.0, 1.0), &rates(700, 650, 600, 650), DataSize::ZERO);
        assert_eq!(m.target_bitrate(), kbps(700));
        // And never below TARGET_BITRATE_MIN (100 k) or above MAX (5 M).
        let mut m = control(1500, None);
        m.update_target_bitrate(&net(true, 0.0, 1.0), &rates(50, 50, 50, 50), DataSize::ZERO);
        assert_eq!(m.target_bitrate(), kbps(100));
        let mut m = control(4990, None);
        m.update_target_bitrate(&net(true, 0.0, 0.0), &rates(5000, 5000, 5000, 5000), DataSize::ZERO);
        assert_eq!(m.target_bitrate(), kbps(5000));
        // Nothing measured yet: no limit (the start rate survives the first adjustment).
        let mut m = control(1000, None);
        m.update_target_bitrate(&net(true, 0.0, 0.0), &RateMeasurements::default(), DataSize::ZERO);
        assert_eq!(m.target_bitrate(), kbps(1040));
    }

    #[test]
    fn loss_and_ecn_reduce_the_target_at_once_and_set_last_max() {
        let mut m = control(1000, None);
        m.on_congestion_event(Instant::from_millis(50), CongestionEvent::Loss);
        assert_eq!(m.target_bitrate(), kbps(900), "BETA_R = 0.9");
        assert_eq!(m.target_bitrate_last_max(), kbps(1000));
        assert_eq!(m.poll_timeout(), Instant::from_millis(200), "measurement grid");
        assert_eq!(m.next_adjust, Instant::from_millis(250), "adjustment restarts after the event");
        m.on_congestion_event(Instant::from_millis(300), CongestionEvent::Ecn);
        assert_eq!(m.target_bitrate(), kbps(810), "BETA_ECN = 0.9");
        let mut m = control(105, None);
        m.on_congestion_event(Instant::ZERO, CongestionEvent::Loss);
        assert_eq!(m.target_bitrate(), kbps(100), "not below TARGET_BITRATE_MIN");
    }

    #[test]
    fn rates_are_measured_every_200_ms_and_media_rate_includes_queue_growth() {
        let mut m = control(1000, None);
        let quiet = net(false, 0.0, 0.0);
        // 20 000 B sent, 15 000 B acknowledged, queue grows 0 → 5000 B in the first 200 ms.
        for _ in 0..20 {
            m.on_packet_sent(DataSize::bytes(1000));
        }
        m.on_bytes_acked(DataSize::bytes(15_000));
        m.on_send_queue(Instant::from_millis(100), DataSize::bytes(5000), Duration::from_millis(30));
        m.on_timeout(Instant::from_millis(200), &quiet);
        // 20 000 B·8 / 0.2 s = 800 kbit/s; 15 000 B → 600 kbit/s; (20 000 + 5000) B → 1 Mbit/s.
        assert_eq!(m.rates(), rates(800, 600, 1000, 1000));
        // The adjustment at 200 ms used the time-weighted mean queue: 0 B for 100 ms and 5000 B
        // for 100 ms = 2500 B = 20 000 bit; over current_rate 800 kbit/s = 25 ms.
        assert_eq!(m.rtp_queue_delay(), Some(Duration::from_millis(25)));
        // Second window: 10 000 B sent, queue drains 5000 → 0: media = 5000 B → 200 kbit/s;
        // median of {1000 k, 200 k} is the upper middle element, 1000 k.
        for _ in 0..10 {
            m.on_packet_sent(DataSize::bytes(1000));
        }
        m.on_send_queue(Instant::from_millis(300), DataSize::ZERO, Duration::ZERO);
        m.on_timeout(Instant::from_millis(400), &quiet);
        assert_eq!(m.rates().rate_transmit, kbps(400));
        assert_eq!(m.rates().rate_media, kbps(200));
        assert_eq!(m.rates().rate_media_median, kbps(1000));
        assert_eq!(rtp_queue_delay(DataSize::bytes(10), Bitrate::ZERO), Some(Duration::MAX));
        assert_eq!(rtp_queue_delay(DataSize::ZERO, Bitrate::ZERO), None);
    }
}
