//! Constant-bit-rate audio source: RFC 8867 §4.3's default audio (CBR, 20 kbit/s), sent as one
//! packet per codec frame of 20 ms (Opus's default frame duration), i.e. 50 bytes at 50 packets/s.
//!
//! Frame sizes are derived from the cumulative byte count, so when rate × interval is not a whole
//! number of bytes the sizes alternate and the long-run rate is still exact.
//!
//! Drive loop: call [`AudioSource::on_timeout`] when the clock reaches
//! [`AudioSource::poll_timeout`].

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

/// Parameters of the CBR audio source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AudioConfig {
    /// Payload bit rate (RFC 8867 §4.3: 20 kbit/s).
    pub rate: Bitrate,
    /// Time between packets, one codec frame each (20 ms).
    pub packet_interval: Duration,
}

impl Default for AudioConfig {
    fn default() -> Self {
        Self { rate: Bitrate::kbps(20), packet_interval: Duration::from_millis(20) }
    }
}

/// One audio frame (one RTP packet's payload).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AudioFrame {
    pub index: u64,
    pub capture: Instant,
    pub size: DataSize,
}

/// CBR audio source.
#[derive(Clone, Debug)]
pub struct AudioSource {
    cfg: AudioConfig,
    start: Instant,
    next_index: u64,
}

impl AudioSource {
    /// A source whose first frame is captured at `start`.
    ///
    /// # Panics
    /// If `cfg.packet_interval` is not positive.
    pub fn new(cfg: AudioConfig, start: Instant) -> Self {
        assert!(cfg.packet_interval > Duration::ZERO, "AudioConfig.packet_interval must be > 0");
        Self { cfg, start, next_index: 0 }
    }

    pub fn config(&self) -> &AudioConfig {
        &self.cfg
    }

    /// Capture time of the next frame.
    pub fn poll_timeout(&self) -> Instant {
        self.capture_time(self.next_index)
    }

    /// Returns the frame due at [`Self::poll_timeout`] if `now` has reached it (one per call).
    pub fn on_timeout(&mut self, now: Instant) -> Option<AudioFrame> {
        let index = self.next_index;
        let capture = self.capture_time(index);
        if now < capture {
            return None;
        }
        self.next_index += 1;
        // Bytes produced up to the end of this frame minus those up to its start.
        let size = self.bytes_before(index + 1) - self.bytes_before(index);
        Some(AudioFrame { index, capture, size })
    }

    fn capture_time(&self, index: u64) -> Instant {
        self.start + self.cfg.packet_interval * index as i64
    }

    fn bytes_before(&self, index: u64) -> DataSize {
        self.cfg.rate * (self.cfg.packet_interval * index as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(src: &mut AudioSource, until: Instant) -> Vec<AudioFrame> {
        let mut out = Vec::new();
        while src.poll_timeout() < until {
            out.push(src.on_timeout(src.poll_timeout()).unwrap());
        }
        out
    }

    #[test]
    fn default_is_50_byte_frames_at_50_per_second() {
        let mut src = AudioSource::new(AudioConfig::default(), Instant::from_secs(1));
        assert_eq!(src.on_timeout(Instant::from_millis(999)), None);
        let frames = run(&mut src, Instant::from_secs(11));
        assert_eq!(frames.len(), 500);
        assert!(frames.iter().all(|f| f.size == DataSize::bytes(50)));
        assert_eq!(frames[1].capture - frames[0].capture, Duration::from_millis(20));
        let total: DataSize = frames.iter().map(|f| f.size).sum();
        assert_eq!(total / Duration::from_secs(10), Bitrate::kbps(20));
    }

    #[test]
    fn fractional_frame_sizes_keep_the_rate_exact() {
        // 12 kbit/s × 20 ms = 30 bytes; 13 kbit/s × 20 ms = 32.5 bytes, alternating 32 and 33.
        let cfg = AudioConfig { rate: Bitrate::kbps(13), packet_interval: Duration::from_millis(20) };
        let mut src = AudioSource::new(cfg, Instant::ZERO);
        let frames = run(&mut src, Instant::from_secs(10));
        assert!(frames.iter().all(|f| f.size == DataSize::bytes(32) || f.size == DataSize::bytes(33)));
        let total: DataSize = frames.iter().map(|f| f.size).sum();
        assert_eq!(total / Duration::from_secs(10), Bitrate::kbps(13));
    }
}
