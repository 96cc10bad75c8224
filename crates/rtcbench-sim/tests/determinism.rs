//! A run is a pure function of (scenario, controller, seed) (STYLE.md §6), and its packet table
//! tells each packet's story once: one `sent` row, then at most one `received` or `dropped`.

use std::sync::{Arc, Mutex};

use rtcbench_cc::gcc::{GccConfig, GoogCc};
use rtcbench_cc::ControllerKind;
use rtcbench_scenario::schema::{AudioSpec, Param};
use rtcbench_scenario::{builtin, load, Scenario};
use rtcbench_sim::trace::{ColumnData, Trace};
use rtcbench_sim::{
    simulate, simulate_with, CallSetup, ControllerChoice, RunOptions, RunOutput, UserController, UserFeedback,
};
use rtcbench_units::Bitrate;

const SENT: u8 = 0;
const RECEIVED: u8 = 1;
const DROPPED: u8 = 2;
const RECOVERED: u8 = 3;

/// The first variant of a built-in scenario.
fn builtin_scenario(id: &str) -> Scenario {
    let (text, origin) = builtin::find(id).unwrap_or_else(|| panic!("no built-in {id}"));
    load(text, &origin, &[]).unwrap_or_else(|e| panic!("{e}")).remove(0)
}

fn run(s: &Scenario, cc: ControllerKind, seed: u64) -> RunOutput {
    simulate(s, cc, seed).unwrap_or_else(|e| panic!("{e}"))
}

/// Asserts that the named columns of two tables are equal, naming the first that differs.
macro_rules! same_columns {
    ($a:expr, $b:expr, $table:ident: $($col:ident),+ $(,)?) => {
        $(assert!($a.$table.$col == $b.$table.$col, concat!(stringify!($table), ".", stringify!($col), " differs"));)+
    };
}

/// Float columns compared bit for bit (NaN marks nulls, and NaN != NaN).
fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn assert_identical(a: &Trace, b: &Trace) {
    same_columns!(a, b, packets: t_us, event, packet, flow, kind, size, payload, sent_us, seq, frame, link, reason);
    same_columns!(a, b, frames: flow, frame, capture_us, size, keyframe, packets, complete_us, freeze);
    same_columns!(a, b, controller: t_us, call, target_bps, pacing_bps);
    same_columns!(a, b, links: t_us, link, capacity_bps, queue_bytes, queue_limit_bytes);
    same_columns!(a, b, feedback: t_us, call, kind, size, rtt_us, packets_reported);
    assert_eq!(
        bits(&a.feedback.fraction_lost),
        bits(&b.feedback.fraction_lost),
        "feedback.fraction_lost differs"
    );
    let (ca, cb) = (&a.controller.columns, &b.controller.columns);
    assert_eq!(ca.len(), cb.len(), "controller tables have different columns");
    assert!(!ca.is_empty(), "gcc exposes its state as controller columns");
    for (x, y) in ca.iter().zip(cb) {
        assert_eq!(x.name, y.name);
        let equal = match (&x.data, &y.data) {
            (ColumnData::Int(u), ColumnData::Int(v)) => u == v,
            (ColumnData::Float(u), ColumnData::Float(v)) => bits(u) == bits(v),
            (ColumnData::Text(u), ColumnData::Text(v)) => u == v,
            _ => false,
        };
        assert!(equal, "controller.{} differs", x.name);
    }
}

#[test]
fn same_scenario_controller_and_seed_give_identical_traces() {
    let s = builtin_scenario("rfc8867-5.1");
    let a = run(&s, ControllerKind::Gcc, 42);
    let b = run(&s, ControllerKind::Gcc, 42);
    // A trace with something in it: 100 s of video and audio, feedback and controller rows.
    assert!(
        a.trace.packets.len() > 10_000 && a.trace.frames.len() > 2_000 && a.trace.controller.len() > 1_000
    );
    assert_eq!(a.events, b.events);
    assert_identical(&a.trace, &b.trace);
}

/// GoogCC built by a [`UserController`] (as rtcbench-py builds a Python class), for every call.
fn gcc_as_user_controller(built: Arc<Mutex<Vec<CallSetup>>>) -> ControllerChoice {
    ControllerChoice::User(UserController {
        name: "tests:GoogCc".into(),
        feedback: UserFeedback::Twcc,
        build: Box::new(move |setup: &CallSetup| {
            built.lock().expect("not poisoned").push(*setup);
            let cfg = GccConfig {
                min_rate: setup.min_rate,
                max_rate: setup.max_rate,
                start_rate: setup.start_rate,
                capped: true,
            };
            Box::new(GoogCc::new(cfg, setup.start))
        }),
    })
}

#[test]
fn a_user_controller_is_driven_exactly_like_the_built_in_one() {
    // GoogCC exercises every part of the interface: feedback, timeouts, pacing, probes, window.
    // Three calls that start at different times (RFC 8867 §5.4): one controller per call. The
    // built-in `gcc` floors a call at libwebrtc's 30 kbit/s of video plus its audio on the wire,
    // where a user's controller is told the scenario's minimum (`CallPlan::run_by`): video-only
    // calls with a 30 kbit/s minimum give both the same limits.
    for id in ["rfc8867-5.1", "rfc8867-5.4"] {
        let mut s = builtin_scenario(id);
        for call in &mut s.spec.calls {
            call.video.get_or_insert_with(Default::default).min = Some(Param::One(Bitrate::kbps(30)));
            call.audio = Some(AudioSpec { enabled: false, ..AudioSpec::default() });
        }
        let built = Arc::new(Mutex::new(Vec::new()));
        let user = simulate_with(&s, gcc_as_user_controller(built.clone()), 7, RunOptions::default())
            .unwrap_or_else(|e| panic!("{e}"));
        let builtin = run(&s, ControllerKind::Gcc, 7);
        assert_eq!(user.events, builtin.events, "{id}");
        assert_identical(&user.trace, &builtin.trace);
        assert_eq!(user.meta.controller, "tests:GoogCc");
        assert!(user.meta.calls.iter().all(|c| c.controller == "tests:GoogCc"));
        let built = built.lock().expect("not poisoned");
        assert_eq!(built.len(), s.spec.calls.len(), "{id}: one controller per call");
        for (i, setup) in built.iter().enumerate() {
            assert_eq!(setup.call, i as u32);
            assert!(setup.min_rate <= setup.start_rate && setup.start_rate < setup.max_rate, "{setup:?}");
            let start = s.spec.calls[i].start.unwrap_or_default();
            assert_eq!(
                setup.start.as_micros(),
                start.as_micros(),
                "{id}: call {i} starts when its spec says"
            );
        }
        // Each call has its own seed for the controller's draws.
        let seeds: std::collections::BTreeSet<u64> = built.iter().map(|b| b.seed).collect();
        assert_eq!(seeds.len(), built.len());
    }
}

#[test]
fn another_seed_gives_other_packets() {
    let s = builtin_scenario("rfc8867-5.1");
    let a = run(&s, ControllerKind::Gcc, 1);
    let b = run(&s, ControllerKind::Gcc, 2);
    // The encoder model draws frame sizes from the seed, so packet sizes differ ...
    assert_ne!(a.trace.frames.size, b.trace.frames.size, "frame sizes do not depend on the seed");
    assert_ne!(a.trace.packets.size, b.trace.packets.size, "packet sizes do not depend on the seed");
    // ... and the links draw jitter from it, so arrival times differ too.
    let arrivals = |o: &RunOutput| -> Vec<i64> {
        let p = &o.trace.packets;
        (0..p.len()).filter(|&i| p.event[i] == RECEIVED).map(|i| p.t_us[i] - p.sent_us[i]).take(200).collect()
    };
    assert_ne!(arrivals(&a), arrivals(&b), "one-way delays do not depend on the seed");
}

/// Every packet has one `sent` row, then at most one `received` or `dropped` row, which repeats
/// its flow, size and send time and does not precede it. A `recovered` row (no packet) rebuilds
/// a media packet of its flow that was dropped before, at most once.
fn assert_each_packet_told_once(out: &RunOutput) {
    let p = &out.trace.packets;
    let n = p.event.iter().filter(|&&e| e == SENT).count();
    let mut sent_row: Vec<Option<usize>> = vec![None; n];
    let mut fate_row: Vec<Option<usize>> = vec![None; n];
    let mut dropped_media = std::collections::BTreeSet::new();
    let mut recovered = std::collections::BTreeSet::new();
    for i in 0..p.len() {
        if p.event[i] == RECOVERED {
            assert_eq!((p.packet[i], p.kind[i], p.sent_us[i]), (-1, 0, p.t_us[i]), "recovered row {i}");
            let key = (p.flow[i], p.seq[i]);
            assert!(dropped_media.contains(&key), "recovered {key:?} was not dropped before");
            assert!(recovered.insert(key), "{key:?} recovered twice");
            continue;
        }
        if p.event[i] == DROPPED && p.kind[i] == 0 {
            dropped_media.insert((p.flow[i], p.seq[i]));
        }
        // Ids are handed out 0, 1, 2, ... as packets leave their senders.
        let id = usize::try_from(p.packet[i]).expect("packet ids are non-negative");
        assert!(id < n, "packet {id} has no sent row among {n}");
        match p.event[i] {
            SENT => {
                assert!(sent_row[id].is_none(), "packet {id} sent twice");
                assert!(fate_row[id].is_none(), "packet {id} arrived or was dropped before it was sent");
                assert_eq!(p.t_us[i], p.sent_us[i], "sent row of packet {id}");
                sent_row[id] = Some(i);
            }
            RECEIVED | DROPPED => {
                assert!(fate_row[id].is_none(), "packet {id} has two fates");
                let s = sent_row[id].unwrap_or_else(|| panic!("packet {id} ended before it was sent"));
                assert!(p.t_us[i] >= p.t_us[s], "packet {id} ended at {} us, before it was sent", p.t_us[i]);
                assert_eq!(p.sent_us[i], p.t_us[s], "packet {id} send time");
                assert_eq!(
                    (p.flow[i], p.size[i], p.kind[i]),
                    (p.flow[s], p.size[s], p.kind[s]),
                    "packet {id}"
                );
                assert_eq!(p.event[i] == DROPPED, p.reason[i] != 0, "packet {id}: a reason only on drops");
                fate_row[id] = Some(i);
            }
            e => panic!("unknown event code {e}"),
        }
    }
    assert!(sent_row.iter().all(Option::is_some));
    // The table is in time order.
    assert!(p.t_us.windows(2).all(|w| w[0] <= w[1]), "packet rows out of time order");
}

#[test]
fn every_packet_is_sent_once_and_ends_at_most_once() {
    let s = builtin_scenario("rfc8867-5.1");
    for cc in [ControllerKind::Gcc, ControllerKind::Fixed] {
        assert_each_packet_told_once(&run(&s, cc, 3));
    }
    // The seeds' scenarios as well: among them, runs where queues overflow and drop.
    let mut drops = 0;
    for (id, _, _) in builtin::BUILTIN.iter().filter(|(id, _, _)| *id != "rfc8867-5.1") {
        let out = run(&builtin_scenario(id), ControllerKind::Gcc, 3);
        assert_each_packet_told_once(&out);
        drops += out.trace.packets.event.iter().filter(|&&e| e == DROPPED).count();
    }
    eprintln!("{drops} drops across the seeds' scenarios");
    assert!(drops > 0, "no built-in scenario dropped a packet: the dropped-row checks ran on nothing");
}
