"""Where a frame's delay goes: capture to render split into the stages a frame passes through
(`docs/metrics.md`, "Frame delay by stage").

A frame's row in `frames.parquet` dates each boundary: captured (`capture_us`), out of the encoder
into the sender's queue (`encoded_us`), its original packets out of the sender (`last_sent_us` for
the last of them), the last original to arrive arrived (`last_arrival_us`), every packet held
(`complete_us`), out of the jitter buffer into the decoder (`decode_us`), rendered (`render_us`).
The stages are the differences of consecutive boundaries, so a rendered frame's stages add up to
its frame delay exactly:

- `encode`: captured to encoded;
- `send_queue`: encoded to its last original packet sent (the wait behind earlier data in the
  sender's queue, and the pacer spreading the frame out);
- `network`: from then to the arrival of the last of its originals to arrive (0 if none did);
- `repair`: from then to complete, the wait for retransmissions or FEC to rebuild lost packets
  (0 when none was lost);
- `jitter_buffer`: complete to decoding starts (the jitter buffer holding it to its render time,
  or the frame waiting for the one before it);
- `decode`: decoding starts to rendered.

A stage whose boundaries a table lacks (a table written before they were recorded, or a producer
that cannot see them) is null. A browser run's frames are inside SRTP: its stages are means from
the browsers' own counters (`counted_stages`), and those the counters do not give are null.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

__all__ = [
    "STAGES",
    "STAGE_COLUMNS",
    "Stage",
    "stage_expressions",
    "stage_key",
    "stage_p95_key",
    "with_packet_dates",
]


@dataclass(frozen=True)
class Stage:
    """One stage of a frame's delay: its name (the summary's `stage_<name>_ms`), its title for
    people, and the boundaries it runs between (columns of `frames.parquet`)."""

    name: str
    title: str
    start: str
    end: str


STAGES: tuple[Stage, ...] = (
    Stage("encode", "encoder", "capture_us", "encoded_us"),
    Stage("send_queue", "sender queue and pacer", "encoded_us", "last_sent_us"),
    Stage("network", "network", "last_sent_us", "_network_end_us"),
    Stage("repair", "retransmission and FEC wait", "_network_end_us", "complete_us"),
    Stage("jitter_buffer", "jitter buffer", "complete_us", "decode_us"),
    Stage("decode", "decoder", "decode_us", "render_us"),
)
"""The stages in the order a frame passes them."""

STAGE_COLUMNS = ("encoded_us", "last_sent_us", "last_arrival_us", "complete_us", "decode_us")
"""The frames columns the stages read beyond `capture_us` and `render_us`."""


def stage_key(stage: Stage | str) -> str:
    """The summary key of a stage's mean: `stage_send_queue_ms`."""
    return f"stage_{stage if isinstance(stage, str) else stage.name}_ms"


def stage_p95_key(stage: Stage | str) -> str:
    """The summary key of a stage's 95th percentile: `stage_send_queue_p95_ms`."""
    return f"stage_{stage if isinstance(stage, str) else stage.name}_p95_ms"


def stage_expressions(columns: list[str] | tuple[str, ...]) -> list[pl.Expr]:
    """One expression per stage (named `stage.name`, in ms, Float64) over a frames table with
    `columns`; a stage whose boundaries the table lacks is a null literal."""
    present = set(columns)
    # The network stage ends when the last original to arrive arrived, or at once when none did
    # (the frame was rebuilt from retransmissions alone: their transit is the repair's).
    ends: dict[str, pl.Expr] = {c: pl.col(c) for c in present}
    if {"last_sent_us", "last_arrival_us"} <= present:
        ends["_network_end_us"] = pl.max_horizontal("last_sent_us", "last_arrival_us")
    out = []
    for s in STAGES:
        if s.start in ends and s.end in ends:
            out.append(((ends[s.end] - ends[s.start]).cast(pl.Float64) / 1000.0).alias(s.name))
        else:
            out.append(pl.lit(None, pl.Float64).alias(s.name))
    return out


def with_packet_dates(frames: pl.DataFrame, packets: pl.DataFrame) -> pl.DataFrame:
    """`frames` with `first_sent_us`, `last_sent_us` and `last_arrival_us` dated from the original
    video packets of each frame in `packets` (rows of kind `media` with a `frame`), as the
    simulator dates them while it runs: an arrival counts only up to the frame's completion (an
    original overtaken by its retransmission does not reopen the frame). For a producer that
    records packets and frames apart (emulation, GStreamer)."""
    originals = packets.filter((pl.col("kind") == "media") & pl.col("frame").is_not_null()).select(
        "flow", "frame", "event", "t_us"
    )
    sent = (
        originals.filter(pl.col("event") == "sent")
        .group_by("flow", "frame")
        .agg(first_sent_us=pl.col("t_us").min(), last_sent_us=pl.col("t_us").max())
    )
    keys = frames.select("flow", "frame", "complete_us")
    arrived = (
        originals.filter(pl.col("event") == "received")
        .join(keys, on=["flow", "frame"], how="inner")
        .filter(pl.col("complete_us").is_null() | (pl.col("t_us") <= pl.col("complete_us")))
        .group_by("flow", "frame")
        .agg(last_arrival_us=pl.col("t_us").max())
    )
    order = frames.columns
    dated = frames.drop(
        [c for c in ("first_sent_us", "last_sent_us", "last_arrival_us") if c in frames.columns]
    )
    out = dated.join(sent, on=["flow", "frame"], how="left", maintain_order="left").join(
        arrived, on=["flow", "frame"], how="left", maintain_order="left"
    )
    return out.select([c for c in order if c in out.columns] + [c for c in out.columns if c not in order])
