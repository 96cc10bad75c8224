"""The trace tables of an emulated run (docs/traces.md), from what its processes recorded: the
relay's packet log and link samples (`relay-packets.csv`, `relay-links.csv`: every frame as it
reached the relay, left it or was dropped, on the relay's one clock) and the media agents' logs
(frames, feedback, controller state). The tables have the simulator's schemas and the
simulator's flow ids (`meta.flows`), so every metric, the scorecard and the report apply as
they are (docs/emulation.md, "Emulated runs").

A packet is `sent` when it reached the relay (its sender's interface is a veth: the kernel
timestamps it as it leaves the host) and `received` when the relay handed it to its receiver's
interface, so one-way delay is measured on one clock. Rows after the scenario's end are left out,
as the simulator records nothing after it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from rtcbench import _core, tables
from rtcbench.emulation.media import FIRST_PORT, PlannedCall
from rtcbench.learned import DECIDED_AT
from rtcbench.stages import with_packet_dates
from rtcbench.tables import Tables
from rtcbench.testbed.cross import PRAGUE_TCP_HEADER, CbrFlow, CrossFlow, TcpFlow
from rtcbench.testbed.relay_log import (
    TraceError,
    background_flows,
    packet_events,
    relay_links,
    relay_packets,
)

__all__ = [
    "ENCODED_SCHEMA",
    "FRAMES_SCHEMA",
    "emulated_tables",
]

PT_VIDEO, PT_RTX, PT_AUDIO, PT_RED, PT_RTX_RED, PT_FLEXFEC = 96, 97, 111, 116, 117, 35
"""The RTP payload types of a call's streams (`rtcbench_rtp::call`); RTX carries retransmissions
and probe padding, RED video and ULPFEC (with `fec` on, the default), each told apart by the
sender's log, which also gives each packet's payload type; FlexFEC (`fec = "flexfec"`) has its
own SSRC and payload type, and belongs to the video flow."""
_KIND_PT = {"video": PT_VIDEO, "padding": PT_RTX, "rtx": PT_RTX, "audio": PT_AUDIO, "fec": PT_RED}
_CODES = _core.trace_codes()
_FEEDBACK_KIND = dict(enumerate(_CODES["feedback_kind"]))
UDP, TCP = 17, 6

FRAMES_SCHEMA = tables.dtypes("frames")
"""The frames table's columns (docs/traces.md, the core's schema)."""
_RECEIVER_COLUMNS = ("first_us", "complete_us", "decode_us", "render_us", "freeze")
_PACKET_DATES = ("first_sent_us", "last_sent_us", "last_arrival_us")
ENCODED_SCHEMA = {c: t for c, t in FRAMES_SCHEMA.items() if c not in (*_RECEIVER_COLUMNS, *_PACKET_DATES)}
"""Its columns of a frame as its sender encoded it; the receiver's `first_us`, `complete_us`,
`decode_us`, `render_us` and `freeze` follow, and the dates of its packets come from the packets
table (`stages.with_packet_dates`)."""


def _flow_ids(meta: Mapping[str, Any]) -> dict[str, int]:
    return {f["name"]: int(f["id"]) for f in meta["flows"]}


def _flow_rules(
    meta: Mapping[str, Any],
    calls: Sequence[PlannedCall],
    cross: Sequence[CrossFlow],
    address: Mapping[str, str],
) -> pl.DataFrame:
    """Which flow a frame belongs to, by its 5-tuple (and, for a call's RTP, its payload type):
    columns src, src_port, dst, dst_port, protocol, pt (null: any), flow, kind (null: decided by
    the frame: RTP media or padding, TCP data or pure ACK)."""
    ids = _flow_ids(meta)
    rows: list[dict[str, Any]] = []

    def rule(
        src: str, sport: int, dst: str, dport: int, proto: int, pt: int | None, flow: str, kind: str | None
    ) -> None:
        if flow not in ids:
            raise TraceError(f"flow {flow!r} is not among the run's flows (meta.flows)")
        rows.append(
            {
                "src": address[src],
                "src_port": sport,
                "dst": address[dst],
                "dst_port": dport,
                "protocol": proto,
                "pt": pt,
                "flow": ids[flow],
                "kind": kind,
            }
        )

    for c in calls:
        port = FIRST_PORT + 2 * c.index
        names = {f["name"] for f in meta["flows"] if f.get("call") == c.index}
        video, audio = f"{c.name}.video", f"{c.name}.audio"
        if video in names:
            rule(c.src, port, c.dst, port, UDP, PT_VIDEO, video, "media")
            rule(c.src, port, c.dst, port, UDP, PT_RTX, video, "padding")
            rule(c.src, port, c.dst, port, UDP, PT_RED, video, "media")
            rule(c.src, port, c.dst, port, UDP, PT_RTX_RED, video, "padding")
            rule(c.src, port, c.dst, port, UDP, PT_FLEXFEC, video, "media")
        if audio in names:
            rule(c.src, port, c.dst, port, UDP, PT_AUDIO, audio, "media")
        rule(c.src, port, c.dst, port, UDP, -1, f"{c.name}.rtcp-tx", "rtcp")
        rule(c.dst, port, c.src, port, UDP, -1, f"{c.name}.rtcp-rx", "rtcp")
    for f in cross:
        if isinstance(f, TcpFlow) and f.udp:
            # rtcbench-prague's TCP over UDP: data one way, ACKs the other.
            rule(f.src, f.src_port, f.dst, f.dst_port, UDP, None, f.name, "tcp")
            rule(f.dst, f.dst_port, f.src, f.src_port, UDP, None, f"{f.name}.ack", "tcp_ack")
        elif isinstance(f, TcpFlow):
            rule(f.src, f.src_port, f.dst, f.dst_port, TCP, None, f.name, None)
            rule(f.dst, f.dst_port, f.src, f.src_port, TCP, None, f"{f.name}.ack", None)
        elif isinstance(f, CbrFlow):
            rule(f.src, f.src_port, f.dst, f.dst_port, UDP, None, f.name, "cbr")
    schema = {
        "src": pl.String,
        "src_port": pl.Int32,
        "dst": pl.String,
        "dst_port": pl.Int32,
        "protocol": pl.Int32,
        "pt": pl.Int32,
        "flow": pl.Int32,
        "kind": pl.String,
    }
    return pl.DataFrame(rows, schema=schema)


def _tcp_payload() -> pl.Expr:
    """A TCP packet's payload bytes: the relay's transport payload, less the TCP header that a
    Prague datagram (rtcbench-prague's TCP over UDP) carries in its UDP payload."""
    over_udp = pl.col("protocol") == UDP
    return (
        pl.when(over_udp & (pl.col("kind") == "tcp"))
        .then(pl.col("payload") - PRAGUE_TCP_HEADER)
        .when(over_udp & (pl.col("kind") == "tcp_ack"))
        .then(pl.lit(0))
        .otherwise(pl.col("payload"))
    )


def cross_sent(
    relay: pl.DataFrame, meta: Mapping[str, Any], cross: Sequence[CrossFlow], address: Mapping[str, str]
) -> pl.DataFrame:
    """The cross traffic's packets as they reached the relay (`relay`: its packet log), in the
    packets table's `sent` shape (`relay_log.packet_events`): the kernel TCP's data and pure
    ACKs, and CBR, told apart by their 5-tuples (`cross.plan`'s ports, `address`: node → host
    address). A browser run traces its calls from their own headers and these beside them."""
    rules = _flow_rules(meta, [], cross, address).drop("pt")
    keyed = ["src", "src_port", "dst", "dst_port", "protocol"]
    rows = relay.filter(pl.col("event") == "in").join(rules, on=keyed, how="inner")
    return rows.select(
        "id",
        "t_us",
        "flow",
        kind=pl.when(pl.col("kind").is_not_null())
        .then(pl.col("kind"))
        .when(pl.col("payload") > 0)
        .then(pl.lit("tcp"))
        .otherwise(pl.lit("tcp_ack")),
        size="size",
        payload=_tcp_payload(),
        seq=pl.lit(None, pl.Int32),
        frame=pl.lit(None, pl.Int64),
        ecn_in="ecn",
        sent_us="t_us",
    )


def _sent_media(sender_logs: Mapping[int, list[dict[str, Any]]]) -> pl.DataFrame:
    """What each call's sender sent as RTP: (call, pt, seq on the wire, occurrence) → kind, payload,
    frame, and the traced sequence number (a retransmission's is that of the packet it repairs)."""
    rows = [
        {
            "call": k,
            "pt": r.get("pt") or _KIND_PT[r["kind"]],
            "seq": r.get("rtp_seq", r["seq"]),
            "log_kind": "media" if r["kind"] in ("video", "audio") else r["kind"],
            "log_seq": r["seq"],
            "log_payload": r["payload"],
            "log_frame": r["frame"],
        }
        for k, records in sender_logs.items()
        for r in records
        if r["event"] == "sent" and r["kind"] in _KIND_PT and r["seq"] is not None
    ]
    schema = {
        "call": pl.Int32,
        "pt": pl.Int32,
        "seq": pl.Int32,
        "log_kind": pl.String,
        "log_seq": pl.Int32,
        "log_payload": pl.Int32,
        "log_frame": pl.Int64,
    }
    df = pl.DataFrame(rows, schema=schema)
    return df.with_columns(occurrence=pl.int_range(pl.len()).over("call", "pt", "seq"))


def _packets(
    relay: pl.DataFrame,
    rules: pl.DataFrame,
    flow_call: Mapping[int, int],
    sent_media: pl.DataFrame,
    background: Mapping[str, int],
    end_us: int,
) -> pl.DataFrame:
    arrivals = relay.filter(pl.col("event") == "in")
    # A call's datagrams: RTCP (RFC 5761: packet types 192-223 where RTP has M and PT) or RTP
    # with its payload type and sequence number from the header.
    second = pl.col("head").str.slice(2, 2).str.to_integer(base=16, strict=False)
    arrivals = arrivals.with_columns(
        rtcp=second.is_between(192, 223),
        rtp_pt=second.cast(pl.Int32) % 128,
        rtp_seq=pl.col("head").str.slice(4, 4).str.to_integer(base=16, strict=False).cast(pl.Int32),
    )
    arrivals = arrivals.with_columns(
        pt=pl.when(pl.col("protocol") != UDP)
        .then(None)
        .when(pl.col("rtcp"))
        .then(pl.lit(-1))
        .otherwise(pl.col("rtp_pt"))
    )
    keyed = ["src", "src_port", "dst", "dst_port", "protocol"]
    exact = arrivals.join(rules.filter(pl.col("pt").is_not_null()), on=[*keyed, "pt"], how="inner")
    anypt = arrivals.join(rules.filter(pl.col("pt").is_null()).drop("pt"), on=keyed, how="inner")
    hosts = pl.concat([exact, anypt], how="diagonal_relaxed")
    is_call_rtp = pl.col("kind").is_in(["media", "padding"])
    hosts = hosts.with_columns(
        call=pl.col("flow").replace_strict(flow_call, default=None, return_dtype=pl.Int32),
        seq=pl.when(is_call_rtp).then(pl.col("rtp_seq")),
    )
    hosts = hosts.sort("t_us", "id").with_columns(
        occurrence=pl.when(is_call_rtp).then(pl.int_range(pl.len()).over("call", "pt", "seq"))
    )
    hosts = hosts.join(sent_media, on=["call", "pt", "seq", "occurrence"], how="left")
    hosts = hosts.with_columns(
        # The RTX stream carries retransmissions and padding: the sender's log says which.
        kind=pl.when(is_call_rtp & pl.col("log_kind").is_not_null())
        .then(pl.col("log_kind"))
        .when(pl.col("kind").is_not_null())
        .then(pl.col("kind"))
        .when(pl.col("payload") > 0)
        .then(pl.lit("tcp"))
        .otherwise(pl.lit("tcp_ack")),
    )
    hosts = hosts.with_columns(
        payload=pl.when(pl.col("kind").is_in(["media", "rtx", "fec"]))
        .then(pl.col("log_payload"))
        .when(pl.col("kind").is_in(["padding", "rtcp"]))
        .then(pl.lit(0))
        .otherwise(_tcp_payload()),
        seq=pl.when(pl.col("kind") == "rtx").then(pl.col("log_seq")).otherwise(pl.col("seq")),
        frame=pl.when(
            ((pl.col("kind") == "media") & pl.col("pt").is_in([PT_VIDEO, PT_RED])) | (pl.col("kind") == "rtx")
        ).then(pl.col("log_frame")),
    )
    sent = hosts.select(
        "id", "t_us", "flow", "kind", "size", "payload", "seq", "frame", ecn_in="ecn", sent_us="t_us"
    )
    return packet_events(relay, sent, background, end_us)


def _recovered(
    video_flow: Mapping[int, int], receiver_logs: Mapping[int, list[dict[str, Any]]], end_us: int
) -> pl.DataFrame:
    """`recovered` rows (docs/traces.md): the video packets each receiver rebuilt from FEC."""
    rows = [
        {"t_us": r["t_us"], "flow": video_flow[k], "seq": r["seq"]}
        for k, records in receiver_logs.items()
        if k in video_flow
        for r in records
        if r["event"] == "recovered" and r["t_us"] <= end_us
    ]
    df = pl.DataFrame(rows, schema={"t_us": pl.Int64, "flow": pl.Int32, "seq": pl.Int32})
    return df.select(
        "t_us",
        event=pl.lit("recovered"),
        packet=pl.lit(-1, pl.Int64),
        flow="flow",
        kind=pl.lit("media"),
        size=pl.lit(0, pl.Int32),
        payload=pl.lit(0, pl.Int32),
        sent_us="t_us",
        seq="seq",
        frame=pl.lit(None, pl.Int64),
        link=pl.lit(None, pl.String),
        reason=pl.lit(None, pl.String),
        ecn=pl.lit("not-ect"),
    )


def _frames(
    video_flow: Mapping[int, int],
    sender_logs: Mapping[int, list[dict[str, Any]]],
    receiver_logs: Mapping[int, list[dict[str, Any]]],
    end_us: int,
    packets: pl.DataFrame,
) -> pl.DataFrame:
    encoded = [
        {
            "flow": video_flow[k],
            "frame": r["frame"],
            "capture_us": r["t_us"],
            "size": r["size"],
            "keyframe": r["keyframe"],
            "width": r["width"],
            "height": r["height"],
            "packets": r["packets"],
            # Absent from a GStreamer RTP stack's log, which does not see its encoder's output.
            "encoded_us": r.get("encoded_us"),
        }
        for k, records in sender_logs.items()
        if k in video_flow
        for r in records
        if r["event"] == "frame_encoded" and r["t_us"] <= end_us
    ]
    completed = [
        {"flow": video_flow[k], "frame": r["frame"], "first_us": r.get("first_us"), "complete_us": r["t_us"]}
        for k, records in receiver_logs.items()
        if k in video_flow
        for r in records
        if r["event"] == "frame_completed" and r["t_us"] <= end_us
    ]
    rendered = [
        {
            "flow": video_flow[k],
            "frame": r["frame"],
            "decode_us": r.get("decode_us"),
            "render_us": r["t_us"],
            "freeze": r["freeze"],
        }
        for k, records in receiver_logs.items()
        if k in video_flow
        for r in records
        if r["event"] == "frame_rendered" and r["t_us"] <= end_us
    ]
    frames = pl.DataFrame(encoded, schema=ENCODED_SCHEMA)
    done = pl.DataFrame(
        completed, schema={"flow": pl.Int32, "frame": pl.Int64, "first_us": pl.Int64, "complete_us": pl.Int64}
    ).unique(["flow", "frame"], keep="first")
    shown = pl.DataFrame(
        rendered,
        schema={
            "flow": pl.Int32,
            "frame": pl.Int64,
            "decode_us": pl.Int64,
            "render_us": pl.Int64,
            "freeze": pl.Boolean,
        },
    ).unique(["flow", "frame"], keep="first")
    joined = (
        frames.join(done, on=["flow", "frame"], how="left")
        .join(shown, on=["flow", "frame"], how="left")
        .with_columns(pl.col("freeze").fill_null(False))
        .sort("flow", "frame")
    )
    dated = with_packet_dates(joined, packets)
    return dated.select(c for c in FRAMES_SCHEMA if c in dated.columns)


def _typed_rows(rows: list[dict[str, Any]], fixed: dict[str, Any]) -> pl.DataFrame:
    """Controller state rows typed as the simulator types them (docs/traces.md): rates and sizes
    Int64, states String, every other value Float64; columns in the order they first appear."""
    schema: dict[str, Any] = dict(fixed)
    for name in dict.fromkeys(name for r in rows for name in r):
        if name in fixed:
            continue
        sample = next((r[name] for r in rows if r.get(name) is not None), None)
        if name.endswith(("_bps", "_bytes")):
            schema[name] = pl.Int64
        elif isinstance(sample, str):
            schema[name] = pl.String
        else:
            schema[name] = pl.Float64
    return pl.DataFrame(rows, schema=schema)


def _controller(
    sender_logs: Mapping[int, list[dict[str, Any]]],
    receiver_logs: Mapping[int, list[dict[str, Any]]],
    end_us: int,
) -> pl.DataFrame:
    """The sender's controller rows; with a receiver-side estimator (GCC-02 receive-side), its
    state as last known at each row (`rx_*`), as the simulator records it."""
    rows = [
        {
            "t_us": r["t_us"],
            "call": k,
            "target_bps": r["target_bps"],
            "pacing_bps": r["pacing_bps"],
            **dict(r["state"]),
        }
        for k, records in sender_logs.items()
        for r in records
        if r["event"] == "controller" and r["t_us"] <= end_us
    ]
    fixed = tables.dtypes("controller")
    table = _typed_rows(rows, fixed).sort("t_us", "call", maintain_order=True)
    estimates = [
        {"t_us": r["t_us"], "call": k, **dict(r["state"])}
        for k, records in receiver_logs.items()
        for r in records
        if r["event"] == "estimator"
    ]
    if not estimates:
        return table
    remote = _typed_rows(estimates, {"t_us": pl.Int64, "call": pl.Int32}).sort(
        "t_us", "call", maintain_order=True
    )
    joined = table.join_asof(remote, on="t_us", by="call", strategy="backward", check_sortedness=False)
    if DECIDED_AT not in remote.columns:
        return joined
    # A learned policy: a row at each decision too, with the sender's target as last logged, as
    # the simulator records every decision (docs/controllers/onnx.md, "What the trace holds").
    decisions = remote.filter(pl.col("t_us") <= end_us).join_asof(
        table, on="t_us", by="call", strategy="backward", check_sortedness=False
    )
    decisions = decisions.filter(pl.col("target_bps").is_not_null()).select(joined.columns)
    return pl.concat([joined, decisions.cast(joined.schema)]).sort("t_us", "call", maintain_order=True)


def _feedback(sender_logs: Mapping[int, list[dict[str, Any]]], end_us: int) -> pl.DataFrame:
    rows = [
        {
            "t_us": r["t_us"],
            "call": k,
            "kind": _FEEDBACK_KIND[r["kind"]],
            "size": r["size"],
            "rtt_us": r["rtt_us"],
            "fraction_lost": r["fraction_lost"],
            "packets_reported": r["packets_reported"],
            "ce_reported": r.get("ce_reported"),
        }
        for k, records in sender_logs.items()
        for r in records
        if r["event"] == "feedback" and r["t_us"] <= end_us
    ]
    schema = {
        "t_us": pl.Int64,
        "call": pl.Int32,
        "kind": pl.String,
        "size": pl.Int32,
        "rtt_us": pl.Int64,
        "fraction_lost": pl.Float64,
        "packets_reported": pl.Int32,
        "ce_reported": pl.Int32,
    }
    return pl.DataFrame(rows, schema=schema).sort("t_us", "call", maintain_order=True)


def emulated_tables(
    meta: Mapping[str, Any],
    relay_dir: Path,
    calls: Sequence[PlannedCall],
    cross: Sequence[CrossFlow],
    address: Mapping[str, str],
    logs: Mapping[tuple[str, str], list[dict[str, Any]]],
) -> Tables:
    """The trace tables of an emulated run: `meta` is the simulator's for the same scenario and
    seed (the flows and their ids), `relay_dir` holds the relay's packet log and link samples,
    `calls` and `cross` are what ran (`media.plan`, `cross.plan`), `address` each node's host
    address, and `logs` the media agents' records by (call name, role)."""
    end_us = round(float(meta["duration_s"]) * 1e6)
    index = {c.name: c.index for c in calls}
    sender_logs = {index[name]: records for (name, role), records in logs.items() if role == "sender"}
    receiver_logs = {index[name]: records for (name, role), records in logs.items() if role == "receiver"}
    ids = _flow_ids(meta)
    flow_call = {int(f["id"]): int(f["call"]) for f in meta["flows"] if f.get("call") is not None}
    video_flow = {c.index: ids[f"{c.name}.video"] for c in calls if f"{c.name}.video" in ids}
    background = background_flows(meta)
    relay = relay_packets(relay_dir)
    packets = _packets(
        relay,
        _flow_rules(meta, calls, cross, address),
        flow_call,
        _sent_media(sender_logs),
        background,
        end_us,
    )
    recovered = _recovered(video_flow, receiver_logs, end_us)
    if recovered.height:
        packets = pl.concat([packets, recovered.select(packets.columns).cast(packets.schema)]).sort(
            "t_us", maintain_order=True
        )
    return Tables(
        meta=dict(meta),
        packets=packets,
        frames=_frames(video_flow, sender_logs, receiver_logs, end_us, packets),
        controller=_controller(sender_logs, receiver_logs, end_us),
        links=relay_links(relay_dir, end_us),
        feedback=_feedback(sender_logs, end_us),
    )
