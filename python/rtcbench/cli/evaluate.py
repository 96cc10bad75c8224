"""`rtcbench evaluate --data`: a learned policy scored offline on the challenge's per-call records
(docs/learned.md, "Scoring a policy on records")."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from rtcbench.cli.errors import _fail, guarded
from rtcbench.cli.render import console, err_console


@guarded("nothing was written")
def evaluate_cmd(
    data: Annotated[
        Path,
        typer.Option(help="A folder of per-call records (*.json: the challenge's, or `rtcbench export`'s)."),
    ],
    cc: Annotated[str, typer.Option(help="The policy to score: onnx:path/to/model.onnx.")],
    out: Annotated[
        Path | None, typer.Option(help="Also write one row per record to this Parquet file.")
    ] = None,
) -> None:
    """Score a learned policy offline on the per-call records under --data: it runs on each
    record's observations from a zero state, and its estimates are held against the record's true
    capacity with the community's metrics (error rate, over-estimation rate, MSE in (Mbit/s)²,
    each a mean per call, then over calls), beside the record's own estimates."""
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
