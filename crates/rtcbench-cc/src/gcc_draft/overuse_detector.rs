//! The over-use detector and its adaptive threshold (draft-ietf-rmcat-gcc-02 §5.4).
//!
//! Each group's estimate `m(i)` (from the arrival-time filter) is compared with the threshold
//! `del_var_th(i)`:
//!
//! * `m(i) > del_var_th(i)` held for at least `overuse_time_th`, and `m(i) >= m(i-1)`: over-use;
//! * `m(i) < -del_var_th(i)`: under-use;
//! * otherwise: normal.
//!
//! and the threshold then follows `|m(i)|` (eq. "del_var_th(i)" of §5.4):
//!
//! ```text
//! del_var_th(i) = del_var_th(i-1) + (t(i)-t(i-1)) * K(i) * (|m(i)| - del_var_th(i-1))
//! K(i) = K_d if |m(i)| < del_var_th(i-1), K_u otherwise
//! ```
//!
//! skipped when `|m(i)| - del_var_th(i-1) > 15 ms` and clamped to [6, 600] ms.
//!
//! Resolutions of what GCC-02 leaves open (see `docs/controllers/gcc-draft.md`):
//!
//! * The skip condition is written `|m(i)| - del_var_th(i) > 15`, which would be circular; we
//!   test it against `del_var_th(i-1)`, the value the update starts from.
//! * `m(i)` is compared with the threshold in force when it arrives, then the threshold is
//!   updated. Comparing after the update gives the same signal: the update moves the threshold
//!   toward `|m(i)|` by a fraction `K·Δt <= 1` of the gap, so it never crosses `m(i)`.
//! * That fraction stays <= 1 only for `Δt <= 1/K_u = 100 ms`; after a gap in the packet stream
//!   a literal step would overshoot. We cap `Δt` at 100 ms, libwebrtc's `kMaxTimeDeltaMs` (GCC-02
//!   is silent on gaps).
//! * "Over-use detected for at least overuse_time_th": measured on group arrival times, from the
//!   first group above the threshold; any group at or below it restarts the clock.
//! * When `m(i) > del_var_th(i)` but the over-use is not (yet) definitive, the signal is normal
//!   ("if neither over-use nor under-use is detected, the detector will be in the normal
//!   state").
//!
//! [`DetectorInput`] selects what is compared: `m(i)` itself (GCC-02) or libwebrtc's and pion's
//! `min(i, 60) * m(i)`.

use rtcbench_units::{Duration, Instant};

/// del_var_th(0), §5.4 and Table 1.
pub const DEL_VAR_TH_0: Duration = Duration::from_micros(12_500);
/// Lower clamp of del_var_th, §5.4.
pub const DEL_VAR_TH_MIN: Duration = Duration::from_millis(6);
/// Upper clamp of del_var_th, §5.4.
pub const DEL_VAR_TH_MAX: Duration = Duration::from_millis(600);
/// K_u, §5.4 and Table 1 (per ms).
pub const K_U_PER_MS: f64 = 0.01;
/// K_d, §5.4 and Table 1 (per ms).
pub const K_D_PER_MS: f64 = 0.000_18;
/// No threshold update when |m(i)| exceeds it by more than this, §5.4.
pub const DEL_VAR_TH_SKIP_MARGIN: Duration = Duration::from_millis(15);
/// Longest Δt one threshold update integrates over (libwebrtc; GCC-02 is silent).
pub const DEL_VAR_TH_MAX_TIME_DELTA: Duration = Duration::from_millis(100);
/// overuse_time_th, §5.4 and Table 1.
pub const OVERUSE_TIME_TH: Duration = Duration::from_millis(10);

/// The detector's output, the signal `s` driving the rate controller (§5.4, §5.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Signal {
    Overuse,
    Normal,
    Underuse,
}

impl Signal {
    /// The name used in metrics.
    pub fn name(self) -> &'static str {
        match self {
            Self::Overuse => "overuse",
            Self::Normal => "normal",
            Self::Underuse => "underuse",
        }
    }
}

/// What the detector compares with `del_var_th`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DetectorInput {
    /// `m(i)` as GCC-02 §5.4 writes it. Note: a steady over-use by a fraction `f` gives
    /// `m ≈ f · (T(i) - T(i-1))`, 1 ms for 20 % over-use and 5 ms groups, far below the 6 ms
    /// lower clamp of the threshold; see `docs/controllers/gcc-draft.md`.
    #[default]
    Literal,
    /// `min(i, max_groups) · m(i)`, where i counts the groups seen: libwebrtc's receive-side
    /// `OveruseDetector` (`T = min(num_of_deltas, 60) * offset`) and pion's adaptive threshold.
    /// Not in GCC-02.
    GroupCountScaled { max_groups: u32 },
}

/// Parameters of the adaptive threshold (§5.4).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ThresholdParams {
    /// del_var_th(0).
    pub del_var_th_0: Duration,
    /// Clamp of del_var_th.
    pub del_var_th_min: Duration,
    pub del_var_th_max: Duration,
    /// K_u (per ms).
    pub k_u_per_ms: f64,
    /// K_d (per ms).
    pub k_d_per_ms: f64,
    /// Skip margin (15 ms).
    pub skip_margin: Duration,
    /// Cap on t(i) - t(i-1) in one update.
    pub max_time_delta: Duration,
}

impl Default for ThresholdParams {
    fn default() -> Self {
        Self {
            del_var_th_0: DEL_VAR_TH_0,
            del_var_th_min: DEL_VAR_TH_MIN,
            del_var_th_max: DEL_VAR_TH_MAX,
            k_u_per_ms: K_U_PER_MS,
            k_d_per_ms: K_D_PER_MS,
            skip_margin: DEL_VAR_TH_SKIP_MARGIN,
            max_time_delta: DEL_VAR_TH_MAX_TIME_DELTA,
        }
    }
}

/// The adaptive threshold `del_var_th` of §5.4, in ms.
#[derive(Clone, Debug)]
pub struct AdaptiveThreshold {
    params: ThresholdParams,
    /// del_var_th(i) (ms).
    del_var_th_ms: f64,
}

impl AdaptiveThreshold {
    pub fn new(params: ThresholdParams) -> Self {
        Self { params, del_var_th_ms: params.del_var_th_0.as_millis_f64() }
    }

    /// del_var_th (ms).
    pub fn del_var_th_ms(&self) -> f64 {
        self.del_var_th_ms
    }

    /// One step of the threshold equation of §5.4 for `m(i)` (ms), `dt = t(i) - t(i-1)`.
    pub fn update(&mut self, m_ms: f64, dt: Duration) {
        let p = self.params;
        let abs_m = m_ms.abs();
        let th = self.del_var_th_ms;
        // "del_var_th(i) SHOULD NOT be updated if |m(i)| - del_var_th(i) > 15"
        if abs_m - th > p.skip_margin.as_millis_f64() {
            return;
        }
        let k = if abs_m < th { p.k_d_per_ms } else { p.k_u_per_ms };
        let dt_ms = dt.min(p.max_time_delta).max(Duration::ZERO).as_millis_f64();
        let th = th + dt_ms * k * (abs_m - th);
        self.del_var_th_ms = th.clamp(p.del_var_th_min.as_millis_f64(), p.del_var_th_max.as_millis_f64());
    }
}

/// The over-use detector of §5.4.
#[derive(Clone, Debug)]
pub struct OveruseDetector {
    threshold: AdaptiveThreshold,
    overuse_time_th: Duration,
    input: DetectorInput,
    /// Groups seen (for [`DetectorInput::GroupCountScaled`]).
    groups: u32,
    /// m(i-1) as compared (ms).
    prev_m_ms: f64,
    /// t(i-1).
    prev_arrival: Option<Instant>,
    /// Arrival of the first group of the current run above the threshold.
    over_since: Option<Instant>,
    signal: Signal,
    /// The value last compared with the threshold (ms).
    compared_m_ms: f64,
}

impl OveruseDetector {
    pub fn new(threshold: ThresholdParams, overuse_time_th: Duration, input: DetectorInput) -> Self {
        Self {
            threshold: AdaptiveThreshold::new(threshold),
            overuse_time_th,
            input,
            groups: 0,
            prev_m_ms: 0.0,
            prev_arrival: None,
            over_since: None,
            signal: Signal::Normal,
            compared_m_ms: 0.0,
        }
    }

    /// Takes the estimate `m(i)` (ms) of the group that arrived at `t(i) = arrival`; returns the
    /// signal.
    pub fn update(&mut self, m_hat_ms: f64, arrival: Instant) -> Signal {
        self.groups = self.groups.saturating_add(1);
        let m = match self.input {
            DetectorInput::Literal => m_hat_ms,
            DetectorInput::GroupCountScaled { max_groups } => {
                f64::from(self.groups.min(max_groups)) * m_hat_ms
            }
        };
        let th = self.threshold.del_var_th_ms();
        self.signal = if m > th {
            let since = *self.over_since.get_or_insert(arrival);
            if arrival - since >= self.overuse_time_th && m >= self.prev_m_ms {
                Signal::Overuse
            } else {
                Signal::Normal
            }
        } else {
            self.over_since = None;
            if m < -th {
                Signal::Underuse
            } else {
                Signal::Normal
            }
        };
        let dt = self.prev_arrival.map_or(Duration::ZERO, |prev| arrival - prev);
        self.threshold.update(m, dt);
        self.prev_arrival = Some(arrival);
        self.prev_m_ms = m;
        self.compared_m_ms = m;
        self.signal
    }

    /// The last signal.
    pub fn signal(&self) -> Signal {
        self.signal
    }

    /// del_var_th (ms).
    pub fn del_var_th_ms(&self) -> f64 {
        self.threshold.del_var_th_ms()
    }

    /// The value last compared with the threshold (ms): `m(i)`, scaled if so configured.
    pub fn compared_m_ms(&self) -> f64 {
        self.compared_m_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DT: Duration = Duration::from_millis(5);

    #[test]
    fn threshold_follows_a_scripted_m_sequence() {
        let mut th = AdaptiveThreshold::new(ThresholdParams::default());
        assert_eq!(th.del_var_th_ms(), 12.5);
        // |m| = 20 >= 12.5: K_u; 20 - 12.5 = 7.5 <= 15: 12.5 + 5 * 0.01 * 7.5 = 12.875.
        th.update(20.0, DT);
        assert!((th.del_var_th_ms() - 12.875).abs() < 1e-12);
        // |m| = 40: 40 - 12.875 = 27.125 > 15: no update.
        th.update(40.0, DT);
        assert!((th.del_var_th_ms() - 12.875).abs() < 1e-12);
        // |m| = 5 < 12.875: K_d; 12.875 + 5 * 0.00018 * (5 - 12.875) = 12.8679125.
        th.update(5.0, DT);
        assert!((th.del_var_th_ms() - 12.867_912_5).abs() < 1e-12);
        // m = -20: |m| counts; K_u: 12.8679125 + 0.05 * 7.1320875 = 13.224516875.
        th.update(-20.0, DT);
        assert!((th.del_var_th_ms() - 13.224_516_875).abs() < 1e-12);
        // |m| - th = 15 exactly is not "> 15": updated, 13.2245... + 0.05 * 15.
        th.update(13.224_516_875 + 15.0, DT);
        assert!((th.del_var_th_ms() - (13.224_516_875 + 0.75)).abs() < 1e-9);
    }

    #[test]
    fn threshold_is_clamped_and_time_step_capped() {
        let mut th = AdaptiveThreshold::new(ThresholdParams::default());
        // 100 ms of |m| = 0: 12.5 - 100 * 0.00018 * 12.5 = 12.275.
        th.update(0.0, Duration::from_millis(100));
        assert!((th.del_var_th_ms() - 12.275).abs() < 1e-12);
        // A 10 s gap counts as 100 ms.
        th.update(0.0, Duration::from_secs(10));
        assert!((th.del_var_th_ms() - 12.275 * (1.0 - 0.018)).abs() < 1e-12);
        // K_u * 100 ms = 1: one capped step lands exactly on |m|.
        th.update(20.0, Duration::from_secs(3));
        assert!((th.del_var_th_ms() - 20.0).abs() < 1e-12);
        // Decays to the 6 ms floor, never below.
        for _ in 0..10_000 {
            th.update(0.0, Duration::from_millis(100));
        }
        assert_eq!(th.del_var_th_ms(), 6.0);
        // Grows in steps of at most 15 ms toward large |m| and stops at 600 ms.
        for _ in 0..1000 {
            let m = th.del_var_th_ms() + 15.0;
            th.update(m, Duration::from_millis(100));
        }
        assert_eq!(th.del_var_th_ms(), 600.0);
    }

    fn detector() -> OveruseDetector {
        // A threshold that does not move (K = 0) isolates the signal logic.
        let frozen = ThresholdParams { k_u_per_ms: 0.0, k_d_per_ms: 0.0, ..ThresholdParams::default() };
        OveruseDetector::new(frozen, OVERUSE_TIME_TH, DetectorInput::Literal)
    }

    #[test]
    fn overuse_only_after_overuse_time_th() {
        let mut d = detector();
        let t = |ms| Instant::from_millis(ms);
        assert_eq!(d.update(5.0, t(0)), Signal::Normal);
        // Above 12.5 from t = 5 ms: 0 and 5 ms held are not enough ...
        assert_eq!(d.update(13.0, t(5)), Signal::Normal);
        assert_eq!(d.update(14.0, t(10)), Signal::Normal);
        // ... 10 ms held is.
        assert_eq!(d.update(15.0, t(15)), Signal::Overuse);
        assert_eq!(d.update(16.0, t(20)), Signal::Overuse);
        // Dropping below restarts the clock.
        assert_eq!(d.update(12.0, t(25)), Signal::Normal);
        assert_eq!(d.update(17.0, t(30)), Signal::Normal);
        assert_eq!(d.update(18.0, t(35)), Signal::Normal);
        assert_eq!(d.update(19.0, t(40)), Signal::Overuse);
    }

    #[test]
    fn no_overuse_while_m_decreases() {
        let mut d = detector();
        let t = |ms| Instant::from_millis(ms);
        d.update(20.0, t(0));
        d.update(21.0, t(5));
        assert_eq!(d.update(22.0, t(10)), Signal::Overuse);
        // Still above the threshold and held long enough, but m(i) < m(i-1).
        assert_eq!(d.update(21.5, t(15)), Signal::Normal);
        assert_eq!(d.update(21.0, t(20)), Signal::Normal);
        // Equal counts as not decreasing (m(i) < m(i-1) is what forbids it); the clock kept
        // running while m stayed above the threshold.
        assert_eq!(d.update(21.0, t(25)), Signal::Overuse);
        assert_eq!(d.update(25.0, t(30)), Signal::Overuse);
    }

    #[test]
    fn underuse_below_minus_threshold() {
        let mut d = detector();
        let t = |ms| Instant::from_millis(ms);
        assert_eq!(d.update(-12.0, t(0)), Signal::Normal);
        assert_eq!(d.update(-13.0, t(5)), Signal::Underuse);
        assert_eq!(d.update(-12.5, t(10)), Signal::Normal);
    }

    #[test]
    fn threshold_adapts_after_the_comparison() {
        let mut d = OveruseDetector::new(ThresholdParams::default(), OVERUSE_TIME_TH, DetectorInput::Literal);
        let t = |ms| Instant::from_millis(ms);
        // First group: no previous arrival, Δt = 0, no change.
        d.update(20.0, t(0));
        assert_eq!(d.del_var_th_ms(), 12.5);
        d.update(20.0, t(5));
        assert!((d.del_var_th_ms() - 12.875).abs() < 1e-12);
    }

    #[test]
    fn group_count_scaling() {
        let frozen = ThresholdParams { k_u_per_ms: 0.0, k_d_per_ms: 0.0, ..ThresholdParams::default() };
        let mut d =
            OveruseDetector::new(frozen, OVERUSE_TIME_TH, DetectorInput::GroupCountScaled { max_groups: 60 });
        let t = |ms| Instant::from_millis(ms);
        // m = 1 ms on group i is compared as min(i, 60) ms.
        for i in 1..=100i64 {
            d.update(1.0, t(5 * i));
            assert_eq!(d.compared_m_ms(), i.min(60) as f64);
        }
        // Above 12.5 from group 13 on: held >= 10 ms by group 15.
        let mut d =
            OveruseDetector::new(frozen, OVERUSE_TIME_TH, DetectorInput::GroupCountScaled { max_groups: 60 });
        let signals: Vec<_> = (1..=16i64).map(|i| d.update(1.0, t(5 * i))).collect();
        assert_eq!(signals.iter().position(|s| *s == Signal::Overuse), Some(14));
    }
}
