//! `rtcbench-relay CONFIG.json`: the emulation relay (docs/emulation.md, "The relay").
//!
//! Started by `rtcbench.testbed.relay` in a testbed's net namespace. It opens a packet socket on
//! every veth end there, says `ready` on stdout, waits for `go <t0>` on stdin (t0: the run's time
//! zero on CLOCK_MONOTONIC, in nanoseconds), then carries every IPv4 packet between hosts
//! through the scenario's links until SIGINT, SIGTERM, `stop` or the end of stdin. It writes its
//! report (`relay.json`: timing error, counts), its drop log (`relay-drops.csv`) and, if asked,
//! captures (`relay-in.pcap`, `relay-out.pcap`) into the configuration's `out_dir`.
//!
//! Exit status: 0 after a clean stop, 2 for a configuration it cannot use (one line on stderr
//! saying why), 1 for a system call that failed.

use std::fs::{self, File};
use std::io::{self, BufRead, BufWriter, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::thread::JoinHandle;

use rtcbench_live::config::{RelayConfig, MAX_UDP_HEAD};
use rtcbench_live::process::{self, io_context, write_atomically, Failure, RunClock};
use rtcbench_live::relay::{
    BackgroundEvent, Dropped, ElementTiming, LinkSample, RadioColumns, Refused, Relay,
};
use rtcbench_live::stats::{Lateness, LatenessSummary};
use rtcbench_live::sys::{self, PacketSocket, Poll, Signals, Timer};
use rtcbench_net::queue::DualPi2Sample;
use rtcbench_units::Instant;
use rtcbench_wire::ip::FiveTuple;
use rtcbench_wire::pcap::PcapWriter;
use serde::Serialize;

/// What the relay promises (issue 13): departures within 200 µs of their time at p99, and every
/// element's events (a radio's transmission starts among them) run within 200 µs of theirs.
const LATENESS_GOAL_US: f64 = 200.0;
/// Above the agents' priority (1), so a busy sender never delays a departure.
const FIFO_PRIORITY: i32 = 2;
/// Each packet socket's receive buffer, and its send buffer.
const SOCKET_BUFFER: usize = 4 << 20;
/// Records waiting for the writer thread; beyond, captures lose records (counted), never the
/// relay its timing.
const RECORD_BACKLOG: usize = 1 << 16;
/// Frames read from one socket before the frames due leave: bounds how long a burst holds them.
const READ_CHUNK: usize = 8;
/// Frames longer than this many bytes cannot have come from a host with offloads off.
const MTU: usize = 1500;

const TOKEN_SIGNAL: u64 = u64::MAX;
const TOKEN_STDIN: u64 = u64::MAX - 1;
const TOKEN_TIMER: u64 = u64::MAX - 2;

fn main() -> ExitCode {
    process::main_with("rtcbench-relay", run)
}

/// Bytes of a frame the packet log keeps when there is no capture: IPv4 and UDP headers with
/// options (at most 68 B), and the UDP payload's first `MAX_UDP_HEAD` (`RelayConfig::udp_head`).
const HEAD_BYTES: usize = 60 + 8 + MAX_UDP_HEAD;

/// One thing for the writer thread. A frame's bytes are all of it when the relay captures, else
/// its first `HEAD_BYTES`. A link sample is boxed: with its radio and DualPI2 columns it is several
/// times the size of a frame's record, and comes only every 10 ms per link.
enum Record {
    In { id: u64, at: Instant, iface: usize, bytes: Vec<u8> },
    Out { id: u64, at: Instant, bytes: Vec<u8> },
    Drop(Dropped),
    Background(BackgroundEvent),
    Sample(Box<LinkSample>),
}

#[derive(Serialize)]
struct Report {
    scenario: String,
    seed: u64,
    /// "fifo" when the relay ran real-time, "other" when the system refused (then its timing
    /// cannot be trusted on a loaded machine).
    scheduling: &'static str,
    memory_locked: bool,
    /// The CPU the forwarding thread was kept on (the configuration's, if this process may use it
    /// and another CPU besides), its other threads off it.
    cpu: Option<usize>,
    lateness: LatenessSummary,
    /// Whether the p99 timing error of the departures and of every element's events met the
    /// 200 µs goal.
    keeping_up: bool,
    lateness_goal_us: f64,
    /// Per element (links, BSSes, cells), how late its events ran against their instants.
    elements: Vec<ElementTiming>,
    wall_s: f64,
    /// CPU time of the whole relay and of its forwarding thread alone (the writer's is the
    /// rest), from `go` to the end, in seconds.
    cpu_s: f64,
    forwarding_cpu_s: f64,
    /// The last instant of the scenario the relay processed (µs from time zero): links and
    /// background traffic ran up to here.
    processed_until_us: i64,
    frames_in: u64,
    frames_out: u64,
    refused: Refused,
    /// Longer than the MTU: a host with segmentation offload on.
    oversize: u64,
    /// Arrived with a kernel timestamp the relay had already passed.
    late_arrivals: u64,
    /// Frames the kernel dropped at a full socket buffer, per interface.
    socket_drops: Vec<u32>,
    /// Departures that found their interface's send buffer full (frames the host had not yet
    /// consumed fill it) and waited for room, per interface, and the longest and total waits:
    /// the forwarding stops while one waits, so these explain a run's worst lateness.
    send_waits: Vec<u64>,
    send_wait_max_ms: f64,
    send_wait_total_s: f64,
    /// Capture or drop-log records lost because the writer fell behind.
    records_lost: u64,
    links: Vec<rtcbench_live::relay::LinkCounts>,
}

fn run(config_path: &Path) -> Result<(), Failure> {
    let text = fs::read_to_string(config_path)
        .map_err(|e| Failure::Config(format!("{}: cannot read: {e}", config_path.display())))?;
    let cfg: RelayConfig = serde_json::from_str(&text)
        .map_err(|e| Failure::Config(format!("{}: {e}", config_path.display())))?;
    if cfg.udp_head > MAX_UDP_HEAD {
        return Err(Failure::Config(format!(
            "{}: udp_head is {} bytes; at most {MAX_UDP_HEAD}",
            config_path.display(),
            cfg.udp_head
        )));
    }
    let mut relay =
        Relay::new(&cfg).map_err(|e| Failure::Config(format!("{}: {e}", config_path.display())))?;
    let mut sockets = Vec::new();
    for i in &cfg.interfaces {
        let mac = i.mac().map_err(Failure::Config)?;
        sockets.push(
            PacketSocket::open(&i.name, mac, SOCKET_BUFFER)
                .map_err(io_context(format!("interface {}", i.name)))?,
        );
    }
    sys::terminate_with_parent().map_err(io_context("PR_SET_PDEATHSIG"))?;
    let signals = Signals::new().map_err(io_context("signalfd"))?;
    let timer = Timer::new().map_err(io_context("timerfd"))?;
    let poll = Poll::new().map_err(io_context("epoll"))?;
    // Before `go` the relay waits on its signals and stdin alone: a frame that reaches a socket
    // then (a host's first packets while its browser starts) would keep a set with the sockets
    // readable, and the wait a busy loop at real-time priority on the forwarding CPU, which
    // starved a relay already running there for as long (18-25 s of a Firefox start-up).
    let idle = Poll::new().map_err(io_context("epoll"))?;
    idle.add(signals.as_raw_fd(), TOKEN_SIGNAL).map_err(io_context("epoll"))?;
    idle.add(io::stdin().as_raw_fd(), TOKEN_STDIN).map_err(io_context("epoll"))?;
    poll.add(signals.as_raw_fd(), TOKEN_SIGNAL).map_err(io_context("epoll"))?;
    poll.add(timer.as_raw_fd(), TOKEN_TIMER).map_err(io_context("epoll"))?;
    poll.add(io::stdin().as_raw_fd(), TOKEN_STDIN).map_err(io_context("epoll"))?;
    for (k, s) in sockets.iter().enumerate() {
        poll.add(s.as_raw_fd(), k as u64).map_err(io_context("epoll"))?;
    }

    // The writer thread starts before the relay turns real-time, so it stays at normal priority,
    // and off the forwarding thread's CPU.
    let cpus = sys::affinity().map_err(io_context("sched_getaffinity"))?;
    let forwarding_cpu = cfg.cpu.filter(|cpu| cpus.len() > 1 && cpus.contains(cpu));
    if let Some(cpu) = forwarding_cpu {
        let others: Vec<usize> = cpus.iter().copied().filter(|&c| c != cpu).collect();
        sys::set_affinity(&others).map_err(io_context("sched_setaffinity"))?;
    }
    let (records, writer) = start_writer(&cfg)?;
    if let Some(cpu) = forwarding_cpu {
        sys::set_affinity(&[cpu]).map_err(io_context("sched_setaffinity"))?;
    }
    let scheduling = if sys::set_fifo_scheduling(FIFO_PRIORITY).is_ok() { "fifo" } else { "other" };
    let _ = sys::set_minimal_timer_slack();
    let memory_locked = sys::lock_memory().is_ok();

    println!("ready");
    io::stdout().flush().map_err(io_context("stdout"))?;
    let Some(t0) = wait_for_go(&idle)? else {
        drop(records);
        finish_writer(writer)?;
        return Ok(());
    };
    let started = std::time::Instant::now();
    let cpu_at_go =
        (sys::clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID), sys::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID));
    let mut lateness = Lateness::default();
    let (mut frames_in, mut frames_out, mut oversize, mut records_lost) = (0u64, 0u64, 0u64, 0u64);
    let send = |r: Record, lost: &mut u64| {
        if let Err(TrySendError::Full(_)) = records.try_send(r) {
            *lost += 1;
        }
    };
    if cfg.trace {
        relay.sample_links();
    }
    let keep = |bytes: &[u8]| {
        if cfg.capture {
            bytes.to_vec()
        } else {
            bytes[..bytes.len().min(HEAD_BYTES)].to_vec()
        }
    };
    let logging = cfg.capture || cfg.trace;
    let clock = RunClock { t0_ns: t0 };
    let (to_instant, to_ns) = (|ns| clock.instant(ns), |t| clock.monotonic_ns(t));
    let spin_ns = i128::from(cfg.spin.as_micros()) * 1000;

    let mut ready = Vec::new();
    let mut buf = vec![0u8; 65_536];
    let mut batch: Vec<(i128, usize, Vec<u8>)> = Vec::new();
    let mut wait = std::time::Duration::from_secs(1);
    let (mut send_waits, mut send_wait_max_ns, mut send_wait_total_ns) =
        (vec![0u64; sockets.len()], 0u64, 0u128);
    'run: loop {
        poll.wait(wait, &mut ready).map_err(io_context("epoll_wait"))?;
        relay.set_clock(to_instant(sys::monotonic_ns()));
        for &token in &ready {
            match token {
                TOKEN_SIGNAL => break 'run,
                TOKEN_STDIN if stdin_says_stop() => break 'run,
                TOKEN_TIMER => timer.clear(),
                _ => {}
            }
        }
        // Read what waits on every socket (cheap when nothing does), at most a chunk from each:
        // a TCP sender's window arrives as a burst of frames at once, and reading it whole made
        // the departures due meanwhile wait for the end of it.
        let fresh = batch.len();
        // Per socket, from when on it may hold frames not read: when it was found empty
        // (monotonic), or its last frame read (realtime, mapped below).
        let mut found_empty: Option<i128> = None;
        let mut unread_after: Option<i128> = None;
        for (k, socket) in sockets.iter().enumerate() {
            for read in 1..=READ_CHUNK {
                let asked = sys::monotonic_ns();
                let Some(r) = socket
                    .receive(&mut buf)
                    .map_err(io_context(format!("reading {}", cfg.interfaces[k].name)))?
                else {
                    found_empty = Some(found_empty.map_or(asked, |e| e.min(asked)));
                    break;
                };
                if r.protocol != libc::ETH_P_IP as u16 {
                    relay.refused.not_ipv4 += 1;
                } else if r.truncated || r.len > MTU {
                    oversize += 1;
                } else {
                    batch.push((r.realtime_ns, k, buf[..r.len].to_vec()));
                }
                if read == READ_CHUNK {
                    // This socket may hold more, stamped no earlier than this frame.
                    unread_after = Some(unread_after.map_or(r.realtime_ns, |u| u.min(r.realtime_ns)));
                }
            }
        }
        // Kernel timestamps are CLOCK_REALTIME: map them with the offset between the clocks now
        // (read back to back), so a realtime step never reaches the schedule.
        let now = sys::monotonic_ns();
        let offset = now - sys::realtime_ns();
        let to_monotonic = |realtime: i128| if realtime == 0 { now } else { (realtime + offset).min(now) };
        for arrival in &mut batch[fresh..] {
            arrival.0 = to_monotonic(arrival.0);
        }
        // Every frame stamped up to `until` has been read: a socket found empty has nothing
        // stamped before it was asked (a frame stamped while the others were read may land in it
        // after), one left with frames nothing before the last frame read from it. Later frames
        // wait in `batch` for the next round, so none enters behind the relay's time.
        let until = [found_empty, unread_after.map(to_monotonic)].into_iter().flatten().min().unwrap_or(now);
        batch.sort_by_key(|a| a.0);
        let entering = batch.partition_point(|a| a.0 <= until);
        for (ns, k, bytes) in batch.drain(..entering) {
            frames_in += 1;
            let kept = logging.then(|| keep(&bytes));
            // The events this arrival lets run are late by the clock now, not at the wake-up:
            // a burst of frames takes its time.
            relay.set_clock(to_instant(sys::monotonic_ns()));
            let (id, at) = relay.arrive(to_instant(ns), k, bytes);
            if let Some(bytes) = kept {
                send(Record::In { id, at, iface: k, bytes }, &mut records_lost);
            }
        }
        // Everything due by then leaves now.
        relay.set_clock(to_instant(sys::monotonic_ns()));
        relay.advance(to_instant(until));
        while let Some(d) = relay.poll_departure() {
            let waited = sockets[d.to]
                .send_ipv4(d.frame.bytes())
                .map_err(io_context(format!("sending on {}", cfg.interfaces[d.to].name)))?;
            if let sys::SendWait::Waited(ns) = waited {
                send_waits[d.to] += 1;
                send_wait_max_ns = send_wait_max_ns.max(ns);
                send_wait_total_ns += u128::from(ns);
            }
            let sent = sys::monotonic_ns();
            lateness.record(sent - to_ns(d.due));
            frames_out += 1;
            if logging {
                let bytes = if cfg.capture { d.frame.into_bytes() } else { keep(d.frame.bytes()) };
                send(Record::Out { id: d.id, at: to_instant(sent), bytes }, &mut records_lost);
            }
        }
        while let Some(d) = relay.poll_dropped() {
            send(Record::Drop(d), &mut records_lost);
        }
        while let Some(b) = relay.poll_background() {
            if cfg.trace {
                send(Record::Background(b), &mut records_lost);
            }
        }
        while let Some(s) = relay.poll_sample() {
            send(Record::Sample(Box::new(s)), &mut records_lost);
        }
        if unread_after.is_some() || !batch.is_empty() {
            // Back for the rest of the burst, or the frames that came after `until`, before sleeping.
            wait = std::time::Duration::ZERO;
            continue;
        }
        // Sleep until shortly before the next departure, then spin to it.
        wait = std::time::Duration::from_secs(1);
        match relay.poll_timeout().map(to_ns) {
            Some(due) if due - sys::monotonic_ns() <= spin_ns => {
                while sys::monotonic_ns() < due {
                    std::hint::spin_loop();
                }
                timer.arm(None).map_err(io_context("timerfd"))?;
                wait = std::time::Duration::ZERO;
            }
            next => timer.arm(next.map(|due| due - spin_ns)).map_err(io_context("timerfd"))?,
        }
    }

    let cpu_s = |at_go: i128, clock| (sys::clock_ns(clock) - at_go) as f64 / 1e9;
    let (cpu_s, forwarding_cpu_s) = (
        cpu_s(cpu_at_go.0, libc::CLOCK_PROCESS_CPUTIME_ID),
        cpu_s(cpu_at_go.1, libc::CLOCK_THREAD_CPUTIME_ID),
    );
    let lateness = lateness.summary();
    let elements = relay.element_timing();
    let report = Report {
        scenario: cfg.plan.scenario.clone(),
        seed: cfg.plan.seed,
        scheduling,
        memory_locked,
        cpu: forwarding_cpu,
        keeping_up: lateness.p99_us <= LATENESS_GOAL_US
            && elements.iter().all(|e| e.lateness.p99_us <= LATENESS_GOAL_US),
        lateness,
        lateness_goal_us: LATENESS_GOAL_US,
        elements,
        wall_s: started.elapsed().as_secs_f64(),
        cpu_s,
        forwarding_cpu_s,
        processed_until_us: (relay.now() - Instant::ZERO).as_micros(),
        frames_in,
        frames_out,
        refused: relay.refused.clone(),
        oversize,
        late_arrivals: relay.late_arrivals,
        socket_drops: sockets.iter().map(|s| s.kernel_drops().unwrap_or(0)).collect(),
        send_waits,
        send_wait_max_ms: send_wait_max_ns as f64 / 1e6,
        send_wait_total_s: send_wait_total_ns as f64 / 1e9,
        records_lost,
        links: relay.counts.clone(),
    };
    drop(records);
    finish_writer(writer)?;
    let json = serde_json::to_string_pretty(&report).expect("the report serialises");
    write_atomically(&cfg.out_dir.join("relay.json"), json.as_bytes())
        .map_err(io_context("writing relay.json"))
}

/// Blocks until `go <t0>` (returns t0) or a stop (returns `None`), on a `poll` that holds the
/// signals and stdin only.
fn wait_for_go(poll: &Poll) -> Result<Option<i128>, Failure> {
    let mut ready = Vec::new();
    loop {
        poll.wait(std::time::Duration::from_millis(100), &mut ready).map_err(io_context("epoll_wait"))?;
        if ready.contains(&TOKEN_SIGNAL) {
            return Ok(None);
        }
        if ready.contains(&TOKEN_STDIN) {
            let mut line = String::new();
            io::stdin().lock().read_line(&mut line).map_err(io_context("stdin"))?;
            let mut words = line.split_whitespace();
            match (words.next(), words.next().map(str::parse::<i128>)) {
                (Some("go"), Some(Ok(t0))) => return Ok(Some(t0)),
                (None | Some("stop"), _) => return Ok(None),
                _ => {
                    return Err(Failure::Config(format!(
                        "expected `go <monotonic ns>` on stdin, got {line:?}"
                    )))
                }
            }
        }
    }
}

/// A line on stdin while running: `stop`, or the end of stdin, ends the run.
fn stdin_says_stop() -> bool {
    let mut line = String::new();
    match io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => true,
        Ok(_) => line.trim() == "stop",
    }
}

type Writer = JoinHandle<io::Result<()>>;

/// The thread that writes captures and the drop log, fed through a bounded channel.
fn start_writer(cfg: &RelayConfig) -> Result<(SyncSender<Record>, Writer), Failure> {
    let dir = cfg.out_dir.clone();
    fs::create_dir_all(&dir).map_err(io_context(format!("creating {}", dir.display())))?;
    let link_names: Vec<String> = cfg.plan.queues.clone();
    let (capture, trace, udp_head) = (cfg.capture, cfg.trace, cfg.udp_head);
    let (tx, rx) = mpsc::sync_channel(RECORD_BACKLOG);
    let handle = std::thread::Builder::new()
        .name("relay-writer".into())
        .spawn(move || write_records(&dir, &link_names, (capture, trace, udp_head), &rx))
        .map_err(io_context("starting the writer thread"))?;
    Ok((tx, handle))
}

fn finish_writer(writer: Writer) -> Result<(), Failure> {
    match writer.join() {
        Ok(result) => result.map_err(io_context("writing captures")),
        Err(_) => Err(Failure::Io("writing captures".into(), io::Error::other("the writer thread panicked"))),
    }
}

/// A file written under a temporary name and renamed into place once complete.
struct Pending<W> {
    tmp: PathBuf,
    path: PathBuf,
    writer: W,
}

impl Pending<BufWriter<File>> {
    fn create(dir: &Path, name: &str) -> io::Result<Self> {
        let tmp = dir.join(format!(".{name}.tmp"));
        let writer = BufWriter::new(File::create(&tmp)?);
        Ok(Self { tmp, path: dir.join(name), writer })
    }

    fn finish(self) -> io::Result<()> {
        finish_file(self.writer, &self.tmp, &self.path)
    }
}

fn finish_file(writer: BufWriter<File>, tmp: &Path, path: &Path) -> io::Result<()> {
    writer.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    fs::rename(tmp, path)
}

fn micros(t: Instant) -> i64 {
    (t - Instant::ZERO).as_micros()
}

/// The header of `relay-packets.csv` (docs/emulation.md, "The relay").
const PACKETS_HEADER: &str =
    "id,event,t_us,iface,link,reason,size,ecn,protocol,src,src_port,dst,dst_port,payload,head";

/// The columns of `relay-packets.csv` from `size` on, for a frame of `len` bytes whose first bytes
/// are `bytes`: its ECN field, and for an arriving frame its 5-tuple, transport payload length
/// and the first `udp_head` bytes of a UDP payload (hex).
fn frame_columns(len: usize, bytes: &[u8], arriving: bool, udp_head: usize) -> String {
    let ecn = bytes.get(1).map_or(String::new(), |tos| (tos & 0b11).to_string());
    if !arriving {
        return format!("{len},{ecn},,,,,,,");
    }
    let Ok(t) = FiveTuple::parse(bytes) else {
        return format!("{len},{ecn},,,,,,,");
    };
    let ihl = usize::from(bytes[0] & 0x0f) * 4;
    let (payload, head) = match t.protocol {
        17 => {
            let udp_payload = bytes.get(ihl + 8..).unwrap_or(&[]);
            let head: String = udp_payload.iter().take(udp_head).map(|b| format!("{b:02x}")).collect();
            (len.saturating_sub(ihl + 8).to_string(), head)
        }
        6 => {
            let data_offset = bytes.get(ihl + 12).map_or(20, |b| usize::from(b >> 4) * 4);
            (len.saturating_sub(ihl + data_offset).to_string(), String::new())
        }
        _ => (String::new(), String::new()),
    };
    format!("{len},{ecn},{},{},{},{},{},{payload},{head}", t.protocol, t.src, t.src_port, t.dst, t.dst_port)
}

/// The header of `relay-links.csv`: the links table's columns (docs/traces.md), in its order.
const LINKS_HEADER: &str = "t_us,link,capacity_bps,queue_bytes,queue_limit_bytes,airtime_share,mac_retries,\
mac_drops,queue_drops,ampdu_mpdus,phy_rate_bps,delivered_bps,congestion_level,mac_capacity_bps,\
extended_attempts,rb_share,scheduled_bps,queue_delay_us,cqi,l_queue_bytes,l_sojourn_us,c_sojourn_us,p_base,p_c,\
p_cl,p_l,l_marks,c_marks,l_drops,c_drops";

/// The radio columns of a sample (`LINKS_HEADER` from `airtime_share` on), filled as the
/// simulator fills them (`rtcbench_sim::trace::LinkTable`): a Wi-Fi node's MAC, an LTE buffer's
/// HARQ and scheduling; empty (null) where a column is not the element's.
fn radio_columns(radio: Option<&RadioColumns>) -> String {
    let opt = |v: Option<String>| v.unwrap_or_default();
    match radio {
        None => ",".repeat(13),
        Some(RadioColumns::Wifi(m)) => {
            let a = m.adaptation;
            [
                opt(m.airtime_share.map(|v| v.to_string())),
                m.retries.to_string(),
                m.drops.to_string(),
                m.queue_drops.to_string(),
                opt(m.ampdu_mpdus.map(|v| v.to_string())),
                opt(m.phy_rate.map(|r| r.as_bps().to_string())),
                opt(m.delivered.map(|r| r.as_bps().to_string())),
                opt(a.map(|a| a.congestion_level.to_string())),
                opt(a.map(|a| a.mac_capacity.as_bps().to_string())),
                opt(a.map(|a| a.extended_attempts.to_string())),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ]
            .join(",")
        }
        Some(RadioColumns::Lte(r)) => [
            String::new(),
            r.retransmissions.to_string(),
            r.failures.to_string(),
            r.queue_drops.to_string(),
            String::new(),
            r.full_band_rate.as_bps().to_string(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            opt(r.rb_share.map(|v| v.to_string())),
            opt(r.scheduled.map(|b| b.as_bps().to_string())),
            r.head_sojourn.map_or(0, |d| d.as_micros()).to_string(),
            r.cqi.to_string(),
        ]
        .join(","),
    }
}

/// The DualPI2 columns of a sample (`LINKS_HEADER` from `l_queue_bytes` on), filled as the
/// simulator fills them (`rtcbench_sim::trace::LinkTable`); empty (null) for every element but a
/// link with a DualPI2 queue.
fn dualpi2_columns(d: Option<&DualPi2Sample>) -> String {
    let Some(d) = d else {
        return ",".repeat(10);
    };
    let s = &d.state;
    [
        s.l_bytes.as_bytes().to_string(),
        s.l_sojourn.as_micros().to_string(),
        s.c_sojourn.as_micros().to_string(),
        s.p_base.to_string(),
        s.p_c.to_string(),
        s.p_cl.to_string(),
        s.p_l.to_string(),
        d.l_marks.to_string(),
        d.c_marks.to_string(),
        d.l_drops.to_string(),
        d.c_drops.to_string(),
    ]
    .join(",")
}

fn frame_len(bytes: &[u8]) -> usize {
    bytes.get(2..4).map_or(bytes.len(), |b| usize::from(u16::from_be_bytes([b[0], b[1]])))
}

fn write_records(
    dir: &Path,
    links: &[String],
    (capture, trace, udp_head): (bool, bool, usize),
    rx: &Receiver<Record>,
) -> io::Result<()> {
    let pcap = |name: &str| -> io::Result<Option<(PathBuf, PcapWriter<BufWriter<File>>)>> {
        if !capture {
            return Ok(None);
        }
        let path = dir.join(format!(".{name}.tmp"));
        let w = PcapWriter::new(BufWriter::new(File::create(&path)?)).map_err(io::Error::other)?;
        Ok(Some((path, w)))
    };
    let mut inbound = pcap("relay-in.pcap")?;
    let mut outbound = pcap("relay-out.pcap")?;
    let mut packets = trace.then(|| Pending::create(dir, "relay-packets.csv")).transpose()?;
    let mut samples = trace.then(|| Pending::create(dir, "relay-links.csv")).transpose()?;
    if let Some(p) = &mut packets {
        writeln!(p.writer, "{PACKETS_HEADER}")?;
    }
    if let Some(s) = &mut samples {
        writeln!(s.writer, "{LINKS_HEADER}")?;
    }
    let drops_tmp = dir.join(".relay-drops.csv.tmp");
    let mut drops = BufWriter::new(File::create(&drops_tmp)?);
    writeln!(drops, "t_us,arrived_us,link,reason,size,protocol,src,src_port,dst,dst_port")?;
    for record in rx {
        match record {
            Record::In { id, at, iface, bytes } => {
                if let Some((_, w)) = &mut inbound {
                    w.write_raw(at, &bytes).map_err(io::Error::other)?;
                }
                if let Some(p) = &mut packets {
                    let columns = frame_columns(frame_len(&bytes), &bytes, true, udp_head);
                    writeln!(p.writer, "{id},in,{},{iface},,,{columns}", micros(at))?;
                }
            }
            Record::Out { id, at, bytes } => {
                if let Some((_, w)) = &mut outbound {
                    w.write_raw(at, &bytes).map_err(io::Error::other)?;
                }
                if let Some(p) = &mut packets {
                    let columns = frame_columns(frame_len(&bytes), &bytes, false, udp_head);
                    writeln!(p.writer, "{id},out,{},,,,{columns}", micros(at))?;
                }
            }
            Record::Background(b) => {
                if let Some(p) = &mut packets {
                    let event = if b.delivered { "bg_out" } else { "bg_in" };
                    let link = &links[b.link];
                    writeln!(
                        p.writer,
                        "{},{event},{},,{link},,{},,,,,,,,",
                        b.id,
                        micros(b.at),
                        b.size.as_bytes()
                    )?;
                }
            }
            Record::Sample(s) => {
                if let Some(w) = &mut samples {
                    let or_empty = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
                    writeln!(
                        w.writer,
                        "{},{},{},{},{},{},{}",
                        micros(s.at),
                        links[s.link],
                        or_empty(s.capacity.map(|c| c.as_bps())),
                        s.queue.as_bytes(),
                        or_empty(s.queue_limit.map(|l| l.as_bytes())),
                        radio_columns(s.radio.as_ref()),
                        dualpi2_columns(s.dualpi2.as_ref())
                    )?;
                }
            }
            Record::Drop(d) => {
                let bytes = d.frame.bytes();
                if let Some(p) = &mut packets {
                    let columns = frame_columns(bytes.len(), bytes, false, udp_head);
                    let (link, reason) = (&links[d.link], d.reason.as_str());
                    writeln!(p.writer, "{},drop,{},,{link},{reason},{columns}", d.id, micros(d.at))?;
                }
                let (protocol, src, sport, dst, dport) = match FiveTuple::parse(bytes) {
                    Ok(t) => (
                        t.protocol.to_string(),
                        t.src.to_string(),
                        t.src_port.to_string(),
                        t.dst.to_string(),
                        t.dst_port.to_string(),
                    ),
                    Err(_) => Default::default(),
                };
                writeln!(
                    drops,
                    "{},{},{},{},{},{protocol},{src},{sport},{dst},{dport}",
                    micros(d.at),
                    micros(d.arrived),
                    links[d.link],
                    d.reason.as_str(),
                    bytes.len()
                )?;
            }
        }
    }
    for (file, w) in [("relay-in.pcap", inbound), ("relay-out.pcap", outbound)] {
        if let Some((tmp, w)) = w {
            finish_file(w.into_writer(), &tmp, &dir.join(file))?;
        }
    }
    for pending in [packets, samples].into_iter().flatten() {
        pending.finish()?;
    }
    finish_file(drops, &drops_tmp, &dir.join("relay-drops.csv"))
}
