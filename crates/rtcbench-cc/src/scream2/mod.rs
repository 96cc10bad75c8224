//! `scream2`: Self-Clocked Rate Adaptation for Multimedia version 2 (SCReAMv2), implemented
//! here from the text of draft-ietf-ccwg-rfc8298bis-screamv2-01 (CCWG, 2026-07-06).
//!
//! The three parts of the sender (§3, Figure 1) and the draft's sections map to modules:
//!
//! | draft-ietf-ccwg-rfc8298bis-screamv2-01 | module |
//! |---|---|
//! | §4.1 sender state: transmitted data units, bytes_in_flight, bytes_newly_acked | `scream`'s [`crate::scream::network_cc::SentPacketList`], shared |
//! | §4.2.1.1 lost data units (RACK-like reordering window) | the same, shared |
//! | §4.2.1.2 / §4.2.1.3 ECN-CE, classic and L4S (l4s_alpha) | [`network_cc::L4sAlpha`], [`network_cc::RefWindow::reduce`] |
//! | §4.2.1.4 queue delay: qdelay_avg, REDUCE_JITTER's ref_wnd_delay_scale | [`network_cc::QueueDelayAverage`] |
//! | §4.2.2.1 reference window reduction | [`network_cc::RefWindow::reduce`] |
//! | §4.2.2.2 reference window increase | [`network_cc::RefWindow::increase`] |
//! | §4.3.1 send window, ref_wnd_overhead | [`transmission::send_window`], [`transmission::ref_wnd_overhead`] |
//! | §4.3.2 packet pacing, relaxed pacing | [`transmission::pace_bitrate`] |
//! | §4.4 media rate control | [`media_rate::MediaRateControl`] |
//! | §4.5.4 competing-flows compensation (optional, off) | `scream`'s [`crate::scream::competing_flows`], shared |
//! | constants, the ECN mode | [`config`] |
//!
//! Not implemented, optional in §4.5: clock-drift compensation (§4.5.1), the conditional loss
//! backoff and rate-policer detection (§4.5.2), the ref_wnd undershoot remedy (§4.5.3); see
//! `docs/controllers/scream2.md` for why.
//!
//! # Modes
//!
//! The ECN codepoint the call's media carries selects the response to CE ([`config::Mode`]):
//! ECT(1) runs the L4S response (IS_L4S), ECT(0) the classic one (BETA_ECN), Not-ECT neither.
//! Loss and the delay-based response (virtual L4S marking) are always on.
//!
//! # The sender's side of the contract
//!
//! [`Controller::congestion_window`] returns `ref_wnd × ref_wnd_overhead` (§4.3.1): the sender
//! transmits a data unit of size `s` only if `bytes_in_flight + s ≤` that, and paces at
//! [`Controller::pacing_rate`] (§4.3.2; `t_pace = s·8 / pacing_rate`). It reports its queue with
//! [`Controller::on_send_queue`] (media_qdelay) and each encoded frame with
//! [`Controller::on_media_frame`] (§4.4). See `docs/controllers/scream2.md`.

pub mod config;
pub mod media_rate;
pub mod network_cc;
pub mod transmission;

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

pub use config::{Mode, Scream2Config};
use media_rate::MediaRateControl;
use network_cc::NetworkCongestionControl;

use crate::controller::{Controller, ControllerMetrics, Metric};
use crate::feedback::{FeedbackReport, SentPacket};

/// The `scream2` controller (SCReAM v2, draft-ietf-ccwg-rfc8298bis-screamv2-01).
#[derive(Clone, Debug)]
pub struct Scream2 {
    cfg: Scream2Config,
    net: NetworkCongestionControl,
    media: MediaRateControl,
}

impl Scream2 {
    /// A controller whose life starts at `now`: ref_wnd = MIN_REF_WND, the target bitrate at
    /// `start_rate` clamped to `[min_rate, max_rate]` (TARGET_BITRATE_MIN / MAX) until the first
    /// RTT sample.
    pub fn new(
        cfg: Scream2Config,
        min_rate: Bitrate,
        max_rate: Bitrate,
        start_rate: Bitrate,
        now: Instant,
    ) -> Self {
        Self {
            cfg,
            net: NetworkCongestionControl::new(&cfg, now),
            media: MediaRateControl::new(&cfg, min_rate, max_rate, start_rate),
        }
    }

    pub fn config(&self) -> &Scream2Config {
        &self.cfg
    }
    /// The network congestion control (ref_wnd, l4s_alpha, qdelay, …).
    pub fn network(&self) -> &NetworkCongestionControl {
        &self.net
    }
    /// The media rate control (target bitrate, rate_adjust_factor, frame_size_dev).
    pub fn media(&self) -> &MediaRateControl {
        &self.media
    }
    pub fn bytes_in_flight(&self) -> DataSize {
        self.net.bytes_in_flight()
    }
    /// ref_wnd_overhead (§4.3.1).
    pub fn ref_wnd_overhead(&self) -> f64 {
        transmission::ref_wnd_overhead(&self.cfg, self.net.ref_wnd_delay_scale())
    }
    /// send_wnd (§4.3.1): how many more bytes may be sent now.
    pub fn send_window(&self) -> DataSize {
        transmission::send_window(self.net.ref_wnd(), self.ref_wnd_overhead(), self.net.bytes_in_flight())
    }
    /// t_pace (§4.3.2) for a data unit of `size`.
    pub fn t_pace(&self, size: DataSize) -> Duration {
        crate::scream::network_cc::t_pace(size, self.pacing())
    }

    fn pacing(&self) -> Bitrate {
        transmission::pace_bitrate(&self.cfg, self.media.target_bitrate(), self.media.target_bitrate_max())
    }
}

impl Controller for Scream2 {
    fn on_packet_sent(&mut self, now: Instant, pkt: &SentPacket) {
        self.net.on_packet_sent(now, pkt.seq, pkt.size, pkt.sent_at);
    }

    fn on_feedback(&mut self, now: Instant, report: &FeedbackReport) {
        let out = self.net.on_feedback(now, report, self.media.below_max());
        // §4.4: the target bitrate is recomputed whenever ref_wnd is updated.
        if out.ref_wnd_updated {
            self.media.update(self.net.ref_wnd(), self.net.window().ref_wnd_ratio(), self.net.s_rtt());
        }
    }

    fn on_send_queue(&mut self, _now: Instant, _bytes: DataSize, delay: Duration) {
        self.media.on_send_queue(delay);
    }

    fn on_media_frame(&mut self, now: Instant, size: DataSize) {
        self.media.on_media_frame(now, size);
    }

    fn on_timeout(&mut self, now: Instant) {
        self.net.on_timeout(now);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.net.poll_timeout()
    }

    /// target_bitrate (§4.4); it includes the packet overhead (§7).
    fn target_rate(&self) -> Bitrate {
        self.media.target_bitrate()
    }

    /// pace_bitrate (§4.3.2).
    fn pacing_rate(&self) -> Option<Bitrate> {
        Some(self.pacing())
    }

    /// No burst: "the time interval between consecutive data unit transmissions is greater than
    /// or equal to t_pace" (draft-ietf-ccwg-rfc8298bis-screamv2-01 §4.3.2). A burst of a few
    /// packets after each frame's idle spell would wait in an L4S queue past its sub-millisecond
    /// marking threshold and be marked although the link is far from full.
    fn pacing_burst(&self) -> Option<Duration> {
        Some(Duration::ZERO)
    }

    /// ref_wnd × ref_wnd_overhead (§4.3.1): send a data unit of size `s` only if
    /// `bytes_in_flight + s ≤` this.
    fn congestion_window(&self) -> Option<DataSize> {
        Some(transmission::send_window_limit(self.net.ref_wnd(), self.ref_wnd_overhead()))
    }

    fn metrics(&self) -> ControllerMetrics {
        let (max_bif, max_bif_prev) = self.net.max_bytes_in_flight();
        ControllerMetrics::new()
            .with("ref_wnd", Metric::Size(Some(self.net.ref_wnd())))
            .with("bytes_in_flight", Metric::Size(Some(self.net.bytes_in_flight())))
            .with("send_window", Metric::Size(Some(self.send_window())))
            .with("ref_wnd_overhead", Metric::Real(Some(self.ref_wnd_overhead())))
            .with("l4s_alpha", Metric::Real(Some(self.net.l4s_alpha())))
            .with("l4s_alpha_v", Metric::Real(Some(self.net.window().l4s_alpha_v())))
            .with("qdelay", Metric::Time(self.net.qdelay()))
            .with("qdelay_avg", Metric::Time(Some(self.net.qdelay_avg())))
            .with("qdelay_target", Metric::Time(Some(self.net.qdelay_target())))
            .with("base_delay", Metric::Time(self.net.base_delay()))
            .with("srtt", Metric::Time(self.net.s_rtt()))
            .with("media_rate", Metric::Rate(Some(self.media.target_bitrate())))
            .with("pacing", Metric::Rate(Some(self.pacing())))
            .with("rate_adjust_factor", Metric::Real(Some(self.media.rate_adjust_factor())))
            .with("frame_size_dev", Metric::Real(Some(self.media.frame_size_dev())))
            .with("media_qdelay", Metric::Time(Some(self.media.media_qdelay())))
            .with("ref_wnd_delay_scale", Metric::Real(Some(self.net.ref_wnd_delay_scale())))
            .with("max_bytes_in_flight", Metric::Size(Some(max_bif.max(max_bif_prev))))
            .with("mode", Metric::State(self.net.mode().name()))
            .with("ce_packets", Metric::Real(Some(self.net.ce_packets() as f64)))
            .with("lost_packets", Metric::Real(Some(self.net.lost_packets() as f64)))
    }
}

#[cfg(test)]
mod tests;
