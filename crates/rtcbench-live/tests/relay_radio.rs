//! The relay's core over a BSS and an LTE cell, with byte buffers and no clock: the plan the
//! simulator builds from a scenario's `[[wifi]]` or `[[lte]]` gives the relay the same element,
//! a frame crosses it between the ports of its route, and the links table's radio columns are
//! sampled as the simulator samples them.

use std::net::{Ipv4Addr, SocketAddrV4};

use rtcbench_live::relay::{LinkSample, RadioColumns, Relay};
use rtcbench_scenario::elements::NetworkPlan;
use rtcbench_units::{Duration, Instant};
use rtcbench_wire::ip::ipv4_udp_datagram;
use rtcbench_wire::Ecn;

const WIFI: &str = r#"
id = "relay-wifi"
duration = "2s"
[[links]]
name = "up"
from = "AP"
to = "B"
delay = "10ms"
[[links]]
name = "down"
from = "B"
to = "AP"
delay = "10ms"
[[wifi]]
name = "wlan"
ap = "AP"
phy = { mcs = 7 }
[[wifi.stations]]
node = "STA"
[[wifi.stations]]
node = "STA2"
[[calls]]
from = "STA"
to = "B"
"#;

const LTE: &str = r#"
id = "relay-lte"
duration = "2s"
[[links]]
name = "up"
from = "ENB"
to = "B"
delay = "10ms"
[[links]]
name = "down"
from = "B"
to = "ENB"
delay = "10ms"
[[lte]]
name = "cell"
enb = "ENB"
[[lte.ues]]
node = "UE"
sinr_db = 15.0
[[calls]]
from = "UE"
to = "B"
"#;

mod common;

/// The relay of scenario `toml`, with interface k for node k (host 10.0.k+1.2), and its plan.
fn relay(toml: &str) -> (Relay, NetworkPlan) {
    let s = rtcbench_scenario::load(toml, "test", &[]).expect("a valid scenario").remove(0);
    let plan = NetworkPlan::new(&s, 1).expect("plans");
    let cfg = common::relay_config(&plan).expect("a relay configuration");
    (Relay::new(&cfg).expect("fits together"), plan)
}

fn node(plan: &NetworkPlan, name: &str) -> usize {
    plan.nodes.iter().position(|n| n == name).expect("a node of the plan")
}

/// A UDP datagram of `size` bytes from interface `from` to interface `to`.
fn datagram(from: usize, to: usize, size: usize) -> Vec<u8> {
    let addr = |k: usize| SocketAddrV4::new(Ipv4Addr::new(10, 0, k as u8 + 1, 2), 5000);
    ipv4_udp_datagram(addr(from), addr(to), Ecn::NotEct, &[], size - 28).expect("fits")
}

fn ms(v: f64) -> Instant {
    Instant::ZERO + Duration::from_micros((v * 1000.0) as i64)
}

/// Runs the relay event by event up to `end`, as a relay that always wakes in time.
fn run_to(relay: &mut Relay, end: Instant) {
    while let Some(due) = relay.poll_timeout().filter(|&d| d <= end) {
        relay.advance(due);
    }
    relay.advance(end);
}

fn samples_of(relay: &mut Relay, plan: &NetworkPlan, queue: &str) -> Vec<LinkSample> {
    let id = plan.queues.iter().position(|q| q == queue).unwrap_or_else(|| panic!("no queue {queue}"));
    std::iter::from_fn(|| relay.poll_sample()).filter(|s| s.link == id).collect()
}

#[test]
fn a_station_s_frame_crosses_the_bss_then_the_wire() {
    let (mut relay, plan) = relay(WIFI);
    let (sta, b) = (node(&plan, "STA"), node(&plan, "B"));
    relay.sample_links();
    relay.arrive(ms(100.0), sta, datagram(sta, b, 1200));
    run_to(&mut relay, ms(200.0));
    let d = relay.poll_departure().expect("delivered to B");
    // DIFS, a backoff of at most 15 slots, 1200 bytes at 65 Mbit/s and an ACK: well under 1 ms
    // on the air; then the wire's 10 ms.
    let air = d.due - ms(110.0);
    assert!(air > Duration::ZERO && air < Duration::from_millis(1), "{air:?} on the air");
    assert_eq!(d.to, b);
    let bss = plan.links.len();
    assert_eq!((relay.counts[bss].name.as_str(), relay.counts[bss].kind), ("wlan", "wifi"));
    assert_eq!((relay.counts[bss].packets_in, relay.counts[bss].packets_out), (1, 1));
    // The station's row has its MAC columns, as the simulator's links table; the sample after
    // the transmission saw it on the air.
    let rows = samples_of(&mut relay, &plan, "wlan:STA");
    assert_eq!(rows.len(), 21, "every 10 ms from 0 to 200 ms");
    let mac = |k: usize| match rows[k].radio {
        Some(RadioColumns::Wifi(m)) => m,
        other => panic!("not a Wi-Fi row: {other:?}"),
    };
    assert_eq!(mac(0).airtime_share, None, "nothing to compare with at the first sample");
    assert!(mac(11).airtime_share.is_some_and(|a| a > 0.0), "{:?}", mac(11));
    assert_eq!(mac(11).phy_rate.map(|r| r.as_bps()), Some(65_000_000));
    assert_eq!(mac(12).airtime_share, Some(0.0));
}

#[test]
fn the_ap_carries_a_frame_down_to_its_station() {
    let (mut relay, plan) = relay(WIFI);
    let (sta2, b) = (node(&plan, "STA2"), node(&plan, "B"));
    relay.arrive(ms(0.0), b, datagram(b, sta2, 1200));
    run_to(&mut relay, ms(50.0));
    let d = relay.poll_departure().expect("delivered to STA2");
    assert_eq!(d.to, sta2);
    assert!(d.due > ms(10.0) && d.due < ms(11.0), "{:?}", d.due);
}

#[test]
fn a_ue_s_frame_waits_for_its_uplink_grant() {
    let (mut relay, plan) = relay(LTE);
    let (ue, b) = (node(&plan, "UE"), node(&plan, "B"));
    relay.sample_links();
    relay.arrive(ms(100.0), ue, datagram(ue, b, 1200));
    run_to(&mut relay, ms(300.0));
    let d = relay.poll_departure().expect("delivered to B");
    // A scheduling request, its grant and the transport block: several TTIs, not tens of ms.
    let radio = d.due - ms(110.0);
    assert!(
        radio >= Duration::from_millis(2) && radio < Duration::from_millis(40),
        "{radio:?} over the radio"
    );
    let cell = plan.links.len();
    assert_eq!((relay.counts[cell].name.as_str(), relay.counts[cell].kind), ("cell", "lte"));
    let rows = samples_of(&mut relay, &plan, "cell:UE:ul");
    let radio = |s: &LinkSample| match s.radio {
        Some(RadioColumns::Lte(r)) => r,
        other => panic!("not an LTE row: {other:?}"),
    };
    assert!(rows.iter().all(|s| radio(s).cqi > 0), "a UE at 15 dB is in range");
    let granted: u64 = rows.iter().filter_map(|s| radio(s).scheduled).map(|r| r.as_bps()).sum();
    assert!(granted > 0, "the uplink was scheduled");
}

#[test]
fn element_events_count_late_by_the_clock_the_driver_read() {
    let (mut relay, plan) = relay(WIFI);
    let (sta, b) = (node(&plan, "STA"), node(&plan, "B"));
    let bss = plan.links.len();
    // Woken in time for every event: none is late.
    relay.arrive(ms(0.0), sta, datagram(sta, b, 1200));
    run_to(&mut relay, ms(50.0));
    let on_time = relay.element_timing()[bss].lateness.clone();
    assert!(on_time.departures >= 2 && on_time.max_us == 0.0, "{on_time:?}");
    // A driver that reads its clock 300 µs after the events it then runs: each is 300 µs late.
    relay.arrive(ms(100.0), sta, datagram(sta, b, 1200));
    while let Some(due) = relay.poll_timeout().filter(|&d| d <= ms(150.0)) {
        relay.set_clock(due + Duration::from_micros(300));
        relay.advance(due);
    }
    let timing = relay.element_timing()[bss].lateness.clone();
    assert!(timing.departures > on_time.departures);
    assert_eq!(timing.max_us, 300.0);
}
