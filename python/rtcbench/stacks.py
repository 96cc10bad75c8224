"""One case, every stack: a scenario run on the simulator, on rtcbench's media agents over the
emulated network, between Chromium peers, between Firefox peers, on GStreamer's encoder, and on
GStreamer's own RTP stack with its GCC (`rtpgccbwe`), with their rates and delays side by side
(`rtcbench stacks`, docs/stacks.md).

    result = compare_stacks(Path("results/stacks"))   # about 3 h: five stacks, five runs each, in real time

Every stack runs the same scenario variant over the same network (the emulated runs share
namespaces, relay, links and cross traffic; the simulator models them). What differs is the
sender: rtcbench's `gcc` on its frame-size model (simulator, emulation), on a real libvpx encoder
(GStreamer), a browser's own GoogCC, pacer and encoder (Chromium, Firefox, which vendors
libwebrtc at its own revision), or GStreamer's RTP stack end to end with its own draft-02 GCC.
Each stack runs each case `RUNS` times (seeds 1-5 by default). Its value in a phase (the spans of
constant capacity) is the median of its fair runs, with their range; it is compared with
Chromium's median by the calibration's rule (docs/calibration.md): sending rate within 15 %,
queuing delay within 15 % or 10 ms. A difference the rule sees may still lie within the run-to-run
spread of the two stacks: `overlaps` says whether their ranges meet.

Runs complete in `out` are reused; a real-time run that was not a fair measurement (its relay
missed its timing, an encoder was held back by the CPU, a call started late) is moved to
`<out>/rejected/` and run again, `attempts` runs in all; the last is kept and marked.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from rtcbench.calibrate import Case, _agrees, compare_phases
from rtcbench.emulation.gstreamer import SCALED
from rtcbench.identity import BROWSER, EMULATE, GSTREAMER, GSTREAMER_CC, SIMULATE
from rtcbench.reproduce.report import _num
from rtcbench.results import InputError, write_parquet_atomic
from rtcbench.runner import RunResult
from rtcbench.scenarios import Variant, degradation_sets, resolve
from rtcbench.suite import _Job, batch_folder
from rtcbench.testbed.timing import invalid_line

__all__ = [
    "ALL_STACKS",
    "CASES",
    "CONTROLLER",
    "CURVES",
    "CURVES_SCHEMA",
    "MORE_STACKS",
    "REFERENCE",
    "ROWS",
    "ROWS_SCHEMA",
    "RUNS",
    "STACKS",
    "Stack",
    "StackComparison",
    "compare_stacks",
    "figure",
    "markdown",
    "run_problem",
    "stack",
]

CONTROLLER = "gcc"
"""rtcbench's GCC on the simulator, the agents and GStreamer; the browsers run their own, and
GStreamer's RTP stack its `rtpgccbwe` (`Stack.controller`)."""


@dataclass(frozen=True)
class Stack:
    """One sender stack: its name, the mode that runs it, and a browser run's peers."""

    name: str
    mode: str
    browser: str = "chromium"
    what: str = ""
    controller: str = "gcc"
    """The run's `--cc`: rtcbench's `gcc`, which a browser run takes as its own GoogCC's name."""
    degradation: str | None = None
    """The `video.degradation` every call of the case gets on this stack (None: the case's own)."""


STACKS = (
    Stack("simulator", SIMULATE, what="rtcbench's gcc, pacer and frame-size model, simulated"),
    Stack("emulation", EMULATE, what="rtcbench's media agents: the same sender, real sockets, real time"),
    Stack("chromium", BROWSER, "chromium", "Chromium's own GoogCC, pacer and libvpx encoder"),
    Stack("firefox", BROWSER, "firefox", "Firefox ESR's libwebrtc (its own revision) and encoder"),
    Stack("gstreamer", GSTREAMER, what="rtcbench's gcc, pacer and feedback on GStreamer's libvpx"),
    Stack(
        "rtpgccbwe",
        GSTREAMER,
        what="GStreamer's own RTP stack: rtpbin, its draft-02 GCC (rtpgccbwe) and libvpx",
        controller=GSTREAMER_CC,
    ),
)
"""The stacks, in the order they run (the simulator first: seconds; the others in real time)."""

MORE_STACKS = (
    Stack(
        "gstreamer-scaled",
        GSTREAMER,
        what="as gstreamer, the picture scaled on the model's resolution ladder (maintain-framerate)",
        degradation=SCALED,
    ),
)
"""Stacks run only when named (`--stack`): the GStreamer stack with its picture scaled down the
resolution ladder as the rate falls (docs/gstreamer.md, ADR 0010), which the default comparison
leaves at the camera's size, GStreamer's own default."""

ALL_STACKS = STACKS + MORE_STACKS
"""Every stack, in the order they run and are shown."""

REFERENCE = "chromium"
"""The stack every other is compared with: the one users run."""

CASES = (
    Case("rfc8867-5.1", ("delay=50ms", "mechanism=link-rate")),
    Case("seed002-step-up"),
    Case("rfc8867-5.6", ("queue=300ms", "tcp_cc=cubic")),
)
"""Variable capacity (RFC 8867 §5.1), a step up from 400 kbit/s to 3 Mbit/s (De Cicco et al.
2013), and a call against a CUBIC download (RFC 8867 §5.6): 340 s of calls per stack."""

RUNS = 5
"""Runs of each case on each stack by default (seeds 1-5): as many as Sjölund and Kevo 2022 made of
each test, enough to tell a stack's difference from its run-to-run spread."""

ROWS = "stacks.parquet"
CURVES = "stacks-curves.parquet"

ROWS_SCHEMA = {
    "case": pl.String,
    "stack": pl.String,
    "flow": pl.String,
    "phase": pl.Int32,
    "start_s": pl.Float64,
    "end_s": pl.Float64,
    "capacity_kbps": pl.Float64,
    "metric": pl.String,
    "value": pl.Float64,
    "value_min": pl.Float64,
    "value_max": pl.Float64,
    "runs": pl.Int32,
    "reference": pl.Float64,
    "reference_min": pl.Float64,
    "reference_max": pl.Float64,
    "difference": pl.Float64,
    "agrees": pl.Boolean,
    "overlaps": pl.Boolean,
    "fair": pl.Boolean,
    "unfair_runs": pl.Int32,
    "problem": pl.String,
}
"""One row per case, stack, video flow, phase (the spans of constant capacity) and metric
(`send_rate_kbps`, `qdelay_p50_ms`, `qdelay_p95_ms`, `loss`): the stack's median over its runs
(`value`; the fair ones, or all if none was fair) with their smallest and largest and how many,
Chromium's (`reference`, the same way), their difference (value / reference - 1; value -
reference for loss), whether the medians agree (docs/calibration.md's rule), and whether the two
ranges overlap (a difference within the stacks' run-to-run spread). `fair`: whether the value
comes from fair runs (`run_problem`); `unfair_runs`: how many of the stack's runs were not, and
`problem` why the first of them was not."""

CURVES_SCHEMA = {
    "case": pl.String,
    "stack": pl.String,
    "seed": pl.Int32,
    "flow": pl.String,
    "kind": pl.String,
    "t_s": pl.Float64,
    "send_kbps": pl.Float64,
    "capacity_kbps": pl.Float64,
    "qdelay_ms": pl.Float64,
}
"""Every run's video and TCP flows per second (the time series' windows averaged into 1 s bins),
from which `figure` draws each stack's mean over its runs."""


def stack(name: str) -> Stack:
    """The stack called `name` (`InputError` naming the others)."""
    for s in ALL_STACKS:
        if s.name == name:
            return s
    raise InputError(f"--stack must be one of {', '.join(s.name for s in ALL_STACKS)}, got {name!r}")


def run_problem(s: Stack, summary: dict[str, Any], folder: Path | None = None) -> str | None:
    """Why a run of stack `s` is not a fair measurement, or None: a browser run as the
    reproduction judges it (`reproduce.run_problem`), a GStreamer run whose relay missed its
    timing or whose encoder did not keep up, an emulated run that did not keep its timing (its
    reasons: `rtcbench.testbed.timing.invalid_line`)."""
    if s.mode == BROWSER:
        from rtcbench.reproduce import run_problem as browser_problem

        return browser_problem(summary, folder)
    if s.mode == GSTREAMER:
        from rtcbench.reproduce.gstreamer import run_problem as gstreamer_problem

        return gstreamer_problem(summary)
    if s.mode == EMULATE:
        return invalid_line(summary.get("emulation") or {})
    return None


@dataclass
class StackComparison:
    """What `compare_stacks` measured: the two tables (schemas above), where they are, the
    stacks' versions as their runs recorded them, the wall time of the runs made now, and the
    runs kept although not fair (case · stack · seed: why)."""

    out: Path
    rows: pl.DataFrame
    curves: pl.DataFrame
    versions: dict[str, str]
    wall_s: float
    problems: dict[str, str]


def _variant(case: Case, s: Stack | None = None) -> Variant:
    """The case's one variant, as stack `s` runs it (its `degradation` on every call table)."""
    variants = resolve(case.scenario, list(case.sets))
    if len(variants) != 1:
        raise InputError(
            f"stacks case {case.label()} names {len(variants)} variants: give every variant's value"
        )
    return variants[0] if s is None else _on_stack(case, variants[0], s)


def _on_stack(case: Case, plain: Variant, s: Stack) -> Variant:
    """`plain`, the case's one variant, as stack `s` runs it."""
    if s.degradation is None:
        return plain
    (variant,) = resolve(case.scenario, [*case.sets, *degradation_sets(plain, s.degradation)])
    return variant


def _version(s: Stack, summary: dict[str, Any]) -> str | None:
    """The version of the stack's software the run recorded (`identity`)."""
    identity = summary.get("identity") or {}
    if s.mode == BROWSER:
        return str(identity["browser"]) if identity.get("browser") else None
    if s.mode == GSTREAMER:
        return f"GStreamer {identity['gstreamer']}" if identity.get("gstreamer") else None
    revision = identity.get("model_revision")
    return None if revision is None else f"rtcbench model revision {revision}"


def _curves(run: RunResult) -> pl.DataFrame:
    """The run's video and TCP flows per second (`CURVES_SCHEMA` but case and stack)."""
    kinds = {int(f["id"]): (str(f["name"]), str(f["kind"])) for f in run.summary["meta"]["flows"]}
    keep = [fid for fid, (_, kind) in kinds.items() if kind in ("video", "tcp")]
    per_second = (
        run.timeseries.filter(pl.col("flow").is_in(keep))
        .with_columns((pl.col("t_us") // 1_000_000).cast(pl.Float64).alias("t_s"))
        .group_by("flow", "t_s")
        .agg(
            (pl.col("send_rate_bps").mean() / 1e3).alias("send_kbps"),
            (pl.col("capacity_bps").mean() / 1e3).alias("capacity_kbps"),
            pl.col("qdelay_ms").mean().alias("qdelay_ms"),
        )
        .sort("flow", "t_s")
    )
    names = pl.DataFrame(
        {"flow": keep, "name": [kinds[f][0] for f in keep], "kind": [kinds[f][1] for f in keep]},
        schema={"flow": per_second.schema["flow"], "name": pl.String, "kind": pl.String},
    )
    return per_second.join(names, on="flow").drop("flow").rename({"name": "flow"})


def _aggregate(
    runs: Sequence[tuple[list[dict[str, Any]], str | None]],
) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Per (flow, phase, metric): the median, smallest and largest value of the fair runs (all of
    them if none was fair), how many, and the runs that were not fair. `runs` are each run's phase
    rows (`compare_phases` of the run with itself: its values as `simulated`) and its problem."""
    fair = [rows for rows, problem in runs if problem is None]
    problems = [problem for _, problem in runs if problem is not None]
    used = fair or [rows for rows, _ in runs]
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for rows in used:
        for r in rows:
            key = (r["flow"], r["phase"], r["metric"])
            entry = out.setdefault(key, {"row": r, "values": []})
            if r["simulated"] is not None:
                entry["values"].append(float(r["simulated"]))
    for entry in out.values():
        values = entry["values"]
        entry.update(
            median=statistics.median(values) if values else None,
            low=min(values) if values else None,
            high=max(values) if values else None,
            runs=len(values),
            fair=bool(fair),
            unfair=len(problems),
            problem=problems[0] if problems else None,
        )
    return out


def compare_stacks(
    out: Path,
    cases: Sequence[Case] = CASES,
    stacks: Sequence[Stack] = STACKS,
    *,
    seeds: Sequence[int] = tuple(range(1, RUNS + 1)),
    attempts: int = 2,
    command: str | None = None,
    on_run: Callable[[Case, Stack, int, dict[str, Any], bool], None] | None = None,
    ray_address: str | None = None,
) -> StackComparison:
    """Runs every case on every stack with each of `seeds` (one run at a time: the real-time ones
    take the machine; a whole pass of the cases and stacks per seed, so that an interrupted
    comparison has complete passes), each run not already complete in `out`, measures each stack
    against Chromium's runs of the case (when Chromium is among `stacks`), and writes
    `stacks.parquet` and `stacks-curves.parquet` to `out`. `on_run(case, stack, seed, summary,
    ran)` is told of every run. With `ray_address` the runs are spread over that Ray cluster's
    nodes, one at a time on each (`reproduce.browser_runs`), under `out` made absolute."""
    from rtcbench.reproduce import _browser_run, browser_runs

    if attempts < 1:
        raise InputError(f"--attempts must be at least 1, got {attempts}")
    if not stacks:
        raise InputError("give at least one --stack")
    if not seeds:
        raise InputError("--runs must be at least 1")
    if ray_address is not None:
        out = out.absolute()
    started = time.perf_counter()
    curves: list[pl.DataFrame] = []
    versions: dict[str, set[str]] = {}
    problems: dict[str, str] = {}
    plain = {case: _variant(case) for case in cases}
    variants = {(case, s.name): _on_stack(case, plain[case], s) for case in cases for s in stacks}
    plan = {
        (seed, case, s): _Job.plan(
            variants[(case, s.name)],
            s.controller,
            s.controller,
            seed,
            out,
            command,
            s.mode,
            browser=s.browser,
        )
        for seed in seeds
        for case in cases
        for s in stacks
    }
    stack_of = {job.path: s for (_, _, s), job in plan.items()}

    def unfair(summary: dict[str, Any], folder: Path) -> str | None:
        return run_problem(stack_of[folder], summary, folder)

    def told(key: tuple[int, Case, Stack], summary: dict[str, Any], ran: bool) -> None:
        if on_run is not None:
            seed, case, s = key
            on_run(case, s, seed, summary, ran)

    ran: dict[tuple[int, Case, Stack], dict[str, Any]] = {}
    if ray_address is not None:
        with batch_folder(out, list(plan.values())):
            spread = browser_runs(
                plan, (), out, attempts=attempts, told=told, problem=unfair, ray_address=ray_address
            )
        ran = {key: summary for key, (summary, _) in spread.items()}
    else:
        for key, job in plan.items():
            with batch_folder(out, [job]):
                ran[key], made = _browser_run(job, out, attempts, unfair)
            told(key, ran[key], made)
    measured: dict[tuple[Case, str], list[tuple[list[dict[str, Any]], str | None]]] = {}
    for key, job in plan.items():
        seed, case, s = key
        summary = ran[key]
        problem = unfair(summary, job.path)
        if problem is not None:
            problems[f"{case.label()} · {s.name} · seed {seed}"] = problem
        own = compare_phases(case.label(), summary, summary)
        measured.setdefault((case, s.name), []).append((own, problem))
        if (version := _version(s, summary)) is not None:
            versions.setdefault(s.name, set()).add(version)
        curves.append(
            _curves(RunResult(job.path, summary)).with_columns(
                pl.lit(case.label()).alias("case"),
                pl.lit(s.name).alias("stack"),
                pl.lit(seed, pl.Int32).alias("seed"),
            )
        )
    rows: list[dict[str, Any]] = []
    for case in cases:
        reference = measured.get((case, REFERENCE))
        ref = _aggregate(reference) if reference is not None else {}
        for s in stacks:
            for key, e in _aggregate(measured[(case, s.name)]).items():
                r, c = e["row"], ref.get(key)
                difference, agrees = _agrees(r["metric"], c["median"], e["median"]) if c else (None, None)
                overlaps = (
                    None
                    if c is None or e["low"] is None or c["low"] is None
                    else e["low"] <= c["high"] and c["low"] <= e["high"]
                )
                rows.append(
                    {"case": r["case"], "stack": s.name, "flow": r["flow"], "phase": r["phase"],
                     "start_s": r["start_s"], "end_s": r["end_s"], "capacity_kbps": r["capacity_kbps"],
                     "metric": r["metric"], "value": e["median"], "value_min": e["low"],
                     "value_max": e["high"], "runs": e["runs"], "reference": c["median"] if c else None,
                     "reference_min": c["low"] if c else None, "reference_max": c["high"] if c else None,
                     "difference": difference, "agrees": agrees, "overlaps": overlaps, "fair": e["fair"],
                     "unfair_runs": e["unfair"], "problem": e["problem"]}
                )  # fmt: skip
    result = StackComparison(
        out,
        pl.DataFrame(rows, schema=ROWS_SCHEMA),
        pl.concat(curves, how="diagonal").select(list(CURVES_SCHEMA)).cast(pl.Schema(CURVES_SCHEMA))
        if curves
        else pl.DataFrame(schema=CURVES_SCHEMA),
        {name: ", ".join(sorted(v)) for name, v in versions.items()},
        time.perf_counter() - started,
        problems,
    )
    out.mkdir(parents=True, exist_ok=True)
    write_parquet_atomic(result.rows, out / ROWS)
    write_parquet_atomic(result.curves, out / CURVES)
    return result


def _slug(case: str) -> str:
    """A case label as a file name: "rfc8867-5.6 [queue=300ms,tcp_cc=cubic]" gives
    "rfc8867-5.6-queue-300ms-tcp-cc-cubic"."""
    kept = "".join(c if c.isalnum() or c == "." else "-" for c in case)
    return "-".join(part for part in kept.split("-") if part)


def figure_path(out: Path, case: str) -> Path:
    return out / f"stacks-{_slug(case)}.png"


def figure(curves: pl.DataFrame, case: str) -> Any:
    """One case on every stack: each stack's video sending rate (and its TCP flow's, dashed)
    against the capacity, and the video's queuing delay, per second, the mean of its runs."""
    import matplotlib as mpl
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from rtcbench.plots import CAPACITY_COLOR, STYLE, series_color

    runs = curves.filter(pl.col("case") == case)
    these = (
        runs.group_by("stack", "flow", "kind", "t_s", maintain_order=True)
        .agg(pl.col("send_kbps", "capacity_kbps", "qdelay_ms").mean())
        .sort("stack", "flow", "t_s")
    )
    names = [s.name for s in ALL_STACKS if s.name in set(these.get_column("stack").to_list())]
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(7.2, 6.0))
        FigureCanvasAgg(fig)
        rate, delay = fig.subplots(2, 1, sharex=True, height_ratios=(2.0, 1.2))
        fig.subplots_adjust(left=0.1, right=0.98, top=0.84, bottom=0.08, hspace=0.12)
        video = these.filter(pl.col("kind") == "video")
        if video.height:
            first = video.filter(pl.col("stack") == names[0]).sort("t_s")
            first = first.filter(pl.col("flow") == first.item(0, "flow"))
            rate.step(first["t_s"], first["capacity_kbps"], where="post", color=CAPACITY_COLOR, lw=1.4,
                      label="capacity")  # fmt: skip
        for name in names:
            color = series_color(name)
            mine = these.filter(pl.col("stack") == name)
            for flow in mine.get_column("flow").unique(maintain_order=True).to_list():
                f = mine.filter(pl.col("flow") == flow).sort("t_s")
                tcp = f.item(0, "kind") == "tcp"
                rate.plot(f["t_s"], f["send_kbps"], "--" if tcp else "-", color=color, lw=0.9 if tcp else 1.2,
                          label=f"{name}: {'TCP' if tcp else 'video'}" if tcp else name)  # fmt: skip
                if not tcp:
                    delay.plot(f["t_s"], f["qdelay_ms"], color=color, lw=1.0)
        rate.set_ylabel("sending rate (kbit/s)")
        rate.set_ylim(bottom=0.0)
        delay.set_ylabel("queuing delay (ms)")
        delay.set_ylim(bottom=0.0)
        delay.set_xlabel("time (s)")
        n = runs.get_column("seed").n_unique()
        fig.suptitle(f"{case}: every stack" + (f" (the mean of {n} runs each)" if n > 1 else ""), y=0.985)
        handles, labels = rate.get_legend_handles_labels()
        if handles:
            fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.54, 0.955), ncol=4)
    return fig


def markdown(result: StackComparison) -> str:
    """The comparison as Markdown: the stacks and their versions, per case and phase each stack's
    video sending rate and queuing delay p95 (the median of its runs, and their range) beside
    Chromium's, the phases where a stack differs from Chromium by more than the rule allows (and
    whether within the runs' spread), and the runs that were not fair."""
    lines = ["# One case, every stack", "", "| stack | what sends | version |", "|---|---|---|"]
    for s in ALL_STACKS:
        if s.name in set(result.rows.get_column("stack").to_list()):
            lines.append(f"| {s.name} | {s.what} | {result.versions.get(s.name, '–')} |")
    names = [s.name for s in ALL_STACKS if s.name in set(result.rows.get_column("stack").to_list())]
    for case in result.rows.get_column("case").unique(maintain_order=True).to_list():
        mine = result.rows.filter(pl.col("case") == case)
        lines += [
            "",
            f"## {case}",
            "",
            f"![rates and delays on every stack]({figure_path(Path(), case).name})",
            "",
        ]
        for metric, title in (
            ("send_rate_kbps", "video sending rate (kbit/s)"),
            ("qdelay_p95_ms", "queuing delay p95 (ms)"),
        ):
            lines += [f"{title}, per phase:", "", "| flow | phase | capacity | " + " | ".join(names) + " |",
                      "|---|---|---|" + "---|" * len(names)]  # fmt: skip
            by = mine.filter(pl.col("metric") == metric)
            for key in (
                by.select("flow", "phase", "start_s", "end_s", "capacity_kbps")
                .unique(maintain_order=True)
                .iter_rows()
            ):
                flow, phase, start, end, capacity = key
                cells = []
                for name in names:
                    row = by.filter(
                        (pl.col("stack") == name) & (pl.col("flow") == flow) & (pl.col("phase") == phase)
                    )
                    if row.height == 0:
                        cells.append("–")
                        continue
                    r = row.row(0, named=True)
                    cell = _num(r["value"])
                    if r["runs"] > 1 and r["value_min"] is not None:
                        cell += f" ({_num(r['value_min'])}-{_num(r['value_max'])})"
                    if r["agrees"] is False and name != REFERENCE:
                        cell += " ~" if r["overlaps"] else " ✗"
                    cells.append(cell)
                lines.append(
                    f"| {flow} | {start:g}-{end:g} s | {_num(capacity)} | " + " | ".join(cells) + " |"
                )
            lines.append("")
        apart = mine.filter((pl.col("agrees") == False) & (pl.col("stack") != REFERENCE))  # noqa: E712
        counted = mine.filter(pl.col("agrees").is_not_null() & (pl.col("stack") != REFERENCE))
        spread = apart.filter(pl.col("overlaps") == True)  # noqa: E712
        lines.append(
            f"✗: the median differs from Chromium's beyond 15 % (or 10 ms of delay): {apart.height} of "
            f"{counted.height} comparisons of this case; ~: of those, {spread.height} within the two "
            "stacks' run-to-run ranges, which overlap."
        )
    if result.problems:
        lines += ["", "Runs kept although not fair measurements:", ""]
        lines += [f"- {what}: {why}" for what, why in sorted(result.problems.items())]
    return "\n".join(lines) + "\n"
