//! Channel quality per UE and direction as a function of time: a fixed CQI, CQI or SINR traces,
//! or a mean SINR with Rayleigh fading. The scheduler asks for the CQI of a report instant
//! ([`super::CqiReporting`]); the value is computed then, from time alone, so the cell can skip
//! idle TTIs and a run does not depend on when it was polled.
//!
//! Fading is a sum of M sinusoids with random arrival angles and phases (the statistical model of
//! Zheng and Xiao, IEEE Trans. Commun. 51(6), 2003): h(t) = √(2/M) Σₙ (cos ψₙ + j sin ψₙ)
//! cos(ω_d t cos αₙ + φ), αₙ = (2πn − π + θ) / 4M, θ, φ, ψₙ uniform on [−π, π), ω_d = 2π f_d with
//! the Doppler frequency f_d = v·f_c / c. |h|² has unit mean and is exponential (Rayleigh
//! envelope) with the Jakes (Clarke) autocorrelation J₀(ω_d τ); the SINR is the mean plus
//! 10·log10 |h|². 3 km/h at 2 GHz is f_d = 5.6 Hz (coherence time ≈ 0.423 / f_d ≈ 76 ms), 30 km/h
//! 56 Hz (7.6 ms).

use std::f64::consts::PI;

use rand::RngExt;
use rtcbench_units::{Duration, Instant};

use super::amc::{cqi_from_sinr_db, sinr_threshold_db};
use super::config::ChannelQuality;
use crate::rng::SimRng;

/// Sinusoids per fading process: Zheng and Xiao show M = 8 already gives the Rayleigh
/// statistics and the Jakes autocorrelation closely.
const SINUSOIDS: usize = 8;
/// The speed of light, m/s.
const C: f64 = 299_792_458.0;

/// Reports between two exact evaluations of a fading process; in between, each sinusoid's
/// phasor turns by one report period's angle (a complex multiplication instead of a cosine).
const ANCHOR_REPORTS: u64 = 64;

/// One Rayleigh fading process.
#[derive(Clone, Debug)]
struct Fading {
    mean_db: f64,
    /// ω_d, rad/s.
    omega: f64,
    /// cos αₙ.
    cos_alpha: [f64; SINUSOIDS],
    cos_psi: [f64; SINUSOIDS],
    sin_psi: [f64; SINUSOIDS],
    phi: f64,
    /// |h|² above which the UE reports CQI 1, 2, … 15: the SINR thresholds of
    /// [`cqi_from_sinr_db`] less the mean, in linear units, so a report needs no logarithm.
    thresholds: [f64; 15],
    /// The CQI report period, s, and in TTIs.
    period: f64,
    period_ttis: u64,
    /// Per sinusoid, (cos, sin) of the angle it turns in one report period.
    step: [(f64, f64); SINUSOIDS],
    /// The phasors (cos, sin) of the last report evaluated, and its index.
    last: Option<(u64, [(f64, f64); SINUSOIDS])>,
}

impl Fading {
    fn new(mean_db: f64, speed_kmh: f64, carrier_ghz: f64, period: Duration, rng: &mut SimRng) -> Self {
        let f_d = speed_kmh / 3.6 * carrier_ghz * 1e9 / C;
        let mut uniform = || (rng.random::<f64>() * 2.0 - 1.0) * PI;
        let theta = uniform();
        let phi = uniform();
        let m = SINUSOIDS as f64;
        let cos_alpha =
            std::array::from_fn(|n| ((2.0 * PI * (n as f64 + 1.0) - PI + theta) / (4.0 * m)).cos());
        let psi: [f64; SINUSOIDS] = std::array::from_fn(|_| uniform());
        let omega = 2.0 * PI * f_d;
        let period_ttis = (period.as_micros() / 1000) as u64;
        let period = period.as_secs_f64();
        Self {
            mean_db,
            omega,
            cos_alpha,
            cos_psi: psi.map(f64::cos),
            sin_psi: psi.map(f64::sin),
            phi,
            thresholds: std::array::from_fn(|c| {
                10f64.powf((sinr_threshold_db(c as u8 + 1) - mean_db) / 10.0)
            }),
            period,
            period_ttis,
            step: cos_alpha.map(|ca: f64| {
                let d = omega * period * ca;
                (d.cos(), d.sin())
            }),
            last: None,
        }
    }

    /// The phasor of sinusoid n at `t_secs`: the angle ω_d t cos αₙ + φ as (cos, sin).
    fn phasors(&self, t_secs: f64) -> [(f64, f64); SINUSOIDS] {
        std::array::from_fn(|n| {
            let a = self.omega * t_secs * self.cos_alpha[n] + self.phi;
            (a.cos(), a.sin())
        })
    }

    /// |h|² from the phasors, unit mean.
    fn power_of(&self, ph: &[(f64, f64); SINUSOIDS]) -> f64 {
        let (mut re, mut im) = (0.0, 0.0);
        for ((c, s), p) in self.cos_psi.iter().zip(&self.sin_psi).zip(ph) {
            re += c * p.0;
            im += s * p.0;
        }
        (re * re + im * im) * 2.0 / SINUSOIDS as f64
    }

    /// |h(t)|², evaluated exactly.
    fn power(&self, t_secs: f64) -> f64 {
        self.power_of(&self.phasors(t_secs))
    }

    fn sinr_db(&self, t_secs: f64) -> f64 {
        self.mean_db + 10.0 * self.power(t_secs).log10()
    }

    /// The phasors of report `r` (at r report periods), as a function of r alone: exact at the
    /// last anchor (a multiple of [`ANCHOR_REPORTS`]), then turned step by step, starting from
    /// `from` (a report between the anchor and r whose phasors were computed the same way)
    /// when given.
    fn report_phasors(
        &self,
        r: u64,
        from: Option<(u64, [(f64, f64); SINUSOIDS])>,
    ) -> [(f64, f64); SINUSOIDS] {
        let anchor = r - r % ANCHOR_REPORTS;
        let (mut at, mut ph) = match from {
            Some((k, ph)) if (anchor..=r).contains(&k) => (k, ph),
            _ => (anchor, self.phasors(anchor as f64 * self.period)),
        };
        while at < r {
            for (p, &(c, s)) in ph.iter_mut().zip(&self.step) {
                *p = (p.0 * c - p.1 * s, p.0 * s + p.1 * c);
            }
            at += 1;
        }
        ph
    }

    /// The CQI of report `r`, as a pure function of r (turned on from the last report evaluated
    /// when it lies between r's anchor and r: the same turns, so the same bits).
    fn report_cqi(&self, r: u64) -> u8 {
        self.cqi_of_power(self.power_of(&self.report_phasors(r, self.last)))
    }

    /// The same, from the last report evaluated when it helps (bit for bit the same result).
    fn next_report_cqi(&mut self, r: u64) -> u8 {
        let ph = self.report_phasors(r, self.last);
        self.last = Some((r, ph));
        self.cqi_of_power(self.power_of(&ph))
    }

    /// The index of the report at `at`.
    fn report_index(&self, at: Instant) -> u64 {
        (at.as_micros() / 1000) as u64 / self.period_ttis
    }

    /// The number of thresholds |h|² exceeds.
    fn cqi_of_power(&self, p: f64) -> u8 {
        self.thresholds.partition_point(|&t| t < p) as u8
    }
}

#[derive(Clone, Debug)]
enum Source {
    Cqi(u8),
    /// (µs from time zero, CQI).
    CqiTrace(Vec<(i64, u8)>),
    Sinr(f64),
    SinrTrace(Vec<(i64, f64)>),
    Fading(Box<Fading>),
}

/// The value of a step trace at `t_us`: the last step at or before it, or the first.
fn step_at<T: Copy>(steps: &[(i64, T)], t_us: i64) -> T {
    let i = steps.partition_point(|&(at, _)| at <= t_us);
    steps[i.saturating_sub(1)].1
}

/// The channel quality of one direction of one UE.
#[derive(Clone, Debug)]
pub(crate) struct Channel {
    source: Source,
    /// The last report computed: (report TTI, CQI).
    cached: Option<(u64, u8)>,
}

impl Channel {
    /// Draws a fading process's parameters from `rng` (nothing for the other forms); CQI is
    /// reported every `period`.
    pub(crate) fn new(q: &ChannelQuality, period: Duration, rng: &mut SimRng) -> Self {
        let source = match q {
            ChannelQuality::Cqi { cqi } => Source::Cqi(*cqi),
            ChannelQuality::CqiTrace { steps } => {
                Source::CqiTrace(steps.iter().map(|s| (s.at.as_micros(), s.cqi)).collect())
            }
            ChannelQuality::Sinr { sinr_db } => Source::Sinr(*sinr_db),
            ChannelQuality::SinrTrace { steps } => {
                Source::SinrTrace(steps.iter().map(|s| (s.at.as_micros(), s.sinr_db)).collect())
            }
            ChannelQuality::Fading { mean_sinr_db, speed_kmh, carrier_ghz } => {
                Source::Fading(Box::new(Fading::new(*mean_sinr_db, *speed_kmh, *carrier_ghz, period, rng)))
            }
        };
        Self { source, cached: None }
    }

    /// The wideband SINR at `at`, dB (`None` for a CQI source).
    pub(crate) fn sinr_db(&self, at: Instant) -> Option<f64> {
        let t = at.as_micros();
        match &self.source {
            Source::Cqi(_) | Source::CqiTrace(_) => None,
            Source::Sinr(s) => Some(*s),
            Source::SinrTrace(steps) => Some(step_at(steps, t)),
            Source::Fading(f) => Some(f.sinr_db(t as f64 * 1e-6)),
        }
    }

    /// The CQI of the report at `at`, a report instant (a multiple of the report period): the
    /// one the scheduler last used if it is that report's, else computed (the same value).
    pub(crate) fn cqi_at(&self, at: Instant) -> u8 {
        if let Some((r, c)) = self.cached {
            if at == Instant::from_millis(r as i64) {
                return c;
            }
        }
        match &self.source {
            Source::Cqi(c) => *c,
            Source::CqiTrace(steps) => step_at(steps, at.as_micros()),
            Source::Fading(f) => f.report_cqi(f.report_index(at)),
            _ => cqi_from_sinr_db(self.sinr_db(at).expect("an SINR source")),
        }
    }

    /// The CQI of report TTI `report`, remembered until the report changes.
    #[inline]
    pub(crate) fn cqi_of_report(&mut self, report: u64) -> u8 {
        if let Source::Cqi(c) = self.source {
            return c;
        }
        match self.cached {
            Some((r, c)) if r == report => c,
            _ => {
                let at = Instant::from_millis(report as i64);
                let c = match &mut self.source {
                    Source::Fading(f) => {
                        let r = f.report_index(at);
                        f.next_report_cqi(r)
                    }
                    _ => self.cqi_at(at),
                };
                self.cached = Some((report, c));
                c
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn fading_has_rayleigh_statistics() {
        // Over many independent processes and a long time: mean power 1, and
        // P(|h|² < x) = 1 − e^(−x) (exponential power, Rayleigh envelope).
        let mut rng = SimRng::seed_from_u64(7);
        let (mut sum, mut below_01, mut below_1, mut n) = (0.0, 0u32, 0u32, 0u32);
        for _ in 0..200 {
            let f = Fading::new(0.0, 30.0, 2.0, Duration::from_millis(1), &mut rng);
            for k in 0..2000 {
                let p = f.power(f64::from(k) * 0.005);
                sum += p;
                below_01 += u32::from(p < 0.1);
                below_1 += u32::from(p < 1.0);
                n += 1;
            }
        }
        let n = f64::from(n);
        assert!((sum / n - 1.0).abs() < 0.05, "mean power {}", sum / n);
        let (p01, p1) = (f64::from(below_01) / n, f64::from(below_1) / n);
        assert!((p01 - (1.0 - (-0.1f64).exp())).abs() < 0.02, "P(<0.1) = {p01}");
        assert!((p1 - (1.0 - (-1.0f64).exp())).abs() < 0.03, "P(<1) = {p1}");
    }

    #[test]
    fn fading_decorrelates_over_the_coherence_time() {
        // Jakes: the complex gain's autocorrelation is J₀(2π f_d τ), ≈ 0.98 at τ = 0.02/f_d and
        // ≈ 0 (−0.40 .. 0.3 band for a finite sample) beyond the first zero, τ ≈ 0.38/f_d.
        let mut rng = SimRng::seed_from_u64(3);
        let f_d = 30.0 / 3.6 * 2e9 / C;
        let corr = |tau: f64, rng: &mut SimRng| {
            let (mut num, mut den) = (0.0, 0.0);
            for _ in 0..400 {
                let f = Fading::new(0.0, 30.0, 2.0, Duration::from_millis(1), rng);
                for k in 0..50 {
                    let t = f64::from(k) * 0.1;
                    num += (f.power(t) - 1.0) * (f.power(t + tau) - 1.0);
                    den += (f.power(t) - 1.0).powi(2);
                }
            }
            num / den
        };
        // The power's autocovariance is J₀², so near 1 at small lags and small past the zero.
        assert!(corr(0.02 / f_d, &mut rng) > 0.95);
        assert!(corr(0.383 / f_d, &mut rng).abs() < 0.1);
    }

    #[test]
    fn report_cqis_agree_with_the_sinr_rule_whatever_the_path() {
        // Step by step from the last report, or afresh from the anchor: the same bits, and the
        // CQI of the exact SINR (rotation drifts by ~1e-15, far below any threshold gap here).
        let mut rng = SimRng::seed_from_u64(5);
        for (mean, period) in [(-5.0, 1), (8.0, 5), (20.0, 2)] {
            let mut f = Fading::new(mean, 30.0, 2.0, Duration::from_millis(period), &mut rng);
            let mut g = f.clone();
            for r in 0..5000u64 {
                let c = f.next_report_cqi(r);
                assert_eq!(c, f.report_cqi(r));
                assert_eq!(c, cqi_from_sinr_db(f.sinr_db(r as f64 * f.period)), "mean {mean}, report {r}");
                if r % 7 == 0 {
                    assert_eq!(c, g.next_report_cqi(r), "a path that skips reports");
                }
            }
        }
    }

    #[test]
    fn traces_hold_each_step_until_the_next() {
        let steps = vec![(0, 3u8), (10_000, 9), (20_000, 15)];
        let at = |ms: i64| step_at(&steps, ms * 1000);
        assert_eq!([at(0), at(9), at(10), at(19), at(20), at(500)], [3, 3, 9, 9, 15, 15]);
        let later = vec![(5_000, 7u8)];
        assert_eq!(step_at(&later, 0), 7);
    }
}
