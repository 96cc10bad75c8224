"""Running a documentation page's code as written: its fenced blocks, and its Python blocks in
order in one namespace, each compared with the ```text block that follows it. Shared by the
tests of the pages that are tutorials (docs/env.md, docs/controllers/python.md)."""

from __future__ import annotations

import contextlib
import gc
import io
import re
from pathlib import Path

Block = tuple[str, str, int]
"""(language, code, line of the opening fence)."""


def blocks(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown text, with their language and first line."""
    found = []
    for m in re.finditer(r"^```(\w*)\n(.*?)^```$", text, flags=re.DOTALL | re.MULTILINE):
        found.append((m.group(1), m.group(2), text[: m.start()].count("\n") + 1))
    return found


def run_python_blocks(page: Path, *, every_block_shows_output: bool) -> int:
    """Runs the page's ```python blocks in order in one namespace (from the current folder) and
    checks that each prints exactly the ```text block right after it. With
    `every_block_shows_output`, a Python block without such a block fails; otherwise it only has
    to run. Returns how many outputs were compared."""
    found = blocks(page.read_text(encoding="utf-8"))
    namespace: dict[str, object] = {"__name__": "__main__"}
    checked = 0
    try:
        for i, (lang, code, line) in enumerate(found):
            if lang != "python":
                continue
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, f"{page.name}:{line}", "exec"), namespace)
            shown = found[i + 1] if i + 1 < len(found) and found[i + 1][0] == "text" else None
            if shown is None:
                assert not every_block_shows_output, f"the block at line {line} has no output to compare"
                continue
            assert out.getvalue() == shown[1], f"the block at line {line} printed:\n{out.getvalue()}"
            checked += 1
    finally:
        # The page's functions hold the namespace (their globals): a cycle that only the cyclic
        # collector frees, on whichever thread happens to run it. A simulation the page made
        # must be freed on this one (it is not sendable), so free it all here and now.
        namespace.clear()
        gc.collect()
    return checked
