"""`rtcbench compare`: result sets compared per case and metric (docs/compare.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from rtcbench.cli.errors import _fail, guarded
from rtcbench.cli.options import LABELS_HELP, _listed_option
from rtcbench.cli.render import console, err_console, print_comparison
from rtcbench.compare import MIN_REPS, CompareError, comparison
from rtcbench.results import write_parquet_atomic

COMPARISON_FILE = "comparison.parquet"
"""What `--out DIR` holds: the comparison's table (docs/compare.md, "The table")."""


@guarded("no comparison was written")
def compare_cmd(
    dirs: Annotated[
        list[Path],
        typer.Argument(
            help="Suite folders (rtcbench suite --out). One folder: compare its controllers; "
            "several: compare each with the first, per scenario, variant and controller.",
            show_default=False,
        ),
    ],
    labels: Annotated[
        list[str] | None,
        typer.Option(
            "--labels",
            help=f"{LABELS_HELP}: with one folder, the controllers to compare (the first is the "
            "baseline); with several, a name for each folder (default: the folder names).",
        ),
    ] = None,
    baseline: Annotated[
        str | None, typer.Option(help="The side the others are compared with (default: the first).")
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric", help="Metrics, comma-separated or repeated (default: all; see docs/compare.md)."
        ),
    ] = None,
    tolerance: Annotated[
        float, typer.Option(help="Relative change below which nothing is flagged (0.05 = 5 %).")
    ] = 0.05,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples per comparison.")] = 2000,
    seed: Annotated[
        int,
        typer.Option("--bootstrap-seed", help="Seed of the bootstrap: the same seed, the same output."),
    ] = 0,
    out: Annotated[
        Path | None,
        typer.Option(help=f"Also write the comparison into this folder, as {COMPARISON_FILE}."),
    ] = None,
    fail_on_regression: Annotated[
        bool, typer.Option("--fail-on-regression", help="Exit with status 1 if any regression is found.")
    ] = False,
    min_reps: Annotated[
        int, typer.Option(help="Repetitions each side of a case needs for a verdict (at least 2).")
    ] = MIN_REPS,
    any_config: Annotated[
        bool,
        typer.Option(
            "--any-config",
            help="Pair cases by name even where their configurations differ (another --set, "
            "scenario or trace file); such rows are marked.",
        ),
    ] = False,
) -> None:
    """Compare result sets: means per case and metric, the difference B − A with a bootstrap 95 %
    interval over the repetitions, and a verdict (regression, improvement, no change, too few
    repetitions, not measured) where the difference is both certain and larger than the metric's
    floor. See docs/compare.md."""
    if out is not None and (out.suffix == ".parquet" or (out.exists() and not out.is_dir())):
        _fail(f"--out {out}: give a folder: the table is written there as {COMPARISON_FILE}")
    try:
        result = comparison(
            dirs,
            _listed_option(labels),
            baseline=baseline,
            metrics=_listed_option(metric),
            tolerance=tolerance,
            resamples=resamples,
            seed=seed,
            min_reps=min_reps,
            any_config=any_config,
        )
    except CompareError as e:
        _fail(str(e))
    for p in result.problems:
        err_console.print(f"[yellow]skipped:[/] {escape(p)}", highlight=False, soft_wrap=True)
    for n in result.notes:
        err_console.print(f"[yellow]note:[/] {escape(n)}", highlight=False, soft_wrap=True)
    print_comparison(result)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        write_parquet_atomic(result.table, out / COMPARISON_FILE)
        console.print(escape(f"table: {out / COMPARISON_FILE}"), highlight=False)
    regressions = int((result.table.get_column("verdict") == "regression").sum())
    if fail_on_regression and regressions:
        raise typer.Exit(1)
