"""The trace tables of a browser run (docs/traces.md, docs/browser.md "What a browser run
records"), from the relay's packet log, the pages' `getStats()` samples and the connections'
session descriptions. The tables have the simulator's schemas and flow ids (`meta.flows`), so every
metric, the scorecard and the report apply as they are; what cannot be seen from outside the
browsers is said in `meta.unobserved`.

**Packets.** Every datagram between the ends of a call's peer connection (the selected candidate
pair's addresses and ports) reached the relay with its first bytes logged. RFC 7983 tells them
apart by the first byte: STUN and DTLS are the connection's own (counted, not traced), RTP and
RTCP (RFC 5761: RTCP where RTP's marker and payload type would be 192-223) are the call's. SRTP
(RFC 3711 §3.1) encrypts payloads only, so each RTP header is read in the clear: the payload type
(mapped through the connection's SDP to the video or audio flow and to `media`, `rtx`, `padding`
or `fec`), the sequence number, the padding bit, and the transport-wide sequence number from the
header extension the SDP names (draft-holmer-rmcat-transport-wide-cc-extensions-01, RFC 8285
one- or two-byte elements). SRTCP (RFC 3711 §3.4) leaves the first RTCP packet's header and
sender SSRC in the clear: its packet type and format say what the packet is.

The header's RTP timestamp names the frame a video packet carries, and a retransmission keeps
its original's (RFC 4588 §4): video `media` and `rtx` rows are numbered by frame (`frame`), so a
frame's size and packets are seen as they left the sender. What stays hidden: which original
packet an RTX packet repairs (its OSN is in the encrypted payload), whether a RED packet carries
video or ULPFEC (RFC 2198: the block header is payload; ULPFEC's bytes count in the frame they
follow), which frames are key frames, and when a frame was captured, completed and played at the
receiver. `seq` is therefore null on `rtx` rows, RED packets are `media`, and the `frames` table
is empty; the receiver's own counts of frames, freezes and resolution come from `getStats()` (the
`stats` table), which the metrics read where no frames were recorded (docs/metrics.md, "Browser
runs").

**Stats.** One row per sample (every 500 ms), media flow and side: the sender's `outbound-rtp`,
its `remote-inbound-rtp` and its selected candidate pair's `availableOutgoingBitrate`; the
receiver's `inbound-rtp`. Counters are cumulative as the W3C webrtc-stats names them, converted to
bits per second, seconds and snake case.

**Controller.** GoogCC's target per sample, with the video encoder's `targetBitrate` beside it:
Chromium's `availableOutgoingBitrate`; Firefox's, whose `getStats()` has no such member, from its
parent process (libwebrtc's `send_bandwidth_bps`, as about:webrtc shows it), in the same column
of the `stats` table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import polars as pl

from rtcbench import tables
from rtcbench.browser.chromium import AudioSettings, Usage, VideoSettings
from rtcbench.browser.sdp import describe
from rtcbench.emulation.trace import FRAMES_SCHEMA, cross_sent
from rtcbench.tables import Tables
from rtcbench.testbed.cross import CrossFlow
from rtcbench.testbed.relay_log import TraceError, background_flows, packet_events, relay_links, relay_packets

__all__ = ["UNOBSERVED", "Connection", "Stream", "browser_tables", "parse_head", "turn_allocations"]

UNOBSERVED = ("frames", "frame_delay", "residual_loss", "fec_overhead")
"""What a browser run cannot measure from outside the browsers (`meta.unobserved`): the frames
(only a receiving browser's counts of them), their delay, the loss left after repair, FEC inside
RED."""

UDP = 17
_FEEDBACK_KINDS = {(201, None): "rr", (205, 15): "twcc", (205, 1): "nack", (205, 11): "ccfb", (206, 1): "pli",
                   (206, 4): "fir", (206, 15): "remb"}  # fmt: skip
"""RTCP packet type (RFC 3550 §12.1, RFC 4585 §6.1) and format → feedback kind (docs/traces.md)."""
_SRTP_TAG = {
    "AEAD_AES_128_GCM": 16,
    "AEAD_AES_256_GCM": 16,
    "AES_CM_128_HMAC_SHA1_80": 10,
    "AES_CM_128_HMAC_SHA1_32": 4,
    "SRTP_AEAD_AES_128_GCM": 16,
    "SRTP_AEAD_AES_256_GCM": 16,
    "SRTP_AES128_CM_HMAC_SHA1_80": 10,
    "SRTP_AES128_CM_HMAC_SHA1_32": 4,
}
"""Bytes of SRTP's authentication tag after an RTP payload, by the cipher DTLS chose (RFC 3711
§4.2, RFC 7714 §7), as Chromium names it (libsrtp's names) and as Firefox does (the IANA
registry of DTLS-SRTP protection profiles, RFC 5764 §4.1.2)."""
_DEFAULT_TAG = 10
_VIDEO_CODECS = ("VP8", "VP9", "H264", "H265", "AV1")


@dataclass(frozen=True)
class Stream:
    """One scenario call as a browser run sends it: from `src`'s page to `dst`'s, over a peer
    connection; `flows` maps the call's flow suffixes (`video`, `audio`, `rtcp-rx`, `rtcp-tx`) to
    their ids in `meta.flows`."""

    index: int
    name: str
    src: str
    dst: str
    video: VideoSettings | None
    audio: AudioSettings | None
    start_s: float
    stop_s: float
    pauses: list[tuple[float, float, bool]]
    flows: dict[str, int]


@dataclass
class Connection:
    """One peer connection between two pages, known to both by `key`; it carries its `streams`
    (one call one way, or two, one each way)."""

    key: str
    offerer: str
    answerer: str
    streams: list[Stream] = field(default_factory=list)
    via: str | None = None
    """The node of a TURN server every packet goes through (relay-only ICE at both ends)."""
    sfu: str | None = None
    """The node of the SFU (Janus) at one end: the connection has a page at its other end only."""

    @property
    def start_s(self) -> float:
        return min(s.start_s for s in self.streams)

    @property
    def stop_s(self) -> float:
        return max(s.stop_s for s in self.streams)

    def sent_by(self, node: str) -> Stream | None:
        return next((s for s in self.streams if s.src == node), None)

    def received_by(self, node: str) -> Stream | None:
        return next((s for s in self.streams if s.dst == node), None)


class Head(NamedTuple):
    """What the first bytes of a UDP payload say (`parse_head`)."""

    what: str
    """`rtp`, `rtcp`, `stun`, `dtls` or `other` (RFC 7983 §7)."""
    pt: int | None = None
    """RTP payload type, or RTCP packet type."""
    fmt: int | None = None
    """RTCP feedback format (RFC 4585 §6.1), or None."""
    padding: bool = False
    seq: int | None = None
    ssrc: int | None = None
    header_len: int | None = None
    """RTP header bytes with CSRCs and extensions."""
    transport_seq: int | None = None
    relayed_len: int | None = None
    """The length of the packet a TURN message carries (ChannelData's length, RFC 8656 §12.4, or
    a Send or Data indication's DATA attribute's, §11): the UDP payload less TURN's bytes. None
    for a packet not in TURN."""
    timestamp: int | None = None
    """RTP timestamp (RFC 3550 §5.1): the sampling instant of the frame the packet carries."""
    marker: bool = False
    """RTP marker bit: for video, the last packet of a frame (RFC 7741 §4.1 for VP8)."""


def parse_head(head: bytes, transport_cc: int | None) -> Head:
    """Reads the first bytes of a UDP payload of a WebRTC session: RTP (RFC 3550 §5.1, with its
    RFC 8285 header extensions, taking the transport-wide sequence number from extension id
    `transport_cc`), RTCP (RFC 3550 §6.4; RFC 4585 FMT in the first byte), either of them in a
    TURN message (RFC 8656: ChannelData, §12.4, channels 0x4000-0x4FFF and a 4-byte header, as
    Chromium relays; or a Send or Data indication, §11, as Firefox does), or what else RFC 7983
    lets through one 5-tuple. Bytes cut off by the log leave the fields they would hold None."""
    if head and 64 <= head[0] <= 79:
        inner = parse_head(head[4:], transport_cc)
        return inner._replace(relayed_len=int.from_bytes(head[2:4]) if len(head) >= 4 else None)
    if (found := _indication_data(head)) is not None:
        at, length = found
        return parse_head(head[at:], transport_cc)._replace(relayed_len=length)
    if not head:
        return Head("other")
    b0 = head[0]
    if b0 <= 3:
        return Head("stun")
    if 20 <= b0 <= 63:
        return Head("dtls")
    if not 128 <= b0 <= 191 or len(head) < 2:
        return Head("other")
    second = head[1]
    if 192 <= second <= 223:
        ssrc = int.from_bytes(head[4:8]) if len(head) >= 8 else None
        fmt = b0 & 0x1F if second in (205, 206) else None
        return Head("rtcp", pt=second, fmt=fmt, ssrc=ssrc)
    if len(head) < 12:
        return Head("rtp", pt=second & 0x7F, padding=bool(b0 & 0x20))
    seq = int.from_bytes(head[2:4])
    timestamp = int.from_bytes(head[4:8])
    ssrc = int.from_bytes(head[8:12])
    length = 12 + 4 * (b0 & 0x0F)
    transport_seq = None
    if b0 & 0x10 and len(head) >= length + 4:
        profile = int.from_bytes(head[length : length + 2])
        words = int.from_bytes(head[length + 2 : length + 4])
        start, end = length + 4, length + 4 + 4 * words
        transport_seq = _extension(head[start : min(end, len(head))], profile, transport_cc)
        length = end
    elif b0 & 0x10:
        length = -1  # the extension header itself was cut off
    return Head(
        "rtp",
        pt=second & 0x7F,
        padding=bool(b0 & 0x20),
        seq=seq,
        ssrc=ssrc,
        header_len=length if length > 0 else None,
        transport_seq=transport_seq,
        timestamp=timestamp,
        marker=bool(second & 0x80),
    )


_SEND_INDICATION, _DATA_INDICATION = 0x0016, 0x0017
"""STUN message types of TURN's Send and Data indications (RFC 8656 §18.1: methods 0x006 and
0x007, class indication)."""
_DATA = 0x0013
"""TURN's DATA attribute (RFC 8656 §18: the application data an indication carries)."""


def _indication_data(head: bytes) -> tuple[int, int] | None:
    """Where a Send or Data indication's DATA attribute's value starts in `head`, and its length;
    None for anything else (a STUN message has the magic cookie at bytes 4-7, RFC 8489 §5), or if
    the attribute was cut off by the log."""
    if len(head) < 20 or int.from_bytes(head[:2]) not in (_SEND_INDICATION, _DATA_INDICATION):
        return None
    if int.from_bytes(head[4:8]) != STUN_MAGIC:
        return None
    k = 20
    while k + 4 <= len(head):
        kind, length = int.from_bytes(head[k : k + 2]), int.from_bytes(head[k + 2 : k + 4])
        if kind == _DATA:
            return k + 4, length
        k += 4 + (length + 3) // 4 * 4  # attributes are padded to 4 bytes (RFC 8489 §14)
    return None


def _extension(data: bytes, profile: int, wanted: int | None) -> int | None:
    """The 16-bit value of extension element `wanted` in an RFC 8285 block: one-byte elements
    (profile 0xBEDE, §4.2) or two-byte ones (0x100x, §4.3); None if absent or cut off."""
    if wanted is None:
        return None
    one_byte = profile == 0xBEDE
    if not one_byte and profile & 0xFFF0 != 0x1000:
        return None
    k = 0
    while k < len(data):
        if data[k] == 0:  # padding
            k += 1
            continue
        if one_byte:
            ident, size, k = data[k] >> 4, (data[k] & 0x0F) + 1, k + 1
            if ident == 15:
                return None
        else:
            if k + 1 >= len(data):
                return None
            ident, size, k = data[k], data[k + 1], k + 2
        if ident == wanted:
            return int.from_bytes(data[k : k + 2]) if size >= 2 and k + 2 <= len(data) else None
        k += size
    return None


STUN_MAGIC = 0x2112A442
"""RFC 8489 §5's magic cookie, which XOR-ed addresses are XOR-ed with."""
_ALLOCATE_SUCCESS = 0x0103
_XOR_RELAYED_ADDRESS = 0x0016


Address = tuple[str, int]


def turn_allocations(relay: pl.DataFrame) -> dict[Address, tuple[Address, Address]]:
    """Where each TURN allocation's relayed address (RFC 8656) is served from: relayed (address,
    port) → (the client's socket, the server's socket), read off the Allocate success responses
    (RFC 8656 §7.3: XOR-RELAYED-ADDRESS, RFC 8489 §14.2) the relay saw go to the clients. A page's
    selected relay candidate is its relayed address; the socket it sends from is not in its
    statistics (Chromium hides a relay candidate's related address)."""
    out: dict[Address, tuple[Address, Address]] = {}
    responses = relay.filter(
        (pl.col("event") == "in") & (pl.col("protocol") == UDP) & pl.col("head").str.starts_with("0103")
    )
    for src, sport, dst, dport, head in responses.select(
        "src", "src_port", "dst", "dst_port", "head"
    ).iter_rows():
        data = bytes.fromhex(head)
        k = 20
        while k + 4 <= len(data):
            kind, length = int.from_bytes(data[k : k + 2]), int.from_bytes(data[k + 2 : k + 4])
            value = data[k + 4 : k + 4 + length]
            if kind == _XOR_RELAYED_ADDRESS and len(value) >= 8 and value[1] == 1:  # IPv4
                port = int.from_bytes(value[2:4]) ^ (STUN_MAGIC >> 16)
                ip = int.from_bytes(value[4:8]) ^ STUN_MAGIC
                address = ".".join(str((ip >> shift) & 0xFF) for shift in (24, 16, 8, 0))
                out[(address, port)] = ((dst, dport), (src, sport))
                break
            k += 4 + (length + 3) // 4 * 4
    return out


Route = tuple[str, int, str, int]
"""A datagram's (source address, port, destination address, port)."""


def _routes(
    c: Connection,
    described: Mapping[str, Mapping[str, Any]],
    allocations: Mapping[Address, tuple[Address, Address]],
) -> list[tuple[Route, str, int]]:
    """The datagrams of connection `c`: (route, the node that sent them, leg). A direct
    connection has leg 0 both ways, between its selected candidate pair's ends (host candidates:
    the nodes' own addresses). A relayed one goes from a client's socket to the TURN server
    (leg 1) and from the server to the other client (leg 2), each way."""
    pairs = {n: (described.get(c.key, {}).get(n) or {}).get("pair") for n in (c.offerer, c.answerer)}
    if c.via is None:
        # Either end's view of the pair: an SFU's end has no page.
        node = c.offerer if pairs[c.offerer] else c.answerer
        pair = pairs[node]
        if not pair:
            return []
        other = c.answerer if node == c.offerer else c.offerer
        a = (str(pair["local"]["address"]), int(pair["local"]["port"]))
        b = (str(pair["remote"]["address"]), int(pair["remote"]["port"]))
        return [((*a, *b), node, 0), ((*b, *a), other, 0)]
    ends = {}
    for node, p in pairs.items():
        if not p or (str(p["local"]["address"]), int(p["local"]["port"])) not in allocations:
            return []
        ends[node] = allocations[(str(p["local"]["address"]), int(p["local"]["port"]))]
    (a, server_a), (b, server_b) = ends[c.offerer], ends[c.answerer]
    return [
        ((*a, *server_a), c.offerer, 1),
        ((*server_b, *b), c.offerer, 2),
        ((*b, *server_b), c.answerer, 1),
        ((*server_a, *a), c.answerer, 2),
    ]


@dataclass(frozen=True)
class _PayloadTypes:
    """What each payload type of a connection carries: the media kind (`video`, `audio`) and
    the packet kind (`media`, `rtx`, `fec`), from its SDP."""

    kinds: dict[int, tuple[str, str]]
    transport_cc: int | None

    @classmethod
    def of(cls, c: Connection, described: Mapping[str, Mapping[str, Any]]) -> _PayloadTypes:
        views = described.get(c.key, {})
        ends = views.get(c.offerer) or views.get(c.answerer) or {}
        kinds: dict[int, tuple[str, str]] = {}
        transport_cc: int | None = None
        for sdp in (ends.get("local"), ends.get("remote")):
            if not sdp:
                continue
            d = describe(sdp)
            transport_cc = transport_cc if transport_cc is not None else d.transport_cc_id()
            for section in d.sections:
                if section.kind not in ("video", "audio"):
                    continue
                for pt, name in section.codecs.items():
                    if name == "RTX":
                        kinds[pt] = (section.kind, "rtx")
                    elif name in ("ULPFEC", "FLEXFEC-03", "FLEXFEC"):
                        kinds[pt] = (section.kind, "fec")
                    else:
                        kinds[pt] = (section.kind, "media")
        return cls(kinds, transport_cc)


def _srtp_tag(stats: Mapping[str, list[dict[str, Any]]], c: Connection) -> int:
    """The SRTP tag length of the connection's cipher (its `transport` report at either end)."""
    for sample in (*stats.get(c.offerer, []), *stats.get(c.answerer, [])):
        if sample["remote"] != c.key:
            continue
        for r in sample["stats"]:
            if r.get("type") == "transport" and r.get("srtpCipher"):
                return _SRTP_TAG.get(str(r["srtpCipher"]), _DEFAULT_TAG)
    return _DEFAULT_TAG


_SENT_SCHEMA = {
    "id": pl.Int64,
    "t_us": pl.Int64,
    "flow": pl.Int32,
    "kind": pl.String,
    "size": pl.Int32,
    "payload": pl.Int32,
    "seq": pl.Int32,
    "frame": pl.Int64,
    "ecn_in": pl.Int32,
    "sent_us": pl.Int64,
    "transport_seq": pl.Int32,
    "rtcp_kind": pl.String,
}


def _classify(
    relay: pl.DataFrame,
    conns: Sequence[Connection],
    described: Mapping[str, Mapping[str, Any]],
    stats: Mapping[str, list[dict[str, Any]]],
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, int]]:
    """One row per datagram of a call as it left its sender (`_SENT_SCHEMA`), the relay's log
    with a relayed datagram's second leg made its first's (`_relayed`), and counts of what else
    crossed the connections (`observed`)."""
    allocations = turn_allocations(relay)
    by_route: dict[Route, tuple[Connection, str, int, _PayloadTypes, int]] = {}
    for c in conns:
        types, tag = _PayloadTypes.of(c, described), _srtp_tag(stats, c)
        for route, node, leg in _routes(c, described, allocations):
            by_route[route] = (c, node, leg, types, tag)
    arrivals = relay.filter((pl.col("event") == "in") & (pl.col("protocol") == UDP))
    rows: list[dict[str, Any]] = []
    second: list[tuple[int, str, str, str, int | None, int | None, int | None]] = []
    observed = {"control_packets": 0, "control_bytes": 0, "unknown_packets": 0}
    columns = ("id", "t_us", "size", "ecn", "src", "src_port", "dst", "dst_port", "payload", "head")
    for ident, t_us, size, ecn, src, sport, dst, dport, udp_len, head in arrivals.select(columns).iter_rows():
        found = by_route.get((src, sport, dst, dport))
        if found is None:
            continue
        c, node, leg, types, tag = found
        h = parse_head(bytes.fromhex(head or ""), types.transport_cc)
        if leg == 2:
            if h.what in ("rtp", "rtcp"):
                second.append((ident, c.key, node, h.what, h.ssrc, h.seq, h.pt))
            continue
        if h.what in ("stun", "dtls"):
            observed["control_packets"] += 1
            observed["control_bytes"] += size
            continue
        row = _packet_row(h, c, node, types, tag, udp_len)
        if row is None:
            observed["unknown_packets"] += 1
            continue
        rows.append({"id": ident, "t_us": t_us, "size": size, "ecn_in": ecn or 0, "sent_us": t_us, **row})
        if leg == 1:
            rows[-1]["_match"] = (c.key, node, h.what, h.ssrc, h.seq, h.pt)
        if h.timestamp is not None and node != c.sfu:
            rows[-1]["_timestamp"] = h.timestamp
    _number_frames(rows)
    private = ("_match", "_timestamp", "_media")
    sent = pl.DataFrame([{k: v for k, v in r.items() if k not in private} for r in rows], schema=_SENT_SCHEMA)
    first = [(r["id"], *r["_match"]) for r in rows if "_match" in r]
    return sent, _relayed(relay, first, second), observed


def _number_frames(rows: Sequence[dict[str, Any]]) -> None:
    """Sets `frame` on the video packets of `rows` (in the order they left their senders): the
    frames of a flow are numbered 0, 1, 2, ... in the order their RTP timestamps first appear on
    a media packet, and a retransmission carries its original's timestamp (RFC 4588 §4), so it
    gets its frame's number. A packet whose timestamp no media packet had keeps null. An SFU's
    forward leg keeps null: its frames are the publisher's, numbered on the publisher's leg."""
    numbers: dict[int, dict[int, int]] = {}
    for r in rows:
        if r.get("_media") != "video" or "_timestamp" not in r:
            continue
        frames = numbers.setdefault(r["flow"], {})
        if r["kind"] == "media":
            r["frame"] = frames.setdefault(r["_timestamp"], len(frames))
        elif r["kind"] == "rtx":
            r["frame"] = frames.get(r["_timestamp"])


_MATCH_SCHEMA = {
    "id": pl.Int64,
    "conn": pl.String,
    "node": pl.String,
    "what": pl.String,
    "ssrc": pl.Int64,
    "seq": pl.Int32,
    "pt": pl.Int32,
}


def _relayed(
    relay: pl.DataFrame,
    first: Sequence[tuple[int, str, str, str, int | None, int | None, int | None]],
    second: Sequence[tuple[int, str, str, str, int | None, int | None, int | None]],
) -> pl.DataFrame:
    """The relay's log with each datagram relayed by a TURN server traced as one packet, as the
    simulator traces a packet over a path of two links: its first leg's arrival is its `sent`
    event, a drop on either leg its `dropped` event, its second leg's departure its `received`
    event; the first leg's delivery to the server and the second leg's arrival there are
    dropped. A second leg is matched to its first by the RTP stream and sequence number (the
    RTCP packet type for RTCP) and their order, among the first legs that were not dropped: a
    TURN server relays in order."""
    if not second:
        return relay
    key = ["conn", "node", "what", "ssrc", "seq", "pt"]
    dropped = relay.filter(pl.col("event") == "drop").get_column("id")
    legs1 = pl.DataFrame(list(first), schema=_MATCH_SCHEMA, orient="row")
    legs1 = legs1.filter(~pl.col("id").is_in(dropped))
    legs2 = pl.DataFrame(list(second), schema=_MATCH_SCHEMA, orient="row")
    legs1 = legs1.with_columns(n=pl.int_range(pl.len()).over(key))
    legs2 = legs2.with_columns(n=pl.int_range(pl.len()).over(key)).rename({"id": "id2"})
    pairs = legs2.join(legs1, on=[*key, "n"], how="inner", nulls_equal=True).select("id2", "id")
    first_ids = legs1.get_column("id")
    second_ids = legs2.get_column("id2")
    kept = relay.filter(
        ~((pl.col("event") == "out") & pl.col("id").is_in(first_ids))
        & ~((pl.col("event") == "in") & pl.col("id").is_in(second_ids))
    )
    remap = dict(pairs.iter_rows())
    return kept.with_columns(
        id=pl.when(pl.col("event").is_in(["out", "drop"]) & pl.col("id").is_in(list(remap)))
        .then(pl.col("id").replace_strict(remap, default=None, return_dtype=pl.Int64))
        .otherwise(pl.col("id"))
    ).filter(
        ~(
            pl.col("event").is_in(["out", "drop"])
            & pl.col("id").is_in(second_ids)
            & ~pl.col("id").is_in(list(remap))
        )
    )


def _packet_row(
    h: Head, c: Connection, node: str, types: _PayloadTypes, tag: int, udp_len: int | None
) -> dict[str, Any] | None:
    """Flow, kind, payload and sequence numbers of one datagram sent by `node` over `c`."""
    sent, received = c.sent_by(node), c.received_by(node)
    empty = {"seq": None, "frame": None, "transport_seq": None, "rtcp_kind": None, "payload": 0}
    if h.what == "rtcp":
        kind = _FEEDBACK_KINDS.get((h.pt or 0, h.fmt)) or _FEEDBACK_KINDS.get((h.pt or 0, None))
        # A sender report is its sender's (rtcp-tx); anything else is feedback on what `node`
        # receives (rtcp-rx), or, from a node that only sends, its own.
        if h.pt == 200 and sent is not None:
            return {**empty, "flow": sent.flows["rtcp-tx"], "kind": "rtcp"}
        if received is not None:
            return {**empty, "flow": received.flows["rtcp-rx"], "kind": "rtcp", "rtcp_kind": kind}
        if sent is not None:
            return {**empty, "flow": sent.flows["rtcp-tx"], "kind": "rtcp"}
        return None
    if h.what != "rtp" or sent is None or h.pt not in types.kinds:
        return None
    media, kind = types.kinds[h.pt]
    if media not in sent.flows:
        return None
    header = h.header_len if h.header_len is not None else 12
    body = max(0, (h.relayed_len if h.relayed_len is not None else udp_len or 0) - header - tag)
    if kind == "rtx" and h.padding:
        kind, payload, seq = "padding", 0, None
    elif kind == "rtx":
        payload, seq = max(0, body - 2), None  # the original sequence number (RFC 4588 §4) is payload
    elif kind == "fec":
        payload, seq = 0, h.seq
    else:
        payload, seq = body, h.seq
    return {**empty, "flow": sent.flows[media], "kind": kind, "payload": payload, "seq": seq,
            "transport_seq": h.transport_seq, "_media": media}  # fmt: skip


# (column, report type, W3C field, scale, dtype): what the `stats` table keeps of each side.
_SENDER = (
    ("bytes_sent", "outbound-rtp", "bytesSent", 1, pl.Int64),
    ("header_bytes_sent", "outbound-rtp", "headerBytesSent", 1, pl.Int64),
    ("packets_sent", "outbound-rtp", "packetsSent", 1, pl.Int64),
    ("retransmitted_bytes_sent", "outbound-rtp", "retransmittedBytesSent", 1, pl.Int64),
    ("retransmitted_packets_sent", "outbound-rtp", "retransmittedPacketsSent", 1, pl.Int64),
    ("target_bitrate_bps", "outbound-rtp", "targetBitrate", 1, pl.Int64),
    ("frames_encoded", "outbound-rtp", "framesEncoded", 1, pl.Int64),
    ("key_frames_encoded", "outbound-rtp", "keyFramesEncoded", 1, pl.Int64),
    ("frame_width", "outbound-rtp", "frameWidth", 1, pl.Int32),
    ("frame_height", "outbound-rtp", "frameHeight", 1, pl.Int32),
    ("frames_per_second", "outbound-rtp", "framesPerSecond", 1, pl.Float64),
    ("quality_limitation_reason", "outbound-rtp", "qualityLimitationReason", None, pl.String),
    ("encoder_implementation", "outbound-rtp", "encoderImplementation", None, pl.String),
    ("nack_count", "outbound-rtp", "nackCount", 1, pl.Int64),
    ("pli_count", "outbound-rtp", "pliCount", 1, pl.Int64),
    ("fir_count", "outbound-rtp", "firCount", 1, pl.Int64),
    ("total_packet_send_delay_s", "outbound-rtp", "totalPacketSendDelay", 1, pl.Float64),
    ("round_trip_time_s", "remote-inbound-rtp", "roundTripTime", 1, pl.Float64),
    ("total_round_trip_time_s", "remote-inbound-rtp", "totalRoundTripTime", 1, pl.Float64),
    ("round_trip_time_measurements", "remote-inbound-rtp", "roundTripTimeMeasurements", 1, pl.Int64),
    ("remote_packets_lost", "remote-inbound-rtp", "packetsLost", 1, pl.Int64),
    ("remote_fraction_lost", "remote-inbound-rtp", "fractionLost", 1, pl.Float64),
    ("remote_jitter_s", "remote-inbound-rtp", "jitter", 1, pl.Float64),
    ("available_outgoing_bitrate_bps", "candidate-pair", "availableOutgoingBitrate", 1, pl.Int64),
    # ECN as Chromium counts it (its L4S mode; W3C webrtc-stats extensions of Chromium 156).
    ("packets_sent_with_ect1", "outbound-rtp", "packetsSentWithEct1", 1, pl.Int64),
    ("remote_packets_received_with_ect1", "remote-inbound-rtp", "packetsReceivedWithEct1", 1, pl.Int64),
    ("remote_packets_received_with_ce", "remote-inbound-rtp", "packetsReceivedWithCe", 1, pl.Int64),
    ("remote_packets_bleached_ect1", "remote-inbound-rtp", "packetsWithBleachedEct1Marking", 1, pl.Int64),
    ("ccfb_messages_received", "transport", "ccfbMessagesReceived", 1, pl.Int64),
)
_RECEIVER = (
    ("bytes_received", "inbound-rtp", "bytesReceived", 1, pl.Int64),
    ("header_bytes_received", "inbound-rtp", "headerBytesReceived", 1, pl.Int64),
    ("packets_received", "inbound-rtp", "packetsReceived", 1, pl.Int64),
    ("packets_lost", "inbound-rtp", "packetsLost", 1, pl.Int64),
    ("jitter_s", "inbound-rtp", "jitter", 1, pl.Float64),
    ("frames_received", "inbound-rtp", "framesReceived", 1, pl.Int64),
    ("frames_decoded", "inbound-rtp", "framesDecoded", 1, pl.Int64),
    ("decoder_implementation", "inbound-rtp", "decoderImplementation", None, pl.String),
    ("frames_dropped", "inbound-rtp", "framesDropped", 1, pl.Int64),
    ("key_frames_decoded", "inbound-rtp", "keyFramesDecoded", 1, pl.Int64),
    ("frame_width", "inbound-rtp", "frameWidth", 1, pl.Int32),
    ("frame_height", "inbound-rtp", "frameHeight", 1, pl.Int32),
    ("frames_per_second", "inbound-rtp", "framesPerSecond", 1, pl.Float64),
    ("freeze_count", "inbound-rtp", "freezeCount", 1, pl.Int64),
    ("total_freezes_duration_s", "inbound-rtp", "totalFreezesDuration", 1, pl.Float64),
    ("pause_count", "inbound-rtp", "pauseCount", 1, pl.Int64),
    ("total_pauses_duration_s", "inbound-rtp", "totalPausesDuration", 1, pl.Float64),
    ("nack_count", "inbound-rtp", "nackCount", 1, pl.Int64),
    ("pli_count", "inbound-rtp", "pliCount", 1, pl.Int64),
    ("fir_count", "inbound-rtp", "firCount", 1, pl.Int64),
    ("jitter_buffer_delay_s", "inbound-rtp", "jitterBufferDelay", 1, pl.Float64),
    ("jitter_buffer_emitted_count", "inbound-rtp", "jitterBufferEmittedCount", 1, pl.Int64),
    ("retransmitted_packets_received", "inbound-rtp", "retransmittedPacketsReceived", 1, pl.Int64),
    ("retransmitted_bytes_received", "inbound-rtp", "retransmittedBytesReceived", 1, pl.Int64),
    ("fec_packets_received", "inbound-rtp", "fecPacketsReceived", 1, pl.Int64),
    ("fec_bytes_received", "inbound-rtp", "fecBytesReceived", 1, pl.Int64),
    ("fec_packets_discarded", "inbound-rtp", "fecPacketsDiscarded", 1, pl.Int64),
    ("total_processing_delay_s", "inbound-rtp", "totalProcessingDelay", 1, pl.Float64),
    ("total_samples_received", "inbound-rtp", "totalSamplesReceived", 1, pl.Int64),
    ("concealed_samples", "inbound-rtp", "concealedSamples", 1, pl.Int64),
    ("packets_received_with_ect1", "inbound-rtp", "packetsReceivedWithEct1", 1, pl.Int64),
    ("packets_received_with_ce", "inbound-rtp", "packetsReceivedWithCe", 1, pl.Int64),
)
STATS_SCHEMA: dict[str, Any] = {
    "t_us": pl.Int64,
    "flow": pl.Int32,
    "side": pl.String,
    **{name: dtype for name, _, _, _, dtype in (*_SENDER, *_RECEIVER)},
}
"""The `stats` table of a browser run (docs/traces.md): one row per sample, media flow and side
(`sender` or `receiver`); a side's columns are null on the other's rows."""


def _selected_pair(reports: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    by_id = {r.get("id"): r for r in reports}
    for r in reports:
        if r.get("type") == "transport" and r.get("selectedCandidatePairId"):
            return by_id.get(r["selectedCandidatePairId"])
    return None


def _take(
    row: dict[str, Any], spec: Sequence[tuple[str, str, str, Any, Any]], by_type: dict[str, dict[str, Any]]
) -> None:
    for name, kind, field_name, _, _ in spec:
        report = by_type.get(kind)
        if report is not None and report.get(field_name) is not None:
            row[name] = report[field_name]


def _stats(
    conns: Sequence[Connection], stats: Mapping[str, list[dict[str, Any]]], t0_wall: float, end_us: int
) -> pl.DataFrame:
    """The `stats` table (`STATS_SCHEMA`) of the pages' samples."""
    by_key = {c.key: c for c in conns}
    rows: list[dict[str, Any]] = []
    for node, samples in stats.items():
        for sample in samples:
            c = by_key.get(sample["remote"])
            if c is None:
                continue
            t_us = round((float(sample["t"]) / 1000.0 - t0_wall) * 1e6)
            if not 0 <= t_us <= end_us:
                continue
            reports = sample["stats"]
            estimates = sample.get("estimate_bps") or {}
            pair = _selected_pair(reports)
            transport: dict[str, Any] = next((r for r in reports if r.get("type") == "transport"), {})
            remote = {r.get("localId"): r for r in reports if r.get("type") == "remote-inbound-rtp"}
            for r in reports:
                kind = r.get("kind")
                if r.get("type") == "outbound-rtp" and (s := c.sent_by(node)) and kind in s.flows:
                    by_type = {"outbound-rtp": r, "candidate-pair": pair or {}, "transport": transport}
                    if r.get("id") in remote:
                        by_type["remote-inbound-rtp"] = remote[r["id"]]
                    row = {"t_us": t_us, "flow": s.flows[kind], "side": "sender"}
                    _take(row, _SENDER, by_type)
                    if row.get("available_outgoing_bitrate_bps") is None:
                        # Firefox's, from its parent process (`firefox.Peer.take_samples`).
                        row["available_outgoing_bitrate_bps"] = estimates.get(str(r.get("ssrc")))
                    rows.append(row)
                elif r.get("type") == "inbound-rtp" and (s := c.received_by(node)) and kind in s.flows:
                    row = {"t_us": t_us, "flow": s.flows[kind], "side": "receiver"}
                    _take(row, _RECEIVER, {"inbound-rtp": r})
                    rows.append(row)
    frame = pl.DataFrame(rows, schema=STATS_SCHEMA, strict=False)
    return frame.sort("t_us", "flow", "side", maintain_order=True)


def _controller(conns: Sequence[Connection], stats: pl.DataFrame) -> pl.DataFrame:
    """GoogCC's target per sample of each call's sender (`available_outgoing_bitrate_bps` of its
    connection: Chromium's `availableOutgoingBitrate`, Firefox's parent-process estimate), with
    its video encoder's target beside it."""
    call_of = {
        s.flows[k]: s.index for c in conns for s in c.streams for k in ("video", "audio") if k in s.flows
    }
    video = {s.flows["video"] for c in conns for s in c.streams if "video" in s.flows}
    # One row per call and sample: the video flow's where there is one, else the audio's.
    first = {}
    for c in conns:
        for s in c.streams:
            first[s.index] = s.flows.get("video", s.flows.get("audio"))
    sender = stats.filter(
        (pl.col("side") == "sender")
        & pl.col("flow").is_in(list(first.values()))
        & pl.col("available_outgoing_bitrate_bps").is_not_null()
    )
    return sender.select(
        "t_us",
        call=pl.col("flow").replace_strict(call_of, return_dtype=pl.Int32),
        target_bps=pl.col("available_outgoing_bitrate_bps").cast(pl.Int64),
        pacing_bps=pl.lit(None, pl.Int64),
        encoder_target_bps=pl.when(pl.col("flow").is_in(list(video))).then(pl.col("target_bitrate_bps")),
    ).sort("t_us", "call", maintain_order=True)


_FEEDBACK_SCHEMA = tables.dtypes("feedback")


def _feedback(conns: Sequence[Connection], packets: pl.DataFrame, kinds: pl.DataFrame) -> pl.DataFrame:
    """One row per feedback packet a call's sender received (its first RTCP packet's kind: SRTCP
    hides the rest of a compound one), at its arrival; what it reports is encrypted."""
    call_of = {s.flows["rtcp-rx"]: s.index for c in conns for s in c.streams}
    arrived = packets.filter((pl.col("event") == "received") & pl.col("flow").is_in(list(call_of)))
    return (
        arrived.join(kinds, on="packet", how="inner")
        .filter(pl.col("rtcp_kind").is_not_null())
        .select(
            "t_us",
            call=pl.col("flow").replace_strict(call_of, return_dtype=pl.Int32),
            kind="rtcp_kind",
            size="size",
            rtt_us=pl.lit(None, pl.Int64),
            fraction_lost=pl.lit(None, pl.Float64),
            packets_reported=pl.lit(None, pl.Int32),
            ce_reported=pl.lit(None, pl.Int32),
        )
        .cast(_FEEDBACK_SCHEMA)  # type: ignore[arg-type]
        .sort("t_us", "call", maintain_order=True)
    )


USAGE_SCHEMA = {"t_us": pl.Int64, "process": pl.String, "cpu_s": pl.Float64, "pss_bytes": pl.Int64,
                "processes": pl.Int32}  # fmt: skip
"""The `usage` table of a browser run: what each browser (by node) and the relay had used."""


def _usage(usage: Mapping[str, Sequence[Usage]], t0_mono: float, end_us: int) -> pl.DataFrame:
    rows = [
        (round((u.t - t0_mono) * 1e6), name, u.cpu_s, u.pss_bytes, u.processes)
        for name, samples in usage.items()
        for u in samples
    ]
    return (
        pl.DataFrame(rows, schema=USAGE_SCHEMA, orient="row")
        .filter(pl.col("t_us").is_between(0, end_us))
        .sort("t_us", "process", maintain_order=True)
    )


def browser_tables(
    meta: Mapping[str, Any],
    relay_dir: Path,
    conns: Sequence[Connection],
    described: Mapping[str, Mapping[str, Any]],
    stats: Mapping[str, list[dict[str, Any]]],
    usage: Mapping[str, Sequence[Usage]],
    t0_wall: float,
    t0_mono: float,
    cross: Sequence[CrossFlow] = (),
    address: Mapping[str, str] | None = None,
) -> tuple[Tables, dict[str, Any]]:
    """The trace tables of a browser run, and what the run observed beyond them (for its
    summary): `meta` is the simulator's for the same scenario (flows and ids), `relay_dir` holds
    the relay's log, `conns` are the connections as planned, `described` their descriptions and
    selected pairs (per key, per node: `Call.describe`), `stats` the pages' samples per node,
    `usage` the processes' samples, `t0_wall` and `t0_mono` the run's time zero on the wall
    clock (the pages') and `time.monotonic` (the usage samples'); `cross` the cross traffic's flows
    as planned (`testbed.cross.plan`) and `address` each node's host address, to trace them too."""
    end_us = round(float(meta["duration_s"]) * 1e6)
    relay = relay_packets(relay_dir)
    sent, relay, observed = _classify(relay, conns, described, stats)
    if sent.height == 0 and any(described.values()):
        raise TraceError("no packet of any call reached the relay: the browsers' traffic took another path")
    origin = sent.drop("rtcp_kind")
    if cross and address is not None:
        origin = pl.concat([origin, cross_sent(relay, meta, cross, address)], how="diagonal_relaxed")
    packets = packet_events(relay, origin, background_flows(meta), end_us)
    kinds = sent.select(packet="id", rtcp_kind="rtcp_kind").filter(pl.col("rtcp_kind").is_not_null())
    stats_table = _stats(conns, stats, t0_wall, end_us)
    tables = Tables(
        meta={**meta, "unobserved": list(UNOBSERVED)},
        packets=packets,
        frames=pl.DataFrame(schema=FRAMES_SCHEMA),
        controller=_controller(conns, stats_table),
        links=relay_links(relay_dir, end_us),
        feedback=_feedback(conns, packets, kinds),
        stats=stats_table,
        usage=_usage(usage, t0_mono, end_us),
    )
    return tables, observed
