//! NTP timestamps as RTCP uses them (RFC 3550 §4, §6.4.1).
//!
//! The simulator's clock has no calendar, so an [`Instant`] is mapped onto NTP time with a fixed
//! epoch: `Instant::ZERO` is **2026-01-01 00:00:00 UTC** ([`NTP_BASE_SECS`]). Any fixed base works
//! because RTCP only ever subtracts NTP times taken on one clock (LSR/DLSR round trips); a fixed
//! one keeps runs byte-identical. The base lies in NTP era 0 with ~10 years of headroom before the
//! 2036 wrap, and negative instants (an endpoint clock set before the run) stay representable.
//!
//! * 64-bit NTP: 32-bit seconds since 1900 and a 32-bit binary fraction.
//! * Compact NTP: the middle 32 bits (16.16 fixed point, units of 1/65536 s), used by LSR, DLSR
//!   and RFC 8888's report timestamp.

use rtcbench_units::{Duration, Instant};

use crate::div_round;

/// NTP seconds (since 1900-01-01) of `Instant::ZERO`: 2026-01-01 00:00:00 UTC.
///
/// 2026-01-01 is Unix time 1 767 225 600 s; the NTP epoch precedes the Unix epoch by
/// 2 208 988 800 s (70 years including 17 leap days).
pub const NTP_BASE_SECS: u64 = 1_767_225_600 + 2_208_988_800;

const MICROS_PER_SEC: i128 = 1_000_000;

/// The 64-bit NTP timestamp of `t`, rounded to the nearest 2^-32 s.
///
/// Wraps modulo 2^64 like the wire field (at the 2036 era boundary, or for instants before 1900).
pub fn to_ntp64(t: Instant) -> u64 {
    let ticks = ((NTP_BASE_SECS as i128) << 32) + div_round((t.as_micros() as i128) << 32, MICROS_PER_SEC);
    ticks as u64
}

/// The instant of a 64-bit NTP timestamp, rounded to the nearest microsecond; the inverse of
/// [`to_ntp64`] within rounding (era 0 only).
pub fn from_ntp64(ntp: u64) -> Instant {
    let since_base = ntp as i128 - ((NTP_BASE_SECS as i128) << 32);
    Instant::from_micros(div_round(since_base * MICROS_PER_SEC, 1 << 32) as i64)
}

/// Compact NTP (RFC 3550 §6.4.1, "the middle 32 bits out of 64"): 16.16 fixed-point seconds.
pub const fn compact(ntp64: u64) -> u32 {
    (ntp64 >> 16) as u32
}

/// The compact NTP time of `t`: the middle 32 bits of [`to_ntp64`], so `t` truncated to a
/// multiple of 1/65536 s (15.26 µs), as in LSR and RFC 8888's report timestamp.
pub fn to_compact(t: Instant) -> u32 {
    compact(to_ntp64(t))
}

/// The instant of a compact NTP time, rounded to 1 µs; the inverse of [`to_compact`] up to its
/// truncation.
///
/// Compact NTP keeps only 16 bits of seconds and wraps every 65536 s (18.2 h), so the instant
/// chosen is the one within ±32768 s (±9.1 h) of `Instant::ZERO`. Exact for clocks that stay in
/// that window; a receiver clock beyond it reads shifted by multiples of 65536 s.
pub fn from_compact(c: u32) -> Instant {
    let since_base = c.wrapping_sub(to_compact(Instant::ZERO)) as i32;
    Instant::from_micros(div_round(i128::from(since_base) * MICROS_PER_SEC, 1 << 16) as i64)
}

/// A compact-NTP span (units of 1/65536 s, e.g. a DLSR) as a [`Duration`], rounded to 1 µs.
pub fn compact_to_duration(c: u32) -> Duration {
    Duration::from_micros(div_round(c as i128 * MICROS_PER_SEC, 1 << 16) as i64)
}

/// A [`Duration`] in compact-NTP units (1/65536 s), rounded; negative spans give 0 and spans
/// beyond 65536 s saturate, since DLSR is unsigned 32-bit (RFC 3550 §6.4.1).
pub fn duration_to_compact(d: Duration) -> u32 {
    let units = div_round((d.as_micros() as i128) << 16, MICROS_PER_SEC);
    units.clamp(0, u32::MAX as i128) as u32
}

/// Round-trip time from a report block received at `arrival`, RFC 3550 §6.4.1:
/// `RTT = A - LSR - DLSR` in compact NTP, where A is `arrival` in compact NTP.
///
/// `None` when `lsr` is 0, which means the receiver has not yet seen a sender report. The
/// subtraction wraps like the 32-bit fields; a result that comes out negative (only possible
/// through rounding to 1/65536 s or an inconsistent report) is clamped to zero.
pub fn rtt_from_report(arrival: Instant, lsr: u32, dlsr: u32) -> Option<Duration> {
    if lsr == 0 {
        return None;
    }
    let a = compact(to_ntp64(arrival));
    let rtt = a.wrapping_sub(lsr).wrapping_sub(dlsr) as i32;
    Some(compact_to_duration(rtt.max(0) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn zero_is_2026_new_year() {
        // 2026-01-01T00:00:00Z = NTP 3 976 214 400 s; the fraction is exactly 0.
        assert_eq!(to_ntp64(Instant::ZERO), 3_976_214_400u64 << 32);
        // Half a second is exactly 2^31 in the fraction.
        assert_eq!(to_ntp64(Instant::from_millis(1500)), (3_976_214_401u64 << 32) | (1 << 31));
        assert_eq!(from_ntp64(to_ntp64(Instant::from_millis(-250))), Instant::from_millis(-250));
    }

    #[test]
    fn compact_takes_the_middle_32_bits() {
        assert_eq!(compact(0x1122_3344_5566_7788), 0x3344_5566);
        assert_eq!(compact_to_duration(0x0001_8000), Duration::from_millis(1500));
        assert_eq!(duration_to_compact(Duration::from_millis(1500)), 0x0001_8000);
        assert_eq!(duration_to_compact(Duration::from_millis(-5)), 0);
    }

    #[test]
    fn compact_instants_truncate_and_unwrap_around_zero() {
        // 1.5 s is exactly 0x8000 in the fraction; 10 µs is below one unit and truncates away.
        assert_eq!(to_compact(Instant::from_micros(1_500_010)) & 0xFFFF, 0x8000);
        assert_eq!(from_compact(to_compact(Instant::from_micros(1_500_010))), Instant::from_millis(1500));
        // Both sides of the base, up to just under 9.1 h away.
        for s in [-32_767i64, -1, 0, 3_600, 32_767] {
            assert_eq!(from_compact(to_compact(Instant::from_secs(s))), Instant::from_secs(s));
        }
        // 65536 s later is the same compact time.
        assert_eq!(from_compact(to_compact(Instant::from_secs(65_536 + 7))), Instant::from_secs(7));
    }

    #[test]
    fn rtt_is_arrival_minus_lsr_minus_dlsr() {
        // SR sent at t = 10 s, held 250 ms by the receiver, report back at 10.4 s: RTT 150 ms.
        let lsr = compact(to_ntp64(Instant::from_secs(10)));
        let dlsr = duration_to_compact(Duration::from_millis(250));
        let rtt = rtt_from_report(Instant::from_millis(10_400), lsr, dlsr).unwrap();
        assert!((rtt - Duration::from_millis(150)).abs() <= Duration::from_micros(31), "{rtt}");
        assert_eq!(rtt_from_report(Instant::from_secs(3), 0, 0), None);
        // Rounding may make A - LSR - DLSR slightly negative; that reads as zero.
        assert_eq!(rtt_from_report(Instant::from_secs(10), lsr, 1), Some(Duration::ZERO));
    }

    proptest! {
        #[test]
        fn ntp_round_trips_to_the_microsecond(us in -1_000_000_000_000i64..1_000_000_000_000) {
            let t = Instant::from_micros(us);
            prop_assert_eq!(from_ntp64(to_ntp64(t)), t);
        }

        #[test]
        fn compact_instant_is_at_most_one_unit_early(us in -32_000_000_000i64..32_000_000_000) {
            let t = Instant::from_micros(us);
            let back = from_compact(to_compact(t));
            prop_assert!(back <= t && t - back <= Duration::from_micros(16), "{t} -> {back}");
        }

        #[test]
        fn compact_round_trip_is_within_half_a_unit(us in 0i64..60_000_000_000) {
            let d = Duration::from_micros(us);
            let back = compact_to_duration(duration_to_compact(d));
            prop_assert!((back - d).abs() <= Duration::from_micros(8));
        }
    }
}
