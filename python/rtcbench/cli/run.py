"""`rtcbench list`, `rtcbench run` and `rtcbench table`: the built-in scenarios and controllers, and
runs of scenarios."""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from rtcbench.analysis.capacity import radio_flows
from rtcbench.cli.errors import _fail, guarded
from rtcbench.cli.options import CC_HELP, MODE_HELP, _controller_list, check_jobs
from rtcbench.cli.render import _fmt, console, print_controllers, print_scenarios, print_summary
from rtcbench.compare import RUNS_INDEX, load_runs
from rtcbench.results import write_parquet_atomic
from rtcbench.runner import RunResult, check_browsers, check_mode, controllers, run, run_variant
from rtcbench.scenarios import builtin, resolve
from rtcbench.suite import SUITES, run_parallel, select

NETWORKS = ("wired", "wifi", "lte", "trace")
"""What `rtcbench list --network` tells scenarios apart by: a Wi-Fi BSS, an LTE cell, a link
driven by a capacity trace, or none of the radios (wired, with or without a trace)."""


def _networks(spec: Mapping[str, Any]) -> list[str]:
    """The networks of a scenario (its first variant's), in `NETWORKS` order."""
    traced = any(link.get("capacity_trace") for link in spec.get("links", ()))
    radio = [n for n in ("wifi", "lte") if spec.get(n)]
    return [n for n in NETWORKS if n in radio or (n == "wired" and not radio) or (n == "trace" and traced)]


@guarded("nothing was written")
def list_cmd(
    text: Annotated[
        str | None, typer.Argument(help="Only the scenarios whose id, title or source holds this text.")
    ] = None,
    suite: Annotated[
        str | None, typer.Option(help=f"Only the scenarios of a suite: {', '.join(SUITES)}.")
    ] = None,
    network: Annotated[
        str | None, typer.Option(help=f"Only the scenarios over a network: {', '.join(NETWORKS)}.")
    ] = None,
) -> None:
    """List the built-in scenarios (those matching every filter given) and the controllers."""
    if suite is not None and suite not in SUITES:
        _fail(f"--suite {suite!r}: no such suite (allowed: {', '.join(SUITES)})")
    if network is not None and network not in NETWORKS:
        _fail(f"--network {network!r}: no such network (allowed: {', '.join(NETWORKS)})")
    in_suite = set(select([suite])) if suite is not None else None
    rows = []
    for s in builtin():
        if in_suite is not None and s.id not in in_suite:
            continue
        if text is not None and not any(text.casefold() in x.casefold() for x in (s.id, s.title, s.source)):
            continue
        variants = resolve(s.id)
        networks = _networks(variants[0].spec)
        if network is not None and network not in networks:
            continue
        rows.append((s.id, str(len(variants)), ", ".join(networks), s.title, s.source))
    print_scenarios(rows)
    learned = (
        "onnx:MODEL",
        "a learned policy in ONNX with the MMSys 2024 challenge's interface, run at each call's "
        "receiver, its estimates sent by REMB (docs/controllers/onnx.md)",
    )
    print_controllers([*controllers(), learned])


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
    field_trials: Annotated[
        str,
        typer.Option(
            help="With --mode browser: Chromium field trials every Chromium peer forces, as Trial/Group/ "
            "pairs, e.g. WebRTC-CongestionWindow/QueueSize:350,MinBitrate:30000/; they key the run."
        ),
    ] = "",
    browser: Annotated[
        str,
        typer.Option(
            help="With --mode browser: the peers' browser, chromium or firefox, or per node, e.g. "
            "firefox,B=chromium (Firefox but node B Chromium); it keys the run."
        ),
    ] = "chromium",
    browser_l4s: Annotated[
        str,
        typer.Option(
            "--browser-l4s",
            help="With --mode browser: Chromium's L4S mode (RFC 8888 feedback, media sent ECT(1)): "
            "always or only_after_ce with --cc scream2 (always by default), goog_cc_with_ect1 with "
            "--cc gcc (GoogCC, which ignores CE); Chromium only, and Chromium 156 has only always; "
            "it keys the run.",
        ),
    ] = "",
    browser_log: Annotated[
        bool,
        typer.Option(
            "--browser-log",
            help="With --mode browser: every browser writes its libwebrtc's log (GoogCC's estimates, "
            "the pacer's padding, probes) into its peer's folder; it keys the run.",
        ),
    ] = False,
    browser_event_log: Annotated[
        bool,
        typer.Option(
            "--browser-event-log",
            help="With --mode browser: every Chromium peer writes each peer connection's RTC event log "
            "(every packet, feedback and GoogCC decision, in libwebrtc's format) into its peer's "
            "folder; it keys the run.",
        ),
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print only each run's results folder, one a line.")
    ] = False,
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print each run's summary.json, with its folder as `path`, one a line."),
    ] = False,
    jobs: Annotated[
        int | None,
        typer.Option(
            help="Runs at a time on worker processes, at most one per CPU; 1, the default, runs them in "
            "this process, one after the other. A run whose folder in OUT is complete is read back, not "
            "run again."
        ),
    ] = 1,
) -> None:
    """Run every variant of a scenario with each controller and write one results folder per variant
    and controller."""
    command = "rtcbench " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    names = _controller_list(cc)
    check_mode(mode)
    browsers = check_browsers(
        browser,
        field_trials,
        mode,
        browser_log,
        browser_l4s,
        [n for n in names if ":" not in n],
        event_log=browser_event_log,
    )
    if pcap is not None and len(names) > 1:
        _fail("--pcap takes one controller: the captures of several would have the same name")
    if quiet and as_json:
        _fail("--quiet and --json: choose one")
    check_jobs(jobs)
    if jobs != 1 and mode != "simulate":
        _fail(f"--jobs runs simulations side by side; --mode {mode} runs in real time, one at a time")
    if jobs != 1 and pcap is not None:
        _fail("--pcap writes one capture at a time: give --jobs 1")
    overrides = sets or []
    batches: Iterable[list[RunResult]]
    # A simulated run whose folder is complete is read back (its folder is keyed by what it ran),
    # whatever --jobs; a capture, and a real-time run, are made anew.
    if mode == "simulate" and pcap is None:
        # Every controller's variants at once; printed as `rtcbench run` prints them.
        batches = [
            run_parallel(scenario, names, seed, out, overrides, jobs=jobs, figure=figure, command=command)
        ]
    else:
        # One controller at a time, each printed as soon as its variants are done.
        batches = (
            run(
                scenario,
                name,
                seed,
                out,
                overrides,
                figure=figure,
                command=command,
                pcap=pcap,
                mode=mode,
                field_trials=browsers.field_trials if browsers is not None else "",
                browser=browser,
                browser_log=browser_log,
                browser_l4s=browser_l4s,
                browser_event_log=browser_event_log,
            )
            for name in names
        )
    for results in batches:
        if quiet or as_json:
            _write_index(out, say=False)
            lines = [
                json.dumps({"path": str(r.path), **r.summary}) if as_json else str(r.path) for r in results
            ]
            try:
                sys.stdout.write("".join(line + "\n" for line in lines))
                sys.stdout.flush()
            except BrokenPipeError:
                # A reader that stopped early (`| head`): what it did not read is in the folder.
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                raise typer.Exit(0) from None
        else:
            print_summary(results)
            _write_index(out)
        if any((r.summary.get("browser") or {}).get("failure") for r in results):
            raise typer.Exit(1)


def _write_index(out: Path, *, say: bool = True) -> None:
    """`out/runs.parquet`: every complete run under `out` (`rtcbench.load_runs`), so that folders
    named by a 12-hex key can be found by what ran; written afresh after each controller's runs
    (`say`: and where, on the terminal)."""
    write_parquet_atomic(load_runs(out), out / RUNS_INDEX)
    if say:
        console.print(escape(f"index: {out / RUNS_INDEX}"), highlight=False)


@guarded("nothing was written")
def table_cmd(
    scenarios: Annotated[
        list[str] | None, typer.Argument(help="Scenario ids or files (default: every built-in scenario).")
    ] = None,
    cc: Annotated[str, typer.Option("--cc", help=CC_HELP)] = "gcc",
    seed: Annotated[int, typer.Option(help="Seed of every run (0 to 2**64 - 1).")] = 1,
    sets: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override a field of every scenario: path=value, e.g. duration=30s."),
    ] = None,
) -> None:
    """Compare controllers on scenarios: one Markdown row per scenario variant, controller and flow.

    Rows are the video flows and the competing TCP and CBR flows, each over the time it runs:
    utilisation (receive rate / capacity, the flow's share of the bottleneck; none across Wi-Fi or
    LTE), queuing-delay p95, loss and, for video, the start-up time (docs/metrics.md).
    """
    names = _controller_list(cc)
    ids = scenarios or [b.id for b in builtin()]
    rows = [
        "| scenario | variant | controller | flow | utilisation | qdelay p95 ms | loss % | start-up s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for scenario in ids:
        for v in resolve(scenario, sets or []):
            for name in names:
                r = run_variant(v, name, seed, None, figure=False)
                radio = radio_flows(r.summary["meta"])
                for f in r.summary["flows"]:
                    if f["kind"] not in ("video", "tcp", "cbr"):
                        continue
                    cells = [
                        v.scenario_id,
                        v.variant or "-",
                        name,
                        f["name"],
                        _fmt(None if f["id"] in radio else f["utilization"], 1, 2),
                        _fmt(f["qdelay_p95_ms"], 1, 0),
                        _fmt(f["loss_ratio"], 100, 2),
                        _fmt(f["convergence_time_s"], 1, 1),
                    ]
                    rows.append("| " + " | ".join(cells) + " |")
    print("\n".join(rows))
