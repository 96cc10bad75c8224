"""Every figure rtcbench draws, from trace tables, time series and run summaries only.

The standard figure of a run has three panels sharing the time axis, like the figures of the seed
theses (Guerrero Viveros 2019 Fig. 6.2, Sjölund and Kevo 2022 Fig. 5.1; docs/references.md) and
the "fine time granularity" views RFC 8867 §4.1 asks for: (a) rates against the bottleneck capacity
and the controller's target, (b) queuing delay, (c) loss. The report (`rtcbench.report`) draws the
same panels from the time series alone, with competing TCP/CBR traffic and a frame-rate panel added
(`run_report_figure`), and compares controllers across repetitions: queuing-delay CDFs
(De Cicco et al. 2013 slides) and box plots of per-run values (Sjölund and Kevo 2022 §5.2,
`qdelay_cdf_figure`, `repetitions_figure`). All look choices live in `STYLE` and
`PALETTE`, so every figure rtcbench draws looks the same.

Figures are built on a bare `Figure` with the Agg canvas: no pyplot, no global backend switch, no
display, safe in worker processes and in notebooks that use another backend.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib as mpl
import numpy as np
import numpy.typing as npt
import polars as pl
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

from rtcbench.measure import scatter_sample
from rtcbench.metrics import CROSS_KINDS, MEDIA_KINDS, VIDEO, Tables, packet_delays

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

__all__ = [
    "PALETTE",
    "STYLE",
    "BoxPanel",
    "Rendered",
    "plot_run",
    "qdelay_cdf_figure",
    "render",
    "repetitions_figure",
    "run_report_figure",
    "shown_flows",
]

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
CROSS_COLORS = {"tcp": "#7f7f7f", "cbr": "#bcbd22"}
"""Competing traffic, one line per kind (all flows of the kind summed), in the report's figure."""
EXPORT_STYLE: dict[RcKeyType, Any] = {
    # Text stays text in SVG: smaller files, and editable when a figure goes into a paper.
    "svg.fonttype": "none",
    # Fixed ids inside the SVG, so the same figure gives the same bytes.
    "svg.hashsalt": "rtcbench",
    # Merge path vertices within 0.5 px of a straight line (default 1/9 px): invisible at the
    # figures' 120 dpi, and a third fewer vertices in a 300 s run's SVG.
    "path.simplify_threshold": 0.5,
}
"""rcParams in force when a figure is saved as PNG and SVG (`render`)."""

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


def shown_flows(meta_flows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The flows figures and report tables show: media, and competing TCP/CBR traffic. RTCP and
    TCP's ACKs are parts of other flows, and a link's UDP background (RFC 8867 §4.2) *makes* the
    capacity that the links table already shows (docs/traces.md, `meta`)."""
    return [
        f
        for f in meta_flows
        if f.get("kind") in MEDIA_KINDS
        or (f.get("kind") in CROSS_KINDS and not str(f.get("name", "")).endswith(".udp-background"))
    ]


def _cross_flows(t: Tables) -> list[dict[str, Any]]:
    return [f for f in shown_flows(t.meta["flows"]) if f.get("kind") in CROSS_KINDS]


def _rates_panel(
    ax: Axes,
    t: Tables,
    ts: pl.DataFrame,
    flows: list[dict[str, Any]],
    window_s: float,
    *,
    report: bool = False,
) -> None:
    """(a) rates; the report's variant adds competing TCP/CBR traffic."""
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
    if report:
        competing = _cross_flows(t)
        for kind in CROSS_KINDS:
            ids = [int(f["id"]) for f in competing if f.get("kind") == kind]
            if not ids:
                continue
            w = (
                ts.filter(pl.col("flow").is_in(ids))
                .group_by("t_us")
                .agg(pl.col("recv_rate_bps").sum())
                .sort("t_us")
            )
            n = f" ({len(ids)} flows)" if len(ids) > 1 else ""
            ax.plot(
                _seconds(w.get_column("t_us")) + window_s / 2,
                _values(w.get_column("recv_rate_bps"), 1e-6),
                color=CROSS_COLORS[kind],
                lw=1.0,
                label=f"{kind.upper()}{n} received",
            )
    ax.set_ylabel("rate (Mbit/s)")
    _headroom(ax)
    ax.set_title(f"(a) rates, {window_s * 1000:.0f} ms windows")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", ncol=3)


def _delay_panel(
    ax: Axes,
    t: Tables,
    ts: pl.DataFrame,
    flows: list[dict[str, Any]],
    window_s: float,
    *,
    report: bool = False,
    sampled: pl.DataFrame | None = None,
) -> None:
    """(b) queuing delay: window means, and per-packet dots (from `sampled`, the flows' delays
    already sampled by `scatter_sample`, or from the packets table); the report's variant draws
    the video flows' window p95 instead of dots (it reads the time series alone, and dots make the
    SVG heavy)."""
    per_packet = not report
    colors = _flow_colors(flows)
    delays = None
    if per_packet:
        delays = sampled if sampled is not None else packet_delays(t).select("flow", "t_us", "qdelay_ms")
    for f in flows:
        fid = int(f["id"])
        pk = scatter_sample(delays.filter(pl.col("flow") == fid)) if delays is not None else None
        if pk is not None and pk.height:
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
        if report and f.get("kind") == VIDEO:
            ax.plot(
                x,
                _values(w.get_column("qdelay_p95_ms")),
                color=colors[fid],
                lw=lw * 0.6,
                alpha=0.6,
                linestyle="--",
                label=f"{f.get('name')} p95",
            )
    ax.set_ylabel("queuing delay (ms)")
    _headroom(ax)
    detail = "dots per packet" if per_packet else "dashed: video window p95"
    ax.set_title(f"(b) queuing delay (owd - min owd): window mean, {detail}")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", ncol=2)


def _loss_panel(
    ax: Axes, ts: pl.DataFrame, flows: list[dict[str, Any]], end_s: float, *, last: bool = True
) -> None:
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
    if last:
        ax.set_xlabel("time (s)")
    ax.set_title("(c) packets dropped / sent, by send time")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", ncol=2)


def plot_run(t: Tables, ts: pl.DataFrame, path: Path, title: str, delays: pl.DataFrame | None = None) -> None:
    """Write the standard PNG of a run to `path` (the caller picks the folder and renames it).
    `delays`: the media flows' per-packet queuing delays sampled by `scatter_sample`, for a run
    whose packets are not in `t` (`rtcbench.measure`)."""
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
        _delay_panel(ax_delay, t, ts, flows, window_s, sampled=delays)
        _loss_panel(ax_loss, ts, flows, float(t.meta["duration_s"]))
        ax_loss.set_xlim(0.0, float(t.meta["duration_s"]))
        if not flows:
            ax_rate.text(0.5, 0.5, "no media flows", transform=ax_rate.transAxes, ha="center", va="center")
        fig.suptitle(title)
        fig.savefig(path, format="png")


_FPS_SMOOTH_S = 1.0
"""The frame-rate panel averages the windows' frame rates over 1 s: a 200 ms window holds only
six frames at 30 fps, so its rate moves in steps of 5 frame/s."""


def _frame_rate_panel(ax: Axes, t: Tables, ts: pl.DataFrame, window_s: float) -> None:
    """(d) frames completed at the receiver per second, per video flow, with freezes marked."""
    video = [f for f in _media_flows(t) if f.get("kind") == VIDEO]
    colors = _flow_colors(_media_flows(t))
    k = max(1, round(_FPS_SMOOTH_S / window_s)) if window_s > 0 else 1
    for f in video:
        fid = int(f["id"])
        w = ts.filter(pl.col("flow") == fid).sort("t_us")
        fps = w.get_column("fps").cast(pl.Float64).rolling_mean(window_size=k, min_samples=1)
        x = _seconds(w.get_column("t_us")) + k * window_s / 2
        ax.plot(x, _values(fps), color=colors[fid], lw=1.1, label=f"{f.get('name')} frame rate")
        frozen = t.frames.filter(
            (pl.col("flow") == fid) & pl.col("freeze") & pl.col("complete_us").is_not_null()
        )
        if frozen.height:
            ax.plot(
                _seconds(frozen.get_column("complete_us")),
                np.zeros(frozen.height),
                linestyle="none",
                marker="|",
                markersize=9,
                color=colors[fid],
                label=f"{f.get('name')} freeze ({frozen.height})",
            )
    ax.set_ylabel("frame rate (frame/s)")
    _headroom(ax)
    ax.set_xlabel("time (s)")
    ax.set_title(
        f"(d) video frames completed at the receiver, {_FPS_SMOOTH_S:g} s mean; ticks: freezes; "
        "dashed: encoded height"
    )
    handles, labels = ax.get_legend_handles_labels()
    if "height" in t.frames.columns and video:
        # The resolution ladder (rtcbench_media::resolution): the height each frame was encoded
        # at, on its own axis, as Guerrero Viveros 2019 reports FW and FH beside the frame rate.
        res = ax.twinx()
        for f in video:
            fid = int(f["id"])
            fr = t.frames.filter((pl.col("flow") == fid) & pl.col("complete_us").is_not_null()).sort(
                "complete_us"
            )
            if fr.height:
                res.step(
                    _seconds(fr.get_column("complete_us")),
                    fr.get_column("height").to_numpy(),
                    where="post",
                    color=colors[fid],
                    lw=0.9,
                    linestyle="--",
                    label=f"{f.get('name')} height",
                )
        res.set_ylabel("encoded height (px)")
        res.set_ylim(0, 800)
        more_handles, more_labels = res.get_legend_handles_labels()
        handles, labels = handles + more_handles, labels + more_labels
    if handles:
        ax.legend(handles, labels, loc="upper left", ncol=3)


def _window_s(t: Tables, ts: pl.DataFrame) -> float:
    starts = ts.get_column("t_us").unique().sort()
    return float(starts[1]) / _US_PER_S if starts.len() > 1 else float(t.meta["duration_s"])


def run_report_figure(t: Tables, ts: pl.DataFrame, title: str) -> Figure:
    """The report's figure of a run, from its time series, links, controller and frames tables
    (no packets: a suite's packet tables are most of its bytes): (a) capacity, each call's
    target, each media flow's sending and receive rate, and the competing TCP/CBR throughput
    summed per kind; (b) queuing delay, window mean (and p95 for video);
    (c) loss; (d) frame rate and freezes, when the run has video."""
    flows = _media_flows(t)
    window_s = _window_s(t, ts)
    video = any(f.get("kind") == VIDEO for f in flows)
    end_s = float(t.meta["duration_s"])
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(10.0, 9.5 if video else 8.0))
        FigureCanvasAgg(fig)
        ratios = (2.2, 1.3, 1.0, 1.0) if video else (2.2, 1.3, 1.0)
        axes = fig.subplots(len(ratios), 1, sharex=True, height_ratios=ratios)
        fig.subplots_adjust(left=0.07, right=0.985, top=0.94, bottom=0.055, hspace=0.32)
        _rates_panel(axes[0], t, ts, flows, window_s, report=True)
        _delay_panel(axes[1], t, ts, flows, window_s, report=True)
        _loss_panel(axes[2], ts, flows, end_s, last=not video)
        if video:
            _frame_rate_panel(axes[3], t, ts, window_s)
        axes[-1].set_xlim(0.0, end_s)
        if not flows:
            axes[0].text(0.5, 0.5, "no media flows", transform=axes[0].transAxes, ha="center", va="center")
        fig.suptitle(title)
    return fig


_CDF_POINTS = 600
"""Points per CDF curve: quantiles at evenly spaced probabilities. A suite's pooled packets are
hundreds of thousands per controller; the curve needs no more than a figure has pixels."""


def _series_colors(labels: Sequence[str]) -> dict[str, str]:
    return {label: PALETTE[i % len(PALETTE)] for i, label in enumerate(labels)}


def qdelay_cdf_figure(delays: Mapping[str, npt.NDArray[np.float64]], title: str) -> Figure:
    """Empirical CDFs of per-packet queuing delay, one curve per controller (the CDFs of
    Qb = RTT - RTTm in De Cicco et al. 2013 slides; here owd - min owd of each flow,
    docs/metrics.md). `delays` maps a label to every delay sample it pooled (ms); an empty array is
    listed as "no packets"."""
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
            p50, p95 = np.quantile(d, [0.5, 0.95])
            ax.step(
                q,
                probs,
                where="post",
                color=colors[label],
                label=f"{label} (p50 {p50:.0f}, p95 {p95:.0f} ms)",
            )
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
    """Box plots over repetitions, one panel per metric and one box per label, as
    Sjölund and Kevo 2022 §5.2 draws utilisation, latency, responsiveness and loss: box from the
    first to the third quartile, median line, whiskers to the furthest run within 1.5 IQR, every run
    as a dot, and beside each box the mean with its 95 % confidence interval (diamond and bar)."""
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
            if present:
                box = ax.boxplot(
                    [data[i] for i in present],
                    positions=positions[present],
                    widths=0.45,
                    showfliers=False,
                    patch_artist=True,
                    medianprops={"color": "#000000", "linewidth": 1.2},
                )
                for i, patch in zip(present, box["boxes"], strict=True):
                    patch.set_facecolor(colors[labels[i]])
                    patch.set_alpha(0.35)
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
                    else:
                        ax.plot(positions[i] + 0.33, mean, "D", ms=4, color="#333333")
            else:
                ax.text(0.5, 0.5, "n/a", transform=ax.transAxes, ha="center", va="center", color="#777777")
            ax.set_xticks(positions, labels, rotation=30 if rotate else 0, ha="right" if rotate else "center")
            ax.set_xlim(0.4, len(labels) + 0.8)
            ax.set_title(panel.title)
            ax.set_ylabel(panel.ylabel)
            ax.grid(axis="x", visible=False)
        fig.suptitle(title)
    return fig


@dataclass(frozen=True)
class Rendered:
    """A figure as PNG and SVG bytes, for a report to embed and for papers."""

    png: bytes
    svg: bytes


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


def render(fig: Figure) -> Rendered:
    """The figure as PNG and SVG, without the metadata (date, software version) that would make
    the same figure give other bytes on another day.

    The PNG is a 256-colour palette image: line figures on a white ground hold far fewer colours
    than that, and the file is about a third of the full-colour one (a report embeds one per run).
    The SVG is the one for print, with its path coordinates to 0.1 pt (`_compact_svg`).
    """
    with mpl.rc_context(EXPORT_STYLE):
        raw = io.BytesIO()
        fig.savefig(raw, format="rgba", dpi="figure")
        rgba = Image.frombytes("RGBA", fig.canvas.get_width_height(), raw.getvalue())
        png = io.BytesIO()
        rgba.convert("RGB").quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(png, format="PNG")
        svg = io.BytesIO()
        fig.savefig(svg, format="svg", metadata={"Date": None, "Creator": None})
    return Rendered(png.getvalue(), _compact_svg(svg.getvalue()))
