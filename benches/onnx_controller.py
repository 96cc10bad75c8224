"""What a learned policy costs as a controller (`--cc onnx:MODEL`, docs/controllers/onnx.md):
simulated seconds per wall second of `rfc8867-5.1` (first variant, 100 s) with a 128-unit LSTM
policy at the receiver, beside `fixed` (the same call with no controller work) and `gcc`; and the
time of one decision, from `_core.Policy.step`. The issue's floor is 1000x for the 128-unit LSTM.

Run by `make bench`. Timing lives here, never in pass/fail tests.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import rtcbench
from rtcbench import _core, onnx_policy

REPEATS = 5
HIDDEN = 128


def sim_seconds(variant: rtcbench.Variant, controller: str) -> float:
    """Median wall time of the simulation alone (no metrics or files)."""
    times = [
        rtcbench.run_variant(variant, controller, 1, figure=False).summary["sim_wall_s"]
        for _ in range(REPEATS)
    ]
    return float(statistics.median(times))


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="rtcbench-onnx-bench-") as tmp:
        weights = onnx_policy.LstmWeights.random(HIDDEN, seed=1)
        weights.obs_scale = np.full(150, 1e-3, dtype=np.float32)
        model = onnx_policy.save(onnx_policy.lstm_policy(weights), Path(tmp) / "lstm128.onnx")
        variant = rtcbench.resolve("rfc8867-5.1")[0]
        simulated = rtcbench.run_variant(variant, "fixed", 1, figure=False).summary["simulated_s"]
        print(f"rfc8867-5.1 [{variant.variant}], {simulated:.0f} s simulated, median of {REPEATS}")
        print(f"{'controller':<34} {'sim wall ms':>12} {'sim s per wall s':>17}")
        for label, cc in (
            ("fixed", "fixed"),
            ("gcc", "gcc"),
            (f"onnx: {HIDDEN}-unit LSTM", f"onnx:{model}"),
        ):
            wall = sim_seconds(variant, cc)
            print(f"{label:<34} {wall * 1e3:>12.1f} {simulated / wall:>16,.0f}x")

        policy = _core.Policy(model.read_bytes(), "bench")
        obs = np.random.default_rng(2).uniform(0, 2000, (2000, 150)).astype(np.float32)
        for row in obs[:50]:
            policy.step(row)
        started = time.perf_counter()
        for row in obs:
            policy.step(row)
        per_step = (time.perf_counter() - started) / len(obs)
        print(f"one decision of the {HIDDEN}-unit LSTM (tract, from Python): {per_step * 1e6:.1f} µs")


if __name__ == "__main__":
    main()
