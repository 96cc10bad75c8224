//! Packet delay variation by the NR-RBPDV model of RFC 8868 §4.5 (the model evaluations MUST
//! use): each packet gets an extra delay z(n) = |max(min(N(0, std²), n_std·std), -n_std·std)|
//! (§4.5.3; recommended std = 5 ms, n_std = 3), and then, so that packets are never reordered,
//! j(n) = max(j(n), j(n-1) + serial(n-1)) (§4.5.2).
//!
//! serial(n-1) is the time the previous packet took to serialise at this link's capacity when
//! it was sent. The RFC names the lowest bottleneck rate of the test "or another appropriate
//! rate"; spacing at the lowest rate would cap the link's throughput at that rate in phases
//! where the capacity is higher, so the actual serialisation time is used (documented in
//! docs/simulator.md).

use rand::RngExt;
use rtcbench_units::{Duration, Instant};
use serde::{Deserialize, Serialize};

use crate::rng::SimRng;

/// Parameters of the truncated, folded Gaussian.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JitterConfig {
    pub std: Duration,
    pub n_std: f64,
}

/// The NR-RBPDV state of one link.
pub struct NrRbpdv {
    cfg: JitterConfig,
    rng: SimRng,
    last_exit: Option<Instant>,
    last_serial: Duration,
}

impl NrRbpdv {
    pub fn new(cfg: JitterConfig, rng: SimRng) -> Self {
        Self { cfg, rng, last_exit: None, last_serial: Duration::ZERO }
    }

    /// A standard normal sample (Box–Muller; one of the pair is discarded for simplicity).
    fn standard_normal(&mut self) -> f64 {
        let u1: f64 = 1.0 - self.rng.random::<f64>(); // (0, 1]
        let u2: f64 = self.rng.random::<f64>();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// z(n): the extra delay of the next packet, before the no-reordering rule.
    // Called once per packet from both of a link's services (rate, delivery opportunities):
    // forced inline, with `exit_time`, so the rate path, which every scenario runs, keeps the
    // code it had with one caller (LLVM otherwise stops inlining them there; measured with
    // callgrind on rfc8867-5.1 with `fixed`: +1.6 % instructions).
    #[inline(always)]
    pub fn sample(&mut self) -> Duration {
        let bound = self.cfg.n_std;
        let z = self.standard_normal().clamp(-bound, bound).abs();
        self.cfg.std * z
    }

    /// The exit time of a packet that would leave at `nominal` without jitter and whose
    /// serialisation took `serial`.
    #[inline(always)]
    pub fn exit_time(&mut self, nominal: Instant, serial: Duration) -> Instant {
        let mut j = nominal + self.sample();
        if let Some(prev) = self.last_exit {
            j = j.max(prev + self.last_serial);
        }
        self.last_exit = Some(j);
        self.last_serial = serial;
        j
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::rng_for;

    #[test]
    fn samples_are_bounded_and_match_the_folded_gaussian_mean() {
        let mut j = NrRbpdv::new(JitterConfig { std: Duration::from_millis(5), n_std: 3.0 }, rng_for(1, "j"));
        let n = 50_000;
        let mut sum = 0.0;
        for _ in 0..n {
            let z = j.sample();
            assert!(z >= Duration::ZERO && z <= Duration::from_millis(15));
            sum += z.as_millis_f64();
        }
        // E|N(0, σ²)| = σ·sqrt(2/π) ≈ 3.99 ms for σ = 5 ms (the 3σ truncation changes it by < 1 %).
        let mean = sum / n as f64;
        assert!((mean - 3.99).abs() < 0.08, "mean {mean}");
    }

    #[test]
    fn never_reorders() {
        let mut j =
            NrRbpdv::new(JitterConfig { std: Duration::from_millis(20), n_std: 3.0 }, rng_for(2, "j"));
        let mut last = Instant::ZERO;
        for k in 0..10_000 {
            // Packets 1 ms apart: far closer than the jitter, so the raw model would reorder.
            let exit = j.exit_time(Instant::from_millis(k), Duration::from_micros(500));
            assert!(exit >= last, "packet {k} reordered");
            last = exit;
        }
    }
}
