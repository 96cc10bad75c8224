//! Cross traffic, capacity mechanisms, call timelines and ECN through the whole simulator (the
//! models themselves are unit-tested in `traffic/` and `queue/`; this checks their plumbing).

use rtcbench_cc::ControllerKind;
use rtcbench_scenario::load;
use rtcbench_sim::trace::{Column, ColumnData, PacketTable};
use rtcbench_sim::{simulate, RunOutput};

const SENT: u8 = 0;
const RECEIVED: u8 = 1;
const DROPPED: u8 = 2;
const SEC: i64 = 1_000_000;
const CE: u8 = 3;
/// `packets.reason` code of a drop by an AQM's control law.
const AQM: u8 = 3;

fn run(text: &str, controller: ControllerKind) -> RunOutput {
    let mut variants = load(text, "cross_traffic.rs", &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(variants.len(), 1, "test scenarios have a single variant");
    simulate(&variants.remove(0), controller, 1).unwrap_or_else(|e| panic!("{e}"))
}

fn flow_id(out: &RunOutput, name: &str) -> i32 {
    out.meta.flows.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("no flow {name}")).id as i32
}

/// Bytes of `flow` with `event` in [from, to) µs.
fn bytes(p: &PacketTable, flow: i32, event: u8, (from, to): (i64, i64)) -> i64 {
    (0..p.len())
        .filter(|&i| p.flow[i] == flow && p.event[i] == event && (from..to).contains(&p.t_us[i]))
        .map(|i| i64::from(p.size[i]))
        .sum()
}

fn rate_bps(p: &PacketTable, flow: i32, event: u8, span: (i64, i64)) -> f64 {
    bytes(p, flow, event, span) as f64 * 8.0 / ((span.1 - span.0) as f64 / SEC as f64)
}

fn two_nodes(forward: &str, body: &str) -> String {
    format!(
        r#"
id = "cross"
duration = "30s"
[[links]]
name = "forward"
from = "A"
to = "B"
delay = "25ms"
{forward}
[[links]]
name = "backward"
from = "B"
to = "A"
delay = "25ms"
{body}
"#
    )
}

#[test]
fn a_long_tcp_flow_alone_fills_its_bottleneck() {
    // 10 Mbit/s, 50 ms RTT, a queue of 1.2 BDP: one CUBIC flow keeps the link busy (≥ 95 %).
    let text = two_nodes(
        "capacity = \"10Mbps\"\nqueue = { size = \"60ms\" }",
        "[[tcp]]\nfrom = \"A\"\nto = \"B\"\ncc = \"cubic\"",
    );
    let out = run(&text, ControllerKind::Fixed);
    let tcp = flow_id(&out, "tcp0");
    let goodput = rate_bps(&out.trace.packets, tcp, RECEIVED, (5 * SEC, 30 * SEC));
    assert!(goodput >= 0.95 * 10e6, "{goodput}");
    // Its ACKs come back over the backward link, one per two full segments (delayed ACKs).
    let (data, acks) = (flow_id(&out, "tcp0"), flow_id(&out, "tcp0.ack"));
    let count = |f: i32| (0..out.trace.packets.len()).filter(|&i| out.trace.packets.flow[i] == f).count();
    let ratio = count(acks) as f64 / count(data) as f64;
    assert!((0.4..0.7).contains(&ratio), "{ratio}");
}

#[test]
fn udp_background_leaves_exactly_the_scheduled_capacity() {
    // RFC 8867 §4.2: a 4 Mbit/s link whose free capacity steps 1 → 2.5 Mbit/s; the background
    // CBR sends the difference, and the links table reports the free capacity.
    let text = two_nodes(
        r#"reference_capacity = "1Mbps"
schedule = [{ at = "0s", ratio = 1.0 }, { at = "15s", ratio = 2.5 }]
mechanism = "udp-background"
physical_capacity = "4Mbps"
queue = { size = "300ms" }"#,
        "[[calls]]\nfrom = \"A\"\nto = \"B\"",
    );
    let out = run(&text, ControllerKind::Gcc);
    let udp = flow_id(&out, "forward.udp-background");
    for (span, expected) in [((SEC, 15 * SEC), 3.0e6), ((16 * SEC, 30 * SEC), 1.5e6)] {
        let sent = rate_bps(&out.trace.packets, udp, SENT, span);
        assert!((sent - expected).abs() < 0.01 * expected, "{span:?}: {sent}");
    }
    let l = &out.trace.links;
    let capacity_at = |t: i64| l.capacity_bps[l.t_us.iter().position(|&x| x >= t).unwrap()];
    assert_eq!((capacity_at(10 * SEC), capacity_at(20 * SEC)), (1_000_000, 2_500_000));
}

#[test]
fn a_paused_call_sends_no_media_and_resumes() {
    let text = two_nodes(
        "capacity = \"2Mbps\"\nqueue = { size = \"300ms\" }",
        "[[calls]]\nfrom = \"A\"\nto = \"B\"\npause = [{ from = \"10s\", to = \"20s\" }]",
    );
    let out = run(&text, ControllerKind::Gcc);
    let p = &out.trace.packets;
    for name in ["call0.video", "call0.audio"] {
        let f = flow_id(&out, name);
        assert_eq!(bytes(p, f, SENT, (10 * SEC + 50_000, 20 * SEC)), 0, "{name}");
        assert!(bytes(p, f, SENT, (21 * SEC, 30 * SEC)) > 0, "{name}");
    }
}

#[test]
fn ce_marks_of_an_ecn_codel_queue_reach_nada_through_rfc8888() {
    // ECT(0) media into a 500 kbit/s CoDel queue with ECN: CoDel marks instead of dropping, the
    // receiver echoes CE in its RFC 8888 reports, and NADA's marking ratio (RFC 8698 §4.2)
    // becomes positive.
    let text = two_nodes(
        "capacity = \"500kbps\"\nqueue = { kind = \"codel\", size = \"300ms\", ecn = true }",
        "[[calls]]\nfrom = \"A\"\nto = \"B\"\necn = \"ect0\"\nvideo = { start = \"1Mbps\" }",
    );
    let out = run(&text, ControllerKind::Nada);
    let p = &out.trace.packets;
    let video = flow_id(&out, "call0.video");
    let marked =
        (0..p.len()).filter(|&i| p.flow[i] == video && p.event[i] == RECEIVED && p.ecn[i] == CE).count();
    let aqm_drops = |f: i32| {
        (0..p.len()).filter(|&i| p.flow[i] == f && p.event[i] == DROPPED && p.reason[i] == AQM).count()
    };
    assert!(marked > 10, "{marked} CE-marked packets");
    // CoDel never drops an ECT packet by its control law (RFC 8289 §5.2 with ECN); the start-up
    // burst may still overflow the 300 ms buffer (`queue_full`).
    assert_eq!(aqm_drops(video), 0);
    let mark =
        out.trace.controller.columns.iter().find(|c: &&Column| c.name == "mark").expect("NADA traces `mark`");
    let ColumnData::Float(values) = &mark.data else { panic!("`mark` is a ratio") };
    assert!(values.iter().any(|&v| v > 0.0), "NADA saw the marks");
}

/// The largest queue sampled on link 0 (every 10 ms) in [from, to) µs.
fn max_queue_bytes(out: &RunOutput, (from, to): (i64, i64)) -> i64 {
    let l = &out.trace.links;
    (0..l.t_us.len())
        .filter(|&i| l.link[i] == 0 && (from..to).contains(&l.t_us[i]))
        .map(|i| l.queue_bytes[i])
        .max()
        .unwrap_or(0)
}

/// A CUBIC flow into a 2 Mbit/s bottleneck with a 300 ms (75 kB) drop-tail buffer, with or
/// without TCP Small Queues, and optionally a 1 Mbit/s CBR flow through the same queue.
fn tsq_run(small_queues: bool, cbr: bool) -> RunOutput {
    let mut body =
        format!("[[tcp]]\nfrom = \"A\"\nto = \"B\"\ncc = \"cubic\"\nsmall_queues = {small_queues}\n");
    if cbr {
        body.push_str("[[cbr]]\nfrom = \"A\"\nto = \"B\"\nrate = \"1Mbps\"\nstart = \"10s\"\n");
    }
    run(&two_nodes("capacity = \"2Mbps\"\nqueue = { size = \"300ms\" }", &body), ControllerKind::Fixed)
}

#[test]
fn tcp_small_queues_keep_a_bulk_flow_two_packets_deep_in_its_hosts_queue() {
    // Linux's TSQ with the shaper on the sending host (the testbed of Guerrero Viveros 2019 §5.2.3):
    // the flow still fills the link, but holds at most two packets (2 × 1500 B) in the queue instead
    // of the 75 kB buffer, so it loses nothing. Without TSQ the same flow fills the buffer and loses packets.
    let out = tsq_run(true, false);
    let tcp = flow_id(&out, "tcp0");
    let goodput = rate_bps(&out.trace.packets, tcp, RECEIVED, (5 * SEC, 30 * SEC));
    assert!(goodput >= 0.95 * 2e6, "{goodput}");
    assert!(
        max_queue_bytes(&out, (5 * SEC, 30 * SEC)) <= 2 * 1500,
        "{}",
        max_queue_bytes(&out, (0, 30 * SEC))
    );
    assert_eq!(bytes(&out.trace.packets, tcp, DROPPED, (0, 30 * SEC)), 0);

    let out = tsq_run(false, false);
    let tcp = flow_id(&out, "tcp0");
    assert!(max_queue_bytes(&out, (5 * SEC, 30 * SEC)) >= 70_000);
    assert!(bytes(&out.trace.packets, tcp, DROPPED, (0, 30 * SEC)) > 0);
}

#[test]
fn under_tcp_small_queues_a_bulk_flow_yields_to_a_cbr_flow_without_a_standing_queue() {
    // With 1 Mbit/s of CBR through the host queue from 10 s, the TSQ flow gets the other
    // 1 Mbit/s (±5 %), its queue stays shallow (a few CBR packets and two of its own: under a
    // tenth of the 75 kB buffer) and nothing is lost: the host queue's backpressure, not loss,
    // slows it.
    let out = tsq_run(true, true);
    let p = &out.trace.packets;
    let (tcp, cbr) = (flow_id(&out, "tcp0"), flow_id(&out, "cbr0"));
    let span = (15 * SEC, 30 * SEC);
    let tcp_rate = rate_bps(p, tcp, RECEIVED, span);
    assert!((0.95e6..=1.05e6).contains(&tcp_rate), "{tcp_rate}");
    assert!(rate_bps(p, cbr, RECEIVED, span) >= 0.99e6);
    assert!(max_queue_bytes(&out, span) <= 7_500, "{}", max_queue_bytes(&out, span));
    assert_eq!(bytes(p, tcp, DROPPED, (0, 30 * SEC)) + bytes(p, cbr, DROPPED, (0, 30 * SEC)), 0);
}
