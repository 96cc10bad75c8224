"""Wi-Fi access networks in runs (`[[wifi]]`, docs/wifi.md, docs/scenarios.md "Wi-Fi"): routes
across a BSS, its nodes' queues as links in `meta` and the links table, the MAC columns and the
summary's `wifi` block, the drop reasons a BSS gives, and the modes that refuse a BSS. The
behaviour of the built-in Wi-Fi scenarios is `tests/test_behaviour_wifi.py`."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import rtcbench
from rtcbench import analysis

MAC_COLUMNS = (
    "airtime_share",
    "mac_retries",
    "mac_drops",
    "queue_drops",
    "ampdu_mpdus",
    "phy_rate_bps",
    "congestion_level",
    "mac_capacity_bps",
    "extended_attempts",
)

HOME = """
id = "wifi-home"
duration = "20s"

[[links]]
name = "up"
from = "AP"
to = "W"
capacity = "1Mbps"
delay = "20ms"
queue = {{ size = "300ms" }}

[[links]]
name = "down"
from = "W"
to = "AP"
delay = "20ms"

[[wifi]]
name = "wlan"
ap = "AP"
{wifi}

[[wifi.stations]]
node = "S1"
{station}

[[wifi.stations]]
node = "S2"

[[calls]]
from = "S1"
to = "W"
{extra}
"""


def _write(tmp_path: Path, wifi: str = "", station: str = "", extra: str = "") -> Path:
    path = tmp_path / "home.toml"
    path.write_text(HOME.format(wifi=wifi, station=station, extra=extra))
    return path


def _run(path: Path, tmp_path: Path) -> rtcbench.RunResult:
    (r,) = rtcbench.run(path, "gcc", 1, tmp_path / "out", figure=False)
    return r


def test_a_bss_node_is_a_link_of_the_trace(tmp_path: Path) -> None:
    r = _run(_write(tmp_path), tmp_path)
    meta = r.summary["meta"]
    assert meta["nodes"] == ["AP", "W", "S1", "S2"]
    wifi = {lk["name"]: lk["wifi"] for lk in meta["links"] if "wifi" in lk}
    assert wifi == {
        "wlan:AP": {"bss": "wlan", "node": "AP", "role": "ap"},
        "wlan:S1": {"bss": "wlan", "node": "S1", "role": "station"},
        "wlan:S2": {"bss": "wlan", "node": "S2", "role": "station"},
    }
    flows = {f["name"]: f for f in meta["flows"]}
    # The video leaves S1 through its MAC queue, then crosses the 1 Mbit/s link, its bottleneck;
    # the feedback comes back over the link and down through the AP's queue.
    assert flows["call0.video"]["path"] == ["wlan:S1", "up"]
    assert flows["call0.video"]["bottleneck"] == "up"
    assert flows["call0.rtcp-rx"]["path"] == ["down", "wlan:AP"]

    links = r.tables.links
    assert all(c in links.columns for c in MAC_COLUMNS)
    wired = links.filter(pl.col("link") == "up")
    assert wired.select(MAC_COLUMNS).null_count().row(0) == (wired.height,) * len(MAC_COLUMNS)
    s1 = links.filter(pl.col("link") == "wlan:S1")
    assert s1.height == wired.height  # sampled together, every 10 ms
    assert s1["capacity_bps"].is_null().all() and s1["queue_limit_bytes"].is_null().all()
    assert s1["phy_rate_bps"].drop_nulls().unique().to_list() == [65_000_000]  # HT MCS 7 by default
    assert links.filter(pl.col("link") == "wlan:AP")["phy_rate_bps"].is_null().all()
    # The station sends about the call's rate: a few percent of the channel's time, one MPDU or a
    # few per PPDU; nobody adapts a retry limit here.
    share = s1["airtime_share"].drop_nulls().mean()
    assert isinstance(share, float) and 0.005 < share < 0.2, share
    assert s1["ampdu_mpdus"].drop_nulls().min() >= 1.0
    assert s1["extended_attempts"].is_null().all()

    nodes = {n["node"]: n for n in r.summary["wifi"]}
    assert set(nodes) == {"AP", "S1", "S2"}
    assert nodes["S1"]["phy_rate_bps"] == 65e6 and nodes["AP"]["phy_rate_bps"] is None
    assert nodes["S1"]["airtime_share"] == pytest.approx(share)
    assert nodes["S2"]["airtime_share"] == 0.0  # nothing to send or to acknowledge
    assert "extended_attempts" not in nodes["S1"]


def test_a_run_without_a_bss_has_no_wifi_summary_and_null_mac_columns() -> None:
    (r,) = rtcbench.run("rfc8867-5.1", "gcc", 1, sets=["duration=5s", "delay=50ms", "mechanism=link-rate"])
    assert "wifi" not in r.summary
    assert r.tables.links.select(MAC_COLUMNS).null_count().row(0) == (r.tables.links.height,) * len(
        MAC_COLUMNS
    )


def _drops(r: rtcbench.RunResult) -> dict[tuple[str, str], int]:
    d = r.tables.packets.filter(pl.col("event") == "dropped").group_by("link", "reason").len()
    return {(row["link"], row["reason"]): row["len"] for row in d.iter_rows(named=True)}


def test_a_full_ap_queue_drops_as_queue_full_at_the_ap(tmp_path: Path) -> None:
    # A 10-packet AP queue and 20 Mbit/s of CBR down to S2 at MCS 0 (6.5 Mbit/s).
    cbr = '[[cbr]]\nfrom = "W"\nto = "S2"\nrate = "20Mbps"\nstart = "5s"\nstop = "10s"\n'
    wifi = "ap_queue = { packets = 10 }\nphy = { mcs = 0 }"
    r = _run(_write(tmp_path, wifi=wifi, extra=cbr), tmp_path)
    drops = _drops(r)
    assert drops.get(("wlan:AP", "queue_full"), 0) > 1000, drops
    ap = next(n for n in r.summary["wifi"] if n["node"] == "AP")
    assert ap["queue_drops"] == drops[("wlan:AP", "queue_full")]
    # The CBR and the call's feedback share the AP's one best-effort FIFO.
    links = r.tables.links.filter(pl.col("link") == "wlan:AP")
    assert links["queue_bytes"].max() <= 10 * 1500


def test_channel_errors_beyond_the_retry_limit_drop_as_retry_limit(tmp_path: Path) -> None:
    # Half of S1's MPDU attempts fail and it gives up after 2: a quarter of its packets is lost.
    r = _run(_write(tmp_path, wifi="retry_limit = 2", station="per = 0.5"), tmp_path)
    drops = _drops(r)
    sent = r.tables.packets.filter((pl.col("event") == "sent") & (pl.col("flow") == 0)).height
    lost = drops[("wlan:S1", "retry_limit")]
    s1 = next(n for n in r.summary["wifi"] if n["node"] == "S1")
    assert s1["mac_drops"] >= lost  # the video's and everything else S1 sent
    video = r.tables.packets.filter(
        (pl.col("event") == "dropped") & (pl.col("flow") == 0) & (pl.col("reason") == "retry_limit")
    ).height
    assert video / sent == pytest.approx(0.25, abs=0.03)
    assert s1["mac_retries"] > 0.5 * sent


def test_a_lifetime_drops_what_waited_too_long(tmp_path: Path) -> None:
    # A 2-ms lifetime at a station at MCS 0 behind 3 Mbit/s of its own CBR: packets expire.
    cbr = '[[cbr]]\nfrom = "S1"\nto = "AP"\nrate = "3Mbps"\n'
    wifi = 'station_queue = { max_delay = "2ms" }'
    r = _run(_write(tmp_path, wifi=wifi, station="phy = { mcs = 0 }", extra=cbr), tmp_path)
    assert _drops(r).get(("wlan:S1", "lifetime"), 0) > 0


def test_the_retry_adaptation_and_an_interferer_reach_the_trace(tmp_path: Path) -> None:
    interferer = '[[wifi.interferers]]\nperiod = "33ms"\nbusy = "10.75ms"\nheard_by = ["AP"]'
    station = "retry_adaptation = { extension = 7, cl_threshold = 0.5, buffer_threshold = 100 }"
    r = _run(_write(tmp_path, wifi=interferer, station=station), tmp_path)
    s1 = r.tables.links.filter(pl.col("link") == "wlan:S1")
    # The hidden interferer makes S1 retry; the adaptation grants attempts beyond 7 and reports
    # its congestion level and capacity estimate (Chen et al. 2015 eqs. (5), (6)).
    assert s1["extended_attempts"].sum() > 0
    assert s1["congestion_level"].drop_nulls().len() == s1.height
    assert s1["mac_capacity_bps"].drop_nulls().max() > 1_000_000
    node = next(n for n in r.summary["wifi"] if n["node"] == "S1")
    assert node["extended_attempts"] == s1["extended_attempts"].sum()
    assert node["congestion_level_p95"] is not None
    assert r.tables.links.filter(pl.col("link") == "wlan:S2")["extended_attempts"].is_null().all()


def test_the_same_seed_gives_the_same_wifi_run(tmp_path: Path) -> None:
    path = _write(tmp_path, station="per = 0.2")
    a = _run(path, tmp_path / "a")
    b = _run(path, tmp_path / "b")
    assert a.tables.links.equals(b.tables.links)
    assert a.tables.packets.equals(b.tables.packets)


ANOMALY = """
id = "wifi-anomaly"
duration = "30s"
[[links]]
name = "ap-w"
from = "AP"
to = "W"
capacity = "100Mbps"
delay = "1ms"
queue = { kind = "droptail", size = "1500KB" }
[[links]]
name = "w-ap"
from = "W"
to = "AP"
capacity = "100Mbps"
delay = "1ms"
queue = { kind = "droptail", size = "1500KB" }
[[wifi]]
name = "wlan"
ap = "AP"
ap_queue = { mode = "shared", packets = 1000 }
[[wifi.stations]]
node = "FAST"
phy = { mcs = 15 }
[[wifi.stations]]
node = "SLOW"
phy = { mcs = 0 }
[[tcp]]
name = "dl"
from = "W"
to = "FAST"
[[tcp]]
name = "slow-up"
from = "SLOW"
to = "W"
start = "10s"
stop = "20s"
"""


def test_a_slow_station_moves_the_competition_into_the_bss(tmp_path: Path) -> None:
    """Why a BSS counts at its slowest station's rate when a path's bottleneck is chosen
    (docs/scenarios.md, "A path's bottleneck"): a TCP download to a station at MCS 15
    (130 Mbit/s) behind a 100 Mbit/s wire fills the wire's queue while the MCS 0 station is idle,
    and the AP's once that station uploads, as the slow station's frames take the air (Heusse et
    al. 2003). Measured (seed 1, from 2 s after each change): 99 Mbit/s with 1.23 MB in the
    wire's queue and 43 kB in the AP's; 52 Mbit/s with 50 kB and 1.06 MB."""
    path = tmp_path / "anomaly.toml"
    path.write_text(ANOMALY)
    r = _run(path, tmp_path)
    flows = {f["name"]: f for f in r.summary["meta"]["flows"]}
    assert flows["dl"]["bottleneck"] == "wlan:AP"  # the medium's lowest rate: 6.5 Mbit/s

    def over(a: int, b: int) -> tuple[float, float, float]:
        def within(df: pl.DataFrame) -> pl.DataFrame:
            return df.filter((pl.col("t_us") >= (a + 2) * 1_000_000) & (pl.col("t_us") < b * 1_000_000))

        rate = within(r.timeseries.filter(pl.col("flow_name") == "dl"))["recv_rate_bps"].mean()
        queues = within(r.tables.links).group_by("link").agg(pl.col("queue_bytes").mean())
        q = dict(queues.iter_rows())
        assert isinstance(rate, float)
        return rate, q["w-ap"], q["wlan:AP"]

    (alone, wire_alone, ap_alone), (shared, wire_shared, ap_shared) = over(0, 10), over(10, 20)
    assert wire_alone > 10 * ap_alone, (wire_alone, ap_alone)
    assert ap_shared > 10 * wire_shared, (wire_shared, ap_shared)
    assert shared < 0.7 * alone, (alone, shared)
    # The download's periods see the upload that halved it.
    cuts = [(p.start_s, p.end_s) for p in analysis.periods(r.tables, "wlan:AP")]
    assert cuts == [(0.0, 10.0), (10.0, 20.0), (20.0, 30.0)], cuts
