"""Result sets side by side: two controllers in one suite folder, or the same controllers in two or
more suite folders (an old and a new commit), case by case, with a bootstrap confidence interval of
each difference over the repetitions.

The unit of comparison is a cell: one (scenario, variant) run by one side, where a side is a
controller (one folder) or a folder's label (several folders, matched per controller). A cell holds
one run per repetition; each run gives one value per metric (`METRICS`), and the cell's values on
side B are compared with those on the baseline side A: means, B − A, relative change, and a
percentile-bootstrap 95 % interval of the difference of means, each side resampled on its own. A
change is a regression when that interval excludes zero on the metric's worse side and the
relative change exceeds the tolerance. Definitions and examples: `docs/compare.md`.

Runs are read from their folders (`summary.json`, through the code that builds `suite.parquet`), not
from the suite tables: a folder of `rtcbench run` results, or suites merged by copying, compare as
well, and a broken run folder is named and skipped instead of spoiling the set.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import polars as pl

from rtcbench import suite
from rtcbench.analysis import bootstrap_means
from rtcbench.results import SUMMARY, InputError, PathArg, read_summary, run_folders
from rtcbench.stages import STAGES, stage_key, stage_p95_key
from rtcbench.tables import VIDEO

__all__ = [
    "COLUMNS",
    "CONFIDENCE",
    "EFFECT_SIZES",
    "METRICS",
    "MIN_REPS",
    "RUNS_INDEX",
    "VERDICTS",
    "CompareError",
    "Comparison",
    "Metric",
    "ResultSet",
    "bootstrap_ci",
    "cliffs_delta",
    "compare",
    "comparison",
    "effect_word",
    "judge",
    "load",
    "load_runs",
    "run_values",
]

Better = Literal["higher", "lower"]
Verdict = Literal["regression", "improvement", "no change", "too few repetitions", "not measured"]
VERDICTS: tuple[Verdict, ...] = (
    "regression",
    "improvement",
    "no change",
    "too few repetitions",
    "not measured",
)

MIN_REPS = 5
"""Repetitions each side of a cell needs before it gets a verdict. With fewer, a bootstrap
interval over the seeds is too unstable to call a regression (docs/compare.md): the table still
shows the means and the difference, with the verdict "too few repetitions"."""

CONFIDENCE = 0.95
"""Level of the bootstrap interval of B − A."""

_KEYS = ("scenario", "variant", "controller", "seed")


class CompareError(InputError):
    """A comparison that cannot be made as asked (no runs, unknown label or metric, nothing in
    common); the message names the folder or the option and what is allowed."""


@dataclass(frozen=True)
class Metric:
    """One compared quantity: a column of `run_values`, with the side that is better and the
    smallest difference that matters (`floor`, in the metric's own unit; per minute of the run
    with `floor_per_minute`): a smaller one is not called, however certain."""

    name: str
    title: str
    better: Better
    unit: str
    scale: float
    digits: int
    definition: str
    floor: float = 0.0
    floor_per_minute: bool = False

    def floor_for(self, duration_s: float | None) -> float:
        """The floor for runs of `duration_s` (the per-minute floors scale with it)."""
        if not self.floor_per_minute:
            return self.floor
        return self.floor * (duration_s or 60.0) / 60.0

    @property
    def heading(self) -> str:
        """Title, display unit and better side, for a table: "qdelay p95 ms ↓"."""
        arrow = "↑" if self.better == "higher" else "↓"
        return " ".join(p for p in (self.title, self.unit, arrow) if p)

    def format(self, value: float | None, *, signed: bool = False) -> str:
        """The value in the display unit (times `scale`, `digits` decimals); "-" for none."""
        if value is None or not math.isfinite(value):
            return "-"
        return f"{value * self.scale:{'+' if signed else ''}.{self.digits}f}"

    def interval(self, row: dict[str, Any]) -> str | None:
        """A row's interval of B − A in the display unit ("-12.0 … -3.4"), None without one."""
        if row["ci_low"] is None:
            return None
        return f"{self.format(row['ci_low'], signed=True)} … {self.format(row['ci_high'], signed=True)}"


METRICS: tuple[Metric, ...] = (
    Metric(
        "utilization",
        "utilisation",
        "higher",
        "",
        1.0,
        3,
        "video flows' receive rate / the capacity of their path (`utilization`), mean over the run's "
        "video flows",
        floor=0.05,
    ),
    Metric(
        "qdelay_p50_ms",
        "qdelay p50",
        "lower",
        "ms",
        1.0,
        1,
        "video flows' median queuing delay, mean over the run's video flows",
        floor=10.0,
    ),
    Metric(
        "qdelay_p95_ms",
        "qdelay p95",
        "lower",
        "ms",
        1.0,
        1,
        "video flows' 95th-percentile queuing delay, mean over the run's video flows",
        floor=10.0,
    ),
    Metric(
        "loss_ratio",
        "loss",
        "lower",
        "%",
        100.0,
        2,
        "video packets dropped / sent, mean over the run's video flows",
        floor=0.005,
    ),
    Metric(
        "mean_goodput_bps",
        "goodput",
        "higher",
        "kbit/s",
        1e-3,
        0,
        "video flows' media payload received per second (`mean_goodput_bps`), mean over the run's "
        "video flows",
        floor=50_000.0,
    ),
    Metric(
        "freezes",
        "freezes",
        "lower",
        "",
        1.0,
        1,
        "video flows' freezes (WebRTC's freeze test, `docs/metrics.md`), mean over the run's video flows",
        floor=1.0,
        floor_per_minute=True,
    ),
    Metric(
        "fps_mean",
        "frame rate",
        "higher",
        "fps",
        1.0,
        1,
        "video flows' frames shown per second, mean over the run's video flows",
        floor=1.0,
    ),
    Metric(
        "frame_delay_p95_ms",
        "frame delay p95",
        "lower",
        "ms",
        1.0,
        0,
        "video flows' 95th-percentile capture-to-display delay of the frames shown, mean over the run's "
        "video flows",
        floor=10.0,
    ),
    Metric(
        "startup_s",
        "start-up",
        "lower",
        "s",
        1.0,
        1,
        "video flows' start-up convergence: the time from a flow's start until its 1 s mean sending "
        "rate is within [0.8, 1.1] x its fair share for 5 s (`convergence_time_s`), mean over the "
        "flows that converged",
        floor=2.0,
    ),
    Metric(
        "reconvergence_s",
        "after capacity change",
        "lower",
        "s",
        1.0,
        1,
        "video flows' convergence to their fair share after a capacity change of their bottleneck "
        "(`reconvergence_s`), mean over the changes after which they converged",
        floor=2.0,
    ),
    Metric(
        "recovery_s",
        "recovery",
        "lower",
        "s",
        1.0,
        1,
        "video flows' convergence to their fair share after a competing flow stopped on their link "
        "or radio medium (`recovery_s`), mean over the stops after which they converged",
        floor=2.0,
    ),
    Metric(
        "jain_index_video",
        "Jain video",
        "higher",
        "",
        1.0,
        3,
        "Jain's index of the video flows' rates after settling; runs with two or more video flows",
        floor=0.05,
    ),
    Metric(
        "jain_index_all",
        "Jain all",
        "higher",
        "",
        1.0,
        3,
        "Jain's index of every data flow (video, TCP, CBR) of the least fair shared link; runs where "
        "two or more share one",
        floor=0.05,
    ),
    Metric(
        "tcp_throughput_bps",
        "TCP",
        "higher",
        "kbit/s",
        1e-3,
        0,
        "received bytes on the wire of the TCP flows per second while each runs, summed; runs with TCP",
        floor=50_000.0,
    ),
    Metric(
        "feedback_bps",
        "feedback",
        "lower",
        "kbit/s",
        1e-3,
        2,
        "RTCP sent, all calls and directions, on the wire",
        floor=1_000.0,
    ),
)
BY_NAME = {m.name: m for m in METRICS}

COLUMNS: dict[str, pl.DataType] = {
    "scenario": pl.String(),
    "variant": pl.String(),
    "metric": pl.String(),
    "better": pl.String(),
    "a": pl.String(),
    "b": pl.String(),
    "n_a": pl.Int64(),
    "n_b": pl.Int64(),
    "runs_a": pl.Int64(),
    "runs_b": pl.Int64(),
    "mean_a": pl.Float64(),
    "mean_b": pl.Float64(),
    "diff": pl.Float64(),
    "rel_diff": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "effect": pl.Float64(),
    "verdict": pl.String(),
    "floor": pl.Float64(),
    "controller_a": pl.String(),
    "controller_b": pl.String(),
    "same_config": pl.Boolean(),
}
"""The columns of `compare`'s frame, in order (docs/compare.md, "The table")."""


CONTEXT = (
    "duration_s",
    "frame_delay_mean_ms",
    *(k for st in STAGES for k in (stage_key(st), stage_p95_key(st))),
    "startup_first_window",
    "flags",
)
"""The columns of `run_values` beyond the metrics: what the sentences explain a difference with
(the frame delay by stage, `docs/metrics.md`), the run's duration (the per-minute floors) and
whether a video flow's start-up converged in its first window (under the measure's 1 s resolution:
`docs/compare.md`, "Flags")."""

ALIASES = {"convergence_time_s": "startup_s", "goodput_bps": "mean_goodput_bps", "utilisation": "utilization"}
"""Other names a metric is asked for by: its summary key and the suite tables' columns."""


def run_values(flows: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """One row per run (the keys of `suite-runs.parquet` and `path`) with a column per `METRICS`
    entry and per `CONTEXT` column, from the two suite tables.

    Flow metrics are averaged over the run's video flows, as the suite's overview does: video is
    what the controller adapts, while audio's rate is fixed by its codec. Utilisation is kept only
    for video flows whose path has a capacity of its own (not across a BSS or a cell, whose
    capacity is a share of a medium: `docs/compare.md`). Jain's index is kept only where it
    compares two or more video flows (it is 1 by definition with one), TCP throughput only where
    the run has TCP flows. Null means "does not apply" or "not measured".
    """
    by = ["path"]
    renamed = {"convergence_time_s": "startup_s"}
    per_flow = (
        "utilization", "qdelay_p50_ms", "qdelay_p95_ms", "loss_ratio", "mean_goodput_bps", "freezes",
        "fps_mean", "frame_delay_p95_ms", "convergence_time_s", "reconvergence_s", "recovery_s",
        *CONTEXT[1:-2],
    )  # fmt: skip
    # A summary from an older rtcbench may lack a metric: it is then not measured, not an error.
    flows = flows.with_columns(pl.lit(None, pl.Float64).alias(c) for c in per_flow if c not in flows.columns)
    if "radio_path" not in flows.columns:
        flows = flows.with_columns(radio_path=pl.lit(None, pl.Boolean))
    if "flags" not in flows.columns:
        flows = flows.with_columns(flags=pl.lit(None, pl.String))
    flows = flows.with_columns(
        utilization=pl.when(pl.col("radio_path").fill_null(False)).then(None).otherwise(pl.col("utilization"))
    )
    video = (
        flows.filter(pl.col("kind") == VIDEO)
        .group_by(by)
        .agg(
            pl.col(*per_flow).cast(pl.Float64).mean(),
            startup_first_window=(pl.col("convergence_time_s") == 0.0).any(),
            # Each video flow's flags, as "<flow>: <flag>" (none: "").
            flags=pl.concat_str(pl.col("flow_name"), pl.lit(": "), pl.col("flags"))
            .filter(pl.col("flags").fill_null("") != "")
            .str.join("; "),
        )
        .rename(renamed)
    )
    tcp = (
        flows.filter(pl.col("kind") == "tcp")
        .group_by(by)
        .agg(tcp_throughput_bps=pl.col("cross_throughput_bps").sum())
    )
    base = runs.select(
        *_KEYS,
        "path",
        pl.when(pl.col("video_flows") >= 2).then(pl.col("jain_index_video")).alias("jain_index_video"),
        pl.col("jain_index_all"),
        pl.col("feedback_bps").cast(pl.Float64),
        duration_s=pl.col("simulated_s").cast(pl.Float64),
    )
    joined = base.join(video, on=by, how="left", maintain_order="left").join(
        tcp, on=by, how="left", maintain_order="left"
    )
    return joined.select(
        *_KEYS,
        "path",
        *(pl.col(m.name).cast(pl.Float64) for m in METRICS),
        *(pl.col(c).cast(pl.Float64) for c in CONTEXT[:-2]),
        pl.col("startup_first_window").fill_null(False),
        pl.col("flags").fill_null(""),
    )


@dataclass(frozen=True)
class ResultSet:
    """The runs of one folder: `runs` has one row per run (`run_values`, plus `scenario_sha`, the
    fingerprint of the configuration it ran: `rtcbench.identity`); `problems` names the folders
    skipped."""

    folder: Path
    runs: pl.DataFrame
    problems: tuple[str, ...]

    @property
    def controllers(self) -> list[str]:
        return sorted(set(self.runs.get_column("controller")))


def _read_run(folder: Path, rel: str, root: Path) -> tuple[list[dict[str, Any]], dict[str, Any], str]:
    """A run's suite-table rows and its scenario fingerprint; raises CompareError naming what is
    wrong (a link below `root`, the folder given, among them: `results.LINK_READ`)."""
    summary_path = folder / SUMMARY
    try:
        summary = read_summary(folder, root=root)
    except InputError as e:
        raise CompareError(str(e)) from None
    try:
        flow_rows, run_row = suite.rows_of_run(summary, rel)
        sha = summary["identity"]["scenario_sha256"]
    except (KeyError, TypeError, AttributeError) as e:
        raise CompareError(f"{summary_path}: malformed ({type(e).__name__}: {e})") from e
    if not isinstance(sha, str):
        raise CompareError(f"{summary_path}: malformed (identity.scenario_sha256 is not a string)")
    return flow_rows, run_row, sha


def _skipped(problems: Sequence[str]) -> str:
    """What an error that follows from runs left out says of them: how many, and the first, so
    that a run folder that was skipped (a link, a broken run) is never left out unseen."""
    return f"; {len(problems)} run folder(s) skipped, the first: {problems[0]}" if problems else ""


def load(folder: PathArg) -> ResultSet:
    """Every complete run under `folder` (a suite's `--out`, any folder of runs, or one run's
    folder). Incomplete or unreadable run folders are skipped and named in `problems`; a run whose
    (scenario, variant, controller, seed, configuration) was already read from another folder is
    skipped too.
    Raises CompareError if `folder` is not a folder or holds no complete run."""
    folder = Path(folder)
    if not folder.is_dir():
        raise CompareError(f"{folder}: not a folder")
    problems: list[str] = []
    flow_rows: list[dict[str, Any]] = []
    run_rows: list[dict[str, Any]] = []
    shas: list[str] = []
    seen: dict[tuple[Any, ...], Path] = {}
    for run in run_folders(folder):
        rel = run.relative_to(folder).as_posix()
        try:
            flows_of_run, run_row, sha = _read_run(run, rel, folder)
        except CompareError as e:
            problems.append(str(e))
            continue
        key = (*(run_row[k] for k in _KEYS), sha)
        if key in seen:
            problems.append(
                f"{run}: the same run as {seen[key]} (scenario, variant, controller, seed and configuration)"
            )
            continue
        seen[key] = run
        flow_rows += flows_of_run
        run_rows.append(run_row)
        shas.append(sha)
    if not run_rows:
        raise CompareError(
            f"{folder}: no complete run (no folder under it holds a summary.json{_skipped(problems)})"
        )
    flows, runs = suite.tables_of_rows(flow_rows, run_rows)
    digests = pl.DataFrame(
        {"path": [r["path"] for r in run_rows], "scenario_sha": shas},
        schema={"path": pl.String, "scenario_sha": pl.String},
    )
    values = run_values(flows, runs).join(digests, on="path", how="left", maintain_order="left")
    return ResultSet(folder, values, tuple(problems))


RUNS_INDEX = "runs.parquet"
"""The index `rtcbench run` keeps of every run in its `--out` folder (`load_runs`)."""


def load_runs(folder: PathArg) -> pl.DataFrame:
    """One row per complete run under `folder` (any folder of runs: `rtcbench run`'s `--out`, a
    suite's, or one run's folder): its scenario, variant, controller and seed, its `path` relative
    to `folder`, the values `compare` compares (`METRICS`, means over the run's video flows) and
    `scenario_sha`, the fingerprint of the configuration it ran. Folders that are not complete runs
    are left out (`load` names them). Raises CompareError if `folder` holds no complete run."""
    return load(folder).runs


def bootstrap_ci(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    resamples: int = 2000,
    rng: np.random.Generator,
    confidence: float = CONFIDENCE,
) -> tuple[float, float] | None:
    """Percentile-bootstrap interval of mean(b) − mean(a): each side is resampled with replacement
    on its own (the repetitions of the two sides are independent runs, not pairs), `resamples`
    times, and the interval spans the middle `confidence` of the differences of the resampled
    means. None with fewer than two values on either side: one run shows no spread, so no interval
    can be had from it."""
    xa = np.asarray(a, dtype=np.float64)
    xb = np.asarray(b, dtype=np.float64)
    if xa.size < 2 or xb.size < 2:
        return None
    means_a = bootstrap_means(xa, resamples, rng)
    means_b = bootstrap_means(xb, resamples, rng)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means_b - means_a, [tail, 1.0 - tail])
    return float(low), float(high)


def cliffs_delta(a: npt.ArrayLike, b: npt.ArrayLike) -> float | None:
    """Cliff's δ of B against A: over every pair of a run of A and a run of B, the share where
    B's value is larger minus the share where it is smaller (Cliff 1993). −1 … 1: 1 when every run
    of B is above every run of A, 0 when the two sides interleave evenly. Unlike a difference of
    means it needs no assumption of the values' distribution and is not moved by one outlying
    seed. None when a side has no value."""
    xa = np.asarray(a, dtype=np.float64)
    xb = np.asarray(b, dtype=np.float64)
    if xa.size == 0 or xb.size == 0:
        return None
    return float(np.sign(xb[:, None] - xa[None, :]).mean())


EFFECT_SIZES = ((0.147, "negligible"), (0.33, "small"), (0.474, "medium"))
"""Upper bounds of |δ| for each magnitude word; above the last, "large" (Romano et al. 2006)."""


def effect_word(delta: float) -> str:
    """The conventional magnitude of a Cliff's δ: negligible, small, medium or large."""
    return next((word for bound, word in EFFECT_SIZES if abs(delta) < bound), "large")


def judge(
    better: Better,
    mean_a: float | None,
    mean_b: float | None,
    ci: tuple[float, float] | None,
    tolerance: float,
    *,
    n_a: int = MIN_REPS,
    n_b: int = MIN_REPS,
    min_reps: int = MIN_REPS,
    floor: float = 0.0,
) -> Verdict:
    """The verdict on one metric of one cell.

    A side without a value: "not measured". Fewer than `min_reps` runs on a side (one run
    included): "too few repetitions", the means given and nothing judged. Otherwise a regression
    needs three things: the interval of B − A excludes zero on the worse side (the change is not
    the seeds' noise), |B − A| exceeds `floor` (the smallest difference that matters for this
    metric, in its unit) and the relative change |B − A| / |A| exceeds `tolerance` (with A = 0 any
    change counts as larger). An improvement is the same on the better side; anything else is
    "no change".
    """
    if mean_a is None or mean_b is None:
        return "not measured"
    if min(n_a, n_b) < min_reps or ci is None:
        return "too few repetitions"
    low, high = ci
    # Bootstrap means of equal values can differ in the last bit; that is not a change.
    eps = 1e-12 * max(abs(mean_a), abs(mean_b))
    if low <= eps and high >= -eps:
        return "no change"
    diff = mean_b - mean_a
    if abs(diff) <= floor:
        return "no change"
    if mean_a != 0 and abs(diff) / abs(mean_a) <= tolerance:
        return "no change"
    went_up = low > eps
    return "improvement" if went_up == (better == "higher") else "regression"


@dataclass(frozen=True)
class _Side:
    """One side of a comparison: its label and its runs, with the cell key of each run."""

    label: str
    runs: pl.DataFrame


@dataclass(frozen=True)
class Comparison:
    """A comparison: `table` (the frame `compare` returns), the `baseline` label and every side's
    label in order, the run folders skipped (`problems`) and what was not compared (`notes`:
    cases present on one side only, cases whose scenario text differs). `mode` is "controllers"
    (one folder, sides are its controllers) or "folders" (sides are folders, cells per controller).
    """

    table: pl.DataFrame
    mode: Literal["controllers", "folders"]
    labels: tuple[str, ...]
    baseline: str
    problems: tuple[str, ...]
    notes: tuple[str, ...]
    runs: tuple[tuple[str, pl.DataFrame], ...] = ()
    """Each side's label and its runs, one row per run with a column per metric (`load_runs`)."""

    def side_runs(self, label: str) -> pl.DataFrame:
        """The runs of the side `label` (`runs`)."""
        return dict(self.runs)[label]

    def counts(self, b: str) -> dict[Verdict, int]:
        """How many rows of the comparison of `b` with the baseline got each verdict."""
        rows = self.table.filter(pl.col("b") == b)
        return {v: int((rows.get_column("verdict") == v).sum()) for v in VERDICTS}

    def in_short(self, b: str) -> list[str]:
        """One sentence per case of the comparison of `b` with the baseline: the metrics that
        decide it, where B is worse and where it is better (`SENTENCE`: what the picture got, then
        the delay and loss it cost, then how fast the rate settled), those without a clear
        difference, and, where the frame delay differs, the stage of the frames' delay that makes
        the difference (`docs/compare.md`, "In short"). A case with too few repetitions gets the
        two means and no judgement (`note_once` says why, once)."""
        return [sentence for _, sentence in self.in_short_cases(b)]

    def in_short_cases(self, b: str) -> list[tuple[tuple[str, str, str], str]]:
        """`in_short` with each sentence's case: (scenario, variant, controller of side A)."""
        rows = self.table.filter((pl.col("b") == b) & pl.col("metric").is_in(SENTENCE))
        order = {m: i for i, m in enumerate(SENTENCE)}
        runs_a, runs_b = self.side_runs(self.baseline), self.side_runs(b)
        out = []
        for key, group in rows.group_by(["scenario", "variant", "controller_a"], maintain_order=True):
            scenario, variant, controller = (str(k) if k is not None else "" for k in key)
            first = group.row(0, named=True)
            case = _case(scenario, variant, controller if self.mode == "folders" else None)
            ranked = sorted(group.iter_rows(named=True), key=lambda r: order[r["metric"]])
            cell = (pl.col("scenario") == scenario) & (pl.col("variant") == variant)
            if self.mode == "folders":
                cell &= pl.col("controller") == controller
            context = (runs_a.filter(cell), runs_b.filter(cell))
            body = _sentence(first["a"], first["b"], ranked, context)
            out.append(
                ((scenario, variant, controller), f"{case}: {first['b']} against {first['a']}: {body}")
            )
        return out

    def note_once(self) -> str | None:
        """What a comparison without verdicts says once rather than in every sentence: "one run
        each" when every compared cell has one run a side; None otherwise (the notes then name
        the cases with too few repetitions)."""
        measured = self.table.filter(pl.col("verdict") != "not measured")
        most = measured.select(pl.max_horizontal(pl.col("n_a").max(), pl.col("n_b").max())).item()
        if measured.height and most <= 1:
            return "one run each: the means are given, no judgement (a verdict needs repetitions, --reps)"
        return None


SENTENCE = (
    "mean_goodput_bps",
    "frame_delay_p95_ms",
    "freezes",
    "qdelay_p95_ms",
    "loss_ratio",
    "startup_s",
    "recovery_s",
    "utilization",
)
"""What `Comparison.in_short` weighs for each case, in this order: what the picture got (goodput,
frame delay, freezes), what it cost (queuing delay, loss), how fast the rate settled (start-up,
recovery after competition) and how much of its path it used."""

STAGE_CAUSES = {
    "encode": "{who}'s encoder holds frames longer",
    "send_queue": "{who} holds frames at the sender",
    "network": "{who}'s packets wait longer in the network's queues",
    "repair": "{who} waits longer for retransmissions and FEC",
    "jitter_buffer": "{who}'s receiver holds frames longer in its jitter buffer",
    "decode": "{who}'s decoder takes longer",
}
"""How a sentence names the stage of the frames' delay that differs most (`rtcbench.stages`)."""


def _judged(m: Metric, r: dict[str, Any]) -> str:
    """A metric with a verdict: "frame delay p95 921 against 232 ms (+297 %, +592 … +776 ms, large
    effect)", B's mean first."""
    unit = f" {m.unit}" if m.unit else ""
    change = f"{100 * r['rel_diff']:+.0f} %, " if r["rel_diff"] is not None else ""
    effect = f", {effect_word(r['effect'])} effect" if r.get("effect") is not None else ""
    return f"{_means(r)} ({change}{m.interval(r)}{unit}{effect})"


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _mean_of(runs: pl.DataFrame, column: str) -> float | None:
    if column not in runs.columns:
        return None
    values = runs.get_column(column).drop_nulls()
    return float(values.mean()) if values.len() else None  # type: ignore[arg-type]


def _stage_cause(
    a: str, b: str, frame_delay: dict[str, Any], context: tuple[pl.DataFrame, pl.DataFrame]
) -> str:
    """Where the frame delays of `a` and `b` differ: the stage whose mean differs most in the
    direction of the frame delay's difference, named for the slower side with both sides' p95."""
    runs_a, runs_b = context
    slower_is_b = frame_delay["diff"] > 0
    toward = []
    for st in STAGES:
        ma, mb = _mean_of(runs_a, stage_key(st)), _mean_of(runs_b, stage_key(st))
        if ma is not None and mb is not None and mb != ma and (mb > ma) == slower_is_b:
            toward.append((abs(mb - ma), st))
    if not toward:
        return ""
    st = max(toward, key=lambda x: x[0])[1]
    slow = b if slower_is_b else a
    slow_runs, fast_runs = (runs_b, runs_a) if slower_is_b else (runs_a, runs_b)
    p_slow, p_fast = _mean_of(slow_runs, stage_p95_key(st)), _mean_of(fast_runs, stage_p95_key(st))
    if p_slow is not None and p_fast is not None:
        numbers = f"{st.title} p95 {p_slow:.0f} against {p_fast:.0f} ms"
    else:
        m_slow, m_fast = _mean_of(slow_runs, stage_key(st)), _mean_of(fast_runs, stage_key(st))
        numbers = f"{st.title} {m_slow:.0f} against {m_fast:.0f} ms on average"
    return f" Why: {STAGE_CAUSES[st.name].format(who=slow)} ({numbers})."


def _means(r: dict[str, Any]) -> str:
    m = BY_NAME[r["metric"]]
    unit = f" {m.unit}" if m.unit else ""
    return f"{m.title} {m.format(r['mean_b'])} against {m.format(r['mean_a'])}{unit}"


def _sentence(a: str, b: str, rows: list[dict[str, Any]], context: tuple[pl.DataFrame, pl.DataFrame]) -> str:
    """The body of a case's sentence (after "case: B against A: ")."""
    measured = [r for r in rows if r["verdict"] != "not measured"]
    if not measured:
        return "nothing measured on both sides."
    runs_a, runs_b = measured[0]["runs_a"], measured[0]["runs_b"]
    if all(r["verdict"] == "too few repetitions" for r in measured):
        said = "" if (runs_a, runs_b) == (1, 1) else f" ({runs_b} and {runs_a} runs, too few to judge)"
        return f"{'; '.join(_means(r) for r in measured)}{said}."
    # A metric measured in fewer runs than the case has (a flow that never converged in some).
    partial = [
        f"{BY_NAME[r['metric']].title} measured in {r['n_a']} of {runs_a} runs of {a} and {r['n_b']} of "
        f"{runs_b} of {b}, not judged"
        for r in measured
        if r["verdict"] == "too few repetitions"
    ]
    worse = [_judged(BY_NAME[r["metric"]], r) for r in measured if r["verdict"] == "regression"]
    better = [_judged(BY_NAME[r["metric"]], r) for r in measured if r["verdict"] == "improvement"]
    same = [BY_NAME[r["metric"]].title for r in measured if r["verdict"] == "no change"]
    parts = []
    if worse:
        parts.append(f"worse in {_and(worse)}")
    if better:
        parts.append(f"better in {_and(better)}")
    if same:
        parts.append(f"no clear difference in {_and(same)}")
    body = "; ".join(parts + partial) + "."
    frame_delay = next((r for r in measured if r["metric"] == "frame_delay_p95_ms"), None)
    if frame_delay is not None and frame_delay["verdict"] in ("regression", "improvement"):
        body += _stage_cause(a, b, frame_delay, context)
    flagged = [
        f"{sum(1 for x in runs.get_column('flags') if x)} of {runs.height} runs of {label}"
        for label, runs in ((a, context[0]), (b, context[1]))
        if runs.height and "flags" in runs.columns and any(runs.get_column("flags"))
    ]
    if flagged:
        kinds = sorted(
            {
                flag.split(":")[1].strip()
                for runs in context
                if "flags" in runs.columns
                for text in runs.get_column("flags")
                for flag in str(text).split("; ")
                if ":" in flag
            }
        )
        body += f" Flagged ({', '.join(kinds)}): {_and(flagged)}; see their runs."
    return body


def _spelling(text: str) -> str:
    return re.sub(r"[\s_\-]+", "_", text.strip().lower().rstrip("↑↓").strip())


def metric_named(name: str) -> Metric | None:
    """The metric `name` asks for: its name (`qdelay_p95_ms`), its heading as a table prints it
    with or without the unit and arrow (`qdelay p95 ms ↓`, `utilisation`, `goodput kbit/s`), or
    another name of it (`ALIASES`: `convergence_time_s`, `goodput_bps`); None if none."""
    want = _spelling(name)
    for m in METRICS:
        names = {m.name, m.title, f"{m.title} {m.unit}", m.heading}
        if want in {_spelling(n) for n in names}:
            return m
    return BY_NAME.get(ALIASES.get(want, ""))


def _listed(values: Sequence[str] | None, what: str) -> list[str] | None:
    """A list option, stripped and checked: nothing empty, nothing twice; None if not given."""
    if values is None:
        return None
    if isinstance(values, str):
        raise CompareError(f"{what} must be a list of names, not the string {values!r}")
    out = [v.strip() for v in values]
    if not out or not all(out):
        raise CompareError(f"{what} names nothing, or an empty name: {', '.join(out)!r}")
    dupes = sorted({v for v in out if out.count(v) > 1})
    if dupes:
        raise CompareError(f"{what} names {', '.join(map(repr, dupes))} more than once")
    return out


def _natural(text: str) -> tuple[Any, ...]:
    """Sort key with numbers compared as numbers: delay=50ms before delay=100ms, 5.2 before 5.10."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text))


def _case(scenario: str, variant: str, controller: str | None) -> str:
    text = scenario + (f" [{variant}]" if variant else "")
    return f"{text} {controller}" if controller else text


def _sides(
    sets: list[ResultSet], labels: list[str] | None, baseline: str | None
) -> tuple[Literal["controllers", "folders"], list[_Side]]:
    """The sides to compare, baseline first."""
    if len(sets) == 1:
        rs = sets[0]
        present = rs.controllers
        names = labels if labels is not None else present
        unknown = [n for n in names if n not in present]
        if unknown:
            raise CompareError(
                f"{rs.folder}: no runs of {', '.join(map(repr, unknown))} "
                f"(controllers there: {', '.join(present)}{_skipped(rs.problems)})"
            )
        if len(names) < 2:
            raise CompareError(
                f"{rs.folder}: holds runs of one controller only ({names[0]}{_skipped(rs.problems)}); "
                "give two controllers or a second folder"
            )
        mode: Literal["controllers", "folders"] = "controllers"
        sides = [_Side(n, rs.runs.filter(pl.col("controller") == n)) for n in names]
    else:
        if labels is None:
            labels = [d.folder.name or str(d.folder) for d in sets]
            if len(set(labels)) < len(labels):
                labels = [str(d.folder) for d in sets]
            if len(set(labels)) < len(labels):
                raise CompareError("the same folder is given twice; give --labels to tell them apart")
        elif len(labels) != len(sets):
            raise CompareError(f"--labels names {len(labels)} sets for {len(sets)} folders")
        mode = "folders"
        sides = [_Side(label, rs.runs) for label, rs in zip(labels, sets, strict=True)]
    if baseline is not None:
        names = [s.label for s in sides]
        if baseline not in names:
            raise CompareError(f"--baseline {baseline!r} is not compared (allowed: {', '.join(names)})")
        sides.sort(key=lambda s: s.label != baseline)
    return mode, sides


def _row_rng(seed: int, key: Sequence[str]) -> np.random.Generator:
    """A generator of its own for each row, from the seed and the row's identity: the same row
    gets the same interval whatever else is compared, and rows do not share draws."""
    digest = hashlib.sha256("\x1f".join(key).encode()).digest()
    return np.random.default_rng(np.random.SeedSequence([seed, int.from_bytes(digest[:16], "little")]))


def comparison(
    dirs: Sequence[PathArg],
    labels: Sequence[str] | None = None,
    *,
    baseline: str | None = None,
    metrics: Sequence[str] | None = None,
    tolerance: float = 0.05,
    resamples: int = 2000,
    seed: int = 0,
    min_reps: int = MIN_REPS,
    any_config: bool = False,
) -> Comparison:
    """Compares the result sets under `dirs`; `compare` returns its `table`.

    One folder: its controllers are the sides (`labels` picks and orders them); several folders:
    the folders are the sides (`labels` names them, default their folder names) and cells are
    matched per (scenario, variant, controller). A cell is one configuration: runs pair only if
    they ran the same resolved scenario (`rtcbench.identity`'s fingerprint), unless `any_config`,
    which pairs by name and marks such rows `same_config` false. Each side is compared with the
    baseline: `baseline` if given, else the first side. `metrics` picks from `METRICS` (default
    all). A cell with fewer than `min_reps` runs on a side gets no verdict. Cases on one side
    only, or whose configurations differ, are left out and listed in `notes`. Raises
    CompareError on a request that cannot be met.
    """
    if not dirs:
        raise CompareError("no folder to compare")
    if not (math.isfinite(tolerance) and tolerance >= 0):
        raise CompareError(f"--tolerance must be a finite number ≥ 0, got {tolerance}")
    if resamples < 1:
        raise CompareError(f"--resamples must be at least 1, got {resamples}")
    if seed < 0:
        raise CompareError(f"--seed must be ≥ 0, got {seed}")
    if min_reps < 2:
        raise CompareError(f"--min-reps must be at least 2 (an interval needs two runs), got {min_reps}")
    names = _listed(labels, "--labels")
    chosen = _listed(metrics, "--metric")
    if chosen is None:
        wanted = list(METRICS)
    else:
        found = [metric_named(m) for m in chosen]
        unknown = [m for m, f in zip(chosen, found, strict=True) if f is None]
        if unknown:
            raise CompareError(f"unknown metric {unknown[0]!r} (allowed: {', '.join(BY_NAME)})")
        wanted = list(dict.fromkeys(f for f in found if f is not None))
    sets = [load(Path(d)) for d in dirs]
    mode, sides = _sides(sets, names, baseline)
    named = ["scenario", "variant"] if mode == "controllers" else ["scenario", "variant", "controller"]
    cell = named if any_config else [*named, "scenario_sha"]

    def case_of(k: tuple[Any, ...]) -> str:
        return _case(str(k[0]), str(k[1]), str(k[2]) if mode == "folders" else None)

    def natural(k: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(_natural(str(p)) for p in k)

    base = sides[0]
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    few: set[str] = set()
    for other in sides[1:]:
        cells_a = base.runs.sort("seed", "path").partition_by(cell, as_dict=True, maintain_order=True)
        cells_b = other.runs.sort("seed", "path").partition_by(cell, as_dict=True, maintain_order=True)
        keys_a, keys_b = set(cells_a), set(cells_b)
        common = sorted(keys_a & keys_b, key=natural)
        # Same names, another configuration: not the same case (unless any_config).
        names_a = {k[: len(named)] for k in keys_a}
        names_b = {k[: len(named)] for k in keys_b}
        unpaired = {k[: len(named)] for k in keys_a ^ keys_b}
        differ = sorted(unpaired & names_a & names_b, key=natural)
        if differ:
            notes.append(
                f"not compared, runs of a configuration that is not on the other side, between "
                f"{base.label} and {other.label} (another --set, scenario or trace file; --any-config "
                f"compares them anyway): " + ", ".join(case_of(k) for k in differ)
            )
        for here, there, only in (
            (base.label, other.label, names_a - names_b),
            (other.label, base.label, names_b - names_a),
        ):
            if only:
                listed = ", ".join(case_of(k) for k in sorted(only, key=natural))
                notes.append(f"not compared, only in {here} (not in {there}): {listed}")
        if not common:
            raise CompareError(
                f"{base.label} and {other.label} have no case in common"
                + (" with the same configuration (--any-config pairs them by name)" if differ else "")
            )
        mixed: list[str] = []
        for key in common:
            runs_a, runs_b = cells_a[key], cells_b[key]
            shas = set(runs_a.get_column("scenario_sha")) | set(runs_b.get_column("scenario_sha"))
            scenario, variant = str(key[0]), str(key[1])
            cc_a = str(key[2]) if mode == "folders" else base.label
            cc_b = str(key[2]) if mode == "folders" else other.label
            if len(shas) > 1:
                mixed.append(case_of(key))
            if min(runs_a.height, runs_b.height) < min_reps:
                few.add(case_of(key))
            sides_of_row = (base.label, other.label, cc_a, cc_b)
            for m in wanted:
                row = _row(
                    m, scenario, variant, sides_of_row, runs_a, runs_b, tolerance, resamples, seed, min_reps
                )
                if row is not None:
                    row["same_config"] = len(shas) == 1
                    rows.append(row)
        if mixed:
            notes.append(
                f"compared by name although the configuration differs (--any-config), "
                f"{base.label} and {other.label}, {len(mixed)} case(s): {', '.join(mixed)}"
            )
    single = bool(rows) and all(r["n_a"] <= 1 and r["n_b"] <= 1 for r in rows)
    if few and not single:  # one run each is said once (`Comparison.note_once`)
        notes.append(
            f"no verdict for {len(few)} case(s) with fewer than {min_reps} repetitions on a side "
            f"(a bootstrap interval over fewer seeds is not reliable; --reps {min_reps} or more, or "
            f"--min-reps): {', '.join(sorted(few, key=_natural))}"
        )
    table = pl.DataFrame(rows, schema=COLUMNS)
    problems = tuple(p for rs in sets for p in rs.problems)
    return Comparison(
        table,
        mode,
        tuple(s.label for s in sides),
        base.label,
        problems,
        tuple(notes),
        tuple((s.label, s.runs) for s in sides),
    )


def _row(
    m: Metric,
    scenario: str,
    variant: str,
    sides: tuple[str, str, str, str],
    runs_a: pl.DataFrame,
    runs_b: pl.DataFrame,
    tolerance: float,
    resamples: int,
    seed: int,
    min_reps: int,
) -> dict[str, Any] | None:
    """One metric of one cell, or None where the metric applies to no run on either side.
    `sides` is (a, b, controller_a, controller_b)."""
    a, b, cc_a, cc_b = sides
    xa = runs_a.get_column(m.name).drop_nulls().to_numpy()
    xb = runs_b.get_column(m.name).drop_nulls().to_numpy()
    if xa.size == 0 and xb.size == 0:
        return None
    mean_a = float(xa.mean()) if xa.size else None
    mean_b = float(xb.mean()) if xb.size else None
    diff = mean_b - mean_a if mean_a is not None and mean_b is not None else None
    rel = diff / abs(mean_a) if diff is not None and mean_a else None
    rng = _row_rng(seed, (scenario, variant, a, b, cc_a, cc_b, m.name))
    ci = bootstrap_ci(xa, xb, resamples=resamples, rng=rng) if diff is not None else None
    durations = pl.concat([runs_a.get_column("duration_s"), runs_b.get_column("duration_s")]).drop_nulls()
    floor = m.floor_for(float(durations.mean()) if durations.len() else None)  # type: ignore[arg-type]
    return {
        "scenario": scenario,
        "variant": variant,
        "metric": m.name,
        "better": m.better,
        "a": a,
        "b": b,
        "n_a": int(xa.size),
        "n_b": int(xb.size),
        "runs_a": runs_a.height,
        "runs_b": runs_b.height,
        "mean_a": mean_a,
        "mean_b": mean_b,
        "diff": diff,
        "rel_diff": rel,
        "ci_low": ci[0] if ci else None,
        "ci_high": ci[1] if ci else None,
        "effect": cliffs_delta(xa, xb),
        "verdict": judge(
            m.better,
            mean_a,
            mean_b,
            ci,
            tolerance,
            n_a=int(xa.size),
            n_b=int(xb.size),
            min_reps=min_reps,
            floor=floor,
        ),
        "floor": floor,
        "controller_a": cc_a,
        "controller_b": cc_b,
    }


def compare(
    dirs: Sequence[PathArg],
    labels: Sequence[str] | None = None,
    *,
    baseline: str | None = None,
    tolerance: float = 0.05,
    resamples: int = 2000,
    seed: int = 0,
    min_reps: int = MIN_REPS,
    any_config: bool = False,
) -> pl.DataFrame:
    """The comparison of the result sets under `dirs` as one frame, a row per (side compared with
    the baseline, cell, metric); columns `COLUMNS`, documented in docs/compare.md.

    One folder compares its controllers with the baseline controller (`baseline`, else the first
    of `labels`, else the first by name); several folders compare each folder's runs with the
    first's (or `baseline`'s), per (scenario, variant, controller). `tolerance` is the relative
    change below which nothing is flagged, `resamples` the bootstrap's draws, `seed` its random
    seed: the same inputs always give the same frame; `min_reps` and `any_config` are
    `comparison`'s. Raises CompareError (a ValueError) on a
    request that cannot be met; skipped run folders and unmatched cases are in `comparison`'s
    `problems` and `notes`.
    """
    return comparison(
        dirs,
        labels,
        baseline=baseline,
        tolerance=tolerance,
        resamples=resamples,
        seed=seed,
        min_reps=min_reps,
        any_config=any_config,
    ).table
