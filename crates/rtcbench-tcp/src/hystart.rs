//! HyStart++ (RFC 9406): slow start that leaves early when the round-trip time rises, through
//! Conservative Slow Start (CSS) so that a false alarm costs little.
//!
//! Rounds are delimited by sequence numbers (§4.2): a round ends when SND.UNA reaches the
//! `windowEnd` recorded at its start (SND.NXT then). The per-ACK RTT sample is the one the
//! sender's RTT estimator takes (Karn's rule), so retransmission ACKs give none.
//!
//! As §4.3 recommends, the sender uses HyStart++ only in the initial slow start and falls back to
//! standard slow start after a loss or timeout.

use rtcbench_units::{DataSize, Duration};

/// MIN_RTT_THRESH, §4.3.
pub const MIN_RTT_THRESH: Duration = Duration::from_millis(4);
/// MAX_RTT_THRESH, §4.3.
pub const MAX_RTT_THRESH: Duration = Duration::from_millis(16);
/// MIN_RTT_DIVISOR, §4.3.
pub const MIN_RTT_DIVISOR: i64 = 8;
/// N_RTT_SAMPLE, §4.3: RTT samples a round needs before its minimum is trusted.
pub const N_RTT_SAMPLE: u32 = 8;
/// CSS_GROWTH_DIVISOR, §4.3.
pub const CSS_GROWTH_DIVISOR: u64 = 4;
/// CSS_ROUNDS, §4.3.
pub const CSS_ROUNDS: u32 = 5;
/// L, §4.3: the per-ACK growth cap in SMSS for a sender that does not pace (rtcbench's TCP
/// does not; see `docs/tcp.md`).
pub const L_UNPACED: u64 = 8;

/// HyStart++ state (the variables of §4.2; `None` stands for "infinity").
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HyStart {
    /// windowEnd: the round ends when SND.UNA reaches it.
    window_end: Option<u64>,
    /// lastRoundMinRTT.
    last_round_min_rtt: Option<Duration>,
    /// currentRoundMinRTT.
    current_round_min_rtt: Option<Duration>,
    /// rttSampleCount.
    rtt_sample_count: u32,
    /// cssBaselineMinRtt; `Some` while in CSS.
    css_baseline_min_rtt: Option<Duration>,
    /// CSS rounds completed.
    css_rounds: u32,
}

impl HyStart {
    pub fn new() -> Self {
        Self::default()
    }

    /// In Conservative Slow Start.
    pub fn in_css(&self) -> bool {
        self.css_baseline_min_rtt.is_some()
    }

    /// Per ACK during slow start or CSS, with SND.UNA and SND.NXT after the ACK and the RTT
    /// sample it gave. Returns true when CSS_ROUNDS rounds of CSS are complete: the caller then
    /// enters congestion avoidance by setting ssthresh = cwnd (§4.2).
    pub fn on_ack(&mut self, snd_una: u64, snd_nxt: u64, rtt: Option<Duration>) -> bool {
        if self.window_end.is_none_or(|end| snd_una >= end) {
            if self.window_end.is_some() && self.in_css() {
                self.css_rounds += 1;
                if self.css_rounds >= CSS_ROUNDS {
                    return true;
                }
            }
            self.start_round(snd_nxt);
        }
        if let Some(rtt) = rtt {
            self.current_round_min_rtt = Some(self.current_round_min_rtt.map_or(rtt, |m| m.min(rtt)));
            self.rtt_sample_count += 1;
        }
        if self.rtt_sample_count >= N_RTT_SAMPLE {
            self.check_delay();
        }
        false
    }

    /// §4.2: at the start of each round, lastRoundMinRTT = currentRoundMinRTT,
    /// currentRoundMinRTT = infinity, rttSampleCount = 0.
    fn start_round(&mut self, snd_nxt: u64) {
        self.window_end = Some(snd_nxt);
        self.last_round_min_rtt = self.current_round_min_rtt.take();
        self.rtt_sample_count = 0;
    }

    /// §4.2: in slow start, a round minimum RttThresh above the last one enters CSS; in CSS, a
    /// round minimum below the baseline shows the exit was spurious and resumes slow start.
    fn check_delay(&mut self) {
        let Some(current) = self.current_round_min_rtt else { return };
        match self.css_baseline_min_rtt {
            None => {
                let Some(last) = self.last_round_min_rtt else { return };
                let rtt_thresh = (last / MIN_RTT_DIVISOR).max(MIN_RTT_THRESH).min(MAX_RTT_THRESH);
                if current >= last + rtt_thresh {
                    self.css_baseline_min_rtt = Some(current);
                    self.css_rounds = 0;
                }
            }
            Some(baseline) if current < baseline => self.css_baseline_min_rtt = None,
            Some(_) => {}
        }
    }

    /// The cwnd increase for an ACK of `acked` new bytes: min(N, L·SMSS) in slow start, divided
    /// by CSS_GROWTH_DIVISOR in CSS (§4.2).
    pub fn cwnd_increase(&self, acked: DataSize, smss: DataSize) -> DataSize {
        let increase = acked.min(smss * L_UNPACED);
        if self.in_css() {
            DataSize::bytes(increase.as_bytes() / CSS_GROWTH_DIVISOR)
        } else {
            increase
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: f64) -> Duration {
        Duration::from_millis_f64(v)
    }

    /// Round `r`: ten ACKs with RTT samples `rtt` for SND.UNA = 10·r .. 10·r + 9, with SND.NXT
    /// = 10·r + 10, so the first ACK ends round r − 1. Returns whether HyStart++ asked to exit to
    /// congestion avoidance.
    fn round(h: &mut HyStart, r: u64, rtt: Duration) -> bool {
        let base = 10 * r;
        let mut exit = false;
        for i in 0..10 {
            exit |= h.on_ack(base + i, base + 10, Some(rtt));
        }
        exit
    }

    #[test]
    fn rtt_increase_enters_css_and_five_rounds_exit_to_ca() {
        let mut h = HyStart::new();
        assert!(!round(&mut h, 0, ms(100.0)));
        assert!(!round(&mut h, 1, ms(100.0)));
        // RttThresh = clamp(100/8, 4, 16) = 12.5 ms: 112 ms is not enough.
        assert!(!round(&mut h, 2, ms(112.0)));
        assert!(!h.in_css());
        // Against the last round's 112 ms, RttThresh is 14 ms.
        assert!(!round(&mut h, 3, ms(126.0)));
        assert!(h.in_css());
        assert_eq!(h.cwnd_increase(DataSize::bytes(2000), DataSize::bytes(1000)), DataSize::bytes(500));
        // The round CSS started in (3) counts as the first of CSS_ROUNDS; the ACK that ends
        // round 7 asks for congestion avoidance.
        let exits: Vec<bool> = (4..9).map(|r| round(&mut h, r, ms(126.0))).collect();
        assert_eq!(exits, vec![false, false, false, false, true]);
    }

    #[test]
    fn css_returns_to_slow_start_when_the_rtt_falls_below_the_baseline() {
        let mut h = HyStart::new();
        round(&mut h, 0, ms(40.0));
        round(&mut h, 1, ms(46.0)); // threshold clamp(5, 4, 16) = 5 ms
        assert!(h.in_css());
        round(&mut h, 2, ms(45.0));
        assert!(!h.in_css());
        assert_eq!(h.cwnd_increase(DataSize::bytes(2000), DataSize::bytes(1000)), DataSize::bytes(2000));
    }

    #[test]
    fn thresholds_are_clamped_and_need_eight_samples() {
        // 10 ms RTT: 10/8 = 1.25 ms is raised to MIN_RTT_THRESH.
        let mut h = HyStart::new();
        round(&mut h, 0, ms(10.0));
        round(&mut h, 1, ms(13.9));
        assert!(!h.in_css());
        round(&mut h, 2, ms(18.0));
        assert!(h.in_css());
        // 400 ms RTT: 50 ms is capped at MAX_RTT_THRESH.
        let mut h = HyStart::new();
        round(&mut h, 0, ms(400.0));
        round(&mut h, 1, ms(416.0));
        assert!(h.in_css());
        // Seven samples are not enough.
        let mut h = HyStart::new();
        round(&mut h, 0, ms(100.0));
        for i in 10..17 {
            h.on_ack(i, 40, Some(ms(200.0)));
        }
        assert!(!h.in_css());
        h.on_ack(17, 40, Some(ms(200.0)));
        assert!(h.in_css());
    }

    #[test]
    fn slow_start_growth_is_capped_at_l_smss() {
        let h = HyStart::new();
        assert_eq!(h.cwnd_increase(DataSize::bytes(20_000), DataSize::bytes(1000)), DataSize::bytes(8000));
    }
}
