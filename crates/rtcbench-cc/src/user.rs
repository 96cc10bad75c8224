//! The checks on what a user's controller (an `rtcbench.Controller` subclass in Python) answers,
//! defined once for both places it runs: in-process in the simulator (`rtcbench-py`) and in a
//! helper process beside an emulated call's sender (`rtcbench-live`'s pipe controller).
//!
//! Each side turns a returned Python object into a [`Value`] (the simulator reads the object, the
//! emulation helper sends it over its pipe) and hands it here; the same value is accepted, typed
//! and converted the same way in both modes, and a value that cannot be used gets the same
//! message, [`BadAnswer`], naming the method, the instant and what was expected.
//!
//! The rules (docs/controllers/python.md):
//! - `target_rate()` is a finite number of bit/s, at least 1; `pacing_rate()` also that, or `None`;
//! - `next_timeout_us()` is `None` or an int of microseconds, no earlier than the input's `now`
//!   and, after `on_timeout`, later than the deadline that fired;
//! - `metrics()` is a dict of str to a float or `None`, with the same names in the same order at
//!   every call; a name's unit suffix types its column (`_bps` a rate and `_bytes` a size, each
//!   finite and at least 0; anything else a float), and no name may be a column every controller
//!   table already has.
//!
//! `bool` is not a number here (Python's `True` would otherwise be a rate of 1 bit/s), except as a
//! dimensionless metric, where it is 1.0 or 0.0.

use std::fmt;

use rtcbench_units::{Bitrate, DataSize, Instant};

use crate::{ControllerMetrics, Metric};

/// A value a method returned, as far as the checks need to know it.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    /// An integer that fits in 64 bits (`int`, or anything with `__index__`).
    Int(i64),
    /// Any other real number (`float`, or anything with `__float__`).
    Float(f64),
    Str(String),
    /// Anything else.
    Other,
}

impl Value {
    /// The value as a real number, if it is one (`bool` is not).
    fn number(&self) -> Option<f64> {
        match *self {
            Self::Int(i) => Some(i as f64),
            Self::Float(x) => Some(x),
            _ => None,
        }
    }
}

/// A method's answer that a run cannot use. `Display` gives the message without the
/// controller's label, which the caller puts in front.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadAnswer {
    pub method: &'static str,
    pub now: Instant,
    pub problem: Problem,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// The method returned `shown` (its `repr`); `expected` says what it may return.
    Value { shown: String, expected: String },
    /// `metrics()` named a column that every controller table has.
    ReservedName(String),
    /// `metrics()` changed its names (each list as Python would print it).
    NamesChanged { now: String, first: String },
}

impl fmt::Display for BadAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (method, now) = (self.method, self.now.as_micros());
        match &self.problem {
            Problem::Value { shown, expected } => {
                write!(f, "{method}() at now_us={now} returned {shown}; expected {expected}")
            }
            Problem::ReservedName(name) => write!(
                f,
                "{method}() names a metric {}, which the controller table already has (or is empty); \
                 choose another name",
                py_str(name)
            ),
            Problem::NamesChanged { now: names, first } => write!(
                f,
                "{method}() at now_us={now} returned the keys {names}, but its first call returned {first}; \
                 the names and their order must not change during a run"
            ),
        }
    }
}

fn bad(method: &'static str, now: Instant, shown: impl FnOnce() -> String, expected: &str) -> BadAnswer {
    BadAnswer { method, now, problem: Problem::Value { shown: shown(), expected: expected.to_string() } }
}

/// `target_rate()` (`optional` false) or `pacing_rate()` (`optional` true), as a rate; `shown`
/// gives the value's `repr` for the message.
pub fn rate(
    method: &'static str,
    now: Instant,
    value: &Value,
    optional: bool,
    shown: impl FnOnce() -> String,
) -> Result<Option<Bitrate>, BadAnswer> {
    if optional && *value == Value::None {
        return Ok(None);
    }
    match value.number() {
        Some(bps) if bps.is_finite() && bps >= 1.0 => Ok(Some(Bitrate::from_bps_f64(bps))),
        _ => {
            let expected = if optional {
                "None or a finite number of bit/s, at least 1"
            } else {
                "a finite number of bit/s, at least 1"
            };
            Err(bad(method, now, shown, expected))
        }
    }
}

/// `next_timeout_us()` as a deadline. `timed_out` is the instant of the latest `on_timeout`: a
/// deadline in the past, or again at the instant that just fired, would stop the clock.
pub fn timeout(
    now: Instant,
    timed_out: Option<Instant>,
    value: &Value,
    shown: impl FnOnce() -> String,
) -> Result<Option<Instant>, BadAnswer> {
    const METHOD: &str = "next_timeout_us";
    let t = match *value {
        Value::None => return Ok(None),
        Value::Int(us) => Instant::from_micros(us),
        _ => return Err(bad(METHOD, now, shown, "None or an int of microseconds")),
    };
    if t < now || timed_out.is_some_and(|fired| t <= fired) {
        let expected = match timed_out {
            Some(fired) if fired == now => format!("None or a time after now_us={}", now.as_micros()),
            _ => format!("None or a time no earlier than now_us={}", now.as_micros()),
        };
        return Err(bad(METHOD, now, shown, &expected));
    }
    Ok(Some(t))
}

/// How a metric's column is typed, by the suffix of its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `*_bps`: an Int64 column of bit/s.
    Rate,
    /// `*_bytes`: an Int64 column of bytes.
    Size,
    /// Anything else (`*_ms` included): a Float64 column.
    Real,
}

/// One metric as the first `metrics()` call named it.
#[derive(Debug)]
struct Slot {
    key: String,
    /// The name without the unit suffix the trace adds back.
    name: &'static str,
    kind: Kind,
}

impl Slot {
    fn new(key: String) -> Self {
        let (name, kind) = if let Some(n) = key.strip_suffix("_bps") {
            (n, Kind::Rate)
        } else if let Some(n) = key.strip_suffix("_bytes") {
            (n, Kind::Size)
        } else {
            (key.as_str(), Kind::Real)
        };
        Self { name: ControllerMetrics::intern(name), kind, key }
    }

    fn metric(&self, value: &Value) -> Option<Metric> {
        let number = match *value {
            Value::None => None,
            Value::Bool(b) if self.kind == Kind::Real => Some(if b { 1.0 } else { 0.0 }),
            _ => Some(value.number()?),
        };
        let finite = number.is_none_or(|x| x.is_finite() && x >= 0.0);
        match self.kind {
            Kind::Real => Some(Metric::Real(number)),
            Kind::Rate if finite => Some(Metric::Rate(number.map(Bitrate::from_bps_f64))),
            Kind::Size if finite => Some(Metric::Size(number.map(|b| DataSize::bytes(b.round() as u64)))),
            _ => None,
        }
    }

    fn expected(&self) -> String {
        let what = match self.kind {
            Kind::Real => "a float or None",
            Kind::Rate => "a finite rate of bit/s, at least 0, or None",
            Kind::Size => "a finite size of bytes, at least 0, or None",
        };
        format!("{} to be {what}", py_str(&self.key))
    }
}

/// The checker of one controller's `metrics()`: its names and their types are fixed by the first
/// call.
#[derive(Debug)]
pub struct Metrics {
    /// The columns every controller table has; no metric may take their names.
    reserved: Vec<String>,
    layout: Option<Vec<Slot>>,
}

impl Metrics {
    pub fn new(reserved: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self { reserved: reserved.into_iter().map(Into::into).collect(), layout: None }
    }

    /// `metrics()`'s answer typed: `entries` are the dict's (key, value) pairs in order, or `None`
    /// if it returned something other than a dict; `shown` gives its `repr`.
    pub fn check(
        &mut self,
        now: Instant,
        entries: Option<&[(Value, Value)]>,
        shown: impl FnOnce() -> String,
    ) -> Result<ControllerMetrics, BadAnswer> {
        const METHOD: &str = "metrics";
        let Some(entries) = entries else {
            return Err(bad(METHOD, now, shown, "a dict of str to float or None"));
        };
        let layout = match &mut self.layout {
            Some(layout) => layout,
            empty => {
                let mut slots = Vec::with_capacity(entries.len());
                for (key, _) in entries {
                    let Value::Str(key) = key else {
                        return Err(bad(METHOD, now, shown, "a dict of str to float or None"));
                    };
                    if key.is_empty() || self.reserved.iter().any(|r| r == key) {
                        let problem = Problem::ReservedName(key.clone());
                        return Err(BadAnswer { method: METHOD, now, problem });
                    }
                    slots.push(Slot::new(key.clone()));
                }
                empty.insert(slots)
            }
        };
        let same_names = entries.len() == layout.len()
            && entries.iter().zip(layout.iter()).all(|((k, _), s)| matches!(k, Value::Str(k) if *k == s.key));
        if !same_names {
            let list =
                |keys: &mut dyn Iterator<Item = String>| format!("[{}]", keys.collect::<Vec<_>>().join(", "));
            let names = list(&mut entries.iter().map(|(k, _)| match k {
                Value::Str(k) => py_str(k),
                _ => "?".to_string(),
            }));
            let first = list(&mut layout.iter().map(|s| py_str(&s.key)));
            return Err(BadAnswer {
                method: METHOD,
                now,
                problem: Problem::NamesChanged { now: names, first },
            });
        }
        let mut m = ControllerMetrics::new();
        for ((_, value), slot) in entries.iter().zip(layout.iter()) {
            let Some(metric) = slot.metric(value) else {
                return Err(bad(METHOD, now, shown, &slot.expected()));
            };
            m = m.with(slot.name, metric);
        }
        Ok(m)
    }
}

/// A string as Python's `repr` prints it (its quotes chosen the same way), for messages.
pub fn py_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Instant = Instant::from_micros(1_000);

    fn shown(v: &str) -> impl FnOnce() -> String + '_ {
        move || v.to_string()
    }

    #[test]
    fn rates_are_finite_numbers_of_at_least_one_bit_per_second() {
        let ok = |v: Value| rate("target_rate", NOW, &v, false, shown("?")).unwrap();
        assert_eq!(ok(Value::Int(300_000)), Some(Bitrate::bps(300_000)));
        assert_eq!(ok(Value::Float(1.0)), Some(Bitrate::bps(1)));
        for v in [Value::Float(0.5), Value::Float(f64::NAN), Value::Bool(true), Value::None, Value::Other] {
            let e = rate("target_rate", NOW, &v, false, shown("x")).unwrap_err();
            assert_eq!(
                e.to_string(),
                "target_rate() at now_us=1000 returned x; expected a finite number of bit/s, at least 1"
            );
        }
        assert_eq!(rate("pacing_rate", NOW, &Value::None, true, shown("None")), Ok(None));
        let e = rate("pacing_rate", NOW, &Value::Int(0), true, shown("0")).unwrap_err();
        assert!(e.to_string().ends_with("returned 0; expected None or a finite number of bit/s, at least 1"));
    }

    #[test]
    fn a_deadline_may_not_stop_the_clock() {
        assert_eq!(timeout(NOW, None, &Value::Int(1_000), shown("1000")), Ok(Some(NOW)));
        let e = timeout(NOW, None, &Value::Int(999), shown("999")).unwrap_err();
        assert!(e.to_string().ends_with("expected None or a time no earlier than now_us=1000"), "{e}");
        let e = timeout(NOW, Some(NOW), &Value::Int(1_000), shown("1000")).unwrap_err();
        assert!(e.to_string().ends_with("expected None or a time after now_us=1000"), "{e}");
        for v in [Value::Float(2e6), Value::Bool(true), Value::Str("1".into())] {
            let e = timeout(NOW, None, &v, shown("v")).unwrap_err();
            assert!(e.to_string().ends_with("returned v; expected None or an int of microseconds"), "{e}");
        }
    }

    fn dict(pairs: &[(&str, Value)]) -> Vec<(Value, Value)> {
        pairs.iter().map(|(k, v)| (Value::Str((*k).to_string()), v.clone())).collect()
    }

    #[test]
    fn metrics_are_typed_by_their_suffix_and_keep_their_names() {
        let mut m = Metrics::new(["t_us", "target_bps"]);
        let first = dict(&[
            ("estimate_bps", Value::Float(1.5e6)),
            ("window_bytes", Value::Float(3000.4)),
            ("converged", Value::Bool(true)),
            ("gain", Value::None),
        ]);
        let typed = m.check(NOW, Some(&first), shown("?")).unwrap();
        assert_eq!(
            typed.values,
            vec![
                ("estimate", Metric::Rate(Some(Bitrate::bps(1_500_000)))),
                ("window", Metric::Size(Some(DataSize::bytes(3000)))),
                ("converged", Metric::Real(Some(1.0))),
                ("gain", Metric::Real(None)),
            ]
        );
        let renamed = dict(&[("estimate_bps", Value::None), ("x", Value::None)]);
        let e = m.check(NOW, Some(&renamed), shown("?")).unwrap_err();
        assert!(e
            .to_string()
            .contains("returned the keys ['estimate_bps', 'x'], but its first call returned"));
        let negative = dict(&[
            ("estimate_bps", Value::Int(-1)),
            ("window_bytes", Value::None),
            ("converged", Value::None),
            ("gain", Value::None),
        ]);
        let e = m.check(NOW, Some(&negative), shown("{...}")).unwrap_err();
        assert!(e
            .to_string()
            .ends_with("expected 'estimate_bps' to be a finite rate of bit/s, at least 0, or None"));
    }

    #[test]
    fn metrics_may_not_take_a_fixed_columns_name_or_be_other_than_a_dict() {
        let e =
            Metrics::new(["target_bps"]).check(NOW, Some(&dict(&[("target_bps", Value::None)])), shown("?"));
        assert!(e
            .unwrap_err()
            .to_string()
            .contains("names a metric 'target_bps', which the controller table"));
        let e = Metrics::new(["t_us"]).check(NOW, None, shown("[1.0]")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "metrics() at now_us=1000 returned [1.0]; expected a dict of str to float or None"
        );
        let e = Metrics::new(["t_us"]).check(NOW, Some(&[(Value::Int(1), Value::None)]), shown("{1: None}"));
        assert!(e.unwrap_err().to_string().ends_with("expected a dict of str to float or None"));
    }

    #[test]
    fn strings_are_quoted_as_python_quotes_them() {
        assert_eq!(py_str("rate_bps"), "'rate_bps'");
        assert_eq!(py_str("it's"), "\"it's\"");
        assert_eq!(py_str("a'b\"c\n"), "'a\\'b\"c\\n'");
    }
}
