//! One shape for every network element, so that a driver (the simulator's event heap, the
//! emulation relay's monotonic clock) moves packets through a link, a BSS, an LTE cell or an
//! element of its user's own with the same few lines.
//!
//! An element has **ports**, where packets enter and leave, and **queues**, where they wait and
//! may be dropped. A route crosses an element as one hop, from one port to another:
//!
//! | element | ports | queues |
//! | --- | --- | --- |
//! | [`Link`] | 0 its sending end, 1 its far end | 1 |
//! | [`wifi::Bss`] | 0 the AP, i the i-th station | one per node (all its access categories) |
//! | [`lte::Cell`] | 0 the eNB, i the i-th UE | two per UE: its downlink (at the eNB), its uplink |
//!
//! The drive loop is the crate's (see its docs), whatever the element: [`Element::push`] a packet
//! (which may refuse it), call [`Element::on_timeout`] at (or after) [`Element::poll_timeout`],
//! and after either drain [`Element::poll_serialised`], [`Element::poll_drop`] and
//! [`Element::poll_output`], in that order.
//!
//! A driver holds its elements as [`AnyElement`]: the built-in kinds are enum variants, so the
//! simulator's per-packet calls are a match rather than a virtual call, and
//! [`AnyElement::Other`] takes any element behind the trait.

use rtcbench_units::{DataSize, Instant};

use crate::link::Link;
use crate::packet::{DropReason, FlowKey, NetPacket};
use crate::radio::{lte, wifi};

/// Port `Link` packets enter by.
pub const LINK_IN: u16 = 0;
/// Port `Link` packets leave by.
pub const LINK_OUT: u16 = 1;

/// One hop of a route through a driver's elements: which element, entered at which port, left
/// by which.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ElementHop {
    /// Index into the driver's elements.
    pub element: u32,
    pub from: u16,
    pub to: u16,
}

impl ElementHop {
    /// Through a link (`from` its sending end, `to` its far end).
    pub const fn link(element: u32) -> Self {
        Self { element, from: LINK_IN, to: LINK_OUT }
    }
}

/// When a packet handed to an element by its sending host (at the first hop of its route) stops
/// taking room in that host: when TCP Small Queues (Linux `tcp_small_queue_check`) lets the
/// socket send more.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostRelease {
    /// When its serialisation ends ([`Element::poll_serialised`]), or it is dropped: a wired
    /// interface.
    Serialised,
    /// When the element delivers it, or drops it: a Wi-Fi driver frees a frame on TX
    /// completion, once the receiver acknowledged it.
    Delivered,
    /// As soon as the element accepts it: an LTE modem takes its host's packets at once (USB,
    /// no small-queue pacing), and its own drops no longer concern the host.
    Accepted,
}

/// A network element driven sans-IO (module docs).
pub trait Element<P: NetPacket> {
    /// A packet arrives at port `from` for port `to` at `now`. A refused packet comes back with
    /// the reason; it was never queued.
    fn push(&mut self, now: Instant, from: u16, to: u16, pkt: P) -> Result<(), (P, DropReason)>;

    /// When the element next has work ([`Element::on_timeout`]); `None` while idle.
    #[must_use]
    fn poll_timeout(&self) -> Option<Instant>;

    /// Does the work due by `now`, each piece at its own instant.
    fn on_timeout(&mut self, now: Instant);

    /// The next packet at its destination port by `now`, with the instant it got there. (The
    /// port is the one it was pushed for: a driver knows it from the packet's route.)
    #[must_use]
    fn poll_output(&mut self, now: Instant) -> Option<(Instant, P)>;

    /// The next packet dropped after it was accepted, with the queue that held it.
    #[must_use]
    fn poll_drop(&mut self) -> Option<(u16, P, DropReason)>;

    /// The next packet whose serialisation ended, as (flow, size), where the element reports it
    /// ([`HostRelease::Serialised`]).
    #[must_use]
    fn poll_serialised(&mut self) -> Option<(FlowKey, DataSize)> {
        None
    }

    /// How many queues the element has.
    fn queues(&self) -> u16;

    /// The queue a packet from port `from` to port `to` waits in.
    fn queue_of(&self, from: u16, to: u16) -> u16;

    /// Bytes waiting in queue `queue`.
    fn queue_bytes(&self, queue: u16) -> DataSize;

    /// When a packet pushed by its sending host stops taking room there. By default at once
    /// ([`HostRelease::Accepted`]): an element that reports no serialisation
    /// ([`Element::poll_serialised`]) would otherwise hold a small-queues sender back for ever.
    fn host_release(&self) -> HostRelease {
        HostRelease::Accepted
    }
}

impl<P: NetPacket> Element<P> for Link<P> {
    #[inline]
    fn push(&mut self, now: Instant, _from: u16, _to: u16, pkt: P) -> Result<(), (P, DropReason)> {
        self.enqueue(now, pkt)
    }
    #[inline]
    fn poll_timeout(&self) -> Option<Instant> {
        Self::poll_timeout(self)
    }
    #[inline]
    fn on_timeout(&mut self, now: Instant) {
        Self::on_timeout(self, now)
    }
    #[inline]
    fn poll_output(&mut self, now: Instant) -> Option<(Instant, P)> {
        Self::poll_output(self, now)
    }
    #[inline]
    fn poll_drop(&mut self) -> Option<(u16, P, DropReason)> {
        Self::poll_drop(self).map(|(pkt, reason)| (0, pkt, reason))
    }
    #[inline]
    fn poll_serialised(&mut self) -> Option<(FlowKey, DataSize)> {
        Self::poll_serialised(self)
    }
    fn queues(&self) -> u16 {
        1
    }
    fn queue_of(&self, _from: u16, _to: u16) -> u16 {
        0
    }
    fn queue_bytes(&self, _queue: u16) -> DataSize {
        Self::queue_bytes(self)
    }
    fn host_release(&self) -> HostRelease {
        HostRelease::Serialised
    }
}

impl<P: NetPacket> Element<P> for wifi::Bss<P> {
    #[inline]
    fn push(&mut self, now: Instant, from: u16, to: u16, pkt: P) -> Result<(), (P, DropReason)> {
        Self::push(self, now, wifi::Port(from), wifi::Port(to), pkt)
    }
    #[inline]
    fn poll_timeout(&self) -> Option<Instant> {
        Self::poll_timeout(self)
    }
    #[inline]
    fn on_timeout(&mut self, now: Instant) {
        Self::on_timeout(self, now)
    }
    #[inline]
    fn poll_output(&mut self, now: Instant) -> Option<(Instant, P)> {
        Self::poll_output(self, now).map(|(t, _, pkt)| (t, pkt))
    }
    #[inline]
    fn poll_drop(&mut self) -> Option<(u16, P, DropReason)> {
        // A node's queues are its port's.
        Self::poll_drop(self).map(|(port, pkt, reason)| (port.0, pkt, reason))
    }
    fn queues(&self) -> u16 {
        self.stations() as u16 + 1
    }
    /// A packet waits in the queues of the node it leaves (a station's packet to another station
    /// is relayed by the AP, but enters at the sender's).
    fn queue_of(&self, from: u16, _to: u16) -> u16 {
        from
    }
    fn queue_bytes(&self, queue: u16) -> DataSize {
        Self::queue_bytes(self, wifi::Port(queue))
    }
    fn host_release(&self) -> HostRelease {
        HostRelease::Delivered
    }
}

impl<P: NetPacket> Element<P> for lte::Cell<P> {
    #[inline]
    fn push(&mut self, now: Instant, from: u16, to: u16, pkt: P) -> Result<(), (P, DropReason)> {
        Self::push(self, now, lte::Port(from), lte::Port(to), pkt)
    }
    #[inline]
    fn poll_timeout(&self) -> Option<Instant> {
        Self::poll_timeout(self)
    }
    #[inline]
    fn on_timeout(&mut self, now: Instant) {
        Self::on_timeout(self, now)
    }
    #[inline]
    fn poll_output(&mut self, now: Instant) -> Option<(Instant, P)> {
        Self::poll_output(self, now).map(|(t, _, pkt)| (t, pkt))
    }
    #[inline]
    fn poll_drop(&mut self) -> Option<(u16, P, DropReason)> {
        self.poll_drop_buffer()
    }
    fn queues(&self) -> u16 {
        self.buffers() as u16
    }
    fn queue_of(&self, from: u16, to: u16) -> u16 {
        self.buffer(lte::Port(from), lte::Port(to))
    }
    fn queue_bytes(&self, queue: u16) -> DataSize {
        let ue = lte::Port(queue / 2 + 1);
        let dir = if queue.is_multiple_of(2) { lte::Direction::Downlink } else { lte::Direction::Uplink };
        Self::queue_bytes(self, ue, dir)
    }
    fn host_release(&self) -> HostRelease {
        HostRelease::Accepted
    }
}

/// Any element a driver holds: the built-in kinds by value (a match per call, which the compiler
/// inlines), anything else behind the trait.
// A link is held by value, as the simulator held its links before there was a trait: a box
// would put a pointer chase on the path every packet takes, for the few radio elements' sake.
#[allow(clippy::large_enum_variant)]
pub enum AnyElement<P> {
    Link(Link<P>),
    Bss(Box<wifi::Bss<P>>),
    Cell(Box<lte::Cell<P>>),
    /// An element of a kind this crate does not know.
    Other(Box<dyn Element<P> + Send>),
}

impl<P> AnyElement<P> {
    /// The link, if this element is one.
    pub fn as_link(&self) -> Option<&Link<P>> {
        match self {
            Self::Link(l) => Some(l),
            _ => None,
        }
    }
}

/// Calls `$call` with `$x` bound to whichever element `$e` (a `&mut AnyElement`) holds.
macro_rules! each_mut {
    ($e:expr, $x:ident => $call:expr) => {
        match $e {
            AnyElement::Link($x) => $call,
            AnyElement::Bss(b) => {
                let $x = &mut **b;
                $call
            }
            AnyElement::Cell(c) => {
                let $x = &mut **c;
                $call
            }
            AnyElement::Other(o) => {
                let $x = &mut **o;
                $call
            }
        }
    };
}

/// [`each_mut`] for a `&AnyElement`.
macro_rules! each_ref {
    ($e:expr, $x:ident => $call:expr) => {
        match $e {
            AnyElement::Link($x) => $call,
            AnyElement::Bss(b) => {
                let $x = &**b;
                $call
            }
            AnyElement::Cell(c) => {
                let $x = &**c;
                $call
            }
            AnyElement::Other(o) => {
                let $x = &**o;
                $call
            }
        }
    };
}

impl<P: NetPacket> Element<P> for AnyElement<P> {
    #[inline]
    fn push(&mut self, now: Instant, from: u16, to: u16, pkt: P) -> Result<(), (P, DropReason)> {
        each_mut!(self, e => Element::push(e, now, from, to, pkt))
    }
    #[inline]
    fn poll_timeout(&self) -> Option<Instant> {
        each_ref!(self, e => Element::poll_timeout(e))
    }
    #[inline]
    fn on_timeout(&mut self, now: Instant) {
        each_mut!(self, e => Element::on_timeout(e, now))
    }
    #[inline]
    fn poll_output(&mut self, now: Instant) -> Option<(Instant, P)> {
        each_mut!(self, e => Element::poll_output(e, now))
    }
    #[inline]
    fn poll_drop(&mut self) -> Option<(u16, P, DropReason)> {
        each_mut!(self, e => Element::poll_drop(e))
    }
    #[inline]
    fn poll_serialised(&mut self) -> Option<(FlowKey, DataSize)> {
        each_mut!(self, e => Element::poll_serialised(e))
    }
    fn queues(&self) -> u16 {
        each_ref!(self, e => Element::queues(e))
    }
    fn queue_of(&self, from: u16, to: u16) -> u16 {
        each_ref!(self, e => Element::queue_of(e, from, to))
    }
    fn queue_bytes(&self, queue: u16) -> DataSize {
        each_ref!(self, e => Element::queue_bytes(e, queue))
    }
    fn host_release(&self) -> HostRelease {
        each_ref!(self, e => Element::host_release(e))
    }
}
