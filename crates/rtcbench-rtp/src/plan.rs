//! Everything a call's two endpoints are built from, resolved from the scenario and the seed
//! (`rtcbench_scenario::elements::call_plan`): the simulator builds its endpoints from it,
//! and it serialises (JSON), so a live agent builds the very same sender and receiver. Only the
//! controller is built by the owner ([`rtcbench_cc::factory::build`] with [`CallPlan::limits`]
//! and [`CallPlan::options`], or a user's own), since a user-defined controller cannot travel
//! as data.

use rtcbench_cc::factory::{ControllerOptions, FeedbackIntervals, RateLimits};
use rtcbench_cc::gcc_draft::Deployment;
use rtcbench_cc::{AnyController, ControllerKind};
use rtcbench_media::audio::{AudioConfig, AudioSource};
use rtcbench_media::video::{VideoConfig, VideoSource};
use rtcbench_units::{Bitrate, Duration, Instant};
use rtcbench_wire::Ecn;
use serde::{Deserialize, Serialize};

use crate::call::{
    audio_wire_rate, FecScheme, FeedbackMode, JitterBuffer, KeyframeRequest, Pause, Receiver, Sender,
    SenderParts, StreamIds,
};

/// One call, ready to build.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallPlan {
    /// The call's index in the scenario.
    pub call: u32,
    /// When media starts and stops, from the start of the run.
    pub start: Duration,
    pub stop: Duration,
    pub ids: StreamIds,
    pub video: Option<VideoPlan>,
    pub audio: Option<AudioPlan>,
    /// RTCP sender and receiver reports.
    pub report_interval: Duration,
    pub pauses: Vec<PausePlan>,
    /// The IP ECN field of media packets (RFC 6679), as its two bits.
    pub ecn: u8,
    /// Totals over the call's streams, as libwebrtc passes them to its controller.
    pub min_rate: Bitrate,
    pub max_rate: Bitrate,
    pub start_rate: Bitrate,
    /// The estimate may rise above `max_rate` (set by [`CallPlan::run_by`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub uncapped: bool,
    /// The priority weight (RFC 8867 §6.1).
    pub priority: f64,
    /// A seed for the controller's own random draws.
    pub controller_seed: u64,
    /// The scenario's `[controller]` options.
    pub gcc_draft_send_side: bool,
    pub scream_competing_flows_compensation: Option<bool>,
    /// The scenario's feedback intervals (`None`: the controller's default).
    pub twcc_interval: Option<Duration>,
    pub ccfb_interval: Option<Duration>,
    /// NACK and RTX retransmissions (RFC 4585, RFC 4588).
    pub nack: bool,
    /// FEC for video: ULPFEC in RED (RFC 5109, RFC 2198) or FlexFEC (RFC 8627); `None`: off.
    pub fec: Option<FecScheme>,
    /// A fixed FEC rate (FEC packets per media packet) instead of libwebrtc's choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fec_rate: Option<f64>,
    /// How the receiver asks for keyframes: PLI (as Chrome) or FIR.
    #[serde(default)]
    pub keyframe_request: KeyframeRequest,
    /// GStreamer's RTP stack's receiving jitter buffer (the scenario's `jitter_buffer`); `None`:
    /// GStreamer's own settings. Only `--mode gstreamer --cc rtpgccbwe` reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter_buffer: Option<JitterBuffer>,
}

/// The video source of a call (RFC 8593's model).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VideoPlan {
    pub fps: f64,
    pub min_rate: Bitrate,
    pub max_rate: Bitrate,
    pub start_rate: Bitrate,
    pub camera: (u16, u16),
    /// The seed of its frame-size and frame-interval draws.
    pub seed: u64,
}

/// The audio source of a call (constant rate).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AudioPlan {
    pub rate: Bitrate,
    pub packet_interval: Duration,
}

/// An interval in which the sender's media is off (RFC 8867 §5.8).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PausePlan {
    pub from: Duration,
    pub to: Duration,
    /// Audio pauses too.
    pub audio: bool,
}

fn at(d: Duration) -> Instant {
    Instant::ZERO + d
}

/// libwebrtc's lowest video encoding rate where neither the codec nor an experiment sets another
/// (`kDefaultMinVideoBitrateBps`).
pub const LIBWEBRTC_MIN_VIDEO_RATE: Bitrate = Bitrate::kbps(30);

impl CallPlan {
    pub fn start_at(&self) -> Instant {
        at(self.start)
    }

    /// The plan as a sender running `kind` is built from it. `gcc` is GoogCC as Chromium 156 runs
    /// it, where a page's `x-google-min-bitrate` and `x-google-max-bitrate` (rtcbench's browser
    /// mode puts the scenario's `video.min` and `video.max` there) are one setting of the whole
    /// transport, which every media section applied resets: in a call with audio, whose section
    /// comes after the video's and carries none, the transport has neither (measured against a
    /// TCP flow and on an idle path, with and without audio: docs/calibration.md, "The scenario's
    /// minimum and maximum in Chromium"). So under `gcc`:
    /// - the encoder's floor is libwebrtc's own ([`LIBWEBRTC_MIN_VIDEO_RATE`]) in every call;
    /// - with audio, GoogCC's floor is the least the streams can be allocated (libwebrtc's
    ///   `min_total_allocated_bitrate`, a lower bound of its estimate by default): that floor plus
    ///   the audio on the wire; and its estimate may rise above the streams' maximum;
    /// - without audio, the scenario's minimum (at least that floor) and maximum bound it.
    ///
    /// Every other controller keeps the scenario's limits.
    pub fn run_by(mut self, kind: ControllerKind) -> Self {
        if kind != ControllerKind::Gcc {
            return self;
        }
        let (asked_min, encoder_min) = match &mut self.video {
            Some(v) => {
                let asked = v.min_rate;
                v.min_rate = LIBWEBRTC_MIN_VIDEO_RATE.min(v.max_rate);
                (asked, v.min_rate)
            }
            None => (Bitrate::ZERO, Bitrate::ZERO),
        };
        self.min_rate = match &self.audio {
            Some(a) => {
                self.uncapped = true;
                encoder_min + audio_wire_rate(&self.ids, a.rate, a.packet_interval)
            }
            None => asked_min.max(encoder_min),
        }
        .min(self.max_rate);
        self
    }

    pub fn limits(&self) -> RateLimits {
        RateLimits { min: self.min_rate, max: self.max_rate, start: self.start_rate, uncapped: self.uncapped }
    }

    pub fn options(&self) -> ControllerOptions {
        ControllerOptions {
            gcc_draft_deployment: if self.gcc_draft_send_side {
                Deployment::SendSide
            } else {
                Deployment::ReceiveSide
            },
            scream_competing_flows_compensation: self.scream_competing_flows_compensation,
            ecn: Ecn::from_bits(self.ecn),
        }
    }

    pub fn intervals(&self) -> FeedbackIntervals {
        FeedbackIntervals { twcc: self.twcc_interval, ccfb: self.ccfb_interval }
    }

    /// The sending end, with `controller`.
    pub fn sender(&self, controller: AnyController) -> Sender {
        let start = self.start_at();
        let video = self.video.as_ref().map(|v| {
            let cfg = VideoConfig {
                fps: v.fps,
                min_rate: v.min_rate,
                max_rate: v.max_rate,
                start_rate: v.start_rate,
                camera: v.camera,
                ..VideoConfig::default()
            };
            VideoSource::new(cfg, v.seed, start)
        });
        let audio = self.audio.as_ref().map(|a| {
            AudioSource::new(AudioConfig { rate: a.rate, packet_interval: a.packet_interval }, start)
        });
        Sender::new(SenderParts {
            ids: self.ids,
            start,
            stop: at(self.stop),
            controller,
            video,
            audio,
            report_interval: self.report_interval,
            pauses: self
                .pauses
                .iter()
                .map(|p| Pause { from: at(p.from), to: at(p.to), audio: p.audio })
                .collect(),
            ecn: Ecn::from_bits(self.ecn),
            nack: self.nack,
            fec: self.fec,
            fec_rate: self.fec_rate,
        })
    }

    /// The receiving end, sending `feedback`.
    pub fn receiver(&self, feedback: FeedbackMode) -> Receiver {
        Receiver::new(
            self.ids,
            self.start_at(),
            feedback,
            self.report_interval,
            self.nack,
            self.fec.is_some(),
            self.keyframe_request,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_survives_json() {
        let plan = CallPlan {
            call: 0,
            start: Duration::from_millis(500),
            stop: Duration::from_secs(60),
            ids: StreamIds {
                video_ssrc: 1,
                rtx_ssrc: 2,
                audio_ssrc: 3,
                receiver_ssrc: 4,
                video_seq0: 5,
                rtx_seq0: 6,
                audio_seq0: 7,
                video_ts0: 8,
                audio_ts0: 9,
                flexfec_ssrc: 10,
                flexfec_seq0: 11,
                flexfec_ts0: 12,
            },
            video: Some(VideoPlan {
                fps: 29.97,
                min_rate: Bitrate::kbps(150),
                max_rate: Bitrate::kbps(1500),
                start_rate: Bitrate::kbps(150),
                camera: (1280, 720),
                seed: u64::MAX,
            }),
            audio: Some(AudioPlan { rate: Bitrate::kbps(20), packet_interval: Duration::from_millis(20) }),
            report_interval: Duration::from_secs(1),
            pauses: vec![PausePlan {
                from: Duration::from_secs(10),
                to: Duration::from_micros(10_500_001),
                audio: true,
            }],
            ecn: 0b10,
            min_rate: Bitrate::kbps(170),
            max_rate: Bitrate::kbps(1520),
            start_rate: Bitrate::kbps(170),
            uncapped: true,
            priority: 0.5,
            controller_seed: 42,
            gcc_draft_send_side: true,
            scream_competing_flows_compensation: None,
            twcc_interval: None,
            ccfb_interval: Some(Duration::from_millis(40)),
            nack: true,
            fec: Some(FecScheme::Flexfec),
            fec_rate: Some(0.25),
            keyframe_request: KeyframeRequest::Fir,
            jitter_buffer: Some(JitterBuffer {
                rtx_next_seqnum: Some(false),
                rtx_min_delay: Some(Duration::from_millis(20)),
            }),
        };
        let json = serde_json::to_string(&plan).unwrap();
        assert_eq!(serde_json::from_str::<CallPlan>(&json).unwrap(), plan);
        assert_eq!(plan.options().gcc_draft_deployment, Deployment::SendSide);
        assert_eq!(plan.options().ecn, Ecn::Ect0, "the call's codepoint reaches the controller");
    }
}
