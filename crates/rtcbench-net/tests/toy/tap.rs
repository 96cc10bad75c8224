//! A toy element kind, to show what a new kind takes: this one trait impl, then one line where a
//! driver is built (`Simulation::with_elements`, `Relay::with_elements`). A fixed-delay tap:
//! every packet comes out of its far port exactly `delay` after it went in, in order; it has
//! no capacity and never drops. Shared by the tests of `rtcbench-net`, `rtcbench-sim` and
//! `rtcbench-live` (`#[path]`), so all three drive the same code.

use std::collections::VecDeque;

use rtcbench_net::{DropReason, Element, NetPacket};
use rtcbench_units::{DataSize, Duration, Instant};

pub(crate) struct FixedDelayTap<P> {
    delay: Duration,
    /// Packets on their way, with the instant each comes out, in that order.
    in_flight: VecDeque<(Instant, P)>,
}

impl<P> FixedDelayTap<P> {
    pub(crate) fn new(delay: Duration) -> Self {
        Self { delay, in_flight: VecDeque::new() }
    }
}

impl<P: NetPacket> Element<P> for FixedDelayTap<P> {
    fn push(&mut self, now: Instant, _from: u16, _to: u16, pkt: P) -> Result<(), (P, DropReason)> {
        self.in_flight.push_back((now + self.delay, pkt));
        Ok(())
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.in_flight.front().map(|(t, _)| *t)
    }
    fn on_timeout(&mut self, _now: Instant) {}
    fn poll_output(&mut self, now: Instant) -> Option<(Instant, P)> {
        if self.in_flight.front().is_some_and(|(t, _)| *t <= now) {
            self.in_flight.pop_front()
        } else {
            None
        }
    }
    fn poll_drop(&mut self) -> Option<(u16, P, DropReason)> {
        None
    }
    fn queues(&self) -> u16 {
        1
    }
    fn queue_of(&self, _from: u16, _to: u16) -> u16 {
        0
    }
    /// What it holds: the packets on their way.
    fn queue_bytes(&self, _queue: u16) -> DataSize {
        self.in_flight.iter().map(|(_, p)| p.size()).fold(DataSize::ZERO, |a, b| a + b)
    }
}
