//! A run's Wi-Fi access networks: the BSS elements a scenario's `[[wifi]]` entries build
//! (`rtcbench_net::radio::wifi`, `docs/wifi.md`), the ids their nodes' transmit queues have
//! among the run's links (`meta.links`, the packets table's drop location, the links table), and
//! their MAC counters sampled into the links table.
//!
//! A BSS is one element with a port per node; a route crosses it as one hop from one port to
//! another (`scenario::Hop::Wifi`). Each node's queues (all its access categories, and at the AP
//! every station's) are where its packets wait and are dropped, so they are what the trace calls
//! a link: `<bss>:<node>`, after the scenario's own links.

use rtcbench_net::radio::sample::BssSampler;
use rtcbench_net::radio::wifi::Bss;
use rtcbench_net::rng::rng_for;
use rtcbench_units::Instant;

use crate::packet::{LinkId, Packet};
use crate::trace::LinkTable;
use rtcbench_scenario::run::bss_rng_path;
use rtcbench_scenario::wifi::bss_config;
use rtcbench_scenario::{ScenarioError, WifiSpec};

/// What the trace needs of a run's BSSes (the elements themselves are the world's).
pub(crate) struct WifiNet {
    /// Per BSS, the link id of its AP's queues; port p's are `first_queue + p`.
    first_queue: Vec<LinkId>,
    /// Per BSS, its counters at the last sample.
    samplers: Vec<BssSampler>,
}

impl WifiNet {
    /// The BSSes of `wifi`, their queues numbered from `first_link` on.
    pub(crate) fn new(
        wifi: &[WifiSpec],
        seed: u64,
        first_link: usize,
        origin: &str,
    ) -> Result<(Self, Vec<Bss<Packet>>), ScenarioError> {
        let mut bsses = Vec::with_capacity(wifi.len());
        let mut first_queue = Vec::with_capacity(wifi.len());
        let mut next = first_link;
        for w in wifi {
            let bss = Bss::new(bss_config(w), rng_for(seed, &bss_rng_path(&w.name)))
                .map_err(|e| ScenarioError::new(origin, Some(format!("wifi.{}", w.name)), e.to_string()))?;
            first_queue.push(next as LinkId);
            next += w.stations.len() + 1;
            bsses.push(bss);
        }
        let samplers = bsses.iter().map(BssSampler::new).collect();
        Ok((Self { first_queue, samplers }, bsses))
    }

    /// One row per node of every BSS in the links table: its queues and its MAC counters since
    /// the last sample.
    pub(crate) fn sample(&mut self, now: Instant, bsses: &[Bss<Packet>], links: &mut LinkTable) {
        for ((bss, sampler), &first) in bsses.iter().zip(&mut self.samplers).zip(&self.first_queue) {
            sampler.sample(now, bss, |port, queue, mac| links.record_mac(now, first + port.0, queue, mac));
        }
    }
}
