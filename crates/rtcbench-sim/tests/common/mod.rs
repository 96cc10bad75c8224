//! What the TCP integration tests (`bbr.rs`, `prague.rs`) share: a 10 Mbit/s dumbbell and the
//! packet-table measurements they make of it.

#![allow(dead_code, unreachable_pub)] // each test binary uses its own part

use rtcbench_cc::ControllerKind;
use rtcbench_scenario::load;
use rtcbench_sim::trace::PacketTable;
use rtcbench_sim::{simulate, RunOutput};

/// `packets.event` codes.
pub const RECEIVED: u8 = 1;
pub const DROPPED: u8 = 2;
pub const SEC: i64 = 1_000_000;
/// Capacity of the dumbbell's bottleneck, bit/s.
pub const CAPACITY: f64 = 10e6;
/// Serialisation of a full 1500-byte packet at 10 Mbit/s, µs.
pub const SERIALISATION_US: i64 = 1_200;

/// Runs a single-variant scenario with a `fixed` controller (no call here needs one).
pub fn run(text: &str, seed: u64) -> RunOutput {
    let mut variants = load(text, "tests/common", &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(variants.len(), 1, "test scenarios have a single variant");
    simulate(&variants.remove(0), ControllerKind::Fixed, seed).unwrap_or_else(|e| panic!("{e}"))
}

/// A–B over a 10 Mbit/s forward link with `queue` (a queue table in TOML), `one_way_ms` each
/// way, with the `[[tcp]]` entries in `tcp`, for `seconds`.
pub fn dumbbell(one_way_ms: u32, queue: &str, tcp: &str, seconds: u32, seed: u64) -> RunOutput {
    run(
        &format!(
            r#"
id = "dumbbell"
duration = "{seconds}s"
[[links]]
name = "forward"
from = "A"
to = "B"
delay = "{one_way_ms}ms"
capacity = "10Mbps"
queue = {queue}
[[links]]
name = "backward"
from = "B"
to = "A"
delay = "{one_way_ms}ms"
{tcp}
"#
        ),
        seed,
    )
}

pub fn flow_id(out: &RunOutput, name: &str) -> i32 {
    out.meta.flows.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("no flow {name}")).id as i32
}

/// Rows of `flow`'s packets with `event` in [from, to) µs.
pub fn rows(
    p: &PacketTable,
    flow: i32,
    event: u8,
    (from, to): (i64, i64),
) -> impl Iterator<Item = usize> + '_ {
    (0..p.len()).filter(move |&i| p.flow[i] == flow && p.event[i] == event && (from..to).contains(&p.t_us[i]))
}

/// Bits per second of `flow` reaching its receiver in the span, IP bytes.
pub fn rate_bps(p: &PacketTable, flow: i32, span: (i64, i64)) -> f64 {
    let bytes: i64 = rows(p, flow, RECEIVED, span).map(|i| i64::from(p.size[i])).sum();
    bytes as f64 * 8.0 / ((span.1 - span.0) as f64 / SEC as f64)
}

/// Queueing delay of each received packet of the flows, ms, sorted: one-way delay less the
/// propagation `one_way_us` and the packet's own serialisation (nothing else on the path queues).
pub fn queueing_ms(p: &PacketTable, flows: &[i32], span: (i64, i64), one_way_us: i64) -> Vec<f64> {
    let mut q: Vec<f64> = flows
        .iter()
        .flat_map(|&f| rows(p, f, RECEIVED, span))
        .map(|i| {
            let serialisation = SERIALISATION_US * i64::from(p.size[i]) / 1500;
            (p.t_us[i] - p.sent_us[i] - one_way_us - serialisation) as f64 / 1e3
        })
        .collect();
    q.sort_by(f64::total_cmp);
    q
}

pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}
