//! A one-directional link: random loss → queue → serialisation at the scheduled capacity →
//! propagation delay with optional NR-RBPDV jitter. Sans-IO: packets are offered with
//! [`Link::enqueue`], the link is woken at [`Link::poll_timeout`] and drained with
//! [`Link::poll_output`] (packets at the far end) and [`Link::poll_drop`] (packets the queue
//! dropped after accepting them).
//!
//! Loss is applied as a packet enters the link, so a lost packet does not use capacity (as
//! `netem loss` in front of a shaper behaves). The queue runs the configured discipline
//! ([`crate::queue`]; drop-tail by default) and hands over a packet when the link starts
//! serialising it. A queue size given in milliseconds is turned into bytes at the capacity in
//! force; when the capacity changes the byte limit is recomputed for new arrivals and packets
//! already queued stay (as `tc tbf latency` does when reconfigured). During an outage (zero
//! capacity) the limit of the capacity before it applies. The limit counts the packet being
//! serialised.

pub mod capacity;
pub mod jitter;
pub mod loss;

use std::collections::VecDeque;

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

use crate::packet::{DropReason, FlowId, Packet};
use crate::queue::{Queue, QueueDiscipline};
use crate::rng::SimRng;
use capacity::CapacitySchedule;
use jitter::{JitterConfig, NrRbpdv};
use loss::{LossModel, LossProcess};

/// How much a link's buffer holds: the hard limit under every queue discipline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueLimit {
    Unlimited,
    Bytes(DataSize),
    /// Drain time at the capacity in force (RFC 8868 §4.3: bytes = size × rate / 8).
    Time(Duration),
}

impl QueueLimit {
    /// The byte limit at a given capacity (`None` = unlimited).
    pub fn bytes_at(self, capacity: Option<Bitrate>) -> Option<DataSize> {
        match (self, capacity) {
            (Self::Unlimited, _) | (Self::Time(_), None) => None,
            (Self::Bytes(b), _) => Some(b),
            (Self::Time(d), Some(rate)) => Some(rate * d),
        }
    }
}

/// Static description of a link.
#[derive(Clone, Debug)]
pub struct LinkConfig {
    pub name: String,
    pub capacity: CapacitySchedule,
    pub delay: Duration,
    pub queue: QueueLimit,
    pub discipline: QueueDiscipline,
    pub jitter: Option<JitterConfig>,
    pub loss: LossModel,
}

/// A link and its state.
pub struct Link {
    cfg: LinkConfig,
    loss: LossProcess,
    jitter: Option<NrRbpdv>,
    queue: Queue,
    on_wire: Option<OnWire>,
    /// When the queue dropped the packets [`Link::poll_drop`] has not handed out yet.
    drops_due: Option<Instant>,
    /// Serialised packets travelling to the far end, in exit order (jitter never reorders).
    in_flight: VecDeque<(Instant, Packet)>,
    /// With [`Link::report_serialised`]: (flow, size) of each packet whose serialisation ended
    /// and not yet handed out by [`Link::poll_serialised`].
    serialised: Option<Vec<(FlowId, DataSize)>>,
}

/// The packet being serialised.
struct OnWire {
    pkt: Packet,
    done: Instant,
    serialisation: Duration,
}

impl Link {
    /// `queue_rng` drives the queue discipline's random decisions (PIE's drops).
    pub fn new(cfg: LinkConfig, loss_rng: SimRng, jitter_rng: SimRng, queue_rng: SimRng) -> Self {
        Self {
            loss: LossProcess::new(cfg.loss, loss_rng),
            jitter: cfg.jitter.map(|j| NrRbpdv::new(j, jitter_rng)),
            queue: Queue::new(&cfg.discipline, queue_rng),
            cfg,
            on_wire: None,
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
        self.on_wire.as_ref().map_or(DataSize::ZERO, |w| w.pkt.size)
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
    pub fn poll_serialised(&mut self) -> Option<(FlowId, DataSize)> {
        self.serialised.as_mut().and_then(Vec::pop)
    }

    /// Packets the queue marked CE so far.
    pub fn ce_marks(&self) -> u64 {
        self.queue.ce_marks()
    }

    /// Offers a packet; returns it with the reason if the link drops it on arrival.
    pub fn enqueue(&mut self, now: Instant, pkt: Packet) -> Result<(), (Packet, DropReason)> {
        if self.loss.lose() {
            return Err((pkt, DropReason::RandomLoss));
        }
        // The packet on the wire still takes its room in the buffer.
        let room = self.queue_limit_at(now).map(|limit| limit.saturating_sub(self.on_wire_bytes()));
        // A refused packet leaves the queue as it was.
        self.queue.enqueue(now, pkt, room)?;
        if self.on_wire.is_none() {
            self.start_transmission(now);
        }
        self.note_drops(now);
        Ok(())
    }

    /// Takes the next packet off the queue and puts it on the wire at `now`.
    fn start_transmission(&mut self, now: Instant) {
        self.on_wire = self.queue.dequeue(now).map(|pkt| {
            let done = self.cfg.capacity.finish_time(now, pkt.size);
            OnWire { pkt, done, serialisation: done - now }
        });
    }

    /// Wakes the link at `now` if the queue dropped packets that are still to be handed out.
    fn note_drops(&mut self, now: Instant) {
        if self.drops_due.is_none() && self.queue.has_drops() {
            self.drops_due = Some(now);
        }
    }

    /// The next instant something happens inside the link.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let tx = self.on_wire.as_ref().map(|w| w.done);
        let out = self.in_flight.front().map(|(t, _)| *t);
        earliest(earliest(tx, out), self.drops_due)
    }

    /// Advances serialisation up to `now`.
    pub fn on_timeout(&mut self, now: Instant) {
        while let Some(OnWire { pkt, done, serialisation }) = self.on_wire.take_if(|w| w.done <= now) {
            let nominal = done + self.cfg.delay;
            let exit = match &mut self.jitter {
                Some(j) => j.exit_time(nominal, serialisation),
                None => nominal,
            };
            if let Some(serialised) = &mut self.serialised {
                serialised.push((pkt.flow, pkt.size));
            }
            self.in_flight.push_back((exit, pkt));
            self.start_transmission(done);
            self.note_drops(done);
        }
    }

    /// The next packet that has reached the far end by `now`.
    pub fn poll_output(&mut self, now: Instant) -> Option<(Instant, Packet)> {
        if self.in_flight.front().is_some_and(|(t, _)| *t <= now) {
            self.in_flight.pop_front()
        } else {
            None
        }
    }

    /// The next packet the queue dropped after accepting it (an AQM's drop at dequeue, or
    /// FQ-CoDel's drop from its fattest flow), with the reason.
    pub fn poll_drop(&mut self) -> Option<(Packet, DropReason)> {
        let dropped = self.queue.poll_drop();
        if dropped.is_none() {
            self.drops_due = None;
        }
        dropped
    }
}

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
