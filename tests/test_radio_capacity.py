"""The capacity of a radio hop and the utilisation of a flow over Wi-Fi or LTE (docs/metrics.md,
"Utilisation"): closed-form cases of `radio_window_capacity` on a links table made here, and the
seeds' Wi-Fi and LTE runs, whose calls' utilisation was measured against the 100 Mbit/s wire
behind the AP (0.01-0.02) or not at all (an LTE buffer has no capacity of its own)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import polars as pl
import pytest

from rtcbench.analysis.capacity import radio_hop_keys, radio_window_capacity, wired_hop_keys
from rtcbench.runner import RunResult

W = 200_000
META: dict[str, Any] = {
    "links": [
        {"name": "wlan:AP", "wifi": {"bss": "b", "node": "AP", "role": "ap"}},
        {"name": "wlan:S1", "wifi": {"bss": "b", "node": "S1", "role": "station"}},
        {"name": "wlan:S2", "wifi": {"bss": "b", "node": "S2", "role": "station"}},
        {"name": "wire", "delay_us": 150_000},
        {"name": "u1:dl", "lte": {"cell": "c", "ue": "u1", "direction": "dl"}},
        {"name": "u2:dl", "lte": {"cell": "c", "ue": "u2", "direction": "dl"}},
        {"name": "u1:ul", "lte": {"cell": "c", "ue": "u1", "direction": "ul"}},
    ]
}


def _links(rows: list[tuple[int, str, float | None, int | None, float | None, int | None]]) -> pl.LazyFrame:
    """Links rows (t_us, link, airtime_share, delivered_bps, rb_share, phy_rate_bps)."""
    columns = ("t_us", "link", "airtime_share", "delivered_bps", "rb_share", "phy_rate_bps")
    types = (pl.Int64, pl.String, pl.Float64, pl.Int64, pl.Float64, pl.Int64)
    return pl.LazyFrame(rows, schema=dict(zip(columns, types, strict=True)), orient="row")


def _capacity(links: pl.LazyFrame, hop: str, shift_us: int = 0) -> dict[int, float]:
    out = radio_window_capacity(links, META, [(hop, shift_us)], W)
    return dict(zip(out.get_column("_w"), out.get_column("capacity_bps"), strict=True))


WIFI = [
    # Two samples in window 0: S1 carries 20 Mbit/s while on air, the others take 0.4 of it.
    (100_000, "wlan:AP", 0.3, 0, None, None),
    (100_000, "wlan:S1", 0.2, 4_000_000, None, 54_000_000),
    (100_000, "wlan:S2", 0.1, 1_000_000, None, 54_000_000),
    (200_000, "wlan:AP", 0.3, 0, None, None),
    (200_000, "wlan:S1", 0.4, 8_000_000, None, 54_000_000),
    (200_000, "wlan:S2", 0.1, 1_000_000, None, 54_000_000),
]


def test_a_wifi_node_could_have_its_rate_on_air_over_the_air_the_others_left() -> None:
    # 12 Mbit over 0.6 s of air: 20 Mbit/s on air; the others left 1 - 0.4 of the medium.
    assert _capacity(_links(WIFI), "wlan:S1") == {0: pytest.approx(12e6, rel=1e-12)}


def test_a_wifi_node_could_have_at_least_the_air_it_used() -> None:
    # Colliding: S1 on air 0.7 of the time, the others 0.5: the shares add up to 1.2.
    rows = [
        (t, link, share, bits, None, None)
        for t in (100_000, 200_000)
        for link, share, bits in (("wlan:AP", 0.4, 0), ("wlan:S1", 0.7, 7_000_000), ("wlan:S2", 0.1, 0))
    ]
    assert _capacity(_links(rows), "wlan:S1") == {0: pytest.approx(7e6, rel=1e-12)}


def test_a_node_that_sent_nothing_has_no_capacity_and_the_first_sample_none() -> None:
    rows = [
        (100_000, "wlan:S1", None, None, None, None),
        *((t, "wlan:S1", 0.0, 0, None, None) for t in (110_000, 120_000)),
    ]
    assert _capacity(_links(rows), "wlan:S1") == {}


def test_an_lte_ue_could_have_the_band_at_its_mcs_over_the_prbs_the_others_left() -> None:
    rows = [
        (100_000, "u1:dl", None, None, 0.3, 10_000_000),
        (100_000, "u2:dl", None, None, 0.5, 30_000_000),
        (100_000, "u1:ul", None, None, 0.9, 5_000_000),  # the other direction does not count
        (200_000, "u1:dl", None, None, 0.6, 20_000_000),
        (200_000, "u2:dl", None, None, 0.25, 30_000_000),
    ]
    # 10 Mbit/s x (1 - 0.5) and 20 Mbit/s x (1 - 0.25), the mean of the two samples.
    assert _capacity(_links(rows), "u1:dl") == {0: pytest.approx(10e6, rel=1e-12)}


def test_a_hop_is_lined_up_with_the_receptions_by_the_delay_after_it() -> None:
    flow = {"path": ["wlan:S1", "wire"]}
    ((hop, shift),) = radio_hop_keys(META, [flow])
    assert (hop, shift) == ("wlan:S1", 150_000)
    # The samples of window 0 count 150 ms later: in window 1 (t = 100 ms) and 1 (t = 200 ms).
    assert _capacity(_links(WIFI), hop, shift) == {1: pytest.approx(12e6, rel=1e-12)}


def test_a_path_across_a_radio_hop_counts_every_wired_link_of_it() -> None:
    """A wired path's capacity is its bottleneck's; a path across a radio medium counts each of its
    wired links, each lined up by the delay after it: the medium is its bottleneck unless a wired
    link is narrower than the medium's lowest rate, and may still give more than a wider one."""
    meta = {"links": [*META["links"], {"name": "core", "delay_us": 5_000}]}
    wired = {"path": ["core", "wire"], "bottleneck": "wire"}
    assert wired_hop_keys(meta, wired) == [("wire", 150_000)]
    down = {"path": ["core", "wire", "wlan:AP"], "bottleneck": "wlan:AP"}
    assert wired_hop_keys(meta, down) == [("core", 155_000), ("wire", 150_000)]
    between_stations = {"path": ["wlan:S1", "wlan:AP"], "bottleneck": "wlan:S1"}
    assert wired_hop_keys(meta, between_stations) == []


def test_a_radio_bottleneck_keeps_the_wire_in_front_of_it(
    simulate: Callable[..., tuple[RunResult, ...]],
) -> None:
    """seed000-5.3.8 at location A: the downloads' bottleneck is the AP's queue, which could have
    given up to 121 Mbit/s in a window (gcc, seed 1), more than the 100 Mbit/s Ethernet before it;
    their path's capacity never exceeds the wire."""
    (r,) = simulate("seed000-5.3.8", sets=("pc3=A", "pc4=A"))
    flows = {f["name"]: f for f in r.summary["meta"]["flows"]}
    ts = r.timeseries
    for name in ("tcp-down1", "tcp-down2", "down.video"):
        assert flows[name]["bottleneck"] == "wlan:AP", flows[name]
        cap = ts.filter(pl.col("flow_name") == name).get_column("capacity_bps").drop_nulls()
        assert cap.len() > 1000 and cap.max() <= 100e6, (name, cap.len(), cap.max())


def test_the_calls_over_wifi_and_lte_have_a_utilisation_between_0_and_1(
    simulate: Callable[..., tuple[RunResult, ...]],
) -> None:
    """seed000-5.3.8 (TCP up and down through the AP) and seed000-5.4.7 (TCP on the call's UE):
    every video and TCP flow has a path capacity and a utilisation of it in (0, 1]; a saturated
    TCP upload takes nearly all its station could have (measured 0.94-0.99)."""
    runs = [*simulate("seed000-5.3.8", sets=("pc3=A", "pc4=A")), *simulate("seed000-5.4.7")]
    for r in runs:
        for f in r.summary["flows"]:
            if f["kind"] in ("video", "tcp"):
                assert f["mean_capacity_bps"] is not None, (r.summary["variant"], f["name"])
                assert 0 < f["utilization"] <= 1.0, (r.summary["variant"], f["name"], f["utilization"])
    wifi = {f["name"]: f for f in runs[0].summary["flows"]}
    assert wifi["tcp-up1"]["utilization"] > 0.85 and wifi["tcp-up2"]["utilization"] > 0.85
