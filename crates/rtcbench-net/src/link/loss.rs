//! Random packet loss on a link: independent (Bernoulli), the minimum RFC 8868 §4.4 asks for,
//! and the two-state Gilbert-Elliott model it suggests for correlated loss.

use rand::RngExt;
use serde::{Deserialize, Serialize};

use crate::rng::SimRng;

/// A loss process.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LossModel {
    None,
    /// Each packet is lost with probability `rate`.
    Bernoulli {
        rate: f64,
    },
    /// Gilbert-Elliott: a Markov chain over Good and Bad states, stepped once per packet.
    /// `p` = P(Good → Bad), `r` = P(Bad → Good); packets are lost with `loss_good` in Good and
    /// `loss_bad` in Bad (the classic Gilbert model is loss_good = 0, loss_bad = 1).
    GilbertElliott {
        p: f64,
        r: f64,
        loss_good: f64,
        loss_bad: f64,
    },
}

impl LossModel {
    /// The long-run fraction of packets lost.
    pub fn stationary_rate(&self) -> f64 {
        match *self {
            Self::None => 0.0,
            Self::Bernoulli { rate } => rate,
            Self::GilbertElliott { p, r, loss_good, loss_bad } => {
                if p + r == 0.0 {
                    return loss_good;
                }
                let pi_bad = p / (p + r);
                (1.0 - pi_bad) * loss_good + pi_bad * loss_bad
            }
        }
    }
}

/// A loss model with its state and generator.
pub struct LossProcess {
    model: LossModel,
    bad: bool,
    rng: SimRng,
}

impl LossProcess {
    pub fn new(model: LossModel, rng: SimRng) -> Self {
        Self { model, bad: false, rng }
    }

    /// Decides the fate of the next packet.
    #[inline]
    pub fn lose(&mut self) -> bool {
        match self.model {
            LossModel::None => false,
            LossModel::Bernoulli { rate } => self.rng.random::<f64>() < rate,
            LossModel::GilbertElliott { p, r, loss_good, loss_bad } => {
                let flip = if self.bad { r } else { p };
                if self.rng.random::<f64>() < flip {
                    self.bad = !self.bad;
                }
                let loss = if self.bad { loss_bad } else { loss_good };
                self.rng.random::<f64>() < loss
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::rng_for;

    fn measured(model: LossModel, n: usize) -> f64 {
        let mut l = LossProcess::new(model, rng_for(3, "loss"));
        (0..n).filter(|_| l.lose()).count() as f64 / n as f64
    }

    #[test]
    fn bernoulli_rate() {
        let got = measured(LossModel::Bernoulli { rate: 0.05 }, 200_000);
        assert!((got - 0.05).abs() < 0.003, "{got}");
    }

    #[test]
    fn gilbert_elliott_matches_its_stationary_rate_and_is_bursty() {
        let m = LossModel::GilbertElliott { p: 0.01, r: 0.2, loss_good: 0.001, loss_bad: 0.6 };
        let expected = m.stationary_rate(); // 0.0476·0.6 + 0.9524·0.001 ≈ 0.0295
        assert!((expected - 0.02952).abs() < 1e-4);
        let got = measured(m, 400_000);
        assert!((got - expected).abs() < 0.003, "{got} vs {expected}");
        // Bursty: the probability that a loss follows a loss is far above the average rate.
        let mut l = LossProcess::new(m, rng_for(4, "loss"));
        let seq: Vec<bool> = (0..400_000).map(|_| l.lose()).collect();
        let pairs = seq.windows(2).filter(|w| w[0]).count() as f64;
        let both = seq.windows(2).filter(|w| w[0] && w[1]).count() as f64;
        assert!(both / pairs > 5.0 * expected, "conditional {}", both / pairs);
    }
}
