"""`rtcbench eventlog`: a libwebrtc RTC event log as a run, and the path it crossed as a
scenario (docs/eventlog.md)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from rtcbench.cli.errors import guarded
from rtcbench.cli.render import console


@guarded("nothing was written ({out} is as it was)")
def eventlog_cmd(
    log: Annotated[
        Path,
        typer.Argument(
            help="A sender's RTC event log: from --browser-event-log, chrome://webrtc-internals "
            "or a libwebrtc app."
        ),
    ],
    out: Annotated[Path, typer.Option(help="Results folder, as for rtcbench run.")] = Path("results"),
    overhead: Annotated[
        int,
        typer.Option(
            help="Bytes each logged RTP packet gains on the wire: 38 is IPv4, UDP and SRTP's 80-bit tag "
            "(Chromium's); add 20 for IPv6, 4 for a TURN channel, 6 for AEAD-GCM."
        ),
    ] = 38,
    figure: Annotated[bool, typer.Option(help="Draw overview.png.")] = True,
) -> None:
    """Read LOG, libwebrtc's RTC event log (the protobuf format Chromium writes), as a run: the
    call its endpoint sent, with the same tables, summary and figure as a simulated run (packets
    sent and, from transport feedback, received or lost; the estimator's target, delay-based
    estimate, detector state and probe results; the feedback), and the log's own tables under
    eventlog/. The path the call crossed (base delay, capacity, queue, loss) is inferred and
    written as the run's scenario.toml: run any controller over it with rtcbench run. The folder
    is keyed by the log's SHA-256 and made whole, or not at all."""
    from rtcbench import eventlog
    from rtcbench.eventlog import run

    read = eventlog.read(log)
    command = "rtcbench " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    try:
        imported = run.import_log(read, out, overhead=overhead, figure=figure, command=command)
    except run.NoRun as why:
        folder = eventlog.write(read, out, read.summary())
        console.print(f"{escape(str(why))}; the log's own tables: {escape(str(folder))}", highlight=False)
        return
    s, path = imported.summary, imported.derived.summary()
    e = s["eventlog"]
    table = Table(title=f"{escape(str(log))}: {e['span_s'] or 0:.1f} s logged, format {e['format_version']}")
    for column in ("flow", "sent", "mean rate", "lost", "queuing p50 / p95", "target"):
        table.add_column(column, justify="left" if column == "flow" else "right")
    for f in s["flows"]:
        if f["kind"] not in ("video", "audio"):
            continue
        target = f"{f['mean_target_bps'] / 1e3:.0f} kbit/s" if f["mean_target_bps"] else "-"
        table.add_row(
            escape(f["name"]),
            str(f["packets_sent"]),
            f"{f['mean_send_rate_bps'] / 1e3:.0f} kbit/s",
            f"{100 * (f['loss_ratio'] or 0):.2f} %",
            f"{f['qdelay_p50_ms'] or 0:.1f} / {f['qdelay_p95_ms'] or 0:.1f} ms",
            target,
        )
    console.print(table)
    d = e["delay_based"]
    if d["updates"]:
        console.print(
            f"estimator: {d['updates']} delay-based updates, over-using {100 * d['overusing_share']:.1f} % "
            f"of them; {e['probes']['clusters']} probe clusters, {e['probes']['succeeded']} results, "
            f"{e['probes']['failed']} failures"
        )
    c, q = path["capacity"], path["queue"]
    queue = "overflowed" if q["from"] == "overflow" else f"at least {q['longest_ms']} ms seen"
    rtt = f"{path['rtt_min_ms']:.1f} ms" if path["rtt_min_ms"] is not None else "not in the log (0 ms used)"
    capacity = (
        f"{c['min_bps'] / 1e3:.0f}-{c['max_bps'] / 1e3:.0f} kbit/s from {c['measured_windows']} of "
        f"{c['windows']} windows"
        if c["steps"]
        else "not measured (the bottleneck never stayed busy): unlimited"
    )
    console.print(
        f"path: least RTT {rtt}; capacity {capacity}; queue {q['size_ms'] or '-'} ms "
        f"({queue}); "
        f"random loss {100 * path['loss']['random_rate']:.3f} %",
        highlight=False,
    )
    assert imported.path is not None
    console.print(f"written: {escape(str(imported.path))}", highlight=False)
    scenario, results = shlex.quote(str(imported.path / "scenario.toml")), shlex.quote(str(out))
    console.print(
        f"another controller on this path: rtcbench run {escape(scenario)} --cc nada --out {escape(results)}",
        highlight=False,
    )
