"""A frame's delay split into its stages (docs/metrics.md, "Frame delay by stage"): the dates the
simulator records add up, stage by stage, to the frame delay, each stage is where its cause puts
it, and the dates an emulated run derives from its packets are the simulator's own."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import rtcbench
from rtcbench.stages import STAGES, stage_expressions, stage_key, stage_p95_key, with_packet_dates

LOSSY = """id = "lossy"
duration = "30s"

[[links]]
name = "forward"
from = "A"
to = "B"
delay = "40ms"
capacity = "2Mbps"
queue = { size = "200ms" }
loss = { model = "bernoulli", rate = 0.02 }

[[links]]
name = "backward"
from = "B"
to = "A"
delay = "40ms"

[[calls]]
name = "G"
from = "A"
to = "B"
video = { min = "150kbps", max = "1Mbps", start = "600kbps" }
"""


@pytest.fixture(scope="module")
def lossy(tmp_path_factory: pytest.TempPathFactory) -> rtcbench.RunResult:
    path = tmp_path_factory.mktemp("stages") / "lossy.toml"
    path.write_text(LOSSY)
    (r,) = rtcbench.run(path, "fixed")
    return r


def _stages(frames: pl.DataFrame) -> pl.DataFrame:
    return frames.filter(pl.col("render_us").is_not_null()).with_columns(stage_expressions(frames.columns))


def test_a_rendered_frames_stages_add_up_to_its_delay(lossy: rtcbench.RunResult) -> None:
    frames = _stages(lossy.tables.frames)
    assert frames.height > 800
    names = [s.name for s in STAGES]
    # Every boundary is dated, none goes back in time.
    assert frames.select(pl.col(names).null_count()).row(0) == (0,) * len(names)
    assert frames.select(pl.min_horizontal(names).min()).item() >= 0.0
    total = frames.select(pl.sum_horizontal(names)).to_series()
    delay = (frames["render_us"] - frames["capture_us"]).cast(pl.Float64) / 1000.0
    assert (total - delay).abs().max() < 1e-9


def test_each_stage_is_where_its_cause_puts_it(lossy: rtcbench.RunResult) -> None:
    frames = _stages(lossy.tables.frames)
    # No frame crosses the 40 ms link faster than its delay; at 600 kbit/s on 2 Mbit/s the queue
    # stays short. A frame none of whose originals arrived (a one-packet frame whose packet was
    # lost) spends no time in the network stage: its retransmission's transit is its repair's.
    arrived = frames.filter(pl.col("last_arrival_us").is_not_null())
    assert arrived["network"].min() >= 40.0
    assert arrived["network"].median() < 50.0
    lost = frames.filter(pl.col("last_arrival_us").is_null())
    assert lost.height < 0.05 * frames.height and (lost["network"] == 0.0).all()
    # Rebuilt from a retransmission (a round trip) or from FEC (the FEC packet's transit).
    assert (lost["repair"] >= 40.0).all()
    # 2 % of the packets are lost: the frames that lost one wait for its retransmission (an RTT
    # of about 80 ms at least) or its FEC; those that lost none wait for nothing.
    repaired = frames.filter(pl.col("repair") > 0)
    assert 0.02 * frames.height < repaired.height < 0.3 * frames.height
    assert frames["repair"].quantile(0.5) == 0.0
    # The model's decoder takes 5 ms a frame (rtcbench_media::playout::DECODE_TIME).
    assert frames["decode"].min() == pytest.approx(5.0) and frames["decode"].max() == pytest.approx(5.0)


def test_the_summary_gives_each_stages_mean_and_p95(lossy: rtcbench.RunResult) -> None:
    video = next(f for f in lossy.summary["flows"] if f["kind"] == "video")
    means = [video[stage_key(s)] for s in STAGES]
    assert sum(means) == pytest.approx(video["frame_delay_mean_ms"], rel=1e-9)
    assert all(video[stage_p95_key(s)] >= 0 for s in STAGES)
    audio = next(f for f in lossy.summary["flows"] if f["kind"] == "audio")
    assert audio[stage_key("network")] is None and audio["frame_delay_mean_ms"] is None


def test_dates_derived_from_the_packets_are_the_simulators(lossy: rtcbench.RunResult, tmp_path: Path) -> None:
    # An emulated run dates its frames' packets from the relay's records (`with_packet_dates`):
    # the same dates, read from the simulator's packets table, are the ones it recorded itself.
    frames = lossy.tables.frames
    derived = with_packet_dates(
        frames.drop("first_sent_us", "last_sent_us", "last_arrival_us"), lossy.tables.packets
    )
    assert derived.select(frames.columns).equals(frames)
