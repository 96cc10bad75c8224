//! The loss-based controller (draft-ietf-rmcat-gcc-02 §6).
//!
//! On every report of the fraction `p` of packets lost since the previous report:
//!
//! ```text
//! p < 2 %:          As_hat(i) = 1.05 * As_hat(i-1)
//! 2 % <= p <= 10 %: As_hat(i) = As_hat(i-1)
//! p > 10 %:         As_hat(i) = As_hat(i-1) * (1 - 0.5 p)
//! ```
//!
//! and the sending rate is `min(As_hat, A_hat)`.
//!
//! §6 opens with the loss-based controller basing its decisions on "the available bandwidth
//! estimates A_hat received from the delay-based controller", and GCC-00 bounded `As_hat` by
//! `A_hat` explicitly. GCC-02 only takes the minimum. Without a bound, `As_hat` climbs by 5 % per
//! loss-free report far above `A_hat`, and a loss decrease then has no effect on the sending rate
//! until it has undone all that climbing. So by default `As_hat` is capped at `A_hat` after each
//! update (libwebrtc's `SendSideBandwidthEstimation` caps the same way);
//! [`GccDraftConfig::loss_based_capped_by_delay_based`](super::GccDraftConfig) turns that off.

use rtcbench_units::Bitrate;

/// Below this fraction lost, increase (§6).
pub const LOSS_LOW: f64 = 0.02;
/// Above this fraction lost, decrease (§6).
pub const LOSS_HIGH: f64 = 0.10;
/// Factor per report below [`LOSS_LOW`] (§6).
pub const LOSS_INCREASE_FACTOR: f64 = 1.05;
/// `As_hat * (1 - 0.5 p)` above [`LOSS_HIGH`] (§6).
pub const LOSS_DECREASE_GAIN: f64 = 0.5;

/// Parameters of the loss-based controller (§6).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LossBasedParams {
    pub loss_low: f64,
    pub loss_high: f64,
    pub increase_factor: f64,
    pub decrease_gain: f64,
    pub min_rate: Bitrate,
    pub max_rate: Bitrate,
}

/// What the last report did to As_hat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LossAction {
    Increase,
    Hold,
    Decrease,
}

/// The loss-based controller of §6.
#[derive(Clone, Debug)]
pub struct LossBasedController {
    params: LossBasedParams,
    /// As_hat(i).
    as_hat: Bitrate,
    /// The last p.
    last_loss: Option<f64>,
}

impl LossBasedController {
    pub fn new(params: LossBasedParams, as_hat_0: Bitrate) -> Self {
        Self { params, as_hat: as_hat_0.clamp(params.min_rate, params.max_rate), last_loss: None }
    }

    /// A report of the fraction `p` of packets lost since the previous one; `cap` is A_hat when
    /// As_hat is bounded by it. Returns what the report did.
    pub fn on_loss_report(&mut self, p: f64, cap: Option<Bitrate>) -> LossAction {
        let par = self.params;
        let p = p.clamp(0.0, 1.0);
        self.last_loss = Some(p);
        let (as_hat, action) = if p < par.loss_low {
            (self.as_hat * par.increase_factor, LossAction::Increase)
        } else if p <= par.loss_high {
            (self.as_hat, LossAction::Hold)
        } else {
            (self.as_hat * (1.0 - par.decrease_gain * p), LossAction::Decrease)
        };
        let as_hat = cap.map_or(as_hat, |a| as_hat.min(a));
        self.as_hat = as_hat.clamp(par.min_rate, par.max_rate);
        action
    }

    /// As_hat(i).
    pub fn as_hat(&self) -> Bitrate {
        self.as_hat
    }

    /// The last fraction lost reported.
    pub fn last_loss(&self) -> Option<f64> {
        self.last_loss
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn controller() -> LossBasedController {
        let params = LossBasedParams {
            loss_low: LOSS_LOW,
            loss_high: LOSS_HIGH,
            increase_factor: LOSS_INCREASE_FACTOR,
            decrease_gain: LOSS_DECREASE_GAIN,
            min_rate: Bitrate::kbps(10),
            max_rate: Bitrate::mbps(10),
        };
        LossBasedController::new(params, Bitrate::mbps(1))
    }

    #[test]
    fn thresholds() {
        let mut c = controller();
        assert_eq!(c.on_loss_report(0.0, None), LossAction::Increase);
        assert_eq!(c.as_hat(), Bitrate::kbps(1050));
        assert_eq!(c.on_loss_report(0.0199, None), LossAction::Increase);
        assert_eq!(c.as_hat(), Bitrate::bps(1_102_500));
        // 2 % and 10 % are inside "2-10 %": unchanged.
        assert_eq!(c.on_loss_report(0.02, None), LossAction::Hold);
        assert_eq!(c.on_loss_report(0.10, None), LossAction::Hold);
        assert_eq!(c.as_hat(), Bitrate::bps(1_102_500));
        // 20 %: x (1 - 0.1) = 992250.
        assert_eq!(c.on_loss_report(0.2, None), LossAction::Decrease);
        assert_eq!(c.as_hat(), Bitrate::bps(992_250));
        // 100 %: halved.
        c.on_loss_report(1.0, None);
        assert_eq!(c.as_hat(), Bitrate::bps(496_125));
        assert_eq!(c.last_loss(), Some(1.0));
    }

    #[test]
    fn capped_by_the_delay_based_estimate() {
        let mut c = controller();
        c.on_loss_report(0.0, Some(Bitrate::kbps(800)));
        assert_eq!(c.as_hat(), Bitrate::kbps(800));
        // Then a 20 % loss acts on the capped value: 720 kbit/s.
        c.on_loss_report(0.2, Some(Bitrate::mbps(5)));
        assert_eq!(c.as_hat(), Bitrate::kbps(720));
        // Clamped to the configured range.
        for _ in 0..100 {
            c.on_loss_report(0.0, None);
        }
        assert_eq!(c.as_hat(), Bitrate::mbps(10));
    }
}
