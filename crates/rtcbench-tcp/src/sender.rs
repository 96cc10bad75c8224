//! The TCP sender: segmentation, the congestion window (slow start, HyStart++, NewReno, CUBIC
//! or Prague), loss recovery (SACK with PRR, or NewReno without SACK), the retransmission timer,
//! the response to ECN feedback and, for Prague, pacing.
//!
//! The connection starts established: the handshake is not simulated, the first data byte is
//! ISS + 1 and SACK is assumed negotiated when [`SenderConfig::sack`] is set.
//!
//! # States (Linux's `tcp_ca_state`, reported in [`SenderMetrics::state`])
//!
//! * **Open**: slow start (with HyStart++ if enabled, in the initial slow start only) while
//!   cwnd < ssthresh, congestion avoidance after. After more than an RTO without sending, cwnd
//!   restarts from min(IW, cwnd) (RFC 5681 §4.1).
//! * **Recovery**: fast recovery, entered once per window of data; it lasts until the recovery
//!   point (SND.NXT at entry) is cumulatively acknowledged. On entry the congestion controller
//!   sets ssthresh from cwnd (Linux's `ssthresh` hooks; see [`NewReno`] for why not from
//!   FlightSize). With SACK (RFC 6675 §5): entered when DupThresh duplicate ACKs arrive or a
//!   segment is deemed lost (RFC 6675 IsLost); lost segments are retransmitted first, then new
//!   data, as much as PRR (RFC 6937) allows; at the end cwnd = ssthresh. Without SACK: NewReno
//!   (RFC 6582 §3.2), with window inflation by duplicate ACKs and one retransmission per partial
//!   ACK. The ACK that ends a recovery does not grow cwnd. BBR sets cwnd itself instead
//!   ([`Bbr`]: packet conservation, then growth toward its target, the saved cwnd restored at
//!   the end), as Linux lets a `cong_control` controller do.
//! * **Loss**: after a retransmission timeout (RFC 6298 §5, RFC 5681 §3.1): cwnd = 1 SMSS, every
//!   unSACKed segment is lost and retransmitted in order in slow start, until everything sent
//!   before the timeout is acknowledged. Without RACK (not modelled), a lost retransmission is
//!   only repaired by a timeout, as in Linux before RACK.
//!
//! Every ACK that moves SND.UNA grows cwnd by the bytes it delivered (newly acknowledged or
//! SACKed), in slow start by at most 2·SMSS (RFC 3465 §2.2) or HyStart++'s L·SMSS, provided
//! cwnd limited the sender (Linux's `tcp_may_raise_cwnd` and `tcp_is_cwnd_limited`).
//!
//! # ECN ([`TcpEcn`])
//!
//! In the Open state, CE feedback reduces the window without a retransmission. NewReno and CUBIC
//! respond as to a loss (RFC 3168 §6.1.2): ssthresh from the controller, cwnd = ssthresh, at most
//! once per window of data, no growth on that ACK, and with classic ECN the next new segment
//! carries CWR. Prague reduces cwnd × (1 − α/2) at most once per round trip and keeps growing for
//! the unmarked bytes ([`Prague`]). During a recovery the loss has already reduced the window and
//! marks only feed Prague's α. A reduction ends slow start (ssthresh = the new cwnd).
//!
//! # Pacing ([`SenderConfig::pacing`], on for Prague and BBR)
//!
//! After each segment the next waits payload / rate, at the rate of [`TcpSender::pacing_rate`]
//! (BBR: after each burst of its TSO goal, as Linux paces an skb, and not before the 11th segment);
//! [`TcpSender::poll_timeout`] includes the pacer's deadline while it holds a segment back.
//! Prague's window may fall below two segments: it is kept in bytes, at least two segments may
//! be in flight, and the pacing rate cwnd / SRTT carries the fraction.

use std::collections::VecDeque;

use rtcbench_units::{Bitrate, DataSize, Duration, Instant, SeqNo};
use rtcbench_wire::Ecn;

use super::accecn::AceDecoder;
use super::bbr::{self, Bbr, BbrMetrics};
use super::cubic::Cubic;
use super::hystart::HyStart;
use super::newreno::NewReno;
use super::prague::{self, Prague};
use super::prr::Prr;
use super::rate::{DeliveryRate, RateSample};
use super::rtt::{RttEstimator, INITIAL_RTO, MAX_RTO, MIN_RTO};
use super::scoreboard::{Delivery, Scoreboard, DUP_THRESH};
use super::wire::{unwrap_seq, TcpFlags, TcpRepr};
use super::{Segment, TcpEcn, WINDOW_SCALE_SHIFT};

/// SMSS with no TCP options on data segments: a 1500-byte IPv4 packet (20 + 20 + 1460).
pub const DEFAULT_SMSS: DataSize = DataSize::bytes(1460);
/// Initial window in segments (RFC 6928 §2: min(10·MSS, max(2·MSS, 14600 bytes)) = 10 segments
/// for MSS ≤ 1460).
pub const INITIAL_WINDOW_SEGMENTS: u64 = 10;
/// L of RFC 3465 §2.2: standard slow start grows cwnd by at most 2·SMSS per ACK.
const SLOW_START_L: u64 = 2;

/// The congestion controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CongestionControl {
    /// Reno's AIMD (RFC 5681 §3.1).
    NewReno,
    /// CUBIC (RFC 9438).
    Cubic,
    /// TCP Prague (draft-briscoe-iccrg-prague-congestion-control-04), L4S's scalable congestion
    /// control: needs [`TcpEcn::L4s`].
    Prague,
    /// BBR v1 (draft-cardwell-iccrg-bbr-congestion-control-00) as Linux's `tcp_bbr`: a model
    /// of the path's bandwidth and RTT sets a pacing rate and a cwnd cap ([`Bbr`]).
    Bbr,
}

/// What the application gives the sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Application {
    /// An infinite backlog: the sender is only ever limited by its windows.
    Bulk,
    /// Bytes appended with [`TcpSender::write`]; [`SenderEvent::AllAcked`] marks the end of each
    /// burst.
    Writes,
}

/// How a sender behaves. [`SenderConfig::new`] gives Linux's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SenderConfig {
    pub src_port: u16,
    pub dst_port: u16,
    /// Initial send sequence number; the first data byte is ISS + 1.
    pub iss: u32,
    /// Sender maximum segment size (payload bytes per segment).
    pub smss: DataSize,
    pub congestion_control: CongestionControl,
    /// HyStart++ (RFC 9406) in the initial slow start.
    pub hystart: bool,
    /// SACK negotiated: RFC 6675 recovery with PRR; otherwise NewReno recovery (RFC 6582).
    pub sack: bool,
    /// Initial window in segments (RFC 6928).
    pub initial_window_segments: u64,
    /// RTO before the first RTT sample (RFC 6298 §2.1).
    pub initial_rto: Duration,
    /// The least margin of the RTO above SRTT (Linux's `TCP_RTO_MIN`; see [`super::rtt`]).
    pub min_rto: Duration,
    /// The ceiling of the RTO, backoff included.
    pub max_rto: Duration,
    pub application: Application,
    /// The ECN negotiated (Prague needs [`TcpEcn::L4s`]).
    pub ecn: TcpEcn,
    /// Pace transmissions at [`TcpSender::pacing_rate`] (Linux with the fq qdisc, which Prague
    /// asks for, or Linux's internal pacing, which BBR always has); off, segments go out as soon
    /// as the windows allow.
    pub pacing: bool,
    /// Seeds the controller's random choices (BBR's start phase in ProbeBW).
    pub seed: u64,
}

impl SenderConfig {
    /// A bulk sender with `congestion_control` and Linux's defaults: SACK, IW10, RTO between
    /// 200 ms and 120 s, HyStart++ with CUBIC (Linux's CUBIC runs its own HyStart by default)
    /// and none with NewReno and Prague (Linux's Reno has none; Prague ends slow start at the
    /// first CE mark); no ECN and no pacing, except for Prague (L4S ECN and pacing) and BBR
    /// (pacing, which Linux's BBR always does, with fq or by itself).
    pub fn new(congestion_control: CongestionControl) -> Self {
        let prague = congestion_control == CongestionControl::Prague;
        let bbr = congestion_control == CongestionControl::Bbr;
        Self {
            src_port: 49152,
            dst_port: 5001,
            iss: 0,
            smss: DEFAULT_SMSS,
            congestion_control,
            hystart: congestion_control == CongestionControl::Cubic,
            sack: true,
            initial_window_segments: INITIAL_WINDOW_SEGMENTS,
            initial_rto: INITIAL_RTO,
            min_rto: MIN_RTO,
            max_rto: MAX_RTO,
            application: Application::Bulk,
            ecn: if prague { TcpEcn::L4s } else { TcpEcn::Off },
            pacing: prague || bbr,
            seed: 0,
        }
    }
}

/// The sender's congestion state: the phase of the window while nothing is being repaired, or
/// Linux's Recovery and Loss states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CongestionState {
    SlowStart,
    /// HyStart++'s Conservative Slow Start (RFC 9406 §4.2).
    ConservativeSlowStart,
    CongestionAvoidance,
    /// Fast recovery.
    Recovery,
    /// After a retransmission timeout.
    Loss,
}

impl CongestionState {
    pub fn name(self) -> &'static str {
        match self {
            Self::SlowStart => "slow-start",
            Self::ConservativeSlowStart => "conservative-slow-start",
            Self::CongestionAvoidance => "congestion-avoidance",
            Self::Recovery => "recovery",
            Self::Loss => "loss",
        }
    }
}

/// A sender's state and counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SenderMetrics {
    pub cwnd: DataSize,
    /// `None` while ssthresh is still "arbitrarily high" (RFC 5681 §3.1).
    pub ssthresh: Option<DataSize>,
    pub srtt: Option<Duration>,
    /// The RTO in force, backoff included.
    pub rto: Duration,
    pub state: CongestionState,
    /// RFC 6675's pipe: bytes presumed in the network.
    pub bytes_in_flight: DataSize,
    /// Bytes cumulatively acknowledged.
    pub bytes_acked: DataSize,
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: DataSize,
    /// Segments retransmitted.
    pub retransmits: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Fast recovery episodes.
    pub recoveries: u64,
    /// CE-marked packets the receiver reported (AccECN), or ACKs with ECE (classic ECN).
    pub ce_marked: u64,
    /// Window reductions on ECN feedback.
    pub ecn_reductions: u64,
}

/// Something the application may want to know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SenderEvent {
    /// Every byte written so far is acknowledged (an [`Application::Writes`] sender): a burst
    /// (short flow) is complete.
    AllAcked {
        at: Instant,
        /// Bytes written and acknowledged since the start.
        total: DataSize,
    },
}

/// The congestion controller proper: what differs between NewReno, CUBIC, Prague and BBR.
/// BBR sets cwnd itself on every ACK (Linux's `cong_control` hook), so the sender's slow start,
/// congestion avoidance and PRR do not apply to it.
#[derive(Clone, Debug)]
enum Controller {
    NewReno(NewReno),
    Cubic(Cubic),
    Prague(Prague),
    Bbr(Box<Bbr>),
}

impl Controller {
    fn new(cfg: &SenderConfig) -> Self {
        let smss = cfg.smss;
        match cfg.congestion_control {
            CongestionControl::NewReno => Self::NewReno(NewReno::new(smss)),
            CongestionControl::Cubic => Self::Cubic(Cubic::new(smss)),
            CongestionControl::Prague => Self::Prague(Prague::new(smss)),
            CongestionControl::Bbr => {
                let iw = smss * cfg.initial_window_segments;
                Self::Bbr(Box::new(Bbr::new(smss, Instant::ZERO, iw, cfg.seed)))
            }
        }
    }

    fn bbr(&self) -> Option<&Bbr> {
        match self {
            Self::Bbr(b) => Some(b),
            _ => None,
        }
    }

    /// Congestion avoidance for an ACK of `info.delivered` bytes, `info.ce` packets CE-marked.
    fn on_ack(&mut self, now: Instant, cwnd: DataSize, info: &AckInfo, srtt: Duration) -> DataSize {
        match self {
            Self::NewReno(r) => r.on_ack(cwnd, info.delivered),
            Self::Cubic(c) => c.on_ack(now, cwnd, info.delivered, srtt),
            Self::Prague(p) => p.on_ack(cwnd, info.delivered, info.ce),
            Self::Bbr(_) => cwnd,
        }
    }

    /// ssthresh after a loss (or, for NewReno and CUBIC, CE feedback).
    fn on_congestion_event(&mut self, cwnd: DataSize) -> DataSize {
        match self {
            Self::NewReno(r) => r.on_congestion_event(cwnd),
            Self::Cubic(c) => c.on_congestion_event(cwnd),
            Self::Prague(p) => p.on_congestion_event(cwnd),
            Self::Bbr(b) => b.on_enter_recovery(cwnd).unwrap_or(DataSize::INFINITE),
        }
    }

    /// ssthresh after a timeout.
    fn on_timeout(&mut self, cwnd: DataSize) -> DataSize {
        match self {
            Self::NewReno(r) => r.on_congestion_event(cwnd),
            Self::Cubic(c) => c.on_timeout(cwnd),
            Self::Prague(p) => p.on_congestion_event(cwnd),
            Self::Bbr(b) => b.on_enter_recovery(cwnd).unwrap_or(DataSize::INFINITE),
        }
    }

    fn prague(&self) -> Option<&Prague> {
        match self {
            Self::Prague(p) => Some(p),
            _ => None,
        }
    }

    fn on_slow_start_exit(&mut self, cwnd: DataSize) {
        if let Self::Cubic(c) = self {
            c.on_slow_start_exit(cwnd);
        }
    }

    fn on_idle_restart(&mut self) {
        if let Self::Cubic(c) = self {
            c.on_idle_restart();
        }
    }
}

/// How fast recovery decides what to send.
#[derive(Clone, Debug)]
enum RecoveryMode {
    /// RFC 6675 with PRR.
    Sack(Prr),
    /// RFC 6582; whether a partial ACK has arrived (only the first restarts the timer).
    NewReno { partial_ack_seen: bool },
}

#[derive(Clone, Debug)]
enum Phase {
    Open,
    /// Fast recovery until SND.UNA reaches the recovery point (RFC 6675 RecoveryPoint, RFC 6582
    /// recover).
    Recovery {
        recovery_point: u64,
        mode: RecoveryMode,
    },
    /// After a timeout, until SND.UNA reaches what was SND.NXT then (Linux's `high_seq`).
    Loss {
        recovery_point: u64,
    },
}

/// What to transmit next.
enum Next {
    /// The lost segment starting here.
    Retransmit(u64),
    /// New data of this length.
    New(u64),
}

/// What one ACK told the sender.
struct AckInfo {
    /// SND.UNA moved.
    advanced: bool,
    /// Bytes newly cumulatively acknowledged.
    acked: DataSize,
    /// DeliveredData (RFC 6937): bytes newly acknowledged or SACKed.
    delivered: DataSize,
    /// A duplicate ACK (RFC 5681 §2; with SACK, RFC 6675 §2: one that SACKs new data).
    duplicate: bool,
    rtt: Option<Duration>,
    /// CE-marked packets this ACK reports: AccECN's count, or 1 for an ECE flag (classic ECN).
    ce: u64,
    /// The delivery-rate sample (only BBR reads it).
    rate: RateSample,
}

/// A TCP sender of one connection (see the module docs).
#[derive(Clone, Debug)]
pub struct TcpSender {
    cfg: SenderConfig,
    /// The first data byte (ISS + 1); sequence numbers are 64-bit, unwrapped.
    first_seq: u64,
    /// SND.UNA.
    snd_una: u64,
    /// SND.NXT: the next new byte.
    snd_nxt: u64,
    /// The end of the data written; `None` for a bulk sender.
    write_end: Option<u64>,
    /// SND.WND in bytes, from the latest ACK.
    snd_wnd: u64,
    /// The window field of the latest ACK (a change makes an ACK not a duplicate).
    last_window_field: u16,
    scoreboard: Scoreboard,
    rtt: RttEstimator,
    rto_deadline: Option<Instant>,
    cwnd: DataSize,
    /// `DataSize::INFINITE` until the first loss or HyStart++ exit.
    ssthresh: DataSize,
    cc: Controller,
    /// HyStart++ while the initial slow start lasts.
    hystart: Option<HyStart>,
    phase: Phase,
    /// Duplicate ACKs in a row (DupAcks of RFC 6675).
    dupacks: u32,
    /// The last transmission attempt was stopped by the congestion window with data waiting.
    cwnd_limited: bool,
    last_send: Option<Instant>,
    bytes_sent: DataSize,
    retransmits: u64,
    timeouts: u64,
    recoveries: u64,
    events: VecDeque<SenderEvent>,
    /// s.cep and the ACE decoding (AccECN).
    ace: AceDecoder,
    /// ACKs that carried ECE (classic ECN).
    ece_acks: u64,
    ecn_reductions: u64,
    /// NewReno and CUBIC reduce on CE once per window: not before SND.UNA reaches this (SND.NXT
    /// at the last reduction).
    ecn_recovery_point: u64,
    /// Classic ECN: the next new segment carries CWR (RFC 3168 §6.1.2).
    cwr_pending: bool,
    /// The pacer lets the next segment go at this instant.
    next_send: Option<Instant>,
    /// The pacer holds a segment back until this instant.
    pacing_wakeup: Option<Instant>,
    /// Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation), BBR's input.
    delivery_rate: DeliveryRate,
    /// Data segments sent, retransmissions included (Linux's `data_segs_out`).
    data_segments_sent: u64,
    /// BBR's current burst of back-to-back segments.
    burst: Option<Burst>,
}

/// Segments sent back to back at one instant and paced as one (a Linux TSO/GSO skb).
#[derive(Clone, Copy, Debug)]
struct Burst {
    at: Instant,
    segments: u64,
    bytes: DataSize,
    /// More segments may join it.
    open: bool,
}

impl TcpSender {
    pub fn new(cfg: SenderConfig) -> Self {
        let first_seq = u64::from(cfg.iss) + 1;
        Self {
            first_seq,
            snd_una: first_seq,
            snd_nxt: first_seq,
            write_end: match cfg.application {
                Application::Bulk => None,
                Application::Writes => Some(first_seq),
            },
            snd_wnd: u64::from(u16::MAX) << WINDOW_SCALE_SHIFT,
            last_window_field: u16::MAX,
            scoreboard: Scoreboard::default(),
            rtt: RttEstimator::new(cfg.initial_rto, cfg.min_rto, cfg.max_rto),
            rto_deadline: None,
            cwnd: cfg.smss * cfg.initial_window_segments,
            ssthresh: DataSize::INFINITE,
            cc: Controller::new(&cfg),
            hystart: cfg.hystart.then(HyStart::new),
            phase: Phase::Open,
            dupacks: 0,
            cwnd_limited: false,
            last_send: None,
            bytes_sent: DataSize::ZERO,
            retransmits: 0,
            timeouts: 0,
            recoveries: 0,
            events: VecDeque::new(),
            ace: AceDecoder::default(),
            ece_acks: 0,
            ecn_reductions: 0,
            ecn_recovery_point: first_seq,
            cwr_pending: false,
            next_send: None,
            pacing_wakeup: None,
            delivery_rate: DeliveryRate::new(Instant::ZERO),
            data_segments_sent: 0,
            burst: None,
            cfg,
        }
    }

    pub fn config(&self) -> &SenderConfig {
        &self.cfg
    }

    /// Appends `size` bytes to the send buffer of an [`Application::Writes`] sender; a bulk
    /// sender always has data and ignores it.
    pub fn write(&mut self, size: DataSize) {
        if let Some(end) = &mut self.write_end {
            *end += size.as_bytes();
        }
    }

    // -----------------------------------------------------------------------------------------
    // Transmission
    // -----------------------------------------------------------------------------------------

    /// The next segment to send now, if the windows and the pacer allow one.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Segment> {
        self.pacing_wakeup = None;
        if let Some(start) = self.newreno_retransmission() {
            return Some(self.retransmit(now, start));
        }
        self.restart_after_idle(now);
        let Some(next) = self.next_segment() else {
            self.cwnd_limited = false;
            self.check_app_limited();
            return None;
        };
        if !self.window_open() {
            self.cwnd_limited = true;
            return None;
        }
        let in_burst = self.burst.is_some_and(|b| b.at == now && b.open);
        if let Some(at) = self.next_send.filter(|&t| t > now && !in_burst) {
            // The congestion controller's rate, not the application, holds the sender back: as
            // limiting as a full window for the growth rule.
            self.pacing_wakeup = Some(at);
            self.cwnd_limited = true;
            return None;
        }
        let seg = match next {
            Next::Retransmit(start) => self.retransmit(now, start),
            Next::New(len) => self.send_new(now, len),
        };
        if self.cfg.pacing {
            self.next_send = self.pacing_rate().map(|rate| now + rate.transmit_time(seg.payload));
            if let Some(b) = self.cc.bbr() {
                self.pace_bbr_burst(now, b.tso_segs_goal(), seg.payload);
            }
        }
        Some(seg)
    }

    /// BBR's departures as Linux makes them: segments leave in bursts of `goal` (BBR's TSO
    /// goal, 2 at 10 Mbit/s: the kernel's departures in emulation come in pairs, half of the gaps
    /// under 100 µs) sent back to back, each burst paced as one (`tcp_update_skb_after_send`);
    /// a burst is cut short when the window closes. The first 10 segments go unpaced, as Linux's
    /// internal pacing and fq let them.
    fn pace_bbr_burst(&mut self, now: Instant, goal: u64, payload: DataSize) {
        let burst = match self.burst {
            Some(b) if b.at == now && b.open => {
                Burst { segments: b.segments + 1, bytes: b.bytes + payload, ..b }
            }
            _ => Burst { at: now, segments: 1, bytes: payload, open: true },
        };
        self.burst = Some(Burst { open: burst.segments < goal, ..burst });
        if self.data_segments_sent <= 10 {
            self.next_send = None;
        } else if let Some(rate) = self.pacing_rate() {
            self.next_send = Some(now + rate.transmit_time(burst.bytes));
        }
    }

    /// Draft-cheng-iccrg-delivery-rate-estimation, "Detecting application-limited phases" (Linux
    /// `tcp_rate_check_app_limited`): nothing to send, the window not full and nothing lost
    /// waiting for a retransmission, so the application holds the flight back.
    fn check_app_limited(&mut self) {
        let pipe = self.scoreboard.pipe();
        if self.new_data_len() == 0 && pipe < self.cwnd && self.scoreboard.next_lost().is_none() {
            self.delivery_rate.on_app_limited(pipe);
        }
    }

    /// Something other than the congestion window stopped the sender with data waiting (TCP
    /// Small Queues, see `rtcbench_sim::cross::TcpSource`): cwnd limited the sender only if it is
    /// also full, so an open window stops cwnd growth (Linux's `tcp_is_cwnd_limited`).
    pub fn on_throttled(&mut self) {
        self.cwnd_limited = !self.window_open();
    }

    /// The rate Linux would pace at (`tcp_update_pacing_rate`, net/ipv4/tcp_input.c):
    /// max(cwnd, bytes in flight) / SRTT, times 200 % while cwnd < ssthresh / 2 (slow start)
    /// and 120 % after (`tcp_pacing_ss_ratio`, `tcp_pacing_ca_ratio`). Prague paces at 100 %
    /// after slow start (Linux Prague sets its own rate) and from cwnd alone, so that a window
    /// below the two segments allowed in flight still sets the rate; at least
    /// [`prague::MIN_RATE`]. `None` before the first RTT sample. A sender with
    /// [`SenderConfig::pacing`] paces at it; TCP Small Queues sizes its limit from it.
    pub fn pacing_rate(&self) -> Option<Bitrate> {
        if let Some(b) = self.cc.bbr() {
            return Some(b.pacing_rate());
        }
        let srtt = self.rtt.srtt().filter(|d| !d.is_zero())?;
        let slow_start = self.cwnd * 2 < self.ssthresh;
        if self.cc.prague().is_some() {
            let ratio = if slow_start { 2.0 } else { 1.0 };
            return Some((self.cwnd / srtt * ratio).max(prague::MIN_RATE));
        }
        let ratio = if slow_start { 2.0 } else { 1.2 };
        Some(self.cwnd.max(self.scoreboard.pipe()) / srtt * ratio)
    }

    /// Lost segments first (RFC 6675 NextSeg rule 1), then new data the receive window allows.
    fn next_segment(&self) -> Option<Next> {
        if let Some(lost) = self.scoreboard.next_lost() {
            return Some(Next::Retransmit(lost.start));
        }
        let len = self.new_data_len();
        (len > 0 && self.snd_nxt + len <= self.snd_una + self.snd_wnd).then_some(Next::New(len))
    }

    /// In NewReno fast recovery, the retransmission of the first unacknowledged segment goes
    /// out whatever the window (RFC 6582 §3.2 steps 2 and 5).
    fn newreno_retransmission(&self) -> Option<u64> {
        match self.phase {
            Phase::Recovery { mode: RecoveryMode::NewReno { .. }, .. } => {
                self.scoreboard.next_lost().map(|s| s.start)
            }
            _ => None,
        }
    }

    /// Whether the congestion window has room for a full segment: cwnd − pipe ≥ SMSS (RFC 6675
    /// §5 step C). NewReno fast recovery compares the inflated cwnd with FlightSize
    /// (RFC 5681 §3.2 step 4).
    fn window_open(&self) -> bool {
        let in_flight = match self.phase {
            Phase::Recovery { mode: RecoveryMode::NewReno { .. }, .. } => self.flight_size(),
            _ => self.scoreboard.pipe(),
        };
        self.sending_window().saturating_sub(in_flight) >= self.cfg.smss
    }

    /// The window that limits what is in flight: cwnd, except that Prague's fractional window
    /// is rounded up to whole segments and at least two while open (Linux Prague), its pacing
    /// rate carrying the fraction.
    fn sending_window(&self) -> DataSize {
        if self.cc.prague().is_none() || !matches!(self.phase, Phase::Open) {
            return self.cwnd;
        }
        let smss = self.cfg.smss.as_bytes();
        DataSize::bytes(self.cwnd.as_bytes().div_ceil(smss).max(2) * smss)
    }

    /// Payload of the next new segment: up to SMSS of the data written and not yet sent.
    fn new_data_len(&self) -> u64 {
        let available = self.write_end.map_or(u64::MAX, |end| end - self.snd_nxt);
        available.min(self.cfg.smss.as_bytes())
    }

    /// FlightSize (RFC 5681 §2): data sent and not cumulatively acknowledged.
    fn flight_size(&self) -> DataSize {
        DataSize::bytes(self.snd_nxt - self.snd_una)
    }

    /// RFC 5681 §4.1: new data after more than an RTO without sending restarts from
    /// RW = min(IW, cwnd); CUBIC's epoch must not count the idle time (RFC 9438 §5.8).
    fn restart_after_idle(&mut self, now: Instant) {
        // Linux skips the restart for a controller that sets cwnd itself (BBR's own restart is
        // `Bbr::on_transmit_start`).
        if self.cc.bbr().is_some() {
            return;
        }
        let idle = self.scoreboard.is_empty() && self.last_send.is_some_and(|t| now - t > self.rtt.rto());
        if idle && self.new_data_len() > 0 {
            self.cwnd = self.cwnd.min(self.cfg.smss * self.cfg.initial_window_segments);
            self.cc.on_idle_restart();
        }
    }

    fn send_new(&mut self, now: Instant, len: u64) -> Segment {
        let start = self.snd_nxt;
        self.snd_nxt += len;
        let tx = self.tx_state(now);
        self.scoreboard.push(start, self.snd_nxt, now, tx);
        self.emit(now, start, DataSize::bytes(len), false)
    }

    fn retransmit(&mut self, now: Instant, start: u64) -> Segment {
        let tx = self.tx_state(now);
        let len = self.scoreboard.on_retransmit(start, now, tx);
        self.retransmits += 1;
        self.emit(now, start, len, true)
    }

    /// The delivery-rate snapshot of a transmission at `now`. With nothing in flight after an
    /// application-limited spell, BBR restarts from idle (Linux's `CA_EVENT_TX_START`).
    fn tx_state(&mut self, now: Instant) -> super::rate::TxState {
        let tx = self.delivery_rate.on_send(now, self.scoreboard.is_empty());
        if let Controller::Bbr(b) = &mut self.cc {
            if tx.app_limited && self.scoreboard.pipe().is_zero() {
                self.cwnd = b.on_transmit_start(now, self.cwnd, self.delivery_rate.delivered_time());
            }
        }
        tx
    }

    /// Builds the segment and does the bookkeeping common to every transmission.
    fn emit(&mut self, now: Instant, start: u64, payload: DataSize, retransmission: bool) -> Segment {
        self.bytes_sent += payload;
        self.data_segments_sent += 1;
        self.last_send = Some(now);
        if let Phase::Recovery { mode: RecoveryMode::Sack(prr), .. } = &mut self.phase {
            prr.on_sent(payload); // RFC 6937: prr_out += data sent
        }
        // RFC 6298 §5.1: start the timer when data is sent and it is not running.
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
        // RFC 3168 §6.1.2: CWR on the first new segment after a reduction.
        let cwr = !retransmission && std::mem::take(&mut self.cwr_pending);
        let header = TcpRepr {
            src_port: self.cfg.src_port,
            dst_port: self.cfg.dst_port,
            seq: SeqNo::new(start),
            // The receiver sends no data: its ISS is 0 and the acknowledgment stays at 1.
            ack: SeqNo::new(1),
            flags: TcpFlags { cwr, ..TcpFlags::ACK },
            window: u16::MAX,
            sack: Vec::new(),
        };
        let ecn = match self.cfg.ecn {
            TcpEcn::Off => Ecn::NotEct,
            // RFC 3168 §6.1.5: retransmissions are not ECN-capable.
            TcpEcn::Classic if retransmission => Ecn::NotEct,
            TcpEcn::Classic => Ecn::Ect0,
            // RFC 9331 §4.1: every packet of an L4S flow carries ECT(1).
            TcpEcn::L4s => Ecn::Ect1,
        };
        Segment { header: header.to_bytes().expect("no SACK blocks"), payload, retransmission, ecn }
    }

    // -----------------------------------------------------------------------------------------
    // Acknowledgments
    // -----------------------------------------------------------------------------------------

    /// An ACK arrived.
    pub fn on_ack(&mut self, now: Instant, header: &TcpRepr) {
        if !header.flags.ack {
            return;
        }
        let ack = unwrap_seq(self.snd_una, header.ack);
        // RFC 9293 §3.10.7.4: an ACK of unsent data is ignored; an old one carries nothing new.
        if ack < self.snd_una || ack > self.snd_nxt {
            return;
        }
        let prior_in_flight = self.scoreboard.pipe();
        let lost_before = self.scoreboard.lost_marks();
        let info = self.process_ack(now, ack, header);
        if let Some(r) = info.rtt {
            self.rtt.on_sample(r);
        }
        self.dupacks = if info.advanced { 0 } else { self.dupacks + u32::from(info.duplicate) };
        if let Controller::Prague(p) = &mut self.cc {
            p.on_feedback(self.snd_una, self.snd_nxt, info.delivered, info.ce);
        }
        let ended_fast_recovery = self.leave_recovery_if_done();
        if self.cc.bbr().is_some() {
            if matches!(self.phase, Phase::Open) && self.loss_detected() {
                self.enter_recovery(info.delivered);
            }
            self.bbr_on_ack(now, &info, prior_in_flight, self.scoreboard.lost_marks() - lost_before);
        } else {
            self.cwnd_on_ack(now, &info, ended_fast_recovery);
        }
        if info.advanced {
            self.restart_timer(now);
            self.report_all_acked(now);
        }
    }

    /// The window of NewReno, CUBIC and Prague after an ACK, by the sender's state.
    fn cwnd_on_ack(&mut self, now: Instant, info: &AckInfo, ended_fast_recovery: bool) {
        match self.phase {
            Phase::Open if self.loss_detected() => self.enter_recovery(info.delivered),
            Phase::Recovery { .. } => self.on_ack_in_recovery(now, info),
            // The ACK that ends fast recovery was accounted for by it.
            _ if ended_fast_recovery => {}
            Phase::Open => {
                if !self.respond_to_ce(info) {
                    self.grow_cwnd(now, info);
                }
            }
            Phase::Loss { .. } => self.grow_cwnd(now, info),
        }
    }

    /// BBR's cwnd and pacing rate after an ACK (Linux's `bbr_main`, called where other
    /// controllers grow or reduce cwnd: after the scoreboard and the loss state are updated).
    fn bbr_on_ack(&mut self, now: Instant, info: &AckInfo, prior_in_flight: DataSize, losses: u64) {
        let in_flight = self.scoreboard.pipe();
        let sample = bbr::AckSample {
            now,
            rate: info.rate,
            rtt: info.rtt,
            srtt: self.rtt.srtt(),
            losses,
            lost_total: self.scoreboard.lost_marks(),
            delivered: self.delivery_rate.delivered(),
            delivered_time: self.delivery_rate.delivered_time(),
            prior_in_flight,
            in_flight,
            pacing_delay: self.next_send.map_or(Duration::ZERO, |t| (t - now).max(Duration::ZERO)),
            state: match self.phase {
                Phase::Open => bbr::LossState::Open,
                Phase::Recovery { .. } => bbr::LossState::Recovery,
                Phase::Loss { .. } => bbr::LossState::Loss,
            },
            cwnd: self.cwnd,
        };
        let Controller::Bbr(b) = &mut self.cc else { return };
        let response = b.on_ack(&sample);
        self.cwnd = response.cwnd;
        self.ssthresh = b.ssthresh().unwrap_or(DataSize::INFINITE);
        if response.app_limited {
            self.delivery_rate.on_app_limited(in_flight);
        }
    }

    /// Updates SND.UNA, SND.WND and the scoreboard from the ACK.
    fn process_ack(&mut self, now: Instant, ack: u64, header: &TcpRepr) -> AckInfo {
        let window_changed = header.window != self.last_window_field;
        self.last_window_field = header.window;
        self.snd_wnd = u64::from(header.window) << WINDOW_SCALE_SHIFT;
        let advanced = ack > self.snd_una;
        let mut delivery = self.scoreboard.on_cumulative_ack(ack);
        let acked = delivery.acked;
        self.snd_una = ack;
        let mut sacked = DataSize::ZERO;
        if self.cfg.sack {
            let d = self.apply_sack_blocks(header);
            sacked = d.delivered;
            delivery.merge(d);
            self.scoreboard.mark_lost(self.cfg.smss);
        }
        let outstanding = self.snd_una < self.snd_nxt;
        let duplicate =
            !advanced && outstanding && if self.cfg.sack { !sacked.is_zero() } else { !window_changed };
        let ce = match self.cfg.ecn {
            TcpEcn::Off => 0,
            TcpEcn::Classic => {
                self.ece_acks += u64::from(header.flags.ece);
                u64::from(header.flags.ece)
            }
            // RFC 9768 §3.2.2.5.2 bounds the count by the packets the ACK delivered.
            TcpEcn::L4s => {
                let packets = delivery.delivered.as_bytes().div_ceil(self.cfg.smss.as_bytes());
                self.ace.on_ack(header.flags.ace(), packets)
            }
        };
        let rtt = rtt_sample(now, &delivery);
        let rate = self.delivery_rate.on_ack(now, delivery.delivered, delivery.latest_tx, rtt);
        AckInfo { advanced, acked, delivered: delivery.delivered, duplicate, rtt, ce, rate }
    }

    /// CE feedback in the Open state (see the module docs); whether this ACK must not grow cwnd.
    fn respond_to_ce(&mut self, info: &AckInfo) -> bool {
        if info.ce == 0 {
            return false;
        }
        let reduced = match &mut self.cc {
            Controller::Prague(p) => {
                let srtt = self.rtt.srtt().unwrap_or(Duration::ZERO);
                p.on_ce(self.cwnd, info.ce, self.snd_una, self.snd_nxt, srtt)
            }
            // RFC 3168 §6.1.2: as a loss, once per window, and "the TCP sender SHOULD NOT increase
            // the congestion window in response to" an ECE.
            _ if self.snd_una < self.ecn_recovery_point => return true,
            cc => {
                self.ecn_recovery_point = self.snd_nxt;
                self.cwr_pending = self.cfg.ecn == TcpEcn::Classic;
                Some(cc.on_congestion_event(self.cwnd))
            }
        };
        if let Some(cwnd) = reduced {
            self.ecn_reductions += 1;
            self.cwnd = cwnd;
            self.ssthresh = cwnd;
            // RFC 9406 §4.2: congestion ends slow start, HyStart++'s too.
            self.hystart = None;
        }
        self.cc.prague().is_none()
    }

    /// Marks what the SACK blocks cover; blocks outside (SND.UNA, SND.NXT] are ignored.
    fn apply_sack_blocks(&mut self, header: &TcpRepr) -> Delivery {
        let mut total = Delivery::default();
        for block in &header.sack {
            let left = unwrap_seq(self.snd_una, block.left);
            let right = unwrap_seq(self.snd_una, block.right);
            if self.snd_una <= left && left < right && right <= self.snd_nxt {
                total.merge(self.scoreboard.on_sack_block(left, right));
            }
        }
        total
    }

    /// Fast recovery (RFC 6675 §5 step 4: DupAcks ≥ DupThresh or IsLost(HighACK + 1), where,
    /// as Linux's `tcp_time_to_recover`, any segment deemed lost counts, not only the first;
    /// without SACK, RFC 6582 §3.2 step 2: the third duplicate ACK).
    fn loss_detected(&self) -> bool {
        self.dupacks >= DUP_THRESH || (self.cfg.sack && self.scoreboard.any_lost())
    }

    fn enter_recovery(&mut self, delivered: DataSize) {
        self.recoveries += 1;
        self.ssthresh = self.cc.on_congestion_event(self.cwnd);
        // RFC 3168 §6.1.2: no second reduction for CE in the window this loss reduced.
        self.ecn_recovery_point = self.snd_nxt;
        // RFC 9406 §4.2: a loss ends slow start; §4.3: HyStart++ only in the initial one.
        self.hystart = None;
        let mode = if self.cfg.sack {
            // RFC 6675 §5 step 4.3: DupThresh duplicates without a segment deemed lost retransmit
            // the first one.
            if !self.scoreboard.any_lost() {
                self.scoreboard.mark_first_lost();
            }
            let mut prr = Prr::new(self.flight_size(), self.cfg.smss);
            // BBR sets the window in recovery itself (packet conservation).
            if self.cc.bbr().is_none() {
                self.cwnd = self.prr_cwnd(&mut prr, delivered);
            }
            RecoveryMode::Sack(prr)
        } else {
            // RFC 6582 §3.2 step 2 (RFC 5681 §3.2 steps 2-3): retransmit, cwnd = ssthresh + 3·SMSS.
            self.scoreboard.mark_first_lost();
            self.cwnd = self.ssthresh + self.cfg.smss * 3;
            RecoveryMode::NewReno { partial_ack_seen: false }
        };
        self.phase = Phase::Recovery { recovery_point: self.snd_nxt, mode };
    }

    /// RFC 6937: cwnd = pipe + sndcnt, as Linux applies PRR.
    fn prr_cwnd(&self, prr: &mut Prr, delivered: DataSize) -> DataSize {
        let pipe = self.scoreboard.pipe();
        pipe + prr.on_ack(delivered, pipe, self.ssthresh)
    }

    fn on_ack_in_recovery(&mut self, now: Instant, info: &AckInfo) {
        let mut phase = std::mem::replace(&mut self.phase, Phase::Open);
        if let Phase::Recovery { mode, .. } = &mut phase {
            match mode {
                RecoveryMode::Sack(prr) => self.cwnd = self.prr_cwnd(prr, info.delivered),
                RecoveryMode::NewReno { partial_ack_seen } => {
                    self.newreno_recovery_ack(now, info, partial_ack_seen);
                }
            }
        }
        self.phase = phase;
    }

    /// RFC 6582 §3.2: step 4, a duplicate ACK inflates cwnd by SMSS; step 5, a partial ACK
    /// retransmits the next unacknowledged segment and deflates cwnd by the newly acknowledged
    /// amount, adding back SMSS if that was at least SMSS; only the first partial ACK restarts
    /// the retransmission timer.
    fn newreno_recovery_ack(&mut self, now: Instant, info: &AckInfo, partial_ack_seen: &mut bool) {
        if info.advanced {
            self.scoreboard.mark_first_lost();
            self.cwnd = self.cwnd.saturating_sub(info.acked);
            if info.acked >= self.cfg.smss {
                self.cwnd += self.cfg.smss;
            }
            if !*partial_ack_seen {
                *partial_ack_seen = true;
                self.rto_deadline = Some(now + self.rtt.rto());
            }
        } else if info.duplicate {
            self.cwnd += self.cfg.smss;
        }
    }

    /// Ends fast recovery or the loss state once the recovery point is acknowledged; returns
    /// whether fast recovery ended.
    fn leave_recovery_if_done(&mut self) -> bool {
        let recovery_point = match &self.phase {
            Phase::Open => return false,
            Phase::Recovery { recovery_point, .. } | Phase::Loss { recovery_point } => *recovery_point,
        };
        if self.snd_una < recovery_point {
            return false;
        }
        let Phase::Recovery { mode, .. } = std::mem::replace(&mut self.phase, Phase::Open) else {
            return false;
        };
        // BBR restores its own cwnd on leaving recovery (Linux's `tcp_end_cwnd_reduction` leaves
        // a `cong_control` controller's cwnd alone).
        if self.cc.bbr().is_some() {
            return true;
        }
        self.cwnd = match mode {
            // RFC 6937 §3 (Linux `tcp_end_cwnd_reduction`): recovery ends at ssthresh.
            RecoveryMode::Sack(_) => self.ssthresh,
            // RFC 6582 §3.2 step 3, first option: min(ssthresh, max(FlightSize, SMSS) + SMSS).
            RecoveryMode::NewReno { .. } => {
                self.ssthresh.min(self.flight_size().max(self.cfg.smss) + self.cfg.smss)
            }
        };
        true
    }

    /// Slow start or congestion avoidance by the bytes delivered, on ACKs that advance SND.UNA
    /// while cwnd is what limits the sender (Linux's `tcp_may_raise_cwnd` and
    /// `tcp_is_cwnd_limited`).
    fn grow_cwnd(&mut self, now: Instant, info: &AckInfo) {
        if !self.cwnd_limited || !info.advanced {
            return;
        }
        if self.cwnd < self.ssthresh {
            self.slow_start(info);
        } else {
            let srtt = self.rtt.srtt().unwrap_or(Duration::ZERO);
            self.cwnd = self.cc.on_ack(now, self.cwnd, info, srtt);
        }
    }

    /// RFC 5681 §3.1 slow start with RFC 3465's limit L, or HyStart++ (RFC 9406 §4.2). Like
    /// Linux, cwnd does not overshoot ssthresh.
    fn slow_start(&mut self, info: &AckInfo) {
        let increase = match &mut self.hystart {
            None => info.delivered.min(self.cfg.smss * SLOW_START_L),
            Some(h) => {
                if h.on_ack(self.snd_una, self.snd_nxt, info.rtt) {
                    // §4.2: CSS_ROUNDS done, enter congestion avoidance with ssthresh = cwnd.
                    self.ssthresh = self.cwnd;
                    self.cc.on_slow_start_exit(self.cwnd);
                    self.hystart = None;
                    return;
                }
                h.cwnd_increase(info.delivered, self.cfg.smss)
            }
        };
        self.cwnd = (self.cwnd + increase).min(self.ssthresh);
    }

    /// RFC 6298 §5.2-5.3: stop the timer when everything is acknowledged, restart it on an ACK
    /// of new data (in NewReno recovery only the first partial ACK restarts it).
    fn restart_timer(&mut self, now: Instant) {
        if self.scoreboard.is_empty() {
            self.rto_deadline = None;
        } else if !matches!(self.phase, Phase::Recovery { mode: RecoveryMode::NewReno { .. }, .. }) {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }

    fn report_all_acked(&mut self, now: Instant) {
        if self.write_end == Some(self.snd_una) {
            let total = DataSize::bytes(self.snd_una - self.first_seq);
            self.events.push_back(SenderEvent::AllAcked { at: now, total });
        }
    }

    // -----------------------------------------------------------------------------------------
    // Retransmission timeout
    // -----------------------------------------------------------------------------------------

    /// When the retransmission timer expires, or the pacer lets a held segment go.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match (self.rto_deadline, self.pacing_wakeup) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The retransmission timer expired (RFC 6298 §5.4-5.6, RFC 5681 §3.1): cwnd = 1 SMSS (the
    /// loss window), every unSACKed segment is lost, the RTO backs off, and the congestion
    /// controller reduces ssthresh unless this window was already reduced (a repeated timeout
    /// or one during fast recovery keeps ssthresh, as RFC 5681 §3.1 and Linux's
    /// `tcp_enter_loss` do).
    pub fn on_timeout(&mut self, now: Instant) {
        if self.rto_deadline.is_none_or(|t| t > now) {
            return;
        }
        self.timeouts += 1;
        let (was_open, cwnd_before) = (matches!(self.phase, Phase::Open), self.cwnd);
        if was_open && self.cc.bbr().is_none() {
            self.ssthresh = self.cc.on_timeout(self.cwnd);
        }
        self.hystart = None;
        self.cwnd = self.cfg.smss;
        self.scoreboard.mark_all_lost();
        if let Controller::Bbr(b) = &mut self.cc {
            let (delivered, at) = (self.delivery_rate.delivered(), self.delivery_rate.delivered_time());
            b.on_timeout(was_open, cwnd_before, delivered, at, self.scoreboard.lost_marks());
        }
        self.phase = Phase::Loss { recovery_point: self.snd_nxt };
        self.dupacks = 0;
        self.rtt.back_off();
        self.rto_deadline = Some(now + self.rtt.rto());
    }

    // -----------------------------------------------------------------------------------------
    // Observation
    // -----------------------------------------------------------------------------------------

    /// The next event for the application.
    pub fn poll_event(&mut self) -> Option<SenderEvent> {
        self.events.pop_front()
    }

    pub fn metrics(&self) -> SenderMetrics {
        SenderMetrics {
            cwnd: self.cwnd,
            ssthresh: (!self.ssthresh.is_infinite()).then_some(self.ssthresh),
            srtt: self.rtt.srtt(),
            rto: self.rtt.rto(),
            state: self.state(),
            bytes_in_flight: self.scoreboard.pipe(),
            bytes_acked: DataSize::bytes(self.snd_una - self.first_seq),
            bytes_sent: self.bytes_sent,
            retransmits: self.retransmits,
            timeouts: self.timeouts,
            recoveries: self.recoveries,
            ce_marked: match self.cfg.ecn {
                TcpEcn::L4s => self.ace.ce_packets(),
                _ => self.ece_acks,
            },
            ecn_reductions: self.ecn_reductions,
        }
    }

    /// Prague's α, the EWMA of the CE fraction; `None` for the other controllers.
    pub fn prague_alpha(&self) -> Option<f64> {
        self.cc.prague().map(Prague::alpha)
    }

    /// BBR's model and mode; `None` for the other controllers.
    pub fn bbr_metrics(&self) -> Option<BbrMetrics> {
        self.cc.bbr().map(Bbr::metrics)
    }

    fn state(&self) -> CongestionState {
        match self.phase {
            Phase::Recovery { .. } => CongestionState::Recovery,
            Phase::Loss { .. } => CongestionState::Loss,
            Phase::Open if self.cwnd >= self.ssthresh => CongestionState::CongestionAvoidance,
            Phase::Open if self.hystart.as_ref().is_some_and(HyStart::in_css) => {
                CongestionState::ConservativeSlowStart
            }
            Phase::Open => CongestionState::SlowStart,
        }
    }
}

/// Karn's rule (RFC 6298 §3): a sample from the most recently sent segment this ACK newly
/// acknowledged or SACKed, unless the ACK newly covers a retransmitted segment (whose ACK is
/// ambiguous and, filling a hole, also acknowledges segments received long before).
fn rtt_sample(now: Instant, delivery: &Delivery) -> Option<Duration> {
    if delivery.retransmitted {
        return None;
    }
    delivery.newest_clean_send.map(|sent| now - sent)
}
