"""Instructions executed by one 100 s run of `rfc8867-5.1` (first variant) per controller,
counted by valgrind's callgrind. The count does not depend on how busy the host is, so unlike
wall-clock timings it shows a 1 % change in the simulator's speed.

    python benches/instructions.py            # measure and compare with benches/instructions.json
    python benches/instructions.py --update   # measure and make the result the new baseline

Run by `make bench`. A count more than THRESHOLD above the baseline is reported as a regression
(exit status 1); explain it or fix it, then `--update`. Counts are only comparable with the same
rustc, which the baseline records; with another compiler the comparison is printed but not judged.
Needs valgrind (`apt-get install valgrind`); without it the script says so and exits 0.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "benches" / "instructions.json"
EXAMPLE = ROOT / "target" / "release" / "examples" / "quick"
SCENARIO = "rfc8867-5.1"
CONTROLLERS = ("gcc", "gcc-draft", "nada", "scream", "fixed")
# Run-to-run noise of callgrind on the same binary is below 0.01 %; a change above this is real.
THRESHOLD = 0.02


def rustc_version() -> str:
    return subprocess.run(["rustc", "--version"], capture_output=True, text=True, check=True).stdout.strip()


def build() -> None:
    subprocess.run(
        ["cargo", "build", "--release", "-q", "-p", "rtcbench-sim", "--example", "quick"],
        cwd=ROOT,
        check=True,
    )


def count(controller: str) -> int:
    """Instructions (callgrind's Ir) of one whole run, process start-up included."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                str(EXAMPLE),
                SCENARIO,
                controller,
                "1",
                "--summary",
            ],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        match = re.search(r"^summary:\s+(\d+)", out.read_text(), re.MULTILINE)
        if match is None:
            raise RuntimeError(f"{out}: no 'summary:' line in callgrind's output")
        return int(match.group(1))


def main() -> int:
    if shutil.which("valgrind") is None:
        print("instructions.py: valgrind is not installed (apt-get install valgrind); skipped")
        return 0
    update = "--update" in sys.argv[1:]
    build()
    rustc = rustc_version()
    baseline = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    same_compiler = baseline.get("rustc") == rustc
    old = baseline.get("instructions", {})
    new: dict[str, int] = {}
    regressions = []
    print(f"instructions for one {SCENARIO} run (callgrind Ir; {rustc})")
    print(f"{'controller':<10} {'instructions':>15} {'baseline':>15} {'change':>8}")
    for cc in CONTROLLERS:
        new[cc] = count(cc)
        before = old.get(cc)
        change = "" if before is None else f"{(new[cc] - before) / before:+.2%}"
        print(f"{cc:<10} {new[cc]:>15,} {before or 0:>15,} {change:>8}")
        if before is not None and same_compiler and new[cc] > before * (1 + THRESHOLD):
            regressions.append(cc)
    if not same_compiler and old:
        print(f"baseline was counted with {baseline.get('rustc')}: not judged")
    if update:
        tmp = BASELINE.with_suffix(".json.tmp")
        tmp.write_text(
            json.dumps({"rustc": rustc, "scenario": SCENARIO, "instructions": new}, indent=2) + "\n"
        )
        os.replace(tmp, BASELINE)
        print(f"baseline written: {BASELINE.relative_to(ROOT)}")
        return 0
    if regressions:
        print(f"REGRESSION: more than {THRESHOLD:.0%} above the baseline for {', '.join(regressions)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
