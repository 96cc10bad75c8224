//! When FEC packets are made and what each protects: libwebrtc's `UlpfecGenerator`
//! (modules/rtp_rtcp/source/ulpfec_generator.cc) with `ForwardErrorCorrection::EncodeFec`.
//!
//! Media packets are collected (at most [`MAX_MEDIA_PACKETS`]) until a frame ends and either the
//! set spans `max_frames` frames, or both
//!
//! * the FEC actually sent for the set is within [`MAX_EXCESS_OVERHEAD`] (Q8) of the rate asked
//!   for (with few packets, rounding up to one FEC packet overshoots), and
//! * the set has at least 1 media packet — [`MIN_MEDIA_PACKETS`] when the rate is above
//!   [`HIGH_PROTECTION_THRESHOLD`] — plus one more when frames average two packets or more.
//!
//! Then [`num_fec_packets`] FEC packets are made with [`packet_masks`] and the set starts over.
//! The keyframe parameters apply to a set holding a keyframe packet. New parameters apply from
//! the next packet added (libwebrtc keeps them pending until then).

use super::protection::{FecParams, Protection};
use super::{num_fec_packets, packet_masks, MAX_MEDIA_PACKETS};

/// libwebrtc `kMaxExcessOverhead` (Q8).
pub const MAX_EXCESS_OVERHEAD: i32 = 50;
/// libwebrtc `kMinMediaPackets`.
pub const MIN_MEDIA_PACKETS: usize = 4;
/// libwebrtc `kHighProtectionThreshold` (Q8).
pub const HIGH_PROTECTION_THRESHOLD: u8 = 80;
/// libwebrtc `kMinMediaPacketsAdaptationThreshold`.
const MIN_MEDIA_PACKETS_ADAPTATION: f32 = 2.0;

/// FEC packets to send: each is the list of the media packets it protects.
pub type FecBatch<T> = Vec<Vec<T>>;

/// The FEC generator of one stream (see module docs). `T` is what the caller needs of a media
/// packet to build the FEC packet's header.
#[derive(Clone, Debug)]
pub struct FecGenerator<T> {
    params: Protection,
    pending: Option<Protection>,
    media: Vec<T>,
    frames: usize,
    keyframe: bool,
    min_media_packets: usize,
}

impl<T: Clone> Default for FecGenerator<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Clone> FecGenerator<T> {
    /// A generator with no protection until [`set_protection`](Self::set_protection).
    pub fn new() -> Self {
        Self {
            params: Protection::default(),
            pending: None,
            media: Vec::new(),
            frames: 0,
            keyframe: false,
            min_media_packets: 1,
        }
    }

    /// New protection, used from the next packet on.
    pub fn set_protection(&mut self, p: Protection) {
        self.pending = Some(p);
    }

    /// A media packet leaves: `last_in_frame` is its marker bit. Returns the FEC packets to send
    /// after it, if the set is complete.
    pub fn add(&mut self, packet: T, keyframe: bool, last_in_frame: bool) -> Option<FecBatch<T>> {
        if let Some(p) = self.pending.take() {
            self.params = p;
            self.min_media_packets =
                if self.current().rate > HIGH_PROTECTION_THRESHOLD { MIN_MEDIA_PACKETS } else { 1 };
        }
        self.keyframe |= keyframe;
        if self.media.len() < MAX_MEDIA_PACKETS {
            self.media.push(packet);
        }
        if last_in_frame {
            self.frames += 1;
        }
        let params = self.current();
        let due = last_in_frame
            && (self.frames >= params.max_frames as usize
                || (self.excess_overhead_below_max() && self.minimum_media_packets_reached()));
        if !due {
            return None;
        }
        let media = std::mem::take(&mut self.media);
        self.frames = 0;
        self.keyframe = false;
        let fec = num_fec_packets(media.len(), params.rate);
        if fec == 0 {
            return None;
        }
        let batch = packet_masks(media.len(), fec)
            .into_iter()
            .map(|row| {
                media.iter().enumerate().filter(|&(j, _)| row >> j & 1 == 1).map(|(_, p)| p.clone()).collect()
            })
            .collect();
        Some(batch)
    }

    fn current(&self) -> FecParams {
        if self.keyframe {
            self.params.key
        } else {
            self.params.delta
        }
    }

    /// FEC per media packet this set would get, Q8, less the rate asked for, is below
    /// [`MAX_EXCESS_OVERHEAD`].
    fn excess_overhead_below_max(&self) -> bool {
        let rate = self.current().rate;
        let overhead = ((num_fec_packets(self.media.len(), rate) << 8) / self.media.len()) as i32;
        overhead - i32::from(rate) < MAX_EXCESS_OVERHEAD
    }

    fn minimum_media_packets_reached(&self) -> bool {
        let per_frame = self.media.len() as f32 / self.frames as f32;
        if per_frame < MIN_MEDIA_PACKETS_ADAPTATION {
            self.media.len() >= self.min_media_packets
        } else {
            self.media.len() > self.min_media_packets
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn protection(rate: u8, max_frames: u32) -> Protection {
        let p = FecParams { rate, max_frames };
        Protection { delta: p, key: p }
    }

    /// Adds frames of `sizes` packets (numbered from 0); returns the batches made.
    fn run(g: &mut FecGenerator<u32>, sizes: &[u32]) -> Vec<FecBatch<u32>> {
        let mut seq = 0;
        let mut out = Vec::new();
        for &n in sizes {
            for k in 0..n {
                if let Some(b) = g.add(seq, false, k == n - 1) {
                    out.push(b);
                }
                seq += 1;
            }
        }
        out
    }

    #[test]
    fn no_rate_no_fec() {
        let mut g = FecGenerator::new();
        assert!(run(&mut g, &[3, 3, 3]).is_empty());
        g.set_protection(protection(0, 3));
        assert!(run(&mut g, &[3, 3, 3]).is_empty());
    }

    #[test]
    fn a_set_waits_until_the_overhead_is_close_to_the_rate() {
        // 64/256 = one FEC packet per four media packets. Frames of one packet: after 1 or 2
        // packets one FEC packet would be 100 or 50 % (Q8 256 and 128, not below 64 + 50); after
        // 3 it is 33 % (85): close enough.
        let mut g = FecGenerator::new();
        g.set_protection(protection(64, 6));
        let batches = run(&mut g, &[1, 1, 1, 1, 1]);
        assert_eq!(batches, vec![vec![vec![0, 1, 2]]]);
    }

    #[test]
    fn a_set_never_spans_more_than_max_frames() {
        let mut g = FecGenerator::new();
        g.set_protection(protection(64, 2));
        // After two one-packet frames: one FEC packet over both, whatever the overhead.
        assert_eq!(run(&mut g, &[1, 1]), vec![vec![vec![0, 1]]]);
    }

    #[test]
    fn larger_frames_need_one_more_packet_than_the_minimum() {
        // Rate 255 > 80: at least 4 media packets; frames of 2 packets average ≥ 2: at least 5.
        let mut g = FecGenerator::new();
        g.set_protection(protection(255, 6));
        let batches = run(&mut g, &[2, 2, 2]);
        assert_eq!(batches.len(), 1);
        let batch = &batches[0];
        assert_eq!(batch.len(), 6, "one FEC packet per media packet");
        // The table's masks for 6 of 6 protect every packet.
        let covered: std::collections::BTreeSet<u32> = batch.iter().flatten().copied().collect();
        assert_eq!(covered.into_iter().collect::<Vec<_>>(), vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_keyframe_in_the_set_uses_the_keyframe_rate() {
        let mut g = FecGenerator::new();
        g.set_protection(Protection {
            delta: FecParams { rate: 0, max_frames: 1 },
            key: FecParams { rate: 128, max_frames: 1 },
        });
        assert_eq!(g.add(0, false, true), None, "delta frame: no FEC");
        let batch = (1..=4).filter_map(|s| g.add(s, true, s == 4)).next().expect("keyframe FEC");
        // 4 × 128 / 256 = 2 FEC packets with kMaskRandom4_2.
        assert_eq!(batch, vec![vec![1, 2], vec![1, 3, 4]]);
    }

    #[test]
    fn at_most_48_packets_are_protected() {
        let mut g = FecGenerator::new();
        g.set_protection(protection(26, 1));
        let batches = run(&mut g, &[60]);
        let protected: usize = batches[0].iter().map(Vec::len).sum();
        assert_eq!(num_fec_packets(48, 26), 5);
        assert_eq!(protected, 48, "interleaved over the first 48");
    }
}
