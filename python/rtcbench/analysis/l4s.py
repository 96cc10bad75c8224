"""What a DualPI2 bottleneck did (RFC 9332) and how its flows shared it, against what the coupling
predicts (`docs/l4s.md`): the `l4s` block of a run's summary, one entry per DualPI2 link that is a
flow's bottleneck.

The coupling's prediction. DualPI2 marks the L queue with p_L = k·p' (p' its base probability,
k the coupling factor, 2 by default) and drops or marks the C queue with p_C = p'². A scalable
sender (DCTCP, TCP Prague, SCReAM v2 in L4S mode) settles at a window of about 2/p_L packets
(RFC 9332 §2.1, its "two marks per round trip"), a Reno-friendly one (Reno, CUBIC in its
Reno-friendly region) at about 1.22/√p_C packets (RFC 9332 Appendix B, after Mathis et al.). With
packet sizes s_L and s_C and round trips R_L and R_C, the rates are W·s·8/R, so the balance

    rate_L / rate_C = 2 / (1.22·k) · (s_L / s_C) · (R_C / R_L)

holds whatever p' is. It is the balance the coupling is designed to give equal flows
(0.82 at k = 2, equal packets and round trips: RFC 9332 §2.1's "roughly equal"); the measured one
says how far a given sender is from an ideal scalable or Reno-friendly one.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from rtcbench.tables import MEDIA_KINDS, VIDEO

MARKS_PER_RTT = 2.0
"""A scalable sender's steady state: two CE marks per round trip (RFC 9332 §2.1; SCReAM v2's
design target, draft-ietf-ccwg-rfc8298bis-screamv2-01 §7)."""

RENO_CONSTANT = 1.22
"""√(3/2): a Reno-friendly window is 1.22/√p packets at a loss or mark probability p."""


def dualpi2_links(links: pl.LazyFrame, meta: dict[str, Any], summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Per DualPI2 link that is some flow's bottleneck: its queues and probabilities over the run
    (`links` samples, every 10 ms, aggregated as a query, so a long run's table is streamed), and
    per period shared by an L4S video flow and a classic flow, the coupling's predicted balance
    beside the measured one (`summary`: the run's flows and periods). Empty when the run has no
    such link or its links table has no DualPI2 columns."""
    if "p_base" not in links.collect_schema().names():
        return []
    bottlenecks = sorted({str(f["bottleneck"]) for f in meta.get("flows", []) if f.get("bottleneck")})
    dual = links.filter(pl.col("p_base").is_not_null() & pl.col("link").is_in(bottlenecks))
    queues = _queues(dual).collect(engine="streaming")
    run_flows = {int(f["id"]): f for f in summary["flows"]}
    back = _return_owds_ms(meta, run_flows)
    out = []
    for row in queues.sort("link").iter_rows(named=True):
        name = str(row.pop("link"))
        coupling = row.pop("coupling")
        coupling = 2.0 if coupling is None else float(coupling)
        # A bleaching hop upstream leaves the L queue empty: then no flow is in it.
        served = row["l_sojourn_p50_ms"] is not None
        media = _l4s_media(meta, run_flows, back, name, served)
        periods = _periods(summary, back, name, coupling, served)
        out.append({"link": name, **row, "coupling": coupling, "media": media, "periods": periods})
    return out


def _queues(dual: pl.LazyFrame) -> pl.LazyFrame:
    """Per link, its queues over its samples: the sojourn of each queue's last departed packet from
    the first sample after that queue handed a packet on (a time-weighted sample of its delay at
    10 ms, not a per-packet one), the mean p', the marks and drops, and the coupling factor k read
    off the samples (p_CL = k·p' where 0 < p' and p_CL < 1; null if none shows it)."""

    def sojourn(column: str, q: float) -> pl.Expr:
        served = pl.col("t_us") >= pl.col("t_us").filter(pl.col(column) > 0).min()
        return (pl.col(column).filter(served).quantile(q, interpolation="linear") / 1000.0).alias(
            f"{column.removesuffix('_us')}_p{round(q * 100)}_ms"
        )

    shows_k = (pl.col("p_base") > 0) & (pl.col("p_cl") < 1.0)
    return dual.group_by("link").agg(
        sojourn("l_sojourn_us", 0.50),
        sojourn("l_sojourn_us", 0.99),
        sojourn("c_sojourn_us", 0.50),
        sojourn("c_sojourn_us", 0.99),
        pl.col("p_base").mean().alias("p_base_mean"),
        *(pl.col(c).sum() for c in ("l_marks", "c_marks", "l_drops", "c_drops")),
        (pl.col("p_cl") / pl.col("p_base")).filter(shows_k).median().alias("coupling"),
    )


def _l4s_media(
    meta: dict[str, Any],
    run_flows: dict[int, dict[str, Any]],
    back: dict[int, float],
    link: str,
    l_served: bool,
) -> list[dict[str, Any]]:
    """The L4S video flows bottlenecked at `link` over their whole run: rate, round trip and CE
    marks per round trip."""
    at_link = {int(m["id"]) for m in meta.get("flows", []) if m.get("bottleneck") == link}
    out = []
    for fid in sorted(at_link):
        f = run_flows.get(fid)
        if f is None or f["kind"] != VIDEO:
            continue
        seconds = float(f.get("active_end_s") or 0.0) - float(f.get("active_start_s") or 0.0)
        flow = _flow_in(f, seconds, back, l_served)
        if flow["queue"] == "L":
            out.append({k: flow[k] for k in ("id", "name", "rate_bps", "rtt_ms", "ce_per_rtt")})
    return out


def _periods(
    summary: dict[str, Any], back: dict[int, float], link: str, coupling: float, l_served: bool
) -> list[dict[str, Any]]:
    """Per period of `link` in which an L4S video flow and another video or TCP flow are active:
    each flow's rate, round trip and CE marks per round trip, and the rate of the L video over the
    others' mean, predicted from each flow's window at the shared p' (2/(k·p') packets in the L
    queue, 1.22/p' in the C queue) and measured. Where the others are all classic, the classic
    share too. A flow is in the L queue when it sent ECT(1) and the link's L queue served packets
    (`l_served`: a bleaching hop upstream leaves it empty)."""
    window = {"L": 2.0 / coupling, "C": RENO_CONSTANT}
    out = []
    for p in summary.get("periods", []):
        seconds = p["end_s"] - p["start_s"]
        if p["link"] != link or seconds <= 0:
            continue
        flows = [_flow_in(f, seconds, back, l_served) for f in p["flows"] if f["kind"] in (VIDEO, "tcp")]
        flows = [f for f in flows if f["rate_bps"] and f["rtt_ms"] > 0 and f["packet_bytes"] > 0]
        lv = next((f for f in flows if f["queue"] == "L" and f["kind"] == VIDEO), None)
        others = [f for f in flows if f is not lv]
        if lv is None or not others:
            continue

        # Each flow's rate at p' is window/p' · size · 8 / RTT; p' cancels in the ratio.
        def at_p(f: dict[str, Any]) -> float:
            return float(window[f["queue"]] * f["packet_bytes"] / f["rtt_ms"])

        mean_other = sum(f["rate_bps"] for f in others) / len(others)
        entry: dict[str, Any] = {
            "start_s": p["start_s"],
            "end_s": p["end_s"],
            "flows": flows,
            "predicted_ratio": at_p(lv) / (sum(at_p(f) for f in others) / len(others)),
            "measured_ratio": lv["rate_bps"] / mean_other,
        }
        if all(f["queue"] == "C" for f in others):
            entry["classic_share_predicted"] = 1.0 / (1.0 + entry["predicted_ratio"])
            entry["classic_share_measured"] = mean_other / (mean_other + lv["rate_bps"])
        out.append(entry)
    return out


def _flow_in(f: dict[str, Any], seconds: float, back: dict[int, float], l_served: bool) -> dict[str, Any]:
    """One flow over `seconds` (its summary `f`): its queue (L if it sent ECT(1) and the link's L
    queue served packets), receive rate, mean packet size, round trip (its median one-way delay
    plus its return flow's over the run, `back`) and CE marks per round trip."""
    sent = f.get("packets_sent") or 0
    rtt_ms = (f.get("owd_p50_ms") or 0.0) + back.get(int(f["id"]), 0.0)
    ce = f.get("ce_packets_received")
    return {
        "id": int(f["id"]),
        "name": f["name"],
        "kind": f["kind"],
        "queue": "L" if l_served and sent and (f.get("ect1_packets_sent") or 0) > sent / 2 else "C",
        "rate_bps": f.get("mean_recv_rate_bps") or 0.0,
        "packet_bytes": (f.get("bytes_sent") or 0) / sent if sent else 0.0,
        "rtt_ms": rtt_ms,
        "ce_per_rtt": ce / seconds * rtt_ms / 1000.0 if ce is not None and seconds > 0 else None,
    }


def _return_owds_ms(meta: dict[str, Any], run_flows: dict[int, dict[str, Any]]) -> dict[int, float]:
    """Per media and TCP flow, the median one-way delay over the run of the flow that carries its
    feedback back: a call's receiver-side RTCP (`rtcp-rx`), a TCP flow's ACKs (`<name>.ack`)."""
    flows = meta.get("flows", [])
    rtcp_rx = {m.get("call"): int(m["id"]) for m in flows if str(m.get("name", "")).endswith("rtcp-rx")}
    by_name = {m.get("name"): int(m["id"]) for m in flows}
    out = {}
    for m in flows:
        if m.get("kind") in MEDIA_KINDS and m.get("call") is not None:
            fid = rtcp_rx.get(m["call"])
        else:
            fid = by_name.get(f"{m.get('name')}.ack")
        owd = run_flows.get(fid, {}).get("owd_p50_ms") if fid is not None else None
        if owd is not None:
            out[int(m["id"])] = float(owd)
    return out
