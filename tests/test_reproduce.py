"""`rtcbench reproduce`: the reproduction set's registry, its measures on real runs, resuming, the
period comparison and the command line. The browser half runs in real time and is exercised by
the reproduction itself (docs/reproduction.md); here the simulator's half and everything around
it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from rtcbench import reproduce
from rtcbench.browser.run import CONTROLLER, connections
from rtcbench.emulation.run import planned_meta
from rtcbench.reproduce import experiments, report
from rtcbench.reproduce.experiments import TABLES, Case, Finding, Row, SeedTable
from rtcbench.reproduce.measures import VIDEO, FlowStat
from rtcbench.results import InputError
from rtcbench.testbed import cross


def test_every_finding_holds_on_the_seeds_own_numbers() -> None:
    # The registry's self-check: a predicate that contradicts the numbers it was written from is
    # a mistake in the registry, not a finding.
    judged = 0
    for t in TABLES:
        for f in t.findings:
            verdict = f.holds(t.seed_values())
            assert verdict is not False, f"{t.id}: {f.text}"
            judged += verdict is True
    assert judged >= 15, judged


def test_row_keys_are_unique_and_every_table_has_findings() -> None:
    assert len({t.id for t in TABLES}) == len(TABLES)
    for t in TABLES:
        keys = [r.key for r in t.rows]
        assert len(keys) == len(set(keys)), t.id
        assert t.findings, t.id


def test_every_case_can_run_between_browsers() -> None:
    # Planned without root or Chromium: cross traffic the kernel cannot give as the simulator does
    # (TCP Small Queues behind the relay) and scenarios without calls are refused here, hours
    # into a reproduction otherwise.
    for case in experiments.cases():
        variant = reproduce._variant(case)
        cross.plan(variant, 1)
        assert connections(variant, planned_meta(variant, CONTROLLER, 1), 1), case.label()


def test_a_finding_that_meets_a_missing_value_decides_nothing() -> None:
    f = Finding("a below b", lambda v: v["a"] < v["b"])
    assert f.holds({"a": 1.0, "b": 2.0}) is True
    assert f.holds({"a": 3.0, "b": 2.0}) is False
    assert f.holds({"a": None, "b": 2.0}) is None
    assert f.holds({"b": 2.0}) is None


def test_agreement_is_relative_or_within_the_slack() -> None:
    row = Row("k", "k", Case("seed000-5.2.5"), FlowStat(VIDEO, 0, 1), "ms", slack=10.0)
    assert row.agrees(114.0, 100.0) is True
    assert row.agrees(116.0, 100.0) is False
    assert row.agrees(9.0, 1.0) is True  # 8 ms apart: within the slack
    assert row.agrees(None, 1.0) is None


@pytest.fixture(scope="module")
def simulated_set(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, reproduce.Reproduction]:
    out = tmp_path_factory.mktemp("reproduction")
    return out, reproduce.reproduce(out, browser="none", sim_seeds=(1,))


def test_every_row_of_the_set_measures_its_runs(simulated_set: tuple[Path, reproduce.Reproduction]) -> None:
    # Every case names exactly one variant, every measure finds its flows and windows: a wrong
    # flow name or an empty window would leave a row without a value.
    _, result = simulated_set
    assert result.rows.height == sum(len(t.rows) for t in TABLES)
    empty = result.rows.filter(pl.col("simulated").is_null())
    assert empty.height == 0, empty.select("table", "key").rows()
    assert result.rows.get_column("chromium").null_count() == result.rows.height
    assert result.periods.height == 0


def test_the_simulators_rows_are_what_the_behaviour_tests_measure(
    simulated_set: tuple[Path, reproduce.Reproduction],
) -> None:
    # Cross-checks with numbers measured independently (tests/test_behaviour_*.py, docs): the
    # measures read the runs as the behaviour tests do.
    _, result = simulated_set
    values = {(r["table"], r["key"]): r["simulated"] for r in result.rows.iter_rows(named=True)}
    # Since model revision 13 the estimate is not capped at the call's 2.5 Mbit/s, so the encoder
    # reaches it: 2.64 Mbit/s on the wire, Chromium 156 2.66 (2.46 before).
    assert values[("000-6.2.1", "rate")] == pytest.approx(2.64, abs=0.05)
    assert values[("002-vs-tcp", "gcc-first.1000kbps.gcc")] == pytest.approx(0.06, abs=0.02)
    assert values[("002-vs-tcp", "gcc-first.1000kbps.tcp")] == pytest.approx(0.88, abs=0.05)


def test_a_reproduction_resumes_without_running_again(
    simulated_set: tuple[Path, reproduce.Reproduction],
) -> None:
    out, first = simulated_set
    told: list[tuple[str, bool]] = []
    again = reproduce.reproduce(
        out,
        [experiments.table("000-6.2.1")],
        browser="none",
        sim_seeds=(1,),
        on_run=lambda case, mode, seed, summary, ran: told.append((case.label(), ran)),
    )
    assert told == [("seed000-5.2.5", False)]
    row = again.rows.row(0, named=True)
    assert (
        row["simulated"] == first.rows.filter(pl.col("table") == "000-6.2.1").row(0, named=True)["simulated"]
    )
    for name in (reproduce.ROWS, reproduce.FINDINGS, reproduce.PERIODS):
        assert pl.read_parquet(out / name).height > 0 or name == reproduce.PERIODS


def test_the_committed_reference_stands_in_for_the_browser_runs(
    simulated_set: tuple[Path, reproduce.Reproduction],
) -> None:
    # `--browser reference`: Chromium's numbers come from the committed tables, set against the
    # simulated runs already in OUT; no browser runs.
    from rtcbench.reproduce import reference

    out, _ = simulated_set
    ref_rows, ref_periods = reference.load()
    result = reproduce.reproduce(out, [experiments.table("000-6.2.1")], browser="reference", sim_seeds=(1,))
    (row,) = result.rows.iter_rows(named=True)
    expected = ref_rows.filter((pl.col("table") == "000-6.2.1") & (pl.col("key") == "rate"))["chromium"]
    assert row["chromium"] == pytest.approx(expected.item())
    assert row["chromium_fair"] is True and row["simulated_agrees_with_chromium"] is not None
    assert result.findings["chromium"].null_count() == 0
    case_periods = ref_periods.filter(pl.col("case") == "seed000-5.2.5")
    assert result.periods.height == case_periods.height > 0
    for p in result.periods.iter_rows(named=True):
        assert p["agrees"] == reproduce.period_agrees(p["metric"], p["chromium"], p["simulated"])
    assert len(list((out / "seed000-5.2.5" / "gcc").iterdir())) == 1  # the simulated runs' key alone


def _summary(periods: list[tuple[float, float, float, float]], **browser: Any) -> dict[str, Any]:
    return {
        "periods": [
            {
                "index": i,
                "start_s": a,
                "end_s": b,
                "flows": [
                    {"name": "G.video", "kind": "video", "mean_send_rate_bps": rate, "qdelay_p95_ms": q95}
                ],
            }
            for i, (a, b, rate, q95) in enumerate(periods)
        ],
        "browser": {"machine": {"cores": 2, "starved_windows": []}, **browser},
        "flows": [{"name": "G.video", "kind": "video"}],
    }


def test_periods_compare_chromium_with_the_simulators_mean() -> None:
    chromium = _summary([(0, 100, 1_000_000, 20.0), (100, 200, 500_000, 100.0)])
    sims = [
        _summary([(0, 100, 1_100_000, 25.0), (100, 200, 300_000, 100.0)]),
        _summary([(0, 100, 1_100_000, 35.0), (100, 200, 300_000, 140.0)]),
    ]
    rows = {(r["period"], r["metric"]): r for r in reproduce.compare_periods("c", chromium, sims)}
    rate0, q0 = rows[(0, "send_rate_kbps")], rows[(0, "qdelay_p95_ms")]
    assert (rate0["chromium"], rate0["simulated"], rate0["agrees"]) == (1000.0, 1100.0, True)
    assert q0["simulated"] == 30.0 and q0["agrees"] is True  # 10 ms apart: the slack
    assert rows[(1, "send_rate_kbps")]["agrees"] is False  # 300 against 500
    assert rows[(1, "qdelay_p95_ms")]["agrees"] is False  # 120 against 100: neither 15 % nor 10 ms
    table = pl.DataFrame(list(rows.values()), schema=reproduce.PERIODS_SCHEMA)
    assert report.fidelity(table) == {"send_rate_kbps": (1, 2), "qdelay_p95_ms": (1, 2)}


def test_a_browser_run_is_fair_unless_it_failed_missed_its_timing_or_was_cpu_limited() -> None:
    fair = _summary([], valid=True, calls={"G": {"quality_limitation": {"cpu": 0.01}}})
    assert reproduce.run_problem(fair) is None
    assert "failed" in str(reproduce.run_problem(_summary([], failure="no media")))
    assert "invalid" in str(reproduce.run_problem(_summary([], valid=False)))
    limited = _summary([], valid=True, calls={"G": {"quality_limitation": {"cpu": 0.2}}})
    assert reproduce.run_problem(limited) == "CPU-limited: G.video's encoder in 20% of its samples"
    # Chromium never said "cpu" on this machine: the run's own tables tell (rtcbench.browser.machine).
    window = {"start_s": 120.0, "flow": "G.video", "fps_asked": 60.0, "fps_median": 20.0, "cores_used": 1.8}
    starved = _summary([], valid=True, machine={"cores": 2, "starved_windows": [window]})
    assert reproduce.run_problem(starved) == (
        "CPU-limited: the machine held the encoders back in 1 10 s window(s) from 120 s: G.video encoded "
        "a median 20 of its 60 frames a second while the run used 1.80-1.80 of 2 cores; its rates there "
        "describe this machine, not the network"
    )


def _run_folder(tmp_path: Path, first_sent_s: dict[str, float | None]) -> Path:
    """A run's folder whose flows first send at `first_sent_s` (None: never), in 200 ms windows."""
    tmp_path.mkdir(parents=True)
    rows = []
    for flow, first in first_sent_s.items():
        for k in range(900):
            t_us = k * 200_000
            sending = first is not None and t_us >= first * 1e6
            rows.append({"t_us": t_us, "flow_name": flow, "send_rate_bps": 1e6 if sending else 0.0})
    pl.DataFrame(rows).write_parquet(tmp_path / "timeseries.parquet")
    return tmp_path


def test_a_browser_run_whose_call_began_late_is_not_fair(tmp_path: Path) -> None:
    # Measured on seed000-5.3.7 before the fix: the fourth call due at 120 s sent its first video
    # 9-20 s late, each call having waited for the ICE of those before it.
    # Two calls, `A` from 0 s and an unnamed one (`call1`) from 120 s, as the summary records them.
    starts = [("A.video", 0.0), ("call1.video", 120.0), ("A.audio", 0.0)]
    meta = {"flows": [{"name": n, "kind": n.split(".")[1], "start_s": t} for n, t in starts]}
    fair = {**_summary([], valid=True), "meta": meta}
    on_time = _run_folder(tmp_path / "a", {"A.video": 0.4, "call1.video": 122.0, "A.audio": 0.2})
    assert reproduce.late_starts(fair, on_time) == pytest.approx({"A.video": 0.4, "call1.video": 2.0})
    assert reproduce.run_problem(fair, on_time) is None
    late = _run_folder(tmp_path / "b", {"A.video": 0.4, "call1.video": 130.0})
    assert reproduce.run_problem(fair, late) == "late start: call1.video began 10.0 s after its call's start"
    silent = _run_folder(tmp_path / "c", {"A.video": None, "call1.video": 120.0})
    assert reproduce.run_problem(fair, silent) == "late start: A.video never sent video"
    with pytest.raises(InputError, match="cannot read the run's time series"):
        reproduce.late_starts(fair, tmp_path / "missing")
    # A run that recorded its offers is judged on them: what the harness controls. Its video may
    # wait seconds more for ICE, TURN and DTLS on a long path, as a real call's would.
    offers = {"A": {"setup_s": {"offer_late": 0.1}}, "call1": {"setup_s": {"offer_late": 0.2}}}
    offered = {**_summary([], valid=True, calls=offers), "meta": meta}
    assert reproduce.run_problem(offered, late) is None
    offered["browser"]["calls"]["call1"]["setup_s"]["offer_late"] = 6.0
    assert (
        reproduce.run_problem(offered, on_time)
        == "late start: call1 was offered 6.0 s after its call's start"
    )


def test_the_markdown_shows_the_seed_chromium_and_the_simulator() -> None:
    t = SeedTable(
        "t",
        "Somebody 2020, Table 1",
        "title",
        (Row("r", "a rate", Case("seed000-5.2.5"), FlowStat(VIDEO, 0, 1), "Mbit/s", 2.0),),
        (Finding("the rate is over 1", lambda v: v["r"] > 1), Finding("claimed only", lambda v: v["x"] > 1)),
    )
    rows, findings = reproduce.table_rows([t], {}, {})
    text = report.markdown(
        pl.DataFrame(rows, schema=reproduce.ROWS_SCHEMA),
        pl.DataFrame(findings, schema=reproduce.FINDINGS_SCHEMA),
        pl.DataFrame([], schema=reproduce.PERIODS_SCHEMA),
    )
    assert "## Somebody 2020, Table 1 (`t`)" in text
    assert "| a rate (Mbit/s) | 2.00 | – | – | – | – |" in text
    assert "| the rate is over 1 | yes | – | – |" in text
    assert "| claimed only | claimed | – | – |" in text

    # A value from a browser run that was not a fair measurement is shown, and marked.
    rows, findings = reproduce.table_rows([t], {("t", "r"): 2.1}, {}, frozenset({"seed000-5.2.5"}))
    text = report.markdown(
        pl.DataFrame(rows, schema=reproduce.ROWS_SCHEMA),
        pl.DataFrame(findings, schema=reproduce.FINDINGS_SCHEMA),
        pl.DataFrame([], schema=reproduce.PERIODS_SCHEMA),
    )
    assert "| a rate (Mbit/s) | 2.00 | 2.10 (invalid run) | – | yes | – |" in text
    assert "| the rate is over 1 | yes | yes (invalid run) | – |" in text
    assert report.verdict_line(findings[0]).startswith(
        "the rate is over 1: holds for Chromium 156 (an invalid run);"
    )


def test_a_rejected_run_is_kept_aside(tmp_path: Path) -> None:
    folder = tmp_path / "seed002-grid@x" / "gcc" / "abc123" / "seed-1"
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text("{}")
    for _ in range(2):
        shutil.copytree(folder, folder.with_name("copy"))
        reproduce._reject(folder, tmp_path)
        folder.with_name("copy").rename(folder)
    assert sorted(p.name for p in (tmp_path / "rejected").iterdir()) == [
        "seed002-grid@x-abc123-1",
        "seed002-grid@x-abc123-2",
    ]


class _FakeJob:
    """A browser job whose runs are scripted: each `_execute` writes its folder and returns the
    next summary."""

    def __init__(self, path: Path, kept: dict[str, Any] | None) -> None:
        self.path = path
        self.kept = kept

    def done(self) -> dict[str, Any] | None:
        return self.kept


def _scripted(monkeypatch: pytest.MonkeyPatch, summaries: list[dict[str, Any]]) -> list[int]:
    calls: list[int] = []

    def execute(job: _FakeJob) -> dict[str, Any]:
        _run_folder(job.path, {"A.video": 0.4})
        calls.append(1)
        return summaries[len(calls) - 1]

    monkeypatch.setattr(reproduce, "_execute", execute)
    return calls


@pytest.mark.parametrize(
    ("kept", "runs", "attempts", "expected_runs", "rejected"),
    [
        ("fair", [], 2, 0, 0),  # a complete, fair run is reused
        (None, ["limited", "fair"], 2, 2, 1),  # a CPU-limited run is set aside and run again
        (None, ["limited", "limited"], 2, 2, 1),  # the last attempt is kept whatever it is
        ("limited", ["fair"], 2, 1, 1),  # a kept unfair run counts as the first attempt
        ("limited", [], 1, 0, 0),  # one attempt: kept as it is
    ],
)
def test_an_unfair_browser_run_is_run_again_up_to_the_attempts(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    kept: str | None,
    runs: list[str],
    attempts: int,
    expected_runs: int,
    rejected: int,
) -> None:
    summaries = {
        "fair": _summary([], valid=True),
        "limited": _summary([], valid=True, calls={"G": {"quality_limitation": {"cpu": 0.5}}}),
    }
    folder = tmp_path / "s@v" / "gcc" / "key" / "seed-1"
    if kept is not None:
        _run_folder(folder, {"A.video": 0.4})
    calls = _scripted(monkeypatch, [summaries[r] for r in runs])
    job = _FakeJob(folder, None if kept is None else summaries[kept])
    summary, ran = reproduce._browser_run(job, tmp_path, attempts)  # type: ignore[arg-type]
    assert len(calls) == expected_runs and ran == (expected_runs > 0)
    assert summary is (summaries[runs[-1]] if runs else summaries[str(kept)])
    aside = list((tmp_path / "rejected").iterdir()) if (tmp_path / "rejected").exists() else []
    assert len(aside) == rejected


def test_only_one_call_over_wired_links_shares_the_machine() -> None:
    # What was measured to keep its timing beside another run (reproduce.BROWSER_JOBS): one call,
    # wired. Calls with more encoders, or a relay that also runs a BSS or a cell, run alone.
    shares = {
        case.label(): reproduce.shares_the_machine(reproduce._variant(case))
        for case in experiments.cases(TABLES)
    }
    assert shares["seed002-grid [capacity=500kbps,delay=15ms]"]
    assert shares["seed002-vs-tcp-tcp-first [capacity=3000kbps]"]
    assert shares["seed001-staircase"]
    assert not shares["seed002-two-gcc [capacity=1000kbps]"]  # two calls
    assert not shares["seed003-unconstrained"]  # a two-way call: two encoders
    assert not shares["seed004-testbed [rex=0,fec=false]"]  # a BSS
    assert not any(v for k, v in shares.items() if k.startswith(("seed000-5.3", "seed000-5.4")))
    assert 30 <= sum(shares.values()) <= 40, sum(shares.values())


def test_the_command_refuses_an_unknown_table_or_browser_mode_in_one_line(tmp_path: Path) -> None:
    rtcbench = [sys.executable, "-m", "rtcbench.cli"]
    for args, names in (
        (["--table", "000-table-9.9"], "no seed table '000-table-9.9'; there are 000-6.2.1, "),
        (["--browser", "sometimes"], "--browser must be one of run, kept, reference, none, got 'sometimes'"),
        (["--browser-jobs", "0"], "--browser-jobs must be at least 1, got 0"),
        (["--browser", "reference", "--export-runs", "x"], "--export-runs adds browser runs"),
        (["--browser-seed", "2", "--export-reference", "x"], "--export-reference is made of the seed-1 runs"),
        (["--stack", "firefox", "--browser-seed", "2"], "--browser-seed, --export-runs: --stack chromium's"),
        (["--stack", "gstreamer", "--ray", "auto"], "--ray: --stack chromium's option"),
    ):
        out = subprocess.run(
            [*rtcbench, "reproduce", *args, "--out", str(tmp_path / "r")], capture_output=True, text=True
        )
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert names in out.stderr
        assert not (tmp_path / "r").exists()
    listed = subprocess.run([*rtcbench, "reproduce", "--list"], capture_output=True, text=True)
    assert listed.returncode == 0
    assert [line.split(":")[0] for line in listed.stdout.splitlines()] == [t.id for t in TABLES]


def test_a_verdict_is_invalid_only_if_it_read_an_unfair_run() -> None:
    fair, unfair = Case("seed000-5.2.5"), Case("seed002-step-up")
    t = SeedTable(
        "t",
        "Somebody 2020, Table 1",
        "title",
        (
            Row("a", "a", fair, FlowStat(VIDEO, 0, 1), ""),
            Row("b", "b", unfair, FlowStat(VIDEO, 0, 1), ""),
        ),
        (Finding("a alone", lambda v: v["a"] > 1), Finding("a and b", lambda v: v["a"] > v["b"])),
    )
    _, findings = reproduce.table_rows(
        [t], {("t", "a"): 2.0, ("t", "b"): 1.0}, {}, frozenset({unfair.label()})
    )
    assert [(f["chromium"], f["chromium_fair"]) for f in findings] == [(True, True), (True, False)]


def test_an_attempt_the_testbed_failed_is_recorded_and_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rtcbench.browser.run import BrowserModeError
    from rtcbench.identity import SIMULATE
    from rtcbench.suite import _Job
    from rtcbench.testbed.relay import RelayError

    (case,) = [c for c in experiments.cases() if c.label() == "seed002-step-up"]
    variant = reproduce._variant(case)
    job = _Job.plan(variant, "gcc", "gcc", 1, tmp_path, None, SIMULATE)
    real = reproduce._execute
    failures: list[BaseException] = [RelayError("the relay did not stop within 5.0 s")]

    def flaky(j: Any) -> dict[str, Any]:
        if failures:
            raise failures.pop()
        return real(j)

    monkeypatch.setattr(reproduce, "_execute", flaky)
    summary, ran = reproduce._browser_run(job, tmp_path, 2, lambda s, f: None)
    assert ran and summary["identity"]["key"] == job.path.parent.name
    (note,) = (tmp_path / "rejected").iterdir()
    assert note.name.endswith("-1.failed.txt")
    assert note.read_text() == "RelayError: the relay did not stop within 5.0 s\n"
    # The last attempt's failure is raised; a scenario the mode cannot run is not tried again.
    shutil.rmtree(job.path)
    failures[:] = [RelayError("the relay failed: boom")]
    with pytest.raises(RelayError, match="boom"):
        reproduce._browser_run(job, tmp_path, 1, lambda s, f: None)
    failures[:] = [BrowserModeError("no calls")]
    with pytest.raises(BrowserModeError):
        reproduce._browser_run(job, tmp_path, 3, lambda s, f: None)
    assert failures == [] and len(list((tmp_path / "rejected").iterdir())) == 1
