"""The time series of a run: per flow and window, rates, delays, loss and frames
(`docs/metrics.md`, "Time series"), and the packet delays it and the summaries share."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import polars as pl

from rtcbench.analysis.capacity import (
    _window_capacity,
    path_capacity,
    radio_hop_keys,
    radio_window_capacity,
    wired_hop_keys,
)
from rtcbench.analysis.flows import _counted_frames, _flows, _frames_seen, _is_media
from rtcbench.tables import RENDERED, TIMESERIES, VIDEO, Tables, _duration_us, _Parts

DEFAULT_WINDOW_US = 200_000
"""W = 200 ms, RFC 8867 §3 and RFC 8868 §3 item 1."""


def packet_delays(t: Tables) -> pl.DataFrame:
    """Received packets with their delays: columns of `packets` plus `owd_ms` and `qdelay_ms`.

    qdelay = owd - min owd of the same flow over the whole run. That minimum is the propagation plus
    serialisation delay the flow saw with an empty queue (RFC 8868-style, derived).
    Guerrero Viveros 2019 (seed 000) uses RTT - min RTT instead, which also counts the feedback
    path. Shared by the time series, the summaries and the plots so the three agree; computed once
    per `Tables` (`Tables.received`).
    """
    return t.received


def _counted_window_frames(
    t: Tables,
    flow: int,
    index: npt.NDArray[np.int64],
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
) -> pl.DataFrame:
    """A browser's video flow's frames decoded in each window (`stats`, `framesDecoded`): the
    windows numbered `index`, [starts, ends)."""
    edges = t._counted.at(flow, "receiver", "frames_decoded", np.append(starts, ends[-1:]))
    assert edges is not None  # `_counted_frames` said the receiver reported
    return pl.DataFrame(
        {
            "flow": np.full(len(starts), flow, dtype=np.int32),
            "_w": index,
            "_frames": np.diff(edges),
            "frame_delay_ms": np.full(len(starts), np.nan),
        }
    ).with_columns(pl.col("frame_delay_ms").fill_nan(None))


def _radio_capacity(t: Tables, window_us: int) -> pl.DataFrame:
    """`radio_window_capacity` of the flows' radio hops: as given with the tables, if it was
    computed for this window, else from their links table."""
    given = t.radio_capacity
    if given.height and given.get_column("window_us").first() == window_us:
        return given.drop("window_us")
    return radio_window_capacity(t.links.lazy(), t.meta, radio_hop_keys(t.meta, _flows(t)), window_us)


def timeseries(
    t: Tables, window_us: int = DEFAULT_WINDOW_US, span_us: tuple[int, int] | None = None
) -> pl.DataFrame:
    """One row per flow and window [t_us, t_us + W) over [0, duration): rates, delays, loss, frames.

    Events are bucketed by integer division of their time (sent rows and drops by send time,
    receptions and frames by arrival/completion time), aggregated with one `group_by` each and
    joined onto the full flow x window grid, so empty windows exist (zero rates, null delays). A
    final partial window is normalised by its real length. Columns: `docs/metrics.md`.

    With `span_us` = (lo, hi), only the windows that start in [lo, hi): the rows of the whole time
    series there, bit for bit, in memory that follows the span rather than the run (a run of days
    is measured a span of time at a time, `rtcbench.measure`).
    """
    if window_us <= 0:
        raise ValueError(f"window_us must be positive, got {window_us}")
    dur = _duration_us(t)
    n_windows = max(1, -(-dur // window_us))
    flows = _flows(t)
    first, last = 0, n_windows
    if span_us is not None:
        lo, hi = span_us
        first = min(n_windows, max(0, -(-lo // window_us)))
        last = max(first, min(n_windows, -(-hi // window_us)))
    # Window indices are the run's (a window's `_w` is its start over W), whatever the span.
    index = np.arange(first, last, dtype=np.int64)
    starts = index * window_us
    ends = np.minimum(starts + window_us, dur)
    n_span = index.size

    # A (flow, window) pair is keyed by one integer, flow * n_windows + window, so that every
    # aggregate below joins onto the grid on a single Int64 column.
    def keyed(df: pl.DataFrame, flow: str = "flow") -> pl.DataFrame:
        key = (pl.col(flow).cast(pl.Int64) * n_windows + pl.col("_w")).alias("_key")
        return df.select(key, pl.exclude(flow, "_w"))

    # Capacity per (wired link, propagation delay after it), one array of windows each; a flow's
    # wired capacity is the least of its links' (`wired_hop_keys`), NaN (unlimited) if none limits.
    keys = [wired_hop_keys(t.meta, f) for f in flows]
    capacity = {k: _window_capacity(t, k[0], starts, ends, dur, k[1]) for k in sorted(set().union(*keys))}
    unlimited = np.full(n_span, np.nan)
    radio = _radio_capacity(t, window_us)
    wired = [functools.reduce(np.fmin, (capacity[k] for k in ks), unlimited) for ks in keys]
    flow_capacity = [
        path_capacity(cap, radio, radio_hop_keys(t.meta, [f]), index)
        for f, cap in zip(flows, wired, strict=True)
    ]
    calls = [int(f["call"]) if _is_media(f) and f.get("call") is not None else None for f in flows]
    ids = pl.Series([int(f["id"]) for f in flows], dtype=pl.Int32)
    grid = pl.DataFrame(
        {
            "flow": ids.gather(np.repeat(np.arange(len(flows)), n_span)),
            "flow_name": pl.Series([str(f.get("name", "")) for f in flows], dtype=pl.String).gather(
                np.repeat(np.arange(len(flows)), n_span)
            ),
            "_w": np.tile(index, len(flows)),
            "t_us": np.tile(starts, len(flows)),
            "_end": np.tile(ends, len(flows)),
            "_video": np.repeat(
                np.array(
                    [f.get("kind") == VIDEO and _frames_seen(t, int(f["id"])) for f in flows], dtype=bool
                ),
                n_span,
            ),
            "_call": pl.Series(calls, dtype=pl.Int32).gather(np.repeat(np.arange(len(flows)), n_span)),
            "capacity_bps": np.concatenate(flow_capacity or [np.empty(0)]),
        },
        schema_overrides={"_w": pl.Int64, "capacity_bps": pl.Float64},
    ).with_columns(
        _len_s=(pl.col("_end") - pl.col("t_us")) / 1e6,
        capacity_bps=pl.col("capacity_bps").fill_nan(None),
        _key=pl.col("flow").cast(pl.Int64) * n_windows + pl.col("_w"),
        _call_key=pl.col("_call").cast(pl.Int64) * n_windows + pl.col("_w"),
    )

    w_sent = (pl.col("sent_us") // window_us).alias("_w")
    w_now = (pl.col("t_us") // window_us).alias("_w")
    in_run = pl.col("sent_us").is_between(0, dur - 1)
    sent = (
        t._by_flow.sent.rows.filter(in_run)
        .group_by("flow", w_sent)
        .agg(
            _sent_bytes=pl.col("size").cast(pl.Int64).sum(),
            _media_bytes=pl.col("size").filter(pl.col("kind") == "media").cast(pl.Int64).sum(),
            packets_sent=pl.len(),
        )
    )
    dropped = t._by_flow.dropped.rows.filter(in_run).group_by("flow", w_sent).agg(packets_dropped=pl.len())
    recv = (
        packet_delays(t)
        .filter(pl.col("t_us").is_between(0, dur - 1))
        .group_by("flow", w_now)
        .agg(
            _recv_bytes=pl.col("size").cast(pl.Int64).sum(),
            _goodput_bytes=pl.col("payload").filter(pl.col("kind") == "media").cast(pl.Int64).sum(),
            packets_received=pl.len(),
            owd_ms=pl.col("owd_ms").mean(),
            qdelay_ms=pl.col("qdelay_ms").mean(),
            qdelay_p95_ms=pl.col("qdelay_ms").quantile(0.95, interpolation="linear"),
        )
    )
    rendered = pl.col(RENDERED)
    frames = (
        t.frames.filter(rendered.is_between(0, dur - 1))
        .group_by("flow", (rendered // window_us).alias("_w"))
        .agg(
            _frames=pl.len().cast(pl.Float64),
            frame_delay_ms=((rendered - pl.col("capture_us")).cast(pl.Float64) / 1000.0).mean(),
        )
    )
    counted = [
        _counted_window_frames(t, int(f["id"]), index, starts, ends)
        for f in flows
        if f.get("kind") == VIDEO and _counted_frames(t, int(f["id"]))
    ]
    if counted:
        frames = pl.concat([frames, *counted], how="vertical_relaxed")

    # The call's target in force at the end of each window: last controller row strictly before it.
    ctrl = t.controller.select(pl.col("call").alias("_call"), pl.col("t_us").alias("_ct"), "target_bps").sort(
        "_ct"
    )
    call_win = (
        pl.DataFrame({"_call": sorted({c for c in calls if c is not None})}, schema={"_call": pl.Int32})
        .join(pl.DataFrame({"_w": index, "_end": ends}), how="cross")
        .sort("_end")
    )
    target = call_win.join_asof(
        ctrl,
        left_on="_end",
        right_on="_ct",
        by="_call",
        strategy="backward",
        allow_exact_matches=False,
        check_sortedness=False,
    ).select("_call", "_w", "target_bps")

    rate = 8.0 / pl.col("_len_s")
    out = (
        grid.join(keyed(sent), on="_key", how="left")
        .join(keyed(dropped), on="_key", how="left")
        .join(keyed(recv), on="_key", how="left")
        .join(keyed(frames), on="_key", how="left")
        .join(keyed(target, "_call").rename({"_key": "_call_key"}), on="_call_key", how="left")
        .with_columns(
            pl.col("_sent_bytes", "_media_bytes", "_recv_bytes", "_goodput_bytes", "_frames").fill_null(0),
            pl.col("packets_sent", "packets_received", "packets_dropped").fill_null(0).cast(pl.Int64),
        )
        .with_columns(
            send_rate_bps=pl.col("_sent_bytes") * rate,
            media_send_rate_bps=pl.col("_media_bytes") * rate,
            recv_rate_bps=pl.col("_recv_bytes") * rate,
            goodput_bps=pl.col("_goodput_bytes") * rate,
            utilization=pl.when(pl.col("capacity_bps") > 0).then(
                pl.col("_recv_bytes") * rate / pl.col("capacity_bps")
            ),
            loss_ratio=pl.when(pl.col("packets_sent") > 0).then(
                pl.col("packets_dropped") / pl.col("packets_sent")
            ),
            fps=pl.when(pl.col("_video")).then(pl.col("_frames") / pl.col("_len_s")),
            frame_delay_ms=pl.when(pl.col("_video")).then(pl.col("frame_delay_ms")),
        )
    )
    return out.select(pl.col(c).cast(dtype) for c, dtype in TIMESERIES.items()).sort("flow", "t_us")


@dataclass(frozen=True)
class _Windows:
    """A time series ordered by flow and window start, so that the windows of a flow in an interval
    are a slice; `window_us` is None with fewer than two window starts."""

    parts: _Parts
    window_us: int | None

    @classmethod
    def of(cls, ts: pl.DataFrame) -> _Windows:
        # Windows start at 0, so the window length is the second start time.
        starts = np.unique(ts.get_column("t_us").to_numpy())
        window_us = int(starts[1]) if starts.size > 1 else None
        if "capacity_bps" in ts.columns:
            ts = ts.with_columns(_has_capacity=pl.col("capacity_bps").is_not_null())
        return cls(_Parts.of(ts, "flow", "t_us"), window_us)

    def length_or(self, fallback_us: int) -> int:
        return fallback_us if self.window_us is None else self.window_us

    def between(self, flow: int, start_us: int, end_us: int) -> pl.DataFrame:
        """The flow's windows starting in [start_us, end_us), in time order."""
        return self.parts.between(flow, start_us, end_us)
