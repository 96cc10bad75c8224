//! `nada`: Network-Assisted Dynamic Adaptation, RFC 8698, implemented here from the RFC text.
//!
//! | RFC 8698 | what | where |
//! |---|---|---|
//! | §4.1 Figure 3 | default parameters | [`config`] |
//! | §4.2, §5.1 | receiver: d_base, d_queue, p_loss / p_mark, d_tilde (eq. 1), x_curr (eq. 2), r_recv, rmode | [`receiver`] |
//! | §4.3 | sender: gamma (eq. 3), accelerated ramp-up (eq. 4), gradual update (eqs. 5-7), clipping (eqs. 8-9) | [`sender`] |
//! | §5.2 | rate-shaping buffer, r_vin and r_send (eqs. 11-14) | [`rate_shaping`] |
//!
//! **Deployment.** Feedback is per-packet (RFC 8888 congestion-control feedback, parsed by the
//! sender), so the §4.2 receiver computation runs at the sender on the [`FeedbackReport`]'s
//! packet results, as RFC 8698 §5.3 permits. Each feedback with new packet results is one
//! "report" of the RFC: the receiver state is updated, and if at least `min_update_interval`
//! has passed since the previous update, x_curr / r_recv / rmode are computed and r_ref updated
//! with delta = the observed time since the previous update (capped at `max_delta`). RTT is
//! `report.rtt` (RTCP RR) when the report carries one, else the minimum of `now - sent_at` over
//! the last 15 packets acknowledged (as ns3-rmcat does). `docs/controllers/nada.md` lists every
//! decision the RFC leaves open.
//!
//! **Drive loop.** NADA is clocked by feedback alone: it has no timer ([`Controller::poll_timeout`]
//! is `None`). The sender reports its queue with [`Controller::on_send_queue`] (the rate-shaping
//! buffer), and reads r_vin from [`Controller::target_rate`] and r_send from
//! [`Controller::pacing_rate`].

pub mod config;
pub mod rate_shaping;
pub mod receiver;
pub mod sender;

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

pub use config::NadaConfig;
pub use rate_shaping::OutputRates;
pub use receiver::{RateMode, Signal};

use crate::controller::{Controller, ControllerMetrics, Metric};
use crate::feedback::{FeedbackReport, SentPacket};
use rate_shaping::RateShapingBuffer;
use receiver::{MinFilter, Receiver};
use sender::ReferenceRate;

/// The `nada` controller: RFC 8698 with the receiver-side computation at the sender.
#[derive(Clone, Debug)]
pub struct Nada {
    cfg: NadaConfig,
    /// RMIN.
    rmin: Bitrate,
    /// RMAX.
    rmax: Bitrate,
    receiver: Receiver,
    rate: ReferenceRate,
    buffer: RateShapingBuffer,
    /// rtt in RFC 8698 §4.1 Figure 2.
    rtt: Option<Duration>,
    /// `now - sent_at` of recently acknowledged packets.
    rtt_samples: MinFilter,
    /// t_last in RFC 8698 §4.1 Figure 2: time of the last rate update.
    t_last: Instant,
    signal: Option<Signal>,
    /// rmode of the last update.
    mode: RateMode,
}

impl Nada {
    /// A controller starting at `now` with r_ref = `start_rate`, RMIN = `min_rate` and
    /// RMAX = `max_rate` (RMAX also sets the equilibrium of eq. (5); an unlimited `max_rate` is
    /// replaced by RFC 8698's default RMAX, 1.5 Mbit/s, since eq. (5) needs a finite one).
    pub fn new(
        cfg: NadaConfig,
        min_rate: Bitrate,
        max_rate: Bitrate,
        start_rate: Bitrate,
        now: Instant,
    ) -> Self {
        let max_rate = if max_rate.is_infinite() { config::RMAX } else { max_rate }.max(min_rate);
        Self {
            receiver: Receiver::new(&cfg),
            rate: ReferenceRate::new(start_rate, min_rate, max_rate),
            rtt_samples: MinFilter::new(cfg.rtt_filter_taps),
            cfg,
            rmin: min_rate,
            rmax: max_rate,
            buffer: RateShapingBuffer::default(),
            rtt: None,
            t_last: now,
            signal: None,
            mode: RateMode::AcceleratedRampUp,
        }
    }

    /// r_ref, the reference rate.
    pub fn r_ref(&self) -> Bitrate {
        self.rate.r_ref()
    }

    /// r_vin and r_send for the current r_ref and buffer (RFC 8698 §5.2.2).
    pub fn output_rates(&self) -> OutputRates {
        rate_shaping::output_rates(self.rate.r_ref(), self.buffer.buffer_len, self.rmin, self.rmax, &self.cfg)
    }

    /// rmode of the last update.
    pub fn mode(&self) -> RateMode {
        self.mode
    }

    /// The congestion signal of the last update, `None` before the first.
    pub fn signal(&self) -> Option<&Signal> {
        self.signal.as_ref()
    }

    /// The RTT estimate in use.
    pub fn rtt(&self) -> Option<Duration> {
        self.rtt
    }

    pub fn config(&self) -> &NadaConfig {
        &self.cfg
    }
}

impl Controller for Nada {
    /// NADA learns what it needs (send time, size) from the feedback's packet results.
    fn on_packet_sent(&mut self, _now: Instant, _pkt: &SentPacket) {}

    fn on_feedback(&mut self, now: Instant, report: &FeedbackReport) {
        let rtt_in_use = self.rtt.unwrap_or(Duration::ZERO);
        let mut fresh = false;
        for p in &report.packets {
            if self.receiver.on_packet_result(p, rtt_in_use) {
                fresh = true;
                if p.arrival.is_some() {
                    self.rtt_samples.push(now.saturating_since(p.sent_at));
                }
            }
        }
        // An RTCP RR round trip when this report has one, else the feedback-timing estimate.
        self.rtt = report.rtt.filter(|r| *r > Duration::ZERO).or_else(|| self.rtt_samples.min()).or(self.rtt);
        if !fresh {
            return;
        }
        let elapsed = now - self.t_last;
        if elapsed < self.cfg.min_update_interval {
            return;
        }
        let delta = elapsed.min(self.cfg.max_delta);
        let signal = self.receiver.update(delta);
        let rtt = self.rtt.unwrap_or(Duration::ZERO);
        self.rate.update(signal.rmode, signal.x_curr, signal.r_recv, rtt, delta, &self.cfg);
        self.mode = signal.rmode;
        self.signal = Some(signal);
        self.t_last = now;
    }

    fn on_send_queue(&mut self, _now: Instant, bytes: DataSize, _delay: Duration) {
        self.buffer.on_send_queue(bytes);
    }

    fn on_timeout(&mut self, _now: Instant) {}

    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    /// r_vin, RFC 8698 eq. (13).
    fn target_rate(&self) -> Bitrate {
        self.output_rates().r_vin
    }

    /// r_send, RFC 8698 eq. (14).
    fn pacing_rate(&self) -> Option<Bitrate> {
        Some(self.output_rates().r_send)
    }

    fn metrics(&self) -> ControllerMetrics {
        let rates = self.output_rates();
        let s = self.signal.as_ref();
        ControllerMetrics::new()
            .with("r_ref", Metric::Rate(Some(self.rate.r_ref())))
            .with("r_vin", Metric::Rate(Some(rates.r_vin)))
            .with("r_send", Metric::Rate(Some(rates.r_send)))
            .with("r_recv", Metric::Rate(s.map(|s| s.r_recv)))
            .with("x_curr", Metric::Time(s.map(|s| s.x_curr)))
            .with("d_queue", Metric::Time(s.and_then(|s| s.d_queue)))
            .with("d_base", Metric::Time(s.and_then(|s| s.d_base)))
            .with("d_tilde", Metric::Time(s.and_then(|s| s.d_tilde)))
            .with("loss", Metric::Real(s.map(|s| s.p_loss)))
            .with("mark", Metric::Real(s.map(|s| s.p_mark)))
            .with("mode", Metric::State(self.mode.name()))
            .with("buffer", Metric::Size(Some(self.buffer.buffer_len)))
            .with("rtt", Metric::Time(self.rtt))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use crate::feedback::{Ecn, PacketResult};

    const PACKET: DataSize = DataSize::bytes(1200);
    const STEP: Duration = Duration::from_millis(1);
    const FEEDBACK_INTERVAL: Duration = Duration::from_millis(100);

    /// A scripted network for end-to-end tests: a fluid encoder at r_vin filling the sender's
    /// queue, a pacer at r_send, one FIFO bottleneck with a drop-tail limit in queuing delay,
    /// propagation `one_way` each way, optional jitter after the bottleneck (without reordering),
    /// and a receiver sending per-packet feedback every 100 ms.
    struct Path {
        capacity: Bitrate,
        one_way: Duration,
        /// Extra forward delay of packet `seq`, in ms, applied after the bottleneck.
        jitter: fn(i64) -> i64,
        last_arrival: Instant,
        queue_limit: Duration,
        link_free: Instant,
        seq: i64,
        encoder_bytes: f64,
        pacer_budget: f64,
        /// Sent, not yet reported (arrival `None` if dropped).
        unreported: VecDeque<PacketResult>,
        next_feedback: Instant,
        in_transit: VecDeque<(Instant, FeedbackReport)>,
        now: Instant,
    }

    impl Path {
        fn new(capacity: Bitrate, one_way: Duration) -> Self {
            Self {
                capacity,
                one_way,
                jitter: |_| 0,
                last_arrival: Instant::ZERO,
                queue_limit: Duration::from_millis(300),
                link_free: Instant::ZERO,
                seq: 0,
                encoder_bytes: 0.0,
                pacer_budget: 0.0,
                unreported: VecDeque::new(),
                next_feedback: Instant::ZERO + FEEDBACK_INTERVAL,
                in_transit: VecDeque::new(),
                now: Instant::ZERO,
            }
        }

        fn send(&mut self, nada: &mut Nada) {
            let now = self.now;
            let start = if self.link_free > now { self.link_free } else { now };
            let arrival = if start - now > self.queue_limit {
                None
            } else {
                self.link_free = start + self.capacity.transmit_time(PACKET);
                let jittered = self.link_free + self.one_way + Duration::from_millis((self.jitter)(self.seq));
                self.last_arrival = self.last_arrival.max(jittered);
                Some(self.last_arrival)
            };
            let r = PacketResult {
                seq: self.seq,
                size: PACKET,
                sent_at: now,
                arrival,
                ecn: Ecn::NotEct,
                is_audio: false,
                probe: None,
            };
            nada.on_packet_sent(
                now,
                &SentPacket {
                    seq: self.seq,
                    size: PACKET,
                    sent_at: now,
                    is_audio: false,
                    probe: None,
                    data_in_flight: PACKET,
                },
            );
            self.unreported.push_back(r);
            self.seq += 1;
        }

        /// The receiver's feedback at `now`: every packet up to the newest one that has
        /// arrived; earlier packets that have not arrived were dropped (FIFO).
        fn feedback(&mut self) -> FeedbackReport {
            let now = self.now;
            let last =
                self.unreported.iter().rev().find(|p| p.arrival.is_some_and(|a| a <= now)).map(|p| p.seq);
            let mut packets = Vec::new();
            while let Some(p) = self.unreported.front() {
                if last.is_none_or(|l| p.seq > l) {
                    break;
                }
                packets.push(*p);
                self.unreported.pop_front();
            }
            FeedbackReport { packets, ..FeedbackReport::default() }
        }

        /// Advances 1 ms.
        fn step(&mut self, nada: &mut Nada) {
            self.now += STEP;
            let rates = nada.output_rates();
            self.encoder_bytes += rates.r_vin.as_bps_f64() * STEP.as_secs_f64() / 8.0;
            let packet = PACKET.as_bytes() as f64;
            self.pacer_budget =
                (self.pacer_budget + rates.r_send.as_bps_f64() * STEP.as_secs_f64() / 8.0).min(2.0 * packet);
            while self.encoder_bytes >= packet && self.pacer_budget >= packet {
                self.send(nada);
                self.encoder_bytes -= packet;
                self.pacer_budget -= packet;
            }
            nada.on_send_queue(self.now, DataSize::bytes(self.encoder_bytes as u64), Duration::ZERO);
            if self.now >= self.next_feedback {
                let report = self.feedback();
                self.in_transit.push_back((self.now + self.one_way, report));
                self.next_feedback += FEEDBACK_INTERVAL;
            }
            while self.in_transit.front().is_some_and(|(t, _)| *t <= self.now) {
                let (_, report) = self.in_transit.pop_front().unwrap();
                nada.on_feedback(self.now, &report);
            }
        }
    }

    fn nada(rmax: Bitrate, start: Bitrate) -> Nada {
        Nada::new(NadaConfig::default(), config::RMIN, rmax, start, Instant::ZERO)
    }

    #[test]
    fn converges_near_a_1_mbps_bottleneck() {
        // RMAX 1.5 Mbit/s (RFC default): at r_ref = 1 Mbit/s eq. (5) settles at
        // x_curr = PRIO * XREF * RMAX / r_ref = 15 ms of queue.
        let mut n = nada(config::RMAX, Bitrate::kbps(300));
        let mut path = Path::new(Bitrate::mbps(1), Duration::from_millis(20));
        let (mut rate_sum, mut queue_sum, mut samples, mut max_queue) = (0.0, 0.0, 0.0, Duration::ZERO);
        while path.now < Instant::from_secs(40) {
            path.step(&mut n);
            if path.now >= Instant::from_secs(20) && path.now.as_micros() % 100_000 == 0 {
                rate_sum += n.r_ref().as_bps_f64();
                let q = n.signal().and_then(|s| s.d_queue).unwrap();
                queue_sum += q.as_secs_f64();
                max_queue = max_queue.max(q);
                samples += 1.0;
            }
        }
        let mean_rate = rate_sum / samples;
        let mean_queue = Duration::from_secs_f64(queue_sum / samples);
        assert!((0.9e6..=1.05e6).contains(&mean_rate), "mean r_ref {mean_rate} bit/s");
        assert!(mean_queue < Duration::from_millis(40), "mean d_queue {mean_queue}");
        assert!(max_queue < Duration::from_millis(100), "max d_queue {max_queue}");
        assert_eq!(n.mode(), RateMode::GradualUpdate);
    }

    #[test]
    fn ramps_up_faster_than_8_percent_per_second() {
        // 10 Mbit/s of spare capacity, RMAX 5 Mbit/s, start 300 kbit/s. GCC's multiplicative
        // increase is at most 8 %/s: 300k * 1.08^t. NADA's accelerated ramp-up multiplies
        // r_recv by 1 + gamma (gamma = 50 / (rtt + 100 + 120) ~ 0.19) every update.
        // (Measured: 0.50, 0.80, 1.30, 2.15, 3.57 Mbit/s after 1..5 s, about +63 %/s.)
        let start = Bitrate::kbps(300);
        let mut n = nada(Bitrate::mbps(5), start);
        let mut path = Path::new(Bitrate::mbps(10), Duration::from_millis(20));
        let mut at = vec![start];
        while path.now < Instant::from_secs(5) {
            path.step(&mut n);
            if path.now.as_micros() % 1_000_000 == 0 {
                at.push(n.r_ref());
                assert_eq!(n.mode(), RateMode::AcceleratedRampUp, "at {}", path.now);
            }
        }
        for (t, r) in at.iter().enumerate().skip(2) {
            let gcc_bound = start * 1.08f64.powi(t as i32);
            assert!(*r > gcc_bound * 2.0, "r_ref {r} after {t} s, 8 %/s gives {gcc_bound}");
        }
        // Per-second growth between 1 s and 5 s (after LOGWIN has filled): well above 8 %.
        let growth = (at[5] / at[1]).powf(1.0 / 4.0) - 1.0;
        assert!(growth > 0.3, "{:.0} %/s", growth * 100.0);
        assert!(at[5] >= Bitrate::mbps(3), "r_ref {} after 5 s", at[5]);
    }

    #[test]
    fn jitter_keeps_nada_out_of_accelerated_ramp_up() {
        // Sjölund and Kevo 2022 (seed 001) §5.4.2: NADA fails to use the link under jitter
        // because delay samples above the baseline look like queue build-up. Here 0-22 ms of
        // jitter (above QEPS = 10 ms) on a 10 Mbit/s path: every LOGWIN holds a sample >= QEPS, so rmode stays gradual and
        // r_ref grows only additively (KAPPA * delta/TAU * XREF * RMAX / TAU = 10 kbit/s per
        // 100 ms while the filtered queue is near 0), not by accelerated ramp-up. (Measured:
        // 0.78 Mbit/s after 5 s, +100 kbit/s per second.)
        let start = Bitrate::kbps(300);
        let mut n = nada(Bitrate::mbps(5), start);
        let mut path = Path::new(Bitrate::mbps(10), Duration::from_millis(20));
        path.jitter = |seq| (seq * 37) % 23;
        while path.now < Instant::from_secs(5) {
            path.step(&mut n);
            if path.now >= Instant::from_secs(1) {
                assert_eq!(n.mode(), RateMode::GradualUpdate, "at {}", path.now);
            }
        }
        assert!(n.r_ref() < Bitrate::mbps(1), "r_ref {} after 5 s (3.57 Mbit/s without jitter)", n.r_ref());
        assert!(n.r_ref() > start, "gradual update still increases r_ref");
    }

    /// RFC 8867 §5.1's 2.5 → 0.6 Mbit/s step at 100 ms one-way delay behind a 300 ms drop-tail
    /// queue: (r_ref samples every 100 ms from 2 s after the step, packets sent, packets lost).
    fn capacity_drop_at_100_ms(cfg: NadaConfig) -> (Vec<Bitrate>, usize, usize) {
        let mut n = Nada::new(cfg, config::RMIN, config::RMAX, Bitrate::kbps(1200), Instant::ZERO);
        let mut path = Path::new(Bitrate::kbps(2500), Duration::from_millis(100));
        let mut rates = Vec::new();
        let (mut sent, mut lost) = (0, 0);
        while path.now < Instant::from_secs(40) {
            if path.now == Instant::from_secs(10) {
                path.capacity = Bitrate::kbps(600);
            }
            let seq = path.seq;
            path.step(&mut n);
            // Packets sent in this step are the newest results, not yet reported.
            let new = (path.seq - seq) as usize;
            sent += new;
            lost += path.unreported.iter().rev().take(new).filter(|p| p.arrival.is_none()).count();
            if path.now >= Instant::from_secs(12) && path.now.as_micros() % 100_000 == 0 {
                rates.push(n.r_ref());
            }
        }
        (rates, sent, lost)
    }

    #[test]
    fn capacity_drop_with_long_delay_does_not_swing_between_rmin_and_rmax() {
        // With x_curr capped only by the §5.3 field (3276.7 ms), the loss penalty of eq. (2)
        // (DLOSS * (p_loss / PLRREF)^2: seconds at 10-20 % loss) drives r_ref to RMIN, and as
        // p_loss decays eq. (7)'s x_diff term multiplies r_ref back up to RMAX: a limit cycle
        // between the two that refills the 300 ms queue every couple of seconds. (Measured: r_ref
        // at RMAX in 65 of the 280 samples, 20 % of all packets lost; with the default XMAX:
        // r_ref at most 626 kbit/s, 1.9 % lost.)
        let wide = NadaConfig { x_curr_max: config::X_CURR_FIELD_MAX, ..NadaConfig::default() };
        let (rates, sent, lost) = capacity_drop_at_100_ms(wide);
        let at_rmax = rates.iter().filter(|&&r| r >= config::RMAX).count();
        assert!(at_rmax > 10, "the wide cap reaches RMAX after the step ({at_rmax} samples)");
        let wide_loss = lost as f64 / sent as f64;
        // ns3-rmcat's XMAX = 500 ms (our default) bounds the swing: r_ref never returns to RMAX
        // while the capacity is 0.6 Mbit/s, and far fewer packets are lost.
        let (rates, sent, lost) = capacity_drop_at_100_ms(NadaConfig::default());
        let max = rates.iter().copied().max().unwrap();
        assert!(max < Bitrate::kbps(800), "r_ref up to {max} at a 600 kbit/s bottleneck");
        let loss = lost as f64 / sent as f64;
        assert!(loss < wide_loss / 5.0, "loss {loss:.4} with XMAX 500 ms, {wide_loss:.4} without");
    }

    #[test]
    fn feedback_faster_than_delta_is_batched() {
        let mut n = nada(config::RMAX, Bitrate::kbps(500));
        let mut seq = 0;
        let mut report_at = |n: &mut Nada, now_ms: i64| {
            let packets = (0..5)
                .map(|_| {
                    seq += 1;
                    let sent_at = Instant::from_millis(now_ms - 30);
                    PacketResult {
                        seq,
                        size: PACKET,
                        sent_at,
                        arrival: Some(sent_at + Duration::from_millis(10)),
                        ecn: Ecn::NotEct,
                        is_audio: false,
                        probe: None,
                    }
                })
                .collect();
            n.on_feedback(
                Instant::from_millis(now_ms),
                &FeedbackReport { packets, ..FeedbackReport::default() },
            );
        };
        // Feedback every 20 ms: the first update waits until 60 ms >= MIN_UPDATE_INTERVAL
        // (50 ms) after t_last = 0, the next one 60 ms after that.
        for t in [20, 40] {
            report_at(&mut n, t);
            assert!(n.signal().is_none(), "no update at {t} ms");
        }
        report_at(&mut n, 60);
        assert!(n.signal().is_some());
        let first = *n.signal().unwrap();
        report_at(&mut n, 80);
        report_at(&mut n, 100);
        assert_eq!(*n.signal().unwrap(), first, "no update at 80 and 100 ms");
        report_at(&mut n, 120);
        assert_ne!(n.signal().unwrap().r_recv, first.r_recv);
        // RTT from feedback timing: now - sent_at of the newest packets = 30 ms.
        assert_eq!(n.rtt(), Some(Duration::from_millis(30)));
        // A report carrying an RR round trip wins.
        let rr = FeedbackReport { rtt: Some(Duration::from_millis(80)), ..FeedbackReport::default() };
        n.on_feedback(Instant::from_millis(130), &rr);
        assert_eq!(n.rtt(), Some(Duration::from_millis(80)));
    }

    #[test]
    fn outputs_follow_the_send_queue() {
        let mut n = nada(config::RMAX, Bitrate::mbps(1));
        assert_eq!(n.target_rate(), Bitrate::mbps(1));
        assert_eq!(n.pacing_rate(), Some(Bitrate::mbps(1)));
        // 2000 bytes queued: RFC 8698 §5.2.2's 48 kbit/s either way.
        n.on_send_queue(Instant::ZERO, DataSize::bytes(2000), Duration::from_millis(10));
        assert_eq!(n.target_rate(), Bitrate::kbps(952));
        assert_eq!(n.pacing_rate(), Some(Bitrate::kbps(1048)));
        assert_eq!(n.poll_timeout(), None);
    }

    #[test]
    fn metrics_have_stable_names_and_kinds() {
        let mut n = nada(config::RMAX, Bitrate::kbps(300));
        let names = |m: &ControllerMetrics| m.values.iter().map(|(k, _)| *k).collect::<Vec<_>>();
        let before = n.metrics();
        assert_eq!(
            names(&before),
            [
                "r_ref", "r_vin", "r_send", "r_recv", "x_curr", "d_queue", "d_base", "d_tilde", "loss",
                "mark", "mode", "buffer", "rtt"
            ]
        );
        let mut path = Path::new(Bitrate::mbps(1), Duration::from_millis(20));
        while path.now < Instant::from_secs(1) {
            path.step(&mut n);
        }
        let after = n.metrics();
        assert_eq!(names(&before), names(&after));
        for ((_, a), (_, b)) in before.values.iter().zip(&after.values) {
            assert_eq!(std::mem::discriminant(a), std::mem::discriminant(b));
        }
        assert!(matches!(after.values[10].1, Metric::State("accelerated" | "gradual")));
        assert!(matches!(after.values[4].1, Metric::Time(Some(_))));
    }
}
