//! Simulated time: an [`Instant`] on the run's clock and a signed [`Duration`], both in integer
//! microseconds so that arithmetic is exact and runs are reproducible bit for bit.

use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul, Neg, Sub, SubAssign};

/// A point in time, in microseconds since the start of the run (or of the endpoint's clock).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(i64);

/// A signed span of time in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(i64);

impl Instant {
    /// The start of the run.
    pub const ZERO: Self = Self(0);
    /// A time after every event of any run; used as "never".
    pub const FAR_FUTURE: Self = Self(i64::MAX / 4);

    pub const fn from_micros(us: i64) -> Self {
        Self(us)
    }
    pub const fn from_millis(ms: i64) -> Self {
        Self(ms * 1_000)
    }
    pub const fn from_secs(s: i64) -> Self {
        Self(s * 1_000_000)
    }
    pub fn from_secs_f64(s: f64) -> Self {
        Self((s * 1e6).round() as i64)
    }
    pub const fn as_micros(self) -> i64 {
        self.0
    }
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1e3
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    /// Time elapsed since `earlier`, or zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Self) -> Duration {
        Duration((self.0 - earlier.0).max(0))
    }
}

impl Duration {
    pub const ZERO: Self = Self(0);
    pub const MAX: Self = Self(i64::MAX / 4);

    pub const fn from_micros(us: i64) -> Self {
        Self(us)
    }
    pub const fn from_millis(ms: i64) -> Self {
        Self(ms * 1_000)
    }
    pub const fn from_secs(s: i64) -> Self {
        Self(s * 1_000_000)
    }
    pub fn from_secs_f64(s: f64) -> Self {
        Self((s * 1e6).round() as i64)
    }
    pub fn from_millis_f64(ms: f64) -> Self {
        Self((ms * 1e3).round() as i64)
    }
    pub const fn as_micros(self) -> i64 {
        self.0
    }
    /// Whole milliseconds, truncated toward zero.
    pub const fn as_millis(self) -> i64 {
        self.0 / 1_000
    }
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1e3
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
    pub const fn abs(self) -> Self {
        Self(self.0.abs())
    }
    pub fn max(self, other: Self) -> Self {
        Self(self.0.max(other.0))
    }
    pub fn min(self, other: Self) -> Self {
        Self(self.0.min(other.0))
    }
}

impl Add<Duration> for Instant {
    type Output = Self;
    fn add(self, d: Duration) -> Self {
        Self(self.0 + d.0)
    }
}
impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        self.0 += d.0;
    }
}
impl Sub<Duration> for Instant {
    type Output = Self;
    fn sub(self, d: Duration) -> Self {
        Self(self.0 - d.0)
    }
}
impl SubAssign<Duration> for Instant {
    fn sub_assign(&mut self, d: Duration) {
        self.0 -= d.0;
    }
}
impl Sub for Instant {
    type Output = Duration;
    fn sub(self, other: Self) -> Duration {
        Duration(self.0 - other.0)
    }
}
impl Add for Duration {
    type Output = Self;
    fn add(self, d: Self) -> Self {
        Self(self.0 + d.0)
    }
}
impl AddAssign for Duration {
    fn add_assign(&mut self, d: Self) {
        self.0 += d.0;
    }
}
impl Sub for Duration {
    type Output = Self;
    fn sub(self, d: Self) -> Self {
        Self(self.0 - d.0)
    }
}
impl SubAssign for Duration {
    fn sub_assign(&mut self, d: Self) {
        self.0 -= d.0;
    }
}
impl Neg for Duration {
    type Output = Self;
    fn neg(self) -> Self {
        Self(-self.0)
    }
}
impl Mul<i64> for Duration {
    type Output = Self;
    fn mul(self, k: i64) -> Self {
        Self(self.0 * k)
    }
}
impl Mul<f64> for Duration {
    type Output = Self;
    fn mul(self, k: f64) -> Self {
        Self((self.0 as f64 * k).round() as i64)
    }
}
impl Div<i64> for Duration {
    type Output = Self;
    fn div(self, k: i64) -> Self {
        Self(self.0 / k)
    }
}
/// Ratio of two durations.
impl Div for Duration {
    type Output = f64;
    fn div(self, other: Self) -> f64 {
        self.0 as f64 / other.0 as f64
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6} s", self.as_secs_f64())
    }
}

impl fmt::Display for Duration {
    /// Prints in the largest unit that keeps the value readable: "25 ms", "1.5 s", "250 us".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let us = self.0;
        if us != 0 && us % 1_000_000 == 0 {
            write!(f, "{} s", us / 1_000_000)
        } else if us.abs() >= 1_000_000 {
            write!(f, "{} s", self.as_secs_f64())
        } else if us % 1_000 == 0 {
            write!(f, "{} ms", us / 1_000)
        } else if us.abs() >= 1_000 {
            write!(f, "{} ms", self.as_millis_f64())
        } else {
            write!(f, "{us} us")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_is_exact() {
        let t = Instant::from_millis(1500) + Duration::from_micros(250);
        assert_eq!(t.as_micros(), 1_500_250);
        assert_eq!(t - Instant::from_secs(1), Duration::from_micros(500_250));
        assert_eq!(Duration::from_millis(30) / Duration::from_millis(10), 3.0);
        assert_eq!(Instant::ZERO.saturating_since(Instant::from_secs(1)), Duration::ZERO);
    }

    #[test]
    fn display_picks_a_readable_unit() {
        assert_eq!(Duration::from_millis(25).to_string(), "25 ms");
        assert_eq!(Duration::from_millis(1500).to_string(), "1.5 s");
        assert_eq!(Duration::from_secs(2).to_string(), "2 s");
        assert_eq!(Duration::from_micros(250).to_string(), "250 us");
        assert_eq!(Duration::from_micros(2500).to_string(), "2.5 ms");
    }
}
