"""`rtcbench evaluate`: a controller, learned or not, scored over suites against a baseline
(docs/learned.md, "Evaluating a controller"), or a learned policy scored offline on the challenge's
per-call records (`--data`, "Scoring a policy on records")."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from rtcbench.cli.errors import _fail, guarded
from rtcbench.cli.options import CC_HELP, JOBS_HELP, BatchMode, _controller_list, check_jobs
from rtcbench.cli.render import _runs_bar, console, err_console
from rtcbench.cli.suite import RAY_HELP

if TYPE_CHECKING:
    import polars as pl


@guarded("finished runs are kept in {out}; the same command resumes them")
def evaluate_cmd(
    names: Annotated[
        list[str] | None,
        typer.Argument(help="Suite names, built-in scenario ids or TOML files.", show_default=False),
    ] = None,
    cc: Annotated[str, typer.Option("--cc", help=CC_HELP + " With --data: the policy, onnx:MODEL.")] = "gcc",
    baseline: Annotated[str, typer.Option(help="The controller every other is compared with.")] = "gcc",
    reps: Annotated[int, typer.Option(help="Seeds per scenario variant, from --seed on.")] = 3,
    seed: Annotated[int, typer.Option(help="Seed of the first repetition.")] = 1,
    jobs: Annotated[
        int | None, typer.Option(help=f"Worker processes ({JOBS_HELP}; 1 runs in this process).")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Results folder (default results/evaluate); with --data, a Parquet file of the scores."
        ),
    ] = None,
    sets: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override a field of every scenario: path=value, e.g. duration=30s."),
    ] = None,
    mode: BatchMode = "simulate",
    ray: Annotated[str | None, typer.Option("--ray", help=RAY_HELP)] = None,
    data: Annotated[
        Path | None,
        typer.Option(
            help="Score a learned policy offline on the per-call records (*.json) under this folder."
        ),
    ] = None,
) -> None:
    """Score controllers over suites (RFC 8867, RFC 8869, the seeds', l4s...) against a baseline:
    each run's video quality (rtcbench's score, docs/learned.md), utilisation, goodput, queuing
    delay, loss, freezes and frame delay, paired with the baseline's run of the same scenario
    variant and seed, with 95 % bootstrap intervals of the differences; writes
    <out>/evaluate.parquet and <out>/evaluate-runs.parquet beside the suite's tables. With --data,
    score a learned policy offline on per-call records instead."""
    if data is not None:
        if names:
            _fail("--data scores a policy on records; it takes no suites")
        _evaluate_records(data, cc, out)
        return
    from rtcbench import evaluate

    if not names:
        _fail("name the suites or scenarios to evaluate on (e.g. rfc8867), or score records with --data")
    controllers = [c for c in _controller_list(cc) if c != baseline]
    if not controllers:
        _fail(f"--cc names no controller but the baseline {baseline}")
    check_jobs(jobs)
    folder = out or Path("results/evaluate")
    with _runs_bar() as progress:
        result = evaluate.evaluate(
            list(names or []), controllers, baseline=baseline, reps=reps, jobs=jobs, out=folder,
            sets=sets or [], seed=seed, ray_address=ray, progress=progress, mode=mode,
        )  # fmt: skip
    _print_comparison(result.comparison, baseline)
    console.print(escape(f"→ {folder / 'evaluate.parquet'}"), highlight=False)


def _print_comparison(table: pl.DataFrame, baseline: str) -> None:
    import polars as pl

    for controller in table["controller"].unique(maintain_order=True).to_list():
        if controller == baseline:
            continue
        rows = table.filter(pl.col("controller") == controller)
        counts = rows["pairs"].to_list()
        pairs = max(counts) if counts else 0
        console.print(escape(f"{controller} against {baseline}, {pairs} paired runs"), highlight=False)
        console.print(
            f"{'':<20} {'it':>11} {'baseline':>11} {'difference [95 % CI]':>34}  verdict", highlight=False
        )
        for r in rows.iter_rows(named=True):
            ci = f"{r['difference']:.4g} [{r['ci_low']:.4g}, {r['ci_high']:.4g}]"
            line = (
                f"{r['metric']:<20} {r['mean']:>11.4g} {r['baseline_mean']:>11.4g} {ci:>34}  {r['verdict']}"
            )
            console.print(escape(line), highlight=False)


def _evaluate_records(data: Path, cc: str, out: Path | None) -> None:
    """A learned policy scored offline on per-call records (`learned.evaluate_records`)."""
    import math

    import polars as pl

    from rtcbench import learned
    from rtcbench.results import write_parquet_atomic

    if not cc.startswith(learned.ONNX):
        _fail(f"--cc {cc}: evaluate --data scores a learned policy, given as onnx:path/to/model.onnx")
    if not data.is_dir():
        _fail(f"--data {data}: not a folder")
    controller = learned.load_onnx(cc)
    table, skipped = learned.evaluate_records(controller, data)
    for line in skipped:
        err_console.print(f"[yellow]skipped:[/] {escape(line)}", highlight=False)
    if table.height == 0:
        _fail(f"--data {data}: no per-call record could be read")
    if out is not None:
        write_parquet_atomic(table, out)

    def mean(column: str) -> str:
        value = table[column].cast(pl.Float64).mean()
        return "-" if not isinstance(value, float) or math.isnan(value) else f"{value:.3f}"

    with_capacity = int(table["error_rate"].is_not_nan().sum())
    header = f"{controller.name} on {table.height} record(s) under {data}"
    console.print(escape(f"{header} ({with_capacity} with a true capacity)"), highlight=False)
    console.print(f"{'':<22} {'error rate':>11} {'over-est.':>10} {'MSE Mb²':>9}", highlight=False)
    for label, prefix in ((controller.name, ""), ("the records' estimates", "behaviour_")):
        cells = [mean(f"{prefix}{name}") for name in learned.SCORES]
        console.print(
            escape(f"{label[:22]:<22} {cells[0]:>11} {cells[1]:>10} {cells[2]:>9}"), highlight=False
        )
    console.print(
        escape(f"agreement with the records' estimates (error rate): {mean('agreement_error_rate')}"),
        highlight=False,
    )
    if out is not None:
        console.print(escape(f"→ {out}"), highlight=False)
