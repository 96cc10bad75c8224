"""`rtcbench suite` and `rtcbench sweep`: many runs in parallel, resumed where they stopped."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from rtcbench.cli.errors import _fail, guarded
from rtcbench.cli.options import CC_HELP, JOBS_HELP, BatchMode, _controller_list, check_jobs
from rtcbench.cli.render import _runs_bar, console, print_suite
from rtcbench.suite import SUITES, run_suite

RAY_HELP = (
    "Run on the Ray cluster at this address ('auto': the one this machine joined); every node needs "
    "rtcbench and the results folder at the same path."
)


@guarded("finished runs are kept in {out}; the same command resumes them")
def suite_cmd(
    names: Annotated[
        list[str],
        typer.Argument(
            help=f"Suite names ({', '.join(SUITES)}), built-in scenario ids or TOML files.",
            show_default=False,
        ),
    ],
    cc: Annotated[str, typer.Option("--cc", help=CC_HELP)] = "gcc",
    reps: Annotated[int, typer.Option(help="Repetitions; repetition r runs with seed SEED + r.")] = 1,
    jobs: Annotated[
        int | None, typer.Option(help=f"Worker processes ({JOBS_HELP}; 1 runs in this process).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the first repetition (0 to 2**64 - 1).")] = 1,
    out: Annotated[Path, typer.Option(help="Results folder (runs and suite tables).")] = Path("results"),
    sets: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override a field of every scenario: path=value, e.g. duration=30s."),
    ] = None,
    mode: BatchMode = "simulate",
    ray: Annotated[str | None, typer.Option("--ray", help=RAY_HELP)] = None,
) -> None:
    """Run every variant of the selected scenarios with every controller, in parallel, and write
    the suite tables <out>/suite.parquet (per flow) and <out>/suite-runs.parquet (per run).
    Runs already complete in <out> are read back, not run again."""
    command = "rtcbench " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    names_cc = _controller_list(cc)
    check_jobs(jobs)
    with _runs_bar() as progress:
        result = run_suite(
            names, names_cc, reps, jobs, out, sets or [], seed,
            progress=progress, command=command, mode=mode, ray_address=ray,
        )  # fmt: skip
    print_suite(result)


@guarded("finished runs are kept; the same command resumes the sweep")
def sweep_cmd(
    spec: Annotated[Path, typer.Argument(help="Sweep file (TOML; docs/sweeps.md).", show_default=False)],
    out: Annotated[Path | None, typer.Option(help="Results folder (default: results/<file name>).")] = None,
    jobs: Annotated[
        int | None,
        typer.Option(help=f"Local worker processes ({JOBS_HELP}; 1 runs in this process)."),
    ] = None,
    ray: Annotated[str | None, typer.Option("--ray", help=RAY_HELP)] = None,
    mode: BatchMode = "simulate",
) -> None:
    """Run every point of a parameter sweep with every controller and seed, in parallel, and index
    the runs in <out>/sweep.parquet (one row per run, a column per swept field) and
    <out>/sweep-flows.parquet. Runs already complete in <out> are read back, not run again."""
    from rtcbench import sweep as sw

    command = "rtcbench " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    check_jobs(jobs)
    try:
        parsed = sw.load(spec)
    except sw.SweepError as e:
        _fail(str(e))
    folder = out if out is not None else Path("results") / spec.stem
    console.print(escape(f"sweep {spec}: {sw.describe(parsed)} → {folder}"), highlight=False, soft_wrap=True)
    with _runs_bar() as progress:
        result = sw.run_sweep(
            parsed, folder, jobs, ray_address=ray, progress=progress, command=command, mode=mode
        )
    console.print(
        escape(
            f"{result.ran + result.skipped} runs ({result.ran} {mode}d, {result.skipped} already "
            f"complete) in {result.wall_s:.1f} s\nindex: {result.out / sw.RUNS_TABLE}, "
            f"{result.out / sw.FLOWS_TABLE}"
        ),
        highlight=False,
        soft_wrap=True,
    )
