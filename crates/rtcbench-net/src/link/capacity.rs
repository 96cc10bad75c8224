//! Link capacity as a piecewise-constant schedule (RFC 8867 §3: capacities change at given
//! times; between changes the rate is constant).

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};
use serde::{Deserialize, Serialize};

/// Capacity over time: `steps[i]` holds from its instant until the next step. `None` means no
/// capacity restriction (a packet is serialised in no time).
///
/// A periodic schedule (a looping capacity trace) keeps one round of steps and repeats it every
/// `period`, so it takes memory for its steps, however long the run; equal neighbouring steps,
/// across the end of a round too, are one step (no change).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ScheduleText", into = "ScheduleText")]
pub struct CapacitySchedule {
    steps: Vec<(Instant, Option<Bitrate>)>,
    /// With a period, `steps` is one round, from 0 to before `period`.
    period: Option<Duration>,
    /// Steps from this instant on are never reached (the run's end); `min_rate` ignores them.
    horizon: Instant,
}

/// A schedule as a relay's configuration file carries it: instants as microseconds from time
/// zero, `null` for an unlimited step, the horizon `null` when the schedule has none.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScheduleText {
    steps_us: Vec<(i64, Option<Bitrate>)>,
    period: Option<Duration>,
    horizon_us: Option<i64>,
}

impl From<CapacitySchedule> for ScheduleText {
    fn from(s: CapacitySchedule) -> Self {
        Self {
            steps_us: s.steps.iter().map(|&(at, rate)| ((at - Instant::ZERO).as_micros(), rate)).collect(),
            period: s.period,
            horizon_us: (s.horizon != Instant::FAR_FUTURE).then(|| (s.horizon - Instant::ZERO).as_micros()),
        }
    }
}

impl TryFrom<ScheduleText> for CapacitySchedule {
    type Error = String;

    /// Holds the invariants the constructors keep: steps from 0 in increasing order, within a
    /// positive period.
    fn try_from(t: ScheduleText) -> Result<Self, String> {
        let at = |us: i64| Instant::ZERO + Duration::from_micros(us);
        if t.steps_us.first().is_none_or(|s| s.0 != 0) {
            return Err("a capacity schedule starts with a step at 0".into());
        }
        if !t.steps_us.windows(2).all(|w| w[0].0 < w[1].0) {
            return Err("a capacity schedule's steps are in increasing order".into());
        }
        if let Some(period) = t.period {
            if period <= Duration::ZERO || t.steps_us.last().is_some_and(|s| s.0 >= period.as_micros()) {
                return Err("a periodic capacity schedule's steps lie within its positive period".into());
            }
        }
        Ok(Self {
            steps: t.steps_us.into_iter().map(|(us, rate)| (at(us), rate)).collect(),
            period: t.period,
            horizon: t.horizon_us.map_or(Instant::FAR_FUTURE, at),
        })
    }
}

impl CapacitySchedule {
    /// A link without a capacity restriction.
    pub fn unlimited() -> Self {
        Self::from_steps(vec![(Instant::ZERO, None)])
    }

    pub fn constant(rate: Bitrate) -> Self {
        Self::from_steps(vec![(Instant::ZERO, Some(rate))])
    }

    /// Steps sorted by time; the first applies from time zero whatever its instant says.
    pub fn from_steps(mut steps: Vec<(Instant, Option<Bitrate>)>) -> Self {
        steps.sort_by_key(|s| s.0);
        if steps.is_empty() {
            return Self::unlimited();
        }
        steps[0].0 = Instant::ZERO;
        Self { steps, period: None, horizon: Instant::FAR_FUTURE }
    }

    /// `steps` (offsets in [0, `period`), the first 0) repeated every `period` from time zero,
    /// as far as `horizon`. Equal neighbours merge.
    ///
    /// # Panics
    /// If the steps are empty, unordered, do not start at 0 or reach the period.
    pub fn periodic(steps: Vec<(Duration, Option<Bitrate>)>, period: Duration, horizon: Instant) -> Self {
        assert!(steps.first().is_some_and(|s| s.0 == Duration::ZERO), "a round starts at 0");
        assert!(steps.windows(2).all(|w| w[0].0 < w[1].0), "steps are ordered");
        assert!(steps.last().is_some_and(|s| s.0 < period), "steps lie within the period");
        let mut merged: Vec<(Instant, Option<Bitrate>)> = Vec::with_capacity(steps.len());
        for (at, rate) in steps {
            if merged.last().is_none_or(|s| s.1 != rate) {
                merged.push((Instant::ZERO + at, rate));
            }
        }
        Self { steps: merged, period: Some(period), horizon }
    }

    /// The steps of the schedule (of one round, for a periodic one).
    pub fn steps(&self) -> &[(Instant, Option<Bitrate>)] {
        &self.steps
    }

    /// The start of the round that holds `t`, and the index of the step in force at `t`. A
    /// periodic schedule stops changing at its horizon: its last step before it holds on.
    #[inline]
    fn locate(&self, t: Instant) -> (Instant, usize) {
        let t = match self.period {
            Some(_) if t >= self.horizon && self.horizon > Instant::ZERO => {
                self.horizon - Duration::from_micros(1)
            }
            _ => t,
        };
        let base = match self.period {
            Some(p) if t > Instant::ZERO => {
                Instant::ZERO
                    + Duration::from_micros((t - Instant::ZERO).as_micros() / p.as_micros() * p.as_micros())
            }
            _ => Instant::ZERO,
        };
        let local = Instant::ZERO + (t - base);
        (base, self.steps.partition_point(|s| s.0 <= local).saturating_sub(1))
    }

    /// The step after step `i` of the round starting at `base`: its round start and index, and
    /// the instant it starts; `None` after the last step of a schedule without period.
    #[inline]
    fn following(&self, base: Instant, i: usize) -> Option<(Instant, usize, Instant)> {
        let next = match (self.steps.get(i + 1), self.period) {
            (Some(next), _) => (base, i + 1, base + (next.0 - Instant::ZERO)),
            (None, Some(period)) => (base + period, 0, base + period),
            (None, None) => return None,
        };
        // A periodic schedule has no step from its horizon on.
        (self.period.is_none() || next.2 < self.horizon).then_some(next)
    }

    /// The capacity in force at `t`.
    #[inline]
    pub fn rate_at(&self, t: Instant) -> Option<Bitrate> {
        self.steps[self.locate(t).1].1
    }

    /// The capacity that sizes a queue given in drain time at `t`: the capacity in force, or during
    /// an outage (zero capacity) the last non-zero capacity before it, so a link that stops for a
    /// moment buffers what it would have buffered instead of dropping everything.
    #[inline]
    pub fn sizing_rate_at(&self, t: Instant) -> Option<Bitrate> {
        let (base, i) = self.locate(t);
        match self.steps[i].1 {
            Some(r) if r.is_zero() => {
                let earlier = self.steps[..i].iter().rev();
                // A periodic schedule past its first round also looks back into the round before.
                let before =
                    (self.period.is_some() && base > Instant::ZERO).then(|| self.steps[i..].iter().rev());
                earlier
                    .chain(before.into_iter().flatten())
                    .find_map(|s| s.1.filter(|r| !r.is_zero()))
                    .or(Some(r))
            }
            other => other,
        }
    }

    /// The first change strictly after `t`.
    pub fn next_change_after(&self, t: Instant) -> Option<Instant> {
        let (mut base, mut i) = self.locate(t);
        let rate = self.steps[i].1;
        // Around one round at most: a periodic schedule of one rate never changes.
        for _ in 0..=self.steps.len() {
            let (b, j, at) = self.following(base, i)?;
            if self.steps[j].1 != rate || self.period.is_none() {
                return Some(at);
            }
            (base, i) = (b, j);
        }
        None
    }

    /// The lowest finite capacity the schedule reaches before its horizon (`None` if it is never
    /// restricted).
    pub fn min_rate(&self) -> Option<Bitrate> {
        let reached = |s: &&(Instant, Option<Bitrate>)| {
            s.0 == Instant::ZERO
                || s.0 < self.horizon
                || self.period.is_some_and(|p| Instant::ZERO + p <= self.horizon)
        };
        self.steps.iter().filter(reached).filter_map(|s| s.1).min()
    }

    /// When serialising `size` bytes started at `start` finishes, integrating the rate across
    /// capacity changes (a packet on the wire when the rate changes continues at the new rate).
    /// A zero-rate period pauses the transmission; a schedule that ends at zero never finishes,
    /// nor does a periodic one that is zero throughout.
    #[inline]
    pub fn finish_time(&self, start: Instant, size: DataSize) -> Instant {
        let (mut base, mut i) = self.locate(start);
        let mut t = start;
        // Remaining bits times 10^6, so that bits / (bit/s) stays in exact microseconds.
        let mut remaining = u128::from(size.as_bits()) * 1_000_000;
        // A round without capacity would loop forever.
        let mut idle_rounds = 0;
        loop {
            let Some(rate) = self.steps[i].1 else { return t };
            let next = self.following(base, i);
            let end = next.map(|n| n.2);
            let rate = u128::from(rate.as_bps());
            if rate > 0 {
                idle_rounds = 0;
                let needed_us = remaining.div_ceil(rate);
                match end {
                    Some(end) if t + Duration::from_micros(needed_us as i64) > end => {
                        remaining -= (end - t).as_micros() as u128 * rate;
                    }
                    _ => return t + Duration::from_micros(needed_us as i64),
                }
            }
            match next {
                Some((b, j, at)) => {
                    if j == 0 && b > base {
                        idle_rounds += 1;
                        if idle_rounds > 1 {
                            return Instant::FAR_FUTURE;
                        }
                    }
                    (base, i, t) = (b, j, at);
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
