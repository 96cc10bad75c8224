//! Rate adaptation of one link (AP → station or station → AP): a fixed mode by default, or ARF.
//!
//! ARF (Kamerman and Monteban, "WaveLAN-II: a high-performance wireless LAN for the unlicensed
//! band", Bell Labs Technical Journal 2(3), 1997), with the thresholds of ns-3's
//! `ArfWifiManager` (SuccessThreshold 10, TimerThreshold 15): after 10 successful frame
//! exchanges in a row, or 15 exchanges since the last change, try the next faster mode; if that
//! first exchange fails, fall back at once ("recovery"); otherwise fall back after every second
//! failure in a row. ns-3 runs ARF over non-HT rates only; here it steps through the MCSs of the
//! link's stream count, width and guard interval. An exchange is one PPDU and its response: an
//! A-MPDU counts as a success if its BlockAck came back. Like ARF, it mistakes collisions for a
//! bad channel. Minstrel, Linux's default, is not modelled.

use serde::{Deserialize, Serialize};

use super::phy::PhyMode;

/// How a link picks its PHY mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum RateControl {
    /// Always the station's configured mode (ns-3's `ConstantRateWifiManager`).
    #[default]
    Fixed,
    /// ARF, starting at the station's configured mode.
    Arf { success_threshold: u32, timer_threshold: u32 },
}

impl RateControl {
    /// ARF with ns-3's default thresholds.
    pub const fn arf() -> Self {
        Self::Arf { success_threshold: 10, timer_threshold: 15 }
    }
}

/// The rate state of one link.
#[derive(Clone, Debug)]
pub(crate) struct LinkRate {
    control: RateControl,
    /// Slowest first; one entry for a fixed rate.
    ladder: Vec<PhyMode>,
    current: usize,
    successes: u32,
    failures: u32,
    timer: u32,
    recovery: bool,
}

impl LinkRate {
    pub(crate) fn new(mode: PhyMode, control: RateControl) -> Self {
        let (ladder, current) = match control {
            RateControl::Fixed => (vec![mode], 0),
            RateControl::Arf { .. } => {
                let ladder = mode.ladder();
                let current = ladder.iter().position(|m| *m == mode).unwrap_or(0);
                (ladder, current)
            }
        };
        Self { control, ladder, current, successes: 0, failures: 0, timer: 0, recovery: false }
    }

    /// The mode of the next transmission.
    #[inline]
    pub(crate) fn mode(&self) -> PhyMode {
        self.ladder[self.current]
    }

    /// A frame exchange succeeded.
    pub(crate) fn on_success(&mut self) {
        let RateControl::Arf { success_threshold, timer_threshold } = self.control else { return };
        self.successes += 1;
        self.timer += 1;
        self.failures = 0;
        self.recovery = false;
        if (self.successes >= success_threshold || self.timer >= timer_threshold)
            && self.current + 1 < self.ladder.len()
        {
            self.current += 1;
            self.successes = 0;
            self.timer = 0;
            self.recovery = true;
        }
    }

    /// A frame exchange failed (no ACK or BlockAck).
    pub(crate) fn on_failure(&mut self) {
        if let RateControl::Fixed = self.control {
            return;
        }
        self.successes = 0;
        self.timer += 1;
        self.failures += 1;
        let fall_back = if self.recovery { self.failures == 1 } else { self.failures.is_multiple_of(2) };
        if fall_back && self.current > 0 {
            self.current -= 1;
        }
        if self.recovery || self.failures >= 2 {
            self.timer = 0;
        }
        if fall_back {
            self.recovery = false;
            self.failures = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arf_climbs_after_ten_successes_and_falls_back_on_a_failed_probe() {
        let mut r = LinkRate::new(PhyMode::ht(3), RateControl::arf());
        for _ in 0..9 {
            r.on_success();
        }
        assert_eq!(r.mode(), PhyMode::ht(3));
        r.on_success();
        assert_eq!(r.mode(), PhyMode::ht(4), "10 successes");
        r.on_failure();
        assert_eq!(r.mode(), PhyMode::ht(3), "the probe at MCS 4 failed");
        r.on_failure();
        assert_eq!(r.mode(), PhyMode::ht(3), "one failure is not enough");
        r.on_failure();
        assert_eq!(r.mode(), PhyMode::ht(2), "two in a row");
        let mut fixed = LinkRate::new(PhyMode::ht(7), RateControl::Fixed);
        fixed.on_failure();
        fixed.on_failure();
        assert_eq!(fixed.mode(), PhyMode::ht(7));
    }

    #[test]
    fn arf_stays_within_its_ladder() {
        let mut r = LinkRate::new(PhyMode::ht(7), RateControl::arf());
        for _ in 0..100 {
            r.on_success();
        }
        assert_eq!(r.mode(), PhyMode::ht(7));
        for _ in 0..100 {
            r.on_failure();
        }
        assert_eq!(r.mode(), PhyMode::ht(0));
    }
}
