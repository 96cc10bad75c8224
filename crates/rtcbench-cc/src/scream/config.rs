//! Every constant of SCReAM v1 (RFC 8298) with its value and section, and [`ScreamConfig`], the
//! struct that carries them into the controller.
//!
//! Values were checked against the text of draft-ietf-rmcat-scream-cc-13 (Oct 2017), the text
//! the IESG approved as RFC 8298. Three groups:
//!
//! 1. the named constants of §4.1.1.1 (RECOMMENDED values);
//! 2. numbers that appear only inside the RFC's pseudo code or prose (§4.1.2, §4.1.2.2, §4.1.2.3,
//!    §4.1.3), named here after what they do, and those the RFC takes from LEDBAT (RFC 6817) and
//!    RFC 6298;
//! 3. values the RFC leaves open, chosen by rtcbench. Each says where it comes from
//!    (`docs/controllers/scream.md` lists them as deviations).

use rtcbench_units::{Bitrate, DataSize, Duration};

// ---------------------------------------------------------------------------------------------
// 1. RFC 8298 §4.1.1.1, "Constants"
// ---------------------------------------------------------------------------------------------

/// QDELAY_TARGET_LO, target value for the minimum qdelay (RFC 8298 §4.1.1.1).
pub const QDELAY_TARGET_LO: Duration = Duration::from_millis(100);
/// QDELAY_TARGET_HI, upper limit of qdelay_target when competing flows are compensated for
/// (RFC 8298 §4.1.1.1).
pub const QDELAY_TARGET_HI: Duration = Duration::from_millis(400);
/// QDELAY_WEIGHT, EWMA weight of qdelay_fraction_avg (RFC 8298 §4.1.1.1).
pub const QDELAY_WEIGHT: f64 = 0.1;
/// QDELAY_TREND_TH, qdelay_trend at which fast increase ends (RFC 8298 §4.1.1.1).
pub const QDELAY_TREND_TH: f64 = 0.2;
/// MIN_CWND, minimum congestion window (RFC 8298 §4.1.1.1).
pub const MIN_CWND: DataSize = DataSize::bytes(3000);
/// MAX_BYTES_IN_FLIGHT_HEAD_ROOM, cwnd ≤ this × max_bytes_in_flight (RFC 8298 §4.1.1.1).
pub const MAX_BYTES_IN_FLIGHT_HEAD_ROOM: f64 = 1.1;
/// GAIN, gain of the delay-based cwnd adjustment (RFC 8298 §4.1.1.1).
pub const GAIN: f64 = 1.0;
/// BETA_LOSS, cwnd scale factor on a loss event (RFC 8298 §4.1.1.1).
pub const BETA_LOSS: f64 = 0.8;
/// BETA_ECN, cwnd scale factor on an ECN event, and target-rate scale on an ECN event
/// (RFC 8298 §4.1.1.1, §4.1.3).
pub const BETA_ECN: f64 = 0.9;
/// BETA_R, target-rate scale factor on a loss event (RFC 8298 §4.1.1.1).
pub const BETA_R: f64 = 0.9;
/// MSS, maximum segment size = maximum RTP packet size (RFC 8298 §4.1.1.1).
pub const MSS: DataSize = DataSize::bytes(1000);
/// RATE_ADJUST_INTERVAL, interval between media bitrate adjustments (RFC 8298 §4.1.1.1).
pub const RATE_ADJUST_INTERVAL: Duration = Duration::from_millis(200);
/// RAMP_UP_SPEED, maximum rate increase per second: 200 kbit/s per second (RFC 8298 §4.1.1.1).
pub const RAMP_UP_SPEED_PER_S: Bitrate = Bitrate::bps(200_000);
/// PRE_CONGESTION_GUARD, guard against early congestion onset; the RFC gives the range 0..1 and
/// reports 0.1 as suitable for H.264 and VP8 (RFC 8298 §4.1.1.1).
pub const PRE_CONGESTION_GUARD: f64 = 0.1;
/// TX_QUEUE_SIZE_FACTOR, guard against RTP queue build-up; range 0..2, 1.0 reported suitable
/// (RFC 8298 §4.1.1.1). The RFC subtracts `TX_QUEUE_SIZE_FACTOR × rtp_queue_size` (bits) from a
/// rate (bit/s), so the factor is per second.
pub const TX_QUEUE_SIZE_FACTOR_PER_S: f64 = 1.0;
/// RTP_QDELAY_TH, RTP queue delay above which the target rate is scaled down (RFC 8298 §4.1.1.1).
pub const RTP_QDELAY_TH: Duration = Duration::from_millis(20);
/// TARGET_RATE_SCALE_RTP_QDELAY, that scale (RFC 8298 §4.1.1.1).
pub const TARGET_RATE_SCALE_RTP_QDELAY: f64 = 0.95;
/// QDELAY_TREND_LO, qdelay_trend below which fast increase may resume (RFC 8298 §4.1.1.1).
pub const QDELAY_TREND_LO: f64 = 0.2;
/// T_RESUME_FAST_INCREASE, how long qdelay_trend must stay below QDELAY_TREND_LO before fast
/// increase resumes (RFC 8298 §4.1.1.1, §4.1.2.7).
pub const T_RESUME_FAST_INCREASE: Duration = Duration::from_secs(5);
/// RATE_PACE_MIN, minimum pacing rate (RFC 8298 §4.1.1.1).
pub const RATE_PACE_MIN: Bitrate = Bitrate::bps(50_000);

// ---------------------------------------------------------------------------------------------
// 2. Numbers in the RFC's pseudo code and prose, and those it takes from RFC 6817 / RFC 6298
// ---------------------------------------------------------------------------------------------

/// qdelay_fraction is sampled into qdelay_fraction_hist every 50 ms (RFC 8298 §4.1.2).
pub const QDELAY_FRACTION_SAMPLE_INTERVAL: Duration = Duration::from_millis(50);
/// Length of qdelay_fraction_hist (RFC 8298 §4.1.1.2, `qdelay_fraction_hist[20]`).
pub const QDELAY_FRACTION_HIST_LEN: usize = 20;
/// Peak-hold decay of qdelay_trend_mem, `max(0.99 × qdelay_trend_mem, qdelay_trend)`
/// (RFC 8298 §4.1.2, `update_variables`).
pub const QDELAY_TREND_MEM_DECAY: f64 = 0.99;
/// In fast increase, cwnd grows only if `bytes_in_flight × 1.5 + bytes_newly_acked > cwnd`
/// (RFC 8298 §4.1.2.2, `update_cwnd`).
pub const FAST_INCREASE_IN_FLIGHT_FACTOR: f64 = 1.5;
/// Outside fast increase, no increase if `bytes_in_flight × 1.25 + bytes_newly_acked ≤ cwnd`
/// (RFC 8298 §4.1.2.2, `update_cwnd`).
pub const UNDERUSE_IN_FLIGHT_FACTOR: f64 = 1.25;
/// max_bytes_in_flight is the maximum over the last 5 s (RFC 8298 §4.1.2.2, prose after
/// `update_cwnd`).
pub const MAX_BYTES_IN_FLIGHT_WINDOW: Duration = Duration::from_secs(5);
/// BASE_HISTORY of LEDBAT: the base delay is the minimum of this many per-interval minima
/// (RFC 6817 §2.4.2, "SHOULD be 10", referenced by RFC 8298 §4.1.2).
pub const BASE_HISTORY: usize = 10;
/// LEDBAT's base-delay interval: one minimum per minute (RFC 6817 §2.4.2 `update_base_delay`).
pub const BASE_DELAY_INTERVAL: Duration = Duration::from_secs(60);
/// s_rtt is "computed with a similar method to RFC 6298": SRTT ← (1 − α)·SRTT + α·R',
/// α = 1/8 (RFC 6298 §2.3, referenced by RFC 8298 §4.1.1.2).
pub const S_RTT_ALPHA: f64 = 1.0 / 8.0;
/// qdelay_norm variance window, `VARIANCE(qdelay_norm_history(200))` (RFC 8298 §4.1.2.3).
pub const QDELAY_NORM_VAR_LEN: usize = 200;
/// qdelay_norm average window, `AVERAGE(qdelay_norm_history(50))` (RFC 8298 §4.1.2.3).
pub const QDELAY_NORM_AVG_LEN: usize = 50;
/// loss_event_rate above which competing loss-based flows are assumed (RFC 8298 §4.1.2.3).
pub const LOSS_EVENT_RATE_TH: f64 = 0.002;
/// qdelay_target = 1.5 × new_target_t when losses are seen (RFC 8298 §4.1.2.3).
pub const QDELAY_TARGET_LOSS_SCALE: f64 = 1.5;
/// qdelay_norm variance below which the target may follow the measured delay (RFC 8298 §4.1.2.3).
pub const QDELAY_NORM_VAR_TH: f64 = 0.2;
/// Quick target decrease, `max(qdelay_target × 0.5, new_target_t)` (RFC 8298 §4.1.2.3).
pub const QDELAY_TARGET_FAST_DECREASE: f64 = 0.5;
/// Slow target decrease, `qdelay_target × 0.9` (RFC 8298 §4.1.2.3).
pub const QDELAY_TARGET_SLOW_DECREASE: f64 = 0.9;
/// rate_transmit and rate_ack "are updated every 200ms" (RFC 8298 §4.1.3).
pub const RATE_MEASUREMENT_INTERVAL: Duration = Duration::from_millis(200);
/// rate_media_median is the median of rate_media "computed over more than 10s"
/// (RFC 8298 §4.1.1.2).
pub const RATE_MEDIA_MEDIAN_WINDOW: Duration = Duration::from_secs(10);
/// `ramp_up_speed_t = min(RAMP_UP_SPEED, target_bitrate / 2.0)` (RFC 8298 §4.1.3).
pub const RAMP_UP_SPEED_TARGET_FRACTION: f64 = 0.5;
/// `scale_t = max(0.2, min(1.0, (scale_t × 4)^2))` (RFC 8298 §4.1.3): the gain 4 ...
pub const LAST_MAX_SCALE_GAIN: f64 = 4.0;
/// ... and the floor 0.2, so the rate can always rise slowly (RFC 8298 §4.1.3).
pub const LAST_MAX_SCALE_MIN: f64 = 0.2;

// ---------------------------------------------------------------------------------------------
// 3. Values the RFC leaves open (rtcbench decisions)
// ---------------------------------------------------------------------------------------------

/// Pacing headroom: pace at `PACE_HEADROOM × cwnd / s_rtt`. RFC 8298 §4.1.2.6 has no headroom
/// (1.0); the SCReAM v1 reference code (`kPacketPacingHeadRoom` in EricssonResearch/scream
/// `ScreamTx.h`, v1 era) uses 1.25, so that the pacer smooths bursts without becoming a second
/// bottleneck at exactly the window's rate.
pub const PACE_HEADROOM: f64 = 1.25;
/// Initial reordering window (§4.1.2.4 gives no value). 10 ms is the reference code's fixed
/// reordering margin (`kReordertime`). The window then widens to every reordering delay
/// observed, capped at s_rtt as RACK caps its window (RFC 8985 §6.2).
pub const REORDER_WINDOW_INIT: Duration = Duration::from_millis(10);
/// When no feedback acknowledges anything for `max(FEEDBACK_TIMEOUT_MIN, 2 × s_rtt)` while bytes
/// are in flight, everything in flight is declared lost. Without it a window-limited sender
/// deadlocks after an outage (RFC 8298 §10 only says SCReAM keeps a minimum send rate). 0.5 s
/// is the reference code's deadlock guard.
pub const FEEDBACK_TIMEOUT_MIN: Duration = Duration::from_millis(500);
/// loss_event_rate, "the estimated fraction of RTTs with lost packets detected"
/// (RFC 8298 §4.1.1.2), is an EWMA over s_rtt periods with this gain, as in the reference code
/// (`lossEventRate = 0.99 × lossEventRate + 0.01`).
pub const LOSS_EVENT_RATE_GAIN: f64 = 0.01;
/// The competing-flow compensation samples qdelay_norm on this grid. The RFC calls
/// `adjust_qdelay_target` on every acknowledgement, which ties the history span (200 samples)
/// and the ×0.9 decay to the feedback rate; the reference code samples it with the
/// 50 ms qdelay_fraction grid, and so do we.
pub const QDELAY_NORM_SAMPLE_INTERVAL: Duration = Duration::from_millis(50);

/// All parameters of a [`super::Scream`] controller. [`Default`] is RFC 8298's RECOMMENDED
/// values plus the rtcbench decisions above; each field names its constant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScreamConfig {
    /// [`QDELAY_TARGET_LO`]
    pub qdelay_target_lo: Duration,
    /// [`QDELAY_TARGET_HI`]
    pub qdelay_target_hi: Duration,
    /// [`QDELAY_WEIGHT`]
    pub qdelay_weight: f64,
    /// [`QDELAY_TREND_TH`]
    pub qdelay_trend_th: f64,
    /// [`MIN_CWND`]
    pub min_cwnd: DataSize,
    /// [`MAX_BYTES_IN_FLIGHT_HEAD_ROOM`]
    pub max_bytes_in_flight_head_room: f64,
    /// [`GAIN`]
    pub gain: f64,
    /// [`BETA_LOSS`]
    pub beta_loss: f64,
    /// [`BETA_ECN`]
    pub beta_ecn: f64,
    /// [`BETA_R`]
    pub beta_r: f64,
    /// [`MSS`]
    pub mss: DataSize,
    /// [`RATE_ADJUST_INTERVAL`]
    pub rate_adjust_interval: Duration,
    /// [`RAMP_UP_SPEED_PER_S`]
    pub ramp_up_speed_per_s: Bitrate,
    /// [`PRE_CONGESTION_GUARD`]
    pub pre_congestion_guard: f64,
    /// [`TX_QUEUE_SIZE_FACTOR_PER_S`]
    pub tx_queue_size_factor_per_s: f64,
    /// [`RTP_QDELAY_TH`]
    pub rtp_qdelay_th: Duration,
    /// [`TARGET_RATE_SCALE_RTP_QDELAY`]
    pub target_rate_scale_rtp_qdelay: f64,
    /// [`QDELAY_TREND_LO`]
    pub qdelay_trend_lo: f64,
    /// [`T_RESUME_FAST_INCREASE`]
    pub t_resume_fast_increase: Duration,
    /// [`RATE_PACE_MIN`]
    pub rate_pace_min: Bitrate,

    /// [`QDELAY_FRACTION_SAMPLE_INTERVAL`]
    pub qdelay_fraction_sample_interval: Duration,
    /// [`QDELAY_FRACTION_HIST_LEN`]
    pub qdelay_fraction_hist_len: usize,
    /// [`QDELAY_TREND_MEM_DECAY`]
    pub qdelay_trend_mem_decay: f64,
    /// [`FAST_INCREASE_IN_FLIGHT_FACTOR`]
    pub fast_increase_in_flight_factor: f64,
    /// [`UNDERUSE_IN_FLIGHT_FACTOR`]
    pub underuse_in_flight_factor: f64,
    /// [`MAX_BYTES_IN_FLIGHT_WINDOW`]
    pub max_bytes_in_flight_window: Duration,
    /// [`BASE_HISTORY`]
    pub base_history: usize,
    /// [`BASE_DELAY_INTERVAL`]
    pub base_delay_interval: Duration,
    /// [`S_RTT_ALPHA`]
    pub s_rtt_alpha: f64,
    /// Whether the competing-flow compensation of §4.1.2.3 runs. The RFC allows turning it off
    /// where no competing flows are expected but warns that doing so over the Internet can
    /// starve SCReAM; off by default (see `Default`).
    pub competing_flows_compensation: bool,
    /// [`QDELAY_NORM_VAR_LEN`]
    pub qdelay_norm_var_len: usize,
    /// [`QDELAY_NORM_AVG_LEN`]
    pub qdelay_norm_avg_len: usize,
    /// [`LOSS_EVENT_RATE_TH`]
    pub loss_event_rate_th: f64,
    /// [`QDELAY_TARGET_LOSS_SCALE`]
    pub qdelay_target_loss_scale: f64,
    /// [`QDELAY_NORM_VAR_TH`]
    pub qdelay_norm_var_th: f64,
    /// [`QDELAY_TARGET_FAST_DECREASE`]
    pub qdelay_target_fast_decrease: f64,
    /// [`QDELAY_TARGET_SLOW_DECREASE`]
    pub qdelay_target_slow_decrease: f64,
    /// [`RATE_MEASUREMENT_INTERVAL`]
    pub rate_measurement_interval: Duration,
    /// [`RATE_MEDIA_MEDIAN_WINDOW`]
    pub rate_media_median_window: Duration,
    /// [`RAMP_UP_SPEED_TARGET_FRACTION`]
    pub ramp_up_speed_target_fraction: f64,
    /// [`LAST_MAX_SCALE_GAIN`]
    pub last_max_scale_gain: f64,
    /// [`LAST_MAX_SCALE_MIN`]
    pub last_max_scale_min: f64,

    /// [`PACE_HEADROOM`] (1.0 is RFC 8298 to the letter)
    pub pace_headroom: f64,
    /// [`REORDER_WINDOW_INIT`]
    pub reorder_window_init: Duration,
    /// [`FEEDBACK_TIMEOUT_MIN`]
    pub feedback_timeout_min: Duration,
    /// [`LOSS_EVENT_RATE_GAIN`]
    pub loss_event_rate_gain: f64,
    /// [`QDELAY_NORM_SAMPLE_INTERVAL`]
    pub qdelay_norm_sample_interval: Duration,
    /// How the media rate controller reads `delta_rate_t` outside fast increase (§4.1.3).
    ///
    /// The pseudo code computes `delta_rate_t = current_rate_t·(1 − PRE_CONGESTION_GUARD·
    /// qdelay_trend) − TX_QUEUE_SIZE_FACTOR·rtp_queue_size` and adds it to target_bitrate. Read
    /// literally (`false`), delta_rate_t is a whole rate, so it is always capped at
    /// `ramp_up_speed_t·RATE_ADJUST_INTERVAL` and the target climbs 40 kbit/s every 200 ms until
    /// the RTP queue rule pulls it back; the guards never act. The prose ("the bitrate increase
    /// is given by the current bitrate and is also controlled by the estimated RTP queue and the
    /// qdelay trend") and the reference code (`increment -= targetBitrate` in ScreamTx.cpp)
    /// subtract target_bitrate, so the target moves towards what the path carries (`true`,
    /// the default).
    pub delta_rate_relative_to_target: bool,
}

impl Default for ScreamConfig {
    fn default() -> Self {
        Self {
            qdelay_target_lo: QDELAY_TARGET_LO,
            qdelay_target_hi: QDELAY_TARGET_HI,
            qdelay_weight: QDELAY_WEIGHT,
            qdelay_trend_th: QDELAY_TREND_TH,
            min_cwnd: MIN_CWND,
            max_bytes_in_flight_head_room: MAX_BYTES_IN_FLIGHT_HEAD_ROOM,
            gain: GAIN,
            beta_loss: BETA_LOSS,
            beta_ecn: BETA_ECN,
            beta_r: BETA_R,
            mss: MSS,
            rate_adjust_interval: RATE_ADJUST_INTERVAL,
            ramp_up_speed_per_s: RAMP_UP_SPEED_PER_S,
            pre_congestion_guard: PRE_CONGESTION_GUARD,
            tx_queue_size_factor_per_s: TX_QUEUE_SIZE_FACTOR_PER_S,
            rtp_qdelay_th: RTP_QDELAY_TH,
            target_rate_scale_rtp_qdelay: TARGET_RATE_SCALE_RTP_QDELAY,
            qdelay_trend_lo: QDELAY_TREND_LO,
            t_resume_fast_increase: T_RESUME_FAST_INCREASE,
            rate_pace_min: RATE_PACE_MIN,
            qdelay_fraction_sample_interval: QDELAY_FRACTION_SAMPLE_INTERVAL,
            qdelay_fraction_hist_len: QDELAY_FRACTION_HIST_LEN,
            qdelay_trend_mem_decay: QDELAY_TREND_MEM_DECAY,
            fast_increase_in_flight_factor: FAST_INCREASE_IN_FLIGHT_FACTOR,
            underuse_in_flight_factor: UNDERUSE_IN_FLIGHT_FACTOR,
            max_bytes_in_flight_window: MAX_BYTES_IN_FLIGHT_WINDOW,
            base_history: BASE_HISTORY,
            base_delay_interval: BASE_DELAY_INTERVAL,
            s_rtt_alpha: S_RTT_ALPHA,
            // Off, as in Ericsson's reference implementation: on, a lone SCReAM flow over
            // RFC 8867 §5.1 took its own standing queue for a competitor and raised qdelay_target
            // from 100 to 400 ms (docs/controllers/scream.md). Scenarios with competing TCP
            // should turn it on.
            competing_flows_compensation: false,
            qdelay_norm_var_len: QDELAY_NORM_VAR_LEN,
            qdelay_norm_avg_len: QDELAY_NORM_AVG_LEN,
            loss_event_rate_th: LOSS_EVENT_RATE_TH,
            qdelay_target_loss_scale: QDELAY_TARGET_LOSS_SCALE,
            qdelay_norm_var_th: QDELAY_NORM_VAR_TH,
            qdelay_target_fast_decrease: QDELAY_TARGET_FAST_DECREASE,
            qdelay_target_slow_decrease: QDELAY_TARGET_SLOW_DECREASE,
            rate_measurement_interval: RATE_MEASUREMENT_INTERVAL,
            rate_media_median_window: RATE_MEDIA_MEDIAN_WINDOW,
            ramp_up_speed_target_fraction: RAMP_UP_SPEED_TARGET_FRACTION,
            last_max_scale_gain: LAST_MAX_SCALE_GAIN,
            last_max_scale_min: LAST_MAX_SCALE_MIN,
            pace_headroom: PACE_HEADROOM,
            reorder_window_init: REORDER_WINDOW_INIT,
            feedback_timeout_min: FEEDBACK_TIMEOUT_MIN,
            loss_event_rate_gain: LOSS_EVENT_RATE_GAIN,
            qdelay_norm_sample_interval: QDELAY_NORM_SAMPLE_INTERVAL,
            delta_rate_relative_to_target: true,
        }
    }
}

impl ScreamConfig {
    /// RFC 8298's pseudo code to the letter where rtcbench reads it otherwise: no pacing
    /// headroom, and `delta_rate_t` added to the target as printed.
    pub fn rfc8298_literal() -> Self {
        Self { pace_headroom: 1.0, delta_rate_relative_to_target: false, ..Self::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The RECOMMENDED values of RFC 8298 §4.1.1.1, as printed in the RFC.
    #[test]
    fn defaults_are_rfc8298_section_4_1_1_1() {
        let c = ScreamConfig::default();
        assert_eq!(c.qdelay_target_lo.as_secs_f64(), 0.1);
        assert_eq!(c.qdelay_target_hi.as_secs_f64(), 0.4);
        assert_eq!(c.qdelay_weight, 0.1);
        assert_eq!(c.qdelay_trend_th, 0.2);
        assert_eq!(c.min_cwnd.as_bytes(), 3000);
        assert_eq!(c.max_bytes_in_flight_head_room, 1.1);
        assert_eq!(c.gain, 1.0);
        assert_eq!(c.beta_loss, 0.8);
        assert_eq!(c.beta_ecn, 0.9);
        assert_eq!(c.beta_r, 0.9);
        assert_eq!(c.mss.as_bytes(), 1000);
        assert_eq!(c.rate_adjust_interval.as_secs_f64(), 0.2);
        assert_eq!(c.ramp_up_speed_per_s.as_bps(), 200_000);
        assert_eq!(c.rtp_qdelay_th.as_secs_f64(), 0.02);
        assert_eq!(c.target_rate_scale_rtp_qdelay, 0.95);
        assert_eq!(c.qdelay_trend_lo, 0.2);
        assert_eq!(c.t_resume_fast_increase.as_secs_f64(), 5.0);
        assert_eq!(c.rate_pace_min.as_bps(), 50_000);
        assert_eq!(ScreamConfig::rfc8298_literal().pace_headroom, 1.0);
        assert!(!ScreamConfig::rfc8298_literal().delta_rate_relative_to_target);
    }
}
