//! Video receive timing: how long a receiver holds a frame before decoding it, and when it renders
//! it, as libwebrtc decides with default field trials.
//!
//! * [`InterFrameDelayVariation`] (modules/video_coding/timing/
//!   inter_frame_delay_variation_calculator.cc): how much later than its predecessor a frame
//!   arrived, compared with how much later it was captured (its RTP timestamp on the 90 kHz video
//!   clock).
//! * [`JitterEstimator`] (modules/video_coding/timing/jitter_estimator.cc and
//!   frame_delay_variation_kalman_filter.cc): a Kalman filter fits that delay variation to the
//!   frame size change, `d = ΔS / C + m` (C the link capacity, m a queueing term). The jitter
//!   estimate is the delay a frame of the largest size adds over an average one,
//!   `(max S − avg S) / C`, plus a noise term `2.33 σ − 30 ms` (floored at 1 ms), where σ² is the
//!   variance of the samples around the fitted line; it is reported with a fixed 10 ms for the
//!   operating system, plus the RTT once retransmissions are needed ([`NACK_LIMIT`]), and scaled
//!   down for streams below 10 fps.
//! * [`RttFilter`] (modules/video_coding/timing/rtt_filter.cc): the RTT for that NACK term, the
//!   largest recent RTT with jump and drift detection.
//! * [`TimestampExtrapolator`] (modules/video_coding/timing/timestamp_extrapolator.cc): a
//!   recursive least-squares fit of RTP timestamp against local receive time (sender clock rate
//!   and offset), so a frame's expected arrival can be told from its timestamp alone.
//! * [`Timing`] (`VCMTiming`, modules/video_coding/timing/timing.cc): the target delay
//!   `max(min playout delay, jitter delay + decode time + render delay)`, the current delay that
//!   follows it, each frame's render time (expected arrival + current delay) and how long the
//!   receiver may still wait before it must start decoding.
//!
//! The receiver drives them as libwebrtc's `VideoStreamBufferController`
//! (video/video_stream_buffer_controller.cc) and `FrameDecodeTiming` (video/frame_decode_timing.cc)
//! do, every call taking the simulated `now`:
//!
//! 1. a complete frame not delayed by a retransmission: [`Timing::incoming_timestamp`];
//! 2. the next decodable frame: `render = timing.render_time(rtp, now)`,
//!    `wait = timing.max_waiting_time(render, now)`; if [`frame_is_too_late`] and a later
//!    decodable frame exists, drop it and try the next, else release it for decoding at
//!    `now + max(wait, 0)`;
//! 3. on release, for a frame not delayed by a retransmission: feed
//!    [`InterFrameDelayVariation::calculate`] into [`JitterEstimator::update`], then
//!    `timing.set_jitter_delay(jitter.jitter_estimate(now, DEFAULT_RTT_MULT,
//!    Some(DEFAULT_RTT_MULT_ADD_CAP)))` and [`Timing::update_current_delay_on_decode`]; for a frame
//!    that needed a retransmission, [`JitterEstimator::frame_nacked`] instead;
//! 4. after decoding: [`Timing::on_frame_decoded`]; on each RTT sample:
//!    [`JitterEstimator::update_rtt`].
//!
//! Deliberate simplifications, each marked where it is made:
//!
//! * The decoder takes a fixed time given to [`Timing::new`]. libwebrtc estimates it as the 95th
//!   percentile of measured decode times over 10 s after ignoring the first
//!   [`DECODE_TIME_IGNORED_SAMPLES`]; for a constant decode time that is zero for the first five
//!   decoded frames and the constant after, which is what [`Timing`] reports.
//! * The low-latency renderer path (min playout delay 0 and max ≤ 500 ms, set by the
//!   playout-delay RTP header extension) is not modelled: with the default 0 and 10 s libwebrtc
//!   never takes it.
//! * [`Timing::update_current_delay`] measures elapsed RTP time with a wrap-aware signed
//!   difference; libwebrtc's unsigned arithmetic handles only a wrap within 65535 ticks of it.

use std::collections::VecDeque;

use rtcbench_units::{DataSize, Duration, Instant, SeqNo, SeqUnwrapper};

/// RTP video clock rate (libwebrtc `k90kHz`).
pub const VIDEO_CLOCK_HZ: i64 = 90_000;
/// libwebrtc `kFrameProcessingStartupCount`: frames before the estimate is post-processed, and
/// the ramp of the frame-rate scaling of the noise filter.
pub const FRAME_PROCESSING_STARTUP_COUNT: u32 = 30;
/// libwebrtc `kFramesUntilSizeFiltering`: frames averaged before the frame-size filter starts.
pub const FRAMES_UNTIL_SIZE_FILTERING: u32 = 5;
/// libwebrtc `kInitialAvgAndMaxFrameSizeBytes`.
pub const INITIAL_AVG_AND_MAX_FRAME_SIZE: DataSize = DataSize::bytes(500);
/// libwebrtc `kPhi`: time constant of the average frame size filter.
pub const PHI: f64 = 0.97;
/// libwebrtc `kPsi`: decay of the max frame size filter.
pub const PSI: f64 = 0.9999;
/// libwebrtc `kNumStdDevDelayClamp`: delay variation is clamped to this many σ.
pub const NUM_STD_DEV_DELAY_CLAMP: f64 = 3.5;
/// libwebrtc `kNumStdDevDelayOutlier`: a sample this many σ off the fitted line is an outlier.
pub const NUM_STD_DEV_DELAY_OUTLIER: f64 = 15.0;
/// libwebrtc `kNumStdDevSizeOutlier`: a frame this many σ above the average size (a keyframe)
/// is used even when its delay is an outlier, as the line's slope may be what is wrong.
pub const NUM_STD_DEV_SIZE_OUTLIER: f64 = 3.0;
/// libwebrtc `kCongestionRejectionFactor`: a frame this much smaller (relative to the max frame
/// size) than its predecessor arrived congested behind it and does not update the line.
pub const CONGESTION_REJECTION_FACTOR: f64 = -0.25;
/// libwebrtc `kAlphaCountMax`: the noise filter's memory in samples.
pub const ALPHA_COUNT_MAX: u32 = 400;
/// libwebrtc `kNoiseStdDevs`: under 1 % chance ...
pub const NOISE_STD_DEVS: f64 = 2.33;
/// libwebrtc `kNoiseStdDevOffset`: ... of a freeze longer than this.
pub const NOISE_STD_DEV_OFFSET: Duration = Duration::from_millis(30);
/// libwebrtc `kMinJitterEstimate`.
pub const MIN_JITTER_ESTIMATE: Duration = Duration::from_millis(1);
/// libwebrtc `kMaxJitterEstimate`.
pub const MAX_JITTER_ESTIMATE: Duration = Duration::from_secs(10);
/// libwebrtc `OPERATING_SYSTEM_JITTER`: delay outside the jitter buffer and the decoder.
pub const OPERATING_SYSTEM_JITTER: Duration = Duration::from_millis(10);
/// libwebrtc `kNackCountTimeout`: the NACK count resets after this long without one.
pub const NACK_COUNT_TIMEOUT: Duration = Duration::from_secs(60);
/// libwebrtc `kNackLimit`: retransmitted frames before the RTT is added to the estimate.
pub const NACK_LIMIT: u32 = 3;
/// libwebrtc `kMaxFramerateEstimate`, in frames per second.
pub const MAX_FRAMERATE_ESTIMATE_HZ: f64 = 200.0;
/// libwebrtc `fps_counter_(30)`: frame intervals averaged for the frame-rate estimate.
pub const FRAME_RATE_WINDOW: usize = 30;
/// libwebrtc `kJitterScaleLowThreshold`: below this frame rate the estimate is zero.
pub const JITTER_SCALE_LOW_THRESHOLD_HZ: f64 = 5.0;
/// libwebrtc `kJitterScaleHighThreshold`: below this frame rate the estimate is scaled down
/// linearly, to zero at [`JITTER_SCALE_LOW_THRESHOLD_HZ`].
pub const JITTER_SCALE_HIGH_THRESHOLD_HZ: f64 = 10.0;
/// libwebrtc `RttMultExperiment::GetRttMultValue` (rtc_base/experiments/rtt_mult_experiment.cc,
/// `WebRTC-RttMult`, enabled unless disabled): the RTT multiplier the receiver passes to
/// [`JitterEstimator::jitter_estimate`]. Without the experiment it passes 1.0 (NACK only) or 0.0
/// (NACK and FEC).
pub const DEFAULT_RTT_MULT: f64 = 0.9;
/// libwebrtc `RttMultExperiment` `rtt_mult_add_cap_ms`: the cap on the RTT term.
pub const DEFAULT_RTT_MULT_ADD_CAP: Duration = Duration::from_millis(200);

/// libwebrtc `RttFilter` `kMaxRtt`: larger samples are clamped.
pub const MAX_RTT: Duration = Duration::from_secs(3);
/// libwebrtc `RttFilter` `kFilterFactorMax`: the RTT average's memory in samples.
pub const RTT_FILTER_FACTOR_MAX: u32 = 35;
/// libwebrtc `RttFilter` `kJumpStddev`.
pub const RTT_JUMP_STD_DEV: f64 = 2.5;
/// libwebrtc `RttFilter` `kDriftStdDev`.
pub const RTT_DRIFT_STD_DEV: f64 = 3.5;
/// libwebrtc `RttFilter::kMaxDriftJumpCount`: consecutive samples that confirm a jump or drift.
pub const RTT_MAX_DRIFT_JUMP_COUNT: usize = 5;

/// libwebrtc `TimestampExtrapolator` `kStartUpFilterDelayInPackets`.
pub const EXTRAPOLATOR_STARTUP_PACKETS: u32 = 2;
/// libwebrtc `TimestampExtrapolator::Config::hard_reset_timeout`.
pub const EXTRAPOLATOR_HARD_RESET_TIMEOUT: Duration = Duration::from_secs(10);
/// libwebrtc `hard_reset_rtp_timestamp_jump_threshold` (10 s of RTP ticks).
pub const EXTRAPOLATOR_HARD_RESET_RTP_JUMP: i64 = 900_000;
/// libwebrtc `outlier_rejection_startup_delay`, in frames.
pub const OUTLIER_REJECTION_STARTUP_DELAY: u32 = 300;
/// libwebrtc `outlier_rejection_max_consecutive`: after this many outliers in a row the filter
/// takes the change as persistent.
pub const OUTLIER_REJECTION_MAX_CONSECUTIVE: u32 = 150;
/// libwebrtc `outlier_rejection_forgetting_factor`.
pub const OUTLIER_REJECTION_FORGETTING_FACTOR: f64 = 0.999;
/// libwebrtc `outlier_rejection_stddev` (set by default, so hard outlier rejection is on).
pub const OUTLIER_REJECTION_STD_DEV: f64 = 2.0;
/// libwebrtc `alarm_threshold`, in RTP ticks.
pub const DELAY_CHANGE_ALARM_THRESHOLD: f64 = 60_000.0;
/// libwebrtc `acc_drift`, in RTP ticks.
pub const DELAY_CHANGE_ACC_DRIFT: f64 = 6_600.0;
/// libwebrtc `acc_max_error`, in RTP ticks.
pub const DELAY_CHANGE_ACC_MAX_ERROR: f64 = 7_000.0;

/// libwebrtc `VCMTiming::kDefaultRenderDelay`.
pub const DEFAULT_RENDER_DELAY: Duration = Duration::from_millis(10);
/// libwebrtc `VCMTiming::kDelayMaxChangeMsPerS`: the current delay moves at most this much per
/// second of RTP time.
pub const DELAY_MAX_CHANGE_PER_S: Duration = Duration::from_millis(100);
/// libwebrtc `VCMTiming`'s initial `min_playout_delay_`.
pub const DEFAULT_MIN_PLAYOUT_DELAY: Duration = Duration::ZERO;
/// libwebrtc `VCMTiming`'s initial `max_playout_delay_`.
pub const DEFAULT_MAX_PLAYOUT_DELAY: Duration = Duration::from_secs(10);
/// libwebrtc `DecodeTimePercentileFilter` `kIgnoredSampleCount`: decode times ignored at start.
pub const DECODE_TIME_IGNORED_SAMPLES: u64 = 5;
/// libwebrtc `FrameDecodeTiming::kMaxAllowedFrameDelay` (video/frame_decode_timing.cc).
pub const MAX_ALLOWED_FRAME_DELAY: Duration = Duration::from_millis(5);
/// libwebrtc `kMaxVideoDelay` (modules/video_coding/frame_helpers.cc).
pub const MAX_VIDEO_DELAY: Duration = Duration::from_secs(10);

/// A span of RTP ticks on the 90 kHz clock as time (truncated to the microsecond).
fn rtp_ticks(ticks: i64) -> Duration {
    Duration::from_micros(ticks * 1_000_000 / VIDEO_CLOCK_HZ)
}

/// Whole milliseconds, rounded to nearest as libwebrtc's `TimeDelta::ms()` does.
fn rounded_ms(d: Duration) -> f64 {
    (d.as_micros() as f64 / 1e3).round()
}

/// The delay variation between consecutive frames (see module docs).
#[derive(Clone, Debug, Default)]
pub struct InterFrameDelayVariation {
    unwrapper: SeqUnwrapper<32>,
    /// Receive time and unwrapped RTP timestamp of the last frame.
    prev: Option<(Instant, i64)>,
}

impl InterFrameDelayVariation {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn reset(&mut self) {
        *self = Self::default();
    }

    /// The delay variation of a frame with `rtp_timestamp` (90 kHz) received (completely) at
    /// `receive_time`: `(receive_time − previous receive time) − (RTP delta / 90 kHz)`. Zero for
    /// the first frame (libwebrtc's choice); `None` for a frame not newer than the previous one,
    /// which the estimator must not see.
    pub fn calculate(&mut self, rtp_timestamp: u32, receive_time: Instant) -> Option<Duration> {
        let rtp = self.unwrapper.unwrap(SeqNo::new(u64::from(rtp_timestamp)));
        let Some((prev_time, prev_rtp)) = self.prev else {
            self.prev = Some((receive_time, rtp));
            return Some(Duration::ZERO);
        };
        if rtp <= prev_rtp {
            return None;
        }
        self.prev = Some((receive_time, rtp));
        Some((receive_time - prev_time) - rtp_ticks(rtp - prev_rtp))
    }
}

/// The Kalman filter of libwebrtc's `FrameDelayVariationKalmanFilter` on the line
/// `d = theta[0] · ΔS + theta[1]` (milliseconds, bytes).
#[derive(Clone, Debug)]
struct DelayKalman {
    /// `estimate_`: [1 / capacity in ms per byte, queueing delay variation in ms].
    theta: [f64; 2],
    /// `estimate_cov_`.
    cov: [[f64; 2]; 2],
}

impl DelayKalman {
    /// Initial slope: 1 / (512 kbit/s) as ms per byte, libwebrtc's `1 / (512e3 / 8)`.
    const THETA0: f64 = 1.0 / (512e3 / 8.0);
    /// `process_noise_cov_diag_`.
    const PROCESS_NOISE: [f64; 2] = [2.5e-10, 1e-10];
    /// `kMaxBandwidth`: the slope's lower bound.
    const MIN_SLOPE: f64 = 1e-6;

    fn new() -> Self {
        Self { theta: [Self::THETA0, 0.0], cov: [[1e-4, 0.0], [0.0, 1e2]] }
    }

    /// The delay variation the line predicts for a frame-size change.
    fn total(&self, delta_size_bytes: f64) -> f64 {
        self.theta[0] * delta_size_bytes + self.theta[1]
    }

    fn predict_and_update(
        &mut self,
        delay_ms: f64,
        delta_size_bytes: f64,
        max_frame_size_bytes: f64,
        var_noise_ms2: f64,
    ) {
        if max_frame_size_bytes < 1.0 || var_noise_ms2 <= 0.0 {
            return;
        }
        // The state does not move between frames (F = I): only the covariance grows.
        self.cov[0][0] += Self::PROCESS_NOISE[0];
        self.cov[1][1] += Self::PROCESS_NOISE[1];
        let innovation = delay_ms - self.total(delta_size_bytes);
        let ph = [
            self.cov[0][0] * delta_size_bytes + self.cov[0][1],
            self.cov[1][0] * delta_size_bytes + self.cov[1][1],
        ];
        // Frames of about the same size say little about the slope, so they count as noisy.
        // libwebrtc adds this standard deviation where a variance belongs; kept for fidelity.
        let observation_noise = ((300.0 * (-delta_size_bytes.abs() / max_frame_size_bytes).exp() + 1.0)
            * var_noise_ms2.sqrt())
        .max(1.0);
        let innovation_var = delta_size_bytes * ph[0] + ph[1] + observation_noise;
        if innovation_var.abs() < 1e-9 {
            return;
        }
        let gain = [ph[0] / innovation_var, ph[1] / innovation_var];
        self.theta[0] = (self.theta[0] + gain[0] * innovation).max(Self::MIN_SLOPE);
        self.theta[1] += gain[1] * innovation;
        let [[c00, c01], [c10, c11]] = self.cov;
        self.cov = [
            [
                (1.0 - gain[0] * delta_size_bytes) * c00 - gain[0] * c10,
                (1.0 - gain[0] * delta_size_bytes) * c01 - gain[0] * c11,
            ],
            [
                c10 * (1.0 - gain[1]) - gain[1] * delta_size_bytes * c00,
                c11 * (1.0 - gain[1]) - gain[1] * delta_size_bytes * c01,
            ],
        ];
    }
}

/// libwebrtc's `JitterEstimator` (see module docs).
#[derive(Clone, Debug)]
pub struct JitterEstimator {
    kalman: DelayKalman,
    /// `avg_frame_size_bytes_`: filtered frame size, keyframes left out.
    avg_frame_size_bytes: f64,
    /// `var_frame_size_bytes2_`.
    var_frame_size_bytes2: f64,
    /// `max_frame_size_bytes_`: largest frame, decaying by [`PSI`] per frame.
    max_frame_size_bytes: f64,
    startup_frame_size_sum_bytes: f64,
    startup_frame_size_count: u32,
    prev_frame_size: Option<DataSize>,
    /// `avg_noise_ms_`: mean distance of the samples from the line.
    avg_noise_ms: f64,
    /// `var_noise_ms2_`: σ² of that distance.
    var_noise_ms2: f64,
    alpha_count: u32,
    startup_count: u32,
    /// The estimate as of the last frame (after startup).
    filter_jitter_estimate: Duration,
    prev_estimate: Option<Duration>,
    latest_nack: Option<Instant>,
    nack_count: u32,
    rtt_filter: RttFilter,
    last_update_time: Option<Instant>,
    /// The last [`FRAME_RATE_WINDOW`] intervals between noise updates.
    frame_periods: VecDeque<Duration>,
}

impl Default for JitterEstimator {
    fn default() -> Self {
        let size = INITIAL_AVG_AND_MAX_FRAME_SIZE.as_bytes() as f64;
        Self {
            kalman: DelayKalman::new(),
            avg_frame_size_bytes: size,
            var_frame_size_bytes2: 100.0,
            max_frame_size_bytes: size,
            startup_frame_size_sum_bytes: 0.0,
            startup_frame_size_count: 0,
            prev_frame_size: None,
            avg_noise_ms: 0.0,
            var_noise_ms2: 4.0,
            alpha_count: 1,
            startup_count: 0,
            filter_jitter_estimate: Duration::ZERO,
            prev_estimate: None,
            latest_nack: None,
            nack_count: 0,
            rtt_filter: RttFilter::new(),
            last_update_time: None,
            frame_periods: VecDeque::with_capacity(FRAME_RATE_WINDOW),
        }
    }
}

impl JitterEstimator {
    pub fn new() -> Self {
        Self::default()
    }

    /// Back to the initial state (libwebrtc resets on bad render timing), the RTT filter too.
    pub fn reset(&mut self) {
        *self = Self::default();
    }

    /// A frame of `frame_size` was released for decoding at `now`, with `frame_delay` from
    /// [`InterFrameDelayVariation::calculate`].
    pub fn update(&mut self, now: Instant, frame_delay: Duration, frame_size: DataSize) {
        if frame_size.is_zero() {
            return;
        }
        let size = frame_size.as_bytes() as f64;
        let delta_size = size - self.prev_frame_size.map_or(0.0, |s| s.as_bytes() as f64);
        if self.startup_frame_size_count < FRAMES_UNTIL_SIZE_FILTERING {
            self.startup_frame_size_sum_bytes += size;
            self.startup_frame_size_count += 1;
        } else if self.startup_frame_size_count == FRAMES_UNTIL_SIZE_FILTERING {
            self.avg_frame_size_bytes =
                self.startup_frame_size_sum_bytes / f64::from(self.startup_frame_size_count);
            self.startup_frame_size_count += 1;
        }
        let avg_candidate = PHI * self.avg_frame_size_bytes + (1.0 - PHI) * size;
        // A frame 2σ above the average is taken for a keyframe and kept out of the average.
        if size < self.avg_frame_size_bytes + 2.0 * self.var_frame_size_bytes2.sqrt() {
            self.avg_frame_size_bytes = avg_candidate;
        }
        let dev = size - avg_candidate;
        self.var_frame_size_bytes2 = (PHI * self.var_frame_size_bytes2 + (1.0 - PHI) * dev * dev).max(1.0);
        self.max_frame_size_bytes = (PSI * self.max_frame_size_bytes).max(size);

        if self.prev_frame_size.replace(frame_size).is_none() {
            return;
        }

        let sigma = self.var_noise_ms2.sqrt();
        let clamp = Duration::from_millis_f64(NUM_STD_DEV_DELAY_CLAMP * sigma + 0.5);
        let delay_ms = rounded_ms(frame_delay.max(-clamp).min(clamp));
        let deviation = delay_ms - self.kalman.total(delta_size);
        let delay_is_outlier = deviation.abs() >= NUM_STD_DEV_DELAY_OUTLIER * sigma;
        let size_is_outlier =
            size > self.avg_frame_size_bytes + NUM_STD_DEV_SIZE_OUTLIER * self.var_frame_size_bytes2.sqrt();
        if !delay_is_outlier || size_is_outlier {
            // libwebrtc's `estimate_noise_when_congested` defaults to true: the noise filter
            // sees congested frames, only the line does not.
            self.estimate_random_jitter(now, deviation);
            if delta_size > CONGESTION_REJECTION_FACTOR * self.max_frame_size_bytes {
                self.kalman.predict_and_update(
                    delay_ms,
                    delta_size,
                    self.max_frame_size_bytes,
                    self.var_noise_ms2,
                );
            }
        } else {
            // An outlier counts as a sample at the rejection threshold.
            let bound = NUM_STD_DEV_DELAY_OUTLIER * sigma;
            self.estimate_random_jitter(now, if deviation >= 0.0 { bound } else { -bound });
        }
        if self.startup_count >= FRAME_PROCESSING_STARTUP_COUNT {
            self.filter_jitter_estimate = self.calculate_estimate();
        } else {
            self.startup_count += 1;
        }
    }

    /// A frame released for decoding needed a retransmission.
    pub fn frame_nacked(&mut self, now: Instant) {
        self.nack_count = (self.nack_count + 1).min(NACK_LIMIT);
        self.latest_nack = Some(now);
    }

    /// A new RTT sample (libwebrtc passes the max RTT of the RTCP module).
    pub fn update_rtt(&mut self, rtt: Duration) {
        self.rtt_filter.update(rtt);
    }

    /// The jitter delay for [`Timing::set_jitter_delay`]. Once [`NACK_LIMIT`] frames needed a
    /// retransmission (within [`NACK_COUNT_TIMEOUT`] of the last), the filtered RTT times
    /// `rtt_multiplier`, at most `rtt_mult_add_cap`, is added.
    pub fn jitter_estimate(
        &mut self,
        now: Instant,
        rtt_multiplier: f64,
        rtt_mult_add_cap: Option<Duration>,
    ) -> Duration {
        let mut jitter = self.calculate_estimate() + OPERATING_SYSTEM_JITTER;
        if self.latest_nack.is_some_and(|t| now - t > NACK_COUNT_TIMEOUT) {
            self.nack_count = 0;
        }
        jitter = jitter.max(self.filter_jitter_estimate);
        if self.nack_count >= NACK_LIMIT {
            let rtt_term = self.rtt_filter.rtt() * rtt_multiplier;
            jitter += rtt_mult_add_cap.map_or(rtt_term, |cap| rtt_term.min(cap));
        }
        let fps = self.frame_rate_hz();
        if fps < JITTER_SCALE_LOW_THRESHOLD_HZ {
            // A rate of zero means none is known yet: the estimate stands.
            return if fps == 0.0 { jitter.max(Duration::ZERO) } else { Duration::ZERO };
        }
        if fps < JITTER_SCALE_HIGH_THRESHOLD_HZ {
            let scale = (fps - JITTER_SCALE_LOW_THRESHOLD_HZ)
                / (JITTER_SCALE_HIGH_THRESHOLD_HZ - JITTER_SCALE_LOW_THRESHOLD_HZ);
            jitter = jitter * scale;
        }
        jitter.max(Duration::ZERO)
    }

    /// The incoming frame rate, from the mean interval between updates (0 while unknown).
    pub fn frame_rate_hz(&self) -> f64 {
        if self.frame_periods.is_empty() {
            return 0.0;
        }
        let sum: i64 = self.frame_periods.iter().map(|d| d.as_micros()).sum();
        // libwebrtc holds the mean period in whole microseconds.
        let mean_us = (sum as f64 / self.frame_periods.len() as f64).trunc();
        if mean_us <= 0.0 {
            return 0.0;
        }
        (1e6 / mean_us).min(MAX_FRAMERATE_ESTIMATE_HZ)
    }

    /// σ of the delay variation around the fitted line.
    pub fn noise_std_dev(&self) -> Duration {
        Duration::from_millis_f64(self.var_noise_ms2.sqrt())
    }

    /// Updates the mean and variance of the samples' distance `d` from the line.
    fn estimate_random_jitter(&mut self, now: Instant, d: f64) {
        if let Some(last) = self.last_update_time {
            if self.frame_periods.len() == FRAME_RATE_WINDOW {
                self.frame_periods.pop_front();
            }
            self.frame_periods.push_back(now.saturating_since(last));
        }
        self.last_update_time = Some(now);

        let mut alpha = f64::from(self.alpha_count - 1) / f64::from(self.alpha_count);
        self.alpha_count = (self.alpha_count + 1).min(ALPHA_COUNT_MAX);
        let fps = self.frame_rate_hz();
        if fps > 0.0 {
            // Weights are per frame: scale them so that a slow stream forgets as fast (in time)
            // as a 30 fps one, ramping in over the startup frames while the rate is uncertain.
            let mut rate_scale = 30.0 / fps;
            if self.alpha_count < FRAME_PROCESSING_STARTUP_COUNT {
                let n = f64::from(self.alpha_count);
                let startup = f64::from(FRAME_PROCESSING_STARTUP_COUNT);
                rate_scale = (n * rate_scale + (startup - n)) / startup;
            }
            alpha = alpha.powf(rate_scale);
        }
        let avg = alpha * self.avg_noise_ms + (1.0 - alpha) * d;
        let var = alpha * self.var_noise_ms2 + (1.0 - alpha) * (d - self.avg_noise_ms).powi(2);
        self.avg_noise_ms = avg;
        // Never zero: every later sample would be an outlier.
        self.var_noise_ms2 = var.max(1.0);
    }

    fn noise_threshold_ms(&self) -> f64 {
        (NOISE_STD_DEVS * self.var_noise_ms2.sqrt() - NOISE_STD_DEV_OFFSET.as_millis_f64()).max(1.0)
    }

    fn calculate_estimate(&mut self) -> Duration {
        let worst_case_size_deviation = self.max_frame_size_bytes - self.avg_frame_size_bytes;
        let ms = self.kalman.theta[0] * worst_case_size_deviation + self.noise_threshold_ms();
        let mut estimate = Duration::from_millis_f64(ms);
        if estimate < MIN_JITTER_ESTIMATE {
            estimate = self.prev_estimate.unwrap_or(MIN_JITTER_ESTIMATE);
        } else if estimate > MAX_JITTER_ESTIMATE {
            estimate = MAX_JITTER_ESTIMATE;
        }
        self.prev_estimate = Some(estimate);
        estimate
    }
}

/// libwebrtc's `RttFilter`: a running RTT average whose reported value is the max RTT seen, reset
/// to a short-term average when the RTT jumps or drifts for [`RTT_MAX_DRIFT_JUMP_COUNT`] samples.
#[derive(Clone, Debug, Default)]
pub struct RttFilter {
    got_non_zero_update: bool,
    avg_rtt: Duration,
    /// `var_rtt_`, in whole ms² as libwebrtc keeps it.
    var_rtt_ms2: i64,
    max_rtt: Duration,
    filt_fact_count: u32,
    jump_buf: Vec<Duration>,
    last_jump_positive: bool,
    drift_buf: Vec<Duration>,
}

impl RttFilter {
    pub fn new() -> Self {
        Self { filt_fact_count: 1, ..Self::default() }
    }

    pub fn update(&mut self, rtt: Duration) {
        if !self.got_non_zero_update {
            if rtt.is_zero() {
                return;
            }
            self.got_non_zero_update = true;
        }
        let rtt = rtt.min(MAX_RTT);
        let filt_factor = if self.filt_fact_count > 1 {
            f64::from(self.filt_fact_count - 1) / f64::from(self.filt_fact_count)
        } else {
            0.0
        };
        self.filt_fact_count = (self.filt_fact_count + 1).min(RTT_FILTER_FACTOR_MAX);
        let (old_avg, old_var) = (self.avg_rtt, self.var_rtt_ms2);
        self.avg_rtt = self.avg_rtt * filt_factor + rtt * (1.0 - filt_factor);
        let delta_ms = rounded_ms(rtt - self.avg_rtt);
        self.var_rtt_ms2 =
            (filt_factor * self.var_rtt_ms2 as f64 + (1.0 - filt_factor) * delta_ms * delta_ms) as i64;
        self.max_rtt = self.max_rtt.max(rtt);
        // A sample that starts a jump does not enter the statistics (drift detection only runs
        // when there is no unconfirmed jump, as in libwebrtc).
        if !self.jump_detection(rtt) || !self.drift_detection(rtt) {
            self.avg_rtt = old_avg;
            self.var_rtt_ms2 = old_var;
        }
    }

    /// The RTT to use: the max seen since the last jump or drift.
    pub fn rtt(&self) -> Duration {
        self.max_rtt
    }

    /// Returns false while a jump is being confirmed.
    fn jump_detection(&mut self, rtt: Duration) -> bool {
        let diff_from_avg = self.avg_rtt - rtt;
        let threshold = Duration::from_millis_f64(RTT_JUMP_STD_DEV * (self.var_rtt_ms2 as f64).sqrt());
        if diff_from_avg.abs() <= threshold {
            self.jump_buf.clear();
            return true;
        }
        let positive = diff_from_avg >= Duration::ZERO;
        if !self.jump_buf.is_empty() && positive != self.last_jump_positive {
            // A jump the other way: the samples so far do not confirm it.
            self.jump_buf.clear();
        }
        if self.jump_buf.len() < RTT_MAX_DRIFT_JUMP_COUNT {
            self.jump_buf.push(rtt);
            self.last_jump_positive = positive;
        }
        if self.jump_buf.len() < RTT_MAX_DRIFT_JUMP_COUNT {
            return false;
        }
        let samples = std::mem::take(&mut self.jump_buf);
        self.restart_from(&samples);
        true
    }

    fn drift_detection(&mut self, rtt: Duration) -> bool {
        let threshold = Duration::from_millis_f64(RTT_DRIFT_STD_DEV * (self.var_rtt_ms2 as f64).sqrt());
        if self.max_rtt - self.avg_rtt <= threshold {
            self.drift_buf.clear();
            return true;
        }
        if self.drift_buf.len() < RTT_MAX_DRIFT_JUMP_COUNT {
            self.drift_buf.push(rtt);
        }
        if self.drift_buf.len() >= RTT_MAX_DRIFT_JUMP_COUNT {
            let samples = std::mem::take(&mut self.drift_buf);
            self.restart_from(&samples);
        }
        true
    }

    /// `ShortRttFilter`: average and max of the confirming samples replace the long-term state.
    fn restart_from(&mut self, samples: &[Duration]) {
        let sum = samples.iter().fold(Duration::ZERO, |acc, &s| acc + s);
        self.avg_rtt = sum / samples.len() as i64;
        self.max_rtt = samples.iter().copied().fold(Duration::ZERO, Duration::max);
        self.filt_fact_count = RTT_MAX_DRIFT_JUMP_COUNT as u32 + 1;
    }
}

/// libwebrtc's `TimestampExtrapolator` with its default configuration: a recursive least-squares
/// fit `rtp − first rtp = w[0] · t + w[1]` (t in ms since `start`), so `w[0]` is the sender's
/// clock rate in ticks per ms and `w[1]` its offset. Large single deviations are rejected after
/// [`OUTLIER_REJECTION_STARTUP_DELAY`] frames; a lasting one (a CUSUM alarm, or more than
/// [`OUTLIER_REJECTION_MAX_CONSECUTIVE`] rejected frames) reopens the offset's uncertainty.
#[derive(Clone, Debug)]
pub struct TimestampExtrapolator {
    w: [f64; 2],
    p: [[f64; 2]; 2],
    start: Instant,
    prev: Instant,
    unwrapper: SeqUnwrapper<32>,
    first_unwrapped: Option<i64>,
    prev_unwrapped: Option<i64>,
    packet_count: u32,
    residual_mean: f64,
    residual_variance: f64,
    outliers_consecutive: u32,
    acc_pos: f64,
    acc_neg: f64,
}

impl TimestampExtrapolator {
    /// `kP00`, `kP11`: initial uncertainty of clock rate and offset.
    const P00: f64 = 1.0;
    const P11: f64 = 1e10;
    /// `kStartResidualVariance`.
    const START_RESIDUAL_VARIANCE: f64 = 3000.0 * 3000.0;

    pub fn new(start: Instant) -> Self {
        let mut e = Self {
            w: [0.0; 2],
            p: [[0.0; 2]; 2],
            start,
            prev: start,
            unwrapper: SeqUnwrapper::new(),
            first_unwrapped: None,
            prev_unwrapped: None,
            packet_count: 0,
            residual_mean: 0.0,
            residual_variance: 0.0,
            outliers_consecutive: 0,
            acc_pos: 0.0,
            acc_neg: 0.0,
        };
        e.reset(start);
        e
    }

    pub fn reset(&mut self, start: Instant) {
        self.start = start;
        self.prev = start;
        self.first_unwrapped = None;
        self.prev_unwrapped = None;
        self.w = [VIDEO_CLOCK_HZ as f64 / 1e3, 0.0];
        self.p = [[Self::P00, 0.0], [0.0, Self::P11]];
        self.unwrapper = SeqUnwrapper::new();
        self.packet_count = 0;
        self.residual_mean = 0.0;
        self.residual_variance = Self::START_RESIDUAL_VARIANCE;
        self.outliers_consecutive = 0;
        self.acc_pos = 0.0;
        self.acc_neg = 0.0;
    }

    /// A frame with `rtp_timestamp` was received at `now`.
    pub fn update(&mut self, now: Instant, rtp_timestamp: u32) {
        if now - self.prev > EXTRAPOLATOR_HARD_RESET_TIMEOUT {
            self.reset(now);
        } else {
            self.prev = now;
        }
        let ts = SeqNo::new(u64::from(rtp_timestamp));
        let mut unwrapped = self.unwrapper.unwrap(ts);
        // libwebrtc compares the RTP change with the one expected from the time elapsed since
        // the previous frame, but measures that time after updating it, so the expected change
        // is zero: any jump of more than 10 s of ticks resets the filter.
        if self.prev_unwrapped.is_some_and(|p| (unwrapped - p).abs() > EXTRAPOLATOR_HARD_RESET_RTP_JUMP) {
            self.reset(now);
            // libwebrtc keeps the value from the old unwrapper; a fresh one keeps later frames
            // consistent with the first.
            unwrapped = self.unwrapper.unwrap(ts);
        }

        // Time relative to `start` keeps the matrices well scaled.
        let t = rounded_ms(now - self.start);
        let first = *self.first_unwrapped.get_or_insert_with(|| {
            self.w[1] = -self.w[0] * t;
            unwrapped
        });
        let residual = (unwrapped - first) as f64 - t * self.w[0] - self.w[1];

        if self.is_outlier(residual) {
            self.outliers_consecutive += 1;
            if self.outliers_consecutive <= OUTLIER_REJECTION_MAX_CONSECUTIVE {
                return;
            }
            self.soft_reset();
        }
        self.outliers_consecutive = 0;
        if self.delay_change_detected(residual) && self.packet_count >= EXTRAPOLATOR_STARTUP_PACKETS {
            self.soft_reset();
        }
        // Reordered frames are not dropped here: with hard outlier rejection on (the default),
        // libwebrtc leaves them to it.

        // Recursive least squares with forgetting factor 1 on T = [t 1]'.
        let [[p00, p01], [p10, p11]] = self.p;
        let k = [p00 * t + p01, p10 * t + p11];
        let tpt = 1.0 + t * k[0] + k[1];
        let k = [k[0] / tpt, k[1] / tpt];
        self.w[0] += k[0] * residual;
        self.w[1] += k[1] * residual;
        self.p = [
            [p00 - (k[0] * t * p00 + k[0] * p10), p01 - (k[0] * t * p01 + k[0] * p11)],
            [p10 - (k[1] * t * p00 + k[1] * p10), p11 - (k[1] * t * p01 + k[1] * p11)],
        ];
        self.prev_unwrapped = Some(unwrapped);
        self.packet_count = self.packet_count.saturating_add(1);
    }

    /// The local time at which a frame with `rtp_timestamp` is expected to be received; `None`
    /// before the first frame.
    pub fn extrapolate_local_time(&self, rtp_timestamp: u32) -> Option<Instant> {
        let unwrapped = self.unwrapper.peek(SeqNo::new(u64::from(rtp_timestamp)));
        let first = self.first_unwrapped?;
        let at = if self.packet_count < EXTRAPOLATOR_STARTUP_PACKETS {
            // Too few frames for a fit: nominal clock rate from the last frame.
            let prev = self.prev_unwrapped?;
            self.prev + Duration::from_millis_f64((unwrapped - prev) as f64 / 90.0)
        } else if self.w[0] < 1e-3 {
            self.start
        } else {
            let ms = ((unwrapped - first) as f64 - self.w[1]) / self.w[0];
            // libwebrtc rounds to whole milliseconds this way (`static_cast<int64_t>(x + 0.5)`).
            self.start + Duration::from_millis((ms + 0.5) as i64)
        };
        // libwebrtc declines times before its clock's origin (a wrapped timestamp).
        (at >= Instant::ZERO).then_some(at)
    }

    fn soft_reset(&mut self) {
        // `reset_full_cov_on_alarm` is false by default: only the offset's uncertainty reopens.
        self.p[1][1] = Self::P11;
    }

    /// Hard outlier rejection: true for a residual more than [`OUTLIER_REJECTION_STD_DEV`] σ from
    /// the running mean; inliers update the running statistics.
    fn is_outlier(&mut self, residual: f64) -> bool {
        if self.packet_count >= OUTLIER_REJECTION_STARTUP_DELAY {
            let threshold = OUTLIER_REJECTION_STD_DEV * self.residual_variance.sqrt();
            if (residual - self.residual_mean).abs() > threshold {
                return true;
            }
        }
        let f = OUTLIER_REJECTION_FORGETTING_FACTOR;
        self.residual_mean = f * self.residual_mean + (1.0 - f) * residual;
        let dev = residual - self.residual_mean;
        self.residual_variance = (f * self.residual_variance + (1.0 - f) * dev * dev).max(1.0);
        false
    }

    /// CUSUM detection of a sudden change of the network delay.
    fn delay_change_detected(&mut self, residual: f64) -> bool {
        let r = residual.clamp(-DELAY_CHANGE_ACC_MAX_ERROR, DELAY_CHANGE_ACC_MAX_ERROR);
        self.acc_pos = (self.acc_pos + r - DELAY_CHANGE_ACC_DRIFT).max(0.0);
        self.acc_neg = (self.acc_neg + r + DELAY_CHANGE_ACC_DRIFT).min(0.0);
        if self.acc_pos > DELAY_CHANGE_ALARM_THRESHOLD || self.acc_neg < -DELAY_CHANGE_ALARM_THRESHOLD {
            self.acc_pos = 0.0;
            self.acc_neg = 0.0;
            return true;
        }
        false
    }
}

/// The delays [`Timing`] works with (libwebrtc `VCMTiming::VideoDelayTimings`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DelayTimings {
    pub jitter_delay: Duration,
    pub estimated_decode_time: Duration,
    pub render_delay: Duration,
    pub min_playout_delay: Duration,
    pub max_playout_delay: Duration,
    pub target_delay: Duration,
    pub current_delay: Duration,
    pub frames_decoded: u64,
}

/// libwebrtc's `VCMTiming` (see module docs).
#[derive(Clone, Debug)]
pub struct Timing {
    extrapolator: TimestampExtrapolator,
    /// The model decoder's fixed decode time.
    decode_time: Duration,
    frames_decoded: u64,
    render_delay: Duration,
    min_playout_delay: Duration,
    max_playout_delay: Duration,
    /// From the jitter estimator.
    jitter_delay: Duration,
    /// Receive-to-render delay applied to frames now; follows the target (zero until set).
    current_delay: Duration,
    prev_frame_timestamp: Option<u32>,
}

impl Timing {
    /// A receiver whose decoder takes `decode_time` per frame, started at `now`.
    pub fn new(now: Instant, decode_time: Duration) -> Self {
        Self {
            extrapolator: TimestampExtrapolator::new(now),
            decode_time,
            frames_decoded: 0,
            render_delay: DEFAULT_RENDER_DELAY,
            min_playout_delay: DEFAULT_MIN_PLAYOUT_DELAY,
            max_playout_delay: DEFAULT_MAX_PLAYOUT_DELAY,
            jitter_delay: Duration::ZERO,
            current_delay: Duration::ZERO,
            prev_frame_timestamp: None,
        }
    }

    /// libwebrtc's `Reset`: everything but the max playout delay and the decode time goes back
    /// to its initial value.
    pub fn reset(&mut self, now: Instant) {
        let max_playout_delay = self.max_playout_delay;
        *self = Self { max_playout_delay, ..Self::new(now, self.decode_time) };
    }

    pub fn set_render_delay(&mut self, render_delay: Duration) {
        self.render_delay = render_delay;
    }

    pub fn set_min_playout_delay(&mut self, delay: Duration) {
        self.min_playout_delay = delay;
    }

    pub fn set_max_playout_delay(&mut self, delay: Duration) {
        self.max_playout_delay = delay;
    }

    /// The jitter estimator's delay. The first one also becomes the current delay.
    pub fn set_jitter_delay(&mut self, jitter_delay: Duration) {
        if jitter_delay != self.jitter_delay {
            self.jitter_delay = jitter_delay;
            if self.current_delay.is_zero() {
                self.current_delay = jitter_delay;
            }
        }
    }

    /// A frame was decoded (libwebrtc `StopDecodeTimer`).
    pub fn on_frame_decoded(&mut self) {
        self.frames_decoded += 1;
    }

    /// libwebrtc's decode time estimate: nothing measured until the first
    /// [`DECODE_TIME_IGNORED_SAMPLES`] decodes have passed, then the fixed decode time (the
    /// 95th percentile of a constant).
    pub fn estimated_decode_time(&self) -> Duration {
        if self.frames_decoded > DECODE_TIME_IGNORED_SAMPLES {
            self.decode_time
        } else {
            Duration::ZERO
        }
    }

    /// `max(min playout delay, jitter delay + decode time + render delay)`.
    pub fn target_delay(&self) -> Duration {
        self.min_playout_delay.max(self.jitter_delay + self.estimated_decode_time() + self.render_delay)
    }

    pub fn current_delay(&self) -> Duration {
        self.current_delay
    }

    pub fn timings(&self) -> DelayTimings {
        DelayTimings {
            jitter_delay: self.jitter_delay,
            estimated_decode_time: self.estimated_decode_time(),
            render_delay: self.render_delay,
            min_playout_delay: self.min_playout_delay,
            max_playout_delay: self.max_playout_delay,
            target_delay: self.target_delay(),
            current_delay: self.current_delay,
            frames_decoded: self.frames_decoded,
        }
    }

    /// Moves the current delay toward the target by at most [`DELAY_MAX_CHANGE_PER_S`] per
    /// second of RTP time since the previous call (whole milliseconds, truncated): a large step
    /// would show as a freeze, small ones as slow or fast motion. A timestamp not newer than the
    /// previous one changes nothing. libwebrtc's legacy receiver calls this per frame; the
    /// current `VideoStreamBufferController` uses [`Self::update_current_delay_on_decode`].
    pub fn update_current_delay(&mut self, rtp_timestamp: u32) {
        let target = self.target_delay();
        if self.current_delay.is_zero() {
            self.current_delay = target;
        } else if target != self.current_delay {
            // Without a previous timestamp no RTP time is known to have passed (libwebrtc
            // measures from timestamp 0 then).
            let Some(prev) = self.prev_frame_timestamp else {
                self.prev_frame_timestamp = Some(rtp_timestamp);
                return;
            };
            let ticks = SeqNo::<32>::new(u64::from(prev)).distance_to(SeqNo::new(u64::from(rtp_timestamp)));
            let max_change =
                Duration::from_millis(DELAY_MAX_CHANGE_PER_S.as_millis() * ticks / VIDEO_CLOCK_HZ);
            if max_change <= Duration::ZERO {
                // Under 1 ms of allowance, or reordered: wait for a later frame.
                return;
            }
            self.current_delay += (target - self.current_delay).max(-max_change).min(max_change);
        }
        self.prev_frame_timestamp = Some(rtp_timestamp);
    }

    /// A frame due to render at `render_time` started decoding at `decode_start`: the current
    /// delay grows by how late that was (up to the target), and drops to the target if it is
    /// above it. A frame started early changes nothing.
    pub fn update_current_delay_on_decode(&mut self, render_time: Instant, decode_start: Instant) {
        let target = self.target_delay();
        let late = (decode_start - render_time) + self.estimated_decode_time() + self.render_delay;
        // libwebrtc ignores lateness that rounds to less than 0 ms.
        if rounded_ms(late) < 0.0 {
            return;
        }
        self.current_delay =
            if self.current_delay + late <= target { self.current_delay + late } else { target };
    }

    /// A complete frame not delayed by a retransmission was received at `receive_time`.
    pub fn incoming_timestamp(&mut self, rtp_timestamp: u32, receive_time: Instant) {
        self.extrapolator.update(receive_time, rtp_timestamp);
    }

    /// When to render the frame with `rtp_timestamp`: its expected receive time (`now` if none
    /// is known yet) plus the current delay, kept within the playout delay bounds.
    pub fn render_time(&self, rtp_timestamp: u32, now: Instant) -> Instant {
        let expected = self.extrapolator.extrapolate_local_time(rtp_timestamp).unwrap_or(now);
        expected + self.min_playout_delay.max(self.current_delay.min(self.max_playout_delay))
    }

    /// How long the receiver may still wait before it must start decoding a frame due at
    /// `render_time`: `render_time − now − decode time − render delay`. Negative when late.
    pub fn max_waiting_time(&self, render_time: Instant, now: Instant) -> Duration {
        render_time - now - self.estimated_decode_time() - self.render_delay
    }

    /// libwebrtc resets the estimator and the timing when a frame's render time is more than
    /// [`MAX_VIDEO_DELAY`] from `now` or the target delay exceeds it
    /// (`FrameHasBadRenderTiming`, `TargetVideoDelayIsTooLarge`).
    pub fn render_timing_is_bad(&self, render_time: Instant, now: Instant) -> bool {
        (render_time - now).abs() > MAX_VIDEO_DELAY || self.target_delay() > MAX_VIDEO_DELAY
    }
}

/// libwebrtc `FrameDecodeTiming`: a frame whose waiting time is [`MAX_ALLOWED_FRAME_DELAY`] or
/// more in the past is skipped if a later decodable frame exists (the last one is always
/// decoded).
pub fn frame_is_too_late(max_waiting_time: Duration) -> bool {
    max_waiting_time <= -MAX_ALLOWED_FRAME_DELAY
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_pcg::Pcg64Mcg;

    fn ms(t: i64) -> Duration {
        Duration::from_millis(t)
    }

    /// 30 fps: frame `k` at `k · 100/3 ms`, in whole microseconds.
    fn frame_time_30fps(k: i64) -> Duration {
        Duration::from_micros(k * 100_000 / 3)
    }

    /// A regular 30 fps stream of 1000-byte frames, each arriving exactly on time.
    fn regular_stream(jitter: &mut JitterEstimator, frames: i64) -> Instant {
        let mut now = Instant::ZERO;
        for k in 0..frames {
            now = Instant::ZERO + frame_time_30fps(k);
            jitter.update(now, Duration::ZERO, DataSize::bytes(1000));
        }
        now
    }

    #[test]
    fn inter_frame_delay_variation_is_receive_delta_minus_rtp_delta() {
        let mut ifd = InterFrameDelayVariation::new();
        let t0 = Instant::from_millis(500);
        assert_eq!(ifd.calculate(1000, t0), Some(Duration::ZERO));
        // 3000 ticks = 33 333 us of capture time, received 40 ms later.
        assert_eq!(ifd.calculate(4000, t0 + ms(40)), Some(Duration::from_micros(6_667)));
        // Older or equal timestamps are not samples.
        assert_eq!(ifd.calculate(3000, t0 + ms(45)), None);
        assert_eq!(ifd.calculate(4000, t0 + ms(46)), None);
        // The next sample is measured from the last accepted frame.
        assert_eq!(ifd.calculate(7000, t0 + ms(60)), Some(Duration::from_micros(20_000 - 33_333)));
    }

    #[test]
    fn inter_frame_delay_variation_crosses_the_rtp_wrap() {
        let mut ifd = InterFrameDelayVariation::new();
        let start = u32::MAX - 4_000;
        let mut t = Instant::from_secs(1);
        ifd.calculate(start, t);
        for k in 1..5u32 {
            t += ms(100);
            // 9000 ticks = 100 ms: on time even where the timestamp wraps to small values.
            assert_eq!(ifd.calculate(start.wrapping_add(9000 * k), t), Some(Duration::ZERO), "frame {k}");
        }
    }

    #[test]
    fn a_regular_stream_settles_at_the_noise_floor() {
        // Constant sizes: the size term (max − avg) / C is 0. Zero deviations drive σ² to its
        // floor of 1 ms², so 2.33 σ − 30 ms is below the 1 ms minimum: the estimate is 1 ms, plus
        // the 10 ms operating-system jitter.
        let mut jitter = JitterEstimator::new();
        let now = regular_stream(&mut jitter, 300);
        assert!((jitter.frame_rate_hz() - 30.0).abs() < 1e-3, "{}", jitter.frame_rate_hz());
        assert_eq!(jitter.noise_std_dev(), ms(1));
        assert_eq!(jitter.jitter_estimate(now, 1.0, None), ms(11));
    }

    #[test]
    fn uniform_twenty_ms_jitter_raises_the_estimate() {
        // Arrival offsets uniform in ±20 ms: Var = 40²/12 = 133 ms², so the delay variation
        // (a difference of two) has σ² = 267 ms², σ = 16.3 ms. The noise term is
        // 2.33 · 16.3 − 30 = 8.0 ms, reported as 18 ms with the operating-system jitter.
        // ±8 % on σ (the filter's ~400-frame memory) gives 15.1 ... 21.0 ms.
        let mut rng = Pcg64Mcg::seed_from_u64(7);
        let mut jitter = JitterEstimator::new();
        let mut ifd = InterFrameDelayVariation::new();
        let mut now = Instant::ZERO;
        for k in 0..3000i64 {
            let rtp = (3000 * k) as u32;
            let arrival = Instant::from_millis(50)
                + frame_time_30fps(k)
                + Duration::from_micros(rng.random_range(-20_000..=20_000));
            // Frames are processed in order, so the estimator's clock is regular.
            now = Instant::from_millis(100) + frame_time_30fps(k);
            if let Some(d) = ifd.calculate(rtp, arrival) {
                jitter.update(now, d, DataSize::bytes(1000));
            }
        }
        let sigma = jitter.noise_std_dev().as_millis_f64();
        assert!((15.0..17.6).contains(&sigma), "σ = {sigma} ms");
        let estimate = jitter.jitter_estimate(now, 1.0, None);
        assert!(estimate >= Duration::from_micros(15_100) && estimate <= ms(21), "{estimate}");
    }

    #[test]
    fn the_rtt_is_added_after_three_nacked_frames_and_forgotten_after_a_minute() {
        let mut jitter = JitterEstimator::new();
        let now = regular_stream(&mut jitter, 300);
        jitter.update_rtt(ms(100));
        jitter.frame_nacked(now);
        jitter.frame_nacked(now);
        assert_eq!(jitter.jitter_estimate(now, 1.0, None), ms(11), "two are not enough");
        jitter.frame_nacked(now);
        assert_eq!(jitter.jitter_estimate(now, 1.0, None), ms(111));
        // libwebrtc's default experiment: 0.9 × RTT, capped at 200 ms.
        assert_eq!(jitter.jitter_estimate(now, DEFAULT_RTT_MULT, Some(DEFAULT_RTT_MULT_ADD_CAP)), ms(101));
        assert_eq!(jitter.jitter_estimate(now, 1.0, Some(ms(40))), ms(51));
        assert_eq!(jitter.jitter_estimate(now + ms(60_000), 1.0, None), ms(111));
        assert_eq!(jitter.jitter_estimate(now + ms(60_001), 1.0, None), ms(11));
    }

    #[test]
    fn low_frame_rates_scale_the_estimate_down() {
        // 8 fps: (8 − 5) / (10 − 5) = 0.6 of 11 ms. 4 fps: nothing.
        for (period_ms, expected) in [(125, Duration::from_micros(6_600)), (250, Duration::ZERO)] {
            let mut jitter = JitterEstimator::new();
            let mut now = Instant::ZERO;
            for k in 0..100 {
                now = Instant::from_millis(k * period_ms);
                jitter.update(now, Duration::ZERO, DataSize::bytes(1000));
            }
            assert_eq!(jitter.jitter_estimate(now, 1.0, None), expected, "{period_ms} ms frames");
        }
    }

    #[test]
    fn rtt_filter_follows_a_step_after_five_samples_and_drops_a_spike_by_drift() {
        let mut f = RttFilter::new();
        f.update(Duration::ZERO);
        assert_eq!(f.rtt(), Duration::ZERO, "zero before any real sample is ignored");
        for _ in 0..10 {
            f.update(ms(300));
        }
        assert_eq!(f.rtt(), ms(300));
        for n in 1..=4 {
            f.update(ms(100));
            assert_eq!(f.rtt(), ms(300), "sample {n} of the step down");
        }
        f.update(ms(100));
        assert_eq!(f.rtt(), ms(100), "the fifth confirms the jump");
        // A single spike is the max at once. It is within 2.5 σ of the statistics it just
        // widened, so it is no jump and stays in the average; the max returns only once
        // max − avg exceeds 3.5 σ for five samples (normal samples 7 to 11).
        f.update(ms(500));
        assert_eq!(f.rtt(), ms(500));
        for n in 1..=10 {
            f.update(ms(100));
            assert_eq!(f.rtt(), ms(500), "normal sample {n} after the spike");
        }
        f.update(ms(100));
        assert_eq!(f.rtt(), ms(100));
        f.update(ms(5000));
        assert_eq!(f.rtt(), MAX_RTT);
    }

    /// A 30 fps stream from RTP timestamp `rtp0`, frame `k` received at `offset + k / 30 s`.
    fn feed(e: &mut TimestampExtrapolator, rtp0: u32, offset: Instant, frames: std::ops::Range<i64>) {
        for k in frames {
            e.update(offset + frame_time_30fps(k), rtp0.wrapping_add(3000 * k as u32));
        }
    }

    fn assert_close(actual: Option<Instant>, expected: Instant, what: &str) {
        let actual = actual.unwrap_or_else(|| panic!("{what}: no estimate"));
        assert!((actual - expected).abs() <= ms(1), "{what}: {actual} vs {expected}");
    }

    #[test]
    fn extrapolator_maps_timestamps_onto_the_constant_offset() {
        let offset = Instant::from_millis(1234);
        let rtp0 = 123_456_789;
        let mut e = TimestampExtrapolator::new(Instant::ZERO);
        assert_eq!(e.extrapolate_local_time(rtp0), None);
        feed(&mut e, rtp0, offset, 0..1);
        // One frame: the nominal 90 kHz from it.
        assert_close(e.extrapolate_local_time(rtp0 + 9000), offset + ms(100), "after one frame");
        feed(&mut e, rtp0, offset, 1..600);
        for k in [0, 599, 600, 700] {
            let rtp = rtp0.wrapping_add(3000 * k as u32);
            assert_close(e.extrapolate_local_time(rtp), offset + frame_time_30fps(k), &format!("frame {k}"));
        }
    }

    #[test]
    fn extrapolator_crosses_the_rtp_wrap() {
        let offset = Instant::from_millis(20);
        let rtp0 = u32::MAX - 3000 * 100;
        let mut e = TimestampExtrapolator::new(Instant::ZERO);
        feed(&mut e, rtp0, offset, 0..200);
        for k in [99, 100, 101, 250] {
            let rtp = rtp0.wrapping_add(3000 * k as u32);
            assert_close(e.extrapolate_local_time(rtp), offset + frame_time_30fps(k), &format!("frame {k}"));
        }
    }

    #[test]
    fn extrapolator_rejects_a_single_late_frame() {
        let offset = Instant::from_millis(20);
        let mut e = TimestampExtrapolator::new(Instant::ZERO);
        feed(&mut e, 0, offset, 0..400);
        // Frame 400 arrives a second late; the fit ignores it.
        e.update(offset + frame_time_30fps(400) + ms(1000), 3000 * 400);
        feed(&mut e, 0, offset, 401..402);
        assert_close(
            e.extrapolate_local_time(3000 * 402),
            offset + frame_time_30fps(402),
            "after the late frame",
        );
    }

    fn decoded(timing: &mut Timing, frames: u64) {
        for _ in 0..frames {
            timing.on_frame_decoded();
        }
    }

    #[test]
    fn decode_time_counts_after_five_decoded_frames() {
        let mut timing = Timing::new(Instant::ZERO, ms(7));
        timing.set_jitter_delay(ms(20));
        decoded(&mut timing, 5);
        assert_eq!(timing.target_delay(), ms(30), "jitter + render delay only");
        decoded(&mut timing, 1);
        assert_eq!(timing.target_delay(), ms(37));
        timing.set_min_playout_delay(ms(100));
        assert_eq!(timing.target_delay(), ms(100));
    }

    #[test]
    fn current_delay_moves_at_most_100_ms_per_second_of_rtp_time() {
        let mut timing = Timing::new(Instant::ZERO, ms(10));
        decoded(&mut timing, 6);
        timing.set_jitter_delay(ms(20));
        assert_eq!(timing.current_delay(), ms(20), "the first jitter delay is taken at once");
        // Frames 100 ms apart in RTP time, starting just before the 32-bit wrap.
        let mut rtp = u32::MAX - 9000 * 5;
        let mut step = |timing: &mut Timing| {
            timing.update_current_delay(rtp);
            rtp = rtp.wrapping_add(9000);
            timing.current_delay()
        };
        assert_eq!(step(&mut timing), ms(20), "the first timestamp only starts the clock");
        assert_eq!(step(&mut timing), ms(30));
        assert_eq!(step(&mut timing), ms(40), "at the target, 20 + 10 + 10 ms");
        timing.set_jitter_delay(ms(220));
        let raised: Vec<_> = (0..12).map(|_| step(&mut timing).as_millis()).collect();
        assert_eq!(raised, [50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150, 160]);
        timing.set_jitter_delay(ms(20));
        assert_eq!(step(&mut timing), ms(150), "down at the same rate");
        // An older timestamp allows nothing.
        timing.update_current_delay(rtp.wrapping_sub(20_000));
        assert_eq!(timing.current_delay(), ms(150));
    }

    #[test]
    fn at_30_fps_each_frame_allows_3_ms() {
        // 3000 ticks allow 100 · 3000 / 90000 = 3.33 ms, truncated to 3: 90 ms per second.
        let mut timing = Timing::new(Instant::ZERO, ms(10));
        decoded(&mut timing, 6);
        timing.set_jitter_delay(ms(20));
        timing.update_current_delay(0);
        timing.set_jitter_delay(ms(500));
        for k in 1..=30 {
            timing.update_current_delay(3000 * k);
        }
        assert_eq!(timing.current_delay(), ms(20 + 90));
    }

    #[test]
    fn a_late_decode_raises_the_current_delay_up_to_the_target() {
        let mut timing = Timing::new(Instant::ZERO, ms(10));
        decoded(&mut timing, 6);
        timing.set_jitter_delay(ms(20));
        timing.set_jitter_delay(ms(60));
        assert_eq!((timing.current_delay(), timing.target_delay()), (ms(20), ms(80)));
        let render = Instant::from_secs(1);
        let due = render - ms(20);
        timing.update_current_delay_on_decode(render, due - ms(3));
        assert_eq!(timing.current_delay(), ms(20), "early");
        timing.update_current_delay_on_decode(render, due + ms(15));
        assert_eq!(timing.current_delay(), ms(35), "15 ms late");
        timing.update_current_delay_on_decode(render, due + ms(100));
        assert_eq!(timing.current_delay(), ms(80), "capped at the target");
    }

    #[test]
    fn render_time_of_a_regular_stream_is_receive_time_plus_current_delay() {
        let mut timing = Timing::new(Instant::ZERO, ms(10));
        timing.set_jitter_delay(ms(45));
        let offset = Instant::from_millis(777);
        for k in 0..300 {
            let rtp = 5_000 + 3000 * k as u32;
            let arrival = offset + frame_time_30fps(k);
            timing.incoming_timestamp(rtp, arrival);
            let render = timing.render_time(rtp, arrival);
            assert!((render - (arrival + ms(45))).abs() <= ms(1), "frame {k}: {render}");
        }
        // A frame not received yet renders at its expected arrival plus the delay.
        let render = timing.render_time(5_000 + 3000 * 310, offset);
        assert!((render - (offset + frame_time_30fps(310) + ms(45))).abs() <= ms(1), "{render}");
        // The playout bounds clamp the delay.
        timing.set_max_playout_delay(ms(30));
        let rtp = 5_000 + 3000 * 299;
        assert!((timing.render_time(rtp, offset) - (offset + frame_time_30fps(299) + ms(30))).abs() <= ms(1));
    }

    #[test]
    fn waiting_time_and_the_late_frame_rule() {
        let mut timing = Timing::new(Instant::ZERO, ms(10));
        decoded(&mut timing, 6);
        let now = Instant::from_secs(2);
        assert_eq!(timing.max_waiting_time(now + ms(50), now), ms(30));
        let wait = timing.max_waiting_time(now + ms(15), now);
        assert_eq!(wait, ms(-5));
        assert!(frame_is_too_late(wait));
        assert!(!frame_is_too_late(wait + Duration::from_micros(1)));
        assert!(timing.render_timing_is_bad(now + ms(10_001), now));
        assert!(!timing.render_timing_is_bad(now + ms(10_000), now));
    }

    #[test]
    fn reset_keeps_the_max_playout_delay_and_the_decoder() {
        let mut timing = Timing::new(Instant::ZERO, ms(10));
        decoded(&mut timing, 6);
        timing.set_jitter_delay(ms(50));
        timing.set_max_playout_delay(ms(700));
        timing.set_render_delay(ms(3));
        timing.reset(Instant::from_secs(5));
        let t = timing.timings();
        assert_eq!(
            (t.current_delay, t.jitter_delay, t.render_delay),
            (Duration::ZERO, Duration::ZERO, ms(10))
        );
        assert_eq!((t.max_playout_delay, t.frames_decoded), (ms(700), 0));
        decoded(&mut timing, 6);
        assert_eq!(timing.estimated_decode_time(), ms(10));
    }
}
