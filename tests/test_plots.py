"""Tests of rtcbench.plots: the run figure is written for full and for sparse tables."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from types import ModuleType

import polars as pl
import pytest

from rtcbench.metrics import Tables, timeseries
from rtcbench.plots import plot_run

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _synthetic() -> ModuleType:
    """The table builders of test_metrics, loaded by path so any pytest import mode works."""
    spec = importlib.util.spec_from_file_location(
        "_metrics_builders", Path(__file__).with_name("test_metrics.py")
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


B = _synthetic()


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC)
    assert len(data) > 10_000


def test_plot_run_writes_a_png(tmp_path: Path) -> None:
    t: Tables = B.two_phase()
    out = tmp_path / "run.png"
    start = time.perf_counter()
    plot_run(t, timeseries(t), out, "synthetic two-phase run")
    assert time.perf_counter() - start < 3.0
    assert_png(out)


def test_plot_run_with_empty_tables(tmp_path: Path) -> None:
    full: Tables = B.two_phase()
    # No drops, no frames, no controller rows, no feedback.
    t = Tables(
        packets=full.packets.filter(pl.col("event") != "dropped"),
        frames=pl.DataFrame(),
        controller=pl.DataFrame(),
        links=full.links,
        feedback=pl.DataFrame(),
        meta=full.meta,
    )
    out = tmp_path / "sparse.png"
    plot_run(t, timeseries(t), out, "sparse")
    assert_png(out)


@pytest.mark.parametrize("flows", ["none", "media"])
def test_plot_run_without_any_events(tmp_path: Path, flows: str) -> None:
    meta = B.make_meta(5.0, [B.video_flow()] if flows == "media" else [])
    empty = pl.DataFrame()
    t = Tables(empty, empty, empty, empty, empty, meta)
    out = tmp_path / "empty.png"
    plot_run(t, timeseries(t), out, "nothing happened")
    assert out.read_bytes().startswith(PNG_MAGIC)


def test_plot_run_is_fast_for_a_100_s_run(tmp_path: Path) -> None:
    pk = B.cbr(0, end_us=100 * B.S, interval_us=2 * B.MS, size=1250, payload=1200)
    t: Tables = B.single_flow_tables(pk, 100.0)
    ts = timeseries(t)
    plot_run(t, ts, tmp_path / "warm.png", "warm-up")
    start = time.perf_counter()
    plot_run(t, ts, tmp_path / "long.png", "100 s run")
    assert time.perf_counter() - start < 2.0  # budget 1 s; slack for loaded CI machines
    assert_png(tmp_path / "long.png")
