//! A link driven with plain byte buffers, raw IPv4/UDP packets as a relay reads them from the
//! kernel, in the loop a relay runs (crate docs, "Driving an element"): departures follow
//! serialisation plus delay to the microsecond, a full buffer drops, the step marker marks CE in
//! the packet's own IP header (its checksum kept valid), FQ-CoDel tells flows apart by their
//! 5-tuple, and DualPI2 classifies by the IP header's ECN field.

use std::net::{Ipv4Addr, SocketAddrV4};

use rtcbench_net::link::capacity::CapacitySchedule;
use rtcbench_net::link::loss::LossModel;
use rtcbench_net::link::{Link, LinkConfig, QueueLimit};
use rtcbench_net::queue::{DualPi2Config, FqCodelConfig, QueueDiscipline, StepConfig};
use rtcbench_net::rng::rng_for;
use rtcbench_net::{DropReason, Ecn, IpFrame, NetPacket};
use rtcbench_units::{Bitrate, DataSize, Duration, Instant};
use rtcbench_wire::ip::{self, FiveTuple};

const RATE: Bitrate = Bitrate::mbps(1);
const DELAY: Duration = Duration::from_millis(20);
/// 1000-byte IP packets: 8 ms each at 1 Mbit/s.
const FRAME: usize = 1000;
const SERIALISATION: Duration = Duration::from_millis(8);

fn ms(v: i64) -> Instant {
    Instant::from_millis(v)
}

/// An IPv4/UDP packet of `FRAME` bytes from 10.0.0.1:`src_port` to 10.0.0.2:5004, whose first
/// payload byte is `tag`, so the test can follow it.
fn frame(src_port: u16, ecn: Ecn, tag: u8) -> IpFrame {
    let src = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), src_port);
    let dst = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 5004);
    let bytes = ip::ipv4_udp_datagram(src, dst, ecn, &[tag], FRAME - 29).expect("fits");
    assert_eq!(bytes.len(), FRAME);
    IpFrame::new(bytes)
}

fn tag(f: &IpFrame) -> u8 {
    f.bytes()[28]
}

/// The RFC 1071 sum over an IPv4 header is all ones when its checksum is right.
fn header_checksum_ok(bytes: &[u8]) -> bool {
    let mut sum: u32 = bytes[..20].chunks_exact(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff
}

fn link(queue: QueueLimit, discipline: QueueDiscipline) -> Link<IpFrame> {
    link_with(queue, discipline, false)
}

fn link_with(queue: QueueLimit, discipline: QueueDiscipline, bleach_ecn: bool) -> Link<IpFrame> {
    let cfg = LinkConfig {
        name: "relay".into(),
        capacity: CapacitySchedule::constant(RATE),
        opportunities: None,
        delay: DELAY,
        queue,
        discipline,
        jitter: None,
        loss: LossModel::None,
        bleach_ecn,
    };
    Link::new(
        cfg,
        rng_for(7, "link/relay/loss"),
        rng_for(7, "link/relay/jitter"),
        rng_for(7, "link/relay/queue"),
    )
}

/// What came out of a link: packets at the far end (when due, the packet), and drops (when,
/// the packet, why).
#[derive(Default)]
struct Out {
    delivered: Vec<(Instant, IpFrame)>,
    dropped: Vec<(Instant, IpFrame, DropReason)>,
}

/// Runs `arrivals` (in time order) through `link` as a relay would: advance the link to `now`,
/// offer what arrives at `now`, drain drops and outputs, then wait for the next arrival or the
/// link's deadline, whichever comes first.
fn drive(link: &mut Link<IpFrame>, arrivals: Vec<(Instant, IpFrame)>) -> Out {
    let mut out = Out::default();
    let mut arrivals = arrivals.into_iter().peekable();
    loop {
        let next_arrival = arrivals.peek().map(|(t, _)| *t);
        let now = match (next_arrival, link.poll_timeout()) {
            (Some(a), Some(t)) => a.min(t),
            (a, t) => match a.or(t) {
                Some(now) => now,
                None => return out,
            },
        };
        link.on_timeout(now);
        while let Some((_, f)) = arrivals.next_if(|(t, _)| *t == now) {
            if let Err((f, reason)) = link.enqueue(now, f) {
                out.dropped.push((now, f, reason));
            }
        }
        while let Some((f, reason)) = link.poll_drop() {
            out.dropped.push((now, f, reason));
        }
        while let Some((due, f)) = link.poll_output(now) {
            assert_eq!(due, now, "the loop wakes at every deadline");
            out.delivered.push((due, f));
        }
    }
}

#[test]
fn departures_are_serialisation_plus_delay_and_a_full_buffer_drops() {
    // A 3000-byte buffer holds the packet on the wire and two more: of a burst of five at 0 ms
    // the last two are dropped, unchanged. A packet at 100 ms finds the link idle.
    let mut l = link(QueueLimit::Bytes(DataSize::bytes(3000)), QueueDiscipline::DropTail);
    let mut arrivals: Vec<(Instant, IpFrame)> =
        (0..5).map(|k| (ms(0), frame(4000, Ecn::NotEct, k))).collect();
    arrivals.push((ms(100), frame(4000, Ecn::NotEct, 5)));
    // Two more arriving while packet 1 is on the wire and 2 waits: 6 fits (packet 0 has left),
    // 7 does not.
    arrivals.push((ms(9), frame(4000, Ecn::NotEct, 6)));
    arrivals.push((ms(9), frame(4000, Ecn::NotEct, 7)));
    arrivals.sort_by_key(|(t, _)| *t);
    let out = drive(&mut l, arrivals);

    // Packet k of the burst starts when k - 1 is done: exit = (k + 1) × 8 ms + 20 ms.
    let expected: Vec<(Instant, u8)> = vec![
        (Instant::ZERO + SERIALISATION + DELAY, 0),
        (Instant::ZERO + SERIALISATION * 2 + DELAY, 1),
        (Instant::ZERO + SERIALISATION * 3 + DELAY, 2),
        (Instant::ZERO + SERIALISATION * 4 + DELAY, 6),
        (ms(100) + SERIALISATION + DELAY, 5),
    ];
    let got: Vec<(Instant, u8)> = out.delivered.iter().map(|(t, f)| (*t, tag(f))).collect();
    assert_eq!(got, expected);
    assert_eq!(got[0].0, ms(28));
    assert_eq!(got[4].0, ms(128));

    let drops: Vec<(Instant, u8, DropReason)> =
        out.dropped.iter().map(|(t, f, r)| (*t, tag(f), *r)).collect();
    assert_eq!(
        drops,
        [
            (ms(0), 3, DropReason::QueueFull),
            (ms(0), 4, DropReason::QueueFull),
            (ms(9), 7, DropReason::QueueFull)
        ]
    );
    // A dropped packet comes back as it went in; a delivered one too (drop-tail marks nothing).
    assert_eq!(out.dropped[0].1, frame(4000, Ecn::NotEct, 3));
    assert_eq!(out.delivered[0].1, frame(4000, Ecn::NotEct, 0));
}

#[test]
fn the_step_marker_marks_ce_in_the_ip_header() {
    // A burst of three of each codepoint, interleaved; the first leaves at once, every later one
    // waits at least 8 ms, above the 1 ms threshold.
    let mut l = link(QueueLimit::Unlimited, QueueDiscipline::Step(StepConfig::default()));
    let codepoints = [Ecn::Ect1, Ecn::Ect0, Ecn::NotEct, Ecn::Ce];
    let arrivals: Vec<(Instant, IpFrame)> =
        (0..12u8).map(|k| (ms(0), frame(4000, codepoints[usize::from(k) % 4], k))).collect();
    let out = drive(&mut l, arrivals);
    assert!(out.dropped.is_empty());
    assert_eq!(out.delivered.len(), 12);
    for (k, (t, f)) in out.delivered.iter().enumerate() {
        assert_eq!(*t, Instant::ZERO + SERIALISATION * (k as i64 + 1) + DELAY);
        let sent = codepoints[k % 4];
        // L4S packets (ECT(1), CE) that waited are CE; classic ones are never marked.
        let want = match sent {
            Ecn::Ect1 if k > 0 => Ecn::Ce,
            other => other,
        };
        assert_eq!(ip::ecn(f.bytes()), Ok(want), "packet {k} sent {sent:?}");
        assert_eq!(f.ecn(), want);
        assert!(header_checksum_ok(f.bytes()), "packet {k}: IPv4 header checksum");
        // Nothing else changed: the same packet with the codepoint it left with.
        let mut original = frame(4000, sent, k as u8);
        original.set_ecn(want);
        assert_eq!(f, &original);
    }
    assert_eq!(l.ce_marks(), 3 + 3 - 1, "ECT(1) packets 4 and 8, and the CE ones, but not packet 0");
}

#[test]
fn a_bleaching_link_clears_the_ecn_field_before_its_queue_reads_it() {
    // Behind a bleaching hop every codepoint leaves Not-ECT with a valid header, so the step
    // marker behind it has no L4S packet to mark, and DualPI2 would classify them all as classic.
    let mut l = link_with(QueueLimit::Unlimited, QueueDiscipline::Step(StepConfig::default()), true);
    let codepoints = [Ecn::Ect1, Ecn::Ect0, Ecn::NotEct, Ecn::Ce];
    let arrivals: Vec<(Instant, IpFrame)> =
        (0..8u8).map(|k| (ms(0), frame(4000, codepoints[usize::from(k) % 4], k))).collect();
    let out = drive(&mut l, arrivals);
    assert_eq!(out.delivered.len(), 8);
    for (k, (_, f)) in out.delivered.iter().enumerate() {
        assert_eq!(ip::ecn(f.bytes()), Ok(Ecn::NotEct), "packet {k}");
        assert!(header_checksum_ok(f.bytes()), "packet {k}: IPv4 header checksum");
        let mut original = frame(4000, codepoints[k % 4], k as u8);
        original.set_ecn(Ecn::NotEct);
        assert_eq!(f, &original, "packet {k}: only the ECN bits changed");
    }
    assert_eq!(l.ce_marks(), 0);
}

#[test]
fn dualpi2_queues_ect1_frames_first_and_marks_them_in_the_ip_header() {
    // Three ECT(1) and three Not-ECT frames at 0 ms, interleaved, under Linux's defaults. The
    // first goes on the wire at once; then the L queue is served first (its WRR credit starts at
    // one MTU × (10 % − 90 %)), and its frames, having waited over the 1 ms step, leave CE. The
    // classic frames follow unmarked: the two-MTU backlog rule spares them once the L queue is
    // empty (p' is only 0.05 after the 16 ms update).
    let mut l = link(QueueLimit::Unlimited, QueueDiscipline::DualPi2(DualPi2Config::linux()));
    let codepoints = [Ecn::Ect1, Ecn::NotEct];
    let arrivals: Vec<(Instant, IpFrame)> =
        (0..6u8).map(|k| (ms(0), frame(4000, codepoints[usize::from(k) % 2], k))).collect();
    let out = drive(&mut l, arrivals);
    assert!(out.dropped.is_empty());
    let order: Vec<u8> = out.delivered.iter().map(|(_, f)| tag(f)).collect();
    assert_eq!(order, [0, 2, 4, 1, 3, 5]);
    for (i, (t, f)) in out.delivered.iter().enumerate() {
        assert_eq!(*t, Instant::ZERO + SERIALISATION * (i as i64 + 1) + DELAY);
        let k = tag(f);
        let want = match codepoints[usize::from(k) % 2] {
            Ecn::Ect1 if k > 0 => Ecn::Ce,
            other => other,
        };
        assert_eq!(ip::ecn(f.bytes()), Ok(want), "frame {k}");
        assert!(header_checksum_ok(f.bytes()), "frame {k}: IPv4 header checksum");
    }
    let state = l.dualpi2_state().expect("a DualPI2 queue");
    assert_eq!((state.l_marks, state.c_marks, state.l_drops, state.c_drops), (2, 0, 0, 0));
    assert_eq!(l.ce_marks(), 2);
}

#[test]
fn fq_codel_tells_flows_apart_by_their_five_tuple() {
    // A bulk flow (source port 4000) queues ten packets at 0 ms; a sparse flow (port 4001) sends
    // one at 1 ms. Under FQ-CoDel the sparse packet goes on the wire as soon as the bulk flow has
    // spent its quantum (1514 B: packets 0 and 1, RFC 8290 §4.2), at 16 ms; under drop-tail it
    // waits behind the whole backlog, until 80 ms.
    let bulk = |k| (ms(0), frame(4000, Ecn::NotEct, k));
    let mut arrivals: Vec<(Instant, IpFrame)> = (0..10).map(bulk).collect();
    arrivals.push((ms(1), frame(4001, Ecn::NotEct, 99)));
    let sparse_exit = |discipline| {
        let out = drive(&mut link(QueueLimit::Unlimited, discipline), arrivals.clone());
        assert_eq!(out.delivered.len(), 11);
        out.delivered.iter().find(|(_, f)| tag(f) == 99).map(|(t, _)| *t).expect("delivered")
    };
    assert_eq!(
        sparse_exit(QueueDiscipline::FqCodel(FqCodelConfig::default())),
        ms(16) + SERIALISATION + DELAY
    );
    assert_eq!(sparse_exit(QueueDiscipline::DropTail), Instant::ZERO + SERIALISATION * 11 + DELAY);

    // The two flows differ only in their source port.
    let (a, b) = (
        FiveTuple::parse(frame(4000, Ecn::NotEct, 0).bytes()),
        FiveTuple::parse(frame(4001, Ecn::NotEct, 0).bytes()),
    );
    assert_eq!(a.map(|t| (t.src, t.dst, t.protocol)), b.map(|t| (t.src, t.dst, t.protocol)));
    assert_ne!(frame(4000, Ecn::NotEct, 0).flow_key(), frame(4001, Ecn::NotEct, 0).flow_key());
}
