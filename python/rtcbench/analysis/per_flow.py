"""The metrics of one flow over an interval: rates, delays, loss, frames and repair
(`docs/metrics.md`, "Per-flow metrics" and "Browser runs")."""

from __future__ import annotations

from typing import Any

import polars as pl

from rtcbench.analysis.convergence import _settling_time
from rtcbench.analysis.flows import _counted_frames, _flow, _flows, _frames_seen
from rtcbench.analysis.time_series import _Windows
from rtcbench.stages import STAGES, stage_key, stage_p95_key
from rtcbench.tables import _US_PER_S, MEDIA_KINDS, RENDERED, VIDEO, Tables, _mean, _py, _quantiles, _std


def _counted_rtt_ms(t: Tables, call: int, start_us: int, end_us: int) -> float | None:
    """The mean RTT a browser's sender measured over [start_us, end_us) (its RTCP round trips:
    `totalRoundTripTime` over `roundTripTimeMeasurements`), from the call's video flow, else its
    audio flow; None without such samples or measurements."""
    counted = t._counted
    for f in _flows(t):
        if f.get("call") != call or f.get("kind") not in MEDIA_KINDS:
            continue
        fid = int(f["id"])
        total = counted.delta(fid, "sender", "total_round_trip_time_s", start_us, end_us)
        n = counted.delta(fid, "sender", "round_trip_time_measurements", start_us, end_us)
        if total is not None and n is not None and n >= 0.5:
            return total / n * 1000.0
    return None


def flow_metrics(
    t: Tables, ts: pl.DataFrame, flow: int, start_us: int, end_us: int, settle_us: int = 0
) -> dict[str, Any]:
    """Metrics of one flow over [start_us + settle_us, end_us), as a JSON-safe dict.

    `settle_us` skips a transient for every statistic except `settling_time_s`, which is always
    measured from `start_us` (the event). Rate statistics use the windows of `ts` that start in the
    interval; packet statistics use packets sent (loss) or received (delay) in it; frame statistics
    use frames rendered (fps, freezes, frame delay) or captured (frame loss) in it. Keys not
    applicable to the flow's kind are None; `convergence_time_s` needs the other flows of the
    bottleneck and is left None here (`assemble` fills it). Keys: `docs/metrics.md`.
    """
    return _flow_metrics(t, _Windows.of(ts), flow, start_us, end_us, settle_us)


def _flow_metrics(
    t: Tables, windows: _Windows, flow: int, start_us: int, end_us: int, settle_us: int = 0
) -> dict[str, Any]:
    f = _flow(t, flow)
    kind = str(f.get("kind", ""))
    media = kind in MEDIA_KINDS
    video = kind == VIDEO
    rtcp = kind == "rtcp"
    call = f.get("call")
    s, e = start_us + settle_us, end_us
    rows = t._by_flow

    w = windows.between(flow, s, e)
    send, recv, good = (w.get_column(c) for c in ("send_rate_bps", "recv_rate_bps", "goodput_bps"))
    has_cap = w.get_column("_has_capacity")
    mean_cap = _mean(w.get_column("capacity_bps").filter(has_cap))
    mean_recv_cap = _mean(recv.filter(has_cap))
    utilization = (
        mean_recv_cap / mean_cap
        if not rtcp and mean_cap is not None and mean_recv_cap is not None and mean_cap > 0
        else None
    )

    pk = rows.packet_stats(flow, s, e)
    n_sent, n_dropped = pk.sent, pk.dropped
    ecn_seen = pk.ecn_seen
    qd = pk.qdelay_ms
    q25, q50, q90, q95 = _quantiles(qd, (0.25, 0.50, 0.90, 0.95))
    (owd50,) = _quantiles(pk.owd_ms, (0.5,))

    rtt: float | None = None
    if call is not None:
        rtt = _mean(rows.rtt.between(int(call), s, e).get_column("rtt_ms"))
        if rtt is None:
            rtt = _counted_rtt_ms(t, int(call), s, e)

    fps: float | None = None
    freezes: int | None = None
    freeze_ms: float | None = None
    fd50: float | None = None
    fd95: float | None = None
    fd_mean: float | None = None
    stages: dict[str, float | None] = {}
    jitter_buffer: float | None = None
    height: float | None = None
    frame_loss: float | None = None
    residual_loss: float | None = None
    rtx_overhead: float | None = None
    fec_overhead: float | None = None
    nacks: int | None = None
    plis: int | None = None
    ce_reported: int | None = None
    if video and _counted_frames(t, flow):
        # A browser's frames: what its receiver and sender counted (`stats`).
        counted = t._counted
        decoded = counted.delta(flow, "receiver", "frames_decoded", s, e)
        fps = decoded / ((e - s) / _US_PER_S) if decoded is not None and e > s else None
        height = counted.mean(flow, "receiver", "frame_height", s, e)
        frozen = counted.delta(flow, "receiver", "freeze_count", s, e)
        freezes = round(frozen) if frozen is not None else None
        frozen_s = counted.delta(flow, "receiver", "total_freezes_duration_s", s, e)
        freeze_ms = frozen_s * 1000.0 if frozen_s is not None else None
        held_s = counted.delta(flow, "receiver", "jitter_buffer_delay_s", s, e)
        emitted = counted.delta(flow, "receiver", "jitter_buffer_emitted_count", s, e)
        if held_s is not None and emitted:
            jitter_buffer = held_s / emitted * 1000.0
        encoded = counted.delta(flow, "sender", "frames_encoded", s, e)
        if encoded and decoded is not None:
            frame_loss = min(1.0, max(0.0, 1.0 - decoded / encoded))
        stages = _counted_stages(t, flow, s, e, pk.owd_ms, jitter_buffer)
    elif video and _frames_seen(t, flow):
        fr = rows.frames.between(flow, s, e)
        if "height" in fr.columns:
            height = _mean(fr.get_column("height"))
        fps = fr.height / ((e - s) / _US_PER_S) if e > s else None
        freezes = int(fr.get_column("freeze").sum())
        # A freeze lasts the gap before the frame that ended it (libwebrtc's totalFreezesDuration).
        freeze_ms = float(fr.get_column("gap_us").filter(fr.get_column("freeze")).sum()) / 1000.0
        delay = (fr.get_column(RENDERED) - fr.get_column("capture_us")).cast(pl.Float64) / 1000.0
        fd50, fd95 = _quantiles(delay, (0.5, 0.95))
        fd_mean = _mean(delay)
        for stage in STAGES:
            column = fr.get_column(stage.name)
            stages[stage_key(stage)] = _mean(column)
            (stages[stage_p95_key(stage)],) = _quantiles(column.drop_nulls(), (0.95,))
        longest = fr.get_column("send_queue").max()
        stages["stage_send_queue_max_ms"] = float(longest) if longest is not None else None  # type: ignore[arg-type]
        if "first_us" in fr.columns:
            # From the frame's first packet to its render, as `jitterBufferDelay` counts.
            held = (fr.get_column(RENDERED) - fr.get_column("first_us")).drop_nulls()
            jitter_buffer = _mean(held.cast(pl.Float64) / 1000.0)
        captured = rows.captured.between(flow, s, e)
        if captured.height:
            frame_loss = 1.0 - int(captured.get_column("rendered").sum()) / captured.height
    if video:
        if call is not None:
            fb = t.feedback.filter(
                (pl.col("call") == int(call))
                & pl.col("t_us").is_between(s, e - 1)
                & pl.col("kind").is_in(["nack", "pli", "fir", "ccfb"])
            )
            kinds = fb.get_column("kind")
            nacks = int((kinds == "nack").sum())
            # Keyframe requests: PLIs, or FIRs with `keyframe_request = "fir"`.
            plis = int(kinds.is_in(["pli", "fir"]).sum())
            ce_reported = _ce_reported(fb)
        if pk.originals and pk.unnumbered_originals == 0:
            rtx_overhead = pk.rtx_bytes / pk.original_bytes
            if not t.unobserved("residual_loss"):
                residual_loss = pk.unrepaired / pk.originals
            if not t.unobserved("fec_overhead"):
                fec_overhead = pk.fec_bytes / pk.original_bytes

    return {
        "id": int(f["id"]),
        "name": str(f.get("name", "")),
        "kind": kind,
        "workload": f.get("workload"),
        "mean_send_rate_bps": _mean(send),
        "std_send_rate_bps": _std(send),
        "min_send_rate_bps": _py(send.min()) if send.len() else None,
        "max_send_rate_bps": _py(send.max()) if send.len() else None,
        "mean_goodput_bps": None if rtcp else _mean(good),
        "std_goodput_bps": None if rtcp else _std(good),
        "mean_recv_rate_bps": _mean(recv),
        "std_recv_rate_bps": _std(recv),
        "mean_target_bps": _mean(w.get_column("target_bps")) if media else None,
        "mean_capacity_bps": None if rtcp else mean_cap,
        "utilization": utilization,
        "packets_sent": n_sent,
        "packets_received": pk.received,
        "packets_dropped": n_dropped,
        "bytes_sent": pk.sent_bytes,
        "bytes_received": pk.received_bytes,
        "loss_ratio": n_dropped / n_sent if n_sent else None,
        "ect0_packets_sent": pk.ect0_sent if ecn_seen else None,
        "ect1_packets_sent": pk.ect1_sent if ecn_seen else None,
        "ce_packets_received": pk.ce_received if ecn_seen else None,
        "ce_ratio": pk.ce_received / pk.received if ecn_seen and pk.received else None,
        "ce_reported": ce_reported,
        "max_window_loss_ratio": _py(w.get_column("loss_ratio").max()) if w.height else None,
        "qdelay_mean_ms": _mean(qd),
        "qdelay_p25_ms": q25,
        "qdelay_p50_ms": q50,
        "qdelay_p90_ms": q90,
        "qdelay_p95_ms": q95,
        "qdelay_max_ms": _py(qd.max()) if qd.len() else None,
        "owd_p50_ms": owd50,
        "rtt_mean_ms": rtt,
        "convergence_time_s": None,
        "settling_time_s": _settling_time(windows, flow, start_us, end_us, "send_rate_bps")
        if media
        else None,
        "fps_mean": fps,
        "height_mean_px": height,
        "freezes": freezes,
        "freeze_duration_ms": freeze_ms,
        "frame_delay_p50_ms": fd50,
        "frame_delay_p95_ms": fd95,
        "frame_delay_mean_ms": fd_mean,
        **{k: stages.get(k) for stage in STAGES for k in (stage_key(stage), stage_p95_key(stage))},
        "stage_send_queue_max_ms": stages.get("stage_send_queue_max_ms"),
        "jitter_buffer_ms": jitter_buffer,
        "frame_loss_ratio": frame_loss,
        "residual_loss_ratio": residual_loss,
        "rtx_overhead": rtx_overhead,
        "fec_overhead": fec_overhead,
        "nack_count": nacks,
        "pli_count": plis,
    }


def _ce_reported(feedback: pl.DataFrame) -> int | None:
    """The CE marks a call's RFC 8888 feedback rows among `feedback` reported
    (`feedback.ce_reported`); None without RFC 8888 feedback whose marks were read."""
    if "ce_reported" not in feedback.columns:
        return None
    reported = feedback.filter(pl.col("kind") == "ccfb").get_column("ce_reported")
    return int(reported.sum()) if reported.len() > reported.null_count() else None


def _counted_stages(
    t: Tables, flow: int, start_us: int, end_us: int, owd_ms: pl.Series, jitter_buffer: float | None
) -> dict[str, float | None]:
    """A browser's video flow's stage means over [start_us, end_us), from what its browsers
    counted and the relay saw (docs/metrics.md, "Frame delay by stage"): the pacer's wait per
    packet (`totalPacketSendDelay` over `packetsSent`), the packets' one-way delay through the
    emulated network, the jitter buffer (`jitterBufferDelay` per emitted frame: from a frame's first
    packet, so it holds the repair wait too) and the decoder (`totalProcessingDelay` per decoded
    frame less that). The encoder and the repair wait are not counted apart: None, as every p95."""
    counted = t._counted
    send_s = counted.delta(flow, "sender", "total_packet_send_delay_s", start_us, end_us)
    sent = counted.delta(flow, "sender", "packets_sent", start_us, end_us)
    processing_s = counted.delta(flow, "receiver", "total_processing_delay_s", start_us, end_us)
    decoded = counted.delta(flow, "receiver", "frames_decoded", start_us, end_us)
    decode = (
        max(0.0, processing_s / decoded * 1000.0 - jitter_buffer)
        if processing_s is not None and decoded and jitter_buffer is not None
        else None
    )
    return {
        stage_key("send_queue"): send_s / sent * 1000.0 if send_s is not None and sent else None,
        stage_key("network"): _mean(owd_ms),
        stage_key("jitter_buffer"): jitter_buffer,
        stage_key("decode"): decode,
    }
