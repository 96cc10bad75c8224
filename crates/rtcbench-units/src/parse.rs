//! Parsing of quantities written with units in scenario files: "2.5Mbps", "150kbps", "300ms",
//! "60KB". Prefixes are SI (k = 10^3, M = 10^6, G = 10^9); spaces between number and unit are
//! allowed; units are case-sensitive where SI makes the case meaningful ("mbps" is accepted for
//! Mbit/s because no rate in millibits makes sense here).

use std::str::FromStr;

use crate::{Bitrate, DataSize, Duration};

/// A quantity that could not be read. Its message names the text and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot read {text:?} as a {what}: expected {allowed}")]
pub struct ParseError {
    /// The text that was given.
    pub text: String,
    /// What kind of quantity was expected ("bit rate", "duration", "data size").
    pub what: &'static str,
    /// What is allowed, with examples.
    pub allowed: &'static str,
}

const RATE_ALLOWED: &str = "a number with a unit bps, kbps, Mbps or Gbps (e.g. \"2.5Mbps\", \"150kbps\")";
const DURATION_ALLOWED: &str = "a number with a unit us, ms, s or min (e.g. \"300ms\", \"1.5s\")";
const SIZE_ALLOWED: &str =
    "a number with a unit B, KB, MB or GB (SI: 1 KB = 1000 B), or KiB/MiB (e.g. \"60KB\", \"1500B\")";
const RATE_RESOLUTION: &str = "0, or at least 1 bps (rates are counted in whole bit/s)";
const DURATION_RESOLUTION: &str = "0, or at least 1us (times are counted in whole microseconds)";
const SIZE_RESOLUTION: &str = "0, or at least 1 B (sizes are counted in whole bytes)";

/// `value` (in the quantity's smallest unit) rounded to a whole number of it, or `Err` when it is
/// above zero but below one: such a quantity would become zero or one, and either silently.
fn whole(value: f64, err: impl FnOnce() -> ParseError) -> Result<f64, ParseError> {
    if value > 0.0 && value < 1.0 {
        return Err(err());
    }
    Ok(value.round())
}

/// Splits "2.5 Mbps" into (2.5, "Mbps"); the number must be finite and non-negative.
fn split(text: &str) -> Option<(f64, &str)> {
    let t = text.trim();
    let end = t
        .find(|c: char| {
            !(c.is_ascii_digit() || c == '.' || c == '_' || c == 'e' || c == 'E' || c == '+' || c == '-')
        })
        .unwrap_or(t.len());
    // Do not swallow a unit that starts with 'e'/'E' (none of ours do) — but guard "1e3ms".
    let (num, unit) = t.split_at(end);
    let num: String = num.chars().filter(|&c| c != '_').collect();
    let value: f64 = num.parse().ok()?;
    if !value.is_finite() || value < 0.0 {
        return None;
    }
    Some((value, unit.trim()))
}

impl FromStr for Bitrate {
    type Err = ParseError;
    fn from_str(text: &str) -> Result<Self, ParseError> {
        let err = || ParseError { text: text.to_string(), what: "bit rate", allowed: RATE_ALLOWED };
        let (value, unit) = split(text).ok_or_else(err)?;
        let scale = match unit {
            "bps" | "bit/s" => 1.0,
            "kbps" | "Kbps" | "kbit/s" => 1e3,
            "Mbps" | "mbps" | "Mbit/s" => 1e6,
            "Gbps" | "gbps" | "Gbit/s" => 1e9,
            _ => return Err(err()),
        };
        let below = || ParseError { text: text.to_string(), what: "bit rate", allowed: RATE_RESOLUTION };
        Ok(Self::from_bps_f64(whole(value * scale, below)?))
    }
}

impl FromStr for Duration {
    type Err = ParseError;
    fn from_str(text: &str) -> Result<Self, ParseError> {
        let err = || ParseError { text: text.to_string(), what: "duration", allowed: DURATION_ALLOWED };
        let (value, unit) = split(text).ok_or_else(err)?;
        let scale_us = match unit {
            "us" | "µs" => 1.0,
            "ms" => 1e3,
            "s" => 1e6,
            "min" => 60e6,
            _ => return Err(err()),
        };
        let below = || ParseError { text: text.to_string(), what: "duration", allowed: DURATION_RESOLUTION };
        Ok(Self::from_micros(whole(value * scale_us, below)? as i64))
    }
}

impl FromStr for DataSize {
    type Err = ParseError;
    fn from_str(text: &str) -> Result<Self, ParseError> {
        let err = || ParseError { text: text.to_string(), what: "data size", allowed: SIZE_ALLOWED };
        let (value, unit) = split(text).ok_or_else(err)?;
        let scale = match unit {
            "B" | "bytes" => 1.0,
            "KB" | "kB" => 1e3,
            "MB" => 1e6,
            "GB" => 1e9,
            "KiB" => 1024.0,
            "MiB" => 1024.0 * 1024.0,
            _ => return Err(err()),
        };
        let below = || ParseError { text: text.to_string(), what: "data size", allowed: SIZE_RESOLUTION };
        Ok(Self::bytes(whole(value * scale, below)? as u64))
    }
}

#[cfg(feature = "serde")]
mod serde_impls {
    //! Quantities appear in scenario files as strings with units; they serialize back the same
    //! way so a resolved scenario reads like the one the user wrote.
    use super::*;
    use crate::ParseError;
    use serde::{de, Deserialize, Deserializer, Serialize, Serializer};

    /// Accepts only text: a bare number has no unit, and guessing one is how scenarios go wrong.
    struct TextVisitor<T>(std::marker::PhantomData<T>, &'static str);

    impl<T: std::str::FromStr<Err = ParseError>> de::Visitor<'_> for TextVisitor<T> {
        type Value = T;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.1)
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
            v.parse().map_err(E::custom)
        }
    }

    macro_rules! text_serde {
        ($ty:ty, $expecting:expr, $fmt:expr) => {
            impl<'de> Deserialize<'de> for $ty {
                fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                    d.deserialize_str(TextVisitor(std::marker::PhantomData, $expecting))
                }
            }
            impl Serialize for $ty {
                fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                    #[allow(clippy::redundant_closure_call)]
                    s.serialize_str(&($fmt)(self))
                }
            }
        };
    }
    text_serde!(
        Bitrate,
        "a bit rate with a unit as a string, e.g. \"2.5Mbps\" or \"150kbps\"",
        |r: &Bitrate| {
            let b = r.as_bps();
            if b != 0 && b.is_multiple_of(1_000_000) {
                format!("{}Mbps", b / 1_000_000)
            } else if b != 0 && b.is_multiple_of(1_000) {
                format!("{}kbps", b / 1_000)
            } else {
                format!("{b}bps")
            }
        }
    );
    text_serde!(
        Duration,
        "a duration with a unit as a string, e.g. \"300ms\" or \"1.5s\"",
        |d: &Duration| {
            let us = d.as_micros();
            if us != 0 && us % 1_000_000 == 0 {
                format!("{}s", us / 1_000_000)
            } else if us % 1_000 == 0 {
                format!("{}ms", us / 1_000)
            } else {
                format!("{us}us")
            }
        }
    );
    text_serde!(
        DataSize,
        "a data size with a unit as a string, e.g. \"60KB\" or \"1500B\"",
        |s: &DataSize| {
            let b = s.as_bytes();
            if b != 0 && b.is_multiple_of(1_000) {
                format!("{}KB", b / 1_000)
            } else {
                format!("{b}B")
            }
        }
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!("2.5Mbps".parse::<Bitrate>().unwrap(), Bitrate::bps(2_500_000));
        assert_eq!("150kbps".parse::<Bitrate>().unwrap(), Bitrate::kbps(150));
        assert_eq!("150 kbps".parse::<Bitrate>().unwrap(), Bitrate::kbps(150));
        assert_eq!("800bps".parse::<Bitrate>().unwrap(), Bitrate::bps(800));
        assert_eq!("1Gbps".parse::<Bitrate>().unwrap(), Bitrate::mbps(1000));
    }

    #[test]
    fn durations() {
        assert_eq!("300ms".parse::<Duration>().unwrap(), Duration::from_millis(300));
        assert_eq!("1.5s".parse::<Duration>().unwrap(), Duration::from_millis(1500));
        assert_eq!("250us".parse::<Duration>().unwrap(), Duration::from_micros(250));
        assert_eq!("2min".parse::<Duration>().unwrap(), Duration::from_secs(120));
    }

    #[test]
    fn sizes_are_si() {
        assert_eq!("60KB".parse::<DataSize>().unwrap(), DataSize::bytes(60_000));
        assert_eq!("1500B".parse::<DataSize>().unwrap(), DataSize::bytes(1500));
        assert_eq!("1KiB".parse::<DataSize>().unwrap(), DataSize::bytes(1024));
    }

    #[test]
    fn errors_name_the_text_and_what_is_allowed() {
        let e = "2.5 Mbit".parse::<Bitrate>().unwrap_err();
        assert_eq!(e.text, "2.5 Mbit");
        let msg = e.to_string();
        assert!(msg.contains("\"2.5 Mbit\"") && msg.contains("kbps"), "{msg}");
        assert!("300".parse::<Duration>().is_err());
        assert!("-5ms".parse::<Duration>().is_err());
        assert!("fast".parse::<Bitrate>().is_err());
        assert!("60kb".parse::<DataSize>().is_err(), "kb (kilobits) is not a size");
    }

    #[test]
    fn a_quantity_below_its_resolution_is_refused_not_rounded() {
        // "0.5bps" was rounded up to 1 bit/s and ran; "0.4bps" became 0.
        for text in ["0.5bps", "0.4bps", "1e-7Mbps"] {
            let e = text.parse::<Bitrate>().unwrap_err();
            assert!(e.to_string().contains("at least 1 bps"), "{e}");
        }
        assert!("0.5us".parse::<Duration>().unwrap_err().to_string().contains("at least 1us"));
        assert!("0.0001KB".parse::<DataSize>().unwrap_err().to_string().contains("at least 1 B"));
        // Zero stays zero, and a quantity of one or more keeps its nearest whole value.
        assert_eq!("0bps".parse::<Bitrate>().unwrap(), Bitrate::bps(0));
        assert_eq!("1.4bps".parse::<Bitrate>().unwrap(), Bitrate::bps(1));
        assert_eq!("0ms".parse::<Duration>().unwrap(), Duration::from_micros(0));
    }
}
