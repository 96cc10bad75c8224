//! The PHY as the MAC sees it: the timing constants of a band, the data rates of non-HT
//! (802.11a/g OFDM), HT (802.11n) and VHT (802.11ac) modes, and how long a PPDU occupies the
//! medium (its TXTIME): 802.11-2020 §17.4.3 (OFDM), §19.4.3 (HT) and §21.4.3 (VHT), as ns-3's
//! `ofdm-phy.cc`, `ht-phy.cc` and `vht-phy.cc` compute them (`docs/wifi.md`, "Constants").
//!
//! Every duration is a whole number of microseconds, as the simulator's clock is: OFDM symbols
//! are 4 µs, and with the short guard interval (3.6-µs symbols) the data field is rounded up to
//! the next 4-µs boundary, which is how IEEE 802.11-2020 computes TXTIME for a short-GI HT-mixed
//! (§19.4.3) or VHT (§21.4.3) PPDU. ns-3 keeps the 3.6-µs multiple instead (`HtPhy::
//! GetPayloadDuration`), so a short-GI PPDU lasts up to 3.6 µs longer here than in ns-3; with
//! the long guard interval (the default, and every validation number) the two agree exactly.

use rtcbench_units::{Bitrate, DataSize, Duration};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The frequency band, which fixes slot, SIFS and the signal extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Band {
    /// 5 GHz OFDM: slot 9 µs, SIFS 16 µs (802.11-2020 Table 17-21, as ns-3's
    /// `wifi-standard-constants.h` codes it).
    Ghz5,
    /// 2.4 GHz ERP/HT: SIFS 10 µs, slot 9 µs if every station supports the short slot, 20 µs
    /// otherwise, and a 6-µs signal extension after every OFDM PPDU (ns-3 `wifi-phy.cc`
    /// Configure80211g and `ofdm-phy.cc` GetSignalExtension).
    Ghz2_4 { short_slot: bool },
}

impl Band {
    /// aSlotTime.
    pub fn slot(self) -> Duration {
        match self {
            Self::Ghz5 | Self::Ghz2_4 { short_slot: true } => Duration::from_micros(9),
            Self::Ghz2_4 { short_slot: false } => Duration::from_micros(20),
        }
    }

    /// aSIFSTime.
    pub fn sifs(self) -> Duration {
        match self {
            Self::Ghz5 => Duration::from_micros(16),
            Self::Ghz2_4 { .. } => Duration::from_micros(10),
        }
    }

    /// The idle time that follows every OFDM PPDU at 2.4 GHz, part of its duration.
    pub fn signal_extension(self) -> Duration {
        match self {
            Self::Ghz5 => Duration::ZERO,
            Self::Ghz2_4 { .. } => Duration::from_micros(6),
        }
    }
}

/// aPPDUMaxTime of HT-mixed and VHT PPDUs (802.11-2020 Table 19-25; ns-3 `wifi-phy-common.cc`).
pub const PPDU_MAX_TIME: Duration = Duration::from_micros(5484);
/// An OFDM symbol with the 800-ns guard interval (ns-3 `ht-phy.cc`: 3.2 µs + GI).
const SYMBOL_LONG_GI_NS: u64 = 4000;
/// An OFDM symbol with the 400-ns guard interval.
const SYMBOL_SHORT_GI_NS: u64 = 3600;
/// Non-HT preamble: L-STF and L-LTF (16 µs) and L-SIG (4 µs) (802.11-2020 §17.3.2).
const NON_HT_PREAMBLE_US: i64 = 20;
/// HT-mixed before the HT-LTFs: L-STF + L-LTF 16, L-SIG 4, HT-SIG 8, HT-STF 4 µs.
const HT_PREAMBLE_BASE_US: i64 = 32;
/// VHT before the VHT-LTFs: L-STF + L-LTF 16, L-SIG 4, VHT-SIG-A 8, VHT-STF 4 µs; VHT-SIG-B
/// (4 µs) follows the LTFs.
const VHT_PREAMBLE_BASE_US: i64 = 32;
const VHT_SIG_B_US: i64 = 4;
/// One HT-LTF or VHT-LTF.
const LTF_US: i64 = 4;
/// SERVICE field bits before the PSDU, and tail bits per BCC encoder after it.
const SERVICE_BITS: u64 = 16;
const TAIL_BITS: u64 = 6;

/// Non-HT OFDM rates (802.11a/g), Mbit/s.
pub const NON_HT_RATES_MBPS: [u8; 8] = [6, 9, 12, 18, 24, 36, 48, 54];

/// Why a PHY mode does not exist.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum PhyError {
    #[error("{0} Mbit/s is not a non-HT OFDM rate (allowed: 6, 9, 12, 18, 24, 36, 48, 54)")]
    NonHtRate(u8),
    #[error("HT MCS {0} does not exist (allowed: 0 to 31)")]
    HtMcs(u8),
    #[error("VHT MCS {0} does not exist (allowed: 0 to 9)")]
    VhtMcs(u8),
    #[error("{0} spatial streams are not supported (allowed: 1 to 4)")]
    Streams(u8),
    #[error("{width} MHz is not a channel width of {what} (allowed: {allowed})")]
    Width { width: u16, what: &'static str, allowed: &'static str },
    #[error("VHT MCS {mcs} with {nss} stream(s) at {width} MHz is excluded by 802.11-2020 §21.5")]
    VhtCombination { mcs: u8, nss: u8, width: u16 },
}

/// How the data field of a PPDU is modulated and coded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum PhyMode {
    /// Non-HT OFDM (802.11a at 5 GHz, ERP-OFDM at 2.4 GHz), 20 MHz.
    NonHt { mbps: u8 },
    /// HT (802.11n) MCS 0-31: MCS i carries i / 8 + 1 spatial streams.
    Ht { mcs: u8, width_mhz: u16, short_gi: bool },
    /// VHT (802.11ac) MCS 0-9 with 1-4 spatial streams.
    Vht { mcs: u8, nss: u8, width_mhz: u16, short_gi: bool },
}

/// Modulation and coding per MCS index (HT index mod 8, VHT index): bits per subcarrier per
/// stream and the code rate as a fraction (802.11-2020 Tables 19-27.. and 21-30.., as ns-3's
/// GetConstellationSize and GetCodeRate list them).
const MODULATION: [(u64, u64, u64); 10] = [
    (1, 1, 2), // BPSK 1/2
    (2, 1, 2), // QPSK 1/2
    (2, 3, 4), // QPSK 3/4
    (4, 1, 2), // 16-QAM 1/2
    (4, 3, 4), // 16-QAM 3/4
    (6, 2, 3), // 64-QAM 2/3
    (6, 3, 4), // 64-QAM 3/4
    (6, 5, 6), // 64-QAM 5/6
    (8, 3, 4), // 256-QAM 3/4 (VHT)
    (8, 5, 6), // 256-QAM 5/6 (VHT)
];

/// The non-HT rate whose modulation and code rate match an MCS index's, which picks the rate of
/// the control response (ns-3 `HtPhy::CalculateNonHtReferenceRate`; 256-QAM maps to 54).
const NON_HT_REFERENCE_MBPS: [u8; 10] = [6, 12, 18, 24, 36, 48, 54, 54, 54, 54];

impl PhyMode {
    /// HT MCS `mcs` at 20 MHz with the long guard interval.
    pub const fn ht(mcs: u8) -> Self {
        Self::Ht { mcs, width_mhz: 20, short_gi: false }
    }

    /// Whether the mode exists.
    pub fn validate(&self) -> Result<(), PhyError> {
        match *self {
            Self::NonHt { mbps } => {
                if !NON_HT_RATES_MBPS.contains(&mbps) {
                    return Err(PhyError::NonHtRate(mbps));
                }
            }
            Self::Ht { mcs, width_mhz, .. } => {
                if mcs > 31 {
                    return Err(PhyError::HtMcs(mcs));
                }
                if !matches!(width_mhz, 20 | 40) {
                    return Err(PhyError::Width { width: width_mhz, what: "HT", allowed: "20, 40" });
                }
            }
            Self::Vht { mcs, nss, width_mhz, .. } => {
                if mcs > 9 {
                    return Err(PhyError::VhtMcs(mcs));
                }
                if !(1..=4).contains(&nss) {
                    return Err(PhyError::Streams(nss));
                }
                if !matches!(width_mhz, 20 | 40 | 80 | 160) {
                    return Err(PhyError::Width {
                        width: width_mhz,
                        what: "VHT",
                        allowed: "20, 40, 80, 160",
                    });
                }
                // §21.5 leaves out the combinations whose bits per symbol do not divide evenly
                // among the BCC encoders: MCS 9 at 20 MHz with 1, 2 or 4 streams, MCS 6 at
                // 80 MHz with 3, MCS 9 at 160 MHz with 3 (ns-3's `IsCombinationAllowed` lists
                // the first two).
                let (bits, num, den) = MODULATION[usize::from(mcs)];
                let cbps = u64::from(nss) * subcarriers(width_mhz) * bits;
                let es = self.bcc_encoders();
                if !(cbps * num).is_multiple_of(den)
                    || !(cbps * num / den).is_multiple_of(es)
                    || !cbps.is_multiple_of(es)
                {
                    return Err(PhyError::VhtCombination { mcs, nss, width: width_mhz });
                }
            }
        }
        Ok(())
    }

    /// Spatial streams.
    pub fn nss(&self) -> u8 {
        match *self {
            Self::NonHt { .. } => 1,
            Self::Ht { mcs, .. } => mcs / 8 + 1,
            Self::Vht { nss, .. } => nss,
        }
    }

    /// The MCS index that selects modulation and code rate (HT index mod 8, VHT index); the
    /// row of the error-rate table ([`super::errors`]). Non-HT rates map to the HT index with
    /// the same modulation and code rate where there is one (9 Mbit/s, BPSK 3/4, to QPSK 1/2's
    /// row, its nearest neighbour).
    pub fn modulation_index(&self) -> usize {
        match *self {
            Self::NonHt { mbps } => match mbps {
                6 => 0,
                9 | 12 => 1,
                18 => 2,
                24 => 3,
                36 => 4,
                48 => 5,
                _ => 6,
            },
            Self::Ht { mcs, .. } => usize::from(mcs % 8),
            Self::Vht { mcs, .. } => usize::from(mcs),
        }
    }

    /// Coded bits per subcarrier and stream: 1 BPSK, 2 QPSK, 4 16-QAM, 6 64-QAM, 8 256-QAM.
    fn bits_per_subcarrier(&self) -> u64 {
        match *self {
            Self::NonHt { mbps } => match mbps {
                6 | 9 => 1,
                12 | 18 => 2,
                24 | 36 => 4,
                _ => 6,
            },
            _ => MODULATION[self.modulation_index()].0,
        }
    }

    fn short_gi(&self) -> bool {
        match *self {
            Self::NonHt { .. } => false,
            Self::Ht { short_gi, .. } | Self::Vht { short_gi, .. } => short_gi,
        }
    }

    fn symbol_ns(&self) -> u64 {
        if self.short_gi() {
            SYMBOL_SHORT_GI_NS
        } else {
            SYMBOL_LONG_GI_NS
        }
    }

    /// N_DBPS, data bits per OFDM symbol: Nss × Nsd × bits per subcarrier × code rate
    /// (802.11-2020 §19.5, §21.5). Non-HT: rate × 4 µs.
    pub fn data_bits_per_symbol(&self) -> u64 {
        match *self {
            Self::NonHt { mbps } => u64::from(mbps) * 4,
            Self::Ht { mcs, width_mhz, .. } => {
                let (bits, num, den) = MODULATION[usize::from(mcs % 8)];
                u64::from(self.nss()) * subcarriers(width_mhz) * bits * num / den
            }
            Self::Vht { mcs, nss, width_mhz, .. } => {
                let (bits, num, den) = MODULATION[usize::from(mcs)];
                u64::from(nss) * subcarriers(width_mhz) * bits * num / den
            }
        }
    }

    /// The PHY data rate, N_DBPS per symbol time (rounded down to the bit/s with short GI:
    /// 26 bits per 3.6 µs is 7 222 222 bit/s).
    pub fn rate(&self) -> Bitrate {
        Bitrate::bps(self.data_bits_per_symbol() * 1_000_000_000 / self.symbol_ns())
    }

    /// N_ES, the number of BCC encoders: one per 320 (HT, long GI) or 350 (HT, short GI) Mbit/s,
    /// one per 540 or 600 Mbit/s for VHT (ns-3 `HtPhy`/`VhtPhy::GetNumberBccEncoders`, read off
    /// the MCS tables of 802.11-2016). One for every rate up to 300 Mbit/s.
    pub fn bcc_encoders(&self) -> u64 {
        let per_encoder_mbps = match *self {
            Self::NonHt { .. } => return 1,
            Self::Ht { short_gi, .. } => {
                if short_gi {
                    350
                } else {
                    320
                }
            }
            Self::Vht { short_gi, .. } => {
                if short_gi {
                    600
                } else {
                    540
                }
            }
        };
        self.rate().as_bps().div_ceil(per_encoder_mbps * 1_000_000)
    }

    /// The preamble and PHY header before the data field: 20 µs non-HT; HT-mixed 32 + 4 µs per
    /// HT-LTF (1, 2, 4, 4 LTFs for 1-4 streams: 36, 40, 48, 48 µs); VHT 32 + 4 µs per VHT-LTF
    /// and 4 µs of VHT-SIG-B (40 µs for one stream). ns-3 leaves VHT-SIG-B out of single-user
    /// PPDUs (`VhtPhy::GetSigBDuration`), but it is a field of every VHT PPDU
    /// (802.11-2020 §21.3.2; MathWorks WLAN Toolbox, "VHT PPDU Structure"), so we keep it.
    pub fn preamble(&self) -> Duration {
        let ltfs = match self.nss() {
            1 => 1,
            2 => 2,
            _ => 4,
        };
        Duration::from_micros(match self {
            Self::NonHt { .. } => NON_HT_PREAMBLE_US,
            Self::Ht { .. } => HT_PREAMBLE_BASE_US + LTF_US * ltfs,
            Self::Vht { .. } => VHT_PREAMBLE_BASE_US + LTF_US * ltfs + VHT_SIG_B_US,
        })
    }

    /// The airtime arithmetic of this mode in `band`, with its divisions done once.
    pub(crate) fn airtime(&self, band: Band) -> Airtime {
        Airtime {
            preamble: self.preamble(),
            data_bits_per_symbol: self.data_bits_per_symbol(),
            tail_bits: TAIL_BITS * self.bcc_encoders(),
            short_gi: self.short_gi(),
            extension: band.signal_extension(),
        }
    }

    /// TXTIME of a PPDU carrying a PSDU of `psdu` bytes: preamble + data symbols (+ the 2.4 GHz
    /// signal extension). Non-HT: 20 µs + 4 µs × ceil((16 + 8·L + 6) / N_DBPS) (802.11-2020 §17.4.3).
    pub fn ppdu_duration(&self, psdu: DataSize, band: Band) -> Duration {
        self.airtime(band).ppdu(psdu.as_bytes())
    }

    /// The non-HT rate with this mode's modulation and code rate (Mbit/s).
    pub fn non_ht_reference_mbps(&self) -> u8 {
        match *self {
            Self::NonHt { mbps } => mbps,
            _ => NON_HT_REFERENCE_MBPS[self.modulation_index()],
        }
    }

    /// The modes a rate adaptation may step through, slowest first: the non-HT rates, or the
    /// MCSs with this mode's stream count, width and guard interval.
    pub(crate) fn ladder(&self) -> Vec<Self> {
        match *self {
            Self::NonHt { .. } => NON_HT_RATES_MBPS.iter().map(|&mbps| Self::NonHt { mbps }).collect(),
            Self::Ht { mcs, width_mhz, short_gi } => {
                let base = mcs / 8 * 8;
                (base..base + 8).map(|mcs| Self::Ht { mcs, width_mhz, short_gi }).collect()
            }
            Self::Vht { nss, width_mhz, short_gi, .. } => (0..=9)
                .map(|mcs| Self::Vht { mcs, nss, width_mhz, short_gi })
                .filter(|m| m.validate().is_ok())
                .collect(),
        }
    }
}

/// [`PhyMode::ppdu_duration`] for one mode and band, computed per frame on the simulator's
/// per-packet path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Airtime {
    preamble: Duration,
    data_bits_per_symbol: u64,
    /// 6 per BCC encoder.
    tail_bits: u64,
    short_gi: bool,
    extension: Duration,
}

impl Airtime {
    /// TXTIME of a PPDU whose PSDU is `bytes` long: ceil((16 + 8·bytes + 6·N_ES) / N_DBPS)
    /// data symbols after the preamble.
    #[inline]
    pub(crate) fn ppdu(&self, bytes: u64) -> Duration {
        let symbols = (SERVICE_BITS + 8 * bytes + self.tail_bits).div_ceil(self.data_bits_per_symbol);
        self.preamble + self.symbols(symbols) + self.extension
    }

    /// From the start of a PPDU to the end of the symbol that carries its byte `bytes` (counted
    /// from the PSDU's first byte): when the MPDU that ends there has been received. Used to
    /// decide which MPDUs of an A-MPDU an interference that starts part-way spares.
    #[inline]
    pub(crate) fn byte_offset(&self, bytes: u64) -> Duration {
        let symbols = (SERVICE_BITS + 8 * bytes).div_ceil(self.data_bits_per_symbol);
        self.preamble + self.symbols(symbols)
    }

    /// The duration of `symbols` data symbols; with short GI rounded up to a multiple of 4 µs
    /// (TXTIME of 802.11-2020 §19.4.3 and §21.4.3): 3.6·N µs → 4·ceil(0.9·N).
    #[inline]
    fn symbols(&self, symbols: u64) -> Duration {
        let us = if self.short_gi { 4 * (9 * symbols).div_ceil(10) } else { 4 * symbols };
        Duration::from_micros(us as i64)
    }
}

/// Data subcarriers Nsd per channel width (802.11-2020 §19.3.5; ns-3 `GetUsableSubcarriers`).
fn subcarriers(width_mhz: u16) -> u64 {
    match width_mhz {
        40 => 108,
        80 => 234,
        160 => 468,
        _ => 52,
    }
}

/// Sizes of the MAC frames the model builds (802.11-2020 §9.3).
pub mod frame {
    use rtcbench_units::DataSize;

    /// ACK and CTS.
    pub const ACK: DataSize = DataSize::bytes(14);
    pub const CTS: DataSize = DataSize::bytes(14);
    pub const RTS: DataSize = DataSize::bytes(20);
    pub const BLOCK_ACK_REQ: DataSize = DataSize::bytes(24);
    /// Compressed BlockAck (64-bit bitmap).
    pub const BLOCK_ACK: DataSize = DataSize::bytes(32);
    /// QoS data MAC header (26 B) + FCS (4 B) + LLC/SNAP (8 B, RFC 1042) around an IP packet:
    /// a 1500-B IP packet is a 1538-B MPDU.
    pub const QOS_DATA_OVERHEAD: DataSize = DataSize::bytes(26 + 4 + 8);
    /// Non-QoS data header (24 B) + FCS + LLC/SNAP.
    pub const DATA_OVERHEAD: DataSize = DataSize::bytes(24 + 4 + 8);
    /// A-MPDU subframe delimiter; each subframe but the last is padded to a multiple of 4 bytes
    /// (802.11-2020 §9.7; ns-3 `mpdu-aggregator.cc`).
    pub const AMPDU_DELIMITER: DataSize = DataSize::bytes(4);
}

/// The non-HT rate of a control response to a frame sent in `data`: the highest basic rate not
/// above the data mode's non-HT reference rate, or the lowest basic rate if all are above it
/// (the rule ns-3's `WifiRemoteStationManager::GetControlAnswerMode` applies; 802.11-2020 §10.6.6.5).
pub fn control_response_mode(data: &PhyMode, basic_rates_mbps: &[u8]) -> PhyMode {
    let reference = data.non_ht_reference_mbps();
    let mbps = basic_rates_mbps
        .iter()
        .copied()
        .filter(|&r| r <= reference)
        .max()
        .or_else(|| basic_rates_mbps.iter().copied().min())
        .unwrap_or(6);
    PhyMode::NonHt { mbps }
}

/// EstimatedAckTxTime of a frame received in error in `mode`: the response it would have had,
/// at the mandatory rate of its modulation class (BPSK 6, QPSK 12, higher 24 Mbit/s), an ACK for
/// a non-HT frame and a BlockAck for an HT or VHT one. EIFS = SIFS + this + DIFS (802.11-2016
/// §10.3.2.3.7, as ns-3's `GetEstimatedAckTxTime` implements it: 44, 32, 28 µs for non-HT and
/// 68, 44, 32 µs for HT/VHT at 5 GHz). The 60 µs often quoted for EIFS − DIFS at 5 GHz is the
/// BPSK case, the older standard's "lowest mandatory rate".
pub fn estimated_response_time(mode: &PhyMode, band: Band) -> Duration {
    let mbps = match mode.bits_per_subcarrier() {
        1 => 6,
        2 => 12,
        _ => 24,
    };
    let response = if let PhyMode::NonHt { .. } = mode { frame::ACK } else { frame::BLOCK_ACK };
    PhyMode::NonHt { mbps }.ppdu_duration(response, band)
}

/// The length of an A-MPDU of `count` MPDUs of the given sizes: a 4-byte delimiter before each,
/// each but the last padded to 4 bytes.
pub fn ampdu_length(mpdus: impl IntoIterator<Item = DataSize>) -> DataSize {
    let mut total = 0u64;
    for mpdu in mpdus {
        total = total.next_multiple_of(4) + frame::AMPDU_DELIMITER.as_bytes() + mpdu.as_bytes();
    }
    DataSize::bytes(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vht_exclusions_follow_the_standard() {
        let vht = |mcs, nss, width_mhz| PhyMode::Vht { mcs, nss, width_mhz, short_gi: false };
        for nss in [1, 2, 4] {
            assert!(vht(9, nss, 20).validate().is_err(), "MCS 9, {nss} streams, 20 MHz");
        }
        assert!(vht(9, 3, 20).validate().is_ok());
        assert!(vht(6, 3, 80).validate().is_err());
        assert!(vht(9, 3, 160).validate().is_err());
        assert!(vht(9, 1, 80).validate().is_ok());
        assert_eq!(vht(9, 1, 80).rate(), Bitrate::bps(390_000_000));
        assert_eq!(vht(9, 1, 20).ladder().len(), 9, "MCS 9 left out of the 20-MHz ladder");
    }

    #[test]
    fn short_gi_rounds_the_data_field_up_to_four_microseconds() {
        let sgi = PhyMode::Ht { mcs: 7, width_mhz: 20, short_gi: true };
        // 1538 B: ceil((16 + 12304 + 6) / 260) = 48 symbols; 48 × 3.6 = 172.8 → 176 µs.
        assert_eq!(sgi.ppdu_duration(DataSize::bytes(1538), Band::Ghz5), Duration::from_micros(36 + 176));
        // The 2.4 GHz signal extension is part of every OFDM PPDU.
        let ack = PhyMode::NonHt { mbps: 24 };
        assert_eq!(
            ack.ppdu_duration(frame::ACK, Band::Ghz2_4 { short_slot: true }),
            Duration::from_micros(34)
        );
    }

    #[test]
    fn eifs_follows_the_modulation_of_the_lost_frame() {
        let t = |mode: PhyMode| estimated_response_time(&mode, Band::Ghz5).as_micros();
        assert_eq!([6, 9, 12, 18, 24, 54].map(|mbps| t(PhyMode::NonHt { mbps })), [44, 44, 32, 32, 28, 28]);
        assert_eq!([0, 1, 7, 8].map(|mcs| t(PhyMode::ht(mcs))), [68, 44, 32, 68]);
    }

    #[test]
    fn byte_offsets_end_with_the_ppdu() {
        let mode = PhyMode::ht(7);
        let bytes = ampdu_length([DataSize::bytes(1538); 3]);
        assert_eq!(bytes, DataSize::bytes(3 * 1544 - 2));
        // The tail bits may add a symbol after the last byte's, never more.
        let air = mode.airtime(Band::Ghz5);
        let end = mode.ppdu_duration(bytes, Band::Ghz5);
        let last = air.byte_offset(bytes.as_bytes());
        assert!(last <= end && end - last <= Duration::from_micros(4), "{last} vs {end}");
        assert!(air.byte_offset(1542) < air.byte_offset(3086));
    }
}
