"""Run results on disk: the trace tables as Parquet, `summary.json`, the scenario that ran, figures.

Layout (ARCHITECTURE.md, "Results on disk")::

    <out>/<scenario-id>[@<variant>]/<controller>/seed-<n>/
        scenario.toml  packets.parquet  frames.parquet  controller.parquet  links.parquet
        feedback.parquet  timeseries.parquet  summary.json  overview.png

A run is written into a hidden temporary folder beside its destination and renamed into place when
complete, so an interrupted run never leaves a half result where a finished one is expected.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from rtcbench.metrics import Tables

__all__ = [
    "TABLES",
    "TraceWriter",
    "atomic_dir",
    "concat_pieces",
    "load_tables",
    "piece_frames",
    "read_summary",
    "run_dir",
    "run_folders",
    "tables_from_core",
    "write_parquet",
    "write_parquet_atomic",
    "write_tables",
]

TABLES = ("packets", "frames", "controller", "links", "feedback")
"""The trace tables every run records (docs/traces.md)."""


def run_dir(out: Path, scenario_id: str, variant_slug: str, controller: str, seed: int) -> Path:
    """Where one run's results live; a scenario with several variants gets one folder per variant."""
    name = scenario_id if variant_slug == "default" else f"{scenario_id}@{variant_slug}"
    return out / name / controller / f"seed-{seed}"


RUN_FILES = ("summary.json", "scenario.toml", *(f"{name}.parquet" for name in TABLES), "timeseries.parquet")
"""What `rtcbench run` and `rtcbench suite` write into every run folder (figures aside)."""

_SEED_FOLDER = re.compile(r"seed-\d+")


def run_folders(root: Path) -> list[Path]:
    """Every folder under `root` (or `root` itself) that is, or was meant to be, a run: it holds
    one of `RUN_FILES` or is named seed-N (`run_dir`), so an incomplete run is found and can be
    named. Hidden folders are skipped: they are runs still being written (`atomic_dir`). Sorted,
    so the same tree always gives the same order."""
    found: list[Path] = []
    for here, dirs, files in os.walk(root):
        folder = Path(here)
        if set(files) & set(RUN_FILES) or (folder != root and _SEED_FOLDER.fullmatch(folder.name)):
            found.append(folder)
            dirs[:] = []
            continue
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    return sorted(found)


def _null_where(values: np.ndarray[Any, Any], sentinel: float | None) -> pl.Series:
    """A series with the core's sentinels (-1 for integers, NaN for floats) turned into nulls."""
    s = pl.Series(values)
    if sentinel is None:
        return s.fill_nan(None) if s.dtype.is_float() and np.isnan(values).any() else s
    return s.set(s == sentinel, None) if (values == sentinel).any() else s


def _decode(codes: np.ndarray[Any, Any], names: list[str]) -> pl.Series:
    """Integer category codes to strings; the empty name means null."""
    lookup = pl.Series([name or None for name in names], dtype=pl.String)
    return lookup.gather(pl.Series(codes, dtype=pl.UInt32)) if len(codes) else pl.Series([], dtype=pl.String)


def tables_from_core(raw: dict[str, Any], meta: dict[str, Any]) -> Tables:
    """Builds the typed tables from the core's arrays (docs/traces.md schemas)."""
    return Tables(meta=meta, **piece_frames(raw, meta))


def concat_pieces(pieces: list[dict[str, pl.DataFrame]], meta: dict[str, Any]) -> Tables:
    """The tables of a run from its pieces (`piece_frames`), in order."""
    if len(pieces) == 1:
        return Tables(meta=meta, **pieces[0])
    # One chunk per column, as a run taken in one piece has (float sums follow the chunks).
    return Tables(meta=meta, **{name: pl.concat([p[name] for p in pieces], rechunk=True) for name in TABLES})


def piece_frames(raw: dict[str, Any], meta: dict[str, Any]) -> dict[str, pl.DataFrame]:
    """The typed tables (docs/traces.md schemas) of a piece of a run's trace as the core hands it
    out (`_core.Run.piece`: numpy arrays, integer codes for categories, -1/NaN for nulls)."""
    codes = raw["codes"]
    link_names = [link["name"] for link in meta["links"]]
    link_names_or_null = [*link_names, ""]

    p = raw["packets"]
    link_codes = np.where(p["link"] < 0, len(link_names), p["link"])
    packets = pl.DataFrame(
        {
            "t_us": p["t_us"],
            "event": _decode(p["event"], codes["event"]),
            "packet": p["packet"],
            "flow": p["flow"],
            "kind": _decode(p["kind"], codes["kind"]),
            "size": p["size"],
            "payload": p["payload"],
            "sent_us": p["sent_us"],
            "seq": _null_where(p["seq"], -1),
            "frame": _null_where(p["frame"], -1),
            "link": _decode(link_codes, link_names_or_null),
            "reason": _decode(p["reason"], codes["reason"]),
            "ecn": _decode(p["ecn"], codes["ecn"]),
        }
    )
    f = raw["frames"]
    frames = pl.DataFrame({**f, "complete_us": _null_where(f["complete_us"], -1)})
    c = raw["controller"]
    controller = pl.DataFrame(
        {
            name: (
                _null_where(v, -1)
                if name.endswith(("_bps", "_bytes"))
                else _null_where(v, None)
                if isinstance(v, np.ndarray) and v.dtype.kind == "f"
                else v
            )
            for name, v in c.items()
        }
    )
    lk = raw["links"]
    links = pl.DataFrame(
        {
            "t_us": lk["t_us"],
            "link": _decode(lk["link"], link_names),
            "capacity_bps": _null_where(lk["capacity_bps"], -1),
            "queue_bytes": lk["queue_bytes"],
            "queue_limit_bytes": _null_where(lk["queue_limit_bytes"], -1),
        }
    )
    fb = raw["feedback"]
    feedback = pl.DataFrame(
        {
            "t_us": fb["t_us"],
            "call": fb["call"],
            "kind": _decode(fb["kind"], codes["feedback_kind"]),
            "size": fb["size"],
            "rtt_us": _null_where(fb["rtt_us"], -1),
            "fraction_lost": _null_where(fb["fraction_lost"], None),
            "packets_reported": _null_where(fb["packets_reported"], -1),
        }
    )
    return {
        "packets": packets,
        "frames": frames,
        "controller": controller,
        "links": links,
        "feedback": feedback,
    }


_COMPRESSION = {"compression": "zstd", "compression_level": 1}


def write_parquet(df: pl.DataFrame, path: Path) -> None:
    """Writes one results table: zstd at level 1, with column statistics.

    Level 1 rather than polars' default 3: on the RFC 8867 suite it writes about 15 % faster for
    files about 2 % larger (encoding, not compression, is most of the cost).
    """
    df.write_parquet(path, **_COMPRESSION, statistics=True)  # type: ignore[arg-type]


def write_parquet_atomic(df: pl.DataFrame, final: Path) -> None:
    """`write_parquet` under a temporary name in the same folder, then a rename: readers see the
    old file or the new one, never a part, and an interrupted write leaves the old file."""
    tmp = final.with_name(f".{final.name}.{os.getpid()}.tmp")
    try:
        write_parquet(df, tmp)
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class TraceWriter:
    """Appends pieces of a run's tables to `<folder>/<name>.parquet`, one row group or more per
    piece, as `write_parquet` would write the whole table (the same values and types; readers see
    no difference), so a long run never holds more than a piece.

    A table's file is created by its first piece with rows; a table that never has a row is
    written, empty, from its last piece by `close`, which every table needs before the folder is
    complete. `abort` closes the files without completing them (the caller drops the folder)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._open: dict[str, pq.ParquetWriter] = {}
        self._empty: dict[str, pl.DataFrame] = {}

    def write(self, name: str, df: pl.DataFrame) -> None:
        writer = self._open.get(name)
        if writer is None:
            if df.height == 0:
                self._empty[name] = df
                return
            table = df.to_arrow()
            writer = pq.ParquetWriter(
                self.folder / f"{name}.parquet", table.schema, write_statistics=True, **_COMPRESSION
            )
            self._open[name] = writer
            self._empty.pop(name, None)
            writer.write_table(table)
            return
        if df.height:
            writer.write_table(df.to_arrow().cast(writer.schema))

    def write_piece(self, piece: dict[str, pl.DataFrame]) -> None:
        for name, df in piece.items():
            self.write(name, df)

    def close(self) -> None:
        for writer in self._open.values():
            writer.close()
        for name, df in self._empty.items():
            write_parquet(df, self.folder / f"{name}.parquet")
        self._open.clear()
        self._empty.clear()

    def abort(self) -> None:
        for writer in self._open.values():
            with contextlib.suppress(Exception):
                writer.close()
        self._open.clear()
        self._empty.clear()


def write_tables(t: Tables, folder: Path) -> None:
    """Writes every trace table as `<name>.parquet` (polars, pandas and pyarrow read them)."""
    for name in TABLES:
        write_parquet(getattr(t, name), folder / f"{name}.parquet")


def load_tables(folder: Path) -> Tables:
    """Reads a run folder back into `Tables` (its `meta` comes from `summary.json`)."""
    summary = read_summary(folder)
    # One chunk per column, as tables made in memory have (float sums follow the chunks).
    frames = {name: pl.read_parquet(folder / f"{name}.parquet").rechunk() for name in TABLES}
    return Tables(meta=summary["meta"], **frames)


def read_summary(folder: Path) -> dict[str, Any]:
    with open(folder / "summary.json", encoding="utf-8") as fh:
        summary: dict[str, Any] = json.load(fh)
    return summary


@contextmanager
def atomic_dir(final: Path) -> Iterator[Path]:
    """Yields a temporary folder beside `final` and renames it to `final` on success.

    On an exception (or an interrupt) the temporary folder is removed and `final` is untouched. A
    previous result at `final` is replaced only once the new one is complete.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old: Path | None = None
    if final.exists():
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        os.replace(final, old)
    os.replace(tmp, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
