"""Learned bandwidth estimators' observations (docs/learned.md): the 150 numbers per 60 ms decision
that the MMSys 2024 offline-RL bandwidth estimation challenge defined, computed from what a call's
receiver got, by the one builder every user of them shares (`rtcbench_cc::learned::observation`,
through `_core.observations`).

    run = rtcbench.run("rfc8867-5.1", "gcc", 1, "results")[0]
    steps_us, obs = learned.observations(run.tables, call=0)     # obs: float32, (steps, 150)
    learned.feature(obs, "receiving_rate_bps", long=True, i=0)    # one column of it

Any run folder works the same way (simulated, emulated, browser), since it reads the packets
table: a call's received media (video, audio), its probing padding and its repairs
(retransmissions, FEC), by arrival, with their send instants, sizes and RTP sequence numbers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from rtcbench import _core

__all__ = ["FEATURES", "INTERVALS", "OBSERVATION_LEN", "STEP_US", "feature", "feature_index", "observations"]

OBSERVATION_LEN = 150
STEP_US = 60_000
"""The decision interval, and the short monitor interval (60 ms)."""
INTERVALS = 5
"""Monitor intervals of each length (60 ms and 600 ms)."""
FEATURES = (
    "receiving_rate_bps",
    "received_packets",
    "received_bytes",
    "queuing_delay_ms",
    "delay_ms",
    "minimum_seen_delay_ms",
    "delay_ratio",
    "delay_minus_minimum_ms",
    "interarrival_ms",
    "jitter_ms",
    "loss_ratio",
    "lost_per_loss_event",
    "video_share",
    "audio_share",
    "probe_share",
)
"""The 15 features in the challenge's order (`rtcbench_cc::learned::Feature`)."""

_CLASS = {"video": 0, "audio": 1, "probe": 2, "other": 3}
_RTP_SEQ = 1 << 16


def feature_index(name: str, *, long: bool, i: int) -> int:
    """Where feature `name`'s short (`long` false) or long monitor interval `i` (0 the most
    recent) sits in an observation."""
    if name not in FEATURES:
        raise ValueError(f"feature {name!r} is not one of {', '.join(FEATURES)}")
    if not 0 <= i < INTERVALS:
        raise ValueError(f"monitor interval {i} is not 0 to {INTERVALS - 1}")
    return FEATURES.index(name) * 2 * INTERVALS + (INTERVALS if long else 0) + i


def feature(obs: np.ndarray, name: str, *, long: bool = False, i: int = 0) -> np.ndarray:
    """One feature's column of a (steps, 150) array of observations."""
    return obs[:, feature_index(name, long=long, i=i)]


def _unwrapped(seq: pl.Expr) -> pl.Expr:
    """RTP sequence numbers unwrapped within their stream (rows in arrival order): each step to
    the next packet's number taken as the nearest one modulo 2^16."""
    step = (seq.diff().fill_null(0) + _RTP_SEQ // 2) % _RTP_SEQ - _RTP_SEQ // 2
    return seq.first() + step.cum_sum()


def _fec_shares_sequence(received: pl.DataFrame) -> bool:
    """Whether the FEC packets take their sequence numbers from the media's (RED/ULPFEC, which
    the packets table does not tell apart from FlexFEC's own stream): then the media's alone
    show gaps that the FEC packets fill. Read on the raw numbers: where a stream's numbers wrap
    around 2^16 in the run, FEC is taken as sharing them (docs/learned.md, "Not yet")."""

    def gaps(kinds: list[str]) -> int:
        seqs = received.filter(pl.col("kind").is_in(kinds) & pl.col("seq").is_not_null())
        per_flow = seqs.group_by("flow").agg(
            n=pl.col("seq").n_unique(), span=pl.col("seq").max() - pl.col("seq").min() + 1
        )
        return int((per_flow["span"] - per_flow["n"]).sum() or 0)

    return received.filter(pl.col("kind") == "fec").height > 0 and gaps(["media", "fec"]) < gaps(["media"])


def observations(tables: Any, call: int = 0, *, step_us: int = STEP_US) -> tuple[np.ndarray, np.ndarray]:
    """The decision instants (µs, every `step_us` from the first, up to the end of the run) and
    the observation at each, (steps, 150) float32, of call `call`'s receiver. `tables` is a
    run's tables (`RunResult.tables`, `results.load`): its `meta` and `packets`."""
    flows = {int(f["id"]): f for f in tables.meta["flows"] if f.get("call") == call}
    media = {i: str(f["kind"]) for i, f in flows.items() if f.get("kind") in ("video", "audio")}
    if not media:
        raise ValueError(f"call {call} has no media flow in this run")
    received = (
        tables.packets.filter((pl.col("event") == "received") & pl.col("flow").is_in(list(media)))
        .filter(pl.col("kind").is_in(["media", "padding", "rtx", "fec"]))
        .sort("t_us", "packet")
    )
    by_kind = pl.col("flow").replace_strict(media, return_dtype=pl.String)
    received = received.with_columns(
        klass=pl.when(pl.col("kind") == "media")
        .then(by_kind)
        .when(pl.col("kind") == "padding")
        .then(pl.lit("probe"))
        .otherwise(pl.lit("other"))
        .replace_strict(_CLASS, return_dtype=pl.UInt8),
    )
    # Loss is read off the stream's sequence numbers: the media's, with RED/ULPFEC's FEC packets,
    # which share them; a retransmission carries the number it repairs and arrives late, so it
    # counts nothing again. FlexFEC's packets (their own stream) are left out of it.
    sequenced = ["media", "rtx"] + (["fec"] if _fec_shares_sequence(received) else [])
    received = received.with_columns(
        stream_seq=pl.when(pl.col("kind").is_in(sequenced) & pl.col("seq").is_not_null())
        .then(pl.col("seq").cast(pl.Int64))
        .otherwise(None),
    )
    media_rows = received.filter(pl.col("stream_seq").is_not_null()).with_row_index("_r")
    unwrapped = media_rows.with_columns(stream_seq=_unwrapped(pl.col("stream_seq")).over("flow")).select(
        "t_us", "packet", "flow", "stream_seq"
    )
    received = received.drop("stream_seq").join(unwrapped, on=["t_us", "packet", "flow"], how="left")
    received = received.sort("t_us", "packet")
    end_us = round(float(tables.meta["duration_s"]) * 1e6)
    steps = np.arange(step_us, end_us + 1, step_us, dtype=np.int64)
    obs = _core.observations(
        received["t_us"].cast(pl.Int64).to_numpy(),
        received["sent_us"].cast(pl.Int64).to_numpy(),
        received["size"].cast(pl.Int64).to_numpy(),
        received["flow"].cast(pl.Int64).to_numpy(),
        received["stream_seq"].fill_null(-1).cast(pl.Int64).to_numpy(),
        received["klass"].to_numpy(),
        steps,
    )
    return steps, obs
