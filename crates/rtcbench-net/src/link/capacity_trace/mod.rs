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

#[cfg(test)]
use rtcbench_units::DataSize;
use rtcbench_units::{Bitrate, Duration, Instant};
use serde::{Deserialize, Serialize};

use super::capacity::CapacitySchedule;
use super::opportunities::DeliveryOpportunities;

/// The shortest step of a rate trace (OpenNetLab, CSV): a millisecond, mahimahi's resolution.
pub const MIN_STEP: Duration = Duration::from_millis(1);

/// The largest trace file read: 256 MB (a day of a dense mahimahi trace is about 40 MB).
pub const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

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

/// The most characters of a trace's text an error quotes: enough to find the mistake.
const QUOTE_CHARS: usize = 40;

/// `text` quoted for an error message, cut to [`QUOTE_CHARS`] characters. Errors quote a file's
/// text only once it has shown itself a trace (a first mahimahi timestamp, a CSV header, an
/// OpenNetLab `trace_pattern`): a file named as a trace by mistake, or on purpose (`/etc/shadow`
/// read by a run as root), is never echoed.
pub(crate) fn quoted(text: &str) -> String {
    let (head, more) = cut(text);
    format!("{head:?}{more}")
}

/// The first [`QUOTE_CHARS`] characters of `text`, and "..." if that is not all of it.
pub(crate) fn cut(text: &str) -> (&str, &'static str) {
    match text.char_indices().nth(QUOTE_CHARS) {
        None => (text, ""),
        Some((end, _)) => (&text[..end], "..."),
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
    /// The steps as a capacity schedule over [0, `end`): looped if the trace has a period (one
    /// round kept, whatever the run's length), the last rate held otherwise; equal neighbouring
    /// steps merge.
    pub fn schedule(&self, end: Instant) -> CapacitySchedule {
        match self.period {
            Some(period) => {
                let steps = self.steps.iter().map(|&(o, r)| (o, Some(r))).collect();
                CapacitySchedule::periodic(steps, period, end)
            }
            None => {
                let mut steps: Vec<(Instant, Option<Bitrate>)> = Vec::new();
                for &(o, r) in &self.steps {
                    if steps.last().is_none_or(|s| s.1 != Some(r)) {
                        steps.push((Instant::ZERO + o, Some(r)));
                    }
                }
                CapacitySchedule::from_steps(steps)
            }
        }
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
        let mut changes = vec![0];
        let mut t = Instant::ZERO;
        while let Some(next) = s.next_change_after(t).filter(|&c| c < Instant::from_millis(1200)) {
            changes.push(next.as_micros() / 1000);
            t = next;
        }
        assert_eq!(changes, [0, 300, 500, 800, 1000]);
        let rates: Vec<u64> =
            changes.iter().map(|&c| s.rate_at(Instant::from_millis(c)).unwrap().as_bps() / 1000).collect();
        assert_eq!(rates, [1000, 500, 1000, 500, 1000]);
        // One round is kept, however long the run.
        assert_eq!(r.schedule(Instant::from_secs(86_400)).steps().len(), 2);
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
        let s = r.schedule(Instant::from_secs(100));
        assert_eq!(s.steps().len(), 1);
        assert_eq!(
            s.next_change_after(Instant::from_secs(5)),
            None,
            "one rate: no change, round after round"
        );
    }

    /// The schedule a looping trace had before it was kept as one round: every round laid out
    /// to the end of the run, equal neighbours merged.
    fn expanded(r: &RateTrace, end: Instant) -> CapacitySchedule {
        let mut steps: Vec<(Instant, Option<Bitrate>)> = Vec::new();
        let period = r.period.expect("looping");
        let mut base = Instant::ZERO;
        'rounds: loop {
            for &(o, rate) in &r.steps {
                let at = base + o;
                if at >= end && at > Instant::ZERO {
                    break 'rounds;
                }
                if steps.last().is_none_or(|s| s.1 != Some(rate)) {
                    steps.push((at, Some(rate)));
                }
            }
            base += period;
        }
        CapacitySchedule::from_steps(steps)
    }

    proptest::proptest! {
        #[test]
        fn a_round_kept_once_is_the_schedule_laid_out_round_after_round(
            lengths in proptest::collection::vec(1i64..40, 1..8),
            rates in proptest::collection::vec(0u64..4, 8),
            probes in proptest::collection::vec(0i64..3_000, 20),
            sizes in proptest::collection::vec(1u64..20_000, 20),
        ) {
            let mut steps = Vec::new();
            let mut at = 0;
            for (k, len) in lengths.iter().enumerate() {
                steps.push((ms(at), Bitrate::kbps(rates[k] * 500)));
                at += len;
            }
            let r = RateTrace { steps, period: Some(ms(at)) };
            let end = Instant::from_millis(2_500);
            let (kept, laid) = (r.schedule(end), expanded(&r, end));
            // Within the run and after it, where both hold the last rate before the end.
            for (&p, &size) in probes.iter().zip(&sizes) {
                let t = Instant::from_millis(p);
                proptest::prop_assert_eq!(kept.rate_at(t), laid.rate_at(t), "rate at {}", t);
                proptest::prop_assert_eq!(kept.sizing_rate_at(t), laid.sizing_rate_at(t), "sizing rate at {}", t);
                proptest::prop_assert_eq!(kept.min_rate(), laid.min_rate());
                {
                    let (a, b) = (kept.next_change_after(t), laid.next_change_after(t));
                    proptest::prop_assert_eq!(a, b, "change after {}", t);
                    let (a, b) = (kept.finish_time(t, DataSize::bytes(size)), laid.finish_time(t, DataSize::bytes(size)));
                    proptest::prop_assert_eq!(a, b, "finish of {} B from {}", size, t);
                }
            }
        }
    }
}
