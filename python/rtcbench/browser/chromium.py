"""Real Chromium peers in a testbed's namespaces (docs/browser.md): one headless browser per
participant, driven over the DevTools protocol (`rtcbench.browser.devtools`), with a fake camera
that plays a noise clip made at set-up, and calls signalled locally: the offer and answer go from
page to page through this process, with every ICE candidate gathered first (no signalling server,
no STUN: the peers reach each other's host addresses through the relay).

    with testbed.build(variant) as bed:
        relay = testbed.relay.start(bed, variant, seed=1, out_dir=work / "relay")
        relay.go()
        with chromium.Peer.start(bed, "A", work / "A", clip) as a, chromium.Peer.start(bed, "B", ...) as b:
            call = chromium.connect(a, b, VideoSettings(max_bitrate_bps=2_000_000))
            samples = chromium.sample([call], seconds=30)   # getStats() and CPU/memory, per peer

Inside each page `getStats()` runs every 500 ms (`SAMPLE_INTERVAL_S`); the samples are collected
as the call goes, so memory does not grow with its length. Each browser's CPU time and memory
(all its processes) are read from /proc as often. Every step has a time limit: a
browser that crashes or never connects ends with a `BrowserError` naming the peer and the step.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rtcbench.browser import devtools
from rtcbench.browser.sdp import drop_unlisted, edit_video
from rtcbench.results import InputError
from rtcbench.testbed.netns import Testbed, TestbedError

__all__ = [
    "PAGE_HTML",
    "PEER_JS",
    "SAMPLE_INTERVAL_S",
    "AudioSettings",
    "BrowserError",
    "Call",
    "Page",
    "Peer",
    "Samples",
    "Usage",
    "VideoSettings",
    "close",
    "connect",
    "field_trials",
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

LOG_FLAGS = ("--enable-logging=stderr", "--vmodule=*/webrtc/*=1")
"""What makes Chromium write its libwebrtc's log to stderr, and so to the peer's `chromium.log`
(`--browser-log`): the messages libwebrtc logs at `LS_INFO` and up, which Chromium's logging
shows at verbosity 1 for its `webrtc` sources. Among them are GoogCC's estimate at each update
(`goog_cc_network_control.cc`), the pacer's rate and padding budget (`pacing_controller.cc`),
probe results and the loss-based estimator's holds. About 100 lines a second of call."""

EVENT_LOG_FLAG = "--webrtc-event-logging"
"""Chromium's switch that has every peer connection write its RTC event log into a folder, as
chrome://webrtc-internals does on request ("useful for automated testing", Chromium's switch list):
one file per peer connection, `event_log_<date>_<time>_<id>_<n>.log`, in libwebrtc's protobuf
encoding (`--browser-event-log`; docs/browser.md, "The RTC event log"). Chromium 156 writes it
from a headless browser."""
EVENT_LOG_DIR = "event-logs"
"""The folder of a peer's RTC event logs, in its peer folder."""

_TRIAL_PART = re.compile(r"\*?[A-Za-z0-9][A-Za-z0-9_.:,=+|-]*")
"""A trial's name (a leading `*` activates it) or its group: no slash, space or quote. Group
strings carry parameters after a colon (libwebrtc's `QueueSize:350,MinBitrate:30000`)."""


def field_trials(text: str) -> str:
    """`text` as Chromium's `--force-fieldtrials` takes it: trial and group pairs, each part
    ended by a slash (`WebRTC-Foo/Enabled/WebRTC-Bar/Disabled/`; the last slash may be left out).
    `InputError`, one line naming `--field-trials` and the form, for anything else, and for a
    trial named twice (Chromium would keep one of them)."""
    parts = text.removesuffix("/").split("/")
    bad = next((p for p in parts if not _TRIAL_PART.fullmatch(p)), None)
    if not text or len(parts) % 2 or bad is not None:
        why = f"{bad!r} is not a trial name or group" if bad is not None else "a trial has no group"
        raise InputError(
            f"--field-trials must be Chromium's Trial/Group/ pairs, e.g. "
            f"WebRTC-CongestionWindow/QueueSize:350,MinBitrate:30000/; got {text!r} ({why})"
        )
    names = [n.removeprefix("*") for n in parts[::2]]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(f"--field-trials names {', '.join(twice)} more than once; got {text!r}")
    return "/".join(parts) + "/"


PAGE_HTML = """<!doctype html>
<html><head><meta charset="utf-8"><title>rtcbench peer</title></head>
<body></body></html>
"""

# One peer connection per remote participant, keyed by its node name. Set-up times are per
# connection: `offer` (the offer made or received), `connected` (ICE), `firstFrame` (the remote
# video's first frame shown).
PEER_JS = """
window.rtcbench = (() => {
  const S = {pcs: {}, t: {}, senders: {}, audioSenders: {}, cameras: {}, microphone: null,
             samples: [], timer: null, config: {iceServers: []}, configs: {},
             clip: null, drawTimer: null, late: {timer: [], draw: []}};
  const now = () => performance.timeOrigin + performance.now();
  const gathered = pc => new Promise(done => {
    if (pc.iceGatheringState === 'complete') return done();
    pc.addEventListener('icegatheringstatechange', () => {
      if (pc.iceGatheringState === 'complete') done();
    });
  });
  // One capture per set of constraints: calls that ask for the same camera share it. A page
  // given a clip (`useClip`) plays it into a canvas instead of asking for a camera.
  const camera = async video => {
    const key = [video.width, video.height, video.fps].join('x');
    if (!S.cameras[key]) S.cameras[key] = S.clip ? play(S.clip) : await navigator.mediaDevices.getUserMedia({
      video: {width: video.width, height: video.height, frameRate: video.fps}, audio: false});
    return S.cameras[key].getVideoTracks()[0];
  };
  // A Y4M clip (4:2:0, full range, as `noise_clip` writes it) as RGBA images, one per frame.
  const decode = bytes => {
    const eol = bytes.indexOf(10);
    const header = new TextDecoder().decode(bytes.subarray(0, eol)).split(' ');
    const tag = c => header.find(h => h[0] === c).slice(1);
    const [w, h] = [Number(tag('W')), Number(tag('H'))];
    const [num, den] = tag('F').split(':').map(Number);
    const frames = [];
    for (let at = eol + 1; at < bytes.length;) {
      at = bytes.indexOf(10, at) + 1;  // past the FRAME line
      const y = bytes.subarray(at, at + w * h);
      const u = bytes.subarray(at + w * h, at + w * h * 5 / 4);
      const v = bytes.subarray(at + w * h * 5 / 4, at + w * h * 3 / 2);
      at += w * h * 3 / 2;
      const image = new ImageData(w, h);
      for (let r = 0; r < h; r++) {
        for (let c = 0; c < w; c++) {
          const half = (r >> 1) * (w >> 1) + (c >> 1);
          const [l, cb, cr] = [y[r * w + c], u[half] - 128, v[half] - 128];
          const o = 4 * (r * w + c);
          // BT.601 at full range (the clip's C420jpeg).
          image.data[o] = l + 1.402 * cr;
          image.data[o + 1] = l - 0.344136 * cb - 0.714136 * cr;
          image.data[o + 2] = l + 1.772 * cb;
          image.data[o + 3] = 255;
        }
      }
      frames.push(image);
    }
    return {w, h, fps: num / den, frames};
  };
  // The clip looped into a canvas at its frame rate, a frame captured as each is drawn; the
  // schedule is kept on the page's clock, so a late timer does not slow the clip down.
  const play = clip => {
    const canvas = Object.assign(document.createElement('canvas'), {width: clip.w, height: clip.h});
    const ctx = canvas.getContext('2d');
    const stream = canvas.captureStream(0);
    const track = stream.getVideoTracks()[0];
    // The standard asks the track for a frame; Firefox asks its stream.
    const capture = track.requestFrame ? () => track.requestFrame() : () => stream.requestFrame();
    const period = 1000 / clip.fps, start = performance.now();
    let k = 0;
    const draw = () => {
      // How late this frame is drawn against its instant: the page's own timing error.
      S.late.draw.push(performance.now() - (start + k * period));
      ctx.putImageData(clip.frames[k % clip.frames.length], 0, 0);
      capture();
      k += 1;
      S.drawTimer = setTimeout(draw, Math.max(0, start + k * period - performance.now()));
    };
    draw();
    return stream;
  };
  const microphone = async () => {
    if (!S.microphone) S.microphone = await navigator.mediaDevices.getUserMedia({audio: true, video: false});
    return S.microphone.getAudioTracks()[0];
  };
  // The codec first, then what repairs it: RTX always (it also carries probes), RED and ULPFEC
  // unless FEC is off.
  const prefer = (tx, video) => {
    const codecs = RTCRtpSender.getCapabilities('video').codecs;
    const repair = video.fec === false ? ['video/rtx'] : ['video/rtx', 'video/red', 'video/ulpfec'];
    const wanted = codecs.filter(c => c.mimeType.toUpperCase() === 'VIDEO/' + video.codec.toUpperCase());
    if (!wanted.length) throw new Error('this browser cannot send ' + video.codec);
    tx.setCodecPreferences([...wanted, ...codecs.filter(c => repair.includes(c.mimeType))]);
  };
  const open = key => {
    const pc = new RTCPeerConnection(S.configs[key] || S.config);
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
  const KEPT = ['outbound-rtp', 'inbound-rtp', 'remote-inbound-rtp', 'candidate-pair', 'transport',
                'media-source'];
  const selectedPair = report => {
    let pair = null;
    report.forEach(s => {
      if (s.type === 'transport' && s.selectedCandidatePairId) pair = report.get(s.selectedCandidatePairId);
    });
    return pair;
  };
  const candidate = c => c && {address: c.address, port: c.port, type: c.candidateType, protocol: c.protocol,
                               relayProtocol: c.relayProtocol || null,
                               relatedAddress: c.relatedAddress || null, relatedPort: c.relatedPort || null};
  return {
    // The camera of this page from now on: the Y4M clip at `url` (relative to the page), played
    // into a canvas. Returns its frame count.
    async useClip(url) {
      const response = await fetch(url);
      S.clip = decode(new Uint8Array(await response.arrayBuffer()));
      return S.clip.frames.length;
    },
    // The RTCConfiguration of connections opened from now on (ICE servers, transport policy).
    configure(config, key) {
      if (key === undefined || key === null) S.config = config; else S.configs[key] = config;
      return true;
    },
    // The candidate types of `key`'s selected pair: 'host', 'srflx', 'prflx' or 'relay'.
    async route(key) {
      const report = await S.pcs[key].getStats();
      const pair = selectedPair(report);
      if (!pair) return null;
      return {local: report.get(pair.localCandidateId).candidateType,
              remote: report.get(pair.remoteCandidateId).candidateType};
    },
    // What `key`'s connection negotiated and where its packets go: both descriptions, and the
    // selected candidate pair's ends (address, port, candidate type).
    async describe(key) {
      const pc = S.pcs[key];
      const report = await pc.getStats();
      const pair = selectedPair(report);
      return {local: pc.localDescription && pc.localDescription.sdp,
              remote: pc.remoteDescription && pc.remoteDescription.sdp,
              pair: pair && {local: candidate(report.get(pair.localCandidateId)),
                             remote: candidate(report.get(pair.remoteCandidateId))}};
    },
    // An offer to `key`: sending our camera if `video` is given (else receiving video only), and
    // our microphone if `audio` is (else receiving audio if `receiveAudio`).
    async offer(key, video, receive, audio, receiveAudio) {
      const pc = open(key);
      if (video) {
        const tx = pc.addTransceiver(await camera(video), {direction: receive ? 'sendrecv' : 'sendonly'});
        prefer(tx, video);
        S.senders[key] = tx.sender;
      } else {
        pc.addTransceiver('video', {direction: 'recvonly'});
      }
      if (audio) {
        const tx = pc.addTransceiver(await microphone(), {direction: receiveAudio ? 'sendrecv' : 'sendonly'});
        S.audioSenders[key] = tx.sender;
      } else if (receiveAudio) {
        pc.addTransceiver('audio', {direction: 'recvonly'});
      }
      S.t[key].offer = now();
      await pc.setLocalDescription(await pc.createOffer());
      await gathered(pc);
      return pc.localDescription.sdp;
    },
    // The answer to `key`'s offer, sending our camera back if `video` is given and our
    // microphone if `audio` is (on the transceivers the offer made for them).
    async answer(key, sdp, video, audio) {
      const pc = open(key);
      S.t[key].offer = now();
      await pc.setRemoteDescription({type: 'offer', sdp});
      const of = kind => pc.getTransceivers().find(t => t.receiver.track.kind === kind);
      if (video) {
        const tx = of('video');
        await tx.sender.replaceTrack(await camera(video));
        tx.direction = 'sendrecv';
        prefer(tx, video);
        S.senders[key] = tx.sender;
      }
      if (audio) {
        const tx = of('audio');
        await tx.sender.replaceTrack(await microphone());
        tx.direction = 'sendrecv';
        S.audioSenders[key] = tx.sender;
      }
      await pc.setLocalDescription(await pc.createAnswer());
      await gathered(pc);
      return pc.localDescription.sdp;
    },
    async accept(key, sdp) {
      await S.pcs[key].setRemoteDescription({type: 'answer', sdp});
      return true;
    },
    // The encodings' maxBitrate (and priority: 'very-low', 'low', 'medium' or 'high') of what
    // `key`'s connection sends: video, and audio if `audioMaxBitrate` is given; and the video
    // sender's degradationPreference if `degradation` is given, which must read back as set.
    async limit(key, maxBitrate, priority, audioMaxBitrate, degradation) {
      const set = async (sender, rate, preference) => {
        if (!sender) return false;
        const p = sender.getParameters();
        if (rate) p.encodings[0].maxBitrate = rate;
        if (priority) Object.assign(p.encodings[0], {priority, networkPriority: priority});
        if (preference) p.degradationPreference = preference;
        await sender.setParameters(p);
        const kept = sender.getParameters().degradationPreference;
        if (preference && kept !== preference) {
          throw new Error(`the browser kept degradationPreference ${kept} instead of ${preference}`);
        }
        return true;
      };
      const video = await set(S.senders[key], maxBitrate, degradation);
      if (audioMaxBitrate) await set(S.audioSenders[key], audioMaxBitrate);
      return video;
    },
    // Stops (paused = true) or resumes what `key`'s connection sends: video, and audio too if
    // `audio` (a sender that stops sends nothing, as an application that pauses its camera).
    async pause(key, paused, audio) {
      const set = async sender => {
        if (!sender) return;
        const p = sender.getParameters();
        p.encodings.forEach(e => { e.active = !paused; });
        await sender.setParameters(p);
      };
      await set(S.senders[key]);
      if (audio) await set(S.audioSenders[key]);
      return true;
    },
    // Ends `key`'s connection (its call stops); its set-up times stay.
    hangup(key) {
      const pc = S.pcs[key];
      if (pc) { pc.close(); delete S.pcs[key]; S.t[key].closed = now(); }
      return true;
    },
    // getStats() every `intervalMs` on the page's clock; how late each sample was taken against
    // its instant is kept (`timing`): the page's main thread, which also runs the connections'
    // events and a Firefox peer's camera, was run when it asked to be.
    start(intervalMs) {
      const begin = performance.now();
      let k = 0;
      const take = async () => {
        S.late.timer.push(performance.now() - (begin + k * intervalMs));
        k += 1;
        S.timer = setTimeout(take, Math.max(0, begin + k * intervalMs - performance.now()));
        const t = now();
        for (const [key, pc] of Object.entries(S.pcs)) {
          const report = await pc.getStats();
          const kept = [];
          report.forEach(s => { if (KEPT.includes(s.type)) kept.push(s); });
          S.samples.push({t, remote: key, stats: kept});
        }
      };
      take();
      return true;
    },
    take() { const out = S.samples; S.samples = []; return out; },
    // How late the page's timers ran (ms): each statistics sample and each camera frame drawn.
    timing() { return S.late; },
    times(key) {
      const pc = S.pcs[key];
      return Object.assign({ice: pc ? pc.iceConnectionState : 'closed'}, S.t[key]);
    },
    close() {
      clearTimeout(S.timer);
      clearTimeout(S.drawTimer);
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
    """What the sending page asks of its camera and encoder, and how the call repairs loss."""

    width: int = 640
    height: int = 360
    fps: int = 30
    codec: str = "VP8"
    max_bitrate_bps: int | None = None
    """The encoding's `maxBitrate` (RTCRtpSender.setParameters); None: the browser's default."""
    min_bitrate_bps: int | None = None
    """The bandwidth estimate's floor (`x-google-min-bitrate`, `rtcbench.browser.sdp`); None:
    Chromium's (30 kbit/s)."""
    start_bitrate_bps: int | None = None
    """Where the bandwidth estimate starts (`x-google-start-bitrate`); None: Chromium's
    (300 kbit/s)."""
    fec: bool = True
    """Offer RED and ULPFEC (as Chrome does); False leaves them out of the codecs."""
    nack: bool = True
    """NACK/RTX retransmissions (RFC 4585 `nack` feedback)."""
    keyframe_request: str = "pli"
    """`pli` (RFC 4585), or `fir` (RFC 5104): the `nack pli` feedback is left out."""
    priority: str | None = None
    """The encoding's `priority` and `networkPriority` (`very-low`, `low`, `medium`, `high`);
    None: the browser's default (`low`)."""
    degradation: str | None = None
    """The sender's `degradationPreference` (`balanced`, `maintain-framerate`,
    `maintain-resolution`; the scenario's `video.degradation`); None: the browser's default."""

    def bitrates_kbps(self) -> dict[str, int]:
        """The bitrates this call sets, in kbit/s, by name (`min`, `start`, `max`): Chromium takes
        them from the SDP (`edit`), Firefox as preferences (`firefox.preferences`)."""
        return {
            k: round(v / 1000)
            for k, v in (
                ("min", self.min_bitrate_bps),
                ("start", self.start_bitrate_bps),
                ("max", self.max_bitrate_bps),
            )
            if v is not None
        }

    def edit(self, sdp: str) -> str:
        """A session description as it passes between the pages, with what this call asks of
        Chromium where no API sets it (`rtcbench.browser.sdp.edit_video`)."""
        bitrates = self.bitrates_kbps()
        if not bitrates and self.nack and self.keyframe_request == "pli":
            return sdp
        return edit_video(
            sdp, self.codec, bitrates_kbps=bitrates, nack=self.nack, pli=self.keyframe_request == "pli"
        )


@dataclass(frozen=True)
class AudioSettings:
    """What the sending page sends from its microphone: Chromium's fake audio device (a tone),
    Opus."""

    max_bitrate_bps: int | None = None
    """The audio encoding's `maxBitrate`; None: Opus at Chromium's default."""


class Page:
    """A browser's page that holds a node's calls, whichever the browser: the page script
    (`PEER_JS`) answers the same calls in Chromium (`Peer`) and in Firefox
    (`rtcbench.browser.firefox.Peer`), so signalling, sampling and the SFU take either."""

    node: str

    @property
    def pid(self) -> int:
        """The browser's process, leader of the session its other processes run in."""
        raise NotImplementedError

    def evaluate(self, expression: str, step: str, timeout_s: float = STEP_TIMEOUT_S) -> Any:
        """Runs `expression` in the page, awaiting a promise, and returns its value (JSON);
        `BrowserError` naming the peer and `step` if it throws or the browser does not answer."""
        raise NotImplementedError

    def start_sampling(self, interval_s: float) -> None:
        """Samples `getStats()` of each of the page's connections every `interval_s`, from now
        until the page's calls end (`rtcbench.close()`)."""
        self.evaluate(f"rtcbench.start({round(interval_s * 1000)})", "start sampling")

    def timing(self) -> dict[str, list[float]]:
        """How late the page's timers ran, in ms, each against its instant on the page's clock:
        `timer`, every statistics sample (`start_sampling`); `draw`, every camera frame a page
        that plays its clip into a canvas drew (a Firefox peer's camera; Chromium's fake camera
        is the browser's own, out of the page's sight)."""
        late: dict[str, list[float]] = self.evaluate("rtcbench.timing()", "read the page's timing")
        return late

    def take_samples(self) -> list[dict[str, Any]]:
        """The samples taken since the last call, oldest first: each its time (`t`, ms on the
        wall clock), its connection's remote (`remote`) and the reports kept (`stats`)."""
        samples: list[dict[str, Any]] = self.evaluate("rtcbench.take()", "collect the samples")
        return samples

    def configure(
        self, ice_servers: list[dict[str, Any]], *, relay_only: bool = False, key: str | None = None
    ) -> None:
        """ICE servers (RTCIceServer dictionaries) for the connections this page opens from now
        on, or only for the one it will open as `key`; with `relay_only`, only relayed
        candidates are used (`iceTransportPolicy: "relay"`), so every packet goes through a TURN
        server."""
        config = {"iceServers": ice_servers, "iceTransportPolicy": "relay" if relay_only else "all"}
        self.evaluate(f"rtcbench.configure({json.dumps(config)}, {json.dumps(key)})", "configure ICE")

    def route(self, remote: str) -> dict[str, str] | None:
        """The candidate types (`host`, `srflx`, `prflx`, `relay`) of the selected pair of this
        page's connection to `remote`, or None before one is selected."""
        route: dict[str, str] | None = self.evaluate(
            f"rtcbench.route({json.dumps(remote)})", "read the route"
        )
        return route


@dataclass
class Peer(Page):
    """One headless Chromium in a node's namespace, with one page that holds the call."""

    node: str
    browser: devtools.Browser
    session: str

    @property
    def pid(self) -> int:
        return self.browser.process.pid

    @classmethod
    @contextlib.contextmanager
    def start(
        cls,
        bed: Testbed,
        node: str,
        work: Path,
        clip: Path | None = None,
        trials: str = "",
        log: bool = False,
        event_log: bool = False,
    ) -> Iterator[Peer]:
        """Starts the browser in `node`'s namespace with its profile and page under `work`, `clip`
        as its camera and `trials` (checked by `field_trials`) forced, writing its libwebrtc's
        log into `work`'s `chromium.log` if `log` (`LOG_FLAGS`) and each peer connection's RTC
        event log into `work`'s `EVENT_LOG_DIR` if `event_log`; closes it (killing it if need
        be) when the block ends."""
        work.mkdir(parents=True, exist_ok=True)
        page = work / "peer.html"
        page.write_text(PAGE_HTML)
        flags = [*_FLAGS, f"--user-data-dir={work / 'profile'}"]
        if clip is not None:
            flags.append(f"--use-file-for-fake-video-capture={clip}")
        if trials:
            flags.append(f"--force-fieldtrials={trials}")
        if log:
            flags.extend(LOG_FLAGS)
        if event_log:
            (work / EVENT_LOG_DIR).mkdir(exist_ok=True)
            flags.append(f"{EVENT_LOG_FLAG}={work / EVENT_LOG_DIR}")
        stderr = (work / "chromium.log").open("wb")
        try:
            browser = devtools.launch(
                [*flags, "about:blank"], popen=lambda args, **kw: bed.popen(node, args, **kw), stderr=stderr
            )
        except FileNotFoundError as e:
            stderr.close()
            raise BrowserError(f"peer {node}: {e}") from None
        try:
            peer = cls(node, browser, "")
            peer.session = peer._open(page)
            yield peer
        finally:
            browser.close()
            stderr.close()

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
        self.evaluate(PEER_JS, "load the peer script")
        return session

    def evaluate(self, expression: str, step: str, timeout_s: float = STEP_TIMEOUT_S) -> Any:
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
    """A connected call between two peers: `offerer` sent the offer, `answerer` the answer; media
    goes one way or both (`connect`). Each page knows the connection by a key: the other end's
    node name unless `connect` was given one. `times` holds, per end (node name), when its
    connection's set-up steps happened (Unix ms on the pages' clock) and its ICE state."""

    offerer: Page
    answerer: Page
    times: dict[str, dict[str, Any]] = field(default_factory=dict)
    key: str | None = None
    """The connection's key in both pages; None: each page's key is the other end's node."""

    def key_at(self, peer: Page) -> str:
        """The key `peer`'s page knows this connection by."""
        if self.key is not None:
            return self.key
        return (self.answerer if peer is self.offerer else self.offerer).node

    def refresh(self) -> None:
        """Reads both ends' set-up times and ICE states again."""
        self.times = {
            peer.node: peer.evaluate(f"rtcbench.times({json.dumps(self.key_at(peer))})", "read the state")
            for peer in (self.offerer, self.answerer)
        }

    def describe(self, peer: Page) -> dict[str, Any]:
        """What `peer`'s end negotiated and where its packets go: `local` and `remote` session
        descriptions, and the selected candidate pair (`pair.local`, `pair.remote`: address,
        port, candidate type, protocol; None before ICE selected one)."""
        described: dict[str, Any] = peer.evaluate(
            f"rtcbench.describe({json.dumps(self.key_at(peer))})", "describe the connection"
        )
        return described

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
    fields = ("width", "height", "fps", "codec", "fec")
    return json.dumps({name: getattr(video, name) for name in fields})


def limit_js(key: str, video: VideoSettings | None, audio: AudioSettings | None) -> str:
    """The page's `limit` call for what a connection sends."""
    rate = video.max_bitrate_bps if video is not None else None
    priority = video.priority if video is not None else None
    degradation = video.degradation if video is not None else None
    audio_rate = audio.max_bitrate_bps if audio is not None else None
    args = ", ".join(json.dumps(a) for a in (key, rate, priority, audio_rate, degradation))
    return f"rtcbench.limit({args})"


def connect(
    sender: Page,
    receiver: Page,
    video: VideoSettings | None,
    timeout_s: float = CONNECT_TIMEOUT_S,
    *,
    back: VideoSettings | None = None,
    audio: AudioSettings | None = None,
    back_audio: AudioSettings | None = None,
    key: str | None = None,
) -> Call:
    """Signals a call (`signal`) and waits until ICE has connected at both ends
    (`wait_connected`). Raises `BrowserError` if it does not connect within `timeout_s`."""
    call = signal(sender, receiver, video, back=back, audio=audio, back_audio=back_audio, key=key)
    wait_connected([call], timeout_s)
    return call


def signal(
    sender: Page,
    receiver: Page,
    video: VideoSettings | None,
    *,
    back: VideoSettings | None = None,
    audio: AudioSettings | None = None,
    back_audio: AudioSettings | None = None,
    key: str | None = None,
) -> Call:
    """Signals a call locally (offer, answer, each with every candidate) in which `sender` sends
    its camera to `receiver` (and, with `back`, `receiver` its own to `sender`, on the same peer
    connection; `audio` and `back_audio` add each one's microphone), and returns without waiting
    for ICE, so that calls due at the same moment connect together (`wait_connected`). Both pages
    know the connection by `key` (default: each by the other end's node)."""
    call = Call(sender, receiver, key=key)
    at_sender, at_receiver = json.dumps(call.key_at(sender)), json.dumps(call.key_at(receiver))
    receive, receive_audio = json.dumps(back is not None), json.dumps(back_audio is not None)
    offer = sender.evaluate(
        f"rtcbench.offer({at_sender}, {video_json(video)}, {receive}, {json.dumps(audio is not None)}, "
        f"{receive_audio})",
        "create the offer",
    )
    # Both ends see the same edits: the answer can only keep what the offer has.
    edited = next((v for v in (video, back) if v is not None), None)

    def edit(sdp: str) -> str:
        sdp = drop_unlisted(sdp)
        return edited.edit(sdp) if edited is not None else sdp

    answer = receiver.evaluate(
        f"rtcbench.answer({at_receiver}, {json.dumps(edit(offer))}, {video_json(back)}, "
        f"{json.dumps(back_audio is not None)})",
        "answer the offer",
    )
    sender.evaluate(f"rtcbench.accept({at_sender}, {json.dumps(edit(answer))})", "accept the answer")
    sender.evaluate(limit_js(call.key_at(sender), video, audio), "set the sender's parameters")
    if back is not None or back_audio is not None:
        receiver.evaluate(limit_js(call.key_at(receiver), back, back_audio), "set the sender's parameters")
    return call


def wait_connected(calls: Sequence[Call], timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Waits until ICE has connected at both ends of every one of `calls`, all of them within
    `timeout_s`. Raises `BrowserError` naming the first call that failed or had not connected."""
    deadline = time.monotonic() + timeout_s
    pending = list(calls)
    while pending:
        for call in list(pending):
            call.refresh()
            states = {node: t.get("ice") for node, t in call.times.items()}
            if all(s in ("connected", "completed") for s in states.values()):
                pending.remove(call)
            elif "failed" in states.values() or time.monotonic() > deadline:
                tx, rx = call.offerer.node, call.answerer.node
                raise BrowserError(
                    f"call {tx} → {rx}: ICE did not connect within {timeout_s:g} s "
                    f"({tx} {states[tx]}, {rx} {states[rx]})"
                )
        if pending:
            time.sleep(0.05)


def mesh(peers: Sequence[Page], video: VideoSettings, timeout_s: float = CONNECT_TIMEOUT_S) -> list[Call]:
    """A mesh call: every pair of `peers` connected, each sending its camera to the other, one
    peer connection per pair (as a mesh call in a browser runs it)."""
    calls = [signal(a, b, video, back=video) for k, a in enumerate(peers) for b in peers[k + 1 :]]
    wait_connected(calls, timeout_s)
    return calls


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


def usages(sessions: Mapping[str, int], servers: Mapping[str, Collection[int]]) -> dict[str, Usage]:
    """The CPU time and memory of each owner's processes, from one pass over /proc, all at the
    same instant: each name of `sessions` owns the processes of that session (a browser started
    by `devtools.launch` leads its own), each name of `servers` the processes listed (a relay, an
    SFU or a TURN server: one process each). Processes that end while being read are skipped.
    One pass rather than one per owner, because the sampler shares the machine with what it
    measures: in one CI run of `sfu-4` (four browsers and Janus on two cores) it managed 16
    samples in 20 s where 40 were due."""
    owner_of_session = {session: name for name, session in sessions.items()}
    owner_of_pid = {pid: name for name, pids in servers.items() for pid in pids}
    ticks = os.sysconf("SC_CLK_TCK")
    totals = {name: [0, 0, 0] for name in (*sessions, *servers)}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            owner = owner_of_pid.get(int(entry.name), owner_of_session.get(int(fields[3])))
            if owner is None:
                continue
            rollup = Path(entry.path, "smaps_rollup").read_text()
        except (OSError, ValueError, IndexError):
            continue
        total = totals[owner]
        total[0] += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
        total[1] += next((int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:")), 0)
        total[2] += 1
    t = time.monotonic()
    return {name: Usage(t, cpu / ticks, pss * 1024, count) for name, (cpu, pss, count) in totals.items()}


def next_tick(tick: float, interval: float, now: float) -> float:
    """The sampling instant after `tick`, every `interval`; one already past `now` is skipped,
    not caught up with samples back to back that would all say the same."""
    tick += interval
    return tick if tick > now else now + interval


@dataclass
class Samples:
    """What calls measured, per peer (node name): its page's `getStats()` samples (each: `t`,
    Unix ms; `remote`, the peer at the other end of the connection; `stats`, the reports kept)
    and its browser's `Usage`; and each server's `Usage` by the name it was sampled under."""

    stats: dict[str, list[dict[str, Any]]]
    usage: dict[str, list[Usage]]

    def of(self, node: str, remote: str) -> list[dict[str, Any]]:
        """`node`'s samples of its connection to `remote`."""
        return [s for s in self.stats[node] if s["remote"] == remote]


def sample_peers(
    peers: Sequence[Page],
    seconds: float,
    collect_every_s: float = 5.0,
    *,
    servers: Mapping[str, int] | None = None,
) -> Samples:
    """Runs whatever `peers` have connected for `seconds`, with `getStats()` sampled in every page
    and each browser's usage read every `SAMPLE_INTERVAL_S`, collecting the pages' samples every
    `collect_every_s`; `servers` (a name for each process id: an SFU, a TURN server) have their
    usage read as often, under their names. The pages' connections stay open (`close` ends them)."""
    by_node = {p.node: p for p in peers}
    for peer in by_node.values():
        peer.start_sampling(SAMPLE_INTERVAL_S)
    servers = dict(servers or {})
    out = Samples({node: [] for node in by_node}, {name: [] for name in (*by_node, *servers)})
    start = time.monotonic()
    end, collect = start + seconds, start + collect_every_s
    tick = start
    sessions = {node: peer.pid for node, peer in by_node.items()}
    owned = {name: [pid] for name, pid in servers.items()}
    while True:
        for name, u in usages(sessions, owned).items():
            out.usage[name].append(u)
        now = time.monotonic()
        if now >= collect or now >= end:
            collect += collect_every_s
            for node, peer in by_node.items():
                out.stats[node].extend(peer.take_samples())
        if now >= end:
            break
        tick = next_tick(tick, SAMPLE_INTERVAL_S, time.monotonic())
        time.sleep(max(0.0, min(tick, end) - time.monotonic()))
    return out


def close(peers: Sequence[Page]) -> None:
    """Ends every connection of `peers`' pages (and their sampling)."""
    for peer in peers:
        peer.evaluate("rtcbench.close()", "end the calls")


def sample(
    calls: Sequence[Call],
    seconds: float,
    collect_every_s: float = 5.0,
    *,
    servers: Mapping[str, int] | None = None,
) -> Samples:
    """`sample_peers` over the calls' peers (and `servers`); then the calls' set-up times are read
    again and their connections closed."""
    peers = list({p.node: p for call in calls for p in (call.offerer, call.answerer)}.values())
    out = sample_peers(peers, seconds, collect_every_s, servers=servers)
    for call in calls:
        call.refresh()
    close(peers)
    return out
