//! BBR version 1 (draft-cardwell-iccrg-bbr-congestion-control-00), as upstream Linux runs it
//! (`net/ipv4/tcp_bbr.c`, unchanged in substance from Linux 4.9 to 6.18 apart from the
//! ack-aggregation term of 5.1): the flow paces at its estimate of the bottleneck bandwidth and
//! caps what it has in flight at twice the estimated bandwidth-delay product.
//!
//! | draft-00 | what | here |
//! |---|---|---|
//! | §4.1.1 | BtlBw: windowed max of delivery-rate samples over 10 packet-timed rounds; app-limited samples only when they raise it | [`Bbr::update_bw`], [`MaxFilter`] |
//! | §4.1.2 | RTprop: min of RTT samples, refreshed when a sample is not above it or the 10 s window expired | [`Bbr::update_min_rtt`] |
//! | §4.2.1 | pacing rate = pacing_gain × BtlBw (Linux: 1 % below it); in Startup it only grows | [`Bbr::set_pacing_rate`] |
//! | §4.2.3.2 | target cwnd = cwnd_gain × BDP, plus Linux's quanta (3 TSO bursts, an even count, +2 when probing) and the ack-aggregation term | [`Bbr::target_cwnd`], [`Bbr::quantization_budget`], [`Bbr::ack_aggregation_cwnd`] |
//! | §4.2.3.3 | at least 4 packets | [`MIN_PIPE_CWND_PACKETS`] |
//! | §4.2.3.4 | loss recovery: packet conservation for the first round, then growth toward the target; cwnd restored on exit | [`Bbr::recover_or_restore`] |
//! | §4.2.3.5 | 4 packets in ProbeRTT | [`Bbr::set_cwnd`] |
//! | §4.2.3.6 | cwnd grows by what is delivered up to the target, once the pipe is full | [`Bbr::set_cwnd`] |
//! | §4.3.2 | Startup at 2/ln 2; the pipe is full after 3 rounds without 25 % growth | [`Bbr::check_full_bw_reached`] |
//! | §4.3.3 | Drain at ln 2 / 2 until in flight ≤ BDP | [`Bbr::check_drain`] |
//! | §4.3.4 | ProbeBW's eight phases 5/4, 3/4, 1 × 6, a random start other than 3/4 | [`Bbr::update_cycle_phase`], [`Bbr::enter_probe_bw`] |
//! | §4.3.4.4 | restarting from idle paces at BtlBw | [`Bbr::on_transmit_start`] |
//! | §4.3.5 | ProbeRTT: 4 packets for 200 ms and a round when RTprop is 10 s old | [`Bbr::update_min_rtt`], [`Bbr::check_probe_rtt_done`] |
//! | Linux only | long-term bandwidth (token-bucket policer detection) | [`Bbr::lt_bw_sampling`] |
//!
//! Windows are counted in packets of SMSS as Linux counts them; rates are [`Bitrate`]s of
//! payload. The start phase of each ProbeBW is drawn from the flow's own seeded generator
//! ([`super::SenderConfig::seed`]), as Linux draws it from the kernel's.

use std::collections::VecDeque;

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

use super::rate::RateSample;

/// Linux's gains are fixed point in 1/256 (`BBR_UNIT`); these are the values it computes.
const UNIT: f64 = 256.0;
/// §4.3.2: Startup's pacing and cwnd gain 2/ln 2 ≈ 2.885, as Linux rounds it (739/256).
pub const HIGH_GAIN: f64 = 739.0 / UNIT;
/// §4.3.3: Drain's pacing gain, the inverse of HIGH_GAIN (Linux: 88/256).
pub const DRAIN_GAIN: f64 = 88.0 / UNIT;
/// §4.2.3.2: cwnd_gain in ProbeBW.
pub const CWND_GAIN: f64 = 2.0;
/// §4.3.4.3: ProbeBW's pacing-gain cycle.
pub const PACING_GAIN_CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// §4.1.1.2: BtlBwFilterLen, in packet-timed round trips (Linux: the cycle length + 2).
pub const BTL_BW_FILTER_ROUNDS: u64 = 10;
/// §4.1.2.2: RTpropFilterLen.
pub const RT_PROP_FILTER_LEN: Duration = Duration::from_secs(10);
/// §4.3.5: ProbeRTTDuration.
pub const PROBE_RTT_DURATION: Duration = Duration::from_millis(200);
/// §4.2.3.3: the smallest cwnd that keeps a pipeline of delayed ACKs going.
pub const MIN_PIPE_CWND_PACKETS: u64 = 4;
/// §4.3.2.2: the bandwidth must grow by this factor per round for Startup to go on...
pub const FULL_BW_THRESH: f64 = 1.25;
/// ... or the pipe is deemed full after this many rounds.
pub const FULL_BW_COUNT: u32 = 3;
/// Linux `bbr_pacing_margin_percent`: pace 1 % below the estimate, to drain queues it built.
pub const PACING_MARGIN: f64 = 0.99;
/// Linux `TCP_INIT_CWND`: the cwnd before any RTT sample, and the packets delivered before
/// which Startup's cwnd grows whatever the target.
const INIT_CWND_PACKETS: u64 = 10;
/// Linux `bbr_min_tso_rate`: below it a TSO burst is one segment, above two at least.
const MIN_TSO_RATE: Bitrate = Bitrate::bps(1_200_000);
/// Linux's default `sk_pacing_shift`: a TSO burst holds about 1 ms (2^-10 s) at the pacing rate.
const PACING_SHIFT: u32 = 10;
/// Linux `GSO_MAX_SIZE - 1 - MAX_TCP_HEADER` on x86-64: the largest TSO burst.
const MAX_TSO_BYTES: u64 = 65_536 - 1 - 320;
/// Linux: a TSO burst is at most 127 segments.
const MAX_TSO_SEGS: u64 = 127;
/// Linux `bbr_extra_acked_win_rtts`: the ack-aggregation max filter keeps 2 windows of 5 rounds.
const EXTRA_ACKED_WIN_ROUNDS: u32 = 5;
/// Linux `bbr_extra_acked_max_us`: the extra cwnd is at most 100 ms at BtlBw.
const EXTRA_ACKED_MAX: Duration = Duration::from_millis(100);
/// Linux `bbr_ack_epoch_acked_reset_thresh`, in packets.
const ACK_EPOCH_RESET_PACKETS: u64 = 1 << 20;
/// Linux `bbr_lt_intvl_min_rtts`: a long-term sampling interval lasts at least 4 rounds...
const LT_INTERVAL_MIN_ROUNDS: u32 = 4;
/// ... and is "lossy" at a loss rate of at least 50/256 ≈ 20 % (`bbr_lt_loss_thresh`).
const LT_LOSS_THRESH: f64 = 50.0 / UNIT;
/// Two intervals' rates are consistent within 1/8 (`bbr_lt_bw_ratio`) ...
const LT_BW_RATIO: f64 = 1.0 / 8.0;
/// ... or 4 kbit/s (`bbr_lt_bw_diff`).
const LT_BW_DIFF: Bitrate = Bitrate::bps(4000);
/// A policed flow paces at its long-term rate for 48 rounds (`bbr_lt_bw_max_rtts`).
const LT_BW_MAX_ROUNDS: u32 = 48;

/// The state machine of §3.4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Self::Startup => "startup",
            Self::Drain => "drain",
            Self::ProbeBw => "probe-bw",
            Self::ProbeRtt => "probe-rtt",
        }
    }
}

/// The sender's loss state as BBR sees it (Linux's `icsk_ca_state`, of which the sender models
/// Open, Recovery and Loss).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LossState {
    Open,
    Recovery,
    Loss,
}

/// What one ACK tells BBR, after the sender has processed it (Linux's `struct rate_sample` and
/// the socket fields `bbr_main` reads).
#[derive(Clone, Copy, Debug)]
pub struct AckSample {
    pub now: Instant,
    pub rate: RateSample,
    /// The ACK's RTT sample (Karn's rule), if any.
    pub rtt: Option<Duration>,
    /// The sender's smoothed RTT, for the initial pacing rate.
    pub srtt: Option<Duration>,
    /// Segments newly deemed lost on this ACK.
    pub losses: u64,
    /// Segments deemed lost so far.
    pub lost_total: u64,
    /// C.delivered and C.delivered_time after this ACK.
    pub delivered: DataSize,
    pub delivered_time: Instant,
    /// Pipe before the ACK, and after it (and after any loss it revealed).
    pub prior_in_flight: DataSize,
    pub in_flight: DataSize,
    /// How far ahead of `now` the pacer has scheduled the next departure (Linux's EDT).
    pub pacing_delay: Duration,
    /// The sender's state after the ACK.
    pub state: LossState,
    pub cwnd: DataSize,
}

/// What BBR asks of the sender after an ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckResponse {
    pub cwnd: DataSize,
    /// ProbeRTT marks the delivery-rate samples of its low flight as app-limited.
    pub app_limited: bool,
}

/// An exact windowed max over packet-timed rounds (§4.1.1.2; Linux approximates it with a
/// three-sample filter, `lib/win_minmax.c`): samples in decreasing order of rate, each kept for
/// [`BTL_BW_FILTER_ROUNDS`] rounds after its own.
#[derive(Clone, Debug, Default)]
pub struct MaxFilter {
    samples: VecDeque<(u64, Bitrate)>,
}

impl MaxFilter {
    pub fn update(&mut self, round: u64, bw: Bitrate) {
        while self.samples.back().is_some_and(|&(_, b)| b <= bw) {
            self.samples.pop_back();
        }
        self.samples.push_back((round, bw));
        while self.samples.front().is_some_and(|&(r, _)| round - r > BTL_BW_FILTER_ROUNDS) {
            self.samples.pop_front();
        }
    }

    pub fn get(&self) -> Bitrate {
        self.samples.front().map_or(Bitrate::ZERO, |&(_, b)| b)
    }
}

/// Linux's long-term ("LT") bandwidth estimate: two consecutive lossy intervals of consistent
/// rate mean a token-bucket policer, whose rate the flow then paces at.
#[derive(Clone, Debug)]
struct LongTerm {
    sampling: bool,
    rounds: u32,
    use_bw: bool,
    bw: Bitrate,
    /// Where the interval started: C.delivered, C.delivered_time, segments lost.
    last_delivered: DataSize,
    last_stamp: Instant,
    last_lost: u64,
}

/// The state BBR keeps between ACKs (the draft's BBR.* variables).
#[derive(Clone, Debug)]
pub struct Bbr {
    smss: DataSize,
    mode: Mode,
    /// BBR.BtlBw's filter (§4.1.1).
    btl_bw: MaxFilter,
    /// BBR.RTprop and BBR.rtprop_stamp (§4.1.2); `None` before any RTT sample.
    rt_prop: Option<Duration>,
    rt_prop_stamp: Instant,
    /// BBR.probe_rtt_done_stamp and BBR.probe_rtt_round_done (§4.3.5).
    probe_rtt_done_stamp: Option<Instant>,
    probe_rtt_round_done: bool,
    /// BBR.round_count, BBR.next_round_delivered, BBR.round_start (§4.1.1.3).
    round_count: u64,
    next_round_delivered: DataSize,
    round_start: bool,
    /// BBR.packet_conservation and BBR.prior_cwnd (§4.2.3.4), in packets; the loss state on the
    /// previous ACK.
    packet_conservation: bool,
    prior_cwnd: u64,
    prev_state: LossState,
    /// BBR.idle_restart (§4.3.4.4).
    idle_restart: bool,
    /// BBR.cycle_index and BBR.cycle_stamp (§4.3.4.3).
    cycle_index: usize,
    cycle_stamp: Instant,
    /// BBR.pacing_gain, BBR.cwnd_gain.
    pacing_gain: f64,
    cwnd_gain: f64,
    /// BBR.filled_pipe, BBR.full_bw, BBR.full_bw_count (§4.3.2.2).
    filled_pipe: bool,
    full_bw: Bitrate,
    full_bw_count: u32,
    /// The pacing rate in force; whether it was set from an RTT sample yet.
    pacing_rate: Bitrate,
    has_seen_rtt: bool,
    /// ssthresh, which BBR only sets on leaving Startup (Linux), for the sender's state.
    ssthresh: Option<DataSize>,
    /// cwnd in packets while an ACK is processed.
    cwnd: u64,
    /// Ack aggregation (Linux 5.1+): the epoch's start and data ACKed in it, and the max of the
    /// extra data ACKed over two windows of rounds.
    ack_epoch_stamp: Instant,
    ack_epoch_acked: DataSize,
    extra_acked: [DataSize; 2],
    extra_acked_win_rounds: u32,
    extra_acked_win_idx: usize,
    lt: LongTerm,
    /// splitmix64's state: the flow's generator for the start phase of ProbeBW.
    rng: u64,
}

/// What [`Bbr::metrics`] reports.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BbrMetrics {
    pub mode: Mode,
    /// BtlBw (the long-term rate while a policer is assumed).
    pub btl_bw: Bitrate,
    pub rt_prop: Option<Duration>,
    pub pacing_gain: f64,
    pub cwnd_gain: f64,
    pub pacing_rate: Bitrate,
    pub filled_pipe: bool,
    pub cycle_index: usize,
    pub round_count: u64,
    /// The long-term (policer) rate is in use.
    pub lt_use_bw: bool,
}

impl Bbr {
    /// A connection's BBR at `now`, with `initial_cwnd` and the seed of its random choices.
    /// §4.3.1: Startup, empty filters; the pacing rate from the initial window over a nominal
    /// 1 ms RTT until the first sample (Linux's `bbr_init_pacing_rate_from_rtt`).
    pub fn new(smss: DataSize, now: Instant, initial_cwnd: DataSize, seed: u64) -> Self {
        let mut bbr = Self {
            smss,
            mode: Mode::Startup,
            btl_bw: MaxFilter::default(),
            rt_prop: None,
            rt_prop_stamp: now,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            round_count: 0,
            next_round_delivered: DataSize::ZERO,
            round_start: false,
            packet_conservation: false,
            prior_cwnd: 0,
            prev_state: LossState::Open,
            idle_restart: false,
            cycle_index: 0,
            cycle_stamp: now,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            filled_pipe: false,
            full_bw: Bitrate::ZERO,
            full_bw_count: 0,
            pacing_rate: Bitrate::ZERO,
            has_seen_rtt: false,
            ssthresh: None,
            cwnd: 0,
            ack_epoch_stamp: now,
            ack_epoch_acked: DataSize::ZERO,
            extra_acked: [DataSize::ZERO; 2],
            extra_acked_win_rounds: 0,
            extra_acked_win_idx: 0,
            lt: LongTerm {
                sampling: false,
                rounds: 0,
                use_bw: false,
                bw: Bitrate::ZERO,
                last_delivered: DataSize::ZERO,
                last_stamp: now,
                last_lost: 0,
            },
            rng: seed,
        };
        bbr.cwnd = bbr.packets(initial_cwnd);
        bbr.init_pacing_rate(None);
        bbr
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn pacing_rate(&self) -> Bitrate {
        self.pacing_rate
    }

    pub fn ssthresh(&self) -> Option<DataSize> {
        self.ssthresh
    }

    pub fn metrics(&self) -> BbrMetrics {
        BbrMetrics {
            mode: self.mode,
            btl_bw: self.bw(),
            rt_prop: self.rt_prop,
            pacing_gain: self.pacing_gain,
            cwnd_gain: self.cwnd_gain,
            pacing_rate: self.pacing_rate,
            filled_pipe: self.filled_pipe,
            cycle_index: self.cycle_index,
            round_count: self.round_count,
            lt_use_bw: self.lt.use_bw,
        }
    }

    fn packets(&self, size: DataSize) -> u64 {
        size.as_bytes().div_ceil(self.smss.as_bytes())
    }

    /// BtlBw as the control laws use it: the long-term rate while a policer is assumed.
    fn bw(&self) -> Bitrate {
        if self.lt.use_bw {
            self.lt.bw
        } else {
            self.btl_bw.get()
        }
    }

    // -----------------------------------------------------------------------------------------
    // Per ACK (§3.5: update the model, then the control parameters)
    // -----------------------------------------------------------------------------------------

    /// Every ACK, after the sender has updated its scoreboard and loss state.
    pub fn on_ack(&mut self, a: &AckSample) -> AckResponse {
        self.cwnd = self.packets(a.cwnd);
        self.update_bw(a);
        self.update_ack_aggregation(a);
        self.update_cycle_phase(a);
        self.check_full_bw_reached(a);
        self.check_drain(a);
        let app_limited = self.update_min_rtt(a);
        self.update_gains();
        self.set_pacing_rate(self.bw(), self.pacing_gain, a.srtt);
        self.set_cwnd(a);
        AckResponse { cwnd: self.smss * self.cwnd, app_limited }
    }

    /// §4.1.1.3-5: packet-timed rounds, and the BtlBw filter fed with the ACK's delivery rate.
    fn update_bw(&mut self, a: &AckSample) {
        self.round_start = false;
        let Some(rate) = a.rate.rate() else { return };
        // §4.1.1.3: a round ends when data sent after its start is delivered.
        if a.rate.prior_delivered >= self.next_round_delivered {
            self.next_round_delivered = a.delivered;
            self.round_count += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(a.rate.app_limited, a.losses, a.lost_total, a.delivered, a.delivered_time);
        // §4.1.1.4: an app-limited sample says little about the path unless it is a new max.
        if !a.rate.app_limited || rate >= self.btl_bw.get() {
            self.btl_bw.update(self.round_count, rate);
        }
    }

    /// Linux's ack-aggregation estimate (not in draft-00; Linux 5.1): the most data ACKed in an
    /// epoch beyond what BtlBw would have delivered in it, max over 5-10 rounds. The extra
    /// cwnd keeps the sender going through the silences between aggregated ACKs.
    fn update_ack_aggregation(&mut self, a: &AckSample) {
        if a.rate.acked_sacked.is_zero() || a.rate.interval.is_none() {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rounds = (self.extra_acked_win_rounds + 1).min(31);
            if self.extra_acked_win_rounds >= EXTRA_ACKED_WIN_ROUNDS {
                self.extra_acked_win_rounds = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = DataSize::ZERO;
            }
        }
        let epoch = a.delivered_time - self.ack_epoch_stamp;
        let mut expected = self.bw() * epoch;
        // A new epoch when ACKs came no faster than BtlBw, or after very many.
        if self.ack_epoch_acked <= expected
            || self.ack_epoch_acked + a.rate.acked_sacked >= self.smss * ACK_EPOCH_RESET_PACKETS
        {
            self.ack_epoch_acked = DataSize::ZERO;
            self.ack_epoch_stamp = a.delivered_time;
            expected = DataSize::ZERO;
        }
        self.ack_epoch_acked += a.rate.acked_sacked;
        let extra = self.ack_epoch_acked.saturating_sub(expected).min(self.smss * self.cwnd);
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        *slot = (*slot).max(extra);
    }

    /// The extra cwnd for ack aggregation, in packets, once the pipe is full: the max extra
    /// ACKed, at most 100 ms at BtlBw.
    fn ack_aggregation_cwnd(&self) -> u64 {
        if !self.filled_pipe {
            return 0;
        }
        let extra = self.extra_acked[0].max(self.extra_acked[1]);
        let cap = self.bw() * EXTRA_ACKED_MAX;
        extra.min(cap).as_bytes() / self.smss.as_bytes()
    }

    /// §4.3.4.3: the next phase of the gain cycle once the current one has lasted RTprop; a
    /// probing phase (5/4) also waits until in flight reaches 5/4 BDP or a loss, a draining one
    /// (3/4) ends early once in flight is down to the BDP.
    fn update_cycle_phase(&mut self, a: &AckSample) {
        if self.mode != Mode::ProbeBw || !self.is_next_cycle_phase(a) {
            return;
        }
        self.advance_cycle_phase(a.delivered_time);
    }

    fn is_next_cycle_phase(&self, a: &AckSample) -> bool {
        let full_length = self.rt_prop.is_some_and(|rt| a.delivered_time - self.cycle_stamp > rt);
        if self.pacing_gain == 1.0 {
            return full_length;
        }
        let in_flight = self.packets_in_net_at_edt(self.packets(a.prior_in_flight), a.pacing_delay);
        let max_bw = self.btl_bw.get();
        if self.pacing_gain > 1.0 {
            full_length && (a.losses > 0 || in_flight >= self.inflight(max_bw, self.pacing_gain))
        } else {
            full_length || in_flight <= self.inflight(max_bw, 1.0)
        }
    }

    fn advance_cycle_phase(&mut self, delivered_time: Instant) {
        self.cycle_index = (self.cycle_index + 1) % PACING_GAIN_CYCLE.len();
        self.cycle_stamp = delivered_time;
    }

    /// §4.3.4.2: ProbeBW starts at a random phase other than the draining one, so that flows
    /// do not probe in step; as Linux, one of the 7 phases after it (1 × 6, then 5/4).
    fn enter_probe_bw(&mut self, delivered_time: Instant) {
        self.mode = Mode::ProbeBw;
        let draw = self.next_random() % (PACING_GAIN_CYCLE.len() as u64 - 1);
        self.cycle_index = PACING_GAIN_CYCLE.len() - 1 - draw as usize;
        self.advance_cycle_phase(delivered_time);
    }

    /// splitmix64: a small deterministic generator, seeded per flow.
    fn next_random(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// §4.3.2.2: after each round (not app-limited) in Startup, the pipe is full if BtlBw grew
    /// less than 25 % for the third round in a row.
    fn check_full_bw_reached(&mut self, a: &AckSample) {
        if self.filled_pipe || !self.round_start || a.rate.app_limited {
            return;
        }
        let max_bw = self.btl_bw.get();
        if max_bw >= self.full_bw * FULL_BW_THRESH {
            self.full_bw = max_bw;
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        self.filled_pipe = self.full_bw_count >= FULL_BW_COUNT;
    }

    /// §4.3.3: Drain once the pipe is full, until what is in the network at the next departure
    /// is down to one BDP (with Linux's quanta); ssthresh is set to that (Linux).
    fn check_drain(&mut self, a: &AckSample) {
        let max_bw = self.btl_bw.get();
        if self.mode == Mode::Startup && self.filled_pipe {
            self.mode = Mode::Drain;
            self.ssthresh = Some(self.smss * self.inflight(max_bw, 1.0));
        }
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(self.packets(a.in_flight), a.pacing_delay)
                <= self.inflight(max_bw, 1.0)
        {
            self.enter_probe_bw(a.delivered_time);
        }
    }

    /// §4.1.2.3 and §4.3.5: the RTprop filter, and ProbeRTT when RTprop is older than its
    /// window: cwnd 4 packets until both 200 ms and a round have passed at that flight.
    /// Returns whether the sender must mark its delivery-rate samples app-limited (in ProbeRTT,
    /// whose low rate says nothing about the path).
    fn update_min_rtt(&mut self, a: &AckSample) -> bool {
        let expired = a.now > self.rt_prop_stamp + RT_PROP_FILTER_LEN;
        if let Some(rtt) = a.rtt {
            if self.rt_prop.is_none_or(|rt| rtt <= rt) || expired {
                self.rt_prop = Some(rtt);
                self.rt_prop_stamp = a.now;
            }
        }
        if expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd();
            self.probe_rtt_done_stamp = None;
        }
        let mut app_limited = false;
        if self.mode == Mode::ProbeRtt {
            app_limited = true;
            if self.probe_rtt_done_stamp.is_none() && self.packets(a.in_flight) <= MIN_PIPE_CWND_PACKETS {
                self.probe_rtt_done_stamp = Some(a.now + PROBE_RTT_DURATION);
                self.probe_rtt_round_done = false;
                self.next_round_delivered = a.delivered;
            } else if self.probe_rtt_done_stamp.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(a.now, a.delivered_time);
                }
            }
        }
        if !a.rate.delivered.is_zero() {
            self.idle_restart = false;
        }
        app_limited
    }

    /// §4.3.5: leave ProbeRTT once its time and round are done: the RTprop stamp restarts, cwnd
    /// comes back to what it was, and the flow returns to Startup or ProbeBW.
    fn check_probe_rtt_done(&mut self, now: Instant, delivered_time: Instant) {
        if self.probe_rtt_done_stamp.is_none_or(|t| now <= t) {
            return;
        }
        self.rt_prop_stamp = now;
        self.cwnd = self.cwnd.max(self.prior_cwnd);
        if self.filled_pipe {
            self.enter_probe_bw(delivered_time);
        } else {
            self.mode = Mode::Startup;
        }
    }

    /// §4.3: each mode's gains; a flow using the long-term rate paces at gain 1 in ProbeBW.
    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (HIGH_GAIN, HIGH_GAIN),
            Mode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            Mode::ProbeBw if self.lt.use_bw => (1.0, CWND_GAIN),
            Mode::ProbeBw => (PACING_GAIN_CYCLE[self.cycle_index], CWND_GAIN),
            Mode::ProbeRtt => (1.0, 1.0),
        };
    }

    /// §4.2.1 with Linux's margin: pacing_gain × BtlBw × 99 %. Until the pipe is full the rate
    /// only grows, so a low early sample does not slow Startup down. The first RTT sample sets
    /// it from the initial window (§4.3.1: high_gain × cwnd / SRTT).
    fn set_pacing_rate(&mut self, bw: Bitrate, gain: f64, srtt: Option<Duration>) {
        if !self.has_seen_rtt && srtt.is_some() {
            self.init_pacing_rate(srtt);
        }
        let rate = bw * (gain * PACING_MARGIN);
        if self.filled_pipe || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    fn init_pacing_rate(&mut self, srtt: Option<Duration>) {
        self.has_seen_rtt = srtt.is_some();
        let rtt = srtt.filter(|r| !r.is_zero()).unwrap_or(Duration::from_millis(1));
        self.pacing_rate = self.smss * self.cwnd / rtt * (HIGH_GAIN * PACING_MARGIN);
    }

    // -----------------------------------------------------------------------------------------
    // The congestion window (§4.2.3)
    // -----------------------------------------------------------------------------------------

    /// §4.2.3.2: ⌈gain × BtlBw × RTprop⌉ in packets; before any RTT sample, the initial window.
    fn bdp(&self, bw: Bitrate, gain: f64) -> u64 {
        let Some(rt_prop) = self.rt_prop else { return INIT_CWND_PACKETS };
        let bytes = (bw * rt_prop).as_bytes() as f64 * gain;
        (bytes / self.smss.as_bytes() as f64).ceil() as u64
    }

    /// Linux's segments per TSO burst at the pacing rate (`bbr_tso_segs_goal`): about 1 ms of
    /// data, at least 2 segments above 1.2 Mbit/s.
    pub fn tso_segs_goal(&self) -> u64 {
        let per_burst = (self.pacing_rate.as_bps() / 8) >> PACING_SHIFT;
        let min_segs = if self.pacing_rate < MIN_TSO_RATE { 1 } else { 2 };
        (per_burst.min(MAX_TSO_BYTES) / self.smss.as_bytes()).max(min_segs).min(MAX_TSO_SEGS)
    }

    /// Linux's quanta on top of a BDP (`bbr_quantization_budget`): room for three TSO bursts in
    /// the end hosts, an even count (ACKs of two segments), and two more in the probing phase so
    /// that a small BDP still probes above itself.
    fn quantization_budget(&self, cwnd: u64) -> u64 {
        let mut cwnd = cwnd + 3 * self.tso_segs_goal();
        cwnd = (cwnd + 1) & !1;
        if self.mode == Mode::ProbeBw && self.cycle_index == 0 {
            cwnd += 2;
        }
        cwnd
    }

    /// The in-flight target for `gain` (BDP and quanta), packets.
    fn inflight(&self, bw: Bitrate, gain: f64) -> u64 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// What will still be in the network when the next scheduled departure leaves: in flight,
    /// less what BtlBw delivers until then, plus that departure's burst when probing upward
    /// (Linux's `bbr_packets_in_net_at_edt`).
    fn packets_in_net_at_edt(&self, in_flight: u64, pacing_delay: Duration) -> u64 {
        let delivered_by_then = (self.bw() * pacing_delay).as_bytes() / self.smss.as_bytes();
        let at_edt = in_flight + if self.pacing_gain > 1.0 { self.tso_segs_goal() } else { 0 };
        at_edt.saturating_sub(delivered_by_then)
    }

    /// §4.2.3.2 and §4.2.3.6: the target cwnd and the step toward it.
    fn target_cwnd(&self, bw: Bitrate, gain: f64) -> u64 {
        self.quantization_budget(self.bdp(bw, gain) + self.ack_aggregation_cwnd())
    }

    fn set_cwnd(&mut self, a: &AckSample) {
        let acked = self.packets(a.rate.acked_sacked);
        if acked > 0 && !self.recover_or_restore(a, acked) {
            let target = self.target_cwnd(self.bw(), self.cwnd_gain);
            // §4.2.3.6: grow by what was delivered, up to the target once the pipe is full;
            // before that, grow whenever below it (or in the first window).
            if self.filled_pipe {
                self.cwnd = (self.cwnd + acked).min(target);
            } else if self.cwnd < target || self.packets(a.delivered) < INIT_CWND_PACKETS {
                self.cwnd += acked;
            }
            self.cwnd = self.cwnd.max(MIN_PIPE_CWND_PACKETS);
        }
        // §4.2.3.5.
        if self.mode == Mode::ProbeRtt {
            self.cwnd = self.cwnd.min(MIN_PIPE_CWND_PACKETS);
        }
    }

    /// §4.2.3.4 as Linux does it: each lost segment comes off cwnd; the first round of a recovery
    /// sends one segment per segment delivered (packet conservation), the rounds after it grow
    /// toward the target; leaving recovery (or the loss state of a timeout) restores the cwnd
    /// saved on entry. Returns whether packet conservation decided the cwnd.
    fn recover_or_restore(&mut self, a: &AckSample, acked: u64) -> bool {
        let in_flight = self.packets(a.in_flight);
        if a.losses > 0 {
            self.cwnd = self.cwnd.saturating_sub(a.losses).max(1);
        }
        if a.state == LossState::Recovery && self.prev_state != LossState::Recovery {
            self.packet_conservation = true;
            // The round starts now: conservation lasts one round trip.
            self.next_round_delivered = a.delivered;
            self.cwnd = in_flight + acked;
        } else if self.prev_state >= LossState::Recovery && a.state < LossState::Recovery {
            self.cwnd = self.cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_state = a.state;
        if self.packet_conservation {
            self.cwnd = self.cwnd.max(in_flight + acked);
        }
        self.packet_conservation
    }

    /// §4.2.3.4: remember the last good cwnd before a recovery or ProbeRTT cuts it.
    fn save_cwnd(&mut self) {
        if self.prev_state < LossState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = self.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
        }
    }

    // -----------------------------------------------------------------------------------------
    // Events from the sender
    // -----------------------------------------------------------------------------------------

    /// Fast recovery starts with `cwnd` (Linux's `ssthresh` hook): the cwnd is saved, ssthresh
    /// is left as it is (returned for the sender).
    pub fn on_enter_recovery(&mut self, cwnd: DataSize) -> Option<DataSize> {
        self.cwnd = self.packets(cwnd);
        self.save_cwnd();
        self.ssthresh
    }

    /// A retransmission timeout at `now`, the sender in the Open state before it (`was_open`)
    /// with `cwnd`: the cwnd is saved if it was, and (Linux's `bbr_set_state` for the Loss state)
    /// full-pipe detection restarts its count, the timeout ends a round, and it counts as a
    /// loss for the long-term sampler.
    pub fn on_timeout(
        &mut self,
        was_open: bool,
        cwnd: DataSize,
        delivered: DataSize,
        delivered_time: Instant,
        lost_total: u64,
    ) {
        if was_open {
            self.cwnd = self.packets(cwnd);
            self.save_cwnd();
        }
        self.prev_state = LossState::Loss;
        self.full_bw = Bitrate::ZERO;
        self.round_start = true;
        self.lt_bw_sampling(false, 1, lost_total, delivered, delivered_time);
    }

    /// §4.3.4.4: the sender transmits with nothing in flight after an app-limited spell: the
    /// restart paces at BtlBw in ProbeBW (no need to probe at once), and ProbeRTT may be over.
    /// Returns the cwnd, which leaving ProbeRTT may restore.
    pub fn on_transmit_start(&mut self, now: Instant, cwnd: DataSize, delivered_time: Instant) -> DataSize {
        self.cwnd = self.packets(cwnd);
        self.idle_restart = true;
        self.ack_epoch_stamp = now;
        self.ack_epoch_acked = DataSize::ZERO;
        match self.mode {
            Mode::ProbeBw => self.set_pacing_rate(self.bw(), 1.0, None),
            Mode::ProbeRtt => self.check_probe_rtt_done(now, delivered_time),
            _ => {}
        }
        self.smss * self.cwnd
    }

    // -----------------------------------------------------------------------------------------
    // Long-term bandwidth (Linux only)
    // -----------------------------------------------------------------------------------------

    fn lt_reset_interval(&mut self, delivered: DataSize, delivered_time: Instant, lost_total: u64) {
        self.lt.last_delivered = delivered;
        self.lt.last_stamp = delivered_time;
        self.lt.last_lost = lost_total;
        self.lt.rounds = 0;
    }

    fn lt_reset(&mut self, delivered: DataSize, delivered_time: Instant, lost_total: u64) {
        self.lt.bw = Bitrate::ZERO;
        self.lt.use_bw = false;
        self.lt.sampling = false;
        self.lt_reset_interval(delivered, delivered_time, lost_total);
    }

    /// Linux's policer detection: from the first loss, intervals of 4 to 16 rounds that end on
    /// a loss with at least 20 % of the packets lost; two in a row with rates within 1/8 (or
    /// 4 kbit/s) of each other set the long-term rate to their mean, used for 48 rounds.
    fn lt_bw_sampling(
        &mut self,
        app_limited: bool,
        losses: u64,
        lost_total: u64,
        delivered: DataSize,
        delivered_time: Instant,
    ) {
        if self.lt.use_bw {
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt.rounds += 1;
                if self.lt.rounds >= LT_BW_MAX_ROUNDS {
                    self.lt_reset(delivered, delivered_time, lost_total);
                    self.enter_probe_bw(delivered_time);
                }
            }
            return;
        }
        // Wait for a loss: the policer's bucket is empty from then on.
        if !self.lt.sampling {
            if losses == 0 {
                return;
            }
            self.lt_reset_interval(delivered, delivered_time, lost_total);
            self.lt.sampling = true;
        }
        if app_limited {
            self.lt_reset(delivered, delivered_time, lost_total);
            return;
        }
        if self.round_start {
            self.lt.rounds += 1;
        }
        if self.lt.rounds < LT_INTERVAL_MIN_ROUNDS {
            return;
        }
        if self.lt.rounds > 4 * LT_INTERVAL_MIN_ROUNDS {
            self.lt_reset(delivered, delivered_time, lost_total);
            return;
        }
        if losses == 0 {
            return;
        }
        let lost = lost_total - self.lt.last_lost;
        let delivered_packets = self.packets(delivered - self.lt.last_delivered);
        if delivered_packets == 0 || (lost as f64) < LT_LOSS_THRESH * delivered_packets as f64 {
            return;
        }
        let elapsed = delivered_time - self.lt.last_stamp;
        if elapsed < Duration::from_millis(1) {
            return;
        }
        let bw = (delivered - self.lt.last_delivered) / elapsed;
        self.lt_interval_done(bw, delivered, delivered_time, lost_total);
    }

    fn lt_interval_done(
        &mut self,
        bw: Bitrate,
        delivered: DataSize,
        delivered_time: Instant,
        lost_total: u64,
    ) {
        if !self.lt.bw.is_zero() {
            let diff = Bitrate::bps(bw.as_bps().abs_diff(self.lt.bw.as_bps()));
            if diff.as_bps_f64() <= LT_BW_RATIO * self.lt.bw.as_bps_f64() || diff <= LT_BW_DIFF {
                // Policed: pace at the mean of the two intervals, without probing.
                self.lt.bw = Bitrate::bps((bw.as_bps() + self.lt.bw.as_bps()) / 2);
                self.lt.use_bw = true;
                self.pacing_gain = 1.0;
                self.lt.rounds = 0;
                return;
            }
        }
        self.lt.bw = bw;
        self.lt_reset_interval(delivered, delivered_time, lost_total);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: DataSize = DataSize::bytes(1000);
    const RTT: Duration = Duration::from_millis(40);

    fn ms(v: i64) -> Instant {
        Instant::from_millis(v)
    }

    /// A scripted path: a fixed bottleneck of `rate` and base RTT [`RTT`]; each call feeds one
    /// round of ACKs for a flight of `cwnd` (at most what the rate allows in a round trip plus
    /// `queue`) and returns the new cwnd.
    struct Path {
        bbr: Bbr,
        /// The modes the flow went through, ACK by ACK.
        modes: Vec<Mode>,
        now: Instant,
        delivered: DataSize,
        cwnd: DataSize,
        rate: Bitrate,
    }

    impl Path {
        fn new(rate: Bitrate, seed: u64) -> Self {
            let cwnd = MSS * 10;
            let bbr = Bbr::new(MSS, ms(0), cwnd, seed);
            Self { modes: vec![bbr.mode()], bbr, now: ms(0), delivered: DataSize::ZERO, cwnd, rate }
        }

        /// One round trip: the flight is limited by cwnd and by pacing over the round; the path
        /// delivers it at most at `rate`, and the RTT grows with the queue the flight builds.
        fn round(&mut self) {
            let bdp = self.rate * RTT;
            let paced = self.bbr.pacing_rate() * RTT;
            let flight = self.cwnd.min(paced.max(MSS * 4));
            let queue = flight.saturating_sub(bdp);
            let rtt = RTT + queue / self.rate;
            let packets = flight.as_bytes() / MSS.as_bytes();
            let round_time = rtt.max(flight / self.rate);
            let start_delivered = self.delivered;
            let start = self.now;
            for i in 0..packets {
                let t = start + round_time * ((i + 1) as f64 / packets as f64);
                self.delivered += MSS;
                let interval = (t - start).max(rtt);
                let rate = RateSample {
                    delivered: self.delivered - start_delivered,
                    interval: Some(interval),
                    prior_delivered: start_delivered,
                    app_limited: false,
                    acked_sacked: MSS,
                };
                let in_flight = flight - MSS * (i + 1);
                let a = AckSample {
                    now: t,
                    rate,
                    rtt: Some(rtt),
                    srtt: Some(rtt),
                    losses: 0,
                    lost_total: 0,
                    delivered: self.delivered,
                    delivered_time: t,
                    prior_in_flight: in_flight + MSS,
                    in_flight,
                    pacing_delay: Duration::ZERO,
                    state: LossState::Open,
                    cwnd: self.cwnd,
                };
                self.cwnd = self.bbr.on_ack(&a).cwnd;
                if self.modes.last() != Some(&self.bbr.mode()) {
                    self.modes.push(self.bbr.mode());
                }
            }
            self.now = start + round_time;
        }
    }

    /// Linux's constants: 2/ln 2 and its inverse in 1/256, the gain cycle.
    #[test]
    fn gains_are_linux_fixed_point_values() {
        assert!((HIGH_GAIN - 2.0 / std::f64::consts::LN_2).abs() < 0.002);
        assert!((DRAIN_GAIN - std::f64::consts::LN_2 / 2.0).abs() < 0.003);
        assert_eq!(PACING_GAIN_CYCLE.iter().sum::<f64>(), 8.0, "the cycle averages 1");
    }

    /// The max filter keeps a sample for 10 rounds after its own, then the best younger one.
    #[test]
    fn btl_bw_filter_is_a_max_over_ten_rounds() {
        let mut f = MaxFilter::default();
        f.update(1, Bitrate::mbps(10));
        f.update(2, Bitrate::mbps(4));
        f.update(5, Bitrate::mbps(6));
        assert_eq!(f.get(), Bitrate::mbps(10));
        f.update(11, Bitrate::mbps(3));
        assert_eq!(f.get(), Bitrate::mbps(10), "round 1's sample is 10 rounds old");
        f.update(12, Bitrate::mbps(3));
        assert_eq!(f.get(), Bitrate::mbps(6), "expired: the best of rounds 2-12");
        f.update(16, Bitrate::mbps(1));
        assert_eq!(f.get(), Bitrate::mbps(3));
    }

    /// §4.3.2-4.3.4: on a fixed-rate path Startup doubles the flight per round, the pipe is full
    /// after three rounds without 25 % growth, Drain leads to ProbeBW, and there BtlBw is the
    /// path's rate, RTprop its base RTT, and cwnd 2 BDP plus Linux's quanta.
    #[test]
    fn startup_drain_probe_bw_on_a_fixed_rate_path() {
        let mut p = Path::new(Bitrate::mbps(10), 7);
        for _ in 0..40 {
            p.round();
        }
        assert_eq!(p.modes, [Mode::Startup, Mode::Drain, Mode::ProbeBw]);
        let m = p.bbr.metrics();
        assert!(m.filled_pipe);
        let bw = m.btl_bw.as_bps_f64() / 1e7;
        assert!((0.97..=1.01).contains(&bw), "BtlBw {}", m.btl_bw);
        assert_eq!(m.rt_prop, Some(RTT));
        // BDP = 10 Mbit/s × 40 ms = 50 kB = 50 packets; 2 BDP + 3 × 2 TSO segments, +2 when
        // probing, + the ack-aggregation term (this path ACKs a round at the rate of its
        // flight, which exceeds BtlBw while a queue builds: a few packets).
        let cwnd = p.cwnd.as_bytes() / MSS.as_bytes();
        assert!((106..=114).contains(&cwnd), "cwnd {cwnd} packets");
    }

    /// §4.3.4.2: ProbeBW starts at a random phase, never the draining 3/4, and the phase is the
    /// seed's.
    #[test]
    fn probe_bw_starts_at_any_phase_but_the_draining_one() {
        let mut seen = [0; 8];
        for seed in 0..200 {
            let mut b = Bbr::new(MSS, ms(0), MSS * 10, seed);
            b.enter_probe_bw(ms(0));
            seen[b.cycle_index] += 1;
        }
        assert_eq!(seen[1], 0);
        assert!(seen.iter().enumerate().all(|(i, &n)| i == 1 || n > 10), "{seen:?}");
        let phase = |seed| {
            let mut b = Bbr::new(MSS, ms(0), MSS * 10, seed);
            b.enter_probe_bw(ms(0));
            b.cycle_index
        };
        assert_eq!(phase(42), phase(42));
    }

    /// §4.3.4.3: phases last RTprop; 5/4 also waits for in flight to reach 5/4 BDP; 3/4 ends
    /// early when in flight falls to the BDP.
    #[test]
    fn gain_cycle_phases_follow_time_and_inflight() {
        let mut b = Bbr::new(MSS, ms(0), MSS * 10, 0);
        b.rt_prop = Some(RTT);
        b.btl_bw.update(0, Bitrate::mbps(10));
        b.filled_pipe = true;
        b.mode = Mode::ProbeBw;
        b.cycle_index = 0;
        b.cycle_stamp = ms(0);
        b.update_gains();
        b.pacing_rate = Bitrate::mbps(10) * (1.25 * PACING_MARGIN);
        let ack = |t: i64, prior_in_flight: u64| AckSample {
            now: ms(t),
            rate: RateSample {
                delivered: MSS,
                interval: Some(RTT),
                prior_delivered: DataSize::ZERO,
                app_limited: false,
                acked_sacked: MSS,
            },
            rtt: Some(RTT),
            srtt: Some(RTT),
            losses: 0,
            lost_total: 0,
            delivered: MSS,
            delivered_time: ms(t),
            prior_in_flight: MSS * prior_in_flight,
            in_flight: MSS * prior_in_flight,
            pacing_delay: Duration::ZERO,
            state: LossState::Open,
            cwnd: MSS * 100,
        };
        // BDP 50 packets; 5/4 BDP with quanta: ⌈62.5⌉ + 6 → 70, + 2 in phase 0 = 72.
        assert_eq!(b.inflight(Bitrate::mbps(10), 1.25), 72);
        assert!(!b.is_next_cycle_phase(&ack(30, 80)), "before RTprop");
        assert!(!b.is_next_cycle_phase(&ack(50, 60)), "in flight below 5/4 BDP");
        assert!(b.is_next_cycle_phase(&ack(50, 72)));
        b.advance_cycle_phase(ms(50));
        b.update_gains();
        assert_eq!(b.pacing_gain, 0.75);
        assert!(!b.is_next_cycle_phase(&ack(60, 70)));
        assert!(b.is_next_cycle_phase(&ack(60, 56)), "drained to BDP + quanta (56)");
        b.advance_cycle_phase(ms(60));
        b.update_gains();
        assert_eq!(b.pacing_gain, 1.0);
        assert!(!b.is_next_cycle_phase(&ack(90, 10)), "1.0 phases last RTprop whatever in flight");
        assert!(b.is_next_cycle_phase(&ack(101, 10)));
    }

    /// §4.3.5: once RTprop is 10 s old, ProbeRTT caps cwnd at 4 packets until 200 ms and a round
    /// have passed with that flight, then restores cwnd and returns to ProbeBW.
    #[test]
    fn probe_rtt_after_ten_seconds() {
        let mut p = Path::new(Bitrate::mbps(10), 3);
        while p.now < ms(9_000) {
            p.round();
        }
        assert_eq!(p.bbr.mode(), Mode::ProbeBw);
        let before = p.cwnd;
        // Queue-free rounds keep refreshing RTprop with an equal sample: no ProbeRTT. A path
        // whose RTT went up does not refresh it.
        let mut entered = None;
        let mut left = None;
        while p.now < ms(13_000) {
            p.rate = Bitrate::mbps(10);
            let was = p.bbr.mode();
            p.round();
            if p.bbr.mode() == Mode::ProbeRtt && was != Mode::ProbeRtt {
                entered = Some(p.now);
                assert!(p.cwnd <= MSS * 4, "{}", p.cwnd);
            }
            if was == Mode::ProbeRtt && p.bbr.mode() != Mode::ProbeRtt {
                left = Some(p.now);
            }
        }
        // With the flight at 2 BDP the RTT doubles, so RTprop stays from before 9 s ...
        let (entered, left) = (entered.expect("ProbeRTT"), left.expect("left ProbeRTT"));
        assert!(left - entered >= PROBE_RTT_DURATION, "{entered} → {left}");
        assert_eq!(p.bbr.mode(), Mode::ProbeBw);
        assert!(p.cwnd >= before * 0.9, "cwnd restored: {} vs {}", p.cwnd, before);
    }

    /// §4.2.3.4: the first round of a recovery conserves packets (cwnd = in flight + delivered),
    /// and its end restores the cwnd saved on entry.
    #[test]
    fn recovery_conserves_packets_then_restores_cwnd() {
        let mut b = Bbr::new(MSS, ms(0), MSS * 10, 0);
        b.rt_prop = Some(RTT);
        b.btl_bw.update(0, Bitrate::mbps(10));
        b.filled_pipe = true;
        b.mode = Mode::ProbeBw;
        b.cycle_index = 3;
        b.update_gains();
        let mut a = AckSample {
            now: ms(1000),
            rate: RateSample {
                delivered: MSS * 50,
                interval: Some(RTT),
                prior_delivered: DataSize::ZERO,
                app_limited: false,
                acked_sacked: MSS,
            },
            rtt: None,
            srtt: Some(RTT),
            losses: 3,
            lost_total: 3,
            delivered: MSS * 1000,
            delivered_time: ms(1000),
            prior_in_flight: MSS * 100,
            in_flight: MSS * 96,
            pacing_delay: Duration::ZERO,
            state: LossState::Recovery,
            cwnd: MSS * 106,
        };
        b.next_round_delivered = MSS * 2000;
        b.pacing_rate = Bitrate::mbps(10) * PACING_MARGIN;
        assert_eq!(b.on_enter_recovery(MSS * 106), None);
        a.cwnd = b.on_ack(&a).cwnd;
        assert_eq!(a.cwnd, MSS * 97, "in flight 96 + 1 delivered");
        a.losses = 0;
        a.in_flight = MSS * 90;
        a.cwnd = b.on_ack(&a).cwnd;
        assert_eq!(a.cwnd, MSS * 97, "never below what conservation allowed");
        a.state = LossState::Open;
        // max(97, 106) + 1 delivered, below the target 2 × 50 + 1 (the one packet ACKed in the
        // aggregation epoch) + 3 × 2, rounded up to 108.
        assert_eq!(b.on_ack(&a).cwnd, MSS * 107, "restored");
    }
}
