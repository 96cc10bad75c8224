"""Runs are written while they go and measured a few flows at a time, with the numbers of a run
kept and measured whole in memory, bit for bit.

`tests/snapshots/columns.gcc.json` holds, per built-in scenario variant (gcc, seed 1), three
hashes (`scripts/result_hashes.py`): one over every column of the five trace tables (what the
simulation recorded), one over the time series and one over the summary (what the metrics made
of it), so a change shows where it is: a metric change leaves `trace` alone. Any change of
behaviour shows as a changed hash to explain (regenerate with `RTCBENCH_UPDATE_SNAPSHOTS=1`, as
the summary tables); each entry records the `rtcbench.identity.MODEL_REVISION` that made it, and
regenerating a changed entry under the same revision fails: raise the revision, so that results
folders of the old behaviour are not resumed as current ones.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import polars as pl
import pyarrow.parquet as pq
import pytest

import rtcbench
from rtcbench import measure, runner
from rtcbench.identity import MODEL_REVISION
from rtcbench.results import TABLES, run_dir
from rtcbench.runner import RunResult

SNAPSHOT = Path(__file__).parent / "snapshots" / "columns.gcc.json"


def _hashes_module() -> ModuleType:
    path = Path(__file__).parent.parent / "scripts" / "result_hashes.py"
    spec = importlib.util.spec_from_file_location("result_hashes", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HASHES = _hashes_module()


def run_hashes(r: RunResult) -> dict[str, Any]:
    frames = {name: getattr(r.tables, name) for name in TABLES}
    return dict(HASHES.run_hashes(r.summary, {**frames, "timeseries": r.timeseries}))


def _key(r: RunResult) -> str:
    """The run's place in the snapshot: its folder without the run key, which hashes the scenario
    text (a scenario's description changing is not a change of behaviour)."""
    s = r.summary
    slug = next(v.slug for v in rtcbench.resolve(s["scenario"]) if v.variant == s["variant"])
    return (
        run_dir(Path("."), s["scenario"], slug, s["controller"], "k", s["seed"])
        .as_posix()
        .replace("/k/", "/")
    )


def _digests(r: RunResult) -> dict[str, str]:
    h = run_hashes(r)
    return {
        "trace": HASHES.run_digest({name: h[name] for name in TABLES}),
        "timeseries": HASHES.run_digest(h["timeseries"]),
        "summary": h["summary"],
    }


PARTS = ("trace", "timeseries", "summary")


@pytest.mark.parametrize("scenario", [b.id for b in rtcbench.builtin()])
def test_every_column_of_every_built_in_run_is_unchanged(
    simulate: Callable[..., tuple[RunResult, ...]], scenario: str
) -> None:
    snapshot: dict[str, dict[str, Any]] = json.loads(SNAPSHOT.read_text())
    digests = {_key(r): _digests(r) for r in simulate(scenario, "gcc", 1)}
    if os.environ.get("RTCBENCH_UPDATE_SNAPSHOTS") == "1":
        for key, digest in digests.items():
            old = snapshot.get(key, {})
            changed = any(old.get(part) != digest[part] for part in PARTS)
            # A changed run under the revision that made the old digests would let a results
            # folder of the old behaviour pass for a current one (rtcbench.identity).
            assert not (changed and old.get("model_revision") == MODEL_REVISION), (
                f"{key} changed: raise rtcbench.identity.MODEL_REVISION (now {MODEL_REVISION})"
            )
            if changed:
                snapshot[key] = {**digest, "model_revision": MODEL_REVISION}
        SNAPSHOT.write_text(json.dumps(snapshot, indent=1, sort_keys=True) + "\n")
    for key, digest in digests.items():
        for part in PARTS:
            assert snapshot.get(key, {}).get(part) == digest[part], f"the {part} of {key} changed; explain it"


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs written in pieces of a few thousand rows and measured from their files a few flows at
    a time, as a run of hours is."""
    monkeypatch.setattr(runner, "KEEP_ROWS", 0)
    monkeypatch.setattr(runner, "PIECE_ROWS", 5_000)
    monkeypatch.setattr(runner, "SLICE_EVENTS", 1_000)
    monkeypatch.setattr(measure, "BATCH_ROWS", 8_000)


CASES = [
    ("rfc8867-5.8", (), "nada"),  # a pause: frames held back across it
    ("seed003-loss", ("loss=0.2",), "gcc"),  # frames that never complete
    ("rfc8867-5.6", ("queue=1000ms", "tcp_cc=cubic"), "scream"),  # a starved sender, deep queue
    ("rfc8867-6.3", (), "gcc"),  # several bottlenecks and calls
    ("trace-lte-drive", (), "gcc-draft"),  # a capacity trace
    ("rfc8869-2.2", (), "gcc"),  # an LTE cell: its buffers' rows of the links table
    ("rfc8869-3.2-c", (), "gcc"),  # a Wi-Fi BSS: its nodes' rows of the links table
]


@pytest.mark.parametrize(("scenario", "sets", "cc"), CASES)
def test_a_run_written_in_pieces_and_measured_by_batches_is_the_run_in_memory(
    tmp_path: Path, small_pieces: None, scenario: str, sets: tuple[str, ...], cc: str
) -> None:
    in_memory = rtcbench.run(scenario, cc, 3, sets=sets)
    written = rtcbench.run(scenario, cc, 3, out=tmp_path, sets=sets, figure=False)
    for a, b in zip(in_memory, written, strict=True):
        assert a.path is None and b.path is not None
        assert b._tables is None, "a long run's tables are read back only when asked for"
        packets = pq.ParquetFile(b.path / "packets.parquet")
        assert packets.metadata.num_row_groups > 3, "the trace was written in pieces"
        assert run_hashes(a) == run_hashes(b)
        assert json.loads((b.path / "summary.json").read_text())["flows"] == a.summary["flows"]


def test_a_flow_longer_than_a_batch_is_measured_a_span_of_time_at_a_time(
    tmp_path: Path, small_pieces: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    spans: dict[int, int] = {}
    real = measure._LongFlows.measure

    def counting(self: measure._LongFlows, fid: int, *args: Any, **kwargs: Any) -> Any:
        spans[fid] = len(self.spans[fid])
        return real(self, fid, *args, **kwargs)

    monkeypatch.setattr(measure._LongFlows, "measure", counting)
    in_memory = rtcbench.run("rfc8867-5.6", "gcc", 3, sets=("queue=1000ms",))[0]
    written = rtcbench.run("rfc8867-5.6", "gcc", 3, out=tmp_path, sets=("queue=1000ms",), figure=False)[0]
    assert len(spans) >= 2 and max(spans.values()) >= 3, spans
    assert run_hashes(in_memory) == run_hashes(written)


def test_a_run_of_many_windows_is_measured_a_span_of_time_at_a_time(
    tmp_path: Path, small_pieces: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A window weighing as much as 40 packet rows makes every flow of this 120 s run weigh more
    # than a batch, however few its packets, as a flow of a week-long run does (3 M windows): its
    # time series is made a span of windows at a time, and the links table read in spans.
    monkeypatch.setattr(measure, "WINDOW_ROWS", 40)
    spans: dict[int, int] = {}
    link_spans: list[int] = []
    real, real_spans = measure._LongFlows.measure, measure._time_spans

    def counting(self: measure._LongFlows, fid: int, *args: Any, **kwargs: Any) -> Any:
        spans[fid] = len(self.spans[fid])
        return real(self, fid, *args, **kwargs)

    def counting_links(*args: Any) -> list[tuple[int, int]]:
        got = real_spans(*args)
        link_spans.append(len(got))
        return got

    monkeypatch.setattr(measure._LongFlows, "measure", counting)
    monkeypatch.setattr(measure, "_time_spans", counting_links)
    sets = ("delay=50ms",)
    in_memory = rtcbench.run("rfc8867-5.2", "gcc", 3, sets=sets)[0]
    written = rtcbench.run("rfc8867-5.2", "gcc", 3, out=tmp_path, sets=sets, figure=False)[0]
    assert len(spans) >= 4 and min(spans.values()) >= 3, spans
    assert max(link_spans) >= 3, link_spans
    assert run_hashes(in_memory) == run_hashes(written)


WEEK = Path(__file__).parent.parent / "benches" / "scenarios" / "week-1kbps-cbr.toml"
"""One 1 kbit/s CBR flow on one link for up to a week: next to no packets, a links row every 10 ms
and a time-series window every 200 ms."""

_MEASURE = """
import json, sys
from pathlib import Path
from rtcbench import measure
folder = Path(sys.argv[1])
meta = json.loads((folder / "summary.json").read_text())["meta"]
measure.measure_folder(folder, meta, batch_rows=int(sys.argv[2]))
status = Path("/proc/self/status").read_text().splitlines()
print(next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024)
"""
"""Measures a results folder again, in a process of its own, and prints its peak RSS (MiB): the
kernel's high-water mark of this program's memory (`getrusage`'s keeps the parent's across exec)."""


def test_measuring_a_run_takes_memory_that_does_not_grow_with_its_simulated_time(tmp_path: Path) -> None:
    # A batch of 100 000 rows, a tenth of the default: the time series is then made a span of
    # 2.8 h at a time and the links table read 1000 s at a time, as a week is with the default
    # batch. Measuring 16 h took 469 MiB more than 4 h (314 and 783 MiB: 0.94 GiB a simulated
    # day, the whole links table held); now 28 MiB more (220 and 248: 57 MiB a day, the flow's
    # rates and summary columns per window).
    batch_rows = 100_000
    peak_mib = {}
    for hours in (4, 16):
        sets = [f"duration={hours * 3600}s"]
        (r,) = rtcbench.run(str(WEEK), "gcc", 1, out=tmp_path / f"{hours}h", sets=sets, figure=False)
        measured = subprocess.run(
            [sys.executable, "-c", _MEASURE, str(r.path), str(batch_rows)],
            capture_output=True,
            text=True,
            check=True,
        )
        peak_mib[hours] = float(measured.stdout.split()[-1])
    per_day = (peak_mib[16] - peak_mib[4]) / (12 / 24)
    assert per_day < 200, f"measuring grew {per_day:.0f} MiB a simulated day; peak RSS (MiB) {peak_mib}"


def test_a_long_run_draws_its_figure_from_its_files(tmp_path: Path, small_pieces: None) -> None:
    (r,) = rtcbench.run("rfc8867-5.1", "gcc", 1, out=tmp_path, sets=["delay=50ms", "mechanism=link-rate"])
    assert r.path is not None and (r.path / runner.FIGURE).stat().st_size > 20_000


def test_a_long_run_draws_its_time_series_in_blocks_of_windows(
    tmp_path: Path, small_pieces: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 100 s is 500 windows of 200 ms: drawn as 100 blocks of 5, each the mean of its windows.
    monkeypatch.setattr(measure, "FIGURE_WINDOWS", 100)
    sets = ["delay=50ms", "mechanism=link-rate", "duration=100s"]
    (r,) = rtcbench.run("rfc8867-5.1", "gcc", 1, out=tmp_path, sets=sets)
    assert r.path is not None and (r.path / runner.FIGURE).stat().st_size > 20_000
    _, drawn = measure.figure_tables(r.path, r.summary["meta"])
    video = next(int(f["id"]) for f in r.summary["meta"]["flows"] if f["kind"] == "video")
    blocks = drawn.filter(pl.col("flow") == video)
    assert blocks.get_column("t_us").to_list() == [i * 1_000_000 for i in range(100)]
    windows = r.timeseries.filter((pl.col("flow") == video) & (pl.col("t_us") < 1_000_000))
    assert blocks.get_column("send_rate_bps")[0] == pytest.approx(windows.get_column("send_rate_bps").mean())


def test_a_run_too_long_to_keep_in_memory_asks_for_a_folder(tmp_path: Path) -> None:
    with pytest.raises(runner.TraceTooLarge, match=r"more than 10,000 trace rows.*out="):
        runner.run_variant(rtcbench.resolve("rfc8867-5.4")[0], "gcc", 1, max_memory_rows=10_000)
    (r,) = rtcbench.run("rfc8867-5.4", "gcc", 1, out=tmp_path, figure=False)
    assert r.tables.packets.height > 10_000


def test_tables_read_back_have_the_documented_types(tmp_path: Path, small_pieces: None) -> None:
    (r,) = rtcbench.run("rfc8867-6.2", "nada", 1, out=tmp_path, sets=["delay=50ms"], figure=False)
    assert r.path is not None
    for name in TABLES:
        df = pl.read_parquet(r.path / f"{name}.parquet")
        assert df.schema == getattr(r.tables, name).schema
    assert pl.read_parquet(r.path / "packets.parquet").get_column("event").dtype == pl.String


def test_a_simulation_runs_with_glibcs_mmap_threshold_fixed() -> None:
    # Without it a two-hour run's RSS grew 6-12 % from 900 to 3600 simulated s (docs/limits.md).
    from rtcbench._malloc import fix_mmap_threshold

    rtcbench.run(
        "rfc8867-5.1", "fixed", sets=["delay=50ms", "mechanism=link-rate", "duration=2s"], figure=False
    )
    assert fix_mmap_threshold.cache_info().currsize == 1
    assert fix_mmap_threshold() is True  # glibc accepted it (Debian 12)
