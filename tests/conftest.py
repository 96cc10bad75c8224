"""Shared fixtures: runs are cached per session, since a scenario run is a pure function of
(scenario, controller, seed) and several tests look at the same one."""

from __future__ import annotations

import functools
import os
import signal
import sys
from collections.abc import Callable

import pytest

import rtcbench
from rtcbench.runner import RunResult

# The tests do not depend on how pytest was started: `make test > log 2>&1 &` starts it with SIGINT
# ignored, and then neither the tests that interrupt this process nor the commands it starts (which
# would inherit SIGINT ignored) could be interrupted. The command line restores SIGINT itself
# (`workers.interrupt_on_signals`), and tests/test_interrupts.py checks that with SIGINT ignored.
if not callable(signal.getsignal(signal.SIGINT)):
    signal.signal(signal.SIGINT, signal.default_int_handler)
# Nor on the terminal it was started from: the commands the tests start write to pipes, 120
# columns wide unless COLUMNS says otherwise (`rtcbench.cli.render`); a test that wants another
# width sets it. GNU readline, which pytest loads, sets COLUMNS and LINES in the process's own
# environment (80 x 24 without a terminal) without os.environ knowing: unset both there too.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)
    os.unsetenv(_name)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """A failure or error named with its reason the moment it happens, not only in the summary
    at the end: a tier that dies before its summary (a full disk, a killed process) still says
    what went wrong first."""
    if not report.failed:
        return
    crash = getattr(report.longrepr, "reprcrash", None)
    reason = crash.message if crash is not None else report.longreprtext.strip()
    first = reason.splitlines()[0] if reason else "(no message)"
    sys.stderr.write(f"\n{report.when.upper()} FAILED {report.nodeid}: {first[:300]}\n")


@functools.lru_cache(maxsize=8)
def _run(scenario: str, controller: str, seed: int, sets: tuple[str, ...]) -> tuple[RunResult, ...]:
    # Bounded: every run is held in memory with its tables, and a session that ran every built-in
    # scenario held them all (test_snapshots.py alone peaked at 13.7 GB of the machine's 24; 6 GB
    # with the last 4 held, 9 GB with 24). A module's tests ask for the same runs one after
    # another, so the last few suffice.
    return tuple(rtcbench.run(scenario, controller, seed, sets=sets, figure=False))


@pytest.fixture(scope="session")
def simulate() -> Callable[..., tuple[RunResult, ...]]:
    """`simulate(scenario, controller="gcc", seed=1, sets=())`: every variant's result, cached."""

    def go(
        scenario: str, controller: str = "gcc", seed: int = 1, sets: tuple[str, ...] = ()
    ) -> tuple[RunResult, ...]:
        return _run(scenario, controller, seed, tuple(sets))

    return go
