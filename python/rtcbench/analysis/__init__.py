"""Metrics of a run, computed from its trace tables only (`rtcbench.tables`).

Every mode (simulator, emulation, browser) records the same tables (`docs/traces.md`), and this package
is the one place that turns them into numbers, so two runs of a scenario are always measured by the
same code. Definitions, units and sources (RFC 8868 §3, RFC 8867 §4.1, the seed theses;
`docs/references.md`) are in `docs/metrics.md`; the code follows that document, one module per topic:
`time_series`, `capacity` (utilisation and phases), `convergence`, `per_flow`, `sharing` (fairness,
feedback overhead, cross traffic), `radio` (Wi-Fi and LTE), `summary` and `bootstrap` (across
repetitions).

Conventions: times in the tables are integer microseconds; rates are bit/s counted on IP-level bytes
(IPv4 + UDP + RTP headers + payload, the `size` column) so they compare honestly with link capacity;
"goodput" counts media payload only. All functions are pure: they take polars frames and return
frames or plain Python values (JSON-serialisable, NaN mapped to None).
"""

from __future__ import annotations

from rtcbench.analysis.bootstrap import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, bootstrap_means, mean_ci
from rtcbench.analysis.capacity import Period, Phase, periods, phases
from rtcbench.analysis.convergence import (
    CONVERGENCE_BAND,
    CONVERGENCE_HOLD_US,
    CONVERGENCE_SMOOTH_US,
    SETTLING_BAND,
    convergence_time,
    max_min_shares,
    reference_rates,
    settling_time,
    time_to_reach,
)
from rtcbench.analysis.flows import active_span_us
from rtcbench.analysis.per_flow import flow_metrics
from rtcbench.analysis.radio import lte_buffers, wifi_nodes
from rtcbench.analysis.sharing import (
    DATA_KINDS,
    FAIR_RATIO_BAND,
    FAIRNESS_SETTLE_US,
    cross_traffic,
    fairness,
    fairness_of_bottlenecks,
    fairness_per_phase,
    feedback_overhead,
    jain_index,
    share_ratios,
)
from rtcbench.analysis.summary import (
    FlowSummary,
    assemble,
    flow_summaries,
    link_periods,
    media_links,
    summarize,
    traffic_summary,
    with_l4s,
)
from rtcbench.analysis.time_series import DEFAULT_WINDOW_US, packet_delays, timeseries

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "CONVERGENCE_BAND",
    "CONVERGENCE_HOLD_US",
    "CONVERGENCE_SMOOTH_US",
    "DATA_KINDS",
    "DEFAULT_WINDOW_US",
    "FAIRNESS_SETTLE_US",
    "FAIR_RATIO_BAND",
    "SETTLING_BAND",
    "FlowSummary",
    "Period",
    "Phase",
    "active_span_us",
    "assemble",
    "bootstrap_means",
    "convergence_time",
    "cross_traffic",
    "fairness",
    "fairness_of_bottlenecks",
    "fairness_per_phase",
    "feedback_overhead",
    "flow_metrics",
    "flow_summaries",
    "jain_index",
    "link_periods",
    "lte_buffers",
    "max_min_shares",
    "mean_ci",
    "media_links",
    "packet_delays",
    "periods",
    "phases",
    "reference_rates",
    "settling_time",
    "share_ratios",
    "summarize",
    "time_to_reach",
    "timeseries",
    "traffic_summary",
    "wifi_nodes",
    "with_l4s",
]
