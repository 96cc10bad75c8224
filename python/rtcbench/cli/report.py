"""`rtcbench report`: one self-contained HTML report of runs and suites (docs/report.md)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated, cast

import typer
from rich.markup import escape

from rtcbench.cli.errors import _fail, guarded
from rtcbench.cli.options import JOBS_HELP, LABELS_HELP, _listed_option, check_jobs
from rtcbench.cli.render import _progress_bar, console, err_console
from rtcbench.compare import MIN_REPS

PAGE = "report.html"
"""The page's name in the folder `--out` names."""


@guarded("no report was written")
def report_cmd(
    dirs: Annotated[
        list[Path],
        typer.Argument(
            help="Run folders, suite folders (a suite's --out) or several suites.", show_default=False
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            help=f"The folder the page is written into, as {PAGE} (default: DIR for one folder, the "
            "current folder for several)."
        ),
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option(help=f"The page itself, under another name than OUT/{PAGE}."),
    ] = None,
    figures: Annotated[
        Path | None,
        typer.Option(
            help="Also write every figure into this folder as <id>.png and <id>.svg (the page "
            "embeds PNG only; SVG is drawn only with this option)."
        ),
    ] = None,
    run_figures: Annotated[
        str,
        typer.Option(
            help="Time figures: per case, each controller's first seed side by side (first); that "
            "and every run's own (all); or none."
        ),
    ] = "first",
    jobs: Annotated[
        int | None, typer.Option(help=f"Processes drawing figures ({JOBS_HELP}; 1: this process).")
    ] = None,
    labels: Annotated[
        list[str] | None,
        typer.Option(
            "--labels", help=f"{LABELS_HELP}: a name per folder, in order (default: the folders' names)."
        ),
    ] = None,
    min_reps: Annotated[
        int,
        typer.Option(help="Repetitions each side of a case needs for a verdict in the comparison (≥ 2)."),
    ] = MIN_REPS,
    baseline: Annotated[
        str | None,
        typer.Option(
            help="The side the comparison measures the others against: a controller (one folder) or "
            "a folder's label (several; default: the first)."
        ),
    ] = None,
) -> None:
    """Write one self-contained HTML report (offline: nothing fetched) of the runs under DIRS:
    scorecard, with several controllers or folders a comparison (who is better per case and
    metric, as `rtcbench compare`), per-case figures of goodput against delay, CDFs and box plots
    over repetitions, per-run figures and phase tables,
    and the commands and versions behind them (docs/report.md). Folders or files that cannot be
    used are named on stderr and in the report's Problems section; the rest is still reported."""
    from rtcbench.report import RunFigures, build_report

    command = "rtcbench " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    if run_figures not in ("first", "all", "none"):
        _fail(f"--run-figures must be first, all or none, got {run_figures!r}")
    check_jobs(jobs)
    if min_reps < 2:
        _fail(f"--min-reps must be at least 2 (an interval needs two runs), got {min_reps}")
    label = _listed_option(labels)
    if label is not None and len(label) != len(dirs):
        _fail(f"{len(label)} --labels for {len(dirs)} folders: give one per folder, in order")
    for d in dirs:
        if not d.is_dir():
            _fail(f"{d}: not a folder")
    if out is not None and html is not None:
        _fail("--out and --html: give one (--out DIR writes DIR/report.html; --html names the page)")
    if out is not None and (out.suffix in (".html", ".htm") or (out.exists() and not out.is_dir())):
        _fail(f"--out {out}: give a folder (the page is written there as {PAGE}), or --html FILE")
    page = html if html is not None else (out / PAGE if out is not None else None)
    with _progress_bar("figures") as progress:
        result = build_report(
            dirs,
            page,
            figures=figures,
            run_figures=cast(RunFigures, run_figures),  # checked above
            jobs=jobs,
            labels=label,
            min_reps=min_reps,
            baseline=baseline,
            command=command,
            progress=progress,
        )
    for p in result.problems:
        err_console.print(f"[yellow]problem:[/] {escape(str(p))}", highlight=False, soft_wrap=True)
    extra = f"; {len(result.figure_files)} figure files in {figures}" if figures is not None else ""
    problems = f", {len(result.problems)} problems (see above)" if result.problems else ""
    console.print(
        escape(f"report: {result.path} ({result.runs} runs, {len(result.figures)} figures{problems}){extra}"),
        highlight=False,
    )
