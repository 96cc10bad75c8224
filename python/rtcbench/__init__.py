"""rtcbench: a laboratory for congestion control of real-time media.

The simulator core is Rust (`rtcbench._core`); this package is the front end: scenarios, runs,
metrics computed from trace tables, figures and the `rtcbench` command line. Controllers can also
be written in Python (`Controller`, docs/controllers/python.md), or learnt: `rtcbench.env` is a
gymnasium environment over any scenario (the ``gym`` extra, docs/env.md; not imported here).

    >>> import rtcbench
    >>> [r.summary["flows"][0]["utilization"] for r in rtcbench.run("rfc8867-5.1", "gcc")]  # doctest: +SKIP
"""

from rtcbench._core import ScenarioError
from rtcbench._core import version as _core_version
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

__version__: str = _core_version()

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
