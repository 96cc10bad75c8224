"""Behaviour of `scream2` (SCReAM v2, draft-ietf-ccwg-rfc8298bis-screamv2-01) on RFC 8867 §6.2 with
L4S marking (media ECT(1), step marker at 1 ms: the L4S response) and on §5.1 without ECN (the
delay-based response, virtual L4S marking), seed 1, 50 ms one way. Bands are the measured values
with a margin; docs/controllers/scream2.md has the numbers and the reasons."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rtcbench.runner import RunResult

Simulate = Callable[..., tuple[RunResult, ...]]


def _flow(r: RunResult, name: str) -> dict[str, Any]:
    return next(f for f in r.summary["flows"] if f["name"].endswith(name))


def _phase_video(r: RunResult) -> list[dict[str, Any]]:
    """Per capacity phase: the phase's start, capacity and its video flow's statistics."""
    out = []
    for p in r.summary["phases"]:
        v = next(f for f in p["flows"] if f["kind"] == "video")
        out.append({"start_s": p["start_s"], "capacity_bps": p["capacity_bps"], **v})
    return out


def test_l4s_mode_keeps_the_queue_at_the_paths_jitter_and_follows_capacity(simulate: Simulate) -> None:
    """§6.2 with L4S marking: the L4S response keeps the video's queueing delay within a few ms of
    what RTCP packets, which queue behind little, see from the path's 3 × 10 ms jitter alone
    (measured: video p95 25.3 ms, RTCP 19.5 ms), loses nothing, and its rate follows each capacity
    step (measured send rates 272, 700, 180, 252 kbit/s for 1.0, 2.5, 0.6, 1.0 Mbit/s)."""
    (r, *_) = simulate("rfc8867-6.2-l4s", "scream2", 1, ("delay=50ms",))
    video, rtcp = _flow(r, ".video"), _flow(r, ".rtcp-tx")
    q, jitter_only = video["qdelay_p95_ms"], rtcp["qdelay_p95_ms"]
    assert q <= jitter_only + 8, (q, jitter_only)
    assert video["qdelay_p95_ms"] <= 35, video["qdelay_p95_ms"]
    assert video["loss_ratio"] <= 1e-3
    c = r.tables.controller
    assert set(c["mode"].unique()) == {"l4s"}
    assert c["ce_packets"].max() > 0  # type: ignore[operator]
    rates = [p["mean_send_rate_bps"] for p in _phase_video(r)]
    up, down, back = rates[1] / rates[0], rates[2] / rates[1], rates[3] / rates[2]
    assert up >= 1.6 and down <= 0.5 and back >= 1.2, rates


@pytest.mark.xfail(
    strict=True,
    reason="the L4S equilibrium is low here (utilisation 0.25-0.30, seed 1): at 1 Mbit/s a 1200-byte "
    "packet takes 9.6 ms to serialise, so the 1 ms step marks the audio packets (sent unpaced) that "
    "arrive while a video packet is on the wire: 21 % of the audio and 1.6 % of the video, and "
    "l4s_alpha, which counts both, averages 0.45 over 10-40 s (docs/controllers/scream2.md, "
    "'Scenarios')",
)
def test_l4s_mode_uses_most_of_the_capacity(simulate: Simulate) -> None:
    (r, *_) = simulate("rfc8867-6.2-l4s", "scream2", 1, ("delay=50ms",))
    for p in _phase_video(r):
        assert p["utilization"] >= 0.5, (p["start_s"], p["utilization"])


def test_delay_mode_on_5_1_tracks_capacity_below_its_delay_target(simulate: Simulate) -> None:
    """§5.1 without ECN (Not-ECT: the delay-based response only). Once settled, each phase uses
    0.5-1.0 of the capacity (measured 0.57-0.80) and, outside the step down to 0.6 Mbit/s, keeps
    the video's queueing-delay p95 below QDELAY_TARGET_LO = 60 ms (measured 35-49 ms); the step down
    peaks higher (measured 74 ms) and the loss stays small (0.22 % overall)."""
    (r, *_) = simulate("rfc8867-5.1", "scream2", 1, ("delay=50ms", "mechanism=link-rate"))
    c = r.tables.controller
    assert set(c["mode"].unique()) == {"delay"}
    assert c["ce_packets"].max() == 0
    for p in _phase_video(r):
        assert 0.5 <= p["utilization"] <= 1.0, (p["start_s"], p["utilization"])
        limit = 120 if p["capacity_bps"] < 1_000_000 else 60
        assert p["qdelay_p95_ms"] <= limit, (p["start_s"], p["qdelay_p95_ms"])
    assert _flow(r, ".video")["loss_ratio"] <= 0.01
