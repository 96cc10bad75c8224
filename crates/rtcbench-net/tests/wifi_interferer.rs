//! The external periodic interferer (Chen et al. 2015 (seed 004) §4.1: a hidden-terminal
//! network INT_STA → INT_AP heard by the AP but not by STA_A, busy τ_b = 10.75 ms every
//! T_htt = 33 ms, §3.1.2): exact instants for a frame lost to a burst, one that ends before it,
//! a node that defers to it, EIFS at an AP that lost a frame to it, the A-MPDU subframes it
//! spares; the configuration's validation; and the loss the geometry predicts.
//!
//! Timings at 5 GHz, HT MCS 7, 20 MHz, long GI: a 1500-B packet is a 1538-B MPDU of 228 µs,
//! its ACK 28 µs, SIFS 16, slot 9, AIFS[BE] 43, ACK timeout 45 µs; EIFS − DIFS after a lost
//! 64-QAM HT frame 48 µs.

mod wifi_support;

use rand::RngExt;
use rtcbench_net::radio::wifi::phy::{Band, PhyMode};
use rtcbench_net::radio::wifi::{Bss, BssConfig, ConfigError, Interferer, Port, StationConfig};
use rtcbench_net::rng::rng_for;
use rtcbench_net::DropReason;
use rtcbench_units::{DataSize, Duration, Instant};
use wifi_support::{bss, Pkt};

fn us(v: i64) -> Instant {
    Instant::from_micros(v)
}

fn pkt(flow: usize, seq: u64) -> Pkt {
    Pkt { flow, seq, size: DataSize::bytes(1500), dscp: 0, sent: Instant::ZERO }
}

/// Bursts of 10.75 ms every 33 ms, the first at 5 ms.
fn interferer(heard_by: Vec<bool>) -> Interferer {
    Interferer { offset: Duration::from_millis(5), ..seed_004_interferer(heard_by) }
}

/// Chen et al. 2015 (seed 004) §3.1.2: τ_b = 10.75 ms every T_htt = 33 ms.
fn seed_004_interferer(heard_by: Vec<bool>) -> Interferer {
    Interferer::periodic(Duration::from_millis(33), Duration::from_micros(10_750), heard_by)
}

/// One HT MCS 7 station without aggregation, and the interferer.
fn one_station(heard_by: Vec<bool>) -> BssConfig {
    let mut cfg = BssConfig::new(vec![StationConfig::fixed(PhyMode::ht(7))]);
    cfg.aggregation = None;
    cfg.interferers = vec![interferer(heard_by)];
    cfg
}

/// Runs until `until`; returns (instant, port, seq) of every delivery and (instant, port, seq,
/// reason) of every drop.
#[allow(clippy::type_complexity)]
fn drain(b: &mut Bss<Pkt>, until: Instant) -> (Vec<(i64, u16, u64)>, Vec<(i64, u16, u64, DropReason)>) {
    let (mut out, mut dropped) = (Vec::new(), Vec::new());
    while let Some(t) = b.poll_timeout().filter(|&t| t <= until) {
        b.on_timeout(t);
        while let Some((port, p, reason)) = b.poll_drop() {
            dropped.push((t.as_micros(), port.0, p.seq, reason));
        }
        while let Some((at, port, p)) = b.poll_output(t) {
            out.push((at.as_micros(), port.0, p.seq));
        }
    }
    (out, dropped)
}

#[test]
fn a_frame_that_overlaps_a_burst_is_lost_at_the_ap() {
    let mut cfg = one_station(vec![true, false]);
    cfg.retry_limit = 1;
    let mut b = bss(cfg, 1);
    // The station, deaf to the interferer, sends at the slot boundary 43 + 540 × 9 = 4903 µs;
    // the burst starts at 5000 µs, within the frame (4903-5131): the AP loses it, answers
    // nothing, and the station gives it up at the ACK timeout, 5131 + 45 µs.
    b.push(us(4900), Port::station(1), Port::AP, pkt(0, 0)).unwrap();
    assert_eq!(b.poll_timeout(), Some(us(4903)));
    let (out, dropped) = drain(&mut b, us(40_000));
    assert!(out.is_empty());
    assert_eq!(dropped, [(5176, 1, 0, DropReason::RetryLimit)]);
    assert_eq!(b.stats(Port::AP).ppdus, 0);
}

#[test]
fn a_frame_that_ends_before_the_burst_gets_through() {
    let mut b = bss(one_station(vec![true, false]), 1);
    // Sent at 4759 µs, received at 4987, before the burst (5000). The AP answers SIFS later,
    // inside the burst; the station does not hear the interferer, so the ACK gets through.
    b.push(us(4755), Port::station(1), Port::AP, pkt(0, 0)).unwrap();
    let (out, dropped) = drain(&mut b, us(40_000));
    assert_eq!(out, [(4987, 0, 0)]);
    assert!(dropped.is_empty());
    let s = b.stats(Port::station(1));
    assert_eq!((s.exchanges_ok, s.exchanges_failed), (1, 0));
}

#[test]
fn a_node_that_hears_the_interferer_defers_until_the_burst_ends() {
    for seed in 1..=20 {
        let mut b = bss(one_station(vec![true, true]), seed);
        // A frame arriving at 6000 µs, in the burst (5000-15750), finds the medium busy and
        // draws k ∈ [0, 15] slots, counted from the burst's end + AIFS: sent at 15793 + 9k.
        b.push(us(6000), Port::station(1), Port::AP, pkt(0, 0)).unwrap();
        drain(&mut b, us(15_750));
        let start = b.poll_timeout().unwrap().as_micros();
        assert!((15_793..=15_793 + 15 * 9).contains(&start), "seed {seed}: {start}");
        assert_eq!((start - 15_793) % 9, 0, "seed {seed}: {start}");
        let (out, _) = drain(&mut b, us(40_000));
        assert_eq!(out, [(start + 228, 0, 0)], "seed {seed}");
    }
}

#[test]
fn an_ap_that_lost_a_frame_to_a_burst_defers_by_eifs_after_it() {
    for seed in 1..=20 {
        let mut b = bss(one_station(vec![true, false]), seed);
        // The station's frame (4903-5131) is lost at the AP when the burst starts at 5000. A
        // frame for the station reaching the AP at 6000 draws k slots, counted from the burst's
        // end + EIFS − DIFS (48 µs) + AIFS: sent at 15750 + 48 + 43 + 9k = 15841 + 9k.
        b.push(us(4900), Port::station(1), Port::AP, pkt(0, 0)).unwrap();
        drain(&mut b, us(6000));
        b.push(us(6000), Port::AP, Port::station(1), pkt(1, 0)).unwrap();
        // Meanwhile the station retransmits into the burst; follow only the AP.
        let mut ap_start = None;
        while let Some(t) = b.poll_timeout().filter(|&t| t <= us(40_000)) {
            let before = b.stats(Port::AP).data_ppdus;
            b.on_timeout(t);
            if before == 0 && b.stats(Port::AP).data_ppdus == 1 {
                ap_start = Some(t.as_micros());
                break;
            }
        }
        let start = ap_start.expect("the AP sent its frame");
        assert!((15_841..=15_841 + 15 * 9).contains(&start), "seed {seed}: {start}");
        assert_eq!((start - 15_841) % 9, 0, "seed {seed}: {start}");
    }
}

#[test]
fn a_burst_spares_the_subframes_received_before_it() {
    let mut cfg = BssConfig::new(vec![StationConfig::fixed(PhyMode::ht(7))]);
    cfg.ampdu_retry_limit = None;
    cfg.interferers = vec![Interferer { offset: Duration::from_millis(1), ..interferer(vec![true, false]) }];
    let mut b = bss(cfg, 1);
    // Ten MPDUs in one A-MPDU from 43 µs (1940 µs long); the burst starts at 1000 µs, after
    // the 4th subframe ended (843 µs): those four are delivered and acknowledged.
    for seq in 0..10 {
        b.push(Instant::ZERO, Port::station(1), Port::AP, pkt(0, seq)).unwrap();
    }
    let (out, _) = drain(&mut b, us(1983));
    assert_eq!(out, (0..4).map(|seq| (1983, 0, seq)).collect::<Vec<_>>());
    drain(&mut b, us(2031));
    assert_eq!(b.stats(Port::station(1)).mpdus_acked, 4);
}

#[test]
fn bursts_follow_offset_period_start_and_stop() {
    // Bursts at 5, 38, 71, … ms; with start 30 ms and stop 80 ms only those at 38 and 71 ms. A
    // node that hears them is busy exactly then: its frame, pushed at 0, goes at once; one
    // pushed at 38 ms waits for the end of that burst.
    let mut cfg = one_station(vec![true, true]);
    cfg.interferers[0].start = Some(Duration::from_millis(30));
    cfg.interferers[0].stop = Some(Duration::from_millis(80));
    let mut b = bss(cfg, 1);
    b.push(us(5000), Port::station(1), Port::AP, pkt(0, 0)).unwrap();
    assert_eq!(b.poll_timeout(), Some(us(5002)), "no burst at 5 ms");
    drain(&mut b, us(38_100));
    b.push(us(38_100), Port::station(1), Port::AP, pkt(0, 1)).unwrap();
    let (out, _) = drain(&mut b, us(200_000));
    assert_eq!(out.len(), 1);
    assert!(out[0].0 >= 38_000 + 10_750 + 43 + 228, "{out:?}");
    // Nothing after the last burst: the element has no deadline left.
    assert_eq!(b.poll_timeout(), None);
}

#[test]
fn the_configuration_is_checked() {
    let check = |f: &dyn Fn(&mut Interferer)| {
        let mut cfg = one_station(vec![true, false]);
        f(&mut cfg.interferers[0]);
        cfg.validate()
    };
    assert_eq!(check(&|_| {}), Ok(()));
    let timing = |period, busy| ConfigError::InterfererTiming {
        interferer: 0,
        period: Duration::from_millis(period),
        busy: Duration::from_millis(busy),
    };
    assert_eq!(check(&|i| i.busy = Duration::from_millis(33)), Err(timing(33, 33)));
    assert_eq!(check(&|i| i.busy = Duration::ZERO), Err(timing(33, 0)));
    let e = check(&|i| i.heard_by = vec![true]).unwrap_err();
    assert_eq!(e, ConfigError::InterfererHearing { interferer: 0, nodes: 2, found: 1 });
    assert_eq!(
        e.to_string(),
        "interferer 0: heard_by needs one entry per node, the AP first then every station (2), not 1"
    );
    let window = Err(ConfigError::InterfererWindow { interferer: 0 });
    assert_eq!(check(&|i| i.offset = Duration::from_millis(-1)), window);
    assert_eq!(
        check(&|i| {
            i.start = Some(Duration::from_millis(50));
            i.stop = Some(Duration::from_millis(50));
        }),
        window
    );
    assert!(timing(33, 33).to_string().contains("shorter than its period"));
}

#[test]
fn configs_without_interferers_still_parse() {
    let cfg = BssConfig::new(vec![StationConfig::fixed(PhyMode::ht(7))]);
    let mut json: serde_json::Value = serde_json::to_value(&cfg).unwrap();
    json.as_object_mut().unwrap().remove("interferers");
    assert_eq!(serde_json::from_value::<BssConfig>(json).unwrap(), cfg);
    let with = one_station(vec![true, false]);
    let back: BssConfig = serde_json::from_str(&serde_json::to_string(&with).unwrap()).unwrap();
    assert_eq!(back, with);
}

/// One station at HT MCS 7 (no aggregation) sending 1224-B packets as a Poisson process of
/// `rate` packets per second for `secs`, the seed-004 interferer heard only by the AP.
/// Returns (packets offered, delivered, dropped, the station's stats).
pub(crate) fn poisson_run(
    retry_limit: u32,
    rate: f64,
    secs: i64,
    seed: u64,
) -> (u64, u64, u64, rtcbench_net::radio::wifi::NodeStats) {
    let mut cfg = BssConfig::new(vec![StationConfig::fixed(PhyMode::ht(7))]);
    cfg.aggregation = None;
    cfg.retry_limit = retry_limit;
    cfg.interferers = vec![seed_004_interferer(vec![true, false])];
    let mut b = bss(cfg, seed);
    let mut arrivals = rng_for(seed, "arrivals");
    let until = Instant::from_secs(secs);
    let mut next = Instant::ZERO;
    let (mut offered, mut delivered, mut dropped) = (0, 0, 0);
    loop {
        let gap = -(1.0 - arrivals.random::<f64>()).ln() / rate;
        next += Duration::from_secs_f64(gap);
        if next >= until {
            break;
        }
        while let Some(t) = b.poll_timeout().filter(|&t| t <= next) {
            b.on_timeout(t);
            while b.poll_drop().is_some() {
                dropped += 1;
            }
            while b.poll_output(t).is_some() {
                delivered += 1;
            }
        }
        let p = Pkt { flow: 0, seq: offered, size: DataSize::bytes(1224), dscp: 0, sent: next };
        b.push(next, Port::station(1), Port::AP, p).unwrap();
        offered += 1;
    }
    let (out, drops) = drain(&mut b, until + Duration::from_secs(1));
    (offered, delivered + out.len() as u64, dropped + drops.len() as u64, b.stats(Port::station(1)))
}

#[test]
fn first_attempts_fail_as_the_geometry_predicts() {
    // A frame of airtime T fails if it starts within T before a burst or during it: a
    // fraction (τ_b + T) / T_htt of uniformly placed first attempts.
    let t = PhyMode::ht(7).ppdu_duration(DataSize::bytes(1224 + 38), Band::Ghz5);
    assert_eq!(t, Duration::from_micros(192));
    let predicted = (10_750.0 + t.as_micros() as f64) / 33_000.0;
    // 30 packets/s (about 0.3 Mbit/s, so that frames rarely queue behind one another) for 200 s.
    // With one attempt, every failed exchange is a
    // failed first attempt and a lost packet.
    let (offered, delivered, dropped, s) = poisson_run(1, 30.0, 200, 1);
    let failed = s.exchanges_failed as f64 / s.data_ppdus as f64;
    let lost = dropped as f64 / offered as f64;
    assert_eq!(offered, delivered + dropped);
    assert!((failed - predicted).abs() < 0.02, "{failed} vs {predicted}");
    assert!((lost - predicted).abs() < 0.02, "{lost} vs {predicted}");
    // With 7 attempts a frame caught by a burst is dropped only if its 7th attempt still
    // starts inside the burst. Attempt i + 1 starts 192 µs (the frame) + 45 (ACK timeout) +
    // 43 (SIFS + AIFS) + k_i slots after attempt i, k_i uniform in [0, CW_i] with CW = 31,
    // 63, …, 1023; with S the sum of those six gaps, a first attempt at x ∈ [−T, τ_b) from the
    // burst's start is dropped if x + S < τ_b, so P(drop) = E[(τ_b + T − S)⁺] / T_htt.
    let mut dist = vec![1.0f64];
    for cw in [31usize, 63, 127, 255, 511, 1023] {
        let mut next = vec![0.0; dist.len() + cw];
        for (s, p) in dist.iter().enumerate() {
            for k in 0..=cw {
                next[s + k] += p / (cw + 1) as f64;
            }
        }
        dist = next;
    }
    let a = 10_750.0 + t.as_micros() as f64;
    let drop7: f64 = dist
        .iter()
        .enumerate()
        .map(|(k, p)| p * (a - (6.0 * (192.0 + 45.0 + 43.0) + 9.0 * k as f64)).max(0.0))
        .sum::<f64>()
        / 33_000.0;
    let (offered7, delivered7, dropped7, s7) = poisson_run(7, 30.0, 200, 1);
    let lost7 = dropped7 as f64 / offered7 as f64;
    assert_eq!(offered7, delivered7 + dropped7);
    println!("R = 1: failed {failed:.4}, lost {lost:.4} (predicted {predicted:.4}); R = 7: lost {lost7:.4} (predicted {drop7:.4}), {s7:?}");
    assert!((lost7 - drop7).abs() < 0.01, "{lost7} vs {drop7}");
    // About one frame in eight that a burst catches: retries absorb most of it, not all.
    assert!(lost7 < 0.15 * lost, "{lost7}");
}
