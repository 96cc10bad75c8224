"""Chromium's RTC event log as rtcbench tables (docs/eventlog.md).

libwebrtc's event log records every RTP packet an endpoint sent and received (header fields and
sizes), every RTCP packet whole, and its bandwidth estimator's decisions: the delay-based and
loss-based estimates, the over-use detector's state, probe clusters and their results, ALR and
route changes. Chromium writes it with `--webrtc-event-logging=<dir>` (rtcbench's
`--browser-event-log`) or from chrome://webrtc-internals. `rtcbench_eventlog` (Rust) reads the
bytes; this module makes polars frames of them on one clock and writes them as a folder.

Times: `t_us` counts from the log's earliest event (Chromium writes events buffered before the
log started, so that is earlier than its start event); `utc_origin_ms` is the wall clock at
that instant, from the start event's pair of clocks.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from rtcbench import _core
from rtcbench.results import InputError, atomic_dir, read_file, write_parquet

MAX_EVENT_LOG_BYTES = 1 << 30
"""The largest log read: far above any call's (Chromium 156 writes about 40 kB per peer for a
30 s call at 1 Mbit/s, so an hour-long call at 10 Mbit/s is tens of MB)."""

TABLES = (
    "rtp",
    "rtcp",
    "twcc",
    "ccfb",
    "delay_based",
    "loss_based",
    "targets",
    "probe_clusters",
    "probe_results",
    "alr",
    "routes",
    "streams",
)
"""The tables of a log, in the order they are written."""

DETECTOR_STATES = ["unknown", "normal", "underusing", "overusing"]
"""The over-use detector's states by their number in the log."""

ECN = ["not-ect", "ect1", "ect0", "ce"]
"""ECN codepoints by their two bits (RFC 3168 §5), as rtcbench's packets table names them."""

PROBE_FAILURES = ["unknown", "invalid-send-receive-interval", "invalid-send-receive-ratio", "timeout"]
"""Why a probe failed, by its number in the log."""

_SCHEMAS: dict[str, dict[str, Any]] = {
    "rtp": {
        "t_ms": pl.Int64,
        "direction": pl.Utf8,
        "ssrc": pl.UInt32,
        "seq": pl.UInt16,
        "rtp_timestamp": pl.UInt32,
        "payload_type": pl.UInt8,
        "marker": pl.Boolean,
        "header_size": pl.Int32,
        "payload_size": pl.Int32,
        "padding_size": pl.Int32,
        "transport_seq": pl.UInt16,
        "abs_send_time": pl.UInt32,
        "audio_level": pl.UInt8,
    },
    "rtcp": {
        "t_ms": pl.Int64,
        "direction": pl.Utf8,
        "size": pl.Int32,
        "index": pl.Int16,
        "kind": pl.Utf8,
        "packet_type": pl.UInt8,
        "fmt": pl.UInt8,
        "media_ssrc": pl.UInt32,
        "feedback_base_seq": pl.UInt16,
        "feedback_packets": pl.Int32,
        "feedback_received": pl.Int32,
        "remb_bps": pl.Int64,
        "nack_packets": pl.Int32,
        "sr_ntp_mid": pl.UInt32,
        "report_fraction_lost": pl.UInt8,
        "report_lsr": pl.UInt32,
        "report_dlsr": pl.UInt32,
    },
    "twcc": {
        "t_ms": pl.Int64,
        "direction": pl.Utf8,
        "message": pl.Int32,
        "feedback_count": pl.UInt8,
        "transport_seq": pl.UInt16,
        "arrival_us": pl.Int64,
    },
    "ccfb": {
        "t_ms": pl.Int64,
        "direction": pl.Utf8,
        "message": pl.Int32,
        "media_ssrc": pl.UInt32,
        "seq": pl.UInt16,
        "ecn": pl.Int32,
        "arrival_us": pl.Int64,
    },
    "delay_based": {"t_ms": pl.Int64, "bitrate_bps": pl.Int64, "detector_state": pl.Int32},
    "loss_based": {
        "t_ms": pl.Int64,
        "bitrate_bps": pl.Int64,
        "fraction_loss": pl.Int32,
        "total_packets": pl.Int32,
    },
    "targets": {"t_ms": pl.Int64, "target_bps": pl.Int64},
    "probe_clusters": {
        "t_ms": pl.Int64,
        "id": pl.UInt32,
        "bitrate_bps": pl.Int64,
        "min_packets": pl.Int32,
        "min_bytes": pl.Int32,
    },
    "probe_results": {"t_ms": pl.Int64, "id": pl.UInt32, "bitrate_bps": pl.Int64, "failure": pl.Int32},
    "alr": {"t_ms": pl.Int64, "in_alr": pl.Boolean},
    "routes": {"t_ms": pl.Int64, "connected": pl.Boolean, "overhead": pl.Int32},
    "streams": {
        "t_ms": pl.Int64,
        "direction": pl.Utf8,
        "media": pl.Utf8,
        "ssrc": pl.UInt32,
        "rtx_ssrc": pl.UInt32,
    },
}


@dataclass
class EventLog:
    """One log's tables (`TABLES`), each with `t_us` from `origin_ms` of the log's clock."""

    source: str
    sha256: str
    size: int
    tables: dict[str, pl.DataFrame]
    origin_ms: int | None
    utc_origin_ms: int | None
    format_version: int | None
    skipped: dict[int, int] = field(default_factory=dict)

    def packet_delays(self) -> pl.DataFrame:
        """Each RTP packet this endpoint sent that transport feedback reported on, in sending
        order: `row` (its row of the `rtp` table), `t_us` (sent), `transport_seq`, `size`,
        `received`, `arrival_us` (on the receiver's clock, null if lost) and `delay_ms`, its
        one-way delay less the smallest of the call (arrival on the receiver's clock minus
        sending on this one: the clocks' offset cancels, the path's base delay with it), so the
        queuing it met. Packets and reports are matched by transport-wide sequence number
        unwrapped past 65 535 (`_unwrapped`), so a call of any length matches each to its own."""
        sent = (
            self.tables["rtp"]
            .with_row_index("row")
            .filter((pl.col("direction") == "out") & pl.col("transport_seq").is_not_null())
            .with_columns(index=_unwrapped("transport_seq"))
        )
        reports = (
            self.tables["twcc"]
            .filter(pl.col("direction") == "in")
            .with_columns(index=_unwrapped("transport_seq"))
            .group_by("index")
            .agg(pl.col("arrival_us").drop_nulls().first())
        )
        joined = sent.select("row", "t_us", "index", "transport_seq", "size").join(
            reports, on="index", how="inner"
        )
        delay = pl.col("arrival_us") - pl.col("t_us")
        return joined.sort("row").select(
            pl.col("row").cast(pl.Int64),
            "t_us",
            "transport_seq",
            "size",
            pl.col("arrival_us").is_not_null().alias("received"),
            "arrival_us",
            ((delay - delay.min()) / 1000).alias("delay_ms"),
        )

    def round_trips(self) -> pl.DataFrame:
        """The round trips this endpoint could compute from the reports it received: per
        incoming SR or RR whose first report block echoes one of this endpoint's sender reports
        (LSR), `t_us` (its arrival) and `rtt_us`: arrival - the echoed SR's sending - DLSR (RFC
        3550 §6.4.1), both times on this endpoint's clock, to the log's 1 ms."""
        rtcp = self.tables["rtcp"]
        sent = (
            rtcp.filter((pl.col("direction") == "out") & pl.col("sr_ntp_mid").is_not_null())
            .group_by("sr_ntp_mid")
            .agg(pl.col("t_us").min().alias("sr_us"))
        )
        echoed = rtcp.filter(
            (pl.col("direction") == "in") & pl.col("kind").is_in(["sr", "rr"]) & (pl.col("report_lsr") > 0)
        )
        dlsr_us = (pl.col("report_dlsr").cast(pl.Int64) * 1_000_000) // 65_536
        return (
            echoed.join(sent, left_on="report_lsr", right_on="sr_ntp_mid", how="inner")
            .select("t_us", rtt_us=pl.col("t_us") - pl.col("sr_us") - dlsr_us)
            .filter(pl.col("rtt_us") >= 0)
            .sort("t_us")
        )

    def summary(self) -> dict[str, Any]:
        """What the log holds, in numbers (the folder's `eventlog.json`)."""
        rtp = self.tables["rtp"]
        span_s = None
        times = [t["t_us"] for t in self.tables.values() if t.height]
        if times:
            span_s = max(int(t.max()) for t in times) / 1e6  # type: ignore[arg-type]

        def direction(d: str) -> dict[str, Any]:
            part = rtp.filter(pl.col("direction") == d)
            seconds = (int(part["t_us"].max()) - int(part["t_us"].min())) / 1e6 if part.height > 1 else 0.0  # type: ignore[arg-type]
            size = int(part["size"].sum())
            return {
                "packets": part.height,
                "bytes": size,
                "ssrcs": sorted(int(s) for s in part["ssrc"].unique()),
                "mean_rate_bps": round(8 * size / seconds) if seconds > 0 else None,
                "with_transport_seq": int(part["transport_seq"].is_not_null().sum()),
            }

        delay = self.tables["delay_based"]
        results = self.tables["probe_results"]
        rtcp = self.tables["rtcp"]
        return {
            "source": self.source,
            "sha256": self.sha256,
            "bytes": self.size,
            "format_version": self.format_version,
            "utc_origin_ms": self.utc_origin_ms,
            "span_s": span_s,
            "rows": {name: t.height for name, t in self.tables.items()},
            "rtp": {"out": direction("out"), "in": direction("in")},
            "rtcp": {
                d: dict(
                    sorted(
                        (str(k), int(n))
                        for k, n in rtcp.filter(pl.col("direction") == d)["kind"].value_counts().rows()
                    )
                )
                for d in ("out", "in")
            },
            "delay_based": {
                "updates": delay.height,
                "mean_bps": round(float(delay["bitrate_bps"].mean())) if delay.height else None,  # type: ignore[arg-type]
                "overusing_share": round(float((delay["detector_state"] == "overusing").mean()), 4)  # type: ignore[arg-type]
                if delay.height
                else None,
            },
            "feedback": self._feedback_summary(),
            "probes": {
                "clusters": self.tables["probe_clusters"].height,
                "succeeded": int(results["bitrate_bps"].is_not_null().sum()),
                "failed": int(results["failure"].is_not_null().sum()),
            },
            "skipped_events": {str(k): v for k, v in sorted(self.skipped.items())},
        }

    def _feedback_summary(self) -> dict[str, Any] | None:
        """Over the packets transport feedback reported on: how many, the share lost, and the
        queuing delay's percentiles (`packet_delays`)."""
        d = self.packet_delays()
        if d.height == 0:
            return None
        got = d.filter(pl.col("received"))["delay_ms"]

        def q(p: float) -> float | None:
            return None if got.len() == 0 else round(float(got.quantile(p, "linear")), 2)  # type: ignore[arg-type]

        return {
            "reported": d.height,
            "loss_share": round(1 - got.len() / d.height, 5),
            "delay_ms": {"p50": q(0.5), "p95": q(0.95), "max": q(1.0)},
        }


def parse(data: bytes, source: str = "<bytes>") -> EventLog:
    """The tables of a log's bytes; `InputError` naming `source`, the event and its byte
    offset if they are not a log rtcbench reads."""
    try:
        raw = _core.read_event_log(data)
    except _core.EventLogError as e:
        raise InputError(f"{source}: not a readable RTC event log: {e}") from None
    frames = {name: pl.DataFrame(raw[name], schema=_SCHEMAS[name]) for name in TABLES}
    start = raw["start"]
    firsts = [int(f["t_ms"].min()) for f in frames.values() if f.height]  # type: ignore[arg-type]
    if start is not None:
        firsts.append(int(start[0]))
    origin = min(firsts) if firsts else None
    utc_origin = None if start is None or origin is None else int(start[1]) - (int(start[0]) - origin)
    tables: dict[str, pl.DataFrame] = {}
    for name, f in frames.items():
        t_us = ((pl.col("t_ms") - (origin or 0)) * 1000).alias("t_us")
        tables[name] = f.with_columns(t_us).drop("t_ms").select("t_us", pl.exclude("t_us"))
    tables["rtp"] = tables["rtp"].with_columns(
        size=pl.col("header_size") + pl.col("payload_size") + pl.col("padding_size"),
        media=_media(tables["streams"]),
    )
    tables["delay_based"] = tables["delay_based"].with_columns(
        pl.col("detector_state").replace_strict(
            list(range(len(DETECTOR_STATES))), DETECTOR_STATES, default="unknown", return_dtype=pl.Utf8
        )
    )
    tables["ccfb"] = tables["ccfb"].with_columns(
        pl.col("ecn").replace_strict(list(range(4)), ECN, default=None, return_dtype=pl.Utf8)
    )
    # A succeeded probe has no failure: null stays null, not "unknown".
    tables["probe_results"] = tables["probe_results"].with_columns(
        pl.when(pl.col("failure").is_not_null()).then(
            pl.col("failure").replace_strict(
                list(range(len(PROBE_FAILURES))), PROBE_FAILURES, default="unknown", return_dtype=pl.Utf8
            )
        )
    )
    return EventLog(
        source=source,
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        tables=tables,
        origin_ms=origin,
        utc_origin_ms=utc_origin,
        format_version=None if start is None else int(start[2]),
        skipped={int(k): int(v) for k, v in raw["skipped"]},
    )


def _unwrapped(column: str) -> pl.Expr:
    """A 16-bit sequence number counted on past 65 535, in the order of the rows: each step is
    taken as the shorter way round (RFC 3550 App. A.1's rule), so numbers reported again a
    little out of order stay where they belong."""
    step = (pl.col(column).cast(pl.Int64).diff().fill_null(0) + 98_304) % 65_536 - 32_768
    return pl.col(column).cast(pl.Int64).first() + step.cum_sum()


def _media(streams: pl.DataFrame) -> pl.Expr:
    """`audio`, `video` or `rtx` by SSRC, as the log's stream configs name them (null for an
    SSRC no config names). Chromium 156 logs its video send stream's SSRC as 0: where a video
    send config says 0, an outgoing SSRC no config names is that stream's."""
    by_ssrc: dict[int, str] = {}
    unnamed_video = False
    for row in streams.iter_rows(named=True):
        if row["ssrc"]:
            by_ssrc[int(row["ssrc"])] = row["media"]
        elif row["direction"] == "out" and row["media"] == "video":
            unnamed_video = True
        if row["rtx_ssrc"] is not None:
            by_ssrc[int(row["rtx_ssrc"])] = "rtx"
    ssrcs, names = list(by_ssrc), list(by_ssrc.values())
    named = pl.col("ssrc").replace_strict(ssrcs, names, default=None, return_dtype=pl.Utf8)
    if not unnamed_video:
        return named
    return pl.when(named.is_null() & (pl.col("direction") == "out")).then(pl.lit("video")).otherwise(named)


def read(path: Path) -> EventLog:
    """The log at `path` (a regular file of at most `MAX_EVENT_LOG_BYTES`)."""
    return parse(read_file(path, MAX_EVENT_LOG_BYTES), str(path))


def ended(path: Path) -> bool:
    """Whether the log at `path` is whole: it reads, and its writer logged its end."""
    try:
        return _core.read_event_log(read_file(path, MAX_EVENT_LOG_BYTES))["end_ms"] is not None
    except (InputError, OSError, _core.EventLogError):
        return False


def folder_name(log: EventLog) -> str:
    """The folder a log is written to: its file's stem and the start of its SHA-256, so that a
    folder is keyed by exactly the bytes it was made from."""
    stem = Path(log.source).stem or "eventlog"
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in stem).strip(".") or "eventlog"
    return f"{safe[:64]}-{log.sha256[:12]}"


def write_tables(log: EventLog, folder: Path, summary: dict[str, Any]) -> None:
    """Every table of `log` as Parquet into `folder` (a folder being made), and `summary`
    (`log.summary()`) as `eventlog.json`."""
    for name in TABLES:
        write_parquet(log.tables[name], folder / f"{name}.parquet")
    (folder / "eventlog.json").write_text(json.dumps(summary, indent=2) + "\n")


def write(log: EventLog, out: Path, summary: dict[str, Any]) -> Path:
    """`out`/`folder_name`: the log's tables (`write_tables`) alone, the folder made whole or not
    at all; for a log that is not a run (`rtcbench.eventlog.run.NoRun`)."""
    final = out / folder_name(log)
    with atomic_dir(final, out) as tmp:
        write_tables(log, tmp, summary)
    return final
