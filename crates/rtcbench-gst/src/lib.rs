//! The GStreamer stack's real encoder (docs/gstreamer.md, ADR 0008): a GStreamer pipeline that
//! takes a live picture at the call's camera resolution and frame rate (a Y4M clip played by
//! [`clip::ClipCamera`], the browsers' noise clip; or a `videotestsrc` pattern, `snow` being
//! the white noise of Sjölund and Kevo 2022), encodes it with `vp8enc` (libvpx) or `x264enc`
//! and hands each frame to the media agent through an `appsink`. The agent's sender
//! (`rtcbench-rtp`) packetises, paces and sends the real frame sizes, and its controller sets
//! the encoder's target bitrate.
//!
//! ```text
//! appsrc (clip) | videotestsrc → caps → queue (1 frame, leaky) → vp8enc | x264enc → appsink
//!        │ counted                              │ counted                 └ size, keyframe, pts
//! ```
//!
//! With [`EncoderConfig::scale`] (the call's `video.degradation = "maintain-framerate"`) a
//! [`Scaler`] sits between the queue and the encoder: libwebrtc's resolution ladder, as the model's
//! encoder follows it, applied to the real picture (`videoscale ! capsfilter`).
//!
//! The leaky one-frame queue is the camera: a live source does not wait for a slow encoder, so a
//! frame the encoder is not ready for is lost before it. The counts before and after the queue,
//! the encoding latency (capture to appsink) and the process's CPU time say whether the encoder
//! kept up ([`RealEncoder::finish`]'s record).
//!
//! The pipeline's clock is GStreamer's system clock on CLOCK_MONOTONIC, the run clock's, so a
//! frame's capture instant is the pipeline's base time plus its running time.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use gstreamer as gst;
use gstreamer::prelude::*;
use gstreamer_app as gst_app;
use gstreamer_video as gst_video;

use rtcbench_live::media::{Codec, EncoderConfig, Picture, RealEncoder};
use rtcbench_live::process::{Failure, RunClock};
use rtcbench_live::stats::Lateness;
use rtcbench_live::sys;
use rtcbench_media::encoder::EncodedFrame;
use rtcbench_media::resolution::ResolutionLadder;
use rtcbench_media::video::VideoConfig;
use rtcbench_units::{Bitrate, DataSize, Instant};

mod clip;
pub mod rtp;
use clip::ClipCamera;

/// libvpx's VP8 settings for real-time video as libwebrtc's `LibvpxVp8Encoder` sets them
/// (deadline "realtime", CBR, no lagged frames, rate-control buffer 500/600/1000 ms, undershoot
/// 100 %, overshoot 15 %, frame dropping at 30 % buffer, quantizer 2-56, the intra-frame cap
/// 0.5 × optimal buffer × fps / 10, key frames only on request or every 3000 frames, speed -6
/// as for x86 at this size). The values are facts of libwebrtc's encoder, checked in its source.
const VP8_SETTINGS: &str = "deadline=1 cpu-used=-6 end-usage=cbr lag-in-frames=0 \
     buffer-initial-size=500 buffer-optimal-size=600 buffer-size=1000 undershoot=100 overshoot=15 \
     dropframe-threshold=30 min-quantizer=2 max-quantizer=56 keyframe-max-dist=3000 \
     error-resilient=default";
/// x264 for real-time video: no lookahead or B-frames (`zerolatency`), the fastest preset.
const H264_SETTINGS: &str = "tune=zerolatency speed-preset=ultrafast key-int-max=3000 \
     vbv-buf-capacity=600";
/// Encoding latencies are counted in 1 ms bins up to this (a fixed-size histogram: memory does
/// not grow with the run's length).
const LATENCY_BINS_MS: usize = 1000;

/// Builds the GStreamer encoder for a call (the agent's `EncoderFactory`).
pub fn build(cfg: &EncoderConfig, video: &VideoConfig) -> Result<Box<dyn RealEncoder>, Failure> {
    GstEncoder::new(cfg, video).map(|e| Box::new(e) as Box<dyn RealEncoder>)
}

/// An encoded frame as the appsink's thread saw it.
struct Sample {
    /// The frame's running time: its capture instant less the pipeline's base time.
    running_ns: u64,
    ready_ns: i128,
    bytes: usize,
    keyframe: bool,
    /// The encoded picture's size, from the encoder's caps.
    size: Option<(u16, u16)>,
}

/// The picture's size that `caps` name.
pub(crate) fn caps_size(caps: &gst::CapsRef) -> Option<(u16, u16)> {
    let s = caps.structure(0)?;
    let dim = |field: &str| s.get::<i32>(field).ok().and_then(|v| u16::try_from(v).ok());
    Some((dim("width")?, dim("height")?))
}

/// Buffers that crossed a pad, counted by a probe on the pipeline's threads.
#[derive(Clone, Default)]
pub(crate) struct PadCount(Arc<AtomicU64>);

impl PadCount {
    pub(crate) fn attach(&self, element: &gst::Element, pad: &str) -> Result<(), Failure> {
        let pad = element.static_pad(pad).ok_or_else(|| Failure::Config(format!("encoder: no {pad} pad")))?;
        let count = Arc::clone(&self.0);
        pad.add_probe(gst::PadProbeType::BUFFER, move |_, _| {
            count.fetch_add(1, Ordering::Relaxed);
            gst::PadProbeReturn::Ok
        });
        Ok(())
    }

    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// How late the picture delivered each frame against its instant on the frame-rate grid: the
/// clip's camera thread against time zero plus k frame times ([`ClipCamera`]), `videotestsrc`
/// against its frame's timestamp (a live source pushes each frame at its instant in running
/// time). Both run at normal priority, as an application's camera and encoder would, so a loaded
/// machine makes them late; the run's validity holds this to a goal (`rtcbench.testbed.timing`).
#[derive(Clone, Default)]
pub(crate) struct CameraTiming(Arc<Mutex<Lateness>>);

impl CameraTiming {
    pub(crate) fn record(&self, late_ns: i128) {
        self.0.lock().expect("camera timing lock").record(late_ns);
    }

    /// Times a live `videotestsrc`'s frames at its src pad.
    pub(crate) fn attach_live_source(&self, source: &gst::Element) -> Result<(), Failure> {
        let pad = source.static_pad("src").ok_or_else(|| Failure::Config("encoder: no src pad".into()))?;
        let timing = self.clone();
        pad.add_probe(gst::PadProbeType::BUFFER, move |pad, info| {
            let pts = info.buffer().and_then(|b| b.pts());
            if let Some((pts, base)) = pts.zip(pad.parent_element().and_then(|e| e.base_time())) {
                timing.record(sys::monotonic_ns() - i128::from(base.nseconds() + pts.nseconds()));
            }
            gst::PadProbeReturn::Ok
        });
        Ok(())
    }

    /// For the encoder's record (`camera`): count, p50, p99 and max in µs.
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::json!(self.0.lock().expect("camera timing lock").deadlines())
    }
}

/// Encoding latencies (capture to encoded), in 1 ms bins up to [`LATENCY_BINS_MS`].
pub(crate) struct Latencies(Vec<u64>);

impl Latencies {
    pub(crate) fn new() -> Self {
        Self(vec![0; LATENCY_BINS_MS + 1])
    }

    pub(crate) fn add(&mut self, capture_ns: i128, ready_ns: i128) {
        let ms = ((ready_ns - capture_ns).max(0) / 1_000_000) as usize;
        self.0[ms.min(LATENCY_BINS_MS)] += 1;
    }

    fn percentile_ms(&self, q: f64) -> Option<u64> {
        let total: u64 = self.0.iter().sum();
        if total == 0 {
            return None;
        }
        let rank = ((q * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        self.0
            .iter()
            .position(|&n| {
                seen += n;
                seen >= rank
            })
            .map(|i| i as u64)
    }

    /// p50, p95 and the largest, in ms.
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "p50": self.percentile_ms(0.5),
            "p95": self.percentile_ms(0.95),
            "max": self.0.iter().rposition(|&n| n > 0),
        })
    }
}

/// libwebrtc's resolution ladder in front of a real encoder (`EncoderConfig::scale`): the rung
/// the model's encoder would send at (`rtcbench_media::resolution`, libwebrtc's VP8 singlecast
/// bitrate limits, down at once, up after 2 s at 110 % of the next rung's start bitrate), put on
/// the picture by `videoscale` and a caps filter between the camera's queue and the encoder.
///
/// The ladder is read at every frame that enters `videoscale`, with the last target the encoder
/// was given. A new rung sets the filter's caps there, so `videoscale` renegotiates before it
/// scales that frame and the encoder starts again at the new size with a key frame (VP8 carries
/// its frame size only in key frames, RFC 6386 §9.1).
pub(crate) struct Scaler {
    ladder: ResolutionLadder,
    camera: (u16, u16),
    target: Bitrate,
    size: (u16, u16),
    filter: gst::Element,
    /// Changes of size between frames (not the first frame's, if its target moved the rung).
    changes: u64,
    framed: bool,
}

/// `videoscale` and its caps filter in a pipeline description, starting at `size`. The multi-tap
/// bilinear filter averages every source pixel under a destination pixel, as libyuv's box filter
/// does when libwebrtc scales a camera's frame down.
fn scaler_description((width, height): (u16, u16)) -> String {
    format!("videoscale name=scaler method=bilinear2 ! capsfilter name=scale caps=video/x-raw,width={width},height={height}")
}

/// The size a `camera` picture is encoded at on the ladder's `rung`: the camera's own at the top
/// rung (the largest the camera allows), otherwise the camera's picture scaled to the rung's pixel
/// count with its aspect kept, in even dimensions (I420 halves both for chroma).
pub(crate) fn rung_size(camera: (u16, u16), rung: (u16, u16), top: bool) -> (u16, u16) {
    if top {
        return camera;
    }
    let pixels = |(w, h): (u16, u16)| f64::from(w) * f64::from(h);
    let factor = (pixels(rung) / pixels(camera)).sqrt().min(1.0);
    let even = |x: u16| ((f64::from(x) * factor / 2.0).round() as u16 * 2).max(2);
    (even(camera.0), even(camera.1))
}

impl Scaler {
    /// The ladder for a `camera` whose video starts at `start`, and the size it starts at.
    fn ladder(camera: (u16, u16), start: Bitrate) -> (ResolutionLadder, (u16, u16)) {
        let ladder = ResolutionLadder::new(camera.0, camera.1, start);
        let mut first = ladder.clone();
        let rung = first.on_frame(Instant::ZERO, start);
        (ladder, rung_size(camera, rung, first.at_top()))
    }

    /// The scaler of a pipeline built with [`head`] for `cfg` and `camera` (`None` unless
    /// `cfg.scale`): reads the ladder at each frame that reaches `videoscale`.
    pub(crate) fn attach(
        pipeline: &gst::Pipeline,
        cfg: &EncoderConfig,
        camera: Camera,
    ) -> Result<Option<Arc<Mutex<Self>>>, Failure> {
        if !cfg.scale {
            return Ok(None);
        }
        let by_name = |name: &str| {
            pipeline.by_name(name).ok_or_else(|| Failure::Config(format!("encoder: no element {name}")))
        };
        let (ladder, size) = Self::ladder(camera.size, camera.start);
        let scaler = Arc::new(Mutex::new(Self {
            ladder,
            camera: camera.size,
            target: camera.start,
            size,
            filter: by_name("scale")?,
            changes: 0,
            framed: false,
        }));
        let pad = by_name("scaler")?
            .static_pad("sink")
            .ok_or_else(|| Failure::Config("encoder: no scaler pad".into()))?;
        let each = Arc::clone(&scaler);
        pad.add_probe(gst::PadProbeType::BUFFER, move |_, _| {
            let now = Instant::from_micros((sys::monotonic_ns() / 1000) as i64);
            each.lock().expect("scaler lock").on_frame(now);
            gst::PadProbeReturn::Ok
        });
        Ok(Some(scaler))
    }

    /// The encoder's new target, which the next frames' rung follows.
    pub(crate) fn set_target(&mut self, target: Bitrate) {
        self.target = target;
    }

    fn on_frame(&mut self, now: Instant) {
        let rung = self.ladder.on_frame(now, self.target);
        let size = rung_size(self.camera, rung, self.ladder.at_top());
        if size != self.size {
            self.size = size;
            self.changes += u64::from(self.framed);
            let caps = gst::Caps::builder("video/x-raw")
                .field("width", i32::from(size.0))
                .field("height", i32::from(size.1))
                .build();
            self.filter.set_property("caps", caps);
        }
        self.framed = true;
    }

    /// What it did, for the encoder's record: how often the size changed from one frame to the
    /// next, and the last size.
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::json!({"changes": self.changes, "width": self.size.0, "height": self.size.1})
    }
}

/// A running pipeline and what it reported so far.
pub struct GstEncoder {
    pipeline: gst::Pipeline,
    encoder: gst::Element,
    sink: gst_app::AppSink,
    codec: Codec,
    camera: (u16, u16),
    fps: f64,
    samples: mpsc::Receiver<Sample>,
    wake: UnixStream,
    clip_camera: Option<ClipCamera>,
    camera_timing: CameraTiming,
    scaler: Option<Arc<Mutex<Scaler>>>,
    /// Frames the picture drew.
    source_frames: PadCount,
    /// Frames that reached the encoder (the rest were lost in the leaky queue).
    encoder_input_frames: PadCount,
    clock: Option<RunClock>,
    cpu_at_start_ns: i128,
    wall_at_start_ns: i128,
    latency_ms: Latencies,
    encoded: u64,
    keyframes: u64,
    bytes: u64,
    targets: u64,
    keyframe_requests: u64,
}

pub(crate) fn gst_failure(what: &str, e: impl std::fmt::Display) -> Failure {
    Failure::Io(format!("GStreamer: {what}"), io::Error::other(e.to_string()))
}

/// The live picture and its encoder, as a `gst-launch` description that ends at the encoded
/// frames (`source ! raw ! queue ! [scaler !] encoder name=enc ! caps`), the source named `src`;
/// and a clip's frames when the picture is one (its camera thread plays them into the `appsrc`).
pub(crate) struct Head {
    pub(crate) description: String,
    pub(crate) clip: Option<Vec<Arc<Vec<u8>>>>,
}

/// A call's camera, and the rate its video starts at (the scaler's first rung).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Camera {
    pub(crate) size: (u16, u16),
    pub(crate) fps: f64,
    pub(crate) start: Bitrate,
}

impl Camera {
    /// The camera of a call's video settings (its start rate within its range).
    pub(crate) fn of(size: (u16, u16), fps: f64, start: Bitrate, min: Bitrate, max: Bitrate) -> Self {
        Self { size, fps, start: start.clamp(min, max) }
    }
}

/// The picture and encoder of `cfg` at the call's camera size and frame rate, scaled in front of
/// the encoder with `cfg.scale` ([`Scaler`]).
pub(crate) fn head(cfg: &EncoderConfig, camera: Camera) -> Result<Head, Failure> {
    let Camera { size: (width, height), fps, .. } = camera;
    let (num, den) = ((fps * 1000.0).round() as i32, 1000);
    let threads = if cfg.threads > 0 { format!(" threads={}", cfg.threads) } else { String::new() };
    let (encoder, caps_out) = match cfg.codec {
        Codec::Vp8 => (format!("vp8enc name=enc {VP8_SETTINGS}{threads}"), "video/x-vp8"),
        Codec::H264 => (
            format!("x264enc name=enc {H264_SETTINGS}{threads}"),
            "video/x-h264,profile=constrained-baseline,stream-format=byte-stream",
        ),
    };
    let raw = format!("video/x-raw,format=I420,width={width},height={height},framerate={num}/{den}");
    let (source, clip) = match &cfg.picture {
        Picture::Pattern(pattern) => (format!("videotestsrc name=src is-live=true pattern={pattern}"), None),
        Picture::Clip(path) => {
            let frames =
                clip::read_y4m(path, width, height).map_err(|e| Failure::Config(format!("encoder: {e}")))?;
            (format!("appsrc name=src is-live=true do-timestamp=true format=time caps={raw}"), Some(frames))
        }
    };
    let scaler = if cfg.scale {
        format!("{} ! ", scaler_description(Scaler::ladder(camera.size, camera.start).1))
    } else {
        String::new()
    };
    let description = format!(
        "{source} ! {raw} ! queue max-size-buffers=1 max-size-bytes=0 max-size-time=0 leaky=downstream \
         ! {scaler}{encoder} ! {caps_out}"
    );
    Ok(Head { description, clip })
}

/// Sets `encoder`'s target rate: `vp8enc`'s `target-bitrate` in bit/s, `x264enc`'s `bitrate` in
/// kbit/s.
pub(crate) fn set_encoder_target(encoder: &gst::Element, codec: Codec, bps: u64) {
    match codec {
        Codec::Vp8 => encoder.set_property("target-bitrate", i32::try_from(bps).unwrap_or(i32::MAX).max(1)),
        Codec::H264 => encoder.set_property("bitrate", u32::try_from(bps / 1000).unwrap_or(u32::MAX).max(1)),
    }
}

/// The first error `pipeline` posted, if any.
pub(crate) fn check_bus(pipeline: &gst::Pipeline) -> Result<(), Failure> {
    let Some(bus) = pipeline.bus() else { return Ok(()) };
    if let Some(msg) = bus.pop_filtered(&[gst::MessageType::Error]) {
        if let gst::MessageView::Error(err) = msg.view() {
            let from = err.src().map(|s| s.path_string().to_string()).unwrap_or_default();
            return Err(gst_failure(&from, err.error()));
        }
    }
    Ok(())
}

impl GstEncoder {
    fn new(cfg: &EncoderConfig, video: &VideoConfig) -> Result<Self, Failure> {
        gst::init().map_err(|e| gst_failure("init", e))?;
        let camera = Camera::of(video.camera, video.fps, video.start_rate, video.min_rate, video.max_rate);
        let Head { description, clip } = head(cfg, camera)?;
        let description = format!("{description} ! appsink name=sink sync=false max-buffers=0 drop=false");
        let pipeline = gst::parse::launch(&description)
            .map_err(|e| Failure::Config(format!("encoder: GStreamer refused the pipeline: {e}")))?
            .downcast::<gst::Pipeline>()
            .map_err(|_| Failure::Config("encoder: not a pipeline".into()))?;
        pipeline.use_clock(Some(&gst::SystemClock::obtain()));
        let by_name = |name: &str| {
            pipeline.by_name(name).ok_or_else(|| Failure::Config(format!("encoder: no element {name}")))
        };
        let (source, encoder, sink) = (by_name("src")?, by_name("enc")?, by_name("sink")?);
        let camera_timing = CameraTiming::default();
        let clip_camera = match clip {
            Some(frames) => {
                let src = source
                    .clone()
                    .downcast::<gst_app::AppSrc>()
                    .map_err(|_| Failure::Config("encoder: no appsrc".into()))?;
                Some(ClipCamera::new(src, frames, video.fps, camera_timing.clone()))
            }
            None => {
                camera_timing.attach_live_source(&source)?;
                None
            }
        };
        let sink =
            sink.downcast::<gst_app::AppSink>().map_err(|_| Failure::Config("encoder: no appsink".into()))?;
        let scaler = Scaler::attach(&pipeline, cfg, camera)?;

        let (source_frames, encoder_input_frames) = (PadCount::default(), PadCount::default());
        source_frames.attach(&source, "src")?;
        encoder_input_frames.attach(&encoder, "sink")?;

        let (wake, wake_writer) = UnixStream::pair().map_err(|e| Failure::Io("socketpair".into(), e))?;
        wake.set_nonblocking(true).map_err(|e| Failure::Io("socketpair".into(), e))?;
        wake_writer.set_nonblocking(true).map_err(|e| Failure::Io("socketpair".into(), e))?;
        let (tx, samples) = mpsc::channel();
        sink.set_callbacks(
            gst_app::AppSinkCallbacks::builder()
                .new_sample(move |sink| {
                    let sample = sink.pull_sample().map_err(|_| gst::FlowError::Eos)?;
                    let ready_ns = sys::monotonic_ns();
                    let buffer = sample.buffer().ok_or(gst::FlowError::Error)?;
                    let s = Sample {
                        // In running time: an encoder may shift its output's timestamps and
                        // segment alike (x264enc by 1000 hours, room for negative DTS).
                        running_ns: sample
                            .segment()
                            .and_then(|s| s.downcast_ref::<gst::format::Time>())
                            .and_then(|s| s.to_running_time(buffer.pts()?))
                            .map_or(0, gst::ClockTime::nseconds),
                        ready_ns,
                        bytes: buffer.size(),
                        keyframe: !buffer.flags().contains(gst::BufferFlags::DELTA_UNIT),
                        size: sample.caps().and_then(caps_size),
                    };
                    tx.send(s).map_err(|_| gst::FlowError::Flushing)?;
                    // A full socket buffer already wakes the agent.
                    let _ = (&wake_writer).write(&[1]);
                    Ok(gst::FlowSuccess::Ok)
                })
                .build(),
        );
        // Paused now, before the agent takes real-time scheduling: the pipeline's threads start
        // here and so run under the normal policy, as an application's encoder would.
        pipeline.set_state(gst::State::Paused).map_err(|e| gst_failure("pausing the pipeline", e))?;
        Ok(Self {
            pipeline,
            encoder,
            sink,
            codec: cfg.codec,
            camera: video.camera,
            fps: video.fps,
            samples,
            wake,
            clip_camera,
            camera_timing,
            scaler,
            source_frames,
            encoder_input_frames,
            clock: None,
            cpu_at_start_ns: 0,
            wall_at_start_ns: 0,
            latency_ms: Latencies::new(),
            encoded: 0,
            keyframes: 0,
            bytes: 0,
            targets: 0,
            keyframe_requests: 0,
        })
    }
}

impl RealEncoder for GstEncoder {
    fn wake_fd(&self) -> RawFd {
        self.wake.as_raw_fd()
    }

    fn start(&mut self, clock: RunClock) -> Result<(), Failure> {
        self.clock = Some(clock);
        self.cpu_at_start_ns = sys::clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID);
        self.wall_at_start_ns = sys::monotonic_ns();
        self.pipeline.set_state(gst::State::Playing).map_err(|e| gst_failure("starting the pipeline", e))?;
        if let Some(camera) = &mut self.clip_camera {
            camera.start();
        }
        Ok(())
    }

    fn drain(&mut self, out: &mut Vec<EncodedFrame>) -> Result<(), Failure> {
        let mut scratch = [0u8; 256];
        while matches!((&self.wake).read(&mut scratch), Ok(n) if n > 0) {}
        check_bus(&self.pipeline)?;
        let (Some(clock), Some(base)) = (self.clock, self.pipeline.base_time()) else { return Ok(()) };
        while let Ok(s) = self.samples.try_recv() {
            let capture_ns = i128::from(base.nseconds()) + i128::from(s.running_ns);
            self.latency_ms.add(capture_ns, s.ready_ns);
            self.encoded += 1;
            self.keyframes += u64::from(s.keyframe);
            self.bytes += s.bytes as u64;
            let (width, height) = s.size.unwrap_or(self.camera);
            out.push(EncodedFrame {
                capture: clock.instant(capture_ns),
                ready: clock.instant(s.ready_ns),
                size: DataSize::bytes(s.bytes as u64),
                keyframe: s.keyframe,
                width,
                height,
            });
        }
        Ok(())
    }

    fn set_target(&mut self, target: Bitrate) {
        self.targets += 1;
        set_encoder_target(&self.encoder, self.codec, target.as_bps());
        if let Some(scaler) = &self.scaler {
            scaler.lock().expect("scaler lock").set_target(target);
        }
    }

    fn force_keyframe(&mut self) {
        self.keyframe_requests += 1;
        let event = gst_video::UpstreamForceKeyUnitEvent::builder().all_headers(true).build();
        self.sink.send_event(event);
    }

    fn finish(&mut self) -> serde_json::Value {
        let cpu_ns = sys::clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID) - self.cpu_at_start_ns;
        let wall_ns = sys::monotonic_ns() - self.wall_at_start_ns;
        if let Some(camera) = &mut self.clip_camera {
            camera.stop();
        }
        let _ = self.pipeline.set_state(gst::State::Null);
        let (major, minor, micro, _) = gst::version();
        let element = self.encoder.factory().map(|f| f.name().to_string()).unwrap_or_default();
        let scaling = self.scaler.as_ref().map(|s| s.lock().expect("scaler lock").json());
        serde_json::json!({
            "scaling": scaling,
            "gstreamer": format!("{major}.{minor}.{micro}"),
            "element": element,
            "width": self.camera.0,
            "height": self.camera.1,
            "fps": self.fps,
            "source_frames": self.source_frames.get(),
            "encoder_input_frames": self.encoder_input_frames.get(),
            "encoded_frames": self.encoded,
            "keyframes": self.keyframes,
            "bytes": self.bytes,
            "targets_applied": self.targets,
            "keyframe_requests": self.keyframe_requests,
            "latency_ms": self.latency_ms.json(),
            "camera": self.camera_timing.json(),
            "cpu_s": cpu_ns as f64 / 1e9,
            "wall_s": wall_ns as f64 / 1e9,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok<T>(result: Result<T, Failure>, what: &str) -> T {
        match result {
            Ok(value) => value,
            Err(Failure::Config(message)) => panic!("{what}: {message}"),
            Err(Failure::Io(doing, e)) => panic!("{what}: {doing}: {e}"),
        }
    }

    #[test]
    fn a_rung_keeps_the_camera_s_aspect_in_even_dimensions() {
        // A 16:9 camera lands on the ladder's own sizes.
        assert_eq!(rung_size((1280, 720), (640, 360), false), (640, 360));
        assert_eq!(rung_size((1280, 720), (480, 270), false), (480, 270));
        assert_eq!(rung_size((1280, 720), (1280, 720), true), (1280, 720));
        // A 4:3 camera keeps 4:3 at the rung's pixel count (640×360 = 230 400 ≈ 554×416), and
        // its top rung is the camera itself, not the largest rung below it.
        assert_eq!(rung_size((640, 480), (640, 360), true), (640, 480));
        assert_eq!(rung_size((640, 480), (480, 270), false), (416, 312));
        // A camera smaller than the rung is not scaled up.
        assert_eq!(rung_size((160, 90), (320, 180), false), (160, 90));
    }

    /// Encodes `pattern` at 640×360 and 30 fps with the ladder in front, starting at 1 Mbit/s and
    /// set to `target` after 10 frames; the sizes of the frames encoded, in order.
    fn encoded_sizes(codec: Codec, target: Bitrate, frames: usize) -> Vec<(u16, u16, bool)> {
        let cfg = EncoderConfig { codec, picture: Picture::Pattern("ball".into()), threads: 1, scale: true };
        let video = VideoConfig {
            camera: (640, 360),
            start_rate: Bitrate::kbps(1000),
            max_rate: Bitrate::kbps(2000),
            ..VideoConfig::default()
        };
        let mut encoder = ok(GstEncoder::new(&cfg, &video), "pipeline");
        encoder.set_target(Bitrate::kbps(1000));
        ok(encoder.start(RunClock { t0_ns: sys::monotonic_ns() }), "start");
        let (mut out, mut sizes) = (Vec::new(), Vec::new());
        let deadline = sys::monotonic_ns() + 20_000_000_000;
        while sizes.len() < frames && sys::monotonic_ns() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
            ok(encoder.drain(&mut out), "drain");
            for f in out.drain(..) {
                sizes.push((f.width, f.height, f.keyframe));
                if sizes.len() == 10 {
                    encoder.set_target(target);
                }
            }
        }
        let record = encoder.finish();
        let changed = u64::from(sizes.windows(2).any(|w| (w[0].0, w[0].1) != (w[1].0, w[1].1)));
        assert_eq!(record["scaling"]["changes"], changed, "{record}");
        sizes
    }

    #[test]
    fn a_falling_target_scales_the_picture_down_and_the_encoder_starts_again_with_a_key_frame() {
        for codec in [Codec::Vp8, Codec::H264] {
            // 250 kbit/s is below 640×360's 300 and above 480×270's 200.
            let sizes = encoded_sizes(codec, Bitrate::kbps(250), 40);
            assert_eq!(sizes.len(), 40, "{codec:?}: {sizes:?}");
            assert_eq!(sizes[..10].iter().map(|&(w, h, _)| (w, h)).collect::<Vec<_>>(), vec![(640, 360); 10]);
            let first = sizes.iter().position(|&(w, _, _)| w == 480).expect("scaled down");
            // The set target reaches the ladder at the next frame into the scaler: a few frames
            // are already past it, in the encoder.
            assert!(first <= 14, "{codec:?}: {sizes:?}");
            assert!(sizes[first].2, "{codec:?}: the first 480×270 frame is a key frame: {sizes:?}");
            assert!(sizes[first..].iter().all(|&(w, h, _)| (w, h) == (480, 270)), "{codec:?}: {sizes:?}");
        }
    }

    #[test]
    fn without_the_ladder_the_camera_s_size_is_encoded_at_every_rate() {
        let cfg = EncoderConfig {
            codec: Codec::Vp8,
            picture: Picture::Pattern("ball".into()),
            threads: 1,
            scale: false,
        };
        let camera = Camera { size: (640, 360), fps: 30.0, start: Bitrate::kbps(150) };
        let plain = ok(head(&cfg, camera), "head");
        assert!(!plain.description.contains("videoscale"), "{}", plain.description);
        let scaled = ok(head(&EncoderConfig { scale: true, ..cfg }, camera), "head");
        // 150 kbit/s, the default start, starts at the ladder's first rung.
        assert!(
            scaled.description.contains("caps=video/x-raw,width=320,height=180"),
            "{}",
            scaled.description
        );
    }
}
