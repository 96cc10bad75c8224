//! A whole run: the network and the calls of one resolved scenario, driven by one event heap
//! until the scenario's duration. A run is a pure function of (scenario, controller, seed).
//!
//! Drive loop: every element (link, sender, receiver) is sans-IO. After anything touches an
//! element, its `poll_timeout` is read and a wake-up is scheduled if it is earlier than the one
//! already pending; a wake-up calls the element's `on_timeout` and moves what it emitted on.
//!
//! A [`Simulation`] is a run that its owner advances in steps (`run_until`), as a learning
//! environment does between two decisions; [`simulate_with`] is one step to the end, so both
//! process the same events in the same order and give the same trace.

use rand::RngExt;
use rtcbench_cc::external::{ExternalRate, IntervalStats};
use rtcbench_cc::factory::{self, USER_CCFB_INTERVAL};
use rtcbench_cc::{AnyController, Controller, ControllerKind};
use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

use crate::call::{
    incoming, CallPlumbing, CallTrace, FeedbackMode, ForwarderPlumbing, Receiver, Sender, SfuTrace,
};
use crate::cross::{CbrFlow, Plumbing, TcpSink, TcpSource, TSQ_PACING_TIME, TSQ_WIFI_PACING_TIME};
use crate::lte::LteNet;
use crate::packet::{flow_of, DropReason, FlowId, LinkId, Packet, PacketKind, RouteId};
use crate::scheduler::Scheduler;
use crate::trace::{PacketEvent, Trace};
use crate::traffic::cbr::CbrSource;
use crate::traffic::on_off::{OnOff, OnOffConfig};
use crate::traffic::tcp::wire::IPV4_HEADER;
use crate::traffic::tcp::{Application, CongestionControl, ReceiverConfig, SenderConfig, TcpSender};
use crate::wifi::WifiNet;
use rtcbench_net::link::capacity::CapacitySchedule;
use rtcbench_net::link::Link;
use rtcbench_net::rng::rng_for;
use rtcbench_rtp::sfu::{DownlinkParts, Forwarder, ForwarderParts, Toward};
use rtcbench_rtp::{CallPlan, StreamIds};
use rtcbench_scenario::calls::{run_calls, Role, RunCall};
use rtcbench_scenario::elements::{
    call_plan, link_config, link_rng_path, scheduled_capacity, udp_background_rate, udp_background_steps,
    UDP_BACKGROUND_PACKET,
};
use rtcbench_scenario::run::{Meta, RunPlan, TURN_CHANNEL_DATA};
use rtcbench_scenario::{ControllerParams, Hop, Scenario, ScenarioError, TcpCc, TcpSpec, WorkloadSpec};

/// Link state is sampled this often (and at every capacity change).
pub const LINK_SAMPLE_INTERVAL: Duration = Duration::from_millis(10);

/// The most links-table rows reserved at once (some 150 MB of columns at most, never touched
/// until written): a streamed run hands its rows out sooner (`streamed::StreamOptions`), a long
/// run in memory grows by doubling beyond.
const LINK_ROWS_RESERVED: usize = 1 << 20;

/// What a run produces.
pub struct RunOutput {
    pub trace: Trace,
    pub meta: Meta,
    /// Events processed (for benchmarks).
    pub events: u64,
    /// Every packet as its sender put it on the wire, if capture was asked for.
    pub capture: Vec<Captured>,
}

/// A packet as it left its sender, for a pcap file.
#[derive(Clone, Debug)]
pub struct Captured {
    pub t: Instant,
    /// Indices into [`Meta::nodes`].
    pub src: u16,
    pub dst: u16,
    pub transport: CapturedTransport,
    /// The IPv4 ECN bits the sender set (RFC 3168 §5).
    pub ecn: u8,
    /// RTP header with extensions, the whole RTCP packet, or the TCP header; empty for CBR.
    pub data: Vec<u8>,
    /// Bytes that follow `data` on the wire (zeros in a capture): media payload, probe padding,
    /// TCP or CBR payload.
    pub payload: DataSize,
}

/// How a captured packet travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapturedTransport {
    /// RTP and RTCP multiplexed on UDP port 5004 (RFC 5761).
    RtpUdp,
    /// A CBR datagram, to and from the discard port (9, RFC 863) so nothing decodes it as RTP.
    CbrUdp,
    /// A TCP segment; its header carries the ports.
    Tcp,
}

/// The UDP port of CBR cross traffic in captures: discard (RFC 863).
const CBR_CAPTURE_PORT: u16 = 9;

/// Options of a run beyond (scenario, controller, seed).
#[derive(Clone, Copy, Debug, Default)]
pub struct RunOptions {
    /// Keep every packet's bytes for a capture file.
    pub capture: bool,
    /// The call (index into `meta.calls`) whose target rate is set from outside, through
    /// [`Simulation::set_external_target`], instead of by the run's controller: it runs
    /// [`ExternalRate`] with transport-wide feedback, and the trace names its controller
    /// `external`. The other calls run the run's controller (a [`UserController`] is built for
    /// those only). It must be a call with a sender (not an SFU's forward leg).
    pub external: Option<u32>,
}

/// The controller every call of a run uses.
pub enum ControllerChoice {
    /// A built-in controller (`--cc NAME`).
    Builtin(ControllerKind),
    /// A controller defined outside the workspace (a Python class, through rtcbench-py).
    User(UserController),
}

impl ControllerChoice {
    /// The name the trace gives the controller (`meta.controller`).
    pub fn name(&self) -> &str {
        match self {
            Self::Builtin(kind) => kind.name(),
            Self::User(u) => &u.name,
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
    Link(LinkId),
    Bss(u16),
    Cell(u16),
    Sender(u32),
    Receiver(u32),
    Forwarder(u32),
    TcpSource(u32),
    TcpSink(u32),
    Cbr(u32),
    Sample,
}

/// Where a route ends.
#[derive(Clone, Copy, Debug)]
enum Endpoint {
    Sender(u32),
    Receiver(u32),
    /// An SFU, receiving a publisher's stream.
    Forwarder(u32),
    /// An SFU, receiving the RTCP of one of its downlinks' viewers: (forwarder, downlink).
    Downlink(u32, u16),
    /// A TCP sender, receiving ACKs.
    TcpSource(u32),
    TcpSink(u32),
    /// Packets that only need to arrive (CBR).
    Sink,
}

/// An element's pending wake-up.
type Wake = Option<Instant>;

struct Route {
    hops: Vec<Hop>,
    dest: Endpoint,
    /// First and last node (indices into `Meta::nodes`), for captures.
    src_node: u16,
    dst_node: u16,
    /// Bytes the route adds to every packet on the wire: a TURN relay's ChannelData header.
    framing: DataSize,
}

/// Whose controller traces a receiver's receive-side estimator.
#[derive(Clone, Copy, Debug)]
enum Peer {
    /// A call's sender.
    Sender(u32),
    /// An SFU's downlink: (forwarder, downlink).
    Downlink(u32, usize),
}

struct World {
    sched: Scheduler<Event>,
    links: Vec<Link<Packet>>,
    link_wake: Vec<Option<Instant>>,
    wifi: WifiNet,
    lte: LteNet,
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
    /// Per link, the capacity left to the flows when UDP background traffic makes it (RFC 8867
    /// §4.2); the links table reports it instead of the physical rate.
    available: Vec<Option<CapacitySchedule>>,
    trace: Trace,
    next_packet_id: u64,
    end: Instant,
    capture: Option<Vec<Captured>>,
}

/// The per-packet feedback the receiver sends for a controller: what a built-in one needs
/// (`rtcbench_cc::factory::feedback_mode`), what a user-defined one asked for, and transport-wide
/// feedback for an external one, as libwebrtc sends.
fn feedback_mode(
    controller: &ControllerChoice,
    external: bool,
    plan: &CallPlan,
    start_rate: Bitrate,
) -> FeedbackMode {
    let intervals = plan.intervals();
    match controller {
        _ if external => intervals.twcc(),
        ControllerChoice::User(u) => match u.feedback {
            UserFeedback::Twcc => intervals.twcc(),
            UserFeedback::Ccfb => intervals.ccfb(USER_CCFB_INTERVAL),
        },
        ControllerChoice::Builtin(kind) => {
            factory::feedback_mode(*kind, &plan.options(), intervals, start_rate)
        }
    }
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
/// # use rtcbench_sim::{scenario, Simulation, RunOptions};
/// # use rtcbench_cc::ControllerKind;
/// # use rtcbench_units::{Bitrate, Duration};
/// let (text, origin) = scenario::builtin::find("rfc8867-5.1").unwrap();
/// let variant = scenario::load(text, &origin, &[]).unwrap().remove(0);
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
        let (mut world, meta, setups) = build_world(s, controller, seed, options)?;
        world.start();
        Ok(Self {
            world,
            meta,
            setups,
            external: options.external,
            now: Instant::ZERO,
            exhausted: false,
            events: 0,
        })
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
            _ => unreachable!("the external call runs ExternalRate"),
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

/// The world of a run, its description and what each call's controller was told, before any
/// event.
fn build_world(
    s: &Scenario,
    mut controller: ControllerChoice,
    seed: u64,
    options: RunOptions,
) -> Result<(World, Meta, Vec<CallSetup>), ScenarioError> {
    let spec = &s.spec;
    let origin = format!("scenario {}", spec.id);
    let end = Instant::ZERO + *spec.duration.get();
    let mut plan = RunPlan::new(s, controller.name(), seed)?;
    let mut links: Vec<Link<Packet>> = spec
        .links
        .iter()
        .enumerate()
        .map(|(k, l)| {
            let trace = s.capacity_traces.get(k).and_then(Option::as_deref);
            Link::new(
                link_config(l, trace, end),
                rng_for(seed, &link_rng_path(&l.name, "loss")),
                rng_for(seed, &link_rng_path(&l.name, "jitter")),
                rng_for(seed, &link_rng_path(&l.name, "queue")),
            )
        })
        .collect();
    let wifi = WifiNet::new(&spec.wifi, seed, links.len(), &origin)?;
    let lte = LteNet::new(&spec.lte, seed, links.len() + wifi.queues(), &origin)?;
    let node = |name: &str| {
        plan.meta.nodes.iter().position(|n| n == name).expect("every endpoint node is on a link or in a BSS")
            as u16
    };
    let run = run_calls(spec);
    if let Some(call) = options.external.filter(|&c| c as usize >= run.len()) {
        return Err(ScenarioError::new(
            &origin,
            Some("calls".to_string()),
            format!(
                "the externally controlled call is call {call}, but the scenario has {} call(s)",
                run.len()
            ),
        ));
    }
    if let Some(call) = options.external.filter(|&c| run[c as usize].role == Role::Forward) {
        return Err(ScenarioError::new(
            &origin,
            Some("calls".to_string()),
            format!(
                "the externally controlled call is call {call} ({}), an SFU's downlink; choose a call with a sender",
                run[call as usize].name
            ),
        ));
    }
    let mut routes = Vec::new();
    let mut calls = Calls::default();
    let mut setups = Vec::new();
    for (i, rc) in run.iter().enumerate() {
        let call = i as u32;
        let c = &rc.spec;
        let r = &plan.calls[i];
        let (fwd, bwd) = (&r.forward, &r.backward);
        let framing = if c.via.is_some() { TURN_CHANNEL_DATA } else { DataSize::ZERO };
        let (a, b) = (node(&c.from), node(&c.to));
        // Where each direction ends: the far endpoint of the element built below.
        let (to_receiving, to_sending) = match rc.role {
            Role::Call => (
                Endpoint::Receiver(calls.receivers.len() as u32),
                Endpoint::Sender(calls.senders.len() as u32),
            ),
            Role::Publish => (
                Endpoint::Forwarder(calls.forwarders.len() as u32),
                Endpoint::Sender(calls.senders.len() as u32),
            ),
            Role::Forward => {
                let f = calls.forwarder_of(rc);
                let leg = calls.forwarders[f as usize].parts.downlinks.len() as u16;
                (Endpoint::Receiver(calls.receivers.len() as u32), Endpoint::Downlink(f, leg))
            }
        };
        let forward_route = routes.len() as RouteId;
        routes.push(Route { hops: fwd.clone(), dest: to_receiving, src_node: a, dst_node: b, framing });
        let backward_route = routes.len() as RouteId;
        routes.push(Route { hops: bwd.clone(), dest: to_sending, src_node: b, dst_node: a, framing });
        let plumbing = CallPlumbing {
            call,
            video_flow: r.video,
            audio_flow: r.audio,
            rtcp_tx_flow: r.rtcp_tx,
            rtcp_rx_flow: r.rtcp_rx,
            forward_route,
            backward_route,
        };

        let external = options.external == Some(call);
        let setup = match rc.role {
            Role::Call | Role::Publish => {
                let (plan, mut sender, receiver, setup) =
                    build_call(rc, call, &mut controller, external, &spec.controller, seed, end);
                // The trace's controller columns are fixed by its first row: include the
                // receiver-side estimator's from the start.
                sender.set_remote_metrics(receiver.estimator_metrics());
                calls.add_sender(call, sender, plumbing);
                if rc.role == Role::Call {
                    calls.add_receiver(receiver, plumbing, Peer::Sender(calls.senders.len() as u32 - 1));
                } else {
                    calls.add_forwarder(call, &plan, receiver, plumbing);
                }
                setup
            }
            Role::Forward => {
                let publish = rc.forwards.expect("a forward leg names its publish call");
                let (parts, receiver, setup) = build_downlink(
                    rc,
                    call,
                    &run[publish as usize],
                    publish,
                    &mut controller,
                    &spec.controller,
                    seed,
                    end,
                );
                calls.add_downlink(rc, parts, receiver, plumbing);
                setup
            }
        };
        if external {
            plan.meta.calls[i].controller = ExternalRate::NAME.to_string();
        }
        setups.push(setup);
    }

    let mut route_to = |path: Vec<Hop>, dest: Endpoint, (src_node, dst_node): (u16, u16)| -> RouteId {
        routes.push(Route { hops: path, dest, src_node, dst_node, framing: DataSize::ZERO });
        (routes.len() - 1) as RouteId
    };

    let mut tcp_sources = Vec::new();
    let mut tcp_sinks = Vec::new();
    let mut tsq_flows = Vec::new();
    let mut tcp_routes = plan.tcp.iter();
    for (i, t) in spec.tcp.iter().enumerate() {
        let ends = (node(&t.from), node(&t.to));
        let group = t.group_name(i);
        for k in 0..t.count.unwrap_or(1) {
            let r = tcp_routes.next().expect("the plan has every connection");
            let (fwd, data, ack) = (&r.forward, r.data, r.ack);
            let index = tcp_sources.len() as u32;
            let to_sink = route_to(fwd.clone(), Endpoint::TcpSink(index), ends);
            let to_source = route_to(r.backward.clone(), Endpoint::TcpSource(index), (ends.1, ends.0));
            let path = format!("tcp/{group}/{k}");
            let (mut source, sink) =
                build_tcp(t, k, index, (to_sink, data), (to_source, ack), seed, &path, end);
            if t.small_queues.unwrap_or(false) {
                // From a Wi-Fi station, mac80211's pacing shift lets a socket queue more.
                let wifi = matches!(fwd[0], Hop::Wifi { .. });
                source = source.with_small_queues(if wifi { TSQ_WIFI_PACING_TIME } else { TSQ_PACING_TIME });
            }
            if source.has_small_queues() {
                tsq_flows.push((data, index, fwd[0]));
            }
            tcp_sources.push(source);
            tcp_sinks.push(sink);
        }
    }

    let mut cbrs = Vec::new();
    for (c, r) in spec.cbr.iter().zip(&plan.cbr) {
        let flow = r.flow;
        let route = route_to(r.hops.clone(), Endpoint::Sink, (node(&c.from), node(&c.to)));
        let start = Instant::ZERO + c.start.unwrap_or(Duration::ZERO);
        let stop = c.stop.map_or(end, |s| Instant::ZERO + s);
        let size = c.packet_size.unwrap_or(DEFAULT_CBR_PACKET);
        let source = CbrSource::constant(*c.rate.get(), size, start, stop);
        cbrs.push(CbrFlow::new(source, Plumbing { flow, route }));
    }
    let mut available = vec![None; spec.links.len()];
    for &(k, flow) in &plan.udp_background {
        let l = &spec.links[usize::from(k)];
        let physical = udp_background_rate(l).expect("planned: the link has UDP background traffic");
        let route = route_to(vec![Hop::Link(k)], Endpoint::Sink, (node(&l.from), node(&l.to)));
        let source = CbrSource::scheduled(udp_background_steps(l, physical), UDP_BACKGROUND_PACKET, end);
        cbrs.push(CbrFlow::new(source, Plumbing { flow, route }));
        available[usize::from(k)] = Some(scheduled_capacity(l));
    }

    let mut small_queues = vec![None; plan.meta.flows.len()];
    for (flow, source, first_hop) in tsq_flows {
        small_queues[flow as usize] = Some(source);
        // A link reports what it serialised; a BSS's deliveries count as sent (`Event::Bss`).
        if let Hop::Link(host_link) = first_hop {
            links[host_link as usize].report_serialised();
        }
    }
    let n_links = links.len();
    let (n_s, n_r, n_f) = (calls.senders.len(), calls.receivers.len(), calls.forwarders.len());
    let (n_tcp, n_cbr) = (tcp_sources.len(), cbrs.len());
    let mut forwarders = Vec::with_capacity(n_f);
    let mut forwarder_plumbings = Vec::with_capacity(n_f);
    let mut forwarder_senders = Vec::with_capacity(n_f);
    for pending in calls.forwarders {
        let mut forwarder = Forwarder::new(pending.parts);
        for (leg, m) in pending.remote.into_iter().enumerate() {
            forwarder.set_remote_metrics(leg, m);
        }
        forwarders.push(forwarder);
        forwarder_plumbings.push(pending.plumbing);
        forwarder_senders.push(pending.sender);
    }
    let mut sched = Scheduler::new();
    // A BSS wakes at every backoff end, PPDU end and response: each gets a slot beside the heap
    // (slot b for BSS b).
    for _ in &wifi.bsses {
        sched.add_slot();
    }
    // A cell wakes at every TTI with work: slot n_bss + c for cell c.
    for _ in &lte.cells {
        sched.add_slot();
    }
    let w = World {
        sched,
        links,
        link_wake: vec![None; n_links],
        wifi,
        lte,
        routes,
        senders: calls.senders,
        plumbings: calls.plumbings,
        frame_mirrors: calls.frame_mirrors,
        sender_of_call: calls.sender_of_call,
        sender_wake: vec![None; n_s],
        receivers: calls.receivers,
        receiver_plumbings: calls.receiver_plumbings,
        receiver_peers: calls.receiver_peers,
        receiver_wake: vec![None; n_r],
        forwarders,
        forwarder_plumbings,
        forwarder_senders,
        forwarder_wake: vec![None; n_f],
        first_wakes: calls.first_wakes,
        tcp_sources,
        tcp_source_wake: vec![None; n_tcp],
        small_queues,
        tcp_sinks,
        tcp_sink_wake: vec![None; n_tcp],
        cbrs,
        cbr_wake: vec![None; n_cbr],
        available,
        trace: Trace::default(),
        next_packet_id: 0,
        end,
        capture: options.capture.then(Vec::new),
    };
    Ok((w, plan.meta, setups))
}

/// Hands an element the buffer its outbox was emptied from, so that its next packets need no
/// allocation, unless it emitted more meanwhile (a packet sent may let TCP send again).
fn give_back<T>(outbox: &mut Vec<T>, emptied: Vec<T>) {
    if outbox.is_empty() {
        *outbox = emptied;
    }
}

/// Bytes on the wire of a CBR packet unless the scenario says otherwise (as the media packets).
const DEFAULT_CBR_PACKET: DataSize = DataSize::bytes(1200);
/// TCP ports: sources count up from the first ephemeral port (RFC 6335 §6), sinks listen on
/// iperf's port.
const TCP_SOURCE_PORT: u16 = 49152;
const TCP_SINK_PORT: u16 = 5201;

/// The `k`-th flow of a `[[tcp]]` entry: its source (sender and application) and sink.
#[allow(clippy::too_many_arguments)]
fn build_tcp(
    t: &TcpSpec,
    k: u32,
    index: u32,
    (to_sink, data_flow): (RouteId, FlowId),
    (to_source, ack_flow): (RouteId, FlowId),
    seed: u64,
    path: &str,
    end: Instant,
) -> (TcpSource, TcpSink) {
    let cc = match t.cc.as_ref().map_or(TcpCc::default(), |c| *c.get()) {
        TcpCc::Newreno => CongestionControl::NewReno,
        TcpCc::Cubic => CongestionControl::Cubic,
    };
    let mut ids = rng_for(seed, &format!("{path}/ids"));
    let mut cfg = SenderConfig::new(cc);
    cfg.src_port = TCP_SOURCE_PORT.wrapping_add(index as u16);
    cfg.dst_port = TCP_SINK_PORT;
    cfg.iss = ids.random();
    let app = match &t.workload {
        None | Some(WorkloadSpec::Bulk) => None,
        Some(WorkloadSpec::Short { size_min, size_max, idle_mean, files, initially_on }) => {
            cfg.application = Application::Writes;
            let on_off = OnOffConfig {
                size_min: *size_min,
                size_max: *size_max,
                files: files.unwrap_or(1),
                idle_mean: *idle_mean,
            };
            let on = k < initially_on.unwrap_or(0);
            Some((on_off, on))
        }
    };
    let mut rx = ReceiverConfig::for_sender(&cfg);
    if !t.delayed_ack.unwrap_or(true) {
        rx.delayed_ack = None;
    }
    let start = Instant::ZERO + t.start.unwrap_or(Duration::ZERO);
    let stop = t.stop.map_or(end, |s| Instant::ZERO + s);
    let app = app.map(|(c, on)| OnOff::new(c, on, start, rng_for(seed, &format!("{path}/workload"))));
    let source =
        TcpSource::new(TcpSender::new(cfg), app, start, stop, Plumbing { flow: data_flow, route: to_sink });
    let sink = TcpSink::new(rx, Plumbing { flow: ack_flow, route: to_source });
    (source, sink)
}

/// A call's plan (`scenario::elements::call_plan`), sender and receiver, and what its controller
/// was told about the call. An `external` call runs [`ExternalRate`] instead of `controller`.
fn build_call(
    rc: &RunCall,
    call: u32,
    controller: &mut ControllerChoice,
    external: bool,
    params: &ControllerParams,
    seed: u64,
    end: Instant,
) -> (CallPlan, Sender, Receiver, CallSetup) {
    let plan = call_plan(&rc.spec, call, &rc.label, params, seed, end);
    let (ctrl, setup) = build_controller(&plan, controller, external);
    let mode = feedback_mode(controller, external, &plan, plan.limits().start);
    let (sender, receiver) = (plan.sender(ctrl), plan.receiver(mode));
    (plan, sender, receiver, setup)
}

/// The controller of a call (or of an SFU's downlink) with `plan`, and what it was told.
fn build_controller(
    plan: &CallPlan,
    controller: &mut ControllerChoice,
    external: bool,
) -> (AnyController, CallSetup) {
    let start = plan.start_at();
    let limits = plan.limits();
    let setup = CallSetup {
        call: plan.call,
        start,
        min_rate: limits.min,
        max_rate: limits.max,
        start_rate: limits.start,
        priority: plan.priority,
        seed: plan.controller_seed,
    };
    let ctrl = match controller {
        // Its first interval starts with the run, when its owner starts watching.
        _ if external => AnyController::External(Box::new(ExternalRate::new(limits.start, Instant::ZERO))),
        ControllerChoice::Builtin(kind) => {
            factory::build(*kind, &plan.options(), plan.priority, limits, start)
        }
        ControllerChoice::User(u) => AnyController::User((u.build)(&setup)),
    };
    (ctrl, setup)
}

/// An SFU's downlink of `publish` (call `publish_id`) to the viewer of `rc`: the downlink as the
/// forwarder builds it, the viewer's receiver, and what the downlink's controller was told.
///
/// The viewer receives the publisher's streams (SSRCs, sequence numbers, timestamps) and the
/// downlink's own RTX stream, and is a receiver of its own: those ids, and the controller's
/// seed, are drawn under the leg's label; its limits are the published stream's.
#[allow(clippy::too_many_arguments)]
fn build_downlink(
    rc: &RunCall,
    call: u32,
    publish: &RunCall,
    publish_id: u32,
    controller: &mut ControllerChoice,
    params: &ControllerParams,
    seed: u64,
    end: Instant,
) -> (DownlinkParts, Receiver, CallSetup) {
    let published = call_plan(&publish.spec, publish_id, &publish.label, params, seed, end).ids;
    let mut plan = call_plan(&rc.spec, call, &rc.label, params, seed, end);
    plan.ids = StreamIds {
        rtx_ssrc: plan.ids.rtx_ssrc,
        rtx_seq0: plan.ids.rtx_seq0,
        receiver_ssrc: plan.ids.receiver_ssrc,
        ..published
    };
    let (ctrl, setup) = build_controller(&plan, controller, false);
    let mode = feedback_mode(controller, false, &plan, plan.limits().start);
    let parts = DownlinkParts {
        ids: plan.ids,
        controller: ctrl,
        start: plan.start_at(),
        report_interval: plan.report_interval,
        nack: plan.nack,
    };
    (parts, plan.receiver(mode), setup)
}

/// The call endpoints of a run as they are built, in call order.
#[derive(Default)]
struct Calls {
    senders: Vec<Sender>,
    plumbings: Vec<CallPlumbing>,
    frame_mirrors: Vec<Vec<FlowId>>,
    sender_of_call: Vec<Option<u32>>,
    receivers: Vec<Receiver>,
    receiver_plumbings: Vec<CallPlumbing>,
    receiver_peers: Vec<Peer>,
    forwarders: Vec<PendingForwarder>,
    /// The forwarder of each publish call, by call id.
    forwarder_of_call: std::collections::BTreeMap<u32, u32>,
    first_wakes: Vec<Event>,
}

/// A forwarder whose downlinks are still being added.
struct PendingForwarder {
    parts: ForwarderParts,
    plumbing: ForwarderPlumbing,
    /// The publisher's sender.
    sender: u32,
    /// Per downlink, its viewer's estimator state, for the first trace row.
    remote: Vec<Option<rtcbench_cc::ControllerMetrics>>,
}

impl Calls {
    fn add_sender(&mut self, call: u32, sender: Sender, plumbing: CallPlumbing) {
        debug_assert_eq!(self.sender_of_call.len(), call as usize, "calls are built in order");
        let s = self.senders.len() as u32;
        self.sender_of_call.push(Some(s));
        self.senders.push(sender);
        self.plumbings.push(plumbing);
        self.frame_mirrors.push(Vec::new());
        self.first_wakes.push(Event::Sender(s));
    }

    fn add_receiver(&mut self, receiver: Receiver, plumbing: CallPlumbing, peer: Peer) {
        self.first_wakes.push(Event::Receiver(self.receivers.len() as u32));
        self.receivers.push(receiver);
        self.receiver_plumbings.push(plumbing);
        self.receiver_peers.push(peer);
    }

    fn add_forwarder(&mut self, call: u32, plan: &CallPlan, uplink: Receiver, plumbing: CallPlumbing) {
        let f = self.forwarders.len() as u32;
        self.forwarder_of_call.insert(call, f);
        self.forwarders.push(PendingForwarder {
            parts: ForwarderParts {
                publisher: plan.ids,
                uplink,
                ecn: rtcbench_cc::feedback::Ecn::from_bits(plan.ecn),
                keyframe_request: plan.keyframe_request,
                downlinks: Vec::new(),
            },
            plumbing: ForwarderPlumbing { uplink: plumbing, legs: Vec::new() },
            sender: self.senders.len() as u32 - 1,
            remote: Vec::new(),
        });
        self.first_wakes.push(Event::Forwarder(f));
    }

    /// The forwarder that carries forward leg `rc`.
    fn forwarder_of(&self, rc: &RunCall) -> u32 {
        let publish = rc.forwards.expect("a forward leg names its publish call");
        self.forwarder_of_call[&publish]
    }

    fn add_downlink(&mut self, rc: &RunCall, parts: DownlinkParts, viewer: Receiver, plumbing: CallPlumbing) {
        let f = self.forwarder_of(rc);
        let pending = &mut self.forwarders[f as usize];
        let leg = pending.parts.downlinks.len();
        pending.parts.downlinks.push(parts);
        pending.plumbing.legs.push(plumbing);
        pending.remote.push(viewer.estimator_metrics());
        if let Some(video) = plumbing.video_flow {
            self.frame_mirrors[pending.sender as usize].push(video);
        }
        self.sender_of_call.push(None);
        self.add_receiver(viewer, plumbing, Peer::Downlink(f, leg));
    }
}

impl World {
    /// Schedules every element's first wake-up and the first link sample.
    fn start(&mut self) {
        for ev in std::mem::take(&mut self.first_wakes) {
            self.wake(ev);
        }
        for i in 0..self.tcp_sources.len() as u32 {
            self.wake(Event::TcpSource(i));
            self.wake(Event::TcpSink(i));
        }
        for i in 0..self.cbrs.len() as u32 {
            self.wake(Event::Cbr(i));
        }
        self.sched.schedule(Instant::ZERO, Event::Sample);
    }

    /// Processes the events due at or before `limit` (at most `end`), no more than `budget` of
    /// them; returns how many.
    fn run_until(&mut self, limit: Instant, budget: u64) -> u64 {
        let mut events = 0u64;
        while events < budget {
            let Some((now, ev)) = self.sched.pop_due(limit) else { break };
            events += 1;
            match ev {
                Event::Link(l) => {
                    if self.link_wake[l as usize] == Some(now) {
                        self.link_wake[l as usize] = None;
                    }
                    let link = &mut self.links[l as usize];
                    link.on_timeout(now);
                    while let Some((key, size)) = self.links[l as usize].poll_serialised() {
                        self.left_host(now, flow_of(key), size);
                    }
                    while let Some((pkt, reason)) = self.links[l as usize].poll_drop() {
                        self.dropped(now, l, &pkt, reason);
                    }
                    while let Some((_, pkt)) = self.links[l as usize].poll_output(now) {
                        self.forward(now, pkt);
                    }
                    self.wake(Event::Link(l));
                }
                Event::Bss(b) => {
                    self.wifi.bsses[b as usize].on_timeout(now);
                    while let Some((port, pkt, reason)) = self.wifi.bsses[b as usize].poll_drop() {
                        self.dropped(now, self.wifi.queue_id(b, port), &pkt, reason);
                    }
                    while let Some((_, _, pkt)) = self.wifi.bsses[b as usize].poll_output(now) {
                        // A station's packet left its host when the AP acknowledged it (a
                        // driver frees it on TX completion): TCP Small Queues may send more.
                        if pkt.hop == 0 {
                            self.left_host(now, pkt.flow, pkt.size);
                        }
                        self.forward(now, pkt);
                    }
                    self.wake(Event::Bss(b));
                }
                Event::Cell(c) => {
                    self.lte.cells[c as usize].on_timeout(now);
                    while let Some((_, pkt, reason)) = self.lte.cells[c as usize].poll_drop() {
                        // Not `dropped`: the packet left its host when the cell took it.
                        let at = self.cell_buffer(c, &pkt);
                        self.trace.packet(now, PacketEvent::Dropped, &pkt, Some((at, reason)));
                    }
                    while let Some((_, _, pkt)) = self.lte.cells[c as usize].poll_output(now) {
                        self.forward(now, pkt);
                    }
                    self.wake(Event::Cell(c));
                }
                Event::Sender(i) => {
                    if self.sender_wake[i as usize] == Some(now) {
                        self.sender_wake[i as usize] = None;
                    }
                    let obs = &mut CallTrace {
                        trace: &mut self.trace,
                        plumbing: &self.plumbings[i as usize],
                        mirrors: &self.frame_mirrors[i as usize],
                    };
                    self.senders[i as usize].on_timeout(now, obs);
                    self.flush_sender(now, i);
                }
                Event::Receiver(i) => {
                    if self.receiver_wake[i as usize] == Some(now) {
                        self.receiver_wake[i as usize] = None;
                    }
                    let obs = &mut CallTrace {
                        trace: &mut self.trace,
                        plumbing: &self.receiver_plumbings[i as usize],
                        mirrors: &[],
                    };
                    self.receivers[i as usize].on_timeout(now, obs);
                    self.flush_receiver(now, i);
                }
                Event::Forwarder(i) => {
                    if self.forwarder_wake[i as usize] == Some(now) {
                        self.forwarder_wake[i as usize] = None;
                    }
                    let obs = &mut SfuTrace {
                        trace: &mut self.trace,
                        plumbing: &self.forwarder_plumbings[i as usize],
                    };
                    self.forwarders[i as usize].on_timeout(now, obs);
                    self.flush_forwarder(now, i);
                }
                Event::TcpSource(i) => {
                    if self.tcp_source_wake[i as usize] == Some(now) {
                        self.tcp_source_wake[i as usize] = None;
                    }
                    self.tcp_sources[i as usize].on_timeout(now);
                    self.flush(now, ev);
                }
                Event::TcpSink(i) => {
                    if self.tcp_sink_wake[i as usize] == Some(now) {
                        self.tcp_sink_wake[i as usize] = None;
                    }
                    self.tcp_sinks[i as usize].on_timeout(now);
                    self.flush(now, ev);
                }
                Event::Cbr(i) => {
                    if self.cbr_wake[i as usize] == Some(now) {
                        self.cbr_wake[i as usize] = None;
                    }
                    self.cbrs[i as usize].on_timeout(now);
                    self.flush(now, ev);
                }
                Event::Sample => {
                    let held = self.trace.links.len();
                    let mut next = now + LINK_SAMPLE_INTERVAL;
                    for (k, link) in self.links.iter().enumerate() {
                        let capacity = match &self.available[k] {
                            Some(free) => free.rate_at(now),
                            None => link.capacity_at(now),
                        };
                        let changes = self.available[k].as_ref().unwrap_or(&link.config().capacity);
                        if let Some(c) = changes.next_change_after(now) {
                            next = next.min(c);
                        }
                        self.trace.links.record(
                            now,
                            k as LinkId,
                            capacity,
                            link.queue_bytes(),
                            link.queue_limit_at(now),
                        );
                    }
                    self.wifi.sample(now, &mut self.trace.links);
                    self.lte.sample(now, &mut self.trace.links);
                    self.reserve_link_rows(now, self.trace.links.len() - held);
                    if now < self.end {
                        self.sched.schedule(next.min(self.end), Event::Sample);
                    }
                }
            }
        }
        events
    }

    /// Makes room in the links table, when the next sample of `rows` rows would not fit, for the
    /// samples left until the end of the run (at most [`LINK_ROWS_RESERVED`] rows) in one
    /// allocation: grown by doubling instead, its columns would be copied and their pages
    /// touched twice over (a tenth of an LTE run's time, `make bench`).
    fn reserve_link_rows(&mut self, now: Instant, rows: usize) {
        let links = &mut self.trace.links;
        let samples_left = ((self.end - now).as_micros() / LINK_SAMPLE_INTERVAL.as_micros()) as usize;
        if samples_left == 0 || links.capacity() - links.len() >= rows {
            return;
        }
        links.reserve_exact(rows.saturating_mul(samples_left).min(LINK_ROWS_RESERVED));
    }

    /// Schedules an element's next wake-up if it is earlier than the one pending. A stale
    /// wake-up (one superseded by an earlier) still fires and finds nothing due.
    fn wake(&mut self, ev: Event) {
        let (t, slot) = match ev {
            Event::Link(l) => (self.links[l as usize].poll_timeout(), &mut self.link_wake[l as usize]),
            Event::Bss(b) => {
                if let Some(t) = self.wifi.bsses[b as usize].poll_timeout() {
                    self.sched.schedule_in_slot(usize::from(b), t, ev);
                }
                return;
            }
            Event::Cell(c) => {
                if let Some(t) = self.lte.cells[c as usize].poll_timeout() {
                    self.sched.schedule_in_slot(self.wifi.bsses.len() + usize::from(c), t, ev);
                }
                return;
            }
            Event::Sender(i) => {
                (Some(self.senders[i as usize].poll_timeout()), &mut self.sender_wake[i as usize])
            }
            Event::Receiver(i) => {
                (Some(self.receivers[i as usize].poll_timeout()), &mut self.receiver_wake[i as usize])
            }
            Event::Forwarder(i) => {
                (Some(self.forwarders[i as usize].poll_timeout()), &mut self.forwarder_wake[i as usize])
            }
            Event::TcpSource(i) => {
                (Some(self.tcp_sources[i as usize].poll_timeout()), &mut self.tcp_source_wake[i as usize])
            }
            Event::TcpSink(i) => {
                (Some(self.tcp_sinks[i as usize].poll_timeout()), &mut self.tcp_sink_wake[i as usize])
            }
            Event::Cbr(i) => (Some(self.cbrs[i as usize].poll_timeout()), &mut self.cbr_wake[i as usize]),
            Event::Sample => unreachable!("samples are scheduled by the sampling loop"),
        };
        if let Some(t) = t.filter(|&t| slot.is_none_or(|w| t < w)) {
            *slot = Some(t);
            self.sched.schedule(t, ev);
        }
    }

    /// Sends what a cross-traffic element emitted and schedules its next wake-up.
    fn flush(&mut self, now: Instant, ev: Event) {
        let mut out = std::mem::take(self.cross_outbox(ev));
        for p in out.drain(..) {
            self.transmit(now, p);
        }
        give_back(self.cross_outbox(ev), out);
        self.wake(ev);
    }

    fn cross_outbox(&mut self, ev: Event) -> &mut Vec<Packet> {
        match ev {
            Event::TcpSource(i) => &mut self.tcp_sources[i as usize].outbox,
            Event::TcpSink(i) => &mut self.tcp_sinks[i as usize].outbox,
            Event::Cbr(i) => &mut self.cbrs[i as usize].outbox,
            _ => unreachable!("calls have their own outboxes"),
        }
    }

    fn flush_sender(&mut self, now: Instant, i: u32) {
        let mut out = std::mem::take(&mut self.senders[i as usize].outbox);
        let plumbing = self.plumbings[i as usize];
        for o in out.drain(..) {
            self.transmit(now, plumbing.packet(now, o, true));
        }
        give_back(&mut self.senders[i as usize].outbox, out);
        self.wake(Event::Sender(i));
    }

    fn flush_receiver(&mut self, now: Instant, i: u32) {
        if let Some(m) = self.receivers[i as usize].estimator_metrics() {
            match self.receiver_peers[i as usize] {
                Peer::Sender(s) => self.senders[s as usize].set_remote_metrics(Some(m)),
                Peer::Downlink(f, leg) => self.forwarders[f as usize].set_remote_metrics(leg, Some(m)),
            }
        }
        let mut out = std::mem::take(&mut self.receivers[i as usize].outbox);
        let plumbing = self.receiver_plumbings[i as usize];
        for o in out.drain(..) {
            self.transmit(now, plumbing.packet(now, o, false));
        }
        give_back(&mut self.receivers[i as usize].outbox, out);
        self.wake(Event::Receiver(i));
    }

    /// Sends what an SFU's forwarder emitted: to the publisher on the publish call's way back,
    /// to a viewer on its forward leg.
    fn flush_forwarder(&mut self, now: Instant, f: u32) {
        if let Some(m) = self.forwarders[f as usize].uplink_estimator_metrics() {
            self.senders[self.forwarder_senders[f as usize] as usize].set_remote_metrics(Some(m));
        }
        let mut out = std::mem::take(&mut self.forwarders[f as usize].outbox);
        for (to, o) in out.drain(..) {
            let plumbing = &self.forwarder_plumbings[f as usize];
            let pkt = match to {
                Toward::Publisher => plumbing.uplink.packet(now, o, false),
                Toward::Viewer(leg) => plumbing.legs[leg].packet(now, o, true),
            };
            self.transmit(now, pkt);
        }
        give_back(&mut self.forwarders[f as usize].outbox, out);
        self.wake(Event::Forwarder(f));
    }

    /// A packet leaves its sender.
    fn transmit(&mut self, now: Instant, mut pkt: Packet) {
        pkt.id = self.next_packet_id;
        self.next_packet_id += 1;
        pkt.hop = 0;
        let framing = self.routes[pkt.route as usize].framing;
        if !framing.is_zero() {
            pkt.size += framing;
        }
        self.trace.packet(now, PacketEvent::Sent, &pkt, None);
        if let Some(capture) = &mut self.capture {
            let route = &self.routes[pkt.route as usize];
            let (transport, headers) = match pkt.kind {
                PacketKind::Media
                | PacketKind::Padding
                | PacketKind::Rtx
                | PacketKind::Fec
                | PacketKind::Rtcp => (CapturedTransport::RtpUdp, rtcbench_wire::rtp::IPV4_UDP_OVERHEAD),
                PacketKind::Tcp | PacketKind::TcpAck => (CapturedTransport::Tcp, IPV4_HEADER),
                PacketKind::Cbr => (CapturedTransport::CbrUdp, rtcbench_wire::rtp::IPV4_UDP_OVERHEAD),
            };
            capture.push(Captured {
                t: now,
                src: route.src_node,
                dst: route.dst_node,
                transport,
                ecn: pkt.ecn.bits(),
                data: pkt.data.clone(),
                // Everything after the header bytes: media payload, the RTX payload of a probe,
                // TCP or CBR payload (the endpoints' packets, without a relay's framing).
                payload: pkt.size.saturating_sub(headers + framing + DataSize::bytes(pkt.data.len() as u64)),
            });
        }
        self.enter_hop(now, pkt);
    }

    fn enter_hop(&mut self, now: Instant, pkt: Packet) {
        match self.routes[pkt.route as usize].hops[pkt.hop as usize] {
            Hop::Link(l) => {
                if let Err((pkt, reason)) = self.links[l as usize].enqueue(now, pkt) {
                    self.dropped(now, l, &pkt, reason);
                }
                self.wake(Event::Link(l));
            }
            Hop::Wifi { bss, from, to } => {
                if let Err((pkt, reason)) = self.wifi.bsses[bss as usize].push(now, from, to, pkt) {
                    self.dropped(now, self.wifi.queue_id(bss, from), &pkt, reason);
                }
                self.wake(Event::Bss(bss));
            }
            Hop::Lte { cell, from, to } => {
                let first = pkt.hop == 0;
                let (flow, size) = (pkt.flow, pkt.size);
                if let Err((pkt, reason)) = self.lte.cells[cell as usize].push(now, from, to, pkt) {
                    self.dropped(now, self.lte.queue_id(cell, from, to), &pkt, reason);
                } else if first {
                    // A UE's host hands its packets to the modem at once (USB, no small-queue
                    // pacing): they left the host.
                    self.left_host(now, flow, size);
                }
                self.wake(Event::Cell(cell));
            }
        }
    }

    /// The buffer a packet dropped inside cell `c` was in: the one of the hop its route is at
    /// (the eNB's for a downlink, the UE's for an uplink).
    fn cell_buffer(&self, c: u16, pkt: &Packet) -> LinkId {
        match self.routes[pkt.route as usize].hops[pkt.hop as usize] {
            Hop::Lte { from, to, .. } => self.lte.queue_id(c, from, to),
            hop => unreachable!("a packet dropped inside cell {c} is at a hop across it, not {hop:?}"),
        }
    }

    fn dropped(&mut self, now: Instant, l: LinkId, pkt: &Packet, reason: DropReason) {
        self.trace.packet(now, PacketEvent::Dropped, pkt, Some((l, reason)));
        if pkt.hop == 0 {
            self.left_host(now, pkt.flow, pkt.size);
        }
    }

    /// A packet left its host's interface (serialised or dropped there): a TCP source under
    /// TCP Small Queues may send more. It sends in its own event, not from inside the link's.
    fn left_host(&mut self, now: Instant, flow: FlowId, size: DataSize) {
        if let Some(&Some(i)) = self.small_queues.get(flow as usize) {
            self.tcp_sources[i as usize].on_left_host(now, size);
            self.wake(Event::TcpSource(i));
        }
    }

    /// A packet reached the end of a link: next link or its destination.
    fn forward(&mut self, now: Instant, mut pkt: Packet) {
        pkt.hop += 1;
        let route = &self.routes[pkt.route as usize];
        if (pkt.hop as usize) < route.hops.len() {
            self.enter_hop(now, pkt);
            return;
        }
        self.trace.packet(now, PacketEvent::Received, &pkt, None);
        let framing = route.framing;
        match route.dest {
            Endpoint::Sender(i) => {
                let obs = &mut CallTrace {
                    trace: &mut self.trace,
                    plumbing: &self.plumbings[i as usize],
                    mirrors: &self.frame_mirrors[i as usize],
                };
                self.senders[i as usize].on_rtcp(now, incoming(&pkt, framing), obs);
                self.flush_sender(now, i);
            }
            Endpoint::Receiver(i) => {
                let obs = &mut CallTrace {
                    trace: &mut self.trace,
                    plumbing: &self.receiver_plumbings[i as usize],
                    mirrors: &[],
                };
                self.receivers[i as usize].on_packet(now, incoming(&pkt, framing), obs);
                self.flush_receiver(now, i);
            }
            Endpoint::Forwarder(i) => {
                let obs =
                    &mut SfuTrace { trace: &mut self.trace, plumbing: &self.forwarder_plumbings[i as usize] };
                self.forwarders[i as usize].on_publisher_packet(now, incoming(&pkt, framing), obs);
                self.flush_forwarder(now, i);
            }
            Endpoint::Downlink(i, leg) => {
                let obs =
                    &mut SfuTrace { trace: &mut self.trace, plumbing: &self.forwarder_plumbings[i as usize] };
                self.forwarders[i as usize].on_viewer_rtcp(now, leg as usize, incoming(&pkt, framing), obs);
                self.flush_forwarder(now, i);
            }
            Endpoint::TcpSource(i) => {
                self.tcp_sources[i as usize].on_packet(now, &pkt);
                self.flush(now, Event::TcpSource(i));
            }
            Endpoint::TcpSink(i) => {
                self.tcp_sinks[i as usize].on_packet(now, &pkt);
                self.flush(now, Event::TcpSink(i));
            }
            Endpoint::Sink => {}
        }
    }
}

/// Writes captured packets as a pcap file that Wireshark and tshark open (raw IPv4; RTP and RTCP
/// multiplexed on UDP port 5004 as WebRTC does, TCP with its own ports, CBR on the discard port
/// 9; node `i` is the (i+1)-th address of 10.0.0.0/16), in as many pieces as the run is taken in
/// ([`Simulation::take_capture`]).
/// Decode with `tshark -d udp.port==5004,rtp` (see `rtcbench_wire::pcap::TSHARK_ARGS`).
pub struct CaptureWriter<W: std::io::Write> {
    w: rtcbench_wire::pcap::PcapWriter<W>,
}

impl<W: std::io::Write> CaptureWriter<W> {
    /// Writes the file header.
    pub fn new(out: W) -> Result<Self, rtcbench_wire::pcap::CaptureError> {
        Ok(Self { w: rtcbench_wire::pcap::PcapWriter::new(out)? })
    }

    /// Appends packets, in the order they were captured.
    pub fn write(&mut self, packets: &[Captured]) -> Result<(), rtcbench_wire::pcap::CaptureError> {
        use rtcbench_wire::pcap::DEFAULT_PORT;
        use std::net::{Ipv4Addr, SocketAddrV4};
        let ip = |n: u16| Ipv4Addr::new(10, 0, (n >> 8) as u8, (n & 0xff) as u8 + 1);
        for p in packets {
            let (src, dst) = (ip(p.src), ip(p.dst));
            let udp = |port| (SocketAddrV4::new(src, port), SocketAddrV4::new(dst, port));
            match p.transport {
                CapturedTransport::RtpUdp => {
                    let (a, b) = udp(DEFAULT_PORT);
                    self.w.write_udp_ecn(p.t, a, b, p.ecn, &p.data, p.payload)?
                }
                CapturedTransport::CbrUdp => {
                    let (a, b) = udp(CBR_CAPTURE_PORT);
                    self.w.write_udp_ecn(p.t, a, b, p.ecn, &p.data, p.payload)?
                }
                CapturedTransport::Tcp => self.w.write_tcp(p.t, (src, dst), p.ecn, &p.data, p.payload)?,
            };
        }
        Ok(())
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.w.into_writer()
    }
}

/// Writes captured packets as one pcap file ([`CaptureWriter`] in one piece).
pub fn write_pcap<W: std::io::Write>(
    out: W,
    packets: &[Captured],
) -> Result<W, rtcbench_wire::pcap::CaptureError> {
    let mut w = CaptureWriter::new(out)?;
    w.write(packets)?;
    Ok(w.into_inner())
}
