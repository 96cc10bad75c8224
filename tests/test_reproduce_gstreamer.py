"""`rtcbench reproduce --stack gstreamer`: Sjölund and Kevo 2022's three tests with its three
algorithms, and GCC as a draft-02 implementation (GStreamer's rtpgccbwe; simulated: gcc-draft).
The GStreamer runs are real time (about 2.5 h; docs/reproduction.md holds their numbers); here the
whole path runs with the simulator standing in for the stack (`stack_mode`), which gives the same
tables, and the parts that are the stack's alone (fairness) are checked on their own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from rtcbench.identity import SIMULATE
from rtcbench.reproduce import gstreamer
from rtcbench.reproduce.measures import VIDEO, Responsiveness, capacity_changes
from rtcbench.results import InputError, read_summary
from rtcbench.runner import RunResult

SEEDS = (1, 2)


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory: pytest.TempPathFactory) -> gstreamer.GStreamerReproduction:
    out = tmp_path_factory.mktemp("gst")
    return gstreamer.reproduce_gstreamer(out, seeds=SEEDS, sim_seeds=(1,), stack_mode=SIMULATE)


def test_every_measure_of_every_run_is_in_the_tables(reproduced: gstreamer.GStreamerReproduction) -> None:
    r = reproduced
    per_case = {m.case.label(): 0 for m in gstreamer.MEASURES}
    for m in gstreamer.MEASURES:
        per_case[m.case.label()] += 1
    # Per stack run: one row per measure of its case; 3 tests x 4 controllers.
    stack_rows = sum(per_case.values()) * len(gstreamer.ALL_CONTROLLERS)
    assert r.runs.height == stack_rows * (len(SEEDS) + 1)
    assert r.runs.filter(pl.col("value").is_null()).height == 0
    assert r.rows.height == len(gstreamer.MEASURES) * len(gstreamer.ALL_CONTROLLERS)
    assert r.rows.get_column("gstreamer_runs").unique().to_list() == [len(SEEDS)]
    assert r.rows.get_column("simulated_runs").unique().to_list() == [1]
    # The seed printed one number: GCC's utilisation over the staircase, beside either GCC.
    printed = r.rows.filter(pl.col("seed").is_not_null())
    assert printed.select("key", "controller").rows() == [
        ("staircase.u", "gcc"),
        ("staircase.u", "rtpgccbwe"),
    ]
    assert printed.get_column("seed").to_list() == [0.78, 0.78]
    # Every claim is decided on both, once for each GCC: no value it needs is missing.
    assert r.findings.height == len(gstreamer.FINDINGS_OF_THE_SEED) * len(gstreamer.GCC_ROLES)
    assert set(r.findings.get_column("gcc")) == set(gstreamer.GCC_ROLES.values())
    assert r.findings.filter(pl.col("gstreamer").is_null() | pl.col("simulated").is_null()).height == 0
    for name in (gstreamer.RUNS, gstreamer.ROWS, gstreamer.FINDINGS, gstreamer.CURVES):
        assert pl.read_parquet(r.out / name).height > 0


def test_the_median_is_of_the_runs_and_the_range_holds_them(
    reproduced: gstreamer.GStreamerReproduction,
) -> None:
    for row in reproduced.rows.iter_rows(named=True):
        values = (
            reproduced.runs.filter(
                (pl.col("stack") == "gstreamer")
                & (pl.col("key") == row["key"])
                & (pl.col("controller") == row["controller"])
            )
            .get_column("value")
            .to_list()
        )
        assert row["gstreamer_min"] == min(values) and row["gstreamer_max"] == max(values)
        assert row["gstreamer"] == pytest.approx(sum(values) / 2)  # two runs: the median is their mean


def test_the_seeds_responsiveness_orders_the_algorithms_as_the_seed_saw(
    reproduced: gstreamer.GStreamerReproduction,
) -> None:
    # §5.4.3: NADA answers a change in under 2 s; GCC's 5 % a second takes seconds.
    rows = {(r["key"], r["controller"]): r for r in reproduced.rows.iter_rows(named=True)}
    assert rows[("sudden.response", "nada")]["simulated"] < 2.0
    nada, gcc = (rows[("sudden.response", cc)]["simulated"] for cc in ("nada", "gcc"))
    assert gcc > 2.0 * nada
    # A response is a time within a period: at most the longest one (the staircase's 20 s).
    assert reproduced.runs.filter(pl.col("key").str.ends_with(".response")).get_column("value").max() <= 20.0


def test_a_resumed_reproduction_runs_nothing_again(
    reproduced: gstreamer.GStreamerReproduction,
) -> None:
    told: list[bool] = []
    again = gstreamer.reproduce_gstreamer(
        reproduced.out,
        seeds=SEEDS,
        sim_seeds=(1,),
        stack_mode=SIMULATE,
        on_run=lambda case, stack, cc, seed, summary, ran: told.append(ran),
    )
    assert told and not any(told)
    assert again.rows.equals(reproduced.rows)


def test_figures_and_markdown(reproduced: gstreamer.GStreamerReproduction) -> None:
    written = gstreamer.figures(reproduced.runs, reproduced.curves, reproduced.out)
    assert sorted(p.name for p in written) == sorted(
        f"gstreamer-{kind}-{test}.png"
        for kind in ("box", "average")
        for test in ("staircase", "sudden", "china")
    )
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in written)
    text = gstreamer.markdown(reproduced)
    for case in ("seed001-staircase", "seed001-sudden-reduction", "seed001-sweden-to-china"):
        assert f"## {case}" in text
    for section, finding in gstreamer.FINDINGS_OF_THE_SEED:
        for role in gstreamer.GCC_ROLES.values():
            assert f"| {finding.text} | {section} | {role} |" in text
    assert "| staircase: utilisation, 0-200 s | gcc | 0.78 |" in text
    for p in written:
        assert f"]({p.name})" in text


def test_the_draft_gcc_is_run_as_gcc_draft_by_the_simulator_and_judged_as_the_seeds_gcc(
    reproduced: gstreamer.GStreamerReproduction,
) -> None:
    # The simulator cannot run GStreamer's element: its runs of the row are rtcbench's port of
    # the same draft.
    assert list(reproduced.out.glob("seed001-staircase/gcc-draft/*/seed-1"))
    assert not list(reproduced.out.glob("seed001-staircase/rtpgccbwe"))
    values = {"staircase.u@gcc": 0.85, "staircase.u@rtpgccbwe": 0.75, "staircase.u@nada": 0.95}
    assert gstreamer._as_gcc(values, "rtpgccbwe") == {"staircase.u@gcc": 0.75, "staircase.u@nada": 0.95}
    assert gstreamer._as_gcc(values, "gcc") == {"staircase.u@gcc": 0.85, "staircase.u@nada": 0.95}


def test_capacity_changes_are_the_period_boundaries_where_the_capacity_moves() -> None:
    def period(index: int, start: float, capacity: float | None) -> dict[str, Any]:
        flows = [] if capacity is None else [{"name": "v", "mean_capacity_bps": capacity}]
        return {"index": index, "start_s": start, "flows": flows}

    summary = {
        "periods": [
            period(0, 0.0, 2e6),
            period(1, 20.0, 2e6 * 1.005),  # a new flow's period, the same capacity
            period(2, 30.0, 5e5),
            period(3, 33.0, None),  # the flow is not in it
            period(4, 40.0, 2e6),
        ]
    }
    assert capacity_changes(summary, "v") == [30.0, 40.0]
    assert capacity_changes(summary, "other") == []


def test_responsiveness_averages_the_changes_in_its_window(
    reproduced: gstreamer.GStreamerReproduction,
) -> None:
    (folder,) = reproduced.out.glob("seed001-sudden-reduction/gcc/*/seed-1")
    run = RunResult(folder, read_summary(folder))
    # The dips begin at 30, 60 and 90 s and end at 33, 65 and 92 s.
    each = [Responsiveness(VIDEO, at - 0.5, at + 0.5)(run) for at in (30, 33, 60, 65, 90, 92)]
    assert all(x is not None and x >= 0 for x in each)
    assert Responsiveness(VIDEO, 0, 120)(run) == pytest.approx(sum(x for x in each if x is not None) / 6)
    # A drop is answered within a second (measured: GCC's target falls by more than 250 kbit/s
    # 0.35-0.40 s into each dip); a response is bounded by the period it is in.
    assert max(each[0], each[2], each[4]) <= 1.0  # type: ignore[type-var]
    assert each[1] <= 27 and each[5] <= 28  # type: ignore[operator]
    assert Responsiveness(VIDEO, 100, 120)(run) is None


def test_a_gstreamer_run_is_fair_unless_invalid_or_cpu_limited() -> None:
    assert gstreamer.run_problem({"gstreamer": {"valid": True, "cpu_limited": []}}) is None
    assert "relay" in str(gstreamer.run_problem({"gstreamer": {"valid": False, "cpu_limited": []}}))
    limited = gstreamer.run_problem({"gstreamer": {"valid": True, "cpu_limited": ["call0"]}})
    assert limited == "CPU-limited: the encoder of call0 did not keep up"


def test_bad_options_are_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"the seed ran gcc, nada, scream \(and rtpgccbwe: .*\), not cubic"):
        gstreamer.reproduce_gstreamer(tmp_path / "x", controllers=("cubic",))
    rtcbench = [sys.executable, "-m", "rtcbench.cli", "reproduce", "--out", str(tmp_path / "r")]
    for args, says in (
        (["--stack", "opera"], "--stack must be one of chromium, firefox, gstreamer, got 'opera'"),
        (["--stack", "gstreamer", "--runs", "0"], "--runs must be at least 1, got 0"),
        (
            ["--stack", "gstreamer", "--table", "001-5.3"],
            "--table: not options of --stack gstreamer",
        ),
        (["--runs", "3"], "--cc, --runs: --stack gstreamer's options"),
    ):
        out = subprocess.run([*rtcbench, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert says in out.stderr
        assert not (tmp_path / "r").exists()
