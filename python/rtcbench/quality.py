"""rtcbench's video-quality score (docs/learned.md, "Evaluating a controller"): its constants, its
per-run and its per-step form. The per-run score of `rtcbench evaluate` (`quality_expr`) and
the per-step `video_quality` of exported records (`rtcbench.learned.call_record`) are the same
three components: a quality from the video's rate, lowered by stalling and by delay, written
once as a polars expression over a suite's flows (`quality_expr`) and once in numpy over a
call's steps (`step_quality`), side by side here so that they cannot drift apart. Not the
challenge's MOS model, nor ITU-T P.1203, but built like P.1203's integration (P.1203.3), with
ITU-T G.114's delays; the constants are rtcbench's choice, not fitted to ratings."""

from __future__ import annotations

import math

import numpy as np
import polars as pl

FULL_RATE_BPS = 2_500_000.0
"""The video rate the quality score counts as full quality (libwebrtc's default maximum for
1280×720)."""
RATE_KNEE_BPS = 100_000.0
"""The rate below which the quality's rate component falls steeply (its log's knee)."""
DELAY_GOOD_MS = 150.0
DELAY_BAD_MS = 400.0
"""ITU-T G.114's one-way delay for most interactive applications, and its upper planning limit:
frame delay between them costs up to `DELAY_PENALTY`."""
DELAY_PENALTY = 1.0
STALL_PENALTY = 3.0
WINDOW_US = 600_000
"""The span a step's quality looks back over: the observation's long monitor interval."""


def rate_quality(rate_bps: np.ndarray) -> np.ndarray:
    """1 + 4 · ln(1 + R / 100 kbit/s) / ln(1 + 2.5 Mbit/s / 100 kbit/s), at most 5."""
    r = np.maximum(rate_bps, 0.0) / RATE_KNEE_BPS
    q: np.ndarray = np.minimum(1.0 + 4.0 * np.log1p(r) / math.log1p(FULL_RATE_BPS / RATE_KNEE_BPS), 5.0)
    return q


def delay_penalty(delay_ms: np.ndarray) -> np.ndarray:
    """0 at or below 150 ms, rising linearly to `DELAY_PENALTY` at 400 ms and above."""
    return np.clip((delay_ms - DELAY_GOOD_MS) / (DELAY_BAD_MS - DELAY_GOOD_MS), 0.0, 1.0) * DELAY_PENALTY


def quality_expr() -> pl.Expr:
    """rtcbench's video-quality score of a video flow, 1 (bad) to 5 (excellent), over the flows table
    of a suite (its columns `mean_goodput_bps`, `freezes`, `freeze_duration_ms`,
    `frame_delay_p95_ms`, and `simulated_s` from the runs table). Not the challenge's MOS model,
    nor ITU-T P.1203, but built like P.1203's integration (P.1203.3): a quality from the coding rate,
    lowered by stalling (how often, and what share of the time), and lowered by delay as ITU-T
    G.114 grades interactivity:

    - rate: 1 + 4 · ln(1 + R / 100 kbit/s) / ln(1 + 2.5 Mbit/s / 100 kbit/s), R the video's mean
      goodput, at most 5;
    - stalls: min(3, 0.1 · freezes per minute + 6 · the share of the call frozen);
    - delay: the frame delay p95 between 150 and 400 ms costs 0 to 1 linearly, 1 above.

    The constants are rtcbench's choice, not fitted to ratings (docs/learned.md)."""
    rate = 1.0 + 4.0 * (
        pl.col("mean_goodput_bps").clip(lower_bound=0.0) / RATE_KNEE_BPS
    ).log1p() / math.log1p(FULL_RATE_BPS / RATE_KNEE_BPS)
    minutes = pl.col("simulated_s") / 60.0
    frozen_share = (pl.col("freeze_duration_ms") / 1000.0 / pl.col("simulated_s")).clip(0.0, 1.0)
    stalls = (0.1 * pl.col("freezes") / minutes + 6.0 * frozen_share).clip(upper_bound=STALL_PENALTY)
    delay = ((pl.col("frame_delay_p95_ms") - DELAY_GOOD_MS) / (DELAY_BAD_MS - DELAY_GOOD_MS)).clip(
        0.0, 1.0
    ) * DELAY_PENALTY
    return (rate.clip(upper_bound=5.0) - stalls.fill_null(0.0) - delay.fill_null(0.0)).clip(1.0, 5.0)


def step_quality(
    steps_us: np.ndarray,
    received_us: np.ndarray,
    received_bytes: np.ndarray,
    rendered_us: np.ndarray,
    frame_delay_ms: np.ndarray,
    frozen: np.ndarray,
) -> np.ndarray:
    """The video's quality at each step, 1 to 5, over the `WINDOW_US` before it:

    - rate: `rate_quality` of the video bytes received in the window (on the wire);
    - stalls: `STALL_PENALTY` × the share of the window the video was frozen;
    - delay: `delay_penalty` of the mean delay (capture to render) of the frames rendered in it.

    `received_us` (sorted) and `received_bytes` are the video's received packets;
    `rendered_us` (sorted), `frame_delay_ms` its rendered frames; `frozen` (n, 2) the spans
    [start, end) µs the video stood still in a freeze. NaN at steps before the first rendered
    frame (nothing was shown yet)."""
    start = steps_us - WINDOW_US
    cum = np.concatenate([[0.0], np.cumsum(received_bytes, dtype=np.float64)])
    got = cum[np.searchsorted(received_us, steps_us)] - cum[np.searchsorted(received_us, start)]
    rate = got * 8.0 / (WINDOW_US / 1e6)

    overlap = np.zeros(len(steps_us))
    for lo, hi in frozen:
        overlap += np.clip(np.minimum(steps_us, hi) - np.maximum(start, lo), 0, None)
    stalls = STALL_PENALTY * overlap / WINDOW_US

    delays = np.concatenate([[0.0], np.cumsum(frame_delay_ms, dtype=np.float64)])
    first, last = np.searchsorted(rendered_us, start), np.searchsorted(rendered_us, steps_us)
    frames = last - first
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_delay = np.where(frames > 0, (delays[last] - delays[first]) / frames, 0.0)
    quality = np.clip(rate_quality(rate) - stalls - delay_penalty(mean_delay), 1.0, 5.0)
    if len(rendered_us) == 0:
        return np.full(len(steps_us), np.nan)
    return np.where(steps_us > rendered_us[0], quality, np.nan)
