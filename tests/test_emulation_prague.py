"""TCP Prague in emulation (docs/emulation.md, "Cross traffic"; docs/l4s.md): the kernel here has
no `tcp_prague`, so a scenario's `cc = "prague"` runs in `rtcbench-prague`, the simulator's own
Prague sender and AccECN receiver (`rtcbench-tcp`) over UDP between the namespaces.

Held to the simulator on the same scenario: one Prague flow beside an ECT(1) SCReAMv2 call through
a 10 Mbit/s DualPI2 bottleneck, 12 s emulated (default tier, as root). The bands come from
measurement (2026-11-29, model revision 16; two Prague flows and a call at 20 Mbit/s, 20 s:
Prague 9.42 and 8.42 Mbit/s emulated against 9.09 and 8.79 simulated, CE fraction 0.219 and 0.228
against 0.213 and 0.215, L-queue sojourn p99 2.79 ms against 2.60 ms): a Prague flow's throughput
within 15 % of the simulator's, its CE fraction within 0.05, the L queue's p99 under 5 ms in both
and within 1.5 ms of each other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from tests.realtime import assert_valid

import rtcbench
from rtcbench import testbed
from rtcbench.identity import EMULATE
from rtcbench.runner import RunResult
from rtcbench.testbed import cross

MISSING = testbed.missing()
needs_root = pytest.mark.skipif(MISSING is not None, reason=f"builds network namespaces: {MISSING}")

SCENARIO = """
id = "emu-prague"
duration = "12s"

[[links]]
name = "forward"
from = "A"
to = "B"
delay = "10ms"
capacity = "10Mbps"
queue = { kind = "dualpi2", size = "250ms" }

[[links]]
name = "backward"
from = "B"
to = "A"
delay = "10ms"

[[calls]]
name = "media"
from = "A"
to = "B"
ecn = "ect1"
video = { min = "150kbps", max = "10Mbps", start = "1Mbps", fps = 30 }

[[tcp]]
name = "prague"
from = "A"
to = "B"
cc = "prague"
start = "1s"
"""

CONTROLLER = "scream2"


def _variant(tmp_path: Path, text: str = SCENARIO) -> rtcbench.Variant:
    path = tmp_path / "prague.toml"
    path.write_text(text)
    (variant,) = rtcbench.resolve(path)
    return variant


def test_prague_is_planned_for_rtcbench_prague_over_udp(tmp_path: Path) -> None:
    (flow,) = cross.plan(_variant(tmp_path))
    assert isinstance(flow, cross.TcpFlow)
    assert (flow.cc, flow.udp, flow.start_s, flow.stop_s) == ("prague", True, 1.0, 12.0)
    # The kernel is not asked for a `prague` it does not have.
    cross.require_congestion_controls([flow])


def test_an_on_off_prague_flow_is_refused_in_one_line(tmp_path: Path) -> None:
    short = 'workload = { kind = "short", size_min = "30KB", size_max = "50KB", idle_mean = "1s" }\n'
    text = SCENARIO + short
    with pytest.raises(cross.CrossTrafficError) as e:
        cross.plan(_variant(tmp_path, text))
    assert str(e.value) == (
        'emu-prague: tcp.0.on_off with cc = "prague" cannot be emulated yet: rtcbench-prague runs bulk '
        'flows only (allowed: no on_off, or cc = "newreno" or "cubic")'
    )


def _flow(run: RunResult, name: str) -> dict[str, Any]:
    return next(f for f in run.summary["flows"] if f["name"] == name)


def _cross(run: RunResult, name: str) -> dict[str, Any]:
    return next(f for f in run.summary["cross_traffic"] if f["name"] == name)


def _l_p99_ms(run: RunResult) -> float:
    (link,) = run.summary["l4s"]
    return float(link["l_sojourn_p99_ms"])


def _log(run: RunResult, name: str) -> list[dict[str, Any]]:
    assert run.path is not None
    path = run.path / "emulation" / "cross" / name
    return [json.loads(line) for line in path.read_text().splitlines()]


@needs_root
def test_emulated_prague_marks_and_shares_as_the_simulated_one(tmp_path: Path) -> None:
    path = tmp_path / "prague.toml"
    path.write_text(SCENARIO)
    (emu,) = rtcbench.run(path, CONTROLLER, 1, tmp_path / "emu", figure=False, mode=EMULATE)
    assert_valid(emu)
    (sim,) = rtcbench.run(path, CONTROLLER, 1, tmp_path / "sim", figure=False)

    # On the wire: every data segment ECT(1), every ACK Not-ECT, and the DualPI2's L queue marked.
    packets = emu.tables.packets
    prague, ack = _flow(emu, "prague"), _flow(emu, "prague.ack")
    sent = packets.filter((pl.col("event") == "sent") & (pl.col("flow") == prague["id"]))
    assert sent.height > 3000 and set(sent["ecn"]) == {"ect1"} and set(sent["kind"]) == {"tcp"}
    # Data datagrams are 1500-byte IP packets carrying 1452 bytes of TCP payload.
    assert sent["size"].max() == 1500 and sent["payload"].max() == 1452
    acks = packets.filter((pl.col("event") == "sent") & (pl.col("flow") == ack["id"]))
    assert acks.height > 1000 and set(acks["ecn"]) == {"not-ect"} and set(acks["payload"]) == {0}
    assert prague["ect1_packets_sent"] == sent.height
    assert prague["ce_packets_received"] > 300

    # AccECN end to end: the sink counted the marks the relay's table has, and the sender's ACE
    # decoding recovered them, less those of its last round trip: a source stops reading ACKs at
    # its stop, and at about 8 Mbit/s and 21 ms about 15 packets are in flight (measured: 1 to 8
    # marks short).
    (connected,) = [r for r in _log(emu, "source-h0-prague.jsonl") if r["event"] == "connected"]
    assert (connected["cc"], connected["transport"]) == ("prague", "udp")
    (stop,) = [r for r in _log(emu, "source-h0-prague.jsonl") if r["event"] == "stop"]
    (end,) = [r for r in _log(emu, "sink-h1-prague.jsonl") if r["event"] == "end"]
    assert abs(end["ce_received"] - prague["ce_packets_received"]) <= 3
    assert end["ce_received"] - 20 <= stop["ce_marked"] <= end["ce_received"]
    assert stop["retransmits"] == 0 and stop["ecn_reductions"] > 50

    # Beside the simulator on the same scenario.
    emu_rate, sim_rate = _cross(emu, "prague")["throughput_bps"], _cross(sim, "prague")["throughput_bps"]
    assert abs(emu_rate - sim_rate) <= 0.15 * sim_rate, (emu_rate, sim_rate)
    assert abs(prague["ce_ratio"] - _flow(sim, "prague")["ce_ratio"]) <= 0.05
    emu_l, sim_l = _l_p99_ms(emu), _l_p99_ms(sim)
    assert emu_l < 5.0 and sim_l < 5.0 and abs(emu_l - sim_l) <= 1.5, (emu_l, sim_l)
