"""Provenance a reader can follow (issue 12). Users have neither the seed documents (known here by
their private file names) nor the project's research notes, so:

- every line that names a seed file also gives the document's citation key from
  docs/references.md, which maps the file names to full citations;
- nothing cites the research notes' test-case catalogue: its decisions live in docs/scenarios.md
  and docs/metrics.md;
- every built-in scenario's `source` (printed by `rtcbench list`) names a citation key listed in
  docs/references.md, and the right one where it names a seed's handle.

Pure file reading: no run, no extension needed."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REFERENCES = ROOT / "docs" / "references.md"
SELF = Path(__file__).resolve()

SEED_FILE = re.compile(r"\b(00[0-9])_[0-9a-f]{16}(?:\.txt)?\b")
SEED_HANDLE = re.compile(r"\bseed (00[0-9])\b", re.IGNORECASE)
NOTES = re.compile(
    r"testcases\.md|algorithms\.md|model-codebases\.md|access-networks\.md|shared/reference"
    r"|\breference \(?§[A-D]\.",
    re.IGNORECASE,
)
"""The research notes by file, or their section numbers (`reference §A.9`), which mean nothing
to a reader without them."""

TEXT_SUFFIXES = {".md", ".py", ".pyi", ".rs", ".go", ".toml", ".j2", ".html", ".txt", ".sh", ".yml", ".yaml"}
TEXT_NAMES = {"Makefile"}
SKIP_DIRS = {
    ".git",
    ".venv",
    "target",
    "results",
    "out",
    "dist",
    "node_modules",
    "__pycache__",
    ".pytest_cache",
    ".ruff_cache",
    ".mypy_cache",
}


def _cells(line: str) -> list[str]:
    return [c.strip().strip("`*").strip() for c in line.strip().strip("|").split("|")]


def _tables() -> list[list[str]]:
    """The data rows of every Markdown table in docs/references.md, as cells."""
    rows = []
    for line in REFERENCES.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|") or re.fullmatch(r"\|[\s|:-]+\|", line.strip()):
            continue
        cells = _cells(line)
        if cells[0] in ("Key", "Citation key"):
            continue
        rows.append(cells)
    return rows


def citation_keys() -> set[str]:
    """The first cell of every table row: seed keys, RFC numbers, draft names, own material."""
    return {row[0] for row in _tables()}


def seed_keys() -> dict[str, tuple[str, str]]:
    """Handle ("000") -> (citation key, file name stem), from the source-documents table."""
    found = {}
    for row in _tables():
        for cell in row[1:]:
            m = SEED_FILE.fullmatch(cell)
            if m:
                found[m.group(1)] = (row[0], cell.removesuffix(".txt"))
    return found


def repository_text_files() -> list[Path]:
    """Every text file of the repository, except docs/references.md (which maps the file names
    to citations) and this test (which names what it looks for)."""
    files = []
    for path in sorted(ROOT.rglob("*")):
        rel = path.relative_to(ROOT)
        if any(part in SKIP_DIRS for part in rel.parts[:-1]) or not path.is_file():
            continue
        if path.suffix not in TEXT_SUFFIXES and path.name not in TEXT_NAMES:
            continue
        if path.resolve() in (REFERENCES.resolve(), SELF):
            continue
        files.append(path)
    return files


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        return []


def test_every_seed_document_has_a_citation_key() -> None:
    seeds = seed_keys()
    assert sorted(seeds) == ["000", "001", "002", "003", "004"]
    keys = [key for key, _ in seeds.values()]
    assert len(set(keys)) == len(keys), f"two seeds share a key: {keys}"
    for key in keys:
        assert re.search(r"\b(19|20)\d\d\b", key), f"{key!r}: a key names a year"
        assert f"### {key} (seed " in REFERENCES.read_text(encoding="utf-8"), f"no section for {key}"


def test_seed_file_names_come_with_their_citation_key() -> None:
    seeds = seed_keys()
    bad = []
    for path in repository_text_files():
        for number, line in enumerate(_lines(path), start=1):
            for m in SEED_FILE.finditer(line):
                known = seeds.get(m.group(1))
                where = f"{path.relative_to(ROOT)}:{number}"
                if known is None or not m.group(0).startswith(known[1]):
                    bad.append(f"{where}: {m.group(0)} is not in docs/references.md")
                elif known[0] not in line:
                    bad.append(f"{where}: {m.group(0)} without {known[0]!r}")
    assert not bad, "seed file names without their citation key:\n" + "\n".join(bad)


def test_nothing_cites_the_research_notes() -> None:
    bad = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in repository_text_files()
        for number, line in enumerate(_lines(path), start=1)
        if NOTES.search(line)
    ]
    assert not bad, (
        "users do not have the project's research notes (test cases, algorithms); cite the RFC, the "
        "seed by its key, the reference code, or docs/scenarios.md and docs/metrics.md:\n" + "\n".join(bad)
    )


SCENARIOS = sorted((ROOT / "scenarios").rglob("*.toml"))


@pytest.mark.parametrize("path", SCENARIOS, ids=[str(p.relative_to(ROOT)) for p in SCENARIOS])
def test_scenario_source_names_a_listed_citation_key(path: Path) -> None:
    source = tomllib.loads(path.read_text(encoding="utf-8")).get("source")
    if source is None:
        return
    keys = citation_keys()
    named = [key for key in keys if key in source]
    assert named, f"source {source!r} names no citation key of docs/references.md"
    seeds = seed_keys()
    for m in SEED_HANDLE.finditer(source):
        key = seeds[m.group(1)][0]
        assert key in source, f"source {source!r} names seed {m.group(1)} without {key!r}"
    assert not SEED_FILE.search(source), f"source {source!r} names a file users do not have"


def test_the_readme_lists_the_references_page() -> None:
    assert "docs/references.md" in (ROOT / "README.md").read_text(encoding="utf-8")
