"""The scorecard: each applicable RFC 8836 requirement judged on a run from RFC 8868 metrics.

A criterion names the requirement it checks, the metric it reads, the thresholds of its verdicts
and where those come from (`docs/scorecard.md` gives the reasoning for each). Verdicts are
`pass`, `warn`, `fail` or `n/a` (the run does not exercise the requirement). Thresholds can be
overridden from a TOML file:

    [delay]
    pass = 150      # ms
    warn = 300

A run is judged from its results folder alone (`summary.json`, `scenario.toml`,
`timeseries.parquet`), so a suite's runs can be scored long after they ran.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import polars as pl

from rtcbench import analysis
from rtcbench.documents import read_toml
from rtcbench.results import InputError, PathArg, read_summary, read_table, run_folders

__all__ = [
    "CRITERIA",
    "Criterion",
    "Score",
    "ScorecardError",
    "load_thresholds",
    "matrix",
    "per_controller",
    "read_run",
    "run_folders",
    "score_table",
    "score_view",
]
"""`run_folders` is `results.run_folders`: the runs a folder holds, complete or not."""

Verdict = Literal["pass", "warn", "fail", "n/a"]
VERDICTS: tuple[Verdict, ...] = ("pass", "warn", "fail", "n/a")
US = 1_000_000


class ScorecardError(InputError):
    """A thresholds file or a results folder the scorecard cannot use; the message names it."""


@dataclass(frozen=True)
class Criterion:
    """One requirement check. `higher_is_better` says which side of the thresholds passes: with
    it, value ≥ pass passes and value ≥ warn warns; without, value ≤ pass passes."""

    id: str
    requirement: str
    title: str
    metric: str
    unit: str
    pass_at: float
    warn_at: float
    higher_is_better: bool
    source: str

    def judge(self, value: float | None) -> Verdict:
        if value is None or math.isnan(value):
            return "fail"
        sign = 1.0 if self.higher_is_better else -1.0
        if sign * value >= sign * self.pass_at:
            return "pass"
        if sign * value >= sign * self.warn_at:
            return "warn"
        return "fail"


CRITERIA: tuple[Criterion, ...] = (
    Criterion(
        "delay",
        "R1, R1.B",
        "low self-inflicted delay",
        "media queuing delay p95",
        "ms",
        100.0,
        200.0,
        False,
        "Guerrero Viveros 2019 §6.1 req. 1: end-to-end delay below 100 ms (the delay the flow "
        "adds); warn to 2×",
    ),
    Criterion(
        "loss",
        "R1",
        "useful rate without self-inflicted loss",
        "media loss ratio",
        "%",
        2.0,
        10.0,
        False,
        "draft-ietf-rmcat-gcc-02 §6: below 2 % is no congestion, above 10 % is congestion",
    ),
    Criterion(
        "reaction",
        "R1.C",
        "quick reaction to a capacity drop",
        "slowest reaction to a capacity drop",
        "s",
        1.5,
        3.0,
        False,
        "RFC 8836 R1.C and Guerrero Viveros 2019 §6.1 req. 1b: about 1 s (on a 1 s mean rate, hence 1.5)",
    ),
    Criterion(
        "startup",
        "R4",
        "fast convergence at start",
        "time to reach its fair share of the bottleneck (convergence time)",
        "s",
        10.0,
        30.0,
        False,
        "Guerrero Viveros 2019 §6.1 req. 4; De Cicco et al. 2013 slides call GCC's 30 s "
        "transient after a step slow: 30 s fails",
    ),
    Criterion(
        "stability",
        "R5 (Guerrero Viveros 2019 req. 5)",
        "stable rate after convergence",
        "median coefficient of variation of the 1 s video send rate per phase, after convergence",
        "",
        0.15,
        0.3,
        False,
        "Guerrero Viveros 2019 Tables 6.1-6.3: std about 0.1 Mbit/s on 1.2-1.8 Mbit/s means (0.06-0.12)",
    ),
    Criterion(
        "self-fairness",
        "R2, R2.A",
        "fair to flows of its own kind",
        "largest rate ratio between media flows",
        "×",
        3.0,
        6.0,
        False,
        "RFC 8868 §4.1's band: rates of equal flows within [1/3, 3]; warn to 6",
    ),
    Criterion(
        "not-starved",
        "R3, RFC 8867 §5.6",
        "not starved by competing traffic",
        "lowest video rate over its minimum",
        "×",
        1.0,
        0.5,
        True,
        "RFC 8867 §5.6: the media flow is not starved below its minimum rate",
    ),
    Criterion(
        "tcp-share",
        "R3",
        "neither starves nor is starved by TCP",
        "media rate over TCP rate, worse side",
        "×",
        3.0,
        10.0,
        False,
        "RFC 8868 [1/3, 3] band between media and TCP; beyond 10:1 one side is starved",
    ),
    Criterion(
        "l-delay",
        "RFC 9330 §3",
        "L4S: a low queue for L4S traffic",
        "DualPI2 L-queue sojourn p99 (10 ms samples)",
        "ms",
        5.0,
        10.0,
        False,
        "RFC 9330 §1: L4S aims at a queuing delay of about 1 ms on average and under a few ms at the "
        "99th percentile; 5 ms passes, twice that warns (docs/l4s.md)",
    ),
    Criterion(
        "marks-per-rtt",
        "RFC 9332 §2.1",
        "L4S: media answer marks as a scalable sender",
        "L4S video's CE marks per round trip, as a factor from 2",
        "×",
        2.0,
        4.0,
        False,
        "RFC 9332 §2.1 and draft-ietf-ccwg-rfc8298bis-screamv2-01 §7: a scalable sender settles near "
        "two marks per round trip; within 2× of it (1-4) passes, within 4× warns",
    ),
    Criterion(
        "l4s-share",
        "RFC 9332 §2.1",
        "L4S: media take the share the coupling gives them",
        "L4S video's rate over the others', measured over predicted by the coupling",
        "×",
        0.8,
        0.5,
        True,
        "RFC 9332 §2.1: the coupling gives a scalable flow about the rate of a Reno-friendly one "
        "(docs/l4s.md, 'Coupling'); 80 % of the predicted balance passes, half warns",
    ),
    Criterion(
        "classic-share",
        "RFC 9330 §5.2",
        "L4S: classic flows keep their share",
        "classic flows' share beside the L4S video, measured over predicted by the coupling (worst period)",
        "×",
        0.8,
        0.6,
        True,
        "RFC 9330 §5.2: L4S traffic must not starve classic traffic; the DualQ coupling sets the "
        "balance (docs/l4s.md); within 20 % of its share passes",
    ),
    Criterion(
        "feedback",
        "R8.B",
        "modest feedback overhead",
        "feedback rate over media rate",
        "%",
        5.0,
        10.0,
        False,
        "RFC 3550 §6.2: RTCP takes 5 % of the session bandwidth",
    ),
)
BY_ID = {c.id: c for c in CRITERIA}


def load_thresholds(path: Path) -> tuple[Criterion, ...]:
    """The built-in criteria with the thresholds of a TOML file applied."""
    table = read_toml(path, ScorecardError)
    out = dict(BY_ID)
    for cid, fields in table.items():
        if cid not in BY_ID:
            raise ScorecardError(f"{path}: unknown criterion [{cid}]; allowed: {', '.join(BY_ID)}")
        if not isinstance(fields, dict):
            raise ScorecardError(f"{path}: [{cid}] must be a table with pass and/or warn")
        base = BY_ID[cid]
        limits = {"pass": base.pass_at, "warn": base.warn_at}
        for key, value in fields.items():
            if key not in limits:
                raise ScorecardError(f"{path}: [{cid}] {key}: unknown field; allowed: pass, warn")
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ScorecardError(f"{path}: [{cid}] {key} = {value!r}: must be a number")
            limits[key] = float(value)
        c = replace(base, pass_at=limits["pass"], warn_at=limits["warn"])
        ordered = c.pass_at >= c.warn_at if c.higher_is_better else c.pass_at <= c.warn_at
        if not ordered:
            side = "≥" if c.higher_is_better else "≤"
            raise ScorecardError(f"{path}: [{cid}] needs pass {side} warn; got {c.pass_at} and {c.warn_at}")
        out[cid] = c
    return tuple(out.values())


@dataclass(frozen=True)
class Score:
    """One criterion's verdict on one run."""

    criterion: Criterion
    verdict: Verdict
    value: float | None
    note: str = ""


@dataclass(frozen=True)
class RunView:
    """What the criteria read from one run."""

    summary: dict[str, Any]
    scenario: dict[str, Any]
    timeseries: pl.DataFrame | None


def _media(view: RunView) -> list[dict[str, Any]]:
    return [f for f in view.summary["flows"] if f["kind"] in ("video", "audio")]


def _video(view: RunView) -> list[dict[str, Any]]:
    return [f for f in view.summary["flows"] if f["kind"] == "video"]


def _competing(view: RunView) -> bool:
    return bool(view.summary.get("cross_traffic")) or len(_video(view)) > 1


def _random_loss(view: RunView) -> bool:
    return any(link.get("loss") for link in view.scenario.get("links", []))


def _delay(view: RunView) -> tuple[float | None, str]:
    values = [f["qdelay_p95_ms"] for f in _media(view) if f.get("qdelay_p95_ms") is not None]
    return (max(values), "") if values else (None, "no media packet arrived")


def _loss(view: RunView) -> tuple[float | None, str]:
    if _random_loss(view):
        return None, "n/a: the path loses packets at random"
    sent = sum(f["packets_sent"] for f in _media(view))
    lost = sum(f["packets_dropped"] for f in _media(view))
    return (100.0 * lost / sent, "") if sent else (None, "no media packet sent")


def _reaction(view: RunView) -> tuple[float | None, str]:
    """Slowest time for the single video flow's 1 s mean sending rate to fall to the new
    capacity after each drop of at least 20 %. The sending rate, because it is what the
    controller decides: the receive rate cannot exceed the capacity, so it would show no
    reaction time at all."""
    video = _video(view)
    if len(video) != 1 or _competing(view) or view.timeseries is None:
        return None, "n/a: only for a single call alone on its path"
    bottleneck = video[0].get("bottleneck") or next(
        (f.get("bottleneck") for f in view.summary["meta"]["flows"] if f["id"] == video[0]["id"]), None
    )
    phases = [p for p in view.summary["phases"] if p["link"] == bottleneck]
    worst: float | None = None
    drops = 0
    for before, after in itertools.pairwise(phases):
        if not after["capacity_bps"] < 0.8 * before["capacity_bps"]:
            continue
        drops += 1
        t = analysis.time_to_reach(
            view.timeseries,
            video[0]["id"],
            round(after["start_s"] * US),
            after["capacity_bps"],
            column="send_rate_bps",
            below=True,
            smooth_us=US,
        )
        span = after["end_s"] - after["start_s"]
        t = span if t is None else t
        worst = t if worst is None else max(worst, t)
    return (worst, "") if drops else (None, "n/a: no capacity drop")


def _call_of(view: RunView, flow: dict[str, Any]) -> dict[str, Any]:
    """The `meta.calls` entry of the call that sends `flow` (empty for cross traffic)."""
    flows = {f["id"]: f for f in view.summary["meta"]["flows"]}
    call = flows.get(flow["id"], {}).get("call")
    return next((c for c in view.summary["meta"]["calls"] if c["id"] == call), {})


def _call_start_s(view: RunView, flow: dict[str, Any]) -> float:
    """When the call that sends `flow` starts (s), as the simulator resolved it."""
    return float(_call_of(view, flow).get("start_s", 0.0))


def _startup(view: RunView) -> tuple[float | None, str]:
    """The slowest video flow's convergence to its fair share, counted from its own start
    (`analysis.convergence_time`)."""
    video = _video(view)
    if not video:
        return None, "n/a: no video"
    unseen = {int(f["id"]) for f in view.summary["meta"]["flows"] if f.get("bottleneck") is None}
    times = []
    for f in video:
        t = f.get("convergence_time_s")
        if t is None and int(f["id"]) in unseen:
            # A run read from an RTC event log: its path was inferred, no link was observed.
            return None, f"n/a: {f['name']} crossed no link the run observed, so no fair share is known"
        if t is None:
            return math.inf, f"{f['name']} never reached its fair share"
        times.append(t)
    return max(times), ""


STABILITY_MIN_S = 5.0
"""Stability needs this much of a phase left after the flow converged in it."""


def _stability(view: RunView) -> tuple[float | None, str]:
    """Median, over the phases in which a video flow converged to its fair share with at least
    5 s left, of its send rate's coefficient of variation over 1 s means from then on: the
    stability RFC 8836 R5 asks for is that of a converged flow."""
    ts = view.timeseries
    if ts is None:
        return None, "n/a: no timeseries.parquet"
    cvs = []
    for f in _video(view):
        start = _call_start_s(view, f)
        for p in view.summary["phases"]:
            here = next((g for g in p["flows"] if g["id"] == f["id"]), None)
            converged = here.get("convergence_time_s") if here is not None else None
            if converged is None:
                continue
            a = max(p["start_s"], start) + converged
            if p["end_s"] - a < STABILITY_MIN_S:
                continue
            w = ts.filter(
                (pl.col("flow") == f["id"])
                & pl.col("t_us").is_between(round(a * US), round(p["end_s"] * US), "left")
            )
            if w.height == 0:
                continue
            per_second = w.group_by((pl.col("t_us") // US).alias("s")).agg(
                pl.col("send_rate_bps").fill_null(0).mean()
            )
            rates = per_second["send_rate_bps"]
            mean = rates.mean()
            if isinstance(mean, float) and mean > 0:
                std = rates.std(ddof=0)
                cvs.append(float(std) / mean if isinstance(std, float) else 0.0)
    if not cvs:
        return None, "n/a: the video never converged with 5 s of a phase left"
    cvs.sort()
    return cvs[len(cvs) // 2], ""


def _self_fairness(view: RunView) -> tuple[float | None, str]:
    if len(_video(view)) < 2:
        return None, "n/a: one video flow"
    # A conference's calls take its `call` settings, priority included (docs/scenarios.md).
    settings = [
        *view.scenario.get("calls", []),
        *(c.get("call", {}) for c in view.scenario.get("conferences", [])),
    ]
    if any(c.get("priority") not in (None, 1, 1.0) for c in settings):
        return None, "n/a: the calls have different priorities (RFC 8867 §6.1)"
    ratio = view.summary["fairness"]["run"].get("max_rate_ratio")
    return (ratio, "") if ratio is not None else (math.inf, "a flow got nothing")


def _video_minimum(view: RunView, flow: dict[str, Any]) -> float | None:
    """The minimum rate of the video encoder that sends `flow` (bit/s), defaults applied."""
    minimum = _call_of(view, flow).get("video_min_bps")
    return None if minimum is None else float(minimum)


def _not_starved(view: RunView) -> tuple[float | None, str]:
    if not _competing(view):
        return None, "n/a: no competing traffic"
    ratios = []
    for f in _video(view):
        minimum = _video_minimum(view, f)
        if minimum:
            ratios.append(f["mean_recv_rate_bps"] / minimum)
    return (min(ratios), "") if ratios else (None, "n/a: no video minimum rate")


def _tcp_share(view: RunView) -> tuple[float | None, str]:
    tcp = [c for c in view.summary.get("cross_traffic", []) if c["kind"] == "tcp"]
    if not tcp:
        return None, "n/a: no TCP flow"
    media = sum(f["mean_recv_rate_bps"] for f in _video(view))
    tcp_rate = sum(c["throughput_bps"] for c in tcp)
    if media <= 0 or tcp_rate <= 0:
        return math.inf, "one side got nothing"
    return max(media / tcp_rate, tcp_rate / media), ""


def _l4s_links(view: RunView) -> list[dict[str, Any]]:
    """The DualPI2 bottlenecks whose L queue served packets (`analysis.l4s`)."""
    return [q for q in view.summary.get("l4s", []) if q.get("l_sojourn_p99_ms") is not None]


def _l_delay(view: RunView) -> tuple[float | None, str]:
    links = _l4s_links(view)
    if not links:
        return None, "n/a: no DualPI2 bottleneck with L4S traffic"
    return max(float(q["l_sojourn_p99_ms"]) for q in links), ""


def _marks_per_rtt(view: RunView) -> tuple[float | None, str]:
    media = [m for q in _l4s_links(view) for m in q.get("media", []) if m.get("ce_per_rtt") is not None]
    if not media:
        return None, "n/a: no L4S video flow"
    factors = [
        max(m["ce_per_rtt"] / 2.0, 2.0 / m["ce_per_rtt"]) if m["ce_per_rtt"] > 0 else math.inf for m in media
    ]
    return max(factors), ""


def _l4s_periods(view: RunView) -> list[dict[str, Any]]:
    return [p for q in _l4s_links(view) for p in q.get("periods", [])]


def _l4s_share(view: RunView) -> tuple[float | None, str]:
    periods = _l4s_periods(view)
    if not periods:
        return None, "n/a: no L4S video beside other traffic"
    return min(p["measured_ratio"] / p["predicted_ratio"] for p in periods), ""


def _classic_share(view: RunView) -> tuple[float | None, str]:
    periods = [p for p in _l4s_periods(view) if "classic_share_predicted" in p]
    if not periods:
        return None, "n/a: no classic flow beside L4S video"
    return min(p["classic_share_measured"] / p["classic_share_predicted"] for p in periods), ""


def _feedback(view: RunView) -> tuple[float | None, str]:
    share = view.summary.get("feedback_overhead", {}).get("share_of_media")
    return (100.0 * share, "") if share is not None else (None, "n/a: no feedback")


MEASURES: dict[str, Callable[[RunView], tuple[float | None, str]]] = {
    "delay": _delay,
    "loss": _loss,
    "reaction": _reaction,
    "startup": _startup,
    "stability": _stability,
    "self-fairness": _self_fairness,
    "not-starved": _not_starved,
    "tcp-share": _tcp_share,
    "l-delay": _l_delay,
    "marks-per-rtt": _marks_per_rtt,
    "l4s-share": _l4s_share,
    "classic-share": _classic_share,
    "feedback": _feedback,
}


def score_view(view: RunView, criteria: Sequence[Criterion] = CRITERIA) -> list[Score]:
    """Every criterion's verdict on one run."""
    out = []
    for c in criteria:
        value, note = MEASURES[c.id](view)
        if value is None and note.startswith("n/a"):
            out.append(Score(c, "n/a", None, note.removeprefix("n/a: ")))
        else:
            out.append(Score(c, c.judge(value), value, note))
    return out


def read_run(folder: Path, root: Path | None = None) -> RunView:
    """A run's results folder, as the criteria read it; `InputError` (a `ScorecardError` for a
    missing scenario or time series) naming what is wrong. With `root`, the folder given, a run
    folder reached through a link below it is one (`results.read_summary`)."""
    summary = read_summary(folder, root=root)
    scenario = read_toml(folder / "scenario.toml", ScorecardError, strerror_only=True)
    ts_path = folder / "timeseries.parquet"
    return RunView(summary, scenario, read_table(ts_path) if ts_path.is_file() else None)


def score_table(
    folders: Iterable[PathArg],
    criteria: Sequence[Criterion] = CRITERIA,
    problems: list[str] | None = None,
    root: Path | None = None,
) -> pl.DataFrame:
    """One row per (run, criterion): the long table behind every scorecard view. With
    `problems`, a folder that cannot be read is reported there and skipped instead of raising;
    with `root` (the folder `folders` were found in, `run_folders`), so is one reached through a
    link below it."""
    rows = []
    for folder in map(Path, folders):
        try:
            view = read_run(folder, root)
            scores = score_view(view, criteria)
        except InputError as e:
            if problems is None:
                raise
            problems.append(str(e))
            continue
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
            # A summary that parses but does not hold what it should: edited or from another tool.
            if problems is None:
                raise
            problems.append(f"{folder / 'summary.json'}: malformed ({type(e).__name__}: {e})")
            continue
        s = view.summary
        for score in scores:
            c = score.criterion
            rows.append(
                {
                    "run": str(folder),
                    "scenario": s["scenario"],
                    "variant": s["variant"],
                    "controller": s["controller"],
                    "seed": s["seed"],
                    "criterion": c.id,
                    "requirement": c.requirement,
                    "verdict": score.verdict,
                    "value": None if score.value is None or math.isinf(score.value) else score.value,
                    "unit": c.unit,
                    "pass_at": c.pass_at,
                    "warn_at": c.warn_at,
                    "higher_is_better": c.higher_is_better,
                    "note": score.note,
                    "source": c.source,
                }
            )
    schema = {
        "run": pl.String,
        "scenario": pl.String,
        "variant": pl.String,
        "controller": pl.String,
        "seed": pl.Int64,
        "criterion": pl.String,
        "requirement": pl.String,
        "verdict": pl.String,
        "value": pl.Float64,
        "unit": pl.String,
        "pass_at": pl.Float64,
        "warn_at": pl.Float64,
        "higher_is_better": pl.Boolean,
        "note": pl.String,
        "source": pl.String,
    }
    return pl.DataFrame(rows, schema=schema)


def matrix(table: pl.DataFrame) -> pl.DataFrame:
    """Test case × controller: counts of each verdict over criteria, variants and repetitions,
    and the worst verdict."""
    rank = {"fail": 3, "warn": 2, "pass": 1, "n/a": 0}
    judged = table.with_columns(pl.col("verdict").replace_strict(rank, return_dtype=pl.Int8).alias("rank"))
    return (
        judged.group_by("scenario", "controller")
        .agg(
            (pl.col("verdict") == "pass").sum().alias("pass"),
            (pl.col("verdict") == "warn").sum().alias("warn"),
            (pl.col("verdict") == "fail").sum().alias("fail"),
            pl.col("rank").max().alias("rank"),
        )
        .with_columns(
            pl.col("rank")
            .replace_strict({v: k for k, v in rank.items()}, return_dtype=pl.String)
            .alias("worst")
        )
        .drop("rank")
        .sort("scenario", "controller")
    )


def per_controller(table: pl.DataFrame) -> pl.DataFrame:
    """Per controller: verdict counts over every applicable check, and the share that passed."""
    judged = table.filter(pl.col("verdict") != "n/a")
    return (
        judged.group_by("controller")
        .agg(
            (pl.col("verdict") == "pass").sum().alias("pass"),
            (pl.col("verdict") == "warn").sum().alias("warn"),
            (pl.col("verdict") == "fail").sum().alias("fail"),
        )
        .with_columns(
            (pl.col("pass") / (pl.col("pass") + pl.col("warn") + pl.col("fail"))).alias("pass_share")
        )
        .sort("controller")
    )
