//! Seed 004 (Chen, Ma, Shen, "Congestion-aware MAC layer adaptation to improve video
//! teleconferencing over Wi-Fi", MMSys 2015), §3.1.1: the mean transmit delay of an MPDU that is
//! discarded after R = 7 attempts, its eq. (3), with T(L) = 0.25 ms for L = 1224 B and σ = 9 µs,
//! against the values `docs/wifi.md` lists ("Validation"): exact to three decimals
//! of a millisecond (10.8625 and 2.1865 truncated), and the values the paper
//! itself prints.

mod wifi_support;

use rand::RngExt;
use rtcbench_net::radio::wifi::phy::PhyMode;
use rtcbench_net::radio::wifi::{
    AccessCategory, AdaptationState, Bss, BssConfig, Interferer, Port, QueueConfig, RetryAdaptation,
    StationConfig,
};
use rtcbench_net::rng::rng_for;
use rtcbench_net::DropReason;
use rtcbench_units::{Bitrate, DataSize, Duration, Instant};
use wifi_support::{bss, Pkt};

use rtcbench_net::radio::wifi::bianchi::mean_discard_delay_secs;

const T_1224: Duration = Duration::from_micros(250);
const SLOT: Duration = Duration::from_micros(9);

fn td_ms(p: f64, cw_min: u32, cw_max: u32) -> f64 {
    1e3 * mean_discard_delay_secs(7, cw_min, cw_max, p, T_1224, SLOT)
}

/// `x` to three decimals, truncated, as `docs/wifi.md` prints it.
fn three_decimals(x: f64) -> String {
    format!("{:.3}", (x * 1e3 + 1e-9).floor() / 1e3)
}

#[test]
fn transmit_delay_vectors_a15() {
    // (p, legacy 15/1023, EDCA video 7/15) in ms.
    let vectors = [(0.0, "10.862", "2.186"), (0.1, "36.175", "3.399"), (0.9, "238.675", "13.099")];
    for (p, legacy, video) in vectors {
        assert_eq!(three_decimals(td_ms(p, 15, 1023)), legacy, "legacy, p = {p}");
        assert_eq!(three_decimals(td_ms(p, 7, 15)), video, "EDCA video, p = {p}");
    }
}

#[test]
fn transmit_delay_closed_form() {
    // Σ min(2^(i−1)·16 − 1, 1023) / 2 over i = 1..7 is 2025 / 2 = 1012.5 backoff slots; for
    // CW 7-15 it is 97 / 2 = 48.5. So TD = slots × (p·T + σ) + 7·T.
    for p in [0.0, 0.1, 0.25, 0.5, 0.9] {
        let legacy = 1012.5 * (p * 0.25 + 0.009) + 7.0 * 0.25;
        let video = 48.5 * (p * 0.25 + 0.009) + 7.0 * 0.25;
        assert!((td_ms(p, 15, 1023) - legacy).abs() < 1e-9, "p = {p}");
        assert!((td_ms(p, 7, 15) - video).abs() < 1e-9, "p = {p}");
    }
}

#[test]
fn the_papers_own_numbers() {
    // "TD(7, 1224) = 36.175 ms" (legacy, p = 0.1), "3.399 ms" (EDCA video, p = 0.1),
    // "1.75 ms + 236.93 ms = 238.68 ms" (p = 0.9, rounded).
    assert!((td_ms(0.1, 15, 1023) - 36.175).abs() < 1e-9);
    assert!((td_ms(0.1, 7, 15) - 3.399).abs() < 1e-9);
    assert!((td_ms(0.9, 15, 1023) - 238.68).abs() < 0.005);
    // Its 10.894 ms at p = 0 is not reproduced (we get 10.8625): it implies T(L) =
    // (10.894 − 1012.5 × 0.009) / 7 = 0.2545 ms, slightly more than the 0.25 ms the paper
    // states.
}

// ---- Chen et al. 2015 (seed 004) §3.1-§3.3: the congestion-aware retry-limit adaptation ----
//
// Timings at 5 GHz, HT MCS 7, 20 MHz, long GI, no aggregation: a 1224-B packet is a 1262-B
// MPDU of 192 µs, its ACK 28 µs, SIFS 16, slot 9, AIFS[BE] 43 µs, ACK timeout 45 µs. On an
// idle medium a packet goes at the next slot boundary 43 + 9k µs and is acknowledged
// 192 + 16 + 28 = 236 µs later.

fn us(v: i64) -> Instant {
    Instant::from_micros(v)
}

fn pkt(seq: u64) -> Pkt {
    Pkt { flow: 0, seq, size: DataSize::bytes(1224), dscp: 0, sent: Instant::ZERO }
}

/// `n` HT MCS 7 stations without aggregation; station 1 adapts with R_ex = `extension`.
fn adapting(n: usize, extension: u32, cl_threshold: f64, buffer_threshold: u32) -> BssConfig {
    let mut cfg = BssConfig::new(vec![StationConfig::fixed(PhyMode::ht(7)); n]);
    cfg.aggregation = None;
    cfg.stations[0].retry_adaptation = Some(RetryAdaptation::new(extension, cl_threshold, buffer_threshold));
    cfg
}

/// τ_b = 10.75 ms every T_htt = 33 ms (§3.1.2, §4.1), heard by the AP only.
fn hidden_terminal(nodes: usize) -> Interferer {
    let mut heard_by = vec![false; nodes];
    heard_by[0] = true;
    Interferer::periodic(Duration::from_millis(33), Duration::from_micros(10_750), heard_by)
}

/// Runs until `until`, event by event; returns the drops.
fn drain(b: &mut Bss<Pkt>, until: Instant) -> Vec<(u16, u64, DropReason)> {
    let mut dropped = Vec::new();
    while let Some(t) = b.poll_timeout().filter(|&t| t <= until) {
        b.on_timeout(t);
        while let Some((port, p, reason)) = b.poll_drop() {
            dropped.push((port.0, p.seq, reason));
        }
        while b.poll_output(t).is_some() {}
    }
    dropped
}

fn state(b: &Bss<Pkt>) -> AdaptationState {
    b.adaptation(Port::station(1)).expect("station 1 adapts")
}

#[test]
fn algorithm_1_statistics_from_scripted_traffic() {
    let mut cfg = adapting(1, 3, 0.5, 100);
    cfg.sta_queue = QueueConfig { packets: 1, max_delay: None };
    let mut b = bss(cfg, 1);
    assert_eq!(b.adaptation(Port::AP), None);
    // Interval [0, 100 ms): packets at 1000 µs (sent 1006, acknowledged 1242: TD 242 µs) and
    // at 50 000 µs (sent 50 002, acknowledged 50 238: TD 238 µs).
    b.push(us(1000), Port::station(1), Port::AP, pkt(0)).unwrap();
    drain(&mut b, us(50_000));
    b.push(us(50_000), Port::station(1), Port::AP, pkt(1)).unwrap();
    drain(&mut b, us(99_999));
    // Nothing is counted before the interval ends (Algorithm 1 runs every τ).
    assert_eq!(state(&b), AdaptationState::default());
    drain(&mut b, us(100_000));
    let s = state(&b);
    assert_eq!((s.arrived, s.delivered), (DataSize::bytes(2448), DataSize::bytes(2448)));
    assert_eq!(s.transmit_delay, Duration::from_micros(480));
    // EDR = 0; MC = 19 584 bit / 480 µs = 40.8 Mbit/s; CL = 0.
    assert_eq!((s.edr, s.mc, s.cl), (Bitrate::ZERO, Bitrate::bps(40_800_000), 0.0));
    // Interval [100, 200 ms): two packets at 150 ms, the second refused (a 1-packet queue) but
    // counted in Ar; the first sent at 150 001 µs, acknowledged at 150 237 (TD 237 µs).
    b.push(us(150_000), Port::station(1), Port::AP, pkt(2)).unwrap();
    assert!(b.push(us(150_000), Port::station(1), Port::AP, pkt(3)).is_err());
    drain(&mut b, us(200_000));
    let s = state(&b);
    assert_eq!((s.arrived, s.delivered), (DataSize::bytes(4896), DataSize::bytes(3672)));
    assert_eq!(s.transmit_delay, Duration::from_micros(717));
    // Eq. (4): EDR = 1224 B / (wτ = 1 s) = 9792 bit/s. Eq. (6): MC = 29 376 bit / 717 µs.
    // Eq. (5): CL = EDR · ΣTD / Deliv = 9792 · 717e-6 / 29 376.
    assert_eq!(s.edr, Bitrate::bps(9792));
    assert_eq!(s.mc, Bitrate::bps(29_376_000_000 / 717));
    assert!((s.cl - 9792.0 * 717e-6 / 29_376.0).abs() < 1e-15, "{}", s.cl);
    // Ten intervals later the window has forgotten them all.
    drain(&mut b, us(1_200_000));
    let s = state(&b);
    assert_eq!((s.arrived, s.delivered, s.transmit_delay), (DataSize::ZERO, DataSize::ZERO, Duration::ZERO));
}

/// A BSS whose AP is deaf, for station 1, from 140 ms to 640 ms (an interferer busy 500 ms
/// every second): every attempt made then fails.
fn deaf_ap_from_140_ms(mut cfg: BssConfig) -> Bss<Pkt> {
    let mut i = Interferer::periodic(Duration::from_secs(1), Duration::from_millis(500), vec![true, false]);
    i.offset = Duration::from_millis(140);
    cfg.interferers = vec![i];
    bss(cfg, 1)
}

#[test]
fn algorithm_3_grants_r_plus_r_ex_attempts_when_the_level_is_low() {
    let mut b = deaf_ap_from_140_ms(adapting(1, 3, 0.5, 100));
    drain(&mut b, us(150_000));
    b.push(us(150_000), Port::station(1), Port::AP, pkt(0)).unwrap();
    let dropped = drain(&mut b, us(600_000));
    assert_eq!(dropped, [(1, 0, DropReason::RetryLimit)]);
    // R = 7 attempts, then R_ex = 3 more: 10 PPDUs, 9 of them retransmissions.
    let st = b.stats(Port::station(1));
    assert_eq!((st.data_ppdus, st.mpdu_retries, st.mpdus_retry_dropped), (10, 9, 1));
    let s = state(&b);
    assert_eq!((s.extended_attempts, s.gave_up_extension), (3, 1));
    assert_eq!((s.gave_up_congestion, s.gave_up_buffer), (0, 0));
    // Without the adaptation, or with R_ex = 0, the same MPDU gets 7 attempts.
    for cfg in [adapting(1, 0, 0.5, 100), {
        let mut c = adapting(1, 0, 0.5, 100);
        c.stations[0].retry_adaptation = None;
        c
    }] {
        let mut b = deaf_ap_from_140_ms(cfg);
        drain(&mut b, us(150_000));
        b.push(us(150_000), Port::station(1), Port::AP, pkt(0)).unwrap();
        drain(&mut b, us(600_000));
        assert_eq!(b.stats(Port::station(1)).data_ppdus, 7);
    }
}

#[test]
fn algorithm_3_gives_up_at_r_under_congestion() {
    // CL_th = 0.001. In [0, 100 ms) ten packets arrive at once to a 1-packet queue: one is
    // delivered (TD 242 µs), nine refused. Then EDR = 9 · 1224 B / 1 s = 88 128 bit/s, MC =
    // 9792 bit / 242 µs, CL = 88 128 · 242e-6 / 9792 = 0.002178 ≥ CL_th.
    let mut cfg = adapting(1, 7, 0.001, 100);
    cfg.sta_queue = QueueConfig { packets: 1, max_delay: None };
    let mut b = deaf_ap_from_140_ms(cfg);
    for seq in 0..10 {
        let _ = b.push(us(1000), Port::station(1), Port::AP, pkt(seq));
    }
    drain(&mut b, us(150_000));
    assert!((state(&b).cl - 88_128.0 * 242e-6 / 9792.0).abs() < 1e-12, "{}", state(&b).cl);
    b.push(us(150_000), Port::station(1), Port::AP, pkt(10)).unwrap();
    let dropped = drain(&mut b, us(600_000));
    assert_eq!(dropped, [(1, 10, DropReason::RetryLimit)]);
    assert_eq!(b.stats(Port::station(1)).data_ppdus, 1 + 7);
    let s = state(&b);
    assert_eq!(
        (s.extended_attempts, s.gave_up_congestion, s.gave_up_buffer, s.gave_up_extension),
        (0, 1, 0, 0)
    );
}

#[test]
fn algorithm_3_gives_up_at_r_with_a_long_buffer() {
    // BF_th = 2: the first of two packets reaches R with both queued and is given up; the
    // second then has the queue to itself and gets its R_ex = 3 more attempts.
    let mut b = deaf_ap_from_140_ms(adapting(1, 3, 0.5, 2));
    drain(&mut b, us(150_000));
    b.push(us(150_000), Port::station(1), Port::AP, pkt(0)).unwrap();
    b.push(us(150_000), Port::station(1), Port::AP, pkt(1)).unwrap();
    let dropped = drain(&mut b, us(600_000));
    assert_eq!(dropped, [(1, 0, DropReason::RetryLimit), (1, 1, DropReason::RetryLimit)]);
    assert_eq!(b.stats(Port::station(1)).data_ppdus, 7 + 10);
    let s = state(&b);
    assert_eq!(
        (s.extended_attempts, s.gave_up_buffer, s.gave_up_extension, s.gave_up_congestion),
        (3, 1, 1, 0)
    );
}

#[test]
fn the_contention_window_resets_before_the_first_extended_attempt() {
    // After a failed attempt the backoff is drawn at the ACK timeout and counts from SIFS +
    // AIFS later: the next attempt starts 43 + 9k µs after the failure, k ≤ CW. The 7th
    // attempt's CW is 1023 (15 doubled six times, capped); the 8th, the first beyond R, draws
    // from CWmin = 15 again, the 9th from 31, the 10th from 63, like a fresh MPDU.
    let mut gaps_7 = Vec::new();
    for seed in 1..=40 {
        let mut cfg = adapting(1, 3, 0.5, 100);
        let mut i =
            Interferer::periodic(Duration::from_secs(1), Duration::from_millis(500), vec![true, false]);
        i.offset = Duration::from_millis(140);
        cfg.interferers = vec![i];
        let mut b = bss(cfg, seed);
        drain(&mut b, us(150_000));
        b.push(us(150_000), Port::station(1), Port::AP, pkt(0)).unwrap();
        let (mut failed_at, mut gaps): (Vec<Instant>, Vec<i64>) = (Vec::new(), Vec::new());
        while let Some(t) = b.poll_timeout().filter(|&t| t <= us(600_000)) {
            let before = b.stats(Port::station(1));
            b.on_timeout(t);
            let after = b.stats(Port::station(1));
            if after.data_ppdus > before.data_ppdus && !failed_at.is_empty() {
                gaps.push((t - *failed_at.last().unwrap()).as_micros());
            }
            if after.exchanges_failed > before.exchanges_failed {
                failed_at.push(t);
            }
        }
        assert_eq!(gaps.len(), 9, "seed {seed}");
        for (attempt, cw) in [(8, 15), (9, 31), (10, 63)] {
            let gap = gaps[attempt - 2];
            assert!(
                gap >= 43 && gap <= 43 + 9 * cw && (gap - 43) % 9 == 0,
                "seed {seed}, attempt {attempt}: {gap}"
            );
        }
        gaps_7.push(gaps[5]);
    }
    // The 7th attempt's backoff, from [0, 1023], exceeded 63 slots in most runs.
    assert!(gaps_7.iter().filter(|&&g| g > 43 + 9 * 63).count() > 30, "{gaps_7:?}");
}

/// Station 1 sends 1224-B packets as a Poisson process of `rate` per second for `secs`, with
/// the seed-004 hidden terminal heard only by the AP. Returns (offered, dropped, the
/// adaptation's state, the MC of every complete window sampled at each τ from 1 s on).
fn poisson_uplink(
    extension: Option<u32>,
    interferer: bool,
    rate: f64,
    secs: i64,
    seed: u64,
) -> (u64, u64, Option<AdaptationState>, Vec<(Bitrate, Bitrate)>) {
    let mut cfg = adapting(1, extension.unwrap_or(0), 0.5, 50);
    if extension.is_none() {
        cfg.stations[0].retry_adaptation = None;
    }
    if interferer {
        cfg.interferers = vec![hidden_terminal(2)];
    }
    let mut b = bss(cfg, seed);
    let mut arrivals = rng_for(seed, "arrivals");
    let until = Instant::from_secs(secs);
    let (mut next, mut offered, mut dropped) = (Instant::ZERO, 0, 0);
    let mut samples = Vec::new();
    let mut sample_at = Instant::from_secs(1);
    let mut step =
        |b: &mut Bss<Pkt>, upto: Instant, dropped: &mut u64, samples: &mut Vec<(Bitrate, Bitrate)>| {
            while let Some(t) = b.poll_timeout().filter(|&t| t <= upto) {
                b.on_timeout(t);
                while b.poll_drop().is_some() {
                    *dropped += 1;
                }
                while b.poll_output(t).is_some() {}
                if t >= sample_at {
                    if let Some(s) = b.adaptation(Port::station(1)) {
                        samples.push((s.arrived / Duration::from_secs(1), s.mc));
                    }
                    sample_at += Duration::from_millis(100);
                }
            }
        };
    loop {
        next += Duration::from_secs_f64(-(1.0 - arrivals.random::<f64>()).ln() / rate);
        if next >= until {
            break;
        }
        step(&mut b, next, &mut dropped, &mut samples);
        let p = Pkt { flow: 0, seq: offered, size: DataSize::bytes(1224), dscp: 0, sent: next };
        b.push(next, Port::station(1), Port::AP, p).unwrap();
        offered += 1;
    }
    step(&mut b, until + Duration::from_secs(1), &mut dropped, &mut samples);
    (offered, dropped, b.adaptation(Port::station(1)), samples)
}

#[test]
fn a_longer_extension_drops_fewer_packets_to_a_hidden_terminal() {
    // §4.5, Fig. 13: with the hidden terminal and a light load (about 1 Mbit/s), R_ex = 3, 5
    // and 7 lose fewer packets at the MAC than R_ex = 0. The level stays far below CL_th, so
    // every MPDU at R gets its extension.
    let runs: Vec<_> = [0, 3, 5, 7].map(|x| poisson_uplink(Some(x), true, 100.0, 60, 1)).into();
    let drops: Vec<u64> = runs.iter().map(|r| r.1).collect();
    let offered = runs[0].0;
    println!("offered {offered}, drops for R_ex = 0, 3, 5, 7: {drops:?}");
    for r in &runs {
        let s = r.2.unwrap();
        println!("{s:?}");
        assert_eq!((s.gave_up_congestion, s.gave_up_buffer), (0, 0));
    }
    assert!(drops[0] as f64 > 0.02 * offered as f64, "{drops:?}");
    assert!(drops[1] < drops[0] && drops[2] < drops[1] && drops[3] < drops[2], "{drops:?}");
    // R_ex = 0 loses exactly what the plain retry limit loses: the adaptation changes nothing
    // else (same seed, same draws).
    assert_eq!(poisson_uplink(None, true, 100.0, 60, 1).1, drops[0]);
}

#[test]
fn under_heavy_load_the_adaptation_grants_almost_nothing() {
    // §4.6: eight saturated competing stations and station 1 offered 8 Mbit/s, more than its
    // share, with the hidden terminal. CL stays high, so MPDUs at R are given up as without
    // the adaptation.
    let run = |adapt: bool| {
        let mut cfg = adapting(9, 7, 0.5, 2000);
        if !adapt {
            cfg.stations[0].retry_adaptation = None;
        }
        cfg.interferers = vec![hidden_terminal(10)];
        let mut b = bss(cfg, 1);
        // The others are kept backlogged (64 packets each); station 1 gets a 1224-B packet
        // every 1.224 ms.
        let period = DataSize::bytes(1224) / Bitrate::mbps(8);
        let (mut next, end, mut seq) = (Instant::ZERO, Instant::from_secs(10), 0);
        let mut dropped = 0u64;
        let mut now = Instant::ZERO;
        while now < end {
            for i in 2..=9 {
                while b.queue_len(Port::station(i), AccessCategory::Be) < 64 {
                    b.push(now, Port::station(i), Port::AP, pkt(0)).unwrap();
                }
            }
            if now == next {
                let _ = b.push(now, Port::station(1), Port::AP, pkt(seq));
                seq += 1;
                next += period;
            }
            now = b.poll_timeout().map_or(next, |t| t.min(next));
            b.on_timeout(now);
            while let Some((port, _, reason)) = b.poll_drop() {
                if port == Port::station(1) && reason == DropReason::RetryLimit {
                    dropped += 1;
                }
            }
            while b.poll_output(now).is_some() {}
        }
        (b.stats(Port::station(1)), b.adaptation(Port::station(1)), dropped)
    };
    let (with, s, _) = run(true);
    let (without, _, _) = run(false);
    let s = s.unwrap();
    println!("with {with:?}\nwithout {without:?}\n{s:?}");
    let gave_up = s.gave_up_congestion + s.gave_up_buffer + s.gave_up_extension;
    assert!(s.cl > 0.5, "{s:?}");
    assert!(s.extended_attempts * 20 <= gave_up, "{s:?}");
    let (a, b) = (with.mpdus_retry_dropped as f64, without.mpdus_retry_dropped as f64);
    assert!((a - b).abs() <= 0.1 * b, "{a} vs {b}");
}

#[test]
fn theorem_1_bounds_the_capacity_estimate() {
    // Theorem 1 (§3.1.2), no competing traffic, equal packets, TD(R, L) > τ_b: with the
    // hidden terminal of utilisation ρ = τ_b / T_htt, Ar·C / (Ar + ρC) ≤ MC ≤ C (eq. (7)),
    // MC grows with Ar but more slowly (part (i)), and for Poisson arrivals eq. (8) gives MC.
    // C is the MC the same station measures without the hidden terminal.
    let rho = 10.75 / 33.0;
    let mean = |v: &[(Bitrate, Bitrate)]| {
        let n = v.len() as f64;
        (
            v.iter().map(|s| s.0.as_bps_f64()).sum::<f64>() / n,
            v.iter().map(|s| s.1.as_bps_f64()).sum::<f64>() / n,
        )
    };
    let mut last = (0.0f64, 0.0f64);
    for rate in [25.0, 100.0, 200.0, 400.0] {
        let (_, _, _, clear) = poisson_uplink(Some(0), false, rate, 60, 1);
        let (_, _, _, hidden) = poisson_uplink(Some(0), true, rate, 60, 1);
        let c = mean(&clear).1;
        let (ar, mc) = mean(&hidden);
        let lower = ar * c / (ar + rho * c);
        // Eq. (8) with λ packets/s of L = 1224 B.
        let (lambda, tau_b, l) = (rate, 10.75e-3, 1224.0 * 8.0);
        let x = lambda * tau_b;
        let eq8 = lambda * l / (lambda * l + rho * c * (x + (-x).exp() - 1.0) / x) * c;
        println!(
            "λ = {rate}: Ar {:.3} Mbit/s, C {:.2}, MC {:.3} (eq. (7) ≥ {:.3}, eq. (8) {:.3})",
            ar / 1e6,
            c / 1e6,
            mc / 1e6,
            lower / 1e6,
            eq8 / 1e6
        );
        assert!(mc <= c, "λ = {rate}: {mc} ≤ {c}");
        if rate <= 200.0 {
            assert!(lower <= mc, "λ = {rate}: {lower} ≤ {mc}");
        } else {
            // At 3.9 Mbit/s the lower bound fails by about 4 %: the proof's eq. (10) takes a
            // caught MPDU's delay to be at most τ_b and at most one per burst, but here its
            // retransmissions overshoot the burst's end by the rest of a backoff drawn from up
            // to 1023 slots, and one given up inside the burst lets the next MPDU collide too.
            assert!(0.9 * lower <= mc, "λ = {rate}: {lower} vs {mc}");
        }
        // Eq. (8) idealises a caught MPDU's delay as the rest of the burst; the same overshoot
        // puts the measured MC 15-25 % below it.
        assert!((0.7 * eq8..=eq8).contains(&mc), "λ = {rate}: {mc} vs eq. (8) {eq8}");
        if last.0 > 0.0 {
            assert!(mc > last.1 && mc / last.1 < ar / last.0, "λ = {rate}: MC {mc} after {last:?}");
        }
        last = (ar, mc);
    }
}
