//! FQ-CoDel (RFC 8290): flow queues served by deficit round robin, each with its own CoDel.
//!
//! Classification (RFC 8290 §4.1, §5.2.5): a packet's flow key is hashed into one of `flows`
//! buckets, 1024 by default, each a queue. As in Linux, the hash is perturbed by a random value
//! drawn when the queue is made (here from the link's queue stream, [`crate::rng`], so a run stays
//! a function of its seed), and scaled into the buckets with a multiply and shift
//! (`reciprocal_scale`). Flows whose keys land in one bucket share its queue, its CoDel and its
//! round-robin turn, the hash collisions RFC 8290 §5.3 describes: with n flows, some pair
//! collides with probability about n(n-1)/2048. A raw IP packet's key is a hash of its 5-tuple
//! ([`crate::IpFrame`]); the simulator's is its flow id (each media stream, RTCP direction, TCP
//! connection and CBR source is a flow).
//!
//! The simulator's FQ-CoDel used to keep one queue per flow id, without collisions. No built-in
//! scenario runs FQ-CoDel, so hashing changed none of their outputs (docs/queues.md, "Flow
//! key").
//!
//! The RFC's memory_limit (32 MB in Linux) is not modelled: the byte limit that matters in a
//! simulation is the link's own, which overflows the queue the way packet_limit does.

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

use rtcbench_units::{DataSize, Instant};

use super::codel::{CodelConfig, CodelState};
use super::fifo::Fifo;
use super::Signals;
use crate::packet::{DropReason, FlowKey, NetPacket};
use crate::rng::splitmix64;

/// FQ-CoDel parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FqCodelConfig {
    /// The CoDel of each flow queue: interval 100 ms and target 5 ms (RFC 8290 §5.2.1-5.2.2),
    /// and ECN on (§5.2.6: enabled by default).
    pub codel: CodelConfig,
    /// quantum (RFC 8290 §5.2.4): bytes a queue may send per round. 1514 B, an MTU plus an
    /// Ethernet header.
    pub quantum: DataSize,
    /// packet_limit (RFC 8290 §5.2.3): packets held over all queues. 10240.
    pub packet_limit: usize,
    /// flows (RFC 8290 §5.2.5): the buckets flow keys are hashed into. 1024, as Linux.
    pub flows: usize,
}

impl Default for FqCodelConfig {
    fn default() -> Self {
        Self {
            codel: CodelConfig { ecn: true, ..CodelConfig::default() },
            quantum: DataSize::bytes(1514),
            packet_limit: 10_240,
            flows: 1024,
        }
    }
}

pub(super) struct FqCodel<P> {
    cfg: FqCodelConfig,
    /// Mixed into every flow key before it is scaled into a bucket.
    perturbation: u64,
    /// One queue per bucket, created up to the highest bucket a packet has used.
    flows: Vec<FlowQueue<P>>,
    /// new_flows and old_flows (RFC 8290 §4.2): the active queues (bucket indices), new ones
    /// served first.
    new_flows: VecDeque<usize>,
    old_flows: VecDeque<usize>,
    packets: usize,
    bytes: DataSize,
}

struct FlowQueue<P> {
    fifo: Fifo<P>,
    codel: CodelState,
    /// DRR credit in bytes (RFC 8290 §4.2); negative once the queue overdraws its quantum.
    deficit: i64,
    /// On new_flows or old_flows. An active queue may be empty until the scheduler passes it.
    active: bool,
}

impl<P> Default for FlowQueue<P> {
    fn default() -> Self {
        Self { fifo: Fifo::default(), codel: CodelState::default(), deficit: 0, active: false }
    }
}

/// Which list a queue was taken from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum List {
    New,
    Old,
}

impl<P: NetPacket> FqCodel<P> {
    /// An empty FQ-CoDel whose flow hash is perturbed by `perturbation`.
    pub(super) fn new(cfg: FqCodelConfig, perturbation: u64) -> Self {
        assert!(cfg.flows > 0, "FQ-CoDel needs at least one flow queue");
        Self {
            cfg,
            perturbation,
            flows: Vec::new(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            packets: 0,
            bytes: DataSize::ZERO,
        }
    }

    pub(super) fn bytes(&self) -> DataSize {
        self.bytes
    }

    fn quantum(&self) -> i64 {
        self.cfg.quantum.as_bytes() as i64
    }

    /// RFC 8290 §4.1: the bucket of a flow. The key mixed with the perturbation (SplitMix64's
    /// finaliser, in place of Linux's siphash over the 5-tuple), its top 32 bits scaled into
    /// `flows` as Linux's `reciprocal_scale` does: (hash × flows) >> 32.
    fn bucket(&self, key: FlowKey) -> usize {
        let hash = splitmix64(key.0 ^ self.perturbation) >> 32;
        ((hash * self.cfg.flows as u64) >> 32) as usize
    }

    /// RFC 8290 §4.1: queue the packet in its flow's queue; a queue that was inactive joins the
    /// end of new_flows with a quantum of credit. Over the packet limit or the link's byte limit,
    /// drop from the head of the queue holding the most bytes.
    pub(super) fn enqueue(
        &mut self,
        now: Instant,
        pkt: P,
        limit: Option<DataSize>,
        signals: &mut Signals<P>,
    ) {
        let index = self.bucket(pkt.flow_key());
        if index >= self.flows.len() {
            self.flows.resize_with(index + 1, FlowQueue::default);
        }
        self.packets += 1;
        self.bytes += pkt.size();
        let quantum = self.quantum();
        let flow = &mut self.flows[index];
        flow.fifo.push(now, pkt);
        if !flow.active {
            flow.active = true;
            flow.deficit = quantum;
            self.new_flows.push_back(index);
        }
        while self.packets > self.cfg.packet_limit || limit.is_some_and(|limit| self.bytes > limit) {
            self.drop_from_fattest(signals);
        }
    }

    /// RFC 8290 §4.1: one packet off the head of the fattest queue. Linux drops a batch (up to
    /// half that queue) at once; one at a time keeps the buffer exactly at its limit.
    fn drop_from_fattest(&mut self, signals: &mut Signals<P>) {
        let fattest = self.flows.iter_mut().max_by_key(|f| f.fifo.bytes()).and_then(|f| f.fifo.pop());
        if let Some(queued) = fattest {
            self.packets -= 1;
            self.bytes -= queued.pkt.size();
            signals.drop_packet(queued.pkt, DropReason::Overflow);
        }
    }

    /// RFC 8290 §4.2: the next packet from the first queue of new_flows, else of old_flows, that
    /// has credit and a packet CoDel lets through.
    pub(super) fn dequeue(&mut self, now: Instant, signals: &mut Signals<P>) -> Option<P> {
        loop {
            let (index, list) = match self.new_flows.front() {
                Some(&index) => (index, List::New),
                None => (*self.old_flows.front()?, List::Old),
            };
            let quantum = self.quantum();
            let flow = &mut self.flows[index];
            if flow.deficit <= 0 {
                // Out of credit: a quantum more, and to the end of old_flows.
                flow.deficit += quantum;
                self.pop_front(list);
                self.old_flows.push_back(index);
                continue;
            }
            let (packets, bytes) = (flow.fifo.len(), flow.fifo.bytes());
            let pkt = flow.codel.dequeue(now, &mut flow.fifo, &self.cfg.codel, signals);
            // CoDel may have dropped packets on the way.
            self.packets -= packets - flow.fifo.len();
            self.bytes -= bytes - flow.fifo.bytes();
            if let Some(pkt) = pkt {
                flow.deficit -= pkt.size().as_bytes() as i64;
                return Some(pkt);
            }
            // Empty. A new queue goes to the end of old_flows rather than leaving, so a flow that
            // empties its queue on every packet cannot stay new and starve the old ones; an old
            // queue becomes inactive.
            self.pop_front(list);
            match list {
                List::New => self.old_flows.push_back(index),
                List::Old => self.flows[index].active = false,
            }
        }
    }

    fn pop_front(&mut self, list: List) {
        match list {
            List::New => self.new_flows.pop_front(),
            List::Old => self.old_flows.pop_front(),
        };
    }
}

#[cfg(test)]
mod tests {
    use rtcbench_wire::Ecn;

    use super::*;
    use crate::queue::test_support::{packet, TestPacket};

    /// A perturbation that puts flows 0 to 9 in ten different buckets of 1024 (checked by
    /// `the_test_perturbation_separates_the_test_flows`), so the scheduling tests see one queue
    /// per flow.
    const SEPARATING: u64 = 1;

    fn fq(cfg: FqCodelConfig) -> FqCodel<TestPacket> {
        FqCodel::new(cfg, SEPARATING)
    }

    fn queue_with(packets: &[(u32, u64)]) -> FqCodel<TestPacket> {
        let mut q = fq(FqCodelConfig::default());
        let mut signals = Signals::default();
        for (id, &(flow, bytes)) in packets.iter().enumerate() {
            q.enqueue(Instant::ZERO, packet(id as u64, flow, bytes, Ecn::NotEct), None, &mut signals);
        }
        q
    }

    #[test]
    fn the_test_perturbation_separates_the_test_flows() {
        let q = fq(FqCodelConfig::default());
        let mut buckets: Vec<usize> = (0..10).map(|f| q.bucket(FlowKey(f))).collect();
        buckets.sort_unstable();
        buckets.dedup();
        assert_eq!(buckets.len(), 10);
    }

    #[test]
    fn flow_keys_spread_over_the_buckets_and_the_perturbation_moves_them() {
        // 64k keys into 1024 buckets: 64 each on average; a fair hash keeps every bucket within
        // ±50 % (more than 6 standard deviations).
        let q = fq(FqCodelConfig::default());
        let mut counts = vec![0u32; 1024];
        for key in 0..65_536 {
            counts[q.bucket(FlowKey(key))] += 1;
        }
        assert!(
            counts.iter().all(|&c| (32..=96).contains(&c)),
            "{:?}",
            (counts.iter().min(), counts.iter().max())
        );
        let other = FqCodel::<TestPacket>::new(FqCodelConfig::default(), 0x5eed);
        let moved = (0..1000).filter(|&k| q.bucket(FlowKey(k)) != other.bucket(FlowKey(k))).count();
        assert!(moved > 990, "{moved} of 1000 keys changed bucket with the perturbation");
    }

    #[test]
    fn flows_in_one_bucket_share_its_queue() {
        // One bucket: FQ-CoDel degenerates to a single CoDel queue, first come first served.
        let mut q = fq(FqCodelConfig { flows: 1, ..FqCodelConfig::default() });
        let mut signals = Signals::default();
        for (id, flow) in [0, 0, 0, 1].into_iter().enumerate() {
            q.enqueue(Instant::ZERO, packet(id as u64, flow, 1000, Ecn::NotEct), None, &mut signals);
        }
        let order: Vec<u64> =
            std::iter::from_fn(|| q.dequeue(Instant::ZERO, &mut signals).map(|p| p.id)).collect();
        assert_eq!(order, [0, 1, 2, 3], "flow 1 waits behind flow 0, unlike in separate queues");
    }

    #[test]
    fn a_new_flow_goes_before_the_old_ones() {
        // Flow 0 has overdrawn its quantum when flow 1's first packet arrives: flow 1 goes next.
        let mut q = queue_with(&[(0, 1000), (0, 1000), (0, 1000)]);
        let mut signals = Signals::default();
        let now = Instant::ZERO;
        assert_eq!(q.dequeue(now, &mut signals).map(|p| p.flow), Some(0));
        assert_eq!(q.dequeue(now, &mut signals).map(|p| p.flow), Some(0));
        q.enqueue(now, packet(10, 1, 200, Ecn::NotEct), None, &mut signals);
        assert_eq!(q.dequeue(now, &mut signals).map(|p| p.flow), Some(1));
        assert_eq!(q.dequeue(now, &mut signals).map(|p| p.flow), Some(0));
        assert_eq!(q.dequeue(now, &mut signals).map(|p| p.flow), None);
    }

    #[test]
    fn drr_shares_bytes_not_packets() {
        // Flow 0 sends 1500 B packets, flow 1 300 B ones; over many rounds both get the same bytes.
        let mut packets = Vec::new();
        for _ in 0..2000 {
            packets.push((0, 1500));
            for _ in 0..5 {
                packets.push((1, 300));
            }
        }
        let mut q = queue_with(&packets);
        let mut signals = Signals::default();
        let mut served = [0u64; 2];
        while served.iter().sum::<u64>() < 1_000_000 {
            let p = q.dequeue(Instant::ZERO, &mut signals).expect("backlogged");
            served[p.flow as usize] += p.size.as_bytes();
        }
        let share = served[0] as f64 / (served[0] + served[1]) as f64;
        assert!((share - 0.5).abs() < 0.01, "flow 0 got {share:.3} of the bytes");
    }

    #[test]
    fn an_empty_new_flow_passes_through_old_flows_before_leaving() {
        let mut q = queue_with(&[(0, 500)]);
        let mut signals = Signals::default();
        assert!(q.dequeue(Instant::ZERO, &mut signals).is_some());
        assert!(q.dequeue(Instant::ZERO, &mut signals).is_none());
        assert!(q.new_flows.is_empty() && q.old_flows.is_empty());
        assert!(!q.flows[q.bucket(FlowKey(0))].active);
    }

    #[test]
    fn over_the_packet_limit_the_fattest_flow_loses_its_head() {
        let mut q = fq(FqCodelConfig { packet_limit: 4, ..FqCodelConfig::default() });
        let mut signals = Signals::default();
        for (id, (flow, bytes)) in
            [(0, 1000), (0, 1000), (1, 100), (1, 100), (1, 100)].into_iter().enumerate()
        {
            q.enqueue(Instant::ZERO, packet(id as u64, flow, bytes, Ecn::NotEct), None, &mut signals);
        }
        let (dropped, reason) = signals.dropped.pop_front().expect("one drop");
        assert_eq!((dropped.id, reason), (0, DropReason::Overflow));
        assert!(signals.dropped.is_empty());
        assert_eq!((q.packets, q.bytes()), (4, DataSize::bytes(1300)));
    }

    #[test]
    fn over_the_byte_limit_the_fattest_flow_loses_its_head() {
        let mut q = queue_with(&[(0, 1000), (0, 1000), (1, 100)]);
        let mut signals = Signals::default();
        // The arriving packet belongs to the thin flow: the fat one pays.
        q.enqueue(Instant::ZERO, packet(9, 1, 200, Ecn::NotEct), Some(DataSize::bytes(2000)), &mut signals);
        let (dropped, reason) = signals.dropped.pop_front().expect("one drop");
        assert_eq!((dropped.id, reason), (0, DropReason::Overflow));
        assert!(signals.dropped.is_empty());
        assert_eq!((q.packets, q.bytes()), (3, DataSize::bytes(1300)));
    }
}
