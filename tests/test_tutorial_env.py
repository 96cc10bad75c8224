"""docs/env.md runs as written: its Python blocks, in order and in one namespace, from the
repository's root, each printing exactly the ```text block that follows it. (Its training run,
a few minutes long, is tested briefly in tests/test_example_train_bwe.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from doc_blocks import blocks, run_python_blocks

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "env.md"


def test_the_page_has_code_to_run() -> None:
    kinds = [lang for lang, _, _ in blocks(PAGE.read_text(encoding="utf-8"))]
    assert kinds.count("python") >= 4 and kinds.count("text") >= 4


def test_the_python_blocks_run_and_print_what_the_page_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert run_python_blocks(PAGE, every_block_shows_output=True) >= 4
