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

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from rtcbench import _core, quality
from rtcbench.results import InputError, read_file, read_text, write_bytes_atomic
from rtcbench.tables import RENDERED

__all__ = [
    "FEATURES",
    "INTERVALS",
    "MAX_MODEL_BYTES",
    "OBSERVATION_LEN",
    "ONNX",
    "STEP_US",
    "CallRecord",
    "LearnedDataError",
    "OnnxController",
    "call_record",
    "decision_steps",
    "evaluate_records",
    "feature",
    "feature_index",
    "load_onnx",
    "observations",
    "offline_metrics",
    "read_call",
    "write_call",
]

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


# -- ONNX policies as controllers ------------------------------------------------------------------

ONNX = "onnx:"
"""The prefix of a learned policy's controller name: ``--cc onnx:path/to/model.onnx``."""
MAX_MODEL_BYTES = 32 << 20
"""The largest model loaded (`rtcbench_onnx::MAX_MODEL_BYTES`; the challenge asked for under 10 MB)."""


@dataclass(frozen=True)
class OnnxController:
    """A learned policy as a run needs it (``--cc onnx:MODEL``, docs/controllers/onnx.md): loaded
    and checked once, named ``onnx:<file stem>`` in traces and results folders, and keyed by the
    SHA-256 of the model's bytes (two models of one name are two controllers)."""

    name: str
    path: Path
    sha256: str
    policy: Any
    """The loaded `_core.Policy`; each run makes its own instances of it."""


def load_onnx(spec: str) -> OnnxController:
    """The policy ``onnx:PATH`` names; `InputError` (one line naming the file and what is wrong)
    for a missing, unreadable, huge or non-ONNX file and for a model without the challenge's
    interface."""
    raw = spec.removeprefix(ONNX)
    if not raw:
        raise InputError(f"--cc {spec}: name the model, as onnx:path/to/model.onnx")
    path = Path(raw)
    try:
        data = read_file(path, MAX_MODEL_BYTES)
    except OSError as e:
        raise InputError(f"{path}: cannot read the model: {e.strerror or e}") from None
    name = f"{ONNX}{path.stem}"
    try:
        policy = _core.Policy(data, name)
    except ValueError as e:
        raise InputError(f"{path}: {e}") from None
    return OnnxController(name=name, path=path, sha256=policy.sha256, policy=policy)


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


def decision_steps(tables: Any, call: int = 0, *, step_us: int = STEP_US) -> np.ndarray:
    """The decision instants (µs) of call `call`'s receiver: every multiple of `step_us` after the
    call starts, up to the end of the run, as a learned policy at the receiver decides
    (`rtcbench_cc::learned::first_decision`)."""
    start_us = 0
    for c in tables.meta.get("calls", []):
        if c.get("id") == call:
            start_us = round(float(c.get("start_s") or 0.0) * 1e6)
    end_us = round(float(tables.meta["duration_s"]) * 1e6)
    first = (start_us // step_us + 1) * step_us
    return np.arange(first, end_us + 1, step_us, dtype=np.int64)


def observations(tables: Any, call: int = 0, *, step_us: int = STEP_US) -> tuple[np.ndarray, np.ndarray]:
    """The decision instants (µs, `decision_steps`) and the observation at each, (steps, 150)
    float32, of call `call`'s receiver: what a learned policy at that receiver sees. `tables` is
    a run's tables (`RunResult.tables`, `results.load`): its `meta` and `packets`."""
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
    media_rows = received.filter(pl.col("stream_seq").is_not_null())
    unwrapped = media_rows.with_columns(stream_seq=_unwrapped(pl.col("stream_seq")).over("flow")).select(
        "t_us", "packet", "flow", "stream_seq"
    )
    received = received.drop("stream_seq").join(unwrapped, on=["t_us", "packet", "flow"], how="left")
    received = received.sort("t_us", "packet")
    steps = decision_steps(tables, call, step_us=step_us)
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


# -- the challenge's per-call records -------------------------------------------------------------


class LearnedDataError(ValueError):
    """A per-call record that cannot be read: one line naming the file, the field and what it
    must be."""


@dataclass(frozen=True)
class CallRecord:
    """One call leg as the challenge's per-call JSON holds it: per 60 ms step the observation,
    the policy's estimate, the audio and video quality (0-5, NaN where unknown) and, for emulated
    calls, the true capacity and loss."""

    observations: np.ndarray
    """(steps, 150) float32."""
    bandwidth_predictions: np.ndarray
    video_quality: np.ndarray
    audio_quality: np.ndarray
    policy_id: str
    true_capacity: np.ndarray | None = None
    true_loss: np.ndarray | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "observations": self.observations.astype(float).tolist(),
            "bandwidth_predictions": self.bandwidth_predictions.astype(float).tolist(),
            "video_quality": self.video_quality.astype(float).tolist(),
            "audio_quality": self.audio_quality.astype(float).tolist(),
            "policy_id": self.policy_id,
        }
        if self.true_capacity is not None:
            out["true_capacity"] = self.true_capacity.astype(float).tolist()
        if self.true_loss is not None:
            out["true_loss"] = self.true_loss.astype(float).tolist()
        return out


def _at_steps(times_us: np.ndarray, values: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """The last value at or before each step (NaN before the first)."""
    at = np.searchsorted(times_us, steps, side="right") - 1
    out = np.full(len(steps), np.nan)
    have = at >= 0
    out[have] = values[at[have]]
    return out


DECIDED_AT = "rx_decided_at_ms"
POLICY_ESTIMATE = "rx_policy_estimate_bps"
"""The controller table's columns of a learned policy's decisions (docs/controllers/onnx.md)."""


def call_record(tables: Any, call: int = 0, *, step_us: int = STEP_US) -> CallRecord:
    """Call `call` of a run as the challenge's per-call record: the observations, the estimate
    at each step (a learned policy's own, step by step; any other controller's target, the
    controller table's `target_bps` at or before the step), the capacity of its
    video's bottleneck (the links table's `capacity_bps`) and the share of its media packets
    sent in the step that the network dropped. `video_quality` is rtcbench's own score over the
    600 ms before each step (`rtcbench.quality.step_quality`), not the challenge's MOS model;
    `audio_quality` is NaN (docs/learned.md)."""
    steps, obs = observations(tables, call, step_us=step_us)
    controller = tables.controller.filter(pl.col("call") == call).sort("t_us")
    if DECIDED_AT in controller.columns:
        # A learned policy's run: its own estimate at each step (docs/controllers/onnx.md).
        decisions = (
            controller.select(
                at_us=(pl.col(DECIDED_AT) * 1000).round().cast(pl.Int64),
                estimate=pl.col(POLICY_ESTIMATE).cast(pl.Float64),
            )
            .drop_nulls()
            .unique("at_us", keep="last")
            .sort("at_us")
        )
        predictions = np.full(len(steps), np.nan)
        at = np.searchsorted(steps, decisions["at_us"].to_numpy())
        hit = (at < len(steps)) & (steps[np.minimum(at, len(steps) - 1)] == decisions["at_us"].to_numpy())
        predictions[at[hit]] = decisions["estimate"].to_numpy()[hit]
    else:
        predictions = _at_steps(
            controller["t_us"].to_numpy(), controller["target_bps"].cast(pl.Float64).to_numpy(), steps
        )
    flows = [f for f in tables.meta["flows"] if f.get("call") == call and f.get("kind") in ("video", "audio")]
    video = next((f for f in flows if f["kind"] == "video"), flows[0])
    capacity = None
    if video.get("bottleneck") is not None:
        link = tables.links.filter(pl.col("link") == video["bottleneck"]).sort("t_us")
        capacity = _at_steps(link["t_us"].to_numpy(), link["capacity_bps"].cast(pl.Float64).to_numpy(), steps)
    ids = [int(f["id"]) for f in flows]
    media = tables.packets.filter(pl.col("flow").is_in(ids) & (pl.col("kind") == "media"))
    step = (pl.col("sent_us") // step_us).alias("step")
    sent = media.filter(pl.col("event") == "sent").group_by(step).len("sent")
    dropped = media.filter(pl.col("event") == "dropped").group_by(step).len("dropped")
    per_step = sent.join(dropped, on="step", how="left").with_columns(pl.col("dropped").fill_null(0))
    loss = np.zeros(len(steps))
    # Step k (ending at steps[k]) holds the packets sent in [steps[k] - step_us, steps[k]).
    index = per_step["step"].to_numpy() - (int(steps[0]) // step_us - 1 if len(steps) else 0)
    fraction = (per_step["dropped"] / per_step["sent"]).to_numpy()
    keep = (index >= 0) & (index < len(steps))
    loss[index[keep]] = fraction[keep]
    return CallRecord(
        observations=obs,
        bandwidth_predictions=predictions,
        video_quality=_video_quality(tables, video, steps),
        audio_quality=np.full(len(steps), np.nan),
        policy_id=str(tables.meta.get("controller", "")),
        true_capacity=capacity,
        true_loss=loss,
    )


def _video_quality(tables: Any, video: dict[str, Any], steps: np.ndarray) -> np.ndarray:
    """`quality.step_quality` of the call's video flow at each step (NaN for an audio-only call)."""
    if video["kind"] != "video":
        return np.full(len(steps), np.nan)
    flow = int(video["id"])
    received = (
        tables.packets.filter(
            (pl.col("flow") == flow) & (pl.col("event") == "received") & (pl.col("kind") == "media")
        )
        .select("t_us", "size")
        .sort("t_us")
    )
    frames = (
        tables.frames.filter((pl.col("flow") == flow) & pl.col(RENDERED).is_not_null())
        .sort(RENDERED)
        .select(
            RENDERED,
            delay_ms=(pl.col(RENDERED) - pl.col("capture_us")) / 1e3,
            gap_start=pl.col(RENDERED).shift(1),
            freeze="freeze",
        )
    )
    frozen = frames.filter(pl.col("freeze") & pl.col("gap_start").is_not_null()).select("gap_start", RENDERED)
    return quality.step_quality(
        steps.astype(np.int64),
        received["t_us"].to_numpy(),
        received["size"].to_numpy(),
        frames[RENDERED].to_numpy(),
        frames["delay_ms"].to_numpy(),
        frozen.to_numpy().reshape(-1, 2),
    )


def write_call(record: CallRecord, path: Path) -> Path:
    """Writes `record` as the challenge's per-call JSON (NaN as JSON's NaN, as its files have it),
    whole or not at all."""
    return write_bytes_atomic(path, json.dumps(record.to_json(), separators=(",", ":")).encode())


MAX_CALL_BYTES = 512 << 20
"""The largest per-call JSON `read_call` reads (a 2-hour call is about 60 MB)."""


def read_call(path: Path) -> CallRecord:
    """A per-call JSON in the challenge's format (its testbed or emulated sets, or `write_call`'s).
    `LearnedDataError`, one line naming the file and field, for anything else."""
    try:
        text = read_text(path, MAX_CALL_BYTES)
    except (OSError, ValueError) as e:
        raise LearnedDataError(f"{path}: cannot be read: {e}") from None
    try:
        data = json.loads(text)
    except ValueError as e:
        raise LearnedDataError(f"{path}: not JSON: {e}") from None
    if not isinstance(data, dict):
        raise LearnedDataError(f"{path}: a per-call record is a JSON object, not {type(data).__name__}")

    def series(name: str, required: bool = True) -> np.ndarray | None:
        if name not in data:
            if required:
                raise LearnedDataError(f"{path}: {name}: missing (a list with one number per step)")
            return None
        try:
            values = np.asarray(data[name], dtype=np.float64)
        except (TypeError, ValueError):
            raise LearnedDataError(f"{path}: {name}: must be a list of numbers") from None
        if values.ndim != 1:
            raise LearnedDataError(f"{path}: {name}: must be a list of numbers, one per step")
        return values

    raw = data.get("observations")
    try:
        obs = np.asarray(raw, dtype=np.float32)
    except (TypeError, ValueError):
        obs = np.zeros(0, dtype=np.float32)
    if obs.ndim != 2 or obs.shape[1] != OBSERVATION_LEN:
        raise LearnedDataError(
            f"{path}: observations: must be a list of steps of {OBSERVATION_LEN} numbers each"
        )
    steps = obs.shape[0]
    fields: dict[str, np.ndarray | None] = {}
    for name, required in (
        ("bandwidth_predictions", True),
        ("video_quality", True),
        ("audio_quality", True),
        ("true_capacity", False),
        ("true_loss", False),
    ):
        values = fields[name] = series(name, required)
        if values is not None and len(values) != steps:
            raise LearnedDataError(f"{path}: {name}: {len(values)} values for {steps} steps of observations")
    policy = data.get("policy_id", "")
    if not isinstance(policy, str | int):
        raise LearnedDataError(f"{path}: policy_id: must be a string")
    predictions, video, audio = (
        fields["bandwidth_predictions"],
        fields["video_quality"],
        fields["audio_quality"],
    )
    assert predictions is not None and video is not None and audio is not None
    return CallRecord(
        obs, predictions, video, audio, str(policy), fields["true_capacity"], fields["true_loss"]
    )


def offline_metrics(predictions: np.ndarray, true_capacity: np.ndarray) -> dict[str, float]:
    """How a call's estimates x hold against the true capacity y, as the challenge's community
    reports them, each a mean over the steps where both are known and y > 0: the error rate
    min(1, |x − y| / y), the over-estimation rate max(0, (x − y) / y), and the mean squared error
    in (Mbit/s)²."""
    x, y = np.asarray(predictions, dtype=np.float64), np.asarray(true_capacity, dtype=np.float64)
    known = np.isfinite(x) & np.isfinite(y) & (y > 0)
    if not known.any():
        return {"error_rate": math.nan, "overestimation_rate": math.nan, "mse_mbps2": math.nan, "steps": 0.0}
    x, y = x[known], y[known]
    return {
        "error_rate": float(np.mean(np.minimum(1.0, np.abs(x - y) / y))),
        "overestimation_rate": float(np.mean(np.maximum(0.0, (x - y) / y))),
        "mse_mbps2": float(np.mean(((x - y) / 1e6) ** 2)),
        "steps": float(known.sum()),
    }


# -- scoring a policy on records -------------------------------------------------------------------

SCORES = ("error_rate", "overestimation_rate", "mse_mbps2")
"""The offline metrics `evaluate_records` reports, each a mean per call, then over calls."""


def evaluate_records(controller: OnnxController, folder: Path) -> tuple[pl.DataFrame, list[str]]:
    """A learned policy scored offline on every per-call record under `folder` (``*.json``, in
    path order; the challenge's files or `rtcbench export`'s): the policy runs on each record's
    observations from a zero state, as at the start of a call, and its estimates are held against
    the record's true capacity (`offline_metrics`, where the record has one) beside the record's own
    estimates (the behaviour policy's, `behaviour_*`), and against those estimates
    (`agreement_error_rate`: 0 when the policy is the one that made the record).

    One row per record; the second value lists the files left out, one line each (not a record, a
    link: never followed). A decision that fails raises `ControllerError` naming the policy."""
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    for path in sorted(folder.rglob("*.json")):
        parts = path.relative_to(folder).parts
        if any(folder.joinpath(*parts[: i + 1]).is_symlink() for i in range(len(parts))):
            skipped.append(f"{path}: a link, not followed")
            continue
        try:
            record = read_call(path)
        except LearnedDataError as e:
            skipped.append(str(e))
            continue
        estimates, _ = controller.policy.run(record.observations)
        row: dict[str, Any] = {
            "record": path.relative_to(folder).as_posix(),
            "policy_id": record.policy_id,
            "steps": len(estimates),
            "mean_estimate_bps": float(np.mean(estimates)) if len(estimates) else math.nan,
            "agreement_error_rate": offline_metrics(estimates, record.bandwidth_predictions)["error_rate"],
        }
        for prefix, x in (("", estimates), ("behaviour_", record.bandwidth_predictions)):
            metrics = (
                offline_metrics(x, record.true_capacity)
                if record.true_capacity is not None
                else dict.fromkeys(SCORES, math.nan)
            )
            row.update({f"{prefix}{name}": metrics[name] for name in SCORES})
        rows.append(row)
    schema = {
        "record": pl.String,
        "policy_id": pl.String,
        "steps": pl.Int64,
        "mean_estimate_bps": pl.Float64,
        "agreement_error_rate": pl.Float64,
        **{f"{p}{n}": pl.Float64 for p in ("", "behaviour_") for n in SCORES},
    }
    return pl.DataFrame(rows, schema=schema), skipped
