"""What a run is: the key of its results folder, and the provenance its summary records.

A results folder is keyed by exactly what ran (docs/traces.md, "Run identity"): the scenario's
fingerprint (the SHA-256 the core computes over the fully resolved variant, with `--set`
overrides applied, controller parameters included and each capacity trace file replaced by the
SHA-256 of its contents; titles and descriptions left out) and the controller's identity (its
name; for a Python controller also the SHA-256 of the file that defines it and, for an instance
or a factory, of its state). Two different configurations never share a folder; the same one
finds its folder again, so a suite or sweep resumes it.

The provenance (rtcbench version, the git commit of the checkout it runs from and whether that
checkout had uncommitted changes, Python, the command) is recorded beside it, so that `compare
old new` can say which code made each side.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import pickle
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from rtcbench import _core
from rtcbench.controller import UserController
from rtcbench.learned import OnnxController

__all__ = [
    "BROWSER",
    "BROWSER_REVISION",
    "EMULATE",
    "EVENTLOG",
    "GSTREAMER",
    "KEY_LENGTH",
    "MODEL_REVISION",
    "MODES",
    "REAL_TIME_MODES",
    "SIMULATE",
    "TESTBED_INFO",
    "controller_identity",
    "model_revision",
    "provenance",
    "run_key",
]

MODEL_REVISION = 17
"""The revision of what rtcbench makes of a configuration: the simulator, the media stack and the
metrics. Every change that changes a built-in run's trace, time series or summary raises it
(tests/test_streaming.py refuses new digests made under the old number), and it is part of every
run key, so a results folder written by an older behaviour is never resumed as a current run.
1: until calls repaired loss; 2: NACK/RTX, keyframe requests, in-order decoding and the jitter
buffer's playout timing (issue 14); 3: RED/ULPFEC on by default, VP8 payload descriptors with
picture IDs, video sequence numbers given as packets leave the pacer (issue 14); 4: `meta` says
each call's conference, topology, relay and role and lists the conferences (issue 15: summaries
change, traces and time series of every earlier built-in run are bit-identical); 5: the links table
gains a Wi-Fi node's MAC columns (issue 16: null for links; every other column, every time series
and summary of every earlier built-in run is bit-identical); 6: a BSS's wake-ups are ordered by
when they were last scheduled (issue 16's speed work: seed 004's testbed changes, every other
built-in run is bit-identical); 7: the links table gains an LTE buffer's columns (issue 17:
null for links and Wi-Fi nodes; every other column, every time series and summary of every
earlier built-in run is bit-identical); 8: the links table gains a Wi-Fi node's `delivered_bps`,
and a flow through a Wi-Fi node or an LTE buffer has the capacity its radio hop could have given
it (issue 32: null for links; the time series and summaries of the Wi-Fi and LTE runs change in
`capacity_bps` and `utilization` only); 9: summaries gain `periods`, the phases cut again where a
flow sharing the link starts or stops (issue 32: traces and time series are bit-identical, and so
is every other key of every summary); 10: the frames table gains `first_us` (when a frame's first
packet arrived) and video flows `jitter_buffer_ms` (issue 33: every other column and key of every
earlier built-in run is bit-identical); 11: `gcc`'s window pushback runs in rtcbench, with the
bytes in flight counted as libwebrtc counts them: every packet up to the newest one feedback
covered leaves the count (issue 34: every run with `gcc` changes); 12: under `gcc` the video's floor is
libwebrtc's 30 kbit/s and GoogCC's the streams' least allocation, not the scenario's `video.min`,
which Chromium 156 was measured not to hold (issue 34: `gcc` runs whose estimate fell below the
scenario's minimum change); 13: as Chromium 156, `gcc` in a call with audio is not capped at the
call's maximum, and its first probes are bounded by twice the streams' maximum (issue 34: `gcc`
runs with audio whose path has room above the call's maximum change); 14: `gcc`'s loss-based
estimator has the defaults Chromium 156 runs with (libwebrtc's of May 2025, not the `goog_cc`
crate's of December 2024; issue 34: every `gcc` run changes); 15: the frames table gains the
dates of each frame's stages (`encoded_us`, `first_sent_us`, `last_sent_us`, `last_arrival_us`,
`decode_us`) and video flows the frame delay by stage (`stage_*_ms`, `frame_delay_mean_ms`), their
convergence after events (`reconvergence_s`, `recovery_s`) and their `flags`; periods record what
began them, and on a radio hop are also cut where a flow sharing its medium starts or stops; a path
across a radio medium has it as its bottleneck in every variant unless a wired link is narrower
than the medium's lowest rate, and its capacity counts every wired link of it (issue 59: a Wi-Fi or
LTE run's periods, and its video flows' start-up convergence, change, and seed000-5.3.5 to 5.3.8's
bottlenecks, phases, fairness and one path's capacity where a station is at location A; every
other column and key of every earlier built-in run is bit-identical); 16: the links table gains a
DualPI2 queue's state (`l_queue_bytes` to `c_drops`), the feedback table the CE marks each RFC
8888 report told of (`ce_reported`), and every flow its ECN counts (`ect0_packets_sent`,
`ect1_packets_sent`, `ce_packets_received`, `ce_ratio`; video flows `ce_reported`) (issue 60:
every earlier column and key of every built-in run is bit-identical); 17: `gcc`'s controller table
gains `probe_clusters`, the probe clusters it has asked for (issue 62: every other column, time
series and summary of every built-in run is bit-identical)."""

BROWSER_REVISION = 16
"""The revision of what a browser run depends on in rtcbench: the network model, the relay and the
metrics, not rtcbench's media stack and controllers, which Chromium's peers do not use. It is
raised with `MODEL_REVISION` whenever a change reaches what a browser run uses, and left alone
otherwise, so hours of browser runs stay current across a controller fix: 11 left it at 10; 15 raised
it with the model's (a browser run's video flows gain the frame delay by stage its counters give);
16 too (a browser run's flows gain their ECN counts from the relay's packets, its stats table
Chromium's ECN counters, its folder the negotiated SDP, and `--cc scream2` runs Chromium's ScreamV2)."""


KEY_LENGTH = 12
"""Hex digits of a run key: 48 bits, so that a collision among the runs of one results tree is
out of reach (about 10^-5 for a million configurations) while a path stays readable."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _source_sha256(obj: object) -> str | None:
    """SHA-256 of the file that defines `obj` (its class, for an instance), if it has one."""
    target = obj if inspect.isclass(obj) or inspect.isroutine(obj) else type(obj)
    if isinstance(target, functools.partial):
        target = target.func
    try:
        path = inspect.getsourcefile(target)
    except TypeError:
        return None
    if path is None:
        return None
    try:
        return _sha256(Path(path).read_bytes())
    except OSError:
        return None


def _state_sha256(obj: object) -> str | None:
    """SHA-256 of the state of an instance or a factory (a `functools.partial`, a closure): what
    its constructor arguments or bound values were. Classes have none beyond their source."""
    if obj is None or inspect.isclass(obj):
        return None
    try:
        data = pickle.dumps(obj, protocol=4)
    except Exception:
        # A lambda or a local function: its code and the values it closes over.
        code = getattr(obj, "__code__", None)
        cells = getattr(obj, "__closure__", None) or ()
        state = vars(obj) if hasattr(obj, "__dict__") and not inspect.isroutine(obj) else {}
        data = repr(
            (
                code.co_code if code is not None else None,
                [_cell_repr(c) for c in cells],
                sorted((k, repr(v)) for k, v in state.items()),
            )
        ).encode()
    return _sha256(data)


def _cell_repr(cell: Any) -> str:
    try:
        return repr(cell.cell_contents)
    except ValueError:  # an empty cell
        return "<empty>"


def controller_identity(controller: str | UserController | OnnxController) -> dict[str, str | None]:
    """The controller as a run's identity counts it: its name, and for a Python controller the
    SHA-256 of its defining file and of its state, for a learned policy the SHA-256 of the model
    (None where there is none)."""
    if isinstance(controller, str):
        return {"name": controller, "source_sha256": None, "state_sha256": None}
    if isinstance(controller, OnnxController):
        return {"name": controller.name, "source_sha256": controller.sha256, "state_sha256": None}
    return {
        "name": controller.name,
        "source_sha256": _source_sha256(controller.origin),
        "state_sha256": _state_sha256(controller.origin),
    }


SIMULATE = "simulate"
"""The mode of a run in rtcbench's simulator; `EMULATE`: on real packets between network
namespaces (docs/emulation.md); `BROWSER`: between real Chromium peers over such a network
(docs/browser.md)."""
EMULATE = "emulate"
BROWSER = "browser"
GSTREAMER = "gstreamer"
"""An emulated run whose senders encode real video with GStreamer (docs/gstreamer.md)."""
GSTREAMER_CC = "rtpgccbwe"
"""`--cc rtpgccbwe`: GStreamer's own GoogCC element (`gst-plugin-rtp`) on a GStreamer RTP stack at
both ends of each call; a GStreamer run only (docs/gstreamer.md, "GStreamer's own GoogCC")."""
EVENTLOG = "eventlog"
"""The mode of a run read from an RTC event log (`rtcbench eventlog`, docs/eventlog.md): not a
mode `rtcbench run` takes, but the mode its summary records."""
MODES = (SIMULATE, EMULATE, BROWSER, GSTREAMER)
REAL_TIME_MODES = (EMULATE, BROWSER, GSTREAMER)
"""Modes whose runs take their scenario's duration and the machine's testbed: one at a time."""
TESTBED_INFO = {EMULATE: "emulation", BROWSER: "browser", GSTREAMER: "gstreamer"}
"""The summary key under which a real-time run records what its testbed reported."""


def model_revision(mode: str = SIMULATE) -> int:
    """The revision that keys a run of `mode`: `BROWSER_REVISION` for a browser run,
    `MODEL_REVISION` for the others."""
    return BROWSER_REVISION if mode == BROWSER else MODEL_REVISION


def run_key(
    scenario_fingerprint: str,
    controller: dict[str, str | None],
    mode: str = SIMULATE,
    runtime: str | None = None,
) -> str:
    """The folder name that keys one configuration: the first `KEY_LENGTH` hex digits of the
    SHA-256 of the scenario's fingerprint, the controller's identity, for a run that is not
    simulated its mode and what ran it beyond rtcbench (`runtime`: a browser run's Chromium
    version), and the revision of rtcbench that made it (`model_revision`)."""
    parts = [scenario_fingerprint, *(f"{k}={controller[k] or ''}" for k in sorted(controller))]
    if mode != SIMULATE:
        parts.append(f"mode={mode}")
    if runtime is not None:
        parts.append(f"runtime={runtime}")
    parts.append(f"model={model_revision(mode)}")
    return _sha256("\n".join(parts).encode())[:KEY_LENGTH]


@functools.cache
def _git() -> tuple[str | None, bool | None]:
    """(commit, dirty) of the git checkout this package runs from, or (None, None) when it is not
    run from a checkout (an installed wheel) or git is missing. Asked once per process."""
    return _git_state(Path(__file__).resolve().parents[2])


def _git_state(root: Path) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the git checkout at `root`, read without writing to it: `git status`
    would otherwise refresh the checkout's index under `.git/index.lock`, a write outside `--out`
    that fails a `git commit` the user runs meanwhile (`--no-optional-locks`)."""
    if not (root / ".git").exists():
        return None, None

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "--no-optional-locks", "-C", str(root), *args],
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return None, None
    status = git("status", "--porcelain", "--untracked-files=no")
    return commit, (bool(status) if status is not None else None)


def provenance(command: str | None) -> dict[str, Any]:
    """What made a run: rtcbench's version, the commit and state of its checkout, Python, the
    platform and the command line (None when called from Python)."""
    commit, dirty = _git()
    return {
        "rtcbench_version": _core.version(),
        "git_commit": commit,
        "git_dirty": dirty,
        "python": platform.python_version(),
        "platform": f"{sys.platform}-{platform.machine()}",
        "command": command,
    }
