//! rtcbench's network elements as a library: a link ([`link`]: capacity schedule or delivery
//! opportunities, propagation delay, NR-RBPDV jitter, random loss), its queue disciplines
//! ([`queue`]: drop-tail, CoDel, FQ-CoDel, PIE, an L4S step marker, DualPI2), capacity traces
//! ([`link::capacity_trace`]), shared radio media ([`radio`]: an 802.11 BSS, an LTE FDD cell),
//! the seeded random streams they draw from ([`rng`]) and the constant-bit-rate source of
//! RFC 8867 §4.2's UDP background traffic ([`cbr`]).
//!
//! Elements are generic over the packet they carry ([`NetPacket`]: size, flow key, ECN), so the
//! simulator's packets and raw IP packets ([`IpFrame`]) pass through the same code, and depend on
//! nothing above `rtcbench-units` and `rtcbench-wire`: the simulator drives them from its event
//! heap, a relay from the OS's monotonic clock.
//!
//! # Driving an element
//!
//! Elements are sans-IO: they never read a clock. Time comes in as `now`, which must never go
//! back. Every kind implements one trait, [`Element`] (ports where packets enter and leave,
//! queues where they wait); a driver holds them as [`AnyElement`] and moves packets from one to
//! the next along [`ElementHop`]s, the same few calls whatever the kind. With a [`link::Link`]
//! through its own methods (the trait's are the same with ports: `push(now, 0, 1, pkt)`):
//!
//! 1. an arriving packet: [`Link::enqueue(now, pkt)`](link::Link::enqueue), which may refuse it
//!    with a [`DropReason`];
//! 2. at (or after) [`Link::poll_timeout()`](link::Link::poll_timeout):
//!    [`Link::on_timeout(now)`](link::Link::on_timeout), which serialises and delivers what is
//!    due by `now`, on the link's own schedule: a late call changes no departure time;
//! 3. after either, drain [`Link::poll_drop()`](link::Link::poll_drop) (packets a queue dropped
//!    after accepting them) and [`Link::poll_output(now)`](link::Link::poll_output) (packets at
//!    the far end, each with the instant it was due there), then wait until the next
//!    `poll_timeout()`.
//!
//! A caller whose clock may have passed `poll_timeout()` (a relay that woke late) calls
//! `on_timeout(now)` before `enqueue(now, ..)`, so the arrival finds the link as it is by then;
//! the simulator's event heap wakes every element at its deadline, so it never needs to.

pub mod cbr;
pub mod element;
pub mod frame;
pub mod link;
pub mod packet;
pub mod queue;
pub mod radio;
pub mod rng;

pub use element::{AnyElement, Element, ElementHop, HostRelease};
pub use frame::IpFrame;
pub use packet::{DropReason, FlowKey, NetPacket};
pub use rtcbench_wire::Ecn;
