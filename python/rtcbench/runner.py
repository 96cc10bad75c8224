"""Running scenarios: simulate each variant, compute metrics from the trace tables, write results."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from rtcbench import _core, metrics
from rtcbench.controller import (
    ControllerLike,
    UnknownController,
    UserController,
    load_controller,
    user_controller,
)
from rtcbench.metrics import Tables
from rtcbench.results import atomic_dir, run_dir, tables_from_core, write_parquet, write_tables
from rtcbench.scenarios import Variant, resolve

__all__ = [
    "ControllerArg",
    "RunResult",
    "UnknownController",
    "controller_name",
    "controllers",
    "resolve_controller",
    "run",
    "run_variant",
    "summarize_core",
]

FIGURE = "overview.png"
"""The standard figure of a run: rates against capacity, queuing delay, loss."""


ControllerArg = str | ControllerLike | UserController
"""A controller as runs take it: a built-in name (`controllers`), ``package.module:Class`` or
``path/to/file.py:Class``, or a Python controller (`rtcbench.controller.user_controller`)."""


def controllers() -> list[tuple[str, str]]:
    """(name, description) of every built-in controller."""
    return list(_core.controllers())


def resolve_controller(controller: ControllerArg, *, share_instance: bool = True) -> str | UserController:
    """A built-in controller's name as it is; a Python controller as the `UserController` that builds
    it per call (``share_instance``: see `rtcbench.controller.user_controller`). Raises
    `UnknownController` (or its `ControllerNotFound`) for a name that is neither."""
    if isinstance(controller, UserController):
        return controller
    if isinstance(controller, str):
        known = [n for n, _ in controllers()]
        if controller in known:
            return controller
        if ":" in controller:
            return load_controller(controller)
        raise UnknownController(
            f"unknown controller {controller!r} (allowed: {', '.join(known)}); a Python controller is "
            f"named package.module:Class or path/to/file.py:Class"
        )
    return user_controller(controller, share_instance=share_instance)


def controller_name(controller: str | UserController) -> str:
    """The name runs, traces and results folders give a resolved controller."""
    return controller if isinstance(controller, str) else controller.name


@dataclass(frozen=True)
class RunResult:
    """One finished run: where it was written (if anywhere), its summary and its tables."""

    path: Path | None
    summary: dict[str, Any]
    tables: Tables
    timeseries: pl.DataFrame


def summarize_core(
    variant: Variant, controller: str, seed: int, raw: dict[str, Any], *, command: str | None = None
) -> tuple[dict[str, Any], Tables, pl.DataFrame]:
    """The summary (as `summary.json` holds it, ``wall_s`` not yet known), trace tables and
    timeseries of a run as `_core.simulate` (or `_core.Simulation.finish`) returns it."""
    meta: dict[str, Any] = json.loads(raw["meta"])
    tables = tables_from_core(raw, meta)
    ts = metrics.timeseries(tables)
    summ = metrics.summarize(tables, ts)
    summary: dict[str, Any] = {
        "scenario": variant.scenario_id,
        "variant": variant.variant,
        "controller": controller,
        "seed": seed,
        "simulated_s": meta["duration_s"],
        "wall_s": None,
        "sim_wall_s": raw["wall_s"],
        "events": raw["events"],
        "rtcbench_version": _core.version(),
        "command": command,
        "flows": summ["flows"],
        "phases": summ["phases"],
        **{k: summ[k] for k in ("fairness", "feedback_overhead", "cross_traffic")},
        "meta": meta,
    }
    return summary, tables, ts


def run_variant(
    variant: Variant,
    controller: ControllerArg = "gcc",
    seed: int = 1,
    out: Path | None = None,
    *,
    figure: bool = True,
    command: str | None = None,
    pcap: Path | None = None,
) -> RunResult:
    """Simulates one variant and, if `out` is given, writes its results folder atomically. With
    `pcap`, the call's packets are also written to that capture file (Wireshark opens it with
    `-d udp.port==5004,rtp`).

    `controller` is a built-in name or a Python controller (`ControllerArg`); an exception in a
    Python controller raises `rtcbench.ControllerError`, naming the controller, call and method.
    """
    cc = resolve_controller(controller)
    name = controller_name(cc)
    started = time.perf_counter()
    raw = _core.simulate(
        variant.toml,
        name,
        seed,
        str(pcap) if pcap is not None else None,
        factory=None if isinstance(cc, str) else cc.make,
    )
    summary, tables, ts = summarize_core(variant, name, seed, raw, command=command)
    path: Path | None = None
    if out is not None:
        path = run_dir(out, variant.scenario_id, variant.slug, name, seed)
        with atomic_dir(path) as tmp:
            (tmp / "scenario.toml").write_text(variant.toml, encoding="utf-8")
            write_tables(tables, tmp)
            write_parquet(ts, tmp / "timeseries.parquet")
            if figure:
                # Imported here: matplotlib takes longer to import than a short run takes, and a
                # suite draws no figure.
                from rtcbench import plots

                title = f"{variant.scenario_id} {variant.variant} · {name} · seed {seed}".replace("  ", " ")
                plots.plot_run(tables, ts, tmp / FIGURE, title)
            summary["wall_s"] = time.perf_counter() - started
            with open(tmp / "summary.json", "w", encoding="utf-8") as fh:
                json.dump(summary, fh, indent=2, allow_nan=False)
                fh.write("\n")
    else:
        summary["wall_s"] = time.perf_counter() - started
    return RunResult(path=path, summary=summary, tables=tables, timeseries=ts)


def run(
    scenario: str | Path,
    controller: ControllerArg = "gcc",
    seed: int = 1,
    out: Path | None = None,
    sets: Sequence[str] = (),
    *,
    figure: bool = True,
    command: str | None = None,
    pcap: Path | None = None,
) -> list[RunResult]:
    """Runs every variant of a built-in scenario id or scenario file; one result per variant.

    `controller` is a built-in name (`controllers()`), ``package.module:Class``,
    ``path/to/file.py:Class``, or a Python controller: an `rtcbench.Controller` subclass, a function
    of no arguments that returns one, or an instance. Each call of each variant runs its own
    controller: a class or function is called for each; an instance runs as it is if the scenario
    has one variant with one call, and is copied (`copy.deepcopy`, before any run) for each call
    otherwise, so every variant starts from the instance as it was given.

    With `pcap` and several variants, each variant's capture is `<stem>@<variant>.pcap`.
    """
    if isinstance(controller, str):
        controller = resolve_controller(controller)
    variants = resolve(scenario, list(sets))
    cc = resolve_controller(controller, share_instance=len(variants) == 1)

    def capture(v: Variant) -> Path | None:
        if pcap is None or len(variants) == 1:
            return pcap
        return pcap.with_name(f"{pcap.stem}@{v.slug}{pcap.suffix or '.pcap'}")

    return [run_variant(v, cc, seed, out, figure=figure, command=command, pcap=capture(v)) for v in variants]
