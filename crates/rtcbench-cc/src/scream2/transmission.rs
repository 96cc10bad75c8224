//! Sender transmission control of SCReAM v2 (draft-ietf-ccwg-rfc8298bis-screamv2-01 §4.3): the
//! send window (§4.3.1) and the packet pacing rate with relaxed pacing (§4.3.2). Pure functions
//! of the network and media state; t_pace is `scream`'s ([`crate::scream::network_cc::t_pace`]),
//! the same equation.

use rtcbench_units::{Bitrate, DataSize};

use super::config::Scream2Config;

/// ref_wnd_overhead = REF_WND_OVERHEAD_MIN + (MAX − MIN) × ref_wnd_delay_scale (§4.3.1): up to
/// 3 × ref_wnd may be in flight on an uncongested path, 1.5 × when the queue delay varies.
pub fn ref_wnd_overhead(cfg: &Scream2Config, ref_wnd_delay_scale: f64) -> f64 {
    cfg.ref_wnd_overhead_min + (cfg.ref_wnd_overhead_max - cfg.ref_wnd_overhead_min) * ref_wnd_delay_scale
}

/// ref_wnd × ref_wnd_overhead: the sender may send a data unit of size s while
/// `bytes_in_flight + s ≤` this (§4.3.1 as a window).
pub fn send_window_limit(ref_wnd: DataSize, ref_wnd_overhead: f64) -> DataSize {
    ref_wnd * ref_wnd_overhead
}

/// send_wnd = ref_wnd × ref_wnd_overhead − bytes_in_flight, zero when negative (§4.3.1).
pub fn send_window(ref_wnd: DataSize, ref_wnd_overhead: f64, bytes_in_flight: DataSize) -> DataSize {
    send_window_limit(ref_wnd, ref_wnd_overhead).saturating_sub(bytes_in_flight)
}

/// pace_bitrate of §4.3.2: `max(RATE_PACE_MIN, target) × PACKET_PACING_HEADROOM`, relaxed (up
/// to MAX_RELAXED_PACING_FACTOR more) as the target approaches TARGET_BITRATE_MAX.
pub fn pace_bitrate(cfg: &Scream2Config, target_bitrate: Bitrate, target_bitrate_max: Bitrate) -> Bitrate {
    let pace = target_bitrate.max(cfg.rate_pace_min).as_bps_f64() * cfg.packet_pacing_headroom;
    let max = target_bitrate_max.as_bps_f64();
    let nominal_rate_t = if max > 0.0 { target_bitrate.as_bps_f64() / max } else { 0.0 };
    let low = cfg.relaxed_pacing_limit_low;
    let pace_rate_scale_t = ((nominal_rate_t - low) / (1.0 - low)).min(1.0);
    let pace_rate_scale_t = (1.0 - pace_rate_scale_t).clamp(1.0 / cfg.max_relaxed_pacing_factor, 1.0);
    Bitrate::from_bps_f64(pace / pace_rate_scale_t)
}
