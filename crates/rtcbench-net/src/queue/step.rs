//! An L4S step marker: every L4S packet (ECT(1) or CE, RFC 9331 §5.1) that leaves with a
//! sojourn time above a threshold is marked CE, the simplest native AQM for the L queue of
//! RFC 9332's DualQ (Linux `dualpi2`'s `step_thresh`). Other packets see a plain drop-tail queue.

use rtcbench_units::{DataSize, Duration, Instant};
use rtcbench_wire::Ecn;
use serde::{Deserialize, Serialize};

use super::fifo::Fifo;
use super::Signals;
use crate::packet::{DropReason, NetPacket};

/// Step marker parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepConfig {
    /// Sojourn time above which L4S packets are marked. 1 ms (Linux `dualpi2` `step_thresh`).
    pub threshold: Duration,
}

impl Default for StepConfig {
    fn default() -> Self {
        Self { threshold: Duration::from_millis(1) }
    }
}

pub(super) struct StepMarker<P> {
    cfg: StepConfig,
    pub(super) fifo: Fifo<P>,
}

impl<P: NetPacket> StepMarker<P> {
    pub(super) fn new(cfg: StepConfig) -> Self {
        Self { cfg, fifo: Fifo::default() }
    }

    pub(super) fn enqueue(
        &mut self,
        now: Instant,
        pkt: P,
        limit: Option<DataSize>,
    ) -> Result<(), (P, DropReason)> {
        self.fifo.push_within(now, pkt, limit)
    }

    pub(super) fn dequeue(&mut self, now: Instant, signals: &mut Signals<P>) -> Option<P> {
        let queued = self.fifo.pop()?;
        let late = queued.sojourn(now) > self.cfg.threshold;
        let mut pkt = queued.pkt;
        if late && matches!(pkt.ecn(), Ecn::Ect1 | Ecn::Ce) {
            signals.mark(&mut pkt);
        }
        Some(pkt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::test_support::packet;

    /// The codepoint a packet of `ecn` leaves with after waiting `waited_us`.
    fn after(ecn: Ecn, waited_us: i64) -> Ecn {
        let mut q = StepMarker::new(StepConfig::default());
        q.enqueue(Instant::ZERO, packet(0, 0, 1000, ecn), None).expect("unlimited");
        q.dequeue(Instant::from_micros(waited_us), &mut Signals::default()).expect("queued").ecn
    }

    #[test]
    fn l4s_packets_are_marked_exactly_above_the_threshold() {
        assert_eq!(after(Ecn::Ect1, 1000), Ecn::Ect1);
        assert_eq!(after(Ecn::Ect1, 1001), Ecn::Ce);
        assert_eq!(after(Ecn::Ce, 5000), Ecn::Ce);
        // Classic packets are never marked.
        assert_eq!(after(Ecn::Ect0, 5000), Ecn::Ect0);
        assert_eq!(after(Ecn::NotEct, 5000), Ecn::NotEct);
    }

    #[test]
    fn otherwise_it_is_drop_tail() {
        let mut q = StepMarker::new(StepConfig::default());
        let limit = Some(DataSize::bytes(1500));
        q.enqueue(Instant::ZERO, packet(0, 0, 1000, Ecn::Ect1), limit).expect("fits");
        let (pkt, reason) = q.enqueue(Instant::ZERO, packet(1, 0, 1000, Ecn::Ect1), limit).unwrap_err();
        assert_eq!((pkt.id, reason), (1, DropReason::QueueFull));
    }
}
