"""The expected behaviour of every RFC 8867 case (§5.2-§6.3), as bands: `gcc` in the default tier,
every controller in the slow tier (seed 1; more seeds through `rtcbench suite --reps`).

Each test states the RFC's expectation and the band it uses. Where a controller does not meet an
expectation, the test is marked as an expected failure (strict: it fails the day the controller
starts to pass) with the measured numbers, so that the suite records the finding instead of
hiding it. §5.1 has its own file (test_behaviour_rfc8867.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from bands import controllers
from rtcbench import analysis
from rtcbench.runner import RunResult

SEC = 1_000_000
FAIR_BAND = analysis.FAIR_RATIO_BAND  # RFC 8868 §3 item 7: [1/3, 3]
VIDEO_MIN_BPS = 150_000  # RFC 8867 §4.3
VIDEO_MAX_BPS = 1_500_000

Simulate = Callable[..., tuple[RunResult, ...]]


def _video(r: RunResult) -> list[dict[str, Any]]:
    return [f for f in r.summary["meta"]["flows"] if f["kind"] == "video"]


def _rates(r: RunResult, start_s: float, end_s: float, settle_s: float = 5.0) -> dict[str, float]:
    """Mean receive rate of every video flow over [start + settle, end), by flow name."""
    f = analysis.fairness(
        r.tables,
        r.timeseries,
        start_us=round(start_s * SEC),
        end_us=round(end_s * SEC),
        settle_us=round(settle_s * SEC),
    )
    return {x["name"]: float(x["mean_recv_rate_bps"]) for x in f["flows"]}


def _within_band(rates: dict[str, float]) -> bool:
    lo, hi = FAIR_BAND
    values = list(rates.values())
    return min(values) > 0 and lo <= min(values) / max(values) and max(values) / min(values) <= hi


@pytest.mark.parametrize("controller", controllers())
def test_5_2_flows_track_the_capacity_and_share_it(simulate: Simulate, controller: str) -> None:
    """§5.2: both flows follow every capacity change; at 4 Mbit/s both reach the media maximum
    (2 × 1.5 Mbit/s fits), and in every phase their rates stay within [1/3, 3] of each other.
    Link-rate mechanism, 50 ms (the UDP-background runs differ as in 5.1, docs/scenarios.md)."""
    (r, *_) = simulate("rfc8867-5.2", controller, 1, ("delay=50ms", "mechanism=link-rate"))
    for p in r.summary["phases"][1:]:
        rates = _rates(r, p["start_s"], p["end_s"])
        assert _within_band(rates), f"{p['start_s']}-{p['end_s']} s: {rates}"
        assert sum(rates.values()) <= p["capacity_bps"], f"{p['start_s']} s"


@pytest.mark.parametrize("controller", controllers())
def test_5_3_a_congested_feedback_path_costs_the_forward_media_little(
    simulate: Simulate, controller: str
) -> None:
    """§5.3: with the backward path dipping to 0.8 Mbit/s (carrying S2's media and S1's
    feedback), S1's forward media does nearly as well as in the reference run with an unimpaired
    backward path: utilisation within 0.1 of it."""
    runs = {r.summary["variant"]: r for r in simulate("rfc8867-5.3", controller, 1, ("mechanism=link-rate",))}
    util = {
        v: next(f for f in r.summary["flows"] if f["name"] == "S1.video")["utilization"]
        for v, r in runs.items()
    }
    congested, reference = (
        util["backward_dip=800kbps,mechanism=link-rate"],
        util["backward_dip=2Mbps,mechanism=link-rate"],
    )
    assert congested >= reference - 0.1, util


@pytest.mark.parametrize(
    "controller",
    controllers(
        {
            "gcc-draft": "the flow that joins at 40 s ramps at GCC-02's loss-based 5 % per report and "
            "stays at 0.39-0.51 Mbit/s against 1.2-1.4 (60-120 s): outside [1/3, 3] in seeds 2 and 3",
        }
    ),
)
def test_5_4_three_flows_converge_to_a_fair_share(simulate: Simulate, controller: str) -> None:
    """§5.4: after the third flow joins at 40 s the 3.5 Mbit/s are shared; from 60 s on every
    pair of flows is within [1/3, 3] (RFC 8868 §3 item 7) and the link is used (≥ 70 %), in each
    of seeds 1-3 (gcc-draft's late flow sits at the band's edge, so one seed alone decided by
    chance: seed 1 passed with FEC on and failed with it off)."""
    for seed in (1, 2, 3):
        (r,) = simulate("rfc8867-5.4", controller, seed)
        rates = _rates(r, 60, 120, settle_s=0)
        assert _within_band(rates), (seed, rates)
        assert sum(rates.values()) >= 0.7 * 3_500_000 - 3 * 20_000, (seed, rates)


@pytest.mark.parametrize(
    "controller",
    controllers(
        {
            "gcc": "the late, long-RTT flows take 4× the share of the early short-RTT ones (seed 1, "
            "200-300 s: 308/326/700/1038/1100 kbit/s); Chromium 156 over the same network shares "
            "within 2×, 417/811/733/765/725 kbit/s (one run, relay departures p99 222 µs against the "
            "200 µs goal): model error, not a property of today's GoogCC",
            "gcc-draft": "the third flow gets 0.30 against the second's 1.23 Mbit/s (seed 1, 200-300 s); "
            "the widest ratio is 3.3-4.1 over seeds 1-3 (2.5-3.3 with FEC off)",
        }
    ),
)
def test_5_5_rtt_does_not_decide_the_share(simulate: Simulate, controller: str) -> None:
    """§5.5: five flows with 10-150 ms one-way delays converge to a fair share irrespective of
    their RTT: over the last 100 s, every pair within [1/3, 3]."""
    (r,) = simulate("rfc8867-5.5", controller, 1)
    rates = _rates(r, 200, 300, settle_s=0)
    assert _within_band(rates), rates


@pytest.mark.parametrize(
    "controller",
    controllers(
        {
            "gcc": "NewReno, 300 ms: 107 kbit/s of video. As Chromium 156, gcc has no floor from the "
            "scenario in a call with audio (the audio section clears x-google-min-bitrate; asked for 300 "
            "kbit/s against CUBIC, Chromium's estimate went to 86-88 kbit/s and its encoder's target to 30: "
            "docs/calibration.md), so the media falls under its 150 kbit/s minimum",
            "scream": "NewReno, 300 ms: 103 kbit/s of video; the target sits at its floor and the "
            "window holds the media back, as the compensation lifts qdelay_target only to 245 ms "
            "against a queue TCP keeps full at 300 ms (seed 1)",
        }
    ),
)
def test_5_6_media_is_not_starved_by_a_long_tcp_flow(simulate: Simulate, controller: str) -> None:
    """§5.6: in the worst case the media falls to its minimum rate (150 kbit/s) but not below:
    mean video receive rate from 10 s to the end, in every variant (300/1000 ms, NewReno/CUBIC)."""
    for r in simulate("rfc8867-5.6", controller, 1):
        (video,) = _video(r)
        rate = _rates(r, 10, 119, settle_s=0)[video["name"]]
        assert rate >= VIDEO_MIN_BPS, f"{r.summary['variant']}: {rate:.0f} bit/s"


@pytest.mark.parametrize(
    "controller",
    controllers(
        {
            "gcc": "NewReno: S1's video averages 118 kbit/s from 10 s. As Chromium 156, gcc has no floor "
            "from the scenario in a call with audio (docs/calibration.md, \"The scenario's minimum and "
            'maximum in Chromium"), so the media falls under its 150 kbit/s minimum',
        }
    ),
)
def test_5_7_short_tcp_bursts_do_not_starve_the_media(simulate: Simulate, controller: str) -> None:
    """§5.7: while short TCP flows come and go, each call keeps at least its minimum rate on
    average from 10 s (bursts of ns3-rmcat's single 30-50 KB file; both TCP variants)."""
    for r in simulate("rfc8867-5.7", controller, 1):
        for name, rate in _rates(r, 10, 299, settle_s=0).items():
            assert rate >= VIDEO_MIN_BPS, f"{r.summary['variant']} {name}: {rate:.0f} bit/s"


@pytest.mark.parametrize(
    "controller",
    controllers(
        {
            "gcc-draft": "the resumed flow regains at GCC-02's 5 % per report: 0.34 Mbit/s against "
            "1.43 and 1.38 over 70-120 s (seed 1)",
        }
    ),
)
def test_5_8_the_others_take_the_room_and_the_resumed_flow_regains_its_share(
    simulate: Simulate, controller: str
) -> None:
    """§5.8: while S2 is paused (40-60 s) S1 and S3 take the room it left: together at least 10 %
    more than before the pause (goog_cc, seeds 1-10: 14-45 % more); after it resumes all three
    are within [1/3, 3] again (70-120 s). Not each of them: one that was above its share before
    the pause may hold while the other takes the room (goog_cc, seeds 1 and 2)."""
    (r,) = simulate("rfc8867-5.8", controller, 1)
    before, paused, after = _rates(r, 10, 40), _rates(r, 40, 60), _rates(r, 70, 120, settle_s=0)
    others = ("S1.video", "S3.video")
    assert sum(paused[n] for n in others) >= 1.1 * sum(before[n] for n in others), (before, paused)
    assert _within_band(after), after


# Only NADA defines a weight between flows (RFC 8698 PRIO); GoogCC and GCC-02 have none, and
# RFC 8298's priority orders streams within one SCReAM sender. For them §6.1 does not apply.
@pytest.mark.parametrize("controller", ["nada"])
def test_6_1_the_high_priority_flow_gets_more(simulate: Simulate, controller: str) -> None:
    """§6.1: S1 (priority 2) should get about twice each other flow. S1's video maximum
    (1.5 Mbit/s) caps it below 2× the 0.9 Mbit/s of the others in 3.5 Mbit/s (docs/scenarios.md),
    so the band is ≥ 1.4× the mean of S2 and S3, from 60 s."""
    (r,) = simulate("rfc8867-6.1", controller, 1)
    rates = _rates(r, 60, 120, settle_s=0)
    others = (rates["S2.video"] + rates["S3.video"]) / 2
    assert rates["S1.video"] >= 1.4 * others, rates


@pytest.mark.parametrize("controller", controllers())
def test_6_3_every_flow_gets_its_share_at_its_bottleneck(simulate: Simulate, controller: str) -> None:
    """§6.3: no flow starves and each bottleneck is shared fairly: S1 and S3 share C→D
    (1.5 Mbit/s) within [1/3, 3], S2 is not starved on A→B, from 20 s."""
    (r,) = simulate("rfc8867-6.3", controller, 1)
    rates = _rates(r, 20, 300, settle_s=0)
    assert all(rate >= VIDEO_MIN_BPS for rate in rates.values()), rates
    assert _within_band({k: rates[k] for k in ("S1.video", "S3.video")}), rates


def _video_summary(r: RunResult) -> dict[str, Any]:
    return next(f for f in r.summary["flows"] if f["kind"] == "video")


@pytest.mark.parametrize("controller", controllers())
def test_6_2_ecn_with_codel_does_not_hurt(simulate: Simulate, controller: str) -> None:
    """§6.2: the algorithm must not fail with ECN, and should do at least as well as without it:
    5.1 (50 ms, link rate) with CoDel marking ECT(0) media instead of drop-tail loses no more,
    keeps its utilisation (within 0.05) and its queuing-delay p95 (within 10 ms)."""
    (plain, *_) = simulate("rfc8867-5.1", controller, 1, ("delay=50ms", "mechanism=link-rate"))
    (ecn, *_) = simulate("rfc8867-6.2", controller, 1, ("delay=50ms",))
    a, b = _video_summary(plain), _video_summary(ecn)
    assert b["loss_ratio"] <= a["loss_ratio"] + 1e-3, (a["loss_ratio"], b["loss_ratio"])
    assert b["utilization"] >= a["utilization"] - 0.05, (a["utilization"], b["utilization"])
    assert b["qdelay_p95_ms"] <= a["qdelay_p95_ms"] + 10, (a["qdelay_p95_ms"], b["qdelay_p95_ms"])


@pytest.mark.parametrize(
    "controller",
    controllers(
        {
            "nada": "RFC 8698 counts every CE mark as classic congestion: with L4S marking at 1 ms "
            "utilisation falls from 0.59 to 0.16 (seed 1)",
            "scream": "RFC 8298 v1 reacts to CE as to loss (no L4S mode, which is SCReAM v2's): "
            "utilisation falls from 0.68 to 0.13 (seed 1)",
        }
    ),
)
def test_6_2_l4s_step_marking_does_not_hurt(simulate: Simulate, controller: str) -> None:
    """§6.2 with L4S-style marking (ECT(1) media, step at 1 ms): the same bands as with CoDel.
    Controllers that ignore ECN pass trivially; classic ECN reactions starve."""
    (plain, *_) = simulate("rfc8867-5.1", controller, 1, ("delay=50ms", "mechanism=link-rate"))
    (ecn, *_) = simulate("rfc8867-6.2-l4s", controller, 1, ("delay=50ms",))
    a, b = _video_summary(plain), _video_summary(ecn)
    assert b["utilization"] >= a["utilization"] - 0.05, (a["utilization"], b["utilization"])
