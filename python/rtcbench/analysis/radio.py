"""What a radio access network did over a run: every Wi-Fi node's MAC and every LTE UE's buffers
(the `wifi` and `lte` keys of a summary; `docs/metrics.md`, "Wi-Fi nodes" and "LTE buffers")."""

from __future__ import annotations

from typing import Any

import polars as pl

from rtcbench.tables import Tables, _mean, _py, _quantiles


def lte_buffers(t: Tables) -> list[dict[str, Any]]:
    """What the scheduler did for every LTE UE and direction over the run (the `lte` key of a
    summary; none without a cell), from its buffer's rows of the links table (docs/traces.md):
    `scheduled_bps` (mean of the new transport blocks' rate), `rb_share` (mean share of the
    direction's PRBs), `harq_retransmissions`, `harq_failures`, `queue_drops` (full buffer or
    PDCP discard), `queue_delay_ms_p50`/`_p95`/`_max` (the age of the buffer's oldest packet),
    `queue_bytes_p95` and `cqi` (mean)."""
    buffers = [lk for lk in t.meta.get("links", []) if lk.get("lte")]
    if not buffers:
        return []
    rows = t.links.filter(pl.col("link").is_in([lk["name"] for lk in buffers]))
    out = []
    for lk in buffers:
        r = rows.filter(pl.col("link") == lk["name"])
        delay_ms = r["queue_delay_us"].cast(pl.Float64) / 1e3
        p50, p95 = _quantiles(delay_ms, (0.5, 0.95))
        out.append(
            {
                "link": lk["name"],
                "cell": lk["lte"]["cell"],
                "ue": lk["lte"]["ue"],
                "direction": lk["lte"]["direction"],
                "scheduled_bps": _mean(r["scheduled_bps"].cast(pl.Float64)),
                "rb_share": _mean(r["rb_share"]),
                "harq_retransmissions": int(r["mac_retries"].sum()),
                "harq_failures": int(r["mac_drops"].sum()),
                "queue_drops": int(r["queue_drops"].sum()),
                "queue_delay_ms_p50": p50,
                "queue_delay_ms_p95": p95,
                "queue_delay_ms_max": _py(delay_ms.max()) if delay_ms.len() else None,
                "queue_bytes_p95": _quantiles(r["queue_bytes"], (0.95,))[0],
                "cqi": _mean(r["cqi"].cast(pl.Float64)),
            }
        )
    return out


def wifi_nodes(t: Tables) -> list[dict[str, Any]]:
    """What the MAC of every Wi-Fi node did over the run (the `wifi` key of a summary; none
    without a BSS), from its rows of the links table (docs/traces.md): `airtime_share` (mean),
    `mac_retries`, `mac_drops` (retry limit and lifetime), `queue_drops`, `ampdu_mpdus` (MPDUs
    per data PPDU), `queue_bytes_p95`, `phy_rate_bps` (a station's mean), and for a station that
    adapts its retry limit, `extended_attempts` and `congestion_level_p95`."""
    queues = [lk for lk in t.meta.get("links", []) if lk.get("wifi")]
    if not queues:
        return []
    rows = t.links.filter(pl.col("link").is_in([lk["name"] for lk in queues]))
    out = []
    for lk in queues:
        r = rows.filter(pl.col("link") == lk["name"])
        # Samples in which the node sent no data PPDU have no aggregation size.
        aggregated = r.filter(pl.col("ampdu_mpdus").is_not_null())["ampdu_mpdus"]
        cl = r.filter(pl.col("congestion_level").is_finite())["congestion_level"]
        node: dict[str, Any] = {
            "link": lk["name"],
            "bss": lk["wifi"]["bss"],
            "node": lk["wifi"]["node"],
            "role": lk["wifi"]["role"],
            "airtime_share": _mean(r["airtime_share"]),
            "mac_retries": int(r["mac_retries"].sum()),
            "mac_drops": int(r["mac_drops"].sum()),
            "queue_drops": int(r["queue_drops"].sum()),
            "ampdu_mpdus": _mean(aggregated),
            "queue_bytes_p95": _quantiles(r["queue_bytes"], (0.95,))[0],
            "phy_rate_bps": _mean(r["phy_rate_bps"].cast(pl.Float64)),
        }
        if r["extended_attempts"].is_not_null().any():
            node["extended_attempts"] = int(r["extended_attempts"].sum())
            node["congestion_level_p95"] = _quantiles(cl, (0.95,))[0]
        out.append(node)
    return out
