"""Measuring a run: its time series, summary and figure data from its trace tables, whether the
tables are in memory or in a run folder of any size.

Every metric of a flow comes from that flow's own rows (and its call's controller and feedback
rows, and the links table), so a run is measured a few flows at a time: a batch of flows is read
with their rows only, measured (`analysis.timeseries`, `analysis.flow_summaries`), its time series
appended to `timeseries.parquet`, and dropped before the next batch is read. The per-flow results
are then put together (`analysis.assemble`): convergence and fairness from every flow's rates
per window, which are kept. Memory
is bounded by a batch (about `BATCH_ROWS` packet rows, or one flow's rows if it has more), not by
the run's duration; the numbers are those of measuring the whole run at once, bit for bit, since
each flow sees the same rows in the same order.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from rtcbench import analysis
from rtcbench.results import regular_file
from rtcbench.tables import CROSS_KINDS, MEDIA_KINDS, VIDEO, Tables

__all__ = ["BATCH_ROWS", "Measured", "figure_tables", "measure_folder", "measure_tables", "scatter_sample"]

BATCH_ROWS = 1_000_000
"""Packet rows read at a time when measuring from files: about 200 MB of frames while a batch is
measured (docs/limits.md)."""

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
categories: about 40 bytes a row."""
_RATE_SCHEMA = {"flow": pl.Int32, "t_us": pl.Int64, "send_rate_bps": pl.Float64, "recv_rate_bps": pl.Float64}
_RATE_COLUMNS = tuple(_RATE_SCHEMA)
"""What `analysis.assemble` compares flows by: every flow's rates per window (a few MB an hour)."""
_FIGURE_TS_COLUMNS = (
    "t_us", "flow", "send_rate_bps", "recv_rate_bps", "qdelay_ms", "qdelay_p95_ms", "loss_ratio", "fps",
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
    folder: Path, meta: dict[str, Any], *, batch_rows: int = BATCH_ROWS, delays: bool = False
) -> Measured:
    """Measures the run whose trace tables are in `folder` and writes its `timeseries.parquet`
    there, reading at most about `batch_rows` packet rows at a time (`delays`: also sample the
    figure's per-packet delays)."""
    from rtcbench.results import TraceWriter

    def scan(name: str) -> pl.LazyFrame:
        return pl.scan_parquet(folder / f"{name}.parquet")

    def read(query: pl.LazyFrame) -> pl.DataFrame:
        # One chunk per column, as tables built in memory have: a float sum over several chunks
        # (one per row group read) adds in another order and may round differently.
        return query.collect().rechunk()

    links = read(scan("links"))
    flows = sorted(int(f["id"]) for f in meta["flows"])
    sizes = dict(scan("packets").group_by("flow").len().collect(engine="streaming").iter_rows())
    media = {int(f["id"]) for f in meta["flows"] if f.get("kind") in MEDIA_KINDS}
    media_links = analysis.media_links(meta)
    call_of = {int(f["id"]): f.get("call") for f in meta["flows"]}

    parts: dict[int, analysis.FlowSummary] = {}
    rates: list[pl.DataFrame] = []
    samples: list[pl.DataFrame] = []
    writer = TraceWriter(folder)
    try:
        for batch in _batches(sizes, flows, batch_rows):
            calls = sorted({int(c) for c in (call_of[f] for f in batch) if c is not None})
            in_batch = pl.col("flow").is_in(batch)
            of_calls = pl.col("call").is_in(calls)
            t = Tables(
                packets=read(scan("packets").select(_PACKET_COLUMNS).filter(in_batch)),
                frames=read(scan("frames").filter(in_batch)),
                controller=read(scan("controller").select("t_us", "call", "target_bps").filter(of_calls)),
                links=links,
                feedback=read(scan("feedback").filter(of_calls)),
                meta=_meta_for(meta, batch),
            )
            t.derive_and_release_packets()
            ts = analysis.timeseries(t)
            writer.write("timeseries", ts)
            parts.update(analysis.flow_summaries(t, ts, media_links))
            rates.append(ts.select(_RATE_COLUMNS))
            if delays and media.intersection(batch):
                samples.append(_delay_sample(t))
            del t, ts
        writer.close()
    except BaseException:
        writer.abort()
        raise
    whole = Tables(
        packets=pl.DataFrame(), frames=pl.DataFrame(), controller=pl.DataFrame(), links=links,
        feedback=pl.DataFrame(), meta=meta,
    )  # fmt: skip
    summary = analysis.assemble(
        whole, parts, pl.concat(rates) if rates else pl.DataFrame(schema=_RATE_SCHEMA)
    )
    if not delays:
        return Measured(summary, None, None)
    return Measured(summary, None, pl.concat(samples) if samples else pl.DataFrame(schema=_DELAY_SCHEMA))


def figure_tables(folder: Path, meta: dict[str, Any]) -> tuple[Tables, pl.DataFrame]:
    """What `plots.run_figure` draws a run from, read from its folder with only the columns and
    flows it needs: the links, each call's target, the video frames, and the time series of the
    media and competing (TCP, CBR, UDP background) flows."""
    shown = [int(f["id"]) for f in meta["flows"] if f.get("kind") in (*MEDIA_KINDS, *CROSS_KINDS)]
    ts = (
        pl.scan_parquet(regular_file(folder / "timeseries.parquet"))
        .select(_FIGURE_TS_COLUMNS)
        .filter(pl.col("flow").is_in(shown))
        .collect()
    )
    video = [int(f["id"]) for f in meta["flows"] if f.get("kind") == VIDEO]
    t = Tables(
        packets=pl.DataFrame(),
        frames=pl.scan_parquet(regular_file(folder / "frames.parquet"))
        .filter(pl.col("flow").is_in(video))
        .collect(),
        controller=pl.scan_parquet(regular_file(folder / "controller.parquet"))
        .select("t_us", "call", "target_bps")
        .collect(),
        links=pl.read_parquet(regular_file(folder / "links.parquet")),
        feedback=pl.DataFrame(),
        meta=meta,
    )
    return t, ts
