"""`rtcbench export`: runs as the MMSys 2024 bandwidth estimation challenge's per-call records
(docs/learned.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from rtcbench.cli.errors import _fail, guarded
from rtcbench.cli.render import console, err_console


@guarded("no records were written ({out} is as it was)")
def export_cmd(
    folder: Annotated[Path, typer.Argument(help="A run folder, or a folder of runs (a suite, a sweep).")],
    out: Annotated[
        Path, typer.Option(help="The folder to write the records into (made whole, or not at all).")
    ],
) -> None:
    """Write every call of every run under FOLDER as the MMSys 2024 bandwidth estimation
    challenge's per-call JSON (docs/learned.md): OUT/<run>/call<k>.json, and OUT/steps.parquet,
    one row per call and 60 ms step (observation, the controller's estimate, true capacity and
    loss). OUT is replaced only once every record is written."""
    import numpy as np
    import polars as pl

    from rtcbench import learned
    from rtcbench.results import atomic_dir, load_tables, run_folders, write_parquet_atomic

    if not folder.is_dir():
        _fail(f"{folder}: not a folder")
    folders = run_folders(folder)
    if not folders:
        _fail(f"{folder}: no run folders (none holds a summary.json)")
    if out.resolve() == folder.resolve() or folder.resolve() in out.resolve().parents:
        _fail(f"--out {out}: must not be inside {folder}, which is read")
    rows: list[pl.DataFrame] = []
    calls = 0
    with atomic_dir(out, out.parent) as tmp:
        for run in folders:
            name = run.relative_to(folder).as_posix() if run != folder else run.name
            rel = run.relative_to(folder)
            if any((folder / p).is_symlink() for p in (rel, *rel.parents) if p != Path(".")):
                # Planted in the folder (docs/security.md): named, never followed.
                err_console.print(
                    f"[yellow]skipped:[/] {escape(f'{run}: a link, not followed')}", highlight=False
                )
                continue
            tables = load_tables(run)
            for call in sorted({int(f["call"]) for f in tables.meta["flows"] if f.get("call") is not None}):
                try:
                    record = learned.call_record(tables, call)
                except ValueError as e:
                    err_console.print(
                        f"[yellow]skipped:[/] {escape(f'{run}: call {call}: {e}')}", highlight=False
                    )
                    continue
                target = tmp / name / f"call{call}.json"
                target.parent.mkdir(parents=True, exist_ok=True)
                learned.write_call(record, target)
                steps = len(record.bandwidth_predictions)
                nan = np.full(steps, np.nan)
                rows.append(
                    pl.DataFrame(
                        {
                            "run": [name] * steps,
                            "call": [call] * steps,
                            "step": np.arange(steps, dtype=np.int64),
                            "t_us": learned.decision_steps(tables, call),
                            "bandwidth_prediction_bps": record.bandwidth_predictions,
                            "true_capacity_bps": nan
                            if record.true_capacity is None
                            else record.true_capacity,
                            "true_loss": nan if record.true_loss is None else record.true_loss,
                            "observation": record.observations,
                        }
                    )
                )
                calls += 1
        if not rows:
            _fail(f"{folder}: no call could be exported")
        write_parquet_atomic(pl.concat(rows), tmp / "steps.parquet")
    console.print(escape(f"{calls} call(s) of {len(folders)} run(s) → {out}"), highlight=False)
