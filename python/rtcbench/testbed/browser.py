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
            samples = browser.sample([call], seconds=30)   # getStats() and CPU/memory, per peer

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
from collections.abc import Iterator, Sequence
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
    "close",
    "connect",
    "mesh",
    "noise_clip",
    "sample",
    "sample_peers",
]

SAMPLE_INTERVAL_S = 0.5
"""How often each page reads `getStats()`."""
CONNECT_TIMEOUT_S = 20.0
"""How long signalling and ICE may take before the call counts as failed."""
STEP_TIMEOUT_S = 20.0
"""How long one step in a page (a DevTools command, an awaited promise) may take."""

_FLAGS = (
    *devtools.HEADLESS_FLAGS,
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
<body></body></html>
"""

# One peer connection per remote participant, keyed by its node name. Set-up times are per
# connection: `offer` (the offer made or received), `connected` (ICE), `firstFrame` (the remote
# video's first frame shown).
_PEER_JS = """
window.rtcbench = (() => {
  const S = {pcs: {}, t: {}, senders: {}, stream: null, samples: [], timer: null,
             config: {iceServers: []}};
  const now = () => performance.timeOrigin + performance.now();
  const gathered = pc => new Promise(done => {
    if (pc.iceGatheringState === 'complete') return done();
    pc.addEventListener('icegatheringstatechange', () => {
      if (pc.iceGatheringState === 'complete') done();
    });
  });
  const camera = async video => {
    if (!S.stream) S.stream = await navigator.mediaDevices.getUserMedia({
      video: {width: video.width, height: video.height, frameRate: video.fps}, audio: false});
    return S.stream.getVideoTracks()[0];
  };
  const prefer = (tx, codec) => {
    const codecs = RTCRtpSender.getCapabilities('video').codecs;
    tx.setCodecPreferences([
      ...codecs.filter(c => c.mimeType === 'video/' + codec),
      ...codecs.filter(c => ['video/rtx', 'video/red', 'video/ulpfec'].includes(c.mimeType))]);
  };
  const open = key => {
    const pc = new RTCPeerConnection(S.config);
    const t = S.t[key] = {};
    pc.addEventListener('iceconnectionstatechange', () => {
      const state = pc.iceConnectionState;
      if ((state === 'connected' || state === 'completed') && !t.connected) t.connected = now();
      if (state === 'failed') t.failed = now();
    });
    pc.addEventListener('track', e => {
      const v = document.createElement('video');
      Object.assign(v, {autoplay: true, muted: true, playsInline: true});
      v.addEventListener('loadeddata', () => { if (!t.firstFrame) t.firstFrame = now(); });
      v.srcObject = new MediaStream([e.track]);
      document.body.appendChild(v);
      v.play().catch(() => {});
    });
    S.pcs[key] = pc;
    return pc;
  };
  const KEPT = ['outbound-rtp', 'inbound-rtp', 'remote-inbound-rtp', 'candidate-pair'];
  return {
    // The RTCConfiguration of connections opened from now on (ICE servers, transport policy).
    configure(config) { S.config = config; return true; },
    // The candidate types of `key`'s selected pair: 'host', 'srflx', 'prflx' or 'relay'.
    async route(key) {
      const report = await S.pcs[key].getStats();
      let pair = null;
      report.forEach(s => {
        if (s.type === 'transport' && s.selectedCandidatePairId) pair = report.get(s.selectedCandidatePairId);
      });
      if (!pair) return null;
      return {local: report.get(pair.localCandidateId).candidateType,
              remote: report.get(pair.remoteCandidateId).candidateType};
    },
    // An offer to `key`: sending our camera if `video` is given (else receiving only).
    async offer(key, video, receive) {
      const pc = open(key);
      if (video) {
        const tx = pc.addTransceiver(await camera(video), {direction: receive ? 'sendrecv' : 'sendonly'});
        prefer(tx, video.codec);
        S.senders[key] = tx.sender;
      } else {
        pc.addTransceiver('video', {direction: 'recvonly'});
      }
      S.t[key].offer = now();
      await pc.setLocalDescription(await pc.createOffer());
      await gathered(pc);
      return pc.localDescription.sdp;
    },
    // The answer to `key`'s offer, sending our camera back if `video` is given.
    async answer(key, sdp, video) {
      const pc = open(key);
      S.t[key].offer = now();
      await pc.setRemoteDescription({type: 'offer', sdp});
      if (video) {
        const tx = pc.getTransceivers()[0];
        await tx.sender.replaceTrack(await camera(video));
        tx.direction = 'sendrecv';
        prefer(tx, video.codec);
        S.senders[key] = tx.sender;
      }
      await pc.setLocalDescription(await pc.createAnswer());
      await gathered(pc);
      return pc.localDescription.sdp;
    },
    async accept(key, sdp) {
      await S.pcs[key].setRemoteDescription({type: 'answer', sdp});
      return true;
    },
    async limit(key, maxBitrate) {
      const sender = S.senders[key];
      if (!sender || !maxBitrate) return false;
      const p = sender.getParameters();
      p.encodings[0].maxBitrate = maxBitrate;
      await sender.setParameters(p);
      return true;
    },
    start(intervalMs) {
      const take = async () => {
        const t = now();
        for (const [key, pc] of Object.entries(S.pcs)) {
          const report = await pc.getStats();
          const kept = [];
          report.forEach(s => { if (KEPT.includes(s.type)) kept.push(s); });
          S.samples.push({t, remote: key, stats: kept});
        }
      };
      take();
      S.timer = setInterval(take, intervalMs);
      return true;
    },
    take() { const out = S.samples; S.samples = []; return out; },
    times(key) { return Object.assign({ice: S.pcs[key].iceConnectionState}, S.t[key]); },
    close() {
      clearInterval(S.timer);
      Object.values(S.pcs).forEach(pc => pc.close());
      return true;
    },
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

    def configure(self, ice_servers: list[dict[str, Any]], *, relay_only: bool = False) -> None:
        """ICE servers (RTCIceServer dictionaries) for the connections this page opens from now
        on; with `relay_only`, only relayed candidates are used (`iceTransportPolicy: "relay"`),
        so every packet goes through a TURN server."""
        config = {"iceServers": ice_servers, "iceTransportPolicy": "relay" if relay_only else "all"}
        self.evaluate(f"rtcbench.configure({json.dumps(config)})", "configure ICE")

    def route(self, remote: str) -> dict[str, str] | None:
        """The candidate types (`host`, `srflx`, `prflx`, `relay`) of the selected pair of this
        page's connection to `remote`, or None before one is selected."""
        route: dict[str, str] | None = self.evaluate(
            f"rtcbench.route({json.dumps(remote)})", "read the route"
        )
        return route


@dataclass
class Call:
    """A connected call between two peers: `offerer` sent the offer, `answerer` the answer; media
    goes one way or both (`connect`). `times` holds, per end (node name), when its connection's
    set-up steps happened (Unix ms on the pages' clock) and its ICE state."""

    offerer: Peer
    answerer: Peer
    times: dict[str, dict[str, Any]] = field(default_factory=dict)

    def refresh(self) -> None:
        """Reads both ends' set-up times and ICE states again."""
        ends = ((self.offerer, self.answerer), (self.answerer, self.offerer))
        self.times = {
            peer.node: peer.evaluate(f"rtcbench.times({json.dumps(other.node)})", "read the call's state")
            for peer, other in ends
        }

    def setup_s(self) -> dict[str, float | None]:
        """Set-up time from the offer: to ICE connected at the offerer, and to the first frame of
        remote video shown at each end that receives (`first_frame` at the answerer,
        `first_frame_back` at the offerer); None for what never happened."""
        tx, rx = self.times.get(self.offerer.node, {}), self.times.get(self.answerer.node, {})
        offer = tx.get("offer")

        def since(t: float | None) -> float | None:
            return None if t is None or offer is None else (t - offer) / 1000.0

        return {
            "connected": since(tx.get("connected")),
            "first_frame": since(rx.get("firstFrame")),
            "first_frame_back": since(tx.get("firstFrame")),
        }


def video_json(video: VideoSettings | None) -> str:
    """`video` as the page's `offer` and `answer` take it (JSON; `null` for no camera)."""
    if video is None:
        return "null"
    return json.dumps({"width": video.width, "height": video.height, "fps": video.fps, "codec": video.codec})


def connect(
    sender: Peer,
    receiver: Peer,
    video: VideoSettings,
    timeout_s: float = CONNECT_TIMEOUT_S,
    *,
    back: VideoSettings | None = None,
) -> Call:
    """Signals a call locally (offer, answer, each with every candidate) in which `sender` sends
    its camera to `receiver` (and, with `back`, `receiver` its own to `sender`, on the same peer
    connection), and waits until ICE has connected at both ends. Raises `BrowserError` if it does
    not within `timeout_s`."""
    to_receiver, to_sender = json.dumps(receiver.node), json.dumps(sender.node)
    receive = json.dumps(back is not None)
    offer = sender.evaluate(
        f"rtcbench.offer({to_receiver}, {video_json(video)}, {receive})", "create the offer"
    )
    answer = receiver.evaluate(
        f"rtcbench.answer({to_sender}, {json.dumps(offer)}, {video_json(back)})", "answer the offer"
    )
    sender.evaluate(f"rtcbench.accept({to_receiver}, {json.dumps(answer)})", "accept the answer")
    sender.evaluate(f"rtcbench.limit({to_receiver}, {json.dumps(video.max_bitrate_bps)})", "set maxBitrate")
    if back is not None:
        receiver.evaluate(
            f"rtcbench.limit({to_sender}, {json.dumps(back.max_bitrate_bps)})", "set maxBitrate"
        )
    call = Call(sender, receiver)
    deadline = time.monotonic() + timeout_s
    while True:
        call.refresh()
        states = {node: t.get("ice") for node, t in call.times.items()}
        if all(s in ("connected", "completed") for s in states.values()):
            return call
        if "failed" in states.values() or time.monotonic() > deadline:
            raise BrowserError(
                f"call {sender.node} → {receiver.node}: ICE did not connect within {timeout_s:g} s "
                f"({sender.node} {states[sender.node]}, {receiver.node} {states[receiver.node]})"
            )
        time.sleep(0.05)


def mesh(peers: Sequence[Peer], video: VideoSettings, timeout_s: float = CONNECT_TIMEOUT_S) -> list[Call]:
    """A mesh call: every pair of `peers` connected, each sending its camera to the other, one
    peer connection per pair (as a mesh call in a browser runs it)."""
    return [connect(a, b, video, timeout_s, back=video) for k, a in enumerate(peers) for b in peers[k + 1 :]]


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
    """What calls measured, per peer (node name): its page's `getStats()` samples (each: `t`,
    Unix ms; `remote`, the peer at the other end of the connection; `stats`, the reports kept)
    and its browser's `Usage`."""

    stats: dict[str, list[dict[str, Any]]]
    usage: dict[str, list[Usage]]

    def of(self, node: str, remote: str) -> list[dict[str, Any]]:
        """`node`'s samples of its connection to `remote`."""
        return [s for s in self.stats[node] if s["remote"] == remote]


def sample_peers(peers: Sequence[Peer], seconds: float, collect_every_s: float = 5.0) -> Samples:
    """Runs whatever `peers` have connected for `seconds`, with `getStats()` sampled in every page
    and each browser's usage read every `SAMPLE_INTERVAL_S`, collecting the pages' samples every
    `collect_every_s`. The pages' connections stay open (`close` ends them)."""
    by_node = {p.node: p for p in peers}
    for peer in by_node.values():
        peer.evaluate(f"rtcbench.start({round(SAMPLE_INTERVAL_S * 1000)})", "start sampling")
    out = Samples({node: [] for node in by_node}, {node: [] for node in by_node})
    start = time.monotonic()
    end, collect = start + seconds, start + collect_every_s
    tick = start
    while True:
        for node, peer in by_node.items():
            out.usage[node].append(usage(peer.browser.process.pid))
        now = time.monotonic()
        if now >= collect or now >= end:
            collect += collect_every_s
            for node, peer in by_node.items():
                out.stats[node].extend(peer.evaluate("rtcbench.take()", "collect the samples"))
        if now >= end:
            break
        tick += SAMPLE_INTERVAL_S
        time.sleep(max(0.0, min(tick, end) - time.monotonic()))
    return out


def close(peers: Sequence[Peer]) -> None:
    """Ends every connection of `peers`' pages (and their sampling)."""
    for peer in peers:
        peer.evaluate("rtcbench.close()", "end the calls")


def sample(calls: Sequence[Call], seconds: float, collect_every_s: float = 5.0) -> Samples:
    """`sample_peers` over the calls' peers; then the calls' set-up times are read again and
    their connections closed."""
    peers = list({p.node: p for call in calls for p in (call.offerer, call.answerer)}.values())
    out = sample_peers(peers, seconds, collect_every_s)
    for call in calls:
        call.refresh()
    close(peers)
    return out
