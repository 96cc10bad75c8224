//! How a built-in controller is built for a call, and which per-packet feedback its receiver
//! must send: one place, so the simulator and a live agent build the same controller from the
//! same scenario.

use rtcbench_units::{Bitrate, Duration, Instant};

use crate::feedback::Ecn;
use crate::fixed::FixedRate;
use crate::gcc::{GccConfig, GoogCc};
use crate::gcc_draft::{Deployment, GccDraft, GccDraftConfig};
use crate::learned::{FollowEstimate, LearnedPolicy};
use crate::nada::{Nada, NadaConfig};
use crate::scream::{Scream, ScreamConfig};
use crate::scream2::{Scream2, Scream2Config};
use crate::{AnyController, ControllerKind};

/// Transport-wide feedback interval when the scenario does not set one (libwebrtc adapts it
/// within 50-250 ms).
pub const DEFAULT_TWCC_INTERVAL: Duration = Duration::from_millis(50);
/// RFC 8888 feedback interval for a user-defined controller that asks for it: as often as
/// transport-wide feedback by default.
pub const USER_CCFB_INTERVAL: Duration = DEFAULT_TWCC_INTERVAL;
/// RFC 8888 feedback interval for NADA: RFC 8698 §4.1's feedback interval DELTA = 100 ms.
pub const NADA_CCFB_INTERVAL: Duration = Duration::from_millis(100);
/// RFC 8888 feedback interval for SCReAM: RFC 8298 needs frequent feedback (its window is
/// self-clocked); about every frame pair at 30 fps, as the reference implementation's default.
pub const SCREAM_CCFB_INTERVAL: Duration = Duration::from_millis(20);
/// RFC 8888 feedback interval for SCReAM v2. draft-ietf-ccwg-rfc8298bis-screamv2-01 §5 asks for
/// feedback when more than 16 data units arrived since the last, on a frame's last data unit,
/// and at least every 40 ms. rtcbench's generator is interval-based; 20 ms meets all three for
/// its media: at 30 frames/s every frame is acknowledged, 40 ms is never exceeded, and 16 data
/// units per 20 ms is 800 per second, about 7.7 Mbit/s of 1200-byte packets, above every rate
/// the built-in scenarios' calls reach.
pub const SCREAM2_CCFB_INTERVAL: Duration = Duration::from_millis(20);

/// The controller options a scenario may set (its `[controller]` table), in this crate's terms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ControllerOptions {
    /// Where draft-ietf-rmcat-gcc-02's delay-based controller runs.
    pub gcc_draft_deployment: Deployment,
    /// RFC 8298 §4.1.2.3's competing-flows compensation; `None` keeps SCReAM's default.
    pub scream_competing_flows_compensation: Option<bool>,
    /// The ECN codepoint the call's media carries: `scream2` runs its L4S response with ECT(1),
    /// the classic-ECN one with ECT(0), and only the loss and delay responses with Not-ECT.
    pub ecn: Ecn,
}

impl ControllerOptions {
    /// The draft-ietf-rmcat-gcc-02 configuration these options ask for.
    pub fn gcc_draft_config(&self) -> GccDraftConfig {
        GccDraftConfig { deployment: self.gcc_draft_deployment, ..GccDraftConfig::default() }
    }
}

/// A call's rate limits, totals over its streams, as libwebrtc passes them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateLimits {
    pub min: Bitrate,
    pub max: Bitrate,
    pub start: Bitrate,
    /// The estimate may rise above `max`, which then only bounds what the streams are allocated
    /// (`gcc` for a call with audio, as Chromium 156: `rtcbench_rtp::plan::CallPlan::run_by`);
    /// only `gcc` reads it.
    pub uncapped: bool,
}

/// Which per-packet feedback a receiver sends.
#[derive(Clone, Debug, PartialEq)]
pub enum FeedbackMode {
    /// Transport-wide feedback (draft-holmer-rmcat-transport-wide-cc-extensions-01).
    Twcc { interval: Duration },
    /// RFC 8888 congestion control feedback.
    Ccfb { interval: Duration },
    /// draft-ietf-rmcat-gcc-02's receive-side estimator, reporting REMB.
    Remb { config: Box<GccDraftConfig>, start_rate: Bitrate },
    /// A learned policy at the receiver, reporting its estimates in REMB
    /// (`crate::learned::LearnedEstimator`).
    Learned(LearnedPolicy),
}

/// The feedback intervals a scenario may set (`None`: the controller's default).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FeedbackIntervals {
    pub twcc: Option<Duration>,
    pub ccfb: Option<Duration>,
}

impl FeedbackIntervals {
    /// Transport-wide feedback at the set interval or libwebrtc's default.
    pub fn twcc(&self) -> FeedbackMode {
        FeedbackMode::Twcc { interval: self.twcc.unwrap_or(DEFAULT_TWCC_INTERVAL) }
    }

    /// RFC 8888 feedback at the set interval or `default`.
    pub fn ccfb(&self, default: Duration) -> FeedbackMode {
        FeedbackMode::Ccfb { interval: self.ccfb.unwrap_or(default) }
    }
}

/// The feedback a built-in controller needs: REMB for GCC-02 deployed receive-side, RFC 8888
/// for NADA and SCReAM, transport-wide feedback for the rest.
pub fn feedback_mode(
    kind: ControllerKind,
    options: &ControllerOptions,
    intervals: FeedbackIntervals,
    start_rate: Bitrate,
) -> FeedbackMode {
    match kind {
        ControllerKind::GccDraft if options.gcc_draft_deployment == Deployment::ReceiveSide => {
            FeedbackMode::Remb { config: Box::new(options.gcc_draft_config()), start_rate }
        }
        ControllerKind::Nada => intervals.ccfb(NADA_CCFB_INTERVAL),
        ControllerKind::Scream => intervals.ccfb(SCREAM_CCFB_INTERVAL),
        ControllerKind::Scream2 => intervals.ccfb(SCREAM2_CCFB_INTERVAL),
        _ => intervals.twcc(),
    }
}

/// The sender of a call whose receiver runs a learned policy: it follows the policy's REMB
/// within `limits`.
pub fn follow_estimate(RateLimits { min, max, start, .. }: RateLimits) -> AnyController {
    AnyController::Learned(Box::new(FollowEstimate::new(min, max, start)))
}

/// Builds the controller a call's sender runs, with the call's rate limits and priority weight
/// (RFC 8867 §6.1), which only NADA defines (RFC 8698 PRIO); the other controllers have no
/// notion of a weight and ignore it.
pub fn build(
    kind: ControllerKind,
    options: &ControllerOptions,
    priority: f64,
    RateLimits { min, max, start, uncapped }: RateLimits,
    now: Instant,
) -> AnyController {
    match kind {
        ControllerKind::Gcc => AnyController::Gcc(Box::new(GoogCc::new(
            GccConfig { min_rate: min, max_rate: max, start_rate: start, capped: !uncapped },
            now,
        ))),
        ControllerKind::GccDraft => {
            AnyController::GccDraft(Box::new(GccDraft::new(options.gcc_draft_config(), min, max, start, now)))
        }
        ControllerKind::Nada => {
            // RFC 8698 §4.1 PRIO: the call's priority weight (RFC 8867 §6.1).
            let cfg = NadaConfig { prio: priority, ..NadaConfig::default() };
            AnyController::Nada(Box::new(Nada::new(cfg, min, max, start, now)))
        }
        ControllerKind::Scream => {
            let d = ScreamConfig::default();
            let cfg = ScreamConfig {
                competing_flows_compensation: options
                    .scream_competing_flows_compensation
                    .unwrap_or(d.competing_flows_compensation),
                ..d
            };
            AnyController::Scream(Box::new(Scream::new(cfg, min, max, start, now)))
        }
        ControllerKind::Scream2 => {
            // The call's codepoint selects the congestion responses (draft §4.2.1).
            let cfg = Scream2Config::for_codepoint(options.ecn);
            AnyController::Scream2(Box::new(Scream2::new(cfg, min, max, start, now)))
        }
        _ => AnyController::Fixed(FixedRate::new(start)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_controller_gets_the_feedback_its_spec_needs() {
        let defaults = ControllerOptions::default();
        let none = FeedbackIntervals::default();
        let start = Bitrate::kbps(300);
        let mode = |kind, options: &ControllerOptions| feedback_mode(kind, options, none, start);
        assert_eq!(
            mode(ControllerKind::Gcc, &defaults),
            FeedbackMode::Twcc { interval: DEFAULT_TWCC_INTERVAL }
        );
        assert_eq!(
            mode(ControllerKind::Nada, &defaults),
            FeedbackMode::Ccfb { interval: NADA_CCFB_INTERVAL }
        );
        assert_eq!(
            mode(ControllerKind::Scream, &defaults),
            FeedbackMode::Ccfb { interval: SCREAM_CCFB_INTERVAL }
        );
        assert_eq!(
            mode(ControllerKind::Scream2, &defaults),
            FeedbackMode::Ccfb { interval: SCREAM2_CCFB_INTERVAL }
        );
        let receive_side = ControllerOptions { gcc_draft_deployment: Deployment::ReceiveSide, ..defaults };
        assert!(
            matches!(mode(ControllerKind::GccDraft, &receive_side), FeedbackMode::Remb { start_rate, .. } if start_rate == start)
        );
        let send_side = ControllerOptions { gcc_draft_deployment: Deployment::SendSide, ..defaults };
        assert!(matches!(mode(ControllerKind::GccDraft, &send_side), FeedbackMode::Twcc { .. }));
        // A scenario's interval wins over the controller's default.
        let set = FeedbackIntervals { twcc: None, ccfb: Some(Duration::from_millis(40)) };
        assert_eq!(
            feedback_mode(ControllerKind::Nada, &defaults, set, start),
            FeedbackMode::Ccfb { interval: Duration::from_millis(40) }
        );
    }

    #[test]
    fn every_kind_builds_the_controller_of_its_name() {
        let limits = RateLimits {
            min: Bitrate::kbps(150),
            max: Bitrate::mbps(3),
            start: Bitrate::kbps(300),
            uncapped: false,
        };
        for kind in ControllerKind::ALL {
            let c = build(kind, &ControllerOptions::default(), 1.0, limits, Instant::ZERO);
            let built = match c {
                AnyController::Gcc(_) => ControllerKind::Gcc,
                AnyController::GccDraft(_) => ControllerKind::GccDraft,
                AnyController::Nada(_) => ControllerKind::Nada,
                AnyController::Scream(_) => ControllerKind::Scream,
                AnyController::Scream2(_) => ControllerKind::Scream2,
                AnyController::Fixed(_) => ControllerKind::Fixed,
                AnyController::External(_) | AnyController::Learned(_) | AnyController::User(_) => {
                    unreachable!("not built by kind")
                }
            };
            assert_eq!(built, kind, "{}", kind.name());
        }
    }

    #[test]
    fn the_calls_codepoint_selects_scream2s_mode() {
        let limits = RateLimits {
            min: Bitrate::kbps(150),
            max: Bitrate::mbps(3),
            start: Bitrate::kbps(300),
            uncapped: false,
        };
        let mode_for = |ecn| {
            let options = ControllerOptions { ecn, ..ControllerOptions::default() };
            match build(ControllerKind::Scream2, &options, 1.0, limits, Instant::ZERO) {
                AnyController::Scream2(s) => s.config().mode,
                _ => unreachable!("scream2 builds Scream2"),
            }
        };
        use crate::scream2::Mode;
        assert_eq!(mode_for(Ecn::Ect1), Mode::L4s);
        assert_eq!(mode_for(Ecn::Ect0), Mode::ClassicEcn);
        assert_eq!(mode_for(Ecn::NotEct), Mode::Delay);
    }
}
