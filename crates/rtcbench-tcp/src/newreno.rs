//! Reno's congestion avoidance and multiplicative decrease (RFC 5681 §3.1).
//!
//! Congestion avoidance counts acknowledged bytes (RFC 3465 §2.1, as Linux counts acknowledged
//! segments in `tcp_cong_avoid_ai`): cwnd grows by one SMSS per cwnd of acknowledged data, so
//! by one SMSS per round trip with or without delayed ACKs. Slow start and the NewReno
//! fast-recovery algorithm (RFC 6582) belong to the sender, which runs them for either
//! congestion controller.

use rtcbench_units::DataSize;

/// Reno's window arithmetic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewReno {
    smss: DataSize,
    /// bytes_acked of RFC 3465 §2.1: acknowledged bytes not yet turned into window growth.
    bytes_acked: DataSize,
}

impl NewReno {
    pub fn new(smss: DataSize) -> Self {
        Self { smss, bytes_acked: DataSize::ZERO }
    }

    /// Congestion avoidance for an ACK of `acked` new bytes (RFC 3465 §2.1): once bytes_acked
    /// reaches cwnd, it is reduced by cwnd and cwnd grows by SMSS.
    pub fn on_ack(&mut self, cwnd: DataSize, acked: DataSize) -> DataSize {
        self.bytes_acked += acked;
        if self.bytes_acked >= cwnd {
            self.bytes_acked -= cwnd;
            cwnd + self.smss
        } else {
            cwnd
        }
    }

    /// ssthresh after a loss or a timeout ([`reno_ssthresh`]). RFC 5681 §3.1 eq. (4) halves
    /// FlightSize instead, because cwnd may have grown far beyond what an application-limited
    /// sender used; here cwnd only grows while it limits the sender,
    /// and FlightSize (which counts SACKed data) can exceed cwnd several times over when a loss
    /// is detected right after a recovery with many holes.
    pub fn on_congestion_event(&mut self, cwnd: DataSize) -> DataSize {
        self.bytes_acked = DataSize::ZERO;
        reno_ssthresh(cwnd, self.smss)
    }
}

/// Reno's multiplicative decrease: max(cwnd / 2, 2·SMSS), Linux's `tcp_reno_ssthresh`. Prague
/// responds to loss the same way.
pub fn reno_ssthresh(cwnd: DataSize, smss: DataSize) -> DataSize {
    DataSize::bytes(cwnd.as_bytes() / 2).max(smss * 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: DataSize = DataSize::bytes(1000);

    #[test]
    fn one_smss_per_window_of_acknowledged_bytes() {
        let mut r = NewReno::new(MSS);
        let mut cwnd = MSS * 10;
        // Delayed ACKs: five ACKs of two segments each acknowledge one window.
        for _ in 0..4 {
            cwnd = r.on_ack(cwnd, MSS * 2);
        }
        assert_eq!(cwnd, MSS * 10);
        cwnd = r.on_ack(cwnd, MSS * 2);
        assert_eq!(cwnd, MSS * 11);
        // The next increase needs 11 segments.
        for _ in 0..10 {
            cwnd = r.on_ack(cwnd, MSS);
        }
        assert_eq!(cwnd, MSS * 11);
        assert_eq!(r.on_ack(cwnd, MSS), MSS * 12);
    }

    #[test]
    fn loss_halves_the_window_with_a_two_segment_floor() {
        let mut r = NewReno::new(MSS);
        r.on_ack(MSS * 10, MSS * 5);
        assert_eq!(r.on_congestion_event(MSS * 20), MSS * 10);
        assert_eq!(r.on_congestion_event(MSS * 3), MSS * 2);
        // The byte counter restarts after a reduction.
        assert_eq!(r.on_ack(MSS * 2, MSS), MSS * 2);
    }
}
