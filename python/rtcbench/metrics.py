"""Metrics of a run, computed from its trace tables only.

Every mode (simulator, emulation, browser) records the same tables (`docs/traces.md`), and this module
is the one place that turns them into numbers, so two runs of a scenario are always measured by the
same code. Definitions, units and sources (RFC 8868 §3, RFC 8867 §4.1, the seed theses;
`docs/references.md`) are in `docs/metrics.md`; the code follows that document.

Conventions: times in the tables are integer microseconds; rates are bit/s counted on IP-level bytes
(IPv4 + UDP + RTP headers + payload, the `size` column) so they compare honestly with link capacity;
"goodput" counts media payload only. All functions are pure: they take polars frames and return
frames or plain Python values (JSON-serialisable, NaN mapped to None).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

__all__ = [
    "AUDIO",
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "CONVERGENCE_BAND",
    "CONVERGENCE_HOLD_US",
    "CONVERGENCE_SMOOTH_US",
    "CROSS_KINDS",
    "DATA_KINDS",
    "DEFAULT_WINDOW_US",
    "FAIRNESS_SETTLE_US",
    "FAIR_RATIO_BAND",
    "MEDIA_KINDS",
    "RTCP",
    "SETTLING_BAND",
    "VIDEO",
    "FlowSummary",
    "Phase",
    "Tables",
    "active_span_us",
    "assemble",
    "convergence_time",
    "cross_traffic",
    "fairness",
    "fairness_of_bottlenecks",
    "fairness_per_phase",
    "feedback_overhead",
    "flow_metrics",
    "flow_summaries",
    "jain_index",
    "max_min_shares",
    "mean_ci",
    "media_links",
    "packet_delays",
    "phases",
    "reference_rates",
    "settling_time",
    "share_ratios",
    "summarize",
    "time_to_reach",
    "timeseries",
    "traffic_summary",
    "wifi_nodes",
]

VIDEO = "video"
AUDIO = "audio"
MEDIA_KINDS = (VIDEO, AUDIO)
"""Flow kinds that carry media: they have a call controller target and a convergence time."""

DEFAULT_WINDOW_US = 200_000
"""W = 200 ms, RFC 8867 §3 and RFC 8868 §3 item 1."""

CONVERGENCE_BAND = (0.80, 1.10)
"""A flow has converged when its 1 s-mean sending rate is within [0.8, 1.1] × its reference rate
(the max-min fair share of its bottleneck, at most what its encoder can send) and stays there
for `CONVERGENCE_HOLD_US` (docs/metrics.md, "Convergence"). RFC 8868 §3 item 8 names the metric
without numbers: 0.8 is where the 000 thesis calls utilisation high ("values over 80 %"), and
sending 10 % above the share for a second fills a queue by 100 ms."""
CONVERGENCE_HOLD_US = 5_000_000
"""H: the rate must stay in the band this long (or until the next event on the bottleneck)."""
CONVERGENCE_SMOOTH_US = 1_000_000
"""Rates are averaged over 1 s before the band test, as RFC 8868 plots use 1 s."""
SETTLING_BAND = 0.10
"""Settling time (the measure once called convergence): ±10 % of the flow's own steady value,
held for `CONVERGENCE_HOLD_US` (docs/metrics.md, assumption 3); it says when a flow stopped
moving, not whether it got anywhere."""

RTCP = "rtcp"
"""Flow kind of a call's RTCP packets (receiver feedback one way, sender reports the other)."""
CROSS_KINDS = ("tcp", "cbr")
"""Flow kinds of competing (non-call) traffic: TCP bulk or short flows and UDP constant bit rate."""

FAIR_RATIO_BAND = (1.0 / 3.0, 3.0)
"""Throughput ratio between equal-priority flows with similar RTTs, RFC 8868 §3 item 7."""
FAIRNESS_SETTLE_US = 5_000_000
"""Start of an interval skipped before comparing flows (RFC 8868 §3(7): static periods only);
[ASSUMED] 5 s, like H, and never more than half of the interval."""

RENDERED = "render_us"
"""When a frame was shown (docs/media.md): frame rate, freezes and frame delay read it. A frames
table written before playout was modelled has none, and renders a frame at `complete_us`."""

_HEIGHT = {"height"}
"""The frames column of the resolution ladder (docs/simulator.md)."""
_US_PER_S = 1_000_000

# The documented schemas (docs/traces.md). Columns in the second dict are nullable: a producer that
# cannot fill them (e.g. a browser run has no `frame` per packet) may leave them out. Those in the
# third are not read by any metric: they are cast when present, not added when missing (a run
# measured from its files reads only the columns it needs, `rtcbench.measure`).
_SCHEMAS: dict[str, tuple[dict[str, pl.DataType], dict[str, pl.DataType], dict[str, pl.DataType]]] = {
    "packets": (
        {
            "t_us": pl.Int64(),
            "event": pl.String(),
            "flow": pl.Int32(),
            "kind": pl.String(),
            "size": pl.Int32(),
            "payload": pl.Int32(),
            "sent_us": pl.Int64(),
        },
        {"seq": pl.Int32()},
        {
            "packet": pl.Int64(),
            "frame": pl.Int64(),
            "link": pl.String(),
            "reason": pl.String(),
        },
    ),
    "frames": (
        {
            "flow": pl.Int32(),
            "frame": pl.Int64(),
            "capture_us": pl.Int64(),
            "size": pl.Int32(),
            "keyframe": pl.Boolean(),
            "packets": pl.Int32(),
            "freeze": pl.Boolean(),
        },
        {"complete_us": pl.Int64(), "render_us": pl.Int64()},
        {},
    ),
    "controller": (
        {"t_us": pl.Int64(), "call": pl.Int32(), "target_bps": pl.Int64()},
        {"pacing_bps": pl.Int64()},
        {},
    ),
    "links": (
        {"t_us": pl.Int64(), "link": pl.String(), "queue_bytes": pl.Int64()},
        {
            "capacity_bps": pl.Int64(),
            "queue_limit_bytes": pl.Int64(),
            # A Wi-Fi node's MAC since the last sample; null for a link (docs/traces.md).
            "airtime_share": pl.Float64(),
            "mac_retries": pl.Int64(),
            "mac_drops": pl.Int64(),
            "queue_drops": pl.Int64(),
            "ampdu_mpdus": pl.Float64(),
            "phy_rate_bps": pl.Int64(),
            "congestion_level": pl.Float64(),
            "mac_capacity_bps": pl.Int64(),
            "extended_attempts": pl.Int64(),
            # An LTE UE's buffer and scheduling since the last sample; null otherwise.
            "rb_share": pl.Float64(),
            "scheduled_bps": pl.Int64(),
            "queue_delay_us": pl.Int64(),
            "cqi": pl.Int64(),
        },
        {},
    ),
    "feedback": (
        {"t_us": pl.Int64(), "call": pl.Int32(), "kind": pl.String(), "size": pl.Int32()},
        {"rtt_us": pl.Int64(), "fraction_lost": pl.Float64(), "packets_reported": pl.Int32()},
        {},
    ),
}


def _conform(name: str, df: pl.DataFrame) -> pl.DataFrame:
    """Cast a table to its documented dtypes, so joins on `flow`/`call` never fail on Int32 vs Int64.

    A table without columns (a run that produced no such events) becomes an empty table with the
    schema; missing nullable columns are added as nulls; a missing required column is an error.
    Text columns may also be categorical (a table read to be measured keeps its categories as
    small integers).
    """
    required, nullable, optional = _SCHEMAS[name]
    schema = {**required, **nullable}
    if df.width == 0:
        return pl.DataFrame(schema={**schema, **optional})
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise ValueError(f"{name} table lacks column(s) {missing}; docs/traces.md requires {list(required)}")
    if name == "frames" and RENDERED not in df.columns and "complete_us" in df.columns:
        # Written before playout was modelled: a frame was rendered when it completed.
        df = df.with_columns(pl.col("complete_us").alias(RENDERED))
    present = df.schema

    def fits(c: str, dt: pl.DataType) -> bool:
        have = present.get(c)
        return have == dt or (dt == pl.String() and isinstance(have, pl.Categorical | pl.Enum))

    fixes = [
        pl.col(c).cast(dt) if c in present else pl.lit(None, dtype=dt).alias(c)
        for c, dt in schema.items()
        if not fits(c, dt)
    ]
    fixes += [pl.col(c).cast(dt) for c, dt in optional.items() if c in present and not fits(c, dt)]
    return df.with_columns(fixes) if fixes else df


@dataclass(frozen=True)
class Tables:
    """The trace tables of one run (`docs/traces.md`) and its `meta` dict.

    Columns are cast to the documented dtypes on construction; extra columns (the controller's own
    state) are kept untouched. Frames derived from the tables (`received`, the rows split by flow,
    the capacity of each bottleneck) are computed on first use and kept on the object: the tables
    are immutable, and the time series, every summary interval and the plots all read them.
    """

    packets: pl.DataFrame
    frames: pl.DataFrame
    controller: pl.DataFrame
    links: pl.DataFrame
    feedback: pl.DataFrame
    meta: dict[str, Any]
    stats: pl.DataFrame = field(default_factory=pl.DataFrame)
    """A browser run's `getStats()` samples (docs/traces.md, `stats`); empty for other runs."""
    usage: pl.DataFrame = field(default_factory=pl.DataFrame)
    """A browser run's CPU and memory samples (docs/traces.md, `usage`); empty for other runs."""

    def __post_init__(self) -> None:
        for name in _SCHEMAS:
            object.__setattr__(self, name, _conform(name, getattr(self, name)))
        if "duration_s" not in self.meta or "flows" not in self.meta:
            raise ValueError("meta needs 'duration_s' and 'flows' (docs/traces.md, `meta`)")

    @cached_property
    def received(self) -> pl.DataFrame:
        """Received packets with their delays, as `packet_delays` describes them."""
        owd = pl.col("t_us") - pl.col("sent_us")
        return (
            self.packets.filter(pl.col("event") == "received")
            .with_columns(owd_ms=owd.cast(pl.Float64) / 1000.0)
            .with_columns(qdelay_ms=pl.col("owd_ms") - pl.col("owd_ms").min().over("flow"))
        )

    def derive_and_release_packets(self) -> None:
        """Makes every frame the metrics derive from the packets table (`received`, the rows split
        by flow), then lets the table go: what is measured from these tables is unchanged, and
        a long run measured from its files (`rtcbench.measure`) holds about half the memory."""
        self._by_flow  # noqa: B018 (computed for its side effect: the cache)
        object.__setattr__(self, "packets", self.packets.clear())

    @cached_property
    def _by_flow(self) -> _FlowRows:
        return _FlowRows.of(self)

    @cached_property
    def _counted(self) -> _Counted:
        return _Counted.of(self)

    def unobserved(self, metric: str) -> bool:
        """True if the producer of these tables could not observe what `metric` needs
        (`meta.unobserved`: a browser run cannot see frame timing, FEC inside RED, or which
        packet a retransmission repairs)."""
        return metric in self.meta.get("unobserved", ())

    @cached_property
    def _capacity(self) -> dict[str, pl.DataFrame]:
        """`_link_segments` of every flow's bottleneck, the links the metrics read."""
        links = {str(f["bottleneck"]) for f in self.meta["flows"] if f.get("bottleneck") is not None}
        return {link: _link_segments(self, link) for link in sorted(links)}


@dataclass(frozen=True)
class _Parts:
    """The rows of a frame ordered by an integer key column and, within a key, by a time column, so
    that the rows of one key in an interval are a slice found by binary search instead of a filter
    over the whole frame. The order is stable: rows recorded in time order keep their order, and so
    their sums their rounding. Rows without a key or a time are dropped, as a filter would drop them.
    """

    rows: pl.DataFrame
    keys: npt.NDArray[np.int64]
    times: npt.NDArray[np.int64]

    @classmethod
    def of(cls, df: pl.DataFrame, key: str, time: str) -> _Parts:
        if df.get_column(key).null_count() or df.get_column(time).null_count():
            df = df.drop_nulls([key, time])
        keys, times = (df.get_column(c).to_numpy().astype(np.int64) for c in (key, time))
        step, tick = np.diff(keys), np.diff(times)
        if not np.all((step > 0) | ((step == 0) & (tick >= 0))):
            # Rows recorded in time order need only a (stable) sort by key.
            by = [key] if df.get_column(time).is_sorted() else [key, time]
            df = df.sort(by, maintain_order=True)
            keys, times = (df.get_column(c).to_numpy().astype(np.int64) for c in (key, time))
        return cls(df, keys, times)

    def between(self, key: int, start_us: int, end_us: int) -> pl.DataFrame:
        """The rows of `key` whose time is in [start_us, end_us)."""
        lo, hi = np.searchsorted(self.keys, [key, key + 1])
        first, end = lo + np.searchsorted(self.times[lo:hi], [start_us, end_us])
        return self.rows.slice(int(first), max(0, int(end - first)))


@dataclass(frozen=True)
class _FlowRows:
    """The rows `flow_metrics` reads, split once per run by flow (RTT samples by call) and sorted by
    the time they count at, so that a summary's many (flow, interval) pairs each take a slice."""

    sent: _Parts
    dropped: _Parts
    received: _Parts
    frames: _Parts
    captured: _Parts
    rtt: _Parts
    sent_media: _Parts
    unrepaired: _Parts

    @classmethod
    def of(cls, t: Tables) -> _FlowRows:
        pk = t.packets.select("flow", "event", "sent_us", "size", "kind")
        return cls(
            sent=_Parts.of(pk.filter(pl.col("event") == "sent").drop("event"), "flow", "sent_us"),
            dropped=_Parts.of(
                pk.filter(pl.col("event") == "dropped").select("flow", "sent_us"), "flow", "sent_us"
            ),
            received=_Parts.of(
                t.received.select("flow", "t_us", "size", "payload", "owd_ms", "qdelay_ms"), "flow", "t_us"
            ),
            frames=_Parts.of(
                # `height` is absent from frames tables written before resolution was modelled.
                t.frames.filter(pl.col(RENDERED).is_not_null())
                .sort("flow", RENDERED, maintain_order=True)
                .select(
                    "flow",
                    "capture_us",
                    RENDERED,
                    "freeze",
                    *_HEIGHT.intersection(t.frames.columns),
                    # The gap since the flow's previous rendered frame, which a freeze lasts.
                    pl.col(RENDERED).diff().over("flow").alias("gap_us"),
                ),
                "flow",
                RENDERED,
            ),
            captured=_Parts.of(
                t.frames.select("flow", "capture_us", rendered=pl.col(RENDERED).is_not_null()),
                "flow",
                "capture_us",
            ),
            sent_media=_Parts.of(
                t.packets.filter(
                    (pl.col("event") == "sent") & pl.col("kind").is_in(["media", "rtx", "fec"])
                ).select("flow", "sent_us", "kind", "size", "seq"),
                "flow",
                "sent_us",
            ),
            unrepaired=_Parts.of(_unrepaired(t.packets), "flow", "sent_us"),
            rtt=_Parts.of(
                t.feedback.filter(pl.col("rtt_us").is_not_null()).select(
                    "call", "t_us", rtt_ms=pl.col("rtt_us").cast(pl.Float64) / 1000.0
                ),
                "call",
                "t_us",
            ),
        )


@dataclass(frozen=True)
class _Counted:
    """What a browser counted itself, per media flow and side (`stats` table, browser runs):
    the cumulative counters of `getStats()` as functions of time. The metrics read them for a
    video flow that has no rows in `frames` (a browser's frames are inside SRTP), and for RTT."""

    rows: dict[tuple[int, str], pl.DataFrame]

    @classmethod
    def of(cls, t: Tables) -> _Counted:
        if t.stats.height == 0:
            return cls({})
        return cls(
            {
                (int(flow), str(side)): part.sort("t_us", maintain_order=True)
                for (flow, side), part in t.stats.partition_by(["flow", "side"], as_dict=True).items()
            }
        )

    def has(self, flow: int, side: str = "receiver") -> bool:
        return (flow, side) in self.rows

    def at(
        self, flow: int, side: str, column: str, times: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.float64] | None:
        """Counter `column` at `times`: linear between samples, 0 before the first (a stream's
        counters start at 0), the last value after the last; None without samples."""
        rows = self.rows.get((flow, side))
        if rows is None or column not in rows.columns:
            return None
        known = rows.select("t_us", column).drop_nulls()
        if known.height == 0:
            return None
        xs = known.get_column("t_us").to_numpy().astype(np.float64)
        ys = known.get_column(column).cast(pl.Float64).to_numpy()
        values: npt.NDArray[np.float64] = np.interp(times.astype(np.float64), xs, ys, left=0.0)
        return values

    def delta(self, flow: int, side: str, column: str, start_us: int, end_us: int) -> float | None:
        """How much counter `column` grew over [start_us, end_us)."""
        v = self.at(flow, side, column, np.array([start_us, end_us], dtype=np.int64))
        return None if v is None else float(v[1] - v[0])

    def mean(self, flow: int, side: str, column: str, start_us: int, end_us: int) -> float | None:
        """Mean of the samples of `column` taken in [start_us, end_us)."""
        rows = self.rows.get((flow, side))
        if rows is None or column not in rows.columns:
            return None
        return _mean(
            rows.filter(pl.col("t_us").is_between(start_us, end_us - 1)).get_column(column).drop_nulls()
        )


REPAIR_HORIZON_US = 10_000_000
"""A retransmission or an FEC recovery repairs the dropped packet with its sequence number sent at
most this long before (sequence numbers wrap after 65536 packets, minutes of video)."""


def _unrepaired(packets: pl.DataFrame) -> pl.DataFrame:
    """Media packets dropped on the way that neither a retransmission (an `rtx` row carries the
    sequence number it repairs) nor FEC (a `recovered` row) brought back: the loss left after
    recovery."""
    lost = (
        packets.filter((pl.col("event") == "dropped") & (pl.col("kind") == "media"))
        .select("flow", "seq", "sent_us")
        .with_row_index("_lost")
    )
    repairs = packets.filter(
        ((pl.col("event") == "received") & (pl.col("kind") == "rtx")) | (pl.col("event") == "recovered")
    ).select("flow", "seq", repaired_us="t_us")
    repaired = (
        lost.join(repairs, on=["flow", "seq"], how="inner")
        .filter(pl.col("repaired_us").is_between(pl.col("sent_us"), pl.col("sent_us") + REPAIR_HORIZON_US))
        .select("_lost")
        .unique()
    )
    return lost.join(repaired, on="_lost", how="anti").select("flow", "sent_us")


@dataclass(frozen=True)
class Phase:
    """An interval of constant capacity of one link: [start_s, end_s); capacity None = unlimited."""

    start_s: float
    end_s: float
    capacity_bps: int | None

    @property
    def start_us(self) -> int:
        return round(self.start_s * _US_PER_S)

    @property
    def end_us(self) -> int:
        return round(self.end_s * _US_PER_S)


# ------------------------------------------------------------------------------------------------
# helpers


def _duration_us(t: Tables) -> int:
    return round(float(t.meta["duration_s"]) * _US_PER_S)


def _flows(t: Tables) -> list[dict[str, Any]]:
    flows: list[dict[str, Any]] = t.meta["flows"]
    return flows


def _flow(t: Tables, flow: int) -> dict[str, Any]:
    for f in _flows(t):
        if int(f["id"]) == flow:
            return f
    raise KeyError(f"flow {flow} is not in meta.flows (ids: {[f['id'] for f in _flows(t)]})")


def _is_media(f: dict[str, Any]) -> bool:
    return f.get("kind") in MEDIA_KINDS


def active_span_us(f: dict[str, Any], duration_us: int) -> tuple[int, int]:
    """[start, stop) of a flow's source as the scenario set it (`start_s`/`stop_s` of its `meta`
    entry; the whole run for a producer that does not record them), within the run. Rates are
    averaged over this span, not over the run (docs/metrics.md)."""
    start = round(float(f.get("start_s", 0.0)) * _US_PER_S)
    stop = round(float(f["stop_s"]) * _US_PER_S) if f.get("stop_s") is not None else duration_us
    start = min(max(start, 0), duration_us)
    return start, max(start, min(stop, duration_us))


def _py(x: object) -> float | int | None:
    """A plain, JSON-safe Python number: numpy/polars scalars unwrapped, NaN and inf mapped to None."""
    if x is None:
        return None
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        v = float(x)
        return v if math.isfinite(v) else None
    raise TypeError(f"not a number: {x!r}")


def packet_delays(t: Tables) -> pl.DataFrame:
    """Received packets with their delays: columns of `packets` plus `owd_ms` and `qdelay_ms`.

    qdelay = owd - min owd of the same flow over the whole run. That minimum is the propagation plus
    serialisation delay the flow saw with an empty queue (RFC 8868-style, derived).
    Guerrero Viveros 2019 (seed 000) uses RTT - min RTT instead, which also counts the feedback
    path. Shared by the time series, the summaries and the plots so the three agree; computed once
    per `Tables` (`Tables.received`).
    """
    return t.received


# ------------------------------------------------------------------------------------------------
# capacity


def _link_segments(t: Tables, link: str) -> pl.DataFrame:
    """Piecewise-constant capacity of a link: rows (t_us, capacity_bps) where each value holds until
    the next row. Several samples at one instant keep the last one written (the state after a change
    that coincides with a periodic sample); the first value also holds before the first sample.
    Samples at or after the end of the run are ignored."""
    seg = t.links.filter((pl.col("link") == link) & (pl.col("t_us") < _duration_us(t))).select(
        "t_us", "capacity_bps"
    )
    if not seg.get_column("t_us").is_sorted():
        seg = seg.sort("t_us", maintain_order=True)
    return seg.filter(pl.col("t_us").ne_missing(pl.col("t_us").shift(-1)))


def _capacity_of(t: Tables, link: str) -> pl.DataFrame:
    """`_link_segments` of a link, computed once per run for the flows' bottlenecks."""
    seg = t._capacity.get(link)
    return _link_segments(t, link) if seg is None else seg


def _downstream_delay_us(t: Tables, flow: dict[str, Any]) -> int:
    """Propagation delay from the flow's bottleneck to its receiver (the bottleneck's own delay and
    every link after it): a packet received at x left the bottleneck queue at about x minus this."""
    delays = {str(link["name"]): int(link.get("delay_us", 0)) for link in t.meta.get("links", [])}
    path = [str(p) for p in flow.get("path", [])]
    bottleneck = flow.get("bottleneck")
    if bottleneck not in path:
        return 0
    return sum(delays.get(name, 0) for name in path[path.index(str(bottleneck)) :])


def _window_capacity(
    t: Tables,
    link: str,
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    duration_us: int,
    shift_us: int = 0,
) -> npt.NDArray[np.float64]:
    """Time-weighted mean capacity of `link` over each window [start, end); NaN where the link is
    unlimited at any instant of the window (a utilisation against "infinity" would be meaningless).

    `shift_us` lines the capacity up with receptions: a packet received at x was carried by the
    capacity in force at x - shift_us (the propagation delay after the bottleneck). Without it, a
    320 ms path makes a 3 s capacity dip look 10 % over-used. Integrates exactly in integer bit·µs
    (≤ 1e9 bit/s x 1e8 µs fits Int64), then divides once.
    """
    seg = _capacity_of(t, link)
    if seg.height == 0:
        return np.full(starts.shape, np.nan)
    seg_t = seg.get_column("t_us").to_numpy().astype(np.int64) + shift_us
    seg_t[0] = min(int(seg_t[0]), 0)
    cap_col = seg.get_column("capacity_bps")
    unlimited = cap_col.is_null().to_numpy().astype(np.int64)
    cap = cap_col.fill_null(0).to_numpy().astype(np.int64)
    seg_end = np.append(seg_t[1:], max(duration_us, int(seg_t[-1])))
    length = seg_end - seg_t
    cum_cap = np.concatenate(([0], np.cumsum(cap * length)))
    cum_unl = np.concatenate(([0], np.cumsum(unlimited * length)))

    def integral(cum: npt.NDArray[np.int64], rate: npt.NDArray[np.int64], x: npt.NDArray[np.int64]) -> Any:
        i = np.clip(np.searchsorted(seg_t, x, side="right") - 1, 0, len(seg_t) - 1)
        return cum[i] + rate[i] * (x - seg_t[i])

    bits = integral(cum_cap, cap, ends) - integral(cum_cap, cap, starts)
    unl = integral(cum_unl, unlimited, ends) - integral(cum_unl, unlimited, starts)
    out: npt.NDArray[np.float64] = bits.astype(np.float64) / (ends - starts).astype(np.float64)
    out[unl > 0] = np.nan
    return out


# ------------------------------------------------------------------------------------------------
# time series


def _counted_window_frames(
    t: Tables, flow: int, starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]
) -> pl.DataFrame:
    """A browser's video flow's frames decoded in each window (`stats`, `framesDecoded`)."""
    edges = t._counted.at(flow, "receiver", "frames_decoded", np.append(starts, ends[-1:]))
    assert edges is not None  # `_counted_frames` said the receiver reported
    return pl.DataFrame(
        {
            "flow": np.full(len(starts), flow, dtype=np.int32),
            "_w": np.arange(len(starts), dtype=np.int64),
            "_frames": np.diff(edges),
            "frame_delay_ms": np.full(len(starts), np.nan),
        }
    ).with_columns(pl.col("frame_delay_ms").fill_nan(None))


def timeseries(t: Tables, window_us: int = DEFAULT_WINDOW_US) -> pl.DataFrame:
    """One row per flow and window [t_us, t_us + W) over [0, duration): rates, delays, loss, frames.

    Events are bucketed by integer division of their time (sent rows and drops by send time,
    receptions and frames by arrival/completion time), aggregated with one `group_by` each and
    joined onto the full flow x window grid, so empty windows exist (zero rates, null delays). A
    final partial window is normalised by its real length. Columns: `docs/metrics.md`.
    """
    if window_us <= 0:
        raise ValueError(f"window_us must be positive, got {window_us}")
    dur = _duration_us(t)
    n_windows = max(1, -(-dur // window_us))
    flows = _flows(t)
    starts = np.arange(n_windows, dtype=np.int64) * window_us
    ends = np.minimum(starts + window_us, dur)

    # A (flow, window) pair is keyed by one integer, flow * n_windows + window, so that every
    # aggregate below joins onto the grid on a single Int64 column.
    def keyed(df: pl.DataFrame, flow: str = "flow") -> pl.DataFrame:
        key = (pl.col(flow).cast(pl.Int64) * n_windows + pl.col("_w")).alias("_key")
        return df.select(key, pl.exclude(flow, "_w"))

    # Capacity per (bottleneck, propagation delay after it), one array of windows each.
    paths = [
        (str(f["bottleneck"]), _downstream_delay_us(t, f)) if f.get("bottleneck") is not None else None
        for f in flows
    ]
    known = sorted({p for p in paths if p is not None})
    capacity = {p: _window_capacity(t, p[0], starts, ends, dur, p[1]) for p in known}
    unlimited = np.full(n_windows, np.nan)
    calls = [int(f["call"]) if _is_media(f) and f.get("call") is not None else None for f in flows]
    ids = pl.Series([int(f["id"]) for f in flows], dtype=pl.Int32)
    grid = pl.DataFrame(
        {
            "flow": ids.gather(np.repeat(np.arange(len(flows)), n_windows)),
            "flow_name": pl.Series([str(f.get("name", "")) for f in flows], dtype=pl.String).gather(
                np.repeat(np.arange(len(flows)), n_windows)
            ),
            "_w": np.tile(np.arange(n_windows, dtype=np.int64), len(flows)),
            "t_us": np.tile(starts, len(flows)),
            "_end": np.tile(ends, len(flows)),
            "_video": np.repeat(
                np.array(
                    [f.get("kind") == VIDEO and _frames_seen(t, int(f["id"])) for f in flows], dtype=bool
                ),
                n_windows,
            ),
            "_call": pl.Series(calls, dtype=pl.Int32).gather(np.repeat(np.arange(len(flows)), n_windows)),
            "capacity_bps": np.concatenate(
                [unlimited if p is None else capacity[p] for p in paths] or [np.empty(0)]
            ),
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
        _counted_window_frames(t, int(f["id"]), starts, ends)
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
        .join(pl.DataFrame({"_w": np.arange(n_windows, dtype=np.int64), "_end": ends}), how="cross")
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
    return out.select(
        "t_us",
        "flow",
        "flow_name",
        pl.col(
            "send_rate_bps",
            "media_send_rate_bps",
            "recv_rate_bps",
            "goodput_bps",
            "capacity_bps",
            "utilization",
        ).cast(pl.Float64),
        pl.col("target_bps").cast(pl.Int64),
        pl.col("owd_ms", "qdelay_ms", "qdelay_p95_ms", "loss_ratio", "fps", "frame_delay_ms").cast(
            pl.Float64
        ),
        "packets_sent",
        "packets_received",
        "packets_dropped",
    ).sort("flow", "t_us")


# ------------------------------------------------------------------------------------------------
# phases


def phases(t: Tables, flow_or_link: int | str) -> list[Phase]:
    """Intervals of constant capacity of a flow's bottleneck link (or of a named link).

    `flow_or_link` is a flow id, a flow name or a link name. Consecutive samples with equal capacity
    merge; the first phase starts at 0 and the last ends at `meta.duration_s`. A link without samples
    is one unlimited phase. These are the "sections" of Tables 6.1-6.3 of Guerrero Viveros 2019. A
    link driven by a capacity trace (`capacity_trace` in its `meta.links` entry) changes capacity
    every few hundred milliseconds, so its run is one phase, whose capacity is the mean over the run
    (rounded to bit/s).
    """
    dur = _duration_us(t)
    link: str | None
    if isinstance(flow_or_link, int):
        link = _flow(t, flow_or_link).get("bottleneck")
    else:
        names = {str(f.get("name")): f for f in _flows(t)}
        link_names = {str(lk.get("name")) for lk in t.meta.get("links", [])}
        if flow_or_link in names and flow_or_link not in link_names:
            link = names[flow_or_link].get("bottleneck")
        else:
            link = flow_or_link
    if link is None:
        return [Phase(0.0, dur / _US_PER_S, None)]
    seg = _capacity_of(t, link)
    if seg.height == 0:
        return [Phase(0.0, dur / _US_PER_S, None)]
    if any(lk.get("name") == link and lk.get("capacity_trace") for lk in t.meta.get("links", [])):
        mean = _window_capacity(t, link, np.array([0]), np.array([max(dur, 1)]), dur)[0]
        return [Phase(0.0, dur / _US_PER_S, None if np.isnan(mean) else round(float(mean)))]
    # Capacities are whole bit/s well below 2**53, so exact as floats; NaN stands for unlimited.
    values = seg.get_column("capacity_bps").to_numpy().astype(np.float64)
    unlimited = np.isnan(values)
    changed = np.ones(values.size, dtype=bool)
    changed[1:] = (values[1:] != values[:-1]) & ~(unlimited[1:] & unlimited[:-1])
    at = np.flatnonzero(changed)
    times = [int(x) for x in seg.get_column("t_us").to_numpy()[at]]
    caps = [None if unlimited[i] else int(values[i]) for i in at]
    times[0] = 0
    bounds = [*times, dur]
    return [Phase(bounds[i] / _US_PER_S, bounds[i + 1] / _US_PER_S, caps[i]) for i in range(len(caps))]


# ------------------------------------------------------------------------------------------------
# convergence


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


def _zero_filled(rates: pl.Series) -> npt.NDArray[np.float64]:
    """A rate column as a float array, nulls (no value in a window) as 0."""
    filled = rates.fill_null(0.0) if rates.null_count() else rates
    out: npt.NDArray[np.float64] = filled.to_numpy().astype(np.float64)
    return out


def _block_means(rates: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.float64]:
    """Mean of each run of k consecutive windows, indexed by its first window (forward-looking, so a
    step at a window boundary is dated exactly at that boundary)."""
    c = np.concatenate(([0.0], np.cumsum(rates)))
    out: npt.NDArray[np.float64] = (c[k:] - c[:-k]) / k
    return out


def _first_held(in_band: npt.NDArray[np.bool_], t0: npt.NDArray[np.int64], hold_us: int) -> int | None:
    """Index of the first block that is in the band and after which every block is too for
    `hold_us` (or until the blocks end); None if there is none."""
    n = in_band.size
    # next_bad[j] = first block index >= j that is outside the band (n if none).
    idx = np.where(~in_band, np.arange(n), n)
    next_bad = np.minimum.accumulate(idx[::-1])[::-1]
    bad_t = np.where(next_bad < n, t0[np.minimum(next_bad, n - 1)], np.iinfo(np.int64).max)
    hits = np.flatnonzero(in_band & (bad_t > t0 + hold_us))
    return None if hits.size == 0 else int(hits[0])


def _smoothed(
    windows: _Windows, flow: int, start_us: int, end_us: int, column: str
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]] | None:
    """The flow's `column` over [start_us, end_us) averaged over `CONVERGENCE_SMOOTH_US` (forward
    looking), with each block's start time; None if the interval holds less than one block."""
    w = windows.between(flow, start_us, end_us)
    window_us = windows.length_or(end_us - start_us)
    k = max(1, round(CONVERGENCE_SMOOTH_US / window_us))
    if w.height < k:
        return None
    blocks = _block_means(_zero_filled(w.get_column(column)), k)
    return blocks, w.get_column("t_us").to_numpy().astype(np.int64)[: blocks.size]


def convergence_time(
    ts: pl.DataFrame,
    flow: int,
    start_us: int,
    end_us: int,
    reference_bps: float | None,
    column: str = "send_rate_bps",
) -> float | None:
    """Seconds from `start_us` until the flow's 1 s-mean rate enters [0.8, 1.1] × `reference_bps`
    (`CONVERGENCE_BAND`) and stays there for min(5 s, the rest of [start_us, end_us)).

    The reference is what the flow should get (`reference_rates`: its max-min fair share of the
    bottleneck, capped by its encoder's maximum), so a flow that settles far below the capacity or
    far above it (filling the queue) has not converged: RFC 8868 §3 item 8's "time taken to reach
    a stable rate", read as the rate it should reach. The sending rate is used: it is what the
    controller decides, and the receive rate is clipped by the bottleneck. Returned with
    one-window resolution; None if never converged or without a reference.
    """
    return _convergence_time(_Windows.of(ts), flow, start_us, end_us, reference_bps, column)


def _convergence_time(
    windows: _Windows, flow: int, start_us: int, end_us: int, reference_bps: float | None, column: str
) -> float | None:
    if reference_bps is None or not reference_bps > 0:
        return None
    smoothed = _smoothed(windows, flow, start_us, end_us, column)
    if smoothed is None:
        return None
    blocks, t0 = smoothed
    low, high = CONVERGENCE_BAND
    i = _first_held(
        (blocks >= low * reference_bps) & (blocks <= high * reference_bps), t0, CONVERGENCE_HOLD_US
    )
    return None if i is None else float(t0[i] - start_us) / _US_PER_S


def settling_time(
    ts: pl.DataFrame, flow: int, start_us: int, end_us: int, column: str = "send_rate_bps"
) -> float | None:
    """Seconds from `start_us` until the flow's 1 s-mean rate enters and stays within ±10 % of its
    own steady value (the mean over the last half of [start_us, end_us)) for min(5 s, the rest of
    the interval): when the rate stopped moving, wherever it settled (`SETTLING_BAND`). A flow
    that settles at 8 % of the capacity settles fast; `convergence_time` says whether it reached
    its share. None if it never settles."""
    return _settling_time(_Windows.of(ts), flow, start_us, end_us, column)


def _settling_time(windows: _Windows, flow: int, start_us: int, end_us: int, column: str) -> float | None:
    smoothed = _smoothed(windows, flow, start_us, end_us, column)
    if smoothed is None:
        return None
    blocks, t0 = smoothed
    w = windows.between(flow, start_us, end_us)
    rates = _zero_filled(w.get_column(column))
    starts = w.get_column("t_us").to_numpy()
    steady = float(rates[starts >= start_us + (end_us - start_us) / 2].mean()) if rates.size else 0.0
    if not steady > 0.0:
        return None
    i = _first_held(np.abs(blocks - steady) <= SETTLING_BAND * steady, t0, CONVERGENCE_HOLD_US)
    return None if i is None else float(t0[i] - start_us) / _US_PER_S


def max_min_shares(capacity_bps: float, demands: dict[int, float]) -> dict[int, float]:
    """The max-min fair allocation of `capacity_bps` among flows wanting `demands` (math.inf for a
    flow that takes whatever it gets): filled from the smallest demand up, each flow gets its
    demand or an equal part of what is left, whichever is less (Bertsekas and Gallager, Data
    Networks, §6.5.2)."""
    out: dict[int, float] = {}
    left = max(0.0, capacity_bps)
    pending = sorted(demands.items(), key=lambda kv: (kv[1], kv[0]))
    for i, (fid, demand) in enumerate(pending):
        out[fid] = min(demand, left / (len(pending) - i))
        left -= out[fid]
    return out


def _elastic_demand(meta: dict[str, Any], f: dict[str, Any]) -> float | None:
    """What an elastic flow would take alone: a video flow its encoder's maximum, a bulk TCP flow
    everything (inf); None for fixed-rate traffic (audio, RTCP, CBR, on/off TCP, ACKs), which
    takes what it sends."""
    if f.get("kind") == VIDEO:
        call: dict[str, Any] = next((c for c in meta.get("calls", []) if c.get("id") == f.get("call")), {})
        top = call.get("video_max_bps")
        return float(top) if top is not None else math.inf
    if f.get("kind") == "tcp" and f.get("workload", "bulk") == "bulk":
        return math.inf
    return None


def reference_rates(
    t: Tables, ts: pl.DataFrame, link: str, start_us: int, end_us: int, capacity_bps: float | None
) -> dict[int, float]:
    """What each elastic flow bottlenecked at `link` should get over [start_us, end_us): the
    capacity less what the fixed-rate flows there sent (their mean sending rate in `ts`), shared
    max-min fairly among the elastic flows (`_elastic_demand`). A flow counts if its source runs
    for more than half the interval. An unlimited link gives each flow its demand."""
    return _reference_rates(t, _Windows.of(ts), link, start_us, end_us, capacity_bps)


def _reference_rates(
    t: Tables, windows: _Windows, link: str, start_us: int, end_us: int, capacity_bps: float | None
) -> dict[int, float]:
    dur = _duration_us(t)
    span = end_us - start_us
    demands: dict[int, float] = {}
    fixed = 0.0
    for f in _flows(t):
        a, b = active_span_us(f, dur)
        if f.get("bottleneck") != link or span <= 0 or 2 * (min(b, end_us) - max(a, start_us)) <= span:
            continue
        demand = _elastic_demand(t.meta, f)
        if demand is not None:
            demands[int(f["id"])] = demand
        else:
            fixed += _mean(windows.between(int(f["id"]), start_us, end_us).get_column("send_rate_bps")) or 0.0
    if capacity_bps is None:
        return demands
    return max_min_shares(capacity_bps - fixed, demands)


def time_to_reach(
    ts: pl.DataFrame,
    flow: int,
    start_us: int,
    level_bps: float,
    *,
    column: str = "send_rate_bps",
    below: bool = False,
    smooth_us: int = 0,
) -> float | None:
    """Seconds from `start_us` to the start of the first window whose rate is ≥ `level_bps` (≤ with
    `below=True`, for reactions to a capacity drop, RFC 8836 R1.C); None if it never happens.

    With `smooth_us` > 0 the rate is first averaged over that span (forward-looking, as in
    `convergence_time`), so one bursty window does not count as reaching the level.
    """
    windows = _Windows.of(ts)
    w = windows.between(flow, start_us, np.iinfo(np.int64).max)
    if w.height == 0:
        return None
    rates = _zero_filled(w.get_column(column))
    t0 = w.get_column("t_us").to_numpy().astype(np.int64)
    if smooth_us > 0:
        k = max(1, round(smooth_us / windows.length_or(smooth_us)))
        if rates.size < k:
            return None
        rates = _block_means(rates, k)
        t0 = t0[: rates.size]
    hits = np.flatnonzero(rates <= level_bps if below else rates >= level_bps)
    return None if hits.size == 0 else float(t0[hits[0]] - start_us) / _US_PER_S


# ------------------------------------------------------------------------------------------------
# summaries


def _quantiles(s: pl.Series, qs: tuple[float, ...]) -> list[float | None]:
    if s.len() == 0:
        return [None] * len(qs)
    return [_py(s.quantile(q, interpolation="linear")) for q in qs]


def _mean(s: pl.Series) -> float | None:
    """The mean of the non-null values; None if there are none."""
    return _py(s.mean()) if s.len() else None


def _std(s: pl.Series) -> float | None:
    # Population std (ddof=0): it describes the observed windows, it does not estimate anything.
    return _py(s.std(ddof=0)) if s.len() else None


def _frames_seen(t: Tables, flow: int) -> bool:
    """Whether a video flow's frames were seen at all: in the frames table, or counted by its
    receiving browser. A browser run cannot see the frames an SFU receives (`meta.unobserved`
    has `frames`, and the SFU reports nothing): its frame metrics are None, not 0."""
    return not t.unobserved("frames") or _counted_frames(t, flow)


def _counted_frames(t: Tables, flow: int) -> bool:
    """Whether a video flow's frames are those its browser counted (`stats`): it recorded no
    frame rows, and its receiver reported."""
    return t._counted.has(flow) and t._by_flow.captured.between(flow, 0, _duration_us(t) + 1).height == 0


def _counted_rtt_ms(t: Tables, call: int, start_us: int, end_us: int) -> float | None:
    """The mean RTT a browser's sender measured over [start_us, end_us) (its RTCP round trips:
    `totalRoundTripTime` over `roundTripTimeMeasurements`), from the call's video flow, else its
    audio flow; None without such samples or measurements."""
    counted = t._counted
    for f in _flows(t):
        if f.get("call") != call or f.get("kind") not in MEDIA_KINDS:
            continue
        fid = int(f["id"])
        total = counted.delta(fid, "sender", "total_round_trip_time_s", start_us, end_us)
        n = counted.delta(fid, "sender", "round_trip_time_measurements", start_us, end_us)
        if total is not None and n is not None and n >= 0.5:
            return total / n * 1000.0
    return None


def flow_metrics(
    t: Tables, ts: pl.DataFrame, flow: int, start_us: int, end_us: int, settle_us: int = 0
) -> dict[str, Any]:
    """Metrics of one flow over [start_us + settle_us, end_us), as a JSON-safe dict.

    `settle_us` skips a transient for every statistic except `settling_time_s`, which is always
    measured from `start_us` (the event). Rate statistics use the windows of `ts` that start in the
    interval; packet statistics use packets sent (loss) or received (delay) in it; frame statistics
    use frames rendered (fps, freezes, frame delay) or captured (frame loss) in it. Keys not
    applicable to the flow's kind are None; `convergence_time_s` needs the other flows of the
    bottleneck and is left None here (`assemble` fills it). Keys: `docs/metrics.md`.
    """
    return _flow_metrics(t, _Windows.of(ts), flow, start_us, end_us, settle_us)


def _flow_metrics(
    t: Tables, windows: _Windows, flow: int, start_us: int, end_us: int, settle_us: int = 0
) -> dict[str, Any]:
    f = _flow(t, flow)
    kind = str(f.get("kind", ""))
    media = kind in MEDIA_KINDS
    video = kind == VIDEO
    rtcp = kind == "rtcp"
    call = f.get("call")
    s, e = start_us + settle_us, end_us
    rows = t._by_flow

    w = windows.between(flow, s, e)
    send, recv, good = (w.get_column(c) for c in ("send_rate_bps", "recv_rate_bps", "goodput_bps"))
    has_cap = w.get_column("_has_capacity")
    mean_cap = _mean(w.get_column("capacity_bps").filter(has_cap))
    mean_recv_cap = _mean(recv.filter(has_cap))
    utilization = (
        mean_recv_cap / mean_cap
        if not rtcp and mean_cap is not None and mean_recv_cap is not None and mean_cap > 0
        else None
    )

    sent = rows.sent.between(flow, s, e)
    n_sent = sent.height
    n_dropped = rows.dropped.between(flow, s, e).height
    rx = rows.received.between(flow, s, e)
    qd = rx.get_column("qdelay_ms")
    q25, q50, q90, q95 = _quantiles(qd, (0.25, 0.50, 0.90, 0.95))
    (owd50,) = _quantiles(rx.get_column("owd_ms"), (0.5,))

    rtt: float | None = None
    if call is not None:
        rtt = _mean(rows.rtt.between(int(call), s, e).get_column("rtt_ms"))
        if rtt is None:
            rtt = _counted_rtt_ms(t, int(call), s, e)

    fps: float | None = None
    freezes: int | None = None
    freeze_ms: float | None = None
    fd50: float | None = None
    fd95: float | None = None
    height: float | None = None
    frame_loss: float | None = None
    residual_loss: float | None = None
    rtx_overhead: float | None = None
    fec_overhead: float | None = None
    nacks: int | None = None
    plis: int | None = None
    if video and _counted_frames(t, flow):
        # A browser's frames: what its receiver and sender counted (`stats`).
        counted = t._counted
        decoded = counted.delta(flow, "receiver", "frames_decoded", s, e)
        fps = decoded / ((e - s) / _US_PER_S) if decoded is not None and e > s else None
        height = counted.mean(flow, "receiver", "frame_height", s, e)
        frozen = counted.delta(flow, "receiver", "freeze_count", s, e)
        freezes = round(frozen) if frozen is not None else None
        frozen_s = counted.delta(flow, "receiver", "total_freezes_duration_s", s, e)
        freeze_ms = frozen_s * 1000.0 if frozen_s is not None else None
        encoded = counted.delta(flow, "sender", "frames_encoded", s, e)
        if encoded and decoded is not None:
            frame_loss = min(1.0, max(0.0, 1.0 - decoded / encoded))
    elif video and _frames_seen(t, flow):
        fr = rows.frames.between(flow, s, e)
        if "height" in fr.columns:
            height = _mean(fr.get_column("height"))
        fps = fr.height / ((e - s) / _US_PER_S) if e > s else None
        freezes = int(fr.get_column("freeze").sum())
        # A freeze lasts the gap before the frame that ended it (libwebrtc's totalFreezesDuration).
        freeze_ms = float(fr.get_column("gap_us").filter(fr.get_column("freeze")).sum()) / 1000.0
        delay = (fr.get_column(RENDERED) - fr.get_column("capture_us")).cast(pl.Float64) / 1000.0
        fd50, fd95 = _quantiles(delay, (0.5, 0.95))
        captured = rows.captured.between(flow, s, e)
        if captured.height:
            frame_loss = 1.0 - int(captured.get_column("rendered").sum()) / captured.height
    if video:
        if call is not None:
            fb = t.feedback.filter(
                (pl.col("call") == int(call))
                & pl.col("t_us").is_between(s, e - 1)
                & pl.col("kind").is_in(["nack", "pli", "fir"])
            )
            nacks = int((fb.get_column("kind") == "nack").sum())
            # Keyframe requests: PLIs, or FIRs with `keyframe_request = "fir"`.
            plis = int(fb.get_column("kind").is_in(["pli", "fir"]).sum())
        out = rows.sent_media.between(flow, s, e)
        originals = out.filter(pl.col("kind") == "media")
        if originals.height and originals.get_column("seq").null_count() == 0:
            media_bytes = int(originals.get_column("size").cast(pl.Int64).sum())
            rtx_bytes = int(out.filter(pl.col("kind") == "rtx").get_column("size").cast(pl.Int64).sum())
            fec_bytes = int(out.filter(pl.col("kind") == "fec").get_column("size").cast(pl.Int64).sum())
            rtx_overhead = rtx_bytes / media_bytes
            if not t.unobserved("residual_loss"):
                residual_loss = rows.unrepaired.between(flow, s, e).height / originals.height
            if not t.unobserved("fec_overhead"):
                fec_overhead = fec_bytes / media_bytes

    return {
        "id": int(f["id"]),
        "name": str(f.get("name", "")),
        "kind": kind,
        "workload": f.get("workload"),
        "mean_send_rate_bps": _mean(send),
        "std_send_rate_bps": _std(send),
        "min_send_rate_bps": _py(send.min()) if send.len() else None,
        "max_send_rate_bps": _py(send.max()) if send.len() else None,
        "mean_goodput_bps": None if rtcp else _mean(good),
        "std_goodput_bps": None if rtcp else _std(good),
        "mean_recv_rate_bps": _mean(recv),
        "std_recv_rate_bps": _std(recv),
        "mean_target_bps": _mean(w.get_column("target_bps")) if media else None,
        "mean_capacity_bps": None if rtcp else mean_cap,
        "utilization": utilization,
        "packets_sent": n_sent,
        "packets_received": rx.height,
        "packets_dropped": n_dropped,
        "bytes_sent": int(sent.get_column("size").cast(pl.Int64).sum()),
        "bytes_received": int(rx.get_column("size").cast(pl.Int64).sum()),
        "loss_ratio": n_dropped / n_sent if n_sent else None,
        "max_window_loss_ratio": _py(w.get_column("loss_ratio").max()) if w.height else None,
        "qdelay_mean_ms": _mean(qd),
        "qdelay_p25_ms": q25,
        "qdelay_p50_ms": q50,
        "qdelay_p90_ms": q90,
        "qdelay_p95_ms": q95,
        "qdelay_max_ms": _py(qd.max()) if qd.len() else None,
        "owd_p50_ms": owd50,
        "rtt_mean_ms": rtt,
        "convergence_time_s": None,
        "settling_time_s": _settling_time(windows, flow, start_us, end_us, "send_rate_bps")
        if media
        else None,
        "fps_mean": fps,
        "height_mean_px": height,
        "freezes": freezes,
        "freeze_duration_ms": freeze_ms,
        "frame_delay_p50_ms": fd50,
        "frame_delay_p95_ms": fd95,
        "frame_loss_ratio": frame_loss,
        "residual_loss_ratio": residual_loss,
        "rtx_overhead": rtx_overhead,
        "fec_overhead": fec_overhead,
        "nack_count": nacks,
        "pli_count": plis,
    }


# ------------------------------------------------------------------------------------------------
# sharing: fairness between flows, feedback overhead, cross traffic


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


DATA_KINDS = (VIDEO, "tcp", "cbr")
"""The flows a bottleneck's all-flow fairness compares: every flow that carries data and competes
for the capacity. Audio (its codec fixes the rate), RTCP, TCP ACKs and the UDP background that
makes RFC 8867 §4.2's capacity are left out."""


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


def _packet_counts(t: Tables, flows: Sequence[int], start_us: int, end_us: int) -> dict[int, dict[str, int]]:
    """Per flow over [start_us, end_us): packets and bytes sent and dropped (by send time, as
    `flow_metrics` counts them) and received (by arrival time), plus the payload received. Flows
    without packets get zeros."""
    rows = t._by_flow
    out: dict[int, dict[str, int]] = {}
    for fid in flows:
        sent = rows.sent.between(fid, start_us, end_us)
        rx = rows.received.between(fid, start_us, end_us)
        out[int(fid)] = {
            "packets_sent": sent.height,
            "packets_received": rx.height,
            "packets_dropped": rows.dropped.between(fid, start_us, end_us).height,
            "bytes_sent": int(sent.get_column("size").cast(pl.Int64).sum()),
            "bytes_received": int(rx.get_column("size").cast(pl.Int64).sum()),
            "payload_received": int(rx.get_column("payload").cast(pl.Int64).sum()),
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


def _clip(start_us: int, end_us: int, a: int, b: int) -> tuple[int, int]:
    """[start_us, end_us) ∩ [a, b), as an empty interval at its start if they do not meet."""
    s = max(start_us, a)
    return s, max(s, min(end_us, b))


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
    `counts`: `_packet_counts` over the run (feedback overhead); `cross`: its `cross_traffic`
    entry, for TCP and CBR flows."""

    run: dict[str, Any]
    phases: list[dict[str, Any]] | None
    counts: dict[str, int]
    cross: dict[str, Any] | None


def flow_summaries(t: Tables, ts: pl.DataFrame, links: Sequence[str]) -> dict[int, FlowSummary]:
    """`FlowSummary` of every flow of `t.meta["flows"]` (which may be some of a run's flows, with
    their rows), given the run's time series of those flows and its `media_links`."""
    windows = _Windows.of(ts)
    dur = _duration_us(t)
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
        per_phase = None
        if f.get("bottleneck") is not None and str(f["bottleneck"]) in links:
            per_phase = [
                _flow_metrics(t, windows, fid, *_clip(ph.start_us, ph.end_us, a, b))
                for ph in phases(t, str(f["bottleneck"]))
            ]
        out[fid] = FlowSummary(
            run=m,
            phases=per_phase,
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
    for f in flows:
        if f.get("kind") == VIDEO:
            parts[int(f["id"])].run["convergence_time_s"] = _startup_convergence(t, windows, f)
    counts = {fid: p.counts for fid, p in parts.items()}
    out = {
        "flows": [parts[int(f["id"])].run for f in flows],
        "phases": out_phases,
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
    for g in _flows(t):
        if g.get("bottleneck") == link and g.get("call") != f.get("call"):
            events += list(active_span_us(g, dur))
    end = min([e for e in events if e > a] + [b])
    capacity = next((ph.capacity_bps for ph in link_phases if ph.start_us <= a < ph.end_us), None)
    refs = _reference_rates(t, windows, str(link), a, end, capacity)
    return _convergence_time(windows, int(f["id"]), a, end, refs.get(int(f["id"])), "send_rate_bps")


def _phase_of(part: FlowSummary, i: int) -> dict[str, Any]:
    if part.phases is None:
        raise ValueError(f"flow {part.run['id']} has no phase metrics")
    return part.phases[i]


def summarize(t: Tables, ts: pl.DataFrame | None = None) -> dict[str, Any]:
    """The summary of a run: `{"flows": [...], "phases": [...], ...}`, JSON-safe, nothing rounded.

    `flows` has one `flow_metrics` dict per flow over the time its source runs; a video flow's
    `convergence_time_s` is its start-up convergence (`_startup_convergence`). `phases` lists, for
    each link that is the bottleneck of a media flow, its constant-capacity phases (`index` counts
    within the link) with the metrics of every flow bottlenecked there over that phase. The keys
    of `traffic_summary` (fairness, feedback overhead, cross traffic) follow. Every flow is
    measured from its own rows (`flow_summaries`), which is how a long run is measured a few flows
    at a time.
    """
    ts = timeseries(t) if ts is None else ts
    return assemble(t, flow_summaries(t, ts, media_links(t.meta)), ts)


# ------------------------------------------------------------------------------------------------
# across repetitions

BOOTSTRAP_RESAMPLES = 10_000
"""Resamples of the bootstrap: the percentile bounds of 95 % intervals move by well under 1 % of
the interval between seeds at this count."""
BOOTSTRAP_SEED = 8867
"""Seed of the bootstrap's generator: the same runs give the same interval, in every report."""


def bootstrap_means(
    x: npt.NDArray[np.float64], resamples: int, rng: np.random.Generator
) -> npt.NDArray[np.float64]:
    """The means of `resamples` resamples of `x` with replacement: the percentile bootstrap's core,
    shared by `mean_ci` and `compare.bootstrap_ci`."""
    means: npt.NDArray[np.float64] = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)
    return means


def mean_ci(
    values: Iterable[float | None],
    confidence: float = 0.95,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float] | None:
    """Confidence interval of the mean of per-run values (one per repetition), by the percentile
    bootstrap: resample the runs with replacement, take the mean of each resample, and return the
    (1 - confidence)/2 and (1 + confidence)/2 quantiles of those means.

    The bootstrap, because per-run metrics (a p95 delay, a loss ratio) are not normal and a suite
    has a handful of repetitions; a fixed seed, so a report is a pure function of its runs. None
    for fewer than two values (None and NaN are left out). With few runs the interval is narrower
    than the truth (with two it spans at most the two values); docs/metrics.md says so.
    """
    x = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=np.float64)
    if x.size < 2:
        return None
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    means = bootstrap_means(x, resamples, np.random.default_rng(seed))
    lo, hi = np.quantile(means, [(1.0 - confidence) / 2.0, (1.0 + confidence) / 2.0])
    return float(lo), float(hi)
