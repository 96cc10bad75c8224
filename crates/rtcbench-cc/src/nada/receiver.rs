//! RFC 8698 §4.2 (details in §5.1): NADA's receiver-side algorithm, the aggregate congestion
//! signal x_curr, the receiving rate r_recv and the rate-adaptation mode rmode.
//!
//! The RFC's receiver computes these from the packets it receives and feeds back
//! {rmode, x_curr, r_recv} (§5.3). RFC 8698 also allows the receiver to report per-packet
//! information instead (RFC 8888 feedback) and the sender to run this computation (§5.3, and
//! the discussion of sender- vs receiver-based calculation in §6), which is what rtcbench does:
//! [`Receiver`] runs at the sender and is fed [`PacketResult`]s. Per packet:
//!
//! * one-way delay d_fwd = arrival − sent_at: the unknown offset between the two clocks cancels
//!   in d_fwd − d_base;
//! * a loss is a packet the feedback reports as not received (reordered packets count as lost,
//!   as in §5.1.2, because a result is never revisited once processed);
//! * a mark is a received packet carrying ECN-CE.
//!
//! Windows over "the last LOGWIN" are taken on the receiver's timeline: packet statistics
//! (loss, marks, delay build-up) over the packets *sent* in the LOGWIN before the newest
//! reported one, the receiving rate over the bytes that *arrived* in the LOGWIN before the
//! newest arrival. That is what the receiver would see, shifted by the one-way delay.

use std::collections::VecDeque;

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

use super::config::NadaConfig;
use crate::feedback::{Ecn, PacketResult};

/// rmode in RFC 8698 §4.1 Figure 2: the rate update mode the receiver recommends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateMode {
    /// rmode = 0: accelerated ramp-up, eqs. (3), (4).
    AcceleratedRampUp,
    /// rmode = 1: gradual update, eqs. (5)-(7).
    GradualUpdate,
}

impl RateMode {
    /// The name used in metrics: "accelerated" or "gradual".
    pub fn name(self) -> &'static str {
        match self {
            Self::AcceleratedRampUp => "accelerated",
            Self::GradualUpdate => "gradual",
        }
    }
}

/// d_tilde in RFC 8698 §4.2 eq. (1): non-linear warping of the queuing delay, applied while
/// packet losses are recent. Below QTH the delay is unchanged; above it the value decays
/// exponentially, so that a loss-based competitor's standing queue does not starve NADA.
/// (RFC 8698 has no QMAX: the exponential branch applies to every d_queue ≥ QTH.)
pub fn warp_delay(d_queue: Duration, qth: Duration, lambda: f64) -> Duration {
    if d_queue < qth {
        return d_queue;
    }
    // eq. (1): QTH * exp(-LAMBDA * (d_queue - QTH) / QTH)
    qth * (-lambda * ((d_queue - qth) / qth)).exp()
}

/// x_curr in RFC 8698 §4.2 eq. (2): the aggregate congestion signal, the (warped) queuing delay
/// plus the ECN-marking and loss penalties,
/// `d_tilde + DMARK * (p_mark / PMRREF)^2 + DLOSS * (p_loss / PLRREF)^2`,
/// capped at `x_curr_max` (500 ms, ns3-rmcat's XMAX; see [`super::config::X_CURR_MAX`]).
pub fn aggregate_signal(d_tilde: Duration, p_mark: f64, p_loss: f64, cfg: &NadaConfig) -> Duration {
    let mark_penalty = cfg.dmark.as_secs_f64() * (p_mark / cfg.pmrref).powi(2);
    let loss_penalty = cfg.dloss.as_secs_f64() * (p_loss / cfg.plrref).powi(2);
    let x = d_tilde.as_secs_f64() + mark_penalty + loss_penalty;
    Duration::from_secs_f64(x.min(cfg.x_curr_max.as_secs_f64()))
}

/// RFC 8698 §5.1.2 eq. (10): `p = ALPHA * p_inst + (1 - ALPHA) * p`, for the loss ratio p_loss
/// and the marking ratio p_mark alike.
pub fn smooth_ratio(prev: f64, p_inst: f64, alpha: f64) -> f64 {
    alpha * p_inst + (1.0 - alpha) * prev
}

/// The smoothing factor for an update `delta` after the previous one: ALPHA is specified per
/// DELTA (one update per target feedback interval), so with other intervals the factor is
/// `1 - (1 - ALPHA)^(delta / DELTA)`, which keeps the filter's time constant. Equal to ALPHA when
/// `delta == DELTA`.
pub fn alpha_for_interval(alpha: f64, delta: Duration, target_interval: Duration) -> f64 {
    if target_interval <= Duration::ZERO {
        return alpha;
    }
    1.0 - (1.0 - alpha).powf((delta / target_interval).max(0.0))
}

/// Sub-windows of [`BaseDelay`]: the minimum is kept per tenth of the window.
const BASE_DELAY_BUCKETS: i64 = 10;

/// d_base in RFC 8698 §4.2 and §5.1.1: the minimum one-way delay over a long window, kept as
/// the minima of ten consecutive sub-windows (as LEDBAT keeps its base-delay history) so that
/// memory stays bounded and the estimate is renewed as old sub-windows expire (route changes,
/// clock skew). A sample is remembered for at least `window` and less than `window` plus a
/// tenth of it.
#[derive(Clone, Debug)]
pub struct BaseDelay {
    window: Duration,
    bucket_len: Duration,
    /// (start of sub-window, minimum d_fwd in it), oldest first.
    buckets: VecDeque<(Instant, Duration)>,
}

impl BaseDelay {
    pub fn new(window: Duration) -> Self {
        let bucket_len = (window / BASE_DELAY_BUCKETS).max(Duration::from_micros(1));
        Self { window, bucket_len, buckets: VecDeque::new() }
    }

    /// A one-way delay sample of a packet sent at `t`.
    pub fn update(&mut self, t: Instant, d_fwd: Duration) {
        match self.buckets.back_mut() {
            Some((start, min)) if t < *start + self.bucket_len => *min = (*min).min(d_fwd),
            _ => self.buckets.push_back((t, d_fwd)),
        }
        let horizon = t - self.window;
        while self.buckets.front().is_some_and(|&(start, _)| start + self.bucket_len <= horizon) {
            self.buckets.pop_front();
        }
    }

    /// d_base, or `None` before the first sample.
    pub fn get(&self) -> Option<Duration> {
        self.buckets.iter().map(|&(_, min)| min).min()
    }
}

/// A minimum over the last `taps` values (RFC 8698 §5.1.1's 15-tap minimum filter).
#[derive(Clone, Debug)]
pub(crate) struct MinFilter {
    taps: usize,
    values: VecDeque<Duration>,
}

impl MinFilter {
    pub(crate) fn new(taps: usize) -> Self {
        Self { taps: taps.max(1), values: VecDeque::new() }
    }
    pub(crate) fn push(&mut self, v: Duration) {
        if self.values.len() == self.taps {
            self.values.pop_front();
        }
        self.values.push_back(v);
    }
    pub(crate) fn min(&self) -> Option<Duration> {
        self.values.iter().copied().min()
    }
}

/// Weights of the average loss interval, RFC 5348 §5.4 with n = 8.
const LOSS_INTERVAL_WEIGHTS: [f64; 8] = [1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2];

/// loss_int and the expiry of the last loss (loss_exp = MULTILOSS × loss_int), RFC 8698 §4.2,
/// with loss intervals as TFRC defines them (RFC 5348 §5.2: losses within one RTT of the start
/// of a loss event belong to that event; an interval counts the packets from the start of one
/// event to the start of the next) and averaged as in RFC 5348 §5.4.
///
/// The average uses the closed intervals only (RFC 5348's I_tot1). Counting the open interval
/// as well (I_tot0, which TFRC uses when it is larger) would make a loss never expire: the open
/// interval would have to exceed MULTILOSS times an average that grows with it. The packets
/// before the first loss form the first closed interval.
#[derive(Clone, Debug, Default)]
pub struct LossIntervals {
    first_seq: Option<i64>,
    highest_seq: Option<i64>,
    /// (sequence number, send time) of the first loss of the current loss event.
    event_start: Option<(i64, Instant)>,
    last_loss_seq: Option<i64>,
    /// Closed loss intervals in packets, most recent first.
    closed: VecDeque<u64>,
}

impl LossIntervals {
    /// One packet result, in sequence order; `rtt` groups losses into loss events.
    pub fn on_packet(&mut self, seq: i64, sent_at: Instant, lost: bool, rtt: Duration) {
        let first_seq = *self.first_seq.get_or_insert(seq);
        self.highest_seq = Some(self.highest_seq.map_or(seq, |h| h.max(seq)));
        if !lost {
            return;
        }
        self.last_loss_seq = Some(self.last_loss_seq.map_or(seq, |l| l.max(seq)));
        let new_event = self.event_start.is_none_or(|(_, t0)| sent_at > t0 + rtt);
        if new_event {
            let begin = self.event_start.map_or(first_seq, |(s, _)| s);
            self.closed.push_front((seq - begin).max(1) as u64);
            self.closed.truncate(LOSS_INTERVAL_WEIGHTS.len());
            self.event_start = Some((seq, sent_at));
        }
    }

    /// loss_int in RFC 8698 §4.1 Figure 2: the average loss interval in packets, `None` before
    /// the first loss.
    pub fn loss_int(&self) -> Option<f64> {
        if self.closed.is_empty() {
            return None;
        }
        let (sum, weights) = self
            .closed
            .iter()
            .zip(LOSS_INTERVAL_WEIGHTS)
            .fold((0.0, 0.0), |(s, w), (&i, wi)| (s + i as f64 * wi, w + wi));
        Some(sum / weights)
    }

    /// Packets reported since the last lost one, `None` before the first loss.
    pub fn since_last_loss(&self) -> Option<u64> {
        Some((self.highest_seq? - self.last_loss_seq?).max(0) as u64)
    }

    /// How much of d_tilde is the warped delay: 1 while the last loss is within
    /// loss_exp = MULTILOSS × loss_int packets, then falling linearly to 0 over one more
    /// loss_int (RFC 8698 §4.2 recommends interpolating over that transition), 0 without losses.
    pub fn warp_weight(&self, multiloss: f64) -> f64 {
        let (Some(loss_int), Some(since)) = (self.loss_int(), self.since_last_loss()) else {
            return 0.0;
        };
        let loss_exp = multiloss * loss_int;
        let since = since as f64;
        if since < loss_exp {
            1.0
        } else if since < loss_exp + loss_int {
            1.0 - (since - loss_exp) / loss_int
        } else {
            0.0
        }
    }
}

/// One packet of the LOGWIN statistics window.
#[derive(Clone, Copy, Debug)]
struct Sample {
    sent_at: Instant,
    /// d_fwd, `None` if the packet was lost.
    d_fwd: Option<Duration>,
    ce: bool,
}

/// What the §4.2 receiver would feed back ({rmode, x_curr, r_recv}, §5.3) plus the
/// intermediate values, for metrics.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Signal {
    /// rmode, RFC 8698 §4.2.
    pub rmode: RateMode,
    /// x_curr, RFC 8698 §4.2 eq. (2): aggregate congestion signal.
    pub x_curr: Duration,
    /// r_recv, RFC 8698 §5.1.3: receiving rate over LOGWIN.
    pub r_recv: Bitrate,
    /// d_base, RFC 8698 §5.1.1: baseline one-way delay (offset by the unknown clock offset).
    pub d_base: Option<Duration>,
    /// d_queue, RFC 8698 §5.1.1: queuing delay after the 15-tap minimum filter.
    pub d_queue: Option<Duration>,
    /// d_tilde, RFC 8698 §4.2 eq. (1): the queuing delay as it enters x_curr (warped while
    /// losses are recent).
    pub d_tilde: Option<Duration>,
    /// p_loss, RFC 8698 §5.1.2 eq. (10): smoothed loss ratio.
    pub p_loss: f64,
    /// p_mark, RFC 8698 §5.1.2: smoothed ECN-CE marking ratio.
    pub p_mark: f64,
}

/// The RFC 8698 §4.2 receiver-side algorithm, run at the sender on per-packet feedback.
///
/// Feed every [`PacketResult`] with [`Receiver::on_packet_result`], then call
/// [`Receiver::update`] once per rate update.
#[derive(Clone, Debug)]
pub struct Receiver {
    cfg: NadaConfig,
    base: BaseDelay,
    /// The last d_fwd samples, for the §5.1.1 minimum filter.
    recent_fwd: MinFilter,
    /// Packets sent within LOGWIN of the newest reported one.
    window: VecDeque<Sample>,
    /// (arrival, size) of packets that arrived within LOGWIN of the newest arrival.
    arrivals: VecDeque<(Instant, DataSize)>,
    first_arrival: Option<(Instant, DataSize)>,
    latest_arrival: Option<Instant>,
    latest_sent: Option<Instant>,
    losses: LossIntervals,
    last_seq: Option<i64>,
    /// p_loss, RFC 8698 §5.1.2 eq. (10).
    p_loss: f64,
    /// p_mark, RFC 8698 §5.1.2.
    p_mark: f64,
}

impl Receiver {
    pub fn new(cfg: &NadaConfig) -> Self {
        Self {
            cfg: cfg.clone(),
            base: BaseDelay::new(cfg.base_delay_window),
            recent_fwd: MinFilter::new(cfg.qdelay_filter_taps),
            window: VecDeque::new(),
            arrivals: VecDeque::new(),
            first_arrival: None,
            latest_arrival: None,
            latest_sent: None,
            losses: LossIntervals::default(),
            last_seq: None,
            p_loss: 0.0,
            p_mark: 0.0,
        }
    }

    /// Takes one packet result; `rtt` is the sender's current estimate (for grouping losses
    /// into loss events). Results must come in sequence order; one for a sequence number
    /// already processed is ignored (a packet first reported lost stays lost). Returns whether
    /// the result was new.
    pub fn on_packet_result(&mut self, p: &PacketResult, rtt: Duration) -> bool {
        if self.last_seq.is_some_and(|s| p.seq <= s) {
            return false;
        }
        self.last_seq = Some(p.seq);
        self.latest_sent = Some(self.latest_sent.map_or(p.sent_at, |t| t.max(p.sent_at)));
        let d_fwd = p.arrival.map(|a| a - p.sent_at);
        if let (Some(arrival), Some(d)) = (p.arrival, d_fwd) {
            self.base.update(p.sent_at, d);
            self.recent_fwd.push(d);
            self.arrivals.push_back((arrival, p.size));
            self.first_arrival.get_or_insert((arrival, p.size));
            self.latest_arrival = Some(self.latest_arrival.map_or(arrival, |t| t.max(arrival)));
        }
        self.losses.on_packet(p.seq, p.sent_at, p.arrival.is_none(), rtt);
        self.window.push_back(Sample {
            sent_at: p.sent_at,
            d_fwd,
            ce: p.arrival.is_some() && p.ecn == Ecn::Ce,
        });
        self.expire();
        true
    }

    fn expire(&mut self) {
        if let Some(t) = self.latest_sent {
            let horizon = t - self.cfg.logwin;
            while self.window.front().is_some_and(|s| s.sent_at <= horizon) {
                self.window.pop_front();
            }
        }
        if let Some(t) = self.latest_arrival {
            let horizon = t - self.cfg.logwin;
            while self.arrivals.front().is_some_and(|&(a, _)| a <= horizon) {
                self.arrivals.pop_front();
            }
        }
    }

    /// Computes the signal for a rate update `delta` after the previous one (RFC 8698 §4.2,
    /// "every DELTA"), advancing the loss and marking EWMAs.
    pub fn update(&mut self, delta: Duration) -> Signal {
        let cfg = &self.cfg;
        // §5.1.2: p_inst over the packets in LOGWIN, then eq. (10).
        let alpha = alpha_for_interval(cfg.alpha, delta, cfg.delta);
        let total = self.window.len();
        if total > 0 {
            let received = self.window.iter().filter(|s| s.d_fwd.is_some()).count();
            let marked = self.window.iter().filter(|s| s.ce).count();
            self.p_loss = smooth_ratio(self.p_loss, (total - received) as f64 / total as f64, alpha);
            if received > 0 {
                self.p_mark = smooth_ratio(self.p_mark, marked as f64 / received as f64, alpha);
            }
        }
        // §5.1.1: d_queue = d_fwd - d_base after the minimum filter.
        let d_base = self.base.get();
        let d_queue = match (self.recent_fwd.min(), d_base) {
            (Some(fwd), Some(base)) => Some((fwd - base).max(Duration::ZERO)),
            _ => None,
        };
        // eq. (1), blended towards d_queue as the last loss expires.
        let w = self.losses.warp_weight(cfg.multiloss);
        let d_tilde =
            d_queue.map(|q| if w > 0.0 { q * (1.0 - w) + warp_delay(q, cfg.qth, cfg.lambda) * w } else { q });
        // eq. (2)
        let x_curr = aggregate_signal(d_tilde.unwrap_or(Duration::ZERO), self.p_mark, self.p_loss, cfg);
        Signal {
            rmode: self.rate_mode(d_base),
            x_curr,
            r_recv: self.r_recv(),
            d_base,
            d_queue,
            d_tilde,
            p_loss: self.p_loss,
            p_mark: self.p_mark,
        }
    }

    /// rmode, RFC 8698 §4.2 (end): accelerated ramp-up only if no packet within LOGWIN was lost
    /// and every delay sample within LOGWIN had `d_fwd - d_base < QEPS`. Losses are counted in
    /// the window, not read from the never-quite-zero p_loss EWMA.
    fn rate_mode(&self, d_base: Option<Duration>) -> RateMode {
        let Some(base) = d_base else { return RateMode::GradualUpdate };
        let qeps = self.cfg.qeps;
        let quiet =
            !self.window.is_empty() && self.window.iter().all(|s| s.d_fwd.is_some_and(|d| d - base < qeps));
        if quiet {
            RateMode::AcceleratedRampUp
        } else {
            RateMode::GradualUpdate
        }
    }

    /// r_recv, RFC 8698 §5.1.3: bytes received in the last LOGWIN divided by LOGWIN. Until
    /// LOGWIN has passed since the first arrival, the bytes after the first packet over the
    /// time since it (so the start-up value is not diluted by time before the flow began).
    pub fn r_recv(&self) -> Bitrate {
        let (Some((first, first_size)), Some(latest)) = (self.first_arrival, self.latest_arrival) else {
            return Bitrate::ZERO;
        };
        let bytes: DataSize = self.arrivals.iter().map(|&(_, s)| s).sum();
        if latest - first >= self.cfg.logwin {
            bytes / self.cfg.logwin
        } else if latest > first {
            bytes.saturating_sub(first_size) / (latest - first)
        } else {
            Bitrate::ZERO
        }
    }

    /// p_loss, RFC 8698 §5.1.2 eq. (10).
    pub fn p_loss(&self) -> f64 {
        self.p_loss
    }

    /// p_mark, RFC 8698 §5.1.2.
    pub fn p_mark(&self) -> f64 {
        self.p_mark
    }

    /// The TFRC loss-interval state behind the warping decision.
    pub fn loss_intervals(&self) -> &LossIntervals {
        &self.losses
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: f64) -> Duration {
        Duration::from_millis_f64(v)
    }

    fn assert_close(actual: Duration, expected: Duration) {
        assert!((actual - expected).abs() <= Duration::from_micros(1), "{actual} vs {expected}");
    }

    /// A result for packet `seq` sent at `seq` ms, 1000 bytes, arriving `d_fwd` later.
    fn pkt(seq: i64, d_fwd: Option<f64>, ecn: Ecn) -> PacketResult {
        let sent_at = Instant::from_millis(seq);
        PacketResult {
            seq,
            size: DataSize::bytes(1000),
            sent_at,
            arrival: d_fwd.map(|d| sent_at + ms(d)),
            ecn,
            is_audio: false,
            probe: None,
        }
    }

    #[test]
    fn d_tilde_below_qth_is_d_queue() {
        // eq. (1), first branch: d_queue < QTH = 50 ms.
        assert_eq!(warp_delay(ms(30.0), ms(50.0), 0.5), ms(30.0));
        assert_eq!(warp_delay(ms(49.9), ms(50.0), 0.5), ms(49.9));
    }

    #[test]
    fn d_tilde_above_qth_decays_exponentially() {
        // eq. (1), second branch: QTH * exp(-LAMBDA * (d_queue - QTH) / QTH).
        // At QTH: 50 * exp(0) = 50 ms (continuous).
        assert_eq!(warp_delay(ms(50.0), ms(50.0), 0.5), ms(50.0));
        // 100 ms: 50 * exp(-0.5 * 50/50) = 50 * 0.6065307 = 30.326533 ms.
        assert_close(warp_delay(ms(100.0), ms(50.0), 0.5), ms(30.326533));
        // 250 ms: 50 * exp(-0.5 * 200/50) = 50 * exp(-2) = 6.766764 ms.
        assert_close(warp_delay(ms(250.0), ms(50.0), 0.5), ms(6.766764));
        // No QMAX in RFC 8698: 1 s still warps, 50 * exp(-9.5) = 0.003741 ms, never 0.
        let far = warp_delay(ms(1000.0), ms(50.0), 0.5);
        assert_close(far, ms(0.003741));
        assert!(far > Duration::ZERO);
    }

    #[test]
    fn x_curr_adds_loss_and_marking_penalties() {
        let cfg = NadaConfig::default();
        // eq. (2): 20 + DMARK 2 * (0.02/0.01)^2 + DLOSS 10 * (0.005/0.01)^2 = 20 + 8 + 2.5 ms.
        assert_close(aggregate_signal(ms(20.0), 0.02, 0.005, &cfg), ms(30.5));
        // At PLRREF the loss penalty is exactly DLOSS; at PMRREF the mark penalty is DMARK.
        assert_close(aggregate_signal(Duration::ZERO, 0.0, 0.01, &cfg), ms(10.0));
        assert_close(aggregate_signal(Duration::ZERO, 0.01, 0.0, &cfg), ms(2.0));
        // 50 % loss: 10 * 50^2 = 25 s, capped at x_curr_max (500 ms).
        assert_eq!(aggregate_signal(ms(20.0), 0.0, 0.5, &cfg), cfg.x_curr_max);
    }

    #[test]
    fn loss_ratio_ewma_and_interval_scaling() {
        // eq. (10): 0.1 * 0.05 + 0.9 * 0.02 = 0.023.
        assert!((smooth_ratio(0.02, 0.05, 0.1) - 0.023).abs() < 1e-12);
        // One update per DELTA uses ALPHA; two DELTAs: 1 - 0.9^2 = 0.19; half: 1 - 0.9^0.5.
        let d = Duration::from_millis(100);
        assert!((alpha_for_interval(0.1, d, d) - 0.1).abs() < 1e-12);
        assert!((alpha_for_interval(0.1, d * 2, d) - 0.19).abs() < 1e-12);
        assert!((alpha_for_interval(0.1, d / 2, d) - (1.0 - 0.9f64.sqrt())).abs() < 1e-12);
    }

    #[test]
    fn x_curr_from_packets_with_loss_and_ecn() {
        let cfg = NadaConfig::default();
        let mut rx = Receiver::new(&cfg);
        // 100 packets 1 ms apart (all within LOGWIN), constant 30 ms one-way delay: d_queue 0.
        // Packet 50 lost; packets 10 and 20 CE-marked.
        for seq in 0..100 {
            let ecn = if seq == 10 || seq == 20 { Ecn::Ce } else { Ecn::Ect0 };
            let d = if seq == 50 { None } else { Some(30.0) };
            assert!(rx.on_packet_result(&pkt(seq, d, ecn), ms(40.0)));
        }
        let s = rx.update(cfg.delta);
        // p_inst = 1/100 -> p_loss = 0.1 * 0.01 = 0.001; p_mark: 2/99 received -> 0.1 * 2/99.
        assert!((s.p_loss - 0.001).abs() < 1e-12);
        let p_mark = 0.1 * 2.0 / 99.0;
        assert!((s.p_mark - p_mark).abs() < 1e-12);
        assert_eq!(s.d_base, Some(ms(30.0)));
        assert_eq!(s.d_queue, Some(Duration::ZERO));
        // x_curr = 0 + 2 ms * (p_mark/0.01)^2 + 10 ms * (0.001/0.01)^2
        //        = 2 * 0.20202^2 + 10 * 0.01 = 0.081624 + 0.1 = 0.181624 ms.
        let expected = 2.0 * (p_mark / 0.01).powi(2) + 10.0 * 0.1f64.powi(2);
        assert_close(s.x_curr, ms(expected));
        assert_eq!(s.rmode, RateMode::GradualUpdate, "a loss within LOGWIN forbids ramp-up");
        // A result already processed is ignored (packet 50 stays lost).
        assert!(!rx.on_packet_result(&pkt(50, Some(30.0), Ecn::Ect0), ms(40.0)));
    }

    #[test]
    fn queuing_delay_is_min_filtered_over_15_packets() {
        let cfg = NadaConfig::default();
        let mut rx = Receiver::new(&cfg);
        // Base 20 ms, then 14 packets at 20 + 40 ms and one spike: the 15-tap minimum is the
        // base sample while it is among the last 15.
        rx.on_packet_result(&pkt(0, Some(20.0), Ecn::NotEct), Duration::ZERO);
        for seq in 1..15 {
            rx.on_packet_result(&pkt(seq, Some(60.0), Ecn::NotEct), Duration::ZERO);
        }
        assert_eq!(rx.update(cfg.delta).d_queue, Some(Duration::ZERO));
        // One more sample pushes the base sample out: min of the last 15 is 40 ms above base.
        rx.on_packet_result(&pkt(15, Some(200.0), Ecn::NotEct), Duration::ZERO);
        let s = rx.update(cfg.delta);
        assert_eq!(s.d_queue, Some(ms(40.0)));
        // No loss: d_tilde = d_queue; x_curr = d_queue.
        assert_eq!(s.d_tilde, Some(ms(40.0)));
        assert_eq!(s.x_curr, ms(40.0));
    }

    #[test]
    fn baseline_is_the_minimum_over_its_window() {
        // Window 10 s in 1 s sub-windows. A 20 ms sample at t = 0, 30 ms samples every 100 ms
        // after it: the 20 ms minimum holds while its sub-window [0, 1 s) overlaps the last 10 s,
        // i.e. until the first sample at t >= 11 s.
        let mut base = BaseDelay::new(Duration::from_secs(10));
        assert_eq!(base.get(), None);
        base.update(Instant::ZERO, ms(20.0));
        for i in 1..=109 {
            base.update(Instant::from_millis(100 * i), ms(30.0));
        }
        assert_eq!(base.get(), Some(ms(20.0)), "at t = 10.9 s");
        base.update(Instant::from_millis(11_000), ms(30.0));
        assert_eq!(base.get(), Some(ms(30.0)), "at t = 11 s");
        // A lower sample takes effect at once.
        base.update(Instant::from_millis(11_100), ms(25.0));
        assert_eq!(base.get(), Some(ms(25.0)));
    }

    #[test]
    fn accelerated_mode_needs_a_quiet_logwin() {
        let cfg = NadaConfig::default();
        let mut rx = Receiver::new(&cfg);
        // Packets every 10 ms with d_fwd = base + 5 ms (< QEPS 10 ms), no loss.
        rx.on_packet_result(&pkt(0, Some(20.0), Ecn::NotEct), Duration::ZERO);
        let feed = |rx: &mut Receiver, seqs: std::ops::Range<i64>, d: Option<f64>| {
            for s in seqs {
                rx.on_packet_result(&pkt(s * 10, d, Ecn::NotEct), Duration::ZERO);
            }
        };
        feed(&mut rx, 1..60, Some(25.0));
        assert_eq!(rx.update(cfg.delta).rmode, RateMode::AcceleratedRampUp);
        // One sample 12 ms above base (>= QEPS) switches to gradual update...
        feed(&mut rx, 60..61, Some(32.0));
        feed(&mut rx, 61..70, Some(25.0));
        assert_eq!(rx.update(cfg.delta).rmode, RateMode::GradualUpdate);
        // ...until it leaves LOGWIN: sent at 600 ms, window (t - 500 ms, t] with t = 1100 ms.
        feed(&mut rx, 70..110, Some(25.0));
        assert_eq!(rx.update(cfg.delta).rmode, RateMode::GradualUpdate, "t = 1090 ms");
        feed(&mut rx, 110..111, Some(25.0));
        assert_eq!(rx.update(cfg.delta).rmode, RateMode::AcceleratedRampUp, "t = 1100 ms");
        // A loss does the same, and once it has left LOGWIN ramp-up resumes although the
        // smoothed p_loss is still above zero.
        feed(&mut rx, 111..112, None);
        feed(&mut rx, 112..150, Some(25.0));
        assert_eq!(rx.update(cfg.delta).rmode, RateMode::GradualUpdate);
        feed(&mut rx, 150..170, Some(25.0));
        let s = rx.update(cfg.delta);
        assert_eq!(s.rmode, RateMode::AcceleratedRampUp);
        assert!(s.p_loss > 0.0);
    }

    #[test]
    fn loss_intervals_follow_tfrc() {
        let rtt = ms(100.0);
        let mut li = LossIntervals::default();
        let feed = |li: &mut LossIntervals, seq: i64, lost: bool| {
            li.on_packet(seq, Instant::from_millis(seq * 10), lost, rtt);
        };
        for seq in 0..100 {
            feed(&mut li, seq, false);
        }
        assert_eq!(li.loss_int(), None);
        assert_eq!(li.warp_weight(7.0), 0.0);
        // First loss at seq 100: the 100 packets before it are the first interval.
        feed(&mut li, 100, true);
        // Seq 105 is lost 50 ms later, within one RTT: same loss event.
        feed(&mut li, 105, true);
        assert_eq!(li.loss_int(), Some(100.0));
        // Seq 150, 500 ms after the event start: a new event, interval 150 - 100 = 50.
        feed(&mut li, 150, true);
        // loss_int = (1 * 50 + 1 * 100) / 2 = 75; loss_exp = 7 * 75 = 525 packets.
        assert_eq!(li.loss_int(), Some(75.0));
        for seq in 151..=675 {
            feed(&mut li, seq, false);
        }
        assert_eq!(li.since_last_loss(), Some(525));
        // 525 packets since the loss: the transition starts, weight 1 - 0/75 = 1.
        assert_eq!(li.warp_weight(7.0), 1.0);
        for seq in 676..=712 {
            feed(&mut li, seq, false);
        }
        // 562 since: 1 - 37/75.
        assert!((li.warp_weight(7.0) - (1.0 - 37.0 / 75.0)).abs() < 1e-12);
        for seq in 713..=750 {
            feed(&mut li, seq, false);
        }
        // 600 = loss_exp + loss_int: expired.
        assert_eq!(li.warp_weight(7.0), 0.0);
    }

    #[test]
    fn warping_applies_while_losses_are_recent() {
        let cfg = NadaConfig::default();
        let mut rx = Receiver::new(&cfg);
        // Base 20 ms from packet 0, then a 100 ms queue; packet 100 lost.
        rx.on_packet_result(&pkt(0, Some(20.0), Ecn::NotEct), Duration::ZERO);
        for seq in 1..=120 {
            let d = if seq == 100 { None } else { Some(120.0) };
            rx.on_packet_result(&pkt(seq, d, Ecn::NotEct), ms(50.0));
        }
        let s = rx.update(cfg.delta);
        assert_eq!(s.d_queue, Some(ms(100.0)));
        // Loss 20 packets ago, loss_exp = 7 * 100: fully warped, 50 * exp(-0.5) ms.
        assert_close(s.d_tilde.unwrap(), ms(30.326533));
        // x_curr = d_tilde + DLOSS * (p_loss / PLRREF)^2 with p_loss = 0.1 * (1 / 120):
        // packets 1..=120 are in LOGWIN (sent within (120 - 500, 120] ms), packet 0 too: 121.
        let p_loss = 0.1 / 121.0;
        assert!((s.p_loss - p_loss).abs() < 1e-12);
        assert_close(s.x_curr, ms(30.326533 + 10.0 * (p_loss / 0.01).powi(2)));
    }

    #[test]
    fn receiving_rate_over_logwin() {
        let cfg = NadaConfig::default();
        let mut rx = Receiver::new(&cfg);
        // 1000-byte packets arriving every 8 ms = 1 Mbit/s.
        for seq in 0..200 {
            let sent_at = Instant::from_millis(seq * 8);
            let p =
                PacketResult { seq, sent_at, arrival: Some(sent_at + ms(20.0)), ..pkt(0, None, Ecn::NotEct) };
            rx.on_packet_result(&p, Duration::ZERO);
            if seq == 10 {
                // Start-up: 10 packets after the first over 80 ms = 1 Mbit/s.
                assert_eq!(rx.r_recv(), Bitrate::mbps(1));
            }
        }
        // Newest arrival 199 * 8 + 20 = 1612 ms; arrivals in (1112, 1612] ms are packets
        // 137..=199: 63 kB in 0.5 s = 1.008 Mbit/s.
        assert_eq!(rx.r_recv(), Bitrate::bps(1_008_000));
    }
}
