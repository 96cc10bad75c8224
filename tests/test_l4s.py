"""The L4S suite (docs/l4s.md): a run's `l4s` block, the coupling's prediction, and the four L4S
criteria, on the suite's `l4s-cubic` (an L4S call beside a long CUBIC flow over a 10 Mbit/s
DualPI2, 10 ms each way, 60 s). Measured bands are the numbers in docs/l4s.md with a margin."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import rtcbench
from rtcbench import scorecard
from rtcbench.runner import RunResult
from rtcbench.suite import SUITES, select

Simulate = Callable[..., tuple[RunResult, ...]]


def _block(r: RunResult) -> dict[str, Any]:
    (queue,) = r.summary["l4s"]
    return dict(queue)


def _verdicts(r: RunResult) -> dict[str, tuple[str, float | None]]:
    view = scorecard.RunView(r.summary, {}, r.timeseries)
    return {s.criterion.id: (s.verdict, s.value) for s in scorecard.score_view(view)}


def test_the_l4s_suite_is_the_eight_l4s_cases() -> None:
    ids = [b.id for b in rtcbench.builtin()]
    chosen = [i for i in ids if i.startswith(SUITES["l4s"])]
    assert chosen == [
        "l4s-5.1", "l4s-mixed", "l4s-cubic", "l4s-interop",
        "l4s-classic-ecn", "l4s-bleach", "l4s-wifi", "l4s-lte",
    ]  # fmt: skip
    assert [str(s) for s in select(["l4s"])] == chosen


def test_scalable_media_keep_the_l_queue_short_and_classic_flows_keep_their_share(simulate: Simulate) -> None:
    """scream2 beside CUBIC: the L queue's p99 2.2 ms (under RFC 9330's few ms), and CUBIC gets
    1.6 times the share the coupling leaves it, because scream2 takes 0.28 of its own
    (docs/l4s.md, "What it found")."""
    (r,) = simulate("l4s-cubic", "scream2", 1)
    q = _block(r)
    assert q["link"] == "forward" and q["coupling"] == pytest.approx(2.0)
    assert q["l_sojourn_p99_ms"] < 5.0
    assert q["c_sojourn_p99_ms"] > 10 * q["l_sojourn_p50_ms"]
    assert q["l_marks"] > 1000 and q["c_marks"] == 0 and q["c_drops"] > 0
    (period,) = q["periods"]
    assert (period["start_s"], period["end_s"]) == (5.0, 59.0)
    verdicts = _verdicts(r)
    assert verdicts["l-delay"][0] == "pass"
    assert verdicts["classic-share"][0] == "pass"
    assert verdicts["classic-share"][1] == pytest.approx(
        period["classic_share_measured"] / period["classic_share_predicted"]
    )
    # Measured: 0.60 marks per round trip, 0.28 of its predicted share.
    assert verdicts["marks-per-rtt"][0] == "warn" and 2.5 < verdicts["marks-per-rtt"][1] < 4.0  # type: ignore[operator]
    assert verdicts["l4s-share"][0] == "fail" and 0.15 < verdicts["l4s-share"][1] < 0.45  # type: ignore[operator]


def test_the_predicted_balance_is_the_coupling_equation_of_each_flows_packets_and_round_trip(
    simulate: Simulate,
) -> None:
    (r,) = simulate("l4s-cubic", "scream2", 1)
    (period,) = _block(r)["periods"]
    by_name = {f["name"]: f for f in period["flows"]}
    video, cubic = by_name["S1.video"], by_name["cubic"]
    assert (video["queue"], cubic["queue"]) == ("L", "C")
    assert cubic["packet_bytes"] == 1500.0
    # rate_L / rate_C = 2 / (1.22 k) · (s_L / s_C) · (R_C / R_L), k = 2.
    expected = 2.0 / (1.22 * 2.0) * (video["packet_bytes"] / 1500.0) * (cubic["rtt_ms"] / video["rtt_ms"])
    assert period["predicted_ratio"] == pytest.approx(expected)
    assert period["measured_ratio"] == pytest.approx(video["rate_bps"] / cubic["rate_bps"])
    assert period["classic_share_predicted"] == pytest.approx(1.0 / (1.0 + expected))
    # The round trips: 20 ms of propagation, plus the C queue's standing delay for CUBIC.
    assert 20.0 < video["rtt_ms"] < 25.0 and 30.0 < cubic["rtt_ms"] < 45.0


def test_media_that_ignore_marks_fill_the_l_queue(simulate: Simulate) -> None:
    """gcc sends ECT(1) but does not answer CE: unresponsive traffic in the L queue (p99 28 ms),
    which takes twice the classic flow's coupled share."""
    (r,) = simulate("l4s-cubic", "gcc", 1)
    verdicts = _verdicts(r)
    assert verdicts["l-delay"][0] == "fail"
    assert verdicts["classic-share"][0] == "fail"


def test_a_bleaching_hop_leaves_the_l_queue_empty(simulate: Simulate) -> None:
    (r,) = simulate("l4s-bleach", "scream2", 1)
    q = _block(r)
    assert q["l_sojourn_p99_ms"] is None and q["l_marks"] == 0 and q["media"] == [] and q["periods"] == []
    assert _verdicts(r)["l-delay"][0] == "n/a"


def test_a_run_without_dualpi2_has_no_l4s_block_and_no_l4s_verdicts(simulate: Simulate) -> None:
    (r, *_) = simulate("rfc8867-6.2-l4s", "scream2", 1)
    assert "l4s" not in r.summary
    verdicts = _verdicts(r)
    assert {verdicts[c][0] for c in ("l-delay", "marks-per-rtt", "l4s-share", "classic-share")} == {"n/a"}
