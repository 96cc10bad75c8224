//! mahimahi's link model: the link serves its queue only at delivery opportunities, each of which
//! carries up to 1504 bytes. A capacity trace in mahimahi's format lists the opportunities.
//!
//! Source: mahimahi's `LinkQueue` (github.com/ravinet/mahimahi, `src/frontend/link_queue.cc`,
//! used by `mm-link`), described in Netravali et al., "Mahimahi: Accurate Record-and-Replay for
//! HTTP", USENIX ATC 2015. The facts followed here, from that code:
//!
//! - A trace is a list of millisecond timestamps, non-decreasing, the last one non-zero; each is
//!   one delivery opportunity (several on one millisecond give more capacity).
//! - An opportunity is worth 1504 bytes (`PACKET_SIZE`, "default max TUN payload size").
//! - The trace loops: after its last opportunity it starts again, shifted by the last timestamp
//!   (`base_timestamp_ += schedule_.back()`). The period is therefore the last timestamp, and an
//!   opportunity at 0 in the next round falls on the same instant as the last one of this round.
//!   (`mm-link --once` stops instead; not modelled.)
//! - An opportunity's bytes go to the packet in service, then to the next queued packets in
//!   order; a packet larger than what is left takes the rest and continues at the next
//!   opportunity, and leaves the link at the opportunity that completes it. Bytes of an
//!   opportunity that no packet uses are lost, never saved for later.
//! - The link is brought up to date before an arriving packet joins the queue, so a packet never
//!   uses an opportunity at or before its own arrival.
//! - The link comes up with the emulation (its base timestamp is its creation time): here, at 0.

use std::sync::Arc;

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};
use serde::{Deserialize, Serialize};

use super::capacity::CapacitySchedule;

/// What one delivery opportunity carries (mahimahi's `PACKET_SIZE`).
pub const OPPORTUNITY_SIZE: DataSize = DataSize::bytes(1504);

/// The delivery opportunities of one round of a trace, as offsets from the start of the round.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Vec<Duration>", into = "Vec<Duration>")]
pub struct DeliveryOpportunities {
    /// Non-decreasing; the last is the period and is positive.
    offsets: Arc<[Duration]>,
}

impl From<DeliveryOpportunities> for Vec<Duration> {
    fn from(o: DeliveryOpportunities) -> Self {
        o.offsets.to_vec()
    }
}

impl TryFrom<Vec<Duration>> for DeliveryOpportunities {
    type Error = &'static str;

    fn try_from(offsets: Vec<Duration>) -> Result<Self, Self::Error> {
        Self::new(offsets).ok_or("delivery opportunities are non-negative, in order, and end after 0")
    }
}

impl DeliveryOpportunities {
    /// One round of opportunities; `None` unless the offsets are non-empty, non-negative,
    /// non-decreasing and the last is positive (what mahimahi accepts; the parser says which
    /// rule a file breaks).
    pub fn new(offsets: Vec<Duration>) -> Option<Self> {
        let ordered = offsets.windows(2).all(|w| w[0] <= w[1]);
        let valid = offsets.first().is_some_and(|f| *f >= Duration::ZERO)
            && offsets.last().is_some_and(|l| *l > Duration::ZERO);
        (ordered && valid).then(|| Self { offsets: offsets.into() })
    }

    /// Opportunities strictly before `t`, over every round from time zero. Round k's
    /// opportunities are at k × period + offset; the rounds before k0 - 1 (k0 = t / period) lie
    /// wholly before `t`, since no offset exceeds the period.
    pub fn count_before(&self, t: Instant) -> u128 {
        let t_us = (t - Instant::ZERO).as_micros();
        if t_us <= 0 {
            return 0;
        }
        let period = self.period().as_micros();
        let k0 = t_us / period;
        let whole = u128::try_from(k0 - 1).unwrap_or(0) * self.len() as u128;
        let partial = [k0 - 1, k0]
            .into_iter()
            .filter(|&k| k >= 0)
            .map(|k| {
                let within = Duration::from_micros(t_us - k * period);
                self.offsets.partition_point(|&o| o < within) as u128
            })
            .sum::<u128>();
        whole + partial
    }

    /// How long a round lasts: the last timestamp.
    pub fn period(&self) -> Duration {
        *self.offsets.last().expect("never empty")
    }

    /// Opportunities per round.
    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    /// Never true; here for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// The long-run rate: a round's opportunities, 1504 bytes each, per period.
    pub fn mean_rate(&self) -> Bitrate {
        let bits = u128::from(OPPORTUNITY_SIZE.as_bits()) * self.len() as u128;
        let us = self.period().as_micros() as u128;
        Bitrate::bps(u64::try_from(bits * 1_000_000 / us).unwrap_or(u64::MAX))
    }

    /// The rate the opportunities offer in each `bin` from time zero until `end` (the last bin
    /// cut at `end`): what the links table reports for a link served this way. Equal
    /// neighbouring bins merge into one step.
    ///
    /// Counting takes a binary search per bin (`count_before`), not a step per opportunity: a
    /// trace of many opportunities per millisecond costs no more than a sparse one.
    pub fn binned_rate(&self, bin: Duration, end: Instant) -> CapacitySchedule {
        assert!(bin > Duration::ZERO, "bins have a length");
        let mut steps: Vec<(Instant, Option<Bitrate>)> = Vec::new();
        let mut start = Instant::ZERO;
        while start < end {
            let stop = (start + bin).min(end);
            let count = self.count_before(stop) - self.count_before(start);
            let bits = u128::from(OPPORTUNITY_SIZE.as_bits()) * count;
            let us = (stop - start).as_micros() as u128;
            let rate = Bitrate::bps(u64::try_from(bits * 1_000_000 / us).unwrap_or(u64::MAX));
            if steps.last().is_none_or(|s| s.1 != Some(rate)) {
                steps.push((start, Some(rate)));
            }
            start = stop;
        }
        CapacitySchedule::from_steps(steps)
    }
}

/// Where a link stands in its trace: the next opportunity not yet used or lost.
#[derive(Clone, Debug)]
pub struct OpportunityClock {
    opportunities: DeliveryOpportunities,
    /// Index of the next opportunity within the round.
    index: usize,
    /// When the current round started.
    base: Instant,
}

impl OpportunityClock {
    /// A link that comes up at time zero.
    pub fn new(opportunities: DeliveryOpportunities) -> Self {
        Self { opportunities, index: 0, base: Instant::ZERO }
    }

    /// When the next opportunity comes.
    pub fn next(&self) -> Instant {
        self.base + self.opportunities.offsets[self.index]
    }

    /// Uses the next opportunity; returns its time.
    pub fn take(&mut self) -> Instant {
        let at = self.next();
        self.index += 1;
        if self.index == self.opportunities.len() {
            self.index = 0;
            self.base += self.opportunities.period();
        }
        at
    }

    /// Loses every opportunity at or before `now`: the next one is the first after it. In
    /// constant time per round skipped, so a link idle for a long time catches up at once.
    pub fn skip_through(&mut self, now: Instant) {
        if self.next() > now {
            return;
        }
        let offsets = &self.opportunities.offsets;
        let period = self.opportunities.period();
        // Whole rounds first: the round that contains `now` starts at `base + k × period`.
        let rounds = (now - self.base).as_micros() / period.as_micros();
        if rounds > 0 {
            self.base += period * rounds;
            self.index = 0;
        }
        let within = now - self.base;
        // The opportunities already used in this round are at or before `now` too, so the
        // search can start from the beginning of the round.
        let i = offsets.partition_point(|o| *o <= within);
        if i == offsets.len() {
            self.index = 0;
            self.base += period;
        } else {
            self.index = i;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(ms: &[i64]) -> DeliveryOpportunities {
        DeliveryOpportunities::new(ms.iter().map(|&m| Duration::from_millis(m)).collect()).unwrap()
    }

    fn at(ms: i64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn mahimahi_rejects_what_it_rejects() {
        assert!(DeliveryOpportunities::new(vec![]).is_none());
        // "trace must last for a nonzero amount of time"
        assert!(DeliveryOpportunities::new(vec![Duration::ZERO, Duration::ZERO]).is_none());
        // "timestamps must be monotonically nondecreasing"
        assert!(
            DeliveryOpportunities::new(vec![Duration::from_millis(5), Duration::from_millis(4)]).is_none()
        );
        assert!(
            DeliveryOpportunities::new(vec![Duration::from_millis(-1), Duration::from_millis(4)]).is_none()
        );
    }

    #[test]
    fn the_trace_loops_shifted_by_its_last_timestamp() {
        // 0, 5, 10 | 10, 15, 20 | 20, 25, 30: the first of a round falls on the last of the one
        // before, as in mahimahi.
        let mut c = OpportunityClock::new(ops(&[0, 5, 10]));
        let times: Vec<Instant> = (0..7).map(|_| c.take()).collect();
        assert_eq!(times, [0, 5, 10, 10, 15, 20, 20].map(at));
        // A trace without an opportunity at 0: one every millisecond from 1 ms.
        let mut c = OpportunityClock::new(ops(&[1]));
        assert_eq!((0..3).map(|_| c.take()).collect::<Vec<_>>(), [1, 2, 3].map(at));
    }

    #[test]
    fn skipping_loses_everything_up_to_and_including_now() {
        let mut c = OpportunityClock::new(ops(&[2, 2, 7, 10]));
        c.skip_through(at(1));
        assert_eq!(c.next(), at(2));
        c.skip_through(at(2));
        assert_eq!(c.next(), at(7), "both opportunities at 2 ms are gone");
        // Across rounds: rounds start at 0, 10, 20, 30; 34 ms is in the fourth, after its 32.
        c.skip_through(at(34));
        assert_eq!(c.next(), at(37));
        // Exactly on a round boundary: the 40 ms opportunity (10 of the fourth round) is lost;
        // the fifth round's 2 ms comes next.
        c.skip_through(at(40));
        assert_eq!(c.next(), at(42));
        // Skipping to a time before the next opportunity changes nothing.
        c.skip_through(at(41));
        assert_eq!(c.next(), at(42));
        // Skipping then taking is the same sequence as taking one by one.
        let mut slow = OpportunityClock::new(ops(&[2, 2, 7, 10]));
        while slow.next() <= at(40) {
            slow.take();
        }
        assert_eq!(slow.next(), at(42));
    }

    #[test]
    fn rates_count_1504_bytes_per_opportunity() {
        // 1000 opportunities per second (one per millisecond): 1000 × 1504 × 8 bit/s.
        let every_ms = ops(&(1..=1000).collect::<Vec<_>>());
        assert_eq!(every_ms.mean_rate(), Bitrate::bps(12_032_000));
        // Two per millisecond on even milliseconds over a 10 ms round: 10 per 10 ms.
        let bursts = ops(&[2, 2, 4, 4, 6, 6, 8, 8, 10, 10]);
        assert_eq!(bursts.mean_rate(), Bitrate::bps(12_032_000));
        // 5 ms bins over 20 ms: rounds at 0 and 10 ms put 4, 4, 6, 4 opportunities in the bins
        // [0, 5), [5, 10), [10, 15), [15, 20) (the first round's pair at 10 ms falls in the
        // third); 4 × 1504 × 8 bits per 5 ms = 9.6256 Mbit/s. Equal bins merge.
        let s = bursts.binned_rate(Duration::from_millis(5), at(20));
        let steps: Vec<(Instant, u64)> = s.steps().iter().map(|st| (st.0, st.1.unwrap().as_bps())).collect();
        assert_eq!(steps, [(at(0), 9_625_600), (at(10), 14_438_400), (at(15), 9_625_600)]);
        // A last bin cut short by the end of the run is averaged over its own length: [10, 12)
        // holds the pair at 10 ms, 2 × 1504 × 8 bits in 2 ms.
        let s = bursts.binned_rate(Duration::from_millis(5), at(12));
        assert_eq!(s.steps().last().unwrap(), &(at(10), Some(Bitrate::bps(12_032_000))));
    }

    proptest::proptest! {
        #[test]
        fn counting_by_search_is_counting_one_by_one(
            gaps in proptest::collection::vec(0i64..5, 1..30),
            probes in proptest::collection::vec(0i64..400, 10),
        ) {
            let mut at = 0;
            let offsets: Vec<i64> = gaps.iter().map(|g| { at += g; at }).collect();
            let Some(o) = DeliveryOpportunities::new(offsets.iter().map(|&m| Duration::from_millis(m)).collect()) else {
                return Ok(());
            };
            for p in probes {
                let t = Instant::from_millis(p);
                let mut clock = OpportunityClock::new(o.clone());
                let mut n = 0u128;
                while clock.next() < t {
                    clock.take();
                    n += 1;
                }
                proptest::prop_assert_eq!(o.count_before(t), n, "before {} ms", p);
            }
        }
    }
}
