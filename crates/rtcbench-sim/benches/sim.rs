//! Simulator speed: the event heap alone, whole runs of `rfc8867-5.1`, and a Wi-Fi run of ten
//! nodes (`seed004-testbed`).
//!
//! `cargo bench -p rtcbench-sim` (about 30 s). Throughput is reported in "elements" per second:
//! heap events for the scheduler, simulated seconds for whole runs, so a run's `thrpt` reads
//! directly as simulated seconds per wall-clock second (× real time).

use std::hint::black_box;
use std::time::Duration as WallDuration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand::{RngExt, SeedableRng};
use rtcbench_cc::ControllerKind;
use rtcbench_scenario::{builtin, load};
use rtcbench_sim::rng::SimRng;
use rtcbench_sim::scheduler::Scheduler;
use rtcbench_sim::simulate;
use rtcbench_units::Instant;

const HEAP_EVENTS: usize = 100_000;

/// Push 100k events at random instants within 100 s, then pop them all.
fn scheduler(c: &mut Criterion) {
    let mut rng = SimRng::seed_from_u64(1);
    let times: Vec<Instant> =
        (0..HEAP_EVENTS).map(|_| Instant::from_micros(rng.random_range(0..100_000_000))).collect();
    let mut g = c.benchmark_group("scheduler");
    g.throughput(Throughput::Elements(HEAP_EVENTS as u64));
    g.bench_function("push_pop_100k", |b| {
        b.iter(|| {
            let mut s = Scheduler::new();
            for (k, &t) in times.iter().enumerate() {
                s.schedule(t, k as u32);
            }
            let mut acc = 0u64;
            while let Some((t, e)) = s.pop() {
                acc = acc.wrapping_add(t.as_micros() as u64 ^ u64::from(e));
            }
            black_box(acc)
        });
    });
    g.finish();
}

/// A whole 100 s run of `rfc8867-5.1` (first variant: 50 ms each way) per controller.
fn rfc8867_5_1(c: &mut Criterion) {
    let (text, origin) = builtin::find("rfc8867-5.1").expect("built-in scenario");
    let scenario = load(text, &origin, &[]).expect("scenario loads").remove(0);
    let simulated_s = scenario.spec.duration.get().as_secs_f64();
    let mut g = c.benchmark_group("rfc8867-5.1");
    // Elements = simulated seconds: thrpt is simulated seconds per wall second.
    g.throughput(Throughput::Elements(simulated_s as u64));
    for cc in ControllerKind::ALL {
        g.bench_function(cc.name(), |b| {
            b.iter(|| black_box(simulate(&scenario, cc, 1).expect("run").events));
        });
    }
    g.finish();
}

/// Wi-Fi runs with `gcc`, against the budget of 500× real time or faster (issue 16): ten
/// stations at the defaults (two calls, eight CBR uplinks; `benches/scenarios/wifi-10-stations.toml`,
/// 120 s), and `seed004-testbed` (400 s: a call, eight competing stations at MCS 0-7, a hidden
/// interferer, R_ex = 7, FEC off).
fn wifi(c: &mut Criterion) {
    let ten = include_str!("../../../benches/scenarios/wifi-10-stations.toml");
    let cases = [
        ("10-stations", load(ten, "benches/scenarios/wifi-10-stations.toml", &[]).expect("loads").remove(0)),
        {
            let (text, origin) = builtin::find("seed004-testbed").expect("built-in scenario");
            let sets = ["rex=7".to_string(), "fec=false".to_string()];
            ("seed004-testbed", load(text, &origin, &sets).expect("loads").remove(0))
        },
    ];
    let mut g = c.benchmark_group("wifi");
    for (name, scenario) in &cases {
        g.throughput(Throughput::Elements(scenario.spec.duration.get().as_secs_f64() as u64));
        g.bench_function(*name, |b| {
            b.iter(|| black_box(simulate(scenario, ControllerKind::Gcc, 1).expect("run").events));
        });
    }
    g.finish();
}

/// An LTE run with `gcc`, against the budget of 500× real time or faster (issue 17): ten UEs of
/// a 10-MHz cell, five calls up and five down, fading at 3 km/h
/// (`benches/scenarios/lte-10-ues.toml`, 120 s).
fn lte(c: &mut Criterion) {
    let text = include_str!("../../../benches/scenarios/lte-10-ues.toml");
    let scenario = load(text, "benches/scenarios/lte-10-ues.toml", &[]).expect("loads").remove(0);
    let mut g = c.benchmark_group("lte");
    g.throughput(Throughput::Elements(scenario.spec.duration.get().as_secs_f64() as u64));
    g.bench_function("10-ues", |b| {
        b.iter(|| black_box(simulate(&scenario, ControllerKind::Gcc, 1).expect("run").events));
    });
    g.finish();
}

/// The L4S case of issue 60, against its budget of 2000× real time: `scream2` (L4S mode) beside
/// two TCP Prague flows over a 10 Mbit/s DualPI2 bottleneck (`benches/scenarios/l4s-scream2-2prague.toml`,
/// 100 s).
fn l4s(c: &mut Criterion) {
    let text = include_str!("../../../benches/scenarios/l4s-scream2-2prague.toml");
    let scenario = load(text, "benches/scenarios/l4s-scream2-2prague.toml", &[]).expect("loads").remove(0);
    let mut g = c.benchmark_group("l4s");
    g.throughput(Throughput::Elements(scenario.spec.duration.get().as_secs_f64() as u64));
    g.bench_function("scream2-2prague", |b| {
        b.iter(|| black_box(simulate(&scenario, ControllerKind::Scream2, 1).expect("run").events));
    });
    g.finish();
}

criterion_group! {
    name = benches;
    // Few, short samples: each run takes tens of milliseconds and the whole suite should stay
    // well under a minute on two cores.
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(WallDuration::from_secs(1))
        .measurement_time(WallDuration::from_secs(3));
    targets = scheduler, rfc8867_5_1, wifi, lte, l4s
}
criterion_main!(benches);
