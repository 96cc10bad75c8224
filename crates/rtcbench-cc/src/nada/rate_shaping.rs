//! RFC 8698 §5.2: the rate-shaping buffer between the encoder and the network (§5.2.1), and
//! the video target rate r_vin and sending rate r_send derived from r_ref and the buffer's
//! fill (eqs. (11)-(14), §5.2.2).
//!
//! The buffer is the sender's queue reported through `Controller::on_send_queue`. A full buffer
//! lowers the encoder's target and raises the sending rate, each by at most 5 % of r_ref, so
//! the buffer drains without the encoder or the network seeing a step.

use rtcbench_units::{Bitrate, DataSize};

use super::config::NadaConfig;

/// The 5 % of r_ref that bounds both adjustments, RFC 8698 §5.2.2 eqs. (11), (12).
pub const R_DIFF_MAX_RATIO: f64 = 0.05;

/// RFC 8698 §5.2.2 eqs. (11) and (12): `min(0.05 * r_ref, BETA * 8 * buffer_len * FPS)`, the
/// rate that would drain `beta` of the buffer per frame interval, bounded to 5 % of r_ref.
pub fn rate_adjustment(r_ref: Bitrate, beta: f64, buffer_len: DataSize, fps: f64) -> Bitrate {
    let by_buffer = beta * buffer_len.as_bits() as f64 * fps;
    Bitrate::from_bps_f64((R_DIFF_MAX_RATIO * r_ref.as_bps_f64()).min(by_buffer))
}

/// r_vin and r_send, RFC 8698 §4.1 Figure 2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputRates {
    /// r_vin: target rate for the video encoder.
    pub r_vin: Bitrate,
    /// r_send: sending rate (the pacing rate).
    pub r_send: Bitrate,
}

/// RFC 8698 §5.2.2:
///
/// ```text
/// r_diff_v = min(0.05 * r_ref, BETA_V * 8 * buffer_len * FPS)     (11)
/// r_diff_s = min(0.05 * r_ref, BETA_S * 8 * buffer_len * FPS)     (12)
/// r_vin    = max(RMIN, r_ref - r_diff_v)                          (13)
/// r_send   = min(RMAX, r_ref + r_diff_s)                          (14)
/// ```
pub fn output_rates(
    r_ref: Bitrate,
    buffer_len: DataSize,
    rmin: Bitrate,
    rmax: Bitrate,
    cfg: &NadaConfig,
) -> OutputRates {
    let r_diff_v = rate_adjustment(r_ref, cfg.beta_v, buffer_len, cfg.fps); // (11)
    let r_diff_s = rate_adjustment(r_ref, cfg.beta_s, buffer_len, cfg.fps); // (12)
    OutputRates {
        r_vin: r_ref.saturating_sub(r_diff_v).max(rmin), // (13)
        r_send: (r_ref + r_diff_s).min(rmax),            // (14)
    }
}

/// The rate-shaping buffer of RFC 8698 §5.2.1 as the controller sees it: its size buffer_len.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateShapingBuffer {
    /// buffer_len in RFC 8698 §4.1 Figure 2: bytes waiting in the rate-shaping buffer.
    pub buffer_len: DataSize,
}

impl RateShapingBuffer {
    /// The sender's queue now holds `bytes`.
    pub fn on_send_queue(&mut self, bytes: DataSize) {
        self.buffer_len = bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RMIN: Bitrate = Bitrate::kbps(150);
    const RMAX: Bitrate = Bitrate::kbps(1500);

    #[test]
    fn rfc_example_2000_bytes_give_48_kbps() {
        // §5.2.2: BETA 0.1 * 8 * 2000 B * 30 fps = 48 kbit/s, below 0.05 * 1 Mbit/s = 50 kbit/s.
        let cfg = NadaConfig::default();
        let r = output_rates(Bitrate::mbps(1), DataSize::bytes(2000), RMIN, RMAX, &cfg);
        assert_eq!(r, OutputRates { r_vin: Bitrate::kbps(952), r_send: Bitrate::kbps(1048) });
    }

    #[test]
    fn adjustment_is_bounded_by_5_percent_of_r_ref() {
        let cfg = NadaConfig::default();
        // 10 kB: 0.1 * 8 * 10 000 * 30 = 240 kbit/s > 50 kbit/s = 0.05 * 1 Mbit/s.
        let r = output_rates(Bitrate::mbps(1), DataSize::bytes(10_000), RMIN, RMAX, &cfg);
        assert_eq!(r, OutputRates { r_vin: Bitrate::kbps(950), r_send: Bitrate::kbps(1050) });
        // Empty buffer: both equal r_ref.
        let r = output_rates(Bitrate::mbps(1), DataSize::ZERO, RMIN, RMAX, &cfg);
        assert_eq!(r, OutputRates { r_vin: Bitrate::mbps(1), r_send: Bitrate::mbps(1) });
        // Different betas: BETA_V 0.05, BETA_S 0.2 with 1000 B: 12 and 48 kbit/s.
        let cfg = NadaConfig { beta_v: 0.05, beta_s: 0.2, ..NadaConfig::default() };
        let r = output_rates(Bitrate::mbps(1), DataSize::bytes(1000), RMIN, RMAX, &cfg);
        assert_eq!(r, OutputRates { r_vin: Bitrate::kbps(988), r_send: Bitrate::kbps(1048) });
    }

    #[test]
    fn r_vin_and_r_send_stay_within_rmin_rmax() {
        let cfg = NadaConfig::default();
        // eq. (13) at r_ref = RMIN: max(150k, 150k - 7.5k) = RMIN.
        let r = output_rates(RMIN, DataSize::bytes(2000), RMIN, RMAX, &cfg);
        assert_eq!(r, OutputRates { r_vin: RMIN, r_send: Bitrate::bps(157_500) });
        // eq. (14) at r_ref = RMAX: min(1.5M, 1.5M + 48k) = RMAX.
        let r = output_rates(RMAX, DataSize::bytes(2000), RMIN, RMAX, &cfg);
        assert_eq!(r, OutputRates { r_vin: Bitrate::kbps(1452), r_send: RMAX });
    }

    #[test]
    fn buffer_tracks_the_send_queue() {
        let mut b = RateShapingBuffer::default();
        b.on_send_queue(DataSize::bytes(3600));
        assert_eq!(b.buffer_len, DataSize::bytes(3600));
    }
}
