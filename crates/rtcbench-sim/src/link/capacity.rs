//! Link capacity as a piecewise-constant schedule (RFC 8867 §3: capacities change at given
//! times; between changes the rate is constant).

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

/// Capacity over time: `steps[i]` holds from its instant until the next step. `None` means no
/// capacity restriction (a packet is serialised in no time).
#[derive(Clone, Debug, PartialEq)]
pub struct CapacitySchedule {
    steps: Vec<(Instant, Option<Bitrate>)>,
}

impl CapacitySchedule {
    /// A link without a capacity restriction.
    pub fn unlimited() -> Self {
        Self { steps: vec![(Instant::ZERO, None)] }
    }

    pub fn constant(rate: Bitrate) -> Self {
        Self { steps: vec![(Instant::ZERO, Some(rate))] }
    }

    /// Steps sorted by time; the first applies from time zero whatever its instant says.
    pub fn from_steps(mut steps: Vec<(Instant, Option<Bitrate>)>) -> Self {
        steps.sort_by_key(|s| s.0);
        if steps.is_empty() {
            return Self::unlimited();
        }
        steps[0].0 = Instant::ZERO;
        Self { steps }
    }

    pub fn steps(&self) -> &[(Instant, Option<Bitrate>)] {
        &self.steps
    }

    fn index_at(&self, t: Instant) -> usize {
        self.steps.partition_point(|s| s.0 <= t).saturating_sub(1)
    }

    /// The capacity in force at `t`.
    pub fn rate_at(&self, t: Instant) -> Option<Bitrate> {
        self.steps[self.index_at(t)].1
    }

    /// The capacity that sizes a queue given in drain time at `t`: the capacity in force, or during
    /// an outage (zero capacity) the last non-zero capacity before it, so a link that stops for a
    /// moment buffers what it would have buffered instead of dropping everything.
    pub fn sizing_rate_at(&self, t: Instant) -> Option<Bitrate> {
        let i = self.index_at(t);
        match self.steps[i].1 {
            Some(r) if r.is_zero() => {
                self.steps[..i].iter().rev().find_map(|s| s.1.filter(|r| !r.is_zero())).or(Some(r))
            }
            other => other,
        }
    }

    /// The first change strictly after `t`.
    pub fn next_change_after(&self, t: Instant) -> Option<Instant> {
        self.steps.get(self.index_at(t) + 1).map(|s| s.0)
    }

    /// The lowest finite capacity of the schedule (`None` if it is never restricted).
    pub fn min_rate(&self) -> Option<Bitrate> {
        self.steps.iter().filter_map(|s| s.1).min()
    }

    /// When serialising `size` bytes started at `start` finishes, integrating the rate across
    /// capacity changes (a packet on the wire when the rate changes continues at the new rate).
    /// A zero-rate period pauses the transmission; a schedule that ends at zero never finishes.
    pub fn finish_time(&self, start: Instant, size: DataSize) -> Instant {
        let mut i = self.index_at(start);
        let mut t = start;
        // Remaining bits times 10^6, so that bits / (bit/s) stays in exact microseconds.
        let mut remaining = u128::from(size.as_bits()) * 1_000_000;
        loop {
            let Some(rate) = self.steps[i].1 else { return t };
            let end = self.steps.get(i + 1).map(|s| s.0);
            let rate = u128::from(rate.as_bps());
            if rate > 0 {
                let needed_us = remaining.div_ceil(rate);
                match end {
                    Some(end) if t + Duration::from_micros(needed_us as i64) > end => {
                        remaining -= (end - t).as_micros() as u128 * rate;
                    }
                    _ => return t + Duration::from_micros(needed_us as i64),
                }
            }
            match end {
                Some(end) => {
                    t = end;
                    i += 1;
                }
                None => return Instant::FAR_FUTURE,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[(i64, Option<u64>)]) -> CapacitySchedule {
        CapacitySchedule::from_steps(
            v.iter().map(|&(ms, r)| (Instant::from_millis(ms), r.map(Bitrate::kbps))).collect(),
        )
    }

    #[test]
    fn rate_lookup_and_changes() {
        let c = s(&[(0, Some(1000)), (40_000, Some(2500)), (60_000, Some(600))]);
        assert_eq!(c.rate_at(Instant::from_secs(39)), Some(Bitrate::kbps(1000)));
        assert_eq!(c.rate_at(Instant::from_secs(40)), Some(Bitrate::kbps(2500)));
        assert_eq!(c.next_change_after(Instant::from_secs(40)), Some(Instant::from_secs(60)));
        assert_eq!(c.min_rate(), Some(Bitrate::kbps(600)));
    }

    #[test]
    fn serialisation_spans_a_change() {
        // 1000 bytes = 8000 bits: 4 ms at 1 Mbit/s covers 4000 bits, the rest at 2 Mbit/s takes 2 ms.
        let c = s(&[(0, Some(1000)), (4, Some(2000))]);
        assert_eq!(c.finish_time(Instant::ZERO, DataSize::bytes(1000)), Instant::from_millis(6));
        // Entirely within one step.
        assert_eq!(c.finish_time(Instant::from_millis(10), DataSize::bytes(1000)), Instant::from_millis(14));
    }

    #[test]
    fn an_outage_keeps_the_queue_size_of_the_capacity_before_it() {
        let c = s(&[(0, Some(1000)), (10, Some(0)), (20, Some(500))]);
        assert_eq!(c.sizing_rate_at(Instant::from_millis(15)), Some(Bitrate::kbps(1000)));
        assert_eq!(c.sizing_rate_at(Instant::from_millis(25)), Some(Bitrate::kbps(500)));
        // Zero from the start: nothing to fall back on.
        assert_eq!(s(&[(0, Some(0))]).sizing_rate_at(Instant::ZERO), Some(Bitrate::ZERO));
    }

    #[test]
    fn zero_rate_pauses_and_unlimited_is_instant() {
        let c = s(&[(0, Some(0)), (10, Some(1000))]);
        assert_eq!(c.finish_time(Instant::ZERO, DataSize::bytes(125)), Instant::from_millis(11));
        assert_eq!(
            CapacitySchedule::unlimited().finish_time(Instant::from_millis(3), DataSize::bytes(1500)),
            Instant::from_millis(3)
        );
        assert_eq!(s(&[(0, Some(0))]).finish_time(Instant::ZERO, DataSize::bytes(1)), Instant::FAR_FUTURE);
    }
}
