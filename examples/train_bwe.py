"""Trains a small bandwidth-estimation policy in rtcbench's learning environment and prints its
learning curve (docs/env.md, "Training a policy").

    .venv/bin/python examples/train_bwe.py                    # about 3 minutes on 2 cores
    .venv/bin/python examples/train_bwe.py --iterations 3     # a quick look

The policy is linear and incremental: every 60 ms it moves its action (the log-scaled target rate,
see `BandwidthEstimationEnv`) by at most ±STEP, by tanh(θ · [observation, 1]). That is the shape of
the delay-based controllers (AIMD on a congestion signal), with the signal learnt; θ has 41
numbers. It is trained with the cross-entropy method (Rubinstein 1999; Szita and Lőrincz 2006 for
policies): sample a population of θ from a Gaussian, run one episode with each, refit the Gaussian
to the best quarter. All of it is numpy: no deep-learning framework is needed.

The population runs as one `gymnasium.vector.SyncVectorEnv`, so the policy is evaluated for every
member at once, and every member of an iteration sees the same seed (the same frame sizes and
jitter), so they are compared on equal terms; each iteration uses a new seed.
"""

from __future__ import annotations

import argparse
import functools
import time
from collections.abc import Sequence
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import numpy.typing as npt

from rtcbench.env import FEATURES, BandwidthEstimationEnv

SCENARIO = "rfc8867-5.1"
"""Capacity 1.0 → 2.5 → 0.6 → 1.0 Mbit/s over 100 s, 300 ms drop-tail queue, up to 30 ms jitter."""
SETS = ("delay=50ms", "mechanism=link-rate")
STEP = 0.05
"""The largest change of the action per 60 ms step: the whole range of rates (170 kbit/s to
1.52 Mbit/s) in 40 steps, 2.4 s; a rate at most 1.12× (or 0.89×) the previous one."""

Array = npt.NDArray[np.float64]


@dataclass
class Policy:
    """A batch of linear incremental policies, one row of `theta` per environment."""

    theta: Array
    """(policies, features + 1)."""
    start: float
    """The action before the first step: the call's start rate."""

    def run(self, envs: gym.vector.SyncVectorEnv, seed: int) -> Array:
        """One episode per policy, all with seed `seed`; returns each policy's return."""
        n = self.theta.shape[0]
        obs, _ = envs.reset(seed=[seed] * n)
        action = np.full(n, self.start)
        returns = np.zeros(n)
        while True:
            x = np.concatenate([obs, np.ones((n, 1))], axis=1)
            action = np.clip(action + STEP * np.tanh(np.sum(self.theta * x, axis=1)), -1.0, 1.0)
            obs, rewards, terminated, truncated, _ = envs.step(action[:, None].astype(np.float32))
            returns += rewards
            if terminated.all() or truncated.all():
                return returns


def make_envs(n: int, sets: Sequence[str]) -> gym.vector.SyncVectorEnv:
    make = functools.partial(BandwidthEstimationEnv, SCENARIO, sets=list(sets))
    return gym.vector.SyncVectorEnv([make] * n)


@dataclass(frozen=True)
class Iteration:
    iteration: int
    population_mean: float
    elite_mean: float
    mean_policy: float
    """The return of the distribution's mean θ after the update, on the iteration's seed."""


def train(
    iterations: int, population: int, seed: int, sets: Sequence[str] = SETS, quiet: bool = False
) -> tuple[Array, list[Iteration]]:
    """The cross-entropy method; returns the final mean θ and the learning curve."""
    rng = np.random.default_rng(seed)
    probe = BandwidthEstimationEnv(SCENARIO, sets=list(sets))
    start = probe.rate_to_action(probe.start_rate_bps)
    dim = probe.history * len(FEATURES) + 1
    mean, std = np.zeros(dim), np.full(dim, 0.5)
    elites = max(2, population // 4)
    envs = make_envs(population, sets)
    one = make_envs(1, sets)
    curve = []
    for k in range(iterations):
        episode_seed = 1000 + k
        thetas = mean + std * rng.standard_normal((population, dim))
        returns = Policy(thetas, start).run(envs, episode_seed)
        best = thetas[np.argsort(returns)[-elites:]]
        # Extra noise that decays keeps the search from collapsing early (Szita and Lőrincz).
        mean, std = best.mean(axis=0), best.std(axis=0) + max(0.0, 0.2 * (1 - k / max(1, iterations - 1)))
        now = Policy(mean[None, :], start).run(one, episode_seed)[0]
        elite_mean = float(np.sort(returns)[-elites:].mean())
        curve.append(Iteration(k, float(returns.mean()), elite_mean, float(now)))
        if not quiet:
            c = curve[-1]
            print(
                f"iteration {k:3d}: population mean {c.population_mean:8.1f}  "
                f"elite mean {c.elite_mean:8.1f}  mean policy {c.mean_policy:8.1f}",
                flush=True,
            )
    envs.close()
    one.close()
    return mean, curve


def random_policy_return(seed: int, sets: Sequence[str] = SETS) -> float:
    """The return of uniformly random actions, for comparison."""
    env = BandwidthEstimationEnv(SCENARIO, sets=list(sets))
    env.action_space.seed(seed)
    env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        _, reward, done, _, _ = env.step(env.action_space.sample())
        total += reward
    return total


def evaluate(
    theta: Array, seeds: Sequence[int], sets: Sequence[str] = SETS
) -> tuple[float, dict[str, float]]:
    """The mean return of a policy over `seeds`, and rtcbench's metrics of the video flow on the
    first seed (utilisation, queuing delay p95, loss), to set beside the built-in controllers'."""
    envs = make_envs(1, sets)
    env = envs.envs[0].unwrapped
    assert isinstance(env, BandwidthEstimationEnv)
    start = env.rate_to_action(env.start_rate_bps)
    returns = [Policy(theta[None, :], start).run(envs, s)[0] for s in seeds]
    # Run the first seed again, stepping the environment directly, for its trace.
    obs, _ = env.reset(seed=seeds[0])
    action, done = start, False
    while not done:
        x = np.append(obs, 1.0)
        action = float(np.clip(action + STEP * np.tanh(theta @ x), -1.0, 1.0))
        obs, _, done, _, _ = env.step(np.array([action], dtype=np.float32))
    video = env.episode_result().summary["flows"][0]
    envs.close()
    return float(np.mean(returns)), {
        "utilization": video["utilization"],
        "qdelay_p95_ms": video["qdelay_p95_ms"],
        "loss_percent": 100 * video["loss_ratio"],
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=40)
    parser.add_argument("--population", type=int, default=24)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    theta, _ = train(args.iterations, args.population, args.seed)
    trained = time.perf_counter() - started
    test_seeds = [1, 2, 3]
    random = float(np.mean([random_policy_return(s) for s in test_seeds]))
    initial, _ = evaluate(np.zeros_like(theta), test_seeds)
    learnt, metrics = evaluate(theta, test_seeds)
    print(f"trained in {trained:.0f} s; mean return over seeds {test_seeds}:")
    print(f"  random actions       {random:8.1f}")
    print(f"  initial policy (θ=0) {initial:8.1f}")
    print(f"  learnt policy        {learnt:8.1f}")
    print(
        f"learnt policy, video flow, seed {test_seeds[0]}: utilisation {metrics['utilization']:.2f}, "
        f"queuing delay p95 {metrics['qdelay_p95_ms']:.0f} ms, loss {metrics['loss_percent']:.2f} %"
    )


if __name__ == "__main__":
    main()
