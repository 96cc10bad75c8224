//! A run is a pure function of config, inputs and seed: the same twice, the same when the cell
//! is woken at extra instants, and different with another seed. Idle TTIs cost nothing: the
//! cell's next deadline jumps over them (to a retransmission, an SR opportunity, a grant's
//! PUSCH, a delivery), and an idle cell has none.

mod lte_support;

use lte_support::{cell, drive, drive_with, Pkt, Run, Source, Traffic};
use rtcbench_net::radio::lte::{
    Cell, CellConfig, ChannelQuality, CqiReporting, CqiStep, Direction, HarqConfig, Port, SinrStep, UeConfig,
    UlAccess,
};
use rtcbench_units::{DataSize, Duration, Instant};

/// Four UEs with every kind of channel, SR access, CQI every 5 TTIs reported 2 late, a PDCP
/// discard timer and a small buffer, so that every mechanism draws or decides something.
fn busy_config() -> CellConfig {
    let fading = ChannelQuality::Fading { mean_sinr_db: 12.0, speed_kmh: 30.0, carrier_ghz: 2.0 };
    let sinr_trace = ChannelQuality::SinrTrace {
        steps: vec![
            SinrStep { at: Duration::ZERO, sinr_db: 20.0 },
            SinrStep { at: Duration::from_millis(700), sinr_db: 3.0 },
            SinrStep { at: Duration::from_millis(1500), sinr_db: 14.0 },
        ],
    };
    let cqi_trace = ChannelQuality::CqiTrace {
        steps: vec![
            CqiStep { at: Duration::ZERO, cqi: 9 },
            CqiStep { at: Duration::from_millis(400), cqi: 0 },
            CqiStep { at: Duration::from_millis(450), cqi: 13 },
        ],
    };
    let mut cfg = CellConfig::new(vec![
        UeConfig { dl: fading.clone(), ul: fading, sr_offset_ttis: None },
        UeConfig { dl: sinr_trace.clone(), ul: sinr_trace, sr_offset_ttis: Some(7) },
        UeConfig { dl: cqi_trace.clone(), ul: cqi_trace, sr_offset_ttis: None },
        UeConfig::fixed_cqi(11),
    ]);
    cfg.ul_access = UlAccess::scheduling_request();
    cfg.cqi = CqiReporting { period_ttis: 5, delay_ttis: 2 };
    cfg.rlc.buffer = DataSize::bytes(60_000);
    cfg.rlc.discard_timer = Some(Duration::from_millis(150));
    cfg
}

fn busy_sources() -> Vec<Source> {
    let cbr = |ue, dir, bytes, us: i64, start_us: i64| {
        let (interval, start) = (Duration::from_micros(us), Duration::from_micros(start_us));
        Source::new(ue, dir, Traffic::Cbr { bytes, interval, start, stop: Duration::from_secs(2) })
    };
    vec![
        cbr(1, Direction::Downlink, 1200, 900, 0),
        cbr(1, Direction::Uplink, 1200, 2100, 130),
        cbr(2, Direction::Downlink, 500, 7000, 2500),
        cbr(2, Direction::Uplink, 300, 13_000, 3300),
        cbr(3, Direction::Uplink, 800, 3000, 10),
        cbr(4, Direction::Downlink, 1400, 1100, 600),
        cbr(4, Direction::Uplink, 100, 50_000, 7100),
    ]
}

type Trace = (Vec<(Instant, Port, u16, bool, u64)>, Vec<(Port, u16, u64, String)>, Vec<u64>, Vec<String>);

fn trace(run: &Run, cell: &Cell<Pkt>) -> Trace {
    let key = |p: &Pkt| (p.ue, p.dir == Direction::Uplink, p.seq);
    (
        run.delivered.iter().map(|(t, port, p)| (*t, *port, key(p).0, key(p).1, key(p).2)).collect(),
        run.dropped.iter().map(|(port, p, r)| (*port, p.ue, p.seq, r.as_str().to_string())).collect(),
        run.refused.iter().map(|p| p.seq).collect(),
        (1..=4).map(|ue| format!("{:?}", cell.stats(Port::ue(ue)))).collect(),
    )
}

fn busy_run(seed: u64, extra: &[Instant]) -> Trace {
    let mut c = cell(busy_config(), seed);
    let run = drive_with(&mut c, &busy_sources(), Instant::from_millis(2500), extra, |_, _| {});
    trace(&run, &c)
}

#[test]
fn the_same_run_twice_and_with_extra_wakeups() {
    let a = busy_run(42, &[]);
    // Every mechanism did something.
    assert!(a.0.len() > 3000, "{} delivered", a.0.len());
    assert!(a.1.iter().any(|d| d.3 == "lifetime"), "discards");
    assert!(!a.2.is_empty(), "refusals");
    assert_eq!(a, busy_run(42, &[]));
    // Woken every 370 µs and at every TTI boundary besides its own deadlines.
    let mut extra: Vec<Instant> = (0..2500 * 1000 / 370).map(|i| Instant::from_micros(i * 370)).collect();
    extra.extend((0..2500).map(Instant::from_millis));
    extra.sort();
    assert_eq!(a, busy_run(42, &extra));
    assert_ne!(a.0, busy_run(43, &[]).0, "another seed, other fading and HARQ draws");
}

#[test]
fn an_idle_cell_has_no_deadline() {
    let mut c = cell(busy_config(), 1);
    assert_eq!(c.poll_timeout(), None);
    c.on_timeout(Instant::from_secs(10));
    assert_eq!(c.poll_timeout(), None);
}

#[test]
fn every_packet_is_delivered_or_dropped_and_the_cell_goes_idle() {
    // Over seeds and variants (ideal or SR access, PF or RR, heavy HARQ losses): once the
    // sources stop, everything accepted leaves, delivered or dropped, and then nothing is left
    // to wake for (channel traces and fading are functions of time, evaluated when needed).
    for seed in 0..8 {
        for variant in 0..4 {
            let mut cfg = busy_config();
            if variant & 1 == 1 {
                cfg.ul_access = UlAccess::Ideal;
                cfg.dl_scheduler = rtcbench_net::radio::lte::DlScheduler::RoundRobin;
            }
            if variant & 2 == 2 {
                cfg.harq = HarqConfig { bler: vec![0.3, 0.3, 0.3] };
            }
            let mut c = cell(cfg, seed);
            let run = drive(&mut c, &busy_sources(), Instant::from_secs(4));
            assert_eq!(c.poll_timeout(), None, "seed {seed}, variant {variant}");
            for ue in 1..=4u16 {
                for dir in [Direction::Downlink, Direction::Uplink] {
                    let s = c.stats(Port::ue(ue));
                    let s = if dir == Direction::Downlink { s.dl } else { s.ul };
                    let out = run.delivered.iter().filter(|(_, _, p)| p.ue == ue && p.dir == dir).count()
                        + run.dropped.iter().filter(|(_, p, _)| p.ue == ue && p.dir == dir).count();
                    assert_eq!(
                        out as u64, s.packets_queued,
                        "seed {seed}, variant {variant}, UE {ue} {dir:?}"
                    );
                    assert_eq!(
                        s.delivered_packets + s.discard_drops + s.harq_failure_drops,
                        s.packets_queued
                    );
                    assert!(c.queue_bytes(Port::ue(ue), dir).is_zero());
                }
            }
            assert!(run.in_order());
        }
    }
}

fn one_ue(bler: Vec<f64>, access: UlAccess) -> Cell<Pkt> {
    let mut cfg = CellConfig::new(vec![UeConfig::fixed_cqi(15)]);
    cfg.harq = HarqConfig { bler };
    cfg.ul_access = access;
    cell(cfg, 1)
}

fn pkt(dir: Direction, at: Instant) -> Pkt {
    Pkt { ue: 1, dir, seq: 0, size: DataSize::bytes(100), sent: at }
}

#[test]
fn deadlines_jump_over_idle_ttis() {
    // A downlink block that fails once: TTI 1, then nothing until its retransmission in TTI 9,
    // then the delivery at 10 ms.
    let mut c = one_ue(vec![1.0, 0.0], UlAccess::Ideal);
    let t = Instant::from_micros(500);
    c.push(t, Port::ENB, Port::ue(1), pkt(Direction::Downlink, t)).unwrap();
    let mut wakes = Vec::new();
    while let Some(at) = c.poll_timeout() {
        wakes.push(at.as_micros() / 1000);
        c.on_timeout(at);
        while c.poll_output(at).is_some() {}
    }
    assert_eq!(wakes, [1, 9, 10]);
    // An uplink packet at 3.5 ms with SRs every 10 ms (offset 0): the SR in TTI 10, the grant
    // in 14, the PUSCH in 18, at the eNB at 19 ms.
    let mut c = one_ue(vec![0.0], UlAccess::scheduling_request());
    let t = Instant::from_micros(3500);
    c.push(t, Port::ue(1), Port::ENB, pkt(Direction::Uplink, t)).unwrap();
    let mut wakes = Vec::new();
    while let Some(at) = c.poll_timeout() {
        wakes.push(at.as_micros() / 1000);
        c.on_timeout(at);
        while c.poll_output(at).is_some() {}
    }
    assert_eq!(wakes, [10, 14, 18, 19]);
    assert_eq!(c.stats(Port::ue(1)).ul.scheduling_requests, 1);
}

#[test]
fn a_push_at_a_tti_boundary_waits_for_the_next_tti_either_way() {
    // Whether the caller wakes the cell at 5 ms before pushing there or not, the packet goes in
    // TTI 6 (the push runs TTI 5 first).
    for wake_first in [false, true] {
        let mut c = one_ue(vec![0.0], UlAccess::Ideal);
        let t0 = Instant::from_micros(4200);
        c.push(t0, Port::ENB, Port::ue(1), pkt(Direction::Downlink, t0)).unwrap();
        let t = Instant::from_millis(5);
        if wake_first {
            c.on_timeout(t);
        }
        c.push(t, Port::ENB, Port::ue(1), Pkt { seq: 1, ..pkt(Direction::Downlink, t) }).unwrap();
        c.on_timeout(Instant::from_millis(20));
        let out: Vec<_> = std::iter::from_fn(|| c.poll_output(Instant::from_millis(20)))
            .map(|(t, _, p)| (t, p.seq))
            .collect();
        assert_eq!(
            out,
            [(Instant::from_millis(6), 0), (Instant::from_millis(7), 1)],
            "wake first: {wake_first}"
        );
    }
}

#[test]
#[should_panic(expected = "goes eNB → UE or UE → eNB")]
fn ue_to_ue_is_a_programming_error() {
    let mut c = cell(CellConfig::new(vec![UeConfig::fixed_cqi(15); 2]), 1);
    let _ = c.push(Instant::ZERO, Port::ue(1), Port::ue(2), pkt(Direction::Uplink, Instant::ZERO));
}
