"""When the machine, not the network, shaped a browser run.

Chromium reports a CPU-bound encoder as `qualityLimitationReason: "cpu"` only when its own CPU
adaptation acts, and with a fake camera on this machine it never did: in the reproduction's
Wi-Fi runs with five calls at 60 fps (Guerrero Viveros 2019, Tables 6.4 and 6.5), the competing
calls' encoders fell to 18-37 frames a second at a 2.3-2.5 Mbit/s target while the run's
processes held 1.6-1.8 of the machine's 2 cores, and every sample said `bandwidth`. Their sending
rates there (1.46-2.12 Mbit/s) measured the machine.

So a run's own tables decide it (`starved_windows`): a 10 s window in which a sender encoded
fewer than `FRAME_RATE_KEPT` of the frames a second its camera gave in most of its samples,
while the run's browsers and relay used more than `BUSY_SHARE` of the machine's cores. Either
alone is not enough, as measured over the reproduction's 63 fair runs:
- encoders fall behind on a bad network too: on seed 001's lossy 500 kbit/s dips, on a Wi-Fi
  uplink beside TCP and in seed 004's retries, with the machine at 10-52 % (0.19-1.04 cores);
- the machine can be busy with encoders that keep up: three calls of seed 003 at 30 fps used
  1.57-1.66 cores at full frame rate.
The windows of Tables 6.4 and 6.5 that pass both tests had the machine at 78-90 %.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import polars as pl

__all__ = [
    "BUSY_SHARE",
    "CPU_LIMITED_SHARE",
    "FRAME_RATE_KEPT",
    "WINDOW_S",
    "judge",
    "machine_cores",
    "starved_warning",
    "starved_windows",
]

WINDOW_S = 10.0
"""Length of the windows judged."""

FRAME_RATE_KEPT = 0.8
"""A sample in which a sender encoded fewer than this share of its camera's frame rate is behind;
Chromium's encoder keeps the camera's rate at any target in a one-call run here (60 fps samples
below 48 in 1-4 % of a run, at start-up)."""

BUSY_SHARE = 0.7
"""The share of the machine's cores above which the run's processes left the encoders short."""

CPU_LIMITED_SHARE = 0.05
"""A browser run whose encoder reported "cpu" as its quality limitation in more than this share of
its samples measured the machine, not the network."""


def machine_cores() -> int:
    """The cores this process may run on (what the browsers and the relay share)."""
    return len(os.sched_getaffinity(0))


def starved_windows(
    stats: pl.DataFrame, usage: pl.DataFrame, asked: Mapping[int, tuple[str, float]], cores: int
) -> list[dict[str, Any]]:
    """The windows of a browser run in which the machine held a sender's encoder back: from its
    `stats` and `usage` tables (docs/traces.md), the frame rate each video flow's camera gave
    (`asked`: flow id → (flow name, frames a second)) and the machine's `cores`. One entry per
    window, for the sender furthest behind: `start_s`, `flow`, `fps_asked`, `fps_median` and
    `cores_used` (the run's processes together)."""
    if not asked or stats.height == 0 or usage.height == 0 or cores < 1:
        return []
    window_us = int(WINDOW_S * 1e6)
    cameras = pl.DataFrame(
        {
            "flow": list(asked),
            "name": [name for name, _ in asked.values()],
            "asked": [float(fps) for _, fps in asked.values()],
        },
        schema={"flow": pl.Int32, "name": pl.String, "asked": pl.Float64},
    )
    behind = (
        stats.filter((pl.col("side") == "sender") & pl.col("frames_per_second").is_not_null())
        .select(pl.col("t_us"), pl.col("flow").cast(pl.Int32), pl.col("frames_per_second"))
        .join(cameras, on="flow")
        .with_columns((pl.col("t_us") // window_us).alias("window"))
        .group_by("window", "name", "asked")
        .agg(
            (pl.col("frames_per_second") < FRAME_RATE_KEPT * pl.col("asked")).mean().alias("behind"),
            pl.col("frames_per_second").median().alias("fps_median"),
        )
        .filter(pl.col("behind") > 0.5)
    )
    if behind.height == 0:
        return []
    span_s = (pl.col("t_us").max() - pl.col("t_us").min()) / 1e6
    busy = (
        usage.with_columns((pl.col("t_us") // window_us).alias("window"))
        .group_by("window", "process")
        .agg(((pl.col("cpu_s").max() - pl.col("cpu_s").min()) / span_s).alias("cores_used"))
        .filter(pl.col("cores_used").is_finite())
        .group_by("window")
        .agg(pl.col("cores_used").sum())
    )
    starved = (
        behind.join(busy, on="window")
        .filter(pl.col("cores_used") > BUSY_SHARE * cores)
        .sort("window", pl.col("fps_median") / pl.col("asked"), "name")
        .unique("window", keep="first", maintain_order=True)
    )
    return [
        {
            "start_s": w * WINDOW_S,
            "flow": name,
            "fps_asked": fps_asked,
            "fps_median": fps,
            "cores_used": used,
        }
        for w, name, fps_asked, fps, used in starved.select(
            "window", "name", "asked", "fps_median", "cores_used"
        ).iter_rows()
    ]


def judge(stats: pl.DataFrame, usage: pl.DataFrame, asked: Mapping[int, tuple[str, float]]) -> dict[str, Any]:
    """What a browser run's summary records of this machine (`browser.machine`): its `cores`
    and the `starved_windows` of the run whose tables are `stats` and `usage`."""
    cores = machine_cores()
    return {"cores": cores, "starved_windows": starved_windows(stats, usage, asked, cores)}


def starved_warning(windows: list[dict[str, Any]], cores: int) -> str | None:
    """One line on the windows `starved_windows` found, or None when there are none."""
    if not windows:
        return None
    worst = min(windows, key=lambda w: w["fps_median"] / w["fps_asked"])
    used = [w["cores_used"] for w in windows]
    return (
        f"the machine held the encoders back in {len(windows)} {WINDOW_S:g} s window(s) from "
        f"{windows[0]['start_s']:g} s: {worst['flow']} encoded a median {worst['fps_median']:g} of its "
        f"{worst['fps_asked']:g} frames a second while the run used {min(used):.2f}-{max(used):.2f} of "
        f"{cores} cores; its rates there describe this machine, not the network"
    )
