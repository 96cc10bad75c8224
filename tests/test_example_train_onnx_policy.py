"""examples/train_onnx_policy.py end to end at toy size (seconds): GoogCC rollouts, behaviour
cloning, export to ONNX, and the policy run back through `--cc onnx:`. The full run and what it
gives are in docs/learned.md."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from tests.modules import load

import rtcbench
from rtcbench import _core

pytest.importorskip("onnx")
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "train_onnx_policy.py"
SHIPPED = Path(__file__).resolve().parents[1] / "examples" / "models" / "bc-gcc.onnx"


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


def test_the_shipped_policy_is_small_and_runs(tmp_path: Path) -> None:
    assert SHIPPED.stat().st_size < 1 << 20
    policy = _core.Policy(SHIPPED.read_bytes(), "bc-gcc")
    assert policy.hidden_size == 0
    run = rtcbench.run("rfc8867-5.1", f"onnx:{SHIPPED}", 1, tmp_path, ["duration=10s"], figure=False)[0]
    assert run.summary["controller"] == "onnx:bc-gcc"


def test_rollouts_on_ray_are_the_serial_ones(example: ModuleType) -> None:
    """The same jobs as Ray tasks on a local one-CPU cluster give the same steps, bit for bit: the
    runs are a pure function of their seeds wherever they run."""
    import ray

    jobs = [example.Job("rfc8867-5.1", ("delay=50ms", "mechanism=link-rate", "duration=6s"), 1)]
    x, y, _ = example.collect(jobs)
    try:
        xr, yr, _ = example.collect(jobs, "local", workers=1)
    finally:
        ray.shutdown()
    np.testing.assert_array_equal(x, xr)
    np.testing.assert_array_equal(y, yr)
