"""Memory of a long run: two hours of 16 calls and 4 CUBIC flows on a 30 Mbit/s bottleneck
(`benches/scenarios/two-hours-16calls-4cubic.toml`), written to a results folder as `rtcbench run`
writes it. Budget (issues "Robust at any scale" and "Hardening II"): peak RSS under 1 GiB, metrics
included, and RSS when the simulation reaches 3600 s within 10 % of RSS when it reaches 900 s.

The run goes in this process while a thread samples its resident set (/proc/self/status) every
50 ms, and RSS is also read each time the run hands over a piece of trace, with the simulated
time that piece reaches. "RSS at 900 s" is the largest of those readings over the 300 simulated
seconds up to 900 s (a single reading moves by some 50 MiB with the pieces in flight). Printed:
RSS at simulated 900, 3600 and 7200 s, peak RSS while simulating and while measuring (the
metrics read the files a batch of flows, or a span of one long flow, at a time), wall time, and,
for comparison, the same scenario cut to 15 minutes in a fresh process.

Then a week (`benches/scenarios/week-1kbps-cbr.toml`, issue 65 item 2): one 1 kbit/s CBR flow on
one link for the longest run a scenario may ask for, next to no packets but a links row every
10 ms and a time-series window every 200 ms. Budget: peak RSS while measuring under 1 GiB; printed
with its slope per simulated day, from the same scenario cut to one day.

Run by `make bench`; timing and memory live here, never in pass/fail tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

SCENARIO = Path(__file__).parent / "scenarios" / "two-hours-16calls-4cubic.toml"
WEEK = Path(__file__).parent / "scenarios" / "week-1kbps-cbr.toml"
DAY_S = 86_400
BUDGET_MIB = 1024
GROWTH = 0.10
MARKS = (900.0, 3600.0, 7200.0)
SPAN_S = 300.0


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def profile(scenario: Path, duration_s: int | None) -> dict[str, Any]:
    """Runs `scenario` (cut to `duration_s` if given) in this process and returns its RSS
    profile: RSS when the simulation passed 900 s and its end, peaks by phase, wall time."""
    import rtcbench
    from rtcbench import runner

    samples: list[tuple[float, float]] = []
    readings: list[tuple[float, float]] = []
    marks: dict[str, float] = {}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append((time.perf_counter(), rss_mib()))
            time.sleep(0.05)

    real_pieces = runner._pieces

    def pieces(core_run: Any, meta: dict[str, Any]) -> Any:
        for piece in real_pieces(core_run, meta):
            t = piece["packets"].get_column("t_us")
            if t.len():
                readings.append((float(t.max()) / 1e6, rss_mib()))  # type: ignore[arg-type]
            yield piece
        marks["simulated"] = time.perf_counter()

    runner._pieces = pieces
    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    sets = [f"duration={duration_s}s"] if duration_s else []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        (r,) = rtcbench.run(str(scenario), "gcc", 1, out=Path(out), sets=sets, figure=False)
        wall = time.perf_counter() - t0
        sizes = {p.name: p.stat().st_size for p in r.path.iterdir()} if r.path else {}
    done.set()
    thread.join()
    runner._pieces = real_pieces
    for mark in MARKS:
        near = [m for sim_s, m in readings if mark - SPAN_S < sim_s <= mark + 1.0]
        if near:
            marks[f"rss_at_{mark:.0f}s"] = max(near)
    simulating = [m for t, m in samples if t <= marks.get("simulated", t0)]
    measuring = [m for t, m in samples if t > marks.get("simulated", t0)]
    return {
        "simulated_s": r.summary["simulated_s"],
        "wall_s": wall,
        "sim_wall_s": r.summary["sim_wall_s"],
        "peak_mib": max(m for _, m in samples),
        "peak_simulating_mib": max(simulating, default=0.0),
        "peak_measuring_mib": max(measuring, default=0.0),
        **marks,
        "packets_parquet_mb": sizes.get("packets.parquet", 0) / 1e6,
        "results_mb": sum(sizes.values()) / 1e6,
    }


def child(scenario: Path, arg: str) -> dict[str, Any]:
    """`profile` in a fresh process: a peak is a property of the whole process."""
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(scenario), arg], capture_output=True, text=True, check=True
    ).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(profile(Path(sys.argv[2]), int(sys.argv[3]) if sys.argv[3] != "full" else None)))
        return
    long, quarter = child(SCENARIO, "full"), child(SCENARIO, "900")
    at_900, at_3600, at_7200 = (long[f"rss_at_{m:.0f}s"] for m in MARKS)
    growth = at_3600 / at_900 - 1
    print(f"memory of {SCENARIO.name}: 16 calls + 4 CUBIC flows, 30 Mbit/s")
    print(
        f"  2 h run: simulated {long['simulated_s']:.0f} s in {long['sim_wall_s']:.1f} s "
        f"({long['simulated_s'] / long['sim_wall_s']:.0f}x real time), whole run {long['wall_s']:.1f} s, "
        f"results {long['results_mb']:.0f} MB"
    )
    print(
        f"  RSS at simulated 900 s: {at_900:.0f} MiB; at 3600 s: {at_3600:.0f} MiB "
        f"({growth:+.0%}; budget {GROWTH:.0%}); at 7200 s: {at_7200:.0f} MiB ({at_7200 / at_900 - 1:+.0%})"
    )
    print(
        f"  peak RSS: {long['peak_mib']:.0f} MiB (simulating {long['peak_simulating_mib']:.0f}, "
        f"measuring {long['peak_measuring_mib']:.0f}; budget {BUDGET_MIB} MiB)"
    )
    print(
        f"  the same scenario cut to 15 min: peak RSS {quarter['peak_mib']:.0f} MiB "
        f"(simulating {quarter['peak_simulating_mib']:.0f}, measuring {quarter['peak_measuring_mib']:.0f}), "
        f"whole run {quarter['wall_s']:.1f} s"
    )
    week, day = child(WEEK, "full"), child(WEEK, str(DAY_S))
    slope = (week["peak_measuring_mib"] - day["peak_measuring_mib"]) / ((week["simulated_s"] - DAY_S) / DAY_S)
    print(f"memory of {WEEK.name}: one 1 kbit/s CBR flow for a week")
    print(
        f"  week: simulated {week['simulated_s']:.0f} s in {week['sim_wall_s']:.1f} s, whole run "
        f"{week['wall_s']:.1f} s, results {week['results_mb']:.0f} MB"
    )
    print(
        f"  peak RSS while measuring: {week['peak_measuring_mib']:.0f} MiB (budget {BUDGET_MIB} MiB); "
        f"one day: {day['peak_measuring_mib']:.0f} MiB; {slope:+.0f} MiB a simulated day"
    )
    print(
        f"  peak RSS while simulating: {week['peak_simulating_mib']:.0f} MiB "
        f"(one day: {day['peak_simulating_mib']:.0f})"
    )
    ok = long["peak_mib"] < BUDGET_MIB and abs(growth) <= GROWTH and week["peak_measuring_mib"] < BUDGET_MIB
    print("  within budget" if ok else "  OVER BUDGET")


if __name__ == "__main__":
    main()
