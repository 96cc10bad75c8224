"""The GStreamer stack (`--mode gstreamer`, docs/gstreamer.md): emulated calls whose senders encode
real video with Debian's GStreamer, the run's controller setting the real encoder's target.

Without a testbed: the codecs the stack encodes, its run keys, and how an encoder that fell
behind is judged CPU-limited. As root with GStreamer and the agent built (`make gst-agent`): 20 s
calls on a 1 Mbit/s link, VP8 on the browsers' noise clip under `gcc` and H.264 on the seed's
snow under `nada`, into the trace tables; nothing is left after them.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.realtime import assert_valid
from tests.test_firefox import CALL as FIREFOX_CALL
from tests.test_firefox import LINKS as FIREFOX_LINKS

import rtcbench
from rtcbench import runner, testbed
from rtcbench.emulation import gstreamer
from rtcbench.emulation.media import call_plans
from rtcbench.identity import EMULATE, GSTREAMER
from rtcbench.results import InputError
from rtcbench.scenarios import resolve
from rtcbench.testbed import binaries

MISSING = testbed.missing()
if MISSING is None:
    try:
        gstreamer.binary()
        gstreamer.version()
    except testbed.TestbedUnavailable as e:
        MISSING = str(e)
needs_gstreamer = pytest.mark.skipif(MISSING is not None, reason=f"runs GStreamer in namespaces: {MISSING}")

SCENARIO = FIREFOX_LINKS.replace("firefox-calls", "gst-call") + FIREFOX_CALL.format(src="A", dst="B")
"""The Firefox tests' call: 640x360 at 30 fps on 1 Mbit/s, 25 ms each way, a 300 ms queue."""


def _scenario(tmp_path: Path) -> Path:
    path = tmp_path / "gst.toml"
    path.write_text(SCENARIO)
    return path


def test_the_stack_encodes_vp8_and_h264_and_refuses_other_codecs_in_one_line(tmp_path: Path) -> None:
    scenario = str(_scenario(tmp_path))
    for codec in ("vp8", "h264"):
        (variant,) = resolve(scenario, [f"calls.0.video.codec={codec}"])
        gstreamer.check_video(variant)
    for codec in ("vp9", "av1"):
        (variant,) = resolve(scenario, [f"calls.0.video.codec={codec}"])
        with pytest.raises(InputError) as e:
            rtcbench.run_variant(variant, "gcc", 1, tmp_path / "out", mode=GSTREAMER)
        assert str(e.value) == (
            f"gst-call: calls.0.video.codec = {codec!r}: "
            "the GStreamer stack encodes vp8 or h264 (vp8enc, x264enc)"
        )
    assert not (tmp_path / "out").exists()


def test_the_stack_scales_with_maintain_framerate_keeps_the_camera_otherwise_and_refuses_balanced(
    tmp_path: Path,
) -> None:
    scenario = str(_scenario(tmp_path))
    for preference, scale in ((None, False), ("maintain-resolution", False), ("maintain-framerate", True)):
        overrides = [] if preference is None else [f"calls.0.video.degradation={preference}"]
        (variant,) = resolve(scenario, [*overrides, "calls.0.video.picture=snow"])
        gstreamer.check_video(variant)
        (call,) = call_plans(variant, 1)
        assert call.degradation == preference
        assert gstreamer.encoder_config(call, tmp_path, 1) == {
            "codec": "vp8", "picture": {"pattern": "snow"}, "scale": scale,
        }  # fmt: skip
    (variant,) = resolve(scenario, ["calls.0.video.degradation=balanced"])
    with pytest.raises(InputError) as e:
        rtcbench.run_variant(variant, "gcc", 1, tmp_path / "out", mode=GSTREAMER)
    assert str(e.value) == (
        "gst-call: calls.0.video.degradation = 'balanced': the GStreamer stack scales its picture "
        "down the resolution ladder (maintain-framerate) or keeps the camera's resolution "
        "(maintain-resolution, its default); balanced, which also lowers the frame rate, is a browser's"
    )
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(MISSING is not None and "GStreamer is not installed" in MISSING, reason="no GStreamer")
def test_a_gstreamer_run_is_keyed_apart_by_gstreamer_and_its_picture(tmp_path: Path) -> None:
    scenario = str(_scenario(tmp_path))
    (clip,) = resolve(scenario, [])
    (snow,) = resolve(scenario, ["calls.0.video.picture=snow"])
    folders = {
        runner.run_folder(tmp_path, v, "gcc", 1, mode) for v in (clip, snow) for mode in (EMULATE, GSTREAMER)
    }
    assert len(folders) == 4
    identity = runner._identity(clip, "gcc", GSTREAMER)
    assert identity["gstreamer"] == gstreamer.version()
    assert identity["model_revision"] == runner.model_revision(GSTREAMER)


def _encoder_log(source: int, into: int, encoded: int, wall_s: float = 20.0) -> list[dict[str, Any]]:
    return [
        {"event": "scheduling", "t_us": 0, "policy": "fifo", "role": True},
        {
            "event": "encoder", "t_us": 20_000_000, "element": "vp8enc", "fps": 30.0, "wall_s": wall_s,
            "source_frames": source, "encoder_input_frames": into, "encoded_frames": encoded, "cpu_s": 4.0,
        },
    ]  # fmt: skip


def test_an_encoder_that_lost_frames_is_cpu_limited_and_said_so() -> None:
    # The encoder's rate control may drop frames (encoded < input): that is not the machine.
    calls, warnings = gstreamer.judge({("a", "sender"): _encoder_log(600, 600, 420), ("a", "receiver"): []})
    assert calls["a"]["cpu_limited"] is False and calls["a"]["lost_before_encoder"] == 0
    assert calls["a"]["cpu_cores"] == pytest.approx(0.2) and warnings == []
    # Frames lost in the camera's queue, or a source that could not draw its frames, are.
    for source, into in ((600, 580), (520, 520)):
        calls, warnings = gstreamer.judge({("a", "sender"): _encoder_log(source, into, into)})
        assert calls["a"]["cpu_limited"] is True
        assert len(warnings) == 1 and warnings[0].startswith("a: the encoder did not keep up (CPU-limited)")


def test_the_model_agent_refuses_an_encoder_in_one_line(tmp_path: Path) -> None:
    try:
        exe = binaries.find("rtcbench-media", "RTCBENCH_MEDIA", "media agent")
    except testbed.TestbedUnavailable:
        pytest.skip("the media agent is not built")
    (variant,) = resolve(str(_scenario(tmp_path)), [])
    (call,) = call_plans(variant, 1)
    config = tmp_path / "sender.json"
    config.write_text(
        json.dumps({
            "role": "sender", "controller": "gcc", "plan": call.plan, "local": "127.0.0.1:5004",
            "peer": "127.0.0.1:5006", "end": "1s", "log": str(tmp_path / "log.jsonl"),
            "encoder": {"codec": "vp8", "picture": {"pattern": "snow"}},
        })
    )  # fmt: skip
    done = subprocess.run([str(exe), str(config)], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert done.stderr == (
        f"rtcbench-media: {config}: encoder: this program has no real encoder "
        "(rtcbench-gst-media has GStreamer's)\n"
    )


def _agents_left() -> list[str]:
    done = subprocess.run(["pgrep", "-f", "rtcbench-gst-media"], capture_output=True, text=True)
    return [pid for pid in done.stdout.split() if int(pid) != os.getpid()]


def _namespaces() -> set[str]:
    done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return {line.split()[0] for line in done.stdout.splitlines() if line.strip()}


@needs_gstreamer
@pytest.mark.parametrize(
    ("cc", "codec", "picture", "element"),
    [("gcc", "vp8", "noise-clip", "vp8enc"), ("nada", "h264", "snow", "x264enc")],
)
def test_a_gstreamer_call_sends_the_real_encoders_frames(
    tmp_path: Path, cc: str, codec: str, picture: str, element: str
) -> None:
    before = _namespaces()
    overrides = [f"calls.0.video.codec={codec}", f"calls.0.video.picture={picture}"]
    (variant,) = resolve(str(_scenario(tmp_path)), overrides)
    result = rtcbench.run_variant(variant, cc, 1, tmp_path / "out", mode=GSTREAMER, figure=False)
    assert_valid(result)
    info = result.summary["gstreamer"]
    assert info["version"] == gstreamer.version()
    encoder = info["encoders"]["call0"]
    assert encoder["element"] == element
    # The encoder kept up: the camera's 30 fps for 20 s reached it, and it took < 1 frame time.
    # Held to the criterion runs are judged by (`LOST_SHARE`), not to zero: in the clean-clone
    # CI rehearsal, under the default tier's load, the x264 call lost 1 of 602 frames before its
    # encoder; 0 in every run on a quiet machine.
    assert encoder["source_frames"] >= 0.95 * 600
    assert encoder["lost_before_encoder"] <= gstreamer.LOST_SHARE * encoder["source_frames"]
    assert encoder["cpu_limited"] is False
    assert encoder["latency_ms"]["p95"] < 33
    assert info["cpu_limited"] == []
    # The controller drove the encoder (measured: 70-80 targets in 20 s).
    assert encoder["targets_applied"] > 10
    # The frames table is the real encoder's: every frame it encoded, a keyframe first, sizes
    # that vary as a real encoder's do (measured std 400 B for VP8 on the clip, 2.3 kB for x264
    # on snow), and the bytes of the summary's count.
    frames = result.tables.frames.sort("frame")
    assert frames.height == encoder["encoded_frames"] >= 0.9 * encoder["source_frames"]
    assert frames["keyframe"][0] and set(frames["width"]) == {640}
    assert frames["size"].std() > 100
    assert frames["size"].sum() == encoder["bytes"]
    # The call uses the link (measured: 916-918 kbit/s on 1 Mbit/s) without a standing queue.
    video = next(f for f in result.summary["phases"][0]["flows"] if f["name"] == "call0.video")
    assert 0.6 < video["utilization"] <= 1.0
    assert video["qdelay_p95_ms"] < 150
    assert result.tables.frames["freeze"].sum() == 0
    assert _namespaces() == before and _agents_left() == []


@needs_gstreamer
def test_a_gstreamer_call_with_maintain_framerate_scales_its_picture_down_the_ladder(tmp_path: Path) -> None:
    # A 640x360 camera from 300 kbit/s on a 250 kbit/s link. The video's first target is the
    # call's 300 kbit/s less its packets' headers, below 640x360's start bitrate: the picture
    # starts at 480x270, and goes to 320x180 when GoogCC's target falls below 200 kbit/s
    # (measured: 8 changes in 20 s between the two, 602 of 602 frames encoded).
    before = _namespaces()
    overrides = ["calls.0.video.degradation=maintain-framerate", "links.0.capacity=250kbps"]
    (variant,) = resolve(str(_scenario(tmp_path)), overrides)
    result = rtcbench.run_variant(variant, "gcc", 1, tmp_path / "out", mode=GSTREAMER, figure=False)
    assert_valid(result)
    encoder = result.summary["gstreamer"]["encoders"]["call0"]
    assert encoder["cpu_limited"] is False
    frames = result.tables.frames.sort("frame")
    sizes = list(zip(frames["width"], frames["height"], strict=True))
    assert sizes[0] == (480, 270) and frames["keyframe"][0]
    assert (320, 180) in sizes and set(sizes) <= {(640, 360), (480, 270), (320, 180)}, set(sizes)
    # Every change of size is counted, and the encoder starts each new size with a key frame.
    changes = [i for i in range(1, len(sizes)) if sizes[i] != sizes[i - 1]]
    assert encoder["scaling"]["changes"] == len(changes) > 0
    assert all(frames["keyframe"][i] for i in changes)
    assert (encoder["scaling"]["width"], encoder["scaling"]["height"]) == sizes[-1]
    # The frame rate is kept: the encoder coded at least 90 % of the camera's frames.
    assert frames.height >= 0.9 * encoder["source_frames"]
    assert _namespaces() == before and _agents_left() == []
