"""Media agents (crates/rtcbench-live `rtcbench-media`; docs/emulation.md, "Media"): a scenario's
calls on real UDP sockets between a testbed's hosts, each end the simulator's own sans-IO
endpoint built from the same plan, through the relay.

Without root: the plan and the agent's one-line refusals. With root: a GoogCC call over an
emulated 1 Mbit/s link finds the capacity and holds it, as the same call does in simulation.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import rtcbench
from rtcbench import testbed
from rtcbench.emulation import media
from rtcbench.testbed import relay

MISSING = testbed.missing()
needs_root = pytest.mark.skipif(MISSING is not None, reason=f"builds network namespaces: {MISSING}")

SCENARIO = """
id = "media-test"
duration = "{duration}"

[[links]]
name = "ab"
from = "A"
to = "B"
capacity = "1Mbps"
delay = "50ms"
queue = {{ size = "300ms" }}

[[links]]
name = "ba"
from = "B"
to = "A"
delay = "50ms"

[[calls]]
name = "video"
from = "A"
to = "B"
"""


def variant(tmp_path: Path, duration: str = "20s") -> rtcbench.Variant:
    path = tmp_path / "media.toml"
    path.write_text(SCENARIO.format(duration=duration))
    return rtcbench.resolve(path)[0]


def test_the_agents_are_planned_as_the_simulator_builds_the_call(tmp_path: Path) -> None:
    (call,) = media.plan(variant(tmp_path), seed=1)
    assert (call.index, call.name, call.src, call.dst) == (0, "video", "A", "B")
    p = call.plan
    assert (p["start"], p["stop"], p["report_interval"]) == ("0ms", "20s", "1s")
    # RFC 8867 §4.3's defaults; the limits are totals over video and audio.
    assert p["video"]["min_rate"] == "150kbps" and p["video"]["max_rate"] == "1500kbps"
    assert (p["min_rate"], p["max_rate"], p["start_rate"]) == ("170kbps", "1520kbps", "170kbps")
    # The stream ids come from the seed, as in the simulator: another seed, other ids.
    (other,) = media.plan(variant(tmp_path), seed=2)
    assert other.plan["ids"] != p["ids"] and media.plan(variant(tmp_path), seed=1)[0].plan == p


def test_an_agent_refuses_an_unknown_controller_in_one_line(tmp_path: Path) -> None:
    (call,) = media.plan(variant(tmp_path), seed=1)
    cfg = tmp_path / "agent.json"
    cfg.write_text(
        json.dumps(
            {
                "role": "sender",
                "controller": "vegas",
                "plan": call.plan,
                "local": "127.0.0.1:5004",
                "peer": "127.0.0.1:5006",
                "end": "1s",
                "log": str(tmp_path / "log.jsonl"),
            }
        )
    )
    done = subprocess.run([media.binary(), cfg], capture_output=True, text=True, timeout=10)
    assert done.returncode == 2
    assert done.stderr == (
        f'rtcbench-media: {cfg}: controller "vegas" is not built in '
        "(built-in: gcc, gcc-draft, nada, scream, scream2, fixed)\n"
    )


@needs_root
def test_a_gcc_call_finds_and_holds_an_emulated_megabit(tmp_path: Path) -> None:
    v = variant(tmp_path)
    with testbed.build(v) as bed:
        r = relay.start(bed, v, seed=1, out_dir=tmp_path / "relay")
        calls = media.start(bed, v, seed=1, controller="gcc", out_dir=tmp_path / "media")
        t0 = r.go()
        calls.go(t0)
        calls.wait(30.0)
        report = r.stop()
    logs = calls.logs()
    received = logs[("video", "receiver")]
    sent = logs[("video", "sender")]
    rate = media.media_rate_bps(received, 10.0, 20.0)
    assert 0.7e6 <= rate <= 1.0e6, rate
    targets = [x["target_bps"] for x in sent if x["event"] == "controller" and x["t_us"] >= 10e6]
    assert targets and 0.6e6 <= sum(targets) / len(targets) <= 1.1e6
    completed = [x for x in received if x["event"] == "frame_completed"]
    assert len(completed) > 20 * 25  # of about 30 frames per second
    # Every RTP datagram the sender sent reached the receiver (which listens a second longer) or
    # was dropped by the link (whose drops may include a sender report).
    media_sent = sum(1 for x in sent if x["event"] == "sent" and x["kind"] != "rtcp")
    media_received = sum(1 for x in received if x["event"] == "received" and not x["rtcp"])
    assert 0 <= media_sent - media_received <= sum(report.links["ab"].dropped.values())
