"""GoogCC's decisions in one case, Chromium's (from its RTC event log) beside rtcbench `gcc`'s (from
the simulated run of the same scenario), on the run's clock (docs/calibration.md, "Decisions side
by side"; `rtcbench calibrate --browser-event-log`)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from rtcbench import eventlog
from rtcbench.eventlog import decisions
from rtcbench.eventlog.run import controller_table
from rtcbench.results import InputError, load_tables, read_summary
from rtcbench.tables import Tables

SCHEMA = {"case": pl.String, "side": pl.String, **decisions.SCHEMA}
"""`decisions.parquet`: one row per decision, `side` `chromium` or `simulator`."""


def sender_log(folder: Path) -> eventlog.EventLog:
    """The RTC event log of the first call's sender in the browser run at `folder`."""
    summary = read_summary(folder)
    sender = str(summary["meta"]["calls"][0]["sender"])
    logs = ((summary.get("browser") or {}).get("event_logs") or {}).get(sender) or []
    if not logs:
        raise InputError(
            f"{folder}: the browser run recorded no RTC event log of {sender} (--browser-event-log)"
        )
    return eventlog.read(folder / logs[0]["file"])


def clock_offset_us(log: eventlog.EventLog, packets: pl.DataFrame) -> int:
    """What to add to the log's times to put them on the run's clock: the median difference
    between each packet's sending in the log and its arrival at the relay (within a few ms:
    docs/eventlog.md, "Held to the wire")."""
    sent = log.tables["rtp"].filter(pl.col("direction") == "out").select("t_us", "transport_seq")
    wire = packets.filter((pl.col("event") == "sent") & pl.col("transport_seq").is_not_null()).select(
        wire_us="t_us", transport_seq=pl.col("transport_seq").cast(pl.UInt16)
    )
    matched = sent.join(wire, on="transport_seq", how="inner")
    if matched.height == 0:
        raise InputError("no packet of the event log is among the run's packets: not this run's log")
    return int((matched["wire_us"] - matched["t_us"]).median())  # type: ignore[arg-type]


def case(label: str, browser: Path, simulated: Path, figure: Path | None = None) -> pl.DataFrame:
    """The decisions of both sides of a case (`SCHEMA`), with its figure at `figure`: the
    browser run at `browser` (recorded with `--browser-event-log`) and the simulated run at
    `simulated`."""
    log = sender_log(browser)
    run = load_tables(browser)
    offset = clock_offset_us(log, run.packets)
    end_us = round(float(run.meta["duration_s"]) * 1e6)
    shift = (pl.col("t_us") + offset).alias("t_us")
    on_log_clock = controller_table(log)
    chromium_ctrl = on_log_clock.with_columns(shift).filter(pl.col("t_us").is_between(0, end_us))
    chromium = (
        decisions.logged(log, on_log_clock).with_columns(shift).filter(pl.col("t_us").is_between(0, end_us))
    )
    sim = load_tables(simulated)
    sim_ctrl = sim.controller.filter(pl.col("call") == 0)
    sim_decisions = decisions.simulated(sim.controller)
    if figure is not None:
        figure.parent.mkdir(parents=True, exist_ok=True)
        decisions.figure(
            [
                decisions.Side("Chromium 156, from its RTC event log", chromium_ctrl, chromium),
                decisions.Side("rtcbench gcc (the goog_cc crate), simulated", sim_ctrl, sim_decisions),
            ],
            _capacity(sim),
            f"{label}: GoogCC's decisions",
            figure,
            end_s=end_us / 1e6,
        )
    return pl.concat(
        [
            chromium.select(pl.lit(label).alias("case"), pl.lit("chromium").alias("side"), *decisions.SCHEMA),
            sim_decisions.select(
                pl.lit(label).alias("case"), pl.lit("simulator").alias("side"), *decisions.SCHEMA
            ),
        ]
    )


def _capacity(t: Tables) -> pl.DataFrame | None:
    """The first media flow's bottleneck capacity over time, where the run's links table has it."""
    link = next((f.get("bottleneck") for f in t.meta["flows"] if f.get("kind") == "video"), None)
    if link is None or t.links.height == 0:
        return None
    rows = t.links.filter(pl.col("link") == link).select("t_us", "capacity_bps").drop_nulls()
    return rows.filter(pl.col("capacity_bps") != pl.col("capacity_bps").shift(1)).sort("t_us")
