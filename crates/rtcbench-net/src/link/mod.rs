//! A one-directional link: random loss → queue → serialisation at the scheduled capacity →
//! propagation delay with optional NR-RBPDV jitter. Sans-IO (the drive loop is in the crate's
//! docs): packets are offered with [`Link::enqueue`], the link is woken with [`Link::on_timeout`]
//! at [`Link::poll_timeout`] and drained with [`Link::poll_output`] (packets at the far end) and
//! [`Link::poll_drop`] (packets the queue dropped after accepting them).
//!
//! Loss is applied as a packet enters the link, so a lost packet does not use capacity (as
//! `netem loss` in front of a shaper behaves). The queue runs the configured discipline
//! ([`crate::queue`]; drop-tail by default) and hands over a packet when the link starts
//! serialising it. A queue size given in milliseconds is turned into bytes at the capacity in
//! force; when the capacity changes the byte limit is recomputed for new arrivals and packets
//! already queued stay (as `tc tbf latency` does when reconfigured). During an outage (zero
//! capacity) the limit of the capacity before it applies. The limit counts the packet being
//! serialised.
//!
//! A link with a mahimahi capacity trace serves its queue at delivery opportunities instead of
//! serialising at a rate ([`opportunities`]): the packet in service is the one being delivered,
//! and it leaves when the opportunity that carries its last byte comes.
//!
//! The link and its queues are generic over the packet, so they are compiled in the crate that
//! names the packet type (the simulator), while the plain functions they call per packet
//! (capacity lookups, the loss process) are compiled here. Those are `#[inline]`, so that crate
//! can inline them without relying on link-time optimisation (with the release profile's fat LTO
//! it makes no difference beyond ±0.05 % of instructions, callgrind on rfc8867-5.1).

pub mod capacity;
pub mod capacity_trace;
pub mod jitter;
pub mod loss;
pub mod opportunities;

use std::collections::VecDeque;

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};
use serde::{Deserialize, Serialize};

use crate::packet::{DropReason, FlowKey, NetPacket};
use crate::queue::{DualPi2State, Queue, QueueDiscipline};
use crate::rng::SimRng;
use capacity::CapacitySchedule;
use jitter::{JitterConfig, NrRbpdv};
use loss::{LossModel, LossProcess};
use opportunities::{DeliveryOpportunities, OpportunityClock, OPPORTUNITY_SIZE};
use rtcbench_wire::Ecn;

/// How much a link's buffer holds: the hard limit under every queue discipline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum QueueLimit {
    Unlimited,
    Bytes(DataSize),
    /// Drain time at the capacity in force (RFC 8868 §4.3: bytes = size × rate / 8).
    Time(Duration),
}

impl QueueLimit {
    /// The byte limit at a given capacity (`None` = unlimited).
    #[inline]
    pub fn bytes_at(self, capacity: Option<Bitrate>) -> Option<DataSize> {
        match (self, capacity) {
            (Self::Unlimited, _) | (Self::Time(_), None) => None,
            (Self::Bytes(b), _) => Some(b),
            (Self::Time(d), Some(rate)) => Some(rate * d),
        }
    }
}

/// Static description of a link. It serialises (JSON), so a relay is configured with exactly the
/// elements the simulator builds from a scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    pub name: String,
    /// The capacity the link reports (links table, bottleneck choice, a queue size in drain
    /// time) and, without `opportunities`, the rate it serialises at.
    pub capacity: CapacitySchedule,
    /// mahimahi's service: packets leave only at these delivery opportunities, and `capacity`
    /// only reports their rate.
    pub opportunities: Option<DeliveryOpportunities>,
    pub delay: Duration,
    pub queue: QueueLimit,
    pub discipline: QueueDiscipline,
    pub jitter: Option<JitterConfig>,
    pub loss: LossModel,
    /// ECN bleaching: every packet offered to the link leaves it Not-ECT (its ECN field cleared,
    /// as a tunnel that does not follow RFC 6040 or a middlebox that rewrites the TOS byte
    /// does; RFC 9330 §6.4.3 for what it does to L4S).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bleach_ecn: bool,
}

/// A link and its state, carrying packets of type `P`.
pub struct Link<P> {
    cfg: LinkConfig,
    loss: LossProcess,
    jitter: Option<NrRbpdv>,
    queue: Queue<P>,
    service: Service<P>,
    /// When the queue dropped the packets [`Link::poll_drop`] has not handed out yet.
    drops_due: Option<Instant>,
    /// Serialised packets travelling to the far end, in exit order (jitter never reorders).
    in_flight: VecDeque<(Instant, P)>,
    /// With [`Link::report_serialised`]: (flow, size) of each packet whose serialisation ended
    /// and not yet handed out by [`Link::poll_serialised`].
    serialised: Option<Vec<(FlowKey, DataSize)>>,
}

/// How a link serves its queue. One enum rather than two optional fields, so the rate path,
/// which every scenario runs, tests one tag where it tested whether a packet is on the wire.
enum Service<P> {
    /// Serialisation at the capacity schedule's rate: the packet on the wire, if any.
    Rate(Option<OnWire<P>>),
    /// mahimahi's delivery opportunities.
    Opportunities(Box<OpportunityService<P>>),
}

/// The packet being serialised.
struct OnWire<P> {
    pkt: P,
    done: Instant,
    serialisation: Duration,
}

/// A link served at delivery opportunities: the next opportunity and the packet being delivered.
struct OpportunityService<P> {
    clock: OpportunityClock,
    in_service: Option<InService<P>>,
}

/// The packet an opportunity is delivering, the bytes it still needs, and when it got its first.
struct InService<P> {
    pkt: P,
    left: DataSize,
    since: Instant,
}

impl<P: NetPacket> Link<P> {
    /// `queue_rng` drives the queue discipline's random decisions (PIE's drops).
    pub fn new(cfg: LinkConfig, loss_rng: SimRng, jitter_rng: SimRng, queue_rng: SimRng) -> Self {
        Self {
            loss: LossProcess::new(cfg.loss, loss_rng),
            jitter: cfg.jitter.map(|j| NrRbpdv::new(j, jitter_rng)),
            queue: Queue::new(&cfg.discipline, queue_rng),
            service: match &cfg.opportunities {
                None => Service::Rate(None),
                Some(o) => Service::Opportunities(Box::new(OpportunityService {
                    clock: OpportunityClock::new(o.clone()),
                    in_service: None,
                })),
            },
            cfg,
            drops_due: None,
            in_flight: VecDeque::new(),
            serialised: None,
        }
    }

    pub fn config(&self) -> &LinkConfig {
        &self.cfg
    }

    pub fn name(&self) -> &str {
        &self.cfg.name
    }

    pub fn capacity_at(&self, t: Instant) -> Option<Bitrate> {
        self.cfg.capacity.rate_at(t)
    }

    /// Bytes waiting, including the packet being serialised.
    pub fn queue_bytes(&self) -> DataSize {
        self.queue.bytes() + self.on_wire_bytes()
    }

    fn on_wire_bytes(&self) -> DataSize {
        match &self.service {
            Service::Rate(on_wire) => on_wire.as_ref().map_or(DataSize::ZERO, |w| w.pkt.size()),
            Service::Opportunities(s) => s.in_service.as_ref().map_or(DataSize::ZERO, |s| s.pkt.size()),
        }
    }

    /// The buffer limit in force at `t` (a limit in drain time uses the capacity before an
    /// outage while the capacity is zero).
    pub fn queue_limit_at(&self, t: Instant) -> Option<DataSize> {
        self.cfg.queue.bytes_at(self.cfg.capacity.sizing_rate_at(t))
    }

    /// Makes the link report every packet whose serialisation ends ([`Link::poll_serialised`]):
    /// a link that is a host's own interface tells the host when a packet has left it.
    pub fn report_serialised(&mut self) {
        self.serialised.get_or_insert_with(Vec::new);
    }

    /// A packet whose serialisation ended, as (flow, size), if the link reports them.
    pub fn poll_serialised(&mut self) -> Option<(FlowKey, DataSize)> {
        self.serialised.as_mut().and_then(Vec::pop)
    }

    /// Packets the queue marked CE so far.
    pub fn ce_marks(&self) -> u64 {
        self.queue.ce_marks()
    }

    /// The queue's DualPI2 state, if it runs DualPI2 ([`crate::queue::Queue::dualpi2_state`]).
    pub fn dualpi2_state(&self) -> Option<DualPi2State> {
        self.queue.dualpi2_state()
    }

    /// Offers a packet; returns it with the reason if the link drops it on arrival.
    pub fn enqueue(&mut self, now: Instant, mut pkt: P) -> Result<(), (P, DropReason)> {
        if self.loss.lose() {
            return Err((pkt, DropReason::RandomLoss));
        }
        if self.cfg.bleach_ecn {
            pkt.set_ecn(Ecn::NotEct);
        }
        if let Service::Opportunities(_) = self.service {
            // As mahimahi does before it queues a packet: deliver up to `now` first, so the
            // arrival cannot use an opportunity at or before its own arrival.
            self.serve_opportunities(now);
        }
        // The packet on the wire still takes its room in the buffer.
        let room = self.queue_limit_at(now).map(|limit| limit.saturating_sub(self.on_wire_bytes()));
        // A refused packet leaves the queue as it was.
        self.queue.enqueue(now, pkt, room)?;
        if let Service::Rate(None) = self.service {
            self.start_transmission(now);
        }
        self.note_drops(now);
        Ok(())
    }

    /// Takes the next packet off the queue and puts it on the wire at `now` (rate service).
    fn start_transmission(&mut self, now: Instant) {
        let on_wire = self.queue.dequeue(now).map(|pkt| {
            let done = self.cfg.capacity.finish_time(now, pkt.size());
            OnWire { pkt, done, serialisation: done - now }
        });
        if let Service::Rate(slot) = &mut self.service {
            *slot = on_wire;
        }
    }

    /// Wakes the link at `now` if the queue dropped packets that are still to be handed out.
    fn note_drops(&mut self, now: Instant) {
        if self.drops_due.is_none() && self.queue.has_drops() {
            self.drops_due = Some(now);
        }
    }

    /// The next instant something happens inside the link.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let tx = match &self.service {
            Service::Rate(on_wire) => on_wire.as_ref().map(|w| w.done),
            // Busy: the next opportunity. Idle: nothing; opportunities pass unused.
            Service::Opportunities(s) => {
                (s.in_service.is_some() || !self.queue.bytes().is_zero()).then(|| s.clock.next())
            }
        };
        let out = self.in_flight.front().map(|(t, _)| *t);
        earliest(earliest(tx, out), self.drops_due)
    }

    /// Advances serialisation (or delivery at opportunities) up to `now`.
    pub fn on_timeout(&mut self, now: Instant) {
        loop {
            let due = match &mut self.service {
                Service::Rate(on_wire) => on_wire.take_if(|w| w.done <= now),
                Service::Opportunities(_) => return self.serve_opportunities(now),
            };
            let Some(OnWire { pkt, done, serialisation }) = due else { return };
            self.depart(done, pkt, serialisation);
            self.start_transmission(done);
            self.note_drops(done);
        }
    }

    /// A packet whose last bit left the queue at `done` starts its way to the far end.
    // Both services call this per packet; forced inline so the rate path keeps the code it had
    // before the second caller existed (see `NrRbpdv::sample`).
    #[inline(always)]
    fn depart(&mut self, done: Instant, pkt: P, serialisation: Duration) {
        let nominal = done + self.cfg.delay;
        let exit = match &mut self.jitter {
            Some(j) => j.exit_time(nominal, serialisation),
            None => nominal,
        };
        if let Some(serialised) = &mut self.serialised {
            serialised.push((pkt.flow_key(), pkt.size()));
        }
        self.in_flight.push_back((exit, pkt));
    }

    /// Uses every delivery opportunity up to `now` (mahimahi's `LinkQueue::rationalize`): each
    /// carries 1504 bytes to the packet in service and then to the next queued packets; a
    /// packet leaves at the opportunity that carries its last byte. What an opportunity does
    /// not use is lost, and so are the opportunities of an idle link.
    fn serve_opportunities(&mut self, now: Instant) {
        let Service::Opportunities(mut service) = std::mem::replace(&mut self.service, Service::Rate(None))
        else {
            return;
        };
        loop {
            if service.in_service.is_none() && self.queue.bytes().is_zero() {
                service.clock.skip_through(now);
                break;
            }
            if service.clock.next() > now {
                break;
            }
            let at = service.clock.take();
            let mut budget = OPPORTUNITY_SIZE;
            while !budget.is_zero() {
                let current = match &mut service.in_service {
                    Some(current) => current,
                    None => match self.queue.dequeue(at) {
                        Some(pkt) => {
                            service.in_service.insert(InService { left: pkt.size(), pkt, since: at })
                        }
                        None => break,
                    },
                };
                let sent = budget.min(current.left);
                current.left -= sent;
                budget -= sent;
                if current.left.is_zero() {
                    let InService { pkt, since, .. } = service.in_service.take().expect("in service");
                    self.depart(at, pkt, at - since);
                }
            }
            self.note_drops(at);
        }
        self.service = Service::Opportunities(service);
    }

    /// The next packet that has reached the far end by `now`, with the instant it was due there
    /// (at or before `now`; a caller that polls late can tell how late it is).
    pub fn poll_output(&mut self, now: Instant) -> Option<(Instant, P)> {
        if self.in_flight.front().is_some_and(|(t, _)| *t <= now) {
            self.in_flight.pop_front()
        } else {
            None
        }
    }

    /// The next packet the queue dropped after accepting it (an AQM's drop at dequeue, or
    /// FQ-CoDel's drop from its fattest flow), with the reason.
    pub fn poll_drop(&mut self) -> Option<(P, DropReason)> {
        let dropped = self.queue.poll_drop();
        if dropped.is_none() {
            self.drops_due = None;
        }
        dropped
    }
}

#[inline]
fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    //! The delivery-opportunity service against mahimahi's rules (`opportunities`), driven with
    //! scripted arrivals the way the world drives a link.

    use rtcbench_wire::Ecn;

    use super::*;
    use crate::queue::test_support::{packet, TestPacket};
    use crate::rng::rng_for;

    fn ms(v: i64) -> Instant {
        Instant::from_millis(v)
    }

    fn us(v: i64) -> Instant {
        Instant::from_micros(v)
    }

    /// A link served at opportunities at these milliseconds (looping), no delay, `queue` bytes.
    fn link(opportunities_ms: &[i64], queue: QueueLimit) -> Link<TestPacket> {
        let o =
            DeliveryOpportunities::new(opportunities_ms.iter().map(|&m| Duration::from_millis(m)).collect())
                .unwrap();
        let cfg = LinkConfig {
            name: "trace".into(),
            capacity: o.binned_rate(Duration::from_millis(200), Instant::from_secs(10)),
            opportunities: Some(o),
            delay: Duration::ZERO,
            queue,
            discipline: QueueDiscipline::DropTail,
            jitter: None,
            loss: LossModel::None,
            bleach_ecn: false,
        };
        Link::new(cfg, rng_for(1, "l"), rng_for(1, "j"), rng_for(1, "q"))
    }

    /// Offers packets (arrival, bytes) in time order and wakes the link at its deadlines, as the
    /// world does; `arrivals_first` decides which goes first when an arrival and a wake-up fall
    /// on one instant. Returns each packet's exit time, `None` if dropped or still inside.
    fn drive(
        link: &mut Link<TestPacket>,
        arrivals: &[(Instant, u64)],
        until: Instant,
        arrivals_first: bool,
    ) -> Vec<Option<Instant>> {
        let mut exits = vec![None; arrivals.len()];
        let mut next = 0;
        loop {
            let wake = link.poll_timeout().filter(|&t| t <= until);
            let arrival = arrivals.get(next).map(|a| a.0);
            let take_arrival = match (arrival, wake) {
                (Some(a), Some(w)) => a < w || (a == w && arrivals_first),
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            let now = if take_arrival {
                let (at, bytes) = arrivals[next];
                let _ = link.enqueue(at, packet(next as u64, 0, bytes, Ecn::NotEct));
                next += 1;
                at
            } else {
                let now = wake.expect("a wake-up");
                link.on_timeout(now);
                now
            };
            while link.poll_drop().is_some() {}
            while let Some((t, pkt)) = link.poll_output(now) {
                exits[pkt.id as usize] = Some(t);
            }
        }
        exits
    }

    fn both_orders(
        opportunities_ms: &[i64],
        arrivals: &[(Instant, u64)],
        until: Instant,
    ) -> Vec<Option<Instant>> {
        let a = drive(&mut link(opportunities_ms, QueueLimit::Unlimited), arrivals, until, true);
        let b = drive(&mut link(opportunities_ms, QueueLimit::Unlimited), arrivals, until, false);
        assert_eq!(a, b, "the outcome must not depend on the order of events at one instant");
        a
    }

    #[test]
    fn a_packet_leaves_at_the_first_opportunity_after_its_arrival() {
        // One opportunity per millisecond from 1 ms.
        let exits = both_orders(&[1], &[(us(500), 1504), (ms(3), 100)], ms(10));
        assert_eq!(exits, [Some(ms(1)), Some(ms(4))], "an arrival on an opportunity waits for the next");
    }

    #[test]
    fn small_packets_share_an_opportunity_and_large_ones_span_two() {
        // 700 + 700 fit in 1504; the third gets the 104 bytes left and the rest at 2 ms.
        let exits = both_orders(&[1], &[(us(100), 700), (us(200), 700), (us(300), 700)], ms(10));
        assert_eq!(exits, [Some(ms(1)), Some(ms(1)), Some(ms(2))]);
        // Back-to-back 1500-byte packets: each opportunity leaves 4 bytes for the next packet,
        // so after 375 opportunities one packet has been carried entirely by the leftovers.
        let burst: Vec<(Instant, u64)> = (0..377).map(|_| (us(100), 1500)).collect();
        let exits = both_orders(&[1], &burst, ms(1000));
        assert_eq!(exits[0], Some(ms(1)));
        assert_eq!(exits[374], Some(ms(375)));
        assert_eq!(exits[375], Some(ms(375)), "4 × 375 = 1500 bytes of leftovers");
        assert_eq!(exits[376], Some(ms(376)));
    }

    #[test]
    fn unused_opportunities_are_lost_not_banked() {
        // Idle for 100 ms, then ten full packets: one per opportunity after the arrival, not ten
        // at once on the strength of the hundred unused opportunities before.
        let burst: Vec<(Instant, u64)> = (0..10).map(|_| (us(100_500), 1504)).collect();
        let exits = both_orders(&[1], &burst, ms(200));
        assert_eq!(exits, (101..=110).map(|m| Some(ms(m))).collect::<Vec<_>>());
        // What an opportunity does not use is lost too: a 1000-byte packet leaves 504 bytes at
        // 1 ms that a packet arriving at that very instant may not use.
        let exits = both_orders(&[1], &[(us(500), 1000), (ms(1), 400)], ms(10));
        assert_eq!(exits, [Some(ms(1)), Some(ms(2))]);
    }

    #[test]
    fn the_trace_loops_and_a_queue_limit_counts_the_packet_in_service() {
        // Opportunities at 0, 5, 10 | 10, 15, 20: two at 10 ms.
        let arrivals: Vec<(Instant, u64)> = (0..4).map(|_| (us(6_000), 1504)).collect();
        let exits = both_orders(&[0, 5, 10], &arrivals, ms(30));
        assert_eq!(exits, [Some(ms(10)), Some(ms(10)), Some(ms(15)), Some(ms(20))]);
        // A 3000-byte buffer holds the packet in service and one more.
        let mut l = link(&[1], QueueLimit::Bytes(DataSize::bytes(3000)));
        let three: Vec<(Instant, u64)> = (0..3).map(|_| (us(100), 1500)).collect();
        let exits = drive(&mut l, &three, ms(10), true);
        assert_eq!(exits, [Some(ms(1)), Some(ms(2)), None]);
    }

    #[test]
    fn an_idle_link_asks_for_no_wake_ups() {
        let mut l = link(&[1], QueueLimit::Unlimited);
        assert_eq!(l.poll_timeout(), None);
        l.enqueue(us(2_500), packet(0, 0, 100, Ecn::NotEct)).unwrap();
        assert_eq!(l.poll_timeout(), Some(ms(3)));
        assert_eq!(l.queue_bytes(), DataSize::bytes(100));
        l.on_timeout(ms(3));
        assert_eq!(l.poll_output(ms(3)).map(|(t, _)| t), Some(ms(3)));
        assert_eq!(l.poll_timeout(), None);
    }
}
