//! A run's LTE cells: the cell elements a scenario's `[[lte]]` entries build
//! (`rtcbench_net::radio::lte`, `docs/lte.md`), the ids their UEs' buffers have among the run's
//! links (`meta.links`, the packets table's drop location, the links table), and their
//! scheduling counters sampled into the links table.
//!
//! A cell is one element with a port per node; a route crosses it as one hop from a UE to the
//! eNB or back (`scenario::Hop::Lte`). Each UE has two buffers, the eNB's for its downlink and
//! its own for its uplink: `<cell>:<ue>:dl` and `<cell>:<ue>:ul` in the trace, after the
//! scenario's links and the BSSes' queues.

use rtcbench_net::radio::lte::{Cell, DirStats, Direction, Port};
use rtcbench_net::rng::rng_for;
use rtcbench_units::{Bitrate, Instant};

use crate::packet::{LinkId, Packet};
use crate::trace::{LinkTable, RadioSample};
use rtcbench_scenario::lte::cell_config;
use rtcbench_scenario::run::cell_rng_path;
use rtcbench_scenario::{LteSpec, ScenarioError};

/// What the trace needs of a run's cells (the elements themselves are the world's).
pub(crate) struct LteNet {
    /// Per cell, the link id of its first UE's downlink buffer; UE i (from 1) has
    /// `first_queue + 2 (i − 1)` downlink and the next id uplink.
    first_queue: Vec<LinkId>,
    /// Per cell, the TTIs it was done with at the last sample ([`Cell::ttis_done`]), and per UE
    /// its counters then.
    last_ttis: Vec<Option<u64>>,
    last: Vec<Vec<[DirStats; 2]>>,
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
        let last = cells.iter().map(|c| vec![[DirStats::default(); 2]; c.ues()]).collect();
        let last_ttis = vec![None; cells.len()];
        Ok((Self { first_queue, last_ttis, last }, cells))
    }

    /// Two rows per UE of every cell in the links table, its downlink and its uplink buffer:
    /// bytes waiting, the head packet's age, and what the scheduler gave it since the last
    /// sample.
    /// Rates and shares are over the TTIs the cell ran since the last sample, not the time
    /// elapsed, so that a TTI starting at a sample instant counts in exactly one sample.
    pub(crate) fn sample(&mut self, now: Instant, cells: &mut [Cell<Packet>], links: &mut LinkTable) {
        for (c, cell) in cells.iter_mut().enumerate() {
            let first = self.first_queue[c];
            let done = cell.ttis_done(now);
            let ttis = self.last_ttis[c].replace(done).map(|before| done - before).filter(|&n| n > 0);
            for k in 0..cell.ues() {
                let ue = Port::ue(k as u16 + 1);
                let stats = cell.stats(ue);
                for (d, (dir, now_stats)) in
                    [(Direction::Downlink, stats.dl), (Direction::Uplink, stats.ul)].into_iter().enumerate()
                {
                    let before = std::mem::replace(&mut self.last[c][k][d], now_stats);
                    let prb = match dir {
                        Direction::Downlink => cell.dl_prb(),
                        Direction::Uplink => cell.ul_prb(),
                    };
                    let (cqi, full_band_rate) = cell.full_band_rate(now, ue, dir);
                    let sample = RadioSample {
                        rb_share: ttis.map(|n| {
                            let rb_ttis = (now_stats.rb_ttis - before.rb_ttis) as f64;
                            rb_ttis / (f64::from(prb) * n as f64)
                        }),
                        scheduled: ttis.map(|n| {
                            let bytes = (now_stats.new_tb_bytes - before.new_tb_bytes).as_bytes();
                            // A TTI is 1 ms.
                            Bitrate::from_bps_f64(bytes as f64 * 8.0 * 1000.0 / n as f64)
                        }),
                        retransmissions: now_stats.harq_retransmissions - before.harq_retransmissions,
                        failures: now_stats.harq_failures - before.harq_failures,
                        queue_drops: (now_stats.queue_full_drops + now_stats.discard_drops)
                            - (before.queue_full_drops + before.discard_drops),
                        head_sojourn: cell.head_sojourn(now, ue, dir),
                        cqi,
                        full_band_rate,
                    };
                    let id = buffer_id(first, ue, dir);
                    links.record_radio(now, id, cell.queue_bytes(ue, dir), sample);
                }
            }
        }
    }
}

/// The link id of UE `ue`'s buffer of direction `dir` in a cell whose first buffer is `first`.
fn buffer_id(first: LinkId, ue: Port, dir: Direction) -> LinkId {
    first + 2 * (ue.0 - 1) + u16::from(dir == Direction::Uplink)
}
