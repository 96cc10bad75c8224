//! Where a sender's video frames come from: the RFC 8593 model ([`VideoSource`]), or a real
//! encoder outside the state machine ([`ExternalEncoder`], e.g. GStreamer's `vp8enc` in the
//! GStreamer stack, docs/gstreamer.md).
//!
//! An external encoder stays sans-IO on this side: its host pushes each frame the real encoder
//! produced, with the instant it left the encoder, and reads back what the sender asked of the
//! encoder (a new target, a keyframe) to apply it. Nothing here reads a clock.

use std::collections::VecDeque;

use rtcbench_units::{Bitrate, DataSize, Instant};

use crate::video::{Frame, VideoConfig, VideoSource};

/// A sender's video encoder.
#[derive(Clone, Debug)]
pub enum Encoder {
    /// The RFC 8593 statistical model.
    Model(VideoSource),
    /// Frames from a real encoder, pushed in by the host.
    External(ExternalEncoder),
}

impl Encoder {
    pub fn config(&self) -> &VideoConfig {
        match self {
            Self::Model(v) => v.config(),
            Self::External(e) => &e.cfg,
        }
    }

    pub fn set_target(&mut self, now: Instant, target: Bitrate) {
        match self {
            Self::Model(v) => v.set_target(now, target),
            Self::External(e) => e.set_target(target),
        }
    }

    pub fn request_keyframe(&mut self) {
        match self {
            Self::Model(v) => v.request_keyframe(),
            Self::External(e) => e.keyframe_requested = true,
        }
    }

    pub fn poll_timeout(&self) -> Instant {
        match self {
            Self::Model(v) => v.poll_timeout(),
            Self::External(e) => e.frames.front().map_or(Instant::FAR_FUTURE, |f| f.ready),
        }
    }

    pub fn on_timeout(&mut self, now: Instant) -> Option<Frame> {
        match self {
            Self::Model(v) => v.on_timeout(now),
            Self::External(e) => {
                if e.frames.front().is_some_and(|f| f.ready <= now) {
                    e.frames.pop_front()
                } else {
                    None
                }
            }
        }
    }
}

/// A real encoder's frames and the requests for it. The sender asks for targets as it asks the
/// model (clamped to the call's [min, max]); the host applies them to the real encoder, whose
/// own rate control then decides the frame sizes.
#[derive(Clone, Debug)]
pub struct ExternalEncoder {
    cfg: VideoConfig,
    frames: VecDeque<Frame>,
    next_index: u64,
    /// The target last asked for, and whether the host has yet to apply it.
    target: Bitrate,
    target_pending: bool,
    keyframe_requested: bool,
}

/// One frame as the real encoder delivered it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EncodedFrame {
    /// When the camera (or test source) captured it: what its RTP timestamp encodes.
    pub capture: Instant,
    /// When it left the encoder.
    pub ready: Instant,
    pub size: DataSize,
    pub keyframe: bool,
    pub width: u16,
    pub height: u16,
}

impl ExternalEncoder {
    /// An encoder with the call's video settings (`cfg.start_rate` is the first target, which
    /// the host reads with [`Self::take_target`] before the first frame).
    pub fn new(cfg: VideoConfig) -> Self {
        let target = cfg.start_rate.clamp(cfg.min_rate, cfg.max_rate);
        Self {
            cfg,
            frames: VecDeque::new(),
            next_index: 0,
            target,
            target_pending: true,
            keyframe_requested: false,
        }
    }

    /// A frame the real encoder produced; frames are numbered in the order pushed.
    pub fn push(&mut self, f: EncodedFrame) {
        self.frames.push_back(Frame {
            index: self.next_index,
            capture: f.capture,
            ready: f.ready,
            size: f.size,
            keyframe: f.keyframe,
            target: self.target,
            width: f.width,
            height: f.height,
        });
        self.next_index += 1;
    }

    fn set_target(&mut self, target: Bitrate) {
        let target = target.clamp(self.cfg.min_rate, self.cfg.max_rate);
        if target != self.target {
            self.target = target;
            self.target_pending = true;
        }
    }

    /// The target to apply to the real encoder, once per change.
    pub fn take_target(&mut self) -> Option<Bitrate> {
        std::mem::take(&mut self.target_pending).then_some(self.target)
    }

    /// Whether the real encoder should make its next frame a keyframe (a receiver's PLI or FIR),
    /// once per request.
    pub fn take_keyframe_request(&mut self) -> bool {
        std::mem::take(&mut self.keyframe_requested)
    }

    pub fn config(&self) -> &VideoConfig {
        &self.cfg
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtcbench_units::Duration;

    fn frame(ms: i64, bytes: u64) -> EncodedFrame {
        let t = Instant::ZERO + Duration::from_millis(ms);
        EncodedFrame {
            capture: t,
            ready: t + Duration::from_millis(5),
            size: DataSize::bytes(bytes),
            keyframe: false,
            width: 640,
            height: 360,
        }
    }

    #[test]
    fn frames_leave_in_order_at_their_ready_instant() {
        let mut enc = Encoder::External(ExternalEncoder::new(VideoConfig::default()));
        assert_eq!(enc.poll_timeout(), Instant::FAR_FUTURE);
        let Encoder::External(e) = &mut enc else { unreachable!() };
        e.push(frame(0, 3000));
        e.push(frame(33, 1200));
        assert_eq!(enc.poll_timeout(), Instant::ZERO + Duration::from_millis(5));
        assert_eq!(enc.on_timeout(Instant::ZERO + Duration::from_millis(4)), None);
        let both = Instant::ZERO + Duration::from_millis(40);
        let first = enc.on_timeout(both).expect("first frame");
        let second = enc.on_timeout(both).expect("second frame");
        assert_eq!((first.index, first.size.as_bytes()), (0, 3000));
        assert_eq!((second.index, second.size.as_bytes()), (1, 1200));
        assert_eq!(enc.on_timeout(both), None);
    }

    #[test]
    fn targets_are_clamped_and_handed_over_once_per_change() {
        let cfg = VideoConfig {
            min_rate: Bitrate::kbps(150),
            max_rate: Bitrate::kbps(1500),
            ..VideoConfig::default()
        };
        let mut enc = Encoder::External(ExternalEncoder::new(cfg));
        let now = Instant::ZERO;
        let Encoder::External(e) = &mut enc else { unreachable!() };
        assert_eq!(e.take_target(), Some(Bitrate::kbps(150)), "the start rate first");
        assert_eq!(e.take_target(), None);
        enc.set_target(now, Bitrate::kbps(5000));
        enc.set_target(now, Bitrate::kbps(4000));
        let Encoder::External(e) = &mut enc else { unreachable!() };
        assert_eq!(e.take_target(), Some(Bitrate::kbps(1500)));
        enc.set_target(now, Bitrate::kbps(1500));
        enc.request_keyframe();
        let Encoder::External(e) = &mut enc else { unreachable!() };
        assert_eq!(e.take_target(), None, "an unchanged target is not handed over again");
        assert!(e.take_keyframe_request());
        assert!(!e.take_keyframe_request());
    }
}
