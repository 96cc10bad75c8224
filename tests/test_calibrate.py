"""The calibration against Chromium (docs/calibration.md): how a browser run and a simulated run
of one case are set side by side per phase, and the whole fixed set in the slow tier (real time,
as root, with Chromium)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest

from rtcbench import calibrate, testbed
from rtcbench.browser import devtools
from rtcbench.results import InputError


def _summary(phases: list[tuple[float, float, float, float]], cpu: float | None = None) -> dict[str, Any]:
    """A summary with one video flow per phase: (rate bit/s, qdelay p50, qdelay p95, loss)."""
    out: dict[str, Any] = {
        "phases": [
            {
                "index": k,
                "start_s": 10.0 * k,
                "end_s": 10.0 * (k + 1),
                "capacity_bps": 1_000_000,
                "flows": [
                    {
                        "name": "call0.video",
                        "kind": "video",
                        "mean_send_rate_bps": rate,
                        "qdelay_p50_ms": p50,
                        "qdelay_p95_ms": p95,
                        "loss_ratio": loss,
                    },
                    {"name": "call0.audio", "kind": "audio", "mean_send_rate_bps": 20_000.0},
                ],
            }
            for k, (rate, p50, p95, loss) in enumerate(phases)
        ]
    }
    if cpu is not None:
        out["browser"] = {"calls": {"call0": {"quality_limitation": {"none": 1 - cpu, "cpu": cpu}}}}
    return out


def test_phases_are_compared_within_the_tolerances() -> None:
    browser = _summary(
        [(800_000, 20.0, 40.0, 0.0), (500_000, 2.0, 5.0, 0.05), (1_000_000, 100.0, 200.0, 0.0)], 0.1
    )
    simulated = _summary(
        [(900_000, 22.0, 48.0, 0.002), (400_000, 9.0, 14.0, 0.07), (1_000_000, 130.0, 240.0, 0.0)]
    )
    rows = pl.DataFrame(calibrate.compare_phases("case", browser, simulated), schema=calibrate.SCHEMA)
    assert rows.height == 3 * 4  # video only: 3 phases × 4 metrics
    by = {(r["phase"], r["metric"]): r for r in rows.iter_rows(named=True)}
    # Rate: +12.5 % agrees, −20 % does not.
    assert by[0, "send_rate_kbps"]["difference"] == pytest.approx(0.125) and by[0, "send_rate_kbps"]["agrees"]
    assert (
        by[1, "send_rate_kbps"]["difference"] == pytest.approx(-0.2) and not by[1, "send_rate_kbps"]["agrees"]
    )
    # Delay: within 15 % or 10 ms (5 → 14 ms agrees; 200 → 240 ms, +20 % and 40 ms, does not).
    assert by[0, "qdelay_p95_ms"]["agrees"] and by[1, "qdelay_p95_ms"]["agrees"]
    assert not by[2, "qdelay_p95_ms"]["agrees"] and not by[2, "qdelay_p50_ms"]["agrees"]
    # Loss: within 15 % or 0.5 points (0 → 0.2 % agrees; 5 % → 7 % does not).
    assert by[0, "loss"]["difference"] == pytest.approx(0.002) and by[0, "loss"]["agrees"]
    assert not by[1, "loss"]["agrees"]
    assert rows.get_column("cpu_limited").to_list() == [0.1] * 12
    assert rows.get_column("capacity_kbps").unique().to_list() == [1000.0]


def test_a_case_names_one_variant(tmp_path: Path) -> None:
    assert calibrate.parse_case("seed002-grid:capacity=1000kbps,delay=25ms") == calibrate.Case(
        "seed002-grid", ("capacity=1000kbps", "delay=25ms")
    )
    assert calibrate.parse_case("seed002-step-up") == calibrate.Case("seed002-step-up")
    with pytest.raises(InputError, match="3 variants"):
        calibrate.calibrate(tmp_path, [calibrate.Case("seed003-parallel-2")])
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
@pytest.mark.skipif(
    testbed.missing() is not None or devtools.chromium() is None, reason="runs Chromium in namespaces"
)
def test_the_simulator_follows_chromium_on_the_fixed_set(tmp_path: Path) -> None:
    # About 11 minutes of calls. The goal is 15 % on the sending rate per phase; docs/calibration.md
    # explains the phases that miss it. Asserted here: most phases agree, none is off by half.
    table = calibrate.calibrate(tmp_path)
    rates = table.filter(pl.col("metric") == "send_rate_kbps")
    assert rates.height >= 15
    assert rates.get_column("agrees").mean() >= 0.7, rates
    assert rates.get_column("difference").abs().max() < 0.5, rates
    assert table.get_column("cpu_limited").max() < 0.05
