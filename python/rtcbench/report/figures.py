"""The report's figures: what each one needs, drawing them (in worker processes for a suite), the
cache that spares drawing them again (`rtcbench.report.cache`), and writing them out for papers.

A figure is described by a small picklable task (paths and numbers, no frames), so a worker reads
only the tables that figure needs: a time figure reads its runs' time series, links, controller
and frames tables (`measure.figure_tables`); a case's queuing-delay CDF reads the received packets
of its video flows from every repetition. Drawing is most of a report's time, so a suite's figures
are shared between processes, as `rtcbench suite` shares runs, and each is kept in its runs'
folders for the next report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl
from matplotlib.figure import Figure

from rtcbench import plots, workers
from rtcbench.analysis import packet_delays
from rtcbench.measure import figure_tables
from rtcbench.plots import BoxPanel, FigureStyle, Rendered, RunColumn, StageBar, TradeoffSeries
from rtcbench.report import cache
from rtcbench.report.runs import Problem, Run, Source, find_runs, runs_ids, source_labels
from rtcbench.results import PlantedLink, regular_file, write_bytes_atomic
from rtcbench.tables import Tables

__all__ = [
    "BoxTask",
    "CdfTask",
    "FigureTask",
    "StageTask",
    "TimeTask",
    "TradeoffTask",
    "draw",
    "draw_all",
    "draw_runs",
    "write_figures",
]

RUN_FIGURE_TABLES = ("timeseries.parquet", "links.parquet", "controller.parquet", "frames.parquet")
"""What a time figure is drawn from (no packets: they are most of a suite's bytes)."""
CDF_TABLE = "packets.parquet"

_PACKET_COLUMNS = ("t_us", "event", "packet", "flow", "kind", "size", "payload", "sent_us")
"""The required packet columns (docs/traces.md), all `tables.Tables` needs to compute delays."""

PARALLEL_MIN_FIGURES = 12
"""Below this many figures they are drawn in this process: a worker takes about as long to start
(importing polars and matplotlib) as a few figures take to draw."""


@dataclass(frozen=True)
class TimeColumn:
    """One run of a time figure: its column title, folder, summary `meta` and summary digest."""

    label: str
    path: Path
    meta: dict[str, Any]
    digest: str


@dataclass(frozen=True)
class TimeTask:
    """`plots.run_figure` of runs side by side: a case's first seeds, or one run."""

    id: str
    title: str
    columns: tuple[TimeColumn, ...]

    @property
    def home(self) -> Path:
        return self.columns[0].path

    def key(self) -> str:
        return cache.figure_key("time", [self.title, [(c.label, c.digest) for c in self.columns]])


@dataclass(frozen=True)
class CdfRun:
    """A run pooled in a CDF: its folder, summary `meta`, video flows and summary digest."""

    path: Path
    meta: dict[str, Any]
    flows: tuple[int, ...]
    digest: str


@dataclass(frozen=True)
class CdfTask:
    """`plots.qdelay_cdf_figure` of one case: per label, the runs pooled, and the p50 and p95 its
    legend gives (the case table's: each run's, averaged over the runs). `home`: the case's first
    run, where the figure is cached."""

    id: str
    title: str
    series: tuple[tuple[str, tuple[CdfRun, ...]], ...]
    home: Path
    quantiles: tuple[tuple[str, float | None, float | None], ...] = ()

    def key(self) -> str:
        runs = [(label, [(r.digest, list(r.flows)) for r in rs]) for label, rs in self.series]
        return cache.figure_key("cdf", [self.title, runs, [list(q) for q in self.quantiles]])


@dataclass(frozen=True)
class StageTask:
    """`plots.stage_figure` of one case: each label's frame delay by stage, from the summaries."""

    id: str
    title: str
    bars: tuple[StageBar, ...]
    home: Path

    def key(self) -> str:
        bars = [
            [b.label, list(b.stages), b.frame_delay_mean_ms, b.frame_delay_p95_ms, b.runs] for b in self.bars
        ]
        return cache.figure_key("stages", [self.title, bars])


@dataclass(frozen=True)
class BoxTask:
    """`plots.repetitions_figure` of one case, from values already taken from the summaries."""

    id: str
    title: str
    labels: tuple[str, ...]
    panels: tuple[BoxPanel, ...]
    home: Path

    def key(self) -> str:
        panels = [
            [p.title, p.ylabel, {k: list(v) for k, v in p.values.items()}, {k: p.ci[k] for k in sorted(p.ci)}]
            for p in self.panels
        ]
        return cache.figure_key("box", [self.title, list(self.labels), panels])


@dataclass(frozen=True)
class TradeoffTask:
    """`plots.tradeoff_figure` of one case: each label's runs as (queuing delay p95 in ms, video
    goodput in bit/s), taken from the summaries."""

    id: str
    title: str
    series: tuple[TradeoffSeries, ...]
    home: Path

    def key(self) -> str:
        series = [[s.label, list(s.delay_ms), list(s.rate_bps)] for s in self.series]
        return cache.figure_key("tradeoff", [self.title, series])


TRADEOFF_DELAY = "queuing delay p95 of the video (ms)"
"""The delay the trade-off figure's x axis shows: each run's mean over its video flows."""

FigureTask = TimeTask | CdfTask | BoxTask | TradeoffTask | StageTask


def _read(path: Path, problems: list[Problem], **kwargs: Any) -> pl.DataFrame | None:
    try:
        return pl.read_parquet(regular_file(path), **kwargs)
    except Exception as e:  # polars raises several kinds for a truncated or foreign file
        problems.append(Problem(str(path), f"unreadable ({type(e).__name__}: {e})"))
        return None


def _time_figure(task: TimeTask, problems: list[Problem]) -> Figure | None:
    columns = []
    for c in task.columns:
        try:
            t, ts = figure_tables(c.path, c.meta)
        except Exception as e:  # polars raises several kinds for a truncated or foreign file
            problems.append(Problem(str(c.path), f"a trace table is unreadable ({type(e).__name__}: {e})"))
            return None
        columns.append(RunColumn(c.label, t, ts))
    return plots.run_figure(columns, task.title)


def _received_delays(run: CdfRun, problems: list[Problem]) -> npt.NDArray[np.float64]:
    """Queuing delays (ms) of every packet the flows received, as `analysis.packet_delays` has them."""
    file = run.path / CDF_TABLE
    try:
        packets = (
            pl.scan_parquet(regular_file(file))
            .select(_PACKET_COLUMNS)
            .filter((pl.col("event") == "received") & pl.col("flow").is_in(list(run.flows)))
            .collect()
        )
    except Exception as e:  # as in `_read`
        problems.append(Problem(str(file), f"unreadable ({type(e).__name__}: {e})"))
        return np.empty(0)
    empty = pl.DataFrame()
    t = Tables(packets=packets, frames=empty, controller=empty, links=empty, feedback=empty, meta=run.meta)
    out: npt.NDArray[np.float64] = packet_delays(t).get_column("qdelay_ms").to_numpy().astype(np.float64)
    return out


def _cdf_figure(task: CdfTask, problems: list[Problem]) -> Figure:
    delays = {
        label: np.concatenate([np.empty(0), *(_received_delays(r, problems) for r in runs)])
        for label, runs in task.series
    }
    quantiles = {label: (p50, p95) for label, p50, p95 in task.quantiles}
    return plots.qdelay_cdf_figure(delays, task.title, quantiles or None)


def draw(task: FigureTask, svg: bool = False) -> tuple[str, Rendered | None, list[Problem]]:
    """Draws one figure: (its id, its PNG (and SVG with `svg`) or None if it could not be drawn,
    problems)."""
    problems: list[Problem] = []
    fig: Figure | None
    if isinstance(task, TimeTask):
        fig = _time_figure(task, problems)
    elif isinstance(task, CdfTask):
        fig = _cdf_figure(task, problems)
    elif isinstance(task, TradeoffTask):
        fig = plots.tradeoff_figure(task.series, task.title, delay_label=TRADEOFF_DELAY)
    elif isinstance(task, StageTask):
        fig = plots.stage_figure(task.bars, task.title)
    else:
        fig = plots.repetitions_figure(task.panels, task.labels, task.title)
    return task.id, (plots.render(fig, svg=svg) if fig is not None else None), problems


def _cost(task: FigureTask) -> float:
    """A rough drawing time: points drawn grow with the runs' duration and their flows; a CDF
    reads every repetition's packets."""
    if isinstance(task, TimeTask):
        return sum(
            float(c.meta.get("duration_s", 0.0)) * max(1, len(c.meta.get("flows", []))) for c in task.columns
        )
    if isinstance(task, CdfTask):
        return 10.0 * sum(len(runs) for _, runs in task.series)
    return 100.0


def draw_all(
    tasks: Sequence[FigureTask],
    jobs: int,
    problems: list[Problem],
    progress: Callable[[int, int], None] | None = None,
    *,
    svg: bool = False,
) -> dict[str, Rendered]:
    """Every figure, by id (`plots.Rendered`), from the cache (`rtcbench.report.cache`) or drawn
    and then cached; with `svg`, each has its SVG too. Figures that could not be drawn are left
    out and their problems added to `problems` in task order, so the report is the same however
    many processes drew it. A figure drawn with problems is not cached: the next report says them
    again."""
    results: dict[str, tuple[Rendered | None, list[Problem]]] = {}

    def done(fig_id: str, rendered: Rendered | None, found: list[Problem]) -> None:
        results[fig_id] = (rendered, found)
        if progress is not None:
            progress(len(results), len(tasks))

    keys = {task.id: task.key() for task in tasks}
    todo = []
    for task in tasks:
        cached = cache.load(task.home, task.id, keys[task.id], svg=svg)
        if cached is not None:
            done(task.id, cached, [])
        else:
            todo.append(task)
    drawn: list[str] = []

    def drew(fig_id: str, rendered: Rendered | None, found: list[Problem]) -> None:
        done(fig_id, rendered, found)
        drawn.append(fig_id)

    if jobs <= 1 or len(todo) < PARALLEL_MIN_FIGURES:
        for task in todo:
            drew(*draw(task, svg))
    else:
        # Spawned, not forked, for the reason `suite._run_parallel` gives: polars' threads.
        pool = workers.pool(min(jobs, len(todo)))
        with workers.stopping(pool):
            # Longest first, so that no long figure starts last while the other workers idle.
            with workers.single_threaded_polars(), workers.spawning():
                pending: set[Future[tuple[str, Rendered | None, list[Problem]]]] = {
                    pool.submit(workers.job, draw, t, svg) for t in sorted(todo, key=_cost, reverse=True)
                }
            while pending:
                # With a timeout, so that an interrupt is taken at once (`workers.WAKE_S`).
                finished, pending = wait(pending, timeout=workers.WAKE_S, return_when=FIRST_COMPLETED)
                for fut in finished:
                    drew(*fut.result())
        pool.shutdown()
    by_id = {task.id: task for task in todo}
    for fig_id in drawn:
        rendered, found = results[fig_id]
        if rendered is not None and not found:
            try:
                cache.store(by_id[fig_id].home, fig_id, keys[fig_id], rendered)
            except PlantedLink as e:
                # Named once, however many figures that run's cache would have held.
                if (link := Problem(str(e.link), e.what)) not in problems:
                    problems.append(link)
    out: dict[str, Rendered] = {}
    for task in tasks:
        rendered, found = results[task.id]
        problems.extend(found)
        if rendered is not None:
            out[task.id] = rendered
    return out


def write_figures(figures: dict[str, Rendered], folder: Path) -> list[Path]:
    """Writes each figure as `<id>.png`, and `<id>.svg` and `<id>.pdf` where it has them, into
    `folder` (each file atomically: a temporary name, then a rename)."""
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for fig_id in sorted(figures):
        rendered = figures[fig_id]
        for ext, data in (("png", rendered.png), ("svg", rendered.svg), ("pdf", rendered.pdf)):
            if data is not None:
                written.append(write_bytes_atomic(folder / f"{fig_id}.{ext}", data))
    return written


def draw_runs(
    dirs: Sequence[Path], out: Path, *, style: FigureStyle = "paper", formats: Sequence[str] = ("pdf", "png")
) -> tuple[list[Path], list[str]]:
    """Draws `plots.run_figure` of every run under `dirs` in `style` and writes it into `out` as
    `<run id>.<format>` for each of `formats` (png, svg, pdf; ids as the report's runs,
    `runs_ids`). The files written, and what could not be drawn, in one line each. The paper
    style's PNG is full colour at 300 dpi; the screen style's a palette image at 90 dpi, as
    `rtcbench run` writes overview.png."""
    problems: list[Problem] = []
    sources = [Source(d, label) for d, label in zip(dirs, source_labels(list(dirs)), strict=True)]
    runs = sorted(find_runs(sources, problems), key=Run.order)
    ids = runs_ids(runs, len(sources) > 1)
    written: list[Path] = []
    for run in runs:
        lacking = [name for name in RUN_FIGURE_TABLES if not run.has(name)]
        if lacking:
            if absent := [name for name in lacking if name not in run.unreadable]:
                problems.append(Problem(str(run.path), f"not drawn: missing {', '.join(absent)}"))
            continue
        try:
            t, ts = figure_tables(run.path, run.summary["meta"])
        except Exception as e:  # polars raises several kinds for a truncated or foreign file
            problems.append(Problem(str(run.path), f"a trace table is unreadable ({type(e).__name__}: {e})"))
            continue
        fig = plots.run_figure([RunColumn("", t, ts)], run.title(), style=style)
        rendered = plots.render(fig, svg="svg" in formats, pdf="pdf" in formats, palette=style == "screen")
        out.mkdir(parents=True, exist_ok=True)
        for ext, data in (("png", rendered.png), ("svg", rendered.svg), ("pdf", rendered.pdf)):
            if ext in formats and data is not None:
                written.append(write_bytes_atomic(out / f"{ids[run.path]}.{ext}", data))
    return written, [str(p) for p in problems]
