"""GStreamer's own GoogCC, `rtpgccbwe` (`--mode gstreamer --cc rtpgccbwe`, docs/gstreamer.md): both
ends of each call are GStreamer's RTP stack (`rtcbench-gst-rtp`), the rate set by the element of
GStreamer's Rust RTP plugin from the transport-wide feedback GStreamer's receiver sends.

Without a testbed: the controller runs in GStreamer mode only, its runs are keyed by the plugin's
version, the receiver's frames are numbered from the sender's by RTP timestamp, and the agent
refuses what its stack cannot do in one line. As root with GStreamer and the agents built
(`make gst-agent`): a 20 s call on a 1 Mbit/s link, into the trace tables; nothing is left after it.
"""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest
from tests.realtime import assert_valid
from tests.test_gstreamer import SCENARIO, _namespaces

import rtcbench
from rtcbench import runner, testbed
from rtcbench.emulation import gstreamer
from rtcbench.emulation.media import call_plans
from rtcbench.identity import GSTREAMER, GSTREAMER_CC
from rtcbench.results import InputError
from rtcbench.scenarios import resolve

ROOT = Path(__file__).resolve().parents[1]
MISSING = testbed.missing()
if MISSING is None:
    try:
        gstreamer.rtp_binary()
        gstreamer.version()
    except testbed.TestbedUnavailable as e:
        MISSING = str(e)
needs_gstreamer = pytest.mark.skipif(MISSING is not None, reason=f"runs GStreamer in namespaces: {MISSING}")


def _variant(tmp_path: Path, sets: list[str] | None = None) -> rtcbench.scenarios.Variant:
    path = tmp_path / "gst.toml"
    path.write_text(SCENARIO)
    (variant,) = resolve(str(path), sets or [])
    return variant


@pytest.mark.parametrize("mode", ["simulate", "emulate", "browser"])
def test_gstreamers_own_controller_runs_in_gstreamer_mode_only(tmp_path: Path, mode: str) -> None:
    with pytest.raises(InputError) as e:
        rtcbench.run_variant(_variant(tmp_path), GSTREAMER_CC, 1, tmp_path / "out", mode=mode)
    assert str(e.value) == (
        "--cc rtpgccbwe is GStreamer's own GoogCC element, which runs on GStreamer's RTP stack: "
        f"run it with --mode gstreamer (this run's mode is {mode})"
    )
    assert not (tmp_path / "out").exists()


def test_a_call_the_rtp_stack_cannot_run_is_refused_before_anything_starts(tmp_path: Path) -> None:
    for sets, says in (
        (['calls.0.pause=[{from = "5s", to = "8s"}]'], "call call0 pauses its media (pause)"),
        (["calls.0.video.enabled=false"], "call call0 sends no video"),
    ):
        with pytest.raises(InputError) as e:
            rtcbench.run_variant(_variant(tmp_path, sets), GSTREAMER_CC, 1, tmp_path / "out", mode=GSTREAMER)
        assert str(e.value).startswith(f"gst-call: {says}: "), str(e.value)
    assert not (tmp_path / "out").exists()


def test_the_plugins_version_in_a_runs_key_is_the_one_the_agent_is_built_with() -> None:
    cargo = tomllib.loads((ROOT / "crates/rtcbench-gst/Cargo.toml").read_text())
    assert cargo["dependencies"]["gst-plugin-rtp"]["version"] == f"={gstreamer.GST_PLUGIN_RTP}"


@pytest.mark.skipif(MISSING is not None and "GStreamer is not installed" in MISSING, reason="no GStreamer")
def test_a_run_of_rtpgccbwe_is_keyed_apart_by_the_plugins_version(tmp_path: Path) -> None:
    variant = _variant(tmp_path)
    ours = runner.run_folder(tmp_path, variant, "gcc", 1, GSTREAMER)
    theirs = runner.run_folder(tmp_path, variant, GSTREAMER_CC, 1, GSTREAMER)
    assert ours != theirs and theirs.parent.parent.name == GSTREAMER_CC
    identity = runner._identity(variant, GSTREAMER_CC, GSTREAMER)
    assert identity["gst_plugin_rtp"] == gstreamer.GST_PLUGIN_RTP
    assert "gst_plugin_rtp" not in runner._identity(variant, "gcc", GSTREAMER)


def test_a_receivers_frames_take_their_senders_numbers_by_rtp_timestamp() -> None:
    logs = {
        ("c", "sender"): [
            {"event": "frame_encoded", "t_us": 0, "frame": 0, "rtp_ts": 1000},
            {"event": "frame_encoded", "t_us": 33_000, "frame": 1, "rtp_ts": 4000},
        ],
        ("c", "receiver"): [
            {"event": "received", "t_us": 10_000},
            {"event": "frame_completed", "t_us": 60_000, "frame": None, "rtp_ts": 4000},
            {"event": "frame_completed", "t_us": 61_000, "frame": None, "rtp_ts": 1000},
            {"event": "frame_rendered", "t_us": 70_000, "frame": None, "rtp_ts": 4000, "freeze": False},
            # A timestamp its sender never logged cannot be joined: it drops out.
            {"event": "frame_completed", "t_us": 80_000, "frame": None, "rtp_ts": 7000},
        ],
    }
    gstreamer.number_received_frames(logs)
    got = [(r["event"], r.get("frame")) for r in logs[("c", "receiver")]]
    assert got == [("received", None), ("frame_completed", 1), ("frame_completed", 0), ("frame_rendered", 1)]


def test_what_the_rtp_stack_does_not_apply_is_said_per_call(tmp_path: Path) -> None:
    (plain,) = call_plans(_variant(tmp_path, ["calls.0.fec=false"]), 1)
    assert gstreamer.rtp_stack_warnings([plain]) == []
    (call,) = call_plans(_variant(tmp_path, ["calls.0.fec=true", "calls.0.feedback.twcc_interval=100ms"]), 1)
    assert gstreamer.rtp_stack_warnings([call]) == [
        "call0: fec = 'ulpfec' is not applied: GStreamer's RTP stack (rtpgccbwe) sends no FEC",
        "call0: the TWCC interval 100ms is not applied: GStreamer 1.22's receiver sends TWCC feedback "
        "at every frame's last packet",
    ]


def test_a_calls_jitter_buffer_settings_reach_the_rtp_stacks_plan_and_key_the_run(tmp_path: Path) -> None:
    plain = _variant(tmp_path)
    (call,) = call_plans(plain, 1)
    assert "jitter_buffer" not in call.plan
    settings = 'calls.0.jitter_buffer={ rtx_next_seqnum = false, rtx_min_delay = "20ms" }'
    variant = _variant(tmp_path, [settings])
    (call,) = call_plans(variant, 1)
    assert call.plan["jitter_buffer"] == {"rtx_next_seqnum": False, "rtx_min_delay": "20ms"}
    folder = runner.run_folder(tmp_path, variant, GSTREAMER_CC, 1, GSTREAMER)
    assert folder != runner.run_folder(tmp_path, plain, GSTREAMER_CC, 1, GSTREAMER)
    with pytest.raises(rtcbench.ScenarioError, match=r"calls\.0\.jitter_buffer.*needs NACK on"):
        _variant(tmp_path, ["calls.0.nack=false", "calls.0.jitter_buffer={ rtx_next_seqnum = false }"])


def _agent_config(tmp_path: Path, **changes: object) -> Path:
    (call,) = call_plans(_variant(tmp_path), 1)
    config = {
        "role": "sender", "controller": GSTREAMER_CC, "plan": call.plan, "local": "127.0.0.1:5004",
        "peer": "127.0.0.1:5006", "end": "1s", "log": str(tmp_path / "log.jsonl"),
        "encoder": {"codec": "vp8", "picture": {"pattern": "snow"}},
    }  # fmt: skip
    config.update(changes)
    path = tmp_path / "sender.json"
    path.write_text(json.dumps(config))
    return path


def test_the_rtp_stacks_agent_refuses_what_its_stack_cannot_do_in_one_line(tmp_path: Path) -> None:
    try:
        exe = gstreamer.rtp_binary()
    except testbed.TestbedUnavailable:
        pytest.skip("the GStreamer RTP stack's agent is not built")
    (call,) = call_plans(_variant(tmp_path), 1)
    cases = {
        'controller "gcc"': {"controller": "gcc"},
        "the call sends no video": {"plan": {**call.plan, "video": None}},
        "the call pauses its media": {
            "plan": {**call.plan, "pauses": [{"from": "5s", "to": "6s", "audio": False}]}
        },
    }
    for said, changes in cases.items():
        config = _agent_config(tmp_path, **changes)
        done = subprocess.run(
            [str(exe), str(config)], capture_output=True, text=True, stdin=subprocess.DEVNULL
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"rtcbench-gst-rtp: {config}: {said}"), done.stderr
        assert done.stderr.count("\n") == 1


def _agents_left() -> list[str]:
    done = subprocess.run(["pgrep", "-f", "rtcbench-gst-rtp"], capture_output=True, text=True)
    return [pid for pid in done.stdout.split() if int(pid) != os.getpid()]


@needs_gstreamer
def test_gstreamers_goog_cc_rates_a_call_on_gstreamers_rtp_stack(tmp_path: Path) -> None:
    before = _namespaces()
    result = rtcbench.run_variant(
        _variant(tmp_path), GSTREAMER_CC, 1, tmp_path / "out", mode=GSTREAMER, figure=False
    )
    assert_valid(result)
    info = result.summary["gstreamer"]
    encoder = info["encoders"]["call0"]
    assert encoder["controller"] == f"rtpgccbwe (gst-plugin-rtp {gstreamer.GST_PLUGIN_RTP})"
    assert encoder["element"] == "vp8enc" and encoder["cpu_limited"] is False
    # Every frame the payloader made was an encoded one, and every encoded one was sent.
    assert encoder["packets_without_frame"] == 0 and encoder["frames_without_packets"] == 0
    t = result.tables
    # rtpgccbwe's estimates are the controller table (measured: 158 in 20 s, one every 130 ms),
    # each set on the encoder with the video's share.
    assert t.controller.height > 50 and encoder["targets_applied"] >= t.controller.height
    assert (t.controller["video_target_bps"] <= t.controller["target_bps"]).all()
    # GStreamer 1.22's receiver sends TWCC feedback at every frame's last packet (measured: 566
    # in 20 s at 30 fps); the sender read them.
    kinds = dict(t.feedback.group_by("kind").len().iter_rows())
    assert kinds.get("twcc", 0) > 300
    # The frames table: the encoder's frames, matched by RTP timestamp to what the receiver
    # completed and (rtcbench's receive-side model) rendered: measured 567 and 566 of 569.
    frames = t.frames
    assert frames.height == encoder["encoded_frames"] >= 0.9 * encoder["source_frames"]
    assert frames["complete_us"].is_not_null().sum() >= 0.95 * frames.height
    assert frames["render_us"].is_not_null().sum() >= 0.95 * frames.height
    assert frames["size"].sum() == encoder["bytes"] and frames["keyframe"][0]
    # The call climbs from its 300 kbit/s start on the 1 Mbit/s link (measured: utilisation
    # 0.65-0.66 over 20 s) without a standing queue (p95 27-32 ms).
    video = next(f for f in result.summary["phases"][0]["flows"] if f["name"] == "call0.video")
    assert 0.3 < video["utilization"] <= 1.0
    assert video["qdelay_p95_ms"] < 150
    assert _namespaces() == before and _agents_left() == []
