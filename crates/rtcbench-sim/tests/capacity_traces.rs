//! Links driven by capacity traces, end to end: a saturating CBR flow (1500-byte packets, twice
//! the trace's rate, a drop-tail buffer that stays full) gets exactly what the trace offers.
//!
//! mahimahi: N delivery opportunities per second carry N × 1504 × 8 bit/s once the queue never
//! empties (mahimahi's `PACKET_SIZE`; packets span opportunities, so no byte of an opportunity
//! is wasted while packets wait). OpenNetLab and CSV: the rate of each step.

use std::path::PathBuf;

use rtcbench_cc::ControllerKind;
use rtcbench_scenario::load;
use rtcbench_sim::{simulate, RunOutput};

const RECEIVED: u8 = 1;
const SEC: i64 = 1_000_000;
const MS: i64 = 1_000;

/// A scenario file in a fresh folder beside its trace `name` with `text`: one CBR flow A → B
/// at `rate` over a forward link given by the trace, for `duration`.
fn run_with_trace(test: &str, name: &str, text: &str, rate: &str, duration: &str) -> RunOutput {
    let dir = std::env::temp_dir().join(format!("rtcbench-sim-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), text).unwrap();
    let scenario = format!(
        r#"
id = "{test}"
duration = "{duration}"

[[links]]
name = "forward"
from = "A"
to = "B"
delay = "20ms"
capacity_trace = {{ file = "{name}" }}
queue = {{ kind = "droptail", size = "60KB" }}

[[links]]
name = "backward"
from = "B"
to = "A"

[[cbr]]
from = "A"
to = "B"
rate = "{rate}"
packet_size = "1500B"
"#
    );
    let origin: PathBuf = dir.join("scenario.toml");
    let mut variants = load(&scenario, &origin.display().to_string(), &[]).unwrap_or_else(|e| panic!("{e}"));
    simulate(&variants.remove(0), ControllerKind::Fixed, 1).unwrap_or_else(|e| panic!("{e}"))
}

/// Bits received in [from, to) (µs), as a rate in bit/s.
fn received_rate(out: &RunOutput, from: i64, to: i64) -> f64 {
    let p = &out.trace.packets;
    let bytes: i64 = (0..p.len())
        .filter(|&i| p.event[i] == RECEIVED && p.t_us[i] >= from && p.t_us[i] < to)
        .map(|i| i64::from(p.size[i]))
        .sum();
    bytes as f64 * 8.0 / ((to - from) as f64 / 1e6)
}

fn assert_within(measured: f64, expected: f64, tolerance: f64, what: &str) {
    let error = (measured - expected).abs() / expected;
    assert!(
        error <= tolerance,
        "{what}: {measured:.0} bit/s, expected {expected:.0} (off by {:.2} %)",
        error * 100.0
    );
}

/// A mahimahi trace of `per_period` opportunities spread over `period_ms`.
fn mahimahi(per_period: u64, period_ms: u64) -> String {
    (1..=per_period).map(|k| format!("{}\n", k * period_ms / per_period)).collect()
}

#[test]
fn a_saturating_flow_gets_n_times_1504_bytes_per_second() {
    for (n, period_ms) in [(250, 1000), (83, 1000), (1000, 1000), (3000, 1000)] {
        // 3000 per second: three opportunities on each millisecond.
        let trace = mahimahi(n, period_ms);
        let expected = n as f64 * 1504.0 * 8.0 * 1000.0 / period_ms as f64;
        let rate = format!("{}kbps", (2.0 * expected / 1000.0).round());
        let out = run_with_trace(&format!("saturate-{n}"), "n.mahimahi", &trace, &rate, "20s");
        // From 1 s: the 20 ms delay and the first packets are behind.
        assert_within(received_rate(&out, SEC, 20 * SEC), expected, 0.01, &format!("{n} opportunities/s"));
        let forward = &out.meta.links[0];
        assert_eq!(forward.capacity_trace, Some("mahimahi".to_string()));
    }
}

#[test]
fn a_mahimahi_trace_loops_shifted_by_its_last_timestamp() {
    // Opportunities on 1..100 ms and at 500 ms; the period is 500 ms, so every round opens
    // with 100 ms of capacity (12 Mbit/s) and is then silent but for one opportunity at its end.
    let mut trace: String = (1..=100).map(|ms| format!("{ms}\n")).collect();
    trace.push_str("500\n");
    // 20 Mbit/s of CBR keeps the queue backlogged through each 100 ms burst at 12 Mbit/s.
    let out = run_with_trace("loop", "loop.up", &trace, "20Mbps", "10s");
    let p = &out.trace.packets;
    let delay = 20 * MS;
    for round in 2..20 {
        let start = round * 500 * MS + delay;
        // Nothing leaves between 100 ms and 500 ms of a round.
        let quiet = (0..p.len())
            .filter(|&i| {
                p.event[i] == RECEIVED && p.t_us[i] > start + 100 * MS && p.t_us[i] < start + 500 * MS
            })
            .count();
        assert_eq!(quiet, 0, "round {round} delivered between its opportunities");
        // A round carries its 101 opportunities' bytes (the one at 500 ms falls on the next
        // round's start, so count [start, start + 500 ms) from the second round on).
        let expected = 101.0 * 1504.0 * 8.0 / 0.5;
        assert_within(
            received_rate(&out, start, start + 500 * MS),
            expected,
            0.02,
            &format!("round {round}"),
        );
    }
    // The links table reports the opportunities' rate per 200 ms: 12.032 Mbit/s in the first
    // bin of a round (plus the previous round's 500 ms opportunity at its start), nothing in the
    // second and third.
    let links = &out.trace.links;
    let at = |t: i64| {
        let i = (0..links.t_us.len()).rev().find(|&i| links.link[i] == 0 && links.t_us[i] <= t).unwrap();
        links.capacity_bps[i]
    };
    assert_eq!(at(5 * SEC + 50 * MS), 101 * 1504 * 8 * 5);
    assert_eq!(at(5 * SEC + 250 * MS), 0);
}

#[test]
fn csv_and_opennetlab_traces_set_the_rate_of_each_step() {
    let csv = "time_s,rate_kbps\n0,1000\n5,2000\n";
    let out = run_with_trace("csv", "steps.csv", csv, "5Mbps", "10s");
    assert_within(received_rate(&out, SEC, 5 * SEC), 1e6, 0.01, "CSV first step");
    assert_within(received_rate(&out, 6 * SEC, 10 * SEC), 2e6, 0.01, "CSV last step holds");
    assert_eq!(out.meta.links[0].capacity_trace, Some("csv".to_string()));

    // 2 s at 1 Mbit/s, 1 s at 3 Mbit/s, looping: the second round is the first shifted by 3 s.
    let json = r#"{"type": "video", "downlink": {}, "uplink": {"trace_pattern": [
        {"duration": 2000, "capacity": 1000, "loss": 0, "rtt": 0, "jitter": 0},
        {"duration": 1000, "capacity": 3000, "loss": 0, "rtt": 0, "jitter": 0}]}}"#;
    let out = run_with_trace("onl", "segments.json", json, "6Mbps", "12s");
    for round in 1..4 {
        let start = round * 3 * SEC;
        // Past the 20 ms delay and the queue left by the step before.
        assert_within(received_rate(&out, start + 500 * MS, start + 2 * SEC), 1e6, 0.01, "1 Mbit/s segment");
        assert_within(
            received_rate(&out, start + 2 * SEC + 500 * MS, start + 3 * SEC),
            3e6,
            0.01,
            "3 Mbit/s segment",
        );
    }
}
