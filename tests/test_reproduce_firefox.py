"""`rtcbench reproduce --stack firefox`: the wired seed tables between Firefox peers, with the
browser's own degradation preference and with maintain-resolution, beside Chromium's committed
reference and the simulator. The Firefox runs are real time (hours; docs/reproduction.md holds
their numbers); here the whole path runs with the simulator standing in for the browsers
(`stack_mode`), which gives the same tables, and the parts that are Firefox's alone (the variant
it runs, what its senders sent) are checked on their own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from rtcbench.identity import SIMULATE
from rtcbench.reproduce import experiments, firefox, reference
from rtcbench.results import InputError

TABLE = "002-step-up"


@pytest.fixture(scope="module")
def reproduced(tmp_path_factory: pytest.TempPathFactory) -> firefox.FirefoxReproduction:
    out = tmp_path_factory.mktemp("firefox")
    return firefox.reproduce_firefox(
        out, [experiments.table(TABLE)], sim_seeds=(1,), stack_mode=SIMULATE, jobs=1
    )


def test_every_row_and_finding_once_per_degradation(reproduced: firefox.FirefoxReproduction) -> None:
    t = experiments.table(TABLE)
    r = reproduced
    assert r.rows.height == len(t.rows) * len(firefox.DEGRADATIONS)
    assert r.findings.height == len(t.findings) * len(firefox.DEGRADATIONS)
    assert set(r.rows.get_column("degradation")) == set(firefox.DEGRADATIONS)
    assert r.rows.filter(pl.col("firefox").is_null() | pl.col("simulated").is_null()).height == 0
    assert r.rows.get_column("firefox_fair").all()
    # Chromium's value is the committed reference's, row by row.
    ref, _ = reference.load()
    refd = {(x["table"], x["key"]): x["chromium"] for x in ref.iter_rows(named=True)}
    seed_rows = {row.key: row for row in t.rows}
    for row in r.rows.iter_rows(named=True):
        assert row["chromium"] == pytest.approx(refd[(row["table"], row["key"])])
        agrees = seed_rows[row["key"]].agrees(row["firefox"], row["chromium"])
        assert row["firefox_agrees_with_chromium"] == agrees
    for name in (firefox.ROWS, firefox.FINDINGS, firefox.PERIODS, firefox.RUNS):
        assert pl.read_parquet(r.out / name).height > 0


def test_periods_set_firefox_against_chromiums_reference(reproduced: firefox.FirefoxReproduction) -> None:
    _, ref = reference.load()
    ref = ref.filter(pl.col("case") == "seed002-step-up")
    p = reproduced.periods
    assert p.height == ref.height * len(firefox.DEGRADATIONS)
    for row in p.iter_rows(named=True):
        (c,) = (
            ref.filter(
                (pl.col("flow") == row["flow"])
                & (pl.col("start_s") == row["start_s"])
                & (pl.col("metric") == row["metric"])
            )
            .get_column("chromium")
            .to_list()
        )
        assert row["chromium"] == pytest.approx(c)
        assert row["difference"] == pytest.approx(row["firefox"] / c - 1)
        slack = 10.0 if row["metric"] == "qdelay_p95_ms" else 0.0
        assert row["agrees"] == (abs(row["firefox"] - c) <= max(slack, 0.15 * c))


def test_each_degradation_is_its_own_run(reproduced: firefox.FirefoxReproduction) -> None:
    runs = sorted(reproduced.out.glob("seed002-step-up/gcc/*/seed-1"))
    assert len(runs) == 2  # the simulator's seed 1 is the plain case's run, which the default reuses
    assert reproduced.runs.select("case", "degradation").rows() == [
        ("seed002-step-up", "default"),
        ("seed002-step-up", "maintain-resolution"),
    ]
    assert reproduced.runs.get_column("camera_width").to_list() == [1280, 1280]


def test_maintain_resolution_is_set_on_every_call() -> None:
    (case,) = [c for c in experiments.cases() if c.label() == "seed003-parallel-3 [capacity=10Mbps]"]
    plain, kept = firefox._variant(case, "default"), firefox._variant(case, "maintain-resolution")
    assert len(kept.calls) == 6
    assert all("degradation" not in (call.get("video") or {}) for call in plain.calls)
    assert [call["video"]["degradation"] for call in kept.calls] == ["maintain-resolution"] * 6


def test_a_resumed_reproduction_runs_nothing_again(reproduced: firefox.FirefoxReproduction) -> None:
    told: list[bool] = []
    again = firefox.reproduce_firefox(
        reproduced.out,
        [experiments.table(TABLE)],
        sim_seeds=(1,),
        stack_mode=SIMULATE,
        on_run=lambda case, stack, degradation, summary, ran: told.append(ran),
    )
    assert len(told) == 3 and not any(told)
    assert again.rows.equals(reproduced.rows)


def test_kept_only_reads_what_is_complete_and_runs_nothing(tmp_path: Path) -> None:
    r = firefox.reproduce_firefox(
        tmp_path, [experiments.table(TABLE)], sim_seeds=(1,), stack_mode=SIMULATE, kept_only=True,
        degradations=("maintain-resolution",),
    )  # fmt: skip
    # The simulator's seed 1 ran; the maintain-resolution variant did not, so Firefox has nothing.
    assert r.runs.height == 0 and r.periods.height == 0
    assert r.rows.height == len(experiments.table(TABLE).rows)
    assert r.rows.get_column("firefox").is_null().all()
    assert r.rows.get_column("chromium").is_not_null().all()


def test_markdown(reproduced: firefox.FirefoxReproduction) -> None:
    text = firefox.markdown(reproduced)
    assert "| | seed | Chromium 156 | Firefox, default | Firefox, maintain-resolution | simulator |" in text
    for d in firefox.DEGRADATIONS:
        these = reproduced.periods.filter(pl.col("degradation") == d)
        rate = these.filter(pl.col("metric") == "send_rate_kbps")
        ok, n = int(rate.get_column("agrees").sum()), rate.height
        assert f"| {d} | {ok} of {n} ({ok / n:.0%}) |" in text
    assert "| default | 1 (1) | – / 1280 | – | – |" in text  # the simulator sends no getStats()
    for t in experiments.table(TABLE).findings:
        assert f"| {t.text} | yes |" in text


def test_only_the_wired_tables_run() -> None:
    wired = {t.id for t in firefox.wired(experiments.TABLES)}
    assert {"000-6.2.1", "001-5.3", "002-grid", "003-tables-1-4", "003-6.1.6-6.3"} <= wired
    assert not any(t.startswith("004") or t in ("000-table-6.4", "000-table-6.8") for t in wired)
    with pytest.raises(
        InputError, match=r"--stack firefox runs the wired seed tables .*; 004-figures-12-14 run"
    ):
        firefox.reproduce_firefox(Path("/nonexistent"), [experiments.table("004-figures-12-14")])


def test_what_firefox_sent_is_read_from_its_samples(tmp_path: Path) -> None:
    pl.DataFrame(
        {
            "side": ["sender"] * 4 + ["receiver"],
            "frame_width": [960, 960, 1280, None, 320],
            "frames_per_second": [30.0, 28.0, 29.0, None, 30.0],
        }
    ).write_parquet(tmp_path / "stats.parquet")
    sent = firefox._sent(tmp_path, 1280)
    assert sent == {
        "sent_width_median": 960.0,
        "sent_full_width_share": pytest.approx(1 / 3),
        "sent_fps_mean": 29.0,
    }
    assert firefox._sent(tmp_path / "missing", 1280)["sent_width_median"] is None


def test_bad_options_are_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(
        InputError, match="--degradation must be one of default, maintain-resolution, got blurry"
    ):
        firefox.reproduce_firefox(tmp_path / "x", degradations=("blurry",))
    rtcbench = [sys.executable, "-m", "rtcbench.cli", "reproduce", "--out", str(tmp_path / "r")]
    for args, says in (
        (["--degradation", "maintain-resolution"], "--degradation: --stack firefox's option"),
        (["--stack", "firefox", "--cc", "nada"], "--cc: --stack gstreamer's options, not --stack firefox's"),
        (
            ["--stack", "firefox", "--browser", "reference"],
            "--browser with --stack firefox must be run or kept",
        ),
        (["--stack", "firefox", "--export-reference", "x"], "--export-reference: Chromium's reference"),
        (
            ["--stack", "firefox", "--degradation", "blurry"],
            "--degradation must be one of default, maintain-",
        ),
    ):
        out = subprocess.run([*rtcbench, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert says in out.stderr
        assert not (tmp_path / "r").exists()
