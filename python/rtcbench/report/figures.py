"""The report's figures: what each one needs, drawing them (in worker processes for a suite), and
writing them out for papers.

A figure is described by a small picklable task (paths and numbers, no frames), so a worker reads
only the tables that figure needs: a run's figure reads its time series, links, controller and
frames tables; a case's queuing-delay CDF reads the received packets of its video flows from
every repetition. Drawing is most of a report's time (about 0.4 s of CPU per run figure, PNG
and SVG), so a suite's figures are shared between processes, as `rtcbench suite` shares runs.
"""

from __future__ import annotations

import os
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
from rtcbench.measure import figure_tables
from rtcbench.metrics import Tables, packet_delays
from rtcbench.plots import BoxPanel, Rendered, RunColumn
from rtcbench.report.runs import Problem

__all__ = [
    "BoxTask",
    "CdfTask",
    "FigureTask",
    "RunFigureTask",
    "draw",
    "draw_all",
    "write_figures",
]

RUN_FIGURE_TABLES = ("timeseries.parquet", "links.parquet", "controller.parquet", "frames.parquet")
"""What a run's figure is drawn from (no packets: they are most of a suite's bytes)."""
CDF_TABLE = "packets.parquet"

_PACKET_COLUMNS = ("t_us", "event", "packet", "flow", "kind", "size", "payload", "sent_us")
"""The required packet columns (docs/traces.md), all `metrics.Tables` needs to compute delays."""

PARALLEL_MIN_FIGURES = 12
"""Below this many figures they are drawn in this process: a worker takes about as long to start
(importing polars and matplotlib) as a few figures take to draw."""


@dataclass(frozen=True)
class RunFigureTask:
    """`plots.run_figure` of one run."""

    id: str
    path: Path
    meta: dict[str, Any]
    title: str


@dataclass(frozen=True)
class CdfTask:
    """`plots.qdelay_cdf_figure` of one case: per label, the runs pooled and their video flows."""

    id: str
    title: str
    series: tuple[tuple[str, tuple[tuple[Path, dict[str, Any], tuple[int, ...]], ...]], ...]


@dataclass(frozen=True)
class BoxTask:
    """`plots.repetitions_figure` of one case, from values already taken from the summaries."""

    id: str
    title: str
    labels: tuple[str, ...]
    panels: tuple[BoxPanel, ...]


FigureTask = RunFigureTask | CdfTask | BoxTask


def _run_figure(task: RunFigureTask, problems: list[Problem]) -> Figure | None:
    try:
        t, ts = figure_tables(task.path, task.meta)
    except Exception as e:  # polars raises several kinds for a truncated or foreign file
        problems.append(Problem(str(task.path), f"a trace table is unreadable ({type(e).__name__}: {e})"))
        return None
    return plots.run_figure([RunColumn("", t, ts)], task.title)


def _received_delays(
    path: Path, meta: dict[str, Any], flows: tuple[int, ...], problems: list[Problem]
) -> npt.NDArray[np.float64]:
    """Queuing delays (ms) of every packet the flows received, as `metrics.packet_delays` has them."""
    file = path / CDF_TABLE
    try:
        packets = (
            pl.scan_parquet(file)
            .select(_PACKET_COLUMNS)
            .filter((pl.col("event") == "received") & pl.col("flow").is_in(list(flows)))
            .collect()
        )
    except Exception as e:  # as in `_read`
        problems.append(Problem(str(file), f"unreadable ({type(e).__name__}: {e})"))
        return np.empty(0)
    empty = pl.DataFrame()
    t = Tables(packets=packets, frames=empty, controller=empty, links=empty, feedback=empty, meta=meta)
    out: npt.NDArray[np.float64] = packet_delays(t).get_column("qdelay_ms").to_numpy().astype(np.float64)
    return out


def _cdf_figure(task: CdfTask, problems: list[Problem]) -> Figure:
    delays = {
        label: np.concatenate(
            [np.empty(0), *(_received_delays(path, meta, flows, problems) for path, meta, flows in runs)]
        )
        for label, runs in task.series
    }
    return plots.qdelay_cdf_figure(delays, task.title)


def draw(task: FigureTask) -> tuple[str, Rendered | None, list[Problem]]:
    """Draws one figure: (its id, its PNG and SVG or None if it could not be drawn, problems)."""
    problems: list[Problem] = []
    fig: Figure | None
    if isinstance(task, RunFigureTask):
        fig = _run_figure(task, problems)
    elif isinstance(task, CdfTask):
        fig = _cdf_figure(task, problems)
    else:
        fig = plots.repetitions_figure(task.panels, task.labels, task.title)
    return task.id, (plots.render(fig, svg=True) if fig is not None else None), problems


def _cost(task: FigureTask) -> float:
    """A rough drawing time: points drawn grow with a run's duration and its flows; a CDF reads
    every repetition's packets."""
    if isinstance(task, RunFigureTask):
        return float(task.meta.get("duration_s", 0.0)) * max(1, len(task.meta.get("flows", [])))
    if isinstance(task, CdfTask):
        return 10.0 * sum(len(runs) for _, runs in task.series)
    return 100.0


def draw_all(
    tasks: Sequence[FigureTask],
    jobs: int,
    problems: list[Problem],
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Rendered]:
    """Every figure, by id (`plots.Rendered`); figures that could not be drawn are left out and
    their problems added to `problems` in task order, so the report is the same however many
    processes drew it."""
    results: dict[str, tuple[Rendered | None, list[Problem]]] = {}

    def done(fig_id: str, rendered: Rendered | None, found: list[Problem]) -> None:
        results[fig_id] = (rendered, found)
        if progress is not None:
            progress(len(results), len(tasks))

    if jobs <= 1 or len(tasks) < PARALLEL_MIN_FIGURES:
        for task in tasks:
            done(*draw(task))
    else:
        # Spawned, not forked, for the reason `suite._run_parallel` gives: polars' threads.
        pool = workers.pool(jobs)
        with workers.stopping(pool):
            # Longest first, so that no long figure starts last while the other workers idle.
            with workers.single_threaded_polars(), workers.spawning():
                pending: set[Future[tuple[str, Rendered | None, list[Problem]]]] = {
                    pool.submit(workers.job, draw, t) for t in sorted(tasks, key=_cost, reverse=True)
                }
            while pending:
                # With a timeout, so that an interrupt is taken at once (`workers.WAKE_S`).
                finished, pending = wait(pending, timeout=workers.WAKE_S, return_when=FIRST_COMPLETED)
                for fut in finished:
                    done(*fut.result())
        pool.shutdown()
    out: dict[str, Rendered] = {}
    for task in tasks:
        rendered, found = results[task.id]
        problems.extend(found)
        if rendered is not None:
            out[task.id] = rendered
    return out


def write_figures(figures: dict[str, Rendered], folder: Path) -> list[Path]:
    """Writes each figure as `<id>.png` and `<id>.svg` into `folder` (each file atomically: a
    temporary name, then a rename)."""
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for fig_id in sorted(figures):
        rendered = figures[fig_id]
        for ext, data in (("png", rendered.png), ("svg", rendered.svg)):
            if data is None:
                continue
            final = folder / f"{fig_id}.{ext}"
            tmp = folder / f".{fig_id}.{ext}.{os.getpid()}.tmp"
            tmp.write_bytes(data)
            os.replace(tmp, final)
            written.append(final)
    return written
