"""The seeds' wired experiments against what the seeds measured, as bands: `gcc` (the seeds'
subject) in the default tier, `gcc-draft` (the GCC of their time) in the slow tier, seed 1.

Where the simulator does not reproduce a seed's finding, the test is a strict expected failure
with the numbers, so the gap stays visible (and fails the day it closes). Sources
(docs/references.md): seed 000 = Guerrero Viveros 2019 §6.2, seed 002 = De Cicco et al. 2013 slides,
seed 003 = Abelló Lozano 2012 §6.1.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from bands import controllers as _controllers
from rtcbench import analysis
from rtcbench.runner import RunResult

SEC = 1_000_000


def controllers(known_failures: dict[str, str] | None = None) -> list[Any]:
    """gcc by default; gcc-draft, the GCC of the seeds' time, in the slow tier."""
    return _controllers(known_failures, slow=("gcc-draft",))


Simulate = Callable[..., tuple[RunResult, ...]]


def _rates(
    r: RunResult, start_s: float, end_s: float, kinds: tuple[str, ...] = ("video",)
) -> dict[str, float]:
    """Mean receive rate (bit/s) of every flow of `kinds` over [start, end)."""
    out = {}
    for f in r.summary["meta"]["flows"]:
        if f["kind"] in kinds:
            m = analysis.flow_metrics(
                r.tables, r.timeseries, f["id"], round(start_s * SEC), round(end_s * SEC)
            )
            out[f["name"]] = float(m["mean_recv_rate_bps"])
    return out


def _tcp_rate(r: RunResult, start_s: float, end_s: float) -> float:
    p = r.tables.packets
    (tcp,) = [f["id"] for f in r.summary["meta"]["flows"] if f["kind"] == "tcp"]
    rx = p.filter((p["flow"] == tcp) & (p["event"] == "received"))
    rx = rx.filter(rx["t_us"].is_between(start_s * SEC, end_s * SEC, closed="left"))
    return float(rx["size"].sum()) * 8 / (end_s - start_s)


@pytest.mark.parametrize("controller", controllers())
def test_000_5_2_5_an_unconstrained_call_reaches_the_encoder_cap(simulate: Simulate, controller: str) -> None:
    """Guerrero Viveros 2019 Table 6.x (experiment 1): GCC reached 2.46 Mbit/s, the VP8 cap of
    2.5 Mbit/s, on 100 Mbit/s Ethernet. Band: at least 2.2 Mbit/s over the last 60 s."""
    (r,) = simulate("seed000-5.2.5", controller, 1)
    (rate,) = _rates(r, 60, 120).values()
    assert rate >= 2.2e6, rate


@pytest.mark.parametrize(
    "controller",
    controllers(
        {
            "gcc-draft": "the calls that join at 60 and 240 s climb at GCC-02's 5 % per report: "
            "0.55/0.76/2.32 Mbit/s over 300-420 s (seed 1)",
        }
    ),
)
def test_000_5_2_7_three_calls_share_the_bottleneck(simulate: Simulate, controller: str) -> None:
    """Guerrero Viveros 2019 §6.2.3: three GCC calls joining at 0, 60 and 240 s on 4 Mbit/s ended at
    1.05/1.17/1.24 Mbit/s. Band: in the last 120 s every pair within RFC 8868's [1/3, 3] and the
    three use at least 75 % of the link."""
    (r,) = simulate("seed000-5.2.7", controller, 1)
    rates = list(_rates(r, 300, 420).values())
    assert max(rates) / min(rates) <= 3.0 and sum(rates) >= 0.75 * 4e6, rates


def _queuing_delay_ms(r: RunResult, start_s: float, end_s: float) -> float:
    """Mean one-way delay of the call's video over [start, end) above the run's minimum (ms)."""
    p = r.tables.packets
    (video,) = [f["id"] for f in r.summary["meta"]["flows"] if f["kind"] == "video"]
    rx = p.filter((p["flow"] == video) & (p["event"] == "received"))
    owd = rx["t_us"] - rx["sent_us"]
    window = rx["t_us"].is_between(start_s * SEC, end_s * SEC, closed="left")
    return float((owd.filter(window) - owd.min()).mean()) / 1000


@pytest.mark.parametrize(
    "controller",
    _controllers(
        {
            "gcc": "today's GoogCC outgrows a TCP flow that holds two packets in the queue: 1.76 "
            "against 0.19 Mbit/s with a 175 ms mean queue at 300 ms (seed 1; docs/controllers/gcc.md). "
            "Chromium cannot be measured with TCP Small Queues (the emulated queue is in the relay, "
            "not the sending host); with them off Chromium 156 is starved, 0.06-0.08 against CUBIC's "
            "1.86 Mbit/s, as the model is, 0.18-0.20 (Table 6.3, docs/reproduction.md)",
        },
        default=("gcc", "gcc-draft"),
        slow=(),
    ),
)
def test_000_5_2_8_gcc_leads_a_cubic_flow_within_three_to_one_without_loss(
    simulate: Simulate, controller: str
) -> None:
    """Guerrero Viveros 2019 §6.2.4: against one CUBIC flow GCC kept 1.25 Mbit/s and TCP got 0.66
    (300 ms queue; 1.23/0.68 at 1000 ms), no loss, mean queuing delay about 20 ms over a 15 ms
    standing queue. The TCP flow runs with TCP Small Queues, as on the seed's testbed
    (docs/scenarios.md). Band, over 60-240 s in both queue variants: GCC ahead of TCP and within
    RFC 8868's [1/3, 3], no packet dropped, and the call's mean queuing delay under 60 ms.
    gcc-draft, the GCC of the seed's time: 1.35/0.59 Mbit/s and 35 ms."""
    for r in simulate("seed000-5.2.8", controller, 1):
        (gcc,) = _rates(r, 60, 240).values()
        tcp = _tcp_rate(r, 60, 240)
        dropped = r.tables.packets.filter(r.tables.packets["event"] == "dropped").height
        qd = _queuing_delay_ms(r, 60, 240)
        where = f"{r.summary['variant']}: {gcc:.0f} vs {tcp:.0f} bit/s, {dropped} drops, {qd:.0f} ms"
        assert tcp < gcc <= 3 * tcp and dropped == 0 and qd < 60, where


@pytest.mark.parametrize(
    "controller",
    _controllers(
        {"gcc-draft": "when TCP starts first GCC-02 is not starved: 0.79 against 0.16 Mbit/s (seed 1)"},
        default=("gcc", "gcc-draft"),
        slow=(),
    ),
)
def test_002_gcc_is_starved_by_tcp_at_one_megabit(simulate: Simulate, controller: str) -> None:
    """De Cicco et al. 2013 slides, conclusion 2: "a video flow controlled by the GCC gets starved
    when sharing the bottleneck with a TCP flow if the bottleneck capacity is less or equal to
    1000 kbps". The buffer (60 KB, 480 ms) is on the receiving host, so TCP fills it. Band, both
    start orders, 120-200 s: the video gets less than a third of TCP's rate. goog_cc: 0.06 against
    0.88."""
    for sid in ("seed002-vs-tcp-gcc-first", "seed002-vs-tcp-tcp-first"):
        (r,) = simulate(sid, controller, 1, ("capacity=1000kbps",))
        (gcc,) = _rates(r, 120, 200).values()
        tcp = _tcp_rate(r, 120, 200)
        assert gcc < tcp / 3, f"{sid}: {gcc:.0f} vs {tcp:.0f}"


def _mean_rates_at_three_megabit(simulate: Simulate, controller: str) -> tuple[float, float, str]:
    """The call's and TCP's mean rates over 120-200 s of `seed002-vs-tcp-tcp-first` at 3 Mbit/s,
    over seeds 1-5, and the runs' rates for a message."""
    gcc_rates, tcp_rates = [], []
    for seed in range(1, 6):
        (r,) = simulate("seed002-vs-tcp-tcp-first", controller, seed, ("capacity=3000kbps",))
        gcc_rates.extend(_rates(r, 120, 200).values())
        tcp_rates.append(_tcp_rate(r, 120, 200))
    gcc, tcp = sum(gcc_rates) / len(gcc_rates), sum(tcp_rates) / len(tcp_rates)
    return gcc, tcp, f"{gcc:.0f} vs {tcp:.0f} ({gcc_rates} vs {tcp_rates})"


def test_002_at_three_megabit_gcc_is_starved_as_chromium_156_is(simulate: Simulate) -> None:
    """The seed's "GCC gets more than TCP at 3 Mbit/s" (below, which gcc-draft meets) does not hold
    for today's GoogCC (it was a strict expected failure for `gcc`: 0.29 against 2.65 Mbit/s;
    its threshold stays at 6-13 ms, docs/controllers/gcc.md):
    Chromium 156 through rtcbench's network got 0.27 Mbit/s against TCP's (kernel CUBIC) 2.64
    with TCP first, and 0.24 against 2.71 with the call first, received over 100-200 s
    (docs/reproduction.md).
    Band, as the seed's test: 120-200 s, mean over seeds 1-5: the call under a third of TCP
    (goog_cc: 0.29 against 2.65)."""
    gcc, tcp, rates = _mean_rates_at_three_megabit(simulate, "gcc")
    assert gcc < tcp / 3, rates


# Only the GCC of the seed's time: today's GoogCC is held to Chromium 156's behaviour above.
@pytest.mark.parametrize("controller", _controllers(default=("gcc-draft",), slow=()))
def test_002_at_three_megabit_gcc_gets_more_than_tcp(simulate: Simulate, controller: str) -> None:
    """De Cicco et al. 2013 slides (b = 3000 kbps, TCP started first [ASSUMED: the deck shows it
    after the 1000 kbps case with that order]): "the GCC sending bitrate is driven only by the
    sender-side controller" and GCC gets "a larger bandwidth than the TCP flow". Band, 120-200 s,
    mean over seeds 1-5: video above TCP. gcc-draft: 1.51 against 1.44 Mbit/s. Over seeds, because
    one run turns on where TCP's losses fall: in seed 1 a burst at 165 s makes gcc-draft back off
    from 1.84 to 1.20 Mbit/s (1.17 against 1.78 over the window; 1.52 against 1.43 before losses
    were repaired, when that burst fell elsewhere)."""
    gcc, tcp, rates = _mean_rates_at_three_megabit(simulate, controller)
    assert gcc > tcp, rates


@pytest.mark.parametrize("controller", controllers())
def test_002_grid_utilisation_is_slightly_above_eighty_percent(simulate: Simulate, controller: str) -> None:
    """De Cicco et al. 2013 slides: over the 4 × 4 grid of capacity and RTT with a 60 KB buffer,
    GCC's utilisation was "slightly above 0.8" everywhere. Band: 0.7-0.95 in every cell (from
    30 s)."""
    for r in simulate("seed002-grid", controller, 1):
        (f,) = [f for f in r.summary["meta"]["flows"] if f["kind"] == "video"]
        m = analysis.flow_metrics(r.tables, r.timeseries, f["id"], 30 * SEC, 120 * SEC)
        util = m["mean_recv_rate_bps"] / m["mean_capacity_bps"]
        assert 0.7 <= util <= 0.95, f"{r.summary['variant']}: {util:.2f}"


@pytest.mark.parametrize("controller", controllers())
def test_002_step_up_reaches_the_two_megabit_cap(simulate: Simulate, controller: str) -> None:
    """De Cicco et al. 2013 slides: after the 400 → 3000 kbit/s step at 60 s "GCC reaches a
    steady-state value of around 2 Mbps after a transient time of roughly 30 s". Band: above
    1.8 Mbit/s (1 s average) within 40 s of the step (goog_cc: 23 s)."""
    (r,) = simulate("seed002-step-up", controller, 1)
    (f,) = [f for f in r.summary["meta"]["flows"] if f["kind"] == "video"]
    t = analysis.time_to_reach(r.timeseries, f["id"], 60 * SEC, 1.8e6, column="recv_rate_bps", smooth_us=SEC)
    assert t is not None and t <= 40, t


TWO_GCC_SEEDS = range(1, 9)
"""Seeds of the two-flow test: which flow leads is chaotic in the model (see the test)."""


@pytest.mark.parametrize(
    "controller",
    controllers(
        {"gcc-draft": "the second flow leads in all 8 seeds: 1.61 against the first's 1.04 Mbit/s on average"}
    ),
)
def test_002_the_first_of_two_gcc_flows_stays_ahead(simulate: Simulate, controller: str) -> None:
    """De Cicco et al. 2013 slides: at 3 Mbit/s "the two flows can roughly share the bandwidth
    fairly, and the first flow always gets a higher share" (at 1 and 2 Mbit/s the seed found the
    split unpredictable, so nothing is asserted there). Band: over 120-200 s the two are within
    [1/3, 3] in every run, and the first flow is ahead on average over seeds 1-8.

    In the model which flow leads a given run is chaotic: goog_cc's first flow led in 5 of 8 seeds
    (means 1.35 against 1.20 Mbit/s), and in 4 of 8 with FEC off; adding 4 bytes to every video
    packet (the VP8 descriptor) flipped seed 1, which this test used alone before. "Always" is not
    reproduced; "on average" is."""
    first, second = [], []
    for seed in TWO_GCC_SEEDS:
        (r,) = simulate("seed002-two-gcc", controller, seed, ("capacity=3000kbps",))
        a, b = _rates(r, 120, 200).values()
        assert b / 3 <= a <= 3 * b, f"seed {seed}: {a:.0f} vs {b:.0f}"
        first.append(a)
        second.append(b)
    assert sum(second) < sum(first), f"{sum(first) / 8:.0f} vs {sum(second) / 8:.0f}"


def _video_flows(r: RunResult) -> list[dict[str, Any]]:
    return [f for f in r.summary["flows"] if f["kind"] == "video"]


def _rebuilt_share(r: RunResult) -> float:
    """Media packets the receivers rebuilt from FEC / media packets dropped."""
    p = r.tables.packets
    dropped = p.filter((p["event"] == "dropped") & (p["kind"] == "media")).height
    return p.filter(p["event"] == "recovered").height / dropped


def test_003_fec_trades_goodput_for_fewer_freezes(simulate: Simulate) -> None:
    """Abelló Lozano 2012 §6.1.3: Chrome's FEC (on by default) lowered the loss the seed measured.
    With libwebrtc's hybrid NACK/FEC that needs an RTT of 20 ms or more: here §6.1.5's 10 % loss
    with 100-400 ms RTT (seed003-loss-delay), goog_cc, FEC on (the default) against off. Bands,
    per variant: FEC rebuilds 60-95 % of the lost media packets (90-94 %, seed 1), costs 50-75 %
    of the media bytes (60-68 %: the loss's protection factor, docs/media.md), so the goodput
    falls below 85 % of FEC off's (64-66 %), and the freezes drop to at most 70 % of FEC off's
    (5/134, 22/349, 107/279 at 50/100/200 ms): a packet FEC rebuilds needs no round trip.
    The overhead band was 25-50 % (31-45 % measured) until model revision 11: the calls then ran
    at 0.2-0.8 Mbit/s, held down by a window pushback that counted packets whose feedback was lost
    as in flight for a minute; they now run at 1.3-1.5 Mbit/s, where libwebrtc's protection factor,
    which grows with the bytes per frame, is higher. So the band follows the flow's rate: 50-75 %
    at 1 Mbit/s or more, 25-50 % below. Since model revision 14 (GoogCC's loss-based estimator
    with Chromium 156's defaults) one flow of seed 1 runs below 1 Mbit/s: A at 50 ms one way,
    0.54 Mbit/s with 42.5 % of FEC (0.96 with FEC off; the mean of seeds 1-3 is 1.12, Chromium
    1.04). Chromium 156 on the same network sends 0.6-1.4 Mbit/s per direction
    (docs/reproduction.md); its FEC, inside RED, cannot be measured."""
    on = simulate("seed003-loss-delay", "gcc", 1)
    off = simulate("seed003-loss-delay", "gcc", 1, ("calls.A.fec=false", "calls.B.fec=false"))
    for a, b in zip(on, off, strict=True):
        variant = a.summary["variant"]
        fa, fb = _video_flows(a), _video_flows(b)
        assert 0.6 <= _rebuilt_share(a) <= 0.95, (variant, _rebuilt_share(a))
        assert _rebuilt_share(b) == 0.0
        for f in fa:
            # The protection factor grows with the bytes per frame (docstring).
            low, high = (0.5, 0.75) if f["mean_send_rate_bps"] >= 1e6 else (0.25, 0.5)
            assert low <= f["fec_overhead"] <= high, (variant, f["name"], f["mean_send_rate_bps"])
        assert all(f["fec_overhead"] == 0.0 for f in fb), variant
        goodput = [sum(f["mean_goodput_bps"] for f in fs) for fs in (fa, fb)]
        assert goodput[0] < 0.85 * goodput[1], (variant, goodput)
        freezes = [sum(f["freezes"] for f in fs) for fs in (fa, fb)]
        assert freezes[0] <= 0.7 * freezes[1], (variant, freezes)


def test_003_at_the_relays_10_ms_rtt_fec_protects_keyframes_only(simulate: Simulate) -> None:
    """§6.1.3's relay testbed had a 9.6 ms RTT (Table 1): below libwebrtc's 20 ms, its hybrid
    method leaves delta frames to NACK and protects keyframes only, so FEC costs under 2 % of the
    media bytes and rebuilds under 1 % of the lost packets (none, seed 1). The seed's "FEC lowered
    the measured loss" is not reproduced here (docs/media.md, "Seed 003 and FEC")."""
    for r in simulate("seed003-loss", "gcc", 1):
        assert all(f["fec_overhead"] < 0.02 for f in _video_flows(r)), r.summary["variant"]
        assert _rebuilt_share(r) < 0.01, r.summary["variant"]


@pytest.mark.parametrize("controller", controllers())
def test_003_more_random_loss_means_a_lower_rate(simulate: Simulate, controller: str) -> None:
    """Abelló Lozano 2012 §6.1.3: the rate fell with the loss rate (1.90/1.57/1.14/0.31 Mbit/s at
    1/5/10/20 %). Band: strictly decreasing, and below half of the 1 % rate at 20 %. (goog_cc stays
    below the seed's absolute numbers: 1.3-1.7/1.0/0.7/0.09 Mbit/s; the seed's Chrome also sent FEC
    and retransmissions; the simulator's FEC acts little at the relay's 10 ms RTT, docs/media.md.)"""
    rates = [sum(_rates(r, 20, 120).values()) for r in simulate("seed003-loss", controller, 1)]
    assert all(a > b for a, b in itertools.pairwise(rates)), rates
    assert rates[-1] < rates[0] / 2, rates
