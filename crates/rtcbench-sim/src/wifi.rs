//! A run's Wi-Fi access networks: the BSS elements a scenario's `[[wifi]]` entries build
//! (`rtcbench_net::radio::wifi`, `docs/wifi.md`), the ids their nodes' transmit queues have
//! among the run's links (`meta.links`, the packets table's drop location, the links table), and
//! their MAC counters sampled into the links table.
//!
//! A BSS is one element with a port per node; a route crosses it as one hop from one port to
//! another (`scenario::Hop::Wifi`). Each node's queues (all its access categories, and at the AP
//! every station's) are where its packets wait and are dropped, so they are what the trace calls
//! a link: `<bss>:<node>`, after the scenario's own links.

use rtcbench_net::radio::wifi::{Bss, NodeStats, Port};
use rtcbench_net::rng::rng_for;
use rtcbench_units::{Bitrate, Instant};

use crate::packet::{LinkId, Packet};
use crate::trace::{Adaptation, LinkTable, MacSample};
use rtcbench_scenario::run::bss_rng_path;
use rtcbench_scenario::wifi::bss_config;
use rtcbench_scenario::{ScenarioError, WifiSpec};

/// What the trace needs of a run's BSSes (the elements themselves are the world's).
pub(crate) struct WifiNet {
    /// Per BSS, the link id of its AP's queues; port p's are `first_queue + p`.
    first_queue: Vec<LinkId>,
    /// Per BSS and port, the counters at the last sample (and the extended attempts of a
    /// station's retry-limit adaptation), and when it was taken.
    last: Vec<Vec<NodeStats>>,
    last_extended: Vec<Vec<u64>>,
    last_sample: Option<Instant>,
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
        let last = bsses.iter().map(|b| vec![NodeStats::default(); b.stations() + 1]).collect();
        let last_extended = bsses.iter().map(|b| vec![0; b.stations() + 1]).collect();
        Ok((Self { first_queue, last, last_extended, last_sample: None }, bsses))
    }

    /// The link id of the queues of the node at `port` of BSS `bss`.
    fn queue_id(&self, bss: u16, port: Port) -> LinkId {
        self.first_queue[usize::from(bss)] + port.0
    }

    /// One row per node of every BSS in the links table: its queues and its MAC counters since
    /// the last sample.
    pub(crate) fn sample(&mut self, now: Instant, bsses: &[Bss<Packet>], links: &mut LinkTable) {
        let span = self.last_sample.map(|t| now - t);
        self.last_sample = Some(now);
        for (b, bss) in bsses.iter().enumerate() {
            for p in 0..=bss.stations() {
                let port = Port(p as u16);
                let now_stats = bss.stats(port);
                let before = std::mem::replace(&mut self.last[b][p], now_stats);
                let ppdus = now_stats.data_ppdus - before.data_ppdus;
                let mac = MacSample {
                    airtime_share: span
                        .filter(|d| !d.is_zero())
                        .map(|d| (now_stats.airtime - before.airtime).as_secs_f64() / d.as_secs_f64()),
                    retries: now_stats.mpdu_retries - before.mpdu_retries,
                    drops: (now_stats.mpdus_retry_dropped + now_stats.mpdus_lifetime_dropped)
                        - (before.mpdus_retry_dropped + before.mpdus_lifetime_dropped),
                    queue_drops: now_stats.queue_full_drops - before.queue_full_drops,
                    ampdu_mpdus: (ppdus > 0)
                        .then(|| (now_stats.mpdus_sent - before.mpdus_sent) as f64 / ppdus as f64),
                    phy_rate: (port != Port::AP).then(|| bss.phy_mode(port, Port::AP).rate()),
                    delivered: span.filter(|d| !d.is_zero()).map(|d| {
                        let bits = (now_stats.acked_bytes - before.acked_bytes).as_bits();
                        Bitrate::from_bps_f64(bits as f64 / d.as_secs_f64())
                    }),
                    adaptation: bss.adaptation(port).map(|a| {
                        let before = std::mem::replace(&mut self.last_extended[b][p], a.extended_attempts);
                        Adaptation {
                            congestion_level: a.cl,
                            mac_capacity: a.mc,
                            extended_attempts: a.extended_attempts - before,
                        }
                    }),
                };
                links.record_mac(now, self.queue_id(b as u16, port), bss.queue_bytes(port), mac);
            }
        }
    }
}
