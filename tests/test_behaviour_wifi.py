"""The Wi-Fi cases as bands: RFC 8869 §3's test cases, the testbed of Chen et al. 2015 (seed 004)
with its retry-limit adaptation, and the Wi-Fi experiments of Guerrero Viveros 2019 (seed 000)
§5.3 against its Tables 6.4-6.7. `gcc` (the seeds' subject), seed 1 unless said.

Where the simulator does not reproduce what a seed measured or what an RFC expects, the test is a
strict expected failure with the numbers, so the gap stays visible and fails the day it closes.
docs/scenarios.md explains every case's decisions and docs/wifi.md the model.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from flow_windows import metric
from rtcbench import sweep
from rtcbench.runner import RunResult
from rtcbench.scenarios import resolve

SEC = 1_000_000
Simulate = Callable[..., tuple[RunResult, ...]]


def _videos(r: RunResult, prefix: str) -> list[dict[str, object]]:
    return [f for f in r.summary["flows"] if f["kind"] == "video" and str(f["name"]).startswith(prefix)]


def _one(r: tuple[RunResult, ...]) -> RunResult:
    (run,) = r
    return run


# -------------------------------------------------------------------------------------------------
# RFC 8869 §3.1: the bottleneck is the 1 Mbit/s wired path behind the AP.


def test_8869_3_1_i_an_uplink_call_converges_on_the_wired_bottleneck(simulate: Simulate) -> None:
    """(i) "the same as 5.1": converge to the bottleneck capacity without excessive oscillation.
    Measured: 0.74 of the 1 Mbit/s with a queuing delay p95 of 48 ms, as on a wire (RFC 8867 §5.1's
    first phase: 0.72)."""
    r = _one(simulate("rfc8869-3.1-i"))
    (v,) = _videos(r, "up")
    assert 0.6 <= v["utilization"] <= 1.0, v["utilization"]
    assert v["qdelay_p95_ms"] < 100 and v["loss_ratio"] < 0.01


def test_8869_3_1_ii_both_directions_converge_and_share_the_air(simulate: Simulate) -> None:
    """(ii) each direction converges to its 1 Mbit/s wired path despite the shared channel."""
    r = _one(simulate("rfc8869-3.1-ii"))
    for v in _videos(r, ""):
        assert 0.6 <= v["utilization"] <= 1.0, (v["name"], v["utilization"])
    assert r.summary["fairness"]["run"]["jain_index"] >= 0.99


@pytest.mark.parametrize(
    ("case", "busy", "free"), [("iii", (10, 60), (70, 119)), ("iv", (70, 119), (10, 60))]
)
def test_8869_3_1_the_uplink_call_makes_room_for_cbr_and_takes_it_back(
    simulate: Simulate, case: str, busy: tuple[int, int], free: tuple[int, int]
) -> None:
    """(iii), (iv): adapt promptly when the 300 kbit/s uplink CBR comes and goes. Measured: 505
    against 741 kbit/s (iii), 505 against 748 (iv): the call gives up about the CBR's rate; the
    downlink call, on the other wired direction, does not move."""
    r = _one(simulate(f"rfc8869-3.1-{case}"))
    up_busy, up_free = metric(r, "up.video", *busy), metric(r, "up.video", *free)
    assert 150e3 <= up_free - up_busy <= 400e3, (up_busy, up_free)
    down_busy, down_free = metric(r, "down.video", *busy), metric(r, "down.video", *free)
    assert down_busy == pytest.approx(down_free, rel=0.1)


@pytest.mark.xfail(
    strict=True,
    reason="GoogCC is starved by NewReno through the 300 ms wired buffer: 0.18 against 0.78 Mbit/s, "
    "a queuing delay p95 of 302 ms (seed 1), as on a wire (RFC 8867 §5.6, docs/controllers/gcc.md); "
    "Chromium 156 over the same BSS is starved harder, 0.06 against the kernel's NewReno at 0.89 "
    "(docs/wifi.md, 'The Wi-Fi expected failures')",
)
def test_8869_3_1_v_the_call_holds_a_fair_share_against_uplink_tcp(simulate: Simulate) -> None:
    """(v) "no congestion collapse; stabilise at a fair share" against one uplink TCP flow."""
    r = _one(simulate("rfc8869-3.1-v"))
    (v,) = _videos(r, "up")
    assert v["mean_send_rate_bps"] >= 0.3e6, v["mean_send_rate_bps"]


# -------------------------------------------------------------------------------------------------
# RFC 8869 §3.2: the BSS (MCS 11, no aggregation, about 20 Mbit/s) is the bottleneck.


@pytest.mark.parametrize(("case", "prefix", "aggregate"), [("a", "down", 15e6), ("b", "up", 14e6)])
def test_8869_3_2_sixteen_calls_share_the_channel(
    simulate: Simulate, case: str, prefix: str, aggregate: float
) -> None:
    """(a), (b): each call its fair share, the aggregate near what the channel carries, delay and
    loss fit for real-time media. Measured: 16 downlink calls at 1.05-1.07 Mbit/s (16.8 in all,
    Jain 0.97), 16 uplink calls at 0.96 Mbit/s (15.4, Jain 0.89): the BSS carries about the
    20 Mbit/s RFC 8869 states, less its overhead; uplink loses more to collisions."""
    r = _one(simulate(f"rfc8869-3.2-{case}"))
    videos = _videos(r, prefix)
    assert len(videos) == 16
    assert sum(float(v["mean_recv_rate_bps"]) for v in videos) >= aggregate
    assert r.summary["fairness"]["run"]["jain_index"] >= 0.85
    assert max(float(v["qdelay_p95_ms"]) for v in videos) < 150
    assert max(float(v["loss_ratio"]) for v in videos) < 0.01


def test_8869_3_2_c_the_ap_is_one_contender_for_all_downlinks(simulate: Simulate) -> None:
    """(c) asks for similar uplink and downlink rates. DCF gives every contender the same chance
    to send, and the AP is one contender for its eight downlinks (Park et al. 2006; Guerrero
    Viveros 2019 §6.3.1): the uplink calls get about twice the downlink's. Measured: 1.43 against
    0.64 Mbit/s."""
    r = _one(simulate("rfc8869-3.2-c"))
    up = [float(v["mean_send_rate_bps"]) for v in _videos(r, "up")]
    down = [float(v["mean_send_rate_bps"]) for v in _videos(r, "down")]
    assert sum(up) / len(up) >= 1.8 * sum(down) / len(down), (up, down)
    ap = next(n for n in r.summary["wifi"] if n["role"] == "ap")
    stations = [n for n in r.summary["wifi"] if n["role"] == "station"]
    # The downlinks' backlog waits in the AP's queue, longer than in any station's.
    assert ap["queue_bytes_p95"] > max(n["queue_bytes_p95"] for n in stations)


def test_8869_3_2_d_downlinks_take_the_air_back_when_the_uplink_cbr_stops(simulate: Simulate) -> None:
    """(d): five uplink CBR flows (600 kbit/s each) run for the first minute. They take the AP's
    share of the air from the downlink calls (about 0.19 Mbit/s each), which recover after the
    CBR stops (0.59); the uplink calls hold about 1.46 Mbit/s throughout."""
    r = _one(simulate("rfc8869-3.2-d"))
    down = [str(v["name"]) for v in _videos(r, "down")]
    busy = sum(metric(r, f, 10, 60) for f in down) / len(down)
    free = sum(metric(r, f, 70, 120) for f in down) / len(down)
    assert free >= 2 * busy, (busy, free)


def test_8869_3_2_f_the_calls_recover_within_tens_of_seconds_after_tcp(simulate: Simulate) -> None:
    """(f): throughput falls when TCP arrives and recovers when it leaves, "within 10s of seconds".
    Seed 1: the uplink calls' sum is 11.70 Mbit/s over 10-40 s and 11.70 again over 100-120 s.
    An expected failure until model revision 11 (0.17 of it recovered): the window pushback
    counted packets whose feedback was lost behind the TCP queue as in flight, and held the
    encoders down long after TCP stopped (docs/controllers/gcc.md; Chromium 156 recovers in
    seed000-5.4.7, docs/calibration.md)."""
    r = _one(simulate("rfc8869-3.2-f"))
    up = [str(v["name"]) for v in _videos(r, "up")]
    before = sum(metric(r, f, 10, 40) for f in up)
    after = sum(metric(r, f, 100, 120) for f in up)
    assert after >= 0.8 * before, (before, after)


# -------------------------------------------------------------------------------------------------
# Chen et al. 2015 (seed 004): retry-limit adaptation under a hidden terminal.


def _station(r: RunResult, node: str) -> pl.DataFrame:
    return r.tables.links.filter(pl.col("link") == f"wlan:{node}")


def _seed004(simulate: Simulate, fec: bool) -> dict[int, RunResult]:
    runs = simulate("seed004-testbed", sets=(f"fec={str(fec).lower()}",))
    return {int(r.summary["variant"].split("rex=")[1]): r for r in runs}


@pytest.mark.parametrize("fec", [False, True])
def test_004_more_attempts_for_channel_losses_mean_fewer_mac_drops(simulate: Simulate, fec: bool) -> None:
    """§4.3-§4.5: R_ex = 0, 3, 5, 7 grant more transmission opportunities, so fewer packets are
    lost on STA_A's link. Measured (FEC off): 2112, 1447, 590, 35 MAC drops at STA_A."""
    runs = _seed004(simulate, fec)
    drops = [int(_station(runs[rex], "STA_A")["mac_drops"].sum()) for rex in (0, 3, 5, 7)]
    assert drops == sorted(drops, reverse=True) and drops[-1] < 0.05 * drops[0], drops
    assert int(_station(runs[0], "STA_A")["extended_attempts"].sum()) == 0


def test_004_fewer_losses_mean_fewer_freezes(simulate: Simulate) -> None:
    """§4.5, Fig. 13 (FEC off): "the total amount of video freezes is significantly reduced" as
    R_ex grows; with R_ex = 7 as few as with FEC (Fig. 4 (b)). Measured: 397, 366, 186, 9 freezes;
    25 with FEC and R_ex = 0."""
    off, on = _seed004(simulate, False), _seed004(simulate, True)

    def freezes(r: RunResult) -> int:
        return int(next(f for f in r.summary["flows"] if f["name"] == "call.video")["freezes"])

    counts = [freezes(off[rex]) for rex in (0, 3, 5, 7)]
    assert counts == sorted(counts, reverse=True) and counts[-1] < 0.1 * counts[0], counts
    assert freezes(on[0]) < 0.2 * counts[0]
    assert counts[-1] <= 2 * max(freezes(on[0]), 10)


@pytest.mark.parametrize("fec", [False, True])
def test_004_the_competing_stations_are_not_hurt(simulate: Simulate, fec: bool) -> None:
    """§4.6, Fig. 14: the eight competing stations' aggregate throughput "does not change
    appreciably", whatever R_ex. Measured: 6.91-7.03 Mbit/s over their 40 s of traffic."""
    runs = _seed004(simulate, fec)

    def competing(r: RunResult) -> float:
        cbr = [f["id"] for f in r.summary["meta"]["flows"] if f["kind"] == "cbr"]
        p = r.tables.packets.filter((pl.col("event") == "received") & pl.col("flow").is_in(cbr))
        return float(p["size"].sum()) * 8 / 40

    rates = [competing(runs[rex]) for rex in (0, 3, 5, 7)]
    assert max(rates) <= 1.03 * min(rates), rates


def test_004_under_congestion_the_adaptation_stands_aside_and_gcc_backs_off(simulate: Simulate) -> None:
    """§3.2, §4.4, Fig. 9 and 12: when the competing load is high (240-250 s) the congestion level
    jumps, the station stops extending its retry limit so that the losses reach GCC, and GCC cuts
    its target (to about 0.6 Mbit/s in the paper). Measured (R_ex = 7): CL up to 1.29 against
    0 before; 57 extended attempts in 240-250 s against about 281 per 10 s before; the target
    falls to 0.66 Mbit/s from 2.02."""
    r = _seed004(simulate, False)[7]
    a = _station(r, "STA_A")
    calm = a.filter((pl.col("t_us") >= 100 * SEC) & (pl.col("t_us") < 170 * SEC))
    busy = a.filter((pl.col("t_us") >= 240 * SEC) & (pl.col("t_us") < 250 * SEC))
    assert busy["congestion_level"].max() >= 0.3 > 10 * calm["congestion_level"].quantile(0.95)
    per_10s_calm = calm["extended_attempts"].sum() / 7
    assert busy["extended_attempts"].sum() < 0.3 * per_10s_calm
    ts = r.timeseries.filter(pl.col("flow_name") == "call.video")
    target = ts.filter((pl.col("t_us") >= 240 * SEC) & (pl.col("t_us") < 250 * SEC))["target_bps"].mean()
    assert isinstance(target, float) and target < 1.0e6, target


def test_004_the_cost_of_more_attempts_is_a_little_delay(simulate: Simulate) -> None:
    """§3.2: an MPDU given R_ex more attempts waits longer, at most about twice TD(7) (21.8 ms on a
    quiet channel, eq. (3)), and the paper expects that cost to stay rare. Outside the congestion
    window (20-170 s) the video's one-way delay is no worse with R_ex = 7 than with 0: measured
    p99.9 317.6 against 317.5 ms, the worst packet 319.4 against 320.2 ms, the queuing delay p95
    13.8 ms in both; the saved packets arrive within the spread of the others."""
    runs = _seed004(simulate, False)

    def owd(r: RunResult) -> pl.Series:
        p = r.tables.packets.filter(
            (pl.col("event") == "received")
            & (pl.col("flow") == 0)
            & pl.col("t_us").is_between(20 * SEC, 170 * SEC)
        )
        return (p["t_us"] - p["sent_us"]) / 1e3

    base, extended = owd(runs[0]), owd(runs[7])
    assert float(extended.quantile(0.999)) <= float(base.quantile(0.999)) + 2.0
    assert float(extended.max()) <= float(base.max()) + 21.8
    p95 = [
        float(next(f for f in runs[x].summary["flows"] if f["name"] == "call.video")["qdelay_p95_ms"])
        for x in (0, 7)
    ]
    assert abs(p95[1] - p95[0]) < 3, p95


# -------------------------------------------------------------------------------------------------
# Guerrero Viveros 2019 (seed 000) §5.3: GCC over an 802.11n home network.


def test_000_5_3_near_the_ap_a_call_is_as_on_a_wire(simulate: Simulate) -> None:
    """Tables 6.4-6.6, scenario 1 (location A): with up to four competing calls, uplink, downlink
    or both ways, the call holds 2.3-2.5 Mbit/s with a mean queuing delay of 4-7 ms and no loss
    to speak of. Measured: 2.46 Mbit/s in every section, a mean queuing delay under 2 ms."""
    cases = (("seed000-5.3.5", ("location=A",), "up"), ("seed000-5.3.6", ("location=A",), "down"))
    for scenario, sets, call in (
        *cases,
        ("seed000-5.3.7", ("pc3=A", "pc4=A"), "up"),
        ("seed000-5.3.7", ("pc3=A", "pc4=A"), "down"),
    ):
        r = _one(simulate(scenario, sets=sets))
        for a, b in ((10, 60), (60, 120), (120, 180)):
            assert metric(r, f"{call}.video", a, b) >= 2.2e6, (scenario, call, a)
            assert metric(r, f"{call}.video", a, b, "qdelay_p50_ms") < 10, (scenario, call, a)


@pytest.mark.xfail(
    strict=True,
    reason="model revision 14 (GoogCC's loss-based estimator with Chromium 156's defaults): the "
    "downlink call still collapses, but over the minute instead of at once: 1.73, 1.43, 1.34, 0.99, "
    "0.75, 0.51 Mbit/s in the 10 s windows of 60-120 s, 1.00 on average over 70-120 s (38 % of "
    "section 1; 0.66 at revision 13, the thesis 0.24), then 0.06 with the uploads. Which pace is "
    "Chromium's is not measured: its two runs of this case on this machine missed the relay's "
    "timing (departures p99 246 µs, then 20.6 ms with the encoders at 4 of 60 frames a second)",
)
def test_000_5_3_8_downlink_tcp_at_the_ap_collapses_the_downlink_call_not_the_uplink(
    simulate: Simulate,
) -> None:
    """Table 6.7, scenario 1, the thesis's central Wi-Fi finding: with two TCP downloads through
    the AP (60-120 s) the downlink call collapses from 2.32 to 0.24 Mbit/s behind a mean queuing
    delay of 232 ms, while the uplink call holds (2.43 Mbit/s); with uploads too (120-180 s) the
    downlink falls to 0.04. Measured: 2.46 → 0.66 → 0.18 Mbit/s with 89 and 100 ms of queue in
    the AP's shared FIFO, the uplink at 2.42 in 60-120 s. The AP's 1000 packets drain at
    about 100 Mbit/s here, so its queue is shorter than the thesis's."""
    r = _one(simulate("seed000-5.3.8", sets=("pc3=A", "pc4=A")))
    down = [metric(r, "down.video", a, b) for a, b in ((10, 60), (70, 120), (130, 180))]
    up = [metric(r, "up.video", a, b) for a, b in ((10, 60), (70, 120))]
    assert down[0] >= 2.2e6 and down[1] <= 0.35 * down[0] and down[2] <= 0.1 * down[0], down
    assert up[1] >= 0.9 * up[0], up
    assert metric(r, "down.video", 70, 120, "qdelay_p50_ms") >= 50
    ap = next(n for n in r.summary["wifi"] if n["role"] == "ap")
    assert ap["queue_bytes_p95"] >= 500_000  # the shared FIFO holds the downloads' backlog


def test_000_5_3_8_behind_walls_the_queue_is_as_long_as_the_thesis_measured(simulate: Simulate) -> None:
    """Table 6.7, scenario 2 (both laptops at location B): the downlink collapses to 0.21 and 0.04
    Mbit/s with a mean delay of 382 and 622 ms. Measured: 0.32 and 0.18 Mbit/s, 351 and 437 ms
    (the AP drains its FIFO at the lower rate of location B)."""
    r = _one(simulate("seed000-5.3.8", sets=("pc3=B", "pc4=B")))
    assert metric(r, "down.video", 70, 120) <= 0.2 * metric(r, "down.video", 10, 60)
    assert metric(r, "down.video", 70, 120, "qdelay_p50_ms") >= 250


@pytest.mark.xfail(
    strict=True,
    reason="the uplink call shares its laptop's MAC queue with the laptop's TCP upload (TCP Small "
    "Queues lets 8 ms at the pacing rate wait there): 2.42 → 0.68 Mbit/s once the uploads start, "
    "against the thesis's 2.50 (seed 1; docs/scenarios.md, seed000-5.3.*); Chromium 156 over the "
    "same BSS with kernel CUBIC falls to 0.09 (docs/wifi.md, 'The Wi-Fi expected failures')",
)
def test_000_5_3_8_the_uplink_call_holds_against_uploads_too(simulate: Simulate) -> None:
    """Table 6.7, scenario 1, section 3: the uplink call stayed at 2.50 Mbit/s with the uploads on."""
    r = _one(simulate("seed000-5.3.8", sets=("pc3=A", "pc4=A")))
    assert metric(r, "up.video", 130, 180) >= 2.0e6


@pytest.mark.xfail(
    strict=True,
    reason="location B (HT MCS 10, 10 % of attempts lost) leaves the channel room for five 2.5 "
    "Mbit/s calls: the uplink call holds 2.46 Mbit/s in every section (seed 1); the thesis's "
    "channel there (neighbouring networks, fading) is not modelled; Chromium 156 over the same BSS "
    "also holds (2.64 to 2.37 Mbit/s), in a run whose encoders this machine held back from 70 s (its "
    "rates are kept, marked; docs/wifi.md, 'The Wi-Fi expected failures')",
)
def test_000_5_3_5_behind_walls_competing_uplink_calls_squeeze_the_call(simulate: Simulate) -> None:
    """Table 6.4, scenario 2: the uplink call fell from 1.81 to 1.35 and 0.85 Mbit/s as two, then
    four competing uplink calls joined."""
    r = _one(simulate("seed000-5.3.5", sets=("location=B",)))
    assert metric(r, "up.video", 130, 180) <= 0.7 * metric(r, "up.video", 10, 60)


SWEEP = Path(__file__).resolve().parent.parent / "examples" / "sweeps" / "seed004-thresholds.toml"


def test_004_the_threshold_sweep_resolves_every_point() -> None:
    """The paper gives no CL_th or BF_th, so `examples/sweeps/seed004-thresholds.toml` crosses
    them; every point is a valid variant of the testbed."""
    spec = sweep.load(SWEEP)
    assert len(spec.points) == 15 and spec.seeds == (1, 2)
    for point in spec.points:
        (variant,) = resolve("seed004-testbed", point.sets)
        assert "rex=7" in variant.variant


@pytest.mark.slow
def test_004_the_thresholds_matter_less_than_the_extension(tmp_path: Path) -> None:
    """Swept over CL_th 0.05-1000 and BF_th 20-1000 (R_ex = 7, FEC off, seeds 1-2), the adaptation
    keeps its gain everywhere (17-51 MAC drops and 7-15 freezes, against 2112 and 397 without
    it) and GCC backs off under the high load all the same (target 531-749 kbit/s): GCC's own
    delay-based reaction empties STA_A's queue before the congestion level matters, and a small
    BF_th (20 packets) is what keeps extended attempts down under load (0-17 against 13-57 at
    100 and 29-90 at 1000)."""
    result = sweep.run_sweep(sweep.load(SWEEP), tmp_path, jobs=2)
    assert result.runs.height == 30
    for path in tmp_path.rglob("summary.json"):
        s = json.loads(path.read_text())
        station = next(n for n in s["wifi"] if n["node"] == "STA_A")
        video = next(f for f in s["flows"] if f["name"] == "call.video")
        assert station["mac_drops"] <= 100 and video["freezes"] <= 30, (path, station, video["freezes"])
        ts = pl.read_parquet(path.parent / "timeseries.parquet").filter(pl.col("flow_name") == "call.video")
        busy = ts.filter(pl.col("t_us").is_between(240 * SEC, 250 * SEC, closed="left"))
        assert busy["target_bps"].mean() < 1.0e6, path
