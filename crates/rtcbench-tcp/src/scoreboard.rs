//! The sender's SACK scoreboard: every segment between SND.UNA and SND.NXT with what is known
//! about it (RFC 6675 §3 and §4), as Linux keeps it in per-segment flags.
//!
//! Segments are never split or merged: a retransmission repeats the original boundaries, and the
//! receiver acknowledges whole segments, so each one is either covered by a SACK block or not.
//!
//! * [`Scoreboard::mark_lost`] is RFC 6675's IsLost(SeqNum) applied to every unSACKed segment:
//!   lost once DupThresh (3) SACKed segments, or more than (DupThresh − 1)·SMSS SACKed bytes, lie
//!   above it. A segment, once marked, stays lost until acknowledged or SACKed.
//! * [`Scoreboard::pipe`] is RFC 6675 SetPipe as Linux counts it: a segment is in flight unless
//!   SACKed or marked lost, plus once more if a retransmission of it is out.
//! * [`Scoreboard::next_lost`] is NextSeg rule (1): the first lost segment not yet retransmitted
//!   since it was marked. Rules (3) and (4) (retransmitting segments not yet deemed lost, the
//!   rescue retransmission) are not implemented, as in Linux.

use std::collections::VecDeque;

use rtcbench_units::{DataSize, Instant};

use super::rate::{TxRecord, TxState};

/// DupThresh (RFC 6675 §2, RFC 5681 §3.2).
pub const DUP_THRESH: u32 = 3;

/// One transmitted segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SentSegment {
    /// First sequence number.
    pub start: u64,
    /// Sequence number after the last byte.
    pub end: u64,
    /// Time of the latest (re)transmission.
    pub sent_at: Instant,
    /// Ever retransmitted: its acknowledgment gives no RTT sample (Karn's rule, RFC 6298 §3).
    pub retransmitted: bool,
    /// Covered by a SACK block.
    pub sacked: bool,
    /// Deemed lost (RFC 6675 IsLost, a NewReno retransmission or a timeout).
    pub lost: bool,
    /// A retransmission sent after it was marked lost is presumed in flight.
    pub retransmit_in_flight: bool,
    /// The delivery-rate snapshot of its latest (re)transmission ([`super::rate`]).
    pub tx: TxState,
}

impl SentSegment {
    pub fn len(&self) -> DataSize {
        DataSize::bytes(self.end - self.start)
    }

    /// Its contribution to the pipe, in copies.
    fn copies_in_flight(&self) -> u64 {
        if self.sacked {
            0
        } else {
            u64::from(!self.lost) + u64::from(self.retransmit_in_flight)
        }
    }
}

/// What a cumulative acknowledgment or a set of SACK blocks newly covered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Delivery {
    /// Bytes newly acknowledged or SACKed that were not SACKed before: DeliveredData of
    /// RFC 6937 §2.
    pub delivered: DataSize,
    /// Bytes removed from the scoreboard (cumulative acknowledgment only).
    pub acked: DataSize,
    /// A newly delivered segment had been retransmitted.
    pub retransmitted: bool,
    /// Send time of the most recently sent newly delivered segment that was never
    /// retransmitted.
    pub newest_clean_send: Option<Instant>,
    /// The most recently (re)sent newly delivered segment, retransmissions included: the
    /// delivery-rate sample comes from it.
    pub latest_tx: Option<TxRecord>,
}

impl Delivery {
    /// Adds what `other` covered (SACK blocks after the cumulative acknowledgment).
    pub fn merge(&mut self, other: Self) {
        self.delivered += other.delivered;
        self.acked += other.acked;
        self.retransmitted |= other.retransmitted;
        self.newest_clean_send = self.newest_clean_send.max(other.newest_clean_send);
        self.latest_tx = TxRecord::latest(self.latest_tx, other.latest_tx);
    }

    /// Counts `seg` if it was not delivered (SACKed) before.
    fn add(&mut self, seg: &SentSegment) {
        if seg.sacked {
            return;
        }
        self.delivered += seg.len();
        self.retransmitted |= seg.retransmitted;
        if !seg.retransmitted {
            self.newest_clean_send = self.newest_clean_send.max(Some(seg.sent_at));
        }
        let tx = TxRecord { sent_at: seg.sent_at, end: seg.end, state: seg.tx };
        self.latest_tx = TxRecord::latest(self.latest_tx, Some(tx));
    }
}

/// What the scoreboard's queries need, kept as segments change instead of counted over every
/// segment at each ACK and each transmission: sums of each segment's [`Tally::of`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Tally {
    /// RFC 6675's pipe, in bytes.
    pipe: u64,
    /// Segments deemed lost and not SACKed.
    lost: usize,
    /// Of those, the ones whose retransmission is not in flight (NextSeg rule 1's candidates).
    unrepaired: usize,
    /// SACKed segments.
    sacked: usize,
}

impl Tally {
    fn of(seg: &SentSegment) -> Self {
        let lost = seg.lost && !seg.sacked;
        Self {
            pipe: seg.len().as_bytes() * seg.copies_in_flight(),
            lost: usize::from(lost),
            unrepaired: usize::from(lost && !seg.retransmit_in_flight),
            sacked: usize::from(seg.sacked),
        }
    }

    fn add(&mut self, seg: &SentSegment) {
        let t = Self::of(seg);
        self.pipe += t.pipe;
        self.lost += t.lost;
        self.unrepaired += t.unrepaired;
        self.sacked += t.sacked;
    }

    fn remove(&mut self, seg: &SentSegment) {
        let t = Self::of(seg);
        self.pipe -= t.pipe;
        self.lost -= t.lost;
        self.unrepaired -= t.unrepaired;
        self.sacked -= t.sacked;
    }
}

/// The outstanding segments, oldest first.
#[derive(Clone, Debug, Default)]
pub struct Scoreboard {
    segments: VecDeque<SentSegment>,
    tally: Tally,
    /// Segments marked lost so far, each time it is marked (Linux's `tp->lost`).
    lost_marks: u64,
}

impl Scoreboard {
    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }

    pub fn segments(&self) -> impl Iterator<Item = &SentSegment> {
        self.segments.iter()
    }

    /// Changes one segment, keeping the tally.
    fn change(tally: &mut Tally, seg: &mut SentSegment, f: impl FnOnce(&mut SentSegment)) {
        tally.remove(seg);
        f(seg);
        tally.add(seg);
    }

    /// The tally agrees with a count over every segment (checked in debug builds, so every test
    /// of the sender checks it at each query).
    fn checked(&self) -> &Tally {
        debug_assert_eq!(
            self.tally,
            self.segments.iter().fold(Tally::default(), |mut t, s| {
                t.add(s);
                t
            })
        );
        &self.tally
    }

    /// Segments marked lost so far (a segment marked again after its retransmission was lost
    /// counts again).
    pub fn lost_marks(&self) -> u64 {
        self.lost_marks
    }

    /// Records a new segment `[start, end)` sent at `now`; it must follow the last one.
    pub fn push(&mut self, start: u64, end: u64, now: Instant, tx: TxState) {
        debug_assert!(self.segments.back().is_none_or(|s| s.end == start));
        let seg = SentSegment {
            start,
            end,
            sent_at: now,
            retransmitted: false,
            sacked: false,
            lost: false,
            retransmit_in_flight: false,
            tx,
        };
        self.tally.add(&seg);
        self.segments.push_back(seg);
    }

    /// Removes the segments below the cumulative acknowledgment `ack`.
    pub fn on_cumulative_ack(&mut self, ack: u64) -> Delivery {
        let mut d = Delivery::default();
        while let Some(seg) = self.segments.front().filter(|s| s.end <= ack) {
            d.add(seg);
            d.acked += seg.len();
            self.tally.remove(seg);
            self.segments.pop_front();
        }
        d
    }

    /// Marks the segments inside `[left, right)` as SACKed.
    pub fn on_sack_block(&mut self, left: u64, right: u64) -> Delivery {
        let mut d = Delivery::default();
        let first = self.segments.partition_point(|s| s.end <= left);
        for seg in self.segments.range_mut(first..).take_while(|s| s.start < right) {
            if !seg.sacked && seg.start >= left && seg.end <= right {
                d.add(seg);
                Self::change(&mut self.tally, seg, |s| s.sacked = true);
            }
        }
        d
    }

    /// RFC 6675 §4 IsLost over the whole scoreboard: marks every unSACKed segment with DupThresh
    /// SACKed segments, or more than (DupThresh − 1)·SMSS SACKed bytes, above it. Returns whether
    /// any segment was newly marked.
    pub fn mark_lost(&mut self, smss: DataSize) -> bool {
        // Only SACKed segments above a segment can make it lost.
        if self.tally.sacked == 0 {
            return false;
        }
        let byte_threshold = smss * u64::from(DUP_THRESH - 1);
        let (mut sacked_segments, mut sacked_bytes) = (0, DataSize::ZERO);
        let mut newly_lost = false;
        for seg in self.segments.iter_mut().rev() {
            if seg.sacked {
                sacked_segments += 1;
                sacked_bytes += seg.len();
            } else if !seg.lost && (sacked_segments >= DUP_THRESH || sacked_bytes > byte_threshold) {
                Self::change(&mut self.tally, seg, |s| s.lost = true);
                newly_lost = true;
                self.lost_marks += 1;
            }
        }
        newly_lost
    }

    /// The first unacknowledged segment is deemed lost (NewReno fast retransmit and partial
    /// acknowledgments, RFC 6582 §3.2).
    pub fn mark_first_lost(&mut self) {
        if let Some(seg) = self.segments.front_mut() {
            self.lost_marks += u64::from(!seg.lost || seg.retransmit_in_flight);
            Self::change(&mut self.tally, seg, |s| {
                s.lost = true;
                s.retransmit_in_flight = false;
            });
        }
    }

    /// After a retransmission timeout every unSACKed segment is lost and no retransmission is
    /// in flight any more (RFC 6675 §5.1, as Linux's `tcp_enter_loss` marks them).
    pub fn mark_all_lost(&mut self) {
        for seg in self.segments.iter_mut().filter(|s| !s.sacked) {
            self.lost_marks += u64::from(!seg.lost || seg.retransmit_in_flight);
            Self::change(&mut self.tally, seg, |s| {
                s.lost = true;
                s.retransmit_in_flight = false;
            });
        }
    }

    /// Some segment is deemed lost.
    pub fn any_lost(&self) -> bool {
        self.checked().lost > 0
    }

    /// NextSeg rule (1) of RFC 6675 §4: the first lost segment not yet retransmitted.
    pub fn next_lost(&self) -> Option<&SentSegment> {
        if self.checked().unrepaired == 0 {
            return None;
        }
        self.segments.iter().find(|s| s.lost && !s.sacked && !s.retransmit_in_flight)
    }

    /// Records the retransmission of the segment starting at `start`, with its new delivery-rate
    /// snapshot; returns its length.
    pub fn on_retransmit(&mut self, start: u64, now: Instant, tx: TxState) -> DataSize {
        let i = self.segments.partition_point(|s| s.start < start);
        let seg = &mut self.segments[i];
        debug_assert_eq!(seg.start, start);
        Self::change(&mut self.tally, seg, |s| {
            s.sent_at = now;
            s.tx = tx;
            s.retransmitted = true;
            s.retransmit_in_flight = true;
        });
        seg.len()
    }

    /// RFC 6675 SetPipe: bytes presumed in the network.
    pub fn pipe(&self) -> DataSize {
        DataSize::bytes(self.checked().pipe)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;
    const TX: TxState = TxState {
        delivered: DataSize::ZERO,
        delivered_time: Instant::ZERO,
        first_sent_time: Instant::ZERO,
        app_limited: false,
    };

    /// `n` segments of MSS bytes from sequence 0, sent at 1 ms intervals.
    fn board(n: u64) -> Scoreboard {
        let mut b = Scoreboard::default();
        for i in 0..n {
            b.push(i * MSS, (i + 1) * MSS, Instant::from_millis(i as i64), TX);
        }
        b
    }

    fn lost(b: &Scoreboard) -> Vec<u64> {
        b.segments().filter(|s| s.lost).map(|s| s.start / MSS).collect()
    }

    #[test]
    fn a_segment_is_lost_with_three_sacked_segments_above() {
        let mut b = board(6);
        b.on_sack_block(MSS, 3 * MSS); // segments 1, 2
        assert!(!b.mark_lost(DataSize::bytes(MSS)));
        b.on_sack_block(4 * MSS, 5 * MSS); // segment 4: three SACKed above segment 0
        assert!(b.mark_lost(DataSize::bytes(MSS)));
        // Segment 3 has one SACKed segment above it; segment 5 none.
        assert_eq!(lost(&b), vec![0]);
        assert_eq!(b.next_lost().map(|s| s.start), Some(0));
    }

    #[test]
    fn small_segments_need_more_than_two_smss_of_sacked_bytes() {
        // Three SACKed segments of 100 bytes do not make 2·SMSS, but the segment count rule
        // (DupThresh discontiguous SACKed sequences) still applies.
        let mut b = Scoreboard::default();
        for i in 0..4 {
            b.push(i * 100, (i + 1) * 100, Instant::ZERO, TX);
        }
        b.on_sack_block(100, 300);
        assert!(!b.mark_lost(DataSize::bytes(MSS)));
        b.on_sack_block(300, 400);
        assert!(b.mark_lost(DataSize::bytes(MSS)));
    }

    #[test]
    fn pipe_counts_unsacked_unlost_segments_and_retransmissions() {
        let mut b = board(6);
        assert_eq!(b.pipe(), DataSize::bytes(6 * MSS));
        b.on_sack_block(2 * MSS, 5 * MSS);
        b.mark_lost(DataSize::bytes(MSS));
        // 0 and 1 lost, 2-4 SACKed, 5 in flight.
        assert_eq!(lost(&b), vec![0, 1]);
        assert_eq!(b.pipe(), DataSize::bytes(MSS));
        b.on_retransmit(0, Instant::from_millis(50), TX);
        assert_eq!(b.pipe(), DataSize::bytes(2 * MSS));
        assert_eq!(b.next_lost().map(|s| s.start), Some(MSS));
    }

    #[test]
    fn cumulative_ack_reports_delivery_and_karn_samples() {
        let mut b = board(4);
        b.on_sack_block(MSS, 2 * MSS);
        b.on_retransmit(0, Instant::from_millis(10), TX);
        // Segment 0 retransmitted, 1 already SACKed, 2 newly acknowledged.
        let d = b.on_cumulative_ack(3 * MSS);
        assert_eq!(d.acked, DataSize::bytes(3 * MSS));
        assert_eq!(d.delivered, DataSize::bytes(2 * MSS));
        assert!(d.retransmitted);
        assert_eq!(d.newest_clean_send, Some(Instant::from_millis(2)));
        assert_eq!(b.segments().count(), 1);
    }

    #[test]
    fn sack_blocks_cover_whole_segments_only_once() {
        let mut b = board(4);
        // A block ending inside segment 2 covers only segment 1.
        let d = b.on_sack_block(MSS, 2 * MSS + 10);
        assert_eq!(d.delivered, DataSize::bytes(MSS));
        assert_eq!(b.on_sack_block(MSS, 2 * MSS).delivered, DataSize::ZERO);
    }

    #[test]
    fn timeout_marks_everything_unsacked_lost() {
        let mut b = board(4);
        b.on_sack_block(2 * MSS, 3 * MSS);
        b.on_retransmit(0, Instant::from_millis(5), TX);
        b.mark_all_lost();
        assert_eq!(lost(&b), vec![0, 1, 3]);
        assert_eq!(b.pipe(), DataSize::ZERO);
        assert_eq!(b.next_lost().map(|s| s.start), Some(0));
    }
}
