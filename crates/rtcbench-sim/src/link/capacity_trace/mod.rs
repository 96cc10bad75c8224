//! Capacity traces: a link's capacity read from a file (`docs/capacity-traces.md`), in one of
//! three formats:
//!
//! - mahimahi ([`mahimahi`]): delivery opportunities; the link then serves its queue as
//!   mahimahi's `mm-link` does ([`super::opportunities`]), not at a rate;
//! - OpenNetLab's JSON traces ([`opennetlab`]): segments of constant capacity, looping;
//! - CSV ([`csv`]): steps of constant rate, the last rate holding to the end of the run.
//!
//! A parser takes the file's text and returns the trace, or a [`TraceError`] that points at the
//! line or the field; the scenario loader adds the file and the scenario field.

pub mod csv;
pub mod mahimahi;
pub mod opennetlab;

use rtcbench_units::{Bitrate, Duration, Instant};
use serde::{Deserialize, Serialize};

use super::capacity::CapacitySchedule;
use super::opportunities::DeliveryOpportunities;

/// The links table reports a mahimahi link's capacity as the bytes of delivery opportunities in
/// each bin of this length: the metrics' default window (200 ms, `docs/metrics.md`), so the
/// capacity a window's utilisation divides by is the opportunities of about that window.
pub const OPPORTUNITY_REPORT_BIN: Duration = Duration::from_millis(200);

/// The file formats a capacity trace may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TraceFormat {
    /// One millisecond timestamp per line, one delivery opportunity each.
    Mahimahi,
    /// OpenNetLab's (AlphaRTC gym's) JSON: `uplink.trace_pattern` segments.
    Opennetlab,
    /// `time_s,rate_kbps` (or other units) steps.
    Csv,
}

impl TraceFormat {
    /// The name scenario files use.
    pub fn name(self) -> &'static str {
        match self {
            Self::Mahimahi => "mahimahi",
            Self::Opennetlab => "opennetlab",
            Self::Csv => "csv",
        }
    }

    /// The extensions that imply each format, for error messages.
    pub const EXTENSIONS: &'static str =
        ".mahimahi, .up and .down (mahimahi's own traces); .json (opennetlab); .csv (csv)";

    /// The format a file name implies by its extension, if any.
    pub fn from_file_name(file: &str) -> Option<Self> {
        let ext = std::path::Path::new(file).extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "mahimahi" | "up" | "down" => Some(Self::Mahimahi),
            "json" => Some(Self::Opennetlab),
            "csv" => Some(Self::Csv),
            _ => None,
        }
    }
}

/// What is wrong with a trace file: the line (1-based) or the field (a JSON path) and the
/// message. The file is named by whoever read it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TraceError {
    pub line: Option<usize>,
    pub field: Option<String>,
    pub message: String,
}

impl TraceError {
    pub(crate) fn at_line(line: usize, message: impl Into<String>) -> Self {
        Self { line: Some(line), field: None, message: message.into() }
    }

    pub(crate) fn at_field(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self { line: None, field: Some(field.into()), message: message.into() }
    }

    pub(crate) fn whole(message: impl Into<String>) -> Self {
        Self { line: None, field: None, message: message.into() }
    }
}

/// A link's capacity as a trace describes it.
#[derive(Clone, Debug, PartialEq)]
pub enum CapacityTrace {
    /// mahimahi: the link serves packets at these delivery opportunities.
    Opportunities(DeliveryOpportunities),
    /// Piecewise-constant rate (OpenNetLab, CSV).
    Rate(RateTrace),
}

impl CapacityTrace {
    /// The capacity a link with this trace reports over [0, `end`): the rate trace's steps, or
    /// the opportunities' rate per [`OPPORTUNITY_REPORT_BIN`].
    pub fn schedule(&self, end: Instant) -> CapacitySchedule {
        match self {
            Self::Opportunities(o) => o.binned_rate(OPPORTUNITY_REPORT_BIN, end),
            Self::Rate(r) => r.schedule(end),
        }
    }
}

/// Steps of constant rate: `steps[i].1` from `steps[i].0` until the next step.
#[derive(Clone, Debug, PartialEq)]
pub struct RateTrace {
    /// Offsets from the start of a round, strictly increasing, the first zero.
    pub steps: Vec<(Duration, Bitrate)>,
    /// With a period the steps repeat every period (OpenNetLab's players loop their traces);
    /// without, the last rate holds to the end of the run.
    pub period: Option<Duration>,
}

impl RateTrace {
    /// The steps laid out over [0, `end`), looped if the trace has a period; equal neighbouring
    /// steps merge.
    pub fn schedule(&self, end: Instant) -> CapacitySchedule {
        let mut steps: Vec<(Instant, Option<Bitrate>)> = Vec::new();
        let mut push = |at: Instant, rate: Bitrate| {
            if steps.last().is_none_or(|s| s.1 != Some(rate)) {
                steps.push((at, Some(rate)));
            }
        };
        match self.period {
            None => self.steps.iter().for_each(|&(o, r)| push(Instant::ZERO + o, r)),
            Some(period) => {
                let mut base = Instant::ZERO;
                // The first step always goes in, so a run shorter than nothing still has a rate.
                'rounds: loop {
                    for &(o, r) in &self.steps {
                        let at = base + o;
                        if at >= end && at > Instant::ZERO {
                            break 'rounds;
                        }
                        push(at, r);
                    }
                    base += period;
                }
            }
        }
        CapacitySchedule::from_steps(steps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: i64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn formats_follow_the_extension() {
        assert_eq!(TraceFormat::from_file_name("traces/ATT-LTE-driving.up"), Some(TraceFormat::Mahimahi));
        assert_eq!(TraceFormat::from_file_name("x.MAHIMAHI"), Some(TraceFormat::Mahimahi));
        assert_eq!(TraceFormat::from_file_name("4G_500kbps.json"), Some(TraceFormat::Opennetlab));
        assert_eq!(TraceFormat::from_file_name("walk.csv"), Some(TraceFormat::Csv));
        assert_eq!(TraceFormat::from_file_name("trace.txt"), None);
        assert_eq!(TraceFormat::from_file_name("no-extension"), None);
    }

    #[test]
    fn a_looping_rate_trace_repeats_until_the_end() {
        let r = RateTrace {
            steps: vec![(ms(0), Bitrate::kbps(1000)), (ms(300), Bitrate::kbps(500))],
            period: Some(ms(500)),
        };
        let s = r.schedule(Instant::from_millis(1200));
        let at: Vec<(i64, u64)> =
            s.steps().iter().map(|st| (st.0.as_micros() / 1000, st.1.unwrap().as_bps() / 1000)).collect();
        assert_eq!(at, [(0, 1000), (300, 500), (500, 1000), (800, 500), (1000, 1000)]);
    }

    #[test]
    fn a_rate_trace_without_a_period_holds_its_last_rate() {
        let r = RateTrace {
            steps: vec![(ms(0), Bitrate::kbps(1000)), (ms(300), Bitrate::kbps(500))],
            period: None,
        };
        let s = r.schedule(Instant::from_secs(10));
        assert_eq!(s.rate_at(Instant::from_secs(9)), Some(Bitrate::kbps(500)));
    }

    #[test]
    fn equal_neighbours_merge_across_rounds() {
        let r = RateTrace { steps: vec![(ms(0), Bitrate::kbps(300))], period: Some(ms(100)) };
        assert_eq!(r.schedule(Instant::from_secs(100)).steps().len(), 1);
    }
}
