//! Network congestion control of SCReAM v1 (RFC 8298 §4.1.2): the congestion window and what
//! feeds it.
//!
//! Blocks, each a small state machine fed by `now` and scripted inputs:
//!
//! * [`SentPacketList`]: transmitted packets, bytes_in_flight, bytes_newly_acked (§4.1.2) and the
//!   lost-packet detection with its reordering window (§4.1.2.4);
//! * [`BaseDelayHistory`]: LEDBAT's base delay, the minimum of per-interval minima of the one-way
//!   delay (RFC 6817 §2.4.2, referenced by §4.1.2); qdelay = one-way delay − base delay;
//! * [`QdelayTrend`]: `update_variables` (§4.1.2): qdelay_fraction_avg, the 50 ms
//!   qdelay_fraction_hist, qdelay_trend and qdelay_trend_mem;
//! * [`SmoothedRtt`]: s_rtt (RFC 6298 §2);
//! * [`CongestionWindow`]: `update_cwnd` and `on congestion event` (§4.1.2.1, §4.1.2.2);
//! * [`send_window`] (§4.1.2.5) and [`pace_bitrate`] / [`t_pace`] (§4.1.2.6);
//! * [`NetworkCongestionControl`]: the above wired together as §4.1.2.2's pseudo code does, with
//!   fast-increase resumption (§4.1.2.7), the loss-event rate and the competing-flow
//!   compensation of [`super::competing_flows`].

use std::collections::VecDeque;

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

use super::competing_flows::QdelayTargetAdaptation;
use super::config::ScreamConfig;
use crate::feedback::{Ecn, FeedbackReport, PacketResult};

/// Which congestion signal caused a congestion event (§4.1.2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CongestionEvent {
    /// One or more packets were declared lost (§4.1.2.4).
    Loss,
    /// The count of ECN-CE marked packets increased.
    Ecn,
}

/// The controller's state for traces: `in_fast_increase` (§4.1.1.2) or the congestion event
/// whose one-s_rtt hold-off (§4.1.2.1) is running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScreamState {
    /// in_fast_increase = true.
    RampUp,
    /// Delay-based window control, no recent congestion event.
    Normal,
    /// Within one s_rtt of a loss event; further losses are ignored.
    Loss,
    /// Within one s_rtt of an ECN event; further CE marks are ignored.
    Ecn,
}

impl ScreamState {
    pub fn name(self) -> &'static str {
        match self {
            Self::RampUp => "ramp-up",
            Self::Normal => "normal",
            Self::Loss => "loss",
            Self::Ecn => "ecn",
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Base delay (RFC 6817 §2.4.2 via RFC 8298 §4.1.2)
// ---------------------------------------------------------------------------------------------

/// LEDBAT's base delay: the minimum of the last `history_len` per-interval minima of the one-way
/// delay. A new interval starts when a sample arrives `interval` or more after the start of the
/// current one, on a fixed grid from the first sample (RFC 6817 rolls over on minute
/// boundaries). Intervals without samples add no entry, as in RFC 6817.
#[derive(Clone, Debug)]
pub struct BaseDelayHistory {
    interval: Duration,
    history_len: usize,
    /// base_delays of RFC 6817, oldest first; the last entry is the open interval.
    minima: VecDeque<Duration>,
    interval_start: Option<Instant>,
}

impl BaseDelayHistory {
    pub fn new(interval: Duration, history_len: usize) -> Self {
        Self { interval, history_len: history_len.max(1), minima: VecDeque::new(), interval_start: None }
    }

    /// `update_base_delay(delay)` of RFC 6817 §2.4.2.
    pub fn update(&mut self, now: Instant, one_way_delay: Duration) {
        if let Some(start) = self.interval_start {
            let elapsed = now - start;
            if elapsed < self.interval {
                if let Some(tail) = self.minima.back_mut() {
                    *tail = (*tail).min(one_way_delay);
                }
                return;
            }
            let whole = elapsed.as_micros() / self.interval.as_micros().max(1);
            self.interval_start = Some(start + self.interval * whole);
        } else {
            self.interval_start = Some(now);
        }
        self.minima.push_back(one_way_delay);
        while self.minima.len() > self.history_len {
            self.minima.pop_front();
        }
    }

    /// The base delay, `min(base_delays)`; `None` before the first sample.
    pub fn base_delay(&self) -> Option<Duration> {
        self.minima.iter().min().copied()
    }

    /// qdelay = one-way delay − base delay, never negative (RFC 6817 §2.4.2, RFC 8298 §4.1.2).
    pub fn qdelay(&self, one_way_delay: Duration) -> Duration {
        self.base_delay().map_or(Duration::ZERO, |base| (one_way_delay - base).max(Duration::ZERO))
    }
}

// ---------------------------------------------------------------------------------------------
// qdelay trend (§4.1.2 update_variables)
// ---------------------------------------------------------------------------------------------

/// `R(x − mean, 1) / R(x − mean, 0)` with the biased autocorrelation
/// `R(x, k) = Σ_{n=1}^{N−k} x(n)·x(n+k)` (§4.1.2). 0 for a constant history (R(·,0) = 0).
pub fn autocorrelation_ratio(x: &[f64]) -> f64 {
    if x.len() < 2 {
        return 0.0;
    }
    let mean = x.iter().sum::<f64>() / x.len() as f64;
    let r0: f64 = x.iter().map(|v| (v - mean) * (v - mean)).sum();
    let r1: f64 = x.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum();
    if r0 <= f64::EPSILON {
        0.0
    } else {
        r1 / r0
    }
}

/// The qdelay trend of §4.1.2 (`update_variables`): a value in 0..1 that rises when qdelay
/// moves, before it reaches qdelay_target (incipient congestion).
///
/// Per acknowledgement, [`QdelayTrend::update_variables`] updates qdelay_fraction_avg and
/// qdelay_trend (with the last prediction coefficient a_t). Every 50 ms,
/// [`QdelayTrend::sample`] pushes the latest qdelay_fraction into the 20-sample history,
/// recomputes a_t and updates the peak-hold qdelay_trend_mem. The RFC updates qdelay_trend_mem
/// per acknowledgement; doing it on the 50 ms grid keeps its decay (0.99 per step) independent
/// of the feedback rate.
#[derive(Clone, Debug)]
pub struct QdelayTrend {
    weight: f64,
    mem_decay: f64,
    /// qdelay_fraction_t of the last acknowledgement, qdelay / qdelay_target.
    qdelay_fraction: f64,
    /// qdelay_fraction_avg (§4.1.1.2), EWMA with QDELAY_WEIGHT.
    qdelay_fraction_avg: f64,
    /// qdelay_fraction_hist[20] (§4.1.1.2), oldest first, initially zeros.
    qdelay_fraction_hist: VecDeque<f64>,
    /// a_t, the lag-1 prediction coefficient of the history.
    a: f64,
    /// qdelay_trend (§4.1.1.2).
    qdelay_trend: f64,
    /// qdelay_trend_mem (§4.1.1.2).
    qdelay_trend_mem: f64,
}

impl QdelayTrend {
    pub fn new(cfg: &ScreamConfig) -> Self {
        Self {
            weight: cfg.qdelay_weight,
            mem_decay: cfg.qdelay_trend_mem_decay,
            qdelay_fraction: 0.0,
            qdelay_fraction_avg: 0.0,
            qdelay_fraction_hist: std::iter::repeat_n(0.0, cfg.qdelay_fraction_hist_len.max(2)).collect(),
            a: 0.0,
            qdelay_trend: 0.0,
            qdelay_trend_mem: 0.0,
        }
    }

    /// One qdelay sample from an acknowledgement (§4.1.2 `update_variables`, first part).
    pub fn update_variables(&mut self, qdelay: Duration, qdelay_target: Duration) {
        self.qdelay_fraction = qdelay / qdelay_target;
        self.qdelay_fraction_avg =
            (1.0 - self.weight) * self.qdelay_fraction_avg + self.weight * self.qdelay_fraction;
        self.qdelay_trend = (self.a * self.qdelay_fraction_avg).clamp(0.0, 1.0);
    }

    /// The 50 ms sampling of qdelay_fraction into qdelay_fraction_hist (§4.1.2).
    pub fn sample(&mut self) {
        self.qdelay_fraction_hist.pop_front();
        self.qdelay_fraction_hist.push_back(self.qdelay_fraction);
        self.a = autocorrelation_ratio(self.qdelay_fraction_hist.make_contiguous());
        self.qdelay_trend = (self.a * self.qdelay_fraction_avg).clamp(0.0, 1.0);
        self.qdelay_trend_mem = (self.mem_decay * self.qdelay_trend_mem).max(self.qdelay_trend);
    }

    pub fn qdelay_trend(&self) -> f64 {
        self.qdelay_trend
    }
    pub fn qdelay_trend_mem(&self) -> f64 {
        self.qdelay_trend_mem
    }
    pub fn qdelay_fraction_avg(&self) -> f64 {
        self.qdelay_fraction_avg
    }
}

// ---------------------------------------------------------------------------------------------
// s_rtt (RFC 6298 §2)
// ---------------------------------------------------------------------------------------------

/// s_rtt, smoothed as RFC 6298 §2 smooths SRTT: the first sample sets it, later ones are
/// averaged in with weight α.
#[derive(Clone, Copy, Debug)]
pub struct SmoothedRtt {
    alpha: f64,
    s_rtt: Option<Duration>,
}

impl SmoothedRtt {
    pub fn new(alpha: f64) -> Self {
        Self { alpha, s_rtt: None }
    }
    pub fn update(&mut self, rtt: Duration) {
        if rtt <= Duration::ZERO {
            return;
        }
        self.s_rtt = Some(match self.s_rtt {
            None => rtt,
            Some(s) => s * (1.0 - self.alpha) + rtt * self.alpha,
        });
    }
    pub fn get(&self) -> Option<Duration> {
        self.s_rtt
    }
}

// ---------------------------------------------------------------------------------------------
// max_bytes_in_flight (§4.1.2.2)
// ---------------------------------------------------------------------------------------------

/// The maximum of bytes in flight over a sliding time window (max_bytes_in_flight, §4.1.1.2),
/// kept exactly with a monotone queue.
#[derive(Clone, Debug)]
pub struct WindowedMax {
    window: Duration,
    /// (time, value), values strictly decreasing from front to back.
    samples: VecDeque<(Instant, DataSize)>,
}

impl WindowedMax {
    pub fn new(window: Duration) -> Self {
        Self { window, samples: VecDeque::new() }
    }
    pub fn update(&mut self, now: Instant, value: DataSize) {
        while self.samples.back().is_some_and(|&(_, v)| v <= value) {
            self.samples.pop_back();
        }
        self.samples.push_back((now, value));
        self.expire(now);
    }
    /// The maximum of the samples taken in `[now − window, now]`; zero if none.
    pub fn max(&mut self, now: Instant) -> DataSize {
        self.expire(now);
        self.samples.front().map_or(DataSize::ZERO, |&(_, v)| v)
    }
    fn expire(&mut self, now: Instant) {
        while self.samples.front().is_some_and(|&(t, _)| now - t > self.window) {
            self.samples.pop_front();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Transmitted packets, bytes in flight, loss detection (§4.1.2, §4.1.2.4)
// ---------------------------------------------------------------------------------------------

/// Lost packets are remembered this long after they were first seen missing, so that a late
/// arrival can still widen the reordering window. Bookkeeping only.
const LOST_PACKET_MEMORY: Duration = Duration::from_secs(2);

#[derive(Clone, Copy, Debug)]
struct TxPacket {
    seq: i64,
    size: DataSize,
    sent_at: Instant,
    received: bool,
    /// The lost flag of §4.1.2.4: when feedback first showed the packet missing (a packet with a
    /// higher sequence number was acknowledged and this one was not).
    missing_since: Option<Instant>,
    /// Declared lost: not acknowledged within the reordering window after `missing_since`.
    lost: bool,
}

/// The newest packet a feedback acknowledged, when it advanced the highest acknowledged
/// sequence number. Its send and arrival times give the RTT and the qdelay sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewestAck {
    pub seq: i64,
    pub sent_at: Instant,
    pub arrival: Instant,
}

/// What one feedback told the [`SentPacketList`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckSummary {
    /// bytes_newly_acked (§4.1.2): sizes of the packets between the previous and the new highest
    /// acknowledged sequence number, lost ones included.
    pub bytes_newly_acked: DataSize,
    /// Bytes of packets reported received for the first time (for rate_ack, §4.1.3).
    pub bytes_received: DataSize,
    /// Packets newly reported received with ECN-CE (the increase of n_ECN).
    pub ce_marked: u64,
    /// Packets reported received for the first time (SCReAM v2's data_units_acked).
    pub packets_received: u64,
    /// Bytes of those packets that were ECN-CE marked (SCReAM v2's bytes_newly_acked_ce).
    pub bytes_ce: DataSize,
    pub newest: Option<NewestAck>,
}

/// The list of transmitted RTP packets §4.1.2 requires, with bytes_in_flight, bytes_newly_acked
/// and the lost-packet detection of §4.1.2.4.
///
/// bytes_in_flight is the sum of the sizes of the packets sent after the highest acknowledged
/// one, lost or not (§4.1.2). A packet below the highest acknowledged one that is not
/// acknowledged gets the lost flag (`missing_since`); it is declared lost if it is still not
/// acknowledged one reordering window later. A packet that arrives after being flagged widens
/// the window to the delay observed between flag and arrival (§4.1.2.4), up to s_rtt.
#[derive(Clone, Debug)]
pub struct SentPacketList {
    packets: VecDeque<TxPacket>,
    /// The highest acknowledged sequence number (or the last one written off by
    /// [`SentPacketList::declare_all_lost`]): bytes above it are in flight.
    highest_acked: Option<i64>,
    bytes_in_flight: DataSize,
    reorder_window: Duration,
    reorder_window_init: Duration,
}

impl SentPacketList {
    pub fn new(reorder_window_init: Duration) -> Self {
        Self {
            packets: VecDeque::new(),
            highest_acked: None,
            bytes_in_flight: DataSize::ZERO,
            reorder_window: reorder_window_init,
            reorder_window_init,
        }
    }

    pub fn bytes_in_flight(&self) -> DataSize {
        self.bytes_in_flight
    }
    pub fn reorder_window(&self) -> Duration {
        self.reorder_window
    }
    pub fn highest_acked(&self) -> Option<i64> {
        self.highest_acked
    }

    fn index_of(&self, seq: i64) -> Option<usize> {
        self.packets.binary_search_by_key(&seq, |p| p.seq).ok()
    }

    /// A packet was transmitted.
    pub fn on_sent(&mut self, seq: i64, size: DataSize, sent_at: Instant) {
        let p = TxPacket { seq, size, sent_at, received: false, missing_since: None, lost: false };
        match self.packets.back() {
            Some(last) if last.seq >= seq => {
                // Not expected (transport-wide sequence numbers increase); keep the list sorted.
                match self.packets.binary_search_by_key(&seq, |q| q.seq) {
                    Ok(_) => return,
                    Err(i) => self.packets.insert(i, p),
                }
            }
            _ => self.packets.push_back(p),
        }
        if self.highest_acked.is_none_or(|h| seq > h) {
            self.bytes_in_flight += size;
        }
    }

    /// Applies the per-packet results of one feedback (§4.1.2): marks received packets, advances
    /// the highest acknowledged sequence number, and flags the packets below it that are
    /// missing. Losses are declared separately by [`SentPacketList::detect_losses`].
    pub fn on_feedback(
        &mut self,
        now: Instant,
        results: &[PacketResult],
        s_rtt: Option<Duration>,
    ) -> AckSummary {
        let mut out = AckSummary::default();
        let mut newest: Option<NewestAck> = None;
        for r in results {
            let Some(arrival) = r.arrival else { continue };
            let Some(i) = self.index_of(r.seq) else { continue };
            let p = &mut self.packets[i];
            if p.received {
                continue;
            }
            p.received = true;
            out.bytes_received += p.size;
            out.packets_received += 1;
            if r.ecn == Ecn::Ce {
                out.ce_marked += 1;
                out.bytes_ce += p.size;
            }
            if let Some(since) = p.missing_since {
                // Reordered (or a spurious loss): the window must cover this delay (§4.1.2.4).
                let observed = now - since;
                let cap = s_rtt.map_or(observed, |s| s.max(self.reorder_window_init));
                self.reorder_window = self.reorder_window.max(observed.min(cap));
            }
            let sent_at = p.sent_at;
            if newest.is_none_or(|n| r.seq > n.seq) {
                newest = Some(NewestAck { seq: r.seq, sent_at, arrival });
            }
        }
        if let Some(n) = newest.filter(|n| self.highest_acked.is_none_or(|h| n.seq > h)) {
            let from = self.highest_acked.map_or(0, |h| self.packets.partition_point(|p| p.seq <= h));
            let newly: DataSize =
                self.packets.range(from..).take_while(|p| p.seq <= n.seq).map(|p| p.size).sum();
            out.bytes_newly_acked = newly;
            self.bytes_in_flight = self.bytes_in_flight.saturating_sub(newly);
            self.highest_acked = Some(n.seq);
            out.newest = Some(n);
        }
        if let Some(h) = self.highest_acked {
            for p in self.packets.iter_mut().take_while(|p| p.seq < h) {
                if !p.received && !p.lost && p.missing_since.is_none() {
                    p.missing_since = Some(now);
                }
            }
        }
        self.prune(now);
        out
    }

    /// Declares lost the flagged packets whose reordering window has passed (§4.1.2.4).
    /// Returns how many were declared lost now.
    pub fn detect_losses(&mut self, now: Instant) -> usize {
        let window = self.reorder_window;
        let mut lost = 0;
        for p in &mut self.packets {
            if !p.received && !p.lost && p.missing_since.is_some_and(|s| now >= s + window) {
                p.lost = true;
                lost += 1;
            }
        }
        lost
    }

    /// When the next flagged packet's reordering window ends.
    pub fn next_loss_deadline(&self) -> Option<Instant> {
        self.packets
            .iter()
            .filter(|p| !p.received && !p.lost)
            .filter_map(|p| p.missing_since)
            .min()
            .map(|s| s + self.reorder_window)
    }

    /// Writes off everything not yet acknowledged (feedback timeout): all such packets are
    /// declared lost and bytes_in_flight becomes zero. Returns how many were declared lost.
    pub fn declare_all_lost(&mut self, now: Instant) -> usize {
        let mut lost = 0;
        for p in &mut self.packets {
            if !p.received && !p.lost {
                p.lost = true;
                p.missing_since.get_or_insert(now);
                lost += 1;
            }
        }
        if let Some(last) = self.packets.back() {
            self.highest_acked = Some(self.highest_acked.map_or(last.seq, |h| h.max(last.seq)));
        }
        self.bytes_in_flight = DataSize::ZERO;
        self.prune(now);
        lost
    }

    fn prune(&mut self, now: Instant) {
        let Some(h) = self.highest_acked else { return };
        while let Some(p) = self.packets.front() {
            let done = p.seq <= h
                && (p.received || (p.lost && p.missing_since.is_some_and(|s| now - s > LOST_PACKET_MEMORY)));
            if !done {
                break;
            }
            self.packets.pop_front();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Loss event rate (§4.1.1.2)
// ---------------------------------------------------------------------------------------------

/// loss_event_rate, "the estimated fraction of RTTs with lost packets detected" (§4.1.1.2): an
/// EWMA over consecutive s_rtt periods of "were packets declared lost in this period".
#[derive(Clone, Copy, Debug)]
pub struct LossEventRate {
    gain: f64,
    rate: f64,
    period_start: Option<Instant>,
    loss_in_period: bool,
}

impl LossEventRate {
    pub fn new(gain: f64) -> Self {
        Self { gain, rate: 0.0, period_start: None, loss_in_period: false }
    }
    pub fn on_loss(&mut self) {
        self.loss_in_period = true;
    }
    /// Closes the s_rtt period if it is over.
    pub fn update(&mut self, now: Instant, s_rtt: Option<Duration>) {
        let Some(s_rtt) = s_rtt else { return };
        let start = *self.period_start.get_or_insert(now);
        if now - start >= s_rtt {
            let sample = if self.loss_in_period { 1.0 } else { 0.0 };
            self.rate = (1.0 - self.gain) * self.rate + self.gain * sample;
            self.loss_in_period = false;
            self.period_start = Some(now);
        }
    }
    pub fn get(&self) -> f64 {
        self.rate
    }
}

// ---------------------------------------------------------------------------------------------
// Congestion window (§4.1.2.1, §4.1.2.2)
// ---------------------------------------------------------------------------------------------

/// The inputs of `update_cwnd` (§4.1.2.2) at one acknowledgement.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AckInput {
    pub bytes_newly_acked: DataSize,
    /// bytes_in_flight after the acknowledgement.
    pub bytes_in_flight: DataSize,
    /// max_bytes_in_flight over the last 5 s.
    pub max_bytes_in_flight: DataSize,
    pub qdelay: Duration,
    pub qdelay_target: Duration,
    pub qdelay_trend: f64,
}

/// What `update_cwnd` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CwndUpdate {
    /// In fast increase: cwnd grew by bytes_newly_acked, or stayed if the window was not used.
    FastIncrease,
    /// qdelay_trend reached QDELAY_TREND_TH: fast increase ended (incipient congestion) and the
    /// delay-based update ran.
    ExitedFastIncrease,
    /// The delay-based (LEDBAT-like) update ran.
    DelayBased,
}

/// cwnd and in_fast_increase (§4.1.1.2) with `update_cwnd` and the congestion-event reduction
/// (§4.1.2.2). cwnd is kept in fractional bytes: per-acknowledgement steps of
/// `GAIN·off_target·bytes_newly_acked·MSS/cwnd` are often below one byte.
#[derive(Clone, Debug)]
pub struct CongestionWindow {
    cfg: ScreamConfig,
    cwnd_bytes: f64,
    in_fast_increase: bool,
}

impl CongestionWindow {
    /// cwnd = MIN_CWND, in_fast_increase = true (§4.1.1.2).
    pub fn new(cfg: &ScreamConfig) -> Self {
        Self { cfg: *cfg, cwnd_bytes: cfg.min_cwnd.as_bytes() as f64, in_fast_increase: true }
    }

    pub fn cwnd(&self) -> DataSize {
        DataSize::bytes(self.cwnd_bytes.round() as u64)
    }
    pub fn in_fast_increase(&self) -> bool {
        self.in_fast_increase
    }
    /// §4.1.2.7: fast increase resumes.
    pub fn resume_fast_increase(&mut self) {
        self.in_fast_increase = true;
    }

    /// `on congestion event` (§4.1.2.2): leave fast increase and scale cwnd by BETA_LOSS or
    /// BETA_ECN, not below MIN_CWND.
    pub fn on_congestion_event(&mut self, event: CongestionEvent) {
        self.in_fast_increase = false;
        let beta = match event {
            CongestionEvent::Loss => self.cfg.beta_loss,
            CongestionEvent::Ecn => self.cfg.beta_ecn,
        };
        self.cwnd_bytes = (self.cwnd_bytes * beta).max(self.min_cwnd());
    }

    fn min_cwnd(&self) -> f64 {
        self.cfg.min_cwnd.as_bytes() as f64
    }

    /// `update_cwnd(bytes_newly_acked)` of §4.1.2.2.
    pub fn update_cwnd(&mut self, a: &AckInput) -> CwndUpdate {
        let bytes_newly_acked = a.bytes_newly_acked.as_bytes() as f64;
        let bytes_in_flight = a.bytes_in_flight.as_bytes() as f64;
        let mut update = CwndUpdate::DelayBased;
        if self.in_fast_increase {
            if a.qdelay_trend >= self.cfg.qdelay_trend_th {
                // Incipient congestion: leave fast increase and fall through.
                self.in_fast_increase = false;
                update = CwndUpdate::ExitedFastIncrease;
            } else {
                // Grow only if the window is used; the slack of bytes_newly_acked keeps it
                // growing when feedback is sparse.
                if bytes_in_flight * self.cfg.fast_increase_in_flight_factor + bytes_newly_acked
                    > self.cwnd_bytes
                {
                    self.cwnd_bytes += bytes_newly_acked;
                }
                return CwndUpdate::FastIncrease;
            }
        }
        // off_target as in LEDBAT (RFC 6817 §2.4.2).
        let off_target = (a.qdelay_target - a.qdelay) / a.qdelay_target;
        let mss = self.cfg.mss.as_bytes() as f64;
        let mut cwnd_delta = self.cfg.gain * off_target * bytes_newly_acked * mss / self.cwnd_bytes;
        if off_target > 0.0
            && bytes_in_flight * self.cfg.underuse_in_flight_factor + bytes_newly_acked <= self.cwnd_bytes
        {
            // No increase while the window is underused.
            cwnd_delta = 0.0;
        }
        self.cwnd_bytes += cwnd_delta;
        // Congestion window validation: not above the recent maximum in flight plus headroom.
        let limit = a.max_bytes_in_flight.as_bytes() as f64 * self.cfg.max_bytes_in_flight_head_room;
        self.cwnd_bytes = self.cwnd_bytes.min(limit).max(self.min_cwnd());
        update
    }
}

// ---------------------------------------------------------------------------------------------
// Send window (§4.1.2.5) and pacing (§4.1.2.6)
// ---------------------------------------------------------------------------------------------

/// The largest bytes_in_flight + packet size the sender may reach (§4.1.2.5
/// `calculate_send_window` expressed as a window): `cwnd + MSS` while qdelay ≤ qdelay_target,
/// `cwnd` otherwise. Before any qdelay sample the relaxed rule applies.
pub fn send_window_limit(
    cwnd: DataSize,
    qdelay: Option<Duration>,
    qdelay_target: Duration,
    mss: DataSize,
) -> DataSize {
    if qdelay.is_none_or(|q| q <= qdelay_target) {
        cwnd + mss
    } else {
        cwnd
    }
}

/// send_wnd of §4.1.2.5: `cwnd + MSS − bytes_in_flight` if qdelay ≤ qdelay_target, else
/// `cwnd − bytes_in_flight`; zero when negative. A packet of size s may be sent if
/// `s ≤ send_wnd`.
pub fn send_window(
    cwnd: DataSize,
    bytes_in_flight: DataSize,
    qdelay: Option<Duration>,
    qdelay_target: Duration,
    mss: DataSize,
) -> DataSize {
    send_window_limit(cwnd, qdelay, qdelay_target, mss).saturating_sub(bytes_in_flight)
}

/// pace_bitrate of §4.1.2.6, `max(RATE_PACE_MIN, headroom × cwnd·8 / s_rtt)`. RFC 8298 has no
/// headroom (1.0); see [`super::config::PACE_HEADROOM`].
pub fn pace_bitrate(cwnd: DataSize, s_rtt: Duration, headroom: f64, rate_pace_min: Bitrate) -> Bitrate {
    let window_rate = if s_rtt > Duration::ZERO { (cwnd / s_rtt) * headroom } else { Bitrate::INFINITE };
    window_rate.max(rate_pace_min)
}

/// t_pace of §4.1.2.6, the minimum interval between the starts of two packet transmissions:
/// `rtp_size·8 / pace_bitrate`.
pub fn t_pace(rtp_size: DataSize, pace_bitrate: Bitrate) -> Duration {
    rtp_size / pace_bitrate
}

// ---------------------------------------------------------------------------------------------
// Network congestion control (§4.1.2)
// ---------------------------------------------------------------------------------------------

/// What a feedback or a timeout did, for the media rate controller.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetworkOutcome {
    /// A congestion event happened (loss takes precedence over ECN, §4.1.2.2).
    pub congestion: Option<CongestionEvent>,
    /// Fast increase ended because qdelay_trend reached QDELAY_TREND_TH (incipient congestion).
    pub exited_fast_increase: bool,
    /// Bytes newly reported received (rate_ack of §4.1.3).
    pub bytes_received: DataSize,
}

/// The network congestion control of §4.1.2: cwnd from qdelay, losses and ECN; the send window
/// and the pacing rate for the sender transmission control.
#[derive(Clone, Debug)]
pub struct NetworkCongestionControl {
    cfg: ScreamConfig,
    sent: SentPacketList,
    base_delay: BaseDelayHistory,
    trend: QdelayTrend,
    target: QdelayTargetAdaptation,
    window: CongestionWindow,
    s_rtt: SmoothedRtt,
    max_bytes_in_flight: WindowedMax,
    loss_event_rate: LossEventRate,
    /// The last qdelay sample (§4.1.2); `None` before the first acknowledgement.
    qdelay: Option<Duration>,
    last_loss_event: Option<Instant>,
    last_ecn_event: Option<Instant>,
    /// n_ECN (§4.1.2): accumulated count of ECN-CE marked packets.
    n_ecn: u64,
    /// Since when qdelay_trend has been below QDELAY_TREND_LO (§4.1.2.7).
    trend_low_since: Option<Instant>,
    /// The next qdelay_fraction / qdelay_norm sample on the 50 ms grid.
    next_sample: Instant,
    next_norm_sample: Instant,
    /// The last time feedback acknowledged something new, or bytes went in flight from none.
    last_progress: Instant,
    state: ScreamState,
}

impl NetworkCongestionControl {
    pub fn new(cfg: &ScreamConfig, now: Instant) -> Self {
        Self {
            cfg: *cfg,
            sent: SentPacketList::new(cfg.reorder_window_init),
            base_delay: BaseDelayHistory::new(cfg.base_delay_interval, cfg.base_history),
            trend: QdelayTrend::new(cfg),
            target: QdelayTargetAdaptation::new(cfg),
            window: CongestionWindow::new(cfg),
            s_rtt: SmoothedRtt::new(cfg.s_rtt_alpha),
            max_bytes_in_flight: WindowedMax::new(cfg.max_bytes_in_flight_window),
            loss_event_rate: LossEventRate::new(cfg.loss_event_rate_gain),
            qdelay: None,
            last_loss_event: None,
            last_ecn_event: None,
            n_ecn: 0,
            trend_low_since: None,
            next_sample: now + cfg.qdelay_fraction_sample_interval,
            next_norm_sample: now + cfg.qdelay_norm_sample_interval,
            last_progress: now,
            state: ScreamState::RampUp,
        }
    }

    /// An RTP packet was transmitted.
    pub fn on_packet_sent(&mut self, now: Instant, seq: i64, size: DataSize, sent_at: Instant) {
        if self.sent.bytes_in_flight().is_zero() {
            self.last_progress = now;
        }
        self.sent.on_sent(seq, size, sent_at);
        self.max_bytes_in_flight.update(now, self.sent.bytes_in_flight());
    }

    /// RTCP feedback arrived (§4.1.2.2 `on acknowledgement` / `on congestion event`).
    pub fn on_feedback(&mut self, now: Instant, report: &FeedbackReport) -> NetworkOutcome {
        let ack = self.sent.on_feedback(now, &report.packets, self.s_rtt.get());
        // Every received packet's one-way delay feeds the base delay; the clock offset between
        // sender and receiver cancels in one-way delay − base delay.
        for p in &report.packets {
            if let Some(arrival) = p.arrival {
                self.base_delay.update(now, arrival - p.sent_at);
            }
        }
        if let Some(n) = ack.newest {
            // RTT: time of feedback − send time of the newest acknowledged packet.
            self.s_rtt.update(now - n.sent_at);
            self.last_progress = now;
            // One qdelay sample per acknowledgement, from the highest sequence number (§4.1.2).
            let qdelay = self.base_delay.qdelay(n.arrival - n.sent_at);
            self.qdelay = Some(qdelay);
            self.trend.update_variables(qdelay, self.target.qdelay_target());
        }
        if let Some(rtt) = report.rtt {
            self.s_rtt.update(rtt);
        }
        self.n_ecn += ack.ce_marked;
        let lost = self.sent.detect_losses(now);
        let mut out = NetworkOutcome { bytes_received: ack.bytes_received, ..NetworkOutcome::default() };
        out.congestion = self.congestion_event(now, lost > 0, ack.ce_marked > 0);
        match out.congestion {
            Some(event) => self.on_congestion_event(now, event),
            None if !ack.bytes_newly_acked.is_zero() => {
                out.exited_fast_increase = self.on_acknowledgement(now, ack.bytes_newly_acked);
            }
            None => {}
        }
        self.loss_event_rate.update(now, self.s_rtt.get());
        self.update_state(now);
        out
    }

    /// The deadline of [`NetworkCongestionControl::poll_timeout`] passed: the 50 ms samplings,
    /// reordering windows that ended, the feedback timeout.
    pub fn on_timeout(&mut self, now: Instant) -> NetworkOutcome {
        let max_catch_up = self.cfg.qdelay_fraction_hist_len.max(self.cfg.qdelay_norm_var_len) as i64;
        self.next_sample =
            catch_up(now, self.next_sample, self.cfg.qdelay_fraction_sample_interval, max_catch_up, || {
                self.trend.sample();
            });
        let qdelay = self.qdelay.unwrap_or(Duration::ZERO);
        let loss_event_rate = self.loss_event_rate.get();
        let target = &mut self.target;
        self.next_norm_sample =
            catch_up(now, self.next_norm_sample, self.cfg.qdelay_norm_sample_interval, max_catch_up, || {
                target.adjust_qdelay_target(qdelay, loss_event_rate);
            });

        let mut lost = self.sent.detect_losses(now);
        if let Some(deadline) = self.feedback_deadline() {
            if now >= deadline {
                lost += self.sent.declare_all_lost(now);
                self.last_progress = now;
            }
        }
        let out = NetworkOutcome {
            congestion: self.congestion_event(now, lost > 0, false),
            ..NetworkOutcome::default()
        };
        if let Some(event) = out.congestion {
            self.on_congestion_event(now, event);
        }
        self.loss_event_rate.update(now, self.s_rtt.get());
        self.update_state(now);
        out
    }

    pub fn poll_timeout(&self) -> Instant {
        let mut t = self.next_sample.min(self.next_norm_sample);
        if let Some(d) = self.sent.next_loss_deadline() {
            t = t.min(d);
        }
        if let Some(d) = self.feedback_deadline() {
            t = t.min(d);
        }
        t
    }

    fn feedback_deadline(&self) -> Option<Instant> {
        feedback_deadline(&self.sent, self.last_progress, self.s_rtt.get(), self.cfg.feedback_timeout_min)
    }

    /// §4.1.2.1: a loss (or ECN) event, unless one happened less than one s_rtt ago.
    fn congestion_event(&mut self, now: Instant, lost: bool, ce: bool) -> Option<CongestionEvent> {
        if lost {
            self.loss_event_rate.on_loss();
        }
        let hold_off = self.s_rtt.get().unwrap_or(Duration::ZERO);
        let clear = |last: Option<Instant>| last.is_none_or(|t| now - t >= hold_off);
        if lost && clear(self.last_loss_event) {
            Some(CongestionEvent::Loss)
        } else if ce && clear(self.last_ecn_event) {
            Some(CongestionEvent::Ecn)
        } else {
            None
        }
    }

    /// `on congestion event` of §4.1.2.2.
    fn on_congestion_event(&mut self, now: Instant, event: CongestionEvent) {
        self.window.on_congestion_event(event);
        match event {
            CongestionEvent::Loss => self.last_loss_event = Some(now),
            CongestionEvent::Ecn => self.last_ecn_event = Some(now),
        }
        // Congestion restarts the T_RESUME_FAST_INCREASE clock (§4.1.2.7).
        self.trend_low_since = None;
    }

    /// `on acknowledgement` of §4.1.2.2; true if fast increase ended.
    fn on_acknowledgement(&mut self, now: Instant, bytes_newly_acked: DataSize) -> bool {
        let bytes_in_flight = self.sent.bytes_in_flight();
        let input = AckInput {
            bytes_newly_acked,
            bytes_in_flight,
            max_bytes_in_flight: self.max_bytes_in_flight.max(now).max(bytes_in_flight),
            qdelay: self.qdelay.unwrap_or(Duration::ZERO),
            qdelay_target: self.target.qdelay_target(),
            qdelay_trend: self.trend.qdelay_trend(),
        };
        let exited = self.window.update_cwnd(&input) == CwndUpdate::ExitedFastIncrease;
        self.check_to_resume_fast_increase(now);
        exited
    }

    /// §4.1.2.7: fast increase resumes once qdelay_trend has stayed below QDELAY_TREND_LO for
    /// T_RESUME_FAST_INCREASE.
    fn check_to_resume_fast_increase(&mut self, now: Instant) {
        if self.window.in_fast_increase() || self.trend.qdelay_trend() >= self.cfg.qdelay_trend_lo {
            self.trend_low_since = None;
            return;
        }
        let since = *self.trend_low_since.get_or_insert(now);
        if now - since >= self.cfg.t_resume_fast_increase {
            self.window.resume_fast_increase();
            self.trend_low_since = None;
        }
    }

    fn update_state(&mut self, now: Instant) {
        let hold_off = self.s_rtt.get().unwrap_or(Duration::ZERO);
        let recent = |t: Option<Instant>| t.is_some_and(|t| now - t < hold_off);
        self.state = if recent(self.last_loss_event) {
            ScreamState::Loss
        } else if recent(self.last_ecn_event) {
            ScreamState::Ecn
        } else if self.window.in_fast_increase() {
            ScreamState::RampUp
        } else {
            ScreamState::Normal
        };
    }

    pub fn cwnd(&self) -> DataSize {
        self.window.cwnd()
    }
    pub fn in_fast_increase(&self) -> bool {
        self.window.in_fast_increase()
    }
    pub fn bytes_in_flight(&self) -> DataSize {
        self.sent.bytes_in_flight()
    }
    pub fn qdelay(&self) -> Option<Duration> {
        self.qdelay
    }
    pub fn qdelay_target(&self) -> Duration {
        self.target.qdelay_target()
    }
    pub fn base_delay(&self) -> Option<Duration> {
        self.base_delay.base_delay()
    }
    pub fn s_rtt(&self) -> Option<Duration> {
        self.s_rtt.get()
    }
    pub fn qdelay_trend(&self) -> f64 {
        self.trend.qdelay_trend()
    }
    pub fn qdelay_trend_mem(&self) -> f64 {
        self.trend.qdelay_trend_mem()
    }
    pub fn loss_event_rate(&self) -> f64 {
        self.loss_event_rate.get()
    }
    pub fn reorder_window(&self) -> Duration {
        self.sent.reorder_window()
    }
    pub fn n_ecn(&self) -> u64 {
        self.n_ecn
    }
    pub fn state(&self) -> ScreamState {
        self.state
    }

    /// send_wnd (§4.1.2.5).
    pub fn send_window(&self) -> DataSize {
        send_window(self.cwnd(), self.bytes_in_flight(), self.qdelay, self.qdelay_target(), self.cfg.mss)
    }

    /// bytes_in_flight + send_wnd: the sender may send a packet of size s while
    /// `bytes_in_flight + s ≤` this.
    pub fn send_window_limit(&self) -> DataSize {
        send_window_limit(self.cwnd(), self.qdelay, self.qdelay_target(), self.cfg.mss)
    }

    /// pace_bitrate (§4.1.2.6). Before the first RTT sample there is no cwnd/s_rtt; the sender
    /// is then paced at `fallback` (the media target) with the same headroom.
    pub fn pace_bitrate(&self, fallback: Bitrate) -> Bitrate {
        match self.s_rtt.get() {
            Some(s_rtt) => pace_bitrate(self.cwnd(), s_rtt, self.cfg.pace_headroom, self.cfg.rate_pace_min),
            None => (fallback * self.cfg.pace_headroom).max(self.cfg.rate_pace_min),
        }
    }
}

/// When silence of the feedback writes off everything in flight (`scream` and `scream2`): no
/// acknowledgement of anything new for `max(timeout_min, 2 × s_rtt)` since `last_progress`
/// while bytes are in flight. `None` while nothing is in flight.
pub(crate) fn feedback_deadline(
    sent: &SentPacketList,
    last_progress: Instant,
    s_rtt: Option<Duration>,
    timeout_min: Duration,
) -> Option<Instant> {
    if sent.bytes_in_flight().is_zero() {
        return None;
    }
    let timeout = s_rtt.map_or(timeout_min, |s| (s * 2).max(timeout_min));
    Some(last_progress + timeout)
}

/// Runs `tick` for every grid point `next, next + interval, …` that is ≤ `now` (at most
/// `max_ticks` times; after a long silence more samples would only repeat the same value) and
/// returns the next grid point after `now`.
fn catch_up(
    now: Instant,
    mut next: Instant,
    interval: Duration,
    max_ticks: i64,
    mut tick: impl FnMut(),
) -> Instant {
    if now < next {
        return next;
    }
    let behind = (now - next).as_micros() / interval.as_micros().max(1) + 1;
    for _ in 0..behind.min(max_ticks) {
        tick();
    }
    next += interval * behind;
    next
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feedback::Ecn;

    fn ms(v: i64) -> Duration {
        Duration::from_millis(v)
    }
    fn at(v: i64) -> Instant {
        Instant::from_millis(v)
    }
    fn bytes(v: u64) -> DataSize {
        DataSize::bytes(v)
    }

    fn result(seq: i64, sent_ms: i64, arrival_ms: Option<i64>) -> PacketResult {
        PacketResult {
            seq,
            size: bytes(1000),
            sent_at: at(sent_ms),
            arrival: arrival_ms.map(at),
            ecn: Ecn::NotEct,
            is_audio: false,
            probe: None,
        }
    }

    // ---- base delay ----

    #[test]
    fn base_delay_is_the_minimum_over_the_history_and_rolls() {
        // Intervals of 10 s, 3 of them kept.
        let mut b = BaseDelayHistory::new(Duration::from_secs(10), 3);
        assert_eq!(b.base_delay(), None);
        b.update(at(0), ms(50)); // interval [0, 10 s): min 50
        b.update(at(5_000), ms(40)); // min 40
        b.update(at(12_000), ms(60)); // interval [10, 20 s): min 60
        b.update(at(25_000), ms(70)); // [20, 30 s): 70
        assert_eq!(b.base_delay(), Some(ms(40)), "min(40, 60, 70)");
        assert_eq!(b.qdelay(ms(100)), ms(60), "qdelay = 100 − 40");
        b.update(at(31_000), ms(80)); // [30, 40 s) pushes out the first interval
        assert_eq!(b.base_delay(), Some(ms(60)), "min(60, 70, 80)");
        b.update(at(45_000), ms(90)); // [40, 50 s) pushes out [10, 20 s)
        assert_eq!(b.base_delay(), Some(ms(70)));
        // A lower sample takes effect at once.
        b.update(at(46_000), ms(10));
        assert_eq!(b.base_delay(), Some(ms(10)));
        assert_eq!(b.qdelay(ms(5)), Duration::ZERO, "never negative");
    }

    #[test]
    fn base_delay_tolerates_a_clock_offset() {
        // Receiver clock 1 s behind the sender: one-way delays are negative, qdelay is not.
        let mut b = BaseDelayHistory::new(Duration::from_secs(60), 10);
        b.update(at(0), ms(-950));
        b.update(at(100), ms(-900));
        assert_eq!(b.qdelay(ms(-900)), ms(50));
    }

    // ---- qdelay trend ----

    #[test]
    fn autocorrelation_of_a_ramp() {
        // x(n) = n, N = 20: y = x − 10.5, R0 = N(N²−1)/12 = 665,
        // R1 = R0 − y_N² − y_N = 665 − 90.25 − 9.5 = 565.25, a = 0.85.
        let x: Vec<f64> = (1..=20).map(f64::from).collect();
        assert!((autocorrelation_ratio(&x) - 0.85).abs() < 1e-12);
        // Scale invariant, and 0 for a constant history.
        let y: Vec<f64> = x.iter().map(|v| v * 0.05).collect();
        assert!((autocorrelation_ratio(&y) - 0.85).abs() < 1e-12);
        assert_eq!(autocorrelation_ratio(&[0.3; 20]), 0.0);
    }

    #[test]
    fn qdelay_trend_rises_on_a_growing_qdelay_and_stays_zero_on_a_flat_one() {
        let cfg = ScreamConfig::default();
        let mut t = QdelayTrend::new(&cfg);
        // Flat qdelay of 50 ms against a 100 ms target: fraction 0.5, history constant after
        // 20 samples, a = 0, trend 0 — a standing queue below target is not a trend.
        for _ in 0..40 {
            t.update_variables(ms(50), ms(100));
            t.sample();
        }
        assert!(t.qdelay_trend() < 0.05, "{}", t.qdelay_trend());

        // Growing qdelay: fractions 0.05, 0.10, …, 1.00, one per 50 ms sample.
        let mut t = QdelayTrend::new(&cfg);
        let mut avg = 0.0;
        for i in 1..=20 {
            let f = 0.05 * f64::from(i);
            t.update_variables(ms(5 * i64::from(i)), ms(100));
            t.sample();
            avg = 0.9 * avg + 0.1 * f; // QDELAY_WEIGHT = 0.1
        }
        // avg = Σ 0.1·0.9^(20−i)·0.05·i = 0.6047 (to 4 digits); a = 0.85 (ramp, above).
        assert!((avg - 0.6047).abs() < 1e-4, "{avg}");
        assert!((t.qdelay_fraction_avg() - avg).abs() < 1e-12);
        let expected = 0.85 * avg;
        assert!((t.qdelay_trend() - expected).abs() < 1e-9, "{} vs {expected}", t.qdelay_trend());
        assert!(t.qdelay_trend() >= cfg.qdelay_trend_th, "exits fast increase");
        // Peak hold: after the queue empties the trend falls, the memory decays by 0.99/sample.
        let peak = t.qdelay_trend_mem();
        assert_eq!(peak, t.qdelay_trend());
        for _ in 0..20 {
            t.update_variables(Duration::ZERO, ms(100));
            t.sample();
        }
        assert!(t.qdelay_trend_mem() >= peak * 0.99f64.powi(20) - 1e-12);
    }

    // ---- s_rtt ----

    #[test]
    fn s_rtt_follows_rfc6298() {
        let mut s = SmoothedRtt::new(1.0 / 8.0);
        assert_eq!(s.get(), None);
        s.update(ms(100));
        assert_eq!(s.get(), Some(ms(100)), "first sample");
        s.update(ms(180));
        assert_eq!(s.get(), Some(ms(110)), "7/8·100 + 1/8·180");
    }

    // ---- max bytes in flight ----

    #[test]
    fn windowed_max_expires_old_peaks() {
        let mut w = WindowedMax::new(Duration::from_secs(5));
        w.update(at(0), bytes(9000));
        w.update(at(1000), bytes(4000));
        w.update(at(2000), bytes(6000));
        assert_eq!(w.max(at(4000)), bytes(9000));
        assert_eq!(w.max(at(5500)), bytes(6000), "the 9000 at t=0 left the 5 s window");
        assert_eq!(w.max(at(7500)), DataSize::ZERO);
    }

    // ---- sent packets, loss detection ----

    #[test]
    fn bytes_in_flight_and_newly_acked_follow_the_highest_acked_sequence() {
        let mut l = SentPacketList::new(ms(10));
        for seq in 0..6 {
            l.on_sent(seq, bytes(1000), at(seq * 10));
        }
        assert_eq!(l.bytes_in_flight(), bytes(6000));
        // §4.1.2's example: highest acked jumps to 3 although 2 is missing → 4000 newly acked,
        // 2000 in flight (packets 4 and 5).
        let a = l.on_feedback(
            at(100),
            &[result(0, 0, Some(50)), result(1, 10, Some(60)), result(3, 30, Some(80))],
            None,
        );
        assert_eq!(a.bytes_newly_acked, bytes(4000));
        assert_eq!(a.bytes_received, bytes(3000));
        assert_eq!(a.newest, Some(NewestAck { seq: 3, sent_at: at(30), arrival: at(80) }));
        assert_eq!(l.bytes_in_flight(), bytes(2000));
        // Repeated reports are not counted again.
        let a = l.on_feedback(at(120), &[result(3, 30, Some(80))], None);
        assert_eq!(a, AckSummary::default());
    }

    #[test]
    fn loss_is_declared_one_reordering_window_after_the_gap_and_reordering_widens_it() {
        let mut l = SentPacketList::new(ms(10));
        for seq in 0..10 {
            l.on_sent(seq, bytes(1000), at(seq));
        }
        // Feedback at 100 ms shows 2 missing: flagged at 100, lost from 110.
        l.on_feedback(
            at(100),
            &[result(0, 0, Some(40)), result(1, 1, Some(41)), result(3, 3, Some(43))],
            None,
        );
        assert_eq!(l.next_loss_deadline(), Some(at(110)));
        assert_eq!(l.detect_losses(at(105)), 0);
        assert_eq!(l.detect_losses(at(110)), 1);
        assert_eq!(l.detect_losses(at(120)), 0, "declared once");

        // Packet 5 is flagged at 130 and arrives (reordered) in the feedback at 160: 30 ms of
        // reordering observed; the window becomes 30 ms (s_rtt 60 ms caps at 60).
        l.on_feedback(at(130), &[result(4, 4, Some(44)), result(6, 6, Some(46))], Some(ms(60)));
        assert_eq!(l.next_loss_deadline(), Some(at(140)));
        l.on_feedback(at(160), &[result(5, 5, Some(150))], Some(ms(60)));
        assert_eq!(l.reorder_window(), ms(30));
        assert_eq!(l.detect_losses(at(200)), 0);
        // A reordering longer than s_rtt widens the window only to s_rtt.
        l.on_feedback(at(200), &[result(8, 8, Some(48))], Some(ms(60))); // 7 flagged at 200
        l.on_feedback(at(300), &[result(7, 7, Some(290))], Some(ms(60)));
        assert_eq!(l.reorder_window(), ms(60));
    }

    #[test]
    fn feedback_timeout_writes_off_everything_in_flight() {
        let mut l = SentPacketList::new(ms(10));
        for seq in 0..4 {
            l.on_sent(seq, bytes(1000), at(seq));
        }
        assert_eq!(l.declare_all_lost(at(600)), 4);
        assert_eq!(l.bytes_in_flight(), DataSize::ZERO);
        l.on_sent(4, bytes(1000), at(601));
        assert_eq!(l.bytes_in_flight(), bytes(1000));
        // A late report of an old packet does not count as newly acknowledged.
        let a = l.on_feedback(at(650), &[result(2, 2, Some(300))], None);
        assert_eq!(a.bytes_newly_acked, DataSize::ZERO);
        assert_eq!(l.bytes_in_flight(), bytes(1000));
    }

    // ---- congestion window ----

    fn ack(bna: u64, bif: u64, max_bif: u64, qdelay_ms: i64, trend: f64) -> AckInput {
        AckInput {
            bytes_newly_acked: bytes(bna),
            bytes_in_flight: bytes(bif),
            max_bytes_in_flight: bytes(max_bif),
            qdelay: ms(qdelay_ms),
            qdelay_target: ms(100),
            qdelay_trend: trend,
        }
    }

    fn window(cwnd: f64, in_fast_increase: bool) -> CongestionWindow {
        let mut w = CongestionWindow::new(&ScreamConfig::default());
        w.cwnd_bytes = cwnd;
        w.in_fast_increase = in_fast_increase;
        w
    }

    #[test]
    fn cwnd_below_target_grows_by_gain_off_target_acked_mss_over_cwnd() {
        // qdelay 50 ms, target 100 ms: off_target = 0.5.
        // delta = GAIN·off_target·bytes_newly_acked·MSS/cwnd = 1·0.5·2000·1000/10000 = 100.
        let mut w = window(10_000.0, false);
        assert_eq!(w.update_cwnd(&ack(2000, 9000, 20_000, 50, 0.0)), CwndUpdate::DelayBased);
        assert_eq!(w.cwnd(), bytes(10_100));
        // qdelay 0: off_target 1, delta = 2000·1000/10100 = 198.02 → 10298.02.
        w.update_cwnd(&ack(2000, 9000, 20_000, 0, 0.0));
        assert_eq!(w.cwnd(), bytes(10_298));
    }

    #[test]
    fn cwnd_above_target_shrinks() {
        // qdelay 150 ms: off_target = −0.5, delta = −0.5·2000·1000/10000 = −100.
        let mut w = window(10_000.0, false);
        w.update_cwnd(&ack(2000, 9000, 20_000, 150, 0.0));
        assert_eq!(w.cwnd(), bytes(9900));
        // Far above target: 400 ms → off_target = −3, delta = −3·2000·1000/9900 = −606.06.
        w.update_cwnd(&ack(2000, 9000, 20_000, 400, 0.0));
        assert_eq!(w.cwnd(), bytes(9294));
        // Never below MIN_CWND.
        let mut w = window(3100.0, false);
        w.update_cwnd(&ack(3000, 3000, 20_000, 1000, 0.0));
        assert_eq!(w.cwnd(), bytes(3000));
    }

    #[test]
    fn cwnd_does_not_grow_when_underused_and_is_capped_by_max_bytes_in_flight() {
        // bytes_in_flight·1.25 + bytes_newly_acked = 4000·1.25 + 2000 = 7000 ≤ 10000: no growth.
        let mut w = window(10_000.0, false);
        w.update_cwnd(&ack(2000, 4000, 20_000, 50, 0.0));
        assert_eq!(w.cwnd(), bytes(10_000));
        // max_bytes_in_flight 8000: cwnd ≤ 8000·1.1 = 8800.
        w.update_cwnd(&ack(2000, 9000, 8000, 50, 0.0));
        assert_eq!(w.cwnd(), bytes(8800));
    }

    #[test]
    fn fast_increase_adds_bytes_newly_acked_while_the_window_is_used() {
        // 6000·1.5 + 2000 = 11000 > 10000 → cwnd += 2000.
        let mut w = window(10_000.0, true);
        assert_eq!(w.update_cwnd(&ack(2000, 6000, 0, 0, 0.1)), CwndUpdate::FastIncrease);
        assert_eq!(w.cwnd(), bytes(12_000));
        // 5000·1.5 + 2000 = 9500 ≤ 12000 → unchanged (and no max_bytes_in_flight cap).
        w.update_cwnd(&ack(2000, 5000, 0, 0, 0.1));
        assert_eq!(w.cwnd(), bytes(12_000));
        // qdelay_trend 0.2 ≥ QDELAY_TREND_TH: leave fast increase and apply the delay rule in
        // the same call: qdelay 100 ms = target → off_target 0 → delta 0; the cap
        // max_bytes_in_flight·1.1 = 10000·1.1 = 11000 applies.
        assert_eq!(w.update_cwnd(&ack(2000, 9000, 10_000, 100, 0.2)), CwndUpdate::ExitedFastIncrease);
        assert!(!w.in_fast_increase());
        assert_eq!(w.cwnd(), bytes(11_000));
    }

    #[test]
    fn congestion_events_scale_cwnd_by_beta() {
        let mut w = window(10_000.0, true);
        w.on_congestion_event(CongestionEvent::Loss);
        assert_eq!(w.cwnd(), bytes(8000), "BETA_LOSS = 0.8");
        assert!(!w.in_fast_increase());
        w.on_congestion_event(CongestionEvent::Ecn);
        assert_eq!(w.cwnd(), bytes(7200), "BETA_ECN = 0.9");
        let mut w = window(3200.0, false);
        w.on_congestion_event(CongestionEvent::Loss);
        assert_eq!(w.cwnd(), bytes(3000), "not below MIN_CWND");
    }

    // ---- send window, pacing ----

    #[test]
    fn send_window_allows_one_mss_more_while_qdelay_is_below_target() {
        let (cwnd, mss, target) = (bytes(10_000), bytes(1000), ms(100));
        // qdelay ≤ target: cwnd + MSS − bytes_in_flight = 10000 + 1000 − 9500.
        assert_eq!(send_window(cwnd, bytes(9500), Some(ms(100)), target, mss), bytes(1500));
        // qdelay > target: cwnd − bytes_in_flight.
        assert_eq!(send_window(cwnd, bytes(9500), Some(ms(101)), target, mss), bytes(500));
        assert_eq!(send_window(cwnd, bytes(12_000), Some(ms(101)), target, mss), DataSize::ZERO);
        assert_eq!(send_window(cwnd, bytes(0), None, target, mss), bytes(11_000));
    }

    #[test]
    fn pacing_rate_is_cwnd_over_s_rtt_with_headroom_and_a_floor() {
        // cwnd 12500 B over s_rtt 100 ms = 1 Mbit/s; ×1.25 headroom = 1.25 Mbit/s.
        let r = pace_bitrate(bytes(12_500), ms(100), 1.25, Bitrate::kbps(50));
        assert_eq!(r, Bitrate::bps(1_250_000));
        assert_eq!(pace_bitrate(bytes(12_500), ms(100), 1.0, Bitrate::kbps(50)), Bitrate::mbps(1));
        // 3000 B over 1 s = 24 kbit/s < RATE_PACE_MIN.
        assert_eq!(
            pace_bitrate(bytes(3000), Duration::from_secs(1), 1.0, Bitrate::kbps(50)),
            Bitrate::kbps(50)
        );
        // t_pace = 1000 B · 8 / 1.25 Mbit/s = 6.4 ms.
        assert_eq!(t_pace(bytes(1000), r), Duration::from_micros(6400));
    }

    // ---- the whole network congestion control ----

    fn report(now_packets: Vec<PacketResult>) -> FeedbackReport {
        FeedbackReport { packets: now_packets, ..FeedbackReport::default() }
    }

    /// Sends packets 0..n of 1000 B at 1 ms spacing from `t0`.
    fn send(n: &mut NetworkCongestionControl, seqs: std::ops::Range<i64>, t0: i64) {
        for seq in seqs.clone() {
            let t = at(t0 + seq - seqs.start);
            n.on_packet_sent(t, seq, bytes(1000), t);
        }
    }

    #[test]
    fn loss_event_reduces_cwnd_once_per_s_rtt() {
        let cfg = ScreamConfig::default();
        let mut n = NetworkCongestionControl::new(&cfg, at(0));
        n.window = window(20_000.0, false);
        send(&mut n, 0..20, 0);
        // Packet 0 acknowledged at 100 ms: s_rtt = 100 ms; qdelay 0 → off_target 1,
        // cwnd += 1000·1000/20000 = 50 → 20050.
        n.on_feedback(at(100), &report(vec![result(0, 0, Some(50))]));
        assert_eq!(n.s_rtt(), Some(ms(100)));
        assert_eq!(n.cwnd(), bytes(20_050));
        // Packet 2 acknowledged, 1 missing: flagged at 101, lost at 101 + 10 ms. The ack itself
        // grows cwnd by 2000·1000/20050 = 99.75 → 20149.75.
        n.on_feedback(at(101), &report(vec![result(2, 2, Some(52))]));
        assert_eq!(n.sent.next_loss_deadline(), Some(at(111)));
        assert_eq!(n.cwnd(), bytes(20_150));
        let out = n.on_timeout(at(111));
        assert_eq!(out.congestion, Some(CongestionEvent::Loss));
        assert_eq!(n.state(), ScreamState::Loss);
        assert_eq!(n.cwnd(), bytes(16_120), "20149.75 · BETA_LOSS 0.8 = 16119.8");
        // Packet 3 lost 39 ms after the loss event, within s_rtt (≈ 104 ms by then): ignored.
        // The ack of 4 at 140 grows cwnd by 2000·1000/16119.8 = 124.07 → 16243.87.
        n.on_feedback(at(140), &report(vec![result(4, 4, Some(54))]));
        assert_eq!(n.cwnd(), bytes(16_244));
        let out = n.on_timeout(at(150));
        assert_eq!(out.congestion, None);
        assert_eq!(n.cwnd(), bytes(16_244), "no second reduction within one s_rtt");
        // Packet 5 lost at 250, 139 ms after the loss event > s_rtt (120.6 ms): reduced again.
        // The ack of 6 at 240: +2000·1000/16243.87 = 123.12 → 16366.99; ·0.8 = 13093.6.
        n.on_feedback(at(240), &report(vec![result(6, 6, Some(56))]));
        assert_eq!(n.cwnd(), bytes(16_367));
        let out = n.on_timeout(at(250));
        assert_eq!(out.congestion, Some(CongestionEvent::Loss));
        assert_eq!(n.cwnd(), bytes(13_094));
        assert!(n.loss_event_rate() > 0.0);
    }

    #[test]
    fn ecn_ce_reduces_cwnd_by_beta_ecn_once_per_s_rtt() {
        let cfg = ScreamConfig::default();
        let mut n = NetworkCongestionControl::new(&cfg, at(0));
        n.window = window(20_000.0, true);
        send(&mut n, 0..10, 0);
        n.on_feedback(at(100), &report(vec![result(0, 0, Some(50))]));
        let before = n.cwnd();
        let mut ce = result(1, 1, Some(51));
        ce.ecn = Ecn::Ce;
        let out = n.on_feedback(at(101), &report(vec![ce]));
        assert_eq!(out.congestion, Some(CongestionEvent::Ecn));
        assert_eq!(n.cwnd(), before * 0.9);
        assert_eq!(n.n_ecn(), 1);
        assert!(!n.in_fast_increase());
        assert_eq!(n.state(), ScreamState::Ecn);
        let mut ce = result(2, 2, Some(52));
        ce.ecn = Ecn::Ce;
        let out = n.on_feedback(at(150), &report(vec![ce]));
        assert_eq!(out.congestion, None, "within one s_rtt of the last ECN event");
        assert_eq!(n.n_ecn(), 2);
    }

    #[test]
    fn qdelay_is_one_way_delay_minus_base_and_drives_cwnd_down() {
        let cfg = ScreamConfig::default();
        let mut n = NetworkCongestionControl::new(&cfg, at(0));
        n.window = window(20_000.0, false);
        send(&mut n, 0..30, 0);
        // One-way delay 50 ms: base 50 ms, qdelay 0.
        n.on_feedback(at(100), &report(vec![result(0, 0, Some(50))]));
        assert_eq!(n.base_delay(), Some(ms(50)));
        assert_eq!(n.qdelay(), Some(Duration::ZERO));
        // One-way delay 250 ms: qdelay 200 ms > target 100 ms → off_target −1 → cwnd shrinks by
        // bytes_newly_acked·MSS/cwnd.
        let before = n.cwnd().as_bytes() as f64;
        n.on_feedback(at(300), &report(vec![result(1, 1, Some(251))]));
        assert_eq!(n.qdelay(), Some(ms(200)));
        let expected = before - 1000.0 * 1000.0 / before;
        assert!((n.cwnd().as_bytes() as f64 - expected).abs() <= 1.0);
        // Send window under qdelay > target is the strict one.
        assert_eq!(n.send_window_limit(), n.cwnd());
    }

    #[test]
    fn fast_increase_resumes_after_the_trend_stays_low_for_5_s() {
        let cfg = ScreamConfig::default();
        let mut n = NetworkCongestionControl::new(&cfg, at(0));
        n.window = window(20_000.0, false);
        let mut seq = 0;
        let mut t = 0;
        while t <= 6000 {
            n.on_packet_sent(at(t), seq, bytes(1000), at(t));
            n.on_timeout(at(t));
            n.on_feedback(at(t + 1), &report(vec![result(seq, t, Some(t + 1))]));
            if t < 5000 {
                assert!(!n.in_fast_increase(), "t = {t}");
            }
            seq += 1;
            t += 20;
        }
        // qdelay 0 throughout: trend 0 < QDELAY_TREND_LO from the first ack at 1 ms, so fast
        // increase resumes at the first ack at or after 5.001 s.
        assert!(n.in_fast_increase());
    }

    #[test]
    fn feedback_silence_declares_everything_lost() {
        let cfg = ScreamConfig::default();
        let mut n = NetworkCongestionControl::new(&cfg, at(0));
        n.window = window(20_000.0, false);
        send(&mut n, 0..10, 0);
        // No s_rtt yet: timeout FEEDBACK_TIMEOUT_MIN = 500 ms after the first send.
        let mut t = at(0);
        let mut event = None;
        while event.is_none() && t < at(1000) {
            t = n.poll_timeout();
            event = n.on_timeout(t).congestion;
        }
        assert_eq!(t, at(500));
        assert_eq!(event, Some(CongestionEvent::Loss));
        assert_eq!(n.bytes_in_flight(), DataSize::ZERO);
        assert_eq!(n.cwnd(), bytes(16_000));
    }
}
