//! OpenNetLab's JSON network traces, the format of AlphaRTC's gym (github.com/OpenNetLab/gym)
//! and of OpenNetLab's emulator (github.com/OpenNetLab/onl-emu):
//!
//! ```json
//! { "type": "video", "downlink": {},
//!   "uplink": { "trace_pattern": [ { "duration": 2896, "capacity": 179, "loss": 0, "rtt": 89, "jitter": 0 }, ... ] } }
//! ```
//!
//! What the sources say (read for this module; nothing copied):
//! - gym's `alphartc_gym/gym.py` documents a segment as `duration` (ms), `capacity` "link
//!   bandwidth (kbps)", `loss` "loss rate (0.0~0.1)", `rtt` "round trip delay (ms)" and `jitter`
//!   "not supported in current version"; its traces have integer or fractional values, and some
//!   add `time` (the segment's start, in seconds) or leave out `loss`, `rtt` and `jitter`.
//! - gym's ns-3 player (`ns-app/scratch/webrtc_test/trace_player.cc`) reads only
//!   `uplink.trace_pattern[].capacity` and `.duration`, sets the rate to capacity × 1000 bit/s
//!   for `duration` ms each, and starts again from the first segment after the last.
//! - onl-emu's `code/transmit/tc_setup.py` also loops over `uplink.trace_pattern`, but passes
//!   `loss` to netem as a percentage, `rtt / 2` as delay and `jitter` as netem's normal jitter.
//!
//! So: `duration` and `capacity` are used, in those units, and the trace loops. The tools
//! disagree on `loss` (a fraction or a percentage) and only an emulator applies `rtt` and
//! `jitter`, which a scenario sets on its links anyway (`delay`, `jitter`, `loss`); a non-zero
//! value of one of them is therefore an error unless the scenario acknowledges that it is not
//! applied (`ignore = ["rtt"]`), so a trace never runs with a condition silently left out.
//! `time` is redundant with the durations and is not read; keys outside the segments (`type`,
//! `from`, ...) are metadata.

use rtcbench_units::{Bitrate, Duration};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{RateTrace, TraceError};

/// Which direction of the trace a link takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// What OpenNetLab's players use.
    #[default]
    Uplink,
    Downlink,
}

impl Direction {
    fn key(self) -> &'static str {
        match self {
            Self::Uplink => "uplink",
            Self::Downlink => "downlink",
        }
    }
}

/// The fields of a segment that rtcbench does not apply, which a scenario may acknowledge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unapplied {
    Loss,
    Rtt,
    Jitter,
}

impl Unapplied {
    fn key(self) -> &'static str {
        match self {
            Self::Loss => "loss",
            Self::Rtt => "rtt",
            Self::Jitter => "jitter",
        }
    }

    /// Why the field is not applied and what to do instead.
    fn advice(self) -> &'static str {
        match self {
            Self::Loss => {
                "rtcbench does not apply a trace's loss (OpenNetLab's gym reads it as a fraction, \
                 its emulator as a percentage); give the link a `loss` model instead"
            }
            Self::Rtt => "rtcbench does not apply a trace's rtt; the path's delay is the links' `delay`",
            Self::Jitter => {
                "rtcbench does not apply a trace's jitter (OpenNetLab's gym does not either); give \
                 the link a `jitter` model instead"
            }
        }
    }
}

const KNOWN: &str = "duration (ms), capacity (kbit/s), loss, rtt (ms), jitter (ms), time (s)";

/// Parses an OpenNetLab trace, taking the segments of `direction`. A non-zero `loss`, `rtt` or
/// `jitter` is an error unless it is in `ignore`.
pub fn parse(text: &str, direction: Direction, ignore: &[Unapplied]) -> Result<RateTrace, TraceError> {
    let root: Value = serde_json::from_str(text).map_err(|e| {
        let what = e.to_string();
        let what = what.split(" at line ").next().unwrap_or(&what).to_string();
        TraceError {
            line: Some(e.line()),
            field: None,
            message: format!("not JSON: {what} (column {})", e.column()),
        }
    })?;
    let Value::Object(root) = root else {
        return Err(TraceError::whole(
            "an OpenNetLab trace is a JSON object with \"uplink\" and \"downlink\", each holding a \"trace_pattern\"",
        ));
    };
    let dir = direction.key();
    let other = match direction {
        Direction::Uplink => "downlink",
        Direction::Downlink => "uplink",
    };
    let pattern_path = format!("{dir}.trace_pattern");
    let segments = match root.get(dir).and_then(|d| d.get("trace_pattern")) {
        Some(Value::Array(s)) if !s.is_empty() => s,
        Some(Value::Array(_)) => {
            return Err(TraceError::at_field(
                pattern_path,
                format!(
                    "is empty: a trace needs at least one segment (to take the {other}, write \
                     direction = \"{other}\" in capacity_trace)"
                ),
            ))
        }
        Some(_) => return Err(TraceError::at_field(pattern_path, "must be a list of segments")),
        None => {
            return Err(TraceError::at_field(
                pattern_path,
                format!(
                    "missing: the {dir} direction's segments are a list \"trace_pattern\" of {{{KNOWN}}}"
                ),
            ))
        }
    };

    let mut steps: Vec<(Duration, Bitrate)> = Vec::with_capacity(segments.len());
    // Offsets are rounded from the exact sum, so fractional durations do not drift.
    let mut start_ms = 0.0_f64;
    for (k, seg) in segments.iter().enumerate() {
        let path = format!("{pattern_path}[{k}]");
        let Value::Object(seg) = seg else {
            return Err(TraceError::at_field(path, format!("a segment is an object of {{{KNOWN}}}")));
        };
        for key in seg.keys() {
            if !["duration", "capacity", "loss", "rtt", "jitter", "time"].contains(&key.as_str()) {
                return Err(TraceError::at_field(
                    format!("{path}.{key}"),
                    format!("unknown field; known: {KNOWN}"),
                ));
            }
        }
        let number = |key: &str| -> Result<Option<f64>, TraceError> {
            match seg.get(key) {
                None => Ok(None),
                Some(v) => v.as_f64().filter(|x| x.is_finite()).map(Some).ok_or_else(|| {
                    let text = v.to_string();
                    let (head, more) = super::cut(&text);
                    TraceError::at_field(
                        format!("{path}.{key}"),
                        format!("must be a number, found {head}{more}"),
                    )
                }),
            }
        };
        let duration = number("duration")?.ok_or_else(|| {
            TraceError::at_field(format!("{path}.duration"), "missing: each segment lasts `duration` ms")
        })?;
        // At least `MIN_STEP`: a capacity that changes faster is not what any trace records, and
        // each change is a row of the links table.
        if !(super::MIN_STEP.as_millis_f64()..=1e12).contains(&duration) {
            return Err(TraceError::at_field(
                format!("{path}.duration"),
                format!(
                    "{duration} is out of range: a segment lasts {} ms or more (the unit is ms)",
                    super::MIN_STEP.as_millis_f64()
                ),
            ));
        }
        let capacity = number("capacity")?.ok_or_else(|| {
            TraceError::at_field(
                format!("{path}.capacity"),
                "missing: each segment has a `capacity` in kbit/s",
            )
        })?;
        if !(0.0..=1e9).contains(&capacity) {
            return Err(TraceError::at_field(
                format!("{path}.capacity"),
                format!("{capacity} is out of range: a capacity is 0 (an outage) to 10^9 kbit/s"),
            ));
        }
        for field in [Unapplied::Loss, Unapplied::Rtt, Unapplied::Jitter] {
            let value = number(field.key())?;
            if value.is_some_and(|v| v != 0.0) && !ignore.contains(&field) {
                let key = field.key();
                return Err(TraceError::at_field(
                    format!("{path}.{key}"),
                    format!(
                        "is {}: {}, or write ignore = [\"{key}\"] in capacity_trace to run without it",
                        value.unwrap_or_default(),
                        field.advice()
                    ),
                ));
            }
        }
        number("time")?;
        steps.push((Duration::from_millis_f64(start_ms), Bitrate::from_bps_f64(capacity * 1e3)));
        start_ms += duration;
    }
    Ok(RateTrace { steps, period: Some(Duration::from_millis_f64(start_ms)) })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The start of gym's `tests/data/trace_example.json` (values as published).
    const GYM_EXAMPLE: &str = r#"{
    "type": "video",
    "downlink": {},
    "uplink": {
        "trace_pattern": [
            { "duration": 2896, "capacity": 179, "loss": 0, "rtt": 89, "jitter": 0 },
            { "duration": 613, "capacity": 177, "loss": 0, "rtt": 103, "jitter": 0 },
            { "duration": 2750, "capacity": 500, "loss": 0, "rtt": 85, "jitter": 0 }
        ]
    }
}"#;

    /// The shape of gym's `tests/data/4G_500kbps.json`: fractional values, `time`, nothing else.
    const GYM_4G: &str = r#"{"uplink": {"trace_pattern": [
        {"duration": 200.0, "capacity": 2.4, "time": 0},
        {"duration": 200.0, "capacity": 291.76, "time": 0.2}]}}"#;

    fn err(text: &str, ignore: &[Unapplied]) -> TraceError {
        parse(text, Direction::Uplink, ignore).expect_err("the trace is invalid")
    }

    #[test]
    fn reads_gym_traces_capacity_in_kbps_and_duration_in_ms() {
        let t = parse(GYM_EXAMPLE, Direction::Uplink, &[Unapplied::Rtt]).unwrap();
        assert_eq!(
            t.steps,
            [
                (Duration::ZERO, Bitrate::kbps(179)),
                (Duration::from_millis(2896), Bitrate::kbps(177)),
                (Duration::from_millis(3509), Bitrate::kbps(500)),
            ]
        );
        assert_eq!(t.period, Some(Duration::from_millis(6259)));
        let t = parse(GYM_4G, Direction::Uplink, &[]).unwrap();
        assert_eq!(t.steps[0].1, Bitrate::bps(2400));
        assert_eq!(t.steps[1], (Duration::from_millis(200), Bitrate::bps(291_760)));
        assert_eq!(t.period, Some(Duration::from_millis(400)));
    }

    #[test]
    fn fractional_durations_do_not_drift() {
        let seg = r#"{"duration": 3.3334, "capacity": 1}"#;
        let text = format!(r#"{{"uplink": {{"trace_pattern": [{}]}}}}"#, vec![seg; 3000].join(","));
        let t = parse(&text, Direction::Uplink, &[]).unwrap();
        assert_eq!(t.period, Some(Duration::from_micros(10_000_200)));
        assert_eq!(t.steps[2999].0, Duration::from_micros(9_996_867));
    }

    #[test]
    fn the_downlink_is_taken_when_asked() {
        let text = r#"{"uplink": {"trace_pattern": [{"duration": 10, "capacity": 1}]},
                       "downlink": {"trace_pattern": [{"duration": 10, "capacity": 2}]}}"#;
        assert_eq!(parse(text, Direction::Downlink, &[]).unwrap().steps[0].1, Bitrate::kbps(2));
        let e = parse(GYM_EXAMPLE, Direction::Downlink, &[]).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("downlink.trace_pattern"));
    }

    #[test]
    fn conditions_not_applied_must_be_acknowledged() {
        let e = err(GYM_EXAMPLE, &[]);
        assert_eq!(e.field.as_deref(), Some("uplink.trace_pattern[0].rtt"));
        assert!(e.message.contains("is 89") && e.message.contains("ignore = [\"rtt\"]"), "{e}");
        let lossy = r#"{"uplink": {"trace_pattern": [{"duration": 500, "capacity": 1000, "loss": 0.2}]}}"#;
        let e = err(lossy, &[]);
        assert_eq!(e.field.as_deref(), Some("uplink.trace_pattern[0].loss"));
        assert!(e.message.contains("`loss` model") && e.message.contains("ignore = [\"loss\"]"), "{e}");
        assert!(parse(lossy, Direction::Uplink, &[Unapplied::Loss]).is_ok());
        let jittery = r#"{"uplink": {"trace_pattern": [{"duration": 5, "capacity": 1, "jitter": 3}]}}"#;
        assert!(err(jittery, &[Unapplied::Loss]).message.contains("ignore = [\"jitter\"]"));
    }

    #[test]
    fn every_mistake_names_its_field_or_line_and_what_is_allowed() {
        let e = err("{\n  \"uplink\": [\n", &[]);
        assert_eq!(e.line, Some(3));
        assert!(e.message.starts_with("not JSON"), "{e}");

        let e = err("[1, 2]", &[]);
        assert!(e.message.contains("JSON object"), "{e}");

        let e = err(r#"{"downlink": {}}"#, &[]);
        assert_eq!(e.field.as_deref(), Some("uplink.trace_pattern"));
        assert!(e.message.contains("missing"), "{e}");

        let e = err(r#"{"uplink": {"trace_pattern": []}}"#, &[]);
        assert!(e.message.contains("empty") && e.message.contains("direction = \"downlink\""), "{e}");

        let e = err(r#"{"uplink": {"trace_pattern": 5}}"#, &[]);
        assert!(e.message.contains("list"), "{e}");

        let one = |seg: &str| {
            format!(r#"{{"uplink": {{"trace_pattern": [{{"duration": 10, "capacity": 1}}, {seg}]}}}}"#)
        };
        let cases = [
            ("7", "uplink.trace_pattern[1]", "object"),
            (
                r#"{"duration": 10, "capacity": 1, "bandwidth": 3}"#,
                "uplink.trace_pattern[1].bandwidth",
                "known: duration",
            ),
            (r#"{"capacity": 1}"#, "uplink.trace_pattern[1].duration", "missing"),
            (r#"{"duration": 10}"#, "uplink.trace_pattern[1].capacity", "missing"),
            (r#"{"duration": 0, "capacity": 1}"#, "uplink.trace_pattern[1].duration", "1 ms or more"),
            (r#"{"duration": 0.5, "capacity": 1}"#, "uplink.trace_pattern[1].duration", "1 ms or more"),
            (r#"{"duration": -3, "capacity": 1}"#, "uplink.trace_pattern[1].duration", "out of range"),
            (r#"{"duration": 10, "capacity": -5}"#, "uplink.trace_pattern[1].capacity", "0 (an outage)"),
            (r#"{"duration": "10", "capacity": 1}"#, "uplink.trace_pattern[1].duration", "must be a number"),
            (
                r#"{"duration": 10, "capacity": 1, "time": "x"}"#,
                "uplink.trace_pattern[1].time",
                "must be a number",
            ),
        ];
        for (seg, field, message) in cases {
            let e = err(&one(seg), &[]);
            assert_eq!(e.field.as_deref(), Some(field), "{seg}: {e}");
            assert!(e.message.contains(message), "{seg}: {e}");
        }
    }

    proptest! {
        #[test]
        fn never_panics_on_arbitrary_text(text in "\\PC{0,200}") {
            let _ = parse(&text, Direction::Uplink, &[]);
        }

        #[test]
        fn emitted_traces_read_back(segs in proptest::collection::vec((1u32..100_000, 0u32..1_000_000), 1..100)) {
            let pattern: Vec<Value> = segs
                .iter()
                .map(|&(d, c)| serde_json::json!({"duration": d, "capacity": c, "loss": 0, "rtt": 0}))
                .collect();
            let text = serde_json::json!({"type": "video", "uplink": {"trace_pattern": pattern}}).to_string();
            let t = parse(&text, Direction::Uplink, &[]).unwrap();
            let mut start = 0i64;
            for (k, &(d, c)) in segs.iter().enumerate() {
                prop_assert_eq!(t.steps[k], (Duration::from_millis(start), Bitrate::kbps(u64::from(c))));
                start += i64::from(d);
            }
            prop_assert_eq!(t.period, Some(Duration::from_millis(start)));
        }
    }
}
