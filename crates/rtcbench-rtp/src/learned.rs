//! What a call's receiver tells a learned estimator about each RTP packet
//! (`rtcbench_cc::learned::LearnedEstimator`): its class (video, audio, probing padding, or a
//! repair) and the stream and sequence number it counts for loss under, read from the packet as
//! the receiver parses it. `rtcbench.learned.observations` classifies a run's packets table the
//! same way (docs/learned.md, "The observation").

use rtcbench_cc::learned::PacketClass;
use rtcbench_wire::red::RedHeaderRepr;
use rtcbench_wire::rtp::RtpHeaderRepr;
use rtcbench_wire::rtx::rtx_osn;

use crate::call::{StreamIds, PT_AUDIO, PT_RED, PT_ULPFEC, PT_VIDEO};

/// The class of packet `h` (`payload`: what follows its header) and the (stream, sequence
/// number) it counts for loss under, if any:
///
/// * video (PT 96, or RED with a video primary): video, on the video stream;
/// * RED/ULPFEC on the video stream: a repair that takes the video stream's numbers, so it fills
///   the gap it would otherwise leave;
/// * a retransmission (RTX with the original's frame marking): a repair, counted under the video
///   stream's number it carries (RFC 4588 §4), so it arrives late and counts nothing again;
/// * RTX padding (no frame marking): probing, counted for no loss;
/// * audio: audio, on the audio stream; FlexFEC (its own stream) and anything else: a repair,
///   counted for no loss.
pub(crate) fn classify(
    ids: &StreamIds,
    h: &RtpHeaderRepr,
    payload: &[u8],
) -> (PacketClass, Option<(u32, u16)>) {
    let seq = h.seq.value() as u16;
    if h.ssrc == ids.video_ssrc {
        let class = match h.payload_type {
            PT_VIDEO => PacketClass::Video,
            PT_RED => match RedHeaderRepr::parse(payload) {
                Ok(red) if red.primary_pt == PT_ULPFEC => PacketClass::Other,
                _ => PacketClass::Video,
            },
            _ => PacketClass::Other,
        };
        (class, Some((ids.video_ssrc, seq)))
    } else if h.ssrc == ids.audio_ssrc && h.payload_type == PT_AUDIO {
        (PacketClass::Audio, Some((ids.audio_ssrc, seq)))
    } else if h.ssrc == ids.rtx_ssrc && h.frame_marking.is_some() {
        (PacketClass::Other, rtx_osn(payload).ok().map(|osn| (ids.video_ssrc, osn)))
    } else if h.ssrc == ids.rtx_ssrc {
        (PacketClass::Probe, None)
    } else {
        (PacketClass::Other, None)
    }
}
