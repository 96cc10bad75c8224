//! PIE, "Proportional Integral controller Enhanced" (RFC 8033): arriving packets are dropped at
//! random with a probability that a PI controller updates every T_UPDATE from the queueing
//! delay's distance to its target and its trend.
//!
//! The queueing delay is measured with timestamps (RFC 8033 §4.3 allows either that or Little's
//! law over an estimated departure rate, §5.2): current_qdelay is the sojourn time of the last
//! packet dequeued, and zero once a dequeue leaves the queue empty (as Linux's `pie` does
//! without its rate estimator), so an idle queue lets the probability decay. Of the optional
//! elements of §5, ECN (§5.1) and the cap on increases (§5.5) are in; dequeue rate estimation
//! (§5.2), active/inactive switching (§5.3) and derandomization (§5.4) are not.

use rand::RngExt;
use rtcbench_units::{DataSize, Duration, Instant};
use serde::{Deserialize, Serialize};

use super::fifo::Fifo;
use super::Signals;
use crate::packet::{DropReason, NetPacket};
use crate::rng::SimRng;

/// PIE parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PieConfig {
    /// QDELAY_REF (RFC 8033 §4.2): the queueing delay PIE steers towards. 15 ms.
    pub target: Duration,
    /// T_UPDATE (RFC 8033 §4.2): how often the drop probability is updated. 15 ms.
    pub t_update: Duration,
    /// alpha (RFC 8033 §4.2), in Hz: weight of the delay's distance to the target. 0.125.
    pub alpha: f64,
    /// beta (RFC 8033 §4.2), in Hz: weight of the delay's change since the last update. 1.25.
    pub beta: f64,
    /// MAX_BURST (RFC 8033 §4.4): how long a burst passes without random drops. 150 ms.
    pub max_burst: Duration,
    /// MEAN_PKTSIZE (RFC 8033 §4.1): a queue of at most two such packets is never dropped
    /// from. 1500 B (the RFC leaves it to the implementation; Linux uses the MTU).
    pub mean_pkt_size: DataSize,
    /// Mark ECN-capable packets CE instead of dropping them while the drop probability is at
    /// most `mark_ecnth` (RFC 8033 §5.1). Off.
    pub ecn: bool,
    /// mark_ecnth (RFC 8033 §5.1): above this probability ECN-capable packets are dropped
    /// too. 0.1.
    pub mark_ecnth: f64,
}

impl Default for PieConfig {
    fn default() -> Self {
        Self {
            target: Duration::from_millis(15),
            t_update: Duration::from_millis(15),
            alpha: 0.125,
            beta: 1.25,
            max_burst: Duration::from_millis(150),
            mean_pkt_size: DataSize::bytes(1500),
            ecn: false,
            mark_ecnth: 0.1,
        }
    }
}

/// RFC 8033 §4.1: with the delay under half the target, no random drop while the probability
/// is below this.
const WORK_CONSERVING_MAX_PROB: f64 = 0.2;
/// RFC 8033 §4.2: the auto-tuning of alpha and beta. While drop_prob is below the first value,
/// the controller's step is divided by the second, so a small probability moves in small steps.
const ADJUSTMENT: [(f64, f64); 6] =
    [(0.000_001, 2048.0), (0.000_01, 512.0), (0.000_1, 128.0), (0.001, 32.0), (0.01, 8.0), (0.1, 2.0)];
/// RFC 8033 §5.5: from this probability on, one update adds at most `MAX_PROB_STEP`.
const CAP_FROM_PROB: f64 = 0.1;
const MAX_PROB_STEP: f64 = 0.02;
/// RFC 8033 §4.2: the factor applied per update while the queue stays empty.
const DECAY: f64 = 0.98;

pub(super) struct Pie<P> {
    cfg: PieConfig,
    pub(super) fifo: Fifo<P>,
    rng: SimRng,
    /// drop_prob_ (RFC 8033 §4.2).
    drop_prob: f64,
    /// current_qdelay (RFC 8033 §4.3).
    qdelay: Duration,
    /// qdelay_old_ (RFC 8033 §4.2): current_qdelay at the previous update.
    qdelay_old: Duration,
    /// burst_allowance_ (RFC 8033 §4.4).
    burst_allowance: Duration,
    /// When the next periodic update is due (the updates run on a T_UPDATE grid from time zero).
    next_update: Instant,
}

impl<P: NetPacket> Pie<P> {
    pub(super) fn new(cfg: PieConfig, rng: SimRng) -> Self {
        Self {
            cfg,
            fifo: Fifo::default(),
            rng,
            drop_prob: 0.0,
            qdelay: Duration::ZERO,
            qdelay_old: Duration::ZERO,
            burst_allowance: cfg.max_burst,
            next_update: Instant::ZERO + cfg.t_update,
        }
    }

    /// RFC 8033 Appendix B's enque(): the link's hard limit first, then the random drop unless a
    /// burst allowance is left (§4.4), marking instead where §5.1 allows.
    pub(super) fn enqueue(
        &mut self,
        now: Instant,
        mut pkt: P,
        limit: Option<DataSize>,
        signals: &mut Signals<P>,
    ) -> Result<(), (P, DropReason)> {
        self.run_updates(now);
        if !self.fifo.has_room(pkt.size(), limit) {
            return Err((pkt, DropReason::QueueFull));
        }
        // §4.4: a queue that has been quiet for an update gets its burst allowance back.
        let half_target = self.cfg.target / 2;
        if self.drop_prob == 0.0 && self.qdelay < half_target && self.qdelay_old < half_target {
            self.burst_allowance = self.cfg.max_burst;
        }
        if self.burst_allowance.is_zero() && self.drop_early() {
            // §5.1: mark only while the probability is low; above mark_ecnth, drop.
            let may_mark = self.cfg.ecn && self.drop_prob <= self.cfg.mark_ecnth;
            if !(may_mark && signals.mark(&mut pkt)) {
                return Err((pkt, DropReason::Aqm));
            }
        }
        self.fifo.push(now, pkt);
        Ok(())
    }

    /// RFC 8033 §4.1: whether to drop the arriving packet. To stay work-conserving, never while
    /// the delay is under half the target and the probability under 0.2, nor while the queue
    /// holds at most a couple of packets.
    fn drop_early(&mut self) -> bool {
        let low_delay = self.qdelay_old < self.cfg.target / 2 && self.drop_prob < WORK_CONSERVING_MAX_PROB;
        if low_delay || self.fifo.bytes() <= self.cfg.mean_pkt_size * 2 {
            return false;
        }
        self.rng.random::<f64>() < self.drop_prob
    }

    /// RFC 8033 §4.3, with timestamps: the dequeued packet's sojourn time becomes current_qdelay.
    pub(super) fn dequeue(&mut self, now: Instant) -> Option<P> {
        self.run_updates(now);
        let queued = self.fifo.pop()?;
        self.qdelay = if self.fifo.is_empty() { Duration::ZERO } else { queued.sojourn(now) };
        Some(queued.pkt)
    }

    /// The periodic updates due by `now`, in order.
    fn run_updates(&mut self, now: Instant) {
        while self.next_update <= now {
            self.update();
            self.next_update += self.cfg.t_update;
        }
    }

    /// One T_UPDATE step: RFC 8033 §4.4's burst allowance and §4.2's drop probability.
    fn update(&mut self) {
        self.burst_allowance = (self.burst_allowance - self.cfg.t_update).max(Duration::ZERO);
        // §4.2: p = alpha·(current_qdelay − QDELAY_REF) + beta·(current_qdelay − qdelay_old),
        // delays in seconds, scaled down while drop_prob is small (auto-tuning).
        let (qdelay, qdelay_old) = (self.qdelay.as_secs_f64(), self.qdelay_old.as_secs_f64());
        let mut p =
            self.cfg.alpha * (qdelay - self.cfg.target.as_secs_f64()) + self.cfg.beta * (qdelay - qdelay_old);
        p /= ADJUSTMENT.iter().find(|(below, _)| self.drop_prob < *below).map_or(1.0, |(_, div)| *div);
        // §5.5: above 10 %, rise by at most 2 % per update.
        if self.drop_prob >= CAP_FROM_PROB && p > MAX_PROB_STEP {
            p = MAX_PROB_STEP;
        }
        self.drop_prob += p;
        // §4.2: decay exponentially while the queue stays empty.
        if self.qdelay.is_zero() && self.qdelay_old.is_zero() {
            self.drop_prob *= DECAY;
        }
        self.drop_prob = self.drop_prob.clamp(0.0, 1.0);
        self.qdelay_old = self.qdelay;
    }
}

#[cfg(test)]
mod tests {
    use rtcbench_wire::Ecn;

    use super::*;
    use crate::queue::test_support::{packet, TestPacket};
    use crate::rng::rng_for;

    fn pie(cfg: PieConfig) -> Pie<TestPacket> {
        Pie::new(cfg, rng_for(1, "pie"))
    }

    /// One update from the given state; returns the new drop probability.
    fn step(drop_prob: f64, qdelay_ms: i64, qdelay_old_ms: i64) -> f64 {
        let mut q = pie(PieConfig::default());
        q.drop_prob = drop_prob;
        q.qdelay = Duration::from_millis(qdelay_ms);
        q.qdelay_old = Duration::from_millis(qdelay_old_ms);
        q.update();
        assert_eq!(q.qdelay_old, q.qdelay);
        q.drop_prob
    }

    fn assert_close(got: f64, want: f64) {
        assert!((got - want).abs() <= 1e-12 * want.abs().max(1.0), "{got} vs {want}");
    }

    #[test]
    fn update_follows_the_control_law_and_its_auto_tuning() {
        // From zero: p = 0.125·(0.030 − 0.015) + 1.25·(0.030 − 0) = 0.039375, divided by 2048.
        assert_close(step(0.0, 30, 0), 0.039375 / 2048.0);
        // drop_prob in [1e-5, 1e-4): the step is divided by 128.
        assert_close(step(0.00005, 30, 30), 0.00005 + 0.001875 / 128.0);
        // In [0.01, 0.1): divided by 2; a falling delay pulls the probability down.
        assert_close(step(0.05, 10, 20), 0.05 + (0.125 * -0.005 + 1.25 * -0.010) / 2.0);
        // From 0.1 on, unscaled.
        assert_close(step(0.15, 16, 16), 0.15 + 0.125 * 0.001);
    }

    #[test]
    fn increases_are_capped_above_ten_percent() {
        // Unscaled the step would be 0.125·0.085 + 1.25·0.1 = 0.135625 (§5.5 caps it at 0.02).
        assert_close(step(0.15, 100, 0), 0.17);
        // Below 10 % the cap does not apply: 0.135625 / 2.
        assert_close(step(0.09, 100, 0), 0.09 + 0.135625 / 2.0);
    }

    #[test]
    fn probability_decays_while_the_queue_is_empty_and_stays_in_bounds() {
        assert_close(step(0.5, 0, 0), (0.5 - 0.125 * 0.015) * DECAY);
        assert_eq!(step(0.0, 0, 0), 0.0);
        assert_eq!(step(0.999, 1000, 0), 1.0);
    }

    #[test]
    fn burst_allowance_runs_out_by_update_and_comes_back_when_quiet() {
        let mut q = pie(PieConfig::default());
        // Nine updates (15 ms, 30 ms, ..., 135 ms) leave 15 ms of the 150.
        q.run_updates(Instant::from_millis(149));
        assert_eq!(q.burst_allowance, Duration::from_millis(15));
        q.run_updates(Instant::from_millis(150));
        assert!(q.burst_allowance.is_zero());
        let mut signals = Signals::default();
        q.enqueue(Instant::from_millis(151), packet(0, 0, 1000, Ecn::NotEct), None, &mut signals)
            .expect("accepted");
        assert_eq!(q.burst_allowance, Duration::from_millis(150));
    }

    /// A queue past its burst allowance with `prob` and a delay above target, holding enough to
    /// be dropped from; `n` packets offered with `ecn`: (dropped, marked).
    fn offer(cfg: PieConfig, prob: f64, ecn: Ecn, n: u64) -> (u64, u64) {
        let mut q = pie(cfg);
        let now = Instant::ZERO;
        let mut signals = Signals::default();
        for id in 0..3 {
            q.fifo.push(now, packet(id, 0, 1500, Ecn::NotEct));
        }
        (q.burst_allowance, q.drop_prob, q.qdelay_old) = (Duration::ZERO, prob, Duration::from_millis(20));
        let dropped = (0..n)
            .filter(|&id| q.enqueue(now, packet(10 + id, 0, 100, ecn), None, &mut signals).is_err())
            .count() as u64;
        (dropped, signals.ce_marks)
    }

    #[test]
    fn random_drops_follow_the_probability() {
        let (dropped, _) = offer(PieConfig::default(), 0.3, Ecn::NotEct, 20_000);
        let rate = dropped as f64 / 20_000.0;
        assert!((rate - 0.3).abs() < 0.01, "{rate}");
    }

    #[test]
    fn ecn_marks_up_to_mark_ecnth_and_drops_above() {
        let cfg = PieConfig { ecn: true, ..PieConfig::default() };
        let (dropped, marked) = offer(cfg, 0.1, Ecn::Ect0, 10_000);
        assert_eq!(dropped, 0);
        assert!((marked as f64 / 10_000.0 - 0.1).abs() < 0.01, "{marked}");
        // Not-ECT packets are dropped at the same probability.
        let (dropped, marked) = offer(cfg, 0.1, Ecn::NotEct, 10_000);
        assert_eq!(marked, 0);
        assert!((dropped as f64 / 10_000.0 - 0.1).abs() < 0.01, "{dropped}");
        // Above mark_ecnth even ECT packets are dropped.
        let (dropped, marked) = offer(cfg, 0.3, Ecn::Ect1, 10_000);
        assert_eq!(marked, 0);
        assert!((dropped as f64 / 10_000.0 - 0.3).abs() < 0.015, "{dropped}");
    }

    #[test]
    fn no_random_drop_while_delay_is_low_or_the_queue_short() {
        let mut q = pie(PieConfig::default());
        let mut signals = Signals::default();
        (q.burst_allowance, q.drop_prob) = (Duration::ZERO, 0.19);
        for id in 0..1000 {
            q.enqueue(Instant::ZERO, packet(id, 0, 100, Ecn::NotEct), None, &mut signals).expect("exempt");
        }
        // Above the delay exemption, a queue of at most two mean packets is still exempt.
        let mut q = pie(PieConfig::default());
        (q.burst_allowance, q.drop_prob, q.qdelay_old) = (Duration::ZERO, 0.9, Duration::from_millis(20));
        for id in 0..30 {
            q.enqueue(Instant::ZERO, packet(id, 0, 100, Ecn::NotEct), None, &mut signals).expect("exempt");
        }
    }
}
