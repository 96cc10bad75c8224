//! `scream`: Self-Clocked Rate Adaptation for Multimedia, version 1 (RFC 8298), implemented
//! here from the RFC text (checked in draft-ietf-rmcat-scream-cc-13, the approved text).
//!
//! The three parts of the SCReAM sender (RFC 8298 §3, Figure 1) map to modules:
//!
//! | RFC 8298 | module |
//! |---|---|
//! | §4.1.1 constants and state | [`config`] |
//! | §4.1.2 network congestion control: qdelay, cwnd, loss/ECN, send window, pacing | [`network_cc`] |
//! | §4.1.2.3 competing-flow compensation (qdelay_target adaptation) | [`competing_flows`] |
//! | §4.1.3 media rate control | [`media_rate`] |
//!
//! [`Scream`] ties them to the [`Controller`] trait: `on_packet_sent` feeds the list of
//! transmitted packets, `on_feedback` (per-packet results, e.g. from RFC 8888) drives
//! `on acknowledgement` / `on congestion event`, `on_send_queue` reports the RTP queue, and
//! `on_timeout` runs the 50 ms qdelay sampling, the 200 ms rate measurement and adjustment, the
//! reordering-window loss timers and the feedback timeout.
//!
//! # The sender's side of the contract
//!
//! SCReAM is window-based. [`Controller::congestion_window`] returns the send-window limit of
//! §4.1.2.5 expressed as a window: `cwnd + MSS` while qdelay ≤ qdelay_target, `cwnd` otherwise.
//! The sender transmits the next packet of size `s` only if
//! `bytes_in_flight + s ≤ congestion_window()`, and no sooner than `t_pace = s·8 / pacing_rate()`
//! after the previous transmission started (§4.1.2.6). bytes_in_flight should be SCReAM's
//! (bytes sent after the highest acknowledged packet; [`Scream::bytes_in_flight`]).
//! See `docs/controllers/scream.md`.

pub mod competing_flows;
pub mod config;
pub mod media_rate;
pub mod network_cc;

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

pub use config::ScreamConfig;
use media_rate::{MediaRateControl, NetworkState};
use network_cc::{NetworkCongestionControl, NetworkOutcome};

use crate::controller::{Controller, ControllerMetrics, Metric};
use crate::feedback::{FeedbackReport, SentPacket};

/// The `scream` controller (RFC 8298, SCReAM v1).
#[derive(Clone, Debug)]
pub struct Scream {
    cfg: ScreamConfig,
    net: NetworkCongestionControl,
    media: MediaRateControl,
}

impl Scream {
    /// A controller whose life starts at `now`. The target bitrate starts at `start_rate`
    /// clamped to `[min_rate, max_rate]` (TARGET_BITRATE_MIN / MAX), cwnd at MIN_CWND, in fast
    /// increase (§4.1.1.2).
    pub fn new(
        cfg: ScreamConfig,
        min_rate: Bitrate,
        max_rate: Bitrate,
        start_rate: Bitrate,
        now: Instant,
    ) -> Self {
        Self {
            cfg,
            net: NetworkCongestionControl::new(&cfg, now),
            media: MediaRateControl::new(&cfg, min_rate, max_rate, start_rate, now),
        }
    }

    pub fn config(&self) -> &ScreamConfig {
        &self.cfg
    }
    /// The network congestion control (cwnd, qdelay, …).
    pub fn network(&self) -> &NetworkCongestionControl {
        &self.net
    }
    /// The media rate controller (target bitrate, measured rates).
    pub fn media(&self) -> &MediaRateControl {
        &self.media
    }
    /// bytes_in_flight (§4.1.2).
    pub fn bytes_in_flight(&self) -> DataSize {
        self.net.bytes_in_flight()
    }
    /// send_wnd (§4.1.2.5): how many more bytes may be sent now.
    pub fn send_window(&self) -> DataSize {
        self.net.send_window()
    }
    /// t_pace (§4.1.2.6) for a packet of `rtp_size`.
    pub fn t_pace(&self, rtp_size: DataSize) -> Duration {
        network_cc::t_pace(rtp_size, self.pacing())
    }

    fn pacing(&self) -> Bitrate {
        self.net.pace_bitrate(self.media.target_bitrate())
    }

    fn network_state(&self) -> NetworkState {
        NetworkState {
            in_fast_increase: self.net.in_fast_increase(),
            qdelay_trend: self.net.qdelay_trend(),
            qdelay_trend_mem: self.net.qdelay_trend_mem(),
        }
    }

    fn apply(&mut self, now: Instant, out: NetworkOutcome) {
        self.media.on_bytes_acked(out.bytes_received);
        if let Some(event) = out.congestion {
            self.media.on_congestion_event(now, event);
        } else if out.exited_fast_increase {
            self.media.on_congestion_detected();
        }
    }
}

impl Controller for Scream {
    fn on_packet_sent(&mut self, now: Instant, pkt: &SentPacket) {
        self.net.on_packet_sent(now, pkt.seq, pkt.size, pkt.sent_at);
        self.media.on_packet_sent(pkt.size);
    }

    fn on_feedback(&mut self, now: Instant, report: &FeedbackReport) {
        let out = self.net.on_feedback(now, report);
        self.apply(now, out);
    }

    fn on_send_queue(&mut self, now: Instant, bytes: DataSize, delay: Duration) {
        self.media.on_send_queue(now, bytes, delay);
    }

    fn on_timeout(&mut self, now: Instant) {
        let out = self.net.on_timeout(now);
        self.apply(now, out);
        let state = self.network_state();
        self.media.on_timeout(now, &state);
    }

    fn poll_timeout(&self) -> Option<Instant> {
        Some(self.net.poll_timeout().min(self.media.poll_timeout()))
    }

    /// target_bitrate (§4.1.3); like the RFC's, it includes RTP overhead (§5).
    fn target_rate(&self) -> Bitrate {
        self.media.target_bitrate()
    }

    /// pace_bitrate (§4.1.2.6) with [`ScreamConfig::pace_headroom`].
    fn pacing_rate(&self) -> Option<Bitrate> {
        Some(self.pacing())
    }

    /// The send-window limit: bytes_in_flight + send_wnd (§4.1.2.5). Send a packet of size `s`
    /// only if `bytes_in_flight + s ≤` this.
    fn congestion_window(&self) -> Option<DataSize> {
        Some(self.net.send_window_limit())
    }

    fn metrics(&self) -> ControllerMetrics {
        let rates = self.media.rates();
        ControllerMetrics::new()
            .with("cwnd", Metric::Size(Some(self.net.cwnd())))
            .with("bytes_in_flight", Metric::Size(Some(self.net.bytes_in_flight())))
            .with("qdelay", Metric::Time(self.net.qdelay()))
            .with("qdelay_target", Metric::Time(Some(self.net.qdelay_target())))
            .with("base_delay", Metric::Time(self.net.base_delay()))
            .with("srtt", Metric::Time(self.net.s_rtt()))
            .with("media_rate", Metric::Rate(Some(self.media.target_bitrate())))
            .with("pacing", Metric::Rate(Some(self.pacing())))
            .with("rtp_qdelay", Metric::Time(self.media.rtp_queue_delay().filter(|d| *d < Duration::MAX)))
            .with("state", Metric::State(self.net.state().name()))
            .with("qdelay_trend", Metric::Real(Some(self.net.qdelay_trend())))
            .with("qdelay_trend_mem", Metric::Real(Some(self.net.qdelay_trend_mem())))
            .with("send_window", Metric::Size(Some(self.net.send_window())))
            .with("rate_transmit", Metric::Rate(Some(rates.rate_transmit)))
            .with("rate_ack", Metric::Rate(Some(rates.rate_ack)))
            .with("rate_media", Metric::Rate(Some(rates.rate_media)))
            .with("target_bitrate_last_max", Metric::Rate(Some(self.media.target_bitrate_last_max())))
            .with("loss_event_rate", Metric::Real(Some(self.net.loss_event_rate())))
            .with("reorder_window", Metric::Time(Some(self.net.reorder_window())))
    }
}

#[cfg(test)]
mod tests;
