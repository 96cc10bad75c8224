//! CUBIC congestion avoidance (RFC 9438 §4), windows in segments of SMSS as the RFC writes
//! them (§4.1) and converted to bytes at the interface.
//!
//! Per ACK in congestion avoidance (§4.2-§4.5): W_est grows by α_cubic·segments_acked/cwnd
//! (Figure 4); if W_cubic(t) < W_est the flow is in the Reno-friendly region and cwnd = W_est;
//! otherwise cwnd moves towards target = W_cubic(t + RTT), clamped to [cwnd, 1.5·cwnd].
//!
//! One deliberate reading: §4.4 and §4.5 add (target − cwnd)/cwnd "for each received new ACK";
//! we add it for each SMSS acknowledged, as Linux's `tcp_cubic.c` does (and as reported
//! erratum 9186 proposes), so that delayed ACKs do not halve the growth.
//!
//! Slow start (standard or HyStart++) is the sender's; CUBIC learns where it ended through
//! [`Cubic::on_slow_start_exit`] (§4.10).

use rtcbench_units::{DataSize, Duration, Instant};

/// C, §4.1.1 and §5.1: segments/s³.
pub const C: f64 = 0.4;
/// β_cubic, §4.6.
pub const BETA_CUBIC: f64 = 0.7;
/// α_cubic = 3(1 − β_cubic)/(1 + β_cubic), §4.3.
pub const ALPHA_CUBIC: f64 = 3.0 * (1.0 - BETA_CUBIC) / (1.0 + BETA_CUBIC);

/// One congestion avoidance stage (§4.1.2), in segments and seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Epoch {
    /// t_epoch: when the stage started.
    pub start: Instant,
    /// K: seconds from t_epoch until W_cubic reaches W_max (Figure 2).
    pub k: f64,
    /// W_max the curve is centred on.
    pub w_max: f64,
    /// W_est: the Reno-friendly estimate (§4.3).
    pub w_est: f64,
}

impl Epoch {
    /// A stage starting at `now` with cwnd_epoch = `cwnd`. Without a W_max (after a timeout,
    /// §4.8, or a slow start that ended without loss, §4.10), K = 0 and W_max = cwnd_epoch.
    fn begin(now: Instant, cwnd: f64, w_max: Option<f64>) -> Self {
        let w_max = w_max.unwrap_or(cwnd);
        // Figure 2: K = cbrt((W_max - cwnd_epoch) / C); negative if fast convergence put W_max
        // below cwnd_epoch, which keeps the curve continuous.
        let k = ((w_max - cwnd) / C).cbrt();
        // §4.3: W_est = cwnd_epoch at the start of the stage.
        Self { start: now, k, w_max, w_est: cwnd }
    }

    /// W_cubic(t) = C·(t − K)³ + W_max, Figure 1, with t in seconds since t_epoch.
    pub fn w_cubic(&self, t: f64) -> f64 {
        C * (t - self.k).powi(3) + self.w_max
    }
}

/// CUBIC's state between congestion events.
#[derive(Clone, Debug, PartialEq)]
pub struct Cubic {
    smss: DataSize,
    /// W_max (§4.1.2): cwnd just before the last reduction, lowered by fast convergence;
    /// `None` after a timeout and before the first congestion event.
    w_max: Option<f64>,
    /// cwnd_prior (§4.1.2): cwnd when ssthresh was last set.
    cwnd_prior: f64,
    /// The current congestion avoidance stage; it starts at its first ACK.
    epoch: Option<Epoch>,
    /// Growth below one byte, carried to the next ACK.
    carry: f64,
}

impl Cubic {
    pub fn new(smss: DataSize) -> Self {
        Self { smss, w_max: None, cwnd_prior: 0.0, epoch: None, carry: 0.0 }
    }

    pub fn epoch(&self) -> Option<&Epoch> {
        self.epoch.as_ref()
    }

    fn segments(&self, size: DataSize) -> f64 {
        size.as_bytes() as f64 / self.smss.as_bytes() as f64
    }

    /// cwnd after an ACK of `acked` new bytes in congestion avoidance; `srtt` is the RTT of
    /// §4.2's W_cubic(t + RTT).
    pub fn on_ack(&mut self, now: Instant, cwnd: DataSize, acked: DataSize, srtt: Duration) -> DataSize {
        let cwnd_segments = self.segments(cwnd);
        let segments_acked = self.segments(acked);
        let w_max = self.w_max;
        let epoch = self.epoch.get_or_insert_with(|| Epoch::begin(now, cwnd_segments, w_max));
        // §4.3: α_cubic until W_est reaches cwnd_prior, then 1 (Reno's own increase).
        let alpha = if epoch.w_est >= self.cwnd_prior { 1.0 } else { ALPHA_CUBIC };
        epoch.w_est += alpha * segments_acked / cwnd_segments; // Figure 4
        let t = (now - epoch.start).as_secs_f64();
        if epoch.w_cubic(t) < epoch.w_est {
            // §4.3: the Reno-friendly region, cwnd = W_est (never lowered).
            self.carry = 0.0;
            let w_est = DataSize::bytes((epoch.w_est * self.smss.as_bytes() as f64) as u64);
            return cwnd.max(w_est);
        }
        // §4.2: target = W_cubic(t + RTT) clamped to [cwnd, 1.5·cwnd].
        let target = epoch.w_cubic(t + srtt.as_secs_f64()).clamp(cwnd_segments, 1.5 * cwnd_segments);
        // §4.4 (concave) and §4.5 (convex): (target − cwnd)/cwnd, per SMSS acknowledged.
        self.carry += (target - cwnd_segments) / cwnd_segments * segments_acked * self.smss.as_bytes() as f64;
        let whole = self.carry.floor();
        self.carry -= whole;
        cwnd + DataSize::bytes(whole as u64)
    }

    /// A congestion event (fast retransmit): W_max with fast convergence (§4.7), cwnd_prior,
    /// and ssthresh = max(cwnd·β_cubic, 2·SMSS) (§4.6, Figure 5, in the form that uses cwnd
    /// rather than flight_size, as Linux does; the sender grows cwnd only while it is
    /// cwnd-limited, which §4.6 requires of that form). The next stage starts at the first ACK
    /// of congestion avoidance.
    pub fn on_congestion_event(&mut self, cwnd: DataSize) -> DataSize {
        let cwnd_segments = self.segments(cwnd);
        self.w_max = Some(match self.w_max {
            // §4.7: the saturation point is falling; release bandwidth to newer flows.
            Some(w_max) if cwnd_segments < w_max => cwnd_segments * (1.0 + BETA_CUBIC) / 2.0,
            _ => cwnd_segments,
        });
        self.cwnd_prior = cwnd_segments;
        self.epoch = None;
        self.carry = 0.0;
        (cwnd * BETA_CUBIC).max(self.smss * 2)
    }

    /// A retransmission timeout (§4.8): ssthresh as for any congestion event; the first stage
    /// afterwards has K = 0 and W_max = cwnd_epoch.
    pub fn on_timeout(&mut self, cwnd: DataSize) -> DataSize {
        let ssthresh = self.on_congestion_event(cwnd);
        self.w_max = None;
        ssthresh
    }

    /// HyStart++ ended slow start without a loss (§4.10): cwnd_prior = cwnd, and the first stage
    /// has K = 0 and W_max = cwnd_epoch.
    pub fn on_slow_start_exit(&mut self, cwnd: DataSize) {
        self.cwnd_prior = self.segments(cwnd);
        self.w_max = None;
        self.epoch = None;
    }

    /// The sender restarts after an idle period: t must not include it (§4.2, §5.8), so the
    /// next ACK in congestion avoidance starts a new stage.
    pub fn on_idle_restart(&mut self) {
        self.epoch = None;
        self.carry = 0.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: DataSize = DataSize::bytes(1000);

    fn segs(n: f64) -> DataSize {
        DataSize::bytes((n * 1000.0) as u64)
    }

    /// Feeds one ACK per segment, evenly spread over each round trip of `rtt`, from `from` to
    /// `until`; returns (t since `from`, cwnd in segments) at the start of every round trip.
    fn ack_clock(
        cubic: &mut Cubic,
        cwnd: &mut DataSize,
        rtt: Duration,
        from: Instant,
        until: Instant,
    ) -> Vec<(f64, f64)> {
        let mut samples = Vec::new();
        let mut now = from;
        while now < until {
            samples.push(((now - from).as_secs_f64(), cwnd.as_bytes() as f64 / 1000.0));
            let acks = cwnd.as_bytes() / MSS.as_bytes();
            let spacing = rtt / acks as i64;
            for _ in 0..acks {
                now += spacing;
                *cwnd = cubic.on_ack(now, *cwnd, MSS, rtt);
            }
        }
        samples
    }

    /// The closed form: after a loss at W_max = 400 segments and a 100 ms RTT, cwnd follows
    /// W(t) = C(t − K)³ + W_max with K = cbrt(W_max(1 − β)/C) ≈ 6.69 s, through the concave
    /// plateau and into the convex region, within 0.5 %. (With a window this large the
    /// Reno-friendly estimate stays below the curve: W_est ≈ 280 + 0.53 per RTT.)
    #[test]
    fn window_follows_the_cubic_curve_between_losses() {
        let mut cubic = Cubic::new(MSS);
        let ssthresh = cubic.on_congestion_event(segs(400.0));
        assert_eq!(ssthresh, segs(280.0));
        let mut cwnd = ssthresh;
        let t0 = Instant::from_secs(10);
        let samples =
            ack_clock(&mut cubic, &mut cwnd, Duration::from_millis(100), t0, t0 + Duration::from_secs(10));
        let k = (400.0 * (1.0 - BETA_CUBIC) / C).cbrt();
        assert!((k - 6.694).abs() < 1e-3);
        for (t, w) in samples {
            let expected = C * (t - k).powi(3) + 400.0;
            assert!(
                (w - expected).abs() <= 0.005 * expected,
                "t = {t:.1} s: cwnd {w:.2}, W(t) {expected:.2}"
            );
        }
        assert!(cwnd > segs(410.0), "convex growth past W_max: {cwnd}");
    }

    /// At a short RTT Reno's estimate grows faster than the cubic curve: cwnd = W_est, growing
    /// by α_cubic per RTT until it reaches cwnd_prior, then by one segment per RTT (§4.3).
    #[test]
    fn reno_friendly_region_at_short_rtt() {
        let mut cubic = Cubic::new(MSS);
        cubic.on_congestion_event(segs(20.0));
        let mut cwnd = segs(14.0);
        let t0 = Instant::from_secs(1);
        let rtt = Duration::from_millis(5);
        let samples = ack_clock(&mut cubic, &mut cwnd, rtt, t0, t0 + Duration::from_millis(500));
        let epoch = *cubic.epoch().unwrap();
        assert!(epoch.w_cubic(0.5) < epoch.w_est);
        // 6 segments at ~0.53 per RTT take ~11.3 RTTs; the remaining ~88 RTTs add ~1 each.
        let (_, last) = samples[samples.len() - 1];
        assert!((last - (20.0 + 86.0)).abs() < 4.0, "cwnd {last:.1}");
        let (_, after_10_rtts) = samples[10];
        assert!((after_10_rtts - (14.0 + 10.0 * ALPHA_CUBIC)).abs() < 0.6, "{after_10_rtts:.2}");
    }

    #[test]
    fn fast_convergence_lowers_w_max_when_the_window_shrinks() {
        let mut cubic = Cubic::new(MSS);
        cubic.on_congestion_event(segs(100.0));
        cubic.on_congestion_event(segs(80.0));
        let mut cwnd = segs(56.0);
        cwnd = cubic.on_ack(Instant::from_secs(1), cwnd, MSS, Duration::from_millis(100));
        let epoch = cubic.epoch().unwrap();
        assert!((epoch.w_max - 80.0 * 0.85).abs() < 1e-9);
        assert!((epoch.k - ((68.0 - 56.0) / C).cbrt()).abs() < 1e-9);
        assert!(cwnd >= segs(56.0));
    }

    #[test]
    fn after_a_timeout_the_curve_starts_at_its_inflection_point() {
        let mut cubic = Cubic::new(MSS);
        assert_eq!(cubic.on_timeout(segs(40.0)), segs(28.0));
        // Slow start back to ssthresh happens in the sender; the stage starts at 28 segments.
        cubic.on_ack(Instant::from_secs(3), segs(28.0), MSS, Duration::from_millis(100));
        let epoch = cubic.epoch().unwrap();
        assert_eq!((epoch.k, epoch.w_max), (0.0, 28.0));
        // The two-segment floor of Figure 5.
        assert_eq!(cubic.on_congestion_event(segs(2.0)), segs(2.0));
    }
}
