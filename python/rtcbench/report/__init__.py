"""`rtcbench report`: one self-contained HTML file for a run, a suite or several suites.

The page holds everything it shows (CSS and a few lines of script inline, figures as data URIs,
tables as HTML), so it opens offline, from a mail attachment or an archive, and fetches nothing.
Its sections (`docs/report.md`):

- Problems: folders or files that could not be used, and what was left out because of them.
- Scorecard: `rtcbench.scorecard`'s matrix, per-controller share and every verdict.
- Evaluation: the comparison `rtcbench evaluate` wrote (`evaluate.parquet`), for each folder
  that holds one.
- Comparison: `rtcbench.compare`'s table, when that module exists and several folders are given.
- Cases: per test case and variant, across controllers and repetitions: the time figure of each
  controller's first seed side by side (rates against capacity and target, queuing delay, loss,
  frame rate, competing traffic), queuing-delay CDFs (De Cicco et al. 2013 slides), box plots of
  utilisation, latency, responsiveness and loss with 95 % confidence intervals of the mean
  (Sjölund and Kevo 2022 §5.2) where there are repetitions, and their table.
- Runs: per run, the per-phase tables of Guerrero Viveros 2019 (Tables 6.1-6.3), and on request
  its own time figure. Citations: docs/references.md.
- Provenance: the commands and versions that produced the results, and the report's own.

Everything is read from results folders (`summary.json`, `scenario.toml`, the Parquet tables), so
a report can be made long after the runs, on another machine. The HTML is a pure function of
those folders and the options, apart from the provenance lines (versions, command line).
"""

from __future__ import annotations

import base64
import math
import platform
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata, resources
from pathlib import Path
from typing import Any, Literal

import jinja2
import polars as pl

from rtcbench import _core
from rtcbench import scorecard as sc
from rtcbench.analysis import mean_ci
from rtcbench.analysis.capacity import radio_flows
from rtcbench.compare import MIN_REPS
from rtcbench.identity import TESTBED_INFO
from rtcbench.plots import BoxPanel, StageBar, TradeoffSeries
from rtcbench.report import tables as tb
from rtcbench.report.comparison import comparison_section
from rtcbench.report.evaluation import evaluation_tables
from rtcbench.report.figures import (
    CDF_TABLE,
    RUN_FIGURE_TABLES,
    BoxTask,
    CdfRun,
    CdfTask,
    FigureTask,
    StageTask,
    TimeColumn,
    TimeTask,
    TradeoffTask,
    draw_all,
    write_figures,
)
from rtcbench.report.runs import (
    TIMESERIES,
    Problem,
    Run,
    Source,
    case_id,
    find_runs,
    natural_key,
    runs_ids,
    source_labels,
    video_flows,
)
from rtcbench.results import InputError, write_bytes_atomic
from rtcbench.stages import STAGES, stage_key
from rtcbench.testbed.timing import invalid_line
from rtcbench.workers import worker_count

__all__ = ["Problem", "ReportResult", "RunFigures", "build_report"]

RunFigures = Literal["first", "all", "none"]
"""Which runs are drawn over time: per case, the first seed of each controller side by side in one
figure (the default: a suite's repetitions look alike, figures are most of a report's time and
size, and one figure on shared scales compares the controllers at a glance); that and every run's
own figure in its block; or none."""

RESOLUTION_NOTE = (
    "In the time figures, panel (d) shows each video flow's received frame rate and, dashed on the "
    "right axis, the height its frames were encoded at: the synthetic encoder steps along "
    "libwebrtc's VP8 resolution ladder (180p to 720p) with its target rate (docs/simulator.md)."
)


class NoRuns(InputError):
    """Nothing under the folders given to a report is a readable run."""


@dataclass(frozen=True)
class FigureBlock:
    """A figure as the page shows it: its PNG, embedded once (the download link takes the image's
    own data, by script)."""

    id: str
    kind: str
    caption: str
    png_uri: str


@dataclass
class RunBlock:
    id: str
    title: str
    path: str
    source: str
    headline: str
    figure: FigureBlock | None
    figure_note: str
    tables: list[tb.Table]
    notes: list[str] = field(default_factory=list)


@dataclass
class CaseBlock:
    id: str
    scenario: str
    variant: str
    table: tb.Table
    figures: list[FigureBlock]
    notes: list[str]


@dataclass(frozen=True)
class ReportResult:
    """What `build_report` wrote: the HTML file, the ids of its figures and tables (the `id`
    attributes in the page), the files `figures` wrote, and the problems met."""

    path: Path
    figures: tuple[str, ...]
    tables: tuple[str, ...]
    figure_files: tuple[Path, ...]
    problems: tuple[Problem, ...]
    runs: int


def _png_uri(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def _versions() -> list[tuple[str, str]]:
    """The report generator's versions: rtcbench, Python and the libraries that draw and read."""
    out = [("rtcbench", _core.version()), ("python", platform.python_version())]
    for dist in ("polars", "numpy", "matplotlib", "pillow", "jinja2"):
        try:
            out.append((dist, metadata.version(dist)))
        except metadata.PackageNotFoundError:
            out.append((dist, "not installed"))
    out.append(("platform", platform.platform(terse=True)))
    return out


def _scores(
    runs: Sequence[Run], series: Mapping[Path, str], problems: list[Problem]
) -> tuple[pl.DataFrame, dict[Path, dict[str, float | None]]]:
    """The scorecard's long table over the runs, with `controller` replaced by the series label,
    and each run's values by criterion. A run that cannot be scored is a Problem."""
    frames = []
    for run in runs:
        if not run.has("scenario.toml") or TIMESERIES in run.unreadable:
            continue  # already a problem: "missing scenario.toml", or the time series named
        try:
            table = sc.score_table([run.path])
        except Exception as e:  # a corrupt timeseries.parquet raises polars' own errors
            problems.append(Problem(str(run.path), f"cannot be scored ({type(e).__name__}: {e})"))
            continue
        frames.append(table.with_columns(pl.lit(series[run.path]).alias("controller")))
    scores = pl.concat(frames) if frames else sc.score_table([])
    by_run: dict[Path, dict[str, float | None]] = {}
    for row in scores.iter_rows(named=True):
        by_run.setdefault(Path(row["run"]), {})[row["criterion"]] = row["value"]
    return scores, by_run


def _headline(run: Run) -> str:
    video = video_flows(run.summary)
    if not video:
        return "no media flow"
    f = video[0]

    def fmt(v: Any, spec: str, scale: float = 1.0) -> str:
        return "-" if v is None else format(float(v) * scale, spec)

    radio = radio_flows(run.summary.get("meta", {}))
    line = (
        f"{f['name']}: utilisation {fmt(None if int(f['id']) in radio else f.get('utilization'), '.2f')}, "
        f"queuing delay p95 {fmt(f.get('qdelay_p95_ms'), '.0f')} ms, "
        f"loss {fmt(f.get('loss_ratio'), '.2f', 100.0)} %"
    )
    for g in video:
        for flag in g.get("flags") or []:
            line += f"; FLAG {g['name']}: {flag}"
    real = run.summary.get(TESTBED_INFO.get(run.mode, ""))
    if run.mode in TESTBED_INFO and isinstance(real, dict):
        late = real.get("relay", {}).get("lateness_us", {})
        how = {"emulate": "emulated", "gstreamer": "GStreamer encoders"}.get(run.mode, "real browsers")
        line += f"; {how}, relay timing error p99 {fmt(late.get('p99'), '.0f')} µs"
        if (invalid := invalid_line(real)) is not None:
            line += f"; INVALID: {invalid.removeprefix('invalid: ')}"
        reasons = set(real.get("reasons") or [])
        for warning in real.get("warnings") or []:
            if warning not in reasons:
                line += f"; WARNING: {warning}"
    return line


def _first_seeds(members: Sequence[Run], series: Mapping[Path, str], labels: Sequence[str]) -> list[Run]:
    """Per label, its first seed that has every table a time figure needs."""
    out = []
    for label in labels:
        drawable = [r for r in members if series[r.path] == label and all(map(r.has, RUN_FIGURE_TABLES))]
        if drawable:
            out.append(min(drawable, key=lambda r: (r.seed, str(r.path))))
    return out


TIME_CAPTION = (
    "Over time, {who} side by side, each panel on one scale: (a) bottleneck capacity, each call's "
    "target (dashed), each media flow's sending (solid) and receive (dotted) rate in 200 ms windows, "
    "and the competing TCP, CBR and UDP background traffic (a BSS or a cell has no capacity of its "
    "own to draw); (a′) where the calls are small beside the "
    "rest, the calls alone on their own scale; (b) queuing delay, window mean and, "
    "dashed, the video's window p95; (c) loss by send time; (d) with video, frames completed at "
    "the receiver per second (1 s mean), freezes, and the encoded height (right axis). As "
    "Guerrero Viveros 2019 Fig. 6.2 and Sjölund and Kevo 2022 Fig. 5.1."
)
BOX_CAPTION = (
    "Box plots over repetitions (Sjölund and Kevo 2022 §5.2): one dot per run; box from the first "
    "to the third quartile, median line, whiskers to 1.5 IQR; diamond and bar: mean and its 95 % bootstrap "
    "confidence interval (a controller with one run has its dot only). Utilisation = receive rate / "
    "capacity of the video flows' path (not shown across a BSS or a cell: docs/compare.md); "
    "latency = their queuing-delay p95; responsiveness = {kind}; loss = dropped / sent; goodput = "
    "media payload received; freezes = of the video shown; frame rate and frame delay p95 "
    "(capture to rendering) of the frames rendered (means over the run's video flows). Every axis "
    "starts at zero."
)
TRADEOFF_CAPTION = (
    "Video goodput against queuing delay, as Pantheon (Yan et al. 2018) and De Cicco et al. 2013 "
    "draw schemes: one small dot per run, a large marker at each controller's mean (given in the "
    "legend) and the 1-σ ellipse of its runs. The delay axis runs from high to low: up and to the "
    "right is better. Each run's values are means over its video flows (goodput = media payload "
    "received; delay = the queuing-delay p95)."
)
CDF_CAPTION = (
    "Empirical CDF of the queuing delay (one-way delay - the flow's minimum) of every video packet "
    "received, pooled over the repetitions of each controller, as De Cicco et al. 2013 slides plot "
    "the CDF of RTT - RTTmin. The legend's p50 and p95 are the tables' (each run's, averaged over "
    "the runs), not the pooled curve's."
)


STAGE_CAPTION = (
    "Where the video's frames waited, per controller: each stage of a frame's delay from capture to "
    "render (encoder, sender queue and pacer, network, retransmission and FEC wait, jitter buffer, "
    'decoder; docs/metrics.md, "Frame delay by stage"), the mean over each run\'s frames, averaged '
    "over the runs; the stages add up to the mean frame delay, given beside the bar with the frame "
    "delay's p95 (the case table's). A browser run's frames cannot be dated: its stages are means "
    "from its counters, and the ones those do not give are listed as not observed."
)


def _or_nan(value: float | None, scale: float = 1.0) -> float:
    return math.nan if value is None else value * scale


def _mean(values: Sequence[float | None]) -> float | None:
    """The mean of the values there are (the tables' rule: a run without the value is left out)."""
    present = [float(v) for v in values if v is not None and math.isfinite(v)]
    return sum(present) / len(present) if present else None


def _cases(
    runs: Sequence[Run],
    series: Mapping[Path, str],
    labels: Sequence[str],
    scores: Mapping[Path, Mapping[str, float | None]],
    time_figures: bool,
) -> tuple[list[CaseBlock], list[FigureTask], dict[str, tuple[str, str]], set[Path]]:
    """Per case: its table, and the tasks of its figures (with their captions): the first seeds
    over time (with `time_figures`), the queuing-delay CDF, and box plots where some controller
    has repetitions. Also the runs the time figures draw."""
    blocks: list[CaseBlock] = []
    tasks: list[FigureTask] = []
    captions: dict[str, tuple[str, str]] = {}
    drawn: set[Path] = set()
    by_case: dict[tuple[str, str], list[Run]] = {}
    for run in runs:  # in report order: cases and variants in natural order
        by_case.setdefault(run.case, []).append(run)
    for (scenario, variant), members in by_case.items():
        cid = case_id(scenario, variant)
        home = members[0].path
        present = [label for label in labels if any(series[r.path] == label for r in members)]
        kind = tb.responsiveness_of(scores.get(r.path, {}) for r in members)
        values = {
            label: [
                tb.run_values(r, scores.get(r.path, {}), kind) for r in members if series[r.path] == label
            ]
            for label in present
        }
        repeated = any(len(v) > 1 for v in values.values())
        table = tb.case_table(f"tbl-case--{cid}", values, kind)
        heading = scenario + (f" [{variant}]" if variant else "")
        notes = []
        for label in present:
            flagged = [
                f"seed {r.seed}: "
                + "; ".join(f"{g['name']} {x}" for g in video_flows(r.summary) for x in g.get("flags") or [])
                for r in members
                if series[r.path] == label and any(g.get("flags") for g in video_flows(r.summary))
            ]
            if flagged:
                notes.append(
                    f"Flagged, {label} (its runs' numbers are not to be taken at face value): "
                    + " · ".join(flagged)
                )
        if time_figures:
            first = _first_seeds(members, series, present)
            if first:
                time_id = f"time--{cid}"
                columns = tuple(
                    TimeColumn(
                        series[r.path] + (f" · seed {r.seed}" if repeated else ""),
                        r.path,
                        r.summary["meta"],
                        r.digest,
                    )
                    for r in first
                )
                tasks.append(TimeTask(time_id, heading, columns))
                who = "each controller's first seed" if repeated else "the controllers"
                captions[time_id] = ("time", TIME_CAPTION.format(who=who))
                drawn.update(r.path for r in first)
            lacking = [label for label in present if label not in {series[r.path] for r in first}]
            if lacking:
                notes.append(
                    f"Not over time: {', '.join(lacking)} (no run with {', '.join(RUN_FIGURE_TABLES)}; "
                    "see Problems)."
                )
        tradeoff_id = f"tradeoff--{cid}"
        tradeoff = tuple(
            TradeoffSeries(
                label,
                tuple(_or_nan(v["qdelay_p95_ms"]) for v in vals),
                tuple(_or_nan(v["goodput_kbps"], 1e3) for v in vals),
            )
            for label, vals in values.items()
        )
        tasks.append(TradeoffTask(tradeoff_id, f"{heading}: goodput against delay", tradeoff, home))
        captions[tradeoff_id] = ("tradeoff", TRADEOFF_CAPTION)
        cdf_series = []
        pooled = 0
        for label in present:
            with_packets = [r for r in members if series[r.path] == label and r.has(CDF_TABLE)]
            pooled += len(with_packets)
            cdf_series.append(
                (
                    label,
                    tuple(
                        CdfRun(
                            r.path,
                            r.summary["meta"],
                            tuple(int(f["id"]) for f in video_flows(r.summary)),
                            r.digest,
                        )
                        for r in with_packets
                    ),
                )
            )
        if pooled < len(members):
            notes.append(
                f"The CDF pools {pooled} of {len(members)} runs: the others lack {CDF_TABLE} (see Problems)."
            )
        cdf_id = f"cdf--{cid}"
        quantiles = tuple(
            (label, _mean([v["qdelay_p50_ms"] for v in vals]), _mean([v["qdelay_p95_ms"] for v in vals]))
            for label, vals in values.items()
        )
        tasks.append(
            CdfTask(
                cdf_id, f"{heading}: queuing delay of the video packets", tuple(cdf_series), home, quantiles
            )
        )
        captions[cdf_id] = ("cdf", CDF_CAPTION)
        bars = tuple(
            StageBar(
                label,
                tuple(_mean([v[stage_key(st)] for v in vals]) for st in STAGES),
                _mean([v["frame_delay_mean_ms"] for v in vals]),
                _mean([v["frame_delay_p95_ms"] for v in vals]),
                len(vals),
            )
            for label, vals in values.items()
        )
        if any(b.frame_delay_mean_ms is not None for b in bars):
            stage_id = f"stages--{cid}"
            tasks.append(StageTask(stage_id, f"{heading}: where the video's frames waited", bars, home))
            captions[stage_id] = ("stages", STAGE_CAPTION)
        if repeated:
            panels = []
            for m in tb.METRICS:
                per_label = {
                    label: [float(x) for v in vals if (x := v[m.key]) is not None]
                    for label, vals in values.items()
                }
                panels.append(
                    BoxPanel(
                        title=kind if m.key == "responsiveness_s" else m.title,
                        ylabel=m.unit,
                        values=per_label,
                        ci={k: mean_ci(v) for k, v in per_label.items()},
                    )
                )
            box_id = f"box--{cid}"
            tasks.append(
                BoxTask(box_id, f"{heading}: per run, over repetitions", tuple(present), tuple(panels), home)
            )
            captions[box_id] = ("box", BOX_CAPTION.format(kind=kind))
        blocks.append(CaseBlock(cid, scenario, variant, table, [], notes))
    return blocks, tasks, captions, drawn


def build_report(
    dirs: Sequence[Path],
    out: Path | None = None,
    *,
    figures: Path | None = None,
    run_figures: RunFigures = "first",
    jobs: int | None = None,
    labels: Sequence[str] | None = None,
    min_reps: int = MIN_REPS,
    baseline: str | None = None,
    command: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ReportResult:
    """Writes the report of the runs under `dirs` to `out` (default: `<dir>/report.html` for one
    folder, `report.html` for several) and returns what it holds. With `figures`, every figure is
    also written there as `<id>.png` and `<id>.svg` (the SVG is drawn only then).

    Figures are taken from the cache in the run folders when the runs have not changed, and
    cached there when drawn (`rtcbench.report.cache`; a folder that cannot be written is left
    alone). Folders and files that cannot be used are in `ReportResult.problems` (and in the
    page); the report is still written, unless no run at all can be read (`NoRuns`). `jobs`
    processes draw the figures (default, and at most, one per CPU). `labels` name the folders
    (default: their names). `min_reps` is the repetitions each side of a case needs for a verdict
    in the comparison section (`rtcbench.compare.comparison`), `baseline` the side it measures the
    others against (default: the first controller, or the first folder). `command` is the command line shown
    as the report's own (default: this process's).
    """
    if not dirs:
        raise ValueError("no folder given")
    if labels is not None and len(labels) != len(dirs):
        raise ValueError(f"{len(labels)} labels for {len(dirs)} folders")
    dirs = [Path(d) for d in dirs]
    out = out if out is not None else (dirs[0] / "report.html" if len(dirs) == 1 else Path("report.html"))
    names = list(labels) if labels is not None else source_labels(dirs)
    sources = [Source(d, name) for d, name in zip(dirs, names, strict=True)]
    several = len(sources) > 1

    problems: list[Problem] = []
    runs = find_runs(sources, problems)
    if not runs:
        first = f": {problems[0]}" if problems else ""
        raise NoRuns(f"no run could be read under {', '.join(map(str, dirs))}{first}; no report was written")
    runs.sort(key=Run.order)
    series = {r.path: f"{r.source.label}/{r.controller}" if several else r.controller for r in runs}
    series_labels = sorted(set(series.values()), key=natural_key)

    scores, by_run = _scores(runs, series, problems)
    cases, tasks, captions, in_case_figure = _cases(
        runs, series, series_labels, by_run, run_figures != "none"
    )
    comparison = (
        comparison_section(
            dirs,
            names if several else series_labels,
            several=several,
            min_reps=min_reps,
            baseline=baseline,
            problems=problems,
        )
        if several or len(series_labels) > 1
        else None
    )
    if comparison is not None:
        # Each case says, head to head, what the call got from each side (its sentences).
        for case in cases:
            case.notes.extend(comparison.sentences(case.id))

    run_ids = runs_ids(runs, several)
    blocks: list[RunBlock] = []
    for r in runs:
        rid = run_ids[r.path]
        cid = case_id(r.scenario, r.variant)
        lacking = [name for name in RUN_FIGURE_TABLES if not r.has(name)]
        note = ""
        if run_figures == "all" and not lacking:
            fig_id = f"run--{rid}"
            tasks.append(TimeTask(fig_id, r.title(), (TimeColumn("", r.path, r.summary["meta"], r.digest),)))
            captions[fig_id] = ("run", TIME_CAPTION.format(who="this run"))
        elif lacking:
            note = f"Not drawn over time: missing {', '.join(lacking)}."
        elif r.path in in_case_figure:
            note = f"Drawn over time in its case's figure (time--{cid})."
        elif run_figures == "none":
            note = "Not drawn over time (--run-figures none)."
        else:
            note = (
                "Not drawn over time: its case's figure shows the first seed (--run-figures all: every run)."
            )
        access = [tb.wifi_table(r, f"tbl-{rid}"), tb.lte_table(r, f"tbl-{rid}")]
        tables = [
            tb.flows_table(r, f"tbl-{rid}"),
            *tb.phase_tables(r, f"tbl-{rid}"),
            *(t for t in access if t is not None),
        ]
        blocks.append(
            RunBlock(
                id=rid,
                title=r.title(),
                path=str(r.path),
                source=r.source.label,
                headline=_headline(r),
                figure=None,
                figure_note=note,
                tables=tables,
            )
        )

    rendered = draw_all(tasks, worker_count(jobs), problems, progress, svg=figures is not None)
    figure_blocks = {
        fig_id: FigureBlock(
            id=fig_id, kind=captions[fig_id][0], caption=captions[fig_id][1], png_uri=_png_uri(img.png)
        )
        for fig_id, img in rendered.items()
    }
    for case in cases:
        case.figures = [
            figure_blocks[f]
            for f in (
                f"time--{case.id}",
                f"stages--{case.id}",
                f"tradeoff--{case.id}",
                f"cdf--{case.id}",
                f"box--{case.id}",
            )
            if f in figure_blocks
        ]
    for block in blocks:
        fig_id = f"run--{block.id}"
        if fig_id in figure_blocks:
            block.figure = figure_blocks[fig_id]
        elif not block.figure_note:
            block.figure_note = "Its figure could not be drawn (see Problems)."

    evaluation = evaluation_tables(sources, problems)
    score_tables: list[tb.Table] = []
    if scores.height:
        score_tables = [
            tb.score_matrix("tbl-score-matrix", scores, series_labels),
            tb.score_per_controller("tbl-score-controllers", scores, series_labels),
            tb.score_details("tbl-score-details", scores),
        ]
    provenance = _provenance(sources, runs, command)
    problem_table = tb.Table(
        id="tbl-problems",
        kind="problems",
        caption="What could not be used, and what was left out",
        header=("where", "what"),
        rows=tuple((tb.Cell(p.where), tb.Cell(p.what)) for p in problems),
    )
    html = _render_page(
        title="rtcbench report: " + ", ".join(s.label for s in sources),
        sources=sources,
        runs=runs,
        labels=series_labels,
        problems=problem_table if problems else None,
        provenance=provenance,
        score_tables=score_tables,
        comparison=comparison,
        evaluation=evaluation,
        cases=cases,
        blocks=blocks,
        figures_drawn=len(figure_blocks),
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(out, html.encode())
    files = tuple(write_figures(rendered, figures)) if figures is not None else ()

    table_ids = [t.id for t in score_tables] + [t.id for t in evaluation] + [c.table.id for c in cases]
    table_ids += [t.id for b in blocks for t in b.tables] + [t.id for t in provenance]
    if comparison is not None:
        table_ids += [t.id for t in comparison.tables]
    if problems:
        table_ids.append(problem_table.id)
    return ReportResult(
        path=out,
        figures=tuple(sorted(figure_blocks)),
        tables=tuple(table_ids),
        figure_files=files,
        problems=tuple(problems),
        runs=len(runs),
    )


def _provenance(sources: Sequence[Source], runs: Sequence[Run], command: str | None) -> list[tb.Table]:
    """Who made what: the report's own command line and versions, then per folder the commands
    and rtcbench versions recorded in its runs' summaries (with how many runs each)."""
    own = command if command is not None else " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv])
    report_rows = [(tb.Cell("report command"), tb.Cell(own, cls="code"))]
    report_rows += [(tb.Cell(name), tb.Cell(version, cls="code")) for name, version in _versions()]
    rows = []
    for s in sources:
        mine = [r for r in runs if r.source == s]
        commands: dict[str, int] = {}
        versions: dict[str, int] = {}
        for r in mine:
            made = r.summary.get("provenance") or {}
            c = made.get("command") or "(not recorded: run from Python)"
            commands[c] = commands.get(c, 0) + 1
            v = str(made.get("rtcbench_version") or "(not recorded)")
            if made.get("git_commit"):
                v += f" at {made['git_commit'][:12]}" + (
                    " (uncommitted changes)" if made.get("git_dirty") else ""
                )
            versions[v] = versions.get(v, 0) + 1
        rows.append(
            (
                tb.Cell(s.label),
                tb.Cell(str(s.path), cls="code"),
                tb.Cell(str(len(mine)), cls="num"),
                tb.Cell("\n".join(f"{c}  ({n} runs)" for c, n in sorted(commands.items())), cls="code"),
                tb.Cell(", ".join(f"{v} ({n} runs)" for v, n in sorted(versions.items())), cls="code"),
            )
        )
    return [
        tb.Table(
            id="tbl-provenance-report",
            kind="provenance",
            caption="This report",
            header=("", "version or command line"),
            rows=tuple(report_rows),
        ),
        tb.Table(
            id="tbl-provenance-sources",
            kind="provenance",
            caption="The results: commands and rtcbench versions recorded in each run's summary.json",
            header=("folder", "path", "runs", "commands", "rtcbench"),
            rows=tuple(rows),
        ),
    ]


def _render_page(**context: Any) -> str:
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    source = resources.files("rtcbench.report").joinpath("template.html.j2").read_text(encoding="utf-8")
    return env.from_string(source).render(resolution_note=RESOLUTION_NOTE, **context)
