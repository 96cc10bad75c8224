"""Run results on disk: the trace tables as Parquet, `summary.json`, the scenario that ran, figures.

Layout (ARCHITECTURE.md, "Results on disk")::

    <out>/<scenario-id>[@<variant>]/<controller>/<key>/seed-<n>/
        scenario.toml  packets.parquet  frames.parquet  controller.parquet  links.parquet
        feedback.parquet  timeseries.parquet  summary.json  overview.png

`<key>` names exactly what ran (`rtcbench.identity`): a `--set`, an edited scenario or trace
file, or another version of a Python controller gets a folder of its own, and the same
configuration finds its folder again.

A run is written into a hidden temporary folder beside its destination and renamed into place when
complete, so an interrupted run never leaves a half result where a finished one is expected.

Links. The folder a user gives (`--out`, the folders of `report`, `score`, `compare`) is theirs and
may be a symbolic link they chose; a link *inside* it was not made by rtcbench (results are copied,
shared and downloaded) and is never followed to write or delete, nor to find a run. Every place
that writes or deletes below the given folder goes through `unlinked` (by `make_parents`,
`atomic_dir`, `remove_stale_runs`, `remove_unfinished`, or a reader's `read_summary(root=...)`),
and every file is written under a temporary name made with O_CREAT | O_EXCL, which never follows
a link, then renamed over its destination (`atomic_file`): a link found there is replaced, never
written through. docs/security.md says what this guards against, and what not.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import math
import os
import re
import shutil
import signal
import socket
import stat
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from rtcbench.tables import SCHEMA, Tables, schema_problem

__all__ = [
    "BROWSER_TABLES",
    "FILES_KEY",
    "LINK_READ",
    "LINK_WRITE",
    "MAX_SUMMARY_BYTES",
    "MAX_TEXT_BYTES",
    "SUMMARY",
    "SUMMARY_KEYS",
    "TABLES",
    "InputError",
    "PathArg",
    "PlantedLink",
    "TraceWriter",
    "atomic_dir",
    "atomic_file",
    "concat_pieces",
    "controller_folder",
    "file_records",
    "load_tables",
    "make_parents",
    "piece_frames",
    "read_file",
    "read_summary",
    "read_text",
    "regular_file",
    "remove_stale",
    "remove_stale_runs",
    "remove_unfinished",
    "run_dir",
    "run_folders",
    "sections",
    "tables_from_core",
    "unlinked",
    "verify_files",
    "write_bytes_atomic",
    "write_parquet",
    "write_parquet_atomic",
    "write_tables",
]


PathArg = str | os.PathLike[str]
"""A path as the public API takes it: a `str` or any path object; it is turned into a `Path` at once."""


class InputError(ValueError):
    """A file or folder given to rtcbench that cannot be used (not UTF-8 text, corrupt, of the
    wrong kind); the message names it and says what is wrong, in one line."""


LINK_WRITE = "a symbolic link; rtcbench does not write through links it did not make"
LINK_READ = "a symbolic link; rtcbench does not follow links inside a results folder: the run is left out"


class PlantedLink(InputError):
    """A symbolic link below the folder a user gave, where rtcbench would write, delete or look for
    a run (`unlinked`). One line: the link, then what rtcbench does not do through it (`LINK_WRITE`
    or `LINK_READ`), so every command names it alike."""

    def __init__(self, link: Path, what: str = LINK_WRITE) -> None:
        super().__init__(link, what)  # both in `args`: a worker's error pickles back whole
        self.link = link
        self.what = what

    def __str__(self) -> str:
        return f"{self.link}: {self.what}"


def unlinked(root: Path, path: Path, what: str = LINK_WRITE) -> Path:
    """`path` (`root`, or a path below it built from `root`), if nothing below `root` on the way
    to it, `path` included, is a symbolic link; `PlantedLink` naming the first that is. `root`
    itself is the folder the user gave and may be a link they chose. The walk stops at the first
    part that does not exist: what rtcbench creates from there on is its own.

    The one check of every write and delete below a folder the user gave (module doc). It is a
    check, not a lock: it guards against links a results folder held before the command started
    (a shared or downloaded folder), not against a process that plants one while it runs, which
    could as well write the files itself."""
    here = root
    for part in path.relative_to(root).parts:
        here = here / part
        try:
            mode = os.lstat(here).st_mode
        except (FileNotFoundError, NotADirectoryError):
            break
        if stat.S_ISLNK(mode):
            raise PlantedLink(here, what)
    return path


MAX_TEXT_BYTES = 64 << 20
"""The largest TOML file read (a scenario, a sweep, thresholds, a results folder's
`scenario.toml`): 64 MiB, room for a schedule of `limits.MAX_SCHEDULE_STEPS` steps written out."""
MAX_SUMMARY_BYTES = 64 << 20
"""The largest `summary.json` read: 64 MiB (one of a run of 500 calls is a few MB)."""


def _kind(mode: int) -> str:
    """What a file that is not a regular file is, for errors."""
    kinds = (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "not a file")


def read_file(path: Path, limit: int) -> bytes:
    """The bytes of a file a user or a results folder names: a regular file of at most `limit`
    bytes, or `InputError` naming it and saying what it is. A FIFO would block, a device
    (`/dev/zero`) never ends and says it holds 0 bytes, so neither is read: the kind is checked
    before opening (opening a device may act on it) and again on the open file, opened without
    blocking in case it was replaced meanwhile; the read stops past `limit`, so a file that grows
    while it is read cannot exceed it. An OSError (a missing or unreadable file) names the file
    itself."""

    def regular(st: os.stat_result) -> None:
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{path}: not a regular file ({_kind(st.st_mode)})")
        if st.st_size > limit:
            raise InputError(f"{path}: {st.st_size} bytes; at most {limit} are read")

    regular(os.stat(path))
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        regular(os.fstat(fd))
        data = bytearray()
        while len(data) <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - len(data)))
            if not chunk:
                return bytes(data)
            data += chunk
    finally:
        os.close(fd)
    raise InputError(f"{path}: grew past {limit} bytes while it was read; at most {limit} are read")


def read_text(path: Path, limit: int = MAX_TEXT_BYTES) -> str:
    """A UTF-8 text file given by the user (`read_file`); `InputError` naming it if it is not
    UTF-8, not a regular file or larger than `limit` (an OSError, e.g. a missing file, names the
    file itself)."""
    data = read_file(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise InputError(
            f"{path}:{line}: not UTF-8 text (byte {data[e.start]:#04x} at offset {e.start})"
        ) from None


TABLES = ("packets", "frames", "controller", "links", "feedback")
"""The trace tables every run records (docs/traces.md)."""
BROWSER_TABLES = ("stats", "usage")
"""The tables a browser run records beside them: `getStats()` samples, and CPU and memory."""


def path_component(text: str, what: str) -> str:
    """`text` if it can name one folder inside another: not empty, not `.` or `..`, no `/`, no
    NUL, not hidden (a leading `.` is for temporary folders), at most 200 bytes; `InputError`
    otherwise. Scenario ids are held to a stricter alphabet when they are loaded."""
    bad = (
        not text
        or text in (".", "..")
        or text.startswith(".")
        or "/" in text
        or "\0" in text
        or len(text.encode("utf-8", "surrogateescape")) > 200
    )
    if bad:
        raise InputError(f"{what} {text!r} cannot name a results folder: it must be one path component")
    return text


def controller_folder(controller: str) -> str:
    """The folder name of a controller: built-in names as they are; a Python controller's
    ``module:Class`` with every character other than letters, digits, ``.``, ``-`` and ``_``
    turned into ``.`` (no ``:`` in paths: Windows, scp and URLs read it specially)."""
    return re.sub(r"[^A-Za-z0-9._-]", ".", controller)


def run_dir(out: Path, scenario_id: str, variant_slug: str, controller: str, key: str, seed: int) -> Path:
    """Where one run's results live: one folder per variant, controller and configuration
    (`key`, `rtcbench.identity.run_key`), one per seed inside. Every part is checked to be one
    path component (`path_component`), so a run's folder is always inside `out`."""
    name = scenario_id if variant_slug == "default" else f"{scenario_id}@{variant_slug}"
    path_component(name, "scenario id")
    folder = path_component(controller_folder(controller), "controller name")
    path_component(key, "run key")
    return Path(out) / name / folder / key / f"seed-{int(seed)}"


RUN_FILES = ("summary.json", "scenario.toml", *(f"{name}.parquet" for name in TABLES), "timeseries.parquet")
"""What `rtcbench run` and `rtcbench suite` write into every run folder (figures aside)."""

_SEED_FOLDER = re.compile(r"seed-\d+")


def run_folders(root: Path) -> list[Path]:
    """Every folder under `root` (or `root` itself) that is, or was meant to be, a run: it holds
    one of `RUN_FILES` or is named seed-N (`run_dir`), so an incomplete run is found and can be
    named. Hidden folders are skipped: they are runs still being written (`atomic_dir`). A link
    to a folder below `root` is listed but not followed, so that a reader names it
    (`read_summary(root=...)`: `LINK_READ`) rather than leave it out unseen. Sorted, so the same
    tree always gives the same order."""
    found: list[Path] = []
    for here, dirs, files in os.walk(root):
        folder = Path(here)
        if set(files) & set(RUN_FILES) or (folder != root and _SEED_FOLDER.fullmatch(folder.name)):
            found.append(folder)
            dirs[:] = []
            continue
        visible = sorted(d for d in dirs if not d.startswith("."))
        links = {d for d in visible if (folder / d).is_symlink()}
        found += [folder / d for d in links]
        dirs[:] = [d for d in visible if d not in links]
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
    out (`_core.Run.piece`: numpy arrays, integer codes for categories, -1/NaN for nulls), each
    column decoded as the core's schema says (`rtcbench.tables.SCHEMA`)."""
    codes = raw["codes"]
    link_names = [link["name"] for link in meta["links"]]

    def column(values: np.ndarray[Any, Any], dtype: str, encoding: str) -> Any:
        if encoding == "plain":
            return values
        if encoding == "sentinel":
            return _null_where(values, None if dtype == "float64" else -1)
        if encoding == "link":
            # -1 (no link) becomes the empty name: null.
            return _decode(np.where(values < 0, len(link_names), values), [*link_names, ""])
        return _decode(values, codes[encoding])

    tables = {}
    for name, columns in SCHEMA.items():
        t = raw[name]
        tables[name] = {c: column(t[c], dtype, encoding) for c, dtype, _, encoding in columns}
    # A controller's own columns follow the ones every controller has: a rate or a size is
    # -1 when null, any other number NaN.
    own = {c: v for c, v in raw["controller"].items() if c not in tables["controller"]}
    tables["controller"].update(
        {
            c: (
                _null_where(v, -1)
                if c.endswith(("_bps", "_bytes"))
                else _null_where(v, None)
                if isinstance(v, np.ndarray) and v.dtype.kind == "f"
                else v
            )
            for c, v in own.items()
        }
    )
    return {name: pl.DataFrame(columns) for name, columns in tables.items()}


_COMPRESSION = {"compression": "zstd", "compression_level": 1}


def write_parquet(df: pl.DataFrame, path: Path | BinaryIO) -> None:
    """Writes one results table: zstd at level 1, with column statistics.

    Level 1 rather than polars' default 3: on the RFC 8867 suite it writes about 15 % faster for
    files about 2 % larger (encoding, not compression, is most of the cost).
    """
    df.write_parquet(path, **_COMPRESSION, statistics=True)  # type: ignore[arg-type]


@contextmanager
def atomic_file(final: Path) -> Iterator[BinaryIO]:
    """A new file to write, under a temporary name in `final`'s folder, renamed to `final` when the
    block ends: a reader sees the old file or the new one, never a part, and an error or an
    interrupt removes the temporary file. The temporary file is made with O_CREAT | O_EXCL (by
    `mkstemp`), which fails on anything already there, a link included, and the rename replaces
    a link at `final` rather than writing through it. The file follows the umask, as any other."""
    fd, name = tempfile.mkstemp(
        prefix=f".{final.name}.{_HOST}.{os.getpid()}.", suffix=".tmp", dir=final.parent
    )
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), 0o666 & ~_umask())
            yield fh
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes_atomic(final: Path, data: bytes) -> Path:
    """`data` written to `final` by `atomic_file`. Returns `final`."""
    with atomic_file(final) as fh:
        fh.write(data)
    return final


def write_parquet_atomic(df: pl.DataFrame, final: Path) -> None:
    """`write_parquet` to `final` by `atomic_file`: readers see the old file or the new one, never
    a part, and an interrupted write leaves the old file."""
    with atomic_file(final) as fh:
        write_parquet(df, fh)


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


def regular_file(path: Path) -> Path:
    """`path`, if it is a regular file (or a link to one); `InputError` naming it and saying what
    it is otherwise, before anything opens it. For a results folder's Parquet tables, which may
    be gigabytes: a Parquet reader reads within the size the file has (its footer gives the
    offsets), so only a FIFO or a device, which have no size, could make it block or never end."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise InputError(f"{path}: not a regular file ({_kind(mode)})")
    return path


def table_problem(path: Path, columns: Sequence[str] | None = None) -> str | None:
    """Why the Parquet file `path` (`<table>.parquet` of a run folder: a trace table or
    `timeseries.parquet`) cannot be read as that table, from its footer alone, or None. The one
    check every command that reads a run's tables makes first (`read_table`), so a folder whose
    table was swapped, edited or written by another tool is named in the same line by each."""
    table = path.name.removesuffix(".parquet")
    try:
        schema = dict(pl.read_parquet_schema(regular_file(path)))
    except InputError as e:
        return str(e).removeprefix(f"{path}: ")
    except (OSError, pl.exceptions.PolarsError, pa.ArrowException) as e:
        return f"not a Parquet file rtcbench can read ({type(e).__name__})"
    if table in BROWSER_TABLES:
        return None  # samples the browser gave, read column by column where present
    return schema_problem(table, schema, columns)


def checked_table(path: Path, columns: Sequence[str] | None = None) -> Path:
    """`path`, if `table_problem` finds nothing wrong with it (with `columns`: with the columns a
    reader reads of it); `InputError` naming the file and what is wrong otherwise."""
    if (problem := table_problem(path, columns)) is not None:
        raise InputError(f"{path}: {problem}")
    return path


def read_table(path: Path) -> pl.DataFrame:
    """The table in `path`, checked first (`checked_table`): `InputError` naming the file and
    what is wrong, never a reader's own error from deep inside a metric. One chunk per column, as
    tables made in memory have (float sums follow the chunks)."""
    checked_table(path)
    try:
        return pl.read_parquet(regular_file(path)).rechunk()
    except (pl.exceptions.PolarsError, pa.ArrowException) as e:
        raise InputError(f"{path}: not a Parquet file rtcbench can read ({type(e).__name__})") from None


def load_tables(folder: PathArg) -> Tables:
    """Reads a run folder back into `Tables` (its `meta` comes from `summary.json`); `InputError`
    naming a table that is not what rtcbench writes (`read_table`)."""
    folder = Path(folder)
    summary = read_summary(folder, required=("meta",), verify=False)
    frames = {name: read_table(folder / f"{name}.parquet") for name in TABLES}
    for name in BROWSER_TABLES:
        if (folder / f"{name}.parquet").is_file():
            frames[name] = read_table(folder / f"{name}.parquet")
    return Tables(meta=summary["meta"], **frames)


SUMMARY = "summary.json"
FILES_KEY = "files"
"""The summary's record of every other file of the run folder: its size and SHA-256, so that a
truncated or changed file is found (`verify_files`) and resume runs that run again."""

SUMMARY_KEYS = (
    "scenario", "variant", "controller", "seed", "flows", "phases", "meta",
    "fairness", "feedback_overhead", "cross_traffic",
)  # fmt: skip
"""What every complete summary holds (the suite tables, scorecard, comparison and report read it)."""


def sections(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """A summary's periods (phases cut where a flow sharing the link starts or stops, model
    revision 9), or its phases if it was written before them: the sections `rtcbench run`'s phase
    table and the report's per-section tables show."""
    periods: list[dict[str, Any]] | None = summary.get("periods")
    return periods if periods is not None else list(summary.get("phases", []))


def file_records(folder: Path) -> dict[str, dict[str, Any]]:
    """Size and SHA-256 of every file in a run folder except the summary, by name."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.iterdir()):
        if path.name == SUMMARY or not path.is_file():
            continue
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        out[path.name] = {"bytes": path.stat().st_size, "sha256": digest.hexdigest()}
    return out


def verify_files(folder: Path, summary: dict[str, Any]) -> str | None:
    """What is wrong with the files a summary recorded (missing, truncated, changed), or None
    (also for a summary written before files were recorded: nothing to check against)."""
    recorded = summary.get(FILES_KEY)
    if recorded is None:
        return None
    if not isinstance(recorded, dict):
        return f"{SUMMARY}'s {FILES_KEY!r} is not a table of files"
    for name, rec in sorted(recorded.items()):
        if name in (".", "..", SUMMARY) or "/" in name or "\0" in name:
            return f"{SUMMARY}'s {FILES_KEY!r} names {name!r}, not a file of the run folder"
        path = folder / name
        if not path.is_file():
            return f"{name} is missing"
        size = path.stat().st_size
        written = rec.get("bytes") if isinstance(rec, dict) else None
        if size != written:
            return f"{name} is {size} bytes, {written} were written (truncated or changed)"
    actual = file_records(folder)
    for name, rec in sorted(recorded.items()):
        if actual[name]["sha256"] != rec.get("sha256"):
            return f"{name} differs from what was written (changed or corrupt)"
    return None


def _parse_summary(data: bytes, path: Path) -> dict[str, Any]:
    """The JSON object of a summary, or `InputError` (`documents.parse_json`: bounded in size and
    nesting; NaN and Infinity refused, as rtcbench writes neither)."""
    from rtcbench.documents import parse_json

    try:
        summary = parse_json(data, path, MAX_SUMMARY_BYTES)
    except InputError as e:
        raise InputError(f"{path}: not a complete summary ({str(e).removeprefix(f'{path}: ')})") from None
    if not isinstance(summary, dict):
        raise InputError(f"{path}: not a complete summary (not a JSON object)")
    return summary


# A shape: `int`, `float` (any finite number; `int` is an integer), `str`, `bool`, `None` (null),
# `object` (anything), or a tuple of those (any of them); `[shape]` is a list of that shape; a
# dict is an object with those keys (`key?` may be missing, `*` is the shape of every other key;
# without `*` other keys may hold anything).
_NUMBER = (float, None)
_FLOW = {"id": int, "name": str, "kind": str, "workload?": (str, None), "flags?": [str], "*": _NUMBER}
_SHARES = {
    "covers?": [str], "flows": [{"id": int, "name?": str, "share_ratio": _NUMBER, "*": _NUMBER}],
    "jain_index": _NUMBER, "min_share_ratio": _NUMBER, "max_share_ratio": _NUMBER,
    "within_band": (bool, None), "link?": str, "*": _NUMBER,
}  # fmt: skip
_SUMMARY_SHAPE: dict[str, Any] = {
    "scenario?": str, "variant?": str, "controller?": str, "seed?": int, "mode?": str,
    "identity?": {"key": str, "scenario_sha256": str},
    "provenance?": {"*": (str, bool, None)},
    "simulated_s?": _NUMBER, "wall_s?": _NUMBER, "sim_wall_s?": _NUMBER, "events?": (int, None),
    "flows?": [_FLOW],
    "phases?": [{"index": int, "link": str, "start_s": float, "end_s": float, "capacity_bps": _NUMBER,
                 "flows": [_FLOW]}],
    "periods?": [{"index": int, "link": str, "phase": int, "start_s": float, "end_s": float,
                  "capacity_bps": _NUMBER, "capacity_changed?": bool, "sharing?": [int], "joined?": [int],
                  "left?": [int], "flows": [_FLOW]}],
    "fairness?": {"run": _SHARES, "phases?": [_SHARES], "bottlenecks?": [_SHARES]},
    "feedback_overhead?": {
        "rate_bps": _NUMBER, "share_of_media": _NUMBER,
        "calls": [{"call?": (int, None), "direction": str, "flows?": [int], "rate_bps": _NUMBER,
                   "*": _NUMBER}],
    },
    "cross_traffic?": [{"id": int, "name?": str, "kind?": str, "workload?": (str, None),
                        "bottleneck?": (str, None), "phases?": [{"*": _NUMBER}], "*": _NUMBER}],
    "wifi?": [{"link?": (str, None), "bss?": object, "node?": object, "role?": (str, None), "*": _NUMBER}],
    "lte?": [{"link?": (str, None), "cell?": object, "ue?": object, "direction?": (str, None), "*": _NUMBER}],
    "meta?": {"duration_s": float, "flows": [{"id": int, "kind": str, "name": str}],
              "links?": [{"name": str}]},
    FILES_KEY + "?": {"*": {"bytes": int, "sha256": str}},
}  # fmt: skip
"""What the readers of a summary (suite tables, scorecard, comparison, report) take for granted of
the keys it has, in the notation above: read once by `read_summary`, so that none of them meets
a list where it wants a number. Which keys a summary must have is the reader's `required`."""

_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false", None: "null"}


def _what(value: Any) -> str:
    """What a JSON value is, for errors (never the value itself)."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    return "a string" if isinstance(value, str) else "null"


def _fits(value: Any, shape: Any) -> bool:
    if shape is object:
        return True
    if shape is None:
        return value is None
    if shape is float:
        return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if shape is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, shape)


def _shape_error(value: Any, shape: Any, where: str = "") -> str | None:
    """Where `value` (parsed JSON) differs from `shape` (`_SUMMARY_SHAPE`'s notation) and how,
    first difference only, or None. Only the shape is walked, so a value nested far deeper than
    it costs nothing."""
    at = where or "the summary"
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return f"{at} is {_what(value)}, not an object"
        for key, inner in shape.items():
            name = key.removesuffix("?")
            if key == "*" or (name not in value and key.endswith("?")):
                continue
            if name not in value:
                return f"{at} has no {name!r}"
            if (problem := _shape_error(value[name], inner, f"{where}.{name}".lstrip("."))) is not None:
                return problem
        if "*" in shape:
            listed = {key.removesuffix("?") for key in shape}
            for name, inner_value in value.items():
                if name not in listed:
                    problem = _shape_error(inner_value, shape["*"], f"{where}.{name}".lstrip("."))
                    if problem is not None:
                        return problem
        return None
    if isinstance(shape, list):
        if not isinstance(value, list):
            return f"{at} is {_what(value)}, not a list"
        for i, item in enumerate(value):
            if (problem := _shape_error(item, shape[0], f"{where}[{i}]")) is not None:
                return problem
        return None
    allowed = shape if isinstance(shape, tuple) else (shape,)
    if any(_fits(value, s) for s in allowed):
        return None
    if isinstance(value, float) and any(s is float for s in allowed):
        return f"{at} is not a finite number"
    return f"{at} is {_what(value)}, not {' or '.join(_TYPE_NAMES[s] for s in allowed)}"


def read_summary(
    folder: PathArg,
    *,
    required: tuple[str, ...] = SUMMARY_KEYS,
    verify: bool = True,
    root: Path | None = None,
) -> dict[str, Any]:
    """A run's summary, checked: a regular file of at most `MAX_SUMMARY_BYTES` (`read_file`),
    JSON holding the `required` keys, every key it has of the shape its readers take for granted
    (`_SUMMARY_SHAPE`) and, with `verify`, every file it recorded unchanged (`verify_files`).
    `InputError` naming the folder or file otherwise, so a reader of many runs can name a broken
    one and go on, and a suite runs it again. With `root`, the folder the reader was given, a
    run folder reached through a link below it is one of those (`PlantedLink`, `LINK_READ`)."""
    folder = Path(folder)
    if root is not None:
        unlinked(root, folder, LINK_READ)
    path = folder / SUMMARY
    try:
        data = read_file(path, MAX_SUMMARY_BYTES)
    except FileNotFoundError:
        raise InputError(f"{folder}: no {SUMMARY} (an interrupted or incomplete run)") from None
    except OSError as e:
        raise InputError(f"{path}: {e.strerror or e}") from None
    summary = _parse_summary(data, path)
    lacking = [k for k in required if k not in summary]
    if lacking:
        raise InputError(f"{path}: lacks {', '.join(lacking)} (incomplete, or written by an older rtcbench)")
    if (problem := _shape_error(summary, _SUMMARY_SHAPE)) is not None:
        raise InputError(f"{path}: malformed ({problem})")
    if verify and (problem := verify_files(folder, summary)) is not None:
        raise InputError(f"{folder}: {problem}")
    return summary


def _umask() -> int:
    """This process's umask, read without changing it (Linux reports it in /proc)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_HOST = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())[:40] or "host"
_TMP = re.compile(r"\.(?P<name>.+)\.(?P<host>[A-Za-z0-9-]+)\.(?P<pid>\d+)\.[^.]+\.(?:tmp|old)")
"""Temporary and replaced folders of `atomic_dir`: `.<name>.<host>.<pid>.<random>.tmp|old`."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process
    return True


def remove_stale(parent: Path, name: str | None = None) -> list[Path]:
    """Removes the temporary folders `atomic_dir` left in `parent` (for `name`, or for any name)
    when the process that made them was killed: made on this host by a process that is gone.
    Returns what was removed."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for entry in entries:
        m = _TMP.fullmatch(entry.name)
        if m is None or (name is not None and m["name"] != name) or m["host"] != _HOST:
            continue
        if not _alive(int(m["pid"])) and entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
    return removed


def remove_stale_runs(controller_folder: Path, root: Path) -> list[Path]:
    """`remove_stale` in every configuration folder of one controller (`run_dir`'s `<key>`
    level), and those folders if that leaves them empty: a run killed while it wrote one
    configuration is cleaned up by the next run of any configuration of that controller.
    `PlantedLink` if a folder from below `root` (the results folder) to `controller_folder` is a
    link; a configuration folder that is a link is left alone."""
    unlinked(root, controller_folder)
    removed: list[Path] = []
    try:
        keys = [Path(e.path) for e in os.scandir(controller_folder) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return removed
    for key in keys:
        gone = remove_stale(key)
        removed += gone
        if gone:
            with contextlib.suppress(OSError):
                key.rmdir()
    return removed


def remove_unfinished(runs: Iterable[Path], root: Path, created: Sequence[Path]) -> None:
    """After a batch of runs under `root` stopped on an error (a full disk) or an interrupt:
    removes what it leaves that holds no finished run. That is the temporary folders of its runs
    whose process is gone (a worker killed before its clean-up ended: `remove_stale`), then every
    folder between a run and `root` left empty, then `created` (`root` and the parents made for
    it: `make_parents`) if empty. Finished runs, and anything else in `root`, stay. A run reached
    through a link below `root` is left alone (`unlinked`): what the link points to is not the
    batch's to clean."""

    def own(path: Path) -> bool:
        try:
            unlinked(root, path)
        except PlantedLink:
            return False
        return True

    runs = [run for run in runs if own(run.parent)]
    between: set[Path] = set()
    for run in runs:
        for folder in run.parents:
            if folder == root:
                break
            between.add(folder)
    for key in {run.parent for run in runs}:
        remove_stale(key)
    for folder in [*sorted(between, key=lambda p: len(p.parts), reverse=True), *created]:
        with contextlib.suppress(OSError):
            folder.rmdir()


def make_parents(folder: Path, root: Path | None = None) -> list[Path]:
    """Creates `folder` and its missing parents; returns those it created, deepest first. A file
    where a folder must be is `NotADirectoryError` naming it (mkdir would say "File exists").
    With `root` (the folder the user gave, `folder` inside it), `PlantedLink` before anything is
    made if a folder below `root` on the way, `folder` included, is a link (`unlinked`)."""
    if root is not None:
        unlinked(root, folder)
    created: list[Path] = []
    for p in [folder, *folder.parents]:
        if p.exists():
            if not p.is_dir():
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(p))
            break
        created.append(p)
    folder.mkdir(parents=True, exist_ok=True)
    return created


@contextmanager
def atomic_dir(final: Path, root: Path) -> Iterator[Path]:
    """Yields a temporary folder beside `final` and renames it to `final` on success.

    On an exception (or an interrupt) the temporary folder is removed, with the parents this
    call created if they are empty, and `final` is untouched. A previous result at `final` is
    replaced only once the new one is complete; if that fails, it is put back. Neither the
    temporary folder nor the replaced one (`.tmp`, `.old`) is left behind, on success or
    failure. The folder follows the umask (not `mkdtemp`'s 0700), so colleagues on a shared
    machine can read results. Temporary folders of runs that were killed (SIGKILL, a power cut)
    are removed by the next run of the same folder.

    `root` is the results folder the user gave: a link below it on the way to `final` is
    `PlantedLink` before anything is made (`make_parents`). A link at `final` itself is not a
    run (`run_folders`): it is replaced by the new run, and only the link is removed, never what
    it points to.
    """
    created = make_parents(final.parent, root)
    remove_stale(final.parent, final.name)
    prefix = f".{final.name}.{_HOST}.{os.getpid()}."
    tmp = Path(tempfile.mkdtemp(prefix=prefix, suffix=".tmp", dir=final.parent))
    try:
        os.chmod(tmp, 0o777 & ~_umask())
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        for p in created:
            with contextlib.suppress(OSError):
                p.rmdir()
        raise
    old: Path | None = None
    # The two renames go together: an interrupt between them would leave neither result.
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        if final.is_symlink():
            final.unlink()  # the link itself; rename cannot put a folder over it
        elif final.exists():
            old = Path(tempfile.mkdtemp(prefix=prefix, suffix=".old", dir=final.parent))
            os.replace(final, old)
        os.replace(tmp, final)
    except BaseException:
        if old is not None and not os.path.lexists(final):
            with contextlib.suppress(OSError):
                os.replace(old, final)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
