"""When does GoogCC leave additive increase after a step up in capacity? A replay of its rule.

libwebrtc's AIMD rate control (`modules/remote_bitrate_estimator/aimd_rate_control.cc`,
`link_capacity_estimator.cc`) increases additively while the acknowledged rate stays under the
upper bound of a link-capacity estimate, and multiplicatively once it has passed it. The estimate
is an exponential average (weight 0.05) of the acknowledged rate at each overuse, its bound that
average plus three deviations (the normalised variance clamped to 0.4-2.5). Neither Chromium nor
the `goog_cc` crate exposes it, but both expose the target, and each decrease of the target is
0.85 × the acknowledged rate at that overuse. So the estimate can be rebuilt from the decreases
alone, and the switch predicted: the first moment after the step at which the acknowledged rate
(the run's sending rate over its target, times the target) passes the bound.

Usage: python replay.py [--step S] RUN... where each RUN is a seed folder (`.../seed-1`) holding
`controller.parquet` and `packets.parquet`, from any stack whose controller is libwebrtc's GoogCC.
What it showed is in docs/stacks.md ("At 2.5 Mbit/s").
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import polars as pl

BETA = 0.85  # libwebrtc's back-off factor (WebRTC-BweBackOffFactor default)
ALPHA = 0.05  # LinkCapacityEstimator::OnOveruseDetected's weight
GRID_US = 500_000  # Chromium's getStats target is sampled every 0.5 s; every stack is read so
DROP = 0.97  # a decrease: the target falls below this × the previous sample
SETTLE_S = 5.0  # decreases before this are the start-up's, not the link's
MULTIPLICATIVE = 1.06  # observed switch: +6 % within 1 s (additive is 1.5-2 %/s near 1 Mbit/s)


@dataclass
class LinkCapacity:
    """libwebrtc's LinkCapacityEstimator, in kbit/s."""

    estimate: float | None = None
    deviation: float = 0.4

    def spread(self) -> float:
        """Three deviations, in kbit/s."""
        assert self.estimate is not None
        return 3 * math.sqrt(self.deviation * self.estimate)

    def upper(self) -> float:
        return math.inf if self.estimate is None else self.estimate + self.spread()

    def lower(self) -> float:
        return 0.0 if self.estimate is None else max(0.0, self.estimate - self.spread())

    def on_overuse(self, acked: float) -> None:
        # AimdRateControl::ChangeBitrate, kRcDecrease: a sample under the lower bound resets first.
        if acked < self.lower():
            self.estimate = None
        new = acked if self.estimate is None else (1 - ALPHA) * self.estimate + ALPHA * acked
        error = new - acked
        deviation = (1 - ALPHA) * self.deviation + ALPHA * error * error / max(new, 1.0)
        self.deviation = min(2.5, max(0.4, deviation))
        self.estimate = new


@dataclass
class Replay:
    run: str
    send_ratio: float
    samples: list[int]
    upper_at_step: float
    predicted_s: float | None
    observed_s: float | None


def target_grid(run: Path) -> list[tuple[float, float]]:
    c = pl.read_parquet(run / "controller.parquet").filter(pl.col("target_bps").is_not_null())
    c = c.group_by((pl.col("t_us") // GRID_US).alias("slot")).agg(pl.col("target_bps").sort_by("t_us").last())
    return [(slot * GRID_US / 1e6, bps / 1e3) for slot, bps in c.sort("slot").iter_rows()]


def send_ratio(run: Path, start_s: float, end_s: float) -> float:
    """Bytes sent (media, repair, padding, audio) over the mean target, in [start, end)."""
    window = (pl.col("t_us") >= start_s * 1e6) & (pl.col("t_us") < end_s * 1e6)
    packets = pl.read_parquet(run / "packets.parquet", columns=["t_us", "event", "kind", "size"])
    sent = packets.filter(window & (pl.col("event") == "sent") & (pl.col("kind") != "rtcp"))["size"].sum()
    target = pl.read_parquet(run / "controller.parquet").filter(window)["target_bps"].mean()
    if not isinstance(target, float) or target <= 0:
        raise ValueError(f"{run}: no target in controller.parquet over {start_s:g}-{end_s:g} s")
    return float(sent) * 8 / (end_s - start_s) / target


def replay(run: Path, step_s: float) -> Replay:
    grid = target_grid(run)
    ratio = send_ratio(run, step_s - 10, step_s)
    link = LinkCapacity()
    samples: list[int] = []
    upper_at_step: float | None = None
    predicted = None
    for (_, previous), (t, target) in itertools.pairwise(grid):
        if t >= step_s and upper_at_step is None:
            upper_at_step = link.upper()
            if math.isinf(upper_at_step):
                predicted = t  # already multiplicative: no estimate left to pass
        if target < DROP * previous and t > SETTLE_S:
            if t < step_s:
                samples.append(round(target / BETA))
            link.on_overuse(target / BETA)
        elif ratio * target > link.upper():
            link.estimate = None  # kRcIncrease: the throughput passed the bound
            if t >= step_s and predicted is None:
                predicted = t
    after = zip(grid, grid[2:], strict=False)
    observed = next((t for (t, x), (_, later) in after if t >= step_s and later > MULTIPLICATIVE * x), None)
    bound = math.inf if upper_at_step is None else upper_at_step
    return Replay(str(run), ratio, samples, bound, predicted, observed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="seed folders")
    parser.add_argument("--step", type=float, default=40.0, help="the step up's time, s (rfc8867-5.1: 40)")
    args = parser.parse_args()
    for run in args.runs:
        if not (run / "controller.parquet").is_file() or not (run / "packets.parquet").is_file():
            print(f"{run}: not a run's seed folder (no controller.parquet, packets.parquet)", file=sys.stderr)
            return 2
        try:
            r = replay(run, args.step)
        except ValueError as e:
            print(e, file=sys.stderr)
            return 2
        samples = " ".join(map(str, r.samples)) or "none"
        bound = "none" if math.isinf(r.upper_at_step) else f"{r.upper_at_step:.0f}"
        print(
            f"{r.run}: sends {r.send_ratio:.3f} of its target; acknowledged kbit/s at each overuse: "
            f"{samples}; upper bound at the step {bound}; switch predicted at {r.predicted_s} s, "
            f"seen at {r.observed_s} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
