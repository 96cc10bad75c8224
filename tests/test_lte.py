"""LTE access networks in runs (`[[lte]]`, docs/lte.md): each UE's two buffers as links in `meta`
and the links table, the scheduler's columns and the summary's `lte` block, `harq_failure` drops,
the LTE table of the report and of `rtcbench run`, and the modes that refuse a cell.

Most tests share one run of seed 000 §5.4.7's near variant (two UEs behind a 5 MHz cell, a call
both ways and TCP on both UEs), made once through the command line; a five-second cell with a
high block error rate gives HARQ failures, and a five-second wired run the case without a cell."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import rtcbench
from rtcbench.report import build_report
from rtcbench.results import run_folders

ROOT = Path(__file__).resolve().parent.parent
SEED_4G = ROOT / "scenarios" / "seeds" / "000-5.4.7-4g.toml"
NEAR = "location=near"
RTCBENCH = [sys.executable, "-m", "rtcbench.cli"]

LTE_COLUMNS = {"rb_share": pl.Float64, "scheduled_bps": pl.Int64, "queue_delay_us": pl.Int64, "cqi": pl.Int64}
WIFI_ONLY = ("airtime_share", "ampdu_mpdus", "congestion_level", "mac_capacity_bps", "extended_attempts")
BUFFERS = ("cell:PC3:dl", "cell:PC3:ul", "cell:PC4:dl", "cell:PC4:ul")
SUMMARY_KEYS = {
    "link", "cell", "ue", "direction", "scheduled_bps", "rb_share", "harq_retransmissions",
    "harq_failures", "queue_drops", "queue_delay_ms_p50", "queue_delay_ms_p95", "queue_delay_ms_max",
    "queue_bytes_p95", "cqi",
}  # fmt: skip

LOSSY_CELL = """
id = "lte-lossy"
duration = "5s"

[[links]]
name = "up"
from = "ENB"
to = "W"
capacity = "100Mbps"
delay = "10ms"
queue = { size = "100ms" }

[[links]]
name = "down"
from = "W"
to = "ENB"
capacity = "100Mbps"
delay = "10ms"
queue = { size = "100ms" }

[[lte]]
name = "cell"
enb = "ENB"
harq_bler = [0.5, 0.5, 0.5, 0.5]

[[lte.ues]]
node = "U"
cqi = 9

[[calls]]
from = "U"
to = "W"
"""
"""Every HARQ transmission fails with probability 0.5: one transport block in 16 is lost."""


@dataclass(frozen=True)
class Run:
    folder: Path
    summary: dict[str, Any]
    links: pl.DataFrame
    packets: pl.DataFrame


def _load(folder: Path) -> Run:
    t = rtcbench.load_tables(folder)
    return Run(folder, rtcbench.read_summary(folder), t.links, t.packets)


@pytest.fixture(scope="module")
def near_cli(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Run]:
    """`rtcbench run` of the near variant (about 5 s), its output and its results folder."""
    out = tmp_path_factory.mktemp("lte-near")
    p = subprocess.run(
        [*RTCBENCH, "run", str(SEED_4G), "--set", NEAR, "--out", str(out), "--no-figure"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert p.returncode == 0, p.stderr
    (folder,) = run_folders(out)
    return p, _load(folder)


@pytest.fixture(scope="module")
def near(near_cli: tuple[subprocess.CompletedProcess[str], Run]) -> Run:
    return near_cli[1]


@pytest.fixture(scope="module")
def wired(tmp_path_factory: pytest.TempPathFactory) -> Run:
    out = tmp_path_factory.mktemp("wired")
    sets = ["duration=5s", "delay=50ms", "mechanism=link-rate"]
    (r,) = rtcbench.run("rfc8867-5.1", "gcc", 1, out, sets, figure=False)
    assert r.path is not None
    return _load(r.path)


def _nulls(df: pl.DataFrame, columns: list[str]) -> list[int]:
    return list(df.select(columns).null_count().row(0))


DIRECTION = pl.col("link").str.slice(-2).alias("dir")
"""`dl` or `ul`, from a buffer's name."""


def _drops(r: Run) -> dict[tuple[str, str], int]:
    d = r.packets.filter(pl.col("event") == "dropped").group_by("link", "reason").len()
    return {(row["link"], row["reason"]): row["len"] for row in d.iter_rows(named=True)}


def test_each_ue_has_a_downlink_and_an_uplink_buffer_in_meta(near: Run) -> None:
    links = {lk["name"]: lk for lk in near.summary["meta"]["links"]}
    lte = {name: lk["lte"] for name, lk in links.items() if "lte" in lk}
    assert lte == {
        "cell:PC3:dl": {"cell": "cell", "ue": "PC3", "direction": "downlink"},
        "cell:PC3:ul": {"cell": "cell", "ue": "PC3", "direction": "uplink"},
        "cell:PC4:dl": {"cell": "cell", "ue": "PC4", "direction": "downlink"},
        "cell:PC4:ul": {"cell": "cell", "ue": "PC4", "direction": "uplink"},
    }
    assert (links["cell:PC3:dl"]["from"], links["cell:PC3:dl"]["to"]) == ("ENB", "PC3")
    assert (links["cell:PC3:ul"]["from"], links["cell:PC3:ul"]["to"]) == ("PC3", "ENB")
    assert "lte" not in links["pgw-enb"] and "wifi" not in links["cell:PC3:dl"]
    # The call's video goes up through PC3's uplink buffer and down through its downlink buffer.
    flows = {f["name"]: f for f in near.summary["meta"]["flows"]}
    assert flows["up.video"]["path"][0] == "cell:PC3:ul"
    assert flows["down.video"]["path"][-1] == "cell:PC3:dl"


def test_the_links_table_has_the_scheduler_columns_null_for_wired_links(near: Run) -> None:
    links = near.links
    assert {c: links.schema[c] for c in LTE_COLUMNS} == LTE_COLUMNS
    wired = links.filter(~pl.col("link").is_in(BUFFERS))
    assert wired.height > 0
    assert _nulls(wired, list(LTE_COLUMNS)) == [wired.height] * len(LTE_COLUMNS)

    lte = links.filter(pl.col("link").is_in(BUFFERS))
    assert lte.height == 4 * links.filter(pl.col("link") == "pgw-enb").height  # sampled together
    # Only the first sample has no interval to share or rate.
    assert lte["rb_share"].null_count() == lte["scheduled_bps"].null_count() == 4
    always = ["queue_delay_us", "cqi", "mac_retries", "mac_drops", "queue_drops", "phy_rate_bps"]
    assert _nulls(lte, always) == [0] * len(always)
    never = [*WIFI_ONLY, "capacity_bps", "queue_limit_bytes"]
    assert _nulls(lte, never) == [lte.height] * len(never)
    assert lte["rb_share"].min() >= 0.0
    # The UEs of a direction share its PRBs: over the run, no more than all of them.
    per_sample = lte.group_by(DIRECTION, "t_us").agg(pl.col("rb_share").sum())
    assert per_sample.group_by("dir").agg(pl.col("rb_share").mean())["rb_share"].max() <= 1.0
    assert lte["queue_delay_us"].min() >= 0 and lte["scheduled_bps"].min() >= 0
    # An empty buffer has no delay; a non-empty one is as old as its head packet.
    assert (lte.filter(pl.col("queue_bytes") == 0)["queue_delay_us"] == 0).all()
    # Fixed CQIs (13 down, 10 up near the antenna), so the whole band's rate is fixed too.
    by_dir = lte.group_by(DIRECTION).agg(pl.col("cqi").unique(), pl.col("phy_rate_bps").unique())
    assert {r["dir"]: r["cqi"] for r in by_dir.iter_rows(named=True)} == {"dl": [13], "ul": [10]}
    assert all(len(r) == 1 and r[0] > 0 for r in by_dir["phy_rate_bps"])


def test_no_sample_gives_the_ues_of_a_direction_more_than_its_prbs(near: Run) -> None:
    lte = near.links.filter(pl.col("link").is_in(BUFFERS))
    per_sample = lte.group_by(DIRECTION, "t_us").agg(pl.col("rb_share").sum())
    assert per_sample["rb_share"].max() <= 1.0 + 1e-9


def test_the_summary_has_one_lte_entry_per_ue_and_direction(near: Run) -> None:
    buffers = near.summary["lte"]
    assert [b["link"] for b in buffers] == list(BUFFERS)
    drops = _drops(near)
    for b in buffers:
        assert set(b) == SUMMARY_KEYS, b["link"]
        rows = near.links.filter(pl.col("link") == b["link"])
        assert 0.0 < b["rb_share"] <= 1.0
        assert b["scheduled_bps"] > 0
        assert 0.0 <= b["queue_delay_ms_p50"] <= b["queue_delay_ms_p95"] <= b["queue_delay_ms_max"]
        assert b["queue_delay_ms_max"] == pytest.approx(rows["queue_delay_us"].max() / 1e3)
        assert b["harq_retransmissions"] == rows["mac_retries"].sum() > 0  # a 10 % first-transmission BLER
        assert b["harq_failures"] == rows["mac_drops"].sum()
        # Every queue drop is in the packets table at the buffer, with its reason.
        assert b["queue_drops"] == sum(drops.get((b["link"], why), 0) for why in ("queue_full", "lifetime"))
        assert b["queue_bytes_p95"] >= 0
        assert b["cqi"] == (13.0 if b["direction"] == "downlink" else 10.0)
    # TCP on the call's own UE fills the eNB's deep buffer for it: seconds of queuing (Table
    # 6.9); the phone's 150-kB modem buffer holds a fraction of a second and overflows.
    down = next(b for b in buffers if b["link"] == "cell:PC3:dl")
    up = next(b for b in buffers if b["link"] == "cell:PC3:ul")
    assert down["queue_delay_ms_p95"] > 1000 and down["queue_drops"] > 0
    assert up["queue_delay_ms_max"] < 500 and up["queue_drops"] > 0


def test_a_transport_block_lost_to_harq_drops_its_packets_as_harq_failure(tmp_path: Path) -> None:
    path = tmp_path / "lossy.toml"
    path.write_text(LOSSY_CELL)
    (r,) = rtcbench.run(path, "gcc", 1, tmp_path / "out", figure=False)
    assert r.path is not None
    run = _load(r.path)
    drops = _drops(run)
    assert set(drops) <= {("cell:U:dl", "harq_failure"), ("cell:U:ul", "harq_failure")}, drops
    ul = next(b for b in run.summary["lte"] if b["link"] == "cell:U:ul")
    assert drops[("cell:U:ul", "harq_failure")] > 0 and ul["harq_failures"] > 0
    # A block lost after four transmissions was retransmitted three times.
    assert ul["harq_retransmissions"] >= 3 * ul["harq_failures"]
    video = run.packets.filter((pl.col("flow") == 0) & (pl.col("event") == "dropped"))
    assert video.height > 0 and (video["reason"] == "harq_failure").all()
    # Same seed, same run.
    (again,) = rtcbench.run(path, "gcc", 1, figure=False)
    assert again.tables.links.equals(rtcbench.load_tables(r.path).links)
    assert again.tables.packets.equals(run.packets)


def test_a_run_without_a_cell_has_no_lte_summary(wired: Run) -> None:
    assert "lte" not in wired.summary
    assert not any("lte" in lk for lk in wired.summary["meta"]["links"])
    assert _nulls(wired.links, list(LTE_COLUMNS)) == [wired.links.height] * len(LTE_COLUMNS)


class _Tables(HTMLParser):
    """Every table of a page: its `data-table` kind, header and body rows, by id."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.kinds: dict[str, str] = {}
        self.header: dict[str, list[str]] = {}
        self.rows: dict[str, list[list[str]]] = {}
        self._table: str | None = None
        self._cell: str | None = None
        self._in_body = False
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "table" and "data-table" in a:
            self._table = a["id"]
            self.kinds[a["id"]] = a["data-table"]
            self.header[a["id"]], self.rows[a["id"]] = [], []
        elif self._table is not None:
            if tag == "tbody":
                self._in_body = True
            elif tag == "tr" and self._in_body:
                self.rows[self._table].append([])
            elif tag in ("th", "td"):
                self._cell = ""

    def handle_endtag(self, tag: str) -> None:
        if self._table is None:
            return
        if tag == "table":
            self._table, self._in_body = None, False
        elif tag in ("th", "td") and self._cell is not None:
            (self.rows[self._table][-1] if tag == "td" else self.header[self._table]).append(self._cell)
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell += data


def test_the_report_shows_the_lte_table_of_a_run_with_a_cell(near: Run, wired: Run, tmp_path: Path) -> None:
    result = build_report([near.folder, wired.folder], tmp_path / "report.html", run_figures="none", jobs=1)
    page = _Tables(result.path.read_text(encoding="utf-8"))
    (tid,) = (tid for tid, kind in page.kinds.items() if kind == "lte")
    assert tid.endswith("seed000-5.4.7@location-near--gcc--seed-1--lte") and tid in result.tables
    # The wired run's block has its tables, and no LTE table.
    assert any(kind == "flows" and "rfc8867-5.1@" in t for t, kind in page.kinds.items())
    header = page.header[tid]
    assert header[:3] == ["cell", "UE", "direction"]
    assert {"RB share %", "HARQ retransmissions", "HARQ failures", "queue drops", "CQI"} <= set(header)
    rows = {(r[0], r[1], r[2]): dict(zip(header, r, strict=True)) for r in page.rows[tid]}
    assert set(rows) == {(b["cell"], b["ue"], b["direction"]) for b in near.summary["lte"]}
    for b in near.summary["lte"]:
        row = rows[(b["cell"], b["ue"], b["direction"])]
        assert row["HARQ retransmissions"] == str(b["harq_retransmissions"])
        assert row["queue drops"] == str(b["queue_drops"])
        assert row["RB share %"] == f"{100 * b['rb_share']:.1f}"


def test_rtcbench_run_prints_the_lte_buffers_after_the_phases(
    near_cli: tuple[subprocess.CompletedProcess[str], Run],
) -> None:
    p, run = near_cli
    out = p.stdout
    assert "lte (per UE and direction, whole run)" in out
    assert out.index("phases (video flow") < out.index("lte (per UE and direction")
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in out.splitlines()]
    lte = {r[0]: r for r in rows if r and r[0].startswith("cell:")}
    assert set(lte) == set(BUFFERS)
    for b in run.summary["lte"]:
        counts = [b["harq_retransmissions"], b["harq_failures"], b["queue_drops"]]
        assert lte[b["link"]][3:6] == [str(n) for n in counts]
