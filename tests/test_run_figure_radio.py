"""The run figure shows the call beside much larger traffic (issue "The answer at a glance"):
panel (a′) draws the calls on their own scale when they would be a line at zero in (a), a radio
path's capacity is drawn, and `rtcbench figure` draws any run again for print. The Wi-Fi figure is
checked as a person sees it: Debian's headless Chromium shows `rtcbench run`'s overview.png."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from tests import chromium

import rtcbench
from rtcbench.measure import figure_tables
from rtcbench.plots import PALETTE, RunColumn, run_figure

RTCBENCH = [sys.executable, "-m", "rtcbench.cli"]
# Until 130 s: TCP downloads from 60 s and uploads from 120 s, up to 100 Mbit/s beside a 2.5 Mbit/s call.
WIFI = ("seed000-5.3.8", ["pc3=A", "pc4=A", "duration=130s"])


@pytest.fixture(scope="module")
def wifi_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    (result,) = rtcbench.run(WIFI[0], "gcc", 1, tmp_path_factory.mktemp("wifi"), WIFI[1])
    assert result.path is not None
    return result.path


def _panels(run: Path, **kw: object) -> dict[str, object]:
    meta = json.loads((run / "summary.json").read_text())["meta"]
    t, ts = figure_tables(run, meta)
    fig = run_figure([RunColumn("", t, ts)], "t", **kw)  # type: ignore[arg-type]
    return {ax.get_label(): ax for ax in fig.axes}


def test_the_calls_get_their_own_panel_beside_tcp_and_no_radio_capacity_is_drawn(wifi_run: Path) -> None:
    panels = _panels(wifi_run)
    assert "calls" in panels
    rates, calls = panels["rates"], panels["calls"]
    # (a) is on the scale of 100 Mbit/s of TCP; (a′) on the call's 2.5 Mbit/s.
    assert rates.get_ylim()[1] > 50 and 2.0 < calls.get_ylim()[1] < 5.0  # type: ignore[attr-defined]
    # A radio hop has no capacity of its own; its estimate follows the node's traffic (71 to
    # 100 Mbit/s at the AP when a download starts), so it is not drawn as one (docs/compare.md).
    labels = [line.get_label() for line in rates.get_lines()]  # type: ignore[attr-defined]
    assert not any("path capacity" in label for label in labels), labels


def test_a_call_that_fills_its_link_has_no_second_panel(tmp_path: Path) -> None:
    sets = ["duration=20s", "delay=50ms", "mechanism=link-rate"]
    (result,) = rtcbench.run("rfc8867-5.1", "gcc", 1, tmp_path, sets, figure=False)
    assert result.path is not None
    assert "calls" not in _panels(result.path)


def test_chromium_shows_the_wifi_call_well_above_zero(wifi_run: Path, tmp_path: Path) -> None:
    """In the overview `rtcbench run` wrote, as Chromium lays it out, the up call's colour in panel
    (a′) sits in the upper part of the panel (2.5 Mbit/s against a 2.6-3 Mbit/s scale), not on its
    floor."""
    assert chromium.available(), "chromium is not installed: run scripts/install-chromium.sh (make chromium)"
    page = tmp_path / "overview.html"
    png = wifi_run / "overview.png"
    page.write_text(
        f'<!DOCTYPE html><html><body style="margin:0"><img id="fig" src="{png.as_uri()}"></body></html>'
    )
    shot = chromium.open_page(page, screenshot=True, element="#fig")
    assert shot.errors == [] and shot.screenshot is not None
    image = np.asarray(Image.open(io.BytesIO(shot.screenshot)).convert("RGB")).astype(int)
    calls = _panels(wifi_run)["calls"]
    x0, y0, w, h = calls.get_position().bounds  # type: ignore[attr-defined]
    rows, cols = image.shape[:2]
    top, bottom = round((1 - y0 - h) * rows), round((1 - y0) * rows)
    left, right = round(x0 * cols), round((x0 + w) * cols)
    panel = image[top:bottom, left:right]
    blue = np.array([int(PALETTE[0][i : i + 2], 16) for i in (1, 3, 5)])
    ys = np.nonzero(np.abs(panel - blue).sum(axis=2) <= 60)[0]
    assert ys.size > 200, f"the call's colour in panel (a'): {ys.size} pixels"
    height_above_floor = 1 - float(np.median(ys)) / panel.shape[0]
    assert height_above_floor > 0.5, height_above_floor


def test_rtcbench_figure_draws_a_run_for_print(wifi_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "figs"
    done = subprocess.run(
        [*RTCBENCH, "figure", str(wifi_run), "--out", str(out), "--format", "pdf,png,svg"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in out.iterdir())
    stem = "seed000-5.3.8@pc3-A-pc4-A--gcc--seed-1"
    assert names == [f"{stem}.pdf", f"{stem}.png", f"{stem}.svg"]
    assert (out / f"{stem}.pdf").read_bytes().startswith(b"%PDF")
    assert ET.parse(out / f"{stem}.svg").getroot().tag == "{http://www.w3.org/2000/svg}svg"
    with Image.open(out / f"{stem}.png") as png:
        # A page's text width (7.16 in) at 300 dpi, in full colour.
        assert png.size[0] == round(7.16 * 300) and png.mode == "RGB"
        assert round(png.info["dpi"][0]) == 300
    # Bad input: one line, status 2, nothing written.
    for args, said in (
        (["--style", "poster"], "--style must be paper or screen"),
        (["--format", "jpg"], "is not one of png, svg, pdf"),
    ):
        bad = subprocess.run(
            [*RTCBENCH, "figure", str(wifi_run), "--out", str(tmp_path / "no"), *args],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert bad.returncode == 2 and said in bad.stderr and len(bad.stderr.splitlines()) == 1
        assert not (tmp_path / "no").exists()
