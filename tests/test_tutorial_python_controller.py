"""docs/controllers/python.md runs as written: its Python blocks, in order and in one namespace, from
the repository's root, each printing exactly the ```text block that follows it (if one does); and
its `rtcbench run` commands succeed. (Its `rtcbench suite` command is not run here: a suite of a
Python controller is tested in tests/test_python_controller.py.)"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from doc_blocks import blocks, run_python_blocks

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "controllers" / "python.md"


def test_the_page_has_code_to_run() -> None:
    kinds = [lang for lang, _, _ in blocks(PAGE.read_text(encoding="utf-8"))]
    assert kinds.count("python") >= 6 and "sh" in kinds


def test_the_python_blocks_run_and_print_what_the_page_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    run_python_blocks(PAGE, every_block_shows_output=False)


def test_the_run_commands_succeed(tmp_path: Path) -> None:
    commands = [
        line
        for lang, code, _ in blocks(PAGE.read_text(encoding="utf-8"))
        if lang == "sh"
        for line in code.splitlines()
        if line.startswith("rtcbench run ")
    ]
    assert commands
    for command in commands:
        args = [sys.executable, "-m", "rtcbench.cli", *shlex.split(command)[1:], "--out", str(tmp_path)]
        out = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, check=False)
        assert out.returncode == 0, out.stderr
        assert "delay_gradient_aimd:DelayGradientAimd" in out.stdout
