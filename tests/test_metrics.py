"""Tests of rtcbench.analysis and rtcbench.tables on synthetic trace tables with closed-form answers
(no Rust core).

The main fixture is a 20 s run over a link of 1 Mbit/s that steps to 2 Mbit/s at 10 s, carrying a
CBR "video" flow of 1250-byte packets every 10 ms (exactly 1 Mbit/s on the wire, 20 packets per
200 ms window), an audio flow, and an RTCP flow on an unlimited backward link.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rtcbench.analysis import (
    Phase,
    convergence_time,
    cross_traffic,
    fairness,
    fairness_per_phase,
    feedback_overhead,
    flow_metrics,
    jain_index,
    max_min_shares,
    mean_ci,
    packet_delays,
    phases,
    settling_time,
    share_ratios,
    summarize,
    time_to_reach,
    timeseries,
    traffic_summary,
)
from rtcbench.analysis.summary import AFTER_EVENT_KEYS
from rtcbench.tables import Tables

MS = 1_000
S = 1_000_000
W = 200 * MS

VIDEO, AUDIO, RTCP = 0, 1, 2


# ------------------------------------------------------------------------------------------------
# builders


def cbr(
    flow: int,
    *,
    start_us: int = 0,
    end_us: int,
    interval_us: int,
    size: int,
    payload: int,
    kind: str = "media",
    owd_us: Callable[[int, int], int] = lambda i, s: 50 * MS,
    dropped: Callable[[int, int], bool] = lambda i, s: False,
    id0: int = 0,
) -> pl.DataFrame:
    """Packet events of a constant-rate flow: packet i is sent at start + i*interval and is either
    received owd_us(i, sent) later or dropped 1 ms after sending."""
    rows: list[dict[str, Any]] = []
    for i, s in enumerate(range(start_us, end_us, interval_us)):
        base = {
            "packet": id0 + i,
            "flow": flow,
            "kind": kind,
            "size": size,
            "payload": payload,
            "sent_us": s,
            "seq": None if kind == "rtcp" else i % 65536,
            "frame": None,
        }
        rows.append({**base, "t_us": s, "event": "sent", "link": None, "reason": None})
        if dropped(i, s):
            rows.append({**base, "t_us": s + MS, "event": "dropped", "link": "fwd", "reason": "queue_full"})
        else:
            rows.append({**base, "t_us": s + owd_us(i, s), "event": "received", "link": None, "reason": None})
    return pl.DataFrame(rows, schema=PACKET_SCHEMA).sort("t_us", "packet")


PACKET_SCHEMA: dict[str, Any] = {
    "t_us": pl.Int64,
    "event": pl.String,
    "packet": pl.Int64,
    "flow": pl.Int32,
    "kind": pl.String,
    "size": pl.Int32,
    "payload": pl.Int32,
    "sent_us": pl.Int64,
    "seq": pl.Int32,
    "frame": pl.Int64,
    "link": pl.String,
    "reason": pl.String,
}


def link_rows(name: str, duration_us: int, capacity: Callable[[int], int | None]) -> list[dict[str, Any]]:
    return [
        {"t_us": t, "link": name, "capacity_bps": capacity(t), "queue_bytes": 0, "queue_limit_bytes": None}
        for t in range(0, duration_us, 10 * MS)
    ]


def make_meta(duration_s: float, flows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "scenario": "synthetic",
        "variant": "",
        "duration_s": duration_s,
        "links": [{"name": "fwd", "from": "A", "to": "B"}, {"name": "bwd", "from": "B", "to": "A"}],
        "calls": [{"id": 0, "controller": "none", "sender": "A", "receiver": "B"}],
        "flows": flows,
    }


def video_flow(fid: int = VIDEO, link: str = "fwd") -> dict[str, Any]:
    return {
        "id": fid,
        "name": f"call0.video{fid}",
        "kind": "video",
        "call": 0,
        "path": [link],
        "bottleneck": link,
    }


def single_flow_tables(
    packets: pl.DataFrame, duration_s: float, capacity_bps: int | None = 10_000_000
) -> Tables:
    dur = round(duration_s * S)
    return Tables(
        packets=packets,
        frames=pl.DataFrame(),
        controller=pl.DataFrame(),
        links=pl.DataFrame(link_rows("fwd", dur, lambda t: capacity_bps)),
        feedback=pl.DataFrame(),
        meta=make_meta(duration_s, [video_flow()]),
    )


def two_phase() -> Tables:
    dur = 20 * S
    video = cbr(
        VIDEO,
        end_us=dur,
        interval_us=10 * MS,
        size=1250,
        payload=1200,
        dropped=lambda i, s: 12 * S <= s < 12 * S + W,
    )
    audio = cbr(AUDIO, end_us=dur, interval_us=20 * MS, size=100, payload=60, id0=100_000)
    rtcp = cbr(RTCP, end_us=dur, interval_us=50 * MS, size=80, payload=0, kind="rtcp", id0=200_000)
    links = link_rows("fwd", dur, lambda t: 1_000_000 if t < 10 * S else 2_000_000)
    # A periodic sample and the change at the same instant: the later row is the new state.
    links.insert(1000, {**links[1000], "capacity_bps": 1_000_000})
    links += link_rows("bwd", dur, lambda t: None)
    frames = pl.DataFrame(
        [
            {
                "flow": VIDEO,
                "frame": i,
                "capture_us": i * S // 30,
                "size": 4000,
                "keyframe": i == 0,
                "packets": 4,
                # The first packet 45 ms after capture, the last (and the render) 60 ms.
                "first_us": None if i == 450 else i * S // 30 + 45 * MS,
                "complete_us": None if i == 450 else i * S // 30 + 60 * MS,
                "freeze": i == 300,
            }
            for i in range(600)
        ]
    )
    controller = pl.DataFrame(
        {"t_us": [0, 5_200_000, 10 * S], "call": [0, 0, 0], "target_bps": [1_000_000, 1_500_000, 2_000_000]}
    )
    feedback = pl.DataFrame(
        {
            "t_us": [S, 2 * S, 3 * S, *range(0, dur, 100 * MS)],
            "call": [0] * (3 + 200),
            "kind": ["rr"] * 3 + ["twcc"] * 200,
            "size": [60] * 3 + [40] * 200,
            "rtt_us": [100 * MS, 110 * MS, 120 * MS] + [None] * 200,
        }
    )
    flows = [
        video_flow(),
        {
            "id": AUDIO,
            "name": "call0.audio",
            "kind": "audio",
            "call": 0,
            "path": ["fwd"],
            "bottleneck": "fwd",
        },
        {
            "id": RTCP,
            "name": "call0.rtcp-rx",
            "kind": "rtcp",
            "call": 0,
            "path": ["bwd"],
            "bottleneck": "bwd",
        },
    ]
    return Tables(
        packets=pl.concat([video, audio, rtcp]).sort("t_us"),
        frames=frames,
        controller=controller,
        links=pl.DataFrame(links),
        feedback=feedback,
        meta=make_meta(20.0, flows),
    )


@pytest.fixture(scope="module")
def tables() -> Tables:
    return two_phase()


@pytest.fixture(scope="module")
def ts(tables: Tables) -> pl.DataFrame:
    return timeseries(tables)


def column(ts: pl.DataFrame, flow: int, name: str) -> list[Any]:
    return ts.filter(pl.col("flow") == flow).sort("t_us").get_column(name).to_list()


def window(ts: pl.DataFrame, flow: int, t_us: int) -> dict[str, Any]:
    rows = ts.filter((pl.col("flow") == flow) & (pl.col("t_us") == t_us)).to_dicts()
    assert len(rows) == 1
    return rows[0]


# ------------------------------------------------------------------------------------------------
# time series


def test_grid_has_every_flow_and_window(ts: pl.DataFrame) -> None:
    assert ts.height == 3 * 100
    assert column(ts, VIDEO, "t_us") == [k * W for k in range(100)]
    assert ts.schema["flow"] == pl.Int32
    assert ts.schema["t_us"] == pl.Int64


def test_send_rate_is_exactly_one_megabit(ts: pl.DataFrame) -> None:
    assert column(ts, VIDEO, "send_rate_bps") == [1_000_000.0] * 100
    assert column(ts, AUDIO, "send_rate_bps") == [40_000.0] * 100


def test_receive_rate_by_arrival_time(ts: pl.DataFrame) -> None:
    recv = column(ts, VIDEO, "recv_rate_bps")
    # Window 0 only holds arrivals of packets sent in [0, 150 ms): 15 of 20.
    assert recv[0] == 750_000.0
    # Drops of packets sent in [12.0, 12.2) s show by arrival (+50 ms) in windows 12.0 and 12.2.
    assert recv[60] == 250_000.0
    assert recv[61] == 750_000.0
    assert all(r == 1_000_000.0 for k, r in enumerate(recv) if k not in (0, 60, 61))


def test_goodput_counts_media_payload_only(ts: pl.DataFrame) -> None:
    good, recv = column(ts, VIDEO, "goodput_bps"), column(ts, VIDEO, "recv_rate_bps")
    assert all(g == pytest.approx(r * 1200 / 1250) for g, r in zip(good, recv, strict=True))
    assert set(column(ts, RTCP, "goodput_bps")[1:]) == {0.0}


def test_capacity_and_utilisation_per_phase(ts: pl.DataFrame) -> None:
    cap, util = column(ts, VIDEO, "capacity_bps"), column(ts, VIDEO, "utilization")
    assert cap == [1_000_000.0] * 50 + [2_000_000.0] * 50
    assert util[1:50] == [1.0] * 49
    assert [u for k, u in enumerate(util[50:], 50) if k not in (60, 61)] == [0.5] * 48
    # The backward link is unlimited: no capacity, no utilisation.
    assert set(column(ts, RTCP, "capacity_bps")) == {None}
    assert set(column(ts, RTCP, "utilization")) == {None}


def test_capacity_is_time_weighted_within_a_window() -> None:
    dur = 2 * S
    pk = cbr(VIDEO, end_us=dur, interval_us=10 * MS, size=1250, payload=1200)
    rows = link_rows(
        "fwd", dur, lambda t: 1_000_000 if t < 1_050_000 else (3_000_000 if t < 1_500_000 else None)
    )
    t = Tables(
        pk, pl.DataFrame(), pl.DataFrame(), pl.DataFrame(rows), pl.DataFrame(), make_meta(2.0, [video_flow()])
    )
    cap = column(timeseries(t), VIDEO, "capacity_bps")
    # [1.0, 1.2): 50 ms at 1 Mbit/s then 150 ms at 3 Mbit/s.
    assert cap[5] == pytest.approx(2_500_000.0)
    assert cap[6] == 3_000_000.0
    # [1.4, 1.6) is unlimited for part of the window, so no capacity; later windows are unlimited.
    assert cap[7:] == [None, None, None]


def test_target_is_last_value_before_window_end(ts: pl.DataFrame) -> None:
    assert window(ts, VIDEO, 5_000_000)["target_bps"] == 1_000_000
    assert window(ts, VIDEO, 5_200_000)["target_bps"] == 1_500_000
    assert window(ts, AUDIO, 10 * S)["target_bps"] == 2_000_000
    assert set(column(ts, RTCP, "target_bps")) == {None}


def test_loss_ratio_by_send_time(ts: pl.DataFrame) -> None:
    loss = column(ts, VIDEO, "loss_ratio")
    assert loss[60] == 1.0
    assert set(loss[:60] + loss[61:]) == {0.0}
    assert window(ts, VIDEO, 12 * S)["packets_dropped"] == 20


def test_delays_constant_owd(ts: pl.DataFrame) -> None:
    assert set(column(ts, VIDEO, "owd_ms")) == {50.0}
    assert set(column(ts, VIDEO, "qdelay_ms")) == {0.0}


def test_fps_and_frame_delay(ts: pl.DataFrame) -> None:
    fps = column(ts, VIDEO, "fps")
    # Frames complete 60 ms after capture: window 0 holds frames 0-4, every later window six frames;
    # frame 450 never completes (window 15.0 s).
    assert fps[0] == pytest.approx(25.0)
    assert fps[75] == pytest.approx(25.0)
    assert all(f == pytest.approx(30.0) for k, f in enumerate(fps) if k not in (0, 75))
    assert set(column(ts, VIDEO, "frame_delay_ms")) == {60.0}
    assert set(column(ts, AUDIO, "fps")) == {None}


def test_empty_windows_give_zero_rates_and_null_delays() -> None:
    # A flow that pauses between 1 s and 2 s.
    dur = 3 * S
    pk = cbr(VIDEO, end_us=dur, interval_us=10 * MS, size=1250, payload=1200, owd_us=lambda i, s: 0)
    pk = pk.filter(~pl.col("sent_us").is_between(S, 2 * S - 1))
    ts = timeseries(single_flow_tables(pk, 3.0))
    row = window(ts, VIDEO, 1_400_000)
    assert row["send_rate_bps"] == row["recv_rate_bps"] == row["goodput_bps"] == 0.0
    assert row["owd_ms"] is None
    assert row["qdelay_ms"] is None
    assert row["loss_ratio"] is None
    assert row["utilization"] == 0.0
    assert row["fps"] == 0.0
    assert row["frame_delay_ms"] is None


def test_partial_last_window_is_normalised_by_its_length() -> None:
    pk = cbr(VIDEO, end_us=1_100_000, interval_us=10 * MS, size=1250, payload=1200, owd_us=lambda i, s: 0)
    ts = timeseries(single_flow_tables(pk, 1.1))
    assert column(ts, VIDEO, "t_us")[-1] == 1_000_000
    assert column(ts, VIDEO, "send_rate_bps") == [1_000_000.0] * 6


def test_events_after_the_run_end_are_ignored(tables: Tables, ts: pl.DataFrame) -> None:
    sent_bytes = sum(r * W / 8 / S for r in column(ts, VIDEO, "send_rate_bps"))
    assert sent_bytes == pytest.approx(2000 * 1250)
    # Packets sent in [19.95, 20) s arrive after the end and are not in any window.
    received = sum(column(ts, VIDEO, "packets_received"))
    assert received == 2000 - 20 - 5


@settings(max_examples=40, deadline=None)
@given(
    sends=st.lists(
        st.tuples(st.integers(0, 5 * S - 1), st.integers(40, 1500), st.booleans()), min_size=0, max_size=200
    ),
    window_us=st.integers(10 * MS, 2 * S),
)
def test_bytes_and_packets_are_conserved(sends: list[tuple[int, int, bool]], window_us: int) -> None:
    rows: list[dict[str, Any]] = []
    for i, (s, size, drop) in enumerate(sends):
        base = {"packet": i, "flow": VIDEO, "kind": "media", "size": size, "payload": size - 40, "sent_us": s}
        rows.append({**base, "t_us": s, "event": "sent"})
        rows.append({**base, "t_us": s + 7 * MS, "event": "dropped" if drop else "received"})
    pk = pl.DataFrame(
        rows,
        schema={
            k: PACKET_SCHEMA[k]
            for k in ["packet", "flow", "kind", "size", "payload", "sent_us", "t_us", "event"]
        },
    )
    ts = timeseries(single_flow_tables(pk, 5.0), window_us)
    lengths = (
        np.minimum(ts.get_column("t_us").to_numpy() + window_us, 5 * S) - ts.get_column("t_us").to_numpy()
    )
    sent_bytes = float((ts.get_column("send_rate_bps").to_numpy() * lengths).sum() / 8 / S)
    assert sent_bytes == pytest.approx(sum(size for _, size, _ in sends), abs=1e-6)
    assert ts.get_column("packets_sent").sum() == len(sends)
    assert ts.get_column("packets_dropped").sum() == sum(d for *_, d in sends)
    assert ts.get_column("packets_received").sum() == sum(
        1 for s, _, d in sends if not d and s + 7 * MS < 5 * S
    )
    loss = ts.get_column("loss_ratio").drop_nulls()
    assert ((loss >= 0) & (loss <= 1)).all()


def test_timeseries_is_fast_for_100k_packets() -> None:
    # 50 000 packets (100 000 rows) over 100 s.
    dur = 100 * S
    pk = cbr(VIDEO, end_us=dur, interval_us=2 * MS, size=1250, payload=1200, dropped=lambda i, s: i % 97 == 0)
    t = single_flow_tables(pk, 100.0)
    timeseries(t)
    start = time.perf_counter()
    timeseries(t)
    assert time.perf_counter() - start < 0.5  # budget 0.2 s; slack for loaded CI machines


# ------------------------------------------------------------------------------------------------
# phases


def test_phases_of_a_flow_link_and_name(tables: Tables) -> None:
    expected = [Phase(0.0, 10.0, 1_000_000), Phase(10.0, 20.0, 2_000_000)]
    assert phases(tables, VIDEO) == expected
    assert phases(tables, "fwd") == expected
    assert phases(tables, "call0.audio") == expected
    assert phases(tables, RTCP) == [Phase(0.0, 20.0, None)]
    assert expected[1].start_us == 10 * S
    assert expected[1].end_us == 20 * S


def test_phases_merge_equal_capacities_and_start_at_zero() -> None:
    dur = 6 * S
    rows = [
        r
        for r in link_rows("fwd", dur, lambda t: 1_000_000 if t < 2 * S or t >= 4 * S else 500_000)
        if r["t_us"] >= 30 * MS
    ]
    t = Tables(
        pl.DataFrame(),
        pl.DataFrame(),
        pl.DataFrame(),
        pl.DataFrame(rows),
        pl.DataFrame(),
        make_meta(6.0, [video_flow()]),
    )
    assert phases(t, VIDEO) == [
        Phase(0.0, 2.0, 1_000_000),
        Phase(2.0, 4.0, 500_000),
        Phase(4.0, 6.0, 1_000_000),
    ]


# ------------------------------------------------------------------------------------------------
# flow metrics


def test_flow_metrics_rates_loss_and_utilisation(tables: Tables, ts: pl.DataFrame) -> None:
    run = flow_metrics(tables, ts, VIDEO, 0, 20 * S)
    assert run["mean_send_rate_bps"] == 1_000_000.0
    assert run["std_send_rate_bps"] == 0.0
    assert run["packets_sent"] == 2000
    assert run["packets_dropped"] == 20
    assert run["loss_ratio"] == pytest.approx(0.01)
    assert run["bytes_sent"] == 2000 * 1250
    p1 = flow_metrics(tables, ts, VIDEO, 0, 10 * S)
    p2 = flow_metrics(tables, ts, VIDEO, 10 * S, 20 * S)
    # Mean receive rate over the phase / mean capacity: window 0 holds 15 of 20 packets.
    assert p1["utilization"] == pytest.approx((49 + 0.75) / 50)
    assert p2["utilization"] == pytest.approx((50 - 1.0) / 50 / 2)
    assert p1["loss_ratio"] == 0.0
    assert p2["loss_ratio"] == pytest.approx(0.02)
    assert p2["max_window_loss_ratio"] == 1.0
    assert p1["mean_goodput_bps"] == pytest.approx(p1["mean_recv_rate_bps"] * 1200 / 1250)
    assert p1["qdelay_p95_ms"] == 0.0
    assert p1["owd_p50_ms"] == 50.0
    settled = flow_metrics(tables, ts, VIDEO, 0, 10 * S, settle_us=W)
    assert settled["utilization"] == 1.0
    assert settled["mean_recv_rate_bps"] == 1_000_000.0


def test_qdelay_percentiles_linear_interpolation() -> None:
    # 1000 packets with queuing delays 0, 1, ..., 999 ms: the p-quantile is p * 999 ms.
    pk = cbr(
        VIDEO,
        end_us=10 * S,
        interval_us=10 * MS,
        size=1250,
        payload=1200,
        owd_us=lambda i, s: 50 * MS + i * MS,
    )
    t = single_flow_tables(pk, 12.0)
    m = flow_metrics(t, timeseries(t), VIDEO, 0, 12 * S)
    assert m["qdelay_p25_ms"] == pytest.approx(249.75)
    assert m["qdelay_p50_ms"] == pytest.approx(499.5)
    assert m["qdelay_p90_ms"] == pytest.approx(899.1)
    assert m["qdelay_p95_ms"] == pytest.approx(949.05)
    assert m["owd_p50_ms"] == pytest.approx(549.5)
    assert m["qdelay_mean_ms"] == pytest.approx(499.5)
    assert m["qdelay_max_ms"] == 999.0
    delays = packet_delays(t)
    assert delays.get_column("qdelay_ms").min() == 0.0


def test_video_frame_metrics(tables: Tables, ts: pl.DataFrame) -> None:
    m = flow_metrics(tables, ts, VIDEO, 0, 20 * S)
    # 600 frames, one never completes, the last one completes after the end (19.98 s + 60 ms).
    assert m["fps_mean"] == pytest.approx(598 / 20)
    assert m["freezes"] == 1
    assert m["frame_delay_p50_ms"] == 60.0
    assert m["frame_delay_p95_ms"] == 60.0
    assert m["jitter_buffer_ms"] == pytest.approx(15.0)  # first packet to render
    assert flow_metrics(tables, ts, VIDEO, 10 * S, 15 * S)["fps_mean"] == pytest.approx(30.0)


def test_not_applicable_fields_are_none(tables: Tables, ts: pl.DataFrame) -> None:
    audio = flow_metrics(tables, ts, AUDIO, 0, 20 * S)
    assert audio["fps_mean"] is None
    assert audio["freezes"] is None
    assert audio["frame_delay_p50_ms"] is None
    assert audio["settling_time_s"] == 0.0
    assert audio["convergence_time_s"] is None  # video only: audio's rate is its codec's
    rtcp = flow_metrics(tables, ts, RTCP, 0, 20 * S)
    for key in ("utilization", "mean_goodput_bps", "convergence_time_s", "settling_time_s", "mean_target_bps",
                "fps_mean"):  # fmt: skip
        assert rtcp[key] is None, key
    assert rtcp["mean_send_rate_bps"] == pytest.approx(80 * 8 / 0.05)


def test_rtt_mean_from_receiver_reports(tables: Tables, ts: pl.DataFrame) -> None:
    assert flow_metrics(tables, ts, VIDEO, 0, 20 * S)["rtt_mean_ms"] == pytest.approx(110.0)
    assert flow_metrics(tables, ts, VIDEO, 10 * S, 20 * S)["rtt_mean_ms"] is None


# ------------------------------------------------------------------------------------------------
# convergence and reaching a level


def step_tables(step_us: int, duration_s: float = 20.0) -> Tables:
    """0.5 Mbit/s (a packet every 20 ms) until step_us, then 2 Mbit/s (every 5 ms)."""
    dur = round(duration_s * S)
    low = cbr(VIDEO, end_us=step_us, interval_us=20 * MS, size=1250, payload=1200)
    high = cbr(VIDEO, start_us=step_us, end_us=dur, interval_us=5 * MS, size=1250, payload=1200, id0=10**6)
    return single_flow_tables(pl.concat([low, high]).sort("t_us"), duration_s)


def test_settling_time_of_a_step_response() -> None:
    t = step_tables(6 * S)
    ts = timeseries(t)
    assert settling_time(ts, VIDEO, 0, 20 * S) == pytest.approx(6.0, abs=W / S)
    # A step off the window grid is found within one window.
    t2 = step_tables(6_130_000)
    assert settling_time(timeseries(t2), VIDEO, 0, 20 * S) == pytest.approx(6.13, abs=W / S)
    # Measured from the phase start, over the phase only.
    assert settling_time(ts, VIDEO, 4 * S, 20 * S) == pytest.approx(2.0, abs=W / S)
    assert summarize(t)["flows"][0]["settling_time_s"] == pytest.approx(6.0, abs=W / S)


def test_convergence_is_reaching_the_reference_not_settling() -> None:
    ts = timeseries(step_tables(6 * S))
    # 0.5 → 2 Mbit/s at 6 s against a 2 Mbit/s share: the first 1 s mean at 0.8 × 2 Mbit/s or
    # more starts at 5.73 s, the 5.8 s window.
    assert convergence_time(ts, VIDEO, 0, 20 * S, 2_000_000) == pytest.approx(5.8, abs=1e-9)
    # Against a 0.5 Mbit/s share it is there at once and stays 5 s (until the 5.2 s window's mean
    # leaves the band): converged at 0. Stepping up at 3 s, it leaves before 5 s: not converged...
    assert convergence_time(ts, VIDEO, 0, 20 * S, 500_000) == 0.0
    early = timeseries(step_tables(3 * S))
    assert convergence_time(early, VIDEO, 0, 20 * S, 500_000) is None
    # ... unless the interval ends first (the next event on the bottleneck): held to its end.
    assert convergence_time(early, VIDEO, 0, 3 * S, 500_000) == 0.0
    # A share it never reaches, or no share at all.
    assert convergence_time(ts, VIDEO, 0, 20 * S, 3_000_000) is None
    assert convergence_time(ts, VIDEO, 0, 20 * S, None) is None
    # The flow settles at 6 s whatever it should have got: settling is not convergence.
    assert settling_time(ts, VIDEO, 0, 20 * S) == pytest.approx(6.0, abs=W / S)


def test_constant_rate_settles_immediately(tables: Tables, ts: pl.DataFrame) -> None:
    s = summarize(tables, ts)
    assert [p["flows"][0]["settling_time_s"] for p in s["phases"]] == [0.0, 0.0]


def test_oscillating_rate_never_settles_nor_converges() -> None:
    # 2 Mbit/s for 1 s, nothing for 1 s, ...: every 1 s average is 0.8-1.2x or worse off the mean.
    pk = cbr(VIDEO, end_us=20 * S, interval_us=5 * MS, size=1250, payload=1200)
    pk = pk.filter((pl.col("sent_us") // S) % 2 == 0)
    ts = timeseries(single_flow_tables(pk, 20.0))
    assert settling_time(ts, VIDEO, 0, 20 * S) is None
    assert convergence_time(ts, VIDEO, 0, 20 * S, 1_000_000) is None


def test_max_min_shares_fill_the_smallest_demands_first() -> None:
    # Bertsekas and Gallager's example shape: 10 shared by demands 2, 2.6, 4, 5 -> 2, 2.6, 2.7, 2.7.
    shares = max_min_shares(10.0, {1: 2.0, 2: 2.6, 3: 4.0, 4: 5.0})
    assert shares == pytest.approx({1: 2.0, 2: 2.6, 3: 2.7, 4: 2.7})
    # Elastic flows (inf) split what the others leave; demands above the capacity split it evenly.
    assert max_min_shares(3.0, {1: 0.5, 2: math.inf, 3: math.inf}) == {1: 0.5, 2: 1.25, 3: 1.25}
    assert max_min_shares(2.0, {1: math.inf}) == {1: 2.0}
    assert max_min_shares(-1.0, {1: 1.0}) == {1: 0.0}
    assert max_min_shares(1.0, {}) == {}


def test_time_to_reach_levels() -> None:
    ts = timeseries(step_tables(6 * S))
    assert time_to_reach(ts, VIDEO, 0, 1_500_000) == 6.0
    assert time_to_reach(ts, VIDEO, 2 * S, 2_000_000) == 4.0
    assert time_to_reach(ts, VIDEO, 0, 3_000_000) is None
    assert time_to_reach(ts, VIDEO, 0, 600_000, below=True) == 0.0
    assert time_to_reach(ts, VIDEO, 0, 1_900_000, smooth_us=S) == 6.0


# ------------------------------------------------------------------------------------------------
# summary


FLOW_KEYS = {
    "id",
    "name",
    "kind",
    "mean_send_rate_bps",
    "std_send_rate_bps",
    "mean_goodput_bps",
    "std_goodput_bps",
    "mean_recv_rate_bps",
    "utilization",
    "loss_ratio",
    "qdelay_p25_ms",
    "qdelay_p50_ms",
    "qdelay_p90_ms",
    "qdelay_p95_ms",
    "owd_p50_ms",
    "rtt_mean_ms",
    "convergence_time_s",
    "settling_time_s",
    "active_start_s",
    "active_end_s",
    "workload",
    "fps_mean",
    "freezes",
    "frame_delay_p50_ms",
    "frame_delay_p95_ms",
}


def test_summary_structure_and_json(tables: Tables) -> None:
    s = summarize(tables)
    text = json.dumps(s, allow_nan=False)
    assert json.loads(text) == s
    assert [f["id"] for f in s["flows"]] == [VIDEO, AUDIO, RTCP]
    for f in s["flows"]:
        assert f.keys() >= FLOW_KEYS
    assert [(p["index"], p["link"], p["start_s"], p["end_s"], p["capacity_bps"]) for p in s["phases"]] == [
        (0, "fwd", 0.0, 10.0, 1_000_000),
        (1, "fwd", 10.0, 20.0, 2_000_000),
    ]
    assert [f["id"] for f in s["phases"][0]["flows"]] == [VIDEO, AUDIO]
    video = s["flows"][0]
    assert video["utilization"] == pytest.approx((49.75 + 49.0) / 100 / 1.5)
    # Scalars, but a video flow's flags: a list of sentences (docs/metrics.md, "Flags").
    assert all(
        type(v) in (int, float, str, type(None)) for f in s["flows"] for k, v in f.items() if k != "flags"
    )
    assert all(isinstance(f.get("flags", []), list) for f in s["flows"])


def test_summary_of_a_run_without_events() -> None:
    t = Tables(
        pl.DataFrame(),
        pl.DataFrame(),
        pl.DataFrame(),
        pl.DataFrame(),
        pl.DataFrame(),
        make_meta(2.0, [video_flow()]),
    )
    s = summarize(t)
    json.dumps(s, allow_nan=False)
    f = s["flows"][0]
    assert f["mean_send_rate_bps"] == 0.0
    assert f["loss_ratio"] is None
    assert f["qdelay_p50_ms"] is None
    assert f["utilization"] is None
    assert f["convergence_time_s"] is None
    assert f["settling_time_s"] is None
    assert f["freezes"] == 0
    # The run gains what happened after events (`AFTER_EVENT_KEYS`), which a phase does not have.
    in_phase = {
        k: v for k, v in f.items() if not k.startswith("active_") and k not in (*AFTER_EVENT_KEYS, "flags")
    }
    assert s["phases"] == [
        {"index": 0, "link": "fwd", "start_s": 0.0, "end_s": 2.0, "capacity_bps": None, "flows": [in_phase]}
    ]


def test_tables_validate_columns() -> None:
    with pytest.raises(ValueError, match="packets table lacks column"):
        Tables(
            pl.DataFrame({"t_us": [1]}),
            pl.DataFrame(),
            pl.DataFrame(),
            pl.DataFrame(),
            pl.DataFrame(),
            make_meta(1.0, []),
        )
    with pytest.raises(ValueError, match="duration_s"):
        Tables(pl.DataFrame(), pl.DataFrame(), pl.DataFrame(), pl.DataFrame(), pl.DataFrame(), {"flows": []})


# ------------------------------------------------------------------------------------------------
# sharing: fairness, feedback overhead, cross traffic


def test_jain_index_hand_computed() -> None:
    assert jain_index([700_000.0] * 5) == pytest.approx(1.0)
    # One flow of n gets everything: 1/n.
    assert jain_index([2e6, 0.0, 0.0, 0.0]) == pytest.approx(1 / 4)
    # (1 + 3)² / (2 · (1² + 3²)) = 16 / 20.
    assert jain_index([1.0, 3.0]) == pytest.approx(0.8)
    assert jain_index([5.0]) == 1.0
    assert jain_index([]) is None
    assert jain_index([0.0, 0.0]) is None
    with pytest.raises(ValueError, match="non-negative"):
        jain_index([1.0, -1.0])


def test_share_ratios_are_relative_to_the_mean() -> None:
    assert share_ratios([1e6, 5e5]) == pytest.approx([4 / 3, 2 / 3])
    assert share_ratios([2.0, 1.0, 0.0]) == pytest.approx([2.0, 1.0, 0.0])
    assert share_ratios([0.0, 0.0]) == [None, None]
    assert share_ratios([]) == []


def sharing_tables() -> Tables:
    """20 s over "fwd" (1 Mbit/s, then 2 Mbit/s from 10 s), no propagation delay, so every window
    receives what it sends. Video 0 sends 1 Mbit/s throughout; video 1 sends 0.5 Mbit/s until 10 s,
    then 1 Mbit/s; video 2 (a third call) never sends; audio 3 sends 40 kbit/s."""
    dur = 20 * S

    def steady(fid: int, start_us: int, end_us: int, interval_us: int, size: int, id0: int) -> pl.DataFrame:
        return cbr(
            fid,
            start_us=start_us,
            end_us=end_us,
            interval_us=interval_us,
            size=size,
            payload=size - 50,
            owd_us=lambda i, s: 0,
            id0=id0,
        )

    v0 = steady(0, 0, dur, 10 * MS, 1250, 0)
    v1a = steady(1, 0, 10 * S, 20 * MS, 1250, 10_000)
    v1b = steady(1, 10 * S, dur, 10 * MS, 1250, 20_000)
    audio = steady(3, 0, dur, 20 * MS, 100, 30_000)
    flows = [
        video_flow(0),
        {**video_flow(1), "call": 1},
        {**video_flow(2), "call": 2},
        {"id": 3, "name": "call0.audio", "kind": "audio", "call": 0, "path": ["fwd"], "bottleneck": "fwd"},
    ]
    return Tables(
        packets=pl.concat([v0, v1a, v1b, audio]).sort("t_us"),
        frames=pl.DataFrame(),
        controller=pl.DataFrame(),
        links=pl.DataFrame(link_rows("fwd", dur, lambda t: 1_000_000 if t < 10 * S else 2_000_000)),
        feedback=pl.DataFrame(),
        meta=make_meta(20.0, flows),
    )


def test_fairness_of_two_flows_at_one_and_a_half_megabit() -> None:
    t = sharing_tables()
    ts = timeseries(t)
    f = fairness(t, ts, [0, 1], 0, 10 * S, settle_us=0)
    # Rates 1 and 0.5 Mbit/s: (1.5)² / (2 · 1.25) = 0.9; the mean is 0.75 Mbit/s.
    assert f["jain_index"] == pytest.approx(0.9)
    assert [x["mean_recv_rate_bps"] for x in f["flows"]] == [1_000_000.0, 500_000.0]
    assert [x["share_ratio"] for x in f["flows"]] == pytest.approx([4 / 3, 2 / 3])
    assert f["min_share_ratio"] == pytest.approx(2 / 3)
    assert f["max_share_ratio"] == pytest.approx(4 / 3)
    assert f["max_rate_ratio"] == 2.0
    assert f["within_band"] is True
    assert (f["start_s"], f["end_s"], f["settle_s"]) == (0.0, 10.0, 0.0)
    assert [x["name"] for x in f["flows"]] == ["call0.video0", "call0.video1"]
    json.dumps(f, allow_nan=False)


def test_a_starved_flow_counts_and_breaks_the_ratio_band() -> None:
    t = sharing_tables()
    f = fairness(t, timeseries(t), [0, 1, 2], 0, 10 * S, settle_us=0)
    # Rates 1, 0.5 and 0 Mbit/s: 2.25 / (3 · 1.25) = 0.6.
    assert f["jain_index"] == pytest.approx(0.6)
    assert [x["share_ratio"] for x in f["flows"]] == pytest.approx([2.0, 1.0, 0.0])
    assert f["within_band"] is False
    assert f["max_rate_ratio"] is None


def test_fairness_defaults_to_video_flows_and_settles() -> None:
    t = sharing_tables()
    ts = timeseries(t)
    f = fairness(t, ts, None, 0, 10 * S, settle_us=0)
    assert [x["id"] for x in f["flows"]] == [0, 1, 2]
    # The default settling time skips min(5 s, half the interval) before measuring.
    assert fairness(t, ts, [0, 1], 10 * S, 20 * S)["settle_s"] == 5.0
    assert fairness(t, ts, [0, 1], 10 * S, 14 * S)["settle_s"] == 2.0
    assert fairness(t, ts, [0])["within_band"] is None
    assert fairness(t, ts, [0])["jain_index"] == 1.0
    with pytest.raises(KeyError, match="flow 9"):
        fairness(t, ts, [0, 9])


def test_fairness_per_phase_of_the_bottleneck() -> None:
    t = sharing_tables()
    per_phase = fairness_per_phase(t, timeseries(t), [0, 1])
    assert [(p["index"], p["link"], p["start_s"], p["end_s"], p["capacity_bps"]) for p in per_phase] == [
        (0, "fwd", 0.0, 10.0, 1_000_000),
        (1, "fwd", 10.0, 20.0, 2_000_000),
    ]
    assert per_phase[0]["jain_index"] == pytest.approx(0.9)
    assert per_phase[1]["jain_index"] == pytest.approx(1.0)
    assert per_phase[1]["within_band"] is True
    assert [x["share_ratio"] for x in per_phase[1]["flows"]] == pytest.approx([1.0, 1.0])


def feedback_tables() -> Tables:
    """Call 0 (A → B): video 1 Mbit/s on "fwd"; RTCP feedback B → A (80 B every 50 ms) and sender
    reports A → B (100 B every second). Call 1 (B → A) has no media; its feedback leaves A over
    "fwd" (60 B every 100 ms): its direction comes from the call's ends, not the link's name."""
    dur = 20 * S
    video = cbr(VIDEO, end_us=dur, interval_us=10 * MS, size=1250, payload=1200)
    rx = cbr(1, end_us=dur, interval_us=50 * MS, size=80, payload=0, kind="rtcp", id0=10_000)
    tx = cbr(2, end_us=dur, interval_us=S, size=100, payload=0, kind="rtcp", id0=20_000)
    other = cbr(3, end_us=dur, interval_us=100 * MS, size=60, payload=0, kind="rtcp", id0=30_000)

    def rtcp(fid: int, name: str, call: int, link: str) -> dict[str, Any]:
        return {"id": fid, "name": name, "kind": "rtcp", "call": call, "path": [link], "bottleneck": link}

    flows = [
        video_flow(),
        rtcp(1, "call0.rtcp-rx", 0, "bwd"),
        rtcp(2, "call0.rtcp-tx", 0, "fwd"),
        rtcp(3, "call1.rtcp-rx", 1, "fwd"),
    ]
    meta = make_meta(20.0, flows)
    meta["calls"] = [
        {"id": 0, "controller": "none", "sender": "A", "receiver": "B"},
        {"id": 1, "controller": "none", "sender": "B", "receiver": "A"},
    ]
    return Tables(
        packets=pl.concat([video, rx, tx, other]).sort("t_us"),
        frames=pl.DataFrame(),
        controller=pl.DataFrame(),
        links=pl.DataFrame(link_rows("fwd", dur, lambda t: 2_000_000)),
        feedback=pl.DataFrame(),
        meta=meta,
    )


def test_feedback_overhead_per_call_and_direction() -> None:
    fb = feedback_overhead(feedback_tables())
    calls = {(c["call"], c["direction"]): c for c in fb["calls"]}
    assert list(calls) == [(0, "to_sender"), (0, "to_receiver"), (1, "to_sender")]
    rx, tx, other = calls.values()
    # 400 packets of 80 B in 20 s: 1600 B/s, 12.8 kbit/s; the call sent 2000 video packets of 1250 B.
    assert (rx["flows"], rx["packets_sent"], rx["bytes_sent"]) == ([1], 400, 32_000)
    assert rx["bytes_per_s"] == 1600.0
    assert rx["rate_bps"] == 12_800.0
    assert rx["media_rate_bps"] == 1_000_000.0
    assert rx["share_of_media"] == pytest.approx(32_000 / 2_500_000)
    assert (tx["packets_sent"], tx["rate_bps"]) == (20, 800.0)
    # Call 1 has no media: its overhead has no share.
    assert (other["rate_bps"], other["media_rate_bps"], other["share_of_media"]) == (4800.0, 0.0, None)
    assert fb["rate_bps"] == 12_800.0 + 800.0 + 4800.0
    assert fb["share_of_media"] == pytest.approx((32_000 + 2000 + 12_000) / 2_500_000)
    json.dumps(fb, allow_nan=False)


def test_feedback_overhead_over_an_interval_counts_by_send_time(tables: Tables) -> None:
    fb = feedback_overhead(tables, 10 * S, 15 * S)
    (rx,) = fb["calls"]
    assert (rx["call"], rx["direction"], rx["packets_sent"]) == (0, "to_sender", 100)
    assert rx["rate_bps"] == pytest.approx(80 * 8 / 0.05)


def cross_tables() -> Tables:
    """The two-phase link (1 → 2 Mbit/s at 10 s) shared by a video flow, a TCP flow (1500 B with
    1448 B of payload every 10 ms, 50 ms delay, packets sent in [12, 12.2) s dropped) and a CBR flow
    (1000 B with 972 B of payload every 8 ms, no loss)."""
    dur = 20 * S
    video = cbr(VIDEO, end_us=dur, interval_us=20 * MS, size=1250, payload=1200)
    tcp = cbr(
        5,
        end_us=dur,
        interval_us=10 * MS,
        size=1500,
        payload=1448,
        kind="tcp",
        id0=100_000,
        dropped=lambda i, s: 12 * S <= s < 12 * S + W,
    )
    udp = cbr(6, end_us=dur, interval_us=8 * MS, size=1000, payload=972, kind="cbr", id0=200_000)
    flows = [
        video_flow(),
        {"id": 5, "name": "tcp0", "kind": "tcp", "path": ["fwd"], "bottleneck": "fwd"},
        {"id": 6, "name": "cbr0", "kind": "cbr", "path": ["fwd"], "bottleneck": "fwd"},
    ]
    return Tables(
        packets=pl.concat([video, tcp, udp]).sort("t_us"),
        frames=pl.DataFrame(),
        controller=pl.DataFrame(),
        links=pl.DataFrame(link_rows("fwd", dur, lambda t: 1_000_000 if t < 10 * S else 2_000_000)),
        feedback=pl.DataFrame(),
        meta=make_meta(20.0, flows),
    )


def test_tcp_goodput_and_loss_over_the_run_and_per_phase() -> None:
    tcp, _ = cross_traffic(cross_tables())
    assert (tcp["id"], tcp["name"], tcp["kind"], tcp["bottleneck"]) == (5, "tcp0", "tcp", "fwd")
    # 2000 sent, 20 dropped; arrivals after 20 s (sent from 19.95 s) are outside the run: 1975.
    assert (tcp["packets_sent"], tcp["packets_dropped"], tcp["packets_received"]) == (2000, 20, 1975)
    assert tcp["loss_ratio"] == pytest.approx(0.01)
    assert tcp["throughput_bps"] == pytest.approx(1975 * 1500 * 8 / 20)
    assert tcp["goodput_bps"] == pytest.approx(1975 * 1448 * 8 / 20)
    assert tcp["bytes_received"] == 1975 * 1500
    p0, p1 = tcp["phases"]
    assert (p0["start_s"], p0["end_s"], p0["capacity_bps"]) == (0.0, 10.0, 1_000_000)
    # Phase 0 receives the packets sent before 9.95 s; phase 1 those sent from 9.95 s, less the drops.
    assert (p0["packets_received"], p0["loss_ratio"]) == (995, 0.0)
    assert p0["goodput_bps"] == pytest.approx(995 * 1448 * 8 / 10)
    assert (p1["packets_sent"], p1["packets_dropped"], p1["packets_received"]) == (1000, 20, 980)
    assert p1["loss_ratio"] == pytest.approx(0.02)
    assert p1["throughput_bps"] == pytest.approx(980 * 1500 * 8 / 10)


def test_cbr_goodput_and_loss() -> None:
    _, udp = cross_traffic(cross_tables())
    assert (udp["kind"], udp["packets_sent"], udp["packets_dropped"]) == ("cbr", 2500, 0)
    assert udp["loss_ratio"] == 0.0
    # Sent every 8 ms with 50 ms delay: the 2494 packets sent before 19.95 s arrive in the run.
    assert udp["packets_received"] == 2494
    assert udp["goodput_bps"] == pytest.approx(2494 * 972 * 8 / 20)
    assert [p["goodput_bps"] for p in udp["phases"]] == pytest.approx(
        [1244 * 972 * 8 / 10, 1250 * 972 * 8 / 10]
    )
    assert cross_traffic(cross_tables(), kinds=("tcp",))[0]["kind"] == "tcp"
    assert cross_traffic(two_phase()) == []


def test_summary_adds_sharing_keys_and_keeps_the_others(tables: Tables, ts: pl.DataFrame) -> None:
    s = summarize(tables, ts)
    assert list(s) == ["flows", "phases", "periods", "fairness", "feedback_overhead", "cross_traffic"]
    sharing = traffic_summary(tables, ts)
    assert {k: s[k] for k in sharing} == sharing
    assert [f["id"] for f in s["fairness"]["run"]["flows"]] == [VIDEO]
    assert s["fairness"]["run"]["jain_index"] == 1.0
    assert [p["index"] for p in s["fairness"]["phases"]] == [0, 1]
    assert s["feedback_overhead"]["calls"][0]["direction"] == "to_sender"
    assert s["cross_traffic"] == []
    json.dumps(s, allow_nan=False)
    cross = summarize(cross_tables())
    assert [f["id"] for f in cross["cross_traffic"]] == [5, 6]
    # Cross-traffic flows are in `flows` too, measured like any flow.
    assert [f["id"] for f in cross["flows"]] == [VIDEO, 5, 6]
    assert cross["flows"][1]["loss_ratio"] == cross["cross_traffic"][0]["loss_ratio"]


def test_mean_ci_brackets_the_mean_and_narrows_with_more_runs() -> None:
    rng = np.random.default_rng(1)
    few = list(rng.normal(10.0, 2.0, 5))
    many = list(rng.normal(10.0, 2.0, 200))
    lo, hi = mean_ci(few) or (np.nan, np.nan)
    assert lo < float(np.mean(few)) < hi
    lo_m, hi_m = mean_ci(many) or (np.nan, np.nan)
    assert lo_m < 10.0 < hi_m
    assert hi_m - lo_m < (hi - lo) / 3
    # About the normal interval for many runs: 2 x 1.96 sigma / sqrt(n).
    assert hi_m - lo_m == pytest.approx(2 * 1.96 * np.std(many) / np.sqrt(len(many)), rel=0.1)


def test_mean_ci_is_deterministic_and_needs_two_values() -> None:
    values = [0.61, 0.57, 0.66, None, float("nan"), 0.59]
    assert mean_ci(values) == mean_ci(list(values))
    spread = list(np.random.default_rng(5).normal(0.0, 1.0, 30))
    assert mean_ci(spread, seed=2) != mean_ci(spread)  # the seed is what fixes it
    assert mean_ci([]) is None and mean_ci([1.0]) is None and mean_ci([1.0, None]) is None
    assert mean_ci([2.0, 2.0, 2.0]) == (2.0, 2.0)
    lo, hi = mean_ci([1.0, 3.0]) or (np.nan, np.nan)
    assert 1.0 <= lo <= hi <= 3.0
    with pytest.raises(ValueError, match="confidence"):
        mean_ci([1.0, 2.0], confidence=1.0)


def _recovery_tables() -> Tables:
    """10 s of one video flow, a packet (and a frame) every 10 ms. Packets 100, 200 and 300 are
    dropped; 100 and 200 are repaired by retransmissions (`rtx` rows carry the number they
    repair), 300's retransmission is dropped too. Frames 100 and 300 never render; frame 500
    renders at 5.4 s, a freeze, with the frames captured meanwhile right after it. The receiver
    sent 3 NACKs and 1 PLI."""

    def shown(i: int) -> int | None:
        return None if i in (100, 300) else max(i * 10 * MS + 50 * MS, 5_400 * MS if i >= 500 else 0)

    dur = 10 * S
    lost = {100, 200, 300}
    media = cbr(
        VIDEO, end_us=dur, interval_us=10 * MS, size=1000, payload=900, dropped=lambda i, s: i in lost
    )

    def repair(i: int) -> pl.DataFrame:
        at = i * 10 * MS + 60 * MS
        rows = cbr(
            VIDEO, start_us=at, end_us=at + 1, interval_us=MS, size=1002, payload=900, kind="rtx",
            dropped=lambda _i, _s: i == 300, id0=10_000 + i,
        )  # fmt: skip
        return rows.with_columns(seq=pl.lit(i, pl.Int32))

    rtx = pl.concat([repair(i) for i in sorted(lost)])
    frames = pl.DataFrame(
        [
            {
                "flow": VIDEO,
                "frame": i,
                "capture_us": i * 10 * MS,
                "size": 900,
                "keyframe": i == 0,
                "packets": 1,
                "complete_us": shown(i),
                "freeze": i == 500,
            }
            for i in range(1000)
        ]
    )
    feedback = pl.DataFrame(
        {
            "t_us": [1_050_000, 2_050_000, 3_050_000, 3_100_000],
            "call": [0] * 4,
            "kind": ["nack", "nack", "nack", "pli"],
            "size": [40] * 4,
            "packets_reported": [1, 1, 1, 0],
        }
    )
    return Tables(
        packets=pl.concat([media, rtx]).sort("t_us"),
        frames=frames,
        controller=pl.DataFrame(),
        links=pl.DataFrame(link_rows("fwd", dur, lambda t: 10_000_000)),
        feedback=feedback,
        meta=make_meta(10.0, [video_flow()]),
    )


def test_loss_recovery_and_playout_metrics() -> None:
    t = _recovery_tables()
    m = flow_metrics(t, timeseries(t), VIDEO, 0, 10 * S)
    # 3 of 1000 media packets dropped (and 1 of 3 retransmissions), 1 never repaired.
    assert m["loss_ratio"] == pytest.approx(4 / 1003)
    assert m["residual_loss_ratio"] == pytest.approx(1 / 1000)
    assert m["rtx_overhead"] == pytest.approx(3 * 1002 / (1000 * 1000))
    assert (m["nack_count"], m["pli_count"]) == (3, 1)
    # 998 of 1000 frames rendered (when complete), 993 of them before 10 s.
    assert m["frame_loss_ratio"] == pytest.approx(2 / 1000)
    assert m["fps_mean"] == pytest.approx(99.3)
    assert m["freezes"] == 1
    # The freeze lasted from frame 499's render (5.04 s) to frame 500's (5.4 s).
    assert m["freeze_duration_ms"] == pytest.approx(360.0)
    assert m["frame_delay_p50_ms"] == pytest.approx(50.0)
    # Goodput counts original media only: the 997 delivered originals.
    assert m["mean_goodput_bps"] == pytest.approx(997 * 900 * 8 / 10, rel=0.01)


def test_the_media_send_rate_leaves_out_retransmissions() -> None:
    t = _recovery_tables()
    ts = timeseries(t, window_us=S)
    send, media = column(ts, VIDEO, "send_rate_bps"), column(ts, VIDEO, "media_send_rate_bps")
    # 100 media packets of 1000 bytes a second; the retransmissions of 100, 200 and 300 go out
    # at 1.06, 2.06 and 3.06 s.
    assert media == [800_000.0] * 10
    assert send == [800_000.0 + (1002 * 8 if s in (1, 2, 3) else 0) for s in range(10)]


def test_recovery_metrics_of_an_audio_flow_are_null() -> None:
    t = two_phase()
    m = flow_metrics(t, timeseries(t), AUDIO, 0, 20 * S)
    keys = ("residual_loss_ratio", "rtx_overhead", "nack_count", "pli_count", "frame_loss_ratio")
    assert all(m[k] is None for k in keys)
    assert m["freeze_duration_ms"] is None
