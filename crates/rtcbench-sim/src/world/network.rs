//! The run's network: every element (the scenario's links, then its BSSes, then its cells)
//! behind one shape, [`rtcbench_net::Element`], how each is woken, and what the links table
//! samples of them.
//!
//! Element `e`'s queues are the trace's links `first_queue..first_queue + queues`: a link has
//! one, a BSS one per node (`wifi.rs`), a cell two per UE (`lte.rs`), so a link's id is its
//! index in the scenario, as `meta.links` numbers them.
//!
//! The elements are kept by kind, each kind in a vector of its own. An element's event matches its
//! [`Kind`] once and runs generic code for that type (`World::work`), and a single call goes
//! through [`with_element!`]: every trait method is then called on a known type and inlined, as
//! the simulator's per-kind code was before there was a trait. (One enum of elements, matched at
//! every call, cost 3 % more instructions on `rfc8867-5.1`, `benches/instructions.py`.)

use rtcbench_net::link::capacity::CapacitySchedule;
use rtcbench_net::link::Link;
use rtcbench_net::queue::DualPi2Sampler;
use rtcbench_net::radio::lte::Cell;
use rtcbench_net::radio::wifi::Bss;
use rtcbench_net::rng::rng_for;
use rtcbench_net::{Element, ElementHop, HostRelease};
use rtcbench_scenario::elements::{element_hop, link_config, link_rng_path};
use rtcbench_scenario::{Hop, Scenario, ScenarioError};
use rtcbench_units::Instant;

use super::LINK_SAMPLE_INTERVAL;
use crate::lte::LteNet;
use crate::packet::{LinkId, Packet};
use crate::trace::LinkTable;
use crate::wifi::WifiNet;

/// An element of the caller's own, in place of the scenario's link of that name (for elements
/// written outside the workspace: the element trait is all they need).
pub type ElementOverride = (String, Box<dyn Element<Packet> + Send>);

/// How an element's wake-ups are kept.
#[derive(Clone, Copy, Debug)]
pub(super) enum Drive {
    /// In the event heap, with the wake-up pending there (a link: few events each).
    Heap(Option<Instant>),
    /// In a slot of its own beside the heap (a BSS or a cell: most of a radio run's events).
    Slot(usize),
}

/// An element's kind, and its index among the elements of that kind.
#[derive(Clone, Copy, Debug)]
pub(super) enum Kind {
    Link(u32),
    Bss(u32),
    Cell(u32),
    /// An element of the caller's own ([`ElementOverride`]).
    Other(u32),
}

/// What the world keeps of an element, in one record so that an event reads one entry.
#[derive(Clone, Copy, Debug)]
pub(super) struct Beside {
    pub(super) kind: Kind,
    pub(super) drive: Drive,
    /// The link id of its first queue.
    pub(super) first_queue: LinkId,
    pub(super) release: HostRelease,
}

pub(super) struct Network {
    pub(super) links: Vec<Link<Packet>>,
    pub(super) bsses: Vec<Bss<Packet>>,
    pub(super) cells: Vec<Cell<Packet>>,
    pub(super) others: Vec<Box<dyn Element<Packet> + Send>>,
    /// Per element (the scenario's links, then its BSSes, then its cells).
    pub(super) beside: Vec<Beside>,
    /// How many links the scenario has.
    n_links: usize,
    wifi: WifiNet,
    lte: LteNet,
    /// Per link, the capacity left to the flows when UDP background traffic makes it (RFC 8867
    /// §4.2); the links table reports it instead of the physical rate.
    available: Vec<Option<CapacitySchedule>>,
    /// Per link, its DualPI2 queue's counters at the previous sample: the links table counts
    /// marks and drops per sample.
    dualpi2_samplers: Vec<DualPi2Sampler>,
}

/// `with_element!(net, e, |el| expr)`: `expr` with `el` bound to `&mut` element `e` of `net`
/// (a `Network`), as its own type.
macro_rules! with_element {
    ($net:expr, $e:expr, |$el:ident| $body:expr) => {{
        let net = &mut $net;
        match net.beside[$e as usize].kind {
            Kind::Link(i) => {
                let $el = &mut net.links[i as usize];
                $body
            }
            Kind::Bss(i) => {
                let $el = &mut net.bsses[i as usize];
                $body
            }
            Kind::Cell(i) => {
                let $el = &mut net.cells[i as usize];
                $body
            }
            Kind::Other(i) => {
                let $el = &mut *net.others[i as usize];
                $body
            }
        }
    }};
}

/// `on_element!(world, e, |i, element| expr)`: `expr` with `i` element `e`'s index among its
/// kind and `element` the function that reaches it in `world.net` (`Network::link`, ...), so
/// that generic code runs for the element's own type.
macro_rules! on_element {
    ($world:expr, $e:expr, |$i:ident, $element:ident| $body:expr) => {{
        use $crate::world::network::Kind;
        match $world.net.beside[$e as usize].kind {
            Kind::Link($i) => {
                let $element = Network::link;
                $body
            }
            Kind::Bss($i) => {
                let $element = Network::bss;
                $body
            }
            Kind::Cell($i) => {
                let $element = Network::cell;
                $body
            }
            Kind::Other($i) => {
                let $element = Network::other;
                $body
            }
        }
    }};
}
pub(super) use on_element;

impl Network {
    /// The elements of scenario `s`, each seeded from `seed` and its own path; `replace` puts
    /// elements of the caller's in place of links of the same name.
    pub(super) fn new(
        s: &Scenario,
        seed: u64,
        end: Instant,
        origin: &str,
        mut replace: Vec<ElementOverride>,
    ) -> Result<Self, ScenarioError> {
        let spec = &s.spec;
        let (mut links, mut others, mut kinds) = (Vec::new(), Vec::new(), Vec::new());
        for (k, l) in spec.links.iter().enumerate() {
            if let Some(i) = replace.iter().position(|(name, _)| *name == l.name) {
                let element = replace.swap_remove(i).1;
                if element.queues() != 1 {
                    return Err(ScenarioError::new(
                        origin,
                        Some(format!("links.{}", l.name)),
                        "an element in place of a link must have one queue, as the link it stands for",
                    ));
                }
                kinds.push(Kind::Other(others.len() as u32));
                others.push(element);
                continue;
            }
            let trace = s.capacity_traces.get(k).and_then(Option::as_deref);
            kinds.push(Kind::Link(links.len() as u32));
            links.push(Link::new(
                link_config(l, trace, end),
                rng_for(seed, &link_rng_path(&l.name, "loss")),
                rng_for(seed, &link_rng_path(&l.name, "jitter")),
                rng_for(seed, &link_rng_path(&l.name, "queue")),
            ));
        }
        if let Some((name, _)) = replace.first() {
            let known: Vec<&str> = spec.links.iter().map(|l| l.name.as_str()).collect();
            return Err(ScenarioError::new(
                origin,
                Some("links".to_string()),
                format!("no link named {name:?} to put an element in place of (links: {known:?})"),
            ));
        }
        let n_links = kinds.len();
        let (wifi, bsses) = WifiNet::new(&spec.wifi, seed, n_links, origin)?;
        let first_cell_queue = n_links + bsses.iter().map(|b| b.stations() + 1).sum::<usize>();
        let (lte, cells) = LteNet::new(&spec.lte, seed, first_cell_queue, origin)?;
        kinds.extend((0..bsses.len() as u32).map(Kind::Bss));
        kinds.extend((0..cells.len() as u32).map(Kind::Cell));

        let mut net = Self {
            links,
            bsses,
            cells,
            others,
            beside: Vec::with_capacity(kinds.len()),
            n_links,
            wifi,
            lte,
            available: spec.links.iter().map(|_| None).collect(),
            dualpi2_samplers: vec![DualPi2Sampler::default(); spec.links.len()],
        };
        let mut first_queue: LinkId = 0;
        for (e, &kind) in kinds.iter().enumerate() {
            // A BSS wakes at every backoff end, PPDU end and response, a cell at every TTI with
            // work: each has a slot, in element order (slot b for BSS b, n_bss + c for cell c).
            let drive = if e < n_links { Drive::Heap(None) } else { Drive::Slot(e - n_links) };
            net.beside.push(Beside { kind, drive, first_queue, release: HostRelease::Serialised });
            let (queues, release) =
                with_element!(net, e, |el| (Element::queues(el), Element::host_release(el)));
            net.beside[e].release = release;
            first_queue += queues;
        }
        Ok(net)
    }

    /// The `i`-th link (`Kind::Link(i)`).
    pub(super) fn link(&mut self, i: u32) -> &mut Link<Packet> {
        &mut self.links[i as usize]
    }

    pub(super) fn bss(&mut self, i: u32) -> &mut Bss<Packet> {
        &mut self.bsses[i as usize]
    }

    pub(super) fn cell(&mut self, i: u32) -> &mut Cell<Packet> {
        &mut self.cells[i as usize]
    }

    pub(super) fn other(&mut self, i: u32) -> &mut (dyn Element<Packet> + Send + 'static) {
        &mut *self.others[i as usize]
    }

    /// How many elements are woken from slots of their own ([`Drive::Slot`]).
    pub(super) fn slots(&self) -> usize {
        self.beside.iter().filter(|b| matches!(b.drive, Drive::Slot(_))).count()
    }

    /// The element and ports of a scenario's hop.
    pub(super) fn step(&self, hop: Hop) -> ElementHop {
        element_hop(self.n_links, self.bsses.len(), hop)
    }

    /// The elements and ports of a scenario's route.
    pub(super) fn steps(&self, hops: &[Hop]) -> Vec<ElementHop> {
        hops.iter().map(|&h| self.step(h)).collect()
    }

    /// Link `k` reports what it serialised ([`Link::report_serialised`]), if it is a link.
    pub(super) fn report_serialised(&mut self, k: LinkId) {
        if let Kind::Link(i) = self.beside[usize::from(k)].kind {
            self.links[i as usize].report_serialised();
        }
    }

    /// UDP background traffic leaves link `k` the capacity `schedule` to the flows.
    pub(super) fn set_available(&mut self, k: LinkId, schedule: &CapacitySchedule) {
        self.available[usize::from(k)] = Some(schedule.clone());
    }

    /// Records every element's queues in the links table at `now`; returns when the next sample
    /// is due: [`LINK_SAMPLE_INTERVAL`] on, or a link's next capacity change if sooner.
    #[inline(always)]
    pub(super) fn sample(&mut self, now: Instant, table: &mut LinkTable) -> Instant {
        let mut next = now + LINK_SAMPLE_INTERVAL;
        if self.others.is_empty() {
            // Every one of the scenario's links is a link, in order.
            for k in 0..self.links.len() {
                self.sample_link(now, k, k, table, &mut next);
            }
        } else {
            for k in 0..self.n_links {
                match self.beside[k].kind {
                    Kind::Link(i) => self.sample_link(now, k, i as usize, table, &mut next),
                    // Its queue's bytes: capacity and limit are not an element's to say.
                    Kind::Other(i) => table.record(
                        now,
                        k as LinkId,
                        None,
                        self.others[i as usize].queue_bytes(0),
                        None,
                        None,
                    ),
                    Kind::Bss(_) | Kind::Cell(_) => {
                        unreachable!("the first elements are the scenario's links")
                    }
                }
            }
        }
        self.wifi.sample(now, &self.bsses, table);
        self.lte.sample(now, &mut self.cells, table);
        next
    }

    /// Link `k`'s row (`links[i]`); `next` becomes its next capacity change if that is sooner.
    #[inline(always)]
    fn sample_link(&mut self, now: Instant, k: usize, i: usize, table: &mut LinkTable, next: &mut Instant) {
        let link = &self.links[i];
        let capacity = match &self.available[k] {
            Some(free) => free.rate_at(now),
            None => link.capacity_at(now),
        };
        let changes = self.available[k].as_ref().unwrap_or(&link.config().capacity);
        if let Some(c) = changes.next_change_after(now) {
            *next = (*next).min(c);
        }
        let dualpi2 = link.dualpi2_state().map(|state| self.dualpi2_samplers[k].sample(state));
        table.record(now, k as LinkId, capacity, link.queue_bytes(), link.queue_limit_at(now), dualpi2);
    }
}
