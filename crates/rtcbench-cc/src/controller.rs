//! The controller trait, its typed metrics, and the closed set of built-in controllers.

use std::collections::BTreeSet;
use std::sync::{Mutex, OnceLock, PoisonError};

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

use crate::external::ExternalRate;
use crate::feedback::{FeedbackReport, ProbeCluster, SentPacket};
use crate::fixed::FixedRate;
use crate::gcc::GoogCc;
use crate::gcc_draft::GccDraft;
use crate::learned::FollowEstimate;
use crate::nada::Nada;
use crate::scream::Scream;
use crate::scream2::Scream2;

/// A sans-IO congestion controller for one media sender (all its streams share it, as in a
/// WebRTC transport). See the crate docs for the drive loop.
pub trait Controller {
    /// A packet left the sender (media, padding or probe; RTCP is not reported).
    fn on_packet_sent(&mut self, now: Instant, pkt: &SentPacket);
    /// Feedback arrived and was parsed.
    fn on_feedback(&mut self, now: Instant, report: &FeedbackReport);
    /// The sender's queue of packets waiting to be sent (its pacer / RTP queue / rate-shaping
    /// buffer) now holds `bytes`, the oldest waiting for `delay`. Reported whenever it changes
    /// notably and before each drain; NADA's rate shaping and SCReAM's media rate control use it.
    fn on_send_queue(&mut self, _now: Instant, _bytes: DataSize, _delay: Duration) {}
    /// The video encoder produced a frame of `size` payload bytes (SCReAM v2's media rate
    /// control tracks the frame period and the deviation of frame sizes from the nominal).
    fn on_media_frame(&mut self, _now: Instant, _size: DataSize) {}
    /// The deadline returned by [`Controller::poll_timeout`] has passed.
    fn on_timeout(&mut self, now: Instant);
    /// When the controller next wants [`Controller::on_timeout`]; `None` if never.
    fn poll_timeout(&self) -> Option<Instant>;
    /// The rate the media encoders should produce in total.
    fn target_rate(&self) -> Bitrate;
    /// The rate the pacer should release packets at, if the controller sets one.
    fn pacing_rate(&self) -> Option<Bitrate> {
        None
    }
    /// How far ahead of its pacing rate the pacer may let video run after an idle spell, if the
    /// controller's spec says (`None`: the pacer's own allowance, libwebrtc's 5 ms).
    fn pacing_burst(&self) -> Option<Duration> {
        None
    }
    /// A limit on bytes in flight, if the controller is window-based.
    fn congestion_window(&self) -> Option<DataSize> {
        None
    }
    /// The fraction of its rate the video encoder should shed because the congestion window is
    /// full (libwebrtc's `cwnd_reduce_ratio`; the encoder drops frames to get there). 0 if the
    /// controller has no such signal.
    fn encoder_pushback_ratio(&self) -> f64 {
        0.0
    }
    /// A probe cluster the pacer should send, if one is due.
    fn poll_probe(&mut self) -> Option<ProbeCluster> {
        None
    }
    /// The controller's internal state, for the `controller` trace table. The set of names and
    /// their kinds must not change between calls.
    fn metrics(&self) -> ControllerMetrics;
}

/// One named value of a controller's internal state, typed by unit so trace columns can carry
/// the unit in their name (`_bps`, `_ms`, `_bytes`).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Metric {
    Rate(Option<Bitrate>),
    Time(Option<Duration>),
    Size(Option<DataSize>),
    /// A dimensionless number (ratio, count, gain).
    Real(Option<f64>),
    /// A state of a state machine, by its spec name.
    State(&'static str),
}

impl Metric {
    /// What a trace column of this metric appends to its name: the unit it is stored in (`_bps`,
    /// `_bytes`, `_ms`), or nothing for ratios, counts and states (docs/traces.md).
    pub fn unit_suffix(&self) -> &'static str {
        match self {
            Self::Rate(_) => "_bps",
            Self::Size(_) => "_bytes",
            Self::Time(_) => "_ms",
            Self::Real(_) | Self::State(_) => "",
        }
    }
}

/// The internal state of a controller at one instant: (name, value) pairs in a stable order.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ControllerMetrics {
    pub values: Vec<(&'static str, Metric)>,
}

impl ControllerMetrics {
    pub fn new() -> Self {
        Self::default()
    }

    /// A metric name as `&'static str`, for controllers whose names are not (Python ones, in the
    /// simulator and in an emulated call's helper): each distinct name is leaked once per process,
    /// so memory is bounded by the names, not by the runs.
    pub fn intern(name: &str) -> &'static str {
        static NAMES: OnceLock<Mutex<BTreeSet<&'static str>>> = OnceLock::new();
        let mut names = NAMES.get_or_init(Default::default).lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(&n) = names.get(name) {
            return n;
        }
        let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
        names.insert(leaked);
        leaked
    }
    /// Adds a value; builder style.
    pub fn with(mut self, name: &'static str, value: Metric) -> Self {
        self.values.push((name, value));
        self
    }
}

/// The names users select controllers by (`--cc NAME`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ControllerKind {
    /// libwebrtc's GoogCC via the `goog_cc` crate.
    Gcc,
    /// GCC as draft-ietf-rmcat-gcc-02 specifies it (receive-side with REMB, or send-side).
    GccDraft,
    /// NADA, RFC 8698.
    Nada,
    /// SCReAM, RFC 8298.
    Scream,
    /// SCReAM v2, draft-ietf-ccwg-rfc8298bis-screamv2-01.
    Scream2,
    /// A constant rate, for testing the simulator itself.
    Fixed,
}

impl ControllerKind {
    pub const ALL: [Self; 6] =
        [Self::Gcc, Self::GccDraft, Self::Nada, Self::Scream, Self::Scream2, Self::Fixed];

    pub fn name(self) -> &'static str {
        match self {
            Self::Gcc => "gcc",
            Self::GccDraft => "gcc-draft",
            Self::Nada => "nada",
            Self::Scream => "scream",
            Self::Scream2 => "scream2",
            Self::Fixed => "fixed",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// One line for `rtcbench list`: what it is and which spec it follows.
    pub fn description(self) -> &'static str {
        match self {
            Self::Gcc => {
                "libwebrtc GoogCC (send-side GCC: trendline delay detector, AIMD, LossBasedBweV2, \
                 probing), via the goog_cc crate (port of webrtc da2a3d6c4d)"
            }
            Self::GccDraft => {
                "GCC as in draft-ietf-rmcat-gcc-02: arrival-time Kalman filter, adaptive-threshold \
                 over-use detector, AIMD, loss-based control; receive-side (REMB) or send-side (TWCC)"
            }
            Self::Nada => {
                "NADA, RFC 8698: aggregate congestion signal, accelerated ramp-up and gradual \
                 update, rate shaping buffer; RFC 8888 feedback"
            }
            Self::Scream => {
                "SCReAM, RFC 8298: self-clocked congestion window with a queuing-delay target, \
                 media rate from the RTP queue, packet pacing; RFC 8888 feedback"
            }
            Self::Scream2 => {
                "SCReAM v2, draft-ietf-ccwg-rfc8298bis-screamv2-01: reference window from loss, \
                 ECN-CE (L4S with ECT(1), classic with ECT(0)) and queue delay; RFC 8888 feedback"
            }
            Self::Fixed => "constant target rate (the start rate); no congestion control, for testing",
        }
    }
}

/// The controller a sender runs: the built-in ones, dispatched without a virtual call (the set is
/// closed), or one defined outside this crate (a Python class through rtcbench-py) behind a trait
/// object. Only the `User` arm pays for dynamic dispatch.
pub enum AnyController {
    Gcc(Box<GoogCc>),
    GccDraft(Box<GccDraft>),
    Nada(Box<Nada>),
    Scream(Box<Scream>),
    Scream2(Box<Scream2>),
    Fixed(FixedRate),
    /// A rate set from outside the run (a learning agent); not selectable by name, the simulator
    /// gives it to the one call its options name.
    External(Box<ExternalRate>),
    /// Follows a receiver-side learned estimator's REMB (`--cc onnx:MODEL`); not selectable by
    /// name, the simulator and the agents build it for a learned policy.
    Learned(Box<FollowEstimate>),
    User(Box<dyn Controller>),
}

macro_rules! dispatch {
    ($self:ident, $c:ident => $e:expr) => {
        match $self {
            AnyController::Gcc($c) => $e,
            AnyController::GccDraft($c) => $e,
            AnyController::Nada($c) => $e,
            AnyController::Scream($c) => $e,
            AnyController::Scream2($c) => $e,
            AnyController::Fixed($c) => $e,
            AnyController::External($c) => $e,
            AnyController::Learned($c) => $e,
            AnyController::User($c) => $e,
        }
    };
}

impl Controller for AnyController {
    fn on_packet_sent(&mut self, now: Instant, pkt: &SentPacket) {
        dispatch!(self, c => c.on_packet_sent(now, pkt))
    }
    fn on_feedback(&mut self, now: Instant, report: &FeedbackReport) {
        dispatch!(self, c => c.on_feedback(now, report))
    }
    fn on_send_queue(&mut self, now: Instant, bytes: DataSize, delay: Duration) {
        dispatch!(self, c => c.on_send_queue(now, bytes, delay))
    }
    fn on_media_frame(&mut self, now: Instant, size: DataSize) {
        dispatch!(self, c => c.on_media_frame(now, size))
    }
    fn on_timeout(&mut self, now: Instant) {
        dispatch!(self, c => c.on_timeout(now))
    }
    fn poll_timeout(&self) -> Option<Instant> {
        dispatch!(self, c => c.poll_timeout())
    }
    fn target_rate(&self) -> Bitrate {
        dispatch!(self, c => c.target_rate())
    }
    fn pacing_rate(&self) -> Option<Bitrate> {
        dispatch!(self, c => c.pacing_rate())
    }
    fn congestion_window(&self) -> Option<DataSize> {
        dispatch!(self, c => c.congestion_window())
    }
    fn encoder_pushback_ratio(&self) -> f64 {
        dispatch!(self, c => c.encoder_pushback_ratio())
    }
    fn pacing_burst(&self) -> Option<Duration> {
        dispatch!(self, c => c.pacing_burst())
    }
    fn poll_probe(&mut self) -> Option<ProbeCluster> {
        dispatch!(self, c => c.poll_probe())
    }
    fn metrics(&self) -> ControllerMetrics {
        dispatch!(self, c => c.metrics())
    }
}
