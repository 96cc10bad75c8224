//! The AP's share of the channel (MAC fairness is per contending node, Park et al. 2006):
//! with N saturated uplink stations and a saturated AP, all with the same EDCA parameters, each
//! of the N + 1 contenders wins about the same number of transmission opportunities, so the AP,
//! however many downlink flows it carries, gets 1/(N + 1) of the successful exchanges. Checked
//! within 5 % for N = 1, 2, 5 and 10.
//!
//! A node's share over one run wanders more than a Poisson count would (a station that just
//! collided waits out a doubled window, and these waits are long), so the share is pooled over
//! four independent runs of 20 s each, about 200 000 exchanges per N. Frames go without
//! aggregation, which makes exchanges short and many.

mod wifi_support;

use rtcbench_net::radio::wifi::phy::PhyMode;
use rtcbench_net::radio::wifi::{ApQueueConfig, BssConfig, Port, StationConfig};
use rtcbench_units::{Duration, Instant};
use wifi_support::{bss, run_saturated, Flow};

const SEEDS: u64 = 4;
const RUN: Duration = Duration::from_secs(20);

/// (the AP's successful exchanges, everyone's, its share of the packets delivered).
fn share(n: u16, seed: u64) -> (u64, u64, f64) {
    let mut cfg = BssConfig::new(vec![StationConfig::fixed(PhyMode::ht(7)); usize::from(n)]);
    cfg.aggregation = None;
    cfg.ap_queue = ApQueueConfig::PerStation { packets: 1000, max_delay: None };
    let mut b = bss(cfg, seed);
    let mut flows: Vec<Flow> = (1..=n).map(|i| Flow::new(Port::station(i), Port::AP, 1500)).collect();
    flows.extend((1..=n).map(|i| Flow::new(Port::AP, Port::station(i), 1500)));
    let results = run_saturated(&mut b, &flows, Instant::ZERO, Instant::ZERO + RUN);
    let ap = b.stats(Port::AP).exchanges_ok;
    let all: u64 = (0..=n).map(|p| b.stats(Port(p)).exchanges_ok).sum();
    let down: u64 = results[usize::from(n)..].iter().map(|r| r.delivered).sum();
    let delivered: u64 = results.iter().map(|r| r.delivered).sum();
    (ap, all, down as f64 / delivered as f64)
}

#[test]
fn the_ap_gets_one_share_among_n_plus_one_contenders() {
    for n in [1u16, 2, 5, 10] {
        let runs: Vec<(u64, u64, f64)> = (1..=SEEDS).map(|seed| share(n, seed)).collect();
        let ap: u64 = runs.iter().map(|r| r.0).sum();
        let all: u64 = runs.iter().map(|r| r.1).sum();
        let got = ap as f64 / all as f64;
        let fair = 1.0 / f64::from(n + 1);
        let per_run: Vec<String> = runs.iter().map(|r| format!("{:.4}", r.0 as f64 / r.1 as f64)).collect();
        println!(
            "N = {n:2}: AP share {got:.4} vs 1/(N+1) = {fair:.4} ({:+.1} %), runs {per_run:?}",
            100.0 * (got / fair - 1.0)
        );
        assert!((got / fair - 1.0).abs() <= 0.05, "N = {n}: {got} vs {fair}");
        // The AP's share of the packets is its share of exchanges (one MPDU each), so all its
        // downlink flows together get what one uplink station gets.
        for (ap, all, packets) in runs {
            assert!((packets - ap as f64 / all as f64).abs() < 0.002);
        }
    }
}
