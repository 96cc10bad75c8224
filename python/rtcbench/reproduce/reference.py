"""Chromium's numbers kept in the repository, so that the default test tier holds the simulator to
them without a browser (issue 34: "fidelity in CI without browsers").

`export` writes, from a reproduction whose browser runs were fair (`run_problem`), two small CSV
tables: every seed-table row that Chromium measured (`ROWS_FILE`) and every period comparison
(`PERIODS_FILE`), each with the simulator's mean at the time and whether it agreed with Chromium.
`python/rtcbench/reproduce/reference/` holds the committed pair; `tests/test_fidelity.py`
re-runs the simulator on the cases they name and fails when a comparison that agreed no longer
does (a model change left Chromium's band), or when one that did not now does (a gap closed:
export the reference again and say so in docs/reproduction.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from rtcbench.reproduce import period_agrees, period_row, period_values
from rtcbench.reproduce.experiments import TABLES, Row
from rtcbench.results import write_bytes_atomic

__all__ = [
    "FOLDER",
    "PERIODS_FILE",
    "ROWS_FILE",
    "RUNS_FILE",
    "SPAN",
    "Change",
    "changes",
    "chromium",
    "export",
    "export_runs",
    "load",
    "load_runs",
    "period_changes",
    "spread",
]

FOLDER = Path(__file__).resolve().parent / "reference"
ROWS_FILE = "chromium-rows.csv"
PERIODS_FILE = "chromium-periods.csv"
RUNS_FILE = "chromium-period-runs.csv"
"""Chromium's value of every period in each fair browser run, by the run's seed (`export_runs`):
the repetitions whose range is Chromium's spread (`spread`)."""

_ROW_COLUMNS = ("table", "key", "case", "unit", "chromium", "simulated", "agrees")
_PERIOD_COLUMNS = ("case", "flow", "period", "start_s", "end_s", "metric", "chromium", "simulated", "agrees")
SPAN = ("case", "flow", "start_s", "end_s", "metric")
"""What names a period in the runs table: its case, flow, span and metric."""
_RUN_SCHEMA = {
    "case": pl.String,
    "flow": pl.String,
    "start_s": pl.Float64,
    "end_s": pl.Float64,
    "metric": pl.String,
    "seed": pl.Int32,
    "chromium": pl.Float64,
}


def export(
    rows: pl.DataFrame, periods: pl.DataFrame, problems: dict[str, str], folder: Path
) -> tuple[Path, Path]:
    """Writes the two reference tables to `folder` from a reproduction's `rows` and `periods`
    (`reproduce.ROWS_SCHEMA`, `PERIODS_SCHEMA`): the comparisons that have a Chromium value from a
    fair run (cases named in `problems` are left out) and a simulated one."""
    unfair = list(problems)
    kept_rows = rows.filter(
        pl.col("chromium").is_not_null() & pl.col("simulated").is_not_null() & ~pl.col("case").is_in(unfair)
    ).select(
        *_ROW_COLUMNS[:4],
        "chromium",
        "simulated",
        pl.col("simulated_agrees_with_chromium").alias("agrees"),
    )
    kept_periods = periods.filter(pl.col("agrees").is_not_null() & ~pl.col("case").is_in(unfair)).select(
        *_PERIOD_COLUMNS
    )
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for frame, name in ((kept_rows, ROWS_FILE), (kept_periods, PERIODS_FILE)):
        written.append(write_bytes_atomic(folder / name, frame.write_csv(float_precision=6).encode()))
    return written[0], written[1]


def export_runs(periods: pl.DataFrame, seed: int, problems: dict[str, str], folder: Path) -> Path:
    """Adds one browser run per case to `folder`'s `RUNS_FILE`: Chromium's value of every period
    in `periods` (`reproduce.PERIODS_SCHEMA`, from a reproduction whose browser runs had `seed`),
    the cases named in `problems` (not fair measurements) left out. Rows of the same case and
    seed already there are replaced, the others kept, so passes of several seeds, made apart,
    add up to Chromium's spread."""
    unfair = list(problems)
    new = (
        periods.filter(pl.col("chromium").is_not_null() & ~pl.col("case").is_in(unfair))
        .select(*SPAN, pl.lit(seed, pl.Int32).alias("seed"), "chromium")
        .cast(pl.Schema(_RUN_SCHEMA))
    )
    kept = load_runs(folder).join(new.select("case", "seed").unique(), on=["case", "seed"], how="anti")
    merged = pl.concat([kept, new]).sort("case", "flow", "start_s", "metric", "seed")
    folder.mkdir(parents=True, exist_ok=True)
    return write_bytes_atomic(folder / RUNS_FILE, merged.write_csv(float_precision=6).encode())


def load_runs(folder: Path = FOLDER) -> pl.DataFrame:
    """The committed runs of Chromium (`RUNS_FILE`, `export_runs`); empty if there are none yet."""
    path = folder / RUNS_FILE
    if not path.is_file():
        return pl.DataFrame(schema=_RUN_SCHEMA)
    return pl.read_csv(path, schema=pl.Schema(_RUN_SCHEMA))


def spread(runs: pl.DataFrame) -> pl.DataFrame:
    """Chromium's spread per period and metric over `runs` (`load_runs`): the least and largest
    value (`chromium_low`, `chromium_high`) and the runs they come from (`chromium_runs`)."""
    return runs.group_by(SPAN).agg(
        pl.col("chromium").min().alias("chromium_low"),
        pl.col("chromium").max().alias("chromium_high"),
        pl.len().cast(pl.Int32).alias("chromium_runs"),
    )


def load(folder: Path = FOLDER) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The committed reference: its rows and its periods (empty frames if there is none yet)."""
    frames = []
    for name, columns in ((ROWS_FILE, _ROW_COLUMNS), (PERIODS_FILE, _PERIOD_COLUMNS)):
        path = folder / name
        frames.append(
            pl.read_csv(path) if path.is_file() else pl.DataFrame(schema=dict.fromkeys(columns, pl.String))
        )
    return frames[0], frames[1]


def chromium(
    tables: set[str],
    simulated: dict[str, list[dict[str, Any]]],
    runs: dict[str, list[Path]] | None = None,
    folder: Path = FOLDER,
) -> tuple[dict[tuple[str, str], float | None], list[dict[str, Any]]]:
    """Chromium's half of a reproduction of `tables` (their ids) from the reference in `folder`:
    its value of every referenced row, by (table, key), and the referenced periods of those
    tables' cases as `PERIODS_SCHEMA` rows, each set against the simulated runs' summaries now
    (`simulated`: by case label, as `Reproduction.simulated_summaries`; `runs`: their folders,
    as `Reproduction.simulated_folders`, to measure a span they no longer cut as a period)."""
    rows, periods = load(folder)
    values: dict[tuple[str, str], float | None] = {
        (r["table"], r["key"]): float(r["chromium"])
        for r in rows.iter_rows(named=True)
        if r["table"] in tables
    }
    out = [
        period_row(
            ref["case"],
            ref["flow"],
            ref["period"],
            (ref["start_s"], ref["end_s"]),
            ref["metric"],
            float(ref["chromium"]),
            simulated[ref["case"]],
            (runs or {}).get(ref["case"], []),
        )
        for ref in periods.iter_rows(named=True)
        if ref["case"] in simulated
    ]
    return values, out


@dataclass(frozen=True)
class Change:
    """A comparison whose verdict moved since the reference was exported."""

    what: str
    chromium: float
    simulated_then: float
    simulated_now: float | None
    agreed: bool

    def __str__(self) -> str:
        now = "none" if self.simulated_now is None else f"{self.simulated_now:.4g}"
        if self.agreed:
            return (
                f"{self.what}: the simulator left Chromium's band ({self.chromium:.4g}): "
                f"{self.simulated_then:.4g} when the reference was made, {now} now"
            )
        return (
            f"{self.what}: the simulator now agrees with Chromium ({self.chromium:.4g}): "
            f"{self.simulated_then:.4g} when the reference was made, {now} now; export the reference again"
        )


def _row(table: str, key: str) -> Row:
    for t in TABLES:
        if t.id == table:
            for r in t.rows:
                if r.key == key:
                    return r
    raise KeyError(f"the reference names {table}/{key}, which the reproduction set no longer has")


def changes(reference_rows: pl.DataFrame, simulated: dict[tuple[str, str], float | None]) -> list[Change]:
    """The reference rows whose agreement with Chromium differs for `simulated` (the simulator's
    mean per (table, key), as `reproduce` computes it), by the row's own tolerance."""
    out = []
    for ref in reference_rows.iter_rows(named=True):
        row = _row(ref["table"], ref["key"])
        now = simulated.get((ref["table"], ref["key"]))
        agrees = row.agrees(now, ref["chromium"])
        if bool(agrees) != bool(ref["agrees"]):
            out.append(
                Change(
                    f"{ref['table']} {row.label}", ref["chromium"], ref["simulated"], now, bool(ref["agrees"])
                )
            )
    return out


def period_changes(
    reference_periods: pl.DataFrame,
    simulated: dict[str, list[dict[str, Any]]],
    runs: dict[str, list[Path]] | None = None,
) -> list[Change]:
    """The reference periods whose agreement with Chromium differs for the simulated runs'
    summaries now (`simulated`: by case label, as `Reproduction.simulated_summaries`; `runs`:
    their folders, as `Reproduction.simulated_folders`, to measure a span they no longer cut as
    a period, `period_values`)."""
    out = []
    for ref in reference_periods.iter_rows(named=True):
        span = (ref["start_s"], ref["end_s"])
        case = ref["case"]
        values = period_values(
            simulated.get(case, []), ref["flow"], span, ref["metric"], (runs or {}).get(case, [])
        )
        now = sum(values) / len(values) if values else None
        if bool(period_agrees(ref["metric"], ref["chromium"], now)) != bool(ref["agrees"]):
            what = f"{ref['case']} {ref['flow']} {ref['start_s']:g}-{ref['end_s']:g} s {ref['metric']}"
            out.append(Change(what, ref["chromium"], ref["simulated"], now, bool(ref["agrees"])))
    return out
