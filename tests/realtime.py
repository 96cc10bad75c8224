"""What a test of a real-time run (`--mode emulate`, `gstreamer`, `browser`) asserts before its
numeric bands: that the run kept its timing (docs/emulation.md, "Timing and validity"). A run
whose relay, agents, encoders or browsers fell behind measured the machine as much as the
scenario, so its numbers would fail a band for a reason the band cannot name; this fails first,
with the run's own reasons (which process was late, by how much, against which goal).

    (run,) = rtcbench.run(scenario, "fixed", 1, out, mode=EMULATE)
    assert_valid(run)
"""

from __future__ import annotations

from typing import Any

import pytest

from rtcbench.identity import TESTBED_INFO
from rtcbench.runner import RunResult
from rtcbench.testbed.timing import invalid_line


def assert_valid(run: RunResult | dict[str, Any]) -> None:
    """Fails the test, naming the late processes, unless the real-time run (a result or its
    summary) kept its timing."""
    __tracebackhide__ = True
    summary = run.summary if isinstance(run, RunResult) else run
    mode = summary["mode"]
    assert mode in TESTBED_INFO, f"not a real-time run: mode {mode!r}"
    why = invalid_line(summary[TESTBED_INFO[mode]])
    if why is not None:
        where = f"{summary['scenario']} ({mode}, {summary['controller']}, seed {summary['seed']})"
        pytest.fail(f"{where}: {why}", pytrace=False)
