"""Every controller on the Sudden Reduction and Sweden to China experiments of
Sjölund and Kevo 2022 (seed 001) §5.1.1 (2 Mbit/s with dips to 500 kbit/s at 30, 60 and 90 s; the
second with 320 ms of delay and jitter), as bands and as the fingerprints §5.3-5.4 report.

Three seeds in the default tier; seeds 4-10 in the slow tier (`make test-slow`).

Fingerprints of Sjölund and Kevo 2022 that appear here and are asserted: every algorithm reacts to a
decrease within about a second; NADA's accelerated ramp-up regains the capacity in under 2 s ("less
than 2 seconds to respond") and gives the highest utilisation; SCReAM and NADA regain it faster than
GCC, which needs many seconds (GCC-02's loss-based 5 % per report). Fingerprints that do not appear,
and why (docs/controllers/scream.md, docs/scenarios.md):
- SCReAM with the lowest utilisation and latency, and SCReAM collapsing to 300 kbit/s on the
  320 ms path: the thesis ran Ericsson's 2022 code, whose GCC partner reached 1 s RTTs; here the
  path delay is present from the first packet, so RFC 8298's base delay includes it, and
  GoogCC and gcc-draft keep less queue than v1's 100 ms target.
- GCC with the highest utilisation to China: our jitter is RFC 8868's bounded NR-RBPDV (std
  26.7 ms, no reordering) where the thesis used netem's ±80 ms (std 46 ms, reordering). With a
  46 ms std every controller loses utilisation and goog_cc the most (0.43 → 0.23, seed 1).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl
import pytest

from rtcbench import analysis
from rtcbench.runner import RunResult

CONTROLLERS = ("gcc", "gcc-draft", "nada", "scream")
SEEDS = [1, 2, 3, *(pytest.param(s, marks=pytest.mark.slow) for s in range(4, 11))]
SCENARIOS = ("seed001-sudden-reduction", "seed001-sweden-to-china")
SMOOTH_US = 1_000_000
HIGH_BPS = 2_000_000
VIDEO_MIN_BPS = 300_000  # both scenarios' `video.min`
# Guerrero Viveros 2019 §6.1: a reaction "within about 1 s". Measured on the media sending rate
# averaged over 1 s (from 200 ms windows), so a drop completed at 1 s can read 1.2 s.
REACTION_BOUND_S = 1.5


def _video(r: RunResult) -> int:
    (flow,) = [f["id"] for f in r.summary["meta"]["flows"] if f["kind"] == "video"]
    return int(flow)


def _span(p: dict[str, Any]) -> tuple[int, int]:
    return round(p["start_s"] * 1e6), round(p["end_s"] * 1e6)


def _dips(r: RunResult) -> list[dict[str, Any]]:
    return [p for p in r.summary["phases"] if p["capacity_bps"] < HIGH_BPS]


def _restores(r: RunResult) -> list[dict[str, Any]]:
    return [p for p in r.summary["phases"] if p["capacity_bps"] == HIGH_BPS and p["start_s"] > 0]


def _reaction_s(r: RunResult, dip: dict[str, Any]) -> float | None:
    """Seconds until the media sending rate, over 1 s, is at or below the dip's capacity. The
    sending rate, because it is the controller's decision: the receive rate can never exceed the
    capacity, so it would read as an instant reaction whatever the controller did. The media
    rate, because retransmissions of the drop's losses are the stack's answer to NACKs, not the
    controller's choice (bounded by `test_retransmissions_stay_a_small_share_and_repair_most_losses`)."""
    start, _ = _span(dip)
    return analysis.time_to_reach(
        r.timeseries,
        _video(r),
        start,
        dip["capacity_bps"],
        column="media_send_rate_bps",
        below=True,
        smooth_us=SMOOTH_US,
    )


def _recovery_s(r: RunResult, restore: dict[str, Any]) -> float:
    """Seconds until the receive rate, over 1 s, reaches half the restored capacity (the whole
    phase if it never does)."""
    start, end = _span(restore)
    t = analysis.time_to_reach(
        r.timeseries, _video(r), start, 0.5 * HIGH_BPS, column="recv_rate_bps", smooth_us=SMOOTH_US
    )
    return (end - start) / 1e6 if t is None else t


def _utilisation(r: RunResult, p: dict[str, Any], settle_us: int = 0) -> float:
    start, end = _span(p)
    m = analysis.flow_metrics(r.tables, r.timeseries, _video(r), start, end, settle_us=settle_us)
    return float(m["mean_recv_rate_bps"]) / float(p["capacity_bps"])


SLOW_REACTIONS: dict[tuple[str, str, int], str] = {}
"""Reactions measured slower than the bound, kept visible as strict expected failures. (SCReAM on
the 320 ms path, seed 3, took 1.6 s at the 60 s dip before losses were repaired; 0.8 s since.)"""


def _reaction_cases() -> list[Any]:
    cases = []
    for scenario in SCENARIOS:
        for controller in CONTROLLERS:
            for seed in SEEDS:
                number = seed if isinstance(seed, int) else seed.values[0]
                marks = [] if isinstance(seed, int) else list(seed.marks)
                reason = SLOW_REACTIONS.get((scenario, controller, number))
                if reason is not None:
                    marks.append(pytest.mark.xfail(strict=True, reason=reason))
                cases.append(pytest.param(scenario, controller, number, marks=marks))
    return cases


@pytest.mark.parametrize(("scenario", "controller", "seed"), _reaction_cases())
def test_every_controller_reacts_to_each_dip_within_a_second_and_is_not_starved(
    simulate: Callable[..., tuple[RunResult, ...]], scenario: str, controller: str, seed: int
) -> None:
    """RFC 8836 R1.C asks for a reaction to a capacity drop "as soon as possible";
    Guerrero Viveros 2019 §6.1 sets about 1 s. Every restored 2 Mbit/s phase carries more than the
    video's minimum rate (no starvation), and less than 1 % of the media packets stay lost after
    retransmission. (Before losses were repaired this bound was 2 % on every packet lost; the
    originals' loss itself now reaches 3.0 % for goog_cc on the 320 ms path, seed 5, because the
    dips' retransmissions share the bottleneck.) goog_cc on the jittery 320 ms path stays near
    the dip's 500 kbit/s for a whole 25 s phase in 2 of 10 seeds: slow, not starved."""
    (r,) = simulate(scenario, controller, seed)
    for dip in _dips(r):
        t = _reaction_s(r, dip)
        assert t is not None and t <= REACTION_BOUND_S, f"dip at {dip['start_s']} s: {t} s"
    for p in _restores(r):
        assert _utilisation(r, p) * HIGH_BPS > VIDEO_MIN_BPS, f"{p['start_s']}-{p['end_s']} s"
    (video,) = [f for f in r.summary["flows"] if f["kind"] == "video"]
    assert video["residual_loss_ratio"] < 0.01


def _media_loss_ratio(r: RunResult) -> float:
    """Dropped / sent among the video flow's original media packets (retransmissions excluded)."""
    packets = r.tables.packets.filter((pl.col("flow") == _video(r)) & (pl.col("kind") == "media"))
    sent = packets.filter(pl.col("event") == "sent").height
    return packets.filter(pl.col("event") == "dropped").height / sent


# Retransmitted bytes per original media byte (`rtx_overhead`) over the whole run. Within a dip
# it is far higher (goog_cc 57-79 % of the media bytes, NADA up to 94 % in a 2 s dip): the queue
# grows from 1 to 300 ms at once while both ends still hold the 2 ms RTT of their last reports, so
# the receiver asks again on every 20 ms pass and the sender, gating on RTT + 5 ms, resends each
# time until a copy arrives, as libwebrtc does (docs/media.md).
RTX_SHARE_BOUND = 0.04


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("controller", CONTROLLERS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_retransmissions_stay_a_small_share_and_repair_most_losses(
    simulate: Callable[..., tuple[RunResult, ...]], scenario: str, controller: str, seed: int
) -> None:
    """No retransmission storm over the run (retransmitted bytes at most 4 % of the media
    bytes), and at most half of the lost media packets stay lost after retransmission."""
    (r,) = simulate(scenario, controller, seed)
    (video,) = [f for f in r.summary["flows"] if f["kind"] == "video"]
    assert video["rtx_overhead"] < RTX_SHARE_BOUND
    assert video["residual_loss_ratio"] <= 0.5 * _media_loss_ratio(r)


# Seconds to regain half of the restored 2 Mbit/s, per controller, on the 1 ms path. NADA:
# Sjölund and Kevo 2022 §5.4.3 measured under 2 s. GCC: the delay-based increase is
# multiplicative up to 8 %/s; the 12.0-14.4 s measured (goog_cc, 10 seeds) is its link-capacity
# estimate holding the increase additive near the old capacity. (9.2-13.0 s before losses were
# repaired: the retransmissions of the drop's losses now keep the 300 ms queue full through the
# dip, goog_cc backs off a second time, and the restored phase starts from ~390 instead of ~440
# kbit/s.) gcc-draft: the loss-based 5 % per 1 s receiver report from ~0.45 Mbit/s needs
# log(2.2)/log(1.05) = 16 s plus a report interval (measured 16-20 s). SCReAM: fast increase
# resumes T_RESUME_FAST_INCREASE = 5 s after the last congestion event (measured 7-14 s).
RECOVERY_BOUND_S = {"nada": 2.0, "gcc": 15.0, "gcc-draft": 22.0, "scream": 15.0}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("controller", CONTROLLERS)
def test_recovery_after_each_sudden_reduction(
    simulate: Callable[..., tuple[RunResult, ...]], controller: str, seed: int
) -> None:
    (r,) = simulate("seed001-sudden-reduction", controller, seed)
    for p in _restores(r):
        assert _recovery_s(r, p) <= RECOVERY_BOUND_S[controller], f"restore at {p['start_s']} s"


@pytest.mark.parametrize("seed", SEEDS)
def test_nada_then_scream_regain_capacity_faster_than_gcc_draft_and_nada_uses_most(
    simulate: Callable[..., tuple[RunResult, ...]], seed: int
) -> None:
    """Sjölund and Kevo 2022 §5.3.2 and §5.4.3: NADA and SCReAM (especially NADA) increase much
    quicker than GCC after a reduction; NADA has the highest link utilisation."""
    runs = {c: simulate("seed001-sudden-reduction", c, seed)[0] for c in ("gcc-draft", "nada", "scream")}

    def mean_recovery(r: RunResult) -> float:
        return sum(_recovery_s(r, p) for p in _restores(r)) / len(_restores(r))

    def utilisation(r: RunResult) -> float:
        phases = r.summary["phases"]
        weighted = sum(_utilisation(r, p) * (p["end_s"] - p["start_s"]) for p in phases)
        return float(weighted) / float(phases[-1]["end_s"])

    nada, scream, draft = (mean_recovery(runs[c]) for c in ("nada", "scream", "gcc-draft"))
    assert nada < scream < draft
    assert utilisation(runs["nada"]) > max(utilisation(runs[c]) for c in ("scream", "gcc-draft")) + 0.1
