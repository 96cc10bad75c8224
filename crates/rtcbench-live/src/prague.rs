//! L4S's scalable cross traffic in emulation: `rtcbench-prague CONFIG.json` runs TCP Prague
//! flows between two namespaces over UDP, with the simulator's own sender and receiver
//! (`rtcbench-tcp`: Prague's window, AccECN's ACE counter, SACK recovery, pacing).
//!
//! The kernel here has no `tcp_prague` (it is L4STeam's out-of-tree module), so a scenario's
//! `cc = "prague"` cannot run as kernel TCP. Each datagram carries the bytes the state machine
//! wrote, a real TCP header (options included), then zero bytes for the payload; the IP header's
//! ECN field is the segment's (data ECT(1), ACKs Not-ECT), set per datagram, and the receiver
//! reads each datagram's field (IP_RECVTOS) into its AccECN counter. A data segment carries at
//! most [`SMSS`] bytes so that it is a 1500-byte IP packet, as the simulator's full segment is
//! (8 bytes of UDP header taken from the payload).
//!
//! One process per node and role, started by `rtcbench.testbed.cross` in the node's namespace,
//! speaking the cross-traffic agents' protocol (`python/rtcbench/testbed/_cross_agent.py`): it
//! says `ready`, waits for `go <t0>` on stdin, and logs the same JSON Lines records (`flow`,
//! `event`, `t` in seconds after time zero), line by line so that a killed agent loses at most a
//! line. A **source** runs each of its flows from `start_s` to `stop_s` (then falls silent, as
//! the simulator's) and writes `scheduling`, `start`, `connected` (`cc`: prague, `transport`:
//! udp), `stop` (`sent` payload bytes, `datagrams`) and `timing` (how late it took up its
//! senders' deadlines: the pacer's next segment and the retransmission timer). A **sink**
//! receives every flow that ends at its node on one socket, demultiplexed by the source's address
//! and port, and writes `accepted` (the flow's first datagram), `delivered` per interval (`t` is
//! the interval's start, `bytes` delivered in order), and at the end of the run `end`; it stays
//! [`SINK_LINGER`] longer, acknowledging but counting nothing. SIGINT and SIGTERM end either at
//! once with a complete log.
//!
//! Exit status: 0 after a clean stop, 2 for a configuration it cannot use, 1 for a failed call.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use rtcbench_tcp::wire::TcpRepr;
use rtcbench_tcp::{CongestionControl, ReceiverConfig, Segment, SenderConfig, TcpReceiver, TcpSender};
use rtcbench_units::{DataSize, Duration, Instant};
use rtcbench_wire::Ecn;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::process::{io_context, ready_then_go, Failure, RunClock};
use crate::stats::Lateness;
use crate::sys::{self, Poll, Signals, Timer};

/// Payload bytes of a full segment: IPv4 (20) + UDP (8) + TCP (20) + 1452 = 1500 bytes, the
/// simulator's full segment (whose 1460 bytes have no UDP header in front).
pub const SMSS: DataSize = DataSize::bytes(1452);
/// A sink stays this long after the end of the run, acknowledging but counting nothing (as the
/// kernel-TCP agent's sink does), so that no source sees its flow's last segments unanswered.
pub const SINK_LINGER: Duration = Duration::from_millis(250);
/// A sink's socket buffer: a late wake-up must not drop datagrams at the host.
const SINK_BUFFER_BYTES: usize = 8 << 20;
/// Above normal tasks, below the relay (2): as the other agents.
const FIFO_PRIORITY: i32 = 1;

const TOKEN_SIGNAL: u64 = 0;
const TOKEN_TIMER: u64 = 1;
/// Sockets are registered as `TOKEN_SOCKETS + i`.
const TOKEN_SOCKETS: u64 = 2;

/// Which end of its flows a process is.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Source,
    Sink,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    role: Role,
    /// This node's address: a sink listens on it.
    address: Ipv4Addr,
    log: PathBuf,
    flows: Vec<FlowConfig>,
    /// A sink counts until this instant (seconds after time zero).
    #[serde(default)]
    end_s: Option<f64>,
    /// A sink's counting interval, seconds.
    #[serde(default)]
    interval_s: Option<f64>,
    /// The port a sink listens on (every flow's destination port).
    #[serde(default)]
    port: Option<u16>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlowConfig {
    name: String,
    start_s: f64,
    stop_s: f64,
    src_address: Ipv4Addr,
    src_port: u16,
    dst_address: Ipv4Addr,
    dst_port: u16,
    /// Delayed ACKs at the sink (RFC 5681 §4.2, as the simulator's receiver).
    #[serde(default = "yes")]
    delayed_ack: bool,
}

fn yes() -> bool {
    true
}

impl FlowConfig {
    /// The sender both ends derive their state from: the simulator's Prague (L4S ECN, paced),
    /// with this flow's ports and [`SMSS`].
    fn sender(&self) -> SenderConfig {
        let mut cfg = SenderConfig::new(CongestionControl::Prague);
        cfg.src_port = self.src_port;
        cfg.dst_port = self.dst_port;
        cfg.smss = SMSS;
        cfg
    }

    fn receiver(&self) -> ReceiverConfig {
        let mut rx = ReceiverConfig::for_sender(&self.sender());
        if !self.delayed_ack {
            rx.delayed_ack = None;
        }
        rx
    }

    fn start(&self) -> Instant {
        instant(self.start_s)
    }

    fn stop(&self) -> Instant {
        instant(self.stop_s)
    }
}

fn instant(s: f64) -> Instant {
    Instant::ZERO + Duration::from_micros((s * 1e6).round() as i64)
}

fn seconds(t: Instant) -> f64 {
    (t - Instant::ZERO).as_micros() as f64 / 1e6
}

/// The agent's JSON Lines log, written a line at a time.
struct Log(File);

impl Log {
    fn write(&mut self, flow: Option<&str>, event: &str, t: f64, fields: Value) -> Result<(), Failure> {
        let mut record = Map::new();
        record.insert("flow".into(), json!(flow));
        record.insert("event".into(), json!(event));
        record.insert("t".into(), json!((t * 1e6).round() / 1e6));
        if let Value::Object(more) = fields {
            record.extend(more);
        }
        let mut line = serde_json::to_vec(&Value::Object(record)).expect("a JSON map serialises");
        line.push(b'\n');
        self.0.write_all(&line).map_err(io_context("writing the log"))
    }
}

/// `rtcbench-prague CONFIG.json`.
pub fn run(config_path: &Path) -> Result<(), Failure> {
    let text = std::fs::read_to_string(config_path)
        .map_err(|e| Failure::Config(format!("{}: cannot read: {e}", config_path.display())))?;
    let cfg: Config = serde_json::from_str(&text)
        .map_err(|e| Failure::Config(format!("{}: {e}", config_path.display())))?;
    check(&cfg).map_err(|msg| Failure::Config(format!("{}: {msg}", config_path.display())))?;
    let file = File::create(&cfg.log).map_err(io_context(format!("creating {}", cfg.log.display())))?;
    let mut log = Log(file);
    sys::terminate_with_parent().map_err(io_context("PR_SET_PDEATHSIG"))?;
    let signals = Signals::new().map_err(io_context("signalfd"))?;
    let timer = Timer::new().map_err(io_context("timerfd"))?;
    let poll = Poll::new().map_err(io_context("epoll"))?;
    poll.add(signals.as_raw_fd(), TOKEN_SIGNAL).map_err(io_context("epoll"))?;
    poll.add(timer.as_raw_fd(), TOKEN_TIMER).map_err(io_context("epoll"))?;
    let scheduling = if sys::set_fifo_scheduling(FIFO_PRIORITY).is_ok() { "fifo" } else { "normal" };
    let _ = sys::set_minimal_timer_slack();
    log.write(None, "scheduling", 0.0, json!({"policy": scheduling}))?;
    let io = Io { poll, timer };
    match cfg.role {
        Role::Source => {
            let mut source = Source::open(&cfg.flows)?;
            for (i, flow) in source.flows.iter().enumerate() {
                io.poll
                    .add(flow.socket.as_raw_fd(), TOKEN_SOCKETS + i as u64)
                    .map_err(io_context("epoll"))?;
            }
            let Some(clock) = ready_then_go()? else { return Ok(()) };
            source.run(clock, &io, &mut log)
        }
        Role::Sink => {
            let (end_s, interval_s, port) =
                (cfg.end_s.unwrap_or(0.0), cfg.interval_s.unwrap_or(0.1), cfg.port);
            let mut sink =
                Sink::open(cfg.address, port.unwrap_or(0), &cfg.flows, instant(end_s), interval_s)?;
            io.poll.add(sink.socket.as_raw_fd(), TOKEN_SOCKETS).map_err(io_context("epoll"))?;
            let Some(clock) = ready_then_go()? else { return Ok(()) };
            sink.run(clock, &io, &mut log)
        }
    }
}

/// What a configuration must say beyond its types: one line naming the field.
fn check(cfg: &Config) -> Result<(), String> {
    if cfg.flows.is_empty() {
        return Err("flows: no flow to run".into());
    }
    for (i, f) in cfg.flows.iter().enumerate() {
        if !(f.start_s >= 0.0 && f.start_s < f.stop_s && f.stop_s.is_finite()) {
            return Err(format!(
                "flows[{i}] ({}): runs from {} s to {} s; it must start at 0 s or later and stop after it starts",
                f.name, f.start_s, f.stop_s
            ));
        }
    }
    if cfg.role == Role::Sink {
        match (cfg.end_s, cfg.interval_s, cfg.port) {
            (Some(end), Some(interval), Some(_)) if end > 0.0 && interval > 0.0 => {}
            _ => return Err("a sink needs end_s > 0, interval_s > 0 and port".into()),
        }
    }
    Ok(())
}

/// The descriptors every role waits on.
struct Io {
    poll: Poll,
    timer: Timer,
}

impl Io {
    /// Sleeps until `deadline` or a socket or signal is ready; whether a signal asked to stop.
    fn wait(&self, clock: RunClock, deadline: Instant, ready: &mut Vec<u64>) -> Result<bool, Failure> {
        self.timer.arm(Some(clock.monotonic_ns(deadline))).map_err(io_context("timerfd"))?;
        self.poll.wait(std::time::Duration::from_secs(1), ready).map_err(io_context("epoll_wait"))?;
        let mut stop = false;
        for &token in ready.iter() {
            match token {
                TOKEN_SIGNAL => stop = true,
                TOKEN_TIMER => self.timer.clear(),
                _ => {}
            }
        }
        Ok(stop)
    }
}

/// Sends `seg` on `socket` (to `to` if the socket is not connected): its header bytes, zero
/// bytes for its payload, with its ECN field. A full socket buffer or a peer not listening
/// drops the datagram, as a host would; other errors fail the agent.
fn send_segment(
    socket: &UdpSocket,
    to: Option<SocketAddrV4>,
    tos: &mut u8,
    seg: &Segment,
    buf: &mut Vec<u8>,
) -> Result<bool, Failure> {
    buf.clear();
    buf.extend_from_slice(&seg.header);
    buf.resize(seg.header.len() + seg.payload.as_bytes() as usize, 0);
    if seg.ecn.bits() != *tos {
        sys::set_ip_tos(socket, seg.ecn.bits()).map_err(io_context("IP_TOS"))?;
        *tos = seg.ecn.bits();
    }
    let sent = match to {
        Some(to) => socket.send_to(buf, to),
        None => socket.send(buf),
    };
    match sent {
        Ok(_) => Ok(true),
        Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::ConnectionRefused) => {
            Ok(false)
        }
        Err(e) => Err(Failure::Io("sending".into(), e)),
    }
}

/// A TCP header at the front of `datagram` and the payload bytes after it; `None` for anything
/// that is not one (never a panic on what arrives).
fn parse_segment(datagram: &[u8]) -> Option<(TcpRepr, DataSize)> {
    let header = TcpRepr::parse(datagram).ok()?;
    let len = 4 * usize::from(datagram.get(12)? >> 4);
    Some((header, DataSize::bytes(datagram.len().checked_sub(len)? as u64)))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Waiting,
    Running,
    Stopped,
}

struct SourceFlow {
    cfg: FlowConfig,
    socket: UdpSocket,
    sender: TcpSender,
    phase: Phase,
    tos: u8,
    datagrams: u64,
    send_errors: u64,
}

struct Source {
    flows: Vec<SourceFlow>,
}

impl Source {
    fn open(flows: &[FlowConfig]) -> Result<Self, Failure> {
        let mut out = Vec::with_capacity(flows.len());
        for f in flows {
            let local = SocketAddrV4::new(f.src_address, f.src_port);
            let peer = SocketAddrV4::new(f.dst_address, f.dst_port);
            let socket =
                UdpSocket::bind(local).map_err(io_context(format!("{}: binding {local}", f.name)))?;
            socket.connect(peer).map_err(io_context(format!("{}: connecting to {peer}", f.name)))?;
            socket.set_nonblocking(true).map_err(io_context("socket"))?;
            sys::enable_receive_tos(&socket).map_err(io_context("IP_RECVTOS"))?;
            out.push(SourceFlow {
                cfg: f.clone(),
                socket,
                sender: TcpSender::new(f.sender()),
                phase: Phase::Waiting,
                tos: 0,
                datagrams: 0,
                send_errors: 0,
            });
        }
        Ok(Self { flows: out })
    }

    fn deadline(&self) -> Option<Instant> {
        self.flows
            .iter()
            .filter_map(|f| match f.phase {
                Phase::Waiting => Some(f.cfg.start()),
                Phase::Running => Some(f.sender.poll_timeout().map_or(f.cfg.stop(), |t| t.min(f.cfg.stop()))),
                Phase::Stopped => None,
            })
            .min()
    }

    fn run(&mut self, clock: RunClock, io: &Io, log: &mut Log) -> Result<(), Failure> {
        let mut ready = Vec::new();
        let mut buf = vec![0u8; 65_536];
        let mut out = Vec::with_capacity(2048);
        let mut lateness = Lateness::default();
        let mut stopped = false;
        while let Some(deadline) = self.deadline() {
            if io.wait(clock, deadline, &mut ready)? {
                stopped = true;
                break;
            }
            for flow in &mut self.flows {
                // ACKs, while the flow runs; after its stop it is silent and reads nothing.
                while let Some((n, _, _)) =
                    sys::receive_from_with_tos(&flow.socket, &mut buf).or_else(refused_is_none)?
                {
                    if flow.phase != Phase::Running {
                        continue;
                    }
                    if let Some((header, _)) = parse_segment(&buf[..n]) {
                        flow.sender.on_ack(clock.now(), &header);
                        while flow.sender.poll_event().is_some() {}
                    }
                }
            }
            let now = clock.now();
            for flow in &mut self.flows {
                if flow.phase == Phase::Waiting && now >= flow.cfg.start() {
                    lateness.record(crate::sys::monotonic_ns() - clock.monotonic_ns(flow.cfg.start()));
                    flow.phase = Phase::Running;
                    log.write(Some(&flow.cfg.name), "start", seconds(now), json!({}))?;
                    log.write(
                        Some(&flow.cfg.name),
                        "connected",
                        seconds(now),
                        json!({"cc": "prague", "transport": "udp"}),
                    )?;
                }
                if flow.phase != Phase::Running {
                    continue;
                }
                if now >= flow.cfg.stop() {
                    flow.stop(now, log)?;
                    continue;
                }
                if let Some(due) = flow.sender.poll_timeout().filter(|&t| t <= now) {
                    lateness.record(crate::sys::monotonic_ns() - clock.monotonic_ns(due));
                    flow.sender.on_timeout(now);
                }
                while let Some(seg) = flow.sender.poll_transmit(now) {
                    if send_segment(&flow.socket, None, &mut flow.tos, &seg, &mut out)? {
                        flow.datagrams += 1;
                    } else {
                        flow.send_errors += 1;
                    }
                }
            }
        }
        let now = clock.now();
        if stopped {
            for flow in self.flows.iter_mut().filter(|f| f.phase == Phase::Running) {
                flow.stop(now, log)?;
            }
        }
        log.write(None, "timing", seconds(now), json!({"deadlines": lateness.deadlines()}))
    }
}

impl SourceFlow {
    fn stop(&mut self, now: Instant, log: &mut Log) -> Result<(), Failure> {
        self.phase = Phase::Stopped;
        let m = self.sender.metrics();
        log.write(
            Some(&self.cfg.name),
            "stop",
            seconds(now),
            json!({
                "sent": m.bytes_sent.as_bytes(), "datagrams": self.datagrams, "send_errors": self.send_errors,
                "retransmits": m.retransmits, "ce_marked": m.ce_marked, "ecn_reductions": m.ecn_reductions,
            }),
        )
    }
}

/// An ICMP port unreachable for an earlier datagram (the peer not listening yet, or any more)
/// reads as nothing waiting.
fn refused_is_none<T>(e: io::Error) -> Result<Option<T>, Failure> {
    if e.kind() == io::ErrorKind::ConnectionRefused {
        Ok(None)
    } else {
        Err(Failure::Io("receiving".into(), e))
    }
}

/// What a sink has of one flow: the receiver, and what it delivered in the current interval
/// and in all.
struct SinkFlow {
    name: String,
    receiver: TcpReceiver,
    accepted: bool,
    tos: u8,
    bin: Option<i64>,
    bin_bytes: u64,
    bytes: u64,
    first: Option<Instant>,
    last: Option<Instant>,
}

struct Sink {
    socket: UdpSocket,
    flows: Vec<SinkFlow>,
    by_peer: HashMap<SocketAddrV4, usize>,
    end: Instant,
    interval: Duration,
    finished: bool,
}

impl Sink {
    fn open(
        address: Ipv4Addr,
        port: u16,
        flows: &[FlowConfig],
        end: Instant,
        interval_s: f64,
    ) -> Result<Self, Failure> {
        let local = SocketAddrV4::new(address, port);
        let socket = UdpSocket::bind(local).map_err(io_context(format!("binding {local}")))?;
        socket.set_nonblocking(true).map_err(io_context("socket"))?;
        sys::enable_receive_tos(&socket).map_err(io_context("IP_RECVTOS"))?;
        sys::force_receive_buffer(&socket, SINK_BUFFER_BYTES).map_err(io_context("SO_RCVBUFFORCE"))?;
        let by_peer = flows
            .iter()
            .enumerate()
            .map(|(i, f)| (SocketAddrV4::new(f.src_address, f.src_port), i))
            .collect();
        let flows = flows
            .iter()
            .map(|f| SinkFlow {
                name: f.name.clone(),
                receiver: TcpReceiver::new(f.receiver()),
                accepted: false,
                tos: 0,
                bin: None,
                bin_bytes: 0,
                bytes: 0,
                first: None,
                last: None,
            })
            .collect();
        let interval = Duration::from_micros((interval_s * 1e6).round().max(1.0) as i64);
        Ok(Self { socket, flows, by_peer, end, interval, finished: false })
    }

    fn run(&mut self, clock: RunClock, io: &Io, log: &mut Log) -> Result<(), Failure> {
        let mut ready = Vec::new();
        let mut buf = vec![0u8; 65_536];
        let mut out = Vec::with_capacity(2048);
        let mut unknown: Vec<SocketAddrV4> = Vec::new();
        let linger_end = self.end + SINK_LINGER;
        loop {
            let now = clock.now();
            if now >= self.end && !self.finished {
                self.finish(self.end, log)?;
            }
            if now >= linger_end {
                break;
            }
            let deadline = self
                .flows
                .iter()
                .filter_map(|f| f.receiver.poll_timeout())
                .chain([if self.finished { linger_end } else { self.end }])
                .min()
                .unwrap_or(linger_end);
            if io.wait(clock, deadline, &mut ready)? {
                break;
            }
            while let Some((n, tos, from)) =
                sys::receive_from_with_tos(&self.socket, &mut buf).or_else(refused_is_none)?
            {
                let now = clock.now();
                let Some(from) = from else { continue };
                let Some(&i) = self.by_peer.get(&from) else {
                    if !unknown.contains(&from) {
                        unknown.push(from);
                        log.write(None, "unknown", seconds(now), json!({"peer": from.to_string()}))?;
                    }
                    continue;
                };
                let Some((header, payload)) = parse_segment(&buf[..n]) else { continue };
                let flow = &mut self.flows[i];
                if !flow.accepted {
                    flow.accepted = true;
                    log.write(Some(&flow.name), "accepted", seconds(now), json!({}))?;
                }
                let before = flow.receiver.metrics().bytes_delivered;
                flow.receiver.on_segment(now, &header, payload, Ecn::from_bits(tos));
                let delivered = flow.receiver.metrics().bytes_delivered.saturating_sub(before);
                if !self.finished {
                    flow.count(now, delivered.as_bytes(), self.interval, log)?;
                }
                while let Some(seg) = flow.receiver.poll_transmit(now) {
                    send_segment(&self.socket, Some(from), &mut flow.tos, &seg, &mut out)?;
                }
            }
            let now = clock.now();
            for (peer, &i) in &self.by_peer {
                let flow = &mut self.flows[i];
                if flow.receiver.poll_timeout().is_some_and(|t| t <= now) {
                    flow.receiver.on_timeout(now);
                    while let Some(seg) = flow.receiver.poll_transmit(now) {
                        send_segment(&self.socket, Some(*peer), &mut flow.tos, &seg, &mut out)?;
                    }
                }
            }
        }
        if !self.finished {
            self.finish(clock.now().min(self.end), log)?;
        }
        Ok(())
    }

    /// Each flow's last interval and its totals, once.
    fn finish(&mut self, at: Instant, log: &mut Log) -> Result<(), Failure> {
        self.finished = true;
        for flow in &mut self.flows {
            flow.flush(self.interval, log)?;
            log.write(
                Some(&flow.name),
                "end",
                seconds(at),
                json!({
                    "bytes": flow.bytes,
                    "first": flow.first.map(seconds),
                    "last": flow.last.map(seconds),
                    "ce_received": flow.receiver.metrics().ce_received,
                }),
            )?;
        }
        Ok(())
    }
}

impl SinkFlow {
    /// `bytes` delivered in order at `now`, counted in `now`'s interval.
    fn count(&mut self, now: Instant, bytes: u64, interval: Duration, log: &mut Log) -> Result<(), Failure> {
        if bytes == 0 {
            return Ok(());
        }
        let k = (now - Instant::ZERO).as_micros() / interval.as_micros();
        if self.bin != Some(k) {
            self.flush(interval, log)?;
            self.bin = Some(k);
        }
        self.bin_bytes += bytes;
        self.bytes += bytes;
        self.first.get_or_insert(now);
        self.last = Some(now);
        Ok(())
    }

    fn flush(&mut self, interval: Duration, log: &mut Log) -> Result<(), Failure> {
        if let (Some(k), true) = (self.bin, self.bin_bytes > 0) {
            let start = seconds(Instant::ZERO + Duration::from_micros(k * interval.as_micros()));
            log.write(Some(&self.name), "delivered", start, json!({"bytes": self.bin_bytes}))?;
        }
        self.bin_bytes = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_segment_is_a_1500_byte_ip_packet() {
        let flow = FlowConfig {
            name: "p".into(),
            start_s: 0.0,
            stop_s: 1.0,
            src_address: Ipv4Addr::LOCALHOST,
            src_port: 49152,
            dst_address: Ipv4Addr::LOCALHOST,
            dst_port: 5201,
            delayed_ack: true,
        };
        let mut sender = TcpSender::new(flow.sender());
        let seg = sender.poll_transmit(Instant::ZERO).expect("the initial window sends");
        assert_eq!(seg.payload, SMSS);
        assert_eq!(seg.ecn, Ecn::Ect1);
        // IPv4 + UDP + the datagram.
        assert_eq!(20 + 8 + seg.header.len() as u64 + seg.payload.as_bytes(), 1500);
        let (header, payload) = parse_segment(&{
            let mut b = seg.header.clone();
            b.resize(seg.header.len() + SMSS.as_bytes() as usize, 0);
            b
        })
        .expect("our own segment parses");
        assert_eq!(payload, SMSS);
        assert_eq!(header.src_port, 49152);
    }

    #[test]
    fn what_is_not_a_segment_is_ignored() {
        assert!(parse_segment(&[]).is_none());
        assert!(parse_segment(&[0u8; 12]).is_none());
        // A data offset beyond the datagram.
        let mut b = [0u8; 20];
        b[12] = 0xF0;
        assert!(parse_segment(&b).is_none());
    }
}
