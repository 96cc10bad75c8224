"""Across repetitions: the confidence interval of a metric's mean over runs, by the percentile
bootstrap (`docs/metrics.md`, "Across repetitions")."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

BOOTSTRAP_RESAMPLES = 10_000
"""Resamples of the bootstrap: the percentile bounds of 95 % intervals move by well under 1 % of
the interval between seeds at this count."""
BOOTSTRAP_SEED = 8867
"""Seed of the bootstrap's generator: the same runs give the same interval, in every report."""


def bootstrap_means(
    x: npt.NDArray[np.float64], resamples: int, rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    """The means of `resamples` resamples of `x` with replacement: the percentile bootstrap's core,
    shared by `mean_ci` and `compare.bootstrap_ci`."""
    means: npt.NDArray[np.float64] = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    return means


def mean_ci(
    values: Iterable[float | None],
    confidence: float = 0.95,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float] | None:
    """Confidence interval of the mean of per-run values (one per repetition), by the percentile
    bootstrap: resample the runs with replacement, take the mean of each resample, and return the
    (1 - confidence)/2 and (1 + confidence)/2 quantiles of those means.

    The bootstrap, because per-run metrics (a p95 delay, a loss ratio) are not normal and a suite
    has a handful of repetitions; a fixed seed, so a report is a pure function of its runs. None
    for fewer than two values (None and NaN are left out). With few runs the interval is narrower
    than the truth (with two it spans at most the two values); docs/metrics.md says so.
    """
    x = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=np.float64)
    if x.size < 2:
        return None
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    means = bootstrap_means(x, resamples, np.random.default_rng(seed))
    lo, hi = np.quantile(means, [(1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0])
    return float(lo), float(hi)
