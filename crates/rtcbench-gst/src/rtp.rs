//! GStreamer's own congestion controller on a GStreamer RTP stack (`--mode gstreamer --cc
//! rtpgccbwe`, docs/gstreamer.md, ADR 0009): both ends of a call are GStreamer pipelines, and the
//! rate is GoogCC as GStreamer ships it, the `rtpgccbwe` element of the Rust plugins
//! (`gst-plugin-rtp`, registered in this process), driven by the transport-wide feedback that
//! GStreamer's own `rtpbin` sends and reads (draft-holmer-rmcat-transport-wide-cc-extensions-01).
//!
//! ```text
//! sender    picture → queue → encoder → pay ─┐
//!           audiotestsrc → opusenc → opuspay ─┴ rtpfunnel → rtpbin ─────────→ appsink → UDP
//!                   aux sender: rtprtxsend → rtpgccbwe ↑ RTPTWCCPackets ←─ appsrc ← UDP (RTCP)
//! receiver  UDP → appsrc → rtpbin (rtprtxreceive, jitter buffer) → fakesink
//!                           └ TWCC, RR, NACK, PLI → appsink → UDP
//! ```
//!
//! The payloaders write the transport-wide sequence number's header extension (RFC 8285, id
//! [`TWCC_EXT_ID`]); the receiver's session sends TWCC feedback; the sender's session turns it
//! into the `RTPTWCCPackets` event that `rtpgccbwe` reads on its way upstream. `rtpgccbwe` sits
//! where its documentation puts it, right before the session: in `rtpbin`'s aux sender, after
//! `rtprtxsend` (RFC 4588: NACKs answered when the call has NACK on), so that retransmissions are
//! paced and counted with the rest. It paces the packets on its own thread and announces each new
//! estimate (`notify::estimated-bitrate`), which this program hands to the encoder, audio's rate
//! first taken off as rtcbench's senders do. A PLI or FIR reaches the encoder as GStreamer's
//! force-key-unit event.
//!
//! This program owns the UDP socket (one per call end, RTP and RTCP multiplexed, RFC 5761), so
//! that its log has the same records as `rtcbench-media`'s and the run the same trace tables
//! (`rtcbench.emulation.trace`): every datagram sent and received, each frame as the encoder
//! emitted it (with its RTP timestamp, which the receiver's frames are matched by), the
//! controller's estimates and the feedback the sender read. The receiver also runs rtcbench's
//! model of libwebrtc's receive side ([`VideoReceiver`]) on the packets it gets, as an instrument:
//! frames completed and rendered and freezes are counted by the same rules in every mode.
//! GStreamer's receiver does not decode: the frames leave its jitter buffer for a `fakesink`.

use std::collections::VecDeque;
use std::fs;
use std::io;
use std::net::{SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use gstreamer as gst;
use gstreamer::prelude::*;
use gstreamer_app as gst_app;
use serde::Deserialize;
use serde_json::json;

use rtcbench_live::media::{call_socket, Codec, EncoderConfig, Role};
use rtcbench_live::process::{
    io_context, ready_then_go, stdin_says_stop, write_atomically, Failure, RunClock,
};
use rtcbench_live::stats::Lateness;
use rtcbench_live::sys::{self, Poll, Signals, Timer};
use rtcbench_media::playout::{VideoEvent, VideoReceiver};
use rtcbench_media::receiver::VideoPacket;
use rtcbench_rtp::call::JitterBuffer;
use rtcbench_rtp::CallPlan;
use rtcbench_units::{Bitrate, DataSize, Duration, Instant, SeqNo, SeqUnwrapper};
use rtcbench_wire::ntp;
use rtcbench_wire::rtcp::{self, RtcpMessage};
use rtcbench_wire::vp8::Vp8DescriptorRepr;

use crate::clip::ClipCamera;
use crate::{
    caps_size, check_bus, gst_failure, head, set_encoder_target, Camera, CameraTiming, Head, Latencies,
    PadCount, Scaler,
};

/// The `--cc` name of GStreamer's GoogCC.
pub const CONTROLLER: &str = "rtpgccbwe";
/// The header extension of transport-wide sequence numbers (the URI browsers negotiate).
const TWCC_URI: &str = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01";
/// Its RFC 8285 id in every packet of the call.
pub const TWCC_EXT_ID: u8 = 1;
/// RTP payload types, as rtcbench's own senders use them (`rtcbench.emulation.trace`).
const PT_VIDEO: u8 = 96;
const PT_RTX: u8 = 97;
const PT_AUDIO: u8 = 111;
/// Largest RTP packet the payloaders make (libwebrtc keeps a packet's IP datagram near 1200 bytes).
const MTU: u32 = 1200;
/// IPv4 and UDP headers, counted in a datagram's size on the wire as every mode counts them.
const IPV4_UDP: usize = 28;
const TOKEN_SIGNAL: u64 = 0;
const TOKEN_STDIN: u64 = 1;
const TOKEN_TIMER: u64 = 2;
const TOKEN_SOCKET: u64 = 3;
/// Above normal tasks, below the relay (2): as the media agents.
const FIFO_PRIORITY: i32 = 1;
/// Frames remembered by RTP timestamp, for numbering the packets that leave (a retransmission
/// may be a second old): 4 s at 60 fps.
const FRAMES_KEPT: usize = 240;
/// The version of the Rust plugin whose `rtpgccbwe` this program registers (Cargo.toml).
const GST_PLUGIN_RTP: &str = "0.15.4";

/// One end of a call: the media agents' configuration (`rtcbench.emulation.media`), with the
/// codec and picture both ends need.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    role: Role,
    controller: String,
    plan: CallPlan,
    local: SocketAddrV4,
    peer: SocketAddrV4,
    end: Duration,
    log: PathBuf,
    encoder: EncoderConfig,
}

/// JSON Lines in memory until the end, shared by the pipeline's threads.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl Log {
    fn line(&self, value: &serde_json::Value) {
        let mut lines = self.0.lock().expect("log lock");
        serde_json::to_writer(&mut *lines, value).expect("JSON to memory");
        lines.push(b'\n');
    }

    fn write(&self, path: &Path) -> io::Result<()> {
        write_atomically(path, &self.0.lock().expect("log lock"))
    }
}

fn us(t: Instant) -> i64 {
    (t - Instant::ZERO).as_micros()
}

/// What an RTP header says (RFC 3550 §5.1), with the payload's offset and length (RFC 8285
/// extensions and padding skipped).
struct Rtp {
    pt: u8,
    seq: u16,
    timestamp: u32,
    marker: bool,
    payload: std::ops::Range<usize>,
}

fn parse_rtp(data: &[u8]) -> Option<Rtp> {
    if data.len() < 12 || data[0] >> 6 != 2 {
        return None;
    }
    let mut at = 12 + 4 * usize::from(data[0] & 0x0F);
    if data[0] & 0x10 != 0 {
        let words = usize::from(u16::from_be_bytes([*data.get(at + 2)?, *data.get(at + 3)?]));
        at += 4 + 4 * words;
    }
    let padding = if data[0] & 0x20 != 0 { usize::from(*data.last()?) } else { 0 };
    let end = data.len().checked_sub(padding)?;
    (at <= end).then(|| Rtp {
        pt: data[1] & 0x7F,
        marker: data[1] & 0x80 != 0,
        seq: u16::from_be_bytes([data[2], data[3]]),
        timestamp: u32::from_be_bytes([data[4], data[5], data[6], data[7]]),
        payload: at..end,
    })
}

/// RFC 5761 §4: RTCP where RTP would have its marker and payload type, packet types 192-223.
fn is_rtcp(data: &[u8]) -> bool {
    data.len() >= 2 && (192..=223).contains(&data[1])
}

pub fn run(config_path: &Path) -> Result<(), Failure> {
    let text = fs::read_to_string(config_path)
        .map_err(|e| Failure::Config(format!("{}: cannot read: {e}", config_path.display())))?;
    let cfg: Config = serde_json::from_str(&text)
        .map_err(|e| Failure::Config(format!("{}: {e}", config_path.display())))?;
    let refuse = |what: String| Failure::Config(format!("{}: {what}", config_path.display()));
    if cfg.controller != CONTROLLER {
        return Err(refuse(format!(
            "controller {:?}: this program runs GStreamer's {CONTROLLER} only",
            cfg.controller
        )));
    }
    if cfg.plan.video.is_none() {
        return Err(refuse("the call sends no video: rtpgccbwe's stack needs a video stream".into()));
    }
    if !cfg.plan.pauses.is_empty() {
        return Err(refuse("the call pauses its media: rtpgccbwe's stack cannot pause a stream".into()));
    }
    // Blocked before GStreamer starts a thread, so that every thread inherits the mask and the
    // signals reach the signalfd.
    let signals = Signals::new().map_err(io_context("signalfd"))?;
    sys::terminate_with_parent().map_err(io_context("PR_SET_PDEATHSIG"))?;
    gst::init().map_err(|e| gst_failure("init", e))?;
    gstrsrtp::plugin_register_static().map_err(|e| gst_failure("registering rtpgccbwe", e))?;
    let socket = Arc::new(call_socket(cfg.local, cfg.peer, cfg.role, cfg.plan.ecn)?);
    let log = Log::default();
    let clock: Arc<OnceLock<RunClock>> = Arc::default();
    let mut end = match cfg.role {
        Role::Sender => End::Sender(Box::new(SendStack::new(&cfg, &socket, &log, &clock)?)),
        Role::Receiver => End::Receiver(Box::new(ReceiveStack::new(&cfg, &socket, &log, &clock)?)),
    };
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
    let scheduling = if sys::set_fifo_scheduling(FIFO_PRIORITY).is_ok() { "fifo" } else { "other" };
    let _ = sys::set_minimal_timer_slack();

    let Some(run_clock) = ready_then_go()? else { return Ok(()) };
    let _ = clock.set(run_clock);
    log.line(
        &json!({"event": "scheduling", "t_us": 0, "policy": scheduling, "role": cfg.role == Role::Sender}),
    );
    let stop = Instant::ZERO + cfg.end;
    let media_start = Instant::ZERO + cfg.plan.start;
    let mut started = false;
    let mut ready = Vec::new();
    let mut buf = vec![0u8; 65_536];
    let mut unreachable = 0u64;
    // How late the loop took up its own deadlines (the receiver's playout model; GStreamer paces
    // and rates a sender on its own threads), as `rtcbench-media` measures its own.
    let mut lateness = Lateness::default();
    'run: loop {
        // Compared on the monotonic clock: the run's clock reads zero until time zero.
        if !started && sys::monotonic_ns() >= run_clock.monotonic_ns(media_start) {
            end.start()?;
            started = true;
        }
        let next = if started { end.poll_timeout() } else { media_start };
        timer.arm(Some(run_clock.monotonic_ns(next.min(stop)))).map_err(io_context("timerfd"))?;
        poll.wait(std::time::Duration::from_secs(1), &mut ready).map_err(io_context("epoll_wait"))?;
        for &token in &ready {
            match token {
                TOKEN_SIGNAL => break 'run,
                TOKEN_STDIN if stdin_says_stop() => break 'run,
                TOKEN_TIMER => timer.clear(),
                _ => {}
            }
        }
        loop {
            let (n, tos) = match sys::receive_with_tos(&*socket, &mut buf) {
                Ok(Some(got)) => got,
                Ok(None) => break,
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    unreachable += 1;
                    continue;
                }
                Err(e) => return Err(Failure::Io("receiving".into(), e)),
            };
            let t = run_clock.now();
            end.on_datagram(t, &buf[..n], tos);
        }
        let t = run_clock.now();
        let due = end.poll_timeout();
        if started && t >= due {
            lateness.record(sys::monotonic_ns() - run_clock.monotonic_ns(due));
            end.on_timeout(t);
        }
        end.check()?;
        if t >= stop {
            break;
        }
    }
    let report = end.finish(run_clock.now());
    log.line(&report);
    log.line(&json!({"event": "timing", "t_us": us(run_clock.now()), "deadlines": lateness.deadlines()}));
    log.line(&json!({"event": "end", "t_us": us(run_clock.now()), "peer_unreachable": unreachable}));
    log.write(&cfg.log).map_err(io_context(format!("writing {}", cfg.log.display())))
}

enum End {
    Sender(Box<SendStack>),
    Receiver(Box<ReceiveStack>),
}

impl End {
    fn start(&mut self) -> Result<(), Failure> {
        let pipeline = match self {
            Self::Sender(s) => &s.pipeline,
            Self::Receiver(r) => &r.pipeline,
        };
        pipeline.set_state(gst::State::Playing).map_err(|e| gst_failure("starting the pipeline", e))?;
        if let Self::Sender(s) = self {
            s.cpu_at_start_ns = sys::clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID);
            s.wall_at_start_ns = sys::monotonic_ns();
            if let Some(camera) = &mut s.camera {
                camera.start();
            }
        }
        Ok(())
    }

    fn poll_timeout(&self) -> Instant {
        match self {
            Self::Sender(_) => Instant::FAR_FUTURE,
            Self::Receiver(r) => r.video.poll_timeout(),
        }
    }

    fn on_timeout(&mut self, now: Instant) {
        if let Self::Receiver(r) = self {
            r.video.on_timeout(now);
            r.events();
        }
    }

    fn on_datagram(&mut self, now: Instant, data: &[u8], tos: u8) {
        match self {
            Self::Sender(s) => s.on_datagram(now, data),
            Self::Receiver(r) => r.on_datagram(now, data, tos),
        }
    }

    fn check(&self) -> Result<(), Failure> {
        match self {
            Self::Sender(s) => check_bus(&s.pipeline),
            Self::Receiver(r) => check_bus(&r.pipeline),
        }
    }

    fn finish(self, now: Instant) -> serde_json::Value {
        match self {
            Self::Sender(s) => s.finish(now),
            Self::Receiver(r) => r.finish(now),
        }
    }
}

/// Hands each buffer an `appsink` gets to `send`, one datagram per buffer.
fn on_each_buffer(sink: &gst_app::AppSink, send: impl Fn(&[u8]) + Send + Sync + 'static) {
    sink.set_callbacks(
        gst_app::AppSinkCallbacks::builder()
            .new_sample(move |sink| {
                let sample = sink.pull_sample().map_err(|_| gst::FlowError::Eos)?;
                if let Some(list) = sample.buffer_list() {
                    for buffer in list.iter() {
                        if let Ok(map) = buffer.map_readable() {
                            send(&map);
                        }
                    }
                } else if let Some(buffer) = sample.buffer() {
                    let map = buffer.map_readable().map_err(|_| gst::FlowError::Error)?;
                    send(&map);
                }
                Ok(gst::FlowSuccess::Ok)
            })
            .build(),
    );
}

/// Sends `data` to the peer and logs it as the media agents do (`sent`).
fn send_and_log(
    socket: &UdpSocket,
    log: &Log,
    clock: &OnceLock<RunClock>,
    data: &[u8],
    record: serde_json::Value,
) {
    // A full socket buffer or a peer not listening yet: the datagram is lost, as a real stack's.
    let _ = socket.send(data);
    let Some(clock) = clock.get() else { return };
    let mut record = record;
    if let Some(fields) = record.as_object_mut() {
        fields.insert("event".into(), json!("sent"));
        fields.insert("t_us".into(), json!(us(clock.now())));
        fields.insert("size".into(), json!(data.len() + IPV4_UDP));
    }
    log.line(&record);
}

/// A frame as it left the encoder.
struct Encoded {
    capture_ns: i128,
    bytes: usize,
    keyframe: bool,
    /// The encoded picture's size (the encoder's caps), if they said.
    size: Option<(u16, u16)>,
}

/// Frames between the encoder and the packets that leave: numbered in the order the payloader
/// emits them (one RTP timestamp each), their records written once their last packet is made.
#[derive(Default)]
struct Frames {
    /// Encoded, not yet payloaded.
    encoded: VecDeque<Encoded>,
    /// The frame being payloaded: its record without `packets`, its RTP timestamp and packets.
    current: Option<(serde_json::Value, u32, u32)>,
    /// (RTP timestamp, frame) of recent frames.
    recent: VecDeque<(u32, u64)>,
    next: u64,
    encoded_frames: u64,
    keyframes: u64,
    bytes: u64,
    /// Packets whose RTP timestamp came with no encoded frame (there should be none).
    unmatched: u64,
}

impl Frames {
    fn frame_of(&self, timestamp: u32) -> Option<u64> {
        self.recent.iter().rev().find(|(ts, _)| *ts == timestamp).map(|(_, f)| *f)
    }

    /// A video packet left the payloader.
    fn on_packet(&mut self, timestamp: u32, log: &Log, clock: RunClock, camera: (u16, u16)) {
        if let Some((_, ts, packets)) = &mut self.current {
            if *ts == timestamp {
                *packets += 1;
                return;
            }
        }
        self.close(log);
        let Some(frame) = self.encoded.pop_front() else {
            self.unmatched += 1;
            return;
        };
        let index = self.next;
        self.next += 1;
        self.recent.push_back((timestamp, index));
        if self.recent.len() > FRAMES_KEPT {
            self.recent.pop_front();
        }
        let (width, height) = frame.size.unwrap_or(camera);
        let record = json!({
            "event": "frame_encoded", "t_us": us(clock.instant(frame.capture_ns)), "frame": index,
            "size": frame.bytes, "keyframe": frame.keyframe, "width": width, "height": height,
            "rtp_ts": timestamp,
        });
        self.current = Some((record, timestamp, 1));
    }

    fn close(&mut self, log: &Log) {
        if let Some((mut record, _, packets)) = self.current.take() {
            if let Some(fields) = record.as_object_mut() {
                fields.insert("packets".into(), json!(packets));
            }
            log.line(&record);
        }
    }
}

/// The sending end: the encoder, the payloaders, `rtpgccbwe` and `rtpbin`.
struct SendStack {
    pipeline: gst::Pipeline,
    encoder: gst::Element,
    rtcp_in: gst_app::AppSrc,
    camera: Option<ClipCamera>,
    camera_timing: CameraTiming,
    frames: Arc<Mutex<Frames>>,
    source_frames: PadCount,
    encoder_input_frames: PadCount,
    latency: Arc<Mutex<Latencies>>,
    targets: Arc<Mutex<u64>>,
    scaler: Option<Arc<Mutex<Scaler>>>,
    keyframe_requests: u64,
    log: Log,
    size: (u16, u16),
    fps: f64,
    cpu_at_start_ns: i128,
    wall_at_start_ns: i128,
}

impl SendStack {
    fn new(
        cfg: &Config,
        socket: &Arc<UdpSocket>,
        log: &Log,
        clock: &Arc<OnceLock<RunClock>>,
    ) -> Result<Self, Failure> {
        let plan = &cfg.plan;
        let video = plan.video.as_ref().expect("checked: the call sends video");
        let ids = &plan.ids;
        let camera = Camera::of(video.camera, video.fps, video.start_rate, video.min_rate, video.max_rate);
        let Head { description, clip } = head(&cfg.encoder, camera)?;
        let ext = format!("application/x-rtp,extmap-{TWCC_EXT_ID}=(string){TWCC_URI}");
        let pay = match cfg.encoder.codec {
            Codec::Vp8 => "rtpvp8pay picture-id-mode=15-bit",
            Codec::H264 => "rtph264pay config-interval=-1 aggregate-mode=none",
        };
        let seq0 = |s: u16| format!("seqnum-offset={s}");
        let mut description = format!(
            "{description} ! {pay} name=pay pt={PT_VIDEO} ssrc={} {} timestamp-offset={} mtu={MTU} ! {ext} \
             ! rtpfunnel name=funnel",
            ids.video_ssrc,
            seq0(ids.video_seq0),
            ids.video_ts0,
        );
        let audio_rate = plan.audio.as_ref().map_or(0, |a| a.rate.as_bps());
        if let Some(audio) = &plan.audio {
            // Opus frames (RFC 6716 §2.1.4) of the call's packet interval, or the nearest one
            // opusenc makes.
            let interval = audio.packet_interval.as_millis();
            let frame_ms = [10, 20, 40, 60].into_iter().min_by_key(|ms| (ms - interval).abs()).unwrap_or(20);
            description.push_str(&format!(
                " audiotestsrc is-live=true wave=pink-noise ! audio/x-raw,rate=48000,channels=1 \
                 ! opusenc bitrate={} bitrate-type=cbr frame-size={frame_ms} \
                 ! rtpopuspay pt={PT_AUDIO} ssrc={} {} timestamp-offset={} mtu={MTU} ! {ext} ! funnel.",
                audio.rate.as_bps().max(6000),
                ids.audio_ssrc,
                seq0(ids.audio_seq0),
                ids.audio_ts0,
            ));
        }
        description.push_str(
            " appsink name=rtp_out sync=false async=false max-buffers=0 drop=false \
             appsink name=rtcp_out sync=false async=false max-buffers=0 drop=false \
             appsrc name=rtcp_in is-live=true format=time do-timestamp=true caps=application/x-rtcp",
        );
        let pipeline = launch(&description)?;
        let by_name = |name: &str| {
            pipeline.by_name(name).ok_or_else(|| Failure::Config(format!("GStreamer: no element {name}")))
        };
        let (source, encoder, pay, bwe) =
            (by_name("src")?, by_name("enc")?, by_name("pay")?, make("rtpgccbwe", "bwe")?);
        bwe.set_property("min-bitrate", bps_u32(plan.min_rate.as_bps()));
        bwe.set_property("max-bitrate", bps_u32(plan.max_rate.as_bps()));
        bwe.set_property("estimated-bitrate", bps_u32(plan.start_rate.as_bps()));
        let rtpbin = rtpbin()?;
        // rtpgccbwe goes where its documentation puts it, right before the session: inside
        // rtpbin's aux sender, after rtprtxsend, so that it paces and counts retransmissions too.
        let retransmit = plan.nack.then_some((ids.video_ssrc, ids.rtx_ssrc));
        let aux = bwe.clone();
        rtpbin.connect("request-aux-sender", false, move |args| {
            let session = args[1].get::<u32>().unwrap_or(0);
            aux_sender(session, &aux, retransmit).ok().map(|bin| bin.to_value())
        });
        pipeline.add(&rtpbin).map_err(|e| gst_failure("adding rtpbin", e))?;
        link(&by_name("funnel")?, "src", &rtpbin, "send_rtp_sink_0")?;
        link(&rtpbin, "send_rtp_src_0", &by_name("rtp_out")?, "sink")?;
        link(&rtpbin, "send_rtcp_src_0", &by_name("rtcp_out")?, "sink")?;
        link(&by_name("rtcp_in")?, "src", &rtpbin, "recv_rtcp_sink_0")?;
        set_report_interval(&rtpbin, plan.report_interval)?;

        let (source_frames, encoder_input_frames) = (PadCount::default(), PadCount::default());
        source_frames.attach(&source, "src")?;
        encoder_input_frames.attach(&encoder, "sink")?;
        let frames: Arc<Mutex<Frames>> = Arc::default();
        let latency = Arc::new(Mutex::new(Latencies::new()));
        {
            // Each frame as it leaves the encoder: its capture instant (the pipeline's base time
            // plus its running time) and size.
            let (frames, latency, weak) = (Arc::clone(&frames), Arc::clone(&latency), pipeline.downgrade());
            let pad =
                encoder.static_pad("src").ok_or_else(|| Failure::Config("encoder: no src pad".into()))?;
            pad.add_probe(gst::PadProbeType::BUFFER, move |pad, info| {
                let ready_ns = sys::monotonic_ns();
                let (Some(buffer), Some(pipeline)) = (info.buffer(), weak.upgrade()) else {
                    return gst::PadProbeReturn::Ok;
                };
                let running = pad
                    .sticky_event::<gst::event::Segment>(0)
                    .and_then(|e| e.segment().downcast_ref::<gst::format::Time>().cloned())
                    .and_then(|s| s.to_running_time(buffer.pts()?));
                let base = pipeline.base_time().map_or(0, gst::ClockTime::nseconds);
                let capture_ns = i128::from(base) + i128::from(running.map_or(0, gst::ClockTime::nseconds));
                latency.lock().expect("latency lock").add(capture_ns, ready_ns);
                let mut f = frames.lock().expect("frames lock");
                let keyframe = !buffer.flags().contains(gst::BufferFlags::DELTA_UNIT);
                f.encoded_frames += 1;
                f.keyframes += u64::from(keyframe);
                f.bytes += buffer.size() as u64;
                let size = pad.current_caps().as_deref().and_then(caps_size);
                f.encoded.push_back(Encoded { capture_ns, bytes: buffer.size(), keyframe, size });
                gst::PadProbeReturn::Ok
            });
        }
        {
            // Each video packet as the payloader makes it: its frame is the next encoded one
            // whenever its RTP timestamp changes.
            let (frames, log, clock, size) =
                (Arc::clone(&frames), log.clone(), Arc::clone(clock), video.camera);
            let pad = pay.static_pad("src").ok_or_else(|| Failure::Config("payloader: no src pad".into()))?;
            pad.add_probe(gst::PadProbeType::BUFFER | gst::PadProbeType::BUFFER_LIST, move |_, info| {
                let Some(clock) = clock.get().copied() else { return gst::PadProbeReturn::Ok };
                let mut f = frames.lock().expect("frames lock");
                let mut one = |buffer: &gst::BufferRef| {
                    if let Ok(map) = buffer.map_readable() {
                        if let Some(rtp) = parse_rtp(&map) {
                            f.on_packet(rtp.timestamp, &log, clock, size);
                        }
                    }
                };
                match &info.data {
                    Some(gst::PadProbeData::Buffer(b)) => one(b),
                    Some(gst::PadProbeData::BufferList(list)) => list.iter().for_each(one),
                    _ => {}
                }
                gst::PadProbeReturn::Ok
            });
        }
        {
            // Every RTP packet that leaves, after rtpgccbwe's pacer and the session.
            let (socket, log, clock, frames) =
                (Arc::clone(socket), log.clone(), Arc::clone(clock), Arc::clone(&frames));
            on_each_buffer(
                &by_name("rtp_out")?.downcast::<gst_app::AppSink>().expect("appsink"),
                move |data| {
                    let record = match parse_rtp(data) {
                        Some(rtp) => {
                            let body = &data[rtp.payload.clone()];
                            let frame = || frames.lock().expect("frames lock").frame_of(rtp.timestamp);
                            match rtp.pt {
                                PT_VIDEO => {
                                    json!({"kind": "video", "seq": rtp.seq, "rtp_seq": rtp.seq, "pt": rtp.pt,
                                "payload": body.len(), "frame": frame()})
                                }
                                PT_AUDIO => {
                                    json!({"kind": "audio", "seq": rtp.seq, "rtp_seq": rtp.seq, "pt": rtp.pt,
                                "payload": body.len(), "frame": null})
                                }
                                // RFC 4588 §4: the original sequence number, then the original payload.
                                PT_RTX if body.len() >= 2 => json!({"kind": "rtx",
                                "seq": u16::from_be_bytes([body[0], body[1]]), "rtp_seq": rtp.seq, "pt": rtp.pt,
                                "payload": body.len() - 2, "frame": frame()}),
                                _ => json!({"kind": "padding", "seq": null, "rtp_seq": rtp.seq, "pt": rtp.pt,
                                "payload": 0, "frame": null}),
                            }
                        }
                        None => {
                            json!({"kind": "other", "seq": null, "rtp_seq": null, "pt": null, "payload": 0,
                        "frame": null})
                        }
                    };
                    send_and_log(&socket, &log, &clock, data, record);
                },
            );
        }
        {
            let (socket, log, clock) = (Arc::clone(socket), log.clone(), Arc::clone(clock));
            on_each_buffer(
                &by_name("rtcp_out")?.downcast::<gst_app::AppSink>().expect("appsink"),
                move |data| {
                    let record = json!({"kind": "rtcp", "seq": null, "rtp_seq": null, "pt": null, "payload": 0,
                    "frame": null});
                    send_and_log(&socket, &log, &clock, data, record);
                },
            );
        }
        let targets: Arc<Mutex<u64>> = Arc::default();
        let scaler = Scaler::attach(&pipeline, &cfg.encoder, camera)?;
        {
            // rtpgccbwe's estimate: logged as the controller's target, and, audio's rate taken
            // off and clamped to the video's range, set as the encoder's.
            let (log, clock, encoder, targets, scaler) =
                (log.clone(), Arc::clone(clock), encoder.clone(), Arc::clone(&targets), scaler.clone());
            let codec = cfg.encoder.codec;
            let (min, max) = (video.min_rate.as_bps(), video.max_rate.as_bps());
            let apply = move |estimate: u64, at: Option<Instant>| {
                let target = estimate.saturating_sub(audio_rate).clamp(min, max);
                set_encoder_target(&encoder, codec, target);
                if let Some(scaler) = &scaler {
                    scaler.lock().expect("scaler lock").set_target(Bitrate::bps(target));
                }
                *targets.lock().expect("targets lock") += 1;
                if let Some(at) = at {
                    log.line(&json!({"event": "controller", "t_us": us(at), "target_bps": estimate,
                        "pacing_bps": null, "state": [["video_target_bps", target]]}));
                }
            };
            apply(plan.start_rate.as_bps(), None);
            bwe.connect_notify(Some("estimated-bitrate"), move |bwe, _| {
                let estimate = u64::from(bwe.property::<u32>("estimated-bitrate"));
                apply(estimate, clock.get().map(|c| c.now()));
            });
        }
        let camera_timing = CameraTiming::default();
        let camera = match clip {
            Some(clip_frames) => {
                let src =
                    source.downcast::<gst_app::AppSrc>().map_err(|_| Failure::Config("no appsrc".into()))?;
                Some(ClipCamera::new(src, clip_frames, video.fps, camera_timing.clone()))
            }
            None => {
                camera_timing.attach_live_source(&source)?;
                None
            }
        };
        pipeline.set_state(gst::State::Paused).map_err(|e| gst_failure("pausing the pipeline", e))?;
        let rtcp_in = by_name("rtcp_in")?
            .downcast::<gst_app::AppSrc>()
            .map_err(|_| Failure::Config("no appsrc".into()))?;
        Ok(Self {
            pipeline,
            encoder,
            rtcp_in,
            camera,
            camera_timing,
            frames,
            source_frames,
            encoder_input_frames,
            latency,
            targets,
            scaler,
            keyframe_requests: 0,
            log: log.clone(),
            size: video.camera,
            fps: video.fps,
            cpu_at_start_ns: 0,
            wall_at_start_ns: 0,
        })
    }

    /// RTCP from the receiver: logged as the feedback it carries, then handed to the session.
    fn on_datagram(&mut self, now: Instant, data: &[u8]) {
        if !is_rtcp(data) {
            return;
        }
        for row in feedback_rows(data) {
            if matches!(row.kind, 5 | 6) {
                self.keyframe_requests += 1;
            }
            self.log.line(&json!({
                "event": "feedback", "t_us": us(now), "kind": row.kind, "size": row.size,
                "rtt_us": row.rtt_us, "fraction_lost": row.fraction_lost, "packets_reported": row.packets_reported,
            }));
        }
        let _ = self.rtcp_in.push_buffer(gst::Buffer::from_slice(data.to_vec()));
    }

    fn finish(mut self, now: Instant) -> serde_json::Value {
        let cpu_ns = sys::clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID) - self.cpu_at_start_ns;
        let wall_ns = sys::monotonic_ns() - self.wall_at_start_ns;
        if let Some(camera) = &mut self.camera {
            camera.stop();
        }
        let _ = self.pipeline.set_state(gst::State::Null);
        let mut frames = self.frames.lock().expect("frames lock");
        frames.close(&self.log);
        let (major, minor, micro, _) = gst::version();
        let element = self.encoder.factory().map(|f| f.name().to_string()).unwrap_or_default();
        json!({
            "event": "encoder", "t_us": us(now),
            "gstreamer": format!("{major}.{minor}.{micro}"),
            "element": element,
            "controller": format!("rtpgccbwe (gst-plugin-rtp {GST_PLUGIN_RTP})"),
            "width": self.size.0,
            "height": self.size.1,
            "fps": self.fps,
            "source_frames": self.source_frames.get(),
            "encoder_input_frames": self.encoder_input_frames.get(),
            "encoded_frames": frames.encoded_frames,
            "keyframes": frames.keyframes,
            "bytes": frames.bytes,
            "frames_without_packets": frames.encoded.len(),
            "packets_without_frame": frames.unmatched,
            "targets_applied": *self.targets.lock().expect("targets lock"),
            "scaling": self.scaler.as_ref().map(|s| s.lock().expect("scaler lock").json()),
            "keyframe_requests": self.keyframe_requests,
            "latency_ms": self.latency.lock().expect("latency lock").json(),
            "camera": self.camera_timing.json(),
            "cpu_s": cpu_ns as f64 / 1e9,
            "wall_s": wall_ns as f64 / 1e9,
        })
    }
}

fn bps_u32(bps: u64) -> u32 {
    u32::try_from(bps).unwrap_or(u32::MAX)
}

fn launch(description: &str) -> Result<gst::Pipeline, Failure> {
    let bin = gst::parse::launch(description)
        .map_err(|e| Failure::Config(format!("GStreamer refused the pipeline: {e}")))?;
    let pipeline = bin.downcast::<gst::Pipeline>().map_err(|_| Failure::Config("not a pipeline".into()))?;
    pipeline.use_clock(Some(&gst::SystemClock::obtain()));
    Ok(pipeline)
}

/// `from`'s pad `src` (static or requested) linked to `to`'s pad `sink` (static or requested).
fn link(from: &gst::Element, src: &str, to: &gst::Element, sink: &str) -> Result<(), Failure> {
    let pad = |e: &gst::Element, name: &str| {
        e.static_pad(name)
            .or_else(|| e.request_pad_simple(name))
            .ok_or_else(|| Failure::Config(format!("GStreamer: {} has no pad {name}", e.name())))
    };
    let (a, b) = (pad(from, src)?, pad(to, sink)?);
    a.link(&b)
        .map(|_| ())
        .map_err(|e| gst_failure(&format!("linking {}:{src} to {}:{sink}", from.name(), to.name()), e))
}

/// `rtpbin` with RTP/AVPF (RFC 4585: early feedback).
fn rtpbin() -> Result<gst::Element, Failure> {
    let rtpbin = gst::ElementFactory::make("rtpbin")
        .name("rtpbin")
        .build()
        .map_err(|e| gst_failure("rtpbin (gst-plugins-good)", e))?;
    rtpbin.set_property_from_str("rtp-profile", "avpf");
    Ok(rtpbin)
}

/// Sets the regular RTCP interval of `rtpbin`'s session 0 (made when its pads were linked).
fn set_report_interval(rtpbin: &gst::Element, report_interval: Duration) -> Result<(), Failure> {
    let session = rtpbin
        .emit_by_name::<Option<gst::Element>>("get-session", &[&0u32])
        .ok_or_else(|| Failure::Config("rtpbin: no session 0".into()))?;
    let interval_ns = u64::try_from(report_interval.as_micros()).unwrap_or(1_000_000) * 1000;
    session.set_property("rtcp-min-interval", interval_ns);
    Ok(())
}

/// `rtpbin`'s aux sender for session `session`: `rtprtxsend` (video's packets kept and a NACKed
/// one sent again on the RTX stream, RFC 4588) when `retransmit` names the video's and the RTX
/// stream's SSRCs, then `bwe`, right before the session.
fn aux_sender(session: u32, bwe: &gst::Element, retransmit: Option<(u32, u32)>) -> Result<gst::Bin, Failure> {
    let bin = gst::Bin::new();
    bin.add(bwe).map_err(|e| gst_failure("rtpgccbwe", e))?;
    let first = match retransmit {
        Some((video_ssrc, rtx_ssrc)) => {
            let rtx = gst::ElementFactory::make("rtprtxsend")
                .property(
                    "payload-type-map",
                    gst::Structure::builder("pt").field(PT_VIDEO.to_string(), u32::from(PT_RTX)).build(),
                )
                .property(
                    "ssrc-map",
                    gst::Structure::builder("ssrc").field(video_ssrc.to_string(), rtx_ssrc).build(),
                )
                .property("max-size-time", 1000u32)
                .build()
                .map_err(|e| gst_failure("rtprtxsend", e))?;
            bin.add(&rtx).map_err(|e| gst_failure("rtprtxsend", e))?;
            rtx.link(bwe).map_err(|e| gst_failure("linking rtprtxsend to rtpgccbwe", e))?;
            rtx
        }
        None => bwe.clone(),
    };
    ghost(&bin, &first, "sink", &format!("sink_{session}"))?;
    ghost(&bin, bwe, "src", &format!("src_{session}"))?;
    Ok(bin)
}

/// `element`'s pad `inner` as `bin`'s pad `outer`.
fn ghost(bin: &gst::Bin, element: &gst::Element, inner: &str, outer: &str) -> Result<(), Failure> {
    let pad = element
        .static_pad(inner)
        .ok_or_else(|| Failure::Config(format!("{}: no {inner} pad", element.name())))?;
    let ghost = gst::GhostPad::builder_with_target(&pad)
        .map_err(|e| gst_failure("ghost pad", e))?
        .name(outer)
        .build();
    bin.add_pad(&ghost).map_err(|e| gst_failure("ghost pad", e))
}

/// An element of `factory` named `name`.
fn make(factory: &str, name: &str) -> Result<gst::Element, Failure> {
    gst::ElementFactory::make(factory).name(name).build().map_err(|e| gst_failure(factory, e))
}

/// `rtprtxreceive` for `rtpbin`'s session `session` (its aux receiver).
fn rtx_receiver(session: u32) -> Result<gst::Bin, Failure> {
    let bin = gst::Bin::new();
    let rtx = gst::ElementFactory::make("rtprtxreceive")
        // Keyed as rtprtxsend's: the original payload type to its retransmissions'.
        .property(
            "payload-type-map",
            gst::Structure::builder("pt").field(PT_VIDEO.to_string(), u32::from(PT_RTX)).build(),
        )
        .build()
        .map_err(|e| gst_failure("rtprtxreceive", e))?;
    bin.add(&rtx).map_err(|e| gst_failure("rtprtxreceive", e))?;
    ghost(&bin, &rtx, "sink", &format!("sink_{session}"))?;
    ghost(&bin, &rtx, "src", &format!("src_{session}"))?;
    Ok(bin)
}

/// A feedback row (`feedback.parquet`): the kind's code (`rtcbench_rtp::FeedbackKind`), the
/// RTCP packet's size, and what the kind reports.
struct FeedbackRecord {
    kind: u8,
    size: usize,
    rtt_us: Option<i64>,
    fraction_lost: Option<f64>,
    packets_reported: Option<u32>,
}

/// The feedback rows of a compound RTCP packet, one per packet a controller reads (RFC 3550
/// §6.1: each packet's length field gives its size).
fn feedback_rows(data: &[u8]) -> Vec<FeedbackRecord> {
    let mut rows = Vec::new();
    let mut at = 0;
    while at + 4 <= data.len() {
        let size = 4 * (usize::from(u16::from_be_bytes([data[at + 2], data[at + 3]])) + 1);
        let Some(packet) = data.get(at..at + size) else { break };
        at += size;
        let Ok(messages) = rtcp::parse_compound(packet) else { continue };
        for message in messages {
            let row = |kind, rtt_us, fraction_lost, packets_reported| FeedbackRecord {
                kind,
                size,
                rtt_us,
                fraction_lost,
                packets_reported,
            };
            match message {
                RtcpMessage::ReceiverReport(rr) => {
                    for block in &rr.blocks {
                        // RFC 3550 §6.4.1: A - LSR - DLSR, A from the wall clock, which GStreamer's
                        // sender reports carry (rtpbin's `ntp-time-source`, NTP by default).
                        let rtt = rtt_now(block.lsr, block.dlsr);
                        rows.push(row(1, rtt, Some(f64::from(block.fraction_lost) / 256.0), None));
                    }
                }
                RtcpMessage::TransportFeedback(fb) => {
                    rows.push(row(0, None, None, Some(fb.arrivals().len() as u32)));
                }
                RtcpMessage::Nack(nack) => rows.push(row(4, None, None, Some(nack.lost.len() as u32))),
                RtcpMessage::Pli(_) => rows.push(row(5, None, None, None)),
                RtcpMessage::Fir(_) => rows.push(row(6, None, None, None)),
                RtcpMessage::Remb(_) => rows.push(row(2, None, None, None)),
                RtcpMessage::CongestionControlFeedback(_) => rows.push(row(3, None, None, None)),
                _ => {}
            }
        }
    }
    rows
}

/// A wall-clock reading (ns since 1970) as a 64-bit NTP timestamp (RFC 5905 §6: seconds since
/// 1900, then the fraction).
fn wall_clock_ntp64(unix_ns: i128) -> u64 {
    let ns = unix_ns + i128::from(2_208_988_800u64) * 1_000_000_000;
    (((ns / 1_000_000_000) << 32) | (((ns % 1_000_000_000) << 32) / 1_000_000_000)) as u64
}

/// RFC 3550 §6.4.1's round trip at this instant on the wall clock, in µs.
fn rtt_now(lsr: u32, dlsr: u32) -> Option<i64> {
    if lsr == 0 {
        return None;
    }
    let a = ntp::compact(wall_clock_ntp64(sys::realtime_ns()));
    let rtt = a.wrapping_sub(lsr).wrapping_sub(dlsr) as i32;
    Some(ntp::compact_to_duration(rtt.max(0) as u32).as_micros())
}

/// Sets `rtpjitterbuffer`'s retransmission timing that the scenario's `jitter_buffer` gives.
fn apply_jitter_buffer(buffer: &gst::Element, settings: &JitterBuffer) {
    if let Some(on) = settings.rtx_next_seqnum {
        buffer.set_property("rtx-next-seqnum", on);
    }
    if let Some(delay) = settings.rtx_min_delay {
        // Validated at load: 0 to 10 s, so whole milliseconds fit a u32.
        buffer.set_property("rtx-min-delay", u32::try_from(delay.as_millis()).unwrap_or(u32::MAX));
    }
}

/// The receiving end: `rtpbin` with TWCC, NACK and RTX, and rtcbench's receive-side model as an
/// instrument on the same packets.
struct ReceiveStack {
    pipeline: gst::Pipeline,
    rtp_in: gst_app::AppSrc,
    rtcp_in: gst_app::AppSrc,
    video: VideoReceiver,
    /// The video stream's fakesink pad, once the stream is found.
    video_sink: Arc<Mutex<Option<gst::Pad>>>,
    keyframe_requests: u64,
    video_ssrc: u32,
    codec: Codec,
    seq: SeqUnwrapper<16>,
    picture_id: SeqUnwrapper<15>,
    log: Log,
}

impl ReceiveStack {
    fn new(
        cfg: &Config,
        socket: &Arc<UdpSocket>,
        log: &Log,
        clock: &Arc<OnceLock<RunClock>>,
    ) -> Result<Self, Failure> {
        let plan = &cfg.plan;
        let encoding = match cfg.encoder.codec {
            Codec::Vp8 => "VP8",
            Codec::H264 => "H264",
        };
        let ext = format!("extmap-{TWCC_EXT_ID}=(string){TWCC_URI}");
        let pipeline = launch(&format!(
            "appsrc name=rtp_in is-live=true format=time do-timestamp=true caps=application/x-rtp,{ext} \
             appsrc name=rtcp_in is-live=true format=time do-timestamp=true caps=application/x-rtcp \
             appsink name=rtcp_out sync=false async=false max-buffers=0 drop=false"
        ))?;
        let by_name = |name: &str| {
            pipeline.by_name(name).ok_or_else(|| Failure::Config(format!("GStreamer: no element {name}")))
        };
        let rtpbin = rtpbin()?;
        if plan.nack {
            // NACK for the video only, as browsers negotiate it (`rtcp-fb nack` on video), with
            // the scenario's `jitter_buffer` settings where it gives them (GStreamer's otherwise).
            let video_ssrc = plan.ids.video_ssrc;
            let settings = plan.jitter_buffer.unwrap_or_default();
            rtpbin.connect("new-jitterbuffer", false, move |args| {
                if let (Ok(buffer), Ok(ssrc)) = (args[1].get::<gst::Element>(), args[3].get::<u32>()) {
                    buffer.set_property("do-retransmission", ssrc == video_ssrc);
                    if ssrc == video_ssrc {
                        apply_jitter_buffer(&buffer, &settings);
                    }
                }
                None
            });
        }
        let video_caps = format!(
            "application/x-rtp,media=video,clock-rate=90000,encoding-name={encoding},payload={PT_VIDEO},\
             rtcp-fb-nack=(boolean)true,rtcp-fb-nack-pli=(boolean)true,rtcp-fb-transport-cc=(boolean)true,{ext}"
        );
        let rtx_caps = format!("application/x-rtp,media=video,clock-rate=90000,encoding-name=RTX,payload={PT_RTX},apt={PT_VIDEO},{ext}");
        let audio_caps = format!(
            "application/x-rtp,media=audio,clock-rate=48000,encoding-name=OPUS,payload={PT_AUDIO},{ext}"
        );
        let caps: Vec<(u32, gst::Caps)> =
            [(PT_VIDEO, video_caps), (PT_RTX, rtx_caps), (PT_AUDIO, audio_caps)]
                .into_iter()
                .map(|(pt, c)| c.parse::<gst::Caps>().map(|c| (u32::from(pt), c)))
                .collect::<Result<_, _>>()
                .map_err(|e| gst_failure("caps", e))?;
        rtpbin.connect("request-pt-map", false, move |args| {
            let pt = args[2].get::<u32>().unwrap_or(0);
            caps.iter().find(|(p, _)| *p == pt).map(|(_, c)| c.to_value())
        });
        if plan.nack {
            rtpbin.connect("request-aux-receiver", false, move |args| {
                let session = args[1].get::<u32>().unwrap_or(0);
                rtx_receiver(session).ok().map(|bin| bin.to_value())
            });
        }
        let video_sink: Arc<Mutex<Option<gst::Pad>>> = Arc::default();
        {
            // Every stream the session finds ends in a fakesink: nothing is decoded. The video's
            // is where a decoder would ask for a key frame (`keyframe_request`).
            let (weak, video_sink) = (pipeline.downgrade(), Arc::clone(&video_sink));
            rtpbin.connect_pad_added(move |_, pad| {
                let Some(pipeline) = weak.upgrade() else { return };
                let name = pad.name();
                if !name.starts_with("recv_rtp_src_") {
                    return;
                }
                if let Ok(sink) = gst::ElementFactory::make("fakesink")
                    .property("sync", false)
                    .property("async", false)
                    .build()
                {
                    let _ = pipeline.add(&sink);
                    let _ = sink.sync_state_with_parent();
                    if let Some(sinkpad) = sink.static_pad("sink") {
                        let _ = pad.link(&sinkpad);
                        if name.ends_with(&format!("_{PT_VIDEO}")) {
                            *video_sink.lock().expect("pad lock") = Some(sinkpad);
                        }
                    }
                }
            });
        }
        pipeline.add(&rtpbin).map_err(|e| gst_failure("adding rtpbin", e))?;
        link(&by_name("rtp_in")?, "src", &rtpbin, "recv_rtp_sink_0")?;
        link(&by_name("rtcp_in")?, "src", &rtpbin, "recv_rtcp_sink_0")?;
        link(&rtpbin, "send_rtcp_src_0", &by_name("rtcp_out")?, "sink")?;
        set_report_interval(&rtpbin, plan.report_interval)?;
        {
            let (socket, log, clock) = (Arc::clone(socket), log.clone(), Arc::clone(clock));
            on_each_buffer(
                &by_name("rtcp_out")?.downcast::<gst_app::AppSink>().expect("appsink"),
                move |data| {
                    let record = json!({"kind": "rtcp", "seq": null, "rtp_seq": null, "pt": null, "payload": 0,
                    "frame": null});
                    send_and_log(&socket, &log, &clock, data, record);
                },
            );
        }
        pipeline.set_state(gst::State::Paused).map_err(|e| gst_failure("pausing the pipeline", e))?;
        let appsrc = |name: &str| {
            by_name(name)?
                .downcast::<gst_app::AppSrc>()
                .map_err(|_| Failure::Config(format!("no appsrc {name}")))
        };
        Ok(Self {
            rtp_in: appsrc("rtp_in")?,
            rtcp_in: appsrc("rtcp_in")?,
            pipeline,
            video: VideoReceiver::new(false),
            video_sink,
            keyframe_requests: 0,
            video_ssrc: plan.ids.video_ssrc,
            codec: cfg.encoder.codec,
            seq: SeqUnwrapper::new(),
            picture_id: SeqUnwrapper::new(),
            log: log.clone(),
        })
    }

    fn on_datagram(&mut self, now: Instant, data: &[u8], tos: u8) {
        let rtcp = is_rtcp(data);
        let rtp = (!rtcp).then(|| parse_rtp(data)).flatten();
        self.log.line(&json!({
            "event": "received", "t_us": us(now), "size": data.len() + IPV4_UDP, "rtcp": rtcp, "ecn": tos & 0b11,
            "seq": rtp.as_ref().map(|r| r.seq), "pt": rtp.as_ref().map(|r| r.pt),
        }));
        let buffer = gst::Buffer::from_slice(data.to_vec());
        let _ = if rtcp { self.rtcp_in.push_buffer(buffer) } else { self.rtp_in.push_buffer(buffer) };
        let Some(rtp) = rtp else { return };
        let body = &data[rtp.payload.clone()];
        let (seq, body) = match rtp.pt {
            PT_VIDEO => (rtp.seq, body),
            PT_RTX if body.len() > 2 => (u16::from_be_bytes([body[0], body[1]]), &body[2..]),
            _ => return,
        };
        let seq = extend(&mut self.seq, u64::from(seq));
        let Some((start, keyframe, picture_id)) = frame_flags(self.codec, body) else { return };
        let picture_id = picture_id.map(|id| extend(&mut self.picture_id, id));
        let packet = VideoPacket {
            seq,
            rtp_timestamp: rtp.timestamp,
            start,
            end: rtp.marker,
            keyframe,
            payload: DataSize::bytes(body.len() as u64),
            nacked: false,
            picture_id,
        };
        self.video.on_packet(now, packet, false);
        self.events();
    }

    fn events(&mut self) {
        while let Some(event) = self.video.poll_event() {
            match event {
                VideoEvent::Completed(f) => self.log.line(&json!({
                    "event": "frame_completed", "t_us": us(f.completed_at), "first_us": us(f.first_arrival),
                    "frame": null, "rtp_ts": f.rtp_timestamp,
                })),
                VideoEvent::Rendered { frame, decoded, at, freeze } => self.log.line(&json!({
                    "event": "frame_rendered", "t_us": us(at), "decode_us": us(decoded), "frame": null,
                    "rtp_ts": frame.rtp_timestamp, "freeze": freeze,
                })),
                // The model's decoder cannot go on (its first frame, or a frame it waited for
                // too long, is missing): a key frame is asked for as a GStreamer decoder asks,
                // upstream from where it would sit; the session sends a PLI (RFC 4585 §6.3.1).
                VideoEvent::KeyframeRequest => {
                    if let Some(pad) = self.video_sink.lock().expect("pad lock").as_ref() {
                        self.keyframe_requests += 1;
                        // The fields rtpsession reads (its `ssrc` and `payload`), as rtpbin's
                        // demuxers would add them on the way.
                        let request = gst::Structure::builder("GstForceKeyUnit")
                            .field("all-headers", true)
                            .field("ssrc", self.video_ssrc)
                            .field("payload", u32::from(PT_VIDEO))
                            .build();
                        pad.push_event(gst::event::CustomUpstream::new(request));
                    }
                }
                // GStreamer's jitter buffer asks for retransmissions itself.
                VideoEvent::Nack(_) => {}
            }
        }
    }

    fn finish(self, now: Instant) -> serde_json::Value {
        let _ = self.pipeline.set_state(gst::State::Null);
        let stats = self.video.stats();
        json!({"event": "receive_side", "t_us": us(now), "frames_completed": stats.frames_completed,
            "frames_discarded": stats.frames_discarded, "keyframe_requests": self.keyframe_requests})
    }
}

/// A wrapping counter of `BITS` bits extended past its wraps (`SeqUnwrapper`), one cycle up so
/// that a packet reordered before the first one stays positive.
fn extend<const BITS: u32>(unwrapper: &mut SeqUnwrapper<BITS>, value: u64) -> u64 {
    (unwrapper.unwrap(SeqNo::new(value)) + (1 << BITS)).max(0) as u64
}

/// Whether a video payload starts its frame, belongs to a key frame, and its picture ID: VP8's
/// payload descriptor (RFC 7741 §4.2: S bit and partition 0; the P bit of the frame's first byte,
/// §4.3) or H.264's NAL unit header (RFC 6184 §5.3: a parameter set, or a slice whose
/// `first_mb_in_slice` is 0, starts a frame; IDR slices and parameter sets are a key frame's).
fn frame_flags(codec: Codec, body: &[u8]) -> Option<(bool, bool, Option<u64>)> {
    match codec {
        Codec::Vp8 => {
            let (d, len) = Vp8DescriptorRepr::parse(body).ok()?;
            let start = d.start_of_partition && d.partition == 0;
            let keyframe = start && body.get(len).is_some_and(|b| b & 0x01 == 0);
            Some((start, keyframe, d.picture_id.map(u64::from)))
        }
        Codec::H264 => {
            let first = *body.first()?;
            let (nal, rest) = match first & 0x1F {
                // FU-A (RFC 6184 §5.8): the FU header's start bit and type.
                28 => {
                    let fu = *body.get(1)?;
                    if fu & 0x80 == 0 {
                        return Some((false, fu & 0x1F == 5, None));
                    }
                    (fu & 0x1F, body.get(2..)?)
                }
                // STAP-A (§5.7.1): its first NAL unit.
                24 => {
                    let nal = *body.get(3)? & 0x1F;
                    (nal, body.get(4..)?)
                }
                t => (t, body.get(1..)?),
            };
            let keyframe = matches!(nal, 5 | 7 | 8);
            let start = match nal {
                7 => true,
                1 | 5 => rest.first().is_some_and(|b| b & 0x80 != 0) && nal == 1,
                _ => false,
            };
            Some((start, keyframe, None))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtcbench_wire::rtcp::nack::NackRepr;
    use rtcbench_wire::rtcp::pli::PliRepr;
    use rtcbench_wire::rtcp::report::{ReceiverReportRepr, ReportBlock};

    /// An RTP packet (RFC 3550 §5.1) with a one-byte header extension of `ext` bytes (RFC 8285
    /// §4.2) and `padding` bytes of padding after `payload`.
    fn rtp(pt: u8, seq: u16, ts: u32, marker: bool, ext: usize, payload: &[u8], padding: u8) -> Vec<u8> {
        let mut p = vec![0x80 | if ext > 0 { 0x10 } else { 0 } | if padding > 0 { 0x20 } else { 0 }];
        p.push(pt | if marker { 0x80 } else { 0 });
        p.extend_from_slice(&seq.to_be_bytes());
        p.extend_from_slice(&ts.to_be_bytes());
        p.extend_from_slice(&0x1234_5678u32.to_be_bytes());
        if ext > 0 {
            let words = ext.div_ceil(4);
            p.extend_from_slice(&[0xBE, 0xDE]);
            p.extend_from_slice(&(words as u16).to_be_bytes());
            p.extend(std::iter::repeat_n(0u8, words * 4));
        }
        p.extend_from_slice(payload);
        if padding > 0 {
            p.extend(std::iter::repeat_n(0u8, usize::from(padding) - 1));
            p.push(padding);
        }
        p
    }

    #[test]
    fn an_rtp_header_is_read_past_its_extension_and_padding() {
        let packet = rtp(96, 65535, 90_000, true, 3, b"frame", 4);
        let r = parse_rtp(&packet).expect("valid");
        assert_eq!((r.pt, r.seq, r.timestamp, r.marker), (96, 65535, 90_000, true));
        assert_eq!(&packet[r.payload], b"frame");
        // Not RTP version 2, or padding longer than the packet: refused.
        assert!(parse_rtp(&[0x40; 20]).is_none());
        let mut bad = rtp(96, 1, 1, false, 0, b"x", 0);
        bad[0] |= 0x20;
        *bad.last_mut().expect("a byte") = 200;
        assert!(parse_rtp(&bad).is_none());
    }

    #[test]
    fn the_scenario_s_jitter_buffer_settings_reach_rtpjitterbuffer_and_others_keep_gstreamer_s() {
        gst::init().expect("GStreamer");
        let make = || gst::ElementFactory::make("rtpjitterbuffer").build().expect("rtpjitterbuffer");
        let buffer = make();
        let settings =
            JitterBuffer { rtx_next_seqnum: Some(false), rtx_min_delay: Some(Duration::from_millis(20)) };
        apply_jitter_buffer(&buffer, &settings);
        assert!(!buffer.property::<bool>("rtx-next-seqnum"));
        assert_eq!(buffer.property::<u32>("rtx-min-delay"), 20);
        let untouched = make();
        apply_jitter_buffer(&untouched, &JitterBuffer::default());
        assert!(untouched.property::<bool>("rtx-next-seqnum"));
        assert_eq!(untouched.property::<u32>("rtx-min-delay"), 0);
    }

    #[test]
    fn rtcp_is_told_from_rtp_by_its_packet_type() {
        assert!(is_rtcp(&[0x80, 200, 0, 6]));
        assert!(is_rtcp(&[0x8F, 205, 0, 4]));
        assert!(!is_rtcp(&rtp(96, 1, 1, true, 0, b"x", 0)));
        assert!(!is_rtcp(&rtp(111, 1, 1, false, 0, b"x", 0)));
    }

    #[test]
    fn a_vp8_payload_says_where_its_frame_starts_and_whether_it_is_a_key_frame() {
        let descriptor = |start: bool, picture_id: u16| {
            Vp8DescriptorRepr {
                non_reference: false,
                start_of_partition: start,
                partition: 0,
                picture_id: Some(picture_id),
            }
            .to_bytes()
            .expect("descriptor")
        };
        // RFC 7741 §4.3: the P bit (bit 0 of the frame's first byte) is 0 in a key frame.
        let key = [descriptor(true, 300), vec![0x10, 0x02, 0x00]].concat();
        let delta = [descriptor(true, 301), vec![0x11, 0x02, 0x00]].concat();
        let middle = [descriptor(false, 301), vec![0x10, 0x02, 0x00]].concat();
        assert_eq!(frame_flags(Codec::Vp8, &key), Some((true, true, Some(300))));
        assert_eq!(frame_flags(Codec::Vp8, &delta), Some((true, false, Some(301))));
        // A packet after the frame's first carries no payload header: neither a start nor a key.
        assert_eq!(frame_flags(Codec::Vp8, &middle), Some((false, false, Some(301))));
    }

    #[test]
    fn an_h264_payload_starts_its_frame_at_a_parameter_set_or_its_first_slice() {
        // Single NAL units (RFC 6184 §5.6): SPS (7) starts a key frame; a non-IDR slice (1) whose
        // first_mb_in_slice is 0 (ue(v) "1") starts a delta frame, one that is not does not.
        assert_eq!(frame_flags(Codec::H264, &[0x67, 0x42]), Some((true, true, None)));
        assert_eq!(frame_flags(Codec::H264, &[0x68, 0xCE]), Some((false, true, None)));
        assert_eq!(frame_flags(Codec::H264, &[0x41, 0x9A]), Some((true, false, None)));
        assert_eq!(frame_flags(Codec::H264, &[0x41, 0x3A]), Some((false, false, None)));
        // An IDR slice follows its SPS and PPS: part of a key frame, not its start.
        assert_eq!(frame_flags(Codec::H264, &[0x65, 0x88]), Some((false, true, None)));
        // FU-A (§5.8): the start bit and the fragment's type; a later fragment starts nothing.
        assert_eq!(frame_flags(Codec::H264, &[0x7C, 0x81, 0x9A]), Some((true, false, None)));
        assert_eq!(frame_flags(Codec::H264, &[0x7C, 0x01, 0x9A]), Some((false, false, None)));
        assert_eq!(frame_flags(Codec::H264, &[0x7C, 0x45, 0x00]), Some((false, true, None)));
        // STAP-A (§5.7.1) by its first NAL unit, here an SPS.
        assert_eq!(frame_flags(Codec::H264, &[0x78, 0x00, 0x02, 0x67, 0x42]), Some((true, true, None)));
        assert_eq!(frame_flags(Codec::H264, &[]), None);
    }

    #[test]
    fn a_compound_rtcp_packet_gives_one_feedback_row_per_message_with_its_size() {
        let rr = ReceiverReportRepr {
            ssrc: 7,
            blocks: vec![ReportBlock {
                ssrc: 9,
                fraction_lost: 64,
                cumulative_lost: 3,
                extended_highest_seq: 100,
                jitter: 0,
                lsr: 0,
                dlsr: 0,
            }],
        }
        .to_bytes()
        .expect("RR");
        let nack =
            NackRepr { sender_ssrc: 7, media_ssrc: 9, lost: vec![10, 11, 12] }.to_bytes().expect("NACK");
        let pli = PliRepr { sender_ssrc: 7, media_ssrc: 9 }.to_bytes().expect("PLI");
        let rows = feedback_rows(&[rr.clone(), nack.clone(), pli.clone()].concat());
        let got: Vec<_> =
            rows.iter().map(|r| (r.kind, r.size, r.fraction_lost, r.packets_reported, r.rtt_us)).collect();
        assert_eq!(
            got,
            [
                (1, rr.len(), Some(0.25), None, None),
                (4, nack.len(), None, Some(3), None),
                (5, pli.len(), None, None, None),
            ]
        );
        // A truncated packet ends the walk; what came before it stays.
        assert_eq!(feedback_rows(&[rr.clone(), pli[..6].to_vec()].concat()).len(), 1);
    }

    #[test]
    fn the_round_trip_is_read_against_the_wall_clock() {
        // An SR sent 30 ms ago, held 10 ms at the receiver: 20 ms there and back.
        let lsr = ntp::compact(wall_clock_ntp64(sys::realtime_ns() - 30_000_000));
        let rtt = rtt_now(lsr, ntp::duration_to_compact(Duration::from_millis(10))).expect("an RTT");
        assert!((19_000..=25_000).contains(&rtt), "{rtt} µs");
        assert_eq!(rtt_now(0, 0), None);
    }
}
