"""The report's evaluation section (docs/report.md, "Evaluation"): for each folder `rtcbench
evaluate` wrote, its comparison of every controller with the baseline over the whole evaluation
(`evaluate.parquet`: rtcbench's quality score and the headline metrics, paired by scenario variant
and seed, with 95 % bootstrap intervals), as the terminal printed it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from rtcbench.report import tables as tb
from rtcbench.report.runs import Problem, Source, slug

__all__ = ["EVALUATE_TABLE", "evaluation_tables"]

EVALUATE_TABLE = "evaluate.parquet"
"""The comparison `rtcbench evaluate` writes into its folder."""

_COLUMNS = (
    "controller",
    "metric",
    "pairs",
    "mean",
    "baseline_mean",
    "difference",
    "ci_low",
    "ci_high",
    "verdict",
)
_VERDICT_CLASS = {"better": "v-pass", "worse": "v-fail"}


def _row(r: dict[str, object]) -> tuple[tb.Cell, ...]:
    def num(key: str) -> tb.Cell:
        return tb.value_cell(r[key])

    interval = "-" if r["verdict"] == "-" else f"[{r['ci_low']:.4g}, {r['ci_high']:.4g}]"
    verdict = str(r["verdict"])
    return (
        tb.Cell(str(r["controller"])),
        tb.Cell(str(r["metric"])),
        num("mean"),
        num("baseline_mean"),
        num("difference"),
        tb.Cell(interval, cls="num"),
        num("pairs"),
        tb.Cell(verdict, cls=_VERDICT_CLASS.get(verdict)),
    )


def evaluation_tables(sources: Sequence[Source], problems: list[Problem]) -> list[tb.Table]:
    """A table per source folder that holds `EVALUATE_TABLE`; an unreadable one is a problem."""
    tables = []
    for source in sources:
        path: Path = source.path / EVALUATE_TABLE
        if not path.is_file():
            continue
        try:
            df = pl.read_parquet(path)
            missing = [c for c in _COLUMNS if c not in df.columns]
            if missing:
                raise ValueError(f"no column {', '.join(missing)}")
        except (OSError, ValueError, pl.exceptions.PolarsError) as e:
            problems.append(Problem(str(path), f"not an evaluation table ({e}); left out of Evaluation"))
            continue
        baseline = df.filter(pl.col("verdict") == "-")["controller"].unique().to_list()
        stack = f" on the {df['mode'][0]} stack" if "mode" in df.columns and df.height else ""
        who = f" against {baseline[0]}" if len(baseline) == 1 else ""
        tables.append(
            tb.Table(
                id=f"tbl-eval--{slug(source.label)}",
                kind="evaluation",
                caption=f"{source.label}: every controller{who}{stack}, over every run of the evaluation",
                header=(
                    "controller",
                    "metric",
                    "mean",
                    "baseline",
                    "difference",
                    "95 % CI",
                    "pairs",
                    "verdict",
                ),
                rows=tuple(_row(r) for r in df.select(_COLUMNS).iter_rows(named=True)),
            )
        )
    return tables
