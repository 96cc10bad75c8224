//! Cross traffic as every driver runs it: each `[[tcp]]` entry's `count` connections and each
//! `[[cbr]]` flow, with their names, ends, active spans, congestion control, application and
//! ports ([`CrossPlan`]). The simulator builds its TCP and CBR sources from it; an emulated run
//! starts kernel TCP and UDP agents from the same plan (`python/rtcbench/testbed/cross.py`, from
//! `_core.cross_plan`), so both read a scenario's cross traffic one way.

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};
use serde::{Deserialize, Serialize};

use crate::{ScenarioSpec, TcpCc, WorkloadSpec};

/// Bytes on the wire of a CBR packet unless the scenario says otherwise (as the media packets).
pub const DEFAULT_CBR_PACKET: DataSize = DataSize::bytes(1200);
/// TCP ports: sources count up from the first ephemeral port (RFC 6335 §6), sinks listen on
/// iperf's port.
pub const TCP_SOURCE_PORT: u16 = 49152;
pub const TCP_SINK_PORT: u16 = 5201;

/// The run's cross traffic, in the order flows are numbered (`meta.flows`): TCP connections in
/// file order, then CBR flows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CrossPlan {
    pub tcp: Vec<TcpFlowPlan>,
    pub cbr: Vec<CbrFlowPlan>,
}

/// One TCP connection, the `k`-th of `[[tcp]]` entry `entry`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TcpFlowPlan {
    /// `TcpSpec::flow_name`: the entry's `name` (or `tcp<i>`), with `.<k>` when `count` > 1.
    pub name: String,
    pub entry: usize,
    pub k: u32,
    pub from: String,
    pub to: String,
    /// When the connection opens and when it falls silent, after the run's start: `start`
    /// (default 0) and `stop` (default the end of the run; a stop after the end never comes).
    pub start_us: i64,
    pub stop_us: i64,
    pub cc: TcpCc,
    /// ECN-capable: classic ECN (RFC 3168) for NewReno and CUBIC, L4S (ECT(1) with AccECN) for
    /// Prague, which is always ECN-capable.
    pub ecn: bool,
    /// Delayed ACKs at the receiver.
    pub delayed_ack: bool,
    /// Linux's TCP Small Queues against the flow's first hop.
    pub small_queues: bool,
    /// The on/off application of a short flow; `None`: always backlogged.
    pub on_off: Option<OnOffPlan>,
    pub src_port: u16,
    pub dst_port: u16,
    /// The path of the connection's random streams (`rtcbench_net::rng::rng_for`): ids under
    /// `<path>/ids`, the on/off draws under `<path>/workload`.
    pub rng_path: String,
}

/// A short flow's application (RFC 8868 §5.1, RFC 8867 §5.7): bursts of `files` files of uniform
/// size in [`size_min_bytes`, `size_max_bytes`], then an exponential idle time of mean
/// `idle_mean_us`; the first burst at the start if `initially_on`, else after an idle time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OnOffPlan {
    pub size_min_bytes: u64,
    pub size_max_bytes: u64,
    pub files: u32,
    pub idle_mean_us: i64,
    pub initially_on: bool,
}

/// One constant-rate UDP flow, `[[cbr]]` entry `entry`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CbrFlowPlan {
    /// The entry's `name`, or `cbr<i>`.
    pub name: String,
    pub entry: usize,
    pub from: String,
    pub to: String,
    /// As a TCP connection's.
    pub start_us: i64,
    pub stop_us: i64,
    pub rate_bps: u64,
    pub packet_size_bytes: u64,
}

impl CrossPlan {
    /// The cross traffic of `spec`, for a run that ends at `end`.
    pub fn new(spec: &ScenarioSpec, end: Instant) -> Self {
        let span = |start: Option<Duration>, stop: Option<Duration>| {
            let start = start.unwrap_or(Duration::ZERO).as_micros();
            (start, stop.map_or((end - Instant::ZERO).as_micros(), Duration::as_micros))
        };
        let mut tcp = Vec::new();
        for (entry, t) in spec.tcp.iter().enumerate() {
            let group = t.group_name(entry);
            let (start_us, stop_us) = span(t.start, t.stop);
            for k in 0..t.count.unwrap_or(1) {
                let on_off = match &t.workload {
                    None | Some(WorkloadSpec::Bulk) => None,
                    Some(WorkloadSpec::Short { size_min, size_max, idle_mean, files, initially_on }) => {
                        Some(OnOffPlan {
                            size_min_bytes: size_min.as_bytes(),
                            size_max_bytes: size_max.as_bytes(),
                            files: files.unwrap_or(1),
                            idle_mean_us: idle_mean.as_micros(),
                            initially_on: k < initially_on.unwrap_or(0),
                        })
                    }
                };
                let cc = t.cc.as_ref().map_or(TcpCc::default(), |c| *c.get());
                tcp.push(TcpFlowPlan {
                    name: t.flow_name(entry, k),
                    entry,
                    k,
                    from: t.from.clone(),
                    to: t.to.clone(),
                    start_us,
                    stop_us,
                    cc,
                    ecn: cc == TcpCc::Prague || t.ecn.unwrap_or(false),
                    delayed_ack: t.delayed_ack.unwrap_or(true),
                    small_queues: t.small_queues.unwrap_or(false),
                    on_off,
                    src_port: TCP_SOURCE_PORT.wrapping_add(tcp.len() as u16),
                    dst_port: TCP_SINK_PORT,
                    rng_path: format!("tcp/{group}/{k}"),
                });
            }
        }
        let cbr = spec
            .cbr
            .iter()
            .enumerate()
            .map(|(entry, c)| {
                let (start_us, stop_us) = span(c.start, c.stop);
                CbrFlowPlan {
                    name: c.name_or_default(entry),
                    entry,
                    from: c.from.clone(),
                    to: c.to.clone(),
                    start_us,
                    stop_us,
                    rate_bps: c.rate.get().as_bps(),
                    packet_size_bytes: c.packet_size.unwrap_or(DEFAULT_CBR_PACKET).as_bytes(),
                }
            })
            .collect();
        Self { tcp, cbr }
    }
}

impl TcpFlowPlan {
    pub fn start(&self) -> Instant {
        Instant::from_micros(self.start_us)
    }
    pub fn stop(&self) -> Instant {
        Instant::from_micros(self.stop_us)
    }
}

impl CbrFlowPlan {
    pub fn start(&self) -> Instant {
        Instant::from_micros(self.start_us)
    }
    pub fn stop(&self) -> Instant {
        Instant::from_micros(self.stop_us)
    }
    pub fn rate(&self) -> Bitrate {
        Bitrate::bps(self.rate_bps)
    }
    pub fn packet_size(&self) -> DataSize {
        DataSize::bytes(self.packet_size_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CROSS: &str = r#"
id = "t"
duration = "10s"
[[links]]
name = "fwd"
from = "A"
to = "B"
capacity = "1Mbps"
queue = { size = "100ms" }
[[links]]
name = "bwd"
from = "B"
to = "A"
[[tcp]]
from = "A"
to = "B"
count = 2
start = "2s"
stop = "30s"
cc = "newreno"
workload = { kind = "short", size_min = "10KB", size_max = "20KB", idle_mean = "500ms", initially_on = 1 }
[[tcp]]
name = "bulk"
from = "B"
to = "A"
delayed_ack = false
[[cbr]]
from = "A"
to = "B"
rate = "200kbps"
stop = "5s"
"#;

    #[test]
    fn every_connection_and_flow_is_named_timed_and_numbered_as_the_simulator_builds_it() {
        let s = crate::load(CROSS, "test", &[]).unwrap().remove(0);
        let plan = CrossPlan::new(&s.spec, Instant::from_micros(10_000_000));
        let names: Vec<_> =
            plan.tcp.iter().map(|t| (t.name.as_str(), t.rng_path.as_str(), t.src_port)).collect();
        assert_eq!(
            names,
            [("tcp0.0", "tcp/tcp0/0", 49152), ("tcp0.1", "tcp/tcp0/1", 49153), ("bulk", "tcp/bulk/0", 49154)]
        );
        let (first, bulk) = (&plan.tcp[0], &plan.tcp[2]);
        // A stop after the end never comes; the simulator runs only to the end.
        assert_eq!((first.start_us, first.stop_us), (2_000_000, 30_000_000));
        assert_eq!((bulk.start_us, bulk.stop_us), (0, 10_000_000));
        assert_eq!((first.cc, bulk.cc), (TcpCc::Newreno, TcpCc::Cubic));
        assert_eq!((first.delayed_ack, bulk.delayed_ack), (true, false));
        let on_off = |t: &TcpFlowPlan| t.on_off.map(|o| o.initially_on);
        assert_eq!(plan.tcp.iter().map(on_off).collect::<Vec<_>>(), [Some(true), Some(false), None]);
        assert_eq!(first.on_off.unwrap().idle_mean_us, 500_000);
        let cbr = &plan.cbr[0];
        assert_eq!((cbr.name.as_str(), cbr.rate_bps, cbr.packet_size_bytes), ("cbr0", 200_000, 1200));
        assert_eq!((cbr.start_us, cbr.stop_us), (0, 5_000_000));
        assert!(!first.ecn && !bulk.ecn, "ECN is off unless asked for");
        // The plan crosses to Python and back as JSON.
        let json = serde_json::to_string(&plan).unwrap();
        assert_eq!(serde_json::from_str::<CrossPlan>(&json).unwrap(), plan);
    }

    /// Prague is ECN-capable whether `ecn` is given or not; NewReno and CUBIC only when asked.
    /// Turning it off for Prague is an error naming the field.
    #[test]
    fn prague_is_always_ecn_capable() {
        let tcp = |cc: &str, ecn: &str| {
            let text = CROSS.replace("cc = \"newreno\"", &format!("cc = \"{cc}\"\n{ecn}"));
            crate::load(&text, "test", &[])
        };
        let ecn_of = |cc: &str, ecn: &str| {
            let s = tcp(cc, ecn).unwrap().remove(0);
            let plan = CrossPlan::new(&s.spec, Instant::from_micros(10_000_000));
            (plan.tcp[0].cc, plan.tcp[0].ecn)
        };
        assert_eq!(ecn_of("prague", ""), (TcpCc::Prague, true));
        assert_eq!(ecn_of("prague", "ecn = true"), (TcpCc::Prague, true));
        assert_eq!(ecn_of("cubic", "ecn = true"), (TcpCc::Cubic, true));
        assert_eq!(ecn_of("newreno", ""), (TcpCc::Newreno, false));
        let err = tcp("prague", "ecn = false").unwrap_err().to_string();
        assert!(err.contains("tcp.0.ecn:") && err.contains("ECT(1)"), "{err}");
        assert!(!err.contains('\n'), "one line: {err}");
        let err = tcp("vegas", "").unwrap_err().to_string();
        assert!(err.contains("tcp") && err.contains("bbr") && !err.contains('\n'), "{err}");
    }

    /// BBR v1 ignores ECN: not ECN-capable by default, and `ecn = true` is an error naming the
    /// field, in one line.
    #[test]
    fn bbr_is_not_ecn_capable() {
        let text = CROSS.replace("cc = \"newreno\"", "cc = \"bbr\"");
        let s = crate::load(&text, "test", &[]).unwrap().remove(0);
        let plan = CrossPlan::new(&s.spec, Instant::from_micros(10_000_000));
        assert_eq!((plan.tcp[0].cc, plan.tcp[0].ecn), (TcpCc::Bbr, false));
        let text = CROSS.replace("cc = \"newreno\"", "cc = \"bbr\"\necn = true");
        let err = crate::load(&text, "test", &[]).unwrap_err().to_string();
        assert!(err.contains("tcp.0.ecn:") && err.contains("does not respond to ECN"), "{err}");
        assert!(!err.contains('\n'), "one line: {err}");
    }
}
