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

import _signal  # type: ignore[import-not-found]  # the interpreter's own, loaded before any script; `signal` adds `enum` (4 ms)
import os
import sys

# Until `main` has set its handlers an interrupt ends in Python's traceback, so this module (and
# the package's) imports only what the interpreter has already loaded: `typing`, `contextlib` and
# `types` alone would widen that window by some 8 ms. Type checkers take this name for theirs.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from types import FrameType
    from typing import Any, NoReturn

    import typer

    app: typer.Typer

__all__ = ["app", "main"]

INTERRUPTED = 130


def _stop_while_loading(signum: int, frame: FrameType | None) -> None:
    # Nothing has been started or written yet: say so and go, without unwinding an import.
    os.write(2, b"interrupted: nothing was started\n")
    os._exit(INTERRUPTED)


def main() -> None:
    before = _signal.signal(_signal.SIGINT, _stop_while_loading)
    _signal.signal(_signal.SIGTERM, _stop_while_loading)
    from rtcbench.cli.commands import run_app

    # From here the command's own handlers (`run_app`): each replaces the stand-in directly, so an
    # interrupt is never met by a default action (SIGTERM's kills without a word).
    try:
        run_app(sigint=before)
    except SystemExit as ended:
        if ended.code == INTERRUPTED:
            _leave_interrupted()
        raise


def _leave_interrupted() -> NoReturn:
    # CPython marks an interrupt that came out of `eval` or `exec` of a string as unhandled, even
    # once caught (pythonrun.c, run_eval_code_obj; the next such call clears it), and at exit the
    # interpreter run as `python -m rtcbench.cli` then kills itself with SIGINT instead of
    # returning the status: -2, not 130. Typer evaluates the commands' annotations that way as it
    # builds the app; SIGTERM 3.0-3.6 s into a start on a loaded machine ended so in 5 of 80
    # tries. (The `rtcbench` script exits by another path, which does not look at the mark.) So
    # an answered interrupt leaves here: the exit handlers run and the standard streams are
    # flushed, as at a normal exit, then the process ends with its status. The command has
    # already stopped its workers and joined their threads (`workers.stop`).
    import atexit
    import contextlib

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(INTERRUPTED)


def __getattr__(name: str) -> Any:
    if name == "app":
        from rtcbench.cli.commands import app

        return app
    raise AttributeError(f"module 'rtcbench.cli' has no attribute {name!r}")
