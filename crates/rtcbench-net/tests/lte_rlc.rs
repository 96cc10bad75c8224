//! RLC buffers: one per UE and direction, limited in bytes (tail drop) and optionally by PDCP's
//! discard timer. A sender offering twice the cell's capacity to one UE fills that UE's buffer
//! until its queueing delay is the limit over the drain rate, and is refused beyond; another
//! UE's light traffic keeps its low delay, since only the scheduler couples the buffers (the
//! isolation Guerrero Viveros 2019 (seed 000) saw on a commercial eNB: TCP on another UE left
//! the media flow alone, TCP on the same UE did not).

mod lte_support;

use lte_support::{cell, drive_with, quantile, Source, Traffic};
use rtcbench_net::radio::lte::{CellConfig, Direction, Port, UeConfig};
use rtcbench_net::DropReason;
use rtcbench_units::{DataSize, Duration, Instant};

const SECS: i64 = 4;

fn flood_and_light(
    cfg: CellConfig,
) -> (lte_support::Run, rtcbench_net::radio::lte::Cell<lte_support::Pkt>, Vec<(f64, u64, f64)>) {
    let mut c = cell(cfg, 5);
    let stop = Duration::from_secs(SECS);
    let sources = [
        // 1500 B every 340 µs: 4.4 MB/s, twice the 2.196 MB/s of the whole 5-MHz cell.
        Source::new(
            1,
            Direction::Downlink,
            Traffic::Cbr { bytes: 1500, interval: Duration::from_micros(340), start: Duration::ZERO, stop },
        ),
        // 200 B every 20 ms (80 kbit/s).
        Source::new(
            2,
            Direction::Downlink,
            Traffic::Cbr {
                bytes: 200,
                interval: Duration::from_millis(20),
                start: Duration::from_micros(300),
                stop,
            },
        ),
    ];
    // (s, queue bytes, head sojourn ms) of UE 1 every 10 ms.
    let mut samples = Vec::new();
    let mut next = Instant::ZERO;
    let run = drive_with(&mut c, &sources, Instant::from_secs(SECS), &[], |c, now| {
        if now >= next {
            let q = c.queue_bytes(Port::ue(1), Direction::Downlink).as_bytes();
            let s = c.head_sojourn(now, Port::ue(1), Direction::Downlink).map_or(0.0, |d| d.as_millis_f64());
            samples.push((now.as_secs_f64(), q, s));
            next = now + Duration::from_millis(10);
        }
    });
    (run, c, samples)
}

#[test]
fn a_flooded_buffer_fills_to_its_limit_while_another_ue_keeps_low_delay() {
    let mut cfg = CellConfig::new(vec![UeConfig::fixed_cqi(15); 2]);
    cfg.rlc.buffer = DataSize::bytes(1_000_000);
    let (run, c, samples) = flood_and_light(cfg);
    let ue1 = c.stats(Port::ue(1)).dl;
    // The drain rate: what UE 1 got through, over the run.
    let drain = ue1.delivered_bytes.as_bytes() as f64 / SECS as f64;
    let d1 = run.delays_ms(1, Direction::Downlink);
    let expected = 1_000_000.0 / drain * 1000.0;
    let (max1, p50_late) = (quantile(&d1, 1.0), quantile(&d1[d1.len() / 2..], 0.5));
    println!("UE 1: drain {drain:.0} B/s, max delay {max1:.1} ms (limit/drain {expected:.1}), late median {p50_late:.1}");
    // Once full, a packet finds 1 MB ahead of it: its wait is the limit over the drain rate
    // (1.96 MB/s: the band less the 10 % of TTIs that retransmit), and HARQ adds up to 3 round
    // trips on top.
    assert!((p50_late / expected - 1.0).abs() < 0.02, "the queue stays full once filled: {p50_late}");
    assert!(max1 <= expected * 1.02 + 25.0, "{max1} vs {expected}");
    // Refused beyond the limit: about what was offered beyond the drain.
    let refused = run.refused.iter().filter(|p| p.ue == 1).count() as u64;
    assert_eq!(refused, ue1.queue_full_drops);
    let offered = SECS as f64 / 340e-6 * 1500.0;
    let expected_refused = (offered - drain * SECS as f64 - 1_000_000.0) / 1500.0;
    assert!((refused as f64 / expected_refused - 1.0).abs() < 0.05, "{refused} vs {expected_refused}");
    assert!(samples.iter().all(|&(_, q, _)| q <= 1_000_000));
    let full = samples.iter().filter(|&&(t, _, _)| t > 1.0).map(|&(_, q, _)| q).min().unwrap();
    assert!(full > 990_000, "the buffer stays at its limit: {full}");
    let sojourn = samples.iter().map(|&(_, _, s)| s).fold(0.0, f64::max);
    assert!((sojourn / expected - 1.0).abs() < 0.03, "head sojourn {sojourn}");
    // UE 2: only the scheduler couples it to UE 1, and proportional fair serves it at once.
    let d2 = run.delays_ms(2, Direction::Downlink);
    println!(
        "UE 2: {} packets, median {} ms, p99 {} ms, max {} ms",
        d2.len(),
        quantile(&d2, 0.5),
        quantile(&d2, 0.99),
        quantile(&d2, 1.0)
    );
    assert!(quantile(&d2, 0.5) <= 2.0 && quantile(&d2, 0.99) <= 11.0 && quantile(&d2, 1.0) <= 27.0);
    assert!(run.dropped.iter().all(|(_, p, _)| p.ue == 1) && run.refused.iter().all(|p| p.ue == 1));
    assert!(run.in_order());
}

#[test]
fn pdcp_discard_bounds_the_delay_of_what_gets_through() {
    let mut cfg = CellConfig::new(vec![UeConfig::fixed_cqi(15); 2]);
    cfg.rlc.discard_timer = Some(Duration::from_millis(100));
    let (run, c, _) = flood_and_light(cfg);
    let ue1 = c.stats(Port::ue(1)).dl;
    let d1 = run.delays_ms(1, Direction::Downlink);
    let lifetime = run.dropped.iter().filter(|(_, _, r)| *r == DropReason::Lifetime).count() as u64;
    println!("UE 1: {} delivered, {lifetime} discarded, max delay {} ms", d1.len(), quantile(&d1, 1.0));
    assert_eq!(lifetime, ue1.discard_drops);
    assert!(lifetime > 1000 && ue1.queue_full_drops == 0);
    assert!(run.dropped.iter().all(|(p, _, _)| *p == Port::ENB));
    // A packet leaves the buffer at most 100 ms old; its last segment and HARQ add a few TTIs.
    assert!(quantile(&d1, 1.0) <= 100.0 + 27.0);
    assert!(quantile(&d1[d1.len() / 2..], 0.5) > 95.0);
    assert!(run.in_order());
}

#[test]
fn the_ue_buffer_can_be_smaller_than_the_enbs() {
    // A UE's modem holds 100 kB while the eNB holds 1 MB per UE: the same push fills each to its
    // own limit.
    let mut cfg = CellConfig::new(vec![UeConfig::fixed_cqi(15)]);
    cfg.rlc.buffer = DataSize::bytes(1_000_000);
    cfg.rlc.ue_buffer = Some(DataSize::bytes(100_000));
    let mut c = cell(cfg, 1);
    let (mut up, mut down) = (0u64, 0u64);
    for i in 0..2000u64 {
        let pkt =
            |dir| lte_support::Pkt { ue: 1, dir, seq: i, size: DataSize::bytes(1000), sent: Instant::ZERO };
        if c.push(Instant::ZERO, Port::ue(1), Port::ENB, pkt(Direction::Uplink)).is_ok() {
            up += 1;
        }
        if c.push(Instant::ZERO, Port::ENB, Port::ue(1), pkt(Direction::Downlink)).is_ok() {
            down += 1;
        }
    }
    // 1000 B and a 2-B PDCP header each.
    assert_eq!((up, down), (100_000 / 1002, 1_000_000 / 1002));
    assert_eq!(c.queue_bytes(Port::ue(1), Direction::Uplink).as_bytes(), up * 1002);
    assert_eq!(c.stats(Port::ue(1)).ul.queue_full_drops, 2000 - up);
}
