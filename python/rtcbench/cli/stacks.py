"""`rtcbench stacks`: one case on every stack, side by side (docs/stacks.md)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from rtcbench.cli.errors import guarded
from rtcbench.cli.options import RAY_CALLS_HELP
from rtcbench.cli.render import console, err_console


@guarded("no half-written run is left; finished runs are kept in {out} and reused next time")
def stacks_cmd(
    out: Annotated[Path, typer.Option(help="Results folder (complete runs in it are reused).")] = Path(
        "results/stacks"
    ),
    cases: Annotated[
        list[str] | None,
        typer.Option(
            "--case",
            help="A case instead of the fixed three (repeatable): SCENARIO or SCENARIO:name=value,... "
            "naming one variant.",
        ),
    ] = None,
    stack_names: Annotated[
        list[str] | None,
        typer.Option(
            "--stack",
            help="A stack instead of all six (repeatable): simulator, emulation, chromium, firefox, "
            "gstreamer, rtpgccbwe (GStreamer's own RTP stack and GCC); or gstreamer-scaled, run only "
            "when named (GStreamer with its picture scaled on the resolution ladder).",
        ),
    ] = None,
    seed: Annotated[
        int,
        typer.Option(
            help="Seed of the first run (the model's draws, the browsers' clip); the next runs count up."
        ),
    ] = 1,
    runs: Annotated[int, typer.Option(help="Runs of each case on each stack (seeds SEED, SEED+1, ...).")] = 5,
    attempts: Annotated[
        int, typer.Option(help="Runs of a real-time case that was CPU-limited or missed its timing.")
    ] = 2,
    ray: Annotated[str | None, typer.Option("--ray", help=RAY_CALLS_HELP)] = None,
) -> None:
    """One case, every stack: run each case on the simulator, on rtcbench's media agents over the
    emulated network, between Chromium peers, between Firefox peers and on GStreamer's encoder
    (all but the simulator as root, in real time), and compare each with Chromium phase by phase
    (docs/stacks.md), each stack's median of --runs runs against Chromium's. The fixed three cases
    take about 35 minutes a run (about 3 hours for five); it writes <out>/stacks.parquet,
    stacks-curves.parquet, a figure per case and stacks.md."""
    from rtcbench import stacks
    from rtcbench.calibrate import parse_case
    from rtcbench.plots import render
    from rtcbench.results import InputError, write_bytes_atomic

    command = "rtcbench " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    chosen = [parse_case(c) for c in cases] if cases else list(stacks.CASES)
    which = [stacks.stack(name) for name in stack_names] if stack_names else list(stacks.STACKS)

    if runs < 1:
        raise InputError(f"--runs must be at least 1, got {runs}")

    def told(case: Any, s: stacks.Stack, run_seed: int, summary: dict[str, Any], ran: bool) -> None:
        how = "ran" if ran else "kept"
        problem = stacks.run_problem(s, summary)
        line = f"{how}: {case.label()} · {s.name} · seed {run_seed}" + (f" ({problem})" if problem else "")
        err_console.print(escape(line), highlight=False)

    result = stacks.compare_stacks(
        out,
        chosen,
        which,
        seeds=tuple(range(seed, seed + runs)),
        attempts=attempts,
        command=command,
        ray_address=ray,
        on_run=told,
    )
    written = []
    for case in result.curves.get_column("case").unique(maintain_order=True).to_list():
        path = stacks.figure_path(out, case)
        write_bytes_atomic(path, render(stacks.figure(result.curves, case)).png)
        written.append(path)
    write_bytes_atomic(out / "stacks.md", stacks.markdown(result).encode())
    compared = result.rows.filter(result.rows["agrees"].is_not_null())
    if compared.height:
        apart = compared.filter(~compared["agrees"])
        console.print(
            escape(f"{compared.height - apart.height} of {compared.height} comparisons with Chromium agree"),
            highlight=False,
        )
    for what, why in sorted(result.problems.items()):
        err_console.print(escape(f"warning: {what}: {why}"), highlight=False, soft_wrap=True)
    for path in [out / stacks.ROWS, out / stacks.CURVES, *written, out / "stacks.md"]:
        console.print(escape(f"→ {path}"), highlight=False)
