"""docs/sweeps.md runs as written: its sweep file, its commands and its Python, in order, in a
scratch folder (the page's paths are relative to where the commands run)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parent.parent / "docs" / "sweeps.md"


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


def test_the_sweeps_tutorial_runs_as_written(tmp_path: Path) -> None:
    (spec,) = _blocks("toml")[:1]
    name = re.search(r"^# (\S+\.toml)", spec, flags=re.M)
    assert name is not None, "the tutorial's sweep file names itself in its first comment"
    (tmp_path / name.group(1)).write_text(spec, encoding="utf-8")

    first, again = _blocks("console")
    outputs = []
    for block in (first, again):
        (line,) = block.strip().splitlines()
        args = line.split()
        assert args[0] == ".venv/bin/rtcbench"
        run = subprocess.run(
            [sys.executable, "-m", "rtcbench.cli", *args[1:]],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
        )
        assert run.returncode == 0, run.stderr
        outputs.append(run.stdout)
    assert "12 runs (12 simulated, 0 already complete)" in outputs[0]
    assert "12 runs (0 simulated, 12 already complete)" in outputs[1]  # the page says so

    table, from_python = _blocks("python")
    for code, expected in ((table, "6 rows"), (from_python, "12 runs")):
        run = subprocess.run(
            [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False
        )
        assert run.returncode == 0, run.stderr
        assert expected in run.stdout
