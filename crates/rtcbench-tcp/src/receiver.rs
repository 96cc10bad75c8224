//! The TCP receiver: cumulative acknowledgments with SACK blocks (RFC 2018 §4), out-of-order
//! data kept as ranges, and delayed ACKs (RFC 5681 §4.2, RFC 1122 §4.2.3.2).
//!
//! ACK policy, as Linux's: an out-of-order segment, a duplicate, or a segment that fills all or
//! part of a hole is acknowledged at once (RFC 5681 §4.2); in-order data is acknowledged at
//! least every second full-sized segment and at most `max_delay` (Linux's minimum delayed-ACK
//! timeout, 40 ms) after it arrived. Linux's quick-ACK mode at the start of a connection is not
//! modelled. Each ACK is built when its trigger arrives, so a driver that delivers several
//! segments at one instant still gets one ACK per trigger.
//!
//! ECN feedback ([`TcpEcn`]): with classic ECN (RFC 3168 §6.1.3) a CE-marked segment sets ECE
//! on every ACK until a segment with CWR arrives. With AccECN (RFC 9768 §3.2.2) the receiver
//! counts CE-marked packets in r.cep and every ACK carries its low 3 bits in the ACE field; it
//! also acknowledges at once a CE-marked segment that follows an unmarked one (Change-Triggered
//! ACKs) and every second CE mark (Increment-Triggered ACKs, §3.2.2.5.1), so that the 3-bit
//! field never wraps between two ACKs. ACKs themselves are sent Not-ECT.

use std::collections::VecDeque;

use rtcbench_units::{DataSize, Duration, Instant, SeqNo};
use rtcbench_wire::Ecn;

use super::accecn::{INCREMENT_TRIGGER, INITIAL_CEP};
use super::wire::{unwrap_seq, SackBlock, TcpFlags, TcpRepr, MAX_SACK_BLOCKS};
use super::{Segment, SenderConfig, TcpEcn, WINDOW_SCALE_SHIFT};

/// Delayed ACK parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DelayedAck {
    /// ACK once this many full-sized segments are unacknowledged (RFC 5681 §4.2: at least
    /// every second).
    pub full_segments: u32,
    /// The longest an ACK waits (RFC 5681 §4.2: under 500 ms; Linux's `TCP_DELACK_MIN`).
    pub max_delay: Duration,
}

impl Default for DelayedAck {
    fn default() -> Self {
        Self { full_segments: 2, max_delay: Duration::from_millis(40) }
    }
}

/// How a receiver behaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReceiverConfig {
    pub src_port: u16,
    pub dst_port: u16,
    /// The sender's ISS (known from the handshake, which is not simulated).
    pub peer_iss: u32,
    /// The sender's SMSS: what a full-sized segment carries.
    pub smss: DataSize,
    /// `None`: acknowledge every segment at once.
    pub delayed_ack: Option<DelayedAck>,
    /// SACK negotiated: ACKs carry SACK blocks.
    pub sack: bool,
    /// Advertised receive window (scaled by [`WINDOW_SCALE_SHIFT`]; at most 65535 << shift).
    pub window: DataSize,
    /// The ECN feedback negotiated: none, RFC 3168's ECE/CWR, or AccECN's ACE counter.
    pub ecn: TcpEcn,
}

impl ReceiverConfig {
    /// The receiver at the other end of `sender`: ports swapped, its ECN, delayed ACKs on, the
    /// largest window the scale allows (so that it never limits the sender).
    pub fn for_sender(sender: &SenderConfig) -> Self {
        Self {
            src_port: sender.dst_port,
            dst_port: sender.src_port,
            peer_iss: sender.iss,
            smss: sender.smss,
            delayed_ack: Some(DelayedAck::default()),
            sack: sender.sack,
            window: DataSize::bytes(u64::from(u16::MAX) << WINDOW_SCALE_SHIFT),
            ecn: sender.ecn,
        }
    }
}

/// Counters of a receiver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReceiverMetrics {
    /// Bytes delivered in order to the application (goodput).
    pub bytes_delivered: DataSize,
    /// Bytes held above a hole.
    pub bytes_out_of_order: DataSize,
    pub segments_received: u64,
    pub acks_sent: u64,
    /// CE-marked segments received.
    pub ce_received: u64,
}

/// A TCP receiver of one connection, assumed established.
#[derive(Clone, Debug)]
pub struct TcpReceiver {
    cfg: ReceiverConfig,
    /// The first sequence number of the stream (ISS + 1).
    first_seq: u64,
    /// RCV.NXT.
    rcv_nxt: u64,
    /// Received ranges above RCV.NXT, disjoint and not adjacent, most recently changed first:
    /// the order RFC 2018 §4 reports them in.
    out_of_order: Vec<(u64, u64)>,
    /// Full-sized in-order segments not yet acknowledged.
    unacked_full_segments: u32,
    /// When the delayed ACK is due.
    ack_deadline: Option<Instant>,
    /// ACKs built but not yet polled.
    pending: VecDeque<Segment>,
    segments_received: u64,
    acks_sent: u64,
    /// r.cep (RFC 9768 §3.2.2): CE-marked packets received, from [`INITIAL_CEP`] (counted in
    /// every mode, fed back only with AccECN).
    r_cep: u64,
    /// r.cep when the previous ACK was sent.
    r_cep_acked: u64,
    /// The previous packet arrived CE-marked (for AccECN's change-triggered ACKs).
    last_ce: bool,
    /// Classic ECN: a CE arrived and no CWR since, so ACKs carry ECE (RFC 3168 §6.1.3).
    ece: bool,
}

impl TcpReceiver {
    pub fn new(cfg: ReceiverConfig) -> Self {
        let first_seq = u64::from(cfg.peer_iss) + 1;
        Self {
            cfg,
            first_seq,
            rcv_nxt: first_seq,
            out_of_order: Vec::new(),
            unacked_full_segments: 0,
            ack_deadline: None,
            pending: VecDeque::new(),
            segments_received: 0,
            acks_sent: 0,
            r_cep: INITIAL_CEP,
            r_cep_acked: INITIAL_CEP,
            last_ce: false,
            ece: false,
        }
    }

    /// A data segment arrived: its header, payload length and the ECN field it arrived with.
    pub fn on_segment(&mut self, now: Instant, header: &TcpRepr, payload: DataSize, ecn: Ecn) {
        if payload.is_zero() {
            return;
        }
        self.segments_received += 1;
        let ce = ecn == Ecn::Ce;
        let change_triggered = ce && !self.last_ce;
        self.last_ce = ce;
        self.r_cep += u64::from(ce);
        if self.cfg.ecn == TcpEcn::Classic {
            // RFC 3168 §6.1.3: CWR stops the echo; a CE on the same segment starts it again.
            self.ece = ce || (self.ece && !header.flags.cwr);
        }
        self.on_data(now, header, payload);
        // RFC 9768 §3.2.2.5.1: the ACK the data called for (if any) carries the new count;
        // otherwise a change to CE, or the second mark since the last ACK, is acknowledged now.
        let unreported = self.r_cep - self.r_cep_acked;
        if self.cfg.ecn == TcpEcn::L4s
            && (unreported >= INCREMENT_TRIGGER || (change_triggered && unreported > 0))
        {
            self.ack_now();
        }
    }

    /// Sequence-space bookkeeping and the ACK policy for data.
    fn on_data(&mut self, now: Instant, header: &TcpRepr, payload: DataSize) {
        let start = unwrap_seq(self.rcv_nxt, header.seq);
        let end = start + payload.as_bytes();
        let had_holes = !self.out_of_order.is_empty();
        if end <= self.rcv_nxt {
            self.ack_now(); // a duplicate: the sender may be missing our ACK
        } else if start > self.rcv_nxt {
            self.insert_out_of_order(start, end);
            self.ack_now(); // RFC 5681 §4.2: out-of-order data is acknowledged at once
        } else {
            self.rcv_nxt = end;
            self.pull_contiguous();
            if had_holes {
                self.ack_now(); // RFC 5681 §4.2: the segment filled (part of) a hole
            } else {
                self.delay_ack(now, payload);
            }
        }
    }

    /// Adds `[start, end)` above RCV.NXT, merging it with the ranges it touches; the merged range
    /// becomes the most recent.
    fn insert_out_of_order(&mut self, mut start: u64, mut end: u64) {
        self.out_of_order.retain(|&(s, e)| {
            let touches = s <= end && start <= e;
            if touches {
                start = start.min(s);
                end = end.max(e);
            }
            !touches
        });
        self.out_of_order.insert(0, (start, end));
    }

    /// Advances RCV.NXT over out-of-order ranges it now reaches.
    fn pull_contiguous(&mut self) {
        while let Some(i) = self.out_of_order.iter().position(|&(s, _)| s <= self.rcv_nxt) {
            let (_, e) = self.out_of_order.remove(i);
            self.rcv_nxt = self.rcv_nxt.max(e);
        }
    }

    fn delay_ack(&mut self, now: Instant, payload: DataSize) {
        let Some(delack) = self.cfg.delayed_ack else {
            self.ack_now();
            return;
        };
        if payload >= self.cfg.smss {
            self.unacked_full_segments += 1;
        }
        if self.unacked_full_segments >= delack.full_segments {
            self.ack_now();
        } else if self.ack_deadline.is_none() {
            self.ack_deadline = Some(now + delack.max_delay);
        }
    }

    fn ack_now(&mut self) {
        self.unacked_full_segments = 0;
        self.ack_deadline = None;
        self.acks_sent += 1;
        self.r_cep_acked = self.r_cep;
        let ack = self.ack_repr().to_bytes().expect("at most MAX_SACK_BLOCKS blocks");
        self.pending.push_back(Segment {
            header: ack,
            payload: DataSize::ZERO,
            retransmission: false,
            ecn: Ecn::NotEct,
        });
    }

    /// The ACK for the current state: RCV.NXT and, with SACK, up to four SACK blocks, the most
    /// recently changed first (RFC 2018 §4).
    fn ack_repr(&self) -> TcpRepr {
        let wire = |s: u64| SeqNo::new(s);
        let blocks = if self.cfg.sack { MAX_SACK_BLOCKS } else { 0 };
        TcpRepr {
            src_port: self.cfg.src_port,
            dst_port: self.cfg.dst_port,
            // The receiver sends no data: its sequence number stays at its ISS (0) + 1.
            seq: wire(1),
            ack: wire(self.rcv_nxt),
            flags: match self.cfg.ecn {
                TcpEcn::Off => TcpFlags::ACK,
                TcpEcn::Classic => TcpFlags { ece: self.ece, ..TcpFlags::ACK },
                // RFC 9768 §3.2.2.2: the least significant 3 bits of r.cep.
                TcpEcn::L4s => TcpFlags::ACK.with_ace(self.r_cep as u32),
            },
            window: (self.cfg.window.as_bytes() >> WINDOW_SCALE_SHIFT).min(u64::from(u16::MAX)) as u16,
            sack: self
                .out_of_order
                .iter()
                .take(blocks)
                .map(|&(s, e)| SackBlock { left: wire(s), right: wire(e) })
                .collect(),
        }
    }

    /// The next ACK to send.
    pub fn poll_transmit(&mut self, _now: Instant) -> Option<Segment> {
        self.pending.pop_front()
    }

    /// When the delayed ACK is due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.ack_deadline
    }

    pub fn on_timeout(&mut self, now: Instant) {
        if self.ack_deadline.is_some_and(|t| t <= now) {
            self.ack_now();
        }
    }

    pub fn metrics(&self) -> ReceiverMetrics {
        ReceiverMetrics {
            bytes_delivered: DataSize::bytes(self.rcv_nxt - self.first_seq),
            bytes_out_of_order: self.out_of_order.iter().map(|&(s, e)| DataSize::bytes(e - s)).sum(),
            segments_received: self.segments_received,
            acks_sent: self.acks_sent,
            ce_received: self.r_cep - INITIAL_CEP,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CongestionControl;

    const MSS: u64 = 1000;

    fn receiver(delayed: bool) -> TcpReceiver {
        let mut sender = SenderConfig::new(CongestionControl::Cubic);
        sender.iss = 0xFFFF_F000; // the stream wraps 32 bits after 4 kB
        sender.smss = DataSize::bytes(MSS);
        let mut cfg = ReceiverConfig::for_sender(&sender);
        if !delayed {
            cfg.delayed_ack = None;
        }
        TcpReceiver::new(cfg)
    }

    /// Delivers segment `i` (MSS bytes, counted from the first data byte) at `ms`.
    fn deliver(r: &mut TcpReceiver, i: u64, ms: i64) {
        let mut h = r.ack_repr();
        h.seq = SeqNo::new(r.first_seq + i * MSS);
        r.on_segment(Instant::from_millis(ms), &h, DataSize::bytes(MSS), Ecn::NotEct);
    }

    /// The ACKs waiting, as (ack in segments, SACK blocks in segments).
    fn acks(r: &mut TcpReceiver) -> Vec<(u64, Vec<(u64, u64)>)> {
        let seg = |r: &TcpReceiver, s: SeqNo<32>| (unwrap_seq(r.first_seq, s) - r.first_seq) / MSS;
        let mut out = Vec::new();
        while let Some(a) = r.poll_transmit(Instant::ZERO) {
            let h = TcpRepr::parse(&a.header).unwrap();
            out.push((seg(r, h.ack), h.sack.iter().map(|b| (seg(r, b.left), seg(r, b.right))).collect()));
        }
        out
    }

    #[test]
    fn delayed_ack_every_second_full_segment_or_after_40_ms() {
        let mut r = receiver(true);
        deliver(&mut r, 0, 0);
        assert!(acks(&mut r).is_empty());
        assert_eq!(r.poll_timeout(), Some(Instant::from_millis(40)));
        deliver(&mut r, 1, 1);
        assert_eq!(acks(&mut r), vec![(2, vec![])]);
        assert_eq!(r.poll_timeout(), None);
        deliver(&mut r, 2, 10);
        r.on_timeout(Instant::from_millis(49));
        assert!(acks(&mut r).is_empty());
        r.on_timeout(Instant::from_millis(50));
        assert_eq!(acks(&mut r), vec![(3, vec![])]);
    }

    #[test]
    fn small_segments_wait_for_the_timer() {
        let mut r = receiver(true);
        let mut h = r.ack_repr();
        for i in 0..3 {
            h.seq = SeqNo::new(r.first_seq + i * 100);
            r.on_segment(Instant::ZERO, &h, DataSize::bytes(100), Ecn::NotEct);
        }
        assert!(acks(&mut r).is_empty());
        r.on_timeout(Instant::from_millis(40));
        assert_eq!(r.metrics().bytes_delivered, DataSize::bytes(300));
        assert_eq!(r.metrics().acks_sent, 1);
    }

    #[test]
    fn every_segment_is_acknowledged_without_delayed_acks() {
        let mut r = receiver(false);
        for i in 0..3 {
            deliver(&mut r, i, 0);
        }
        assert_eq!(acks(&mut r), vec![(1, vec![]), (2, vec![]), (3, vec![])]);
    }

    /// RFC 2018 §4: out-of-order segments are acknowledged at once with SACK blocks, the block
    /// holding the newest segment first; filling a hole is acknowledged at once too. The
    /// sequence numbers cross the 32-bit wrap on the way.
    #[test]
    fn out_of_order_data_is_sacked_most_recent_first() {
        let mut r = receiver(true);
        deliver(&mut r, 0, 0);
        deliver(&mut r, 2, 1); // hole at 1
        deliver(&mut r, 3, 2);
        deliver(&mut r, 6, 3); // hole at 4-5
        deliver(&mut r, 8, 4); // hole at 7
        deliver(&mut r, 3, 5); // a duplicate: its block is reported first again
        assert_eq!(
            acks(&mut r),
            vec![
                (1, vec![(2, 3)]),
                (1, vec![(2, 4)]),
                (1, vec![(6, 7), (2, 4)]),
                (1, vec![(8, 9), (6, 7), (2, 4)]),
                (1, vec![(2, 4), (8, 9), (6, 7)]),
            ]
        );
        assert_eq!(r.metrics().bytes_out_of_order, DataSize::bytes(4 * MSS));
        deliver(&mut r, 1, 6); // fills the first hole
        deliver(&mut r, 7, 7); // joins 6 and 8
        assert_eq!(acks(&mut r), vec![(4, vec![(8, 9), (6, 7)]), (4, vec![(6, 9)])]);
        deliver(&mut r, 4, 8);
        deliver(&mut r, 5, 9);
        assert_eq!(acks(&mut r), vec![(5, vec![(6, 9)]), (9, vec![])]);
        assert_eq!(r.metrics().bytes_delivered, DataSize::bytes(9 * MSS));
    }

    #[test]
    fn no_blocks_without_sack() {
        let mut r = receiver(false);
        r.cfg.sack = false;
        deliver(&mut r, 2, 0);
        assert_eq!(acks(&mut r), vec![(0, vec![])]);
    }

    fn deliver_ecn(r: &mut TcpReceiver, i: u64, ms: i64, ecn: Ecn) {
        let mut h = r.ack_repr();
        h.seq = SeqNo::new(r.first_seq + i * MSS);
        r.on_segment(Instant::from_millis(ms), &h, DataSize::bytes(MSS), ecn);
    }

    /// The ACE fields of the ACKs waiting.
    fn aces(r: &mut TcpReceiver) -> Vec<u8> {
        std::iter::from_fn(|| r.poll_transmit(Instant::ZERO))
            .map(|a| TcpRepr::parse(&a.header).unwrap().flags.ace())
            .collect()
    }

    /// RFC 9768 §3.2.2: r.cep starts at 5 and every ACK carries it modulo 8; a CE after an
    /// unmarked packet is acknowledged at once (Change-Triggered ACK), and so is the second CE
    /// since the last ACK (Increment-Triggered ACK, n = 2), so the field cannot wrap between
    /// two ACKs.
    #[test]
    fn accecn_counts_ce_in_the_ace_field() {
        let mut sender = SenderConfig::new(CongestionControl::Prague);
        sender.smss = DataSize::bytes(MSS);
        let mut r = TcpReceiver::new(ReceiverConfig::for_sender(&sender));
        deliver_ecn(&mut r, 0, 0, Ecn::Ect1);
        deliver_ecn(&mut r, 1, 0, Ecn::Ect1);
        assert_eq!(aces(&mut r), vec![5], "a delayed ACK of two unmarked segments");
        deliver_ecn(&mut r, 2, 1, Ecn::Ce);
        assert_eq!(aces(&mut r), vec![6], "change-triggered");
        deliver_ecn(&mut r, 3, 2, Ecn::Ce);
        assert!(aces(&mut r).is_empty(), "one more CE: waits for the second or the timer");
        deliver_ecn(&mut r, 4, 3, Ecn::Ce);
        assert_eq!(aces(&mut r), vec![0], "r.cep = 8 wraps to 0b000");
        for i in 5..12 {
            deliver_ecn(&mut r, i, 4, Ecn::Ce);
        }
        assert_eq!(aces(&mut r), vec![2, 4, 6], "every second CE");
        assert_eq!(r.metrics().ce_received, 10);
    }

    /// RFC 3168 §6.1.3: after a CE every ACK carries ECE, until a segment with CWR arrives.
    #[test]
    fn classic_ecn_echoes_until_cwr() {
        let mut r = receiver(false);
        r.cfg.ecn = TcpEcn::Classic;
        let ece = |r: &mut TcpReceiver| -> Vec<bool> {
            std::iter::from_fn(|| r.poll_transmit(Instant::ZERO))
                .map(|a| TcpRepr::parse(&a.header).unwrap().flags.ece)
                .collect()
        };
        deliver_ecn(&mut r, 0, 0, Ecn::Ect0);
        deliver_ecn(&mut r, 1, 0, Ecn::Ce);
        deliver_ecn(&mut r, 2, 0, Ecn::Ect0);
        assert_eq!(ece(&mut r), vec![false, true, true]);
        let mut h = r.ack_repr();
        h.seq = SeqNo::new(r.first_seq + 3 * MSS);
        h.flags.cwr = true;
        r.on_segment(Instant::ZERO, &h, DataSize::bytes(MSS), Ecn::Ect0);
        assert_eq!(ece(&mut r), vec![false]);
    }

    #[test]
    fn at_most_four_blocks_are_reported() {
        let mut r = receiver(false);
        for i in [1, 3, 5, 7, 9] {
            deliver(&mut r, i, 0);
        }
        let last = acks(&mut r).pop().unwrap();
        assert_eq!(last, (0, vec![(9, 10), (7, 8), (5, 6), (3, 4)]));
    }
}
