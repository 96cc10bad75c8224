"""Sweeps: expanding a sweep file, running it locally and on a local Ray cluster, the index
table, resuming after an interruption, and mistakes in the file."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from rtcbench import sweep as sw
from rtcbench.suite import RUNS_TABLE, run_suite

SPEC = """
scenarios = ["rfc8867-5.1"]
controllers = ["fixed"]
seeds = { first = 1, count = 2 }

[grid]
delay = ["20ms", "80ms"]

[[points]]
duration = "8s"
mechanism = "link-rate"
"""
"""2 delays × 2 seeds of an 8 s rfc8867-5.1, link-rate mechanism only: 4 runs. `delay` and
`mechanism` are the scenario's variant names: setting one pins that variant."""


def _spec(tmp_path: Path, text: str = SPEC) -> Path:
    path = tmp_path / "sweep.toml"
    path.write_text(text, encoding="utf-8")
    return path


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rtcbench.cli", *args], capture_output=True, text=True, check=False, env=env
    )


def test_a_sweep_file_expands_to_grid_times_points_times_seeds(tmp_path: Path) -> None:
    nested = sw.load(_spec(tmp_path, 'scenarios = ["x"]\n[grid]\nlinks.forward.delay = ["1ms", "2ms"]\n'))
    assert [p.values for p in nested.points] == [
        (("links.forward.delay", "1ms"),),
        (("links.forward.delay", "2ms"),),
    ]
    spec = sw.load(_spec(tmp_path))
    assert spec.seeds == (1, 2) and spec.controllers == ("fixed",)
    assert [p.values for p in spec.points] == [
        (("duration", "8s"), ("mechanism", "link-rate"), ("delay", "20ms")),
        (("duration", "8s"), ("mechanism", "link-rate"), ("delay", "80ms")),
    ]
    assert spec.swept == ["duration", "mechanism", "delay"]
    # Strings stay strings: quoted for --set, so "true" would not become a boolean.
    assert spec.points[0].sets[0] == 'duration="8s"'
    assert len({p.slug for p in spec.points}) == 2


def test_a_local_sweep_indexes_every_run_and_resumes_after_an_interruption(tmp_path: Path) -> None:
    spec = sw.load(_spec(tmp_path))
    out = tmp_path / "out"
    first = sw.run_sweep(spec, out, jobs=1)
    assert (first.ran, first.skipped) == (4, 0)
    runs = pl.read_parquet(out / sw.RUNS_TABLE)
    assert runs.height == 4
    assert sorted(runs["delay"].to_list()) == ["20ms", "20ms", "80ms", "80ms"]
    assert set(runs["seed"]) == {1, 2} and set(runs["controller"]) == {"fixed"}
    for rel in runs["path"]:
        assert (out / rel / "summary.json").is_file()
    # The longer delay shows in the runs' RTT, 60 ms more each way (rfc8867-5.1 applies `delay` to
    # both links): the swept field reached the scenario.
    flows = pl.read_parquet(out / sw.FLOWS_TABLE).filter(pl.col("kind") == "video")
    rtt = dict(flows.group_by("delay").agg(pl.col("rtt_mean_ms").mean()).iter_rows())
    assert rtt["80ms"] - rtt["20ms"] == pytest.approx(120, abs=5)

    # An interrupted sweep: one run's folder never completed. Started again, only it runs.
    shutil.rmtree(out / runs["path"][2])
    (out / sw.RUNS_TABLE).unlink()
    again = sw.run_sweep(spec, out, jobs=1)
    assert (again.ran, again.skipped) == (1, 3)
    timings = ("wall_s", "sim_wall_s")
    assert pl.read_parquet(out / sw.RUNS_TABLE).drop(timings).equals(runs.drop(timings))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[tuple[str, dict[str, str]]]:
    """A one-node Ray cluster on this machine, started and stopped by the test (Ray's token
    authentication is off: the cluster only listens here and lives for the test). A start that
    fails is retried once after stopping whatever Ray processes are left over."""
    pytest.importorskip("ray", reason="Ray is in the [dev] extras; make test installs it")
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    ray = [sys.executable, "-m", "ray.scripts.scripts"]
    port = _free_port()
    start = [*ray, "start", "--head", "--num-cpus", "2", "--port", str(port)]
    start += ["--include-dashboard=false", "--disable-usage-stats"]
    started = subprocess.run(start, env=env, capture_output=True, text=True, check=False)
    if started.returncode != 0:
        subprocess.run([*ray, "stop", "--force"], env=env, capture_output=True, check=False)
        started = subprocess.run(start, env=env, capture_output=True, text=True, check=False)
    assert started.returncode == 0, f"ray start failed:\n{started.stdout}\n{started.stderr}"
    try:
        yield f"127.0.0.1:{port}", env
    finally:
        subprocess.run([*ray, "stop", "--force"], env=env, capture_output=True, check=False)


def test_a_sweep_and_a_suite_on_a_ray_cluster_give_the_same_runs_as_locally(
    tmp_path: Path, ray_cluster: tuple[str, dict[str, str]]
) -> None:
    address, env = ray_cluster
    spec = _spec(tmp_path)
    local = sw.run_sweep(sw.load(spec), tmp_path / "local", jobs=1)
    out = cli("sweep", str(spec), "--out", str(tmp_path / "ray"), "--ray", address, env=env)
    assert out.returncode == 0, out.stderr
    assert "4 runs (4 simulated, 0 already complete)" in out.stdout
    remote = pl.read_parquet(tmp_path / "ray" / sw.RUNS_TABLE)
    # Deterministic runs: the cluster's results are the local ones, metric for metric.
    keep = [c for c in local.runs.columns if c not in ("wall_s", "sim_wall_s")]
    assert remote.select(keep).sort("path").equals(local.runs.select(keep).sort("path"))
    # A suite takes --ray too, with the same result as on this machine's processes.
    sets = ["duration=10s", "delay=50ms", "mechanism=link-rate"]
    here = run_suite(["rfc8867-5.1"], ["gcc", "nada"], reps=2, jobs=1, out=tmp_path / "s-local", sets=sets)
    args = ["suite", "rfc8867-5.1", "--cc", "gcc,nada", "--reps", "2", "--out", str(tmp_path / "s-ray")]
    suite_out = cli(*args, *(a for s in sets for a in ("--set", s)), "--ray", address, env=env)
    assert suite_out.returncode == 0, suite_out.stderr
    assert "4 runs (4 simulated, 0 already complete)" in suite_out.stdout
    there = pl.read_parquet(tmp_path / "s-ray" / RUNS_TABLE)
    keep = [c for c in here.runs.columns if c not in ("wall_s", "sim_wall_s")]
    assert there.select(keep).sort("path").equals(here.runs.select(keep).sort("path"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'scenarios = ["rfc8867-5.1"]\nrepeat = 3\n',
            "unknown field 'repeat'; allowed: scenarios, controllers",
        ),
        ("controllers = ['gcc']\n", "scenarios: a non-empty list"),
        ('scenarios = ["rfc8867-5.1"]\nseeds = { count = 0 }\n', "seeds: a list of integers, or { first = N"),
        ('scenarios = ["rfc8867-5.1"]\n[grid]\nduration = []\n', "grid.duration: a non-empty list of values"),
        (
            'scenarios = ["rfc8867-5.1"]\n[grid]\nduration = ["5s"]\n[[points]]\nduration = "6s"\n',
            "points.0 and grid both set duration",
        ),
    ],
)
def test_mistakes_in_a_sweep_file_are_named(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(sw.SweepError) as e:
        sw.load(_spec(tmp_path, text))
    assert str(e.value).startswith(str(tmp_path / "sweep.toml")) and message in str(e.value)


def test_the_cli_reports_a_bad_field_value_in_one_line_before_running(tmp_path: Path) -> None:
    spec = _spec(tmp_path, 'scenarios = ["rfc8867-5.1"]\n[grid]\n"links.forward.delay" = ["fast"]\n')
    out = cli("sweep", str(spec), "--out", str(tmp_path / "out"))
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1
    assert "sweep.toml" in out.stderr and "links.forward.delay" in out.stderr
    assert not (tmp_path / "out").exists()


def _grid(*sizes: int, extra: str = "") -> str:
    """A sweep file of one scenario whose grid has axes of these sizes."""
    axes = [f"f{k} = [{', '.join(map(str, range(n)))}]" for k, n in enumerate(sizes)]
    return f'scenarios = ["rfc8867-5.1"]\n{extra}[grid]\n' + "\n".join(axes) + "\n"


def _not_expanded(*axes: object) -> None:
    raise AssertionError("the grid was expanded before its size was checked")


@pytest.mark.parametrize("sizes", [(100, 1000), (100_000, 100_000)], ids=["1e5", "1e10"])
def test_a_sweep_of_too_many_points_is_refused_at_once(
    tmp_path: Path, sizes: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Refused from the axes' lengths, before a single point is made: 10^10 points are never
    # expanded (they once were, for ever). A check of what runs, not of how long it takes: the
    # time is tomllib's, reading 200 000 numbers (0.3-1.1 s of CPU on this machine).
    spec = _spec(tmp_path, _grid(*sizes))
    monkeypatch.setattr(sw.itertools, "product", _not_expanded)
    with pytest.raises(sw.SweepError) as e:
        sw.load(spec)
    points = sizes[0] * sizes[1]
    assert f"{points:,} points (1 listed × {sizes[0]:,} × {sizes[1]:,}); a sweep has at most 10,000" in str(
        e.value
    )


def test_the_cli_refuses_a_sweep_too_large_in_one_line(tmp_path: Path) -> None:
    out = cli("sweep", str(_spec(tmp_path, _grid(100, 1000))), "--out", str(tmp_path / "out"))
    assert out.returncode == 2, out.stderr
    assert out.stderr.count("\n") == 1 and "100,000 points" in out.stderr, out.stderr
    assert not (tmp_path / "out").exists()


def test_the_largest_sweep_is_made_unique_in_linear_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Points were kept unique by a search of the list made so far: 10^4 points took 6 s, some
    # 5 * 10^7 comparisons. Kept in a dict, they are compared only on a hash collision.
    compared = 0
    equal = sw.SweepPoint.__eq__

    def counting(self: sw.SweepPoint, other: object) -> bool:
        nonlocal compared
        compared += 1
        return equal(self, other)

    monkeypatch.setattr(sw.SweepPoint, "__eq__", counting)
    loaded = sw.load(_spec(tmp_path, _grid(100, 100)))
    assert len(loaded.points) == sw.MAX_POINTS == 10_000
    assert compared < 1_000, compared
    # A long list of seeds was checked for repeats the same way; now by counting them once.
    many_seeds = _spec(tmp_path, _grid(1, extra=f"seeds = [{', '.join(map(str, range(10_000)))}]\n"))
    assert len(sw.load(many_seeds).seeds) == 10_000


def test_runs_are_bounded_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 11 points × 10,000 seeds.
    spec = _spec(tmp_path, _grid(11, extra="seeds = { count = 10000 }\n"))
    with pytest.raises(sw.SweepError, match=r"110,000 runs \(11 points × 10,000 .*at most 100,000"):
        sw.load(spec)
    # The scenarios' own variants count: rfc8867-5.1 has four.
    monkeypatch.setattr(sw, "MAX_RUNS", 3)
    small = sw.load(_spec(tmp_path, 'scenarios = ["rfc8867-5.1"]\n'))
    with pytest.raises(sw.SweepError, match="more than 3 runs once the scenarios' variants are counted"):
        sw.run_sweep(small, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_cli_prints_names_and_paths_as_they_are(tmp_path: Path) -> None:
    # Neither rich markup nor emoji codes in a user's path: both used to be rendered.
    spec = _spec(tmp_path, SPEC.replace('["20ms", "80ms"]', '["20ms"]').replace("count = 2", "count = 1"))
    out = tmp_path / "[red]a[/red]:x:"
    done = cli("sweep", str(spec), "--jobs", "1", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert f"index: {out / sw.RUNS_TABLE}, {out / sw.FLOWS_TABLE}" in done.stdout, done.stdout
    unknown = cli("run", ":x:[bold]", "--out", str(tmp_path / "o"))
    assert unknown.returncode == 2 and "named ':x:[bold]'" in unknown.stderr, unknown.stderr


def test_a_sweep_runs_a_learned_policy_found_beside_its_file(tmp_path: Path) -> None:
    """`onnx:MODEL` in a sweep file: the model beside the file (not in the working directory)
    runs every point next to `gcc`, each run keyed by the model's content."""
    shipped = Path(__file__).resolve().parents[1] / "examples" / "models" / "bc-gcc.onnx"
    shutil.copy(shipped, tmp_path / "policy.onnx")
    spec = sw.load(
        _spec(tmp_path, SPEC.replace('controllers = ["fixed"]', 'controllers = ["gcc", "onnx:policy.onnx"]'))
    )
    assert spec.controllers[1] == f"onnx:{tmp_path / 'policy.onnx'}"
    result = sw.run_sweep(spec, tmp_path / "out", jobs=2)
    assert result.ran == 8
    runs = result.runs
    assert sorted(runs["controller"].unique()) == ["gcc", "onnx:policy"]
    policy = runs.filter(pl.col("controller") == "onnx:policy")
    assert policy.height == 4 and (policy["video_goodput_bps"] > 0).all()
    model_sha = hashlib.sha256(shipped.read_bytes()).hexdigest()
    summaries = list((tmp_path / "out").rglob("onnx.policy/*/seed-*/summary.json"))
    assert len(summaries) == 4
    for summary in summaries:
        identity = json.loads(summary.read_text())["identity"]
        assert identity["controller"] == {
            "name": "onnx:policy",
            "source_sha256": model_sha,
            "state_sha256": None,
        }
        assert summary.parent.parent.name == identity["key"]
