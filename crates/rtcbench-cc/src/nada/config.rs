//! NADA's parameters: the defaults of RFC 8698 §4.1 Figure 3, and the few implementation
//! parameters the RFC describes in prose (§5.1.1, §5.3) or leaves to the implementer.
//!
//! Figure 3 gives RMIN and RMAX as defaults too; here they are [`RMIN`] and [`RMAX`], while the
//! rates a controller actually uses are the `min_rate` / `max_rate` given to
//! [`super::Nada::new`] (the scenario's), so they are not fields of [`NadaConfig`].

use rtcbench_units::{Bitrate, Duration};

// ---- RFC 8698 §4.1 Figure 3: default parameter values ----

/// PRIO, RFC 8698 §4.1 Figure 3: weight of priority of the flow (dimensionless), 1.0.
pub const PRIO: f64 = 1.0;
/// RMIN, RFC 8698 §4.1 Figure 3: minimum rate of the application supported by the media
/// encoder, 150 kbit/s.
pub const RMIN: Bitrate = Bitrate::kbps(150);
/// RMAX, RFC 8698 §4.1 Figure 3: maximum rate of the application supported by the media
/// encoder, 1.5 Mbit/s.
pub const RMAX: Bitrate = Bitrate::kbps(1500);
/// XREF, RFC 8698 §4.1 Figure 3: reference congestion level, 10 ms.
pub const XREF: Duration = Duration::from_millis(10);
/// KAPPA, RFC 8698 §4.1 Figure 3: scaling parameter for gradual rate update (dimensionless),
/// 0.5.
pub const KAPPA: f64 = 0.5;
/// ETA, RFC 8698 §4.1 Figure 3: scaling parameter for gradual rate update (dimensionless), 2.0.
pub const ETA: f64 = 2.0;
/// TAU, RFC 8698 §4.1 Figure 3: upper bound of RTT in gradual rate update, 500 ms.
pub const TAU: Duration = Duration::from_millis(500);
/// DELTA, RFC 8698 §4.1 Figure 3: target feedback interval, 100 ms.
pub const DELTA: Duration = Duration::from_millis(100);
/// LOGWIN, RFC 8698 §4.1 Figure 3: observation window in time for calculating packet
/// summary statistics at the receiver, 500 ms.
pub const LOGWIN: Duration = Duration::from_millis(500);
/// QEPS, RFC 8698 §4.1 Figure 3: threshold for determining queuing delay buildup at the
/// receiver (accelerated ramp-up is allowed only below it), 10 ms.
pub const QEPS: Duration = Duration::from_millis(10);
/// DFILT, RFC 8698 §4.1 Figure 3: bound on filtering delay, 120 ms.
pub const DFILT: Duration = Duration::from_millis(120);
/// GAMMA_MAX, RFC 8698 §4.1 Figure 3: upper bound on rate increase ratio for accelerated
/// ramp-up (dimensionless), 0.5.
pub const GAMMA_MAX: f64 = 0.5;
/// QBOUND, RFC 8698 §4.1 Figure 3: upper bound on self-inflicted queuing delay during ramp-up,
/// 50 ms.
pub const QBOUND: Duration = Duration::from_millis(50);
/// MULTILOSS, RFC 8698 §4.1 Figure 3: multiplier for self-scaling the expiration threshold of
/// the last observed loss (loss_exp) from the average loss interval (loss_int), 7.0.
pub const MULTILOSS: f64 = 7.0;
/// QTH, RFC 8698 §4.1 Figure 3: delay threshold for invoking non-linear warping, 50 ms.
pub const QTH: Duration = Duration::from_millis(50);
/// LAMBDA, RFC 8698 §4.1 Figure 3: scaling parameter in the exponent of non-linear warping
/// (dimensionless), 0.5.
pub const LAMBDA: f64 = 0.5;
/// PLRREF, RFC 8698 §4.1 Figure 3: reference packet loss ratio (dimensionless), 0.01.
pub const PLRREF: f64 = 0.01;
/// PMRREF, RFC 8698 §4.1 Figure 3: reference packet marking ratio (dimensionless), 0.01.
pub const PMRREF: f64 = 0.01;
/// DLOSS, RFC 8698 §4.1 Figure 3: reference delay penalty for loss when the packet loss ratio
/// is at PLRREF, 10 ms.
pub const DLOSS: Duration = Duration::from_millis(10);
/// DMARK, RFC 8698 §4.1 Figure 3: reference delay penalty for ECN marking when the packet
/// marking ratio is at PMRREF, 2 ms.
pub const DMARK: Duration = Duration::from_millis(2);
/// FPS, RFC 8698 §4.1 Figure 3: frame rate of the incoming video, 30 frames per second.
pub const FPS: f64 = 30.0;
/// BETA_S, RFC 8698 §4.1 Figure 3: scaling parameter for modulating the outgoing sending rate
/// (dimensionless), 0.1.
pub const BETA_S: f64 = 0.1;
/// BETA_V, RFC 8698 §4.1 Figure 3: scaling parameter for modulating the video encoder target
/// rate (dimensionless), 0.1.
pub const BETA_V: f64 = 0.1;
/// ALPHA, RFC 8698 §4.1 Figure 3: smoothing factor in exponential smoothing of packet loss and
/// marking ratios (dimensionless), 0.1.
pub const ALPHA: f64 = 0.1;

// ---- Implementation parameters (not in Figure 3) ----

/// Taps of the minimum filter over per-packet queuing delay: "a 15-tap minimum filter", RFC 8698
/// §5.1.1.
pub const QDELAY_FILTER_TAPS: usize = 15;
/// Window of the baseline delay d_base. RFC 8698 §5.1.1 takes the minimum one-way delay "over a
/// relatively long period (e.g., tens of minutes)" and re-estimates it periodically; 10 minutes
/// is our choice (LEDBAT's base-delay history, RFC 6817 §3.4.2, is 10 one-minute minima too).
pub const BASE_DELAY_WINDOW: Duration = Duration::from_secs(600);
/// Upper bound of x_curr: 500 ms, ns3-rmcat's `XMAX` (the RFC's own reference code). RFC 8698
/// has no bound other than its §5.3 feedback field ([`X_CURR_FIELD_MAX`], 3276.7 ms), and that
/// one is too loose: the loss penalty of eq. (2) reaches seconds at 10-20 % loss, and eq. (7)'s
/// x_diff term then swings r_ref from RMIN (clipped by eq. (9) on the way up) to RMAX (a
/// multiplicative rebound while p_loss decays) every loss episode, a self-sustained
/// RMIN-RMAX oscillation behind a drop-tail queue (`docs/controllers/nada.md`).
pub const X_CURR_MAX: Duration = Duration::from_millis(500);
/// The largest x_curr the §5.3 feedback field can carry: 15 bits in 100 us units, 3276.7 ms.
pub const X_CURR_FIELD_MAX: Duration = Duration::from_micros(32_767 * 100);
/// Updates closer together than this wait for the next feedback (samples are kept): ns3-rmcat
/// updates on batched feedback after 0.5 × DELTA. Our choice, so that feedback much faster than
/// DELTA does not turn eq. (6)'s x_diff into per-packet noise.
pub const MIN_UPDATE_INTERVAL: Duration = Duration::from_millis(50);
/// Upper bound of the delta used in eq. (7) after a feedback gap. Our choice: TAU, so that
/// delta/TAU ≤ 1 (libwebrtc's NADA port caps delta at 500 ms too).
pub const MAX_DELTA: Duration = TAU;
/// Taps of the minimum filter over feedback-timing RTT samples (ns3-rmcat's 15-sample minimum).
pub const RTT_FILTER_TAPS: usize = 15;

/// Every NADA parameter. `Default` gives RFC 8698's values; fields are named after the RFC's
/// symbols in lower case.
#[derive(Clone, Debug, PartialEq)]
pub struct NadaConfig {
    /// PRIO ([`PRIO`]).
    pub prio: f64,
    /// XREF ([`XREF`]).
    pub xref: Duration,
    /// KAPPA ([`KAPPA`]).
    pub kappa: f64,
    /// ETA ([`ETA`]).
    pub eta: f64,
    /// TAU ([`TAU`]).
    pub tau: Duration,
    /// DELTA ([`DELTA`]): the target feedback interval, used in eq. (3). Eq. (7) uses the
    /// observed interval.
    pub delta: Duration,
    /// LOGWIN ([`LOGWIN`]).
    pub logwin: Duration,
    /// QEPS ([`QEPS`]).
    pub qeps: Duration,
    /// DFILT ([`DFILT`]).
    pub dfilt: Duration,
    /// GAMMA_MAX ([`GAMMA_MAX`]).
    pub gamma_max: f64,
    /// QBOUND ([`QBOUND`]).
    pub qbound: Duration,
    /// MULTILOSS ([`MULTILOSS`]).
    pub multiloss: f64,
    /// QTH ([`QTH`]).
    pub qth: Duration,
    /// LAMBDA ([`LAMBDA`]).
    pub lambda: f64,
    /// PLRREF ([`PLRREF`]).
    pub plrref: f64,
    /// PMRREF ([`PMRREF`]).
    pub pmrref: f64,
    /// DLOSS ([`DLOSS`]).
    pub dloss: Duration,
    /// DMARK ([`DMARK`]).
    pub dmark: Duration,
    /// FPS ([`FPS`]), frames per second.
    pub fps: f64,
    /// BETA_S ([`BETA_S`]).
    pub beta_s: f64,
    /// BETA_V ([`BETA_V`]).
    pub beta_v: f64,
    /// ALPHA ([`ALPHA`]).
    pub alpha: f64,
    /// Taps of the queuing-delay minimum filter ([`QDELAY_FILTER_TAPS`]).
    pub qdelay_filter_taps: usize,
    /// Window of the baseline-delay minimum ([`BASE_DELAY_WINDOW`]).
    pub base_delay_window: Duration,
    /// Upper bound of x_curr ([`X_CURR_MAX`]).
    pub x_curr_max: Duration,
    /// Minimum time between rate updates ([`MIN_UPDATE_INTERVAL`]).
    pub min_update_interval: Duration,
    /// Upper bound of delta in eq. (7) ([`MAX_DELTA`]).
    pub max_delta: Duration,
    /// Taps of the feedback-timing RTT minimum filter ([`RTT_FILTER_TAPS`]).
    pub rtt_filter_taps: usize,
}

impl Default for NadaConfig {
    fn default() -> Self {
        Self {
            prio: PRIO,
            xref: XREF,
            kappa: KAPPA,
            eta: ETA,
            tau: TAU,
            delta: DELTA,
            logwin: LOGWIN,
            qeps: QEPS,
            dfilt: DFILT,
            gamma_max: GAMMA_MAX,
            qbound: QBOUND,
            multiloss: MULTILOSS,
            qth: QTH,
            lambda: LAMBDA,
            plrref: PLRREF,
            pmrref: PMRREF,
            dloss: DLOSS,
            dmark: DMARK,
            fps: FPS,
            beta_s: BETA_S,
            beta_v: BETA_V,
            alpha: ALPHA,
            qdelay_filter_taps: QDELAY_FILTER_TAPS,
            base_delay_window: BASE_DELAY_WINDOW,
            x_curr_max: X_CURR_MAX,
            min_update_interval: MIN_UPDATE_INTERVAL,
            max_delta: MAX_DELTA,
            rtt_filter_taps: RTT_FILTER_TAPS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_rfc_8698_figure_3() {
        let c = NadaConfig::default();
        assert_eq!(c.xref, Duration::from_millis(10));
        assert_eq!(c.tau, Duration::from_millis(500));
        assert_eq!(c.delta, Duration::from_millis(100));
        assert_eq!(c.qth, Duration::from_millis(50));
        assert_eq!((c.kappa, c.eta, c.gamma_max, c.lambda), (0.5, 2.0, 0.5, 0.5));
        assert_eq!((c.plrref, c.pmrref, c.alpha), (0.01, 0.01, 0.1));
        assert_eq!((RMIN, RMAX), (Bitrate::kbps(150), Bitrate::bps(1_500_000)));
        assert_eq!(X_CURR_FIELD_MAX, Duration::from_micros(3_276_700));
        assert_eq!(c.x_curr_max, Duration::from_millis(500), "ns3-rmcat's XMAX, not in Figure 3");
    }
}
