"""Call topologies as scenario data (docs/scenarios.md, "Call topologies"): a call relayed through
TURN, a mesh, one sender to many viewers, and an SFU, each checked against the behaviour it
should show, with the same nodes and links as the browser tests (tests/test_browser.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import polars as pl
import pytest

import rtcbench
from rtcbench.emulation import media
from rtcbench.runner import RunResult

Simulate = Callable[..., tuple[RunResult, ...]]

SETTLED_US = 10_000_000
"""Rates are compared after the first 10 s, once the controllers have ramped up."""

NARROW = ("links.SD.capacity=600kbps",)
"""sfu-4 with D's downlink narrowed: the three streams it carries share 600 kbit/s."""


def _calls(r: RunResult) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in r.summary["meta"]["calls"]}


def _flows(r: RunResult) -> dict[str, dict[str, Any]]:
    return {f["name"]: f for f in r.summary["meta"]["flows"]}


def _settled(r: RunResult, column: str) -> dict[str, float]:
    """Each flow's mean of a time-series column after `SETTLED_US`, by flow name."""
    late = r.timeseries.filter(pl.col("t_us") >= SETTLED_US)
    means = late.group_by("flow_name").agg(pl.col(column).mean())
    return {str(name): float(v) for name, v in means.iter_rows() if v is not None}


def _target(r: RunResult, call: str) -> float:
    """A call's mean controller target after `SETTLED_US`."""
    c = r.tables.controller
    rows = c.filter((pl.col("call") == _calls(r)[call]["id"]) & (pl.col("t_us") >= SETTLED_US))
    return float(rows.get_column("target_bps").mean())  # type: ignore[arg-type]


def test_every_mesh_stream_gets_most_of_its_cap(simulate: Simulate) -> None:
    (r,) = simulate("mesh-3", "gcc")
    recv = _settled(r, "recv_rate_bps")
    fps = _settled(r, "fps")
    streams = [f"meeting.{a}-{b}" for a in "ABC" for b in "ABC" if a != b]
    assert [c["name"] for c in r.summary["meta"]["calls"]] == streams
    for s in streams:
        assert recv[f"{s}.video"] >= 0.6 * 500_000, (s, recv[f"{s}.video"])
        assert abs(fps[f"{s}.video"] - 15) <= 0.2 * 15, (s, fps[f"{s}.video"])


def test_sfu_publishers_fit_their_uplinks_and_every_viewer_gets_every_publishers_frames(
    simulate: Simulate,
) -> None:
    (r,) = simulate("sfu-4", "gcc")
    calls = _calls(r)
    flows = _flows(r)
    packets = r.tables.packets
    for p in "ABCD":
        # Everything the uplink carries (the published stream and this node's RTCP to S) stays
        # under its 1 Mbit/s, and nothing is lost there.
        on_uplink = [f["id"] for f in flows.values() if f["path"] and f["path"][0] == f"{p}S"]
        sent = packets.filter((pl.col("event") == "sent") & pl.col("flow").is_in(on_uplink))
        rate = int(sent.get_column("size").sum()) * 8 / r.summary["meta"]["duration_s"]
        assert 200_000 < rate < 1_000_000, (p, rate)
        dropped = packets.filter((pl.col("event") == "dropped") & pl.col("flow").is_in(on_uplink))
        assert dropped.height == 0, p
    legs = [c for c in calls.values() if c["role"] == "forward"]
    assert len(legs) == 12
    fps = _settled(r, "fps")
    frames = r.tables.frames
    for leg in legs:
        publish = r.summary["meta"]["calls"][leg["forwards"]]
        assert abs(fps[f"{leg['name']}.video"] - 15) <= 0.2 * 15, (leg["name"], fps[f"{leg['name']}.video"])
        # The leg's frames are the publisher's (index and capture time), rendered at the viewer.
        mine = frames.filter(pl.col("flow") == flows[f"{leg['name']}.video"]["id"])
        theirs = frames.filter(pl.col("flow") == flows[f"{publish['name']}.video"]["id"])
        assert mine.select("frame", "capture_us").equals(theirs.select("frame", "capture_us"))
        rendered = mine.filter(pl.col("render_us") >= 0)
        assert rendered.height >= 0.95 * mine.height, leg["name"]
        assert (rendered.get_column("render_us") > rendered.get_column("capture_us") + 40_000).all()


def test_a_narrow_downlink_holds_the_publishers_it_carries_down_by_remb(simulate: Simulate) -> None:
    # D's 600 kbit/s downlink carries A's, B's and C's streams: the SFU tells each of them the
    # least of its downlinks' targets, which is D's, while their other downlinks could take more.
    # Together they are held to what D's downlink carries (900 kbit/s unconstrained). How the
    # three downlink controllers share it is GoogCC's own fairness, not the REMB path: since
    # model revision 14 (the loss-based estimator with Chromium 156's defaults) they split it
    # 250 / 202 / 145 kbit/s (each within 15 % of a third, under 0.8 of the wide downlinks'
    # 300, before), and each publisher follows its own share.
    (r,) = simulate("sfu-4", "gcc", 1, NARROW)
    send = _settled(r, "send_rate_bps")
    assert sum(send[f"room.{p}-S.video"] for p in "ABC") < 1.15 * 600_000
    for p in "ABC":
        narrow, wide = _target(r, f"room.{p}-D"), min(_target(r, f"room.{p}-{v}") for v in "ABC" if v != p)
        assert narrow < wide, (p, narrow, wide)
        assert 0.9 * narrow < _target(r, f"room.{p}-S") < 1.1 * narrow, p
    # D's stream does not cross D's downlink: it keeps its 300 kbit/s.
    assert send["room.D-S.video"] > 0.9 * 300_000
    feedback = r.tables.feedback.filter(pl.col("kind") == "remb")
    publish_ids = [c["id"] for c in r.summary["meta"]["calls"] if c["role"] == "publish"]
    assert set(feedback.get_column("call").unique().to_list()) == set(publish_ids)


def test_the_uplink_estimate_at_the_sfu_stays_above_what_the_narrow_downlink_allows(
    simulate: Simulate,
) -> None:
    # gcc-draft estimates at the receiver (GCC-02 §3), so the SFU's uplink receiver has an estimate
    # of its own (the publish call's `rx_` columns): A's uplink could carry more than A sends.
    (r,) = simulate("sfu-4", "gcc-draft", 1, NARROW)
    c = r.tables.controller
    a = c.filter((pl.col("call") == _calls(r)["room.A-S"]["id"]) & (pl.col("t_us") >= SETTLED_US))
    uplink = float(a.get_column("rx_delay_based_bps").mean())  # type: ignore[arg-type]
    target = float(a.get_column("target_bps").mean())  # type: ignore[arg-type]
    assert target < 1.15 * 600_000 / 3 and uplink > 1.2 * target, (uplink, target)


def test_a_relayed_call_crosses_the_relay_with_turn_framing(simulate: Simulate, tmp_path: Path) -> None:
    (r,) = simulate("turn-relay", "gcc")
    flows = _flows(r)
    assert flows["call0.video"]["path"] == ["AT", "TB"]
    assert flows["call0.rtcp-rx"]["path"] == ["BT", "TA"]
    (call,) = r.summary["meta"]["calls"]
    assert (call["via"], call["topology"], call["role"]) == ("T", "p2p", "call")
    assert _settled(r, "recv_rate_bps")["call0.video"] > 0.9 * 500_000
    # The same call routed the same way without `via`: every packet 4 bytes shorter (TURN's
    # ChannelData header, RFC 8656 §12.4).
    text = (Path(__file__).parent.parent / "scenarios" / "topologies" / "turn.toml").read_text()
    direct = tmp_path / "direct.toml"
    direct.write_text(text.replace('via = "T"\n', ""))
    (d,) = rtcbench.run(str(direct), "gcc", 1, figure=False)
    first = pl.col("event") == "sent"
    relayed_sizes = r.tables.packets.filter(first).get_column("size").head(20).to_list()
    direct_sizes = d.tables.packets.filter(first).get_column("size").head(20).to_list()
    assert [a - b for a, b in zip(relayed_sizes, direct_sizes, strict=True)] == [4] * 20


def test_one_sender_shares_its_uplink_fairly_among_its_viewers(simulate: Simulate) -> None:
    (r,) = simulate("one-to-many-3", "gcc")
    (uplink,) = [b for b in r.summary["fairness"]["bottlenecks"] if b["link"] == "AR"]
    assert [f["name"] for f in uplink["flows"]] == ["cast.A-B.video", "cast.A-C.video", "cast.A-D.video"]
    assert uplink["jain_index"] >= 0.9, uplink["jain_index"]


def test_meta_describes_every_call_of_a_conference_for_the_browser_mode(simulate: Simulate) -> None:
    (r,) = simulate("sfu-4", "gcc")
    meta = r.summary["meta"]
    assert meta["conferences"] == [
        {"name": "room", "topology": "sfu", "participants": ["A", "B", "C", "D"], "source": None,
         "sfu": "S", "via": None}
    ]  # fmt: skip
    calls = meta["calls"]
    keys = ("name", "sender", "receiver", "conference", "topology", "via", "role", "forwards", "sfu")
    assert [tuple(c[k] for k in keys) for c in calls[:5]] == [
        ("room.A-S", "A", "S", "room", "sfu", None, "publish", None, "S"),
        ("room.B-S", "B", "S", "room", "sfu", None, "publish", None, "S"),
        ("room.C-S", "C", "S", "room", "sfu", None, "publish", None, "S"),
        ("room.D-S", "D", "S", "room", "sfu", None, "publish", None, "S"),
        ("room.A-B", "S", "B", "room", "sfu", None, "forward", 0, "S"),
    ]
    # Forward legs in (publisher, viewer) order, each naming its publish call.
    legs = [(calls[c["forwards"]]["sender"], c["receiver"]) for c in calls if c["role"] == "forward"]
    assert legs == [(p, v) for p in "ABCD" for v in "ABCD" if p != v]
    (o,) = simulate("one-to-many-3", "gcc")
    assert o.summary["meta"]["conferences"][0]["source"] == "A"
    assert {c["topology"] for c in o.summary["meta"]["calls"]} == {"one-to-many"}


def test_a_conferences_settings_take_overrides(simulate: Simulate) -> None:
    sets = ("conferences.meeting.call.video.max=200kbps", "conferences.0.call.video.start=100kbps")
    (r,) = simulate("mesh-3", "gcc", 1, sets)
    assert {c["video_max_bps"] for c in r.summary["meta"]["calls"]} == {200_000}
    assert max(_settled(r, "send_rate_bps").values()) < 1.1 * 200_000


def test_emulation_runs_mesh_streams_as_calls_and_refuses_relays_and_sfus() -> None:
    (mesh,) = rtcbench.resolve("mesh-3")
    planned = media.plan(mesh, 1)
    assert [(c.index, c.name, c.src, c.dst) for c in planned][:2] == [
        (0, "meeting.A-B", "A", "B"),
        (1, "meeting.A-C", "A", "C"),
    ]
    assert len(planned) == 6 and all(c.plan["call"] == c.index for c in planned)
    for scenario, field in (("turn-relay", "calls.0.via"), ("sfu-4", 'conferences.0 (topology "sfu")')):
        (variant,) = rtcbench.resolve(scenario)
        with pytest.raises(media.MediaError) as refused:
            media.plan(variant, 1)
        line = str(refused.value)
        assert "\n" not in line and f"{scenario}: {field}" in line and "cannot be emulated" in line, line


class _Started(rtcbench.Controller):
    """Holds each call's start rate and records which calls it was built for."""

    calls: ClassVar[list[int]] = []

    def on_start(self, call: rtcbench.CallInfo) -> None:
        self.rate = float(call.start_rate_bps)
        _Started.calls.append(int(call.call))

    def on_feedback(self, now_us: int, report: rtcbench.FeedbackReport) -> None:
        pass

    def target_rate(self) -> float:
        return self.rate


def test_a_python_controller_runs_every_call_of_a_conference_downlinks_included() -> None:
    # One controller per call of meta.calls: the 4 publishers' and the SFU's 12 downlinks'.
    _Started.calls.clear()
    (r,) = rtcbench.run("sfu-4", _Started, 1, sets=("duration=3s",), figure=False)
    assert sorted(_Started.calls) == list(range(16))
    assert set(r.tables.controller.get_column("call").unique().to_list()) == set(range(16))
