"""The command line as a user meets it: listing, a run's results folder, and mistakes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import polars as pl
import pytest

import rtcbench
from rtcbench import plots, results, runner

RTCBENCH = [sys.executable, "-m", "rtcbench.cli"]


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RTCBENCH, *args], capture_output=True, text=True, cwd=cwd, check=False)


def test_the_command_list_wraps_at_words_not_at_the_docstrings_lines() -> None:
    # Each command's line in `rtcbench --help` is the first sentence of its docstring, reflowed:
    # "write one results folder per / variant / and controller" was the docstring's own breaks
    # wrapped again by the terminal.
    from rtcbench.cli import commands

    done = subprocess.run(
        [*RTCBENCH, "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "COLUMNS": "100"},
    )
    listed = " ".join(done.stdout.replace("│", " ").split())
    for info in commands.app.registered_commands:
        line = commands.short_help(info.callback)  # type: ignore[arg-type]
        assert "\n" not in line and line.endswith(".") and "(" not in line.split(")")[-1], line
        assert f"{info.name} {line}" in listed, line


def test_version_and_help_by_either_name_on_every_command() -> None:
    from rtcbench.identity import MODEL_REVISION

    out = cli("--version")
    assert out.returncode == 0 and out.stderr == ""
    assert out.stdout == f"rtcbench {rtcbench.__version__} (model revision {MODEL_REVISION})\n"
    commands = (
        "",
        "list",
        "run",
        "suite",
        "sweep",
        "calibrate",
        "reproduce",
        "stacks",
        "score",
        "export",
        "compare",
        "report",
        "table",
    )
    for command in commands:
        short, long = (cli(*command.split(), flag) for flag in ("-h", "--help"))
        assert short.returncode == 0 and "Usage: rtcbench" in short.stdout, (command, short.stderr)
        assert short.stdout == long.stdout


def test_list_filters_by_text_suite_and_network() -> None:
    def ids(*args: str) -> list[str]:
        out = cli("list", *args)
        assert out.returncode == 0, out.stderr
        return [line.split("│")[1].strip() for line in out.stdout.splitlines() if line.startswith("│ ") and
                line.split("│")[1].strip() and line.split("│")[2].strip().isdigit()]  # fmt: skip

    lte = ["seed000-5.4.6", "seed000-5.4.7", "rfc8869-2.1", "rfc8869-2.2", "l4s-lte"]
    assert ids("--network", "lte") == lte
    assert set(ids("--network", "trace")) == {"trace-lte-drive", "trace-lte-walk", "trace-wifi-office"}
    assert ids("TCP", "--suite", "rfc8867") == ["rfc8867-5.6", "rfc8867-5.7", "rfc8867-5.7-burst30"]
    wifi = ids("--network", "wifi")
    assert "seed004-testbed" in wifi and all(
        i.startswith(("seed000-5.3.", "seed004", "rfc8869-3.", "l4s-wifi")) for i in wifi
    )
    bad = cli("list", "--network", "satellite")
    assert bad.returncode == 2 and "allowed: wired, wifi, lte, trace" in bad.stderr


def test_run_keeps_an_index_of_every_run_in_its_folder(tmp_path: Path) -> None:
    """Run folders are named by a 12-hex key: `runs.parquet` says what each one ran, over every
    `rtcbench run` into the folder, and `rtcbench.load_runs` reads the same from any folder."""
    for cc in ("gcc", "fixed"):
        out = cli(
            "run", "rfc8867-5.1", "--cc", cc, "--set", "duration=3s", "--out", str(tmp_path), "--no-figure"
        )
        assert out.returncode == 0, out.stderr
        assert f"index: {tmp_path / 'runs.parquet'}" in " ".join(out.stdout.split())
    index = pl.read_parquet(tmp_path / "runs.parquet")
    assert index.height == 8 and set(index["controller"]) == {"gcc", "fixed"}
    for row in index.iter_rows(named=True):
        summary = json.loads((tmp_path / row["path"] / "summary.json").read_text())
        assert (summary["scenario"], summary["variant"], summary["controller"]) == (
            row["scenario"], row["variant"], row["controller"],
        )  # fmt: skip
    assert rtcbench.load_runs(tmp_path).equals(index)


def test_run_quiet_prints_the_folders_and_json_the_summaries(tmp_path: Path) -> None:
    quiet = cli("run", "rfc8867-5.1", "--set", "duration=3s", "--out", str(tmp_path), "--no-figure", "-q")
    assert quiet.returncode == 0, quiet.stderr
    folders = quiet.stdout.splitlines()
    assert len(folders) == 4 and all((Path(f) / "summary.json").is_file() for f in folders)
    as_json = cli(
        "run", "rfc8867-5.1", "--set", "duration=3s", "--out", str(tmp_path), "--no-figure", "--json"
    )
    assert as_json.returncode == 0, as_json.stderr
    summaries = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [s["path"] for s in summaries] == folders
    assert summaries[0] == {"path": folders[0], **json.loads((Path(folders[0]) / "summary.json").read_text())}
    both = cli("run", "rfc8867-5.1", "--out", str(tmp_path), "-q", "--json")
    assert both.returncode == 2 and "--quiet and --json" in both.stderr


def test_run_jobs_runs_the_variants_side_by_side_with_the_same_results(tmp_path: Path) -> None:
    """`run --jobs 2`: the same folders, summaries and printed tables as one after the other, each
    run with its figure; real-time modes and a capture refuse it in one line."""
    args = ["run", "rfc8867-5.1", "--cc", "gcc,nada", "--set", "duration=5s"]
    one = cli(*args, "--out", str(tmp_path / "one"), "--json")
    two = cli(*args, "--out", str(tmp_path / "two"), "--json", "--jobs", "2")
    assert one.returncode == 0 and two.returncode == 0, (one.stderr, two.stderr)
    volatile = {"path", "wall_s", "sim_wall_s", "command", "provenance", "files"}

    def runs(out: str) -> list[dict[str, object]]:
        return [{k: v for k, v in json.loads(line).items() if k not in volatile} for line in out.splitlines()]

    assert runs(one.stdout) == runs(two.stdout) and len(runs(two.stdout)) == 8
    assert all(
        (Path(json.loads(line)["path"]) / "overview.png").is_file() for line in two.stdout.splitlines()
    )
    for extra, said in (
        (["--mode", "emulate"], "--mode emulate runs in real time, one at a time"),
        (["--cc", "gcc", "--pcap", str(tmp_path / "c.pcap")], "--pcap writes one capture at a time"),
    ):
        bad = cli("run", "rfc8867-5.1", "--out", str(tmp_path / "bad"), "--jobs", "2", *extra)
        assert bad.returncode == 2 and said in bad.stderr and len(bad.stderr.splitlines()) == 1, bad.stderr


def test_the_phase_table_of_several_calls_names_each_flow_and_link(tmp_path: Path) -> None:
    """RFC 8867 §6.3: three calls over two bottlenecks. The phase table has a row per video flow
    and phase, each naming its flow and link (it showed the first flow of each phase, unnamed)."""
    out = cli("run", "rfc8867-6.3", "--set", "duration=10s", "--out", str(tmp_path), "--no-figure")
    assert out.returncode == 0, out.stderr
    table = out.stdout[out.stdout.index("phases (video flows)") :]
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in table.splitlines() if line.startswith("│")]
    assert sorted((r[1], r[2]) for r in rows) == [
        ("A-B", "S2.video"),
        ("C-D", "S1.video"),
        ("C-D", "S3.video"),
    ]


def test_list_names_every_builtin_scenario_and_controller() -> None:
    out = cli("list")
    assert out.returncode == 0, out.stderr
    for b in rtcbench.builtin():
        assert b.id in out.stdout
    assert "gcc" in out.stdout and "fixed" in out.stdout and "onnx:MODEL" in out.stdout


def test_run_writes_one_complete_folder_per_variant(tmp_path: Path) -> None:
    out = cli("run", "rfc8867-5.1", "--cc", "fixed", "--seed", "3", "--out", str(tmp_path))
    assert out.returncode == 0, out.stderr
    found = sorted(tmp_path.glob("*/*/*/seed-*"))
    # <scenario>@<variant>/<controller>/<run key>/seed-N, the key naming the resolved variant.
    assert found == sorted(
        runner.run_folder(tmp_path, v, "fixed", 3) for v in rtcbench.resolve("rfc8867-5.1")
    )
    folders = [p.relative_to(tmp_path).as_posix() for p in found]
    assert [f.split("/")[0] for f in folders] == [
        "rfc8867-5.1@delay-100ms-mechanism-link-rate",
        "rfc8867-5.1@delay-100ms-mechanism-udp-background",
        "rfc8867-5.1@delay-50ms-mechanism-link-rate",
        "rfc8867-5.1@delay-50ms-mechanism-udp-background",
    ]
    assert len({f.split("/")[2] for f in folders}) == 4, "each variant has its own key"
    run = tmp_path / folders[2]
    expected = {
        "scenario.toml", "summary.json", "overview.png", "packets.parquet", "frames.parquet",
        "controller.parquet", "links.parquet", "feedback.parquet", "timeseries.parquet",
    }  # fmt: skip
    assert {p.name for p in run.iterdir()} == expected
    # No temporary folders are left behind.
    assert not [p for p in tmp_path.rglob(".*") if p.is_dir()]
    summary = json.loads((run / "summary.json").read_text())
    for key in ("scenario", "variant", "controller", "seed", "simulated_s", "wall_s", "flows", "phases"):
        assert key in summary
    assert summary["variant"] == "delay=50ms,mechanism=link-rate" and summary["seed"] == 3
    flow_keys = {
        "id", "kind", "mean_send_rate_bps", "mean_goodput_bps", "utilization", "loss_ratio",
        "qdelay_p50_ms", "qdelay_p95_ms", "rtt_mean_ms", "fps_mean", "freezes",
    }  # fmt: skip
    assert all(flow_keys <= set(f) for f in summary["flows"])
    assert [(p["start_s"], p["end_s"], p["capacity_bps"]) for p in summary["phases"]] == [
        (0.0, 40.0, 1_000_000),
        (40.0, 60.0, 2_500_000),
        (60.0, 80.0, 600_000),
        (80.0, 100.0, 1_000_000),
    ]
    assert all(flow_keys <= set(f) for p in summary["phases"] for f in p["flows"])
    # The Parquet files open in polars and pandas and hold the documented columns.
    for name in results.TABLES:
        df = pl.read_parquet(run / f"{name}.parquet")
        pdf = pd.read_parquet(run / f"{name}.parquet")
        assert len(df) == len(pdf) > 0
    packets = pl.read_parquet(run / "packets.parquet")
    assert set(packets["event"].unique()) <= {"sent", "received", "dropped"}
    # The resolved scenario runs again to the same result.
    again = rtcbench.run(str(run / "scenario.toml"), "fixed", 3, figure=False)
    assert len(again) == 1
    assert again[0].summary["flows"] == summary["flows"]
    # The table is printed.
    assert "call0.video" in out.stdout and "phases" in out.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("run", "no-such-scenario"), "no built-in scenario or file named 'no-such-scenario'"),
        (
            ("run", "rfc8867-5.1", "--cc", "bbr"),
            "unknown controller 'bbr' (allowed: gcc, gcc-draft, nada, scream, scream2, fixed)",
        ),
        (("run", "rfc8867-5.1", "--set", "links.forward.delay=fast"), "links[0].delay"),
        (("run", "rfc8867-5.1", "--set", "links.nowhere.delay=5ms"), 'no element "nowhere"'),
        (("run", "rfc8867-5.1", "--set", "links.forward.delay=5"), "a duration with a unit"),
        (
            ("run", "rfc8867-5.1", "--field-trials", "WebRTC-Foo/Enabled/"),
            "--field-trials sets Chromium's field trials: it applies to --mode browser, not --mode simulate",
        ),
        (
            ("run", "rfc8867-5.1", "--mode", "browser", "--field-trials", "WebRTC-Foo"),
            "--field-trials must be Chromium's Trial/Group/ pairs",
        ),
        (
            ("run", "rfc8867-5.1", "--browser", "firefox"),
            "--browser chooses a browser run's peers: it applies to --mode browser, not --mode simulate",
        ),
        (
            ("run", "rfc8867-5.1", "--mode", "emulate", "--browser-log"),
            "--browser-log writes the browsers' own logs: it applies to --mode browser, not --mode emulate",
        ),
        (
            ("run", "rfc8867-5.1", "--mode", "browser", "--browser", "safari"),
            "--browser must be chromium or firefox, or NODE=chromium|firefox items",
        ),
        (
            (
                "run",
                "rfc8867-5.1",
                "--mode",
                "browser",
                "--browser",
                "firefox",
                "--field-trials",
                "WebRTC-Foo/On/",
            ),
            "--field-trials sets Chromium's field trials, and --browser firefox starts no Chromium",
        ),
    ],
)
def test_user_mistakes_exit_2_with_one_line(args: tuple[str, ...], needle: str, tmp_path: Path) -> None:
    out = cli(*args, "--out", str(tmp_path))
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("error: ")
    assert needle in lines[0]
    assert "Traceback" not in out.stderr
    assert not any(tmp_path.iterdir()), "a failed run leaves nothing behind"


def test_malformed_scenario_file_names_file_line_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'id = "bad"\nduration = "10s"\n\n[[links]]\nname = "f"\nfrom = "A"\nto = "B"\n'
        'queue = { size = "300 parsecs" }\n'
    )
    out = cli("run", str(bad), "--out", str(tmp_path / "out"))
    assert out.returncode == 2
    line = out.stderr.strip()
    assert f"{bad}:8" in line and "links[0].queue.size" in line and "300ms" in line, line

    broken = tmp_path / "broken.toml"
    broken.write_text('id = "x"\nduration = \n')
    out = cli("run", str(broken))
    assert out.returncode == 2 and f"{broken}:2" in out.stderr


def test_an_interrupted_run_leaves_no_half_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(plots, "plot_run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        rtcbench.run("rfc8867-5.1", "fixed", 1, out=tmp_path)
    assert list(tmp_path.rglob("*.parquet")) == []
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".") and p.is_dir()]


def test_a_finished_result_is_replaced_only_when_the_new_one_is_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = rtcbench.run("seed001-sudden-reduction", "fixed", 1, out=tmp_path, figure=False)[0]
    assert first.path is not None
    before = (first.path / "summary.json").read_text()

    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(plots, "plot_run", broken)
    with pytest.raises(RuntimeError):
        rtcbench.run("seed001-sudden-reduction", "fixed", 1, out=tmp_path)
    assert (first.path / "summary.json").read_text() == before


def test_table_compares_controllers_in_markdown() -> None:
    out = cli("table", "seed001-sudden-reduction", "--cc", "gcc,fixed")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0].startswith("| scenario | variant | controller | flow | utilisation")
    rows = [line.split(" | ") for line in lines[2:]]
    assert [(r[2], r[3]) for r in rows] == [("gcc", "call0.video"), ("fixed", "call0.video")]
    # fixed sends its 300 kbit/s start rate over a mostly 2 Mbit/s link: low utilisation, no loss.
    assert float(rows[1][4]) < 0.3
    assert cli("table", "seed001-sudden-reduction", "--cc", "gcc,nope").returncode == 2
    # --set as in run and suite: two variants of rfc8867-5.1 pinned to one, and shortened.
    pinned = cli("table", "rfc8867-5.1", "--cc", "gcc", "--set", "delay=50ms", "--set", "duration=5s")
    assert pinned.returncode == 0, pinned.stderr
    variants = {line.split(" | ")[1] for line in pinned.stdout.strip().splitlines()[2:]}
    assert variants == {"delay=50ms,mechanism=link-rate", "delay=50ms,mechanism=udp-background"}


def test_table_shows_the_competing_flows_beside_the_media() -> None:
    out = cli("table", "rfc8867-5.6", "--cc", "gcc")
    assert out.returncode == 0, out.stderr
    rows = [line.split(" | ") for line in out.stdout.strip().splitlines()[2:]]
    # One variant per queue and TCP flavour; in each, the call's video and the TCP flow.
    assert {r[3] for r in rows} == {"S1.video", "S_tcp"}
    tcp = [r for r in rows if r[3] == "S_tcp"]
    assert all(float(r[4]) > 0.5 for r in tcp), "TCP takes most of the 2 Mbit/s link"
    assert all(r[7].rstrip(" |") == "-" for r in tcp), "no convergence time for TCP"
