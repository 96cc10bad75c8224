"""A sender's RTC event log as a run: the trace tables every run has, measured and drawn by the
same code, in a run folder beside the scenario of the path it crossed (docs/eventlog.md, "A log
as a run").

The run is the call the logging endpoint sent, seen from its log alone:
- `packets`: each RTP packet it sent (`sent`, at its logged time), and as transport feedback
  reported it, `received` (its arrival on the receiver's clock, moved onto the sender's by the
  offset that makes the smallest one-way delay the path's base delay) or `dropped` (reported
  lost and never reported received; the log does not say where or when, so at its sending);
- `controller`: the estimator's decisions (`target_bps` the loss-based estimate, which is
  GoogCC's target and getStats' `availableOutgoingBitrate`; `delay_based_bps` and
  `detector_state`; `loss_rate`; `probe_bps` where a probe's result was logged);
- `feedback`: each RTCP message it received (transport feedback, receiver reports with their
  round trip, REMB, NACK, PLI, FIR);
- no `frames` (the log has no frame events) and no `links` (the path is inferred, not seen).

Sizes on the wire are the logged RTP size plus `WIRE_OVERHEAD` (IPv4, UDP and SRTP's tag, as
measured on Chromium 156's packets); an RTCP packet adds SRTCP's 4-byte index to that.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from rtcbench import _core
from rtcbench import tables as trace
from rtcbench.eventlog import EventLog
from rtcbench.eventlog import write_tables as write_log_tables
from rtcbench.eventlog.path import DerivedPath, infer
from rtcbench.identity import EVENTLOG, controller_identity, model_revision, run_key
from rtcbench.results import InputError, atomic_dir, run_dir, write_tables
from rtcbench.scenarios import Variant, resolve
from rtcbench.tables import Tables

WIRE_OVERHEAD = 38
"""Bytes a logged RTP packet gains on the wire: IPv4 (20), UDP (8) and SRTP's 10-byte tag
(AES_CM_128_HMAC_SHA1_80, RFC 3711 §4.2; what Chromium 156 negotiated in rtcbench's browser
runs, where every logged packet measured 38 bytes larger on the wire). IPv6 adds 20, a TURN
channel 4, AEAD-GCM's tag 6."""
SRTCP_INDEX = 4
"""SRTCP's E flag and index (RFC 3711 §3.4), which an RTCP packet carries beyond SRTP's tag."""
CONTROLLER = EVENTLOG
"""What an imported run names its controller: the estimator the log's endpoint ran."""
IMPORT_REVISION = 1
"""The revision of how a log becomes a run and a path; part of the run's key."""
SEED = 1
"""A log has no seed: its run is filed as seed 1, as a run with the default seed is."""
UNOBSERVED = ("frames", "frame_delay", "residual_loss", "fec_overhead")
"""What a log does not show (`meta.unobserved`): frames (it logs packets, not frames, so neither
their rate nor their delay), which packet a retransmission repaired (in the RTX payload), and
FEC inside RED."""


class NoRun(InputError):
    """The log holds no call its endpoint sent with feedback on it: no run can be made of it."""


@dataclass(frozen=True)
class Imported:
    """A log read as a run: its folder (None until written), summary and tables, and the path."""

    path: Path | None
    summary: dict[str, Any]
    tables: Tables
    derived: DerivedPath
    variant: Variant


def scenario_id(log: EventLog) -> str:
    """The derived scenario's id: `eventlog-` with the log file's stem and the start of its
    SHA-256, so that each log's path is a scenario of its own."""
    stem = Path(log.source).stem or "log"
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in stem).strip(".-")[:48] or "log"
    return f"eventlog-{safe}-{log.sha256[:12]}"


def derive(log: EventLog, overhead: int = WIRE_OVERHEAD) -> tuple[DerivedPath, Variant, pl.DataFrame]:
    """The path `log`'s call crossed, its scenario loaded as a variant, and the packets'
    delays; `NoRun` if the log holds no media it sent with feedback on it."""
    delays = log.packet_delays()
    derived = infer(log, delays, overhead)
    if derived is None:
        sent = log.tables["rtp"].filter(pl.col("direction") == "out").height
        why = (
            "it sent no RTP (a receiver's log: read its sender's)"
            if sent == 0
            else f"none of the {sent} RTP packets it sent has transport feedback in the log"
        )
        raise NoRun(f"{log.source}: no run can be made of this log: {why}")
    sid = scenario_id(log)
    text = derived.scenario(sid, f"rtcbench eventlog of {Path(log.source).name} (sha256 {log.sha256})")
    with tempfile.TemporaryDirectory(prefix="rtcbench-eventlog-") as tmp:
        file = Path(tmp) / "scenario.toml"
        file.write_text(text, encoding="utf-8")
        (variant,) = resolve(file)
    return derived, variant, delays


def run_tables(
    log: EventLog, derived: DerivedPath, variant: Variant, delays: pl.DataFrame, overhead: int = WIRE_OVERHEAD
) -> Tables:
    """The trace tables of the call `log`'s endpoint sent (the module's docstring)."""
    # The flows and ids a simulated run of the derived scenario has (the controller aside).
    meta: dict[str, Any] = json.loads(_core.run_meta(variant.core, "gcc", SEED))
    meta["controller"] = CONTROLLER
    for call in meta["calls"]:
        call["controller"] = CONTROLLER
    for f in meta["flows"]:
        # The path is inferred, not observed: no link's state is in these tables.
        f["bottleneck"] = None
    meta["unobserved"] = list(UNOBSERVED)
    # By the part of their name after the call's: video, audio, rtcp-rx, rtcp-tx.
    flows = {str(f["name"]).rsplit(".", 1)[1]: int(f["id"]) for f in meta["flows"] if f.get("call") == 0}
    return Tables(
        packets=_packets(log, derived, delays, flows, overhead),
        frames=pl.DataFrame(schema=trace.dtypes("frames")),
        controller=controller_table(log, derived.duration_us),
        links=pl.DataFrame(schema=trace.dtypes("links")),
        feedback=_feedback(log, derived, overhead),
        meta=meta,
    )


def _packets(
    log: EventLog, derived: DerivedPath, delays: pl.DataFrame, flows: dict[str, int], overhead: int
) -> pl.DataFrame:
    video = flows.get("video", flows.get("audio", 0))
    flow = pl.col("media").replace_strict(
        ["audio"], [flows.get("audio", video)], default=video, return_dtype=pl.Int32
    )
    kind = (
        pl.when(pl.col("payload_size") == 0)
        .then(pl.lit("padding"))
        .when(pl.col("media") == "rtx")
        .then(pl.lit("rtx"))
        .otherwise(pl.lit("media"))
    )
    sent = (
        log.tables["rtp"]
        .with_row_index("row")
        .filter((pl.col("direction") == "out") & (pl.col("t_us") <= derived.duration_us))
        .with_columns(flow=flow, kind=kind)
    )
    # A video packet's frame: its RTP timestamp's place among the flow's, in sending order.
    frames = (
        sent.filter((pl.col("kind") == "media") & (pl.col("media") != "audio"))
        .select("flow", "rtp_timestamp")
        .unique(maintain_order=True)
        .with_columns(frame=pl.int_range(pl.len(), dtype=pl.Int64).over("flow"))
    )
    payload = (
        pl.when(pl.col("kind") == "media")
        .then(pl.col("payload_size"))
        .when(pl.col("kind") == "rtx")
        .then((pl.col("payload_size") - 2).clip(lower_bound=0))
        .otherwise(0)
    )
    sent = sent.join(frames, on=["flow", "rtp_timestamp"], how="left").select(
        "row",
        t_us="t_us",
        event=pl.lit("sent"),
        packet=pl.col("row").cast(pl.Int64),
        flow="flow",
        kind="kind",
        size=(pl.col("size") + overhead).cast(pl.Int32),
        payload=payload.cast(pl.Int32),
        sent_us="t_us",
        seq=pl.when(pl.col("kind") == "media").then(pl.col("seq").cast(pl.Int32)),
        frame=pl.when(pl.col("media") != "audio").then(pl.col("frame")),
        transport_seq=pl.col("transport_seq").cast(pl.Int32),
    )
    # Arrivals on the sender's clock: the least one-way delay becomes the path's base delay.
    shift = (pl.col("arrival_us") - pl.col("t_us")).min() - derived.base_owd_us
    fate = delays.select("row", "received", at=pl.col("arrival_us") - shift)
    reported = sent.join(fate, on="row", how="inner")
    received = reported.filter(pl.col("received")).with_columns(t_us="at", event=pl.lit("received"))
    dropped = reported.filter(~pl.col("received")).with_columns(event=pl.lit("dropped"))
    columns = [c for c in sent.columns if c != "row"]
    return (
        pl.concat(
            [
                sent.select(columns),
                received.select(columns),
                dropped.select(columns),
                *(
                    p.select(columns)
                    for p in _feedback_packets(log, derived, flows, overhead, len(log.tables["rtp"]))
                ),
            ]
        )
        .sort("t_us", "packet", maintain_order=True)
        .with_columns(link=pl.lit(None, pl.String), reason=pl.lit(None, pl.String))
    )


def _feedback_packets(
    log: EventLog, derived: DerivedPath, flows: dict[str, int], overhead: int, first_id: int
) -> list[pl.DataFrame]:
    """The call's RTCP packets: those the endpoint received (flow `rtcp-rx`) `received` when
    logged and `sent` the base delay before (the reverse path's queue is not in the log); those
    it sent (`rtcp-tx`) `sent` only (their arrival is in the other endpoint's log)."""
    rtcp = log.tables["rtcp"].filter((pl.col("index") == 0) & (pl.col("t_us") <= derived.duration_us))
    packets = (
        rtcp.with_row_index("n")
        .select(
            "direction",
            t_us="t_us",
            packet=(pl.col("n") + first_id).cast(pl.Int64),
            flow=pl.col("direction").replace_strict(
                ["in", "out"], [flows.get("rtcp-rx", -1), flows.get("rtcp-tx", -1)], return_dtype=pl.Int32
            ),
            kind=pl.lit("rtcp"),
            size=(pl.col("size") + overhead + SRTCP_INDEX).cast(pl.Int32),
            payload=pl.lit(0, pl.Int32),
            sent_us=pl.when(pl.col("direction") == "in")
            .then(pl.col("t_us") - derived.base_owd_us)
            .otherwise("t_us"),
            seq=pl.lit(None, pl.Int32),
            frame=pl.lit(None, pl.Int64),
            transport_seq=pl.lit(None, pl.Int32),
        )
        .filter(pl.col("flow") >= 0)
    )
    arrived = packets.filter(pl.col("direction") == "in")
    return [
        packets.with_columns(t_us="sent_us", event=pl.lit("sent")),
        arrived.with_columns(event=pl.lit("received")),
    ]


def controller_table(log: EventLog, until_us: int | None = None) -> pl.DataFrame:
    """The controller table of `log`'s estimator (the module's docstring): a row at each
    decision the log holds, every column as last decided, up to `until_us` if given."""
    t = log.tables
    target = t["loss_based"] if t["loss_based"].height else t["targets"].rename({"target_bps": "bitrate_bps"})
    parts = [
        target.select("t_us", target_bps="bitrate_bps"),
        t["delay_based"].select("t_us", delay_based_bps="bitrate_bps", detector_state="detector_state"),
        # In 1/255, as GoogCC reads its own fraction lost (libwebrtc's loss_rate_ratio).
        t["loss_based"].select("t_us", loss_rate=pl.col("fraction_loss").cast(pl.Float64) / 255),
        t["probe_results"]
        .filter(pl.col("bitrate_bps").is_not_null())
        .select("t_us", probe_bps="bitrate_bps"),
    ]
    rows = pl.concat(parts, how="diagonal_relaxed").sort("t_us", maintain_order=True)
    held = ["target_bps", "delay_based_bps", "detector_state", "loss_rate"]
    last = pl.all().exclude("t_us", "probe_bps").last()
    rows = (
        rows.with_columns(pl.col(held).forward_fill())
        .group_by("t_us", maintain_order=True)
        .agg(last, pl.col("probe_bps").drop_nulls().last())
        .filter(pl.col("target_bps").is_not_null())
    )
    if until_us is not None:
        rows = rows.filter(pl.col("t_us") <= until_us)
    return rows.select(
        "t_us",
        call=pl.lit(0, pl.Int32),
        target_bps=pl.col("target_bps").cast(pl.Int64),
        pacing_bps=pl.lit(None, pl.Int64),
        delay_based_bps=pl.col("delay_based_bps").cast(pl.Int64),
        detector_state=pl.col("detector_state").cast(pl.String),
        loss_rate="loss_rate",
        probe_bps=pl.col("probe_bps").cast(pl.Int64),
    )


_FEEDBACK_KINDS = ("twcc", "ccfb", "rr", "remb", "nack", "pli", "fir")
"""The RTCP a sender's controller reads, as the feedback table names it (an SR's report block
about the sender is a `rr`)."""


def _feedback(log: EventLog, derived: DerivedPath, overhead: int) -> pl.DataFrame:
    rtcp = log.tables["rtcp"].filter(
        (pl.col("direction") == "in")
        & (pl.col("t_us") <= derived.duration_us)
        & (
            pl.col("kind").is_in(_FEEDBACK_KINDS)
            | ((pl.col("kind") == "sr") & pl.col("report_lsr").is_not_null())
        )
    )
    rtt = log.round_trips().rename({"rtt_us": "rtt"}).unique("t_us", keep="first")
    kind = pl.when(pl.col("kind") == "sr").then(pl.lit("rr")).otherwise(pl.col("kind"))
    report = pl.col("kind").is_in(["sr", "rr"])
    return (
        rtcp.join(rtt, on="t_us", how="left")
        .select(
            "t_us",
            call=pl.lit(0, pl.Int32),
            kind=kind,
            size=(pl.col("size") + overhead + SRTCP_INDEX).cast(pl.Int32),
            rtt_us=pl.when(report).then(pl.col("rtt")).cast(pl.Int64),
            fraction_lost=pl.when(report).then(pl.col("report_fraction_lost").cast(pl.Float64) / 256),
            packets_reported=pl.when(pl.col("kind") == "nack")
            .then(pl.col("nack_packets"))
            .otherwise(pl.col("feedback_packets"))
            .cast(pl.Int32),
            ce_reported=pl.lit(None, pl.Int32),
        )
        .sort("t_us", maintain_order=True)
    )


def identity(log: EventLog, variant: Variant) -> dict[str, Any]:
    """What an imported run is, as its summary records it and its folder is keyed: the derived
    scenario, the log's bytes (SHA-256) and the revision of the import."""
    cc = controller_identity(CONTROLLER)
    runtime = f"eventlog sha256={log.sha256} import={IMPORT_REVISION}"
    return {
        "key": run_key(variant.fingerprint, cc, EVENTLOG, runtime),
        "scenario_sha256": variant.fingerprint,
        "controller": cc,
        "model_revision": model_revision(EVENTLOG),
        "eventlog_sha256": log.sha256,
        "import_revision": IMPORT_REVISION,
    }


def folder(out: Path, variant: Variant, key: str) -> Path:
    """Where the run keyed `key` (`identity`) is written under `out`: as any run of the derived
    scenario, under the controller `eventlog`, so that runs of other controllers on it sit
    beside it."""
    return run_dir(out, variant.scenario_id, variant.slug, CONTROLLER, key, SEED)


def import_log(
    log: EventLog,
    out: Path | None,
    *,
    overhead: int = WIRE_OVERHEAD,
    figure: bool = True,
    command: str | None = None,
) -> Imported:
    """`log` as a run (`run_tables`), written under `out` (`folder`) with the run's summary,
    time series, figure and scenario, and the log's own tables under `eventlog/`; the folder
    made whole or not at all. With `out` None nothing is written."""
    # Imported here: the runner imports the testbed's modules, which a reader needs none of.
    from rtcbench import runner
    from rtcbench.measure import measure_tables

    if not 0 <= overhead <= 1000:
        raise InputError(f"--overhead must be 0 to 1000 bytes, got {overhead}")
    started = time.perf_counter()
    derived, variant, delays = derive(log, overhead)
    tables = run_tables(log, derived, variant, delays, overhead)
    extra = {
        "identity": identity(log, variant),
        "eventlog": {**log.summary(), "overhead_bytes": overhead, "path": derived.summary()},
    }
    if out is None:
        measured = measure_tables(tables)
        summary = runner._summary(
            variant, CONTROLLER, SEED, tables.meta, measured.summary, None, None, command, EVENTLOG
        )
        summary.update(extra)
        summary["wall_s"] = time.perf_counter() - started
        return Imported(None, summary, tables, derived, variant)
    final = folder(Path(out), variant, extra["identity"]["key"])
    with atomic_dir(final, Path(out)) as tmp:
        write_tables(tables, tmp)
        (tmp / "eventlog").mkdir()
        write_log_tables(log, tmp / "eventlog", extra["eventlog"])
        summary, _ = runner._finish_folder(
            tmp,
            variant,
            CONTROLLER,
            SEED,
            tables.meta,
            tables,
            figure=figure,
            command=command,
            started=started,
            sim_wall_s=None,
            events=None,
            mode=EVENTLOG,
            extra=extra,
        )
    return Imported(final, summary, tables, derived, variant)
