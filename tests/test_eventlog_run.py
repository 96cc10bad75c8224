"""A sender's RTC event log as a run (`rtcbench eventlog`, `rtcbench.eventlog.run`): the same
tables, summary and figure as a simulated run, and the path it crossed as a scenario other
controllers run on. The log is Chromium 156's of a 30 s one-way video call that rtcbench
emulated (the `browser-p2p` scenario of tests/test_browser.py: 1 Mbit/s forward with a 300 ms
drop-tail queue, 25 ms each way, no loss), so what the inference should find is known."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import polars as pl
import pytest
from tests.test_eventlog import DATA, SENDER, cli
from tests.test_snapshots import SNAPSHOTS

import rtcbench
from rtcbench import eventlog
from rtcbench.eventlog import decisions
from rtcbench.eventlog import run as imported
from rtcbench.results import RUN_FILES, load_tables, read_summary, run_folders, verify_files
from rtcbench.runner import RunResult


@pytest.fixture(scope="module")
def log() -> eventlog.EventLog:
    return eventlog.read(SENDER)


def test_the_path_inferred_from_the_senders_log_is_the_emulated_one(log: eventlog.EventLog) -> None:
    derived, variant, _ = imported.derive(log)
    # Capacity: packets that queued behind another arrived one transmission apart; 51 of the
    # 52 half-second windows had enough of them, and every one measured 990-1010 kbit/s of
    # IP packets (logged size + 38 bytes): one step at 1000 kbit/s.
    assert derived.measured_windows >= 0.9 * derived.windows
    assert all(abs(bps - 1_000_000) <= 30_000 for _, bps in derived.steps), derived.steps
    # Base delay: half the least round trip the sender measured from its echoed reports
    # (51.1 ms: 2 x 25 ms and the reports' own way through the queue).
    assert derived.rtt_min_ms is not None and 50 <= derived.rtt_min_ms <= 56
    # Nothing was lost, so the 300 ms queue never overflowed: the queue is RFC 8867's 300 ms,
    # at least the longest seen (86.5 ms).
    assert derived.overflow_losses == derived.random_losses == 0
    assert derived.queue_ms == 300 and 40 < derived.queue_max_ms < 300
    # The call: video only, from the first packet the log holds, at the estimator's first
    # estimate (the scenario's 300 kbit/s start).
    assert not derived.audio and derived.start_bps == 300_000
    assert 0.1e6 < derived.call_start_us < 0.5e6 and 25e6 < derived.duration_us < 27e6
    (link, back) = variant.links
    assert [s["capacity"] for s in link["schedule"]] == ["1Mbps"] and link["queue"]["size"] == "300ms"
    assert link["delay"] == back["delay"] and "loss" not in link


def test_random_loss_is_told_from_a_queue_that_overflows() -> None:
    # Two more calls of Chromium 156 (their scenarios beside the logs): 2 % random loss on the
    # 1 Mbit/s path, and 2 Mbit/s falling to 700 kbit/s at 15 s into a 60 ms queue. The relay
    # saw 71 random losses in the first and 469 overflows of the full queue in the second.
    lossy, _, _ = imported.derive(eventlog.read(DATA / "chromium156-loss2-sender.log"))
    # The losses fall on short and long queues alike: random, at the rate the wire saw (the log
    # holds the first 26 s: 63 losses of 2 926 packets, 2.15 %), and the queue never overflowed.
    assert lossy.overflow_ms is None and lossy.queue_ms == 300
    assert 0.017 < lossy.random_loss < 0.026 and lossy.random_losses == 63
    assert all(abs(bps - 1_000_000) <= 30_000 for _, bps in lossy.steps), lossy.steps
    step, variant, _ = imported.derive(eventlog.read(DATA / "chromium156-step-sender.log"))
    # The losses come behind the longest queues: an overflow at 56 ms of queuing, a 60 ms queue.
    # 455 of the 468 losses are the overflow's; 13 (0.2 % of packets) are taken as random.
    assert step.overflow_ms is not None and step.queue_ms == 60
    assert step.overflow_losses >= 440 and step.random_loss < 0.005
    # The capacity: 2 Mbit/s, then 700 kbit/s from the window after the drop (the window across
    # it holds some of each).
    (first, *between, last) = step.steps
    assert first[0] == 0 and abs(first[1] - 2_000_000) <= 60_000
    assert last[0] == 15_000_000 and abs(last[1] - 700_000) <= 21_000 and len(between) <= 1
    assert step.audio and "audio" not in variant.calls[0]


def test_the_run_holds_the_logged_packets_their_fate_and_the_estimators_decisions(
    log: eventlog.EventLog,
) -> None:
    done = imported.import_log(log, None, figure=False)
    t, s = done.tables, done.summary
    video = next(int(f["id"]) for f in t.meta["flows"] if f["name"] == "call0.video")
    pk = t.packets.filter(pl.col("flow") == video)
    sent, received = (pk.filter(pl.col("event") == e) for e in ("sent", "received"))
    # Every packet the log holds up to the last feedback, 38 bytes larger on the wire.
    rtp = log.tables["rtp"].filter(pl.col("t_us") <= done.derived.duration_us)
    assert sent.height == rtp.height and sent["size"].sum() == rtp["size"].sum() + 38 * rtp.height
    # Transport feedback reported every one but the last few as received, none lost.
    delays = log.packet_delays()
    assert received.height == delays.height and pk.filter(pl.col("event") == "dropped").height == 0
    assert sorted(received["transport_seq"].to_list()) == sorted(
        delays["transport_seq"].cast(pl.Int32).to_list()
    )
    # On the sender's clock, the fastest packet took the base delay: queuing is what is above.
    owd = received["t_us"] - received["sent_us"]
    assert int(owd.min()) == done.derived.base_owd_us  # type: ignore[arg-type]
    longest_us = float(delays["delay_ms"].max()) * 1000  # type: ignore[arg-type]
    assert int((owd - done.derived.base_owd_us).max()) == pytest.approx(longest_us, abs=1)  # type: ignore[arg-type]
    # The target is the loss-based estimate the log holds, at each of its updates.
    loss_based = log.tables["loss_based"].group_by("t_us").agg(pl.col("bitrate_bps").last())
    ctrl = t.controller.join(loss_based, on="t_us", how="inner")
    assert ctrl.height == loss_based.height and (ctrl["target_bps"] == ctrl["bitrate_bps"]).all()
    assert t.controller["delay_based_bps"].drop_nulls().len() > 300
    assert "overusing" in set(t.controller["detector_state"].drop_nulls())
    assert t.controller["probe_bps"].drop_nulls().len() == 2
    # Feedback: transport feedback and receiver reports, each report with its round trip.
    kinds = dict(t.feedback.group_by("kind").len().rows())
    assert kinds == {"twcc": 412, "rr": 28}
    rtt_ms = t.feedback.filter(pl.col("kind") == "rr")["rtt_us"].drop_nulls() / 1000
    assert rtt_ms.len() == 27 and float(rtt_ms.min()) > 50 and float(rtt_ms.max()) < 100  # type: ignore[arg-type]
    # Measured as any run: the video's rate, its queuing, its RTT from those reports; what a log
    # does not show (frames) is null, not zero.
    f = next(f for f in s["flows"] if f["name"] == "call0.video")
    assert 800e3 < f["mean_send_rate_bps"] < 900e3 and f["loss_ratio"] == 0.0
    assert 30 < f["qdelay_p95_ms"] < 60 and 50 < f["rtt_mean_ms"] < 70
    assert f["fps_mean"] is None and f["utilization"] is None
    assert s["mode"] == "eventlog" and s["controller"] == "eventlog"


def test_the_command_writes_a_run_folder_and_the_derived_scenario_runs_other_controllers(
    tmp_path: Path,
) -> None:
    out = tmp_path / "results"
    done = cli("eventlog", SENDER, "--out", out)
    assert done.returncode == 0, done.stderr
    (folder,) = run_folders(out)
    log = eventlog.read(SENDER)
    assert folder.parts[-4:-2] == (imported.scenario_id(log), "eventlog")
    # Every file a simulated run has, the figure, and the log's own tables.
    names = {p.name for p in folder.iterdir()}
    assert set(RUN_FILES) | {"overview.png", "eventlog"} == names
    assert {p.name for p in (folder / "eventlog").iterdir()} == {
        "eventlog.json",
        *(f"{t}.parquet" for t in eventlog.TABLES),
    }
    summary = read_summary(folder)
    assert verify_files(folder, summary) is None
    assert summary["identity"]["eventlog_sha256"] == log.sha256
    assert load_tables(folder).packets.height > 5000
    scenario = folder / "scenario.toml"
    assert f"rtcbench run {scenario}" in done.stdout.replace("\n", "")
    # "What would another estimator have done on this call": two controllers on the path.
    runs: list[RunResult] = []
    for cc in ("gcc", "nada"):
        runs += rtcbench.run(scenario, cc, 1, out)
    logged = next(f for f in summary["flows"] if f["kind"] == "video")
    for r in runs:
        v = next(f for f in r.summary["flows"] if f["kind"] == "video")
        # The derived path is the 1 Mbit/s one: each fills most of it without loss. rtcbench's
        # gcc sends within 15 % of what Chromium sent on it (measured: 827 against 855 kbit/s).
        assert 0.75 < v["utilization"] < 1.0 and v["loss_ratio"] == 0.0, (r.summary["controller"], v)
        if r.summary["controller"] == "gcc":
            assert v["mean_send_rate_bps"] == pytest.approx(logged["mean_send_rate_bps"], rel=0.15)
    # The three side by side, as any runs of one scenario are.
    scored = cli("score", out)
    assert scored.returncode == 0, scored.stderr
    header = next(line for line in scored.stdout.splitlines() if "scenario" in line)
    assert all(cc in header for cc in ("eventlog", "gcc", "nada")), scored.stdout
    # Imported again, the run is replaced whole, beside the others.
    assert cli("eventlog", SENDER, "--out", out).returncode == 0
    assert len(run_folders(out)) == 3


def test_a_random_file_and_a_truncated_log_each_end_in_one_line(tmp_path: Path) -> None:
    noise = tmp_path / "noise.log"
    noise.write_bytes(random.Random(62).randbytes(4096))
    cut = tmp_path / "cut.log"
    cut.write_bytes(SENDER.read_bytes()[:20_000])
    for path in (noise, cut):
        done = cli("eventlog", path, "--out", tmp_path / "out")
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
        assert (
            str(path) in lines[0] and "not a readable RTC event log" in lines[0] and " at byte " in lines[0]
        )
    assert not (tmp_path / "out").exists()


def test_the_imported_run_and_its_path_snapshot(log: eventlog.EventLog) -> None:
    # The summary of the run and the derived scenario: a change in the reader, the inference
    # or a metric shows here and is explained in its commit.
    done = imported.import_log(log, None, figure=False)
    shown = ("packets_sent", "packets_received", "packets_dropped", "mean_send_rate_bps", "mean_target_bps",
             "loss_ratio", "qdelay_p50_ms", "qdelay_p95_ms", "rtt_mean_ms", "settling_time_s")  # fmt: skip
    text = "".join(
        f"{f['name']}: "
        + ", ".join(f"{k} {f[k]:.6g}" if f[k] is not None else f"{k} -" for k in shown)
        + "\n"
        for f in done.summary["flows"]
    )
    text += "\n" + done.derived.scenario(imported.scenario_id(log), "snapshot")
    text += "\n" + json.dumps(done.derived.summary(), indent=1, sort_keys=True) + "\n"
    path = SNAPSHOTS / "eventlog-chromium156-p2p-sender.txt"
    if os.environ.get("RTCBENCH_UPDATE_SNAPSHOTS") == "1" or not path.exists():
        if os.environ.get("CI") and not path.exists():
            pytest.fail(f"missing snapshot {path}; generate it locally and commit it")
        path.write_text(text)
    assert text == path.read_text()


def test_chromiums_decisions_from_its_log_beside_the_simulators_from_its_trace(
    log: eventlog.EventLog, tmp_path: Path
) -> None:
    # Chromium's: two probe clusters at the start (3 and 6 times the 300 kbit/s start rate),
    # their four results (each cluster's logged twice), and three over-use episodes, each
    # followed by a multiplicative decrease of the target; no loss, so no loss-based cut.
    chromium = decisions.logged(log, imported.controller_table(log))
    n = decisions.counts(chromium, 0, 30_000_000)
    assert n == {"delay-decrease": 3, "overuse": 3, "probe": 2, "probe-result": 4}, n
    probes = chromium.filter(pl.col("decision") == "probe")
    assert probes["bps"].to_list() == [900_000, 1_800_000] and int(probes["t_us"].max()) < 500_000  # type: ignore[arg-type]
    over = chromium.filter(pl.col("decision") == "overuse")["t_us"]
    cut = chromium.filter(pl.col("decision") == "delay-decrease")["t_us"]
    assert all(0 <= c - o <= 100_000 for o, c in zip(over, cut, strict=True))
    # rtcbench's gcc on the derived path: the same two start-up clusters (its probes' rates are
    # capped by the call's 1.2 Mbit/s ceiling), and decreases read from its target alone.
    done = imported.import_log(log, tmp_path, figure=False)
    (sim,) = rtcbench.run(done.path / "scenario.toml", "gcc")
    ours = decisions.simulated(sim.tables.controller)
    first = ours.filter((pl.col("decision") == "probe") & (pl.col("t_us") < 1_000_000))
    assert first.height == 2, ours
    assert decisions.counts(ours, 0, 30_000_000).get("delay-decrease", 0) >= 1
    figure = tmp_path / "decisions.png"
    decisions.figure(
        [
            decisions.Side("Chromium", imported.controller_table(log), chromium),
            decisions.Side("gcc", sim.tables.controller, ours),
        ],
        None,
        "p2p",
        figure,
    )
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
