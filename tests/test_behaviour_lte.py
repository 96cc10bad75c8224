"""The 4G experiments of Guerrero Viveros 2019 (seed 000) §5.4 as bands, against its Tables 6.8
and 6.9: one LTE cell (5 MHz, 2×2 MIMO, proportional fair) with the call's UE and another.
`gcc` (the seed's subject), seed 1. Where the simulator does not reproduce what the seed
measured, the test is a strict expected failure with the numbers, so the gap stays visible and
fails the day it closes. docs/scenarios.md explains the decisions, docs/lte.md the model.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl
import pytest

from flow_windows import metric
from rtcbench.runner import RunResult

SEC = 1_000_000
Simulate = Callable[..., tuple[RunResult, ...]]


def _received_mbps(r: RunResult, flow: str, start_s: float, end_s: float) -> float:
    (fid,) = [f["id"] for f in r.summary["meta"]["flows"] if f["name"] == flow]
    p = r.tables.packets.filter(
        (pl.col("event") == "received")
        & (pl.col("flow") == fid)
        & pl.col("t_us").is_between(start_s * SEC, end_s * SEC, closed="left")
    )
    return float(p["size"].sum()) * 8 / (end_s - start_s) / 1e6


def _by_location(runs: tuple[RunResult, ...]) -> dict[str, RunResult]:
    return {r.summary["variant"].split("location=")[1]: r for r in runs}


def test_000_5_4_6_the_cell_has_room_for_five_calls(simulate: Simulate) -> None:
    """Table 6.8: with two, then four competing calls both ways on the other UE, the call holds
    2.3-2.5 Mbit/s both ways with a queuing delay of 22-26 ms (RTT-based), near the antenna and
    far from it. Measured: 2.46 Mbit/s both ways in every section at both locations; a mean
    one-way queuing delay of 17-19 ms up (scheduling requests) and 2-4 ms down."""
    for location, r in _by_location(simulate("seed000-5.4.6")).items():
        for call in ("up.video", "down.video"):
            for a, b in ((10, 60), (70, 120), (130, 180)):
                rate = metric(r, call, a, b)
                qd = metric(r, call, a, b, "qdelay_mean_ms")
                assert rate >= 2.3e6 and qd < 30, (location, call, a, rate, qd)


def test_000_5_4_7_tcp_on_the_other_ue_leaves_the_call_alone(simulate: Simulate) -> None:
    """Table 6.9, section 2: TCP both ways on the other UE takes what the cell has left (24.58
    and 6.75 Mbit/s near the antenna) while the call keeps 2.45 Mbit/s and 25 ms: the UEs'
    buffers are apart and only the scheduler couples them. Measured: 2.46 Mbit/s both ways, a
    mean queuing delay of 19 ms up and 2-4 ms down; the download gets 19.05 Mbit/s near, 8.54
    far."""
    for location, r in _by_location(simulate("seed000-5.4.7")).items():
        for call in ("up.video", "down.video"):
            rate = metric(r, call, 70, 120)
            qd = metric(r, call, 70, 120, "qdelay_mean_ms")
            assert rate >= 2.3e6 and qd < 30, (location, call, rate, qd)
        assert _received_mbps(r, "tcp-down2", 70, 120) > 5, location


def test_000_5_4_7_tcp_on_the_calls_own_ue_collapses_it(simulate: Simulate) -> None:
    """Table 6.9, section 3, the seed's central 4G finding: TCP both ways on the call's own UE
    shares its buffers, which a commercial eNB keeps deep: the call falls to 0.21 Mbit/s up and
    0.48-0.77 down behind a queuing delay of about 2 s (RTT-based; p95 3.2-3.6 s). Measured
    (130-180 s): 0.45 up and 0.16 down near, 0.22 and 0.09 far; the downlink's mean one-way
    queuing delay 2.3 s near and 4.6 s far (the eNB's 5 MB drains at the slower far rate).
    Chromium 156 collapses too (near: 141 kbit/s up, docs/reproduction.md). At model revision
    13 this was an expected failure: seed 1's uplink entered the TCP period with GoogCC's
    estimate at 5.2 Mbit/s and sent 0.86 Mbit/s near; with the loss-based estimator's Chromium
    156 defaults (revision 14) it sends 0.45."""
    for location, r in _by_location(simulate("seed000-5.4.7")).items():
        for call in ("up.video", "down.video"):
            rate = metric(r, call, 130, 180)
            assert rate < 0.8e6, (location, call, rate)
        qd = metric(r, "down.video", 130, 180, "qdelay_mean_ms")
        assert qd > 1000, (location, qd)


@pytest.mark.xfail(
    strict=True,
    reason="TCP alone near the antenna gets 19.05 Mbit/s down and 2.62 up (seed 1, 70-120 s) "
    "against the thesis's 24.58 and 6.75: the upload's cwnd grows against a download's "
    "seconds-deep ACK path and a 150-kB modem buffer (docs/scenarios.md, seed000-5.4.*); the "
    "kernel's CUBIC over the same cell gets the simulator's rates, not the seed's (docs/lte.md)",
)
def test_000_5_4_7_tcp_alone_reaches_the_seeds_rates(simulate: Simulate) -> None:
    """§6.4.2: TCP alone in the cell (section 2, on the other UE) gets 24.58 Mbit/s down and 6.75
    up near the antenna."""
    r = _by_location(simulate("seed000-5.4.7"))["near"]
    assert _received_mbps(r, "tcp-down2", 70, 120) == pytest.approx(24.58, rel=0.2)
    assert _received_mbps(r, "tcp-up2", 70, 120) == pytest.approx(6.75, rel=0.2)


# -------------------------------------------------------------------------------------------------
# RFC 8869 §2.1-§2.2: one 10-MHz cell, twelve UEs at fixed mean SINRs with Rayleigh fading, eight
# calls arriving two by two, web-like TCP. Calls alternate up (odd UEs) and down (even UEs).

# The calls of UEs with a mean SINR of 7 dB or more (§2.1's SINRs by UE: docs/scenarios.md).
GOOD_COVERAGE_2_1 = ("down1.video", "up2.video", "up4.video", "down3.video", "down4.video")


def _video(r: RunResult, name: str) -> dict[str, float]:
    return next(f for f in r.summary["flows"] if f["name"] == name)


def test_8869_2_1_calls_with_coverage_hold_rate_and_low_delay_at_every_load(simulate: Simulate) -> None:
    """§2.1: "the lowest possible end-to-end frame latency, network latency and PLR" at every
    load, for RTTs of 40 and 150 ms and speeds of 3 and 30 km/h. Measured over the four
    variants, for the calls of UEs at 7 dB or more: 0.59-1.48 Mbit/s, queuing delay p95 at most
    55 ms, no loss."""
    runs = simulate("rfc8869-2.1")
    assert len(runs) == 4
    for r in runs:
        for name in GOOD_COVERAGE_2_1:
            v = _video(r, name)
            assert v["mean_send_rate_bps"] >= 0.5e6, (r.summary["variant"], name, v["mean_send_rate_bps"])
            assert v["qdelay_p95_ms"] < 100 and v["loss_ratio"] < 0.01, (r.summary["variant"], name)


@pytest.mark.xfail(
    strict=True,
    reason="the cell-edge uplink call (U1, a mean SINR of -3 dB) cannot go below GoogCC's 150 "
    "kbit/s floor plus audio, more than its share of the uplink: 0.17-0.21 Mbit/s behind a "
    "queuing delay p95 of 0.6-3.0 s in its modem's buffer (seed 1; docs/scenarios.md, rfc8869-2.*); "
    "Chromium 156 over the same cell goes down to 0.08 Mbit/s and still queues 0.73 s (docs/lte.md)",
)
def test_8869_2_1_the_cell_edge_uplink_call_keeps_its_delay_low(simulate: Simulate) -> None:
    """§2.1 expects low latency for every call, the cell edge included."""
    for r in simulate("rfc8869-2.1"):
        assert _video(r, "up1.video")["qdelay_p95_ms"] < 200, r.summary["variant"]


def test_8869_2_2_with_bad_coverage_the_best_placed_call_still_holds(simulate: Simulate) -> None:
    """§2.2: "bad radio coverage" (3GPP case 3), the same expectations as §2.1. Measured: the
    call of the best-placed UE (8 dB, downlink) gets 1.05-1.17 Mbit/s with a queuing delay p95 of
    36-39 ms; calls at 0 dB and below fall to GoogCC's floor (0.17-0.38 Mbit/s)."""
    for r in simulate("rfc8869-2.2"):
        v = _video(r, "down1.video")
        assert v["mean_send_rate_bps"] >= 0.8e6 and v["qdelay_p95_ms"] < 100, r.summary["variant"]


@pytest.mark.xfail(
    strict=True,
    reason="at -6 dB (U1) the uplink cannot carry GoogCC's floor: the uplink call's queuing delay "
    "p95 reaches 18 s in its modem's 5-MB buffer, and calls at 0 dB and below sit at 0.2-0.7 s "
    "(seed 1; docs/scenarios.md, rfc8869-2.*); Chromium 156 over the same cell: 20.8 s (docs/lte.md)",
)
def test_8869_2_2_every_call_keeps_its_delay_low(simulate: Simulate) -> None:
    """§2.2 expects low latency for every call."""
    for r in simulate("rfc8869-2.2"):
        for f in r.summary["flows"]:
            if f["kind"] == "video":
                assert f["qdelay_p95_ms"] < 200, (r.summary["variant"], f["name"])
