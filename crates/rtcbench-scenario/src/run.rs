//! What a run of one variant is, before anything runs: its nodes, links (the scenario's, then
//! every BSS node's transmit queues, then every LTE UE's buffers), calls, conferences and flows
//! with their paths and bottlenecks ([`Meta`], `meta` in `summary.json`, docs/traces.md), and the
//! hops each flow's packets take ([`RunPlan`]). The simulator builds its world from it, and an
//! emulated or browser run describes itself with it, so every driver numbers flows and links the
//! same way without simulating anything.

use rtcbench_net::frame::IpFrame;
use rtcbench_net::radio::lte::{Cell, Direction, Port as LtePort};
use rtcbench_net::radio::wifi::Port;
use rtcbench_net::rng::rng_for;
use rtcbench_units::{Bitrate, DataSize, Duration, Instant};
use serde::{Deserialize, Serialize};

use crate::calls::run_calls;
use crate::cross::CrossPlan;
use crate::elements::{link_config, udp_background_rate, DEFAULT_VIDEO_MAX, DEFAULT_VIDEO_MIN};
use crate::lte::{cell_config, LteDirection};
use crate::{find_route, FlowId, Hop, LinkId, Scenario, ScenarioError, WorkloadSpec};

/// Describes the run's links, calls and flows for the trace (`meta` in `summary.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub scenario: String,
    pub variant: String,
    pub controller: String,
    pub seed: u64,
    pub duration_s: f64,
    /// Node names; a capture gives node `i` the address 10.0.0.(i+1).
    pub nodes: Vec<String>,
    pub links: Vec<LinkMeta>,
    /// Every call: `[[calls]]`, then the streams of each conference ([`crate::calls`]).
    pub calls: Vec<CallMeta>,
    /// The scenario's conferences, as written.
    pub conferences: Vec<ConferenceMeta>,
    pub flows: Vec<FlowMeta>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkMeta {
    pub name: String,
    pub from: String,
    pub to: String,
    /// Propagation delay (without jitter), so metrics can line receptions up with the capacity
    /// that carried them.
    pub delay_us: i64,
    /// The format of the link's capacity trace, if it has one: its capacity then changes too
    /// often for phases to mean anything, and metrics treat the run as one phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_trace: Option<String>,
    /// Set for the transmit queues of a Wi-Fi node (`<bss>:<node>`, after the scenario's links):
    /// `from` is the node, `to` the BSS, `delay_us` 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wifi: Option<WifiQueueMeta>,
    /// Set for an LTE UE's buffers (`<cell>:<ue>:dl|ul`, after the BSSes' queues): `from` is
    /// the node that holds it (the eNB or the UE), `to` the other end, `delay_us` 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lte: Option<LteBufferMeta>,
}

/// Which cell, UE and direction an LTE buffer entry of `meta.links` belongs to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LteBufferMeta {
    pub cell: String,
    pub ue: String,
    /// `downlink` (the eNB's buffer) or `uplink` (the UE's).
    pub direction: String,
}

/// Which BSS and node a Wi-Fi queue entry of `meta.links` belongs to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WifiQueueMeta {
    pub bss: String,
    pub node: String,
    /// `ap` or `station`.
    pub role: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallMeta {
    pub id: u32,
    pub name: String,
    pub controller: String,
    pub sender: String,
    pub receiver: String,
    /// When the call starts (s).
    pub start_s: f64,
    /// Its video encoder's minimum rate (bit/s), as resolved with the defaults; `None` without
    /// video. The scorecard's starvation bound (RFC 8867 §5.6).
    pub video_min_bps: Option<u64>,
    /// Its video encoder's maximum rate (bit/s); `None` without video. What the call can use at
    /// most, so the fair share metrics compare it with (docs/metrics.md).
    pub video_max_bps: Option<u64>,
    /// The conference the call is a stream of; `None` for a `[[calls]]` entry.
    pub conference: Option<String>,
    /// `p2p` for a `[[calls]]` entry, else the conference's: `mesh`, `one-to-many` or `sfu`.
    pub topology: String,
    /// The TURN relay the call goes through, if any.
    pub via: Option<String>,
    /// `call` (a `[[calls]]` entry, a mesh or one-to-many stream), `publish` (a participant's
    /// stream up to an SFU: `receiver` is the SFU node) or `forward` (an SFU's downlink to one
    /// viewer: `sender` is the SFU node).
    pub role: String,
    /// For a forward leg: the id of the publish call whose media it carries.
    pub forwards: Option<u32>,
    /// The SFU node of an SFU conference's calls.
    pub sfu: Option<String>,
}

/// A `[[conferences]]` entry (`meta.conferences`); `None` where the topology has no such field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConferenceMeta {
    pub name: String,
    pub topology: String,
    pub participants: Vec<String>,
    pub source: Option<String>,
    pub sfu: Option<String>,
    pub via: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlowMeta {
    pub id: FlowId,
    pub name: String,
    pub kind: String,
    /// The call a media or RTCP flow belongs to; `None` for cross traffic.
    pub call: Option<u32>,
    pub path: Vec<String>,
    pub bottleneck: String,
    /// When the flow's source starts and stops (s) as the scenario says: the span its rates are
    /// averaged over (docs/metrics.md). A call's flows share the call's; the run's end if no stop.
    pub start_s: f64,
    pub stop_s: f64,
    /// What drives a flow that is not a call's: `bulk` or `on-off` TCP (and its ACKs),
    /// `constant` for CBR, `udp-background` for RFC 8867 §4.2's capacity mechanism. Metrics
    /// tell elastic competitors (bulk TCP) from fixed-rate traffic by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
}

/// A run's description ([`Meta`]) and the hops of its traffic, from the scenario alone.
#[derive(Clone, Debug)]
pub struct RunPlan {
    pub meta: Meta,
    /// Per call, in `meta.calls` order.
    pub calls: Vec<CallRoutes>,
    /// Per TCP connection: each `[[tcp]]` entry's `count` connections, in file order.
    pub tcp: Vec<TcpRoutes>,
    /// Per `[[cbr]]` entry.
    pub cbr: Vec<FlowRoute>,
    /// Per link whose capacity RFC 8867 §4.2's UDP background traffic makes: (link, flow).
    pub udp_background: Vec<(LinkId, FlowId)>,
    /// The cross traffic's connections and flows, in the order of `tcp` and `cbr`.
    pub cross: CrossPlan,
}

/// The two directions of a call and its flows' ids.
#[derive(Clone, Debug)]
pub struct CallRoutes {
    /// From the call's sender to its receiver (through its relay, if it has one).
    pub forward: Vec<Hop>,
    pub backward: Vec<Hop>,
    pub video: Option<FlowId>,
    pub audio: Option<FlowId>,
    /// The receiver's RTCP (backward) and the sender's (forward).
    pub rtcp_rx: FlowId,
    pub rtcp_tx: FlowId,
}

/// One TCP connection: its data and ACK flows, data from the entry's `from` to its `to`.
#[derive(Clone, Debug)]
pub struct TcpRoutes {
    pub forward: Vec<Hop>,
    pub backward: Vec<Hop>,
    pub data: FlowId,
    pub ack: FlowId,
}

/// A one-way flow and its hops.
#[derive(Clone, Debug)]
pub struct FlowRoute {
    pub hops: Vec<Hop>,
    pub flow: FlowId,
}

/// The span a source is active (s): from its start (0 if none) to its stop, or the run's end.
pub fn active_span(start: Option<Duration>, stop: Option<Duration>, end: Instant) -> (f64, f64) {
    let end_s = (end - Instant::ZERO).as_secs_f64();
    let start_s = start.unwrap_or(Duration::ZERO).as_secs_f64();
    (start_s, stop.map_or(end_s, |s| s.as_secs_f64().min(end_s)))
}

/// The nominal rate of each hop, to choose a path's bottleneck (docs/scenarios.md, "A path's
/// bottleneck"): a link's lowest capacity, and for a hop across a shared radio medium the lowest
/// rate the scenario allows that medium, the same for every hop of it and in every variant.
///
/// A BSS's airtime and a cell's PRBs in one direction are shared by every node on them, so what a
/// hop carries depends on the other nodes, not on its own rate alone: in 802.11 a station at a low
/// rate holds the medium longer per frame and drags every station down towards its rate (Heusse et
/// al., "Performance anomaly of 802.11b", INFOCOM 2003), and an LTE scheduler shares the PRBs among
/// the UEs that have data. The medium is therefore where flows crossing it compete, unless a wired
/// link on the path is narrower than the medium's lowest rate. Taking the hop's own rate instead
/// (the PHY rate of the variant's position, as before model revision 15) made a variant's choice
/// depend on where it put the station: seed000-5.3.x's calls had the 100 Mbit/s Ethernet as
/// bottleneck at location A (MCS 15, 130 Mbit/s) and the BSS at B (MCS 10, 39 Mbit/s), though
/// in both the AP's queue filled and the Ethernet's did not.
struct Rates {
    links: Vec<Bitrate>,
    /// Per BSS, the lowest PHY rate of [`crate::WifiSpec::allowed_rates`].
    bsses: Vec<Bitrate>,
    /// Per cell, downlink and uplink: the lowest whole-band rate at the nominal CQI of
    /// [`crate::LteSpec::allowed_channels`] (a fading channel at its mean SINR, not a draw of the
    /// run's seed).
    cells: Vec<[Bitrate; 2]>,
}

impl Rates {
    fn new(s: &Scenario, seed: u64, end: Instant, origin: &str) -> Result<Self, ScenarioError> {
        let spec = &s.spec;
        let links = spec
            .links
            .iter()
            .enumerate()
            .map(|(k, l)| {
                let trace = s.capacity_traces.get(k).and_then(Option::as_deref);
                link_config(l, trace, end).capacity.min_rate().unwrap_or(Bitrate::INFINITE)
            })
            .collect();
        let bsses = spec.wifi.iter().map(|w| w.allowed_rates().min().unwrap_or(Bitrate::INFINITE)).collect();
        let cells = spec
            .lte
            .iter()
            .map(|l| {
                // The cell's band, layers and MCS tables turn a CQI into a rate.
                let cell = Cell::<IpFrame>::new(cell_config(l), rng_for(seed, &cell_rng_path(&l.name)))
                    .map_err(|e| {
                        ScenarioError::new(origin, Some(format!("lte.{}", l.name)), e.to_string())
                    })?;
                Ok(LteDirection::BOTH.map(|d| {
                    let dir = match d {
                        LteDirection::Down => Direction::Downlink,
                        LteDirection::Up => Direction::Uplink,
                    };
                    let rates = l.allowed_channels(d).map(|c| cell.band_rate(dir, c.nominal_cqi()));
                    rates.min().unwrap_or(Bitrate::INFINITE)
                }))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { links, bsses, cells })
    }

    fn of(&self, hop: Hop) -> Bitrate {
        match hop {
            Hop::Link(l) => self.links[usize::from(l)],
            Hop::Wifi { bss, .. } => self.bsses[usize::from(bss)],
            Hop::Lte { cell, from, to } => {
                let (_, dir) = ue_and_direction(from, to);
                self.cells[usize::from(cell)][usize::from(dir == Direction::Uplink)]
            }
        }
    }
}

/// The path of a BSS's random stream for [`rtcbench_net::rng::rng_for`].
pub fn bss_rng_path(bss: &str) -> String {
    format!("wifi/{bss}")
}

/// The path of a cell's random stream for [`rtcbench_net::rng::rng_for`].
pub fn cell_rng_path(cell: &str) -> String {
    format!("lte/{cell}")
}

/// The UE a hop from `from` to `to` of a cell serves, and its direction: eNB → UE is the UE's
/// downlink.
pub fn ue_and_direction(from: LtePort, to: LtePort) -> (LtePort, Direction) {
    if from == LtePort::ENB {
        (to, Direction::Downlink)
    } else {
        (from, Direction::Uplink)
    }
}

/// TURN's ChannelData header (RFC 8656 §12.4: channel number and length, 4 bytes), which every
/// packet of a relayed call carries on both legs (from the client to the relay and from the
/// relay to the peer's client, with both peers relayed); over UDP it is not padded (§12.5).
pub const TURN_CHANNEL_DATA: DataSize = DataSize::bytes(4);

impl RunPlan {
    /// The run of `s` with `seed`, every call labelled with `controller` (a driver that controls
    /// one call otherwise renames it in `meta.calls`).
    pub fn new(s: &Scenario, controller: &str, seed: u64) -> Result<Self, ScenarioError> {
        let spec = &s.spec;
        let origin = format!("scenario {}", spec.id);
        let end = Instant::ZERO + *spec.duration.get();
        let rates = Rates::new(s, seed, end, &origin)?;

        let mut links: Vec<LinkMeta> = spec
            .links
            .iter()
            .map(|l| LinkMeta {
                name: l.name.clone(),
                from: l.from.clone(),
                to: l.to.clone(),
                delay_us: l.delay.as_ref().map_or(Duration::ZERO, |d| *d.get()).as_micros(),
                capacity_trace: l
                    .capacity_trace
                    .as_ref()
                    .and_then(|t| t.format)
                    .map(|f| f.name().to_string()),
                wifi: None,
                lte: None,
            })
            .collect();
        // The link id of each BSS's AP queue (port p's is that plus p), and of each cell's first
        // UE's downlink buffer (UE i's is that plus 2 (i − 1), its uplink's the next).
        let mut first_wifi_queue = Vec::with_capacity(spec.wifi.len());
        for w in &spec.wifi {
            first_wifi_queue.push(links.len());
            for (port, member) in w.members().enumerate() {
                links.push(LinkMeta {
                    name: w.queue_name(port as u16),
                    from: member.to_string(),
                    to: w.name.clone(),
                    delay_us: 0,
                    capacity_trace: None,
                    wifi: Some(WifiQueueMeta {
                        bss: w.name.clone(),
                        node: member.to_string(),
                        role: if port == 0 { "ap" } else { "station" }.to_string(),
                    }),
                    lte: None,
                });
            }
        }
        let mut first_lte_buffer = Vec::with_capacity(spec.lte.len());
        for l in &spec.lte {
            first_lte_buffer.push(links.len());
            for (k, ue) in l.ues.iter().enumerate() {
                for dir in LteDirection::BOTH {
                    let (from, to, direction) = match dir {
                        LteDirection::Down => (l.enb.clone(), ue.node.clone(), "downlink"),
                        LteDirection::Up => (ue.node.clone(), l.enb.clone(), "uplink"),
                    };
                    links.push(LinkMeta {
                        name: l.queue_name(k, dir),
                        from,
                        to,
                        delay_us: 0,
                        capacity_trace: None,
                        wifi: None,
                        lte: Some(LteBufferMeta {
                            cell: l.name.clone(),
                            ue: ue.node.clone(),
                            direction: direction.to_string(),
                        }),
                    });
                }
            }
        }
        let mut nodes: Vec<String> = Vec::new();
        let radio_nodes =
            spec.wifi.iter().flat_map(|w| w.members()).chain(spec.lte.iter().flat_map(|l| l.members()));
        for n in spec.links.iter().flat_map(|l| [l.from.as_str(), l.to.as_str()]).chain(radio_nodes) {
            if !nodes.iter().any(|m| m == n) {
                nodes.push(n.to_string());
            }
        }

        // The queues a hop's packets wait in: a link's, or the sending node's in a BSS (and the
        // AP's too when it relays between two stations), or the UE's buffer of that direction.
        let queues = |hop: Hop| -> Vec<usize> {
            match hop {
                Hop::Link(l) => vec![usize::from(l)],
                Hop::Wifi { bss, from, to } => {
                    let first = first_wifi_queue[usize::from(bss)];
                    let mut q = vec![first + usize::from(from.0)];
                    if from != Port::AP && to != Port::AP {
                        q.push(first);
                    }
                    q
                }
                Hop::Lte { cell, from, to } => {
                    let (ue, dir) = ue_and_direction(from, to);
                    let first = first_lte_buffer[usize::from(cell)];
                    vec![first + 2 * usize::from(ue.0 - 1) + usize::from(dir == Direction::Uplink)]
                }
            }
        };
        let names = |hops: &[Hop]| -> Vec<String> {
            hops.iter().flat_map(|&h| queues(h)).map(|q| links[q].name.clone()).collect()
        };
        // The narrowest hop by its nominal rate ([`Rates`]); a radio medium before a wired link
        // of the same rate (only a narrower wired link takes the competition away from it); the
        // first of equals.
        let bottleneck = |hops: &[Hop]| -> String {
            let narrowest = hops.iter().copied().min_by_key(|&h| (rates.of(h), matches!(h, Hop::Link(_))));
            narrowest.map(|h| links[queues(h)[0]].name.clone()).unwrap_or_default()
        };
        // Routes were checked when the scenario was loaded.
        let route = |from: &str, to: &str| -> Vec<Hop> {
            find_route(&spec.links, &spec.wifi, &spec.lte, from, to).expect("validated: a route")
        };

        let conferences: Vec<ConferenceMeta> = spec
            .conferences
            .iter()
            .enumerate()
            .map(|(i, c)| ConferenceMeta {
                name: c.name_or_default(i),
                topology: c.topology.name().to_string(),
                participants: c.participants.clone(),
                source: c.source.clone(),
                sfu: c.sfu.clone(),
                via: c.via.clone(),
            })
            .collect();
        let mut flows: Vec<FlowMeta> = Vec::new();
        let mut add_flow = |name: String,
                            kind: &str,
                            (call, workload): (Option<u32>, Option<&str>),
                            hops: &[Hop],
                            (start_s, stop_s): (f64, f64)|
         -> FlowId {
            let id = flows.len() as FlowId;
            flows.push(FlowMeta {
                id,
                name,
                kind: kind.to_string(),
                call,
                path: names(hops),
                bottleneck: bottleneck(hops),
                start_s,
                stop_s,
                workload: workload.map(str::to_string),
            });
            id
        };

        let mut calls = Vec::new();
        let mut call_routes = Vec::new();
        for (i, rc) in run_calls(spec).iter().enumerate() {
            let call = i as u32;
            let c = &rc.spec;
            // A relayed call goes to the relay and on from there.
            let path = |from: &str, to: &str| match &c.via {
                None => route(from, to),
                Some(via) => {
                    let mut p = route(from, via);
                    p.extend(route(via, to));
                    p
                }
            };
            let (forward, backward) = (path(&c.from, &c.to), path(&c.to, &c.from));
            let span = active_span(c.start, c.stop, end);
            let (mut video, mut audio, mut rtcp_rx, mut rtcp_tx) = (None, None, 0, 0);
            for (kind, suffix, fwd) in c.flows() {
                let hops = if fwd { &forward } else { &backward };
                let id = add_flow(format!("{}.{suffix}", rc.name), kind, (Some(call), None), hops, span);
                match suffix {
                    "video" => video = Some(id),
                    "audio" => audio = Some(id),
                    "rtcp-rx" => rtcp_rx = id,
                    _ => rtcp_tx = id,
                }
            }
            let video_rate = |limit: Bitrate| video.map(|_| limit.as_bps());
            let limit = |pick: fn(&crate::VideoSpec) -> Option<&crate::Param<Bitrate>>, default: Bitrate| {
                c.video.as_ref().and_then(pick).map_or(default, |m| *m.get())
            };
            calls.push(CallMeta {
                id: call,
                name: rc.name.clone(),
                controller: controller.to_string(),
                sender: c.from.clone(),
                receiver: c.to.clone(),
                start_s: c.start.unwrap_or(Duration::ZERO).as_secs_f64(),
                video_min_bps: video_rate(limit(|v| v.min.as_ref(), DEFAULT_VIDEO_MIN)),
                video_max_bps: video_rate(limit(|v| v.max.as_ref(), DEFAULT_VIDEO_MAX)),
                conference: rc.conference.map(|k| conferences[k].name.clone()),
                topology: rc.topology(spec).to_string(),
                via: c.via.clone(),
                role: rc.role.name().to_string(),
                forwards: rc.forwards,
                sfu: rc.sfu.clone(),
            });
            call_routes.push(CallRoutes { forward, backward, video, audio, rtcp_rx, rtcp_tx });
        }

        let mut tcp = Vec::new();
        for (i, t) in spec.tcp.iter().enumerate() {
            let (forward, backward) = (route(&t.from, &t.to), route(&t.to, &t.from));
            let workload = match t.workload {
                None | Some(WorkloadSpec::Bulk) => "bulk",
                Some(WorkloadSpec::Short { .. }) => "on-off",
            };
            let span = active_span(t.start, t.stop, end);
            for k in 0..t.count.unwrap_or(1) {
                let name = t.flow_name(i, k);
                let data = add_flow(name.clone(), "tcp", (None, Some(workload)), &forward, span);
                let ack = add_flow(format!("{name}.ack"), "tcp_ack", (None, Some(workload)), &backward, span);
                tcp.push(TcpRoutes { forward: forward.clone(), backward: backward.clone(), data, ack });
            }
        }
        let mut cbr = Vec::new();
        for (i, c) in spec.cbr.iter().enumerate() {
            let hops = route(&c.from, &c.to);
            let span = active_span(c.start, c.stop, end);
            let flow = add_flow(c.name_or_default(i), "cbr", (None, Some("constant")), &hops, span);
            cbr.push(FlowRoute { hops, flow });
        }
        let mut udp_background = Vec::new();
        for (k, l) in spec.links.iter().enumerate() {
            if udp_background_rate(l).is_none() {
                continue;
            }
            let hops = [Hop::Link(k as LinkId)];
            let name = format!("{}.udp-background", l.name);
            let span = active_span(None, None, end);
            let flow = add_flow(name, "cbr", (None, Some("udp-background")), &hops, span);
            udp_background.push((k as LinkId, flow));
        }

        let meta = Meta {
            scenario: spec.id.clone(),
            variant: s.variant.clone(),
            controller: controller.to_string(),
            seed,
            duration_s: end.as_secs_f64(),
            nodes,
            links,
            calls,
            conferences,
            flows,
        };
        let cross = CrossPlan::new(spec, end);
        Ok(Self { meta, calls: call_routes, tcp, cbr, udp_background, cross })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load;

    /// Each variant's name and the bottleneck of its calls' video flows, by flow name.
    fn bottlenecks(text: &str, seed: u64) -> Vec<(String, Vec<(String, String)>)> {
        let variants = load(text, "b.toml", &[]).unwrap_or_else(|e| panic!("{e}"));
        variants
            .iter()
            .map(|s| {
                let meta = RunPlan::new(s, "gcc", seed).unwrap_or_else(|e| panic!("{e}")).meta;
                let video = meta.flows.iter().filter(|f| f.kind == "video");
                (s.variant.clone(), video.map(|f| (f.name.clone(), f.bottleneck.clone())).collect())
            })
            .collect()
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    /// A wired node W behind an AP (`$wire` each way), a station S whose position is a set
    /// (near: HT MCS 15, 130 Mbit/s; far: MCS 10, 39 Mbit/s) and a call each way, the home
    /// network of seed000-5.3.x.
    const HOME: &str = r#"
id = "b"
duration = "10s"
[[links]]
name = "ap-w"
from = "AP"
to = "W"
capacity = "$wire"
queue = { size = "100ms" }
[[links]]
name = "w-ap"
from = "W"
to = "AP"
capacity = "$wire"
queue = { size = "100ms" }
[[wifi]]
name = "wlan"
ap = "AP"
positions = { near = { phy = { mcs = 15 } }, far = { phy = { mcs = 10 } } }
[[wifi.stations]]
node = "S"
position = ["near", "far"]
[[calls]]
name = "up"
from = "S"
to = "W"
[[calls]]
name = "down"
from = "W"
to = "S"
"#;

    fn home(wire: &str) -> String {
        HOME.replace("$wire", wire)
    }

    #[test]
    fn a_bss_is_the_bottleneck_at_every_position_unless_a_wire_is_below_its_lowest_rate() {
        // 100 Mbit/s is below the near position's 130 Mbit/s, not below the BSS's lowest
        // (39 Mbit/s far): the BSS at both positions, as its queues are where the calls compete.
        let radio = pairs(&[("up.video", "wlan:S"), ("down.video", "wlan:AP")]);
        let got = bottlenecks(&home("100Mbps"), 1);
        assert_eq!(
            got.iter().map(|(v, _)| v.as_str()).collect::<Vec<_>>(),
            ["position=near", "position=far"]
        );
        for (variant, got) in got {
            assert_eq!(got, radio, "{variant}");
        }
        // A wire narrower than every rate of the BSS is the bottleneck at both positions.
        let wired = pairs(&[("up.video", "ap-w"), ("down.video", "w-ap")]);
        for (variant, got) in bottlenecks(&home("38Mbps"), 1) {
            assert_eq!(got, wired, "{variant}");
        }
        // At the lowest rate itself (HT MCS 10, 20 MHz, long GI) the medium keeps it: only a
        // narrower wire takes it away.
        for (variant, got) in bottlenecks(&home("39Mbps"), 1) {
            assert_eq!(got, radio, "{variant}");
        }
    }

    #[test]
    fn a_bss_counts_at_the_rate_of_its_slowest_station() {
        // S alone at MCS 15 (130 Mbit/s) is faster than the 100 Mbit/s wire, which is then the
        // bottleneck.
        let fast = home("100Mbps")
            .replace("positions = { near = { phy = { mcs = 15 } }, far = { phy = { mcs = 10 } } }\n", "")
            .replace("position = [\"near\", \"far\"]", "phy = { mcs = 15 }");
        let wired = pairs(&[("up.video", "ap-w"), ("down.video", "w-ap")]);
        assert_eq!(bottlenecks(&fast, 1), [(String::new(), wired)]);
        // A second station at MCS 0 (6.5 Mbit/s) holds the airtime longer per frame and slows
        // every station towards its rate, so the BSS is the bottleneck of S's calls too.
        let slow = "[[wifi.stations]]\nnode = \"S2\"\nphy = { mcs = 0 }\n[[calls]]\nname = \"up\"";
        let with_slow = fast.replace("[[calls]]\nname = \"up\"", slow);
        let radio = pairs(&[("up.video", "wlan:S"), ("down.video", "wlan:AP")]);
        assert_eq!(bottlenecks(&with_slow, 1), [(String::new(), radio)]);
    }

    /// A wired node W behind an eNB (5 Mbit/s each way) and a UE with a call each way.
    const CELL: &str = r#"
id = "c"
duration = "10s"
[[links]]
name = "enb-w"
from = "ENB"
to = "W"
capacity = "5Mbps"
queue = { size = "100ms" }
[[links]]
name = "w-enb"
from = "W"
to = "ENB"
capacity = "5Mbps"
queue = { size = "100ms" }
[[lte]]
name = "cell"
enb = "ENB"
positions = { near = { dl_cqi = 15, ul_cqi = 15 }, edge = { dl_cqi = 15, ul_cqi = 3 } }
[[lte.ues]]
node = "U"
position = ["near", "edge"]
[[calls]]
name = "up"
from = "U"
to = "W"
[[calls]]
name = "down"
from = "W"
to = "U"
"#;

    #[test]
    fn a_cells_directions_are_two_media_each_at_its_lowest_rate() {
        // 5 MHz: CQI 15 carries 17.6 Mbit/s down and 18.3 up, CQI 3 1.8 Mbit/s up. The uplink's
        // lowest rate (the edge) is below the 5 Mbit/s wire at both positions, the downlink's is
        // not.
        let expected = pairs(&[("up.video", "cell:U:ul"), ("down.video", "w-enb")]);
        let got = bottlenecks(CELL, 1);
        assert_eq!(
            got.iter().map(|(v, _)| v.as_str()).collect::<Vec<_>>(),
            ["position=near", "position=edge"]
        );
        for (variant, got) in got {
            assert_eq!(got, expected, "{variant}");
        }
    }

    #[test]
    fn a_fading_channel_counts_at_its_mean_whatever_the_seed() {
        // A mean SINR of 7 dB gives CQI 5, 3.4 Mbit/s down and 3.5 up at 5 MHz, below the
        // 5 Mbit/s wire. Its Rayleigh fading at 120 km/h puts the first report anywhere from CQI 0
        // to 6.2 Mbit/s, as each seed draws it; the choice must not follow the draw.
        let fading =
            CELL.replace("position = [\"near\", \"edge\"]", "sinr_db = 7.0\nspeed_kmh = 120.0").replace(
                "positions = { near = { dl_cqi = 15, ul_cqi = 15 }, edge = { dl_cqi = 15, ul_cqi = 3 } }\n",
                "",
            );
        let expected = pairs(&[("up.video", "cell:U:ul"), ("down.video", "cell:U:dl")]);
        for seed in 0..32 {
            assert_eq!(bottlenecks(&fading, seed), [(String::new(), expected.clone())], "seed {seed}");
        }
    }
}
