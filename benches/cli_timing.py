"""End-to-end timing of `rtcbench run` on the built-in scenarios: simulated seconds per wall second
for the simulation alone and for the whole run (simulation, metrics, Parquet and the figure).

Run by `make bench` after the criterion benchmarks. Timing lives here, never in pass/fail tests.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import rtcbench

REPEATS = 5
CASES = [
    ("rfc8867-5.1", "gcc"),
    ("rfc8867-5.1", "fixed"),
    ("seed000-5.2.6", "gcc"),
    ("seed001-staircase", "gcc"),
]


def main() -> None:
    print(f"{'scenario':<20} {'cc':<6} {'variant':<24} {'sim x real time':>16} {'run x real time':>16}")
    for scenario, cc in CASES:
        variants = rtcbench.resolve(scenario)
        v = variants[0]
        sim_speed, run_speed = [], []
        for _ in range(REPEATS):
            with tempfile.TemporaryDirectory() as out:
                t0 = time.perf_counter()
                r = rtcbench.run_variant(v, cc, 1, Path(out))
                wall = time.perf_counter() - t0
            sim_speed.append(r.summary["simulated_s"] / r.summary["sim_wall_s"])
            run_speed.append(r.summary["simulated_s"] / wall)
        print(
            f"{scenario:<20} {cc:<6} {v.variant or 'default':<24} "
            f"{statistics.median(sim_speed):>15,.0f}x {statistics.median(run_speed):>15,.0f}x"
        )


if __name__ == "__main__":
    main()
