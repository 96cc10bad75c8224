"""Capacity traces as a user meets them (docs/capacity-traces.md): the shipped traces and their
scenarios, a trace next to one's own scenario file, one-line errors that name the trace file, and
what the results say about a trace link."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rtcbench
from rtcbench import analysis
from rtcbench.suite import select

ROOT = Path(__file__).resolve().parent.parent
RTCBENCH = [sys.executable, "-m", "rtcbench.cli"]
TRACE_SCENARIOS = ["trace-lte-drive", "trace-lte-walk", "trace-wifi-office"]

SCENARIO = """
id = "my-trace"
duration = "10s"

[[links]]
name = "forward"
from = "A"
to = "B"
delay = "20ms"
capacity_trace = {{ {trace} }}
queue = {{ size = "100ms" }}

[[links]]
name = "backward"
from = "B"
to = "A"
delay = "20ms"

[[cbr]]
from = "A"
to = "B"
rate = "4Mbps"
packet_size = "1500B"
"""


def write_scenario(folder: Path, trace: str, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    path = folder / "my.toml"
    path.write_text(SCENARIO.format(trace=trace))
    return path


def test_shipped_traces_are_what_the_documented_script_makes() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_traces.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    for path in (ROOT / "scenarios" / "traces").iterdir():
        assert path.stat().st_size < 100_000, f"{path.name} is not small"


def test_trace_scenarios_are_built_in_and_form_a_suite() -> None:
    ids = [b.id for b in rtcbench.builtin()]
    assert all(i in ids for i in TRACE_SCENARIOS)
    assert select(["traces"]) == TRACE_SCENARIOS


def test_a_trace_beside_a_scenario_file_runs_from_any_directory(tmp_path: Path) -> None:
    # 250 opportunities per second: 250 × 1504 × 8 = 3.008 Mbit/s, which the 4 Mbit/s CBR fills.
    trace = "".join(f"{4 * k}\n" for k in range(1, 251))
    path = write_scenario(tmp_path / "exp", 'file = "t/every-4ms.up"', {"t/every-4ms.up": trace})
    (r,) = rtcbench.run(path, "fixed", figure=False, out=tmp_path / "results")
    link = r.summary["meta"]["links"][0]
    assert link["capacity_trace"] == "mahimahi"
    assert "capacity_trace" not in r.summary["meta"]["links"][1]
    # One phase over the run, at the mean rate of the opportunities in it: 2499 in [0, 10 s),
    # since the 2500th falls on 10 s itself.
    assert analysis.phases(r.tables, "forward") == [analysis.Phase(0.0, 10.0, round(2499 * 1504 * 8 / 10))]
    (cbr,) = [f for f in r.summary["flows"] if f["kind"] == "cbr"]
    assert cbr["mean_recv_rate_bps"] == pytest.approx(3_008_000, rel=0.02)
    # The results folder's scenario.toml names the trace absolutely: it reruns from elsewhere to
    # the same result.
    assert r.path is not None
    resolved = (r.path / "scenario.toml").read_text()
    assert str(tmp_path / "exp" / "t" / "every-4ms.up") in resolved
    again = subprocess.run(
        [*RTCBENCH, "run", str(r.path / "scenario.toml"), "--cc", "fixed", "--out", "again", "--no-figure"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert again.returncode == 0, again.stderr
    (rerun,) = (tmp_path / "again").glob("*/fixed/*/seed-1/packets.parquet")
    assert rerun.read_bytes() == (r.path / "packets.parquet").read_bytes()


def test_phases_of_a_trace_link_are_the_whole_run_at_its_mean_capacity() -> None:
    (r,) = rtcbench.run("trace-wifi-office", "fixed", figure=False)
    (phase,) = analysis.phases(r.tables, "forward")
    links = r.tables.links.filter(r.tables.links["link"] == "forward")
    t = links["t_us"].to_numpy()
    cap = links["capacity_bps"].to_numpy()
    # The time-weighted mean of the links table over the run.
    lengths = np.diff(np.append(t, 120_000_000))
    assert phase.capacity_bps == round(float((cap * lengths).sum() / lengths.sum()))
    assert 3_800_000 < phase.capacity_bps < 4_100_000


@pytest.mark.parametrize(
    ("files", "trace", "needles"),
    [
        (
            {"t.up": "1\n5\n4\n"},
            'file = "t.up"',
            ["t.up:3:", "must not decrease", "links.forward.capacity_trace"],
        ),
        (
            {"t.csv": "time_s,rate_kbps\n0,-5\n"},
            'file = "t.csv"',
            ["t.csv:2:", "out of range", "0, an outage"],
        ),
        ({"t.csv": "time_s,rate_kbps\n"}, 'file = "t.csv"', ["t.csv:1:", "no rows"]),
        ({"t.up": ""}, 'file = "t.up"', ["t.up:", "empty"]),
        (
            {"t.json": '{"uplink": {"trace_pattern": [{"duration": 9, "capacity": 1, "rtt": 80}]}}'},
            'file = "t.json"',
            ["t.json: uplink.trace_pattern[0].rtt:", 'ignore = ["rtt"]'],
        ),
        ({}, 'file = "nope.up"', ["links.forward.capacity_trace.file", "cannot read the trace", "nope.up"]),
        ({"t.up": "1\n"}, 'file = "t.up", format = "pcap"', ["capacity_trace.format", "opennetlab"]),
        ({"t.txt": "1\n"}, 'file = "t.txt"', ["capacity_trace.format", ".mahimahi", 'format = "mahimahi"']),
    ],
)
def test_trace_mistakes_exit_2_with_one_line_naming_file_and_line_or_field(
    tmp_path: Path, files: dict[str, str], trace: str, needles: list[str]
) -> None:
    path = write_scenario(tmp_path, trace, files)
    out = subprocess.run(
        [*RTCBENCH, "run", str(path), "--out", str(tmp_path / "r")], capture_output=True, text=True
    )
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_a_capacity_trace_excludes_capacity_and_schedule(tmp_path: Path) -> None:
    path = write_scenario(tmp_path, 'file = "t.up"', {"t.up": "1\n"})
    path.write_text(
        path.read_text().replace('delay = "20ms"\ncapacity_trace', 'capacity = "1Mbps"\ncapacity_trace', 1)
    )
    with pytest.raises(rtcbench.ScenarioError, match="one of `capacity`, `schedule` or `capacity_trace`"):
        rtcbench.run(path, "fixed", figure=False)
