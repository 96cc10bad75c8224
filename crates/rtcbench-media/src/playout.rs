//! The receive side of a video stream, from RTP packets to rendered frames, as libwebrtc's video
//! receive stream does it (video/rtp_video_stream_receiver2.cc, video/video_receive_stream2.cc,
//! modules/video_coding/frame_buffer3):
//!
//! 1. **Assembly** ([`FrameAssembler`]): packets become complete frames, in any order.
//! 2. **Loss repair** ([`NackRequester`], optional): missing packets are requested with NACKs.
//! 3. **Decoding in order with a dependency rule.** A keyframe decodes on its own; a delta frame
//!    needs the frame before it (the one whose last packet precedes its first) to be decoded, the
//!    reference structure of a single-layer VP8 stream found from sequence numbers as libwebrtc's
//!    `RtpSeqNumOnlyRefFinder` does. A complete keyframe newer than an undecodable gap is decoded
//!    at once and every frame before it dropped (frame_buffer3 drops what precedes the next
//!    decodable temporal unit). A decoded frame is rendered at once (no playout delay yet), and
//!    [`FreezeDetector`] judges the gap before it.
//! 4. **Keyframe requests**: when no frame could be decoded for [`MAX_WAIT_FOR_FRAME`] while
//!    packets keep arriving (within [`INACTIVE_AFTER`]) and no keyframe is arriving (a keyframe
//!    packet within the last [`MAX_WAIT_FOR_KEYFRAME`]), as `VideoReceiveStream2` does on its
//!    decodable-frame timeout (`HandleFrameBufferTimeout`), and again every
//!    [`MAX_WAIT_FOR_FRAME`] while that lasts (libwebrtc waits only [`MAX_WAIT_FOR_KEYFRAME`]
//!    after a decoding error, which the model never has); when the first complete frame is not a
//!    keyframe; and when the NACK list overflows.
//!
//! Sans-IO like the rest of the crate: inputs with `now`, [`VideoReceiver::poll_event`] for what
//! to do, [`VideoReceiver::poll_timeout`] for when to call again.

use std::collections::{BTreeMap, VecDeque};

use rtcbench_units::{Duration, Instant};

use crate::nack::NackRequester;
use crate::receiver::{CompletedFrame, FrameAssembler, FreezeDetector};

/// libwebrtc `kMaxWaitForFrame`: no decodable frame for this long asks for a keyframe.
pub const MAX_WAIT_FOR_FRAME: Duration = Duration::from_secs(3);
/// libwebrtc `kMaxWaitForKeyFrame`.
pub const MAX_WAIT_FOR_KEYFRAME: Duration = Duration::from_millis(200);
/// libwebrtc's `VideoReceiveStream2` asks for keyframes only for a stream that received a packet
/// within the last 5 s (`kInactiveDuration`).
pub const INACTIVE_AFTER: Duration = Duration::from_secs(5);
/// libwebrtc `kMaxFramesBuffered` (video_stream_buffer_controller.cc).
pub const MAX_FRAMES_BUFFERED: usize = 800;

/// What the receiver has to do or tell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VideoEvent {
    /// Every packet of a frame arrived.
    Completed(CompletedFrame),
    /// A frame was decoded and rendered at `at`; `freeze` if the wait for it was a freeze.
    Rendered { frame: CompletedFrame, at: Instant, freeze: bool },
    /// Request these (unwrapped) sequence numbers again (RFC 4585 generic NACK).
    Nack(Vec<u64>),
    /// Ask the sender for a keyframe (RFC 4585 PLI).
    KeyframeRequest,
}

/// Counters of a stream's receive side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlayoutStats {
    pub frames_completed: u64,
    pub frames_rendered: u64,
    /// Complete frames never decoded (their reference was lost, or a keyframe overtook them).
    pub frames_dropped: u64,
    /// Frames given up incomplete.
    pub frames_discarded: u64,
    pub nack_requests: u64,
    pub keyframe_requests: u64,
}

/// One video stream's receive side (see module docs).
#[derive(Clone, Debug)]
pub struct VideoReceiver {
    assembler: FrameAssembler,
    nack: Option<NackRequester>,
    freeze: FreezeDetector,
    /// Complete frames waiting to be decoded, by first sequence number.
    frames: BTreeMap<u64, CompletedFrame>,
    /// Last sequence number of the last decoded frame.
    last_decoded: Option<u64>,
    /// When a decodable frame was last found, or the decodable-frame timeout last fired.
    last_progress: Option<Instant>,
    last_packet: Option<Instant>,
    last_keyframe_packet: Option<Instant>,
    events: VecDeque<VideoEvent>,
    stats: PlayoutStats,
}

impl VideoReceiver {
    /// A receive side that sends NACKs if `nack`.
    pub fn new(nack: bool) -> Self {
        Self {
            assembler: FrameAssembler::new(),
            nack: nack.then(NackRequester::new),
            freeze: FreezeDetector::new(),
            frames: BTreeMap::new(),
            last_decoded: None,
            last_progress: None,
            last_packet: None,
            last_keyframe_packet: None,
            events: VecDeque::new(),
            stats: PlayoutStats::default(),
        }
    }

    /// The RTT, for the NACK timing.
    pub fn set_rtt(&mut self, rtt: Duration) {
        if let Some(n) = &mut self.nack {
            n.set_rtt(rtt);
        }
    }

    pub fn stats(&self) -> PlayoutStats {
        PlayoutStats {
            frames_completed: self.assembler.frames_completed(),
            frames_discarded: self.assembler.frames_discarded(),
            nack_requests: self.nack.as_ref().map_or(0, NackRequester::requests),
            ..self.stats
        }
    }

    /// A media packet (original, retransmitted or recovered) arrived. `recovered` if FEC rebuilt
    /// it.
    #[allow(clippy::too_many_arguments)]
    pub fn on_packet(
        &mut self,
        now: Instant,
        seq: u64,
        rtp_timestamp: u32,
        start: bool,
        end: bool,
        keyframe: bool,
        recovered: bool,
    ) {
        // The timeout re-arms itself while the stream is inactive (libwebrtc keeps waiting in
        // periods of MAX_WAIT_FOR_FRAME without asking): a stream that comes back starts a new
        // period rather than timing out at once.
        if self.last_progress.is_none_or(|since| since + MAX_WAIT_FOR_FRAME <= now) {
            self.last_progress = Some(now);
        }
        self.last_packet = Some(now);
        if keyframe {
            self.last_keyframe_packet = Some(now);
        }
        if let Some(nack) = &mut self.nack {
            let r = nack.on_packet(now, seq, keyframe && start, recovered);
            if !r.nack.is_empty() {
                self.events.push_back(VideoEvent::Nack(r.nack));
            }
            if r.keyframe_request {
                self.request_keyframe();
            }
        }
        if let Some(frame) = self.assembler.on_packet(now, seq, rtp_timestamp, start, end, keyframe) {
            self.events.push_back(VideoEvent::Completed(frame));
            if self.last_decoded.is_none() && self.assembler.frames_completed() == 1 && !frame.keyframe {
                // Frames before a keyframe cannot be decoded: ask for one at once.
                self.request_keyframe();
            }
            if self.last_decoded.is_none_or(|d| frame.first_seq > d) {
                self.frames.insert(frame.first_seq, frame);
                while self.frames.len() > MAX_FRAMES_BUFFERED {
                    self.frames.pop_first();
                    self.stats.frames_dropped += 1;
                }
            }
            self.decode(now);
        }
    }

    /// The earliest instant something is due.
    pub fn poll_timeout(&self) -> Instant {
        let nack = self.nack.as_ref().map_or(Instant::FAR_FUTURE, NackRequester::poll_timeout);
        nack.min(self.decode_deadline())
    }

    pub fn on_timeout(&mut self, now: Instant) {
        if let Some(nack) = &mut self.nack {
            if nack.poll_timeout() <= now {
                let batch = nack.on_timeout(now);
                if !batch.is_empty() {
                    self.events.push_back(VideoEvent::Nack(batch));
                }
            }
        }
        if self.decode_deadline() <= now {
            self.last_progress = Some(now);
            let active = self.last_packet.is_some_and(|t| now - t < INACTIVE_AFTER);
            let keyframe_arriving =
                self.last_keyframe_packet.is_some_and(|t| now - t < MAX_WAIT_FOR_KEYFRAME);
            if active && !keyframe_arriving {
                self.request_keyframe();
            }
        }
    }

    /// What to do next, in order.
    pub fn poll_event(&mut self) -> Option<VideoEvent> {
        self.events.pop_front()
    }

    fn decode_deadline(&self) -> Instant {
        let Some(since) = self.last_progress else { return Instant::FAR_FUTURE };
        if self.last_packet.is_some_and(|t| since - t >= INACTIVE_AFTER) {
            return Instant::FAR_FUTURE;
        }
        since + MAX_WAIT_FOR_FRAME
    }

    fn request_keyframe(&mut self) {
        self.stats.keyframe_requests += 1;
        self.events.push_back(VideoEvent::KeyframeRequest);
    }

    /// Decodes and renders every frame that has become decodable.
    fn decode(&mut self, now: Instant) {
        loop {
            let continuing = self.last_decoded.and_then(|d| self.frames.get(&(d + 1))).copied();
            let next = continuing.or_else(|| self.frames.values().find(|f| f.keyframe).copied());
            let Some(frame) = next else { break };
            let skipped = self.frames.range(..frame.first_seq).count();
            self.stats.frames_dropped += skipped as u64;
            self.frames = self.frames.split_off(&(frame.first_seq + 1));
            self.last_decoded = Some(frame.last_seq);
            self.last_progress = Some(now);
            self.assembler.clear_to(frame.last_seq + 1);
            if let Some(nack) = &mut self.nack {
                nack.clear_up_to(frame.last_seq);
            }
            let freeze = self.freeze.on_frame(now);
            self.stats.frames_rendered += 1;
            self.events.push_back(VideoEvent::Rendered { frame, at: now, freeze });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames of `n` packets each from sequence number `seq0`: (seq, ts, start, end, key).
    fn frames(seq0: u64, count: u64, n: u64, key_every: u64) -> Vec<(u64, u32, bool, bool, bool)> {
        let mut out = Vec::new();
        for f in 0..count {
            for p in 0..n {
                out.push((seq0 + f * n + p, 3000 * f as u32, p == 0, p == n - 1, f % key_every == 0));
            }
        }
        out
    }

    fn run(rx: &mut VideoReceiver, pkts: &[(u64, u32, bool, bool, bool)], t0: i64) -> Vec<VideoEvent> {
        let mut events = Vec::new();
        for (i, &(seq, ts, s, e, k)) in pkts.iter().enumerate() {
            rx.on_packet(Instant::from_millis(t0 + i as i64), seq, ts, s, e, k, false);
            events.extend(std::iter::from_fn(|| rx.poll_event()));
        }
        events
    }

    fn rendered(events: &[VideoEvent]) -> Vec<u32> {
        events
            .iter()
            .filter_map(|e| match e {
                VideoEvent::Rendered { frame, .. } => Some(frame.rtp_timestamp),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_lost_packet_stalls_later_delta_frames_until_repaired() {
        let mut rx = VideoReceiver::new(true);
        let mut pkts = frames(100, 4, 2, 100);
        let lost = pkts.remove(3); // frame 1's second packet
        let events = run(&mut rx, &pkts, 0);
        assert_eq!(rendered(&events), vec![0], "frames 2 and 3 need frame 1");
        assert!(events.contains(&VideoEvent::Nack(vec![103])));
        // The retransmission arrives: frames 1, 2, 3 render together.
        let events = run(&mut rx, &[lost], 50);
        assert_eq!(rendered(&events), vec![3000, 6000, 9000]);
        assert_eq!(rx.stats().frames_rendered, 4);
        assert_eq!(rx.stats().frames_dropped, 0);
    }

    #[test]
    fn without_nack_a_loss_waits_for_a_keyframe() {
        let mut rx = VideoReceiver::new(false);
        let mut pkts = frames(0, 10, 1, 5); // keyframes at frames 0 and 5
        pkts.remove(2);
        let events = run(&mut rx, &pkts, 0);
        assert_eq!(rendered(&events), vec![0, 3000, 15000, 18000, 21000, 24000, 27000]);
        assert_eq!(rx.stats().frames_dropped, 2, "frames 3 and 4 were complete but undecodable");
        assert!(!events.iter().any(|e| matches!(e, VideoEvent::Nack(_))));
    }

    #[test]
    fn no_decodable_frame_for_three_seconds_asks_for_a_keyframe_and_again_every_three() {
        let mut rx = VideoReceiver::new(false);
        let mut pkts = frames(0, 3, 1, 1000);
        pkts.remove(1);
        run(&mut rx, &pkts, 0);
        assert_eq!(rx.poll_timeout(), Instant::from_millis(3000));
        // Packets keep arriving (undecodable deltas), so the stream is active.
        for t in (100..3000).step_by(100) {
            rx.on_packet(
                Instant::from_millis(t),
                3 + t as u64 / 100,
                9000 + t as u32,
                true,
                true,
                false,
                false,
            );
        }
        while rx.poll_event().is_some() {}
        rx.on_timeout(Instant::from_millis(3000));
        assert_eq!(rx.poll_event(), Some(VideoEvent::KeyframeRequest));
        assert_eq!(rx.poll_timeout(), Instant::from_millis(6000));
        // Still undecodable deltas; a keyframe packet arriving holds the next request back.
        rx.on_packet(Instant::from_millis(5900), 40, 50_000, true, false, true, false);
        rx.on_timeout(Instant::from_millis(6000));
        assert_eq!(rx.poll_event(), None);
        rx.on_timeout(Instant::from_millis(9000));
        assert_eq!(rx.poll_event(), Some(VideoEvent::KeyframeRequest));
        assert_eq!(rx.stats().keyframe_requests, 2);
    }

    #[test]
    fn a_paused_stream_asks_once_and_not_when_it_resumes() {
        let mut rx = VideoReceiver::new(false);
        run(&mut rx, &frames(0, 2, 1, 2), 0);
        rx.on_timeout(Instant::from_millis(3001));
        rx.on_timeout(Instant::from_millis(6001));
        let requests = |rx: &mut VideoReceiver| {
            std::iter::from_fn(|| rx.poll_event()).filter(|e| *e == VideoEvent::KeyframeRequest).count()
        };
        assert_eq!(requests(&mut rx), 1);
        assert_eq!(rx.poll_timeout(), Instant::FAR_FUTURE, "no packet for 5 s: inactive");
        // The media comes back 20 s later, continuing where it stopped: decoded, no request.
        let events = run(&mut rx, &[(2, 6000, true, true, false)], 20_000);
        assert_eq!(rendered(&events), vec![6000]);
        assert_eq!(requests(&mut rx), 0);
        assert_eq!(rx.poll_timeout(), Instant::from_millis(23_000));
    }

    #[test]
    fn a_first_delta_frame_asks_for_a_keyframe_at_once() {
        let mut rx = VideoReceiver::new(true);
        let mut pkts = frames(0, 3, 1, 1000);
        pkts.remove(0);
        let events = run(&mut rx, &pkts, 0);
        assert!(events.contains(&VideoEvent::KeyframeRequest));
        assert!(rendered(&events).is_empty());
    }
}
