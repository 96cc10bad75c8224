#!/usr/bin/env python3
"""Makes the synthetic capacity traces shipped in scenarios/traces/ (docs/capacity-traces.md).

    python3 scripts/make_traces.py            # rewrite the traces
    python3 scripts/make_traces.py --check    # exit 1 if a shipped trace differs from what this makes

The traces are synthetic, made here with fixed seeds; they imitate the kind of variation of an
LTE drive, a pedestrian LTE walk and an office Wi-Fi network, not a particular recording. Every
random number comes from `random.Random(seed).random()`, whose sequence Python keeps the same
across versions, turned into normal, exponential and Poisson draws below, so the files are
reproducible byte for byte (`tests/test_capacity_traces.py` checks that they are).

- `lte-drive.mahimahi` (mahimahi, 60 s, looping): the rate moves through cells, a log-normal
  AR(1) process in 100 ms steps around a mean that rises and falls over 40 s, between
  0.2 and 8 Mbit/s, with three handover outages of 0.3 to 0.8 s. Each millisecond gets a Poisson
  number of 1504-byte delivery opportunities with the rate's mean, so they come in bursts as
  cellular schedulers deliver them.
- `lte-walk.csv` (CSV, 120 s): a pedestrian's LTE, smoother: 1 s steps of a random walk in
  log-rate between 0.5 and 4 Mbit/s, with one dip to 300 kbit/s for 5 s (a stairwell).
- `wifi-office.json` (OpenNetLab, 60 s, looping): 200 ms segments of a two-state channel, clear
  (about 5 Mbit/s, mean stay 6 s) or contended (0.4-1.5 Mbit/s, mean stay 2 s).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from collections.abc import Callable
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "scenarios" / "traces"
OPPORTUNITY_BITS = 1504 * 8
"""What one mahimahi delivery opportunity carries."""


class Draws:
    """Normal, exponential and Poisson draws from `random.random()` alone."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)
        self.uniform: Callable[[], float] = self._rng.random

    def normal(self) -> float:
        # Box-Muller; 1 - u keeps the logarithm's argument in (0, 1].
        u, v = self.uniform(), self.uniform()
        return math.sqrt(-2.0 * math.log(1.0 - u)) * math.cos(2.0 * math.pi * v)

    def exponential(self, mean: float) -> float:
        return -mean * math.log(1.0 - self.uniform())

    def poisson(self, lam: float) -> int:
        # Inversion: fine for the small means here (under one per millisecond).
        u = self.uniform()
        k, p = 0, math.exp(-lam)
        cdf = p
        while u > cdf and k < 100:
            k += 1
            p *= lam / k
            cdf += p
        return k


def lte_drive() -> str:
    d = Draws(seed=20240601)
    period_ms, step_ms = 60_000, 100
    steps = period_ms // step_ms
    log_mean = math.log(2.0e6)
    phi, sigma = 0.9, 0.4  # AR(1) coefficient and stationary std of the log-rate
    x = 0.0
    rates = []
    for k in range(steps):
        x = phi * x + sigma * math.sqrt(1 - phi * phi) * d.normal()
        cell = 0.7 * math.sin(2 * math.pi * k * step_ms / 40_000)
        rates.append(min(8.0e6, max(0.2e6, math.exp(log_mean + cell + x))))
    for _ in range(3):
        start = int(d.uniform() * steps)
        for k in range(start, min(steps, start + 3 + int(d.uniform() * 6))):
            rates[k] = 0.0
    lines = []
    for ms in range(1, period_ms + 1):
        lam = rates[(ms - 1) // step_ms] / OPPORTUNITY_BITS / 1000.0
        lines += [str(ms)] * d.poisson(lam)
    # mahimahi loops with the last timestamp as the period: end exactly at 60 s.
    if not lines or lines[-1] != str(period_ms):
        lines.append(str(period_ms))
    return "\n".join(lines) + "\n"


def lte_walk() -> str:
    d = Draws(seed=20240602)
    rows = [
        "# Synthetic pedestrian LTE (scripts/make_traces.py): 1 s steps, last rate holds.",
        "time_s,rate_kbps",
    ]
    log_rate = math.log(2000.0)
    for t in range(120):
        log_rate = min(math.log(4000.0), max(math.log(500.0), log_rate + 0.15 * d.normal()))
        rate = 300.0 if 70 <= t < 75 else math.exp(log_rate)
        rows.append(f"{t},{round(rate)}")
    return "\n".join(rows) + "\n"


def wifi_office() -> str:
    d = Draws(seed=20240603)
    segment_ms, period_ms = 200, 60_000
    clear = True
    stay = d.exponential(6000.0)
    pattern = []
    for k in range(period_ms // segment_ms):
        if k * segment_ms >= stay:
            clear = not clear
            stay += d.exponential(6000.0 if clear else 2000.0)
        kbps = 5000.0 + 500.0 * d.normal() if clear else 400.0 + 1100.0 * d.uniform()
        pattern.append({"duration": segment_ms, "capacity": round(max(kbps, 100.0))})
    trace = {
        "type": "video",
        "from": "rtcbench scripts/make_traces.py (synthetic office Wi-Fi)",
        "uplink": {"trace_pattern": pattern},
        "downlink": {},
    }
    return json.dumps(trace, indent=1) + "\n"


TRACES: dict[str, Callable[[], str]] = {
    "lte-drive.mahimahi": lte_drive,
    "lte-walk.csv": lte_walk,
    "wifi-office.json": wifi_office,
}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--check", action="store_true", help="compare with the shipped files instead of writing"
    )
    args = parser.parse_args()
    stale = []
    for name, make in TRACES.items():
        path = OUT / name
        text = make()
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            OUT.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"{path}: {len(text.encode()) / 1000:.1f} kB")
    if stale:
        print(f"differ from scripts/make_traces.py: {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
