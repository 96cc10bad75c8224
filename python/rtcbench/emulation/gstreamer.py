"""The GStreamer stack (`--mode gstreamer`, docs/gstreamer.md, ADR 0008): an emulated run whose
senders encode real video. Each sender is `rtcbench-gst-media` (`crates/rtcbench-gst`), the media
agent with a GStreamer pipeline in place of the RFC 8593 model. It encodes the call's
`video.picture` at its camera size and frame rate: the noise clip the browsers' cameras play (the
default), or `snow`, `videotestsrc`'s white noise that Sjölund and Kevo 2022 sent; with Debian's
`vp8enc` (libvpx) or `x264enc`, as the call's `video.codec` names. rtcbench's sender packetises,
paces and sends the real frames, and the run's controller (`--cc`) sets the encoder's target.
Receivers are the usual media agents.

    em = emulate(variant, "nada", seed=1, work=folder, real_encoders=True)

With the controller `rtpgccbwe` (`identity.GSTREAMER_CC`), both ends of each call are GStreamer's
RTP stack instead (`rtcbench-gst-rtp`, `crates/rtcbench-gst/src/rtp.rs`): the encoder's frames are
payloaded by GStreamer, paced and rated by GStreamer's own GoogCC element, `rtpgccbwe`, which
reads the transport-wide feedback GStreamer's receiving `rtpbin` sends. Its agents log the same
records, so the run has the same tables; the receiver's frames are numbered from the sender's by
RTP timestamp (`number_received_frames`).

What the encoders did goes into the run's summary (`encoders`, per call): frames drawn, encoded
and lost before the encoder, encoding latency, CPU. A call whose encoder did not keep up is
CPU-limited (`cpu_limited`), and the run says so in a warning.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rtcbench.emulation.media import PlannedCall
from rtcbench.results import InputError
from rtcbench.scenarios import Variant, call_tables, other_codecs
from rtcbench.testbed import binaries
from rtcbench.testbed.netns import TestbedUnavailable

__all__ = [
    "CODECS",
    "DEGRADATIONS",
    "ENCODER_REVISION",
    "GST_MEDIA_ENV",
    "GST_PLUGIN_RTP",
    "GST_RTP_ENV",
    "LOST_SHARE",
    "RTP_STACK_REVISION",
    "SCALED",
    "SNOW",
    "SOURCE_SHARE",
    "binary",
    "check_rtp_stack",
    "check_video",
    "encoder_config",
    "judge",
    "number_received_frames",
    "rtp_binary",
    "rtp_stack_warnings",
    "version",
]

GST_MEDIA_ENV = "RTCBENCH_GST_MEDIA"
"""Names the GStreamer media agent to use instead of the one `make gst-agent` puts in the package."""
GST_RTP_ENV = "RTCBENCH_GST_RTP"
"""Names the GStreamer RTP stack's agent (`rtpgccbwe`'s) to use instead of the package's."""
GST_PLUGIN_RTP = "0.15.4"
"""The version of GStreamer's Rust RTP plugin (`gst-plugin-rtp`) whose `rtpgccbwe` the RTP stack's
agent is built with (pinned in `crates/rtcbench-gst/Cargo.toml`): part of such a run's key."""
RTP_STACK_REVISION = 1
"""The revision of GStreamer's RTP stack as `rtcbench-gst-rtp` builds it (its pipelines and their
settings, `crates/rtcbench-gst/src/rtp.rs`): part of an `rtpgccbwe` run's key, raised whenever
they change."""
CODECS = {"vp8": "vp8enc", "h264": "x264enc"}
"""A call's `video.codec` and the GStreamer encoder that encodes it."""
SNOW = "snow"
"""The `video.picture` that is `videotestsrc pattern=snow` (white noise, Sjölund and Kevo 2022's);
the default, `noise-clip`, is the browsers' camera clip."""
SCALED = "maintain-framerate"
"""The `video.degradation` that scales a GStreamer sender's picture down libwebrtc's resolution
ladder as its target falls (a `videoscale` in front of the encoder, the rung the model's encoder
would send at: `rtcbench_media::resolution`), keeping the frame rate. Without it, or with
`maintain-resolution`, the encoder gets the camera's resolution at every rate, as the pipelines
of Sjölund and Kevo 2022 did, and only libvpx's or x264's own rate control gives way."""
DEGRADATIONS = (SCALED, "maintain-resolution")
"""The `video.degradation` values the GStreamer stack can do; `balanced`, which lowers the frame
rate as well, is refused."""
ENCODER_REVISION = 1
"""The revision of the encoders' settings and picture (`crates/rtcbench-gst`): part of a GStreamer
run's key, raised whenever they change, as `MODEL_REVISION` is for the model."""

LOST_SHARE = 0.01
"""A call is CPU-limited when more than this share of its source's frames were lost before the
encoder: the live source does not wait, so only an encoder that fell behind loses frames there."""
SOURCE_SHARE = 0.95
"""... or when its source drew fewer than this share of the frames its frame rate asks for over
the run (the source itself was starved of CPU)."""


def binary() -> Path:
    """The GStreamer media agent: `$RTCBENCH_GST_MEDIA`, else the one built beside the package."""
    return binaries.find("rtcbench-gst-media", GST_MEDIA_ENV, "GStreamer media agent (make gst-agent)")


def rtp_binary() -> Path:
    """The GStreamer RTP stack's agent: `$RTCBENCH_GST_RTP`, else the one built beside the package."""
    return binaries.find("rtcbench-gst-rtp", GST_RTP_ENV, "GStreamer RTP stack's agent (make gst-agent)")


def number_received_frames(logs: Mapping[tuple[str, str], list[dict[str, Any]]]) -> None:
    """Gives each frame a receiver on GStreamer's RTP stack completed or rendered (its records have
    the frame's RTP timestamp, `rtp_ts`, and no number) the number its sender's encoder gave it,
    found by the RTP timestamp, as the trace tables join frames by number. A timestamp the sender
    never logged stays unnumbered and drops out of the frames table."""
    by_call: dict[str, dict[int, int]] = {}
    for (call, role), records in logs.items():
        if role == "sender":
            by_call[call] = {
                int(r["rtp_ts"]): int(r["frame"]) for r in records if r["event"] == "frame_encoded"
            }
    for (call, role), records in logs.items():
        if role != "receiver":
            continue
        frames = by_call.get(call, {})
        kept = []
        for r in records:
            if r["event"] in ("frame_completed", "frame_rendered") and r.get("frame") is None:
                frame = frames.get(int(r["rtp_ts"]))
                if frame is None:
                    continue
                r["frame"] = frame
            kept.append(r)
        records[:] = kept


def check_rtp_stack(variant: Variant, calls: Sequence[PlannedCall]) -> None:
    """`InputError` (one line naming the call) for a call GStreamer's RTP stack cannot run: one
    that sends no video (`rtpgccbwe` rates a video stream) or pauses its media (its pipelines do
    not stop a stream and start it again)."""
    for c in calls:
        if c.plan.get("video") is None:
            raise InputError(
                f"{variant.scenario_id}: call {c.name} sends no video: GStreamer's rtpgccbwe rates a "
                "video stream; run it with another --cc"
            )
        if c.plan.get("pauses"):
            raise InputError(
                f"{variant.scenario_id}: call {c.name} pauses its media (pause): GStreamer's RTP stack "
                "cannot stop a stream and start it again; run it with another --cc"
            )


def rtp_stack_warnings(calls: Sequence[PlannedCall]) -> list[str]:
    """What GStreamer's RTP stack does not apply of each call's plan, one line each: FEC (it sends
    none) and a set TWCC interval (GStreamer 1.22's receiver sends feedback at every frame's last
    packet, and has no setting for it)."""
    warnings = []
    for c in calls:
        if c.plan.get("fec") is not None:
            warnings.append(
                f"{c.name}: fec = {c.plan['fec']!r} is not applied: GStreamer's RTP stack (rtpgccbwe) "
                "sends no FEC"
            )
        if c.plan.get("twcc_interval") is not None:
            warnings.append(
                f"{c.name}: the TWCC interval {c.plan['twcc_interval']} is not applied: GStreamer 1.22's "
                "receiver sends TWCC feedback at every frame's last packet"
            )
    return warnings


@functools.cache
def version() -> str:
    """The installed GStreamer's version (`1.22.0`), from `gst-launch-1.0 --version`.
    `TestbedUnavailable` (one line) when GStreamer is not installed."""
    exe = shutil.which("gst-launch-1.0")
    if exe is None:
        raise TestbedUnavailable("GStreamer is not installed (no gst-launch-1.0): run `make gstreamer`")
    done = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10, check=False)
    for line in done.stdout.splitlines():
        if line.startswith("GStreamer "):
            return line.split()[1]
    raise TestbedUnavailable(f"cannot tell GStreamer's version from {exe} --version: {done.stdout.strip()!r}")


def check_video(variant: Variant) -> None:
    """`InputError` (one line) for a call whose `video.codec` GStreamer's stack has no encoder for,
    or whose `video.degradation` it cannot do (`DEGRADATIONS`)."""
    for where, codec in other_codecs(variant):
        if codec not in CODECS:
            raise InputError(
                f"{variant.scenario_id}: {where} = {codec!r}: the GStreamer stack encodes "
                f"{' or '.join(CODECS)} (vp8enc, x264enc)"
            )
    for where, call in call_tables(variant):
        preference = (call.get("video") or {}).get("degradation")
        if preference is not None and preference not in DEGRADATIONS:
            raise InputError(
                f"{variant.scenario_id}: {where}.video.degradation = {preference!r}: the GStreamer "
                f"stack scales its picture down the resolution ladder (maintain-framerate) or keeps "
                f"the camera's resolution (maintain-resolution, its default); {preference}, which "
                f"also lowers the frame rate, is a browser's"
            )


def encoder_config(call: PlannedCall, folder: Path, seed: int) -> dict[str, Any]:
    """The `encoder` of a sender's agent configuration for `call`: its codec, its picture, `snow`
    (`videotestsrc`) or the noise clip the browsers' cameras play (`noise_clip`, at the call's
    camera size and frame rate, with the run's seed, written into `folder` once), and whether the
    picture is scaled down the resolution ladder in front of the encoder (`scale`: the call's
    `video.degradation` is `maintain-framerate`)."""
    scale = call.degradation == SCALED
    if call.picture == SNOW:
        return {"codec": call.codec, "picture": {"pattern": SNOW}, "scale": scale}
    from rtcbench.browser.chromium import noise_clip
    from rtcbench.browser.run import CLIP_SECONDS

    video = call.plan["video"]
    width, height = (int(x) for x in video["camera"])
    fps = round(float(video["fps"]))
    path = folder / f"camera-{width}x{height}-{fps}.y4m"
    if not path.exists():
        noise_clip(path, width=width, height=height, fps=fps, seconds=CLIP_SECONDS, seed=seed)
    return {"codec": call.codec, "picture": {"clip": str(path)}, "scale": scale}


def judge(
    logs: Mapping[tuple[str, str], Sequence[Mapping[str, Any]]],
) -> tuple[dict[str, Any], list[str]]:
    """Per call, what its sender's encoder reported at the end (the agent's `encoder` record) with
    `lost_before_encoder` and `cpu_limited` added; and the warnings for CPU-limited calls."""
    calls: dict[str, Any] = {}
    warnings: list[str] = []
    for (call, role), records in sorted(logs.items()):
        if role != "sender":
            continue
        report = next((dict(r) for r in reversed(records) if r.get("event") == "encoder"), None)
        if report is None:
            continue
        report.pop("event", None)
        report.pop("t_us", None)
        lost = int(report["source_frames"]) - int(report["encoder_input_frames"])
        expected = float(report["fps"]) * float(report["wall_s"])
        limited = lost > LOST_SHARE * max(1, int(report["source_frames"])) or (
            expected > 0 and int(report["source_frames"]) < SOURCE_SHARE * expected
        )
        report["lost_before_encoder"] = lost
        report["cpu_cores"] = float(report["cpu_s"]) / float(report["wall_s"]) if report["wall_s"] else None
        report["cpu_limited"] = limited
        calls[call] = report
        if limited:
            warnings.append(
                f"{call}: the encoder did not keep up (CPU-limited): its source drew "
                f"{report['source_frames']} frames of {expected:.0f}, {lost} were lost before the "
                f"encoder; its rate measures the machine, not the controller"
            )
    return calls, warnings
