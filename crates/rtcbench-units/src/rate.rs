//! Bit rates in bit/s.

use std::fmt;
use std::ops::{Add, Div, Mul, Sub};

use crate::{DataSize, Duration};

/// A bit rate in bits per second. SI prefixes: 1 kbit/s = 1000 bit/s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bitrate(u64);

impl Bitrate {
    pub const ZERO: Self = Self(0);
    /// No limit: used for links without a capacity restriction.
    pub const INFINITE: Self = Self(u64::MAX);

    pub const fn bps(bps: u64) -> Self {
        Self(bps)
    }
    pub const fn kbps(kbps: u64) -> Self {
        Self(kbps * 1_000)
    }
    pub const fn mbps(mbps: u64) -> Self {
        Self(mbps * 1_000_000)
    }
    pub fn from_bps_f64(bps: f64) -> Self {
        if bps.is_finite() {
            Self(bps.max(0.0).round() as u64)
        } else {
            Self::INFINITE
        }
    }
    pub const fn as_bps(self) -> u64 {
        self.0
    }
    pub fn as_bps_f64(self) -> f64 {
        self.0 as f64
    }
    pub fn as_kbps_f64(self) -> f64 {
        self.0 as f64 / 1e3
    }
    pub fn as_mbps_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    pub const fn is_infinite(self) -> bool {
        self.0 == u64::MAX
    }
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
    pub fn clamp(self, min: Self, max: Self) -> Self {
        Self(self.0.clamp(min.0, max.0.max(min.0)))
    }
    pub fn min(self, other: Self) -> Self {
        Self(self.0.min(other.0))
    }
    pub fn max(self, other: Self) -> Self {
        Self(self.0.max(other.0))
    }
    pub fn saturating_sub(self, other: Self) -> Self {
        Self(self.0.saturating_sub(other.0))
    }
    /// Time to send `size` at this rate, rounded up to the next microsecond. An infinite rate
    /// takes no time; a zero rate never finishes ([`Duration::MAX`]).
    pub fn transmit_time(self, size: DataSize) -> Duration {
        if self.is_infinite() {
            return Duration::ZERO;
        }
        if self.0 == 0 {
            return Duration::MAX;
        }
        let bits = size.as_bits() as u128 * 1_000_000;
        Duration::from_micros(bits.div_ceil(self.0 as u128) as i64)
    }
}

impl Add for Bitrate {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        Self(self.0.saturating_add(o.0))
    }
}
impl Sub for Bitrate {
    type Output = Self;
    fn sub(self, o: Self) -> Self {
        Self(self.0 - o.0)
    }
}
impl Mul<f64> for Bitrate {
    type Output = Self;
    fn mul(self, k: f64) -> Self {
        if self.is_infinite() {
            return self;
        }
        Self::from_bps_f64(self.0 as f64 * k)
    }
}
/// Data sent at this rate over a duration (truncated to whole bytes).
impl Mul<Duration> for Bitrate {
    type Output = DataSize;
    fn mul(self, d: Duration) -> DataSize {
        let bits = self.0 as u128 * d.as_micros().max(0) as u128 / 1_000_000;
        DataSize::bytes((bits / 8) as u64)
    }
}
/// Ratio of two rates.
impl Div for Bitrate {
    type Output = f64;
    fn div(self, o: Self) -> f64 {
        self.0 as f64 / o.0 as f64
    }
}

impl fmt::Display for Bitrate {
    /// "800 kbit/s", "2.5 Mbit/s", "unlimited".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if self.is_infinite() {
            f.write_str("unlimited")
        } else if b >= 1_000_000 {
            write!(f, "{} Mbit/s", b as f64 / 1e6)
        } else if b >= 1_000 {
            write!(f, "{} kbit/s", b as f64 / 1e3)
        } else {
            write!(f, "{b} bit/s")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_times_duration_is_size() {
        assert_eq!(Bitrate::mbps(1) * Duration::from_millis(8), DataSize::bytes(1000));
        assert_eq!(DataSize::bytes(1000) / Duration::from_millis(8), Bitrate::mbps(1));
    }

    #[test]
    fn transmit_time_rounds_up() {
        // 1200 bytes at 1 Mbit/s = 9.6 ms exactly.
        assert_eq!(Bitrate::mbps(1).transmit_time(DataSize::bytes(1200)), Duration::from_micros(9600));
        // 1 byte at 3 bit/s = 2.666.. s, rounded up to the next microsecond.
        assert_eq!(Bitrate::bps(3).transmit_time(DataSize::bytes(1)), Duration::from_micros(2_666_667));
        assert_eq!(Bitrate::INFINITE.transmit_time(DataSize::bytes(1500)), Duration::ZERO);
    }

    #[test]
    fn display() {
        assert_eq!(Bitrate::kbps(800).to_string(), "800 kbit/s");
        assert_eq!(Bitrate::bps(2_500_000).to_string(), "2.5 Mbit/s");
        assert_eq!(Bitrate::bps(20).to_string(), "20 bit/s");
    }
}
