"""Values a reader must not take at face value: a video flow that was starved, whose frames were
held at the sender for seconds, that rendered no frame, or whose start-up converged faster than
the measure resolves (`docs/metrics.md`, "Flags"). Each flag is a short sentence in the flow's
`flags` list; the tables, `rtcbench compare` and the report show them beside the numbers."""

from __future__ import annotations

from typing import Any

import numpy as np

from rtcbench.analysis.convergence import _block_means, _zero_filled
from rtcbench.analysis.time_series import _Windows

__all__ = ["HELD_AT_SENDER_S", "STARVED_S", "flow_flags"]

STARVED_S = 10.0
"""A flow is flagged starved when its 1 s mean receive rate stays below its call's minimum video
rate (`video.min`, RFC 8867 §5.6's "not starved below its minimum rate") for this long in a row:
two of RFC 8867's 20 s phases' worth of settling, so a dip through a capacity drop is not one."""

HELD_AT_SENDER_S = 3.0
"""A flow is flagged when a frame waited longer than this at the sender (its `send_queue` stage,
`rtcbench.stages`): a call that holds its picture for seconds before sending is broken, whatever
its network queue says; WebRTC's own pacer drops its queue beyond 2 s (`kMaxExpectedQueueLength`)."""


def _longest_below(windows: _Windows, flow: int, start_us: int, end_us: int, level_bps: float) -> float:
    """The longest stretch (s) of consecutive 1 s means of the flow's receive rate below
    `level_bps` within [start_us, end_us)."""
    w = windows.between(flow, start_us, end_us)
    length = windows.length_or(200_000)
    k = max(1, round(1_000_000 / length))
    rates = _zero_filled(w.get_column("recv_rate_bps"))
    if rates.size < k:
        return 0.0
    below = _block_means(rates, k) < level_bps
    if not below.any():
        return 0.0
    # Lengths of the runs of True, in windows (each block starts one window after the last).
    edges = np.flatnonzero(np.diff(np.concatenate(([0], below.astype(np.int8), [0]))))
    runs = edges[1::2] - edges[::2]
    return float((int(runs.max()) + k - 1) * length) / 1e6


def flow_flags(
    f: dict[str, Any],
    metrics: dict[str, Any],
    windows: _Windows,
    span_us: tuple[int, int],
    min_bps: float | None,
) -> list[str]:
    """The flags of a video flow over its active span: `metrics` is its run-level summary dict
    (`convergence_time_s` filled), `min_bps` its call's minimum video rate."""
    flags = []
    if min_bps:
        starved = _longest_below(windows, int(f["id"]), *span_us, min_bps)
        if starved >= STARVED_S:
            flags.append(
                f"starved: received below its minimum {min_bps / 1e3:.0f} kbit/s for {starved:.0f} s in a row"
            )
    held = metrics.get("stage_send_queue_max_ms")
    if held is not None and held > HELD_AT_SENDER_S * 1000.0:
        flags.append(
            f"held at the sender: a frame waited {held / 1000.0:.1f} s before its last packet was sent"
        )
    if metrics.get("packets_received") and metrics.get("fps_mean") == 0.0:
        flags.append("no frame rendered, though its packets arrived")
    if metrics.get("convergence_time_s") == 0.0:
        flags.append("start-up in its first second: faster than the convergence measure resolves")
    return flags
