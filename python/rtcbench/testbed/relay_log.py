"""What the emulation relay records with `trace=True` (`relay-packets.csv`, `relay-links.csv`:
every frame as it reached the relay, left it or was dropped, and each link's samples, on the
relay's one clock), read back, and the packets table (docs/traces.md) made from it. Emulated and
browser runs both build their packets and links tables here (`rtcbench.emulation.trace`,
`rtcbench.browser.trace`); the relay itself is `rtcbench.testbed.relay`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from rtcbench import _core, tables

__all__ = [
    "RELAY_LINKS",
    "RELAY_PACKETS",
    "TraceError",
    "background_flows",
    "packet_events",
    "relay_links",
    "relay_packets",
]

RELAY_PACKETS = "relay-packets.csv"
RELAY_LINKS = "relay-links.csv"


_ECN = dict(enumerate(_core.trace_codes()["ecn"]))

_RELAY_SCHEMA = {
    "id": pl.Int64,
    "event": pl.String,
    "t_us": pl.Int64,
    "iface": pl.Int32,
    "link": pl.String,
    "reason": pl.String,
    "size": pl.Int32,
    "ecn": pl.Int32,
    "protocol": pl.Int32,
    "src": pl.String,
    "src_port": pl.Int32,
    "dst": pl.String,
    "dst_port": pl.Int32,
    "payload": pl.Int32,
    "head": pl.String,
}
_LINKS_SCHEMA = tables.dtypes("links")
"""The links table's columns, all of which the relay samples (the core's schema): a BSS's and a
cell's radio columns too, null where a column is not the element's, as in a simulated run."""

_OPTIONAL_PACKET_COLUMNS = {"transport_seq": pl.Int32}
"""Columns of the packets table only some producers fill (docs/traces.md)."""


class TraceError(ValueError):
    """The records of an emulated run do not fit together (one line)."""


def _relay_csv(path: Path, schema: dict[str, Any]) -> pl.DataFrame:
    """One of the relay's trace files (`trace=True`), typed; a column of `schema` the file lacks
    is null (the relay samples every column of the links table, the DualPI2 ones included; a
    relay built before a column existed reads as one that has nothing to say there)."""
    if not path.is_file():
        raise TraceError(f"{path}: missing (the relay writes it when asked for a trace)")
    header = pl.read_csv(path, n_rows=0).columns
    present = {c: dt for c, dt in schema.items() if c in header}
    rows = pl.read_csv(path, schema_overrides=present, columns=list(present))
    return rows.select(pl.col(c) if c in present else pl.lit(None, dt).alias(c) for c, dt in schema.items())


def relay_packets(relay_dir: Path) -> pl.DataFrame:
    """The relay's packet log (`relay-packets.csv`), typed."""
    return _relay_csv(relay_dir / RELAY_PACKETS, _RELAY_SCHEMA)


def relay_links(relay_dir: Path, end_us: int) -> pl.DataFrame:
    """The links table (docs/traces.md): the relay's link samples up to `end_us`."""
    return _relay_csv(relay_dir / RELAY_LINKS, _LINKS_SCHEMA).filter(pl.col("t_us") <= end_us)


def background_flows(meta: Mapping[str, Any]) -> dict[str, int]:
    """The flow id of each link's UDP background traffic (RFC 8867 §5.1's second mechanism),
    which the relay makes itself, by link name, from a run's `meta`."""
    return {
        f["name"].removesuffix(".udp-background"): int(f["id"])
        for f in meta["flows"]
        if f.get("workload") == "udp-background"
    }


def packet_events(
    relay: pl.DataFrame, sent: pl.DataFrame, background: Mapping[str, int], end_us: int
) -> pl.DataFrame:
    """The packets table (docs/traces.md) of a relay's log: `sent` holds one row per packet the
    hosts sent, as it reached the relay (`id`, `t_us`, `flow`, `kind`, `size`, `payload`, `seq`,
    `frame`, `ecn_in`, `sent_us`, and any optional column of the table, such as
    `transport_seq`); its departures and drops follow from the log, with the UDP background
    packets the relay made itself (`background`: flow id by link name). Rows after `end_us` are
    left out."""
    bg_in = relay.filter(pl.col("event") == "bg_in").select(
        "id",
        "t_us",
        flow=pl.col("link").replace_strict(background, return_dtype=pl.Int32),
        kind=pl.lit("cbr"),
        size="size",
        payload=pl.col("size") - 28,
        seq=pl.lit(None, pl.Int32),
        frame=pl.lit(None, pl.Int64),
        ecn_in=pl.lit(0, pl.Int32),
        sent_us="t_us",
    )
    origin = pl.concat([sent, bg_in], how="diagonal_relaxed")
    later = relay.filter(pl.col("event").is_in(["out", "drop", "bg_out"])).select(
        "id", "event", "t_us", "link", "reason", "ecn"
    )
    later = later.join(origin.drop("t_us", "ecn_in"), on="id", how="inner")
    first = origin.select(
        pl.exclude("ecn_in"),
        event=pl.lit("sent"),
        link=pl.lit(None, pl.String),
        reason=pl.lit(None, pl.String),
        ecn="ecn_in",
    )
    later = later.with_columns(
        event=pl.col("event").replace_strict({"out": "received", "bg_out": "received", "drop": "dropped"}),
        link=pl.when(pl.col("event") == "drop").then(pl.col("link")),
        ecn=pl.col("ecn").fill_null(0),
    )
    rows = pl.concat([first, later], how="diagonal_relaxed").filter(pl.col("t_us") <= end_us)
    rows = rows.sort("t_us", "id")
    optional = [pl.col(c).cast(dt) for c, dt in _OPTIONAL_PACKET_COLUMNS.items() if c in rows.columns]
    return rows.select(
        pl.col("t_us").cast(pl.Int64),
        pl.col("event").cast(pl.String),
        packet=pl.col("id").cast(pl.Int64),
        flow=pl.col("flow").cast(pl.Int32),
        kind=pl.col("kind").cast(pl.String),
        size=pl.col("size").cast(pl.Int32),
        payload=pl.col("payload").cast(pl.Int32),
        sent_us=pl.col("sent_us").cast(pl.Int64),
        seq=pl.col("seq").cast(pl.Int32),
        frame=pl.col("frame").cast(pl.Int64),
        link=pl.col("link").cast(pl.String),
        reason=pl.col("reason").cast(pl.String),
        ecn=pl.col("ecn").replace_strict(_ECN, return_dtype=pl.String),
    ).hstack(rows.select(optional).get_columns())
