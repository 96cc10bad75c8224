"""docs/env.md runs as written: its Python blocks, in order and in one namespace, from the
repository's root, each printing exactly the ```text block that follows it. (Its training run,
a few minutes long, is tested briefly in tests/test_example_train_bwe.py.)"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "env.md"

Block = tuple[str, str, int]
"""(language, code, line of the opening fence)."""


def blocks(text: str) -> list[Block]:
    found = []
    for m in re.finditer(r"^```(\w*)\n(.*?)^```$", text, flags=re.DOTALL | re.MULTILINE):
        found.append((m.group(1), m.group(2), text[: m.start()].count("\n") + 1))
    return found


def test_the_page_has_code_to_run() -> None:
    kinds = [lang for lang, _, _ in blocks(PAGE.read_text(encoding="utf-8"))]
    assert kinds.count("python") >= 4 and kinds.count("text") >= 4


def test_the_python_blocks_run_and_print_what_the_page_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    found = blocks(PAGE.read_text(encoding="utf-8"))
    namespace: dict[str, object] = {"__name__": "__main__"}
    checked = 0
    for i, (lang, code, line) in enumerate(found):
        if lang != "python":
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"{PAGE.name}:{line}", "exec"), namespace)
        shown = found[i + 1] if i + 1 < len(found) and found[i + 1][0] == "text" else None
        assert shown is not None, f"the block at line {line} has no output to compare"
        assert out.getvalue() == shown[1], f"the block at line {line} printed:\n{out.getvalue()}"
        checked += 1
    assert checked >= 4
