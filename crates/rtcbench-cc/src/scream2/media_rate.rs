//! Media rate control of SCReAM v2 (draft-ietf-ccwg-rfc8298bis-screamv2-01 §4.4): the target
//! bitrate from ref_wnd and s_rtt, `k × 8 × ref_wnd / s_rtt`, where k lowers the rate when the
//! window is a few MSS, for the packetisation overhead, and when the media queue grows
//! (rate_adjust_factor) or frames vary in size (frame_size_dev).
//!
//! rate_adjust_factor and frame_size_dev are updated "for each new media frame": the sender
//! reports each encoded video frame ([`crate::Controller::on_media_frame`]) and its queue
//! ([`crate::Controller::on_send_queue`], whose oldest packet's waiting time is media_qdelay).
//! frame_period is estimated from the spacing of the frames (the draft asks for "an estimated
//! frame period" and starts it at 20 ms).

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

use super::config::{self, Scream2Config};

/// The media rate control of §4.4.
#[derive(Clone, Debug)]
pub struct MediaRateControl {
    cfg: Scream2Config,
    /// TARGET_BITRATE_MIN / MAX in bit/s.
    min_bps: f64,
    max_bps: f64,
    /// target_bitrate in bit/s.
    target_bitrate: f64,
    /// rate_adjust_factor (0.0).
    rate_adjust_factor: f64,
    /// frame_size_dev (0.0).
    frame_size_dev: f64,
    /// frame_period in seconds (0.02).
    frame_period: f64,
    last_frame: Option<Instant>,
    /// media_qdelay: how long the oldest data unit has waited in the sender's queue.
    media_qdelay: Duration,
}

impl MediaRateControl {
    pub fn new(cfg: &Scream2Config, min_rate: Bitrate, max_rate: Bitrate, start_rate: Bitrate) -> Self {
        let min_bps = min_rate.as_bps_f64();
        let max_bps = max_rate.as_bps_f64().max(min_bps);
        Self {
            cfg: *cfg,
            min_bps,
            max_bps,
            target_bitrate: start_rate.as_bps_f64().clamp(min_bps, max_bps),
            rate_adjust_factor: 0.0,
            frame_size_dev: 0.0,
            frame_period: config::FRAME_PERIOD_INIT.as_secs_f64(),
            last_frame: None,
            media_qdelay: Duration::ZERO,
        }
    }

    pub fn target_bitrate(&self) -> Bitrate {
        Bitrate::from_bps_f64(self.target_bitrate)
    }
    pub fn target_bitrate_max(&self) -> Bitrate {
        Bitrate::from_bps_f64(self.max_bps)
    }
    /// target_bitrate < TARGET_BITRATE_MAX (§4.2.2.2's condition for growing ref_wnd).
    pub fn below_max(&self) -> bool {
        self.target_bitrate < self.max_bps
    }
    pub fn rate_adjust_factor(&self) -> f64 {
        self.rate_adjust_factor
    }
    pub fn frame_size_dev(&self) -> f64 {
        self.frame_size_dev
    }
    pub fn frame_period(&self) -> Duration {
        Duration::from_secs_f64(self.frame_period)
    }
    pub fn media_qdelay(&self) -> Duration {
        self.media_qdelay
    }

    pub fn on_send_queue(&mut self, oldest: Duration) {
        self.media_qdelay = oldest;
    }

    /// A media frame of `frame_size` was encoded: rate_adjust_factor (an integrator on the media
    /// queue delay beyond frame_period/4) and frame_size_dev (the positive deviation from the
    /// nominal frame size) of §4.4.
    pub fn on_media_frame(&mut self, now: Instant, frame_size: DataSize) {
        if let Some(last) = self.last_frame {
            let gap = (now - last).as_secs_f64();
            // A gap of more than a few frame periods is a pause, not the frame rate.
            if gap > 0.0 && gap <= 4.0 * self.frame_period.max(config::FRAME_PERIOD_INIT.as_secs_f64()) {
                self.frame_period += config::FRAME_PERIOD_G * (gap - self.frame_period);
            }
        }
        self.last_frame = Some(now);

        let error = (self.media_qdelay.as_secs_f64() - self.frame_period * config::MEDIA_QDELAY_FRACTION)
            / self.frame_period;
        self.rate_adjust_factor = (self.rate_adjust_factor + error * self.cfg.rate_adjust_gain)
            .clamp(0.0, config::RATE_ADJUST_FACTOR_MAX);

        let frame_size_nom = self.target_bitrate * self.frame_period / 8.0;
        if frame_size_nom > 0.0 {
            let deviation = ((frame_size.as_bytes() as f64 - frame_size_nom) / frame_size_nom).max(0.0);
            self.frame_size_dev = ((1.0 - self.cfg.frame_size_dev_alpha) * self.frame_size_dev
                + self.cfg.frame_size_dev_alpha * deviation)
                .min(config::FRAME_SIZE_DEV_MAX);
        }
    }

    /// k of `target_bitrate = k × 8 × ref_wnd / s_rtt` (§4.4).
    pub fn k(&self, ref_wnd_ratio: f64) -> f64 {
        let mss = self.cfg.mss.as_bytes() as f64;
        let mut tmp_t = 1.0;
        // Slightly lower when ref_wnd is only a few MSS.
        tmp_t *= 1.0 - (ref_wnd_ratio - config::SMALL_WINDOW_OFFSET).clamp(0.0, config::SMALL_WINDOW_MAX);
        // Packetisation overhead.
        tmp_t *= mss / (mss + self.cfg.packet_overhead.as_bytes() as f64);
        // Below what ref_wnd and s_rtt indicate, to keep the sender queue short.
        tmp_t /= config::TARGET_DOWNSCALE + self.rate_adjust_factor + self.frame_size_dev;
        tmp_t
    }

    /// The target bitrate after a ref_wnd update, clamped to [TARGET_BITRATE_MIN, MAX] (§4.4).
    /// Before the first RTT sample the start rate stays.
    pub fn update(&mut self, ref_wnd: DataSize, ref_wnd_ratio: f64, s_rtt: Option<Duration>) {
        let Some(s_rtt) = s_rtt.filter(|s| *s > Duration::ZERO) else { return };
        let target = self.k(ref_wnd_ratio) * 8.0 * ref_wnd.as_bytes() as f64 / s_rtt.as_secs_f64();
        self.target_bitrate = target.clamp(self.min_bps, self.max_bps);
    }
}
