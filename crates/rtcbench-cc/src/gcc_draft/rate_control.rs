//! The delay-based rate controller: AIMD on the detector's signal (draft-ietf-rmcat-gcc-02 §5.5).
//!
//! Three parts:
//!
//! * [`IncomingRate`]: `R_hat(i) = 1/T * sum(L(j))` over the packets received in the last T
//!   seconds;
//! * [`ConvergenceStats`]: the exponential moving average (smoothing factor 0.95) and standard
//!   deviation of `R_hat` at the times the controller was in Decrease, which decide between
//!   multiplicative and additive increase;
//! * [`AimdRateControl`]: the Increase / Decrease / Hold state machine and the rate updates:
//!
//! ```text
//! Increase, far from convergence:  eta = 1.08^min(dt/1 s, 1.0);  A_hat(i) = eta * A_hat(i-1)
//! Increase, near convergence:      response_time = rtt + 100 ms
//!                                  alpha = 0.5 * min(dt / response_time, 1.0)
//!                                  A_hat(i) = A_hat(i-1) + max(1000 bit/s, alpha * avg_packet_size_bits)
//! Increase, either:                A_hat(i) < 1.5 * R_hat(i)
//! Decrease:                        A_hat(i) = beta * R_hat(i),  beta = 0.85
//! Hold:                            A_hat(i) = A_hat(i-1)
//! ```
//!
//! Choices where GCC-02 is silent (all in `docs/controllers/gcc-draft.md`): R_hat is undefined
//! until the first window has filled and when the window holds no packet; without R_hat the
//! 1.5·R_hat bound is not applied and Decrease uses `beta * A_hat(i-1)` (libwebrtc's
//! `AimdRateControl` falls back to the current estimate the same way). One sample of R_hat enters
//! the statistics per visit to Decrease (on entry). The statistics are a standard EWMA mean and
//! variance with a floor on the variance borrowed from libwebrtc, which also sets the variance of
//! the first sample.

use std::collections::VecDeque;

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

use super::overuse_detector::Signal;
use super::GccDraftConfig;

/// T, the window of the incoming-rate measurement, §5.5 and Table 1: "[0.5, 1] s".
pub const INCOMING_RATE_WINDOW: Duration = Duration::from_millis(500);
/// beta, §5.5 and Table 1.
pub const BETA: f64 = 0.85;
/// Multiplicative increase per second at most, §5.5 (eta = 1.08^...).
pub const ETA_PER_SECOND: f64 = 1.08;
/// response_time = rtt + 100 ms, §5.5.
pub const RESPONSE_TIME_OFFSET: Duration = Duration::from_millis(100);
/// The smallest additive step, §5.5 (`max(1000, ...)`, bits added to a rate in bit/s).
pub const ADDITIVE_INCREASE_MIN: Bitrate = Bitrate::bps(1000);
/// Frame rate assumed for expected_packet_size_bits, §5.5.
pub const ASSUMED_FRAME_RATE_HZ: f64 = 30.0;
/// Packet size assumed for expected_packet_size_bits, §5.5 (1200 * 8 bits).
pub const ASSUMED_PACKET_SIZE: DataSize = DataSize::bytes(1200);
/// `A_hat(i) < 1.5 * R_hat(i)`, §5.5.
pub const MAX_RATE_OVER_INCOMING: f64 = 1.5;
/// Smoothing factor of the convergence statistics, §5.5.
pub const CONVERGENCE_SMOOTHING: f64 = 0.95;
/// "Close" is within this many standard deviations of the average, §5.5.
pub const CONVERGENCE_SIGMAS: f64 = 3.0;
/// Floor and initial value of the variance of the statistics, normalized by the average
/// (kbit/s): `sigma² >= 0.4 kbit/s * avg`. GCC-02 is silent; libwebrtc's
/// `LinkCapacityEstimator` (and the old `AimdRateControl`) use 0.4 for both.
pub const CONVERGENCE_NORMALIZED_VAR_FLOOR_KBPS: f64 = 0.4;

/// `R_hat(i)`, the incoming bitrate over the last T (§5.5).
#[derive(Clone, Debug)]
pub struct IncomingRate {
    window: Duration,
    /// (arrival, size) of packets still in the window, oldest first.
    packets: VecDeque<(Instant, DataSize)>,
    sum: DataSize,
    first_arrival: Option<Instant>,
}

impl IncomingRate {
    pub fn new(window: Duration) -> Self {
        Self { window, packets: VecDeque::new(), sum: DataSize::ZERO, first_arrival: None }
    }

    /// A packet of `size` arrived at `arrival`. Arrivals should come in order; a late one is
    /// kept until everything before it has left the window.
    pub fn on_packet(&mut self, arrival: Instant, size: DataSize) {
        self.first_arrival.get_or_insert(arrival);
        self.packets.push_back((arrival, size));
        self.sum += size;
    }

    /// R_hat over the window `(now - T, now]`; `None` until a full window has passed since the
    /// first packet, and when the window holds no packet.
    pub fn rate(&mut self, now: Instant) -> Option<Bitrate> {
        let start = now - self.window;
        while let Some(&(arrival, size)) = self.packets.front() {
            if arrival > start {
                break;
            }
            self.packets.pop_front();
            self.sum -= size;
        }
        let first = self.first_arrival?;
        if now - first < self.window || self.packets.is_empty() {
            return None;
        }
        // Packets that arrived after `now` (possible with reordered feedback) are counted: they
        // are the newest data.
        Some(self.sum / self.window)
    }
}

/// The statistics of §5.5 that tell multiplicative from additive increase: an exponential
/// moving average of R_hat sampled in Decrease, and its standard deviation.
#[derive(Clone, Debug, Default)]
pub struct ConvergenceStats {
    /// Average R_hat at decreases (bit/s); `None` when not valid.
    avg_bps: Option<f64>,
    /// Variance around it (bit/s)².
    var_bps2: f64,
}

impl ConvergenceStats {
    /// Adds `R_hat` at a decrease: `avg += (1-s) (x - avg)`, `var = s (var + (1-s) (x - avg)²)`
    /// with the smoothing factor s = 0.95 (the standard incremental EWMA of mean and variance),
    /// the variance kept above its floor.
    pub fn on_decrease(&mut self, r_hat: Bitrate, smoothing: f64, var_floor_kbps: f64) {
        let x = r_hat.as_bps_f64();
        let (avg, var) = match self.avg_bps {
            None => (x, 0.0),
            Some(avg) => {
                let diff = x - avg;
                (
                    avg + (1.0 - smoothing) * diff,
                    smoothing * (self.var_bps2 + (1.0 - smoothing) * diff * diff),
                )
            }
        };
        // sigma² >= floor [kbit/s] * avg [kbit/s], in (bit/s)².
        let floor = var_floor_kbps * (avg / 1e3) * 1e6;
        self.avg_bps = Some(avg);
        self.var_bps2 = var.max(floor);
    }

    /// Forgets the statistics (R_hat rose above them: the congestion level changed).
    pub fn reset(&mut self) {
        self.avg_bps = None;
        self.var_bps2 = 0.0;
    }

    /// The average, if valid.
    pub fn average(&self) -> Option<Bitrate> {
        self.avg_bps.map(Bitrate::from_bps_f64)
    }

    /// The standard deviation (bit/s), if valid.
    pub fn std_dev_bps(&self) -> Option<f64> {
        self.avg_bps.map(|_| self.var_bps2.sqrt())
    }
}

/// The states of §5.5.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RateControlState {
    Increase,
    Decrease,
    Hold,
}

impl RateControlState {
    /// The transition table of §5.5 (blank cells: remain in state).
    pub fn next(self, signal: Signal) -> Self {
        use RateControlState::*;
        match (signal, self) {
            (Signal::Overuse, Hold | Increase) => Decrease,
            (Signal::Overuse, Decrease) => Decrease,
            (Signal::Normal, Hold) => Increase,
            (Signal::Normal, Increase) => Increase,
            (Signal::Normal, Decrease) => Hold,
            (Signal::Underuse, Hold) => Hold,
            (Signal::Underuse, Increase | Decrease) => Hold,
        }
    }

    /// The name used in metrics.
    pub fn name(self) -> &'static str {
        match self {
            Self::Increase => "increase",
            Self::Decrease => "decrease",
            Self::Hold => "hold",
        }
    }
}

/// Multiplicative or additive increase, as chosen at the last update in Increase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IncreaseMode {
    Multiplicative,
    Additive,
}

impl IncreaseMode {
    pub fn name(self) -> &'static str {
        match self {
            Self::Multiplicative => "multiplicative",
            Self::Additive => "additive",
        }
    }
}

/// Parameters of the AIMD controller (§5.5): the §5.5 fields of the controller's configuration
/// (read through `Deref`, so they are documented once, on [`GccDraftConfig`]) and the call's
/// rate limits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AimdParams {
    pub cfg: GccDraftConfig,
    pub min_rate: Bitrate,
    pub max_rate: Bitrate,
}

impl std::ops::Deref for AimdParams {
    type Target = GccDraftConfig;
    fn deref(&self) -> &GccDraftConfig {
        &self.cfg
    }
}

/// The AIMD controller of §5.5. Call [`update`](Self::update) at least once per response time
/// and whenever the detector signals over-use.
#[derive(Clone, Debug)]
pub struct AimdRateControl {
    params: AimdParams,
    state: RateControlState,
    /// A_hat(i).
    a_hat: Bitrate,
    last_update: Instant,
    stats: ConvergenceStats,
    mode: IncreaseMode,
}

impl AimdRateControl {
    /// Starts in Increase (§5.5) at `a_hat_0`.
    pub fn new(params: AimdParams, a_hat_0: Bitrate, now: Instant) -> Self {
        Self {
            params,
            state: RateControlState::Increase,
            a_hat: a_hat_0.clamp(params.min_rate, params.max_rate),
            last_update: now,
            stats: ConvergenceStats::default(),
            mode: IncreaseMode::Multiplicative,
        }
    }

    /// One run of the rate control subsystem: the state moves on `signal`, then A_hat is updated
    /// for the new state with the incoming rate `r_hat` and the round-trip time `rtt`.
    pub fn update(&mut self, now: Instant, signal: Signal, r_hat: Option<Bitrate>, rtt: Duration) -> Bitrate {
        let p = self.params;
        let dt = now.saturating_since(self.last_update);
        self.last_update = now;
        let previous = self.state;
        self.state = previous.next(signal);
        let a_prev = self.a_hat;
        let a_new = match self.state {
            RateControlState::Hold => a_prev,
            RateControlState::Decrease => {
                if previous != RateControlState::Decrease {
                    if let Some(r) = r_hat {
                        self.stats.on_decrease(
                            r,
                            p.convergence_smoothing,
                            p.convergence_normalized_var_floor_kbps,
                        );
                    }
                }
                // A_hat(i) = beta * R_hat(i)
                r_hat.unwrap_or(a_prev) * p.beta
            }
            RateControlState::Increase => {
                self.mode = self.choose_increase_mode(r_hat);
                let a = match self.mode {
                    IncreaseMode::Multiplicative => {
                        // eta = 1.08^min(time_since_last_update_ms / 1000, 1.0)
                        let eta = p.eta_per_second.powf(dt.as_secs_f64().min(1.0));
                        a_prev * eta
                    }
                    IncreaseMode::Additive => a_prev + self.additive_step(a_prev, dt, rtt),
                };
                // A_hat(i) < 1.5 * R_hat(i)
                match r_hat {
                    Some(r) => a.min(r * p.max_rate_over_incoming),
                    None => a,
                }
            }
        };
        self.a_hat = a_new.clamp(p.min_rate, p.max_rate);
        self.a_hat
    }

    /// Near convergence when R_hat is within 3σ of the average at decreases; R_hat above that
    /// resets the statistics (§5.5). Multiplicative without valid statistics.
    fn choose_increase_mode(&mut self, r_hat: Option<Bitrate>) -> IncreaseMode {
        let (Some(r), Some(avg), Some(sigma)) = (r_hat, self.stats.avg_bps, self.stats.std_dev_bps()) else {
            return IncreaseMode::Multiplicative;
        };
        let r = r.as_bps_f64();
        let band = self.params.convergence_sigmas * sigma;
        if r > avg + band {
            self.stats.reset();
            IncreaseMode::Multiplicative
        } else if r >= avg - band {
            IncreaseMode::Additive
        } else {
            IncreaseMode::Multiplicative
        }
    }

    /// `max(1000, alpha * avg_packet_size_bits)` with `alpha = 0.5 * min(dt / response_time, 1)`
    /// and the packet size from A_hat(i-1) at 30 frames per second (§5.5).
    fn additive_step(&self, a_prev: Bitrate, dt: Duration, rtt: Duration) -> Bitrate {
        let p = self.params;
        let response_time = rtt + p.response_time_offset;
        let alpha = 0.5 * (dt / response_time).min(1.0);
        let bits_per_frame = a_prev.as_bps_f64() / p.assumed_frame_rate_hz;
        let packets_per_frame = (bits_per_frame / p.assumed_packet_size.as_bits() as f64).ceil().max(1.0);
        let avg_packet_size_bits = bits_per_frame / packets_per_frame;
        Bitrate::from_bps_f64(alpha * avg_packet_size_bits).max(p.additive_increase_min)
    }

    /// A_hat(i).
    pub fn a_hat(&self) -> Bitrate {
        self.a_hat
    }

    pub fn state(&self) -> RateControlState {
        self.state
    }

    pub fn increase_mode(&self) -> IncreaseMode {
        self.mode
    }

    pub fn stats(&self) -> &ConvergenceStats {
        &self.stats
    }

    pub fn last_update(&self) -> Instant {
        self.last_update
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use RateControlState::*;

    /// GCC-02's §5.5 defaults (the `rate_control` constants), 10 kbit/s - 100 Mbit/s.
    fn params() -> AimdParams {
        AimdParams {
            cfg: GccDraftConfig::default(),
            min_rate: Bitrate::kbps(10),
            max_rate: Bitrate::mbps(100),
        }
    }

    fn at(ms: i64) -> Instant {
        Instant::from_millis(ms)
    }

    const RTT: Duration = Duration::from_millis(100);

    #[test]
    fn transition_table() {
        assert_eq!(Hold.next(Signal::Overuse), Decrease);
        assert_eq!(Increase.next(Signal::Overuse), Decrease);
        assert_eq!(Decrease.next(Signal::Overuse), Decrease);
        assert_eq!(Hold.next(Signal::Normal), Increase);
        assert_eq!(Increase.next(Signal::Normal), Increase);
        assert_eq!(Decrease.next(Signal::Normal), Hold);
        assert_eq!(Hold.next(Signal::Underuse), Hold);
        assert_eq!(Increase.next(Signal::Underuse), Hold);
        assert_eq!(Decrease.next(Signal::Underuse), Hold);
    }

    #[test]
    fn multiplicative_increase_is_at_most_eight_percent_per_second() {
        let mut c = AimdRateControl::new(params(), Bitrate::mbps(1), at(0));
        assert_eq!(c.state(), Increase);
        // 1 s: x1.08.
        assert_eq!(c.update(at(1000), Signal::Normal, None, RTT), Bitrate::bps(1_080_000));
        // 0.5 s: x1.08^0.5 = 1.039230...
        assert_eq!(
            c.update(at(1500), Signal::Normal, None, RTT),
            Bitrate::from_bps_f64(1_080_000.0 * 1.08f64.sqrt())
        );
        // 3 s: the exponent is capped at 1.
        let before = c.a_hat();
        assert_eq!(c.update(at(4500), Signal::Normal, None, RTT), before * 1.08);
        assert_eq!(c.increase_mode(), IncreaseMode::Multiplicative);
    }

    #[test]
    fn increase_is_bounded_by_one_and_a_half_r_hat() {
        let mut c = AimdRateControl::new(params(), Bitrate::mbps(1), at(0));
        assert_eq!(c.update(at(100), Signal::Normal, Some(Bitrate::kbps(500)), RTT), Bitrate::kbps(750));
        // Hold does not apply the bound.
        let mut c = AimdRateControl::new(params(), Bitrate::mbps(1), at(0));
        assert_eq!(c.update(at(100), Signal::Underuse, Some(Bitrate::kbps(500)), RTT), Bitrate::mbps(1));
        assert_eq!(c.state(), Hold);
    }

    #[test]
    fn decrease_to_beta_r_hat() {
        let mut c = AimdRateControl::new(params(), Bitrate::mbps(2), at(0));
        assert_eq!(c.update(at(100), Signal::Overuse, Some(Bitrate::mbps(1)), RTT), Bitrate::kbps(850));
        assert_eq!(c.state(), Decrease);
        // Still over-using: A_hat follows beta * the current R_hat (not beta * A_hat).
        assert_eq!(c.update(at(200), Signal::Overuse, Some(Bitrate::kbps(900)), RTT), Bitrate::kbps(765));
        // Without R_hat: beta * A_hat.
        let mut c = AimdRateControl::new(params(), Bitrate::mbps(2), at(0));
        assert_eq!(c.update(at(100), Signal::Overuse, None, RTT), Bitrate::kbps(1700));
    }

    #[test]
    fn state_sequence() {
        // Increase -> Decrease -> Hold -> Hold -> Increase, with A_hat at each step.
        let r = Some(Bitrate::mbps(1));
        let mut c = AimdRateControl::new(params(), Bitrate::mbps(1), at(0));
        // Normal: multiplicative increase over 100 ms: 1 Mbit/s * 1.08^0.1.
        let a1 = c.update(at(100), Signal::Normal, r, RTT);
        assert_eq!(a1, Bitrate::from_bps_f64(1e6 * 1.08f64.powf(0.1)));
        // Over-use: Decrease, 0.85 * 1 Mbit/s.
        assert_eq!(c.update(at(200), Signal::Overuse, r, RTT), Bitrate::kbps(850));
        // Normal in Decrease: Hold, unchanged.
        assert_eq!(c.update(at(300), Signal::Normal, r, RTT), Bitrate::kbps(850));
        assert_eq!(c.state(), Hold);
        // Under-use in Hold: Hold.
        assert_eq!(c.update(at(400), Signal::Underuse, r, RTT), Bitrate::kbps(850));
        assert_eq!(c.state(), Hold);
        // Normal in Hold: Increase. R_hat = 1 Mbit/s equals the average at the decrease, so the
        // increase is additive: A = 850 kbit/s, bits_per_frame = 28333.3, 3 packets per frame,
        // avg packet 9444.4 bits; response_time = 200 ms, dt = 100 ms: alpha = 0.25, step 2361.1.
        let a = c.update(at(500), Signal::Normal, r, RTT);
        assert_eq!(c.state(), Increase);
        assert_eq!(c.increase_mode(), IncreaseMode::Additive);
        assert_eq!(a, Bitrate::kbps(850) + Bitrate::from_bps_f64(0.25 * 850_000.0 / 30.0 / 3.0));
    }

    #[test]
    fn additive_step_has_a_floor_of_1000_bits() {
        let r = Some(Bitrate::kbps(100));
        let mut c = AimdRateControl::new(params(), Bitrate::kbps(100), at(0));
        c.update(at(100), Signal::Overuse, r, RTT);
        c.update(at(200), Signal::Normal, r, RTT);
        // A = 85 kbit/s: 2833 bits per frame, one packet; alpha = 0.25 at dt = 100 ms: 708 bits
        // < 1000, so +1000.
        let a = c.update(at(300), Signal::Normal, Some(Bitrate::kbps(85)), RTT);
        assert_eq!(c.increase_mode(), IncreaseMode::Additive);
        assert_eq!(a, Bitrate::kbps(86));
        // alpha saturates at 0.5 once dt >= response time (rtt + 100 ms = 200 ms): at 1 Mbit/s
        // (4 packets of 8333.3 bits per frame) one update adds at most 4166.7 bit/s.
        let mut c = AimdRateControl::new(params(), Bitrate::mbps(1), at(0));
        c.update(at(100), Signal::Overuse, Some(Bitrate::kbps(1176)), RTT);
        c.update(at(200), Signal::Normal, None, RTT);
        // A_hat = 999600 bit/s; R_hat 1176 kbit/s is the average: additive.
        let a0 = c.a_hat();
        let a = c.update(at(5200), Signal::Normal, Some(Bitrate::kbps(1176)), RTT);
        let bits_per_frame = a0.as_bps_f64() / 30.0;
        assert_eq!(a, a0 + Bitrate::from_bps_f64(0.5 * bits_per_frame / 4.0));
    }

    #[test]
    fn convergence_statistics_pick_the_increase_mode() {
        let mut c = AimdRateControl::new(params(), Bitrate::mbps(1), at(0));
        c.update(at(100), Signal::Overuse, Some(Bitrate::mbps(1)), RTT);
        // One sample: avg 1 Mbit/s, sigma = sqrt(0.4 kbit/s * 1000 kbit/s) = 20 kbit/s, so the
        // band is 1 Mbit/s ± 60 kbit/s.
        assert_eq!(c.stats().average(), Some(Bitrate::mbps(1)));
        assert!((c.stats().std_dev_bps().unwrap() - 20_000.0).abs() < 1e-6);
        c.update(at(200), Signal::Normal, Some(Bitrate::mbps(1)), RTT); // Hold
        c.update(at(300), Signal::Normal, Some(Bitrate::kbps(939)), RTT);
        assert_eq!(c.increase_mode(), IncreaseMode::Multiplicative, "below the band");
        c.update(at(400), Signal::Normal, Some(Bitrate::kbps(1059)), RTT);
        assert_eq!(c.increase_mode(), IncreaseMode::Additive, "inside the band");
        c.update(at(500), Signal::Normal, Some(Bitrate::kbps(1061)), RTT);
        assert_eq!(c.increase_mode(), IncreaseMode::Multiplicative, "above the band");
        assert_eq!(c.stats().average(), None, "reset");
    }

    #[test]
    fn statistics_are_an_ewma_of_r_hat_at_decreases() {
        let mut s = ConvergenceStats::default();
        s.on_decrease(Bitrate::mbps(1), 0.95, 0.4);
        s.on_decrease(Bitrate::kbps(800), 0.95, 0.4);
        // avg = 1e6 + 0.05 * (-2e5) = 990 kbit/s; var = 0.95 * (4e8 + 0.05 * 4e10) = 2.28e9.
        assert_eq!(s.average(), Some(Bitrate::kbps(990)));
        assert!((s.std_dev_bps().unwrap() - 2.28e9f64.sqrt()).abs() < 1e-6);
        // Only one sample per visit to Decrease.
        let mut c = AimdRateControl::new(params(), Bitrate::mbps(1), at(0));
        c.update(at(100), Signal::Overuse, Some(Bitrate::mbps(1)), RTT);
        c.update(at(200), Signal::Overuse, Some(Bitrate::kbps(500)), RTT);
        assert_eq!(c.stats().average(), Some(Bitrate::mbps(1)));
    }

    #[test]
    fn incoming_rate_over_the_window() {
        let mut r = IncomingRate::new(INCOMING_RATE_WINDOW);
        // 1200 bytes every 10 ms = 960 kbit/s.
        for i in 0..100 {
            r.on_packet(at(10 * i), DataSize::bytes(1200));
        }
        assert_eq!(r.rate(at(400)), None, "window not yet full");
        // (490, 990]: 50 packets of 9600 bits over 0.5 s.
        assert_eq!(r.rate(at(990)), Some(Bitrate::kbps(960)));
        // Nothing received for a window: undefined.
        assert_eq!(r.rate(at(1490)), None);
    }
}
