//! Competing-flow compensation of SCReAM v1 (RFC 8298 §4.1.2.3, `adjust_qdelay_target`): when
//! qdelay stays high and steady (a loss-based flow is filling the bottleneck) or losses are
//! frequent, qdelay_target is raised from QDELAY_TARGET_LO towards QDELAY_TARGET_HI so SCReAM is
//! not starved; otherwise it decays back.
//!
//! Two readings of the RFC text, both documented in `docs/controllers/scream.md`:
//! * The state variable is declared `qdelay_norm_hist[100]`, but the variance is taken over 200
//!   samples; we keep 200 ([`super::config::QDELAY_NORM_VAR_LEN`]).
//! * The pseudo code runs on every acknowledgement; we sample on a 50 ms grid
//!   ([`super::config::QDELAY_NORM_SAMPLE_INTERVAL`]) so that the 200-sample span (10 s) and
//!   the ×0.9 decay do not depend on the feedback rate.
//!
//! VARIANCE is the population variance (divided by N); the RFC does not say which.

use std::collections::VecDeque;

use rtcbench_units::Duration;

use super::config::ScreamConfig;

/// qdelay_target (RFC 8298 §4.1.1.2) and the normalised-qdelay history it adapts from.
#[derive(Clone, Debug)]
pub struct QdelayTargetAdaptation {
    enabled: bool,
    qdelay_target_lo: Duration,
    qdelay_target_hi: Duration,
    avg_len: usize,
    loss_event_rate_th: f64,
    loss_scale: f64,
    var_th: f64,
    fast_decrease: f64,
    slow_decrease: f64,
    /// qdelay_norm_history: qdelay / QDELAY_TARGET_LO, oldest first, initially zeros.
    qdelay_norm_hist: VecDeque<f64>,
    /// qdelay_target in seconds.
    qdelay_target_s: f64,
    /// The last variance and average, for tests and traces.
    last_var: f64,
    last_avg: f64,
}

impl QdelayTargetAdaptation {
    /// qdelay_target starts at QDELAY_TARGET_LO (§4.1.1.2).
    pub fn new(cfg: &ScreamConfig) -> Self {
        let var_len = cfg.qdelay_norm_var_len.max(1);
        Self {
            enabled: cfg.competing_flows_compensation,
            qdelay_target_lo: cfg.qdelay_target_lo,
            qdelay_target_hi: cfg.qdelay_target_hi,
            avg_len: cfg.qdelay_norm_avg_len.clamp(1, var_len),
            loss_event_rate_th: cfg.loss_event_rate_th,
            loss_scale: cfg.qdelay_target_loss_scale,
            var_th: cfg.qdelay_norm_var_th,
            fast_decrease: cfg.qdelay_target_fast_decrease,
            slow_decrease: cfg.qdelay_target_slow_decrease,
            qdelay_norm_hist: std::iter::repeat_n(0.0, var_len).collect(),
            qdelay_target_s: cfg.qdelay_target_lo.as_secs_f64(),
            last_var: 0.0,
            last_avg: 0.0,
        }
    }

    pub fn qdelay_target(&self) -> Duration {
        Duration::from_secs_f64(self.qdelay_target_s)
    }

    /// qdelay_norm_var_t and qdelay_norm_avg_t of the last adjustment.
    pub fn stats(&self) -> (f64, f64) {
        (self.last_var, self.last_avg)
    }

    /// `adjust_qdelay_target(qdelay)` of §4.1.2.3.
    pub fn adjust_qdelay_target(&mut self, qdelay: Duration, loss_event_rate: f64) {
        if !self.enabled {
            return;
        }
        let lo = self.qdelay_target_lo.as_secs_f64();
        let qdelay_norm_t = qdelay.as_secs_f64() / lo;
        self.qdelay_norm_hist.pop_front();
        self.qdelay_norm_hist.push_back(qdelay_norm_t);

        let n = self.qdelay_norm_hist.len() as f64;
        let mean = self.qdelay_norm_hist.iter().sum::<f64>() / n;
        let qdelay_norm_var_t =
            self.qdelay_norm_hist.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
        let qdelay_norm_avg_t =
            self.qdelay_norm_hist.iter().rev().take(self.avg_len).sum::<f64>() / self.avg_len as f64;
        self.last_var = qdelay_norm_var_t;
        self.last_avg = qdelay_norm_avg_t;

        // Upper limit to the target delay.
        let new_target_t = (qdelay_norm_avg_t + qdelay_norm_var_t.sqrt()) * lo;
        let mut target = self.qdelay_target_s;
        if loss_event_rate > self.loss_event_rate_th {
            // Packet losses: a loss-based competitor is likely.
            target = self.loss_scale * new_target_t;
        } else if qdelay_norm_var_t < self.var_th {
            // Steady delay: reasonably safe to follow it.
            target = new_target_t;
        } else if new_target_t < lo {
            // Measured delay below the target: decrease quickly.
            target = (target * self.fast_decrease).max(new_target_t);
        } else {
            // Decrease slowly, so the target is not locked high for ever.
            target *= self.slow_decrease;
        }
        self.qdelay_target_s = target.clamp(lo, self.qdelay_target_hi.as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: i64) -> Duration {
        Duration::from_millis(v)
    }

    fn adaptation() -> QdelayTargetAdaptation {
        QdelayTargetAdaptation::new(&ScreamConfig {
            competing_flows_compensation: true,
            ..ScreamConfig::default()
        })
    }

    fn close(a: Duration, b_ms: f64) -> bool {
        (a.as_millis_f64() - b_ms).abs() < 0.01
    }

    #[test]
    fn low_qdelay_keeps_the_target_at_lo() {
        let mut a = adaptation();
        for _ in 0..400 {
            a.adjust_qdelay_target(ms(20), 0.0);
        }
        // avg 0.2, var 0: new_target = 0.2 · 0.1 s = 20 ms, clamped up to QDELAY_TARGET_LO.
        assert_eq!(a.qdelay_target(), ms(100));
    }

    #[test]
    fn a_steady_high_qdelay_raises_the_target() {
        // A competing flow holds qdelay at 250 ms. Once the 200-sample history holds only that
        // value, var = 0 < 0.2 and new_target = (2.5 + 0) · 0.1 s = 250 ms.
        let mut a = adaptation();
        for _ in 0..200 {
            a.adjust_qdelay_target(ms(250), 0.0);
        }
        let (var, avg) = a.stats();
        assert_eq!((var, avg), (0.0, 2.5));
        assert!(close(a.qdelay_target(), 250.0), "{}", a.qdelay_target());
        // Above QDELAY_TARGET_HI it is clamped: 500 ms → 400 ms.
        for _ in 0..200 {
            a.adjust_qdelay_target(ms(500), 0.0);
        }
        assert!(close(a.qdelay_target(), 400.0));
    }

    #[test]
    fn losses_raise_the_target_by_half() {
        // loss_event_rate 0.01 > 0.002: target = 1.5 · new_target = 1.5 · 200 ms = 300 ms.
        let mut a = adaptation();
        for _ in 0..200 {
            a.adjust_qdelay_target(ms(200), 0.01);
        }
        assert!(close(a.qdelay_target(), 300.0), "{}", a.qdelay_target());
    }

    #[test]
    fn an_unsteady_qdelay_lowers_the_target() {
        // History: 100 samples of qdelay_norm 0 and 100 of 2 → mean 1, var 1 (> 0.2).
        let mut a = adaptation();
        a.qdelay_target_s = 0.3;
        a.qdelay_norm_hist = std::iter::repeat_n(0.0, 100).chain(std::iter::repeat_n(2.0, 100)).collect();
        // New sample 2: history 99 × 0, 101 × 2: mean 1.01, var = 1.01·(2 − 1.01) = 0.9999.
        // avg of the last 50 = 2, new_target = (2 + 0.99995) · 0.1 = 0.3 s ≥ LO → slow decrease:
        // 0.3 · 0.9 = 270 ms.
        a.adjust_qdelay_target(ms(200), 0.0);
        assert!((a.stats().0 - 0.9999).abs() < 1e-9);
        assert!(close(a.qdelay_target(), 270.0), "{}", a.qdelay_target());

        // History: 150 × 2 then 50 × 0 → var = 0.75, avg(last 50) = 0;
        // after one more 0: 149 × 2, 51 × 0: mean 1.49, var = 1.49·0.51·... computed below.
        let mut a = adaptation();
        a.qdelay_target_s = 0.3;
        a.qdelay_norm_hist = std::iter::repeat_n(2.0, 150).chain(std::iter::repeat_n(0.0, 50)).collect();
        a.adjust_qdelay_target(Duration::ZERO, 0.0);
        // var = p(1−p)·2² with p = 149/200: 0.745·0.255·4 = 0.75990; sqrt = 0.87172;
        // new_target = (0 + 0.87172) · 0.1 = 87.2 ms < LO → max(300·0.5, 87.2) = 150 ms.
        assert!((a.stats().0 - 0.7599).abs() < 1e-9, "{:?}", a.stats());
        assert!(close(a.qdelay_target(), 150.0), "{}", a.qdelay_target());
        a.adjust_qdelay_target(Duration::ZERO, 0.0);
        // Again 150 · 0.5 = 75 → clamped to LO = 100 ms.
        assert!(close(a.qdelay_target(), 100.0));
    }

    #[test]
    fn disabled_keeps_lo() {
        let cfg = ScreamConfig { competing_flows_compensation: false, ..ScreamConfig::default() };
        let mut a = QdelayTargetAdaptation::new(&cfg);
        for _ in 0..300 {
            a.adjust_qdelay_target(ms(300), 0.1);
        }
        assert_eq!(a.qdelay_target(), ms(100));
    }
}
