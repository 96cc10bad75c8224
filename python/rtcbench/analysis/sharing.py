"""How flows share the network: fairness between flows, feedback overhead and cross traffic
(`docs/metrics.md`, "Fairness between flows", "Feedback overhead" and "Cross traffic")."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import polars as pl

from rtcbench.analysis.capacity import phases
from rtcbench.analysis.flows import _clip, _flow, _flows, _is_media, active_span_us
from rtcbench.tables import _US_PER_S, CROSS_KINDS, RTCP, VIDEO, Tables, _duration_us, _py

FAIR_RATIO_BAND = (1.0 / 3.0, 3.0)
"""Throughput ratio between equal-priority flows with similar RTTs, RFC 8868 §3 item 7."""
FAIRNESS_SETTLE_US = 5_000_000
"""Start of an interval skipped before comparing flows (RFC 8868 §3(7): static periods only);
[ASSUMED] 5 s, like H, and never more than half of the interval."""

DATA_KINDS = (VIDEO, "tcp", "cbr")
"""The flows a bottleneck's all-flow fairness compares: every flow that carries data and competes
for the capacity. Audio (its codec fixes the rate), RTCP, TCP ACKs and the UDP background that
makes RFC 8867 §4.2's capacity are left out."""


# ------------------------------------------------------------------------------------------------
# fairness between flows


def jain_index(rates: Iterable[float]) -> float | None:
    """Jain's fairness index (Σx)² / (n·Σx²) of n non-negative rates (Jain, Chiu and Hawe, DEC-TR-301,
    1984): 1 when every flow gets the same, 1/n when one flow gets everything. None for no rates or
    when every rate is 0 (the index is undefined there)."""
    x = np.asarray(list(rates), dtype=np.float64)
    if x.size == 0:
        return None
    if not np.isfinite(x).all() or (x < 0).any():
        raise ValueError(f"rates must be finite and non-negative, got {x.tolist()}")
    squares = float(np.dot(x, x))
    if squares == 0.0:
        return None
    return float(x.sum()) ** 2 / (x.size * squares)


def share_ratios(rates: Sequence[float]) -> list[float | None]:
    """Each rate divided by the mean of the rates: 1 is an equal share. None everywhere if the mean
    is 0 or there are no rates."""
    mean = sum(rates) / len(rates) if rates else 0.0
    return [r / mean if mean > 0 else None for r in rates]


def _compared_flows(t: Tables, flows: Sequence[int] | None) -> list[int]:
    """The flows a fairness metric compares: the given ids (checked), or every video flow. Audio is
    left out by default: its rate is fixed by the codec, not shared by the controller."""
    if flows is None:
        return [int(f["id"]) for f in _flows(t) if f.get("kind") == VIDEO]
    return [int(_flow(t, int(fid))["id"]) for fid in flows]


def fairness(
    t: Tables,
    ts: pl.DataFrame,
    flows: Sequence[int] | None = None,
    start_us: int = 0,
    end_us: int | None = None,
    settle_us: int = FAIRNESS_SETTLE_US,
) -> dict[str, Any]:
    """How evenly `flows` (default: every video flow) share over [start_us + settle, end_us)
    (by default the interval in which all of them are active, `active_span_us`).

    Each flow's rate is its mean receive rate over the windows of `ts` starting in the interval
    (the `mean_recv_rate_bps` of `flow_metrics`), since fairness is about what the network
    delivered (RFC 8868 §3 item 7, "throughput"). settle = min(settle_us, half the interval), so a
    short phase is still measured. Returns `jain_index`, each flow's `share_ratio` (its rate / the
    mean rate), their extremes, `max_rate_ratio` (largest / smallest rate, the worst pair) and
    `within_band` (every pair within RFC 8868's [1/3, 3]; None with fewer than two flows). A flow
    that received nothing counts, with rate 0: starvation is the unfairness to detect.
    """
    ids = _compared_flows(t, flows)
    if end_us is None:
        start_us, end = _common_span_us(t, ids)
    else:
        end = end_us
    settle = max(0, min(settle_us, (end - start_us) // 2))
    s = start_us + settle
    means: dict[int, float | None] = {
        int(fid): _py(rate)
        for fid, rate in ts.filter(pl.col("flow").is_in(ids) & pl.col("t_us").is_between(s, end - 1))
        .group_by("flow")
        .agg(pl.col("recv_rate_bps").mean())
        .iter_rows()
    }
    rates = [means.get(fid) for fid in ids]
    known = [r for r in rates if r is not None]
    complete = len(known) == len(rates) and bool(rates)
    jain = jain_index(known) if complete else None
    shares = share_ratios(known) if complete else [None] * len(ids)
    lo, hi = (min(known), max(known)) if complete else (0.0, 0.0)
    valid = [x for x in shares if x is not None]
    within: bool | None = None
    if len(ids) >= 2 and jain is not None:
        within = lo > 0 and hi / lo <= FAIR_RATIO_BAND[1]
    return {
        "start_s": start_us / _US_PER_S,
        "end_s": end / _US_PER_S,
        "settle_s": settle / _US_PER_S,
        "jain_index": jain,
        "min_share_ratio": min(valid) if valid else None,
        "max_share_ratio": max(valid) if valid else None,
        "max_rate_ratio": hi / lo if complete and lo > 0 else None,
        "within_band": within,
        "flows": [
            {
                "id": fid,
                "name": str(_flow(t, fid).get("name", "")),
                "mean_recv_rate_bps": rate,
                "share_ratio": share,
            }
            for fid, rate, share in zip(ids, rates, shares, strict=True)
        ],
    }


def _common_span_us(t: Tables, ids: Sequence[int]) -> tuple[int, int]:
    """The interval in which every flow of `ids` is active (`active_span_us`); empty (start =
    end) if there is none."""
    dur = _duration_us(t)
    spans = [active_span_us(_flow(t, fid), dur) for fid in ids] or [(0, dur)]
    start = max(a for a, _ in spans)
    return start, max(start, min(b for _, b in spans))


def fairness_of_bottlenecks(
    t: Tables, ts: pl.DataFrame, settle_us: int = FAIRNESS_SETTLE_US
) -> list[dict[str, Any]]:
    """`fairness` of all the data flows (`DATA_KINDS`) sharing each link that is the bottleneck of
    two or more of them, over the interval in which they are all active: the media-only index
    says nothing of a call starved by TCP. Each entry adds `link` and `covers` (the kinds it
    compares) to the `fairness` dict."""
    by_link: dict[str, list[int]] = {}
    for f in _flows(t):
        if f.get("kind") in DATA_KINDS and f.get("workload") != "udp-background" and f.get("bottleneck"):
            by_link.setdefault(str(f["bottleneck"]), []).append(int(f["id"]))
    out: list[dict[str, Any]] = []
    for link in _links_in_order(t, by_link):
        members = by_link[link]
        if len(members) < 2:
            continue
        start, end = _common_span_us(t, members)
        kinds = sorted({str(_flow(t, fid).get("kind")) for fid in members})
        out.append({"link": link, "covers": kinds, **fairness(t, ts, members, start, end, settle_us)})
    return out


def _links_in_order(t: Tables, links: Iterable[str]) -> list[str]:
    """Link names in `meta.links` order, unknown names after them, sorted."""
    wanted = set(links)
    order = [str(lk.get("name")) for lk in t.meta.get("links", [])]
    return [lk for lk in order if lk in wanted] + sorted(wanted - set(order))


def fairness_per_phase(
    t: Tables,
    ts: pl.DataFrame,
    flows: Sequence[int] | None = None,
    settle_us: int = FAIRNESS_SETTLE_US,
) -> list[dict[str, Any]]:
    """`fairness` of the compared flows (default: every video flow) in each constant-capacity phase
    of their bottleneck. Flows are grouped by bottleneck link (in `meta.links` order); each entry
    adds `index` (within the link), `link` and `capacity_bps` to the `fairness` dict."""
    ids = _compared_flows(t, flows)
    by_link: dict[str, list[int]] = {}
    for fid in ids:
        by_link.setdefault(str(_flow(t, fid).get("bottleneck")), []).append(fid)
    out: list[dict[str, Any]] = []
    for link in _links_in_order(t, by_link):
        members = by_link[link]
        for i, ph in enumerate(phases(t, members[0])):
            f = fairness(t, ts, members, ph.start_us, ph.end_us, settle_us)
            out.append({"index": i, "link": link, "capacity_bps": ph.capacity_bps, **f})
    return out


# ------------------------------------------------------------------------------------------------
# feedback overhead and cross traffic


def _packet_counts(t: Tables, flows: Sequence[int], start_us: int, end_us: int) -> dict[int, dict[str, int]]:
    """Per flow over [start_us, end_us): packets and bytes sent and dropped (by send time, as
    `flow_metrics` counts them) and received (by arrival time), plus the payload received. Flows
    without packets get zeros."""
    out: dict[int, dict[str, int]] = {}
    for fid in flows:
        pk = t._by_flow.packet_stats(fid, start_us, end_us)
        out[int(fid)] = {
            "packets_sent": pk.sent,
            "packets_received": pk.received,
            "packets_dropped": pk.dropped,
            "bytes_sent": pk.sent_bytes,
            "bytes_received": pk.received_bytes,
            "payload_received": pk.payload_received,
        }
    return out


def _rtcp_direction(t: Tables, f: dict[str, Any]) -> str:
    """`to_sender` for the media receiver's feedback (RR, TWCC, RFC 8888, REMB), `to_receiver` for
    the media sender's reports, from the node the flow's first link leaves; `unknown` otherwise."""
    call = next((c for c in t.meta.get("calls", []) if c.get("id") == f.get("call")), None)
    origin = None
    if f.get("path"):
        first = str(f["path"][0])
        origin = next((lk.get("from") for lk in t.meta.get("links", []) if lk.get("name") == first), None)
    if call is not None and origin is not None:
        if origin == call.get("receiver"):
            return "to_sender"
        if origin == call.get("sender"):
            return "to_receiver"
    return "unknown"


def feedback_overhead(t: Tables, start_us: int = 0, end_us: int | None = None) -> dict[str, Any]:
    """RTCP sent per call and direction over [start_us, end_us), on the wire (IP and UDP headers
    included), and as a share of the call's media bytes sent (RFC 8867 §4.1.1 D, "feedback message
    overhead"). Packets are counted when they are sent, so feedback lost on a congested return path
    still costs. Returns the run totals (`rate_bps`, `share_of_media`) and one `calls` entry per
    (call, direction): `flows`, `packets_sent`, `bytes_sent`, `bytes_per_s`, `rate_bps`,
    `media_rate_bps` (the call's media flows) and `share_of_media`."""
    end = _duration_us(t) if end_us is None else end_us
    ids = [int(f["id"]) for f in _flows(t) if f.get("kind") == RTCP or _is_media(f)]
    return _feedback_overhead(t, _packet_counts(t, ids, start_us, end), end - start_us)


def _feedback_overhead(t: Tables, counts: dict[int, dict[str, int]], span_us: int) -> dict[str, Any]:
    """`feedback_overhead` from the RTCP and media flows' `_packet_counts` over an interval of
    `span_us`; `t` gives the calls, links and flows (its `meta`)."""
    span_s = span_us / _US_PER_S
    flows = _flows(t)
    rtcp = [f for f in flows if f.get("kind") == RTCP]
    media = [f for f in flows if _is_media(f)]

    media_bytes: dict[Any, int] = {}
    for f in media:
        media_bytes[f.get("call")] = media_bytes.get(f.get("call"), 0) + counts[int(f["id"])]["bytes_sent"]
    groups: dict[tuple[Any, str], list[int]] = {}
    for f in rtcp:
        groups.setdefault((f.get("call"), _rtcp_direction(t, f)), []).append(int(f["id"]))

    def rate(n_bytes: int) -> float | None:
        return n_bytes * 8 / span_s if span_s > 0 else None

    def share(n_bytes: int, of: int) -> float | None:
        return n_bytes / of if of > 0 else None

    order = {"to_sender": 0, "to_receiver": 1}
    entries: list[dict[str, Any]] = []
    for (call, direction), ids in sorted(
        groups.items(), key=lambda kv: (kv[0][0] is None, kv[0][0] or 0, order.get(kv[0][1], 2))
    ):
        n_bytes = sum(counts[i]["bytes_sent"] for i in ids)
        of = media_bytes.get(call, 0)
        entries.append(
            {
                "call": call,
                "direction": direction,
                "flows": ids,
                "packets_sent": sum(counts[i]["packets_sent"] for i in ids),
                "bytes_sent": n_bytes,
                "bytes_per_s": n_bytes / span_s if span_s > 0 else None,
                "rate_bps": rate(n_bytes),
                "media_rate_bps": rate(of),
                "share_of_media": share(n_bytes, of),
            }
        )
    total = sum(e["bytes_sent"] for e in entries)
    return {
        "rate_bps": rate(total),
        "share_of_media": share(total, sum(media_bytes.values())),
        "calls": entries,
    }


def _traffic_stats(counts: dict[str, int], span_us: int) -> dict[str, Any]:
    span_s = span_us / _US_PER_S
    sent = counts["packets_sent"]
    return {
        "packets_sent": sent,
        "packets_received": counts["packets_received"],
        "packets_dropped": counts["packets_dropped"],
        "bytes_sent": counts["bytes_sent"],
        "bytes_received": counts["bytes_received"],
        "throughput_bps": counts["bytes_received"] * 8 / span_s if span_s > 0 else None,
        "goodput_bps": counts["payload_received"] * 8 / span_s if span_s > 0 else None,
        "loss_ratio": counts["packets_dropped"] / sent if sent else None,
    }


def cross_traffic(t: Tables, kinds: Sequence[str] = CROSS_KINDS) -> list[dict[str, Any]]:
    """Throughput, goodput and loss of every flow whose kind is in `kinds` (default TCP and CBR
    cross traffic), over the time its source runs (`active_span_us`) and in each
    constant-capacity phase of its bottleneck (the part of it in that span).

    `throughput_bps` counts received bytes on the wire (RFC 8867 §5.6/§5.7 "TCP throughput"),
    `goodput_bps` the received `payload` bytes; both per second of the interval, so a flow that
    runs from 20 s of 60 s is not reported at two thirds of its rate. `throughput_run_bps` is the
    same bytes over the whole run, under its own name. `loss_ratio` is dropped / sent among the
    packets sent in the interval, as for media flows. Packet rows are counted per flow id,
    whatever their `kind` column says.
    """
    return [_cross_traffic_of(t, f) for f in _flows(t) if f.get("kind") in kinds]


def _cross_traffic_of(t: Tables, f: dict[str, Any]) -> dict[str, Any]:
    """The `cross_traffic` entry of one flow."""
    dur = _duration_us(t)
    fid = int(f["id"])
    a, b = active_span_us(f, dur)
    per_phase = []
    for i, ph in enumerate(phases(t, fid)):
        s, e = _clip(ph.start_us, ph.end_us, a, b)
        counts = _packet_counts(t, [fid], s, e)[fid]
        per_phase.append(
            {
                "index": i,
                "start_s": ph.start_s,
                "end_s": ph.end_s,
                "capacity_bps": ph.capacity_bps,
                **_traffic_stats(counts, e - s),
            }
        )
    whole = _packet_counts(t, [fid], 0, dur)[fid]
    return {
        "id": fid,
        "name": str(f.get("name", "")),
        "kind": str(f.get("kind")),
        "workload": f.get("workload"),
        "bottleneck": f.get("bottleneck"),
        "active_start_s": a / _US_PER_S,
        "active_end_s": b / _US_PER_S,
        **_traffic_stats(_packet_counts(t, [fid], a, b)[fid], b - a),
        "throughput_run_bps": whole["bytes_received"] * 8 / (dur / _US_PER_S) if dur > 0 else None,
        "phases": per_phase,
    }
