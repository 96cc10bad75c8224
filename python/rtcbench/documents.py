"""TOML and JSON documents that rtcbench's Python side reads from files it did not write itself in
this process: a sweep file, scorecard thresholds, a results folder's `scenario.toml` and
`summary.json`. A file is someone's input (or part of a folder someone handed over), so reading it
is bounded before the parser sees it, and every way it can fail ends in one line naming the file.

The bounds (docs/limits.md):
- size: `MAX_BYTES`, checked while reading (`results.read_text`);
- nesting: `MAX_NESTING` levels of arrays and inline tables (JSON: arrays and objects). Python's
  parsers recurse once per level and end in `RecursionError` at about a thousand;
- a dotted key of at most `MAX_KEY_PARTS` parts. `tomllib` keeps, for every part of a dotted key,
  the key up to it: a 200 kB line `a.a.a…b = 1` took 21 GB before the kernel killed the process.

Both are checked by a scan of the text before it is parsed (`_toml_shape`, `_json_depth`: regular
expressions and numpy, a few milliseconds a megabyte), so neither parser ever meets a document
past them. The scenario loader (Rust, `toml` crate) has bounds of its own and
answers in the same one-line form.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from rtcbench.results import MAX_TEXT_BYTES, InputError, read_text

__all__ = ["MAX_BYTES", "MAX_KEY_PARTS", "MAX_NESTING", "parse_json", "parse_toml", "read_toml"]

MAX_BYTES = MAX_TEXT_BYTES
"""The largest document read: 64 MiB, room for a results folder's `scenario.toml` holding a
schedule of `limits.MAX_SCHEDULE_STEPS` steps written out (docs/limits.md)."""
MAX_NESTING = 64
"""Arrays and inline tables (JSON: arrays and objects) inside one another; rtcbench's own files
nest at most six deep."""
MAX_KEY_PARTS = 64
"""Parts of one dotted key (`a.b.c = 1`: three), or of one table header's."""


def read_toml(
    path: Path, error: Callable[[str], Exception], *, strerror_only: bool = False
) -> dict[str, Any]:
    """The TOML document in `path`. A file that cannot be read or is not TOML within the bounds
    raises `error("{path}: {reason}")`, the reason being the parser's message, the bound it went
    past, or the OSError's (its `strerror` alone with `strerror_only`); text that is not UTF-8
    raises `InputError` (`results.read_text`). A syntax error names its line, as the scenario
    loader does: `{path}:{line}: {reason}`."""
    try:
        text = read_text(path, limit=MAX_BYTES)
    except OSError as e:
        raise error(f"{path}: {(e.strerror or e) if strerror_only else e}") from e
    return parse_toml(text, path, error)


def parse_toml(text: str, path: Path | str, error: Callable[[str], Exception]) -> dict[str, Any]:
    """`text` (the contents of `path`) as a TOML document, or `error` with one line."""
    if (bound := _toml_shape(text)) is not None:
        line, reason = bound
        raise error(f"{path}:{line}: {reason}")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise error(_toml_syntax_error(path, text, e)) from e
    except (RecursionError, MemoryError) as e:  # past the scan's bounds only by a bug of the scan
        raise error(f"{path}: too large or too deeply nested to read ({type(e).__name__})") from None


def parse_json(data: bytes, path: Path | str, limit: int = MAX_BYTES) -> Any:
    """`data` (the contents of `path`, at most `limit` bytes) as a JSON value, or `InputError`
    with one line. NaN and Infinity are refused (rtcbench writes neither, `allow_nan=False`); so is
    nesting past `MAX_NESTING`, before the parser recurses."""
    if len(data) > limit:
        raise InputError(f"{path}: larger than {limit} bytes, not read")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text (byte {e.start})") from None
    if _json_depth(text) > MAX_NESTING:
        raise InputError(f"{path}: nested too deep (more than {MAX_NESTING} levels)")
    try:
        return json.loads(text, parse_constant=_not_json)
    except ValueError as e:  # JSONDecodeError, NaN, an integer of 4300 digits
        raise InputError(f"{path}: {e}") from None
    except (RecursionError, MemoryError) as e:
        raise InputError(f"{path}: too large or nested too deep to read ({type(e).__name__})") from None


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON number")


_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_TOML_SKIPPED = re.compile(
    r'"""(?:[^\\]|\\.)*?"""|\'\'\'.*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*', re.DOTALL
)
"""TOML's four kinds of string (multi-line ones first) and its comments: what a scan blanks."""
_TOML_KEY = re.compile(r"(?:^|[\[{,])([^=\[\]{},\n]*)=", re.MULTILINE)
"""A key: the text before `=` at the start of a line, or after `[`, `{` or `,`."""
_TOML_HEADER = re.compile(r"^[ \t]*\[\[?([^\]\n]*)\]\]?", re.MULTILINE)
"""A table header's key, `[a.b]` or `[[a.b]]`."""


def _deepest(text: bytes) -> tuple[int, int]:
    """The deepest nesting of `[`/`{` in `text` (its strings already blanked), and the offset
    where it is first reached."""
    if not text:
        return 0, 0
    codes = np.frombuffer(text, dtype=np.uint8)
    depth = np.cumsum(
        np.isin(codes, (ord("["), ord("{"))).astype(np.int64) - np.isin(codes, (ord("]"), ord("}")))
    )
    at = int(np.argmax(depth))
    return int(depth[at]), at


def _json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON `text`, strings skipped (a scan; the
    text need not be valid)."""
    return _deepest(_JSON_STRING.sub(b'""', text.encode("utf-8")))[0]


def _toml_shape(text: str) -> tuple[int, str] | None:
    """(line, reason) of the first place where TOML `text` goes past `MAX_NESTING` or
    `MAX_KEY_PARTS`, or None. A scan, not a parse: strings and comments are blanked (their line
    breaks kept), brackets counted, and the parts of every key counted (a table header's; the
    text before `=` at the start of a line or after `[`, `{` or `,`). A header and a key under it
    count apart: what `MAX_KEY_PARTS` guards against grows with the square of one key's parts. A
    malformed text is left to the parser to describe."""

    def blank(m: re.Match[str]) -> str:
        found = m.group()
        return "" if found[0] == "#" else '""' + "\n" * found.count("\n")

    bare = _TOML_SKIPPED.sub(blank, text)
    # A table header's own brackets are not nesting.
    unheaded = _TOML_HEADER.sub(lambda m: " " * len(m.group()), bare).encode("utf-8")
    depth, at = _deepest(unheaded)
    if depth > MAX_NESTING:
        line = unheaded[:at].count(b"\n") + 1
        return line, f"arrays and inline tables nested more than {MAX_NESTING} levels deep"
    for pattern in (_TOML_HEADER, _TOML_KEY):
        for m in pattern.finditer(bare):
            if m.group(1).count(".") >= MAX_KEY_PARTS:
                line = bare.count("\n", 0, m.start(1)) + 1
                return line, f"a dotted key of more than {MAX_KEY_PARTS} parts"
    return None


_TOML_PLACE = re.compile(r" \(at (?:line (\d+), column (\d+)|end of document)\)$")
"""Where tomllib (Python 3.11 to 3.13) says the error is: at the end of its message."""


def _toml_syntax_error(path: Path | str, text: str, e: tomllib.TOMLDecodeError) -> str:
    """`{path}:{line}: {reason} (column {n})`; an error at the end of the text (an array or a
    string left open) is on its last line."""
    message = str(e)
    place = _TOML_PLACE.search(message)
    if place is None:
        return f"{path}: {message}"
    reason = message[: place.start()]
    if place[1] is not None:
        return f"{path}:{place[1]}: {reason} (column {place[2]})"
    return f"{path}:{max(1, len(text.splitlines()))}: {reason} (at the end of the file)"
