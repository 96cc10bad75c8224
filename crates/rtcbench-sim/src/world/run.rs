//! The drive loop: pop the next due event, let its element work, move what it emitted on,
//! schedule its next wake-up (module docs of `world`).

use rtcbench_net::{Element, HostRelease};
use rtcbench_units::Instant;

use super::network::{on_element, Beside, Drive, Network};
use super::{Event, World, LINK_SAMPLE_INTERVAL};
use crate::call::{CallTrace, SfuTrace};
use crate::packet::{flow_of, Packet};
use crate::trace::PacketEvent;

/// The most links-table rows reserved at once (some 150 MB of columns at most, never touched
/// until written), for a run kept in memory; a long one grows by doubling beyond. A streamed run
/// reserves at most a piece's rows ([`super::Simulation::hand_over_every`]).
pub(super) const LINK_ROWS_RESERVED: usize = 1 << 20;

impl World {
    /// Schedules every element's first wake-up and the first link sample.
    pub(super) fn start(&mut self) {
        for ev in std::mem::take(&mut self.first_wakes) {
            self.wake(ev);
        }
        for i in 0..self.tcp_sources.len() as u32 {
            self.wake(Event::TcpSource(i));
            self.wake(Event::TcpSink(i));
        }
        for i in 0..self.cbrs.len() as u32 {
            self.wake(Event::Cbr(i));
        }
        self.sched.schedule(Instant::ZERO, Event::Sample);
    }

    /// Processes the events due at or before `limit` (at most `end`), no more than `budget` of
    /// them; returns how many.
    pub(super) fn run_until(&mut self, limit: Instant, budget: u64) -> u64 {
        let mut events = 0u64;
        while events < budget {
            let Some((now, ev)) = self.sched.pop_due(limit) else { break };
            events += 1;
            match ev {
                Event::Element(e) => self.element_work(now, e),
                Event::Sender(i) => {
                    if self.sender_wake[i as usize] == Some(now) {
                        self.sender_wake[i as usize] = None;
                    }
                    let obs = &mut CallTrace {
                        trace: &mut self.trace,
                        plumbing: &self.plumbings[i as usize],
                        mirrors: &self.frame_mirrors[i as usize],
                    };
                    self.senders[i as usize].on_timeout(now, obs);
                    self.flush_sender(now, i);
                }
                Event::Receiver(i) => {
                    if self.receiver_wake[i as usize] == Some(now) {
                        self.receiver_wake[i as usize] = None;
                    }
                    let obs = &mut CallTrace {
                        trace: &mut self.trace,
                        plumbing: &self.receiver_plumbings[i as usize],
                        mirrors: &[],
                    };
                    self.receivers[i as usize].on_timeout(now, obs);
                    self.flush_receiver(now, i);
                }
                Event::Forwarder(i) => {
                    if self.forwarder_wake[i as usize] == Some(now) {
                        self.forwarder_wake[i as usize] = None;
                    }
                    let obs = &mut SfuTrace {
                        trace: &mut self.trace,
                        plumbing: &self.forwarder_plumbings[i as usize],
                    };
                    self.forwarders[i as usize].on_timeout(now, obs);
                    self.flush_forwarder(now, i);
                }
                Event::TcpSource(i) => {
                    if self.tcp_source_wake[i as usize] == Some(now) {
                        self.tcp_source_wake[i as usize] = None;
                    }
                    self.tcp_sources[i as usize].on_timeout(now);
                    self.flush(now, ev);
                }
                Event::TcpSink(i) => {
                    if self.tcp_sink_wake[i as usize] == Some(now) {
                        self.tcp_sink_wake[i as usize] = None;
                    }
                    self.tcp_sinks[i as usize].on_timeout(now);
                    self.flush(now, ev);
                }
                Event::Cbr(i) => {
                    if self.cbr_wake[i as usize] == Some(now) {
                        self.cbr_wake[i as usize] = None;
                    }
                    self.cbrs[i as usize].on_timeout(now);
                    self.flush(now, ev);
                }
                Event::Sample => {
                    let held = self.trace.links.len();
                    let next = self.net.sample(now, &mut self.trace.links);
                    self.reserve_link_rows(now, self.trace.links.len() - held);
                    if now < self.end {
                        self.sched.schedule(next.min(self.end), Event::Sample);
                    }
                }
            }
        }
        events
    }

    /// Element `e` does what is due by `now`; what it serialised, dropped and delivered moves on.
    fn element_work(&mut self, now: Instant, e: u32) {
        on_element!(self, e, |i, element| self.work(now, e, i, element))
    }

    /// [`World::element_work`] for element `e`, which is `element(net, i)`.
    fn work<E: Element<Packet> + ?Sized>(
        &mut self,
        now: Instant,
        e: u32,
        i: u32,
        element: fn(&mut Network, u32) -> &mut E,
    ) {
        let beside = &mut self.net.beside[e as usize];
        if let Drive::Heap(pending) = &mut beside.drive {
            if *pending == Some(now) {
                *pending = None;
            }
        }
        let Beside { release, first_queue, .. } = *beside;
        element(&mut self.net, i).on_timeout(now);
        while let Some((key, size)) = element(&mut self.net, i).poll_serialised() {
            self.left_host(now, flow_of(key), size);
        }
        while let Some((queue, pkt, reason)) = Element::poll_drop(element(&mut self.net, i)) {
            if release == HostRelease::Accepted {
                // The packet left its host when the element took it.
                self.trace.packet(now, PacketEvent::Dropped, &pkt, Some((first_queue + queue, reason)));
            } else {
                self.dropped(now, first_queue + queue, &pkt, reason);
            }
        }
        while let Some((_, pkt)) = Element::poll_output(element(&mut self.net, i), now) {
            // A station's packet left its host when the AP acknowledged it (a driver frees it on
            // TX completion): TCP Small Queues may send more.
            if pkt.hop == 0 && release == HostRelease::Delivered {
                self.left_host(now, pkt.flow, pkt.size);
            }
            self.forward(now, pkt);
        }
        self.wake_element(e, i, element);
    }

    /// Schedules element `e`'s (`element(net, i)`) next wake-up: in its slot, or in the heap if
    /// earlier than the one pending there and not after the end of the run ([`World::wake`]).
    pub(super) fn wake_element<E: Element<Packet> + ?Sized>(
        &mut self,
        e: u32,
        i: u32,
        element: fn(&mut Network, u32) -> &mut E,
    ) {
        let t = element(&mut self.net, i).poll_timeout();
        match &mut self.net.beside[e as usize].drive {
            Drive::Slot(slot) => {
                if let Some(t) = t {
                    self.sched.schedule_in_slot(*slot, t, Event::Element(e));
                }
            }
            Drive::Heap(pending) => {
                if let Some(t) = t.filter(|&t| t <= self.end && pending.is_none_or(|w| t < w)) {
                    *pending = Some(t);
                    self.sched.schedule(t, Event::Element(e));
                }
            }
        }
    }

    /// Makes room in the links table, when the next sample of `rows` rows would not fit, for the
    /// samples left until the end of the run (at most `link_rows_reserved` rows) in one
    /// allocation: grown by doubling instead, its columns would be copied and their pages
    /// touched twice over (a tenth of an LTE run's time, `make bench`).
    fn reserve_link_rows(&mut self, now: Instant, rows: usize) {
        let links = &mut self.trace.links;
        let samples_left = ((self.end - now).as_micros() / LINK_SAMPLE_INTERVAL.as_micros()) as usize;
        if samples_left == 0 || links.capacity() - links.len() >= rows {
            return;
        }
        links.reserve_exact(rows.saturating_mul(samples_left).min(self.link_rows_reserved));
    }

    /// Schedules an element's next wake-up if it is earlier than the one pending. A stale
    /// wake-up (one superseded by an earlier) still fires and finds nothing due.
    ///
    /// A wake-up after the end of the run is not scheduled: it would never fire, and a TCP
    /// endpoint with nothing due asks for `Instant::FAR_FUTURE` after each of its events, so such
    /// entries would pile up at the bottom of the heap (about 1 400 on average in `make bench`'s
    /// L4S case, where the events that can fire number a few dozen) and every pop would walk down
    /// past them.
    pub(super) fn wake(&mut self, ev: Event) {
        let (t, slot) = match ev {
            Event::Element(e) => return on_element!(self, e, |i, element| self.wake_element(e, i, element)),
            Event::Sender(i) => {
                (Some(self.senders[i as usize].poll_timeout()), &mut self.sender_wake[i as usize])
            }
            Event::Receiver(i) => {
                (Some(self.receivers[i as usize].poll_timeout()), &mut self.receiver_wake[i as usize])
            }
            Event::Forwarder(i) => {
                (Some(self.forwarders[i as usize].poll_timeout()), &mut self.forwarder_wake[i as usize])
            }
            Event::TcpSource(i) => {
                (Some(self.tcp_sources[i as usize].poll_timeout()), &mut self.tcp_source_wake[i as usize])
            }
            Event::TcpSink(i) => {
                (Some(self.tcp_sinks[i as usize].poll_timeout()), &mut self.tcp_sink_wake[i as usize])
            }
            Event::Cbr(i) => (Some(self.cbrs[i as usize].poll_timeout()), &mut self.cbr_wake[i as usize]),
            Event::Sample => unreachable!("samples are scheduled by the sampling loop"),
        };
        if let Some(t) = t.filter(|&t| t <= self.end && slot.is_none_or(|w| t < w)) {
            *slot = Some(t);
            self.sched.schedule(t, ev);
        }
    }
}
