//! TCP Prague's window arithmetic (draft-briscoe-iccrg-prague-congestion-control-04), the
//! scalable congestion control of L4S (RFC 9330): DCTCP's response to the fraction of CE marks,
//! made to meet the "Prague L4S requirements" of RFC 9331 §4 as far as this model goes.
//!
//! | RFC 9331 §4 requirement | here |
//! |---|---|
//! | §4.1 ECT(1) on its packets | the sender sends ECT(1) ([`super::TcpEcn::L4s`]) |
//! | §4.2 accurate ECN feedback | AccECN's ACE counter, RFC 9768 ([`super::accecn`]) |
//! | §4.3 response proportional to the CE fraction | α, the EWMA of the CE fraction per round trip, g = 1/16; cwnd × (1 − α/2) at most once per round trip |
//! | §4.3 Reno-friendly on loss | Reno's halving, ssthresh = cwnd/2 ([`super::newreno::reno_ssthresh`]) |
//! | §4.3 fractional windows | cwnd in bytes, also below 2 segments; pacing at cwnd/SRTT carries it (the sender) |
//! | §4.3 detect a classic-ECN bottleneck | not modelled |
//! | §4.3 reduced RTT dependence | not modelled (the draft's §2.4.4; see `docs/tcp.md`) |
//!
//! Additive increase counts only the bytes the receiver got unmarked (Linux Prague's
//! "only additive increase for ACK of non-marked packets"): cwnd grows by one SMSS per cwnd of
//! unmarked bytes acknowledged, so by (1 − p)·SMSS per round trip at a marking probability p,
//! and the steady state of increase (1 − p) against decrease W·p/2 per round trip is the
//! scalable window W = 2(1 − p)/p ≈ 2/p (RFC 9332 §2.1 uses 2/p for a scalable flow).
//!
//! Slow start, loss recovery and timeouts are the sender's, as for the other controllers; the
//! first CE mark ends slow start by the same reduction, with α starting at 1 (DCTCP's start,
//! RFC 8257, and Linux Prague's default: the window halves at the first mark).

use rtcbench_units::{Bitrate, DataSize, Duration};

use super::newreno::reno_ssthresh;

/// g, the gain of the EWMA of the CE fraction (draft-04; Linux Prague `PRAGUE_SHIFT_G` = 4).
pub const G: f64 = 1.0 / 16.0;
/// α before any round trip has ended: the first reduction halves the window.
pub const INITIAL_ALPHA: f64 = 1.0;
/// The lowest rate the window may fall to, cwnd ≥ MIN_RATE × SRTT (Linux Prague's minimum pacing
/// rate, 100 kbit/s), so that a flow marked continuously keeps sending.
pub const MIN_RATE: Bitrate = Bitrate::kbps(100);

/// What Prague keeps between ACKs.
#[derive(Clone, Debug, PartialEq)]
pub struct Prague {
    smss: DataSize,
    /// α: the EWMA of the fraction of packets CE-marked per round trip.
    alpha: f64,
    /// The round trip being measured ends when SND.UNA reaches this (SND.NXT at its start).
    round_end: Option<u64>,
    /// Packets delivered (newly acknowledged or SACKed, in SMSS) in the round so far.
    round_delivered: f64,
    /// CE-marked packets reported in the round so far.
    round_ce: u64,
    /// No reduction until SND.UNA reaches this: SND.NXT at the last reduction, so at most one
    /// per round trip (the data sent before a reduction carries the marks that caused it).
    cwr_end: u64,
    /// Growth below one byte, carried to the next ACK.
    carry: f64,
    /// Reductions on CE so far.
    reductions: u64,
}

impl Prague {
    pub fn new(smss: DataSize) -> Self {
        Self {
            smss,
            alpha: INITIAL_ALPHA,
            round_end: None,
            round_delivered: 0.0,
            round_ce: 0,
            cwr_end: 0,
            carry: 0.0,
            reductions: 0,
        }
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    pub fn reductions(&self) -> u64 {
        self.reductions
    }

    /// Every ACK's feedback, whatever the sender's state: `delivered` bytes and `ce` CE-marked
    /// packets. When the ACK ends the round trip (SND.UNA at or past the round's end), the
    /// round's CE fraction F updates α ← (1 − g)·α + g·F, and a new round starts at SND.NXT.
    pub fn on_feedback(&mut self, snd_una: u64, snd_nxt: u64, delivered: DataSize, ce: u64) {
        self.round_delivered += delivered.as_bytes() as f64 / self.smss.as_bytes() as f64;
        self.round_ce += ce;
        let Some(end) = self.round_end else {
            self.round_end = Some(snd_nxt);
            return;
        };
        if snd_una < end {
            return;
        }
        if self.round_delivered > 0.0 {
            let fraction = (self.round_ce as f64 / self.round_delivered).min(1.0);
            self.alpha += G * (fraction - self.alpha);
        }
        self.round_end = Some(snd_nxt);
        self.round_delivered = 0.0;
        self.round_ce = 0;
    }

    /// CE feedback `ce` > 0 on an ACK while no loss is being repaired: the reduced window
    /// cwnd × (1 − α/2), once per round trip (`None` otherwise), never below [`MIN_RATE`] ×
    /// `srtt`. The caller sets ssthresh to it as well, which ends slow start.
    pub fn on_ce(
        &mut self,
        cwnd: DataSize,
        ce: u64,
        snd_una: u64,
        snd_nxt: u64,
        srtt: Duration,
    ) -> Option<DataSize> {
        if ce == 0 || snd_una < self.cwr_end {
            return None;
        }
        self.cwr_end = snd_nxt;
        self.reductions += 1;
        self.carry = 0.0;
        let reduced = DataSize::bytes((cwnd.as_bytes() as f64 * (1.0 - self.alpha / 2.0)) as u64);
        Some(reduced.max(MIN_RATE * srtt).max(DataSize::bytes(1)))
    }

    /// Congestion avoidance for an ACK that delivered `delivered` bytes, `ce` packets of them
    /// CE-marked: cwnd grows by SMSS × unmarked bytes / cwnd, by at most one SMSS per ACK (a
    /// window below one segment would otherwise grow several-fold on one ACK, the segment
    /// being larger than the window; RFC 5681 eq. (3) has the same bound for ACKs of one SMSS).
    pub fn on_ack(&mut self, cwnd: DataSize, delivered: DataSize, ce: u64) -> DataSize {
        let unmarked = delivered.saturating_sub(self.smss * ce);
        let smss = self.smss.as_bytes() as f64;
        self.carry += (smss * unmarked.as_bytes() as f64 / cwnd.as_bytes().max(1) as f64).min(smss);
        let whole = self.carry.floor();
        self.carry -= whole;
        cwnd + DataSize::bytes(whole as u64)
    }

    /// ssthresh after a loss or a timeout: Reno's halving, the Reno-friendly response of RFC 9331
    /// §4.3 that the draft keeps for loss.
    pub fn on_congestion_event(&mut self, cwnd: DataSize) -> DataSize {
        self.carry = 0.0;
        reno_ssthresh(cwnd, self.smss)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: DataSize = DataSize::bytes(1000);
    const RTT: Duration = Duration::from_millis(20);

    /// Feeds one round trip of `packets` packets, `marked` of them CE, ACKed one at a time;
    /// the round's sequence space is [start, start + packets·MSS), and as much is sent during
    /// it (the next round).
    fn round(p: &mut Prague, start: u64, packets: u64, marked: u64) -> u64 {
        let end = start + packets * MSS.as_bytes();
        for i in 0..packets {
            let una = start + (i + 1) * MSS.as_bytes();
            p.on_feedback(una, end + packets * MSS.as_bytes(), MSS, u64::from(i < marked));
        }
        end
    }

    /// α from a known sequence of per-round CE fractions: 1 → ·15/16 + F/16 each round.
    #[test]
    fn alpha_is_the_ewma_of_the_ce_fraction_per_round_trip() {
        let mut p = Prague::new(MSS);
        p.on_feedback(0, 10_000, DataSize::ZERO, 0); // the first ACK opens the first round
        let mut seq = 0;
        let mut expected = INITIAL_ALPHA;
        for (packets, marked) in [(10, 0), (10, 5), (10, 2), (10, 10), (10, 0)] {
            seq = round(&mut p, seq, packets, marked);
            expected += G * (marked as f64 / packets as f64 - expected);
            assert!((p.alpha() - expected).abs() < 1e-12, "{} vs {expected}", p.alpha());
        }
        // 0.9375 → 0.9102 → 0.8658 → 0.8742 → 0.8195
        assert!((p.alpha() - 0.8195).abs() < 1e-4, "{}", p.alpha());
    }

    /// Within a round, marks do not move α; only the ACK that ends the round does.
    #[test]
    fn alpha_waits_for_the_end_of_the_round() {
        let mut p = Prague::new(MSS);
        p.on_feedback(0, 10_000, DataSize::ZERO, 0);
        for i in 1..10 {
            p.on_feedback(i * 1000, 10_000, MSS, 1);
            assert_eq!(p.alpha(), INITIAL_ALPHA);
        }
        p.on_feedback(10_000, 20_000, MSS, 0);
        assert!((p.alpha() - (1.0 - G * 0.1)).abs() < 1e-12, "9 of 10 marked: {}", p.alpha());
    }

    /// cwnd × (1 − α/2) on the first CE of a round trip; further CE before SND.UNA reaches the
    /// SND.NXT of the reduction do nothing; after it, the next CE reduces again.
    #[test]
    fn one_reduction_per_round_trip() {
        let mut p = Prague::new(MSS);
        let cwnd = DataSize::bytes(40_000);
        // α = 1: the first mark halves the window.
        assert_eq!(p.on_ce(cwnd, 1, 0, 40_000, RTT), Some(DataSize::bytes(20_000)));
        assert_eq!(p.on_ce(DataSize::bytes(20_000), 3, 10_000, 45_000, RTT), None);
        assert_eq!(p.on_ce(DataSize::bytes(20_000), 1, 39_999, 50_000, RTT), None);
        p.alpha = 0.25;
        assert_eq!(p.on_ce(DataSize::bytes(20_000), 1, 40_000, 60_000, RTT), Some(DataSize::bytes(17_500)));
        assert_eq!(p.on_ce(DataSize::bytes(20_000), 0, 70_000, 80_000, RTT), None, "no CE, no reduction");
        assert_eq!(p.reductions(), 2);
    }

    /// One SMSS per cwnd of unmarked bytes: 20 unmarked segments grow a 20-segment window by one
    /// segment; marked segments add nothing.
    #[test]
    fn additive_increase_counts_unmarked_bytes_only() {
        let mut p = Prague::new(MSS);
        let mut cwnd = MSS * 20;
        for _ in 0..10 {
            cwnd = p.on_ack(cwnd, MSS * 2, 0);
        }
        // 1000·2000/20000 = 100 bytes per ACK; the window grows as it goes.
        assert!((cwnd.as_bytes() as i64 - 21_000).abs() <= 30, "{cwnd:?}");
        let before = cwnd;
        for _ in 0..10 {
            cwnd = p.on_ack(cwnd, MSS * 2, 2);
        }
        assert_eq!(cwnd, before, "fully marked ACKs do not grow the window");
        cwnd = p.on_ack(cwnd, MSS * 2, 1);
        assert!(cwnd > before && cwnd < before + DataSize::bytes(50), "one of two marked: {cwnd:?}");
    }

    /// The window is bytes, below two segments too: from 1.5 segments α = 1 halves it to 750
    /// bytes, and with a 20 ms SRTT the floor of 100 kbit/s × 20 ms = 250 bytes stops the fall.
    #[test]
    fn fractional_windows_with_a_rate_floor() {
        let mut p = Prague::new(MSS);
        let cwnd = p.on_ce(DataSize::bytes(1500), 1, 0, 1, RTT).unwrap();
        assert_eq!(cwnd, DataSize::bytes(750));
        let cwnd = p.on_ce(cwnd, 1, 1, 2, RTT).unwrap();
        assert_eq!(cwnd, DataSize::bytes(375));
        let cwnd = p.on_ce(cwnd, 1, 2, 3, RTT).unwrap();
        assert_eq!(cwnd, DataSize::bytes(250), "floored at MIN_RATE × SRTT");
        // It grows back by SMSS × unmarked / cwnd, at most one SMSS per ACK.
        assert_eq!(p.on_ack(cwnd, MSS, 0), DataSize::bytes(250 + 1000));
    }

    #[test]
    fn loss_halves_as_reno() {
        let mut p = Prague::new(MSS);
        assert_eq!(p.on_congestion_event(MSS * 30), MSS * 15);
        assert_eq!(p.on_congestion_event(MSS * 3), MSS * 2);
    }
}
