//! The receive-side deployment's receiver (draft-ietf-rmcat-gcc-02 §3): the delay-based
//! controller run on packet arrivals and abs-send-time, and the decision when to send its
//! estimate back in a REMB message.
//!
//! # Drive loop
//!
//! The receiver calls [`RembEstimator::on_packet`] for every media packet carrying
//! abs-send-time, [`RembEstimator::on_timeout`] when [`RembEstimator::poll_timeout`] passes, and
//! after each of those drains [`RembEstimator::poll_remb`], sending a REMB for every value it
//! returns. [`RembEstimator::set_rtt`] gives it an RTT if the receiver has one (e.g. from RTCP
//! XR or its own sender reports); otherwise `default_rtt` (200 ms, libwebrtc's
//! `AimdRateControl` default) is used for the response time of §5.5.
//!
//! # When a REMB goes out
//!
//! GCC-02 §3: "It is RECOMMENDED to send the REMB message as soon as congestion is detected, and
//! otherwise at least once every second." We send
//!
//! * immediately when the estimate is more than 3 % below the last value sent (a decrease on
//!   over-use is at least that: it sets A_hat to 0.85·R_hat), and
//! * otherwise once per `remb_interval` (1 s, the longest period §3 allows), and
//! * the first one at the first packet, so the sender is bounded by the receiver's estimate from
//!   the start.
//!
//! libwebrtc throttles differently (at most every 200 ms unless the estimate drops by 3 %).

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};
use rtcbench_wire::abs_send_time_delta;

use super::delay_based::DelayBasedController;
use super::GccDraftConfig;
use crate::controller::{ControllerMetrics, Metric};

/// Turns 24-bit abs-send-time values (6.18 fixed-point seconds, wrapping every 64 s) into
/// instants on a continuous sender timeline. Only differences between the instants mean
/// anything; the first value maps to [`Instant::ZERO`].
#[derive(Clone, Debug, Default)]
pub struct AbsSendTimeUnwrapper {
    /// The newest value seen and its instant.
    newest: Option<(u32, Instant)>,
}

impl AbsSendTimeUnwrapper {
    pub fn new() -> Self {
        Self::default()
    }

    /// The departure instant of a packet stamped `abs_send_time`. Correct across the wrap as long
    /// as packets are less than 32 s apart.
    pub fn unwrap(&mut self, abs_send_time: u32) -> Instant {
        let abs_send_time = abs_send_time & 0x00FF_FFFF;
        let t = match self.newest {
            None => Instant::ZERO,
            Some((last, at)) => at + abs_send_time_delta(abs_send_time, last),
        };
        if self.newest.is_none_or(|(_, at)| t > at) {
            self.newest = Some((abs_send_time, t));
        }
        t
    }
}

/// When to send a REMB (see the module docs).
#[derive(Clone, Debug)]
pub struct RembScheduler {
    interval: Duration,
    /// A drop by more than this fraction of the last value sent is sent at once (0.03).
    decrease_trigger: f64,
    /// When the first REMB is due (set by the first packet).
    first_due: Option<Instant>,
    last_sent: Option<(Instant, Bitrate)>,
}

impl RembScheduler {
    pub fn new(interval: Duration, decrease_trigger: f64) -> Self {
        Self { interval, decrease_trigger, first_due: None, last_sent: None }
    }

    /// The first packet arrived: a first REMB is due now.
    pub fn start(&mut self, now: Instant) {
        self.first_due.get_or_insert(now);
    }

    /// The value to send now, if any, given the current `estimate`.
    pub fn poll(&mut self, now: Instant, estimate: Bitrate) -> Option<Bitrate> {
        let due = match self.last_sent {
            None => self.first_due.is_some_and(|t| now >= t),
            Some((at, sent)) => {
                now - at >= self.interval
                    || estimate.as_bps_f64() < sent.as_bps_f64() * (1.0 - self.decrease_trigger)
            }
        };
        if !due {
            return None;
        }
        self.last_sent = Some((now, estimate));
        Some(estimate)
    }

    /// When the next periodic REMB is due, if the stream has started.
    pub fn next_due(&self) -> Option<Instant> {
        self.last_sent.map(|(at, _)| at + self.interval).or(self.first_due)
    }

    /// The last value sent.
    pub fn last_sent(&self) -> Option<Bitrate> {
        self.last_sent.map(|(_, r)| r)
    }
}

/// The receiver of the receive-side deployment: abs-send-time groups → arrival-time filter →
/// over-use detector → AIMD, and REMB decisions.
#[derive(Clone, Debug)]
pub struct RembEstimator {
    chain: DelayBasedController,
    unwrapper: AbsSendTimeUnwrapper,
    scheduler: RembScheduler,
    rtt_known: bool,
}

impl RembEstimator {
    /// A receiver whose estimate starts at `start_rate` (GCC-02 gives no initial A_hat) and is
    /// kept between `remb_min_rate` and unlimited.
    pub fn new(cfg: GccDraftConfig, start_rate: Bitrate, now: Instant) -> Self {
        Self {
            chain: DelayBasedController::new(
                &cfg,
                start_rate,
                cfg.remb_min_rate,
                Bitrate::INFINITE,
                now,
                true,
            ),
            unwrapper: AbsSendTimeUnwrapper::new(),
            scheduler: RembScheduler::new(cfg.remb_interval, cfg.remb_decrease_trigger),
            rtt_known: false,
        }
    }

    /// A media packet of `size` stamped with the 24-bit `abs_send_time` arrived at `now`.
    pub fn on_packet(&mut self, now: Instant, abs_send_time: u32, size: DataSize) {
        let departure = self.unwrapper.unwrap(abs_send_time);
        self.chain.on_packet(now, departure, now, size);
        self.scheduler.start(now);
    }

    /// The RTT, if the receiver learns it; until then `default_rtt` is used.
    pub fn set_rtt(&mut self, rtt: Duration) {
        self.chain.set_rtt(rtt);
        self.rtt_known = true;
    }

    /// A REMB value to send now, if one is due.
    pub fn poll_remb(&mut self, now: Instant) -> Option<Bitrate> {
        self.scheduler.poll(now, self.chain.a_hat())
    }

    /// The next time [`on_timeout`](Self::on_timeout) (then [`poll_remb`](Self::poll_remb)) is
    /// wanted.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let update = self.chain.next_update();
        Some(self.scheduler.next_due().map_or(update, |due| due.min(update)))
    }

    pub fn on_timeout(&mut self, now: Instant) {
        self.chain.on_timeout(now);
    }

    /// A_hat, the current estimate (sent or not).
    pub fn estimate(&self) -> Bitrate {
        self.chain.a_hat()
    }

    /// The delay-based chain, for inspection.
    pub fn delay_based(&self) -> &DelayBasedController {
        &self.chain
    }

    /// Typed metrics: the delay-based chain's, `remb` (the last value sent) and `rtt` (the RTT in
    /// use; `None` while it is the default).
    pub fn metrics(&self) -> ControllerMetrics {
        DelayBasedController::metrics(Some(&self.chain), ControllerMetrics::new())
            .with("remb", Metric::Rate(self.scheduler.last_sent()))
            .with("rtt", Metric::Time(self.rtt_known.then(|| self.chain.rtt())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtcbench_wire::abs_send_time_from;

    #[test]
    fn unwraps_abs_send_time_across_the_wrap() {
        let mut u = AbsSendTimeUnwrapper::new();
        let base = Instant::from_secs(63);
        let t0 = u.unwrap(abs_send_time_from(base));
        let t1 = u.unwrap(abs_send_time_from(base + Duration::from_millis(1500)));
        // 64.5 s wraps to 0.5 s on the wire; the unwrapped instants keep going.
        assert_eq!(t1 - t0, Duration::from_millis(1500));
        // A reordered packet from before the wrap lands before it.
        let late = u.unwrap(abs_send_time_from(base + Duration::from_millis(500)));
        assert_eq!(late - t0, Duration::from_millis(500));
        let t2 = u.unwrap(abs_send_time_from(base + Duration::from_millis(2000)));
        assert_eq!(t2 - t0, Duration::from_millis(2000));
    }

    #[test]
    fn remb_immediately_on_a_drop_of_more_than_three_percent() {
        let mut s = RembScheduler::new(Duration::from_secs(1), 0.03);
        let t = |ms| Instant::from_millis(ms);
        assert_eq!(s.poll(t(0), Bitrate::mbps(1)), None, "nothing received yet");
        assert_eq!(s.next_due(), None);
        s.start(t(10));
        assert_eq!(s.poll(t(10), Bitrate::mbps(1)), Some(Bitrate::mbps(1)), "first at the first packet");
        // Increases and drops of up to 3 % wait for the period.
        assert_eq!(s.poll(t(100), Bitrate::kbps(1050)), None);
        assert_eq!(s.poll(t(200), Bitrate::kbps(970)), None, "exactly 3 % is not more than 3 %");
        assert_eq!(s.poll(t(300), Bitrate::kbps(980)), None);
        assert_eq!(s.next_due(), Some(t(1010)));
        // A drop of more than 3 % goes out at once.
        assert_eq!(s.poll(t(400), Bitrate::kbps(969)), Some(Bitrate::kbps(969)));
        // The reference is now the last value sent, and the period restarts from it.
        assert_eq!(s.poll(t(500), Bitrate::kbps(950)), None);
        assert_eq!(s.poll(t(1399), Bitrate::kbps(950)), None);
        assert_eq!(s.poll(t(1400), Bitrate::kbps(950)), Some(Bitrate::kbps(950)));
        assert_eq!(s.poll(t(1400), Bitrate::kbps(950)), None, "sent once");
    }
}
