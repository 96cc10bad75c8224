"""Clones GoogCC into a small learned policy, fine-tunes it by reinforcement learning in the gym,
exports both to ONNX with the MMSys 2024 challenge's interface and runs them back as controllers
(docs/learned.md, "Training a policy in ONNX").

    .venv/bin/python examples/train_onnx_policy.py                     # a few minutes on 2 cores
    .venv/bin/python examples/train_onnx_policy.py --ray local         # rollouts on a local Ray cluster
    .venv/bin/python examples/train_onnx_policy.py --ray auto          # ... on the cluster you are on

1. Rollouts: GoogCC (`gcc`) runs every training scenario (wired RFC 8867 cases, RFC 8869's Wi-Fi
   case, the LTE and Wi-Fi capacity traces) with several seeds; each call becomes the challenge's
   per-call record (`rtcbench.learned.call_record`): the receiver's observation every 60 ms and
   GoogCC's target at that step. Each run is one task: serially here, or on Ray (`--ray`), the
   same code either way.
2. Behaviour cloning: a feed-forward network (150 → 32 → 1 on log-scaled features,
   `rtcbench.onnx_policy.MlpWeights`) learns log(GoogCC's target) from the observation, by Adam
   on the squared error, in numpy.
3. Export: `onnx_policy.mlp_policy` writes it as ONNX (inputs `obs`, output `output`).
4. RL fine-tune: evolution strategies on the network's output layer, each candidate scored by an
   episode of the challenge's task in the gym (`rtcbench.env.ChallengeEnv`: the receiver's
   observation every 60 ms, the estimate sent by REMB, a reward of rate, queuing delay and loss),
   the episodes of one iteration as parallel tasks (`--ray`); exported as in 3.
5. Evaluation: the policies (`--cc onnx:MODEL`) and `gcc` run the held-out scenario (RFC 8867
   §5.1, never seen in training) on fresh seeds; their utilisation and queuing delay are printed
   side by side.

The policy observes what the receiver sees and decides every 60 ms; GoogCC sees per-packet
feedback and acts on it at once, with probing and loss-based control, so the clone lags its
teacher. The point is the pipeline, not a claim (docs/learned.md reports what it gives).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

import rtcbench
from rtcbench import learned, onnx_policy

Array = npt.NDArray[np.float64]

TRAIN: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("rfc8867-5.2", ()),
    ("rfc8867-5.3", ()),
    ("rfc8867-5.6", ()),
    ("rfc8869-2.1", ()),
    ("trace-lte-drive", ()),
    ("trace-wifi-office", ()),
)
"""Training scenarios (every variant of each) and overrides."""
HELD_OUT = ("rfc8867-5.1", ("delay=50ms", "mechanism=link-rate"))
"""The evaluation scenario, never seen in training."""
HIDDEN = 32


@dataclass(frozen=True)
class Job:
    scenario: str
    sets: tuple[str, ...]
    seed: int


def rollout(job: Job) -> list[tuple[np.ndarray, np.ndarray]]:
    """GoogCC on one scenario (every variant) and seed: per call, the observations and GoogCC's
    target at each step (steps where it is not known yet are left out)."""
    out = []
    with tempfile.TemporaryDirectory(prefix="rtcbench-bc-") as tmp:
        for run in rtcbench.run(job.scenario, "gcc", job.seed, tmp, list(job.sets), figure=False):
            for call in sorted({int(c["id"]) for c in run.tables.meta["calls"]}):
                try:
                    record = learned.call_record(run.tables, call)
                except ValueError:
                    continue  # a call without media
                known = np.isfinite(record.bandwidth_predictions) & (record.bandwidth_predictions > 0)
                out.append((record.observations[known], record.bandwidth_predictions[known]))
    return out


T = TypeVar("T")
R = TypeVar("R")


def map_tasks(
    fn: Callable[[T], R], tasks: Sequence[T], ray_address: str | None = None, workers: int | None = None
) -> list[R]:
    """`fn` of every task, in order: here, or with `ray_address` each as a Ray task (``local``
    for a cluster on this machine, of `workers` CPUs or all of them; ``auto`` or an address for
    a running one)."""
    if ray_address is None:
        return [fn(t) for t in tasks]
    import ray
    from ray import cloudpickle

    # The workers may not have this file (a cluster elsewhere, or it was loaded by path): its
    # functions travel by value.
    if fn.__module__ != "__main__":
        cloudpickle.register_pickle_by_value(sys.modules[fn.__module__])  # type: ignore[no-untyped-call]
    if not ray.is_initialized():
        if ray_address == "local":
            ray.init(num_cpus=workers, include_dashboard=False)
        else:
            ray.init(address=ray_address, include_dashboard=False)
    remote = ray.remote(fn)
    return list(ray.get([remote.remote(t) for t in tasks]))


def collect(
    jobs: Sequence[Job], ray_address: str | None = None, workers: int | None = None
) -> tuple[np.ndarray, np.ndarray, float]:
    """Every job's rollouts, stacked: (observations, GoogCC's targets, wall seconds), each job
    a task of `map_tasks`."""
    started = time.perf_counter()
    parts = map_tasks(rollout, jobs, ray_address, workers)
    pairs = [p for part in parts for p in part]
    x = np.concatenate([o for o, _ in pairs]).astype(np.float32)
    y = np.concatenate([t for _, t in pairs]).astype(np.float64)
    return x, y, time.perf_counter() - started


def feature_scale(x: np.ndarray) -> np.ndarray:
    """Per feature 1 / (its 99th percentile + 1): log(1 + x · scale) then spans about [0, 0.7]."""
    return np.asarray(1.0 / (np.percentile(np.maximum(x, 0), 99, axis=0) + 1.0), dtype=np.float32)


def train(
    x: np.ndarray,
    y: np.ndarray,
    *,
    hidden: int = HIDDEN,
    epochs: int = 30,
    batch: int = 256,
    lr: float = 3e-3,
    seed: int = 0,
    report: Callable[[int, float], None] | None = None,
) -> tuple[onnx_policy.MlpWeights, list[float]]:
    """Behaviour cloning: the `MlpWeights` that fit log(y) from the observations `x` by Adam on
    the mean squared error; returns them and the loss after each epoch (on all samples)."""
    rng = np.random.default_rng(seed)
    scale = feature_scale(x)
    z = np.log1p(np.maximum(x, 0) * scale).astype(np.float64)
    t = np.log(y)
    params = {
        "w1": rng.normal(0, np.sqrt(2.0 / z.shape[1]), (z.shape[1], hidden)),
        "b1": np.zeros(hidden),
        "w2": rng.normal(0, np.sqrt(1.0 / hidden), (hidden, 1)),
        "b2": np.array([t.mean()]),
    }
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v = {k: np.zeros_like(p) for k, p in params.items()}
    beta1, beta2, eps, step = 0.9, 0.999, 1e-8, 0

    def forward(zb: Array) -> tuple[Array, Array]:
        pre = zb @ params["w1"] + params["b1"]
        h = np.maximum(pre, 0)
        return h, (h @ params["w2"] + params["b2"])[:, 0]

    losses = []
    for epoch in range(epochs):
        order = rng.permutation(len(z))
        for start in range(0, len(z), batch):
            idx = order[start : start + batch]
            zb, tb = z[idx], t[idx]
            h, out = forward(zb)
            g_out = 2 * (out - tb)[:, None] / len(idx)
            grads = {
                "w2": h.T @ g_out,
                "b2": g_out.sum(axis=0),
            }
            g_h = (g_out @ params["w2"].T) * (h > 0)
            grads["w1"] = zb.T @ g_h
            grads["b1"] = g_h.sum(axis=0)
            step += 1
            for k in params:
                m[k] = beta1 * m[k] + (1 - beta1) * grads[k]
                v[k] = beta2 * v[k] + (1 - beta2) * grads[k] ** 2
                m_hat = m[k] / (1 - beta1**step)
                v_hat = v[k] / (1 - beta2**step)
                params[k] -= lr * m_hat / (np.sqrt(v_hat) + eps)
        loss = float(np.mean((forward(z)[1] - t) ** 2))
        losses.append(loss)
        if report is not None:
            report(epoch, loss)
    weights = onnx_policy.MlpWeights(
        w1=params["w1"], b1=params["b1"], w2=params["w2"], b2=params["b2"], obs_scale=scale
    )
    return weights, losses


@dataclass(frozen=True)
class Episode:
    """One episode of the fine-tune: a `ChallengeEnv` of `scenario` (one variant with `sets`)
    reset with `seed`."""

    scenario: str
    sets: tuple[str, ...]
    seed: int


def estimate(weights: onnx_policy.MlpWeights, obs: np.ndarray) -> float:
    """The policy's estimate (bit/s) for one observation, as its exported graph computes it."""
    z = np.log1p(np.maximum(obs, 0) * weights.obs_scale)
    return float(np.exp(np.maximum(z @ weights.w1 + weights.b1, 0) @ weights.w2 + weights.b2)[0])


def episode_return(weights: onnx_policy.MlpWeights, episode: Episode) -> float:
    """The mean reward per decision of the policy with these weights over one episode of the
    challenge's task (`rtcbench.env.ChallengeEnv`, its default reward)."""
    from rtcbench.env import ChallengeEnv

    env = ChallengeEnv(episode.scenario, sets=episode.sets, keep_trace=False)
    obs, _ = env.reset(seed=episode.seed)
    total, steps, done = 0.0, 0, False
    while not done:
        obs, reward, done, _, _ = env.step(np.array([estimate(weights, obs)], dtype=np.float32))
        total += reward
        steps += 1
    return total / steps


def returns(task: tuple[onnx_policy.MlpWeights, tuple[Episode, ...]]) -> list[float]:
    """`episode_return` of each episode: one candidate's scores (one task)."""
    weights, episodes = task
    return [episode_return(weights, e) for e in episodes]


def with_head(weights: onnx_policy.MlpWeights, head: np.ndarray) -> onnx_policy.MlpWeights:
    """`weights` with the output layer (w2, then b2) set from the flat vector `head`."""
    k = weights.hidden
    return replace(weights, w2=head[:k].reshape(k, 1), b2=head[k:])


def centered_ranks(x: np.ndarray) -> np.ndarray:
    """The ranks of `x` mapped onto [-0.5, 0.5] (ties broken by order)."""
    ranks = np.empty(len(x))
    ranks[np.argsort(x, kind="stable")] = np.arange(len(x))
    return ranks / max(len(x) - 1, 1) - 0.5


def fine_tune(
    weights: onnx_policy.MlpWeights,
    scenarios: Sequence[tuple[str, tuple[str, ...]]],
    *,
    iterations: int,
    pairs: int = 10,
    sigma: float = 0.01,
    lr: float = 0.003,
    seed: int = 0,
    ray_address: str | None = None,
    workers: int | None = None,
    report: Callable[[int, float, float], None] | None = None,
) -> tuple[onnx_policy.MlpWeights, list[float]]:
    """The RL fine-tune: evolution strategies (Salimans et al. 2017) on the output layer, with
    antithetic pairs and centered ranks, stepped by Adam. Iteration i scores the current policy
    and `pairs` pairs of perturbations of its head (2 · pairs + 1 tasks of `map_tasks`) on one
    episode of each scenario, all with seed 1000 + i (fresh each iteration, common to the
    candidates). A perturbation's weight is its centered rank per scenario, averaged over the
    scenarios, so that no scenario's scale (a queue that TCP or Wi-Fi keeps full costs every
    candidate a lot) drowns the others. Returns the weights and the current policy's mean return
    at each iteration."""
    rng = np.random.default_rng(seed)
    head = np.concatenate([weights.w2[:, 0], weights.b2]).astype(np.float64)
    m, v = np.zeros_like(head), np.zeros_like(head)
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    history = []
    for i in range(iterations):
        episodes = tuple(Episode(name, sets, 1000 + i) for name, sets in scenarios)
        noise = rng.standard_normal((pairs, head.size))
        candidates = [head] + [head + sigma * n for n in noise] + [head - sigma * n for n in noise]
        tasks = [(with_head(weights, c), episodes) for c in candidates]
        scores = np.array(map_tasks(returns, tasks, ray_address, workers))
        history.append(float(scores[0].mean()))
        ranked = np.mean([centered_ranks(column) for column in scores[1:].T], axis=0)
        grad = ((ranked[:pairs] - ranked[pairs:])[:, None] * noise).sum(axis=0) / (2 * pairs * sigma)
        m = beta1 * m + (1 - beta1) * grad
        v = beta2 * v + (1 - beta2) * grad**2
        head = head + lr * (m / (1 - beta1 ** (i + 1))) / (np.sqrt(v / (1 - beta2 ** (i + 1))) + eps)
        if report is not None:
            report(i, history[-1], float(scores[1:].mean(axis=1).max()))
    return with_head(weights, head), history


def evaluate(
    models: dict[str, Path], seeds: Sequence[int], scenario: tuple[str, tuple[str, ...]] = HELD_OUT
) -> dict[str, Any]:
    """Each policy (by label) and `gcc` on `scenario` with each seed: per controller the mean over
    seeds of the video's utilisation, queuing delay p95 (ms) and loss ratio."""
    out: dict[str, Any] = {}
    name, sets = scenario
    runs = {label: f"onnx:{path}" for label, path in models.items()} | {"gcc": "gcc"}
    for label, cc in runs.items():
        rows = []
        with tempfile.TemporaryDirectory(prefix="rtcbench-bc-eval-") as tmp:
            for seed in seeds:
                run = rtcbench.run(name, cc, seed, tmp, list(sets), figure=False)[0]
                video = next(f for f in run.summary["flows"] if f["kind"] == "video")
                rows.append((video["utilization"], video["qdelay_p95_ms"], video["loss_ratio"]))
        out[label] = {
            "utilization": statistics.fmean(r[0] for r in rows),
            "qdelay_p95_ms": statistics.fmean(r[1] for r in rows),
            "loss_ratio": statistics.fmean(r[2] for r in rows),
        }
    return out


FINE_TUNE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("rfc8867-5.2", ("delay=50ms", "mechanism=link-rate", "duration=60s")),
    ("trace-lte-drive", ("duration=60s",)),
    ("rfc8869-2.1", ("speed=3.0", "wired=10ms", "duration=60s")),
    ("trace-wifi-office", ("duration=60s",)),
)
"""The fine-tune's scenarios (one variant each, the first minute): every candidate runs each."""


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("examples/models/bc-gcc.onnx"))
    parser.add_argument("--tuned-out", type=Path, default=Path("examples/models/bc-es-gcc.onnx"))
    parser.add_argument("--iterations", type=int, default=20, help="fine-tune iterations (0: none)")
    parser.add_argument("--pairs", type=int, default=10, help="antithetic pairs per fine-tune iteration")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per training scenario")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--ray", default=None, help="run rollouts on Ray: local, auto or an address")
    parser.add_argument("--set", action="append", default=[], help="override for every training scenario")
    parser.add_argument("--eval-seeds", type=int, default=5)
    parser.add_argument("--train-seed", type=int, default=0, help="the network's initial weights and batches")
    args = parser.parse_args(argv)

    jobs = [Job(s, (*sets, *args.set), seed) for s, sets in TRAIN for seed in range(1, args.seeds + 1)]
    x, y, wall = collect(jobs, args.ray)
    print(f"rollouts: {len(jobs)} runs of GoogCC, {len(x)} steps, {wall:.1f} s")

    def report(epoch: int, loss: float) -> None:
        print(f"epoch {epoch:3d}  squared error of log(rate) {loss:.4f}")

    weights, _ = train(x, y, epochs=args.epochs, seed=args.train_seed, report=report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    onnx_policy.save(onnx_policy.mlp_policy(weights), args.out)
    print(f"policy: {args.out} ({args.out.stat().st_size} bytes)")

    models = {"bc": args.out}
    if args.iterations > 0:
        scenarios = [(name, (*sets, *args.set)) for name, sets in FINE_TUNE]
        started = time.perf_counter()

        def report_es(i: int, current: float, best: float) -> None:
            print(f"iteration {i:3d}  return {current:.4f}  best perturbation {best:.4f}")

        tuned, _ = fine_tune(
            weights,
            scenarios,
            iterations=args.iterations,
            pairs=args.pairs,
            seed=args.train_seed,
            ray_address=args.ray,
            report=report_es,
        )
        episodes_run = args.iterations * (2 * args.pairs + 1) * len(scenarios)
        print(f"fine-tune: {episodes_run} episodes, {time.perf_counter() - started:.1f} s")
        args.tuned_out.parent.mkdir(parents=True, exist_ok=True)
        onnx_policy.save(onnx_policy.mlp_policy(tuned), args.tuned_out)
        print(f"policy: {args.tuned_out} ({args.tuned_out.stat().st_size} bytes)")
        models["bc+es"] = args.tuned_out

    result = evaluate(models, range(101, 101 + args.eval_seeds))
    name, sets = HELD_OUT
    print(f"held out: {name} [{', '.join(sets)}], seeds 101-{100 + args.eval_seeds}, mean over seeds")
    print(f"{'':<8} {'utilisation':>12} {'qdelay p95 ms':>14} {'loss':>7}")
    for label, m in result.items():
        print(f"{label:<8} {m['utilization']:>12.3f} {m['qdelay_p95_ms']:>14.1f} {m['loss_ratio']:>7.4f}")


if __name__ == "__main__":
    main()
