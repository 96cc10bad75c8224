"""ECN through the emulation relay (docs/emulation.md, "ECN on real packets"): an emulated call
with ECT(1) media through a DualPI2 bottleneck that marks, and through a link that bleaches the
ECN field, captured (`--pcap`) and read back by tshark (`make tshark`).

The capture is taken at the relay, on both sides of the emulated network: the sent leg (the
`--pcap` file, `relay-in.pcap`) has every frame as it reached the relay from its sender's
interface, before any link, the ECN field as the sender set it; the received leg
(`emulation/relay/relay-out.pcap` in the run's folder) has it as the relay handed it to its
receiver's interface, after every link of its route, CE where a queue marked it and Not-ECT where
a link bleached it. Both are the IP packets themselves, so tshark checks the IPv4 header checksum
the relay rewrote with every mark, and the ECN field of every frame is held against the packets
table's `ecn` for that packet's `sent` or `received` row.

The summary's ECN counts (`ect0_packets_sent`, `ect1_packets_sent`, `ce_packets_received`,
`ce_ratio`, and the video flow's `ce_reported`, from the media agent's RFC 8888 feedback as
SCReAMv2 gets it) are held against the same table, and the DualPI2 link's rows in the links table
(the relay's samples) against the marks, as the summary's `l4s` block. Two emulated runs of 12 s:
the default tier, as root.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from tests.realtime import assert_valid
from tests.test_pcap import tshark_fields

import rtcbench
from rtcbench import _core, testbed
from rtcbench.identity import EMULATE
from rtcbench.runner import RunResult

MISSING = testbed.missing()
needs_root = pytest.mark.skipif(MISSING is not None, reason=f"builds network namespaces: {MISSING}")

SCENARIO = """
id = "emu-ecn"
duration = "12s"

[[links]]
name = "access"
from = "A"
to = "R"
delay = "5ms"
{bleach}

[[links]]
name = "forward"
from = "R"
to = "B"
delay = "10ms"
capacity = "600kbps"
queue = {{ kind = "dualpi2", size = "300ms" }}

[[links]]
name = "backward"
from = "B"
to = "A"
delay = "15ms"

[[calls]]
from = "A"
to = "B"
ecn = "ect1"
video = {{ min = "150kbps", max = "2Mbps", start = "300kbps" }}
"""
"""SCReAMv2 (RFC 8888 feedback) ramps past the 600 kbit/s bottleneck within seconds, so the L
queue's step marks its media (a few hundred marks in 12 s); the access link bleaches the ECN field
of every packet before it reaches the bottleneck when asked."""

CONTROLLER = "scream2"
CAPTURE_EPOCH_US = 1_767_225_600_000_000  # Instant::ZERO in a capture: 2026-01-01 (rtcbench_wire::pcap)
ECN_NAME = dict(enumerate(_core.trace_codes()["ecn"]))
"""The IP ECN field's value → the packets table's `ecn` (`not-ect`, `ect1`, `ect0`, `ce`)."""
DUALPI2_COLUMNS = ["l_queue_bytes", "l_sojourn_us", "c_sojourn_us", "p_base", "p_c", "p_cl", "p_l",
                   "l_marks", "c_marks", "l_drops", "c_drops"]  # fmt: skip


def _emulate(tmp_path: Path, *, bleach: bool) -> tuple[RunResult, Path, Path]:
    """The emulated run, its sent leg (`--pcap`) and its received leg."""
    path = tmp_path / "ecn.toml"
    path.write_text(SCENARIO.format(bleach="bleach_ecn = true" if bleach else ""))
    sent_pcap = tmp_path / "sent.pcap"
    (run,) = rtcbench.run(path, CONTROLLER, 1, tmp_path / "out", figure=False, mode=EMULATE, pcap=sent_pcap)
    assert_valid(run)
    # Every frame's record reached the captures (their order is the frames' numbering).
    assert run.summary["emulation"]["relay"]["records_lost"] == 0
    assert run.path is not None
    return run, sent_pcap, run.path / "emulation" / "relay" / "relay-out.pcap"


def _capture(path: Path) -> pl.DataFrame:
    """One row per frame of a capture: its time on the run's clock (µs), IP length, ECN (by the
    packets table's name) and whether tshark found its IPv4 header checksum good."""
    rows = tshark_fields(path, "frame.time_epoch", "ip.len", "ip.dsfield.ecn", "ip.checksum.status")
    parsed = []
    for stamp, length, ecn, checksum in rows:
        seconds, _, fraction = stamp.partition(".")
        t_us = int(seconds) * 1_000_000 + int(fraction[:6].ljust(6, "0")) - CAPTURE_EPOCH_US
        parsed.append((t_us, int(length), ECN_NAME[int(ecn)], checksum))
    schema = {"t_us": pl.Int64, "size": pl.Int32, "ecn": pl.String, "checksum": pl.String}
    return pl.DataFrame(parsed, schema=schema, orient="row").with_row_index("frame")


def _check_captures(run: RunResult, sent_pcap: Path, received_pcap: Path) -> dict[str, pl.DataFrame]:
    """Both legs of the capture agree with the packets table, frame by frame; returns them."""
    packets = run.tables.packets
    end_us = round(float(run.tables.meta["duration_s"]) * 1e6)
    sent_leg, received_leg = _capture(sent_pcap), _capture(received_pcap)
    # tshark validates every IPv4 header checksum (a CE mark rewrites the header: RFC 1624's
    # incremental update).
    for leg in (sent_leg, received_leg):
        assert leg.height > 500
        assert set(leg["checksum"]) == {"1"}, leg.filter(pl.col("checksum") != "1").head(3)

    # The sent leg holds every frame in the order the relay numbered them: frame k is packet k.
    sent = packets.filter(pl.col("event") == "sent").sort("packet")
    joined = sent.join(sent_leg, left_on="packet", right_on="frame", how="left", suffix="_cap")
    assert joined["t_us_cap"].null_count() == 0
    assert (joined["t_us"] == joined["t_us_cap"]).all() and (joined["size"] == joined["size_cap"]).all()
    differ = joined.filter(pl.col("ecn") != pl.col("ecn_cap"))
    assert differ.height == 0, differ.head()

    # The received leg is in the order frames left; a frame is known by when it left and its size,
    # and the ECN fields of the frames that left at one microsecond with one size are the table's.
    received = packets.filter((pl.col("event") == "received") & (pl.col("packet") >= 0))
    captured = received_leg.filter(pl.col("t_us") <= end_us)

    def by_key(df: pl.DataFrame) -> dict[tuple[int, int], Counter[str]]:
        out: dict[tuple[int, int], Counter[str]] = {}
        for t_us, size, ecn in df.select("t_us", "size", "ecn").iter_rows():
            out.setdefault((t_us, size), Counter())[ecn] += 1
        return out

    assert by_key(captured) == by_key(received)
    assert captured.height == received.height
    return {"sent": sent_leg, "received": captured}


def _flows(run: RunResult) -> dict[str, dict[str, Any]]:
    return {str(f["name"]): f for f in run.summary["flows"]}


def _check_summary_counts(run: RunResult) -> dict[str, dict[str, Any]]:
    """Every flow's ECN counts are filled and are the packets table's."""
    packets = run.tables.packets
    flows = _flows(run)
    for name, f in flows.items():
        mine = packets.filter(pl.col("flow") == int(f["id"]))
        sent = mine.filter(pl.col("event") == "sent")
        received = mine.filter(pl.col("event") == "received")
        ce = received.filter(pl.col("ecn") == "ce").height
        assert f["ect0_packets_sent"] == sent.filter(pl.col("ecn") == "ect0").height == 0, name
        assert f["ect1_packets_sent"] == sent.filter(pl.col("ecn") == "ect1").height, name
        assert f["ce_packets_received"] == ce, name
        assert f["ce_ratio"] == ce / received.height, name
    # The call's RTP is ECT(1), its RTCP Not-ECT both ways, as in the simulator.
    for media in ("call0.video", "call0.audio"):
        assert flows[media]["ect1_packets_sent"] == flows[media]["packets_sent"] > 100
    for rtcp in ("call0.rtcp-tx", "call0.rtcp-rx"):
        assert flows[rtcp]["ect1_packets_sent"] == 0 and flows[rtcp]["packets_sent"] > 0
    # The sender's RFC 8888 feedback: `ce_reported` counts each mark the first time a report
    # carries it (video and audio alike: the receiver reports every SSRC), so it is the marks that
    # arrived less those of packets still unreported at the end.
    video = flows["call0.video"]
    ccfb = run.tables.feedback.filter(pl.col("kind") == "ccfb")
    assert ccfb.height > 100
    assert video["ce_reported"] == int(ccfb["ce_reported"].sum())
    arrived = flows["call0.video"]["ce_packets_received"] + flows["call0.audio"]["ce_packets_received"]
    assert arrived - 3 <= video["ce_reported"] <= arrived
    return flows


def _dualpi2_rows(run: RunResult) -> pl.DataFrame:
    """The bottleneck's rows in the links table: every DualPI2 column filled there, and only there."""
    links = run.tables.links
    dual, other = links.filter(pl.col("link") == "forward"), links.filter(pl.col("link") != "forward")
    assert dual.height > 1000  # every 10 ms
    for c in DUALPI2_COLUMNS:
        assert dual[c].null_count() == 0, c
        assert other[c].null_count() == other.height, c
    p = dual["p_base"]
    assert (dual["p_c"] - p * p).abs().max() < 1e-12  # type: ignore[operator]
    assert (dual["p_cl"] - (2 * p).clip(upper_bound=1.0)).abs().max() < 1e-12  # type: ignore[operator]
    return dual


@needs_root
def test_marks_through_the_relay_reach_the_capture_the_tables_and_the_feedback(tmp_path: Path) -> None:
    run, sent_pcap, received_pcap = _emulate(tmp_path, bleach=False)
    legs = _check_captures(run, sent_pcap, received_pcap)
    flows = _check_summary_counts(run)

    # Hosts send no CE; the bottleneck's L queue marked the media it delayed.
    assert "ce" not in set(legs["sent"]["ecn"])
    ce_frames = legs["received"].filter(pl.col("ecn") == "ce").height
    marked = sum(f["ce_packets_received"] for f in flows.values())
    assert ce_frames == marked > 50
    assert flows["call0.video"]["ce_packets_received"] > 20 and flows["call0.video"]["ce_reported"] > 20

    # The relay's samples count those marks: each when its packet left the queue, so a packet
    # still in the link's 10 ms delay at the end is counted but not received.
    dual = _dualpi2_rows(run)
    l_marks = int(dual["l_marks"].sum())
    assert marked <= l_marks + int(dual["c_marks"].sum()) <= marked + 5
    assert l_marks > 50
    drops = run.tables.packets.filter((pl.col("event") == "dropped") & (pl.col("link") == "forward")).height
    assert int(dual["l_drops"].sum()) + int(dual["c_drops"].sum()) == drops
    assert int(dual["l_queue_bytes"].max()) > 0  # type: ignore[arg-type]
    # So the summary has its `l4s` block (docs/l4s.md), as a simulated run over the same link.
    (queue,) = run.summary["l4s"]
    assert queue["link"] == "forward" and queue["l_marks"] == l_marks


@needs_root
def test_a_bleaching_link_leaves_nothing_ect_and_nothing_to_mark(tmp_path: Path) -> None:
    run, sent_pcap, received_pcap = _emulate(tmp_path, bleach=True)
    legs = _check_captures(run, sent_pcap, received_pcap)
    flows = _check_summary_counts(run)

    # The sender's media left ECT(1); after the access link nothing is ECN-capable, so DualPI2
    # classifies it all as classic and marks nothing.
    assert "ect1" in set(legs["sent"]["ecn"])
    assert set(legs["received"]["ecn"]) == {"not-ect"}
    assert all(f["ce_packets_received"] == 0 for f in flows.values())
    assert flows["call0.video"]["ce_reported"] == 0
    dual = _dualpi2_rows(run)
    assert int(dual["l_queue_bytes"].max()) == 0  # type: ignore[arg-type]
    assert int(dual["l_marks"].sum()) == 0
    (queue,) = run.summary["l4s"]
    assert queue["link"] == "forward" and queue["l_marks"] == 0
