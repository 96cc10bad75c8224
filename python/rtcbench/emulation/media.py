"""Media agents: the calls of a scenario between a testbed's hosts, each end an `rtcbench-media`
process (`crates/rtcbench-live`) running the simulator's own sans-IO sender or receiver
(`rtcbench-rtp`), built from the same `CallPlan`, on a UDP socket in real time
(docs/emulation.md, "Media").

    with testbed.build(variant) as bed:
        r = testbed.relay.start(bed, variant, seed=1, out_dir=out / "relay")
        calls = media.start(bed, variant, seed=1, controller="gcc", out_dir=out / "media")
        t0 = r.go()
        calls.go(t0)
        calls.wait()                  # every agent ends at the end of the run
        r.stop()
        logs = calls.logs()           # per call and role, the agent's JSON Lines records

A Python controller (a class) runs in a helper process beside each sender
(`rtcbench.emulation._controller_agent`), fed the same inputs as in the simulator.
"""

from __future__ import annotations

import contextlib
import json
import select
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rtcbench import _core
from rtcbench.controller import Controller, UserController
from rtcbench.identity import GSTREAMER_CC
from rtcbench.learned import OnnxController
from rtcbench.scenarios import Variant
from rtcbench.testbed import binaries
from rtcbench.testbed.binaries import pipe
from rtcbench.testbed.netns import Testbed, TestbedError
from rtcbench.testbed.timing import CAMERA_GOAL, MEDIA_GOAL, ProcessTiming, agent_timing

MEDIA_ENV = "RTCBENCH_MEDIA"
"""Names the media agent binary to use instead of the one `make build` puts in the package."""
FIRST_PORT = 5004
"""Call k uses UDP port 5004 + 2k at both ends (RTP and RTCP multiplexed, RFC 5761)."""
READY_TIMEOUT_S = 5.0
STOP_TIMEOUT_S = 5.0
GO_MARGIN_S = 0.05
RECEIVER_GRACE_S = 1.0
"""Receivers listen this long past the end, so that what the links still hold arrives."""


class MediaError(TestbedError):
    """A media agent could not start or failed (one line)."""


def binary() -> Path:
    """The media agent executable: `$RTCBENCH_MEDIA`, else the one built beside the package."""
    return binaries.find("rtcbench-media", MEDIA_ENV, "media agent")


@dataclass(frozen=True)
class PlannedCall:
    """A call of the scenario as the agents build it: `plan` is the simulator's `CallPlan`."""

    index: int
    name: str
    src: str
    dst: str
    plan: dict[str, Any]
    codec: str = "vp8"
    """The call's `video.codec` (the model and the browsers' default, VP8)."""
    picture: str = "noise-clip"
    """The call's `video.picture`: what a real encoder encodes (`--mode gstreamer`)."""
    degradation: str | None = None
    """The call's `video.degradation`, if set: whether a real encoder's picture is scaled down the
    resolution ladder as the rate falls (`--mode gstreamer`)."""


def plan(variant: Variant, seed: int) -> list[PlannedCall]:
    """The scenario's calls for `seed`, as the simulator builds them (pure: nothing started): every
    `[[calls]]` entry, then the streams of each mesh or one-to-many conference, which are ordinary
    calls, with the ids `meta.calls` gives them.

    Raises `MediaError` (one line naming the field) for what the media agents cannot run: a call
    relayed through a TURN server (`via`), and an SFU conference: the agents talk to each other
    directly, and there is no TURN relay or forwarding server among them."""
    _refuse_relays(variant)
    return call_plans(variant, seed)


def call_plans(variant: Variant, seed: int) -> list[PlannedCall]:
    """Every call of the scenario for `seed` as the simulator builds it, with its `meta.calls` id:
    `[[calls]]` entries and every conference's calls, an SFU's forward legs among them (pure)."""
    calls = json.loads(_core.call_plans(variant.core, seed))
    return [
        PlannedCall(
            int(c["id"]),
            c["name"],
            c["from"],
            c["to"],
            c["plan"],
            c["codec"],
            c["picture"],
            c["degradation"],
        )
        for c in calls
    ]


def _refuse_relays(variant: Variant) -> None:
    """`MediaError` for the first call or conference that needs a relay or an SFU."""
    where = variant.scenario_id
    direct = "the media agents send to each other directly, with no TURN relay between them"
    instead = "run it simulated or with --mode browser"
    for i, call in enumerate(variant.calls):
        if "via" in call:
            raise MediaError(
                f"{where}: calls.{i}.via = {call['via']!r} cannot be emulated: {direct}; {instead}"
            )
    for i, conf in enumerate(variant.conferences):
        if conf.get("topology") == "sfu":
            raise MediaError(
                f'{where}: conferences.{i} (topology "sfu") cannot be emulated: the media agents have '
                f"no forwarding server (SFU); {instead}"
            )
        if "via" in conf:
            raise MediaError(
                f"{where}: conferences.{i}.via = {conf['via']!r} cannot be emulated: {direct}; {instead}"
            )


@dataclass
class Agent:
    call: str
    role: str
    node: str
    process: subprocess.Popen[str]
    log: Path
    stderr: Path

    def last_error(self) -> str:
        lines = [ln.strip() for ln in self.stderr.read_text(errors="replace").splitlines() if ln.strip()]
        if lines:
            return lines[-1].removeprefix("rtcbench-media: ").removeprefix("rtcbench-gst-media: ")
        return f"it ended with status {self.process.returncode} and said nothing"


@dataclass
class MediaCalls:
    """The agents of one run (`start`): ready, then running once `go` is called."""

    agents: list[Agent] = field(default_factory=list)
    t0: float | None = None

    def go(self, t0: float | None = None) -> float:
        """Starts the calls at `t0` (`time.monotonic()` seconds; default: `GO_MARGIN_S` from now)."""
        if self.t0 is not None:
            raise RuntimeError("the calls are already going")
        self.t0 = time.monotonic() + GO_MARGIN_S if t0 is None else t0
        for a in self.agents:
            try:
                pipe(a.process.stdin).write(f"go {round(self.t0 * 1e9)}\n")
                pipe(a.process.stdin).flush()
            except BrokenPipeError:
                pass  # it has ended: `wait` says why
        return self.t0

    def wait(self, timeout: float | None = None) -> None:
        """Waits until every agent has ended; `MediaError` naming the first that failed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for a in self.agents:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            a.process.wait(left)
        self._close()
        for a in self.agents:
            if a.process.returncode != 0:
                raise MediaError(f"media ({a.role} of {a.call} at {a.node}): {a.last_error()}")

    def stop(self) -> None:
        """Ends every agent now; each writes its log."""
        for a in self.agents:
            stdin = pipe(a.process.stdin)
            if not stdin.closed:
                try:
                    stdin.write("stop\n")
                    stdin.flush()
                except BrokenPipeError:
                    pass
        self.wait(STOP_TIMEOUT_S)

    def logs(self) -> dict[tuple[str, str], list[dict[str, Any]]]:
        """Each agent's records, by (call name, role)."""
        return {(a.call, a.role): read_log(a.log) for a in self.agents}

    def timings(self, logs: Mapping[tuple[str, str], Sequence[Mapping[str, Any]]]) -> list[ProcessTiming]:
        """How late each agent took up its endpoint's deadlines (its log's `timing` record), and
        how late each real encoder's camera delivered its frames (the `encoder` record's
        `camera`), from the agents' `logs`; an agent that wrote none (it failed) is left out."""
        out = []
        for a in self.agents:
            records = logs.get((a.call, a.role), [])
            for r in records:
                if r.get("event") == "timing":
                    name = f"media {a.role} of {a.call} at {a.node}"
                    out.append(agent_timing(name, "media", "deadlines", r["deadlines"], MEDIA_GOAL))
                elif r.get("event") == "encoder" and r.get("camera") is not None:
                    name = f"camera of {a.call} at {a.node}"
                    out.append(agent_timing(name, "camera", "frames", r["camera"], CAMERA_GOAL))
        return out

    def _close(self) -> None:
        for a in self.agents:
            for stream in (a.process.stdin, a.process.stdout):
                if stream is not None and not stream.closed:
                    with contextlib.suppress(BrokenPipeError):
                        stream.close()


def python_controller(controller: UserController) -> dict[str, Any]:
    """How the media agent's helper finds a Python controller (`_controller_agent`): its class's
    module (imported by name, else from its file) and qualified name, and this process's import
    path. Raises `MediaError` (one line) for a controller that cannot cross into another process:
    an instance or a factory (their state would not come along), a class defined in a function
    or in the script being run."""
    cls = controller.origin
    if not (isinstance(cls, type) and issubclass(cls, Controller)):
        raise MediaError(
            f"controller {controller.name}: emulation runs a Python controller in the media agent's own "
            "process, from its class; give the class (or package.module:Class, path/to/file.py:Class), "
            "not an instance or a function"
        )
    module = sys.modules.get(cls.__module__)
    file = getattr(module, "__file__", None)
    if cls.__module__ == "__main__" or "<locals>" in cls.__qualname__ or module is None:
        raise MediaError(
            f"controller {controller.name}: emulation imports a Python controller again in the media "
            "agent's process; define its class at the top level of a module or file, not in the script "
            "being run or inside a function"
        )
    return {"module": cls.__module__, "file": file, "qualname": cls.__qualname__, "sys_path": list(sys.path)}


def start(
    bed: Testbed,
    variant: Variant,
    *,
    seed: int,
    controller: str | UserController | OnnxController,
    out_dir: Path,
    end_s: float | None = None,
    real_encoders: bool = False,
) -> MediaCalls:
    """Starts both ends of every call of `variant` (receivers first) in their nodes' namespaces of
    `bed` and waits until each is ready; they begin at `MediaCalls.go`; senders end at `end_s`
    (default: the latest call's stop), receivers `RECEIVER_GRACE_S` later. Configurations, logs and
    each agent's stderr go to `out_dir`. A Python controller (a class: `python_controller`) runs
    in a helper process beside each sender. With `real_encoders`, each sender of a call with
    video is the GStreamer stack's agent, encoding real video (`rtcbench.emulation.gstreamer`);
    with `real_encoders` and GStreamer's own controller (`rtpgccbwe`), both ends of every call
    are GStreamer's RTP stack."""
    exe = binary()
    sender_exe = exe
    name = controller if isinstance(controller, str) else controller.name
    gst_rtp = real_encoders and name == GSTREAMER_CC
    if real_encoders:
        from rtcbench.emulation import gstreamer  # it builds on this module

        # GStreamer's own controller: both ends are GStreamer's RTP stack.
        sender_exe = exe = gstreamer.rtp_binary() if gst_rtp else gstreamer.binary()
    out_dir.mkdir(parents=True, exist_ok=True)
    calls = plan(variant, seed)
    helper: list[str] | None = None
    feedback = None
    if isinstance(controller, UserController):
        helper_cfg = out_dir / "controller.json"
        helper_cfg.write_text(json.dumps(python_controller(controller)))
        helper = [sys.executable, "-m", "rtcbench.emulation._controller_agent", str(helper_cfg)]
        feedback = getattr(controller.origin, "feedback", "twcc")
    # The controller table's own columns, which no metric of a Python controller may take.
    reserved = [column for column, *_ in _core.trace_schema()["controller"]]
    if end_s is None:
        end_s = max((_core.duration_s(c.plan["stop"]) for c in calls), default=0.0)
    topo = bed.topology
    media = MediaCalls()
    try:
        for role in ("receiver", "sender"):
            for c in calls:
                node, peer = (c.dst, c.src) if role == "receiver" else (c.src, c.dst)
                port = FIRST_PORT + 2 * c.index
                cfg: dict[str, Any] = {
                    "role": role,
                    "controller": name,
                    "plan": c.plan,
                    "local": f"{topo.host(node).address.ip}:{port}",
                    "peer": f"{topo.host(peer).address.ip}:{port}",
                    "end": f"{round((end_s + (RECEIVER_GRACE_S if role == 'receiver' else 0.0)) * 1e6)}us",
                    "log": str(out_dir / f"{role}-call{c.index}.jsonl"),
                }
                if helper is not None and role == "sender":
                    cfg["python"] = {
                        "argv": helper,
                        "stderr": str(out_dir / f"controller-call{c.index}.stderr"),
                        "label": f"controller {name} (call {c.index})",
                        "reserved": reserved,
                    }
                elif helper is not None:
                    cfg["user_feedback"] = feedback
                if isinstance(controller, OnnxController):
                    # The agents read the model and check it is the one the run is keyed by.
                    cfg["policy"] = {"path": str(controller.path.resolve()), "sha256": controller.sha256}
                real = real_encoders and role == "sender" and c.plan.get("video") is not None
                if real or gst_rtp:
                    # The RTP stack's receiver needs the codec too (its caps, its frames).
                    cfg["encoder"] = gstreamer.encoder_config(c, out_dir, seed)
                program = sender_exe if real else exe
                media.agents.append(_launch(bed, program, node, c.name, role, cfg, out_dir))
            _await_ready(media)
    except BaseException:
        media._close()
        raise
    return media


def _launch(
    bed: Testbed, exe: Path, node: str, call: str, role: str, cfg: dict[str, Any], out: Path
) -> Agent:
    index = Path(cfg["log"]).stem
    stderr = out / f"{index}.stderr"
    process = binaries.launch(bed, node, exe, cfg, out / f"{index}.json", stderr)
    return Agent(call, role, node, process, Path(cfg["log"]), stderr)


def _await_ready(media: MediaCalls) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    waiting = {pipe(a.process.stdout).fileno(): a for a in media.agents if not pipe(a.process.stdout).closed}
    while waiting:
        left = deadline - time.monotonic()
        if left <= 0:
            a = next(iter(waiting.values()))
            raise MediaError(f"media ({a.role} of {a.call} at {a.node}) was not ready in {READY_TIMEOUT_S} s")
        readable, _, _ = select.select(list(waiting), [], [], left)
        for fd in readable:
            a = waiting.pop(fd)
            line = pipe(a.process.stdout).readline()
            pipe(a.process.stdout).close()
            if line.strip() != "ready":
                a.process.wait()
                raise MediaError(f"media ({a.role} of {a.call} at {a.node}): {a.last_error()}")


def read_log(path: Path) -> list[dict[str, Any]]:
    """An agent's records (JSON Lines), in the order written."""
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def media_rate_bps(records: list[dict[str, Any]], from_s: float, to_s: float) -> float:
    """Bit rate on the wire of the RTP datagrams a receiver got in [from_s, to_s)."""
    got: int = sum(
        int(r["size"])
        for r in records
        if r["event"] == "received" and not r["rtcp"] and from_s <= r["t_us"] / 1e6 < to_s
    )
    return got * 8 / (to_s - from_s)
