"""The report's tables, as plain rows of cells the HTML template lays out.

Every number comes from a run's `summary.json` (per flow and per phase, `docs/metrics.md`), from
the scorecard (`rtcbench.scorecard`) or from the across-repetition statistics below; nothing is
recomputed here from the traces. Each table has a stable id, so a reader (or a test) can find it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from rtcbench.analysis import mean_ci
from rtcbench.analysis.capacity import radio_flows, radio_hops
from rtcbench.plots import shown_flows
from rtcbench.report.runs import Run, natural_key, video_flows
from rtcbench.results import sections
from rtcbench.stages import STAGES, stage_key
from rtcbench.tables import MEDIA_KINDS, VIDEO

__all__ = [
    "METRICS",
    "Cell",
    "RepetitionMetric",
    "Table",
    "case_table",
    "dataframe_table",
    "flows_table",
    "lte_table",
    "phase_tables",
    "responsiveness_of",
    "run_values",
    "score_details",
    "score_matrix",
    "score_per_controller",
    "wifi_table",
]


@dataclass(frozen=True)
class Cell:
    """One table cell: its text, an optional hover text, and an optional CSS class (a verdict's
    colour, or `num` for right-aligned numbers)."""

    text: str
    title: str | None = None
    cls: str | None = None


@dataclass(frozen=True)
class Table:
    """A table with a stable `id`, a `kind` (the `data-table` attribute: phases, flows, case,
    score-matrix, ...), a caption, a header row and body rows; `filter` adds a text filter."""

    id: str
    kind: str
    caption: str
    header: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    filter: bool = False
    note: str = ""
    row_classes: tuple[str, ...] = field(default=())


def _num(v: Any, digits: int = 2, scale: float = 1.0) -> Cell:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return Cell("-", cls="num")
    return Cell(f"{float(v) * scale:.{digits}f}", cls="num")


def _text(v: Any) -> Cell:
    return Cell("-" if v is None or v == "" else str(v))


# ------------------------------------------------------------------------------------------------
# per run


def _mbps(v: Any) -> Cell:
    return _num(v, 3, 1e-6)


def _pct(v: Any) -> Cell:
    return _num(v, 1, 100.0)


_MEDIA_ROWS: tuple[tuple[str, Callable[[dict[str, Any]], Cell]], ...] = (
    ("sending rate - mean (Mbit/s)", lambda f: _mbps(f.get("mean_send_rate_bps"))),
    ("sending rate - std (Mbit/s)", lambda f: _mbps(f.get("std_send_rate_bps"))),
    ("receive rate - mean (Mbit/s)", lambda f: _mbps(f.get("mean_recv_rate_bps"))),
    ("utilisation (%)", lambda f: _pct(f.get("utilization"))),
    ("convergence time (s)", lambda f: _num(f.get("convergence_time_s"), 1)),
    ("queuing delay - mean (ms)", lambda f: _num(f.get("qdelay_mean_ms"), 1)),
    ("queuing delay - 25th (ms)", lambda f: _num(f.get("qdelay_p25_ms"), 1)),
    ("queuing delay - 90th (ms)", lambda f: _num(f.get("qdelay_p90_ms"), 1)),
    ("queuing delay - 95th (ms)", lambda f: _num(f.get("qdelay_p95_ms"), 1)),
    ("packet loss (%)", lambda f: _num(f.get("loss_ratio"), 2, 100.0)),
    ("packet loss - max (%)", lambda f: _num(f.get("max_window_loss_ratio"), 1, 100.0)),
)
_TARGET_ROW: tuple[str, Callable[[dict[str, Any]], Cell]] = (
    "target - mean (Mbit/s)",
    lambda f: _mbps(f.get("mean_target_bps")),
)
"""For video only: the call's target drives its video, while its audio sends at the codec's rate."""
_VIDEO_ROWS: tuple[tuple[str, Callable[[dict[str, Any]], Cell]], ...] = (
    ("goodput - mean (Mbit/s)", lambda f: _mbps(f.get("mean_goodput_bps"))),
    ("frame rate (frame/s)", lambda f: _num(f.get("fps_mean"), 1)),
    ("freezes", lambda f: _num(f.get("freezes"), 0)),
    ("frame delay - 95th (ms)", lambda f: _num(f.get("frame_delay_p95_ms"), 0)),
)
_CROSS_ROWS: tuple[tuple[str, Callable[[dict[str, Any]], Cell]], ...] = (
    ("rate - mean (Mbit/s)", lambda f: _mbps(f.get("mean_recv_rate_bps"))),
    ("rate - std (Mbit/s)", lambda f: _mbps(f.get("std_recv_rate_bps"))),
    ("utilisation (%)", lambda f: _pct(f.get("utilization"))),
    ("packet loss (%)", lambda f: _num(f.get("loss_ratio"), 2, 100.0)),
)


def _phase_label(p: dict[str, Any]) -> str:
    cap = p.get("capacity_bps")
    capacity = "unlimited" if cap is None else f"{cap / 1e6:g} Mbit/s"
    return f"{p['start_s']:g}-{p['end_s']:g} s, {capacity}"


def phase_tables(run: Run, id_prefix: str) -> list[Table]:
    """Tables 6.1-6.3 of Guerrero Viveros 2019 (seed 000) for one run: one table per bottleneck
    link, a column per section (a period: constant capacity and the same flows running; a phase of
    constant capacity in a summary older than periods), rows per flow (media, then TCP/CBR) and
    for the channel (all flows shown: the sum of their receive rates, and that over the capacity)."""
    phases = sections(run.summary)
    shown = {int(f["id"]): f for f in shown_flows(run.summary["meta"]["flows"])}
    radio = radio_flows(run.summary["meta"])
    links = list(dict.fromkeys(str(p["link"]) for p in phases))
    tables = []
    for link in links:
        cols = [p for p in phases if p["link"] == link]
        # A path across a BSS or a cell has no capacity of its own: no utilisation (docs/compare.md).
        per_phase = [
            {int(f["id"]): {**f, "utilization": None} if int(f["id"]) in radio else f for f in p["flows"]}
            for p in cols
        ]
        ids = [fid for fid in shown if any(fid in pf for pf in per_phase)]
        ids.sort(key=lambda fid: (shown[fid].get("kind") not in MEDIA_KINDS, list(shown).index(fid)))
        rows: list[tuple[Cell, ...]] = []
        classes: list[str] = []
        for fid in ids:
            kind = shown[fid].get("kind")
            if kind == VIDEO:
                spec = (*_MEDIA_ROWS[:3], _TARGET_ROW, *_MEDIA_ROWS[3:], *_VIDEO_ROWS)
            else:
                spec = _MEDIA_ROWS if kind in MEDIA_KINDS else _CROSS_ROWS
            for i, (label, cell) in enumerate(spec):
                name = Cell(f"{shown[fid].get('name')} ({kind})" if i == 0 else "")
                values = [cell(pf[fid]) if fid in pf else Cell("-", cls="num") for pf in per_phase]
                rows.append((name, Cell(label), *values))
                classes.append("group-start" if i == 0 else "")
        channel: list[Cell] = []
        utilisation: list[Cell] = []
        for p, pf in zip(cols, per_phase, strict=True):
            rates = [pf[fid].get("mean_recv_rate_bps") for fid in ids if fid in pf]
            total = sum(r for r in rates if r is not None)
            channel.append(_mbps(total))
            cap = p.get("capacity_bps")
            utilisation.append(_pct(total / cap) if cap else Cell("-", cls="num"))
        rows.append((Cell("channel"), Cell("receive rate, all flows (Mbit/s)"), *channel))
        rows.append((Cell(""), Cell("utilisation (%)"), *utilisation))
        classes += ["group-start", ""]
        tables.append(
            Table(
                id=f"{id_prefix}--phases--{link}",
                kind="phases",
                caption=(
                    f"Per section of link {link}: its capacity and the flows running there are the "
                    "same throughout (as Guerrero Viveros 2019, Tables 6.1-6.3)"
                ),
                header=("flow", "metric", *(_phase_label(p) for p in cols)),
                rows=tuple(rows),
                note=(
                    "Utilisation is the receive rate over the section's capacity (RFC 8867 4.1.2A; "
                    "Guerrero Viveros 2019 divides the sending rate: both rates are listed). "
                    "Convergence is counted from the section's start; queuing delay is owd - min owd "
                    "(docs/metrics.md)."
                ),
                row_classes=tuple(classes),
            )
        )
    return tables


def flows_table(run: Run, id_prefix: str) -> Table:
    """The whole run per flow, as `rtcbench run` prints it, with competing traffic."""
    header = (
        "flow", "kind", "send Mbit/s", "receive Mbit/s", "goodput Mbit/s", "utilisation %", "loss %",
        "qdelay p50 ms", "qdelay p95 ms", "rtt ms", "convergence s", "fps", "freezes", "frame delay p95 ms",
    )  # fmt: skip
    shown = {int(f["id"]) for f in shown_flows(run.summary["meta"]["flows"])}
    radio = radio_flows(run.summary["meta"])
    rows = []
    for f in run.summary["flows"]:
        if int(f["id"]) not in shown:
            continue
        rows.append(
            (
                _text(f.get("name")),
                _text(f.get("kind")),
                _mbps(f.get("mean_send_rate_bps")),
                _mbps(f.get("mean_recv_rate_bps")),
                _mbps(f.get("mean_goodput_bps") if f.get("kind") in MEDIA_KINDS else None),
                _pct(None if int(f["id"]) in radio else f.get("utilization")),
                _num(f.get("loss_ratio"), 2, 100.0),
                _num(f.get("qdelay_p50_ms"), 1),
                _num(f.get("qdelay_p95_ms"), 1),
                _num(f.get("rtt_mean_ms"), 0),
                _num(f.get("convergence_time_s"), 1),
                _num(f.get("fps_mean"), 1),
                _num(f.get("freezes"), 0),
                _num(f.get("frame_delay_p95_ms"), 0),
            )
        )
    return Table(
        id=f"{id_prefix}--flows",
        kind="flows",
        caption="Whole run, per flow",
        header=header,
        rows=tuple(rows),
        note=(
            "Rates count bytes on the wire (IP, UDP, RTP headers and payload); convergence is the start-up's."
        ),
    )


def wifi_table(run: Run, id_prefix: str) -> Table | None:
    """The MAC of every Wi-Fi node over the run (`summary.wifi`, docs/metrics.md), or None for a
    run without a BSS."""
    nodes = run.summary.get("wifi")
    if not nodes:
        return None
    adapting = any("extended_attempts" in n for n in nodes)
    header = (
        "node", "role", "airtime %", "PHY Mbit/s", "MPDUs per PPDU", "retries", "MAC drops",
        "queue drops", "queue p95 kB", *(("extended attempts", "CL p95") if adapting else ()),
    )  # fmt: skip
    rows = []
    for n in nodes:
        row: tuple[Cell, ...] = (
            _text(n.get("link")),
            _text(n.get("role")),
            _pct(n.get("airtime_share")),
            _mbps(n.get("phy_rate_bps")),
            _num(n.get("ampdu_mpdus"), 1),
            _num(n.get("mac_retries"), 0),
            _num(n.get("mac_drops"), 0),
            _num(n.get("queue_drops"), 0),
            _num(n.get("queue_bytes_p95"), 1, 1e-3),
        )
        if adapting:
            row += (_num(n.get("extended_attempts"), 0), _num(n.get("congestion_level_p95"), 3))
        rows.append(row)
    return Table(
        id=f"{id_prefix}--wifi",
        kind="wifi",
        caption="Wi-Fi: every node's MAC over the run",
        header=header,
        rows=tuple(rows),
        note=(
            "Airtime: the share of the run the node had a frame on air (its ACKs included). MAC drops: "
            "MPDUs given up at the retry limit or their lifetime; queue drops: packets its full queue "
            "refused. Extended attempts and CL: Chen et al. 2015's retry-limit adaptation (docs/wifi.md)."
        ),
    )


def lte_table(run: Run, id_prefix: str) -> Table | None:
    """What every LTE cell's scheduler did for each UE and direction over the run (`summary.lte`,
    docs/metrics.md), or None for a run without a cell."""
    buffers = run.summary.get("lte")
    if not buffers:
        return None
    header = (
        "cell", "UE", "direction", "scheduled Mbit/s", "RB share %", "HARQ retransmissions",
        "HARQ failures", "queue drops", "queue delay p50 ms", "queue delay p95 ms",
        "queue delay max ms", "CQI",
    )  # fmt: skip
    rows = tuple(
        (
            _text(b.get("cell")),
            _text(b.get("ue")),
            _text(b.get("direction")),
            _mbps(b.get("scheduled_bps")),
            _pct(b.get("rb_share")),
            _num(b.get("harq_retransmissions"), 0),
            _num(b.get("harq_failures"), 0),
            _num(b.get("queue_drops"), 0),
            _num(b.get("queue_delay_ms_p50"), 1),
            _num(b.get("queue_delay_ms_p95"), 1),
            _num(b.get("queue_delay_ms_max"), 1),
            _num(b.get("cqi"), 1),
        )
        for b in buffers
    )
    return Table(
        id=f"{id_prefix}--lte",
        kind="lte",
        caption="LTE: every UE's buffers over the run, per direction",
        header=header,
        rows=rows,
        note=(
            "Scheduled: the rate of new transport blocks the scheduler gave the buffer; RB share: its "
            "share of the direction's PRBs. HARQ failures: transport blocks lost after their last "
            "transmission (their packets dropped as harq_failure); queue drops: packets its full buffer "
            "refused or PDCP discarded (queue_full, lifetime). Queue delay: the age of the buffer's "
            "oldest packet, every 10 ms; CQI: the mean reported (docs/lte.md)."
        ),
    )


# ------------------------------------------------------------------------------------------------
# across repetitions


@dataclass(frozen=True)
class RepetitionMetric:
    """A per-run value compared across controllers and repetitions (Sjölund and Kevo 2022 §5.2)."""

    key: str
    title: str
    unit: str
    digits: int


METRICS = (
    RepetitionMetric("utilization", "utilisation", "ratio", 2),
    RepetitionMetric("qdelay_p95_ms", "latency: queuing delay p95", "ms", 1),
    RepetitionMetric("responsiveness_s", "responsiveness", "s", 1),
    RepetitionMetric("loss_pct", "loss", "%", 2),
    RepetitionMetric("goodput_kbps", "goodput", "kbit/s", 0),
    RepetitionMetric("freezes", "freezes", "count", 1),
    RepetitionMetric("fps_mean", "frame rate", "fps", 1),
    RepetitionMetric("frame_delay_p95_ms", "frame delay p95", "ms", 0),
)
"""The four box plots of Sjölund and Kevo 2022 §5.2 (link utilisation, latency, responsiveness,
packet loss), then what the picture got: goodput, freezes, frame rate and frame delay p95."""

REACTION = "reaction to capacity drops"
STARTUP = "start-up"


def responsiveness_of(scores: Iterable[Mapping[str, float | None]]) -> str:
    """Which time a case's responsiveness is: the scorecard's reaction to capacity drops (RFC 8836
    R1.C) where the case has one for a call alone on its path, else its start-up convergence (R4).
    Sjölund and Kevo 2022 time the reaction to every capacity change; a case without a drop has only
    start-up."""
    return REACTION if any(s.get("reaction") is not None for s in scores) else STARTUP


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def run_values(run: Run, scores: Mapping[str, float | None], responsiveness: str) -> dict[str, float | None]:
    """One run's values of `METRICS`: the video flows' mean utilisation, queuing-delay p95, loss,
    goodput, freezes, frame rate and frame delay p95 (averaged over the run's video flows, as
    `SuiteResult.overview` does) and
    its responsiveness."""
    video = video_flows(run.summary)

    def of(key: str, scale: float = 1.0) -> float | None:
        present = [float(f[key]) * scale for f in video if f.get(key) is not None]
        return _mean(present)

    radio = {int(f["id"]) for f in run.summary["meta"]["flows"] if radio_hops(run.summary["meta"], f)}
    wired = [f for f in video if int(f["id"]) not in radio]
    utilisation = [float(f["utilization"]) for f in wired if f.get("utilization") is not None]
    return {
        # A path across a BSS or a cell has no capacity of its own to use up (docs/compare.md).
        "utilization": _mean(utilisation),
        "qdelay_p50_ms": of("qdelay_p50_ms"),
        "qdelay_p95_ms": of("qdelay_p95_ms"),
        "loss_pct": of("loss_ratio", 100.0),
        "goodput_kbps": of("mean_goodput_bps", 1e-3),
        "freezes": of("freezes"),
        "fps_mean": of("fps_mean"),
        "frame_delay_p95_ms": of("frame_delay_p95_ms"),
        "frame_delay_mean_ms": of("frame_delay_mean_ms"),
        **{stage_key(st): of(stage_key(st)) for st in STAGES},
        # The reaction to a capacity drop is the scorecard's; a start-up time is `rtcbench
        # compare`'s (the mean over the video flows that converged), the one number for it.
        "responsiveness_s": scores.get("reaction")
        if responsiveness == REACTION
        else of("convergence_time_s"),
    }


def _mean_with_ci(values: Sequence[float | None], digits: int) -> Cell:
    present = [v for v in values if v is not None and math.isfinite(v)]
    if not present:
        return Cell("-", cls="num")
    mean = sum(present) / len(present)
    ci = mean_ci(present)
    if ci is None:
        return Cell(f"{mean:.{digits}f}", title="one run: its value, no interval", cls="num")
    return Cell(
        f"{mean:.{digits}f} [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]",
        title=f"mean of {len(present)} runs; 95 % bootstrap interval of the mean",
        cls="num",
    )


SINGLE_REPETITION = "1 repetition: values, no interval"


def case_table(
    table_id: str, values: Mapping[str, Sequence[Mapping[str, float | None]]], responsiveness: str
) -> Table:
    """Per label (controller): runs, then mean [95 % CI] of each of `METRICS` over its runs; with
    one run per label, the values alone (`SINGLE_REPETITION`): an interval needs repetitions."""
    single = all(len(runs) <= 1 for runs in values.values())
    header = (
        "controller",
        "runs",
        *(f"{m.title if m.key != 'responsiveness_s' else responsiveness} ({m.unit})" for m in METRICS),
    )
    rows = []
    for label, runs in values.items():
        rows.append(
            (
                Cell(label),
                Cell(str(len(runs)), cls="num"),
                *(_mean_with_ci([r[m.key] for r in runs], m.digits) for m in METRICS),
            )
        )
    measured = (
        "Per run: the video flows' utilisation (of a path with a capacity of its own: not across a "
        "BSS or a cell), queuing-delay p95 and loss over the whole run, averaged over the video "
        f"flows (docs/metrics.md); {responsiveness}: "
        + (
            "the scorecard's slowest reaction to a capacity drop (docs/scorecard.md)."
            if responsiveness == REACTION
            else "the video flows' start-up convergence, as rtcbench compare gives it (docs/compare.md)."
        )
    )
    if single:
        caption = f"Per controller ({SINGLE_REPETITION})"
        note = measured + " Run the suite with --reps 3 or more for box plots and confidence intervals."
    else:
        caption = "Mean over repetitions [95 % confidence interval of the mean, bootstrap]"
        note = measured + (
            " Intervals: percentile bootstrap, 10 000 resamples, fixed seed; with few repetitions "
            "they are narrower than the truth."
        )
    return Table(
        id=table_id,
        kind="case",
        caption=caption,
        header=header,
        rows=tuple(rows),
        note=note,
    )


# ------------------------------------------------------------------------------------------------
# scorecard


def _limit(row: Mapping[str, Any], key: str) -> str:
    side = "≥" if row["higher_is_better"] else "≤"
    return f"{side} {row[key]:g}"


def _verdict_title(row: Mapping[str, Any]) -> str:
    value = "-" if row["value"] is None else f"{row['value']:.3g} {row['unit']}".strip()
    lines = [
        f"{row['criterion']} ({row['requirement']}): {row['verdict']}",
        f"value {value}; pass {_limit(row, 'pass_at')}, warn {_limit(row, 'warn_at')} {row['unit']}".rstrip(),
    ]
    if row["note"]:
        lines.append(str(row["note"]))
    lines.append(f"source: {row['source']}")
    return "\n".join(lines)


_MATRIX_TITLE_LINES = 12


_SHARE_STEPS = (0.25, 0.5, 0.75, 1.0)
"""Where a cell's colour changes (`_share_class`)."""


def _share_class(passed: int, applicable: int) -> str:
    """A cell's colour by the share of its checks that passed: green when all did, then paler
    steps to red below a quarter, so controllers tell apart where the worst verdict alone made
    nearly every cell red."""
    if applicable == 0:
        return "v-na"
    share = passed / applicable
    return f"share-{sum(share >= step for step in _SHARE_STEPS)}"


def _counts(rows: pl.DataFrame) -> tuple[int, int, int]:
    verdicts = rows.get_column("verdict").to_list()
    return verdicts.count("pass"), verdicts.count("warn"), verdicts.count("fail")


def _misses(rows: pl.DataFrame, *, scenario: bool) -> list[str]:
    """One line per check that did not pass: where, the verdict, its value and thresholds."""
    lines = []
    for row in rows.filter(pl.col("verdict").is_in(["warn", "fail"])).iter_rows(named=True):
        value = "-" if row["value"] is None else f"{row['value']:.3g} {row['unit']}".strip()
        where = (f"{row['scenario']} " if scenario else "") + (f"{row['variant']} " if row["variant"] else "")
        lines.append(
            f"{where}seed {row['seed']}: {row['criterion']} {row['verdict']} {value} "
            f"(pass {_limit(row, 'pass_at')}, warn {_limit(row, 'warn_at')})"
        )
    if len(lines) > _MATRIX_TITLE_LINES:
        lines = [*lines[:_MATRIX_TITLE_LINES], f"... and {len(lines) - _MATRIX_TITLE_LINES} more"]
    return lines


def _share_cell(rows: pl.DataFrame, *, scenario: bool) -> Cell:
    """Checks passed / applicable, coloured by that share; the hover text counts the verdicts and
    lists every check that did not pass."""
    passed, warned, failed = _counts(rows)
    applicable = passed + warned + failed
    if applicable == 0:
        return Cell("n/a", title="no check applies", cls="v-na")
    head = f"{passed} passed, {warned} warned, {failed} failed of {applicable} checks"
    title = "\n".join([head, *_misses(rows, scenario=scenario)])
    return Cell(f"{passed}/{applicable}", title=title, cls=_share_class(passed, applicable))


def score_matrix(table_id: str, scores: pl.DataFrame, labels: Sequence[str]) -> Table:
    """Test case × controller: checks passed out of those that apply, coloured by that share; the
    hover text lists every check that did not pass, with its value and thresholds."""
    rows = []
    for scenario in sorted(set(scores["scenario"]), key=natural_key):
        of_case = scores.filter(pl.col("scenario") == scenario)
        cells = [Cell(scenario)]
        for label in labels:
            mine = of_case.filter(pl.col("controller") == label)
            cells.append(_share_cell(mine, scenario=False) if mine.height else Cell(""))
        rows.append(tuple(cells))
    return Table(
        id=table_id,
        kind="score-matrix",
        caption="Checks passed / applicable per test case and controller (colour: the share passed)",
        header=("scenario", *labels),
        rows=tuple(rows),
        note=(
            "Green: every check passed; paler to red as the share falls (below 100, 75, 50, 25 %). "
            "Hover a cell for the checks that did not pass; every verdict is in the table below."
        ),
    )


def score_per_controller(table_id: str, scores: pl.DataFrame, labels: Sequence[str]) -> Table:
    """Per controller: verdict counts over every applicable check and the share passed, then one
    column per criterion with its share passed over every case, coloured by that share."""
    criteria = list(dict.fromkeys(scores.get_column("criterion").to_list()))
    requirement = {r["criterion"]: r["requirement"] for r in scores.iter_rows(named=True)}
    rows = []
    for label in labels:
        mine = scores.filter(pl.col("controller") == label)
        if not mine.height:
            continue
        passed, warned, failed = _counts(mine)
        applicable = passed + warned + failed
        share = f"{passed / applicable:.0%}" if applicable else "-"
        rows.append(
            (
                Cell(label),
                Cell(str(passed), cls="num"),
                Cell(str(warned), cls="num"),
                Cell(str(failed), cls="num"),
                Cell(share, cls=f"num {_share_class(passed, applicable)}"),
                *(_share_cell(mine.filter(pl.col("criterion") == c), scenario=True) for c in criteria),
            )
        )
    return Table(
        id=table_id,
        kind="score-controllers",
        caption="Per controller: over every applicable check, then per criterion over every case",
        header=(
            "controller",
            "pass",
            "warn",
            "fail",
            "passed",
            *(f"{c} ({requirement[c]})" for c in criteria),
        ),
        rows=tuple(rows),
        note="Per criterion: checks passed / applicable over every case, variant and seed; hover for misses.",
    )


def score_details(table_id: str, scores: pl.DataFrame) -> Table:
    """Every verdict, with its value and thresholds (also on hover of the verdict)."""
    header = (
        "scenario", "variant", "controller", "seed", "criterion", "RFC 8836", "verdict", "value",
        "pass", "warn", "note",
    )  # fmt: skip
    rows = []
    for r in scores.iter_rows(named=True):
        value = "-" if r["value"] is None else f"{r['value']:.3g}"
        rows.append(
            (
                Cell(r["scenario"]),
                _text(r["variant"]),
                Cell(r["controller"]),
                Cell(str(r["seed"]), cls="num"),
                Cell(r["criterion"]),
                Cell(r["requirement"]),
                Cell(r["verdict"], title=_verdict_title(r), cls=f"v-{r['verdict'].replace('/', '')}"),
                Cell(f"{value} {r['unit']}".strip() if r["value"] is not None else "-", cls="num"),
                Cell(_limit(r, "pass_at"), cls="num"),
                Cell(_limit(r, "warn_at"), cls="num"),
                _text(r["note"]),
            )
        )
    return Table(
        id=table_id,
        kind="score-details",
        caption="Every verdict (hover a verdict for its source)",
        header=header,
        rows=tuple(rows),
        filter=True,
    )


# ------------------------------------------------------------------------------------------------
# any frame


def value_cell(v: Any) -> Cell:
    """A value as a cell: numbers right-aligned to 4 significant digits, None and NaN as -."""
    if v is None:
        return Cell("-")
    if isinstance(v, bool):
        return Cell(str(v).lower())
    if isinstance(v, int):
        return Cell(str(v), cls="num")
    if isinstance(v, float):
        return Cell("-" if not math.isfinite(v) else f"{v:.4g}", cls="num")
    return Cell(str(v))


def dataframe_table(table_id: str, kind: str, caption: str, df: pl.DataFrame) -> Table:
    """Any frame as a table: numbers to 4 significant digits, nested values as text."""
    return Table(
        id=table_id,
        kind=kind,
        caption=caption,
        header=tuple(df.columns),
        rows=tuple(tuple(value_cell(v) for v in row) for row in df.iter_rows()),
        filter=df.height > 20,
    )
