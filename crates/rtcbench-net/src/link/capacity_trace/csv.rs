//! rtcbench's CSV capacity traces: a header that names each column's unit, then one row per
//! step of constant rate.
//!
//! ```text
//! # comments and blank lines are skipped
//! time_s,rate_kbps
//! 0,1000
//! 12.5,600
//! 30,1000
//! ```
//!
//! The time column is `time_s` or `time_ms`, the rate column `rate_bps`, `rate_kbps` or
//! `rate_mbps` (SI: 1 kbit/s = 1000 bit/s), in either order. Each rate holds from its row's time
//! until the next row's; the first row is at 0 and the last rate holds to the end of the run
//! (a CSV trace does not loop: it has no end time to loop at). A zero rate is an outage.

use rtcbench_units::{Bitrate, Duration};

use super::{RateTrace, TraceError};

const TIME_COLUMNS: [(&str, f64); 2] = [("time_s", 1e6), ("time_ms", 1e3)];
const RATE_COLUMNS: [(&str, f64); 3] = [("rate_bps", 1.0), ("rate_kbps", 1e3), ("rate_mbps", 1e6)];
const HEADER_HELP: &str = "the header names a time column (time_s or time_ms) and a rate column \
                           (rate_bps, rate_kbps or rate_mbps), e.g. \"time_s,rate_kbps\"";
/// Bounds that keep the values inside the simulator's clock and rates: about 31 years and
/// 1 Tbit/s.
const MAX_US: f64 = 1e15;
const MAX_BPS: f64 = 1e12;

/// Parses a CSV capacity trace.
pub fn parse(text: &str) -> Result<RateTrace, TraceError> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
    let Some((header_line, header)) = lines.next() else {
        return Err(TraceError::whole(format!("the trace is empty: {HEADER_HELP}, then rows")));
    };
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    let column = |known: &[(&'static str, f64)]| {
        names.iter().enumerate().find_map(|(k, n)| known.iter().find(|c| c.0 == *n).map(|c| (k, c.1, c.0)))
    };
    let (Some(time), Some(rate), 2) = (column(&TIME_COLUMNS), column(&RATE_COLUMNS), names.len()) else {
        // What the line lacks, not the line: a file without the header is not a trace and shows
        // nothing of itself (`super::quoted`).
        let lacks = match (column(&TIME_COLUMNS), column(&RATE_COLUMNS)) {
            (Some(_), Some(_)) => format!("it has {} columns", names.len()),
            (None, Some(_)) => "it has no time column".into(),
            (Some(_), None) => "it has no rate column".into(),
            (None, None) => "it has neither column".into(),
        };
        return Err(TraceError::at_line(
            header_line,
            format!("{HEADER_HELP}; this line is not such a header ({lacks})"),
        ));
    };
    let unit = |name: &str| name.split('_').nth(1).unwrap_or_default().to_string();
    let (time_unit, rate_unit) = (unit(time.2), unit(rate.2));

    let mut steps: Vec<(Duration, Bitrate)> = Vec::new();
    for (line, row) in lines {
        let cells: Vec<&str> = row.split(',').map(str::trim).collect();
        if cells.len() != 2 {
            return Err(TraceError::at_line(
                line,
                format!(
                    "expected 2 values ({} and {}), found {}: {}",
                    time.2,
                    rate.2,
                    cells.len(),
                    super::quoted(row)
                ),
            ));
        }
        let number = |k: usize, name: &str| -> Result<f64, TraceError> {
            cells[k].parse::<f64>().ok().filter(|v| v.is_finite()).ok_or_else(|| {
                TraceError::at_line(
                    line,
                    format!("cannot read {} as a number for {name}", super::quoted(cells[k])),
                )
            })
        };
        let t = number(time.0, time.2)?;
        let r = number(rate.0, rate.2)?;
        if t < 0.0 || t * time.1 > MAX_US {
            return Err(TraceError::at_line(
                line,
                format!(
                    "time {t} {time_unit} is out of range (allowed: 0 to {} {time_unit})",
                    MAX_US / time.1
                ),
            ));
        }
        if r < 0.0 || r * rate.1 > MAX_BPS {
            return Err(TraceError::at_line(
                line,
                format!(
                    "rate {r} {rate_unit} is out of range (allowed: 0, an outage, to {} {rate_unit})",
                    MAX_BPS / rate.1
                ),
            ));
        }
        let at = Duration::from_micros((t * time.1).round() as i64);
        match steps.last() {
            None if at != Duration::ZERO => {
                return Err(TraceError::at_line(
                    line,
                    format!("the first row is at {t} {time_unit}; it must be at 0 (the rate before it is unknown)"),
                ));
            }
            Some(&(prev, _)) if at <= prev => {
                return Err(TraceError::at_line(
                    line,
                    format!(
                        "time {t} {time_unit} is not after the previous row's ({}); times must increase",
                        prev
                    ),
                ));
            }
            Some(&(prev, _)) if at - prev < super::MIN_STEP => {
                return Err(TraceError::at_line(
                    line,
                    format!(
                        "time {t} {time_unit} is {} after the previous row; steps are at least {} apart",
                        at - prev,
                        super::MIN_STEP
                    ),
                ));
            }
            _ => {}
        }
        steps.push((at, Bitrate::from_bps_f64(r * rate.1)));
    }
    if steps.is_empty() {
        return Err(TraceError::at_line(header_line, "the trace has a header but no rows"));
    }
    Ok(RateTrace { steps, period: None })
}

/// Writes steps as `time_ms,rate_bps` rows (for tests).
pub fn emit(steps: &[(Duration, Bitrate)]) -> String {
    let mut out = String::from("time_ms,rate_bps\n");
    for (at, rate) in steps {
        out.push_str(&format!("{},{}\n", at.as_millis_f64(), rate.as_bps()));
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn err(text: &str) -> TraceError {
        parse(text).expect_err("the trace is invalid")
    }

    #[test]
    fn reads_units_from_the_header() {
        let t = parse("# a walk\n\ntime_s,rate_kbps\n0,1000\n12.5, 600\n30,0\n").unwrap();
        assert_eq!(
            t.steps,
            [
                (Duration::ZERO, Bitrate::kbps(1000)),
                (Duration::from_millis(12_500), Bitrate::kbps(600)),
                (Duration::from_secs(30), Bitrate::ZERO),
            ]
        );
        assert_eq!(t.period, None);
        // Other units, columns in the other order, Windows line ends.
        let t = parse("rate_mbps,time_ms\r\n1.5,0\r\n2,250\r\n").unwrap();
        assert_eq!(t.steps[0].1, Bitrate::kbps(1500));
        assert_eq!(t.steps[1], (Duration::from_millis(250), Bitrate::mbps(2)));
        assert_eq!(parse("time_s,rate_bps\n0,64000\n").unwrap().steps[0].1, Bitrate::kbps(64));
    }

    #[test]
    fn every_mistake_names_its_line_and_what_is_allowed() {
        let e = err("");
        assert!(e.message.contains("empty") && e.message.contains("time_s"), "{e}");
        let e = err("# only a comment\n");
        assert!(e.message.contains("empty"), "{e}");

        let e = err("time,rate\n0,1\n");
        assert_eq!(e.line, Some(1));
        assert!(e.message.contains("rate_kbps") && e.message.contains("neither column"), "{e}");
        // A file without the header is not a trace: none of it is shown.
        let e = err("# comment\nroot:x:0:0:root:/root:/bin/bash\n");
        assert_eq!(e.line, Some(2));
        assert!(!e.message.contains("root"), "{e}");
        let e = err("time_s,capacity\n0,1\n");
        assert!(e.message.contains("no rate column") && !e.message.contains("capacity"), "{e}");
        let e = err("time_s,rate_kbps,loss\n0,1,0\n");
        assert_eq!(e.line, Some(1), "{e}");

        let e = err("time_s,rate_kbps\n");
        assert!(e.message.contains("no rows"), "{e}");

        let e = err("time_s,rate_kbps\n0,100\n1\n");
        assert_eq!(e.line, Some(3));
        assert!(e.message.contains("expected 2 values"), "{e}");

        let e = err("time_s,rate_kbps\n0,fast\n");
        assert_eq!(e.line, Some(2));
        assert!(e.message.contains("\"fast\"") && e.message.contains("rate_kbps"), "{e}");

        let e = err("time_s,rate_kbps\n0,-5\n");
        assert!(
            e.message.contains("rate -5 kbps is out of range") && e.message.contains("0, an outage"),
            "{e}"
        );
        let e = err("time_s,rate_kbps\n-1,5\n");
        assert!(e.message.contains("time -1 s is out of range"), "{e}");

        let e = err("time_s,rate_kbps\n1,100\n");
        assert!(e.message.contains("must be at 0"), "{e}");

        let e = err("time_s,rate_kbps\n0,100\n5,200\n5,300\n");
        assert_eq!(e.line, Some(4));
        assert!(e.message.contains("times must increase"), "{e}");
        let e = err("time_s,rate_kbps\n0,100\n5,200\n4,300\n");
        assert!(e.message.contains("times must increase"), "{e}");
    }

    proptest! {
        #[test]
        fn never_panics_on_arbitrary_text(text in "\\PC{0,200}") {
            let _ = parse(&text);
        }

        #[test]
        fn emitted_traces_read_back(
            // Steps at least `MIN_STEP` (1 ms) apart, as the parser requires.
            gaps in proptest::collection::vec(1_000i64..100_000_000, 0..50),
            rates in proptest::collection::vec(0u64..1_000_000_000, 51),
        ) {
            let mut at = Duration::ZERO;
            let mut steps = vec![(at, Bitrate::bps(rates[0]))];
            for (k, gap) in gaps.iter().enumerate() {
                // Whole milliseconds or microseconds: both survive a decimal round trip.
                at += Duration::from_micros(*gap);
                steps.push((at, Bitrate::bps(rates[k + 1])));
            }
            prop_assert_eq!(parse(&emit(&steps)).unwrap().steps, steps);
        }
    }
}
