"""One emulated run: a scenario variant on real packets between network namespaces, in real time
(docs/emulation.md, "Emulated runs"). `rtcbench.runner` calls `emulate` for `--mode emulate` and
writes its tables as it writes a simulated run's.

    tables, info = emulate(variant, "gcc", seed=1, work=folder / "emulation")

The topology is built from the scenario (`netns.build`); the relay carries every packet through
the scenario's links; the media agents run the calls and the cross-traffic agents the kernel TCP
and CBR flows; all start at one instant on CLOCK_MONOTONIC, the run's time zero, and the run
lasts the scenario's duration (a 100 s case takes 100 s). Then the relay's packet log and the
agents' logs become the trace tables (`rtcbench.emulation.trace`). Everything started is stopped
and removed with the topology, on success, error and Ctrl-C.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rtcbench import _core
from rtcbench.controller import UserController
from rtcbench.emulation import gstreamer, media
from rtcbench.emulation.trace import emulated_tables
from rtcbench.identity import GSTREAMER_CC
from rtcbench.learned import OnnxController
from rtcbench.scenarios import Variant
from rtcbench.tables import Tables
from rtcbench.testbed import cross, relay
from rtcbench.testbed.netns import build, require
from rtcbench.testbed.relay_log import RELAY_PACKETS
from rtcbench.testbed.timing import ProcessTiming, judge, relay_timings

__all__ = ["Emulated", "emulate", "planned_meta", "relay_info", "validity"]

END_MARGIN_S = 5.0
"""How long past its end (and the receivers' grace) a run may take to wind down before it counts
as hung."""


@dataclass
class Emulated:
    """An emulated run: its trace tables, and what the emulation itself reports for the summary
    (`summary.json` key `emulation`, docs/emulation.md)."""

    tables: Tables
    info: dict[str, Any]


def planned_meta(
    variant: Variant, controller: str | UserController | OnnxController, seed: int
) -> dict[str, Any]:
    """The run's `meta` (nodes, links, calls, flows and their ids) as the scenario plans it
    (`_core.run_meta`, what a simulated run of the same variant, controller and seed writes),
    computed without running anything: an emulated or browser run's tables use the same flow ids."""
    name = controller if isinstance(controller, str) else controller.name
    meta: dict[str, Any] = json.loads(_core.run_meta(variant.core, name, seed))
    return meta


def _agents_scheduling(
    logs: dict[tuple[str, str], list[dict[str, Any]]], cross_dir: Path | None
) -> list[str]:
    """Every agent's scheduling policy as it logged it (`fifo`, or `normal`/`other` when refused)."""
    policies = [
        r["policy"] for records in logs.values() for r in records[:1] if r.get("event") == "scheduling"
    ]
    if cross_dir is not None:
        for path in sorted(cross_dir.glob("*.jsonl")):
            first = path.read_text().splitlines()[:1]
            if first:
                record = json.loads(first[0])
                if record.get("event") == "scheduling":
                    policies.append(record["policy"])
    return policies


def relay_info(report: relay.RelayReport) -> dict[str, Any]:
    """What a run's summary says of its relay (`relay`: scheduling, timing error of departures and
    of each element's events, CPU, counts) and the warnings it gives (`warnings`: timing that
    cannot be trusted, records lost)."""
    warnings = [w for w in [report.warning()] if w is not None]
    if report.records_lost:
        warnings.append(
            f"the relay lost {report.records_lost} packet records (its writer fell behind): the packets "
            "table misses them"
        )
    return {
        "relay": {
            "scheduling": report.scheduling,
            "lateness_us": {
                "p50": report.lateness_p50_us,
                "p99": report.lateness_p99_us,
                "max": report.lateness_max_us,
            },
            "departures": report.departures,
            "keeping_up": report.keeping_up,
            "elements": [
                {
                    "name": e.name,
                    "kind": e.kind,
                    "events": e.events,
                    "lateness_us": {"p50": e.p50_us, "p99": e.p99_us, "max": e.max_us},
                }
                for e in report.elements
            ],
            "cpu_s": report.cpu_s,
            "forwarding_cpu_share": report.forwarding_cpu_s / report.wall_s if report.wall_s > 0 else None,
            "frames_in": report.frames_in,
            "frames_out": report.frames_out,
            "refused": report.refused,
            "socket_drops": sum(report.socket_drops),
            "send_waits": report.send_waits,
            "send_wait_max_ms": report.send_wait_max_ms,
            "send_wait_total_s": report.send_wait_total_s,
            "records_lost": report.records_lost,
            "processed_until_s": report.processed_until_s,
        },
        "warnings": warnings,
    }


def validity(processes: Sequence[ProcessTiming], more: Sequence[str] = ()) -> dict[str, Any]:
    """What a real-time run's summary says of its timing (docs/emulation.md, "Timing and
    validity"): every process that keeps time (`processes`: name, role, what it timed, its
    lateness and goal, whether it kept it), `valid`, and `reasons`: one line per process that
    missed its goal, then `more`. A run that is not valid is not the scenario's: marked, never
    dropped."""
    valid, reasons = judge(processes, more)
    return {"processes": [p.as_dict() for p in processes], "valid": valid, "reasons": reasons}


def emulate(
    variant: Variant,
    controller: str | UserController | OnnxController,
    seed: int,
    work: Path,
    *,
    capture: bool = False,
    real_encoders: bool = False,
) -> Emulated:
    """Runs `variant` with `controller` (a built-in name, or a Python controller's class:
    `media.python_controller`) on an emulated network, in real time.
    `work` receives the processes' configurations, logs and reports (and, with `capture`, the
    relay's pcaps). Raises `TestbedUnavailable` without root or `ip`, `CrossTrafficError` for
    cross traffic that cannot be emulated, and a `TestbedError` naming the process that failed.
    With `real_encoders` the senders encode real video with GStreamer (`--mode gstreamer`,
    `rtcbench.emulation.gstreamer`), and `info` gains GStreamer's `version`, `encoders` (per
    call) and `cpu_limited`."""
    require()
    if real_encoders:
        gstreamer.check_video(variant)
        gst_version = gstreamer.version()
        gstreamer.binary()
    if isinstance(controller, UserController):
        media.python_controller(controller)  # refuses what cannot cross, before anything starts
    meta = planned_meta(variant, controller, seed)
    duration_s = float(meta["duration_s"])
    calls = media.plan(variant, seed)
    flows = cross.plan(variant, seed)
    work.mkdir(parents=True, exist_ok=True)
    relay_dir, media_dir, cross_dir = work / "relay", work / "media", work / "cross"
    started = time.monotonic()
    with build(variant) as bed:
        r = relay.start(bed, variant, seed=seed, out_dir=relay_dir, capture=capture, trace=True)
        calls_running = (
            media.start(
                bed,
                variant,
                seed=seed,
                controller=controller,
                out_dir=media_dir,
                end_s=duration_s,
                real_encoders=real_encoders,
            )
            if calls
            else None
        )
        traffic = cross.start(bed, flows, end_s=duration_s, log_dir=cross_dir) if flows else None
        t0 = r.go()
        if calls_running is not None:
            calls_running.go(t0)
        if traffic is not None:
            traffic.go(t0)
        # Receivers listen a grace period past the end, so that what the links still hold arrives;
        # the relay runs as long.
        end = t0 + duration_s + media.RECEIVER_GRACE_S
        if calls_running is not None:
            calls_running.wait(max(0.0, end - time.monotonic()) + END_MARGIN_S)
        if traffic is not None:
            traffic.wait(max(0.0, end - time.monotonic()) + END_MARGIN_S)
        while (left := end - time.monotonic()) > 0:
            time.sleep(min(left, 0.1))
        report = r.stop()
        address = {h.node: str(h.address.ip) for h in bed.topology.hosts}
        prefix = bed.topology.prefix
    wall_s = time.monotonic() - started
    logs = calls_running.logs() if calls_running is not None else {}
    if real_encoders and meta["controller"] == GSTREAMER_CC:
        gstreamer.number_received_frames(logs)
    tables = emulated_tables(meta, relay_dir, calls, flows, address, logs)
    policies = _agents_scheduling(logs, cross_dir if traffic is not None else None)
    processes = relay_timings(report)
    if calls_running is not None:
        processes += calls_running.timings(logs)
    if traffic is not None:
        processes += traffic.timings()
    limited: list[str] = []
    info = {
        "testbed": prefix,
        "wall_s": wall_s,
        **relay_info(report),
        "agents_scheduling": sorted(set(policies)),
    }
    if any(p != "fifo" for p in policies):
        info["warnings"].append(
            "an agent ran without real-time scheduling (the system refused SCHED_FIFO): its timing "
            "may follow the machine's load"
        )
    if real_encoders:
        encoders, limited = gstreamer.judge(logs)
        if meta["controller"] == GSTREAMER_CC:
            info["warnings"].extend(gstreamer.rtp_stack_warnings(calls))
        info["version"] = gst_version
        info["encoders"] = encoders
        info["cpu_limited"] = sorted(call for call, e in encoders.items() if e["cpu_limited"])
        info["warnings"].extend(limited)
    # A CPU-limited encoder fell behind its camera as a late process does: the run's rate is the
    # machine's.
    info.update(validity(processes, limited))
    (relay_dir / RELAY_PACKETS).unlink(missing_ok=True)
    return Emulated(tables, info)
