//! Proportional Rate Reduction (RFC 6937 §3) with the slow-start reduction bound (PRR-SSRB,
//! the variant RFC 6937 §6 recommends and Linux uses): how much may be sent on each ACK during
//! fast recovery so that cwnd goes smoothly from FlightSize to ssthresh.
//!
//! The sender sets `cwnd = pipe + sndcnt` after every ACK in recovery, as Linux's
//! `tcp_cwnd_reduction` does, and transmits while `cwnd − pipe ≥ SMSS`.

use rtcbench_units::DataSize;

/// The PRR state of one recovery episode (RFC 6937 §3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prr {
    /// RecoverFS: FlightSize (snd.nxt − snd.una) at the start of recovery.
    recover_fs: DataSize,
    /// prr_delivered: bytes delivered to the receiver since recovery started.
    prr_delivered: DataSize,
    /// prr_out: bytes sent since recovery started.
    prr_out: DataSize,
    smss: DataSize,
}

impl Prr {
    /// Initialisation at the start of recovery: prr_delivered = prr_out = 0.
    pub fn new(recover_fs: DataSize, smss: DataSize) -> Self {
        Self {
            recover_fs: recover_fs.max(smss),
            prr_delivered: DataSize::ZERO,
            prr_out: DataSize::ZERO,
            smss,
        }
    }

    /// sndcnt for an ACK that delivered `delivered` bytes (DeliveredData), with `pipe` computed
    /// after the ACK.
    pub fn on_ack(&mut self, delivered: DataSize, pipe: DataSize, ssthresh: DataSize) -> DataSize {
        self.prr_delivered += delivered;
        let sndcnt = if pipe > ssthresh {
            // Proportional rate reduction: CEIL(prr_delivered * ssthresh / RecoverFS) - prr_out.
            let share = (u128::from(self.prr_delivered.as_bytes()) * u128::from(ssthresh.as_bytes()))
                .div_ceil(u128::from(self.recover_fs.as_bytes()));
            DataSize::bytes(share as u64).saturating_sub(self.prr_out)
        } else {
            // PRR-SSRB: limit = MAX(prr_delivered - prr_out, DeliveredData) + MSS.
            let limit = self.prr_delivered.saturating_sub(self.prr_out).max(delivered) + self.smss;
            (ssthresh - pipe).min(limit)
        };
        // The fast retransmit goes out on the ACK that starts recovery whatever the proportion
        // allows (RFC 6675 §5 step 4.3); Linux: sndcnt = max(sndcnt, prr_out ? 0 : 1).
        if self.prr_out.is_zero() {
            sndcnt.max(self.smss)
        } else {
            sndcnt
        }
    }

    /// prr_out += data sent, for every transmission or retransmission during recovery.
    pub fn on_sent(&mut self, bytes: DataSize) {
        self.prr_out += bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn segs(n: u64) -> DataSize {
        DataSize::bytes(n * MSS)
    }

    /// RFC 6937 §3.1's single-loss example: cwnd = FlightSize = pipe = 20 segments, ssthresh
    /// 10. PRR releases one segment per two delivered. Byte-exact arithmetic sends a segment
    /// once a whole SMSS is allowed (Linux, counting in segments, rounds each share up), so the
    /// proportional part sends 9 segments; the last ACK of the round trip finds pipe below
    /// ssthresh and the reduction bound sends the tenth.
    #[test]
    fn one_loss_sends_half_a_segment_per_delivered_segment() {
        let mut prr = Prr::new(segs(20), DataSize::bytes(MSS));
        let ssthresh = segs(10);
        let mut pipe = 19; // one segment lost
        let mut sent = Vec::new();
        for _ in 0..19 {
            pipe -= 1; // a SACKed segment left the network
            let n = prr.on_ack(segs(1), segs(pipe), ssthresh).as_bytes() / MSS;
            prr.on_sent(segs(n));
            pipe += n;
            sent.push(n);
        }
        // The first ACK sends the fast retransmit.
        assert_eq!(&sent[..6], &[1, 0, 0, 1, 0, 1]);
        assert_eq!((sent.iter().sum::<u64>(), pipe), (10, 10));
    }

    #[test]
    fn below_ssthresh_the_slow_start_bound_catches_up() {
        let mut prr = Prr::new(segs(20), DataSize::bytes(MSS));
        prr.on_sent(segs(1));
        // Heavy loss: pipe fell to 4 segments, far below ssthresh = 10. SSRB allows
        // MAX(prr_delivered - prr_out, DeliveredData) + MSS = max(2 - 1, 2) + 1 = 3 segments,
        // not the whole gap of 6.
        assert_eq!(prr.on_ack(segs(2), segs(4), segs(10)), segs(3));
        // With the gap almost closed, the gap is the limit.
        assert_eq!(prr.on_ack(segs(5), segs(9), segs(10)), segs(1));
    }

    #[test]
    fn proportional_part_rounds_up() {
        let mut prr = Prr::new(DataSize::bytes(3000), DataSize::bytes(MSS));
        prr.on_sent(DataSize::bytes(MSS));
        // CEIL(1001 * 2100 / 3000) = 701 bytes allowed in total, 1000 already sent.
        assert_eq!(
            prr.on_ack(DataSize::bytes(1001), DataSize::bytes(2500), DataSize::bytes(2100)),
            DataSize::ZERO
        );
        // CEIL(3001 * 2100 / 3000) = 2101 - 1000 = 1101.
        assert_eq!(
            prr.on_ack(DataSize::bytes(2000), DataSize::bytes(2500), DataSize::bytes(2100)),
            DataSize::bytes(1101)
        );
    }
}
