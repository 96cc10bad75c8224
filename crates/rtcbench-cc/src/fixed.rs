//! A controller that holds one rate: no congestion control at all. It exists to test the
//! simulator against closed forms (a CBR flow over a link behaves as queueing theory says).

use rtcbench_units::{Bitrate, Instant};

use crate::controller::{Controller, ControllerMetrics, Metric};
use crate::feedback::{FeedbackReport, SentPacket};

/// Sends at `rate` whatever the network does.
#[derive(Clone, Debug)]
pub struct FixedRate {
    rate: Bitrate,
}

impl FixedRate {
    pub fn new(rate: Bitrate) -> Self {
        Self { rate }
    }
}

impl Controller for FixedRate {
    fn on_packet_sent(&mut self, _now: Instant, _pkt: &SentPacket) {}
    fn on_feedback(&mut self, _now: Instant, _report: &FeedbackReport) {}
    fn on_timeout(&mut self, _now: Instant) {}
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }
    fn target_rate(&self) -> Bitrate {
        self.rate
    }
    /// Paced like libwebrtc's default (2.5 × target) so frames leave in short bursts.
    fn pacing_rate(&self) -> Option<Bitrate> {
        Some(self.rate * 2.5)
    }
    fn metrics(&self) -> ControllerMetrics {
        ControllerMetrics::new().with("rate", Metric::Rate(Some(self.rate)))
    }
}
