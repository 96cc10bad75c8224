"""`rtcbench eventlog` and `rtcbench.eventlog` on two logs Chromium 156 wrote of one 30 s call
(crates/rtcbench-eventlog/tests/data: a one-way 640x360 video call over 1 Mbit/s and 50 ms RTT,
emulated by rtcbench, recorded with --browser-event-log), and on every way such a file can be
bad."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import polars as pl
import pytest

from rtcbench import eventlog
from rtcbench.results import InputError

DATA = Path(__file__).resolve().parents[1] / "crates/rtcbench-eventlog/tests/data"
SENDER = DATA / "chromium156-p2p-sender.log"
RECEIVER = DATA / "chromium156-p2p-receiver.log"


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rtcbench.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_the_senders_log_reads_into_tables_on_one_clock() -> None:
    log = eventlog.read(SENDER)
    rtp = log.tables["rtp"]
    assert rtp.height == 2695 and set(rtp["direction"]) == {"out"}
    # One transport-wide counter over video and its RTX stream, each number once.
    assert sorted(rtp["transport_seq"].to_list()) == list(range(1, 2696))
    # Chromium 156 logs its video send stream's SSRC as 0 (its RTX SSRC rightly): the SSRC no
    # config names is that video stream's. The receiver's config names both.
    assert set(rtp["media"]) == {"video", "rtx"}
    assert set(eventlog.read(RECEIVER).tables["rtp"]["media"]) == {"video", "rtx"}
    # The RTX stream carries the start-up probes' padding and retransmissions.
    assert rtp.filter(pl.col("media") == "rtx")["padding_size"].sum() > 0
    assert (rtp["size"] == rtp["header_size"] + rtp["payload_size"] + rtp["padding_size"]).all()
    # Every table counts from the log's earliest event, which precedes its start event
    # (Chromium writes what it buffered before logging began).
    for table in log.tables.values():
        assert table.height == 0 or int(table["t_us"].min()) >= 0
    assert log.origin_ms is not None and log.utc_origin_ms is not None
    delay = log.tables["delay_based"]
    assert set(delay["detector_state"]) <= set(eventlog.DETECTOR_STATES) and "overusing" in set(
        delay["detector_state"]
    )
    s = log.summary()
    assert s["rtp"]["out"]["packets"] == 2695 and s["rtp"]["in"]["packets"] == 0
    assert 25 < s["span_s"] < 30
    # Over the 1 Mbit/s bottleneck the sender averages below it, its estimate near it.
    assert 600_000 < s["rtp"]["out"]["mean_rate_bps"] < 1_000_000
    assert 800_000 < s["delay_based"]["mean_bps"] < 1_000_000
    assert s["probes"] == {"clusters": 2, "succeeded": 4, "failed": 0}
    assert s["rtcp"]["in"]["twcc"] > 400 and s["rtcp"]["out"]["sr"] > 0


def test_transport_feedback_gives_each_sent_packets_fate_and_queuing_delay() -> None:
    # The sender's log holds the feedback it received: each packet it sent, whether it arrived
    # and when on the receiver's clock. The difference from its sending time, less the call's
    # least, is the queuing delay it met (the two clocks' offset cancels).
    log = eventlog.read(SENDER)
    twcc = log.tables["twcc"]
    assert set(twcc["direction"]) == {"in"} and twcc["message"].n_unique() > 400
    d = log.packet_delays()
    # Every packet sent up to the last the feedback reports on, none lost (1 Mbit/s into a
    # 300 ms queue drops nothing here), queuing within that queue's 300 ms.
    assert d.height == int(d["transport_seq"].max())  # type: ignore[arg-type]
    assert d["received"].all()
    assert float(d["delay_ms"].min()) == 0.0 and float(d["delay_ms"].max()) < 300  # type: ignore[arg-type]
    f = log.summary()["feedback"]
    assert f["reported"] == d.height and f["loss_share"] == 0.0
    assert 0 < f["delay_ms"]["p50"] < f["delay_ms"]["p95"] < 300
    # The receiver's log holds the feedback it sent, and no packets it sent: no delays.
    assert eventlog.read(RECEIVER).summary()["feedback"] is None


def test_a_receivers_log_is_no_run_and_the_command_writes_its_tables_keyed_by_the_log(tmp_path: Path) -> None:
    # The receiver sent no media: no call of its own to make a run of. The command says so and
    # writes the log's tables alone, which polars and pandas read.
    out = tmp_path / "out"
    done = cli("eventlog", RECEIVER, "--out", out)
    assert done.returncode == 0, done.stderr
    (folder,) = out.iterdir()
    log = eventlog.read(RECEIVER)
    assert folder.name == f"{RECEIVER.stem}-{log.sha256[:12]}"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["eventlog.json", *(f"{t}.parquet" for t in eventlog.TABLES)]
    )
    for name in eventlog.TABLES:
        table = pl.read_parquet(folder / f"{name}.parquet")
        assert table.equals(log.tables[name]), name
        assert len(pd.read_parquet(folder / f"{name}.parquet")) == table.height
    summary = json.loads((folder / "eventlog.json").read_text())
    assert summary["rtp"]["in"]["packets"] == 2767 and summary["sha256"] == log.sha256
    text = done.stdout.replace("\n", "")
    assert "no run can be made of this log: it sent no RTP" in text and str(folder) in text
    # Read again, the folder is replaced whole, nothing else is left beside it.
    assert cli("eventlog", RECEIVER, "--out", out).returncode == 0
    assert [p.name for p in out.iterdir()] == [folder.name]


def _one_line(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def test_a_damaged_log_ends_in_one_line_naming_the_event_and_byte(tmp_path: Path) -> None:
    data = SENDER.read_bytes()
    cut = tmp_path / "cut.log"
    cut.write_bytes(data[: len(data) // 2])
    line = _one_line(cli("eventlog", cut, "--out", tmp_path / "out"), str(cut), " at byte ")
    assert "not a readable RTC event log" in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"\x0a\x02\x08\x01", "legacy-format"),
        (b"\x89PNG\r\n\x1a\n", "event framing at byte 0"),
        (b'{"not": "a log"}', "event framing at byte 0"),
    ],
    ids=["legacy", "png", "json"],
)
def test_a_file_that_is_no_new_format_log_is_named(tmp_path: Path, content: bytes, needle: str) -> None:
    path = tmp_path / "x.log"
    path.write_bytes(content)
    _one_line(cli("eventlog", path, "--out", tmp_path / "out"), str(path), needle)


def test_missing_files_fifos_and_folders_are_named_not_read(tmp_path: Path) -> None:
    _one_line(cli("eventlog", tmp_path / "nothing.log"), "nothing.log")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    _one_line(cli("eventlog", fifo, "--out", tmp_path / "out"), "a FIFO")
    _one_line(cli("eventlog", tmp_path, "--out", tmp_path / "out"), "not a regular file")


def test_a_log_over_the_limit_is_refused_before_it_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eventlog, "MAX_EVENT_LOG_BYTES", 1000)
    with pytest.raises(InputError, match=r"38667 bytes; at most 1000 are read"):
        eventlog.read(SENDER)
