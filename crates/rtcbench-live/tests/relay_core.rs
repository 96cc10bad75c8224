//! The relay's core with byte buffers and no clock: a frame leaves at the instant the scenario's
//! links say, over the route the simulator would choose, or is counted where it stopped.

use std::net::{Ipv4Addr, SocketAddrV4};

use rtcbench_live::config::RelayConfig;
use rtcbench_live::relay::Relay;
use rtcbench_units::{Duration, Instant};
use rtcbench_wire::ip::ipv4_udp_datagram;
use rtcbench_wire::Ecn;

/// A → B over a 1 Mbit/s, 10 ms link with a 3000-byte queue, then B → C over an unlimited 5 ms
/// one; B → A unlimited and instant. Routes as the simulator's plan lists them.
fn config() -> RelayConfig {
    let link = |name: &str, capacity: serde_json::Value, delay: &str, queue: serde_json::Value| {
        serde_json::json!({
            "name": name,
            "capacity": {"steps_us": [[0, capacity]], "period": null, "horizon_us": null},
            "opportunities": null,
            "delay": delay,
            "queue": queue,
            "discipline": "drop_tail",
            "jitter": null,
            "loss": {"kind": "none"},
        })
    };
    let through = |element: u32| serde_json::json!({"element": element, "from": 0, "to": 1});
    let json = serde_json::json!({
        "plan": {
            "scenario": "relay-core",
            "seed": 1,
            "duration": "10s",
            "nodes": ["A", "B", "C"],
            "links": [
                link("ab", "1Mbps".into(), "10ms", serde_json::json!({"bytes": "3000B"})),
                link("ba", serde_json::Value::Null, "0ms", "unlimited".into()),
                link("bc", serde_json::Value::Null, "5ms", "unlimited".into()),
            ],
            "queues": ["ab", "ba", "bc"],
            "routes": [
                {"from": "A", "to": "B", "hops": [through(0)]},
                {"from": "B", "to": "A", "hops": [through(1)]},
                {"from": "A", "to": "C", "hops": [through(0), through(2)]},
            ],
        },
        "interfaces": [
            {"node": "A", "name": "t-r0", "host_ip": "10.0.1.2", "host_mac": "02:72:62:00:01:02"},
            {"node": "B", "name": "t-r1", "host_ip": "10.0.2.2", "host_mac": "02:72:62:00:02:02"},
            {"node": "C", "name": "t-r2", "host_ip": "10.0.3.2", "host_mac": "02:72:62:00:03:02"},
        ],
        "out_dir": "/nonexistent",
    });
    serde_json::from_value(json).expect("a valid configuration")
}

/// A UDP datagram of `size` bytes on the wire from host `from` to host `to` (10.0.<n>.2).
fn datagram(from: u8, to: u8, size: usize) -> Vec<u8> {
    let addr = |n: u8| SocketAddrV4::new(Ipv4Addr::new(10, 0, n, 2), 5000);
    ipv4_udp_datagram(addr(from), addr(to), Ecn::NotEct, &[], size - 28).expect("fits")
}

fn ms(v: i64) -> Instant {
    Instant::ZERO + Duration::from_micros(v * 1000)
}

#[test]
fn a_frame_leaves_after_serialisation_and_delay_and_unchanged() {
    let mut relay = Relay::new(&config()).expect("fits together");
    let frame = datagram(1, 2, 1250); // 10 ms at 1 Mbit/s
    relay.arrive(ms(100), 0, frame.clone());
    assert!(relay.poll_departure().is_none());
    assert_eq!(relay.poll_timeout(), Some(ms(110)));
    relay.advance(ms(119));
    assert!(relay.poll_departure().is_none(), "due at 120 ms, not before");
    relay.advance(ms(130));
    let d = relay.poll_departure().expect("delivered");
    assert_eq!((d.due, d.to, d.arrived), (ms(120), 1, ms(100)));
    assert_eq!(d.frame.bytes(), &frame[..]);
}

#[test]
fn a_two_link_route_hands_over_at_the_instant_the_first_link_delivers() {
    let mut relay = Relay::new(&config()).expect("fits together");
    relay.arrive(ms(0), 0, datagram(1, 3, 1250));
    relay.arrive(ms(1), 0, datagram(1, 3, 1250));
    relay.advance(ms(1000)); // one late wake-up: both still leave on the links' schedule
    let due: Vec<_> = std::iter::from_fn(|| relay.poll_departure()).map(|d| (d.due, d.to)).collect();
    assert_eq!(due, [(ms(25), 2), (ms(35), 2)]); // 10 + 10 + 5; queued 9 ms behind the first
    assert_eq!(relay.counts[0].packets_out, 2);
    assert_eq!(relay.counts[2].packets_in, 2);
}

#[test]
fn a_full_queue_drops_and_the_drop_is_reported_with_its_link() {
    let mut relay = Relay::new(&config()).expect("fits together");
    for _ in 0..4 {
        relay.arrive(ms(0), 0, datagram(1, 2, 1000)); // the queue holds 3000 bytes
    }
    let d = relay.poll_dropped().expect("the fourth did not fit");
    assert_eq!((d.at, d.link, d.reason.as_str()), (ms(0), 0, "queue_full"));
    assert!(relay.poll_dropped().is_none());
    assert_eq!(relay.counts[0].dropped["queue_full"], 1);
}

#[test]
fn frames_without_a_host_or_a_route_are_counted_not_carried() {
    let mut relay = Relay::new(&config()).expect("fits together");
    relay.arrive(ms(0), 0, datagram(1, 1, 100)); // to itself
    relay.arrive(ms(0), 2, datagram(3, 1, 100)); // C → A: no link
    let mut to_gateway = datagram(1, 2, 100);
    to_gateway[19] = 1; // 10.0.2.1, the net namespace's own address
    relay.arrive(ms(0), 0, to_gateway);
    relay.arrive(ms(0), 0, vec![0x60; 40]); // IPv6
    relay.advance(ms(100));
    assert!(relay.poll_departure().is_none());
    let r = &relay.refused;
    assert_eq!((r.no_route, r.no_host, r.not_ipv4), (2, 1, 1));
}

#[test]
fn an_arrival_older_than_what_was_processed_enters_now() {
    let mut relay = Relay::new(&config()).expect("fits together");
    relay.advance(ms(50));
    relay.arrive(ms(40), 1, datagram(2, 1, 100));
    let d = relay.poll_departure().expect("ba is instant");
    assert_eq!((d.due, relay.late_arrivals), (ms(50), 1));
}

#[test]
fn a_plan_and_interfaces_that_do_not_fit_are_refused_by_name() {
    let mut cfg = config();
    cfg.interfaces.pop();
    assert_eq!(Relay::new(&cfg).err().as_deref(), Some("node C of the plan has no interface"));
    let mut cfg = config();
    cfg.plan.routes[0].hops[0].element = 7;
    assert_eq!(
        Relay::new(&cfg).err().as_deref(),
        Some("route A → B: [element 7 port 0 → 1] are not elements and ports of the plan")
    );
    let mut cfg = config();
    cfg.plan.queues.pop();
    assert_eq!(Relay::new(&cfg).err().as_deref(), Some("the plan names 2 queues, its elements have 3"));
}

#[test]
fn udp_background_takes_its_share_of_the_link_and_leaves_nothing_for_the_hosts() {
    let mut cfg = config();
    // 0.5 Mbit/s of 1250-byte packets on ab (1 Mbit/s): one every 20 ms, 10 ms on the wire each.
    cfg.plan.background = serde_json::from_value(serde_json::json!([
        {"link": 0, "steps_us": [[0, "500kbps"]], "packet_size": "1250B"}
    ]))
    .expect("a background plan");
    let mut relay = Relay::new(&cfg).expect("fits together");
    assert_eq!(relay.poll_timeout(), Some(ms(0)));
    relay.advance(ms(5));
    // A host's frame arriving while the background packet is on the wire waits for it.
    relay.arrive(ms(5), 0, datagram(1, 2, 1250));
    relay.advance(ms(1000));
    let c = relay.counts[0].clone();
    assert_eq!(c.background_in, 51); // at 0, 20, ..., 1000 ms
    assert_eq!(c.packets_in, 52);
    let host: Vec<_> = std::iter::from_fn(|| relay.poll_departure()).map(|d| d.due).collect();
    assert_eq!(host, [ms(30)]); // on the wire 10-20 ms, then 10 ms of delay
    assert_eq!(c.packets_out, 51); // the host's, and the background sent by 980 ms (at the end by 1000)
}

#[test]
fn frames_are_numbered_as_they_arrive_and_keep_their_number_to_the_end() {
    let mut relay = Relay::new(&config()).expect("fits together");
    let (first, _) = relay.arrive(ms(100), 0, datagram(1, 2, 1250));
    let (refused, _) = relay.arrive(ms(101), 0, datagram(1, 9, 100)); // no such host
                                                                      // Three more behind the first: the 3000-byte queue (the frame on the wire included) holds
                                                                      // the second; the others find it full.
    let (second, _) = relay.arrive(ms(102), 0, datagram(1, 2, 1250));
    let (third, _) = relay.arrive(ms(103), 0, datagram(1, 2, 1250));
    let (fourth, _) = relay.arrive(ms(104), 0, datagram(1, 2, 1250));
    assert_eq!((first, refused, second, third, fourth), (0, 1, 2, 3, 4));
    relay.advance(ms(200));
    let left: Vec<u64> = std::iter::from_fn(|| relay.poll_departure()).map(|d| d.id).collect();
    let dropped: Vec<u64> = std::iter::from_fn(|| relay.poll_dropped()).map(|d| d.id).collect();
    assert_eq!(left, [0, 2]);
    assert_eq!(dropped, [3, 4]);
    // A frame the relay has passed enters now, and says when.
    let (_, entered) = relay.arrive(ms(150), 0, datagram(1, 2, 100));
    assert_eq!(entered, ms(200));
}

#[test]
fn links_are_sampled_every_10_ms_and_at_each_capacity_change_as_the_simulator_samples() {
    let mut cfg = config();
    let mut json = serde_json::to_value(&cfg.plan.links[0]).expect("serialises");
    json["capacity"] = serde_json::json!({"steps_us": [[0, "1Mbps"], [25_000, "2Mbps"]], "period": null, "horizon_us": null});
    cfg.plan.links[0] = serde_json::from_value(json).expect("a link");
    cfg.plan.duration = Duration::from_micros(50_000);
    let mut relay = Relay::new(&cfg).expect("fits together");
    relay.sample_links();
    relay.arrive(ms(1), 0, datagram(1, 2, 1250)); // 10 ms on the wire: queued at the 10 ms sample
    relay.advance(ms(1000));
    let samples: Vec<_> = std::iter::from_fn(|| relay.poll_sample()).filter(|s| s.link == 0).collect();
    let at: Vec<i64> = samples.iter().map(|s| (s.at - Instant::ZERO).as_micros() / 1000).collect();
    // 0, 10, 20, then the change at 25 ms, and on from there; the last at the run's end.
    assert_eq!(at, [0, 10, 20, 25, 35, 45, 50]);
    let bps = |k: usize| samples[k].capacity.map(|c| c.as_bps());
    assert_eq!((bps(2), bps(3)), (Some(1_000_000), Some(2_000_000)));
    assert_eq!(samples[1].queue.as_bytes(), 1250);
    assert_eq!(samples[2].queue.as_bytes(), 0);
    assert_eq!(samples[0].queue_limit.map(|l| l.as_bytes()), Some(3000));
}

/// The IPv4 header checksum verifies: the header's 16-bit words sum to 0xffff.
fn ipv4_checksum_ok(bytes: &[u8]) -> bool {
    let ihl = usize::from(bytes[0] & 0x0f) * 4;
    let mut sum: u32 = bytes[..ihl].chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff
}

/// A DualPI2 link's samples carry its state and, per sample, the marks and drops since the
/// previous one (as the simulator's links table counts them); other links' carry none. A frame
/// the L queue marked leaves CE with a valid header checksum.
#[test]
fn a_dualpi2_links_samples_count_its_marks_and_drops() {
    use rtcbench_net::queue::{DualPi2Config, QueueDiscipline};
    let mut cfg = config();
    let mut json = serde_json::to_value(&cfg.plan.links[0]).expect("serialises");
    json["discipline"] =
        serde_json::to_value(QueueDiscipline::DualPi2(DualPi2Config::rfc9332())).expect("serialises");
    json["queue"] = serde_json::json!({"bytes": "6250B"});
    cfg.plan.links[0] = serde_json::from_value(json).expect("a link");
    cfg.plan.duration = Duration::from_micros(200_000);
    let mut relay = Relay::new(&cfg).expect("fits together");
    relay.sample_links();
    let addr = |n: u8| SocketAddrV4::new(Ipv4Addr::new(10, 0, n, 2), 5000);
    // Seven ECT(1) frames of 10 ms on the wire at once: the L queue marks those that waited past
    // its 1 ms step, and the limit (the one on the wire included) refuses the last two.
    for _ in 0..7 {
        let frame = ipv4_udp_datagram(addr(1), addr(2), Ecn::Ect1, &[], 1250 - 28).expect("fits");
        relay.arrive(ms(1), 0, frame);
    }
    relay.advance(ms(1000));
    let departures: Vec<_> = std::iter::from_fn(|| relay.poll_departure()).collect();
    let ce = departures.iter().filter(|d| d.frame.bytes()[1] & 0b11 == 0b11).count();
    // The first went on the wire at once; the last found the L queue one packet long, which
    // the native L AQM leaves alone (RFC 9332: Th_len, one packet).
    assert_eq!((departures.len(), ce), (5, 3));
    assert!(departures.iter().all(|d| ipv4_checksum_ok(d.frame.bytes())));
    let dropped = std::iter::from_fn(|| relay.poll_dropped()).count();
    assert_eq!(dropped, 2);
    let samples: Vec<_> = std::iter::from_fn(|| relay.poll_sample()).collect();
    let dual: Vec<_> = samples.iter().filter(|s| s.link == 0).map(|s| s.dualpi2.expect("DualPI2")).collect();
    assert!(samples.iter().filter(|s| s.link != 0).all(|s| s.dualpi2.is_none()));
    assert_eq!(dual.iter().map(|d| d.l_marks).sum::<u64>(), 3);
    assert_eq!(dual.iter().map(|d| d.l_drops).sum::<u64>(), 2);
    assert_eq!(dual.iter().map(|d| d.c_marks + d.c_drops).sum::<u64>(), 0);
    // Each mark is counted once, at the first sample after it: they fall in several samples.
    assert!(dual.iter().filter(|d| d.l_marks > 0).count() > 1);
    // The L queue held the four that waited at the 10 ms sample; p_CL = min(2 p', 1).
    assert_eq!(dual[1].state.l_bytes.as_bytes(), 4 * 1250);
    assert!(dual.iter().all(|d| d.state.p_cl == (2.0 * d.state.p_base).min(1.0)));
}

#[path = "../../rtcbench-net/tests/toy/tap.rs"]
mod tap;

/// A new kind of element needs one trait impl and one line where the relay is built: the toy
/// fixed-delay tap (`rtcbench-net/tests/toy/tap.rs`, the one the simulator's test runs) in
/// place of link `ab` carries frames in exactly its delay, on a route of two elements.
#[test]
fn a_toy_element_in_place_of_a_link_carries_frames() {
    let tap = Box::new(tap::FixedDelayTap::new(Duration::from_millis(37)));
    let mut relay = Relay::with_elements(&config(), vec![("ab".to_string(), tap)]).expect("fits together");
    relay.arrive(ms(100), 0, datagram(1, 2, 1250));
    relay.arrive(ms(101), 0, datagram(1, 3, 1250));
    relay.advance(ms(136));
    assert!(relay.poll_departure().is_none(), "due at 137 ms, not before");
    relay.advance(ms(200));
    let first = relay.poll_departure().expect("delivered to B");
    assert_eq!((first.due, first.to), (ms(137), 1));
    // Then bc's 5 ms.
    let second = relay.poll_departure().expect("delivered to C");
    assert_eq!((second.due, second.to), (ms(143), 2));
    assert!(relay.poll_dropped().is_none());
    let err = Relay::with_elements(
        &config(),
        vec![("zz".to_string(), Box::new(tap::FixedDelayTap::new(Duration::ZERO)))],
    );
    assert!(err.err().is_some_and(|e| e.contains("no link named zz")));
}
