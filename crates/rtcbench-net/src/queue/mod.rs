//! Queue disciplines of a link: drop-tail, CoDel (RFC 8289), FQ-CoDel (RFC 8290), PIE
//! (RFC 8033), an L4S step marker (the native AQM of RFC 9332's L queue in its simplest
//! form) and DualPI2 (RFC 9332's DualQ Coupled AQM), with ECN marking instead of dropping
//! (RFC 3168 §5). `docs/queues.md` lists each
//! discipline's parameters, their sources, and where this code departs from the RFCs.
//!
//! A [`Queue`] is sans-IO like the link that owns it. The link offers each arriving packet with
//! [`Queue::enqueue`], which may refuse it; takes the next packet with [`Queue::dequeue`] when it
//! starts serialising one; and drains with [`Queue::poll_drop`] the packets the discipline dropped
//! from inside the queue (CoDel's drops at dequeue, FQ-CoDel's drops from its fattest flow). Time
//! advances only through the `now` of these calls: PIE runs its periodic update for every
//! T_UPDATE boundary passed since the previous call, which is what a timer would do, because
//! nothing the update reads changes between calls.
//!
//! The link's byte limit (its drop-tail size, in bytes or in drain time) stays the hard limit
//! under every discipline: the link passes the room it has left to each `enqueue`.

mod codel;
mod dualpi2;
mod fifo;
mod fq_codel;
mod pie;
mod step;

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

use rand::RngExt;
use rtcbench_units::{DataSize, Instant};
use rtcbench_wire::Ecn;

use crate::packet::{DropReason, NetPacket};
use crate::rng::SimRng;
use codel::Codel;
pub use codel::CodelConfig;
use dualpi2::DualPi2;
pub use dualpi2::{
    DualPi2Config, DualPi2Sample, DualPi2Sampler, DualPi2State, PiQueueDelay, RFC9332_RTT_MAX, RFC9332_TARGET,
};
use fifo::Fifo;
use fq_codel::FqCodel;
pub use fq_codel::FqCodelConfig;
use pie::Pie;
pub use pie::PieConfig;
pub use step::StepConfig;
use step::StepMarker;

/// Which discipline a link's queue runs, with its parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum QueueDiscipline {
    /// First come, first served; an arriving packet that does not fit is dropped.
    #[default]
    DropTail,
    Codel(CodelConfig),
    FqCodel(FqCodelConfig),
    Pie(PieConfig),
    Step(StepConfig),
    /// RFC 9332's DualQ Coupled AQM.
    #[serde(rename = "dualpi2")]
    DualPi2(DualPi2Config),
}

/// A link's queue: the packets waiting to be serialised and the discipline that orders, marks
/// and drops them.
pub struct Queue<P> {
    discipline: Discipline<P>,
    signals: Signals<P>,
}

/// Enum dispatch: one `match` per call, no virtual calls on the per-packet path.
enum Discipline<P> {
    DropTail(Fifo<P>),
    Codel(Codel<P>),
    FqCodel(FqCodel<P>),
    Pie(Pie<P>),
    Step(StepMarker<P>),
    DualPi2(DualPi2<P>),
}

impl<P: NetPacket> Queue<P> {
    /// An empty queue. `rng` drives the discipline's random decisions: PIE's drops, DualPI2's
    /// marks and drops, and the perturbation of FQ-CoDel's flow hash (one draw, when the queue is made).
    pub fn new(discipline: &QueueDiscipline, mut rng: SimRng) -> Self {
        let discipline = match discipline {
            QueueDiscipline::DropTail => Discipline::DropTail(Fifo::default()),
            QueueDiscipline::Codel(cfg) => Discipline::Codel(Codel::new(*cfg)),
            QueueDiscipline::FqCodel(cfg) => Discipline::FqCodel(FqCodel::new(*cfg, rng.random())),
            QueueDiscipline::Pie(cfg) => Discipline::Pie(Pie::new(*cfg, rng)),
            QueueDiscipline::Step(cfg) => Discipline::Step(StepMarker::new(*cfg)),
            QueueDiscipline::DualPi2(cfg) => Discipline::DualPi2(DualPi2::new(*cfg, rng)),
        };
        Self { discipline, signals: Signals::default() }
    }

    /// Offers a packet arriving at `now`, with `limit` bytes of room in the buffer (`None` =
    /// unlimited). Returns the packet with the reason if the queue refuses it; packets dropped
    /// from inside the queue instead come out of [`Queue::poll_drop`].
    pub fn enqueue(&mut self, now: Instant, pkt: P, limit: Option<DataSize>) -> Result<(), (P, DropReason)> {
        match &mut self.discipline {
            Discipline::DropTail(fifo) => fifo.push_within(now, pkt, limit),
            Discipline::Codel(q) => q.enqueue(now, pkt, limit),
            Discipline::FqCodel(q) => {
                q.enqueue(now, pkt, limit, &mut self.signals);
                Ok(())
            }
            Discipline::Pie(q) => q.enqueue(now, pkt, limit, &mut self.signals),
            Discipline::Step(q) => q.enqueue(now, pkt, limit),
            Discipline::DualPi2(q) => q.enqueue(now, pkt, limit),
        }
    }

    /// The next packet to serialise at `now`, if any. An AQM may drop packets on the way (see
    /// [`Queue::poll_drop`]) or mark the one it returns.
    // Called per packet from both of a link's services; forced inline for the rate path's sake,
    // as `NrRbpdv::sample`.
    #[inline(always)]
    pub fn dequeue(&mut self, now: Instant) -> Option<P> {
        match &mut self.discipline {
            Discipline::DropTail(fifo) => fifo.pop().map(|q| q.pkt),
            Discipline::Codel(q) => q.dequeue(now, &mut self.signals),
            Discipline::FqCodel(q) => q.dequeue(now, &mut self.signals),
            Discipline::Pie(q) => q.dequeue(now),
            Discipline::Step(q) => q.dequeue(now, &mut self.signals),
            Discipline::DualPi2(q) => q.dequeue(now, &mut self.signals),
        }
    }

    /// The next packet the discipline dropped from inside the queue, oldest first.
    pub fn poll_drop(&mut self) -> Option<(P, DropReason)> {
        self.signals.dropped.pop_front()
    }

    /// Whether [`Queue::poll_drop`] has something.
    pub fn has_drops(&self) -> bool {
        !self.signals.dropped.is_empty()
    }

    /// Bytes waiting.
    pub fn bytes(&self) -> DataSize {
        match &self.discipline {
            Discipline::DropTail(fifo) => fifo.bytes(),
            Discipline::Codel(q) => q.fifo.bytes(),
            Discipline::FqCodel(q) => q.bytes(),
            Discipline::Pie(q) => q.fifo.bytes(),
            Discipline::Step(q) => q.fifo.bytes(),
            Discipline::DualPi2(q) => q.bytes(),
        }
    }

    /// Packets this queue marked CE so far.
    pub fn ce_marks(&self) -> u64 {
        self.signals.ce_marks
    }

    /// A DualPI2 queue's queues, probabilities and counters (`None` under other disciplines):
    /// read-only, for reports such as the links table.
    pub fn dualpi2_state(&self) -> Option<DualPi2State> {
        match &self.discipline {
            Discipline::DualPi2(q) => Some(q.state()),
            _ => None,
        }
    }
}

/// What the disciplines did to packets besides handing them on: the packets they dropped from
/// inside the queue, waiting for [`Queue::poll_drop`], and how many they marked CE.
struct Signals<P> {
    dropped: VecDeque<(P, DropReason)>,
    ce_marks: u64,
}

impl<P> Default for Signals<P> {
    fn default() -> Self {
        Self { dropped: VecDeque::new(), ce_marks: 0 }
    }
}

impl<P: NetPacket> Signals<P> {
    fn drop_packet(&mut self, pkt: P, reason: DropReason) {
        self.dropped.push_back((pkt, reason));
    }

    /// Sets CE on an ECN-capable packet (RFC 3168 §5: ECT(0) or ECT(1); a packet already CE
    /// stays CE and still counts, as the signal reaches the receiver either way). Returns
    /// whether the packet carries the mark.
    fn mark(&mut self, pkt: &mut P) -> bool {
        if pkt.ecn() == Ecn::NotEct {
            return false;
        }
        pkt.set_ecn(Ecn::Ce);
        self.ce_marks += 1;
        true
    }

    /// Signals congestion on a packet leaving the queue: marks it and hands it back if `ecn` is
    /// on and the packet is ECN-capable (RFC 3168 §5), otherwise drops it as the AQM's choice.
    fn mark_or_drop(&mut self, mut pkt: P, ecn: bool) -> Option<P> {
        if ecn && self.mark(&mut pkt) {
            return Some(pkt);
        }
        self.drop_packet(pkt, DropReason::Aqm);
        None
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Packets for the unit tests of the disciplines and the link.

    use rtcbench_units::DataSize;
    use rtcbench_wire::Ecn;

    use crate::packet::{FlowKey, NetPacket};

    /// A packet with an id to follow it by, a flow, a size and an ECN field.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub(crate) struct TestPacket {
        pub(crate) id: u64,
        pub(crate) flow: u32,
        pub(crate) size: DataSize,
        pub(crate) ecn: Ecn,
    }

    impl NetPacket for TestPacket {
        fn size(&self) -> DataSize {
            self.size
        }

        fn flow_key(&self) -> FlowKey {
            FlowKey(u64::from(self.flow))
        }

        fn ecn(&self) -> Ecn {
            self.ecn
        }

        fn set_ecn(&mut self, ecn: Ecn) {
            self.ecn = ecn;
        }
    }

    pub(crate) fn packet(id: u64, flow: u32, bytes: u64, ecn: Ecn) -> TestPacket {
        TestPacket { id, flow, size: DataSize::bytes(bytes), ecn }
    }
}
