//! Receiver statistics for one SSRC: what an RTCP report block says about it (RFC 3550 §6.4.1,
//! App. A.1, A.3, A.8).
//!
//! * Sequence tracking follows App. A.1 `update_seq`: steps below `MAX_DROPOUT` (3000) advance
//!   the highest sequence number (counting a cycle on wrap), packets up to `MAX_MISORDER` (100)
//!   behind are late or duplicates, and anything else is a jump that is believed only when the
//!   next packet follows it, at which point the statistics restart. The App. A.1 probation of a
//!   new source (MIN_SEQUENTIAL) is left out: in the simulator every source is genuine.
//! * Loss follows App. A.3: `expected = extended max - base + 1`, cumulative lost =
//!   `expected - received` clamped to 24-bit signed, and the fraction lost over the interval since
//!   the previous report in 1/256.
//! * Jitter follows §6.4.1 and the integer form of App. A.8: `J += |D| - ((J + 8) >> 4)` on a
//!   value scaled by 16, reported as `J >> 4` in RTP timestamp units.

use rtcbench_units::{Duration, Instant, SeqNo};

use crate::ntp;
use crate::rtcp::report::ReportBlock;

/// App. A.1: a forward step of at least this many is a jump, not loss.
const MAX_DROPOUT: u16 = 3000;
/// App. A.1: a packet up to this many behind the highest is late, not a restart.
const MAX_MISORDER: u16 = 100;
const RTP_SEQ_MOD: u32 = 1 << 16;

/// Receiver-side statistics of one RTP source.
#[derive(Debug, Clone)]
pub struct ReceiverStats {
    ssrc: u32,
    seq: Option<SeqState>,
    /// Interarrival jitter × 16, App. A.8 integer form.
    jitter_x16: u32,
    /// Relative transit time of the previous packet, in RTP units (wrapping).
    last_transit: Option<u32>,
    /// Media clock rate of the latest packet, Hz.
    clock_rate: u32,
}

/// The `source` structure of App. A.1, after the first packet.
#[derive(Debug, Clone, Copy)]
struct SeqState {
    max_seq: u16,
    /// Sequence number cycles, already shifted left by 16.
    cycles: u32,
    base_seq: u32,
    /// Last "bad" sequence number plus one; RTP_SEQ_MOD + 1 when none.
    bad_seq: u32,
    received: u32,
    expected_prior: u32,
    received_prior: u32,
}

impl SeqState {
    fn new(seq: u16) -> Self {
        Self {
            max_seq: seq,
            cycles: 0,
            base_seq: u32::from(seq),
            bad_seq: RTP_SEQ_MOD + 1,
            received: 0,
            expected_prior: 0,
            received_prior: 0,
        }
    }

    /// App. A.1 `update_seq` without probation; false if the packet is set aside as a possible
    /// jump.
    fn update(&mut self, seq: u16) -> bool {
        let udelta = seq.wrapping_sub(self.max_seq);
        if udelta < MAX_DROPOUT {
            if seq < self.max_seq {
                self.cycles = self.cycles.wrapping_add(RTP_SEQ_MOD);
            }
            self.max_seq = seq;
        } else if u32::from(udelta) <= RTP_SEQ_MOD - u32::from(MAX_MISORDER) {
            if u32::from(seq) == self.bad_seq {
                // Two sequential packets after a jump: the source restarted (App. A.1).
                *self = Self::new(seq);
            } else {
                self.bad_seq = (u32::from(seq) + 1) & (RTP_SEQ_MOD - 1);
                return false;
            }
        }
        // Otherwise a duplicate or late packet: counted, highest unchanged.
        self.received = self.received.wrapping_add(1);
        true
    }

    fn extended_max(&self) -> u32 {
        self.cycles.wrapping_add(u32::from(self.max_seq))
    }

    fn expected(&self) -> i64 {
        i64::from(self.extended_max()) - i64::from(self.base_seq) + 1
    }

    fn cumulative_lost(&self) -> i32 {
        let lost = self.expected() - i64::from(self.received);
        lost.clamp(ReportBlock::CUMULATIVE_LOST_MIN.into(), ReportBlock::CUMULATIVE_LOST_MAX.into()) as i32
    }

    /// App. A.3 fraction lost since the previous report, in 1/256.
    fn fraction_lost(&self) -> u8 {
        let expected_interval = self.expected() - i64::from(self.expected_prior);
        let received_interval = i64::from(self.received) - i64::from(self.received_prior);
        let lost_interval = expected_interval - received_interval;
        if expected_interval <= 0 || lost_interval <= 0 {
            0
        } else {
            // At most 255 since lost_interval < expected_interval when anything was received;
            // clamp for the interval in which nothing was (256/256 does not fit 8 bits).
            ((lost_interval << 8) / expected_interval).min(255) as u8
        }
    }
}

impl ReceiverStats {
    /// Statistics for `ssrc`, before any packet.
    pub fn new(ssrc: u32) -> Self {
        Self { ssrc, seq: None, jitter_x16: 0, last_transit: None, clock_rate: 0 }
    }

    /// The source these statistics are about.
    pub fn ssrc(&self) -> u32 {
        self.ssrc
    }

    /// Records a packet with RTP sequence number `seq` and timestamp `rtp_ts` that arrived at
    /// `arrival` (receiver clock); `clock_rate` is the media clock in Hz (e.g. 90000 for video).
    ///
    /// Returns false if the packet was set aside as a possible sequence jump (App. A.1); it then
    /// counts neither as received nor for jitter.
    pub fn on_packet(&mut self, seq: SeqNo<16>, rtp_ts: u32, arrival: Instant, clock_rate: u32) -> bool {
        let seq = seq.value() as u16;
        let state = self.seq.get_or_insert_with(|| SeqState::new(seq));
        if !state.update(seq) {
            return false;
        }
        if clock_rate != self.clock_rate {
            // Transit times in different clocks cannot be compared.
            self.last_transit = None;
            self.clock_rate = clock_rate;
        }
        // §6.4.1: transit = arrival in RTP units - RTP timestamp; both wrap at 2^32 and only
        // their differences matter.
        let arrival_rtp = (i128::from(arrival.as_micros()) * i128::from(clock_rate)).div_euclid(1_000_000);
        let transit = (arrival_rtp as u32).wrapping_sub(rtp_ts);
        if let Some(last) = self.last_transit {
            let d = transit.wrapping_sub(last) as i32;
            // App. A.8: jitter += |d| - ((jitter + 8) >> 4), computed without unsigned underflow.
            let j = i64::from(self.jitter_x16) + i64::from(d.unsigned_abs())
                - ((i64::from(self.jitter_x16) + 8) >> 4);
            self.jitter_x16 = j.clamp(0, i64::from(u32::MAX)) as u32;
        }
        self.last_transit = Some(transit);
        true
    }

    /// Packets counted as received since the first (or since a restart).
    pub fn packets_received(&self) -> u32 {
        self.seq.map_or(0, |s| s.received)
    }

    /// Extended highest sequence number received (cycles << 16 | highest); 0 before any packet.
    pub fn extended_highest_seq(&self) -> u32 {
        self.seq.map_or(0, |s| s.extended_max())
    }

    /// Packets expected minus packets received, clamped to the 24-bit signed report field.
    pub fn cumulative_lost(&self) -> i32 {
        self.seq.map_or(0, |s| s.cumulative_lost())
    }

    /// Fraction lost (1/256) since the previous [`report_block`](Self::report_block), without
    /// closing the interval.
    pub fn fraction_lost(&self) -> u8 {
        self.seq.map_or(0, |s| s.fraction_lost())
    }

    /// Interarrival jitter in RTP timestamp units.
    pub fn jitter(&self) -> u32 {
        self.jitter_x16 >> 4
    }

    /// Interarrival jitter as a duration, in the clock rate of the latest packet.
    pub fn jitter_duration(&self) -> Duration {
        if self.clock_rate == 0 {
            return Duration::ZERO;
        }
        Duration::from_micros((u64::from(self.jitter()) * 1_000_000 / u64::from(self.clock_rate)) as i64)
    }

    /// The report block for this source at `now`, closing the loss interval (App. A.3).
    ///
    /// `last_sr` is the compact NTP timestamp (LSR) of the last sender report from this source and
    /// when it was received; DLSR is the time since then. Without one, both fields are 0.
    pub fn report_block(&mut self, now: Instant, last_sr: Option<(u32, Instant)>) -> ReportBlock {
        let (lsr, dlsr) = last_sr.map_or((0, 0), |(lsr, received_at)| {
            (lsr, ntp::duration_to_compact(now.saturating_since(received_at)))
        });
        let mut block =
            ReportBlock { ssrc: self.ssrc, jitter: self.jitter(), lsr, dlsr, ..ReportBlock::default() };
        if let Some(state) = self.seq.as_mut() {
            block.fraction_lost = state.fraction_lost();
            block.cumulative_lost = state.cumulative_lost();
            block.extended_highest_seq = state.extended_max();
            state.expected_prior = state.expected().clamp(0, u32::MAX.into()) as u32;
            state.received_prior = state.received;
        }
        block
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VIDEO_HZ: u32 = 90_000;

    /// Feeds `seqs` as packets 20 ms apart with a matching RTP clock (constant transit).
    fn feed(stats: &mut ReceiverStats, seqs: impl IntoIterator<Item = u64>) {
        for s in seqs {
            let t = Instant::from_millis(20 * s as i64);
            stats.on_packet(SeqNo::new(s), (s * 1800) as u32, t, VIDEO_HZ);
        }
    }

    #[test]
    fn two_lost_of_a_hundred_is_fraction_5() {
        let mut stats = ReceiverStats::new(7);
        feed(&mut stats, (0..100).filter(|s| *s != 10 && *s != 50));
        let block = stats.report_block(Instant::from_secs(2), None);
        // (2 << 8) / 100 = 5 (App. A.3, integer division).
        assert_eq!(block.fraction_lost, 5);
        assert_eq!(block.cumulative_lost, 2);
        assert_eq!(block.extended_highest_seq, 99);
        assert_eq!((block.ssrc, block.lsr, block.dlsr), (7, 0, 0));
        // Next interval: no loss. The one after has two duplicates, so more packets arrive than
        // were expected: the interval's loss is negative, reported as 0, and the total drops to 0.
        feed(&mut stats, 100..200);
        assert_eq!(stats.report_block(Instant::from_secs(4), None).fraction_lost, 0);
        feed(&mut stats, 200..300);
        feed(&mut stats, [250, 260]);
        let block = stats.report_block(Instant::from_secs(6), None);
        assert_eq!((block.fraction_lost, block.cumulative_lost), (0, 0));
        assert_eq!(stats.packets_received(), 300);
    }

    #[test]
    fn interval_loss_is_measured_since_the_last_report() {
        let mut stats = ReceiverStats::new(1);
        feed(&mut stats, 0..10);
        stats.report_block(Instant::ZERO, None);
        // 10..=19 expected, 12 and 13 and 17 lost: (3 << 8) / 10 = 76.
        feed(&mut stats, (10..20).filter(|s| ![12, 13, 17].contains(s)));
        assert_eq!(stats.fraction_lost(), 76);
        let block = stats.report_block(Instant::ZERO, None);
        assert_eq!((block.fraction_lost, block.cumulative_lost), (76, 3));
    }

    #[test]
    fn sequence_wrap_counts_a_cycle() {
        let mut stats = ReceiverStats::new(1);
        feed(&mut stats, 65_530..65_536);
        feed(&mut stats, 0..=10);
        assert_eq!(stats.extended_highest_seq(), (1 << 16) + 10);
        assert_eq!(stats.cumulative_lost(), 0);
        // A late packet from before the wrap does not move the highest back.
        feed(&mut stats, [65_535]);
        assert_eq!(stats.extended_highest_seq(), (1 << 16) + 10);
        assert_eq!(stats.cumulative_lost(), -1);
    }

    #[test]
    fn a_jump_is_believed_after_two_sequential_packets() {
        let mut stats = ReceiverStats::new(1);
        feed(&mut stats, 0..50);
        // 20000 is far beyond MAX_DROPOUT: set aside, not counted.
        assert!(!stats.on_packet(SeqNo::new(20_000), 0, Instant::from_secs(5), VIDEO_HZ));
        assert_eq!(stats.extended_highest_seq(), 49);
        // Its successor confirms the restart: statistics start again from 20001.
        assert!(stats.on_packet(SeqNo::new(20_001), 0, Instant::from_secs(5), VIDEO_HZ));
        assert_eq!(stats.extended_highest_seq(), 20_001);
        assert_eq!(stats.packets_received(), 1);
        assert_eq!(stats.cumulative_lost(), 0);
    }

    #[test]
    fn constant_transit_has_zero_jitter() {
        let mut stats = ReceiverStats::new(1);
        feed(&mut stats, 0..100);
        assert_eq!(stats.jitter(), 0);
        assert_eq!(stats.jitter_duration(), Duration::ZERO);
    }

    #[test]
    fn alternating_transit_converges_to_its_step() {
        // Packets every 10 ms (900 ticks at 90 kHz); every other one is 1 ms (90 ticks) late,
        // so |D| = 90 for every pair.
        let mut stats = ReceiverStats::new(1);
        let mut jitters = Vec::new();
        for i in 0..200u32 {
            let late = if i % 2 == 1 { 1_000 } else { 0 };
            let arrival = Instant::from_micros(i64::from(i) * 10_000 + late);
            stats.on_packet(SeqNo::new(u64::from(i)), i * 900, arrival, VIDEO_HZ);
            jitters.push(stats.jitter());
        }
        // By hand from App. A.8 (J scaled by 16): 0; 0 + 90 - 0 = 90 -> 5; 90 + 90 - 6 = 174 -> 10;
        // 174 + 90 - 11 = 253 -> 15.
        assert_eq!(&jitters[..4], &[0, 5, 10, 15]);
        // The float recursion J += (90 - J)/16 converges to 90; the integer form's rounding
        // settles a little below it.
        assert!((85..=90).contains(jitters.last().unwrap()), "{jitters:?}");
        assert!((stats.jitter_duration() - Duration::from_millis(1)).abs() <= Duration::from_micros(60));
    }

    #[test]
    fn report_block_carries_lsr_and_dlsr() {
        let mut stats = ReceiverStats::new(9);
        feed(&mut stats, 0..5);
        let sr_at = Instant::from_secs(3);
        let block = stats.report_block(sr_at + Duration::from_millis(500), Some((0x1234_5678, sr_at)));
        assert_eq!((block.lsr, block.dlsr), (0x1234_5678, 0x8000));
    }

    #[test]
    fn nothing_received_gives_an_empty_block() {
        let mut stats = ReceiverStats::new(4);
        assert_eq!(
            stats.report_block(Instant::ZERO, None),
            ReportBlock { ssrc: 4, ..ReportBlock::default() }
        );
    }
}
