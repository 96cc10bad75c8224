"""Python controllers (`rtcbench.Controller`) run inside the simulator exactly like the built-in
ones: the same inputs, the same feedback vocabulary, the same trace tables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

import rtcbench
from rtcbench.controller import ControllerNotFound, controller_class, load_controller
from rtcbench.results import TABLES
from rtcbench.suite import _Job, _run_parallel, run_suite

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = f"{ROOT / 'examples' / 'delay_gradient_aimd.py'}:DelayGradientAimd"
SHORT = ["duration=10s"]


class PyFixed(rtcbench.Controller):
    """The built-in `fixed` controller (crates/rtcbench-cc/src/fixed.rs), line for line."""

    def on_start(self, call: rtcbench.CallInfo) -> None:
        self.rate = call.start_rate_bps

    def on_feedback(self, now_us: int, report: rtcbench.FeedbackReport) -> None:
        pass

    def target_rate(self) -> float:
        return self.rate

    def pacing_rate(self) -> float | None:
        return self.rate * 2.5

    def metrics(self) -> dict[str, float | None]:
        return {"rate_bps": self.rate}


def test_a_python_fixed_controller_gives_the_built_in_trace_bit_for_bit() -> None:
    """The Python path is driven exactly like the built-in one: 100 s of rfc8867-5.1 give the same
    packets, frames, controller rows (the metric typed as the built-in's Int64 `rate_bps`), link
    samples and feedback, to the bit."""
    variant = rtcbench.resolve("rfc8867-5.1")[0]
    builtin = rtcbench.run_variant(variant, "fixed", 1, figure=False)
    python = rtcbench.run_variant(variant, PyFixed, 1, figure=False)
    assert python.tables.packets.height > 10_000 and python.tables.controller.height > 1_000
    for table in TABLES:
        assert_frame_equal(getattr(python.tables, table), getattr(builtin.tables, table), check_exact=True)
    assert_frame_equal(python.timeseries, builtin.timeseries, check_exact=True)
    assert python.summary["events"] == builtin.summary["events"]
    name = f"{__name__}:PyFixed"
    assert python.summary["controller"] == name
    assert python.summary["meta"]["controller"] == name
    assert [c["controller"] for c in python.summary["meta"]["calls"]] == [name]


class Recorder(rtcbench.Controller):
    """Records what the simulator tells it; its rate is the call's start rate."""

    def __init__(self) -> None:
        self.call: rtcbench.CallInfo | None = None
        self.sent: list[rtcbench.SentPacket] = []
        self.reports: list[tuple[int, rtcbench.FeedbackReport]] = []
        self.timeouts: list[int] = []
        self.next_us = 0

    def on_start(self, call: rtcbench.CallInfo) -> None:
        self.call = call
        self.next_us = call.start_us + 250_000

    def on_packet_sent(self, now_us: int, packet: rtcbench.SentPacket) -> None:
        assert now_us == packet.sent_us
        self.sent.append(packet)

    def on_feedback(self, now_us: int, report: rtcbench.FeedbackReport) -> None:
        self.reports.append((now_us, report))

    def on_timeout(self, now_us: int) -> None:
        self.timeouts.append(now_us)
        self.next_us = now_us + 250_000

    def next_timeout_us(self) -> int | None:
        return self.next_us

    def target_rate(self) -> float:
        assert self.call is not None
        return self.call.start_rate_bps


@pytest.fixture(scope="module")
def recorded() -> tuple[Recorder, rtcbench.RunResult]:
    recorder = Recorder()
    (r,) = rtcbench.run("rfc8867-5.1", recorder, 1, sets=[*SHORT, "delay=50ms", "mechanism=link-rate"])
    return recorder, r


def test_the_controller_sees_every_packet_its_sender_sends(recorded: tuple[Recorder, Any]) -> None:
    recorder, r = recorded
    p = r.tables.packets
    media = p.filter((pl.col("event") == "sent") & pl.col("kind").is_in(["media", "padding"]))
    assert len(recorder.sent) == media.height > 500
    assert [s.sent_us for s in recorder.sent] == media["t_us"].to_list()
    assert [s.size for s in recorder.sent] == media["size"].to_list()
    seqs = [s.seq for s in recorder.sent]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    audio_flow = next(f["id"] for f in r.summary["meta"]["flows"] if f["kind"] == "audio")
    assert [s.is_audio for s in recorder.sent] == (media["flow"] == audio_flow).to_list()
    assert all(s.data_in_flight >= s.size for s in recorder.sent)


def test_feedback_reports_what_the_network_did(recorded: tuple[Recorder, Any]) -> None:
    recorder, r = recorded
    sent = {s.seq: s for s in recorder.sent}
    results = [p for _, report in recorder.reports for p in report.packets]
    assert len(results) > 0.9 * len(sent)
    for p in results:
        s = sent[p.seq]
        assert (p.sent_us, p.size, p.is_audio) == (s.sent_us, s.size, s.is_audio)
        assert p.ecn == "not-ect" and p.probe is None
    # Arrival times are on the sender's timeline up to an offset: one-way delays differ from the
    # trace's by one constant, to transport-wide feedback's resolution of 250 µs.
    p = r.tables.packets
    media = p.filter(pl.col("kind").is_in(["media", "padding"]))
    sent_rows = media.filter(pl.col("event") == "sent").select("packet", "t_us")
    owd = pl.col("t_us") - pl.col("sent_us")
    received = media.filter(pl.col("event") == "received").select("packet", owd=owd)
    by_send_time = dict(sent_rows.join(received, on="packet").select("t_us", "owd").iter_rows())
    offsets = {
        p.arrival_us - p.sent_us - by_send_time[p.sent_us] for p in results if p.arrival_us is not None
    }
    assert max(offsets) - min(offsets) < 250
    # Every feedback message is in the feedback table, at the time the controller got it.
    fb = r.tables.feedback.filter(pl.col("kind").is_in(["twcc", "rr"]))
    assert [t for t, _ in recorder.reports] == fb["t_us"].to_list()
    rr = [report for _, report in recorder.reports if not report.packets]
    assert rr and all(report.loss is not None and report.rtt_us is not None for report in rr[1:])


def test_the_controller_is_started_once_and_woken_at_its_deadlines(recorded: tuple[Recorder, Any]) -> None:
    recorder, _ = recorded
    assert recorder.call is not None
    assert recorder.call.call == 0 and recorder.call.start_us == 0
    assert recorder.call.min_rate_bps == recorder.call.start_rate_bps == 170_000
    assert recorder.call.max_rate_bps == 1_520_000
    assert recorder.timeouts == list(range(250_000, 10_000_001, 250_000))


class CountingAimd(rtcbench.Controller):
    """Counts its instances."""

    built: list[CountingAimd] = []  # noqa: RUF012 (shared on purpose)

    def __init__(self) -> None:
        self.started: list[rtcbench.CallInfo] = []
        self.feedback_count = 0
        CountingAimd.built.append(self)

    def on_start(self, call: rtcbench.CallInfo) -> None:
        self.started.append(call)

    def on_feedback(self, now_us: int, report: rtcbench.FeedbackReport) -> None:
        self.feedback_count += 1

    def target_rate(self) -> float:
        return self.started[0].start_rate_bps


def test_every_call_gets_its_own_controller() -> None:
    # RFC 8867 §5.4: three calls starting 0, 20 and 40 s apart.
    CountingAimd.built.clear()
    (r,) = rtcbench.run("rfc8867-5.4", CountingAimd, 1, sets=["duration=45s"], figure=False)
    starts = [c.started for c in CountingAimd.built]
    assert [[s.call for s in st] for st in starts] == [[0], [1], [2]]
    assert [st[0].start_us for st in starts] == [0, 20_000_000, 40_000_000]
    assert len({st[0].seed for st in starts}) == 3
    assert all(c.feedback_count > 0 for c in CountingAimd.built)
    assert set(r.tables.controller["call"].unique()) == {0, 1, 2}


def test_an_instance_runs_as_given_for_one_call_and_is_copied_otherwise() -> None:
    one = CountingAimd()
    rtcbench.run("rfc8867-5.1", one, 1, sets=[*SHORT, "delay=50ms", "mechanism=link-rate"], figure=False)
    assert one.feedback_count > 0 and len(one.started) == 1
    # Several variants, or several calls: copies, each starting from the instance as given.
    three_calls = [*SHORT, "calls.1.start=2s", "calls.2.start=4s"]
    for scenario, sets in (("rfc8867-5.1", SHORT), ("rfc8867-5.4", three_calls)):
        fresh = CountingAimd()
        rtcbench.run(scenario, fresh, 1, sets=sets, figure=False)
        assert fresh.feedback_count == 0 and fresh.started == []


class Broken(PyFixed):
    def on_feedback(self, now_us: int, report: rtcbench.FeedbackReport) -> None:
        if now_us > 2_000_000:
            raise ZeroDivisionError("the gradient's denominator")


def test_an_exception_names_the_controller_call_and_method() -> None:
    variant = rtcbench.resolve("rfc8867-5.1", SHORT)[0]
    with pytest.raises(rtcbench.ControllerError) as e:
        rtcbench.run_variant(variant, Broken, 1, figure=False)
    message = str(e.value)
    assert f"controller {__name__}:Broken (call 0)" in message
    assert "on_feedback(now_us=2" in message
    assert "ZeroDivisionError: the gradient's denominator" in message
    assert isinstance(e.value.__cause__, ZeroDivisionError)


class Interrupted(PyFixed):
    def on_feedback(self, now_us: int, report: rtcbench.FeedbackReport) -> None:
        raise KeyboardInterrupt


def test_ctrl_c_in_a_controller_stops_the_run_as_it_is() -> None:
    with pytest.raises(KeyboardInterrupt):
        rtcbench.run_variant(rtcbench.resolve("rfc8867-5.1", SHORT)[0], Interrupted, 1, figure=False)


class Returns(PyFixed):
    """Returns `value` from `method` once the run has gone on for a second."""

    method = "target_rate"
    value: Any = None

    def on_feedback(self, now_us: int, report: rtcbench.FeedbackReport) -> None:
        self.late = now_us > 1_000_000

    def _answer(self, name: str, normal: Any) -> Any:
        return self.value if name == self.method and getattr(self, "late", False) else normal

    def target_rate(self) -> float:
        return self._answer("target_rate", super().target_rate())  # type: ignore[no-any-return]

    def pacing_rate(self) -> float | None:
        return self._answer("pacing_rate", super().pacing_rate())  # type: ignore[no-any-return]

    def next_timeout_us(self) -> int | None:
        return self._answer("next_timeout_us", None)  # type: ignore[no-any-return]

    def metrics(self) -> dict[str, float | None]:
        return self._answer("metrics", super().metrics())  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("method", "value", "expected"),
    [
        (
            "target_rate",
            -5.0,
            r"target_rate\(\) at now_us=\d+ returned -5.0; expected a finite number of bit/s",
        ),
        ("target_rate", float("nan"), r"returned nan; expected a finite number of bit/s, at least 1"),
        ("target_rate", "fast", r"returned 'fast'; expected a finite number"),
        ("target_rate", None, r"returned None; expected a finite number"),
        ("pacing_rate", 0, r"pacing_rate\(\) at now_us=\d+ returned 0; expected None or a finite number"),
        ("next_timeout_us", 5, r"next_timeout_us\(\) at now_us=\d+ returned 5; expected None or a time no"),
        ("next_timeout_us", 2e6, r"returned 2000000.0; expected None or an int of microseconds"),
        ("metrics", [1.0], r"metrics\(\) at now_us=\d+ returned \[1.0\]; expected a dict"),
        (
            "metrics",
            {"rate_bps": 1.0, "x": 2.0},
            r"returned the keys .*'x'.* first call returned \['rate_bps'\]",
        ),
        ("metrics", {"rate_bps": -1.0}, r"expected 'rate_bps' to be a finite rate of bit/s"),
    ],
)
def test_values_the_simulator_cannot_use_are_named(method: str, value: Any, expected: str) -> None:
    cls = type("Bad", (Returns,), {"method": method, "value": value, "__module__": __name__})
    with pytest.raises(
        rtcbench.ControllerError, match=rf"^controller {__name__}:Bad \(call 0\): .*{expected}"
    ):
        rtcbench.run_variant(rtcbench.resolve("rfc8867-5.1", SHORT)[0], cls, 1, figure=False)


class Typed(PyFixed):
    def metrics(self) -> dict[str, float | None]:
        return {"estimate_bps": 1.5e6, "window_bytes": 3000.4, "delay_ms": 12.5, "gain": None}


def test_metrics_are_typed_by_their_unit_like_the_built_in_ones() -> None:
    (r,) = rtcbench.run("rfc8867-5.1", Typed, 1, sets=[*SHORT, "delay=50ms", "mechanism=link-rate"])
    c = r.tables.controller
    assert c.schema["estimate_bps"] == pl.Int64 and c["estimate_bps"].unique().to_list() == [1_500_000]
    assert c.schema["window_bytes"] == pl.Int64 and c["window_bytes"].unique().to_list() == [3000]
    assert c.schema["delay_ms"] == pl.Float64 and c["delay_ms"].unique().to_list() == [12.5]
    assert c["gain"].null_count() == c.height


class EcnWatcher(PyFixed):
    feedback = "ccfb"

    def __init__(self) -> None:
        self.ecn: set[str] = set()

    def on_feedback(self, now_us: int, report: rtcbench.FeedbackReport) -> None:
        self.ecn.update(p.ecn for p in report.packets)


def test_rfc8888_feedback_carries_each_packets_ecn_field() -> None:
    # RFC 8867 §6.2 with an L4S step marker: ECT(1) media, CE marks once the queue passes the step.
    watcher = EcnWatcher()
    (r,) = rtcbench.run("rfc8867-6.2-l4s", watcher, 1, sets=["duration=20s", "delay=50ms"], figure=False)
    assert set(r.tables.feedback["kind"].unique()) == {"ccfb", "rr"}
    assert watcher.ecn == {"ect1", "ce"}


def aimd_bands(r: rtcbench.RunResult) -> dict[str, float]:
    video = next(f for f in r.summary["flows"] if f["kind"] == "video")
    c = r.tables.controller

    def target(start_s: float, end_s: float) -> float:
        window = c.filter((pl.col("t_us") >= start_s * 1e6) & (pl.col("t_us") < end_s * 1e6))
        return float(window["target_bps"].mean())  # type: ignore[arg-type]

    return {
        "utilization": video["utilization"],
        "qdelay_p95_ms": video["qdelay_p95_ms"],
        "before_drop_bps": target(55, 60),
        "after_drop_bps": target(62, 64),
    }


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_example_delay_gradient_aimd_on_rfc8867_5_1(seed: int) -> None:
    """examples/delay_gradient_aimd.py on RFC 8867 §5.1 (50 ms, capacity set by the link rate):
    1.0 → 2.5 → 0.6 → 1.0 Mbit/s. Measured (seeds 1-3): utilisation 0.64-0.66, queuing-delay p95
    59-62 ms; the target is at the media maximum (1.52 Mbit/s) before the drop at 60 s and
    515-565 kbit/s two seconds after it."""
    variant = rtcbench.resolve("rfc8867-5.1")[0]
    r = rtcbench.run_variant(variant, EXAMPLE, seed, figure=False)
    assert r.summary["controller"] == "delay_gradient_aimd:DelayGradientAimd"
    b = aimd_bands(r)
    assert 0.5 <= b["utilization"] <= 0.9, b
    assert b["qdelay_p95_ms"] <= 120, b
    # It uses the 2.5 Mbit/s link up to the media maximum, and within 2 s of the drop to
    # 0.6 Mbit/s its target is at most 1.2 × the new capacity.
    assert b["before_drop_bps"] >= 1_200_000, b
    assert b["after_drop_bps"] <= 720_000, b
    assert r.tables.controller.schema["gradient"] == pl.Float64


def test_the_example_reacts_to_scripted_feedback() -> None:
    """The controller alone, fed scripted feedback (STYLE.md §8): a steady delay lets it increase
    additively, a growing one makes it decrease once per hold time, and so does a loss."""
    c = controller_class(EXAMPLE)()
    c.on_start(rtcbench.CallInfo(min_rate_bps=100_000, max_rate_bps=2_000_000, start_rate_bps=500_000))
    growth_from_us: int | None = None

    def feedback(now_us: int, growth: float = 0.0, lost: int | None = None) -> None:
        """Every 50 ms, the five packets sent 10 ms apart 150-100 ms ago; their one-way delay is
        50 ms plus `growth` × the time since the growth began."""
        nonlocal growth_from_us
        if growth and growth_from_us is None:
            growth_from_us = now_us - 150_000
        packets = []
        for k in range(5):
            sent = now_us - 150_000 + 10_000 * k
            queued = int(growth * (sent - growth_from_us)) if growth_from_us is not None else 0
            arrival = None if k == lost else sent + 50_000 + queued
            packets.append(
                rtcbench.PacketResult(seq=sent // 10_000, size=1200, sent_us=sent, arrival_us=arrival)
            )
        c.on_feedback(now_us, rtcbench.FeedbackReport(packets=packets))

    for t in range(200_000, 1_200_001, 50_000):
        feedback(t)
    # 100 kbit/s per second for 1 s, from the 200 ms feedback on (the first has no gradient).
    assert c.target_rate() == pytest.approx(600_000, rel=0.01)
    assert c.metrics()["decreases"] == 0.0
    for t in range(1_250_000, 1_900_001, 50_000):
        feedback(t, growth=0.2)
    assert c.metrics()["decreases"] == 2.0, "one decrease per 300 ms hold"
    assert c.target_rate() < 0.85 * 600_000
    before = c.target_rate()
    feedback(3_000_000, lost=2)
    assert c.target_rate() < before and c.metrics()["decreases"] == 3.0


def test_controllers_are_found_by_module_or_file(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_controller(EXAMPLE).name == "delay_gradient_aimd:DelayGradientAimd"
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    by_module = load_controller("delay_gradient_aimd:DelayGradientAimd")
    assert by_module.name == "delay_gradient_aimd:DelayGradientAimd"
    assert type(by_module.make(0, 1)) is controller_class(EXAMPLE)
    for spec, message in [
        ("no_such_module_here:X", r"cannot import controller 'no_such_module_here:X': ModuleNotFoundError"),
        ("examples/missing.py:X", r"no file 'examples/missing.py'"),
        (
            f"{EXAMPLE.rpartition(':')[0]}:Nope",
            r"delay_gradient_aimd.Nope is nothing, not an rtcbench.Controller",
        ),
        ("rtcbench.controller:Controller", r"it does not implement on_feedback, target_rate"),
        (
            "gccc",
            r"unknown controller 'gccc' \(allowed: gcc, .*\); a Python controller is named package.module",
        ),
    ]:
        with pytest.raises(rtcbench.UnknownController, match=message):
            rtcbench.run("rfc8867-5.1", spec)
    assert issubclass(ControllerNotFound, rtcbench.UnknownController)


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rtcbench.cli", *args], capture_output=True, text=True, cwd=cwd, check=False
    )


def test_the_cli_runs_a_controller_from_a_file(tmp_path: Path) -> None:
    out = cli(
        "run", "rfc8867-5.1", "--cc", "examples/delay_gradient_aimd.py:DelayGradientAimd", "--set",
        "duration=10s", "--set", "delay=50ms", "--set", "mechanism=link-rate", "--no-figure", "--out",
        str(tmp_path),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "delay_gradient_aimd:DelayGradientAimd · seed 1" in out.stdout
    folder = "rfc8867-5.1@delay-50ms-mechanism-link-rate"
    # No ':' in folder names: the controller's folder is delay_gradient_aimd.DelayGradientAimd.
    (run,) = (tmp_path / folder / "delay_gradient_aimd.DelayGradientAimd").glob("*/seed-1")
    summary = json.loads((run / "summary.json").read_text())
    assert summary["controller"] == summary["meta"]["controller"] == "delay_gradient_aimd:DelayGradientAimd"
    assert "gradient" in pl.read_parquet(run / "controller.parquet").columns


def test_the_cli_reports_a_failing_controller_with_its_traceback(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text(
        "import rtcbench\n\n"
        "class Broken(rtcbench.Controller):\n"
        "    def on_feedback(self, now_us, report):\n"
        "        return 1 / 0\n\n"
        "    def target_rate(self):\n"
        "        return 300_000\n"
    )
    out = cli("run", "rfc8867-5.1", "--cc", "broken:Broken", "--set", "duration=5s", cwd=tmp_path)
    assert out.returncode == 1
    assert 'broken.py", line 5, in on_feedback' in out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("error: controller broken:Broken (call 0): on_feedback(now_us=")
    assert last.endswith("raised ZeroDivisionError: division by zero")
    missing = cli("run", "rfc8867-5.1", "--cc", "nowhere:Nothing", cwd=tmp_path)
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1


def test_suites_import_the_controller_again_in_each_worker(tmp_path: Path) -> None:
    result = run_suite(["rfc8867-5.1"], [EXAMPLE, "fixed"], jobs=1, out=tmp_path, sets=SHORT)
    assert set(result.runs["controller"]) == {"delay_gradient_aimd:DelayGradientAimd", "fixed"}
    assert result.runs.height == 8
    # In worker processes (spawned: nothing is inherited but the spec string).
    variant = rtcbench.resolve("rfc8867-5.1", SHORT)[0]
    job = _Job.plan(variant, EXAMPLE, load_controller(EXAMPLE), 5, tmp_path / "workers", None)
    done: dict[int, dict[str, Any]] = {}
    _run_parallel([job], 1, done.__setitem__, here=False)
    assert done[0]["controller"] == "delay_gradient_aimd:DelayGradientAimd" and job.done()


def test_a_run_with_a_python_controller_closed_or_dropped_at_once_never_hangs(tmp_path: Path) -> None:
    """Closing (or dropping) a run whose thread waits for the GIL to call its Python controller
    once waited for that thread with the GIL held, forever. Twenty runs of each, in a process of
    their own with a time limit, so a hang fails the test instead of stopping the suite."""
    script = tmp_path / "close.py"
    script.write_text(
        "import rtcbench\n"
        "from rtcbench import _core\n"
        "from rtcbench.controller import user_controller\n"
        "from test_python_controller import PyFixed\n"
        "v = rtcbench.resolve('rfc8867-5.1')[0]\n"
        "cc = user_controller(PyFixed)\n"
        "for _ in range(20):\n"
        "    r = _core.Run(v.toml, cc.name, 1, factory=cc.make, piece_rows=1, slice_events=1)\n"
        "    r.close()\n"
        "    r = _core.Run(v.toml, cc.name, 1, factory=cc.make, piece_rows=1, slice_events=1)\n"
        "    del r\n"
        "print('done')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
