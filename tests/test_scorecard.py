"""The scorecard: verdict arithmetic, threshold files, verdicts on real runs, the suite matrix and
the `rtcbench score` command, including folders with missing results."""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import rtcbench
from rtcbench import scorecard as sc


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rtcbench.cli", *args], capture_output=True, text=True, check=False
    )


@functools.cache
def _results(root: str) -> Path:
    """Two scenarios × two controllers in one results folder, run once per test session."""
    out = Path(root)
    for scenario, sets in (
        ("rfc8867-5.1", ("delay=50ms", "mechanism=link-rate")),
        ("rfc8867-5.6", ("queue=300ms", "tcp_cc=cubic")),
    ):
        for cc in ("gcc", "fixed"):
            rtcbench.run(scenario, cc, 1, out, sets, figure=False)
    return out


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _results(str(tmp_path_factory.mktemp("scored")))


def _verdicts(table: pl.DataFrame, scenario: str, controller: str) -> dict[str, tuple[str, float | None]]:
    rows = table.filter((pl.col("scenario") == scenario) & (pl.col("controller") == controller))
    return {r["criterion"]: (r["verdict"], r["value"]) for r in rows.iter_rows(named=True)}


def test_verdicts_follow_the_thresholds_on_either_side() -> None:
    delay = sc.BY_ID["delay"]  # lower is better: ≤ 100 pass, ≤ 200 warn
    assert [delay.judge(v) for v in (0, 100, 100.1, 200, 200.1)] == ["pass", "pass", "warn", "warn", "fail"]
    starved = sc.BY_ID["not-starved"]  # higher is better: ≥ 1 pass, ≥ 0.5 warn
    assert [starved.judge(v) for v in (2, 1, 0.99, 0.5, 0.49)] == ["pass", "pass", "warn", "warn", "fail"]
    assert delay.judge(None) == "fail" and delay.judge(float("inf")) == "fail"


def test_a_thresholds_file_overrides_and_bad_ones_are_named(tmp_path: Path) -> None:
    good = tmp_path / "good.toml"
    good.write_text("[delay]\npass = 150\nwarn = 300\n")
    delay = {c.id: c for c in sc.load_thresholds(good)}["delay"]
    assert (delay.pass_at, delay.warn_at) == (150.0, 300.0)
    assert {c.id: c for c in sc.load_thresholds(good)}["loss"] == sc.BY_ID["loss"]
    cases = {
        "[latency]\npass = 1\n": "unknown criterion [latency]; allowed: delay, loss",
        "[delay]\nstrict = 1\n": "[delay] strict: unknown field; allowed: pass, warn",
        "[delay]\npass = 'low'\n": "[delay] pass = 'low': must be a number",
        "[delay]\npass = 300\n": "[delay] needs pass ≤ warn; got 300.0 and 200.0",
        "[delay\n": "bad.toml",
    }
    for text, message in cases.items():
        bad = tmp_path / "bad.toml"
        bad.write_text(text)
        with pytest.raises(sc.ScorecardError, match=r"bad\.toml") as e:
            sc.load_thresholds(bad)
        assert message in str(e.value)


def test_a_single_call_is_judged_on_delay_reaction_and_startup_only(results: Path) -> None:
    table = sc.score_table(sc.run_folders(results))
    v = _verdicts(table, "rfc8867-5.1", "gcc")
    # Alone on its path: no fairness, starvation or TCP verdicts; no DualPI2: no L4S ones.
    assert {k for k, (verdict, _) in v.items() if verdict == "n/a"} == {
        "self-fairness",
        "not-starved",
        "tcp-share",
        "l-delay",
        "marks-per-rtt",
        "l4s-share",
        "classic-share",
    }
    # rfc8867-5.1, 50 ms, link rate, seed 1: queuing delay p95 53 ms, loss 0.5 %, reacts in < 1.5 s.
    assert v["delay"][0] == "pass" and v["delay"][1] is not None and 30 < v["delay"][1] < 100
    assert v["loss"][0] == "pass"
    assert v["reaction"][0] == "pass"


def test_gcc_against_cubic_in_a_deep_buffer_fails_delay_and_the_tcp_share(results: Path) -> None:
    """rfc8867-5.6, CUBIC, 300 ms buffer: TCP fills the buffer (delay p95 ~320 ms) and takes
    about ten times GCC's rate. GCC, as Chromium 156, has no floor from the scenario in a call with
    audio (docs/controllers/gcc.md, "The scenario's minimum and maximum"): its video falls under
    the 150 kbit/s minimum, but not under half of it (a warning, not a failure)."""
    table = sc.score_table(sc.run_folders(results))
    v = _verdicts(table, "rfc8867-5.6", "gcc")
    assert v["delay"][0] == "fail" and v["delay"][1] is not None and v["delay"][1] > 200
    assert v["tcp-share"][0] in ("warn", "fail") and v["tcp-share"][1] is not None and v["tcp-share"][1] > 3
    assert (
        v["not-starved"][0] == "warn" and v["not-starved"][1] is not None and 0.5 <= v["not-starved"][1] < 1
    )
    assert v["reaction"][0] == "n/a"


def test_the_matrix_and_the_aggregate_count_every_applicable_verdict(results: Path) -> None:
    table = sc.score_table(sc.run_folders(results))
    assert table.height == 4 * len(sc.CRITERIA)
    m = sc.matrix(table)
    assert m.height == 4
    judged = table.filter(pl.col("verdict") != "n/a").height
    assert int(m["pass"].sum() + m["warn"].sum() + m["fail"].sum()) == judged
    agg = sc.per_controller(table)
    assert set(agg["controller"]) == {"gcc", "fixed"}
    assert int(agg["pass"].sum() + agg["warn"].sum() + agg["fail"].sum()) == judged
    worst = dict(zip(m["scenario"] + "/" + m["controller"], m["worst"], strict=True))
    assert worst["rfc8867-5.6/gcc"] == "fail"


def test_score_skips_an_incomplete_run_by_name_and_scores_the_rest(results: Path, tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    shutil.copytree(results, suite)
    broken = next(suite.glob("rfc8867-5.6@*/fixed/*/seed-1"))
    (broken / "scenario.toml").unlink()
    out = cli("score", str(suite))
    assert out.returncode == 0, out.stderr
    assert "skipped:" in out.stderr and "scenario.toml is missing" in out.stderr and str(broken) in out.stderr
    table = pl.read_parquet(suite / "scorecard.parquet")
    assert table.height == 3 * len(sc.CRITERIA)
    assert "rfc8867-5.6" in out.stdout and "Per controller" in out.stdout


def test_score_rejects_a_bad_thresholds_file_in_one_line(results: Path, tmp_path: Path) -> None:
    bad = tmp_path / "t.toml"
    bad.write_text("[delay]\npass = 'low'\n")
    out = cli("score", str(results), "--thresholds", str(bad))
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1 and "must be a number" in out.stderr
    out = cli("score", str(tmp_path / "nothing"))
    assert out.returncode == 2 and "not a folder" in out.stderr
