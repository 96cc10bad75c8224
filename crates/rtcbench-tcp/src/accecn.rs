//! Accurate ECN's CE packet counter (RFC 9768 §3.2.2): the Data Receiver counts CE-marked
//! packets in r.cep and writes its low 3 bits into every ACK's ACE field; the Data Sender keeps
//! s.cep and turns each ACK's ACE value into a count of newly CE-marked packets.
//!
//! Only the ACE field is modelled, not the AccECN option's byte counters (§3.2.3, optional to
//! implement), nor the handshake encoding (§3.2.2.1: the connection starts established) and the
//! mangling and zeroing tests (§3.2.2.3-§3.2.2.4: the simulator's paths neither bleach nor zero).

/// The value r.cep and s.cep start from (RFC 9768 §3.2.2: non-zero, so that a zeroed ACE field
/// can be told apart, §3.2.2.4).
pub const INITIAL_CEP: u64 = 5;
/// The ACE field holds a counter modulo 8.
const ACE_MODULO: u64 = 8;
/// n of the Increment-Triggered ACKs rule (RFC 9768 §3.2.2.5.1): a receiver with unacknowledged
/// data acknowledges at once when this many CE marks arrived since its previous ACK (SHOULD be
/// 2; at most 7 keeps the 3-bit field unambiguous).
pub const INCREMENT_TRIGGER: u64 = 2;

/// The Data Sender's side: s.cep and the decoding of the ACE field (RFC 9768 §3.2.2.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AceDecoder {
    /// s.cep: CE-marked packets the receiver has reported, from [`INITIAL_CEP`].
    s_cep: u64,
}

impl Default for AceDecoder {
    fn default() -> Self {
        Self { s_cep: INITIAL_CEP }
    }
}

impl AceDecoder {
    /// The newly CE-marked packets an ACK reports, given its ACE field and the packets it newly
    /// acknowledged or SACKed, `delivered_packets` (the caller rounds up); s.cep grows by that.
    ///
    /// §3.2.2.2: the least increment is (ACE − s.cep) mod 8, assuming the field wrapped at most
    /// once. §3.2.2.5.2: if the ACK covers more packets than that, the counter may have cycled;
    /// without the AccECN option the sender takes "the safest likely case", here the most
    /// cycles the delivered packets allow (each cycle is 8 more CE-marked packets). If the
    /// least increment exceeds the delivered packets, the ACE counter is trusted.
    pub fn on_ack(&mut self, ace: u8, delivered_packets: u64) -> u64 {
        let least = (u64::from(ace) + ACE_MODULO - self.s_cep % ACE_MODULO) % ACE_MODULO;
        let cycles = delivered_packets.saturating_sub(least) / ACE_MODULO;
        let newly = least + cycles * ACE_MODULO;
        self.s_cep += newly;
        newly
    }

    /// CE-marked packets reported so far (s.cep less its initial value).
    pub fn ce_packets(&self) -> u64 {
        self.s_cep - INITIAL_CEP
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::TcpFlags;

    /// The receiver's counter as the ACE field carries it.
    fn ace(r_cep: u64) -> u8 {
        TcpFlags::ACK.with_ace(r_cep as u32).ace()
    }

    #[test]
    fn counts_follow_the_receiver_across_the_wrap() {
        let mut d = AceDecoder::default();
        // r.cep goes 5, 6, 8 (wraps to 0), 8, 15 (0b111), 17 (0b001): each ACK acknowledges two
        // packets, so at most two marks each, except the jump of 7 which the ACE trusts.
        let mut r_cep = INITIAL_CEP;
        for (marks, expected_total) in [(0, 0), (1, 1), (2, 3), (0, 3), (7, 10), (2, 12)] {
            r_cep += marks;
            assert_eq!(d.on_ack(ace(r_cep), 2), marks, "r.cep {r_cep}");
            assert_eq!(d.ce_packets(), expected_total);
        }
    }

    /// §3.2.2.5.2: an ACK after a run of lost ACKs covers 20 packets and its ACE moved by 3: 3,
    /// 11 or 19 marks are possible, and the sender assumes 19.
    #[test]
    fn a_possibly_cycled_counter_takes_the_safest_case() {
        let mut d = AceDecoder::default();
        assert_eq!(d.on_ack(ace(INITIAL_CEP + 3), 20), 19);
        // Exactly 8 packets, ACE unchanged: 0 or 8 marks, 8 assumed.
        let mut d = AceDecoder::default();
        assert_eq!(d.on_ack(ace(INITIAL_CEP), 8), 8);
        assert_eq!(d.on_ack(ace(INITIAL_CEP), 7), 0);
    }
}
