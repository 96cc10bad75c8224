"""GoogCC's decisions, from Chromium's RTC event log and from rtcbench's `gcc`, on one scale
(docs/calibration.md, "Decisions side by side").

A decision is an event of the estimator that moves its target: a probe cluster sent, a probe's
result, the over-use detector saying over-using, a multiplicative decrease of the target (after
over-use, or after loss), an additive climb resumed. Chromium's log holds most of them as events;
the `goog_cc` crate rtcbench runs keeps its delay-based estimate and detector private, so on the
simulator's side the decreases are read from its target, as they can be from any GoogCC's:
`decreases` applies the same rule to both.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from rtcbench.eventlog import EventLog

DECREASE = 0.95
"""A target that falls below 95 % of the one before, at one update, is a decrease: GoogCC's
additive increase and its smoothing move it by far less (a few % a second), its multiplicative
decrease to 85 % of the acknowledged rate (libwebrtc's AimdRateControl beta) or its loss-based
cut by more."""
LOSSY = 0.1
"""A decrease with more than 10 % loss reported is the loss-based estimator's (libwebrtc's
SendSideBandwidthEstimation cuts above its 10 % threshold); the others follow over-use."""

SCHEMA = {"t_us": pl.Int64, "decision": pl.String, "bps": pl.Int64}


def decreases(controller: pl.DataFrame) -> pl.DataFrame:
    """The target's decreases in a controller table (`t_us`, `target_bps`, `loss_rate`, one call):
    `decision` `loss-decrease` or `delay-decrease`, `bps` the target after it."""
    c = controller.filter(pl.col("target_bps").is_not_null()).sort("t_us")
    loss = pl.col("loss_rate") if "loss_rate" in c.columns else pl.lit(None, pl.Float64)
    fell = pl.col("target_bps") < DECREASE * pl.col("target_bps").shift(1)
    return c.filter(fell).select(
        "t_us",
        decision=pl.when(loss.fill_null(0.0) > LOSSY)
        .then(pl.lit("loss-decrease"))
        .otherwise(pl.lit("delay-decrease")),
        bps=pl.col("target_bps").cast(pl.Int64),
    )


def logged(log: EventLog, controller: pl.DataFrame) -> pl.DataFrame:
    """Chromium's decisions: `controller` is the log's run's (`rtcbench.eventlog.run`), on the
    same clock as `log`'s tables. Probe clusters (`probe`) and results (`probe-result`, or
    `probe-failed`), each entry into over-use (`overuse`), and the target's decreases."""
    t = log.tables
    results = t["probe_results"]
    state = controller.filter(pl.col("detector_state").is_not_null()).select("t_us", "detector_state")
    over = pl.col("detector_state") == "overusing"
    parts = [
        t["probe_clusters"].select("t_us", decision=pl.lit("probe"), bps="bitrate_bps"),
        results.filter(pl.col("bitrate_bps").is_not_null()).select(
            "t_us", decision=pl.lit("probe-result"), bps="bitrate_bps"
        ),
        results.filter(pl.col("failure").is_not_null()).select(
            "t_us", decision=pl.lit("probe-failed"), bps=pl.lit(None, pl.Int64)
        ),
        state.filter(over & ~over.shift(1, fill_value=False)).select(
            "t_us", decision=pl.lit("overuse"), bps=pl.lit(None, pl.Int64)
        ),
        decreases(controller),
    ]
    return _ordered(parts)


def simulated(controller: pl.DataFrame, call: int = 0) -> pl.DataFrame:
    """rtcbench `gcc`'s decisions in a run's controller table: the probe clusters it asked for
    (where `probe_clusters` grew: one row per cluster, each at `last_probe_bps`, the rate of the
    last one created, since the table keeps no other) and the target's decreases."""
    c = controller.filter(pl.col("call") == call).sort("t_us")
    made = pl.col("probe_clusters").cast(pl.Int64).fill_null(0)
    grew = c.with_columns(new=(made - made.shift(1, fill_value=0))).filter(pl.col("new") > 0)
    probes = grew.select("t_us", decision=pl.lit("probe"), bps="last_probe_bps", n="new")
    probes = probes.select(pl.all().repeat_by("n").explode()).drop("n")
    return _ordered([probes, decreases(c)])


def _ordered(parts: list[pl.DataFrame]) -> pl.DataFrame:
    frames = [p.select(pl.col(k).cast(v) for k, v in SCHEMA.items()) for p in parts]
    return pl.concat(frames).sort("t_us", "decision", maintain_order=True)


def counts(decisions: pl.DataFrame, start_us: int, end_us: int) -> dict[str, int]:
    """How many of each decision fall in [start_us, end_us)."""
    span = decisions.filter(pl.col("t_us").is_between(start_us, end_us, closed="left"))
    return {str(k): int(n) for k, n in span.group_by("decision").len().sort("decision").rows()}


@dataclass(frozen=True)
class Side:
    """One side of the figure: its label, its controller table (`target_bps`, and on Chromium's
    side `delay_based_bps` and `detector_state`) and its decisions, on the run's clock."""

    label: str
    controller: pl.DataFrame
    decisions: pl.DataFrame


def figure(
    sides: list[Side], capacity: pl.DataFrame | None, title: str, path: Path, end_s: float | None = None
) -> None:
    """One panel per side, on one time and rate scale: the target (solid), Chromium's
    delay-based estimate (thin), the bottleneck's capacity (grey steps, from `capacity`: `t_us`,
    `capacity_bps`), probe clusters (triangles at their rate), probe results (crosses), the
    target's decreases (down-pointing markers: red after over-use, purple after loss) and over-use
    (shaded, where the detector is logged); up to `end_s` (the run's end) if given."""
    import matplotlib as mpl
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from rtcbench.plots import render

    height_in = 2.4 * len(sides) + 1.0
    with mpl.rc_context({"font.size": 9}):
        fig = Figure(figsize=(10, height_in))
        FigureCanvasAgg(fig)
        axes = fig.subplots(len(sides), 1, sharex=True, sharey=True, squeeze=False)[:, 0]
        for ax, side in zip(axes, sides, strict=True):
            _panel(ax, side, capacity, end_s)
        axes[-1].set_xlabel("time (s)")
        if end_s is not None:
            axes[-1].set_xlim(0, end_s)
        handles: dict[str, Any] = {}
        for ax in axes:
            for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
                handles.setdefault(label, h)
        fig.suptitle(title, y=1 - 0.08 / height_in, va="top", size=10)
        fig.legend(
            list(handles.values()), list(handles), loc="upper center", ncol=5, frameon=False,
            bbox_to_anchor=(0.5, 1 - 0.32 / height_in),
        )  # fmt: skip
        fig.subplots_adjust(
            left=0.07, right=0.98, top=1 - 0.95 / height_in, bottom=0.5 / height_in, hspace=0.25
        )
        path.write_bytes(render(fig).png)


_MARKERS: dict[str, tuple[str, str, str]] = {
    "probe": ("^", "#1f77b4", "probe cluster"),
    "probe-result": ("x", "#000000", "probe result"),
    "delay-decrease": ("v", "#d62728", "decrease after over-use"),
    "loss-decrease": ("v", "#9467bd", "decrease after loss"),
}


def _panel(ax: Any, side: Side, capacity: pl.DataFrame | None, end_s: float | None) -> None:
    c = side.controller.sort("t_us")
    seconds = c["t_us"].to_numpy() / 1e6
    if capacity is not None and capacity.height:
        cap = capacity.sort("t_us")
        x, y = list(cap["t_us"].to_numpy() / 1e6), list(cap["capacity_bps"].to_numpy() / 1e6)
        if end_s is not None and x[-1] < end_s:
            # The last step holds to the end.
            x, y = [*x, end_s], [*y, y[-1]]
        ax.step(x, y, where="post", color="#7f7f7f", lw=1.2, label="capacity")
    ax.step(seconds, c["target_bps"].to_numpy() / 1e6, where="post", color="#2ca02c", lw=1.3, label="target")
    if "delay_based_bps" in c.columns:
        d = c.filter(pl.col("delay_based_bps").is_not_null())
        ax.step(d["t_us"].to_numpy() / 1e6, d["delay_based_bps"].to_numpy() / 1e6, where="post",
                color="#ff7f0e", lw=0.8, label="delay-based estimate")  # fmt: skip
    if "detector_state" in c.columns:
        over = c.select("t_us", on=pl.col("detector_state") == "overusing")
        edges = over.filter(pl.col("on") != pl.col("on").shift(1, fill_value=False)).rows()
        ends = [t for t, _ in edges[1:]] + [int(c["t_us"].max())]  # type: ignore[arg-type]
        for (start, on), end in zip(edges, ends, strict=True):
            if on:
                ax.axvspan(start / 1e6, end / 1e6, color="#d62728", alpha=0.15, lw=0, label="over-using")
    for decision, (marker, color, label) in _MARKERS.items():
        d = side.decisions.filter((pl.col("decision") == decision) & pl.col("bps").is_not_null())
        if d.height:
            ax.scatter(d["t_us"].to_numpy() / 1e6, d["bps"].to_numpy() / 1e6, marker=marker, color=color,
                       s=22, lw=1.0, zorder=3, label=label)  # fmt: skip
    ax.set_ylabel("Mbit/s")
    ax.set_title(side.label, loc="left", size=9)
    ax.grid(color="#b0b0b0", lw=0.5, alpha=0.5)
    ax.set_ylim(bottom=0)
