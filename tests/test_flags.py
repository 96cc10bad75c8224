"""Values that are not to be taken at face value carry a flag (docs/metrics.md, "Flags"): a video
flow starved by TCP, one whose frames its sender held for seconds, a start-up faster than the
measure resolves; and every table shows them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import rtcbench
from rtcbench.analysis.flags import HELD_AT_SENDER_S, flow_flags
from rtcbench.analysis.time_series import _Windows
from rtcbench.controller import Controller, FeedbackReport

SLOW_PACER = """id = "slow-pacer"
duration = "20s"

[[links]]
name = "forward"
from = "A"
to = "B"
delay = "20ms"
capacity = "5Mbps"
queue = { size = "300ms" }

[[links]]
name = "backward"
from = "B"
to = "A"
delay = "20ms"

[[calls]]
name = "G"
from = "A"
to = "B"
video = { min = "150kbps", max = "1Mbps", start = "800kbps" }
"""


class SlowPacer(Controller):
    """Asks the encoder for 800 kbit/s and paces at a quarter of it: the sender's queue grows."""

    def on_feedback(self, now_us: int, report: FeedbackReport) -> None:
        pass

    def target_rate(self) -> float:
        return 800_000.0

    def pacing_rate(self) -> float | None:
        return 200_000.0


def _video(r: rtcbench.RunResult) -> dict:  # type: ignore[type-arg]
    return next(f for f in r.summary["flows"] if f["kind"] == "video")


def test_frames_held_at_the_sender_are_flagged(tmp_path: Path) -> None:
    path = tmp_path / "slow-pacer.toml"
    path.write_text(SLOW_PACER)
    (r,) = rtcbench.run(path, SlowPacer, figure=False)
    video = _video(r)
    # The network is idle (5 Mbit/s): its queuing delay says nothing of the frames' wait, the
    # sender's queue says it all. The pacer drains a queue older than about 2 s at once, as
    # libwebrtc's does (kMaxExpectedQueueLength): under the flag's 3 s, so no flag here.
    assert video["qdelay_p95_ms"] < 5.0
    assert 1000.0 < video["stage_send_queue_max_ms"] < HELD_AT_SENDER_S * 1000.0
    assert video["stage_send_queue_p95_ms"] > 20 * video["stage_network_p95_ms"]
    assert not any(f.startswith("held at the sender") for f in video["flags"])
    # A window that stays closed holds frames longer (SCReAM's RTP queue): flagged.
    windows = _Windows.of(r.timeseries)
    span = (0, 20_000_000)
    held = flow_flags(
        {"id": video["id"]}, {**video, "stage_send_queue_max_ms": 54_306.0}, windows, span, None
    )
    assert held == ["held at the sender: a frame waited 54.3 s before its last packet was sent"]


def test_a_flow_starved_by_newreno_is_flagged_and_the_run_says_so(tmp_path: Path) -> None:
    # RFC 8867 §5.6: GoogCC against NewReno in a 300 ms buffer falls far below its minimum.
    done = subprocess.run(
        [sys.executable, "-m", "rtcbench.cli", "run", "rfc8867-5.6", "--cc", "gcc", "--seed", "1",
         "--set", "queue=300ms", "--set", "tcp_cc=newreno", "--no-figure", "--out", str(tmp_path)],
        capture_output=True, text=True, check=True, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("flag: ")]
    assert lines and all("starved: received below its minimum 150 kbit/s for" in ln for ln in lines), lines
    suite = subprocess.run(
        [sys.executable, "-m", "rtcbench.cli", "suite", "rfc8867-5.6", "--cc", "gcc", "--reps", "1",
         "--set", "queue=300ms", "--set", "tcp_cc=newreno", "--out", str(tmp_path / "suite")],
        capture_output=True, text=True, check=True, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert "flagged" in suite.stdout


@pytest.mark.parametrize("controller", ["nada"])
def test_an_unflagged_run_has_no_flag(controller: str) -> None:
    (r,) = rtcbench.run("rfc8867-5.1", controller, sets=["delay=50ms", "mechanism=link-rate"], figure=False)
    assert _video(r)["flags"] == []


def test_screams_54_second_frame_delay_is_flagged_for_what_it_is() -> None:
    """RFC 8867 §5.6 against NewReno in a 300 ms buffer, seed 1: SCReAM's window passes less than
    its encoder's floor and its RTP queue grows to 1.1 MB (docs/findings/2026-11-29-scream-frame-
    delay.md): a frame delay p95 of 54 s that is the age of the sender's queue. The run says so."""
    (r,) = rtcbench.run("rfc8867-5.6", "scream", sets=["queue=300ms", "tcp_cc=newreno"], figure=False)
    video = _video(r)
    assert video["frame_delay_p95_ms"] > 30_000
    assert video["stage_send_queue_p95_ms"] > 0.9 * video["frame_delay_p95_ms"]
    kinds = [f.split(":")[0] for f in video["flags"]]
    assert kinds == ["starved", "held at the sender"], video["flags"]
