"""`rtcbench score`: runs judged against the RFC 8836 requirements (docs/scorecard.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from rtcbench.cli.errors import _fail, guarded
from rtcbench.cli.render import console, err_console, print_scorecard
from rtcbench.results import run_folders, write_parquet_atomic


@guarded("no scorecard was written")
def score_cmd(
    folder: Annotated[Path, typer.Argument(help="A run folder, or a folder of runs (a suite).")],
    thresholds: Annotated[
        Path | None, typer.Option(help="TOML file overriding criteria thresholds (docs/scorecard.md).")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="The folder to write scorecard.parquet into (default: FOLDER)."),
    ] = None,
) -> None:
    """Judge every run under FOLDER against the RFC 8836 requirements (docs/scorecard.md): the
    test case × controller matrix and each controller's share of passes. The long table (one row
    per run and criterion) is written to OUT/scorecard.parquet (OUT: FOLDER unless --out)."""
    from rtcbench import scorecard as sc

    if not folder.is_dir():
        _fail(f"{folder}: not a folder")
    if out is not None and (out.suffix == ".parquet" or (out.exists() and not out.is_dir())):
        _fail(f"--out {out}: give a folder: the table is written there as scorecard.parquet")
    try:
        criteria = sc.load_thresholds(thresholds) if thresholds is not None else sc.CRITERIA
    except sc.ScorecardError as e:
        _fail(str(e))
    folders = run_folders(folder)
    if not folders:
        _fail(f"{folder}: no run folders (none holds a summary.json)")
    problems: list[str] = []
    table = sc.score_table(folders, criteria, problems, root=folder)
    if table.height == 0:
        # One line, naming the first problem, as `rtcbench compare` says it.
        skipped = f" ({len(problems)} run folder(s) skipped, the first: {problems[0]})" if problems else ""
        _fail(f"{folder}: no run could be scored{skipped}")
    for p in problems:
        err_console.print(f"[yellow]skipped:[/] {escape(p)}", highlight=False, soft_wrap=True)
    target = out if out is not None else folder
    target.mkdir(parents=True, exist_ok=True)
    write_parquet_atomic(table, target / "scorecard.parquet")
    print_scorecard(table, folders)
    console.print(escape(f"table: {target / 'scorecard.parquet'}"), highlight=False)
