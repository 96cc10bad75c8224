"""The standard figure of a run, drawn from its trace tables and time series only.

One figure, three panels sharing the time axis, like the figures of the seed theses (seed 000 Fig.
6.2, seed 001 Fig. 5.1) and the "fine time granularity" views RFC 8867 §4.1 asks for: (a) rates
against the bottleneck capacity and the controller's target, (b) queuing delay, (c) loss. All look
choices live in `STYLE` and `PALETTE`, so every figure rtcbench draws looks the same.

The figure is built on a bare `Figure` with the Agg canvas: no pyplot, no global backend switch, no
display, safe in worker processes and in notebooks that use another backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib as mpl
import numpy as np
import numpy.typing as npt
import polars as pl
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from rtcbench.metrics import MEDIA_KINDS, VIDEO, Tables, packet_delays

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

__all__ = ["PALETTE", "STYLE", "plot_run"]

STYLE: dict[RcKeyType, Any] = {
    "figure.figsize": (10.0, 8.0),
    "figure.dpi": 120,
    "savefig.dpi": 120,
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 7.5,
    "legend.framealpha": 0.85,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
    "lines.linewidth": 1.2,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
"""rcParams every rtcbench figure is drawn with."""

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
"""Colours of media flows, in `meta.flows` order (colour-blind-safe first pairs)."""
CAPACITY_COLOR = "#222222"
CAPACITY_STYLES = ("-", "--", ":", "-.")
"""One line style per bottleneck link when media flows cross several."""

_MAX_SCATTER = 20_000
"""Per-packet points per flow in the delay panel; more adds ink and time, not information."""
_US_PER_S = 1e6
_HEADROOM = 1.3
"""Top of each panel above its data, so the legend (upper left) does not hide the curves."""


def _seconds(us: pl.Series) -> npt.NDArray[np.float64]:
    return us.cast(pl.Float64).to_numpy() / _US_PER_S


def _values(s: pl.Series, scale: float = 1.0) -> npt.NDArray[np.float64]:
    """Float values with nulls as NaN, which matplotlib draws as gaps."""
    return s.cast(pl.Float64).fill_null(np.nan).to_numpy() * scale


def _media_flows(t: Tables) -> list[dict[str, Any]]:
    return [f for f in t.meta["flows"] if f.get("kind") in MEDIA_KINDS]


def _flow_colors(flows: list[dict[str, Any]]) -> dict[int, str]:
    return {int(f["id"]): PALETTE[i % len(PALETTE)] for i, f in enumerate(flows)}


def _step_to_end(t_us: pl.Series, v: npt.NDArray[np.float64], end_s: float) -> tuple[Any, Any]:
    """Samples of a piecewise-constant signal, extended to the run end so the last level shows."""
    x = np.append(_seconds(t_us), end_s)
    y = np.append(v, v[-1] if v.size else np.nan)
    return x, y


def _headroom(ax: Axes) -> None:
    top = float(ax.dataLim.y1)
    ax.set_ylim(0.0, top * _HEADROOM if np.isfinite(top) and top > 0 else 1.0)


def _rates_panel(ax: Axes, t: Tables, ts: pl.DataFrame, flows: list[dict[str, Any]], window_s: float) -> None:
    end_s = float(t.meta["duration_s"])
    colors = _flow_colors(flows)
    links = list(dict.fromkeys(str(f["bottleneck"]) for f in flows if f.get("bottleneck") is not None))
    for i, link in enumerate(links):
        lk = t.links.filter(pl.col("link") == link).sort("t_us")
        if lk.height:
            x, y = _step_to_end(lk.get_column("t_us"), _values(lk.get_column("capacity_bps"), 1e-6), end_s)
            ax.step(
                x,
                y,
                where="post",
                color=CAPACITY_COLOR,
                linestyle=CAPACITY_STYLES[i % len(CAPACITY_STYLES)],
                linewidth=1.6,
                label=f"capacity ({link})",
            )
    calls = list(dict.fromkeys(int(f["call"]) for f in flows if f.get("call") is not None))
    for call in calls:
        ctrl = t.controller.filter(pl.col("call") == call).sort("t_us")
        if ctrl.height:
            first = next(f for f in flows if f.get("call") == call)
            x, y = _step_to_end(ctrl.get_column("t_us"), _values(ctrl.get_column("target_bps"), 1e-6), end_s)
            ax.step(
                x,
                y,
                where="post",
                color=colors[int(first["id"])],
                linestyle="--",
                linewidth=1.0,
                alpha=0.9,
                label=f"call{call} target",
            )
    for f in flows:
        fid, video = int(f["id"]), f.get("kind") == VIDEO
        w = ts.filter(pl.col("flow") == fid).sort("t_us")
        x = _seconds(w.get_column("t_us")) + window_s / 2
        lw = 1.3 if video else 0.7
        name = str(f.get("name", fid))
        ax.plot(
            x, _values(w.get_column("send_rate_bps"), 1e-6), color=colors[fid], lw=lw, label=f"{name} sent"
        )
        ax.plot(
            x,
            _values(w.get_column("recv_rate_bps"), 1e-6),
            color=colors[fid],
            lw=lw * 0.8,
            alpha=0.55,
            linestyle=":",
            label=f"{name} received",
        )
    ax.set_ylabel("rate (Mbit/s)")
    _headroom(ax)
    ax.set_title(f"(a) rates, {window_s * 1000:.0f} ms windows")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", ncol=3)


def _delay_panel(ax: Axes, t: Tables, ts: pl.DataFrame, flows: list[dict[str, Any]], window_s: float) -> None:
    colors = _flow_colors(flows)
    delays = packet_delays(t).select("flow", "t_us", "qdelay_ms")
    for f in flows:
        fid = int(f["id"])
        pk = delays.filter(pl.col("flow") == fid)
        if pk.height:
            pk = pk.gather_every(max(1, -(-pk.height // _MAX_SCATTER)))
            ax.scatter(
                _seconds(pk.get_column("t_us")),
                _values(pk.get_column("qdelay_ms")),
                s=1.5,
                color=colors[fid],
                alpha=0.12,
                linewidths=0,
                rasterized=True,
            )
        w = ts.filter(pl.col("flow") == fid).sort("t_us")
        x = _seconds(w.get_column("t_us")) + window_s / 2
        lw = 1.2 if f.get("kind") == VIDEO else 0.7
        ax.plot(
            x, _values(w.get_column("qdelay_ms")), color=colors[fid], lw=lw, label=f"{f.get('name')} mean"
        )
    ax.set_ylabel("queuing delay (ms)")
    _headroom(ax)
    ax.set_title("(b) queuing delay (owd - min owd): window mean, dots per packet")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", ncol=2)


def _loss_panel(ax: Axes, ts: pl.DataFrame, flows: list[dict[str, Any]], end_s: float) -> None:
    colors = _flow_colors(flows)
    for f in flows:
        fid = int(f["id"])
        w = ts.filter(pl.col("flow") == fid).sort("t_us")
        lw = 1.1 if f.get("kind") == VIDEO else 0.7
        x, y = _step_to_end(w.get_column("t_us"), _values(w.get_column("loss_ratio"), 100.0), end_s)
        ax.step(
            x,
            y,
            where="post",
            color=colors[fid],
            lw=lw,
            label=str(f.get("name", fid)),
        )
    ax.set_ylabel("loss (%)")
    _headroom(ax)
    ax.set_xlabel("time (s)")
    ax.set_title("(c) packets dropped / sent, by send time")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", ncol=2)


def plot_run(t: Tables, ts: pl.DataFrame, path: Path, title: str) -> None:
    """Write the standard PNG of a run to `path` (the caller picks the folder and renames it)."""
    flows = _media_flows(t)
    starts = ts.get_column("t_us").unique().sort()
    window_s = float(starts[1]) / _US_PER_S if starts.len() > 1 else float(t.meta["duration_s"])
    with mpl.rc_context(STYLE):
        fig = Figure()
        FigureCanvasAgg(fig)
        ax_rate, ax_delay, ax_loss = fig.subplots(3, 1, sharex=True, height_ratios=(2.2, 1.3, 1.0))
        # Fixed margins, not constrained/tight layout: those draw the figure twice (2x the time).
        fig.subplots_adjust(left=0.07, right=0.985, top=0.93, bottom=0.065, hspace=0.3)
        _rates_panel(ax_rate, t, ts, flows, window_s)
        _delay_panel(ax_delay, t, ts, flows, window_s)
        _loss_panel(ax_loss, ts, flows, float(t.meta["duration_s"]))
        ax_loss.set_xlim(0.0, float(t.meta["duration_s"]))
        if not flows:
            ax_rate.text(0.5, 0.5, "no media flows", transform=ax_rate.transAxes, ha="center", va="center")
        fig.suptitle(title)
        fig.savefig(path, format="png")
