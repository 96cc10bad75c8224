//! A run's LTE cells: the cell elements a scenario's `[[lte]]` entries build
//! (`rtcbench_net::radio::lte`, `docs/lte.md`), the ids their UEs' buffers have among the run's
//! links (`meta.links`, the packets table's drop location, the links table), and their
//! scheduling counters sampled into the links table.
//!
//! A cell is one element with a port per node; a route crosses it as one hop from a UE to the
//! eNB or back (`scenario::Hop::Lte`). Each UE has two buffers, the eNB's for its downlink and
//! its own for its uplink: `<cell>:<ue>:dl` and `<cell>:<ue>:ul` in the trace, after the
//! scenario's links and the BSSes' queues.

use rtcbench_net::radio::lte::{Cell, Direction, Port};
use rtcbench_net::radio::sample::CellSampler;
use rtcbench_net::rng::rng_for;
use rtcbench_units::Instant;

use crate::packet::{LinkId, Packet};
use crate::trace::LinkTable;
use rtcbench_scenario::lte::cell_config;
use rtcbench_scenario::run::cell_rng_path;
use rtcbench_scenario::{LteSpec, ScenarioError};

/// What the trace needs of a run's cells (the elements themselves are the world's).
pub(crate) struct LteNet {
    /// Per cell, the link id of its first UE's downlink buffer; UE i (from 1) has
    /// `first_queue + 2 (i − 1)` downlink and the next id uplink.
    first_queue: Vec<LinkId>,
    /// Per cell, its counters at the last sample.
    samplers: Vec<CellSampler>,
}

impl LteNet {
    /// The cells of `lte`, their buffers numbered from `first_link` on.
    pub(crate) fn new(
        lte: &[LteSpec],
        seed: u64,
        first_link: usize,
        origin: &str,
    ) -> Result<(Self, Vec<Cell<Packet>>), ScenarioError> {
        let mut cells = Vec::with_capacity(lte.len());
        let mut first_queue = Vec::with_capacity(lte.len());
        let mut next = first_link;
        for l in lte {
            let cell = Cell::new(cell_config(l), rng_for(seed, &cell_rng_path(&l.name)))
                .map_err(|e| ScenarioError::new(origin, Some(format!("lte.{}", l.name)), e.to_string()))?;
            first_queue.push(next as LinkId);
            next += 2 * l.ues.len();
            cells.push(cell);
        }
        let samplers = cells.iter().map(CellSampler::new).collect();
        Ok((Self { first_queue, samplers }, cells))
    }

    /// Two rows per UE of every cell in the links table, its downlink and its uplink buffer:
    /// bytes waiting, the head packet's age, and what the scheduler gave it since the last
    /// sample (`rtcbench_net::radio::sample::CellSampler`).
    pub(crate) fn sample(&mut self, now: Instant, cells: &mut [Cell<Packet>], links: &mut LinkTable) {
        for ((cell, sampler), &first) in cells.iter_mut().zip(&mut self.samplers).zip(&self.first_queue) {
            sampler.sample(now, cell, |ue, dir, queue, sample| {
                links.record_radio(now, buffer_id(first, ue, dir), queue, sample)
            });
        }
    }
}

/// The link id of UE `ue`'s buffer of direction `dir` in a cell whose first buffer is `first`.
fn buffer_id(first: LinkId, ue: Port, dir: Direction) -> LinkId {
    first + 2 * (ue.0 - 1) + u16::from(dir == Direction::Uplink)
}
