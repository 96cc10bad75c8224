"""Links planted in a results folder: a run's figure cache, a scenario folder or a run folder that
is a symbolic link to somewhere else. No command writes or deletes through one (the folder it
points to is byte for byte as before), readers name a run folder that is a link in one line
instead of leaving it out unseen, resume puts a new run in its place, and nothing hidden (`.tmp`,
`.old`) is left behind (docs/security.md). Every case runs the real command line in a subprocess.
"""

from __future__ import annotations

import hashlib
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rtcbench.results import LINK_READ, LINK_WRITE, PlantedLink, run_folders
from rtcbench.suite import run_suite

RTCBENCH = [sys.executable, "-m", "rtcbench.cli"]
TIMEOUT_S = 120
SCENARIO = "seed001-sudden-reduction"
SHORT = ["duration=2s"]
TABLE = "002-step-up"
"""The reproduction set's table of one short case."""


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*RTCBENCH, *map(str, args)], capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry under `folder` (links not followed), with the SHA-256 of each file's bytes."""
    entries = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            entries[rel] = f"link to {path.readlink()}"
        elif path.is_file():
            entries[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            entries[rel] = "folder"
    return entries


def leftovers(*folders: Path) -> list[Path]:
    """Hidden temporary or replaced folders and files (`results.atomic_dir`, `atomic_file`)."""
    return [p for folder in folders for p in folder.rglob(".*") if p.name.endswith((".tmp", ".old"))]


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A suite of four runs (gcc and fixed, two seeds each: `compare` has a side left when one
    run is taken away), as `rtcbench suite` leaves it."""
    out = tmp_path_factory.mktemp("suite")
    run_suite([SCENARIO], ["gcc", "fixed"], reps=2, jobs=1, out=out, sets=SHORT)
    return out


def copy_of(suite: Path, tmp_path: Path) -> Path:
    out = tmp_path / "results"
    shutil.copytree(suite, out, symlinks=True)
    return out


def outside(tmp_path: Path, like: Path | None = None) -> Path:
    """A folder outside the results folder, empty or a copy of `like`, with a file of its own."""
    target = tmp_path / "elsewhere"
    if like is not None:
        shutil.copytree(like, target)
    else:
        target.mkdir()
    (target / "mine.txt").write_text("not rtcbench's\n")
    return target


def run_of(out: Path, controller: str) -> Path:
    """The folder of `controller`'s first seed."""
    return next(f for f in run_folders(out) if f.parent.parent.name == controller)


def test_a_planted_link_error_is_one_line_that_survives_a_worker() -> None:
    link = Path("results/x")
    assert str(PlantedLink(link)) == f"results/x: {LINK_WRITE}"
    again = pickle.loads(pickle.dumps(PlantedLink(link, LINK_READ)))
    assert (again.link, again.what, str(again)) == (link, LINK_READ, f"results/x: {LINK_READ}")


def test_report_neither_writes_nor_prunes_through_a_figure_cache_that_is_a_link(
    suite: Path, tmp_path: Path
) -> None:
    out = copy_of(suite, tmp_path)
    assert cli("report", out).returncode == 0
    (cache,) = out.rglob(".report-figures")
    # The folder it points to holds entries of the same figures under other keys: the report
    # would prune them from its own cache.
    target = outside(tmp_path)
    for entry in cache.iterdir():
        fig_id = entry.name.split(".")[0]
        (target / f"{fig_id}.{'0' * 64}.png").write_bytes(b"someone else's figure")
    shutil.rmtree(cache)
    cache.symlink_to(target, target_is_directory=True)
    before = snapshot(target)
    done = cli("report", out)
    assert snapshot(target) == before
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"problem: {cache}: {LINK_WRITE}" in done.stderr.splitlines(), done.stderr[-2000:]
    assert cache.is_symlink()
    assert not leftovers(out, target)


def test_suite_refuses_a_scenario_folder_that_is_a_link_before_it_runs(suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    out.mkdir()
    target = outside(tmp_path)
    (out / SCENARIO).symlink_to(target, target_is_directory=True)
    before = snapshot(target)
    done = cli("suite", SCENARIO, "--cc", "gcc", "--jobs", "1", "--out", out, *(f"--set={s}" for s in SHORT))
    assert snapshot(target) == before
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [f"error: {out / SCENARIO}: {LINK_WRITE}"]
    assert not leftovers(out, target)


def test_run_refuses_a_controller_folder_that_is_a_link(suite: Path, tmp_path: Path) -> None:
    out = copy_of(suite, tmp_path)
    controller = run_of(out, "gcc").parent.parent
    target = outside(tmp_path, like=controller)
    shutil.rmtree(controller)
    controller.symlink_to(target, target_is_directory=True)
    before = snapshot(target)
    done = cli("run", SCENARIO, "--cc", "gcc", "--set", "duration=3s", "--out", out, "--no-figure")
    assert snapshot(target) == before
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [f"error: {controller}: {LINK_WRITE}"]
    assert not leftovers(out, target)


def test_report_score_and_compare_name_a_run_folder_that_is_a_link_alike(suite: Path, tmp_path: Path) -> None:
    out = copy_of(suite, tmp_path)
    run = run_of(out, "gcc")
    target = outside(tmp_path, like=run)
    shutil.rmtree(run)
    run.symlink_to(target, target_is_directory=True)
    before = snapshot(target)
    line = f"{run}: {LINK_READ}"
    for command, prefix in (("report", "problem"), ("score", "skipped"), ("compare", "skipped")):
        done = cli(command, out)
        assert "Traceback" not in done.stderr, done.stderr[-2000:]
        assert f"{prefix}: {line}" in done.stderr.splitlines(), (command, done.stderr[-2000:])
    assert snapshot(target) == before
    assert not leftovers(out, target)


def test_sweep_refuses_a_point_folder_that_is_a_link_before_it_runs(tmp_path: Path) -> None:
    from rtcbench import sweep

    spec = tmp_path / "sweep.toml"
    spec.write_text(
        f'scenarios = ["{SCENARIO}"]\ncontrollers = ["gcc"]\nseeds = {{ first = 1, count = 1 }}\n'
        '[grid]\nduration = ["2s"]\n',
        encoding="utf-8",
    )
    (point,) = sweep.load(spec).points
    out = tmp_path / "results"
    out.mkdir()
    target = outside(tmp_path)
    (out / point.slug).symlink_to(target, target_is_directory=True)
    before = snapshot(target)
    done = cli("sweep", spec, "--out", out, "--jobs", "1")
    assert snapshot(target) == before
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [f"error: {out / point.slug}: {LINK_WRITE}"]
    assert not leftovers(out, target)


@pytest.mark.parametrize("target_holds", ["nothing", "another run"])
def test_suite_resume_puts_a_new_run_in_place_of_a_run_folder_that_is_a_link(
    suite: Path, tmp_path: Path, target_holds: str
) -> None:
    out = copy_of(suite, tmp_path)
    run = run_of(out, "gcc")
    target = outside(tmp_path, like=run_of(out, "fixed") if target_holds == "another run" else None)
    shutil.rmtree(run)
    run.symlink_to(target, target_is_directory=True)
    before = snapshot(target)
    args = (
        "suite", SCENARIO, "--cc", "gcc,fixed", "--reps", "2", "--jobs", "1", "--out", out,
        *(f"--set={s}" for s in SHORT),
    )  # fmt: skip
    done = cli(*args)
    assert snapshot(target) == before
    assert not leftovers(out, target)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "1 simulated, 3 already complete" in done.stdout + done.stderr
    assert run.is_dir() and not run.is_symlink()
    again = cli(*args)
    assert again.returncode == 0 and "0 simulated, 4 already complete" in again.stdout + again.stderr


def test_reproduce_resume_puts_a_new_run_in_place_of_a_run_folder_that_is_a_link(tmp_path: Path) -> None:
    out = tmp_path / "results"
    args = ("reproduce", "--table", TABLE, "--browser", "none", "--out", out)
    assert cli(*args).returncode == 0
    run = run_folders(out)[0]
    target = outside(tmp_path)
    shutil.rmtree(run)
    run.symlink_to(target, target_is_directory=True)
    before = snapshot(target)
    done = cli(*args)
    assert snapshot(target) == before
    assert not leftovers(out, target)
    assert done.returncode == 0, done.stderr[-2000:]
    assert run.is_dir() and not run.is_symlink()
