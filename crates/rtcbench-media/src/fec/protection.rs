//! How much FEC to send: libwebrtc's `FecControllerDefault` with its loss protection logic
//! (modules/video_coding/fec_controller_default.cc, media_opt_util.cc).
//!
//! On every rate update the controller takes the target, frame rate, loss and RTT and returns a
//! [`Protection`]: a Q8 FEC rate (FEC packets per media packet × 256) for delta frames and one
//! for keyframes, and how many frames one set of FEC packets may span.
//!
//! 1. **Loss**: the largest loss fraction reported over the last 10 one-second windows
//!    (`kMaxFilter`, `kLossPrHistorySize` × `kLossPrShortFilterWinMs`).
//! 2. **Delta factor** (`VCMFecMethod::ProtectionFactor`): `kFecRateTable` at the loss and an
//!    effective rate index, `(resolution factor × kbit per frame − 5) / 5` in 0..=49, where the
//!    resolution factor is `(704 × 576 / pixels)^0.3`; at least 20 % (51/255) once there is loss
//!    and more than one packet per frame; below 129/255.
//! 3. **Key factor**: the table at a boosted rate index (× max(2, keyframe packets / delta
//!    frame packets), + 1), at least twice the delta factor and at least the loss, below 129/255.
//! 4. **With NACK** (`VCMNackFecMethod`, what Chrome runs for VP8): no delta FEC below 20 ms RTT
//!    (`kLowRttNackMs`: retransmissions are fast enough), none at all when frames are small
//!    (below 400, 700 or 1000 bytes per frame for CIF and below, up to VGA, and larger) and the
//!    RTT below 200 ms; one set of FEC packets spans up to `2 × fps × RTT` frames (at most 6).
//!    Without NACK (`VCMFecMethod`) one set spans one frame.
//! 5. **To the RTP module's unit** (`ConvertFECRate`): the factors are shares of all packets
//!    (source + FEC); the generator wants FEC per source packet: `r / (1 − r)`.
//!
//! The arithmetic follows libwebrtc's single-precision floats and integer truncations, so the
//! rates are the ones libwebrtc would choose for the same inputs. Deviation: libwebrtc takes the
//! loss from its bandwidth estimate (GoogCC's loss over transport feedback); rtcbench's callers
//! give the loss fraction of RTCP receiver reports, which every controller has (docs/media.md).

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

use super::{rate_table, PACKET_LOSS_MAX};

/// libwebrtc `kLowRttNackMs`: below this RTT, NACK alone repairs delta frames.
pub const LOW_RTT_NACK: Duration = Duration::from_millis(20);
/// libwebrtc `kMaxRttTurnOffFec`: small frames get no FEC below this RTT.
pub const MAX_RTT_TURN_OFF_FEC: Duration = Duration::from_millis(200);
/// libwebrtc `kUpperLimitFramesFec`.
pub const MAX_FRAMES_FEC: u32 = 6;
/// libwebrtc `kLossPrHistorySize` and `kLossPrShortFilterWinMs`.
const LOSS_HISTORY: usize = 10;
const LOSS_WINDOW: Duration = Duration::from_millis(1000);
/// `VCMProtectionMethod::_maxPayloadSize`, fixed at 1460 in libwebrtc.
const MAX_PAYLOAD_BYTES: f32 = 1460.0;
/// The smoothing of packets per frame (libwebrtc `ExpFilter(0.9999)`, applied per millisecond).
const PACKETS_PER_FRAME_ALPHA: f32 = 0.9999;

/// FEC parameters for one frame type (libwebrtc `FecProtectionParams`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FecParams {
    /// FEC packets per media packet, Q8 (0: no FEC; 255: one per media packet).
    pub rate: u8,
    /// Frames one set of FEC packets may span.
    pub max_frames: u32,
}

/// The protection for delta frames and for keyframes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Protection {
    pub delta: FecParams,
    pub key: FecParams,
}

/// What the controller needs on each rate update.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FecInputs {
    /// The encoder's rate before protection.
    pub rate: Bitrate,
    pub fps: f64,
    /// Loss fraction last reported (0..1).
    pub loss: f64,
    pub rtt: Duration,
    pub width: u32,
    pub height: u32,
}

/// libwebrtc's `ExpFilter` with a sample weight of `alpha^elapsed_ms`.
#[derive(Clone, Copy, Debug)]
struct ExpFilter {
    value: Option<f32>,
    last: Option<Instant>,
}

impl ExpFilter {
    fn apply(&mut self, now: Instant, sample: f32) {
        let elapsed = self.last.map_or(0.0, |t| (now - t).as_millis_f64() as f32);
        self.last = Some(now);
        self.value = Some(match self.value {
            None => sample,
            Some(v) => {
                let a = PACKETS_PER_FRAME_ALPHA.powf(elapsed);
                a * v + (1.0 - a) * sample
            }
        });
    }

    /// libwebrtc returns −1 before the first sample.
    fn filtered(&self) -> f32 {
        self.value.unwrap_or(-1.0)
    }
}

/// The FEC controller of one video stream (see module docs).
#[derive(Clone, Debug)]
pub struct FecController {
    nack: bool,
    max_payload: DataSize,
    /// One-second loss maxima, newest first: (window start, max loss in 1/255).
    history: Vec<(Instant, u8)>,
    /// The largest loss within the current window.
    short_max: u8,
    packets_per_frame: ExpFilter,
    packets_per_frame_key: ExpFilter,
}

impl FecController {
    /// A controller for a stream with NACK on or off, whose packets carry at most `max_payload`.
    pub fn new(nack: bool, max_payload: DataSize) -> Self {
        let filter = ExpFilter { value: None, last: None };
        Self {
            nack,
            max_payload,
            history: Vec::with_capacity(LOSS_HISTORY),
            short_max: 0,
            packets_per_frame: filter,
            packets_per_frame_key: filter,
        }
    }

    /// An encoded frame of `size` (libwebrtc `UpdateWithEncodedData`): packets per frame, for
    /// the keyframe boost.
    pub fn on_encoded_frame(&mut self, now: Instant, size: DataSize, keyframe: bool) {
        if size.as_bytes() == 0 || self.max_payload.as_bytes() == 0 {
            return;
        }
        let packets = size.as_bytes() as f32 / self.max_payload.as_bytes() as f32;
        let filter = if keyframe { &mut self.packets_per_frame_key } else { &mut self.packets_per_frame };
        filter.apply(now, packets);
    }

    /// The protection for the next frames (libwebrtc `UpdateFecRates`).
    pub fn update(&mut self, now: Instant, inputs: &FecInputs) -> Protection {
        let fraction = (inputs.loss * 256.0).clamp(0.0, 255.0) as u8;
        let loss = self.filtered_loss(now, fraction);
        let params = Parameters {
            loss,
            kbps: (inputs.rate.as_bps_f64() / 1000.0) as f32,
            fps: inputs.fps.max(1.0) as f32,
            rtt_ms: inputs.rtt.as_millis(),
            pixels: inputs.width * inputs.height,
            packets_per_frame: self.packets_per_frame.filtered(),
            packets_per_frame_key: self.packets_per_frame_key.filtered(),
        };
        let (mut key, mut delta) = params.protection_factors();
        let mut max_frames = 1;
        if self.nack {
            if params.rtt_ms < LOW_RTT_NACK.as_millis() {
                delta = 0;
            }
            max_frames = params.max_frames_fec();
            if params.bitrate_too_low_for_fec() {
                (key, delta) = (0, 0);
            }
        }
        Protection {
            delta: FecParams { rate: convert_fec_rate(delta), max_frames },
            key: FecParams { rate: convert_fec_rate(key), max_frames },
        }
    }

    /// The largest loss over the last [`LOSS_HISTORY`] windows of [`LOSS_WINDOW`], the current
    /// one included (libwebrtc `UpdateMaxLossHistory` and `MaxFilteredLossPr`).
    fn filtered_loss(&mut self, now: Instant, loss: u8) -> u8 {
        match self.history.first() {
            Some(&(start, _)) if now - start < LOSS_WINDOW => self.short_max = self.short_max.max(loss),
            _ => {
                if self.history.is_empty() || self.short_max == 0 {
                    self.short_max = loss;
                }
                if self.history.len() == LOSS_HISTORY {
                    self.history.pop();
                }
                self.history.insert(0, (now, self.short_max));
                self.short_max = 0;
            }
        }
        let horizon = LOSS_WINDOW * LOSS_HISTORY as i64;
        self.history
            .iter()
            .take_while(|&&(t, _)| now - t <= horizon)
            .fold(self.short_max, |m, &(_, l)| m.max(l))
    }
}

/// libwebrtc `VCMProtectionParameters`, in its units.
struct Parameters {
    /// Filtered loss, 1/255.
    loss: u8,
    kbps: f32,
    fps: f32,
    rtt_ms: i64,
    pixels: u32,
    packets_per_frame: f32,
    packets_per_frame_key: f32,
}

impl Parameters {
    /// kbit per frame, truncated (`BitsPerFrame`; one temporal layer).
    fn kbits_per_frame(&self) -> i32 {
        (self.kbps / self.fps.max(1.0)) as i32
    }

    /// (key, delta) protection factors as shares of all packets, 1/255
    /// (`VCMFecMethod::ProtectionFactor`).
    fn protection_factors(&self) -> (u8, u8) {
        // libwebrtc stores the loss as a float fraction and multiplies it back.
        let loss_fraction = (f64::from(self.loss) / 255.0) as f32;
        let mut loss = (255.0 * loss_fraction) as u8;
        if loss == 0 {
            return (0, 0);
        }
        const FIRST_PARTITION_PROT: u8 = 51; // 255 × 0.20
        const RATE_PAR1: i32 = 5;
        const RATE_PAR2: i32 = 49;
        const MAX: u8 = PACKET_LOSS_MAX as u8;
        let table = rate_table();
        let size_to_ref = self.pixels as f32 / (704.0 * 576.0);
        let resolution_factor = (1.0 / f64::from(size_to_ref.powf(0.3))) as f32;
        let kbits = self.kbits_per_frame();
        let avg_total_packets = (1.5 + kbits as f32 * 1000.0 / (8.0 * MAX_PAYLOAD_BYTES)) as u8;
        let effective_rate = i32::from((resolution_factor * kbits as f32) as u16);
        let rate_index = ((effective_rate - RATE_PAR1) / RATE_PAR1).clamp(0, RATE_PAR2) as usize;
        loss = loss.min(MAX - 1);
        let mut delta = table[rate_index * PACKET_LOSS_MAX + usize::from(loss)];
        if avg_total_packets > 1 {
            delta = delta.max(FIRST_PARTITION_PROT);
        }
        delta = delta.min(MAX - 1);

        let delta_packets = (0.5 + self.packets_per_frame) as u8;
        let key_packets = (0.5 + self.packets_per_frame_key) as u8;
        let boost = key_packets.checked_div(delta_packets).map_or(2, |ratio| ratio.max(2));
        let key_index =
            (1 + (i32::from(boost) * effective_rate - RATE_PAR1) / RATE_PAR1).clamp(0, RATE_PAR2) as usize;
        let key_table = table[key_index * PACKET_LOSS_MAX + usize::from(loss)];
        let boosted = (2.0 * f32::from(delta)) as i32;
        let boosted = boosted.min(i32::from(MAX) - 1) as u8;
        let key = loss.max(boosted).max(key_table).min(MAX - 1);
        (key, delta)
    }

    /// Frames one set of FEC packets may span so that, on average, whole frames arrive within an
    /// RTT (`VCMNackFecMethod::ComputeMaxFramesFec`).
    fn max_frames_fec(&self) -> u32 {
        let frames = (2.0 * self.fps * self.rtt_ms as f32 / 1000.0 + 0.5) as i32;
        (frames.max(1) as u32).min(MAX_FRAMES_FEC)
    }

    /// `VCMNackFecMethod::BitRateTooLowForFec`.
    fn bitrate_too_low_for_fec(&self) -> bool {
        let bytes_per_frame = 1000 * self.kbits_per_frame() / 8;
        let max_bytes = if self.pixels <= 352 * 288 {
            400
        } else if self.pixels > 640 * 480 {
            1000
        } else {
            700
        };
        bytes_per_frame < max_bytes && self.rtt_ms < MAX_RTT_TURN_OFF_FEC.as_millis()
    }
}

/// A share of all packets to FEC packets per source packet (`VCMFecMethod::ConvertFECRate`).
fn convert_fec_rate(share: u8) -> u8 {
    (0.5 + 255.0 * f64::from(share) / f64::from(255 - share)).min(255.0) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(kbps: u64, loss: f64, rtt_ms: i64) -> FecInputs {
        FecInputs {
            rate: Bitrate::kbps(kbps),
            fps: 30.0,
            loss,
            rtt: Duration::from_millis(rtt_ms),
            width: 640,
            height: 480,
        }
    }

    #[test]
    fn no_loss_no_fec() {
        let mut c = FecController::new(true, DataSize::bytes(1200));
        assert_eq!(
            c.update(Instant::ZERO, &inputs(1000, 0.0, 100)),
            Protection {
                delta: FecParams { rate: 0, max_frames: 6 },
                key: FecParams { rate: 0, max_frames: 6 },
            }
        );
    }

    #[test]
    fn protection_follows_libwebrtcs_table_and_rules() {
        // 1 Mbit/s at 30 fps, VGA: 33 kbit per frame; resolution factor (405504/307200)^0.3 =
        // 1.087 → effective rate 35, row 6. Loss 5 % → 12/255 after × 256 → column 12.
        let mut c = FecController::new(false, DataSize::bytes(1200));
        let p = c.update(Instant::ZERO, &inputs(1000, 0.05, 100));
        let table = rate_table();
        let delta = table[6 * 129 + 12].max(51);
        assert_eq!(p.delta.rate, convert_fec_rate(delta));
        assert_eq!(p.delta.max_frames, 1, "FEC alone protects frame by frame");
        // Key: row 1 + (2 × 35 − 5) / 5 = 14; at least twice the delta factor.
        let key = table[14 * 129 + 12].max(2 * delta).clamp(12, 128);
        assert_eq!(p.key.rate, convert_fec_rate(key));
        assert!(p.key.rate >= p.delta.rate);
    }

    #[test]
    fn with_nack_a_short_rtt_leaves_delta_frames_to_retransmission() {
        let mut c = FecController::new(true, DataSize::bytes(1200));
        let p = c.update(Instant::ZERO, &inputs(1000, 0.05, 10));
        assert_eq!(p.delta.rate, 0);
        assert!(p.key.rate > 0, "keyframes keep their protection");
        assert_eq!(p.delta.max_frames, 1, "2 × 30 fps × 10 ms + 0.5 = 1.1");
        let p = c.update(Instant::ZERO, &inputs(1000, 0.05, 50));
        assert!(p.delta.rate > 0);
        assert_eq!(p.delta.max_frames, 3, "2 × 30 × 0.05 + 0.5 = 3.5");
        let p = c.update(Instant::ZERO, &inputs(1000, 0.05, 300));
        assert_eq!(p.delta.max_frames, MAX_FRAMES_FEC);
    }

    #[test]
    fn with_nack_small_frames_get_no_fec_unless_the_rtt_is_long() {
        let mut c = FecController::new(true, DataSize::bytes(1200));
        // 150 kbit/s at 30 fps: 5 kbit = 625 B per frame, below VGA's 700 B.
        assert_eq!(c.update(Instant::ZERO, &inputs(150, 0.1, 100)).key.rate, 0);
        assert!(c.update(Instant::ZERO, &inputs(150, 0.1, 250)).key.rate > 0);
        // Without NACK there is no such floor: keyframes are protected at least at the loss.
        // (Delta frames get none: the table's lowest rate row is 0 below 13 % loss.)
        let mut c = FecController::new(false, DataSize::bytes(1200));
        let p = c.update(Instant::ZERO, &inputs(150, 0.1, 100));
        assert_eq!(p.key.rate, convert_fec_rate(25));
        assert_eq!(p.delta.rate, 0);
    }

    #[test]
    fn loss_is_the_maximum_over_ten_seconds() {
        let mut c = FecController::new(false, DataSize::bytes(1200));
        let at = |ms| Instant::from_millis(ms);
        assert_eq!(c.filtered_loss(at(0), 20), 20);
        assert_eq!(c.filtered_loss(at(500), 0), 20);
        assert_eq!(c.filtered_loss(at(1000), 5), 20);
        // Still within ten windows of the 20.
        assert_eq!(c.filtered_loss(at(9000), 0), 20);
        assert_eq!(c.filtered_loss(at(10_500), 0), 5, "the 20 is older than 10 s");
        assert_eq!(c.filtered_loss(at(25_000), 0), 0);
    }

    #[test]
    fn factors_convert_to_fec_per_source_packet() {
        assert_eq!(convert_fec_rate(0), 0);
        // 51/255 of all packets = 20 %: 0.25 per source packet = 63.75/255 → 64.
        assert_eq!(convert_fec_rate(51), 64);
        assert_eq!(convert_fec_rate(128), 255, "just over half: capped at one per packet");
    }
}
