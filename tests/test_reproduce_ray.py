"""`rtcbench reproduce --ray` (docs/reproduction.md, "On a cluster"): the reproduction's browser and
simulated runs spread over a local Ray cluster of two worker nodes, each offering one unit of
`rtcbench-emulation`, gather into one results folder whose tables are those a run on this machine
makes of the same runs. Real time, as root, with Chromium: two 15-s calls of a cut-down table,
one on each node."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from rtcbench import calibrate, reproduce, stacks, testbed
from rtcbench.browser import devtools
from rtcbench.calibrate import Case
from rtcbench.identity import BROWSER, SIMULATE
from rtcbench.reproduce.experiments import Row, SeedTable
from rtcbench.reproduce.measures import VIDEO, FlowStat
from rtcbench.suite import EMULATION_RESOURCE

MISSING = testbed.missing() or (None if devtools.chromium() else "chromium is not installed (make chromium)")
needs_testbed = pytest.mark.skipif(MISSING is not None, reason=f"runs browsers in namespaces: {MISSING}")

CALL_S = 15
RATE = FlowStat(VIDEO, 5, CALL_S, "mean_send_rate_bps", scale=1e6)
TABLE = SeedTable(
    "test-ray",
    "this test",
    "Two one-call cases, 15 s each",
    tuple(
        Row(f"rate-{kbps}", "mean sending rate, 5-15 s", Case("seed002-grid", sets), RATE, "Mbit/s")
        for kbps, sets in (
            (1000, ("capacity=1000kbps", "delay=25ms", f"duration={CALL_S}s")),
            (2000, ("capacity=2000kbps", "delay=25ms", f"duration={CALL_S}s")),
        )
    ),
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[str]:
    """A Ray cluster of a head and a second node on this machine, each with one CPU and one unit
    of `EMULATION_RESOURCE`, started and stopped by the test (token authentication off: the
    cluster listens here only and lives for the test)."""
    pytest.importorskip("ray", reason="Ray is in the [dev] extras; make test installs it")
    ray = [sys.executable, "-m", "ray.scripts.scripts"]
    port = _free_port()
    node = ["--num-cpus", "1", "--resources", json.dumps({EMULATION_RESOURCE: 1}), "--disable-usage-stats"]
    starts = (
        [*ray, "start", "--head", "--port", str(port), "--include-dashboard=false", *node],
        [*ray, "start", "--address", f"127.0.0.1:{port}", *node],
    )
    with pytest.MonkeyPatch.context() as env:
        env.setenv("RAY_AUTH_MODE", "disabled")
        try:
            for start in starts:
                started = subprocess.run(start, capture_output=True, text=True, check=False, timeout=120)
                assert started.returncode == 0, f"ray start failed:\n{started.stdout}\n{started.stderr}"
            yield f"127.0.0.1:{port}"
        finally:
            subprocess.run([*ray, "stop", "--force"], capture_output=True, check=False, timeout=60)


def _same(a: pl.DataFrame, b: pl.DataFrame) -> bool:
    return a.sort(a.columns[:4]).equals(b.sort(b.columns[:4]))


@needs_testbed
def test_the_reproduction_runs_on_a_two_node_cluster_with_a_local_runs_tables(
    tmp_path: Path, two_nodes: str
) -> None:
    out = tmp_path / "cluster"
    calls: list[float] = []

    def told(case: Case, mode: str, seed: int, summary: dict[str, Any], ran: bool) -> None:
        if mode == BROWSER:
            calls.append(summary["wall_s"])

    started = time.monotonic()
    # One call per node (`browser_jobs=1`): the two calls can only run at once on the two nodes.
    spread = reproduce.reproduce(
        out, [TABLE], sim_seeds=(1, 2), attempts=1, browser_jobs=1, on_run=told, ray_address=two_nodes
    )
    wall_s = time.monotonic() - started
    assert set(spread.periods["case"].to_list()) == {row.case.label() for row in TABLE.rows}
    # Both calls ran, at once: the whole reproduction took less than the two calls one after the other.
    assert len(calls) == 2 and wall_s < sum(calls), (wall_s, calls)
    chromium = spread.rows["chromium"].to_list()
    assert all(v is not None and v > 0.3 for v in chromium), spread.rows
    # Gathered on this machine, the cluster's runs give the tables a local reproduction makes of
    # them (`--browser kept` reads the same folders), and the simulated half is the local one.
    here = reproduce.reproduce(out, [TABLE], sim_seeds=(1, 2), browser="kept", write=False)
    assert _same(spread.rows, here.rows) and _same(spread.periods, here.periods)
    alone = reproduce.reproduce(tmp_path / "local", [TABLE], sim_seeds=(1, 2), browser="none", jobs=1)
    simulated = ["key", "case", "simulated", "simulated_sd", "simulated_runs"]
    assert _same(spread.rows.select(simulated), alone.rows.select(simulated))
    for name in (reproduce.ROWS, reproduce.FINDINGS, reproduce.PERIODS):
        assert (out / name).is_file()


def test_a_cluster_that_is_not_there_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="Ray is in the [dev] extras; make test installs it")
    cli = [
        sys.executable,
        "-m",
        "rtcbench.cli",
        "reproduce",
        "--table",
        "002-step-up",
        "--out",
        str(tmp_path),
    ]
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    address = f"127.0.0.1:{_free_port()}"
    done = subprocess.run(
        [*cli, "--ray", address], capture_output=True, text=True, check=False, timeout=120, env=env
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr
    assert "--ray 127.0.0.1:" in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_stacks_on_the_cluster_are_a_local_comparison(tmp_path: Path, two_nodes: str) -> None:
    """`rtcbench stacks --ray` with the simulator alone (no root): the runs go out as Ray tasks and
    the comparison gathered is the local one, row for row."""
    case, simulator = (
        [Case("seed002-grid", ("capacity=1000kbps", "delay=25ms", "duration=20s"))],
        [stacks.stack("simulator")],
    )
    spread = stacks.compare_stacks(tmp_path / "cluster", case, simulator, seeds=(1, 2), ray_address=two_nodes)
    here = stacks.compare_stacks(tmp_path / "local", case, simulator, seeds=(1, 2))
    assert spread.rows.height > 0 and spread.rows.equals(here.rows)
    assert spread.curves.equals(here.curves)


@needs_testbed
def test_calibration_on_the_cluster_runs_the_browser_half_there(tmp_path: Path, two_nodes: str) -> None:
    """`rtcbench calibrate --ray`: the browser run goes to the cluster, the simulated one runs here,
    and the table is the one the same folder gives locally."""
    case = [Case("seed002-grid", ("capacity=1000kbps", "delay=25ms", f"duration={CALL_S}s"))]
    seen: list[tuple[str, bool]] = []

    def told(c: Case, mode: str, summary: dict[str, Any], ran: bool) -> None:
        seen.append((mode, ran))

    out = tmp_path / "calibration"
    spread = calibrate.calibrate(out, case, on_run=told, ray_address=two_nodes)
    assert seen == [(BROWSER, True), (SIMULATE, True)], seen
    assert spread.height > 0 and spread["browser"].drop_nulls().len() > 0
    assert spread.equals(calibrate.calibrate(out, case))
