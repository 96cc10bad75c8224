"""Memory of a long run: one hour of 16 calls and 4 CUBIC flows on a 30 Mbit/s bottleneck
(`benches/scenarios/hour-16calls-4cubic.toml`), written to a results folder as `rtcbench run`
writes it. Budget (issue "Robust at any scale"): peak RSS under 1 GiB, and RSS when the simulation
reaches 3600 s within 20 % of RSS when it reaches 900 s.

The run goes in this process while a thread samples its resident set (/proc/self/status) every
50 ms; the simulated time reached is read off the pieces of trace the run writes out. Printed:
RSS at simulated 900 s and 3600 s, peak RSS while simulating and while measuring (the metrics
read the files a batch of flows at a time), wall time, and, for comparison, the peak of the same
scenario cut to 900 s in a fresh process.

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

SCENARIO = Path(__file__).parent / "scenarios" / "hour-16calls-4cubic.toml"
BUDGET_MIB = 1024
GROWTH = 0.20


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def profile(duration_s: int | None) -> dict[str, Any]:
    """Runs the scenario (cut to `duration_s` if given) in this process and returns its RSS
    profile: RSS when the simulation passed 900 s and its end, peaks by phase, wall time."""
    import rtcbench
    from rtcbench import runner

    samples: list[tuple[float, float]] = []
    marks: dict[str, float] = {}
    sim_s = [0.0]
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
                sim_s[0] = max(sim_s[0], float(t.max()) / 1e6)  # type: ignore[arg-type]
                for mark in (900.0, 3600.0):
                    if sim_s[0] >= mark and f"rss_at_{mark:.0f}s" not in marks:
                        marks[f"rss_at_{mark:.0f}s"] = rss_mib()
            yield piece
        marks["simulated"] = time.perf_counter()

    runner._pieces = pieces
    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    sets = [f"duration={duration_s}s"] if duration_s else []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        (r,) = rtcbench.run(str(SCENARIO), "gcc", 1, out=Path(out), sets=sets, figure=False)
        wall = time.perf_counter() - t0
        sizes = {p.name: p.stat().st_size for p in r.path.iterdir()} if r.path else {}
    done.set()
    thread.join()
    runner._pieces = real_pieces
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


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(profile(int(sys.argv[2]) if sys.argv[2] != "full" else None)))
        return
    results = {}
    for label, arg in (("1 h", "full"), ("15 min", "900")):
        # A fresh process each: a peak is a property of the whole process.
        out = subprocess.run(
            [sys.executable, __file__, "--child", arg], capture_output=True, text=True, check=True
        ).stdout
        results[label] = json.loads(out.strip().splitlines()[-1])
    hour, quarter = results["1 h"], results["15 min"]
    at_900, at_3600 = hour["rss_at_900s"], hour["rss_at_3600s"]
    growth = at_3600 / at_900 - 1
    print(f"memory of {SCENARIO.name}: 16 calls + 4 CUBIC flows, 30 Mbit/s")
    print(
        f"  1 h run: simulated {hour['simulated_s']:.0f} s in {hour['sim_wall_s']:.1f} s "
        f"({hour['simulated_s'] / hour['sim_wall_s']:.0f}x real time), whole run {hour['wall_s']:.1f} s, "
        f"results {hour['results_mb']:.0f} MB"
    )
    print(
        f"  RSS at simulated 900 s: {at_900:.0f} MiB; at 3600 s: {at_3600:.0f} MiB "
        f"({growth:+.0%}; budget 20 %)"
    )
    print(
        f"  peak RSS: {hour['peak_mib']:.0f} MiB (simulating {hour['peak_simulating_mib']:.0f}, "
        f"measuring {hour['peak_measuring_mib']:.0f}; budget {BUDGET_MIB} MiB)"
    )
    print(
        f"  the same scenario cut to 900 s: peak RSS {quarter['peak_mib']:.0f} MiB "
        f"(simulating {quarter['peak_simulating_mib']:.0f}, measuring {quarter['peak_measuring_mib']:.0f}), "
        f"whole run {quarter['wall_s']:.1f} s"
    )
    ok = hour["peak_mib"] < BUDGET_MIB and abs(growth) <= GROWTH
    print("  within budget" if ok else "  OVER BUDGET")


if __name__ == "__main__":
    main()
