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
from rtcbench.metrics import Tables
from rtcbench.results import atomic_dir, run_dir, tables_from_core, write_parquet, write_tables
from rtcbench.scenarios import Variant, resolve

__all__ = ["RunResult", "UnknownController", "controllers", "run", "run_variant"]

FIGURE = "overview.png"
"""The standard figure of a run: rates against capacity, queuing delay, loss."""


class UnknownController(ValueError):
    """A controller name that is not built in."""


def controllers() -> list[tuple[str, str]]:
    """(name, description) of every built-in controller."""
    return list(_core.controllers())


def _check_controller(name: str) -> None:
    known = [n for n, _ in controllers()]
    if name not in known:
        raise UnknownController(f"unknown controller {name!r} (allowed: {', '.join(known)})")


@dataclass(frozen=True)
class RunResult:
    """One finished run: where it was written (if anywhere), its summary and its tables."""

    path: Path | None
    summary: dict[str, Any]
    tables: Tables
    timeseries: pl.DataFrame


def run_variant(
    variant: Variant,
    controller: str = "gcc",
    seed: int = 1,
    out: Path | None = None,
    *,
    figure: bool = True,
    command: str | None = None,
    pcap: Path | None = None,
) -> RunResult:
    """Simulates one variant and, if `out` is given, writes its results folder atomically. With
    `pcap`, the call's packets are also written to that capture file (Wireshark opens it with
    `-d udp.port==5004,rtp`)."""
    _check_controller(controller)
    started = time.perf_counter()
    raw = _core.simulate(variant.toml, controller, seed, str(pcap) if pcap is not None else None)
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
    path: Path | None = None
    if out is not None:
        path = run_dir(out, variant.scenario_id, variant.slug, controller, seed)
        with atomic_dir(path) as tmp:
            (tmp / "scenario.toml").write_text(variant.toml, encoding="utf-8")
            write_tables(tables, tmp)
            write_parquet(ts, tmp / "timeseries.parquet")
            if figure:
                # Imported here: matplotlib takes longer to import than a short run takes, and a
                # suite draws no figure.
                from rtcbench import plots

                title = f"{variant.scenario_id} {variant.variant} · {controller} · seed {seed}".replace(
                    "  ", " "
                )
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
    controller: str = "gcc",
    seed: int = 1,
    out: Path | None = None,
    sets: Sequence[str] = (),
    *,
    figure: bool = True,
    command: str | None = None,
    pcap: Path | None = None,
) -> list[RunResult]:
    """Runs every variant of a built-in scenario id or scenario file; one result per variant.

    With `pcap` and several variants, each variant's capture is `<stem>@<variant>.pcap`.
    """
    _check_controller(controller)
    variants = resolve(scenario, list(sets))

    def capture(v: Variant) -> Path | None:
        if pcap is None or len(variants) == 1:
            return pcap
        return pcap.with_name(f"{pcap.stem}@{v.slug}{pcap.suffix or '.pcap'}")

    return [
        run_variant(v, controller, seed, out, figure=figure, command=command, pcap=capture(v))
        for v in variants
    ]
