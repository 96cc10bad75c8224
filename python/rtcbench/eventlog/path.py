"""The path a logged call crossed, inferred from its sender's RTC event log, as a scenario any
controller can run (docs/eventlog.md, "The path a call crossed").

What a sender's log shows of its path: when each packet left (the sender's clock, to 1 ms), when
it arrived or that it was lost (transport feedback: the receiver's clock, to 250 µs), and round
trips (its sender reports echoed in the receiver's reports). From those:

- **base delay**: half the least round trip (a symmetric path is assumed);
- **capacity**: a packet that waited behind the one before it at the bottleneck left right
  after it, so the time between their arrivals was its own transmission; per window of
  `WINDOW_US`, the bytes of such packets over those times (`_capacity`). A window with too few
  of them gives only a lower bound (what it delivered), and holds the nearest measured window's
  capacity, raised to that bound where it is higher. Cross traffic the log cannot see makes
  this the capacity left to the call, not the link's.
- **queue**: where losses came at the longest queues, far more often than elsewhere
  (`_losses`), the queue overflowed, and its size is the queuing delay it overflowed at;
  otherwise the longest queue seen is only a lower bound, and the buffer is RFC 8867 §4.2's
  300 ms if that is longer.
- **random loss**: the other losses, as a Bernoulli rate.

Jitter, reordering, the reverse path's capacity and anything that happened after the log's last
feedback are not inferred.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

if TYPE_CHECKING:
    from rtcbench.eventlog import EventLog

WINDOW_US = 500_000
"""The capacity's time step: long enough to hold tens of packets at 1 Mbit/s."""
BUSY_MS = 2.0
"""A packet that queued longer than this waited behind another: beyond the error of its delay
(sending logged to 1 ms, arrival to 250 µs, and up to about 1 ms from Chromium's pacer to the
wire, measured in docs/eventlog.md)."""
_MIN_PACKETS = 10
"""The fewest queued packets a window needs to measure the capacity."""
_FULL = 0.9
"""Packets whose queue was in the top tenth of all packets' met a queue near its longest."""
_NEAR_FULL = 0.7
"""Once the queue is known to overflow at some queuing delay, a loss behind a queue of at least
70 % of it is the overflow's: the packets of a frame's burst queue behind each other."""
_MIN_OVERFLOWS = 3
_OVERFLOW_RATIO = 5.0
"""Losses near the longest queues are its overflow when there are at least 3 and they are 5 times
as frequent among those packets as among the others."""
TITLE = "The path of a logged call, inferred from its sender's RTC event log"
DEFAULT_QUEUE_MS = 300
"""RFC 8867 §4.2's drop-tail queue, for a path whose log shows no overflow."""
DEFAULT_MIN_BPS = 150_000
"""A call's default minimum video rate in rtcbench's scenarios (RFC 8867 §4.3)."""
RATE_STEP_BPS = 10_000
"""Capacities are rounded to 10 kbit/s."""
STEP_TOLERANCE = 0.03
"""A window's capacity within 3 % of the step before it continues that step: the estimate's own
spread over a constant 1 Mbit/s link (docs/eventlog.md) is within ±1 %."""


@dataclass(frozen=True)
class DerivedPath:
    """What a sender's log says of its path, and of its call (`infer`)."""

    duration_us: int
    """The span the log knows deliveries for: up to the last packet feedback reported on."""
    call_start_us: int
    """The first media packet sent."""
    rtt_min_ms: float | None
    """The least round trip measured (None: no report echoed a sender report)."""
    steps: list[tuple[int, int]]
    """The capacity as (from µs, bit/s) steps; empty if the bottleneck never stayed busy."""
    windows: int
    measured_windows: int
    """Windows in which the bottleneck was busy throughout, which measured the capacity."""
    queue_max_ms: float
    overflow_ms: float | None
    """The queuing delay at which the queue overflowed (None: no overflow seen)."""
    overflow_losses: int
    random_losses: int
    reported: int
    start_bps: int | None
    """The estimator's first estimate: the call's start rate."""
    peak_bps: int
    """The largest of the capacities and the estimator's targets: the call's ceiling."""
    audio: bool

    @property
    def base_owd_us(self) -> int:
        """The one-way propagation delay the path is given: half the least round trip, or 0."""
        return 0 if self.rtt_min_ms is None else round(self.rtt_min_ms * 500)

    @property
    def queue_ms(self) -> int:
        """The buffer, as drain time in ms rounded up to 10 ms: where it overflowed, the delay
        it overflowed at; otherwise at least the longest seen and `DEFAULT_QUEUE_MS`."""
        if self.overflow_ms is not None:
            return 10 * math.ceil(max(self.overflow_ms, 1.0) / 10)
        return max(10 * math.ceil(max(self.queue_max_ms, 1.0) / 10), DEFAULT_QUEUE_MS)

    @property
    def random_loss(self) -> float:
        return self.random_losses / self.reported if self.reported else 0.0

    def summary(self) -> dict[str, Any]:
        """The inference in numbers, with what it rests on (the summary's `eventlog.path`)."""
        return {
            "duration_s": self.duration_us / 1e6,
            "rtt_min_ms": self.rtt_min_ms,
            "base_delay_ms": self.base_owd_us / 1000,
            "capacity": {
                "window_ms": WINDOW_US // 1000,
                "windows": self.windows,
                "measured_windows": self.measured_windows,
                "steps": len(self.steps),
                "min_bps": min((c for _, c in self.steps), default=None),
                "max_bps": max((c for _, c in self.steps), default=None),
            },
            "queue": {
                "longest_ms": round(self.queue_max_ms, 2),
                "overflow_ms": None if self.overflow_ms is None else round(self.overflow_ms, 2),
                "size_ms": self.queue_ms if self.steps else None,
                "from": "overflow" if self.overflow_losses else "at-least",
            },
            "loss": {
                "reported": self.reported,
                "at_full_queue": self.overflow_losses,
                "random": self.random_losses,
                "random_rate": round(self.random_loss, 6),
            },
        }

    def scenario(self, scenario_id: str, source: str) -> str:
        """The path as a scenario (TOML): A sends the call to B over `forward`, which has the
        capacity, queue and loss inferred; both ways take the base delay."""

        def kbps(bps: int) -> str:
            return f"{max(1, round(bps / 1000))}kbps"

        def seconds(us: int) -> str:
            return f"{us / 1e6:.3f}".rstrip("0").rstrip(".") + "s"

        delay = f"{self.base_owd_us / 1000:g}ms"
        lines = [
            f"id = {_quoted(scenario_id)}",
            f"title = {_quoted(TITLE)}",
            f"source = {_quoted(source)}",
            'description = """',
            "Derived by rtcbench eventlog (docs/eventlog.md): base delay half the least round trip;",
            f"capacity from the packets that queued behind another, per {WINDOW_US // 1000} ms window",
            f"({self.measured_windows} of {self.windows} measured); queue and loss from the losses",
            "transport feedback reported. Cross traffic, jitter and the reverse path are not in the",
            'log."""',
            f'duration = "{seconds(self.duration_us)}"',
            "",
            "[[links]]",
            'name = "forward"',
            'from = "A"',
            'to = "B"',
            f'delay = "{delay}"',
        ]
        if self.steps:
            lines.append("schedule = [")
            lines += [f'  {{ at = "{seconds(at)}", capacity = "{kbps(bps)}" }},' for at, bps in self.steps]
            lines += ["]", f'queue = {{ kind = "droptail", size = "{self.queue_ms}ms" }}']
        if self.random_losses:
            lines.append(f'loss = {{ model = "bernoulli", rate = {self.random_loss:.6g} }}')
        lines += ["", "[[links]]", 'name = "backward"', 'from = "B"', 'to = "A"', f'delay = "{delay}"', ""]
        video = [f'max = "{kbps(self.peak_bps)}"']
        if self.start_bps:
            video.insert(0, f'start = "{kbps(self.start_bps)}"')
            if self.start_bps < DEFAULT_MIN_BPS:
                # Below rtcbench's default floor (RFC 8867 §4.3), which a start may not be.
                video.insert(0, f'min = "{kbps(self.start_bps)}"')
        lines += [
            "[[calls]]",
            'from = "A"',
            'to = "B"',
            f'start = "{seconds(self.call_start_us)}"',
            f"video = {{ {', '.join(video)} }}",
        ]
        if not self.audio:
            lines.append("audio = { enabled = false }")
        return "\n".join(lines) + "\n"


def _quoted(text: str) -> str:
    """`text` as a TOML basic string."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in escaped) + '"'


def infer(log: EventLog, delays: pl.DataFrame, overhead: int) -> DerivedPath | None:
    """The path `log`'s call crossed, from `delays` (`EventLog.packet_delays`) with `overhead`
    bytes on each packet's logged size; None if the log holds no packet it sent that feedback
    reported on (a receiver's log: its sender's log holds the path)."""
    if delays.height == 0:
        return None
    rtt = log.round_trips()
    rtt_min_ms = int(rtt["rtt_us"].min()) / 1000 if rtt.height else None  # type: ignore[arg-type]
    base_us = 0 if rtt_min_ms is None else round(rtt_min_ms * 500)
    got = delays.filter(pl.col("received")).with_columns(
        at_us=pl.col("arrival_us") - (pl.col("arrival_us") - pl.col("t_us")).min() + base_us,
        wire=pl.col("size") + overhead,
    )
    duration_us = int(delays["t_us"].max())  # type: ignore[arg-type]
    if got.height:
        duration_us = max(duration_us, int(got["at_us"].max()))  # type: ignore[arg-type]
    steps, windows, measured = _capacity(got, duration_us)
    queue_max = float(got["delay_ms"].max()) if got.height else 0.0  # type: ignore[arg-type]
    overflow, random_losses, overflow_ms = _losses(delays)
    sent = log.tables["rtp"].filter(pl.col("direction") == "out")
    targets = log.tables["loss_based"] if log.tables["loss_based"].height else log.tables["targets"]
    column = "bitrate_bps" if "bitrate_bps" in targets.columns else "target_bps"
    start_bps = int(targets[column][0]) if targets.height else None
    peak = max([c for _, c in steps] + ([int(targets[column].max())] if targets.height else []) + [0])  # type: ignore[arg-type]
    return DerivedPath(
        duration_us=duration_us,
        call_start_us=int(sent["t_us"].min()),  # type: ignore[arg-type]
        rtt_min_ms=rtt_min_ms,
        steps=steps,
        windows=windows,
        measured_windows=measured,
        queue_max_ms=queue_max,
        overflow_ms=overflow_ms,
        overflow_losses=overflow,
        random_losses=random_losses,
        reported=delays.height,
        start_bps=start_bps,
        peak_bps=100_000 * math.ceil(max(peak, 100_000) / 100_000),
        audio=bool((sent["media"] == "audio").any()),
    )


def _capacity(got: pl.DataFrame, duration_us: int) -> tuple[list[tuple[int, int]], int, int]:
    """The capacity steps over [0, duration_us), the windows, and how many measured it.

    A packet that queued behind the one before it left the bottleneck right after that one: the
    time between their arrivals is its own transmission, so over such packets (`_queued`) the
    capacity is their bytes over the sum of those gaps (cross traffic the log cannot see widens
    the gaps: what is measured is the capacity left to the call)."""
    windows = max(1, -(-duration_us // WINDOW_US))
    if got.height == 0:
        return [], windows, 0
    per = (
        _queued(got.sort("at_us"))
        .with_columns(w=pl.col("at_us") // WINDOW_US)
        .group_by("w")
        .agg(
            queued=pl.col("queued").sum(),
            bits=(pl.col("wire") * 8).filter(pl.col("queued")).sum(),
            gaps_us=pl.col("gap_us").filter(pl.col("queued")).sum(),
            delivered_bps=pl.col("wire").sum() * 8 * 1_000_000 / WINDOW_US,
        )
        .sort("w")
    )
    measured: dict[int, float] = {}
    floor: dict[int, float] = {}
    for row in per.iter_rows(named=True):
        w = int(row["w"])
        floor[w] = float(row["delivered_bps"])
        if row["queued"] >= _MIN_PACKETS and row["gaps_us"] > 0:
            measured[w] = float(row["bits"]) * 1_000_000 / float(row["gaps_us"])
    if not measured:
        return [], windows, 0
    known = sorted(measured)
    steps: list[tuple[int, int]] = []
    for w in range(windows):
        if w in measured:
            c = measured[w]
        else:
            # The nearest measured window's, earlier ones first; never below what was delivered.
            before = [k for k in known if k < w]
            c = max(measured[before[-1] if before else known[0]], floor.get(w, 0.0))
        bps = max(RATE_STEP_BPS, RATE_STEP_BPS * round(c / RATE_STEP_BPS))
        if not steps or abs(bps - steps[-1][1]) > STEP_TOLERANCE * steps[-1][1]:
            steps.append((w * WINDOW_US, bps))
    return steps, windows, len(measured)


def _queued(got: pl.DataFrame) -> pl.DataFrame:
    """`got` (arrivals in order, with `wire` bytes and `delay_ms`) with `gap_us` (since the
    arrival before) and `queued`: the packet waited behind another at the bottleneck.

    A packet's delay above the least one's is its queuing plus the difference of their
    transmission times; at any capacity at least what its window delivered, that difference is
    at most (its size - the least one's) over the delivered rate. A packet whose delay exceeds
    the least one's by more than that and `BUSY_MS` queued."""
    first = got.filter(pl.col("delay_ms") == pl.col("delay_ms").min()).row(0, named=True)
    delivered = (pl.col("wire").sum() * 8 / (WINDOW_US / 1e6)).over(pl.col("at_us") // WINDOW_US)
    transmission_ms = (pl.col("wire") - first["wire"]).clip(lower_bound=0) * 8 * 1000 / delivered
    return got.with_columns(
        gap_us=pl.col("at_us").diff(),
        queued=(pl.col("delay_ms") - first["delay_ms"] - transmission_ms > BUSY_MS)
        & pl.col("at_us").diff().is_not_null(),
    )


def _losses(delays: pl.DataFrame) -> tuple[int, int, float | None]:
    """(losses at a full queue, other losses, the queuing delay at which the queue overflowed)
    among the packets feedback reported on, in sending order.

    A loss's queue is that of the last packet sent before it that arrived: it entered the queue
    just before the lost one (the one after may come once the queue has drained). Random loss
    falls on long and short queues alike; a full queue's overflow where the queue is longest.
    So the losses whose queue was in the top tenth of all packets' (`_FULL`) show an overflow
    when there are at least `_MIN_OVERFLOWS` and they are `_OVERFLOW_RATIO` times as frequent
    among those packets as among the others. The queue overflowed at their median queue; every
    loss whose queue was at least `_NEAR_FULL` of that is the overflow's, the others random."""
    ordered = delays.sort("row")
    seen = pl.when(pl.col("received")).then(pl.col("delay_ms"))
    marked = ordered.with_columns(queue_ms=seen.forward_fill().fill_null(0.0))
    received = marked.filter(pl.col("received"))
    lost = marked.filter(~pl.col("received"))
    if received.height == 0 or lost.height == 0:
        return 0, lost.height, None

    def split(level: float) -> tuple[pl.DataFrame, float, float]:
        """The losses at a queue of at least `level`, their rate there, and the rate below."""
        at = lost.filter(pl.col("queue_ms") >= level)
        packets_at = int((received["delay_ms"] >= level).sum()) + at.height
        below = marked.height - packets_at
        return at, at.height / max(packets_at, 1), (lost.height - at.height) / max(below, 1)

    high = float(received["delay_ms"].quantile(_FULL, "lower"))  # type: ignore[arg-type]
    at_full, rate_full, rate_other = split(high)
    if at_full.height < _MIN_OVERFLOWS or rate_full <= _OVERFLOW_RATIO * rate_other:
        return 0, lost.height, None
    level = float(at_full["queue_ms"].median())  # type: ignore[arg-type]
    overflow, _, _ = split(_NEAR_FULL * level)
    return overflow.height, lost.height - overflow.height, level
