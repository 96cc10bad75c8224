"""A delay-gradient AIMD controller in Python: the smallest useful congestion controller.

It fits a line to the one-way delays (arrival - send time) of the packets that feedback reported
over the last `window_us`; the slope is the delay gradient, the rate at which the bottleneck queue
grows (sending 10 % above capacity grows it by 0.1 s per second). Then, at every feedback:

- loss, or a gradient above `threshold`: multiply the rate by `decrease`, starting from the rate
  the receiver measured over the window if that is lower (as GCC does; after a capacity drop
  the sender's own rate is far above what gets through), at most once per `hold_us` so that one
  congestion event is answered once;
- a gradient at or below zero and no loss: add `increase_bps_per_s` per second since the last
  feedback;
- in between: hold the rate.

Run it:

    rtcbench run rfc8867-5.1 --cc examples/delay_gradient_aimd.py:DelayGradientAimd

or from Python: ``rtcbench.run("rfc8867-5.1", DelayGradientAimd)``. See
docs/controllers/python.md for the interface and tests/test_python_controller.py for its bands.
"""

from __future__ import annotations

from collections import deque

import rtcbench


class DelayGradientAimd(rtcbench.Controller):
    """Additive increase while the delay gradient is not positive, multiplicative decrease when it
    exceeds a threshold or a packet is lost."""

    def __init__(
        self,
        *,
        increase_bps_per_s: float = 100_000.0,
        decrease: float = 0.85,
        threshold: float = 0.05,
        window_us: int = 500_000,
        hold_us: int = 300_000,
    ) -> None:
        self.increase_bps_per_s = increase_bps_per_s
        self.decrease = decrease
        self.threshold = threshold
        self.window_us = window_us
        self.hold_us = hold_us
        self.rate = 0.0
        self.min_rate = 0.0
        self.max_rate = float("inf")
        # (send time µs, one-way delay µs, arrival µs, size in bytes) of the packets received
        # within the window.
        self.samples: deque[tuple[int, int, int, int]] = deque()
        self.gradient: float | None = None
        self.last_feedback_us: int | None = None
        self.last_decrease_us: int | None = None
        self.decreases = 0

    def on_start(self, call: rtcbench.CallInfo) -> None:
        self.rate = float(call.start_rate_bps)
        self.min_rate = float(call.min_rate_bps)
        self.max_rate = float(call.max_rate_bps)

    def on_feedback(self, now_us: int, report: rtcbench.FeedbackReport) -> None:
        if not report.packets:
            return  # a receiver report or REMB: nothing per packet
        lost = False
        for p in report.packets:
            if p.arrival_us is None:
                lost = True
            else:
                self.samples.append((p.sent_us, p.arrival_us - p.sent_us, p.arrival_us, p.size))
        while self.samples and self.samples[0][0] < self.samples[-1][0] - self.window_us:
            self.samples.popleft()
        self.gradient = _slope(self.samples)
        elapsed_s = (now_us - self.last_feedback_us) / 1e6 if self.last_feedback_us is not None else 0.0
        self.last_feedback_us = now_us

        overuse = lost or (self.gradient is not None and self.gradient > self.threshold)
        if overuse:
            held = self.last_decrease_us is not None and now_us - self.last_decrease_us < self.hold_us
            if not held:
                received = _receive_rate(self.samples)
                self.rate = self.decrease * min(self.rate, received or self.rate)
                self.last_decrease_us = now_us
                self.decreases += 1
        elif self.gradient is not None and self.gradient <= 0.0:
            self.rate += self.increase_bps_per_s * elapsed_s
        self.rate = min(max(self.rate, self.min_rate), self.max_rate)

    def target_rate(self) -> float:
        return self.rate

    def metrics(self) -> dict[str, float | None]:
        return {
            "rate_bps": self.rate,
            "gradient": self.gradient,
            "decreases": float(self.decreases),
        }


def _slope(samples: deque[tuple[int, int, int, int]]) -> float | None:
    """Least-squares slope of delay over send time (dimensionless: µs per µs)."""
    n = len(samples)
    if n < 2:
        return None
    mean_t = sum(s[0] for s in samples) / n
    mean_d = sum(s[1] for s in samples) / n
    var = sum((s[0] - mean_t) ** 2 for s in samples)
    if var == 0:
        return None
    return sum((s[0] - mean_t) * (s[1] - mean_d) for s in samples) / var


def _receive_rate(samples: deque[tuple[int, int, int, int]]) -> float | None:
    """Bit/s that arrived over the window: the bytes after the first arrival over the time since."""
    if len(samples) < 2:
        return None
    arrivals = [s[2] for s in samples]
    span_us = max(arrivals) - min(arrivals)
    if span_us <= 0:
        return None
    return 8e6 * (sum(s[3] for s in samples) - samples[0][3]) / span_us
