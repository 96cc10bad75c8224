"""The seeds re-run between Firefox peers: every wired seed table of the reproduction set
(`experiments.TABLES` without the Wi-Fi and 4G ones) measured on Firefox ESR (`--mode browser
--browser firefox`, seed 1), twice: with the browser's own degradation preference, and with
`video.degradation = "maintain-resolution"` on every call, beside the seed's value, Chromium's
(the committed reference, `reference.chromium`: its fair runs) and the simulator's (seeds 1-3)
(docs/reproduction.md, "Firefox").

    result = reproduce_firefox(Path("results/reproduction-firefox"))   # hours of real-time calls

Why twice: Firefox's encoder, not its congestion control, decides much of what it sends. With its
default (`balanced`) preference it scales a camera down long before the rate forces it to
(docs/browser.md, "Firefox"), so a Firefox value that differs from Chromium's may be the encoder's
choice of resolution. The second variant asks it to keep the camera's resolution, so the two
columns separate what the encoder chose from what the congestion controller allowed.

Runs complete in `out` are reused, and a run that was not a fair measurement (`run_problem`) is
set aside and run again, as `rtcbench reproduce` does for Chromium (`reproduce.browser_runs`: the
one-call cases two at a time, the others alone).

Written to `out`, each by rename: `firefox.parquet` (`ROWS_SCHEMA`), `firefox-findings.parquet`
(`FINDINGS_SCHEMA`), `firefox-periods.parquet` (`PERIODS_SCHEMA`), `firefox-runs.parquet`
(`RUNS_SCHEMA`), and `firefox.md` (`markdown`).
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

from rtcbench.browser.choice import CHROMIUM, FIREFOX
from rtcbench.identity import BROWSER, SIMULATE
from rtcbench.reproduce import (
    _PERIOD_METRICS,
    BROWSER_JOBS,
    BROWSER_SEED,
    CONTROLLER,
    SIM_SEEDS,
    Problem,
    RowId,
    browser_runs,
    measure_case,
    period_agrees,
    period_values,
    reproduce,
    run_problem,
    shares_the_machine,
)
from rtcbench.reproduce import reference as chromium_reference
from rtcbench.reproduce.experiments import TABLES, Case, SeedTable, cases
from rtcbench.reproduce.report import _num, _yes
from rtcbench.results import InputError, write_parquet_atomic
from rtcbench.runner import RunResult
from rtcbench.scenarios import Variant, degradation_sets, resolve
from rtcbench.suite import RunProgress, _Job, batch_folder

__all__ = [
    "DEGRADATIONS",
    "FINDINGS",
    "FINDINGS_SCHEMA",
    "PERIODS",
    "PERIODS_SCHEMA",
    "ROWS",
    "ROWS_SCHEMA",
    "RUNS",
    "RUNS_SCHEMA",
    "FirefoxReproduction",
    "markdown",
    "reproduce_firefox",
    "wired",
]

DEGRADATIONS = ("default", "maintain-resolution")
"""The two runs of each case: the scenario as it is (Firefox's own preference, `balanced`), and
`video.degradation = "maintain-resolution"` set on each of its calls."""

ROWS = "firefox.parquet"
FINDINGS = "firefox-findings.parquet"
PERIODS = "firefox-periods.parquet"
RUNS = "firefox-runs.parquet"

ROWS_SCHEMA = {
    "table": pl.String,
    "source": pl.String,
    "key": pl.String,
    "label": pl.String,
    "case": pl.String,
    "unit": pl.String,
    "degradation": pl.String,
    "seed": pl.Float64,
    "chromium": pl.Float64,
    "firefox": pl.Float64,
    "firefox_fair": pl.Boolean,
    "simulated": pl.Float64,
    "simulated_sd": pl.Float64,
    "firefox_agrees_with_chromium": pl.Boolean,
    "firefox_agrees_with_seed": pl.Boolean,
    "simulated_agrees_with_firefox": pl.Boolean,
}
"""One row per seed-table row and degradation: the seed's value, Chromium's (from the committed
reference: fair runs only; null where there is none), Firefox's, the simulator's mean and
standard deviation over its seeds. Agreement as in `reproduce.ROWS_SCHEMA`: the row's tolerance
(15 %) or its slack. `firefox_fair`: whether Firefox's run was a fair measurement."""

FINDINGS_SCHEMA = {
    "table": pl.String,
    "source": pl.String,
    "finding": pl.String,
    "degradation": pl.String,
    "seed": pl.Boolean,
    "chromium": pl.Boolean,
    "firefox": pl.Boolean,
    "firefox_fair": pl.Boolean,
    "simulated": pl.Boolean,
}
"""Whether each finding holds on the seed's numbers, on Chromium's (reference), on Firefox's run
and on the simulator's mean (null: a value it needs is missing)."""

PERIODS_SCHEMA = {
    "case": pl.String,
    "flow": pl.String,
    "period": pl.Int32,
    "start_s": pl.Float64,
    "end_s": pl.Float64,
    "metric": pl.String,
    "degradation": pl.String,
    "firefox": pl.Float64,
    "chromium": pl.Float64,
    "simulated": pl.Float64,
    "difference": pl.Float64,
    "agrees": pl.Boolean,
}
"""Per case, video flow, period and metric (`reproduce.PERIODS_SCHEMA`'s), from each fair Firefox
run: Firefox's value, Chromium's from the reference (null where it has none) and the simulator's
mean; `difference` is Firefox's relative to Chromium's, `agrees` the fidelity rule
(`reproduce.period_agrees`) of Firefox against Chromium."""

RUNS_SCHEMA = {
    "case": pl.String,
    "degradation": pl.String,
    "fair": pl.Boolean,
    "problem": pl.String,
    "firefox": pl.String,
    "camera_width": pl.Int32,
    "sent_width_median": pl.Float64,
    "sent_full_width_share": pl.Float64,
    "sent_fps_mean": pl.Float64,
}
"""One row per Firefox run: whether it was fair and why not, the Firefox version, the camera's
width, and what the video senders sent by their `getStats()` samples (`stats.parquet`): the median
frame width, the share of samples at the camera's full width, the mean frame rate."""


def wired(tables: Sequence[SeedTable]) -> list[SeedTable]:
    """The tables of `tables` whose every case runs over wired links (no BSS, no cell): the ones
    browser mode runs today."""
    out = []
    for t in tables:
        variants = [_variant(case, "default") for case in cases([t])]
        if not any(v.wifi or v.lte for v in variants):
            out.append(t)
    return out


def _variant(case: Case, degradation: str) -> Variant:
    (plain,) = resolve(case.scenario, list(case.sets))
    if degradation == "default":
        return plain
    variants = resolve(case.scenario, [*case.sets, *degradation_sets(plain, degradation)])
    if len(variants) != 1:
        raise InputError(f"reproduction case {case.label()} names {len(variants)} variants")
    return variants[0]


def _sent(folder: Path, camera_width: int | None) -> dict[str, float | None]:
    """What the run's video senders sent, by their samples (`RUNS_SCHEMA`'s sent columns)."""
    empty: dict[str, float | None] = {"sent_width_median": None, "sent_full_width_share": None,
                                      "sent_fps_mean": None}  # fmt: skip
    try:
        stats = pl.read_parquet(
            folder / "stats.parquet", columns=["side", "frame_width", "frames_per_second"]
        )
    except (OSError, pl.exceptions.PolarsError):
        return empty
    sent = stats.filter((pl.col("side") == "sender") & pl.col("frame_width").is_not_null())
    if sent.height == 0:
        return empty
    widths = [int(w) for w in sent.get_column("frame_width").to_list()]
    fps = [float(x) for x in sent.get_column("frames_per_second").drop_nulls().to_list()]
    return {
        "sent_width_median": float(statistics.median(widths)),
        "sent_full_width_share": None if camera_width is None else widths.count(camera_width) / len(widths),
        "sent_fps_mean": statistics.mean(fps) if fps else None,
    }


def _camera_width(variant: Variant) -> int | None:
    """The width of the run's camera, if all its calls have the same (the reproduction's do)."""
    from rtcbench.browser.run import connections
    from rtcbench.emulation.run import planned_meta

    conns = connections(variant, planned_meta(variant, CONTROLLER, BROWSER_SEED), BROWSER_SEED)
    widths = {s.video.width for c in conns for s in c.streams if s.video is not None}
    return widths.pop() if len(widths) == 1 else None


@dataclass
class FirefoxReproduction:
    """What `reproduce_firefox` measured: the tables (schemas above), where they are, the wall
    time of the runs made now, and the runs kept although not fair."""

    out: Path
    rows: pl.DataFrame
    findings: pl.DataFrame
    periods: pl.DataFrame
    runs: pl.DataFrame
    wall_s: float
    problems: dict[str, str]
    """Firefox runs kept although not fair measurements ("case · degradation": why)."""


def _rows(
    tables: Sequence[SeedTable],
    degradation: str,
    chromium: Mapping[RowId, float | None],
    firefox: Mapping[RowId, float | None],
    simulated: Mapping[RowId, tuple[float | None, float | None]],
    unfair: frozenset[str],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rows: list[dict[str, Any]] = []
    findings: list[dict[str, Any]] = []
    for t in tables:
        by: dict[str, dict[str, float | None]] = {"chromium": {}, "firefox": {}, "simulated": {}}
        for r in t.rows:
            c, f = chromium.get((t.id, r.key)), firefox.get((t.id, r.key))
            sim, sd = simulated.get((t.id, r.key), (None, None))
            by["chromium"][r.key], by["firefox"][r.key], by["simulated"][r.key] = c, f, sim
            rows.append(
                {"table": t.id, "source": t.source, "key": r.key, "label": r.label, "case": r.case.label(),
                 "unit": r.unit, "degradation": degradation, "seed": r.seed, "chromium": c, "firefox": f,
                 "firefox_fair": None if f is None else r.case.label() not in unfair,
                 "simulated": sim, "simulated_sd": sd,
                 "firefox_agrees_with_chromium": r.agrees(f, c),
                 "firefox_agrees_with_seed": r.agrees(f, r.seed),
                 "simulated_agrees_with_firefox": r.agrees(sim, f)}
            )  # fmt: skip
        case_of = {r.key: r.case.label() for r in t.rows}
        for finding in t.findings:
            verdict, read = finding.judge(by["firefox"])
            findings.append(
                {"table": t.id, "source": t.source, "finding": finding.text, "degradation": degradation,
                 "seed": finding.holds(t.seed_values()), "chromium": finding.holds(by["chromium"]),
                 "firefox": verdict,
                 "firefox_fair": None if verdict is None else not any(case_of[k] in unfair for k in read),
                 "simulated": finding.holds(by["simulated"])}
            )  # fmt: skip
    return rows, findings


def _periods(
    label: str,
    degradation: str,
    summary: Mapping[str, Any],
    chromium: Mapping[tuple[str, str, float, float, str], float],
    simulated: Sequence[dict[str, Any]],
) -> list[dict[str, Any]]:
    out = []
    for period in summary.get("periods", []):
        span = (period["start_s"], period["end_s"])
        for flow in period["flows"]:
            if flow.get("kind") != "video":
                continue
            for metric, key, scale in _PERIOD_METRICS:
                f = None if flow.get(key) is None else float(flow[key]) * scale
                c = chromium.get((label, flow["name"], float(span[0]), float(span[1]), metric))
                sims = period_values(simulated, flow["name"], span, metric)
                out.append(
                    {"case": label, "flow": flow["name"], "period": period["index"], "start_s": span[0],
                     "end_s": span[1], "metric": metric, "degradation": degradation, "firefox": f,
                     "chromium": c, "simulated": sum(sims) / len(sims) if sims else None,
                     "difference": None if not c or f is None else f / c - 1,
                     "agrees": period_agrees(metric, c, f)}
                )  # fmt: skip
    return out


def reproduce_firefox(
    out: Path,
    tables: Sequence[SeedTable] = TABLES,
    *,
    degradations: Sequence[str] = DEGRADATIONS,
    kept_only: bool = False,
    sim_seeds: Sequence[int] = SIM_SEEDS,
    attempts: int = 2,
    jobs: int | None = None,
    browser_jobs: int = BROWSER_JOBS,
    command: str | None = None,
    on_run: Callable[[Case, str, str, dict[str, Any], bool], None] | None = None,
    progress: RunProgress | None = None,
    stack_mode: str = BROWSER,
) -> FirefoxReproduction:
    """Runs the wired cases of `tables` in the simulator (`sim_seeds`, on `jobs` worker processes),
    takes Chromium's numbers from the committed reference, then runs every case between Firefox
    peers once per degradation (`DEGRADATIONS`), each not already complete in `out` (with
    `kept_only`, only those complete are read), and writes the tables to `out`.
    `on_run(case, stack, degradation, summary, ran)` is told of every run ("simulator" runs have
    degradation "").

    `stack_mode` is the mode of the Firefox half: browser mode, or the simulator itself, which
    gives the same tables in seconds (the tests run the whole path so)."""
    if attempts < 1:
        raise InputError(f"--attempts must be at least 1, got {attempts}")
    if browser_jobs < 1:
        raise InputError(f"--browser-jobs must be at least 1, got {browser_jobs}")
    unknown = [d for d in degradations if d not in DEGRADATIONS]
    if unknown or not degradations:
        raise InputError(
            f"--degradation must be one of {', '.join(DEGRADATIONS)}, got {', '.join(unknown) or 'none'}"
        )
    degradations = [d for d in DEGRADATIONS if d in degradations]
    chosen = wired(tables)
    if not chosen:
        raise InputError(
            f"--stack firefox runs the wired seed tables ({', '.join(t.id for t in wired(TABLES))}); "
            f"{', '.join(t.id for t in tables)} run over Wi-Fi or 4G, which browser mode does not"
        )
    started = time.perf_counter()

    def sim_told(case: Case, mode: str, seed: int, summary: dict[str, Any], ran: bool) -> None:
        if on_run is not None and mode == SIMULATE:
            on_run(case, "simulator", "", summary, ran)

    base = reproduce(out, chosen, browser="reference", sim_seeds=sim_seeds, jobs=jobs, command=command,
                     on_run=sim_told, progress=progress, write=False)  # fmt: skip
    chromium = {
        (r["table"], r["key"]): r["chromium"]
        for r in base.rows.iter_rows(named=True)
        if r["chromium"] is not None
    }
    simulated = {
        (r["table"], r["key"]): (r["simulated"], r["simulated_sd"]) for r in base.rows.iter_rows(named=True)
    }
    _, reference_periods = chromium_reference.load()
    chromium_periods = {
        (p["case"], p["flow"], float(p["start_s"]), float(p["end_s"]), p["metric"]): float(p["chromium"])
        for p in reference_periods.iter_rows(named=True)
    }

    all_cases = cases(chosen)
    variants = {(case, d): _variant(case, d) for case in all_cases for d in degradations}
    peers = FIREFOX if stack_mode == BROWSER else CHROMIUM
    plan = {
        key: _Job.plan(v, CONTROLLER, CONTROLLER, BROWSER_SEED, out, command, stack_mode, browser=peers)
        for key, v in variants.items()
    }
    shared = {key for key, v in variants.items() if shares_the_machine(v)}
    problem: Problem = run_problem if stack_mode == BROWSER else (lambda summary, folder: None)

    def told(key: tuple[Case, str], summary: dict[str, Any], ran: bool) -> None:
        if on_run is not None:
            on_run(key[0], "firefox", key[1], summary, ran)

    with batch_folder(out, list(plan.values())):
        done = browser_runs(plan, shared, out, kept_only=kept_only, attempts=attempts,
                            browser_jobs=browser_jobs, told=told, problem=problem)  # fmt: skip

    rows: list[dict[str, Any]] = []
    findings: list[dict[str, Any]] = []
    periods: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    problems: dict[str, str] = {}
    for degradation in degradations:
        values: dict[RowId, float | None] = {}
        unfair: set[str] = set()
        for case in all_cases:
            if (case, degradation) not in done:
                continue
            summary, why = done[(case, degradation)]
            path = plan[(case, degradation)].path
            values.update(measure_case(chosen, case, RunResult(path, summary)))
            variant = variants[(case, degradation)]
            width = _camera_width(variant)
            runs.append(
                {"case": case.label(), "degradation": degradation, "fair": why is None, "problem": why,
                 "firefox": (summary.get("browser") or {}).get("firefox"), "camera_width": width,
                 **_sent(path, width)}
            )  # fmt: skip
            if why is not None:
                unfair.add(case.label())
                problems[f"{case.label()} · {degradation}"] = why
                continue
            periods += _periods(
                case.label(), degradation, summary, chromium_periods, base.simulated_summaries[case.label()]
            )
        r, f = _rows(chosen, degradation, chromium, values, simulated, frozenset(unfair))
        rows += r
        findings += f

    result = FirefoxReproduction(
        out,
        pl.DataFrame(rows, schema=ROWS_SCHEMA),
        pl.DataFrame(findings, schema=FINDINGS_SCHEMA),
        pl.DataFrame(periods, schema=PERIODS_SCHEMA),
        pl.DataFrame(runs, schema=RUNS_SCHEMA),
        time.perf_counter() - started,
        problems,
    )
    out.mkdir(parents=True, exist_ok=True)
    write_parquet_atomic(result.rows, out / ROWS)
    write_parquet_atomic(result.findings, out / FINDINGS)
    write_parquet_atomic(result.periods, out / PERIODS)
    write_parquet_atomic(result.runs, out / RUNS)
    return result


def _share(frame: pl.DataFrame) -> str:
    judged = frame.filter(pl.col("agrees").is_not_null())
    if judged.height == 0:
        return "none compared"
    ok = int(judged.get_column("agrees").sum())
    return f"{ok} of {judged.height} ({ok / judged.height:.0%})"


def markdown(result: FirefoxReproduction) -> str:
    """The Firefox reproduction as Markdown: what ran, how Firefox's periods compare with
    Chromium's, what each run sent, and per seed table the seed's value beside Chromium's,
    Firefox's under each degradation preference and the simulator's, with each finding's
    verdicts."""
    degradations = list(dict.fromkeys(result.rows.get_column("degradation").to_list()))
    versions = sorted({v for v in result.runs.get_column("firefox").drop_nulls().to_list()})
    lines = [
        "# The seeds re-run between Firefox peers",
        "",
        f"Firefox {', '.join(versions) or '(no Firefox run)'}, seed {BROWSER_SEED}, each wired case "
        f"with {' and with '.join(f'`{d}`' for d in degradations)} degradation preference; Chromium's "
        "numbers are the committed reference (its fair runs), the simulator's the mean of its seeds "
        f"{', '.join(str(s) for s in SIM_SEEDS)}. Agreement: the row's tolerance (15 %) or its slack.",
        "",
        "## Firefox's periods against Chromium's",
        "",
        "| degradation | sending rate within 15 % | queuing delay p95 within 15 % or 10 ms |",
        "|---|---|---|",
    ]
    for d in degradations:
        these = result.periods.filter(pl.col("degradation") == d)
        rate = these.filter(pl.col("metric") == "send_rate_kbps")
        delay = these.filter(pl.col("metric") == "qdelay_p95_ms")
        lines.append(f"| {d} | {_share(rate)} | {_share(delay)} |")
    lines += [
        "",
        "## What Firefox sent",
        "",
        "| degradation | runs (fair) | median width sent / camera | samples at its width | frames/s |",
        "|---|---|---|---|---|",
    ]
    for d in degradations:
        these = result.runs.filter(pl.col("degradation") == d)
        if these.height == 0:
            continue
        fair = int(these.get_column("fair").sum())
        medians = these.get_column("sent_width_median").drop_nulls().to_list()
        cameras = sorted({int(w) for w in these.get_column("camera_width").drop_nulls().to_list()})
        shares = these.get_column("sent_full_width_share").drop_nulls().to_list()
        fps = these.get_column("sent_fps_mean").drop_nulls().to_list()
        lines.append(
            f"| {d} | {these.height} ({fair}) "
            f"| {_spread(medians)} / {', '.join(str(c) for c in cameras) or '–'} "
            f"| {_spread([100 * s for s in shares], '%')} | {_spread(fps)} |"
        )
    lines.append("")
    for (table, source), t in result.rows.group_by(["table", "source"], maintain_order=True):
        lines += [f"## {source} (`{table}`)", ""]
        lines += _header("", degradations)
        for key in dict.fromkeys(t.get_column("key").to_list()):
            per = {r["degradation"]: r for r in t.filter(pl.col("key") == key).iter_rows(named=True)}
            first = next(iter(per.values()))
            unit = f" ({first['unit']})" if first["unit"] else ""
            cells = []
            for d in degradations:
                r = per.get(d)
                if r is None or r["firefox"] is None:
                    cells.append("–")
                    continue
                mark = "" if r["firefox_agrees_with_chromium"] is not False else " ≠"
                cells.append(_num(r["firefox"]) + mark + _invalid(r))
            lines.append(
                f"| {first['label']}{unit} | {_num(first['seed'])} | {_num(first['chromium'])} | "
                + " | ".join(cells)
                + f" | {_num(first['simulated'])} |"
            )
        lines += ["", *_header("finding", degradations)]
        fs = result.findings.filter(pl.col("table") == table)
        for text in dict.fromkeys(fs.get_column("finding").to_list()):
            per = {f["degradation"]: f for f in fs.filter(pl.col("finding") == text).iter_rows(named=True)}
            first = next(iter(per.values()))
            seed = "claimed" if first["seed"] is None else _yes(first["seed"])
            cells = [
                "–" if d not in per else _yes(per[d]["firefox"]) + _invalid(per[d]) for d in degradations
            ]
            lines.append(f"| {text} | {seed} | {_yes(first['chromium'])} | " + " | ".join(cells)
                         + f" | {_yes(first['simulated'])} |")  # fmt: skip
        lines.append("")
    lines += ["≠: Firefox disagrees with Chromium (beyond the row's tolerance or slack).", ""]
    if result.problems:
        lines += ["Runs kept although not fair measurements:", ""]
        lines += [f"- {what}: {why}" for what, why in sorted(result.problems.items())]
        lines.append("")
    if result.wall_s:
        lines += [f"Wall time of the runs made now: {result.wall_s / 60:.1f} min.", ""]
    return "\n".join(lines)


def _header(first: str, degradations: Sequence[str]) -> list[str]:
    """A seed table's (or its findings') header: the seed, Chromium, Firefox under each
    degradation preference, the simulator."""
    columns = [first, "seed", "Chromium 156", *(f"Firefox, {d}" for d in degradations), "simulator"]
    return ["|" + "|".join(f" {c} " if c else " " for c in columns) + "|", "|---" * len(columns) + "|"]


def _invalid(row: Mapping[str, Any]) -> str:
    return " (invalid run)" if row["firefox_fair"] is False else ""


def _spread(values: Sequence[float], unit: str = "") -> str:
    xs = [v for v in values if math.isfinite(v)]
    if not xs:
        return "–"
    lo, mid, hi = min(xs), statistics.median(xs), max(xs)
    return f"{mid:.0f}{unit} ({lo:.0f}-{hi:.0f})" if lo != hi else f"{mid:.0f}{unit}"
