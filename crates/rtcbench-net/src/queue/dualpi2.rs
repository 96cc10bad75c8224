//! DualPI2, the DualQ Coupled AQM of RFC 9332: an L queue for L4S packets (ECT(1) and CE,
//! RFC 9331 §5.1) and a C queue for the rest, one PI controller whose base probability p' is
//! squared for the C queue and scaled by the coupling factor k for the L queue (RFC 9332 §2.1,
//! eq. (1)), a shallow native AQM on the L queue, and a scheduler that gives the L queue priority
//! while protecting the C queue from starvation (§2.2, §4.2.2).
//!
//! Two parameter sets: RFC 9332 Appendix A's example (Figure 2) and Linux `sch_dualpi2`'s defaults
//! (`dualpi2_reset_default`, mainline 2025). `docs/queues.md` lists every parameter with its source
//! and what this model leaves out. The RFC's pseudocode and Linux both decide marks and drops at
//! dequeue, and so does this model; random decisions draw from the link's queue generator.
//!
//! Like PIE, the controller runs without a timer: every Tupdate boundary passed since the previous
//! call is processed, in order, at the next enqueue or dequeue, sampling the queues' head sojourn
//! at the boundary itself. Nothing the update reads changes between calls, so this is what a timer
//! would compute.

use rand::RngExt;
use rtcbench_units::{DataSize, Duration, Instant};
use rtcbench_wire::Ecn;
use serde::{Deserialize, Serialize};

use super::fifo::Fifo;
use super::Signals;
use crate::packet::{DropReason, NetPacket};
use crate::rng::SimRng;

/// Which queue delay the PI controller steers to its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PiQueueDelay {
    /// The C queue's head sojourn, `cq.time()` (RFC 9332 Appendix A.1, the base PI update).
    Classic,
    /// The larger of the two queues' head sojourns (Linux `calculate_probability`), so that an
    /// overloaded L queue also raises p'.
    Max,
}

/// DualPI2 parameters. [`DualPi2Config::rfc9332`] and [`DualPi2Config::linux`] are the two
/// default sets; `Default` is the RFC's.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DualPi2Config {
    /// target (RFC 9332 Fig. 2 l. 8): the queue delay the PI controller steers towards.
    pub target: Duration,
    /// Tupdate (RFC 9332 Fig. 2 l. 12): how often p' is updated.
    pub t_update: Duration,
    /// alpha (RFC 9332 Fig. 2 l. 13), in Hz: integral gain, on the delay's distance to target.
    pub alpha: f64,
    /// beta (RFC 9332 Fig. 2 l. 14), in Hz: proportional gain, on the delay's change per update.
    pub beta: f64,
    /// k (RFC 9332 §2.1, Fig. 2 l. 4): the coupling factor, p_CL = k·p'.
    pub coupling: f64,
    /// minTh (RFC 9332 Fig. 2 l. 17): L sojourn at which native marking starts.
    pub l_min_th: Duration,
    /// range (RFC 9332 Fig. 2 l. 18): the native ramp rises from 0 at `l_min_th` to 1 at
    /// `l_min_th + l_range`; zero makes it a step that marks every packet above `l_min_th`
    /// (Linux's `step_thresh`).
    pub l_range: Duration,
    /// Th_len (RFC 9332 Fig. 2 l. 19), in packets: the native AQM leaves a packet unmarked while
    /// the L queue, counting that packet, holds at most this many.
    pub th_len: u32,
    /// The delay the PI controller reads.
    pub pi_delay: PiQueueDelay,
    /// The C queue's share of the link when both queues are backlogged (the WRR weight of
    /// RFC 9332 §4.2.2; Linux `c_protection`), from 0 to 1.
    pub classic_weight: f64,
    /// Overload (p_CL = k·p' above 1, i.e. p_C above p_Cmax = 1/k², RFC 9332 Fig. 2 l. 11):
    /// `true` drops L packets with probability p_C and drops ECN-capable C packets instead of
    /// marking them (RFC 9332 §4.2.3; Linux `drop_on_overload`); `false` caps p' at 1/k so the L
    /// queue is only ever marked and the hard limit does the dropping (Linux `overflow`).
    pub drop_overload: bool,
    /// No coupled or classic mark or drop while both queues together hold less than this after
    /// the departing packet (Linux: two MTUs; the RFC has no such rule). The native L AQM still
    /// applies.
    pub min_backlog: DataSize,
}

impl DualPi2Config {
    /// RFC 9332 Appendix A, Figure 2: target 15 ms and RTT_max 100 ms, from which Tupdate,
    /// alpha and beta are derived (lines 12-14, see [`DualPi2Config::rfc9332_gains`]); k = 2;
    /// a native ramp from 800 µs over 400 µs with Th_len = 1 packet.
    pub fn rfc9332() -> Self {
        let target = RFC9332_TARGET;
        let (t_update, alpha, beta) = Self::rfc9332_gains(target, RFC9332_RTT_MAX);
        Self {
            target,
            t_update,
            alpha,
            beta,
            // Fig. 2 l. 4.
            coupling: 2.0,
            // Fig. 2 ll. 17-19.
            l_min_th: Duration::from_micros(800),
            l_range: Duration::from_micros(400),
            th_len: 1,
            // Appendix A.1's dualpi2_update reads the C queue.
            pi_delay: PiQueueDelay::Classic,
            // Fig. 2 l. 5 leaves the scheduler's weight out ("NOT SHOWN"); Linux's value, so that
            // the two sets differ only where the RFC says something.
            classic_weight: LINUX_CLASSIC_WEIGHT,
            // §4.2.3: on overload, switch L to drop like C.
            drop_overload: true,
            min_backlog: DataSize::ZERO,
        }
    }

    /// RFC 9332 Fig. 2 lines 12-14: Tupdate = min(target, RTT_max/3),
    /// alpha = 0.1·Tupdate/RTT_max², beta = 0.3/RTT_max (gains in Hz).
    pub fn rfc9332_gains(target: Duration, rtt_max: Duration) -> (Duration, f64, f64) {
        let t_update = target.min(rtt_max / 3);
        let rtt = rtt_max.as_secs_f64();
        (t_update, 0.1 * t_update.as_secs_f64() / (rtt * rtt), 0.3 / rtt)
    }

    /// Linux `sch_dualpi2` (net/sched/sch_dualpi2.c, `dualpi2_reset_default`): target 15 ms,
    /// tupdate 16 ms, alpha 41/256 Hz, beta 819/256 Hz (given in 1/256 Hz), a 1 ms step on the
    /// L queue's sojourn applied at any L queue length (`min_qlen_step` 0), coupling 2, C weight
    /// 10 %, drop on overload, no signal below two MTUs of backlog (`must_drop`), and the PI
    /// controller on the larger head sojourn of the two queues (`calculate_probability`).
    pub fn linux() -> Self {
        Self {
            target: Duration::from_millis(15),
            t_update: Duration::from_millis(16),
            alpha: 41.0 / 256.0,
            beta: 819.0 / 256.0,
            coupling: 2.0,
            l_min_th: Duration::from_millis(1),
            l_range: Duration::ZERO,
            th_len: 0,
            pi_delay: PiQueueDelay::Max,
            classic_weight: LINUX_CLASSIC_WEIGHT,
            drop_overload: true,
            min_backlog: MTU * 2,
        }
    }
}

impl Default for DualPi2Config {
    fn default() -> Self {
        Self::rfc9332()
    }
}

/// RFC 9332 Fig. 2 l. 8.
pub const RFC9332_TARGET: Duration = Duration::from_millis(15);
/// RTT_max (RFC 9332 Fig. 2 l. 9): the worst-case RTT the gains are tuned for.
pub const RFC9332_RTT_MAX: Duration = Duration::from_millis(100);
/// Linux `dualpi2_calculate_c_protection(sch, q, 10)`: wc = 10 %, wl = 90 %.
const LINUX_CLASSIC_WEIGHT: f64 = 0.1;
/// The packet size Linux scales its WRR credit and its backlog rule by (the device MTU).
const MTU: DataSize = DataSize::bytes(1500);

/// What a DualPI2 queue holds and has done: the counters a links table can show. All
/// probabilities are from 0 to 1.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DualPi2State {
    pub l_bytes: DataSize,
    pub l_packets: usize,
    pub c_bytes: DataSize,
    pub c_packets: usize,
    /// Sojourn time of the last packet each queue handed on (not of packets it dropped).
    pub l_sojourn: Duration,
    pub c_sojourn: Duration,
    /// p', the base probability (RFC 9332 §2.1, §2.4).
    pub p_base: f64,
    /// p_C = p'² (RFC 9332 eq. (1)).
    pub p_c: f64,
    /// p_CL = min(k·p', 1), the coupled L probability.
    pub p_cl: f64,
    /// p_L = max(p'_L, p_CL) for the last packet that left the L queue (1 in overload).
    pub p_l: f64,
    /// Packets marked CE, per queue (a CE packet that is marked again counts, as in `Queue`).
    pub l_marks: u64,
    pub c_marks: u64,
    /// Packets dropped by the AQM, per queue.
    pub l_drops: u64,
    pub c_drops: u64,
    /// Arrivals refused at the hard limit, per queue they were classified to.
    pub l_full_drops: u64,
    pub c_full_drops: u64,
}

/// A DualPI2 queue at a sample (RFC 9332): its state, with the marks and drops of each queue
/// since the previous sample. The links table's DualPI2 columns (docs/traces.md), in the
/// simulator and in the emulation relay alike.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DualPi2Sample {
    pub state: DualPi2State,
    pub l_marks: u64,
    pub c_marks: u64,
    /// The AQM's drops and the arrivals refused at the limit, per queue.
    pub l_drops: u64,
    pub c_drops: u64,
}

/// Turns a DualPI2 queue's running counters into a sample's counts since the previous sample.
#[derive(Clone, Copy, Debug, Default)]
pub struct DualPi2Sampler {
    /// L marks, C marks, L drops, C drops at the previous sample.
    counted: [u64; 4],
}

impl DualPi2Sampler {
    /// The sample of `state`; the next one counts from here.
    pub fn sample(&mut self, state: DualPi2State) -> DualPi2Sample {
        let counts = [
            state.l_marks,
            state.c_marks,
            state.l_drops + state.l_full_drops,
            state.c_drops + state.c_full_drops,
        ];
        let [l_marks, c_marks, l_drops, c_drops] = std::array::from_fn(|j| counts[j] - self.counted[j]);
        self.counted = counts;
        DualPi2Sample { state, l_marks, c_marks, l_drops, c_drops }
    }
}

pub(super) struct DualPi2<P> {
    cfg: DualPi2Config,
    l: Fifo<P>,
    c: Fifo<P>,
    rng: SimRng,
    /// p' (RFC 9332 §2.1).
    p_base: f64,
    /// prevq (RFC 9332 Appendix A.1): the delay at the previous update.
    prev_q: Duration,
    next_update: Instant,
    /// The WRR credit, in weighted bytes: the L queue is served while it is at most zero or the C
    /// queue is empty (Linux `c_protection_credit`).
    credit: f64,
    state: DualPi2State,
}

impl<P: NetPacket> DualPi2<P> {
    pub(super) fn new(cfg: DualPi2Config, rng: SimRng) -> Self {
        let mut q = Self {
            cfg,
            l: Fifo::default(),
            c: Fifo::default(),
            rng,
            p_base: 0.0,
            prev_q: Duration::ZERO,
            next_update: Instant::ZERO + cfg.t_update,
            credit: 0.0,
            state: DualPi2State::default(),
        };
        q.reset_credit();
        q
    }

    /// The WRR credit when both queues are empty: one MTU times (wc − wl), so an L weight above
    /// the C weight starts with the L queue (Linux `dualpi2_calculate_c_protection`).
    fn reset_credit(&mut self) {
        let wc = self.cfg.classic_weight;
        self.credit = MTU.as_bytes() as f64 * (wc - (1.0 - wc));
    }

    pub(super) fn bytes(&self) -> DataSize {
        self.l.bytes() + self.c.bytes()
    }

    /// RFC 9332 Appendix A.1 `dualpi2_enqueue`: the hard limit counts both queues (the RFC
    /// checks `lq.byt() + cq.byt() + MTU > limit`; here the arriving packet's own size, as every
    /// discipline of this crate), then ECT(1) and CE go to L and the rest to C (RFC 9331 §5.1).
    pub(super) fn enqueue(
        &mut self,
        now: Instant,
        pkt: P,
        limit: Option<DataSize>,
    ) -> Result<(), (P, DropReason)> {
        self.run_updates(now);
        let to_l = is_l4s(pkt.ecn());
        if limit.is_some_and(|limit| self.bytes() + pkt.size() > limit) {
            *(if to_l { &mut self.state.l_full_drops } else { &mut self.state.c_full_drops }) += 1;
            return Err((pkt, DropReason::QueueFull));
        }
        if to_l {
            self.l.push(now, pkt);
        } else {
            self.c.push(now, pkt);
        }
        Ok(())
    }

    /// RFC 9332 Appendix A `dualpi2_dequeue`: the scheduler picks a queue; an L packet is marked
    /// with p_L = max(p'_L, p_CL); a C packet is marked or, if Not-ECT, dropped with p_C; a drop
    /// goes round again.
    pub(super) fn dequeue(&mut self, now: Instant, signals: &mut Signals<P>) -> Option<P> {
        self.run_updates(now);
        loop {
            let (l_busy, c_busy) = (!self.l.is_empty(), !self.c.is_empty());
            if !l_busy && !c_busy {
                self.reset_credit();
                return None;
            }
            // WRR with C-queue protection (RFC 9332 §4.2.2; Linux `dequeue_packet`): the credit
            // only moves while both queues hold packets.
            let from_l = l_busy && (!c_busy || self.credit <= 0.0);
            let l_len = self.l.len();
            let queued =
                if from_l { self.l.pop() } else { self.c.pop() }.expect("the chosen queue holds a packet");
            let sojourn = queued.sojourn(now);
            let mut pkt = queued.pkt;
            let size = pkt.size().as_bytes() as f64;
            let signal = self.bytes() >= self.cfg.min_backlog;
            let overload = self.cfg.coupling * self.p_base > 1.0;
            let p_c = self.p_c();
            if from_l {
                if overload && self.cfg.drop_overload && signal && self.roll(p_c) {
                    // §4.2.3: an overloaded L queue reverts to Classic drop.
                    self.state.l_drops += 1;
                    signals.drop_packet(pkt, DropReason::Aqm);
                    continue;
                }
                let native =
                    if l_len as u64 <= u64::from(self.cfg.th_len) { 0.0 } else { self.laqm(sojourn) };
                let coupled = if !signal {
                    0.0
                } else if overload {
                    1.0
                } else {
                    self.p_cl()
                };
                // Appendix A: p_L = max(p'_L, p_CL), the combining function.
                let p_l = native.max(coupled);
                self.state.p_l = p_l;
                if self.roll(p_l) && signals.mark(&mut pkt) {
                    self.state.l_marks += 1;
                }
                self.state.l_sojourn = sojourn;
                if c_busy {
                    self.credit += self.cfg.classic_weight * size;
                }
            } else {
                if signal && self.roll(p_c) {
                    // RFC 3168 §5: mark an ECN-capable packet instead of dropping it, except on
                    // overload (§4.2.3, Linux `dualpi2_classic_marking`).
                    if overload || pkt.ecn() == Ecn::NotEct {
                        self.state.c_drops += 1;
                        signals.drop_packet(pkt, DropReason::Aqm);
                        continue;
                    }
                    if signals.mark(&mut pkt) {
                        self.state.c_marks += 1;
                    }
                }
                self.state.c_sojourn = sojourn;
                if l_busy {
                    self.credit -= (1.0 - self.cfg.classic_weight) * size;
                }
            }
            return Some(pkt);
        }
    }

    /// p_C = p'² (RFC 9332 eq. (1), Appendix A.1).
    fn p_c(&self) -> f64 {
        self.p_base * self.p_base
    }

    /// p_CL = k·p' (RFC 9332 eq. (1)), at most p_Lmax = 1 (Fig. 2 l. 22).
    fn p_cl(&self) -> f64 {
        (self.cfg.coupling * self.p_base).min(1.0)
    }

    /// The native L AQM, p'_L = laqm(qdelay) (RFC 9332 Appendix A.1): 0 up to minTh, rising
    /// linearly over `range`, 1 from minTh + range. With range 0 it is Linux's step: 1 strictly
    /// above the threshold.
    fn laqm(&self, qdelay: Duration) -> f64 {
        let (min_th, range) = (self.cfg.l_min_th, self.cfg.l_range);
        if qdelay <= min_th {
            0.0
        } else if qdelay >= min_th + range {
            1.0
        } else {
            (qdelay - min_th).as_secs_f64() / range.as_secs_f64()
        }
    }

    fn roll(&mut self, p: f64) -> bool {
        p > 0.0 && self.rng.random::<f64>() < p
    }

    /// The periodic updates due by `now`, in order.
    fn run_updates(&mut self, now: Instant) {
        while self.next_update <= now {
            self.update(self.next_update);
            self.next_update += self.cfg.t_update;
        }
    }

    /// RFC 9332 Appendix A.1 `dualpi2_update` at `at`: p' ← p' + alpha·(curq − target) +
    /// beta·(curq − prevq), delays in seconds, bounded to [0, 1] (or to 1/k without drop on
    /// overload, as Linux `calculate_probability`).
    fn update(&mut self, at: Instant) {
        let c_delay = self.c.head_sojourn(at);
        let curq = match self.cfg.pi_delay {
            PiQueueDelay::Classic => c_delay,
            PiQueueDelay::Max => c_delay.max(self.l.head_sojourn(at)),
        };
        let (q, prev, target) =
            (curq.as_secs_f64(), self.prev_q.as_secs_f64(), self.cfg.target.as_secs_f64());
        let p = self.p_base + self.cfg.alpha * (q - target) + self.cfg.beta * (q - prev);
        let max = if self.cfg.drop_overload { 1.0 } else { (1.0 / self.cfg.coupling).min(1.0) };
        self.p_base = p.clamp(0.0, max);
        self.prev_q = curq;
    }

    pub(super) fn state(&self) -> DualPi2State {
        DualPi2State {
            l_bytes: self.l.bytes(),
            l_packets: self.l.len(),
            c_bytes: self.c.bytes(),
            c_packets: self.c.len(),
            p_base: self.p_base,
            p_c: self.p_c(),
            p_cl: self.p_cl(),
            ..self.state
        }
    }
}

/// RFC 9331 §5.1, RFC 9332 §2.3: ECT(1) and CE are classified to the L queue.
fn is_l4s(ecn: Ecn) -> bool {
    matches!(ecn, Ecn::Ect1 | Ecn::Ce)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::test_support::{packet, TestPacket};
    use crate::rng::rng_for;

    fn dualpi2(cfg: DualPi2Config) -> DualPi2<TestPacket> {
        DualPi2::new(cfg, rng_for(1, "dualpi2"))
    }

    fn assert_close(got: f64, want: f64) {
        assert!((got - want).abs() <= 1e-12, "{got} vs {want}");
    }

    /// RFC 9332 Appendix A.1's dualpi2_update, written out here from the RFC: one step of p'.
    fn pi_step(cfg: &DualPi2Config, p: f64, curq_s: f64, prevq_s: f64) -> f64 {
        let p = p + cfg.alpha * (curq_s - cfg.target.as_secs_f64()) + cfg.beta * (curq_s - prevq_s);
        p.clamp(0.0, 1.0)
    }

    #[test]
    fn rfc9332_set_is_figure_2_with_its_derived_gains() {
        let cfg = DualPi2Config::rfc9332();
        // Fig. 2 ll. 12-14 with target 15 ms, RTT_max 100 ms: Tupdate = min(15 ms, 33.3 ms).
        assert_eq!(cfg.t_update, Duration::from_millis(15));
        assert_close(cfg.alpha, 0.1 * 0.015 / (0.1 * 0.1));
        assert_close(cfg.beta, 0.3 / 0.1);
        assert_eq!(
            (cfg.l_min_th, cfg.l_range, cfg.th_len),
            (Duration::from_micros(800), Duration::from_micros(400), 1)
        );
        assert_eq!(cfg.coupling, 2.0);
        // An RTT_max of 30 ms makes Tupdate RTT_max/3 = 10 ms, below the target.
        let (t_update, alpha, beta) = DualPi2Config::rfc9332_gains(RFC9332_TARGET, Duration::from_millis(30));
        assert_eq!(t_update, Duration::from_millis(10));
        assert_close(alpha, 0.1 * 0.010 / (0.03 * 0.03));
        assert_close(beta, 0.3 / 0.03);
    }

    #[test]
    fn base_probability_follows_the_pi_equation_on_a_rising_classic_delay() {
        let cfg = DualPi2Config::rfc9332();
        let mut q = dualpi2(cfg);
        // One classic packet arrives at 7 ms and never leaves: at the n-th update (n·15 ms) the
        // C queue's head has waited n·15 − 7 ms, a delay rising linearly across the target.
        q.enqueue(Instant::from_millis(7), packet(0, 0, 1000, Ecn::NotEct), None).expect("room");
        let (mut p, mut prevq) = (0.0, 0.0);
        for n in 1..=40 {
            let t = Instant::ZERO + cfg.t_update * n;
            q.run_updates(t);
            let curq = (t - Instant::from_millis(7)).as_secs_f64();
            p = pi_step(&cfg, p, curq, prevq);
            prevq = curq;
            assert_close(q.p_base, p);
        }
        // The delay passes the target at the first update, so p' rises and saturates at 1.
        assert_eq!(q.p_base, 1.0);
    }

    #[test]
    fn linux_set_reads_the_larger_head_sojourn_and_is_bounded_below_by_zero() {
        let cfg = DualPi2Config::linux();
        let mut q = dualpi2(cfg);
        // An empty queue: the delay is below the target, p' stays at 0.
        q.run_updates(Instant::from_millis(160));
        assert_eq!(q.p_base, 0.0);
        // Only the L queue holds a packet (from 170 ms): Linux's controller still sees its delay.
        q.enqueue(Instant::from_millis(170), packet(0, 0, 1000, Ecn::Ect1), None).expect("room");
        let (mut p, mut prevq) = (0.0, 0.0);
        for n in 11..=30 {
            let t = Instant::ZERO + cfg.t_update * n;
            q.run_updates(t);
            let curq = (t - Instant::from_millis(170)).max(Duration::ZERO).as_secs_f64();
            p = pi_step(&cfg, p, curq, prevq);
            prevq = curq;
            assert_close(q.p_base, p);
        }
        assert!(q.p_base > 0.0);
        // The RFC set reads the C queue only: the same L packet leaves p' at 0.
        let mut q = dualpi2(DualPi2Config::rfc9332());
        q.enqueue(Instant::ZERO, packet(0, 0, 1000, Ecn::Ect1), None).expect("room");
        q.run_updates(Instant::from_secs(2));
        assert_eq!(q.p_base, 0.0);
    }

    #[test]
    fn classic_and_coupled_probabilities_follow_equation_1() {
        for (k, p, p_c, p_cl) in
            [(2.0, 0.2, 0.04, 0.4), (4.0, 0.2, 0.04, 0.8), (1.5, 0.3, 0.09, 0.45), (2.0, 0.6, 0.36, 1.0)]
        {
            let mut q = dualpi2(DualPi2Config { coupling: k, ..DualPi2Config::rfc9332() });
            q.p_base = p;
            let s = q.state();
            assert_close(s.p_c, p_c);
            assert_close(s.p_cl, p_cl);
            assert_eq!(s.p_base, p);
        }
    }

    #[test]
    fn ect1_and_ce_go_to_l_not_ect_and_ect0_to_c() {
        let mut q = dualpi2(DualPi2Config::rfc9332());
        for (id, ecn) in [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce].into_iter().enumerate() {
            q.enqueue(Instant::ZERO, packet(id as u64, 0, 100 * (id as u64 + 1), ecn), None).expect("room");
        }
        let s = q.state();
        assert_eq!((s.c_packets, s.c_bytes), (2, DataSize::bytes(100 + 200)));
        assert_eq!((s.l_packets, s.l_bytes), (2, DataSize::bytes(300 + 400)));
    }

    /// The codepoint the first of `in_queue` L packets leaves with after `waited_us` (at p' = 0,
    /// so only the native AQM can mark).
    fn l_departure(cfg: DualPi2Config, in_queue: u64, waited_us: i64) -> Ecn {
        let mut q = dualpi2(cfg);
        for id in 0..in_queue {
            q.enqueue(Instant::ZERO, packet(id, 0, 1000, Ecn::Ect1), None).expect("room");
        }
        q.dequeue(Instant::from_micros(waited_us), &mut Signals::default()).expect("queued").ecn
    }

    #[test]
    fn native_l_ramp_starts_at_min_th_and_spares_a_lone_packet() {
        let cfg = DualPi2Config::rfc9332();
        let q = dualpi2(cfg);
        // laqm(): 0 up to minTh = 800 µs, linear to 1 at minTh + range = 1200 µs.
        for (us, p) in
            [(0, 0.0), (800, 0.0), (900, 0.25), (1000, 0.5), (1100, 0.75), (1200, 1.0), (5000, 1.0)]
        {
            assert_close(q.laqm(Duration::from_micros(us)), p);
        }
        // With two packets in the L queue, one that waited past the ramp is always marked and
        // one below minTh never is.
        assert_eq!(l_departure(cfg, 2, 1300), Ecn::Ce);
        assert_eq!(l_departure(cfg, 2, 790), Ecn::Ect1);
        // Th_len = 1: a packet alone in the L queue is never marked by the native AQM.
        assert_eq!(l_departure(cfg, 1, 50_000), Ecn::Ect1);
        // Mid-ramp, about half of the packets are marked.
        let marked = (0..4000)
            .filter(|&i| {
                let mut q = DualPi2::new(cfg, rng_for(i, "ramp"));
                q.enqueue(Instant::ZERO, packet(0, 0, 1000, Ecn::Ect1), None).expect("room");
                q.enqueue(Instant::ZERO, packet(1, 0, 1000, Ecn::Ect1), None).expect("room");
                q.dequeue(Instant::from_micros(1000), &mut Signals::default()).expect("queued").ecn == Ecn::Ce
            })
            .count();
        assert!((marked as f64 / 4000.0 - 0.5).abs() < 0.03, "{marked}");
    }

    #[test]
    fn linux_step_marks_strictly_above_one_millisecond_even_a_lone_packet() {
        let cfg = DualPi2Config::linux();
        assert_eq!(l_departure(cfg, 1, 1000), Ecn::Ect1);
        assert_eq!(l_departure(cfg, 1, 1001), Ecn::Ce);
        assert_eq!(l_departure(cfg, 4, 1001), Ecn::Ce);
    }

    /// A queue at p' = `p` holding `n` classic packets of `ecn` (and nothing else); drains it and
    /// returns (handed on unmarked, marked, dropped).
    fn drain_classic(cfg: DualPi2Config, p: f64, ecn: Ecn, n: u64) -> (u64, u64, u64) {
        let mut q = dualpi2(cfg);
        let mut signals = Signals::default();
        for id in 0..n {
            q.enqueue(Instant::ZERO, packet(id, 0, 1000, ecn), None).expect("room");
        }
        q.p_base = p;
        let (mut plain, mut marked) = (0, 0);
        while let Some(pkt) = q.dequeue(Instant::ZERO, &mut signals) {
            if pkt.ecn == Ecn::Ce {
                marked += 1;
            } else {
                plain += 1;
            }
        }
        let s = q.state();
        assert_eq!((s.c_marks, s.c_drops), (marked, signals.dropped.len() as u64));
        (plain, marked, s.c_drops)
    }

    #[test]
    fn classic_packets_are_marked_if_ect0_and_dropped_if_not_ect() {
        // k = 1 and p' = 1: p_C = 1 without overload (k·p' is not above 1), so every decision fires.
        let cfg = DualPi2Config { coupling: 1.0, ..DualPi2Config::rfc9332() };
        assert_eq!(drain_classic(cfg, 1.0, Ecn::Ect0, 100), (0, 100, 0));
        assert_eq!(drain_classic(cfg, 1.0, Ecn::NotEct, 100), (0, 0, 100));
        // At p' = 0.3 and k = 2, p_C = 0.09.
        let (_, marked, dropped) = drain_classic(DualPi2Config::rfc9332(), 0.3, Ecn::Ect0, 20_000);
        assert_eq!(dropped, 0);
        assert!((marked as f64 / 20_000.0 - 0.09).abs() < 0.006, "{marked}");
        let (_, marked, dropped) = drain_classic(DualPi2Config::rfc9332(), 0.3, Ecn::NotEct, 20_000);
        assert_eq!(marked, 0);
        assert!((dropped as f64 / 20_000.0 - 0.09).abs() < 0.006, "{dropped}");
    }

    #[test]
    fn linux_gives_no_classic_signal_below_two_mtus_of_backlog() {
        let cfg = DualPi2Config { coupling: 1.0, ..DualPi2Config::linux() };
        // Three 1000 B packets: after each departure at most 2000 B remain, under 3000 B.
        assert_eq!(drain_classic(cfg, 1.0, Ecn::NotEct, 3), (3, 0, 0));
        // Five: the first two leave 4000 B and 3000 B behind and are dropped.
        assert_eq!(drain_classic(cfg, 1.0, Ecn::NotEct, 5), (3, 0, 2));
    }

    #[test]
    fn coupled_marking_follows_k_times_p() {
        let mut q = dualpi2(DualPi2Config::rfc9332());
        let mut signals = Signals::default();
        let n = 20_000;
        for id in 0..n {
            q.enqueue(Instant::ZERO, packet(id, 0, 1000, Ecn::Ect1), None).expect("room");
        }
        // p' = 0.15: p_CL = 0.3 (the sojourn is zero, so the native AQM is silent).
        q.p_base = 0.15;
        while q.dequeue(Instant::ZERO, &mut signals).is_some() {}
        let s = q.state();
        assert_eq!(s.l_drops, 0);
        assert!((s.l_marks as f64 / n as f64 - 0.3).abs() < 0.012, "{}", s.l_marks);
        assert_close(s.p_l, 0.3);
    }

    #[test]
    fn overload_drops_l_packets_with_p_c_and_marks_the_rest() {
        let n = 20_000;
        let run = |cfg: DualPi2Config, ecn: Ecn| {
            let mut q = dualpi2(cfg);
            let mut signals = Signals::default();
            for id in 0..n {
                q.enqueue(Instant::ZERO, packet(id, 0, 1000, ecn), None).expect("room");
            }
            // p' = 0.8, k = 2: p_CL = 1.6 saturates, p_C = 0.64 is above p_Cmax = 0.25.
            q.p_base = 0.8;
            let mut unmarked = 0;
            while let Some(pkt) = q.dequeue(Instant::ZERO, &mut signals) {
                unmarked += u64::from(pkt.ecn != Ecn::Ce);
            }
            (q.state(), unmarked)
        };
        let (s, unmarked) = run(DualPi2Config::rfc9332(), Ecn::Ect1);
        assert!((s.l_drops as f64 / n as f64 - 0.64).abs() < 0.015, "{}", s.l_drops);
        assert_eq!((unmarked, s.l_marks), (0, n - s.l_drops));
        assert_eq!(s.p_l, 1.0);
        // ECN-capable classic packets are dropped rather than marked on overload.
        let (s, _) = run(DualPi2Config::rfc9332(), Ecn::Ect0);
        assert_eq!(s.c_marks, 0);
        assert!((s.c_drops as f64 / n as f64 - 0.64).abs() < 0.015, "{}", s.c_drops);
    }

    #[test]
    fn saturation_caps_p_at_one_or_at_one_over_k_without_overload_drop() {
        for (drop_overload, cap) in [(true, 1.0), (false, 0.5)] {
            let cfg = DualPi2Config { drop_overload, ..DualPi2Config::rfc9332() };
            let mut q = dualpi2(cfg);
            q.enqueue(Instant::ZERO, packet(0, 0, 1000, Ecn::NotEct), None).expect("room");
            q.run_updates(Instant::from_secs(5));
            assert_eq!(q.p_base, cap);
        }
        // Without overload drop, a saturated L queue is marked, never dropped.
        let mut q = dualpi2(DualPi2Config { drop_overload: false, ..DualPi2Config::rfc9332() });
        let mut signals = Signals::default();
        q.enqueue(Instant::ZERO, packet(0, 0, 1000, Ecn::NotEct), None).expect("room");
        q.run_updates(Instant::from_secs(5));
        for id in 1..=1000 {
            q.enqueue(Instant::from_secs(5), packet(id, 0, 1000, Ecn::Ect1), None).expect("room");
        }
        let mut marked = 0;
        while let Some(pkt) = q.dequeue(Instant::from_secs(5), &mut signals) {
            marked += u64::from(pkt.ecn == Ecn::Ce);
        }
        assert_eq!((q.state().l_drops, marked), (0, 1000));
    }

    /// Both queues flooded with 1000 B packets at p' = 0; `n` departures: the C queue's share.
    fn classic_share(classic_weight: f64, n: usize) -> f64 {
        let mut q = dualpi2(DualPi2Config { classic_weight, ..DualPi2Config::rfc9332() });
        let mut signals = Signals::default();
        for id in 0..5000 {
            q.enqueue(Instant::ZERO, packet(id, 0, 1000, Ecn::Ect1), None).expect("room");
            q.enqueue(Instant::ZERO, packet(id, 1, 1000, Ecn::NotEct), None).expect("room");
        }
        let classic =
            (0..n).filter(|_| q.dequeue(Instant::ZERO, &mut signals).expect("queued").flow == 1).count();
        classic as f64 / n as f64
    }

    #[test]
    fn the_scheduler_protects_the_classic_queue_under_an_l_flood() {
        // The L queue is served first, but the C queue gets its weight of the departures.
        assert!((classic_share(0.1, 2000) - 0.1).abs() < 0.002);
        assert!((classic_share(0.3, 2000) - 0.3).abs() < 0.002);
        // Weight 0: strict priority to L.
        assert_eq!(classic_share(0.0, 2000), 0.0);
        // The first departure is the L queue's (wl > wc), and an empty L queue lets C go.
        let mut q = dualpi2(DualPi2Config::linux());
        let mut signals = Signals::default();
        q.enqueue(Instant::ZERO, packet(0, 1, 1000, Ecn::NotEct), None).expect("room");
        q.enqueue(Instant::ZERO, packet(1, 0, 1000, Ecn::Ect1), None).expect("room");
        assert_eq!(q.dequeue(Instant::ZERO, &mut signals).expect("queued").id, 1);
        assert_eq!(q.dequeue(Instant::ZERO, &mut signals).expect("queued").id, 0);
    }

    #[test]
    fn the_byte_limit_counts_both_queues() {
        let mut q = dualpi2(DualPi2Config::rfc9332());
        let limit = Some(DataSize::bytes(2500));
        q.enqueue(Instant::ZERO, packet(0, 0, 1000, Ecn::Ect1), limit).expect("fits");
        q.enqueue(Instant::ZERO, packet(1, 0, 1000, Ecn::NotEct), limit).expect("fits");
        let (pkt, reason) = q.enqueue(Instant::ZERO, packet(2, 0, 1000, Ecn::Ect1), limit).unwrap_err();
        assert_eq!((pkt.id, reason), (2, DropReason::QueueFull));
        let (pkt, reason) = q.enqueue(Instant::ZERO, packet(3, 0, 1000, Ecn::Ect0), limit).unwrap_err();
        assert_eq!((pkt.id, reason), (3, DropReason::QueueFull));
        q.enqueue(Instant::ZERO, packet(4, 0, 500, Ecn::Ect0), limit).expect("fits exactly");
        let s = q.state();
        assert_eq!((s.l_full_drops, s.c_full_drops, q.bytes()), (1, 1, DataSize::bytes(2500)));
    }

    #[test]
    fn sojourns_of_the_last_departures_are_reported() {
        let mut q = dualpi2(DualPi2Config::rfc9332());
        let mut signals = Signals::default();
        q.enqueue(Instant::ZERO, packet(0, 0, 1000, Ecn::Ect1), None).expect("room");
        q.enqueue(Instant::from_millis(1), packet(1, 0, 1000, Ecn::NotEct), None).expect("room");
        q.dequeue(Instant::from_millis(3), &mut signals);
        q.dequeue(Instant::from_millis(4), &mut signals);
        let s = q.state();
        assert_eq!((s.l_sojourn, s.c_sojourn), (Duration::from_millis(3), Duration::from_millis(3)));
        assert_eq!((s.l_packets, s.c_packets, s.l_bytes), (0, 0, DataSize::ZERO));
    }
}
