"""One browser run (`--mode browser`): a scenario variant's calls between real Chromium or
Firefox peers (`--browser`, `rtcbench.browser.choice`) in the testbed's namespaces, over the
scenario's links carried by the relay, in real time (docs/browser.md, "Browser runs").
`rtcbench.runner` calls `browse` and writes its tables as it writes a simulated run's.

    result = browse(variant, seed=1, work=folder / "browser")

What runs: one headless browser per node that sends or receives a call, each call a peer
connection from its sender's page to its receiver's (a mesh's pair shares one both ways),
signalled at the call's start and closed at its stop; coturn in the node a call goes `via`
(relay-only ICE), Janus in an SFU conference's node (a room per conference); the scenario's TCP
and CBR flows as kernel traffic (the emulated run's agents, `rtcbench.testbed.cross`). Each
browser runs its own congestion control, its libwebrtc's GoogCC, which rtcbench's `gcc` is a port
of: the run's controller is `gcc`; or, in Chromium's L4S mode (`Browsers.l4s`:
`rtcbench.browser.choice`), libwebrtc's ScreamV2 (`scream2`) or GoogCC sending ECT(1). A scenario
setting a browser has no equivalent for is refused before anything starts, with one line naming
the field.

What is measured: the relay's packet log (every packet's arrival, departure or drop on the relay's
clock, the first bytes of each UDP payload: the RTP header in the clear, SRTP encrypts payloads
only), each page's `getStats()` every 500 ms, the CPU time and memory of each browser, the relay,
Janus and coturn every 500 ms, every call's set-up times, and the session descriptions each page
negotiated (`browser/sdp.json`: whether a call's feedback is RFC 8888's shows there, since SRTCP
hides it on the wire). `rtcbench.browser.trace` makes the trace tables of them. A call that does
not connect, or a browser that dies, ends the run: its summary says why (`browser.failure`), with
what was recorded until then.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import polars as pl

from rtcbench import _core
from rtcbench.browser import devtools, firefox, sfu, turn
from rtcbench.browser.choice import CHROMIUM, FIREFOX, Browsers
from rtcbench.browser.chromium import (
    CONNECT_TIMEOUT_S,
    EVENT_LOG_DIR,
    SAMPLE_INTERVAL_S,
    AudioSettings,
    BrowserError,
    Call,
    Page,
    Peer,
    Usage,
    VideoSettings,
    next_tick,
    noise_clip,
    signal,
    usages,
    wait_connected,
)
from rtcbench.browser.machine import CPU_LIMITED_SHARE, judge, starved_warning
from rtcbench.browser.sdp import feedback_of
from rtcbench.browser.trace import Connection, Stream, browser_tables
from rtcbench.emulation.media import PlannedCall, call_plans
from rtcbench.emulation.run import END_MARGIN_S, planned_meta, relay_info, validity
from rtcbench.scenarios import MODELLED_CODEC, Table, Variant
from rtcbench.tables import Tables
from rtcbench.testbed import cross, relay
from rtcbench.testbed.netns import Testbed, TestbedError, build, require
from rtcbench.testbed.relay_log import RELAY_PACKETS
from rtcbench.testbed.timing import (
    BROWSER_CAMERA_GOAL,
    PAGE_TIMER_GOAL,
    ProcessTiming,
    relay_timings,
    sampled_timing,
)

__all__ = [
    "CONTROLLER",
    "Browsed",
    "BrowserModeError",
    "browse",
    "cameras",
    "check_choice",
    "connections",
    "firefox_video",
    "peer_nodes",
]

CONTROLLER = "gcc"
"""The controller a browser run runs by default: Chromium's own, libwebrtc's GoogCC (rtcbench's
`gcc`); `scream2` in Chromium's L4S mode (`Browsers.controller`)."""
SDP_FILE = "sdp.json"
"""The session descriptions each page of each connection negotiated, in the run's `browser/`
folder: `{connection: {node: {"local": sdp, "remote": sdp}}}`."""
COLLECT_EVERY_S = 5.0
"""How often the pages' `getStats()` samples are collected."""
CLIP_SECONDS = 2.0
"""Length of the camera clip each browser loops."""
DESCRIBE_WAIT_S = 2.0
"""How long a page may take to name the candidate pair of a connection ICE has connected."""
MAX_PUBLISHERS = 16
"""Publishers a Janus room takes (each conference has a room of its own)."""

# libwebrtc's bitrate priorities (`rtc_base/..., webrtc::kDefaultBitratePriority` and the
# RTCPriorityType mapping: very-low 0.5, low 1, medium 2, high 4) by the scenario's `priority`.
_PRIORITIES = {0.5: "very-low", 1.0: "low", 2.0: "medium", 4.0: "high"}
_AUDIO_PACKET_INTERVAL = "20ms"
"""Opus frames as Chromium sends them; another `audio.packet_interval` is refused."""


class BrowserModeError(TestbedError):
    """A scenario that browser mode cannot run as written (one line naming the field)."""


@dataclass
class Browsed:
    """A browser run: its trace tables, and what the run itself reports for the summary
    (`summary.json` key `browser`, docs/browser.md)."""

    tables: Tables
    info: dict[str, Any]


def _stream(
    call: PlannedCall, spec: Table, where: str, flows: dict[str, int], end_s: float, l4s: str = ""
) -> Stream:
    """A scenario call as the browsers run it (`spec`: its settings as written, at `where`;
    `l4s`: Chromium's L4S mode, which sends every media packet ECT(1)); `BrowserModeError` for
    what Chromium cannot do."""
    p = call.plan

    def refuse(field_: str, why: str) -> BrowserModeError:
        return BrowserModeError(f"{where}.{field_}: {why} (run it with --mode simulate or emulate)")

    for name in ("twcc_interval", "ccfb_interval", "report_interval"):
        if (spec.get("feedback") or {}).get(name) is not None:
            raise refuse(f"feedback.{name}", "a browser sends feedback on Chromium's own timing")
    ecn = spec.get("ecn")
    if l4s and ecn not in (None, "ect1"):
        why = f'Chromium\'s L4S mode ({l4s}) sends every media packet ECT(1): "ect1" or left out'
        raise refuse("ecn", why)
    if not l4s and ecn not in (None, "not-ect"):
        raise refuse("ecn", "Chromium sends no ECN-capable media but in its L4S mode (--cc scream2: ECT(1))")
    if p["fec"] == "flexfec":
        raise refuse("fec", 'Chromium sends FlexFEC only under a field trial; use true ("ulpfec") or false')
    if spec.get("fec_rate") is not None:
        raise refuse("fec_rate", "Chromium chooses its FEC rate itself")
    priority = float(p["priority"])
    if priority not in _PRIORITIES:
        allowed = ", ".join(f"{k:g}" for k in _PRIORITIES)
        raise refuse(
            "priority", f"a browser knows the priorities {allowed} (very-low to high), not {priority:g}"
        )
    video: VideoSettings | None = None
    if p.get("video") is not None:
        v = p["video"]
        fps = float(v["fps"])
        if fps != round(fps):
            raise refuse(
                "video.fps", f"the camera clip runs at a whole number of frames per second, not {fps:g}"
            )
        width, height = (int(x) for x in v["camera"])
        video = VideoSettings(
            codec=str((spec.get("video") or {}).get("codec", MODELLED_CODEC)).upper(),
            width=width,
            height=height,
            fps=round(fps),
            max_bitrate_bps=_core.rate_bps(v["max_rate"]),
            min_bitrate_bps=_core.rate_bps(v["min_rate"]),
            start_bitrate_bps=_core.rate_bps(v["start_rate"]),
            fec=p["fec"] is not None,
            nack=bool(p["nack"]),
            keyframe_request=str(p["keyframe_request"]),
            priority=_PRIORITIES[priority] if priority != 1.0 else None,
            degradation=(spec.get("video") or {}).get("degradation"),
        )
    audio: AudioSettings | None = None
    if p.get("audio") is not None:
        a = p["audio"]
        if a.get("packet_interval") not in (None, _AUDIO_PACKET_INTERVAL):
            raise refuse("audio.packet_interval", f"Chromium sends Opus in {_AUDIO_PACKET_INTERVAL} packets")
        audio = AudioSettings(max_bitrate_bps=_core.rate_bps(a["rate"]) if a.get("rate") else None)
    if video is None and audio is None:
        raise refuse("video", "a browser call sends video, audio or both")
    pauses = [
        (_core.duration_s(x["from"]), _core.duration_s(x["to"]), bool(x.get("audio", True)))
        for x in p.get("pauses", [])
    ]
    return Stream(
        index=call.index,
        name=call.name,
        src=call.src,
        dst=call.dst,
        video=video,
        audio=audio,
        start_s=_core.duration_s(p["start"]),
        stop_s=min(_core.duration_s(p["stop"]), end_s),
        pauses=pauses,
        flows=flows,
    )


def _flows_of(meta: dict[str, Any], index: int) -> dict[str, int]:
    """A call's flow ids by suffix (`video`, `audio`, `rtcp-rx`, `rtcp-tx`)."""
    return {f["name"].rsplit(".", 1)[1]: int(f["id"]) for f in meta["flows"] if f.get("call") == index}


def _settings(variant: Variant, meta_call: dict[str, Any], index: int) -> tuple[Table, str]:
    """A call's settings as the scenario writes them, and where: its `[[calls]]` entry, or its
    conference's `call` table."""
    conference = meta_call.get("conference")
    if conference is None:
        return variant.calls[index], f"calls.{index}"
    for k, c in enumerate(variant.conferences):
        if c.get("name", f"conf{k}") == conference:
            return c.get("call", {}), f"conferences.{k}.call"
    raise BrowserModeError(
        f"conference {conference!r} of call {meta_call.get('name')!r} is not in the scenario"
    )


def connections(variant: Variant, meta: dict[str, Any], seed: int, l4s: str = "") -> list[Connection]:
    """The peer connections a browser run opens for `variant`, each known to both its pages by
    its key. A `[[calls]]` entry or a one-to-many stream is one connection from its sender's page
    to its receiver's (a call's streams and its RTCP share it, as a browser bundles them); a
    mesh's two streams between a pair share one, both ways, as a browser in a mesh call does
    (the key is the first stream's name); an SFU conference is one connection from each
    participant to the SFU (publish) and one from the SFU to each participant for each other
    participant's stream (forward), as Janus's VideoRoom makes them. Raises `BrowserModeError` for
    a call Chromium cannot make as the scenario says (in Chromium's L4S mode `l4s`, if any)."""
    end_s = float(meta["duration_s"])
    meta_calls = {int(m["id"]): m for m in meta["calls"]}
    streams: dict[int, Stream] = {}
    for call in call_plans(variant, seed):
        if call.plan is None:
            continue  # an SFU's forward leg: it carries its publisher's stream (below)
        m = meta_calls[call.index]
        settings, where = _settings(variant, m, call.index)
        streams[call.index] = _stream(call, settings, where, _flows_of(meta, call.index), end_s, l4s)
    out: list[Connection] = []
    pairs: dict[tuple[str, frozenset[str]], Connection] = {}
    for index, m in sorted(meta_calls.items()):
        role, topology = m.get("role", "call"), m.get("topology", "p2p")
        if role == "forward":
            publish = streams[int(m["forwards"])]
            stream = Stream(
                index=index, name=m["name"], src=m["sender"], dst=m["receiver"], video=publish.video,
                audio=publish.audio, start_s=publish.start_s, stop_s=publish.stop_s, pauses=[],
                flows=_flows_of(meta, index),
            )  # fmt: skip
            out.append(Connection(m["name"], m["sender"], m["receiver"], [stream], sfu=m.get("sfu")))
            continue
        stream = streams[index]
        if role == "publish":
            out.append(Connection(m["name"], stream.src, stream.dst, [stream], sfu=m.get("sfu")))
        elif topology == "mesh":
            pair = (str(m["conference"]), frozenset((stream.src, stream.dst)))
            if pair in pairs:
                pairs[pair].streams.append(stream)
            else:
                pairs[pair] = Connection(m["name"], stream.src, stream.dst, [stream], via=m.get("via"))
                out.append(pairs[pair])
        else:
            out.append(Connection(m["name"], stream.src, stream.dst, [stream], via=m.get("via")))
    return out


def cameras(conns: Sequence[Connection], meta: dict[str, Any]) -> dict[int, tuple[str, float]]:
    """Each video flow's id → its name and the frame rate its camera gives (`video.fps`)."""
    names = {int(f["id"]): str(f["name"]) for f in meta["flows"]}
    return {
        flow: (names.get(flow, str(flow)), float(s.video.fps))
        for c in conns
        for s in c.streams
        if s.video is not None and (flow := s.flows.get("video")) is not None
    }


def _clip_for(streams: Sequence[Stream], folder: Path, seed: int) -> Path | None:
    """The camera clip of a node that sends `streams`: its largest camera at its highest frame
    rate (Chromium's fake capture plays one file; each call's track is scaled from it)."""
    videos = [s.video for s in streams if s.video is not None]
    if not videos:
        return None
    width = max(v.width for v in videos)
    height = max(v.height for v in videos)
    fps = max(v.fps for v in videos)
    path = folder / f"camera-{width}x{height}-{fps}.y4m"
    if not path.exists():
        noise_clip(path, width=width, height=height, fps=fps, seconds=CLIP_SECONDS, seed=seed)
    return path


@dataclass(frozen=True)
class _Conference:
    """An SFU conference as one step: every participant publishes, then views every other, in
    the SFU's room `room` (`rtcbench.browser.sfu.videoroom`)."""

    sfu: str
    room: int
    publish: list[Connection]
    """One per participant (its offerer), carrying its published stream."""
    views: dict[tuple[str, str], Connection]
    """The forward leg by (viewer, publisher)."""


@dataclass
class _Timeline:
    """What the run does when, from time zero: signal calls (an SFU conference as one step),
    pause and resume them, hang up."""

    events: list[tuple[float, int, str, Any]] = field(default_factory=list)

    @classmethod
    def of(cls, conns: Sequence[Connection], conferences: Sequence[_Conference], end_s: float) -> _Timeline:
        events: list[tuple[float, int, str, Any]] = []
        for order, conf in enumerate(conferences):
            events.append((min(c.start_s for c in conf.publish), order, "conference", conf))
        for order, c in enumerate(conns, start=len(conferences)):
            if c.sfu is None:
                events.append((c.start_s, order, "connect", c))
            for s in c.streams:
                for a, b, audio in s.pauses:
                    events.append((a, order, "pause", (c, s, True, audio)))
                    events.append((b, order, "resume", (c, s, False, audio)))
            if c.stop_s < end_s:
                events.append((c.stop_s, order, "hangup", c))
        return cls(sorted(events, key=lambda e: (e[0], e[1])))


def _conferences(conns: Sequence[Connection], meta: dict[str, Any]) -> list[_Conference]:
    """The SFU conferences among `conns`, each with a room of its own."""
    publisher_of = {int(m["id"]): m for m in meta["calls"]}
    by_name = {c.key: c for c in conns}
    out: dict[str, _Conference] = {}
    for m in meta["calls"]:
        if m.get("role") not in ("publish", "forward"):
            continue
        conf = out.setdefault(str(m["conference"]), _Conference(str(m["sfu"]), 1000 + len(out), [], {}))
        c = by_name[m["name"]]
        if m["role"] == "publish":
            conf.publish.append(c)
        else:
            publisher = str(publisher_of[int(m["forwards"])]["sender"])
            conf.views[(c.answerer, publisher)] = c
    return list(out.values())


@dataclass
class _Recorder:
    """Everything a browser run records while it goes."""

    peers: dict[str, Page]
    servers: dict[str, int]
    """Process ids of the relay, the SFUs and the TURN servers, by name."""
    janus: dict[str, sfu.Janus]
    turns: dict[str, turn.Turn]
    t0: float
    stats: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    usage: dict[str, list[Usage]] = field(default_factory=dict)
    described: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    failure: str | None = None

    def pages(self, c: Connection) -> list[Page]:
        """The pages that know connection `c` (an SFU's end has none)."""
        return [self.peers[n] for n in (c.offerer, c.answerer) if n in self.peers]

    def sample_usage(self) -> None:
        sessions = {node: peer.pid for node, peer in self.peers.items()}
        for name, u in usages(sessions, {name: [pid] for name, pid in self.servers.items()}).items():
            self.usage.setdefault(name, []).append(u)

    def collect(self) -> None:
        for node, peer in self.peers.items():
            self.stats.setdefault(node, []).extend(peer.take_samples())

    def describe(self, c: Connection, wait_s: float = DESCRIBE_WAIT_S) -> None:
        """Records what `c`'s pages negotiated and the candidate pair each selected. ICE may say
        connected a moment before the transport names its selected pair (seen with relayed
        candidates), so a page without one is asked again, for up to `wait_s`."""
        key = json.dumps(c.key)
        deadline = time.monotonic() + wait_s
        views = {}
        for p in self.pages(c):
            while True:
                view = p.evaluate(f"rtcbench.describe({key})", "describe the connection")
                if view.get("pair") or time.monotonic() >= deadline:
                    break
                time.sleep(0.05)
            views[p.node] = view
        self.described[c.key] = views

    def times(self, c: Connection) -> dict[str, dict[str, Any]]:
        return {
            p.node: p.evaluate(f"rtcbench.times({json.dumps(c.key)})", "read the set-up times")
            for p in self.pages(c)
        }


EVENT_LOG_TAIL_S = 6.0
"""How long a run recording Chromium's RTC event logs (`--browser-event-log`) keeps its calls up
past the scenario's end: Chromium 156 writes a log every few seconds and never the batch in
progress when the connection closes (docs/eventlog.md); the tables still end at the scenario's
end."""


def _run_timeline(
    rec: _Recorder, conns: Sequence[Connection], conferences: Sequence[_Conference], end: float
) -> None:
    """Runs the calls until `end` (`time.monotonic`): signals each at its start, pauses, resumes
    and hangs up as the scenario says, reads usage every `SAMPLE_INTERVAL_S` and collects the
    pages' samples every `COLLECT_EVERY_S`. A call that fails ends the run (`rec.failure`)."""
    timeline = _Timeline.of(conns, conferences, end - rec.t0).events
    next_usage, next_collect = rec.t0, rec.t0 + COLLECT_EVERY_S
    k = 0
    while (now := time.monotonic()) < end:
        try:
            steps = []
            while k < len(timeline) and rec.t0 + timeline[k][0] <= now:
                steps.append(timeline[k][2:])
                k += 1
            _act_all(rec, steps, end)
            if now >= next_usage:
                rec.sample_usage()
                next_usage = next_tick(next_usage, SAMPLE_INTERVAL_S, time.monotonic())
            if now >= next_collect:
                rec.collect()
                next_collect += COLLECT_EVERY_S
        except (BrowserError, sfu.SfuError) as e:
            rec.failure = str(e)
            return
        due = [next_usage, next_collect, end] + ([rec.t0 + timeline[k][0]] if k < len(timeline) else [])
        time.sleep(max(0.0, min(due) - time.monotonic()))


def _act_all(rec: _Recorder, due: Sequence[tuple[str, Any]], end: float) -> None:
    """Does the timeline's `due` steps in order. Calls due together are signalled one after the
    other and then awaited together: awaited one by one, the last of four calls due at 120 s in
    `seed000-5.3.7` sent its first video 9-20 s late, each waiting for the ICE of those before it.
    Signalling itself is not instant (offer, answer and limits are page round trips): with ten
    browsers busy the fourth call's offer still left 7-12 s late, and the run's summary records
    each call's lateness (`offer_late`) for `reproduce` to judge."""
    signalled: list[tuple[Connection, Call]] = []

    def connect_signalled() -> None:
        # A call must connect before the run ends, and within the usual limit.
        timeout_s = max(0.5, min(CONNECT_TIMEOUT_S, end - time.monotonic()))
        wait_connected([call for _, call in signalled], timeout_s)
        for c, _ in signalled:
            rec.describe(c)
        signalled.clear()

    for action, arg in due:
        if action == "connect":
            signalled.append((arg, _signal(rec, arg)))
            continue
        if signalled:
            connect_signalled()
        _act(rec, action, arg)
    if signalled:
        connect_signalled()


def _signal(rec: _Recorder, c: Connection) -> Call:
    """Signals connection `c` between its pages (`signal`); ICE connects on its own."""
    offerer, answerer = rec.peers[c.offerer], rec.peers[c.answerer]
    forward, back = c.sent_by(c.offerer), c.sent_by(c.answerer)
    if c.via is not None:
        # Relay-only ICE through the TURN server at `via`, for this connection only.
        for page in (offerer, answerer):
            page.configure(rec.turns[c.via].ice_servers(), relay_only=True, key=c.key)
    return signal(
        offerer,
        answerer,
        forward.video if forward else None,
        back=back.video if back else None,
        audio=forward.audio if forward else None,
        back_audio=back.audio if back else None,
        key=c.key,
    )


def _act(rec: _Recorder, action: str, arg: Any) -> None:
    if action == "conference":
        conf: _Conference = arg
        first = conf.publish[0].streams[0]
        assert first.video is not None  # an SFU conference sends video (validated by the scenario)
        janus = rec.janus[conf.sfu]
        janus.create_room(
            conf.room, publishers=len(conf.publish), bitrate_bps=first.video.max_bitrate_bps or 0
        )
        publishers = {c.offerer: c for c in conf.publish}
        sfu.videoroom(
            janus,
            [rec.peers[n] for n in publishers],
            first.video,
            room=conf.room,
            audio=first.audio,
            publish_key=lambda p: publishers[p.node].key,
            view_key=lambda viewer, publisher: conf.views[(viewer.node, publisher.node)].key,
        )
        for c in (*conf.publish, *conf.views.values()):
            rec.describe(c)
    elif action in ("pause", "resume"):
        c, stream, paused, audio = arg
        args = ", ".join(json.dumps(a) for a in (c.key, paused, audio))
        rec.peers[stream.src].evaluate(f"rtcbench.pause({args})", action)
    elif action == "hangup":
        for page in rec.pages(arg):
            page.evaluate(f"rtcbench.hangup({json.dumps(arg.key)})", "hang up")


def peer_nodes(conns: Sequence[Connection]) -> list[str]:
    """The nodes that run a browser: every one that sends or receives a call, but an SFU's."""
    return sorted({n for c in conns for n in (c.offerer, c.answerer) if n != c.sfu})


def firefox_video(node: str, sent: Sequence[Stream]) -> VideoSettings | None:
    """The video settings Firefox at `node` takes for every call it sends: its bitrates as
    preferences (`firefox.preferences`), and one camera, the clip its page plays at the clip's
    size and rate (Chromium scales each call's track from its clip; Firefox's canvas is not
    scaled). `BrowserModeError` if its calls ask for different bitrates or cameras."""
    videos = [s.video for s in sent if s.video is not None]
    for what, values in (
        (
            "min, start and max bitrates",
            {(v.min_bitrate_bps, v.start_bitrate_bps, v.max_bitrate_bps) for v in videos},
        ),
        ("cameras", {(v.width, v.height, v.fps) for v in videos}),
    ):
        if len(values) > 1:
            raise BrowserModeError(
                f"node {node} runs Firefox, which takes one set of video {what} for all its calls, "
                f"and its calls ask for different ones: {sorted(values, key=str)}"
            )
    return videos[0] if videos else None


def check_choice(browsers: Browsers, conns: Sequence[Connection]) -> None:
    """`BrowserModeError` if `browsers` names a node that runs no browser in this run, or if a
    Firefox peer's calls ask for what Firefox cannot do per call (`firefox_video`)."""
    nodes = peer_nodes(conns)
    unknown = browsers.unknown_nodes(nodes)
    if unknown:
        raise BrowserModeError(
            f"--browser names {', '.join(unknown)}, which runs no browser here; the browser nodes are "
            f"{', '.join(nodes)}"
        )
    for node in nodes:
        if browsers.at(node) == FIREFOX:
            firefox_video(node, [s for c in conns for s in c.streams if s.src == node])


@contextlib.contextmanager
def _peers(
    bed: Testbed, conns: Sequence[Connection], work: Path, seed: int, browsers: Browsers
) -> Iterator[dict[str, Page]]:
    """A browser in every node that sends or receives a call (not an SFU's), Chromium or Firefox
    as `browsers` says, with its camera clip; Chromium peers force `browsers.forced_trials` (the
    L4S mode's and `--field-trials`), every peer writes its libwebrtc's log if `browsers.log`, and
    every Chromium peer its RTC event logs if `browsers.event_log`."""
    clips = work / "clips"
    clips.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        peers: dict[str, Page] = {}
        for node in peer_nodes(conns):
            sent = [s for c in conns for s in c.streams if s.src == node]
            clip = _clip_for(sent, clips, seed)
            if browsers.at(node) == FIREFOX:
                video = firefox_video(node, sent)
                start = firefox.Peer.start(bed, node, work / node, clip, video, browsers.log)
                peers[node] = stack.enter_context(start)
            else:
                peers[node] = stack.enter_context(
                    Peer.start(
                        bed, node, work / node, clip, browsers.forced_trials, browsers.log, browsers.event_log
                    )
                )
        yield peers


def _event_logs(peers_dir: Path, work: Path) -> dict[str, list[dict[str, Any]]]:
    """Per Chromium peer, its RTC event logs (one per peer connection): the file, relative to
    the run folder (which holds `work` under its own name), its size, and whether it ended
    (holds its end event; Chromium 156 never writes one, docs/eventlog.md)."""
    from rtcbench import eventlog

    logs: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(peers_dir.glob(f"*/{EVENT_LOG_DIR}/*.log")):
        node = path.parent.parent.name
        file = (Path(work.name) / path.relative_to(work)).as_posix()
        entry = {"file": file, "bytes": path.stat().st_size, "ended": eventlog.ended(path)}
        logs.setdefault(node, []).append(entry)
    return logs


def _close_pipe(pipe: IO[Any] | None) -> None:
    if pipe is not None and not pipe.closed:
        with contextlib.suppress(OSError):
            pipe.close()


def _usage_summary(samples: Sequence[Usage]) -> dict[str, Any] | None:
    if len(samples) < 2:
        return None
    span = samples[-1].t - samples[0].t
    return {
        "cpu_cores": (samples[-1].cpu_s - samples[0].cpu_s) / span if span > 0 else None,
        "pss_mb_mean": sum(u.pss_bytes for u in samples) / len(samples) / 1e6,
        "pss_mb_max": max(u.pss_bytes for u in samples) / 1e6,
        "processes_max": max(u.processes for u in samples),
    }


def _limitations(stats: pl.DataFrame, stream: Stream) -> dict[str, float] | None:
    """The share of the sender's samples in which its video encoder said what limited it
    (`qualityLimitationReason`: `none`, `bandwidth`, `cpu`, `other`). `cpu` means the machine,
    not the network, held the call back: its numbers describe this machine."""
    flow = stream.flows.get("video")
    if flow is None or stats.height == 0:
        return None
    sender = (pl.col("flow") == flow) & (pl.col("side") == "sender")
    reasons = stats.filter(sender & pl.col("quality_limitation_reason").is_not_null())
    column = reasons.get_column("quality_limitation_reason")
    if column.len() == 0:
        return None
    return {str(r): n / column.len() for r, n in sorted(column.value_counts().iter_rows())}


def camera_shortfall_us(samples: Sequence[dict[str, Any]], fps: float) -> list[float]:
    """How far short of its clip's frame rate a Chromium peer's camera fell in each interval
    between its page's samples, in µs of frame time: the frames the rate asks for in the interval
    less those the fake camera delivered (the `media-source` report's `frames`), beyond the one
    frame a sample's instant can miss. A camera on time gives 0; one that skipped two frames of
    30 fps in an interval, 33 ms. Chromium's camera skips frames it could not deliver in time,
    it does not send them late: so its timing error shows as frames short."""
    series: list[tuple[float, int]] = []
    source = None
    for sample in samples:
        for r in sample.get("stats", []):
            if r.get("type") != "media-source" or r.get("kind") != "video" or r.get("frames") is None:
                continue
            source = source or r.get("id")
            if r.get("id") == source:
                series.append((float(sample["t"]), int(r["frames"])))
    # The camera's start is not its timing: the sender's first sample finds no frame yet, the next
    # the first few (11 of 15 due, measured), so the intervals count from its second sample with
    # frames.
    started = [k for k, (_, frames) in enumerate(series) if frames > 0]
    series = series[started[1] :] if len(started) > 1 else []
    if fps <= 0:
        return []
    return [
        max(0.0, (t1 - t0) / 1000.0 * fps - (f1 - f0) - 1.0) / fps * 1e6
        for (t0, f0), (t1, f1) in itertools.pairwise(series)
    ]


def page_timings(
    conns: Sequence[Connection],
    browsers: Browsers,
    late_ms: dict[str, dict[str, list[float]]],
    stats: dict[str, list[dict[str, Any]]],
) -> list[ProcessTiming]:
    """Each browser's timing, as far as a run can see it: its page's statistics timer (every
    browser); its camera's frames, drawn by the page on the clip's grid (Firefox) or delivered by
    the fake camera against the clip's rate (Chromium, from `media-source` statistics). What the
    browser does inside (its encoder's threads, its pacer) is not seen: its encoder's frame rate
    and `qualityLimitationReason` are in the `stats` table and the machine judgement."""
    out = []
    for node, late in sorted(late_ms.items()):
        browser = browsers.at(node)
        name = f"{browser} at {node}"
        out.append(
            sampled_timing(
                name, "browser", "statistics timer", [x * 1e3 for x in late["timer"]], PAGE_TIMER_GOAL
            )
        )
        if late.get("draw"):
            draws = [x * 1e3 for x in late["draw"]]
            out.append(
                sampled_timing(f"camera of {name}", "camera", "frames drawn", draws, BROWSER_CAMERA_GOAL)
            )
        sent = [s.video for c in conns for s in c.streams if s.src == node and s.video is not None]
        if browser == CHROMIUM and sent:
            short = camera_shortfall_us(stats.get(node, []), max(v.fps for v in sent))
            if short:
                out.append(
                    sampled_timing(f"camera of {name}", "camera", "frames", short, BROWSER_CAMERA_GOAL)
                )
    return out


def _descriptions(described: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Each connection's session descriptions as each of its pages holds them (`SDP_FILE`)."""
    return {
        key: {node: {"local": v.get("local"), "remote": v.get("remote")} for node, v in sorted(views.items())}
        for key, views in sorted(described.items())
    }


def _feedback_negotiated(views: dict[str, dict[str, Any]] | None, c: Connection) -> str | None:
    """The congestion control feedback connection `c` negotiated (`sdp.feedback_of` of its
    offer and answer, as the page of its offerer, or else its answerer, holds them): `ccfb`
    (RFC 8888), `transport-cc` or None if neither, or if no page described it."""
    for node in (c.offerer, c.answerer):
        view = (views or {}).get(node)
        if view and view.get("local") and view.get("remote"):
            return feedback_of(view["local"], view["remote"])
    return None


def _setup(
    times: dict[str, dict[str, Any]] | None, c: Connection, t0_wall: float
) -> dict[str, float | None] | None:
    """Set-up times of connection `c` from its pages' records (Unix ms), from its offer: to ICE
    connected, and to the first frame shown at its answerer and, both ways, at its offerer; and
    `offer_late`, how long after the scenario's start for `c` (the run's time zero is `t0_wall`,
    Unix s) the offer was made. An SFU's end has no page: then the page's own end counts from when
    it made or took the offer."""
    if not times:
        return None
    off, ans = times.get(c.offerer, {}), times.get(c.answerer, {})
    offer = off.get("offer", ans.get("offer"))

    def since(t: float | None) -> float | None:
        return None if t is None or offer is None else (t - offer) / 1000.0

    return {
        "offer_late": None if offer is None else offer / 1000.0 - t0_wall - c.start_s,
        "connected": since(off.get("connected", ans.get("connected"))),
        "first_frame": since(ans.get("firstFrame")),
        "first_frame_back": since(off.get("firstFrame")),
    }


def browse(
    variant: Variant, seed: int, work: Path, *, capture: bool = False, browsers: Browsers | None = None
) -> Browsed:
    """Runs `variant`'s calls between browser peers on an emulated network, in real time: each
    Chromium or Firefox as `browsers` says (default: all Chromium), every Chromium with
    `browsers.forced_trials` forced (`chromium.field_trials`'s form: Chromium's L4S mode's, if
    `browsers.l4s`, and the field trials asked for). `work` receives the
    browsers' logs, the relay's files and (with `capture`) its pcaps; the camera clips and browser
    profiles are removed at the end. Raises `TestbedUnavailable` without root, `BrowserModeError`
    for a scenario browsers cannot run, `CrossTrafficError` for cross traffic that cannot be
    emulated, and a `TestbedError` naming what failed to start."""
    require()
    browsers = browsers or Browsers()
    browsers = browsers.for_controller(browsers.controller)
    if browsers.uses(CHROMIUM) and devtools.chromium() is None:
        raise BrowserModeError("browser mode needs Chromium (make chromium installs Debian's)")
    if browsers.uses(FIREFOX) and firefox.firefox() is None:
        raise BrowserModeError("--browser firefox needs Firefox (make firefox installs Debian's firefox-esr)")
    meta = planned_meta(variant, browsers.controller, seed)
    duration_s = float(meta["duration_s"])
    conns = connections(variant, meta, seed, browsers.l4s)
    if not conns:
        raise BrowserModeError(
            f"{variant.scenario_id}: browser mode runs a scenario's calls, and it has none"
        )
    check_choice(browsers, conns)
    conferences = _conferences(conns, meta)
    flows = cross.plan(variant, seed)
    work.mkdir(parents=True, exist_ok=True)
    relay_dir, cross_dir, peers_dir = work / "relay", work / "cross", work / "peers"
    started = time.monotonic()
    try:
        with build(variant) as bed, contextlib.ExitStack() as relay_stack, contextlib.ExitStack() as stack:
            r = relay.start(
                bed,
                variant,
                seed=seed,
                out_dir=relay_dir,
                capture=capture,
                trace=True,
                udp_head=relay.MAX_UDP_HEAD,
            )
            # On an error, the relay's control pipe is closed with the run (the testbed stops
            # the process itself).
            relay_stack.callback(_close_pipe, r.process.stdin)
            traffic = cross.start(bed, flows, end_s=duration_s, log_dir=cross_dir) if flows else None
            # The SFUs and TURN servers the calls go through, each in its node.
            januses = {
                node: stack.enter_context(
                    sfu.Janus.start(bed, node, work / f"janus-{node}", publishers=MAX_PUBLISHERS)
                )
                for node in sorted({c.sfu for c in conns if c.sfu is not None})
            }
            turns = {
                node: stack.enter_context(turn.Turn.start(bed, node, work / f"turn-{node}"))
                for node in sorted({c.via for c in conns if c.via is not None})
            }
            servers = {
                "relay": r.process.pid,
                **{f"janus@{n}": j.process.pid for n, j in januses.items()},
                **{f"coturn@{n}": t.process.pid for n, t in turns.items()},
            }
            peers = stack.enter_context(_peers(bed, conns, peers_dir, seed, browsers))
            for peer in peers.values():
                peer.start_sampling(SAMPLE_INTERVAL_S)
            t0 = r.go()
            t0_wall = time.time() - (time.monotonic() - t0)
            if traffic is not None:
                traffic.go(t0)
            rec = _Recorder(peers, servers, januses, turns, t0)
            end = t0 + duration_s
            _run_timeline(rec, conns, conferences, end)
            if browsers.event_log and rec.failure is None:
                # Chromium writes its event logs in batches and drops the one in progress
                # when a connection closes: one batch more, and they hold the whole run.
                time.sleep(EVENT_LOG_TAIL_S)
            for c in conns:
                views = rec.described.get(c.key)
                if views and not all(v.get("pair") for v in views.values()):
                    with contextlib.suppress(BrowserError):
                        rec.describe(c, wait_s=0.0)
            setup: dict[str, Any] = {}
            for c in conns:
                with contextlib.suppress(BrowserError):
                    setup[c.key] = _setup(rec.times(c), c, t0_wall) if c.key in rec.described else None
            with contextlib.suppress(BrowserError):
                rec.collect()
            late_ms: dict[str, dict[str, list[float]]] = {}
            for node, peer in peers.items():
                with contextlib.suppress(BrowserError):
                    late_ms[node] = peer.timing()
            for peer in peers.values():
                with contextlib.suppress(BrowserError):
                    peer.evaluate("rtcbench.close()", "end the calls")
            stack.close()  # browsers, then servers, before the relay's report
            if traffic is not None:
                if rec.failure is None:
                    traffic.wait(max(0.0, end - time.monotonic()) + END_MARGIN_S)
                else:
                    traffic.stop()
            report = r.stop()
            prefix = bed.topology.prefix
            address = {h.node: str(h.address.ip) for h in bed.topology.hosts}
    finally:
        shutil.rmtree(peers_dir / "clips", ignore_errors=True)
        for profile in peers_dir.glob("*/profile"):
            shutil.rmtree(profile, ignore_errors=True)
        for played in peers_dir.glob("*/clip.y4m"):  # a Firefox page's link to its clip
            played.unlink(missing_ok=True)
    wall_s = time.monotonic() - started
    (work / SDP_FILE).write_text(json.dumps(_descriptions(rec.described), indent=1) + "\n")
    tables, observed = browser_tables(
        meta, relay_dir, conns, rec.described, rec.stats, rec.usage, t0_wall, rec.t0, flows, address
    )
    info: dict[str, Any] = {
        "testbed": prefix,
        "wall_s": wall_s,
        **browsers.versions(),
        "browsers": {node: browsers.at(node) for node in peer_nodes(conns)},
        "field_trials": browsers.forced_trials or None,
        "l4s": browsers.l4s or None,
        "browser_log": browsers.log,
        "event_logs": _event_logs(peers_dir, work) if browsers.event_log else None,
        "failure": rec.failure,
        "calls": {
            s.name: {
                "connection": c.key,
                "feedback": _feedback_negotiated(rec.described.get(c.key), c),
                "setup_s": setup.get(c.key),
                "quality_limitation": _limitations(tables.stats, s),
            }
            for c in conns
            for s in c.streams
        },
        "usage": {name: _usage_summary(samples) for name, samples in sorted(rec.usage.items())},
        "observed": observed,
        **relay_info(report),
    }
    machine = judge(tables.stats, tables.usage, cameras(conns, meta))
    info["machine"] = machine
    if (warning := starved_warning(machine["starved_windows"], machine["cores"])) is not None:
        info["warnings"].append(warning)
    processes = relay_timings(report) + (traffic.timings() if traffic is not None else [])
    processes += page_timings(conns, browsers, late_ms, rec.stats)
    # What the browsers' encoders said of the machine counts as a late process does: the run's
    # rates there are the machine's.
    more = [] if warning is None else [warning]
    for name, call in sorted(info["calls"].items()):
        share = (call["quality_limitation"] or {}).get("cpu", 0.0)
        if share > CPU_LIMITED_SHARE:
            more.append(
                f"{name}: its encoder was limited by the CPU in {share:.0%} of its samples "
                f"(at most {CPU_LIMITED_SHARE:.0%})"
            )
    info.update(validity(processes, more))
    (relay_dir / RELAY_PACKETS).unlink(missing_ok=True)
    return Browsed(tables, info)
