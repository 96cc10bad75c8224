//! A one-directional link: random loss → drop-tail queue → serialisation at the scheduled
//! capacity → propagation delay with optional NR-RBPDV jitter. Sans-IO: packets are offered
//! with [`Link::enqueue`], the link is woken at [`Link::poll_timeout`] and drained with
//! [`Link::poll_output`].
//!
//! Loss is applied as a packet enters the link, so a lost packet does not use capacity (as
//! `netem loss` in front of a shaper behaves). A queue size given in milliseconds is turned into
//! bytes at the capacity in force; when the capacity changes the byte limit is recomputed for
//! new arrivals and packets already queued stay (as `tc tbf latency` does when reconfigured).
//! During an outage (zero capacity) the limit of the capacity before it applies.

pub mod capacity;
pub mod jitter;
pub mod loss;

use std::collections::VecDeque;

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

use crate::packet::{DropReason, Packet};
use crate::rng::SimRng;
use capacity::CapacitySchedule;
use jitter::{JitterConfig, NrRbpdv};
use loss::{LossModel, LossProcess};

/// How much a drop-tail queue holds.
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
    pub jitter: Option<JitterConfig>,
    pub loss: LossModel,
}

/// A link and its state.
pub struct Link {
    cfg: LinkConfig,
    loss: LossProcess,
    jitter: Option<NrRbpdv>,
    /// Waiting packets; the front one is being serialised when `tx_done` is set.
    queue: VecDeque<Packet>,
    queue_bytes: DataSize,
    tx_done: Option<(Instant, Duration)>,
    /// Serialised packets travelling to the far end, in exit order (jitter never reorders).
    in_flight: VecDeque<(Instant, Packet)>,
}

impl Link {
    pub fn new(cfg: LinkConfig, loss_rng: SimRng, jitter_rng: SimRng) -> Self {
        Self {
            loss: LossProcess::new(cfg.loss, loss_rng),
            jitter: cfg.jitter.map(|j| NrRbpdv::new(j, jitter_rng)),
            cfg,
            queue: VecDeque::new(),
            queue_bytes: DataSize::ZERO,
            tx_done: None,
            in_flight: VecDeque::new(),
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
        self.queue_bytes
    }

    /// The drop-tail limit in force at `t` (a limit in drain time uses the capacity before an
    /// outage while the capacity is zero).
    pub fn queue_limit_at(&self, t: Instant) -> Option<DataSize> {
        self.cfg.queue.bytes_at(self.cfg.capacity.sizing_rate_at(t))
    }

    /// Offers a packet; returns it with the reason if the link drops it.
    pub fn enqueue(&mut self, now: Instant, pkt: Packet) -> Result<(), (Packet, DropReason)> {
        if self.loss.lose() {
            return Err((pkt, DropReason::RandomLoss));
        }
        if let Some(limit) = self.queue_limit_at(now) {
            if self.queue_bytes + pkt.size > limit {
                return Err((pkt, DropReason::QueueFull));
            }
        }
        self.queue_bytes += pkt.size;
        self.queue.push_back(pkt);
        if self.tx_done.is_none() {
            self.start_transmission(now);
        }
        Ok(())
    }

    fn start_transmission(&mut self, now: Instant) {
        self.tx_done = self.queue.front().map(|p| {
            let done = self.cfg.capacity.finish_time(now, p.size);
            (done, done - now)
        });
    }

    /// The next instant something happens inside the link.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let tx = self.tx_done.map(|(t, _)| t);
        let out = self.in_flight.front().map(|(t, _)| *t);
        match (tx, out) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Advances serialisation up to `now`.
    pub fn on_timeout(&mut self, now: Instant) {
        while let Some((done, serial)) = self.tx_done.filter(|(t, _)| *t <= now) {
            let pkt = self.queue.pop_front().expect("a packet is being serialised");
            self.queue_bytes -= pkt.size;
            let nominal = done + self.cfg.delay;
            let exit = match &mut self.jitter {
                Some(j) => j.exit_time(nominal, serial),
                None => nominal,
            };
            self.in_flight.push_back((exit, pkt));
            self.start_transmission(done);
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
}
