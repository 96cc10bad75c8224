//! The scenario file format (serde schema). Field names are the TOML keys; every quantity is
//! written with its unit. `docs/scenarios.md` is the user-facing description of this file.
//!
//! One set of structs serves both the file as written (fields may hold sets of values, see
//! [`Param`]) and the resolved scenario of one variant, in which every `Param` is a single value
//! (`Param::One`). Only [`super::expand`] builds the latter.

use std::collections::BTreeMap;

use rtcbench_units::{Bitrate, DataSize, Duration};
use serde::{Deserialize, Serialize, Serializer};

pub use super::param::Param;

impl<T: Serialize> Serialize for Param<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::One(v) => v.serialize(s),
            Self::Many(vs, _) => vs.serialize(s),
            Self::Var(name) => s.serialize_str(&format!("${name}")),
        }
    }
}

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
    pub calls: Vec<CallSpec>,
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
}

impl ControllerParams {
    pub fn is_empty(&self) -> bool {
        self.gcc_draft.is_none()
    }
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<QueueSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<JitterSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<LossSpec>,
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

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum QueueKind {
    #[default]
    Droptail,
}

/// A queue size in bytes ("60KB") or in drain time at the current capacity ("300ms").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueSize {
    Bytes(DataSize),
    Time(Duration),
}

impl<'de> Deserialize<'de> for QueueSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        if let Ok(t) = text.parse::<Duration>() {
            return Ok(Self::Time(t));
        }
        text.parse::<DataSize>().map(Self::Bytes).map_err(|_| {
            serde::de::Error::custom(format!(
                "cannot read {text:?} as a queue size: expected a drain time (\"300ms\") or bytes (\"60KB\")"
            ))
        })
    }
}

impl Serialize for QueueSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Bytes(b) => b.serialize(s),
            Self::Time(t) => t.serialize(s),
        }
    }
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSpec {
    #[serde(default)]
    pub kind: QueueKind,
    pub size: Param<QueueSize>,
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
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CallSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub from: String,
    pub to: String,
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
