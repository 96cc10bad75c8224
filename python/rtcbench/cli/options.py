"""What the options of several commands share: their help and the parsing of list options."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from rtcbench.cli.errors import _fail
from rtcbench.cli.render import err_console
from rtcbench.workers import cpus

CC_HELP = (
    "Controllers, comma-separated: gcc, gcc-draft, nada, scream, scream2, fixed, learned policies as "
    "onnx:path/to/model.onnx, or Python controller classes as package.module:Class or "
    "path/to/file.py:Class."
)

LABELS_HELP = "Comma-separated or repeated"

MODE_HELP = (
    "simulate (rtcbench's simulator); emulate: real packets between Linux network namespaces, in "
    "real time (needs root; docs/emulation.md); or browser: the calls between real Chromium peers "
    "over such a network (needs root and Chromium, --cc gcc, or scream2 for Chromium's L4S mode; "
    "docs/browser.md); or gstreamer: emulated, "
    "each sender encoding real video with GStreamer (vp8enc or x264enc; docs/gstreamer.md)."
)

BatchMode = Annotated[
    str, typer.Option("--mode", help=MODE_HELP + " Emulated runs run one at a time, or one per Ray node.")
]
"""`--mode` of the commands that run many runs (`suite`, `sweep`, `evaluate`)."""


JOBS_HELP = "default, and at most: one per CPU"


def check_jobs(jobs: int | None) -> None:
    """`--jobs`: at least 1 (exit 2 otherwise); above the CPUs this process may use, one line of
    warning, and the command runs one worker per CPU (`workers.worker_count`)."""
    if jobs is None:
        return
    if jobs < 1:
        _fail(f"--jobs must be at least 1, got {jobs}")
    if jobs > cpus():
        err_console.print(
            escape(
                f"warning: --jobs {jobs}: this process may use {cpus()} CPU(s); running {cpus()} "
                "at a time (more would only compete for the cores and memory)"
            ),
            highlight=False,
            soft_wrap=True,
        )


def _controller_list(cc: str) -> list[str]:
    """`--cc` as a list: comma-separated, each once, none empty; exit 2 otherwise."""
    names = [c.strip() for c in cc.split(",")]
    if not all(names):
        _fail(f"--cc {cc!r}: an empty controller name (give names separated by commas)")
    dupes = sorted({c for c in names if names.count(c) > 1})
    if dupes:
        _fail(f"--cc {cc!r}: names {', '.join(dupes)} more than once")
    return names


def _listed_option(values: list[str] | None) -> list[str] | None:
    """A list option given comma-separated, repeated, or both (`--labels a,b`, `--labels a
    --labels b`), as one list; None when not given."""
    if not values:
        return None
    return [part.strip() for v in values for part in v.split(",")]


RAY_CALLS_HELP = (
    "Spread the runs over the Ray cluster at this address ('auto': the one this machine joined): "
    "each node runs whole calls in its own namespaces, as many at a time as its rtcbench-emulation "
    "resource allows; every node needs rtcbench, root, the browsers and OUT at the same path "
    "(docs/reproduction.md, 'On a cluster')."
)
"""`--ray` of the commands that run real-time calls: `reproduce`, `calibrate`, `stacks`."""
