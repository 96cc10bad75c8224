//! The relay's core, without sockets or clock: frames arrive from a node at an instant, cross the
//! elements of their route (the same [`rtcbench_net`] elements the simulator runs, seeded as it
//! seeds them, driven through the same [`Element`] trait), and leave for their destination node
//! at the instant the last element delivers them.
//! `bin/rtcbench-relay.rs` drives it from packet sockets and the monotonic clock; tests drive it
//! with byte buffers.
//!
//! Time is the scenario's: microseconds since the run's start. The relay keeps its own notion of
//! "now" (the latest instant it has processed) and never lets it go back: a frame whose kernel
//! timestamp is older than what the relay already processed enters at "now" (counted as
//! `late_arrivals`).
//!
//! A BSS or an LTE cell is an element like a link, built from the plan as the simulator builds
//! it: its MAC (backoff, TXOPs, A-MPDUs, retries) or its scheduler (TTIs, HARQ) runs on the
//! scenario's clock, each event at its own instant. How late the relay ran each element's events
//! against that instant is kept per element ([`Relay::element_timing`]): for a radio element,
//! the error of every backoff end, transmission start and end, and TTI.
//!
//! A link whose capacity changes are made by UDP background traffic (RFC 8867 §4.2) gets that
//! traffic here, from the simulator's own constant-bit-rate source: IPv4/UDP packets from
//! 10.255.0.1 to 10.255.0.2 (addresses no host has), which cross that one link and are dropped at
//! its far end, as the simulator sinks them.

use std::collections::{HashMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddrV4};

use rtcbench_net::cbr::CbrSource;
use rtcbench_net::link::Link;
use rtcbench_net::queue::{DualPi2Sample, DualPi2Sampler};
use rtcbench_net::radio::lte::{Cell, Direction};
use rtcbench_net::radio::sample::{BssSampler, CellSampler, MacSample, RadioSample};
use rtcbench_net::radio::wifi::Bss;
use rtcbench_net::rng::rng_for;
use rtcbench_net::{AnyElement, DropReason, Element, ElementHop, FlowKey, IpFrame, NetPacket};
use rtcbench_units::{Bitrate, DataSize, Duration, Instant};
use rtcbench_wire::ip::ipv4_udp_datagram;
use rtcbench_wire::Ecn;
use serde::Serialize;

use crate::config::RelayConfig;
use crate::stats::{Lateness, LatenessSummary};
use rtcbench_scenario::elements::{link_rng_path, NetworkPlan};
use rtcbench_scenario::run::{bss_rng_path, cell_rng_path};

/// A frame on its way: which route it follows and which link of it carries it now.
#[derive(Debug)]
pub struct InFlight {
    /// The frame's number in the run: frames from hosts and background packets are numbered
    /// together, in the order they reached the relay, from 0.
    pub id: u64,
    pub frame: IpFrame,
    route: u32,
    hop: u32,
    /// The interface it leaves by at the end of its route; `None` for background traffic.
    to: Option<usize>,
    /// When it reached the relay.
    pub arrived: Instant,
}

impl NetPacket for InFlight {
    fn size(&self) -> DataSize {
        self.frame.size()
    }
    fn flow_key(&self) -> FlowKey {
        self.frame.flow_key()
    }
    fn ecn(&self) -> Ecn {
        self.frame.ecn()
    }
    fn set_ecn(&mut self, ecn: Ecn) {
        self.frame.set_ecn(ecn);
    }
    fn dscp(&self) -> u8 {
        self.frame.dscp()
    }
}

/// A frame due at its destination.
#[derive(Debug)]
pub struct Departure {
    pub id: u64,
    /// When the route's last link delivers it: the instant it must leave the relay.
    pub due: Instant,
    /// Index of the destination's interface.
    pub to: usize,
    pub frame: IpFrame,
    pub arrived: Instant,
}

/// A frame an element dropped.
#[derive(Debug)]
pub struct Dropped {
    pub id: u64,
    pub at: Instant,
    /// The queue that held it, numbered as the trace's links are (a link's is its index).
    pub link: usize,
    pub reason: DropReason,
    pub frame: IpFrame,
    pub arrived: Instant,
}

/// Frames the relay did not carry, by cause.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Refused {
    /// Not an IPv4 packet (ARP, IPv6; the testbed turns both off).
    pub not_ipv4: u64,
    /// For an address no host of the testbed has (the net namespace's own gateway addresses
    /// among them: its kernel answers those, outside the emulated path).
    pub no_host: u64,
    /// Between nodes that no chain of links joins, or to the node it came from.
    pub no_route: u64,
}

/// Per-element counts for the report (a link's, a BSS's or a cell's).
#[derive(Clone, Debug, Default, Serialize)]
pub struct LinkCounts {
    pub name: String,
    /// "link", "wifi", "lte" or "other" (an element of the caller's own).
    pub kind: &'static str,
    pub packets_in: u64,
    pub bytes_in: u64,
    pub packets_out: u64,
    pub bytes_out: u64,
    pub dropped: HashMap<&'static str, u64>,
    /// Of `packets_in`, the UDP background packets the relay generated.
    pub background_in: u64,
}

/// A link's UDP background traffic: when its packets leave, what they are, the route of that one
/// link.
struct Background {
    source: CbrSource,
    frame: IpFrame,
    route: u32,
    link: usize,
    /// The traffic's rate from each instant on: the link's capacity less this is what the scenario
    /// leaves to its flows.
    steps: Vec<(Instant, Bitrate)>,
}

impl Background {
    fn rate_at(&self, t: Instant) -> Bitrate {
        self.steps.iter().take_while(|(at, _)| *at <= t).last().map_or(Bitrate::ZERO, |s| s.1)
    }

    fn next_step_after(&self, t: Instant) -> Option<Instant> {
        self.steps.iter().map(|s| s.0).find(|&at| at > t)
    }
}

/// What happened to a background packet: it entered its link at `sent`, and left it at
/// `delivered` (dropped at the far end, as the simulator sinks it) unless the link dropped it.
#[derive(Debug)]
pub struct BackgroundEvent {
    pub id: u64,
    pub link: usize,
    pub at: Instant,
    pub delivered: bool,
    pub size: DataSize,
}

/// A link's state at an instant, as the simulator samples it for `links.parquet`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkSample {
    pub at: Instant,
    pub link: usize,
    /// The capacity in force (for a link with UDP background traffic, what it leaves to the
    /// flows); `None` = unlimited.
    pub capacity: Option<Bitrate>,
    pub queue: DataSize,
    pub queue_limit: Option<DataSize>,
    /// A Wi-Fi node's MAC or an LTE buffer's scheduling since the previous sample.
    pub radio: Option<RadioColumns>,
    /// A link with a DualPI2 queue: its state, and its marks and drops since the previous sample
    /// (counted as the simulator counts them).
    pub dualpi2: Option<DualPi2Sample>,
}

/// The links table's radio columns of one sample (`docs/traces.md`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RadioColumns {
    Wifi(MacSample),
    Lte(RadioSample),
}

/// How late the relay ran one element's events against their instants (`Relay::element_timing`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ElementTiming {
    pub name: String,
    pub kind: &'static str,
    /// Events run, and their lateness (µs; `departures` counts the events).
    pub lateness: LatenessSummary,
}

/// Per element, what its samples are taken against.
enum Sampler {
    Plain,
    /// A link: its DualPI2 queue's counters at the previous sample, if it has one.
    Link(DualPi2Sampler),
    Wifi(BssSampler),
    Lte(CellSampler),
}

/// Lateness bins per element: 10 ms of 1 µs bins (beyond, only the maximum is kept).
const ELEMENT_LATENESS_BINS_US: usize = 10_000;

/// Link state is sampled this often, and at every capacity change, as the simulator samples it
/// (`rtcbench_sim::LINK_SAMPLE_INTERVAL`).
pub const LINK_SAMPLE_INTERVAL: Duration = Duration::from_millis(10);

/// An element of the caller's own, in place of the plan's link of that name (the element trait
/// is all it needs).
pub type ElementOverride = (String, Box<dyn Element<InFlight> + Send>);

/// The scenario's network between the testbed's interfaces.
pub struct Relay {
    elements: Vec<AnyElement<InFlight>>,
    /// Per element, the trace's link id of its first queue.
    first_queue: Vec<usize>,
    samplers: Vec<Sampler>,
    /// Per element, how late its events ran: against the driver's clock ([`Relay::set_clock`]),
    /// or against the instant the relay advanced to if it has none.
    event_lateness: Vec<Lateness>,
    clock: Instant,
    background: Vec<Background>,
    /// Per route id, its hops in order.
    routes: Vec<Vec<ElementHop>>,
    /// (source interface, destination interface) → route id.
    route_of: HashMap<(usize, usize), u32>,
    /// Host address → its interface.
    hosts: HashMap<Ipv4Addr, usize>,
    now: Instant,
    departures: VecDeque<Departure>,
    dropped: VecDeque<Dropped>,
    background_events: VecDeque<BackgroundEvent>,
    samples: VecDeque<LinkSample>,
    /// The next link sample, while the relay samples (`Relay::sample_links`).
    next_sample: Option<Instant>,
    end: Instant,
    next_id: u64,
    pub counts: Vec<LinkCounts>,
    pub refused: Refused,
    /// Frames whose arrival instant the relay had already passed (they enter at "now").
    pub late_arrivals: u64,
}

impl Relay {
    /// Builds the plan's links and maps its routes onto the interfaces. Errors name what in the
    /// configuration does not fit together.
    pub fn new(cfg: &RelayConfig) -> Result<Self, String> {
        Self::with_elements(cfg, Vec::new())
    }

    /// [`Relay::new`], with elements of the caller's own in place of the plan's links of the same
    /// names (each with one queue, as the link it stands for).
    pub fn with_elements(cfg: &RelayConfig, mut replace: Vec<ElementOverride>) -> Result<Self, String> {
        let plan: &NetworkPlan = &cfg.plan;
        let iface_of = |node: &str| {
            cfg.interfaces
                .iter()
                .position(|i| i.node == node)
                .ok_or_else(|| format!("node {node} of the plan has no interface"))
        };
        for i in &cfg.interfaces {
            if !plan.nodes.contains(&i.node) {
                return Err(format!(
                    "interface {} is for node {}, which the plan does not have",
                    i.name, i.node
                ));
            }
        }
        let mut routes = Vec::new();
        let mut route_of = HashMap::new();
        // Ports per element: a link's two ends, a BSS's AP and stations, a cell's eNB and UEs.
        let ports: Vec<usize> = (plan.links.iter().map(|_| 2))
            .chain(plan.bsses.iter().map(|b| b.stations.len() + 1))
            .chain(plan.cells.iter().map(|c| c.ues.len() + 1))
            .collect();
        for r in &plan.routes {
            let fits = |h: &ElementHop| {
                ports
                    .get(h.element as usize)
                    .is_some_and(|&n| usize::from(h.from.max(h.to)) < n && h.from != h.to)
            };
            if r.hops.is_empty() || !r.hops.iter().all(fits) {
                let hops: Vec<String> = r
                    .hops
                    .iter()
                    .map(|h| format!("element {} port {} → {}", h.element, h.from, h.to))
                    .collect();
                return Err(format!(
                    "route {} → {}: [{}] are not elements and ports of the plan",
                    r.from,
                    r.to,
                    hops.join(", ")
                ));
            }
            route_of.insert((iface_of(&r.from)?, iface_of(&r.to)?), routes.len() as u32);
            routes.push(r.hops.clone());
        }
        let mut background = Vec::new();
        for b in &plan.background {
            if b.link >= plan.links.len()
                || b.steps_us.first().is_none_or(|s| s.0 != 0)
                || b.packet_size.as_bytes() < 28
            {
                return Err(format!("background traffic on link {}: not a link of the plan, or steps not from 0, or packets under 28 bytes", b.link));
            }
            let at = |us: i64| Instant::ZERO + Duration::from_micros(us);
            let steps: Vec<_> = b.steps_us.iter().map(|&(us, rate)| (at(us), rate)).collect();
            let end = Instant::ZERO + plan.duration;
            let src = SocketAddrV4::new(Ipv4Addr::new(10, 255, 0, 1), 49152 + b.link as u16);
            let dst = SocketAddrV4::new(Ipv4Addr::new(10, 255, 0, 2), 9);
            let size = b.packet_size.as_bytes() as usize;
            let bytes =
                ipv4_udp_datagram(src, dst, Ecn::NotEct, &[], size - 28).map_err(|e| e.to_string())?;
            background.push(Background {
                source: CbrSource::scheduled(steps.clone(), b.packet_size, end),
                frame: IpFrame::new(bytes),
                route: routes.len() as u32,
                link: b.link,
                steps,
            });
            routes.push(vec![ElementHop::link(b.link as u32)]);
        }
        let mut elements = Vec::with_capacity(plan.links.len());
        for l in &plan.links {
            if let Some(i) = replace.iter().position(|(name, _)| *name == l.name) {
                let element = replace.swap_remove(i).1;
                if element.queues() != 1 {
                    return Err(format!("the element in place of link {} must have one queue", l.name));
                }
                elements.push(AnyElement::Other(element));
                continue;
            }
            let rng = |what: &str| rng_for(plan.seed, &link_rng_path(&l.name, what));
            elements.push(AnyElement::Link(Link::new(l.clone(), rng("loss"), rng("jitter"), rng("queue"))));
        }
        if let Some((name, _)) = replace.first() {
            return Err(format!("no link named {name} to put an element in place of"));
        }
        let mut samplers: Vec<Sampler> = elements
            .iter()
            .map(|e| {
                if e.as_link().is_some() {
                    Sampler::Link(DualPi2Sampler::default())
                } else {
                    Sampler::Plain
                }
            })
            .collect();
        let mut kinds: Vec<&'static str> =
            elements.iter().map(|e| if e.as_link().is_some() { "link" } else { "other" }).collect();
        let mut names: Vec<String> = plan.links.iter().map(|l| l.name.clone()).collect();
        for b in &plan.bsses {
            let bss = Bss::new(b.clone(), rng_for(plan.seed, &bss_rng_path(&b.name)))
                .map_err(|e| format!("wifi.{}: {e}", b.name))?;
            samplers.push(Sampler::Wifi(BssSampler::new(&bss)));
            elements.push(AnyElement::Bss(Box::new(bss)));
            kinds.push("wifi");
            names.push(b.name.clone());
        }
        for c in &plan.cells {
            let cell = Cell::new(c.clone(), rng_for(plan.seed, &cell_rng_path(&c.name)))
                .map_err(|e| format!("lte.{}: {e}", c.name))?;
            samplers.push(Sampler::Lte(CellSampler::new(&cell)));
            elements.push(AnyElement::Cell(Box::new(cell)));
            kinds.push("lte");
            names.push(c.name.clone());
        }
        let mut first_queue = Vec::with_capacity(elements.len());
        let mut next = 0;
        for e in &elements {
            first_queue.push(next);
            next += usize::from(e.queues());
        }
        if next != plan.queues.len() {
            return Err(format!("the plan names {} queues, its elements have {next}", plan.queues.len()));
        }
        let counts = names
            .into_iter()
            .zip(&kinds)
            .map(|(name, &kind)| LinkCounts { name, kind, ..Default::default() })
            .collect();
        let event_lateness = elements.iter().map(|_| Lateness::with_bins(ELEMENT_LATENESS_BINS_US)).collect();
        let hosts = cfg.interfaces.iter().enumerate().map(|(k, i)| (i.host_ip, k)).collect();
        Ok(Self {
            elements,
            first_queue,
            samplers,
            event_lateness,
            clock: Instant::ZERO,
            background,
            routes,
            route_of,
            hosts,
            now: Instant::ZERO,
            departures: VecDeque::new(),
            dropped: VecDeque::new(),
            background_events: VecDeque::new(),
            samples: VecDeque::new(),
            next_sample: None,
            end: Instant::ZERO + plan.duration,
            next_id: 0,
            counts,
            refused: Refused::default(),
            late_arrivals: 0,
        })
    }

    /// The latest instant processed.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The driver's clock reads `now` (the scenario's time): an element event run from here on
    /// counts as late by `now` less its instant, until the next reading.
    pub fn set_clock(&mut self, now: Instant) {
        self.clock = now;
    }

    /// Per element, in plan order (links, BSSes, cells), how late its events ran.
    pub fn element_timing(&self) -> Vec<ElementTiming> {
        self.counts
            .iter()
            .zip(&self.event_lateness)
            .map(|(c, l)| ElementTiming { name: c.name.clone(), kind: c.kind, lateness: l.summary() })
            .collect()
    }

    /// From now on, records every link's state every [`LINK_SAMPLE_INTERVAL`] and at every
    /// capacity change up to the end of the run, from time zero ([`Relay::poll_sample`]).
    pub fn sample_links(&mut self) {
        self.next_sample = Some(Instant::ZERO);
    }

    /// The id the next frame to arrive (or background packet) gets.
    fn take_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id - 1
    }

    /// A frame read from interface `from` at `at`: onto the first link of its route, or refused.
    /// Returns the id it got (a refused frame gets one too), and the instant it entered.
    pub fn arrive(&mut self, at: Instant, from: usize, bytes: Vec<u8>) -> (u64, Instant) {
        let at = if at < self.now {
            self.late_arrivals += 1;
            self.now
        } else {
            at
        };
        self.advance(at);
        let id = self.take_id();
        let Some(dst) = ipv4_destination(&bytes) else {
            self.refused.not_ipv4 += 1;
            return (id, at);
        };
        let Some(&to) = self.hosts.get(&dst) else {
            self.refused.no_host += 1;
            return (id, at);
        };
        let Some(&route) = self.route_of.get(&(from, to)) else {
            self.refused.no_route += 1;
            return (id, at);
        };
        let pkt = InFlight { id, frame: IpFrame::new(bytes), route, hop: 0, to: Some(to), arrived: at };
        self.enter(at, pkt);
        (id, at)
    }

    /// Processes every element's events up to `t`, in time order, so a frame leaving one element
    /// enters the next at the instant it left.
    pub fn advance(&mut self, t: Instant) {
        loop {
            let link =
                self.elements.iter().enumerate().filter_map(|(k, e)| Some((e.poll_timeout()?, k))).min();
            let source = self
                .background
                .iter()
                .enumerate()
                .filter_map(|(k, b)| Some((b.source.poll_timeout()?, k)))
                .min();
            // A sample sees the links as they are once every event before it ran.
            let first = [link.map(|l| l.0), source.map(|s| s.0)].into_iter().flatten().min();
            if let Some(due) = self.next_sample.filter(|&d| d <= t && first.is_none_or(|f| d < f)) {
                self.now = self.now.max(due);
                self.sample(due);
                continue;
            }
            match (link, source) {
                // A background packet first when both are due at once: it was sent before the
                // link's event runs, as the simulator's heap orders a source before a link it
                // woke later.
                (_, Some((due, k))) if due <= t && link.is_none_or(|(l, _)| due <= l) => {
                    self.now = self.now.max(due);
                    let b = &mut self.background[k];
                    if b.source.on_timeout(due) {
                        let (frame, route, link) = (b.frame.clone(), b.route, b.link);
                        let id = self.take_id();
                        let size = frame.size();
                        let pkt = InFlight { id, frame, route, hop: 0, to: None, arrived: due };
                        self.counts[link].background_in += 1;
                        self.background_events.push_back(BackgroundEvent {
                            id,
                            link,
                            at: due,
                            delivered: false,
                            size,
                        });
                        self.enter(due, pkt);
                    }
                }
                (Some((due, k)), _) if due <= t => {
                    self.now = self.now.max(due);
                    let ran = self.clock.max(t);
                    self.event_lateness[k].record(i128::from((ran - due).as_micros()) * 1000);
                    self.elements[k].on_timeout(due);
                    self.drain(k, due);
                }
                _ => break,
            }
        }
        self.now = self.now.max(t);
    }

    /// The earliest instant an element or a background source has something to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let elements = self.elements.iter().filter_map(|e| e.poll_timeout());
        elements.chain(self.background.iter().filter_map(|b| b.source.poll_timeout())).min()
    }

    pub fn poll_departure(&mut self) -> Option<Departure> {
        self.departures.pop_front()
    }

    pub fn poll_dropped(&mut self) -> Option<Dropped> {
        self.dropped.pop_front()
    }

    /// Background packets sent (`delivered` false) and delivered, in time order.
    pub fn poll_background(&mut self) -> Option<BackgroundEvent> {
        self.background_events.pop_front()
    }

    pub fn poll_sample(&mut self) -> Option<LinkSample> {
        self.samples.pop_front()
    }

    /// Records every link's state at `t` and schedules the next sample: the interval on, or the
    /// next capacity change if sooner, up to the end of the run (as the simulator samples). A BSS
    /// gives a row per node and a cell two per UE, with their radio columns; an element of the
    /// caller's own reports its queues' bytes.
    fn sample(&mut self, t: Instant) {
        let mut next = t + LINK_SAMPLE_INTERVAL;
        let samples = &mut self.samples;
        for (k, (element, sampler)) in self.elements.iter_mut().zip(&mut self.samplers).enumerate() {
            let first = self.first_queue[k];
            let row = |link: usize, queue: DataSize, radio: Option<RadioColumns>| LinkSample {
                at: t,
                link,
                capacity: None,
                queue,
                queue_limit: None,
                radio,
                dualpi2: None,
            };
            match (element, sampler) {
                (AnyElement::Link(link), sampler) => {
                    let background = self.background.iter().find(|b| b.link == k);
                    let mut capacity = link.capacity_at(t);
                    if let Some(b) = background {
                        capacity = capacity.map(|c| c.saturating_sub(b.rate_at(t)));
                        if let Some(c) = b.next_step_after(t) {
                            next = next.min(c);
                        }
                    }
                    if let Some(c) = link.config().capacity.next_change_after(t) {
                        next = next.min(c);
                    }
                    let dualpi2 = match (link.dualpi2_state(), sampler) {
                        (Some(state), Sampler::Link(counter)) => Some(counter.sample(state)),
                        _ => None,
                    };
                    samples.push_back(LinkSample {
                        capacity,
                        queue_limit: link.queue_limit_at(t),
                        dualpi2,
                        ..row(k, link.queue_bytes(), None)
                    });
                }
                (AnyElement::Bss(bss), Sampler::Wifi(sampler)) => {
                    sampler.sample(t, bss, |port, queue, mac| {
                        samples.push_back(row(
                            first + usize::from(port.0),
                            queue,
                            Some(RadioColumns::Wifi(mac)),
                        ));
                    });
                }
                (AnyElement::Cell(cell), Sampler::Lte(sampler)) => {
                    sampler.sample(t, cell, |ue, dir, queue, radio| {
                        let id = first + 2 * usize::from(ue.0 - 1) + usize::from(dir == Direction::Uplink);
                        samples.push_back(row(id, queue, Some(RadioColumns::Lte(radio))));
                    });
                }
                (element, _) => {
                    for q in 0..element.queues() {
                        samples.push_back(row(first + usize::from(q), element.queue_bytes(q), None));
                    }
                }
            }
        }
        self.next_sample = (t < self.end).then_some(next.min(self.end));
    }

    fn enter(&mut self, at: Instant, pkt: InFlight) {
        let hop = self.routes[pkt.route as usize][pkt.hop as usize];
        let k = hop.element as usize;
        let c = &mut self.counts[k];
        c.packets_in += 1;
        c.bytes_in += pkt.size().as_bytes();
        let element = &mut self.elements[k];
        // The element may be due for work before this arrival (a frame from the previous one at
        // the same instant): the arrival finds it as it is by then.
        if element.poll_timeout().is_some_and(|d| d <= at) {
            element.on_timeout(at);
        }
        if let Err((pkt, reason)) = element.push(at, hop.from, hop.to, pkt) {
            let queue = self.elements[k].queue_of(hop.from, hop.to);
            self.drop_packet(at, k, queue, pkt, reason);
        }
        // An element with nothing to wait for (a link without capacity limit or delay) delivers
        // at once.
        let element = &mut self.elements[k];
        if element.poll_timeout().is_some_and(|d| d <= at) {
            element.on_timeout(at);
        }
        self.drain(k, at);
    }

    fn drain(&mut self, k: usize, now: Instant) {
        while let Some((queue, pkt, reason)) = self.elements[k].poll_drop() {
            self.drop_packet(now, k, queue, pkt, reason);
        }
        while let Some((at, mut pkt)) = self.elements[k].poll_output(now) {
            let c = &mut self.counts[k];
            c.packets_out += 1;
            c.bytes_out += pkt.size().as_bytes();
            let route = &self.routes[pkt.route as usize];
            if (pkt.hop as usize) + 1 < route.len() {
                pkt.hop += 1;
                self.enter(at, pkt);
            } else if let Some(to) = pkt.to {
                self.departures.push_back(Departure {
                    id: pkt.id,
                    due: at,
                    to,
                    frame: pkt.frame,
                    arrived: pkt.arrived,
                });
            } else {
                self.background_events.push_back(BackgroundEvent {
                    id: pkt.id,
                    link: k,
                    at,
                    delivered: true,
                    size: pkt.size(),
                });
            }
        }
    }

    /// Element `k` dropped `pkt` from its queue `queue`.
    fn drop_packet(&mut self, at: Instant, k: usize, queue: u16, pkt: InFlight, reason: DropReason) {
        *self.counts[k].dropped.entry(reason.as_str()).or_default() += 1;
        self.dropped.push_back(Dropped {
            id: pkt.id,
            at,
            link: self.first_queue[k] + usize::from(queue),
            reason,
            frame: pkt.frame,
            arrived: pkt.arrived,
        });
    }
}

/// The destination of an IPv4 packet (version 4, a full header).
pub fn ipv4_destination(bytes: &[u8]) -> Option<Ipv4Addr> {
    let ihl = usize::from(bytes.first()? & 0x0f) * 4;
    (bytes[0] >> 4 == 4 && ihl >= 20 && bytes.len() >= ihl)
        .then(|| Ipv4Addr::new(bytes[16], bytes[17], bytes[18], bytes[19]))
}
