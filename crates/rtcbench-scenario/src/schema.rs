//! The scenario file format (serde schema). Field names are the TOML keys; every quantity is
//! written with its unit. `docs/scenarios.md` is the user-facing description of this file.
//!
//! One set of structs serves both the file as written (fields may hold sets of values, see
//! [`Param`]) and the resolved scenario of one variant, in which every `Param` is a single value
//! (`Param::One`). Only [`super::expand`] builds the latter, from the file's TOML tree.

use std::collections::BTreeMap;

use rtcbench_rtp::call::{FecScheme, JitterBuffer, KeyframeRequest};
use rtcbench_units::{Bitrate, DataSize, Duration};
use serde::{Deserialize, Serialize, Serializer};

pub use super::param::Param;
pub use rtcbench_net::link::capacity_trace::opennetlab::{
    Direction as TraceDirection, Unapplied as TraceUnapplied,
};
pub use rtcbench_net::link::capacity_trace::TraceFormat;
pub use rtcbench_net::radio::lte::Bandwidth;

impl<T> Param<T> {
    /// The value of a resolved parameter.
    ///
    /// # Panics
    /// If called before variants are expanded; resolved scenarios only hold single values.
    pub fn get(&self) -> &T {
        match self {
            Self::One(v) => v,
            _ => unreachable!("scenario parameters are resolved before use"),
        }
    }
}

/// A whole scenario.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    /// Stable id, named after its source section (`rfc8867-5.1`).
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Where the case comes from (RFC section, seed document and section).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Set in resolved scenarios: which variant of the file this is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    pub duration: Param<Duration>,
    /// Named sets of values; a field written `"$name"` takes each value in turn.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variants: BTreeMap<String, Vec<toml::Value>>,
    pub links: Vec<LinkSpec>,
    /// 802.11 access networks: each an AP and its stations sharing one channel
    /// (`docs/wifi.md`); their nodes join the links' nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wifi: Vec<WifiSpec>,
    /// LTE cells: each an eNB and its UEs, scheduled TTI by TTI (`docs/lte.md`); their nodes
    /// join the links' nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lte: Vec<LteSpec>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<CallSpec>,
    /// Group calls, each expanded into calls (streams) after those of `calls`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conferences: Vec<ConferenceSpec>,
    /// TCP flows competing with the calls (long or short, RFC 8867 §5.6-5.7).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tcp: Vec<TcpSpec>,
    /// Constant-bit-rate UDP flows (non-adaptive background traffic).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cbr: Vec<CbrSpec>,
    /// Parameters of controllers, by controller name; only those of the controller that runs
    /// are used (`--set controller.gcc-draft.deployment=send-side`).
    #[serde(default, skip_serializing_if = "ControllerParams::is_empty")]
    pub controller: ControllerParams,
}

/// Per-controller parameters a scenario may set.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ControllerParams {
    #[serde(rename = "gcc-draft", default, skip_serializing_if = "Option::is_none")]
    pub gcc_draft: Option<GccDraftParams>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scream: Option<ScreamParams>,
}

impl ControllerParams {
    pub fn is_empty(&self) -> bool {
        self.gcc_draft.is_none() && self.scream.is_none()
    }
}

/// RFC 8298 options a scenario may set.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ScreamParams {
    /// §4.1.2.3's competing-flows compensation (default off, docs/controllers/scream.md); the
    /// RFC wants it on where SCReAM shares a bottleneck with loss-based flows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub competing_flows_compensation: Option<bool>,
}

/// Where draft-ietf-rmcat-gcc-02's delay-based controller runs.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum GccDeployment {
    /// At the receiver, with abs-send-time, reporting REMB (the seeds' version, GCC-02 §3).
    #[default]
    ReceiveSide,
    /// At the sender, from transport-wide feedback.
    SendSide,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GccDraftParams {
    #[serde(default)]
    pub deployment: GccDeployment,
}

/// A one-directional link between two nodes.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub name: String,
    pub from: String,
    pub to: String,
    /// One-way propagation delay (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<Param<Duration>>,
    /// Constant capacity; omit (with no `schedule`) for an unrestricted link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Param<Bitrate>>,
    /// The capacity `ratio` entries of `schedule` multiply (RFC 8867 "reference capacity").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_capacity: Option<Param<Bitrate>>,
    /// Piecewise-constant capacity: from each `at` until the next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<Vec<CapacityStep>>,
    /// Capacity from a trace file, instead of `capacity` or `schedule`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_trace: Option<CapacityTraceSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<QueueSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<JitterSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<LossSpec>,
    /// How the capacity (schedule) is made (RFC 8867 §4.2): the link's own rate (default), or
    /// UDP background traffic on a link of constant `physical_capacity`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mechanism: Option<Param<CapacityMechanism>>,
    /// The link's rate under the `udp-background` mechanism (RFC 8867 §4.2: 4 Mbit/s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical_capacity: Option<Param<Bitrate>>,
    /// ECN bleaching: the link clears the ECN field of every packet it carries (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bleach_ecn: Option<bool>,
}

/// RFC 8867 §4.2's two ways to vary the available capacity.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum CapacityMechanism {
    /// The bottleneck's own rate follows the schedule.
    #[default]
    LinkRate,
    /// The link runs at `physical_capacity`; a non-adaptive UDP flow over it sends
    /// `physical_capacity − scheduled capacity`, leaving the scheduled capacity to the rest.
    UdpBackground,
}

/// A link's capacity read from a trace file (`docs/capacity-traces.md`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CapacityTraceSpec {
    /// The file: relative to the scenario file, absolute, or `builtin:<path>` for a trace shipped
    /// with rtcbench (`builtin:scenarios/traces/lte-drive.mahimahi`). A list of files runs one
    /// variant per file. A resolved scenario names the file absolutely.
    pub file: Param<String>,
    /// mahimahi, opennetlab or csv; default: from the file's extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<TraceFormat>,
    /// OpenNetLab traces only: which direction's segments the link takes (default uplink, the
    /// one OpenNetLab's players use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<TraceDirection>,
    /// OpenNetLab traces only: segment fields that are not applied and that the scenario
    /// acknowledges (`loss`, `rtt`, `jitter`); a non-zero value of another is an error.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<TraceUnapplied>,
}

/// One step of a capacity schedule: either an absolute `capacity` or a `ratio` of the link's
/// `reference_capacity`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CapacityStep {
    pub at: Duration,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Param<Bitrate>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
}

/// The queue discipline at a link's entrance (`docs/queues.md`).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum QueueKind {
    #[default]
    Droptail,
    /// RFC 8289.
    Codel,
    /// RFC 8290.
    FqCodel,
    /// RFC 8033.
    Pie,
    /// Marks ECT(1) packets whose sojourn exceeds `threshold` (L4S-style, RFC 9332); drop-tail
    /// otherwise.
    Step,
    /// RFC 9332's DualQ Coupled AQM (DualPI2).
    Dualpi2,
}

impl QueueKind {
    /// The name scenario files use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Droptail => "droptail",
            Self::Codel => "codel",
            Self::FqCodel => "fq-codel",
            Self::Pie => "pie",
            Self::Step => "step",
            Self::Dualpi2 => "dualpi2",
        }
    }
}

/// `calls.N.fec` as written: on or off, or the scheme by name. It is written back as it was
/// read, so a scenario's identity does not depend on which spelling chose ULPFEC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FecSpec {
    /// `true`: ULPFEC in RED, as Chrome sends VP8; `false`: no FEC.
    On(bool),
    Scheme(FecScheme),
}

impl FecSpec {
    /// The scheme a call sends, `None` when FEC is off.
    pub fn scheme(self) -> Option<FecScheme> {
        match self {
            Self::On(true) => Some(FecScheme::Ulpfec),
            Self::On(false) => None,
            Self::Scheme(s) => Some(s),
        }
    }
}

/// The values `calls.N.fec` takes, for error messages.
const FEC_VALUES: &str = "true, false, \"ulpfec\" or \"flexfec\"";

impl<'de> Deserialize<'de> for FecSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = FecSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{FEC_VALUES}")
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<FecSpec, E> {
                Ok(FecSpec::On(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<FecSpec, E> {
                match v {
                    "ulpfec" => Ok(FecSpec::Scheme(FecScheme::Ulpfec)),
                    "flexfec" => Ok(FecSpec::Scheme(FecScheme::Flexfec)),
                    _ => Err(E::custom(format!("unknown FEC scheme {v:?}, expected {FEC_VALUES}"))),
                }
            }
        }
        d.deserialize_any(Visitor)
    }
}

impl Serialize for FecSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::On(on) => on.serialize(s),
            Self::Scheme(scheme) => scheme.serialize(s),
        }
    }
}

/// One IEEE 802.11 BSS (`docs/wifi.md`, `docs/scenarios.md` "Wi-Fi"): an access point and its
/// stations on one channel. Every packet between a station and any other node crosses it: up to
/// the AP (and on over the AP's links), down from the AP, or from one station to another through
/// the AP's queue. Defaults are a 5-GHz HT BSS with ns-3's parameters.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WifiSpec {
    /// Names the BSS; its nodes' queues appear in the links table as `<name>:<node>`.
    pub name: String,
    /// The AP's node. Links join it (or not) to the rest of the network.
    pub ap: String,
    /// `5GHz` (default) or `2.4GHz` (SIFS 10 µs, 6-µs signal extension, short slot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub band: Option<WifiBand>,
    /// EDCA with four access categories (default), or a non-QoS BSS whose nodes use one DCF.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos: Option<bool>,
    /// A-MPDU aggregation with BlockAck for best effort and video (default on; needs `qos`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregation: Option<bool>,
    /// Transmission attempts of an MPDU before it is given up (dot11ShortRetryLimit, 7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_limit: Option<Param<u32>>,
    /// The AP's EDCA parameters: the stations' (`standard`, default, as ns-3) or a Linux AP's
    /// (`hostapd`: best effort's CWmax 63).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ap_edca: Option<ApEdca>,
    /// The AP's transmit queues (default: one FIFO per access category shared by all stations,
    /// 1000 packets, as a consumer AP has).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ap_queue: Option<WifiApQueueSpec>,
    /// Each station's transmit queue per access category (default 1000 packets, Linux's
    /// txqueuelen).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub station_queue: Option<WifiQueueSpec>,
    /// The PHY mode of stations that do not give their own (default HT MCS 7, 20 MHz, long GI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phy: Option<PhySpec>,
    /// Named places a station can be (`stations.N.position`), each with the radio link a station
    /// there has: "near the AP", "behind two walls". A position is one value, so a set of them
    /// varies a station's whole link at once.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub positions: BTreeMap<String, RadioSpec>,
    pub stations: Vec<StationSpec>,
    /// Pairs of stations that do not hear each other (hidden from each other; both hear the AP).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<[String; 2]>,
    /// Transmitters outside the BSS that some of its nodes sense: a hidden terminal of another
    /// BSS, busy for `busy` every `period` (Chen et al. 2015 §4.1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interferers: Vec<InterfererSpec>,
}

/// One LTE FDD cell (`docs/lte.md`, `docs/scenarios.md` "LTE"): an eNB and its UEs, each UE with
/// its own buffers at the eNB (downlink) and in the UE (uplink), coupled only by the scheduler.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LteSpec {
    /// Names the cell; its UEs' buffers appear in the links table as `<name>:<ue>:dl` and
    /// `<name>:<ue>:ul`.
    pub name: String,
    /// The eNB's node (the core network and the Internet are links from and to it).
    pub enb: String,
    /// `1.4MHz`, `3MHz`, `5MHz` (default), `10MHz`, `15MHz` or `20MHz`, both directions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<Bandwidth>,
    /// Downlink layers: 1 (SISO, default) or 2 (2×2 MIMO, two codewords).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dl_layers: Option<u8>,
    /// `pf` (proportional fair, default) or `rr` (round robin), downlink.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<LteScheduler>,
    /// The highest uplink MCS (20 for UEs without uplink 64-QAM; default 28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ul_max_mcs: Option<u8>,
    /// PRBs at the band edges kept for the PUCCH (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ul_pucch_prb: Option<u16>,
    /// The uplink's scheduling requests: SR period (1, 2, 5, 10, 20, 40 or 80 ms; default 10 ms),
    /// or `ideal` (ns-3's: the eNB knows every UE's buffer at every TTI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ul_access: Option<LteUlAccess>,
    /// How often a UE reports its channel quality (periodic wideband CQI, TS 36.213 §7.2.2):
    /// 1 to 160 ms (default 5 ms; ns-3's ideal reports come every 1 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cqi_period: Option<Duration>,
    /// Block error probability of each HARQ transmission given the earlier failed (default
    /// [0.1, 0.01, 0.001, 0.001]: the 10 % target, four transmissions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harq_bler: Option<Vec<f64>>,
    /// The eNB's buffer of each UE (its downlink; default 5 MB), and the UE's own (its uplink)
    /// unless `ue_buffer` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer: Option<Param<DataSize>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ue_buffer: Option<Param<DataSize>>,
    /// PDCP's discard timer: packets older are dropped when they would be sent (default none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discard_timer: Option<Param<Duration>>,
    /// eNB, UE and core processing added to every delivery (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_delay: Option<Duration>,
    /// Named places a UE can be (`ues.N.position`), each with its channel quality.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub positions: BTreeMap<String, UeRadioSpec>,
    pub ues: Vec<UeSpec>,
}

/// `lte.N.scheduler`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum LteScheduler {
    #[default]
    Pf,
    Rr,
}

/// `lte.N.ul_access`: `"ideal"`, or `{ sr_period = "10ms" }`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(untagged)]
pub enum LteUlAccess {
    Named(LteUlAccessName),
    Sr { sr_period: Duration },
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum LteUlAccessName {
    Ideal,
}

/// A UE of a cell: its node, and its channel, given here or by a `position`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UeSpec {
    /// The UE's node (a node of no link: every packet it sends or receives crosses the cell).
    pub node: String,
    /// One of the cell's `positions` (then none of the channel fields here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<Param<String>>,
    #[serde(flatten)]
    pub radio: UeRadioSpec,
}

/// A UE's channel quality, per direction or both at once: a fixed CQI (0-15), or a wideband
/// SINR in dB (mapped to a CQI), optionally with Rayleigh fading at a speed.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UeRadioSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cqi: Option<Param<u8>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dl_cqi: Option<Param<u8>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ul_cqi: Option<Param<u8>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sinr_db: Option<Param<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dl_sinr_db: Option<Param<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ul_sinr_db: Option<Param<f64>>,
    /// With a SINR: Rayleigh fading (Jakes Doppler spectrum) at this speed, km/h.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_kmh: Option<Param<f64>>,
    /// The carrier frequency for the Doppler shift, GHz (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carrier_ghz: Option<f64>,
}

/// `wifi.N.interferers.M`: a periodic transmitter of another BSS.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct InterfererSpec {
    /// From one burst's start to the next (T_htt).
    pub period: Param<Duration>,
    /// How long each burst keeps the medium busy (τ_b).
    pub busy: Param<Duration>,
    /// When the first burst starts (default 0 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<Duration>,
    /// No burst starts before `start` or at or after `stop` (default: the whole run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Duration>,
    /// The BSS's nodes that sense it (the AP, stations): they defer to its bursts, and lose
    /// what they were receiving when one starts. Nodes not named do not hear it and send into
    /// it.
    pub heard_by: Vec<String>,
}

/// `wifi.N.stations.M.retry_adaptation`: Chen et al. 2015's congestion-aware retry limit.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RetryAdaptationSpec {
    /// R_ex: up to R + R_ex attempts for an MPDU while the station is not congested (0: off).
    pub extension: Param<u32>,
    /// CL_th, the congestion level (eq. (5)) from which no extra attempt is granted. The paper
    /// gives no value.
    pub cl_threshold: Param<f64>,
    /// BF_th, the queued packets from which no extra attempt is granted. The paper gives no
    /// value.
    pub buffer_threshold: Param<u32>,
    /// τ, the statistics' interval (default 100 ms), and w, how many they sum (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u32>,
}

/// `wifi.N.band`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub enum WifiBand {
    #[default]
    #[serde(rename = "5GHz")]
    Ghz5,
    #[serde(rename = "2.4GHz")]
    Ghz2_4,
}

/// `wifi.N.ap_edca`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ApEdca {
    #[default]
    Standard,
    Hostapd,
}

/// `wifi.N.ap_queue.mode`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ApQueueMode {
    /// One FIFO per access category for every station: service follows arrival order.
    #[default]
    Shared,
    /// A queue per station and category, each with the limit, served round-robin.
    PerStation,
}

/// The AP's queues.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WifiApQueueSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ApQueueMode>,
    /// Packets per access category (shared) or per station and category (per-station).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets: Option<Param<u32>>,
    /// Packets that waited longer are dropped when they would be sent (default: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_delay: Option<Duration>,
}

/// A station's queue per access category.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WifiQueueSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packets: Option<Param<u32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_delay: Option<Duration>,
}

/// One station of a BSS: its node, and its radio link to the AP, given here or by a `position`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StationSpec {
    /// The station's node (a node of no link: every packet it sends or receives crosses the
    /// BSS).
    pub node: String,
    /// One of the BSS's `positions`, whose radio link the station has (then none of the fields
    /// below).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<Param<String>>,
    /// Its PHY mode, both ways (default: the BSS's `phy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phy: Option<PhySpec>,
    /// A fixed packet error rate per MPDU and attempt, both ways (0 to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per: Option<Param<f64>>,
    /// Or the link's SNR in dB, whose PER depends on the MCS and the MPDU's length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snr_db: Option<Param<f64>>,
    /// `fixed` (default) or `arf`: ARF over the MCSs of the station's mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_control: Option<RateControlSpec>,
    /// Chen et al. 2015's retry-limit adaptation at this station (default: 802.11's fixed limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_adaptation: Option<RetryAdaptationSpec>,
}

/// A station's radio link to the AP, the same both ways: `wifi.N.positions.NAME`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RadioSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phy: Option<PhySpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per: Option<Param<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snr_db: Option<Param<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_control: Option<RateControlSpec>,
}

/// `wifi.N.stations.M.rate_control`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum RateControlSpec {
    #[default]
    Fixed,
    Arf,
}

/// An 802.11 PHY mode: HT (802.11n, the default), VHT (802.11ac) or non-HT OFDM (802.11a/g).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PhySpec {
    /// `ht` (default), `vht` or `ofdm`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standard: Option<PhyStandard>,
    /// HT MCS 0-31 (MCS i has i / 8 + 1 spatial streams), VHT MCS 0-9.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcs: Option<Param<u8>>,
    /// VHT spatial streams, 1-4 (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streams: Option<u8>,
    /// Channel width in MHz: 20 (default) or 40 for HT; 20, 40, 80 or 160 for VHT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width_mhz: Option<u16>,
    /// The 400-ns guard interval (default: the long one, 800 ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_gi: Option<bool>,
    /// Non-HT OFDM only: the rate (6, 9, 12, 18, 24, 36, 48 or 54 Mbit/s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Bitrate>,
}

/// `phy.standard`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum PhyStandard {
    #[default]
    Ht,
    Vht,
    Ofdm,
}

/// A queue size in bytes ("60KB") or in drain time at the current capacity ("300ms"), or
/// "unlimited": an explicit choice, since a queue without limit in front of a busy link grows
/// (and takes memory) without bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueSize {
    Bytes(DataSize),
    Time(Duration),
    Unlimited,
}

/// How an unlimited queue is written.
const UNLIMITED: &str = "unlimited";

impl<'de> Deserialize<'de> for QueueSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        if text.trim() == UNLIMITED {
            return Ok(Self::Unlimited);
        }
        if let Ok(t) = text.parse::<Duration>() {
            return Ok(Self::Time(t));
        }
        text.parse::<DataSize>().map(Self::Bytes).map_err(|_| {
            serde::de::Error::custom(format!(
                "cannot read {text:?} as a queue size: expected a drain time (\"300ms\"), bytes (\"60KB\") \
                 or \"unlimited\""
            ))
        })
    }
}

impl Serialize for QueueSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Bytes(b) => b.serialize(s),
            Self::Time(t) => t.serialize(s),
            Self::Unlimited => UNLIMITED.serialize(s),
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<Param<QueueKind>>,
    /// The hard limit: bytes, or drain time at the capacity in force.
    pub size: Param<QueueSize>,
    /// Mark ECN-capable packets instead of dropping them (RFC 3168; AQMs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn: Option<bool>,
    /// Sojourn-time target (CoDel, FQ-CoDel: 5 ms; PIE: 15 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Duration>,
    /// CoDel's and FQ-CoDel's interval (100 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Duration>,
    /// The step marker's sojourn threshold (1 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<Duration>,
    // DualPI2's parameters (docs/queues.md), each overriding the set `defaults` names; `target`
    // above is shared with the other AQMs.
    /// DualPI2: the parameter set the other fields override ("rfc9332", the default, or "linux").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defaults: Option<Dualpi2Defaults>,
    /// RTT_max (RFC 9332 Fig. 2): derives `t_update`, `alpha` and `beta` where they are not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_max: Option<Duration>,
    /// DualPI2's Tupdate: how often p' is updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t_update: Option<Duration>,
    /// DualPI2's integral gain, in Hz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// DualPI2's proportional gain, in Hz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beta: Option<f64>,
    /// DualPI2's coupling factor k (p_CL = k·p').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coupling: Option<f64>,
    /// DualPI2's native L ramp: the sojourn where marking starts (minTh).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l_min_th: Option<Duration>,
    /// DualPI2's native L ramp: over how long it rises to 1 (range; zero = a step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l_range: Option<Duration>,
    /// DualPI2's Th_len: no native L marking while the L queue holds at most this many packets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub th_len: Option<u32>,
    /// DualPI2's PI input: the C queue's delay ("classic") or the larger of both ("max").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pi_delay: Option<Dualpi2PiDelay>,
    /// DualPI2's C-queue share of the scheduler when both queues are busy (0 to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classic_weight: Option<f64>,
    /// DualPI2 on overload: drop (true) or keep marking L and let the limit drop (false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drop_overload: Option<bool>,
    /// DualPI2: no coupled or classic signal while less than this is queued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_backlog: Option<DataSize>,
}

/// Which DualPI2 parameter set a queue starts from.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Dualpi2Defaults {
    /// RFC 9332 Appendix A, Figure 2.
    #[default]
    Rfc9332,
    /// Linux `sch_dualpi2`'s `dualpi2_reset_default`.
    Linux,
}

/// What the PI controller of DualPI2 reads.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Dualpi2PiDelay {
    /// The C queue's head sojourn (RFC 9332 Appendix A.1).
    Classic,
    /// The larger head sojourn of the two queues (Linux).
    Max,
}

impl QueueSpec {
    /// The DualPI2 fields set, by name, for rejecting them on other disciplines.
    pub fn dualpi2_fields_set(&self) -> Vec<&'static str> {
        let set = [
            ("defaults", self.defaults.is_some()),
            ("rtt_max", self.rtt_max.is_some()),
            ("t_update", self.t_update.is_some()),
            ("alpha", self.alpha.is_some()),
            ("beta", self.beta.is_some()),
            ("coupling", self.coupling.is_some()),
            ("l_min_th", self.l_min_th.is_some()),
            ("l_range", self.l_range.is_some()),
            ("th_len", self.th_len.is_some()),
            ("pi_delay", self.pi_delay.is_some()),
            ("classic_weight", self.classic_weight.is_some()),
            ("drop_overload", self.drop_overload.is_some()),
            ("min_backlog", self.min_backlog.is_some()),
        ];
        set.into_iter().filter(|(_, on)| *on).map(|(name, _)| name).collect()
    }

    /// The discipline of a resolved scenario.
    pub fn kind(&self) -> QueueKind {
        self.kind.as_ref().map_or(QueueKind::Droptail, |k| *k.get())
    }
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum JitterModel {
    /// RFC 8868 §4.5 no-reordering bounded PDV with a folded truncated Gaussian.
    #[default]
    NrRbpdv,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct JitterSpec {
    #[serde(default)]
    pub model: JitterModel,
    /// Standard deviation of the Gaussian (RFC 8868 §4.5.3 recommends 5 ms).
    pub std: Param<Duration>,
    /// Truncation in standard deviations (default 3: the added delay lies in [0, 3·std]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n_std: Option<Param<f64>>,
}

/// Random loss on a link.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(tag = "model", rename_all = "kebab-case", deny_unknown_fields)]
pub enum LossSpec {
    /// Independent loss with probability `rate` (RFC 8868 §4.4).
    Bernoulli { rate: Param<f64> },
    /// Two-state Markov loss; see `link::loss::LossModel::GilbertElliott`.
    GilbertElliott {
        p: Param<f64>,
        r: Param<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        loss_good: Option<Param<f64>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        loss_bad: Option<Param<f64>>,
    },
}

/// A media call from one node to another: video and audio over RTP, feedback back over RTCP.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CallSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub from: String,
    pub to: String,
    /// A TURN relay the call goes through (RFC 8656): media and RTCP from `from` to `via` to
    /// `to`, feedback back the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video: Option<VideoSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio: Option<AudioSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<FeedbackSpec>,
    /// Intervals in which the sender stops sending media (RFC 8867 §5.8).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pause: Vec<PauseSpec>,
    /// Relative priority (RFC 8867 §6.1: 2 for the favoured flow, 1 for the others); the
    /// controllers that define a weight use it (`docs/controllers/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// ECN codepoint the media packets carry (RFC 6679; RFC 8867 §6.2). Default: not ECN-capable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn: Option<EcnCodepoint>,
    /// NACK and RTX retransmissions (RFC 4585, RFC 4588), as Chrome negotiates for video.
    /// Default: on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nack: Option<bool>,
    /// FEC for video at libwebrtc's protection level: `true` or `"ulpfec"` (ULPFEC in RED,
    /// RFC 5109 and RFC 2198, as Chrome sends VP8), `"flexfec"` (RFC 8627, on its own stream) or
    /// `false`. Default: `true`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fec: Option<Param<FecSpec>>,
    /// A fixed FEC rate instead of libwebrtc's choice: FEC packets per media packet (0 to 1),
    /// for every frame, each frame protected by itself. Needs `fec` on. Default: libwebrtc's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fec_rate: Option<f64>,
    /// How the receiver asks for a keyframe when it cannot decode: `"pli"` (RFC 4585, as Chrome)
    /// or `"fir"` (RFC 5104). Default: `"pli"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keyframe_request: Option<KeyframeRequest>,
    /// When the receiving jitter buffer of GStreamer's RTP stack (`--mode gstreamer --cc
    /// rtpgccbwe`) asks for retransmissions: `{ rtx_next_seqnum = false, rtx_min_delay = "20ms" }`,
    /// `rtpjitterbuffer`'s properties of those names. Needs `nack` on. Default: GStreamer's own.
    /// The other stacks' receivers ask on a gap in the sequence numbers and leave it unused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_buffer: Option<JitterBuffer>,
}

impl CallSpec {
    /// The call's name: `name`, or `call<i>` for the `i`-th call.
    pub fn name_or_default(&self, i: usize) -> String {
        self.name.clone().unwrap_or_else(|| format!("call{i}"))
    }

    /// The call's flows (kind, name suffix, whether it goes forward): video and audio if
    /// enabled, then the receiver's and the sender's RTCP. The trace names them `<call>.<suffix>`.
    pub fn flows(&self) -> Vec<(&'static str, &'static str, bool)> {
        let video = self.video.as_ref().is_none_or(|v| v.enabled);
        let audio = self.audio.as_ref().is_none_or(|a| a.enabled);
        let mut out = Vec::with_capacity(4);
        if video {
            out.push(("video", "video", true));
        }
        if audio {
            out.push(("audio", "audio", true));
        }
        out.push(("rtcp", "rtcp-rx", false));
        out.push(("rtcp", "rtcp-tx", true));
        out
    }
}

/// How a conference's participants are joined (`conferences.N.topology`).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Topology {
    /// Every participant sends to every other, one call per ordered pair.
    Mesh,
    /// `source` sends to every other participant, one call per viewer.
    OneToMany,
    /// Every participant publishes to a forwarding server (SFU), which forwards each stream to
    /// every other participant.
    Sfu,
}

impl Topology {
    /// The name scenario files and `meta` use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Mesh => "mesh",
            Self::OneToMany => "one-to-many",
            Self::Sfu => "sfu",
        }
    }
}

/// A group call among `participants` (docs/scenarios.md, "Conferences"), which the simulator
/// expands into calls (`super::calls::run_calls`).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ConferenceSpec {
    /// Names its streams `<name>.<from>-<to>`; default `conf<i>` for the `i`-th conference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub topology: Topology,
    /// Nodes, in the order their streams are listed.
    pub participants: Vec<String>,
    /// One-to-many only: the participant who sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// SFU only: the node the forwarding server runs on (not a participant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sfu: Option<String>,
    /// Mesh and one-to-many: a TURN relay every stream goes through, as `calls.N.via`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// The settings every stream takes.
    #[serde(default)]
    pub call: StreamSettings,
}

impl ConferenceSpec {
    /// The conference's name: `name`, or `conf<i>` for the `i`-th conference.
    pub fn name_or_default(&self, i: usize) -> String {
        self.name.clone().unwrap_or_else(|| format!("conf{i}"))
    }
}

/// `conferences.N.call`: what every stream of a conference takes, written as a `[[calls]]`
/// entry without `name`, `from`, `to` and `via` (the conference gives those).
///
/// It is read as a whole [`CallSpec`] whose ends are left empty (and filled in per stream when
/// the conference is expanded), so the settings, their defaults, their checks and their error
/// paths (`conferences.0.call.video.max`) are those of `[[calls]]`, written once: a second list of
/// the same fields would drift from the first. Written back, the ends are left out again.
#[derive(Clone, Debug, Default)]
pub struct StreamSettings(pub CallSpec);

/// The fields of a call that a conference's streams take from the conference.
const STREAM_ENDS: [&str; 4] = ["name", "from", "to", "via"];

impl<'de> Deserialize<'de> for StreamSettings {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = StreamSettings;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a table of call settings (the fields of [[calls]] but name, from, to and via)")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<StreamSettings, A::Error> {
                let with_ends = WithEmptyEnds { inner: map, added: 0 };
                CallSpec::deserialize(serde::de::value::MapAccessDeserializer::new(with_ends))
                    .map(StreamSettings)
            }
        }
        d.deserialize_map(Visitor)
    }
}

/// The entries of a `call` table, refusing the ends, then `from = ""` and `to = ""`.
struct WithEmptyEnds<A> {
    inner: A,
    /// How many of the empty ends have been given (after the table's own entries).
    added: usize,
}

/// The ends [`WithEmptyEnds`] adds: what `CallSpec` requires.
const ADDED_ENDS: [&str; 2] = ["from", "to"];

impl<'de, A: serde::de::MapAccess<'de>> serde::de::MapAccess<'de> for WithEmptyEnds<A> {
    type Error = A::Error;

    fn next_key_seed<K: serde::de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        use serde::de::{Error, IntoDeserializer};
        if self.added == 0 {
            if let Some(key) = self.inner.next_key::<String>()? {
                if STREAM_ENDS.contains(&key.as_str()) {
                    return Err(A::Error::custom(format!(
                        "`{key}` is not a setting of a conference's streams: the conference gives each \
                         stream its name and ends (participants, source, sfu, via)"
                    )));
                }
                return seed.deserialize(key.into_deserializer()).map(Some);
            }
        }
        let Some(&end) = ADDED_ENDS.get(self.added) else { return Ok(None) };
        self.added += 1;
        seed.deserialize(end.into_deserializer()).map(Some)
    }

    fn next_value_seed<V: serde::de::DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        use serde::de::IntoDeserializer;
        if self.added > 0 {
            return seed.deserialize("".into_deserializer());
        }
        self.inner.next_value_seed(seed)
    }
}

impl Serialize for StreamSettings {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut table = toml::Table::try_from(&self.0).map_err(serde::ser::Error::custom)?;
        for end in STREAM_ENDS {
            table.remove(end);
        }
        table.serialize(s)
    }
}

/// A pause of a call's media, from `from` until `to`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PauseSpec {
    pub from: Duration,
    pub to: Duration,
    /// Whether audio pauses too (default) or keeps flowing.
    #[serde(default = "yes")]
    pub audio: bool,
}

/// The ECN field a sender sets (RFC 3168 §5, RFC 9331 for ECT(1) as the L4S identifier).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum EcnCodepoint {
    NotEct,
    Ect0,
    Ect1,
}

/// TCP congestion control of a competing flow (`docs/tcp.md`).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum TcpCc {
    /// RFC 5681 with RFC 6582 recovery: "default TCP" in RFC 8867 §5.6-5.7.
    Newreno,
    /// RFC 9438 with HyStart++ (RFC 9406): Linux's default.
    #[default]
    Cubic,
    /// TCP Prague (draft-briscoe-iccrg-prague-congestion-control-04): L4S's scalable congestion
    /// control, ECT(1) with Accurate ECN feedback (RFC 9331 §4, RFC 9768), paced.
    Prague,
    /// BBR v1 (draft-cardwell-iccrg-bbr-congestion-control-00) as Linux's `tcp_bbr`, paced;
    /// it ignores ECN, so `ecn = true` is refused.
    Bbr,
}

/// One or more TCP flows between two nodes, ACKed over the way back.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TcpSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub from: String,
    pub to: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc: Option<Param<TcpCc>>,
    /// How many identical flows (RFC 8867 §5.7: 10 short flows). Default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Duration>,
    /// Delayed ACKs at the receiver (default on, as Linux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delayed_ack: Option<bool>,
    /// What the application sends (default: a long flow, always backlogged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadSpec>,
    /// Linux's TCP Small Queues against the flow's first link (default off): the sender keeps
    /// at most max(2 packets, ~1 ms at its pacing rate) in that link's queue. Turn it on when
    /// the first link stands for a shaper on the sending host itself (`tc` on its egress), as in
    /// the testbed of Guerrero Viveros 2019 (seed 000), or when the flow leaves a Wi-Fi station
    /// (its MAC queues are the host's own; a packet leaves them when the AP acknowledges it);
    /// off, the first link is in the network and TCP fills its queue (`docs/tcp.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub small_queues: Option<bool>,
    /// ECN (`docs/tcp.md`): NewReno and CUBIC with `true` send ECT(0) and respond to CE as RFC
    /// 3168 says (default off); Prague always uses L4S ECN (ECT(1), AccECN), so `true` or absent;
    /// BBR v1 does not respond to ECN, so `false` or absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecn: Option<bool>,
}

impl TcpSpec {
    /// The name of the group: `name`, or `tcp<i>` for the `i`-th `[[tcp]]`.
    pub fn group_name(&self, i: usize) -> String {
        self.name.clone().unwrap_or_else(|| format!("tcp{i}"))
    }

    /// The name of flow `k` of the group (the group's name when it has one flow); its ACKs are
    /// `<name>.ack`.
    pub fn flow_name(&self, i: usize, k: u32) -> String {
        let group = self.group_name(i);
        if self.count.unwrap_or(1) == 1 {
            group
        } else {
            format!("{group}.{k}")
        }
    }
}

/// A TCP flow's application.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum WorkloadSpec {
    /// Always has data to send (a long download).
    Bulk,
    /// On/off downloads (RFC 8868 §5.1, RFC 8867 §5.7): bursts of `files` files with sizes
    /// uniform in [`size_min`, `size_max`], separated by exponential idle times of mean
    /// `idle_mean`. `initially_on` of the group's flows start with a burst, the others idle.
    Short {
        size_min: DataSize,
        size_max: DataSize,
        idle_mean: Duration,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        files: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        initially_on: Option<u32>,
    },
}

/// A constant-bit-rate UDP flow.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CbrSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub from: String,
    pub to: String,
    pub rate: Param<Bitrate>,
    /// Bytes on the wire per packet (default 1200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packet_size: Option<DataSize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Duration>,
}

impl CbrSpec {
    /// The flow's name: `name`, or `cbr<i>` for the `i`-th `[[cbr]]`.
    pub fn name_or_default(&self, i: usize) -> String {
        self.name.clone().unwrap_or_else(|| format!("cbr{i}"))
    }
}

/// The video source (RFC 8593 statistical model). Defaults: RFC 8867 §4.3.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct VideoSpec {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<Param<Bitrate>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<Param<Bitrate>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<Param<Bitrate>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fps: Option<f64>,
    /// The camera's resolution, "WIDTHxHEIGHT" (default "1280x720"): the top of the encoder's
    /// resolution ladder (`rtcbench_media::resolution`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub camera: Option<Resolution>,
    /// The video codec (default `"vp8"`). The simulator and the emulation's media agents model
    /// VP8 (RFC 7741's payload descriptor, libvpx-like frame sizes) and refuse another; a browser
    /// run (`--mode browser`) makes Chromium send the one named here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codec: Option<VideoCodec>,
    /// What a real encoder encodes in `--mode gstreamer` (default `"noise-clip"`, the picture the
    /// browsers' cameras play). The model's frame sizes do not depend on a picture, so the
    /// simulator and the emulation leave it unused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub picture: Option<Picture>,
    /// How a browser's encoder gives way when the rate falls short (default: the browser's own,
    /// `balanced`): WebRTC's `RTCDegradationPreference`, which a browser run sets on the video
    /// sender (`RTCRtpSender.setParameters`). The GStreamer stack scales its picture down the
    /// model's resolution ladder with `maintain-framerate` and keeps the camera's resolution
    /// otherwise (it refuses `balanced`); the model's encoder always follows the ladder, so the
    /// simulator and the emulation leave it unused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degradation: Option<Degradation>,
}

/// What a browser's encoder keeps when the rate falls short (W3C WebRTC Extensions,
/// `RTCDegradationPreference`).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Degradation {
    /// Lower the frame rate and the resolution in turn (the browsers' default).
    Balanced,
    /// Keep the frame rate: lower the resolution.
    MaintainFramerate,
    /// Keep the resolution: lower the frame rate.
    MaintainResolution,
}

/// The picture a real encoder encodes (`--mode gstreamer`, docs/gstreamer.md).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Picture {
    /// A moving luma gradient under fresh noise of ±24 levels: the clip the browsers' cameras
    /// play (`rtcbench.browser.chromium.noise_clip`), hard to predict yet codable at a low rate.
    #[default]
    NoiseClip,
    /// `videotestsrc pattern=snow`: full-range white noise in every frame, the picture of
    /// Sjölund and Kevo 2022.
    Snow,
}

/// A video codec a call can ask for.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum VideoCodec {
    #[default]
    Vp8,
    Vp9,
    H264,
    Av1,
}

/// A video resolution written "1280x720".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resolution {
    pub width: u16,
    pub height: u16,
}

impl<'de> Deserialize<'de> for Resolution {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let parsed =
            text.split_once('x').and_then(|(w, h)| Some((w.trim().parse().ok()?, h.trim().parse().ok()?)));
        match parsed {
            Some((width, height)) if width > 0 && height > 0 => Ok(Self { width, height }),
            _ => Err(serde::de::Error::custom(format!(
                "cannot read {text:?} as a resolution: expected WIDTHxHEIGHT in pixels, e.g. \"1280x720\""
            ))),
        }
    }
}

impl Serialize for Resolution {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        format!("{}x{}", self.width, self.height).serialize(s)
    }
}

/// The audio source: CBR. Defaults: RFC 8867 §4.3 (20 kbit/s), 20 ms packets.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AudioSpec {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Bitrate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packet_interval: Option<Duration>,
}

/// Feedback timing.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FeedbackSpec {
    /// Interval of transport-wide congestion control feedback (default 50 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub twcc_interval: Option<Duration>,
    /// Interval of RFC 8888 congestion-control feedback, for controllers that use it (default:
    /// the controller's own, e.g. RFC 8698's 100 ms for NADA).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ccfb_interval: Option<Duration>,
    /// Interval of RTCP sender and receiver reports (default 1 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_interval: Option<Duration>,
}

fn yes() -> bool {
    true
}
