//! Receiver side of a video stream: frame assembly from RTP header information, and WebRTC's
//! video freeze metric.
//!
//! [`FrameAssembler`] decides, as libwebrtc's packet buffer does, from what each RTP packet
//! carries: its (unwrapped) sequence number, RTP timestamp, the payload format's start-of-frame
//! and independent (keyframe) flags and the marker bit (end of frame). A frame is complete once its
//! start packet, its end packet and every sequence number between them have arrived, all with the
//! same RTP timestamp. Frames complete in any order: a frame missing a packet stays until a
//! retransmission completes it or its receiver gives up on it ([`FrameAssembler::clear_to`],
//! counted as discarded); which frames can be decoded is the receive side's decision
//! ([`crate::playout`]).
//!
//! [`FreezeDetector`] follows libwebrtc's `VideoQualityObserver` (video/video_quality_observer2.cc),
//! the source of `freezeCount` and `totalFreezesDuration` in W3C `getStats()`: for each rendered
//! frame the gap since the previous frame is added to a moving average over the last 30 gaps; once
//! at least 5 gaps are known, the gap is a freeze if gap ≥ max(3 × average, average + 150 ms). As
//! in libwebrtc the average includes the current gap and the comparison is "≥".

use std::collections::{BTreeMap, VecDeque};

use rtcbench_units::{DataSize, Duration, Instant};

/// Buffered packets beyond which the oldest incomplete frame is dropped, so a stream in which
/// frames never complete cannot grow the buffer without bound (libwebrtc's packet buffer holds at
/// most 2048 packets, `kPacketBufferMaxSize`).
pub const MAX_BUFFERED_PACKETS: usize = 2048;

/// What the assembler needs of one received video packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VideoPacket {
    /// Unwrapped RTP sequence number.
    pub seq: u64,
    pub rtp_timestamp: u32,
    /// The first packet of its frame (the payload format's start-of-frame flag).
    pub start: bool,
    /// The last packet of its frame (the marker bit).
    pub end: bool,
    /// A packet of an independent (key) frame.
    pub keyframe: bool,
    /// Media payload bytes.
    pub payload: DataSize,
    /// It had been requested by NACK before it arrived (libwebrtc's `times_nacked > 0`).
    pub nacked: bool,
    /// The frame's picture ID (unwrapped), when the payload format carries one (VP8, RFC 7741).
    pub picture_id: Option<u64>,
}

/// A frame whose packets have all arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompletedFrame {
    pub rtp_timestamp: u32,
    pub first_seq: u64,
    pub last_seq: u64,
    /// An independent (key) frame: it needs no other frame to decode.
    pub keyframe: bool,
    /// Arrival time of the frame's first packet to arrive: where libwebrtc's jitter-buffer delay
    /// starts counting (`jitterBufferDelay`, W3C webrtc-stats §7.5: from the ingest of the first
    /// packet of a frame to its emission).
    pub first_arrival: Instant,
    /// Arrival time of the packet that completed the frame.
    pub completed_at: Instant,
    /// Media payload bytes of all its packets.
    pub size: DataSize,
    /// At least one of its packets had been requested by NACK (libwebrtc's
    /// `delayed_by_retransmission`): its arrival says nothing about the network's jitter.
    pub delayed_by_retransmission: bool,
    /// Its picture ID (unwrapped), if its packets carry one.
    pub picture_id: Option<u64>,
}

#[derive(Clone, Copy, Debug)]
struct PacketMeta {
    rtp_timestamp: u32,
    start: bool,
    end: bool,
    keyframe: bool,
    payload: DataSize,
    nacked: bool,
    picture_id: Option<u64>,
    arrived: Instant,
}

/// Frame completeness for one video SSRC (see module docs).
#[derive(Clone, Debug, Default)]
pub struct FrameAssembler {
    /// Packets of frames not complete yet.
    packets: BTreeMap<u64, PacketMeta>,
    /// Completed frames not cleared yet: first sequence number → last.
    completed: BTreeMap<u64, u64>,
    /// Every sequence number below this one is done with (cleared).
    cleared_below: u64,
    frames_completed: u64,
    frames_discarded: u64,
    packets_ignored: u64,
    last_discarded_ts: Option<u32>,
}

impl FrameAssembler {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one received packet. Returns the frame it completes, if any. Duplicates and packets
    /// of frames already completed or cleared are ignored.
    pub fn on_packet(&mut self, now: Instant, p: VideoPacket) -> Option<CompletedFrame> {
        let seq = p.seq;
        let in_completed = self.completed.range(..=seq).next_back().is_some_and(|(_, &last)| last >= seq);
        if seq < self.cleared_below || in_completed || self.packets.contains_key(&seq) {
            self.packets_ignored += 1;
            return None;
        }
        let meta = PacketMeta {
            rtp_timestamp: p.rtp_timestamp,
            start: p.start,
            end: p.end,
            keyframe: p.keyframe,
            payload: p.payload,
            nacked: p.nacked,
            picture_id: p.picture_id,
            arrived: now,
        };
        self.packets.insert(seq, meta);
        let completed = self.complete_frame_around(seq, p.rtp_timestamp, now);
        if completed.is_none() && self.packets.len() > MAX_BUFFERED_PACKETS {
            self.drop_oldest_frame();
        }
        completed
    }

    /// Gives up on everything below `seq`: incomplete frames there count as discarded.
    pub fn clear_to(&mut self, seq: u64) {
        if seq <= self.cleared_below {
            return;
        }
        self.cleared_below = seq;
        crate::drop_below(&mut self.completed, seq, |_, _| {});
        let (discarded, last) = (&mut self.frames_discarded, &mut self.last_discarded_ts);
        crate::drop_below(&mut self.packets, seq, |_, meta| {
            if *last != Some(meta.rtp_timestamp) {
                *discarded += 1;
                *last = Some(meta.rtp_timestamp);
            }
        });
    }

    /// Frames handed out as complete.
    pub fn frames_completed(&self) -> u64 {
        self.frames_completed
    }

    /// Incomplete frames given up (at least one of their packets arrived).
    pub fn frames_discarded(&self) -> u64 {
        self.frames_discarded
    }

    /// Duplicate or too-late packets.
    pub fn packets_ignored(&self) -> u64 {
        self.packets_ignored
    }

    fn complete_frame_around(&mut self, seq: u64, ts: u32, now: Instant) -> Option<CompletedFrame> {
        let same_frame = |s: u64| self.packets.get(&s).filter(|m| m.rtp_timestamp == ts);
        // Walk back to the start packet and forward to the end packet through consecutive numbers.
        let mut first = seq;
        while !same_frame(first)?.start {
            first = first.checked_sub(1)?;
        }
        let mut last = seq;
        while !same_frame(last)?.end {
            last = last.checked_add(1)?;
        }
        let (keyframe, picture_id) = same_frame(first).map(|m| (m.keyframe, m.picture_id))?;
        // Hand the frame's packets out by dropping them.
        let (mut size, mut nacked, mut first_arrival) = (DataSize::ZERO, false, now);
        for s in first..=last {
            let meta = self.packets.remove(&s).expect("walked above");
            size += meta.payload;
            nacked |= meta.nacked;
            first_arrival = first_arrival.min(meta.arrived);
        }
        self.completed.insert(first, last);
        self.frames_completed += 1;
        Some(CompletedFrame {
            rtp_timestamp: ts,
            first_seq: first,
            last_seq: last,
            keyframe,
            first_arrival,
            completed_at: now,
            size,
            delayed_by_retransmission: nacked,
            picture_id,
        })
    }

    fn drop_oldest_frame(&mut self) {
        let Some((&first, meta)) = self.packets.first_key_value() else {
            return;
        };
        let ts = meta.rtp_timestamp;
        let end = self.packets.range(first..).find(|(_, m)| m.rtp_timestamp != ts).map(|(&s, _)| s);
        let newest = self.packets.last_key_value().map_or(first, |(&s, _)| s);
        self.clear_to(end.unwrap_or(newest + 1));
    }
}

/// libwebrtc `kAvgInterframeDelaysWindowSizeFrames`.
pub const FREEZE_AVG_WINDOW_FRAMES: usize = 30;
/// libwebrtc `kMinFrameSamplesToDetectFreeze`.
pub const FREEZE_MIN_SAMPLES: usize = 5;
/// libwebrtc `kMinIncreaseForFreezeMs`.
pub const FREEZE_MIN_INCREASE: Duration = Duration::from_millis(150);
/// A freeze is at least this many times the average gap.
pub const FREEZE_GAP_FACTOR: i64 = 3;

/// WebRTC's freeze definition over rendered frames (see module docs).
#[derive(Clone, Debug, Default)]
pub struct FreezeDetector {
    last_frame: Option<Instant>,
    gaps: VecDeque<Duration>,
    gap_sum: Duration,
    frames: u64,
    freeze_count: u64,
    total_freeze_duration: Duration,
}

impl FreezeDetector {
    pub fn new() -> Self {
        Self::default()
    }

    /// A frame was rendered at `t`. Returns whether the gap since the previous frame was a freeze.
    pub fn on_frame(&mut self, t: Instant) -> bool {
        self.frames += 1;
        let Some(prev) = self.last_frame.replace(t) else {
            return false;
        };
        let gap = t - prev;
        self.gaps.push_back(gap);
        self.gap_sum += gap;
        if self.gaps.len() > FREEZE_AVG_WINDOW_FRAMES {
            let oldest = self.gaps.pop_front().expect("non-empty");
            self.gap_sum -= oldest;
        }
        if self.gaps.len() < FREEZE_MIN_SAMPLES {
            return false;
        }
        // Rounded down, as libwebrtc's GetAverageRoundedDown (here in µs rather than ms).
        let avg = self.gap_sum / self.gaps.len() as i64;
        let freeze = gap >= (avg * FREEZE_GAP_FACTOR).max(avg + FREEZE_MIN_INCREASE);
        if freeze {
            self.freeze_count += 1;
            self.total_freeze_duration += gap;
        }
        freeze
    }

    /// freezeCount in W3C stats.
    pub fn freeze_count(&self) -> u64 {
        self.freeze_count
    }

    /// totalFreezesDuration in W3C stats: the sum of the gaps that were freezes.
    pub fn total_freeze_duration(&self) -> Duration {
        self.total_freeze_duration
    }

    /// Frames seen.
    pub fn frames(&self) -> u64 {
        self.frames
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (seq, ts, start, end) of three frames of 3, 1 and 2 packets.
    fn stream() -> Vec<(u64, u32, bool, bool)> {
        vec![
            (10, 1000, true, false),
            (11, 1000, false, false),
            (12, 1000, false, true),
            (13, 4000, true, true),
            (14, 7000, true, false),
            (15, 7000, false, true),
        ]
    }

    fn pkt(seq: u64, rtp_timestamp: u32, start: bool, end: bool, keyframe: bool) -> VideoPacket {
        let payload = DataSize::bytes(1000);
        VideoPacket { seq, rtp_timestamp, start, end, keyframe, payload, nacked: false, picture_id: None }
    }

    fn feed(a: &mut FrameAssembler, pkts: &[(u64, u32, bool, bool)]) -> Vec<CompletedFrame> {
        let mut out = Vec::new();
        for (i, &(seq, ts, s, e)) in pkts.iter().enumerate() {
            out.extend(a.on_packet(Instant::from_millis(i as i64), pkt(seq, ts, s, e, false)));
        }
        out
    }

    #[test]
    fn in_order_frames_complete() {
        let mut a = FrameAssembler::new();
        let frames = feed(&mut a, &stream());
        let ids: Vec<(u32, u64, u64)> =
            frames.iter().map(|f| (f.rtp_timestamp, f.first_seq, f.last_seq)).collect();
        assert_eq!(ids, vec![(1000, 10, 12), (4000, 13, 13), (7000, 14, 15)]);
        assert_eq!(frames[0].completed_at, Instant::from_millis(2));
        assert_eq!(frames[0].first_arrival, Instant::ZERO);
        assert_eq!(frames[2].first_arrival, Instant::from_millis(4));
        assert_eq!(a.frames_completed(), 3);
        assert_eq!(a.frames_discarded(), 0);
    }

    #[test]
    fn reordered_packets_complete_when_the_last_arrives() {
        let s = stream();
        let mut a = FrameAssembler::new();
        let frames = feed(&mut a, &[s[2], s[0], s[1], s[1], s[3]]);
        assert_eq!(frames.len(), 2);
        assert_eq!((frames[0].first_seq, frames[0].last_seq), (10, 12));
        assert_eq!(frames[0].completed_at, Instant::from_millis(2));
        // Its last packet (12) was the first to arrive, at 0 ms.
        assert_eq!(frames[0].first_arrival, Instant::ZERO);
        assert_eq!(a.packets_ignored(), 1, "the duplicate");
    }

    #[test]
    fn a_late_packet_completes_its_frame_after_later_frames() {
        let s = stream();
        let mut a = FrameAssembler::new();
        let mut pkts = s.clone();
        pkts.remove(1);
        let frames = feed(&mut a, &pkts);
        assert_eq!(frames.iter().map(|f| f.rtp_timestamp).collect::<Vec<_>>(), vec![4000, 7000]);
        assert_eq!(a.frames_discarded(), 0);
        // The missing packet (a retransmission) completes frame 1000.
        let late = a.on_packet(Instant::from_secs(1), pkt(11, 1000, false, false, false)).unwrap();
        assert_eq!((late.first_seq, late.last_seq), (10, 12));
        // Packets of completed frames are duplicates.
        assert_eq!(a.on_packet(Instant::from_secs(1), pkt(13, 4000, true, true, false)), None);
        assert_eq!(a.packets_ignored(), 1);
    }

    #[test]
    fn clearing_discards_incomplete_frames_below() {
        let s = stream();
        let mut a = FrameAssembler::new();
        let mut pkts = s.clone();
        pkts.remove(1);
        feed(&mut a, &pkts);
        a.clear_to(14);
        assert_eq!(a.frames_discarded(), 1);
        assert_eq!(a.on_packet(Instant::from_secs(1), pkt(11, 1000, false, false, false)), None);
        assert_eq!(a.packets_ignored(), 1);
    }

    #[test]
    fn the_start_packet_tells_a_keyframe() {
        let mut a = FrameAssembler::new();
        assert_eq!(a.on_packet(Instant::ZERO, pkt(2, 90, false, true, false)), None);
        let f = a.on_packet(Instant::ZERO, pkt(1, 90, true, false, true)).unwrap();
        assert!(f.keyframe);
    }

    #[test]
    fn missing_marker_packet_blocks_the_frame() {
        let mut a = FrameAssembler::new();
        assert_eq!(a.on_packet(Instant::ZERO, pkt(1, 90, true, false, false)), None);
        assert_eq!(a.on_packet(Instant::ZERO, pkt(2, 90, false, false, false)), None);
        // A packet of another frame with the next number does not close this one.
        assert_eq!(a.on_packet(Instant::ZERO, pkt(3, 180, false, true, false)), None);
        assert_eq!(a.frames_completed(), 0);
    }

    #[test]
    fn a_frame_reports_its_size_and_whether_a_packet_was_nacked() {
        let mut a = FrameAssembler::new();
        let frames = feed(&mut a, &stream());
        assert_eq!(frames[0].size, DataSize::bytes(3000));
        assert!(frames.iter().all(|f| !f.delayed_by_retransmission));
        // One retransmitted packet marks the whole frame.
        let mut a = FrameAssembler::new();
        a.on_packet(Instant::ZERO, pkt(10, 1000, true, false, false));
        let repaired = VideoPacket { nacked: true, ..pkt(11, 1000, false, true, false) };
        let done = a.on_packet(Instant::ZERO, repaired).expect("complete");
        assert!(done.delayed_by_retransmission);
        assert_eq!(done.size, DataSize::bytes(2000));
    }

    #[test]
    fn buffer_is_bounded() {
        let mut a = FrameAssembler::new();
        // Every frame lacks its end packet.
        for f in 0..3000u64 {
            a.on_packet(Instant::ZERO, pkt(2 * f, f as u32, true, false, false));
        }
        assert!(a.packets.len() <= MAX_BUFFERED_PACKETS);
        assert_eq!(a.frames_discarded() as usize, 3000 - a.packets.len());
    }

    fn frames_30fps(detector: &mut FreezeDetector, from: Instant, n: i64) -> Vec<bool> {
        (0..n).map(|i| detector.on_frame(from + Duration::from_micros(33_333 * i))).collect()
    }

    #[test]
    fn a_500_ms_gap_is_a_freeze() {
        let mut d = FreezeDetector::new();
        assert!(frames_30fps(&mut d, Instant::ZERO, 60).iter().all(|f| !f));
        let last = Instant::from_micros(33_333 * 59);
        assert!(d.on_frame(last + Duration::from_millis(500)));
        assert_eq!(d.freeze_count(), 1);
        assert_eq!(d.total_freeze_duration(), Duration::from_millis(500));
    }

    #[test]
    fn a_60_ms_gap_is_not_a_freeze() {
        let mut d = FreezeDetector::new();
        frames_30fps(&mut d, Instant::ZERO, 60);
        let last = Instant::from_micros(33_333 * 59);
        assert!(!d.on_frame(last + Duration::from_millis(60)));
        assert_eq!(d.freeze_count(), 0);
        assert_eq!(d.frames(), 61);
    }

    #[test]
    fn no_freeze_before_five_gaps() {
        let mut d = FreezeDetector::new();
        frames_30fps(&mut d, Instant::ZERO, 4);
        assert!(!d.on_frame(Instant::from_secs(5)));
    }
}
