"""How a command ends on an error: one line and status 2 for a user or environment error, the
controller's traceback and status 1 for a failing Python controller, one line and status 130 for an
interrupt; any other exception is a bug and keeps its traceback (`rtcbench.cli`)."""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Annotated, ParamSpec

import typer
from rich.markup import escape

from rtcbench import _core
from rtcbench.cli.render import err_console
from rtcbench.controller import ControllerError
from rtcbench.results import InputError
from rtcbench.runner import TraceTooLarge, UnknownController
from rtcbench.scenarios import ScenarioNotFound
from rtcbench.testbed import TestbedError

USER_ERRORS = (ScenarioNotFound, UnknownController, _core.ScenarioError, TraceTooLarge, TestbedError)

_DEBUG = os.environ.get("RTCBENCH_DEBUG") == "1"
"""Show the traceback of every error (`--debug`, or `RTCBENCH_DEBUG=1` in the environment)."""


def _print_version(value: bool) -> None:
    if value:
        import rtcbench
        from rtcbench.identity import MODEL_REVISION

        typer.echo(f"rtcbench {rtcbench.__version__} (model revision {MODEL_REVISION})")
        raise typer.Exit()


def debug_option(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show the traceback of every error (also RTCBENCH_DEBUG=1).")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print rtcbench's version and model revision (part of every run key) and exit.",
            callback=_print_version,
            is_eager=True,
        ),
    ] = False,
) -> None:
    # The app's callback (`rtcbench --debug COMMAND`, `rtcbench --version`), registered by
    # `rtcbench.cli`.
    global _DEBUG
    _DEBUG = _DEBUG or debug


def one_line(message: str) -> str:
    """`message` as one line: a line break that user text brought in (a `--set` value, a file
    name) is shown as `\\n`, as the scenario loader shows one inside a value."""
    return message.replace("\r", "\\r").replace("\n", "\\n")


def _fail(message: str, status: int = 2) -> None:
    err_console.print(f"[bold red]error:[/] {escape(one_line(message))}", highlight=False, soft_wrap=True)
    raise typer.Exit(status)


def os_error_message(e: OSError) -> str:
    """One line for an error of the operating system: the file(s) and what went wrong."""
    what = e.strerror or str(e)
    if e.filename is not None and e.filename2 is not None:
        return f"{e.filename} → {e.filename2}: {what}"
    if e.filename is not None:
        return f"{e.filename}: {what}"
    return what


_P = ParamSpec("_P")

_stage = "before"
"""Where the command is: "before" it began, "running", "told" (it answered an interrupt), "after"."""


def unanswered_interrupt() -> str:
    """The line for an interrupt no command answered: one that came while the command line was
    parsed or the app built (nothing had started), or after the command finished. `run_app` prints
    it; "" when the command itself answered."""
    if _stage == "told":
        return ""
    if _stage == "after":
        return "interrupted: after the command had finished"
    return "interrupted: nothing was started"


_REDELIVER_S = 0.05
"""How long after an interrupt a finalizer swallowed it is delivered again (`hear_swallowed_interrupts`)."""


def hear_swallowed_interrupts() -> None:
    """Makes an interrupt that lands inside a finalizer or a callback from C stop the command all
    the same. Python runs a signal's handler between two bytecodes of the main thread, which may be
    inside a weakref's callback (seen: SIGTERM 1.2 s into `figure`, as matplotlib's objects were
    collected); the KeyboardInterrupt cannot propagate from there, so Python printed "Exception
    ignored in" with a traceback and the command ran on to status 0. Here such an interrupt is
    delivered again a moment later, from another thread, unless the command answered one
    meanwhile (an interrupt already unwinding can be reported this way too) or has finished;
    either way nothing is printed for it. A command's workers do the same
    (`workers._take_swallowed_interrupts`)."""
    default = sys.unraisablehook
    if getattr(default, "hears_interrupts", False):
        return  # already (the command line run again in one process, as the tests do)
    main = threading.main_thread().ident

    def again() -> None:
        if _stage in ("before", "running") and main is not None:
            signal.pthread_kill(main, signal.SIGINT)

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        if not issubclass(unraisable.exc_type, KeyboardInterrupt):
            default(unraisable)
            return
        while True:  # an interrupt landing here too would be lost in turn
            try:
                timer = threading.Timer(_REDELIVER_S, again)
                timer.daemon = True
                timer.start()
                return
            except KeyboardInterrupt:
                continue

    hook.hears_interrupts = True  # type: ignore[attr-defined]
    sys.unraisablehook = hook


def came_from_interrupt(e: BaseException) -> bool:
    """Whether `e` is an interrupt, or an error raised while one was unwinding (the interrupt is
    its cause or context): an extension module whose initialisation the interrupt cut short fails
    its import as "initialization failed" (pybind11's, matplotlib's among them: once in about 80
    SIGTERMs one second into `report`); a `finally` or `__exit__` that fails on the half-made state
    the interrupt left (matplotlib's PDF writer, in `tests/test_interrupt_trials.py`)."""
    seen: set[int] = set()
    at: BaseException | None = e
    while at is not None and id(at) not in seen:
        if isinstance(at, KeyboardInterrupt):
            return True
        seen.add(id(at))
        at = at.__cause__ or at.__context__
    return False


def guarded(interrupted: str) -> Callable[[Callable[_P, None]], Callable[_P, None]]:
    """Makes a command answer an interrupt with `interrupted` (one line, status 130), a user or
    environment error with one line (status 2), a failing Python controller with its traceback
    and one line (status 1); other exceptions are bugs and keep their traceback. `interrupted` may
    name the command's `{out}` option."""

    def wrap(command: Callable[_P, None]) -> Callable[_P, None]:
        @functools.wraps(command)
        def run(*args: _P.args, **kwargs: _P.kwargs) -> None:
            global _stage
            _stage = "running"
            try:
                try:
                    command(*args, **kwargs)
                except typer.Exit:
                    raise
                except Exception as e:
                    # An error an interrupt caused is the interrupt: a library's clean-up that
                    # fails on the state the interrupt left (matplotlib's PDF writer: "'Stream'
                    # object has no attribute 'pos'", SIGINT 1.1 s into `figure`), an import it
                    # cut short.
                    if came_from_interrupt(e):
                        raise KeyboardInterrupt from e
                    raise
                _stage = "after"
            except KeyboardInterrupt:
                _stage = "told"
                message = interrupted.format(out=kwargs.get("out") or "the results folder")
                err_console.print(
                    escape(one_line(f"interrupted: {message}")), highlight=False, soft_wrap=True
                )
                raise typer.Exit(130) from None
            except typer.Exit:
                raise
            except ControllerError as e:
                if _DEBUG:
                    raise
                _controller_failed(e)
            except (*USER_ERRORS, InputError) as e:
                if _DEBUG:
                    raise
                _fail(str(e))
            except OSError as e:
                if _DEBUG:
                    raise
                _fail(os_error_message(e))

        return run

    return wrap


def _controller_failed(e: ControllerError) -> None:
    """A Python controller's exception: where it was raised in the controller's code, then one line."""
    if e.__cause__ is not None:
        sys.stderr.write("".join(traceback.format_exception(e.__cause__)))
    _fail(str(e), status=1)
