"""The README's example output is the command's real output (issue "The answer at a glance"): the
block `make demo` prints is produced again here, run as the Makefile runs it, and compared line by
line, all but the wall-clock timings. `RTCBENCH_UPDATE_SNAPSHOTS=1` writes the real output into the
README instead (review the diff), as the summaries' snapshots are updated."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SECTION = "## What the demo shows"
# The one line that differs from run to run: how long it took.
TIMING = re.compile(
    r"simulated (\d+) s in [\d,]+ ms \([\d,]+x real time\); run with metrics and files [\d.]+ s →"
)


def _demo_block(text: str) -> tuple[int, int]:
    """Where the first code block of the demo's section starts and ends."""
    start = text.index("```\n", text.index(SECTION)) + len("```\n")
    return start, text.index("```\n", start)


def _first_variant(stdout: str) -> str:
    """The demo's first variant: from its header to its folder, the line after the timing."""
    lines = [line.rstrip() for line in stdout.splitlines()]
    end = next(i for i, line in enumerate(lines) if TIMING.search(line))
    return "\n".join(lines[: end + 2]) + "\n"


def _masked(block: str) -> str:
    return TIMING.sub(r"simulated \1 s in … ms (…x real time); run with metrics and files … s →", block)


def test_the_readme_shows_what_make_demo_prints(tmp_path: Path) -> None:
    # As `make demo` runs it, from a folder of its own so that results/demo is its own too; the
    # first variant only, which is all the README shows.
    sets = ["--set", "delay=50ms", "--set", "mechanism=link-rate"]
    done = subprocess.run(
        [sys.executable, "-m", "rtcbench.cli", "run", "rfc8867-5.1", "--cc", "gcc", "--seed", "1",
         "--out", "results/demo", *sets],
        cwd=tmp_path, capture_output=True, text=True, check=False, env={**os.environ, "COLUMNS": "120"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    real = _first_variant(done.stdout)
    text = README.read_text(encoding="utf-8")
    start, end = _demo_block(text)
    if os.environ.get("RTCBENCH_UPDATE_SNAPSHOTS") == "1":
        README.write_text(text[:start] + real + text[end:], encoding="utf-8")
        return
    shown = text[start:end]
    assert _masked(shown) == _masked(real), "the README's demo block is not what `make demo` prints"
    # And the prose under the figure quotes the same numbers: the video's convergence in each
    # phase, its rate and loss where it does not converge.
    video = next(line for line in real.splitlines() if "call0.video" in line)
    phases = {
        cells[0]: cells
        for line in real.splitlines()
        if line.startswith("│")
        and (cells := [c.strip() for c in line.strip("│").split("│")])[0].endswith(" s")
    }
    convergence = {span: cells[-1] for span, cells in phases.items()}
    assert convergence["60-80 s"] == "-", convergence
    sent, loss = phases["60-80 s"][2], phases["60-80 s"][4]
    back = convergence["80-99 s"]
    for phrase in (
        f"GCC needs {round(float(convergence['0-40 s']))} s to get within 80 %",
        f"and {round(float(convergence['40-60 s']))} s after the link opens",
        f"it sends {sent} kbit/s and loses {loss} % there",
        f"needs {round(float(back))} s once the link is back"
        if back != "-"
        else f"does not converge in the {phases['80-99 s'][0].removesuffix(' s')} s after the link is back "
        f"either (it sends {phases['80-99 s'][2]} kbit/s there)",
    ):
        assert phrase in " ".join(text.split()), (phrase, convergence)
    assert video.split("│")[2].strip() in shown
