"""examples/train_onnx_policy.py end to end at toy size (seconds): GoogCC rollouts, behaviour
cloning, export to ONNX, the RL fine-tune in the gym, and the policies run back through `--cc
onnx:`. The full run and what it gives are in docs/learned.md."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from tests.modules import load

import rtcbench
from rtcbench import _core

pytest.importorskip("onnx")
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "train_onnx_policy.py"
MODELS = Path(__file__).resolve().parents[1] / "examples" / "models"
SHIPPED = MODELS / "bc-gcc.onnx"
TUNED = MODELS / "bc-es-gcc.onnx"
TOY_SCENARIOS = (("rfc8867-5.1", ("delay=50ms", "mechanism=link-rate", "duration=3s")),)


@pytest.fixture(scope="module")
def example() -> ModuleType:
    return load(EXAMPLE)


def test_the_pipeline_runs_at_toy_size(example: ModuleType, tmp_path: Path) -> None:
    jobs = [example.Job("rfc8867-5.1", ("delay=50ms", "mechanism=link-rate", "duration=12s"), 1)]
    x, y, _ = example.collect(jobs)
    assert x.shape[1] == 150 and len(x) == len(y) > 150
    weights, losses = example.train(x, y, epochs=8, seed=0)
    assert losses[-1] < losses[0] and np.isfinite(losses).all()
    model = example.onnx_policy.save(example.onnx_policy.mlp_policy(weights), tmp_path / "toy.onnx")
    # The exported graph computes what the numpy network computes.
    policy = _core.Policy(model.read_bytes(), "toy")
    z = np.log1p(np.maximum(x[:20], 0) * weights.obs_scale)
    want = np.exp(np.maximum(z @ weights.w1 + weights.b1, 0) @ weights.w2 + weights.b2)[:, 0]
    got, spread = policy.run(x[:20])
    np.testing.assert_allclose(got, want, rtol=1e-4)
    assert (spread == 0).all()
    run = rtcbench.run("rfc8867-5.1", f"onnx:{model}", 1, tmp_path / "out", ["duration=5s"], figure=False)[0]
    assert run.summary["flows"][0]["packets_received"] > 0


def _toy_weights(example: ModuleType) -> Any:
    jobs = [example.Job("rfc8867-5.1", ("delay=50ms", "mechanism=link-rate", "duration=6s"), 1)]
    x, y, _ = example.collect(jobs)
    return example.train(x, y, epochs=3, seed=0)[0]


def test_the_fine_tune_moves_only_the_output_layer_and_exports(example: ModuleType, tmp_path: Path) -> None:
    weights = _toy_weights(example)
    # A candidate's score is the mean reward of its episode in the challenge's gym.
    episode = example.Episode(*TOY_SCENARIOS[0], 7)
    assert example.returns((weights, (episode,))) == [example.episode_return(weights, episode)]
    tuned, history = example.fine_tune(weights, TOY_SCENARIOS, iterations=2, pairs=2)
    assert len(history) == 2 and np.isfinite(history).all()
    np.testing.assert_array_equal(tuned.w1, weights.w1)
    np.testing.assert_array_equal(tuned.b1, weights.b1)
    assert not np.array_equal(tuned.w2, weights.w2) and tuned.w2.shape == weights.w2.shape
    model = example.onnx_policy.save(example.onnx_policy.mlp_policy(tuned), tmp_path / "tuned.onnx")
    obs = np.random.default_rng(1).uniform(0, 2000, (5, 150)).astype(np.float32)
    got, _ = _core.Policy(model.read_bytes(), "tuned").run(obs)
    np.testing.assert_allclose(got, [example.estimate(tuned, o) for o in obs], rtol=1e-4)


@pytest.mark.parametrize("shipped", [SHIPPED, TUNED], ids=["cloned", "fine-tuned"])
def test_the_shipped_policies_are_small_and_run(shipped: Path, tmp_path: Path) -> None:
    assert shipped.stat().st_size < 1 << 20
    policy = _core.Policy(shipped.read_bytes(), shipped.stem)
    assert policy.hidden_size == 0
    run = rtcbench.run("rfc8867-5.1", f"onnx:{shipped}", 1, tmp_path, ["duration=10s"], figure=False)[0]
    assert run.summary["controller"] == f"onnx:{shipped.stem}"


def test_rollouts_on_ray_are_the_serial_ones(example: ModuleType) -> None:
    """The same jobs as Ray tasks on a local one-CPU cluster give the same steps, and the
    fine-tune's episodes the same returns and weights, bit for bit: the runs are a pure function
    of their seeds wherever they run."""
    import ray

    jobs = [example.Job("rfc8867-5.1", ("delay=50ms", "mechanism=link-rate", "duration=6s"), 1)]
    x, y, _ = example.collect(jobs)
    weights = example.train(x, y, epochs=3, seed=0)[0]
    tuned, history = example.fine_tune(weights, TOY_SCENARIOS, iterations=1, pairs=2)
    try:
        xr, yr, _ = example.collect(jobs, "local", workers=1)
        tuned_r, history_r = example.fine_tune(
            weights, TOY_SCENARIOS, iterations=1, pairs=2, ray_address="local"
        )
    finally:
        ray.shutdown()
    np.testing.assert_array_equal(x, xr)
    np.testing.assert_array_equal(y, yr)
    assert history == history_r
    np.testing.assert_array_equal(tuned.w2, tuned_r.w2)
