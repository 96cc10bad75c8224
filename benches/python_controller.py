"""What a controller written in Python costs: simulated seconds per wall second of a 100 s
`rfc8867-5.1` run (first variant) with the example delay-gradient AIMD against the built-in `gcc`,
and the simulator's overhead per call into Python.

The overhead is measured on `fixed` written in Python (the test's `PyFixed`): it gives the built-in
`fixed` trace bit for bit (tests/test_python_controller.py), so the simulation does the same
work and the difference in time is the cost of calling Python, divided by the calls made.

Run by `make bench`. Timing lives here, never in pass/fail tests.
"""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path

import rtcbench
from rtcbench.controller import controller_class
from rtcbench.runner import ControllerArg

REPEATS = 7
ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = f"{ROOT / 'examples' / 'delay_gradient_aimd.py'}:DelayGradientAimd"


# The very class whose trace the test proves bit-identical to the built-in `fixed`.
PyFixed = controller_class(f"{ROOT / 'tests' / 'test_python_controller.py'}:PyFixed")


def counting(cls: type[rtcbench.Controller], calls: Counter[str]) -> type[rtcbench.Controller]:
    """A subclass of `cls` that counts the calls of the methods `cls` defines."""
    methods = [
        "on_start", "on_packet_sent", "on_feedback", "on_timeout", "next_timeout_us", "target_rate",
        "pacing_rate", "metrics",
    ]  # fmt: skip

    def wrap(name: str) -> object:
        method = getattr(cls, name)

        def counted(self: rtcbench.Controller, *args: object) -> object:
            calls[name] += 1
            return method(self, *args)

        return counted

    own = {n: wrap(n) for n in methods if getattr(cls, n) is not getattr(rtcbench.Controller, n)}
    return type(f"Counting{cls.__name__}", (cls,), own)


def sim_seconds(variant: rtcbench.Variant, controller: rtcbench.runner.ControllerArg) -> float:
    """Median wall time of the simulation alone (no metrics or files)."""
    times = [
        rtcbench.run_variant(variant, controller, 1, figure=False).summary["sim_wall_s"]
        for _ in range(REPEATS)
    ]
    return float(statistics.median(times))


def main() -> None:
    variant = rtcbench.resolve("rfc8867-5.1")[0]
    simulated = rtcbench.run_variant(variant, "fixed", 1, figure=False).summary["simulated_s"]
    aimd = controller_class(EXAMPLE)
    rows: list[tuple[str, ControllerArg]] = [
        ("gcc (built in)", "gcc"),
        ("delay-gradient AIMD (Python)", aimd),
        ("fixed (built in)", "fixed"),
        ("fixed (Python)", PyFixed),
    ]
    print(f"rfc8867-5.1 [{variant.variant}], {simulated:.0f} s simulated, median of {REPEATS}")
    print(f"{'controller':<30} {'sim wall ms':>12} {'sim s per wall s':>17}")
    wall: dict[str, float] = {}
    for label, cc in rows:
        wall[label] = sim_seconds(variant, cc)
        print(f"{label:<30} {wall[label] * 1e3:>12.1f} {simulated / wall[label]:>16,.0f}x")

    for label, cls in (("fixed (Python)", PyFixed), ("delay-gradient AIMD (Python)", aimd)):
        calls: Counter[str] = Counter()
        rtcbench.run_variant(variant, counting(cls, calls), 1, figure=False)
        total = sum(calls.values())
        detail = ", ".join(f"{n} {k:,}" for n, k in calls.most_common())
        print(f"{label}: {total:,} calls into Python ({detail})")
        if cls is PyFixed:
            extra = wall[label] - wall["fixed (built in)"]
            print(
                f"overhead per call (Python fixed - built-in fixed, same trace): "
                f"{extra / total * 1e6:.2f} µs ({extra * 1e3:.1f} ms per run)"
            )
    ratio = wall["delay-gradient AIMD (Python)"] / wall["gcc (built in)"]
    print(f"delay-gradient AIMD in Python takes {ratio:.1f}x the time of gcc in Rust")


if __name__ == "__main__":
    main()
