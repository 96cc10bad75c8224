//! A [`Simulation`] advanced in steps is the run [`simulate`] makes in one go, and the call whose
//! rate is set from outside ([`RunOptions::external`]) sends at that rate and reports what its
//! feedback said; a call whose estimates are set from outside ([`RunOptions::agent`]) runs as a
//! learned policy does.

use std::sync::Arc;

use rtcbench_cc::learned::{Agent, Decision, Feature, LearnedPolicy, Policy, PolicySource, OBSERVATION_LEN};
use rtcbench_cc::ControllerKind;
use rtcbench_scenario::{builtin, load, Scenario};
use rtcbench_sim::trace::{ColumnData, Trace};
use rtcbench_sim::{simulate, simulate_with, ControllerChoice, RunOptions, RunOutput, Simulation};
use rtcbench_units::{Bitrate, Duration, Instant};

const RECEIVED: u8 = 1;

fn builtin_scenario(id: &str, sets: &[&str]) -> Scenario {
    let (text, origin) = builtin::find(id).unwrap_or_else(|| panic!("no built-in {id}"));
    let sets: Vec<String> = sets.iter().map(|s| (*s).to_string()).collect();
    load(text, &origin, &sets).unwrap_or_else(|e| panic!("{e}")).remove(0)
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Every column of every table, floats bit for bit.
fn assert_identical(a: &Trace, b: &Trace) {
    let p = (&a.packets, &b.packets);
    assert!(p.0.t_us == p.1.t_us && p.0.event == p.1.event && p.0.packet == p.1.packet, "packets differ");
    assert!(p.0.flow == p.1.flow && p.0.size == p.1.size && p.0.sent_us == p.1.sent_us, "packets differ");
    assert!(p.0.seq == p.1.seq && p.0.link == p.1.link && p.0.reason == p.1.reason, "packets differ");
    let f = (&a.frames, &b.frames);
    assert!(f.0.capture_us == f.1.capture_us && f.0.size == f.1.size, "frames differ");
    assert!(f.0.complete_us == f.1.complete_us && f.0.freeze == f.1.freeze, "frames differ");
    assert!(f.0.flow == f.1.flow && f.0.frame == f.1.frame && f.0.packets == f.1.packets, "frames differ");
    assert!(f.0.keyframe == f.1.keyframe && f.0.height == f.1.height, "frames differ");
    let c = (&a.controller, &b.controller);
    assert!(c.0.t_us == c.1.t_us && c.0.call == c.1.call, "controller rows differ");
    assert!(c.0.target_bps == c.1.target_bps && c.0.pacing_bps == c.1.pacing_bps, "controller differs");
    assert_eq!(c.0.columns.len(), c.1.columns.len());
    for (x, y) in c.0.columns.iter().zip(&c.1.columns) {
        let equal = match (&x.data, &y.data) {
            (ColumnData::Int(u), ColumnData::Int(v)) => u == v,
            (ColumnData::Float(u), ColumnData::Float(v)) => bits(u) == bits(v),
            (ColumnData::Text(u), ColumnData::Text(v)) => u == v,
            _ => false,
        };
        assert!(x.name == y.name && equal, "controller.{} differs", x.name);
    }
    let l = (&a.links, &b.links);
    assert!(l.0.t_us == l.1.t_us && l.0.queue_bytes == l.1.queue_bytes, "links differ");
    let fb = (&a.feedback, &b.feedback);
    assert!(fb.0.t_us == fb.1.t_us && fb.0.rtt_us == fb.1.rtt_us, "feedback differs");
    assert_eq!(bits(&fb.0.fraction_lost), bits(&fb.1.fraction_lost), "feedback differs");
}

/// Runs in steps of `step`, and with a few irregular steps first (some of them backwards).
fn stepped(s: &Scenario, cc: ControllerKind, seed: u64, step: Duration, options: RunOptions) -> RunOutput {
    let mut sim = Simulation::new(s, cc.into(), seed, options).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((sim.now(), sim.events(), sim.is_done()), (Instant::ZERO, 0, false));
    for ms in [0, 7, 7, 3, 1000, 1001] {
        sim.run_until(Instant::from_millis(ms));
    }
    assert_eq!(sim.now(), Instant::from_millis(1001));
    while !sim.is_done() {
        sim.run_until(sim.now() + step);
    }
    assert_eq!(sim.now(), sim.end());
    // Past the end: nothing more happens.
    let events = sim.events();
    sim.run_until(sim.end() + Duration::from_secs(10));
    assert_eq!(sim.events(), events);
    sim.finish()
}

#[test]
fn a_run_in_steps_is_the_run_in_one_go() {
    for (id, cc) in [
        ("rfc8867-5.1", ControllerKind::Gcc),
        ("rfc8867-5.1", ControllerKind::Scream),
        // A call and TCP: every kind of element has events near the step boundaries.
        ("rfc8867-5.6", ControllerKind::Nada),
    ] {
        let s = builtin_scenario(id, &[]);
        let whole = simulate(&s, cc, 5).unwrap_or_else(|e| panic!("{e}"));
        for step in [Duration::from_millis(60), Duration::from_micros(12_345)] {
            let parts = stepped(&s, cc, 5, step, RunOptions::default());
            assert_eq!(parts.events, whole.events, "{id} {cc:?} in steps of {step}");
            assert_identical(&parts.trace, &whole.trace);
        }
    }
}

/// `into` with `more`'s rows appended, table by table.
fn append(into: &mut Trace, mut more: Trace) {
    let (p, q) = (&mut into.packets, &mut more.packets);
    p.t_us.append(&mut q.t_us);
    p.event.append(&mut q.event);
    p.packet.append(&mut q.packet);
    p.flow.append(&mut q.flow);
    p.kind.append(&mut q.kind);
    p.size.append(&mut q.size);
    p.payload.append(&mut q.payload);
    p.sent_us.append(&mut q.sent_us);
    p.seq.append(&mut q.seq);
    p.frame.append(&mut q.frame);
    p.link.append(&mut q.link);
    p.reason.append(&mut q.reason);
    p.ecn.append(&mut q.ecn);
    let (f, g) = (&mut into.frames, &mut more.frames);
    f.flow.append(&mut g.flow);
    f.frame.append(&mut g.frame);
    f.capture_us.append(&mut g.capture_us);
    f.size.append(&mut g.size);
    f.keyframe.append(&mut g.keyframe);
    f.width.append(&mut g.width);
    f.height.append(&mut g.height);
    f.packets.append(&mut g.packets);
    f.complete_us.append(&mut g.complete_us);
    f.freeze.append(&mut g.freeze);
    let (c, d) = (&mut into.controller, &mut more.controller);
    c.t_us.append(&mut d.t_us);
    c.call.append(&mut d.call);
    c.target_bps.append(&mut d.target_bps);
    c.pacing_bps.append(&mut d.pacing_bps);
    if c.columns.is_empty() {
        c.columns = std::mem::take(&mut d.columns);
    } else {
        assert_eq!(c.columns.len(), d.columns.len(), "every take has the controller's columns");
        for (x, y) in c.columns.iter_mut().zip(&mut d.columns) {
            match (&mut x.data, &mut y.data) {
                (ColumnData::Int(u), ColumnData::Int(v)) => u.append(v),
                (ColumnData::Float(u), ColumnData::Float(v)) => u.append(v),
                (ColumnData::Text(u), ColumnData::Text(v)) => u.append(v),
                _ => panic!("controller.{} changed its kind", x.name),
            }
        }
    }
    let (l, m) = (&mut into.links, &mut more.links);
    l.t_us.append(&mut m.t_us);
    l.link.append(&mut m.link);
    l.capacity_bps.append(&mut m.capacity_bps);
    l.queue_bytes.append(&mut m.queue_bytes);
    l.queue_limit_bytes.append(&mut m.queue_limit_bytes);
    let (b, e) = (&mut into.feedback, &mut more.feedback);
    b.t_us.append(&mut e.t_us);
    b.call.append(&mut e.call);
    b.kind.append(&mut e.kind);
    b.size.append(&mut e.size);
    b.rtt_us.append(&mut e.rtt_us);
    b.fraction_lost.append(&mut e.fraction_lost);
    b.packets_reported.append(&mut e.packets_reported);
    b.ce_reported.append(&mut e.ce_reported);
}

#[test]
fn a_run_taken_in_slices_is_the_run_in_one_go() {
    // The trace taken after every slice of work, as a long run is written out: the same rows in
    // the same order, although frame rows wait for their packets (loss, pauses, deep queues).
    for (id, sets, cc, slice) in [
        ("rfc8867-5.1", &[][..], ControllerKind::Scream, 300),
        ("rfc8867-5.8", &[][..], ControllerKind::Nada, 2_345),
        ("seed003-loss", &["loss=0.2"][..], ControllerKind::Gcc, 1_000),
        ("rfc8867-5.6", &["queue=1000ms", "tcp_cc=cubic"][..], ControllerKind::Gcc, 777),
    ] {
        let s = builtin_scenario(id, sets);
        let whole = simulate(&s, cc, 2).unwrap_or_else(|e| panic!("{e}"));
        let options = RunOptions { capture: true, ..RunOptions::default() };
        let mut sim = Simulation::new(&s, cc.into(), 2, options).unwrap_or_else(|e| panic!("{e}"));
        let mut taken = Trace::default();
        let (mut takes, mut held_frames, mut captured) = (0, 0, 0);
        loop {
            let done = sim.run_for(slice);
            let part = sim.take_trace();
            // What stays behind is frames whose packets are in flight, and those after them.
            held_frames = held_frames.max(sim.trace_rows());
            takes += 1;
            captured += sim.take_capture().len();
            append(&mut taken, part);
            if done {
                break;
            }
        }
        assert!(takes > 50, "{id}: {takes} slices");
        assert_eq!(sim.events(), whole.events, "{id}");
        assert_eq!(sim.trace_rows(), 0, "{id}: everything was taken");
        assert_eq!(captured, whole.trace.packets.event.iter().filter(|&&e| e == 0).count());
        assert_identical(&taken, &whole.trace);
        // A frame row is final once it or a later frame of its flow was rendered; rows are taken
        // in order up to the first that is not. So at any time the rows held are those encoded
        // after the first unfinished row: at most the rows captured between a row's capture and
        // the instant it became final. That bound, from the whole run, is what the slices must
        // meet (a lost frame that waits for the 3 s keyframe timeout holds back what is
        // captured meanwhile).
        let f = &whole.trace.frames;
        let mut final_us = vec![i64::MAX; f.flow.len()];
        let mut flows: Vec<i32> = f.flow.clone();
        flows.sort_unstable();
        flows.dedup();
        for flow in flows {
            let mut later = i64::MAX;
            for k in (0..f.flow.len()).rev().filter(|&k| f.flow[k] == flow) {
                if f.render_us[k] >= 0 {
                    later = later.min(f.render_us[k]);
                }
                final_us[k] = later;
            }
        }
        let bound = (0..f.flow.len())
            .map(|k| f.capture_us[k + 1..].iter().take_while(|&&c| c < final_us[k]).count() + 1)
            .max()
            .unwrap_or(0);
        eprintln!("{id}: {takes} slices of {slice} events, at most {held_frames} frame rows held back (bound {bound})");
        assert!(held_frames <= bound, "{id}: {held_frames} frame rows held back, bound {bound}");
        // And the bound itself stays about a queue's worth of frames beyond a 3 s stall of two
        // calls, not the run's. (A sender that stops sending holds its frames back until the end:
        // SCReAM starved on rfc8867-5.6 keeps packets in its pacer, and they might still leave.)
        assert!(held_frames < 300, "{id}: {held_frames} frame rows held back");
    }
}

#[test]
fn an_external_call_left_alone_is_the_fixed_controller() {
    // ExternalRate holds the start rate and is paced as `fixed` is (2.5 × target): the same run,
    // whatever the step, as long as nobody changes the rate.
    let s = builtin_scenario("rfc8867-5.1", &[]);
    let fixed = simulate(&s, ControllerKind::Fixed, 3).unwrap_or_else(|e| panic!("{e}"));
    let options = RunOptions { external: Some(0), ..RunOptions::default() };
    let mut sim =
        Simulation::new(&s, ControllerKind::Gcc.into(), 3, options).unwrap_or_else(|e| panic!("{e}"));
    let start = sim.call_setup(0).expect("call 0").start_rate;
    while !sim.is_done() {
        sim.run_until(sim.now() + Duration::from_millis(60));
        sim.set_external_target(start); // the rate in force: changes nothing
    }
    let external = sim.finish();
    assert_eq!(external.events, fixed.events);
    assert_identical(&external.trace, &fixed.trace);
    assert_eq!(external.meta.calls[0].controller, "external");
    assert_eq!(external.meta.controller, "gcc", "the run's controller, for the other calls");
}

#[test]
fn an_external_call_sends_at_the_rate_it_is_given() {
    let s = builtin_scenario("rfc8867-5.1", &["duration=30s"]);
    let options = RunOptions { external: Some(0), ..RunOptions::default() };
    let mut sim =
        Simulation::new(&s, ControllerKind::Gcc.into(), 1, options).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sim.external_call(), Some(0));
    let setup = *sim.call_setup(0).expect("call 0");
    // RFC 8867 §4.3 defaults: video 150-1500 kbit/s plus 20 kbit/s audio.
    assert_eq!((setup.min_rate, setup.max_rate), (Bitrate::kbps(170), Bitrate::kbps(1520)));
    // 400 kbit/s for 15 s, then 800 kbit/s (below the 1 Mbit/s capacity).
    let mut intervals = Vec::new();
    while !sim.is_done() {
        let target = if sim.now() < Instant::from_secs(15) { Bitrate::kbps(400) } else { Bitrate::kbps(800) };
        sim.set_external_target(target);
        sim.run_until(sim.now() + Duration::from_millis(60));
        intervals.push(sim.take_external_interval());
    }
    // Intervals tile the run.
    assert_eq!(intervals[0].start, Instant::ZERO);
    assert!(intervals.windows(2).all(|w| w[0].end == w[1].start));
    assert_eq!(intervals.last().expect("intervals").end, sim.end());
    let mean = |from: i64, to: i64, f: &dyn Fn(&rtcbench_cc::external::IntervalStats) -> f64| {
        let within: Vec<f64> = intervals
            .iter()
            .filter(|i| i.start >= Instant::from_secs(from) && i.end <= Instant::from_secs(to))
            .map(f)
            .collect();
        within.iter().sum::<f64>() / within.len() as f64
    };
    for (from, to, rate) in [(5, 15, 400.0), (20, 30, 800.0)] {
        let sent = mean(from, to, &|i| i.send_rate.as_kbps_f64());
        let received = mean(from, to, &|i| i.receive_rate.as_kbps_f64());
        let target = mean(from, to, &|i| i.target.as_kbps_f64());
        eprintln!("{from}-{to} s: target {target:.0}, sent {sent:.0}, received {received:.0} kbit/s");
        assert!((target - rate).abs() < 1e-9);
        // The encoder model varies around its target; the wire rate follows it within 10 %.
        assert!((sent / rate - 1.0).abs() < 0.1, "sent {sent:.0} kbit/s for a target of {rate}");
        assert!((received / sent - 1.0).abs() < 0.05, "received {received:.0} of {sent:.0} kbit/s");
        // Below capacity: no loss, a queue of frame bursts and jitter only, an RTT of 2 × 50 ms and more.
        assert!(mean(from, to, &|i| i.loss_ratio()) == 0.0);
        let qdelay = mean(from, to, &|i| i.queuing_delay_mean.map_or(0.0, |d| d.as_millis_f64()));
        let rtt = mean(from, to, &|i| i.rtt.map_or(0.0, |d| d.as_millis_f64()));
        eprintln!("  queuing delay {qdelay:.1} ms, rtt {rtt:.1} ms");
        assert!(qdelay < 50.0, "queuing delay {qdelay:.1} ms");
        assert!((100.0..160.0).contains(&rtt), "rtt {rtt:.1} ms");
    }
    // The trace tells the same story: the media the receiver got in 20-30 s.
    let out = sim.finish();
    let p = &out.trace.packets;
    let received: i64 = (0..p.len())
        .filter(|&i| {
            p.event[i] == RECEIVED && p.flow[i] <= 1 && (20_000_000..30_000_000).contains(&p.t_us[i])
        })
        .map(|i| i64::from(p.size[i]))
        .sum();
    let trace_kbps = received as f64 * 8.0 / 10.0 / 1e3;
    let seen = mean(20, 30, &|i| i.receive_rate.as_kbps_f64());
    assert!(
        (seen / trace_kbps - 1.0).abs() < 0.03,
        "feedback says {seen:.0}, the trace {trace_kbps:.0} kbit/s"
    );
}

#[test]
fn an_external_call_over_capacity_sees_its_queue_and_its_losses() {
    // 2 Mbit/s into the 1 Mbit/s bottleneck with a 300 ms drop-tail queue.
    let s = builtin_scenario("rfc8867-5.1", &["duration=20s"]);
    let options = RunOptions { external: Some(0), ..RunOptions::default() };
    let mut sim =
        Simulation::new(&s, ControllerKind::Gcc.into(), 1, options).unwrap_or_else(|e| panic!("{e}"));
    sim.run_until(Instant::from_secs(5));
    let calm = sim.take_external_interval();
    sim.set_external_target(Bitrate::kbps(1500));
    sim.run_until(Instant::from_secs(15));
    sim.take_external_interval();
    sim.run_until(Instant::from_secs(16));
    let congested = sim.take_external_interval();
    eprintln!("{calm:?}\n{congested:?}");
    assert_eq!(calm.packets_lost, 0);
    assert!(congested.loss_ratio() > 0.1, "{congested:?}");
    let full = congested.queuing_delay_mean.expect("packets arrived");
    assert!(full > Duration::from_millis(200), "queuing delay {full}");
    assert!(congested.rtt.expect("reports") > calm.rtt.expect("reports") + Duration::from_millis(200));
    // The receiver gets the capacity, not what was sent.
    assert!((congested.receive_rate.as_kbps_f64() - 1000.0).abs() < 100.0, "{}", congested.receive_rate);
}

#[test]
fn other_calls_run_the_run_s_controller() {
    let s = builtin_scenario("rfc8867-5.4", &[]);
    let options = RunOptions { external: Some(1), ..RunOptions::default() };
    let sim = Simulation::new(&s, ControllerKind::Nada.into(), 1, options).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = sim.meta().calls.iter().map(|c| c.controller.as_str()).collect();
    assert_eq!(names, ["nada", "external", "nada"]);
}

#[test]
fn an_external_call_the_scenario_does_not_have_is_an_error() {
    let s = builtin_scenario("rfc8867-5.1", &[]);
    let options = RunOptions { external: Some(1), ..RunOptions::default() };
    let Err(e) = Simulation::new(&s, ControllerKind::Gcc.into(), 1, options) else {
        panic!("call 1 of a one-call scenario was accepted");
    };
    assert!(e.to_string().contains("call 1, but the scenario has 1 call"), "{e}");
}

#[test]
fn a_streamed_run_hands_out_the_run_in_pieces_and_writes_its_capture() {
    use rtcbench_sim::streamed::{Message, StreamOptions, StreamedRun};
    let s = builtin_scenario("rfc8867-5.6", &["queue=300ms", "tcp_cc=newreno"]);
    let whole = simulate_with(
        &s,
        ControllerKind::Gcc.into(),
        4,
        RunOptions { capture: true, ..RunOptions::default() },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let dir = std::env::temp_dir().join(format!("rtcbench-streamed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("run.pcap");
    let stream =
        StreamOptions { slice_events: 5_000, piece_rows: 10_000, pcap: Some(pcap.clone()), hold: None };
    let run = StreamedRun::start(s, ControllerKind::Gcc.into(), 4, RunOptions::default(), stream).unwrap();
    let (mut taken, mut pieces) = (Trace::default(), 0);
    let events = loop {
        match run.next(std::time::Duration::from_secs(30)).expect("a message") {
            Message::Started(meta) => assert_eq!(meta.scenario, "rfc8867-5.6"),
            Message::Piece(t) => {
                pieces += 1;
                append(&mut taken, *t);
            }
            Message::Done { events, simulating_s } => {
                assert!(simulating_s > 0.0);
                break events;
            }
            Message::Failed(e) => panic!("{e}"),
        }
    };
    assert!(pieces > 5, "{pieces} pieces");
    assert_eq!(events, whole.events);
    assert_identical(&taken, &whole.trace);
    let written = std::fs::read(&pcap).unwrap();
    let expected = rtcbench_sim::write_pcap(Vec::new(), &whole.capture).unwrap();
    assert!(written == expected, "the capture written in pieces is the capture of the whole run");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no temporary file left");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_streamed_run_stops_within_a_slice_and_leaves_no_capture() {
    use rtcbench_sim::streamed::{Message, StreamOptions, StreamedRun};
    // A day of the 5.6 case would take minutes to simulate.
    let s = builtin_scenario("rfc8867-5.6", &["duration=86400s", "queue=300ms", "tcp_cc=cubic"]);
    let dir = std::env::temp_dir().join(format!("rtcbench-stopped-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stream = StreamOptions { pcap: Some(dir.join("run.pcap")), ..StreamOptions::default() };
    let mut run =
        StreamedRun::start(s, ControllerKind::Gcc.into(), 1, RunOptions::default(), stream).unwrap();
    let mut pieces = 0;
    while pieces < 2 {
        match run.next(std::time::Duration::from_secs(30)).expect("a message") {
            Message::Piece(_) => pieces += 1,
            Message::Started(_) => {}
            _ => panic!("the run cannot be over yet"),
        }
    }
    let t0 = std::time::Instant::now();
    run.stop();
    let took = t0.elapsed();
    assert!(took < std::time::Duration::from_millis(500), "stopping took {took:?}");
    assert!(run.next(std::time::Duration::ZERO).is_none(), "nothing after a stop");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "the partial capture is removed");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_run_whose_thread_dies_says_so_instead_of_keeping_its_caller_waiting() {
    use rtcbench_sim::streamed::{Message, RunFailure, StreamOptions, StreamedRun};
    // A run that panics in its first slice of work (standing for a bug anywhere in the
    // simulation): its caller gets one Failed(Ended), then nothing, rather than waiting for ever.
    let s = builtin_scenario("rfc8867-5.1", &["delay=50ms", "mechanism=link-rate"]);
    let mut slices = 0;
    let hold: Box<rtcbench_sim::streamed::Hold> = Box::new(move |work: &mut dyn FnMut()| {
        slices += 1;
        assert!(slices < 2, "a slice that panics");
        work();
    });
    let stream = StreamOptions { hold: Some(hold), ..StreamOptions::default() };
    let run = StreamedRun::start(s, ControllerKind::Gcc.into(), 1, RunOptions::default(), stream).unwrap();
    let mut messages = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        match run.next(std::time::Duration::from_millis(100)) {
            Some(Message::Failed(RunFailure::Ended)) => {
                messages.push("ended");
                break;
            }
            Some(Message::Started(_)) => messages.push("started"),
            Some(_) => messages.push("other"),
            None => {}
        }
    }
    assert_eq!(messages.last(), Some(&"ended"), "{messages:?}");
    assert!(run.next(std::time::Duration::ZERO).is_none(), "nothing after the failure");
}

#[test]
fn the_links_table_grows_once_rather_than_by_doubling() {
    // Ten LTE buffers and two links, sampled every 10 ms for 20 s and never at a capacity change:
    // room for the rows of every sample to come is made at once, so the columns end exactly full.
    let text = r#"
        id = "reserve"
        duration = "20s"
        [[links]]
        name = "up"
        from = "ENB"
        to = "W"
        capacity = "100Mbps"
        delay = "10ms"
        queue = { size = "100ms" }
        [[links]]
        name = "down"
        from = "W"
        to = "ENB"
        capacity = "100Mbps"
        delay = "10ms"
        queue = { size = "100ms" }
        [[lte]]
        name = "cell"
        enb = "ENB"
        ues = [
            { node = "U1", cqi = 9 }, { node = "U2", cqi = 9 }, { node = "U3", cqi = 9 },
            { node = "U4", cqi = 9 }, { node = "U5", cqi = 9 },
        ]
        [[calls]]
        from = "W"
        to = "U1"
    "#;
    let s = load(text, "reserve.toml", &[]).unwrap_or_else(|e| panic!("{e}")).remove(0);
    let links = simulate(&s, ControllerKind::Fixed, 1).expect("runs").trace.links;
    assert_eq!(links.len(), 12 * 2001, "a row per link and buffer, every 10 ms from 0 to 20 s");
    assert_eq!(links.capacity(), links.len());
}

/// A policy of the test's own: 1.25 × the latest short interval's receiving rate, at least
/// 300 kbit/s.
fn scripted_estimate(obs: &[f32; OBSERVATION_LEN]) -> f64 {
    (1.25 * f64::from(obs[Feature::ReceivingRate.index(false, 0)])).max(300e3)
}

struct Scripted;

impl Policy for Scripted {
    fn decide(&mut self, obs: &[f32; OBSERVATION_LEN]) -> Result<Decision, String> {
        Ok(Decision { estimate: scripted_estimate(obs), spread: None })
    }
}

impl PolicySource for Scripted {
    fn instance(&self) -> Result<Box<dyn Policy>, String> {
        Ok(Box::new(Self))
    }
}

#[test]
fn an_agent_that_decides_as_a_policy_makes_the_policys_run() {
    // The gym's path (the call's estimates set from outside, one per 60 ms decision, from the
    // observation read before it) against the same policy run as `--cc onnx:` runs a model.
    let s = builtin_scenario("rfc8867-5.1", &["duration=20s"]);
    let learned = ControllerChoice::Learned(LearnedPolicy::new("scripted", Arc::new(Scripted)));
    let policy_run = simulate_with(&s, learned, 2, RunOptions::default()).unwrap_or_else(|e| panic!("{e}"));

    let agent = Agent::new();
    let options = RunOptions { external: Some(0), agent: Some(agent.clone()), ..RunOptions::default() };
    let mut sim =
        Simulation::new(&s, ControllerKind::Gcc.into(), 2, options).unwrap_or_else(|e| panic!("{e}"));
    let mut decisions = 0;
    while let Some((at, obs)) = sim.next_observation() {
        if at > sim.end() {
            break;
        }
        // Every event before the decision, none at it: a packet arriving at `at` is not seen.
        sim.run_until(at - Duration::from_micros(1));
        let (again, obs_now) = sim.next_observation().expect("the policy decides");
        assert_eq!((again, sim.next_decision()), (at, Some(at)));
        if decisions > 0 {
            assert_ne!(obs, obs_now, "packets arrived during the step");
        }
        agent.set(scripted_estimate(&obs_now));
        sim.run_until(at);
        decisions += 1;
    }
    assert_eq!(sim.agent_failure(), None);
    assert!(decisions > 300, "{decisions} decisions in 20 s");
    let agent_run = sim.finish();
    assert_eq!(agent_run.events, policy_run.events);
    assert_identical(&agent_run.trace, &policy_run.trace);
    assert_eq!(agent_run.meta.calls[0].controller, "external");
}

#[test]
fn an_agent_that_skips_a_decision_stops_deciding() {
    let s = builtin_scenario("rfc8867-5.1", &["duration=5s"]);
    let options = RunOptions { external: Some(0), agent: Some(Agent::new()), ..RunOptions::default() };
    let mut sim =
        Simulation::new(&s, ControllerKind::Gcc.into(), 2, options).unwrap_or_else(|e| panic!("{e}"));
    sim.run_until(Instant::from_secs(1));
    let failure = sim.agent_failure().expect("the first decision had no estimate");
    assert!(failure.contains("the decision at 0.060 s failed: no estimate was set"), "{failure}");
    assert_eq!(sim.next_observation(), None);
}
