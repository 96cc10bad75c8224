"""Real Chromium peers in a testbed's namespaces (issue 15, first part): one headless browser per
participant, driven over the DevTools protocol (`rtcbench.testbed.devtools`), with a fake camera
that plays a noise clip made at set-up, and calls signalled locally: the offer and answer go from
page to page through this process, with every ICE candidate gathered first (no signalling server,
no STUN: the peers reach each other's host addresses through the relay).

    with testbed.build(variant) as bed:
        relay = testbed.relay.start(bed, variant, seed=1, out_dir=work / "relay")
        relay.go()
        with browser.Peer.start(bed, "A", work / "A", clip) as a, browser.Peer.start(bed, "B", ...) as b:
            call = browser.connect(a, b, VideoSettings(max_bitrate_bps=2_000_000))
            samples = browser.sample(call, seconds=30)     # getStats() and CPU/memory, per side

Inside each page `getStats()` runs every 500 ms (`SAMPLE_INTERVAL_S`); the samples are collected
as the call goes, so memory does not grow with its length. Each browser's CPU time and memory
(all its processes) are read from /proc as often. Every step has a time limit: a
browser that crashes or never connects ends with a `BrowserError` naming the peer and the step.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rtcbench.testbed import devtools
from rtcbench.testbed.netns import Testbed, TestbedError

__all__ = [
    "SAMPLE_INTERVAL_S",
    "BrowserError",
    "Call",
    "Peer",
    "Samples",
    "Usage",
    "VideoSettings",
    "connect",
    "noise_clip",
    "sample",
]

SAMPLE_INTERVAL_S = 0.5
"""How often each page reads `getStats()`."""
CONNECT_TIMEOUT_S = 20.0
"""How long signalling and ICE may take before the call counts as failed."""
STEP_TIMEOUT_S = 20.0
"""How long one step in a page (a DevTools command, an awaited promise) may take."""

_FLAGS = (
    "--headless",
    "--no-sandbox",  # as root, where Chromium's sandbox cannot start
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--use-fake-ui-for-media-stream",
    "--use-fake-device-for-media-stream",
    "--autoplay-policy=no-user-gesture-required",
    # A headless page is a background page: its timers must not be throttled.
    "--disable-background-timer-throttling",
    "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows",
    # Host candidates as addresses, not mDNS names, which nothing resolves in a testbed.
    "--disable-features=WebRtcHideLocalIpsWithMdns",
)

_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>rtcbench peer</title></head>
<body><video id="remote" autoplay muted playsinline></video></body></html>
"""

_PEER_JS = """
window.rtcbench = (() => {
  const S = {pc: null, samples: [], t: {}, timer: null, video: null};
  const now = () => performance.timeOrigin + performance.now();
  const gathered = pc => new Promise(done => {
    if (pc.iceGatheringState === 'complete') return done();
    pc.addEventListener('icegatheringstatechange', () => {
      if (pc.iceGatheringState === 'complete') done();
    });
  });
  const KEPT = ['outbound-rtp', 'inbound-rtp', 'remote-inbound-rtp', 'candidate-pair'];
  return {
    init() {
      S.pc = new RTCPeerConnection({iceServers: []});
      S.pc.addEventListener('iceconnectionstatechange', () => {
        const state = S.pc.iceConnectionState;
        if ((state === 'connected' || state === 'completed') && !S.t.connected) S.t.connected = now();
        if (state === 'failed') S.t.failed = now();
      });
      const remote = document.getElementById('remote');
      remote.addEventListener('loadeddata', () => { if (!S.t.firstFrame) S.t.firstFrame = now(); });
      S.pc.addEventListener('track', e => {
        remote.srcObject = e.streams[0] || new MediaStream([e.track]);
        remote.play().catch(() => {});
      });
      return true;
    },
    async offer(video) {
      const stream = await navigator.mediaDevices.getUserMedia({
        video: {width: video.width, height: video.height, frameRate: video.fps}, audio: false});
      const track = stream.getVideoTracks()[0];
      const tx = S.pc.addTransceiver(track, {direction: 'sendonly', streams: [stream]});
      const codecs = RTCRtpSender.getCapabilities('video').codecs;
      tx.setCodecPreferences([
        ...codecs.filter(c => c.mimeType === 'video/' + video.codec),
        ...codecs.filter(c => ['video/rtx', 'video/red', 'video/ulpfec'].includes(c.mimeType))]);
      S.video = tx.sender;
      S.t.offer = now();
      await S.pc.setLocalDescription(await S.pc.createOffer());
      await gathered(S.pc);
      return S.pc.localDescription.sdp;
    },
    async answer(sdp) {
      S.t.offer = now();
      await S.pc.setRemoteDescription({type: 'offer', sdp});
      await S.pc.setLocalDescription(await S.pc.createAnswer());
      await gathered(S.pc);
      return S.pc.localDescription.sdp;
    },
    async accept(sdp, maxBitrate) {
      await S.pc.setRemoteDescription({type: 'answer', sdp});
      if (maxBitrate) {
        const p = S.video.getParameters();
        p.encodings[0].maxBitrate = maxBitrate;
        await S.video.setParameters(p);
      }
      return true;
    },
    start(intervalMs) {
      const take = async () => {
        const report = await S.pc.getStats();
        const kept = [];
        report.forEach(s => { if (KEPT.includes(s.type)) kept.push(s); });
        S.samples.push({t: now(), stats: kept});
      };
      take();
      S.timer = setInterval(take, intervalMs);
      return true;
    },
    take() { const out = S.samples; S.samples = []; return out; },
    times() { return Object.assign({ice: S.pc.iceConnectionState}, S.t); },
    close() { clearInterval(S.timer); S.pc.close(); return true; },
  };
})();
"""


class BrowserError(TestbedError):
    """A browser peer failed: it did not start, a step in its page failed, or its call did not
    connect in time (one line naming the peer and the step)."""


def noise_clip(
    path: Path, *, width: int, height: int, fps: int, seconds: float = 2.0, seed: int = 1, amplitude: int = 24
) -> Path:
    """Writes a Y4M clip (I420) for Chromium's fake camera (`--use-file-for-fake-video-capture`,
    which loops it): a luma gradient that moves a pixel per frame under fresh noise of
    ±`amplitude` levels, on flat chroma. The noise is new in every frame, so motion search finds
    nothing to reuse and the encoder spends whatever rate it is given, as in front of a busy
    scene; at a low rate, quantisation removes it, so the encoder can also stay at its target
    without dropping frames (full-range noise could not be coded at 1 Mbit/s, and the encoder
    dropped most frames). The clip is a function of its arguments (a seeded generator)."""
    if width % 2 or height % 2 or width <= 0 or height <= 0:
        raise ValueError(f"a clip's width and height must be even and positive, not {width}x{height}")
    frames = max(1, round(seconds * fps))
    rng = np.random.default_rng(seed)
    ramp = (np.arange(width + frames) * (160 / width)).astype(np.int16) % 160 + 48
    chroma = np.full(width * height // 2, 128, dtype=np.uint8).tobytes()
    partial = path.with_name(path.name + ".partial")
    with partial.open("wb") as out:
        out.write(f"YUV4MPEG2 W{width} H{height} F{fps}:1 Ip A1:1 C420jpeg\n".encode())
        for k in range(frames):
            noise = rng.integers(-amplitude, amplitude + 1, (height, width), dtype=np.int16)
            luma = np.clip(ramp[k : k + width][np.newaxis, :] + noise, 0, 255).astype(np.uint8)
            out.write(b"FRAME\n")
            out.write(luma.tobytes())
            out.write(chroma)
    partial.replace(path)
    return path


@dataclass(frozen=True)
class VideoSettings:
    """What the sending page asks of its camera and encoder."""

    width: int = 640
    height: int = 360
    fps: int = 30
    codec: str = "VP8"
    max_bitrate_bps: int | None = None
    """The encoding's `maxBitrate` (RTCRtpSender.setParameters); None: the browser's default."""


@dataclass
class Peer:
    """One headless Chromium in a node's namespace, with one page that holds the call."""

    node: str
    browser: devtools.Browser
    session: str

    @classmethod
    @contextlib.contextmanager
    def start(cls, bed: Testbed, node: str, work: Path, clip: Path | None = None) -> Iterator[Peer]:
        """Starts the browser in `node`'s namespace with its profile and page under `work`, and
        `clip` as its camera; closes it (killing it if need be) when the block ends."""
        work.mkdir(parents=True, exist_ok=True)
        page = work / "peer.html"
        page.write_text(_PAGE)
        flags = [*_FLAGS, f"--user-data-dir={work / 'profile'}"]
        if clip is not None:
            flags.append(f"--use-file-for-fake-video-capture={clip}")
        log = (work / "chromium.log").open("wb")
        try:
            browser = devtools.launch(
                [*flags, "about:blank"], popen=lambda args, **kw: bed.popen(node, args, **kw), stderr=log
            )
        except FileNotFoundError as e:
            log.close()
            raise BrowserError(f"peer {node}: {e}") from None
        try:
            peer = cls(node, browser, "")
            peer.session = peer._open(page)
            yield peer
        finally:
            browser.close()
            log.close()

    def _open(self, page: Path) -> str:
        d = self.browser.devtools
        try:
            target = d.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            session: str = d.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            d.send("Page.enable", session=session)
            d.send("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
            d.wait_for("Page.loadEventFired", timeout_s=STEP_TIMEOUT_S)
        except (ConnectionError, TimeoutError, devtools.DevToolsError) as e:
            raise BrowserError(f"peer {self.node}: the page did not open: {e}") from None
        self.session = session
        self.evaluate(_PEER_JS, "load the peer script")
        self.evaluate("rtcbench.init()", "create the peer connection")
        return session

    def evaluate(self, expression: str, step: str, timeout_s: float = STEP_TIMEOUT_S) -> Any:
        """Runs `expression` in the page, awaiting a promise, and returns its value (JSON)."""
        params = {"expression": expression, "awaitPromise": True, "returnByValue": True}
        try:
            reply = self.browser.devtools.send(
                "Runtime.evaluate", params, session=self.session, timeout_s=timeout_s
            )
        except (ConnectionError, TimeoutError, devtools.DevToolsError) as e:
            raise BrowserError(f"peer {self.node}: {step}: {e}") from None
        if "exceptionDetails" in reply:
            details = reply["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text", "an exception")
            raise BrowserError(f"peer {self.node}: {step}: {str(text).splitlines()[0]}")
        return reply.get("result", {}).get("value")


@dataclass
class Call:
    """A connected call from `sender` to `receiver`, and when its set-up steps happened (seconds
    on the pages' clock, Unix time)."""

    sender: Peer
    receiver: Peer
    times: dict[str, dict[str, Any]] = field(default_factory=dict)

    def setup_s(self) -> dict[str, float | None]:
        """Set-up time from the offer: to ICE connected (at the sender) and to the first decoded
        frame at the receiver (the remote video's first frame; None if it never came)."""
        tx, rx = self.times.get("sender", {}), self.times.get("receiver", {})
        offer = tx.get("offer")
        if offer is None:
            return {"connected": None, "first_frame": None}
        connected, first = tx.get("connected"), rx.get("firstFrame")
        return {
            "connected": None if connected is None else (connected - offer) / 1000.0,
            "first_frame": None if first is None else (first - offer) / 1000.0,
        }


def connect(sender: Peer, receiver: Peer, video: VideoSettings, timeout_s: float = CONNECT_TIMEOUT_S) -> Call:
    """Signals a call locally (offer, answer, each with every candidate) and waits until ICE has
    connected at both ends. Raises `BrowserError` if it does not within `timeout_s`."""
    settings = json.dumps(
        {"width": video.width, "height": video.height, "fps": video.fps, "codec": video.codec}
    )
    offer = sender.evaluate(f"rtcbench.offer({settings})", "create the offer")
    answer = receiver.evaluate(f"rtcbench.answer({json.dumps(offer)})", "answer the offer")
    max_bitrate = json.dumps(video.max_bitrate_bps)
    sender.evaluate(f"rtcbench.accept({json.dumps(answer)}, {max_bitrate})", "accept the answer")
    call = Call(sender, receiver)
    deadline = time.monotonic() + timeout_s
    while True:
        call.times = {
            "sender": sender.evaluate("rtcbench.times()", "read the call's state"),
            "receiver": receiver.evaluate("rtcbench.times()", "read the call's state"),
        }
        states = {side: t.get("ice") for side, t in call.times.items()}
        if all(s in ("connected", "completed") for s in states.values()):
            return call
        if "failed" in states.values() or time.monotonic() > deadline:
            raise BrowserError(
                f"call {sender.node} → {receiver.node}: ICE did not connect within {timeout_s:g} s "
                f"(sender {states['sender']}, receiver {states['receiver']})"
            )
        time.sleep(0.05)


@dataclass(frozen=True)
class Usage:
    """What one browser's processes (the browser, its renderers, GPU and utility processes: every
    process of its session) had used at `t` (seconds, `time.monotonic`)."""

    t: float
    cpu_s: float
    """User and system CPU time, cumulative, with that of children already reaped."""
    pss_bytes: int
    """Proportional set size: resident memory, each shared page divided among its sharers."""
    processes: int


def usage(session: int) -> Usage:
    """The CPU time and memory of every process in session `session` (a browser started by
    `devtools.launch` leads its own), from /proc. Processes that end while being read are
    skipped."""
    ticks = os.sysconf("SC_CLK_TCK")
    cpu, pss, count = 0, 0, 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[3]) != session:
                continue
            rollup = Path(entry.path, "smaps_rollup").read_text()
        except (OSError, ValueError, IndexError):
            continue
        cpu += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
        pss += next((int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:")), 0)
        count += 1
    return Usage(time.monotonic(), cpu / ticks, pss * 1024, count)


@dataclass
class Samples:
    """What a call measured: per side (`sender`, `receiver`), the pages' `getStats()` samples
    (each: `t`, Unix ms, and `stats`, the reports kept) and the browsers' `Usage`."""

    stats: dict[str, list[dict[str, Any]]]
    usage: dict[str, list[Usage]]


def sample(call: Call, seconds: float, collect_every_s: float = 5.0) -> Samples:
    """Runs the call for `seconds` with `getStats()` sampled in both pages and each browser's
    usage read every `SAMPLE_INTERVAL_S`, collecting the pages' samples every `collect_every_s`.
    Set-up times are refreshed at the end."""
    peers = {"sender": call.sender, "receiver": call.receiver}
    for peer in peers.values():
        peer.evaluate(f"rtcbench.start({round(SAMPLE_INTERVAL_S * 1000)})", "start sampling")
    out = Samples({side: [] for side in peers}, {side: [] for side in peers})
    start = time.monotonic()
    end, collect = start + seconds, start + collect_every_s
    tick = start
    while True:
        for side, peer in peers.items():
            out.usage[side].append(usage(peer.browser.process.pid))
        now = time.monotonic()
        if now >= collect or now >= end:
            collect += collect_every_s
            for side, peer in peers.items():
                out.stats[side].extend(peer.evaluate("rtcbench.take()", "collect the samples"))
        if now >= end:
            break
        tick += SAMPLE_INTERVAL_S
        time.sleep(max(0.0, min(tick, end) - time.monotonic()))
    for side, peer in peers.items():
        call.times[side] = peer.evaluate("rtcbench.times()", "read the call's state")
        peer.evaluate("rtcbench.close()", "end the call")
    return out
