//! The sender fed scripted ACKs: fast recovery with SACK and PRR, NewReno partial ACKs,
//! timeouts, Karn's rule, slow start, short flows, Prague's pacing and BBR's.

use std::collections::VecDeque;

use rtcbench_units::{Bitrate, DataSize, Duration, Instant, SeqNo};

use super::wire::{SackBlock, TcpFlags, TcpRepr};
use super::*;

const MSS: u64 = 1000;
/// ISS near the top of the 32-bit space: every test crosses the wrap within a few segments.
const ISS: u32 = u32::MAX - 2500;

fn ms(v: i64) -> Instant {
    Instant::from_millis(v)
}

fn sender(cc: CongestionControl, sack: bool) -> TcpSender {
    let mut cfg = SenderConfig::new(cc);
    cfg.smss = DataSize::bytes(MSS);
    cfg.iss = ISS;
    cfg.sack = sack;
    cfg.hystart = false;
    TcpSender::new(cfg)
}

/// The 64-bit sequence number of the start of segment `i`.
fn seq(i: u64) -> u64 {
    u64::from(ISS) + 1 + i * MSS
}

/// Sends everything the windows allow at `now`; returns (segment index, retransmission).
fn send(s: &mut TcpSender, now: Instant) -> Vec<(u64, bool)> {
    let mut out = Vec::new();
    while let Some(seg) = s.poll_transmit(now) {
        let h = TcpRepr::parse(&seg.header).unwrap();
        let start = super::wire::unwrap_seq(seq(0), h.seq);
        assert_eq!(seg.payload, DataSize::bytes(MSS));
        out.push(((start - seq(0)) / MSS, seg.retransmission));
    }
    out
}

fn indices(sent: &[(u64, bool)]) -> Vec<u64> {
    sent.iter().map(|&(i, _)| i).collect()
}

/// An ACK of everything before segment `next`, SACKing segment ranges `[a, b)`.
fn ack(next: u64, sack: &[(u64, u64)]) -> TcpRepr {
    TcpRepr {
        src_port: 5001,
        dst_port: 49152,
        seq: SeqNo::new(1),
        ack: SeqNo::new(seq(next)),
        flags: TcpFlags::ACK,
        window: u16::MAX,
        sack: sack
            .iter()
            .map(|&(a, b)| SackBlock { left: SeqNo::new(seq(a)), right: SeqNo::new(seq(b)) })
            .collect(),
    }
}

fn segs(n: u64) -> DataSize {
    DataSize::bytes(n * MSS)
}

#[test]
fn initial_window_then_slow_start_by_at_most_two_segments_per_ack() {
    let mut s = sender(CongestionControl::NewReno, true);
    assert_eq!(indices(&send(&mut s, ms(0))), (0..10).collect::<Vec<_>>());
    assert_eq!(s.metrics().state, CongestionState::SlowStart);
    // A stretch ACK of four segments grows cwnd by 2·SMSS only (RFC 3465 L = 2).
    s.on_ack(ms(100), &ack(4, &[]));
    assert_eq!(s.metrics().cwnd, segs(12));
    assert_eq!(s.metrics().srtt, Some(Duration::from_millis(100)));
    // 6 in flight, cwnd 12: six more go out.
    assert_eq!(indices(&send(&mut s, ms(100))), (10..16).collect::<Vec<_>>());
}

/// RFC 9406 through the sender: the RTT rises from 100 to 120 ms in the third round (more than
/// RttThresh = 12.5 ms), so slow start turns into CSS, and after CSS_ROUNDS rounds the sender
/// enters congestion avoidance with ssthresh = cwnd. Every segment is ACKed on its own and new
/// segments go out after each ACK, as a stack sends them.
#[test]
fn hystart_leaves_slow_start_through_css() {
    let mut cfg = SenderConfig::new(CongestionControl::Cubic);
    cfg.smss = DataSize::bytes(MSS);
    cfg.iss = ISS;
    let mut s = TcpSender::new(cfg);
    // Rounds 0 and 1 are segments 0..30.
    let rtt = |i: u64| Duration::from_millis(if i < 30 { 100 } else { 120 });
    let mut in_flight: VecDeque<(Instant, u64)> =
        send(&mut s, ms(0)).into_iter().map(|(i, _)| (ms(0) + rtt(i), i)).collect();
    let mut states = vec![s.metrics().state];
    while let Some((now, i)) = in_flight.pop_front() {
        s.on_ack(now, &ack(i + 1, &[]));
        let m = s.metrics();
        if m.state != states[states.len() - 1] {
            states.push(m.state);
        }
        if m.state == CongestionState::CongestionAvoidance {
            assert_eq!(m.ssthresh, Some(m.cwnd));
            break;
        }
        in_flight.extend(send(&mut s, now).into_iter().map(|(j, _)| (now + rtt(j), j)));
    }
    use CongestionState::*;
    assert_eq!(states, vec![SlowStart, ConservativeSlowStart, CongestionAvoidance]);
}

/// RFC 6675 §5 + RFC 6937: segment 2 is lost with cwnd = 12. The third SACKed segment above it
/// starts recovery: ssthresh = cwnd/2, the fast retransmit goes out at once, then PRR sends in
/// proportion ssthresh/RecoverFS = 6/14 of what is delivered, until pipe reaches ssthresh. The
/// ACK of the recovery point ends recovery with cwnd = ssthresh.
#[test]
fn sack_loss_recovery_with_prr() {
    let mut s = sender(CongestionControl::NewReno, true);
    send(&mut s, ms(0));
    s.on_ack(ms(100), &ack(2, &[])); // cwnd 12
    s.on_ack(ms(101), &ack(2, &[])); // old ACK: nothing
    assert_eq!(send(&mut s, ms(101)).len(), 4); // segments 10..14, 12 outstanding
                                                // Segment 2 is lost: ACKs of 3, 4 and 5 carry SACK blocks.
    s.on_ack(ms(110), &ack(2, &[(3, 4)]));
    s.on_ack(ms(111), &ack(2, &[(3, 5)]));
    assert_eq!(s.metrics().state, CongestionState::SlowStart);
    // Limited transmit falls out of the pipe: two SACKed segments made room for two more.
    assert_eq!(indices(&send(&mut s, ms(111))), vec![14, 15]);
    s.on_ack(ms(112), &ack(2, &[(3, 6)]));
    let m = s.metrics();
    assert_eq!(m.state, CongestionState::Recovery);
    assert_eq!(m.ssthresh, Some(segs(6)));
    assert_eq!(send(&mut s, ms(112)), vec![(2, true)]);
    // PRR: RecoverFS = 14 (FlightSize), ssthresh = 6; once pipe is down to ssthresh the
    // reduction bound sends one segment per segment delivered.
    let mut sent = Vec::new();
    for (i, k) in (6..16).enumerate() {
        s.on_ack(ms(113 + i as i64), &ack(2, &[(3, k + 1)]));
        sent.push(send(&mut s, ms(113 + i as i64)).len());
    }
    assert_eq!(sent, vec![0, 0, 0, 1, 0, 0, 1, 1, 1, 1]);
    assert_eq!(s.metrics().bytes_in_flight, segs(6));
    assert_eq!(s.metrics().retransmits, 1);
    // The retransmission arrives: everything up to the recovery point (16) is acknowledged.
    s.on_ack(ms(200), &ack(16, &[]));
    let m = s.metrics();
    assert_eq!(m.state, CongestionState::CongestionAvoidance);
    assert_eq!(m.cwnd, segs(6));
    assert_eq!(m.recoveries, 1);
}

/// A second loss in the same window is repaired within the same recovery episode: one
/// reduction per window.
#[test]
fn one_reduction_per_window() {
    let mut s = sender(CongestionControl::NewReno, true);
    send(&mut s, ms(0));
    // Segments 0 and 4 are lost.
    s.on_ack(ms(100), &ack(0, &[(1, 2)]));
    s.on_ack(ms(100), &ack(0, &[(1, 3)]));
    s.on_ack(ms(100), &ack(0, &[(1, 4)]));
    assert_eq!(s.metrics().ssthresh, Some(segs(5)));
    assert_eq!(send(&mut s, ms(100))[0], (0, true));
    for k in 6..=10 {
        s.on_ack(ms(101), &ack(0, &[(5, k), (1, 4)]));
    }
    let resent: Vec<u64> = send(&mut s, ms(101)).into_iter().filter(|&(_, r)| r).map(|(i, _)| i).collect();
    assert_eq!(resent, vec![4]);
    s.on_ack(ms(150), &ack(4, &[(5, 10)]));
    assert_eq!(s.metrics().state, CongestionState::Recovery);
    assert_eq!(s.metrics().ssthresh, Some(segs(5)));
    assert_eq!(s.metrics().recoveries, 1);
}

/// RFC 6582 §3.2 without SACK: three duplicate ACKs start recovery with cwnd = ssthresh +
/// 3·SMSS; each further duplicate inflates cwnd by SMSS; a partial ACK retransmits the next
/// hole at once and deflates cwnd by the amount acknowledged (plus SMSS back); the full ACK
/// ends recovery with cwnd = min(ssthresh, FlightSize + SMSS).
#[test]
fn newreno_partial_ack_handling() {
    let mut s = sender(CongestionControl::NewReno, false);
    send(&mut s, ms(0)); // 0..9; 0 and 5 will be lost
    for _ in 1..=3 {
        s.on_ack(ms(100), &ack(0, &[])); // segments 1, 2, 3
    }
    let m = s.metrics();
    assert_eq!(m.state, CongestionState::Recovery);
    assert_eq!((m.ssthresh, m.cwnd), (Some(segs(5)), segs(8)));
    assert_eq!(send(&mut s, ms(100)), vec![(0, true)]);
    // Five more duplicates (4, 6, 7, 8, 9): cwnd 13 with 10 outstanding, three new segments.
    for _ in 0..5 {
        s.on_ack(ms(101), &ack(0, &[]));
    }
    assert_eq!(s.metrics().cwnd, segs(13));
    assert_eq!(indices(&send(&mut s, ms(101))), vec![10, 11, 12]);
    // The retransmission of 0 arrives: a partial ACK up to the hole at 5.
    s.on_ack(ms(200), &ack(5, &[]));
    // cwnd = 13 - 5 + 1 = 9 with FlightSize 8: the hole is retransmitted whatever the window,
    // and one new segment fits.
    assert_eq!(s.metrics().cwnd, segs(9));
    assert_eq!(send(&mut s, ms(200)), vec![(5, true), (13, false)]);
    assert_eq!(s.metrics().state, CongestionState::Recovery);
    // The full ACK covers the recovery point (10): cwnd = min(5, FlightSize 3 + 1) = 4, which
    // is below ssthresh: slow start.
    s.on_ack(ms(300), &ack(11, &[]));
    let m = s.metrics();
    assert_eq!(m.state, CongestionState::SlowStart);
    assert_eq!(m.cwnd, segs(4));
    assert_eq!(m.retransmits, 2);
}

/// RFC 6298 §5 + RFC 5681 §3.1: the timer fires after the initial RTO of 1 s; cwnd drops to one
/// segment, ssthresh to β·cwnd (CUBIC), the first segment is retransmitted and the RTO doubles.
/// A second timeout keeps ssthresh. After the retransmission is acknowledged, slow start
/// resends the rest and the loss state ends once everything sent before the timeout is acked.
#[test]
fn retransmission_timeout_and_backoff() {
    let mut s = sender(CongestionControl::Cubic, true);
    send(&mut s, ms(0));
    assert_eq!(s.poll_timeout(), Some(ms(1000)));
    s.on_timeout(ms(999));
    assert_eq!(s.metrics().timeouts, 0);
    s.on_timeout(ms(1000));
    let m = s.metrics();
    assert_eq!((m.state, m.cwnd, m.ssthresh), (CongestionState::Loss, segs(1), Some(segs(7))));
    assert_eq!(m.rto, Duration::from_secs(2));
    assert_eq!(send(&mut s, ms(1000)), vec![(0, true)]);
    s.on_timeout(ms(3000));
    assert_eq!(s.metrics().ssthresh, Some(segs(7)));
    assert_eq!(s.metrics().rto, Duration::from_secs(4));
    assert_eq!(send(&mut s, ms(3000)), vec![(0, true)]);
    // Karn: the ACK of a retransmission gives no RTT sample.
    s.on_ack(ms(3100), &ack(1, &[]));
    assert_eq!(s.metrics().srtt, None);
    assert_eq!(s.poll_timeout(), Some(ms(3100) + Duration::from_secs(4)));
    assert_eq!(s.metrics().cwnd, segs(2));
    assert_eq!(send(&mut s, ms(3100)), vec![(1, true), (2, true)]);
    s.on_ack(ms(3200), &ack(10, &[]));
    assert_eq!(s.metrics().state, CongestionState::SlowStart);
}

/// A SACKed segment is not resent after a timeout.
#[test]
fn timeout_skips_sacked_segments() {
    let mut s = sender(CongestionControl::NewReno, true);
    send(&mut s, ms(0));
    s.on_ack(ms(100), &ack(0, &[(1, 3), (4, 5)]));
    s.on_timeout(ms(1000));
    assert_eq!(send(&mut s, ms(1000)), vec![(0, true)]);
    s.on_ack(ms(1100), &ack(3, &[(4, 5)]));
    // cwnd 2: segments 3 and 5; 4 was SACKed.
    assert_eq!(send(&mut s, ms(1100)), vec![(3, true), (5, true)]);
}

/// Short flows: written bytes are sent as far as the window allows, `AllAcked` marks the end of
/// a burst, and after more than an RTO of silence the window restarts from IW (RFC 5681 §4.1).
#[test]
fn writes_complete_and_idle_restart() {
    let mut cfg = SenderConfig::new(CongestionControl::Cubic);
    cfg.smss = DataSize::bytes(MSS);
    cfg.iss = ISS;
    cfg.application = Application::Writes;
    cfg.hystart = false;
    let mut s = TcpSender::new(cfg);
    assert!(s.poll_transmit(ms(0)).is_none());
    s.write(segs(3) + DataSize::bytes(500));
    let sent: Vec<DataSize> = std::iter::from_fn(|| s.poll_transmit(ms(0))).map(|g| g.payload).collect();
    assert_eq!(sent, vec![segs(1), segs(1), segs(1), DataSize::bytes(500)]);
    s.on_ack(ms(50), &ack(2, &[]));
    assert_eq!(s.poll_event(), None);
    let mut last = ack(3, &[]);
    last.ack = SeqNo::new(seq(3) + 500);
    s.on_ack(ms(60), &last);
    assert_eq!(s.poll_event(), Some(SenderEvent::AllAcked { at: ms(60), total: DataSize::bytes(3500) }));
    assert_eq!(s.poll_timeout(), None);
    // cwnd-limited growth only: four segments of 10 did not grow the window.
    assert_eq!(s.metrics().cwnd, segs(10));
    // A longer burst of 36 segments grows cwnd in three round trips (10, 12, 14 segments)...
    s.write(segs(36) - DataSize::bytes(500));
    let mut now = ms(100);
    for _ in 0..3 {
        assert!(std::iter::from_fn(|| s.poll_transmit(now)).count() > 0);
        now += Duration::from_millis(50);
        let mut all = ack(0, &[]);
        all.ack = SeqNo::new(seq(0) + s.metrics().bytes_sent.as_bytes());
        s.on_ack(now, &all);
    }
    assert_eq!(s.metrics().cwnd, segs(14));
    // ...and after more than an RTO without sending, it restarts from IW.
    s.write(segs(1));
    s.poll_transmit(now + Duration::from_secs(5)).unwrap();
    assert_eq!(s.metrics().cwnd, segs(10));
}

/// An ACK above SND.NXT acknowledges nothing that was sent and is ignored.
#[test]
fn acks_of_unsent_data_are_ignored() {
    let mut s = sender(CongestionControl::NewReno, true);
    send(&mut s, ms(0));
    s.on_ack(ms(10), &ack(11, &[]));
    assert_eq!(s.metrics().bytes_acked, DataSize::ZERO);
    s.on_ack(ms(10), &ack(10, &[]));
    assert_eq!(s.metrics().bytes_acked, segs(10));
}

// ---------------------------------------------------------------------------------------------
// ECN
// ---------------------------------------------------------------------------------------------

fn prague(pacing: bool, initial_window_segments: u64) -> TcpSender {
    let mut cfg = SenderConfig::new(CongestionControl::Prague);
    cfg.smss = DataSize::bytes(MSS);
    cfg.iss = ISS;
    cfg.pacing = pacing;
    cfg.initial_window_segments = initial_window_segments;
    TcpSender::new(cfg)
}

/// An ACK of everything before segment `next` whose ACE field carries r.cep = 5 + `ce_total`.
fn ace_ack(next: u64, ce_total: u32) -> TcpRepr {
    let mut a = ack(next, &[]);
    a.flags = TcpFlags::ACK.with_ace(5 + ce_total);
    a
}

/// RFC 9331 §4 through the sender: every segment ECT(1); the ACE count's first CE halves the
/// window (α starts at 1) and ends slow start; a second CE in the same round trip does not
/// reduce again; the end of the round trip updates α with the round's CE fraction (2 of 10).
#[test]
fn prague_reduces_once_per_round_trip_on_accecn_feedback() {
    use rtcbench_wire::Ecn;
    let mut s = prague(false, 10);
    let ecns: Vec<Ecn> = std::iter::from_fn(|| s.poll_transmit(ms(0))).map(|seg| seg.ecn).collect();
    assert_eq!(ecns, vec![Ecn::Ect1; 10]);
    s.on_ack(ms(100), &ace_ack(2, 0));
    assert_eq!((s.metrics().cwnd, s.metrics().state), (segs(12), CongestionState::SlowStart));
    // One CE: 12 000 × (1 − 1/2) = 6000, then the unmarked segment adds 1000·1000/6000.
    s.on_ack(ms(101), &ace_ack(4, 1));
    let m = s.metrics();
    assert_eq!((m.cwnd, m.ssthresh), (DataSize::bytes(6166), Some(DataSize::bytes(6000))));
    assert_eq!((m.state, m.ce_marked, m.ecn_reductions), (CongestionState::CongestionAvoidance, 1, 1));
    // A second CE before SND.UNA passes segment 10 (SND.NXT at the reduction): no reduction.
    s.on_ack(ms(102), &ace_ack(6, 2));
    assert_eq!(s.metrics().ecn_reductions, 1);
    assert!(s.metrics().cwnd > DataSize::bytes(6166));
    assert_eq!(s.prague_alpha(), Some(1.0));
    // cwnd 6328 B: in flight may be 7 whole segments (rounded up), 4 are.
    assert_eq!(indices(&send(&mut s, ms(102))), vec![10, 11, 12]);
    s.on_ack(ms(103), &ace_ack(10, 2));
    let alpha = s.prague_alpha().unwrap();
    assert!((alpha - (1.0 + (0.2 - 1.0) / 16.0)).abs() < 1e-12, "{alpha}");
    // The next round trip's CE reduces again, by α/2 = 47.5 %.
    let before = s.metrics().cwnd;
    s.on_ack(ms(200), &ace_ack(11, 3));
    assert_eq!(s.metrics().ecn_reductions, 2);
    assert_eq!(
        s.metrics().ssthresh,
        Some(DataSize::bytes((before.as_bytes() as f64 * (1.0 - alpha / 2.0)) as u64))
    );
}

/// Pacing at cwnd/SRTT (×2 in slow start): after the first RTT sample the sender releases one
/// segment, then holds the next for payload / rate and reports the instant in `poll_timeout`.
#[test]
fn prague_paces_at_cwnd_over_srtt() {
    let mut s = prague(true, 10);
    assert_eq!(send(&mut s, ms(0)).len(), 10, "no RTT sample yet: the initial window goes at once");
    s.on_ack(ms(100), &ace_ack(2, 0));
    // cwnd 12 000 B over 100 ms, ×2 in slow start: 1.92 Mbit/s, 4167 µs per 1000 B.
    assert_eq!(s.pacing_rate(), Some(Bitrate::bps(1_920_000)));
    assert_eq!(send(&mut s, ms(100)).len(), 1);
    let next = ms(100) + Duration::from_micros(4167);
    assert_eq!(s.poll_timeout(), Some(next));
    assert!(s.poll_transmit(next - Duration::from_micros(1)).is_none());
    assert_eq!(send(&mut s, next).len(), 1);
}

/// A window below two segments: in flight may be two segments, and the pacing rate is the
/// fractional window over SRTT (RFC 9331 §4.3 "scale down to fractional windows").
#[test]
fn prague_fractional_window_is_carried_by_pacing() {
    let mut s = prague(true, 3);
    assert_eq!(send(&mut s, ms(0)).len(), 3);
    // The first segment comes back CE-marked: 3000 × 1/2 = 1500 bytes, no growth (all marked).
    s.on_ack(ms(100), &ace_ack(1, 1));
    assert_eq!(s.metrics().cwnd, DataSize::bytes(1500));
    assert_eq!(s.pacing_rate(), Some(Bitrate::kbps(120)), "1500 B per 100 ms");
    assert!(send(&mut s, ms(100)).is_empty(), "two segments in flight fill the two-segment floor");
    s.on_ack(ms(200), &ace_ack(2, 1));
    let sent = send(&mut s, ms(200));
    assert_eq!(sent.len(), 1, "the pacer holds the second one");
    assert!(s.poll_timeout().unwrap() > ms(200));
}

/// RFC 3168 with CUBIC: ECT(0) data; an ECE reduces cwnd by β = 0.7 as a loss would, without a
/// retransmission, once per window; the next new segment carries CWR; the ACK does not grow cwnd.
#[test]
fn classic_ecn_reduces_as_a_loss_once_per_window() {
    use rtcbench_wire::Ecn;
    let mut cfg = SenderConfig::new(CongestionControl::Cubic);
    cfg.smss = DataSize::bytes(MSS);
    cfg.iss = ISS;
    cfg.hystart = false;
    cfg.ecn = TcpEcn::Classic;
    let mut s = TcpSender::new(cfg);
    let first: Vec<Segment> = std::iter::from_fn(|| s.poll_transmit(ms(0))).collect();
    assert!(first.iter().all(|seg| seg.ecn == Ecn::Ect0));
    let ece = |next| TcpRepr { flags: TcpFlags { ece: true, ..TcpFlags::ACK }, ..ack(next, &[]) };
    s.on_ack(ms(100), &ece(2));
    let m = s.metrics();
    assert_eq!((m.cwnd, m.ssthresh, m.ecn_reductions), (segs(7), Some(segs(7)), 1));
    assert_eq!((m.retransmits, m.recoveries), (0, 0));
    // A second ECE in the same window neither reduces nor grows.
    s.on_ack(ms(101), &ece(5));
    assert_eq!((s.metrics().cwnd, s.metrics().ecn_reductions), (segs(7), 1));
    let next = s.poll_transmit(ms(101)).unwrap();
    assert!(TcpRepr::parse(&next.header).unwrap().flags.cwr, "CWR on the first new segment");
    let after = s.poll_transmit(ms(101)).unwrap();
    assert!(!TcpRepr::parse(&after.header).unwrap().flags.cwr);
}

/// BBR through the sender: the initial window goes unpaced, then segments leave in pairs (BBR's
/// TSO goal above 1.2 Mbit/s), each pair held for its length at the pacing rate; the sender's
/// recovery leaves cwnd to BBR (packet conservation: in flight + delivered, not PRR's share).
#[test]
fn bbr_paces_in_pairs_and_conserves_packets_in_recovery() {
    let mut s = sender(CongestionControl::Bbr, true);
    assert_eq!(send(&mut s, ms(0)).len(), 10, "the first 10 segments go unpaced");
    s.on_ack(ms(50), &ack(2, &[]));
    let m = s.bbr_metrics().unwrap();
    assert_eq!(m.mode, bbr::Mode::Startup);
    // 2.89 × 10 segments / 50 ms × 99 %: well above 1.2 Mbit/s, so bursts of two.
    let rate = s.pacing_rate().unwrap();
    assert!(rate > Bitrate::mbps(4), "{rate}");
    let pair = send(&mut s, ms(50));
    assert_eq!(indices(&pair), [10, 11]);
    let next = s.poll_timeout().unwrap();
    assert_eq!(next, ms(50) + rate.transmit_time(DataSize::bytes(2 * MSS)));
    assert_eq!(indices(&send(&mut s, next)), [12, 13]);

    // Segment 2 is lost: three segments SACKed above it start recovery with packet
    // conservation, cwnd = pipe + delivered.
    s.on_ack(ms(60), &ack(2, &[(3, 6)]));
    let m = s.metrics();
    assert_eq!(m.state, CongestionState::Recovery);
    let pipe = m.bytes_in_flight.as_bytes();
    assert_eq!(m.cwnd.as_bytes(), pipe + 3 * MSS, "in flight {pipe} + 3 delivered");
    assert_eq!(indices(&send(&mut s, ms(60)))[0], 2, "the retransmission first");
}
