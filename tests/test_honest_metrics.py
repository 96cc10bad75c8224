"""Metrics that say what a paper needs: competing flows shown next to the media, rates over the
time a flow runs, fairness that names the flows it covers, and convergence that means reaching the
fair share (docs/metrics.md). Each of these read wrong numbers before (issue 12)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import rtcbench
from rtcbench.controller import Controller, FeedbackReport

LATE_CUBIC = """id = "late-cubic"
duration = "60s"

[[links]]
name = "forward"
from = "A"
to = "B"
delay = "20ms"
capacity = "4Mbps"
queue = { size = "200ms" }

[[links]]
name = "backward"
from = "B"
to = "A"
delay = "20ms"

[[calls]]
name = "G"
from = "A"
to = "B"
video = { min = "150kbps", max = "1Mbps", start = "300kbps" }

[[tcp]]
name = "late"
from = "A"
to = "B"
cc = "cubic"
start = "20s"
"""


@pytest.fixture(scope="module")
def late_cubic(tmp_path_factory: pytest.TempPathFactory) -> rtcbench.RunResult:
    path = tmp_path_factory.mktemp("late") / "late-cubic.toml"
    path.write_text(LATE_CUBIC)
    (r,) = rtcbench.run(path, "fixed")
    return r


def test_a_late_flow_is_measured_while_it_runs(late_cubic: rtcbench.RunResult) -> None:
    s = late_cubic.summary
    (tcp,) = s["cross_traffic"]
    assert (tcp["active_start_s"], tcp["active_end_s"]) == (20.0, 60.0)
    # fixed holds its 300 kbit/s start rate, so CUBIC gets most of the remaining 4 Mbit/s while it
    # runs; over the whole run the same bytes read a third lower, under their own name.
    assert 3.2e6 < tcp["throughput_bps"] < 4.0e6
    assert tcp["throughput_run_bps"] == pytest.approx(tcp["throughput_bps"] * 40 / 60, rel=1e-9)
    (flow,) = [f for f in s["flows"] if f["name"] == "late"]
    assert flow["mean_recv_rate_bps"] == pytest.approx(tcp["throughput_bps"], rel=0.02)
    assert flow["utilization"] > 0.8, "its share of the link while it runs"


def test_fairness_says_which_flows_it_covers(late_cubic: rtcbench.RunResult) -> None:
    fair = late_cubic.summary["fairness"]
    assert fair["run"]["covers"] == ["video"]
    assert fair["run"]["jain_index"] == 1.0  # one video flow: fair to itself, and says nothing more
    (link,) = fair["bottlenecks"]
    assert link["link"] == "forward" and link["covers"] == ["tcp", "video"]
    assert [f["name"] for f in link["flows"]] == ["G.video", "late"]
    # Compared while both run (from 20 s, after 5 s of settling): 0.3 against 3.5 Mbit/s.
    assert (link["start_s"], link["settle_s"]) == (20.0, 5.0)
    assert link["jain_index"] < 0.65


def test_run_prints_tcp_next_to_the_media_for_each_controller(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "rtcbench.cli", "run", "rfc8867-5.6", "--cc", "gcc,fixed", "--set",
         "queue=300ms", "--set", "tcp_cc=newreno", "--set", "duration=30s", "--no-figure",
         "--out", str(tmp_path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    for cc in ("gcc", "fixed"):
        assert f"· {cc} · seed 1" in out.stdout
    rows = [line for line in out.stdout.splitlines() if line.startswith("│ S_tcp ")]
    assert len(rows) == 2, out.stdout
    # The TCP flow's goodput is its received payload, not the media-only per-flow goodput (0).
    for row in rows:
        send, goodput = (float(c) for c in row.split("│")[2:4])
        assert 0.8 * send < goodput <= send, row
    assert out.stdout.count("Jain's index, all data flows at forward (S1.video, S_tcp)") == 2


class Greedy(Controller):
    """Always asks for 10^12 bit/s: the encoder sends its maximum whatever the network does."""

    def on_feedback(self, now_us: int, report: FeedbackReport) -> None:
        pass

    def target_rate(self) -> float:
        return 1e12


def test_convergence_is_to_the_fair_share_not_to_a_settled_rate() -> None:
    # gcc starved by TCP settles fast at a few hundred kbit/s: it has not converged.
    starved = rtcbench.run("rfc8867-5.6", "gcc", sets=["queue=300ms", "tcp_cc=newreno"])[0]
    (video,) = [f for f in starved.summary["flows"] if f["kind"] == "video"]
    assert video["utilization"] < 0.3
    assert video["settling_time_s"] is not None and video["convergence_time_s"] is None
    # Sending the encoder's 1.5 Mbit/s into a 1 Mbit/s link loses a third and never converges.
    greedy = rtcbench.run("rfc8867-5.1", Greedy, sets=["delay=50ms", "mechanism=link-rate", "duration=30s"])[
        0
    ]
    (video,) = [f for f in greedy.summary["flows"] if f["kind"] == "video"]
    assert video["loss_ratio"] > 0.2
    assert video["convergence_time_s"] is None
    # gcc alone on the 1 Mbit/s link reaches its share (0.8-1.1 of what audio and RTCP leave).
    alone = rtcbench.run("rfc8867-5.1", "gcc", seed=2, sets=["delay=50ms", "mechanism=link-rate"])[0]
    (video,) = [f for f in alone.summary["flows"] if f["kind"] == "video"]
    assert video["convergence_time_s"] is not None and video["convergence_time_s"] < 20.0


def test_the_suite_table_shows_the_udp_background_and_leaves_out_empty_columns(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "rtcbench.cli", "suite", "rfc8867-5.1", "--cc", "fixed", "--set",
         "delay=50ms", "--set", "duration=10s", "--jobs", "1", "--out", str(tmp_path)],
        capture_output=True, text=True, check=False, env={**os.environ, "COLUMNS": "150"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    header = next(line for line in out.stdout.splitlines() if "scenario" in line and "runs" in line)
    cells = [c.strip() for c in header.split("┃") if c.strip()]
    # No TCP or CBR flow in RFC 8867 §5.1, and no link two data flows share; the UDP background
    # that makes the capacity in one variant has its own column.
    assert cells == [
        "scenario", "variant", "controller", "runs", "util", "p95", "loss", "good", "frz", "bg", "jain v",
    ]  # fmt: skip
    # A row's ids may fold onto lines of their own (docs/suite.md): those lines add to its cells.
    rows: list[list[str]] = []
    for line in out.stdout.splitlines():
        parts = [c.strip() for c in line.split("│")[1:-1]]
        if line.startswith("│ rfc8867-5.1"):
            rows.append(parts)
        elif rows and parts and not parts[0]:
            rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], parts, strict=True)]
    bg = {row[1]: row[cells.index("bg")] for row in rows}
    assert bg["delay=50ms, mechanism=link-rate"] == "-", out.stdout
    assert 2000 < float(bg["delay=50ms, mechanism=udp-background"]) < 4000, out.stdout
