//! CoDel, "Controlled Delay" (RFC 8289), following the annotated pseudocode of its §5.
//!
//! CoDel watches the sojourn time of the packets it dequeues. Once the sojourn time has stayed
//! at or above TARGET for a whole INTERVAL, it enters the dropping state and drops (or marks)
//! a packet, then the next ones at INTERVAL / sqrt(count) spacing until a packet leaves with a
//! sojourn time under TARGET. [`CodelState`] holds that state machine apart from the packets so
//! that FQ-CoDel runs one per flow queue.

use rtcbench_units::{DataSize, Duration, Instant};
use serde::{Deserialize, Serialize};

use super::fifo::Fifo;
use super::Signals;
use crate::packet::{DropReason, NetPacket};

/// CoDel parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodelConfig {
    /// TARGET (RFC 8289 §4.3, §5.3): the standing queue delay tolerated. 5 ms.
    pub target: Duration,
    /// INTERVAL (RFC 8289 §4.2, §5.3): how long the sojourn time must stay above TARGET before
    /// dropping starts, on the order of a worst-case round-trip time. 100 ms.
    pub interval: Duration,
    /// maxpacket (RFC 8289 §5.3, "SHOULD use interface MTU"): a queue holding no more than this
    /// is never dropped from, so a link is never starved. 1500 B.
    pub mtu: DataSize,
    /// Mark ECN-capable packets CE instead of dropping them (RFC 3168 §5). Off, as in Linux's
    /// `codel`.
    pub ecn: bool,
}

impl Default for CodelConfig {
    fn default() -> Self {
        Self {
            target: Duration::from_millis(5),
            interval: Duration::from_millis(100),
            mtu: DataSize::bytes(1500),
            ecn: false,
        }
    }
}

/// Count re-use window (RFC 8289 §5.5): re-entering the dropping state within 16 intervals of
/// the last scheduled drop starts from the drop rate the last episode ended with.
const COUNT_REUSE_INTERVALS: i64 = 16;

/// A single CoDel queue.
pub(super) struct Codel<P> {
    cfg: CodelConfig,
    pub(super) fifo: Fifo<P>,
    state: CodelState,
}

impl<P: NetPacket> Codel<P> {
    pub(super) fn new(cfg: CodelConfig) -> Self {
        Self { cfg, fifo: Fifo::default(), state: CodelState::default() }
    }

    /// RFC 8289 §5.4: packets are timestamped on arrival; CoDel itself never drops at enqueue,
    /// only the link's hard limit does.
    pub(super) fn enqueue(
        &mut self,
        now: Instant,
        pkt: P,
        limit: Option<DataSize>,
    ) -> Result<(), (P, DropReason)> {
        self.fifo.push_within(now, pkt, limit)
    }

    pub(super) fn dequeue(&mut self, now: Instant, signals: &mut Signals<P>) -> Option<P> {
        self.state.dequeue(now, &mut self.fifo, &self.cfg, signals)
    }
}

/// The per-queue state of RFC 8289 §5.2.
#[derive(Default)]
pub(super) struct CodelState {
    /// first_above_time: when the sojourn time will have been above TARGET for INTERVAL
    /// (`None` for the RFC's 0: the last packet was below TARGET).
    first_above_time: Option<Instant>,
    /// drop_next: when the next drop is due in the dropping state.
    drop_next: Instant,
    /// count: packets dropped (or marked) since the dropping state was last entered.
    count: u32,
    /// lastcount: `count` when the dropping state was last entered.
    lastcount: u32,
    /// dropping: whether the queue is in the dropping state.
    dropping: bool,
}

/// A packet taken off the head and whether CoDel may drop it (RFC 8289 §5.6, dodequeue_result).
struct Head<P> {
    pkt: Option<P>,
    ok_to_drop: bool,
}

impl CodelState {
    /// RFC 8289 §5.5, dequeue(): the next packet to send, after the drops or the mark the state
    /// machine calls for at `now`.
    pub(super) fn dequeue<P: NetPacket>(
        &mut self,
        now: Instant,
        fifo: &mut Fifo<P>,
        cfg: &CodelConfig,
        signals: &mut Signals<P>,
    ) -> Option<P> {
        let head = self.dodequeue(now, fifo, cfg);
        if self.dropping {
            self.continue_dropping(now, head, fifo, cfg, signals)
        } else if head.ok_to_drop {
            self.start_dropping(now, head, fifo, cfg, signals)
        } else {
            head.pkt
        }
    }

    /// RFC 8289 §5.5, in the dropping state: leave it once a packet is under TARGET; otherwise
    /// drop each packet whose turn (`drop_next`) has come, spacing the next drop by the control
    /// law. A mark ends the round: the marked packet is sent (as Linux does).
    fn continue_dropping<P: NetPacket>(
        &mut self,
        now: Instant,
        mut head: Head<P>,
        fifo: &mut Fifo<P>,
        cfg: &CodelConfig,
        signals: &mut Signals<P>,
    ) -> Option<P> {
        self.dropping = head.ok_to_drop;
        while self.dropping && now >= self.drop_next {
            let pkt = head.pkt.take()?;
            self.count += 1;
            if let Some(marked) = signals.mark_or_drop(pkt, cfg.ecn) {
                self.drop_next = control_law(self.drop_next, self.count, cfg.interval);
                return Some(marked);
            }
            head = self.dodequeue(now, fifo, cfg);
            self.dropping = head.ok_to_drop;
            if self.dropping {
                self.drop_next = control_law(self.drop_next, self.count, cfg.interval);
            }
        }
        head.pkt
    }

    /// RFC 8289 §5.5, entering the dropping state: drop (or mark) this packet and schedule the
    /// next drop. If the last episode ended recently, start from its drop rate: count = the
    /// drops it made beyond its first, when that is more than one.
    fn start_dropping<P: NetPacket>(
        &mut self,
        now: Instant,
        head: Head<P>,
        fifo: &mut Fifo<P>,
        cfg: &CodelConfig,
        signals: &mut Signals<P>,
    ) -> Option<P> {
        let pkt = head.pkt.and_then(|p| signals.mark_or_drop(p, cfg.ecn));
        let pkt = pkt.or_else(|| self.dodequeue(now, fifo, cfg).pkt);
        self.dropping = true;
        let delta = self.count - self.lastcount;
        let recent = now - self.drop_next < cfg.interval * COUNT_REUSE_INTERVALS;
        self.count = if delta > 1 && recent { delta } else { 1 };
        self.drop_next = control_law(now, self.count, cfg.interval);
        self.lastcount = self.count;
        pkt
    }

    /// RFC 8289 §5.6, dodequeue(): takes the head packet and tells whether its sojourn time has
    /// been at or above TARGET for at least INTERVAL. A queue left with at most one MTU of data
    /// does not count as standing.
    fn dodequeue<P: NetPacket>(&mut self, now: Instant, fifo: &mut Fifo<P>, cfg: &CodelConfig) -> Head<P> {
        let Some(queued) = fifo.pop() else {
            self.first_above_time = None;
            return Head { pkt: None, ok_to_drop: false };
        };
        let ok_to_drop = if queued.sojourn(now) < cfg.target || fifo.bytes() <= cfg.mtu {
            self.first_above_time = None;
            false
        } else {
            match self.first_above_time {
                None => {
                    self.first_above_time = Some(now + cfg.interval);
                    false
                }
                Some(t) => now >= t,
            }
        };
        Head { pkt: Some(queued.pkt), ok_to_drop }
    }
}

/// RFC 8289 §5.6, control_law(): the next drop is INTERVAL / sqrt(count) after `t`.
fn control_law(t: Instant, count: u32, interval: Duration) -> Instant {
    t + interval * (1.0 / f64::from(count).sqrt())
}

#[cfg(test)]
mod tests {
    use rtcbench_wire::Ecn;

    use super::*;
    use crate::queue::test_support::{packet, TestPacket};

    const MS: Duration = Duration::from_millis(1);

    /// A queue that `backlog` packets of 1000 B entered at time zero.
    fn backlogged(backlog: u64, ecn: Ecn) -> Codel<TestPacket> {
        let mut q = Codel::new(CodelConfig { ecn: ecn != Ecn::NotEct, ..CodelConfig::default() });
        for id in 0..backlog {
            q.enqueue(Instant::ZERO, packet(id, 0, 1000, ecn), None).expect("unlimited");
        }
        q
    }

    /// Dequeues one packet every millisecond until `end` and returns when each drop happened.
    fn drop_times(
        q: &mut Codel<TestPacket>,
        signals: &mut Signals<TestPacket>,
        end: Instant,
    ) -> Vec<Instant> {
        let mut drops = Vec::new();
        let mut now = Instant::ZERO;
        while now <= end {
            q.dequeue(now, signals);
            drops.extend(std::iter::repeat_n(now, signals.dropped.len()));
            signals.dropped.clear();
            now += MS;
        }
        drops
    }

    #[test]
    fn drops_follow_the_control_law() {
        // Every packet waited since time zero, so the sojourn time is `now`: above TARGET from
        // 5 ms, dropping starts INTERVAL later, at 105 ms, and drop k (k ≥ 2) is due at
        // 105 ms + Σ_{j<k} 100 ms / sqrt(j), on the first 1 ms dequeue at or after it.
        let mut q = backlogged(3000, Ecn::NotEct);
        let mut signals = Signals::default();
        let drops = drop_times(&mut q, &mut signals, Instant::from_millis(1500));
        let mut due_ms = 105.0;
        for (k, t) in drops.iter().enumerate() {
            let late = t.as_millis_f64() - due_ms;
            assert!((0.0..1.0).contains(&late), "drop {} at {t}, due at {due_ms} ms", k + 1);
            due_ms += 100.0 / ((k + 1) as f64).sqrt();
        }
        assert!(drops.len() >= 25, "{} drops", drops.len());
        assert_eq!(q.state.count as usize, drops.len());
    }

    #[test]
    fn re_entry_soon_after_reuses_the_drop_count() {
        let mut q = backlogged(3000, Ecn::NotEct);
        let mut signals = Signals::default();
        drop_times(&mut q, &mut signals, Instant::from_millis(600));
        // Emptying the queue ends the episode; count is kept.
        let now = Instant::from_millis(601);
        while q.dequeue(now, &mut signals).is_some() {}
        assert!(!q.state.dropping);
        let last_episode = q.state.count;
        assert!(last_episode > 2, "{last_episode}");
        // Back above TARGET for an INTERVAL, within 16 intervals of drop_next: count restarts
        // at the drops of the last episode beyond its first (RFC 8289 §5.5).
        for id in 0..200 {
            q.enqueue(Instant::from_millis(700), packet(10_000 + id, 0, 1000, Ecn::NotEct), None)
                .expect("unlimited");
        }
        signals.dropped.clear();
        let mut now = Instant::from_millis(700);
        while !q.state.dropping {
            q.dequeue(now, &mut signals);
            now += MS;
        }
        assert_eq!(now, Instant::from_millis(806), "entered at 805 ms");
        assert_eq!(q.state.count, last_episode - 1);
        assert_eq!(signals.dropped.len(), 1);
    }

    #[test]
    fn an_idle_queue_is_never_dropped_from() {
        // One packet at a time: the sojourn time is zero and the queue under one MTU.
        let mut q = Codel::new(CodelConfig::default());
        let mut signals = Signals::default();
        for ms in 0..1000 {
            let now = Instant::from_millis(ms);
            q.enqueue(now, packet(ms as u64, 0, 1200, Ecn::NotEct), None).expect("unlimited");
            assert!(q.dequeue(now, &mut signals).is_some());
        }
        assert!(signals.dropped.is_empty());
    }

    #[test]
    fn ecn_capable_packets_are_marked_not_dropped() {
        for ecn in [Ecn::Ect0, Ecn::Ect1] {
            let mut q = backlogged(3000, ecn);
            let mut signals = Signals::default();
            let mut marked = 0;
            let mut now = Instant::ZERO;
            while now <= Instant::from_millis(1500) {
                marked += q.dequeue(now, &mut signals).is_some_and(|p| p.ecn == Ecn::Ce) as u64;
                now += MS;
            }
            assert!(signals.dropped.is_empty());
            assert!(marked >= 25, "{marked} marks");
            assert_eq!(signals.ce_marks, marked);
        }
    }
}
