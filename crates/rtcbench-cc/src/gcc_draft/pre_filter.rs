//! Pre-filtering: packets into groups, groups into delay variations (draft-ietf-rmcat-gcc-02
//! §5.1, §5.2).
//!
//! A group is what the arrival-time model compares: `T(i)` is the departure time of its last
//! packet, `t(i)` the arrival time of its last packet, and each completed group yields the
//! inter-group delay variation `d(i) = t(i) - t(i-1) - (T(i) - T(i-1))` (§5.1). A packet joins the
//! current group if (§5.2)
//!
//! 1. it was sent within `burst_time` of the group's first packet, or
//! 2. its inter-arrival time is less than `burst_time` and its delay variation is negative (it
//!    arrived in a burst, e.g. after a channel outage).
//!
//! Rule 2 leaves open which packets the inter-arrival time and `d` of a single packet are taken
//! between. We take both relative to the current group's last packet: `Δt = t_p - t(cur)`,
//! `d_p = Δt - (T_p - T(cur))`, which is what "arrived in a burst" means and how libwebrtc's
//! `InterArrival::BelongsToBurst` reads it. libwebrtc also stops merging once a burst group spans
//! 100 ms; GCC-02 is silent, so that bound is off by default
//! ([`GccDraftConfig::max_burst_duration`](super::GccDraftConfig::max_burst_duration)).
//!
//! "Any packets received out of order are ignored by the arrival-time model" (§5.1): a packet
//! sent before the current group's first packet is dropped here. Within a group, `T` and `t` are
//! the latest departure and arrival seen, so reordering inside a group does no harm.

use rtcbench_units::{DataSize, Duration, Instant};

/// burst_time, draft-ietf-rmcat-gcc-02 §4, §5.2 and Table 1.
pub const BURST_TIME: Duration = Duration::from_millis(5);

/// One group of packets as the arrival-time model sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Group {
    /// Departure time of the group's first packet (rule 1 measures from here).
    first_departure: Instant,
    /// `T(i)`: departure time of the group's last packet.
    departure: Instant,
    /// Arrival time of the group's first packet (for the optional burst bound).
    first_arrival: Instant,
    /// `t(i)`: arrival time of the group's last packet.
    arrival: Instant,
    size: DataSize,
    packets: u32,
}

impl Group {
    fn new(departure: Instant, arrival: Instant, size: DataSize) -> Self {
        Self { first_departure: departure, departure, first_arrival: arrival, arrival, size, packets: 1 }
    }

    fn add(&mut self, departure: Instant, arrival: Instant, size: DataSize) {
        self.departure = self.departure.max(departure);
        self.arrival = self.arrival.max(arrival);
        self.size += size;
        self.packets += 1;
    }
}

/// What a completed group contributes: the inputs of the arrival-time filter and the detector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupDelta {
    /// `T(i) - T(i-1)`, the inter-departure time (§5.1).
    pub inter_departure: Duration,
    /// `t(i) - t(i-1)`, the inter-arrival time (§5.1).
    pub inter_arrival: Duration,
    /// `d(i) = t(i) - t(i-1) - (T(i) - T(i-1))`, the inter-group delay variation (§5.1).
    pub d: Duration,
    /// `t(i)`: arrival time of the last packet of group i.
    pub arrival: Instant,
    /// Bytes in group i.
    pub size: DataSize,
    /// Packets in group i.
    pub packets: u32,
}

/// The pre-filter of §5.2. Feed packets in the order they were received; a [`GroupDelta`] comes
/// out each time a group completes (when the first packet of the next group arrives) and has a
/// predecessor.
#[derive(Clone, Debug)]
pub struct PreFilter {
    /// burst_time (§5.2).
    burst_time: Duration,
    /// Longest span of arrivals a group may cover and still absorb packets by rule 2; `None`
    /// means no bound (GCC-02); libwebrtc uses 100 ms.
    max_burst_duration: Option<Duration>,
    /// Group i-1, the last completed group.
    previous: Option<Group>,
    /// Group i, being filled.
    current: Option<Group>,
}

impl PreFilter {
    pub fn new(burst_time: Duration, max_burst_duration: Option<Duration>) -> Self {
        Self { burst_time, max_burst_duration, previous: None, current: None }
    }

    /// A packet sent at `departure` (sender clock) arrived at `arrival` (receiver clock, or the
    /// receiver clock mapped onto the sender's timeline). Returns the delay variation of the group
    /// this packet completes, if any.
    pub fn on_packet(&mut self, departure: Instant, arrival: Instant, size: DataSize) -> Option<GroupDelta> {
        let Some(current) = self.current.as_mut() else {
            self.current = Some(Group::new(departure, arrival, size));
            return None;
        };
        if departure < current.first_departure {
            // Out of order with respect to the group being built (§5.1): ignored.
            return None;
        }
        // Rule 1: sent within burst_time of the group's first packet.
        let same_burst = departure - current.first_departure <= self.burst_time;
        // Rule 2: arrived within burst_time of the group's last packet, and earlier relative to
        // it than it was sent (negative delay variation).
        let inter_arrival = arrival - current.arrival;
        let d = inter_arrival - (departure - current.departure);
        let within_bound = self.max_burst_duration.is_none_or(|max| arrival - current.first_arrival < max);
        let arrived_in_burst = inter_arrival < self.burst_time && d < Duration::ZERO && within_bound;
        if same_burst || arrived_in_burst {
            current.add(departure, arrival, size);
            return None;
        }
        let completed = *current;
        self.current = Some(Group::new(departure, arrival, size));
        let delta = self.previous.map(|prev| {
            let inter_departure = completed.departure - prev.departure;
            let inter_arrival = completed.arrival - prev.arrival;
            GroupDelta {
                inter_departure,
                inter_arrival,
                d: inter_arrival - inter_departure,
                arrival: completed.arrival,
                size: completed.size,
                packets: completed.packets,
            }
        });
        self.previous = Some(completed);
        delta
    }

    #[cfg(test)]
    fn current_packets(&self) -> u32 {
        self.current.map_or(0, |g| g.packets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: i64) -> Instant {
        Instant::from_millis(v)
    }

    fn us(v: i64) -> Instant {
        Instant::from_micros(v)
    }

    const SIZE: DataSize = DataSize::bytes(1200);

    #[test]
    fn rule_1_groups_packets_sent_within_burst_time_of_the_first() {
        let mut f = PreFilter::new(BURST_TIME, None);
        // Group 1: sent at 0, 2, 5 ms (5 ms after the first still belongs, §5.2 "within").
        assert_eq!(f.on_packet(ms(0), ms(50), SIZE), None);
        assert_eq!(f.on_packet(ms(2), ms(52), SIZE), None);
        assert_eq!(f.on_packet(ms(5), ms(55), SIZE), None);
        // Group 2 starts at 5.001 ms: more than burst_time after 0 and arriving 6 ms later
        // (not a burst). No delta yet: group 1 has no predecessor.
        assert_eq!(f.on_packet(us(5_001), ms(61), SIZE), None);
        assert_eq!(f.on_packet(ms(9), ms(66), SIZE), None);
        // Group 3 starts; group 2 completes: T = 9 vs 5, t = 66 vs 55.
        let delta = f.on_packet(ms(20), ms(75), SIZE).expect("group 2 completes");
        assert_eq!(delta.inter_departure, Duration::from_millis(4));
        assert_eq!(delta.inter_arrival, Duration::from_millis(11));
        assert_eq!(delta.d, Duration::from_millis(7));
        assert_eq!(delta.arrival, ms(66));
        assert_eq!(delta.packets, 2);
        assert_eq!(delta.size, DataSize::bytes(2400));
    }

    #[test]
    fn rule_2_merges_a_burst_after_an_outage() {
        let mut f = PreFilter::new(BURST_TIME, None);
        // Two normal groups 20 ms apart, 30 ms one-way delay.
        f.on_packet(ms(0), ms(30), SIZE);
        f.on_packet(ms(20), ms(50), SIZE);
        // Outage: packets sent at 40, 60, 80 are held and delivered back to back at 200, 201,
        // 202 ms. The one sent at 40 starts a new group (it arrived 150 ms after the last).
        let delta = f.on_packet(ms(40), ms(200), SIZE).expect("group at 20 completes");
        assert_eq!(delta.d, Duration::ZERO);
        // 60 ms: sent 20 ms after the group's first (rule 1 fails) but arrived 1 ms after its last
        // with d = 1 - 20 < 0 (rule 2): merged.
        assert_eq!(f.on_packet(ms(60), ms(201), SIZE), None);
        assert_eq!(f.on_packet(ms(80), ms(202), SIZE), None);
        // After the burst the queue is gone: 100 -> 230 ms is 28 ms after 202, not a burst.
        let delta = f.on_packet(ms(100), ms(230), SIZE).expect("burst group completes");
        assert_eq!(delta.packets, 3);
        // One group spanning departures 40..80 and arrivals 200..202 against the group at 20/50.
        assert_eq!(delta.inter_departure, Duration::from_millis(60));
        assert_eq!(delta.inter_arrival, Duration::from_millis(152));
        assert_eq!(delta.d, Duration::from_millis(92));
    }

    #[test]
    fn rule_2_needs_both_short_inter_arrival_and_negative_d() {
        let mut f = PreFilter::new(BURST_TIME, None);
        f.on_packet(ms(0), ms(30), SIZE);
        // Sent 10 ms later (rule 1 fails), arrived 4 ms later: d = 4 - 10 < 0 -> merged.
        f.on_packet(ms(10), ms(34), SIZE);
        assert_eq!(f.current_packets(), 2);
        // Sent 10 ms later, arrived 5 ms later: inter-arrival not < burst_time -> new group.
        f.on_packet(ms(20), ms(39), SIZE);
        assert_eq!(f.current_packets(), 1);
        // Group starting at 40: then 46/49 (rule 1 fails: 6 ms; inter-arrival 1, d = 1 - 6 < 0)
        // and 52/52 (inter-arrival 3, d = 3 - 6 < 0) merge.
        f.on_packet(ms(40), ms(48), SIZE);
        f.on_packet(ms(46), ms(49), SIZE);
        f.on_packet(ms(52), ms(52), SIZE);
        assert_eq!(f.current_packets(), 3);
        // Sent 1 ms after the last (13 ms after the first) and arrived 4 ms after it: the
        // inter-arrival time is short but d = 4 - 1 = 3 > 0, so it is not a burst.
        f.on_packet(ms(53), ms(56), SIZE);
        assert_eq!(f.current_packets(), 1);
    }

    #[test]
    fn optional_burst_bound_stops_merging() {
        // A draining queue: sent every 10 ms, arriving every 4 ms; rule 2 merges each packet.
        let feed = |f: &mut PreFilter, i: i64| f.on_packet(ms(10 * i), ms(10 + 4 * i), SIZE);
        let mut bounded = PreFilter::new(BURST_TIME, Some(Duration::from_millis(100)));
        let mut unbounded = PreFilter::new(BURST_TIME, None);
        feed(&mut bounded, 0);
        feed(&mut unbounded, 0);
        for i in 1..40 {
            feed(&mut bounded, i);
            feed(&mut unbounded, i);
            // With the bound, merging stops once the group's arrivals would span 100 ms:
            // 4 i < 100 for i < 25, so packet 25 starts a new group.
            let expected = if i < 25 { i as u32 + 1 } else { i as u32 - 24 };
            assert_eq!(bounded.current_packets(), expected, "packet {i}");
            // Without it (GCC-02) the whole drain is one group.
            assert_eq!(unbounded.current_packets(), i as u32 + 1);
        }
    }

    #[test]
    fn out_of_order_packets_are_ignored() {
        let mut f = PreFilter::new(BURST_TIME, None);
        f.on_packet(ms(0), ms(30), SIZE);
        f.on_packet(ms(10), ms(40), SIZE);
        // Sent before the current group (10 ms) started: ignored, changes nothing.
        assert_eq!(f.on_packet(ms(3), ms(41), SIZE), None);
        let delta = f.on_packet(ms(20), ms(50), SIZE).unwrap();
        assert_eq!(delta.packets, 1);
        assert_eq!(delta.d, Duration::ZERO);
    }
}
