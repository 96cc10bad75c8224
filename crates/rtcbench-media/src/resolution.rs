//! The encoded resolution of the synthetic video: which rung of a resolution ladder the encoder
//! sends at, given its target rate.
//!
//! The ladder is libwebrtc's default for VP8 with one stream
//! (`EncoderInfoSettings::GetDefaultSinglecastBitrateLimits`,
//! rtc_base/experiments/encoder_info_settings.cc): a resolution is used from its "minimum start
//! bitrate" on, 320×180 from 0, 480×270 from 200 kbit/s, 640×360 from 300, 960×540 from 500,
//! 1280×720 from 900, capped at the camera's resolution.
//!
//! libwebrtc itself moves down when the encoder's QP shows poor quality (the quality scaler) and
//! moves up when the target allows the next rung's start bitrate (the bitrate constraint); the
//! synthetic encoder has no QP, so here both directions follow the target rate: down at once
//! when the target falls below the current rung's start bitrate, up when it has stayed at or
//! above 110 % of the next rung's for [`UPSCALE_HOLD`], as the quality scaler's samples span
//! seconds. The resolution does not change the frame sizes, which follow the target alone
//! (RFC 8593 §5); it is what a viewer would see, reported per frame (`frames.parquet`).

use rtcbench_units::{Bitrate, Duration, Instant};

/// (width, height, start bitrate in bit/s): libwebrtc's VP8 singlecast defaults.
pub const LADDER: [(u16, u16, u64); 5] =
    [(320, 180, 0), (480, 270, 200_000), (640, 360, 300_000), (960, 540, 500_000), (1280, 720, 900_000)];

/// An upscale needs the target at this multiple of the next rung's start bitrate...
pub const UPSCALE_MARGIN: f64 = 1.1;
/// ...for this long.
pub const UPSCALE_HOLD: Duration = Duration::from_secs(2);

/// The ladder state of one video source.
#[derive(Clone, Debug)]
pub struct ResolutionLadder {
    /// Rungs up to the camera's resolution.
    top: usize,
    rung: usize,
    /// Since when the target has allowed the next rung.
    allowed_since: Option<Instant>,
}

impl ResolutionLadder {
    /// A ladder capped at a camera of `width`×`height` (the largest rung not larger in pixels;
    /// the smallest if the camera is smaller), starting at the rung `start_rate` allows.
    pub fn new(width: u16, height: u16, start_rate: Bitrate) -> Self {
        let pixels = u32::from(width) * u32::from(height);
        let top = LADDER.iter().rposition(|&(w, h, _)| u32::from(w) * u32::from(h) <= pixels).unwrap_or(0);
        let rung = (0..=top).rev().find(|&i| start_rate.as_bps() >= LADDER[i].2).unwrap_or(0);
        Self { top, rung, allowed_since: None }
    }

    /// The resolution of a frame encoded at `now` with target `rate`.
    pub fn on_frame(&mut self, now: Instant, rate: Bitrate) -> (u16, u16) {
        let bps = rate.as_bps();
        while self.rung > 0 && bps < LADDER[self.rung].2 {
            self.rung -= 1;
            self.allowed_since = None;
        }
        let next = self.rung + 1;
        if next <= self.top && bps as f64 >= LADDER[next].2 as f64 * UPSCALE_MARGIN {
            let since = *self.allowed_since.get_or_insert(now);
            if now - since >= UPSCALE_HOLD {
                self.rung = next;
                self.allowed_since = None;
            }
        } else {
            self.allowed_since = None;
        }
        (LADDER[self.rung].0, LADDER[self.rung].1)
    }

    /// Whether the ladder is at its top rung, the largest the camera allows.
    pub fn at_top(&self) -> bool {
        self.rung == self.top
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    #[test]
    fn the_start_rate_picks_the_first_rung() {
        assert_eq!(
            ResolutionLadder::new(1280, 720, Bitrate::kbps(150)).on_frame(at(0), Bitrate::kbps(150)),
            (320, 180)
        );
        assert_eq!(
            ResolutionLadder::new(1280, 720, Bitrate::kbps(1000)).on_frame(at(0), Bitrate::kbps(1000)),
            (1280, 720)
        );
        // A 640×480 camera tops out at the largest rung not larger: 640×360.
        assert_eq!(
            ResolutionLadder::new(640, 480, Bitrate::kbps(2000)).on_frame(at(0), Bitrate::kbps(2000)),
            (640, 360)
        );
    }

    #[test]
    fn it_steps_down_at_once_and_up_after_two_seconds_above_the_margin() {
        let mut l = ResolutionLadder::new(1280, 720, Bitrate::kbps(1000));
        assert_eq!(l.on_frame(at(0), Bitrate::kbps(1000)), (1280, 720));
        // 400 kbit/s is below 720p's and 540p's start bitrates: straight to 360p.
        assert_eq!(l.on_frame(at(33), Bitrate::kbps(400)), (640, 360));
        // 540 kbit/s allows 540p (500) but not with the 10 % margin (550): no change.
        assert_eq!(l.on_frame(at(5_000), Bitrate::kbps(540)), (640, 360));
        // 560 kbit/s does: 540p after 2 s, not before.
        assert_eq!(l.on_frame(at(6_000), Bitrate::kbps(560)), (640, 360));
        assert_eq!(l.on_frame(at(7_999), Bitrate::kbps(560)), (640, 360));
        assert_eq!(l.on_frame(at(8_000), Bitrate::kbps(560)), (960, 540));
        // A dip below the margin restarts the wait.
        assert_eq!(l.on_frame(at(9_000), Bitrate::kbps(1000)), (960, 540));
        assert_eq!(l.on_frame(at(10_000), Bitrate::kbps(900)), (960, 540));
        assert_eq!(l.on_frame(at(10_500), Bitrate::kbps(1000)), (960, 540));
        assert_eq!(l.on_frame(at(12_499), Bitrate::kbps(1000)), (960, 540));
        assert_eq!(l.on_frame(at(12_500), Bitrate::kbps(1000)), (1280, 720));
        assert!(l.at_top());
        l.on_frame(at(12_533), Bitrate::kbps(800));
        assert!(!l.at_top());
    }
}
