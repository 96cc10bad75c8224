"""How fast the learning environment steps: environment steps per wall second and simulated
seconds per wall second on `rfc8867-5.1` (first variant, 100 s, 60 ms steps, 1 666 steps an
episode), with a constant and a random policy, through `gymnasium.make` (with its checking
wrappers) and four environments in a `SyncVectorEnv`; and the simulation alone, stepped from
Python without the environment, to show where the time goes. Then the challenge's task
(`ChallengeEnv`, decisions at the receiver every 60 ms) with a constant estimate and with the
shipped cloned policy deciding through `_core.Policy`.

The goal (issue 6) is 1000× real time: 16 667 steps of 60 ms per second.

Run by `make bench`. Timing lives here, never in pass/fail tests.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import numpy as np

from rtcbench import _core, learned
from rtcbench.env import ENV_ID, BandwidthEstimationEnv, ChallengeEnv

REPEATS = 5
SCENARIO = "rfc8867-5.1"
SETS = ["delay=50ms", "mechanism=link-rate"]
STEP_MS = 60
CLONED = Path(__file__).resolve().parents[1] / "examples" / "models" / "bc-gcc.onnx"


def episode(env: gym.Env[np.ndarray, np.ndarray], policy: Callable[[], np.ndarray], seed: int) -> int:
    """Steps of one episode."""
    env.reset(seed=seed)
    steps, done = 0, False
    while not done:
        _, _, done, _, _ = env.step(policy())
        steps += 1
    return steps + 1  # the reset's step


def timed(run: Callable[[int], int]) -> tuple[float, int]:
    """Median wall time of an episode and its steps."""
    times, steps = [], 0
    for seed in range(1, REPEATS + 1):
        t0 = time.perf_counter()
        steps = run(seed)
        times.append(time.perf_counter() - t0)
    return float(statistics.median(times)), steps


def simulation_only(seed: int, variant_toml: str) -> int:
    sim = _core.Simulation(variant_toml, "gcc", seed)
    steps = 0
    rate = 500_000.0
    while not sim.done:
        sim.set_target(rate)
        sim.run_until(sim.now_us + STEP_MS * 1000)
        sim.take_interval()
        steps += 1
    return steps


def main() -> None:
    env = BandwidthEstimationEnv(SCENARIO, sets=SETS, step_ms=STEP_MS)
    made = gym.make(ENV_ID, scenario=SCENARIO, sets=SETS, step_ms=STEP_MS)
    constant = np.array([0.2], dtype=np.float32)
    rng = np.random.default_rng(0)
    vector = gym.vector.SyncVectorEnv([lambda: BandwidthEstimationEnv(SCENARIO, sets=SETS)] * 4)

    def vector_episode(seed: int) -> int:
        vector.reset(seed=[seed] * 4)
        steps, actions = 1, np.full((4, 1), 0.2, dtype=np.float32)
        while True:
            _, _, terminated, _, _ = vector.step(actions)
            steps += 1
            if terminated.all():
                return 4 * steps

    challenge = ChallengeEnv(SCENARIO, sets=SETS)
    estimate = np.array([600e3], dtype=np.float32)
    cloned = learned.load_onnx(f"{learned.ONNX}{CLONED}").policy

    def challenge_episode(seed: int) -> int:
        obs, _ = challenge.reset(seed=seed)
        steps, done = 1, False
        while not done:
            value, _ = cloned.step(obs)
            obs, _, done, _, _ = challenge.step(np.array([value], dtype=np.float32))
            steps += 1
        return steps

    rows: list[tuple[str, Callable[[int], int]]] = [
        ("simulation alone (_core.Simulation)", lambda s: simulation_only(s, env.variant.toml)),
        ("env, constant action", lambda s: episode(env, lambda: constant, s)),
        (
            "env, random actions",
            lambda s: episode(env, lambda: rng.uniform(-1, 1, 1).astype(np.float32), s),
        ),
        ("gymnasium.make, constant action", lambda s: episode(made, lambda: constant, s)),
        ("SyncVectorEnv × 4, constant action", vector_episode),
        ("ChallengeEnv, constant estimate", lambda s: episode(challenge, lambda: estimate, s)),
        ("ChallengeEnv, the cloned policy (ONNX)", challenge_episode),
    ]
    simulated = 100.0
    print(f"{SCENARIO} [{env.variant.variant}], {STEP_MS} ms steps, median of {REPEATS} episodes")
    print(f"{'what':<38} {'episode ms':>11} {'steps/s':>9} {'sim s per wall s':>17}")
    for label, run in rows:
        wall, steps = timed(run)
        per_env = 4 if label.startswith("SyncVectorEnv") else 1
        print(f"{label:<38} {wall * 1e3:>11.1f} {steps / wall:>9,.0f} {per_env * simulated / wall:>16,.0f}x")
    vector.close()


if __name__ == "__main__":
    main()
