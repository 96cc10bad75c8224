//! The delay-based controller of draft-ietf-rmcat-gcc-02 §5 as one block: pre-filter (§5.2) →
//! arrival-time filter (§5.3) → over-use detector (§5.4) → rate control (§5.5), plus the
//! incoming-rate measurement R_hat. The receive-side deployment runs it at the receiver
//! ([`RembEstimator`](super::RembEstimator)); the send-side deployment runs it at the sender on
//! transport-wide feedback ([`GccDraft`](super::GccDraft)).
//!
//! # When the rate control runs
//!
//! §5.5 assumes the rate control "is executed periodically and that this period is constant" and
//! recommends running it "at least once every response_time interval" (RTT + 100 ms), and says
//! that "as soon as over-use has been detected, the available bandwidth estimated by the
//! delay-based controller is decreased". So it runs
//!
//! * every `rate_control_interval` (100 ms by default: no longer than the shortest possible
//!   response time, whatever the RTT) on a fixed grid, with the latest detector signal, and
//! * at once for every group on which the detector signals over-use.
//!
//! Running it on every group instead would make the additive increase cadence-dependent: its
//! 1000 bit/s floor per update would add 200 kbit/s per second at one group per 5 ms.

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

use super::arrival_filter::ArrivalFilter;
use super::overuse_detector::{OveruseDetector, Signal};
use super::pre_filter::PreFilter;
use super::rate_control::{AimdRateControl, IncomingRate, IncreaseMode, RateControlState};
use super::GccDraftConfig;
use crate::controller::{ControllerMetrics, Metric};

/// The chain of §5 from packets to A_hat.
#[derive(Clone, Debug)]
pub struct DelayBasedController {
    pre_filter: PreFilter,
    arrival_filter: ArrivalFilter,
    detector: OveruseDetector,
    rate_control: AimdRateControl,
    incoming: IncomingRate,
    /// RTT used for response_time (§5.5).
    rtt: Duration,
    interval: Duration,
    next_update: Instant,
    /// True when arrival times are on the clock of `now` (at the receiver): R_hat's window then
    /// ends at `now`. At the sender, arrivals are the receiver's clock mapped onto the sender's
    /// timeline and the window ends at the latest arrival reported.
    arrivals_on_local_clock: bool,
    latest_arrival: Option<Instant>,
    /// R_hat at the last rate-control run.
    r_hat: Option<Bitrate>,
    groups: u64,
}

impl DelayBasedController {
    pub fn new(
        cfg: &GccDraftConfig,
        start_rate: Bitrate,
        min_rate: Bitrate,
        max_rate: Bitrate,
        now: Instant,
        arrivals_on_local_clock: bool,
    ) -> Self {
        Self {
            pre_filter: PreFilter::new(cfg.burst_time, cfg.max_burst_duration),
            arrival_filter: ArrivalFilter::new(cfg.arrival_filter_params()),
            detector: OveruseDetector::new(cfg.threshold_params(), cfg.overuse_time_th, cfg.detector_input),
            rate_control: AimdRateControl::new(cfg.aimd_params(min_rate, max_rate), start_rate, now),
            incoming: IncomingRate::new(cfg.incoming_rate_window),
            rtt: cfg.default_rtt,
            interval: cfg.rate_control_interval,
            next_update: now + cfg.rate_control_interval,
            arrivals_on_local_clock,
            latest_arrival: None,
            r_hat: None,
            groups: 0,
        }
    }

    /// A packet sent at `departure` arrived at `arrival`. Returns the detector's signal if the
    /// packet completed a group; on over-use the rate control has already run.
    pub fn on_packet(
        &mut self,
        now: Instant,
        departure: Instant,
        arrival: Instant,
        size: DataSize,
    ) -> Option<Signal> {
        self.incoming.on_packet(arrival, size);
        self.latest_arrival = Some(self.latest_arrival.map_or(arrival, |t| t.max(arrival)));
        let delta = self.pre_filter.on_packet(departure, arrival, size)?;
        self.groups += 1;
        let m_hat = self.arrival_filter.update(delta.d, delta.inter_departure);
        let signal = self.detector.update(m_hat, delta.arrival);
        if signal == Signal::Overuse {
            self.run_rate_control(now);
        }
        Some(signal)
    }

    /// Runs the periodic rate control if it is due.
    pub fn on_timeout(&mut self, now: Instant) {
        if now < self.next_update {
            return;
        }
        self.run_rate_control(now);
        while self.next_update <= now {
            self.next_update += self.interval;
        }
    }

    /// When the periodic rate control is next due.
    pub fn next_update(&self) -> Instant {
        self.next_update
    }

    pub fn set_rtt(&mut self, rtt: Duration) {
        self.rtt = rtt;
    }

    fn run_rate_control(&mut self, now: Instant) {
        let window_end = if self.arrivals_on_local_clock { Some(now) } else { self.latest_arrival };
        self.r_hat = window_end.and_then(|end| self.incoming.rate(end));
        self.rate_control.update(now, self.detector.signal(), self.r_hat, self.rtt);
    }

    /// A_hat, the delay-based estimate.
    pub fn a_hat(&self) -> Bitrate {
        self.rate_control.a_hat()
    }

    /// R_hat at the last rate-control run.
    pub fn r_hat(&self) -> Option<Bitrate> {
        self.r_hat
    }

    pub fn state(&self) -> RateControlState {
        self.rate_control.state()
    }

    pub fn signal(&self) -> Signal {
        self.detector.signal()
    }

    pub fn increase_mode(&self) -> IncreaseMode {
        self.rate_control.increase_mode()
    }

    /// m_hat(i) from the arrival-time filter (ms).
    pub fn m_hat_ms(&self) -> f64 {
        self.arrival_filter.m_hat_ms()
    }

    /// The value the detector compared with the threshold (ms).
    pub fn compared_m_ms(&self) -> f64 {
        self.detector.compared_m_ms()
    }

    /// del_var_th (ms).
    pub fn del_var_th_ms(&self) -> f64 {
        self.detector.del_var_th_ms()
    }

    /// Groups completed so far.
    pub fn groups(&self) -> u64 {
        self.groups
    }

    pub fn rtt(&self) -> Duration {
        self.rtt
    }

    /// The chain's metrics (see `docs/controllers/gcc-draft.md`); `None` / "n/a" without a chain.
    pub(crate) fn metrics(chain: Option<&Self>, m: ControllerMetrics) -> ControllerMetrics {
        let ms = |v: f64| Metric::Time(Some(Duration::from_millis_f64(v)));
        match chain {
            Some(c) => m
                .with("delay_based", Metric::Rate(Some(c.a_hat())))
                .with("incoming", Metric::Rate(c.r_hat))
                .with("m", ms(c.m_hat_ms()))
                .with("m_detector", ms(c.compared_m_ms()))
                .with("threshold", ms(c.del_var_th_ms()))
                .with("kalman_gain", Metric::Real(Some(c.arrival_filter.gain())))
                .with("state", Metric::State(c.state().name()))
                .with("signal", Metric::State(c.signal().name()))
                .with("increase_mode", Metric::State(c.increase_mode().name()))
                .with("avg_max", Metric::Rate(c.rate_control.stats().average())),
            None => m
                .with("delay_based", Metric::Rate(None))
                .with("incoming", Metric::Rate(None))
                .with("m", Metric::Time(None))
                .with("m_detector", Metric::Time(None))
                .with("threshold", Metric::Time(None))
                .with("kalman_gain", Metric::Real(None))
                .with("state", Metric::State(NOT_APPLICABLE))
                .with("signal", Metric::State(NOT_APPLICABLE))
                .with("increase_mode", Metric::State(NOT_APPLICABLE))
                .with("avg_max", Metric::Rate(None)),
        }
    }
}

/// The value of a state metric that does not apply to a deployment.
pub const NOT_APPLICABLE: &str = "n/a";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periodic_rate_control_on_a_fixed_grid() {
        let cfg = GccDraftConfig::default();
        let t0 = Instant::from_millis(0);
        let mut c =
            DelayBasedController::new(&cfg, Bitrate::mbps(1), Bitrate::kbps(10), Bitrate::mbps(10), t0, true);
        assert_eq!(c.next_update(), Instant::from_millis(100));
        c.on_timeout(Instant::from_millis(50));
        assert_eq!(c.a_hat(), Bitrate::mbps(1), "not due yet");
        c.on_timeout(Instant::from_millis(130));
        assert_eq!(c.next_update(), Instant::from_millis(200));
        // No packets, no R_hat: multiplicative increase over the 130 ms since the start.
        assert_eq!(c.a_hat(), Bitrate::mbps(1) * 1.08f64.powf(0.13));
        c.on_timeout(Instant::from_millis(1000));
        assert_eq!(c.next_update(), Instant::from_millis(1100));
    }
}
