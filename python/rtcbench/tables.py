"""The trace tables of a run (`docs/traces.md`): their schema, and `Tables`, which holds them cast to it.

Every mode (simulator, emulation, browser) records the same tables, and `rtcbench.analysis` is the one
place that turns them into numbers. `Tables` also keeps what every metric derives from them (the
received packets with their delays, the rows split by flow, the capacity of each bottleneck),
computed on first use, once per run.

Conventions: times in the tables are integer microseconds; sizes are IP-level bytes (IPv4 + UDP +
RTP headers + payload, the `size` column).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from rtcbench import _core
from rtcbench.stages import stage_expressions

VIDEO = "video"
AUDIO = "audio"
MEDIA_KINDS = (VIDEO, AUDIO)
"""Flow kinds that carry media: they have a call controller target and a convergence time."""

RTCP = "rtcp"
"""Flow kind of a call's RTCP packets (receiver feedback one way, sender reports the other)."""
CROSS_KINDS = ("tcp", "cbr")
"""Flow kinds of competing (non-call) traffic: TCP bulk or short flows and UDP constant bit rate."""

RENDERED = "render_us"
"""When a frame was shown (docs/media.md): frame rate, freezes and frame delay read it. A frames
table written before playout was modelled has none, and renders a frame at `complete_us`."""

_HEIGHT = {"height"}
"""The frames column of the resolution ladder (docs/simulator.md)."""
_US_PER_S = 1_000_000

_DTYPES: dict[str, pl.DataType] = {
    "bool": pl.Boolean(),
    "int32": pl.Int32(),
    "int64": pl.Int64(),
    "float64": pl.Float64(),
    "text": pl.String(),
}

SCHEMA: dict[str, list[tuple[str, str, str, str]]] = _core.trace_schema()
"""The trace tables' columns as the core defines them (`rtcbench_sim::trace::schema`, the one
definition): per table, in order, `(name, type, presence, encoding)`."""


def _schemas() -> dict[str, tuple[dict[str, pl.DataType], dict[str, pl.DataType], dict[str, pl.DataType]]]:
    """Per table, its required, nullable and optional columns with their dtypes (docs/traces.md).
    Nullable ones may be left out by a producer that cannot fill them (e.g. a browser run has no
    `frame` per packet) and are added as nulls; optional ones are read by no metric: cast when
    present, not added when missing (a run measured from its files reads only the columns it
    needs, `rtcbench.measure`). The simulator's extra columns are left as they are."""
    out = {}
    for table, columns in SCHEMA.items():
        groups: dict[str, dict[str, pl.DataType]] = {"required": {}, "nullable": {}, "optional": {}}
        for name, dtype, presence, _ in columns:
            if presence in groups:
                groups[presence][name] = _DTYPES[dtype]
        out[table] = (groups["required"], groups["nullable"], groups["optional"])
    return out


_SCHEMAS = _schemas()


TIMESERIES: dict[str, pl.DataType] = {
    "t_us": pl.Int64(), "flow": pl.Int32(), "flow_name": pl.String(),
    "send_rate_bps": pl.Float64(), "media_send_rate_bps": pl.Float64(), "recv_rate_bps": pl.Float64(),
    "goodput_bps": pl.Float64(), "capacity_bps": pl.Float64(), "utilization": pl.Float64(),
    "target_bps": pl.Int64(), "owd_ms": pl.Float64(), "qdelay_ms": pl.Float64(),
    "qdelay_p95_ms": pl.Float64(), "loss_ratio": pl.Float64(), "fps": pl.Float64(),
    "frame_delay_ms": pl.Float64(),
    "packets_sent": pl.Int64(), "packets_received": pl.Int64(), "packets_dropped": pl.Int64(),
}  # fmt: skip
"""The time series a run folder holds (`timeseries.parquet`, docs/metrics.md), in order: what
`analysis.timeseries` computes and every reader of a run's time series expects."""


def _kind(dtype: pl.DataType) -> str:
    """What a column can be read as: "number", "text", "bool", or its own name."""
    if dtype.is_numeric():
        return "number"
    if isinstance(dtype, pl.String | pl.Categorical | pl.Enum):
        return "text"
    if isinstance(dtype, pl.Boolean):
        return "bool"
    return str(dtype)


def schema_problem(
    table: str, schema: dict[str, pl.DataType], columns: Sequence[str] | None = None
) -> str | None:
    """Why a table with columns `schema` cannot be read as `table` (a trace table of `SCHEMA`, or
    "timeseries"), or None: a column every reader needs (with `columns`: one of those, which is
    all the reader reads) is missing, or a column holds another kind of value (text where a
    number belongs) than the schema's. A number of another width is cast when read, as a table
    without columns is the empty table (`_conform`)."""
    if table == "timeseries":
        required, known = TIMESERIES, TIMESERIES
    else:
        if not schema:
            return None
        required, nullable, optional = _SCHEMAS[table]
        known = {**required, **nullable, **optional}
    if columns is not None:
        required = {c: known[c] for c in columns if c in known}
    missing = [c for c in required if c not in schema]
    if missing:
        shown = ", ".join(missing[:4]) + (f" and {len(missing) - 4} more" if len(missing) > 4 else "")
        return f"lacks column(s) {shown}: not a {table} table as rtcbench writes it (docs/traces.md)"
    for c, dtype in known.items():
        if c in schema and _kind(schema[c]) != _kind(dtype):
            return f"column {c} holds {schema[c]}, where the {table} table has {dtype} (docs/traces.md)"
    return None


def dtypes(table: str) -> dict[str, pl.DataType]:
    """Every column of `table` the schema names, with its dtype, in order (a producer that builds
    the table itself types it with this)."""
    return {name: _DTYPES[dtype] for name, dtype, _, _ in SCHEMA[table]}


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
    radio_capacity: pl.DataFrame = field(default_factory=pl.DataFrame)
    """The capacity of the flows' radio hops per window (`analysis.capacity.radio_window_capacity`,
    with a `window_us` column), where it was computed from a links table these tables do not hold
    (a run measured from its files reads it once); empty, it is computed from `links`."""
    owd_floor: pl.DataFrame = field(default_factory=pl.DataFrame)
    """Columns `flow` and `owd_ms`: per flow, the least one-way delay it had over the whole run,
    where these tables hold only part of its rows (a long flow measured a span of time at a time,
    `rtcbench.measure`); its queuing delays are measured from it. A flow not listed is measured
    from the least delay in its own rows."""

    def __post_init__(self) -> None:
        for name in _SCHEMAS:
            object.__setattr__(self, name, _conform(name, getattr(self, name)))
        if "duration_s" not in self.meta or "flows" not in self.meta:
            raise ValueError("meta needs 'duration_s' and 'flows' (docs/traces.md, `meta`)")

    @cached_property
    def received(self) -> pl.DataFrame:
        """Received packets with their delays, as `rtcbench.analysis.packet_delays` describes them."""
        owd = pl.col("t_us") - pl.col("sent_us")
        floor = pl.col("owd_ms").min().over("flow")
        if self.owd_floor.height:
            known = pl.col("flow").replace_strict(
                self.owd_floor.get_column("flow"), self.owd_floor.get_column("owd_ms"), default=None
            )
            floor = pl.coalesce(known, floor)
        return (
            self.packets.filter(pl.col("event") == "received")
            .with_columns(owd_ms=owd.cast(pl.Float64) / 1000.0)
            .with_columns(qdelay_ms=pl.col("owd_ms") - floor)
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
    ecn_seen: bool
    """Whether the packets table has the ECN field (`ecn`)."""

    @classmethod
    def of(cls, t: Tables) -> _FlowRows:
        # The packets' ECN field (`ecn`), where the table has it: null otherwise.
        ecn_seen = "ecn" in t.packets.columns
        # Kept as the table holds it (text or categories): compared with codepoint names only.
        ecn = pl.col("ecn") if ecn_seen else pl.lit(None, pl.String)
        pk = t.packets.select("flow", "event", "sent_us", "size", "kind", ecn.alias("ecn"))
        return cls(
            sent=_Parts.of(pk.filter(pl.col("event") == "sent").drop("event"), "flow", "sent_us"),
            dropped=_Parts.of(
                pk.filter(pl.col("event") == "dropped").select("flow", "sent_us"), "flow", "sent_us"
            ),
            received=_Parts.of(
                t.received.select("flow", "t_us", "size", "payload", "owd_ms", "qdelay_ms", ce=ecn == "ce"),
                "flow",
                "t_us",
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
                    # Absent from frames tables written before it was recorded.
                    *{"first_us"}.intersection(t.frames.columns),
                    # The gap since the flow's previous rendered frame, which a freeze lasts.
                    pl.col(RENDERED).diff().over("flow").alias("gap_us"),
                    # Each frame's delay by stage, in ms (null where a boundary is not known).
                    *stage_expressions(t.frames.columns),
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
            ecn_seen=ecn_seen,
        )

    def packet_stats(self, flow: int, start_us: int, end_us: int) -> PacketStats:
        """What the metrics count of `flow`'s packets over [start_us, end_us)."""
        sent = self.sent.between(flow, start_us, end_us)
        rx = self.received.between(flow, start_us, end_us)
        media = self.sent_media.between(flow, start_us, end_us)
        originals = media.filter(pl.col("kind") == "media")

        def total(df: pl.DataFrame, column: str = "size") -> int:
            return int(df.get_column(column).cast(pl.Int64).sum())

        return PacketStats(
            sent=sent.height,
            sent_bytes=total(sent),
            ect0_sent=int((sent.get_column("ecn") == "ect0").sum()),
            ect1_sent=int((sent.get_column("ecn") == "ect1").sum()),
            ce_received=int(rx.get_column("ce").sum()),
            ecn_seen=self.ecn_seen,
            dropped=self.dropped.between(flow, start_us, end_us).height,
            received=rx.height,
            received_bytes=total(rx),
            payload_received=total(rx, "payload"),
            owd_ms=rx.get_column("owd_ms"),
            qdelay_ms=rx.get_column("qdelay_ms"),
            originals=originals.height,
            original_bytes=total(originals),
            unnumbered_originals=originals.get_column("seq").null_count(),
            rtx_bytes=total(media.filter(pl.col("kind") == "rtx")),
            fec_bytes=total(media.filter(pl.col("kind") == "fec")),
            unrepaired=self.unrepaired.between(flow, start_us, end_us).height,
        )


_SPAN_TOTALS = (
    "sent", "sent_bytes", "ect0_sent", "ect1_sent", "ce_received", "dropped", "received", "received_bytes",
    "payload_received", "originals", "original_bytes", "unnumbered_originals", "rtx_bytes", "fec_bytes",
)  # fmt: skip
"""The integer fields of `PacketStats`, as `_LongFlowRows` adds them up, in this order."""


def _positions(part: _Parts, flow: int, cuts: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Where each of `cuts` falls among `flow`'s rows of `part` (the first row at or after it)."""
    lo, hi = np.searchsorted(part.keys, [flow, flow + 1])
    return np.asarray(lo + np.searchsorted(part.times[lo:hi], cuts), dtype=np.int64)


def _span_sums(
    part: _Parts,
    flow: int,
    cuts: npt.NDArray[np.int64],
    column: str | None = None,
    where: pl.Expr | None = None,
) -> npt.NDArray[np.int64]:
    """Per span between consecutive `cuts`: how many of `flow`'s rows of `part` (matching
    `where`) fall in it, or the sum of their `column` (nulls count 0, as a polars sum)."""
    at = _positions(part, flow, cuts)
    if column is None and where is None:
        return np.diff(at)
    values = pl.lit(1, dtype=pl.Int64) if column is None else pl.col(column).cast(pl.Int64).fill_null(0)
    if where is not None:
        values = pl.when(where).then(values).otherwise(0)
    v = part.rows.select(values.alias("v")).get_column("v").to_numpy()
    total = np.concatenate(([0], np.cumsum(v, dtype=np.int64)))
    return np.asarray(np.diff(total[at]), dtype=np.int64)


class _LongFlowRows:
    """What `flow_metrics` reads of one flow whose rows are too many to hold at once, gathered
    from its rows a span of time at a time (`rtcbench.measure`), in memory that does not grow
    with its length but for its delays: the integer counts of `PacketStats` per span between
    the cut points its summary asks about (`cuts`: where its phases and active span begin and
    end), added up; its received packets' one-way delays (8 bytes a packet, for exact
    quantiles), in arrival order; the rows it has few of (frames, RTT samples, originals never
    repaired) whole. `packet_stats` answers for intervals between cut points only, with what
    `_FlowRows.packet_stats` answers from all the rows, bit for bit."""

    def __init__(
        self, flow: int, cuts: list[int], floor_ms: float | None, few: _FlowRows, unrepaired: _Parts
    ) -> None:
        self.flow = flow
        self.cuts = np.array(sorted(set(cuts)), dtype=np.int64)
        self.floor_ms = floor_ms
        self.frames, self.captured, self.rtt = few.frames, few.captured, few.rtt
        self.unrepaired = unrepaired
        self._totals = np.zeros((len(self.cuts) - 1, len(_SPAN_TOTALS)), dtype=np.int64)
        self._before = np.zeros(len(self.cuts), dtype=np.int64)
        self._delays: list[pl.Series] = []
        self._owd: pl.Series | None = None
        self._ecn_seen = False

    def add(self, rows: _FlowRows) -> None:
        """Adds a span of time of the flow's rows (`_FlowRows.of` the tables holding it; spans
        are added in time order, each holding every row whose time is in it)."""
        f, cuts = self.flow, self.cuts
        media = pl.col("kind") == "media"
        columns = [
            _span_sums(rows.sent, f, cuts),
            _span_sums(rows.sent, f, cuts, "size"),
            _span_sums(rows.sent, f, cuts, where=pl.col("ecn") == "ect0"),
            _span_sums(rows.sent, f, cuts, where=pl.col("ecn") == "ect1"),
            _span_sums(rows.received, f, cuts, where=pl.col("ce")),
            _span_sums(rows.dropped, f, cuts),
            _span_sums(rows.received, f, cuts),
            _span_sums(rows.received, f, cuts, "size"),
            _span_sums(rows.received, f, cuts, "payload"),
            _span_sums(rows.sent_media, f, cuts, where=media),
            _span_sums(rows.sent_media, f, cuts, "size", media),
            _span_sums(rows.sent_media, f, cuts, where=media & pl.col("seq").is_null()),
            _span_sums(rows.sent_media, f, cuts, "size", pl.col("kind") == "rtx"),
            _span_sums(rows.sent_media, f, cuts, "size", pl.col("kind") == "fec"),
        ]
        self._totals += np.stack(columns, axis=1)
        self._ecn_seen |= rows.ecn_seen
        lo, hi = np.searchsorted(rows.received.keys, [f, f + 1])
        self._before += _positions(rows.received, f, cuts) - lo
        self._delays.append(rows.received.rows.slice(int(lo), int(hi - lo)).get_column("owd_ms"))
        self._owd = None

    def _span(self, start_us: int, end_us: int) -> tuple[int, int]:
        n = len(self.cuts)
        i, j = np.searchsorted(self.cuts, [start_us, end_us])
        if not (i < n and j < n and self.cuts[i] == start_us and self.cuts[j] == end_us):
            raise ValueError(
                f"flow {self.flow} was measured in spans cut at {self.cuts.tolist()} µs; "
                f"[{start_us}, {end_us}) is not between two of them"
            )
        return int(i), int(j)

    def packet_stats(self, flow: int, start_us: int, end_us: int) -> PacketStats:
        if flow != self.flow:
            raise KeyError(f"these rows are flow {self.flow}'s, not flow {flow}'s")
        i, j = self._span(start_us, end_us)
        if self._owd is None:
            # One chunk, as the in-memory rows are: a float sum follows the chunks.
            empty = pl.Series("owd_ms", [], dtype=pl.Float64)
            self._owd = pl.concat(self._delays, rechunk=True) if self._delays else empty
            self._delays = [self._owd]
        totals = dict(zip(_SPAN_TOTALS, (int(x) for x in self._totals[i:j].sum(axis=0)), strict=True))
        owd = self._owd.slice(int(self._before[i]), int(self._before[j] - self._before[i]))
        floor = self.floor_ms if self.floor_ms is not None else float("nan")
        return PacketStats(
            **totals,
            owd_ms=owd,
            qdelay_ms=owd - floor,
            unrepaired=self.unrepaired.between(flow, start_us, end_us).height,
            ecn_seen=self._ecn_seen,
        )


@dataclass(frozen=True)
class PacketStats:
    """What the metrics count of one flow's packets over an interval: packets and bytes sent and
    dropped (by send time), received (by arrival time) with their delays in arrival order, and of
    the media packets sent, the originals, retransmissions and FEC, and the originals dropped and
    never repaired (`_unrepaired`). Every count is an integer, so the statistics of a long flow
    can be added up over spans of time (`rtcbench.measure`); only the delays are kept whole, for
    their exact quantiles."""

    sent: int
    sent_bytes: int
    ect0_sent: int
    ect1_sent: int
    """Packets sent ECT(0) and ECT(1) (RFC 3168 §5, RFC 9331); 0 where the table has no `ecn`."""
    ce_received: int
    """Packets that arrived CE-marked."""
    dropped: int
    received: int
    received_bytes: int
    payload_received: int
    owd_ms: pl.Series
    qdelay_ms: pl.Series
    originals: int
    original_bytes: int
    unnumbered_originals: int
    """Originals without a sequence number (a producer that cannot see them): no repair metric."""
    rtx_bytes: int
    fec_bytes: int
    unrepaired: int
    ecn_seen: bool
    """Whether the packets had their ECN field read (`ect0_sent`, `ect1_sent`, `ce_received`)."""


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


def _duration_us(t: Tables) -> int:
    return round(float(t.meta["duration_s"]) * _US_PER_S)


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


# ------------------------------------------------------------------------------------------------
# JSON-safe values of a column, for the tables' derived frames and the analysis


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
