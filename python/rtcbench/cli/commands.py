"""The Typer app of the `rtcbench` command line and how it ends (`run_app`); the commands are in
modules by subject (`run`, `suite`, `calibrate`, `reproduce`, `stacks`, `score`, `compare`, `report`), what
they print in `render`, how they end on an error in `errors`. `rtcbench.cli.main` loads this
module."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import typer
from rich.markup import escape

from rtcbench.cli.calibrate import calibrate_cmd
from rtcbench.cli.compare import compare_cmd
from rtcbench.cli.errors import (
    came_from_interrupt,
    debug_option,
    hear_swallowed_interrupts,
    one_line,
    unanswered_interrupt,
)
from rtcbench.cli.evaluate import evaluate_cmd
from rtcbench.cli.eventlog import eventlog_cmd
from rtcbench.cli.export import export_cmd
from rtcbench.cli.figure import figure_cmd
from rtcbench.cli.render import err_console
from rtcbench.cli.report import report_cmd
from rtcbench.cli.reproduce import reproduce_cmd
from rtcbench.cli.run import list_cmd, run_cmd, table_cmd
from rtcbench.cli.score import score_cmd
from rtcbench.cli.stacks import stacks_cmd
from rtcbench.cli.suite import suite_cmd, sweep_cmd
from rtcbench.workers import INTERRUPTED, interrupt_on_signals

__all__ = ["app", "run_app"]


app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    # `-h` as well as `--help`, on every subcommand (click hands the names down).
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    help="rtcbench: congestion control for real-time media, simulated far faster than real time.",
)


def short_help(command: Callable[..., Any]) -> str:
    """A command's line in `rtcbench --help`: the first sentence of its docstring, on one line.
    Typer would show the docstring's first paragraph with its line breaks, which a terminal wraps
    again: "write one results folder per / variant / and controller"."""
    paragraph = " ".join((command.__doc__ or "").strip().split("\n\n")[0].split())
    depth = 0
    for i, c in enumerate(paragraph):
        depth += {"(": 1, ")": -1}.get(c, 0)
        if depth == 0 and c in ".:" and (i + 1 == len(paragraph) or paragraph[i + 1] == " "):
            return paragraph[:i] + "."
    return paragraph


app.callback()(debug_option)
# In the order `rtcbench --help` lists them.
for name, command in (
    ("list", list_cmd),
    ("run", run_cmd),
    ("table", table_cmd),
    ("suite", suite_cmd),
    ("sweep", sweep_cmd),
    ("calibrate", calibrate_cmd),
    ("reproduce", reproduce_cmd),
    ("stacks", stacks_cmd),
    ("score", score_cmd),
    ("export", export_cmd),
    ("evaluate", evaluate_cmd),
    ("eventlog", eventlog_cmd),
    ("compare", compare_cmd),
    ("report", report_cmd),
    ("figure", figure_cmd),
):
    app.command(name, short_help=short_help(command))(command)


def undecodable(argv: list[str]) -> str | None:
    """The line for the first of `argv` (the words after `rtcbench`) that is not UTF-8, naming the
    option it is the value of (or the argument, by its place), or None. Python hands such bytes
    over as lone surrogates (PEP 383), which every later step (a TOML value, a Parquet column, a
    folder name in the index) would refuse with a traceback, some only after the simulation."""
    for i, arg in enumerate(argv):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError as e:
            raw = os.fsencode(arg)
            shown = raw.decode("utf-8", "backslashreplace")
            bad = raw[len(arg[: e.start].encode("utf-8"))]
            if arg.startswith("--") and "=" in arg:
                what = f"the value of {arg.split('=', 1)[0]}"
                shown = shown.split("=", 1)[1]
            elif arg.startswith("-"):
                what = "an option's name"
            elif i > 0 and argv[i - 1].startswith("-") and "=" not in argv[i - 1]:
                what = f"the value of {argv[i - 1]}"
            else:
                what = f"argument {i + 1}"
            return (
                f"{what}, '{shown}', is not valid UTF-8 (byte 0x{bad:02x}): rtcbench takes options, "
                "scenario names and paths as UTF-8 text"
            )
    return None


def run_app(sigint: object = None) -> None:
    """Runs the command line and exits with its status. `sigint`: the SIGINT handler in force
    before `rtcbench.cli.main` set its own for loading."""
    interrupt_on_signals(sigint)
    hear_swallowed_interrupts()
    if (line := undecodable(sys.argv[1:])) is not None:
        err_console.print(f"[bold red]error:[/] {escape(line)}", highlight=False, soft_wrap=True)
        sys.exit(2)
    try:
        code = app(standalone_mode=False, prog_name="rtcbench")
    except KeyboardInterrupt:
        # Typer answers an interrupt while it parses with status 130 and no word, and one while it
        # builds the app not at all; a command answers its own (`errors.guarded`).
        code = INTERRUPTED
    except typer.TyperException as e:
        # A mistake on the command line (unknown option, a value of the wrong type): one line and
        # where to look, instead of click's box; `rtcbench` alone shows the help.
        format_message = getattr(e, "format_message", None)
        message = str(format_message()) if callable(format_message) else str(e)
        status = int(getattr(e, "exit_code", 2))
        if type(e).__name__ == "NoArgsIsHelpError":
            sys.stderr.write(message + "\n")
            sys.exit(status)
        ctx = getattr(e, "ctx", None)
        where = f" (see {ctx.command_path} --help)" if ctx is not None else ""
        err_console.print(
            f"[bold red]error:[/] {escape(one_line(message))}{where}", highlight=False, soft_wrap=True
        )
        sys.exit(status)
    except typer.Abort:
        err_console.print("aborted", highlight=False)
        sys.exit(1)
    except Exception as e:
        # An error an interrupt caused while the app was built (an import it cut short): the
        # interrupt (`errors.came_from_interrupt`). Anything else is a bug, with its traceback.
        if not came_from_interrupt(e):
            raise
        code = INTERRUPTED
    if code == INTERRUPTED and (line := unanswered_interrupt()):
        err_console.print(line, highlight=False, soft_wrap=True)
    sys.exit(code if isinstance(code, int) else 0)
