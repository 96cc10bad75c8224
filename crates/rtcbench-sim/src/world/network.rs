//! The run's network: every element (the scenario's links, then its BSSes, then its cells)
//! behind one shape, [`rtcbench_net::Element`], how each is woken, and what the links table
//! samples of them.
//!
//! Element `e`'s queues are the trace's links `first_queue[e]..first_queue[e] + queues`: a link
//! has one, a BSS one per node (`wifi.rs`), a cell two per UE (`lte.rs`), so a link's id is its
//! index in the scenario, as `meta.links` numbers them.

use rtcbench_net::link::capacity::CapacitySchedule;
use rtcbench_net::link::Link;
use rtcbench_net::rng::rng_for;
use rtcbench_net::{AnyElement, Element, ElementHop};
use rtcbench_scenario::elements::{link_config, link_rng_path};
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

pub(super) struct Network {
    pub(super) elements: Vec<AnyElement<Packet>>,
    /// Per element, the link id of its first queue.
    pub(super) first_queue: Vec<LinkId>,
    pub(super) drive: Vec<Drive>,
    /// The scenario's links are elements `0..links`, its BSSes the next, its cells the last.
    links: usize,
    bsses: usize,
    wifi: WifiNet,
    lte: LteNet,
    /// Per link, the capacity left to the flows when UDP background traffic makes it (RFC 8867
    /// §4.2); the links table reports it instead of the physical rate.
    available: Vec<Option<CapacitySchedule>>,
}

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
        let mut elements: Vec<AnyElement<Packet>> = Vec::new();
        for (k, l) in spec.links.iter().enumerate() {
            if let Some(i) = replace.iter().position(|(name, _)| *name == l.name) {
                elements.push(AnyElement::Other(replace.swap_remove(i).1));
                continue;
            }
            let trace = s.capacity_traces.get(k).and_then(Option::as_deref);
            elements.push(AnyElement::Link(Link::new(
                link_config(l, trace, end),
                rng_for(seed, &link_rng_path(&l.name, "loss")),
                rng_for(seed, &link_rng_path(&l.name, "jitter")),
                rng_for(seed, &link_rng_path(&l.name, "queue")),
            )));
        }
        if let Some(k) = elements[..spec.links.len()].iter().position(|e| e.queues() != 1) {
            return Err(ScenarioError::new(
                origin,
                Some(format!("links.{}", spec.links[k].name)),
                "an element in place of a link must have one queue, as the link it stands for",
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
        let links = elements.len();
        let (wifi, bsses) = WifiNet::new(&spec.wifi, seed, links, links, origin)?;
        let n_bss = bsses.len();
        elements.extend(bsses.into_iter().map(|b| AnyElement::Bss(Box::new(b))));
        let first_cell_queue =
            links + elements[links..].iter().map(|e| usize::from(e.queues())).sum::<usize>();
        let (lte, cells) = LteNet::new(&spec.lte, seed, first_cell_queue, links + n_bss, origin)?;
        elements.extend(cells.into_iter().map(|c| AnyElement::Cell(Box::new(c))));

        let mut first_queue = Vec::with_capacity(elements.len());
        let mut next: LinkId = 0;
        for e in &elements {
            first_queue.push(next);
            next += e.queues();
        }
        // A BSS wakes at every backoff end, PPDU end and response, a cell at every TTI with
        // work: each has a slot, in element order (slot b for BSS b, n_bss + c for cell c).
        let drive = (0..elements.len())
            .map(|e| if e < links { Drive::Heap(None) } else { Drive::Slot(e - links) })
            .collect();
        let available = spec.links.iter().map(|_| None).collect();
        Ok(Self { elements, first_queue, drive, links, bsses: n_bss, wifi, lte, available })
    }

    /// How many elements are woken from slots of their own ([`Drive::Slot`]).
    pub(super) fn slots(&self) -> usize {
        self.drive.iter().filter(|d| matches!(d, Drive::Slot(_))).count()
    }

    /// The element and ports of a scenario's hop.
    pub(super) fn step(&self, hop: Hop) -> ElementHop {
        let (element, from, to) = match hop {
            Hop::Link(l) => return ElementHop::link(u32::from(l)),
            Hop::Wifi { bss, from, to } => (self.links + usize::from(bss), from.0, to.0),
            Hop::Lte { cell, from, to } => (self.links + self.bsses + usize::from(cell), from.0, to.0),
        };
        ElementHop { element: element as u32, from, to }
    }

    /// The elements and ports of a scenario's route.
    pub(super) fn steps(&self, hops: &[Hop]) -> Vec<ElementHop> {
        hops.iter().map(|&h| self.step(h)).collect()
    }

    /// Link `k` reports what it serialised ([`Link::report_serialised`]), if it is a link.
    pub(super) fn report_serialised(&mut self, k: LinkId) {
        if let Some(link) = self.elements[usize::from(k)].as_link_mut() {
            link.report_serialised();
        }
    }

    /// UDP background traffic leaves link `k` the capacity `schedule` to the flows.
    pub(super) fn set_available(&mut self, k: LinkId, schedule: &CapacitySchedule) {
        self.available[usize::from(k)] = Some(schedule.clone());
    }

    /// The trace link id of the queue a packet crossing `step` waits in.
    pub(super) fn queue_id(&self, step: ElementHop) -> LinkId {
        let e = step.element as usize;
        self.first_queue[e] + self.elements[e].queue_of(step.from, step.to)
    }

    /// Records every element's queues in the links table at `now`; returns when the next sample
    /// is due: [`LINK_SAMPLE_INTERVAL`] on, or a link's next capacity change if sooner.
    pub(super) fn sample(&mut self, now: Instant, table: &mut LinkTable) -> Instant {
        let mut next = now + LINK_SAMPLE_INTERVAL;
        for (k, element) in self.elements[..self.links].iter().enumerate() {
            let Some(link) = element.as_link() else {
                record_queues(now, k as LinkId, element, table);
                continue;
            };
            let capacity = match &self.available[k] {
                Some(free) => free.rate_at(now),
                None => link.capacity_at(now),
            };
            let changes = self.available[k].as_ref().unwrap_or(&link.config().capacity);
            if let Some(c) = changes.next_change_after(now) {
                next = next.min(c);
            }
            table.record(now, k as LinkId, capacity, link.queue_bytes(), link.queue_limit_at(now));
        }
        self.wifi.sample(now, &self.elements, table);
        self.lte.sample(now, &mut self.elements, table);
        next
    }
}

/// An element of the caller's own in the links table: its queues' bytes (capacity and limit are
/// not an element's to say).
fn record_queues(now: Instant, first: LinkId, element: &AnyElement<Packet>, table: &mut LinkTable) {
    for q in 0..element.queues() {
        table.record(now, first + q, None, element.queue_bytes(q), None);
    }
}
