//! GoogCC's congestion-window pushback, as libwebrtc runs it by default (the `WebRTC-CongestionWindow`
//! field trial's default `QueueSize:350,MinBitrate:30000,DropFrame:true`): a data window of
//! target × (RTT + 350 ms), and an encoding-rate ratio that shrinks while more bytes are in flight
//! than the window holds and grows back once they are not. In "drop frames only" mode the target
//! stays the estimate; the ratio reaches the encoder as `cwnd_reduce_ratio`, the share of the
//! target to shed (`crate::gcc::GoogCc::encoder_pushback_ratio`).
//!
//! Written from the algorithm's description, not taken from the `goog_cc` crate, whose own copy is
//! switched off (`GoogCc::new`): goog_cc 0.1.4 hands the window to the pushback step as the bytes in
//! flight at every 25 ms process interval instead of as its window, so the ratio shrank each time
//! the window grew. A call whose target was climbing back after competition was held at half of it
//! for tens of seconds (`docs/controllers/gcc.md`, "Congestion-window pushback").

use std::collections::VecDeque;

use rtcbench_units::{Bitrate, DataSize, Duration};

/// Queuing the window allows on top of the RTT (the field trial's `QueueSize`).
pub const ACCEPTED_QUEUE: Duration = Duration::from_millis(350);

/// The pushback never takes the encoder below this (the field trial's `MinBitrate`), unless the
/// target itself is lower.
pub const MIN_PUSHBACK_RATE: Bitrate = Bitrate::bps(30_000);

/// The smallest window: two full-size packets.
pub const MIN_WINDOW: DataSize = DataSize::bytes(2 * 1500);

/// How many feedback messages' largest RTTs the window's RTT is the minimum of.
pub const RTT_HISTORY: usize = 32;

/// The window and the encoding-rate ratio.
#[derive(Clone, Debug)]
pub struct Pushback {
    /// Per feedback message, the longest time from sending one of its packets to the feedback.
    feedback_rtts: VecDeque<Duration>,
    window: Option<DataSize>,
    ratio: f64,
}

impl Default for Pushback {
    fn default() -> Self {
        Self { feedback_rtts: VecDeque::with_capacity(RTT_HISTORY + 1), window: None, ratio: 1.0 }
    }
}

impl Pushback {
    /// The window the bytes in flight are held to, once a feedback has given an RTT.
    pub fn window(&self) -> Option<DataSize> {
        self.window
    }

    /// A feedback message whose longest send-to-feedback time is `max_rtt`.
    pub fn on_feedback_rtt(&mut self, max_rtt: Duration) {
        self.feedback_rtts.push_back(max_rtt);
        if self.feedback_rtts.len() > RTT_HISTORY {
            self.feedback_rtts.pop_front();
        }
    }

    /// Moves the window halfway to `target` × (the shortest recent feedback RTT + the accepted
    /// queue); nothing before the first feedback.
    pub fn update_window(&mut self, target: Bitrate) {
        let Some(&rtt) = self.feedback_rtts.iter().min() else { return };
        let fresh = target * (rtt + ACCEPTED_QUEUE);
        let window = match self.window {
            Some(old) => DataSize::bytes((fresh.as_bytes() + old.as_bytes()) / 2),
            None => fresh,
        };
        self.window = Some(window.max(MIN_WINDOW));
    }

    /// One step of the encoding-rate ratio against `in_flight` (bytes sent and neither
    /// acknowledged nor reported lost, as the sender counts them), and the share of `target` the
    /// encoder sheds as a result (0 without a window). `min_rate` is the controller's floor: the
    /// pushback never goes below it.
    pub fn reduce_ratio(&mut self, in_flight: DataSize, target: Bitrate, min_rate: Bitrate) -> f64 {
        let Some(window) = self.window.filter(|w| *w > DataSize::ZERO) else { return 0.0 };
        let fill = in_flight.as_bytes() as f64 / window.as_bytes() as f64;
        self.ratio = if fill > 1.5 {
            self.ratio * 0.9
        } else if fill > 1.0 {
            self.ratio * 0.95
        } else if fill < 0.1 {
            1.0
        } else {
            (self.ratio * 1.05).min(1.0)
        };
        if target.as_bps() == 0 {
            return 0.0;
        }
        let scaled = Bitrate::bps((target.as_bps_f64() * self.ratio) as u64);
        let pushed = if scaled < MIN_PUSHBACK_RATE { target.min(MIN_PUSHBACK_RATE) } else { scaled };
        let pushed = pushed.max(min_rate);
        (target.as_bps_f64() - pushed.as_bps_f64()).max(0.0) / target.as_bps_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn primed(rtt_ms: i64, target: Bitrate) -> Pushback {
        let mut p = Pushback::default();
        p.on_feedback_rtt(Duration::from_millis(rtt_ms));
        p.update_window(target);
        p
    }

    #[test]
    fn no_window_no_pushback() {
        let mut p = Pushback::default();
        let in_flight = DataSize::bytes(1_000_000);
        assert_eq!(p.reduce_ratio(in_flight, Bitrate::kbps(1000), Bitrate::kbps(30)), 0.0);
    }

    #[test]
    fn window_is_target_times_rtt_plus_queue_then_moves_halfway() {
        // 800 kbit/s × (50 + 350) ms = 40 000 bytes.
        let mut p = primed(50, Bitrate::kbps(800));
        assert_eq!(p.window(), Some(DataSize::bytes(40_000)));
        // Halfway to 400 kbit/s × 400 ms = 20 000 bytes.
        p.update_window(Bitrate::kbps(400));
        assert_eq!(p.window(), Some(DataSize::bytes(30_000)));
        // The shortest of the recent feedback RTTs counts, and two packets is the least.
        p.on_feedback_rtt(Duration::from_millis(900));
        p.update_window(Bitrate::bps(100));
        assert_eq!(p.window(), Some(DataSize::bytes(15_002)));
        for _ in 0..20 {
            p.update_window(Bitrate::bps(100));
        }
        assert_eq!(p.window(), Some(MIN_WINDOW));
    }

    #[test]
    fn an_overfull_window_sheds_rate_and_an_emptying_one_gives_it_back() {
        let target = Bitrate::kbps(1000);
        let min = Bitrate::kbps(50);
        let mut p = primed(50, target); // 50 000 bytes
        let in_flight = DataSize::bytes(80_000); // fill 1.6: × 0.9 per step
        assert!((p.reduce_ratio(in_flight, target, min) - 0.1).abs() < 1e-9);
        assert!((p.reduce_ratio(in_flight, target, min) - 0.19).abs() < 1e-9);
        let in_flight = DataSize::bytes(60_000); // fill 1.2: × 0.95
        assert!((p.reduce_ratio(in_flight, target, min) - (1.0 - 0.81 * 0.95)).abs() < 1e-9);
        let in_flight = DataSize::bytes(25_000); // fill 0.5: × 1.05, up to 1
        let before = 0.81 * 0.95;
        assert!((p.reduce_ratio(in_flight, target, min) - (1.0 - before * 1.05)).abs() < 1e-9);
        for _ in 0..10 {
            p.reduce_ratio(in_flight, target, min);
        }
        assert_eq!(p.reduce_ratio(in_flight, target, min), 0.0);
        // Nearly empty: back to the whole target at once.
        let in_flight = DataSize::bytes(80_000);
        for _ in 0..30 {
            p.reduce_ratio(in_flight, target, min);
        }
        let in_flight = DataSize::bytes(1_000);
        assert_eq!(p.reduce_ratio(in_flight, target, min), 0.0);
    }

    #[test]
    fn the_pushback_keeps_the_floors() {
        let target = Bitrate::kbps(400);
        let mut p = primed(50, target);
        let in_flight = DataSize::bytes(1_000_000);
        for _ in 0..100 {
            p.reduce_ratio(in_flight, target, Bitrate::kbps(5));
        }
        // Deep in pushback the encoder keeps 30 kbit/s of the 400.
        assert!((p.reduce_ratio(in_flight, target, Bitrate::kbps(5)) - 370.0 / 400.0).abs() < 1e-9);
        // ... and never less than the controller's own floor.
        assert!((p.reduce_ratio(in_flight, target, Bitrate::kbps(182)) - 218.0 / 400.0).abs() < 1e-9);
        // A target under 30 kbit/s is left alone.
        assert_eq!(p.reduce_ratio(in_flight, Bitrate::kbps(20), Bitrate::kbps(5)), 0.0);
    }
}
