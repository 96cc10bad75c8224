//! Adaptive modulation and coding: the chain from channel quality to bits per TTI,
//! SINR → CQI → MCS → I_TBS → TBS ([`super::tbs`]), and the cell's resource grid per bandwidth.
//!
//! Spectral efficiencies per CQI and per MCS are those of 3GPP R1-081483 (`TBS_support.xls`,
//! rounded to two decimals), as ns-3's `lte-amc.cc` uses them; TS 36.213 Table 7.2.3-1 gives the
//! CQI efficiencies to four decimals, and rounding decides ties (CQI 7, 1.4766 bit/s/Hz, would
//! map to MCS 11 instead of 12), so the two-decimal values keep ns-3's mapping.

use serde::{Deserialize, Serialize};

/// Spectral efficiency, bit/s/Hz, per CQI 0..=15 (0: out of range, nothing can be sent).
pub const SE_CQI: [f64; 16] =
    [0.0, 0.15, 0.23, 0.38, 0.60, 0.88, 1.18, 1.48, 1.91, 2.41, 2.73, 3.32, 3.90, 4.52, 5.12, 5.55];

/// Spectral efficiency, bit/s/Hz, per MCS 0..=28.
pub const SE_MCS: [f64; 29] = [
    0.15, 0.19, 0.23, 0.31, 0.38, 0.49, 0.60, 0.74, 0.88, 1.03, 1.18, 1.33, 1.48, 1.70, 1.91, 2.16, 2.41,
    2.57, 2.73, 3.03, 3.32, 3.61, 3.90, 4.21, 4.52, 4.82, 5.12, 5.33, 5.55,
];

/// I_TBS per MCS on the PDSCH: TS 36.213 Table 7.1.7.1-1 (MCS 10 and 17 repeat the I_TBS below
/// them at the next modulation order).
pub const DL_MCS_TO_ITBS: [u8; 29] =
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 10, 11, 12, 13, 14, 15, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26];

/// I_TBS per MCS on the PUSCH: TS 36.213 Table 8.6.1-1 (MCS 11 and 21 repeat).
pub const UL_MCS_TO_ITBS: [u8; 29] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 19, 20, 21, 22, 23, 24, 25, 26,
];

/// The highest MCS index that carries data (29..=31 are reserved for retransmissions).
pub const MAX_MCS: u8 = 28;

/// BER, the target bit error rate of the SINR → CQI rule below (ns-3's `LteAmc::Ber`).
pub const TARGET_BER: f64 = 5e-5;

/// Γ = −ln(5·BER) / 1.5, the SNR gap of the rule, ≈ 5.53 (7.43 dB) at BER 5·10⁻⁵.
pub fn snr_gap() -> f64 {
    -(5.0 * TARGET_BER).ln() / 1.5
}

/// The CQI a UE reports for a wideband SINR in dB: the spectral efficiency
/// s = log2(1 + SINR/Γ) (Piro et al. 2010, ns-3's `PiroEW2010` AMC model) mapped to the largest
/// CQI whose efficiency is below s (0 when even CQI 1 is not).
pub fn cqi_from_sinr_db(sinr_db: f64) -> u8 {
    let sinr = 10f64.powf(sinr_db / 10.0);
    let s = (1.0 + sinr / snr_gap()).log2();
    let mut cqi = 0u8;
    while cqi < 15 && SE_CQI[usize::from(cqi) + 1] < s {
        cqi += 1;
    }
    cqi
}

/// The MCS the scheduler uses for a CQI: the largest whose spectral efficiency does not exceed
/// the CQI's (ns-3 `LteAmc::GetMcsFromCqi`). CQI 0 gives 0, but a UE at CQI 0 is not scheduled.
pub fn mcs_from_cqi(cqi: u8) -> u8 {
    let se = SE_CQI[usize::from(cqi.min(15))];
    let mut mcs = 0u8;
    while mcs < MAX_MCS && SE_MCS[usize::from(mcs) + 1] <= se {
        mcs += 1;
    }
    mcs
}

/// The SINR, dB, at which a UE starts reporting `cqi` (the inverse of [`cqi_from_sinr_db`]):
/// SINR = Γ·(2^SE − 1). For tests and documentation.
pub fn sinr_threshold_db(cqi: u8) -> f64 {
    let se = SE_CQI[usize::from(cqi.min(15))];
    10.0 * (snr_gap() * (2f64.powf(se) - 1.0)).log10()
}

/// A channel bandwidth of TS 36.101 Table 5.6-1, with its number of resource blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Bandwidth {
    #[serde(rename = "1.4MHz")]
    Mhz1_4,
    #[serde(rename = "3MHz")]
    Mhz3,
    #[serde(rename = "5MHz")]
    Mhz5,
    #[serde(rename = "10MHz")]
    Mhz10,
    #[serde(rename = "15MHz")]
    Mhz15,
    #[serde(rename = "20MHz")]
    Mhz20,
}

impl Bandwidth {
    pub const ALL: [Self; 6] = [Self::Mhz1_4, Self::Mhz3, Self::Mhz5, Self::Mhz10, Self::Mhz15, Self::Mhz20];

    /// N_RB, the transmission bandwidth in resource blocks (TS 36.101 Table 5.6-1), the same in
    /// both directions.
    pub const fn prb(self) -> u16 {
        match self {
            Self::Mhz1_4 => 6,
            Self::Mhz3 => 15,
            Self::Mhz5 => 25,
            Self::Mhz10 => 50,
            Self::Mhz15 => 75,
            Self::Mhz20 => 100,
        }
    }

    /// P, the resource-block-group size of downlink resource allocation type 0
    /// (TS 36.213 Table 7.1.6.1-1): 1 up to 10 PRB, 2 up to 26, 3 up to 63, 4 up to 110.
    pub const fn rbg_size(self) -> u16 {
        match self.prb() {
            0..=10 => 1,
            11..=26 => 2,
            27..=63 => 3,
            _ => 4,
        }
    }

    /// Downlink RBGs the scheduler allocates: only whole groups, floor(N_RB / P), as ns-3's
    /// schedulers do (TS 36.213 allows a last, smaller group; at 5 MHz that leaves 1 of the 25 PRB
    /// unused, so the downlink carries 24).
    pub const fn dl_rbgs(self) -> u16 {
        self.prb() / self.rbg_size()
    }

    /// The MHz figure, for messages.
    pub const fn mhz(self) -> &'static str {
        match self {
            Self::Mhz1_4 => "1.4",
            Self::Mhz3 => "3",
            Self::Mhz5 => "5",
            Self::Mhz10 => "10",
            Self::Mhz15 => "15",
            Self::Mhz20 => "20",
        }
    }
}

/// Upper bounds, bytes, of the 64 buffer-size levels of a short or long BSR (TS 36.321 Table
/// 6.1.3.1-1). Level 63 means "more than 150 000 B"; the eNB can only assume 150 000.
pub const BSR_LEVELS: [u32; 64] = [
    0, 10, 12, 14, 17, 19, 22, 26, 31, 36, 42, 49, 57, 67, 78, 91, 107, 125, 146, 171, 200, 234, 274, 321,
    376, 440, 515, 603, 706, 826, 967, 1132, 1326, 1552, 1817, 2127, 2490, 2915, 3413, 3995, 4677, 5476,
    6411, 7505, 8787, 10287, 12043, 14099, 16507, 19325, 22624, 26487, 31009, 36304, 42502, 49759, 58255,
    68201, 79846, 93479, 109439, 128125, 150000, 150000,
];

/// What the eNB learns from a BSR for a buffer of `bytes`: the upper bound of its level.
pub fn bsr_reported(bytes: u64) -> u64 {
    let level = BSR_LEVELS.partition_point(|&b| u64::from(b) < bytes).min(63);
    u64::from(BSR_LEVELS[level])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cqi_chain_of_ns3() {
        // (CQI, MCS): odd CQIs of the chain, and the even ones.
        let odd = [(1, 0), (3, 4), (5, 8), (7, 12), (9, 16), (11, 20), (13, 24), (15, 28)];
        let even = [(2, 2), (4, 6), (6, 10), (8, 14), (10, 18), (12, 22), (14, 26)];
        for (cqi, mcs) in odd.into_iter().chain(even) {
            assert_eq!(mcs_from_cqi(cqi), mcs, "CQI {cqi}");
        }
        let itbs: Vec<u8> = [0u8, 4, 8, 12, 16, 20, 24, 28].map(|m| DL_MCS_TO_ITBS[usize::from(m)]).to_vec();
        assert_eq!(itbs, [0, 4, 8, 11, 15, 18, 22, 26]);
        assert_eq!((UL_MCS_TO_ITBS[20], UL_MCS_TO_ITBS[28]), (19, 26));
    }

    #[test]
    fn sinr_thresholds_of_the_piro_rule() {
        assert!((10.0 * snr_gap().log10() - 7.43).abs() < 0.01);
        // (CQI, threshold dB): −2.2 dB for CQI 1 … 24.0 dB for CQI 15.
        for (cqi, db) in
            [(1, -2.2), (3, 2.2), (5, 6.7), (7, 10.0), (9, 13.8), (11, 17.0), (13, 20.8), (15, 24.0)]
        {
            let t = sinr_threshold_db(cqi);
            assert!((t - db).abs() < 0.06, "CQI {cqi}: {t}");
            assert_eq!(cqi_from_sinr_db(t + 0.01), cqi);
            assert_eq!(cqi_from_sinr_db(t - 0.01), cqi - 1);
        }
        assert_eq!(cqi_from_sinr_db(-20.0), 0);
        assert_eq!(cqi_from_sinr_db(60.0), 15);
    }

    #[test]
    fn resource_grid_per_bandwidth() {
        let grid: Vec<_> = Bandwidth::ALL.iter().map(|b| (b.prb(), b.rbg_size(), b.dl_rbgs())).collect();
        assert_eq!(grid, [(6, 1, 6), (15, 2, 7), (25, 2, 12), (50, 3, 16), (75, 4, 18), (100, 4, 25)]);
    }

    #[test]
    fn bsr_levels() {
        assert_eq!(bsr_reported(0), 0);
        assert_eq!(bsr_reported(1), 10);
        assert_eq!(bsr_reported(10), 10);
        assert_eq!(bsr_reported(11), 12);
        assert_eq!(bsr_reported(1500), 1552);
        assert_eq!(bsr_reported(5_000_000), 150_000);
    }
}
