//! The receive side of a video stream, from RTP packets to rendered frames, as libwebrtc's video
//! receive stream does it (video/rtp_video_stream_receiver2.cc, video/video_receive_stream2.cc,
//! modules/video_coding/frame_buffer3):
//!
//! 1. **Assembly** ([`FrameAssembler`]): packets become complete frames, in any order.
//! 2. **Loss repair** ([`NackRequester`], optional): missing packets are requested with NACKs.
//! 3. **Decoding in order with a dependency rule.** A keyframe decodes on its own; a delta frame
//!    needs the frame before it to be decoded, the reference structure of a single-layer VP8
//!    stream. The frame before is the one with the previous picture ID when packets carry one
//!    (libwebrtc's `RtpVp8RefFinder`; FEC packets may sit between two frames' sequence numbers),
//!    else the one whose last packet precedes its first (`RtpSeqNumOnlyRefFinder`). A complete
//!    keyframe newer than an undecodable gap is decoded at once and every frame before it
//!    dropped (frame_buffer3 drops what precedes the next decodable temporal unit).
//! 4. **Playout timing** ([`crate::jitter`]): the next decodable frame waits until its render
//!    time (its expected arrival, from the RTP timestamp, plus the current delay that follows the
//!    target delay: the jitter estimate, which grows by up to an RTT once frames need
//!    retransmission, plus decode and render time) less the decode time and render delay, as
//!    libwebrtc's `FrameDecodeTiming` schedules it; it is then decoded, taking
//!    [`DECODE_TIME`], and handed to the renderer, where [`FreezeDetector`] judges the gap before
//!    it (libwebrtc counts freezes when the decoder delivers a frame; Chrome does its own render
//!    smoothing after that). A frame already late is decoded at once: in a single-layer stream
//!    every later frame needs it, so libwebrtc's dropping of a late frame for a later decodable
//!    one never applies.
//! 5. **Keyframe requests**: when no frame could be decoded for [`MAX_WAIT_FOR_FRAME`] while
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

use crate::jitter::{
    InterFrameDelayVariation, JitterEstimator, Timing, DEFAULT_RTT_MULT, DEFAULT_RTT_MULT_ADD_CAP,
};
use crate::nack::NackRequester;
use crate::receiver::{CompletedFrame, FrameAssembler, FreezeDetector, VideoPacket};

/// libwebrtc `kMaxWaitForFrame`: no decodable frame for this long asks for a keyframe.
pub const MAX_WAIT_FOR_FRAME: Duration = Duration::from_secs(3);
/// libwebrtc `kMaxWaitForKeyFrame`.
pub const MAX_WAIT_FOR_KEYFRAME: Duration = Duration::from_millis(200);
/// libwebrtc's `VideoReceiveStream2` asks for keyframes only for a stream that received a packet
/// within the last 5 s (`kInactiveDuration`).
pub const INACTIVE_AFTER: Duration = Duration::from_secs(5);
/// libwebrtc `kMaxFramesBuffered` (video_stream_buffer_controller.cc).
pub const MAX_FRAMES_BUFFERED: usize = 800;
/// The model decoder's time per frame. [ASSUMED] libwebrtc measures it (95th percentile over
/// 10 s); 5 ms is a software VP8 decoder's order of magnitude for 720p on a desktop CPU.
pub const DECODE_TIME: Duration = Duration::from_millis(5);

/// What the receiver has to do or tell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VideoEvent {
    /// Every packet of a frame arrived.
    Completed(CompletedFrame),
    /// A frame left the jitter buffer for the decoder at `decoded` and was rendered at `at`;
    /// `freeze` if the wait for it was a freeze.
    Rendered { frame: CompletedFrame, decoded: Instant, at: Instant, freeze: bool },
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
    /// Picture ID of the last decoded frame, if frames carry one.
    last_decoded_picture: Option<u64>,
    /// When a decodable frame was last found, or the decodable-frame timeout last fired.
    last_progress: Option<Instant>,
    last_packet: Option<Instant>,
    last_keyframe_packet: Option<Instant>,
    timing: Timing,
    jitter: JitterEstimator,
    delay_variation: InterFrameDelayVariation,
    /// The next decodable frame (by first sequence number), when it is due out of the decoder,
    /// and its render time.
    due: Option<(u64, Instant, Instant)>,
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
            last_decoded_picture: None,
            last_progress: None,
            last_packet: None,
            last_keyframe_packet: None,
            timing: Timing::new(Instant::ZERO, DECODE_TIME),
            jitter: JitterEstimator::new(),
            delay_variation: InterFrameDelayVariation::new(),
            due: None,
            events: VecDeque::new(),
            stats: PlayoutStats::default(),
        }
    }

    /// The RTT, for the NACK timing and the jitter buffer's allowance for retransmissions.
    pub fn set_rtt(&mut self, rtt: Duration) {
        if let Some(n) = &mut self.nack {
            n.set_rtt(rtt);
        }
        self.jitter.update_rtt(rtt);
    }

    /// The jitter buffer's delays now (libwebrtc's `VCMTiming::GetTimings`).
    pub fn target_delay(&self) -> Duration {
        self.timing.target_delay()
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
    /// it. Whether it had been NACKed is the receive side's own knowledge: `packet.nacked` is
    /// set here.
    pub fn on_packet(&mut self, now: Instant, mut packet: VideoPacket, recovered: bool) {
        let (seq, keyframe, start) = (packet.seq, packet.keyframe, packet.start);
        packet.nacked = false;
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
            packet.nacked = r.times_nacked > 0;
            if !r.nack.is_empty() {
                self.events.push_back(VideoEvent::Nack(r.nack));
            }
            if r.keyframe_request {
                self.request_keyframe();
            }
        }
        if let Some(frame) = self.assembler.on_packet(now, packet) {
            self.events.push_back(VideoEvent::Completed(frame));
            if !frame.delayed_by_retransmission {
                self.timing.incoming_timestamp(frame.rtp_timestamp, now);
            }
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

    /// A packet of the stream that carries no media arrived (an FEC packet in the video's
    /// sequence numbers): the NACK list learns that `seq` is not missing (libwebrtc
    /// `RtpVideoStreamReceiver2::NotifyReceiverOfEmptyPacket`).
    pub fn on_non_media(&mut self, now: Instant, seq: u64) {
        self.last_packet = Some(now);
        if let Some(nack) = &mut self.nack {
            let r = nack.on_packet(now, seq, false, false);
            if !r.nack.is_empty() {
                self.events.push_back(VideoEvent::Nack(r.nack));
            }
            if r.keyframe_request {
                self.request_keyframe();
            }
        }
    }

    /// The earliest instant something is due.
    pub fn poll_timeout(&self) -> Instant {
        let nack = self.nack.as_ref().map_or(Instant::FAR_FUTURE, NackRequester::poll_timeout);
        let due = self.due.map_or(Instant::FAR_FUTURE, |(_, at, _)| at);
        nack.min(self.decode_deadline()).min(due)
    }

    pub fn on_timeout(&mut self, now: Instant) {
        if self.due.is_some_and(|(_, at, _)| at <= now) {
            self.decode(now);
        }
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

    /// Decodes and renders every decodable frame that is due, and schedules the next one.
    fn decode(&mut self, now: Instant) {
        while let Some(frame) = self.next_decodable() {
            self.last_progress = Some(now);
            // libwebrtc's FrameDecodeTiming: the render time is fixed when the frame is first
            // scheduled, and decoding starts at the latest moment that still meets it.
            let (out, render) = match self.due {
                Some((first_seq, out, render)) if first_seq == frame.first_seq => (out, render),
                _ => {
                    // libwebrtc also starts over when a render time is more than 10 s off
                    // (`FrameHasBadRenderTiming`). Not wired: the model's senders never jump
                    // their clocks, and the extrapolator resets itself on a 10 s jump.
                    let render = self.timing.render_time(frame.rtp_timestamp, now);
                    let wait = self.timing.max_waiting_time(render, now).max(Duration::ZERO);
                    (now + wait + DECODE_TIME, render)
                }
            };
            if out > now {
                self.due = Some((frame.first_seq, out, render));
                return;
            }
            self.due = None;
            let decode_start = out - DECODE_TIME;
            self.release(frame, render, decode_start);
            self.render(frame, decode_start, now);
        }
        self.due = None;
    }

    /// The frame after the last decoded one if it is complete, else the oldest complete keyframe.
    fn next_decodable(&self) -> Option<CompletedFrame> {
        let continuing = match self.last_decoded_picture {
            Some(p) => self.frames.values().find(|f| f.picture_id == Some(p + 1)),
            None => self.last_decoded.and_then(|d| self.frames.get(&(d + 1))),
        };
        continuing.or_else(|| self.frames.values().find(|f| f.keyframe)).copied()
    }

    /// The frame leaves the buffer for the decoder at `decode_start`: the jitter estimate and
    /// the current delay learn from it (libwebrtc `VideoStreamBufferController::OnFrameReady`).
    fn release(&mut self, frame: CompletedFrame, render: Instant, decode_start: Instant) {
        if frame.delayed_by_retransmission {
            self.jitter.frame_nacked(decode_start);
        } else {
            if let Some(d) = self.delay_variation.calculate(frame.rtp_timestamp, frame.completed_at) {
                self.jitter.update(decode_start, d, frame.size);
            }
            let estimate =
                self.jitter.jitter_estimate(decode_start, DEFAULT_RTT_MULT, Some(DEFAULT_RTT_MULT_ADD_CAP));
            self.timing.set_jitter_delay(estimate);
            self.timing.update_current_delay_on_decode(render, decode_start);
        }
        self.timing.on_frame_decoded();
    }

    /// The frame, decoded from `decoded` on, is handed to the renderer at `now`.
    fn render(&mut self, frame: CompletedFrame, decoded: Instant, now: Instant) {
        let mut skipped = 0;
        crate::drop_below(&mut self.frames, frame.first_seq + 1, |first, _| {
            skipped += u64::from(first != frame.first_seq);
        });
        self.stats.frames_dropped += skipped;
        self.last_decoded = Some(frame.last_seq);
        self.last_decoded_picture = frame.picture_id;
        self.assembler.clear_to(frame.last_seq + 1);
        if let Some(nack) = &mut self.nack {
            nack.clear_up_to(frame.last_seq);
        }
        let freeze = self.freeze.on_frame(now);
        self.stats.frames_rendered += 1;
        self.events.push_back(VideoEvent::Rendered { frame, decoded, at: now, freeze });
    }
}

#[cfg(test)]
mod tests {
    use rtcbench_units::DataSize;

    use super::*;

    type Pkt = (u64, u32, bool, bool, bool);

    /// Frames of `n` packets each from sequence number `seq0`: (seq, ts, start, end, key).
    fn frames(seq0: u64, count: u64, n: u64, key_every: u64) -> Vec<Pkt> {
        let mut out = Vec::new();
        for f in 0..count {
            for p in 0..n {
                out.push((seq0 + f * n + p, 3000 * f as u32, p == 0, p == n - 1, f % key_every == 0));
            }
        }
        out
    }

    fn packet((seq, rtp_timestamp, start, end, keyframe): Pkt) -> VideoPacket {
        let payload = DataSize::bytes(1000);
        VideoPacket { seq, rtp_timestamp, start, end, keyframe, payload, nacked: false, picture_id: None }
    }

    /// Runs every timer due up to `until`.
    fn advance(rx: &mut VideoReceiver, until: Instant, events: &mut Vec<VideoEvent>) {
        while rx.poll_timeout() <= until {
            let t = rx.poll_timeout();
            rx.on_timeout(t);
            events.extend(std::iter::from_fn(|| rx.poll_event()));
        }
    }

    /// Feeds `pkts` one per millisecond from `t0` ms, then runs the timers for 200 ms more.
    fn run(rx: &mut VideoReceiver, pkts: &[Pkt], t0: i64) -> Vec<VideoEvent> {
        let mut events = Vec::new();
        for (i, &p) in pkts.iter().enumerate() {
            let t = Instant::from_millis(t0 + i as i64);
            advance(rx, t, &mut events);
            rx.on_packet(t, packet(p), false);
            events.extend(std::iter::from_fn(|| rx.poll_event()));
        }
        advance(rx, Instant::from_millis(t0 + pkts.len() as i64 + 200), &mut events);
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

    fn render_times(events: &[VideoEvent]) -> Vec<Instant> {
        events
            .iter()
            .filter_map(|e| match e {
                VideoEvent::Rendered { at, .. } => Some(*at),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn with_picture_ids_frames_decode_past_non_media_sequence_numbers() {
        // Frames of two packets with an FEC packet after each: 0-1 F2, 3-4 F5, 6-7 F8. F2
        // arrives, F5 is lost; the frames still follow each other by picture ID.
        let mut rx = VideoReceiver::new(true);
        let mut events = Vec::new();
        for f in 0..3u64 {
            let t = Instant::from_millis(33 * f as i64);
            advance(&mut rx, t, &mut events);
            for p in 0..2 {
                let (seq, start, end) = (3 * f + p, p == 0, p == 1);
                let pkt = VideoPacket {
                    picture_id: Some(500 + f),
                    ..packet((seq, 3000 * f as u32, start, end, f == 0))
                };
                rx.on_packet(t, pkt, false);
            }
            if f == 0 {
                rx.on_non_media(t, 2);
            }
            events.extend(std::iter::from_fn(|| rx.poll_event()));
        }
        advance(&mut rx, Instant::from_millis(400), &mut events);
        assert_eq!(rendered(&events), vec![0, 3000, 6000]);
        // The lost FEC packet is asked for (the sender will not answer); the received one is not.
        let nacked: Vec<u64> = events
            .iter()
            .filter_map(|e| match e {
                VideoEvent::Nack(s) => Some(s.clone()),
                _ => None,
            })
            .flatten()
            .collect();
        assert!(nacked.contains(&5) && !nacked.contains(&2), "{nacked:?}");
        // Without picture IDs the gap at 5 would hold frame 6-7 (the sequence-number rule).
        let mut rx = VideoReceiver::new(false);
        let pkts = [(0, 0, true, true, true), (2, 3000, true, true, false)];
        assert_eq!(rendered(&run(&mut rx, &pkts, 0)), vec![0]);
    }

    #[test]
    fn a_lost_packet_stalls_later_delta_frames_until_repaired() {
        let mut rx = VideoReceiver::new(true);
        let mut pkts = frames(100, 4, 2, 100);
        let lost = pkts.remove(3); // frame 1's second packet
        let events = run(&mut rx, &pkts, 0);
        assert_eq!(rendered(&events), vec![0], "frames 2 and 3 need frame 1");
        assert!(events.contains(&VideoEvent::Nack(vec![103])));
        // The retransmission arrives: frames 1, 2, 3 follow, one decode time apart.
        let events = run(&mut rx, &[lost], 250);
        assert_eq!(rendered(&events), vec![3000, 6000, 9000]);
        let at = render_times(&events);
        assert_eq!(at[0], Instant::from_millis(250) + DECODE_TIME);
        assert_eq!(at[2] - at[1], DECODE_TIME);
        assert_eq!(rx.stats().frames_rendered, 4);
        assert_eq!(rx.stats().frames_dropped, 0);
    }

    #[test]
    fn frames_wait_for_their_render_time() {
        // 30 fps, one packet per frame, arriving on time: each frame is rendered a fixed delay
        // after its arrival, the target delay less the render delay, once the estimate settles.
        let mut rx = VideoReceiver::new(true);
        let mut events = Vec::new();
        for f in 0..300u64 {
            let t = Instant::from_micros(33_333 * f as i64);
            advance(&mut rx, t, &mut events);
            rx.on_packet(t, packet((f, 3000 * f as u32, true, true, f == 0)), false);
        }
        advance(&mut rx, Instant::from_secs(11), &mut events);
        let at = render_times(&events);
        assert_eq!(at.len(), 300);
        let delay = at[299] - Instant::from_micros(33_333 * 299);
        // Target: jitter 1 ms floor + 10 ms operating system, decode 5 ms, render delay 10 ms.
        let t = rx.timing.timings();
        assert_eq!(rx.target_delay(), Duration::from_millis(26));
        // The current delay grew from the first jitter estimate (11 ms) by each frame's lateness
        // until frames stopped being late: at least decode + render delay, at most the target.
        assert!(t.current_delay >= DECODE_TIME + t.render_delay && t.current_delay <= t.target_delay);
        // A frame leaves the decoder the render delay before its render time.
        let expected = t.current_delay - t.render_delay;
        assert!((delay - expected).abs() <= Duration::from_millis(1), "{delay:?} vs {expected:?}");
        assert_eq!(rx.stats().frames_rendered, 300);
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
        let events = run(&mut rx, &pkts, 0);
        // Frame 0 was decoded at once (no delay yet): the timeout runs from then.
        let first = render_times(&events)[0] + MAX_WAIT_FOR_FRAME;
        assert_eq!(rx.poll_timeout(), first);
        // Packets keep arriving (undecodable deltas), so the stream is active.
        for t in (100..3000).step_by(100) {
            let p = (3 + t as u64 / 100, 9000 + t as u32, true, true, false);
            rx.on_packet(Instant::from_millis(t), packet(p), false);
        }
        while rx.poll_event().is_some() {}
        rx.on_timeout(first);
        assert_eq!(rx.poll_event(), Some(VideoEvent::KeyframeRequest));
        assert_eq!(rx.poll_timeout(), first + MAX_WAIT_FOR_FRAME);
        // Still undecodable deltas; a keyframe packet arriving holds the next request back.
        let key = (40, 50_000, true, false, true);
        rx.on_packet(first + MAX_WAIT_FOR_FRAME - Duration::from_millis(100), packet(key), false);
        rx.on_timeout(first + MAX_WAIT_FOR_FRAME);
        assert_eq!(rx.poll_event(), None);
        rx.on_timeout(first + MAX_WAIT_FOR_FRAME * 2);
        assert_eq!(rx.poll_event(), Some(VideoEvent::KeyframeRequest));
        assert_eq!(rx.stats().keyframe_requests, 2);
    }

    #[test]
    fn a_paused_stream_asks_once_and_not_when_it_resumes() {
        let mut rx = VideoReceiver::new(false);
        run(&mut rx, &frames(0, 2, 1, 2), 0);
        rx.on_timeout(Instant::from_millis(3300));
        rx.on_timeout(Instant::from_millis(6300));
        let requests = |rx: &mut VideoReceiver| {
            std::iter::from_fn(|| rx.poll_event()).filter(|e| *e == VideoEvent::KeyframeRequest).count()
        };
        assert_eq!(requests(&mut rx), 1);
        assert_eq!(rx.poll_timeout(), Instant::FAR_FUTURE, "no packet for 5 s: inactive");
        // The media comes back 20 s later, continuing where it stopped: decoded, no request.
        let events = run(&mut rx, &[(2, 6000, true, true, false)], 20_000);
        assert_eq!(rendered(&events), vec![6000]);
        assert_eq!(requests(&mut rx), 0);
        assert_eq!(rx.poll_timeout(), render_times(&events)[0] + MAX_WAIT_FOR_FRAME);
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
