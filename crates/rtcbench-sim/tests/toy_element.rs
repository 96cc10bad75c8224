//! A new kind of network element needs one trait impl and one line where the run is built: the
//! toy fixed-delay tap (`rtcbench-net/tests/toy/tap.rs`) in place of a call's forward link
//! carries the call, and its packets arrive exactly its delay after they were sent.

#[path = "../../rtcbench-net/tests/toy/tap.rs"]
mod tap;

use rtcbench_cc::ControllerKind;
use rtcbench_scenario::{load, ScenarioError};
use rtcbench_sim::trace::PacketEvent;
use rtcbench_sim::{RunOptions, RunOutput, Simulation};
use rtcbench_units::Duration;
use tap::FixedDelayTap;

const SCENARIO: &str = r#"
id = "toy-element"
title = "A call over two links"
source = "test"
duration = "5s"

[[links]]
name = "forward"
from = "A"
to = "B"
delay = "10ms"
capacity = "2Mbps"
queue = { size = "300ms" }

[[links]]
name = "backward"
from = "B"
to = "A"
delay = "20ms"

[[calls]]
from = "A"
to = "B"
"#;

/// `text` (with `sets`) run with `fixed`, a 37 ms tap in place of link `link`.
fn run_over_tap(text: &str, sets: &[String], link: &str) -> Result<RunOutput, ScenarioError> {
    let scenario = load(text, "test", sets).expect("a valid scenario").remove(0);
    let tap = Box::new(FixedDelayTap::new(Duration::from_millis(37)));
    let options = RunOptions::default();
    let sim = Simulation::with_elements(
        &scenario,
        ControllerKind::Fixed.into(),
        1,
        options,
        vec![(link.into(), tap)],
    )?;
    Ok(sim.finish())
}

#[test]
fn a_toy_element_in_place_of_a_link_carries_the_call() {
    let out = run_over_tap(SCENARIO, &[], "forward").expect("the run builds");
    let p = &out.trace.packets;
    let delays: Vec<i64> = (0..p.len())
        .filter(|&i| p.event[i] == PacketEvent::Received as u8)
        .map(|i| p.t_us[i] - p.sent_us[i])
        .collect();
    let through_tap = delays.iter().filter(|&&d| d == 37_000).count();
    assert!(through_tap > 300, "{through_tap} packets crossed the tap in 5 s");
    // Forward packets take the tap's 37 ms, RTCP back the backward link's 20 ms; nothing else.
    assert!(delays.iter().all(|&d| d == 37_000 || d == 20_000), "delays: {delays:?}");
    assert!(!p.event.contains(&(PacketEvent::Dropped as u8)), "the tap drops nothing");
    // The links table samples the tap as link 0 (what it holds), the backward link as link 1.
    let l = &out.trace.links;
    let tap_rows: Vec<usize> = (0..l.t_us.len()).filter(|&i| l.link[i] == 0).collect();
    assert_eq!(tap_rows.len(), (0..l.t_us.len()).filter(|&i| l.link[i] == 1).count());
    assert!(tap_rows.iter().any(|&i| l.queue_bytes[i] > 0), "the tap holds packets on their way");
}

#[test]
fn an_element_for_a_link_the_scenario_does_not_have_is_an_error() {
    let err = run_over_tap(SCENARIO, &[], "sideways").err().expect("no link named sideways");
    assert!(err.to_string().contains("no link named \"sideways\""), "{err}");
}

/// An element that reports no serialisation releases a host's packets when it takes them: a TCP
/// flow under TCP Small Queues keeps sending over the tap instead of waiting for ever.
#[test]
fn a_small_queues_tcp_flow_is_not_held_back_by_an_element_of_ones_own() {
    let text = format!("{SCENARIO}\n[[tcp]]\nfrom = \"A\"\nto = \"B\"\nsmall_queues = true\n");
    let out = run_over_tap(&text, &["duration=1s".to_string()], "forward").expect("the run builds");
    let p = &out.trace.packets;
    let tcp = 3; // `packets.kind` code of a TCP data segment (trace::KIND_NAMES)
    let received =
        (0..p.len()).filter(|&i| p.event[i] == PacketEvent::Received as u8 && p.kind[i] == tcp).count();
    // An unlimited 37 ms path: slow start sends hundreds of segments in a second (an
    // element holding the host's packets for ever let 2 through).
    assert!(received > 200, "{received} TCP segments arrived");
}
