"""Measuring a run: its time series, summary and figure data from its trace tables, whether the
tables are in memory or in a run folder of any size.

Every metric of a flow comes from that flow's own rows (and its call's controller and feedback
rows, and its bottleneck's capacity), so a run is measured a few flows at a time: a batch of
flows is read with their rows only, measured (`analysis.timeseries`, `analysis.flow_summaries`),
its time series appended to `timeseries.parquet`, and dropped before the next batch is read. A
flow weighs its packet rows and `WINDOW_ROWS` per window of its time series; a flow that weighs
more than a batch (a fast TCP flow of a long run, any flow of a run of days) is read a span of
time at a time (`_LongFlows`): each span's time series is made for that span's windows only and
is complete in itself (a window's rows are all in one span), and its summary adds up the integer
counts of each span and keeps only its delays whole, 8 bytes a received packet, for their exact
quantiles (`tables._LongFlowRows`), and the few columns of its windows the summary reads. The
links table is read a span of time at a time too, for the capacity samples the metrics use
(`_capacity_samples`). The per-flow results are then put together (`analysis.assemble`):
convergence and fairness from every flow's rates per window, which are kept (28 bytes a flow and
window). Memory is bounded by a batch (about `BATCH_ROWS` rows), not by the run's duration, but
for those delays and rates (docs/limits.md, "Memory"); the numbers are those of measuring the
whole run at once, bit for bit, since each flow sees the same rows in the same order
(tests/test_streaming.py).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from rtcbench import analysis
from rtcbench.analysis.capacity import capacity_links, radio_hop_keys, radio_links, radio_window_capacity
from rtcbench.results import regular_file
from rtcbench.tables import (
    CROSS_KINDS,
    MEDIA_KINDS,
    VIDEO,
    Tables,
    _duration_us,
    _LongFlowRows,
    _Parts,
    _unrepaired,
)  # fmt: skip

__all__ = ["BATCH_ROWS", "Measured", "figure_tables", "measure_folder", "measure_tables", "scatter_sample"]

BATCH_ROWS = 1_000_000
"""Packet rows read at a time when measuring from files: about 200 MB of frames while a batch is
measured (docs/limits.md). Links rows are read as many at a time."""
WINDOW_ROWS = 2
"""What a window of a flow's time series weighs against `BATCH_ROWS`, in packet rows: its row of
the series and the frames that make it take about twice a packet row's memory while measured
(350 against 150 bytes). A flow's windows count even where it sent nothing: a week of a 1 kbit/s
flow is 3 M windows for 50 000 packets."""

_PACKET_COLUMNS = (
    "t_us",
    pl.col("event").cast(pl.Categorical),
    "flow",
    pl.col("kind").cast(pl.Categorical),
    "size",
    "payload",
    "sent_us",
    "seq",
)
"""The packets columns the metrics read (the others are for people and tools), their text as
categories: about 40 bytes a row; and `ecn` where the table has it (`_packet_columns`)."""


def _packet_columns(packets: pl.LazyFrame) -> tuple[str | pl.Expr, ...]:
    """`_PACKET_COLUMNS`, with the ECN field when `packets` has it (tables written before it was
    read have not)."""
    has_ecn = "ecn" in packets.collect_schema().names()
    return (*_PACKET_COLUMNS, pl.col("ecn").cast(pl.Categorical)) if has_ecn else _PACKET_COLUMNS


_RATE_SCHEMA = {"flow": pl.Int32, "t_us": pl.Int64, "send_rate_bps": pl.Float64, "recv_rate_bps": pl.Float64}
_RATE_COLUMNS = tuple(_RATE_SCHEMA)
"""What `analysis.assemble` compares flows by: every flow's rates per window (a few MB an hour)."""
_SUMMARY_TS_COLUMNS = (
    "t_us", "flow", "send_rate_bps", "recv_rate_bps", "goodput_bps", "capacity_bps", "target_bps",
    "loss_ratio",
)  # fmt: skip
"""The time-series columns `analysis.flow_summaries` reads: what a flow measured a span of time at
a time keeps of its windows (60 of their 140 bytes)."""
_NEVER = np.iinfo(np.int64).max // 4
"""A time later than any row's, and its negative earlier."""
_FIGURE_TS_COLUMNS = (
    "t_us", "flow", "send_rate_bps", "recv_rate_bps", "qdelay_ms", "qdelay_p95_ms", "loss_ratio", "fps",
    "capacity_bps",
)  # fmt: skip


@dataclass(frozen=True)
class Measured:
    """A run measured: the summary's metric keys (`analysis.summarize`), the time series if it was
    measured in memory (else it is in the folder's `timeseries.parquet` only), and what the run's
    figure needs beyond the links and controller tables: each media flow's sampled per-packet
    queuing delays (`scatter_sample`), if asked for."""

    summary: dict[str, Any]
    timeseries: pl.DataFrame | None
    delays: pl.DataFrame | None


MAX_SCATTER = 20_000
"""Dots per flow in the run figure's delay panel, at most (about)."""


def scatter_sample(rows: pl.DataFrame) -> pl.DataFrame:
    """At most about `MAX_SCATTER` evenly spaced rows of one flow's per-packet delays: the dots of
    the run figure's delay panel (`plots.run_figure`)."""
    return rows.gather_every(max(1, -(-rows.height // MAX_SCATTER))) if rows.height else rows


_DELAY_SCHEMA = {"flow": pl.Int32, "t_us": pl.Int64, "qdelay_ms": pl.Float64}


def _delay_sample(t: Tables) -> pl.DataFrame:
    """Each media flow's per-packet queuing delays as the run figure samples them."""
    media = [int(f["id"]) for f in t.meta["flows"] if f.get("kind") in MEDIA_KINDS]
    received = analysis.packet_delays(t).select("flow", "t_us", "qdelay_ms")
    samples = [scatter_sample(received.filter(pl.col("flow") == fid)) for fid in media]
    return pl.concat(samples) if samples else pl.DataFrame(schema=_DELAY_SCHEMA)


def measure_tables(t: Tables, *, delays: bool = False) -> Measured:
    """Measures a run whose tables are in memory, all flows at once (`delays`: also sample the
    figure's per-packet delays)."""
    ts = analysis.timeseries(t)
    return Measured(analysis.summarize(t, ts), ts, _delay_sample(t) if delays else None)


def _meta_for(meta: dict[str, Any], flows: list[int]) -> dict[str, Any]:
    """`meta` with only `flows` in its flow list: a batch's tables describe their own flows."""
    wanted = set(flows)
    return {**meta, "flows": [f for f in meta["flows"] if int(f["id"]) in wanted]}


def _batches(sizes: dict[int, int], order: list[int], budget: int) -> Iterator[list[int]]:
    """Consecutive flows (in `order`) whose rows add up to at most `budget`; a flow with more rows
    than that is a batch of its own."""
    batch: list[int] = []
    rows = 0
    for fid in order:
        n = sizes.get(fid, 0)
        if batch and rows + n > budget:
            yield batch
            batch, rows = [], 0
        batch.append(fid)
        rows += n
    if batch:
        yield batch


def measure_folder(
    folder: Path, meta: dict[str, Any], *, batch_rows: int | None = None, delays: bool = False
) -> Measured:
    """Measures the run whose trace tables are in `folder` and writes its `timeseries.parquet`
    there, reading at most about `batch_rows` packet rows at a time (`BATCH_ROWS` if not given;
    `delays`: also sample the figure's per-packet delays)."""
    from rtcbench.results import TraceWriter

    batch_rows = BATCH_ROWS if batch_rows is None else batch_rows

    def scan(name: str) -> pl.LazyFrame:
        return pl.scan_parquet(folder / f"{name}.parquet")

    def read(query: pl.LazyFrame) -> pl.DataFrame:
        # One chunk per column, as tables built in memory have: a float sum over several chunks
        # (one per row group read) adds in another order and may round differently.
        return query.collect().rechunk()

    capacity = _capacity_samples(scan("links"), meta, batch_rows)
    radio_names = list(radio_links(meta))
    links = capacity.filter(~pl.col("link").is_in(radio_names))
    # The radio hops' capacity per window, from the radio links' rows, which no batch holds.
    window = analysis.DEFAULT_WINDOW_US
    hops = radio_hop_keys(meta, meta["flows"])
    radio = radio_window_capacity(scan("links"), meta, hops, window).with_columns(window_us=pl.lit(window))
    flows = sorted(int(f["id"]) for f in meta["flows"])
    sizes = dict(scan("packets").group_by("flow").len().collect(engine="streaming").iter_rows())
    n_windows = max(1, -(-round(float(meta["duration_s"]) * 1_000_000) // window))
    weights = {fid: sizes.get(fid, 0) + WINDOW_ROWS * n_windows for fid in flows}
    media = {int(f["id"]) for f in meta["flows"] if f.get("kind") in MEDIA_KINDS}
    media_links = analysis.media_links(meta)
    call_of = {int(f["id"]): f.get("call") for f in meta["flows"]}

    # Where flows start and stop on each media link, from every flow of the run (a batch's
    # tables list only its own).
    sharing = analysis.link_periods(_capacity_tables(capacity, meta), media_links)
    parts: dict[int, analysis.FlowSummary] = {}
    rates: list[pl.DataFrame] = []
    samples: list[pl.DataFrame] = []
    long = _LongFlows.plan(
        scan("packets"), [f for f in flows if weights[f] > batch_rows], batch_rows, n_windows
    )
    writer = TraceWriter(folder)
    try:
        for batch in _batches(weights, flows, batch_rows):
            if batch[0] in long.spans:
                (fid,) = batch
                flow_meta = _meta_for(meta, batch)
                measured = long.measure(
                    fid,
                    scan,
                    read,
                    capacity,
                    radio,
                    flow_meta,
                    media_links,
                    sharing,
                    delays and fid in media,
                    functools.partial(writer.write, "timeseries"),
                )
                rates.append(measured.rates)
                parts.update(measured.summary)
                samples.extend(measured.delays)
                continue
            calls = sorted({int(c) for c in (call_of[f] for f in batch) if c is not None})
            in_batch = pl.col("flow").is_in(batch)
            of_calls = pl.col("call").is_in(calls)
            t = Tables(
                packets=read(scan("packets").select(_packet_columns(scan("packets"))).filter(in_batch)),
                frames=read(scan("frames").filter(in_batch)),
                controller=read(scan("controller").select("t_us", "call", "target_bps").filter(of_calls)),
                links=capacity,
                feedback=read(scan("feedback").filter(of_calls)),
                meta=_meta_for(meta, batch),
                radio_capacity=radio,
            )
            t.derive_and_release_packets()
            ts = analysis.timeseries(t)
            writer.write("timeseries", ts)
            parts.update(analysis.flow_summaries(t, ts, media_links, sharing))
            rates.append(ts.select(_RATE_COLUMNS))
            if delays and media.intersection(batch):
                samples.append(_delay_sample(t))
            del t, ts
        writer.close()
    except BaseException:
        writer.abort()
        raise
    if radio_names:
        # The MAC and scheduler statistics of every radio link, over the run (`analysis.radio`).
        radio_rows = read(scan("links").filter(pl.col("link").is_in(radio_names)))
        links = pl.concat([links, radio_rows], how="diagonal_relaxed")
    summary = analysis.assemble(
        _capacity_tables(links, meta), parts, pl.concat(rates) if rates else pl.DataFrame(schema=_RATE_SCHEMA)
    )
    summary = analysis.with_l4s(summary, scan("links"), meta)
    if not delays:
        return Measured(summary, None, None)
    return Measured(summary, None, pl.concat(samples) if samples else pl.DataFrame(schema=_DELAY_SCHEMA))


def _capacity_tables(links: pl.DataFrame, meta: dict[str, Any]) -> Tables:
    """Tables of a whole run that hold only its `meta` and links rows: what the run's phases,
    periods and reference rates are computed from."""
    empty = pl.DataFrame()
    return Tables(packets=empty, frames=empty, controller=empty, links=links, feedback=empty, meta=meta)


def _capacity_samples(links: pl.LazyFrame, meta: dict[str, Any], budget: int | None = None) -> pl.DataFrame:
    """The links table as the capacity metrics read it (`tables._link_segments`: the utilisation,
    the phases, the reference rates), of their links only (`capacity_links`): the samples before
    the end of the run, the last of each instant, and of consecutive samples with one capacity
    only the first. A capacity is piecewise constant, so these give the same integrals and phases, exactly,
    in a handful of rows where the table has one every few milliseconds per link.

    The table is read a span of time of at most about `budget` rows at a time (`BATCH_ROWS` if
    not given): a link has a row every 10 ms, 8.6 M a day, which read whole took 0.8 GiB a
    simulated day. Each span keeps its first sample of a link and the changes after it; the
    changes of those, in time order, are the whole table's, since every change lies in a span."""
    names = capacity_links(meta)
    dur = round(float(meta["duration_s"]) * 1_000_000)
    # `queue_bytes` too, which the schema requires (no metric reads it but the radio ones).
    rows = links.select("t_us", "link", "queue_bytes", "capacity_bps").filter(
        pl.col("link").is_in(names) & (pl.col("t_us") < dur)
    )
    spans = _time_spans(rows, BATCH_ROWS if budget is None else budget)
    if len(spans) == 1:
        return _capacity_changes(rows.collect(), names)
    kept = [
        _capacity_changes(rows.filter(pl.col("t_us").is_between(lo, hi, closed="left")).collect(), names)
        for lo, hi in spans
    ]
    return _capacity_changes(pl.concat(kept), names)


_SPAN_GRANULE_US = 1_000_000
"""The unit of time a table is cut at into spans (`_time_spans`)."""


def _time_spans(rows: pl.LazyFrame, budget: int) -> list[tuple[int, int]]:
    """Spans of time [lo, hi), cut at whole seconds, that together hold every row of `rows` (by
    `t_us`), each at most about `budget` of them (a second with more is a span of its own); one
    span for all if they are that few. Counted in a streaming pass, which holds none of them."""
    total = int(rows.select(pl.len()).collect(engine="streaming").item())
    if total <= budget:
        return [(-_NEVER, _NEVER)]
    per_granule = (
        rows.group_by((pl.col("t_us") // _SPAN_GRANULE_US).alias("_g"))
        .len()
        .sort("_g")
        .collect(engine="streaming")
    )
    cuts, rows_in = [], 0
    for g, n in per_granule.select("_g", "len").iter_rows():
        if rows_in and rows_in + n > budget:
            cuts.append(int(g) * _SPAN_GRANULE_US)
            rows_in = 0
        rows_in += n
    return list(itertools.pairwise([-_NEVER, *cuts, _NEVER]))


def _capacity_changes(rows: pl.DataFrame, names: list[str]) -> pl.DataFrame:
    """Of `rows` (t_us, link, queue_bytes, capacity_bps), per link of `names` in time order, the
    last row of each instant, and of consecutive rows with one capacity the first."""
    kept = []
    for name in names:
        seg = rows.filter(pl.col("link") == name)
        if not seg.get_column("t_us").is_sorted():
            seg = seg.sort("t_us", maintain_order=True)
        cap = pl.col("capacity_bps")
        first = pl.int_range(pl.len()) == 0
        changes = seg.filter(pl.col("t_us").ne_missing(pl.col("t_us").shift(-1))).filter(
            first | cap.ne_missing(cap.shift(1))
        )
        # Copied: the few rows a filter keeps may share the buffers of the rows it read (each
        # span's one row of a week-long run's single capacity held its 1 M rows, 38 MB).
        kept.append(changes.select(pl.all().gather(pl.int_range(pl.len()))))
    return pl.concat(kept) if kept else rows


_KEY_TIME = (
    pl.when(pl.col("event").is_in(["sent", "dropped"]))
    .then(pl.coalesce("sent_us", "t_us"))
    .otherwise(pl.col("t_us"))
)
"""The time a packets row counts at: its send time for a packet sent or dropped (loss is counted
by send time), else when it happened. The metrics of a span of time read the rows whose time is in it."""


@dataclass(frozen=True)
class _LongMeasured:
    """A long flow measured (`_LongFlows.measure`): its rates per window (`_RATE_COLUMNS`), its
    `FlowSummary`, and its figure's delay dots if asked for."""

    rates: pl.DataFrame
    summary: dict[int, analysis.FlowSummary]
    delays: list[pl.DataFrame]


@dataclass(frozen=True)
class _LongFlows:
    """The flows of a run that weigh more than a batch (their packet rows and `WINDOW_ROWS` per
    window of the run), and how each is read: in spans of whole time-series windows that weigh
    at most about a batch each (a window with more rows is a span of its own), so that neither a
    fast flow nor a long run is held whole, with what needs the whole flow found first, in one
    pass over the file: the least one-way delay (queuing delay is measured from it), how many
    packets it received (the figure samples them evenly), and how far a row's time (`_KEY_TIME`)
    and its `t_us` lie apart, so that a span is read from the row groups that can hold it only."""

    spans: dict[int, list[tuple[int, int]]]
    floor_ms: dict[int, float]
    received: dict[int, int]
    reach_us: dict[int, tuple[int, int]]

    @classmethod
    def plan(cls, packets: pl.LazyFrame, flows: list[int], budget: int, n_windows: int) -> _LongFlows:
        if not flows:
            return cls({}, {}, {}, {})
        rows = packets.filter(pl.col("flow").is_in(flows))
        window = analysis.DEFAULT_WINDOW_US
        per_window = (
            rows.group_by("flow", (_KEY_TIME // window).alias("_w"))
            .len()
            .sort("flow", "_w")
            .collect(engine="streaming")
        )
        received = pl.col("event") == "received"
        whole = (
            rows.group_by("flow")
            .agg(
                floor=((pl.col("t_us") - pl.col("sent_us")).cast(pl.Float64) / 1000.0).filter(received).min(),
                received=received.sum(),
                early=(_KEY_TIME - pl.col("t_us")).max(),
                late=(pl.col("t_us") - _KEY_TIME).max(),
            )
            .collect(engine="streaming")
        )
        spans: dict[int, list[tuple[int, int]]] = {}
        for fid in flows:
            counts = per_window.filter(pl.col("flow") == fid).select("_w", "len").rows()
            cuts = _span_cuts([(int(w), int(n)) for w, n in counts], n_windows, budget)
            edges = [-_NEVER, *(w * window for w in cuts), _NEVER]
            spans[fid] = list(itertools.pairwise(edges))
        floor, got, reach = {}, {}, {}
        columns = ("flow", "floor", "received", "early", "late")
        for fid, low, n, early, late in whole.select(columns).iter_rows():
            if low is not None:
                floor[int(fid)] = float(low)
            got[int(fid)] = int(n)
            reach[int(fid)] = (max(0, int(early or 0)), max(0, int(late or 0)))
        return cls(spans, floor, got, reach)

    def measure(
        self,
        fid: int,
        scan: Callable[[str], pl.LazyFrame],
        read: Callable[[pl.LazyFrame], pl.DataFrame],
        links: pl.DataFrame,
        radio: pl.DataFrame,
        meta: dict[str, Any],
        media_links: list[str],
        sharing: dict[str, list[analysis.Period]],
        delays: bool,
        write: Callable[[pl.DataFrame], None],
    ) -> _LongMeasured:
        """Measures flow `fid` a span at a time (`meta`: of this flow only; `media_links` and
        `sharing`: the run's, `analysis.media_links` and `analysis.link_periods`), handing each
        span's time series to `write` as it is made."""
        (f,) = meta["flows"]
        call = f.get("call")
        of_call = pl.col("call") == (int(call) if call is not None else -1)
        in_flow = pl.col("flow") == fid
        frames = read(scan("frames").filter(in_flow))
        controller = read(scan("controller").select("t_us", "call", "target_bps").filter(of_call))
        feedback = read(scan("feedback").filter(of_call))
        floor = pl.DataFrame(
            {"flow": [fid], "owd_ms": [self.floor_ms.get(fid)]},
            schema={"flow": pl.Int32, "owd_ms": pl.Float64},
        ).drop_nulls()

        def tables(packets: pl.DataFrame) -> Tables:
            return Tables(
                packets=packets, frames=frames, controller=controller, links=links, feedback=feedback,
                meta=meta, owd_floor=floor, radio_capacity=radio,
            )  # fmt: skip

        # The rows a flow has few of, whole: its lost originals and what repaired them (a repair
        # comes up to `REPAIR_HORIZON_US` after the loss, maybe in a later span).
        repairs = read(
            scan("packets")
            .filter(in_flow)
            .filter(
                ((pl.col("event") == "dropped") & (pl.col("kind") == "media"))
                | ((pl.col("event") == "received") & (pl.col("kind") == "rtx"))
                | (pl.col("event") == "recovered")
            )
            .select("t_us", "event", "flow", "kind", "sent_us", "seq")
        )
        unrepaired = _Parts.of(_unrepaired(repairs), "flow", "sent_us")
        whole = tables(pl.DataFrame())
        dur = _duration_us(whole)
        a, b = analysis.active_span_us(f, dur)
        bounds = [*analysis.phases(whole, fid), *sharing.get(str(f.get("bottleneck")), [])]
        cuts = [0, dur, a, b, *(x for ph in bounds for x in (ph.start_us, ph.end_us))]
        rows = _LongFlowRows(fid, cuts, self.floor_ms.get(fid), whole._by_flow, unrepaired)

        series: list[pl.DataFrame] = []  # of `_SUMMARY_TS_COLUMNS`
        dots: list[pl.DataFrame] = []
        step = max(1, -(-self.received.get(fid, 0) // MAX_SCATTER))
        seen = 0
        early, late = self.reach_us.get(fid, (0, 0))
        for lo, hi in self.spans[fid]:
            t = tables(
                read(
                    scan("packets")
                    .select(_packet_columns(scan("packets")))
                    .filter(pl.col("t_us").is_between(lo - early, hi + late, closed="left"))
                    .filter(in_flow & _KEY_TIME.is_between(lo, hi, closed="left"))
                )
            )
            if delays:
                rx = analysis.packet_delays(t).select("flow", "t_us", "qdelay_ms")
                at = np.arange(seen, seen + rx.height)
                dots.append(rx.filter(pl.Series(at % step == 0)))
                seen += rx.height
            t.derive_and_release_packets()
            rows.add(t._by_flow)
            ts = analysis.timeseries(t, span_us=(lo, hi))
            write(ts)
            series.append(ts.select(_SUMMARY_TS_COLUMNS))
            del t, ts
        whole.__dict__["_by_flow"] = rows
        ts = pl.concat(series, rechunk=True)
        del series
        summary = analysis.flow_summaries(whole, ts, media_links, sharing)
        return _LongMeasured(ts.select(_RATE_COLUMNS), summary, dots)


def _span_cuts(counts: list[tuple[int, int]], n_windows: int, budget: int) -> list[int]:
    """Where to cut a flow's windows 0 to `n_windows` into spans that weigh at most about `budget`
    (their rows, `counts` of (window, rows) for the windows that have some, in window order, and
    `WINDOW_ROWS` per window): the windows to start a span at. A window with more rows than a
    span may hold is a span of its own."""
    most = max(1, budget // WINDOW_ROWS)
    cuts: list[int] = []
    start, rows_in, end_of_rows = 0, 0, 0

    def cut_empty(until: int) -> None:
        # Windows without rows from `start` to `until`, in spans of `most` windows.
        nonlocal start
        while until - start > most:
            start += most
            cuts.append(start)

    for w, n in counts:
        w = min(max(w, 0), n_windows)  # rows before the run or after its end count at its edges
        if (rows_in or w > start) and rows_in + n + WINDOW_ROWS * (w + 1 - start) > budget:
            if end_of_rows > start:
                start = end_of_rows
                cuts.append(start)
            cut_empty(w)
            rows_in = 0
        rows_in += n
        end_of_rows = w + 1
    if rows_in + WINDOW_ROWS * (n_windows - start) > budget and start < end_of_rows < n_windows:
        start = end_of_rows
        cuts.append(start)
    cut_empty(n_windows)
    return cuts


FIGURE_WINDOWS = 50_000
"""Windows of a flow's time series the run figure draws at most (2.8 h of 200 ms windows): a
longer run's are drawn as means over as many consecutive windows as bring it under this (a week:
61 windows, 12.2 s), read in a streaming pass. Drawn whole, a week's 3 M windows a flow took the
figure past 1 GiB, for more points than it has pixels."""


def figure_tables(folder: Path, meta: dict[str, Any]) -> tuple[Tables, pl.DataFrame]:
    """What `plots.run_figure` draws a run from, read from its folder with only the columns and
    flows it needs: the links, each call's target, the video frames, and the time series of the
    media and competing (TCP, CBR, UDP background) flows (of a long run, in blocks of windows:
    `FIGURE_WINDOWS`)."""
    shown = [int(f["id"]) for f in meta["flows"] if f.get("kind") in (*MEDIA_KINDS, *CROSS_KINDS)]
    window = analysis.DEFAULT_WINDOW_US
    n_windows = -(-round(float(meta["duration_s"]) * 1_000_000) // window)
    block = -(-n_windows // FIGURE_WINDOWS) * window
    rows = (
        pl.scan_parquet(regular_file(folder / "timeseries.parquet"))
        .select(_FIGURE_TS_COLUMNS)
        .filter(pl.col("flow").is_in(shown))
    )
    if block > window:
        rows = (
            rows.group_by("flow", pl.col("t_us") // block * block)
            .agg(pl.exclude("flow", "t_us").mean())
            .sort("flow", "t_us")
            .select(_FIGURE_TS_COLUMNS)
        )
        ts = rows.collect(engine="streaming")
    else:
        ts = rows.collect()
    video = [int(f["id"]) for f in meta["flows"] if f.get("kind") == VIDEO]
    t = Tables(
        packets=pl.DataFrame(),
        frames=pl.scan_parquet(regular_file(folder / "frames.parquet"))
        .filter(pl.col("flow").is_in(video))
        .collect(),
        controller=pl.scan_parquet(regular_file(folder / "controller.parquet"))
        .select("t_us", "call", "target_bps")
        .collect(),
        links=_capacity_samples(pl.scan_parquet(regular_file(folder / "links.parquet")), meta),
        feedback=pl.DataFrame(),
        meta=meta,
    )
    return t, ts
