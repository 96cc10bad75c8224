//! Queue disciplines on a real [`Link`], fed by constant-rate packet sources that never react
//! to drops or marks (no controllers): each AQM against the behaviour its RFC promises.
//!
//! Every link here is 10 Mbit/s with no propagation delay, no jitter and no random loss, so a
//! packet's queueing delay is its exit time less its sending time less its serialisation time.

use rtcbench_cc::feedback::Ecn;
use rtcbench_sim::link::capacity::CapacitySchedule;
use rtcbench_sim::link::loss::LossModel;
use rtcbench_sim::link::{Link, LinkConfig, QueueLimit};
use rtcbench_sim::packet::{DropReason, FlowId, Packet, PacketKind};
use rtcbench_sim::queue::{CodelConfig, FqCodelConfig, PieConfig, QueueDiscipline, StepConfig};
use rtcbench_sim::rng::rng_for;
use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

const CAPACITY: Bitrate = Bitrate::mbps(10);
/// A buffer far larger than any AQM lets the queue grow: 500 ms at 10 Mbit/s.
const BIG_BUFFER: QueueLimit = QueueLimit::Time(Duration::from_millis(500));

/// Sends `burst` packets of `size` every `interval` from time zero.
#[derive(Clone, Copy)]
struct Source {
    flow: FlowId,
    size: DataSize,
    interval: Duration,
    burst: u32,
    ecn: Ecn,
}

impl Source {
    /// Packets of `bytes` at `rate`, one at a time.
    fn cbr(flow: FlowId, rate: Bitrate, bytes: u64, ecn: Ecn) -> Self {
        let size = DataSize::bytes(bytes);
        Self { flow, size, interval: rate.transmit_time(size), burst: 1, ecn }
    }
}

/// A packet that reached the far end.
struct Delivered {
    flow: FlowId,
    size: DataSize,
    ecn: Ecn,
    /// Time spent waiting in the queue.
    queueing: Duration,
}

struct Outcome {
    delivered: Vec<Delivered>,
    dropped: Vec<(Packet, DropReason)>,
    ce_marks: u64,
}

impl Outcome {
    fn queueing_ms(&self, flow: FlowId) -> Vec<f64> {
        let mut d: Vec<f64> =
            self.delivered.iter().filter(|p| p.flow == flow).map(|p| p.queueing.as_millis_f64()).collect();
        d.sort_by(f64::total_cmp);
        d
    }

    fn delivered_bytes(&self, flow: FlowId) -> u64 {
        self.delivered.iter().filter(|p| p.flow == flow).map(|p| p.size.as_bytes()).sum()
    }

    fn drops(&self, reason: DropReason, ecn: Ecn) -> usize {
        self.dropped.iter().filter(|(p, r)| *r == reason && p.ecn == ecn).count()
    }
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Drives a link with the sources for `duration`, the way the simulator's world does: wake the
/// link at its deadlines, offer each packet when its source sends it, drain what comes out.
/// Then the sources stop and the link empties, so every packet is delivered or dropped.
fn run(discipline: QueueDiscipline, sources: &[Source], duration: Duration) -> Outcome {
    let cfg = LinkConfig {
        name: "aqm".into(),
        capacity: CapacitySchedule::constant(CAPACITY),
        opportunities: None,
        delay: Duration::ZERO,
        queue: BIG_BUFFER,
        discipline,
        jitter: None,
        loss: LossModel::None,
        bleach_ecn: false,
    };
    let mut link = Link::new(cfg, rng_for(1, "loss"), rng_for(1, "jitter"), rng_for(1, "queue"));
    let end = Instant::ZERO + duration;
    let mut next_send = vec![Instant::ZERO; sources.len()];
    let mut out = Outcome { delivered: Vec::new(), dropped: Vec::new(), ce_marks: 0 };
    let mut id = 0;
    loop {
        let send = next_send.iter().copied().min().filter(|&t| t <= end);
        let Some(now) = [send, link.poll_timeout()].into_iter().flatten().min() else { break };
        link.on_timeout(now);
        while let Some((exit, p)) = link.poll_output(now) {
            let queueing = exit - p.sent_at - CAPACITY.transmit_time(p.size);
            out.delivered.push(Delivered { flow: p.flow, size: p.size, ecn: p.ecn, queueing });
        }
        for (s, next) in sources.iter().zip(&mut next_send).filter(|(_, next)| **next == now) {
            for _ in 0..s.burst {
                if let Err(drop) = link.enqueue(now, packet(id, s, now)) {
                    out.dropped.push(drop);
                }
                id += 1;
            }
            *next = now + s.interval;
        }
        while let Some(drop) = link.poll_drop() {
            out.dropped.push(drop);
        }
    }
    assert_eq!(out.delivered.len() + out.dropped.len(), id as usize, "every packet is accounted for");
    out.ce_marks = link.ce_marks();
    out
}

fn packet(id: u64, s: &Source, now: Instant) -> Packet {
    Packet {
        id,
        flow: s.flow,
        kind: PacketKind::Media,
        size: s.size,
        payload: s.size,
        sent_at: now,
        route: 0,
        hop: 0,
        data: Vec::new(),
        seq: None,
        frame: None,
        ecn: s.ecn,
    }
}

/// 1200 B packets at `rate` into the 10 Mbit/s link, for ever.
fn overload(rate: Bitrate) -> Source {
    Source::cbr(0, rate, 1200, Ecn::NotEct)
}

/// 20 % more than the link carries.
const HEAVY: Bitrate = Bitrate::mbps(12);
/// 5 % more than the link carries.
const LIGHT: Bitrate = Bitrate::kbps(10_500);

const THIRTY_S: Duration = Duration::from_secs(30);

#[test]
fn drop_tail_with_a_big_buffer_sits_at_its_limit() {
    let out = run(QueueDiscipline::DropTail, &[overload(HEAVY)], THIRTY_S);
    let delay = out.queueing_ms(0);
    let median = percentile(&delay, 0.5);
    assert!((480.0..=500.0).contains(&median), "median {median:.1} ms");
    assert_eq!(out.drops(DropReason::QueueFull, Ecn::NotEct), out.dropped.len());
}

#[test]
fn codel_keeps_the_standing_queue_near_its_target() {
    // RFC 8289 §4.3: the sojourn time settles near TARGET = 5 ms. The source never slows down,
    // so the queue stands while CoDel drops its excess. (Against 20 % of unresponsive excess
    // CoDel cycles over seconds instead; docs/queues.md shows it.)
    let codel = QueueDiscipline::Codel(CodelConfig::default());
    let out = run(codel, &[overload(LIGHT)], THIRTY_S);
    let delay = out.queueing_ms(0);
    let median = percentile(&delay, 0.5);
    assert!((2.0..=15.0).contains(&median), "median {median:.1} ms");
    let aqm = out.drops(DropReason::Aqm, Ecn::NotEct);
    assert_eq!(aqm, out.dropped.len(), "only CoDel drops, never the full buffer");
    // It drops the excess: 0.5 / 10.5 of the packets offered.
    let offered = out.delivered.len() + out.dropped.len();
    let share = aqm as f64 / offered as f64;
    assert!((0.045..=0.05).contains(&share), "dropped {share:.4}");
}

#[test]
fn fq_codel_keeps_a_sparse_flow_out_of_a_bulk_flows_queue() {
    // RFC 8290 §4.2: a flow that sends less than its share goes through new_flows and waits
    // for the packet on the wire (0.96 ms), while the bulk flow keeps a standing queue. Only
    // the first packet, when both flows are new, also waits for the bulk flow's quantum.
    let sparse = Source::cbr(1, Bitrate::kbps(100), 250, Ecn::NotEct);
    let fq_codel = QueueDiscipline::FqCodel(FqCodelConfig::default());
    let out = run(fq_codel, &[overload(LIGHT), sparse], THIRTY_S);
    let sparse_delay = out.queueing_ms(1);
    let worst = sparse_delay.last().copied().expect("sparse packets arrive");
    assert!(worst <= 1.92, "sparse flow waited up to {worst:.2} ms");
    let p99 = percentile(&sparse_delay, 0.99);
    assert!(p99 <= 0.96, "sparse flow p99 {p99:.2} ms");
    let bulk_median = percentile(&out.queueing_ms(0), 0.5);
    assert!((2.0..=15.0).contains(&bulk_median), "bulk median {bulk_median:.1} ms");
    assert!(out.dropped.iter().all(|(p, _)| p.flow == 0), "only the bulk flow loses packets");
}

#[test]
fn fq_codel_shares_the_link_in_bytes_between_backlogged_flows() {
    // RFC 8290 §4.2: DRR with a byte quantum gives equal bytes, whatever the packet sizes.
    let big = Source::cbr(0, Bitrate::mbps(8), 1500, Ecn::NotEct);
    let small = Source::cbr(1, Bitrate::mbps(8), 300, Ecn::NotEct);
    let out = run(QueueDiscipline::FqCodel(FqCodelConfig::default()), &[big, small], THIRTY_S);
    let (a, b) = (out.delivered_bytes(0) as f64, out.delivered_bytes(1) as f64);
    let share = a / (a + b);
    assert!((share - 0.5).abs() < 0.02, "flow 0 got {share:.3} of the bytes");
    let total_mbps = (a + b) * 8.0 / THIRTY_S.as_secs_f64() / 1e6;
    assert!(total_mbps > 9.9, "link used at {total_mbps:.2} Mbit/s");
}

#[test]
fn pie_holds_the_queueing_delay_around_its_target() {
    // RFC 8033 §4.2: the PI controller steers the delay to QDELAY_REF = 15 ms.
    // The source never slows down: PIE has to drop a sixth of it.
    let out = run(QueueDiscipline::Pie(PieConfig::default()), &[overload(HEAVY)], THIRTY_S);
    let delay = out.queueing_ms(0);
    let (avg, median) = (mean(&delay), percentile(&delay, 0.5));
    assert!((5.0..=40.0).contains(&avg), "mean {avg:.1} ms");
    assert!((5.0..=30.0).contains(&median), "median {median:.1} ms");
    assert_eq!(out.drops(DropReason::Aqm, Ecn::NotEct), out.dropped.len());
}

/// Two flows of 5.1 Mbit/s, one ECT(0) and one Not-ECT, into 10 Mbit/s: 2 % too much, which
/// only drops of the Not-ECT flow take away (marks do not slow these sources down).
fn mixed_ecn(discipline: QueueDiscipline) -> Outcome {
    let ect = Source::cbr(0, Bitrate::kbps(5100), 1200, Ecn::Ect0);
    let not_ect = Source::cbr(1, Bitrate::kbps(5100), 1200, Ecn::NotEct);
    run(discipline, &[ect, not_ect], THIRTY_S)
}

/// RFC 3168 §5 under an AQM with ECN on: ECN-capable packets are marked, the others dropped.
/// Returns (ECT packets dropped by the AQM, Not-ECT packets dropped by it).
fn marks_and_drops(name: &str, out: &Outcome) -> (usize, usize) {
    let marked = out.delivered.iter().filter(|p| p.ecn == Ecn::Ce).count() as u64;
    assert!(marked > 0, "{name}: no CE marks");
    assert_eq!(marked, out.ce_marks, "{name}: marks counted by the link");
    assert!(out.delivered.iter().filter(|p| p.ecn == Ecn::Ce).all(|p| p.flow == 0), "{name}");
    assert_eq!(
        out.drops(DropReason::Aqm, Ecn::NotEct) + out.drops(DropReason::Aqm, Ecn::Ect0),
        out.dropped.len()
    );
    (out.drops(DropReason::Aqm, Ecn::Ect0), out.drops(DropReason::Aqm, Ecn::NotEct))
}

#[test]
fn codel_marks_ecn_capable_packets_instead_of_dropping_them() {
    let codel = QueueDiscipline::Codel(CodelConfig { ecn: true, ..CodelConfig::default() });
    let (ect, not_ect) = marks_and_drops("codel", &mixed_ecn(codel));
    assert_eq!(ect, 0);
    assert!(not_ect > 0);
}

#[test]
fn fq_codel_marks_ecn_capable_packets_instead_of_dropping_them() {
    let out = mixed_ecn(QueueDiscipline::FqCodel(FqCodelConfig::default()));
    let (ect, not_ect) = marks_and_drops("fq_codel", &out);
    assert_eq!(ect, 0);
    assert!(not_ect > 0);
}

#[test]
fn pie_marks_ecn_capable_packets_while_the_probability_is_low() {
    // The drop probability this needs (about 4 %) is under mark_ecnth = 10 % (RFC 8033 §5.1),
    // so ECT packets are marked; only in the probability's rare excursions above 10 % are they
    // dropped. (The exact rule is unit-tested in queue::pie.)
    let pie = QueueDiscipline::Pie(PieConfig { ecn: true, ..PieConfig::default() });
    let (ect, not_ect) = marks_and_drops("pie", &mixed_ecn(pie));
    assert!(not_ect > 0);
    assert!(ect * 20 < not_ect, "{ect} ECT drops against {not_ect} Not-ECT drops");
}

#[test]
fn aqms_without_ecn_drop_ecn_capable_packets_too() {
    for discipline in [
        QueueDiscipline::Codel(CodelConfig::default()),
        QueueDiscipline::FqCodel(FqCodelConfig {
            codel: CodelConfig { ecn: false, ..CodelConfig::default() },
            ..FqCodelConfig::default()
        }),
        QueueDiscipline::Pie(PieConfig::default()),
    ] {
        let out = mixed_ecn(discipline.clone());
        assert_eq!(out.ce_marks, 0, "{discipline:?}");
        assert!(out.drops(DropReason::Aqm, Ecn::Ect0) > 0, "{discipline:?}");
    }
}

#[test]
fn step_marks_l4s_packets_exactly_when_they_waited_longer_than_the_threshold() {
    // Bursts of five 1250 B packets every 10 ms: each takes exactly 1 ms on the wire, so the
    // k-th of a burst waits (k − 1) ms: the second is at the threshold (not marked), the third
    // above it. A classic ECT(0) flow alongside is never marked.
    let l4s = Source {
        flow: 0,
        size: DataSize::bytes(1250),
        interval: Duration::from_millis(10),
        burst: 5,
        ecn: Ecn::Ect1,
    };
    let classic = Source { flow: 1, burst: 1, ecn: Ecn::Ect0, ..l4s };
    let threshold = StepConfig::default().threshold;
    let out = run(QueueDiscipline::Step(StepConfig::default()), &[l4s, classic], Duration::from_secs(5));
    assert!(out.dropped.is_empty());
    for p in &out.delivered {
        let expected = match p.flow {
            0 if p.queueing > threshold => Ecn::Ce,
            0 => Ecn::Ect1,
            _ => Ecn::Ect0,
        };
        assert_eq!(p.ecn, expected, "flow {} waited {}", p.flow, p.queueing);
    }
    let marked = out.delivered.iter().filter(|p| p.ecn == Ecn::Ce).count();
    assert!(marked > 0 && marked < out.queueing_ms(0).len());
    assert_eq!(marked as u64, out.ce_marks);
}
