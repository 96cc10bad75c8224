"""What a seed measured, measured the same way on any run: the simulator's, an emulated one or a
browser's. Every run folder holds the same tables (docs/traces.md), so one measure reads them all.

A measure is a small frozen dataclass, so the registry (`experiments`) is data that prints as what
it measures, and a measure's value on a run is `measure(run)`: a float, or None when the run has
nothing to measure (no packet of the flow in the window).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import polars as pl

from rtcbench import analysis
from rtcbench.runner import RunResult

__all__ = ["VIDEO", "FlowStat", "Flows", "LinkTotal", "Measure", "Ratio", "Share", "TimeToReach"]

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
