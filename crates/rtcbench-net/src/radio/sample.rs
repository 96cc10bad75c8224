//! What a radio element did between two samples, as the links table reports it
//! (`docs/traces.md`, `links.parquet`): per Wi-Fi node its MAC ([`MacSample`]), per LTE UE and
//! direction its scheduling ([`RadioSample`]). A sampler keeps each element's counters at the
//! previous sample, so the simulator and the emulation relay, which both sample every
//! `LINK_SAMPLE_INTERVAL`, fill the same columns the same way.

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

use super::lte::{Cell, DirStats, Direction};
use super::wifi::{Bss, NodeStats, Port};
use crate::packet::NetPacket;

/// What a Wi-Fi node's MAC did since the previous sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MacSample {
    /// The share of the time since the last sample the node had a PPDU on air (its data frames
    /// and the ACKs and BlockAcks it answered with); `None` at the first sample.
    pub airtime_share: Option<f64>,
    /// MPDU transmissions that were retransmissions.
    pub retries: u64,
    /// MPDUs the MAC gave up: retry limit or lifetime.
    pub drops: u64,
    /// Packets the node's queue had no room for (a relayed one too, at the AP).
    pub queue_drops: u64,
    /// Mean MPDUs per data PPDU (1 without aggregation); `None` if it sent none.
    pub ampdu_mpdus: Option<f64>,
    /// The PHY rate of a station's data frames; `None` for the AP (a rate per station).
    pub phy_rate: Option<Bitrate>,
    /// The MSDUs the MAC delivered (acknowledged) since the last sample, as a rate; `None` at
    /// the first sample. Over `airtime_share`, the rate the node carries while it has the medium.
    pub delivered: Option<Bitrate>,
    /// The station's retry-limit adaptation, if it runs one.
    pub adaptation: Option<Adaptation>,
}

/// A station's retry-limit adaptation at a sample (Chen et al. 2015 §3.1, Algorithm 3).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Adaptation {
    /// CL, eq. (5), over the last wτ (+∞ when nothing was delivered but data is in excess).
    pub congestion_level: f64,
    /// MC, eq. (6): the MAC capacity the station estimates.
    pub mac_capacity: Bitrate,
    /// Attempts granted beyond the retry limit since the last sample.
    pub extended_attempts: u64,
}

/// What the scheduler did for one direction of one LTE UE since the previous sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RadioSample {
    /// PRB·TTIs the UE was given over those the direction had; `None` at the first sample.
    pub rb_share: Option<f64>,
    /// The bytes of the new transport blocks it was given, as a rate; `None` at the first sample.
    pub scheduled: Option<Bitrate>,
    /// HARQ retransmissions sent.
    pub retransmissions: u64,
    /// Transport blocks given up after their last HARQ transmission.
    pub failures: u64,
    /// Packets refused by the full buffer or dropped by PDCP's discard timer.
    pub queue_drops: u64,
    /// How long the oldest packet in the buffer has waited; `None` when it is empty.
    pub head_sojourn: Option<Duration>,
    /// The CQI the scheduler uses (0: out of range).
    pub cqi: u8,
    /// The whole band's rate at the MCS of that CQI.
    pub full_band_rate: Bitrate,
}

/// One BSS's counters at the previous sample.
#[derive(Clone, Debug)]
pub struct BssSampler {
    /// Per port.
    last: Vec<NodeStats>,
    /// Per port, the attempts its retry-limit adaptation had extended.
    last_extended: Vec<u64>,
    last_sample: Option<Instant>,
}

impl BssSampler {
    pub fn new<P: NetPacket>(bss: &Bss<P>) -> Self {
        let nodes = bss.stations() + 1;
        Self { last: vec![NodeStats::default(); nodes], last_extended: vec![0; nodes], last_sample: None }
    }

    /// Calls `row(port, queue bytes, MAC sample)` for every node of `bss` at `now`, the AP first.
    pub fn sample<P: NetPacket>(
        &mut self,
        now: Instant,
        bss: &Bss<P>,
        mut row: impl FnMut(Port, DataSize, MacSample),
    ) {
        let span = self.last_sample.replace(now).map(|t| now - t).filter(|d| !d.is_zero());
        for p in 0..=bss.stations() {
            let port = Port(p as u16);
            let now_stats = bss.stats(port);
            let before = std::mem::replace(&mut self.last[p], now_stats);
            let ppdus = now_stats.data_ppdus - before.data_ppdus;
            let mac = MacSample {
                airtime_share: span
                    .map(|d| (now_stats.airtime - before.airtime).as_secs_f64() / d.as_secs_f64()),
                retries: now_stats.mpdu_retries - before.mpdu_retries,
                drops: (now_stats.mpdus_retry_dropped + now_stats.mpdus_lifetime_dropped)
                    - (before.mpdus_retry_dropped + before.mpdus_lifetime_dropped),
                queue_drops: now_stats.queue_full_drops - before.queue_full_drops,
                ampdu_mpdus: (ppdus > 0)
                    .then(|| (now_stats.mpdus_sent - before.mpdus_sent) as f64 / ppdus as f64),
                phy_rate: (port != Port::AP).then(|| bss.phy_mode(port, Port::AP).rate()),
                delivered: span.map(|d| {
                    let bits = (now_stats.acked_bytes - before.acked_bytes).as_bits();
                    Bitrate::from_bps_f64(bits as f64 / d.as_secs_f64())
                }),
                adaptation: bss.adaptation(port).map(|a| {
                    let before = std::mem::replace(&mut self.last_extended[p], a.extended_attempts);
                    Adaptation {
                        congestion_level: a.cl,
                        mac_capacity: a.mc,
                        extended_attempts: a.extended_attempts - before,
                    }
                }),
            };
            row(port, bss.queue_bytes(port), mac);
        }
    }
}

/// One cell's counters at the previous sample.
#[derive(Clone, Debug)]
pub struct CellSampler {
    /// The TTIs the cell was done with ([`Cell::ttis_done`]).
    last_ttis: Option<u64>,
    /// Per UE, its downlink's and uplink's counters.
    last: Vec<[DirStats; 2]>,
}

impl CellSampler {
    pub fn new<P: NetPacket>(cell: &Cell<P>) -> Self {
        Self { last_ttis: None, last: vec![[DirStats::default(); 2]; cell.ues()] }
    }

    /// Calls `row(ue, direction, buffer bytes, sample)` for every UE of `cell` at `now`, its
    /// downlink then its uplink. Rates and shares are over the TTIs the cell ran since the last
    /// sample, not the time elapsed, so that a TTI starting at a sample instant counts in exactly
    /// one sample.
    pub fn sample<P: NetPacket>(
        &mut self,
        now: Instant,
        cell: &mut Cell<P>,
        mut row: impl FnMut(super::lte::Port, Direction, DataSize, RadioSample),
    ) {
        let done = cell.ttis_done(now);
        let ttis = self.last_ttis.replace(done).map(|before| done - before).filter(|&n| n > 0);
        for k in 0..cell.ues() {
            let ue = super::lte::Port::ue(k as u16 + 1);
            let stats = cell.stats(ue);
            for (d, (dir, now_stats)) in
                [(Direction::Downlink, stats.dl), (Direction::Uplink, stats.ul)].into_iter().enumerate()
            {
                let before = std::mem::replace(&mut self.last[k][d], now_stats);
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
                row(ue, dir, cell.queue_bytes(ue, dir), sample);
            }
        }
    }
}
