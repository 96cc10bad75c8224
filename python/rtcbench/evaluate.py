"""`rtcbench evaluate`: any controller, learned or not, scored over named suites against a baseline
controller, with a video-quality score of rtcbench's own and bootstrap confidence intervals of the
paired differences (docs/learned.md, "Evaluating a controller").

    result = evaluate.evaluate(["rfc8867"], ["onnx:policy.onnx"], baseline="gcc", out="results/eval")
    result.comparison      # per controller and metric: its mean, the baseline's, the difference, 95 % CI

The runs are a suite's (`rtcbench.suite.run_suite`: the same folders, the same resumption, Ray with
`ray_address`); each run's video flows are reduced to the metrics below, and each controller's run
is paired with the baseline's run of the same scenario variant and seed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from rtcbench import suite
from rtcbench.identity import SIMULATE
from rtcbench.quality import quality_expr
from rtcbench.results import InputError, PathArg, write_parquet_atomic

__all__ = ["METRICS", "EvaluateResult", "evaluate", "quality_expr"]

METRICS: dict[str, bool] = {
    "quality": True,
    "utilization": True,
    "goodput_bps": True,
    "qdelay_p95_ms": False,
    "loss_ratio": False,
    "freezes_per_min": False,
    "frame_delay_p95_ms": False,
}
"""The metrics compared, each with whether higher is better."""

BOOTSTRAP = 2000
"""Resamples of the paired differences for each confidence interval."""


def per_run(result: suite.SuiteResult) -> pl.DataFrame:
    """One row per run (scenario, variant, controller, seed): the means over its video flows of
    `METRICS`."""
    keys = ["scenario", "variant", "controller", "seed"]
    runs = result.runs.select(*keys, "simulated_s")
    video = result.flows.filter(pl.col("kind") == "video").join(runs, on=keys, how="left")
    video = video.with_columns(
        quality=quality_expr(),
        goodput_bps=pl.col("mean_goodput_bps"),
        freezes_per_min=pl.col("freezes") / (pl.col("simulated_s") / 60.0),
    )
    return video.group_by(keys, maintain_order=True).agg(pl.col(*METRICS).cast(pl.Float64).mean())


@dataclass(frozen=True)
class EvaluateResult:
    runs: pl.DataFrame
    """`per_run`: one row per run."""
    comparison: pl.DataFrame
    """Per controller (the baseline too) and metric: its mean over its runs, the baseline's mean over
    the same pairs, the mean paired difference and its 95 % bootstrap interval, the pairs, and
    whether the difference is better, worse or not resolved."""
    suite: suite.SuiteResult
    out: Path


def _bootstrap(diffs: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    if len(diffs) < 2:
        return math.nan, math.nan
    means = diffs[rng.integers(0, len(diffs), (BOOTSTRAP, len(diffs)))].mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def compare(runs: pl.DataFrame, baseline: str, seed: int = 0) -> pl.DataFrame:
    """Each controller's runs paired with the baseline's (same scenario, variant and seed), per
    metric: means, the mean difference (controller − baseline) and its 95 % bootstrap interval."""
    pair = ["scenario", "variant", "seed"]
    base = runs.filter(pl.col("controller") == baseline).drop("controller")
    rng = np.random.default_rng(seed)
    rows = []
    for controller in runs["controller"].unique(maintain_order=True).to_list():
        mine = runs.filter(pl.col("controller") == controller).drop("controller")
        joined = mine.join(base, on=pair, how="inner", suffix="_base")
        for metric, higher in METRICS.items():
            both = joined.select(metric, f"{metric}_base").drop_nulls().drop_nans()
            a, b = both[metric].to_numpy(), both[f"{metric}_base"].to_numpy()
            diff = a - b
            lo, hi = _bootstrap(diff, rng) if controller != baseline else (0.0, 0.0)
            if controller == baseline or math.isnan(lo):
                verdict = "-"
            elif lo > 0 or hi < 0:
                verdict = "better" if (lo > 0) == higher else "worse"
            else:
                verdict = "not resolved"
            rows.append(
                {
                    "controller": controller,
                    "metric": metric,
                    "pairs": len(diff),
                    "mean": float(a.mean()) if len(a) else math.nan,
                    "baseline_mean": float(b.mean()) if len(b) else math.nan,
                    "difference": float(diff.mean()) if len(diff) else math.nan,
                    "ci_low": lo,
                    "ci_high": hi,
                    "verdict": verdict,
                }
            )
    return pl.DataFrame(rows)


def evaluate(
    suites: Sequence[str | Path],
    controllers: Sequence[str],
    *,
    baseline: str = "gcc",
    reps: int = 1,
    jobs: int | None = None,
    out: PathArg = Path("results/evaluate"),
    sets: Sequence[str] = (),
    seed: int = 1,
    ray_address: str | None = None,
    progress: Callable[[int, int], None] | suite.RunProgress | None = None,
    mode: str = SIMULATE,
) -> EvaluateResult:
    """Runs `suites` (suite names, scenario ids or files) with every controller and the baseline,
    `reps` seeds from `seed`, on the stack `mode` names (the simulator, or emulated calls of
    rtcbench's agents or GStreamer's, in real time one at a time, as `suite.run_suite` runs
    them), and compares each with the baseline on the same stack. Writes the suite's folders and
    tables under `out`, then `out/evaluate-runs.parquet` (`per_run`) and
    `out/evaluate.parquet` (`compare`, with the stack in its `mode` column)."""
    out = Path(out)
    if not controllers:
        raise InputError("--cc names no controller to evaluate")
    everyone = list(dict.fromkeys([*controllers, baseline]))
    result = suite.run_suite(
        suites, everyone, reps=reps, jobs=jobs, out=out, sets=sets, seed=seed, ray_address=ray_address,
        progress=progress, mode=mode,
    )  # fmt: skip
    runs = per_run(result)
    comparison = compare(runs, _name(baseline)).with_columns(mode=pl.lit(mode))
    write_parquet_atomic(runs, out / "evaluate-runs.parquet")
    write_parquet_atomic(comparison, out / "evaluate.parquet")
    return EvaluateResult(runs, comparison, result, out)


def _name(controller: str) -> str:
    """The name the runs give `controller` (``onnx:path/x.onnx`` runs as ``onnx:x``)."""
    from rtcbench import runner

    return runner.controller_name(runner.resolve_controller(controller))
