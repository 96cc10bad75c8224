"""The training example's rollout throughput (examples/train_onnx_policy.py): GoogCC rollouts of
its training scenarios as Ray tasks on a local cluster of 1 and of 2 CPUs, in steps (one 60 ms
observation of one call) per wall second and call-seconds per wall second, beside the same
rollouts run serially.

Run by `make bench`. Timing lives here, never in pass/fail tests.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import ray

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "train_onnx_policy.py"
SEEDS = 2


def main() -> None:
    spec = importlib.util.spec_from_file_location("train_onnx_policy", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    sys.modules["train_onnx_policy"] = example
    spec.loader.exec_module(example)
    jobs = [example.Job(s, sets, seed) for s, sets in example.TRAIN for seed in range(1, SEEDS + 1)]
    print(f"{len(jobs)} GoogCC rollouts of the example's training scenarios")
    print(f"{'where':<24} {'wall s':>8} {'steps per wall s':>17} {'call-s per wall s':>17}")
    for label, address, workers in (
        ("serial", None, None),
        ("Ray, 1 worker", "local", 1),
        ("Ray, 2 workers", "local", 2),
    ):
        if ray.is_initialized():
            ray.shutdown()
        x, _, wall = example.collect(jobs, address, workers)
        steps = len(x)
        print(f"{label:<24} {wall:>8.1f} {steps / wall:>17,.0f} {steps * 0.06 / wall:>16,.0f}x")
    ray.shutdown()


if __name__ == "__main__":
    main()
