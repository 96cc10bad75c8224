"""Behaviour of the seeds' controllers (`gcc-draft`, `nada`, `scream`) on RFC 8867 §5.1 and the
staircase of Sjölund and Kevo 2022 (seed 001) §5.1.1, as bands and as the fingerprints the
literature and the seeds report. Three seeds in the default tier, seeds 4-10 in the slow tier.

Not asserted, because it does not appear and the expectation, not the implementation, is what does
not carry over (docs/controllers/scream.md): the finding of Sjölund and Kevo 2022 §5.4 that SCReAM
keeps the lowest latency. The thesis compared RTTs against a GCC whose RTT peaked at 1 s; RFC 8298
v1 holds its queue below a 100 ms target by design and so keeps more than GoogCC's delay-gradient
control.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl
import pytest

from rtcbench import analysis
from rtcbench.runner import RunResult

SEEDS = [1, 2, 3, *(pytest.param(s, marks=pytest.mark.slow) for s in range(4, 11))]
SETTLE_US = 5_000_000
MEDIA_MAX_BPS = 1_520_000  # RFC 8867 §4.3 video max + audio, rfc8867-5.1 only


def _utilisation(r: RunResult, phase: dict[str, Any]) -> float:
    start, end = round(phase["start_s"] * 1e6), round(phase["end_s"] * 1e6)
    media = [f["id"] for f in r.summary["meta"]["flows"] if f["kind"] in ("video", "audio")]
    stats = [analysis.flow_metrics(r.tables, r.timeseries, f, start, end, settle_us=SETTLE_US) for f in media]
    return float(sum(s["mean_recv_rate_bps"] for s in stats)) / phase["capacity_bps"]


def _max_growth_per_second(r: RunResult, start_s: float, end_s: float) -> float:
    """The largest ratio of the target to its value one second earlier, within [start, end)."""
    c = r.tables.controller.filter(pl.col("t_us").is_between(start_s * 1e6, end_s * 1e6, closed="left"))
    per_s = c.group_by((pl.col("t_us") // 1_000_000).alias("s")).agg(pl.col("target_bps").last()).sort("s")
    growth = per_s["target_bps"] / per_s["target_bps"].shift(1)
    value = growth.max()
    assert isinstance(value, float)
    return value


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("controller", ["gcc-draft", "nada", "scream"])
@pytest.mark.parametrize("scenario", ["rfc8867-5.1", "seed001-staircase"])
def test_converges_after_every_capacity_change_without_starving(
    simulate: Callable[..., tuple[RunResult, ...]], scenario: str, controller: str, seed: int
) -> None:
    """After every capacity change (not the start-up, which GCC-02's loss-based 5 % per report
    makes slow), once the phase has settled for 5 s, the call uses at least half the capacity and
    never more than all of it (physics)."""
    r = simulate(scenario, controller, seed)[0]
    phases = [p for p in r.summary["phases"] if p["start_s"] > 0 and p["capacity_bps"] < MEDIA_MAX_BPS]
    assert phases
    for p in phases:
        u = _utilisation(r, p)
        assert 0.5 <= u <= 1.0, f"{p['start_s']}-{p['end_s']} s at {p['capacity_bps']} bit/s: {u:.2f}"


@pytest.mark.parametrize("seed", SEEDS)
def test_gcc_draft_ramps_up_no_faster_than_eight_percent_per_second(
    simulate: Callable[..., tuple[RunResult, ...]], seed: int
) -> None:
    """GCC-02 §5.5: multiplicative increase is at most 1.08^min(dt, 1): 8 %/s (Guerrero Viveros 2019
    §6.2.2 saw 5-25 s to converge after an increase). Measured after the 1 → 2.5 Mbit/s step of
    §5.1."""
    r = simulate("rfc8867-5.1", "gcc-draft", seed)[0]
    assert _max_growth_per_second(r, 40, 60) <= 1.08 + 1e-3


@pytest.mark.parametrize("seed", SEEDS)
def test_nada_ramps_up_faster_and_uses_more_than_gcc_draft_on_the_staircase(
    simulate: Callable[..., tuple[RunResult, ...]], seed: int
) -> None:
    """Sjölund and Kevo 2022 §5.3-5.4: NADA, in accelerated ramp-up, has the highest link utilisation on the
    RMCAT-NS3 staircase and reacts fastest when the capacity rises."""
    nada = simulate("seed001-staircase", "nada", seed)[0]
    draft = simulate("seed001-staircase", "gcc-draft", seed)[0]
    assert _max_growth_per_second(nada, 60, 140) > 1.08 >= _max_growth_per_second(draft, 60, 140) - 1e-3

    def mean_utilisation(r: RunResult) -> float:
        phases = [p for p in r.summary["phases"] if p["start_s"] > 0]
        return sum(_utilisation(r, p) for p in phases) / len(phases)

    assert mean_utilisation(nada) > mean_utilisation(draft) + 0.1
