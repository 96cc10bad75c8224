"""`rtcbench reproduce`: the seeds re-run with Chromium 156 and the simulator (docs/reproduction.md)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from rtcbench.cli.errors import guarded
from rtcbench.cli.render import _runs_bar, console, err_console


@guarded("no half-written run is left; finished runs are kept in {out} and reused next time")
def reproduce_cmd(
    out: Annotated[Path, typer.Option(help="Results folder (complete runs in it are reused).")] = Path(
        "results/reproduction"
    ),
    tables: Annotated[
        list[str] | None,
        typer.Option("--table", help="A seed table's id instead of the whole set (repeatable; see --list)."),
    ] = None,
    browser: Annotated[
        str,
        typer.Option(
            help="run: the calls between Chromium peers too (as root, in real time), those not "
            "complete in OUT; kept: only the browser runs complete in OUT; reference: Chromium's "
            "numbers from the committed reference tables, no browser; none: the simulator alone.",
        ),
    ] = "run",
    attempts: Annotated[
        int, typer.Option(help="Runs of a browser case that was CPU-limited or missed its timing.")
    ] = 2,
    jobs: Annotated[
        int | None, typer.Option(help="Simulated runs at a time (default, and at most: one per CPU).")
    ] = None,
    browser_jobs: Annotated[
        int,
        typer.Option(
            help="Browser runs at a time among the one-call wired cases (the others run alone); "
            "a run that missed its timing beside another is run again alone.",
        ),
    ] = 2,
    export: Annotated[
        Path | None,
        typer.Option(
            "--export-reference",
            help="Also write Chromium's fair comparisons as the reference tables the default test "
            "tier holds the simulator to (python/rtcbench/reproduce/reference/).",
        ),
    ] = None,
    list_tables: Annotated[bool, typer.Option("--list", help="List the seed tables and exit.")] = False,
) -> None:
    """Re-run the seeds' experiments: each seed table of the reproduction set measured on
    Chromium 156 (--mode browser) and on the simulator with gcc (seeds 1-3), beside the seed's
    own numbers, with every finding judged on all three (docs/reproduction.md). Writes
    <out>/reproduction.parquet, findings.parquet, periods.parquet and reproduction.md."""
    from rtcbench import reproduce
    from rtcbench.reproduce import experiments, report
    from rtcbench.results import InputError, write_bytes_atomic

    if list_tables:
        for t in experiments.TABLES:
            console.print(escape(f"{t.id}: {t.source}: {t.title}"), highlight=False, soft_wrap=True)
        return
    try:
        chosen = [experiments.table(t) for t in tables] if tables else list(experiments.TABLES)
    except KeyError as e:
        raise InputError(f"--table: {e.args[0]}") from None
    command = "rtcbench " + " ".join(shlex.quote(a) for a in sys.argv[1:])

    def told(case: experiments.Case, mode: str, seed: int, summary: dict[str, Any], ran: bool) -> None:
        how = "ran" if ran else "kept"
        err_console.print(escape(f"{how}: {case.label()} · {mode} · seed {seed}"), highlight=False)

    if browser not in reproduce.BROWSER_RUNS:
        raise InputError(f"--browser must be one of {', '.join(reproduce.BROWSER_RUNS)}, got {browser!r}")
    with _runs_bar() as progress:
        result = reproduce.reproduce(
            out,
            chosen,
            browser=browser,
            attempts=attempts,
            jobs=jobs,
            browser_jobs=browser_jobs,
            command=command,
            on_run=told,
            progress=progress,
        )
    text = report.markdown(result.rows, result.findings, result.periods, wall_s=result.wall_s)
    write_bytes_atomic(out / "reproduction.md", text.encode())
    for finding in result.findings.iter_rows(named=True):
        console.print(escape(report.verdict_line(finding)), highlight=False, soft_wrap=True)
    for case, problem in result.problems.items():
        err_console.print(escape(f"warning: {case}: {problem}"), highlight=False, soft_wrap=True)
    for name in (reproduce.ROWS, reproduce.FINDINGS, reproduce.PERIODS, "reproduction.md"):
        console.print(escape(f"→ {out / name}"), highlight=False)
    if export is not None:
        from rtcbench.reproduce import reference

        for path in reference.export(result.rows, result.periods, result.problems, export):
            console.print(escape(f"→ {path}"), highlight=False)
