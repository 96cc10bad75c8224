//! Data sizes in bytes.

use std::fmt;
use std::iter::Sum;
use std::ops::{Add, AddAssign, Div, Mul, Sub, SubAssign};

use crate::{Bitrate, Duration};

/// An amount of data in bytes. SI prefixes: 1 KB = 1000 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DataSize(u64);

impl DataSize {
    pub const ZERO: Self = Self(0);
    pub const INFINITE: Self = Self(u64::MAX);

    pub const fn bytes(b: u64) -> Self {
        Self(b)
    }
    pub const fn kbytes(kb: u64) -> Self {
        Self(kb * 1_000)
    }
    pub const fn as_bytes(self) -> u64 {
        self.0
    }
    pub const fn as_bits(self) -> u64 {
        self.0 * 8
    }
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
    pub const fn is_infinite(self) -> bool {
        self.0 == u64::MAX
    }
    pub fn saturating_sub(self, o: Self) -> Self {
        Self(self.0.saturating_sub(o.0))
    }
    pub fn min(self, o: Self) -> Self {
        Self(self.0.min(o.0))
    }
    pub fn max(self, o: Self) -> Self {
        Self(self.0.max(o.0))
    }
}

impl Add for DataSize {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        Self(self.0.saturating_add(o.0))
    }
}
impl AddAssign for DataSize {
    fn add_assign(&mut self, o: Self) {
        self.0 = self.0.saturating_add(o.0);
    }
}
impl Sub for DataSize {
    type Output = Self;
    fn sub(self, o: Self) -> Self {
        Self(self.0 - o.0)
    }
}
impl SubAssign for DataSize {
    fn sub_assign(&mut self, o: Self) {
        self.0 -= o.0;
    }
}
impl Mul<u64> for DataSize {
    type Output = Self;
    fn mul(self, k: u64) -> Self {
        Self(self.0 * k)
    }
}
impl Mul<f64> for DataSize {
    type Output = Self;
    fn mul(self, k: f64) -> Self {
        Self((self.0 as f64 * k).max(0.0).round() as u64)
    }
}
/// Average rate of sending this much data over a duration.
impl Div<Duration> for DataSize {
    type Output = Bitrate;
    fn div(self, d: Duration) -> Bitrate {
        if d.as_micros() <= 0 {
            return Bitrate::INFINITE;
        }
        Bitrate::bps((self.0 as u128 * 8 * 1_000_000 / d.as_micros() as u128) as u64)
    }
}
/// Time to send this much data at a rate.
impl Div<Bitrate> for DataSize {
    type Output = Duration;
    fn div(self, r: Bitrate) -> Duration {
        r.transmit_time(self)
    }
}
impl Sum for DataSize {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Self::ZERO, |a, b| a + b)
    }
}

impl fmt::Display for DataSize {
    /// "1200 B", "60 kB", "1.5 MB".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        if b >= 1_000_000 {
            write!(f, "{} MB", b as f64 / 1e6)
        } else if b >= 10_000 {
            write!(f, "{} kB", b as f64 / 1e3)
        } else {
            write!(f, "{b} B")
        }
    }
}
