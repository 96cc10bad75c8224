"""Every controller runs behind the one interface with the feedback its spec prescribes."""

from __future__ import annotations

import polars as pl
import pytest

import rtcbench

SHORT = ["duration=15s"]


@pytest.mark.parametrize(
    ("controller", "sets", "feedback"),
    [
        ("gcc", [], {"twcc", "rr"}),
        ("gcc-draft", [], {"remb", "rr"}),
        ("gcc-draft", ["controller.gcc-draft.deployment=send-side"], {"twcc", "rr"}),
        ("nada", [], {"ccfb", "rr"}),
        ("scream", [], {"ccfb", "rr"}),
        ("scream2", [], {"ccfb", "rr"}),
        ("fixed", [], {"twcc", "rr"}),
    ],
)
def test_feedback_format_follows_the_controller(controller: str, sets: list[str], feedback: set[str]) -> None:
    (r,) = rtcbench.run("seed001-sudden-reduction", controller, 1, sets=[*SHORT, *sets], figure=False)
    assert set(r.tables.feedback["kind"].unique()) == feedback
    # Every controller moves its target off the start rate within 15 s, except `fixed`.
    targets = r.tables.controller["target_bps"]
    assert (targets.n_unique() == 1) == (controller == "fixed")


def test_receive_side_gcc_draft_traces_the_receivers_estimator() -> None:
    (r,) = rtcbench.run("seed001-sudden-reduction", "gcc-draft", 1, sets=SHORT, figure=False)
    c = r.tables.controller
    for column in ("rx_delay_based_bps", "rx_threshold_ms", "rx_state", "remb_bps", "loss_based_bps"):
        assert column in c.columns
    # The REMB the sender received is the receiver's estimate, and it bounds the target.
    both = c.filter(pl.col("remb_bps").is_not_null())
    assert both.height > 0
    assert (both["target_bps"] <= both["remb_bps"]).all()


def test_the_gcc_draft_receiver_measures_the_rtt_with_rtcp_xr() -> None:
    """RFC 3611 §4.4-4.5: the receiver's RRTR, answered by a DLRR in the next SR, gives the
    receiver the RTT (for GCC-02 §5.5's response_time) within two report intervals. It agrees
    with the RTT the sender computes from the RR, and is at least the 100 ms path RTT."""
    (r, *_) = rtcbench.run("rfc8867-5.1", "gcc-draft", 1, sets=SHORT, figure=False)
    c = r.tables.controller.filter(pl.col("t_us") >= 2_100_000)
    assert c["rx_rtt_ms"].null_count() == 0
    assert c["rx_rtt_ms"].min() >= 100.0  # type: ignore[operator]
    assert (c["rx_rtt_ms"] - c["rtt_ms"]).abs().max() < 30.0  # type: ignore[operator]


def test_a_bad_deployment_names_the_allowed_values() -> None:
    with pytest.raises(rtcbench.ScenarioError, match=r"receive-side.*send-side"):
        rtcbench.resolve("seed001-sudden-reduction", ["controller.gcc-draft.deployment=sideways"])
