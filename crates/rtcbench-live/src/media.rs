//! One end of a media call on a UDP socket, in real time: the program of `rtcbench-media
//! CONFIG.json` and of the GStreamer stack's `rtcbench-gst-media` (crate `rtcbench-gst`). It runs
//! the same sans-IO sender or receiver the simulator runs (`rtcbench-rtp`), built from the same
//! plan (`CallPlan`), its controller built as the simulator builds it (`rtcbench_cc::factory`).
//! A sender's video comes from the RFC 8593 model, or, given an `encoder` in its configuration
//! and a program that has one ([`RealEncoder`]), from a real encoder whose frames the sender
//! packetises, paces and sends as the model's, and whose target the controller sets.
//!
//! Started by `rtcbench.emulation.media` in a node's namespace: it binds its socket, says `ready`
//! on stdout, waits for `go <t0>` on stdin (the run's time zero, CLOCK_MONOTONIC nanoseconds) and
//! runs until `end` (from the configuration), `stop` or the end of stdin, SIGINT or SIGTERM.
//! Datagrams carry the bytes the endpoint wrote (RTP header and the start of the payload, where
//! a video packet carries its frame's index for the receiver's trace; or RTCP), then zero bytes
//! up to the wire size the endpoint asked for. Its log (`log`, JSON Lines, written
//! atomically at the end) has every datagram sent and received, what the endpoint reported, and
//! how late the agent took up the endpoint's deadlines (`timing`: its own timing error, which the
//! run's validity holds to a goal, `rtcbench.testbed.timing`).
//!
//! Exit status: 0 after a clean stop, 2 for a configuration it cannot use, 1 for a failed call.

use std::fs;
use std::io;
use std::net::{SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::pipe_controller::{self, PipeController, UserFeedback};
use crate::process::{io_context, ready_then_go, stdin_says_stop, write_atomically, Failure, RunClock};
use crate::stats::Lateness;
use crate::sys::{self, Poll, Signals, Timer};
use rtcbench_cc::factory::{self, FeedbackMode};
use rtcbench_cc::learned::LearnedPolicy;
use rtcbench_cc::{AnyController, ControllerKind, ControllerMetrics, Metric};
use rtcbench_media::encoder::EncodedFrame;
use rtcbench_media::video::{Frame, VideoConfig};
#[cfg(feature = "onnx")]
use rtcbench_onnx::{OnnxModel, SharedModel, MAX_MODEL_BYTES};
use rtcbench_rtp::{CallObserver, CallPlan, FeedbackRow, Incoming, OutKind, Outgoing, Receiver, Sender};
use rtcbench_units::{Bitrate, DataSize, Duration, Instant};
use rtcbench_wire::rtp::{RtpHeaderRepr, IPV4_UDP_OVERHEAD};
use rtcbench_wire::Ecn;
use serde::Deserialize;
use serde_json::json;

const TOKEN_SIGNAL: u64 = 0;
const TOKEN_STDIN: u64 = 1;
const TOKEN_TIMER: u64 = 2;
const TOKEN_SOCKET: u64 = 3;
const TOKEN_ENCODER: u64 = 4;
/// Above normal tasks, below the relay (2): as the cross-traffic agents.
const FIFO_PRIORITY: i32 = 1;

/// Which end of a call a process is.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Sender,
    Receiver,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    role: Role,
    /// A built-in controller's name (the sender builds it; the receiver sends the feedback it
    /// needs).
    controller: String,
    plan: CallPlan,
    local: SocketAddrV4,
    peer: SocketAddrV4,
    /// When to stop, from time zero.
    end: Duration,
    log: PathBuf,
    /// A Python controller (`controller` is then its name): the sender runs it as a child
    /// process (`rtcbench_live::pipe_controller`).
    #[serde(default)]
    python: Option<pipe_controller::Helper>,
    /// The receiver of a Python controller: the feedback the controller asks for.
    #[serde(default)]
    user_feedback: Option<UserFeedback>,
    /// A sender's real encoder, instead of the RFC 8593 model.
    #[serde(default)]
    encoder: Option<EncoderConfig>,
    /// A learned policy (`controller` is then its name): the receiver runs it, the sender
    /// follows its REMB (`rtcbench_cc::learned`).
    #[serde(default)]
    policy: Option<PolicyFile>,
}

/// A learned policy's model as the run was keyed by it: the file, and the SHA-256 its bytes
/// must have (a model replaced since the run was planned is refused, not run under the old key).
#[derive(Debug, Deserialize)]
struct PolicyFile {
    path: PathBuf,
    #[cfg_attr(not(feature = "onnx"), allow(dead_code))]
    sha256: String,
}

impl PolicyFile {
    #[cfg(not(feature = "onnx"))]
    fn load(&self, _name: &str) -> Result<LearnedPolicy, Failure> {
        Err(Failure::Config(format!(
            "{}: this agent was built without learned policies (rtcbench-live's `onnx` feature)",
            self.path.display()
        )))
    }

    #[cfg(feature = "onnx")]
    fn load(&self, name: &str) -> Result<LearnedPolicy, Failure> {
        let what = |e: String| Failure::Config(format!("{}: {e}", self.path.display()));
        let file = fs::File::open(&self.path).map_err(|e| what(format!("cannot read the model: {e}")))?;
        let mut bytes = Vec::new();
        io::Read::read_to_end(&mut io::Read::take(file, MAX_MODEL_BYTES as u64 + 1), &mut bytes)
            .map_err(|e| what(format!("cannot read the model: {e}")))?;
        let model = OnnxModel::from_bytes(&bytes).map_err(|e| what(e.0))?;
        if model.sha256() != self.sha256 {
            return Err(what(format!(
                "the model changed since the run was planned (SHA-256 {}, planned {})",
                model.sha256(),
                self.sha256
            )));
        }
        Ok(LearnedPolicy::new(name, std::sync::Arc::new(SharedModel(std::sync::Arc::new(model)))))
    }
}

/// A call end's UDP socket: bound to `local`, connected to `peer`, non-blocking, reporting each
/// datagram's ECN field; a sender's marks its datagrams with `ecn` (RFC 6679).
pub fn call_socket(
    local: SocketAddrV4,
    peer: SocketAddrV4,
    role: Role,
    ecn: u8,
) -> Result<UdpSocket, Failure> {
    let socket = UdpSocket::bind(local).map_err(io_context(format!("binding {local}")))?;
    socket.connect(peer).map_err(io_context(format!("connecting to {peer}")))?;
    socket.set_nonblocking(true).map_err(io_context("socket"))?;
    sys::enable_receive_tos(&socket).map_err(io_context("IP_RECVTOS"))?;
    if role == Role::Sender {
        sys::set_ip_tos(&socket, ecn).map_err(io_context("IP_TOS"))?;
    }
    Ok(socket)
}

/// A real video codec.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Codec {
    Vp8,
    H264,
}

/// What a sender's real encoder encodes, and with what (the resolution and frame rate are the
/// call's camera, from the plan).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EncoderConfig {
    pub codec: Codec,
    pub picture: Picture,
    /// Encoder threads (0: the encoder's choice).
    #[serde(default)]
    pub threads: u32,
    /// Scale the picture down the resolution ladder as the target falls, in front of the encoder
    /// (the call's `video.degradation = "maintain-framerate"`); otherwise the camera's resolution
    /// is encoded at every rate.
    #[serde(default)]
    pub scale: bool,
}

/// What the real encoder encodes.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Picture {
    /// A `videotestsrc` pattern by name (`snow`: white noise, Sjölund and Kevo 2022's).
    Pattern(String),
    /// A Y4M clip (I420 at the call's camera size and frame rate), played in a loop.
    Clip(PathBuf),
}

/// A real encoder outside the sender (the GStreamer stack's). It encodes on its own threads;
/// the agent's loop wakes on [`Self::wake_fd`], takes the frames that left it and hands it the
/// sender's requests.
pub trait RealEncoder {
    /// Readable while frames wait to be drained.
    fn wake_fd(&self) -> RawFd;
    /// Starts capturing and encoding; `clock` is the run's.
    fn start(&mut self, clock: RunClock) -> Result<(), Failure>;
    /// The frames that left the encoder since the last call, in order; an error if it failed.
    fn drain(&mut self, out: &mut Vec<EncodedFrame>) -> Result<(), Failure>;
    fn set_target(&mut self, target: Bitrate);
    fn force_keyframe(&mut self);
    /// Stops it and says what it did (frames, CPU, timing), for the log's `encoder` record.
    fn finish(&mut self) -> serde_json::Value;
}

/// Builds a program's real encoder for a call's video settings.
pub type EncoderFactory<'a> =
    &'a dyn Fn(&EncoderConfig, &VideoConfig) -> Result<Box<dyn RealEncoder>, Failure>;

/// The endpoint's events and datagrams, as JSON Lines in memory until the end (a few hundred
/// bytes per datagram: tens of MB for a long call at a few Mbit/s).
struct Log {
    lines: Vec<u8>,
}

impl Log {
    fn line(&mut self, value: &serde_json::Value) {
        serde_json::to_writer(&mut self.lines, value).expect("JSON to memory");
        self.lines.push(b'\n');
    }
}

/// Reports of the endpoint at instant `now` (set before each call into it).
struct Observer<'a> {
    log: &'a mut Log,
}

fn us(t: Instant) -> i64 {
    (t - Instant::ZERO).as_micros()
}

impl CallObserver for Observer<'_> {
    fn frame_encoded(&mut self, at: Instant, frame: &Frame, packets: u32) {
        self.log.line(&json!({
            "event": "frame_encoded", "t_us": us(frame.capture), "encoded_us": us(at), "frame": frame.index,
            "size": frame.size.as_bytes(), "keyframe": frame.keyframe, "packets": packets,
            "width": frame.width, "height": frame.height,
        }));
    }

    fn frame_completed(&mut self, frame: u64, first: Instant, at: Instant) {
        self.log.line(&json!({
            "event": "frame_completed", "t_us": us(at), "first_us": us(first), "frame": frame,
        }));
    }

    fn frame_rendered(&mut self, frame: u64, decoded: Instant, at: Instant, freeze: bool) {
        self.log.line(&json!({
            "event": "frame_rendered", "t_us": us(at), "decode_us": us(decoded), "frame": frame, "freeze": freeze,
        }));
    }

    fn packet_recovered(&mut self, at: Instant, seq: u16) {
        self.log.line(&json!({"event": "recovered", "t_us": us(at), "seq": seq}));
    }

    fn feedback(&mut self, at: Instant, row: FeedbackRow) {
        self.log.line(&json!({
            "event": "feedback", "t_us": us(at), "kind": row.kind as u8, "size": row.size.as_bytes(),
            "rtt_us": row.rtt.map(|d| d.as_micros()), "fraction_lost": row.fraction_lost,
            "packets_reported": row.packets_reported, "ce_reported": row.ce_reported,
        }));
    }

    fn controller(
        &mut self,
        at: Instant,
        target: Bitrate,
        pacing: Option<Bitrate>,
        metrics: &ControllerMetrics,
        remote: Option<&ControllerMetrics>,
    ) {
        // (column, value) pairs in the controller's own order, as the simulator's columns are.
        let local = metrics.values.iter().map(|(n, v)| ("", n, v));
        let remote = remote.into_iter().flat_map(|r| r.values.iter().map(|(n, v)| ("rx_", n, v)));
        let state: Vec<(String, serde_json::Value)> =
            local.chain(remote).map(|(prefix, name, value)| metric_column(prefix, name, value)).collect();
        self.log.line(&json!({
            "event": "controller", "t_us": us(at), "target_bps": target.as_bps(),
            "pacing_bps": pacing.map(|p| p.as_bps()), "state": state,
        }));
    }
}

/// A controller metric as `controller.parquet` names and stores it (docs/traces.md): the unit in
/// the name (`_bps`, `_bytes`, `_ms`), null as JSON null.
fn metric_column(prefix: &str, name: &str, value: &Metric) -> (String, serde_json::Value) {
    let column = format!("{prefix}{name}{}", value.unit_suffix());
    let value = match value {
        Metric::Rate(r) => json!(r.map(|r| r.as_bps())),
        Metric::Size(s) => json!(s.map(|s| s.as_bytes())),
        Metric::Time(d) => json!(d.map(|d| d.as_millis_f64())),
        Metric::State(s) => json!(s),
        Metric::Real(x) => json!(x.filter(|x| x.is_finite())),
        _ => serde_json::Value::Null,
    };
    (column, value)
}

enum Endpoint {
    Sender(Box<Sender>),
    Receiver(Box<Receiver>),
}

impl Endpoint {
    fn poll_timeout(&self) -> Instant {
        match self {
            Self::Sender(s) => s.poll_timeout(),
            Self::Receiver(r) => r.poll_timeout(),
        }
    }

    fn on_timeout(&mut self, now: Instant, obs: &mut Observer<'_>) {
        match self {
            Self::Sender(s) => s.on_timeout(now, obs),
            Self::Receiver(r) => r.on_timeout(now, obs),
        }
    }

    fn on_datagram(&mut self, now: Instant, pkt: Incoming<'_>, obs: &mut Observer<'_>) {
        match self {
            Self::Sender(s) if pkt.rtcp => s.on_rtcp(now, pkt, obs),
            Self::Sender(_) => {}
            Self::Receiver(r) => r.on_packet(now, pkt, obs),
        }
    }

    /// The receiver-side estimator's state (GCC-02 receive-side: the REMB estimator), if any.
    fn estimator_metrics(&self) -> Option<ControllerMetrics> {
        match self {
            Self::Sender(_) => None,
            Self::Receiver(r) => r.estimator_metrics(),
        }
    }

    fn outbox(&mut self) -> Vec<Outgoing> {
        match self {
            Self::Sender(s) => std::mem::take(&mut s.outbox),
            Self::Receiver(r) => std::mem::take(&mut r.outbox),
        }
    }
}

/// RTCP and RTP share the port (RFC 5761 §4): RTCP packet types 192-223 sit where RTP has its
/// marker bit and payload type.
fn is_rtcp(datagram: &[u8]) -> bool {
    datagram.len() >= 2 && (192..=223).contains(&datagram[1])
}

fn log_estimator(log: &mut Log, at: Instant, m: &ControllerMetrics) {
    let state: Vec<(String, serde_json::Value)> =
        m.values.iter().map(|(name, value)| metric_column("rx_", name, value)).collect();
    log.line(&json!({"event": "estimator", "t_us": us(at), "state": state}));
}

/// What to say when the Python controller failed: the last line it wrote on stderr (its own
/// message), else what the agent saw.
fn kind_name(kind: OutKind) -> &'static str {
    match kind {
        OutKind::Video => "video",
        OutKind::Audio => "audio",
        OutKind::Padding => "padding",
        OutKind::Retransmission => "rtx",
        OutKind::Fec => "fec",
        OutKind::Rtcp => "rtcp",
    }
}

/// Runs the endpoint that `config_path` describes. `real` builds the real encoder of a sender
/// whose configuration names one; `None` in a program without one (`rtcbench-media`), which
/// then refuses such a configuration.
pub fn run(config_path: &Path, real: Option<EncoderFactory<'_>>) -> Result<(), Failure> {
    let text = fs::read_to_string(config_path)
        .map_err(|e| Failure::Config(format!("{}: cannot read: {e}", config_path.display())))?;
    let cfg: Config = serde_json::from_str(&text)
        .map_err(|e| Failure::Config(format!("{}: {e}", config_path.display())))?;
    let known = || ControllerKind::ALL.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ");
    let user = cfg.python.is_some() || cfg.user_feedback.is_some();
    let kind = ControllerKind::from_name(&cfg.controller);
    let learned = cfg.policy.as_ref().map(|p| p.load(&cfg.controller)).transpose()?;
    if kind.is_none() && !user && learned.is_none() {
        return Err(Failure::Config(format!(
            "{}: controller {:?} is not built in (built-in: {})",
            config_path.display(),
            cfg.controller,
            known()
        )));
    }
    let plan = &match kind {
        Some(kind) if cfg.python.is_none() => cfg.plan.clone().run_by(kind),
        _ => cfg.plan.clone(),
    };
    let controller_failure: pipe_controller::Failure = Rc::default();
    let mut endpoint = match (cfg.role, kind, &cfg.python) {
        (Role::Sender, _, None) if learned.is_some() => {
            Endpoint::Sender(Box::new(plan.sender(factory::follow_estimate(plan.limits()))))
        }
        (Role::Receiver, _, None) if learned.is_some() => {
            let policy = learned.clone().expect("checked by the guard");
            Endpoint::Receiver(Box::new(plan.receiver(FeedbackMode::Learned(policy))))
        }
        (Role::Sender, _, Some(python)) => {
            let (controller, _) =
                PipeController::spawn(python, plan, controller_failure.clone()).map_err(Failure::Config)?;
            Endpoint::Sender(Box::new(plan.sender(AnyController::User(Box::new(controller)))))
        }
        (Role::Sender, Some(kind), None) => {
            let controller =
                factory::build(kind, &plan.options(), plan.priority, plan.limits(), plan.start_at());
            Endpoint::Sender(Box::new(plan.sender(controller)))
        }
        (Role::Receiver, _, _) if cfg.user_feedback.is_some() => {
            let intervals = plan.intervals();
            let mode = match cfg.user_feedback {
                Some(UserFeedback::Ccfb) => intervals.ccfb(factory::USER_CCFB_INTERVAL),
                _ => intervals.twcc(),
            };
            Endpoint::Receiver(Box::new(plan.receiver(mode)))
        }
        (Role::Receiver, Some(kind), _) => {
            let mode = factory::feedback_mode(kind, &plan.options(), plan.intervals(), plan.limits().start);
            Endpoint::Receiver(Box::new(plan.receiver(mode)))
        }
        _ => {
            return Err(Failure::Config(format!(
                "{}: a Python controller's sender needs `python`, its receiver `user_feedback`",
                config_path.display()
            )))
        }
    };
    let mut encoder = match (&cfg.encoder, &mut endpoint) {
        (None, _) => None,
        (Some(_), Endpoint::Receiver(_)) => {
            return Err(Failure::Config(format!(
                "{}: encoder: only a sender has an encoder",
                config_path.display()
            )))
        }
        (Some(enc), Endpoint::Sender(sender)) => {
            let Some(build) = real else {
                return Err(Failure::Config(format!(
                    "{}: encoder: this program has no real encoder (rtcbench-gst-media has GStreamer's)",
                    config_path.display()
                )));
            };
            if !sender.use_external_encoder(Instant::ZERO) {
                return Err(Failure::Config(format!(
                    "{}: encoder: the call sends no video",
                    config_path.display()
                )));
            }
            let external = sender.external_encoder().expect("an external encoder");
            let mut real = build(enc, external.config())?;
            // The controller's first target, before the first frame is encoded.
            if let Some(target) = external.take_target() {
                real.set_target(target);
            }
            Some(real)
        }
    };
    let socket = call_socket(cfg.local, cfg.peer, cfg.role, plan.ecn)?;
    // The ECN field the socket sets now: each datagram gets its own (media the call's codepoint,
    // RTCP Not-ECT, as the simulator sends them), changed only when it differs.
    let mut socket_ecn = if cfg.role == Role::Sender { plan.ecn } else { 0 };
    sys::terminate_with_parent().map_err(io_context("PR_SET_PDEATHSIG"))?;
    let signals = Signals::new().map_err(io_context("signalfd"))?;
    let timer = Timer::new().map_err(io_context("timerfd"))?;
    let poll = Poll::new().map_err(io_context("epoll"))?;
    for (fd, token) in [
        (signals.as_raw_fd(), TOKEN_SIGNAL),
        (io::stdin().as_raw_fd(), TOKEN_STDIN),
        (timer.as_raw_fd(), TOKEN_TIMER),
        (socket.as_raw_fd(), TOKEN_SOCKET),
    ] {
        poll.add(fd, token).map_err(io_context("epoll"))?;
    }
    if let Some(real) = &encoder {
        poll.add(real.wake_fd(), TOKEN_ENCODER).map_err(io_context("epoll"))?;
    }
    let scheduling = if sys::set_fifo_scheduling(FIFO_PRIORITY).is_ok() { "fifo" } else { "other" };
    let _ = sys::set_minimal_timer_slack();

    let Some(clock) = ready_then_go()? else { return Ok(()) };
    let now = || clock.now();
    if let Some(real) = &mut encoder {
        real.start(clock)?;
    }
    let end = Instant::ZERO + cfg.end;

    let mut log = Log { lines: Vec::new() };
    log.line(
        &json!({"event": "scheduling", "t_us": 0, "policy": scheduling, "role": cfg.role == Role::Sender}),
    );
    // The receiver-side estimator's state whenever it changes (from the start, as the simulator
    // includes it in the controller table's first row): the sender's controller rows get it as
    // last known (`rtcbench.testbed.trace`), as the simulator hands it over.
    let mut estimator = endpoint.estimator_metrics();
    if let Some(m) = &estimator {
        log_estimator(&mut log, Instant::ZERO, m);
    }
    let mut ready = Vec::new();
    let mut buf = vec![0u8; 65_536];
    let mut send_buf = Vec::with_capacity(2048);
    let mut sent_frames = 0u64;
    let mut unreachable = 0u64;
    let mut encoded = Vec::new();
    // How late the loop took up the endpoint's deadlines (`poll_timeout`: a frame's capture, the
    // pacer's next packet, a report, feedback, the controller's timer) against their instants:
    // the instant the state machine is handed is the one it acts at, so this is what the call
    // lost of the simulator's timing, a blocked or descheduled agent included.
    let mut lateness = Lateness::default();
    'run: loop {
        let deadline = endpoint.poll_timeout().min(end);
        timer.arm(Some(clock.monotonic_ns(deadline))).map_err(io_context("timerfd"))?;
        poll.wait(std::time::Duration::from_secs(1), &mut ready).map_err(io_context("epoll_wait"))?;
        for &token in &ready {
            match token {
                TOKEN_SIGNAL => break 'run,
                TOKEN_STDIN if stdin_says_stop() => break 'run,
                TOKEN_TIMER => timer.clear(),
                _ => {}
            }
        }
        let mut obs = Observer { log: &mut log };
        loop {
            let (n, tos) = match sys::receive_with_tos(&socket, &mut buf) {
                Ok(Some(got)) => got,
                Ok(None) => break,
                // An ICMP port unreachable for an earlier datagram: the peer is not listening
                // (yet, or any more: a sender ends before its receiver). Counted, not fatal.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    unreachable += 1;
                    continue;
                }
                Err(e) => return Err(Failure::Io("receiving".into(), e)),
            };
            let t = now();
            let data = &buf[..n];
            let rtcp = is_rtcp(data);
            let header = (!rtcp).then(|| RtpHeaderRepr::parse(data).ok()).flatten();
            let size = IPV4_UDP_OVERHEAD + DataSize::bytes(n as u64);
            obs.log.line(&json!({
                "event": "received", "t_us": us(t), "size": size.as_bytes(), "rtcp": rtcp, "ecn": tos & 0b11,
                "seq": header.as_ref().map(|(h, _)| h.seq.value()), "pt": header.as_ref().map(|(h, _)| h.payload_type),
            }));
            endpoint.on_datagram(t, Incoming { data, size, ecn: Ecn::from_bits(tos), rtcp }, &mut obs);
        }
        if let (Some(real), Endpoint::Sender(sender)) = (&mut encoder, &mut endpoint) {
            real.drain(&mut encoded)?;
            let external = sender.external_encoder().expect("an external encoder");
            for frame in encoded.drain(..) {
                external.push(frame);
            }
        }
        let t = now();
        let due = endpoint.poll_timeout();
        if t >= due {
            lateness.record(sys::monotonic_ns() - clock.monotonic_ns(due));
            endpoint.on_timeout(t, &mut obs);
        }
        if let (Some(real), Endpoint::Sender(sender)) = (&mut encoder, &mut endpoint) {
            let external = sender.external_encoder().expect("an external encoder");
            if let Some(target) = external.take_target() {
                obs.log
                    .line(&json!({"event": "encoder_target", "t_us": us(t), "target_bps": target.as_bps()}));
                real.set_target(target);
            }
            if external.take_keyframe_request() {
                real.force_keyframe();
            }
        }
        if let Some(m) = endpoint.estimator_metrics().filter(|m| estimator.as_ref() != Some(m)) {
            log_estimator(obs.log, t, &m);
            estimator = Some(m);
        }
        for out in endpoint.outbox() {
            let header_and_payload = out.size.saturating_sub(IPV4_UDP_OVERHEAD).as_bytes() as usize;
            send_buf.clear();
            send_buf.extend_from_slice(&out.data);
            send_buf.resize(header_and_payload.max(out.data.len()), 0);
            if out.ecn.bits() != socket_ecn {
                sys::set_ip_tos(&socket, out.ecn.bits()).map_err(io_context("IP_TOS"))?;
                socket_ecn = out.ecn.bits();
            }
            match socket.send(&send_buf) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => unreachable += 1,
                // The relay's queue is the bottleneck, not the host: a full socket buffer here
                // is counted as a send error, as a real stack would drop it.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(Failure::Io("sending".into(), e)),
            }
            sent_frames += 1;
            // The sequence number and payload type in the RTP header (a retransmission's `seq` is
            // the one it repairs).
            let rtp = out.kind != OutKind::Rtcp;
            let rtp_seq = rtp.then(|| out.data.get(2..4).map(|b| u16::from_be_bytes([b[0], b[1]]))).flatten();
            let pt = rtp.then(|| out.data.get(1).map(|b| b & 0x7F)).flatten();
            obs.log.line(&json!({
                "event": "sent", "t_us": us(t), "kind": kind_name(out.kind), "size": out.size.as_bytes(),
                "payload": out.payload.as_bytes(), "seq": out.seq, "rtp_seq": rtp_seq, "pt": pt,
                "frame": out.frame,
            }));
        }
        if controller_failure.borrow().is_some()
            || learned.as_ref().is_some_and(|l| l.failure.get().is_some())
        {
            break;
        }
        if now() >= end {
            break;
        }
    }
    if let Some(real) = &mut encoder {
        let mut report = real.finish();
        if let Some(fields) = report.as_object_mut() {
            fields.insert("event".into(), json!("encoder"));
            fields.insert("t_us".into(), json!(us(now())));
        }
        log.line(&report);
    }
    if let Some(why) = learned.as_ref().and_then(|l| l.failure.get()) {
        let _ = write_atomically(&cfg.log, &log.lines);
        return Err(Failure::Config(why.to_string()));
    }
    if let Some(why) = controller_failure.borrow().as_ref() {
        // The log so far is kept: it shows what the call did until the controller failed.
        let _ = write_atomically(&cfg.log, &log.lines);
        return Err(Failure::Config(why.clone()));
    }
    log.line(&json!({"event": "timing", "t_us": us(now()), "deadlines": lateness.deadlines()}));
    log.line(
        &json!({"event": "end", "t_us": us(now()), "sent": sent_frames, "peer_unreachable": unreachable}),
    );
    write_atomically(&cfg.log, &log.lines).map_err(io_context(format!("writing {}", cfg.log.display())))
}
