//! The sender of a call whose rate a receiver-side estimator decides (a learned policy,
//! [`super::LearnedEstimator`]): its target is the latest REMB, within the call's limits, and it
//! adds no congestion control of its own, so what is measured is the policy's. Until the first
//! REMB it sends at the start rate. Paced as libwebrtc paces (2.5 × the target).

use rtcbench_units::{Bitrate, Instant};

use crate::controller::{Controller, ControllerMetrics, Metric};
use crate::feedback::{FeedbackReport, SentPacket};

#[derive(Clone, Debug)]
pub struct FollowEstimate {
    min: Bitrate,
    max: Bitrate,
    target: Bitrate,
    /// The latest REMB, before the limits.
    remb: Option<Bitrate>,
}

impl FollowEstimate {
    pub fn new(min: Bitrate, max: Bitrate, start: Bitrate) -> Self {
        Self { min, max, target: start.clamp(min, max), remb: None }
    }
}

impl Controller for FollowEstimate {
    fn on_packet_sent(&mut self, _now: Instant, _pkt: &SentPacket) {}

    fn on_feedback(&mut self, _now: Instant, report: &FeedbackReport) {
        if let Some(remb) = report.remb {
            self.remb = Some(remb);
            self.target = remb.clamp(self.min, self.max);
        }
    }

    fn on_timeout(&mut self, _now: Instant) {}

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    fn target_rate(&self) -> Bitrate {
        self.target
    }

    fn pacing_rate(&self) -> Option<Bitrate> {
        Some(self.target * 2.5)
    }

    fn metrics(&self) -> ControllerMetrics {
        ControllerMetrics::new().with("remb", Metric::Rate(self.remb))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_is_the_latest_remb_within_the_limits() {
        let mut c = FollowEstimate::new(Bitrate::kbps(100), Bitrate::mbps(2), Bitrate::kbps(300));
        assert_eq!(c.target_rate(), Bitrate::kbps(300));
        let remb = |r| FeedbackReport { remb: Some(r), ..FeedbackReport::default() };
        for (sent, want) in [
            (Bitrate::kbps(800), Bitrate::kbps(800)),
            (Bitrate::kbps(5), Bitrate::kbps(100)),
            (Bitrate::mbps(9), Bitrate::mbps(2)),
        ] {
            c.on_feedback(Instant::ZERO, &remb(sent));
            assert_eq!(c.target_rate(), want);
        }
        // Feedback without a REMB changes nothing.
        c.on_feedback(Instant::ZERO, &FeedbackReport::default());
        assert_eq!(c.target_rate(), Bitrate::mbps(2));
        assert_eq!(c.pacing_rate(), Some(Bitrate::mbps(5)));
    }
}
