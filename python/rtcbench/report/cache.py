"""The report's figure cache: a figure drawn once is kept in a run folder, and the next report of
the same runs takes it from there instead of drawing it again.

A figure is stored in a hidden folder (`CACHE_DIR`) of one of the runs it is drawn from, its
"home": a run's own figure in that run's folder, a case's figures in the folder of the case's first
run. So the cache travels with the runs (copying or archiving a suite takes it along), a hidden
folder is never taken for a run (`results.run_folders` skips them), and nothing is written outside
the folders the report was given: a cache folder that is a symbolic link is not read, and `store`
refuses it (`results.PlantedLink`) rather than write or prune through it.

The key of a figure is the SHA-256 of what it is drawn from: the bytes of each run's `summary.json`
(which records the SHA-256 of every trace file, and `results.read_summary` checks those before a
report uses a run), the figure's own parameters (title, labels, flows, values), `FIGURE_VERSION`
and matplotlib's version. A run written again, a changed figure or another matplotlib gives
another key, so a stale figure is never shown; when a figure is stored, older entries of the same
figure id in that home are removed.

The cache is a convenience, never a condition: a read-only results folder (an archive, another
user's suite) or a full disk leaves the figure uncached and the report is written all the same.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import matplotlib

from rtcbench.plots import Rendered
from rtcbench.results import PlantedLink, make_parents, unlinked, write_bytes_atomic

__all__ = ["CACHE_DIR", "FIGURE_VERSION", "figure_key", "load", "store"]

CACHE_DIR = ".report-figures"
FIGURE_VERSION = "3"
"""Raise when the drawing code changes what a figure shows: every cached figure is drawn again."""


_ENTRY = re.compile(r"[0-9a-f]{64}\.(png|svg)")
"""What follows `<figure id>.` in the name of a cache entry."""


def figure_key(kind: str, parameters: Any) -> str:
    """The cache key of a figure of `kind` drawn from `parameters` (JSON-able: titles, labels, each
    run's summary digest, values)."""
    text = json.dumps(
        [FIGURE_VERSION, matplotlib.__version__, kind, parameters], sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _paths(home: Path, fig_id: str, key: str) -> tuple[Path, Path]:
    base = home / CACHE_DIR / f"{fig_id}.{key}"
    return base.with_name(base.name + ".png"), base.with_name(base.name + ".svg")


def load(home: Path, fig_id: str, key: str, *, svg: bool) -> Rendered | None:
    """The cached figure, or None if it is not there (or, with `svg`, lacks its SVG, or the cache
    folder is a link)."""
    png_path, svg_path = _paths(home, fig_id, key)
    try:
        unlinked(home, png_path.parent)
        png = png_path.read_bytes()
        return Rendered(png, svg_path.read_bytes() if svg else None)
    except (OSError, PlantedLink):
        return None


def store(home: Path, fig_id: str, key: str, rendered: Rendered) -> bool:
    """Keeps the figure in `home`'s cache folder (each file written under a temporary name, then
    renamed, so a reader never sees a part) and removes older entries of the same figure id.
    False, and nothing left behind, if the folder cannot be written; `PlantedLink`, and nothing
    written, if it is a link (`results.make_parents`)."""
    png_path, svg_path = _paths(home, fig_id, key)
    try:
        make_parents(png_path.parent, home)  # PlantedLink is not an OSError: it goes up
        if rendered.svg is not None:
            write_bytes_atomic(svg_path, rendered.svg)
        write_bytes_atomic(png_path, rendered.png)
    except OSError:
        return False
    keep = {png_path.name, svg_path.name}
    with contextlib.suppress(OSError):
        for old in png_path.parent.glob(f"{fig_id}.*"):
            if old.name not in keep and _ENTRY.fullmatch(old.name.removeprefix(f"{fig_id}.")):
                old.unlink()
    return True
