//! HARQ: a transport block that fails is sent again 8 TTIs later, up to its last allowed
//! transmission; the receiver's RLC delivers packets in order, holding back those behind a
//! block still in HARQ; a block that fails its last transmission loses its packets.

mod lte_support;

use lte_support::{cell, drive, mean, quantile, Source, Traffic};
use rtcbench_net::radio::lte::{CellConfig, Direction, HarqConfig, Port, UeConfig};
use rtcbench_net::DropReason;
use rtcbench_units::{Duration, Instant};

fn one_ue(bler: Vec<f64>) -> CellConfig {
    let mut cfg = CellConfig::new(vec![UeConfig::fixed_cqi(15)]);
    cfg.harq = HarqConfig { bler };
    cfg
}

/// One packet of `bytes` every `every_ms`, from 0.5 ms to `secs` s.
fn cbr(dir: Direction, bytes: u64, every_ms: i64, secs: i64) -> Source {
    let (interval, start, stop) =
        (Duration::from_millis(every_ms), Duration::from_micros(500), Duration::from_secs(secs));
    Source::new(1, dir, Traffic::Cbr { bytes, interval, start, stop })
}

#[test]
fn exact_instants_of_a_first_transmission_and_a_retransmission() {
    // Pushed at 0.5 ms, sent in TTI 1, at the UE when the TTI ends: 2 ms. A first transmission
    // that always fails puts it in TTI 9 (8 TTIs later), at the UE at 10 ms.
    for (bler, at) in [(vec![0.0], 2), (vec![1.0, 0.0], 10), (vec![1.0, 1.0, 0.0], 18)] {
        let mut c = cell(one_ue(bler.clone()), 1);
        let run = drive(&mut c, &[cbr(Direction::Downlink, 200, 1000, 1)], Instant::from_millis(100));
        assert_eq!(run.delivered.len(), 1, "{bler:?}");
        assert_eq!(run.delivered[0].0, Instant::from_millis(at), "{bler:?}");
        assert_eq!(run.delivered[0].1, Port::ue(1));
        let s = c.stats(Port::ue(1)).dl;
        assert_eq!((s.new_tbs, s.harq_retransmissions, s.harq_failures), (1, bler.len() as u64 - 1, 0));
    }
    // The uplink: granted in TTI 1 for the PUSCH of TTI 5 (ideal access), at the eNB at 6 ms.
    let mut c = cell(one_ue(vec![1.0, 0.0]), 1);
    let run = drive(&mut c, &[cbr(Direction::Uplink, 200, 1000, 1)], Instant::from_millis(100));
    assert_eq!(run.delivered[0].0, Instant::from_millis(14));
    assert_eq!(run.delivered[0].1, Port::ENB);
}

#[test]
fn ten_percent_of_blocks_come_8_ms_late_and_order_holds() {
    // One 200-byte packet every 5 ms, each in a transport block of its own: with the default
    // BLER (10 %, then 1 %, 0.1 %, 0.1 %) about 10 % come 8 ms late and 0.1 % 16 ms late.
    for dir in [Direction::Downlink, Direction::Uplink] {
        let mut c = cell(one_ue(HarqConfig::standard().bler), 7);
        let run = drive(&mut c, &[cbr(dir, 200, 5, 40)], Instant::from_secs(41));
        let d = run.delays_ms(1, dir);
        assert_eq!(d.len() as u64, run.pushed);
        let base = quantile(&d, 0.5);
        let late = d.iter().filter(|&&x| x > base + 7.0).count() as f64 / d.len() as f64;
        let very_late = d.iter().filter(|&&x| x > base + 15.0).count() as f64 / d.len() as f64;
        println!(
            "{dir:?}: {} packets, median {base} ms, {late:.4} ≥ 8 ms late, {very_late:.4} ≥ 16 ms",
            d.len()
        );
        let held = d.iter().filter(|&&x| x > base && x < base + 7.0).count() as f64 / d.len() as f64;
        println!("{dir:?}: {held:.4} held back by RLC behind a late packet");
        // 8000 blocks: the binomial standard deviation of a 10 % share is 0.34 %.
        assert!((late - 0.10).abs() < 0.012, "{dir:?}: {late}");
        assert!(very_late < 0.004, "{dir:?}: {very_late}");
        // RLC in-order delivery: the packet after a late one, sent 5 TTIs later and through
        // the first time (9 % of packets), waits 3 TTIs for it.
        let held = d.iter().filter(|&&x| (x - (base + 3.0)).abs() < 1e-9).count() as f64 / d.len() as f64;
        assert!((held - 0.09).abs() < 0.012, "{dir:?}: {held} held back");
        assert!(quantile(&d, 1.0) <= base + 24.0 + 1e-9, "at most 4 transmissions");
        assert!(run.in_order() && run.dropped.is_empty());
        let s = c.stats(Port::ue(1));
        let s = if dir == Direction::Downlink { s.dl } else { s.ul };
        assert_eq!(s.harq_failures, 0);
    }
}

#[test]
fn in_order_delivery_holds_back_packets_behind_a_retransmission() {
    // A saturated downlink of 1500-byte packets spanning several transport blocks: a block in
    // HARQ holds back every packet after it, so delivery order is push order, the packets
    // behind it leave in a burst when it gets through, and some packets whose own blocks went
    // through first still come ≥ 8 ms late.
    let mut c = cell(one_ue(HarqConfig::standard().bler), 3);
    let run = drive(
        &mut c,
        &[Source::new(1, Direction::Downlink, Traffic::Saturate { bytes: 1500, backlog: 30_000 })],
        Instant::from_secs(5),
    );
    assert!(run.in_order());
    let s = c.stats(Port::ue(1)).dl;
    let retx_share = s.harq_retransmissions as f64 / s.new_tbs as f64;
    assert!((retx_share - 0.101).abs() < 0.01, "{retx_share}");
    // Most TTIs deliver ~1.5 packets; after a retransmission 8 TTIs' worth leave together.
    let mut per_instant = std::collections::BTreeMap::new();
    for (t, _, _) in &run.delivered {
        *per_instant.entry(*t).or_insert(0u32) += 1;
    }
    let bursts = per_instant.values().filter(|&&n| n >= 8).count();
    assert!(bursts as f64 > 0.5 * s.harq_retransmissions as f64, "{bursts} bursts");
}

#[test]
fn blocks_lost_after_the_last_transmission_lose_their_packets() {
    // Two transmissions, each failing half the time: a quarter of the blocks are lost. Every
    // packet is delivered or dropped as HarqFailure, and order still holds.
    for dir in [Direction::Downlink, Direction::Uplink] {
        let mut c = cell(one_ue(vec![0.5, 0.5]), 11);
        let run = drive(&mut c, &[cbr(dir, 200, 4, 20)], Instant::from_secs(21));
        let s = c.stats(Port::ue(1));
        let s = if dir == Direction::Downlink { s.dl } else { s.ul };
        let lost = s.harq_failures as f64 / s.new_tbs as f64;
        println!("{dir:?}: {} of {} blocks lost", s.harq_failures, s.new_tbs);
        assert!((lost - 0.25).abs() < 0.03, "{lost}");
        assert!(run.dropped.iter().all(|(_, _, r)| *r == DropReason::HarqFailure));
        assert_eq!(run.dropped.len() as u64, s.harq_failure_drops);
        if dir == Direction::Downlink {
            assert_eq!(s.harq_failure_drops, s.harq_failures, "one packet per block");
        } else {
            // An uplink grant sized 4 TTIs earlier (3 PRB, 277 B) also carries the head of the
            // next packet, so a lost block can take two.
            assert!(s.harq_failure_drops >= s.harq_failures);
        }
        assert_eq!(run.delivered.len() + run.dropped.len(), run.pushed as usize);
        let holder = if dir == Direction::Downlink { Port::ENB } else { Port::ue(1) };
        assert!(run.dropped.iter().all(|(p, _, _)| *p == holder));
        assert!(run.in_order());
        // With 2 transmissions no delivered packet waits for a third (16 ms after its first):
        // the worst is a retransmission plus a few TTIs queued behind another UE's... here its
        // own earlier block's retransmission.
        let d = run.delays_ms(1, dir);
        let base = quantile(&d, 0.0);
        println!("{dir:?}: delays {base} .. {} ms, mean {:.2}", quantile(&d, 1.0), mean(&d));
        assert!(quantile(&d, 1.0) < base + 16.0);
    }
}
