"""The seeds' wired experiments against what the seeds measured, as bands: `gcc` (the seeds'
subject) in the default tier, `gcc-draft` (the GCC of their time) in the slow tier, seed 1.

Where the simulator does not reproduce a seed's finding, the test is a strict expected failure
with the numbers, so the gap stays visible (and fails the day it closes). Sources: 000 =
000_429adbf687ed8411.txt §6.2, 002 = 002_7c8aa5bc2c5ec52a.txt, 003 = 003_176e70375a7f2d6d.txt §6.1.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from bands import controllers as _controllers
from rtcbench import metrics
from rtcbench.runner import RunResult

SEC = 1_000_000


def controllers(known_failures: dict[str, str] | None = None) -> list[Any]:
    """gcc by default; gcc-draft, the GCC of the seeds' time, in the slow tier."""
    return _controllers(known_failures, slow=("gcc-draft",))


Simulate = Callable[..., tuple[RunResult, ...]]


def _rates(
    r: RunResult, start_s: float, end_s: float, kinds: tuple[str, ...] = ("video",)
) -> dict[str, float]:
    """Mean receive rate (bit/s) of every flow of `kinds` over [start, end)."""
    out = {}
    for f in r.summary["meta"]["flows"]:
        if f["kind"] in kinds:
            m = metrics.flow_metrics(
                r.tables, r.timeseries, f["id"], round(start_s * SEC), round(end_s * SEC)
            )
            out[f["name"]] = float(m["mean_recv_rate_bps"])
    return out


def _tcp_rate(r: RunResult, start_s: float, end_s: float) -> float:
    p = r.tables.packets
    (tcp,) = [f["id"] for f in r.summary["meta"]["flows"] if f["kind"] == "tcp"]
    rx = p.filter((p["flow"] == tcp) & (p["event"] == "received"))
    rx = rx.filter(rx["t_us"].is_between(start_s * SEC, end_s * SEC, closed="left"))
    return float(rx["size"].sum()) * 8 / (end_s - start_s)


@pytest.mark.parametrize("controller", controllers())
def test_000_5_2_5_an_unconstrained_call_reaches_the_encoder_cap(simulate: Simulate, controller: str) -> None:
    """000 Table 6.x (experiment 1): GCC reached 2.46 Mbit/s, the VP8 cap of 2.5 Mbit/s, on
    100 Mbit/s Ethernet. Band: at least 2.2 Mbit/s over the last 60 s."""
    (r,) = simulate("seed000-5.2.5", controller, 1)
    (rate,) = _rates(r, 60, 120).values()
    assert rate >= 2.2e6, rate


@pytest.mark.parametrize(
    "controller",
    controllers(
        {
            "gcc-draft": "the calls that join at 60 and 240 s climb at GCC-02's 5 % per report: "
            "0.55/0.76/2.32 Mbit/s over 300-420 s (seed 1)",
        }
    ),
)
def test_000_5_2_7_three_calls_share_the_bottleneck(simulate: Simulate, controller: str) -> None:
    """000 §6.2.3: three GCC calls joining at 0, 60 and 240 s on 4 Mbit/s ended at 1.05/1.17/1.24
    Mbit/s. Band: in the last 120 s every pair within RFC 8868's [1/3, 3] and the three use at
    least 75 % of the link."""
    (r,) = simulate("seed000-5.2.7", controller, 1)
    rates = list(_rates(r, 300, 420).values())
    assert max(rates) / min(rates) <= 3.0 and sum(rates) >= 0.75 * 4e6, rates


@pytest.mark.parametrize(
    "controller",
    controllers(
        {
            "gcc": "starved by CUBIC: 0.19 against 1.76 Mbit/s (seed 1, 300 ms queue), where 000 "
            "§6.2.4 measured Chrome's GCC at 1.25 against TCP's 0.66; the gap is open",
            "gcc-draft": "1.61 against CUBIC's 0.34 Mbit/s at 300 ms (seed 1): GCC-02 wins where 000 "
            "saw 1.25/0.66, outside the 3:1 band; with 1000 ms it starves (0.32)",
        }
    ),
)
def test_000_5_2_8_gcc_and_a_cubic_flow_share_within_three_to_one(
    simulate: Simulate, controller: str
) -> None:
    """000 §6.2.4: against one CUBIC flow GCC kept 1.25 Mbit/s and TCP got 0.66 (300 ms queue).
    Band: the two within RFC 8868's [1/3, 3] over 60-240 s, in both queue variants."""
    for r in simulate("seed000-5.2.8", controller, 1):
        (gcc,) = _rates(r, 60, 240).values()
        tcp = _tcp_rate(r, 60, 240)
        assert 1 / 3 <= gcc / tcp <= 3, f"{r.summary['variant']}: {gcc:.0f} vs {tcp:.0f}"


@pytest.mark.parametrize("controller", controllers())
def test_002_grid_utilisation_is_slightly_above_eighty_percent(simulate: Simulate, controller: str) -> None:
    """002: over the 4 × 4 grid of capacity and RTT with a 60 KB buffer, GCC's utilisation was
    "slightly above 0.8" everywhere. Band: 0.7-0.95 in every cell (from 30 s)."""
    for r in simulate("seed002-grid", controller, 1):
        (f,) = [f for f in r.summary["meta"]["flows"] if f["kind"] == "video"]
        m = metrics.flow_metrics(r.tables, r.timeseries, f["id"], 30 * SEC, 120 * SEC)
        util = m["mean_recv_rate_bps"] / m["mean_capacity_bps"]
        assert 0.7 <= util <= 0.95, f"{r.summary['variant']}: {util:.2f}"


@pytest.mark.parametrize("controller", controllers())
def test_002_step_up_reaches_the_two_megabit_cap(simulate: Simulate, controller: str) -> None:
    """002: after the 400 → 3000 kbit/s step at 60 s "GCC reaches a steady-state value of around
    2 Mbps after a transient time of roughly 30 s". Band: above 1.8 Mbit/s (1 s average) within
    40 s of the step (goog_cc: 23 s)."""
    (r,) = simulate("seed002-step-up", controller, 1)
    (f,) = [f for f in r.summary["meta"]["flows"] if f["kind"] == "video"]
    t = metrics.time_to_reach(r.timeseries, f["id"], 60 * SEC, 1.8e6, column="recv_rate_bps", smooth_us=SEC)
    assert t is not None and t <= 40, t


@pytest.mark.parametrize(
    "controller",
    controllers({"gcc-draft": "the second flow leads: 1.61 against the first's 1.02 Mbit/s (seed 1)"}),
)
def test_002_the_first_of_two_gcc_flows_stays_ahead(simulate: Simulate, controller: str) -> None:
    """002: at 3 Mbit/s "the two flows can roughly share the bandwidth fairly, and the first flow
    always gets a higher share" (at 1 and 2 Mbit/s the seed found the split unpredictable, so
    nothing is asserted there). Band: over 120-200 s the first flow is ahead and the two are
    within [1/3, 3]."""
    (r,) = simulate("seed002-two-gcc", controller, 1, ("capacity=3000kbps",))
    first, second = _rates(r, 120, 200).values()
    assert second < first <= 3 * second, f"{first:.0f} vs {second:.0f}"


@pytest.mark.parametrize("controller", controllers())
def test_003_more_random_loss_means_a_lower_rate(simulate: Simulate, controller: str) -> None:
    """003 §6.1.3: the rate fell with the loss rate (1.90/1.57/1.14/0.31 Mbit/s at 1/5/10/20 %).
    Band: strictly decreasing, and below half of the 1 % rate at 20 %. (goog_cc stays below the
    seed's absolute numbers: 1.3-1.7/1.0/0.7/0.09 Mbit/s; the seed's Chrome also sent FEC and
    retransmissions, which the simulator does not.)"""
    rates = [sum(_rates(r, 20, 120).values()) for r in simulate("seed003-loss", controller, 1)]
    assert all(a > b for a, b in itertools.pairwise(rates)), rates
    assert rates[-1] < rates[0] / 2, rates
