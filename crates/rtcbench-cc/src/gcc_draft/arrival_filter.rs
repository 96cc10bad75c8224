//! The arrival-time filter: a scalar Kalman filter estimating `m(i)`, the mean of the
//! inter-group delay variation (draft-ietf-rmcat-gcc-02 §5.3).
//!
//! All quantities are in milliseconds (`m`, `d`, `z`) or square milliseconds (`q`, `e`,
//! `var_v_hat`), the units in which GCC-02 states its constants.
//!
//! # The noise-variance exponent
//!
//! GCC-02 writes `alpha = (1-chi)^(30/(1000 * f_max))` with `f_max = max 1/(T(j) - T(j-1))` over
//! the last K groups, without a unit for `f_max`. Read with `f_max` in 1/ms, the exponent is
//! `30 * min ΔT[ms] / 1000`, i.e. `30 Hz / f_max[Hz]`: at 30 groups per second the exponent is 1
//! and each update keeps `1 - chi` of the old variance, and faster group rates make each step
//! proportionally smaller, which is the "modified for variable sampling rate" of the text. With
//! `f_max` in Hz the exponent would be 1000 times smaller and the variance would effectively
//! never move. libwebrtc's receive-side `OveruseEstimator` uses the same reading
//! (`(1-alpha)^(min_frame_period_ms * 30/1000)`); pion's uses a constant that makes alpha ≈ 1.
//!
//! GCC-02 does not give K or `var_v_hat(0)`; we use libwebrtc's 60 deltas and 50 ms²
//! (`OveruseEstimator`), see `docs/controllers/gcc-draft.md`.
//!
//! The outlier guard ("if z(i) > 3*sqrt(var_v_hat) the filter is updated with 3*sqrt(var_v_hat)")
//! acts on `|z|` (only `z²` enters the variance update) and only on the variance update, as the
//! text says ("an additional outlier filter around the updates of var_v_hat"); `m_hat` uses `z`.

use std::collections::VecDeque;

use rtcbench_units::Duration;

/// q(i), state noise variance, §5.3 and Table 1 (ms²).
pub const Q_MS2: f64 = 1e-3;
/// e(0), initial system error variance, §5.3 and Table 1 (ms²).
pub const E_0_MS2: f64 = 0.1;
/// chi, noise-variance filter coefficient, §5.3 and Table 1: "typically in [0.1, 0.001]".
pub const CHI: f64 = 0.01;
/// Floor of `var_v_hat`, §5.3 (`max(..., 1)`, ms²).
pub const VAR_V_MIN_MS2: f64 = 1.0;

/// Parameters of the arrival-time filter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ArrivalFilterParams {
    /// q (ms²), §5.3.
    pub q_ms2: f64,
    /// e(0) (ms²), §5.3.
    pub e_0_ms2: f64,
    /// chi, §5.3.
    pub chi: f64,
    /// var_v_hat(0) (ms²); GCC-02 is silent.
    pub var_v_0_ms2: f64,
    /// K, the number of recent groups over which f_max is taken; GCC-02 is silent.
    pub f_max_groups: usize,
    /// The outlier guard's multiple of sqrt(var_v_hat), §5.3: 3.
    pub outlier_sigmas: f64,
}

/// The scalar Kalman filter of §5.3.
#[derive(Clone, Debug)]
pub struct ArrivalFilter {
    params: ArrivalFilterParams,
    /// m_hat(i-1) (ms).
    m_hat_ms: f64,
    /// e(i-1) (ms²).
    e_ms2: f64,
    /// var_v_hat(i-1) (ms²).
    var_v_hat_ms2: f64,
    /// k(i) of the last update.
    k: f64,
    /// T(j) - T(j-1) of the last K groups, for f_max.
    inter_departures: VecDeque<Duration>,
}

impl ArrivalFilter {
    pub fn new(params: ArrivalFilterParams) -> Self {
        Self {
            params,
            m_hat_ms: 0.0,
            e_ms2: params.e_0_ms2,
            var_v_hat_ms2: params.var_v_0_ms2,
            k: 0.0,
            inter_departures: VecDeque::with_capacity(params.f_max_groups),
        }
    }

    /// Takes the delay variation `d(i)` of a group and its inter-departure time `T(i) - T(i-1)`;
    /// returns the new estimate `m_hat(i)` in ms.
    pub fn update(&mut self, d: Duration, inter_departure: Duration) -> f64 {
        let p = self.params;
        if inter_departure > Duration::ZERO {
            if self.inter_departures.len() == p.f_max_groups.max(1) {
                self.inter_departures.pop_front();
            }
            self.inter_departures.push_back(inter_departure);
        }
        let d_ms = d.as_millis_f64();
        // z(i) = d(i) - m_hat(i-1)
        let z = d_ms - self.m_hat_ms;
        // var_v_hat(i) = max(alpha * var_v_hat(i-1) + (1-alpha) * z(i)^2, 1), with the outlier
        // guard on z.
        let alpha = self.alpha();
        let z_limit = p.outlier_sigmas * self.var_v_hat_ms2.sqrt();
        let z_var = z.abs().min(z_limit);
        self.var_v_hat_ms2 = (alpha * self.var_v_hat_ms2 + (1.0 - alpha) * z_var * z_var).max(VAR_V_MIN_MS2);
        // k(i) = (e(i-1) + q) / (var_v_hat(i) + e(i-1) + q)
        let prior = self.e_ms2 + p.q_ms2;
        self.k = prior / (self.var_v_hat_ms2 + prior);
        // m_hat(i) = m_hat(i-1) + z(i) * k(i)
        self.m_hat_ms += z * self.k;
        // e(i) = (1 - k(i)) * (e(i-1) + q)
        self.e_ms2 = (1.0 - self.k) * prior;
        self.m_hat_ms
    }

    /// `alpha = (1-chi)^(30/(1000 * f_max))` with f_max in 1/ms (see the module docs): the
    /// exponent is `30 * min(T(j) - T(j-1))[ms] / 1000`. Before any inter-departure time is known
    /// the exponent is 1 (30 groups per second).
    fn alpha(&self) -> f64 {
        let exponent =
            self.inter_departures.iter().min().map_or(1.0, |min_dt| 30.0 * min_dt.as_millis_f64() / 1000.0);
        (1.0 - self.params.chi).powf(exponent)
    }

    /// m_hat(i) (ms).
    pub fn m_hat_ms(&self) -> f64 {
        self.m_hat_ms
    }

    /// k(i), the Kalman gain of the last update.
    pub fn gain(&self) -> f64 {
        self.k
    }

    /// e(i) (ms²).
    pub fn e_ms2(&self) -> f64 {
        self.e_ms2
    }

    /// var_v_hat(i) (ms²).
    pub fn var_v_hat_ms2(&self) -> f64 {
        self.var_v_hat_ms2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(var_v_0_ms2: f64) -> ArrivalFilterParams {
        ArrivalFilterParams {
            q_ms2: Q_MS2,
            e_0_ms2: E_0_MS2,
            chi: CHI,
            var_v_0_ms2,
            f_max_groups: 60,
            outlier_sigmas: 3.0,
        }
    }

    const GROUP: Duration = Duration::from_millis(5);

    #[test]
    fn gain_sequence_for_constant_input() {
        // d = 0 with m_hat = 0: z = 0, so var_v_hat = max(alpha * 1, 1) = 1 throughout and the
        // gain follows the Riccati recursion alone.
        let mut f = ArrivalFilter::new(params(1.0));
        f.update(Duration::ZERO, GROUP);
        // k(1) = (0.1 + 0.001) / (1 + 0.101) = 0.101 / 1.101
        assert!((f.gain() - 0.101 / 1.101).abs() < 1e-12);
        // e(1) = (1 - k(1)) * 0.101 = 0.101 / 1.101
        assert!((f.e_ms2() - 0.101 / 1.101).abs() < 1e-12);
        f.update(Duration::ZERO, GROUP);
        // k(2) = (e(1) + q) / (1 + e(1) + q)
        let p2 = 0.101 / 1.101 + 0.001;
        assert!((f.gain() - p2 / (1.0 + p2)).abs() < 1e-12);
        assert_eq!(f.var_v_hat_ms2(), 1.0);
        // The gain falls monotonically to the fixed point of e = (e+q)/(e+q+1), i.e.
        // e² + q e - q = 0: e = (-q + sqrt(q² + 4q)) / 2 = 0.0311267..., and k∞ = e∞.
        let mut last = f.gain();
        for _ in 0..2000 {
            f.update(Duration::ZERO, GROUP);
            assert!(f.gain() <= last);
            last = f.gain();
        }
        let e_inf = (-Q_MS2 + (Q_MS2 * Q_MS2 + 4.0 * Q_MS2).sqrt()) / 2.0;
        assert!((e_inf - 0.031_126_7).abs() < 1e-6);
        assert!((f.gain() - e_inf).abs() < 1e-9, "k = {}", f.gain());
        assert!((f.e_ms2() - e_inf).abs() < 1e-9);
        assert_eq!(f.m_hat_ms(), 0.0);
    }

    #[test]
    fn estimate_converges_to_a_constant_delay_variation() {
        let mut f = ArrivalFilter::new(params(50.0));
        // First step by hand: z = 2, alpha = 0.99^(30*5/1000) = 0.99^0.15; var = alpha*50 +
        // (1-alpha)*4; k = 0.101/(var + 0.101); m = 2k.
        let m = f.update(Duration::from_millis(2), GROUP);
        let alpha = 0.99f64.powf(0.15);
        let var = alpha * 50.0 + (1.0 - alpha) * 4.0;
        assert!((f.var_v_hat_ms2() - var).abs() < 1e-12);
        assert!((m - 2.0 * 0.101 / (var + 0.101)).abs() < 1e-12);
        for _ in 0..5000 {
            f.update(Duration::from_millis(2), GROUP);
        }
        assert!((f.m_hat_ms() - 2.0).abs() < 1e-3, "m = {}", f.m_hat_ms());
        // The noise variance decays to its floor once the residual vanishes.
        assert_eq!(f.var_v_hat_ms2(), 1.0);
    }

    #[test]
    fn exponent_is_one_at_thirty_groups_per_second() {
        // With all groups 1/30 s apart, alpha = 1 - chi exactly.
        let mut f = ArrivalFilter::new(params(10.0));
        let frame = Duration::from_micros(33_333);
        f.update(Duration::from_millis(2), frame);
        let alpha = 0.99f64.powf(30.0 * 33.333 / 1000.0);
        assert!((alpha - 0.99).abs() < 1e-6);
        assert!((f.var_v_hat_ms2() - (alpha * 10.0 + (1.0 - alpha) * 4.0)).abs() < 1e-12);
        // f_max is the highest rate in the window: one 5 ms group makes the exponent 0.15.
        f.update(Duration::ZERO, Duration::from_millis(5));
        let var_before = f.var_v_hat_ms2();
        let z = -f.m_hat_ms();
        f.update(Duration::ZERO, frame);
        let alpha_fast = 0.99f64.powf(0.15);
        let expected = (alpha_fast * var_before + (1.0 - alpha_fast) * z * z).max(1.0);
        assert!((f.var_v_hat_ms2() - expected).abs() < 1e-12);
    }

    #[test]
    fn outlier_guard_limits_the_variance_update_not_the_estimate() {
        let mut f = ArrivalFilter::new(params(4.0));
        // z = 100 ms against sqrt(var) = 2: the variance sees 3 * 2 = 6, not 100.
        let m = f.update(Duration::from_millis(100), Duration::from_micros(33_333));
        let alpha = 0.99f64.powf(30.0 * 33.333 / 1000.0);
        let var = alpha * 4.0 + (1.0 - alpha) * 36.0;
        assert!((f.var_v_hat_ms2() - var).abs() < 1e-12);
        // The estimate moves by k * z with the full z.
        assert!((m - 100.0 * 0.101 / (var + 0.101)).abs() < 1e-9);
        // Negative outliers are limited the same way.
        let mut g = ArrivalFilter::new(params(4.0));
        g.update(Duration::from_millis(-100), Duration::from_micros(33_333));
        assert!((g.var_v_hat_ms2() - var).abs() < 1e-12);
    }
}
