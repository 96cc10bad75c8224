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
    # gcc starved by CUBIC settles (at 22 s) under a hundred kbit/s: it has not converged.
    starved = rtcbench.run("rfc8867-5.6", "gcc", sets=["queue=300ms", "tcp_cc=cubic"])[0]
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
        "scenario", "variant", "controller", "runs", "util", "p95", "loss", "good", "frz", "fps", "fd95",
        "bg", "jain v",
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


# A TCP upload that runs from 20 to 40 s of a minute-long call on a link of constant capacity: one
# phase, three periods (alone, beside TCP, alone again: docs/metrics.md, "Periods").
MID_TCP = LATE_CUBIC.replace('id = "late-cubic"', 'id = "mid-tcp"').replace(
    'name = "late"\nfrom = "A"\nto = "B"\ncc = "cubic"\nstart = "20s"',
    'name = "mid"\nfrom = "A"\nto = "B"\ncc = "cubic"\nstart = "20s"\nstop = "40s"',
)


@pytest.fixture(scope="module")
def mid_tcp(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, rtcbench.RunResult]:
    path = tmp_path_factory.mktemp("mid") / "mid-tcp.toml"
    path.write_text(MID_TCP)
    (r,) = rtcbench.run(path, "gcc")
    return path, r


def test_periods_begin_where_a_competing_flow_starts_or_stops(
    mid_tcp: tuple[Path, rtcbench.RunResult],
) -> None:
    s = mid_tcp[1].summary
    assert [(p["start_s"], p["end_s"], p["capacity_bps"]) for p in s["phases"]] == [(0.0, 60.0, 4_000_000)]
    periods = s["periods"]
    assert [(p["index"], p["link"], p["phase"], p["start_s"], p["end_s"]) for p in periods] == [
        (0, "forward", 0, 0.0, 20.0),
        (1, "forward", 0, 20.0, 40.0),
        (2, "forward", 0, 40.0, 60.0),
    ]
    names = [[f["name"] for f in p["flows"] if f["kind"] in ("video", "tcp")] for p in periods]
    assert names == [["G.video"], ["G.video", "mid"], ["G.video"]]
    video = [next(f for f in p["flows"] if f["kind"] == "video") for p in periods]
    tcp = next(f for f in periods[1]["flows"] if f["name"] == "mid")
    # Alone the call reaches its 1 Mbit/s maximum; beside CUBIC it gets less, and CUBIC more than it.
    assert video[0]["mean_send_rate_bps"] > 0.8e6
    assert video[1]["mean_send_rate_bps"] < 0.8 * video[0]["mean_send_rate_bps"]
    assert tcp["mean_recv_rate_bps"] > video[1]["mean_recv_rate_bps"]
    # The one phase mixes the three: its rate lies between them.
    (phase_video,) = [f for f in s["phases"][0]["flows"] if f["kind"] == "video"]
    assert video[1]["mean_send_rate_bps"] < phase_video["mean_send_rate_bps"] < video[0]["mean_send_rate_bps"]


def test_a_period_that_is_a_flows_whole_phase_has_its_numbers(
    mid_tcp: tuple[Path, rtcbench.RunResult],
) -> None:
    s = mid_tcp[1].summary
    # CUBIC's part of the one phase is 20-40 s: the period's numbers are the phase's, exactly.
    (in_phase,) = [f for f in s["phases"][0]["flows"] if f["name"] == "mid"]
    (in_period,) = [f for f in s["periods"][1]["flows"] if f["name"] == "mid"]
    assert in_period == in_phase


def test_run_names_the_competitors_of_each_period(
    mid_tcp: tuple[Path, rtcbench.RunResult], tmp_path: Path
) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "rtcbench.cli", "run", str(mid_tcp[0]), "--no-figure", "--out", str(tmp_path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    rows = {
        cells[0]: cells[-1]
        for line in out.stdout.splitlines()
        if line.startswith("│")
        and (cells := [c.strip() for c in line.strip("│").split("│")])[0].endswith(" s")
        and cells[0][0].isdigit()
        and "-" in cells[0]
    }
    assert rows == {"0-20 s": "-", "20-40 s": "mid", "40-60 s": "-"}, out.stdout


def test_the_reports_section_table_has_a_column_per_period(mid_tcp: tuple[Path, rtcbench.RunResult]) -> None:
    from rtcbench.report.runs import Run, Source
    from rtcbench.report.tables import phase_tables

    path, r = mid_tcp
    run = Run(path=path.parent, source=Source(path.parent, "mid"), summary=r.summary)
    (table,) = phase_tables(run, "mid")
    assert table.header == ("flow", "metric", "0-20 s, 4 Mbit/s", "20-40 s, 4 Mbit/s", "40-60 s, 4 Mbit/s")
    # CUBIC has a value in the section it runs in only.
    (rate,) = [row for row in table.rows if row[0].text.startswith("mid (tcp)")]
    assert [c.text == "-" for c in rate[2:]] == [True, False, True]
