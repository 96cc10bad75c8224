"""The terminal output of `suite` and `compare` in an 80-column terminal (a pseudo-terminal of that
size, as a user's): no line wider than the terminal, no column cut below its header, no case's
name or value split from its label. Wider terminals keep the one-row-per-case tables
(tests/test_honest_metrics.py, tests/test_compare.py)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def in_terminal(*args: str, columns: int = 80, stderr_too: bool = False) -> str:
    """What `rtcbench ARGS` prints on a terminal `columns` wide (stdout, and with `stderr_too`
    stderr, where the progress bar goes: else stderr is a pipe, so there is none), without its
    colours; fails on a non-zero exit status."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rtcbench.cli", *args],
        stdin=subprocess.DEVNULL, stdout=slave, stderr=slave if stderr_too else subprocess.PIPE, env=env,
    )  # fmt: skip
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the terminal's last writer has gone
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, (stderr or b"").decode()
    return ANSI.sub("", b"".join(chunks).decode()).replace("\r\n", "\n")


@pytest.fixture(scope="module")
def suite_output(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("narrow")
    text = in_terminal(
        "suite", "rfc8867-5.1", "rfc8867-5.6", "--cc", "gcc,nada", "--reps", "2", "--set", "duration=10s",
        "--out", str(out),
    )  # fmt: skip
    return out, text


def test_the_suite_table_reads_at_80_columns(suite_output: tuple[Path, str]) -> None:
    _, text = suite_output
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80, text
    # A block per case: its ids whole on one line, then every measure beside its value.
    heads = [line for line in lines if line.startswith("rfc8867-")]
    assert len(heads) == 16, text  # 5.1 and 5.6: 4 variants each; two controllers
    assert "rfc8867-5.1 · delay=50ms, mechanism=link-rate · gcc · 2 runs" in heads
    for head in heads:
        values = lines[lines.index(head) + 1]
        for name in ("util", "p95", "loss", "good"):
            assert re.search(rf"(^|   ){name} (-|[0-9.]+)(   |$)", values.strip()), (name, values)
    assert re.search(r"   tcp [0-9]+", text) and re.search(r"   jain all (-|[0-9.]+)", text), text


def test_the_comparison_reads_at_80_columns(suite_output: tuple[Path, str]) -> None:
    out, _ = suite_output
    text = in_terminal("compare", str(out), "--baseline", "gcc", "--min-reps", "2")
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80, text
    headers = [line for line in lines if line.lstrip().startswith("metric")]
    assert headers, text
    for header in headers:
        # Every column's header whole on the header line: none was cut below its first word.
        assert re.search(r"metric\s+gcc\s+nada\s+B − A\s+95 % CI\s+verdict$", header.strip()), header
    rows = [line for line in lines if ("↑" in line or "↓" in line) and not line.startswith("↑/↓")]
    verdicts = ("regression", "improvement", "no change", "not measured", "too few reps")
    assert rows and all(line.rstrip().endswith(verdicts) for line in rows), text
    # The case's name and run counts above its metrics, and a sentence per case after them.
    assert re.search(
        r"^rfc8867-5.1 \[delay=50ms,mechanism=link-rate\] \(runs A/B: [0-9/, ]*2/2\)$", text, re.M
    )
    assert " ".join(text.split()).count("nada against gcc:") == 8


def test_a_run_reads_at_80_columns(tmp_path: Path) -> None:
    text = in_terminal("run", "rfc8867-5.6", "--set", "duration=10s", "--set", "queue=300ms", "--set",
                       "tcp_cc=cubic", "--out", str(tmp_path), "--no-figure")  # fmt: skip
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80, text
    # Each flow's name whole on a line of its own, and its measures beside their values.
    at = lines.index("S1.video (5-10 s)")
    assert re.search(r"^   send [0-9]+ kbps · goodput [0-9]+ kbps · util [0-9.]+ · ", lines[at + 1]), text
    # A measure is never split from its value or its unit across lines.
    ends = ("send", "goodput", "util", "loss", "qdelay p50", "p95", "rtt", "fps", "freezes")
    assert not any(line.rstrip().endswith(ends) or line.startswith("ms") for line in lines), text
    assert any(line.startswith("S_tcp") for line in lines), text


def test_a_suite_shows_its_progress_with_an_eta_and_the_last_case(tmp_path: Path) -> None:
    text = in_terminal(
        "suite", "rfc8867-5.6", "--cc", "gcc", "--reps", "2", "--jobs", "1", "--out", str(tmp_path),
        columns=120, stderr_too=True,
    )  # fmt: skip
    frames = re.split(r"[\r\n]", text)
    drawn = [
        f for f in frames if re.search(r"^runs [0-9]+/8 .* ETA [-0-9:]+ rfc8867-5.6 \S+ gcc seed [12]", f)
    ]
    assert drawn, text
    assert any(f.startswith("runs 8/8 ") for f in drawn), drawn
