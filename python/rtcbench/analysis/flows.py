"""The flows of a run as `meta.flows` lists them: look-up by id, the span each source runs, and
whether a video flow's frames were seen at all."""

from __future__ import annotations

from typing import Any

from rtcbench.tables import _US_PER_S, MEDIA_KINDS, Tables, _duration_us


def _flows(t: Tables) -> list[dict[str, Any]]:
    flows: list[dict[str, Any]] = t.meta["flows"]
    return flows


def _flow(t: Tables, flow: int) -> dict[str, Any]:
    for f in _flows(t):
        if int(f["id"]) == flow:
            return f
    raise KeyError(f"flow {flow} is not in meta.flows (ids: {[f['id'] for f in _flows(t)]})")


def _is_media(f: dict[str, Any]) -> bool:
    return f.get("kind") in MEDIA_KINDS


def active_span_us(f: dict[str, Any], duration_us: int) -> tuple[int, int]:
    """[start, stop) of a flow's source as the scenario set it (`start_s`/`stop_s` of its `meta`
    entry; the whole run for a producer that does not record them), within the run. Rates are
    averaged over this span, not over the run (docs/metrics.md)."""
    start = round(float(f.get("start_s", 0.0)) * _US_PER_S)
    stop = round(float(f["stop_s"]) * _US_PER_S) if f.get("stop_s") is not None else duration_us
    start = min(max(start, 0), duration_us)
    return start, max(start, min(stop, duration_us))


def _clip(start_us: int, end_us: int, a: int, b: int) -> tuple[int, int]:
    """[start_us, end_us) ∩ [a, b), as an empty interval at its start if they do not meet."""
    s = max(start_us, a)
    return s, max(s, min(end_us, b))


def _frames_seen(t: Tables, flow: int) -> bool:
    """Whether a video flow's frames were seen at all: in the frames table, or counted by its
    receiving browser. A browser run cannot see the frames an SFU receives (`meta.unobserved`
    has `frames`, and the SFU reports nothing): its frame metrics are None, not 0."""
    return not t.unobserved("frames") or _counted_frames(t, flow)


def _counted_frames(t: Tables, flow: int) -> bool:
    """Whether a video flow's frames are those its browser counted (`stats`): it recorded no
    frame rows, and its receiver reported."""
    return t._counted.has(flow) and t._by_flow.captured.between(flow, 0, _duration_us(t) + 1).height == 0
