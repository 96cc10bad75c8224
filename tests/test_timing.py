"""How a real-time run is judged from its processes' timing (`rtcbench.testbed.timing`,
docs/emulation.md, "Timing and validity"), without a testbed: the reasons name the late process,
what was late and by how much against which goal; the cross-traffic agent's and a Chromium
camera's measures; what the command line, the report and the stacks say of an invalid run. The
runs themselves are in tests/test_emulation.py (a run beside busy loops is invalid and says why).
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.realtime import assert_valid

from rtcbench.browser.run import camera_shortfall_us
from rtcbench.stacks import run_problem, stack
from rtcbench.testbed import _cross_agent
from rtcbench.testbed.timing import (
    CROSS_GOAL,
    MEDIA_GOAL,
    Goal,
    ProcessTiming,
    agent_timing,
    duration,
    invalid_line,
    judge,
    sampled_timing,
)


def _sender(p99_us: float, max_us: float) -> ProcessTiming:
    record = {"count": 2400, "p50_us": 30.0, "p99_us": p99_us, "max_us": max_us}
    return agent_timing("media sender of video at A", "media", "deadlines", record, MEDIA_GOAL)


def test_a_late_process_is_named_with_what_was_late_and_by_how_much() -> None:
    assert _sender(324.0, 7_000.0).missed() is None
    assert _sender(28_870.0, 29_877.0).missed() == (
        "media sender of video at A: deadlines late by 28.9 ms at p99 (goal 1.0 ms) and 29.9 ms at "
        "worst (goal 20.0 ms)"
    )
    assert _sender(500.0, 33_220.0).missed() == (
        "media sender of video at A: deadlines late by 33.2 ms at worst (goal 20.0 ms)"
    )
    assert [duration(x) for x in (450.4, 1_000.0, 2_500_000.0)] == ["450 µs", "1.0 ms", "2.50 s"]


def test_a_run_is_valid_only_when_every_process_kept_its_goal_and_nothing_else_said_otherwise() -> None:
    kept, late = _sender(100.0, 1_000.0), _sender(3_755.0, 33_220.0)
    assert judge([kept]) == (True, [])
    valid, reasons = judge([kept, late], ["call0: the encoder did not keep up (CPU-limited)"])
    assert not valid and reasons == [late.missed(), "call0: the encoder did not keep up (CPU-limited)"]
    entry = late.as_dict()
    assert entry["kept"] is False and entry["goal_us"] == {"p99": 1_000.0, "max": 20_000.0}
    assert entry["lateness_us"] == {"p50": 30.0, "p99": 3_755.0, "max": 33_220.0}


def _summary(mode: str, info: dict[str, Any]) -> dict[str, Any]:
    key = {"emulate": "emulation", "gstreamer": "gstreamer", "browser": "browser"}[mode]
    return {"scenario": "s", "controller": "fixed", "seed": 1, "mode": mode, key: info}


def test_an_invalid_run_says_its_reasons_wherever_it_is_judged() -> None:
    why = _sender(3_755.0, 33_220.0).missed()
    info = {"valid": False, "reasons": [why]}
    assert invalid_line(info) == f"invalid: {why}"
    assert invalid_line({"valid": True, "reasons": []}) is None
    # A summary written before the processes were judged: its relay missed the goal.
    assert invalid_line({"valid": False}) == "invalid: the relay did not keep to the scenario's timing"
    assert run_problem(stack("emulation"), _summary("emulate", info)) == f"invalid: {why}"
    assert_valid(_summary("gstreamer", {"valid": True, "reasons": []}))
    with pytest.raises(pytest.fail.Exception, match=r"s \(emulate, fixed, seed 1\): invalid: media sender"):
        assert_valid(_summary("emulate", info))


def test_the_cross_traffic_agent_reads_its_quantiles_as_the_relay_does() -> None:
    late = _cross_agent.Lateness()
    late.record(-0.001)  # early: on time
    for us in range(1, 100):
        late.record(us * 1e-6 + 5e-7)
    s = late.summary()
    # As `rtcbench_live::stats`: the upper edge of the 1 µs bin holding the quantile.
    assert (s["count"], s["p50_us"], s["p99_us"], s["max_us"]) == (100, 50.0, 99.0, 99.5)
    t = agent_timing("cross-traffic source at A", "cross", "schedule", s, CROSS_GOAL)
    assert t.missed() is None


def test_what_is_recorded_and_not_judged_never_makes_a_run_invalid() -> None:
    page = sampled_timing("chromium at B", "browser", "statistics timer", [59_700.0], None)
    assert page.missed() is None and judge([page]) == (True, [])
    assert page.as_dict()["goal_us"] is None and page.as_dict()["kept"] is True


def test_samples_are_read_at_rank_ceil_q_n() -> None:
    t = sampled_timing("chromium at A", "browser", "statistics timer", [3.0, -1.0, 1.0, 2.0], Goal(2.5))
    assert (t.count, t.p50_us, t.p99_us, t.max_us) == (4, 1.0, 3.0, 3.0)
    assert t.missed() == "chromium at A: statistics timer late by 3 µs at p99 (goal 2 µs)"


def test_a_chromium_camera_is_short_only_beyond_the_frame_a_sample_can_miss() -> None:
    def sample(t_ms: float, frames: int) -> dict[str, Any]:
        other = {"type": "media-source", "kind": "audio", "id": "a"}
        return {
            "t": t_ms,
            "stats": [other, {"type": "media-source", "kind": "video", "id": "v", "frames": frames}],
        }

    # 30 fps: 15 frames per 500 ms; 14 is within a sample's reach, 12 is two frames short. The
    # camera's start (no frame yet, then its first) is not counted.
    samples = [sample(0, 0), sample(500, 11), sample(1000, 26), sample(1500, 40), sample(2000, 52)]
    short = camera_shortfall_us(samples, 30.0)
    assert short[0] == 0.0 and short[1] == pytest.approx(2 / 30 * 1e6) and len(short) == 2
    assert camera_shortfall_us(samples[:1], 30.0) == []
