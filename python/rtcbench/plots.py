"""Every figure rtcbench draws, from trace tables, time series and run summaries only.

The time figure of runs (`run_figure`) is the one figure of a run over time, like the figures of
the seed theses (Guerrero Viveros 2019 Fig. 6.2, Sjölund and Kevo 2022 Fig. 5.1; docs/references.md)
and the "fine time granularity" views RFC 8867 §4.1 asks for: (a) rates against the bottleneck
capacity and the calls' targets, with the competing TCP, CBR and UDP background traffic, (b)
queuing delay, (c) loss, (d) frame rate and encoded height. `rtcbench run` writes it for one run
as overview.png (`plot_run`); the report draws it for a case's controllers side by side. The
report also compares controllers across repetitions: queuing-delay CDFs (De Cicco et al. 2013
slides) and box plots of per-run values (Sjölund and Kevo 2022 §5.2, `qdelay_cdf_figure`,
`repetitions_figure`). All look choices live in `STYLE` and `PALETTE`, so every figure rtcbench
draws looks the same.

Figures are built on a bare `Figure` with the Agg canvas: no pyplot, no global backend switch, no
display, safe in worker processes and in notebooks that use another backend.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import matplotlib as mpl
import numpy as np
import numpy.typing as npt
import polars as pl
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Ellipse, Patch
from matplotlib.ticker import MaxNLocator
from PIL import Image

from rtcbench.analysis import active_span_us
from rtcbench.measure import scatter_sample
from rtcbench.stages import STAGE_COLUMNS, STAGES, stage_expressions
from rtcbench.tables import CROSS_KINDS, MEDIA_KINDS, VIDEO, Tables

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

__all__ = [
    "CONTROLLER_COLORS",
    "PALETTE",
    "STYLE",
    "STYLES",
    "AverageCurve",
    "BoxPanel",
    "FigureStyle",
    "Rendered",
    "RunColumn",
    "StageBar",
    "TradeoffSeries",
    "average_figure",
    "is_background",
    "plot_run",
    "qdelay_cdf_figure",
    "render",
    "repetitions_figure",
    "run_figure",
    "series_color",
    "shade",
    "shown_flows",
    "stage_figure",
    "tradeoff_figure",
]

STYLE: dict[RcKeyType, Any] = {
    "figure.figsize": (10.0, 8.0),
    # Line figures stay sharp at 90 dpi on screen (9 pt text is 11 px); 120 dpi made every PNG
    # twice the pixels for no detail a reader of the page can use.
    "figure.dpi": 90,
    "savefig.dpi": 90,
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 8.5,
    "legend.framealpha": 0.85,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
    "lines.linewidth": 1.2,
    "axes.spines.top": False,
    "axes.spines.right": False,
    # Titles at a fixed height: placing them above tick labels costs a third of a figure's time.
    "axes.titley": 1.0,
    "axes.titlepad": 3.0,
}
"""rcParams every rtcbench figure is drawn with."""

FigureStyle = Literal["screen", "paper"]
STYLES: dict[str, dict[RcKeyType, Any]] = {
    "screen": STYLE,
    "paper": {
        **STYLE,
        # Serif to sit with a paper's text; 300 dpi for a raster copy (vector output ignores it).
        "font.family": "serif",
        "font.serif": ["DejaVu Serif"],
        "mathtext.fontset": "dejavuserif",
        "figure.dpi": 300,
        "savefig.dpi": 300,
        "lines.linewidth": 1.0,
    },
}
"""rcParams per figure style: "screen" for pages and terminals, "paper" for print."""

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
"""The colours figures draw series in (colour-blind-safe first pairs); which series takes which is
fixed by name (`series_color`), never by position in a figure."""
CONTROLLER_COLORS = {
    "gcc": "#1f77b4",
    "gcc-draft": "#17becf",
    "nada": "#ff7f0e",
    "scream": "#2ca02c",
    "scream2": "#98df8a",
    "rtpgccbwe": "#9467bd",
    "fixed": "#8c564b",
}
"""Each built-in controller's colour in every figure: the same controller is the same colour in a
run's figure, a case's CDF, box plots and trade-off, and `rtcbench stacks`. Any other name (a
Python controller, a stack, a folder's label) takes a palette colour chosen by its name
(`series_color`)."""
_OTHER_COLORS = ("#d62728", "#e377c2", "#bcbd22", "#7f3c8d", "#3969ac", "#e68310")
"""Colours for names `CONTROLLER_COLORS` does not have: none of the built-ins', nor the competing
traffic's greys and olive."""


def series_color(label: str) -> str:
    """A series' colour, fixed by its name: a built-in controller's own (`CONTROLLER_COLORS`), also
    for a label that names one after a folder (`old/gcc`) or a stack (`gcc · chromium`), else one
    of `_OTHER_COLORS` chosen by a hash of the name, so a label has its colour in every figure
    whatever else the figure shows."""
    for part in re.split(r"[/ ·]+", label)[::-1]:
        if part in CONTROLLER_COLORS:
            return CONTROLLER_COLORS[part]
    digest = hashlib.sha256(label.encode()).digest()
    return _OTHER_COLORS[digest[0] % len(_OTHER_COLORS)]


def shade(color: str, k: int) -> str:
    """The `k`-th shade of `color`: itself for 0, then alternately darker and lighter, further each
    time: the calls of one run, or the folders of one controller, told apart within its hue."""
    if k == 0:
        return color
    rgb = np.array(mpl.colors.to_rgb(color))
    step = 0.22 * ((k + 1) // 2)
    mixed = rgb * (1 - step) if k % 2 else rgb + (1 - rgb) * step
    r, g, b = (float(x) for x in np.clip(mixed, 0.0, 1.0))
    return str(mpl.colors.to_hex((r, g, b)))


CAPACITY_COLOR = "#222222"
CAPACITY_STYLES = ("-", "--", ":", "-.")
"""One line style per bottleneck link when media flows cross several."""
CROSS_COLORS = {"tcp": "#7f7f7f", "cbr": "#bcbd22"}
"""Competing traffic, one line per kind (all flows of the kind summed)."""
BACKGROUND_COLOR = "#9a9a9a"
"""A link's UDP background flow (dash-dot), one line per link."""
EXPORT_STYLE: dict[RcKeyType, Any] = {
    # Text stays text in SVG: smaller files, and editable when a figure goes into a paper.
    "svg.fonttype": "none",
    # Fixed ids inside the SVG, so the same figure gives the same bytes.
    "svg.hashsalt": "rtcbench",
    # Merge path vertices within 0.5 px of a straight line (default 1/9 px): invisible at the
    # figures' 90 dpi, and a third fewer vertices in a 300 s run's SVG.
    "path.simplify_threshold": 0.5,
}
"""rcParams in force when a figure is saved as PNG and SVG (`render`)."""

_US_PER_S = 1e6


def _seconds(us: pl.Series) -> npt.NDArray[np.float64]:
    return us.cast(pl.Float64).to_numpy() / _US_PER_S


def _values(s: pl.Series, scale: float = 1.0) -> npt.NDArray[np.float64]:
    """Float values with nulls as NaN, which matplotlib draws as gaps."""
    return s.cast(pl.Float64).fill_null(np.nan).to_numpy() * scale


def _media_flows(meta: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [f for f in meta["flows"] if f.get("kind") in MEDIA_KINDS]


def _flow_colors(flows: list[dict[str, Any]], controller: str) -> dict[int, str]:
    """A run's media flows in its controller's colour, one shade per call (`shade`): a call's video
    and audio share it and are told apart by their lines (the video's thicker)."""
    calls = list(dict.fromkeys(f.get("call") for f in flows))
    base = series_color(controller)
    return {int(f["id"]): shade(base, calls.index(f.get("call"))) for f in flows}


def _step_to_end(t_us: pl.Series, v: npt.NDArray[np.float64], end_s: float) -> tuple[Any, Any]:
    """Samples of a piecewise-constant signal, extended to the run end so the last level shows."""
    x = np.append(_seconds(t_us), end_s)
    y = np.append(v, v[-1] if v.size else np.nan)
    return x, y


def is_background(flow: Mapping[str, Any]) -> bool:
    """A link's UDP background flow (RFC 8867 §4.2): it *makes* the capacity the links table
    shows (docs/traces.md, `meta`), so tables leave it out; the run figure draws it."""
    return flow.get("workload") == "udp-background" or (
        # Runs written before meta recorded the workload.
        "workload" not in flow and str(flow.get("name", "")).endswith(".udp-background")
    )


def shown_flows(meta_flows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The flows report tables show: media, and competing TCP/CBR traffic. RTCP and TCP's ACKs
    are parts of other flows, and a link's UDP background makes the capacity (`is_background`)."""
    return [
        f
        for f in meta_flows
        if f.get("kind") in MEDIA_KINDS or (f.get("kind") in CROSS_KINDS and not is_background(f))
    ]


@dataclass(frozen=True)
class RunColumn:
    """One run in `run_figure`: its column title (the controller; empty for a figure of one run),
    its tables (links, controller, frames and meta; packets are not read), its time series, and
    optionally each media flow's per-packet queuing delays sampled by `measure.scatter_sample`
    (drawn as dots in panel b when a run has them at hand, as `rtcbench run` has)."""

    label: str
    tables: Tables
    timeseries: pl.DataFrame
    delays: pl.DataFrame | None = None


COLUMNS_PER_ROW = 4
"""Runs side by side in `run_figure`; more wrap into further rows (several folders)."""
_FPS_SMOOTH_S = 1.0
"""The frame-rate panel averages the windows' frame rates over 1 s: a 200 ms window holds only
six frames at 30 fps, so its rate moves in steps of 5 frame/s."""
_HEIGHT_MAX_PX = 800
"""Top of the encoded-height axis: the ladder's largest rung is 720p."""

# Layout in inches, with fixed margins: constrained or tight layout draws a figure twice.
_PANEL_IN = {
    "rates": 2.1,
    "calls": 1.3,
    "estimator": 1.3,
    "delay": 1.3,
    "loss": 0.85,
    "frames": 1.0,
    "stages": 1.1,
}
CALLS_PANEL_BELOW = 0.25
"""Panel (a′), the calls on their own scale, is drawn when their largest rate is below this share
of panel (a)'s scale: beside 100 Mbit/s of TCP a 1 Mbit/s call is a line at zero."""
_ROW_TITLE_IN, _COLUMN_TITLE_IN, _GROUP_GAP_IN = 0.26, 0.22, 0.25
_LEFT_IN, _RIGHT_IN, _TWIN_IN, _COLUMN_GAP_IN = 0.62, 0.15, 0.62, 0.22
_SUPTITLE_IN, _LEGEND_LINE_IN, _BOTTOM_IN = 0.36, 0.185, 0.5
_ONE_RUN_WIDTH_IN, _RUNS_WIDTH_IN, _LEGEND_ENTRY_IN = 10.0, 13.2, 2.45
_PAPER_WIDTH_IN = 7.16
"""The paper style's width: a two-column page's full text width (IEEE), so the figure goes in at
its size and its 9 pt text stays 9 pt."""
_GRID: dict[str, Any] = {"color": "#b0b0b0", "linewidth": 0.6, "alpha": 0.5}
_FRAME: dict[str, Any] = {"color": "#000000", "linewidth": 0.8, "clip_on": False}


@dataclass
class _Run:
    """A column's data, split once by flow, and where the column starts on the shared time axis
    (`shift_s`)."""

    column: RunColumn
    shift_s: float
    end_s: float
    window_s: float
    flows: list[dict[str, Any]]  # media
    colors: dict[int, str]
    by_flow: dict[int, pl.DataFrame]

    @classmethod
    def of(cls, column: RunColumn) -> _Run:
        meta = column.tables.meta
        flows = _media_flows(meta)
        ts = column.timeseries
        starts = ts.get_column("t_us").unique().sort() if ts.height else pl.Series([], dtype=pl.Int64)
        end_s = float(meta["duration_s"])
        window_s = float(starts[1]) / _US_PER_S if starts.len() > 1 else end_s
        # Each flow is drawn while its source runs: a call that stops at 99 s does not end on a
        # drop to zero in its last windows (analysis.active_span_us).
        duration_us = round(end_s * _US_PER_S)
        spans = {int(f["id"]): active_span_us(f, duration_us) for f in meta["flows"]}
        by_flow = {}
        for k, v in ts.partition_by("flow", as_dict=True).items():
            start, stop = spans.get(int(k[0]), (0, duration_us))
            by_flow[int(k[0])] = v.filter(pl.col("t_us").is_between(start, stop, closed="left")).sort("t_us")
        colors = _flow_colors(flows, str(meta.get("controller") or column.label))
        return cls(column, 0.0, end_s, window_s, flows, colors, by_flow)

    def series(self, fid: int) -> pl.DataFrame:
        return self.by_flow.get(fid, self.column.timeseries.clear())

    def at(self, us: pl.Series) -> npt.NDArray[np.float64]:
        """Where times (µs into the run) are on the figure's x axis: in seconds, shifted to the column."""
        return _seconds(us) + self.shift_s

    def mid(self, w: pl.DataFrame) -> npt.NDArray[np.float64]:
        """Window midpoints."""
        return self.at(w.get_column("t_us")) + self.window_s / 2

    def steps(self, us: pl.Series, v: npt.NDArray[np.float64]) -> tuple[Any, Any]:
        """Samples of a piecewise-constant signal, extended to the run end so the last level shows."""
        x = np.append(self.at(us), self.shift_s + self.end_s)
        return x, np.append(v, v[-1] if v.size else np.nan)


def _rates_panel(ax: Axes, run: _Run) -> None:
    """(a) capacity, each call's target, each media flow's sending (solid) and receive (dotted)
    rate, and the competing traffic: TCP and CBR summed per kind, each link's UDP background.
    A link's capacity where it has one. A radio hop has none: the estimate of what its airtime or
    PRBs could have given a flow (docs/metrics.md, "Utilisation") follows the node's own traffic
    (seed000-5.3.8, stations at A, seed 1: 71 Mbit/s for the downlink call alone, 100 once a
    download joins it, whose aggregates use the air better), so it is not drawn as if it were a
    capacity (docs/compare.md)."""
    t, flows = run.column.tables, run.flows
    links = list(dict.fromkeys(str(f["bottleneck"]) for f in flows if f.get("bottleneck") is not None))
    for i, link in enumerate(links):
        lk = t.links.filter(pl.col("link") == link).sort("t_us") if t.links.height else t.links
        capacity = _values(lk.get_column("capacity_bps"), 1e-6) if lk.height else np.empty(0)
        # A radio hop's row has no capacity of its own: no line, and no legend entry for one.
        if np.isfinite(capacity).any():
            x, y = run.steps(lk.get_column("t_us"), capacity)
            style = CAPACITY_STYLES[i % len(CAPACITY_STYLES)]
            ax.step(x, y, where="post", color=CAPACITY_COLOR, ls=style, lw=1.5, label=f"capacity ({link})")
    _call_lines(ax, run)
    _competing_lines(ax, run)


def _call_lines(ax: Axes, run: _Run) -> None:
    """Each call's target (dashed), each media flow's sending (solid) and receive (dotted) rate;
    the panel is scaled to the sending rates, so a target or a burst of arrivals far above them is
    cut at its top."""
    t, flows, colors = run.column.tables, run.flows, run.colors
    calls = {int(c["id"]): str(c.get("name", c["id"])) for c in t.meta.get("calls", [])}
    for call in dict.fromkeys(int(f["call"]) for f in flows if f.get("call") is not None):
        ctrl = (
            t.controller.filter(pl.col("call") == call).sort("t_us") if t.controller.height else t.controller
        )
        if ctrl.height:
            color = colors[next(int(f["id"]) for f in flows if f.get("call") == call)]
            x, y = run.steps(ctrl.get_column("t_us"), _values(ctrl.get_column("target_bps"), 1e-6))
            name = calls.get(call, f"call {call}")
            ax.step(x, y, where="post", color=color, ls="--", lw=1.0, label=f"{name} target")
    for f in flows:
        fid = int(f["id"])
        w, lw = run.series(fid), 1.3 if f.get("kind") == VIDEO else 0.7
        x = run.mid(w)
        ax.plot(
            x,
            _values(w.get_column("send_rate_bps"), 1e-6),
            color=colors[fid],
            lw=lw,
            label=f"{f['name']} sent",
        )
        ax.plot(
            x, _values(w.get_column("recv_rate_bps"), 1e-6), color=colors[fid], lw=lw * 0.8, alpha=0.6, ls=":"
        )


def _media_peak(run: _Run, *, sent_only: bool = False) -> float:
    """The largest rate `_call_lines` draws (Mbit/s): the media flows' and the calls' targets;
    `sent_only`: the media flows' sending rates alone."""
    t = run.column.tables
    peaks = [0.0]
    for f in run.flows:
        w = run.series(int(f["id"]))
        for col in ("send_rate_bps",) if sent_only else ("send_rate_bps", "recv_rate_bps"):
            v = _values(w.get_column(col), 1e-6) if w.height else np.empty(0)
            peaks += [float(np.nanmax(v))] if np.isfinite(v).any() else []
    if not sent_only and t.controller.height:
        v = _values(t.controller.get_column("target_bps"), 1e-6)
        peaks += [float(np.nanmax(v))] if np.isfinite(v).any() else []
    return max(peaks)


def _competing_lines(ax: Axes, run: _Run) -> None:
    """The competing traffic: TCP and CBR received, summed per kind; each link's UDP background."""
    t = run.column.tables
    competing = [f for f in t.meta["flows"] if f.get("kind") in CROSS_KINDS]
    groups: list[tuple[str, str, str, list[int]]] = []
    for kind in CROSS_KINDS:
        ids = [int(f["id"]) for f in competing if f.get("kind") == kind and not is_background(f)]
        if ids:
            n = f" ({len(ids)} flows)" if len(ids) > 1 else ""
            groups.append((f"{kind.upper()}{n} received", CROSS_COLORS[kind], "-", ids))
    for f in competing:
        if is_background(f):
            link = str(f["name"]).removesuffix(".udp-background")
            groups.append((f"UDP background ({link}) received", BACKGROUND_COLOR, "-.", [int(f["id"])]))
    for label, color, style, ids in groups:
        parts = [run.by_flow[i] for i in ids if i in run.by_flow]
        if parts:
            w = pl.concat(parts).group_by("t_us").agg(pl.col("recv_rate_bps").sum()).sort("t_us")
            ax.plot(
                run.mid(w),
                _values(w.get_column("recv_rate_bps"), 1e-6),
                color=color,
                lw=1.0,
                ls=style,
                label=label,
            )


def _delay_panel(ax: Axes, run: _Run) -> None:
    """(b) queuing delay: window mean per media flow (solid), window p95 per video flow (dashed),
    and per-packet dots where the run has them (`RunColumn.delays`)."""
    delays = run.column.delays
    for f in run.flows:
        fid, color = int(f["id"]), run.colors[int(f["id"])]
        if delays is not None:
            pk = scatter_sample(delays.filter(pl.col("flow") == fid))
            if pk.height:
                x, y = run.at(pk.get_column("t_us")), _values(pk.get_column("qdelay_ms"))
                ax.scatter(x, y, s=1.5, color=color, alpha=0.12, linewidths=0, rasterized=True)
        w, video = run.series(fid), f.get("kind") == VIDEO
        x = run.mid(w)
        ax.plot(x, _values(w.get_column("qdelay_ms")), color=color, lw=1.2 if video else 0.7)
        if video:
            ax.plot(x, _values(w.get_column("qdelay_p95_ms")), color=color, lw=0.7, alpha=0.6, ls="--")


def _loss_panel(ax: Axes, run: _Run) -> None:
    """(c) packets dropped / sent per window, by send time."""
    for f in run.flows:
        fid = int(f["id"])
        w = run.series(fid)
        x, y = run.steps(w.get_column("t_us"), _values(w.get_column("loss_ratio"), 100.0))
        ax.step(x, y, where="post", color=run.colors[fid], lw=1.1 if f.get("kind") == VIDEO else 0.7)


def _frames_panel(ax: Axes, run: _Run, height: Axes) -> None:
    """(d) frames completed at the receiver per second (1 s mean) per video flow, freezes as
    ticks, and on `height` (a second axis) the height each frame was encoded at: the resolution
    ladder (rtcbench_media::resolution), as Guerrero Viveros 2019 reports FW and FH beside the frame rate."""
    frames = run.column.tables.frames
    k = max(1, round(_FPS_SMOOTH_S / run.window_s)) if run.window_s > 0 else 1
    for f in run.flows:
        if f.get("kind") != VIDEO:
            continue
        fid, color = int(f["id"]), run.colors[int(f["id"])]
        w = run.series(fid)
        fps = w.get_column("fps").cast(pl.Float64).rolling_mean(window_size=k, min_samples=1)
        ax.plot(run.at(w.get_column("t_us")) + k * run.window_s / 2, _values(fps), color=color, lw=1.1)
        if not frames.height:
            continue
        done = frames.filter((pl.col("flow") == fid) & pl.col("complete_us").is_not_null()).sort(
            "complete_us"
        )
        frozen = done.filter(pl.col("freeze"))
        if frozen.height:
            x = run.at(frozen.get_column("complete_us"))
            ax.plot(x, np.zeros(frozen.height), ls="none", marker="|", markersize=9, color=color)
        if done.height and "height" in done.columns:
            x = run.at(done.get_column("complete_us"))
            height.step(x, done.get_column("height").to_numpy(), where="post", color=color, lw=0.9, ls="--")


STAGE_COLORS = ("#00224e", "#35456c", "#666970", "#948e77", "#c8b866", "#fee838")
"""The stages of a frame's delay (`rtcbench.stages.STAGES`, in order), from cividis: a sequence of
muted tones that no controller's colour is."""


def _stages_panel(ax: Axes, run: _Run) -> None:
    """(e) where the video's frames waited: per second, the mean of each stage of the delay of the
    frames rendered in it (`rtcbench.stages`), stacked, so the top is the mean frame delay."""
    frames = run.column.tables.frames
    if not frames.height or not set(STAGE_COLUMNS) <= set(frames.columns):
        return
    rendered = frames.filter(pl.col("render_us").is_not_null()).with_columns(
        stage_expressions(frames.columns)
    )
    per_s = (
        rendered.with_columns(second=pl.col("render_us") // 1_000_000)
        .group_by("second")
        .agg(pl.col([st.name for st in STAGES]).mean().fill_null(0.0))
        .sort("second")
    )
    if not per_s.height:
        return
    x = per_s.get_column("second").cast(pl.Float64).to_numpy() + run.shift_s
    ys = [per_s.get_column(st.name).to_numpy() for st in STAGES]
    ax.stackplot(x, *ys, colors=STAGE_COLORS, step="post", linewidth=0, labels=[st.title for st in STAGES])
    if run.shift_s == 0:
        ax.legend(loc="upper left", ncol=3, fontsize="x-small", frameon=False)


ESTIMATOR_COLUMNS = ("delay_based_bps", "detector_state", "probe_bps")
"""A controller table with these columns (a run read from an RTC event log, docs/eventlog.md)
shows its estimator's decisions in panel (a″)."""
_OVERUSE_COLOR = "#d62728"


def _estimator_panel(ax: Axes, run: _Run) -> None:
    """(a″) a bandwidth estimator's own decisions, where its controller table has them
    (`ESTIMATOR_COLUMNS`): the delay-based estimate (solid), the target (dashed), each probe's
    result (a cross) and the spans its over-use detector said over-using (shaded)."""
    c = run.column.tables.controller
    if not c.height or not set(ESTIMATOR_COLUMNS) <= set(c.columns):
        return
    color = next(iter(run.colors.values()), "#444444")
    for call, rows in c.sort("t_us").partition_by("call", as_dict=True, maintain_order=True).items():
        first = call == next(iter(c.get_column("call").unique(maintain_order=True)))
        delay = rows.filter(pl.col("delay_based_bps").is_not_null())
        if delay.height:
            x, y = run.steps(delay.get_column("t_us"), _values(delay.get_column("delay_based_bps"), 1e-6))
            ax.step(x, y, where="post", color=color, lw=1.1, label="delay-based estimate" if first else None)
        x, y = run.steps(rows.get_column("t_us"), _values(rows.get_column("target_bps"), 1e-6))
        ax.step(x, y, where="post", color=color, lw=0.9, ls="--", alpha=0.8)
        probes = rows.filter(pl.col("probe_bps").is_not_null())
        if probes.height:
            ax.scatter(
                run.at(probes.get_column("t_us")), _values(probes.get_column("probe_bps"), 1e-6),
                marker="x", s=28, color="#000000", lw=1.0, zorder=3, label="probe result" if first else None,
            )  # fmt: skip
        state = rows.select("t_us", over=pl.col("detector_state") == "overusing")
        changes = state.filter(pl.col("over") != pl.col("over").shift(1, fill_value=False))
        edges = [*changes.iter_rows(), (round(run.end_s * _US_PER_S), False)]
        for (start, over), (end, _) in itertools.pairwise(edges):
            if over:
                ax.axvspan(
                    run.shift_s + start / _US_PER_S, run.shift_s + end / _US_PER_S, color=_OVERUSE_COLOR,
                    alpha=0.18, lw=0, label="over-using" if first else None,
                )  # fmt: skip
                first = False


_ROWS: dict[str, tuple[str, str, Callable[[Axes, _Run], None] | None]] = {
    "rates": (
        "Mbit/s",
        "(a) rates, {window} windows: solid sent, dotted received, dashed the call's target",
        _rates_panel,
    ),
    "calls": ("Mbit/s", "(a′) the calls alone, on their own scale", _call_lines),
    "estimator": (
        "Mbit/s",
        "(a″) the estimator: delay-based estimate, dashed the target; crosses: probe results; "
        "shaded: over-using",
        _estimator_panel,
    ),
    "delay": (
        "queuing delay (ms)",
        "(b) queuing delay (owd - min owd): window mean; dashed: video window p95",
        _delay_panel,
    ),
    "loss": ("loss (%)", "(c) packets dropped / sent, by send time", _loss_panel),
    "frames": (
        "frame/s",
        "(d) frames completed at the receiver, {smooth} mean; ticks: freezes; dashed, right: encoded height",
        None,  # drawn with its second axis
    ),
    "stages": (
        "frame delay (ms)",
        "(e) frame delay by stage, 1 s means: encoder, sender queue, network, repair, jitter buffer, decoder",
        _stages_panel,
    ),
}
"""Per panel: y label, title, and what draws one run into it."""


def _small_multiples(ax: Axes, runs: Sequence[_Run], span_s: float, xticks: Sequence[float]) -> None:
    """Draws on `ax` (one panel row, its runs side by side on one x axis) each run's frame and
    grid over its own stretch of x, so the row reads as small multiples sharing one y scale.

    One axes per row, not per run: matplotlib's per-axes ticks and artists were most of the
    figure's time (twenty axes for four runs), and one y axis is what makes runs comparable."""
    ax.grid(False)
    for side in ("left", "bottom"):
        ax.spines[side].set_visible(False)
    bottom, top = ax.get_ylim()
    yticks = [y for y in ax.get_yticks() if bottom <= y <= top]
    ax.set_yticks(yticks)
    starts = [r.shift_s for r in runs]
    xs = [s + x for s in starts for x in xticks]
    ax.vlines(xs, bottom, top, **_GRID)
    ax.hlines(
        [y for y in yticks for _ in starts], [s for _ in yticks for s in starts],
        [s + span_s for _ in yticks for s in starts], **_GRID,
    )  # fmt: skip
    ax.vlines(starts, bottom, top, **_FRAME)
    ax.hlines([bottom] * len(starts), starts, [s + span_s for s in starts], **_FRAME)


def _has(df: pl.DataFrame, column: str) -> bool:
    """Whether `df` has a value in `column`."""
    return column in df.columns and df.get_column(column).is_not_null().any()


def run_figure(columns: Sequence[RunColumn], title: str, *, style: FigureStyle = "screen") -> Figure:
    """The time figure of runs, side by side, each panel on one scale across them so controllers
    compare at a glance, from the time series, links, controller and frames tables (no packets:
    a suite's packet tables are most of its bytes). As Guerrero Viveros 2019 Fig. 6.2 and
    Sjölund and Kevo 2022 Fig. 5.1, with RFC 8867 §4.1's fine time granularity: (a) capacity,
    each call's target, each media flow's sending and receive rate, and the competing TCP, CBR
    and UDP background traffic;
    (b) queuing delay; (c) loss; (d) with video, frame rate, freezes and encoded height. Curves
    are named as in the scenario ("S1 target", "S1.video sent").

    `rtcbench run`'s overview.png is this figure of one run (`plot_run`); the report's time
    figure of a case is this figure of each controller's first seed. `style` "paper" draws it
    for print (`STYLES`): as wide as a page's text, serif, for 300 dpi or vector output."""
    if not columns:
        raise ValueError("no run to draw")
    runs = [_Run.of(c) for c in columns]
    # Panel (d) for video whose frames were seen (a run read from a log has none).
    video = any(f.get("kind") == VIDEO for r in runs for f in r.flows) and any(
        r.column.tables.frames.height or _has(r.column.timeseries, "fps") for r in runs
    )
    staged = video and any(set(STAGE_COLUMNS) <= set(r.column.tables.frames.columns) for r in runs)
    estimated = any(set(ESTIMATOR_COLUMNS) <= set(r.column.tables.controller.columns) for r in runs)
    panels = [
        "rates",
        "calls",
        *(["estimator"] if estimated else []),
        "delay",
        "loss",
        *(["frames"] if video else []),
        *(["stages"] if staged else []),
    ]
    # As few rows as COLUMNS_PER_ROW allows, filled evenly (six runs: two rows of three).
    per_row = -(-len(runs) // -(-len(runs) // COLUMNS_PER_ROW))
    groups = [runs[i : i + per_row] for i in range(0, len(runs), per_row)]
    titled = any(c.label for c in columns)
    width = _ONE_RUN_WIDTH_IN if per_row == 1 else _RUNS_WIDTH_IN
    if style == "paper":
        width = _PAPER_WIDTH_IN
    axes_w = width - _LEFT_IN - (_TWIN_IN if video else _RIGHT_IN)
    col_w = (axes_w - _COLUMN_GAP_IN * (per_row - 1)) / per_row
    span_s = max(r.end_s for r in runs)
    gap_s = span_s * _COLUMN_GAP_IN / col_w
    for i, run in enumerate(runs):
        run.shift_s = (i % per_row) * (span_s + gap_s)
    xlim = (0.0, per_row * span_s + (per_row - 1) * gap_s)
    xticks = [
        float(x) for x in MaxNLocator(6 if per_row == 1 else 4).tick_values(0.0, span_s) if 0 <= x <= span_s
    ]
    window = f"{runs[0].window_s * 1000:.0f} ms"
    with mpl.rc_context(STYLES[style]):
        fig = Figure(figsize=(width, 1.0))
        FigureCanvasAgg(fig)
        rows: list[tuple[list[_Run], dict[str, Axes]]] = []
        for group in groups:
            axes: dict[str, Axes] = {}
            for p in panels:
                ax = fig.add_axes((0.0, 0.0, 1.0, 1.0), sharey=rows[0][1][p] if rows else None, label=p)
                draw = _ROWS[p][2]
                for run in group:
                    if draw is not None:
                        draw(ax, run)
                axes[p] = ax
            if video:
                height = axes["frames"].twinx()
                for run in group:
                    _frames_panel(axes["frames"], run, height)
                height.set_ylim(0, _HEIGHT_MAX_PX)
                height.yaxis.set_major_locator(MaxNLocator(4))
                height.set_ylabel("height (px)")
                height.grid(False)
                axes["height"] = height
            rows.append((group, axes))
        # (a′) only where the calls would be a line at zero in (a).
        rates_peak = max(
            (float(axes["rates"].dataLim.y1) for _, axes in rows if axes["rates"].has_data()), default=0
        )
        media_peak = max(_media_peak(r) for r in runs)
        if not (np.isfinite(rates_peak) and 0 < media_peak < CALLS_PANEL_BELOW * rates_peak):
            panels.remove("calls")
            for _, axes in rows:
                axes.pop("calls").remove()
        group_h = (_COLUMN_TITLE_IN if titled else 0.0) + sum(_PANEL_IN[p] + _ROW_TITLE_IN for p in panels)
        handles: dict[str, Any] = {}
        for _, axes in rows:
            for h, label in zip(*axes["rates"].get_legend_handles_labels(), strict=True):
                handles.setdefault(label, h)
        ncol = max(1, min(len(handles), int(width / _LEGEND_ENTRY_IN)))
        top_in = _SUPTITLE_IN + ((-(-len(handles) // ncol)) * _LEGEND_LINE_IN + 0.1 if handles else 0.0)
        height_in = top_in + len(groups) * group_h + (len(groups) - 1) * _GROUP_GAP_IN + _BOTTOM_IN
        fig.set_size_inches(width, height_in)
        for p in panels:
            tops = [float(axes[p].dataLim.y1) for _, axes in rows if axes[p].has_data()]
            peak = max(tops, default=0.0)
            if p == "calls":
                # On the scale of what the calls send: an estimate above what the encoder can send
                # (GoogCC's in a call with audio has no ceiling, docs/controllers/gcc.md), or a
                # queue delivered at once after a stall, leaves the panel's top.
                sent = max(_media_peak(r, sent_only=True) for r in runs)
                peak = min(peak, 1.1 * sent) if sent > 0 else peak
            rows[0][1][p].set_ylim(0.0, peak * 1.05 if np.isfinite(peak) and peak > 0 else 1.0)
        y = height_in - top_in
        for g, (group, axes) in enumerate(rows):
            y -= _GROUP_GAP_IN if g else 0.0
            if titled:
                y -= _COLUMN_TITLE_IN
                for run in group:
                    x = _LEFT_IN + (run.shift_s + span_s / 2) / xlim[1] * axes_w
                    fig.text(x / width, (y + 0.05) / height_in, run.column.label, ha="center", weight="bold")
            for n, p in enumerate(panels):
                y -= _ROW_TITLE_IN
                text = _ROWS[p][1].format(window=window, smooth=f"{_FPS_SMOOTH_S:g} s")
                fig.text(_LEFT_IN / width, (y + 0.06) / height_in, text, size=mpl.rcParams["axes.titlesize"])
                y -= _PANEL_IN[p]
                box = (_LEFT_IN / width, y / height_in, axes_w / width, _PANEL_IN[p] / height_in)
                ax = axes[p]
                ax.set_position(box)
                ax.set_xlim(*xlim)
                ax.set_ylabel(_ROWS[p][0])
                ax.yaxis.set_major_locator(MaxNLocator(4))
                last = n == len(panels) - 1
                ax.set_xticks([r.shift_s + x for r in group for x in xticks] if last else [])
                if last:
                    ax.set_xticklabels([f"{x:g}" for _ in group for x in xticks])
                _small_multiples(ax, group, span_s, xticks)
                if p == "frames":
                    axes["height"].set_position(box)
            if not any(r.flows for r in group):
                axes["rates"].text(0.5, 0.5, "no media flows", transform=axes["rates"].transAxes, ha="center")
        fig.text(0.5, 0.1 / height_in, "time (s)", ha="center", va="bottom")
        fig.suptitle(title, y=1 - 0.08 / height_in, va="top")
        if handles:
            fig.legend(
                list(handles.values()), list(handles), loc="upper center", ncol=ncol, frameon=False,
                bbox_to_anchor=(0.5, 1 - _SUPTITLE_IN / height_in), borderaxespad=0.0, columnspacing=1.2,
            )  # fmt: skip
    return fig


def plot_run(t: Tables, ts: pl.DataFrame, path: Path, title: str, delays: pl.DataFrame | None = None) -> None:
    """Writes `run_figure` of one run as a PNG to `path` (`rtcbench run`'s overview.png; the caller
    picks the folder and renames it). `delays`: the media flows' per-packet queuing delays sampled
    by `scatter_sample`, when the run has them at hand."""
    path.write_bytes(render(run_figure([RunColumn("", t, ts, delays)], title)).png)


_CDF_POINTS = 600
"""Points per CDF curve: quantiles at evenly spaced probabilities. A suite's pooled packets are
hundreds of thousands per controller; the curve needs no more than a figure has pixels."""


def _series_colors(labels: Sequence[str]) -> dict[str, str]:
    """Each label's colour (`series_color`); labels of one colour (one controller in several
    folders) take its shades in turn."""
    bases = [series_color(label) for label in labels]
    return {
        label: shade(base, bases[:i].count(base))
        for i, (label, base) in enumerate(zip(labels, bases, strict=True))
    }


def qdelay_cdf_figure(
    delays: Mapping[str, npt.NDArray[np.float64]],
    title: str,
    quantiles: Mapping[str, tuple[float | None, float | None]] | None = None,
) -> Figure:
    """Empirical CDFs of per-packet queuing delay, one curve per controller (the CDFs of
    Qb = RTT - RTTm in De Cicco et al. 2013 slides; here owd - min owd of each flow,
    docs/metrics.md). `delays` maps a label to every delay sample it pooled (ms); an empty array is
    listed as "no packets". The legend gives each label's p50 and p95 from `quantiles` where given:
    the report's (the mean over runs of each run's, the number every table and sentence shows),
    not the pooled curve's own."""
    labels = list(delays)
    colors = _series_colors(labels)
    probs = np.linspace(0.0, 1.0, _CDF_POINTS)
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(6.4, 5.5))
        FigureCanvasAgg(fig)
        ax = fig.subplots()
        fig.subplots_adjust(left=0.1, right=0.98, top=0.93, bottom=0.1)
        for label in labels:
            d = delays[label]
            d = d[np.isfinite(d)]
            if d.size == 0:
                ax.plot([], [], color=colors[label], label=f"{label}: no packets")
                continue
            q = np.quantile(d, probs)
            given = (quantiles or {}).get(label)
            p50: float | None
            p95: float | None
            if given is None or given == (None, None):
                p50, p95 = (float(x) for x in np.quantile(d, [0.5, 0.95]))
            else:
                p50, p95 = given
            said = ", ".join(f"{name} {v:.1f}" for name, v in (("p50", p50), ("p95", p95)) if v is not None)
            ax.step(q, probs, where="post", color=colors[label], label=f"{label} ({said} ms)")
        ax.set_xlabel("queuing delay (ms)")
        ax.set_ylabel("CDF")
        ax.set_ylim(0.0, 1.02)
        ax.set_xlim(left=0.0)
        ax.set_title(title)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="lower right")
    return fig


@dataclass(frozen=True)
class BoxPanel:
    """One panel of `repetitions_figure`: per label, one value per run; `ci` per label holds the
    95 % confidence interval of the mean, or None where it cannot be had (fewer than two runs)."""

    title: str
    ylabel: str
    values: Mapping[str, Sequence[float]]
    ci: Mapping[str, tuple[float, float] | None]


def repetitions_figure(panels: Sequence[BoxPanel], labels: Sequence[str], title: str) -> Figure:
    """Box plots over repetitions, one panel per metric and one box per label, as Sjölund and Kevo 2022 §5.2
    draws utilisation, latency, responsiveness and loss: box from the first to the third quartile,
    median line, whiskers to the furthest run within 1.5 IQR, every run as a dot, and beside each
    box the mean with its 95 % confidence interval (diamond and bar). A label with one run shows
    its dot alone."""
    colors = _series_colors(labels)
    # Two panels a row: the figure is as wide as the CDF beside it in the report.
    cols = min(2, max(1, len(panels)))
    rows = -(-max(1, len(panels)) // cols)
    rotate = len(labels) > 3 or max((len(label) for label in labels), default=0) > 10
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(6.4, 0.6 + 2.45 * rows))
        FigureCanvasAgg(fig)
        axes = list(fig.subplots(rows, cols, squeeze=False).flat)
        fig.subplots_adjust(
            left=0.1, right=0.98, top=1 - 0.62 / fig.get_figheight(), bottom=0.12 if rotate else 0.07,
            wspace=0.32, hspace=0.75 if rotate else 0.45,
        )  # fmt: skip
        for ax in axes[len(panels) :]:
            ax.set_visible(False)
        for ax, panel in zip(axes, panels, strict=False):
            positions = np.arange(1, len(labels) + 1, dtype=float)
            data = [np.asarray(panel.values.get(label, ()), dtype=float) for label in labels]
            data = [d[np.isfinite(d)] for d in data]
            present = [i for i, d in enumerate(data) if d.size]
            # A box and a mean need repetitions: a label with one run has its dot only.
            boxed = [i for i in present if data[i].size > 1]
            if boxed:
                box = ax.boxplot(
                    [data[i] for i in boxed],
                    positions=positions[boxed],
                    widths=0.45,
                    showfliers=False,
                    patch_artist=True,
                    medianprops={"color": "#000000", "linewidth": 1.2},
                )
                for i, patch in zip(boxed, box["boxes"], strict=True):
                    patch.set_facecolor(colors[labels[i]])
                    patch.set_alpha(0.35)
            if present:
                for i in present:
                    d = data[i]
                    # Runs as dots, spread evenly across the box (no random jitter: same figure,
                    # same bytes).
                    spread = np.linspace(-0.12, 0.12, d.size) if d.size > 1 else np.zeros(1)
                    ax.plot(positions[i] + spread, d, "o", ms=3, color=colors[labels[i]], alpha=0.9)
                    ci = panel.ci.get(labels[i])
                    mean = float(d.mean())
                    if ci is not None:
                        ax.errorbar(
                            positions[i] + 0.33,
                            mean,
                            yerr=[[mean - ci[0]], [ci[1] - mean]],
                            fmt="D",
                            ms=4,
                            color="#333333",
                            capsize=3,
                            lw=1.0,
                        )
                    elif d.size > 1:
                        ax.plot(positions[i] + 0.33, mean, "D", ms=4, color="#333333")
            else:
                ax.text(0.5, 0.5, "n/a", transform=ax.transAxes, ha="center", va="center", color="#777777")
            ax.set_xticks(positions, labels, rotation=30 if rotate else 0, ha="right" if rotate else "center")
            ax.set_xlim(0.4, len(labels) + 0.8)
            # Every panel's quantity is a rate, a ratio, a count or a delay: from zero, so that two
            # boxes a hair apart (59.95 and 59.99 fps) look a hair apart.
            if present and all(float(data[i].min()) >= 0.0 for i in present):
                ax.set_ylim(bottom=0.0, top=max(ax.get_ylim()[1], 1e-9))
            ax.set_title(panel.title)
            ax.set_ylabel(panel.ylabel)
            ax.grid(axis="x", visible=False)
        fig.suptitle(title)
    return fig


@dataclass(frozen=True)
class AverageCurve:
    """One line set of `average_figure`: a label's mean over its runs, per second, of its
    controller's output and the capacity (kbit/s), the queuing delay (ms) and the loss (%);
    `dashed` for a second stack drawn over the first."""

    label: str
    t_s: Sequence[float]
    output_kbps: Sequence[float]
    capacity_kbps: Sequence[float]
    qdelay_ms: Sequence[float]
    loss_pct: Sequence[float]
    runs: int
    dashed: bool = False


def average_figure(curves: Sequence[AverageCurve], title: str) -> Figure:
    """Each label's average curve over its runs, as Sjölund and Kevo 2022 draws its Figures 5.1,
    5.3 and 5.5: the algorithm's output against the link's limit, the delay and the loss, one
    colour per label (a label's dashed twin shares its colour, by the part before its first
    space)."""
    base = list(dict.fromkeys(c.label.split(" ")[0] for c in curves))
    colors = _series_colors(base)
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(7.2, 7.0))
        FigureCanvasAgg(fig)
        rate, delay, loss = fig.subplots(3, 1, sharex=True, height_ratios=(2.2, 1.2, 1.0))
        fig.subplots_adjust(left=0.1, right=0.98, top=0.84, bottom=0.07, hspace=0.18)
        capacity_drawn = False
        for c in curves:
            color = colors[c.label.split(" ")[0]]
            style = "--" if c.dashed else "-"
            t = np.asarray(c.t_s, dtype=np.float64)
            if not capacity_drawn and t.size:
                rate.step(t, np.asarray(c.capacity_kbps), where="post", color=CAPACITY_COLOR, lw=1.4,
                          label="link limit")  # fmt: skip
                capacity_drawn = True
            rate.plot(
                t,
                np.asarray(c.output_kbps),
                style,
                color=color,
                label=f"{c.label} ({c.runs} run{'s' if c.runs != 1 else ''})",
            )
            delay.plot(t, np.asarray(c.qdelay_ms), style, color=color)
            loss.plot(t, np.asarray(c.loss_pct), style, color=color)
        rate.set_ylabel("output (kbit/s)")
        rate.set_ylim(bottom=0.0)
        delay.set_ylabel("queuing delay (ms)")
        delay.set_ylim(bottom=0.0)
        loss.set_ylabel("loss (%)")
        loss.set_ylim(bottom=0.0)
        loss.set_xlabel("time (s)")
        fig.suptitle(title, y=0.985)
        handles, labels = rate.get_legend_handles_labels()
        if handles:
            # Above the panels: every part of a rate panel holds data.
            fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.54, 0.955), ncol=3)
    return fig


@dataclass(frozen=True)
class TradeoffSeries:
    """One label of `tradeoff_figure`: per run, its delay (ms) and its throughput (bit/s)."""

    label: str
    delay_ms: Sequence[float]
    rate_bps: Sequence[float]


def _sigma_ellipse(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> Ellipse | None:
    """The 1-σ ellipse of the points (x, y): centred on their mean, its axes along the covariance
    matrix's eigenvectors, half-lengths the square roots of its eigenvalues. None for fewer than
    two points."""
    if x.size < 2:
        return None
    cov = np.cov(np.vstack([x, y]))
    values, vectors = np.linalg.eigh(cov)
    values = np.clip(values, 0.0, None)
    angle = float(np.degrees(np.arctan2(vectors[1, 1], vectors[0, 1])))
    return Ellipse(
        (float(x.mean()), float(y.mean())),
        width=2 * float(np.sqrt(values[1])),
        height=2 * float(np.sqrt(values[0])),
        angle=angle,
    )


def tradeoff_figure(series: Sequence[TradeoffSeries], title: str, *, delay_label: str) -> Figure:
    """Throughput against delay, one colour per label, as Pantheon (Yan et al. 2018) and De Cicco
    et al. 2013 draw schemes: every run a small dot, the label's mean a large marker, and the 1-σ
    ellipse of its runs (their spread in both at once). The delay axis runs from high to low, so
    better is up and to the right."""
    labels = [s.label for s in series]
    colors = _series_colors(labels)
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(6.4, 4.4))
        FigureCanvasAgg(fig)
        ax = fig.subplots()
        fig.subplots_adjust(left=0.11, right=0.98, top=0.9, bottom=0.12)
        drawn = 0
        for s in series:
            x = np.asarray(s.delay_ms, dtype=np.float64)
            y = np.asarray(s.rate_bps, dtype=np.float64) * 1e-6
            keep = np.isfinite(x) & np.isfinite(y)
            x, y = x[keep], y[keep]
            color = colors[s.label]
            if x.size == 0:
                ax.plot([], [], "o", color=color, label=f"{s.label}: not measured")
                continue
            drawn += 1
            ax.plot(x, y, "o", ms=3.5, color=color, alpha=0.45, markeredgewidth=0)
            ellipse = _sigma_ellipse(x, y)
            if ellipse is not None:
                ellipse.set(facecolor=color, alpha=0.15, edgecolor=color, linewidth=1.0)
                ax.add_patch(ellipse)
            runs = f"{x.size} run{'s' if x.size != 1 else ''}"
            ax.plot(
                float(x.mean()), float(y.mean()), "o", ms=8, color=color, markeredgecolor="#000000",
                markeredgewidth=0.8,
                label=f"{s.label} ({runs}: p95 {x.mean():.1f} ms, {y.mean() * 1e3:.0f} kbit/s)",
            )  # fmt: skip
        ax.set_xlabel(delay_label)
        ax.set_ylabel("video goodput (Mbit/s)")
        ax.set_title(title)
        if drawn:
            ax.margins(0.15)
            ax.autoscale_view()
            low, high = ax.get_xlim()
            ax.set_xlim(high, max(low, 0.0))
            ax.set_ylim(bottom=max(0.0, ax.get_ylim()[0]))
            arrow = {"arrowstyle": "->", "color": "#555555"}
            ax.annotate(
                "better", xy=(0.97, 0.96), xytext=(0.86, 0.86), xycoords="axes fraction",
                ha="center", va="center", color="#555555", arrowprops=arrow,
            )  # fmt: skip
        else:
            ax.text(0.5, 0.5, "n/a", transform=ax.transAxes, ha="center", va="center", color="#777777")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="lower left")
    return fig


@dataclass(frozen=True)
class Rendered:
    """A figure as PNG bytes (for the page and for `rtcbench run`), and as SVG bytes when asked
    for (for papers: `rtcbench report --figures DIR`)."""

    png: bytes
    svg: bytes | None = None
    pdf: bytes | None = None


_PATH_DATA = re.compile(rb' d="([^"]*)"')
_DECIMAL = re.compile(rb"-?\d+\.\d+")


def _round_number(m: re.Match[bytes]) -> bytes:
    return b"%.1f" % float(m.group(0))


def _compact_path(m: re.Match[bytes]) -> bytes:
    data = _DECIMAL.sub(_round_number, m.group(1)).replace(b"\n", b" ")
    return b' d="' + data + b'"'


def _compact_svg(svg: bytes) -> bytes:
    """matplotlib writes path coordinates with six decimals of a point; one (1/720 inch) is finer
    than any printer, and a long run's SVG is a third smaller. Only path data (`d="..."`) is
    touched: text, styles and ids stay as written."""
    return _PATH_DATA.sub(_compact_path, svg)


PNG_COLORS = 128
"""Colours of the PNG palette. Line figures on a white ground use a few dozen, plus the grey
steps of anti-aliased text and lines; 128 keeps those smooth and the file a sixth smaller than
256."""


def render(fig: Figure, *, svg: bool = False, pdf: bool = False, palette: bool = True) -> Rendered:
    """The figure as PNG and, with `svg` and `pdf`, SVG and PDF, without the metadata (date,
    software version) that would make the same figure give other bytes on another day.

    The PNG has the figure's dpi. With `palette` it is a palette image (`PNG_COLORS`): about a
    third of the full-colour file, and a report embeds one per figure; without, full colour, for
    print. The SVG and PDF are vector, for print; the SVG's path coordinates are kept to 0.1 pt
    (`_compact_svg`). Each takes as long again to write, so they are made only on request.
    """
    with mpl.rc_context(EXPORT_STYLE):
        raw = io.BytesIO()
        fig.savefig(raw, format="rgba", dpi="figure")
        rgba = Image.frombytes("RGBA", fig.canvas.get_width_height(), raw.getvalue())
        png = io.BytesIO()
        rgb = rgba.convert("RGB")
        if palette:
            rgb.quantize(colors=PNG_COLORS, method=Image.Quantize.FASTOCTREE).save(png, format="PNG")
        else:
            # With its resolution, so that a document places it at its size in inches.
            rgb.save(png, format="PNG", dpi=(round(fig.dpi), round(fig.dpi)))
        vector = None
        if svg:
            text = io.BytesIO()
            fig.savefig(text, format="svg", metadata={"Date": None, "Creator": None})
            vector = _compact_svg(text.getvalue())
        printable = None
        if pdf:
            document = io.BytesIO()
            fig.savefig(
                document, format="pdf", metadata={"CreationDate": None, "Creator": None, "Producer": None}
            )
            printable = document.getvalue()
    return Rendered(png.getvalue(), vector, printable)


@dataclass(frozen=True)
class StageBar:
    """One label of `stage_figure`: the mean over its runs of each stage's mean (ms, in
    `rtcbench.stages.STAGES` order; None where its runs cannot observe the stage), of the frame
    delay's mean and of its p95, and how many runs."""

    label: str
    stages: Sequence[float | None]
    frame_delay_mean_ms: float | None
    frame_delay_p95_ms: float | None
    runs: int


def stage_figure(bars: Sequence[StageBar], title: str) -> Figure:
    """Where each label's frames waited: one horizontal bar per label, its stages stacked in the
    order a frame passes them (`rtcbench.stages`), so a bar is as long as the label's mean frame
    delay, and beside it that mean and the frame delay's p95 (the tables' numbers). A stage a
    label's runs cannot observe (a browser's encoder) is listed under its bar as not observed."""
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(6.4, 1.3 + 0.55 * max(1, len(bars))))
        FigureCanvasAgg(fig)
        ax = fig.subplots()
        fig.subplots_adjust(
            left=0.2, right=0.97, top=1 - 0.75 / fig.get_figheight(), bottom=0.5 / fig.get_figheight()
        )
        ys = np.arange(len(bars))[::-1].astype(float)
        peak = 0.0
        for y, bar in zip(ys, bars, strict=True):
            left = 0.0
            for k, v in enumerate(bar.stages):
                if v is None or not np.isfinite(v):
                    continue
                ax.barh(y, v, left=left, height=0.6, color=STAGE_COLORS[k])
                left += v
            peak = max(peak, left)
            said = []
            if bar.frame_delay_mean_ms is not None:
                said.append(f"mean {bar.frame_delay_mean_ms:.0f} ms")
            if bar.frame_delay_p95_ms is not None:
                said.append(f"p95 {bar.frame_delay_p95_ms:.0f} ms")
            ax.text(left, y, "  " + ", ".join(said), va="center", ha="left", fontsize="small")
            missing = [st.name for st, v in zip(STAGES, bar.stages, strict=True) if v is None]
            if missing and len(missing) < len(STAGES):
                ax.text(0.0, y - 0.42, "not observed: " + ", ".join(missing), va="center", fontsize="x-small",
                        color="#555555")  # fmt: skip
        ax.set_yticks(ys, [f"{b.label} ({b.runs} run{'s' if b.runs != 1 else ''})" for b in bars])
        for tick, bar in zip(ax.get_yticklabels(), bars, strict=True):
            tick.set_color(series_color(bar.label))
        ax.set_xlim(0.0, max(peak, 1.0) * 1.35)
        ax.set_xlabel("mean frame delay by stage (ms)")
        ax.set_title(title)
        ax.grid(axis="y", visible=False)
        if peak > 0:
            handles = [Patch(color=c, label=st.title) for st, c in zip(STAGES, STAGE_COLORS, strict=True)]
            fig.legend(handles=handles, loc="upper center", ncol=3, fontsize="small", frameon=False,
                       bbox_to_anchor=(0.5, 1 - 0.28 / fig.get_figheight()))  # fmt: skip
        else:
            ax.text(
                0.5, 0.5, "no frame timing", transform=ax.transAxes, ha="center", va="center", color="#777777"
            )
    return fig
