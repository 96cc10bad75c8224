//! Building a run's world from its plan: the network's elements, the calls' endpoints, the
//! cross traffic, and the routes between them (`rtcbench_scenario::run::RunPlan`).

use rand::RngExt;
use rtcbench_cc::external::ExternalRate;
use rtcbench_cc::factory::{self, USER_CCFB_INTERVAL};
use rtcbench_cc::learned::LearnedPolicy;
use rtcbench_cc::AnyController;
use rtcbench_net::rng::rng_for;
use rtcbench_rtp::sfu::{DownlinkParts, Forwarder, ForwarderParts};
use rtcbench_rtp::{CallPlan, StreamIds};
use rtcbench_scenario::calls::{run_calls, Role, RunCall};
use rtcbench_scenario::cross::TcpFlowPlan;
use rtcbench_scenario::elements::{
    call_plan, scheduled_capacity, udp_background_rate, udp_background_steps, UDP_BACKGROUND_PACKET,
};
use rtcbench_scenario::run::{Meta, RunPlan, TURN_CHANNEL_DATA};
use rtcbench_scenario::{ControllerParams, Hop, Scenario, ScenarioError, TcpCc};
use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

use super::network::{ElementOverride, Network};
use super::route::{Endpoint, Peer, Route};
use super::{CallSetup, ControllerChoice, Event, RunOptions, UserFeedback, World};
use crate::call::{CallPlumbing, FeedbackMode, ForwarderPlumbing, Receiver, Sender};
use crate::cross::{CbrFlow, Plumbing, TcpSink, TcpSource, TSQ_PACING_TIME, TSQ_WIFI_PACING_TIME};
use crate::packet::{FlowId, RouteId};
use crate::scheduler::Scheduler;
use crate::trace::Trace;
use crate::traffic::cbr::CbrSource;
use crate::traffic::on_off::{OnOff, OnOffConfig};
use crate::traffic::tcp::{Application, CongestionControl, ReceiverConfig, SenderConfig, TcpEcn, TcpSender};

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
        ControllerChoice::Learned(p) => FeedbackMode::Learned(p.clone()),
    }
}

/// The world of a run, its description and what each call's controller was told, before any
/// event.
pub(super) fn build_world(
    s: &Scenario,
    mut controller: ControllerChoice,
    seed: u64,
    options: RunOptions,
    agent: Option<LearnedPolicy>,
    elements: Vec<ElementOverride>,
) -> Result<(World, Meta, Vec<CallSetup>), ScenarioError> {
    let spec = &s.spec;
    let origin = format!("scenario {}", spec.id);
    let end = Instant::ZERO + *spec.duration.get();
    let mut plan = RunPlan::new(s, controller.name(), seed)?;
    let mut net = Network::new(s, seed, end, &origin, elements)?;
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
    if let Some(call) = options.external.filter(|&c| agent.is_some() && run[c as usize].role != Role::Call) {
        return Err(ScenarioError::new(
            &origin,
            Some("calls".to_string()),
            format!(
                "the call whose estimates are set from outside is call {call} ({}), an SFU's leg; choose a call between two endpoints",
                run[call as usize].name
            ),
        ));
    }
    // The external call's controller when its estimates are set from outside: a learned policy.
    let mut agent = agent.map(ControllerChoice::Learned);
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
        routes.push(Route { hops: net.steps(fwd), dest: to_receiving, src_node: a, dst_node: b, framing });
        let backward_route = routes.len() as RouteId;
        routes.push(Route { hops: net.steps(bwd), dest: to_sending, src_node: b, dst_node: a, framing });
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
                let (choice, rate_external) = match &mut agent {
                    Some(a) if external => (a, false),
                    _ => (&mut controller, external),
                };
                let (plan, mut sender, receiver, setup) =
                    build_call(rc, call, choice, rate_external, &spec.controller, seed, end);
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

    let mut route_to = |path: &[Hop], dest: Endpoint, (src_node, dst_node): (u16, u16)| -> RouteId {
        routes.push(Route { hops: net.steps(path), dest, src_node, dst_node, framing: DataSize::ZERO });
        (routes.len() - 1) as RouteId
    };

    let mut tcp_sources = Vec::new();
    let mut tcp_sinks = Vec::new();
    let mut tsq_flows = Vec::new();
    for (t, r) in plan.cross.tcp.iter().zip(&plan.tcp) {
        let ends = (node(&t.from), node(&t.to));
        let (fwd, data, ack) = (&r.forward, r.data, r.ack);
        let index = tcp_sources.len() as u32;
        let to_sink = route_to(fwd, Endpoint::TcpSink(index), ends);
        let to_source = route_to(&r.backward, Endpoint::TcpSource(index), (ends.1, ends.0));
        let (mut source, sink) = build_tcp(t, (to_sink, data), (to_source, ack), seed);
        if t.small_queues {
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

    let mut cbrs = Vec::new();
    for (c, r) in plan.cross.cbr.iter().zip(&plan.cbr) {
        let flow = r.flow;
        let route = route_to(&r.hops, Endpoint::Sink, (node(&c.from), node(&c.to)));
        let source = CbrSource::constant(c.rate(), c.packet_size(), c.start(), c.stop());
        cbrs.push(CbrFlow::new(source, Plumbing { flow, route }));
    }
    let mut background_links = Vec::new();
    for &(k, flow) in &plan.udp_background {
        let l = &spec.links[usize::from(k)];
        let physical = udp_background_rate(l).expect("planned: the link has UDP background traffic");
        let route = route_to(&[Hop::Link(k)], Endpoint::Sink, (node(&l.from), node(&l.to)));
        let source = CbrSource::scheduled(udp_background_steps(l, physical), UDP_BACKGROUND_PACKET, end);
        cbrs.push(CbrFlow::new(source, Plumbing { flow, route }));
        background_links.push((k, scheduled_capacity(l)));
    }
    for (k, available) in background_links {
        net.set_available(k, &available);
    }

    let mut small_queues = vec![None; plan.meta.flows.len()];
    for (flow, source, first_hop) in tsq_flows {
        small_queues[flow as usize] = Some(source);
        // A link reports what it serialised; a BSS's deliveries count as sent
        // (`rtcbench_net::HostRelease`).
        if let Hop::Link(host_link) = first_hop {
            net.report_serialised(host_link);
        }
    }
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
    for _ in 0..net.slots() {
        sched.add_slot();
    }
    let w = World {
        sched,
        net,
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
        trace: Trace::default(),
        link_rows_reserved: super::run::LINK_ROWS_RESERVED,
        next_packet_id: 0,
        end,
        capture: options.capture.then(Vec::new),
    };
    Ok((w, plan.meta, setups))
}

/// One TCP connection of the cross traffic (`scenario::cross`): its source (sender and
/// application) and sink.
fn build_tcp(
    t: &TcpFlowPlan,
    (to_sink, data_flow): (RouteId, FlowId),
    (to_source, ack_flow): (RouteId, FlowId),
    seed: u64,
) -> (TcpSource, TcpSink) {
    let cc = match t.cc {
        TcpCc::Newreno => CongestionControl::NewReno,
        TcpCc::Cubic => CongestionControl::Cubic,
        TcpCc::Prague => CongestionControl::Prague,
        TcpCc::Bbr => CongestionControl::Bbr,
    };
    let mut ids = rng_for(seed, &format!("{}/ids", t.rng_path));
    let mut cfg = SenderConfig::new(cc);
    // Prague's L4S ECN comes with it (`SenderConfig::new`); the others' is classic ECN.
    if t.ecn && cc != CongestionControl::Prague {
        cfg.ecn = TcpEcn::Classic;
    }
    cfg.src_port = t.src_port;
    cfg.dst_port = t.dst_port;
    cfg.iss = ids.random();
    // BBR's random start phases in ProbeBW; drawn after the ISS, and only for BBR, so that no
    // other flow's draws change.
    if cc == CongestionControl::Bbr {
        cfg.seed = ids.random();
    }
    let app = t.on_off.map(|o| {
        cfg.application = Application::Writes;
        let on_off = OnOffConfig {
            size_min: DataSize::bytes(o.size_min_bytes),
            size_max: DataSize::bytes(o.size_max_bytes),
            files: o.files,
            idle_mean: Duration::from_micros(o.idle_mean_us),
        };
        (on_off, o.initially_on)
    });
    let mut rx = ReceiverConfig::for_sender(&cfg);
    if !t.delayed_ack {
        rx.delayed_ack = None;
    }
    let (start, stop) = (t.start(), t.stop());
    let app = app.map(|(c, on)| OnOff::new(c, on, start, rng_for(seed, &format!("{}/workload", t.rng_path))));
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
    let plan = run_by(call_plan(&rc.spec, call, &rc.label, params, seed, end), controller, external);
    let (ctrl, setup) = build_controller(&plan, controller, external);
    let mode = feedback_mode(controller, external, &plan, plan.limits().start);
    let (sender, receiver) = (plan.sender(ctrl), plan.receiver(mode));
    (plan, sender, receiver, setup)
}

/// `plan` as the call's built-in controller runs it ([`CallPlan::run_by`]); a user's or an
/// external controller is told the scenario's limits.
fn run_by(plan: CallPlan, controller: &ControllerChoice, external: bool) -> CallPlan {
    match controller {
        ControllerChoice::Builtin(kind) if !external => plan.run_by(*kind),
        _ => plan,
    }
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
        ControllerChoice::Learned(_) => factory::follow_estimate(limits),
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
    let mut plan = run_by(call_plan(&rc.spec, call, &rc.label, params, seed, end), controller, false);
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
