"""Learned policies in ONNX as controllers (`--cc onnx:MODEL`, docs/controllers/onnx.md): a model
with the challenge's exact interface and a 128-unit LSTM, built here with the `onnx` package, runs
in tract as numpy computes it, carries its state between steps, runs at each call's receiver in the
simulator with its estimates reaching the sender by REMB, gives offline on the exported observations
exactly the estimates it gave inside the run, keys its runs by the model's content, and every bad
model ends in one line with nothing left half-made."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from tests.realtime import assert_valid
from tests.test_gstreamer import SCENARIO as GST_SCENARIO
from tests.test_gstreamer import needs_gstreamer

import rtcbench
from rtcbench import _core, evaluate, learned, onnx_policy, testbed
from rtcbench.identity import EMULATE, GSTREAMER
from rtcbench.results import InputError
from rtcbench.runner import RunResult

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

RTCBENCH = [sys.executable, "-m", "rtcbench.cli"]
HIDDEN = 128
MISSING = testbed.missing()
needs_root = pytest.mark.skipif(MISSING is not None, reason=f"builds network namespaces: {MISSING}")


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-x)))


def _reference_step(
    w: onnx_policy.LstmWeights, obs: np.ndarray, h: np.ndarray, c: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One step of `onnx_policy.lstm_policy`'s graph, from the ONNX LSTM operator's equations
    (gates i, o, f, c; sigmoid, tanh, tanh), in float64."""
    x = obs.astype(np.float64) * w.obs_scale
    gates = (
        x @ w.w.T.astype(np.float64) + h @ w.r.T.astype(np.float64) + w.b[: 4 * HIDDEN] + w.b[4 * HIDDEN :]
    )
    i, o, f, g = np.split(gates, 4)
    c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    h = _sigmoid(o) * np.tanh(c)
    head = h @ w.head_w + w.head_b
    out = np.log1p(np.exp(head)) * np.array([w.out_scale, 1.0])
    return out, h, c


def _weights() -> onnx_policy.LstmWeights:
    w = onnx_policy.LstmWeights.random(HIDDEN, seed=3)
    # Observations are in bit/s, packets, ms: scaled so that every gate sees numbers near 1.
    w.obs_scale = np.full(150, 1e-3, dtype=np.float32)
    w.head_b = np.array([0.5, 0.0], dtype=np.float32)
    return w


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("onnx") / "lstm128.onnx"
    onnx_policy.save(onnx_policy.lstm_policy(_weights()), path)
    return path


def _observations(n: int, seed: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(0, 2000, (n, 150)).astype(np.float32)


def test_a_128_unit_lstm_with_the_challenges_names_runs_as_numpy_computes_it(model_path: Path) -> None:
    """The exact input and output names, H read from the model (128), and the state carried
    from step to step: the same observation twice gives two different estimates, each as the
    LSTM's equations give them from the state the previous step left."""
    policy = _core.Policy(model_path.read_bytes(), "onnx:lstm128")
    assert (policy.hidden_size, policy.has_cell_state) == (HIDDEN, True)
    w = _weights()
    h, c = np.zeros(HIDDEN), np.zeros(HIDDEN)
    obs = _observations(4)
    obs[1] = obs[0]
    got = []
    for row in obs:
        estimate, spread = policy.step(row)
        want, h, c = _reference_step(w, row, h, c)
        assert estimate == pytest.approx(want[0], rel=1e-4)
        assert spread == pytest.approx(want[1], rel=1e-4, abs=1e-6)
        # The state the model returned is the one fed back.
        state_h, state_c = policy.state()
        np.testing.assert_allclose(state_h, h, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(state_c, c, rtol=1e-4, atol=1e-6)
        got.append(estimate)
    assert got[1] != pytest.approx(got[0], rel=1e-3), "the same observation from another state"
    # `run` starts from a zero state, as a new call does.
    estimates, spreads = policy.run(obs)
    np.testing.assert_allclose(estimates, got, rtol=1e-6)
    assert np.isfinite(spreads).all()


@pytest.fixture(scope="module")
def onnx_run(model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    out = tmp_path_factory.mktemp("onnx-run")
    return rtcbench.run("rfc8867-5.1", f"onnx:{model_path}", 1, out, ["duration=30s"], figure=False)[0]


def test_the_policy_decides_at_the_receiver_and_the_sender_follows(onnx_run: RunResult) -> None:
    """Every 60 ms on the grid, at the receiver; the sender's target is the latest REMB within the
    call's limits, one delivery later."""
    ctl = onnx_run.tables.controller.filter(pl.col("call") == 0).sort("t_us")
    assert onnx_run.summary["controller"] == "onnx:lstm128"
    decided = ctl["rx_decided_at_ms"].drop_nulls().unique().sort().to_numpy()
    assert len(decided) > 0.9 * (30_000 / 60)
    np.testing.assert_array_equal(decided % 60, 0)
    follows = ctl.filter(pl.col("remb_bps").is_not_null())
    lo, hi = follows["target_bps"].min(), follows["target_bps"].max()
    assert lo is not None and hi is not None
    clamped = follows["remb_bps"].clip(150_000, 1_500_000)
    assert (follows["target_bps"] - clamped).abs().max() <= 0.001 * 1_500_000


def test_offline_estimates_on_the_exported_observations_are_the_runs(
    onnx_run: RunResult, model_path: Path
) -> None:
    """The observations `rtcbench.learned` computes from the run's tables are the receiver's: the
    policy run offline on them gives, step by step, the estimate it gave inside the simulation."""
    steps, obs = learned.observations(onnx_run.tables, 0)
    policy = _core.Policy(model_path.read_bytes(), "offline")
    estimates, _ = policy.run(obs)
    ctl = onnx_run.tables.controller.filter(pl.col("call") == 0)
    inside = (
        ctl.select(
            at_us=(pl.col("rx_decided_at_ms") * 1000).round().cast(pl.Int64),
            estimate=pl.col("rx_policy_estimate_bps"),
        )
        .drop_nulls()
        .unique("at_us")
        .sort("at_us")
    )
    index = np.searchsorted(steps, inside["at_us"].to_numpy())
    assert (steps[index] == inside["at_us"].to_numpy()).all()
    assert len(index) > 0.9 * len(steps)
    np.testing.assert_allclose(inside["estimate"].to_numpy(), estimates[index], rtol=0, atol=1.0)


def test_runs_are_keyed_by_the_models_content(model_path: Path, tmp_path: Path) -> None:
    """Two models of one name are two controllers; the same bytes are the same one."""
    other = tmp_path / "lstm128.onnx"
    w = _weights()
    w.head_b = np.array([1.5, 0.0], dtype=np.float32)
    onnx_policy.save(onnx_policy.lstm_policy(w), other)
    a = learned.load_onnx(f"onnx:{model_path}")
    b = learned.load_onnx(f"onnx:{other}")
    assert a.name == b.name == "onnx:lstm128"
    assert a.sha256 != b.sha256
    variant = rtcbench.scenarios.resolve("rfc8867-5.1")[0]
    folder = rtcbench.runner.run_folder
    assert folder(tmp_path, variant, a, 1) != folder(tmp_path, variant, b, 1)
    assert folder(tmp_path, variant, a, 1) == folder(
        tmp_path, variant, learned.load_onnx(f"onnx:{model_path}"), 1
    )


def _feed_forward(tmp: Path, *, bias: float = 1e6, inputs: tuple[str, ...] = ("obs",), obs_len: int = 150,
                  output: str = "output", nan: bool = False) -> Path:  # fmt: skip
    """A one-layer policy, output = obs · W + b, with names and shapes to break."""
    weight = np.zeros((obs_len, 2), dtype=np.float32)
    if nan:
        weight[0, 0] = np.nan
    nodes = [
        helper.make_node("Reshape", [inputs[0], "flat"], ["x"]),
        helper.make_node("MatMul", ["x", "W"], ["y"]),
        helper.make_node("Add", ["y", "b"], ["z"]),
        helper.make_node("Reshape", ["z", "shape"], [output]),
    ]
    graph = helper.make_graph(
        nodes,
        "ff",
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 1, obs_len]) for name in inputs],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, [1, 1, 2])],
        [
            numpy_helper.from_array(weight, "W"),
            numpy_helper.from_array(np.array([bias, 0.0], dtype=np.float32), "b"),
            numpy_helper.from_array(np.array([1, obs_len], dtype=np.int64), "flat"),
            numpy_helper.from_array(np.array([1, 1, 2], dtype=np.int64), "shape"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", onnx_policy.OPSET)])
    path = tmp / f"ff-{abs(hash((bias, inputs, obs_len, output, nan)))}.onnx"
    onnx_policy.save(model, path)
    return path


def test_a_feed_forward_policy_runs_and_holds_its_rate(tmp_path: Path) -> None:
    """A model without recurrent state is a policy too; a constant estimate of 1 Mbit/s is the
    sender's target once the first REMB arrives."""
    path = _feed_forward(tmp_path, bias=1e6)
    r = rtcbench.run("rfc8867-5.1", f"onnx:{path}", 1, tmp_path / "out", ["duration=10s"], figure=False)[0]
    ctl = r.tables.controller.filter((pl.col("call") == 0) & (pl.col("t_us") > 1_000_000))
    assert set(ctl["target_bps"].unique().to_list()) == {1_000_000}


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("not-onnx", "not an ONNX model"),
        ("wrong-input", 'input "observation" is not one of'),
        ("wrong-output", 'no output "output"'),
        ("wrong-shape", "cannot run it"),
        ("huge", "at most"),
        ("missing", "cannot read the model"),
    ],
)
def test_a_bad_model_is_refused_in_one_line_before_anything_runs(
    tmp_path: Path, case: str, message: str
) -> None:
    if case == "not-onnx":
        path = tmp_path / "model.onnx"
        path.write_bytes(b"\x08\x07" + b"not a model" * 10)
    elif case == "wrong-input":
        path = _feed_forward(tmp_path, inputs=("observation",))
    elif case == "wrong-output":
        path = _feed_forward(tmp_path, output="estimate")
    elif case == "wrong-shape":
        path = _feed_forward(tmp_path, obs_len=100)
    elif case == "huge":
        path = tmp_path / "huge.onnx"
        with open(path, "wb") as fh:
            fh.truncate(learned.MAX_MODEL_BYTES + 1)
    else:
        path = tmp_path / "absent.onnx"
    with pytest.raises(InputError, match=message) as e:
        learned.load_onnx(f"onnx:{path}")
    assert "\n" not in str(e.value) and str(path) in str(e.value)
    out = tmp_path / "out"
    cli = subprocess.run(
        [*RTCBENCH, "run", "rfc8867-5.1", "--cc", f"onnx:{path}", "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert cli.returncode != 0
    assert "Traceback" not in cli.stderr and len(cli.stderr.strip().splitlines()) == 1, cli.stderr
    assert not out.exists() or not any(out.rglob("summary.json"))


@pytest.mark.parametrize(("case", "message"), [("nan", "is NaN"), ("negative", "is -1000")])
def test_a_policy_that_fails_mid_run_stops_it_cleanly(tmp_path: Path, case: str, message: str) -> None:
    """NaN or a negative estimate stops the run at that decision: one line naming the policy and
    the instant, and no run folder."""
    path = _feed_forward(tmp_path, nan=True) if case == "nan" else _feed_forward(tmp_path, bias=-1000.0)
    with pytest.raises(_core.ControllerError, match=message) as e:
        rtcbench.run("rfc8867-5.1", f"onnx:{path}", 1, tmp_path / "api", ["duration=10s"], figure=False)
    assert "the decision at 0.060 s failed" in str(e.value)
    out = tmp_path / "out"
    cli = subprocess.run(
        [*RTCBENCH, "run", "rfc8867-5.1", "--cc", f"onnx:{path}", "--out", str(out), "--set", "duration=10s"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert cli.returncode != 0
    assert "Traceback" not in cli.stderr and len(cli.stderr.strip().splitlines()) == 1, cli.stderr
    assert not any(out.rglob("summary.json")) if out.exists() else True


def test_the_summary_names_the_model(onnx_run: RunResult, model_path: Path) -> None:
    import hashlib

    identity = onnx_run.summary["identity"]
    assert identity["controller"]["name"] == "onnx:lstm128"
    assert identity["controller"]["source_sha256"] == hashlib.sha256(model_path.read_bytes()).hexdigest()
    assert json.loads(json.dumps(identity)) == identity


def test_export_then_import_keeps_the_policys_estimates(
    onnx_run: RunResult, model_path: Path, tmp_path: Path
) -> None:
    """A learned run's record holds the policy's own estimate at every step; written and read back,
    scoring it offline is scoring the policy run again on the record's observations."""
    record = learned.call_record(onnx_run.tables, 0)
    back = learned.read_call(learned.write_call(record, tmp_path / "call0.json"))
    np.testing.assert_array_equal(back.observations, record.observations)
    policy = _core.Policy(model_path.read_bytes(), "offline")
    again, _ = policy.run(back.observations)
    known = np.isfinite(back.bandwidth_predictions)
    assert known.mean() > 0.99
    # The trace keeps estimates in whole bit/s.
    np.testing.assert_allclose(back.bandwidth_predictions[known], again[known], rtol=0, atol=0.5)
    assert back.true_capacity is not None
    metrics = learned.offline_metrics(again, back.true_capacity)
    assert (
        metrics == learned.offline_metrics(back.bandwidth_predictions, back.true_capacity)
        or abs(
            metrics["error_rate"]
            - learned.offline_metrics(back.bandwidth_predictions, back.true_capacity)["error_rate"]
        )
        < 1e-6
    )


EMULATED = """
id = "emu-onnx"
duration = "10s"

[[links]]
name = "forward"
from = "A"
to = "B"
delay = "20ms"
capacity = "2Mbps"
queue = { kind = "droptail", size = "200ms" }

[[links]]
name = "backward"
from = "B"
to = "A"
delay = "20ms"

[[calls]]
from = "A"
to = "B"
video = { min = "150kbps", max = "1500kbps", start = "300kbps" }
audio = { rate = "20kbps" }
"""


@needs_root
def test_an_emulated_call_runs_the_policy_in_its_agents(model_path: Path, tmp_path: Path) -> None:
    """`--mode emulate`: the receiver agent runs the model (checked against the SHA-256 the run is
    keyed by), a row per decision reaches the controller table, and the sender's target is the
    latest REMB within the call's limits."""
    scenario = tmp_path / "emu-onnx.toml"
    scenario.write_text(EMULATED)
    r = rtcbench.run(scenario, f"onnx:{model_path}", 1, tmp_path / "out", figure=False, mode=EMULATE)[0]
    assert_valid(r)
    ctl = r.tables.controller.filter(pl.col("call") == 0).sort("t_us")
    decided = ctl[learned.DECIDED_AT].drop_nulls().unique()
    assert len(decided) > 0.9 * (10_000 / 60)
    follows = ctl.filter(pl.col("remb_bps").is_not_null() & (pl.col("t_us") > 1_000_000))
    assert follows.height > 50
    clamped = follows["remb_bps"].clip(170_000, 1_520_000)
    assert (follows["target_bps"] - clamped).abs().max() <= 1_000


@needs_root
def test_evaluate_scores_a_policy_on_the_emulated_stack(model_path: Path, tmp_path: Path) -> None:
    """`rtcbench evaluate --mode emulate`: the policy and the baseline run by rtcbench's agents in
    namespaces, paired on the same scenario and seed, the comparison naming its stack."""
    scenario = tmp_path / "emu-onnx.toml"
    scenario.write_text(EMULATED.replace('duration = "10s"', 'duration = "6s"'))
    result = evaluate.evaluate(
        [str(scenario)], [f"onnx:{model_path}"], baseline="gcc", reps=1, out=tmp_path / "eval", mode=EMULATE
    )
    assert result.suite.runs["mode"].to_list() == [EMULATE, EMULATE]
    assert sorted(result.runs["controller"].to_list()) == ["gcc", "onnx:lstm128"]
    mine = result.comparison.filter(
        (pl.col("controller") == "onnx:lstm128") & (pl.col("metric") == "utilization")
    )
    assert mine["pairs"].to_list() == [1] and mine["mode"].to_list() == [EMULATE]
    assert mine["mean"][0] > 0 and mine["baseline_mean"][0] > 0
    assert (tmp_path / "eval" / "evaluate.parquet").is_file()


@needs_gstreamer
def test_a_gstreamer_call_runs_the_policy_in_its_sender_and_receiver(
    model_path: Path, tmp_path: Path
) -> None:
    """`--mode gstreamer`: the GStreamer agent's receiver runs the model every 60 ms and its
    sender's encoder follows the REMB."""
    scenario = tmp_path / "gst-onnx.toml"
    scenario.write_text(GST_SCENARIO)
    r = rtcbench.run(
        scenario, f"onnx:{model_path}", 1, tmp_path / "out", ["duration=10s"], figure=False, mode=GSTREAMER
    )[0]
    assert_valid(r)
    assert r.summary["identity"]["controller"]["source_sha256"] == onnx_policy_sha(model_path)
    ctl = r.tables.controller.filter(pl.col("call") == 0).sort("t_us")
    decided = ctl[learned.DECIDED_AT].drop_nulls().unique()
    assert len(decided) > 0.9 * (10_000 / 60)
    follows = ctl.filter(pl.col("remb_bps").is_not_null() & (pl.col("t_us") > 1_000_000))
    assert follows.height > 50
    video = next(f for f in r.summary["flows"] if f["kind"] == "video")
    assert video["packets_received"] > 0


def onnx_policy_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_evaluate_data_scores_a_policy_on_records(
    onnx_run: RunResult, model_path: Path, tmp_path: Path
) -> None:
    """`rtcbench evaluate --data`: the policy that made a record agrees with it to the bit/s the
    trace keeps; a constant policy's scores are the community's metrics of that constant against
    the record's true capacity; files that are not records are named and left out."""
    data = tmp_path / "records"
    record = learned.call_record(onnx_run.tables, 0)
    (data / "run").mkdir(parents=True)
    learned.write_call(record, data / "run" / "call0.json")
    (data / "notes.json").write_text('{"observations": 3}')
    table, skipped = learned.evaluate_records(learned.load_onnx(f"onnx:{model_path}"), data)
    assert table["record"].to_list() == ["run/call0.json"]
    assert table["agreement_error_rate"][0] < 1e-5
    assert len(skipped) == 1 and "notes.json: observations" in skipped[0]
    assert record.true_capacity is not None
    want = learned.offline_metrics(record.bandwidth_predictions, record.true_capacity)
    assert table["error_rate"][0] == pytest.approx(want["error_rate"], abs=1e-6)
    assert table["behaviour_error_rate"][0] == pytest.approx(want["error_rate"], abs=1e-9)

    constant = _feed_forward(tmp_path, bias=1e6)
    out = tmp_path / "scores.parquet"
    cli = subprocess.run(
        [*RTCBENCH, "evaluate", "--data", str(data), "--cc", f"onnx:{constant}", "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    assert "skipped:" in cli.stderr and "notes.json" in cli.stderr
    scores = pl.read_parquet(out)
    ones = np.full(len(record.bandwidth_predictions), 1e6)
    assert scores["error_rate"][0] == pytest.approx(
        learned.offline_metrics(ones, record.true_capacity)["error_rate"]
    )
    assert "1 record(s)" in cli.stdout

    empty = tmp_path / "empty"
    empty.mkdir()
    cli = subprocess.run(
        [*RTCBENCH, "evaluate", "--data", str(empty), "--cc", f"onnx:{model_path}"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert cli.returncode == 2 and len(cli.stderr.strip().splitlines()) == 1, cli.stderr
    assert "no per-call record" in cli.stderr
