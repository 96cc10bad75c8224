"""`rtcbench reproduce`: the seeds re-run with Chromium 156 and the simulator (docs/reproduction.md)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from rtcbench.cli.errors import guarded
from rtcbench.cli.options import RAY_CALLS_HELP
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
    ray: Annotated[
        str | None,
        typer.Option("--ray", help=RAY_CALLS_HELP),
    ] = None,
    browser_seed: Annotated[
        int,
        typer.Option(
            help="Seed of the browser runs (their camera clip): runs of other seeds than 1 are "
            "repetitions of Chromium, kept apart in OUT, whose periods --export-runs adds to "
            "Chromium's spread.",
        ),
    ] = 1,
    export_runs: Annotated[
        Path | None,
        typer.Option(
            "--export-runs",
            help="Also add the fair browser runs' period values, by seed, to the committed table of "
            "Chromium's runs (python/rtcbench/reproduce/reference/chromium-period-runs.csv), whose "
            "range over five runs the simulator's mean is held to.",
        ),
    ] = None,
    list_tables: Annotated[bool, typer.Option("--list", help="List the seed tables and exit.")] = False,
    stack: Annotated[
        str,
        typer.Option(
            help="chromium: the seed tables on Chromium and the simulator; firefox: the wired seed "
            "tables between Firefox ESR peers (as root, in real time), with the browser's own "
            "degradation preference and with maintain-resolution, beside Chromium's reference and "
            "the simulator; gstreamer: Sjölund and Kevo 2022's three tests on its own kind of stack "
            "(--mode gstreamer, as root, in real time) with gcc, nada and scream, beside the "
            "simulator (docs/reproduction.md).",
        ),
    ] = "chromium",
    runs: Annotated[int, typer.Option(help="--stack gstreamer: runs of each test and controller.")] = 5,
    cc: Annotated[
        list[str] | None,
        typer.Option(
            "--cc",
            help="--stack gstreamer: a controller instead of all four: gcc, nada, scream, and GStreamer's "
            "own draft-02 GCC, rtpgccbwe (repeatable).",
        ),
    ] = None,
    degradation: Annotated[
        list[str] | None,
        typer.Option(
            help="--stack firefox: one degradation preference instead of both: default (the "
            "scenario's, Firefox's balanced) or maintain-resolution (repeatable).",
        ),
    ] = None,
) -> None:
    """Re-run the seeds' experiments: each seed table of the reproduction set measured on
    Chromium 156 (--mode browser) and on the simulator with gcc (seeds 1-3), beside the seed's
    own numbers, with every finding judged on all three (docs/reproduction.md). Writes
    <out>/reproduction.parquet, findings.parquet, periods.parquet and reproduction.md. With
    --stack firefox: firefox.parquet, firefox-findings.parquet, firefox-periods.parquet,
    firefox-runs.parquet and firefox.md. With --stack gstreamer: gstreamer.parquet,
    gstreamer-runs.parquet, gstreamer-findings.parquet, gstreamer-curves.parquet, the box plots and
    average curves, and gstreamer.md."""
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

    if ray is not None and stack != "chromium":
        raise InputError(f"--ray: --stack chromium's option (--stack {stack} runs on this machine)")
    if stack != "chromium" and (browser_seed != 1 or export_runs is not None):
        raise InputError(f"--browser-seed, --export-runs: --stack chromium's options, not --stack {stack}'s")
    if export_runs is not None and browser not in ("run", "kept"):
        raise InputError(f"--export-runs adds browser runs: give --browser run or kept, not {browser}")
    if export is not None and browser_seed != 1:
        raise InputError("--export-reference is made of the seed-1 runs; --export-runs adds other seeds")
    if degradation and stack != "firefox":
        raise InputError("--degradation: --stack firefox's option")
    if stack == "firefox":
        if given := [name for name, used in (("--cc", bool(cc)), ("--runs", runs != 5)) if used]:
            raise InputError(f"{', '.join(given)}: --stack gstreamer's options, not --stack firefox's")
        if export is not None:
            raise InputError("--export-reference: Chromium's reference, not --stack firefox's")
        if browser not in ("run", "kept"):
            raise InputError(f"--browser with --stack firefox must be run or kept, got {browser!r}")
        _firefox(out, chosen, degradation or None, browser == "kept", attempts, jobs, browser_jobs, command)
        return
    if stack == "gstreamer":
        chromium_only = {
            "--table": bool(tables), "--browser": browser != "run", "--browser-jobs": browser_jobs != 2,
            "--export-reference": export is not None,
        }  # fmt: skip
        if given := [name for name, used in chromium_only.items() if used]:
            raise InputError(f"{', '.join(given)}: not options of --stack gstreamer (one seed's three tests)")
        _gstreamer(out, runs, cc or None, attempts, jobs, command)
        return
    if stack != "chromium":
        raise InputError(f"--stack must be one of chromium, firefox, gstreamer, got {stack!r}")
    if cc or runs != 5:
        raise InputError("--cc, --runs: --stack gstreamer's options (Chromium runs gcc once)")
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
            ray_address=ray,
            browser_seed=browser_seed,
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
    if export_runs is not None:
        from rtcbench.reproduce import reference

        path = reference.export_runs(result.periods, browser_seed, result.problems, export_runs)
        console.print(escape(f"→ {path}"), highlight=False)


def _gstreamer(
    out: Path, runs: int, cc: list[str] | None, attempts: int, jobs: int | None, command: str
) -> None:
    """`rtcbench reproduce --stack gstreamer`: Sjölund and Kevo 2022 on GStreamer
    (`rtcbench.reproduce.gstreamer`)."""
    from rtcbench.reproduce import gstreamer
    from rtcbench.results import InputError, write_bytes_atomic

    if runs < 1:
        raise InputError(f"--runs must be at least 1, got {runs}")

    def told(case: Any, stack: str, controller: str, seed: int, summary: dict[str, Any], ran: bool) -> None:
        how = "ran" if ran else "kept"
        problem = gstreamer.run_problem(summary) if stack == "gstreamer" else None
        line = f"{how}: {case.label()} · {stack} · {controller} · seed {seed}"
        err_console.print(escape(line + (f" ({problem})" if problem else "")), highlight=False)

    with _runs_bar() as progress:
        result = gstreamer.reproduce_gstreamer(
            out,
            controllers=tuple(cc) if cc else gstreamer.ALL_CONTROLLERS,
            seeds=tuple(range(1, runs + 1)),
            attempts=attempts,
            jobs=jobs,
            command=command,
            on_run=told,
            progress=progress,
        )
    written = gstreamer.figures(result.runs, result.curves, out)
    write_bytes_atomic(out / "gstreamer.md", gstreamer.markdown(result).encode())
    for f in result.findings.iter_rows(named=True):
        verdict = " · ".join(
            f"{stack} {'–' if f[stack] is None else 'holds' if f[stack] else 'does not hold'}"
            for stack in ("gstreamer", "simulated")
        )
        console.print(escape(f"{f['finding']} ({f['section']}): {verdict}"), highlight=False, soft_wrap=True)
    for what, why in sorted(result.problems.items()):
        err_console.print(escape(f"warning: {what}: {why}"), highlight=False, soft_wrap=True)
    names = [gstreamer.ROWS, gstreamer.RUNS, gstreamer.FINDINGS, gstreamer.CURVES]
    for path in [*(out / n for n in names), *written, out / "gstreamer.md"]:
        console.print(escape(f"→ {path}"), highlight=False)


def _firefox(
    out: Path,
    tables: list[Any],
    degradations: list[str] | None,
    kept_only: bool,
    attempts: int,
    jobs: int | None,
    browser_jobs: int,
    command: str,
) -> None:
    """`rtcbench reproduce --stack firefox`: the wired seed tables between Firefox peers
    (`rtcbench.reproduce.firefox`)."""
    from rtcbench.reproduce import firefox
    from rtcbench.results import write_bytes_atomic

    def told(case: Any, stack: str, degradation: str, summary: dict[str, Any], ran: bool) -> None:
        how = "ran" if ran else "kept"
        what = f"{how}: {case.label()} · {stack}" + (f" · {degradation}" if degradation else "")
        err_console.print(escape(what), highlight=False)

    with _runs_bar() as progress:
        result = firefox.reproduce_firefox(
            out,
            tables,
            degradations=degradations or firefox.DEGRADATIONS,
            kept_only=kept_only,
            attempts=attempts,
            jobs=jobs,
            browser_jobs=browser_jobs,
            command=command,
            on_run=told,
            progress=progress,
        )
    write_bytes_atomic(out / "firefox.md", firefox.markdown(result).encode())
    for what, why in sorted(result.problems.items()):
        err_console.print(escape(f"warning: {what}: {why}"), highlight=False, soft_wrap=True)
    for name in (firefox.ROWS, firefox.FINDINGS, firefox.PERIODS, firefox.RUNS, "firefox.md"):
        console.print(escape(f"→ {out / name}"), highlight=False)
