//! The retransmission timer's RTT estimator (RFC 6298 §2) with exponential backoff (§5.5).
//!
//! Samples follow Karn's rule (§3): the sender only offers samples from segments that were
//! never retransmitted.
//!
//! The floor and ceiling are Linux's, and so is where the floor applies: Linux computes
//! RTO = SRTT + max(4·RTTVAR, `TCP_RTO_MIN` = 200 ms) (`tcp_set_rto`), where RFC 6298 §2.4
//! raises the whole RTO to at least 1 s. Flooring the sum at 200 ms instead would leave an
//! RTO barely above SRTT on a path with a steady RTT above 200 ms (a full buffer), and every
//! fast retransmit would be followed by a spurious timeout. The ceiling is Linux's
//! `TCP_RTO_MAX`, 120 s (RFC 6298 §2.5 allows any ceiling of at least 60 s).

use rtcbench_units::Duration;

/// K in RFC 6298 §2.
const K: i64 = 4;
/// G, the clock granularity of RFC 6298 §2: Linux's jiffy at HZ = 1000.
const CLOCK_GRANULARITY: Duration = Duration::from_millis(1);
/// RFC 6298 §2.1: the RTO before any sample.
pub const INITIAL_RTO: Duration = Duration::from_secs(1);
/// Linux `TCP_RTO_MIN`: the least margin of the RTO above SRTT.
pub const MIN_RTO: Duration = Duration::from_millis(200);
/// Linux `TCP_RTO_MAX`.
pub const MAX_RTO: Duration = Duration::from_secs(120);

/// SRTT, RTTVAR and RTO of RFC 6298, and the backoff applied after timeouts.
#[derive(Clone, Debug)]
pub struct RttEstimator {
    /// SRTT, the smoothed round-trip time (§2); `None` before the first sample.
    srtt: Option<Duration>,
    /// RTTVAR, the round-trip time variation (§2).
    rttvar: Duration,
    /// RTO computed from the latest sample, before backoff.
    base_rto: Duration,
    /// Timeouts since the last valid sample: the RTO is doubled this many times (§5.5).
    backoff: u32,
    min_rto: Duration,
    max_rto: Duration,
}

impl RttEstimator {
    pub fn new(initial_rto: Duration, min_rto: Duration, max_rto: Duration) -> Self {
        Self { srtt: None, rttvar: Duration::ZERO, base_rto: initial_rto, backoff: 0, min_rto, max_rto }
    }

    /// Takes a round-trip time measurement R (§2.2, §2.3) and recomputes the RTO; a valid sample
    /// also ends any backoff (§5.7 read with Karn's rule: the backed-off RTO is kept until an
    /// acknowledgment of a segment that was not retransmitted).
    pub fn on_sample(&mut self, r: Duration) {
        match self.srtt {
            // §2.2: SRTT <- R, RTTVAR <- R/2.
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            // §2.3 with alpha = 1/8, beta = 1/4; RTTVAR is updated with the old SRTT.
            Some(srtt) => {
                self.rttvar = (self.rttvar * 3 + (srtt - r).abs()) / 4;
                self.srtt = Some((srtt * 7 + r) / 8);
            }
        }
        let srtt = self.srtt.unwrap_or(r);
        // §2.2/§2.3: RTO <- SRTT + max(G, K*RTTVAR), with Linux's floor on the variance term
        // (see the module docs) and the §2.5 ceiling.
        let variance = CLOCK_GRANULARITY.max(self.rttvar * K).max(self.min_rto);
        self.base_rto = (srtt + variance).min(self.max_rto);
        self.backoff = 0;
    }

    /// §5.5: after a timeout, RTO <- RTO * 2, up to the ceiling.
    pub fn back_off(&mut self) {
        if self.rto() < self.max_rto {
            self.backoff += 1;
        }
    }

    /// The RTO in force, backoff included.
    pub fn rto(&self) -> Duration {
        let mut rto = self.base_rto;
        for _ in 0..self.backoff {
            rto = (rto * 2).min(self.max_rto);
        }
        rto
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: i64) -> Duration {
        Duration::from_millis(v)
    }

    fn estimator() -> RttEstimator {
        RttEstimator::new(INITIAL_RTO, MIN_RTO, MAX_RTO)
    }

    #[test]
    fn first_sample_sets_srtt_and_half_rttvar() {
        let mut e = estimator();
        assert_eq!(e.rto(), ms(1000)); // §2.1
        e.on_sample(ms(100));
        assert_eq!((e.srtt(), e.rttvar()), (Some(ms(100)), ms(50)));
        assert_eq!(e.rto(), ms(300)); // 100 + 4 * 50
    }

    #[test]
    fn later_samples_smooth_with_one_eighth_and_one_quarter() {
        let mut e = estimator();
        e.on_sample(ms(100));
        e.on_sample(ms(200));
        // RTTVAR = 3/4 * 50 + 1/4 * |100 - 200| = 62.5; SRTT = 7/8 * 100 + 1/8 * 200 = 112.5.
        assert_eq!(e.rttvar(), Duration::from_micros(62_500));
        assert_eq!(e.srtt(), Some(Duration::from_micros(112_500)));
        assert_eq!(e.rto(), Duration::from_micros(362_500));
    }

    #[test]
    fn the_linux_floor_applies_to_the_variance_term() {
        let mut e = estimator();
        for _ in 0..50 {
            e.on_sample(ms(10));
        }
        assert_eq!(e.rto(), ms(210));
        // A steady 250 ms RTT: the RTO settles 200 ms above it (integer smoothing stops a few
        // microseconds short).
        for _ in 0..200 {
            e.on_sample(ms(250));
        }
        assert!((e.rto() - ms(450)).abs() < Duration::from_micros(10), "{}", e.rto());
    }

    #[test]
    fn backoff_doubles_up_to_the_ceiling_and_a_sample_ends_it() {
        let mut e = estimator();
        e.on_sample(ms(100));
        e.back_off();
        e.back_off();
        assert_eq!(e.rto(), ms(1200));
        for _ in 0..20 {
            e.back_off();
        }
        assert_eq!(e.rto(), MAX_RTO);
        e.on_sample(ms(100));
        assert!(e.rto() < ms(400), "{}", e.rto());
    }
}
