//! Per-attempt errors of data MPDUs on a station's link: none, a fixed packet error rate, or a
//! PER that follows the link's SNR through a table per MCS (`docs/wifi.md`, "Errors"). Each MPDU of each
//! transmission attempt fails independently, so a retransmission turns a channel loss into
//! delay; collisions and hidden-station overlaps come on top ([`super::Bss`]). Control frames
//! (ACK, BlockAck) at the basic rates are assumed to get through, as is every PHY header.

use serde::{Deserialize, Serialize};

use super::phy::PhyMode;

/// The error process of a station's link (both directions).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ErrorModel {
    /// Every MPDU that does not collide gets through.
    #[default]
    None,
    /// Each MPDU attempt fails with probability `per`, whatever its length and rate (the
    /// "channel-caused loss" of seed 004).
    Fixed { per: f64 },
    /// The PER of the attempt's MCS and MPDU length at a fixed SNR ([`per_at_snr`]).
    Snr { snr_db: f64 },
}

impl ErrorModel {
    /// The probability that an MPDU of `bytes` sent in `mode` fails.
    pub fn per(&self, mode: &PhyMode, bytes: u64) -> f64 {
        match *self {
            Self::None => 0.0,
            Self::Fixed { per } => per,
            Self::Snr { snr_db } => per_at_snr(mode, snr_db, bytes),
        }
    }
}

/// SNR (dB) at which the PER of a 1458-byte MPDU is 50 %, 10 % and 1 %, per MCS index (HT index
/// mod 8, VHT 0-9): AWGN, BCC, one stream. Read off ns-3's
/// `AwgnErrorTableBcc1458` (`reference/error-rate-tables.cc`, produced with the MATLAB WLAN
/// Toolbox), interpolated on log PER.
const SNR_TABLE_DB: [[f64; 3]; 10] = [
    [0.2, 0.9, 1.5],    // BPSK 1/2
    [3.2, 3.9, 4.5],    // QPSK 1/2
    [5.7, 6.4, 7.1],    // QPSK 3/4
    [8.9, 9.6, 10.4],   // 16-QAM 1/2
    [12.0, 12.7, 13.5], // 16-QAM 3/4
    [16.2, 17.0, 18.0], // 64-QAM 2/3
    [17.5, 18.3, 19.2], // 64-QAM 3/4
    [18.7, 19.6, 20.5], // 64-QAM 5/6
    [22.7, 23.7, 24.7], // 256-QAM 3/4
    [24.2, 25.1, 26.1], // 256-QAM 5/6
];
/// The MPDU length the table is for, and the exponent of the length scaling
/// PER(L) = 1 − (1 − PER_ref)^(L / 1458) (ns-3 `table-based-error-rate-model.cc`).
const TABLE_BYTES: f64 = 1458.0;

/// The PER of an MPDU of `bytes` sent in `mode` at `snr_db`.
///
/// Below the 50 % point the curve is the logistic 1 / (1 + e^(k·(snr − snr50))) with k chosen
/// to pass through the 10 % point (k = ln 9 / (snr10 − snr50), about 2.7 /dB, a fit that follows
/// the table's steepness); above it log10(PER) is interpolated linearly through the 50, 10 and
/// 1 % points and continued beyond the last with the slope of the last segment. Then scaled to
/// the MPDU's length. The table is per stream in AWGN: several streams or fading would need
/// more SNR, which this model leaves to the scenario's choice of SNR. ns-3 uses a separate
/// 32-byte table for MPDUs under 400 bytes; this model scales the 1458-byte curve down instead.
pub fn per_at_snr(mode: &PhyMode, snr_db: f64, bytes: u64) -> f64 {
    let [snr50, snr10, snr1] = SNR_TABLE_DB[mode.modulation_index()];
    let per_ref = if snr_db <= snr50 {
        let k = 9f64.ln() / (snr10 - snr50);
        1.0 / (1.0 + (k * (snr_db - snr50)).exp())
    } else {
        let (lo, hi, log_lo, log_hi) =
            if snr_db <= snr10 { (snr50, snr10, 0.5f64.log10(), -1.0) } else { (snr10, snr1, -1.0, -2.0) };
        let slope = (log_hi - log_lo) / (hi - lo);
        10f64.powf(log_lo + slope * (snr_db - lo))
    };
    1.0 - (1.0 - per_ref).powf(bytes as f64 / TABLE_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn the_curve_passes_through_the_table_points() {
        for mcs in 0..8 {
            let mode = PhyMode::ht(mcs);
            let [s50, s10, s1] = SNR_TABLE_DB[usize::from(mcs)];
            assert!(close(per_at_snr(&mode, s50, 1458), 0.5), "MCS {mcs}");
            assert!(close(per_at_snr(&mode, s10, 1458), 0.1), "MCS {mcs}");
            assert!(close(per_at_snr(&mode, s1, 1458), 0.01), "MCS {mcs}");
        }
        // 50 % → 10 % over 0.7-0.9 dB: the logistic slope is ln 9 / 0.7 ≈ 3.1 /dB for MCS 0.
        let mode = PhyMode::ht(0);
        assert!(per_at_snr(&mode, -5.0, 1458) > 0.999);
        assert!(per_at_snr(&mode, 5.0, 1458) < 1e-6);
    }

    #[test]
    fn longer_mpdus_fail_more_often() {
        let mode = PhyMode::ht(4);
        // PER 10 % at 1458 B: 1 − 0.9² = 19 % at twice the length.
        assert!(close(per_at_snr(&mode, 12.7, 2916), 0.19));
        assert!(per_at_snr(&mode, 12.7, 100) < 0.01);
        assert_eq!(ErrorModel::Fixed { per: 0.2 }.per(&mode, 50), 0.2);
        assert_eq!(ErrorModel::None.per(&mode, 1500), 0.0);
    }
}
