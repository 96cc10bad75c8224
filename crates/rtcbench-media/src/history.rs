//! The sender's side of retransmission: what was sent, kept for a NACK, and the budget that keeps
//! retransmissions from flooding a congested path.
//!
//! [`PacketHistory`] follows libwebrtc's `RtpPacketHistory`
//! (modules/rtp_rtcp/source/rtp_packet_history.cc) in its `kStoreAndCull` mode: every media packet
//! is stored when it leaves the pacer and kept at least max(1 s, 3 × RTT) (`kMinPacketDuration`,
//! `kMinPacketDurationRtt`), at most [`MAX_CAPACITY`] packets. A packet is handed out for
//! retransmission unless it is already queued for one, or it was last sent less than one RTT ago
//! (`VerifyRtt`: the receiver cannot have seen the previous copy yet). libwebrtc sets that RTT to
//! 5 ms + the RTCP RTT on each NACK (`RTPSender::OnReceivedNack`); so does the caller here.
//!
//! [`RetransmissionLimiter`] is libwebrtc's retransmission `RateLimiter`
//! (call/rtp_transport_controller_send.cc): retransmitted bytes over the last 500 ms
//! (`kRetransmitWindowSizeMs`) may not exceed the controller's target rate.
//!
//! [`SendRates`] measures what went out over the last second per kind (libwebrtc's
//! `RtpSenderEgress` send rates, `kBitrateStatisticsWindow` = 1 s), from which the encoder's share
//! of the target is computed as libwebrtc's `FecControllerDefault::UpdateFecRates` does.

use std::collections::VecDeque;

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

/// libwebrtc `RtpPacketHistory::kMaxCapacity`.
pub const MAX_CAPACITY: usize = 9600;
/// libwebrtc `RtpPacketHistory::kMinPacketDuration`.
pub const MIN_PACKET_DURATION: Duration = Duration::from_secs(1);
/// libwebrtc `RtpPacketHistory::kMinPacketDurationRtt`.
pub const MIN_PACKET_DURATION_RTTS: i64 = 3;
/// libwebrtc adds this to the RTCP RTT before it compares a packet's last send time with it.
pub const RTT_MARGIN: Duration = Duration::from_millis(5);
/// libwebrtc `kRetransmitWindowSizeMs`.
pub const RETRANSMIT_WINDOW: Duration = Duration::from_millis(500);
/// libwebrtc `kBitrateStatisticsWindow`.
pub const SEND_RATE_WINDOW: Duration = Duration::from_secs(1);
/// libwebrtc `FecControllerDefault`'s default `overhead_threshold_`: protection never takes more
/// than half of the target.
pub const MAX_PROTECTION_OVERHEAD: f64 = 0.5;

#[derive(Clone, Debug)]
struct Stored<T> {
    item: T,
    /// When it last left the pacer.
    sent: Instant,
    retransmissions: u32,
    /// Queued in the pacer for a retransmission.
    pending: bool,
}

/// Media packets kept for retransmission, by (unwrapped) sequence number (see module docs).
#[derive(Clone, Debug)]
pub struct PacketHistory<T> {
    /// `packets[k]` has sequence number `first + k`; a gap (a number never stored) is `None`.
    packets: VecDeque<Option<Stored<T>>>,
    first: u64,
    rtt: Option<Duration>,
}

impl<T> Default for PacketHistory<T> {
    fn default() -> Self {
        Self { packets: VecDeque::new(), first: 0, rtt: None }
    }
}

impl<T: Clone> PacketHistory<T> {
    pub fn new() -> Self {
        Self::default()
    }

    /// The RTT the history works with: packets are kept 3 RTTs, not resent within one.
    pub fn set_rtt(&mut self, rtt: Duration) {
        self.rtt = Some(rtt);
    }

    /// Packets held.
    pub fn len(&self) -> usize {
        self.packets.iter().filter(|p| p.is_some()).count()
    }

    pub fn is_empty(&self) -> bool {
        self.packets.iter().all(Option::is_none)
    }

    /// Media packet `seq` left the pacer at `now`. Sequence numbers only grow.
    pub fn put(&mut self, now: Instant, seq: u64, item: T) {
        self.cull(now);
        if self.packets.is_empty() {
            self.first = seq;
        }
        let Some(k) = seq.checked_sub(self.first) else { return };
        let k = k as usize;
        if k >= self.packets.len() {
            self.packets.resize_with(k, || None);
            self.packets.push_back(Some(Stored { item, sent: now, retransmissions: 0, pending: false }));
        }
    }

    /// The packet to retransmit for a NACK of `seq`, marked as queued; `None` if it is not held,
    /// already queued, or was sent less than one RTT ago.
    pub fn take_for_retransmission(&mut self, now: Instant, seq: u64) -> Option<T> {
        let rtt = self.rtt;
        let stored = self.get_mut(seq)?;
        let too_soon = stored.retransmissions > 0 && rtt.is_some_and(|rtt| now < stored.sent + rtt);
        if stored.pending || too_soon {
            return None;
        }
        stored.pending = true;
        Some(stored.item.clone())
    }

    /// A queued retransmission was not sent after all (the limiter refused it).
    pub fn cancel_retransmission(&mut self, seq: u64) {
        if let Some(stored) = self.get_mut(seq) {
            stored.pending = false;
        }
    }

    /// The retransmission of `seq` left the pacer at `now`.
    pub fn retransmitted(&mut self, now: Instant, seq: u64) {
        if let Some(stored) = self.get_mut(seq) {
            stored.pending = false;
            stored.sent = now;
            stored.retransmissions += 1;
        }
    }

    /// The unwrapped sequence number nearest the newest held packet whose low 16 bits are `seq`.
    pub fn unwrap(&self, seq: u16) -> Option<u64> {
        let newest = self.first + self.packets.len().checked_sub(1)? as u64;
        let back = (newest as u16).wrapping_sub(seq);
        newest.checked_sub(u64::from(back))
    }

    fn get_mut(&mut self, seq: u64) -> Option<&mut Stored<T>> {
        let k = usize::try_from(seq.checked_sub(self.first)?).ok()?;
        self.packets.get_mut(k)?.as_mut()
    }

    /// Drops packets older than max(1 s, 3 × RTT), and the oldest beyond [`MAX_CAPACITY`].
    fn cull(&mut self, now: Instant) {
        let keep = self
            .rtt
            .map_or(MIN_PACKET_DURATION, |rtt| (rtt * MIN_PACKET_DURATION_RTTS).max(MIN_PACKET_DURATION));
        while let Some(front) = self.packets.front() {
            let expired = match front {
                None => true,
                Some(p) => !p.pending && p.sent + keep <= now,
            };
            if !expired && self.packets.len() < MAX_CAPACITY {
                break;
            }
            self.packets.pop_front();
            self.first += 1;
        }
    }
}

/// Bytes sent within a sliding window.
#[derive(Clone, Debug)]
struct Window {
    span: Duration,
    entries: VecDeque<(Instant, DataSize)>,
    total: DataSize,
}

impl Window {
    fn new(span: Duration) -> Self {
        Self { span, entries: VecDeque::new(), total: DataSize::ZERO }
    }

    fn expire(&mut self, now: Instant) {
        while let Some(&(t, size)) = self.entries.front() {
            if t + self.span > now {
                break;
            }
            self.entries.pop_front();
            self.total -= size;
        }
    }

    fn add(&mut self, now: Instant, size: DataSize) {
        self.expire(now);
        self.entries.push_back((now, size));
        self.total += size;
    }

    fn total(&mut self, now: Instant) -> DataSize {
        self.expire(now);
        self.total
    }
}

/// Retransmitted bytes over the last [`RETRANSMIT_WINDOW`] may not exceed the target rate.
#[derive(Clone, Debug)]
pub struct RetransmissionLimiter {
    used: Window,
    max_rate: Bitrate,
}

impl Default for RetransmissionLimiter {
    fn default() -> Self {
        Self { used: Window::new(RETRANSMIT_WINDOW), max_rate: Bitrate::ZERO }
    }
}

impl RetransmissionLimiter {
    pub fn set_max_rate(&mut self, rate: Bitrate) {
        self.max_rate = rate;
    }

    /// Takes `size` from the budget if it fits.
    pub fn try_use(&mut self, now: Instant, size: DataSize) -> bool {
        let allowed = self.max_rate * RETRANSMIT_WINDOW;
        if self.used.total(now) + size > allowed {
            return false;
        }
        self.used.add(now, size);
        true
    }
}

/// What a sent packet was, for [`SendRates`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SentKind {
    Media,
    Retransmission,
    Fec,
}

/// Send rates over the last second by kind (see module docs).
#[derive(Clone, Debug)]
pub struct SendRates {
    media: Window,
    retransmission: Window,
    fec: Window,
}

impl Default for SendRates {
    fn default() -> Self {
        Self {
            media: Window::new(SEND_RATE_WINDOW),
            retransmission: Window::new(SEND_RATE_WINDOW),
            fec: Window::new(SEND_RATE_WINDOW),
        }
    }
}

impl SendRates {
    pub fn on_sent(&mut self, now: Instant, kind: SentKind, size: DataSize) {
        match kind {
            SentKind::Media => self.media.add(now, size),
            SentKind::Retransmission => self.retransmission.add(now, size),
            SentKind::Fec => self.fec.add(now, size),
        }
    }

    /// The share of the target that protection takes: (retransmission + FEC) / everything sent
    /// over the last second, at most [`MAX_PROTECTION_OVERHEAD`] (libwebrtc
    /// `FecControllerDefault::UpdateFecRates`).
    pub fn protection_overhead(&mut self, now: Instant) -> f64 {
        let protection = (self.retransmission.total(now) + self.fec.total(now)).as_bytes() as f64;
        let total = protection + self.media.total(now).as_bytes() as f64;
        if total <= 0.0 {
            return 0.0;
        }
        (protection / total).min(MAX_PROTECTION_OVERHEAD)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t: i64) -> Instant {
        Instant::from_millis(t)
    }

    #[test]
    fn a_packet_is_resent_once_per_rtt() {
        let mut h = PacketHistory::new();
        h.set_rtt(Duration::from_millis(55));
        h.put(ms(0), 100, "p100");
        assert_eq!(h.take_for_retransmission(ms(50), 100), Some("p100"));
        // Queued: a second NACK before it leaves gets nothing.
        assert_eq!(h.take_for_retransmission(ms(51), 100), None);
        h.retransmitted(ms(60), 100);
        // Within one RTT of the retransmission: the receiver cannot have seen it yet.
        assert_eq!(h.take_for_retransmission(ms(114), 100), None);
        assert_eq!(h.take_for_retransmission(ms(115), 100), Some("p100"));
        // Never stored.
        assert_eq!(h.take_for_retransmission(ms(115), 99), None);
    }

    #[test]
    fn packets_are_kept_one_second_or_three_rtts() {
        let mut h = PacketHistory::new();
        h.put(ms(0), 1, 1);
        h.put(ms(999), 2, 2);
        assert_eq!(h.len(), 2);
        h.put(ms(1000), 3, 3);
        assert_eq!(h.take_for_retransmission(ms(1000), 1), None, "older than 1 s");
        assert!(h.take_for_retransmission(ms(1000), 2).is_some());
        h.retransmitted(ms(1000), 2);
        h.set_rtt(Duration::from_millis(500));
        h.put(ms(2400), 4, 4);
        // 3 × 500 ms = 1.5 s: packets 2 and 3 (last sent at 1000 ms) are still held.
        assert_eq!(h.len(), 3);
        h.put(ms(2600), 5, 5);
        assert_eq!(h.take_for_retransmission(ms(2600), 3), None);
    }

    #[test]
    fn capacity_is_bounded() {
        let mut h = PacketHistory::new();
        for s in 0..(MAX_CAPACITY as u64 + 500) {
            h.put(ms(0), s, s);
        }
        assert_eq!(h.len(), MAX_CAPACITY);
        assert!(h.take_for_retransmission(ms(0), 499).is_none());
        assert!(h.take_for_retransmission(ms(0), 500).is_some());
    }

    #[test]
    fn sequence_numbers_unwrap_near_the_newest() {
        let mut h = PacketHistory::new();
        h.put(ms(0), 65_534, ());
        h.put(ms(0), 65_535, ());
        h.put(ms(0), 65_536, ());
        assert_eq!(h.unwrap(0), Some(65_536));
        assert_eq!(h.unwrap(65_535), Some(65_535));
        assert_eq!(PacketHistory::<()>::new().unwrap(1), None);
    }

    #[test]
    fn the_limiter_allows_the_target_over_500_ms() {
        let mut l = RetransmissionLimiter::default();
        l.set_max_rate(Bitrate::kbps(160));
        // 160 kbit/s × 0.5 s = 10 000 B.
        for _ in 0..10 {
            assert!(l.try_use(ms(0), DataSize::bytes(1000)));
        }
        assert!(!l.try_use(ms(100), DataSize::bytes(1)));
        assert!(l.try_use(ms(500), DataSize::bytes(1000)), "the first ones left the window");
    }

    #[test]
    fn protection_overhead_is_capped_at_half() {
        let mut r = SendRates::default();
        r.on_sent(ms(0), SentKind::Media, DataSize::bytes(9000));
        r.on_sent(ms(10), SentKind::Retransmission, DataSize::bytes(1000));
        assert!((r.protection_overhead(ms(20)) - 0.1).abs() < 1e-12);
        r.on_sent(ms(20), SentKind::Fec, DataSize::bytes(20_000));
        assert_eq!(r.protection_overhead(ms(30)), MAX_PROTECTION_OVERHEAD);
        assert_eq!(r.protection_overhead(ms(2000)), 0.0, "all of it left the window");
    }
}
