//! Congestion-aware retry-limit adaptation, Chen et al. 2015 (seed 004) §3.1-§3.3: a station
//! measures how much more data arrives from IP than it delivers (the excess data rate, eq. (4))
//! against the capacity it sees (eq. (6)), and grants an MPDU that reached the retry limit up
//! to R_ex more attempts only while that congestion level (eq. (5)) is low and its buffer is
//! short (Algorithm 3). A channel-caused loss (a hidden terminal, errors) is then retried away;
//! a congestion-caused one still reaches the congestion controller above.
//!
//! Algorithm 1 (the statistics, every τ) and Algorithm 2 (the congestion level) live here;
//! Algorithm 3 is [`Adapter::decide`], which the BSS calls where 802.11's retry limit is
//! checked (`docs/wifi.md`, "Retry-limit adaptation", gives the readings of the paper this
//! module makes).

use rtcbench_units::{Bitrate, DataSize, Duration};
use serde::{Deserialize, Serialize};

/// The parameters of Chen et al. 2015 (seed 004) §3.1.1 and Algorithms 1-3.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryAdaptation {
    /// τ, the interval of Algorithm 1's statistics ("Default value for τ is 0.1" s).
    #[serde(default = "RetryAdaptation::default_interval")]
    pub interval: Duration,
    /// w, how many intervals the statistics sum over (Algorithm 1: "Default value of w is 10").
    #[serde(default = "RetryAdaptation::default_window")]
    pub window: u32,
    /// R_ex, the retry limit extension: at most R + R_ex attempts per MPDU (Algorithm 3; §4
    /// runs 0, 3, 5 and 7). 0 gives 802.11's behaviour.
    pub extension: u32,
    /// CL_th, the congestion level (eq. (5)) at or above which an MPDU at the retry limit is
    /// given up. The paper gives no value: a parameter to sweep.
    pub cl_threshold: f64,
    /// BF_th, packets in the station's queue (of the MPDU's access category, the MPDU
    /// included) at or above which an MPDU at the retry limit is given up. The paper gives no
    /// value: a parameter to sweep.
    pub buffer_threshold: u32,
}

impl RetryAdaptation {
    /// τ = 0.1 s (Algorithm 1).
    pub const INTERVAL: Duration = Duration::from_millis(100);
    /// w = 10 (Algorithm 1).
    pub const WINDOW: u32 = 10;

    /// The paper's τ and w with the given R_ex, CL_th and BF_th.
    pub const fn new(extension: u32, cl_threshold: f64, buffer_threshold: u32) -> Self {
        Self { interval: Self::INTERVAL, window: Self::WINDOW, extension, cl_threshold, buffer_threshold }
    }

    fn default_interval() -> Duration {
        Self::INTERVAL
    }

    fn default_window() -> u32 {
        Self::WINDOW
    }

    /// The window wτ the sums cover.
    pub fn span(&self) -> Duration {
        self.interval * i64::from(self.window)
    }
}

/// What a station's adaptation knows, for traces: the statistics of the last w complete
/// intervals of τ (Algorithm 2) and what Algorithm 3 decided so far.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AdaptationState {
    /// Ar_τ^w: the MSDUs that arrived from IP (every packet pushed at the station, refused or
    /// not), in the window.
    pub arrived: DataSize,
    /// Deliv_τ^w: the MSDUs of the MPDUs acknowledged in the window (MAC overhead excluded, so
    /// that Ar = Deliv when nothing is lost, as Theorem 1's proof takes it).
    pub delivered: DataSize,
    /// Σ TD(r_i, L_i): the transmit delays of the MPDUs acknowledged or discarded in the
    /// window, each from the instant it reached the head of its queue.
    pub transmit_delay: Duration,
    /// EDR_τ^w, eq. (4): max(Ar − Deliv, 0) / (wτ).
    pub edr: Bitrate,
    /// MC_τ^w, eq. (6): Deliv / ΣTD (zero while no MPDU completed in the window).
    pub mc: Bitrate,
    /// CL, eq. (5): EDR / MC = EDR · ΣTD / Deliv; with nothing delivered, 0 if nothing is in
    /// excess and +∞ otherwise.
    pub cl: f64,
    /// Attempts granted beyond the retry limit (Algorithm 3, line 9).
    pub extended_attempts: u64,
    /// MPDUs given up at or past the retry limit because CL ≥ CL_th (line 4).
    pub gave_up_congestion: u64,
    /// … because the buffer held BF_th packets or more (line 5).
    pub gave_up_buffer: u64,
    /// … because R + R_ex attempts were used (line 6). With R_ex = 0 every MPDU that reaches
    /// R without congestion or a long buffer ends here.
    pub gave_up_extension: u64,
}

/// One interval's statistics: Algorithm 1's TotalBitsFromIP, TotalBitsSuccess, TotalTXDelay.
#[derive(Clone, Copy, Debug, Default)]
struct Sample {
    arrived: u64,
    delivered: u64,
    delay: Duration,
}

/// What Algorithm 3 decided for an MPDU whose attempts reached the retry limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Lines 4-7: delete the MPDU.
    GiveUp,
    /// Lines 8-13: one more attempt; `reset_cw` at the first one beyond R.
    Retry { reset_cw: bool },
}

/// One station's adaptation state.
#[derive(Clone, Debug)]
pub(crate) struct Adapter {
    cfg: RetryAdaptation,
    current: Sample,
    /// ListAr, ListServ, ListTXDelay as one ring of the last w intervals.
    intervals: Vec<Sample>,
    next: usize,
    /// Their sums, kept as the ring turns so that Algorithm 2 is O(1).
    sum: Sample,
    state: AdaptationState,
}

impl Adapter {
    pub(crate) fn new(cfg: RetryAdaptation) -> Self {
        let mut a = Self {
            cfg,
            current: Sample::default(),
            intervals: vec![Sample::default(); cfg.window as usize],
            next: 0,
            sum: Sample::default(),
            state: AdaptationState::default(),
        };
        a.refresh();
        a
    }

    pub(crate) fn interval(&self) -> Duration {
        self.cfg.interval
    }

    /// An MSDU arrived from IP (`TotalBitsFromIP`).
    pub(crate) fn arrived(&mut self, msdu: DataSize) {
        self.current.arrived += msdu.as_bytes();
    }

    /// An MPDU was acknowledged `delay` after it reached the head of its queue
    /// (`TotalBitsSuccess`, `TotalTXDelay`).
    pub(crate) fn delivered(&mut self, msdu: DataSize, delay: Duration) {
        self.current.delivered += msdu.as_bytes();
        self.current.delay += delay;
    }

    /// An MPDU was discarded `delay` after it reached the head of its queue: its transmit delay
    /// counts too (§3.1.1: "to the time an acknowledgement for this packet is received or
    /// discarded").
    pub(crate) fn discarded(&mut self, delay: Duration) {
        self.current.delay += delay;
    }

    /// Algorithm 1, every τ: the interval just ended replaces the oldest of the w kept (lines
    /// 1-8) and the counters restart (lines 9-11).
    pub(crate) fn tick(&mut self) {
        let old = std::mem::replace(&mut self.intervals[self.next], self.current);
        self.next = (self.next + 1) % self.intervals.len();
        self.sum.arrived = self.sum.arrived - old.arrived + self.current.arrived;
        self.sum.delivered = self.sum.delivered - old.delivered + self.current.delivered;
        self.sum.delay = self.sum.delay - old.delay + self.current.delay;
        self.current = Sample::default();
        self.refresh();
    }

    /// Algorithm 2 over the sums, into the observable state.
    fn refresh(&mut self) {
        let Sample { arrived, delivered, delay } = self.sum;
        let span = self.cfg.span();
        let excess = arrived.saturating_sub(delivered);
        let s = &mut self.state;
        s.arrived = DataSize::bytes(arrived);
        s.delivered = DataSize::bytes(delivered);
        s.transmit_delay = delay;
        // Eq. (4), line 4.
        s.edr = DataSize::bytes(excess) / span;
        // Eq. (6).
        s.mc = if delay > Duration::ZERO { DataSize::bytes(delivered) / delay } else { Bitrate::ZERO };
        // Eq. (5), line 5: EDR · ΣTD / Deliv, in exact arithmetic rather than from the rounded
        // rates. Nothing delivered: no congestion if nothing is in excess either; otherwise the
        // capacity estimate is zero and the excess infinite against it.
        s.cl = if delivered > 0 {
            excess as f64 * delay.as_micros() as f64 / (span.as_micros() as f64 * delivered as f64)
        } else if excess > 0 {
            f64::INFINITY
        } else {
            0.0
        };
    }

    pub(crate) fn state(&self) -> AdaptationState {
        self.state
    }

    /// Algorithm 3 for an MPDU that has used `attempts` ≥ R = `limit` attempts, all failed,
    /// with `buffer` packets in its queue (itself included). The retry count r of the
    /// algorithm is `attempts`: 802.11 counts one retry per failed attempt, so after the R-th
    /// failure r = R and line 3 (r ≥ R) holds. Lines 4-6 give the MPDU up if CL ≥ CL_th, or
    /// the buffer holds BF_th packets, or r ≥ R + R_ex; line 9 grants the attempt r + 1, and
    /// line 10 resets the CW when that attempt is R + 1, the first beyond the limit.
    pub(crate) fn decide(&mut self, attempts: u32, limit: u32, buffer: u32) -> Decision {
        debug_assert!(attempts >= limit);
        let s = &mut self.state;
        if s.cl >= self.cfg.cl_threshold {
            s.gave_up_congestion += 1;
            Decision::GiveUp
        } else if buffer >= self.cfg.buffer_threshold {
            s.gave_up_buffer += 1;
            Decision::GiveUp
        } else if attempts >= limit.saturating_add(self.cfg.extension) {
            s.gave_up_extension += 1;
            Decision::GiveUp
        } else {
            s.extended_attempts += 1;
            Decision::Retry { reset_cw: attempts + 1 == limit + 1 }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adapter(extension: u32) -> Adapter {
        Adapter::new(RetryAdaptation::new(extension, 0.5, 100))
    }

    #[test]
    fn the_window_holds_the_last_w_intervals() {
        let mut a = adapter(3);
        // Interval 1: 10 000 B arrive, 8 000 B delivered in 4 ms of transmit delay in all.
        a.arrived(DataSize::bytes(10_000));
        a.delivered(DataSize::bytes(8_000), Duration::from_millis(4));
        // Statistics move only at the end of the interval.
        assert_eq!(a.state().arrived, DataSize::ZERO);
        a.tick();
        let s = a.state();
        assert_eq!((s.arrived, s.delivered), (DataSize::bytes(10_000), DataSize::bytes(8_000)));
        assert_eq!(s.transmit_delay, Duration::from_millis(4));
        // EDR = 2000 B · 8 / 1 s = 16 kbit/s; MC = 64 000 bit / 4 ms = 16 Mbit/s; CL = 0.001.
        assert_eq!((s.edr, s.mc), (Bitrate::kbps(16), Bitrate::mbps(16)));
        assert!((s.cl - 0.001).abs() < 1e-12, "{}", s.cl);
        // Nine empty intervals keep it in the window; the tenth pushes it out.
        for _ in 0..9 {
            a.tick();
        }
        assert_eq!(a.state().arrived, DataSize::bytes(10_000));
        a.tick();
        assert_eq!(a.state(), AdaptationState::default());
    }

    #[test]
    fn with_nothing_delivered_the_level_is_zero_or_infinite() {
        let mut a = adapter(3);
        a.discarded(Duration::from_millis(11));
        a.tick();
        assert_eq!(a.state().cl, 0.0);
        a.arrived(DataSize::bytes(1224));
        a.tick();
        assert_eq!(a.state().cl, f64::INFINITY);
        assert_eq!(a.state().mc, Bitrate::ZERO);
    }

    #[test]
    fn algorithm_3_decides_in_the_order_of_its_lines() {
        let mut a = adapter(3);
        // R = 7, R_ex = 3: attempts 8, 9 and 10 are granted, the CW reset before the 8th.
        assert_eq!(a.decide(7, 7, 1), Decision::Retry { reset_cw: true });
        assert_eq!(a.decide(8, 7, 1), Decision::Retry { reset_cw: false });
        assert_eq!(a.decide(9, 7, 1), Decision::Retry { reset_cw: false });
        assert_eq!(a.decide(10, 7, 1), Decision::GiveUp);
        // A long buffer, then congestion, come first.
        assert_eq!(a.decide(7, 7, 100), Decision::GiveUp);
        a.arrived(DataSize::bytes(10_000));
        a.delivered(DataSize::bytes(1_000), Duration::from_secs(1));
        a.tick();
        assert_eq!(a.decide(7, 7, 100), Decision::GiveUp);
        let s = a.state();
        assert_eq!(s.extended_attempts, 3);
        assert_eq!((s.gave_up_extension, s.gave_up_buffer, s.gave_up_congestion), (1, 1, 1));
        // R_ex = 0: every MPDU at R is given up, as without the adaptation.
        assert_eq!(adapter(0).decide(7, 7, 1), Decision::GiveUp);
    }
}
