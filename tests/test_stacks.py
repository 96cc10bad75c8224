"""`rtcbench stacks`: one case on every stack. The real-time stacks are measured in docs/stacks.md;
here the whole path runs on the simulator, and the parts that are the real stacks' alone (their
fairness, their versions) are checked on their own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from rtcbench import runner, stacks
from rtcbench.identity import MODEL_REVISION
from rtcbench.results import InputError

SIMULATOR = [stacks.stack("simulator")]
SEEDS = (1, 2)


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> stacks.StackComparison:
    return stacks.compare_stacks(tmp_path_factory.mktemp("stacks"), stacks=SIMULATOR, seeds=SEEDS)


def test_every_case_phase_and_metric_is_a_row(compared: stacks.StackComparison) -> None:
    rows = compared.rows
    assert rows.get_column("case").unique(maintain_order=True).to_list() == [c.label() for c in stacks.CASES]
    # Four metrics per video flow and phase: RFC 8867 §5.1's four capacities, the step's two, one
    # capacity against TCP.
    phases = rows.group_by("case").agg(pl.col("phase").n_unique()).sort("case")
    assert dict(phases.iter_rows()) == {c.label(): n for c, n in zip(stacks.CASES, (4, 2, 1), strict=True)}
    assert rows.height == 4 * (4 + 2 + 1)
    # Without Chromium among the stacks there is nothing to compare with.
    assert rows.get_column("reference").null_count() == rows.height
    assert rows.get_column("fair").all() and (rows.get_column("unfair_runs") == 0).all()
    # Each value is the median of the two runs, between their smallest and largest.
    assert (rows.get_column("runs") == len(SEEDS)).all()
    valued = rows.filter(pl.col("value").is_not_null())
    assert ((valued["value_min"] <= valued["value"]) & (valued["value"] <= valued["value_max"])).all()
    assert (valued["value"] - (valued["value_min"] + valued["value_max"]) / 2).abs().max() < 1e-9
    assert valued.filter(pl.col("value_min") < pl.col("value_max")).height > 0  # the seeds differ
    assert compared.versions == {"simulator": f"rtcbench model revision {MODEL_REVISION}"}
    for name in (stacks.ROWS, stacks.CURVES):
        assert pl.read_parquet(compared.out / name).height > 0
    # The curves hold the TCP flow of RFC 8867 §5.6 beside the video.
    kinds = compared.curves.group_by("case").agg(pl.col("kind").unique().sort())
    assert dict(kinds.iter_rows())[stacks.CASES[2].label()] == ["tcp", "video"]
    assert sorted(compared.curves.get_column("seed").unique().to_list()) == list(SEEDS)


def test_each_stack_is_compared_with_the_reference(
    compared: stacks.StackComparison, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The simulator as its own reference: every comparison made, every one agreeing, no difference.
    monkeypatch.setattr(stacks, "REFERENCE", "simulator")
    again = stacks.compare_stacks(compared.out, stacks.CASES[1:2], SIMULATOR, seeds=SEEDS)
    judged = again.rows.filter(pl.col("metric") != "loss")
    assert judged.get_column("agrees").all() and judged.get_column("overlaps").drop_nulls().all()
    assert judged.get_column("difference").drop_nulls().abs().max() == 0.0
    assert (again.rows.get_column("value") == again.rows.get_column("reference")).all()


def test_a_second_comparison_runs_nothing_again(compared: stacks.StackComparison) -> None:
    told: list[bool] = []
    again = stacks.compare_stacks(
        compared.out,
        stacks=SIMULATOR,
        seeds=SEEDS,
        on_run=lambda case, s, seed, summary, ran: told.append(ran),
    )
    assert told == [False] * 3 * len(SEEDS)
    assert again.rows.equals(compared.rows)


def test_figures_and_markdown(compared: stacks.StackComparison) -> None:
    from rtcbench.plots import render

    for case in stacks.CASES:
        png = render(stacks.figure(compared.curves, case.label())).png
        assert png.startswith(b"\x89PNG")
    text = stacks.markdown(compared)
    for case in stacks.CASES:
        assert f"## {case.label()}" in text
        assert f"]({stacks.figure_path(Path(), case.label()).name})" in text
    assert (
        "| simulator | rtcbench's gcc, pacer and frame-size model, simulated | rtcbench model revision "
        + str(MODEL_REVISION)
        + " |"
        in text
    )
    assert stacks.figure_path(Path("o"), "rfc8867-5.6 [queue=300ms,tcp_cc=cubic]") == Path(
        "o/stacks-rfc8867-5.6-queue-300ms-tcp-cc-cubic.png"
    )


def test_each_real_stack_is_judged_by_its_own_rule() -> None:
    emulation, gstreamer, chromium = (stacks.stack(n) for n in ("emulation", "gstreamer", "chromium"))
    assert stacks.run_problem(emulation, {"emulation": {"valid": True}}) is None
    assert "relay" in str(stacks.run_problem(emulation, {"emulation": {"valid": False}}))
    limited = {"gstreamer": {"valid": True, "cpu_limited": ["S1"]}}
    assert stacks.run_problem(gstreamer, limited) == "CPU-limited: the encoder of S1 did not keep up"
    assert stacks.run_problem(chromium, {"browser": {"failure": "no ICE"}}) == "failed: no ICE"
    assert stacks.run_problem(stacks.stack("simulator"), {"emulation": {"valid": False}}) is None


def test_the_scaled_gstreamer_stack_runs_when_named_with_every_call_scaled() -> None:
    scaled, plain = stacks.stack("gstreamer-scaled"), stacks.stack("gstreamer")
    assert scaled not in stacks.STACKS and scaled in stacks.ALL_STACKS
    assert (scaled.mode, scaled.controller) == (plain.mode, plain.controller)
    for case in stacks.CASES:
        variant = stacks._variant(case, scaled)
        assert {c["video"]["degradation"] for c in variant.calls} == {"maintain-framerate"}
        assert all("degradation" not in c["video"] for c in stacks._variant(case, plain).calls)
        # Keyed apart from the camera-size runs, so both can share an --out folder.
        folders = {
            runner.run_folder(Path("o"), stacks._variant(case, s), "gcc", 1, s.mode) for s in (scaled, plain)
        }
        assert len(folders) == 2


def test_bad_options_are_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(
        InputError, match="--stack must be one of simulator, emulation, chromium, firefox, gstreamer"
    ):
        stacks.stack("safari")
    rtcbench = [sys.executable, "-m", "rtcbench.cli", "stacks", "--out", str(tmp_path / "r")]
    for args, says in (
        (["--stack", "safari"], "got 'safari'"),
        (["--attempts", "0", "--stack", "simulator"], "--attempts must be at least 1, got 0"),
        (["--runs", "0", "--stack", "simulator"], "--runs must be at least 1, got 0"),
        (["--case", "rfc8867-5.1", "--stack", "simulator"], "names 4 variants: give every variant's value"),
    ):
        out = subprocess.run([*rtcbench, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
        assert says in out.stderr
        assert not (tmp_path / "r").exists()


def test_a_stacks_value_is_the_median_of_its_fair_runs() -> None:
    def runs(*values: float) -> list[tuple[list[dict[str, object]], str | None]]:
        return [([{"flow": "S1.video", "phase": 0, "metric": "send_rate_kbps", "simulated": v}], None)
                for v in values]  # fmt: skip

    key = ("S1.video", 0, "send_rate_kbps")
    chromium = stacks._aggregate(runs(700, 760, 800))[key]
    assert (chromium["median"], chromium["low"], chromium["high"], chromium["runs"]) == (760, 700, 800, 3)
    # An unfair run is left out while a fair one is there, and counted.
    mixed = stacks._aggregate([*runs(500, 520), ([{"flow": "S1.video", "phase": 0, "metric": "send_rate_kbps",
                                                   "simulated": 900.0}], "invalid")])[key]  # fmt: skip
    assert (mixed["median"], mixed["runs"], mixed["unfair"], mixed["problem"]) == (510, 2, 1, "invalid")
    only_unfair = stacks._aggregate([([{"flow": "S1.video", "phase": 0, "metric": "send_rate_kbps",
                                        "simulated": 900.0}], "invalid")])[key]  # fmt: skip
    assert only_unfair["median"] == 900 and only_unfair["fair"] is False
