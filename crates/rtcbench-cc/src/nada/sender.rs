//! RFC 8698 §4.3: the sender-side update of the reference rate r_ref, by accelerated ramp-up
//! (eqs. (3), (4)) or gradual update (eqs. (5)-(7)), clipped to [RMIN, RMAX] (eqs. (8), (9)).
//!
//! Rates are `f64` bit/s inside the equations so that small gradual steps do not round away;
//! the controller exposes them as [`Bitrate`].

use rtcbench_units::{Bitrate, Duration};

use super::config::NadaConfig;
use super::receiver::RateMode;

/// gamma in RFC 8698 §4.3 eq. (3): the ramp-up ratio,
/// `min(GAMMA_MAX, QBOUND / (rtt + DELTA + DFILT))`, so that the self-inflicted queue stays
/// below QBOUND while the feedback loop (rtt + DELTA + DFILT) catches up.
pub fn gamma(rtt: Duration, cfg: &NadaConfig) -> f64 {
    let loop_delay = rtt.max(Duration::ZERO) + cfg.delta + cfg.dfilt;
    if loop_delay <= Duration::ZERO {
        return cfg.gamma_max;
    }
    (cfg.qbound / loop_delay).min(cfg.gamma_max)
}

/// RFC 8698 §4.3 eq. (4): `r_ref = max(r_ref, (1 + gamma) * r_recv)`, in bit/s.
pub fn accelerated_ramp_up(r_ref: f64, r_recv: f64, gamma: f64) -> f64 {
    r_ref.max((1.0 + gamma) * r_recv)
}

/// RFC 8698 §4.3 eqs. (5)-(7), the gradual update, in bit/s:
///
/// ```text
/// x_offset = x_curr - PRIO * XREF * RMAX / r_ref                          (5)
/// x_diff   = x_curr - x_prev                                              (6)
/// r_ref    = r_ref - KAPPA * (delta / TAU) * (x_offset / TAU) * r_ref
///                  - KAPPA * ETA * (x_diff / TAU) * r_ref                 (7)
/// ```
///
/// `delta` is the observed time since the previous update (not the constant DELTA). The result
/// is not clipped (see [`clip`]); it may be negative after a large jump of x_curr.
pub fn gradual_update(
    r_ref: f64,
    x_curr: Duration,
    x_prev: Duration,
    delta: Duration,
    rmax: f64,
    cfg: &NadaConfig,
) -> f64 {
    let tau = cfg.tau.as_secs_f64();
    // A floor of 1 bit/s keeps eq. (5) finite if RMIN is 0.
    let x_offset = x_curr.as_secs_f64() - cfg.prio * cfg.xref.as_secs_f64() * rmax / r_ref.max(1.0); // (5)
    let x_diff = (x_curr - x_prev).as_secs_f64(); // (6)
    r_ref - cfg.kappa * (delta.as_secs_f64() / tau) * (x_offset / tau) * r_ref // (7)
        - cfg.kappa * cfg.eta * (x_diff / tau) * r_ref
}

/// RFC 8698 §4.3 eqs. (8), (9): `r_ref = max(min(r_ref, RMAX), RMIN)`.
pub fn clip(r_ref: f64, rmin: f64, rmax: f64) -> f64 {
    r_ref.min(rmax).max(rmin)
}

/// The sender's state of RFC 8698 §4.3: r_ref and x_prev.
#[derive(Clone, Debug, PartialEq)]
pub struct ReferenceRate {
    /// r_ref in RFC 8698 §4.1 Figure 2, reference rate based on network congestion, bit/s.
    r_ref: f64,
    /// x_prev in RFC 8698 §4.1 Figure 2, previous value of the aggregate congestion signal.
    x_prev: Duration,
    /// RMIN, bit/s.
    rmin: f64,
    /// RMAX, bit/s.
    rmax: f64,
    /// gamma of the last accelerated ramp-up, eq. (3).
    gamma: Option<f64>,
}

impl ReferenceRate {
    /// RFC 8698 §4.3 initialisation, except that r_ref starts at `start` (clipped to
    /// [rmin, rmax]) rather than at RMIN; x_prev = 0.
    pub fn new(start: Bitrate, rmin: Bitrate, rmax: Bitrate) -> Self {
        let (rmin, rmax) = (rmin.as_bps_f64(), rmax.as_bps_f64());
        Self { r_ref: clip(start.as_bps_f64(), rmin, rmax), x_prev: Duration::ZERO, rmin, rmax, gamma: None }
    }

    /// One update on feedback (RFC 8698 §4.3): eqs. (3)-(4) or (5)-(7) by `rmode`, then
    /// eqs. (8)-(9), then x_prev = x_curr.
    pub fn update(
        &mut self,
        rmode: RateMode,
        x_curr: Duration,
        r_recv: Bitrate,
        rtt: Duration,
        delta: Duration,
        cfg: &NadaConfig,
    ) {
        let r = match rmode {
            RateMode::AcceleratedRampUp => {
                let g = gamma(rtt, cfg);
                self.gamma = Some(g);
                accelerated_ramp_up(self.r_ref, r_recv.as_bps_f64(), g)
            }
            RateMode::GradualUpdate => gradual_update(self.r_ref, x_curr, self.x_prev, delta, self.rmax, cfg),
        };
        if !r.is_nan() {
            self.r_ref = clip(r, self.rmin, self.rmax);
        }
        self.x_prev = x_curr;
    }

    /// r_ref.
    pub fn r_ref(&self) -> Bitrate {
        Bitrate::from_bps_f64(self.r_ref)
    }

    /// r_ref in bit/s, unrounded.
    pub fn r_ref_bps(&self) -> f64 {
        self.r_ref
    }

    /// x_prev.
    pub fn x_prev(&self) -> Duration {
        self.x_prev
    }

    /// gamma of the last accelerated ramp-up, eq. (3).
    pub fn gamma(&self) -> Option<f64> {
        self.gamma
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: i64) -> Duration {
        Duration::from_millis(v)
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6 * b.abs().max(1.0)
    }

    #[test]
    fn gamma_from_rtt_and_qbound() {
        let cfg = NadaConfig::default();
        // eq. (3): 50 / (50 + 100 + 120) = 0.185185...
        assert!(close(gamma(ms(50), &cfg), 50.0 / 270.0));
        // rtt 0: 50 / 220 = 0.2273.
        assert!(close(gamma(Duration::ZERO, &cfg), 50.0 / 220.0));
        // QBOUND 200 ms: 200 / 220 > GAMMA_MAX, capped at 0.5.
        let big = NadaConfig { qbound: ms(200), ..NadaConfig::default() };
        assert_eq!(gamma(ms(0), &big), 0.5);
    }

    #[test]
    fn accelerated_ramp_up_multiplies_the_receiving_rate() {
        let cfg = NadaConfig::default();
        let mut r = ReferenceRate::new(Bitrate::kbps(500), Bitrate::kbps(150), Bitrate::kbps(1500));
        // eq. (4): max(500k, (1 + 50/270) * 600k) = 711 111.1 bit/s.
        r.update(RateMode::AcceleratedRampUp, ms(3), Bitrate::kbps(600), ms(50), ms(100), &cfg);
        assert!(close(r.r_ref_bps(), 600_000.0 * (1.0 + 50.0 / 270.0)));
        assert_eq!(r.r_ref(), Bitrate::bps(711_111));
        assert_eq!(r.x_prev(), ms(3), "x_prev follows x_curr in every mode");
        // A low r_recv never lowers r_ref: max(711 111, 1.185 * 300k = 355 556).
        r.update(RateMode::AcceleratedRampUp, ms(3), Bitrate::kbps(300), ms(50), ms(100), &cfg);
        assert_eq!(r.r_ref(), Bitrate::bps(711_111));
    }

    #[test]
    fn gradual_update_follows_eqs_5_to_7() {
        let cfg = NadaConfig::default();
        let rmax = 1_500_000.0;
        // r_ref 1 Mbit/s: PRIO * XREF * RMAX / r_ref = 1 * 10 ms * 1.5 = 15 ms.
        // x_curr 25, x_prev 20, delta 100 ms, TAU 500 ms:
        // x_offset = 10 ms, x_diff = 5 ms;
        // r_ref = 1e6 - 0.5 * (100/500) * (10/500) * 1e6 - 0.5 * 2 * (5/500) * 1e6
        //       = 1e6 - 2000 - 10000 = 988 000.
        assert!(close(gradual_update(1e6, ms(25), ms(20), ms(100), rmax, &cfg), 988_000.0));
        // Below the reference: x_curr = x_prev = 5 ms, x_offset = -10 ms: + 2000.
        assert!(close(gradual_update(1e6, ms(5), ms(5), ms(100), rmax, &cfg), 1_002_000.0));
        // The integral term scales with the observed delta: 250 ms gives 2.5 x 2000.
        assert!(close(gradual_update(1e6, ms(5), ms(5), ms(250), rmax, &cfg), 1_005_000.0));
        // PRIO 2 doubles the reference (30 ms): x_curr = x_prev = 25, x_offset = -5 ms:
        // + 0.5 * 0.2 * (5/500) * 1e6 = + 1000.
        let prio2 = NadaConfig { prio: 2.0, ..NadaConfig::default() };
        assert!(close(gradual_update(1e6, ms(25), ms(25), ms(100), rmax, &prio2), 1_001_000.0));
        // Equilibrium: x_curr = x_prev = 15 ms leaves r_ref unchanged.
        assert!(close(gradual_update(1e6, ms(15), ms(15), ms(100), rmax, &cfg), 1e6));
    }

    #[test]
    fn gradual_update_with_other_kappa_eta_tau() {
        // KAPPA 1, ETA 1, TAU 200 ms, XREF 20 ms, RMAX 2 Mbit/s, r_ref 1 Mbit/s:
        // x_offset = 50 - 20 * 2 = 10 ms; x_diff = 50 - 30 = 20 ms; delta 100 ms;
        // r_ref = 1e6 - 1 * (100/200) * (10/200) * 1e6 - 1 * 1 * (20/200) * 1e6
        //       = 1e6 - 25 000 - 100 000 = 875 000.
        let cfg = NadaConfig { kappa: 1.0, eta: 1.0, tau: ms(200), xref: ms(20), ..NadaConfig::default() };
        assert!(close(gradual_update(1e6, ms(50), ms(30), ms(100), 2e6, &cfg), 875_000.0));
    }

    #[test]
    fn r_ref_is_clipped_to_rmin_rmax() {
        let cfg = NadaConfig::default();
        let (rmin, rmax) = (Bitrate::kbps(150), Bitrate::kbps(1500));
        // eq. (8): ramp-up to (1 + 0.227) * 1.4 Mbit/s = 1.718 Mbit/s, clipped to RMAX.
        let mut r = ReferenceRate::new(Bitrate::kbps(1000), rmin, rmax);
        r.update(RateMode::AcceleratedRampUp, ms(0), Bitrate::kbps(1400), ms(0), ms(100), &cfg);
        assert_eq!(r.r_ref(), rmax);
        // eq. (9): x_curr jumps to 1 s: r_ref * (1 - 0.5 * 2 * 1000/500 - ...) < 0, clipped to
        // RMIN.
        r.update(RateMode::GradualUpdate, ms(1000), Bitrate::ZERO, ms(0), ms(100), &cfg);
        assert_eq!(r.r_ref(), rmin);
        // The start rate is clipped too.
        assert_eq!(ReferenceRate::new(Bitrate::kbps(50), rmin, rmax).r_ref(), rmin);
        assert_eq!(ReferenceRate::new(Bitrate::mbps(5), rmin, rmax).r_ref(), rmax);
        assert_eq!(clip(2e6, 1.5e5, 1.5e6), 1.5e6);
        assert_eq!(clip(-3.0, 1.5e5, 1.5e6), 1.5e5);
    }
}
