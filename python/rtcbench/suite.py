"""Suites: every (scenario variant, controller, repetition) of a selection, run in parallel.

A run is a pure function of (resolved scenario, controller, seed), so runs are independent jobs,
shared between a few worker processes (and this process while they start); each writes its own
results folder atomically (`results.atomic_dir`), and a folder that is already complete for the
same scenario text is read back instead of run again. The two suite tables are written once, at
the end, by rename: an interrupted suite leaves the previous tables or none, never a partial one.
Usage and columns: `docs/suite.md`.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from rtcbench import _core, runner
from rtcbench.analysis.capacity import radio_hops
from rtcbench.browser.choice import CHROMIUM
from rtcbench.identity import REAL_TIME_MODES, SIMULATE
from rtcbench.results import (
    FILES_KEY,
    InputError,
    PathArg,
    make_parents,
    read_summary,
    remove_unfinished,
    unlinked,
    write_parquet_atomic,
)
from rtcbench.scenarios import ScenarioNotFound, Variant, builtin, resolve, typed_fields, variant_fields
from rtcbench.tables import VIDEO
from rtcbench.workers import WAKE_S, single_threaded_polars, spawning, stopping, worker_count
from rtcbench.workers import job as worker_job
from rtcbench.workers import pool as workers_pool

__all__ = [
    "EMULATION_RESOURCE",
    "FLOWS_TABLE",
    "RUNS_TABLE",
    "SUITES",
    "SuiteResult",
    "UnknownSuite",
    "ray_executor",
    "rows_of_run",
    "run_parallel",
    "run_suite",
    "select",
    "tables_of_rows",
]

SUITES: dict[str, tuple[str, ...]] = {
    "rfc8867": ("rfc8867-",),
    "rfc8869-wifi": ("rfc8869-3.",),
    "seeds-wired": ("seed000-5.2.", "seed001-", "seed002-", "seed003-"),
    "seeds-wifi": ("seed000-5.3.", "seed004-"),
    "seeds-lte": ("seed000-5.4.",),
    "rfc8869-cellular": ("rfc8869-2.",),
    "traces": ("trace-",),
    "topologies": ("mesh-", "sfu-", "one-to-many-", "turn-"),
    "l4s": ("l4s-",),
}
"""Suite names and the prefixes of the built-in scenario ids they select (the seeds' wired
experiments are seeds 000 §5.2 and 001-003, their Wi-Fi ones seed 000 §5.3 and seed 004, their
4G ones seed 000 §5.4;
`rfc8869-wifi` RFC 8869 §3's Wi-Fi cases, `rfc8869-cellular` its §2 cellular ones; `traces`
the scenarios over capacity traces;
`topologies` the relayed call and the conferences; `l4s` the L4S cases, docs/l4s.md)."""

MAX_REPS = 10_000
"""Most repetitions of a suite (a suite of 10 000 repetitions of the RFC 8867 set runs for days)."""

FLOWS_TABLE = "suite.parquet"
RUNS_TABLE = "suite-runs.parquet"

_KEYS: dict[str, pl.DataType] = {
    "scenario": pl.String(),
    "variant": pl.String(),
    "controller": pl.String(),
    "seed": pl.Int64(),
    "run_key": pl.String(),
}

_FLOW_TYPES: dict[str, pl.DataType] = {
    **_KEYS,
    "flow": pl.Int64(),
    "flow_name": pl.String(),
    "kind": pl.String(),
    "workload": pl.String(),
    "share_ratio": pl.Float64(),
    "share_ratio_all": pl.Float64(),
    "cross_throughput_bps": pl.Float64(),
    "cross_goodput_bps": pl.Float64(),
    "cross_throughput_run_bps": pl.Float64(),
    "radio_path": pl.Boolean(),
    "flags": pl.String(),
    "path": pl.String(),
}
_RUN_TYPES: dict[str, pl.DataType] = {
    **_KEYS,
    "path": pl.String(),
    "mode": pl.String(),
    "simulated_s": pl.Float64(),
    "wall_s": pl.Float64(),
    "sim_wall_s": pl.Float64(),
    "events": pl.Int64(),
    "video_flows": pl.Int64(),
    "jain_index_video": pl.Float64(),
    "jain_index_all": pl.Float64(),
    "jain_link": pl.String(),
    "min_share_ratio": pl.Float64(),
    "max_share_ratio": pl.Float64(),
    "fair_within_band": pl.Boolean(),
    "feedback_bps": pl.Float64(),
    "feedback_to_sender_bps": pl.Float64(),
    "feedback_to_receiver_bps": pl.Float64(),
    "feedback_share_of_media": pl.Float64(),
    "cross_flows": pl.Int64(),
}


class UnknownSuite(ScenarioNotFound):
    """Neither a suite name, nor a built-in scenario id, nor a scenario file."""


def select(names_or_scenarios: Sequence[str | Path]) -> list[str | Path]:
    """Suite names expanded to built-in scenario ids (in `rtcbench list` order); scenario ids and
    files are kept as given. Duplicates are dropped, keeping the first."""
    ids = [b.id for b in builtin()]
    out: list[str | Path] = []
    for item in names_or_scenarios:
        name = str(item)
        if isinstance(item, str) and name in SUITES:
            chosen: list[str | Path] = [i for i in ids if i.startswith(SUITES[name])]
        elif (isinstance(item, str) and name in ids) or Path(item).is_file():
            chosen = [item]
        else:
            raise UnknownSuite(
                f"no suite, built-in scenario or file named {name!r} "
                f"(suites: {', '.join(SUITES)}; built-in scenarios: {', '.join(ids)})"
            )
        out += [c for c in chosen if c not in out]
    if not out:
        raise UnknownSuite(f"{', '.join(map(str, names_or_scenarios))} selects no scenario")
    return out


@dataclass(frozen=True)
class _Job:
    """One run of a suite; everything a worker process needs (picklable). `controller` is a built-in
    name or a Python controller's ``module:Class`` / ``file.py:Class``, which the worker imports
    again; `path` is the run's folder (`runner.run_folder`), keyed by what it runs."""

    variant: Variant
    controller: str
    seed: int
    out: Path
    command: str | None
    path: Path
    mode: str = SIMULATE
    figure: bool = False
    browser: str = CHROMIUM
    """A browser run's peers (`--browser`: `chromium`, `firefox`, or per node)."""
    event_log: bool = False
    """Whether a browser run's Chromium peers record their RTC event logs (`--browser-event-log`)."""

    @classmethod
    def plan(
        cls, variant: Variant, controller: str, resolved: runner.Resolved, seed: int, out: Path,
        command: str | None, mode: str = SIMULATE, *, figure: bool = False, browser: str = CHROMIUM,
        event_log: bool = False,
    ) -> _Job:  # fmt: skip
        """The job of one run; `resolved` is `controller` as `runner.resolve_controller` gives it.
        With `figure`, the run draws its overview.png (as `rtcbench run` does; a suite draws none);
        `browser` chooses a browser run's peers, `event_log` whether they record RTC event logs."""
        browsers = runner.check_browsers(browser, "", mode, event_log=event_log)
        path = runner.run_folder(out, variant, resolved, seed, mode, browsers)
        return cls(variant, controller, seed, out, command, path, mode, figure, browser, event_log)

    def done(self) -> dict[str, Any] | None:
        """The run's summary if its folder is complete and unchanged since it was written (every
        file as the summary recorded it); None if the run must run (again). The folder's name
        is the run's key, so a complete folder holds this very configuration. A run folder that
        is a link is not one (`results.run_folders`): it runs again, and the new run takes the
        link's place (`results.atomic_dir`)."""
        try:
            summary = read_summary(self.path, root=self.out)
        except (InputError, OSError):
            return None
        identity = summary.get("identity")
        same = isinstance(identity, dict) and identity.get("key") == self.path.parent.name
        drawn = not self.figure or (self.path / runner.FIGURE).is_file()
        return summary if same and FILES_KEY in summary and drawn else None


def _execute(job: _Job) -> dict[str, Any]:
    """Runs one job and writes its folder (its figure only if the job asks: a suite's figures are
    drawn on demand)."""
    r = runner.run_variant(
        job.variant, job.controller, job.seed, job.out, figure=job.figure, command=job.command, mode=job.mode,
        browser=job.browser, browser_event_log=job.event_log,
    )  # fmt: skip
    return r.summary


def _ready() -> None:
    """A no-op task: its completion says a worker process has started and imported rtcbench."""


_QUEUED_PER_WORKER = 2
"""Jobs handed to a worker ahead of time: one running and one waiting, so a worker that finishes
starts its next run at once instead of waiting for this process to hand one out."""


def _run_parallel(
    jobs: list[_Job],
    workers: int,
    on_done: Callable[[int, Any], None],
    *,
    here: bool = True,
    execute: Callable[[_Job], Any] = _execute,
) -> None:
    """Runs `jobs` on `workers` worker processes, calling `on_done(index, summary)` in this process
    as each finishes (the summary, or what `execute`, a picklable function, returns instead).

    Starting a worker costs about as much as a few runs (it imports polars and rtcbench), so, with
    `here`, this process runs jobs itself until every worker is up: a suite never waits for a
    process start-up, and a short suite is as fast as running it here. Once the workers are up,
    this process only hands out jobs (`_QUEUED_PER_WORKER` per worker) and collects results: its
    polars pool was started with one thread per core, which the workers' runs would compete with.

    Workers are spawned, not forked: importing polars already starts threads, which a fork would
    not copy. They run polars on one thread (`workers.single_threaded_polars`). On an interrupt (or any
    error) the workers are interrupted too and their runs removed (`rtcbench.workers.stop`), and
    a worker whose parent dies, even by SIGKILL, dies with it; finished runs are kept.
    """
    pool = workers_pool(workers)
    queue = deque(range(len(jobs)))
    ready = 0
    running: dict[Future[dict[str, Any]], int] = {}
    with stopping(pool):
        # The pool starts a process per submitted task, up to `workers`: all of them here.
        with single_threaded_polars(), spawning():
            starting: set[Future[None]] = {pool.submit(worker_job, _ready) for _ in range(workers)}
        while queue or running:
            for up in [f for f in starting if f.done()]:
                up.result()
                starting.remove(up)
                ready += 1
            for fut in [f for f in running if f.done()]:
                on_done(running.pop(fut), fut.result())
            while queue and len(running) < _QUEUED_PER_WORKER * ready:
                i = queue.popleft()
                with spawning():
                    running[pool.submit(worker_job, execute, jobs[i])] = i
            if queue and here and starting:
                i = queue.popleft()
                on_done(i, execute(jobs[i]))
            elif running or starting:
                pending: list[Future[Any]] = [*running, *starting]
                # Not without a timeout: a signal may land in another thread, and the main thread
                # takes its handler (the interrupt) only when it wakes.
                wait(pending, timeout=WAKE_S, return_when=FIRST_COMPLETED)
    # Workers still starting exit once they are up; nothing waits for them here.
    pool.shutdown(wait=False, cancel_futures=True)


def _scalar_dtype(values: list[Any]) -> pl.DataType:
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, str) for v in present):
        return pl.String()
    if present and all(isinstance(v, bool) for v in present):
        return pl.Boolean()
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return pl.Int64()
    return pl.Float64()


def _frame(rows: list[dict[str, Any]], types: dict[str, pl.DataType]) -> pl.DataFrame:
    """Rows of plain values as a typed frame, columns in first-seen order. Columns named in `types`
    get that type; the others are typed by their values (all-null ones as Float64: they are
    metrics that did not apply)."""
    names: list[str] = []
    for row in rows:
        names += [k for k in row if k not in names]
    # The variant's fields right after the keys, whichever run first had them.
    fields = [n for n in names if n.startswith(VARIANT_PREFIX)]
    after = names.index("run_key") + 1 if "run_key" in names else 0
    rest = [n for n in names if not n.startswith(VARIANT_PREFIX)]
    names = [*rest[:after], *fields, *rest[after:]]
    columns = {n: [row.get(n) for row in rows] for n in names}
    return pl.DataFrame(columns, schema={n: types.get(n) or _scalar_dtype(v) for n, v in columns.items()})


def _flat(prefix: str, value: Any) -> dict[str, Any]:
    """A summary value as scalar columns: nested dicts joined with `_`, lists dropped."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flat(f"{prefix}_{k}" if prefix else str(k), v))
        return out
    if isinstance(value, list):
        return {}
    if isinstance(value, float) and not math.isfinite(value):
        return {prefix: None}
    return {prefix: value}


VARIANT_PREFIX = "variant."
"""Each field of a run's variant is a String column `variant.<field>` (`scenarios.variant_fields`),
placed after the keys, followed where its value is a duration, a rate or a number by a Float64
companion in SI units (`variant.<field>_s`, `_bps`, `_value`: `scenarios.typed_fields`); runs of
variants without that field have null."""


def _keys(summary: dict[str, Any]) -> dict[str, Any]:
    return {
        **{k: summary[k] for k in ("scenario", "variant", "controller", "seed")},
        "run_key": summary["identity"]["key"],
        **typed_fields(variant_fields(summary["variant"]), VARIANT_PREFIX),
    }


def _worst_bottleneck(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The shared link whose flows share least evenly (lowest Jain's index over all its data
    flows), or None if no link is shared by two data flows."""
    rated = [b for b in summary["fairness"].get("bottlenecks", []) if b["jain_index"] is not None]
    return min(rated, key=lambda b: b["jain_index"]) if rated else None


def _flow_rows(summary: dict[str, Any], path: str) -> list[dict[str, Any]]:
    key = _keys(summary)
    share = {f["id"]: f["share_ratio"] for f in summary["fairness"]["run"]["flows"]}
    share_all = {
        f["id"]: f["share_ratio"] for b in summary["fairness"].get("bottlenecks", []) for f in b["flows"]
    }
    cross = {f["id"]: f for f in summary["cross_traffic"]}
    meta = summary.get("meta") or {}
    radio = {int(f["id"]): bool(radio_hops(meta, f)) for f in meta.get("flows", [])}
    rows = []
    for f in summary["flows"]:
        m = dict(f)
        fid = m.pop("id")
        row = {**key, "flow": fid, "flow_name": m.pop("name"), "kind": m.pop("kind"), **_flat("", m)}
        c = cross.get(fid, {})
        row["share_ratio"] = share.get(fid)
        row["share_ratio_all"] = share_all.get(fid)
        row["cross_throughput_bps"] = c.get("throughput_bps")
        row["cross_goodput_bps"] = c.get("goodput_bps")
        row["cross_throughput_run_bps"] = c.get("throughput_run_bps")
        # Its path crosses a shared radio medium (a BSS, a cell): no capacity of its own to use up.
        row["radio_path"] = radio.get(int(fid))
        # What a reader must not take at face value (`analysis.flags`), one string: "" for none.
        row["flags"] = "; ".join(f.get("flags") or []) if f.get("kind") == VIDEO else None
        row["path"] = path
        rows.append(row)
    return rows


def _run_row(summary: dict[str, Any], path: str) -> dict[str, Any]:
    fair = summary["fairness"]["run"]
    fb = summary["feedback_overhead"]

    def direction(d: str) -> float | None:
        rates = [c["rate_bps"] for c in fb["calls"] if c["direction"] == d and c["rate_bps"] is not None]
        return sum(rates) if rates else None

    worst = _worst_bottleneck(summary)
    return {
        **_keys(summary),
        "path": path,
        "mode": summary.get("mode", SIMULATE),
        "simulated_s": summary.get("simulated_s"),
        "wall_s": summary.get("wall_s"),
        "sim_wall_s": summary.get("sim_wall_s"),
        "events": summary.get("events"),
        "video_flows": len(fair["flows"]),
        "jain_index_video": fair["jain_index"],
        "jain_index_all": worst["jain_index"] if worst else None,
        "jain_link": worst["link"] if worst else None,
        "min_share_ratio": fair["min_share_ratio"],
        "max_share_ratio": fair["max_share_ratio"],
        "fair_within_band": fair["within_band"],
        "feedback_bps": fb["rate_bps"],
        "feedback_to_sender_bps": direction("to_sender"),
        "feedback_to_receiver_bps": direction("to_receiver"),
        "feedback_share_of_media": fb["share_of_media"],
        "cross_flows": len(summary["cross_traffic"]),
    }


def rows_of_run(summary: dict[str, Any], path: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One run's rows of the two suite tables: one per flow, and the run's own. `path` is the run's
    folder relative to the suite's. Raises KeyError or TypeError on a summary that lacks a key the
    tables need, so a reader of many folders can name the one that is broken."""
    return _flow_rows(summary, path), _run_row(summary, path)


def tables_of_rows(
    flow_rows: list[dict[str, Any]], run_rows: list[dict[str, Any]]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The two suite tables (flows, runs) from the rows of `rows_of_run`, typed as on disk."""
    return _frame(flow_rows, _FLOW_TYPES), _frame(run_rows, _RUN_TYPES)


_VIDEO_MEANS = {
    "utilization": "utilization",
    "qdelay_p95_ms": "qdelay_p95_ms",
    "loss_ratio": "loss_ratio",
    "mean_goodput_bps": "goodput_bps",
    "freezes": "freezes",
    "fps_mean": "fps_mean",
    "frame_delay_p95_ms": "frame_delay_p95_ms",
}
"""The video flows' metrics `SuiteResult.overview` averages (per run, then over repetitions), by
their column in the flows table, with their name in the overview."""


@dataclass(frozen=True)
class SuiteResult:
    """A finished suite: its two tables (also on disk under `out`) and what it took.

    `flows`: one row per (scenario, variant, controller, seed, flow); `runs`: one row per run.
    `ran` runs were simulated now and `skipped` were complete on disk already; `simulated_s` counts
    the simulated time of the runs simulated now, over `wall_s` of the whole suite.
    """

    flows: pl.DataFrame
    runs: pl.DataFrame
    out: Path
    ran: int
    skipped: int
    wall_s: float
    simulated_s: float

    @property
    def speed(self) -> float | None:
        """Simulated seconds per wall-clock second of the suite (None if nothing ran)."""
        return self.simulated_s / self.wall_s if self.ran and self.wall_s > 0 else None

    def overview(self) -> pl.DataFrame:
        """Per scenario variant, controller and configuration (`run_key`), means over the
        repetitions (`runs` counts them): of the video flows' utilisation, queuing-delay p95, loss
        ratio, goodput, freezes, frame rate and frame delay p95 (averaged over the video flows of a
        run first); of the
        competing TCP and CBR flows' throughput while they run (summed over the flows of a run), with the UDP
        background of RFC 8867 §4.2 apart; and of the runs' Jain's indexes, over the video flows
        (`jain_index_video`) and over all data flows of the least fair shared link
        (`jain_index_all`)."""
        by = ["scenario", "variant", "controller", "run_key"]
        run = [*by, "seed"]
        flows = self.flows.with_columns(_background=pl.col("workload").eq_missing("udp-background"))
        for column, kind in (("radio_path", pl.Boolean), ("flags", pl.String)):
            if column not in flows.columns:  # tables written before model revision 15
                flows = flows.with_columns(pl.lit(None, kind).alias(column))
        # A path across a BSS or a cell has no capacity of its own: no utilisation (docs/compare.md).
        flows = flows.with_columns(
            utilization=pl.when(pl.col("radio_path").fill_null(False))
            .then(None)
            .otherwise(pl.col("utilization"))
        )
        video = (
            flows.filter(pl.col("kind") == VIDEO)
            .group_by(run, maintain_order=True)
            .agg(pl.col(*_VIDEO_MEANS).mean(), _flagged=(pl.col("flags").fill_null("") != "").any())
        )

        def throughput(kind: str, background: bool = False) -> pl.DataFrame:
            return (
                flows.filter((pl.col("kind") == kind) & (pl.col("_background") == background))
                .group_by(run, maintain_order=True)
                .agg(
                    pl.col("cross_throughput_bps").sum().alias(f"{'background' if background else kind}_bps")
                )
            )

        joined = self.runs.select(*run, "jain_index_video", "jain_index_all")
        for part in (video, throughput("tcp"), throughput("cbr"), throughput("cbr", background=True)):
            joined = joined.join(part, on=run, how="left", maintain_order="left")
        return joined.group_by(by, maintain_order=True).agg(
            runs=pl.len(),
            **{name: pl.col(column).mean() for column, name in _VIDEO_MEANS.items()},
            tcp_bps=pl.col("tcp_bps").mean(),
            cbr_bps=pl.col("cbr_bps").mean(),
            background_bps=pl.col("background_bps").mean(),
            jain_index_video=pl.col("jain_index_video").mean(),
            jain_index_all=pl.col("jain_index_all").mean(),
            flagged=pl.col("_flagged").fill_null(False).sum(),
        )


Executor = Callable[[list[_Job], Callable[[int, dict[str, Any]], None]], None]
"""Runs jobs elsewhere (a Ray cluster: `rtcbench.sweep`), calling back `(index, summary)` in this
process as each finishes."""


@contextlib.contextmanager
def batch_folder(out: Path, plan: list[_Job]) -> Iterator[None]:
    """Makes `out` for the runs of `plan`. If the block fails (a full disk) or is interrupted,
    removes what it leaves without a finished run, `out` included if it made it and nothing was
    finished: its workers' temporary folders and the empty folders on the way to the runs
    (`results.remove_unfinished`). A folder on the way to a run that is a link (a scenario's,
    a sweep point's) is `PlantedLink` before anything runs (`results.unlinked`)."""
    for job in plan:
        unlinked(out, job.path.parent)
    created = make_parents(out)
    try:
        yield
    except BaseException:
        remove_unfinished((job.path for job in plan), out, created)
        raise


class RunProgress:
    """A progress line's view of a suite or sweep, told after each run (`execute_plan`): runs
    done of all, the work done of all (a run's work is its simulated duration, so a long case
    weighs what it costs), and the case that finished last. Subclassed by the command line's
    progress bar; a plain `progress(done, total)` callable gets the counts only."""

    def update(self, done: int, total: int, work_done: float, work_total: float, last: str) -> None:
        raise NotImplementedError


def _work(job: _Job) -> float:
    """A job's simulated seconds (at least 1)."""
    duration = job.variant.spec.get("duration")
    return max(1.0, _core.duration_s(str(duration))) if duration is not None else 1.0


PRIOR_SPEED = {"wired": 4000.0, "radio": 500.0}
"""Simulated seconds per wall-clock second a run is expected to take before any run of its case has
finished: a wired call runs at about 4 000x, a Wi-Fi BSS or an LTE cell at 500-1 700x (README,
"Speed"). Only the ratio matters: the first finished runs scale it to the machine."""


class _Cost:
    """What each job of a plan is expected to cost in wall-clock seconds, so that a progress line
    can say how long the rest will take (`RunProgress`): its simulated seconds at its case's speed,
    learnt from that case's finished runs (a wired call and a BSS of ten stations differ tenfold
    per simulated second); a case not yet seen runs at its network's prior speed (`PRIOR_SPEED`)
    times what the finished runs say of this machine against the priors."""

    def __init__(self, plan: list[_Job]) -> None:
        self.sim = [_work(job) for job in plan]
        self.case = [(job.variant.scenario_id, job.variant.variant, job.controller) for job in plan]
        radio = [bool(job.variant.spec.get("wifi") or job.variant.spec.get("lte")) for job in plan]
        self.prior = [1.0 / PRIOR_SPEED["radio" if r else "wired"] for r in radio]
        self.seen: dict[tuple[str, str, str], list[float]] = {}
        self.machine: list[float] = []

    def learn(self, i: int, summary: dict[str, Any]) -> None:
        wall, simulated = summary.get("wall_s"), summary.get("simulated_s")
        if not (isinstance(wall, int | float) and isinstance(simulated, int | float)):
            return
        if wall > 0 and simulated > 0:
            self.seen.setdefault(self.case[i], []).append(float(wall) / float(simulated))
            self.machine.append(float(wall) / float(simulated) / self.prior[i])

    def of(self, i: int) -> float:
        rates = self.seen.get(self.case[i])
        if rates:
            return self.sim[i] * sum(rates) / len(rates)
        factor = sum(self.machine) / len(self.machine) if self.machine else 1.0
        return self.sim[i] * self.prior[i] * factor


def execute_plan(
    plan: list[_Job],
    jobs: int | None = None,
    progress: Callable[[int, int], None] | RunProgress | None = None,
    executor: Executor | None = None,
) -> tuple[list[dict[str, Any]], list[int]]:
    """Every job's summary, in plan order, and the indices of the jobs simulated now: a job whose
    folder is complete is read back; the others run on `jobs` local worker processes (default, and
    at most, one per CPU: `workers.worker_count`; this process alone with 1), or through
    `executor`."""
    summaries: list[dict[str, Any] | None] = [None] * len(plan)
    done = 0
    cost = _Cost(plan)
    ran: set[int] = set()

    def finished(i: int, summary: dict[str, Any], now: bool = True) -> None:
        nonlocal done
        summaries[i] = summary
        done += 1
        if not now:
            return
        ran.add(i)
        cost.learn(i, summary)
        if isinstance(progress, RunProgress):
            job = plan[i]
            case = " ".join(p for p in (job.variant.scenario_id, job.variant.variant, job.controller) if p)
            # The work is the expected wall time of the runs to make, re-estimated as each one
            # teaches its case's speed: the time left does not jump when a slow case comes up.
            work = [cost.of(k) for k in todo]
            work_done = sum(w for k, w in zip(todo, work, strict=True) if k in ran)
            progress.update(done, len(plan), work_done, sum(work), f"{case} seed {job.seed}")
        elif progress is not None:
            progress(done, len(plan))

    todo: list[int] = []
    for i, job in enumerate(plan):
        summary = job.done()
        if summary is not None:
            finished(i, summary, now=False)
        else:
            todo.append(i)
    if isinstance(progress, RunProgress):
        progress.update(done, len(plan), 0.0, sum(cost.of(k) for k in todo), "")
    elif progress is not None:
        progress(done, len(plan))
    if executor is not None and todo:
        executor([plan[i] for i in todo], lambda k, summary: finished(todo[k], summary))
    else:
        workers = min(worker_count(jobs), len(todo))
        if workers <= 1:
            for i in todo:
                finished(i, _execute(plan[i]))
        else:
            _run_parallel([plan[i] for i in todo], workers, lambda k, summary: finished(todo[k], summary))
    complete = [summary for summary in summaries if summary is not None]
    if len(complete) != len(plan):
        raise RuntimeError(f"{len(plan) - len(complete)} of {len(plan)} runs returned no result")
    return complete, todo


EMULATION_RESOURCE = "rtcbench-emulation"
"""The Ray resource an emulated run takes: a node started with one of it (`ray start
--resources='{"rtcbench-emulation": 1}'`) runs one emulated run at a time, as its timing needs."""


def ray_executor(
    address: str, mode: str = SIMULATE
) -> Callable[[list[_Job], Callable[[int, dict[str, Any]], None]], None]:
    """Runs jobs as Ray tasks on the cluster at `address` ("auto" for the one this machine has
    joined). Every node needs the same rtcbench installed and must see `out` at the same path (a
    shared file system). Needs the optional extra: `pip install rtcbench[ray]`. Emulated runs take
    `EMULATION_RESOURCE` each, so one runs per node that offers it."""
    from rtcbench import cluster

    ray = cluster.needs_ray()

    def execute(jobs: list[_Job], on_done: Callable[[int, dict[str, Any]], None]) -> None:
        with cluster.session(address):
            resources: dict[str, float] = {EMULATION_RESOURCE: 1.0} if mode in REAL_TIME_MODES else {}
            task = ray.remote(num_cpus=1, resources=resources)(_execute)
            pending = {task.remote(job): i for i, job in enumerate(jobs)}
            while pending:
                # With a timeout, so that an interrupt is taken at once (`workers.WAKE_S`).
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=WAKE_S)
                for ref in ready:
                    on_done(pending.pop(ref), ray.get(ref))

    return execute


def run_parallel(
    scenario: str | Path,
    controllers: Sequence[str],
    seed: int,
    out: PathArg,
    sets: Sequence[str] = (),
    *,
    jobs: int | None = None,
    figure: bool = True,
    command: str | None = None,
) -> list[runner.RunResult]:
    """`rtcbench run --jobs N`: every variant of `scenario` with each of `controllers`, `jobs`
    runs at a time on worker processes (`execute_plan`), each drawing its figure with `figure`.
    A run whose folder is already complete (and drawn, with `figure`) is read back, not run
    again: runs are a pure function of their key. The results in the order `rtcbench run`
    prints them, controller by controller."""
    out = Path(out)
    resolved = {c: runner.resolve_controller(c) for c in controllers}
    variants = resolve(scenario, list(sets))
    plan = [
        _Job.plan(v, c, resolved[c], seed, out, command, SIMULATE, figure=figure)
        for c in dict.fromkeys(controllers)
        for v in variants
    ]
    with batch_folder(out, plan):
        summaries, _ = execute_plan(plan, jobs)
    return [runner.RunResult(job.path, summary) for job, summary in zip(plan, summaries, strict=True)]


def run_suite(
    names_or_scenarios: Sequence[str | Path],
    controllers: Sequence[str],
    reps: int = 1,
    jobs: int | None = None,
    out: PathArg = Path("results"),
    sets: Sequence[str] = (),
    seed: int = 1,
    *,
    progress: Callable[[int, int], None] | RunProgress | None = None,
    command: str | None = None,
    mode: str = SIMULATE,
    ray_address: str | None = None,
) -> SuiteResult:
    """Runs every variant of the selected scenarios with every controller, `reps` times (repetition
    r uses seed `seed + r`), `jobs` runs at a time (default, and at most, one per CPU) in as many
    worker processes, or in this process with `jobs=1`. Writes every run's folder and then
    `<out>/suite.parquet` and `<out>/suite-runs.parquet`.

    `names_or_scenarios` holds suite names (`SUITES`), built-in scenario ids or scenario files;
    `controllers` built-in names or Python controllers as ``package.module:Class`` or
    ``path/to/file.py:Class`` (each worker process imports them again). Runs
    whose folder is already complete are read back, not run again. `progress(done, total)` is
    called after every run. User mistakes raise before anything is written: `UnknownSuite`,
    `ScenarioNotFound`, `runner.UnknownController`, `_core.ScenarioError`, or `ValueError`.

    With `ray_address` the runs are Ray tasks on that cluster instead (`ray_executor`; "auto":
    the one this machine joined), as a sweep's are.

    With `mode="emulate"` every run is emulated in real time (docs/emulation.md), one at a time
    (or one per Ray node that offers `EMULATION_RESOURCE`): two emulated runs on one machine would
    share its cores and spoil each other's timing.
    """
    out = Path(out)
    if not 1 <= reps <= MAX_REPS:
        raise InputError(f"--reps must be from 1 to {MAX_REPS:,}, got {reps}")
    runner.check_seed(seed)
    runner.check_seed(seed + reps - 1, "--seed + --reps - 1 (the last repetition's seed)")
    if jobs is not None and jobs < 1:
        raise InputError(f"--jobs must be at least 1, got {jobs}")
    if not controllers:
        raise InputError("--cc names no controller")
    runner.check_mode(mode)
    if mode in REAL_TIME_MODES:
        jobs = 1
    resolved = {c: runner.resolve_controller(c) for c in controllers}
    started = time.perf_counter()
    variants = [v for s in select(names_or_scenarios) for v in resolve(s, list(sets))]
    plan = [
        _Job.plan(v, c, resolved[c], seed + r, out, command, mode)
        for v in variants
        for c in dict.fromkeys(controllers)
        for r in range(reps)
    ]
    executor = ray_executor(ray_address, mode) if ray_address is not None else None
    with batch_folder(out, plan):
        complete, todo = execute_plan(plan, jobs, progress, executor)
        simulated = sum(float(complete[i]["simulated_s"]) for i in todo)
        flow_rows: list[dict[str, Any]] = []
        run_rows: list[dict[str, Any]] = []
        for job, summary in zip(plan, complete, strict=True):
            rel = job.path.relative_to(out).as_posix()
            flows_of_run, run_row = rows_of_run(summary, rel)
            flow_rows += flows_of_run
            run_rows.append(run_row)
        flows, runs = tables_of_rows(flow_rows, run_rows)
        write_parquet_atomic(flows, out / FLOWS_TABLE)
        write_parquet_atomic(runs, out / RUNS_TABLE)
    return SuiteResult(
        flows=flows,
        runs=runs,
        out=out,
        ran=len(todo),
        skipped=len(plan) - len(todo),
        wall_s=time.perf_counter() - started,
        simulated_s=simulated,
    )
