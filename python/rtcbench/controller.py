"""Congestion controllers written in Python, run by the simulator like the built-in ones.

Subclass `Controller`, then run it with ``rtcbench.run(scenario, controller=MyController)`` or
``rtcbench run SCENARIO --cc package.module:MyController`` (docs/controllers/python.md).

The simulator drives a Python controller through the same sans-IO interface as the Rust ones
(`rtcbench_cc::Controller`): inputs with the current time, decisions read back from getters.
Units are those of the trace tables: times are integer microseconds on the simulation's clock
(``now_us``, ``sent_us``, ``arrival_us``), sizes are bytes and rates bit/s.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import os
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

from rtcbench._core import (
    CallInfo,
    ControllerError,
    FeedbackReport,
    LossReport,
    PacketResult,
    ProbeInfo,
    SentPacket,
)

__all__ = [
    "CallInfo",
    "Controller",
    "ControllerError",
    "ControllerLike",
    "ControllerNotFound",
    "FeedbackReport",
    "LossReport",
    "PacketResult",
    "ProbeInfo",
    "SentPacket",
    "UnknownController",
    "UserController",
    "controller_class",
    "load_controller",
    "user_controller",
]


class Controller(ABC):
    """A congestion controller for one media sender (all its streams share it).

    The simulator builds one instance per call and calls, in simulated time:

    1. `on_start` once, before anything else;
    2. `on_packet_sent` for every RTP packet that leaves the sender (media and padding; not RTCP),
       `on_feedback` for every feedback message the sender parses, and `on_timeout` once the
       deadline of `next_timeout_us` has come;
    3. after any of these, the getters `target_rate`, `pacing_rate`, `next_timeout_us` and, at
       most every 10 ms, `metrics`.

    Getters must not change the controller's state: the simulator asks them again only after an
    input and may ask them in any order. Methods a subclass does not override are not called at
    all, so a controller that needs no per-packet input costs nothing per packet.

    A run is a pure function of (scenario, controller, seed): draw random numbers from
    ``random.Random(call.seed)``, never from the global generator or the clock.
    """

    feedback: ClassVar[Literal["twcc", "ccfb"]] = "twcc"
    """The per-packet feedback the receiver sends: ``"twcc"`` (transport-wide feedback, as libwebrtc)
    or ``"ccfb"`` (RFC 8888, which also carries each packet's ECN field). Both arrive as
    `FeedbackReport`s; the interval is the scenario's (`feedback.twcc_interval`,
    `feedback.ccfb_interval`; 50 ms by default)."""

    def on_start(self, call: CallInfo) -> None:  # noqa: B027 (an optional hook)
        """The call starts: its index, start time, rate limits (totals over its streams, bit/s),
        priority and a seed for the controller's random draws."""

    def on_packet_sent(self, now_us: int, packet: SentPacket) -> None:  # noqa: B027
        """A packet left the sender (media, padding or probe; RTCP is not reported)."""

    @abstractmethod
    def on_feedback(self, now_us: int, report: FeedbackReport) -> None:
        """Feedback arrived: per-packet results (transport-wide feedback or RFC 8888), or a
        receiver report's loss and RTT, or a REMB rate."""

    def on_timeout(self, now_us: int) -> None:  # noqa: B027
        """The deadline returned by `next_timeout_us` has come."""

    def next_timeout_us(self) -> int | None:
        """When the controller next wants `on_timeout` (microseconds, no earlier than the last
        input's ``now_us``); None if never."""
        return None

    @abstractmethod
    def target_rate(self) -> float:
        """The rate the media encoders should produce in total, bit/s (at least 1), counting
        bytes on the wire as every rate in rtcbench does."""

    def pacing_rate(self) -> float | None:
        """The rate the pacer releases packets at, bit/s; None for the default, 2.5 × target."""
        return None

    def metrics(self) -> dict[str, float | None]:
        """Internal state for the ``controller`` trace table: name → value, the same names in the
        same order on every call. A name ending in ``_bps`` is stored as integer bit/s and one
        ending in ``_bytes`` as integer bytes, as the built-in controllers' rates and sizes are;
        any other name (``_ms`` for durations) as a float. None is null."""
        return {}


ControllerLike = Controller | type[Controller] | Callable[[], Controller]
"""What `rtcbench.run` accepts as a Python controller: a `Controller` subclass, a function of no
arguments that returns a `Controller`, or an instance (see `user_controller`)."""


@dataclass(frozen=True)
class UserController:
    """A Python controller as a run needs it: the name the trace gives it, ``make(call, calls)``,
    which returns the controller of call ``call`` out of ``calls``, and what it was made from (the
    class, function or instance the user gave), from which `rtcbench.identity` tells two
    controllers of one name apart."""

    name: str
    make: Callable[[int, int], Controller]
    origin: object = None


def _name(obj: object) -> str:
    module = getattr(obj, "__module__", None) or "__main__"
    qualname = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return f"{module}:{qualname}"


def user_controller(controller: ControllerLike, *, share_instance: bool = True) -> UserController:
    """How a run builds a Python controller for each of its calls.

    A class or a function of no arguments is called once per call. An instance is used as it is
    when the run has a single call (so its state can be inspected afterwards), unless
    ``share_instance`` is False; otherwise every call gets a `copy.deepcopy` of it, taken before
    the run starts. `rtcbench.run` passes ``share_instance=False`` for a scenario with several
    variants, so that every variant starts from the instance as it was given.

    The trace names the controller ``module:QualifiedName`` of its class or function.
    """
    if isinstance(controller, Controller):
        instance = controller
        prototype = instance if share_instance else copy.deepcopy(instance)

        def from_instance(call: int, calls: int) -> Controller:
            if share_instance and calls == 1:
                return instance
            return copy.deepcopy(prototype)

        return UserController(_name(type(instance)), from_instance, prototype)
    if callable(controller):
        factory = controller
        return UserController(_name(factory), lambda call, calls: factory(), factory)
    raise TypeError(
        f"a controller is a built-in name, an rtcbench.Controller subclass, an instance of one or a "
        f"function that returns one; got {controller!r}"
    )


class UnknownController(ValueError):
    """A controller name that is not built in."""


class ControllerNotFound(UnknownController):
    """A ``module:Class`` or ``file.py:Class`` that cannot be imported or is not a controller."""


def _load_file(path: Path) -> object:
    """Imports a Python file as the module named by its stem (once per file and process)."""
    name = path.stem
    loaded = sys.modules.get(name)
    if loaded is not None:
        if Path(getattr(loaded, "__file__", "") or "").resolve() == path.resolve():
            return loaded
        raise ControllerNotFound(f"cannot import {str(path)!r}: a module named {name!r} is already imported")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ControllerNotFound(f"cannot import {str(path)!r} as a Python module")
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs, as an import would: dataclasses and pickling look it up.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load_controller(spec: str) -> UserController:
    """The controller class named by ``package.module:Class`` (imported from the current directory
    or the installed packages, as ``python -m`` would) or ``path/to/file.py:Class`` (imported as the
    module named by the file's stem), built once per call. Traces name it ``package.module:Class``,
    or ``stem:Class`` for a file. Raises `ControllerNotFound`, naming what is wrong."""
    module_name, cls = _import(spec)
    return UserController(f"{module_name}:{spec.rpartition(':')[2]}", lambda call, calls: cls(), cls)


def controller_class(spec: str) -> type[Controller]:
    """The class `load_controller` would run, for ``package.module:Class`` or
    ``path/to/file.py:Class``."""
    return _import(spec)[1]


def _import(spec: str) -> tuple[str, type[Controller]]:
    target, sep, attr = spec.rpartition(":")
    if not sep or not target or not attr:
        raise ControllerNotFound(
            f"{spec!r} is not a controller: expected a built-in name, package.module:Class or "
            f"path/to/file.py:Class"
        )
    try:
        if target.endswith(".py") or os.sep in target or "/" in target:
            path = Path(target)
            if not path.is_file():
                raise ControllerNotFound(f"cannot import controller {spec!r}: no file {target!r}")
            module = _load_file(path)
            module_name = path.stem
        else:
            if os.getcwd() not in sys.path and "" not in sys.path:
                # A console script does not search the current directory; `python -m` does.
                sys.path.append(os.getcwd())
            module = importlib.import_module(target)
            module_name = target
    except ControllerNotFound:
        raise
    except Exception as e:
        raise ControllerNotFound(f"cannot import controller {spec!r}: {type(e).__name__}: {e}") from e
    cls = getattr(module, attr, None)
    if not (isinstance(cls, type) and issubclass(cls, Controller)):
        found = "nothing" if cls is None else repr(cls)
        raise ControllerNotFound(
            f"{spec!r} is not a controller: {module_name}.{attr} is {found}, "
            "not an rtcbench.Controller subclass"
        )
    if getattr(cls, "__abstractmethods__", None):
        missing = ", ".join(sorted(cls.__abstractmethods__))
        raise ControllerNotFound(f"{spec!r} is not a controller: it does not implement {missing}")
    return module_name, cls
