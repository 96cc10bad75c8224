"""The summary of a run (`docs/metrics.md`, "Run summary"): every flow over the time it runs and per
phase and period of its bottleneck, convergence, fairness, feedback overhead, cross traffic and the radio
access. `flow_summaries` and `assemble` let a long run be measured a few flows at a time
(`rtcbench.measure`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from rtcbench.analysis.capacity import Period, periods, phases, sharing_flows
from rtcbench.analysis.convergence import _convergence_time, _reference_rates, _settling_time
from rtcbench.analysis.flags import flow_flags
from rtcbench.analysis.flows import _clip, _flow, _flows, _is_media, active_span_us
from rtcbench.analysis.l4s import dualpi2_links
from rtcbench.analysis.per_flow import _flow_metrics
from rtcbench.analysis.radio import lte_buffers, wifi_nodes
from rtcbench.analysis.sharing import (
    _cross_traffic_of,
    _feedback_overhead,
    _packet_counts,
    cross_traffic,
    fairness,
    fairness_of_bottlenecks,
    fairness_per_phase,
    feedback_overhead,
)
from rtcbench.analysis.time_series import _Windows, timeseries
from rtcbench.tables import _US_PER_S, CROSS_KINDS, VIDEO, Tables, _duration_us


def _fairness(t: Tables, ts: pl.DataFrame) -> dict[str, Any]:
    """The `fairness` key of a summary: `run` (the video flows, while all run), `phases` (per
    phase of their bottleneck) and `bottlenecks` (all data flows per shared link)."""
    return {
        "run": {"covers": [VIDEO], **fairness(t, ts)},
        "phases": fairness_per_phase(t, ts),
        "bottlenecks": fairness_of_bottlenecks(t, ts),
    }


def traffic_summary(t: Tables, ts: pl.DataFrame | None = None) -> dict[str, Any]:
    """The sharing part of a run summary: `fairness` (`_fairness`), `feedback_overhead` and
    `cross_traffic`. `summarize` includes it."""
    ts = timeseries(t) if ts is None else ts
    return {
        "fairness": _fairness(t, ts),
        "feedback_overhead": feedback_overhead(t),
        "cross_traffic": cross_traffic(t),
    }


def media_links(meta: dict[str, Any]) -> list[str]:
    """The links that are the bottleneck of a media flow, in `meta.links` order (unknown names
    after them, sorted): the links `summarize` gives phases for."""
    flows: list[dict[str, Any]] = meta["flows"]
    wanted = {str(f["bottleneck"]) for f in flows if _is_media(f) and f.get("bottleneck") is not None}
    order = [str(lk.get("name")) for lk in meta.get("links", [])]
    return [lk for lk in order if lk in wanted] + sorted(wanted - set(order))


@dataclass(frozen=True)
class FlowSummary:
    """What a run summary says of one flow, computed from that flow's rows alone, so that the
    flows of a long run can be measured a few at a time (`rtcbench.measure`) and put together by
    `assemble`.

    `run`: `flow_metrics` over the time its source runs (`active_span_us`; a media flow's
    `settling_time_s` is measured from its start to the end of that phase); `phases`:
    `flow_metrics` over each phase of its bottleneck (the part of it in that span), if that link
    is in `media_links`;
    `periods`: `flow_metrics` over each period of that link (`periods`) it runs in (the part of it
    in that span), None for the others;
    `counts`: `_packet_counts` over the run (feedback overhead); `cross`: its `cross_traffic`
    entry, for TCP and CBR flows."""

    run: dict[str, Any]
    phases: list[dict[str, Any]] | None
    periods: list[dict[str, Any] | None] | None
    counts: dict[str, int]
    cross: dict[str, Any] | None


def link_periods(t: Tables, links: Sequence[str]) -> dict[str, list[Period]]:
    """The periods (`periods`) of each of `links`; `t.meta["flows"]` must list every flow of the run."""
    return {link: periods(t, link) for link in links}


def flow_summaries(
    t: Tables,
    ts: pl.DataFrame,
    links: Sequence[str],
    sharing: dict[str, list[Period]] | None = None,
) -> dict[int, FlowSummary]:
    """`FlowSummary` of every flow of `t.meta["flows"]` (which may be some of a run's flows, with
    their rows), given the run's time series of those flows, its `media_links` and the periods of
    those links (`link_periods` of the whole run; computed from `t` if not given, which is right
    only when `t.meta` lists every flow)."""
    windows = _Windows.of(ts)
    dur = _duration_us(t)
    sharing = link_periods(t, links) if sharing is None else sharing
    out: dict[int, FlowSummary] = {}
    for f in _flows(t):
        fid = int(f["id"])
        a, b = active_span_us(f, dur)
        m = {
            **_flow_metrics(t, windows, fid, a, b),
            "active_start_s": a / _US_PER_S,
            "active_end_s": b / _US_PER_S,
        }
        if _is_media(f):
            first = next((ph for ph in phases(t, fid) if ph.end_us > a), None)
            end = min(first.end_us, b) if first is not None else b
            m["settling_time_s"] = _settling_time(windows, fid, a, end, "send_rate_bps")
        per_phase = per_period = None
        if f.get("bottleneck") is not None and str(f["bottleneck"]) in links:
            link = str(f["bottleneck"])
            spans = [_clip(ph.start_us, ph.end_us, a, b) for ph in phases(t, link)]
            per_phase = [_flow_metrics(t, windows, fid, *span) for span in spans]
            # A period that is the flow's whole part of a phase has that phase's numbers.
            per_period = [
                None
                if fid not in p.flows
                else dict(per_phase[p.phase])
                if spans[p.phase] == _clip(p.start_us, p.end_us, a, b)
                else _flow_metrics(t, windows, fid, *_clip(p.start_us, p.end_us, a, b))
                for p in sharing[link]
            ]
        out[fid] = FlowSummary(
            run=m,
            phases=per_phase,
            periods=per_period,
            counts=_packet_counts(t, [fid], 0, dur)[fid],
            cross=_cross_traffic_of(t, f) if f.get("kind") in CROSS_KINDS else None,
        )
    return out


def assemble(t: Tables, parts: dict[int, FlowSummary], ts: pl.DataFrame) -> dict[str, Any]:
    """The summary of a run from the `FlowSummary` of each of its flows. `t` gives `meta` and the
    links table (its other tables may be empty); `ts` needs, of the time series, every flow's
    `t_us`, `send_rate_bps` and `recv_rate_bps` (convergence and fairness compare flows)."""
    flows = _flows(t)
    windows = _Windows.of(ts)
    dur = _duration_us(t)
    out_phases: list[dict[str, Any]] = []
    for link in media_links(t.meta):
        members = [int(f["id"]) for f in flows if f.get("bottleneck") == link]
        for i, ph in enumerate(phases(t, link)):
            in_phase = [_phase_of(parts[fid], i) for fid in members]
            refs = _reference_rates(t, windows, link, ph.start_us, ph.end_us, ph.capacity_bps)
            for fid, m in zip(members, in_phase, strict=True):
                if m["kind"] == VIDEO:
                    s, e = _clip(ph.start_us, ph.end_us, *active_span_us(_flow(t, fid), dur))
                    m["convergence_time_s"] = _convergence_time(
                        windows, fid, s, e, refs.get(fid), "send_rate_bps"
                    )
            out_phases.append(
                {
                    "index": i,
                    "link": link,
                    "start_s": ph.start_s,
                    "end_s": ph.end_s,
                    "capacity_bps": ph.capacity_bps,
                    "flows": in_phase,
                }
            )
    out_periods: list[dict[str, Any]] = []
    for link, of_link in link_periods(t, media_links(t.meta)).items():
        for i, p in enumerate(of_link):
            in_period = [got for fid in p.flows if (got := _period_of(parts[fid], i)) is not None]
            refs = _reference_rates(t, windows, link, p.start_us, p.end_us, p.capacity_bps)
            for got in in_period:
                if got["kind"] == VIDEO:
                    fid = int(got["id"])
                    got["convergence_time_s"] = _convergence_time(
                        windows, fid, p.start_us, p.end_us, refs.get(fid), "send_rate_bps"
                    )
            out_periods.append(
                {
                    "index": i,
                    "link": link,
                    "phase": p.phase,
                    "start_s": p.start_s,
                    "end_s": p.end_s,
                    "capacity_bps": p.capacity_bps,
                    "capacity_changed": p.capacity_changed,
                    "sharing": list(p.sharing),
                    "joined": list(p.joined),
                    "left": list(p.left),
                    "flows": in_period,
                }
            )
    minimum = {int(c["id"]): c.get("video_min_bps") for c in t.meta.get("calls", [])}
    for f in flows:
        if f.get("kind") == VIDEO:
            run = parts[int(f["id"])].run
            run["convergence_time_s"] = _startup_convergence(t, windows, f)
            run.update(_after_events(t, f, out_periods))
            min_bps = minimum.get(int(f["call"])) if f.get("call") is not None else None
            run["flags"] = flow_flags(f, run, windows, active_span_us(f, dur), min_bps)
    counts = {fid: p.counts for fid, p in parts.items()}
    out = {
        "flows": [parts[int(f["id"])].run for f in flows],
        "phases": out_phases,
        "periods": out_periods,
        "fairness": _fairness(t, ts),
        "feedback_overhead": _feedback_overhead(t, counts, dur),
        "cross_traffic": [parts[int(f["id"])].cross for f in flows if f.get("kind") in CROSS_KINDS],
    }
    nodes = wifi_nodes(t)
    if nodes:
        out["wifi"] = nodes
    buffers = lte_buffers(t)
    if buffers:
        out["lte"] = buffers
    return out


def _startup_convergence(t: Tables, windows: _Windows, f: dict[str, Any]) -> float | None:
    """A video flow's start-up convergence time: from its start until the next event on its
    bottleneck (a capacity change, another flow starting or stopping there) or its stop, against
    its reference rate in that interval (`convergence_time`)."""
    dur = _duration_us(t)
    a, b = active_span_us(f, dur)
    link = f.get("bottleneck")
    if link is None:
        return None
    link_phases = phases(t, str(link))
    events = [ph.end_us for ph in link_phases]
    for g in sharing_flows(t, str(link)):
        if g.get("call") is None or g.get("call") != f.get("call"):
            events += list(active_span_us(g, dur))
    end = min([e for e in events if e > a] + [b])
    capacity = next((ph.capacity_bps for ph in link_phases if ph.start_us <= a < ph.end_us), None)
    refs = _reference_rates(t, windows, str(link), a, end, capacity)
    return _convergence_time(windows, int(f["id"]), a, end, refs.get(int(f["id"])), "send_rate_bps")


AFTER_EVENT_KEYS = ("reconvergence_s", "reconvergence_missed", "recovery_s", "recovery_missed")
"""A video flow's convergence after the events of its run (`_after_events`)."""


def _after_events(t: Tables, f: dict[str, Any], periods: list[dict[str, Any]]) -> dict[str, Any]:
    """A video flow's convergence after each event of its bottleneck's periods (`AFTER_EVENT_KEYS`):
    after a capacity change (`reconvergence_s`) and after competition left (`recovery_s`: a TCP or
    CBR flow, or another call's media, on its link or its radio medium stopped), each the mean over
    the events after which it converged within the period that follows, and the number of events
    after which it did not (`*_missed`). None and 0 where the run has no such event while the flow
    runs; a period that starts with both counts for both; the flow's own start is its start-up."""
    fid, call = int(f["id"]), f.get("call")
    calls = {int(g["id"]): g.get("call") for g in _flows(t)}
    after: dict[str, list[float | None]] = {"reconvergence": [], "recovery": []}
    for p in periods:
        mine = next((g for g in p["flows"] if int(g["id"]) == fid), None)
        if p["link"] != f.get("bottleneck") or mine is None or fid in p["joined"]:
            continue
        converged = mine.get("convergence_time_s")
        if p["capacity_changed"]:
            after["reconvergence"].append(converged)
        if any(calls.get(int(g)) is None or calls.get(int(g)) != call for g in p["left"]):
            after["recovery"].append(converged)
    out: dict[str, Any] = {}
    for name, times in after.items():
        done = [x for x in times if x is not None]
        out[f"{name}_s"] = sum(done) / len(done) if done else None
        out[f"{name}_missed"] = len(times) - len(done)
    return out


def _period_of(part: FlowSummary, i: int) -> dict[str, Any] | None:
    if part.periods is None:
        raise ValueError(f"flow {part.run['id']} has no period metrics")
    return part.periods[i]


def _phase_of(part: FlowSummary, i: int) -> dict[str, Any]:
    if part.phases is None:
        raise ValueError(f"flow {part.run['id']} has no phase metrics")
    return part.phases[i]


def summarize(t: Tables, ts: pl.DataFrame | None = None) -> dict[str, Any]:
    """The summary of a run: `{"flows": [...], "phases": [...], ...}`, JSON-safe, nothing rounded.

    `flows` has one `flow_metrics` dict per flow over the time its source runs; a video flow's
    `convergence_time_s` is its start-up convergence (`_startup_convergence`). `phases` lists, for
    each link that is the bottleneck of a media flow, its constant-capacity phases (`index` counts
    within the link) with the metrics of every flow bottlenecked there over that phase; `periods`
    the same links' periods (`periods`: phases cut where a flow there starts or stops), each with
    `phase` and the metrics of the flows that run in it. The keys
    of `traffic_summary` (fairness, feedback overhead, cross traffic) follow. Every flow is
    measured from its own rows (`flow_summaries`), which is how a long run is measured a few flows
    at a time.
    """
    ts = timeseries(t) if ts is None else ts
    return with_l4s(assemble(t, flow_summaries(t, ts, media_links(t.meta)), ts), t.links.lazy(), t.meta)


def with_l4s(summary: dict[str, Any], links: pl.LazyFrame, meta: dict[str, Any]) -> dict[str, Any]:
    """`summary` with its `l4s` block when the run has a DualPI2 bottleneck (`analysis.l4s`), read
    from the whole links table (`links`, in memory or scanned from its file)."""
    queues = dualpi2_links(links, meta, summary)
    return {**summary, "l4s": queues} if queues else summary
