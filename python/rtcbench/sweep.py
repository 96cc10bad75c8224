"""Parameter sweeps: a grid or a list of scenario-field values × controllers × seeds, run as one
batch, locally or on a Ray cluster, indexed in one Parquet table, and resumable.

A sweep file (TOML) names what to vary; every point is a set of `--set` overrides (scenario
fields, and controller parameters, which are scenario fields under `[controller.<name>]`):

    scenarios = ["rfc8867-5.1"]          # built-in ids or files (relative to the sweep file)
    controllers = ["gcc", "nada"]        # built-in names or Python controllers (module:Class)
    seeds = [1, 2, 3]                    # or { first = 1, count = 3 }

    [grid]                               # every combination of these values
    "links.forward.delay" = ["20ms", "50ms", "100ms"]

    [[points]]                           # and/or listed points (each combined with the grid)
    "duration" = "60s"

Every run has its own folder, `<out>/<point>/<scenario@variant>/<controller>/<key>/seed-N`, written
atomically by the runner, so a sweep interrupted and started again runs only what is missing.
The index, `<out>/sweep.parquet` (one row per run, one column per swept field) and
`<out>/sweep-flows.parquet` (one row per flow), is written at the end by rename. Usage:
`docs/sweeps.md`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from rtcbench import runner
from rtcbench.documents import read_toml
from rtcbench.identity import REAL_TIME_MODES, SIMULATE
from rtcbench.learned import ONNX
from rtcbench.results import InputError, PathArg, write_parquet_atomic
from rtcbench.scenarios import resolve, typed_fields
from rtcbench.suite import (
    RunProgress,
    _Job,
    batch_folder,
    execute_plan,
    ray_executor,
    rows_of_run,
    tables_of_rows,
)

__all__ = [
    "FLOWS_TABLE",
    "RUNS_TABLE",
    "SweepError",
    "SweepPoint",
    "SweepResult",
    "SweepSpec",
    "load",
    "run_sweep",
]

MAX_SEEDS = 10_000
"""Most seeds a sweep lists (as `rtcbench suite --reps`)."""

MAX_POINTS = 10_000
"""Most points a sweep file gives (its listed points times the grid's combinations). Planning
resolves every point's scenarios, about a millisecond each: 10,000 points take seconds."""

MAX_RUNS = 100_000
"""Most runs a sweep file describes: points × scenarios × controllers × seeds (a scenario's own
variants multiply them again). 100,000 runs of a minute are days of simulation on two cores."""

RUNS_TABLE = "sweep.parquet"
FLOWS_TABLE = "sweep-flows.parquet"
_FIELDS = ("scenarios", "controllers", "seeds", "grid", "points")

Value = str | int | float | bool


class SweepError(InputError):
    """A sweep file that cannot be used; the message names the file, the field and what is allowed."""


@dataclass(frozen=True)
class SweepPoint:
    """One point of the sweep: the scenario fields it sets, and the folder its runs go in."""

    values: tuple[tuple[str, Value], ...]

    @property
    def sets(self) -> list[str]:
        """The point as `--set path=value` overrides (strings quoted, so "true" stays a string)."""
        return [
            f"{path}={json.dumps(v) if isinstance(v, str) else _toml_scalar(v)}" for path, v in self.values
        ]

    @property
    def slug(self) -> str:
        """A readable folder name, unique per point: the values, shortened, and a hash of all."""
        if not self.values:
            return "default"
        text = ",".join(f"{p}={v}" for p, v in self.values)
        # One safe path component: no separator, not hidden (a leading dot is for temporary folders).
        readable = re.sub(r"[^A-Za-z0-9._=,-]+", "-", text)[:80].lstrip(".")
        digest = hashlib.sha1(text.encode()).hexdigest()[:8]
        return f"{readable}-{digest}"


def _toml_scalar(v: int | float | bool) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else repr(v)


@dataclass(frozen=True)
class SweepSpec:
    """A parsed sweep file."""

    path: Path
    scenarios: tuple[str | Path, ...]
    controllers: tuple[str, ...]
    seeds: tuple[int, ...]
    points: tuple[SweepPoint, ...]

    @property
    def swept(self) -> list[str]:
        """The field paths some point sets, in first-seen order: the index's parameter columns."""
        return list(dict.fromkeys(p for point in self.points for p, _ in point.values))


def _fail(path: Path, message: str) -> SweepError:
    return SweepError(f"{path}: {message}")


def _scalar(path: Path, where: str, v: Any) -> Value:
    if isinstance(v, str | bool | int | float):
        return v
    raise _fail(path, f"{where} = {v!r}: a value must be a string, number or boolean")


def load(path: PathArg) -> SweepSpec:
    """Reads and checks a sweep file (scenario ids, files and controllers are checked when run)."""
    path = Path(path)
    doc = read_toml(path, SweepError)
    for key in doc:
        if key not in _FIELDS:
            raise _fail(path, f"unknown field {key!r}; allowed: {', '.join(_FIELDS)}")

    names = doc.get("scenarios")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise _fail(path, "scenarios: a non-empty list of built-in ids or scenario files is required")
    scenarios: list[str | Path] = []
    for n in names:
        local = path.parent / n
        scenarios.append(local if n.endswith(".toml") and local.is_file() else n)

    ccs = doc.get("controllers", ["gcc"])
    if not isinstance(ccs, list) or not ccs or not all(isinstance(c, str) for c in ccs):
        raise _fail(path, "controllers: a non-empty list of controller names")
    # A learned policy's model, like a scenario file, is found next to the sweep file first.
    ccs = [_beside(path, c) for c in ccs]
    twice = sorted(c for c, n in Counter(ccs).items() if n > 1)
    if twice:
        raise _fail(
            path,
            f"controllers: {', '.join(map(repr, twice))} listed twice (each would run and be indexed twice)",
        )

    seeds = _seeds(path, doc.get("seeds", [1]))
    grid = doc.get("grid", {})
    if not isinstance(grid, dict):
        raise _fail(path, "grid: a table of field = [values]")
    axes: list[list[tuple[str, Value]]] = []
    for field, values in _dotted(grid, _is_leaf):
        if not isinstance(values, list) or not values:
            raise _fail(path, f"grid.{field}: a non-empty list of values")
        axes.append([(field, _scalar(path, f"grid.{field}", v)) for v in values])
    listed = doc.get("points", [{}])
    if not isinstance(listed, list) or not all(isinstance(p, dict) for p in listed) or not listed:
        raise _fail(path, "points: an array of tables ([[points]]), each field = value")
    _check_size(path, len(listed), [len(axis) for axis in axes], len(scenarios) * len(ccs) * len(seeds))

    gridded = {field for field, _ in (axis[0] for axis in axes)}
    points: dict[SweepPoint, None] = {}  # in order, each once
    for i, p in enumerate(listed):
        base = tuple((field, _scalar(path, f"points.{i}.{field}", v)) for field, v in _dotted(p, _is_leaf))
        clash = {f for f, _ in base} & gridded
        if clash:
            raise _fail(path, f"points.{i} and grid both set {', '.join(sorted(clash))}")
        for combo in itertools.product(*axes):
            points.setdefault(SweepPoint(base + combo))
    return SweepSpec(path, tuple(scenarios), tuple(ccs), seeds, tuple(points))


def _beside(sweep_file: Path, controller: str) -> str:
    """``onnx:MODEL`` with a relative MODEL that exists beside the sweep file, as that file;
    anything else as it is."""
    if not controller.startswith(ONNX):
        return controller
    model = Path(controller.removeprefix(ONNX))
    local = sweep_file.parent / model
    return f"{ONNX}{local}" if not model.is_absolute() and local.is_file() else controller


def _check_size(path: Path, listed: int, axes: list[int], runs_per_point: int) -> None:
    """Refuses, before expanding anything, a sweep of more than `MAX_POINTS` points or `MAX_RUNS`
    runs."""
    points = listed * math.prod(axes)
    how = " × ".join([f"{listed:,} listed", *(f"{n:,}" for n in axes)])
    if points > MAX_POINTS:
        raise _fail(
            path,
            f"{points:,} points ({how}); a sweep has at most {MAX_POINTS:,}: split it into several files",
        )
    if points * runs_per_point > MAX_RUNS:
        raise _fail(
            path,
            f"{points * runs_per_point:,} runs ({points:,} points × {runs_per_point:,} scenario, controller "
            f"and seed combinations); a sweep has at most {MAX_RUNS:,}: split it into several files",
        )


def _is_leaf(v: Any) -> bool:
    return not isinstance(v, dict)


def _dotted(table: dict[str, Any], leaf: Callable[[Any], bool], prefix: str = "") -> list[tuple[str, Any]]:
    """A TOML table's leaves with dotted paths: `links.forward.delay = ...` and
    `"links.forward.delay" = ...` both give the path links.forward.delay."""
    out: list[tuple[str, Any]] = []
    for key, value in table.items():
        name = f"{prefix}{key}"
        out += [(name, value)] if leaf(value) else _dotted(value, leaf, f"{name}.")
    return out


def _seeds(path: Path, raw: Any) -> tuple[int, ...]:
    seeds: tuple[int, ...] | None = None
    if isinstance(raw, list) and raw and all(isinstance(s, int) and not isinstance(s, bool) for s in raw):
        twice = sorted(s for s, n in Counter(raw).items() if n > 1)
        if twice:
            raise _fail(path, f"seeds: {', '.join(map(str, twice))} listed twice")
        seeds = tuple(raw)
    elif isinstance(raw, dict) and set(raw) <= {"first", "count"} and "count" in raw:
        first, count = raw.get("first", 1), raw["count"]
        if isinstance(first, int) and isinstance(count, int) and 1 <= count <= MAX_SEEDS:
            seeds = tuple(range(first, first + count))
    if seeds is None or len(seeds) > MAX_SEEDS:
        raise _fail(
            path, f"seeds: a list of integers, or {{ first = N, count = M }} with 1 ≤ M ≤ {MAX_SEEDS:,}"
        )
    for s in (seeds[0], seeds[-1], *seeds):
        if not 0 <= s <= runner.MAX_SEED:
            raise _fail(path, f"seeds: {s} is not a seed (allowed: 0 to 2**64 - 1)")
    return seeds


@dataclass(frozen=True)
class SweepResult:
    """A finished sweep: its index tables (also on disk under `out`) and what it took."""

    runs: pl.DataFrame
    flows: pl.DataFrame
    out: Path
    ran: int
    skipped: int
    wall_s: float


def _plan(
    spec: SweepSpec, out: Path, command: str | None, mode: str = SIMULATE
) -> tuple[list[_Job], list[SweepPoint]]:
    """Every run of the sweep and the point each belongs to. Raises the scenario's or controller's
    own error, prefixed with the sweep file and the point, before anything runs, and `SweepError`
    as soon as the scenarios' variants make more than `MAX_RUNS` runs."""
    resolved = {c: runner.resolve_controller(c) for c in spec.controllers}
    jobs: list[_Job] = []
    owners: list[SweepPoint] = []
    for point in spec.points:
        folder = out / point.slug
        for scenario in spec.scenarios:
            try:
                variants = resolve(scenario, point.sets)
            except (LookupError, ValueError) as e:
                where = ", ".join(point.sets) or "no overrides"
                raise SweepError(f"{spec.path}: {scenario} with {where}: {e}") from e
            if len(jobs) + len(variants) * len(spec.controllers) * len(spec.seeds) > MAX_RUNS:
                raise SweepError(
                    f"{spec.path}: more than {MAX_RUNS:,} runs once the scenarios' variants are counted "
                    f"({scenario} has {len(variants)}); a sweep has at most {MAX_RUNS:,}: split it"
                )
            for v in variants:
                for c in spec.controllers:
                    for seed in spec.seeds:
                        jobs.append(_Job.plan(v, c, resolved[c], seed, folder, command, mode))
                        owners.append(point)
    return jobs, owners


def run_sweep(
    spec: SweepSpec,
    out: PathArg,
    jobs: int | None = None,
    *,
    ray_address: str | None = None,
    progress: Callable[[int, int], None] | RunProgress | None = None,
    command: str | None = None,
    mode: str = SIMULATE,
) -> SweepResult:
    """Runs every (point, scenario variant, controller, seed) of `spec` whose folder under `out` is
    not complete yet, on `jobs` local processes (default one per CPU) or on the Ray cluster at
    `ray_address`, then writes the index tables. With `mode="emulate"`, runs are emulated in real
    time (docs/emulation.md), one at a time here or one per Ray node (`EMULATION_RESOURCE`)."""
    started = time.perf_counter()
    out = Path(out)
    runner.check_mode(mode)
    plan, owners = _plan(spec, out, command, mode)
    if mode in REAL_TIME_MODES:
        jobs = 1
    executor = ray_executor(ray_address, mode) if ray_address is not None else None
    with batch_folder(out, plan):
        summaries, todo = execute_plan(plan, jobs, progress, executor)
        swept = spec.swept
        run_rows: list[dict[str, Any]] = []
        flow_rows: list[dict[str, Any]] = []
        for job, point, summary in zip(plan, owners, summaries, strict=True):
            rel = job.path.relative_to(out).as_posix()
            params = {field: None for field in swept} | dict(point.values)
            key = {"point": point.slug, **typed_fields(params)}
            flows_of_run, run_row = rows_of_run(summary, rel)
            run_rows.append({**key, **run_row, **_video_means(summary)})
            flow_rows += [{**key, **row} for row in flows_of_run]
        flows, runs = tables_of_rows(flow_rows, run_rows)
        write_parquet_atomic(runs, out / RUNS_TABLE)
        write_parquet_atomic(flows, out / FLOWS_TABLE)
    return SweepResult(
        runs=runs,
        flows=flows,
        out=out,
        ran=len(todo),
        skipped=len(plan) - len(todo),
        wall_s=time.perf_counter() - started,
    )


def _video_means(summary: dict[str, Any]) -> dict[str, float | None]:
    """Means over the run's video flows of the headline metrics, so the index answers the usual
    questions without a join."""
    video = [f for f in summary["flows"] if f["kind"] == "video"]

    def mean(key: str) -> float | None:
        values = [f[key] for f in video if f.get(key) is not None]
        return sum(values) / len(values) if values else None

    return {
        "video_utilization": mean("utilization"),
        "video_goodput_bps": mean("mean_goodput_bps"),
        "video_qdelay_p95_ms": mean("qdelay_p95_ms"),
        "video_loss_ratio": mean("loss_ratio"),
        "video_convergence_time_s": mean("convergence_time_s"),
    }


def describe(spec: SweepSpec) -> str:
    """One line: how many points, scenarios, controllers, seeds."""
    return (
        f"{len(spec.points)} point(s) × {len(spec.scenarios)} scenario(s) × "
        f"{len(spec.controllers)} controller(s) × {len(spec.seeds)} seed(s)"
    )
