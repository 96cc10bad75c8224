"""The `rtcbench` command line.

User mistakes (unknown scenario or controller, malformed TOML, a bad value) and problems of the
environment (a folder that cannot be written, a full disk, a file that is not UTF-8, a corrupt
result) end with exit status 2 and one line on stderr that says what is wrong and what is allowed;
no traceback. A Python controller that fails (`--cc module:Class`) ends with exit status 1: its
traceback, then one line naming the controller and the method. Ctrl-C, SIGINT or SIGTERM stops any
command within a second, even one started in the background (which inherits SIGINT ignored),
removes what it was writing, and ends with status 130 and one line. Anything else
is a bug and shows its traceback; `--debug` (or `RTCBENCH_DEBUG=1`) shows the traceback of every
error.

This module is small on purpose: `main` makes an interrupt end the process cleanly before anything
heavy is imported (polars, matplotlib, the core: most of the first half second), then loads the
Typer app (`commands`).
"""

from __future__ import annotations

import os
import signal
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer

    app: typer.Typer

__all__ = ["app", "main"]

INTERRUPTED = 130


def _stop_while_loading(signum: int, frame: FrameType | None) -> None:
    # Nothing has been started or written yet: say so and go, without unwinding an import.
    os.write(2, b"interrupted: nothing was started\n")
    os._exit(INTERRUPTED)


def main() -> None:
    before = signal.signal(signal.SIGINT, _stop_while_loading)
    signal.signal(signal.SIGTERM, _stop_while_loading)
    from rtcbench.cli.commands import run_app

    # From here the command's own handlers (`run_app`): each replaces the stand-in directly, so an
    # interrupt is never met by a default action (SIGTERM's kills without a word).
    run_app(sigint=before)


def __getattr__(name: str) -> Any:
    if name == "app":
        from rtcbench.cli.commands import app

        return app
    raise AttributeError(f"module 'rtcbench.cli' has no attribute {name!r}")
