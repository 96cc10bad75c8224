"""Runs a scenario of this folder in simulation and emulated (the kernel's BBR), and prints each
TCP flow's throughput and the bottleneck's queueing delay from both runs' packet tables
(docs/findings/2026-11-29-bbr-kernel.md).

    PYTHONPATH=python python experiments/bbr-kernel/compare.py alone.toml [--seed 1] [--skip S]

Needs root for the emulated run (or `--emulated FOLDER`, an emulated run's folder, to hold a new
simulation against a kernel run already made). Measured as `tests/test_bbr.py` measures: IP
bytes received in [skip, end) s; queueing delay is each received data packet's one-way delay
less the 20 ms propagation and its own serialisation at the bottleneck's capacity.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import rtcbench
from rtcbench.identity import EMULATE
from rtcbench.results import load_tables

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parents[1]))
from tests.test_bbr import measure  # noqa: E402  (one measurement, the test's)


def _video(flow: dict[str, Any]) -> dict[str, Any]:
    """A call's video flow as its run summary has it."""
    keys = ("name", "mean_recv_rate_bps", "qdelay_p50_ms", "qdelay_p95_ms", "loss_ratio")
    return {k: flow.get(k) for k in keys}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cc", default="fixed", help="the calls' controller, if the scenario has calls")
    parser.add_argument("--skip", type=float, default=5.0, help="seconds left out at the start")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--emulated", type=Path, default=None, help="an emulated run's folder to reuse")
    args = parser.parse_args()
    scenario = HERE / args.scenario
    out = args.out or Path(tempfile.mkdtemp(prefix="bbr-kernel-"))
    (sim,) = rtcbench.run(scenario, args.cc, args.seed, out / "sim", figure=False)
    if args.emulated is None:
        (emu,) = rtcbench.run(scenario, args.cc, args.seed, out / "emu", figure=False, mode=EMULATE)
        assert emu.path is not None
        args.emulated = emu.path
    summary = json.loads((args.emulated / "summary.json").read_text())
    video = {
        "simulated": [_video(f) for f in sim.summary["flows"] if f["kind"] == "video"],
        "emulated": [_video(f) for f in summary["flows"] if f["kind"] == "video"],
    }
    report = {
        "scenario": args.scenario,
        "seed": args.seed,
        "valid": summary["emulation"]["valid"],
        "simulated": dataclasses.asdict(measure(sim.tables, args.skip)),
        "emulated": dataclasses.asdict(measure(load_tables(args.emulated), args.skip)),
        "video": video,
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
