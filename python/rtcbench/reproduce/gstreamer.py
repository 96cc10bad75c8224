"""Sjölund and Kevo 2022 on its own kind of stack: the seed's three tests (`seed001-staircase`,
`seed001-sudden-reduction`, `seed001-sweden-to-china`) with `gcc`, `nada` and `scream`, five runs
each, in GStreamer mode (`--mode gstreamer`: rtcbench's controllers on GStreamer's x264 encoder,
fed the snow pattern the seed used, docs/gstreamer.md), beside the simulator's runs of the same
cases and controllers (docs/reproduction.md, "The seed's own stack").

    result = reproduce_gstreamer(Path("results/reproduction-gstreamer"))  # about 2 h of calls

The seed's box plots (§5.2) are over five runs of each test: per run, the link utilisation, the
latency, the responsiveness (`measures.Responsiveness`, the seed's own definition) and the loss.
Each run is measured once, as it is made or found complete in `out` (runs are reused, as
`rtcbench reproduce` does); a GStreamer run that was not a fair measurement (the relay missed its
timing, or an encoder did not keep up: `run_problem`) is set aside in `<out>/rejected/` and run
again, up to `attempts` runs; the last is kept and marked.

Written to `out`, each by rename: `gstreamer-runs.parquet` (`RUNS_SCHEMA`, one row per run and
measure), `gstreamer.parquet` (`ROWS_SCHEMA`, the seed's value, GStreamer's median and range,
the simulator's mean, per case, measure and controller), `gstreamer-findings.parquet`
(`FINDINGS_SCHEMA`, the seed's claims across the three algorithms judged on each),
`gstreamer-curves.parquet` (`CURVES_SCHEMA`, every run's output, capacity, delay and loss per
second, for the average curves), the figures (`figures`) and `gstreamer.md` (`markdown`).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from rtcbench.identity import GSTREAMER, GSTREAMER_CC, SIMULATE
from rtcbench.reproduce import SIM_SEEDS, _browser_run, _mean_sd
from rtcbench.reproduce.experiments import Case, Finding, Row, table, within
from rtcbench.reproduce.measures import VIDEO, FlowStat, Measure, Responsiveness
from rtcbench.reproduce.report import _yes
from rtcbench.results import InputError, write_parquet_atomic
from rtcbench.runner import RunResult
from rtcbench.scenarios import Variant, resolve
from rtcbench.suite import RunProgress, _Job, batch_folder, execute_plan
from rtcbench.testbed.timing import invalid_line

__all__ = [
    "ALL_CONTROLLERS",
    "CONTROLLERS",
    "CURVES",
    "CURVES_SCHEMA",
    "DRAFT_GCC",
    "FINDINGS",
    "FINDINGS_SCHEMA",
    "GCC_ROLES",
    "MEASURES",
    "ROWS",
    "ROWS_SCHEMA",
    "RUNS",
    "RUNS_SCHEMA",
    "SEEDS",
    "SIMULATED_AS",
    "STACK_SETS",
    "TABLE",
    "GStreamerReproduction",
    "Metric",
    "reproduce_gstreamer",
    "run_problem",
]

TABLE = "001-5.3"
"""The seed table whose cases and rows this runs (`experiments.table`)."""
CONTROLLERS = ("gcc", "nada", "scream")
"""The seed's three algorithms."""
DRAFT_GCC = GSTREAMER_CC
"""GStreamer's own GCC, `rtpgccbwe`: like the seed's GCC (its §4.5: "a freestanding GCC
implementation", behind the 2016 draft, draft-ietf-rmcat-gcc-02) an implementation of the draft,
where rtcbench's `gcc` follows today's libwebrtc. Run on GStreamer's own RTP stack; the simulator
runs rtcbench's port of the draft beside it (`SIMULATED_AS`)."""
SIMULATED_AS = {DRAFT_GCC: "gcc-draft"}
"""The controller the simulator runs for a reproduction controller it cannot run itself."""
ALL_CONTROLLERS = (*CONTROLLERS, DRAFT_GCC)
"""What `reproduce --stack gstreamer` runs by default: the seed's three, and GCC as a draft-02
implementation."""
GCC_ROLES = {
    "gcc": "libwebrtc's GoogCC (rtcbench gcc)",
    DRAFT_GCC: "draft-02 GCC (rtpgccbwe; simulated: gcc-draft)",
}
"""Who plays the seed's GCC when its claims are judged: each claim is judged once per role."""
SEEDS = (1, 2, 3, 4, 5)
"""The seed ran each test five times in succession (§5.1.1)."""
STACK_SETS = ("calls.0.video.codec=h264", "calls.0.video.picture=snow")
"""What the GStreamer runs add to each case: the seed's `videotestsrc pattern=snow`, coded by
x264. The seed names no codec; libvpx cannot code snow at these rates (it keeps its target by
coding about one frame a second: docs/gstreamer.md), x264 keeps 30 frames a second. The simulator
runs the plain case: its model ignores the picture and models VP8 only."""

RUNS = "gstreamer-runs.parquet"
ROWS = "gstreamer.parquet"
FINDINGS = "gstreamer-findings.parquet"
CURVES = "gstreamer-curves.parquet"

STACKS = ("gstreamer", "simulator")


@dataclass(frozen=True)
class Metric:
    """One number measured on every run of a case: the seed table's row (`row`: its key, label,
    measure, unit and the seed's value, for `gcc`) or one of the seed's box plots (§5.2)."""

    key: str
    label: str
    case: Case
    measure: Measure
    unit: str
    box: str = ""
    """Which of the seed's box plots it is (utilisation, latency, responsiveness, loss), or ""."""
    seed_gcc: float | None = None
    slack: float = 0.0
    tolerance: float = 0.15

    @classmethod
    def of(cls, row: Row, box: str = "") -> Metric:
        return cls(
            row.key, row.label, row.case, row.measure, row.unit, box, row.seed, row.slack, row.tolerance
        )

    def agrees(self, value: float | None, reference: float | None) -> bool | None:
        return within(value, reference, self.slack, self.tolerance)


_WINDOWS = {"staircase": 200.0, "sudden": 120.0, "china": 120.0}


def _metrics() -> tuple[Metric, ...]:
    t = table(TABLE)
    rows = {r.key: r for r in t.rows}
    out: list[Metric] = []
    for prefix, end in _WINDOWS.items():
        case = rows[f"{prefix}.u"].case
        test = rows[f"{prefix}.u"].label.split(":")[0]
        out += [
            Metric.of(rows[f"{prefix}.u"], "utilisation"),
            Metric(
                f"{prefix}.rtt",
                f"{test}: mean RTT, 0-{end:g} s",
                case,
                FlowStat(VIDEO, 0, end, "rtt_mean_ms", scale=1.0),
                "ms",
                "latency",
                slack=10.0,
            ),
            Metric(
                f"{prefix}.response",
                f"{test}: responsiveness (the seed's §5.2 measure)",
                case,
                Responsiveness(VIDEO, 0, end),
                "s",
                "responsiveness",
                slack=1.0,
            ),
            Metric(
                f"{prefix}.loss",
                f"{test}: packet loss, 0-{end:g} s",
                case,
                FlowStat(VIDEO, 0, end, "loss_ratio", scale=100.0),
                "%",
                "loss",
                slack=0.5,
            ),
        ]
    out += [Metric.of(r) for r in t.rows if r.key.startswith("sudden.climb")]
    return tuple(out)


MEASURES: tuple[Metric, ...] = _metrics()
"""Every number measured on each run: per test the seed's four box plots (utilisation as the seed
table's row; the mean RTT, the flow's as rtcbench measures it, where the seed took the mean of each
statistics cycle's minimum RTT; the seed's responsiveness; the loss), and the seed table's three
times to climb back after the sudden reduction's dips."""

RUNS_SCHEMA = {
    "stack": pl.String,
    "case": pl.String,
    "controller": pl.String,
    "seed": pl.Int32,
    "key": pl.String,
    "value": pl.Float64,
    "fair": pl.Boolean,
    "problem": pl.String,
    "cpu_cores": pl.Float64,
    "frames_encoded": pl.Int64,
    "frames_drawn": pl.Int64,
    "encode_p95_ms": pl.Float64,
}
"""One row per run and measure. `fair`, `problem`: whether a GStreamer run was a fair measurement
(`run_problem`), and why not (simulated runs are always fair); the encoder's CPU cores, frames
and encoding latency p95 (GStreamer runs: `summary["gstreamer"]["encoders"]`)."""

ROWS_SCHEMA = {
    "key": pl.String,
    "label": pl.String,
    "case": pl.String,
    "box": pl.String,
    "unit": pl.String,
    "controller": pl.String,
    "seed": pl.Float64,
    "gstreamer": pl.Float64,
    "gstreamer_min": pl.Float64,
    "gstreamer_max": pl.Float64,
    "gstreamer_runs": pl.Int32,
    "gstreamer_unfair": pl.Int32,
    "simulated": pl.Float64,
    "simulated_sd": pl.Float64,
    "simulated_runs": pl.Int32,
    "gstreamer_agrees_with_seed": pl.Boolean,
    "simulated_agrees_with_gstreamer": pl.Boolean,
}
"""Per measure and controller: the seed's value (printed for `gcc`'s staircase utilisation only),
GStreamer's median over its runs (the seed's box plots are of five runs; the median is their
line) with the smallest and largest, the simulator's mean and standard deviation over its seeds.
Agreement: within 15 % of the second value or the measure's slack (0.05 of utilisation, 10 ms,
1 s, 0.5 % of loss)."""

FINDINGS_SCHEMA = {
    "finding": pl.String,
    "section": pl.String,
    "gcc": pl.String,
    "gstreamer": pl.Boolean,
    "simulated": pl.Boolean,
}

CURVES_SCHEMA = {
    "stack": pl.String,
    "case": pl.String,
    "controller": pl.String,
    "seed": pl.Int32,
    "t_s": pl.Float64,
    "target_kbps": pl.Float64,
    "recv_kbps": pl.Float64,
    "capacity_kbps": pl.Float64,
    "qdelay_ms": pl.Float64,
    "loss_pct": pl.Float64,
}
"""Every run's video flow per second (the time series' windows averaged into 1 s bins): the
controller's target (the seed's "algorithm output"), the received rate, the capacity, the queuing
delay and the loss, from which the figures draw each controller's average curve (the seed's
Figures 5.1, 5.3 and 5.5: linear interpolation of each run, then their mean; here the bins are
already common)."""


def _v(values: Mapping[str, float | None], key: str, cc: str) -> float:
    value = values[f"{key}@{cc}"]
    if value is None:
        raise KeyError(key)
    return value


def _most(values: Mapping[str, float | None], key: str, cc: str) -> bool:
    return all(_v(values, key, cc) > _v(values, key, other) for other in CONTROLLERS if other != cc)


def _least(values: Mapping[str, float | None], key: str, cc: str) -> bool:
    return all(_v(values, key, cc) < _v(values, key, other) for other in CONTROLLERS if other != cc)


FINDINGS_OF_THE_SEED: tuple[tuple[str, Finding], ...] = (
    ("§5.3.1, §5.3.2", Finding(
        "NADA uses the most of the link over the staircase and in the sudden reduction",
        lambda v: _most(v, "staircase.u", "nada") and _most(v, "sudden.u", "nada"))),
    ("§5.3.2", Finding(
        "SCReAM uses the least of the link in the sudden reduction",
        lambda v: _least(v, "sudden.u", "scream"))),
    ("§5.3.3", Finding(
        "from Sweden to China GCC uses the most of the link: NADA and SCReAM fail to use it",
        lambda v: _most(v, "china.u", "gcc"))),
    ("§5.3.1", Finding(
        "over the staircase GCC uses 77-79 % of the link (0.72-0.84 here)",
        lambda v: 0.72 <= _v(v, "staircase.u", "gcc") <= 0.84)),
    ("§5.3.2, §5.4.3", Finding(
        "GCC is the slowest to respond in the sudden reduction",
        lambda v: _most(v, "sudden.response", "gcc"))),
    ("§5.4.3", Finding(
        "GCC takes over 6 s to climb back after at least one dip of the sudden reduction",
        lambda v: max(_v(v, f"sudden.climb{i}", "gcc") for i in (1, 2, 3)) > 6)),
    ("§5.4.3", Finding(
        "NADA responds in under 2 s in the sudden reduction",
        lambda v: _v(v, "sudden.response", "nada") < 2)),
    ("§5.3.2", Finding(
        "GCC has the largest latency and loss in the sudden reduction",
        lambda v: _most(v, "sudden.rtt", "gcc") and _most(v, "sudden.loss", "gcc"))),
    ("§5.3.1, §6", Finding(
        "SCReAM keeps the lowest latency over the staircase and in the sudden reduction",
        lambda v: _least(v, "staircase.rtt", "scream") and _least(v, "sudden.rtt", "scream"))),
)  # fmt: skip
"""The seed's claims across its three algorithms (the sections that make them), judged on
GStreamer's medians and on the simulator's means. The seed printed one number (GCC's 77-79 % on
the staircase); the others are read from its text and box plots."""


def run_problem(summary: Mapping[str, Any], folder: Path | None = None) -> str | None:
    """Why a GStreamer run is not a fair measurement of the network, or None: the relay missed its
    timing goal, or a call's encoder did not keep up (`emulation.gstreamer.judge`). The run's
    `folder` is not read: the summary says it all."""
    real = summary.get("gstreamer") or {}
    if (invalid := invalid_line(real)) is not None:
        return invalid
    if real.get("cpu_limited"):
        return f"CPU-limited: the encoder of {', '.join(real['cpu_limited'])} did not keep up"
    return None


@dataclass
class GStreamerReproduction:
    """What `reproduce_gstreamer` measured: the tables (schemas above), where they are, and the
    wall time of the runs made now."""

    out: Path
    runs: pl.DataFrame
    rows: pl.DataFrame
    findings: pl.DataFrame
    curves: pl.DataFrame
    wall_s: float
    problems: dict[str, str]
    """GStreamer runs kept although not fair measurements (case · controller · seed: why)."""
    versions: list[str]
    """The GStreamer versions the stack's runs recorded (one, unless `out` mixes runs)."""


def _variant(case: Case, sets: Sequence[str]) -> Variant:
    variants = resolve(case.scenario, [*case.sets, *sets])
    if len(variants) != 1:
        raise InputError(f"reproduction case {case.label()} names {len(variants)} variants")
    return variants[0]


def _measure(run: RunResult, case: Case) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for m in MEASURES:
        if m.case == case:
            value = m.measure(run)
            out[m.key] = None if value is None or not math.isfinite(value) else float(value)
    return out


def _curves(run: RunResult) -> pl.DataFrame:
    """The run's video flow per second (`CURVES_SCHEMA`'s measured columns)."""
    (fid,) = VIDEO.ids(run)
    return (
        run.timeseries.filter(pl.col("flow") == fid)
        .with_columns((pl.col("t_us") // 1_000_000).cast(pl.Float64).alias("t_s"))
        .group_by("t_s")
        .agg(
            (pl.col("target_bps").mean() / 1e3).alias("target_kbps"),
            (pl.col("recv_rate_bps").mean() / 1e3).alias("recv_kbps"),
            (pl.col("capacity_bps").mean() / 1e3).alias("capacity_kbps"),
            pl.col("qdelay_ms").mean().alias("qdelay_ms"),
            (pl.col("loss_ratio").mean() * 100.0).alias("loss_pct"),
        )
        .sort("t_s")
    )


def _encoder(summary: Mapping[str, Any]) -> dict[str, Any]:
    encoders = (summary.get("gstreamer") or {}).get("encoders") or {}
    e = next(iter(encoders.values()), None)
    if e is None:
        return {"cpu_cores": None, "frames_encoded": None, "frames_drawn": None, "encode_p95_ms": None}
    return {
        "cpu_cores": e.get("cpu_cores"),
        "frames_encoded": e.get("encoded_frames"),
        "frames_drawn": e.get("source_frames"),
        "encode_p95_ms": (e.get("latency_ms") or {}).get("p95"),
    }


def table_rows(runs: pl.DataFrame) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """`ROWS_SCHEMA` and `FINDINGS_SCHEMA` rows from `RUNS_SCHEMA` rows: GStreamer's median over
    its fair runs (all its runs if none was fair), the simulator's mean."""
    rows: list[dict[str, Any]] = []
    by_stack: dict[str, dict[str, float | None]] = {stack: {} for stack in STACKS}
    present = set(runs.get_column("controller").unique())
    for m in MEASURES:
        for cc in (c for c in ALL_CONTROLLERS if c in present):
            these = runs.filter((pl.col("key") == m.key) & (pl.col("controller") == cc))
            g = these.filter(pl.col("stack") == "gstreamer")
            fair = g.filter(pl.col("fair"))
            kept = fair if fair.height else g
            gv = [float(x) for x in kept.get_column("value").drop_nulls()]
            sm, sd, sn = _mean_sd(these.filter(pl.col("stack") == "simulator").get_column("value").to_list())
            gm = statistics.median(gv) if gv else None
            seed = m.seed_gcc if cc in GCC_ROLES else None
            by_stack["gstreamer"][f"{m.key}@{cc}"] = gm
            by_stack["simulator"][f"{m.key}@{cc}"] = sm
            rows.append(
                {
                    "key": m.key,
                    "label": m.label,
                    "case": m.case.label(),
                    "box": m.box,
                    "unit": m.unit,
                    "controller": cc,
                    "seed": seed,
                    "gstreamer": gm,
                    "gstreamer_min": min(gv) if gv else None,
                    "gstreamer_max": max(gv) if gv else None,
                    "gstreamer_runs": len(gv),
                    "gstreamer_unfair": g.height - fair.height,
                    "simulated": sm,
                    "simulated_sd": sd,
                    "simulated_runs": sn,
                    "gstreamer_agrees_with_seed": m.agrees(gm, seed),
                    "simulated_agrees_with_gstreamer": m.agrees(sm, gm),
                }
            )
    findings = [
        {
            "finding": f.text,
            "section": section,
            "gcc": role,
            "gstreamer": f.holds(_as_gcc(by_stack["gstreamer"], gcc)),
            "simulated": f.holds(_as_gcc(by_stack["simulator"], gcc)),
        }
        for gcc, role in GCC_ROLES.items()
        if gcc in present
        for section, f in FINDINGS_OF_THE_SEED
    ]
    return rows, findings


def _as_gcc(values: Mapping[str, float | None], gcc: str) -> dict[str, float | None]:
    """`values` (by `key@controller`) with `gcc`'s standing in for the seed's GCC (and no other
    GCC's)."""
    out = {k: v for k, v in values.items() if not any(k.endswith(f"@{other}") for other in GCC_ROLES)}
    out.update({k.removesuffix(f"@{gcc}") + "@gcc": v for k, v in values.items() if k.endswith(f"@{gcc}")})
    return out


def reproduce_gstreamer(
    out: Path,
    *,
    controllers: Sequence[str] = ALL_CONTROLLERS,
    seeds: Sequence[int] = SEEDS,
    sim_seeds: Sequence[int] = SIM_SEEDS,
    stack_mode: str = GSTREAMER,
    attempts: int = 2,
    jobs: int | None = None,
    command: str | None = None,
    on_run: Callable[[Case, str, str, int, dict[str, Any], bool], None] | None = None,
    progress: RunProgress | None = None,
) -> GStreamerReproduction:
    """Runs the seed's three tests with each of `controllers`: in the simulator (`sim_seeds`, in
    parallel on `jobs` worker processes), then in `stack_mode` (GStreamer; one run at a time, in
    real time, `seeds`), each run not already complete in `out`; a GStreamer run that was not fair
    (`run_problem`) is run again, `attempts` runs in all. Measures every run once, and writes the
    tables to `out`. `on_run(case, stack, controller, seed, summary, ran)` is told of every run.

    `stack_mode` is the mode of the stack's runs: GStreamer, or the simulator itself, which gives
    the same tables in seconds (the tests run the whole path so)."""
    if attempts < 1:
        raise InputError(f"--attempts must be at least 1, got {attempts}")
    unknown = [cc for cc in controllers if cc not in ALL_CONTROLLERS]
    if unknown:
        raise InputError(
            f"--cc: the seed ran {', '.join(CONTROLLERS)} (and {DRAFT_GCC}: GCC as a draft-02 "
            f"implementation), not {', '.join(unknown)}"
        )
    if not seeds:
        raise InputError("--runs must be at least 1")
    cases_ = list(dict.fromkeys(m.case for m in MEASURES))
    started = time.perf_counter()
    runs: list[dict[str, Any]] = []
    curves: list[pl.DataFrame] = []

    def measured(stack: str, case: Case, cc: str, seed: int, job: _Job, summary: dict[str, Any]) -> None:
        run = RunResult(job.path, summary)
        problem = run_problem(summary) if stack == "gstreamer" else None
        facts = _encoder(summary)
        for key, value in _measure(run, case).items():
            runs.append(
                {"stack": stack, "case": case.label(), "controller": cc, "seed": seed, "key": key,
                 "value": value, "fair": problem is None, "problem": problem, **facts}
            )  # fmt: skip
        curves.append(
            _curves(run).with_columns(
                pl.lit(stack).alias("stack"),
                pl.lit(case.label()).alias("case"),
                pl.lit(cc).alias("controller"),
                pl.lit(seed, pl.Int32).alias("seed"),
            )
        )

    plain = {case: _variant(case, ()) for case in cases_}
    sim = {cc: SIMULATED_AS.get(cc, cc) for cc in controllers}
    plan = [
        (case, cc, seed, _Job.plan(plain[case], sim[cc], sim[cc], seed, out, command, SIMULATE))
        for case in cases_
        for cc in controllers
        for seed in sim_seeds
    ]
    with batch_folder(out, [job for *_, job in plan]):
        summaries, ran = execute_plan([job for *_, job in plan], jobs, progress)
    for i, ((case, cc, seed, job), summary) in enumerate(zip(plan, summaries, strict=True)):
        measured("simulator", case, cc, seed, job, summary)
        if on_run is not None:
            on_run(case, "simulator", cc, seed, summary, i in ran)

    problems: dict[str, str] = {}
    versions: set[str] = set()
    stack = {case: _variant(case, STACK_SETS if stack_mode == GSTREAMER else ()) for case in cases_}
    for seed in seeds:
        for case in cases_:
            for cc in controllers:
                actual = cc if stack_mode == GSTREAMER else sim[cc]
                job = _Job.plan(stack[case], actual, actual, seed, out, command, stack_mode)
                with batch_folder(out, [job]):
                    summary, ran_now = _browser_run(job, out, attempts, run_problem)
                if (problem := run_problem(summary)) is not None:
                    problems[f"{case.label()} · {cc} · seed {seed}"] = problem
                measured("gstreamer", case, cc, seed, job, summary)
                if (version := (summary.get("gstreamer") or {}).get("version")) is not None:
                    versions.add(str(version))
                if on_run is not None:
                    on_run(case, "gstreamer", cc, seed, summary, ran_now)

    runs_df = pl.DataFrame(runs, schema=RUNS_SCHEMA)
    rows, findings = table_rows(runs_df)
    result = GStreamerReproduction(
        out,
        runs_df,
        pl.DataFrame(rows, schema=ROWS_SCHEMA),
        pl.DataFrame(findings, schema=FINDINGS_SCHEMA),
        pl.concat(curves, how="diagonal").select(list(CURVES_SCHEMA)).cast(pl.Schema(CURVES_SCHEMA))
        if curves
        else pl.DataFrame(schema=CURVES_SCHEMA),
        time.perf_counter() - started,
        problems,
        sorted(versions),
    )
    out.mkdir(parents=True, exist_ok=True)
    write_parquet_atomic(result.runs, out / RUNS)
    write_parquet_atomic(result.rows, out / ROWS)
    write_parquet_atomic(result.findings, out / FINDINGS)
    write_parquet_atomic(result.curves, out / CURVES)
    return result


def _prefix(case: str) -> str:
    return next(m.key.split(".")[0] for m in MEASURES if m.case.label() == case)


_BOXES = (
    ("utilisation", "link utilisation", ""),
    ("latency", "latency: mean RTT", "ms"),
    ("responsiveness", "responsiveness (§5.2)", "s"),
    ("loss", "packet loss", "%"),
)


def figures(runs: pl.DataFrame, curves: pl.DataFrame, out: Path) -> list[Path]:
    """Per test, the seed's box plots (`plots.repetitions_figure`: utilisation, latency,
    responsiveness and loss over the runs, each controller on GStreamer and on the simulator)
    and its average curves (`plots.average_figure`), written to `out` as
    `gstreamer-box-<test>.png` and `gstreamer-average-<test>.png`."""
    from rtcbench.analysis.bootstrap import mean_ci
    from rtcbench.plots import AverageCurve, BoxPanel, average_figure, render, repetitions_figure
    from rtcbench.results import write_bytes_atomic

    written: list[Path] = []
    present = set(runs.get_column("controller").unique())
    shown = [cc for cc in ALL_CONTROLLERS if cc in present]
    labels = [f"{cc} {stack}" for cc in shown for stack in STACKS]
    for case in dict.fromkeys(m.case.label() for m in MEASURES):
        prefix = _prefix(case)
        panels = []
        for box, title, unit in _BOXES:
            (metric,) = [m for m in MEASURES if m.case.label() == case and m.box == box]
            values: dict[str, list[float]] = {}
            for label in labels:
                cc, stack = label.split(" ")
                these = runs.filter(
                    (pl.col("key") == metric.key) & (pl.col("controller") == cc) & (pl.col("stack") == stack)
                )
                if stack == "gstreamer" and these.filter(pl.col("fair")).height:
                    these = these.filter(pl.col("fair"))
                values[label] = [float(x) for x in these.get_column("value").drop_nulls()]
            panels.append(BoxPanel(title, unit, values, {k: mean_ci(v) for k, v in values.items()}))
        fig = repetitions_figure(panels, labels, f"Sjölund and Kevo 2022, {case}: per run")
        path = out / f"gstreamer-box-{prefix}.png"
        write_bytes_atomic(path, render(fig).png)
        written.append(path)

        lines = []
        for cc in shown:
            for stack in STACKS:
                these = curves.filter(
                    (pl.col("case") == case) & (pl.col("controller") == cc) & (pl.col("stack") == stack)
                )
                if these.height == 0:
                    continue
                mean = (
                    these.group_by("t_s")
                    .agg(pl.exclude("stack", "case", "controller", "seed").mean())
                    .sort("t_s")
                )
                lines.append(
                    AverageCurve(
                        f"{cc} {stack}",
                        mean.get_column("t_s").to_list(),
                        mean.get_column("target_kbps").to_list(),
                        mean.get_column("capacity_kbps").to_list(),
                        mean.get_column("qdelay_ms").to_list(),
                        mean.get_column("loss_pct").to_list(),
                        these.get_column("seed").n_unique(),
                        dashed=stack == "simulator",
                    )
                )
        fig = average_figure(lines, f"Sjölund and Kevo 2022, {case}: the mean of each controller's runs")
        path = out / f"gstreamer-average-{prefix}.png"
        write_bytes_atomic(path, render(fig).png)
        written.append(path)
    return written


def _num(value: float | None, unit: str) -> str:
    if value is None:
        return "–"
    if unit == "":
        return f"{value:.2f}"
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.1f}"


def markdown(result: GStreamerReproduction) -> str:
    """The reproduction as Markdown: what ran, per test the seed's value beside GStreamer's median
    (its range over the runs) and the simulator's mean, the seed's claims judged on each, the
    encoders' CPU and timing, and the runs that were not fair measurements."""
    g = result.runs.filter(pl.col("stack") == "gstreamer")
    sims = result.runs.filter(pl.col("stack") == "simulator")
    lines = [
        "# Sjölund and Kevo 2022 on GStreamer",
        "",
        f"GStreamer {', '.join(result.versions) or '(no GStreamer run)'}: rtcbench's controllers "
        f"(and GStreamer's own draft-02 GCC, {DRAFT_GCC}, simulated as {SIMULATED_AS[DRAFT_GCC]}) "
        "setting x264's target, the snow pattern at the scenario's camera size and frame rate "
        f"(`{'`, `'.join(STACK_SETS)}`). {g.select('case', 'controller', 'seed').n_unique()} GStreamer runs, "
        f"{sims.select('case', 'controller', 'seed').n_unique()} simulated runs of the plain cases. "
        "GStreamer's value is the median of its runs (the line of the seed's box plots), with the "
        "smallest and largest; the simulator's is the mean of its seeds. Agreement: within 15 % or the "
        "measure's slack.",
        "",
    ]
    for case in dict.fromkeys(m.case.label() for m in MEASURES):
        lines += [
            f"## {case}",
            "",
            "| measure | controller | seed | GStreamer (min-max, runs) | simulator (sd) | agree |",
            "|---|---|---|---|---|---|",
        ]
        for r in result.rows.filter(pl.col("case") == case).iter_rows(named=True):
            unit = r["unit"]
            label = f"{r['label']} ({unit})" if unit else r["label"]
            spread = (
                f" ({_num(r['gstreamer_min'], unit)}-{_num(r['gstreamer_max'], unit)}, {r['gstreamer_runs']})"
                if r["gstreamer"] is not None
                else ""
            )
            lines.append(
                f"| {label} | {r['controller']} | {_num(r['seed'], unit)} | "
                f"{_num(r['gstreamer'], unit)}{spread} | "
                f"{_num(r['simulated'], unit)} ({_num(r['simulated_sd'], unit)}) | "
                f"{_yes(r['simulated_agrees_with_gstreamer'])} |"
            )
        prefix = _prefix(case)
        lines += ["", f"![box plots](gstreamer-box-{prefix}.png)", "",
                  f"![average curves](gstreamer-average-{prefix}.png)", ""]  # fmt: skip
    lines += [
        "## The seed's claims",
        "",
        f"Judged once for each GCC that ran: {'; '.join(GCC_ROLES.values())}.",
        "",
        "| claim | section | GCC | GStreamer | simulator |",
        "|---|---|---|---|---|",
    ]
    for f in result.findings.iter_rows(named=True):
        verdicts = f"{_yes(f['gstreamer'])} | {_yes(f['simulated'])}"
        lines.append(f"| {f['finding']} | {f['section']} | {f['gcc']} | {verdicts} |")
    lines += ["", "## The encoders", ""]
    if g.height:
        per_run = g.unique(["case", "controller", "seed"])
        cores = [float(x) for x in per_run.get_column("cpu_cores").drop_nulls()]
        p95 = [float(x) for x in per_run.get_column("encode_p95_ms").drop_nulls()]
        drawn = int(per_run.get_column("frames_drawn").drop_nulls().sum())
        encoded = int(per_run.get_column("frames_encoded").drop_nulls().sum())
        lines.append(
            f"{per_run.height} runs: the sender used {min(cores):.2f}-{max(cores):.2f} cores "
            f"(mean {statistics.mean(cores):.2f}); {encoded} of {drawn} frames drawn were encoded; "
            f"encoding latency p95 {min(p95):.0f}-{max(p95):.0f} ms."
            if cores and p95
            else f"{per_run.height} runs, without an encoder report."
        )
    else:
        lines.append("No GStreamer run.")
    if result.problems:
        lines += ["", "Runs kept although not fair measurements:", ""]
        lines += [f"- {what}: {why}" for what, why in sorted(result.problems.items())]
    if result.wall_s:
        lines += ["", f"Wall time of the runs made now: {result.wall_s / 60:.1f} min."]
    return "\n".join(lines) + "\n"
