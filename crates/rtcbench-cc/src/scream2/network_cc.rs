//! Network congestion control of SCReAM v2 (draft-ietf-ccwg-rfc8298bis-screamv2-01 §4.2): the
//! reference window ref_wnd and the congestion signals that drive it.
//!
//! Blocks, each a small state machine fed by `now` and scripted inputs:
//!
//! * the list of transmitted data units, bytes_in_flight, bytes_newly_acked and the RACK-like
//!   loss detection (§4.1.1, §4.1.2, §4.2.1.1): `scream`'s [`SentPacketList`], shared, since the
//!   draft's text for them is RFC 8298's; so are the LEDBAT base delay ([`BaseDelayHistory`]),
//!   s_rtt ([`SmoothedRtt`]), the loss-event rate ([`LossEventRate`]) and the competing-flows
//!   compensation ([`QdelayTargetAdaptation`], §4.5.4);
//! * [`L4sAlpha`]: l4s_alpha, the fast-attack / slow-decay EWMA of the marked fraction
//!   (§4.2.1.3);
//! * [`QueueDelayAverage`]: qdelay_avg and the optional max-min queue-delay scaling
//!   ref_wnd_delay_scale (§4.2.1.4, REDUCE_JITTER);
//! * [`RefWindow`]: the reference window reduction (§4.2.2.1) and increase (§4.2.2.2);
//! * [`NetworkCongestionControl`]: the above wired in the order chosen in
//!   `docs/controllers/scream2.md` ("Execution order").

use rtcbench_units::{DataSize, Duration, Instant};

use super::config::{self, Mode, Scream2Config};
use crate::feedback::FeedbackReport;
use crate::scream::competing_flows::QdelayTargetAdaptation;
use crate::scream::config::{LOSS_EVENT_RATE_GAIN, QDELAY_NORM_SAMPLE_INTERVAL};
use crate::scream::network_cc::{
    feedback_deadline, BaseDelayHistory, LossEventRate, SentPacketList, SmoothedRtt,
};

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

// ---------------------------------------------------------------------------------------------
// l4s_alpha (§4.2.1.3)
// ---------------------------------------------------------------------------------------------

/// l4s_alpha, the average fraction of marked data units (draft-ietf-ccwg-rfc8298bis-screamv2-01
/// §4.2.1.3), with its per-interval counters.
#[derive(Clone, Debug)]
pub struct L4sAlpha {
    g_up: f64,
    g_down: f64,
    /// l4s_alpha (0.0).
    l4s_alpha: f64,
    /// last_update_l4s_alpha_time.
    last_update: Instant,
    /// data_units_delivered_this_rtt.
    delivered: u64,
    /// data_units_marked_this_rtt.
    marked: u64,
    /// last_fraction_marked.
    last_fraction_marked: f64,
}

impl L4sAlpha {
    pub fn new(cfg: &Scream2Config, now: Instant) -> Self {
        Self {
            g_up: cfg.l4s_avg_g_up,
            g_down: cfg.l4s_avg_g_down,
            l4s_alpha: 0.0,
            last_update: now,
            delivered: 0,
            marked: 0,
            last_fraction_marked: 0.0,
        }
    }

    /// One feedback: `acked` data units newly acknowledged, `acked_ce` of them CE-marked.
    /// l4s_alpha is updated once min(10 ms, s_rtt) has passed since the last update (§4.2.1.3).
    /// An interval with nothing delivered leaves it unchanged (the draft's fraction would be 0/0).
    pub fn on_ack(&mut self, now: Instant, acked: u64, acked_ce: u64, s_rtt: Option<Duration>) {
        self.delivered += acked;
        self.marked += acked_ce;
        let interval =
            s_rtt.map_or(config::L4S_ALPHA_UPDATE_INTERVAL, |s| s.min(config::L4S_ALPHA_UPDATE_INTERVAL));
        if now - self.last_update < interval || self.delivered == 0 {
            return;
        }
        let fraction_marked_t = self.marked as f64 / self.delivered as f64;
        // Fast attack, slow decay.
        self.l4s_alpha = if fraction_marked_t >= self.l4s_alpha {
            self.g_up * fraction_marked_t + (1.0 - self.g_up) * self.l4s_alpha
        } else {
            (1.0 - self.g_down) * self.l4s_alpha
        };
        self.last_update = now;
        self.delivered = 0;
        self.marked = 0;
        self.last_fraction_marked = fraction_marked_t;
    }

    pub fn get(&self) -> f64 {
        self.l4s_alpha
    }
    pub fn last_fraction_marked(&self) -> f64 {
        self.last_fraction_marked
    }
}

// ---------------------------------------------------------------------------------------------
// qdelay_avg and ref_wnd_delay_scale (§4.2.1.4)
// ---------------------------------------------------------------------------------------------

/// qdelay_avg, the slow-attack / fast-decay average of qdelay, and with REDUCE_JITTER the
/// max-min tracking that gives ref_wnd_delay_scale (draft-ietf-ccwg-rfc8298bis-screamv2-01
/// §4.2.1.4; the -01 "reference window scaling which acts on difference between max and min
/// queue delay"). Times are kept in seconds, as the draft writes them.
#[derive(Clone, Debug)]
pub struct QueueDelayAverage {
    g: f64,
    reduce_jitter: bool,
    min_max_g: f64,
    dev_g: f64,
    dev_threshold: f64,
    /// qdelay_avg (0.0).
    qdelay_avg: f64,
    /// last_update_qdelay_avg_time (0.0).
    last_update: Instant,
    /// qdelay_max_avg (qdelay_target).
    qdelay_max_avg: f64,
    /// qdelay_min_avg (0.0).
    qdelay_min_avg: f64,
    /// qdelay_dev_avg (0.0).
    qdelay_dev_avg: f64,
    /// ref_wnd_delay_scale (1.0).
    ref_wnd_delay_scale: f64,
}

impl QueueDelayAverage {
    pub fn new(cfg: &Scream2Config, now: Instant) -> Self {
        Self {
            g: cfg.qdelay_avg_g,
            reduce_jitter: cfg.reduce_jitter,
            min_max_g: cfg.qdelay_min_max_avg_g,
            dev_g: cfg.qdelay_dev_avg_g,
            dev_threshold: secs(cfg.qdelay_dev_threshold),
            qdelay_avg: 0.0,
            last_update: now,
            qdelay_max_avg: secs(cfg.qdelay_target_lo),
            qdelay_min_avg: 0.0,
            qdelay_dev_avg: 0.0,
            ref_wnd_delay_scale: 1.0,
        }
    }

    /// "Update min and max average queue delay for every ACKed RTP packet" (§4.2.1.4).
    pub fn on_acked_packet(&mut self, qdelay: Duration, qdelay_target: Duration) {
        if self.reduce_jitter {
            let q = secs(qdelay);
            self.qdelay_max_avg = secs(qdelay_target).min(q.max(self.qdelay_max_avg));
            self.qdelay_min_avg = q.min(self.qdelay_min_avg);
        }
    }

    /// The qdelay_avg update, run once min(VIRTUAL_RTT, s_rtt) has passed since the last
    /// (§4.2.1.4). A sample below the average replaces it; otherwise EWMA with QDELAY_AVG_G.
    pub fn update(&mut self, now: Instant, qdelay: Duration, s_rtt: Option<Duration>, virtual_rtt: Duration) {
        let interval = s_rtt.map_or(virtual_rtt, |s| s.min(virtual_rtt));
        if now - self.last_update < interval {
            return;
        }
        let q = secs(qdelay);
        self.qdelay_avg = if q < self.qdelay_avg { q } else { self.g * q + (1.0 - self.g) * self.qdelay_avg };
        if self.reduce_jitter {
            self.calculate_ref_wnd_delay_scale();
        }
        self.last_update = now;
    }

    /// `calculate_ref_wnd_delay_scale()` (§4.2.1.4).
    fn calculate_ref_wnd_delay_scale(&mut self) {
        // The max decays towards zero; the min follows the max.
        self.qdelay_max_avg *= 1.0 - self.min_max_g;
        self.qdelay_min_avg =
            self.qdelay_min_avg * (1.0 - self.min_max_g) + self.qdelay_max_avg * self.min_max_g;
        self.qdelay_dev_avg = (1.0 - self.dev_g) * self.qdelay_dev_avg
            + self.dev_g * (self.qdelay_max_avg - self.qdelay_min_avg);
        self.ref_wnd_delay_scale = (1.0 - self.qdelay_dev_avg / self.dev_threshold).clamp(0.0, 1.0);
    }

    pub fn qdelay_avg(&self) -> Duration {
        Duration::from_secs_f64(self.qdelay_avg)
    }
    pub fn qdelay_dev_avg(&self) -> Duration {
        Duration::from_secs_f64(self.qdelay_dev_avg)
    }
    pub fn ref_wnd_delay_scale(&self) -> f64 {
        self.ref_wnd_delay_scale
    }
}

// ---------------------------------------------------------------------------------------------
// Reference window (§4.2.2)
// ---------------------------------------------------------------------------------------------

/// What the reduction of §4.2.2.1 reads, besides the window's own state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReductionInput {
    pub l4s_alpha: f64,
    /// The last qdelay sample.
    pub qdelay: Duration,
    pub qdelay_avg: Duration,
    pub qdelay_target: Duration,
    /// `None` before the first RTT sample (then the hold-offs use VIRTUAL_RTT).
    pub s_rtt: Option<Duration>,
    pub ref_wnd_delay_scale: f64,
    pub max_bytes_in_flight_prev: DataSize,
}

/// What the increase of §4.2.2.2 reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IncreaseInput {
    pub bytes_newly_acked: DataSize,
    pub bytes_newly_acked_ce: DataSize,
    pub s_rtt: Option<Duration>,
    pub ref_wnd_delay_scale: f64,
    pub max_bytes_in_flight: DataSize,
    pub max_bytes_in_flight_prev: DataSize,
    /// target_bitrate < TARGET_BITRATE_MAX: the media rate may still grow.
    pub below_max_rate: bool,
}

/// Which reductions one update applied (is_loss_t, is_ce_t, is_virtual_ce_t of §4.2.2.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reaction {
    pub loss: bool,
    pub ce: bool,
    pub virtual_ce: bool,
}

impl Reaction {
    pub fn any(self) -> bool {
        self.loss || self.ce || self.virtual_ce
    }
}

/// ref_wnd and the state of its update (draft-ietf-ccwg-rfc8298bis-screamv2-01 §4.2.2). Bytes
/// are kept fractional: increments are often below a byte.
#[derive(Clone, Debug)]
pub struct RefWindow {
    cfg: Scream2Config,
    /// ref_wnd (MIN_REF_WND).
    ref_wnd: f64,
    /// ref_wnd_i (1), the inflection point: ref_wnd at the last congestion after growth.
    ref_wnd_i: f64,
    /// ref_wnd_i_update_allowed (true).
    ref_wnd_i_update_allowed: bool,
    /// last_congestion_detected_time (0.0).
    last_congestion_detected: Instant,
    /// last_reaction_to_congestion_time (0.0).
    last_reaction_to_congestion: Instant,
    /// loss_detected: data units declared lost since the last reaction.
    loss_detected: bool,
    /// data_units_marked: CE-marked data units acknowledged since the last reaction.
    data_units_marked: bool,
    /// l4s_alpha_v_t of the last update (0 when no virtual marking).
    l4s_alpha_v: f64,
    /// The backoff_t of the last reduction by CE or virtual CE.
    last_backoff: f64,
}

impl RefWindow {
    /// ref_wnd = MIN_REF_WND; the "0.0" times of the draft are the controller's start.
    pub fn new(cfg: &Scream2Config, now: Instant) -> Self {
        Self {
            cfg: *cfg,
            ref_wnd: cfg.min_ref_wnd.as_bytes() as f64,
            ref_wnd_i: 1.0,
            ref_wnd_i_update_allowed: true,
            last_congestion_detected: now,
            last_reaction_to_congestion: now,
            loss_detected: false,
            data_units_marked: false,
            l4s_alpha_v: 0.0,
            last_backoff: 0.0,
        }
    }

    pub fn ref_wnd(&self) -> DataSize {
        DataSize::bytes(self.ref_wnd.round() as u64)
    }
    pub fn ref_wnd_bytes(&self) -> f64 {
        self.ref_wnd
    }
    pub fn ref_wnd_i(&self) -> f64 {
        self.ref_wnd_i
    }
    pub fn l4s_alpha_v(&self) -> f64 {
        self.l4s_alpha_v
    }
    pub fn last_backoff(&self) -> f64 {
        self.last_backoff
    }
    pub fn last_reaction_to_congestion(&self) -> Instant {
        self.last_reaction_to_congestion
    }

    fn mss(&self) -> f64 {
        self.cfg.mss.as_bytes() as f64
    }

    /// ref_wnd_ratio = min(1, MSS / ref_wnd) (§4.1.1).
    pub fn ref_wnd_ratio(&self) -> f64 {
        (self.mss() / self.ref_wnd).min(1.0)
    }

    /// Data units were declared lost (`lost`) or acknowledged with CE (`marked`).
    pub fn on_signals(&mut self, lost: bool, marked: bool) {
        self.loss_detected |= lost;
        self.data_units_marked |= marked;
    }

    /// scl_t: 1 far from ref_wnd_i, down to 0.1 close to it (§4.2.2.1).
    pub fn scl(&self) -> f64 {
        let s = (self.ref_wnd - self.ref_wnd_i) / self.ref_wnd_i * config::SCL_GAIN;
        (s * s).clamp(config::SCL_MIN, 1.0)
    }

    /// min(VIRTUAL_RTT, s_rtt) and max(VIRTUAL_RTT, s_rtt); VIRTUAL_RTT before an RTT sample.
    fn rtt_bounds(&self, s_rtt: Option<Duration>) -> (Duration, Duration) {
        let v = self.cfg.virtual_rtt;
        s_rtt.map_or((v, v), |s| (s.min(v), s.max(v)))
    }

    /// max(1, s_rtt / VIRTUAL_RTT): the backoff divisor for long RTTs.
    fn rtt_backoff_divisor(&self, s_rtt: Option<Duration>) -> f64 {
        (s_rtt.map_or(0.0, secs) / secs(self.cfg.virtual_rtt)).max(1.0)
    }

    /// The reference window reduction of §4.2.2.1; `scl` is scl_t computed before it.
    pub fn reduce(&mut self, now: Instant, scl: f64, inp: &ReductionInput) -> Reaction {
        let mut r = Reaction::default();
        self.l4s_alpha_v = 0.0;
        if self.loss_detected || self.data_units_marked {
            self.last_congestion_detected = now;
        }
        let (min_rtt, max_rtt) = self.rtt_bounds(inp.s_rtt);
        let target = secs(inp.qdelay_target);
        let qdelay_avg = secs(inp.qdelay_avg);
        // At most once per min(VIRTUAL_RTT, s_rtt).
        if now - self.last_reaction_to_congestion >= min_rtt {
            if self.loss_detected {
                r.loss = true;
            } else if self.data_units_marked {
                r.ce = true;
            } else if qdelay_avg > target / 2.0 {
                // Virtual L4S marking from qdelay_avg, 0 at target/2 to 1 at target.
                self.l4s_alpha_v = ((qdelay_avg - target / 2.0) / (target / 2.0)).clamp(0.0, 1.0);
                r.virtual_ce = true;
                // The prose of §4.2.1 counts increased delay as a congestion event; the pseudo
                // code sets last_congestion_detected_time only on loss and CE. We follow the
                // prose so that the multiplicative increase is held back after delay-based
                // backoffs too (docs/controllers/scream2.md, "Choices").
                self.last_congestion_detected = now;
            }
        }
        if r.any() && self.ref_wnd_i_update_allowed {
            self.ref_wnd_i = self.ref_wnd;
            self.ref_wnd_i_update_allowed = false;
        }
        if r.loss {
            self.ref_wnd *= self.cfg.beta_loss;
        }
        if r.ce {
            if self.cfg.mode.is_l4s() {
                let mut backoff_t = inp.l4s_alpha / 2.0;
                // Less backoff for RTTs above VIRTUAL_RTT: backoffs come every min(VIRTUAL_RTT,
                // s_rtt).
                backoff_t /= self.rtt_backoff_divisor(inp.s_rtt);
                if secs(inp.qdelay) < target * config::L4S_JITTER_QDELAY_FRACTION {
                    // Close to the last known max, and (REDUCE_JITTER) when the delay varies.
                    backoff_t *= scl.max(config::BACKOFF_SCALE_MIN);
                    backoff_t *= inp.ref_wnd_delay_scale.max(config::BACKOFF_SCALE_MIN);
                }
                if secs(now - self.last_reaction_to_congestion)
                    > config::LONG_UNCONGESTED_RTTS * secs(max_rtt)
                {
                    // Long uncongested (source-limited): bring ref_wnd back to what was in
                    // flight before backing off.
                    self.ref_wnd = self.ref_wnd.min(inp.max_bytes_in_flight_prev.as_bytes() as f64);
                }
                self.ref_wnd *= 1.0 - backoff_t;
                self.last_backoff = backoff_t;
            } else {
                self.ref_wnd *= self.cfg.beta_ecn;
            }
        }
        if r.virtual_ce {
            let backoff_t = self.l4s_alpha_v / 2.0 / self.rtt_backoff_divisor(inp.s_rtt);
            self.ref_wnd *= 1.0 - backoff_t;
            self.last_backoff = backoff_t;
        }
        self.ref_wnd = self.ref_wnd.max(self.cfg.min_ref_wnd.as_bytes() as f64);
        if r.any() {
            self.last_reaction_to_congestion = now;
            self.loss_detected = false;
            self.data_units_marked = false;
        }
        r
    }

    /// The reference window increase of §4.2.2.2; `scl` is scl_t of the same update.
    pub fn increase(&mut self, now: Instant, scl: f64, inp: &IncreaseInput) {
        let (_, max_rtt) = self.rtt_bounds(inp.s_rtt);
        let mss = self.mss();
        // Multiplicative increase held back for POST_CONGESTION_DELAY_RTTS after congestion.
        let post_congestion_scale_t = (secs(now - self.last_congestion_detected)
            / (self.cfg.post_congestion_delay_rtts * secs(max_rtt)))
        .clamp(0.0, 1.0);
        let ref_wnd_scale_factor_t = 1.0 + self.cfg.mul_increase_factor * self.ref_wnd / mss;
        let bytes_newly_acked_minus_ce_t =
            inp.bytes_newly_acked.saturating_sub(inp.bytes_newly_acked_ce).as_bytes() as f64;
        let mut increment_t = bytes_newly_acked_minus_ce_t * self.ref_wnd_ratio();
        // Less increase for RTTs below VIRTUAL_RTT.
        increment_t *= (inp.s_rtt.map_or(0.0, secs) / secs(self.cfg.virtual_rtt)).min(1.0);
        // Slower close to the last known max.
        increment_t *= scl.max(config::BACKOFF_SCALE_MIN);
        // Slower when the queue delay varies (REDUCE_JITTER; 1.0 otherwise).
        increment_t *= inp.ref_wnd_delay_scale.max(config::INCREASE_DELAY_SCALE_MIN);
        let mut tmp_t = ref_wnd_scale_factor_t;
        if tmp_t > 1.0 {
            tmp_t = 1.0 + (tmp_t - 1.0) * post_congestion_scale_t * scl;
        }
        increment_t *= tmp_t;

        let ref_wnd_prev = self.ref_wnd;
        // Grow only if bytes in flight keep up (with slack) and the media rate can still grow.
        let max_allowed_t = mss
            + inp.max_bytes_in_flight.max(inp.max_bytes_in_flight_prev).as_bytes() as f64
                * self.cfg.bytes_in_flight_head_room;
        let ref_wnd_t = self.ref_wnd + increment_t;
        if ref_wnd_t <= max_allowed_t && inp.below_max_rate {
            self.ref_wnd = ref_wnd_t;
        }
        if self.ref_wnd > ref_wnd_prev {
            self.ref_wnd_i_update_allowed = true;
        }
    }

    #[cfg(test)]
    pub(crate) fn set_for_test(
        &mut self,
        ref_wnd: f64,
        ref_wnd_i: f64,
        last_congestion: Instant,
        last_reaction: Instant,
    ) {
        self.ref_wnd = ref_wnd;
        self.ref_wnd_i = ref_wnd_i;
        self.last_congestion_detected = last_congestion;
        self.last_reaction_to_congestion = last_reaction;
    }
}

// ---------------------------------------------------------------------------------------------
// Network congestion control (§4.2)
// ---------------------------------------------------------------------------------------------

/// What one feedback did, for the media rate control.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetworkOutcome {
    /// ref_wnd was updated (the target bitrate is recomputed then, §4.4).
    pub ref_wnd_updated: bool,
    pub reaction: Reaction,
}

/// The network congestion control of draft-ietf-ccwg-rfc8298bis-screamv2-01 §4.2.
#[derive(Clone, Debug)]
pub struct NetworkCongestionControl {
    cfg: Scream2Config,
    sent: SentPacketList,
    base_delay: BaseDelayHistory,
    s_rtt: SmoothedRtt,
    alpha: L4sAlpha,
    queue: QueueDelayAverage,
    window: RefWindow,
    target: QdelayTargetAdaptation,
    loss_event_rate: LossEventRate,
    next_norm_sample: Instant,
    /// The last qdelay sample; `None` before the first acknowledgement.
    qdelay: Option<Duration>,
    /// max_bytes_in_flight in the current round trip, and in the previous one (§4.1.1).
    max_bytes_in_flight: DataSize,
    max_bytes_in_flight_prev: DataSize,
    round_trip_start: Instant,
    /// Counts for traces: CE-marked data units acknowledged, data units declared lost.
    ce_packets: u64,
    lost_packets: u64,
    last_progress: Instant,
}

impl NetworkCongestionControl {
    pub fn new(cfg: &Scream2Config, now: Instant) -> Self {
        Self {
            cfg: *cfg,
            sent: SentPacketList::new(config::REORDER_WINDOW_INIT),
            base_delay: BaseDelayHistory::new(config::BASE_DELAY_INTERVAL, config::BASE_HISTORY),
            s_rtt: SmoothedRtt::new(config::S_RTT_ALPHA),
            alpha: L4sAlpha::new(cfg, now),
            queue: QueueDelayAverage::new(cfg, now),
            window: RefWindow::new(cfg, now),
            target: QdelayTargetAdaptation::new(&cfg.v1_shared()),
            loss_event_rate: LossEventRate::new(LOSS_EVENT_RATE_GAIN),
            next_norm_sample: now + QDELAY_NORM_SAMPLE_INTERVAL,
            qdelay: None,
            max_bytes_in_flight: DataSize::ZERO,
            max_bytes_in_flight_prev: DataSize::ZERO,
            round_trip_start: now,
            ce_packets: 0,
            lost_packets: 0,
            last_progress: now,
        }
    }

    /// A data unit was transmitted (§4.1.1).
    pub fn on_packet_sent(&mut self, now: Instant, seq: i64, size: DataSize, sent_at: Instant) {
        if self.sent.bytes_in_flight().is_zero() {
            self.last_progress = now;
        }
        self.sent.on_sent(seq, size, sent_at);
        self.roll_round_trip(now);
        self.max_bytes_in_flight = self.max_bytes_in_flight.max(self.sent.bytes_in_flight());
    }

    /// max_bytes_in_flight_prev takes the last round trip's maximum once s_rtt has passed.
    fn roll_round_trip(&mut self, now: Instant) {
        if let Some(s_rtt) = self.s_rtt.get() {
            if now - self.round_trip_start >= s_rtt {
                self.max_bytes_in_flight_prev = self.max_bytes_in_flight;
                self.max_bytes_in_flight = self.sent.bytes_in_flight();
                self.round_trip_start = now;
            }
        }
    }

    /// Feedback arrived (§4.1.2): congestion detection (§4.2.1), then the reference window
    /// update (§4.2.2). `below_max_rate` is target_bitrate < TARGET_BITRATE_MAX.
    pub fn on_feedback(
        &mut self,
        now: Instant,
        report: &FeedbackReport,
        below_max_rate: bool,
    ) -> NetworkOutcome {
        let ack = self.sent.on_feedback(now, &report.packets, self.s_rtt.get());
        let qdelay_target = self.target.qdelay_target();
        // The base delay from every received data unit; qdelay per newly acknowledged one
        // (REDUCE_JITTER's min/max), and the sample of the newest for qdelay_avg.
        for p in &report.packets {
            if let Some(arrival) = p.arrival {
                self.base_delay.update(now, arrival - p.sent_at);
            }
        }
        if ack.packets_received > 0 {
            for p in report.packets.iter().filter(|p| p.arrival.is_some()) {
                let owd = p.arrival.map_or(Duration::ZERO, |a| a - p.sent_at);
                self.queue.on_acked_packet(self.base_delay.qdelay(owd), qdelay_target);
            }
        }
        if let Some(n) = ack.newest {
            self.s_rtt.update(now - n.sent_at);
            self.last_progress = now;
            self.qdelay = Some(self.base_delay.qdelay(n.arrival - n.sent_at));
        }
        if let Some(rtt) = report.rtt {
            self.s_rtt.update(rtt);
        }
        self.roll_round_trip(now);
        let s_rtt = self.s_rtt.get();

        // §4.2.1: the three congestion signals.
        let lost = self.sent.detect_losses(now);
        self.note_losses(lost);
        self.ce_packets += ack.ce_marked;
        self.window.on_signals(false, ack.ce_marked > 0);
        self.alpha.on_ack(now, ack.packets_received, ack.ce_marked, s_rtt);
        let qdelay = self.qdelay.unwrap_or(Duration::ZERO);
        self.queue.update(now, qdelay, s_rtt, self.cfg.virtual_rtt);
        self.loss_event_rate.update(now, s_rtt);
        if now >= self.next_norm_sample {
            // §4.5.4 on `scream`'s 50 ms grid (a no-op unless enabled).
            self.target.adjust_qdelay_target(qdelay, self.loss_event_rate.get());
            while self.next_norm_sample <= now {
                self.next_norm_sample += QDELAY_NORM_SAMPLE_INTERVAL;
            }
        }

        // §4.2.2: reduction, then increase, with scl_t computed once before both.
        if ack.bytes_newly_acked.is_zero() && lost == 0 {
            return NetworkOutcome::default();
        }
        let scl = self.window.scl();
        let reaction = self.window.reduce(
            now,
            scl,
            &ReductionInput {
                l4s_alpha: self.alpha.get(),
                qdelay,
                qdelay_avg: self.queue.qdelay_avg(),
                qdelay_target: self.target.qdelay_target(),
                s_rtt,
                ref_wnd_delay_scale: self.queue.ref_wnd_delay_scale(),
                max_bytes_in_flight_prev: self.max_bytes_in_flight_prev,
            },
        );
        self.window.increase(
            now,
            scl,
            &IncreaseInput {
                bytes_newly_acked: ack.bytes_newly_acked,
                bytes_newly_acked_ce: ack.bytes_ce,
                s_rtt,
                ref_wnd_delay_scale: self.queue.ref_wnd_delay_scale(),
                max_bytes_in_flight: self.max_bytes_in_flight,
                max_bytes_in_flight_prev: self.max_bytes_in_flight_prev,
                below_max_rate,
            },
        );
        NetworkOutcome { ref_wnd_updated: true, reaction }
    }

    fn note_losses(&mut self, lost: usize) {
        if lost > 0 {
            self.lost_packets += lost as u64;
            self.loss_event_rate.on_loss();
            self.window.on_signals(true, false);
        }
    }

    /// Reordering windows that ended and the feedback timeout. Losses found here are acted on
    /// at the next feedback, where ref_wnd is updated (§4.2.2).
    pub fn on_timeout(&mut self, now: Instant) {
        let mut lost = self.sent.detect_losses(now);
        if self.feedback_deadline().is_some_and(|d| now >= d) {
            lost += self.sent.declare_all_lost(now);
            self.last_progress = now;
        }
        self.note_losses(lost);
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        match (self.sent.next_loss_deadline(), self.feedback_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn feedback_deadline(&self) -> Option<Instant> {
        feedback_deadline(&self.sent, self.last_progress, self.s_rtt.get(), config::FEEDBACK_TIMEOUT_MIN)
    }

    pub fn mode(&self) -> Mode {
        self.cfg.mode
    }
    pub fn window(&self) -> &RefWindow {
        &self.window
    }
    pub fn ref_wnd(&self) -> DataSize {
        self.window.ref_wnd()
    }
    pub fn bytes_in_flight(&self) -> DataSize {
        self.sent.bytes_in_flight()
    }
    pub fn s_rtt(&self) -> Option<Duration> {
        self.s_rtt.get()
    }
    pub fn qdelay(&self) -> Option<Duration> {
        self.qdelay
    }
    pub fn qdelay_avg(&self) -> Duration {
        self.queue.qdelay_avg()
    }
    pub fn qdelay_target(&self) -> Duration {
        self.target.qdelay_target()
    }
    pub fn base_delay(&self) -> Option<Duration> {
        self.base_delay.base_delay()
    }
    pub fn l4s_alpha(&self) -> f64 {
        self.alpha.get()
    }
    pub fn ref_wnd_delay_scale(&self) -> f64 {
        self.queue.ref_wnd_delay_scale()
    }
    pub fn max_bytes_in_flight(&self) -> (DataSize, DataSize) {
        (self.max_bytes_in_flight, self.max_bytes_in_flight_prev)
    }
    pub fn ce_packets(&self) -> u64 {
        self.ce_packets
    }
    pub fn lost_packets(&self) -> u64 {
        self.lost_packets
    }
    pub fn reorder_window(&self) -> Duration {
        self.sent.reorder_window()
    }
}
