//! The on/off application of a short TCP flow (RFC 8868 §5.1, RFC 8867 §5.7): a burst of
//! `files` downloads of uniformly distributed size, then an exponentially distributed idle time
//! once the burst is acknowledged, and so on. The TCP sender carries the bytes; this decides
//! when and how many.

use rand::RngExt;
use rtcbench_units::{DataSize, Duration, Instant};

use rtcbench_net::rng::SimRng;

/// Parameters of an on/off source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OnOffConfig {
    pub size_min: DataSize,
    pub size_max: DataSize,
    /// Files per burst (RFC 8868 §5.1's browser opens 30; RFC 8867 §5.7's flow downloads one).
    pub files: u32,
    pub idle_mean: Duration,
}

/// One completed burst, for flow-completion-time metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Burst {
    pub start: Instant,
    pub end: Instant,
    pub size: DataSize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Waiting until the next burst.
    Idle { until: Instant },
    /// A burst of `size` bytes, written at `start`, not yet fully acknowledged.
    Busy { start: Instant, size: DataSize },
}

/// An on/off source, sans-IO.
#[derive(Clone, Debug)]
pub struct OnOff {
    cfg: OnOffConfig,
    rng: SimRng,
    state: State,
}

impl OnOff {
    /// A source that starts with a burst at `start` if `on`, otherwise after an idle time.
    pub fn new(cfg: OnOffConfig, on: bool, start: Instant, mut rng: SimRng) -> Self {
        let until = if on { start } else { start + idle_time(&mut rng, cfg.idle_mean) };
        Self { cfg, rng, state: State::Idle { until } }
    }

    /// When the next burst begins, while idle.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match self.state {
            State::Idle { until } => Some(until),
            State::Busy { .. } => None,
        }
    }

    /// The bytes of a burst that begins at `now`, if one is due.
    pub fn on_timeout(&mut self, now: Instant) -> Option<DataSize> {
        match self.state {
            State::Idle { until } if until <= now => {
                let (lo, hi) = (self.cfg.size_min.as_bytes(), self.cfg.size_max.as_bytes());
                let size = (0..self.cfg.files)
                    .map(|_| DataSize::bytes(self.rng.random_range(lo..=hi)))
                    .sum::<DataSize>();
                self.state = State::Busy { start: now, size };
                Some(size)
            }
            _ => None,
        }
    }

    /// Everything written is acknowledged at `now`: the burst is over and an idle time starts.
    pub fn on_all_acked(&mut self, now: Instant) -> Option<Burst> {
        let State::Busy { start, size } = self.state else { return None };
        self.state = State::Idle { until: now + idle_time(&mut self.rng, self.cfg.idle_mean) };
        Some(Burst { start, end: now, size })
    }
}

/// An exponentially distributed idle time (inverse transform of a uniform draw).
fn idle_time(rng: &mut SimRng, mean: Duration) -> Duration {
    let u: f64 = rng.random();
    Duration::from_micros((-(1.0 - u).ln() * mean.as_micros() as f64).round() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtcbench_net::rng::rng_for;

    fn cfg(files: u32) -> OnOffConfig {
        OnOffConfig {
            size_min: DataSize::kbytes(30),
            size_max: DataSize::kbytes(50),
            files,
            idle_mean: Duration::from_secs(10),
        }
    }

    #[test]
    fn a_burst_waits_for_its_acknowledgement_before_the_idle_time() {
        let t0 = Instant::from_secs(5);
        let mut s = OnOff::new(cfg(1), true, t0, rng_for(1, "t"));
        assert_eq!(s.poll_timeout(), Some(t0));
        let size = s.on_timeout(t0).unwrap();
        assert!((30_000..=50_000).contains(&size.as_bytes()));
        assert_eq!(s.poll_timeout(), None);
        assert_eq!(s.on_timeout(t0 + Duration::from_secs(100)), None);
        let done = t0 + Duration::from_millis(300);
        assert_eq!(s.on_all_acked(done), Some(Burst { start: t0, end: done, size }));
        assert!(s.poll_timeout().unwrap() > done);
    }

    #[test]
    fn burst_sizes_and_idle_times_have_the_configured_means() {
        let mut s = OnOff::new(cfg(30), false, Instant::ZERO, rng_for(3, "t"));
        let (mut sizes, mut idles) = (Vec::new(), Vec::new());
        let mut last_end = Instant::ZERO;
        for _ in 0..2000 {
            let t = s.poll_timeout().unwrap();
            idles.push((t - last_end).as_secs_f64());
            sizes.push(s.on_timeout(t).unwrap().as_bytes() as f64);
            last_end = t;
            s.on_all_acked(t);
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        // 30 files of U[30, 50] KB: 1.2 MB a burst (the 30 draws make it tight).
        assert!((mean(&sizes) - 1_200_000.0).abs() < 5_000.0, "{}", mean(&sizes));
        // Exp(10 s): the mean of 2000 draws is within 5 % (its standard error is 2.2 %).
        assert!((mean(&idles) - 10.0).abs() < 0.5, "{}", mean(&idles));
    }
}
