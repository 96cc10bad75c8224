//! Analytic models of saturated DCF/EDCA, used to validate the simulated BSS (`docs/wifi.md`, "Validation"):
//! Bianchi's fixed point for the per-slot transmission probability, the saturation throughput
//! it gives (the original model and the variant ns-3 validates its non-QoS DCF against), and
//! the mean transmit delay of a discarded MPDU from seed 004 (MMSys'15, eq. 3).
//!
//! Notation (Bianchi, "Performance analysis of the IEEE 802.11 distributed coordination
//! function", IEEE JSAC 18(3), 2000): n saturated stations; W = CWmin + 1; the window of the
//! j-th attempt CW_j = min(2^j·W, CWmax + 1) − 1; R attempts at most; σ the slot.

use rtcbench_units::{Bitrate, DataSize, Duration};

/// The contention parameters of the n identical saturated stations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Contention {
    pub stations: u32,
    pub cw_min: u32,
    pub cw_max: u32,
    /// R, the attempts a frame gets (`None`: until it succeeds, Bianchi's original model).
    pub max_attempts: Option<u32>,
}

/// The solution of Bianchi's fixed point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FixedPoint {
    /// τ, the probability that a station transmits in a given slot.
    pub tau: f64,
    /// p, the conditional collision probability of a transmission.
    pub p: f64,
}

impl Contention {
    /// τ as a function of p (the renewal form of Bianchi and Tinnirello,
    /// IEEE Comm. Letters 9(8), 2005): expected attempts per frame over expected slots per frame,
    /// τ = Σ_{j<R} p^j / Σ_{j<R} p^j·(CW_j + 2)/2. With R = ∞ it is Bianchi's eq. (7).
    pub fn tau(&self, p: f64) -> f64 {
        let w = f64::from(self.cw_min + 1);
        let cap = f64::from(self.cw_max + 1);
        // Slots per attempt j: the mean backoff CW_j / 2 plus the transmission slot.
        let slots = |j: u32| ((2f64.powi(j as i32) * w).min(cap) - 1.0 + 2.0) / 2.0;
        match self.max_attempts {
            Some(r) => {
                let (mut attempts, mut spent, mut pj) = (0.0, 0.0, 1.0);
                for j in 0..r {
                    attempts += pj;
                    spent += pj * slots(j);
                    pj *= p;
                }
                attempts / spent
            }
            None => {
                // Attempts j ≥ m all use CWmax: their tail is a geometric series.
                let m = (cap / w).log2().round() as u32;
                let (mut spent, mut pj) = (0.0, 1.0);
                for j in 0..m {
                    spent += pj * slots(j);
                    pj *= p;
                }
                spent += pj * slots(m) / (1.0 - p);
                1.0 / (1.0 - p) / spent
            }
        }
    }

    /// Solves τ = τ(p), p = 1 − (1 − τ)^(n−1) (Bianchi eq. 9) by bisection on p: the right side
    /// decreases in p, so the root is unique.
    pub fn solve(&self) -> FixedPoint {
        let collision = |p: f64| 1.0 - (1.0 - self.tau(p)).powi(self.stations as i32 - 1);
        let (mut lo, mut hi) = (0.0, 1.0 - 1e-12);
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if collision(mid) > mid {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let p = 0.5 * (lo + hi);
        FixedPoint { tau: self.tau(p), p }
    }
}

/// Which throughput equation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Bianchi eq. (13): S = P_s·P_tr·E\[P\] / ((1 − P_tr)·σ + P_tr·P_s·T_s + P_tr·(1 − P_s)·T_c).
    Original,
    /// ns-3's reference model for its non-QoS DCF (`src/wifi/examples/reference/Bianchi11a.m`):
    /// with B = 1/(CWmin + 1) the payload of a success is E\[P\]/(1 − B) and its duration
    /// T_s/(1 − B) + σ. A DCF that draws a zero backoff after a success sends again right after
    /// DIFS, before anyone else can, so a success is a run of 1/(1 − B) frames on average.
    Ns3Dcf,
}

/// The saturation throughput of `contention` (its solved fixed point `fp`): each success carries
/// `payload`, lasts `t_s` (DATA + SIFS + ACK + DIFS in basic access) and a collision `t_c`
/// (DATA + DIFS, or DATA + EIFS).
pub fn saturation_throughput(
    contention: &Contention,
    fp: FixedPoint,
    slot: Duration,
    t_s: Duration,
    t_c: Duration,
    payload: DataSize,
    variant: Variant,
) -> Bitrate {
    let n = f64::from(contention.stations);
    let p_tr = 1.0 - (1.0 - fp.tau).powf(n);
    let p_s = n * fp.tau * (1.0 - fp.tau).powf(n - 1.0) / p_tr;
    let sigma = slot.as_secs_f64();
    let (bits, t_s) = match variant {
        Variant::Original => (payload.as_bits() as f64, t_s.as_secs_f64()),
        Variant::Ns3Dcf => {
            let b = 1.0 / f64::from(contention.cw_min + 1);
            (payload.as_bits() as f64 / (1.0 - b), t_s.as_secs_f64() / (1.0 - b) + sigma)
        }
    };
    let busy = (1.0 - p_tr) * sigma + p_tr * p_s * t_s + p_tr * (1.0 - p_s) * t_c.as_secs_f64();
    Bitrate::from_bps_f64(p_s * p_tr * bits / busy)
}

/// Mean transmit delay of an MPDU discarded after `max_attempts` (R) attempts, from reaching the
/// head of its queue to its discard: seed 004 (Chen, Ma, Shen, MMSys 2015), eq. (3),
///
/// TD(R, L) = Σ_{i=1..R} [ min(2^(i−1)·(CWmin + 1) − 1, CWmax) / 2 · (p·T(L) + σ) + T(L) ],
///
/// where T(L) = T_DATA(L) + SIFS + T_ACK + DIFS is one attempt, σ the slot and p the probability
/// that another station occupies a slot, so that each backoff slot costs σ plus p·T(L) of
/// freezing. Seconds, as a real number: the mean is not a whole number of microseconds
/// (10.8625 ms for R = 7, 15/1023, T = 0.25 ms, p = 0).
pub fn mean_discard_delay_secs(
    max_attempts: u32,
    cw_min: u32,
    cw_max: u32,
    p: f64,
    attempt: Duration,
    slot: Duration,
) -> f64 {
    let t = attempt.as_secs_f64();
    let sigma = slot.as_secs_f64();
    (1..=max_attempts)
        .map(|i| {
            let cw = (2u64.pow(i - 1) * u64::from(cw_min + 1) - 1).min(u64::from(cw_max));
            cw as f64 / 2.0 * (p * t + sigma) + t
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_station_never_collides_and_transmits_once_per_mean_backoff() {
        let c = Contention { stations: 1, cw_min: 15, cw_max: 1023, max_attempts: None };
        let fp = c.solve();
        assert!(fp.p.abs() < 1e-9);
        // τ = 2 / (W + 1): one transmission per 7.5 backoff slots + 1.
        assert!((fp.tau - 2.0 / 17.0).abs() < 1e-12);
    }

    #[test]
    fn a_finite_retry_limit_only_matters_when_collisions_are_likely() {
        let inf = Contention { stations: 50, cw_min: 15, cw_max: 1023, max_attempts: None };
        let r7 = Contention { max_attempts: Some(7), ..inf };
        // With R = ∞ the closed form of Bianchi's eq. (7) holds.
        let p = 0.3;
        let (w, m) = (16.0, 6);
        let closed =
            2.0 * (1.0 - 2.0 * p) / ((1.0 - 2.0 * p) * (w + 1.0) + p * w * (1.0 - (2.0f64 * p).powi(m)));
        assert!((inf.tau(p) - closed).abs() < 1e-12);
        assert!(r7.tau(0.6) > inf.tau(0.6), "frames given up start over at CWmin");
        assert!((r7.tau(0.01) - inf.tau(0.01)).abs() < 1e-9);
    }
}
