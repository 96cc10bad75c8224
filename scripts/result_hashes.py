"""Hashes of every column of every Parquet file under a results folder, and of each run's summary.

Used to prove that a change leaves results bit-identical: run the same scenarios before and after
and compare the two JSON files. A column's hash covers its name, its polars dtype and its values in
row order (nulls marked apart from values), in a byte form that depends on neither the Parquet
encoding (row groups, compression) nor the library versions. The summary's hash leaves out what
depends on the machine or the command line (wall-clock times, the command), and takes its
numbers to `SUMMARY_DIGITS` significant digits: a mean or a quantile over the same rows differs
in its last bits between polars versions and machines (1e-15 relative, as their summation order
does), which is not a change of behaviour.

    python scripts/result_hashes.py RESULTS_DIR > hashes.json
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

VOLATILE_SUMMARY_KEYS = ("wall_s", "sim_wall_s", "command", "rtcbench_version", "provenance", "files")
"""Keys of summary.json that record how or where a run was made, not what it computed."""


def column_hash(s: pl.Series) -> str:
    h = hashlib.sha256()
    h.update(f"{s.name}\0{s.dtype}\0{s.len()}\0".encode())
    nulls = s.is_null().to_numpy()
    h.update(np.packbits(nulls).tobytes())
    if s.dtype == pl.String or s.dtype == pl.Categorical:
        for v in s.cast(pl.String).to_list():
            h.update(b"\1" if v is None else b"\2" + v.encode() + b"\0")
    elif s.dtype == pl.Boolean:
        h.update(np.packbits(s.fill_null(False).to_numpy()).tobytes())
    else:
        values = s.to_numpy()
        if values.dtype.kind == "f":
            values = np.where(nulls, 0.0, values).astype(np.float64)
        else:
            values = np.where(nulls, 0, values).astype(np.int64)
        h.update(values.tobytes())
    return h.hexdigest()


SUMMARY_DIGITS = 9
"""Significant digits of the summary's numbers that its hash covers: far above the noise of a
float sum's order (15-16 digits), far below any difference a change of behaviour makes."""


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.{SUMMARY_DIGITS}g}")
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def summary_hash(summary: dict[str, Any]) -> str:
    kept = {k: _rounded(v) for k, v in summary.items() if k not in VOLATILE_SUMMARY_KEYS}
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()


def frame_hashes(df: pl.DataFrame) -> dict[str, Any]:
    return {"rows": df.height, **{c: column_hash(df.get_column(c)) for c in df.columns}}


def run_hashes(summary: dict[str, Any], frames: dict[str, pl.DataFrame]) -> dict[str, Any]:
    """The hashes of one run: its summary and each of its tables (by name)."""
    return {"summary": summary_hash(summary), **{name: frame_hashes(df) for name, df in frames.items()}}


def run_digest(hashes: dict[str, Any]) -> str:
    """One hash for a run's `run_hashes`."""
    return hashlib.sha256(json.dumps(hashes, sort_keys=True).encode()).hexdigest()


def hashes(root: Path) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for summary_path in sorted(root.rglob("summary.json")):
        run = summary_path.parent
        frames = {f.stem: pl.read_parquet(f) for f in sorted(run.glob("*.parquet"))}
        out[run.relative_to(root).as_posix()] = run_hashes(json.loads(summary_path.read_text()), frames)
    return out


if __name__ == "__main__":
    json.dump(hashes(Path(sys.argv[1])), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
