"""Learned estimators' observations (docs/learned.md, "The observation"): the challenge's 150
numbers per 60 ms decision, from a run's packets table through the one builder in
`rtcbench_cc::learned::observation`, held against the same quantities computed here directly
from the table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import rtcbench
from doc_blocks import run_python_blocks
from rtcbench import _core, learned, quality, results
from rtcbench.runner import RunResult

RTCBENCH = [sys.executable, "-m", "rtcbench.cli"]

LOSSY = """
id = "lossy"
duration = "30s"

[[links]]
name = "forward"
from = "A"
to = "B"
delay = "40ms"
capacity = "2Mbps"
loss = { model = "bernoulli", rate = 0.02 }
queue = { kind = "droptail", size = "300ms" }

[[links]]
name = "backward"
from = "B"
to = "A"
delay = "40ms"

[[calls]]
from = "A"
to = "B"
video = { min = "150kbps", max = "1500kbps", start = "500kbps" }
audio = { rate = "20kbps" }
"""


def _received_delay_ms(arrival_us: np.ndarray, sent_us: np.ndarray) -> np.ndarray:
    """One-way delays as the receiver reads them: the send instant from the packet's 24-bit
    abs-send-time (6.18 fixed-point seconds, 64 s wrap), placed within 32 s of the arrival."""
    ticks_per_s = 1 << 18

    def ticks(us: np.ndarray) -> np.ndarray:
        return np.asarray(np.round((us % 64_000_000) * ticks_per_s / 1e6).astype(np.int64) & 0xFFFFFF)

    d = (ticks(arrival_us) - ticks(sent_us) + (1 << 23)) % (1 << 24) - (1 << 23)
    return np.asarray(np.round(d * 1e6 / ticks_per_s) / 1000.0)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    out = tmp_path_factory.mktemp("learned")
    return rtcbench.run("rfc8867-5.1", "gcc", 1, out, ["duration=30s"], figure=False)[0]


def _received(run: RunResult) -> pl.DataFrame:
    flows = [
        int(f["id"])
        for f in run.tables.meta["flows"]
        if f.get("call") == 0 and f["kind"] in ("video", "audio")
    ]
    return run.tables.packets.filter(
        (pl.col("event") == "received")
        & pl.col("flow").is_in(flows)
        & pl.col("kind").is_in(["media", "padding", "rtx", "fec"])
    )


def test_one_observation_per_60_ms_decision(run: RunResult) -> None:
    steps, obs = learned.observations(run.tables)
    assert obs.shape == (500, learned.OBSERVATION_LEN) and obs.dtype == np.float32
    assert steps[0] == 60_000 and steps[-1] == 30_000_000 and np.all(np.diff(steps) == 60_000)
    assert np.isfinite(obs).all()


def test_rates_counts_and_delays_are_the_tables(run: RunResult) -> None:
    steps, obs = learned.observations(run.tables)
    rx = _received(run)
    rx = rx.with_columns(delay_ms=_received_delay_ms(rx["t_us"].to_numpy(), rx["sent_us"].to_numpy()))
    for row in (99, 250, 499):
        t = int(steps[row])
        for long, length in ((False, 60_000), (True, 600_000)):
            for i in range(learned.INTERVALS):
                lo, hi = t - (i + 1) * length, t - i * length
                inside = rx.filter((pl.col("t_us") >= lo) & (pl.col("t_us") < hi))
                got = {name: learned.feature(obs, name, long=long, i=i)[row] for name in learned.FEATURES}
                assert got["received_packets"] == inside.height
                size = int(inside["size"].sum())
                assert got["received_bytes"] == size
                assert got["receiving_rate_bps"] == pytest.approx(size * 8 / (length / 1e6), rel=1e-6)
                if inside.height:
                    delays = inside["delay_ms"].to_numpy()
                    mean = float(delays.mean())
                    assert got["delay_ms"] == pytest.approx(mean - 200.0, abs=1e-3)
                    assert got["delay_minus_minimum_ms"] == pytest.approx(
                        mean - float(delays.min()), abs=1e-3
                    )
        # The minimum delay so far is the call's, in every interval.
        seen = float(rx.filter(pl.col("t_us") < t)["delay_ms"].to_numpy().min())
        assert learned.feature(obs, "minimum_seen_delay_ms", long=True, i=4)[row] == pytest.approx(
            seen, abs=1e-3
        )
    # rfc8867-5.1's first variant: 50 ms one way; nothing is lost.
    assert 50.0 <= learned.feature(obs, "minimum_seen_delay_ms")[-1] < 52.0
    assert learned.feature(obs, "loss_ratio", long=True).max() == 0.0
    shares = np.sum(
        [learned.feature(obs, f"{k}_share", long=True, i=0) for k in ("video", "audio", "probe")], axis=0
    )
    counted = learned.feature(obs, "received_packets", long=True, i=0) > 0
    assert (shares[counted] <= 1.0 + 1e-6).all() and (shares[counted] > 0.5).all()


def test_losses_are_read_off_the_sequence_numbers(tmp_path: Path) -> None:
    path = tmp_path / "lossy.toml"
    path.write_text(LOSSY)
    (lossy,) = rtcbench.run(path, "gcc", 1, tmp_path / "out", figure=False)
    _, obs = learned.observations(lossy.tables)
    dropped = lossy.tables.packets.filter((pl.col("event") == "dropped") & (pl.col("kind") == "media")).height
    sent = lossy.tables.packets.filter((pl.col("event") == "sent") & (pl.col("kind") == "media")).height
    # Every 600 ms once: the long MIs at steps 10, 20, ... tile the run.
    tiles = obs[9::10, learned.feature_index("loss_ratio", long=True, i=0)]
    assert dropped / sent == pytest.approx(0.02, abs=0.006)
    assert float(np.mean(tiles)) == pytest.approx(dropped / sent, abs=0.006)
    per_event = learned.feature(obs, "lost_per_loss_event", long=True)
    assert per_event.max() >= 1.0 and per_event[per_event > 0].min() >= 1.0


def test_the_layout_and_bad_input() -> None:
    assert learned.feature_index("receiving_rate_bps", long=False, i=0) == 0
    assert learned.feature_index("received_packets", long=False, i=0) == 10
    assert learned.feature_index("receiving_rate_bps", long=True, i=0) == 5
    assert learned.feature_index("probe_share", long=True, i=4) == 149
    with pytest.raises(ValueError, match="feature 'rate' is not one of receiving_rate_bps"):
        learned.feature_index("rate", long=False, i=0)
    one = np.zeros(1, dtype=np.int64)
    with pytest.raises(ValueError, match="the packet arrays differ in length"):
        _core.observations(one, one, one, one, one[:0], np.zeros(1, dtype=np.uint8), one + 1)
    with pytest.raises(ValueError, match="packet class 7 is not 0-3"):
        _core.observations(one, one, one, one, one, np.full(1, 7, dtype=np.uint8), one + 1)
    with pytest.raises(ValueError, match="steps increasing"):
        _core.observations(
            one, one, one, one, one, np.zeros(1, dtype=np.uint8), np.array([5, 5], dtype=np.int64)
        )


def test_a_call_record_round_trips_through_the_challenge_json(run: RunResult, tmp_path: Path) -> None:
    record = learned.call_record(run.tables)
    steps = record.observations.shape[0]
    assert steps == 500 and record.policy_id == "gcc"
    # The controller's target at each step, the bottleneck's capacity (rfc8867-5.1's first
    # schedule starts at 1 Mbit/s) and no loss.
    assert np.isfinite(record.bandwidth_predictions).all() and (record.bandwidth_predictions > 0).all()
    assert record.true_capacity is not None and record.true_capacity[0] == 1_000_000
    assert record.true_loss is not None and (record.true_loss == 0).all()
    # rtcbench's quality score over the 600 ms before each step, from the first frame shown on.
    shown = np.isfinite(record.video_quality)
    assert not shown[0] and shown[5:].all()
    assert (record.video_quality[shown] >= 1).all() and (record.video_quality[shown] <= 5).all()
    path = learned.write_call(record, tmp_path / "call.json")
    back = learned.read_call(path)
    assert np.array_equal(back.observations, record.observations)
    assert np.array_equal(back.bandwidth_predictions, record.bandwidth_predictions)
    assert back.true_capacity is not None and np.array_equal(back.true_capacity, record.true_capacity)
    assert back.true_loss is not None and np.array_equal(back.true_loss, record.true_loss)
    np.testing.assert_array_equal(back.video_quality, record.video_quality)
    assert np.isnan(back.audio_quality).all() and back.policy_id == "gcc"
    m = learned.offline_metrics(record.bandwidth_predictions, record.true_capacity)
    assert 0.0 <= m["overestimation_rate"] <= m["error_rate"] <= 1.0 and m["steps"] == 500


def test_the_step_quality_is_rate_less_stalls_less_delay() -> None:
    """`quality.step_quality` by hand: 1 Mbit/s received over the window, frames 100 ms old; a
    freeze over half the window costs half the stall penalty; 275 ms old frames cost half the
    delay penalty; nothing before the first frame shown."""
    steps = np.array([300_000, 1_200_000, 2_400_000, 3_600_000])
    # 1 Mbit/s: 75 000 bytes every 600 ms, in packets of 1250 bytes every 10 ms.
    received = np.arange(0, 4_000_000, 10_000)
    sizes = np.full(len(received), 1250)
    rendered = np.arange(500_000, 4_000_000, 33_333)
    delay = np.where(rendered < 3_000_000, 100.0, 275.0)
    frozen = np.array([[1_800_000, 2_100_000]])
    q = quality.step_quality(steps, received, sizes, rendered, delay, frozen)
    full = float(quality.rate_quality(np.array([1e6]))[0])
    assert np.isnan(q[0])
    assert q[1] == pytest.approx(full)
    assert q[2] == pytest.approx(full - quality.STALL_PENALTY * 0.5)
    assert q[3] == pytest.approx(full - 0.5 * quality.DELAY_PENALTY)
    assert full == pytest.approx(1 + 4 * np.log1p(10) / np.log1p(25))


def test_offline_metrics_are_the_communitys() -> None:
    x = np.array([1.5e6, 0.5e6, 2.0e6, np.nan])
    y = np.array([1.0e6, 1.0e6, 1.0e6, 1.0e6])
    m = learned.offline_metrics(x, y)
    assert m["error_rate"] == pytest.approx((0.5 + 0.5 + 1.0) / 3)
    assert m["overestimation_rate"] == pytest.approx((0.5 + 0 + 1.0) / 3)
    assert m["mse_mbps2"] == pytest.approx((0.25 + 0.25 + 1.0) / 3)
    assert m["steps"] == 3


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]", "a per-call record is a JSON object, not list"),
        ("{", "not JSON"),
        ('{"observations": [[1, 2]]}', "observations: must be a list of steps of 150 numbers each"),
        (
            '{"observations": [[0]], "bandwidth_predictions": [1]}',
            "observations: must be a list of steps of 150 numbers each",
        ),
        ("OBS", "bandwidth_predictions: missing (a list with one number per step)"),
        ("OBS_PRED_2", "bandwidth_predictions: 2 values for 1 steps of observations"),
        ("OBS_PRED_TEXT", "bandwidth_predictions: must be a list of numbers"),
    ],
)
def test_a_bad_call_record_is_one_line(tmp_path: Path, content: str, message: str) -> None:
    obs = json.dumps([[0.0] * learned.OBSERVATION_LEN])
    content = {
        "OBS": f'{{"observations": {obs}}}',
        "OBS_PRED_2": f'{{"observations": {obs}, "bandwidth_predictions": [1, 2]}}',
        "OBS_PRED_TEXT": f'{{"observations": {obs}, "bandwidth_predictions": ["fast"]}}',
    }.get(content, content)
    path = tmp_path / "call.json"
    path.write_text(content)
    with pytest.raises(learned.LearnedDataError) as e:
        learned.read_call(path)
    assert str(e.value).startswith(f"{path}: ") and message in str(e.value) and "\n" not in str(e.value)


def test_the_pages_code_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    page = Path(__file__).resolve().parents[1] / "docs" / "learned.md"
    assert run_python_blocks(page, every_block_shows_output=False) == 1


def test_export_writes_every_call_of_a_folder_of_runs_and_round_trips(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    rtcbench.run("rfc8867-5.1", "gcc", 1, runs, ["duration=6s"], figure=False)
    out = tmp_path / "records"
    done = subprocess.run([*RTCBENCH, "export", str(runs), "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    folders = results.run_folders(runs)
    records = sorted(out.rglob("call0.json"))
    assert len(records) == len(folders) >= 2
    steps = pl.read_parquet(out / "steps.parquet")
    assert steps.height == 100 * len(folders) and steps["observation"].dtype == pl.Array(pl.Float32, 150)
    # Exported and read back: the same observations, estimates and true capacities as the runs'.
    for folder in folders:
        name = folder.relative_to(runs).as_posix()
        back = learned.read_call(out / name / "call0.json")
        direct = learned.call_record(results.load_tables(folder))
        assert np.array_equal(back.observations, direct.observations)
        assert np.array_equal(back.bandwidth_predictions, direct.bandwidth_predictions)
        assert back.true_capacity is not None and direct.true_capacity is not None
        assert np.array_equal(back.true_capacity, direct.true_capacity)
        mine = steps.filter(pl.col("run") == name).sort("step")
        assert np.array_equal(mine["observation"].to_numpy(), direct.observations)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing"], "missing: not a folder"),
        (["empty"], "empty: no run folders (none holds a summary.json)"),
    ],
)
def test_export_refuses_in_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "empty").mkdir()
    done = subprocess.run(
        [*RTCBENCH, "export", *args, "--out", "records"], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 2 and done.stderr.strip() == f"error: {message}"
    assert not (tmp_path / "records").exists()


def test_export_does_not_follow_a_link_planted_among_the_runs(tmp_path: Path) -> None:
    runs, elsewhere = tmp_path / "runs", tmp_path / "elsewhere"
    rtcbench.run("rfc8867-5.1", "gcc", 1, elsewhere, ["duration=3s"], figure=False)
    rtcbench.run("rfc8867-5.1", "fixed", 1, runs, ["duration=3s"], figure=False)
    (runs / "planted").symlink_to(elsewhere, target_is_directory=True)
    out = tmp_path / "records"
    done = subprocess.run([*RTCBENCH, "export", str(runs), "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "a link, not followed" in done.stderr
    assert not (out / "planted").exists()
    exported = set(pl.read_parquet(out / "steps.parquet")["run"])
    assert len(exported) == 4 and all(r.startswith("rfc8867-5.1@") and "/fixed/" in r for r in exported)
