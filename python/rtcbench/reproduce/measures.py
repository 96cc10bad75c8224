"""What a seed measured, measured the same way on any run: the simulator's, an emulated one or a
browser's. Every run folder holds the same tables (docs/traces.md), so one measure reads them all.

A measure is a small frozen dataclass, so the registry (`experiments`) is data that prints as what
it measures, and a measure's value on a run is `measure(run)`: a float, or None when the run has
nothing to measure (no packet of the flow in the window).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import polars as pl

from rtcbench import analysis
from rtcbench.runner import RunResult

__all__ = [
    "VIDEO",
    "FlowStat",
    "Flows",
    "LinkTotal",
    "Measure",
    "Ratio",
    "Responsiveness",
    "Share",
    "TimeToReach",
]

_US = 1_000_000


@dataclass(frozen=True)
class Flows:
    """Which flows of a run a measure reads: by name (`names`), or every flow of a kind (`kind`)."""

    names: tuple[str, ...] = ()
    kind: str | None = None

    def ids(self, run: RunResult) -> list[int]:
        flows = run.summary["meta"]["flows"]
        if self.names:
            by_name = {f["name"]: int(f["id"]) for f in flows}
            missing = [n for n in self.names if n not in by_name]
            if missing:
                raise KeyError(f"no flow {', '.join(missing)} in {run.summary.get('scenario')}")
            return [by_name[n] for n in self.names]
        return [int(f["id"]) for f in flows if f["kind"] == self.kind]

    def __str__(self) -> str:
        return "+".join(self.names) if self.names else f"every {self.kind} flow"


VIDEO = Flows(kind="video")


class Measure:
    """A number measured on one run. Subclasses are frozen dataclasses."""

    def __call__(self, run: RunResult) -> float | None:
        raise NotImplementedError


Combine = Literal["sum", "mean", "max"]


@dataclass(frozen=True)
class FlowStat(Measure):
    """One of `analysis.flow_metrics`' statistics (docs/metrics.md) over [start_s, end_s), per flow
    of `flows`, combined: summed (rates of several flows), averaged (the seed's "per direction" of
    a two-way call) or the largest (the worst flow's delay), times `scale` (1e-3: bit/s to
    kbit/s)."""

    flows: Flows
    start_s: float
    end_s: float
    key: str = "mean_send_rate_bps"
    combine: Combine = "sum"
    scale: float = 1e-3

    def __call__(self, run: RunResult) -> float | None:
        values = []
        for fid in self.flows.ids(run):
            m = analysis.flow_metrics(
                run.tables, run.timeseries, fid, round(self.start_s * _US), round(self.end_s * _US)
            )
            value = m.get(self.key)
            if value is not None:
                values.append(float(value))
        if not values:
            return None
        if self.combine == "max":
            return max(values) * self.scale
        total = sum(values)
        return (total / len(values) if self.combine == "mean" else total) * self.scale


@dataclass(frozen=True)
class Ratio(Measure):
    """`numerator / denominator` (a utilisation: a rate over the capacity)."""

    numerator: Measure
    denominator: Measure | float
    scale: float = 1.0

    def __call__(self, run: RunResult) -> float | None:
        a = self.numerator(run)
        b = self.denominator(run) if isinstance(self.denominator, Measure) else self.denominator
        return None if a is None or not b else a / b * self.scale


@dataclass(frozen=True)
class Share(Measure):
    """What `part` is of `part + rest` (a flow's share of what several flows got together)."""

    part: Measure
    rest: Measure

    def __call__(self, run: RunResult) -> float | None:
        a, b = self.part(run), self.rest(run)
        return None if a is None or b is None or a + b <= 0 else a / (a + b)


@dataclass(frozen=True)
class TimeToReach(Measure):
    """Seconds from `start_s` until a flow's rate, averaged over `smooth_s`, first reaches
    `rate_bps` (`analysis.time_to_reach`); `end_s - start_s` if it never does before `end_s`."""

    flows: Flows
    start_s: float
    end_s: float
    rate_bps: float
    column: str = "recv_rate_bps"
    smooth_s: float = 1.0

    def __call__(self, run: RunResult) -> float | None:
        (fid,) = self.flows.ids(run)
        t = analysis.time_to_reach(
            run.timeseries,
            fid,
            round(self.start_s * _US),
            self.rate_bps,
            column=self.column,
            smooth_us=round(self.smooth_s * _US),
        )
        return self.end_s - self.start_s if t is None or t > self.end_s - self.start_s else float(t)


@dataclass(frozen=True)
class Responsiveness(Measure):
    """Sjölund and Kevo 2022's responsiveness (§5.2): at each change of the flow's capacity in
    [start_s, end_s), the controller's output (its target, the controller table) is sampled, and
    then every `step_s` until it differs from that sample by `threshold_bps` or more; the seconds
    that took, averaged over the changes. A change is a boundary of the run's periods
    (`summary["periods"]`) across which the flow's mean capacity moved by more than 1 %.

    The seed counts on without end; here a change the output has not answered by the next change
    (or the run's end) counts as the time to it, so one unanswered dip cannot take the count into
    the next one's answer. None if the window holds no change or the flow has no controller rows."""

    flows: Flows
    start_s: float
    end_s: float
    threshold_bps: float = 250e3
    step_s: float = 0.05

    def __call__(self, run: RunResult) -> float | None:
        (fid,) = self.flows.ids(run)
        flow = next(f for f in run.summary["meta"]["flows"] if int(f["id"]) == fid)
        changes = capacity_changes(run.summary, str(flow["name"]))
        ends = [*changes[1:], float(run.summary["meta"]["duration_s"])]
        controller = run.tables.controller.filter(pl.col("call") == int(flow["call"])).sort("t_us")
        if controller.height == 0:
            return None
        t_us = controller.get_column("t_us").to_numpy()
        target = controller.get_column("target_bps").to_numpy().astype(np.float64)
        times = []
        for at, until in zip(changes, ends, strict=True):
            if not self.start_s <= at < self.end_s:
                continue
            steps = np.arange(max(1, math.ceil((until - at) / self.step_s - 1e-9)))
            index = np.searchsorted(t_us, np.round((at + steps * self.step_s) * _US), side="right") - 1
            if index[0] < 0:
                continue
            output = target[np.maximum(index, 0)]
            moved = np.flatnonzero(np.abs(output - output[0]) >= self.threshold_bps)
            times.append(float(moved[0] * self.step_s) if moved.size else until - at)
        return float(np.mean(times)) if times else None


def capacity_changes(summary: dict[str, Any], flow: str) -> list[float]:
    """The instants (s) at which `flow`'s mean capacity moves by more than 1 % from one of the
    run's periods to the next (`summary["periods"]`, boundaries the scenario sets)."""
    out: list[float] = []
    last: float | None = None
    for period in summary.get("periods", []):
        capacity = next((f.get("mean_capacity_bps") for f in period["flows"] if f["name"] == flow), None)
        if capacity is None:
            continue
        if last is not None and abs(capacity - last) > 0.01 * last:
            out.append(float(period["start_s"]))
        last = float(capacity)
    return out


@dataclass(frozen=True)
class LinkTotal(Measure):
    """A column of the links table summed over a link's samples (a station's MAC drops:
    `LinkTotal("wlan:STA_A", "mac_drops")`)."""

    link: str
    column: str

    def __call__(self, run: RunResult) -> float | None:
        links = run.tables.links.filter(pl.col("link") == self.link)
        if links.height == 0 or self.column not in links.columns:
            return None
        return float(links[self.column].sum())


def describe(measure: Any) -> str:
    """A measure as a reader would name it ("G.video mean_send_rate_bps over 120-200 s")."""
    if isinstance(measure, FlowStat):
        return (
            f"{measure.flows} {measure.key} ({measure.combine}) over {measure.start_s:g}-{measure.end_s:g} s"
        )
    if isinstance(measure, Ratio):
        den = (
            describe(measure.denominator)
            if isinstance(measure.denominator, Measure)
            else f"{measure.denominator:g}"
        )
        return f"({describe(measure.numerator)}) / ({den})"
    if isinstance(measure, Share):
        return f"share of ({describe(measure.part)}) beside ({describe(measure.rest)})"
    return repr(measure)
