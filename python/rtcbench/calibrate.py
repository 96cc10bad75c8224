"""The simulator calibrated against Chromium (docs/calibration.md): a fixed set of wired
single-flow cases run between real Chromium peers (`--mode browser`) and in the simulator with
`gcc` (rtcbench's port of the GoogCC Chromium runs), and each video flow's phases (the intervals
of constant capacity of its bottleneck) compared side by side: mean sending rate, queuing delay
and loss.

    table = calibrate(Path("results/calibration"))      # about 11 minutes: the browser runs are real time

A phase's sending rate agrees when the simulator's is within `RATE_TOLERANCE` of the browser's;
queuing delay when within `RATE_TOLERANCE` or `DELAY_SLACK_MS`, whichever is larger (a few
milliseconds of queue are within the noise of a real machine's timing); loss when within
`RATE_TOLERANCE` or `LOSS_SLACK` (absolute). Runs already in `out` are kept and reused, as
`rtcbench suite` does.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from rtcbench.browser.choice import Browsers
from rtcbench.identity import BROWSER, SIMULATE
from rtcbench.results import InputError, read_summary, write_parquet_atomic
from rtcbench.runner import run_folder, run_variant
from rtcbench.scenarios import Variant, resolve

__all__ = [
    "CASES",
    "DELAY_SLACK_MS",
    "LOSS_SLACK",
    "RATE_TOLERANCE",
    "TABLE",
    "Case",
    "calibrate",
    "compare_phases",
    "parse_case",
]

RATE_TOLERANCE = 0.15
"""The goal: within 15 % per phase (issue 15)."""
DELAY_SLACK_MS = 10.0
LOSS_SLACK = 0.005
TABLE = "calibration.parquet"
DECISIONS = "decisions.parquet"
DECISIONS_FOLDER = "decisions"
CONTROLLER = "gcc"


@dataclass(frozen=True)
class Case:
    """A scenario variant to calibrate on: a scenario id and its `--set` overrides."""

    scenario: str
    sets: tuple[str, ...] = ()

    def label(self) -> str:
        return self.scenario + (f" [{','.join(self.sets)}]" if self.sets else "")

    def slug(self) -> str:
        """The case as one file name: `rfc8867-5.1@delay=50ms,mechanism=link-rate`."""
        text = self.scenario + (f"@{','.join(self.sets)}" if self.sets else "")
        return re.sub(r"[^A-Za-z0-9._=@,-]", "-", text)


CASES = (
    Case("rfc8867-5.1", ("delay=50ms", "mechanism=link-rate")),
    Case("seed002-grid", ("capacity=1000kbps", "delay=25ms")),
    Case("seed002-step-up"),
    Case("seed001-sudden-reduction"),
    Case("seed000-5.2.6", ("delay=50ms", "first=2Mbps")),
)
"""The fixed set: wired, one call, video over a bottleneck of constant, stepped and varying
capacity (RFC 8867 §5.1; De Cicco et al. 2013; Sjölund and Kevo 2022; Guerrero Viveros 2019).
About 620 s of calls."""


def parse_case(text: str) -> Case:
    """`scenario` or `scenario:name=value,name=value` (a variant's values, as `--set` takes
    them)."""
    scenario, _, sets = text.partition(":")
    if not scenario:
        raise InputError(f"a calibration case is SCENARIO or SCENARIO:name=value,..., got {text!r}")
    return Case(scenario, tuple(s for s in sets.split(",") if s))


_METRICS = (
    ("send_rate_kbps", "mean_send_rate_bps", 1e-3),
    ("qdelay_p50_ms", "qdelay_p50_ms", 1.0),
    ("qdelay_p95_ms", "qdelay_p95_ms", 1.0),
    ("loss", "loss_ratio", 1.0),
)
SCHEMA = {
    "case": pl.String,
    "flow": pl.String,
    "phase": pl.Int32,
    "start_s": pl.Float64,
    "end_s": pl.Float64,
    "capacity_kbps": pl.Float64,
    "metric": pl.String,
    "browser": pl.Float64,
    "simulated": pl.Float64,
    "difference": pl.Float64,
    "agrees": pl.Boolean,
    "cpu_limited": pl.Float64,
}
"""One row per case, video flow, phase and metric (`difference`: simulated / browser − 1, or
simulated − browser for loss; `cpu_limited`: the share of the browser sender's samples in which
its encoder was held back by the CPU, over the whole run: above a few percent, the machine, not
the network, shaped the browser's side)."""


def _agrees(metric: str, browser: float | None, simulated: float | None) -> tuple[float | None, bool | None]:
    if browser is None or simulated is None:
        return None, None
    if metric == "loss":
        return simulated - browser, abs(simulated - browser) <= max(LOSS_SLACK, RATE_TOLERANCE * browser)
    relative = simulated / browser - 1.0 if browser else None
    slack = DELAY_SLACK_MS if metric.startswith("qdelay") else 0.0
    return relative, abs(simulated - browser) <= max(slack, RATE_TOLERANCE * abs(browser))


def cpu_limited(browser: dict[str, Any], flow: str) -> float | None:
    """The share of samples in which the browser's encoder of `flow` (`<call>.video`) was held
    back by the CPU (`browser.calls.<call>.quality_limitation.cpu`)."""
    call = (browser.get("browser") or {}).get("calls", {}).get(flow.rsplit(".", 1)[0]) or {}
    shares = call.get("quality_limitation")
    return None if shares is None else float(shares.get("cpu", 0.0))


def compare_phases(label: str, browser: dict[str, Any], simulated: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows (`SCHEMA`) comparing two summaries of one scenario variant, per video flow and
    phase."""
    rows: list[dict[str, Any]] = []
    for b_phase, s_phase in zip(browser["phases"], simulated["phases"], strict=True):
        sim_flows = {f["name"]: f for f in s_phase["flows"]}
        for bf in b_phase["flows"]:
            if bf.get("kind") != "video" or bf["name"] not in sim_flows:
                continue
            sf = sim_flows[bf["name"]]
            for metric, key, scale in _METRICS:
                b = bf.get(key)
                s = sf.get(key)
                b = None if b is None else b * scale
                s = None if s is None else s * scale
                difference, agrees = _agrees(metric, b, s)
                cap = b_phase.get("capacity_bps")
                rows.append(
                    {
                        "case": label,
                        "flow": bf["name"],
                        "phase": b_phase["index"],
                        "start_s": b_phase["start_s"],
                        "end_s": b_phase["end_s"],
                        "capacity_kbps": None if cap is None else cap / 1000,
                        "metric": metric,
                        "browser": b,
                        "simulated": s,
                        "difference": difference,
                        "agrees": agrees,
                        "cpu_limited": cpu_limited(browser, bf["name"]),
                    }
                )
    return rows


def _variant(case: Case) -> Variant:
    variants = resolve(case.scenario, list(case.sets))
    if len(variants) != 1:
        raise InputError(
            f"calibration case {case.label()} names {len(variants)} variants: give every variant's value"
        )
    return variants[0]


def _summary(
    case: Case, mode: str, out: Path, seed: int, command: str | None, event_log: bool = False,
    kept_failure: bool = False,
) -> tuple[dict[str, Any], bool, Path]:  # fmt: skip
    """The summary of `case` run in `mode` under `out`, whether it was run now (False: a
    complete run found there, kept), and its folder; a browser run records its Chromium peers'
    RTC event logs if `event_log`. A failed browser run found there is run again, unless
    `kept_failure` (it was just run, on a cluster)."""
    variant = _variant(case)
    logged = event_log and mode == BROWSER
    folder = run_folder(out, variant, CONTROLLER, seed, mode, Browsers(event_log=True) if logged else None)
    with contextlib.suppress(InputError):
        summary = read_summary(folder)
        if kept_failure or not _failure(summary):
            return summary, False, folder
    result = run_variant(
        variant, CONTROLLER, seed, out, figure=True, command=command, mode=mode, browser_event_log=logged
    )
    return result.summary, True, folder


def on_cluster(
    out: Path,
    cases: Sequence[Case],
    seed: int,
    command: str | None,
    event_log: bool,
    address: str,
    on_run: Callable[[Case, str, dict[str, Any], bool], None] | None,
) -> set[Case]:
    """Makes the browser runs of `cases` that `out` holds no complete, unfailed run of on the Ray
    cluster at `address`, each on a node of its own (`reproduce.browser_runs`; a failed call is
    set aside and run once more), telling `on_run` of each; returns the cases it ran."""
    from rtcbench.reproduce import browser_runs
    from rtcbench.suite import _Job, batch_folder

    plan = {}
    for case in cases:
        job = _Job.plan(
            _variant(case), CONTROLLER, CONTROLLER, seed, out, command, BROWSER, event_log=event_log
        )
        kept = job.done()
        if kept is None or _failure(kept):
            plan[case] = job

    def told(case: Case, summary: dict[str, Any], ran: bool) -> None:
        if on_run is not None:
            on_run(case, BROWSER, summary, ran)

    with batch_folder(out, list(plan.values())):
        browser_runs(
            plan, (), out, told=told, problem=lambda summary, folder: _failure(summary), ray_address=address
        )
    return set(plan)


def _failure(summary: dict[str, Any]) -> str | None:
    """Why a browser run failed (its browsers did not complete the call), or None."""
    failure = (summary.get("browser") or {}).get("failure")
    return str(failure) if failure else None


def calibrate(
    out: Path,
    cases: Sequence[Case] = CASES,
    *,
    seed: int = 1,
    command: str | None = None,
    on_run: Callable[[Case, str, dict[str, Any], bool], None] | None = None,
    event_log: bool = False,
    ray_address: str | None = None,
) -> pl.DataFrame:
    """Runs every case in browser mode and in simulation with `gcc` (a complete run already in
    `out` is kept), writes `<out>/calibration.parquet` and returns it (`SCHEMA`). `on_run` is told
    of each run: its case, mode, summary and whether it ran now. With `event_log`, the browser
    runs record Chromium's RTC event logs, and GoogCC's decisions in each case are set side by
    side (`rtcbench.eventlog.side_by_side`): `<out>/decisions.parquet` and one figure per case in
    `<out>/decisions/`. With `ray_address`, the browser runs not complete in `out` are first
    spread over that Ray cluster's nodes, one at a time on each (`on_cluster`), under `out` made
    absolute."""
    rows: list[dict[str, Any]] = []
    decided: list[pl.DataFrame] = []
    told: set[Case] = set()
    if ray_address is not None:
        out = out.absolute()
        told = on_cluster(out, cases, seed, command, event_log, ray_address, on_run)
    for case in cases:
        summaries, folders = {}, {}
        for mode in (BROWSER, SIMULATE):
            summary, ran, folders[mode] = _summary(case, mode, out, seed, command, event_log, case in told)
            if on_run is not None and not (mode == BROWSER and case in told):
                on_run(case, mode, summary, ran)
            summaries[mode] = summary
        if failure := _failure(summaries[BROWSER]):
            raise InputError(f"calibration case {case.label()}: the browser run failed: {failure}")
        rows += compare_phases(case.label(), summaries[BROWSER], summaries[SIMULATE])
        if event_log:
            from rtcbench.eventlog import side_by_side

            figure = out / DECISIONS_FOLDER / f"{case.slug()}.png"
            decided.append(side_by_side.case(case.label(), folders[BROWSER], folders[SIMULATE], figure))
    table = pl.DataFrame(rows, schema=SCHEMA)
    out.mkdir(parents=True, exist_ok=True)
    write_parquet_atomic(table, out / TABLE)
    if decided:
        write_parquet_atomic(pl.concat(decided), out / DECISIONS)
    return table
