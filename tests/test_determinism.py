"""A run is a pure function of (scenario, controller, seed)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl

import rtcbench

WALL_CLOCK = ("wall_s", "sim_wall_s", "command")


def _without_wall_clock(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if k not in WALL_CLOCK}


def test_same_seed_same_summary_and_tables() -> None:
    a = rtcbench.run("rfc8867-5.1", "gcc", 7, figure=False)
    b = rtcbench.run("rfc8867-5.1", "gcc", 7, figure=False)
    for x, y in zip(a, b, strict=True):
        assert _without_wall_clock(x.summary) == _without_wall_clock(y.summary)
        for name in ("packets", "frames", "controller", "links", "feedback"):
            assert getattr(x.tables, name).equals(getattr(y.tables, name)), name


def test_another_seed_gives_different_packets(simulate: Callable[..., Any]) -> None:
    one = simulate("rfc8867-5.1", "gcc", 1)[0].tables.packets
    two = simulate("rfc8867-5.1", "gcc", 2)[0].tables.packets
    sent = pl.col("event") == "sent"
    assert not one.filter(sent).select("sent_us", "size").equals(two.filter(sent).select("sent_us", "size"))
