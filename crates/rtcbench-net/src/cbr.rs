//! Constant-bit-rate UDP traffic: one fixed-size packet every `size / rate`, with a rate that
//! may follow a schedule (RFC 8867 §4.2's "UDP background" capacity mechanism, where the
//! background rate is the physical rate less the capacity the scenario wants to leave free).
//!
//! Emission times are exact at every rate change: a packet that straddles a step is finished
//! at the new rate (the bits already "earned" at the old rate count), as a token bucket of
//! one packet would do.

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

/// A CBR source, sans-IO: wake it at [`poll_timeout`](Self::poll_timeout) and call
/// [`on_timeout`](Self::on_timeout), which says whether a packet leaves now.
#[derive(Clone, Debug)]
pub struct CbrSource {
    /// Piecewise-constant rate: from each instant until the next (sorted, first at `start`).
    steps: Vec<(Instant, Bitrate)>,
    size: DataSize,
    stop: Instant,
    next: Option<Instant>,
}

impl CbrSource {
    /// A source of `size`-byte packets at a constant `rate` from `start` until `stop`.
    pub fn constant(rate: Bitrate, size: DataSize, start: Instant, stop: Instant) -> Self {
        Self::scheduled(vec![(start, rate)], size, stop)
    }

    /// A source whose rate follows `steps` (sorted by time; the first step is the start).
    ///
    /// # Panics
    /// If `steps` is empty or `size` is zero.
    pub fn scheduled(steps: Vec<(Instant, Bitrate)>, size: DataSize, stop: Instant) -> Self {
        assert!(!steps.is_empty() && size > DataSize::ZERO, "a CBR source needs a rate and a packet size");
        let mut source = Self { next: None, steps, size, stop };
        let start = source.steps[0].0;
        source.next = source.emission_after(start, DataSize::ZERO);
        source
    }

    /// Bytes on the wire of each packet.
    pub fn packet_size(&self) -> DataSize {
        self.size
    }

    /// When the next packet leaves, if any.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.next
    }

    /// `true` if a packet leaves at `now` (the caller sends it); then schedules the next.
    pub fn on_timeout(&mut self, now: Instant) -> bool {
        match self.next {
            Some(t) if t <= now => {
                self.next = self.emission_after(t, self.size);
                true
            }
            _ => false,
        }
    }

    /// The rate in force at `t` (zero before the first step).
    fn rate_at(&self, t: Instant) -> Bitrate {
        self.steps.iter().take_while(|(at, _)| *at <= t).last().map_or(Bitrate::ZERO, |(_, r)| *r)
    }

    /// The instant at which `owed` more bytes have been earned, counting from `from` at the
    /// scheduled rates; `None` if that is at or after `stop` or never happens.
    fn emission_after(&self, from: Instant, owed: DataSize) -> Option<Instant> {
        let mut t = from;
        let mut owed_bits = owed.as_bits() as f64;
        loop {
            if t >= self.stop {
                return None;
            }
            let rate = self.rate_at(t);
            let next_step = self.steps.iter().map(|(at, _)| *at).find(|at| *at > t);
            let rate_bps = rate.as_bps() as f64;
            if rate_bps > 0.0 {
                let done = t + Duration::from_micros((owed_bits / rate_bps * 1e6).ceil() as i64);
                match next_step {
                    Some(step) if step < done => owed_bits -= rate_bps * (step - t).as_secs_f64(),
                    _ => return (done < self.stop).then_some(done),
                }
            }
            t = next_step?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_ms(ms: i64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    fn emissions(mut s: CbrSource) -> Vec<Instant> {
        let mut out = Vec::new();
        while let Some(t) = s.poll_timeout() {
            assert!(s.on_timeout(t));
            out.push(t);
        }
        out
    }

    #[test]
    fn constant_rate_spaces_packets_by_size_over_rate() {
        // 1200 B at 960 kbit/s: one packet every 10 ms, the first at the start.
        let s = CbrSource::constant(Bitrate::kbps(960), DataSize::bytes(1200), at_ms(0), at_ms(100));
        let got = emissions(s);
        assert_eq!(got, (0..10).map(|k| at_ms(10 * k)).collect::<Vec<_>>());
    }

    #[test]
    fn a_packet_straddling_a_rate_change_finishes_at_the_new_rate() {
        // 960 kbit/s until 15 ms, then 480 kbit/s. From the 10 ms packet, 5 ms (600 B) is earned at
        // the old rate; the other 600 B takes 10 ms at the new one: next packet at 25 ms, then
        // every 20 ms.
        let steps = vec![(at_ms(0), Bitrate::kbps(960)), (at_ms(15), Bitrate::kbps(480))];
        let got = emissions(CbrSource::scheduled(steps, DataSize::bytes(1200), at_ms(70)));
        assert_eq!(got, [at_ms(0), at_ms(10), at_ms(25), at_ms(45), at_ms(65)]);
    }

    #[test]
    fn a_zero_rate_pauses_until_the_next_step() {
        let steps = vec![(at_ms(0), Bitrate::ZERO), (at_ms(50), Bitrate::kbps(960))];
        let got = emissions(CbrSource::scheduled(steps, DataSize::bytes(1200), at_ms(75)));
        assert_eq!(got, [at_ms(50), at_ms(60), at_ms(70)]);
    }

    #[test]
    fn the_mean_rate_over_a_long_run_is_the_scheduled_rate() {
        let steps = vec![(at_ms(0), Bitrate::kbps(3000)), (at_ms(4000), Bitrate::kbps(1500))];
        let got = emissions(CbrSource::scheduled(steps, DataSize::bytes(1000), at_ms(8000)));
        let before = got.iter().filter(|t| **t < at_ms(4000)).count();
        assert_eq!(before, 1500); // 3 Mbit/s × 4 s / 8000 bit
        assert_eq!(got.len() - before, 750);
    }
}
