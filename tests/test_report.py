"""`rtcbench report`: the HTML page as a person meets it (opened in headless Chromium, offline),
its size and what it embeds, its figure cache (also on read-only results), its figures exported
for papers, folders with missing or broken results, determinism, the order and statistics of
cases, and the hook for `rtcbench.compare`.

The results are a small suite made once per session: two test cases × two controllers × two
seeds, shortened with `--set duration=...`, as `rtcbench suite --out` lays them out; and, for one
repetition and the order of variants, one case in two variants × two controllers × one seed.
"""

from __future__ import annotations

import base64
import functools
import html
import io
import os
import re
import shutil
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest
from PIL import Image
from tests.test_compare import _suite as compared_suite
from typer.testing import CliRunner

import rtcbench
from rtcbench import compare as cmp
from rtcbench.cli import app
from rtcbench.plots import CONTROLLER_COLORS, Rendered
from rtcbench.report import Problem, build_report, figures
from rtcbench.report.cache import CACHE_DIR
from rtcbench.report.comparison import MATRIX_METRICS
from rtcbench.report.runs import natural_key

sys.path.insert(0, str(Path(__file__).parent))
import chromium

RTCBENCH = [sys.executable, "-m", "rtcbench.cli"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

CASES = (
    ("rfc8867-5.1", ("delay=50ms", "mechanism=link-rate", "duration=50s")),
    ("rfc8867-5.6", ("queue=300ms", "tcp_cc=cubic", "duration=30s")),
)
CONTROLLERS = ("gcc", "nada")
SEEDS = (1, 2)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RTCBENCH, *args], capture_output=True, text=True, check=False)


@functools.cache
def _suite(root: str) -> Path:
    out = Path(root)
    for scenario, sets in CASES:
        for cc in CONTROLLERS:
            for seed in SEEDS:
                rtcbench.run(scenario, cc, seed, out, sets, figure=False)
    return out


@pytest.fixture(scope="session")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _suite(str(tmp_path_factory.mktemp("report-suite")))


VARIANTS = ("delay=100ms", "delay=50ms")
"""Listed in text order, which is not the order of their values."""


@pytest.fixture(scope="session")
def single(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One repetition: rfc8867-5.1 at 100 ms and 50 ms, gcc and nada, seed 1."""
    out = tmp_path_factory.mktemp("report-single")
    for delay in VARIANTS:
        for cc in CONTROLLERS:
            rtcbench.run(
                "rfc8867-5.1", cc, 1, out, (delay, "mechanism=link-rate", "duration=20s"), figure=False
            )
    return out


def fresh_copy(root: Path, where: Path) -> Path:
    """A copy of results without any report or figure cache."""
    shutil.copytree(root, where, ignore=shutil.ignore_patterns(CACHE_DIR, "*.html"))
    return where


def run_folders(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.rglob("summary.json"))


def case_folders(root: Path) -> list[str]:
    return sorted({p.relative_to(root).parts[0] for p in run_folders(root)})


class Page(HTMLParser):
    """Ids of figures and tables, every URL-bearing attribute, and the download links per figure."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.figures: dict[str, str] = {}  # id -> kind
        self.images: dict[str, str] = {}  # figure id -> its <img src>
        self.tables: dict[str, str] = {}  # id -> kind
        self.urls: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.links: dict[str, dict[str, str]] = {}  # figure id -> format -> href
        self.sections: set[str] = set()
        self.problems: list[str] = []
        self._figure: str | None = None
        self._in_problems = False
        self._in_body = False
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        for name in ("src", "href", "srcset", "poster", "data", "action", "formaction", "xlink:href"):
            if name in a:
                self.urls.append((tag, name, a[name]))
        if tag == "figure" and "data-figure" in a:
            self._figure = a["data-figure"]
            self.figures[a["data-figure"]] = a.get("data-kind", "")
            assert a.get("id") == f"fig-{a['data-figure']}"
        if tag == "img" and self._figure is not None:
            self.images[self._figure] = a.get("src", "")
        if tag == "a" and self._figure is not None and "data-format" in a:
            self.links.setdefault(self._figure, {})[a["data-format"]] = a.get("href", "")
        if tag == "table" and "data-table" in a:
            self.tables[a["id"]] = a["data-table"]
            self._in_problems = a["id"] == "tbl-problems"
        if tag == "section" and "data-section" in a:
            self.sections.add(a["data-section"])
        self._in_body = self._in_body or tag == "tbody"
        if tag == "tr" and self._in_problems and self._in_body:
            self.problems.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "figure":
            self._figure = None
        if tag == "table":
            self._in_problems = False
        if tag == "tbody":
            self._in_body = False

    def handle_data(self, data: str) -> None:
        if self._in_problems and self.problems:
            self.problems[-1] += data


REMOTE = re.compile(r"^\s*(https?:)?//", re.IGNORECASE)
CSS_REMOTE = re.compile(r"(url\(\s*['\"]?\s*(https?:)?//|@import)", re.IGNORECASE)


def remote_references(html: str) -> list[str]:
    """Everything in a page that would make a browser fetch from the network: a URL-bearing
    attribute that is remote (http, https or protocol-relative), a <link> to anything but a data
    URI, or a CSS url()/@import."""
    page = Page(html)
    found = [f"<{tag} {attr}={value[:80]}>" for tag, attr, value in page.urls if REMOTE.match(value)]
    found += [
        f"<link {value[:80]}>"
        for tag, _, value in page.urls
        if tag == "link" and not value.startswith("data:")
    ]
    found += [m.group(0) for m in CSS_REMOTE.finditer(html)]
    return found


@pytest.fixture(scope="module")
def report(suite: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, str]]:
    """`rtcbench report SUITE --out ... --figures ...`, once: (html, figures folder, stderr)."""
    where = tmp_path_factory.mktemp("report")
    html, figures = where / "suite.html", where / "figures"
    out = cli("report", str(suite), "--html", str(html), "--figures", str(figures), "--jobs", "1")
    assert out.returncode == 0, out.stderr
    assert "report:" in out.stdout
    yield html, figures, out.stderr


def expected_figures(root: Path) -> set[str]:
    """From the folder layout alone: per case, the controllers' first seeds over time, the frame
    delay by stage, goodput against delay, the CDF and the box plots over repetitions."""
    kinds = ("time", "stages", "tradeoff", "cdf", "box")
    return {f"{kind}--{case}" for case in case_folders(root) for kind in kinds}


def expected_tables(root: Path) -> set[str]:
    ids = {"tbl-score-matrix", "tbl-score-controllers", "tbl-score-details"}
    ids |= {"tbl-provenance-report", "tbl-provenance-sources"}
    for case in case_folders(root):
        ids.add(f"tbl-case--{case}")
        for cc in CONTROLLERS:
            for seed in SEEDS:
                ids |= {
                    f"tbl-{case}--{cc}--seed-{seed}--flows",
                    f"tbl-{case}--{cc}--seed-{seed}--phases--forward",
                }
    return ids


def test_the_report_opens_offline_in_chromium_with_every_figure_and_table(
    suite: Path, report: tuple[Path, Path, str]
) -> None:
    html, _, stderr = report
    assert stderr == ""
    assert chromium.available(), "chromium is not installed: run scripts/install-chromium.sh (make chromium)"
    page = chromium.open_page(html, screenshot=True)
    assert page.errors == [], page.errors
    # The page itself, and data URIs (its figures): nothing else was asked for.
    assert [u for u in page.requests if not u.startswith("data:")] == [html.resolve().as_uri()]
    dom = Page(page.dom)
    assert set(dom.figures) == expected_figures(suite)
    assert expected_tables(suite) <= set(dom.tables)
    assert {"provenance", "scorecard", "cases", "runs"} <= dom.sections
    # Two controllers: the comparison section is there.
    assert "problems" not in dom.sections and "comparison" in dom.sections
    # The download links take their image's data once the script ran; no SVG in the page.
    assert set(dom.links) == set(dom.figures)
    for fig, links in dom.links.items():
        assert set(links) == {"png"} and links["png"] == dom.images[fig], fig
        assert links["png"].startswith("data:image/png;base64,"), fig
    # The page was laid out: a screenshot of the whole page, many screens tall.
    assert page.screenshot is not None and page.screenshot.startswith(PNG_MAGIC)
    height = int.from_bytes(page.screenshot[20:24], "big")
    assert height > 2000, height


def test_the_browser_check_sees_script_errors_and_fetches(tmp_path: Path) -> None:
    """The Chromium harness itself: a page with a console error, an uncaught exception and a
    remote image is caught on all three counts."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!DOCTYPE html><html><body><img src="https://cdn.example/x.png">'
        '<script>console.error("broken"); missing();</script></body></html>',
        encoding="utf-8",
    )
    page = chromium.open_page(bad)
    assert page.console_errors == ["broken"]
    assert any("missing is not defined" in e for e in page.exceptions)
    assert "https://cdn.example/x.png" in page.requests
    assert any("ERR_NAME_NOT_RESOLVED" in e for e in page.log_errors)


def test_the_report_names_every_command_and_version(suite: Path, report: tuple[Path, Path, str]) -> None:
    text = report[0].read_text(encoding="utf-8")
    for name in ("rtcbench", "python", "polars", "numpy", "matplotlib"):
        assert f"<td>{name}</td>" in text
    assert "rtcbench report " in text and "--figures" in text
    # The runs were made from Python here, so their summaries recorded no command.
    assert "(not recorded: run from Python)  (8 runs)" in text
    # And the commit of this checkout they were made from (summary.json's provenance).
    made = re.escape(rtcbench.__version__) + r" at [0-9a-f]{12}( \(uncommitted changes\))? \(8 runs\)"
    assert re.search(made, text), "version and commit of the runs"


def test_each_case_says_what_the_call_got_from_each_controller(report: tuple[Path, Path, str]) -> None:
    """A report of two controllers says per case, head to head, goodput, frame delay, freezes,
    delay and utilisation of the second against the first (`compare.Comparison.in_short`); two
    repetitions are too few for a verdict, so the means are given without one, and said so."""
    text = html.unescape(report[0].read_text(encoding="utf-8"))
    for scenario, variant in (
        ("rfc8867-5.1", "delay=50ms,mechanism=link-rate"),
        ("rfc8867-5.6", "queue=300ms,tcp_cc=cubic"),
    ):
        start = text.index(f"{scenario} [{variant}]: nada against gcc: goodput ")
        sentence = text[start : text.index("</p>", start)]
        assert "2 and 2 runs, too few to judge" in sentence and "utilisation" in sentence, sentence
        assert "frame delay p95 " in sentence and "worse" not in sentence and "better" not in sentence


def test_the_html_references_nothing_remote(report: tuple[Path, Path, str]) -> None:
    text = report[0].read_text(encoding="utf-8")
    assert remote_references(text) == []
    assert "<script src" not in text and "<link" not in text
    # The check itself finds what it should.
    bad = (
        '<img src="https://cdn.example/x.png"><a href="//cdn.example/y">y</a>'
        '<link rel="stylesheet" href="s.css">'
        '<style>@import "x.css"; a { background: url(http://x/y) }</style>'
    )
    assert len(remote_references(bad)) == 5


def test_figures_are_exported_as_png_and_svg_with_stable_names(
    suite: Path, report: tuple[Path, Path, str]
) -> None:
    html, figures, _ = report
    names = sorted(p.name for p in figures.iterdir())
    expected = expected_figures(suite)
    assert names == sorted([f"{f}.png" for f in expected] + [f"{f}.svg" for f in expected])
    for f in expected:
        png = (figures / f"{f}.png").read_bytes()
        assert png.startswith(PNG_MAGIC) and len(png) > 5_000
        svg = ET.parse(figures / f"{f}.svg").getroot()
        assert svg.tag == "{http://www.w3.org/2000/svg}svg"
        assert len(list(svg.iter())) > 50
    # The page shows the same files.
    dom = Page(html.read_text(encoding="utf-8"))
    f = f"time--{case_folders(suite)[0]}"
    assert base64.b64decode(dom.images[f].split(",", 1)[1]) == (figures / f"{f}.png").read_bytes()


def test_the_scorecard_has_a_column_per_criterion_and_colours_by_the_share_passed(
    suite: Path, report: tuple[Path, Path, str]
) -> None:
    text = report[0].read_text(encoding="utf-8")
    controllers = text.split('id="tbl-score-controllers"', 1)[1].split("</table>", 1)[0]
    for criterion in ("delay", "loss", "startup", "stability", "self-fairness", "tcp-share"):
        assert f"<th>{criterion} (" in controllers, criterion
    matrix = text.split('id="tbl-score-matrix"', 1)[1].split("</table>", 1)[0]
    cells = re.findall(r'<td class="share-(\d)" title="(\d+) passed[^"]*">(\d+)/(\d+)</td>', matrix)
    assert len(cells) == len(case_folders(suite)) * len(CONTROLLERS)
    for level, passed, shown, applicable in cells:
        share = int(passed) / int(applicable)
        assert passed == shown and int(level) == sum(share >= step for step in (0.25, 0.5, 0.75, 1.0))


def test_the_same_results_give_the_same_report(suite: Path, tmp_path: Path) -> None:
    a = build_report([suite], tmp_path / "a.html", run_figures="none", jobs=1, command="same")
    b = build_report([suite], tmp_path / "b.html", run_figures="none", jobs=1, command="same")
    assert a.path.read_bytes() == b.path.read_bytes()
    # Per case: goodput against delay, the CDF and the box plots (no time figures here).
    assert a.figures == b.figures and len(a.figures) == 4 * len(case_folders(suite))


PAGE_BYTES_PER_RUN = 60_000
"""The page's budget on the small suite (8 runs: the two cases over time, their CDFs and box
plots, every run's tables): about 35 kB a run. With a figure per run, each embedded twice and its
SVG beside it, it took about 180 kB a run."""


def test_the_page_stays_small(suite: Path, report: tuple[Path, Path, str]) -> None:
    size = report[0].stat().st_size
    assert size < PAGE_BYTES_PER_RUN * len(run_folders(suite)), size


def test_each_image_is_in_the_page_once_and_no_svg(suite: Path, report: tuple[Path, Path, str]) -> None:
    text = report[0].read_text(encoding="utf-8")
    page = Page(text)
    images = re.findall(r"data:image/[a-z+]+[;,][^\"' )]+", text)
    assert len(images) == len(set(images)) == len(page.figures) == len(expected_figures(suite))
    assert all(i.startswith("data:image/png;base64,") for i in images)
    assert "image/svg" not in text and "<svg" not in text


def test_svg_is_drawn_only_on_request(suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[bool] = []
    real = figures.draw

    def spy(task: figures.FigureTask, svg: bool = False) -> tuple[str, Rendered | None, list[Problem]]:
        asked.append(svg)
        return real(task, svg)

    monkeypatch.setattr(figures, "draw", spy)
    root = fresh_copy(suite, tmp_path / "s")
    plain = build_report([root], tmp_path / "plain.html", jobs=1)
    assert plain.figure_files == () and asked and not any(asked)
    # With --figures, the SVG is drawn (the cache holds PNG only) and written beside the PNG.
    asked.clear()
    files = build_report([root], tmp_path / "files.html", jobs=1, figures=tmp_path / "figs").figure_files
    assert asked and all(asked)
    assert sorted(p.suffix for p in files) == sorted([".png", ".svg"] * len(asked))


def _cache_files(root: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in sorted(root.rglob(f"{CACHE_DIR}/*"))}


def test_a_second_report_draws_nothing(suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = fresh_copy(suite, tmp_path / "s")
    first = build_report([root], tmp_path / "a.html", jobs=1, command="same")
    cached = _cache_files(root)
    # One PNG per figure, each in a hidden folder of one of the runs it shows.
    assert len(cached) == len(first.figures) == len(expected_figures(suite))
    assert {p.parent.parent for p in cached} <= set(run_folders(root))

    def no_drawing(task: figures.FigureTask, svg: bool = False) -> None:
        raise AssertionError(f"{task.id} was drawn again")

    monkeypatch.setattr(figures, "draw", no_drawing)
    second = build_report([root], tmp_path / "b.html", jobs=1, command="same")
    assert second.path.read_bytes() == first.path.read_bytes()
    assert _cache_files(root) == cached
    # A run written again (its summary changed): its case's figures drawn from its files are
    # drawn again, and replace their old entries; its box plots show the same values and the
    # other case's figures show other runs, so they come from the cache.
    monkeypatch.undo()
    drawn: list[str] = []
    real = figures.draw

    def spy(task: figures.FigureTask, svg: bool = False) -> tuple[str, Rendered | None, list[Problem]]:
        drawn.append(task.id)
        return real(task, svg)

    monkeypatch.setattr(figures, "draw", spy)
    changed = run_folders(root)[0]
    summary = changed / "summary.json"
    summary.write_text(
        summary.read_text(encoding="utf-8").replace('"wall_s": ', '"wall_s": 1'), encoding="utf-8"
    )
    build_report([root], tmp_path / "c.html", jobs=1, command="same")
    case = changed.relative_to(root).parts[0]
    assert sorted(drawn) == [f"cdf--{case}", f"time--{case}"]
    assert len(_cache_files(root)) == len(cached)


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


def _read_only_cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`rtcbench ARGS` with `root` read-only: a read-only bind mount of it for root (whom file
    modes do not stop), its files' and folders' write bits cleared for anyone else."""
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in [root, *root.rglob("*")]}
        for p, mode in modes.items():
            p.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        try:
            return cli(*args)
        finally:
            for p, mode in modes.items():
                p.chmod(mode)
    if shutil.which("unshare") is None:
        pytest.skip("running as root without unshare: cannot make a read-only folder")
    script = 'mount --bind -o ro "$1" "$1" && shift && exec "$@"'
    out = subprocess.run(
        ["unshare", "--mount", "sh", "-c", script, "sh", str(root), *RTCBENCH, *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0 and re.match(r"(unshare|mount):", out.stderr):
        pytest.skip(f"running as root, and cannot mount a read-only folder: {out.stderr.strip()}")
    return out


def _marker_png() -> bytes:
    data = io.BytesIO()
    Image.new("RGB", (3, 2), (255, 0, 255)).save(data, format="PNG")
    return data.getvalue()


def test_read_only_results_are_reported_without_writing_to_them(suite: Path, tmp_path: Path) -> None:
    root = fresh_copy(suite, tmp_path / "archive")
    before = _tree(root)
    html = tmp_path / "a.html"
    out = _read_only_cli(root, "report", str(root), "--html", str(html), "--jobs", "1")
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert set(Page(html.read_text(encoding="utf-8")).figures) == expected_figures(suite)
    assert _tree(root) == before  # no cache either
    # A cache made while the folder could be written is read from the read-only folder: here
    # every entry is replaced by a marker image, which the page then shows.
    build_report([root], tmp_path / "w.html", jobs=1)
    entries = sorted(root.rglob(f"{CACHE_DIR}/*.png"))
    assert len(entries) == len(expected_figures(suite))
    marker = _marker_png()
    for entry in entries:
        entry.write_bytes(marker)
    before = _tree(root)
    html = tmp_path / "b.html"
    out = _read_only_cli(root, "report", str(root), "--html", str(html), "--jobs", "1")
    assert out.returncode == 0 and out.stderr == "", out.stderr
    images = Page(html.read_text(encoding="utf-8")).images
    assert len(images) == len(entries)
    assert all(base64.b64decode(src.split(",", 1)[1]) == marker for src in images.values())
    assert _tree(root) == before


def test_one_repetition_shows_values_and_variants_come_in_order(single: Path, tmp_path: Path) -> None:
    assert [k for k in sorted(["rate=10Mbps", "rate=2.5Mbps", "rate=1Mbps"], key=natural_key)] == [
        "rate=1Mbps",
        "rate=2.5Mbps",
        "rate=10Mbps",
    ]
    result = build_report([single], tmp_path / "one.html", jobs=1)
    text = result.path.read_text(encoding="utf-8")
    cases = re.findall(r'<section class="case" id="case--([^"]+)"', text)
    # 50 ms before 100 ms, in the cases and in the runs.
    by_delay = sorted(case_folders(single), key=lambda c: int(re.findall(r"delay-(\d+)ms", c)[0]))
    assert cases == by_delay and "delay-50ms" in by_delay[0]
    runs = re.findall(r'<details class="run" id="run--([^"]+)"', text)
    assert runs[0].startswith(by_delay[0]) and runs[-1].startswith(by_delay[1])
    # One run per controller: values, no box plots and no intervals.
    kinds = ("time", "stages", "tradeoff", "cdf")
    assert sorted(Page(text).figures) == sorted(f"{kind}--{c}" for c in cases for kind in kinds)
    for c in cases:
        table = text.split(f'id="tbl-case--{c}"', 1)[1].split("</table>", 1)[0]
        assert "1 repetition: values, no interval" in table
        assert "[" not in table.split("<tbody>", 1)[1] and "95 %" not in table


def _damage(root: Path) -> dict[str, Path]:
    """Breaks a copy of the suite in five ways, one run each; returns what was broken where."""
    runs = run_folders(root)
    no_summary, no_timeseries, bad_packets, bad_summary = runs[1], runs[2], runs[5], runs[6]
    (no_summary / "summary.json").unlink()
    (no_timeseries / "timeseries.parquet").unlink()
    (bad_packets / "packets.parquet").write_bytes(b"not a parquet file")
    (bad_summary / "summary.json").write_text('{"scenario": "rfc8867-5.6", ', encoding="utf-8")
    empty = runs[0].parent / "seed-9"
    empty.mkdir()
    return {
        "summary": no_summary,
        "timeseries": no_timeseries,
        "packets": bad_packets,
        "json": bad_summary,
        "empty": empty,
    }


def _run_id(root: Path, run: Path) -> str:
    """The report's id of a run: its case, controller and seed folders (not the run key)."""
    case, controller, *_ = run.relative_to(root).parts
    return f"run--{case}--{controller}--{run.name}"


def test_missing_and_broken_results_are_named_and_the_rest_is_reported(suite: Path, tmp_path: Path) -> None:
    root = tmp_path / "partial"
    shutil.copytree(suite, root)
    broken = _damage(root)
    html = tmp_path / "out" / "partial.html"
    out = cli("report", str(root), "--html", str(html), "--jobs", "1")
    assert out.returncode == 0, out.stderr
    err = out.stderr
    assert f"{broken['summary']}: missing summary.json" in err
    # A file missing or changed since its run wrote it (the summary records every file's size and
    # SHA-256): the run is corrupt and left out, named.
    assert f"{broken['timeseries']}: timeseries.parquet is missing; the run is left out" in err
    assert f"{broken['packets']}: packets.parquet is 18 bytes" in err and "(truncated or changed)" in err
    assert f"{broken['json'] / 'summary.json'}: not a complete summary" in err
    assert f"{broken['empty']}: missing summary.json, scenario.toml" in err
    assert err.count("problem:") == 5 and "5 problems" in out.stdout

    text = html.read_text(encoding="utf-8")
    page = Page(text)
    assert "problems" in page.sections
    assert len(page.problems) == 5
    assert any(str(broken["summary"]) in p and "left out" in p for p in page.problems)
    # The rest is there: 4 of 8 runs, one per controller and case, so no box plots; every case over
    # time and its CDF. Where a first seed is left out, the next seed is drawn over time.
    kinds = ("time", "stages", "tradeoff", "cdf")
    assert set(page.figures) == {f"{kind}--{c}" for c in case_folders(suite) for kind in kinds}
    assert len([t for t, kind in page.tables.items() if kind == "flows"]) == 4
    for k in ("timeseries", "json"):
        block = text.split(f'id="{_run_id(root, broken[k].with_name("seed-2"))}"', 1)[1].split("</details>")[
            0
        ]
        assert "Drawn over time in its case" in block
    # Written atomically: no temporary file is left beside it.
    assert sorted(p.name for p in html.parent.iterdir()) == ["partial.html"]


def test_a_single_run_folder(suite: Path, tmp_path: Path) -> None:
    target = tmp_path / "one"
    shutil.copytree(run_folders(suite)[0], target)
    result = build_report([target], jobs=1)
    assert result.path == target / "report.html" and result.runs == 1 and result.problems == ()
    page = Page(result.path.read_text(encoding="utf-8"))
    # The run over time, its goodput against delay and its CDF: no box plots of one run.
    assert len(page.figures) == 4  # over time, by stage, goodput against delay, CDF
    assert set(result.figures) == set(page.figures)
    assert set(result.tables) == set(page.tables)


def test_bad_arguments_end_with_one_line_and_status_2(suite: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(app, ["report", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2 and "not a folder" in missing.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = runner.invoke(app, ["report", str(empty)])
    assert nothing.exit_code == 2 and "no run could be read" in nothing.stderr
    bad = runner.invoke(app, ["report", str(suite), "--run-figures", "some"])
    assert bad.exit_code == 2 and "first, all or none" in bad.stderr
    labels = runner.invoke(app, ["report", str(suite), "--labels", "a", "--labels", "b"])
    assert labels.exit_code == 2 and "2 --labels for 1 folders" in labels.stderr
    # --out is a folder, as everywhere: the page is OUT/report.html; --html names the page.
    as_file = runner.invoke(app, ["report", str(suite), "--out", str(tmp_path / "r.html")])
    assert (
        as_file.exit_code == 2
        and "give a folder (the page is written there as report.html)" in as_file.stderr
    )
    both = runner.invoke(
        app, ["report", str(suite), "--out", str(tmp_path), "--html", str(tmp_path / "p.html")]
    )
    assert both.exit_code == 2 and "--out and --html: give one" in both.stderr
    assert not any(tmp_path.glob("*.html"))
    for r in (missing, nothing, bad, labels, as_file, both):
        assert ("Traceback" not in r.stderr and r.exception is None) or isinstance(r.exception, SystemExit)


def test_several_folders_are_compared_folder_by_folder(suite: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    one_case = suite / case_folders(suite)[0]
    for dst in (a, b):
        shutil.copytree(one_case, dst / one_case.name)
    # Identical copies: a matrix per controller's cell, with no verdict either way (two repetitions
    # are too few; and the values are equal).
    real = build_report([a, b], tmp_path / "real.html", run_figures="none", jobs=1)
    text = real.path.read_text(encoding="utf-8")
    page = Page(text)
    assert "comparison" in page.sections and real.problems == ()
    assert page.tables["tbl-cmp--b"] == "comparison-matrix"
    matrix = text.split('id="tbl-cmp--b"')[1].split("</table>")[0]
    assert "v-pass" not in matrix and "v-fail" not in matrix and "+0 %" in matrix
    for cc in CONTROLLERS:
        assert f" · {cc}" in matrix
    # Several folders: series are labelled by folder.
    assert "a/gcc" in text
    # One folder of one controller: nothing to compare, no section, no problem.
    lone = tmp_path / "lone"
    for run in sorted(one_case.glob("gcc/*/seed-*")):
        shutil.copytree(run, lone / run.relative_to(suite))
    single = build_report([lone], tmp_path / "single.html", run_figures="none", jobs=1)
    assert "comparison" not in Page(single.path.read_text(encoding="utf-8")).sections
    assert single.problems == ()
    # Folders with no case in common: the section is left out, and the report says why.
    other = tmp_path / "other"
    last = suite / case_folders(suite)[-1]
    shutil.copytree(last, other / last.name)
    apart = build_report([a, other], tmp_path / "apart.html", run_figures="none", jobs=1)
    assert [p.where for p in apart.problems] == ["comparison"]
    assert "no case in common" in apart.problems[0].what
    assert "comparison" not in Page(apart.path.read_text(encoding="utf-8")).sections


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """test_compare's suite: three cases, gcc and fixed, three repetitions each."""
    return compared_suite(str(tmp_path_factory.mktemp("compared")))


def _cell(matrix: str, case: str, column: int) -> tuple[str, str]:
    """The text and class of a matrix cell: the row whose first cell starts with `case`."""
    row = next(r for r in matrix.split("<tr>")[1:] if re.match(rf"<td[^>]*>{re.escape(case)}", r))
    cells = re.findall(r"<td([^>]*)>([^<]*)</td>", row)
    attrs, text = cells[column]
    found = re.search(r'class="([^"]*)"', attrs)
    return html.unescape(text), found.group(1) if found else ""


def test_the_comparison_says_who_is_better_per_case_and_metric(compared: Path, tmp_path: Path) -> None:
    """With enough repetitions (here 3, `--min-reps 3`), each cell of the matrix names the better
    side and by how much, green where B (fixed) is better, red where A (gcc) is, with the numbers
    of `rtcbench compare`; each case has its sentence and its goodput-against-delay figure."""
    result = build_report(
        [compared], tmp_path / "r.html", run_figures="none", jobs=1, min_reps=3, baseline="gcc"
    )
    text = result.path.read_text(encoding="utf-8")
    page = Page(text)
    assert result.problems == () and "comparison" in page.sections
    assert page.tables["tbl-cmp--fixed"] == "comparison-matrix"
    matrix = text.split('id="tbl-cmp--fixed"')[1].split("</table>")[0]
    table = cmp.compare([compared], ["gcc", "fixed"], min_reps=3)
    case = "rfc8867-5.1 [delay=50ms,mechanism=link-rate]"
    columns = ["case", *MATRIX_METRICS]
    for metric, winner, cls in (("mean_goodput_bps", "gcc", "v-fail"), ("qdelay_p95_ms", "fixed", "v-pass")):
        (row,) = table.filter(pl.col("scenario") == "rfc8867-5.1", pl.col("metric") == metric).iter_rows(
            named=True
        )
        cell = _cell(matrix, case, columns.index(metric))
        assert cell == (f"{winner} {100 * abs(row['rel_diff']):.0f} %", cls), (metric, cell)
    # Each case: its sentence (with the effect size) and its figure, linked from the section.
    assert html.unescape(text).count(f"{case}: fixed against gcc: ") == 2  # section and case notes
    assert "large effect" in text
    assert {f"tradeoff--{c}" for c in case_folders(compared)} <= set(result.figures)
    # compare's default, 5 repetitions, gives no verdict: no cell is coloured either way.
    default = build_report([compared], tmp_path / "d.html", run_figures="none", jobs=1, baseline="gcc")
    plain = default.path.read_text(encoding="utf-8").split('id="tbl-cmp--fixed"')[1].split("</table>")[0]
    assert "v-pass" not in plain and "v-fail" not in plain


def test_a_screenshot_of_the_comparison_shows_the_verdicts(compared: Path, tmp_path: Path) -> None:
    """Debian's headless Chromium lays the section out: the matrix's green and red cells are there
    to see, and the case's goodput-against-delay figure is drawn."""
    result = build_report(
        [compared], tmp_path / "r.html", run_figures="none", jobs=1, min_reps=3, baseline="gcc"
    )
    assert chromium.available(), "chromium is not installed: run scripts/install-chromium.sh (make chromium)"
    page = chromium.open_page(result.path, screenshot=True, element="#comparison")
    assert page.errors == [], page.errors
    assert page.screenshot is not None
    shot = Image.open(io.BytesIO(page.screenshot)).convert("RGB")
    assert shot.width > 800 and shot.height > 300, shot.size
    colours = {rgb for _, rgb in shot.getcolors(maxcolors=1 << 20) or []}
    assert (0xD7, 0xF0, 0xDC) in colours, "a green cell (--pass)"
    assert (0xF8, 0xD3, 0xD0) in colours, "a red cell (--fail)"
    figure = chromium.open_page(
        result.path, screenshot=True, element='[data-figure^="tradeoff--rfc8867-5.1"] img'
    )
    assert figure.screenshot is not None
    drawn = Image.open(io.BytesIO(figure.screenshot)).convert("RGB")
    assert drawn.width > 400
    counts = drawn.getcolors(maxcolors=1 << 20) or []
    for colour in (CONTROLLER_COLORS["gcc"], CONTROLLER_COLORS["fixed"]):  # each its own colour
        rgb = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
        near = sum(n for n, c in counts if sum(abs(x - y) for x, y in zip(c, rgb, strict=True)) <= 40)
        assert near > 30, (colour, near)


def test_out_is_the_folder_the_page_goes_into(suite: Path, tmp_path: Path) -> None:
    one_case = suite / case_folders(suite)[0]
    out = tmp_path / "pages"
    done = cli("report", str(one_case), "--out", str(out), "--run-figures", "none", "--jobs", "1")
    assert done.returncode == 0, done.stderr
    assert [p.name for p in out.iterdir()] == ["report.html"]
    assert f"report: {out / 'report.html'}" in done.stdout
