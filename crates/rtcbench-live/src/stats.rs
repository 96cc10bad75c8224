//! How late a live process kept its time, kept as a histogram of 1 µs bins (memory fixed however
//! long the run), so the report's percentiles are exact to the microsecond: the relay's timing
//! error (how late each frame left against the instant its last link delivered it) and an agent's
//! (how late it took up its state machine's deadlines, [`DeadlineLateness`]).

use serde::Serialize;

/// Errors up to this many microseconds get a bin of their own; beyond, only the maximum is kept.
const BINS_US: usize = 100_000;

pub struct Lateness {
    /// Per µs from 0, the errors that fell there; the last bin's edge is the range's end.
    bins: Vec<u64>,
    beyond: u64,
    count: u64,
    max_ns: i128,
    sum_ns: i128,
}

/// The summary of a run's timing errors.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LatenessSummary {
    pub departures: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    pub mean_us: f64,
}

/// What an agent's log says of its own timing (`rtcbench.testbed.timing` judges it): how many
/// deadlines it took up and how late, in µs.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct DeadlineLateness {
    pub count: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

impl Default for Lateness {
    fn default() -> Self {
        Self::with_bins(BINS_US)
    }
}

impl Lateness {
    /// A histogram of `bins_us` 1 µs bins: errors beyond count only in the maximum and mean.
    pub fn with_bins(bins_us: usize) -> Self {
        Self { bins: vec![0; bins_us + 1], beyond: 0, count: 0, max_ns: 0, sum_ns: 0 }
    }

    pub fn record(&mut self, late_ns: i128) {
        let late_ns = late_ns.max(0);
        let us = usize::try_from(late_ns / 1000).unwrap_or(usize::MAX);
        let range = self.bins.len() - 1;
        match self.bins.get_mut(us) {
            Some(bin) if us < range => *bin += 1,
            _ => self.beyond += 1,
        }
        self.count += 1;
        self.max_ns = self.max_ns.max(late_ns);
        self.sum_ns += late_ns;
    }

    /// The `q` quantile in µs: the upper edge of the bin that holds it (never above the maximum).
    fn quantile_us(&self, q: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (us, &n) in self.bins.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return ((us + 1) as f64).min(self.max_ns as f64 / 1e3);
            }
        }
        self.max_ns as f64 / 1e3
    }

    /// The summary an agent logs: count, p50, p99 and max.
    pub fn deadlines(&self) -> DeadlineLateness {
        DeadlineLateness {
            count: self.count,
            p50_us: self.quantile_us(0.50),
            p99_us: self.quantile_us(0.99),
            max_us: self.max_ns as f64 / 1e3,
        }
    }

    pub fn summary(&self) -> LatenessSummary {
        LatenessSummary {
            departures: self.count,
            p50_us: self.quantile_us(0.50),
            p99_us: self.quantile_us(0.99),
            max_us: self.max_ns as f64 / 1e3,
            mean_us: if self.count == 0 { 0.0 } else { self.sum_ns as f64 / self.count as f64 / 1e3 },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_exact_to_the_microsecond() {
        let mut l = Lateness::default();
        for us in 0..100 {
            l.record(i128::from(us) * 1000 + 500);
        }
        l.record(250_000_000); // 250 ms: beyond the bins
        let s = l.summary();
        assert_eq!(s.departures, 101);
        assert_eq!(s.p50_us, 51.0); // the 51st smallest lies in [50, 51) µs
        assert_eq!(s.p99_us, 100.0); // the 100th of 101 lies in [99, 100) µs
        assert_eq!(s.max_us, 250_000.0);
    }

    #[test]
    fn an_agent_s_summary_counts_its_deadlines_and_an_early_wake_up_as_on_time() {
        let mut l = Lateness::default();
        l.record(-5_000); // woken before its deadline: on time
        for us in 1..=99 {
            l.record(i128::from(us) * 1000);
        }
        let d = l.deadlines();
        assert_eq!((d.count, d.p50_us, d.p99_us, d.max_us), (100, 50.0, 99.0, 99.0));
    }

    #[test]
    fn nothing_recorded_reads_as_zero() {
        assert_eq!(Lateness::default().summary().p99_us, 0.0);
    }
}
