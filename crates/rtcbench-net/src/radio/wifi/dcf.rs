//! Channel access: the access categories, their EDCA parameters, and the backoff of one
//! channel access function (a DCF, or an EDCAF of EDCA), counted without per-slot events.
//!
//! The backoff is kept the way ns-3's `ChannelAccessManager` keeps it (802.11-2020 §10.3.4.3, §10.23.2.4): a number
//! of slots left and the instant from which they count down. The countdown starts once the
//! medium has been idle for the AIFS, i.e. at `max(backoff start, access grant start + AIFSN ×
//! slot)`, where the access grant start is SIFS after the latest of: the end of the medium's
//! busy period, the end of the NAV, the end of an ACK timeout, and the end of the last reception
//! plus EIFS − DIFS if that reception failed. The backoff ends, and the function may transmit,
//! that many slots later. When the medium goes busy the whole idle slots elapsed are subtracted
//! and the counter freezes; nothing happens per slot.
//!
//! DCF and EDCA differ in one slot (ns-3 `UpdateBackoff`): an EDCAF also decrements its counter
//! at the slot boundary that ends the AIFS (EDCAF operations happen at slot boundaries,
//! 802.11-2016 §10.22.2.4, which ns-3 cites), a DCF only at the end of each idle slot after
//! DIFS (802.11-2016 §10.3.4.3). So when a busy period
//! interrupts a countdown an EDCAF has one slot more behind it. Bianchi's chain counts the busy
//! period as a slot, as EDCA does; ns-3's Bianchi validation for non-QoS 802.11a corrects for
//! the DCF's rule instead ([`super::bianchi::Variant::Ns3Dcf`]).

use rand::RngExt;
use rtcbench_units::{Duration, Instant};
use serde::{Deserialize, Serialize};

use crate::rng::SimRng;

/// An access category of EDCA, in increasing priority (802.11-2020 Table 10-1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccessCategory {
    /// AC_BK, background.
    Bk,
    /// AC_BE, best effort; also the single queue of a non-QoS (DCF) MAC.
    Be,
    /// AC_VI, video.
    Vi,
    /// AC_VO, voice.
    Vo,
}

impl AccessCategory {
    /// Every category, lowest priority first.
    pub const ALL: [Self; 4] = [Self::Bk, Self::Be, Self::Vi, Self::Vo];

    /// The category of an 802.1D user priority (802.11-2020 Table 10-1): 1, 2 → BK; 0, 3 → BE;
    /// 4, 5 → VI; 6, 7 → VO.
    pub fn from_user_priority(up: u8) -> Self {
        match up & 7 {
            1 | 2 => Self::Bk,
            0 | 3 => Self::Be,
            4 | 5 => Self::Vi,
            _ => Self::Vo,
        }
    }

    /// The category of a packet with this DSCP: its three class-selector bits (RFC 2474
    /// §4.2.2.1) taken as the user priority, the "default DSCP-to-UP mapping" of RFC 8325 §2.3
    /// that Linux's `cfg80211_classify8021d` starts from. (Linux then moves a few codepoints as
    /// RFC 8325 §4 recommends, e.g. EF to UP 6; not modelled.) DSCP 0 is best effort; EF (46)
    /// and AF41 (34) are video, CS1 (8) background.
    pub fn from_dscp(dscp: u8) -> Self {
        Self::from_user_priority((dscp >> 3) & 7)
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// The EDCA parameters of one access category.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcParams {
    /// CWmin, a power of two minus one.
    pub cw_min: u16,
    /// CWmax, a power of two minus one, at least CWmin.
    pub cw_max: u16,
    /// AIFSN: the AIFS is SIFS + AIFSN × slot (DIFS is AIFSN 2).
    pub aifsn: u8,
    /// TXOP limit; zero allows one frame exchange per channel access.
    pub txop_limit: Duration,
}

impl AcParams {
    /// The DCF of a non-QoS OFDM station: CW 15-1023, DIFS (ns-3 `wifi-mac.cc`).
    pub const fn legacy_dcf() -> Self {
        Self { cw_min: 15, cw_max: 1023, aifsn: 2, txop_limit: Duration::ZERO }
    }
}

/// The EDCA parameters of the four categories.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EdcaParameterSet {
    pub bk: AcParams,
    pub be: AcParams,
    pub vi: AcParams,
    pub vo: AcParams,
}

impl EdcaParameterSet {
    /// The default set of an OFDM non-AP station, 802.11-2020 Table 9-155 as ns-3's
    /// `WifiMac::ConfigureDcf` codes it with CWmin 15 and CWmax 1023 (802.11-2020 Table 9-155): BK
    /// 15/1023/AIFSN 7, BE 15/1023/3, VI 7/15/2 with a 4.096-ms TXOP, VO 3/7/2 with 2.080 ms.
    /// ns-3 gives the AP the same set; so does [`super::BssConfig::new`].
    pub const fn standard() -> Self {
        Self {
            bk: AcParams { cw_min: 15, cw_max: 1023, aifsn: 7, txop_limit: Duration::ZERO },
            be: AcParams { cw_min: 15, cw_max: 1023, aifsn: 3, txop_limit: Duration::ZERO },
            vi: AcParams { cw_min: 7, cw_max: 15, aifsn: 2, txop_limit: Duration::from_micros(4096) },
            vo: AcParams { cw_min: 3, cw_max: 7, aifsn: 2, txop_limit: Duration::from_micros(2080) },
        }
    }

    /// The AP's own set in hostapd's default `hostapd.conf` (`tx_queue_data0..3`, taken there
    /// from 802.11e draft 11-03-0504): BE's CWmax is 63, so a Linux AP never
    /// backs off as far as its stations; VI and VO use AIFSN 1 with 3.0- and 1.5-ms bursts.
    pub const fn hostapd_ap() -> Self {
        Self {
            bk: AcParams { cw_min: 15, cw_max: 1023, aifsn: 7, txop_limit: Duration::ZERO },
            be: AcParams { cw_min: 15, cw_max: 63, aifsn: 3, txop_limit: Duration::ZERO },
            vi: AcParams { cw_min: 7, cw_max: 15, aifsn: 1, txop_limit: Duration::from_micros(3000) },
            vo: AcParams { cw_min: 3, cw_max: 7, aifsn: 1, txop_limit: Duration::from_micros(1500) },
        }
    }

    /// Every category with the same parameters (a non-QoS MAC uses only BE).
    pub const fn uniform(params: AcParams) -> Self {
        Self { bk: params, be: params, vi: params, vo: params }
    }

    pub fn get(&self, ac: AccessCategory) -> AcParams {
        match ac {
            AccessCategory::Bk => self.bk,
            AccessCategory::Be => self.be,
            AccessCategory::Vi => self.vi,
            AccessCategory::Vo => self.vo,
        }
    }
}

/// The backoff state of one DCF or EDCAF.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Backoff {
    /// CW, the contention window the next backoff is drawn from.
    pub(crate) cw: u32,
    /// Slots left to count down.
    pub(crate) slots: u32,
    /// The instant from which `slots` count down (ns-3's backoff start): the countdown starts
    /// at the later of this and the end of the AIFS.
    pub(crate) start: Instant,
}

impl Backoff {
    /// CW = CWmin, no backoff pending.
    pub(crate) fn new(cw_min: u16) -> Self {
        Self { cw: u32::from(cw_min), slots: 0, start: Instant::ZERO }
    }

    /// When the countdown (re)starts: the later of the stored start and the end of the AIFS
    /// that follows `access_grant_start`.
    #[inline]
    pub(crate) fn countdown_start(&self, access_grant_start: Instant, aifsn: u8, slot: Duration) -> Instant {
        self.start.max(access_grant_start + slot * i64::from(aifsn))
    }

    /// When the backoff ends if the medium stays idle.
    #[inline]
    pub(crate) fn end(&self, access_grant_start: Instant, aifsn: u8, slot: Duration) -> Instant {
        self.countdown_start(access_grant_start, aifsn, slot) + slot * i64::from(self.slots)
    }

    /// Counts down the slots elapsed by `now` (called when the medium goes busy, so the counter
    /// freezes at what it has reached): the whole idle slots since the countdown started, plus
    /// one for an EDCAF (the decrement at the AIFS boundary), at most the slots left.
    pub(crate) fn count_down(
        &mut self,
        now: Instant,
        access_grant_start: Instant,
        aifsn: u8,
        slot: Duration,
        edca: bool,
    ) {
        // Nothing left to count (the start of an empty counter matters to no one: a new
        // backoff or an immediate access sets it again).
        if self.slots == 0 {
            return;
        }
        let start = self.countdown_start(access_grant_start, aifsn, slot);
        if start > now {
            return;
        }
        let (since, slot_us) = ((now - start).as_micros(), slot.as_micros());
        let n = if since >= slot_us * i64::from(self.slots) {
            self.slots
        } else {
            // Under `slots` slots of 9 or 20 µs: fits a u32 division, cheaper than an i64 one,
            // and cheaper still by a constant (the only slot times there are).
            let (since, slot_us) = (since as u32, slot_us as u32);
            let slots = match slot_us {
                9 => since / 9,
                20 => since / 20,
                _ => since / slot_us,
            };
            (slots + u32::from(edca)).min(self.slots)
        };
        self.slots -= n;
        self.start = start + slot * i64::from(n);
    }

    /// Draws a new backoff from [0, CW] at `now`: after every frame exchange, even with nothing
    /// left to send (post-backoff, 802.11-2016 §10.22.2.2; ns-3 `NotifyChannelReleased`), and
    /// when a frame arrives to a busy medium.
    pub(crate) fn draw(&mut self, now: Instant, rng: &mut SimRng) {
        self.slots = rng.random_range(0..=self.cw);
        self.start = now;
    }

    /// After a failed exchange: CW ← min(2·(CW + 1) − 1, CWmax), giving 15, 31, …, 1023.
    pub(crate) fn double(&mut self, cw_max: u16) {
        self.cw = (2 * (self.cw + 1) - 1).min(u32::from(cw_max));
    }

    /// After a success, or a frame given up: CW ← CWmin.
    pub(crate) fn reset(&mut self, cw_min: u16) {
        self.cw = u32::from(cw_min);
    }

    /// Aligns an immediate access of an EDCAF (no backoff, the medium idle when the frame
    /// arrived at `now`) to the slot grid that starts at the end of the AIFS, as ns-3's
    /// `RequestAccess` does: the EDCAF transmits at the first slot boundary at or after `now`.
    pub(crate) fn align_to_slot(
        &mut self,
        now: Instant,
        access_grant_start: Instant,
        aifsn: u8,
        slot: Duration,
    ) {
        let aifs_end = access_grant_start + slot * i64::from(aifsn);
        self.start = if now > aifs_end {
            let slots = ((now - aifs_end).as_micros() as u64).div_ceil(slot.as_micros() as u64) as i64;
            aifs_end + slot * slots
        } else {
            now
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLOT: Duration = Duration::from_micros(9);

    fn us(v: i64) -> Instant {
        Instant::from_micros(v)
    }

    #[test]
    fn a_busy_period_freezes_the_counter_at_the_whole_idle_slots() {
        // Access grant start 16 µs (SIFS after 0), AIFSN 2: the countdown starts at 34 µs.
        let mut b = Backoff { cw: 15, slots: 10, start: us(0) };
        assert_eq!(b.end(us(16), 2, SLOT), us(34 + 90));
        // Busy from 34 + 3.5 slots: a DCF has counted 3 slots, an EDCAF 4.
        let mut e = b;
        b.count_down(us(34 + 31), us(16), 2, SLOT, false);
        e.count_down(us(34 + 31), us(16), 2, SLOT, true);
        assert_eq!((b.slots, e.slots), (7, 6));
        // After a busy period ending at 500 µs the countdown resumes after the AIFS.
        assert_eq!(b.end(us(516), 2, SLOT), us(534 + 63));
        assert_eq!(e.end(us(516), 2, SLOT), us(534 + 54));
        // Busy before the AIFS ends: nothing counted.
        let mut c = Backoff { cw: 15, slots: 5, start: us(0) };
        c.count_down(us(30), us(16), 2, SLOT, true);
        assert_eq!(c.slots, 5);
    }

    #[test]
    fn the_window_doubles_up_to_cwmax_and_resets() {
        let mut b = Backoff::new(15);
        let mut seen = vec![b.cw];
        for _ in 0..7 {
            b.double(1023);
            seen.push(b.cw);
        }
        assert_eq!(seen, [15, 31, 63, 127, 255, 511, 1023, 1023]);
        b.reset(15);
        assert_eq!(b.cw, 15);
    }

    #[test]
    fn an_immediate_access_waits_for_the_next_slot_boundary() {
        let mut b = Backoff::new(15);
        // Idle since 0; AIFS (AIFSN 3) ends at 16 + 27 = 43 µs; a frame at 100 µs goes at
        // 43 + 7 × 9 = 106 µs.
        b.align_to_slot(us(100), us(16), 3, SLOT);
        assert_eq!(b.end(us(16), 3, SLOT), us(106));
        // Within the AIFS: at its end.
        b.align_to_slot(us(20), us(16), 3, SLOT);
        assert_eq!(b.end(us(16), 3, SLOT), us(43));
    }

    #[test]
    fn dscp_class_selectors_choose_the_category() {
        assert_eq!(AccessCategory::from_dscp(0), AccessCategory::Be);
        assert_eq!(AccessCategory::from_dscp(8), AccessCategory::Bk);
        assert_eq!(AccessCategory::from_dscp(34), AccessCategory::Vi);
        assert_eq!(AccessCategory::from_dscp(46), AccessCategory::Vi);
        assert_eq!(AccessCategory::from_dscp(48), AccessCategory::Vo);
    }
}
