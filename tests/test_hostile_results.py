"""Hostile files where rtcbench reads a file: a `summary.json`, a TOML file or a trace file that is
a FIFO, `/dev/zero`, a folder, larger than rtcbench reads, nested 10^5 deep, or JSON of the wrong
shape. Every case runs the real command line in a subprocess, with a timeout and a cap on its
memory, so a regression fails here instead of hanging the tests or taking the machine: it must
end with one line and status 2 (`docs/limits.md`), or, on resume, run the broken run again.

The trace-file cases need the extension built from this tree (`make develop`): the trace is read
by the Rust scenario loader (`crates/rtcbench-scenario/src/traces.rs`).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rtcbench.results import MAX_SUMMARY_BYTES, SUMMARY
from rtcbench.suite import run_suite

RTCBENCH = [sys.executable, "-m", "rtcbench.cli"]
TIMEOUT_S = 60
MEMORY_BYTES = 2 << 30
"""The most address space a command may take: an unbounded read of /dev/zero stops here."""

SCENARIO = "seed001-sudden-reduction"
SHORT = ["duration=2s"]


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """`rtcbench ARGS`; a command still running after `TIMEOUT_S` fails the test (and is killed)."""
    try:
        return subprocess.run(
            [*RTCBENCH, *map(str, args)], capture_output=True, text=True, timeout=TIMEOUT_S,
            preexec_fn=_capped, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"rtcbench {' '.join(map(str, args))} still ran after {TIMEOUT_S} s")


def one_line(out: subprocess.CompletedProcess[str], *needles: str) -> str:
    """The one line on stderr of a command that ended with status 2; it says each of `needles`."""
    assert out.returncode == 2, out.stderr[-2000:]
    assert "Traceback" not in out.stderr, out.stderr[-2000:]
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, f"one line, got {len(lines)}:\n{out.stderr[-2000:]}"
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"
    return lines[0]


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A suite of two runs (gcc and fixed), as `rtcbench suite` leaves it."""
    out = tmp_path_factory.mktemp("suite")
    run_suite([SCENARIO], ["gcc", "fixed"], reps=1, jobs=1, out=out, sets=SHORT)
    return out


NOT_FILES: list[tuple[Callable[[Path], None], str]] = [
    (os.mkfifo, "a FIFO"),
    (lambda p: p.symlink_to("/dev/zero"), "a character device"),
    (Path.mkdir, "a folder"),
]
"""How to make a path that is not a regular file, and what rtcbench calls it."""


def _gcc_run(root: Path) -> Path:
    return next(p.parent for p in root.rglob(SUMMARY) if "/gcc/" in p.as_posix())


def _edited(edit: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    """Damage that rewrites the summary as `edit` leaves it: JSON that parses, of the wrong shape."""

    def damage(summary: Path) -> None:
        doc = json.loads(summary.read_text())
        edit(doc)
        summary.write_text(json.dumps(doc))

    return damage


def _replace(make: Callable[[Path], None]) -> Callable[[Path], None]:
    def damage(summary: Path) -> None:
        summary.unlink()
        make(summary)

    return damage


def _set(path: tuple[str | int, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        for key in path[:-1]:
            doc = doc[key]  # type: ignore[index]
        doc[path[-1]] = value  # type: ignore[index]

    return edit


def _delete(path: tuple[str | int, ...]) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        for key in path[:-1]:
            doc = doc[key]  # type: ignore[index]
        del doc[path[-1]]  # type: ignore[arg-type]

    return edit


def _record_outside(summary: Path) -> None:
    """Records, as a file of the run, its own scenario.toml by a path that leaves the folder."""
    doc = json.loads(summary.read_text())
    name = f"../{summary.parent.name}/scenario.toml"
    doc["files"][name] = doc["files"]["scenario.toml"]
    summary.write_text(json.dumps(doc))


# (id, damage done to the gcc run's summary.json, what the one line names besides the file)
SUMMARIES: list[tuple[str, Callable[[Path], None], str]] = [
    ("seed-a-string", _edited(_set(("seed",), "1")), "seed is a string"),
    ("fairness-a-list", _edited(_set(("fairness",), [])), "fairness is a list"),
    ("metric-a-string", _edited(_set(("flows", 0, "qdelay_p95_ms"), "x")), "flows[0].qdelay_p95_ms"),
    ("flow-without-id", _edited(_delete(("flows", 0, "id"))), "flows[0] has no 'id'"),
    ("meta-flows-a-number", _edited(_set(("meta", "flows"), 1)), "meta.flows is an integer"),
    ("phase-start-null", _edited(_set(("phases", 0, "start_s"), None)), "phases[0].start_s is null"),
    ("files-outside", lambda p: _record_outside(p), "not a file of the run folder"),
    ("nested-1e5-deep", lambda p: p.write_text("[" * 100_000), "nested too deep"),
    ("nested-in-an-object", lambda p: p.write_text('{"flows": ' + "[" * 100_000), "nested too deep"),
    ("a-4301-digit-seed", lambda p: p.write_text('{"seed": 1' + "0" * 4300 + "}"), "not a complete summary"),
    ("nan", _edited(_set(("wall_s",), float("nan"))), "NaN"),
    ("too-large", lambda p: os.truncate(p, MAX_SUMMARY_BYTES + 1), f"at most {MAX_SUMMARY_BYTES}"),
    *((kind.split()[-1], _replace(make), f"not a regular file ({kind})") for make, kind in NOT_FILES),
]  # fmt: skip


@pytest.fixture(params=[c[1:] for c in SUMMARIES], ids=[c[0] for c in SUMMARIES])
def broken(request: pytest.FixtureRequest, suite: Path, tmp_path: Path) -> tuple[Path, Path, str]:
    """A copy of the suite whose gcc run has a hostile summary: (suite, that run, what is wrong)."""
    root = tmp_path / "suite"
    shutil.copytree(suite, root)
    run = _gcc_run(root)
    damage, named = request.param
    damage(run / SUMMARY)
    return root, run, named


def test_score_compare_and_report_of_a_hostile_summary_end_with_one_line(
    broken: tuple[Path, Path, str], tmp_path: Path
) -> None:
    _, run, named = broken
    one_line(cli("score", run), str(run), "no run could be scored", named)
    one_line(cli("compare", run), str(run), "no complete run", named)
    line = one_line(cli("report", run, "--jobs", "1", "--run-figures", "none", "--html", tmp_path / "r.html"))
    assert str(run) in line and named in line and "no report was written" in line


def test_score_and_report_skip_a_hostile_summary_and_go_on(
    broken: tuple[Path, Path, str], tmp_path: Path
) -> None:
    root, run, named = broken
    out = cli("score", root)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert f"skipped: {run}" in out.stderr and named in out.stderr, out.stderr[-2000:]
    out = cli("report", root, "--jobs", "1", "--run-figures", "none", "--html", tmp_path / "r.html")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert str(run) in out.stderr and named in out.stderr, out.stderr[-2000:]


def test_resume_runs_a_run_with_a_hostile_summary_again(broken: tuple[Path, Path, str]) -> None:
    root, run, _ = broken
    out = cli(
        "suite", SCENARIO, "--cc", "gcc,fixed", "--jobs", "1", *(f"--set={s}" for s in SHORT), "--out", root
    )
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "(1 simulated, 1 already complete)" in out.stdout, out.stdout[-2000:]
    summary = json.loads((run / SUMMARY).read_text())
    assert summary["controller"] == "gcc" and isinstance(summary["flows"], list)


# --- TOML files a user names ------------------------------------------------------------------


@pytest.mark.parametrize(("make", "kind"), NOT_FILES, ids=[k.split()[-1] for _, k in NOT_FILES])
def test_a_toml_file_that_is_not_a_regular_file_is_refused(
    tmp_path: Path, suite: Path, make: Callable[[Path], None], kind: str
) -> None:
    toml = tmp_path / "x.toml"
    make(toml)
    one_line(cli("sweep", toml, "--out", tmp_path / "out"), str(toml), f"not a regular file ({kind})")
    one_line(cli("score", suite, "--thresholds", toml), str(toml), f"not a regular file ({kind})")


def test_a_toml_file_larger_than_rtcbench_reads_is_refused(tmp_path: Path) -> None:
    from rtcbench.results import MAX_TEXT_BYTES

    toml = tmp_path / "w.toml"
    toml.write_text('scenarios = ["rfc8867-5.1"]\n')
    os.truncate(toml, MAX_TEXT_BYTES + 1)
    one_line(cli("sweep", toml, "--out", tmp_path / "out"), str(toml), f"at most {MAX_TEXT_BYTES}")


# --- trace files (need the extension built from this tree) -------------------------------------

TRACED = """id = "traced"
duration = "2s"

[[links]]
name = "forward"
from = "A"
to = "B"
delay = "20ms"
capacity_trace = { file = "{file}", format = "{format}" }
queue = { size = "100ms" }

[[links]]
name = "backward"
from = "B"
to = "A"
delay = "20ms"

[[calls]]
name = "c"
from = "A"
to = "B"
"""


def _traced(tmp_path: Path, trace: Path, fmt: str = "mahimahi") -> Path:
    scenario = tmp_path / "s.toml"
    scenario.write_text(TRACED.replace("{file}", str(trace)).replace("{format}", fmt))
    return scenario


@pytest.mark.parametrize(("make", "kind"), NOT_FILES, ids=[k.split()[-1] for _, k in NOT_FILES])
def test_a_trace_that_is_not_a_regular_file_is_refused(
    tmp_path: Path, make: Callable[[Path], None], kind: str
) -> None:
    trace = tmp_path / "t.up"
    make(trace)
    one_line(
        cli("run", _traced(tmp_path, trace), "--no-figure", "--out", tmp_path / "out"),
        "links.forward.capacity_trace.file", str(trace), f"not a regular file ({kind})",
    )  # fmt: skip


@pytest.mark.parametrize("fmt", ["mahimahi", "csv"])
def test_a_file_that_is_not_a_trace_shows_nothing_of_itself(tmp_path: Path, fmt: str) -> None:
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$secret-hash:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n")
    line = one_line(cli("run", _traced(tmp_path, secret, fmt), "--no-figure", "--out", tmp_path / "out"))
    assert f"{secret}:1:" in line
    assert "secret-hash" not in line and "99999" not in line and "daemon" not in line
