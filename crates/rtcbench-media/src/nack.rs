//! The receiver's NACK list: which missing packets to request (RFC 4585 §6.2.1 generic NACK),
//! when, and when to give up, as libwebrtc's `NackRequester`
//! (modules/video_coding/nack_requester.cc) decides.
//!
//! * A packet newer than the newest seen adds every number between them to the list. libwebrtc
//!   waits for a reordering allowance from a histogram of reordered packets, but it never feeds that
//!   histogram (it treats every late packet as a possible retransmission), so the allowance is
//!   zero: missing packets are requested at once, in a NACK sent with the packet that revealed
//!   them.
//! * Every [`PROCESS_INTERVAL`] each entry is requested again once one RTT has passed since its
//!   last request (libwebrtc's default RTT before one is known is 100 ms). After
//!   [`MAX_NACK_RETRIES`] requests an entry is dropped.
//! * A late packet (a reordered or retransmitted one) leaves the list; a packet recovered by FEC
//!   newer than the newest is remembered, so it is never requested.
//! * Entries older than [`MAX_PACKET_AGE`] below the newest are dropped. If the list would exceed
//!   [`MAX_NACK_PACKETS`], entries older than the newest keyframe start are dropped; if that is not
//!   enough the list is cleared and a keyframe requested.
//! * The frame buffer clears the list up to the first packet of a frame it no longer needs
//!   ([`NackRequester::clear_up_to`]), e.g. after a keyframe was decoded.
//!
//! Sequence numbers here are unwrapped (`u64`), so the 16-bit comparisons of libwebrtc become
//! plain ones.

use std::collections::{BTreeMap, BTreeSet};

use rtcbench_units::{Duration, Instant};

/// libwebrtc `kMaxPacketAge`.
pub const MAX_PACKET_AGE: u64 = 10_000;
/// libwebrtc `kMaxNackPackets`.
pub const MAX_NACK_PACKETS: usize = 1000;
/// libwebrtc `kDefaultRtt`.
pub const DEFAULT_RTT: Duration = Duration::from_millis(100);
/// libwebrtc `kMaxNackRetries` ("a NACK is sent at most every RTT"; older releases gave up after
/// 10).
pub const MAX_NACK_RETRIES: u32 = 100;
/// libwebrtc `NackPeriodicProcessor::kUpdateInterval`.
pub const PROCESS_INTERVAL: Duration = Duration::from_millis(20);

#[derive(Clone, Copy, Debug)]
struct NackInfo {
    /// When it was last requested.
    sent_at: Option<Instant>,
    retries: u32,
}

/// What a received packet caused.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Received {
    /// Packets to request now.
    pub nack: Vec<u64>,
    /// The list overflowed: request a keyframe.
    pub keyframe_request: bool,
    /// How often this packet had been requested before it arrived (0 if never).
    pub times_nacked: u32,
}

/// A receiver's NACK list (see module docs).
#[derive(Clone, Debug)]
pub struct NackRequester {
    list: BTreeMap<u64, NackInfo>,
    keyframes: BTreeSet<u64>,
    recovered: BTreeSet<u64>,
    newest: Option<u64>,
    rtt: Duration,
    /// The next periodic pass (a grid of [`PROCESS_INTERVAL`] from the first packet).
    next_process: Instant,
    requests: u64,
}

impl Default for NackRequester {
    fn default() -> Self {
        Self {
            list: BTreeMap::new(),
            keyframes: BTreeSet::new(),
            recovered: BTreeSet::new(),
            newest: None,
            rtt: DEFAULT_RTT,
            next_process: Instant::FAR_FUTURE,
            requests: 0,
        }
    }
}

impl NackRequester {
    pub fn new() -> Self {
        Self::default()
    }

    /// The RTT between requests for the same packet.
    pub fn set_rtt(&mut self, rtt: Duration) {
        self.rtt = rtt;
    }

    /// Entries waiting for their packet.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Sequence numbers requested so far (a packet requested twice counts twice).
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// A media packet arrived: `keyframe` if it starts a keyframe, `recovered` if FEC rebuilt it.
    pub fn on_packet(&mut self, now: Instant, seq: u64, keyframe: bool, recovered: bool) -> Received {
        let Some(newest) = self.newest else {
            self.newest = Some(seq);
            if keyframe {
                self.keyframes.insert(seq);
            }
            self.next_process = now + PROCESS_INTERVAL;
            return Received::default();
        };
        if seq == newest {
            return Received::default();
        }
        self.advance_grid(now);
        if seq < newest {
            let times_nacked = self.list.remove(&seq).map_or(0, |n| n.retries);
            return Received { times_nacked, ..Received::default() };
        }
        if keyframe {
            self.keyframes.insert(seq);
        }
        let horizon = seq.saturating_sub(MAX_PACKET_AGE);
        crate::drop_below_set(&mut self.keyframes, horizon);
        if recovered {
            self.recovered.insert(seq);
            crate::drop_below_set(&mut self.recovered, horizon);
            return Received::default();
        }
        let keyframe_request = self.add_missing(newest + 1, seq);
        self.newest = Some(seq);
        let nack = self.batch(now, Pass::SeqNumOnly);
        Received { nack, keyframe_request, times_nacked: 0 }
    }

    /// When the next periodic pass is due (far future while there is nothing to request).
    pub fn poll_timeout(&self) -> Instant {
        if self.list.is_empty() {
            Instant::FAR_FUTURE
        } else {
            self.next_process
        }
    }

    /// The periodic pass: packets whose last request is one RTT old.
    pub fn on_timeout(&mut self, now: Instant) -> Vec<u64> {
        self.advance_grid(now);
        self.batch(now, Pass::TimeOnly)
    }

    /// Moves the next periodic pass to the first grid point after `now`, so that
    /// [`Self::poll_timeout`] is never in the past (the grid is idle while the list is empty).
    fn advance_grid(&mut self, now: Instant) {
        if self.next_process <= now {
            let behind = (now - self.next_process).as_micros() / PROCESS_INTERVAL.as_micros();
            self.next_process += PROCESS_INTERVAL * (behind + 1);
        }
    }

    /// Forgets every packet below `seq`.
    pub fn clear_up_to(&mut self, seq: u64) {
        crate::drop_below(&mut self.list, seq, |_, _| {});
        crate::drop_below_set(&mut self.keyframes, seq);
        crate::drop_below_set(&mut self.recovered, seq);
    }

    /// Adds `start..end` to the list; returns whether a keyframe must be requested.
    fn add_missing(&mut self, start: u64, end: u64) -> bool {
        crate::drop_below(&mut self.list, end.saturating_sub(MAX_PACKET_AGE), |_, _| {});
        let new = (end - start) as usize;
        if self.list.len() + new > MAX_NACK_PACKETS {
            while self.list.len() + new > MAX_NACK_PACKETS && self.remove_until_keyframe() {}
            if self.list.len() + new > MAX_NACK_PACKETS {
                self.list.clear();
                return true;
            }
        }
        for seq in (start..end).filter(|s| !self.recovered.contains(s)) {
            self.list.insert(seq, NackInfo { sent_at: None, retries: 0 });
        }
        false
    }

    /// Drops the entries older than the oldest keyframe start that is newer than some of them.
    fn remove_until_keyframe(&mut self) -> bool {
        while let Some(&key) = self.keyframes.first() {
            if self.list.first_key_value().is_some_and(|(&s, _)| s < key) {
                self.list = self.list.split_off(&key);
                return true;
            }
            self.keyframes.pop_first();
        }
        false
    }

    fn batch(&mut self, now: Instant, pass: Pass) -> Vec<u64> {
        let mut batch = Vec::new();
        let rtt = self.rtt;
        self.list.retain(|&seq, info| {
            // With no reordering allowance every entry is due on the packet that created it.
            let due = match (pass, info.sent_at) {
                (Pass::SeqNumOnly, sent) => sent.is_none(),
                (Pass::TimeOnly, None) => true,
                (Pass::TimeOnly, Some(t)) => now - t >= rtt,
            };
            if !due {
                return true;
            }
            batch.push(seq);
            info.retries += 1;
            info.sent_at = Some(now);
            info.retries < MAX_NACK_RETRIES
        });
        self.requests += batch.len() as u64;
        batch
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pass {
    /// On a new packet: entries never requested.
    SeqNumOnly,
    /// Periodic: entries whose last request is one RTT old (or never requested).
    TimeOnly,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t: i64) -> Instant {
        Instant::from_millis(t)
    }

    #[test]
    fn a_gap_is_requested_at_once_then_every_rtt() {
        let mut n = NackRequester::new();
        n.set_rtt(Duration::from_millis(50));
        n.on_packet(ms(0), 10, true, false);
        let r = n.on_packet(ms(5), 13, false, false);
        assert_eq!(r.nack, vec![11, 12]);
        assert!(!r.keyframe_request);
        // The first periodic pass is on the 20 ms grid from the first packet.
        assert_eq!(n.poll_timeout(), ms(20));
        assert!(n.on_timeout(ms(20)).is_empty());
        assert!(n.on_timeout(ms(40)).is_empty());
        assert_eq!(n.on_timeout(ms(60)), vec![11, 12], "one RTT after 5 ms");
        // 12 arrives (retransmitted): it leaves the list, and says it was requested twice.
        assert_eq!(n.on_packet(ms(70), 12, false, false).times_nacked, 2);
        assert_eq!(n.on_timeout(ms(120)), vec![11]);
        assert_eq!(n.requests(), 5);
    }

    #[test]
    fn the_next_pass_is_never_in_the_past() {
        let mut n = NackRequester::new();
        n.on_packet(ms(0), 0, true, false);
        // Nothing missing for a long time, then a gap.
        n.on_packet(ms(60_005), 1, false, false);
        n.on_packet(ms(60_010), 3, false, false);
        assert_eq!(n.poll_timeout(), ms(60_020));
    }

    #[test]
    fn an_entry_is_dropped_after_a_hundred_requests() {
        let mut n = NackRequester::new();
        n.set_rtt(Duration::from_millis(20));
        n.on_packet(ms(0), 0, true, false);
        let mut requests = n.on_packet(ms(0), 2, false, false).nack.len();
        let mut t = 0;
        while !n.is_empty() {
            t += 20;
            requests += n.on_timeout(ms(t)).len();
        }
        assert_eq!(requests, 100);
        assert_eq!(n.poll_timeout(), Instant::FAR_FUTURE);
    }

    #[test]
    fn recovered_packets_and_duplicates_are_not_requested() {
        let mut n = NackRequester::new();
        n.on_packet(ms(0), 0, true, false);
        assert!(n.on_packet(ms(1), 0, false, false).nack.is_empty());
        // 3 came from FEC ahead of 1 and 2: only those two are missing when 4 arrives.
        n.on_packet(ms(2), 3, false, true);
        assert_eq!(n.on_packet(ms(3), 4, false, false).nack, vec![1, 2]);
    }

    #[test]
    fn an_overflowing_list_drops_to_the_last_keyframe_or_asks_for_one() {
        let mut n = NackRequester::new();
        n.on_packet(ms(0), 0, true, false);
        n.on_packet(ms(0), 600, false, false);
        n.on_packet(ms(0), 700, true, false);
        // 599 + 99 entries; 400 more overflow: those below the keyframe at 700 go.
        let r = n.on_packet(ms(0), 1101, false, false);
        assert!(!r.keyframe_request);
        assert_eq!(n.len(), 400);
        let r = n.on_packet(ms(0), 2200, false, false);
        assert!(r.keyframe_request);
        assert!(r.nack.is_empty());
        assert!(n.is_empty());
    }

    #[test]
    fn clear_up_to_forgets_older_entries() {
        let mut n = NackRequester::new();
        n.on_packet(ms(0), 0, true, false);
        n.on_packet(ms(0), 10, false, false);
        n.clear_up_to(6);
        assert_eq!(n.len(), 4);
    }
}
