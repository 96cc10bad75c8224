"""`rtcbench evaluate` (docs/learned.md, "Evaluating a controller"): rtcbench's video-quality score
on hand-made flows, and a controller scored over a suite against a baseline with paired bootstrap
intervals, from Python and from the command line."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from rtcbench import evaluate

RTCBENCH = [sys.executable, "-m", "rtcbench.cli"]


def _quality(goodput: float, freezes: int = 0, frozen_ms: float = 0.0, delay_ms: float = 100.0) -> float:
    row = pl.DataFrame(
        {
            "mean_goodput_bps": [goodput],
            "freezes": [freezes],
            "freeze_duration_ms": [frozen_ms],
            "frame_delay_p95_ms": [delay_ms],
            "simulated_s": [60.0],
        }
    )
    return float(row.select(evaluate.quality_expr()).item())


def test_the_quality_score_rises_with_rate_and_falls_with_stalls_and_delay() -> None:
    assert _quality(2_500_000) == pytest.approx(5.0)
    assert _quality(0) == pytest.approx(1.0)
    # ln(1 + 10) / ln(1 + 25) of the way from 1 to 5 at 1 Mbit/s.
    assert _quality(1_000_000) == pytest.approx(1 + 4 * np.log1p(10) / np.log1p(25))
    # Six freezes in a minute, frozen 3 s of it: 0.6 + 6 × 0.05 = 0.9 off.
    assert _quality(2_500_000, 6, 3000.0) == pytest.approx(5.0 - 0.9)
    # Frame delay p95 of 275 ms: half way from G.114's 150 ms to 400 ms, half a point off.
    assert _quality(2_500_000, delay_ms=275.0) == pytest.approx(4.5)
    assert _quality(2_500_000, delay_ms=900.0) == pytest.approx(4.0)
    # Never below 1.
    assert _quality(100_000, 60, 60_000.0, 900.0) == pytest.approx(1.0)


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> evaluate.EvaluateResult:
    out = tmp_path_factory.mktemp("evaluate")
    return evaluate.evaluate(
        ["rfc8867-5.1"], ["fixed"], baseline="gcc", reps=3, jobs=1, out=out, sets=["duration=20s"]
    )


def test_a_controller_is_paired_with_the_baseline_run_by_run(result: evaluate.EvaluateResult) -> None:
    variants = result.runs["variant"].n_unique()
    assert result.runs.height == 2 * 3 * variants
    c = result.comparison
    assert set(c["controller"]) == {"fixed", "gcc"}
    assert set(c["metric"]) == set(evaluate.METRICS)
    mine = c.filter(pl.col("controller") == "fixed")
    assert (mine["pairs"] == 3 * variants).all()
    for r in mine.iter_rows(named=True):
        assert r["difference"] == pytest.approx(r["mean"] - r["baseline_mean"])
        assert r["ci_low"] <= r["difference"] <= r["ci_high"]
        resolved = r["ci_low"] > 0 or r["ci_high"] < 0
        assert (r["verdict"] in ("better", "worse")) == resolved
    # `fixed` holds its start rate: it uses the 1 Mbit/s bottleneck less than GoogCC does.
    utilization = mine.filter(pl.col("metric") == "utilization").row(0, named=True)
    assert utilization["verdict"] == "worse"
    assert (result.out / "evaluate.parquet").is_file() and (result.out / "evaluate-runs.parquet").is_file()
    assert pl.read_parquet(result.out / "evaluate.parquet").equals(c)


def test_the_command_prints_the_comparison(result: evaluate.EvaluateResult) -> None:
    """The same runs again from the command line: read back, not run again."""
    cli = subprocess.run(
        [*RTCBENCH, "evaluate", "rfc8867-5.1", "--cc", "fixed", "--baseline", "gcc", "--reps", "3",
         "--jobs", "1", "--set", "duration=20s", "--out", str(result.out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    assert "fixed against gcc" in cli.stdout and "utilization" in cli.stdout and "worse" in cli.stdout
    bad = subprocess.run([*RTCBENCH, "evaluate", "--cc", "fixed"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr


def test_the_report_of_an_evaluation_shows_its_comparison(
    result: evaluate.EvaluateResult, tmp_path: Path
) -> None:
    """`rtcbench report` on the evaluation's folder: an Evaluation section with one row per
    controller and metric of `evaluate.parquet`, verdicts coloured; a damaged table is a problem,
    not a traceback."""
    from rtcbench.report import build_report

    report = build_report([result.out], tmp_path / "report.html", run_figures="none")
    assert [t for t in report.tables if t.startswith("tbl-eval--")] == [f"tbl-eval--{result.out.name}"]
    html = (tmp_path / "report.html").read_text()
    section = html[
        html.index('<section id="evaluation"') : html.index("</section>", html.index('id="evaluation"'))
    ]
    assert "against gcc on the simulate stack" in section
    rows = section.count("<tr") - 1
    assert rows == result.comparison.height
    assert section.count('class="v-fail"') == (result.comparison["verdict"] == "worse").sum()

    damaged = tmp_path / "damaged"
    shutil.copytree(result.out, damaged)
    (damaged / "evaluate.parquet").write_bytes(b"not parquet")
    again = build_report([damaged], tmp_path / "again.html", run_figures="none")
    assert any("evaluate.parquet" in p.where and "left out of Evaluation" in p.what for p in again.problems)
    assert not any(t.startswith("tbl-eval--") for t in again.tables)
