//! From a scenario's links to the network elements that realise them ([`rtcbench_net`]): the
//! one translation both the simulator's world and an emulation relay use, so a link behaves the
//! same whichever drives it.

use rtcbench_net::link::capacity::CapacitySchedule;
use rtcbench_net::link::capacity_trace::CapacityTrace;
use rtcbench_net::link::jitter::JitterConfig;
use rtcbench_net::link::loss::LossModel;
use rtcbench_net::link::{LinkConfig, QueueLimit};
use rtcbench_net::queue::{
    CodelConfig, DualPi2Config, FqCodelConfig, PiQueueDelay, PieConfig, QueueDiscipline, StepConfig,
    RFC9332_RTT_MAX,
};
use rtcbench_net::radio::lte::CellConfig;
use rtcbench_net::radio::wifi::BssConfig;
use rtcbench_net::rng::{derive_seed, rng_for};
use rtcbench_net::ElementHop;
use rtcbench_rtp::call::{FecScheme, StreamIds};
use rtcbench_rtp::plan::{AudioPlan, CallPlan, PausePlan, VideoPlan};
use rtcbench_units::{Bitrate, DataSize, Duration, Instant};
use serde::{Deserialize, Serialize};

use super::lte::cell_config;
use super::run::RunPlan;
use super::wifi::bss_config;
use super::{
    find_route, CallSpec, CapacityMechanism, ControllerParams, Dualpi2Defaults, Dualpi2PiDelay, EcnCodepoint,
    GccDeployment, Hop, LinkSpec, LossSpec, QueueKind, QueueSize, QueueSpec, Scenario, ScenarioError,
};

/// The capacity a link's `capacity` or `schedule` describes: the capacity left to the flows.
pub fn scheduled_capacity(l: &LinkSpec) -> CapacitySchedule {
    match (&l.schedule, &l.capacity) {
        (Some(steps), _) => CapacitySchedule::from_steps(
            steps
                .iter()
                .map(|s| {
                    let rate = match (&s.capacity, s.ratio) {
                        (Some(c), _) => *c.get(),
                        (None, Some(r)) => {
                            *l.reference_capacity.as_ref().expect("validated: ratio has a reference").get()
                                * r
                        }
                        (None, None) => unreachable!("validated: each step has a capacity or a ratio"),
                    };
                    (Instant::ZERO + Duration::from_micros(s.at.as_micros()), Some(rate))
                })
                .collect(),
        ),
        (None, Some(c)) => CapacitySchedule::constant(*c.get()),
        (None, None) => CapacitySchedule::unlimited(),
    }
}

/// The physical rate of a link that realises its schedule with UDP background traffic (RFC 8867
/// §4.2), or `None` if the link's own rate follows the schedule.
pub fn udp_background_rate(l: &LinkSpec) -> Option<Bitrate> {
    let udp = l.mechanism.as_ref().is_some_and(|m| *m.get() == CapacityMechanism::UdpBackground);
    udp.then(|| {
        *l.physical_capacity.as_ref().expect("validated: udp-background has a physical capacity").get()
    })
}

/// The background CBR rate that leaves a link's scheduled capacity free on its physical rate.
pub fn udp_background_steps(l: &LinkSpec, physical: Bitrate) -> Vec<(Instant, Bitrate)> {
    scheduled_capacity(l)
        .steps()
        .iter()
        .map(|&(at, free)| (at, physical.saturating_sub(free.unwrap_or(physical))))
        .collect()
}

fn queue_discipline(q: Option<&QueueSpec>) -> QueueDiscipline {
    let Some(q) = q else { return QueueDiscipline::DropTail };
    // FQ-CoDel marks by default (RFC 8290 §5.2.6, Linux); the single-queue AQMs do not.
    let ecn = q.ecn.unwrap_or(q.kind() == QueueKind::FqCodel);
    match q.kind() {
        QueueKind::Droptail => QueueDiscipline::DropTail,
        QueueKind::Codel => QueueDiscipline::Codel(codel_config(q, ecn)),
        QueueKind::FqCodel => QueueDiscipline::FqCodel(FqCodelConfig {
            codel: codel_config(q, ecn),
            ..FqCodelConfig::default()
        }),
        QueueKind::Pie => {
            let d = PieConfig::default();
            QueueDiscipline::Pie(PieConfig { target: q.target.unwrap_or(d.target), ecn, ..d })
        }
        QueueKind::Step => {
            let d = StepConfig::default();
            QueueDiscipline::Step(StepConfig { threshold: q.threshold.unwrap_or(d.threshold) })
        }
        QueueKind::Dualpi2 => QueueDiscipline::DualPi2(dualpi2_config(q)),
    }
}

/// The set `defaults` names, with the queue's fields over it. Under the RFC set, Tupdate, alpha and
/// beta derive from target and RTT_max as RFC 9332 Fig. 2 ll. 12-14 say, so changing `target` or
/// `rtt_max` changes them unless they are given; under Linux's they derive only from a given
/// `rtt_max`.
fn dualpi2_config(q: &QueueSpec) -> DualPi2Config {
    let set = q.defaults.unwrap_or_default();
    let d = match set {
        Dualpi2Defaults::Rfc9332 => DualPi2Config::rfc9332(),
        Dualpi2Defaults::Linux => DualPi2Config::linux(),
    };
    let target = q.target.unwrap_or(d.target);
    let rtt_max = match set {
        Dualpi2Defaults::Rfc9332 => Some(q.rtt_max.unwrap_or(RFC9332_RTT_MAX)),
        Dualpi2Defaults::Linux => q.rtt_max,
    };
    let (t_update, alpha, beta) =
        rtt_max.map_or((d.t_update, d.alpha, d.beta), |rtt| DualPi2Config::rfc9332_gains(target, rtt));
    DualPi2Config {
        target,
        t_update: q.t_update.unwrap_or(t_update),
        alpha: q.alpha.unwrap_or(alpha),
        beta: q.beta.unwrap_or(beta),
        coupling: q.coupling.unwrap_or(d.coupling),
        l_min_th: q.l_min_th.unwrap_or(d.l_min_th),
        l_range: q.l_range.unwrap_or(d.l_range),
        th_len: q.th_len.unwrap_or(d.th_len),
        pi_delay: q.pi_delay.map_or(d.pi_delay, |p| match p {
            Dualpi2PiDelay::Classic => PiQueueDelay::Classic,
            Dualpi2PiDelay::Max => PiQueueDelay::Max,
        }),
        classic_weight: q.classic_weight.unwrap_or(d.classic_weight),
        drop_overload: q.drop_overload.unwrap_or(d.drop_overload),
        min_backlog: q.min_backlog.unwrap_or(d.min_backlog),
    }
}

fn codel_config(q: &QueueSpec, ecn: bool) -> CodelConfig {
    let d = CodelConfig::default();
    CodelConfig { target: q.target.unwrap_or(d.target), interval: q.interval.unwrap_or(d.interval), ecn, ..d }
}

/// A link as the scenario describes it, with its capacity trace if it has one, for a run that
/// ends at `end` (a trace is laid out, looped, up to there).
pub fn link_config(l: &LinkSpec, trace: Option<&CapacityTrace>, end: Instant) -> LinkConfig {
    let (capacity, opportunities) = match (udp_background_rate(l), trace) {
        (Some(physical), _) => (CapacitySchedule::constant(physical), None),
        (None, Some(trace @ CapacityTrace::Opportunities(o))) => (trace.schedule(end), Some(o.clone())),
        (None, Some(trace @ CapacityTrace::Rate(_))) => (trace.schedule(end), None),
        (None, None) => (scheduled_capacity(l), None),
    };
    LinkConfig {
        name: l.name.clone(),
        capacity,
        delay: l.delay.as_ref().map_or(Duration::ZERO, |d| *d.get()),
        queue: match (l.queue.as_ref().map(|q| *q.size.get()), &opportunities) {
            (None | Some(QueueSize::Unlimited), _) => QueueLimit::Unlimited,
            (Some(QueueSize::Bytes(b)), _) => QueueLimit::Bytes(b),
            // A mahimahi link's rate is a 200 ms average of its opportunities, an artefact of
            // reporting; its buffer is sized once, at the trace's mean rate, as a real device's
            // buffer does not resize with the radio's rate (mahimahi's own queues are in bytes
            // or packets).
            (Some(QueueSize::Time(t)), Some(o)) => QueueLimit::Bytes(o.mean_rate() * t),
            (Some(QueueSize::Time(t)), None) => QueueLimit::Time(t),
        },
        opportunities,
        discipline: queue_discipline(l.queue.as_ref()),
        jitter: l
            .jitter
            .as_ref()
            .map(|j| JitterConfig { std: *j.std.get(), n_std: j.n_std.as_ref().map_or(3.0, |n| *n.get()) }),
        loss: match &l.loss {
            None => LossModel::None,
            Some(LossSpec::Bernoulli { rate }) => LossModel::Bernoulli { rate: *rate.get() },
            Some(LossSpec::GilbertElliott { p, r, loss_good, loss_bad }) => LossModel::GilbertElliott {
                p: *p.get(),
                r: *r.get(),
                loss_good: loss_good.as_ref().map_or(0.0, |v| *v.get()),
                loss_bad: loss_bad.as_ref().map_or(1.0, |v| *v.get()),
            },
        },
        bleach_ecn: l.bleach_ecn.unwrap_or(false),
    }
}

/// The network of a scenario as a relay realises it: the elements the simulator builds (the
/// scenario's links, then its BSSes, then its cells, numbered in that order as the simulator
/// numbers them), and for each ordered pair of nodes that they join, the fewest-hop route (as
/// the simulator routes).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkPlan {
    pub scenario: String,
    pub seed: u64,
    pub duration: Duration,
    /// Every node, as the run's `meta.nodes` lists them: the links' nodes, then the BSSes' and
    /// cells' members.
    pub nodes: Vec<String>,
    pub links: Vec<LinkConfig>,
    #[serde(default)]
    pub bsses: Vec<BssConfig>,
    #[serde(default)]
    pub cells: Vec<CellConfig>,
    /// The name of every queue, numbered as the run's `meta.links`: one per link, one per node of
    /// each BSS, two per UE of each cell (`<cell>:<ue>:dl`, then `:ul`).
    pub queues: Vec<String>,
    pub routes: Vec<RoutePlan>,
    /// The links whose capacity changes are made by UDP background traffic.
    #[serde(default)]
    pub background: Vec<BackgroundPlan>,
}

/// Packets of RFC 8867 §4.2's UDP background traffic, on the wire.
pub const UDP_BACKGROUND_PACKET: DataSize = DataSize::bytes(1200);

/// RFC 8867 §4.2's UDP background traffic on one link: constant-bit-rate packets that take the
/// physical rate less the capacity the scenario leaves to its flows, from the start to the end of
/// the run; they cross that one link only.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackgroundPlan {
    /// Index into [`NetworkPlan::links`].
    pub link: usize,
    /// (microseconds from the start, rate) steps; the first at 0.
    pub steps_us: Vec<(i64, Bitrate)>,
    pub packet_size: DataSize,
}

/// The elements a packet from `from` to `to` crosses, in order, each entered and left by a port
/// (`rtcbench_net::element`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutePlan {
    pub from: String,
    pub to: String,
    pub hops: Vec<ElementHop>,
}

/// The element and ports of a scenario's hop, with the elements numbered as a driver holds them:
/// the `n_links` links, then the `n_bsses` BSSes, then the cells.
pub fn element_hop(n_links: usize, n_bsses: usize, hop: Hop) -> ElementHop {
    let (element, from, to) = match hop {
        Hop::Link(l) => return ElementHop::link(u32::from(l)),
        Hop::Wifi { bss, from, to } => (n_links + usize::from(bss), from.0, to.0),
        Hop::Lte { cell, from, to } => (n_links + n_bsses + usize::from(cell), from.0, to.0),
    };
    ElementHop { element: element as u32, from, to }
}

impl NetworkPlan {
    /// The elements the simulator would build for `s` with `seed`. A relay seeds each element's
    /// random streams as the simulator does ([`link_rng_path`], `run::bss_rng_path`,
    /// `run::cell_rng_path`).
    pub fn new(s: &Scenario, seed: u64) -> Result<Self, ScenarioError> {
        let spec = &s.spec;
        let end = Instant::ZERO + *spec.duration.get();
        // Nodes and queue names as the run describes itself, so the relay's tables name them
        // as a simulated run's do.
        let meta = RunPlan::new(s, "", seed)?.meta;
        let links = spec
            .links
            .iter()
            .enumerate()
            .map(|(k, l)| link_config(l, s.capacity_traces.get(k).and_then(Option::as_deref), end))
            .collect();
        let nodes = meta.nodes;
        let routes = nodes
            .iter()
            .flat_map(|from| nodes.iter().map(move |to| (from, to)))
            .filter(|(from, to)| from != to)
            .filter_map(|(from, to)| {
                let hops = find_route(&spec.links, &spec.wifi, &spec.lte, from, to)?;
                Some(RoutePlan {
                    from: from.clone(),
                    to: to.clone(),
                    hops: hops
                        .into_iter()
                        .map(|h| element_hop(spec.links.len(), spec.wifi.len(), h))
                        .collect(),
                })
            })
            .collect();
        let background = spec
            .links
            .iter()
            .enumerate()
            .filter_map(|(link, l)| {
                let physical = udp_background_rate(l)?;
                let steps = udp_background_steps(l, physical);
                let steps_us =
                    steps.into_iter().map(|(at, rate)| ((at - Instant::ZERO).as_micros(), rate)).collect();
                Some(BackgroundPlan { link, steps_us, packet_size: UDP_BACKGROUND_PACKET })
            })
            .collect();
        Ok(Self {
            scenario: spec.id.clone(),
            seed,
            duration: *spec.duration.get(),
            nodes,
            links,
            bsses: spec.wifi.iter().map(bss_config).collect(),
            cells: spec.lte.iter().map(cell_config).collect(),
            queues: meta.links.into_iter().map(|l| l.name).collect(),
            routes,
            background,
        })
    }
}

/// The path of a link's random stream `what` ("loss", "jitter", "queue") for
/// [`rtcbench_net::rng::rng_for`].
pub fn link_rng_path(link: &str, what: &str) -> String {
    format!("link/{link}/{what}")
}

/// Defaults of RFC 8867 §4.3 for media not described in the scenario.
pub const DEFAULT_VIDEO_MIN: Bitrate = Bitrate::kbps(150);
pub const DEFAULT_VIDEO_MAX: Bitrate = Bitrate::kbps(1500);
pub const DEFAULT_AUDIO_RATE: Bitrate = Bitrate::kbps(20);
pub const DEFAULT_AUDIO_INTERVAL: Duration = Duration::from_millis(20);
pub const DEFAULT_FPS: f64 = 30.0;
/// RTCP SR/RR interval.
pub const DEFAULT_REPORT_INTERVAL: Duration = Duration::from_secs(1);

/// Call `call` (`c`, whose random streams are labelled `label`: `RunCall::label`) of a scenario
/// as its endpoints are built, for a run with `seed` that ends at `end`: stream ids and source
/// seeds drawn from the seed as the simulator draws them, the scenario's values or RFC 8867
/// §4.3's defaults, and the rate limits as totals over its streams (libwebrtc gives GoogCC the
/// totals over all streams of the transport).
pub fn call_plan(
    c: &CallSpec,
    call: u32,
    label: &str,
    params: &ControllerParams,
    seed: u64,
    end: Instant,
) -> CallPlan {
    use rand::RngExt;
    let start = c.start.unwrap_or(Duration::ZERO);
    let stop = c.stop.unwrap_or(end - Instant::ZERO);
    let mut ids_rng = rng_for(seed, &format!("{label}/ids"));
    // A stream added later draws from its own sequence, so the others' values stay as they were.
    let mut flexfec_rng = rng_for(seed, &format!("{label}/ids/flexfec"));
    let ids = StreamIds {
        video_ssrc: ids_rng.random(),
        rtx_ssrc: ids_rng.random(),
        audio_ssrc: ids_rng.random(),
        receiver_ssrc: ids_rng.random(),
        video_seq0: ids_rng.random(),
        rtx_seq0: ids_rng.random(),
        audio_seq0: ids_rng.random(),
        video_ts0: ids_rng.random(),
        audio_ts0: ids_rng.random(),
        flexfec_ssrc: flexfec_rng.random(),
        flexfec_seq0: flexfec_rng.random(),
        flexfec_ts0: flexfec_rng.random(),
    };
    let flows = c.flows();
    let has = |stream: &str| flows.iter().any(|&(_, suffix, _)| suffix == stream);
    let rate = |p: &Option<super::Param<Bitrate>>, default: Bitrate| p.as_ref().map_or(default, |p| *p.get());
    let video_spec = c.video.clone().unwrap_or_default();
    let video = has("video").then(|| {
        let min = rate(&video_spec.min, DEFAULT_VIDEO_MIN);
        VideoPlan {
            fps: video_spec.fps.unwrap_or(DEFAULT_FPS),
            min_rate: min,
            max_rate: rate(&video_spec.max, DEFAULT_VIDEO_MAX),
            start_rate: rate(&video_spec.start, min),
            camera: video_spec
                .camera
                .map_or(rtcbench_media::video::VideoConfig::default().camera, |c| (c.width, c.height)),
            seed: derive_seed(seed, &format!("{label}/video")),
        }
    });
    let audio_spec = c.audio.clone().unwrap_or_default();
    let audio = has("audio").then(|| AudioPlan {
        rate: audio_spec.rate.unwrap_or(DEFAULT_AUDIO_RATE),
        packet_interval: audio_spec.packet_interval.unwrap_or(DEFAULT_AUDIO_INTERVAL),
    });
    let audio_rate = audio.as_ref().map_or(Bitrate::ZERO, |a| a.rate);
    let (vmin, vmax, vstart) = video
        .as_ref()
        .map_or((Bitrate::ZERO, Bitrate::ZERO, Bitrate::ZERO), |v| (v.min_rate, v.max_rate, v.start_rate));
    let feedback = c.feedback.clone().unwrap_or_default();
    CallPlan {
        call,
        start,
        stop,
        ids,
        video,
        audio,
        report_interval: feedback.report_interval.unwrap_or(DEFAULT_REPORT_INTERVAL),
        pauses: c.pause.iter().map(|p| PausePlan { from: p.from, to: p.to, audio: p.audio }).collect(),
        ecn: match c.ecn {
            None | Some(EcnCodepoint::NotEct) => 0b00,
            Some(EcnCodepoint::Ect0) => 0b10,
            Some(EcnCodepoint::Ect1) => 0b01,
        },
        min_rate: vmin + audio_rate,
        max_rate: vmax + audio_rate,
        start_rate: vstart + audio_rate,
        uncapped: false,
        priority: c.priority.unwrap_or(1.0),
        controller_seed: derive_seed(seed, &format!("{label}/controller")),
        gcc_draft_send_side: params.gcc_draft.as_ref().map(|p| p.deployment).unwrap_or_default()
            == GccDeployment::SendSide,
        scream_competing_flows_compensation: params
            .scream
            .as_ref()
            .and_then(|p| p.competing_flows_compensation),
        twcc_interval: feedback.twcc_interval,
        ccfb_interval: feedback.ccfb_interval,
        nack: c.nack.unwrap_or(true),
        fec: c.fec.as_ref().map_or(Some(FecScheme::Ulpfec), |f| f.get().scheme()),
        fec_rate: c.fec_rate,
        keyframe_request: c.keyframe_request.unwrap_or_default(),
        jitter_buffer: c.jitter_buffer,
    }
}
