"""BBR v1 held to the kernel's (docs/tcp.md, "BBR"; docs/findings/2026-11-29-bbr-kernel.md): one
BBR flow alone on a 10 Mbit/s, 40 ms, 2-BDP drop-tail bottleneck, simulated and emulated (the
kernel's `tcp_bbr`), with the flow's throughput and the queueing delay p50/p95 within 15 % of
each other. The emulated case is real time (20 s) and needs root, as the other emulated runs
(tests/test_emulation.py); the simulated one is fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest
from tests.realtime import assert_valid

import rtcbench
from rtcbench import testbed
from rtcbench.identity import EMULATE
from rtcbench.tables import Tables

MISSING = testbed.missing()
needs_root = pytest.mark.skipif(MISSING is not None, reason=f"builds network namespaces: {MISSING}")

CAPACITY_BPS = 10e6
ONE_WAY_US = 20_000

ALONE = """
id = "bbr-alone"
duration = "{duration}"

[[links]]
name = "forward"
from = "A"
to = "B"
capacity = "10Mbps"
delay = "20ms"
queue = {{ kind = "droptail", size = "80ms" }}

[[links]]
name = "backward"
from = "B"
to = "A"
delay = "20ms"

[[tcp]]
name = "bbr"
from = "A"
to = "B"
cc = "bbr"
"""
"""experiments/bbr-kernel/alone.toml, with its duration a parameter."""


@dataclass(frozen=True)
class Measured:
    """What `measure` reads from a run's packet table."""

    rates_mbps: dict[str, float]
    """Each TCP flow's throughput, IP bytes received."""
    queue_p50_ms: float
    queue_p95_ms: float
    drops: int


def measure(tables: Tables, skip_s: float) -> Measured:
    """Per TCP flow, its throughput in Mbit/s (IP bytes received after `skip_s`); over all of
    them, the queueing delay p50 and p95 in ms (one-way delay less the 20 ms propagation and the
    packet's serialisation at the `forward` link's capacity) and the packets dropped."""
    end_us = float(tables.packets["t_us"].max())  # type: ignore[arg-type]
    flows = {f["name"]: f["id"] for f in tables.meta["flows"] if f.get("kind") == "tcp"}
    tcp = {name: i for name, i in flows.items() if not name.endswith(".ack")}
    packets = tables.packets.filter(
        pl.col("flow").is_in(list(tcp.values())) & (pl.col("t_us") >= skip_s * 1e6)
    )
    received = packets.filter(pl.col("event") == "received")
    span_s = (end_us - skip_s * 1e6) / 1e6
    rates = {
        name: float(received.filter(pl.col("flow") == i)["size"].sum()) * 8 / span_s / 1e6
        for name, i in tcp.items()
    }
    capacity = tables.links.filter(pl.col("link") == "forward")["capacity_bps"].drop_nulls().max()
    serialisation_us = received["size"] * 8 * 1e6 / float(capacity)  # type: ignore[arg-type]
    queue_ms = (received["t_us"] - received["sent_us"] - ONE_WAY_US - serialisation_us) / 1e3
    return Measured(
        rates_mbps=rates,
        queue_p50_ms=float(queue_ms.quantile(0.5) or 0.0),
        queue_p95_ms=float(queue_ms.quantile(0.95) or 0.0),
        drops=packets.filter(pl.col("event") == "dropped").height,
    )


def _scenario(tmp_path: Path, duration: str) -> Path:
    path = tmp_path / "bbr-alone.toml"
    path.write_text(ALONE.format(duration=duration))
    return path


def test_simulated_bbr_alone_fills_the_link_with_a_small_queue(tmp_path: Path) -> None:
    """draft-cardwell-iccrg-bbr-congestion-control-00 §3.2's operating point: the link's rate
    with a queue of a few ms (the probing phase's quarter BDP), nothing dropped after startup."""
    (sim,) = rtcbench.run(_scenario(tmp_path, "20s"), "fixed", 1, tmp_path / "sim", figure=False)
    m = measure(sim.tables, 5.0)
    assert m.rates_mbps["bbr"] * 1e6 >= 0.95 * CAPACITY_BPS, m
    assert 1.0 <= m.queue_p50_ms <= 15.0 and m.queue_p95_ms <= 30.0, m
    assert m.drops == 0, m


KERNEL_RUNS = 3
"""Kernel runs the model is held to, by their median: one run's queueing delay p95 is one draw of
the kernel's own spread (16.09-16.73 ms over 12 runs on the development machine, idle or with one
or two cores kept busy; 18.64 ms in one CI run whose p50 was 7.68 ms, against the model's 16.00),
docs/findings/2026-11-29-bbr-kernel.md, "Held in the tests"."""


@needs_root
def test_bbr_alone_matches_the_kernels_within_15_percent(tmp_path: Path) -> None:
    """The same scenario against Linux's `tcp_bbr`: throughput and queueing delay p50 and p95
    within 15 % of the median of `KERNEL_RUNS` kernel runs (measured over 5-20 s: 9.85 against
    9.85 Mbit/s, p50 7.6 against 6.6-7.8 ms, p95 16.0 against 16.1-16.7 ms,
    docs/findings/2026-11-29-bbr-kernel.md)."""
    scenario = _scenario(tmp_path, "20s")
    (sim,) = rtcbench.run(scenario, "fixed", 1, tmp_path / "sim", figure=False)
    s, kernel = measure(sim.tables, 5.0), []
    for i in range(KERNEL_RUNS):
        (emu,) = rtcbench.run(scenario, "fixed", 1, tmp_path / f"emu-{i}", figure=False, mode=EMULATE)
        assert_valid(emu)
        kernel.append(measure(emu.tables, 5.0))
        # The kernel ran BBR: the source read the congestion control back from its socket.
        assert emu.path is not None
        (log,) = emu.path.rglob("source-h0.jsonl")
        assert '"event":"connected"' in log.read_text() and '"cc":"bbr"' in log.read_text()

    def median(values: list[float]) -> float:
        return sorted(values)[len(values) // 2]

    p50, p95 = median([k.queue_p50_ms for k in kernel]), median([k.queue_p95_ms for k in kernel])
    rate = median([k.rates_mbps["bbr"] for k in kernel])
    assert p50 == pytest.approx(s.queue_p50_ms, rel=0.15), (s, kernel)
    assert p95 == pytest.approx(s.queue_p95_ms, rel=0.15), (s, kernel)
    assert rate == pytest.approx(s.rates_mbps["bbr"], rel=0.15), (s, kernel)
