"""A flow's metrics over a window of a run, for behaviour tests that hold a phase of a seed's
experiment (a section of a table) to a band."""

from __future__ import annotations

from rtcbench import analysis
from rtcbench.runner import RunResult

SEC = 1_000_000


def metric(r: RunResult, flow: str, start_s: float, end_s: float, key: str = "mean_send_rate_bps") -> float:
    """Flow `flow`'s metric `key` (docs/metrics.md) over [start, end) seconds of run `r`."""
    (fid,) = [f["id"] for f in r.summary["meta"]["flows"] if f["name"] == flow]
    m = analysis.flow_metrics(r.tables, r.timeseries, fid, round(start_s * SEC), round(end_s * SEC))
    return float(m[key])
