"""Tests of rtcbench.plots: the run figure is written for full and for sparse tables, names what it
draws as the scenario does, and is the one figure of both `rtcbench run` and the report."""

from __future__ import annotations

import importlib.util
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

import numpy as np
import polars as pl
import pytest
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import rtcbench
from rtcbench import plots
from rtcbench.analysis import timeseries
from rtcbench.measure import figure_tables
from rtcbench.plots import (
    BoxPanel,
    RunColumn,
    plot_run,
    qdelay_cdf_figure,
    render,
    repetitions_figure,
    run_figure,
)
from rtcbench.tables import Tables

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


def assert_rendered(fig: Figure) -> None:
    r = render(fig)
    assert r.png.startswith(PNG_MAGIC) and len(r.png) > 2_000
    assert r.svg is None  # SVG only on request
    with_svg = render(fig, svg=True)
    assert with_svg.png == r.png and with_svg.svg is not None
    root = ET.fromstring(with_svg.svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    # Same figure, same bytes: no date, no random ids.
    again = render(fig, svg=True)
    assert (again.png, again.svg) == (with_svg.png, with_svg.svg)


def test_the_run_figure_draws_from_the_time_series() -> None:
    t: Tables = B.two_phase()
    # No packets: the figure reads the time series, links, controller and frames only.
    empty = pl.DataFrame()
    bare = Tables(empty, t.frames, t.controller, t.links, empty, t.meta)
    fig = run_figure([RunColumn("", bare, timeseries(t))], "report figure")
    assert "(d) frames completed" in " ".join(text.get_text() for text in fig.texts)
    assert_rendered(fig)


def test_the_run_figure_without_video_has_three_panels() -> None:
    meta = B.make_meta(5.0, [])
    empty = pl.DataFrame()
    t = Tables(empty, empty, empty, empty, empty, meta)
    fig = run_figure([RunColumn("", t, timeseries(t))], "nothing")
    assert len(fig.axes) == 3
    assert_rendered(fig)


@pytest.fixture(scope="module")
def competing() -> rtcbench.RunResult:
    """RFC 8867 §5.6, shortened: call S1 against a TCP flow named S_tcp."""
    return rtcbench.run("rfc8867-5.6", "gcc", 1, None, ("queue=300ms", "tcp_cc=cubic", "duration=20s"))[0]


def _legend(fig: Figure) -> list[str]:
    legends = [*fig.legends, *(legend for ax in fig.axes if (legend := ax.get_legend()) is not None)]
    return [text.get_text() for legend in legends for text in legend.get_texts()]


def test_the_legend_names_calls_and_flows_as_the_scenario_does(competing: rtcbench.RunResult) -> None:
    fig = run_figure([RunColumn("", competing.tables, competing.timeseries)], "5.6")
    labels = _legend(fig)
    assert {"S1 target", "S1.video sent", "S1.audio sent", "TCP received"} <= set(labels), labels
    assert not [label for label in labels if label.startswith("call")], labels


def _height_axis(fig: Figure) -> Axes:
    return next(ax for ax in fig.axes if ax.get_ylabel().endswith("height (px)"))


@pytest.mark.parametrize("runs", [1, 4])
def test_the_encoded_height_axis_is_inside_the_figure(competing: rtcbench.RunResult, runs: int) -> None:
    """Panel (d)'s right axis, its tick labels and its label, are drawn, not cut off at the edge."""
    columns = [
        RunColumn(f"cc{i}" if runs > 1 else "", competing.tables, competing.timeseries) for i in range(runs)
    ]
    fig = run_figure(columns, "5.6")
    canvas = fig.canvas
    assert isinstance(canvas, FigureCanvasAgg)
    renderer = canvas.get_renderer()
    fig.draw(renderer)
    box = _height_axis(fig).get_tightbbox(renderer)
    assert box is not None and box.x1 <= fig.bbox.x1 - 2, (box, fig.bbox)
    assert _height_axis(fig).yaxis.label.get_window_extent(renderer).x1 <= fig.bbox.x1


def test_runs_overview_is_the_report_figure_with_the_competing_tcp_flow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`rtcbench run` draws overview.png with `run_figure`, the report's own figure, so a TCP
    flow beside the call shows in both."""
    drawn: list[Figure] = []
    real = plots.run_figure

    def spy(columns: list[RunColumn], title: str) -> Figure:
        fig = real(columns, title)
        drawn.append(fig)
        return fig

    monkeypatch.setattr(plots, "run_figure", spy)
    result = rtcbench.run("rfc8867-5.6", "gcc", 1, tmp_path, ("queue=300ms", "tcp_cc=cubic", "duration=20s"))[
        0
    ]
    assert result.path is not None
    assert (result.path / "overview.png").read_bytes().startswith(PNG_MAGIC)
    assert len(drawn) == 1
    assert "TCP received" in _legend(drawn[0]) and "S1 target" in _legend(drawn[0])


def test_cdf_and_box_figures_take_any_number_of_series() -> None:
    rng = np.random.default_rng(3)
    delays = {"gcc": rng.exponential(20.0, 5_000), "nada": rng.exponential(8.0, 5_000), "scream": np.empty(0)}
    cdf = qdelay_cdf_figure(delays, "cdf")
    labels = [t.get_text() for t in cdf.axes[0].get_legend().get_texts()]
    assert labels[0].startswith("gcc (p50 13.8") and labels[2] == "scream: no packets"
    assert_rendered(cdf)
    # Given the numbers the tables show, the legend shows those rather than the pooled curve's.
    shown = qdelay_cdf_figure(delays, "cdf", {"gcc": (12.25, 61.04), "nada": (None, 20.0)})
    labels = [t.get_text() for t in shown.axes[0].get_legend().get_texts()]
    assert labels[:2] == ["gcc (p50 12.2, p95 61.0 ms)", "nada (p95 20.0 ms)"]
    panels = [
        BoxPanel(
            "utilisation",
            "ratio",
            {"gcc": [0.6, 0.62, 0.58], "nada": [0.7]},
            {"gcc": (0.58, 0.62), "nada": None},
        ),
        BoxPanel("loss", "%", {}, {}),
    ]
    box = repetitions_figure(panels, ["gcc", "nada"], "box")
    assert [ax.get_title() for ax in box.axes] == ["utilisation", "loss"]
    assert box.axes[0].get_ylim()[0] == 0.0, "a ratio's box plot starts at zero"
    # One box: nada's single run is a dot, with no box and no mean beside it.
    assert len(box.axes[0].patches) == 1
    assert_rendered(box)


def test_a_flow_is_drawn_while_it_runs_not_to_zero_after_it_stops(tmp_path: Path) -> None:
    # RFC 8867 §5.1's call stops at 99 s of 100: its sending rate must not fall to 0 at the end.
    (r,) = rtcbench.run("rfc8867-5.1", "gcc", out=tmp_path, sets=["delay=50ms", "mechanism=link-rate"])
    assert r.path is not None
    light, ts = figure_tables(r.path, r.summary["meta"])
    fig = run_figure([RunColumn("", light, ts)], "t")
    (sent,) = [ln for ln in fig.axes[0].get_lines() if ln.get_label() == "call0.video sent"]
    x = sent.get_xdata()
    assert max(x) < 99.0 and min(sent.get_ydata()) > 0.1  # Mbit/s, after the first window
