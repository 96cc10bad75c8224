"""`rtcbench eventlog`: a Chromium RTC event log as rtcbench tables (docs/eventlog.md)."""

from __future__ import annotations

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
            help="An RTC event log: from --browser-event-log, chrome://webrtc-internals or a libwebrtc app."
        ),
    ],
    out: Annotated[
        Path, typer.Option(help="The folder to write the log's tables into, in OUT/<name>-<sha256 prefix>/.")
    ] = Path("results/eventlog"),
) -> None:
    """Read LOG, libwebrtc's RTC event log (the protobuf format Chromium writes), into tables:
    RTP sent and received (transport-wide sequence numbers, sizes), RTCP by message, the
    delay-based and loss-based estimates, probe clusters and results, ALR, routes, targets and
    stream configs, each as Parquet, with eventlog.json saying what the log holds. The folder is
    keyed by the log's SHA-256 and made whole, or not at all."""
    from rtcbench import eventlog

    read = eventlog.read(log)
    s = read.summary()
    folder = eventlog.write(read, out, s)
    table = Table(title=f"{escape(str(log))}: {s['span_s'] or 0:.1f} s, format {s['format_version']}")
    for column in ("", "packets", "bytes", "mean rate", "ssrcs"):
        table.add_column(column, justify="right" if column else "left")
    for d, name in (("out", "RTP sent"), ("in", "RTP received")):
        r = s["rtp"][d]
        rate = f"{r['mean_rate_bps'] / 1e3:.0f} kbit/s" if r["mean_rate_bps"] else "-"
        table.add_row(name, str(r["packets"]), str(r["bytes"]), rate, str(len(r["ssrcs"])))
    console.print(table)
    d = s["delay_based"]
    if d["updates"]:
        console.print(
            f"delay-based estimate: {d['updates']} updates, mean {d['mean_bps'] / 1e3:.0f} kbit/s, "
            f"over-using {100 * d['overusing_share']:.1f} % of updates; probes: {s['probes']['clusters']} "
            f"clusters, {s['probes']['succeeded']} results, {s['probes']['failed']} failures"
        )
    console.print(f"written: {escape(str(folder))}", highlight=False)
