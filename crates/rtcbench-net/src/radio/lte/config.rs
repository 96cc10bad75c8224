//! The static description of a cell: bandwidth, schedulers, HARQ, RLC buffers, uplink access,
//! and per UE the channel quality of each direction. It serialises (JSON), as
//! [`crate::radio::wifi::BssConfig`] does, so a relay could be configured with exactly the
//! element the simulator builds.

use rtcbench_units::{DataSize, Duration};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::amc::{cqi_from_sinr_db, Bandwidth, MAX_MCS};

/// One FDD cell: an eNB (port 0) and `ues.len()` UEs (ports 1, 2, …).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellConfig {
    pub name: String,
    /// The channel bandwidth, the same for downlink and uplink (TS 36.101 Table 5.6-1).
    pub bandwidth: Bandwidth,
    /// Downlink spatial layers: 1 (SISO) or 2 (2×2 MIMO, one codeword per layer, so twice the
    /// single-layer TBS per TTI; TS 36.213 §7.1.7.2.1). The uplink is single-layer.
    pub dl_layers: u8,
    pub dl_scheduler: DlScheduler,
    /// PRBs at the band edges kept for the PUCCH, which the PUSCH scheduler never assigns.
    /// 0 by default, as ns-3 (its uplink scheduler uses all 25 PRB at 5 MHz).
    pub ul_pucch_prb: u16,
    /// The least PRBs an uplink grant for new data gets (ns-3's 3, so that a grant carries at
    /// least the 7 bytes of a BSR and headers); with more UEs than `prb / ul_min_prb` the
    /// remainder is served in later TTIs.
    pub ul_min_prb: u16,
    /// The highest uplink MCS: 20 for UEs without 64-QAM on the PUSCH (categories 1 to 4, TS
    /// 36.306), `None` for no cap (MCS 28).
    pub ul_max_mcs: Option<u8>,
    /// How the eNB learns what the UEs have to send.
    pub ul_access: UlAccess,
    /// k, TTIs from an uplink grant (PDCCH in subframe n) to the PUSCH it allows: 4 in FDD
    /// (TS 36.213 §8.0).
    pub ul_grant_to_pusch_ttis: u32,
    /// How often channel quality is reported, and how late the scheduler learns it.
    pub cqi: CqiReporting,
    pub harq: HarqConfig,
    pub rlc: RlcConfig,
    /// Added to every delivery after the end of the TTI that completed the packet: eNB and UE
    /// processing, S1/core network. 0 by default; a scenario adds its wired delay separately.
    pub core_delay: Duration,
    pub ues: Vec<UeConfig>,
}

/// The downlink scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum DlScheduler {
    /// Proportional fair (ns-3's `PfFfMacScheduler`): each RBG goes to the UE with the largest
    /// achievable rate R_j over its averaged throughput T_j, T_j an exponential average over
    /// `window_ttis` TTIs (ns-3's `m_timeWindow`, 99).
    ProportionalFair { window_ttis: f64 },
    /// Round robin (ns-3's `RrFfMacScheduler`): the RBGs split equally among the UEs with data,
    /// the first served rotating from TTI to TTI.
    RoundRobin,
}

impl DlScheduler {
    /// Proportional fair with ns-3's 99-TTI window.
    pub const fn proportional_fair() -> Self {
        Self::ProportionalFair { window_ttis: 99.0 }
    }
}

/// How the eNB learns of uplink data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum UlAccess {
    /// ns-3's model: the eNB knows every UE's buffer in every TTI (a BSR every TTI, no
    /// scheduling request), less what it already granted.
    Ideal,
    /// A UE whose buffer was empty sends a scheduling request at its next SR opportunity on the
    /// PUCCH (TS 36.213 §10.1.5, TS 36.321 §5.4.4); the eNB answers `sr_to_grant_ttis` later
    /// with a grant of `sr_grant_prb`; every PUSCH then carries a BSR (TS 36.321 §5.4.5,
    /// levels of Table 6.1.3.1-1) on which the next grants are based, so continuous traffic
    /// needs no further request.
    SchedulingRequest {
        /// The SR periodicity, one of 1, 2, 5, 10, 20, 40, 80 TTIs (TS 36.213 Table 10.1.5-1).
        period_ttis: u32,
        /// From the SR's subframe to the grant's: the eNB decodes the SR and schedules
        /// (3 ms of processing, then the grant goes in the next subframe).
        sr_to_grant_ttis: u32,
        /// The grant that answers an SR, before any BSR says how much is waiting.
        sr_grant_prb: u16,
    },
}

impl UlAccess {
    /// SR every 10 ms, grant 4 TTIs after the SR, 3 PRB.
    pub const fn scheduling_request() -> Self {
        Self::SchedulingRequest { period_ttis: 10, sr_to_grant_ttis: 4, sr_grant_prb: 3 }
    }
}

/// CQI reporting (TS 36.213 §7.2): the scheduler uses, at TTI k, the quality measured at the
/// latest report instant r ≤ k − `delay_ttis` with r a multiple of `period_ttis`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CqiReporting {
    /// 1 reports every TTI (ns-3); periodic wideband reports on the PUCCH come every 2, 5, 10,
    /// … TTIs (TS 36.213 §7.2.2).
    pub period_ttis: u32,
    pub delay_ttis: u32,
}

/// HARQ: 8 stop-and-wait processes per UE and direction (FDD, TS 36.213 §7 and §8), a
/// retransmission 8 TTIs after the transmission it repeats.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HarqConfig {
    /// Probability that transmission i (from 1) of a transport block fails, given that the
    /// earlier ones did; its length is the number of transmissions before the block is given up
    /// (ns-3 stops after 4). The first entry is the link adaptation's BLER target (10 %).
    pub bler: Vec<f64>,
}

impl HarqConfig {
    /// 10 % first-transmission BLER, then 1 %, 0.1 %, 0.1 % (4 transmissions).
    pub fn standard() -> Self {
        Self { bler: vec![0.1, 0.01, 0.001, 0.001] }
    }

    /// No errors: every transport block gets through the first time (ns-3's scheduler tests).
    pub fn error_free() -> Self {
        Self { bler: vec![0.0] }
    }
}

/// The RLC/PDCP entity of the default bearer, one per UE and direction (at the eNB for the
/// downlink, at the UE for the uplink).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RlcConfig {
    /// The transmit buffer's limit: a packet that would take the bytes waiting beyond it is
    /// refused (tail drop, [`crate::DropReason::QueueFull`]). The eNB's buffer of each UE
    /// (downlink), and the UE's own (uplink) unless `ue_buffer` says otherwise.
    pub buffer: DataSize,
    /// The UE's own buffer (uplink), if it differs from the eNB's: a modem's is usually far
    /// smaller than the per-bearer buffers of a commercial eNB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ue_buffer: Option<DataSize>,
    /// PDCP's discardTimer (TS 36.323 §5.4): a packet that waited longer when it would be sent
    /// is dropped instead ([`crate::DropReason::Lifetime`]). `None`: never.
    pub discard_timer: Option<Duration>,
    /// Added to each packet: the PDCP data PDU header with a 12-bit SN (TS 36.323 §6.2.3).
    pub pdcp_header: DataSize,
    /// Taken from each transport block: the RLC UM PDU header with a 10-bit SN (TS 36.322
    /// §6.2.1.3) and the MAC subheader of its one logical channel (TS 36.321 §6.1.2).
    pub rlc_mac_header: DataSize,
}

impl RlcConfig {
    /// A 5-MB buffer, no discard timer, 2 + 3 bytes of headers (`docs/lte.md`, "Constants and
    /// defaults", says why).
    pub const fn deep() -> Self {
        Self {
            buffer: DataSize::bytes(5_000_000),
            ue_buffer: None,
            discard_timer: None,
            pdcp_header: DataSize::bytes(2),
            rlc_mac_header: DataSize::bytes(3),
        }
    }
}

/// One UE: the channel quality of each direction, and where its SR opportunities fall.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UeConfig {
    pub dl: ChannelQuality,
    pub ul: ChannelQuality,
    /// The UE's SR opportunities are the TTIs k with (k − offset) mod period = 0. `None`: UE i
    /// (from 1) uses (i − 1) mod period, so UEs spread over the period.
    #[serde(default)]
    pub sr_offset_ttis: Option<u32>,
}

impl UeConfig {
    /// The same fixed CQI both ways.
    pub const fn fixed_cqi(cqi: u8) -> Self {
        Self { dl: ChannelQuality::Cqi { cqi }, ul: ChannelQuality::Cqi { cqi }, sr_offset_ttis: None }
    }
}

/// Where a direction's CQI comes from. Every form is a function of time alone, evaluated when
/// the scheduler needs it, so a cell that sleeps through idle TTIs loses nothing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ChannelQuality {
    /// A fixed CQI, 0..=15 (0: out of range, the UE is not scheduled).
    Cqi { cqi: u8 },
    /// Steps: from `at` on, the CQI is `cqi` (the first step's before it, the last's after).
    CqiTrace { steps: Vec<CqiStep> },
    /// A fixed wideband SINR, dB, mapped to a CQI ([`super::amc::cqi_from_sinr_db`]).
    Sinr { sinr_db: f64 },
    /// Steps of wideband SINR, dB.
    SinrTrace { steps: Vec<SinrStep> },
    /// A mean SINR plus Rayleigh fading in dB with a Jakes (Clarke) Doppler spectrum,
    /// f_d = v·f_c / c, drawn from the cell's generator (a sum of sinusoids after Zheng and
    /// Xiao 2003; `docs/lte.md`, "Fading").
    Fading { mean_sinr_db: f64, speed_kmh: f64, carrier_ghz: f64 },
}

impl ChannelQuality {
    /// The CQI of the channel's nominal quality, the lowest it is given: its CQI, its SINR's
    /// ([`cqi_from_sinr_db`]), a trace's lowest step, a fading channel's at its mean SINR (the
    /// fading moves about the mean at random, so the mean is what the place gives). A scenario
    /// compares the rate at this CQI with a wired link's capacity to choose a path's bottleneck.
    pub fn nominal_cqi(&self) -> u8 {
        match self {
            Self::Cqi { cqi } => *cqi,
            Self::CqiTrace { steps } => steps.iter().map(|s| s.cqi).min().unwrap_or(0),
            Self::Sinr { sinr_db } => cqi_from_sinr_db(*sinr_db),
            Self::SinrTrace { steps } => steps.iter().map(|s| cqi_from_sinr_db(s.sinr_db)).min().unwrap_or(0),
            Self::Fading { mean_sinr_db, .. } => cqi_from_sinr_db(*mean_sinr_db),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CqiStep {
    pub at: Duration,
    pub cqi: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SinrStep {
    pub at: Duration,
    pub sinr_db: f64,
}

/// What is wrong with a [`CellConfig`].
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ConfigError {
    #[error("a cell needs at least one UE (ues), and at most 65534")]
    Ues,
    #[error("dl_layers must be 1 (SISO) or 2 (2×2 MIMO, two codewords), not {0}")]
    DlLayers(u8),
    #[error("dl_scheduler.window_ttis must be a number above 1 (ns-3 uses 99), not {0}")]
    PfWindow(String),
    #[error(
        "ul_pucch_prb ({pucch}) and ul_min_prb ({min}) must leave the PUSCH at least ul_min_prb \
         of the {prb} PRB at {mhz} MHz, and ul_min_prb must be at least 1"
    )]
    UlPrb { pucch: u16, min: u16, prb: u16, mhz: &'static str },
    #[error("ul_max_mcs must be an MCS index 0..=28 (20 for UEs without uplink 64-QAM), not {0}")]
    UlMaxMcs(u8),
    #[error(
        "ul_access.period_ttis must be one of 1, 2, 5, 10, 20, 40, 80 (TS 36.213 Table 10.1.5-1), not {0}"
    )]
    SrPeriod(u32),
    #[error("ul_access.sr_grant_prb must be 1..={max} (the PUSCH's PRBs), not {found}")]
    SrGrant { max: u16, found: u16 },
    #[error("ues[{ue}].sr_offset_ttis must be below the SR period {period}, not {found}")]
    SrOffset { ue: usize, period: u32, found: u32 },
    #[error("ul_grant_to_pusch_ttis must be 1..=16 (4 in FDD), not {0}")]
    GrantToPusch(u32),
    #[error("cqi.period_ttis must be at least 1 and cqi.delay_ttis at most 1000, not {period} and {delay}")]
    CqiReporting { period: u32, delay: u32 },
    #[error(
        "harq.bler needs 1 to 8 entries (one per transmission), each a probability in [0, 1], \
         the last below 1; found {0}"
    )]
    Bler(String),
    #[error(
        "rlc.buffer and rlc.ue_buffer must be positive and rlc.discard_timer, if set, positive; found {0}"
    )]
    Rlc(String),
    #[error("core_delay must not be negative, found {0}")]
    CoreDelay(Duration),
    #[error("ues[{ue}].{dir}: {what}")]
    Channel { ue: usize, dir: &'static str, what: String },
}

impl CellConfig {
    /// A 5-MHz SISO cell with ns-3's scheduler defaults (proportional fair over 99 TTIs, ideal
    /// uplink access, CQI every TTI) and this model's HARQ and RLC defaults
    /// ([`HarqConfig::standard`], [`RlcConfig::deep`]).
    pub fn new(ues: Vec<UeConfig>) -> Self {
        Self {
            name: "lte".into(),
            bandwidth: Bandwidth::Mhz5,
            dl_layers: 1,
            dl_scheduler: DlScheduler::proportional_fair(),
            ul_pucch_prb: 0,
            ul_min_prb: 3,
            ul_max_mcs: None,
            ul_access: UlAccess::Ideal,
            ul_grant_to_pusch_ttis: 4,
            cqi: CqiReporting { period_ttis: 1, delay_ttis: 0 },
            harq: HarqConfig::standard(),
            rlc: RlcConfig::deep(),
            core_delay: Duration::ZERO,
            ues,
        }
    }

    /// PRBs the PUSCH scheduler assigns: N_RB less the PUCCH reservation.
    pub fn ul_prb(&self) -> u16 {
        self.bandwidth.prb().saturating_sub(self.ul_pucch_prb)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.ues.is_empty() || self.ues.len() >= usize::from(u16::MAX) {
            return Err(ConfigError::Ues);
        }
        if !(1..=2).contains(&self.dl_layers) {
            return Err(ConfigError::DlLayers(self.dl_layers));
        }
        if let DlScheduler::ProportionalFair { window_ttis } = self.dl_scheduler {
            if !(window_ttis > 1.0 && window_ttis.is_finite()) {
                return Err(ConfigError::PfWindow(window_ttis.to_string()));
            }
        }
        let prb = self.bandwidth.prb();
        if self.ul_min_prb == 0 || self.ul_prb() < self.ul_min_prb {
            return Err(ConfigError::UlPrb {
                pucch: self.ul_pucch_prb,
                min: self.ul_min_prb,
                prb,
                mhz: self.bandwidth.mhz(),
            });
        }
        if let Some(m) = self.ul_max_mcs.filter(|&m| m > MAX_MCS) {
            return Err(ConfigError::UlMaxMcs(m));
        }
        if let UlAccess::SchedulingRequest { period_ttis, sr_grant_prb, .. } = self.ul_access {
            if ![1, 2, 5, 10, 20, 40, 80].contains(&period_ttis) {
                return Err(ConfigError::SrPeriod(period_ttis));
            }
            if sr_grant_prb == 0 || sr_grant_prb > self.ul_prb() {
                return Err(ConfigError::SrGrant { max: self.ul_prb(), found: sr_grant_prb });
            }
            for (ue, u) in self.ues.iter().enumerate() {
                if let Some(found) = u.sr_offset_ttis.filter(|&o| o >= period_ttis) {
                    return Err(ConfigError::SrOffset { ue, period: period_ttis, found });
                }
            }
        }
        if !(1..=16).contains(&self.ul_grant_to_pusch_ttis) {
            return Err(ConfigError::GrantToPusch(self.ul_grant_to_pusch_ttis));
        }
        if self.cqi.period_ttis == 0 || self.cqi.delay_ttis > 1000 {
            return Err(ConfigError::CqiReporting {
                period: self.cqi.period_ttis,
                delay: self.cqi.delay_ttis,
            });
        }
        let b = &self.harq.bler;
        let probabilities = b.iter().all(|p| (0.0..=1.0).contains(p));
        if b.is_empty() || b.len() > 8 || !probabilities || b.last().is_some_and(|&p| p >= 1.0) {
            return Err(ConfigError::Bler(format!("{b:?}")));
        }
        let r = &self.rlc;
        let zero_ue = r.ue_buffer.is_some_and(|b| b.is_zero());
        if r.buffer.is_zero() || zero_ue || r.discard_timer.is_some_and(|d| d <= Duration::ZERO) {
            return Err(ConfigError::Rlc(format!(
                "buffer {}, ue_buffer {:?}, discard_timer {:?}",
                r.buffer, r.ue_buffer, r.discard_timer
            )));
        }
        if self.core_delay < Duration::ZERO {
            return Err(ConfigError::CoreDelay(self.core_delay));
        }
        for (ue, u) in self.ues.iter().enumerate() {
            for (dir, q) in [("dl", &u.dl), ("ul", &u.ul)] {
                q.check().map_err(|what| ConfigError::Channel { ue, dir, what })?;
            }
        }
        Ok(())
    }
}

impl ChannelQuality {
    fn check(&self) -> Result<(), String> {
        let cqi = |c: u8| if c <= 15 { Ok(()) } else { Err(format!("a CQI is 0..=15, not {c}")) };
        let times = |ats: &mut dyn Iterator<Item = Duration>| {
            let mut last: Option<Duration> = None;
            for at in ats {
                if at < Duration::ZERO || last.is_some_and(|l| at <= l) {
                    return Err("steps need times from 0 on, strictly increasing".to_string());
                }
                last = Some(at);
            }
            if last.is_none() {
                return Err("a trace needs at least one step".to_string());
            }
            Ok(())
        };
        match self {
            Self::Cqi { cqi: c } => cqi(*c),
            Self::CqiTrace { steps } => {
                times(&mut steps.iter().map(|s| s.at))?;
                steps.iter().try_for_each(|s| cqi(s.cqi))
            }
            Self::Sinr { sinr_db } if !sinr_db.is_finite() => {
                Err(format!("sinr_db must be a number, not {sinr_db}"))
            }
            Self::Sinr { .. } => Ok(()),
            Self::SinrTrace { steps } => {
                times(&mut steps.iter().map(|s| s.at))?;
                match steps.iter().find(|s| !s.sinr_db.is_finite()) {
                    Some(s) => Err(format!("sinr_db must be a number, not {}", s.sinr_db)),
                    None => Ok(()),
                }
            }
            Self::Fading { mean_sinr_db, speed_kmh, carrier_ghz } => {
                if !(mean_sinr_db.is_finite() && speed_kmh.is_finite() && *speed_kmh >= 0.0) {
                    Err(format!(
                        "fading needs a finite mean_sinr_db and a speed_kmh ≥ 0, not {mean_sinr_db} and {speed_kmh}"
                    ))
                } else if !(carrier_ghz.is_finite() && *carrier_ghz > 0.0) {
                    Err(format!("carrier_ghz must be positive, not {carrier_ghz}"))
                } else {
                    Ok(())
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_form() -> CellConfig {
        let mut cfg = CellConfig::new(vec![
            UeConfig::fixed_cqi(15),
            UeConfig {
                dl: ChannelQuality::Fading { mean_sinr_db: 12.5, speed_kmh: 3.0, carrier_ghz: 2.0 },
                ul: ChannelQuality::SinrTrace { steps: vec![SinrStep { at: Duration::ZERO, sinr_db: 4.0 }] },
                sr_offset_ttis: Some(3),
            },
            UeConfig {
                dl: ChannelQuality::CqiTrace {
                    steps: vec![CqiStep { at: Duration::from_millis(5), cqi: 9 }],
                },
                ul: ChannelQuality::Sinr { sinr_db: -1.0 },
                sr_offset_ttis: None,
            },
        ]);
        cfg.ul_access = UlAccess::scheduling_request();
        cfg.dl_scheduler = DlScheduler::RoundRobin;
        cfg.rlc.discard_timer = Some(Duration::from_millis(300));
        cfg
    }

    #[test]
    fn round_trips_through_json_with_units_written_out() {
        let cfg = every_form();
        cfg.validate().unwrap();
        let json = serde_json::to_string(&cfg).unwrap();
        assert!(json.contains(r#""bandwidth":"5MHz""#) && json.contains(r#""buffer":"5000KB""#), "{json}");
        assert!(
            json.contains(r#""kind":"scheduling_request""#) && json.contains(r#""kind":"fading""#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<CellConfig>(&json).unwrap(), cfg);
    }

    #[test]
    fn unknown_fields_are_refused() {
        let json =
            serde_json::to_string(&every_form()).unwrap().replace(r#""dl_layers":1"#, r#""dl_layer":1"#);
        let err = serde_json::from_str::<CellConfig>(&json).unwrap_err().to_string();
        assert!(err.contains("unknown field `dl_layer`"), "{err}");
    }

    #[test]
    fn errors_name_the_field_and_what_is_allowed() {
        let check = |edit: &dyn Fn(&mut CellConfig), says: &str| {
            let mut cfg = every_form();
            edit(&mut cfg);
            let msg = cfg.validate().unwrap_err().to_string();
            assert!(msg.contains(says), "{msg:?} should say {says:?}");
        };
        check(&|c| c.ues.clear(), "at least one UE (ues)");
        check(&|c| c.dl_layers = 4, "dl_layers must be 1 (SISO) or 2");
        check(
            &|c| c.dl_scheduler = DlScheduler::ProportionalFair { window_ttis: 0.5 },
            "window_ttis must be a number above 1",
        );
        check(&|c| c.ul_pucch_prb = 24, "ul_pucch_prb (24) and ul_min_prb (3)");
        check(&|c| c.ul_max_mcs = Some(29), "ul_max_mcs must be an MCS index 0..=28");
        check(
            &|c| {
                c.ul_access =
                    UlAccess::SchedulingRequest { period_ttis: 7, sr_to_grant_ttis: 4, sr_grant_prb: 3 }
            },
            "one of 1, 2, 5, 10, 20, 40, 80",
        );
        check(
            &|c| {
                c.ul_access =
                    UlAccess::SchedulingRequest { period_ttis: 2, sr_to_grant_ttis: 4, sr_grant_prb: 3 }
            },
            "ues[1].sr_offset_ttis must be below the SR period 2, not 3",
        );
        check(&|c| c.harq.bler = vec![0.1, 1.0], "harq.bler needs 1 to 8 entries");
        check(&|c| c.rlc.buffer = DataSize::ZERO, "rlc.buffer and rlc.ue_buffer must be positive");
        check(&|c| c.rlc.ue_buffer = Some(DataSize::ZERO), "rlc.buffer and rlc.ue_buffer must be positive");
        check(&|c| c.ues[2].dl = ChannelQuality::Cqi { cqi: 16 }, "ues[2].dl: a CQI is 0..=15, not 16");
        check(
            &|c| c.ues[1].ul = ChannelQuality::SinrTrace { steps: vec![] },
            "ues[1].ul: a trace needs at least one step",
        );
        check(
            &|c| {
                c.ues[1].dl = ChannelQuality::Fading { mean_sinr_db: 3.0, speed_kmh: -1.0, carrier_ghz: 2.0 }
            },
            "speed_kmh ≥ 0",
        );
    }
}
