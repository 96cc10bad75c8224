"""`rtcbench calibrate`: the simulator against Chromium (docs/calibration.md)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from rtcbench.cli.errors import guarded
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

    table = calibrate.calibrate(out, chosen, seed=seed, command=command, on_run=told)
    print_calibration(table)
    console.print(escape(f"→ {out / calibrate.TABLE}"), highlight=False)
