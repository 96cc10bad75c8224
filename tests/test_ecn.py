"""ECN from end to end in the simulator (docs/queues.md, "ECN"): what each flow sent, what the
queues marked, what the feedback told the sender, and what a bleaching hop leaves of it; and a
DualPI2 link's state in the links table, agreeing with the packets it marked."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import rtcbench
from rtcbench.runner import RunResult

SCENARIO = """
id = "ecn-check"
duration = "20s"

[[links]]
name = "access"
from = "A"
to = "R"
delay = "10ms"
{bleach}

[[links]]
name = "forward"
from = "R"
to = "B"
delay = "10ms"
capacity = "1Mbps"
queue = {{ kind = "dualpi2", size = "300ms" }}

[[links]]
name = "backward"
from = "B"
to = "A"
delay = "20ms"

[[calls]]
from = "A"
to = "B"
ecn = "ect1"
video = {{ min = "150kbps", max = "2Mbps", start = "300kbps" }}

[[tcp]]
from = "A"
to = "B"
start = "5s"
"""


def _run(tmp_path: Path, bleach: bool) -> RunResult:
    path = tmp_path / "ecn.toml"
    path.write_text(SCENARIO.format(bleach="bleach_ecn = true" if bleach else ""))
    (result,) = rtcbench.run(str(path), "scream", 1)
    return result


@pytest.fixture(scope="module")
def marked(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    return _run(tmp_path_factory.mktemp("marked"), bleach=False)


def _flows(r: RunResult) -> dict[str, dict[str, object]]:
    return {str(f["name"]): f for f in r.summary["flows"]}


def test_each_flow_counts_what_it_sent_ecn_capable_and_what_arrived_marked(marked: RunResult) -> None:
    flows = _flows(marked)
    packets = marked.tables.packets
    for name, f in flows.items():
        fid = int(f["id"])  # type: ignore[call-overload]
        mine = packets.filter(pl.col("flow") == fid)
        sent = mine.filter(pl.col("event") == "sent")
        arrived_ce = mine.filter((pl.col("event") == "received") & (pl.col("ecn") == "ce")).height
        assert f["ect1_packets_sent"] == sent.filter(pl.col("ecn") == "ect1").height, name
        assert f["ect0_packets_sent"] == 0, name
        assert f["ce_packets_received"] == arrived_ce, name
    # The call's media is ECT(1), its RTCP and the TCP flow are not.
    assert flows["call0.video"]["ect1_packets_sent"] == flows["call0.video"]["packets_sent"]
    assert flows["call0.audio"]["ect1_packets_sent"] == flows["call0.audio"]["packets_sent"]
    assert flows["tcp0"]["ect1_packets_sent"] == 0 and flows["tcp0"]["ce_packets_received"] == 0
    # The L queue marked the media, and the share is of the packets that arrived.
    video = flows["call0.video"]
    assert int(video["ce_packets_received"]) > 20  # type: ignore[call-overload]
    assert video["ce_ratio"] == int(video["ce_packets_received"]) / int(video["packets_received"])  # type: ignore[call-overload]


def test_the_feedback_reports_each_mark_once(marked: RunResult) -> None:
    """RFC 8888 reports overlap; `ce_reported` counts a packet's mark the first time a report
    carries it, so over the run it is the marks that arrived, less those of packets still
    unreported at the end."""
    flows = _flows(marked)
    arrived = sum(int(flows[f"call0.{m}"]["ce_packets_received"]) for m in ("video", "audio"))  # type: ignore[call-overload]
    reported = int(flows["call0.video"]["ce_reported"])  # type: ignore[call-overload]
    assert arrived - 3 <= reported <= arrived
    ccfb = marked.tables.feedback.filter(pl.col("kind") == "ccfb")
    assert int(ccfb.get_column("ce_reported").sum()) == reported
    assert marked.tables.feedback.filter(pl.col("kind") != "ccfb").get_column("ce_reported").null_count() > 0


def test_a_dualpi2_links_rows_hold_its_queues_and_agree_with_the_packets(marked: RunResult) -> None:
    links = marked.tables.links
    dual = links.filter(pl.col("link") == "forward")
    other = links.filter(pl.col("link") != "forward")
    columns = ["l_queue_bytes", "l_sojourn_us", "c_sojourn_us", "p_base", "p_c", "p_cl", "p_l",
               "l_marks", "c_marks", "l_drops", "c_drops"]  # fmt: skip
    assert all(dual.get_column(c).null_count() == 0 for c in columns)
    assert all(other.get_column(c).null_count() == other.height for c in columns)
    # The queue's counters per sample add up to the packets marked and dropped on the link.
    packets = marked.tables.packets
    marks = packets.filter((pl.col("event") == "received") & (pl.col("ecn") == "ce")).height
    drops = packets.filter((pl.col("event") == "dropped") & (pl.col("link") == "forward")).height
    assert int(dual.get_column("l_marks").sum()) + int(dual.get_column("c_marks").sum()) == marks
    assert int(dual.get_column("l_drops").sum()) + int(dual.get_column("c_drops").sum()) == drops
    # RFC 9332: p_C = p'^2 and p_CL = min(k p', 1) with k = 2, at every sample.
    p = dual.get_column("p_base")
    assert (dual.get_column("p_c") - p * p).abs().max() < 1e-12  # type: ignore[operator]
    assert (dual.get_column("p_cl") - (2 * p).clip(upper_bound=1.0)).abs().max() < 1e-12  # type: ignore[operator]
    # The TCP flow fills the C queue: p' rises once it starts, and the L queue stays short.
    assert float(dual.filter(pl.col("t_us") > 10_000_000).get_column("p_base").max()) > 0.0  # type: ignore[arg-type]
    assert int(dual.get_column("l_queue_bytes").max()) < int(dual.get_column("queue_bytes").max())  # type: ignore[arg-type]


def test_a_bleaching_hop_leaves_nothing_to_mark(tmp_path: Path) -> None:
    bleached = _run(tmp_path, bleach=True)
    video = _flows(bleached)["call0.video"]
    # Sent ECT(1), arrived Not-ECT: DualPI2 classifies it as classic, so it is never in the L
    # queue and never marked, and the feedback tells the sender its packets arrived Not-ECT.
    assert video["ect1_packets_sent"] == video["packets_sent"]
    assert video["ce_packets_received"] == 0 and video["ce_reported"] == 0
    received = bleached.tables.packets.filter(pl.col("event") == "received")
    assert set(received.get_column("ecn").unique()) == {"not-ect"}
    dual = bleached.tables.links.filter(pl.col("link") == "forward")
    assert int(dual.get_column("l_queue_bytes").max()) == 0  # type: ignore[arg-type]
    assert int(dual.get_column("l_marks").sum()) == 0
