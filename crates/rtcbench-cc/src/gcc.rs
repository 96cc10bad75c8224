//! `gcc`: libwebrtc's GoogCC (send-side Google Congestion Control) through the `goog_cc` crate,
//! a direct port of `modules/congestion_controller/goog_cc` (webrtc da2a3d6c4d, 2024-12-09).
//!
//! This module is only an adapter: it converts rtcbench units and the [`crate::feedback`]
//! vocabulary to the port's `NetworkControllerInterface` messages and back, and drives the
//! controller's 25 ms process interval (`GoogCcNetworkControllerFactory::GetProcessInterval`).
//! Field trials are the port's defaults, but for the congestion-window pushback, which runs here
//! ([`pushback`]) instead of in the port, and for the loss-based estimator, which is given the
//! defaults Chromium 156 runs with ([`chromium_loss_based_bwe`]). What the port keeps private (the delay-based and
//! loss-based estimates) cannot be traced; what its updates carry is (see
//! `docs/controllers/gcc.md`).

pub mod pushback;

use goog_cc::experiments::FieldTrials;
use goog_cc::network_control::{NetworkControllerConfig, NetworkControllerInterface};
use goog_cc::transport::{
    EcnMarking, NetworkAvailability, NetworkControlUpdate, PacedPacketInfo, PacketResult as GPacketResult,
    ProcessInterval, RemoteBitrateReport, RoundTripTimeUpdate, SentPacket as GSentPacket, StreamsConfig,
    TargetRateConstraints, TransportLossReport, TransportPacketsFeedback,
};
use goog_cc::units::{DataRate, DataSize as GDataSize, TimeDelta, Timestamp};
use goog_cc::LossBasedBweV2Config;
use goog_cc::{GoogCcConfig, GoogCcNetworkController};
use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

use crate::controller::{Controller, ControllerMetrics, Metric};
use crate::feedback::{Ecn, FeedbackReport, PacketResult, ProbeCluster, ProbeInfo, SentPacket};
use pushback::Pushback;

/// GoogCC's process interval (libwebrtc `GoogCcNetworkControllerFactory::GetProcessInterval`).
pub const PROCESS_INTERVAL: Duration = Duration::from_millis(25);

/// libwebrtc's scenario tests start their clock far from zero; some GoogCC code treats small
/// timestamps specially (e.g. `Timestamp::Zero()` as "unset"), so our time 0 maps to this.
const EPOCH: Duration = Duration::from_secs(100_000);

/// `LossBasedBweV2`'s configuration as Chromium 156 runs it. libwebrtc changed eleven of its
/// defaults on 2025-05-20 (webrtc commit 068e6ba696, "Update new default loss based configs"),
/// after the revision the `goog_cc` crate ports, and kept them through the newest libwebrtc
/// available here (2026-07). Every other parameter is the same in both, so the rest stays the
/// crate's. What each one does is in docs/controllers/gcc.md ("The loss-based estimator").
pub fn chromium_loss_based_bwe() -> LossBasedBweV2Config {
    LossBasedBweV2Config {
        // A ramp-up is bounded by 1.5 × the acknowledged rate, 1.2 × after a hold
        // (crate: unbounded, 10⁶).
        bw_rampup_upper_bound_factor: 1.5,
        bw_rampup_upper_bound_in_hold_factor: 1.2,
        // Loss above which the higher of the candidate rates stops being preferred (crate: 0.15).
        loss_threshold_of_high_bandwidth_preference: 0.2,
        // The bandwidth terms of the inherent-loss and instant upper bounds (crate: 75 kbit/s).
        inherent_loss_upper_bound_bw_balance: DataRate::from_kilobits_per_sec(100),
        instant_upper_bound_bw_balance: DataRate::from_kilobits_per_sec(100),
        // Observations the loss rate is averaged over (crate: 20).
        observation_window_size: 15,
        // The estimator may limit the rate before the delay-based estimate first settles.
        use_in_start_phase: true,
        // The estimate never falls below the acknowledged rate (crate: no floor).
        lower_bound_by_acked_rate_factor: 1.0,
        // After a loss-limited decrease the estimate holds, for twice as long at each repeat.
        hold_duration_factor: 2.0,
        // Loss is counted in bytes, not packets.
        use_byte_loss_rate: true,
        // The estimator may ask for padding for 2 s to test a rate above the acknowledged one.
        padding_duration: TimeDelta::from_seconds(2),
        // The chosen candidate is bounded by the upper bounds.
        bound_best_candidate: true,
        ..LossBasedBweV2Config::default()
    }
}

/// Rate limits given to GoogCC as its `TargetRateConstraints` and stream configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GccConfig {
    /// GoogCC's floor, and the least the streams can be allocated.
    pub min_rate: Bitrate,
    /// The most the streams can be allocated (libwebrtc's `max_total_allocated_bitrate`, whose
    /// double bounds GoogCC's probes), and, if `capped`, the ceiling of its estimate.
    pub max_rate: Bitrate,
    pub start_rate: Bitrate,
    /// The transport has a maximum (libwebrtc's `BitrateConstraints::max_bitrate_bps`), as a page's
    /// `x-google-max-bitrate` sets it. Without one the estimate rises above `max_rate`: asked for
    /// 1 Mbit/s of video on a 10 Mbit/s path in a call with audio, Chromium 156's held
    /// 2.1-2.3 Mbit/s while its encoder stayed at 1 (docs/calibration.md, "The scenario's
    /// minimum and maximum in Chromium").
    pub capped: bool,
}

/// The `gcc` controller.
pub struct GoogCc {
    inner: GoogCcNetworkController,
    next_process: Instant,
    target: Bitrate,
    stable_target: Bitrate,
    pacing: Bitrate,
    padding: Bitrate,
    rtt: Option<Duration>,
    loss_ratio: f64,
    cwnd_reduce_ratio: f64,
    last_probe: Option<Bitrate>,
    /// Probe clusters GoogCC has asked for so far: a decision the crate shows (its probes'
    /// results and its delay-based estimate it keeps private).
    probe_clusters: u32,
    probes: std::collections::VecDeque<ProbeCluster>,
    last_loss_report: Option<Instant>,
    /// Bytes in flight as last reported to GoogCC (by a sent packet or a feedback).
    in_flight: DataSize,
    pushback: Pushback,
    /// GoogCC's floor (`SendSideBandwidthEstimation::GetMinBitrate`): the configured minimum,
    /// at least libwebrtc's 5 kbit/s.
    min_rate: Bitrate,
}

/// libwebrtc's lowest target (`congestion_controller::GetMinBitrate`).
const MIN_TARGET: Bitrate = Bitrate::bps(5_000);

fn ts(t: Instant) -> Timestamp {
    Timestamp::from_micros((t + EPOCH).as_micros())
}

fn rate(r: Bitrate) -> DataRate {
    DataRate::from_bits_per_sec(r.as_bps() as i64)
}

fn from_rate(r: DataRate) -> Option<Bitrate> {
    r.is_finite().then(|| Bitrate::bps(r.bps().max(0) as u64))
}

fn size(s: DataSize) -> GDataSize {
    GDataSize::from_bytes(s.as_bytes() as i64)
}

fn pacing_info(probe: Option<ProbeInfo>) -> PacedPacketInfo {
    probe.map_or_else(PacedPacketInfo::default, |p| {
        PacedPacketInfo::new(p.cluster_id, i64::from(p.min_probes), p.min_bytes.as_bytes() as i64)
    })
}

impl GoogCc {
    /// A controller whose life starts at `now`; the network is reported available at once, as
    /// `RtpTransportControllerSend` does when a call starts.
    pub fn new(cfg: GccConfig, now: Instant) -> Self {
        let constraints = TargetRateConstraints {
            at_time: ts(now),
            min_data_rate: Some(rate(cfg.min_rate)),
            max_data_rate: cfg.capped.then(|| rate(cfg.max_rate)),
            starting_rate: Some(rate(cfg.start_rate)),
        };
        let streams = StreamsConfig {
            at_time: ts(now),
            max_total_allocated_bitrate: Some(rate(cfg.max_rate)),
            min_total_allocated_bitrate: Some(rate(cfg.min_rate)),
            ..StreamsConfig::default()
        };
        // The port's congestion window and pushback are off (a zero `QueueSize`): `Pushback`
        // runs them, with the bytes in flight this adapter reports.
        let mut field_trials = FieldTrials::default();
        field_trials.congestion_window.queue_size_ms = 0;
        field_trials.loss_based_bwe_v2 = chromium_loss_based_bwe();
        let config = NetworkControllerConfig { field_trials, constraints, stream_based_config: streams };
        let mut this = Self {
            inner: GoogCcNetworkController::new(config, GoogCcConfig::default()),
            next_process: now,
            target: cfg.start_rate,
            stable_target: cfg.start_rate,
            pacing: cfg.start_rate * 2.5,
            padding: Bitrate::ZERO,
            rtt: None,
            loss_ratio: 0.0,
            cwnd_reduce_ratio: 0.0,
            last_probe: None,
            probe_clusters: 0,
            probes: Default::default(),
            last_loss_report: None,
            in_flight: DataSize::ZERO,
            pushback: Pushback::default(),
            min_rate: cfg.min_rate.max(MIN_TARGET),
        };
        // In Chromium the streams are configured before the transport becomes available, so the
        // initial probes are already bounded by twice the streams' maximum (`ProbeController`);
        // the port reads its initial configuration only at its first process interval, after
        // those probes are set up.
        let update = this.inner.on_streams_config(streams);
        this.apply(update);
        let update = this
            .inner
            .on_network_availability(NetworkAvailability { at_time: ts(now), network_available: true });
        this.apply(update);
        this
    }

    fn apply(&mut self, update: NetworkControlUpdate) {
        if let Some(t) = update.target_rate {
            if let Some(r) = from_rate(t.target_rate) {
                self.target = r;
            }
            if let Some(r) = from_rate(t.stable_target_rate) {
                self.stable_target = r;
            }
            let rtt = t.network_estimate.round_trip_time;
            self.rtt = rtt.is_finite().then(|| Duration::from_micros(rtt.us()));
            self.loss_ratio = f64::from(t.network_estimate.loss_rate_ratio);
        }
        if let Some(p) = update.pacer_config {
            if let Some(r) = from_rate(p.data_rate()) {
                self.pacing = r;
            }
            self.padding = from_rate(p.pad_rate()).unwrap_or(Bitrate::ZERO);
        }
        for p in update.probe_cluster_configs {
            let Some(probe_rate) = from_rate(p.target_data_rate) else { continue };
            let duration = Duration::from_micros(p.target_duration.us());
            self.last_probe = Some(probe_rate);
            self.probe_clusters += 1;
            self.probes.push_back(ProbeCluster {
                id: p.id,
                rate: probe_rate,
                min_probes: p.target_probe_count.max(0) as u32,
                min_bytes: probe_rate * duration,
            });
        }
    }

    /// One step of the pushback against the current target, as libwebrtc takes at every sent
    /// packet, feedback and process interval (`GoogCcNetworkController::MaybeTriggerOnNetworkChanged`).
    fn push_back(&mut self) {
        self.cwnd_reduce_ratio = self.pushback.reduce_ratio(self.in_flight, self.target, self.min_rate);
    }

    fn to_goog_sent(pkt: &PacketResult) -> GSentPacket {
        GSentPacket {
            send_time: ts(pkt.sent_at),
            size: size(pkt.size),
            pacing_info: pacing_info(pkt.probe),
            audio: pkt.is_audio,
            sequence_number: pkt.seq,
            ..GSentPacket::default()
        }
    }
}

impl Controller for GoogCc {
    fn on_packet_sent(&mut self, _now: Instant, pkt: &SentPacket) {
        self.in_flight = pkt.data_in_flight;
        let msg = GSentPacket {
            send_time: ts(pkt.sent_at),
            size: size(pkt.size),
            prior_unacked_data: GDataSize::zero(),
            pacing_info: pacing_info(pkt.probe),
            audio: pkt.is_audio,
            sequence_number: pkt.seq,
            data_in_flight: size(pkt.data_in_flight),
        };
        let update = self.inner.on_sent_packet(msg);
        self.apply(update);
        self.push_back();
    }

    fn on_feedback(&mut self, now: Instant, report: &FeedbackReport) {
        if let Some(rtt) = report.rtt.filter(|r| r.as_micros() > 0) {
            let update = self.inner.on_round_trip_time_update(RoundTripTimeUpdate {
                receive_time: ts(now),
                round_trip_time: TimeDelta::from_micros(rtt.as_micros()),
                smoothed: false,
            });
            self.apply(update);
        }
        if let Some(loss) = report.loss {
            let start = self.last_loss_report.unwrap_or(now);
            let update = self.inner.on_transport_loss_report(TransportLossReport {
                receive_time: ts(now),
                start_time: ts(start),
                end_time: ts(now),
                packets_lost_delta: loss.packets_lost_delta,
                packets_received_delta: loss.packets_received_delta,
            });
            self.last_loss_report = Some(now);
            self.apply(update);
        }
        if let Some(remb) = report.remb {
            let update = self.inner.on_remote_bitrate_report(RemoteBitrateReport {
                receive_time: ts(now),
                bandwidth: rate(remb),
            });
            self.apply(update);
        }
        if !report.packets.is_empty() {
            self.in_flight = report.data_in_flight;
            let packet_feedbacks = report
                .packets
                .iter()
                .map(|p| GPacketResult {
                    sent_packet: Self::to_goog_sent(p),
                    receive_time: p.arrival.map_or_else(Timestamp::plus_infinity, ts),
                    ecn: match p.ecn {
                        Ecn::NotEct => EcnMarking::NotEct,
                        Ecn::Ect1 => EcnMarking::Ect1,
                        Ecn::Ect0 => EcnMarking::Ect0,
                        Ecn::Ce => EcnMarking::Ce,
                    },
                })
                .collect();
            let msg = TransportPacketsFeedback {
                feedback_time: ts(now),
                data_in_flight: size(report.data_in_flight),
                packet_feedbacks,
                sendless_arrival_times: Vec::new(),
            };
            let update = self.inner.on_transport_packets_feedback(msg);
            self.apply(update);
            // The window follows the RTT of the packets this feedback reports received.
            if let Some(rtt) =
                report.packets.iter().filter(|p| p.arrival.is_some()).map(|p| now - p.sent_at).max()
            {
                self.pushback.on_feedback_rtt(rtt);
            }
            self.push_back();
            self.pushback.update_window(self.target);
        }
    }

    fn on_timeout(&mut self, now: Instant) {
        if now < self.next_process {
            return;
        }
        let update = self.inner.on_process_interval(ProcessInterval { at_time: ts(now), pacer_queue: None });
        self.apply(update);
        self.pushback.update_window(self.target);
        self.push_back();
        // Keep the grid of process times fixed, as libwebrtc's repeating task does.
        while self.next_process <= now {
            self.next_process += PROCESS_INTERVAL;
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        Some(self.next_process)
    }

    fn target_rate(&self) -> Bitrate {
        self.target
    }

    fn pacing_rate(&self) -> Option<Bitrate> {
        Some(self.pacing)
    }

    /// GoogCC's congestion window pushback runs in "drop frames only" mode by default: the
    /// target stays the loss/delay estimate and this ratio tells the encoder to shed rate.
    fn encoder_pushback_ratio(&self) -> f64 {
        self.cwnd_reduce_ratio
    }

    fn poll_probe(&mut self) -> Option<ProbeCluster> {
        self.probes.pop_front()
    }

    fn metrics(&self) -> ControllerMetrics {
        ControllerMetrics::new()
            .with("stable_target", Metric::Rate(Some(self.stable_target)))
            .with("padding", Metric::Rate(Some(self.padding)))
            .with("rtt", Metric::Time(self.rtt))
            .with("loss_rate", Metric::Real(Some(self.loss_ratio)))
            .with("cwnd", Metric::Size(self.pushback.window()))
            .with("in_flight", Metric::Size(Some(self.in_flight)))
            .with("cwnd_reduce_ratio", Metric::Real(Some(self.cwnd_reduce_ratio)))
            .with("last_probe", Metric::Rate(self.last_probe))
            .with("probe_clusters", Metric::Real(Some(f64::from(self.probe_clusters))))
    }
}
