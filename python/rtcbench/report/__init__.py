"""`rtcbench report`: one self-contained HTML file for a run, a suite or several suites.

The page holds everything it shows (CSS and a few lines of script inline, figures as data URIs,
tables as HTML), so it opens offline, from a mail attachment or an archive, and fetches nothing.
Its sections (`docs/report.md`):

- Problems: folders or files that could not be used, and what was left out because of them.
- Scorecard: `rtcbench.scorecard`'s matrix, per-controller share and every verdict.
- Comparison: `rtcbench.compare`'s table, when that module exists and several folders are given.
- Cases: per test case and variant, across controllers and repetitions: queuing-delay CDFs
  (seed 002), box plots of utilisation, latency, responsiveness and loss with 95 % confidence
  intervals of the mean (seed 001 §5.2), and their table.
- Runs: per run, the seeds' time figure (rates against capacity and target, queuing delay, loss,
  frame rate, competing traffic) and seed 000's per-phase tables (Tables 6.1-6.3).
- Provenance: the commands and versions that produced the results, and the report's own.

Everything is read from results folders (`summary.json`, `scenario.toml`, the Parquet tables), so
a report can be made long after the runs, on another machine. The HTML is a pure function of
those folders and the options, apart from the provenance lines (versions, command line).
"""

from __future__ import annotations

import base64
import importlib
import os
import platform
import shlex
import sys
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata, resources
from pathlib import Path
from typing import Any, Literal

import jinja2
import polars as pl

from rtcbench import _core
from rtcbench import scorecard as sc
from rtcbench.metrics import mean_ci
from rtcbench.plots import BoxPanel
from rtcbench.report import tables as tb
from rtcbench.report.figures import (
    CDF_TABLE,
    RUN_FIGURE_TABLES,
    BoxTask,
    CdfTask,
    FigureTask,
    RunFigureTask,
    draw_all,
    write_figures,
)
from rtcbench.report.runs import Problem, Run, Source, find_runs, slug, source_labels, video_flows
from rtcbench.results import InputError
from rtcbench.suite import _cpus

__all__ = ["Problem", "ReportResult", "RunFigures", "build_report"]

RunFigures = Literal["first", "all", "none"]
"""Which runs get their time figure: the first seed of each case, variant and controller (the
default: a suite's repetitions look alike, and figures are most of a report's time and size),
every run, or none."""

RESOLUTION_NOTE = (
    "Panel (d) shows each video flow's received frame rate and, dashed on the right axis, the "
    "height its frames were encoded at: the synthetic encoder steps along libwebrtc's VP8 "
    "resolution ladder (180p to 720p) with its target rate (docs/simulator.md)."
)


class NoRuns(InputError):
    """Nothing under the folders given to a report is a readable run."""


@dataclass(frozen=True)
class FigureBlock:
    """A figure as the page shows it: the PNG to look at, PNG and SVG to download."""

    id: str
    kind: str
    caption: str
    png_uri: str
    svg_uri: str


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


# Characters an SVG may keep as they are in a data URI: percent-encoding is about 5 % larger than
# the text, base64 a third. Quotes, '<', '>', '#', '%' and line breaks are encoded.
_SVG_SAFE = " !$&()*+,-./:;=?@_~'"


def _svg_uri(data: bytes) -> str:
    text = urllib.parse.quote(data.decode("utf-8"), safe=_SVG_SAFE)
    return "data:image/svg+xml;charset=utf-8," + text


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


def _comparison(dirs: Sequence[Path], labels: Sequence[str], problems: list[Problem]) -> pl.DataFrame | None:
    """The comparison section's table from `rtcbench.compare.compare`, if that module exists and
    several folders are given; None otherwise. An error inside it becomes a Problem (the rest of
    the report still stands); only the module's absence is silent."""
    if len(dirs) < 2:
        return None
    try:
        module = importlib.import_module("rtcbench.compare")
    except ModuleNotFoundError as e:
        if e.name == "rtcbench.compare":
            return None
        problems.append(Problem("rtcbench.compare", f"cannot be imported ({e})"))
        return None
    try:
        df = module.compare(list(dirs), list(labels))
    except Exception as e:  # another module's failure must not cost the whole report
        problems.append(Problem("rtcbench.compare", f"failed ({type(e).__name__}: {e}); section left out"))
        return None
    if not isinstance(df, pl.DataFrame):
        problems.append(Problem("rtcbench.compare", f"returned {type(df).__name__}, not a polars DataFrame"))
        return None
    return df


def _scores(
    runs: Sequence[Run], series: Mapping[Path, str], problems: list[Problem]
) -> tuple[pl.DataFrame, dict[Path, dict[str, float | None]]]:
    """The scorecard's long table over the runs, with `controller` replaced by the series label,
    and each run's values by criterion. A run that cannot be scored is a Problem."""
    frames = []
    for run in runs:
        if not run.has("scenario.toml"):
            continue  # already a problem: "missing scenario.toml"
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


def _case_id(scenario: str, variant: str) -> str:
    return slug(scenario) + (f"@{slug(variant)}" if variant else "")


def _run_ids(runs: Sequence[Run], several: bool) -> dict[Path, str]:
    ids: dict[Path, str] = {}
    taken: set[str] = set()
    for run in runs:
        base = f"{_case_id(run.scenario, run.variant)}--{slug(run.controller)}--seed-{run.seed}"
        if several:
            base = f"{slug(run.source.label)}--{base}"
        rid, n = base, 1
        while rid in taken:
            n += 1
            rid = f"{base}-{n}"
        taken.add(rid)
        ids[run.path] = rid
    return ids


def _headline(run: Run) -> str:
    video = video_flows(run.summary)
    if not video:
        return "no media flow"
    f = video[0]

    def fmt(v: Any, spec: str, scale: float = 1.0) -> str:
        return "-" if v is None else format(float(v) * scale, spec)

    return (
        f"{f['name']}: utilisation {fmt(f.get('utilization'), '.2f')}, "
        f"queuing delay p95 {fmt(f.get('qdelay_p95_ms'), '.0f')} ms, "
        f"loss {fmt(f.get('loss_ratio'), '.2f', 100.0)} %"
    )


def _cases(
    runs: Sequence[Run],
    series: Mapping[Path, str],
    labels: Sequence[str],
    scores: Mapping[Path, Mapping[str, float | None]],
) -> tuple[list[CaseBlock], list[FigureTask], dict[str, tuple[str, str]]]:
    """Per case: its table, and the tasks of its CDF and box-plot figures (with their captions)."""
    blocks: list[CaseBlock] = []
    tasks: list[FigureTask] = []
    captions: dict[str, tuple[str, str]] = {}
    by_case: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        by_case.setdefault(run.case, []).append(run)
    for (scenario, variant), members in sorted(by_case.items()):
        cid = _case_id(scenario, variant)
        present = [label for label in labels if any(series[r.path] == label for r in members)]
        kind = tb.responsiveness_of(scores.get(r.path, {}) for r in members)
        values = {
            label: [
                tb.run_values(r, scores.get(r.path, {}), kind) for r in members if series[r.path] == label
            ]
            for label in present
        }
        table = tb.case_table(f"tbl-case--{cid}", values, kind)
        heading = scenario + (f" [{variant}]" if variant else "")
        panels = []
        for m in tb.METRICS:
            per_label = {
                label: [float(x) for v in vals if (x := v[m.key]) is not None]
                for label, vals in values.items()
            }
            title = kind if m.key == "responsiveness_s" else m.title
            panels.append(
                BoxPanel(
                    title=title,
                    ylabel=m.unit,
                    values=per_label,
                    ci={k: mean_ci(v) for k, v in per_label.items()},
                )
            )
        box_id = f"box--{cid}"
        tasks.append(BoxTask(box_id, f"{heading}: per run, over repetitions", tuple(present), tuple(panels)))
        captions[box_id] = (
            "box",
            "Box plots over repetitions (seed 001 §5.2): one dot per run; box from the first to the "
            "third quartile, median line, whiskers to 1.5 IQR; diamond and bar: mean and its 95 % "
            "bootstrap confidence interval. Utilisation = receive rate / capacity of the video flows; "
            f"latency = their queuing-delay p95; responsiveness = the scorecard's {kind}; loss = "
            "dropped / sent.",
        )
        notes = []
        cdf_series = []
        pooled = 0
        for label in present:
            with_packets = [r for r in members if series[r.path] == label and r.has(CDF_TABLE)]
            pooled += len(with_packets)
            cdf_series.append(
                (
                    label,
                    tuple(
                        (r.path, r.summary["meta"], tuple(int(f["id"]) for f in video_flows(r.summary)))
                        for r in with_packets
                    ),
                )
            )
        if pooled < len(members):
            notes.append(
                f"The CDF pools {pooled} of {len(members)} runs: the others lack {CDF_TABLE} (see Problems)."
            )
        cdf_id = f"cdf--{cid}"
        tasks.append(CdfTask(cdf_id, f"{heading}: queuing delay of the video packets", tuple(cdf_series)))
        captions[cdf_id] = (
            "cdf",
            "Empirical CDF of the queuing delay (one-way delay - the flow's minimum) of every video "
            "packet received, pooled over the repetitions of each controller, as seed 002 plots "
            "the CDF of RTT - RTTmin.",
        )
        blocks.append(CaseBlock(cid, scenario, variant, table, [], notes))
    return blocks, tasks, captions


RUN_FIGURE_CAPTION = (
    "(a) bottleneck capacity, each call's target, each media flow's sending and receive rate "
    "(200 ms windows), and competing TCP/CBR throughput summed per kind; "
    "(b) queuing delay, window mean (and p95 for video); (c) loss by send time; (d) with video, "
    "frames completed at the receiver per second (1 s mean) and freezes. As seed 000 Fig. 6.2 "
    "and seed 001 Fig. 5.1."
)


def build_report(
    dirs: Sequence[Path],
    out: Path | None = None,
    *,
    figures: Path | None = None,
    run_figures: RunFigures = "first",
    jobs: int | None = None,
    labels: Sequence[str] | None = None,
    command: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ReportResult:
    """Writes the report of the runs under `dirs` to `out` (default: `<dir>/report.html` for one
    folder, `report.html` for several) and returns what it holds. With `figures`, every figure is
    also written there as `<id>.png` and `<id>.svg`.

    Folders and files that cannot be used are in `ReportResult.problems` (and in the page); the
    report is still written, unless no run at all can be read (`NoRuns`). `jobs` processes draw
    the figures (default: one per CPU). `labels`
    name the folders (default: their names). `command` is the command line shown as the
    report's own (default: this process's).
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
    runs.sort(key=lambda r: (r.scenario, r.variant, r.source.label, r.controller, r.seed, str(r.path)))
    series = {r.path: f"{r.source.label}/{r.controller}" if several else r.controller for r in runs}
    series_labels = sorted(set(series.values()))

    scores, by_run = _scores(runs, series, problems)
    cases, tasks, captions = _cases(runs, series, series_labels, by_run)

    run_ids = _run_ids(runs, several)
    first_seed: dict[tuple[str, str, str, str], int] = {}
    for r in runs:
        key = (r.source.label, r.scenario, r.variant, r.controller)
        first_seed[key] = min(first_seed.get(key, r.seed), r.seed)
    blocks: list[RunBlock] = []
    for r in runs:
        rid = run_ids[r.path]
        wanted = run_figures == "all" or (
            run_figures == "first"
            and r.seed == first_seed[(r.source.label, r.scenario, r.variant, r.controller)]
        )
        lacking = [name for name in RUN_FIGURE_TABLES if not r.has(name)]
        note = ""
        if not wanted:
            note = "figure drawn for the first seed only (--run-figures all draws every run)"
            if run_figures == "none":
                note = "no figure (--run-figures none)"
        elif lacking:
            note = f"figure not drawn: missing {', '.join(lacking)}"
        else:
            fig_id = f"run--{rid}"
            tasks.append(RunFigureTask(fig_id, r.path, r.summary["meta"], r.title()))
            captions[fig_id] = ("run", RUN_FIGURE_CAPTION)
        tables = [tb.flows_table(r, f"tbl-{rid}"), *tb.phase_tables(r, f"tbl-{rid}")]
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

    rendered = draw_all(tasks, jobs if jobs is not None else _cpus(), problems, progress)
    figure_blocks = {
        fig_id: FigureBlock(
            id=fig_id,
            kind=captions[fig_id][0],
            caption=captions[fig_id][1],
            png_uri=_png_uri(img.png),
            svg_uri=_svg_uri(img.svg or b""),
        )
        for fig_id, img in rendered.items()
    }
    for case in cases:
        case.figures = [
            figure_blocks[f] for f in (f"cdf--{case.id}", f"box--{case.id}") if f in figure_blocks
        ]
    for block in blocks:
        fig_id = f"run--{block.id}"
        if fig_id in figure_blocks:
            block.figure = figure_blocks[fig_id]
        elif not block.figure_note:
            block.figure_note = "figure could not be drawn (see Problems)"

    score_tables: list[tb.Table] = []
    if scores.height:
        score_tables = [
            tb.score_matrix("tbl-score-matrix", scores, sc.matrix(scores), series_labels),
            tb.score_per_controller("tbl-score-controllers", sc.per_controller(scores)),
            tb.score_details("tbl-score-details", scores),
        ]
    comparison = _comparison(dirs, names, problems)
    comparison_table = (
        tb.dataframe_table("tbl-comparison", "comparison", "rtcbench.compare", comparison)
        if comparison is not None
        else None
    )

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
        comparison=comparison_table,
        cases=cases,
        blocks=blocks,
        figures_drawn=len(figure_blocks),
    )
    _write_atomic(out, html)
    files = tuple(write_figures(rendered, figures)) if figures is not None else ()

    table_ids = [t.id for t in score_tables] + [c.table.id for c in cases]
    table_ids += [t.id for b in blocks for t in b.tables] + [t.id for t in provenance]
    if comparison_table is not None:
        table_ids.append(comparison_table.id)
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
            c = r.summary.get("command") or "(not recorded: run from Python)"
            commands[c] = commands.get(c, 0) + 1
            v = str(r.summary.get("rtcbench_version") or "(not recorded)")
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


def _write_atomic(path: Path, text: str) -> None:
    """Writes under a temporary name in the same folder, then renames: a reader sees the old
    report or the new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
