"""A Python controller for an emulated call: run by the media agent (`rtcbench-media`, as its
child, in the sender's namespace) when the call's controller is Python, and driven over a pipe
(docs/emulation.md, "Media").

    python -m rtcbench.emulation._controller_agent CONFIG.json

The configuration names the controller's class (its module, imported by name with the parent's
import path, else from its file as `rtcbench.controller.load_controller` imports files; and its
qualified name). Then one JSON object per line on stdin, one answer per line on stdout:

- first, before any input: ``{"overrides": [...], "feedback": "twcc" | "ccfb"}``, the optional
  methods the class overrides (the agent sends nothing for the others) and the feedback it asks for;
- ``{"m": "start", "now": us, "call": {...}}`` (`CallInfo`'s fields, as the simulator gives them,
  from the call's plan), then ``{"m": "sent", "now": us, "p": [seq, size, sent_us, is_audio,
  data_in_flight, probe]}``,
  ``{"m": "feedback", "now": us, "r": {...}}``, ``{"m": "timeout", "now": us}``: the controller's
  input, answered with ``{"target": T, "pacing": P, "timeout": D}``, what `target_rate`,
  `pacing_rate` and `next_timeout_us` returned (null for a method the class does not override);
- ``{"m": "metrics"}``: answered with ``{"metrics": [[name, value], ...] | null, "r": repr}``,
  null if `metrics()` did not return a dict.

Values go as this helper finds them (`_wire`): the media agent checks them with the simulator's
own checks (`rtcbench_cc::user`), so a controller is held to the same rules, with the same
messages, in both modes. A controller that raises ends the helper with one line on stderr naming
the method, and status 1: the agent reports it after the controller's label.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import operator
import os
import sys
from pathlib import Path
from typing import Any

from rtcbench import _core
from rtcbench.controller import Controller, _load_file

OPTIONAL = ("on_packet_sent", "on_timeout", "next_timeout_us", "pacing_rate", "metrics")


def _overrides(cls: type[Controller]) -> list[str]:
    return [m for m in OPTIONAL if getattr(cls, m) is not getattr(Controller, m)]


def _probe(p: list[int] | None) -> _core.ProbeInfo | None:
    if p is None:
        return None
    return _core.ProbeInfo(cluster_id=p[0], min_probes=p[1], min_bytes=p[2])


def _report(r: dict[str, Any]) -> _core.FeedbackReport:
    packets = [
        _core.PacketResult(
            seq=p[0], size=p[1], sent_us=p[2], arrival_us=p[3], ecn=p[4], is_audio=p[5], probe=_probe(p[6])
        )
        for p in r["packets"]
    ]
    loss = r.get("loss")
    return _core.FeedbackReport(
        packets=packets,
        data_in_flight=r["data_in_flight"],
        loss=None if loss is None else _core.LossReport(**loss),
        rtt_us=r.get("rtt_us"),
        remb_bps=r.get("remb_bps"),
    )


def _wire(v: object) -> object:
    """A returned value as `rtcbench_cc::user::Value` reads it, typed in the order the simulator
    types a Python object (`rtcbench-py`): None, a float, a bool, a str, an int of 64 bits (or
    anything with `__index__`), any other real number (`__float__`), anything else; all but None
    and a plain int carry their `repr` for messages."""
    if v is None:
        return None
    shown = repr(v)
    if isinstance(v, float):
        return {"f": repr(float(v)), "r": shown}
    if isinstance(v, bool):
        return {"b": v, "r": shown}
    if isinstance(v, str):
        return {"s": str(v), "r": shown}
    try:
        i = operator.index(v)  # type: ignore[arg-type]
    except TypeError:
        pass
    else:
        if -(2**63) <= i < 2**63:
            return i if type(v) is int else {"i": i, "r": shown}
    to_float = getattr(type(v), "__float__", None)
    if to_float is None and not isinstance(v, int):
        return {"r": shown}
    try:
        return {"f": repr(float(v)), "r": shown}  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return {"r": shown}


GETTERS = (("target", "target_rate"), ("pacing", "pacing_rate"), ("timeout", "next_timeout_us"))


def _metrics(c: Controller) -> dict[str, object]:
    m = c.metrics()
    pairs = [[_wire(k), _wire(v)] for k, v in m.items()] if isinstance(m, dict) else None
    return {"metrics": pairs, "r": repr(m)}


def controller_class(config: dict[str, Any]) -> type[Controller]:
    """The class the parent process ran, found again here."""
    sys.path[:] = config["sys_path"]
    try:
        module: object = importlib.import_module(config["module"])
    except ImportError:
        if not config.get("file"):
            raise
        module = _load_file(Path(config["file"]))
    obj: Any = module
    for part in config["qualname"].split("."):
        obj = getattr(obj, part)
    if not (isinstance(obj, type) and issubclass(obj, Controller)):
        raise SystemExit(f"{config['module']}:{config['qualname']} is not an rtcbench.Controller subclass")
    return obj


def serve(config: dict[str, Any]) -> None:
    cls = controller_class(config)
    overrides = _overrides(cls)
    controller = cls()
    out = sys.stdout
    out.write(json.dumps({"overrides": overrides, "feedback": getattr(cls, "feedback", "twcc")}) + "\n")
    out.flush()
    method, now = "on_start", 0
    try:
        for line in sys.stdin:
            msg = json.loads(line)
            kind = msg["m"]
            if kind == "metrics":
                method = "metrics"
                out.write(json.dumps(_metrics(controller)) + "\n")
                out.flush()
                continue
            now = msg["now"]
            if kind == "start":
                method = "on_start"
                controller.on_start(_core.CallInfo(**msg["call"]))
            elif kind == "sent":
                method = "on_packet_sent"
                seq, size, sent_us, is_audio, in_flight, probe = msg["p"]
                packet = _core.SentPacket(
                    seq=seq,
                    size=size,
                    sent_us=sent_us,
                    is_audio=is_audio,
                    probe=_probe(probe),
                    data_in_flight=in_flight,
                )
                controller.on_packet_sent(now, packet)
            elif kind == "feedback":
                method = "on_feedback"
                controller.on_feedback(now, _report(msg["r"]))
            else:
                method = "on_timeout"
                controller.on_timeout(now)
            answers: dict[str, object] = {}
            for key, method in GETTERS:
                asked = key == "target" or method in overrides
                answers[key] = _wire(getattr(controller, method)()) if asked else None
            out.write(json.dumps(answers) + "\n")
            out.flush()
    except Exception as e:
        # As the simulator words it (`rtcbench-py`); the agent puts the controller's label first.
        raise SystemExit(f"{method}(now_us={now}) raised {type(e).__qualname__}: {e}") from None


REALTIME_PRIORITY = 1
"""The media agent's SCHED_FIFO priority, which the helper takes too where it may: the agent waits
for each of its answers, so the helper's scheduling is the agent's. At normal priority beside two
busy loops, a sender's deadlines were late by 3.8 ms at p99 and 33 ms at worst (the `fixed` call
at 0.9 of 1 Mbit/s, `PyFixed`), against 0.1-0.4 ms at p99 for the built-in controller."""


def _realtime() -> None:
    """SCHED_FIFO at the agent's priority; without it (not root) the helper runs as it was."""
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(REALTIME_PRIORITY))


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as fh:
        cfg = json.load(fh)
    _realtime()
    serve(cfg)


if __name__ == "__main__":
    main()
