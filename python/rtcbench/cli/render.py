"""What the commands print on the terminal: the tables of a run, a suite, a calibration, a
scorecard and a comparison, and the progress bar of long commands (rich)."""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from rtcbench.analysis.capacity import radio_flows
from rtcbench.compare import BY_NAME, Comparison
from rtcbench.identity import TESTBED_INFO
from rtcbench.results import sections
from rtcbench.runner import RunResult
from rtcbench.suite import FLOWS_TABLE, RUNS_TABLE, RunProgress, SuiteResult
from rtcbench.testbed.timing import invalid_line

if TYPE_CHECKING:
    import polars as pl


def _width(stream: TextIO, default: int) -> int | None:
    """A console's width: the terminal's; else `COLUMNS` if it is a width (`COLUMNS=200 rtcbench
    suite ... > log`); else `default`, wide enough for the summary tables in CI logs and pipes."""
    if stream.isatty():
        return None
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and 40 <= int(columns) <= 1000 else default


# No emoji codes: a name or a message holding `:x:` is printed as it is. Markup is rich's, for our
# own styles: text from the user (names, paths, messages) goes through `escape`.
console = Console(width=_width(sys.stdout, 120), emoji=False)
# Errors and warnings are one line each, however narrow `COLUMNS` says the output is.
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 200, emoji=False)


@contextmanager
def _progress_bar(what: str = "runs") -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar of `what` done on stderr, removed when done; none unless stderr is a terminal
    (rich would still write a stray newline to a file or pipe)."""
    if not err_console.is_terminal:
        yield None
        return
    columns = (TextColumn(what), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True) as bar:
        task = bar.add_task(what, total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield progress


class _RunsBar(RunProgress):
    """A suite's or sweep's progress line: runs done of all, the time left estimated from the work
    done (each run weighs its simulated duration), and the case that finished last."""

    def __init__(self, bar: Progress) -> None:
        self.bar = bar
        self.task = bar.add_task("runs", total=None, runs="", last="")

    def update(self, done: int, total: int, work_done: float, work_total: float, last: str) -> None:
        self.bar.update(self.task, completed=work_done, total=work_total, runs=f"{done}/{total}", last=last)


@contextmanager
def _runs_bar() -> Iterator[RunProgress | None]:
    """`_progress_bar` for the runs of a suite or sweep, with an ETA weighted by each run's
    simulated duration and the last case finished."""
    if not err_console.is_terminal:
        yield None
        return
    columns = (
        TextColumn("runs {task.fields[runs]}"), BarColumn(), TimeElapsedColumn(), TextColumn("ETA"),
        TimeRemainingColumn(), TextColumn("{task.fields[last]}"),
    )  # fmt: skip
    with Progress(*columns, console=err_console, transient=True) as bar:
        yield _RunsBar(bar)


def print_scenarios(rows: Iterable[tuple[str, str, str, str, str]]) -> None:
    """The table of `rtcbench list`'s scenarios: id, number of variants, networks, title and
    source."""
    t = Table(title="Scenarios", title_justify="left")
    for col in ("id", "variants", "network", "title", "source"):
        t.add_column(col)
    for row in rows:
        t.add_row(*row)
    console.print(t)


def print_controllers(rows: Iterable[tuple[str, str]]) -> None:
    """The table of `rtcbench list`'s controllers: name and description."""
    c = Table(title="Controllers", title_justify="left")
    c.add_column("name")
    c.add_column("description")
    for name, desc in rows:
        c.add_row(name, desc)
    console.print(c)


def _fmt(v: Any, scale: float = 1.0, digits: int = 0, suffix: str = "") -> str:
    if v is None:
        return "-"
    return f"{v * scale:.{digits}f}{suffix}"


SHOWN_KINDS = ("video", "audio", "tcp", "cbr")
"""The flows a run's table shows: media and every competing flow (TCP, CBR, the UDP background of
RFC 8867 §4.2); RTCP and TCP ACKs are in the summary and the suite tables."""


def _span(f: dict[str, Any], duration_s: float) -> str:
    """A flow's active span, shown only when it is not the whole run."""
    a, b = f.get("active_start_s"), f.get("active_end_s")
    if a is None or b is None or (a == 0 and b >= duration_s):
        return ""
    return f"{a:g}-{b:g} s"


def _fairness_lines(s: dict[str, Any]) -> list[str]:
    """Jain's indexes of a run, each saying which flows it covers."""
    lines = []
    run = s["fairness"]["run"]
    video = [f["name"] for f in run["flows"]]
    if len(video) >= 2:
        lines.append(f"Jain's index, video flows ({', '.join(video)}): {_fmt(run['jain_index'], 1, 3)}")
    for b in s["fairness"].get("bottlenecks", []):
        names = ", ".join(f["name"] for f in b["flows"])
        lines.append(f"Jain's index, all data flows at {b['link']} ({names}): {_fmt(b['jain_index'], 1, 3)}")
    return lines


def _browsers(info: dict[str, Any]) -> str:
    """`Chromium <version>` (or `Firefox <version>`, or both with the nodes of each), the field
    trials Chromium forced, whether the browsers logged, and each call's set-up time, for the
    line under a browser run."""
    setups = [
        f"{name} {setup['connected']:.2f} s"
        for name, call in info["calls"].items()
        if (setup := call.get("setup_s")) and setup.get("connected") is not None
    ]
    joined = f" (set-up to ICE connected: {', '.join(setups)})" if setups else ""
    trials = f" with field trials {info['field_trials']}" if info.get("field_trials") else ""
    logged = ", writing their libwebrtc logs" if info.get("browser_log") else ""
    if info.get("event_logs") is not None:
        files = sum(len(logs) for logs in info["event_logs"].values())
        logged += f", {files} RTC event log{'s' if files != 1 else ''} recorded"
    # Runs from before Firefox peers record no `browsers`: all of them were Chromium.
    at = info.get("browsers") or {}
    names = {"chromium": "Chromium", "firefox": "Firefox"}
    used = sorted(set(at.values()) or {"chromium"})
    ran = [
        f"{names[b]} {info.get(b) or '(version unknown)'}"
        + (f" ({', '.join(n for n, x in sorted(at.items()) if x == b)})" if len(used) > 1 else "")
        for b in used
    ]
    return f"{' and '.join(ran)}{trials}{logged}{joined}"


def _wifi_table(nodes: list[dict[str, Any]]) -> Table:
    """Every Wi-Fi node's MAC over the run (the summary's `wifi`, docs/metrics.md)."""
    w = Table(title="wifi (per node, whole run)", title_justify="left")
    adapting = any("extended_attempts" in n for n in nodes)
    cols = ["node", "airtime %", "PHY Mbps", "MPDUs/PPDU", "retries", "MAC drops", "queue drops"]
    for col in [*cols, *(["extended", "CL p95"] if adapting else [])]:
        w.add_column(col, justify="left" if col == "node" else "right")
    for n in nodes:
        row = [
            escape(n["link"]),
            _fmt(n["airtime_share"], 100, 1),
            _fmt(n["phy_rate_bps"], 1e-6, 1),
            _fmt(n["ampdu_mpdus"], 1, 1),
            _fmt(n["mac_retries"]),
            _fmt(n["mac_drops"]),
            _fmt(n["queue_drops"]),
        ]
        if adapting:
            row += [_fmt(n.get("extended_attempts")), _fmt(n.get("congestion_level_p95"), 1, 3)]
        w.add_row(*row)
    return w


def _lte_table(buffers: list[dict[str, Any]]) -> Table:
    """Every LTE UE's buffers, per direction, over the run (the summary's `lte`, docs/metrics.md)."""
    t = Table(title="lte (per UE and direction, whole run)", title_justify="left")
    cols = [
        "buffer", "sched Mbps", "RB %", "HARQ retx", "HARQ fail", "queue drops", "delay p50 ms",
        "delay p95 ms", "delay max ms", "CQI",
    ]  # fmt: skip
    for col in cols:
        t.add_column(col, justify="left" if col == "buffer" else "right")
    for b in buffers:
        t.add_row(
            escape(b["link"]),
            _fmt(b["scheduled_bps"], 1e-6, 2),
            _fmt(b["rb_share"], 100, 1),
            _fmt(b["harq_retransmissions"]),
            _fmt(b["harq_failures"]),
            _fmt(b["queue_drops"]),
            _fmt(b["queue_delay_ms_p50"], 1, 1),
            _fmt(b["queue_delay_ms_p95"], 1, 1),
            _fmt(b["queue_delay_ms_max"], 1, 1),
            _fmt(b["cqi"], 1, 1),
        )
    return t


def _print_pairs(pairs: list[str], sep: str, indent: str = "   ") -> None:
    """`pairs` (a measure and its value each) on indented lines as wide as the terminal, broken
    between pairs only, never inside one."""
    line = ""
    for pair in pairs:
        if line and len(indent) + len(line) + len(sep) + len(pair) > console.width:
            console.print(indent + escape(line), highlight=False, soft_wrap=True)
            line = ""
        line = f"{line}{sep}{pair}" if line else pair
    if line:
        console.print(indent + escape(line), highlight=False, soft_wrap=True)


_FLOW_MEASURES = (
    "send {} kbps", "goodput {} kbps", "util {}", "loss {} %", "qdelay p50 {} ms", "p95 {} ms",
    "rtt {} ms", "fps {}", "frame delay p95 {} ms", "freezes {}",
)  # fmt: skip
"""`print_summary`'s per-flow columns as an 80-column terminal shows them, beside their values."""


def _began(period: dict[str, Any], names: dict[int, str], shown: int = 2) -> str:
    """What began a period, as the phase table's "after" column says it: "capacity" where the
    link's capacity changed, "+name" for a flow that joined the link or its medium, "-name" for one
    that left (a few, then how many more); "" for the first period, and for a summary that does
    not record it."""
    said = ["capacity"] if period.get("capacity_changed") else []
    for sign, key in (("+", "joined"), ("-", "left")):
        ids = [int(i) for i in period.get(key, [])]
        said += [sign + names.get(i, str(i)) for i in ids[:shown]]
        if len(ids) > shown:
            said.append(f"{sign}{len(ids) - shown} more")
    return ", ".join(said)


def _others(names: list[str], shown: int = 2) -> str:
    """The other flows of a period, as the phase table's "with" column names them: a few, then
    how many more."""
    if not names:
        return "-"
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" +{more}" if more > 0 else "")


def print_summary(results: list[RunResult]) -> None:
    """The terminal tables of a run: every media and competing flow over the time it runs, then the
    video flow per phase of its bottleneck, every Wi-Fi node's MAC and every LTE UE's buffers (in a
    run that has them), and Jain's indexes with the flows they cover."""
    for r in results:
        s = r.summary
        head = f"{s['scenario']}" + (f" [{s['variant']}]" if s["variant"] else "")
        t = Table(title=escape(f"{head} · {s['controller']} · seed {s['seed']}"), title_justify="left")
        cols = [
            "flow", "send kbps", "goodput kbps", "util", "loss %", "qdelay p50 ms", "qdelay p95 ms",
            "rtt ms", "fps", "frame p95 ms", "freezes", "active",
        ]  # fmt: skip
        for col in cols:
            t.add_column(col, justify="left" if col in ("flow", "active") else "right")
        flows = [f for f in s["flows"] if f["kind"] in SHOWN_KINDS]
        spans = [_span(f, s["simulated_s"]) for f in flows]
        # A competing flow's goodput is its received payload (`cross_traffic`); the per-flow
        # goodput counts media payload only. The UDP background's "capacity" is what it leaves
        # to the others (RFC 8867 §4.2), so a utilisation of it would mean nothing.
        cross = {c["id"]: c for c in s.get("cross_traffic", [])}
        # A path across a BSS or a cell has no capacity of its own: no utilisation is shown for
        # it (docs/compare.md, "Utilisation over a radio medium").
        on_radio = radio_flows(s.get("meta", {}))
        rows: list[list[str]] = []
        for f, span in zip(flows, spans, strict=True):
            c = cross.get(f["id"])
            background = f.get("workload") == "udp-background"
            rows.append(
                [
                    f["name"],
                    _fmt(f["mean_send_rate_bps"], 1e-3),
                    _fmt(c["goodput_bps"] if c is not None else f["mean_goodput_bps"], 1e-3),
                    _fmt(None if background or f["id"] in on_radio else f["utilization"], 1, 2),
                    _fmt(f["loss_ratio"], 100, 2),
                    _fmt(f["qdelay_p50_ms"], 1, 1),
                    _fmt(f["qdelay_p95_ms"], 1, 1),
                    _fmt(f["rtt_mean_ms"], 1, 0),
                    _fmt(f["fps_mean"], 1, 1),
                    _fmt(f.get("frame_delay_p95_ms"), 1, 0),
                    _fmt(f["freezes"]),
                    span,
                ]
            )
            t.add_row(escape(f["name"]), *rows[-1][1:])
        if not any(spans):
            t.columns.pop()
            cols.pop()
            rows = [row[:-1] for row in rows]
        # Headers fold between words; the cells do not: each column is as wide as its longest
        # cell or header word (rich, left to itself, would narrow columns below both).
        widths = [max([*map(len, h.split()), *(len(row[i]) for row in rows)]) for i, h in enumerate(cols)]
        needed = 1 + sum(w + 3 for w in widths)
        natural = 1 + sum(max(len(h), w) + 3 for h, w in zip(cols, widths, strict=True))
        if needed <= console.width:
            if natural > console.width:
                # The room left goes to the headers it puts on one line, shortest first.
                spare = console.width - needed
                for i in sorted(range(len(cols)), key=lambda i: len(cols[i]) - widths[i]):
                    if 0 < len(cols[i]) - widths[i] <= spare:
                        spare -= len(cols[i]) - widths[i]
                        widths[i] = len(cols[i])
                for column, width in zip(t.columns, widths, strict=True):
                    column.width = width
            console.print(t)
        else:
            # Too narrow for a row per flow (an 80-column terminal): a block per flow, its name and
            # span on a line, then each measure beside its value, wrapped between measures only.
            console.print(t.title, highlight=False)
            for row in rows:
                span = f" ({row[-1]})" if any(spans) and row[-1] else ""
                console.print(escape(row[0] + span), highlight=False)
                values = row[1 : len(_FLOW_MEASURES) + 1]
                _print_pairs([m.replace("{}", v) for m, v in zip(_FLOW_MEASURES, values, strict=True)], " · ")
        # Every video flow in every period of its bottleneck (a capacity phase, cut again where a
        # flow sharing the link starts or stops; older summaries have phases only); with several
        # flows or links, each row names them, and "with" names its competitors there.
        periods = sections(s)
        in_periods = [(ph, f) for ph in periods for f in ph["flows"] if f["kind"] == "video"]
        several_flows = len({f["id"] for _, f in in_periods}) > 1
        several_links = len({ph["link"] for ph, _ in in_periods}) > 1
        # The competitors: other calls' video and competing traffic (not a call's own audio).
        rivals = {f["id"] for f in flows if f["kind"] != "audio"}
        sharing = any(
            len([i for i in (ph.get("sharing") or [g["id"] for g in ph["flows"]]) if i in rivals]) > 1
            for ph, _ in in_periods
        )
        # What began each period, where the summary says (model revision 15): a capacity change,
        # flows that joined (+) or left (-) the link or its radio medium.
        names_of = {int(f["id"]): str(f["name"]) for f in s["flows"]}
        began = {id(ph): _began(ph, names_of) for ph, _ in in_periods}
        # Where only the capacity changes, the capacity column says so: no column for it alone.
        events = any(ph.get("joined") or ph.get("left") for ph, _ in in_periods)
        p = Table(title=f"phases (video flow{'s' if several_flows else ''})", title_justify="left")
        names = [
            "phase", *(["after"] if events else []), *(["link"] if several_links else []),
            *(["flow"] if several_flows else []), "capacity kbps", "send kbps", "util", "loss %",
            "qdelay p95 ms", "convergence s", *(["with"] if sharing else []),
        ]  # fmt: skip
        for col in names:
            p.add_column(col, justify="left" if col in ("link", "flow", "with") else "right")
        for ph, f in in_periods:
            # The flows sharing its link or radio medium (model revision 15), else its link's.
            with_ids = ph.get("sharing") or [g["id"] for g in ph["flows"]]
            others = [names_of[i] for i in with_ids if i in rivals and i != f["id"] and i in names_of]
            p.add_row(
                f"{ph['start_s']:.0f}-{ph['end_s']:.0f} s",
                *([escape(began[id(ph)])] if events else []),
                *([escape(str(ph["link"]))] if several_links else []),
                *([escape(str(f["name"]))] if several_flows else []),
                _fmt(ph["capacity_bps"], 1e-3),
                _fmt(f["mean_send_rate_bps"], 1e-3),
                _fmt(None if f["id"] in on_radio else f["utilization"], 1, 2),
                _fmt(f["loss_ratio"], 100, 2),
                _fmt(f["qdelay_p95_ms"], 1, 1),
                _fmt(f["convergence_time_s"], 1, 1),
                *([escape(_others(others))] if sharing else []),
            )
        if p.row_count:
            console.print(p)
        if s.get("wifi"):
            console.print(_wifi_table(s["wifi"]))
        if s.get("lte"):
            console.print(_lte_table(s["lte"]))
        for line in _fairness_lines(s):
            console.print(escape(line), highlight=False)
        # What must not be taken at face value (analysis.flags): said under the numbers.
        for f in flows:
            for flag in f.get("flags") or []:
                console.print(f"[yellow]flag:[/] {escape(str(f['name']))}: {escape(flag)}", highlight=False)
        where = f" → {r.path}" if r.path else ""
        if s.get("mode") in TESTBED_INFO:
            real = s[TESTBED_INFO[s["mode"]]]
            late = real["relay"]["lateness_us"]
            if s["mode"] == "browser":
                what = f"ran {_browsers(real)}"
            else:
                what = "emulated" if s["mode"] == "emulate" else f"GStreamer {real.get('version')} encoders"
            # A radio element's events: its transmissions' timing error against the model's.
            radio = "".join(
                f"; {e['name']} events p99 {e['lateness_us']['p99']:.0f} µs"
                for e in real["relay"].get("elements", [])
                if e["kind"] in ("wifi", "lte")
            )
            console.print(
                escape(
                    f"{what} {s['simulated_s']:.0f} s in real time; relay timing error "
                    f"p50 {late['p50']:.0f} µs, p99 {late['p99']:.0f} µs, max {late['max']:.0f} µs{radio}; "
                    f"run with metrics and files {s['wall_s']:.2f} s{where}"
                ),
                highlight=False,
            )
            # A real-time run says whether every process that keeps time kept it, and if not
            # which fell behind and by how much (`rtcbench.testbed.timing`).
            invalid = invalid_line(real)
            if invalid is None:
                console.print("valid: every process kept its timing", highlight=False)
            else:
                verdict = invalid.removeprefix("invalid: ")
                err_console.print(f"[bold red]invalid:[/] {escape(verdict)}", highlight=False, soft_wrap=True)
            reasons = set(real.get("reasons") or [])
            for w in real["warnings"]:
                if w not in reasons:
                    err_console.print(escape(f"warning: {w}"), highlight=False, soft_wrap=True)
            if real.get("failure"):
                err_console.print(
                    f"[bold red]failed:[/] {escape(real['failure'])}", highlight=False, soft_wrap=True
                )
            continue
        speed = s["simulated_s"] / s["sim_wall_s"] if s["sim_wall_s"] else float("inf")
        console.print(
            escape(
                f"simulated {s['simulated_s']:.0f} s in {s['sim_wall_s'] * 1e3:.0f} ms "
                f"({speed:,.0f}x real time); "
                f"run with metrics and files {s['wall_s']:.2f} s{where}"
            ),
            highlight=False,
        )


def print_suite(result: SuiteResult) -> None:
    """The terminal table of a suite: per scenario variant, controller and configuration, means
    over repetitions of the video flows, the competing flows and both Jain's indexes."""
    overview = result.overview()
    # Two configurations of one variant (another --set) are told apart by their run key.
    cases = overview.select("scenario", "variant", "controller").rows()
    several = len(set(cases)) < len(cases)
    # (heading, value of a row, shown only when some row has a value)
    measures: list[tuple[str, Callable[[dict[str, Any]], float | None], int, float, bool]] = [
        ("util", lambda r: r["utilization"], 2, 1, False),
        ("p95", lambda r: r["qdelay_p95_ms"], 1, 1, False),
        ("loss", lambda r: r["loss_ratio"], 2, 100, False),
        ("good", lambda r: r["goodput_bps"], 0, 1e-3, False),
        ("frz", lambda r: r["freezes"], 1, 1, True),
        ("fps", lambda r: r["fps_mean"], 1, 1, True),
        ("fd95", lambda r: r["frame_delay_p95_ms"], 0, 1, True),
        ("tcp", lambda r: r["tcp_bps"], 0, 1e-3, True),
        ("cbr", lambda r: r["cbr_bps"], 0, 1e-3, True),
        ("bg", lambda r: r["background_bps"], 0, 1e-3, True),
        ("jain v", lambda r: r["jain_index_video"], 3, 1, False),
        ("jain all", lambda r: r["jain_index_all"], 3, 1, True),
        # Runs with a flagged video flow (analysis.flags): shown only where a run has one.
        ("flagged", lambda r: r["flagged"] or None, 0, 1, True),
    ]
    rows = list(overview.iter_rows(named=True))
    shown = [m for m in measures if not m[4] or any(m[1](r) is not None for r in rows)]
    t = Table(
        title="suite: means over the repetitions",
        title_justify="left",
        caption="util, p95, loss, good, frz, fps, fd95: the video flows (utilisation of their path, "
        "queuing-delay p95 ms, loss %, goodput kbit/s, freezes, frames per second, frame delay p95 ms); "
        "tcp, cbr, "
        "bg: competing TCP, CBR and UDP-background kbit/s while they run; jain v: Jain's index of the "
        "video flows; jain all: of every data flow on the least fair shared link; flagged: runs whose "
        "video was starved, held at its sender, rendered nothing or started faster than measured "
        "(rtcbench run or report names them)",
        caption_justify="left",
    )
    ids = ["scenario", "variant", "controller", *(["config"] if several else [])]
    for col in ids:
        # Ids wrap instead of being cut, so two rows never read the same on a narrow terminal.
        t.add_column(col, justify="left", overflow="fold")
    for col in ["runs", *(m[0] for m in shown)]:
        t.add_column(col, justify="right", no_wrap=True)
    table_rows: list[list[str]] = []
    for row in rows:
        cells = [
            escape(row["scenario"]),
            # A space after each comma lets a long variant wrap between its parameters.
            escape((row["variant"] or "-").replace(",", ", ")),
            escape(row["controller"]),
            *([row["run_key"]] if several else []),
            str(row["runs"]),
            *(_fmt(value(row), scale, digits) for _, value, digits, scale, _ in shown),
        ]
        t.add_row(*cells)
        table_rows.append(cells)
    id_cells = [list(column) for column in zip(*(r[: len(ids)] for r in table_rows), strict=True)]
    value_cells = [list(column) for column in zip(*(r[len(ids) :] for r in table_rows), strict=True)]
    value_headers = ["runs", *(m[0] for m in shown)]
    needed = _table_width(
        [(h, cells, True) for h, cells in zip(ids, id_cells or [[] for _ in ids], strict=True)]
        + [
            (h, cells, False)
            for h, cells in zip(value_headers, value_cells or [[] for _ in value_headers], strict=True)
        ]
    )
    if needed <= console.width:
        console.print(t)
    else:
        # Too narrow for one row per case (an 80-column terminal): a block per case, its ids on
        # a line, then each measure with its value, wrapped between measures only.
        console.print(t.title, highlight=False)
        for row in rows:
            names = [row["scenario"], (row["variant"] or "-").replace(",", ", "), row["controller"]]
            runs = f"{row['runs']} run{'s' if row['runs'] != 1 else ''}"
            head = " · ".join([*names, *([row["run_key"]] if several else []), runs])
            pairs = [f"{name} {_fmt(value(row), scale, digits)}" for name, value, digits, scale, _ in shown]
            console.print(escape(head), highlight=False)
            _print_pairs(pairs, "   ")
        console.print(str(t.caption), highlight=False)
    total = result.ran + result.skipped
    speed = (
        f"simulated {result.simulated_s:,.0f} s at {result.speed:,.0f} s per wall-clock second"
        if result.speed is not None
        else "nothing left to simulate"
    )
    console.print(
        escape(
            f"{total} runs ({result.ran} simulated, {result.skipped} already complete) in "
            f"{result.wall_s:.1f} s; {speed}"
        ),
        highlight=False,
    )
    console.print(escape(f"tables: {result.out / FLOWS_TABLE}, {result.out / RUNS_TABLE}"), highlight=False)


def print_calibration(table: pl.DataFrame) -> None:
    """Each case's phases, browser against simulation, and how many agree (docs/calibration.md)."""
    import polars as pl

    from rtcbench import calibrate

    t = Table(title="Chromium (browser) against the simulator (gcc), per phase of the video flow")
    for heading in ("case", "phase", "capacity kbps", "rate kbps b / s", "diff", "qdelay p95 ms b / s",
                    "loss % b / s", "agree"):  # fmt: skip
        t.add_column(heading, justify="left" if heading == "case" else "right")
    for (case, flow, _), rows in table.group_by(["case", "flow", "phase"], maintain_order=True):
        by = {r["metric"]: r for r in rows.iter_rows(named=True)}
        rate, q95, loss = by["send_rate_kbps"], by["qdelay_p95_ms"], by["loss"]
        agree = all(r["agrees"] for r in by.values() if r["agrees"] is not None)

        def pair(r: dict[str, Any], scale: float, digits: int) -> str:
            return f"{_fmt(r['browser'], scale, digits)} / {_fmt(r['simulated'], scale, digits)}"

        t.add_row(
            f"{case} {flow}",
            f"{rate['start_s']:.0f}-{rate['end_s']:.0f} s",
            _fmt(rate["capacity_kbps"], 1, 0),
            pair(rate, 1, 0),
            "-" if rate["difference"] is None else f"{rate['difference'] * 100:+.0f} %",
            pair(q95, 1, 1),
            pair(loss, 100, 2),
            "yes" if agree else "no",
        )
    console.print(t)
    limited = table.filter(pl.col("cpu_limited") > 0.05).get_column("case").unique(maintain_order=True)
    for case in limited:
        err_console.print(
            escape(
                f"warning: {case}: the browser's encoder was held back by the CPU: rerun on a quiet machine"
            ),
            highlight=False,
            soft_wrap=True,
        )
    rates = table.filter(pl.col("metric") == "send_rate_kbps")
    within = int(rates.get_column("agrees").fill_null(False).sum())
    console.print(
        escape(
            f"{within} of {rates.height} phases within {calibrate.RATE_TOLERANCE:.0%} on the sending rate; "
            f"queuing delay within {calibrate.RATE_TOLERANCE:.0%} or {calibrate.DELAY_SLACK_MS:g} ms, loss "
            f"within {calibrate.RATE_TOLERANCE:.0%} or {calibrate.LOSS_SLACK:.1%} in "
            f"{int(table.get_column('agrees').fill_null(False).sum())} of {table.height} comparisons"
        ),
        highlight=False,
    )


SCORE_COLOURS = {"pass": "green", "warn": "yellow", "fail": "red", "n/a": "dim"}


def print_scorecard(table: pl.DataFrame, folders: list[Path]) -> None:
    """The scorecard of one run (a row per criterion), or of several (the scenario × controller
    matrix of checks passed, warned and failed, then each controller's share of passes)."""
    from rtcbench import scorecard as sc

    if len(folders) == 1:
        t = Table(title=escape(f"Scorecard: {folders[0]}"), title_justify="left")
        for col in ("criterion", "requirement", "verdict", "value", "pass", "warn", "note"):
            t.add_column(col)
        for row in table.iter_rows(named=True):
            colour = SCORE_COLOURS[row["verdict"]]
            value = "-" if row["value"] is None else f"{row['value']:.3g} {row['unit']}".strip()
            t.add_row(
                row["criterion"],
                row["requirement"],
                f"[{colour}]{row['verdict']}[/]",
                value,
                f"{row['pass_at']:g}",
                f"{row['warn_at']:g}",
                escape(row["note"]),
            )
        console.print(t)
    else:
        m = Table(title="Scorecard: checks passed / warned / failed", title_justify="left")
        m.add_column("scenario")
        cells = sc.matrix(table)
        ccs = sorted(set(cells["controller"]))
        for cc in ccs:
            m.add_column(escape(cc))
        for scenario in sorted(set(cells["scenario"])):
            cells_row: list[str] = [escape(scenario)]
            for cc in ccs:
                c = cells.filter((cells["scenario"] == scenario) & (cells["controller"] == cc))
                if c.height == 0:
                    cells_row.append("")
                    continue
                r = c.row(0, named=True)
                cells_row.append(f"[{SCORE_COLOURS[r['worst']]}]{r['pass']}/{r['warn']}/{r['fail']}[/]")
            m.add_row(*cells_row)
        console.print(m)
        a = Table(title="Per controller", title_justify="left")
        for col in ("controller", "pass", "warn", "fail", "passed"):
            a.add_column(col)
        for r in sc.per_controller(table).iter_rows(named=True):
            a.add_row(
                escape(r["controller"]),
                str(r["pass"]),
                str(r["warn"]),
                str(r["fail"]),
                f"{r['pass_share']:.0%}",
            )
        console.print(a)


VERDICT_STYLES = {
    "regression": "bold red",
    "improvement": "bold green",
    "no change": "",
    "too few repetitions": "dim",
    "not measured": "dim",
}


def _table_width(columns: list[tuple[str, Iterable[str], bool]]) -> int:
    """The width a rich table with a heavy box needs to show `columns` (header, cells, foldable)
    without cutting any: a foldable column as wide as its longest word (it folds between words),
    the others as wide as their longest cell; each with its padding and border."""

    def width(header: str, cells: Iterable[str], foldable: bool) -> int:
        texts = [header, *cells]
        if foldable:
            return max(len(word) for text in texts for word in (text.split() or [""]))
        return max(len(text) for text in texts)

    return 1 + sum(width(*c) + 3 for c in columns)


SHORT_VERDICTS = {
    "regression": "regression",
    "improvement": "improvement",
    "no change": "no change",
    "too few repetitions": "too few reps",
    "not measured": "not measured",
}
"""Verdicts as an 80-column comparison shows them."""


def _print_comparison_narrow(result: Comparison, b: str, rows: pl.DataFrame, judged: bool = True) -> None:
    """`print_comparison`'s table for a narrow terminal: the case's name and run counts on a line
    of their own above its metrics, the change without its relative size (the sentence after the
    tables has it), verdicts shortened."""
    console.print(escape(f"{b} (B) compared with {result.baseline} (A)"), highlight=False)
    for _, grouped in itertools.groupby(rows.iter_rows(named=True), _case_of_row):
        group = list(grouped)
        first = group[0]
        name = first["scenario"] + (f" [{first['variant']}]" if first["variant"] else "")
        if result.mode == "folders":
            name += f" · {first['controller_a']}"
        counts = sorted({f"{r['n_a']}/{r['n_b']}" for r in group})
        t = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True, show_edge=False)
        t.add_column("metric", no_wrap=True)
        for col in (result.baseline, b, "B − A", *(("95 % CI",) if judged else ())):
            t.add_column(escape(col), justify="right", no_wrap=True)
        if judged:
            t.add_column("verdict", no_wrap=True)
        for r in group:
            m = BY_NAME[r["metric"]]
            ci = m.interval(r) or "-"
            style = VERDICT_STYLES[r["verdict"]]
            verdict = SHORT_VERDICTS[r["verdict"]]
            t.add_row(
                m.heading,
                m.format(r["mean_a"]),
                m.format(r["mean_b"]),
                m.format(r["diff"], signed=True),
                *((ci, f"[{style}]{verdict}[/]" if style else verdict) if judged else ()),
            )
        console.print(escape(f"{name} (runs A/B: {', '.join(counts)})"), highlight=False)
        console.print(t)
    console.print(
        "↑/↓ higher/lower is better"
        + ("; 95 % CI: bootstrap interval of B − A over the repetitions" if judged else ""),
        highlight=False,
    )


def _case_of_row(r: dict[str, Any]) -> tuple[str, str, str]:
    return r["scenario"], r["variant"], r["controller_a"]


def print_comparison(result: Comparison) -> None:
    """The terminal tables of a comparison: one per side compared with the baseline, a row per
    case and metric (each case's name on its first row), regressions in red and improvements in
    green, then the verdict counts."""
    per_controller = result.mode == "folders"
    # One run a side: the means, said once to be unjudged, and no interval or verdict columns.
    once = result.note_once()
    if once is not None:
        console.print(escape(once), highlight=False)
    judged = once is None
    for b in result.labels[1:]:
        rows = result.table.filter(result.table.get_column("b") == b)
        t = Table(
            title=escape(f"{b} (B) compared with {result.baseline} (A)"),
            title_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
            collapse_padding=True,
            caption="↑/↓ higher/lower is better; "
            + ("95 % CI: bootstrap interval of B − A over the repetitions; " if judged else "")
            + "runs: A/B",
            caption_justify="left",
        )
        t.add_column("case", min_width=20, max_width=30, overflow="fold")
        t.add_column("metric", no_wrap=True)
        for col in (result.baseline, b, "B − A", *(("95 % CI",) if judged else ()), "runs"):
            t.add_column(escape(col), justify="right")
        if judged:
            t.add_column("verdict")
        value_headers = ["metric", result.baseline, b, "B − A", "95 % CI", "runs", "verdict"]
        value_rows: list[tuple[str, ...]] = []
        for _, grouped in itertools.groupby(rows.iter_rows(named=True), _case_of_row):
            group = list(grouped)
            first = group[0]
            # The case's name down its first rows: scenario, each variant parameter, and the
            # controller when folders are compared.
            lines = [first["scenario"]]
            if first["variant"]:
                lines += first["variant"].split(",")
            if per_controller:
                lines.append(first["controller_a"])
            if len(lines) > len(group):
                lines[len(group) - 1 :] = [" ".join(lines[len(group) - 1 :])]
            for i, r in enumerate(group):
                m = BY_NAME[r["metric"]]
                ci = m.interval(r) or "-"
                diff = m.format(r["diff"], signed=True)
                if r["rel_diff"] is not None:
                    diff += f" ({100 * r['rel_diff']:+.0f} %)"
                style = VERDICT_STYLES[r["verdict"]]
                value_rows.append(
                    (
                        m.heading, m.format(r["mean_a"]), m.format(r["mean_b"]), diff, ci,
                        f"{r['n_a']}/{r['n_b']}", r["verdict"],
                    )
                )  # fmt: skip
                t.add_row(
                    escape(lines[i]) if i < len(lines) else "",
                    m.heading,
                    m.format(r["mean_a"]),
                    m.format(r["mean_b"]),
                    f"[{style}]{diff}[/]" if style and judged else diff,
                    *((ci,) if judged else ()),
                    f"{r['n_a']}/{r['n_b']}",
                    *((f"[{style}]{r['verdict']}[/]" if style else r["verdict"],) if judged else ()),
                    end_section=i + 1 == len(group),
                )
        # The case column folds down to 20 characters; the others keep their width.
        fixed = [
            (h, cells, False) for h, cells in zip(value_headers, zip(*value_rows, strict=True), strict=True)
        ]
        if _table_width([("case", ["x" * 20], False), *fixed]) <= console.width:
            console.print(t)
        else:
            _print_comparison_narrow(result, b, rows, judged)
        for sentence in result.in_short(b):
            console.print(escape(sentence), highlight=False)
        if judged:
            counts = ", ".join(f"{v}: {n}" for v, n in result.counts(b).items() if n)
            console.print(escape(f"{b} vs {result.baseline}: {counts}"), highlight=False)
