"""Summary tables of every built-in scenario, snapshot-tested.

A change in behaviour (of a controller, the simulator or a metric) shows up as a diff of
`tests/snapshots/*.txt` that must be explained in the commit that makes it. Regenerate with
`RTCBENCH_UPDATE_SNAPSHOTS=1 make test-python` and review the diff.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

import rtcbench
from rtcbench.runner import RunResult

SNAPSHOTS = Path(__file__).parent / "snapshots"


def _fmt(v: float | int | None, scale: float = 1.0, digits: int = 0) -> str:
    return "-" if v is None else f"{v * scale:.{digits}f}"


SHOWN = ("video", "tcp", "cbr")
"""The flows of the table: the media a controller adapts and the traffic competing with it."""


def summary_table(results: tuple[RunResult, ...]) -> str:
    """Per variant, phase and data flow (video, TCP, CBR) over the part of the phase it runs:
    capacity, send rate, utilisation, loss, delay, convergence to the fair share and settling
    time (video), frame rate and freezes (video)."""
    lines = [
        f"{'variant':<24} {'phase s':>9} {'flow':<14} {'cap kbps':>8} {'send kbps':>9} {'util':>5} "
        f"{'loss %':>6} {'qd p50':>6} {'qd p95':>6} {'conv s':>6} {'set s':>6} {'fps':>5} {'frz':>4}"
    ]
    for r in results:
        s = r.summary
        for p in s["phases"]:
            for f in p["flows"]:
                if f["kind"] not in SHOWN:
                    continue
                lines.append(
                    f"{s['variant'] or 'default':<24} {p['start_s']:>4.0f}-{p['end_s']:<4.0f} "
                    f"{f['name'][:14]:<14} "
                    f"{_fmt(p['capacity_bps'], 1e-3):>8} {_fmt(f['mean_send_rate_bps'], 1e-3):>9} "
                    f"{_fmt(f['utilization'], 1, 2):>5} {_fmt(f['loss_ratio'], 100, 1):>6} "
                    f"{_fmt(f['qdelay_p50_ms'], 1, 0):>6} {_fmt(f['qdelay_p95_ms'], 1, 0):>6} "
                    f"{_fmt(f['convergence_time_s'], 1, 1):>6} {_fmt(f['settling_time_s'], 1, 1):>6} "
                    f"{_fmt(f['fps_mean'], 1, 1):>5} {_fmt(f['freezes']):>4}"
                )
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("scenario", [b.id for b in rtcbench.builtin()])
def test_summary_table_snapshot(simulate: Callable[..., tuple[RunResult, ...]], scenario: str) -> None:
    table = summary_table(simulate(scenario, "gcc", 1))
    path = SNAPSHOTS / f"{scenario}.gcc.txt"
    if os.environ.get("RTCBENCH_UPDATE_SNAPSHOTS") == "1" or not path.exists():
        if os.environ.get("CI") and not path.exists():
            pytest.fail(f"missing snapshot {path}; generate it locally and commit it")
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(table)
    assert table == path.read_text(), f"summary of {scenario} changed; see the diff above and explain it"
