"""The emulation relay's timing error (docs/emulation.md, "The relay"): how late it sends a frame
against the instant the scenario's links deliver it, at the load issue 13 sets as its bar,
5,000 packets/s at up to 20 Mbit/s: 500-byte UDP datagrams (kernel CBR from the cross-traffic
agents) through a 20 Mbit/s, 20 ms link for 10 s. Goal: p99 under 200 µs.

Needs root (it builds a testbed); without, it says so and exits 0. Timing lives here, never in
pass/fail tests: the relay's tests check what it does, this measures how precisely.

    python benches/relay_timing.py [--seconds 10] [--runs 2]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import rtcbench
from rtcbench import testbed
from rtcbench.testbed import cross, relay

SCENARIO = """
id = "relay-timing"
duration = "{seconds}s"

[[links]]
name = "ab"
from = "A"
to = "B"
capacity = "20Mbps"
delay = "20ms"
queue = {{ size = "100ms" }}

[[links]]
name = "ba"
from = "B"
to = "A"
delay = "20ms"

[[cbr]]
name = "load"
from = "A"
to = "B"
rate = "20Mbps"
packet_size = "500B"
start = "200ms"
"""


def measure(seconds: float, folder: Path) -> relay.RelayReport:
    path = folder / "relay-timing.toml"
    path.write_text(SCENARIO.format(seconds=seconds))
    (v,) = rtcbench.resolve(path)
    flows = cross.plan(v, seed=1)
    with testbed.build(v) as bed:
        r = relay.start(bed, v, seed=1, out_dir=folder / "relay")
        traffic = cross.start(bed, flows, end_s=seconds, log_dir=folder / "cross")
        t0 = r.go()
        traffic.go(t0)
        traffic.wait(seconds + 10.0)
        return r.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    missing = testbed.missing()
    if missing is not None:
        print(f"relay timing: skipped ({missing})")
        return 0
    print(f"relay timing: 5,000 packets/s of 500 B (20 Mbit/s) through a 20 Mbit/s link, {args.seconds:g} s")
    print(
        f"{'run':>4} {'departures':>11} {'p50 µs':>8} {'p99 µs':>8} {'max µs':>9}  scheduling  "
        "goal p99 < 200 µs"
    )
    met = True
    for run in range(1, args.runs + 1):
        with tempfile.TemporaryDirectory(prefix="rtcbench-relay-timing-") as tmp:
            r = measure(args.seconds, Path(tmp))
        met &= r.keeping_up
        print(
            f"{run:>4} {r.departures:>11,} {r.lateness_p50_us:>8.0f} {r.lateness_p99_us:>8.0f} "
            f"{r.lateness_max_us:>9.0f}  {r.scheduling:<10}  {'met' if r.keeping_up else 'MISSED'}"
        )
        warning = r.warning()
        if warning is not None:
            print(f"     {warning}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
