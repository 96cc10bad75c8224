//! Every constant of SCReAM v2 with its value and section, the congestion-signal [`Mode`] the
//! call's ECN codepoint selects, and [`Scream2Config`], the struct that carries them into the
//! controller.
//!
//! Values are draft-ietf-ccwg-rfc8298bis-screamv2-01's RECOMMENDED ones. Three groups:
//!
//! 1. the named constants of §4.2 - §4.4 and the optional functions of §4.5;
//! 2. numbers the draft takes from RFC 6817 (base delay) and RFC 6298 (s_rtt), or that appear
//!    only in its prose;
//! 3. values the draft leaves open, chosen by rtcbench; each says where it comes from
//!    (`docs/controllers/scream2.md` lists them as choices).

use rtcbench_units::{Bitrate, DataSize, Duration};

use crate::feedback::Ecn;

// ---------------------------------------------------------------------------------------------
// 1. draft-ietf-ccwg-rfc8298bis-screamv2-01, named constants
// ---------------------------------------------------------------------------------------------

/// QDELAY_TARGET_LO, target value for the minimum qdelay (§4.2.2).
pub const QDELAY_TARGET_LO: Duration = Duration::from_millis(60);
/// QDELAY_TARGET_HI, upper limit of qdelay_target under competing-flows compensation (§4.2.2).
pub const QDELAY_TARGET_HI: Duration = Duration::from_millis(400);
/// MIN_REF_WND, minimum reference window (§4.2.2).
pub const MIN_REF_WND: DataSize = DataSize::bytes(3000);
/// BYTES_IN_FLIGHT_HEAD_ROOM, ref_wnd may grow to MSS + this × max bytes in flight (§4.2.2).
pub const BYTES_IN_FLIGHT_HEAD_ROOM: f64 = 1.5;
/// BETA_LOSS, ref_wnd scale factor on a loss event (§4.2.2).
pub const BETA_LOSS: f64 = 0.7;
/// BETA_ECN, ref_wnd scale factor on a classic ECN-CE event (§4.2.2).
pub const BETA_ECN: f64 = 0.8;
/// MSS, maximum segment size = maximum data unit size (§4.2.2).
pub const MSS: DataSize = DataSize::bytes(1000);
/// POST_CONGESTION_DELAY_RTT(S), RTTs after a congestion event during which the multiplicative
/// increase is held back (§4.2.2; the pseudo code spells it POST_CONGESTION_DELAY_RTTS).
pub const POST_CONGESTION_DELAY_RTTS: f64 = 100.0;
/// MUL_INCREASE_FACTOR, fraction of ref_wnd (in MSS) the increase is scaled up by (§4.2.2).
pub const MUL_INCREASE_FACTOR: f64 = 0.02;
/// VIRTUAL_RTT, Prague-like RTT fairness reference (§4.2.2).
pub const VIRTUAL_RTT: Duration = Duration::from_millis(25);
/// L4S_AVG_G_UP, EWMA gain of l4s_alpha when the marked fraction is at or above it (§4.2.1.3).
pub const L4S_AVG_G_UP: f64 = 1.0 / 8.0;
/// L4S_AVG_G_DOWN, decay of l4s_alpha when the marked fraction is below it (§4.2.1.3).
pub const L4S_AVG_G_DOWN: f64 = 1.0 / 128.0;
/// l4s_alpha "is updated at least every 10ms": every min(this, s_rtt) (§4.2.1.3).
pub const L4S_ALPHA_UPDATE_INTERVAL: Duration = Duration::from_millis(10);
/// QDELAY_AVG_G, EWMA gain of qdelay_avg (§4.2.1.4).
pub const QDELAY_AVG_G: f64 = 1.0 / 4.0;
/// REDUCE_JITTER, the optional max-min queue-delay scaling of §4.2.1.4 (draft default false).
pub const REDUCE_JITTER: bool = false;
/// QDELAY_MIN_MAX_AVG_G, gain of qdelay_min_avg / qdelay_max_avg (§4.2.1.4).
pub const QDELAY_MIN_MAX_AVG_G: f64 = 1.0 / 16.0;
/// QDELAY_DEV_AVG_G, EWMA gain of qdelay_dev_avg (§4.2.1.4).
pub const QDELAY_DEV_AVG_G: f64 = 1.0 / 32.0;
/// QDELAY_DEV_THRESHOLD, qdelay_dev_avg at which ref_wnd_delay_scale reaches 0 (§4.2.1.4).
pub const QDELAY_DEV_THRESHOLD: Duration = Duration::from_millis(10);
/// REF_WND_OVERHEAD_MIN, lower limit of ref_wnd_overhead (§4.3.1).
pub const REF_WND_OVERHEAD_MIN: f64 = 1.5;
/// REF_WND_OVERHEAD_MAX, upper limit of ref_wnd_overhead (§4.3.1).
pub const REF_WND_OVERHEAD_MAX: f64 = 3.0;
/// RATE_PACE_MIN, minimum pacing rate (§4.3.2).
pub const RATE_PACE_MIN: Bitrate = Bitrate::bps(50_000);
/// PACKET_PACING_HEADROOM, pacing rate over the target bitrate (§4.3.2).
pub const PACKET_PACING_HEADROOM: f64 = 1.5;
/// MAX_RELAXED_PACING_FACTOR, largest extra pacing factor near TARGET_BITRATE_MAX (§4.3.2).
pub const MAX_RELAXED_PACING_FACTOR: f64 = 4.0;
/// RELAXED_PACING_LIMIT_LOW, fraction of TARGET_BITRATE_MAX where pacing starts to relax
/// (§4.3.2).
pub const RELAXED_PACING_LIMIT_LOW: f64 = 0.8;
/// PACKET_OVERHEAD, estimated packetisation overhead per data unit (§4.4).
pub const PACKET_OVERHEAD: DataSize = DataSize::bytes(20);
/// RATE_ADJUST_GAIN, integrator gain of rate_adjust_factor (§4.4).
pub const RATE_ADJUST_GAIN: f64 = 1.0 / 16.0;
/// FRAME_SIZE_DEV_ALPHA, EWMA gain of frame_size_dev (§4.4).
pub const FRAME_SIZE_DEV_ALPHA: f64 = 1.0 / 64.0;
/// frame_period's initial value, "an estimated frame period" (§4.4).
pub const FRAME_PERIOD_INIT: Duration = Duration::from_millis(20);

// ---------------------------------------------------------------------------------------------
// 2. Numbers in the draft's pseudo code and prose, and those it takes from RFC 6817 / RFC 6298
// ---------------------------------------------------------------------------------------------

/// `scl_t *= 8` before squaring: how close ref_wnd is to ref_wnd_i (§4.2.2.1).
pub const SCL_GAIN: f64 = 8.0;
/// `scl_t = max(0.1, min(1.0, scl_t))` (§4.2.2.1).
pub const SCL_MIN: f64 = 0.1;
/// `max(0.25, scl_t)` and `max(0.25, ref_wnd_delay_scale)` floors on the L4S backoff, and the
/// `max(0.25, scl_t)` floor on the increase (§4.2.2.1, §4.2.2.2).
pub const BACKOFF_SCALE_MIN: f64 = 0.25;
/// "Jitter is considered large if the qdelay is larger than qdelay_target/4" (§4.2.2.1).
pub const L4S_JITTER_QDELAY_FRACTION: f64 = 0.25;
/// The L4S backoff first limits ref_wnd to max_bytes_in_flight_prev when the last reaction is
/// more than this many max(VIRTUAL_RTT, s_rtt) ago (§4.2.2.1).
pub const LONG_UNCONGESTED_RTTS: f64 = 100.0;
/// `increment_t *= max(0.1, ref_wnd_delay_scale)` (§4.2.2.2).
pub const INCREASE_DELAY_SCALE_MIN: f64 = 0.1;
/// rate_adjust_factor is capped to [0, 0.5] (§4.4).
pub const RATE_ADJUST_FACTOR_MAX: f64 = 0.5;
/// frame_size_dev is capped to 0.2 (§4.4).
pub const FRAME_SIZE_DEV_MAX: f64 = 0.2;
/// The media queue may hold frame_period / 4 before rate_adjust_factor grows (§4.4).
pub const MEDIA_QDELAY_FRACTION: f64 = 0.25;
/// "An additional downscaling ...": target = ... / (1.2 + rate_adjust_factor + frame_size_dev)
/// (§4.4).
pub const TARGET_DOWNSCALE: f64 = 1.2;
/// Small-window rate scale-down `1 - min(0.2, max(0, ref_wnd_ratio - 0.1))`: the offset ...
pub const SMALL_WINDOW_OFFSET: f64 = 0.1;
/// ... and the cap (§4.4).
pub const SMALL_WINDOW_MAX: f64 = 0.2;
/// BASE_HISTORY of LEDBAT, qdelay "as outlined in RFC 6817" (§4.2.1.4; RFC 6817 §2.4.2).
pub const BASE_HISTORY: usize = 10;
/// LEDBAT's base-delay interval, one minimum per minute (RFC 6817 §2.4.2).
pub const BASE_DELAY_INTERVAL: Duration = Duration::from_secs(60);
/// s_rtt "computed with a similar method to that described in RFC 6298" (§4.2.1.4):
/// α = 1/8 (RFC 6298 §2.3).
pub const S_RTT_ALPHA: f64 = 1.0 / 8.0;

// ---------------------------------------------------------------------------------------------
// 3. Values the draft leaves open (rtcbench decisions)
// ---------------------------------------------------------------------------------------------

/// Initial reordering window of the RACK-like loss detection (§4.2.1.1 gives no value); the same
/// 10 ms as `scream` ([`crate::scream::config::REORDER_WINDOW_INIT`]), shared code.
pub const REORDER_WINDOW_INIT: Duration = crate::scream::config::REORDER_WINDOW_INIT;
/// Feedback silence after which everything in flight is declared lost, as `scream` does
/// ([`crate::scream::config::FEEDBACK_TIMEOUT_MIN`]). Without it a window-limited sender stops
/// for good after an outage; the draft (§8) only says a minimum send rate is kept.
pub const FEEDBACK_TIMEOUT_MIN: Duration = crate::scream::config::FEEDBACK_TIMEOUT_MIN;
/// EWMA gain of the frame_period estimate from the spacing of encoded frames (§4.4 asks for "an
/// estimated frame period" and does not say how).
pub const FRAME_PERIOD_G: f64 = 1.0 / 16.0;

/// Which congestion signals the controller reacts to, chosen by the ECN codepoint the call's
/// media carries (§4.2.1: the delay-based response is always on, draft -05's change).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Not-ECT: loss and queue delay (virtual L4S marking) only.
    #[default]
    Delay,
    /// ECT(0): CE scales ref_wnd by BETA_ECN (§4.2.1.2), IS_L4S = false.
    ClassicEcn,
    /// ECT(1): CE scales ref_wnd by 1 - l4s_alpha/2 (§4.2.1.3), IS_L4S = true.
    L4s,
}

impl Mode {
    /// The mode for media sent with `ecn` (RFC 9331: ECT(1) identifies L4S traffic).
    pub fn for_codepoint(ecn: Ecn) -> Self {
        match ecn {
            Ecn::Ect1 => Self::L4s,
            Ecn::Ect0 => Self::ClassicEcn,
            Ecn::NotEct | Ecn::Ce => Self::Delay,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Self::Delay => "delay",
            Self::ClassicEcn => "classic-ecn",
            Self::L4s => "l4s",
        }
    }
    /// IS_L4S of §4.2.2.
    pub fn is_l4s(self) -> bool {
        self == Self::L4s
    }
}

/// All parameters of a [`super::Scream2`] controller. [`Default`] is the draft's RECOMMENDED
/// values plus the rtcbench decisions above, in [`Mode::Delay`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scream2Config {
    pub mode: Mode,
    /// [`QDELAY_TARGET_LO`]
    pub qdelay_target_lo: Duration,
    /// [`QDELAY_TARGET_HI`]
    pub qdelay_target_hi: Duration,
    /// [`MIN_REF_WND`]
    pub min_ref_wnd: DataSize,
    /// [`BYTES_IN_FLIGHT_HEAD_ROOM`]
    pub bytes_in_flight_head_room: f64,
    /// [`BETA_LOSS`]
    pub beta_loss: f64,
    /// [`BETA_ECN`]
    pub beta_ecn: f64,
    /// [`MSS`]
    pub mss: DataSize,
    /// [`POST_CONGESTION_DELAY_RTTS`]
    pub post_congestion_delay_rtts: f64,
    /// [`MUL_INCREASE_FACTOR`]
    pub mul_increase_factor: f64,
    /// [`VIRTUAL_RTT`]
    pub virtual_rtt: Duration,
    /// [`L4S_AVG_G_UP`]
    pub l4s_avg_g_up: f64,
    /// [`L4S_AVG_G_DOWN`]
    pub l4s_avg_g_down: f64,
    /// [`QDELAY_AVG_G`]
    pub qdelay_avg_g: f64,
    /// [`REDUCE_JITTER`]
    pub reduce_jitter: bool,
    /// [`QDELAY_MIN_MAX_AVG_G`]
    pub qdelay_min_max_avg_g: f64,
    /// [`QDELAY_DEV_AVG_G`]
    pub qdelay_dev_avg_g: f64,
    /// [`QDELAY_DEV_THRESHOLD`]
    pub qdelay_dev_threshold: Duration,
    /// [`REF_WND_OVERHEAD_MIN`]
    pub ref_wnd_overhead_min: f64,
    /// [`REF_WND_OVERHEAD_MAX`]
    pub ref_wnd_overhead_max: f64,
    /// [`RATE_PACE_MIN`]
    pub rate_pace_min: Bitrate,
    /// [`PACKET_PACING_HEADROOM`]
    pub packet_pacing_headroom: f64,
    /// [`MAX_RELAXED_PACING_FACTOR`]
    pub max_relaxed_pacing_factor: f64,
    /// [`RELAXED_PACING_LIMIT_LOW`]
    pub relaxed_pacing_limit_low: f64,
    /// [`PACKET_OVERHEAD`]
    pub packet_overhead: DataSize,
    /// [`RATE_ADJUST_GAIN`]
    pub rate_adjust_gain: f64,
    /// [`FRAME_SIZE_DEV_ALPHA`]
    pub frame_size_dev_alpha: f64,
    /// Competing-flows compensation (§4.5.4), `scream`'s code with QDELAY_TARGET_LO = 60 ms. Off
    /// by default, as in `scream`: the draft's §7 doubts it is still needed and warns of false
    /// positives that raise the delay target on self-inflicted queues.
    pub competing_flows_compensation: bool,
}

impl Default for Scream2Config {
    fn default() -> Self {
        Self {
            mode: Mode::Delay,
            qdelay_target_lo: QDELAY_TARGET_LO,
            qdelay_target_hi: QDELAY_TARGET_HI,
            min_ref_wnd: MIN_REF_WND,
            bytes_in_flight_head_room: BYTES_IN_FLIGHT_HEAD_ROOM,
            beta_loss: BETA_LOSS,
            beta_ecn: BETA_ECN,
            mss: MSS,
            post_congestion_delay_rtts: POST_CONGESTION_DELAY_RTTS,
            mul_increase_factor: MUL_INCREASE_FACTOR,
            virtual_rtt: VIRTUAL_RTT,
            l4s_avg_g_up: L4S_AVG_G_UP,
            l4s_avg_g_down: L4S_AVG_G_DOWN,
            qdelay_avg_g: QDELAY_AVG_G,
            reduce_jitter: REDUCE_JITTER,
            qdelay_min_max_avg_g: QDELAY_MIN_MAX_AVG_G,
            qdelay_dev_avg_g: QDELAY_DEV_AVG_G,
            qdelay_dev_threshold: QDELAY_DEV_THRESHOLD,
            ref_wnd_overhead_min: REF_WND_OVERHEAD_MIN,
            ref_wnd_overhead_max: REF_WND_OVERHEAD_MAX,
            rate_pace_min: RATE_PACE_MIN,
            packet_pacing_headroom: PACKET_PACING_HEADROOM,
            max_relaxed_pacing_factor: MAX_RELAXED_PACING_FACTOR,
            relaxed_pacing_limit_low: RELAXED_PACING_LIMIT_LOW,
            packet_overhead: PACKET_OVERHEAD,
            rate_adjust_gain: RATE_ADJUST_GAIN,
            frame_size_dev_alpha: FRAME_SIZE_DEV_ALPHA,
            competing_flows_compensation: false,
        }
    }
}

impl Scream2Config {
    /// The defaults in the mode `ecn` selects.
    pub fn for_codepoint(ecn: Ecn) -> Self {
        Self { mode: Mode::for_codepoint(ecn), ..Self::default() }
    }

    /// `scream`'s configuration for the parts SCReAM v2 shares with it unchanged: the
    /// competing-flows compensation (§4.5.4 is RFC 8298 §4.1.2.3 with QDELAY_TARGET_LO = 60 ms).
    pub(crate) fn v1_shared(&self) -> crate::scream::ScreamConfig {
        crate::scream::ScreamConfig {
            qdelay_target_lo: self.qdelay_target_lo,
            qdelay_target_hi: self.qdelay_target_hi,
            competing_flows_compensation: self.competing_flows_compensation,
            mss: self.mss,
            ..crate::scream::ScreamConfig::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The RECOMMENDED values of draft-ietf-ccwg-rfc8298bis-screamv2-01, as printed.
    #[test]
    fn defaults_are_the_drafts() {
        let c = Scream2Config::default();
        assert_eq!(c.qdelay_target_lo.as_secs_f64(), 0.06);
        assert_eq!(c.qdelay_target_hi.as_secs_f64(), 0.4);
        assert_eq!(c.min_ref_wnd.as_bytes(), 3000);
        assert_eq!(c.bytes_in_flight_head_room, 1.5);
        assert_eq!((c.beta_loss, c.beta_ecn), (0.7, 0.8));
        assert_eq!(c.mss.as_bytes(), 1000);
        assert_eq!((c.post_congestion_delay_rtts, c.mul_increase_factor), (100.0, 0.02));
        assert_eq!(c.virtual_rtt.as_secs_f64(), 0.025);
        assert_eq!((c.l4s_avg_g_up, c.l4s_avg_g_down), (0.125, 1.0 / 128.0));
        assert_eq!((c.qdelay_avg_g, c.qdelay_min_max_avg_g, c.qdelay_dev_avg_g), (0.25, 0.0625, 1.0 / 32.0));
        assert_eq!(c.qdelay_dev_threshold.as_secs_f64(), 0.01);
        assert!(!c.reduce_jitter);
        assert_eq!((c.ref_wnd_overhead_min, c.ref_wnd_overhead_max), (1.5, 3.0));
        assert_eq!(c.rate_pace_min.as_bps(), 50_000);
        assert_eq!((c.packet_pacing_headroom, c.max_relaxed_pacing_factor), (1.5, 4.0));
        assert_eq!(c.relaxed_pacing_limit_low, 0.8);
        assert_eq!(c.packet_overhead.as_bytes(), 20);
        assert_eq!((c.rate_adjust_gain, c.frame_size_dev_alpha), (1.0 / 16.0, 1.0 / 64.0));
    }

    #[test]
    fn the_codepoint_selects_the_mode() {
        assert_eq!(Mode::for_codepoint(Ecn::Ect1), Mode::L4s);
        assert_eq!(Mode::for_codepoint(Ecn::Ect0), Mode::ClassicEcn);
        assert_eq!(Mode::for_codepoint(Ecn::NotEct), Mode::Delay);
        assert!(Scream2Config::for_codepoint(Ecn::Ect1).mode.is_l4s());
    }
}
