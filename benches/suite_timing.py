"""Wall time of the whole RFC 8867 suite, every variant, for the four congestion controllers: what the
issue's budget (under 20 s on 2 cores) is measured on. One run per CPU at a time, as `rtcbench suite`
does by default; figures are not drawn (a suite never draws them).

Run by `make bench` after the criterion benchmarks and the CLI timing. Timing lives here, never in
pass/fail tests. Measurements on a shared machine vary by about ±10 %; `--repeat N` prints the best
and the median of N suites.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

from rtcbench.suite import SuiteResult, run_suite

SUITE = "rfc8867"
CONTROLLERS = ["gcc", "gcc-draft", "nada", "scream"]
BUDGET_S = 20.0


def once(controllers: list[str]) -> SuiteResult:
    with tempfile.TemporaryDirectory() as out:
        return run_suite([SUITE], controllers, jobs=os.cpu_count(), out=Path(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cc", default=",".join(CONTROLLERS), help="controllers, comma-separated")
    parser.add_argument("--repeat", type=int, default=1, help="suites to run; best and median are shown")
    args = parser.parse_args()
    controllers = args.cc.split(",")

    results = [once(controllers) for _ in range(args.repeat)]
    walls = sorted(r.wall_s for r in results)
    r = results[0]
    print(f"suite {SUITE} --cc {','.join(controllers)} on {os.cpu_count()} CPUs")
    print(f"  runs                   {r.ran}")
    print(f"  simulated              {r.simulated_s:,.0f} s")
    print(f"  simulation alone       {sum(r.runs.get_column('sim_wall_s')):.1f} s (sum over runs)")
    wall = (
        f"{walls[0]:.1f} s"
        if len(walls) == 1
        else (f"best {walls[0]:.1f} s, median {statistics.median(walls):.1f} s of {len(walls)}")
    )
    print(f"  wall                   {wall}")
    print(f"  simulated s per wall s {r.simulated_s / walls[0]:,.0f}x")
    if controllers == CONTROLLERS:
        verdict = "within" if walls[0] < BUDGET_S else "OVER"
        print(f"  budget                 {BUDGET_S:.0f} s: {verdict}")


if __name__ == "__main__":
    main()
