//! mahimahi's trace format: one delivery opportunity per line, its time in whole milliseconds.
//!
//! The rules are `LinkQueue`'s constructor in mahimahi (github.com/ravinet/mahimahi,
//! `src/frontend/link_queue.cc`): an empty line is an error, each line is a decimal integer,
//! timestamps must be non-decreasing, a file without timestamps is an error, and the last
//! timestamp (the period the trace loops with) must not be zero. In addition, this reader accepts
//! Windows line ends and spaces around a number, and rejects signs (mahimahi reads the number
//! with `strtol` into an unsigned integer, so "-5" would become a huge timestamp there).

use rtcbench_units::Duration;

use super::TraceError;
use crate::link::opportunities::DeliveryOpportunities;

/// Timestamps up to this many milliseconds (about 31 years) fit the simulator's clock.
const MAX_MS: u64 = 1_000_000_000_000;

/// Parses a mahimahi trace.
pub fn parse(text: &str) -> Result<DeliveryOpportunities, TraceError> {
    let mut offsets: Vec<Duration> = Vec::new();
    let mut previous: Option<u64> = None;
    // A final newline ends the last line; it does not start an empty one.
    let body = text.strip_suffix('\n').unwrap_or(text);
    if body.is_empty() {
        return Err(TraceError::whole(
            "the trace is empty: mahimahi needs at least one line with a millisecond timestamp",
        ));
    }
    for (i, raw) in body.split('\n').enumerate() {
        let line = i + 1;
        let field = raw.strip_suffix('\r').unwrap_or(raw).trim();
        if field.is_empty() {
            return Err(TraceError::at_line(
                line,
                "empty line; each line of a mahimahi trace is one timestamp in whole milliseconds",
            ));
        }
        let ms = field
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| field.parse::<u64>().ok())
            .flatten()
            .filter(|&ms| ms <= MAX_MS)
            .ok_or_else(|| {
                // The first line is not quoted: a file that does not start with a timestamp is
                // not a trace, and shows nothing of itself (`super::quoted`).
                let what = if line == 1 { "the first line".into() } else { super::quoted(field) };
                TraceError::at_line(
                    line,
                    format!(
                        "cannot read {what} as a timestamp: expected a whole number of milliseconds \
                         from 0 to {MAX_MS}"
                    ),
                )
            })?;
        if let Some(prev) = previous.filter(|&p| ms < p) {
            return Err(TraceError::at_line(
                line,
                format!("timestamp {ms} ms comes after {prev} ms; mahimahi timestamps must not decrease"),
            ));
        }
        previous = Some(ms);
        offsets.push(Duration::from_millis(ms as i64));
    }
    let last = offsets.len();
    DeliveryOpportunities::new(offsets).ok_or_else(|| {
        TraceError::at_line(
            last,
            "the trace ends at 0 ms: its last timestamp is the period it loops with and must be positive",
        )
    })
}

/// Writes opportunities in mahimahi's format (for tests and the trace generator's checks).
pub fn emit(offsets_ms: &[u64]) -> String {
    let mut out = String::with_capacity(offsets_ms.len() * 6);
    for ms in offsets_ms {
        out.push_str(&ms.to_string());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::link::opportunities::OpportunityClock;

    fn err(text: &str) -> TraceError {
        parse(text).expect_err("the trace is invalid")
    }

    #[test]
    fn reads_mahimahi_traces() {
        // Two opportunities on one millisecond are twice the capacity at that instant.
        let o = parse("1\n1\n3\n10\n").unwrap();
        assert_eq!(o.len(), 4);
        assert_eq!(o.period(), Duration::from_millis(10));
        let mut c = OpportunityClock::new(o);
        let first: Vec<i64> = (0..6).map(|_| c.take().as_micros() / 1000).collect();
        assert_eq!(first, [1, 1, 3, 10, 11, 11]);
        // No final newline, Windows line ends, surrounding spaces.
        assert_eq!(parse("5\r\n 10 ").unwrap().len(), 2);
        // A trace may start at 0.
        assert_eq!(parse("0\n4\n").unwrap().len(), 2);
    }

    #[test]
    fn every_mistake_names_its_line_and_what_is_allowed() {
        let e = err("");
        assert!(e.message.contains("empty") && e.line.is_none(), "{e}");
        let e = err("\n");
        assert!(e.message.contains("empty"), "{e}");

        let e = err("1\n2\n\n3\n");
        assert_eq!(e.line, Some(3));
        assert!(e.message.contains("empty line"), "{e}");

        let e = err("1\n5\n4\n");
        assert_eq!(e.line, Some(3));
        assert!(
            e.message.contains("4 ms comes after 5 ms") && e.message.contains("must not decrease"),
            "{e}"
        );

        for bad in ["-5", "1.5", "12ms", "+3", "0x10", "99999999999999999999"] {
            let e = err(&format!("1\n{bad}\n"));
            assert_eq!(e.line, Some(2), "{bad}");
            assert!(e.message.contains("whole number of milliseconds"), "{bad}: {e}");
        }

        // A file that does not start with a timestamp is not a trace: none of it is shown.
        let e = err("root:x:0:0:root:/root:/bin/bash\n");
        assert_eq!(e.line, Some(1));
        assert!(e.message.contains("the first line") && !e.message.contains("root"), "{e}");
        // A trace's own mistakes are quoted, cut short.
        let e = err(&format!("1\n{}\n", "x".repeat(1000)));
        assert!(e.message.contains(&format!("\"{}\"...", "x".repeat(40))) && e.message.len() < 200, "{e}");

        let e = err("0\n0\n");
        assert_eq!(e.line, Some(2));
        assert!(e.message.contains("must be positive"), "{e}");
    }

    proptest! {
        #[test]
        fn never_panics_on_arbitrary_text(text in "\\PC{0,200}") {
            let _ = parse(&text);
        }

        #[test]
        fn emitted_traces_read_back(mut ms in proptest::collection::vec(0u64..100_000, 1..200)) {
            ms.sort_unstable();
            prop_assume!(*ms.last().unwrap() > 0);
            let o = parse(&emit(&ms)).unwrap();
            prop_assert_eq!(o.len(), ms.len());
            prop_assert_eq!(o.period(), Duration::from_millis(*ms.last().unwrap() as i64));
        }
    }
}
