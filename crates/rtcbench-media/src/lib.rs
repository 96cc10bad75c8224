//! Synthetic media for rtcbench: what a WebRTC sender puts on the wire and what its receiver makes
//! of it, as sans-IO state machines.
//!
//! * [`video`]: the RFC 8593 §5 statistical video encoder, meeting RFC 8867 §4.3's accuracy
//!   (±5 % over 1 s) and responsiveness (100 ms) requirements.
//! * [`encoder`]: a sender's encoder, that model or a real one outside (GStreamer's) whose
//!   frames its host pushes in.
//! * [`audio`]: RFC 8867 §4.3's CBR audio (20 kbit/s in 20 ms frames).
//! * [`packetizer`]: libwebrtc-style equal split of a frame into RTP payloads.
//! * [`pacer`]: a leaky-bucket pacer with audio priority, a queue-time limit and probe clusters,
//!   modelled on libwebrtc's `PacingController`.
//! * [`receiver`]: frame completeness from RTP headers, and WebRTC's freeze metric.
//! * [`fec`]: ULPFEC at the sender as libwebrtc runs it: the protection level from loss and RTT,
//!   and which media packets each FEC packet protects.
//! * [`nack`]: the receiver's NACK list with libwebrtc's timing.
//! * [`history`]: the sender's packet history for retransmissions, the retransmission rate limit
//!   and the protection overhead taken from the encoder's target.
//! * [`playout`]: a video stream's receive side: assembly, NACKs, decoding in order with the
//!   frame-dependency rule, keyframe requests, rendering and freezes.
//! * [`resolution`]: the resolution a frame is encoded at, on libwebrtc's VP8 bitrate ladder.
//! * [`jitter`]: the receiver's video timing: jitter estimate, RTT filter, RTP-to-local clock
//!   mapping, target and current delay and render times, as libwebrtc's `VCMTiming`.
//!
//! None of these read a clock or a global random generator. Each takes `now` as an argument and
//! is polled; the drive loop is the same everywhere:
//!
//! 1. apply inputs (`set_target`, `enqueue`, `on_packet`, ...) at their time `now`;
//! 2. drain the outputs (`on_timeout` / `poll_send`) until there are none;
//! 3. wait until the earliest `poll_timeout()` and call the component again with that time.
//!
//! Random components ([`video::VideoSource`]) own a generator seeded by the caller, so a run is a
//! pure function of its inputs and seeds.

pub mod audio;
pub mod encoder;
pub mod fec;
pub mod history;
pub mod jitter;
pub mod nack;
pub mod pacer;
pub mod packetizer;
pub mod playout;
pub mod receiver;
pub mod resolution;
pub mod video;

pub use audio::{AudioConfig, AudioFrame, AudioSource};
pub use encoder::{EncodedFrame, Encoder, ExternalEncoder};
pub use pacer::{Paced, PacedOutput, Pacer, PacerConfig, ProbeCluster, ProbeInfo};
pub use packetizer::{PacketPlan, Packetizer};
pub use playout::{PlayoutStats, VideoEvent, VideoReceiver};
pub use receiver::{CompletedFrame, FrameAssembler, FreezeDetector, VideoPacket};
pub use video::{Frame, VideoConfig, VideoSource};

/// Removes the entries of an ordered map below `bound`, in order, passing each to `gone`.
/// `BTreeMap::split_off` would do it in one call but allocates a new tree each time, and the
/// receive side trims its maps once per frame or packet, nearly always by a few entries.
pub(crate) fn drop_below<V>(
    map: &mut std::collections::BTreeMap<u64, V>,
    bound: u64,
    mut gone: impl FnMut(u64, V),
) {
    while map.first_key_value().is_some_and(|(&k, _)| k < bound) {
        let (k, v) = map.pop_first().expect("a first entry");
        gone(k, v);
    }
}

/// [`drop_below`] for an ordered set.
pub(crate) fn drop_below_set(set: &mut std::collections::BTreeSet<u64>, bound: u64) {
    while set.first().is_some_and(|&k| k < bound) {
        set.pop_first();
    }
}
