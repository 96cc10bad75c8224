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
  input, answered with ``{"target": bps, "pacing": bps | null, "timeout": us | null}``;
- ``{"m": "metrics"}``: answered with ``{"metrics": [[name, value], ...]}``.

A controller that raises, or answers what a run cannot use, ends the helper with one line on
stderr naming the method, and status 1: the agent reports it.
"""

from __future__ import annotations

import importlib
import json
import math
import sys
from pathlib import Path
from typing import Any

from rtcbench import _core
from rtcbench.controller import Controller, _load_file

OPTIONAL = ("on_packet_sent", "on_timeout", "next_timeout_us", "pacing_rate", "metrics")


class Failed(Exception):
    """The controller failed; the message is the line the agent reports."""


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


def _rate(value: object, method: str, optional: bool) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 1:
        raise Failed(f"{method}() returned {value!r}: a rate is a finite number of bit/s, at least 1")
    return float(value)


def _answers(c: Controller, overrides: list[str]) -> dict[str, Any]:
    target = _rate(c.target_rate(), "target_rate", False)
    pacing = _rate(c.pacing_rate(), "pacing_rate", True) if "pacing_rate" in overrides else None
    timeout = c.next_timeout_us() if "next_timeout_us" in overrides else None
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int)):
        raise Failed(f"next_timeout_us() returned {timeout!r}: an integer of microseconds, or None")
    return {"target": target, "pacing": pacing, "timeout": timeout}


def _metrics(c: Controller) -> list[list[Any]]:
    m = c.metrics()
    if not isinstance(m, dict):
        raise Failed(f"metrics() returned {type(m).__name__}: a dict of str to float or None")
    out = []
    for k, v in m.items():
        if not isinstance(k, str) or not (v is None or isinstance(v, int | float)) or isinstance(v, bool):
            raise Failed(f"metrics() has {k!r}: {v!r}: names are str and values float or None")
        out.append([k, None if v is None or not math.isfinite(v) else float(v)])
    return out


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
    label = f"{config['module']}:{config['qualname']}"
    cls = controller_class(config)
    overrides = _overrides(cls)
    controller = cls()
    out = sys.stdout
    out.write(json.dumps({"overrides": overrides, "feedback": getattr(cls, "feedback", "twcc")}) + "\n")
    out.flush()
    method = "on_start"
    try:
        for line in sys.stdin:
            msg = json.loads(line)
            kind = msg["m"]
            if kind == "metrics":
                method = "metrics"
                out.write(json.dumps({"metrics": _metrics(controller)}) + "\n")
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
            method = "target_rate"
            out.write(json.dumps(_answers(controller, overrides)) + "\n")
            out.flush()
    except Failed as e:
        raise SystemExit(f"{label}: {e}") from None
    except Exception as e:
        raise SystemExit(f"{label}: {method} raised {type(e).__name__}: {e}") from None


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as fh:
        serve(json.load(fh))


if __name__ == "__main__":
    main()
