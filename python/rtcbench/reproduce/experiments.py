"""The reproduction set: each seed table or figure that has a built-in scenario, as data.

A `SeedTable` is one table or figure of a seed document (docs/references.md): its numbers as
`Row`s, each the seed's printed value beside a `Measure` that computes the same quantity from a
run, and the table's `Finding`s, the seed's claims as predicates over those rows. The same
predicate is judged on the seed's own numbers (a test checks that every finding the seed printed
numbers for holds on them), on Chromium 156's run and on the simulator's.

Where the seed measured otherwise than rtcbench can (an RTT-based queuing delay, ConMon's
per-call average), the row says what is measured instead; docs/reproduction.md lists the
differences. Windows skip a call's first seconds only where the seed's own numbers do.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from rtcbench.calibrate import Case
from rtcbench.reproduce.measures import VIDEO, Flows, FlowStat, LinkTotal, Measure, Ratio, TimeToReach

__all__ = ["TABLES", "Case", "Finding", "Row", "SeedTable", "cases", "table"]

MBPS = 1e-6
"""bit/s to Mbit/s: the seeds' unit for rates, except seed 003's kbit/s."""
KBPS = 1e-3


@dataclass(frozen=True)
class Row:
    """One number of a seed table: `measure` on a run of `case`, in `unit`, beside the seed's
    value (None where the seed printed none, only a claim). Two values agree when within
    `tolerance` of the reference (relative) or within `slack` (absolute, in `unit`), whichever is
    larger."""

    key: str
    label: str
    case: Case
    measure: Measure
    unit: str
    seed: float | None = None
    slack: float = 0.0
    tolerance: float = 0.15

    def agrees(self, value: float | None, reference: float | None) -> bool | None:
        return within(value, reference, self.slack, self.tolerance)


def within(value: float | None, reference: float | None, slack: float, tolerance: float) -> bool | None:
    """Whether `value` is within `tolerance` of `reference` (relative) or within `slack`
    (absolute), whichever is larger; None if either is missing."""
    if value is None or reference is None:
        return None
    return abs(value - reference) <= max(slack, tolerance * abs(reference))


Values = Mapping[str, float]
"""A table's values by row key; a missing value is absent, so a predicate that needs it raises
KeyError and decides nothing."""


@dataclass(frozen=True)
class Finding:
    """A claim of the seed, one line, and the predicate that decides it on a table's values (by
    row key). A predicate that meets a missing value decides nothing (None)."""

    text: str
    predicate: Callable[[Values], bool]

    def holds(self, values: Mapping[str, float | None]) -> bool | None:
        return self.judge(values)[0]

    def judge(self, values: Mapping[str, float | None]) -> tuple[bool | None, frozenset[str]]:
        """The verdict on `values` (as `holds`) and the keys of the rows the predicate read to
        reach it."""
        read = _Reading({key: value for key, value in values.items() if value is not None})
        try:
            return bool(self.predicate(read)), frozenset(read.keys_read)
        except (KeyError, TypeError, ZeroDivisionError):
            return None, frozenset(read.keys_read)


class _Reading(dict[str, float]):
    """A table's values that remember which ones a predicate read."""

    def __init__(self, values: dict[str, float]) -> None:
        super().__init__(values)
        self.keys_read: set[str] = set()

    def __getitem__(self, key: str) -> float:
        self.keys_read.add(key)
        return super().__getitem__(key)


@dataclass(frozen=True)
class SeedTable:
    """A table or figure of a seed: where it is (`source`, a full citation's short form and the
    table's number), its rows and its findings."""

    id: str
    source: str
    title: str
    rows: tuple[Row, ...]
    findings: tuple[Finding, ...] = ()
    note: str = ""

    def seed_values(self) -> dict[str, float | None]:
        return {r.key: r.seed for r in self.rows}


def _no_tsq(flows: int) -> tuple[str, ...]:
    """`--set`s that turn TCP Small Queues off on a scenario's `flows` TCP flows. Emulation and
    browser mode cannot give them on a host whose link is in the relay (docs/emulation.md), so
    the seeds' TCP experiments run without them in every column, the simulator's included."""
    return tuple(f"tcp.{i}.small_queues=false" for i in range(flows))


def _rate(flows: Flows, start: float, end: float, *, send: bool = True, scale: float = MBPS) -> FlowStat:
    key = "mean_send_rate_bps" if send else "mean_recv_rate_bps"
    return FlowStat(flows, start, end, key, scale=scale)


def _names(*names: str) -> Flows:
    return Flows(names)


def _all(values: Values, keys: Iterable[str], test: Callable[[float], bool]) -> bool:
    return all(test(values[k]) for k in keys)


# ------------------------------------------------------------------------------------------------
# Guerrero Viveros 2019 (seed 000), the wired testbed, §6.2


def _000_5_2_5() -> SeedTable:
    case = Case("seed000-5.2.5")
    return SeedTable(
        "000-6.2.1",
        "Guerrero Viveros 2019, §6.2.1",
        "One call on an unconstrained 100 Mbit/s Ethernet",
        (Row("rate", "sending rate, 20-120 s", case, _rate(VIDEO, 20, 120), "Mbit/s", 2.46),),
        (
            Finding(
                "an unconstrained call reaches the encoder's 2.5 Mbit/s cap (at least 2.2)",
                lambda v: v["rate"] >= 2.2,
            ),
        ),
    )


_SECTIONS_6_1 = ((0, 40, 2.0), (40, 80, 3.0), (80, 120, 1.0), (120, 160, 2.0))
# Table 6.1, per one-way delay (the table's RTT labels 50, 100, 200 ms) and section: sending rate
# (Mbit/s), queuing delay p95 (ms), maximum packet loss (%).
_TABLE_6_1 = {
    "25ms": ((1.69, 2.30, 0.82, 1.68), (10.84, 1.7, 224.5, 8.2), (0, 0, 51.2, 0)),
    "50ms": ((1.67, 2.4, 0.83, 1.60), (14.14, 0.2, 207.5, 15.8), (0, 0, 44.8, 0)),
    "100ms": ((1.64, 2.3, 0.80, 1.51), (22.85, 0, 216.2, 22), (0, 0, 66.9, 0)),
}


def _000_5_2_6() -> SeedTable:
    rows = []
    for delay, (rates, p95s, losses) in _TABLE_6_1.items():
        case = Case("seed000-5.2.6", ("first=2Mbps", f"delay={delay}"))
        for i, (start, end, _) in enumerate(_SECTIONS_6_1, 1):
            where = f"{delay} one way, section {i}"
            rows += [
                Row(
                    f"{delay}.s{i}.rate",
                    f"{where}: sending rate",
                    case,
                    _rate(VIDEO, start, end),
                    "Mbit/s",
                    rates[i - 1],
                ),
                Row(
                    f"{delay}.s{i}.p95",
                    f"{where}: queuing delay p95",
                    case,
                    FlowStat(VIDEO, start, end, "qdelay_p95_ms", "max", 1.0),
                    "ms",
                    p95s[i - 1],
                    slack=10.0,
                ),
                Row(
                    f"{delay}.s{i}.loss",
                    f"{where}: largest loss in a window",
                    case,
                    FlowStat(VIDEO, start, end, "max_window_loss_ratio", "max", 100.0),
                    "%",
                    losses[i - 1],
                    slack=5.0,
                ),
            ]
    delays = tuple(_TABLE_6_1)

    def utilisation_high(v: Values) -> bool:
        # "Values over 80% were observed in most cases. Section 2 is an exception": the encoder.
        return all(
            v[f"{d}.s{i}.rate"] >= 0.75 * cap
            for d in delays
            for i, (_, _, cap) in enumerate(_SECTIONS_6_1, 1)
            if i != 2
        )

    return SeedTable(
        "000-table-6.1",
        "Guerrero Viveros 2019, Table 6.1",
        "One call over 2 → 3 → 1 → 2 Mbit/s sections of 40 s (the first section as the table implies)",
        tuple(rows),
        (
            Finding(
                "the call uses at least 75 % of every section's capacity but the encoder-capped second",
                utilisation_high,
            ),
            Finding(
                "the delay hardly matters: each section's rate within 15 % across the three delays",
                lambda v: all(
                    max(v[f"{d}.s{i}.rate"] for d in delays)
                    <= 1.15 * min(v[f"{d}.s{i}.rate"] for d in delays)
                    for i in range(1, 5)
                ),
            ),
            Finding(
                "queuing delay p95 stays under 30 ms but at the drop to 1 Mbit/s, where it passes 100 ms",
                lambda v: all(
                    (v[f"{d}.s{i}.p95"] > 100) if i == 3 else (v[f"{d}.s{i}.p95"] < 30)
                    for d in delays
                    for i in range(1, 5)
                ),
            ),
            Finding(
                "packets are lost only at the drop to 1 Mbit/s",
                lambda v: all(
                    (v[f"{d}.s{i}.loss"] > 10) if i == 3 else (v[f"{d}.s{i}.loss"] < 1)
                    for d in delays
                    for i in range(1, 5)
                ),
            ),
        ),
        note="Queuing delay: the seed's is derived from the RTT, rtcbench's is the video's one-way queuing "
        "delay. Loss: the largest share lost in one 200 ms window.",
    )


def _000_5_2_7() -> SeedTable:
    case = Case("seed000-5.2.7")
    sections = {1: (0, 60), 2: (60, 240), 3: (240, 420)}
    seed = {
        (1, "F1"): 2.27,
        (2, "F1"): 1.81,
        (2, "F2"): 1.66,
        (3, "F1"): 1.05,
        (3, "F2"): 1.17,
        (3, "F3"): 1.24,
    }
    rows = tuple(
        Row(
            f"s{s}.{call}",
            f"section {s}: {call}'s rate",
            case,
            _rate(_names(f"{call}.video"), *sections[s]),
            "Mbit/s",
            value,
        )
        for (s, call), value in seed.items()
    )

    def shares(v: Values, s: int, calls: tuple[str, ...], lo: float, hi: float) -> bool:
        total = sum(v[f"s{s}.{c}"] for c in calls)
        return all(lo <= v[f"s{s}.{c}"] / total <= hi for c in calls)

    return SeedTable(
        "000-table-6.2",
        "Guerrero Viveros 2019, Table 6.2",
        "Three calls joining a 4 Mbit/s bottleneck at 0, 60 and 240 s",
        rows,
        (
            Finding(
                "alone, the call is held by its encoder (over 2 Mbit/s of 4)", lambda v: v["s1.F1"] >= 2.0
            ),
            Finding(
                "two calls share fairly: each 40-60 % of what they get together",
                lambda v: shares(v, 2, ("F1", "F2"), 0.4, 0.6),
            ),
            Finding(
                "three calls share fairly: each 25-42 %",
                lambda v: shares(v, 3, ("F1", "F2", "F3"), 0.25, 0.42),
            ),
            Finding(
                "together the calls use over 80 % of the link",
                lambda v: v["s2.F1"] + v["s2.F2"] >= 3.2 and v["s3.F1"] + v["s3.F2"] + v["s3.F3"] >= 3.2,
            ),
        ),
    )


def _000_5_2_8() -> SeedTable:
    rows = []
    seed = {"300ms": (1.25, 0.66, 19.67, 1.9), "1000ms": (1.23, 0.68, 18.36, 1.9)}
    for queue, (gcc, tcp, qd, alone) in seed.items():
        case = Case("seed000-5.2.8", (f"queue={queue}", *_no_tsq(1)))
        rows += [
            Row(
                f"{queue}.tcp_alone",
                f"{queue} queue: TCP alone, 0-30 s",
                case,
                _rate(_names("iperf"), 0, 30, send=False),
                "Mbit/s",
                alone,
            ),
            Row(
                f"{queue}.gcc",
                f"{queue} queue: the call, 30-240 s",
                case,
                _rate(VIDEO, 30, 240),
                "Mbit/s",
                gcc,
            ),
            Row(
                f"{queue}.tcp",
                f"{queue} queue: TCP, 30-240 s",
                case,
                _rate(_names("iperf"), 30, 240, send=False),
                "Mbit/s",
                tcp,
            ),
            Row(
                f"{queue}.qdelay",
                f"{queue} queue: the call's mean queuing delay, 30-240 s",
                case,
                FlowStat(VIDEO, 30, 240, "qdelay_mean_ms", "max", 1.0),
                "ms",
                qd,
                slack=10.0,
            ),
        ]
    queues = tuple(seed)
    return SeedTable(
        "000-table-6.3",
        "Guerrero Viveros 2019, Table 6.3",
        "One call against a long CUBIC flow on 2 Mbit/s, 300 and 1000 ms queues",
        tuple(rows),
        (
            Finding(
                "the call leads TCP without starving it: 55-75 % of what the two get",
                lambda v: all(
                    0.55 <= v[f"{q}.gcc"] / (v[f"{q}.gcc"] + v[f"{q}.tcp"]) <= 0.75 for q in queues
                ),
            ),
            Finding(
                "the call's mean queuing delay stays under 30 ms",
                lambda v: all(v[f"{q}.qdelay"] < 30 for q in queues),
            ),
            Finding(
                "the queue's size changes nothing: the call's rate within 15 % between 300 and 1000 ms",
                lambda v: abs(v["300ms.gcc"] - v["1000ms.gcc"]) <= 0.15 * v["300ms.gcc"],
            ),
        ),
        note="TCP Small Queues off in every column: the scenario turns them on because the seed's numbers "
        "need them (docs/scenarios.md), but emulation and browser mode cannot give them. Queuing delay: "
        "the seed's is derived from the RTT, rtcbench's is the one-way queuing delay.",
    )


# ------------------------------------------------------------------------------------------------
# Sjölund and Kevo 2022 (seed 001): GStreamer pipelines with a freestanding GCC, §5.3 (box plots)


def _utilisation(flows: Flows, start: float, end: float) -> Ratio:
    """Received rate over the mean capacity of the flow's bottleneck in the window."""
    return Ratio(
        FlowStat(flows, start, end, "mean_recv_rate_bps", scale=1.0),
        FlowStat(flows, start, end, "mean_capacity_bps", "mean", 1.0),
    )


def _001() -> SeedTable:
    staircase, sudden, china = (
        Case("seed001-staircase"),
        Case("seed001-sudden-reduction"),
        Case("seed001-sweden-to-china"),
    )
    rows = [
        Row(
            "staircase.u",
            "staircase: utilisation, 0-200 s",
            staircase,
            _utilisation(VIDEO, 0, 200),
            "",
            0.78,
            slack=0.05,
        ),
        Row(
            "sudden.u",
            "sudden reduction: utilisation, 0-120 s",
            sudden,
            _utilisation(VIDEO, 0, 120),
            "",
            slack=0.05,
        ),
        Row(
            "china.u",
            "Sweden to China: utilisation, 0-120 s",
            china,
            _utilisation(VIDEO, 0, 120),
            "",
            slack=0.05,
        ),
    ]
    # The dips to 500 kbit/s end at 33, 65 and 92 s; the seed's "responsiveness" is the time to
    # answer the restored 2 Mbit/s, here until the received rate (over 1 s) reaches half of it.
    for i, restore in enumerate((33, 65, 92), 1):
        rows.append(
            Row(
                f"sudden.climb{i}",
                f"sudden reduction: seconds to half the restored capacity after dip {i}",
                sudden,
                TimeToReach(VIDEO, restore, restore + 25, 1.0e6),
                "s",
                slack=1.0,
            )
        )
    return SeedTable(
        "001-5.3",
        "Sjölund and Kevo 2022, §5.3-§5.4 (Figures 5.1-5.6)",
        "One video call over the staircase, the sudden reduction and the Sweden-to-China pattern",
        tuple(rows),
        (
            # The seed's range widened by the row's slack, 0.05 each side.
            Finding("over the staircase GCC uses 77-79 % of the link (0.72-0.84 here)",
                    lambda v: 0.72 <= v["staircase.u"] <= 0.84),
            Finding("it uses less where the limit changes abruptly: both other patterns below the staircase",
                    lambda v: v["sudden.u"] < v["staircase.u"] and v["china.u"] < v["staircase.u"]),
            Finding("GCC climbs back slowly after a dip: over 6 s after at least one of the three",
                    lambda v: max(v["sudden.climb1"], v["sudden.climb2"], v["sudden.climb3"]) > 6),
        ),
        note="The seed's stack was GStreamer with a freestanding GCC, not a browser (issue 35 runs it); its "
        "numbers are box plots over five runs, of which only the staircase's utilisation is printed. The "
        "seed's claims across algorithms (NADA's and SCReAM's) need the other controllers: not judged.",
    )  # fmt: skip


# ------------------------------------------------------------------------------------------------
# De Cicco et al. 2013 (seed 002): slides with figures and claims, few numbers


def _002_grid() -> SeedTable:
    rows = []
    capacities = ("500kbps", "1000kbps", "1500kbps", "2000kbps")
    delays = ("15ms", "25ms", "40ms", "60ms")
    for capacity in capacities:
        for delay in delays:
            case = Case("seed002-grid", (f"capacity={capacity}", f"delay={delay}"))
            where = f"{capacity}, {delay} one way"
            rows += [
                Row(
                    f"{capacity}.{delay}.u",
                    f"{where}: utilisation, 30-120 s",
                    case,
                    _utilisation(VIDEO, 30, 120),
                    "",
                    None,
                    slack=0.05,
                ),
                Row(
                    f"{capacity}.{delay}.loss",
                    f"{where}: loss ratio, 30-120 s",
                    case,
                    FlowStat(VIDEO, 30, 120, "loss_ratio", "max", 1.0),
                    "",
                    None,
                    slack=0.01,
                ),
                Row(
                    f"{capacity}.{delay}.p90",
                    f"{where}: queuing delay p90, 30-120 s",
                    case,
                    FlowStat(VIDEO, 30, 120, "qdelay_p90_ms", "max", 1.0),
                    "ms",
                    None,
                    slack=10.0,
                ),
            ]
    cells = [f"{c}.{d}" for c in capacities for d in delays]
    return SeedTable(
        "002-grid",
        "De Cicco et al. 2013 slides, the single-flow figures",
        "One call over 4 capacities × 4 RTTs with a 60 KB buffer",
        tuple(rows),
        (
            Finding(
                "utilisation is slightly above 0.8 everywhere (0.78-0.92 in every cell)",
                lambda v: _all(v, (f"{c}.u" for c in cells), lambda u: 0.78 <= u <= 0.92),
            ),
            Finding(
                "the loss ratio stays at most 0.028",
                lambda v: _all(v, (f"{c}.loss" for c in cells), lambda x: x <= 0.028),
            ),
            Finding(
                "the 90th percentile of queuing delay is below 0.25 s",
                lambda v: _all(v, (f"{c}.p90" for c in cells), lambda x: x < 250),
            ),
        ),
        note="The seed gives these as figures and claims, not numbers. Queuing delay: the seed's is the RTT "
        "minus the base RTT, rtcbench's the one-way queuing delay.",
    )


def _002_step_up() -> SeedTable:
    case = Case("seed002-step-up")
    return SeedTable(
        "002-step-up",
        "De Cicco et al. 2013 slides, the step-up figure",
        "One call, capacity 400 → 3000 kbit/s at 60 s",
        (
            Row(
                "t",
                "seconds from the step to 1.8 Mbit/s received",
                case,
                TimeToReach(VIDEO, 60, 120, 1.8e6),
                "s",
                30.0,
                slack=5.0,
            ),
            Row("rate", "received rate, 90-120 s", case, _rate(VIDEO, 90, 120, send=False), "Mbit/s", 2.0),
        ),
        (
            Finding(
                "the call settles around 2 Mbit/s about 30 s after the step (1.7-2.3 Mbit/s within 40 s)",
                lambda v: v["t"] <= 40 and 1.7 <= v["rate"] <= 2.3,
            ),
        ),
    )


def _002_staircase() -> SeedTable:
    case = Case("seed002-staircase")
    steps = ((0, 100, 0.5), (100, 200, 1.0), (200, 300, 1.5), (300, 400, 2.0))
    rows = tuple(
        Row(
            f"u{i}",
            f"utilisation at {cap:g} Mbit/s, {a + 10}-{b} s",
            case,
            Ratio(_rate(VIDEO, a + 10, b, send=False), cap),
            "",
            None,
            slack=0.05,
        )
        for i, (a, b, cap) in enumerate(steps, 1)
    )
    return SeedTable(
        "002-staircase",
        "De Cicco et al. 2013 slides, Figure 6",
        "One call, capacity 500 → 2000 kbit/s in steps of 500 every 100 s",
        rows,
        (
            Finding(
                "the rate matches each step: utilisation slightly above 0.8 (0.78-0.95 on each)",
                lambda v: _all(v, ("u1", "u2", "u3", "u4"), lambda u: 0.78 <= u <= 0.95),
            ),
        ),
        note="The seed gives one utilisation for the whole run; each step's first 10 s are left out.",
    )


def _002_vs_tcp() -> SeedTable:
    rows = []
    for order in ("gcc-first", "tcp-first"):
        for capacity in ("1000kbps", "2000kbps", "3000kbps"):
            case = Case(f"seed002-vs-tcp-{order}", (f"capacity={capacity}",))
            where = f"{order}, {capacity}"
            rows += [
                Row(
                    f"{order}.{capacity}.gcc",
                    f"{where}: GCC received, 120-200 s",
                    case,
                    _rate(_names("G.video"), 120, 200, send=False),
                    "Mbit/s",
                ),
                Row(
                    f"{order}.{capacity}.tcp",
                    f"{where}: TCP received, 120-200 s",
                    case,
                    _rate(_names("T"), 120, 200, send=False),
                    "Mbit/s",
                ),
            ]
    return SeedTable(
        "002-vs-tcp",
        "De Cicco et al. 2013 slides, Figures 7-8",
        "One call against one CUBIC flow on 1, 2 and 3 Mbit/s; either starts at 100 s",
        tuple(rows),
        (
            Finding(
                "at 1 Mbit/s GCC is starved (under a third of TCP's rate), whichever starts first",
                lambda v: all(
                    v[f"{o}.1000kbps.gcc"] < v[f"{o}.1000kbps.tcp"] / 3 for o in ("gcc-first", "tcp-first")
                ),
            ),
            Finding(
                "at 3 Mbit/s, TCP first, GCC gets more than TCP",
                lambda v: v["tcp-first.3000kbps.gcc"] > v["tcp-first.3000kbps.tcp"],
            ),
        ),
        note="The seed's shares are in a figure, not in numbers.",
    )


def _002_two_gcc() -> SeedTable:
    rows = []
    for capacity in ("1000kbps", "2000kbps", "3000kbps"):
        case = Case("seed002-two-gcc", (f"capacity={capacity}",))
        rows += [
            Row(
                f"{capacity}.{g}",
                f"{capacity}: {g} received, 120-200 s",
                case,
                _rate(_names(f"{g}.video"), 120, 200, send=False),
                "Mbit/s",
            )
            for g in ("G1", "G2")
        ]
    return SeedTable(
        "002-two-gcc",
        "De Cicco et al. 2013 slides, Figures 9-10",
        "Two calls, the second joining at 100 s, on 1, 2 and 3 Mbit/s",
        tuple(rows),
        (
            Finding(
                "at 3 Mbit/s the two roughly share (within a factor of 3) and the first gets more",
                lambda v: v["3000kbps.G2"] < v["3000kbps.G1"] <= 3 * v["3000kbps.G2"],
            ),
        ),
        note="The seed ran five calls per capacity and found 1 and 2 Mbit/s unpredictable; one run each "
        "here, so only the 3 Mbit/s claim is judged.",
    )


# ------------------------------------------------------------------------------------------------
# Abelló Lozano 2012 (seed 003): the relay testbed, Tables 1-4 (kbit/s per direction)


def _per_direction() -> FlowStat:
    """The seed's bandwidth: each machine's incoming video over the call, averaged over the two."""
    return FlowStat(VIDEO, 0, 120, "mean_recv_rate_bps", "mean", KBPS)


def _003() -> SeedTable:
    rows = [
        Row(
            "none",
            "no condition (Table 1)",
            Case("seed003-unconstrained"),
            _per_direction(),
            "kbit/s",
            1949.7,
        )
    ]
    for loss, value in (("0.01", 1896.9), ("0.05", 1568.7), ("0.1", 1140.8), ("0.2", 314.4)):
        rows.append(
            Row(
                f"loss{loss}",
                f"{float(loss):.0%} loss (Table 2)",
                Case("seed003-loss", (f"loss={loss}",)),
                _per_direction(),
                "kbit/s",
                value,
            )
        )
    for delay, value in (("50ms", 1913.6), ("100ms", 1485.0), ("200ms", 560.8), ("500ms", 255.7)):
        rows.append(
            Row(
                f"delay{delay}",
                f"{delay} one way (Table 3)",
                Case("seed003-delay", (f"delay={delay}",)),
                _per_direction(),
                "kbit/s",
                value,
            )
        )
    for delay, value in (("50ms", 60.0), ("100ms", 64.1), ("200ms", 66.3)):
        rows.append(
            Row(
                f"lossdelay{delay}",
                f"10 % loss, {delay} one way (Table 4)",
                Case("seed003-loss-delay", (f"delay={delay}",)),
                _per_direction(),
                "kbit/s",
                value,
            )
        )
    return SeedTable(
        "003-tables-1-4",
        "Abelló Lozano 2012, Tables 1-4",
        "A two-way call through a TURN relay under loss, delay, and both",
        tuple(rows),
        (
            Finding(
                "1 % loss costs almost nothing (within 10 % of no loss)",
                lambda v: v["loss0.01"] >= 0.9 * v["none"],
            ),
            Finding(
                "20 % loss collapses the call (under a quarter of 1 %'s rate)",
                lambda v: v["loss0.2"] < 0.25 * v["loss0.01"],
            ),
            Finding(
                "the rate falls as delay grows: 500 ms one way gets under a fifth of 50 ms's",
                lambda v: v["delay500ms"] < 0.2 * v["delay50ms"],
            ),
            Finding(
                "10 % loss with delay collapses the call below 100 kbit/s",
                lambda v: _all(v, ("lossdelay50ms", "lossdelay100ms", "lossdelay200ms"), lambda x: x < 100),
            ),
        ),
        note="The seed's bandwidth is ConMon's average per machine over the whole call; here each "
        "direction's received video over 0-120 s, averaged over the two.",
    )


# ------------------------------------------------------------------------------------------------
# Guerrero Viveros 2019 (seed 000), the 802.11n home network (§6.3) and the 4G cell (§6.4). The
# seed's "GCC rate" is the call's sending rate per 60 s section; its delays are the call's
# RTT-based ones, so only the collapses (hundreds of ms and more) are compared, as rtcbench's
# one-way queuing delay.

_THREE = ((0, 60), (60, 120), (120, 180))
_FOUR = (*_THREE, (180, 240))


def _section_rates(
    prefix: str, case: Case, call: str, seed: Sequence[float], sections: Sequence[tuple[int, int]]
) -> list[Row]:
    return [
        Row(
            f"{prefix}.{call}.s{i}",
            f"{prefix}: {call}link call, section {i}",
            case,
            _rate(_names(f"{call}.video"), a, b),
            "Mbit/s",
            value,
        )
        for i, ((a, b), value) in enumerate(zip(sections, seed, strict=True), 1)
    ]


def _000_wifi_competing() -> tuple[SeedTable, ...]:
    up = {"A": (2.32, 2.39, 2.41), "B": (1.81, 1.35, 0.85)}
    down = {"A": (2.32, 2.46, 2.45), "B": (2.33, 2.44, 1.89)}
    t64 = SeedTable(
        "000-table-6.4",
        "Guerrero Viveros 2019, Table 6.4",
        "An uplink call as two, then four competing uplink calls join (Wi-Fi), at locations A and B",
        tuple(
            row
            for loc, values in up.items()
            for row in _section_rates(loc, Case("seed000-5.3.5", (f"location={loc}",)), "up", values, _THREE)
        ),
        (
            Finding(
                "near the AP (A) the call holds: at least 2.2 Mbit/s in every section",
                lambda v: _all(v, ("A.up.s1", "A.up.s2", "A.up.s3"), lambda x: x >= 2.2),
            ),
            Finding(
                "behind walls (B) the competing calls squeeze it: section 3 under 70 % of section 1",
                lambda v: v["B.up.s3"] < 0.7 * v["B.up.s1"],
            ),
        ),
    )
    t65 = SeedTable(
        "000-table-6.5",
        "Guerrero Viveros 2019, Table 6.5",
        "A downlink call as two, then four competing downlink calls join (Wi-Fi), at A and B",
        tuple(
            row
            for loc, values in down.items()
            for row in _section_rates(
                loc, Case("seed000-5.3.6", (f"location={loc}",)), "down", values, _THREE
            )
        ),
        (
            Finding(
                "near the AP (A) the call holds: at least 2.2 Mbit/s in every section",
                lambda v: _all(v, ("A.down.s1", "A.down.s2", "A.down.s3"), lambda x: x >= 2.2),
            ),
            Finding(
                "at B it holds beside two competing calls and gives way to four: section 3 under 85 % of 2",
                lambda v: v["B.down.s2"] >= 2.2 and v["B.down.s3"] < 0.85 * v["B.down.s2"],
            ),
        ),
    )
    scenarios = {
        "1": (("pc3=A", "pc4=A"), (2.31, 2.39, 2.44), (2.33, 2.44, 2.42)),
        "2": (("pc3=B", "pc4=B"), (1.80, 2.16, 2.41), (2.31, 2.16, 1.77)),
        "3": (("pc3=B", "pc4=A"), (1.6, 0.93, 0.79), (2.05, 1.97, 1.65)),
    }
    rows66 = []
    for name, (sets, up_rates, down_rates) in scenarios.items():
        case = Case("seed000-5.3.7", sets)
        rows66 += _section_rates(f"scenario{name}", case, "up", up_rates, _THREE)
        rows66 += _section_rates(f"scenario{name}", case, "down", down_rates, _THREE)
    t66 = SeedTable(
        "000-table-6.6",
        "Guerrero Viveros 2019, Table 6.6",
        "A two-way call beside 2 × 2, then 4 × 4 competing calls (Wi-Fi); scenarios 1 (A/A), 2 (B/B), "
        "3 (B/A)",
        tuple(rows66),
        (
            Finding(
                "with both laptops near the AP both directions hold at least 2.2 Mbit/s in every section",
                lambda v: _all(
                    v, (f"scenario1.{d}.s{i}" for d in ("up", "down") for i in (1, 2, 3)), lambda x: x >= 2.2
                ),
            ),
            Finding(
                "with the call's laptop behind walls and the competitors near (3), the uplink falls below "
                "half of its first section (the near-far problem)",
                lambda v: v["scenario3.up.s3"] < 0.5 * v["scenario3.up.s1"],
            ),
        ),
    )
    return t64, t65, t66


def _000_wifi_tcp() -> SeedTable:
    scenarios = {
        "1": (("pc3=A", "pc4=A"), (2.29, 2.43, 2.50, 2.34), (2.32, 0.24, 0.04, 0.41), (231.63, 445.44)),
        "2": (("pc3=B", "pc4=B"), (1.76, 1.34, 1.34, 1.89), (2.34, 0.21, 0.04, 0.47), (381.9, 622.23)),
        "3": (("pc3=B", "pc4=A"), (1.83, 0.47, 0.19, 0.42), (2.33, 0.27, 0.04, 0.59), (265.98, 479.23)),
    }
    rows = []
    for name, (sets, up, down, delays) in scenarios.items():
        case = Case("seed000-5.3.8", (*sets, *_no_tsq(4)))
        rows += _section_rates(f"scenario{name}", case, "up", up, _FOUR)
        rows += _section_rates(f"scenario{name}", case, "down", down, _FOUR)
        for i, ((a, b), value) in enumerate(zip(_FOUR[1:3], delays, strict=True), 2):
            rows.append(
                Row(
                    f"scenario{name}.down.q{i}",
                    f"scenario{name}: downlink call's mean delay, section {i}",
                    case,
                    FlowStat(_names("down.video"), a, b, "qdelay_mean_ms", "max", 1.0),
                    "ms",
                    value,
                    slack=10.0,
                )
            )
    return SeedTable(
        "000-table-6.7",
        "Guerrero Viveros 2019, Table 6.7",
        "A two-way call beside TCP downloads to both laptops (60-180 s) and uploads from them (120-180 s)",
        tuple(rows),
        (
            Finding(
                "TCP downloads through the AP collapse the downlink call: under 20 % of section 1's rate",
                lambda v: all(
                    v[f"scenario{s}.down.s2"] < 0.2 * v[f"scenario{s}.down.s1"] for s in ("1", "2", "3")
                ),
            ),
            Finding(
                "with both laptops near the AP the uplink call holds, uploads on or off: at least 2.2 Mbit/s",
                lambda v: _all(v, ("scenario1.up.s2", "scenario1.up.s3"), lambda x: x >= 2.2),
            ),
            Finding(
                "with the call's laptop behind walls and the TCP near the AP (3), the uplink collapses too",
                lambda v: v["scenario3.up.s3"] < 0.2 * v["scenario3.up.s1"],
            ),
            Finding(
                "the downlink call waits hundreds of ms in the AP's queue (mean over 200 ms in sections 2-3)",
                lambda v: _all(
                    v, (f"scenario{s}.down.q{i}" for s in ("1", "2", "3") for i in (2, 3)), lambda x: x > 200
                ),
            ),
        ),
        note="TCP Small Queues off in every column (the scenario's default is on): emulation and browser "
        "mode cannot give them. Delay: the seed's RTT-based mean against the one-way queuing delay.",
    )


def _000_4g() -> tuple[SeedTable, ...]:
    exp1 = {"near": ((2.32, 2.45, 2.45), (2.34, 2.47, 2.47)), "far": ((2.3, 2.45, 2.45), (2.33, 2.46, 2.41))}
    rows68 = []
    for loc, (up, down) in exp1.items():
        case = Case("seed000-5.4.6", (f"location={loc}",))
        rows68 += _section_rates(loc, case, "up", up, _THREE) + _section_rates(
            loc, case, "down", down, _THREE
        )
    t68 = SeedTable(
        "000-table-6.8",
        "Guerrero Viveros 2019, Table 6.8",
        "A two-way call beside two, then four competing two-way calls in a 4G cell, near and far",
        tuple(rows68),
        (
            Finding(
                "the cell has room: the call holds at least 2.2 Mbit/s both ways in every section and place",
                lambda v: _all(v, (r.key for r in rows68), lambda x: x >= 2.2),
            ),
        ),
    )
    exp2 = {
        "near": ((2.33, 2.45, 0.21, 0.74), (2.33, 2.48, 0.77, 1.14), 1944.9, (6.75, 24.58)),
        "far": ((2.32, 2.44, 0.21, 0.95), (2.31, 2.47, 0.48, 0.62), 2028.4, (6.81, 10.88)),
    }
    rows69 = []
    for loc, (up4, down4, delay, (tcp_up, tcp_down)) in exp2.items():
        case = Case("seed000-5.4.7", (f"location={loc}", *_no_tsq(4)))
        rows69 += _section_rates(loc, case, "up", up4, _FOUR)
        rows69 += _section_rates(loc, case, "down", down4, _FOUR)
        rows69 += [
            Row(
                f"{loc}.down.q3",
                f"{loc}: downlink call's mean delay, section 3",
                case,
                FlowStat(_names("down.video"), 120, 180, "qdelay_mean_ms", "max", 1.0),
                "ms",
                delay,
                slack=10.0,
            ),
            Row(
                f"{loc}.tcp-up2.s2",
                f"{loc}: TCP upload on the other UE, section 2",
                case,
                _rate(_names("tcp-up2"), 60, 120, send=False),
                "Mbit/s",
                tcp_up,
            ),
            Row(
                f"{loc}.tcp-down2.s2",
                f"{loc}: TCP download to the other UE, section 2",
                case,
                _rate(_names("tcp-down2"), 60, 120, send=False),
                "Mbit/s",
                tcp_down,
            ),
        ]
    locs = tuple(exp2)
    t69 = SeedTable(
        "000-table-6.9",
        "Guerrero Viveros 2019, Table 6.9",
        "A two-way call beside TCP on the other UE (60-180 s) and on its own (120-180 s), 4G, near and far",
        tuple(rows69),
        (
            Finding(
                "TCP on the other UE leaves the call alone: at least 2.2 Mbit/s both ways in section 2",
                lambda v: _all(
                    v, (f"{loc}.{d}.s2" for loc in locs for d in ("up", "down")), lambda x: x >= 2.2
                ),
            ),
            Finding(
                "TCP on the call's own UE collapses it: under 0.8 Mbit/s both ways in section 3",
                lambda v: _all(
                    v, (f"{loc}.{d}.s3" for loc in locs for d in ("up", "down")), lambda x: x < 0.8
                ),
            ),
            Finding(
                "behind seconds of queue: the downlink's mean delay over 1 s in section 3",
                lambda v: _all(v, (f"{loc}.down.q3" for loc in locs), lambda x: x > 1000),
            ),
        ),
        note="TCP Small Queues off in every column. Delay: the seed's RTT-based mean against the one-way "
        "queuing delay.",
    )
    return t68, t69


# ------------------------------------------------------------------------------------------------
# Chen et al. 2015 (seed 004): the retry-limit adaptation, §4.3-§4.6 (figures, no totals)


def _004() -> SeedTable:
    rows = []
    for fec in ("false", "true"):
        for rex in (0, 3, 5, 7):
            case = Case("seed004-testbed", (f"rex={rex}", f"fec={fec}"))
            where = f"R_ex {rex}, FEC {'on' if fec == 'true' else 'off'}"
            key = f"fec{fec}.rex{rex}"
            rows += [
                Row(
                    f"{key}.drops",
                    f"{where}: MAC drops at STA_A",
                    case,
                    LinkTotal("wlan:STA_A", "mac_drops"),
                    "",
                    slack=20.0,
                ),
                Row(
                    f"{key}.freezes",
                    f"{where}: video freezes",
                    case,
                    FlowStat(_names("call.video"), 0, 400, "freezes", scale=1.0),
                    "",
                    slack=10.0,
                ),
                Row(
                    f"{key}.goodput",
                    f"{where}: video goodput",
                    case,
                    FlowStat(_names("call.video"), 0, 400, "mean_goodput_bps", scale=KBPS),
                    "kbit/s",
                ),
                Row(
                    f"{key}.cbr",
                    f"{where}: the competing stations' CBR received",
                    case,
                    FlowStat(Flows(kind="cbr"), 0, 400, "mean_recv_rate_bps", scale=KBPS),
                    "kbit/s",
                ),
            ]
    off = [f"fecfalse.rex{rex}" for rex in (0, 3, 5, 7)]
    return SeedTable(
        "004-figures-12-14",
        "Chen et al. 2015, Figures 4 and 12-14",
        "A GoogCC call through a BSS with a hidden terminal; retry-limit extension R_ex 0-7, FEC off and on",
        tuple(rows),
        (
            Finding(
                "more attempts for channel losses mean fewer MAC drops: fewer at each larger R_ex (FEC off)",
                lambda v: all(v[f"{a}.drops"] > v[f"{b}.drops"] for a, b in itertools.pairwise(off)),
            ),
            Finding(
                "fewer MAC drops mean fewer freezes: R_ex 7 freezes under half as often as R_ex 0 (FEC off)",
                lambda v: v["fecfalse.rex7.freezes"] < 0.5 * v["fecfalse.rex0.freezes"],
            ),
            Finding(
                "FEC cuts freezes at R_ex 0 too (Fig. 4)",
                lambda v: v["fectrue.rex0.freezes"] < v["fecfalse.rex0.freezes"],
            ),
            Finding(
                "the competing stations are not hurt: their CBR within 5 % across R_ex (FEC off)",
                lambda v: max(v[f"{k}.cbr"] for k in off) <= 1.05 * min(v[f"{k}.cbr"] for k in off),
            ),
        ),
        note="The paper gives these as figures, without totals; freezes as getStats() counts them.",
    )


_QUEUES = ("100ms", "500ms", "1s", "10s")


def _003_topologies() -> SeedTable:
    rows = []
    for queue in _QUEUES:
        case = Case("seed003-capacity-queue", ("capacity=1Mbps", f"queue={queue}"))
        rows += [
            Row(
                f"1Mbps.{queue}.u",
                f"1 Mbit/s, {queue} queue: utilisation per direction, 20-120 s",
                case,
                Ratio(FlowStat(VIDEO, 20, 120, "mean_recv_rate_bps", "mean", 1.0), 1e6),
                "",
                slack=0.05,
            ),
            Row(
                f"1Mbps.{queue}.p95",
                f"1 Mbit/s, {queue} queue: the worse direction's queuing delay p95",
                case,
                FlowStat(VIDEO, 20, 120, "qdelay_p95_ms", "max", 1.0),
                "ms",
                slack=10.0,
            ),
        ]
    for calls in (2, 3):
        for capacity in ("100Mbps", "20Mbps", "10Mbps"):
            case = Case(f"seed003-parallel-{calls}", (f"capacity={capacity}",))
            rows.append(
                Row(
                    f"parallel{calls}.{capacity}",
                    f"{calls} parallel calls at {capacity}: each direction's mean rate",
                    case,
                    FlowStat(VIDEO, 0, 120, "mean_recv_rate_bps", "mean", KBPS),
                    "kbit/s",
                )
            )
    return SeedTable(
        "003-6.1.6-6.3",
        "Abelló Lozano 2012, §6.1.6 (Figures 21-22) and §6.3",
        "The relayed call at 1 Mbit/s with four queue lengths; two and three parallel calls via the relay",
        tuple(rows),
        (
            Finding("the call adapts to the 1 Mbit/s limit: at least 70 % of it per direction, every queue",
                    lambda v: _all(v, (f"1Mbps.{q}.u" for q in _QUEUES), lambda u: u >= 0.7)),
            Finding("a 100 ms queue keeps the delay within 0-130 ms",
                    lambda v: v["1Mbps.100ms.p95"] <= 130),
        ),
        note="The seed shows the 1 Mbit/s runs as figures and gives no results for the parallel calls; "
        "those rows compare Chromium with the simulator only.",
    )  # fmt: skip


TABLES: tuple[SeedTable, ...] = (
    _000_5_2_5(),
    _000_5_2_6(),
    _000_5_2_7(),
    _000_5_2_8(),
    *_000_wifi_competing(),
    _000_wifi_tcp(),
    *_000_4g(),
    _001(),
    _002_grid(),
    _002_step_up(),
    _002_staircase(),
    _002_vs_tcp(),
    _002_two_gcc(),
    _003(),
    _003_topologies(),
    _004(),
)
"""The reproduction set, in the order docs/reproduction.md shows it."""


def table(table_id: str) -> SeedTable:
    """The seed table of that id; `KeyError` naming the ids there are otherwise."""
    for t in TABLES:
        if t.id == table_id:
            return t
    raise KeyError(f"no seed table {table_id!r}; there are {', '.join(t.id for t in TABLES)}")


def cases(tables: Iterable[SeedTable] = TABLES) -> list[Case]:
    """Every scenario variant the tables need, each once, in order of first use."""
    return list(dict.fromkeys(row.case for t in tables for row in t.rows))
