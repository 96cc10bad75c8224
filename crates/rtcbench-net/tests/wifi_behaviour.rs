//! The mechanisms of the BSS one at a time, with scripted packets and exact instants: channel
//! access on an idle medium (EDCA and DCF), TXOP bursts, same-slot collisions, hidden stations
//! and the A-MPDU MPDUs an overlap spares, retry limits and lifetimes, queue limits, relaying
//! between stations, in-order delivery under channel errors, access categories, rate
//! adaptation, and determinism.
//!
//! Timings at 5 GHz, HT MCS 7, 20 MHz, long GI: a 1500-B packet is a 1538-B MPDU of 228 µs,
//! its ACK 28 µs (24 Mbit/s), SIFS 16, slot 9, AIFS[BE] 43, AIFS[VO] 34 = DIFS, ACK timeout
//! 45 µs.

mod wifi_support;

use rtcbench_net::radio::wifi::phy::PhyMode;
use rtcbench_net::radio::wifi::{
    AccessCategory, ApQueueConfig, Bss, BssConfig, ErrorModel, Port, QueueConfig, RateControl, StationConfig,
};
use rtcbench_net::DropReason;
use rtcbench_units::{DataSize, Duration, Instant};
use wifi_support::{bss, run_saturated, Flow, Pkt};

fn us(v: i64) -> Instant {
    Instant::from_micros(v)
}

fn pkt(flow: usize, seq: u64, dscp: u8) -> Pkt {
    Pkt { flow, seq, size: DataSize::bytes(1500), dscp, sent: Instant::ZERO }
}

/// A QoS BSS of `n` HT MCS 7 stations without aggregation.
fn plain(n: usize) -> BssConfig {
    let mut cfg = BssConfig::new(vec![StationConfig::fixed(PhyMode::ht(7)); n]);
    cfg.aggregation = None;
    cfg
}

/// Runs the BSS until nothing is left to do or `until`; returns (instant, port, flow, seq) of
/// every delivery and (port, flow, seq, reason) of every drop.
#[allow(clippy::type_complexity)]
fn drain(
    b: &mut Bss<Pkt>,
    until: Instant,
) -> (Vec<(i64, u16, usize, u64)>, Vec<(u16, usize, u64, DropReason)>) {
    let (mut out, mut dropped) = (Vec::new(), Vec::new());
    while let Some(t) = b.poll_timeout().filter(|&t| t <= until) {
        b.on_timeout(t);
        while let Some((port, p, reason)) = b.poll_drop() {
            dropped.push((port.0, p.flow, p.seq, reason));
        }
        while let Some((at, port, p)) = b.poll_output(t) {
            out.push((at.as_micros(), port.0, p.flow, p.seq));
        }
    }
    (out, dropped)
}

#[test]
fn an_edcaf_sends_at_the_next_slot_boundary_after_aifs() {
    let mut b = bss(plain(1), 1);
    // Idle since 0: the AIFS ends at 16 + 3 × 9 = 43 µs, and slots follow every 9 µs. A frame
    // arriving at 1000 µs goes at the boundary 43 + 107 × 9 = 1006 µs, no backoff (immediate
    // access), and is received 228 µs later.
    b.push(us(1000), Port::station(1), Port::AP, pkt(0, 0, 0)).unwrap();
    assert_eq!(b.poll_timeout(), Some(us(1006)));
    let (out, dropped) = drain(&mut b, us(10_000));
    assert_eq!(out, [(1234, 0, 0, 0)]);
    assert!(dropped.is_empty());
    let s = b.stats(Port::station(1));
    assert_eq!((s.ppdus, s.exchanges_ok, s.airtime), (1, 1, Duration::from_micros(228)));
    // The AP sent the ACK, SIFS after the data.
    assert_eq!(b.stats(Port::AP).airtime, Duration::from_micros(28));
}

#[test]
fn a_dcf_waits_a_full_difs_after_the_frame_arrives() {
    let mut cfg = plain(1);
    cfg.qos = false;
    let mut b = bss(cfg, 1);
    // Non-QoS: 36 B of MAC overhead, a 1536-B MPDU, still 228 µs; sent DIFS (34 µs) after it
    // arrived.
    b.push(us(1000), Port::station(1), Port::AP, pkt(0, 0, 0)).unwrap();
    assert_eq!(b.poll_timeout(), Some(us(1034)));
    assert_eq!(drain(&mut b, us(10_000)).0, [(1262, 0, 0, 0)]);
}

#[test]
fn a_txop_sends_a_burst_separated_by_sifs() {
    let mut b = bss(plain(1), 1);
    // Voice (DSCP 48, UP 6): AIFSN 2, TXOP limit 2.080 ms. Three frames: the first at the slot
    // boundary 34 + 108 × 9 = 1006 µs, each next one SIFS after the previous ACK, i.e. every
    // 228 + 16 + 28 + 16 = 288 µs, all within the TXOP.
    for seq in 0..3 {
        b.push(us(1000), Port::station(1), Port::AP, pkt(0, seq, 48)).unwrap();
    }
    assert_eq!(b.queue_len(Port::station(1), AccessCategory::Vo), 3);
    let (out, _) = drain(&mut b, us(10_000));
    assert_eq!(out, [(1234, 0, 0, 0), (1522, 0, 0, 1), (1810, 0, 0, 2)]);
}

#[test]
fn a_frame_arriving_on_a_busy_medium_backs_off_after_it() {
    let mut b = bss(plain(2), 1);
    b.push(us(1000), Port::station(1), Port::AP, pkt(0, 0, 0)).unwrap();
    // While station 1's frame is on air (1006-1234), station 2's arrives and must draw a
    // backoff: it cannot start before the ACK (1250-1278) plus AIFS, i.e. 1321 µs.
    drain(&mut b, us(1100));
    b.push(us(1100), Port::station(2), Port::AP, pkt(1, 0, 0)).unwrap();
    let (out, _) = drain(&mut b, us(10_000));
    assert_eq!(out[0], (1234, 0, 0, 0));
    let (t, _, flow, _) = out[1];
    assert_eq!(flow, 1);
    assert!((1321 + 228..=1321 + 15 * 9 + 228).contains(&t), "{t}");
    assert_eq!((t - 1321 - 228) % 9, 0, "slot-aligned");
}

#[test]
fn same_slot_starters_collide_then_back_off_from_doubled_windows() {
    let mut b = bss(plain(2), 1);
    // Both frames arrive together on an idle medium: both go at 1006 µs and collide at the AP.
    b.push(us(1000), Port::station(1), Port::AP, pkt(0, 0, 0)).unwrap();
    b.push(us(1000), Port::station(2), Port::AP, pkt(1, 0, 0)).unwrap();
    let (out, dropped) = drain(&mut b, us(100_000));
    assert!(dropped.is_empty());
    assert_eq!(out.len(), 2);
    for s in 1..=2 {
        let stats = b.stats(Port::station(s));
        assert!(stats.exchanges_failed >= 1 && stats.exchanges_ok == 1, "{stats:?}");
    }
    // No ACK by 1234 + 45 µs: each draws from [0, 31] and counts down from 1279 + SIFS + AIFS.
    let first = out.iter().map(|o| o.0).min().unwrap();
    assert!(first >= 1279 + 16 + 27 + 228, "{first}");
    // Nobody heard a decodable frame, so nobody deferred by EIFS (ns-3's behaviour): the
    // retransmissions stay on the slot grid that starts at 1322 µs.
    assert_eq!((first - 1322 - 228) % 9, 0);
}

fn hidden_pair(mut cfg: BssConfig) -> BssConfig {
    cfg.hearing = Some(vec![vec![true, true, true], vec![true, true, false], vec![true, false, true]]);
    cfg
}

#[test]
fn an_overlap_spares_the_mpdus_received_before_it() {
    let mut cfg = hidden_pair(BssConfig::new(vec![StationConfig::fixed(PhyMode::ht(7)); 2]));
    cfg.ampdu_retry_limit = None;
    let mut b = bss(cfg, 1);
    // Station 1 sends 10 MPDUs in one A-MPDU from 43 µs (1940 µs long). Station 2 does not hear
    // it and sends at 1006 µs. The AP got MPDUs 1-4 by then (the 4th ends 843 µs), loses the
    // rest and station 2's frame, and acknowledges those four.
    for seq in 0..10 {
        b.push(Instant::ZERO, Port::station(1), Port::AP, pkt(0, seq, 0)).unwrap();
    }
    assert_eq!(b.poll_timeout(), Some(us(43)));
    drain(&mut b, us(1000));
    b.push(us(1000), Port::station(2), Port::AP, pkt(1, 0, 0)).unwrap();
    let (out, _) = drain(&mut b, us(1983));
    assert_eq!(out, (0..4).map(|seq| (1983, 0, 0, seq)).collect::<Vec<_>>());
    // Station 2, still deaf to station 1, may have tried again and failed again meanwhile.
    assert!(b.stats(Port::station(2)).exchanges_failed >= 1);
    // Station 1 learns it from the BlockAck (1999-2031 µs at 24 Mbit/s).
    drain(&mut b, us(2031));
    assert_eq!(b.stats(Port::station(1)).mpdus_acked, 4);
    // The other six go again, and arrive after the four, in order.
    let (out, _) = drain(&mut b, us(200_000));
    let seqs: Vec<(usize, u64)> = out.iter().map(|o| (o.2, o.3)).collect();
    assert!(seqs.iter().filter(|s| s.0 == 0).map(|s| s.1).eq(4..10), "{seqs:?}");
    assert!(seqs.contains(&(1, 0)));
}

#[test]
fn hidden_stations_collide_far_more_often() {
    let fail_rate = |cfg: BssConfig| {
        let mut b = bss(cfg, 1);
        let flows: Vec<Flow> = (1..=2).map(|i| Flow::new(Port::station(i), Port::AP, 1500)).collect();
        run_saturated(&mut b, &flows, Instant::ZERO, Instant::from_secs(5));
        let (ok, failed) = (1..=2).fold((0, 0), |(o, f), s| {
            let st = b.stats(Port::station(s));
            (o + st.exchanges_ok, f + st.exchanges_failed)
        });
        failed as f64 / (ok + failed) as f64
    };
    // Two stations that hear each other collide when they pick the same slot (about 11 % of
    // exchanges); hidden ones whenever their frames overlap at all (about a third here).
    let seen = fail_rate(plain(2));
    let hidden = fail_rate(hidden_pair(plain(2)));
    assert!((0.08..0.14).contains(&seen), "{seen}");
    assert!(hidden > 0.25, "{hidden}");
}

#[test]
fn the_retry_limit_counts_attempts() {
    let mut cfg = plain(1);
    cfg.stations[0].errors = ErrorModel::Fixed { per: 1.0 };
    let mut b = bss(cfg, 1);
    b.push(us(1000), Port::station(1), Port::AP, pkt(0, 0, 0)).unwrap();
    let (out, dropped) = drain(&mut b, us(1_000_000));
    assert!(out.is_empty());
    assert_eq!(dropped, [(1, 0, 0, DropReason::RetryLimit)]);
    let s = b.stats(Port::station(1));
    // R = 7: the first transmission and six retries.
    assert_eq!((s.ppdus, s.exchanges_failed, s.mpdus_retry_dropped), (7, 7, 1));
    // The AP heard seven frames in error and answered none.
    assert_eq!(b.stats(Port::AP).ppdus, 0);
}

#[test]
fn without_a_retry_limit_under_blockack_only_the_lifetime_drops() {
    let mut cfg = BssConfig::new(vec![StationConfig::fixed(PhyMode::ht(7))]);
    cfg.stations[0].errors = ErrorModel::Fixed { per: 1.0 };
    cfg.ampdu_retry_limit = None;
    cfg.sta_queue = QueueConfig { packets: 1000, max_delay: Some(Duration::from_millis(50)) };
    let mut b = bss(cfg, 1);
    for seq in 0..3 {
        b.push(us(1000), Port::station(1), Port::AP, pkt(0, seq, 0)).unwrap();
    }
    let (out, dropped) = drain(&mut b, us(1_000_000));
    assert!(out.is_empty());
    assert_eq!(dropped, (0..3).map(|seq| (1, 0, seq, DropReason::Lifetime)).collect::<Vec<_>>());
    assert!(b.stats(Port::station(1)).exchanges_failed > 7);
    assert_eq!(b.queue_len(Port::station(1), AccessCategory::Be), 0);
}

#[test]
fn full_queues_refuse_packets() {
    let mut cfg = plain(2);
    cfg.sta_queue = QueueConfig { packets: 2, max_delay: None };
    cfg.ap_queue = ApQueueConfig::SharedPerAc { packets: 3, max_delay: None };
    let mut b = bss(cfg, 1);
    let t = us(1000);
    assert!(b.push(t, Port::station(1), Port::AP, pkt(0, 0, 0)).is_ok());
    assert!(b.push(t, Port::station(1), Port::AP, pkt(0, 1, 0)).is_ok());
    let refused = b.push(t, Port::station(1), Port::AP, pkt(0, 2, 0)).unwrap_err();
    assert_eq!((refused.0.seq, refused.1), (2, DropReason::QueueFull));
    // Another category has its own queue.
    assert!(b.push(t, Port::station(1), Port::AP, pkt(0, 3, 48)).is_ok());
    // The AP's best-effort queue is shared by its stations.
    for (seq, to) in [(0, 1), (1, 2), (2, 1)] {
        assert!(b.push(t, Port::AP, Port::station(to), pkt(1, seq, 0)).is_ok());
    }
    assert_eq!(b.push(t, Port::AP, Port::station(2), pkt(1, 3, 0)).unwrap_err().1, DropReason::QueueFull);
}

#[test]
fn station_to_station_goes_through_the_ap() {
    let mut b = bss(plain(2), 1);
    b.push(us(1000), Port::station(1), Port::station(2), pkt(0, 0, 0)).unwrap();
    let (out, _) = drain(&mut b, us(100_000));
    assert_eq!(out.len(), 1);
    let (t, port, _, _) = out[0];
    assert_eq!(port, 2);
    // Up (received at 1234, ACK until 1278), then down after at least AIFS.
    assert!(t >= 1278 + 43 + 228, "{t}");
    assert_eq!(b.stats(Port::AP).exchanges_ok, 1);
    assert_eq!(b.stats(Port::station(1)).exchanges_ok, 1);
}

#[test]
fn channel_errors_turn_into_delay_not_loss() {
    for aggregation in [false, true] {
        let mut cfg = BssConfig::new(vec![StationConfig::fixed(PhyMode::ht(7))]);
        if !aggregation {
            cfg.aggregation = None;
        }
        cfg.stations[0].errors = ErrorModel::Fixed { per: 0.3 };
        let mut b = bss(cfg, 1);
        let flows =
            [Flow::new(Port::station(1), Port::AP, 1500), Flow::new(Port::AP, Port::station(1), 1500)];
        let r = run_saturated(&mut b, &flows, Instant::ZERO, Instant::from_secs(2));
        for f in &r {
            // An MPDU is lost only if all 7 attempts fail: 0.3^7 ≈ 2·10⁻⁴.
            let lost = f.dropped.len() as f64 / (f.delivered + f.dropped.len() as u64) as f64;
            assert!(f.delivered > 1000 && lost < 2e-3, "aggregation {aggregation}: {f:?}");
            // The receiver's reordering buffer hands packets up in order.
            assert_eq!(f.reordered, 0, "aggregation {aggregation}");
        }
    }
}

#[test]
fn eifs_follows_a_frame_lost_to_channel_errors() {
    let mut cfg = plain(1);
    cfg.stations[0].errors = ErrorModel::Fixed { per: 1.0 };
    cfg.retry_limit = 1;
    let mut b = bss(cfg, 1);
    b.push(us(1000), Port::station(1), Port::AP, pkt(0, 0, 0)).unwrap();
    drain(&mut b, us(1100));
    // The station's frame (1006-1234) fails at the AP. A frame for the station reaching the AP
    // at 1100 finds the medium busy and draws a backoff of k slots, counted from the end of
    // EIFS instead of AIFS: EIFS − DIFS = SIFS + the BlockAck a 64-QAM HT frame would have got
    // (32 µs at 24 Mbit/s), so the AP sends at 1234 + 48 + 43 + 9k.
    b.push(us(1100), Port::AP, Port::station(1), pkt(1, 0, 0)).unwrap();
    // The station gives up its frame at the ACK timeout (retry limit 1).
    let (_, dropped) = drain(&mut b, us(1279));
    assert_eq!(dropped, [(1, 0, 0, DropReason::RetryLimit)]);
    let next = b.poll_timeout().unwrap().as_micros();
    assert!(next >= 1234 + 48 + 43 && (next - (1234 + 48 + 43)) % 9 == 0, "{next}");
    assert!(next <= 1234 + 48 + 43 + 15 * 9, "{next}");
}

#[test]
fn dscp_picks_the_access_category_and_voice_wins() {
    let mut b = bss(plain(1), 1);
    for (dscp, ac) in [
        (0, AccessCategory::Be),
        (8, AccessCategory::Bk),
        (34, AccessCategory::Vi),
        (46, AccessCategory::Vi),
        (48, AccessCategory::Vo),
    ] {
        let before = b.queue_len(Port::station(1), ac);
        b.push(Instant::ZERO, Port::station(1), Port::AP, pkt(0, 0, dscp)).unwrap();
        assert_eq!(b.queue_len(Port::station(1), ac), before + 1, "DSCP {dscp}");
    }
    // One station, voice and best effort both saturated: voice's shorter AIFS and smaller window
    // win most of the internal contention.
    let mut b = bss(plain(1), 1);
    let mut voice = Flow::new(Port::station(1), Port::AP, 1500);
    voice.dscp = 48;
    let flows = [voice, Flow::new(Port::station(1), Port::AP, 1500)];
    let r = run_saturated(&mut b, &flows, Instant::ZERO, Instant::from_secs(1));
    assert!(r[0].delivered > 5 * r[1].delivered, "{} vs {}", r[0].delivered, r[1].delivered);
}

#[test]
fn arf_settles_on_the_fastest_mcs_the_snr_allows() {
    // At 15 dB (the AWGN table, `docs/wifi.md`) MCS 4 loses about 10⁻⁴ of its MPDUs and MCS 5 most of them.
    let run = |rate_control, phy| {
        let mut cfg = plain(1);
        cfg.stations[0] = StationConfig {
            phy,
            errors: ErrorModel::Snr { snr_db: 15.0 },
            rate_control,
            ..StationConfig::fixed(phy)
        };
        let mut b = bss(cfg, 1);
        let r = run_saturated(
            &mut b,
            &[Flow::new(Port::station(1), Port::AP, 1500)],
            Instant::ZERO,
            Instant::from_secs(3),
        );
        (r[0].delivered, b.phy_mode(Port::station(1), Port::AP))
    };
    let (arf, mode) = run(RateControl::arf(), PhyMode::ht(7));
    let (mcs4, _) = run(RateControl::Fixed, PhyMode::ht(4));
    let (mcs7, _) = run(RateControl::Fixed, PhyMode::ht(7));
    assert!(matches!(mode, PhyMode::Ht { mcs: 4 | 5, .. }), "{mode:?}");
    assert!(arf as f64 > 0.8 * mcs4 as f64, "ARF {arf} vs MCS 4 {mcs4}");
    assert!((mcs7 as f64) < 0.01 * mcs4 as f64, "MCS 7 {mcs7}");
}

#[test]
fn a_run_is_a_function_of_its_seed() {
    let run = |seed| {
        let mut b = bss(BssConfig::new(vec![StationConfig::fixed(PhyMode::ht(7)); 3]), seed);
        let mut flows: Vec<Flow> = (1..=3).map(|i| Flow::new(Port::station(i), Port::AP, 1200)).collect();
        flows.push(Flow::new(Port::AP, Port::station(2), 1500));
        let r = run_saturated(&mut b, &flows, Instant::ZERO, Instant::from_millis(300));
        let stats: Vec<_> = (0..=3).map(|p| b.stats(Port(p))).collect();
        (r.iter().map(|f| f.delivered).collect::<Vec<_>>(), stats)
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7).1, run(8).1);
}
