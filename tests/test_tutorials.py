"""Every tutorial under docs/tutorials/ runs as written.

A tutorial's fenced blocks run in order in a fresh folder, with the `rtcbench` of this environment
first on PATH:

- ```` ```console ````: each line starting with `$ ` is a shell command that must succeed. If the
  lines shown after a command start with `error:`, the command must instead fail with status 2
  and print that text (a shown line ending in `...` need only match up to there).
- ```` ```python ````: run with `exec`, all blocks of a tutorial in one namespace.
- A block whose info string has `file=PATH` (```` ```toml file=my.toml ````) is written to PATH.

Other blocks are illustrations and are not run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

TUTORIALS = sorted((Path(__file__).resolve().parent.parent / "docs" / "tutorials").glob("*.md"))
FENCE = re.compile(r"^```(\S*)(.*)$")


@dataclass(frozen=True)
class Block:
    lang: str
    file: str | None
    line: int
    text: str


def blocks(markdown: str) -> list[Block]:
    """The fenced code blocks of a Markdown text, with the line their code starts on."""
    out: list[Block] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        lang, info = m.group(1), m.group(2)
        file = next((w.removeprefix("file=") for w in info.split() if w.startswith("file=")), None)
        start = i + 1
        end = start
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        out.append(Block(lang, file, start + 1, "\n".join(lines[start:end]) + "\n"))
        i = end + 1
    return out


def commands(console: str) -> list[tuple[str, list[str]]]:
    """(command, the output lines shown after it) of a console block."""
    out: list[tuple[str, list[str]]] = []
    for line in console.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out and line.strip():
            out[-1][1].append(line)
    return out


def check_command(command: str, shown: list[str], where: str, env: dict[str, str]) -> None:
    result = subprocess.run(command, shell=True, capture_output=True, text=True, env=env, check=False)
    expected = " ".join(shown)
    if expected.startswith("error:"):
        assert result.returncode == 2, f"{where}: `{command}` should fail with status 2:\n{result.stderr}"
        printed = " ".join(result.stderr.split())
        expected = " ".join(expected.split())
        if expected.endswith("..."):
            assert printed.startswith(expected.removesuffix("...")), f"{where}: printed\n{printed}"
        else:
            assert printed == expected, f"{where}: printed\n{printed}\nthe tutorial shows\n{expected}"
    else:
        assert result.returncode == 0, f"{where}: `{command}` failed:\n{result.stdout}\n{result.stderr}"


def test_tutorials_are_found() -> None:
    assert TUTORIALS, "docs/tutorials/ has no tutorial"


@pytest.mark.parametrize("tutorial", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_runs_as_written(tutorial: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    namespace: dict[str, Any] = {"__name__": f"tutorial_{tutorial.stem}"}
    ran = 0
    for block in blocks(tutorial.read_text(encoding="utf-8")):
        where = f"{tutorial.name}:{block.line}"
        if block.file is not None:
            path = tmp_path / block.file
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.text, encoding="utf-8")
        elif block.lang == "console":
            for command, shown in commands(block.text):
                check_command(command, shown, where, env)
                ran += 1
        elif block.lang == "python":
            exec(compile(block.text, where, "exec"), namespace)
            ran += 1
    assert ran, f"{tutorial.name} has nothing to run"


def test_the_block_reader_keeps_lines_files_and_expected_errors() -> None:
    text = "intro\n```toml file=a/b.toml\nx = 1\n```\n```console\n$ true\nout\n$ false\nerror: no\n```\n"
    b = blocks(text)
    assert [(x.lang, x.file, x.line) for x in b] == [("toml", "a/b.toml", 3), ("console", None, 6)]
    assert commands(b[1].text) == [("true", ["out"]), ("false", ["error: no"])]
