"""Emulated runs over the radio models (docs/emulation.md, "Wi-Fi and LTE"): the relay drives the
same BSS and LTE cell as the simulator, each station or UE a network namespace of its own, and
the links table's radio columns are filled as a simulated run fills them.

Default tier (as root), 20 s each: a BSS with two stations (a call up from one, CBR up from the
other) and a cell with two UEs (a call up from one, down to the other), run by `fixed` in the
simulator and in emulation: the calls' rates within 2 %, the same radio rows and columns, the
relay's per-element timing in the summary. And the testbed goes on every exit: success, a run
that fails, and SIGKILL of the command (the watchdog removes it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from tests.realtime import assert_valid

import rtcbench
from rtcbench import testbed
from rtcbench.identity import EMULATE
from rtcbench.runner import RunResult
from rtcbench.testbed.netns import OWNER_EXIT_S
from rtcbench.testbed.relay import LATENESS_GOAL_US

MISSING = testbed.missing()
needs_root = pytest.mark.skipif(MISSING is not None, reason=f"builds network namespaces: {MISSING}")

WIFI = """
id = "emu-wifi"
duration = "{duration}"

[[links]]
name = "up"
from = "AP"
to = "B"
capacity = "100Mbps"
delay = "20ms"
queue = {{ size = "100ms" }}

[[links]]
name = "down"
from = "B"
to = "AP"
capacity = "100Mbps"
delay = "20ms"
queue = {{ size = "100ms" }}

[[wifi]]
name = "wlan"
ap = "AP"
phy = {{ mcs = 4 }}

[[wifi.stations]]
node = "STA1"

[[wifi.stations]]
node = "STA2"

[[calls]]
name = "video"
from = "STA1"
to = "B"
video = {{ start = "980kbps", min = "50kbps", max = "2Mbps" }}

[[cbr]]
name = "cbr"
from = "STA2"
to = "B"
rate = "2Mbps"
"""
"""Two stations at HT MCS 4 (39 Mbit/s): a 1 Mbit/s call up from one, 2 Mbit/s of CBR from the
other; the AP is not the bottleneck, the stations contend for the medium."""

LTE = """
id = "emu-lte"
duration = "20s"

[[links]]
name = "core-up"
from = "ENB"
to = "B"
capacity = "1Gbps"
delay = "10ms"
queue = { size = "100ms" }

[[links]]
name = "core-down"
from = "B"
to = "ENB"
capacity = "1Gbps"
delay = "10ms"
queue = { size = "100ms" }

[[lte]]
name = "cell"
enb = "ENB"
bandwidth = "5MHz"

[[lte.ues]]
node = "UE1"
sinr_db = 12.0

[[lte.ues]]
node = "UE2"
sinr_db = 6.0

[[calls]]
name = "up"
from = "UE1"
to = "B"
video = { start = "480kbps", min = "50kbps", max = "2Mbps" }

[[calls]]
name = "down"
from = "B"
to = "UE2"
video = { start = "480kbps", min = "50kbps", max = "2Mbps" }
"""
"""A 5 MHz cell, two UEs at 12 and 6 dB: a 0.5 Mbit/s call up from one and one down to the other."""


def _scenario(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


def _both(scenario: Path, out: Path) -> tuple[RunResult, RunResult]:
    (sim,) = rtcbench.run(scenario, "fixed", 1, out / "sim", figure=False)
    (emu,) = rtcbench.run(scenario, "fixed", 1, out / "emu", figure=False, mode=EMULATE)
    assert_valid(emu)
    return sim, emu


def _videos(result: RunResult) -> dict[str, dict[str, Any]]:
    return {f["name"]: f for f in result.summary["flows"] if f["kind"] == "video"}


def _namespaces(node: str = "") -> set[str]:
    """The network namespaces, or those of a node named `node` (`<prefix>-<node>`)."""
    done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    names = {line.split()[0] for line in done.stdout.splitlines() if line.strip()}
    return {n for n in names if n.endswith(f"-{node}")} if node else names


def _left_by(result: RunResult) -> set[str]:
    """The namespaces of the run's testbed still there."""
    prefix = result.summary["emulation"]["testbed"]
    return {n for n in _namespaces() if n.startswith(f"{prefix}-")}


def _processes_naming(text: str) -> list[str]:
    """Command lines of live processes that mention `text` (the run's own folder)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(cmdline)
    return found


def _same_tables(sim: RunResult, emu: RunResult) -> None:
    """The same tables, schemas and flows; the same radio rows with the same columns filled."""
    for name in ("packets", "frames", "links", "controller", "feedback"):
        assert getattr(emu.tables, name).schema == getattr(sim.tables, name).schema, name
    assert emu.tables.meta["flows"] == sim.tables.meta["flows"]
    assert emu.tables.meta["links"] == sim.tables.meta["links"]
    s_links, e_links = sim.tables.links, emu.tables.links
    assert set(e_links["link"]) == set(s_links["link"])
    for link in set(s_links["link"]):
        s_row = s_links.filter(pl.col("link") == link)
        e_row = e_links.filter(pl.col("link") == link)
        filled = [c for c in s_links.columns if s_row[c].null_count() < s_row.height]
        assert [c for c in e_links.columns if e_row[c].null_count() < e_row.height] == filled, link


def _timing(emu: RunResult, radio: str) -> None:
    """The relay reports its timing per element, the radio's among them, as processes of the
    run, and is marked as not keeping up exactly when a p99 missed its 200 µs goal (a warning; the
    run's validity asks 1 ms)."""
    relay = emu.summary["emulation"]["relay"]
    elements = {e["name"]: e for e in relay["elements"]}
    assert elements[radio]["kind"] in ("wifi", "lte") and elements[radio]["events"] > 1000
    p99s = [relay["lateness_us"]["p99"], *(e["lateness_us"]["p99"] for e in relay["elements"])]
    assert relay["keeping_up"] == all(p <= LATENESS_GOAL_US for p in p99s), relay
    listed = [p for p in emu.summary["emulation"]["processes"] if p["role"] == "relay"]
    assert {p["name"] for p in listed} == {
        "relay",
        *(f"relay ({e['kind']} {e['name']})" for e in elements.values()),
    }
    assert all(
        p["kept"] == (p["lateness_us"]["p99"] <= 1000.0 and p["lateness_us"]["max"] <= 20000.0)
        for p in listed
    )
    assert 0 < relay["forwarding_cpu_share"] < 1.0 and relay["cpu_s"] > 0
    late = [w for w in emu.summary["emulation"]["warnings"] if w.startswith("the relay could not keep up")]
    assert len(late) == (0 if relay["keeping_up"] else 1)


@needs_root
def test_a_bss_with_two_stations_runs_emulated_as_simulated(tmp_path: Path) -> None:
    sim, emu = _both(_scenario(tmp_path, "wifi", WIFI.format(duration="20s")), tmp_path)
    assert _left_by(emu) == set()
    s, e = _videos(sim)["video.video"], _videos(emu)["video.video"]
    assert e["mean_recv_rate_bps"] == pytest.approx(s["mean_recv_rate_bps"], rel=0.02)
    # Two stations at 39 Mbit/s carrying 3 Mbit/s: the medium is mostly idle, the queues short.
    assert e["qdelay_p95_ms"] < 10 and s["qdelay_p95_ms"] < 10
    _same_tables(sim, emu)
    # The MAC's columns, node by node: the stations' air time as their loads say, within a
    # third of the simulated one (real packets arrive less evenly than the model's).
    for node in ("wlan:STA1", "wlan:STA2"):
        air = [
            r.tables.links.filter(pl.col("link") == node)["airtime_share"].drop_nulls().mean()
            for r in (sim, emu)
        ]
        assert air[1] == pytest.approx(air[0], rel=0.33), (node, air)
    assert {w["link"] for w in emu.summary["wifi"]} == {w["link"] for w in sim.summary["wifi"]}
    _timing(emu, "wlan")


@needs_root
def test_an_lte_cell_with_two_ues_runs_emulated_as_simulated(tmp_path: Path) -> None:
    sim, emu = _both(_scenario(tmp_path, "lte", LTE), tmp_path)
    assert _left_by(emu) == set()
    for name in ("up.video", "down.video"):
        s, e = _videos(sim)[name], _videos(emu)[name]
        assert e["mean_recv_rate_bps"] == pytest.approx(s["mean_recv_rate_bps"], rel=0.02), name
    _same_tables(sim, emu)
    for buffer in ("cell:UE1:ul", "cell:UE2:dl"):
        share = [
            r.tables.links.filter(pl.col("link") == buffer)["rb_share"].drop_nulls().mean()
            for r in (sim, emu)
        ]
        assert share[1] == pytest.approx(share[0], rel=0.33), (buffer, share)
    assert {b["link"] for b in emu.summary["lte"]} == {b["link"] for b in sim.summary["lte"]}
    _timing(emu, "cell")


FAILING = """
import rtcbench


class Broken(rtcbench.Controller):
    def on_start(self, call):
        self.rate = call.start_rate_bps

    def on_feedback(self, now_us, report):
        if now_us > 2_000_000:
            raise ZeroDivisionError("on purpose")

    def target_rate(self):
        return self.rate
"""


@needs_root
def test_the_testbed_goes_when_a_radio_run_fails(tmp_path: Path) -> None:
    (tmp_path / "failing.py").write_text(FAILING)
    scenario = _scenario(tmp_path, "wifi", WIFI.format(duration="8s"))
    before = _namespaces("STA1")
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "rtcbench.cli", "run", str(scenario), "--cc", "failing:Broken", "--mode",
         "emulate", "--out", str(out)],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    # As on a wire (tests/test_emulation.py): the agent's failure, one line, status 2.
    assert done.returncode == 2, done.stderr
    assert "failing:Broken (call 0)" in done.stderr and "ZeroDivisionError" in done.stderr
    assert _namespaces("STA1") == before
    assert _processes_naming(str(out)) == []
    assert not list(out.rglob("summary.json"))


@needs_root
def test_the_testbed_goes_when_a_radio_run_is_killed(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path, "wifi", WIFI.format(duration="60s"))
    before = _namespaces("STA1")
    out = tmp_path / "out"
    process = subprocess.Popen(
        [sys.executable, "-m", "rtcbench.cli", "run", str(scenario), "--cc", "fixed", "--mode", "emulate",
         "--out", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 20
    while not (_namespaces("STA1") - before) and time.monotonic() < deadline:
        time.sleep(0.05)
    (station,) = _namespaces("STA1") - before
    prefix = station.removesuffix("-STA1")
    ours = {n for n in _namespaces() if n.startswith(f"{prefix}-")}
    # One namespace per node (AP, STA1, STA2, B) and the relay's.
    assert ours == {f"{prefix}-{n}" for n in ("net", "AP", "STA1", "STA2", "B")}
    time.sleep(2.0)
    assert _processes_naming(str(out)), "the relay and agents run"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    deadline = time.monotonic() + OWNER_EXIT_S + 10
    while (ours & _namespaces() or _processes_naming(str(out))) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ours & _namespaces() == set(), "the watchdog left namespaces"
    assert _processes_naming(str(out)) == [], "agents or the relay outlived the run"
