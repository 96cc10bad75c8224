"""Time and size of `rtcbench report` on the whole RFC 8867 suite, every variant, for the four
congestion controllers, one repetition: what the issue's budgets (under 30 s of CPU, a page under
12 MB) are measured on.

The suite is run into a temporary folder first (`rtcbench suite rfc8867 --cc ... --reps 1`, in a
process of its own, so its workers are not counted below), then the report is made twice with the
`rtcbench` command: once from scratch, and once more from the figure cache the first left in the
run folders. CPU time is `resource.getrusage` of this process and its children before and after
each report: the report's process and its figure workers. It depends little on how busy the
shared machine's other cores are; wall time does.

Run by `make bench` after the suite timing. Timing lives here, never in pass/fail tests.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

SUITE = "rfc8867"
CONTROLLERS = ["gcc", "gcc-draft", "nada", "scream"]
CPU_BUDGET_S = 30.0
SIZE_BUDGET_MB = 12.0


@dataclass(frozen=True)
class Timing:
    wall_s: float
    cpu_s: float
    size_mb: float
    figures: str


def _cpu_s() -> float:
    """CPU time of this process and of its children that ended (and were waited for)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def rtcbench(*args: str) -> str:
    """Runs the `rtcbench` command; its standard output."""
    command = [sys.executable, "-m", "rtcbench.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def report(results: Path, page: Path) -> Timing:
    """`rtcbench report RESULTS --html PAGE`, timed. The CPU time counts the report's process and
    its figure workers, which it waits for before it ends."""
    cpu, wall = _cpu_s(), time.perf_counter()
    said = rtcbench("report", str(results), "--html", str(page))
    wall, cpu = time.perf_counter() - wall, _cpu_s() - cpu
    last = said.strip().splitlines()[-1] if said.strip() else ""
    contents = last[last.find("(") + 1 : last.find(")")] if "(" in last else last
    return Timing(wall, cpu, page.stat().st_size / 1e6, contents)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cc", default=",".join(CONTROLLERS), help="controllers, comma-separated")
    args = parser.parse_args()
    controllers = args.cc.split(",")

    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results"
        rtcbench("suite", SUITE, "--cc", ",".join(controllers), "--reps", "1", "--out", str(results))
        runs = sum(1 for _ in results.rglob("summary.json"))
        first = report(results, Path(tmp) / "first.html")
        again = report(results, Path(tmp) / "again.html")

    print(f"report of suite {SUITE} --cc {','.join(controllers)} ({runs} runs) on {os.cpu_count()} CPUs")
    print(f"  contents               {first.figures}")
    print(
        f"  from scratch           {first.wall_s:.1f} s wall, {first.cpu_s:.1f} s CPU, {first.size_mb:.1f} MB"
    )
    print(
        f"  again (figure cache)   {again.wall_s:.1f} s wall, {again.cpu_s:.1f} s CPU, {again.size_mb:.1f} MB"
    )
    if controllers == CONTROLLERS:
        cpu = "within" if first.cpu_s < CPU_BUDGET_S else "OVER"
        size = "within" if first.size_mb < SIZE_BUDGET_MB else "OVER"
        print(f"  budget                 {CPU_BUDGET_S:.0f} s CPU: {cpu}; {SIZE_BUDGET_MB:.0f} MB: {size}")


if __name__ == "__main__":
    main()
