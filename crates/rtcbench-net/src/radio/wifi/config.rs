//! The static description of a BSS: band, channel access parameters, retry limits, aggregation,
//! queues, and per station its PHY mode, error process, rate control and who hears whom. It
//! serialises (JSON), as [`crate::link::LinkConfig`] does, so a relay could be configured with
//! exactly the element the simulator builds.

use rtcbench_units::{Duration, Instant};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::adaptation::RetryAdaptation;
use super::aggregation::AggregationConfig;
use super::dcf::{AcParams, EdcaParameterSet};
use super::errors::ErrorModel;
use super::phy::{Band, PhyError, PhyMode, NON_HT_RATES_MBPS};
use super::rate::RateControl;

/// One BSS: an AP (port 0) and `stations.len()` stations (ports 1, 2, …).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BssConfig {
    pub name: String,
    pub band: Band,
    /// EDCA with four access categories (802.11e; every HT/VHT BSS), or a non-QoS BSS whose
    /// nodes have one DCF ([`BssConfig::dcf`]) and send every packet as best effort.
    pub qos: bool,
    /// The basic rate set, Mbit/s: control responses go at the highest of them not above the
    /// data frame's non-HT reference rate. {6, 12, 24}, the mandatory OFDM rates, is ns-3's
    /// default for 802.11a/n/ac.
    pub basic_rates_mbps: Vec<u8>,
    /// The EDCA parameters stations use.
    pub edca_sta: EdcaParameterSet,
    /// The EDCA parameters the AP uses: the same set by default (as in ns-3), or a Linux AP's
    /// ([`EdcaParameterSet::hostapd_ap`]).
    pub edca_ap: EdcaParameterSet,
    /// The DCF parameters of a non-QoS BSS.
    pub dcf: AcParams,
    /// R, transmission attempts of an MPDU sent alone with Normal Ack before it is given up
    /// (ns-3's FrameRetryLimit 7, "dot11ShortRetryLimit"; seed 004's R = 7 counts the first
    /// transmission too). Frames are never long enough here for the long retry limit.
    pub retry_limit: u32,
    /// Attempts of an MPDU of an aggregating access category (under a BlockAck agreement).
    /// 802.11-2020 does not count retries of such MPDUs, so they only leave by lifetime (`None`,
    /// ns-3's default); drivers set their own software limit (ath9k: 10 or 30 by version).
    /// Default: the same 7 attempts as [`BssConfig::retry_limit`], so that a loss still turns into
    /// delay and then a drop the way seed 004's model assumes (Chen et al. 2015 counts attempts of
    /// MPDUs sent alone; what its retry limit means under BlockAck is left open there).
    pub ampdu_retry_limit: Option<u32>,
    /// A-MPDU aggregation (`None`: every MPDU alone, Normal Ack).
    pub aggregation: Option<AggregationConfig>,
    /// Whether the nodes that heard a collision of frames that started in the same slot defer by
    /// EIFS instead of DIFS/AIFS afterwards. ns-3 (and so its validation, "DIFS" Bianchi model)
    /// decodes no PHY header from equal-power frames started together, so no FCS error is
    /// reported and nobody uses EIFS: `false`. A node that did lock onto a frame and then lost
    /// it to a later overlap, or to a channel error, uses EIFS either way (802.11-2020
    /// §10.3.2.3.7).
    pub eifs_after_collision: bool,
    /// The AP's queues.
    pub ap_queue: ApQueueConfig,
    /// Each station's queue per access category.
    pub sta_queue: QueueConfig,
    pub stations: Vec<StationConfig>,
    /// `hearing[i][j]`: whether node i senses node j's transmissions (node 0 the AP, then the
    /// stations). `None`: everyone hears everyone. A station that does not hear
    /// another is hidden from it: it keeps counting down while the other transmits, and their
    /// frames overlap at the AP.
    pub hearing: Option<Vec<Vec<bool>>>,
    /// Transmitters of other BSSs on the channel, each a periodic busy period ([`Interferer`]).
    /// Empty by default (and when absent from JSON).
    #[serde(default)]
    pub interferers: Vec<Interferer>,
}

/// A transmitter outside the BSS that occupies the channel periodically and defers to no one:
/// the hidden-terminal network of Chen et al. 2015 (seed 004) §4.1 (INT_STA → INT_AP, heard by
/// the AP but not by STA_A), whose constant-bit-rate video makes a busy period τ_b every T_htt
/// (§3.1.2, Fig. 6 and Theorem 1: τ_b = 10.75 ms, T_htt = 33 ms, ρ = τ_b / T_htt ≈ 0.33).
///
/// Burst k occupies [offset + k·period, offset + k·period + busy), for every k ≥ 0 whose start
/// lies in [start, stop). A node that senses it (`heard_by`) finds the medium busy for the
/// burst and defers, its backoff frozen, as for a PPDU it cannot decode; a reception there that
/// the burst overlaps is corrupted from the overlap on (the MPDUs of an A-MPDU that ended
/// before it still get through), and EIFS follows as after any lost frame. Nodes that do not
/// sense it are unaffected: a station that does not hear it transmits into it, and its frame is
/// lost at an AP that does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interferer {
    /// T_htt, the time from one burst's start to the next.
    pub period: Duration,
    /// τ_b, how long each burst keeps the medium busy.
    pub busy: Duration,
    /// When the first burst starts (k = 0), from time zero.
    pub offset: Duration,
    /// No burst starts before this instant (from time zero); `None`: from the first.
    #[serde(default)]
    pub start: Option<Duration>,
    /// No burst starts at or after this instant; `None`: never stops.
    #[serde(default)]
    pub stop: Option<Duration>,
    /// Which nodes sense it: one entry per node, the AP first, then every station.
    pub heard_by: Vec<bool>,
}

impl Interferer {
    /// A burst of `busy` every `period` from time zero on, sensed by the nodes in `heard_by`.
    pub fn periodic(period: Duration, busy: Duration, heard_by: Vec<bool>) -> Self {
        Self { period, busy, offset: Duration::ZERO, start: None, stop: None, heard_by }
    }

    /// The start of the first burst that begins at or after `at` (and before `stop`).
    pub(crate) fn next_burst(&self, at: Instant) -> Option<Instant> {
        let at = self.start.map_or(at, |s| at.max(Instant::ZERO + s));
        let first = Instant::ZERO + self.offset;
        let (since, period) = ((at - first).as_micros(), self.period.as_micros());
        let k = if since <= 0 { 0 } else { (since + period - 1) / period };
        let t = first + self.period * k;
        self.stop.is_none_or(|s| t < Instant::ZERO + s).then_some(t)
    }
}

/// A station's radio link to the AP, the same in both directions.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StationConfig {
    /// The PHY mode of data frames (the starting mode with rate adaptation).
    pub phy: PhyMode,
    pub errors: ErrorModel,
    pub rate_control: RateControl,
    /// Chen et al. 2015 (seed 004)'s congestion-aware retry-limit adaptation on the station's
    /// uplink (`None`, the default: 802.11's fixed retry limit).
    #[serde(default)]
    pub retry_adaptation: Option<RetryAdaptation>,
}

impl StationConfig {
    /// A station at a fixed mode with no channel errors.
    pub const fn fixed(phy: PhyMode) -> Self {
        Self { phy, errors: ErrorModel::None, rate_control: RateControl::Fixed, retry_adaptation: None }
    }
}

/// A queue per access category, limited in packets (the MPDUs waiting for a retransmission
/// count too).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueConfig {
    pub packets: u32,
    /// Packets that waited longer are dropped when they would be sent (ns-3's WifiMacQueue
    /// MaxDelay, 500 ms by default there); `None`: no lifetime, as in Linux.
    pub max_delay: Option<Duration>,
}

impl QueueConfig {
    /// Linux's default interface queue, txqueuelen 1000 packets (`DEFAULT_TX_QUEUE_LEN`,
    /// `include/net/pkt_sched.h`), per access category.
    pub const fn linux() -> Self {
        Self { packets: 1000, max_delay: None }
    }
}

/// How the AP queues what it sends to its stations. Either way it keeps a queue per station and
/// access category, from which it aggregates per station; the modes differ in the limit and in
/// which station is served next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case", deny_unknown_fields)]
pub enum ApQueueConfig {
    /// One FIFO per access category shared by every station, as a consumer AP with a qdisc in
    /// front of the driver has (needed for seed 000, Guerrero Viveros 2019 §6.3.5): `packets` is
    /// the limit of the whole category, and the station whose oldest packet came first is
    /// served next, so service follows arrival order.
    SharedPerAc { packets: u32, max_delay: Option<Duration> },
    /// A queue per station and category, each limited to `packets`, served round-robin over
    /// the stations with something to send (mac80211's per-station TXQs without airtime
    /// fairness or CoDel).
    PerStation { packets: u32, max_delay: Option<Duration> },
}

impl ApQueueConfig {
    pub(crate) fn packets(&self) -> u32 {
        match *self {
            Self::SharedPerAc { packets, .. } | Self::PerStation { packets, .. } => packets,
        }
    }

    pub(crate) fn max_delay(&self) -> Option<Duration> {
        match *self {
            Self::SharedPerAc { max_delay, .. } | Self::PerStation { max_delay, .. } => max_delay,
        }
    }
}

/// What is wrong with a [`BssConfig`].
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ConfigError {
    #[error("a BSS needs at least one station")]
    NoStation,
    #[error("station {station}: {source}")]
    Phy {
        station: usize,
        #[source]
        source: PhyError,
    },
    #[error("station {station}: a packet error rate must lie in [0, 1], not {per}")]
    Per { station: usize, per: String },
    #[error("basic rates must be a non-empty set of non-HT OFDM rates (6, 9, 12, 18, 24, 36, 48, 54)")]
    BasicRates,
    #[error("{what}: CWmin {cw_min} and CWmax {cw_max} must be powers of two minus one, CWmin ≤ CWmax")]
    ContentionWindow { what: &'static str, cw_min: u16, cw_max: u16 },
    #[error("{what}: AIFSN must be at least 1")]
    Aifsn { what: &'static str },
    #[error("a retry limit counts transmission attempts and must be at least 1")]
    RetryLimit,
    #[error("A-MPDU aggregation needs a QoS BSS (set qos = true)")]
    AggregationWithoutQos,
    #[error("the BlockAck window must hold 1 to 64 MPDUs, not {0}")]
    Window(u16),
    #[error("a queue must hold at least one packet")]
    QueueLimit,
    #[error("the hearing matrix must be {nodes}×{nodes}: the AP, then every station")]
    HearingShape { nodes: usize },
    #[error("station {station} and the AP must hear each other")]
    HearingAp { station: usize },
    #[error(
        "interferer {interferer}: its busy time ({busy}) must be positive and shorter than its \
         period ({period})"
    )]
    InterfererTiming { interferer: usize, period: Duration, busy: Duration },
    #[error(
        "interferer {interferer}: heard_by needs one entry per node, the AP first then every \
         station ({nodes}), not {found}"
    )]
    InterfererHearing { interferer: usize, nodes: usize, found: usize },
    #[error(
        "interferer {interferer}: offset and start must not be negative, and start must come before stop"
    )]
    InterfererWindow { interferer: usize },
    #[error(
        "station {station}: retry_adaptation needs a positive interval, a window of at least one \
         interval, and a congestion-level threshold that is a number (not NaN)"
    )]
    RetryAdaptation { station: usize },
}

impl BssConfig {
    /// A 5-GHz QoS BSS with ns-3's defaults (`docs/wifi.md`, "Constants"): the standard EDCA set for AP and
    /// stations, basic rates {6, 12, 24}, 7 attempts, A-MPDU for BE and VI, and Linux's
    /// 1000-packet queues (shared per category at the AP).
    pub fn new(stations: Vec<StationConfig>) -> Self {
        Self {
            name: "wifi".into(),
            band: Band::Ghz5,
            qos: true,
            basic_rates_mbps: vec![6, 12, 24],
            edca_sta: EdcaParameterSet::standard(),
            edca_ap: EdcaParameterSet::standard(),
            dcf: AcParams::legacy_dcf(),
            retry_limit: 7,
            ampdu_retry_limit: Some(7),
            aggregation: Some(AggregationConfig::default()),
            eifs_after_collision: false,
            ap_queue: ApQueueConfig::SharedPerAc { packets: 1000, max_delay: None },
            sta_queue: QueueConfig::linux(),
            stations,
            hearing: None,
            interferers: Vec::new(),
        }
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.stations.is_empty() {
            return Err(ConfigError::NoStation);
        }
        for (i, s) in self.stations.iter().enumerate() {
            let station = i + 1;
            s.phy.validate().map_err(|source| ConfigError::Phy { station, source })?;
            if let Some(a) = s.retry_adaptation {
                if a.interval <= Duration::ZERO || a.window == 0 || a.cl_threshold.is_nan() {
                    return Err(ConfigError::RetryAdaptation { station });
                }
            }
            if let ErrorModel::Fixed { per } = s.errors {
                if !(0.0..=1.0).contains(&per) {
                    return Err(ConfigError::Per { station, per: per.to_string() });
                }
            }
        }
        if self.basic_rates_mbps.is_empty()
            || self.basic_rates_mbps.iter().any(|r| !NON_HT_RATES_MBPS.contains(r))
        {
            return Err(ConfigError::BasicRates);
        }
        let sets = [("station EDCA", &self.edca_sta), ("AP EDCA", &self.edca_ap)];
        for (what, set) in sets {
            for p in [set.bk, set.be, set.vi, set.vo] {
                check_params(what, p)?;
            }
        }
        check_params("DCF", self.dcf)?;
        if self.retry_limit == 0 || self.ampdu_retry_limit == Some(0) {
            return Err(ConfigError::RetryLimit);
        }
        if let Some(a) = &self.aggregation {
            if !self.qos {
                return Err(ConfigError::AggregationWithoutQos);
            }
            if !(1..=64).contains(&a.window) {
                return Err(ConfigError::Window(a.window));
            }
        }
        if self.sta_queue.packets == 0 || self.ap_queue.packets() == 0 {
            return Err(ConfigError::QueueLimit);
        }
        if let Some(h) = &self.hearing {
            let nodes = self.stations.len() + 1;
            if h.len() != nodes || h.iter().any(|row| row.len() != nodes) {
                return Err(ConfigError::HearingShape { nodes });
            }
            if let Some(station) = (1..nodes).find(|&s| !h[0][s] || !h[s][0]) {
                return Err(ConfigError::HearingAp { station });
            }
        }
        let nodes = self.stations.len() + 1;
        for (interferer, i) in self.interferers.iter().enumerate() {
            if i.busy <= Duration::ZERO || i.period <= i.busy {
                return Err(ConfigError::InterfererTiming { interferer, period: i.period, busy: i.busy });
            }
            if i.heard_by.len() != nodes {
                return Err(ConfigError::InterfererHearing { interferer, nodes, found: i.heard_by.len() });
            }
            let negative = i.offset < Duration::ZERO || i.start.is_some_and(|s| s < Duration::ZERO);
            let empty = matches!((i.start, i.stop), (Some(a), Some(b)) if a >= b);
            if negative || empty {
                return Err(ConfigError::InterfererWindow { interferer });
            }
        }
        Ok(())
    }
}

fn check_params(what: &'static str, p: AcParams) -> Result<(), ConfigError> {
    let ok = |cw: u16| (u32::from(cw) + 1).is_power_of_two();
    if !ok(p.cw_min) || !ok(p.cw_max) || p.cw_min > p.cw_max {
        return Err(ConfigError::ContentionWindow { what, cw_min: p.cw_min, cw_max: p.cw_max });
    }
    if p.aifsn == 0 {
        return Err(ConfigError::Aifsn { what });
    }
    Ok(())
}
