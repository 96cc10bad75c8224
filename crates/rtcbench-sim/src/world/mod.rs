//! A whole run: the network and the calls of one resolved scenario, driven by one event heap
//! until the scenario's duration. A run is a pure function of (scenario, controller, seed).
//!
//! Drive loop: every element (network element, sender, receiver, cross-traffic source) is
//! sans-IO. After anything touches an element, its `poll_timeout` is read and a wake-up is
//! scheduled if it is earlier than the one already pending; a wake-up calls the element's
//! `on_timeout` and moves what it emitted on.
//!
//! Where things are: `build` makes the world from the run's plan, `network` holds the network
//! elements behind one trait (`rtcbench_net::Element`), `run` is the event loop, `route` moves a
//! packet from hop to hop, `endpoints` hands what the calls and the cross traffic emit to the
//! network, `capture` writes pcap files.
//!
//! A [`Simulation`] is a run that its owner advances in steps (`run_until`), as a learning
//! environment does between two decisions; [`simulate_with`] is one step to the end, so both
//! process the same events in the same order and give the same trace.

mod build;
mod capture;
mod endpoints;
mod network;
mod route;
mod run;

use rtcbench_cc::external::{ExternalRate, IntervalStats};
use rtcbench_cc::learned::{Agent, LearnedEstimator, LearnedPolicy, OBSERVATION_LEN};
use rtcbench_cc::{AnyController, Controller, ControllerKind};
use rtcbench_units::{Bitrate, Duration, Instant};

use crate::call::{CallPlumbing, ForwarderPlumbing, Receiver, Sender};
use crate::cross::{CbrFlow, TcpSink, TcpSource};
use crate::packet::FlowId;
use crate::scheduler::Scheduler;
use crate::trace::Trace;
use rtcbench_rtp::sfu::Forwarder;
use rtcbench_scenario::run::Meta;
use rtcbench_scenario::{Scenario, ScenarioError};

pub use capture::{write_pcap, CaptureWriter, Captured, CapturedTransport};
pub use network::ElementOverride;
use network::Network;
use route::{Peer, Route};

/// Link state is sampled this often (and at every capacity change).
pub const LINK_SAMPLE_INTERVAL: Duration = Duration::from_millis(10);

/// What a run produces.
pub struct RunOutput {
    pub trace: Trace,
    pub meta: Meta,
    /// Events processed (for benchmarks).
    pub events: u64,
    /// Every packet as its sender put it on the wire, if capture was asked for.
    pub capture: Vec<Captured>,
}

/// Options of a run beyond (scenario, controller, seed).
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Keep every packet's bytes for a capture file.
    pub capture: bool,
    /// The call (index into `meta.calls`) whose target rate is set from outside, through
    /// [`Simulation::set_external_target`], instead of by the run's controller: it runs
    /// [`ExternalRate`] with transport-wide feedback, and the trace names its controller
    /// `external`. The other calls run the run's controller (a [`UserController`] is built for
    /// those only). It must be a call with a sender (not an SFU's forward leg).
    pub external: Option<u32>,
    /// With [`RunOptions::external`]: that call's receiver runs `agent` as a learned policy
    /// (`--cc onnx:MODEL`'s path: decisions every 60 ms, REMB, a sender that follows), whose
    /// estimates are set from outside ([`Simulation::next_observation`], [`Agent::set`]),
    /// instead of the sender running [`ExternalRate`]. The call must have a receiver of its own
    /// (not an SFU's publish leg).
    pub agent: Option<Agent>,
}

/// The controller every call of a run uses.
pub enum ControllerChoice {
    /// A built-in controller (`--cc NAME`).
    Builtin(ControllerKind),
    /// A controller defined outside the workspace (a Python class, through rtcbench-py).
    User(UserController),
    /// A learned policy at each call's receiver (`--cc onnx:MODEL`), whose estimates the sender
    /// follows (`rtcbench_cc::learned`).
    Learned(LearnedPolicy),
}

impl ControllerChoice {
    /// The name the trace gives the controller (`meta.controller`).
    pub fn name(&self) -> &str {
        match self {
            Self::Builtin(kind) => kind.name(),
            Self::User(u) => &u.name,
            Self::Learned(p) => &p.name,
        }
    }
}

impl From<ControllerKind> for ControllerChoice {
    fn from(kind: ControllerKind) -> Self {
        Self::Builtin(kind)
    }
}

/// A controller that is not built in: how to build one per call. It runs behind the same
/// [`Controller`] trait as the built-in ones and is driven by the same sender code.
pub struct UserController {
    /// The name the trace gives it, e.g. `package.module:Class`.
    pub name: String,
    /// The per-packet feedback its receivers send.
    pub feedback: UserFeedback,
    /// Builds the controller of one call; called once per call, in call order, before the run.
    pub build: Box<BuildController>,
}

/// How a [`UserController`] builds the controller of one call.
pub type BuildController = dyn FnMut(&CallSetup) -> Box<dyn Controller> + Send;

impl std::fmt::Debug for UserController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserController").field("name", &self.name).field("feedback", &self.feedback).finish()
    }
}

/// The per-packet feedback a user-defined controller asks for; either reaches it as
/// [`rtcbench_cc::PacketResult`] batches, but only RFC 8888 carries the ECN field of each packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UserFeedback {
    /// Transport-wide feedback, every `feedback.twcc_interval` (default 50 ms).
    #[default]
    Twcc,
    /// RFC 8888, every `feedback.ccfb_interval` (default 50 ms, as transport-wide feedback).
    Ccfb,
}

/// What a user-defined controller is told about its call when it is built: the arguments the
/// built-in controllers get.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CallSetup {
    /// The call's index (`meta.calls`).
    pub call: u32,
    /// When the call starts: the `now` of the controller's first input.
    pub start: Instant,
    /// Rate limits, totals over the call's streams as libwebrtc passes them to GoogCC.
    pub min_rate: Bitrate,
    pub max_rate: Bitrate,
    pub start_rate: Bitrate,
    /// The call's priority weight (RFC 8867 §6.1; 1 unless the scenario sets it).
    pub priority: f64,
    /// A seed for the controller's own random draws, derived from the run's seed and the call,
    /// so that a run stays a pure function of (scenario, controller, seed).
    pub seed: u64,
}

#[derive(Clone, Copy, Debug)]
enum Event {
    /// A network element (`Network::elements`).
    Element(u32),
    Sender(u32),
    Receiver(u32),
    Forwarder(u32),
    TcpSource(u32),
    TcpSink(u32),
    Cbr(u32),
    Sample,
}

/// An element's pending wake-up.
type Wake = Option<Instant>;

struct World {
    sched: Scheduler<Event>,
    net: Network,
    routes: Vec<Route>,
    senders: Vec<Sender>,
    /// Per sender, where its call's datagrams go (flows, routes).
    plumbings: Vec<CallPlumbing>,
    /// Per sender, the forward legs' video flows that carry its frames too.
    frame_mirrors: Vec<Vec<FlowId>>,
    /// Per call (`meta.calls`), its sender, if it has one (an SFU's forward leg has none).
    sender_of_call: Vec<Option<u32>>,
    sender_wake: Vec<Option<Instant>>,
    receivers: Vec<Receiver>,
    /// Per receiver, its call's plumbing and whose controller traces its estimator.
    receiver_plumbings: Vec<CallPlumbing>,
    receiver_peers: Vec<Peer>,
    receiver_wake: Vec<Option<Instant>>,
    /// One per SFU-published stream.
    forwarders: Vec<Forwarder>,
    forwarder_plumbings: Vec<ForwarderPlumbing>,
    /// Per forwarder, the publisher's sender.
    forwarder_senders: Vec<u32>,
    forwarder_wake: Vec<Wake>,
    /// The elements' first wake-ups, in call order.
    first_wakes: Vec<Event>,
    tcp_sources: Vec<TcpSource>,
    tcp_source_wake: Vec<Wake>,
    /// Per flow id, the TCP source that applies TCP Small Queues to it (its first link is its
    /// host's interface and reports what leaves it).
    small_queues: Vec<Option<u32>>,
    tcp_sinks: Vec<TcpSink>,
    tcp_sink_wake: Vec<Wake>,
    cbrs: Vec<CbrFlow>,
    cbr_wake: Vec<Wake>,
    trace: Trace,
    /// The most links-table rows reserved at once (`run::reserve_link_rows`).
    link_rows_reserved: usize,
    next_packet_id: u64,
    end: Instant,
    capture: Option<Vec<Captured>>,
}

/// Runs one variant of a scenario with one controller and seed.
pub fn simulate(s: &Scenario, controller: ControllerKind, seed: u64) -> Result<RunOutput, ScenarioError> {
    simulate_with(s, controller.into(), seed, RunOptions::default())
}

/// [`simulate`] with any controller, built-in or user-defined, and options.
pub fn simulate_with(
    s: &Scenario,
    controller: ControllerChoice,
    seed: u64,
    options: RunOptions,
) -> Result<RunOutput, ScenarioError> {
    Ok(Simulation::new(s, controller, seed, options)?.finish())
}

/// A run advanced by its owner: `run_until(t)` processes every event due at or before `t`, in the
/// order one uninterrupted run would, so stepping changes nothing in the trace. Between steps the
/// owner may read the run's state and set the rate of the call [`RunOptions::external`] names;
/// [`Simulation::finish`] runs to the end and returns what [`simulate_with`] would.
///
/// ```
/// # use rtcbench_sim::{Simulation, RunOptions};
/// # use rtcbench_cc::ControllerKind;
/// # use rtcbench_units::{Bitrate, Duration};
/// let (text, origin) = rtcbench_scenario::builtin::find("rfc8867-5.1").unwrap();
/// let variant = rtcbench_scenario::load(text, &origin, &[]).unwrap().remove(0);
/// let options = RunOptions { external: Some(0), ..RunOptions::default() };
/// let mut sim = Simulation::new(&variant, ControllerKind::Gcc.into(), 1, options).unwrap();
/// while !sim.is_done() {
///     sim.run_until(sim.now() + Duration::from_millis(60));
///     let seen = sim.take_external_interval();
///     // Decide from what feedback said in the last 60 ms; here, 10 % above what arrived.
///     sim.set_external_target((seen.receive_rate * 1.1).max(Bitrate::kbps(150)));
/// }
/// let out = sim.finish();
/// assert_eq!(out.meta.calls[0].controller, "external");
/// ```
pub struct Simulation {
    world: World,
    meta: Meta,
    /// What each call's controller was told about its call.
    setups: Vec<CallSetup>,
    external: Option<u32>,
    /// The external call's policy, if its estimates are set from outside ([`RunOptions::agent`]).
    agent: Option<LearnedPolicy>,
    /// Every event due at or before this instant has run.
    now: Instant,
    /// Every event of the run has run: nothing will be recorded any more.
    exhausted: bool,
    events: u64,
}

impl Simulation {
    /// Builds the run and schedules its first events; nothing has run yet (`now()` is zero).
    /// Fails if the scenario cannot be run (no path between a call's ends) or if
    /// [`RunOptions::external`] names a call the scenario does not have.
    pub fn new(
        s: &Scenario,
        controller: ControllerChoice,
        seed: u64,
        options: RunOptions,
    ) -> Result<Self, ScenarioError> {
        Self::with_elements(s, controller, seed, options, Vec::new())
    }

    /// [`Simulation::new`], with elements of the caller's own in place of the scenario's links
    /// of the same names: any [`rtcbench_net::Element`] with one queue runs as a link does (the
    /// trace records its queue's bytes; capacity and queue limit are not an element's to say).
    /// Fails if a name is not a link of the scenario.
    pub fn with_elements(
        s: &Scenario,
        controller: ControllerChoice,
        seed: u64,
        options: RunOptions,
        elements: Vec<ElementOverride>,
    ) -> Result<Self, ScenarioError> {
        let external = options.external;
        let agent = options.agent.as_ref().map(Agent::policy);
        let (mut world, meta, setups) =
            build::build_world(s, controller, seed, options, agent.clone(), elements)?;
        world.start();
        Ok(Self { world, meta, setups, external, agent, now: Instant::ZERO, exhausted: false, events: 0 })
    }

    /// Processes every event due at or before `t` (at most the end of the run); `now()` is then
    /// `t`. Earlier than `now()`, does nothing.
    pub fn run_until(&mut self, t: Instant) {
        let t = t.min(self.world.end);
        if t < self.now {
            return;
        }
        self.events += self.world.run_until(t, u64::MAX);
        self.now = t;
        self.exhausted = t == self.world.end;
    }

    /// Processes at most `events` events towards the end of the run, and returns whether the run
    /// has reached its end. This is how a run is driven in bounded slices of work, so that its
    /// owner can take the trace recorded so far and notice an interrupt between two slices; the
    /// events run in the order one uninterrupted run would. `now()` is then the time of the last
    /// event processed (other events may still be due at that instant).
    pub fn run_for(&mut self, events: u64) -> bool {
        let ran = self.world.run_until(self.world.end, events);
        self.events += ran;
        if ran < events {
            self.now = self.world.end;
            self.exhausted = true;
        } else {
            self.now = self.now.max(self.world.sched.now());
        }
        self.exhausted
    }

    /// Says that the trace is taken whenever about `rows` rows are held (a streamed run), so
    /// that the links table reserves room for no more than that at a time: reserved for the
    /// rest of the run, as a run kept in memory does, each piece handed out would take a
    /// reservation of up to 150 MB with it, and the allocator, given many such blocks in turn,
    /// keeps more of them resident the longer the run (+80 % RSS from 900 s to 3600 s simulated
    /// of a two-hour run, `benches/memory.py`).
    pub fn hand_over_every(&mut self, rows: usize) {
        self.world.link_rows_reserved = rows.clamp(1, run::LINK_ROWS_RESERVED);
    }

    /// Rows recorded and not yet taken, over all trace tables.
    pub fn trace_rows(&self) -> usize {
        self.world.trace.rows()
    }

    /// Takes the trace rows recorded so far that nothing can change any more
    /// ([`Trace::take_final`]); after the end of the run, every row.
    pub fn take_trace(&mut self) -> Trace {
        if self.exhausted {
            self.world.trace.take_all()
        } else {
            self.world.trace.take_final()
        }
    }

    /// Takes the packets captured so far (empty unless [`RunOptions::capture`]).
    pub fn take_capture(&mut self) -> Vec<Captured> {
        self.world.capture.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// The instant the run has reached: every event due at or before it has run.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The end of the run (the scenario's duration).
    pub fn end(&self) -> Instant {
        self.world.end
    }

    /// True once the run has reached its end.
    pub fn is_done(&self) -> bool {
        self.now >= self.world.end
    }

    /// Events processed so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// The run's links, calls and flows.
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// What the controller of call `call` was told about it (rate limits, start, seed); `None`
    /// for a call the scenario does not have.
    pub fn call_setup(&self, call: u32) -> Option<&CallSetup> {
        self.setups.get(call as usize)
    }

    /// The externally controlled call ([`RunOptions::external`]), if any.
    pub fn external_call(&self) -> Option<u32> {
        self.external
    }

    /// The external call's sender and controller.
    fn external_mut(&mut self) -> (u32, &mut ExternalRate) {
        let call = self.external.expect("RunOptions::external names the call whose rate is set from outside");
        let sender =
            self.world.sender_of_call[call as usize].expect("checked: the external call has a sender");
        match self.world.senders[sender as usize].controller_mut() {
            AnyController::External(c) => (sender, c),
            _ => panic!(
                "the external call's estimates are set at its receiver (RunOptions::agent), not its rate"
            ),
        }
    }

    /// Sets the external call's target rate from `now()` on. The sender reads it in an event of
    /// its own at `now()`, the first of the next step.
    ///
    /// # Panics
    /// If [`RunOptions::external`] named no call.
    pub fn set_external_target(&mut self, rate: Bitrate) {
        let now = self.now;
        let (sender, c) = self.external_mut();
        if c.set_target(now, rate) {
            self.world.wake(Event::Sender(sender));
        }
    }

    /// The external call's next decision instant and the observation its policy will see, if
    /// its estimates are set from outside ([`RunOptions::agent`]) and no decision failed. Read
    /// it after running every event before the instant, then set the decision's estimate.
    pub fn next_observation(&self) -> Option<(Instant, [f32; OBSERVATION_LEN])> {
        self.agent_estimator()?.next_observation()
    }

    /// The instant of [`Simulation::next_observation`]'s decision, without building the
    /// observation.
    pub fn next_decision(&self) -> Option<Instant> {
        self.agent_estimator()?.next_decision()
    }

    /// The estimator at the external call's receiver, if its estimates are set from outside.
    fn agent_estimator(&self) -> Option<&LearnedEstimator> {
        self.agent.as_ref()?;
        let call = self.external?;
        let receiver = self.world.receiver_plumbings.iter().position(|p| p.call == call)?;
        self.world.receivers[receiver].learned_estimator()
    }

    /// Why the external call's policy stopped deciding (a decision without an estimate set,
    /// or an estimate that is not a finite number >= 0), if it did.
    pub fn agent_failure(&self) -> Option<&str> {
        self.agent.as_ref()?.failure.get()
    }

    /// What feedback said about the external call's packets since the last call (or the start of
    /// the run) until `now()`.
    ///
    /// # Panics
    /// If [`RunOptions::external`] named no call.
    pub fn take_external_interval(&mut self) -> IntervalStats {
        let now = self.now;
        self.external_mut().1.take_interval(now)
    }

    /// Runs to the end and returns the trace.
    pub fn finish(mut self) -> RunOutput {
        self.run_until(self.world.end);
        RunOutput {
            trace: std::mem::take(&mut self.world.trace),
            meta: self.meta,
            events: self.events,
            capture: self.world.capture.take().unwrap_or_default(),
        }
    }
}
