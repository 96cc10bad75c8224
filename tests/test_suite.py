"""Suites: selection by name, parallel runs, the two suite tables, resuming, and interruptions."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl
import pytest
from typer.testing import CliRunner

import rtcbench
from rtcbench import runner, suite
from rtcbench.cli import app
from rtcbench.suite import (
    FLOWS_TABLE,
    RUNS_TABLE,
    SuiteResult,
    UnknownSuite,
    _Job,
    _run_parallel,
    run_suite,
    select,
)

SCENARIOS = ["seed001-sudden-reduction", "seed001-staircase"]
CONTROLLERS = ["gcc", "fixed"]
SHORT = ["duration=10s"]


def mtimes(out: Path) -> dict[str, int]:
    return {p.relative_to(out).as_posix(): p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> SuiteResult:
    out = tmp_path_factory.mktemp("suite")
    return run_suite(SCENARIOS, CONTROLLERS, reps=2, jobs=2, out=out, sets=SHORT)


def test_suite_names_select_builtin_scenarios_by_prefix(tmp_path: Path) -> None:
    ids = [b.id for b in rtcbench.builtin()]
    assert select(["rfc8867"]) == [i for i in ids if i.startswith("rfc8867-")]
    wired = select(["seeds-wired"])
    seeds = [i for i in ids if i.split("-")[0] in ("seed000", "seed001", "seed002", "seed003", "seed004")]
    assert wired == [i for i in seeds if not i.startswith(("seed000-5.3.", "seed000-5.4.", "seed004-"))]
    assert "seed000-5.2.6" in wired and "seed001-staircase" in wired
    # The Wi-Fi experiments have suites of their own.
    lte = select(["seeds-lte"])
    assert lte == ["seed000-5.4.6", "seed000-5.4.7"]
    assert select(["seeds-wifi"]) == [i for i in seeds if i not in wired and i not in lte]
    assert select(["seeds-wifi"])[-1] == "seed004-testbed" and "seed000-5.3.8" in select(["seeds-wifi"])
    assert select(["rfc8869-wifi"]) == [i for i in ids if i.startswith("rfc8869-3.")]
    # Explicit ids and files pass through; duplicates are dropped.
    f = tmp_path / "mine.toml"
    f.write_text('id = "mine"\nduration = "1s"\n')
    assert select(["seed001-staircase", "seeds-wired", f]) == ["seed001-staircase"] + [
        i for i in wired if i != "seed001-staircase"
    ] + [f]
    suites = r"suites: rfc8867, rfc8869-wifi, seeds-wired, seeds-wifi, seeds-lte"
    with pytest.raises(UnknownSuite, match=suites):
        select(["rfc9999"])


def test_suite_runs_every_scenario_controller_and_repetition(first: SuiteResult) -> None:
    runs, flows = first.runs, first.flows
    assert (first.ran, first.skipped) == (8, 0)
    assert runs.height == len(SCENARIOS) * len(CONTROLLERS) * 2
    assert runs.select("scenario", "controller", "seed").rows() == [
        (s, c, seed) for s in SCENARIOS for c in CONTROLLERS for seed in (1, 2)
    ]
    # One row per flow of every run, each run's flows taken from its own summary.
    expected = 0
    for path in runs["path"]:
        summary = json.loads((first.out / path / "summary.json").read_text())
        assert summary["seed"] == int(path.rsplit("seed-", 1)[1])
        assert {p.name for p in (first.out / path).iterdir()} >= {"summary.json", "packets.parquet"}
        assert not (first.out / path / "overview.png").exists()
        expected += len(summary["flows"])
    assert flows.height == expected
    assert set(flows["path"]) == set(runs["path"])
    # <scenario>/<controller>/<run key>/seed-N: the key is that of the resolved scenario with --set.
    first_run = runner.run_folder(Path(), rtcbench.resolve(SCENARIOS[0], SHORT)[0], "gcc", 1)
    assert runs["path"][0] == first_run.as_posix()
    assert runs["run_key"][0] == first_run.parent.name and len(first_run.parent.name) == 12
    # Repetitions use different seeds, and the seeds reach the simulator (jitter draws differ).
    assert runs.group_by("scenario", "controller").agg(pl.col("seed").n_unique())["seed"].to_list() == [2] * 4
    owd = flows.filter(pl.col("kind") == "video", pl.col("controller") == "gcc").group_by("scenario")
    assert all(g["owd_p50_ms"].n_unique() == 2 for _, g in owd)
    assert first.simulated_s == pytest.approx(8 * 10.0)
    assert not [p for p in first.out.rglob(".*")], "no temporary files or folders are left"


def test_suite_tables_are_typed_and_read_by_polars_and_pandas(first: SuiteResult) -> None:
    for name, df in ((FLOWS_TABLE, first.flows), (RUNS_TABLE, first.runs)):
        on_disk = pl.read_parquet(first.out / name)
        assert on_disk.equals(df)
        pdf = pd.read_parquet(first.out / name)
        assert list(pdf.columns) == df.columns and len(pdf) == df.height
    f = first.flows.schema
    assert (f["seed"], f["flow"], f["packets_sent"], f["freezes"]) == (pl.Int64,) * 4
    floats = ("utilization", "qdelay_p95_ms", "share_ratio", "cross_goodput_bps")
    assert [f[c] for c in floats] == [pl.Float64] * 4
    assert (f["scenario"], f["variant"], f["flow_name"], f["kind"], f["path"]) == (pl.String,) * 5
    r = first.runs.schema
    assert (r["jain_index_video"], r["jain_index_all"], r["feedback_bps"], r["wall_s"]) == (pl.Float64,) * 4
    assert (r["events"], r["fair_within_band"]) == (pl.Int64, pl.Boolean)
    # One video flow per run: perfectly fair to itself; feedback flows back to the sender.
    assert first.runs["jain_index_video"].to_list() == [1.0] * 8
    # No link is shared by two data flows (audio is not one), so no all-flow index.
    assert first.runs["jain_index_all"].to_list() == [None] * 8
    assert first.flows.filter(pl.col("kind") == "video")["share_ratio"].to_list() == [1.0] * 8
    assert (first.runs["feedback_to_sender_bps"] > 0).all()
    assert (first.runs["events"] > 0).all()
    ov = first.overview()
    assert ov.height == 4 and ov["runs"].to_list() == [2] * 4


def test_a_second_invocation_runs_nothing_and_gives_identical_tables(first: SuiteResult) -> None:
    before = mtimes(first.out)
    again = run_suite(SCENARIOS, CONTROLLERS, reps=2, jobs=2, out=first.out, sets=SHORT)
    assert (again.ran, again.skipped) == (0, 8)
    assert again.speed is None
    assert again.flows.equals(first.flows)
    assert again.runs.equals(first.runs)
    after = mtimes(first.out)
    assert {k: v for k, v in after.items() if "/" in k} == {k: v for k, v in before.items() if "/" in k}


def test_worker_processes_run_jobs_and_write_their_folders(tmp_path: Path) -> None:
    # The suite above may finish before its worker is up (this process runs jobs meanwhile); here
    # every job goes to the workers.
    variants = rtcbench.resolve(SCENARIOS[0], SHORT)
    jobs = [_Job.plan(variants[0], c, c, 7, tmp_path, "test") for c in CONTROLLERS]
    done: dict[int, dict[str, Any]] = {}
    _run_parallel(jobs, 2, done.__setitem__, here=False)
    assert sorted(done) == [0, 1]
    for i, job in enumerate(jobs):
        assert job.done()
        assert done[i]["controller"] == job.controller and done[i]["seed"] == 7
        assert done[i]["fairness"]["run"]["jain_index"] == 1.0
        assert json.loads((job.path / "summary.json").read_text())["provenance"]["command"] == "test"


def test_an_interrupted_suite_leaves_whole_runs_and_no_table_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = runner.measure_tables
    calls = 0

    def interrupted_on_second_run(*args: Any, **kwargs: Any) -> Any:
        # The second run is interrupted with its trace tables written, before its summary.
        nonlocal calls
        calls += 1
        if calls == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "measure_tables", interrupted_on_second_run)
    with pytest.raises(KeyboardInterrupt):
        run_suite(SCENARIOS[:1], CONTROLLERS, reps=2, jobs=1, out=tmp_path, sets=SHORT)
    assert not (tmp_path / FLOWS_TABLE).exists() and not (tmp_path / RUNS_TABLE).exists()
    assert not [p for p in tmp_path.rglob(".*")], "no half-written run folder"
    variant = rtcbench.resolve(SCENARIOS[0], SHORT)[0]
    assert sorted(p.parent for p in tmp_path.rglob("summary.json")) == [
        runner.run_folder(tmp_path, variant, "gcc", 1)
    ]
    monkeypatch.setattr(runner, "measure_tables", real)
    resumed = run_suite(SCENARIOS[:1], CONTROLLERS, reps=2, jobs=1, out=tmp_path, sets=SHORT)
    assert (resumed.ran, resumed.skipped) == (3, 1)
    # A different --set is a different run: a folder of its own, beside the first, never reused.
    other = run_suite(SCENARIOS[:1], ["fixed"], reps=1, jobs=1, out=tmp_path, sets=["duration=5s"])
    assert (other.ran, other.skipped) == (1, 0)
    assert other.runs["simulated_s"].to_list() == [5.0]
    assert 'duration = "5s"' in (tmp_path / other.runs["path"][0] / "scenario.toml").read_text()
    kept = runner.run_folder(tmp_path, variant, "fixed", 1)
    assert json.loads((kept / "summary.json").read_text())["simulated_s"] == 10.0
    assert kept.parent != (tmp_path / other.runs["path"][0]).parent


def test_user_mistakes_raise_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(runner.UnknownController, match="allowed: gcc"):
        run_suite(["rfc8867"], ["gcc", "bbr"], out=tmp_path)
    with pytest.raises(ValueError, match="reps"):
        run_suite(["rfc8867"], ["gcc"], reps=0, out=tmp_path)
    with pytest.raises(rtcbench.ScenarioError):
        run_suite(["rfc8867"], ["gcc"], out=tmp_path, sets=["links.forward.delay=fast"])
    assert not any(tmp_path.iterdir())


def test_cli_bad_suite_name_exits_2_with_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["suite", "rfc9999", "--cc", "gcc", "--out", str(tmp_path)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and "'rfc9999'" in lines[0]
    assert "suites: rfc8867, rfc8869-wifi, seeds-wired, seeds-wifi, seeds-lte" in lines[0]
    assert "Traceback" not in result.output
    assert not any(tmp_path.iterdir())


def test_cli_suite_prints_a_table_and_no_progress_garbage(tmp_path: Path) -> None:
    args = ["suite", SCENARIOS[0], "--cc", "gcc,fixed", "--reps", "2", "--jobs", "1", "--out", str(tmp_path)]
    result = CliRunner().invoke(app, [*args, "--set", "duration=5s"])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    # No progress bar when the output is not a terminal: no escape codes, carriage returns or timer.
    assert "\x1b" not in result.output and "\r" not in result.output and "0:00:0" not in result.output
    assert "seed001-sudden-reduction" in result.stdout and "fixed" in result.stdout
    assert "4 runs (4 simulated, 0 already complete)" in result.stdout
    assert "per wall-clock second" in result.stdout
    assert pl.read_parquet(tmp_path / RUNS_TABLE).height == 4
    again = CliRunner().invoke(app, [*args, "--set", "duration=5s"])
    assert "4 runs (0 simulated, 4 already complete)" in again.stdout


def test_resume_runs_again_a_run_whose_files_changed(tmp_path: Path) -> None:
    first = run_suite(SCENARIOS[:1], CONTROLLERS, reps=2, jobs=1, out=tmp_path, sets=SHORT)
    assert (first.ran, first.skipped) == (4, 0)
    runs = sorted(p.parent for p in tmp_path.rglob("summary.json"))
    truncated, garbled, missing, edited = runs
    packets = truncated / "packets.parquet"
    packets.write_bytes(packets.read_bytes()[:-50])
    (garbled / "summary.json").write_text('{"scenario": ')
    (missing / "frames.parquet").unlink()
    # Same size, other bytes: only the hash tells.
    ts = edited / "timeseries.parquet"
    data = bytearray(ts.read_bytes())
    data[len(data) // 2] ^= 0xFF
    ts.write_bytes(bytes(data))
    again = run_suite(SCENARIOS[:1], CONTROLLERS, reps=2, jobs=1, out=tmp_path, sets=SHORT)
    assert (again.ran, again.skipped) == (4, 0), "every damaged run runs again"
    clock = ["wall_s", "sim_wall_s"]
    assert again.runs.drop(clock).equals(first.runs.drop(clock)), "and gives the same numbers"
    third = run_suite(SCENARIOS[:1], CONTROLLERS, reps=2, jobs=1, out=tmp_path, sets=SHORT)
    assert (third.ran, third.skipped) == (0, 4)


def test_jobs_above_the_cpus_run_one_worker_per_cpu_and_say_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 16 workers on 2 cores took 4 GB and ran slower than 2.
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    pools: list[int] = []

    def in_this_process(jobs: list[_Job], workers: int, on_done: Any, **kwargs: Any) -> None:
        pools.append(workers)
        for i, job in enumerate(jobs):
            on_done(i, suite._execute(job))

    monkeypatch.setattr(suite, "_run_parallel", in_this_process)
    args = ["suite", SCENARIOS[0], "--cc", "gcc,fixed", "--reps", "4", "--jobs", "16", "--out", str(tmp_path)]
    result = CliRunner().invoke(app, [*args, "--set", "duration=2s"])
    assert result.exit_code == 0, result.output
    assert pools == [2]
    assert result.stderr.strip().splitlines() == [
        "warning: --jobs 16: this process may use 2 CPU(s); running 2 at a time (more would only compete "
        "for the cores and memory)"
    ]


def test_variant_values_have_numeric_companions() -> None:
    from rtcbench.scenarios import numeric_value, typed_fields

    assert numeric_value("100ms") == ("_s", 0.1)
    assert numeric_value("2.5Mbps") == ("_bps", 2_500_000.0)
    assert numeric_value("1000kbps") == ("_bps", 1_000_000.0)
    assert numeric_value("3") == ("_value", 3.0) and numeric_value("0.05") == ("_value", 0.05)
    for label in ("far", "true", "link-rate", "", "nan", "1e"):
        assert numeric_value(label) is None, label
    fields = typed_fields({"delay": "25ms", "location": "far", "rex": "7"}, "variant.")
    assert fields == {
        "variant.delay": "25ms", "variant.delay_s": 0.025, "variant.location": "far",
        "variant.rex": "7", "variant.rex_value": 7.0,
    }  # fmt: skip
