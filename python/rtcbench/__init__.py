"""rtcbench: a laboratory for congestion control of real-time media.

The simulator core is Rust (`rtcbench._core`); this package is the front end: scenarios, runs,
metrics computed from trace tables, figures and the `rtcbench` command line. Controllers can also
be written in Python (`Controller`, docs/controllers/python.md), or learnt: `rtcbench.env` is a
gymnasium environment over any scenario (the ``gym`` extra, docs/env.md; not imported here).

    >>> import rtcbench
    >>> [r.summary["flows"][0]["utilization"] for r in rtcbench.run("rfc8867-5.1", "gcc")]  # doctest: +SKIP

The names below are imported on first use (PEP 562), so that `import rtcbench` is cheap: the
command line installs its interrupt handling before polars, matplotlib and the core are loaded,
and a Ctrl-C in that second ends as cleanly as one later (docs/cli.md).
"""

from __future__ import annotations

import importlib

# Not `typing.TYPE_CHECKING`: importing `typing` takes some 7 ms, most of what `import rtcbench`
# costs, and the command line cannot answer an interrupt until this module and `rtcbench.cli`
# are loaded (docs/cli.md, "Interrupts"). Type checkers take this name for theirs.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any

    from rtcbench._core import ScenarioError
    from rtcbench.analysis import summarize, timeseries
    from rtcbench.compare import load_runs
    from rtcbench.controller import (
        CallInfo,
        Controller,
        ControllerError,
        ControllerNotFound,
        FeedbackReport,
        LossReport,
        PacketResult,
        ProbeInfo,
        SentPacket,
    )
    from rtcbench.results import load_tables, read_summary
    from rtcbench.runner import RunResult, UnknownController, controllers, run, run_variant
    from rtcbench.scenarios import ScenarioNotFound, Variant, builtin, resolve
    from rtcbench.tables import Tables

    __version__: str

# Each public name and the module that defines it.
_HOME = {
    "ScenarioError": "rtcbench._core",
    "summarize": "rtcbench.analysis",
    "timeseries": "rtcbench.analysis",
    "load_runs": "rtcbench.compare",
    **dict.fromkeys(
        [
            "CallInfo",
            "Controller",
            "ControllerError",
            "ControllerNotFound",
            "FeedbackReport",
            "LossReport",
            "PacketResult",
            "ProbeInfo",
            "SentPacket",
        ],
        "rtcbench.controller",
    ),
    "load_tables": "rtcbench.results",
    "read_summary": "rtcbench.results",
    **dict.fromkeys(
        ["RunResult", "UnknownController", "controllers", "run", "run_variant"], "rtcbench.runner"
    ),
    **dict.fromkeys(["ScenarioNotFound", "Variant", "builtin", "resolve"], "rtcbench.scenarios"),
    "Tables": "rtcbench.tables",
}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value: Any = importlib.import_module("rtcbench._core").version()
    elif name in _HOME:
        value = getattr(importlib.import_module(_HOME[name]), name)
    else:
        raise AttributeError(f"module 'rtcbench' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOME, "__version__"])


__all__ = [
    "CallInfo",
    "Controller",
    "ControllerError",
    "ControllerNotFound",
    "FeedbackReport",
    "LossReport",
    "PacketResult",
    "ProbeInfo",
    "RunResult",
    "ScenarioError",
    "ScenarioNotFound",
    "SentPacket",
    "Tables",
    "UnknownController",
    "Variant",
    "builtin",
    "controllers",
    "load_runs",
    "load_tables",
    "read_summary",
    "resolve",
    "run",
    "run_variant",
    "summarize",
    "timeseries",
]
