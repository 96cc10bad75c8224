"""How fast flows get where they should: convergence to the reference rate (each flow's max-min fair
share), settling, and the time to reach a level (`docs/metrics.md`, "Convergence time")."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from rtcbench.analysis.flows import _flows, active_span_us
from rtcbench.analysis.time_series import _Windows
from rtcbench.tables import _US_PER_S, VIDEO, Tables, _duration_us, _mean

CONVERGENCE_BAND = (0.80, 1.10)
"""A flow has converged when its 1 s-mean sending rate is within [0.8, 1.1] × its reference rate
(the max-min fair share of its bottleneck, at most what its encoder can send) and stays there
for `CONVERGENCE_HOLD_US` (docs/metrics.md, "Convergence"). RFC 8868 §3 item 8 names the metric
without numbers: 0.8 is where the 000 thesis calls utilisation high ("values over 80 %"), and
sending 10 % above the share for a second fills a queue by 100 ms."""
CONVERGENCE_HOLD_US = 5_000_000
"""H: the rate must stay in the band this long (or until the next event on the bottleneck)."""
CONVERGENCE_SMOOTH_US = 1_000_000
"""Rates are averaged over 1 s before the band test, as RFC 8868 plots use 1 s."""
SETTLING_BAND = 0.10
"""Settling time (the measure once called convergence): ±10 % of the flow's own steady value,
held for `CONVERGENCE_HOLD_US` (docs/metrics.md, assumption 3); it says when a flow stopped
moving, not whether it got anywhere."""


def _zero_filled(rates: pl.Series) -> npt.NDArray[np.float64]:
    """A rate column as a float array, nulls (no value in a window) as 0."""
    filled = rates.fill_null(0.0) if rates.null_count() else rates
    out: npt.NDArray[np.float64] = filled.to_numpy().astype(np.float64)
    return out


def _block_means(rates: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.float64]:
    """Mean of each run of k consecutive windows, indexed by its first window (forward-looking, so a
    step at a window boundary is dated exactly at that boundary)."""
    c = np.concatenate(([0.0], np.cumsum(rates)))
    out: npt.NDArray[np.float64] = (c[k:] - c[:-k]) / k
    return out


def _first_held(in_band: npt.NDArray[np.bool_], t0: npt.NDArray[np.int64], hold_us: int) -> int | None:
    """Index of the first block that is in the band and after which every block is too for
    `hold_us` (or until the blocks end); None if there is none."""
    n = in_band.size
    # next_bad[j] = first block index >= j that is outside the band (n if none).
    idx = np.where(~in_band, np.arange(n), n)
    next_bad = np.minimum.accumulate(idx[::-1])[::-1]
    bad_t = np.where(next_bad < n, t0[np.minimum(next_bad, n - 1)], np.iinfo(np.int64).max)
    hits = np.flatnonzero(in_band & (bad_t > t0 + hold_us))
    return None if hits.size == 0 else int(hits[0])


def _smoothed(
    windows: _Windows, flow: int, start_us: int, end_us: int, column: str
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]] | None:
    """The flow's `column` over [start_us, end_us) averaged over `CONVERGENCE_SMOOTH_US` (forward
    looking), with each block's start time; None if the interval holds less than one block."""
    w = windows.between(flow, start_us, end_us)
    window_us = windows.length_or(end_us - start_us)
    k = max(1, round(CONVERGENCE_SMOOTH_US / window_us))
    if w.height < k:
        return None
    blocks = _block_means(_zero_filled(w.get_column(column)), k)
    return blocks, w.get_column("t_us").to_numpy().astype(np.int64)[: blocks.size]


def convergence_time(
    ts: pl.DataFrame,
    flow: int,
    start_us: int,
    end_us: int,
    reference_bps: float | None,
    column: str = "send_rate_bps",
) -> float | None:
    """Seconds from `start_us` until the flow's 1 s-mean rate enters [0.8, 1.1] × `reference_bps`
    (`CONVERGENCE_BAND`) and stays there for min(5 s, the rest of [start_us, end_us)).

    The reference is what the flow should get (`reference_rates`: its max-min fair share of the
    bottleneck, capped by its encoder's maximum), so a flow that settles far below the capacity or
    far above it (filling the queue) has not converged: RFC 8868 §3 item 8's "time taken to reach
    a stable rate", read as the rate it should reach. The sending rate is used: it is what the
    controller decides, and the receive rate is clipped by the bottleneck. Returned with
    one-window resolution; None if never converged or without a reference.
    """
    return _convergence_time(_Windows.of(ts), flow, start_us, end_us, reference_bps, column)


def _convergence_time(
    windows: _Windows, flow: int, start_us: int, end_us: int, reference_bps: float | None, column: str
) -> float | None:
    if reference_bps is None or not reference_bps > 0:
        return None
    smoothed = _smoothed(windows, flow, start_us, end_us, column)
    if smoothed is None:
        return None
    blocks, t0 = smoothed
    low, high = CONVERGENCE_BAND
    i = _first_held(
        (blocks >= low * reference_bps) & (blocks <= high * reference_bps), t0, CONVERGENCE_HOLD_US
    )
    return None if i is None else float(t0[i] - start_us) / _US_PER_S


def settling_time(
    ts: pl.DataFrame, flow: int, start_us: int, end_us: int, column: str = "send_rate_bps"
) -> float | None:
    """Seconds from `start_us` until the flow's 1 s-mean rate enters and stays within ±10 % of its
    own steady value (the mean over the last half of [start_us, end_us)) for min(5 s, the rest of
    the interval): when the rate stopped moving, wherever it settled (`SETTLING_BAND`). A flow
    that settles at 8 % of the capacity settles fast; `convergence_time` says whether it reached
    its share. None if it never settles."""
    return _settling_time(_Windows.of(ts), flow, start_us, end_us, column)


def _settling_time(windows: _Windows, flow: int, start_us: int, end_us: int, column: str) -> float | None:
    smoothed = _smoothed(windows, flow, start_us, end_us, column)
    if smoothed is None:
        return None
    blocks, t0 = smoothed
    w = windows.between(flow, start_us, end_us)
    rates = _zero_filled(w.get_column(column))
    starts = w.get_column("t_us").to_numpy()
    steady = float(rates[starts >= start_us + (end_us - start_us) / 2].mean()) if rates.size else 0.0
    if not steady > 0.0:
        return None
    i = _first_held(np.abs(blocks - steady) <= SETTLING_BAND * steady, t0, CONVERGENCE_HOLD_US)
    return None if i is None else float(t0[i] - start_us) / _US_PER_S


def max_min_shares(capacity_bps: float, demands: dict[int, float]) -> dict[int, float]:
    """The max-min fair allocation of `capacity_bps` among flows wanting `demands` (math.inf for a
    flow that takes whatever it gets): filled from the smallest demand up, each flow gets its
    demand or an equal part of what is left, whichever is less (Bertsekas and Gallager, Data
    Networks, §6.5.2)."""
    out: dict[int, float] = {}
    left = max(0.0, capacity_bps)
    pending = sorted(demands.items(), key=lambda kv: (kv[1], kv[0]))
    for i, (fid, demand) in enumerate(pending):
        out[fid] = min(demand, left / (len(pending) - i))
        left -= out[fid]
    return out


def _elastic_demand(meta: dict[str, Any], f: dict[str, Any]) -> float | None:
    """What an elastic flow would take alone: a video flow its encoder's maximum, a bulk TCP flow
    everything (inf); None for fixed-rate traffic (audio, RTCP, CBR, on/off TCP, ACKs), which
    takes what it sends."""
    if f.get("kind") == VIDEO:
        call: dict[str, Any] = next((c for c in meta.get("calls", []) if c.get("id") == f.get("call")), {})
        top = call.get("video_max_bps")
        return float(top) if top is not None else math.inf
    if f.get("kind") == "tcp" and f.get("workload", "bulk") == "bulk":
        return math.inf
    return None


def reference_rates(
    t: Tables, ts: pl.DataFrame, link: str, start_us: int, end_us: int, capacity_bps: float | None
) -> dict[int, float]:
    """What each elastic flow bottlenecked at `link` should get over [start_us, end_us): the
    capacity less what the fixed-rate flows there sent (their mean sending rate in `ts`), shared
    max-min fairly among the elastic flows (`_elastic_demand`). A flow counts if its source runs
    for more than half the interval. An unlimited link gives each flow its demand."""
    return _reference_rates(t, _Windows.of(ts), link, start_us, end_us, capacity_bps)


def _reference_rates(
    t: Tables, windows: _Windows, link: str, start_us: int, end_us: int, capacity_bps: float | None
) -> dict[int, float]:
    dur = _duration_us(t)
    span = end_us - start_us
    demands: dict[int, float] = {}
    fixed = 0.0
    for f in _flows(t):
        a, b = active_span_us(f, dur)
        if f.get("bottleneck") != link or span <= 0 or 2 * (min(b, end_us) - max(a, start_us)) <= span:
            continue
        demand = _elastic_demand(t.meta, f)
        if demand is not None:
            demands[int(f["id"])] = demand
        else:
            fixed += _mean(windows.between(int(f["id"]), start_us, end_us).get_column("send_rate_bps")) or 0.0
    if capacity_bps is None:
        return demands
    return max_min_shares(capacity_bps - fixed, demands)


def time_to_reach(
    ts: pl.DataFrame,
    flow: int,
    start_us: int,
    level_bps: float,
    *,
    column: str = "send_rate_bps",
    below: bool = False,
    smooth_us: int = 0,
) -> float | None:
    """Seconds from `start_us` to the start of the first window whose rate is ≥ `level_bps` (≤ with
    `below=True`, for reactions to a capacity drop, RFC 8836 R1.C); None if it never happens.

    With `smooth_us` > 0 the rate is first averaged over that span (forward-looking, as in
    `convergence_time`), so one bursty window does not count as reaching the level.
    """
    windows = _Windows.of(ts)
    w = windows.between(flow, start_us, np.iinfo(np.int64).max)
    if w.height == 0:
        return None
    rates = _zero_filled(w.get_column(column))
    t0 = w.get_column("t_us").to_numpy().astype(np.int64)
    if smooth_us > 0:
        k = max(1, round(smooth_us / windows.length_or(smooth_us)))
        if rates.size < k:
            return None
        rates = _block_means(rates, k)
        t0 = t0[: rates.size]
    hits = np.flatnonzero(rates <= level_bps if below else rates >= level_bps)
    return None if hits.size == 0 else float(t0[hits[0]] - start_us) / _US_PER_S
