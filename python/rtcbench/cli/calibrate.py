"""`rtcbench calibrate`: the simulator against Chromium (docs/calibration.md)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from rtcbench.cli.errors import guarded
from rtcbench.cli.options import RAY_CALLS_HELP
from rtcbench.cli.render import console, err_console, print_calibration


@guarded("no half-written run is left; finished runs are kept in {out} and reused next time")
def calibrate_cmd(
    out: Annotated[Path, typer.Option(help="Results folder (complete runs in it are reused).")] = Path(
        "results/calibration"
    ),
    cases: Annotated[
        list[str] | None,
        typer.Option(
            "--case",
            help="A case instead of the fixed set (repeatable): SCENARIO or SCENARIO:name=value,... "
            "naming one variant.",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the simulated runs (and the browser runs' clips).")] = 1,
    browser_event_log: Annotated[
        bool,
        typer.Option(
            "--browser-event-log",
            help="Record Chromium's RTC event logs and set GoogCC's decisions side by side with the "
            "simulator's: <out>/decisions.parquet and a figure per case in <out>/decisions/.",
        ),
    ] = False,
    ray: Annotated[str | None, typer.Option("--ray", help=RAY_CALLS_HELP)] = None,
) -> None:
    """Calibrate the simulator against Chromium: run each case between real Chromium peers
    (--mode browser, as root) and in the simulator with gcc, and compare each video flow's
    phases: mean sending rate, queuing delay and loss (docs/calibration.md). The fixed set takes
    about 11 minutes; it writes <out>/calibration.parquet."""
    from rtcbench import calibrate

    command = "rtcbench " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    chosen = [calibrate.parse_case(c) for c in cases] if cases else list(calibrate.CASES)

    def told(case: calibrate.Case, mode: str, summary: dict[str, Any], ran: bool) -> None:
        how = "ran" if ran else "kept"
        err_console.print(escape(f"{how}: {case.label()} · {mode}"), highlight=False)

    table = calibrate.calibrate(
        out, chosen, seed=seed, command=command, on_run=told, event_log=browser_event_log, ray_address=ray
    )
    print_calibration(table)
    console.print(escape(f"→ {out / calibrate.TABLE}"), highlight=False)
    if browser_event_log:
        _print_decisions(out / calibrate.DECISIONS)
        console.print(
            escape(f"→ {out / calibrate.DECISIONS}, {out / calibrate.DECISIONS_FOLDER}/"), highlight=False
        )


def _print_decisions(path: Path) -> None:
    """Per case and decision, how many Chromium's log and the simulator took."""
    import polars as pl
    from rich.table import Table

    counts = (
        pl.read_parquet(path)
        .group_by("case", "decision", "side")
        .len()
        .pivot(on="side", index=["case", "decision"], values="len")
        .sort("case", "decision")
    )
    table = Table(title="GoogCC's decisions: Chromium (its RTC event log) / simulator")
    for column in ("case", "decision", "Chromium", "simulator"):
        table.add_column(column, justify="left" if column in ("case", "decision") else "right")
    for row in counts.iter_rows(named=True):
        table.add_row(
            escape(row["case"]),
            row["decision"],
            str(row.get("chromium") or 0),
            "-"
            if row["decision"] in ("overuse", "probe-result", "probe-failed")
            else str(row.get("simulator") or 0),
        )
    console.print(table)
