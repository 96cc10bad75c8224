"""The resolution ladder through a whole run: frames carry the height they were encoded at, and it
follows the call's target down and up (rtcbench-media/src/resolution.rs, docs/simulator.md)."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl
import pytest

import rtcbench
from rtcbench.runner import RunResult

S = 1_000_000


def _heights(r: RunResult, start_s: float, end_s: float) -> pl.Series:
    (video,) = [f["id"] for f in r.summary["meta"]["flows"] if f["kind"] == "video"]
    f = r.tables.frames
    return f.filter(
        (pl.col("flow") == video) & pl.col("capture_us").is_between(start_s * S, end_s * S, "left")
    )["height"]


def test_the_encoded_resolution_follows_the_capacity_steps(
    simulate: Callable[..., tuple[RunResult, ...]],
) -> None:
    """rfc8867-5.1, gcc, 50 ms: 1 → 2.5 → 0.6 → 1 Mbit/s. With the video capped at 1.5 Mbit/s the
    encoder reaches 720p (target ≥ 990 kbit/s for 2 s) while 2.5 Mbit/s are free, and is at
    360p or below within 3 s of the drop to 0.6 Mbit/s (below 540p's 500 kbit/s start bitrate
    once the target falls)."""
    r = next(
        r
        for r in simulate("rfc8867-5.1", "gcc", 1)
        if r.summary["variant"] == "delay=50ms,mechanism=link-rate"
    )
    assert _heights(r, 45, 60).max() == 720
    assert _heights(r, 63, 80).max() <= 360
    # Every frame is on the ladder, and the flow summary reports the mean height.
    assert set(r.tables.frames["height"].unique()) <= {180, 270, 360, 540, 720}
    (video,) = [f for f in r.summary["flows"] if f["kind"] == "video"]
    assert 360 <= video["height_mean_px"] <= 720


def test_the_camera_caps_the_ladder_and_a_bad_value_is_named() -> None:
    (r,) = rtcbench.run(
        "rfc8867-5.1", "fixed", 1, sets=("delay=50ms", "mechanism=link-rate", "calls.0.video.camera=640x480",
        "calls.0.video.start=1Mbps", "duration=5s"), figure=False
    )  # fmt: skip
    assert set(r.tables.frames["height"].unique()) == {360}
    with pytest.raises(ValueError, match=r'cannot read "720p" as a resolution: expected WIDTHxHEIGHT'):
        rtcbench.resolve("rfc8867-5.1", ["calls.0.video.camera=720p"])
