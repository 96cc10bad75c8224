//! A learned policy as a receiver-side bandwidth estimator: the receiver builds the challenge's
//! observation from the packets it gets ([`super::observation`]), asks the policy for an estimate
//! every 60 ms, and sends each estimate to the sender in a REMB (draft-alvestrand-rmcat-remb-03
//! §2.2), as the challenge's policies run in Microsoft Teams' receivers. The sender follows it
//! ([`super::FollowEstimate`]).
//!
//! Decisions fall on the 60 ms grid from the run's zero after the call starts: the first at the
//! first multiple of 60 ms after the receiver starts, then every 60 ms, whatever arrives. A
//! decision at t sees the packets that arrived before t (not at t): the same steps and the same
//! packets as `rtcbench.learned.observations` reads from a run's tables, so a policy run offline
//! on exported observations gives the same estimates (tests/test_onnx.py).
//!
//! The send instant of a packet is its abs-send-time (the 24-bit header extension every rtcbench
//! and libwebrtc sender stamps) placed within 32 s before its arrival ([`send_instant`]): what the
//! receiver knows, to 3.8 µs.

use std::fmt;

use rtcbench_units::{Bitrate, DataSize, Instant, SeqNo, SeqUnwrapper};
use rtcbench_wire::rtp::{abs_send_time_delta, abs_send_time_from};

use super::observation::{Arrival, ObservationBuilder, PacketClass, OBSERVATION_LEN, STEP};
use super::policy::{Decision, LearnedPolicy, Policy, PolicyFailure};
use crate::controller::{ControllerMetrics, Metric};

/// When a packet stamped `abs_send_time` and arriving at `arrival` was sent: the instant with that
/// abs-send-time within the 32 s before (or after) its arrival.
pub fn send_instant(arrival: Instant, abs_send_time: u32) -> Instant {
    arrival - abs_send_time_delta(abs_send_time_from(arrival), abs_send_time)
}

/// The send instant a receiver reads for a packet sent at `sent` and arriving at `arrival`: its
/// abs-send-time stamp placed by [`send_instant`]. Readers of a run's tables use it so that
/// their observations are the receiver's.
pub fn as_received(arrival: Instant, sent: Instant) -> Instant {
    send_instant(arrival, abs_send_time_from(sent))
}

/// The first decision instant of a receiver that starts at `start`: the first multiple of the
/// step after it.
pub fn first_decision(start: Instant) -> Instant {
    let step = STEP.as_micros();
    Instant::from_micros((start.as_micros().div_euclid(step) + 1) * step)
}

/// A receiver's learned estimator.
pub struct LearnedEstimator {
    name: String,
    /// `None` once the policy failed (or could not be built): no more decisions.
    policy: Option<Box<dyn Policy>>,
    failure: PolicyFailure,
    builder: ObservationBuilder,
    next: Instant,
    /// The latest decision and its instant.
    latest: Option<(Instant, Decision)>,
    /// An estimate not yet sent.
    pending: Option<Bitrate>,
    /// A decision not yet taken by [`LearnedEstimator::take_decided`].
    decided: bool,
    /// Sequence numbers per stream (SSRC), unwrapped.
    streams: Vec<(u32, SeqUnwrapper<16>)>,
}

impl fmt::Debug for LearnedEstimator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LearnedEstimator")
            .field("name", &self.name)
            .field("next", &self.next)
            .field("latest", &self.latest)
            .finish_non_exhaustive()
    }
}

impl LearnedEstimator {
    /// An estimator running an instance of `policy` for a receiver that starts at `start`. If
    /// the instance cannot be made, the run's failure says why and no decision is taken.
    pub fn new(policy: &LearnedPolicy, start: Instant) -> Self {
        let instance = match policy.source.instance() {
            Ok(p) => Some(p),
            Err(e) => {
                policy.failure.set(format!("{}: {e}", policy.name));
                None
            }
        };
        Self {
            name: policy.name.clone(),
            policy: instance,
            failure: policy.failure.clone(),
            builder: ObservationBuilder::new(),
            next: first_decision(start),
            latest: None,
            pending: None,
            decided: false,
            streams: Vec::new(),
        }
    }

    /// A packet arrived at `now`: its abs-send-time, size on the wire, stream (SSRC) and RTP
    /// sequence number if it counts for loss, and class. Decisions due at or before `now` are
    /// taken first: they do not see it.
    pub fn on_packet(
        &mut self,
        now: Instant,
        abs_send_time: u32,
        size: DataSize,
        seq: Option<(u32, u16)>,
        class: PacketClass,
    ) {
        self.on_timeout(now);
        let seq = seq.map(|(stream, seq)| {
            let i = match self.streams.iter().position(|(s, _)| *s == stream) {
                Some(i) => i,
                None => {
                    self.streams.push((stream, SeqUnwrapper::new()));
                    self.streams.len() - 1
                }
            };
            // Negative only for a packet older than the stream's first by half the space: it
            // is counted as the first, which is as good as any.
            (stream, self.streams[i].1.unwrap(SeqNo::new(u64::from(seq))).max(0) as u64)
        });
        self.builder.on_arrival(&Arrival {
            arrival: now,
            sent: send_instant(now, abs_send_time),
            size,
            seq,
            class,
        });
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        self.policy.is_some().then_some(self.next)
    }

    /// Takes every decision due at or before `now`.
    pub fn on_timeout(&mut self, now: Instant) {
        while self.next <= now {
            let Some(policy) = &mut self.policy else { return };
            let at = self.next;
            self.next = at + STEP;
            let obs = self.builder.observe(at);
            match policy.decide(&obs) {
                Ok(d) => {
                    self.latest = Some((at, d));
                    self.pending = Some(Bitrate::from_bps_f64(d.estimate));
                    self.decided = true;
                }
                Err(e) => {
                    let s = at.as_micros() as f64 / 1e6;
                    self.failure.set(format!("{}: the decision at {s:.3} s failed: {e}", self.name));
                    self.policy = None;
                }
            }
        }
    }

    /// The next decision's instant and the observation it will see if nothing arrives before
    /// it; `None` once the policy failed. A driver that decides from outside
    /// ([`super::Agent`]) reads it after running every event before the instant.
    pub fn next_observation(&self) -> Option<(Instant, [f32; OBSERVATION_LEN])> {
        self.next_decision().map(|at| (at, self.builder.observation(at)))
    }

    /// The next decision's instant; `None` once the policy failed.
    pub fn next_decision(&self) -> Option<Instant> {
        self.policy.as_ref().map(|_| self.next)
    }

    /// Whether a decision was taken since the last call (for a trace that records each).
    pub fn take_decided(&mut self) -> bool {
        std::mem::take(&mut self.decided)
    }

    /// The estimate to send now, once per decision.
    pub fn poll_remb(&mut self) -> Option<Bitrate> {
        self.pending.take()
    }

    /// The latest decision: its instant (`decided_at_ms`, a multiple of 60 ms, which places it
    /// among a run's steps), the estimate and the spread.
    pub fn metrics(&self) -> ControllerMetrics {
        let (at, d) = match self.latest {
            Some((at, d)) => (Some(at - Instant::ZERO), Some(d)),
            None => (None, None),
        };
        ControllerMetrics::new()
            .with("policy_estimate", Metric::Rate(d.map(|d| Bitrate::from_bps_f64(d.estimate))))
            .with("policy_spread", Metric::Real(d.and_then(|d| d.spread)))
            .with("decided_at", Metric::Time(at))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::learned::observation::{Feature, OBSERVATION_LEN};
    use crate::learned::policy::PolicySource;
    use rtcbench_units::Duration;

    /// Records every observation it is given; decides the received packets of the latest short
    /// interval × 1000 bit/s, or fails from its `fail_at`th decision on.
    struct Scripted {
        seen: Arc<Mutex<Vec<[f32; OBSERVATION_LEN]>>>,
        fail_at: Option<usize>,
    }

    impl Policy for Scripted {
        fn decide(&mut self, obs: &[f32; OBSERVATION_LEN]) -> Result<Decision, String> {
            let mut seen = self.seen.lock().unwrap();
            seen.push(*obs);
            if self.fail_at.is_some_and(|n| seen.len() >= n) {
                return Err("scripted failure".into());
            }
            let packets = f64::from(obs[Feature::ReceivedPackets.index(false, 0)]);
            Ok(Decision { estimate: packets * 1000.0, spread: None })
        }
    }

    struct Source {
        seen: Arc<Mutex<Vec<[f32; OBSERVATION_LEN]>>>,
        fail_at: Option<usize>,
    }

    impl PolicySource for Source {
        fn instance(&self) -> Result<Box<dyn Policy>, String> {
            Ok(Box::new(Scripted { seen: self.seen.clone(), fail_at: self.fail_at }))
        }
    }

    fn policy(fail_at: Option<usize>) -> (LearnedPolicy, Arc<Mutex<Vec<[f32; OBSERVATION_LEN]>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        (LearnedPolicy::new("scripted", Arc::new(Source { seen: seen.clone(), fail_at })), seen)
    }

    fn ms(ms: i64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn send_instants_come_from_abs_send_time_across_its_wrap() {
        for (sent, arrival) in [(ms(1_000), ms(1_050)), (ms(63_990), ms(64_030)), (ms(200_000), ms(200_400))]
        {
            let got = send_instant(arrival, abs_send_time_from(sent));
            assert!((got - sent).abs() <= Duration::from_micros(4), "{sent:?} -> {got:?}");
        }
    }

    #[test]
    fn decisions_fall_on_the_grid_and_see_only_earlier_arrivals() {
        assert_eq!(first_decision(Instant::ZERO), ms(60));
        assert_eq!(first_decision(ms(59)), ms(60));
        assert_eq!(first_decision(ms(60)), ms(120));
        let (p, seen) = policy(None);
        let mut e = LearnedEstimator::new(&p, ms(10));
        assert_eq!(e.poll_timeout(), Some(ms(60)));
        let pkt = |e: &mut LearnedEstimator, at: i64, seq: u16| {
            e.on_packet(
                ms(at),
                abs_send_time_from(ms(at - 20)),
                DataSize::bytes(1200),
                Some((7, seq)),
                PacketClass::Video,
            )
        };
        pkt(&mut e, 20, 0);
        pkt(&mut e, 40, 1);
        // Arriving at the decision instant: the decision is taken first, without it.
        pkt(&mut e, 60, 2);
        assert_eq!(seen.lock().unwrap().len(), 1);
        assert_eq!(e.poll_remb(), Some(Bitrate::bps(2000)));
        assert_eq!(e.poll_remb(), None);
        // A gap of two: seen by the next decision, at 120 ms.
        pkt(&mut e, 100, 5);
        e.on_timeout(ms(130));
        let obs = seen.lock().unwrap()[1];
        assert_eq!(obs[Feature::ReceivedPackets.index(false, 0)], 2.0);
        assert_eq!(obs[Feature::LossRatio.index(false, 0)], 0.5);
        // 20 ms, to the abs-send-time's tick (3.8 µs).
        assert!((obs[Feature::MinimumSeenDelay.index(false, 0)] - 20.0).abs() < 0.004);
        assert_eq!(e.poll_timeout(), Some(ms(180)));
        let m = e.metrics();
        assert!(m
            .values
            .iter()
            .any(|(n, v)| *n == "decided_at" && *v == Metric::Time(Some(Duration::from_millis(120)))));
    }

    #[test]
    fn a_failing_policy_stops_deciding_and_says_when() {
        let (p, seen) = policy(Some(2));
        let mut e = LearnedEstimator::new(&p, Instant::ZERO);
        e.on_timeout(ms(300));
        assert_eq!(seen.lock().unwrap().len(), 2);
        assert_eq!(e.poll_timeout(), None);
        assert_eq!(p.failure.get(), Some("scripted: the decision at 0.120 s failed: scripted failure"));
    }
}
