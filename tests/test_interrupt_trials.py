"""No moment of a command leaks a traceback on an interrupt (issue "Hardening III"): each command
is started as a user starts it (the `rtcbench` script) and sent SIGINT or SIGTERM at offsets spread
over its first 1.6 s, the start-up, the imports it makes as it goes (matplotlib for `report` and
`figure`, polars, the core) and the work itself. Every trial must end in one of:

- `answered`: status 130 and one line, `interrupted: ...`;
- `finished`: the command was done before the signal came (status 0, no traceback);
- `before rtcbench`: the interpreter had not yet run the line of the script that loads the
  command line (`rtcbench.cli.main` sets its handlers first thing): the signal's default action
  (killed by it, nothing written) or Python's own traceback of its start-up, whose frames are all
  the interpreter's (`site`, the import system) or the two small modules the script imports
  (docs/cli.md, "Interrupts", measures that window).

Anything else, a traceback with a frame of rtcbench's code past `main`, fails with the offset and
the traceback's last lines. The default tier runs 12 trials per command; `make test-slow` runs 200
(the numbers in docs/cli.md)."""

from __future__ import annotations

import collections
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).with_name("rtcbench")
SPAN_S = 1.6
"""Offsets run from 0 (the process just created) to this: past start-up, into the work."""

_FRAME = re.compile(r'^\s*File "([^"]+)", line \d+, in (.+)$')
_ENTRY_MODULES = ("rtcbench/__init__.py", "rtcbench/cli/__init__.py")


def outcome(status: int, sig: int, err: str) -> str:
    """What a trial came to (the module's docstring), or "leaked"."""
    lines = err.strip().splitlines()
    if "Traceback" not in err:
        if status == 130 and len(lines) == 1 and lines[0].startswith("interrupted:"):
            return "answered"
        if status == 0:
            return "finished"
        if status == -sig and not lines:
            return "before rtcbench"
        return "leaked"
    frames = [m.groups() for line in lines if (m := _FRAME.match(line))]
    before_main = all(
        where.startswith("<frozen")
        or "/_distutils_hack/" in where
        or ("/lib/python3." in where and "/site-packages/" not in where)  # the standard library
        or (where == str(SCRIPT) and function == "<module>")
        or (where.endswith(_ENTRY_MODULES) and function == "<module>")
        for where, function in frames
    )
    return "before rtcbench" if before_main else "leaked"


def trials(args: list[str], n: int, cwd: Path) -> collections.Counter[str]:
    """`n` trials of `rtcbench args`, the signal (SIGINT and SIGTERM in turn) sent at offsets
    spread evenly over [0, SPAN_S); fails on the first that leaked."""
    seen: collections.Counter[str] = collections.Counter()
    for i in range(n):
        sig = signal.SIGINT if i % 2 == 0 else signal.SIGTERM
        after = SPAN_S * i / n
        p = subprocess.Popen(
            [str(SCRIPT), *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(after)
        p.send_signal(sig)
        try:
            _, err = p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        got = outcome(p.returncode, sig, err)
        tail = "\n".join(err.strip().splitlines()[-6:])
        assert got != "leaked", f"{args[0]}: {sig.name} at {after:.3f} s: status {p.returncode}\n{tail}"
        seen[got] += 1
    return seen


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Two short runs to report, compare, score and draw."""
    out = tmp_path_factory.mktemp("suite")
    subprocess.run(
        [str(SCRIPT), "suite", "rfc8867-5.1", "--cc", "gcc,nada", "--set", "duration=20s",
         "--set", "delay=50ms", "--set", "mechanism=link-rate", "--out", str(out)],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300,
    )  # fmt: skip
    yield out


def _commands(suite: Path, work: Path) -> dict[str, list[str]]:
    return {
        "run": ["run", "rfc8867-5.1", "--cc", "gcc", "--set", "duration=86400s", "--out", str(work / "run")],
        "suite": ["suite", "rfc8867-5.1", "--cc", "gcc", "--set", "duration=3600s", "--out", str(work / "s")],
        "report": ["report", str(suite), "--out", str(work / "report")],
        "figure": ["figure", str(suite), "--out", str(work / "figures")],
        "compare": ["compare", str(suite)],
        "score": ["score", str(suite), "--out", str(work / "score")],
    }


COMMANDS = ("run", "suite", "report", "figure", "compare", "score")


@pytest.mark.skipif(
    not SCRIPT.exists(), reason=f"the rtcbench script is not installed beside {sys.executable}"
)
@pytest.mark.parametrize("command", COMMANDS)
def test_no_moment_of_a_command_leaks_a_traceback(command: str, suite: Path, tmp_path: Path) -> None:
    seen = trials(_commands(suite, tmp_path)[command], 12, tmp_path)
    assert seen["answered"] > 0, seen


@pytest.mark.slow
@pytest.mark.skipif(
    not SCRIPT.exists(), reason=f"the rtcbench script is not installed beside {sys.executable}"
)
@pytest.mark.parametrize("command", COMMANDS)
def test_two_hundred_moments_of_a_command_leak_no_traceback(
    command: str, suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seen = trials(_commands(suite, tmp_path)[command], 200, tmp_path)
    with capsys.disabled():
        print(f"\n{command}: {dict(seen)}")
