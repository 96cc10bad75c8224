//! Uplink access: a UE whose buffer was empty asks with a scheduling request at its next SR
//! opportunity (every 10 ms here), the eNB answers 4 TTIs later with a small grant (3 PRB), and
//! the PUSCH follows 4 TTIs after the grant (TS 36.213 §8.0): a sporadic packet waits 9 to 19
//! ms. A packet larger than that first grant needs one more BSR round (+5 ms). Continuous
//! traffic keeps a BSR in every PUSCH and needs no new request. ns-3's ideal access (the eNB
//! always knows the buffer) is the reference: 4 to 5 ms.

mod lte_support;

use lte_support::{cell, drive_with, mean, quantile, Run, Source, Traffic};
use rtcbench_net::radio::lte::{CellConfig, Direction, HarqConfig, Port, UeConfig, UlAccess};
use rtcbench_units::{Duration, Instant};

fn sr_cell(harq: HarqConfig) -> CellConfig {
    let mut cfg = CellConfig::new(vec![UeConfig::fixed_cqi(15)]);
    cfg.ul_access = UlAccess::scheduling_request();
    cfg.harq = harq;
    cfg
}

fn uplink(cfg: CellConfig, bytes: u64, every: Duration, secs: i64) -> (Run, u64, Vec<(f64, u64)>) {
    let mut c = cell(cfg, 2);
    let stop = Duration::from_secs(secs);
    let src = Source::new(
        1,
        Direction::Uplink,
        Traffic::Cbr { bytes, interval: every, start: Duration::from_micros(300), stop },
    );
    // (s, scheduling requests so far), every 100 ms.
    let mut srs = Vec::new();
    let run =
        drive_with(&mut c, &[src], Instant::from_secs(secs) + Duration::from_millis(100), &[], |c, now| {
            if now.as_micros() % 100_000 == 0 {
                srs.push((now.as_secs_f64(), c.stats(Port::ue(1)).ul.scheduling_requests));
            }
        });
    let requests = c.stats(Port::ue(1)).ul.scheduling_requests;
    (run, requests, srs)
}

#[test]
fn a_sporadic_packet_waits_for_its_sr_opportunity() {
    // 100 B every 97 ms: arrivals fall everywhere in the SR period. SR in TTI s (the first
    // opportunity after the arrival), grant in s + 4, PUSCH in s + 8, at the eNB at s + 9 ms.
    let (run, requests, _) = uplink(sr_cell(HarqConfig::error_free()), 100, Duration::from_millis(97), 30);
    let d = run.delays_ms(1, Direction::Uplink);
    println!(
        "100 B, SR: {} packets, {requests} SRs, delay {:.1} .. {:.1} ms, mean {:.2}",
        d.len(),
        quantile(&d, 0.0),
        quantile(&d, 1.0),
        mean(&d)
    );
    assert_eq!(d.len() as u64, run.pushed);
    assert_eq!(requests, run.pushed, "one request per packet");
    assert!(d.iter().all(|&x| x > 9.0 && x <= 19.0));
    assert!((mean(&d) - 14.0).abs() < 0.7, "uniform over the period: {}", mean(&d));
    // A larger packet: the 3-PRB grant (274 B of payload at MCS 28) carries its head and a BSR;
    // the rest goes on the grant that BSR brings, 5 TTIs later.
    let (run, _, _) = uplink(sr_cell(HarqConfig::error_free()), 1000, Duration::from_millis(97), 30);
    let d = run.delays_ms(1, Direction::Uplink);
    println!(
        "1000 B, SR: delay {:.1} .. {:.1} ms, mean {:.2}",
        quantile(&d, 0.0),
        quantile(&d, 1.0),
        mean(&d)
    );
    assert!(d.iter().all(|&x| x > 14.0 && x <= 24.0));
    // With HARQ errors 10 % of them take 8 ms more.
    let (run, _, _) = uplink(sr_cell(HarqConfig::standard()), 100, Duration::from_millis(97), 30);
    let d = run.delays_ms(1, Direction::Uplink);
    let late = d.iter().filter(|&&x| x > 19.0).count() as f64 / d.len() as f64;
    println!("100 B, SR, BLER 10 %: {late:.3} beyond 19 ms, max {:.1}", quantile(&d, 1.0));
    assert!(late > 0.04 && late < 0.17 && quantile(&d, 1.0) <= 19.0 + 16.0);
    // ns-3's ideal access: granted in the next TTI for the PUSCH 4 TTIs later.
    let mut ideal = CellConfig::new(vec![UeConfig::fixed_cqi(15)]);
    ideal.harq = HarqConfig::error_free();
    let (run, requests, _) = uplink(ideal, 100, Duration::from_millis(97), 30);
    let d = run.delays_ms(1, Direction::Uplink);
    println!("100 B, ideal: delay {:.1} .. {:.1} ms", quantile(&d, 0.0), quantile(&d, 1.0));
    assert_eq!(requests, 0);
    assert!(d.iter().all(|&x| x > 4.0 && x <= 6.0));
}

#[test]
fn continuous_traffic_needs_no_new_request() {
    // 1000 B every ms (8 Mbit/s, under half the 18.3 Mbit/s uplink): after the first request,
    // every PUSCH carries a BSR and grants keep coming, each 4 TTIs after the BSR it answers.
    let (run, requests, srs) = uplink(sr_cell(HarqConfig::error_free()), 1000, Duration::from_millis(1), 5);
    let d = run.delays_ms(1, Direction::Uplink);
    let steady = &d[200..];
    println!(
        "1000 B/ms, SR: {requests} SRs, steady delay {:.1} .. {:.1} ms, mean {:.2}",
        quantile(steady, 0.0),
        quantile(steady, 1.0),
        mean(steady)
    );
    assert_eq!(
        srs.iter().find(|&&(t, _)| t >= 0.1).map(|&(_, n)| n),
        Some(requests),
        "no request after 100 ms"
    );
    assert!(requests <= 2);
    assert!(quantile(steady, 1.0) < 9.0, "no SR wait (≥ 9 ms) in steady state");
    assert!(run.in_order() && run.dropped.is_empty());
}
