"""Run identity: a results folder is keyed by exactly what ran (`rtcbench.identity`), so two
configurations never share a folder and the same configuration finds its own again; the summary
records the key, the fingerprint and the provenance (version, commit, command)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import rtcbench
from rtcbench import identity, runner
from rtcbench.controller import Controller, user_controller
from rtcbench.scenarios import variant_fields
from rtcbench.suite import run_suite

STEP = """id = "my-step"
duration = "4s"

[[links]]
name = "forward"
from = "A"
to = "B"
delay = "20ms"
capacity_trace = { file = "step.csv" }
queue = { size = "100ms" }

[[links]]
name = "backward"
from = "B"
to = "A"
delay = "20ms"

[[calls]]
from = "A"
to = "B"
"""


def write_step(folder: Path, rates: tuple[int, int]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "step.csv").write_text(f"time_s,rate_kbps\n0,{rates[0]}\n2,{rates[1]}\n")
    (folder / "my-step.toml").write_text(STEP)
    return folder / "my-step.toml"


def folder_of(out: Path, scenario: Path | str, sets: tuple[str, ...] = (), cc: str = "fixed") -> Path:
    (variant,) = rtcbench.resolve(scenario, list(sets))
    return runner.run_folder(out, variant, cc, 1)


def test_a_different_trace_an_override_or_an_edit_never_shares_a_folder(tmp_path: Path) -> None:
    # The capacity-traces tutorial's trap: the same scenario file, another trace, the same folder.
    scenario = write_step(tmp_path / "a", (1000, 500))
    first = folder_of(tmp_path / "out", scenario)
    write_step(tmp_path / "a", (1000, 400))
    assert folder_of(tmp_path / "out", scenario) != first
    # The same trace elsewhere on disk is the same configuration.
    elsewhere = write_step(tmp_path / "b", (1000, 500))
    assert folder_of(tmp_path / "out", elsewhere) == first
    # An override, or an edit of what runs, is another configuration; words and layout are not.
    write_step(tmp_path / "a", (1000, 500))
    assert folder_of(tmp_path / "out", scenario) == first
    assert folder_of(tmp_path / "out", scenario, ("duration=5s",)) != first
    scenario.write_text(STEP.replace('delay = "20ms"', 'delay = "25ms"', 1))
    assert folder_of(tmp_path / "out", scenario) != first
    scenario.write_text('title = "a step"\n# a comment\n' + STEP.replace(" = ", "  =  "))
    assert folder_of(tmp_path / "out", scenario) == first
    # Every part of the folder name is what ran: variant, controller, key, seed.
    assert first.relative_to(tmp_path / "out").parts[:2] == ("my-step", "fixed")
    assert len(first.parent.name) == identity.KEY_LENGTH and first.name == "seed-1"


def test_runs_of_two_traces_both_stay_and_the_same_one_resumes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    scenario = write_step(tmp_path / "s", (1000, 500))
    (a,) = rtcbench.run(scenario, "fixed", out=str(out), figure=False)  # a str is a folder too
    write_step(tmp_path / "s", (800, 800))
    (b,) = rtcbench.run(scenario, "fixed", out=out, figure=False)
    assert a.path is not None and b.path is not None and a.path != b.path
    assert (a.path / "summary.json").is_file() and (b.path / "summary.json").is_file()
    capacity = [
        json.loads((p / "summary.json").read_text())["phases"][0]["capacity_bps"] for p in (a.path, b.path)
    ]
    assert capacity[0] != capacity[1], "each folder holds its own trace's run"
    # A suite of the same configuration finds the run done; it takes a str folder as well.
    again = run_suite([scenario], ["fixed"], out=str(out), jobs=1)
    assert (again.ran, again.skipped) == (0, 1)
    assert again.runs["path"][0] == b.path.relative_to(out).as_posix()


def test_a_run_of_an_older_model_revision_is_not_resumed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same configuration made by an older behaviour of rtcbench lands in another folder, so a
    # suite does not take it for a current run.
    out = tmp_path / "out"
    scenario = write_step(tmp_path / "s", (1000, 500))
    monkeypatch.setattr(identity, "MODEL_REVISION", identity.MODEL_REVISION - 1)
    (old,) = rtcbench.run(scenario, "fixed", out=out, figure=False)
    monkeypatch.undo()
    again = run_suite([scenario], ["fixed"], out=out, jobs=1)
    assert (again.ran, again.skipped) == (1, 0)
    assert old.path is not None and again.runs["path"][0] != old.path.relative_to(out).as_posix()
    summary = json.loads((out / again.runs["path"][0] / "summary.json").read_text())
    assert summary["identity"]["model_revision"] == identity.MODEL_REVISION


def test_the_summary_records_what_ran_and_what_made_it(tmp_path: Path) -> None:
    (r,) = rtcbench.run("seed001-staircase", "gcc", out=tmp_path, sets=["duration=3s"], figure=False)
    assert r.path is not None
    s = json.loads((r.path / "summary.json").read_text())
    (variant,) = rtcbench.resolve("seed001-staircase", ["duration=3s"])
    assert s["identity"]["scenario_sha256"] == variant.fingerprint and len(variant.fingerprint) == 64
    assert s["identity"]["key"] == r.path.parent.name
    assert s["identity"]["controller"] == {"name": "gcc", "source_sha256": None, "state_sha256": None}
    p = s["provenance"]
    assert p["rtcbench_version"] == rtcbench.__version__ and p["python"].count(".") == 2
    # Run from this checkout: the commit is HEAD's.
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout
    assert p["git_commit"] == head.strip() and isinstance(p["git_dirty"], bool)
    assert p["command"] is None  # from Python; the command line records itself
    cli = subprocess.run(
        [sys.executable, "-m", "rtcbench.cli", "run", "seed001-staircase", "--cc", "fixed", "--set",
         "duration=3s", "--no-figure", "--out", str(tmp_path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    (written,) = tmp_path.glob("seed001-staircase/fixed/*/seed-1/summary.json")
    command = json.loads(written.read_text())["provenance"]["command"]
    assert command.startswith("rtcbench run seed001-staircase --cc fixed --set duration=3s")


class Paced(Controller):
    def __init__(self, rate_bps: float = 300_000.0) -> None:
        self.rate = rate_bps

    def on_feedback(self, now_us: int, report: object) -> None:
        pass

    def target_rate(self) -> float:
        return self.rate


def test_a_python_controller_is_keyed_by_its_source_and_its_state(tmp_path: Path) -> None:
    (variant,) = rtcbench.resolve("seed001-staircase", ["duration=3s"])

    def key(controller: object) -> str:
        return runner.run_folder(tmp_path, variant, runner.resolve_controller(controller), 1).parent.name  # type: ignore[arg-type]

    # Instances with other parameters are other configurations; equal ones are the same.
    assert key(Paced(300_000.0)) == key(Paced(300_000.0)) != key(Paced(500_000.0))
    assert key(Paced) != key(Paced(300_000.0))
    # A controller file: its folder has no ':', and editing the file gives a new key.
    module = tmp_path / "mycc.py"
    body = """
        import rtcbench

        class Mine(rtcbench.Controller):
            def on_feedback(self, now_us, report):
                pass

            def target_rate(self):
                return {rate}
    """
    module.write_text(textwrap.dedent(body.format(rate=300_000.0)))
    before = runner.run_folder(tmp_path, variant, runner.resolve_controller(f"{module}:Mine"), 1)
    assert before.parent.parent.name == "mycc.Mine"
    assert identity.controller_identity(user_controller(Paced))["source_sha256"] is not None
    sys.modules.pop("mycc", None)
    module.write_text(textwrap.dedent(body.format(rate=400_000.0)))
    after = runner.run_folder(tmp_path, variant, runner.resolve_controller(f"{module}:Mine"), 1)
    sys.modules.pop("mycc", None)
    assert after.parent.parent == before.parent.parent and after.parent != before.parent


@pytest.mark.parametrize("name", ["pkg.mod:Class", "a/b.py:C", "x:<locals>.Y"])
def test_controller_folders_are_one_safe_component(name: str) -> None:
    from rtcbench.results import controller_folder

    folder = controller_folder(name)
    assert ":" not in folder and "/" not in folder and "<" not in folder
    assert controller_folder("gcc-draft") == "gcc-draft"


def test_the_report_does_not_pool_two_configurations_of_one_variant(tmp_path: Path) -> None:
    from rtcbench.report.runs import Source, find_runs

    out = tmp_path / "out"
    for duration in ("3s", "4s"):
        rtcbench.run("seed001-staircase", "fixed", out=out, sets=[f"duration={duration}"], figure=False)
    problems: list[object] = []
    runs = find_runs([Source(out, "out")], problems)  # type: ignore[arg-type]
    assert problems == [] and len(runs) == 2
    # Same scenario and variant names, two configurations: two cases, each marked.
    assert len({r.case for r in runs}) == 2
    assert all(r.variant.startswith("#") and len(r.config) == 8 for r in runs)


@pytest.mark.parametrize(
    ("variant", "fields"),
    [
        ("delay=50ms,mechanism=link-rate", {"delay": "50ms", "mechanism": "link-rate"}),
        ("queue=300ms,tcp_cc=cubic", {"queue": "300ms", "tcp_cc": "cubic"}),
        ("sizes=[1, 2],rate=3", {"sizes": "[1, 2]", "rate": "3"}),
        ("", {}),
        ("my-own-name", {}),
    ],
)
def test_a_variant_name_splits_into_its_fields(variant: str, fields: dict[str, str]) -> None:
    assert variant_fields(variant) == fields


def test_the_suite_tables_have_a_column_per_variant_field(tmp_path: Path) -> None:
    result = run_suite(["rfc8867-5.6"], ["fixed"], out=str(tmp_path), sets=["duration=7s"], jobs=1)
    for table in (result.flows, result.runs):
        head = table.columns[: table.columns.index("run_key") + 4]
        # Each field, then its value as a number where it is one (the queue in seconds).
        assert head[-3:] == ["variant.queue", "variant.queue_s", "variant.tcp_cc"], head
        rows = table.select("variant", "variant.queue", "variant.tcp_cc").unique().sort("variant").rows()
        assert all(v == f"queue={q},tcp_cc={cc}" for v, q, cc in rows) and len(rows) == 4


def test_one_option_has_one_spelling_in_every_command() -> None:
    # `--label` on one command and `--labels` on another is the trap: the same meaning, two names.
    import typer

    from rtcbench.cli import app

    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    assert {"run", "suite", "compare", "report", "table", "sweep"} <= set(commands)
    spellings: dict[str, set[str]] = {}
    for command in commands.values():
        for param in command.params:
            for opt in getattr(param, "opts", []):
                if opt.startswith("--"):
                    stem = opt[2:].removesuffix("s").replace("-", "")
                    spellings.setdefault(stem, set()).add(opt)
    # Two options, not two spellings of one: `run --figure/--no-figure` draws overview.png,
    # `report --figures DIR` writes the report's figures as files.
    distinct = {"figure": {"--figure", "--figures"}}
    assert {s: o for s, o in spellings.items() if len(o) > 1 and distinct.get(s) != o} == {}
    assert "--labels" in spellings["label"]


def test_the_commit_is_read_without_writing_to_the_checkout(tmp_path: Path) -> None:
    # `git status` refreshes a stale index and writes it back under .git/index.lock: a write in the
    # user's checkout, outside --out, that fails a `git commit` made meanwhile.
    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", *args],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        return done.stdout.strip()

    git("init", "-q")
    (tmp_path / "a.txt").write_text("a\n")
    git("add", "a.txt")
    git("commit", "-q", "-m", "a")
    index = tmp_path / ".git" / "index"
    # Same content, newer time: the index's record of the file is stale, and a refresh rewrites it.
    os.utime(tmp_path / "a.txt", (index.stat().st_mtime + 10, index.stat().st_mtime + 10))
    before = index.stat()
    assert identity._git_state(tmp_path) == (git("rev-parse", "HEAD"), False)
    after = index.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns), "the index was rewritten"


def test_a_controller_fix_keeps_browser_runs_current(monkeypatch: pytest.MonkeyPatch) -> None:
    # Chromium's peers run none of rtcbench's controllers: raising MODEL_REVISION alone leaves a
    # browser run's key, and so its folder, as it was; raising BROWSER_REVISION moves it.
    cc: dict[str, str | None] = {"name": "gcc"}
    browser = identity.run_key("f", cc, identity.BROWSER, "156")
    simulated = identity.run_key("f", cc)
    monkeypatch.setattr(identity, "MODEL_REVISION", identity.MODEL_REVISION + 1)
    assert identity.run_key("f", cc, identity.BROWSER, "156") == browser
    assert identity.run_key("f", cc) != simulated
    monkeypatch.setattr(identity, "BROWSER_REVISION", identity.BROWSER_REVISION + 1)
    assert identity.run_key("f", cc, identity.BROWSER, "156") != browser
    assert identity.BROWSER_REVISION <= identity.MODEL_REVISION
