"""The `rtcbench` command line.

User mistakes (unknown scenario or controller, malformed TOML, a bad value) and problems of the
environment (a folder that cannot be written, a full disk, a file that is not UTF-8, a corrupt
result) end with exit status 2 and one line on stderr that says what is wrong and what is allowed;
no traceback. A Python controller that fails (`--cc module:Class`) ends with exit status 1: its
traceback, then one line naming the controller and the method. Ctrl-C or SIGTERM stops any command
within a second, removes what it was writing, and ends with status 130 and one line. Anything else
is a bug and shows its traceback; `--debug` (or `RTCBENCH_DEBUG=1`) shows the traceback of every
error.
"""

from __future__ import annotations

import functools
import itertools
import os
import shlex
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ParamSpec, cast

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from rtcbench import _core
from rtcbench.compare import BY_NAME, MIN_REPS, CompareError, Comparison, comparison
from rtcbench.controller import ControllerError
from rtcbench.results import InputError, run_folders, write_parquet_atomic
from rtcbench.runner import (
    RunResult,
    TraceTooLarge,
    UnknownController,
    check_mode,
    controllers,
    run,
    run_variant,
)
from rtcbench.scenarios import ScenarioNotFound, builtin, resolve
from rtcbench.suite import FLOWS_TABLE, RUNS_TABLE, SUITES, SuiteResult, run_suite
from rtcbench.testbed import TestbedError
from rtcbench.workers import interrupt_on_sigterm

if TYPE_CHECKING:
    import polars as pl

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="rtcbench: congestion control for real-time media, simulated far faster than real time.",
)
# Wide enough for the summary tables when the output is not a terminal (CI logs, pipes).
console = Console(width=None if sys.stdout.isatty() else 120)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 200)

USER_ERRORS = (ScenarioNotFound, UnknownController, _core.ScenarioError, TraceTooLarge, TestbedError)

_DEBUG = os.environ.get("RTCBENCH_DEBUG") == "1"
"""Show the traceback of every error (`--debug`, or `RTCBENCH_DEBUG=1` in the environment)."""


CC_HELP = (
    "Controllers, comma-separated: gcc, gcc-draft, nada, scream, fixed, or Python controller "
    "classes as package.module:Class or path/to/file.py:Class."
)


def _fail(message: str, status: int = 2) -> None:
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(status)


def os_error_message(e: OSError) -> str:
    """One line for an error of the operating system: the file(s) and what went wrong."""
    what = e.strerror or str(e)
    if e.filename is not None and e.filename2 is not None:
        return f"{e.filename} → {e.filename2}: {what}"
    if e.filename is not None:
        return f"{e.filename}: {what}"
    return what


_P = ParamSpec("_P")


def guarded(interrupted: str) -> Callable[[Callable[_P, None]], Callable[_P, None]]:
    """Makes a command answer an interrupt with `interrupted` (one line, status 130), a user or
    environment error with one line (status 2), a failing Python controller with its traceback
    and one line (status 1); other exceptions are bugs and keep their traceback. `interrupted` may
    name the command's `{out}` option."""

    def wrap(command: Callable[_P, None]) -> Callable[_P, None]:
        @functools.wraps(command)
        def run(*args: _P.args, **kwargs: _P.kwargs) -> None:
            try:
                command(*args, **kwargs)
            except KeyboardInterrupt:
                message = interrupted.format(out=kwargs.get("out") or "the results folder")
                err_console.print(escape(f"interrupted: {message}"), highlight=False, soft_wrap=True)
                raise typer.Exit(130) from None
            except typer.Exit:
                raise
            except ControllerError as e:
                if _DEBUG:
                    raise
                _controller_failed(e)
            except (*USER_ERRORS, InputError) as e:
                if _DEBUG:
                    raise
                _fail(str(e))
            except OSError as e:
                if _DEBUG:
                    raise
                _fail(os_error_message(e))

        return run

    return wrap


def _controller_failed(e: ControllerError) -> None:
    """A Python controller's exception: where it was raised in the controller's code, then one line."""
    if e.__cause__ is not None:
        sys.stderr.write("".join(traceback.format_exception(e.__cause__)))
    _fail(str(e), status=1)


@app.callback()
def _options(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show the traceback of every error (also RTCBENCH_DEBUG=1).")
    ] = False,
) -> None:
    global _DEBUG
    _DEBUG = _DEBUG or debug


@app.command("list")
@guarded("nothing was written")
def list_cmd() -> None:
    """List the built-in scenarios and controllers."""
    t = Table(title="Scenarios", title_justify="left")
    for col in ("id", "variants", "title", "source"):
        t.add_column(col)
    for s in builtin():
        variants = resolve(s.id)
        t.add_row(s.id, str(len(variants)), s.title, s.source)
    console.print(t)
    c = Table(title="Controllers", title_justify="left")
    c.add_column("name")
    c.add_column("description")
    for name, desc in controllers():
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
    """`Chromium <version>` and each call's set-up time, for the line under a browser run."""
    setups = [
        f"{name} {setup['connected']:.2f} s"
        for name, call in info["calls"].items()
        if (setup := call.get("setup_s")) and setup.get("connected") is not None
    ]
    joined = f" (set-up to ICE connected: {', '.join(setups)})" if setups else ""
    return f"Chromium {info.get('chromium') or '(version unknown)'}{joined}"


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
            "rtt ms", "fps", "freezes", "active",
        ]  # fmt: skip
        for col in cols:
            t.add_column(col, justify="left" if col in ("flow", "active") else "right", overflow="fold")
        flows = [f for f in s["flows"] if f["kind"] in SHOWN_KINDS]
        spans = [_span(f, s["simulated_s"]) for f in flows]
        # A competing flow's goodput is its received payload (`cross_traffic`); the per-flow
        # goodput counts media payload only. The UDP background's "capacity" is what it leaves
        # to the others (RFC 8867 §4.2), so a utilisation of it would mean nothing.
        cross = {c["id"]: c for c in s.get("cross_traffic", [])}
        for f, span in zip(flows, spans, strict=True):
            c = cross.get(f["id"])
            background = f.get("workload") == "udp-background"
            t.add_row(
                escape(f["name"]),
                _fmt(f["mean_send_rate_bps"], 1e-3),
                _fmt(c["goodput_bps"] if c is not None else f["mean_goodput_bps"], 1e-3),
                _fmt(None if background else f["utilization"], 1, 2),
                _fmt(f["loss_ratio"], 100, 2),
                _fmt(f["qdelay_p50_ms"], 1, 1),
                _fmt(f["qdelay_p95_ms"], 1, 1),
                _fmt(f["rtt_mean_ms"], 1, 0),
                _fmt(f["fps_mean"], 1, 1),
                _fmt(f["freezes"]),
                span,
            )
        if not any(spans):
            t.columns.pop()
        console.print(t)
        p = Table(title="phases (video flow)", title_justify="left")
        for col in ("phase", "capacity kbps", "send kbps", "util", "loss %", "qdelay p95 ms",
                    "convergence s"):  # fmt: skip
            p.add_column(col, justify="right")
        for ph in s["phases"]:
            video = [f for f in ph["flows"] if f["kind"] == "video"]
            if not video:
                continue
            f = video[0]
            p.add_row(
                f"{ph['start_s']:.0f}-{ph['end_s']:.0f} s",
                _fmt(ph["capacity_bps"], 1e-3),
                _fmt(f["mean_send_rate_bps"], 1e-3),
                _fmt(f["utilization"], 1, 2),
                _fmt(f["loss_ratio"], 100, 2),
                _fmt(f["qdelay_p95_ms"], 1, 1),
                _fmt(f["convergence_time_s"], 1, 1),
            )
        if p.row_count:
            console.print(p)
        if s.get("wifi"):
            console.print(_wifi_table(s["wifi"]))
        if s.get("lte"):
            console.print(_lte_table(s["lte"]))
        for line in _fairness_lines(s):
            console.print(escape(line), highlight=False)
        where = f" → {r.path}" if r.path else ""
        if s.get("mode") in ("emulate", "browser"):
            real = s["emulation"] if s["mode"] == "emulate" else s["browser"]
            late = real["relay"]["lateness_us"]
            what = "emulated" if s["mode"] == "emulate" else f"ran {_browsers(real)}"
            console.print(
                escape(
                    f"{what} {s['simulated_s']:.0f} s in real time; relay timing error "
                    f"p50 {late['p50']:.0f} µs, p99 {late['p99']:.0f} µs, max {late['max']:.0f} µs; "
                    f"run with metrics and files {s['wall_s']:.2f} s{where}"
                ),
                highlight=False,
            )
            for w in real["warnings"]:
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


def _controller_list(cc: str) -> list[str]:
    """`--cc` as a list: comma-separated, each once, none empty; exit 2 otherwise."""
    names = [c.strip() for c in cc.split(",")]
    if not all(names):
        _fail(f"--cc {cc!r}: an empty controller name (give names separated by commas)")
    dupes = sorted({c for c in names if names.count(c) > 1})
    if dupes:
        _fail(f"--cc {cc!r}: names {', '.join(dupes)} more than once")
    return names


def _listed_option(values: list[str] | None) -> list[str] | None:
    """A list option given comma-separated, repeated, or both (`--labels a,b`, `--labels a
    --labels b`), as one list; None when not given."""
    if not values:
        return None
    return [part.strip() for v in values for part in v.split(",")]


LABELS_HELP = "Comma-separated or repeated"

MODE_HELP = (
    "simulate (rtcbench's simulator); emulate: real packets between Linux network namespaces, in "
    "real time (needs root; docs/emulation.md); or browser: the calls between real Chromium peers "
    "over such a network (needs root and Chromium, --cc gcc; docs/browser.md)."
)


@app.command("run")
@guarded("no half-written run is left; finished variants are kept in {out}")
def run_cmd(
    scenario: Annotated[
        str, typer.Argument(help="A built-in scenario id (see `rtcbench list`) or a TOML file.")
    ],
    cc: Annotated[str, typer.Option("--cc", help=CC_HELP)] = "gcc",
    seed: Annotated[
        int,
        typer.Option(help="Seed of every random draw (0 to 2**64 - 1); runs are a pure function of it."),
    ] = 1,
    out: Annotated[Path, typer.Option(help="Results folder.")] = Path("results"),
    sets: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override a scenario field: path=value, e.g. links.forward.delay=80ms."),
    ] = None,
    figure: Annotated[bool, typer.Option(help="Render overview.png for each run.")] = True,
    pcap: Annotated[
        Path | None,
        typer.Option(
            help="Also write the call's packets to this capture (one file per variant: NAME@VARIANT.pcap)."
        ),
    ] = None,
    mode: Annotated[str, typer.Option(help=MODE_HELP)] = "simulate",
) -> None:
    """Run every variant of a scenario with each controller and write one results folder per variant
    and controller."""
    command = "rtcbench " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    names = _controller_list(cc)
    check_mode(mode)
    if pcap is not None and len(names) > 1:
        _fail("--pcap takes one controller: the captures of several would have the same name")
    for name in names:
        results = run(
            scenario, name, seed, out, sets or [], figure=figure, command=command, pcap=pcap, mode=mode
        )
        print_summary(results)
        if any((r.summary.get("browser") or {}).get("failure") for r in results):
            raise typer.Exit(1)


@app.command("table")
@guarded("nothing was written")
def table_cmd(
    scenarios: Annotated[
        list[str] | None, typer.Argument(help="Scenario ids or files (default: every built-in scenario).")
    ] = None,
    cc: Annotated[str, typer.Option("--cc", help=CC_HELP)] = "gcc,fixed",
    seed: Annotated[int, typer.Option(help="Seed of every run (0 to 2**64 - 1).")] = 1,
) -> None:
    """Compare controllers on scenarios: one Markdown row per scenario variant, controller and flow.

    Rows are the video flows and the competing TCP and CBR flows, each over the time it runs:
    utilisation (receive rate / capacity, the flow's share of the bottleneck), queuing-delay p95,
    loss and, for video, the start-up convergence time (docs/metrics.md).
    """
    names = _controller_list(cc)
    ids = scenarios or [b.id for b in builtin()]
    rows = [
        "| scenario | variant | controller | flow | utilisation | qdelay p95 ms | loss % | convergence s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for scenario in ids:
        for v in resolve(scenario):
            for name in names:
                r = run_variant(v, name, seed, None, figure=False)
                for f in r.summary["flows"]:
                    if f["kind"] not in ("video", "tcp", "cbr"):
                        continue
                    cells = [
                        v.scenario_id,
                        v.variant or "-",
                        name,
                        f["name"],
                        _fmt(f["utilization"], 1, 2),
                        _fmt(f["qdelay_p95_ms"], 1, 0),
                        _fmt(f["loss_ratio"], 100, 2),
                        _fmt(f["convergence_time_s"], 1, 1),
                    ]
                    rows.append("| " + " | ".join(cells) + " |")
    print("\n".join(rows))


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
        ("tcp", lambda r: r["tcp_bps"], 0, 1e-3, True),
        ("cbr", lambda r: r["cbr_bps"], 0, 1e-3, True),
        ("bg", lambda r: r["background_bps"], 0, 1e-3, True),
        ("jain v", lambda r: r["jain_index_video"], 3, 1, False),
        ("jain all", lambda r: r["jain_index_all"], 3, 1, True),
    ]
    rows = list(overview.iter_rows(named=True))
    shown = [m for m in measures if not m[4] or any(m[1](r) is not None for r in rows)]
    t = Table(
        title="suite: means over the repetitions",
        title_justify="left",
        caption="util, p95, loss: the video flows (utilisation, queuing-delay p95 ms, loss %); tcp, cbr, "
        "bg: competing TCP, CBR and UDP-background kbit/s while they run; jain v: Jain's index of the "
        "video flows; jain all: of every data flow on the least fair shared link",
        caption_justify="left",
    )
    ids = ["scenario", "variant", "controller", *(["config"] if several else [])]
    for col in ids:
        # Ids wrap instead of being cut, so two rows never read the same on a narrow terminal.
        t.add_column(col, justify="left", overflow="fold")
    for col in ["runs", *(m[0] for m in shown)]:
        t.add_column(col, justify="right", no_wrap=True)
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
    console.print(t)
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


@app.command("suite")
@guarded("finished runs are kept in {out}; the same command resumes them")
def suite_cmd(
    names: Annotated[
        list[str],
        typer.Argument(
            help=f"Suite names ({', '.join(SUITES)}), built-in scenario ids or TOML files.",
            show_default=False,
        ),
    ],
    cc: Annotated[str, typer.Option("--cc", help=CC_HELP)] = "gcc",
    reps: Annotated[int, typer.Option(help="Repetitions; repetition r runs with seed SEED + r.")] = 1,
    jobs: Annotated[
        int | None, typer.Option(help="Worker processes (default: one per CPU; 1 runs in this process).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the first repetition (0 to 2**64 - 1).")] = 1,
    out: Annotated[Path, typer.Option(help="Results folder (runs and suite tables).")] = Path("results"),
    sets: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override a field of every scenario: path=value, e.g. duration=30s."),
    ] = None,
    mode: Annotated[str, typer.Option(help=MODE_HELP + " Emulated runs run one at a time.")] = "simulate",
) -> None:
    """Run every variant of the selected scenarios with every controller, in parallel, and write
    the suite tables <out>/suite.parquet (per flow) and <out>/suite-runs.parquet (per run).
    Runs already complete in <out> are read back, not run again."""
    command = "rtcbench " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    names_cc = _controller_list(cc)
    with _progress_bar() as progress:
        result = run_suite(
            names, names_cc, reps, jobs, out, sets or [], seed, progress=progress, command=command, mode=mode
        )
    print_suite(result)


@app.command("sweep")
@guarded("finished runs are kept; the same command resumes the sweep")
def sweep_cmd(
    spec: Annotated[Path, typer.Argument(help="Sweep file (TOML; docs/sweeps.md).", show_default=False)],
    out: Annotated[Path | None, typer.Option(help="Results folder (default: results/<file name>).")] = None,
    jobs: Annotated[
        int | None,
        typer.Option(help="Local worker processes (default: one per CPU; 1 runs in this process)."),
    ] = None,
    ray: Annotated[
        str | None,
        typer.Option("--ray", help="Run on the Ray cluster at this address ('auto': the one joined)."),
    ] = None,
    mode: Annotated[
        str, typer.Option(help=MODE_HELP + " Emulated runs run one at a time, or one per Ray node.")
    ] = "simulate",
) -> None:
    """Run every point of a parameter sweep with every controller and seed, in parallel, and index
    the runs in <out>/sweep.parquet (one row per run, a column per swept field) and
    <out>/sweep-flows.parquet. Runs already complete in <out> are read back, not run again."""
    from rtcbench import sweep as sw

    command = "rtcbench " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    if jobs is not None and jobs < 1:
        _fail(f"--jobs must be at least 1, got {jobs}")
    try:
        parsed = sw.load(spec)
    except sw.SweepError as e:
        _fail(str(e))
    folder = out if out is not None else Path("results") / spec.stem
    console.print(escape(f"sweep {spec}: {sw.describe(parsed)} → {folder}"), highlight=False)
    with _progress_bar() as progress:
        result = sw.run_sweep(
            parsed, folder, jobs, ray_address=ray, progress=progress, command=command, mode=mode
        )
    console.print(
        f"{result.ran + result.skipped} runs ({result.ran} {mode}d, {result.skipped} already complete) "
        f"in {result.wall_s:.1f} s\nindex: {result.out / sw.RUNS_TABLE}, {result.out / sw.FLOWS_TABLE}",
        highlight=False,
    )


SCORE_COLOURS = {"pass": "green", "warn": "yellow", "fail": "red", "n/a": "dim"}


@app.command("calibrate")
@guarded("no half-written run is left; finished runs are kept in {out} and reused next time")
def calibrate_cmd(
    out: Annotated[Path, typer.Option(help="Results folder (complete runs in it are reused).")] = Path(
        "results/calibration"
    ),
    cases: Annotated[
        list[str] | None,
        typer.Option(
            "--case",
            help="A case instead of the fixed set (repeatable): SCENARIO or SCENARIO:name=value,... "
            "naming one variant.",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the simulated runs (and the browser runs' clips).")] = 1,
) -> None:
    """Calibrate the simulator against Chromium: run each case between real Chromium peers
    (--mode browser, as root) and in the simulator with gcc, and compare each video flow's
    phases: mean sending rate, queuing delay and loss (docs/calibration.md). The fixed set takes
    about 11 minutes; it writes <out>/calibration.parquet."""
    from rtcbench import calibrate

    command = "rtcbench " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    chosen = [calibrate.parse_case(c) for c in cases] if cases else list(calibrate.CASES)

    def told(case: calibrate.Case, mode: str, summary: dict[str, Any], ran: bool) -> None:
        how = "ran" if ran else "kept"
        err_console.print(escape(f"{how}: {case.label()} · {mode}"), highlight=False)

    table = calibrate.calibrate(out, chosen, seed=seed, command=command, on_run=told)
    print_calibration(table)
    console.print(escape(f"→ {out / calibrate.TABLE}"), highlight=False)


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


@app.command("score")
@guarded("no scorecard was written")
def score_cmd(
    folder: Annotated[Path, typer.Argument(help="A run folder, or a folder of runs (a suite).")],
    thresholds: Annotated[
        Path | None, typer.Option(help="TOML file overriding criteria thresholds (docs/scorecard.md).")
    ] = None,
) -> None:
    """Judge every run under FOLDER against the RFC 8836 requirements (docs/scorecard.md): the
    test case × controller matrix and each controller's share of passes. The long table (one row
    per run and criterion) is written to FOLDER/scorecard.parquet."""
    from rtcbench import scorecard as sc

    if not folder.is_dir():
        _fail(f"{folder}: not a folder")
    try:
        criteria = sc.load_thresholds(thresholds) if thresholds is not None else sc.CRITERIA
    except sc.ScorecardError as e:
        _fail(str(e))
    folders = run_folders(folder)
    if not folders:
        _fail(f"{folder}: no run folders (none holds a summary.json)")
    problems: list[str] = []
    table = sc.score_table(folders, criteria, problems)
    for p in problems:
        err_console.print(f"[yellow]skipped:[/] {escape(p)}", highlight=False, soft_wrap=True)
    if table.height == 0:
        _fail(f"{folder}: no run could be scored")
    write_parquet_atomic(table, folder / "scorecard.parquet")
    if len(folders) == 1:
        t = Table(title=f"Scorecard: {folders[0]}", title_justify="left")
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
            m.add_column(cc)
        for scenario in sorted(set(cells["scenario"])):
            cells_row: list[str] = [scenario]
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
                r["controller"], str(r["pass"]), str(r["warn"]), str(r["fail"]), f"{r['pass_share']:.0%}"
            )
        console.print(a)
    console.print(f"table: {folder / 'scorecard.parquet'}", highlight=False)


VERDICT_STYLES = {
    "regression": "bold red",
    "improvement": "bold green",
    "no change": "",
    "insufficient data": "dim",
    "too few repetitions": "dim",
}


def _case_of_row(r: dict[str, Any]) -> tuple[str, str, str]:
    return r["scenario"], r["variant"], r["controller_a"]


def print_comparison(result: Comparison) -> None:
    """The terminal tables of a comparison: one per side compared with the baseline, a row per
    case and metric (each case's name on its first row), regressions in red and improvements in
    green, then the verdict counts."""
    per_controller = result.mode == "folders"
    for b in result.labels[1:]:
        rows = result.table.filter(result.table.get_column("b") == b)
        t = Table(
            title=escape(f"{b} (B) compared with {result.baseline} (A)"),
            title_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
            collapse_padding=True,
            caption="↑/↓ higher/lower is better; 95 % CI: bootstrap interval of B − A over the "
            "repetitions; runs: A/B",
            caption_justify="left",
        )
        t.add_column("case", min_width=20, max_width=30, overflow="fold")
        t.add_column("metric", no_wrap=True)
        for col in (result.baseline, b, "B − A", "95 % CI", "runs"):
            t.add_column(escape(col), justify="right")
        t.add_column("verdict")
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
                if r["ci_low"] is None:
                    ci = "undefined" if r["diff"] is not None else "-"
                else:
                    ci = f"{m.format(r['ci_low'], signed=True)} … {m.format(r['ci_high'], signed=True)}"
                diff = m.format(r["diff"], signed=True)
                if r["rel_diff"] is not None:
                    diff += f" ({100 * r['rel_diff']:+.0f} %)"
                style = VERDICT_STYLES[r["verdict"]]
                t.add_row(
                    escape(lines[i]) if i < len(lines) else "",
                    m.heading,
                    m.format(r["mean_a"]),
                    m.format(r["mean_b"]),
                    f"[{style}]{diff}[/]" if style else diff,
                    ci,
                    f"{r['n_a']}/{r['n_b']}",
                    f"[{style}]{r['verdict']}[/]" if style else r["verdict"],
                    end_section=i + 1 == len(group),
                )
        console.print(t)
        counts = ", ".join(f"{v}: {n}" for v, n in result.counts(b).items())
        console.print(escape(f"{b} vs {result.baseline}: {counts}"), highlight=False)


@app.command("compare")
@guarded("no comparison was written")
def compare_cmd(
    dirs: Annotated[
        list[Path],
        typer.Argument(
            help="Suite folders (rtcbench suite --out). One folder: compare its controllers; "
            "several: compare each with the first, per scenario, variant and controller.",
            show_default=False,
        ),
    ],
    labels: Annotated[
        list[str] | None,
        typer.Option(
            "--labels",
            help=f"{LABELS_HELP}: with one folder, the controllers to compare (the first is the "
            "baseline); with several, a name for each folder (default: the folder names).",
        ),
    ] = None,
    baseline: Annotated[
        str | None, typer.Option(help="The side the others are compared with (default: the first).")
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric", help="Metrics, comma-separated or repeated (default: all; see docs/compare.md)."
        ),
    ] = None,
    tolerance: Annotated[
        float, typer.Option(help="Relative change below which nothing is flagged (0.05 = 5 %).")
    ] = 0.05,
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples per comparison.")] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap: the same seed, the same output.")] = 0,
    out: Annotated[Path | None, typer.Option(help="Also write the comparison as this Parquet file.")] = None,
    fail_on_regression: Annotated[
        bool, typer.Option("--fail-on-regression", help="Exit with status 1 if any regression is found.")
    ] = False,
    min_reps: Annotated[
        int, typer.Option(help="Repetitions each side of a case needs for a verdict (at least 2).")
    ] = MIN_REPS,
    any_config: Annotated[
        bool,
        typer.Option(
            "--any-config",
            help="Pair cases by name even where their configurations differ (another --set, "
            "scenario or trace file); such rows are marked.",
        ),
    ] = False,
) -> None:
    """Compare result sets: means per case and metric, the difference B − A with a bootstrap 95 %
    interval over the repetitions, and a verdict (regression, improvement, no change,
    insufficient data, too few repetitions). See docs/compare.md."""
    if out is not None and out.is_dir():
        _fail(f"--out {out}: is a folder; give a file name such as comparison.parquet")
    try:
        result = comparison(
            dirs,
            _listed_option(labels),
            baseline=baseline,
            metrics=_listed_option(metric),
            tolerance=tolerance,
            resamples=resamples,
            seed=seed,
            min_reps=min_reps,
            any_config=any_config,
        )
    except CompareError as e:
        _fail(str(e))
    for p in result.problems:
        err_console.print(f"[yellow]skipped:[/] {escape(p)}", highlight=False, soft_wrap=True)
    for n in result.notes:
        err_console.print(f"[yellow]note:[/] {escape(n)}", highlight=False, soft_wrap=True)
    print_comparison(result)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_parquet_atomic(result.table, out)
        console.print(escape(f"table: {out}"), highlight=False)
    regressions = int((result.table.get_column("verdict") == "regression").sum())
    if fail_on_regression and regressions:
        raise typer.Exit(1)


@app.command("report")
@guarded("no report was written")
def report_cmd(
    dirs: Annotated[
        list[Path],
        typer.Argument(
            help="Run folders, suite folders (a suite's --out) or several suites.", show_default=False
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            help="The HTML file (default: DIR/report.html for one folder, report.html for several)."
        ),
    ] = None,
    figures: Annotated[
        Path | None,
        typer.Option(
            help="Also write every figure into this folder as <id>.png and <id>.svg (the page "
            "embeds PNG only; SVG is drawn only with this option)."
        ),
    ] = None,
    run_figures: Annotated[
        str,
        typer.Option(
            help="Time figures: per case, each controller's first seed side by side (first); that "
            "and every run's own (all); or none."
        ),
    ] = "first",
    jobs: Annotated[
        int | None, typer.Option(help="Processes drawing figures (default: one per CPU; 1: this process).")
    ] = None,
    labels: Annotated[
        list[str] | None,
        typer.Option(
            "--labels", help=f"{LABELS_HELP}: a name per folder, in order (default: the folders' names)."
        ),
    ] = None,
) -> None:
    """Write one self-contained HTML report (offline: nothing fetched) of the runs under DIRS:
    scorecard, per-case CDFs and box plots over repetitions, per-run figures and phase tables,
    and the commands and versions behind them (docs/report.md). Folders or files that cannot be
    used are named on stderr and in the report's Problems section; the rest is still reported."""
    from rtcbench.report import RunFigures, build_report

    command = "rtcbench " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    if run_figures not in ("first", "all", "none"):
        _fail(f"--run-figures must be first, all or none, got {run_figures!r}")
    if jobs is not None and jobs < 1:
        _fail(f"--jobs must be at least 1, got {jobs}")
    label = _listed_option(labels)
    if label is not None and len(label) != len(dirs):
        _fail(f"{len(label)} --labels for {len(dirs)} folders: give one per folder, in order")
    for d in dirs:
        if not d.is_dir():
            _fail(f"{d}: not a folder")
    with _progress_bar("figures") as progress:
        result = build_report(
            dirs,
            out,
            figures=figures,
            run_figures=cast(RunFigures, run_figures),  # checked above
            jobs=jobs,
            labels=label,
            command=command,
            progress=progress,
        )
    for p in result.problems:
        err_console.print(f"[yellow]problem:[/] {escape(str(p))}", highlight=False, soft_wrap=True)
    extra = f"; {len(result.figure_files)} figure files in {figures}" if figures is not None else ""
    problems = f", {len(result.problems)} problems (see above)" if result.problems else ""
    console.print(
        escape(f"report: {result.path} ({result.runs} runs, {len(result.figures)} figures{problems}){extra}"),
        highlight=False,
    )


def main() -> None:
    interrupt_on_sigterm()
    try:
        code = app(standalone_mode=False, prog_name="rtcbench")
    except typer.TyperException as e:
        # A mistake on the command line (unknown option, a value of the wrong type): one line and
        # where to look, instead of click's box; `rtcbench` alone shows the help.
        format_message = getattr(e, "format_message", None)
        message = str(format_message()) if callable(format_message) else str(e)
        status = int(getattr(e, "exit_code", 2))
        if type(e).__name__ == "NoArgsIsHelpError":
            sys.stderr.write(message + "\n")
            sys.exit(status)
        ctx = getattr(e, "ctx", None)
        where = f" (see {ctx.command_path} --help)" if ctx is not None else ""
        err_console.print(f"[bold red]error:[/] {escape(message)}{where}", highlight=False, soft_wrap=True)
        sys.exit(status)
    except typer.Abort:
        err_console.print("aborted", highlight=False)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
