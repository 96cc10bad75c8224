"""Every output the README and the manual show is the output of its command, run here: a page
marks such a block with `<!-- output: NAME -->` on the line before it, and `OUTPUTS[NAME]` runs
what the page says was run and returns what it printed. The block must be that text, once the
values that change from run to run (timings, run keys, temporary paths) are masked; a line `...`
stands for lines left out and `...` inside a line for part of it, so an excerpt shows a part of an
output but nothing the command does not print. A block that is not a command's output (a diagram,
a file's contents, a format) says so with `<!-- not output: why -->`; any other block that looks
like output fails `test_every_output_a_page_shows_is_marked`.

`RTCBENCH_UPDATE_SNAPSHOTS=1` writes each whole output (a block without `...`) into its page
instead (review the diff), as the summaries' snapshots are updated."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "docs" / "controllers").glob("*.md")),
]
"""The pages checked. The tutorials (docs/tutorials, docs/env.md's and docs/controllers/python.md's
Python blocks, docs/sweeps.md) run their blocks in their own tests (`doc_blocks`)."""

MARK = re.compile(r"^<!-- (output|not output): ?(.*?) -->$")
FENCE = re.compile(r"^```(\S*)")

_RUN_TIMING = r"simulated (\d+) s in [\d,.]+ m?s \([\d,]+x real time\); run with metrics and files [\d.]+ s"
_SUITE_TIMING = r"in [\d.]+ s; simulated ([\d,]+) s at [\d,]+ s per wall-clock second"
MASKS = (
    # How long a run took, and how fast: the machine's, not the code's.
    (re.compile(_RUN_TIMING), r"simulated \1 s in … (…x real time); run with metrics and files … s"),
    (re.compile(_SUITE_TIMING), r"in … s; simulated \1 s at …"),
    (re.compile(r"trained in \d+ s"), "trained in … s"),
    # A run folder's key (12 hex digits) changes with the model revision.
    (re.compile(r"/[0-9a-f]{12}/seed-"), "/<key>/seed-"),
)  # fmt: skip


def _masked(text: str) -> str:
    for pattern, replacement in MASKS:
        text = pattern.sub(replacement, text)
    return text


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    kind: str  # "fence" or "table"
    text: str
    start: int  # character offsets of the text in the page
    end: int


def _blocks(page: Path) -> list[tuple[str | None, str, Block]]:
    """Each fenced block (and Markdown table) of a page, with its marker (`output`, `not output` or
    None) and the marker's argument."""
    lines = page.read_text(encoding="utf-8").splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    out: list[tuple[str | None, str, Block]] = []
    i = 0
    while i < len(lines):
        line = lines[i].rstrip("\n")
        mark = MARK.match(lines[i - 1].rstrip("\n")) if i else None
        if FENCE.match(line):
            lang = FENCE.match(line).group(1)  # type: ignore[union-attr]
            j = i + 1
            while j < len(lines) and lines[j].rstrip("\n") != "```":
                j += 1
            text = "".join(lines[i + 1 : j])
            block = Block(page, i + 1, f"fence:{lang}", text, offsets[i + 1], offsets[j])
            out.append((mark.group(1) if mark else None, mark.group(2) if mark else "", block))
            i = j + 1
            continue
        if line.startswith("|") and mark is not None:
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            block = Block(page, i + 1, "table", "".join(lines[i:j]), offsets[i], offsets[j])
            out.append((mark.group(1), mark.group(2), block))
            i = j
            continue
        i += 1
    return out


_COMMAND = re.compile(
    r"^(\$ |\.venv/|rtcbench |make |sudo |cargo |python|pip |cd |git |export |# |bash |sh |ip |tc )"
)


def _looks_like_output(block: Block, previous: Block | None) -> bool:
    """A block in no language (or text, console) that is not a list of commands, and not the
    printout of a Python block right before it (the tutorials' pairs, run by their own tests)."""
    lang = block.kind.removeprefix("fence:")
    if block.kind == "table" or lang not in ("", "text", "console"):
        return False
    if lang == "text" and previous is not None and previous.kind == "fence:python":
        return False
    lines = [ln for ln in block.text.splitlines() if ln.strip()]
    return bool(lines) and not all(_COMMAND.match(ln) or ln.startswith("  ") for ln in lines)


def test_every_output_a_page_shows_is_marked() -> None:
    unmarked, unknown = [], []
    for page in PAGES:
        previous = None
        for mark, name, block in _blocks(page):
            where = f"{page.relative_to(ROOT)}:{block.line}"
            if mark == "output" and name not in OUTPUTS:
                unknown.append(f"{where}: {name}")
            if mark is None and _looks_like_output(block, previous):
                unmarked.append(where)
            previous = block
    assert not unknown, f"marked as outputs no test produces: {unknown}"
    assert not unmarked, (
        "blocks that look like a command's output but are not marked <!-- output: NAME --> (with a "
        f"producer in tests/test_doc_outputs.py) or <!-- not output: why -->: {unmarked}"
    )


def _shown(excerpt: str, produced: str) -> str | None:
    """Why `excerpt` is not `produced` (both masked), or None: every line of the excerpt is a line
    of the output, in order, consecutive but where a line `...` stands between them; `...` inside
    a line matches any text."""
    want = [ln.rstrip() for ln in _masked(excerpt).splitlines()]
    have = [ln.rstrip() for ln in _masked(produced).splitlines()]
    k = 0
    gap = False
    for ln in want:
        if ln.strip() == "...":
            gap = True
            continue
        pattern = re.compile(".*?".join(re.escape(part) for part in ln.split("...")) + r"\Z")
        while k < len(have) and not pattern.match(have[k]):
            if not gap:
                return f"the page shows\n  {ln}\nwhere the command printed\n  {have[k]}"
            k += 1
        if k == len(have):
            return f"the command printed no line\n  {ln}\n(in this order)"
        k += 1
        gap = False
    return None


# --- what the pages ran ------------------------------------------------------------------------


def _cli(*args: str, cwd: Path, check: bool = True, columns: int = 120) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "rtcbench.cli", *args],
        cwd=cwd, capture_output=True, text=True, check=False, env={**os.environ, "COLUMNS": str(columns)},
    )  # fmt: skip
    if check:
        assert done.returncode == 0, done.stderr
    return done


@dataclass
class Workspace:
    """A folder the pages' commands run in, with the suites they share made once."""

    root: Path
    made: set[str]

    def suite(self, name: str, *runs: tuple[str, ...]) -> Path:
        out = self.root / "results" / name
        if name not in self.made:
            for args in runs:
                _cli("suite", *args, "--out", str(out), cwd=self.root)
            self.made.add(name)
        return out


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return Workspace(tmp_path_factory.mktemp("pages"), set())


def _demo(ws: Workspace) -> str:
    """README: what `make demo` prints for its first variant."""
    done = _cli("run", "rfc8867-5.1", "--cc", "gcc", "--seed", "1", "--out", "results/demo",
                "--set", "delay=50ms", "--set", "mechanism=link-rate", cwd=ws.root)  # fmt: skip
    # Its first variant, which the README shows: to the line after its timing, the folder.
    lines = done.stdout.splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith("simulated "))
    return "\n".join(line.rstrip() for line in lines[: end + 2]) + "\n"


def _controllers_compared(ws: Workspace) -> str:
    """README: `rtcbench table` on the three cases of Sjölund and Kevo 2022 (seed 001)."""
    scenarios = ("seed001-staircase", "seed001-sudden-reduction", "seed001-sweden-to-china")
    return _cli("table", *scenarios, "--cc", "gcc,gcc-draft,nada,scream", cwd=ws.root).stdout


def _gcc_vs_fixed(ws: Workspace) -> Path:
    return ws.suite("gcc-vs-fixed", ("rfc8867-5.1", "rfc8867-5.6", "--cc", "gcc,fixed", "--reps", "5",
                                     "--set", "duration=20s"))  # fmt: skip


def _compare_terminal(ws: Workspace) -> str:
    """docs/compare.md: the first example's comparison, five metrics."""
    metrics = "utilization,qdelay_p95_ms,loss_ratio,tcp_throughput_bps,jain_index_all"
    return _cli(
        "compare", str(_gcc_vs_fixed(ws)), "--baseline", "gcc", "--metric", metrics, cwd=ws.root
    ).stdout


def _four(ws: Workspace) -> Path:
    return ws.suite("rfc8867-5.1-four", ("rfc8867-5.1", "--cc", "gcc,gcc-draft,nada,scream", "--reps", "5",
                                         "--set", "delay=50ms", "--set", "mechanism=link-rate"))  # fmt: skip


def _compare_in_short(ws: Workspace) -> str:
    """docs/compare.md: the sentence of NADA against GoogCC on RFC 8867 §5.1, reflowed as the page
    has it."""
    out = _cli("compare", str(_four(ws)), "--labels", "gcc,nada", cwd=ws.root, columns=400).stdout
    (sentence,) = [ln for ln in out.splitlines() if ": nada against gcc: " in ln]
    return textwrap.fill(sentence.strip(), width=100, break_on_hyphens=False) + "\n"


def _compare_no_run(ws: Workspace) -> str:
    (ws.root / "results" / "empty").mkdir(parents=True, exist_ok=True)
    done = _cli("compare", "results/empty", cwd=ws.root, check=False)
    assert done.returncode == 2
    return done.stderr


def _suite_unknown(ws: Workspace) -> str:
    done = _cli("suite", "rfc9999", cwd=ws.root, check=False, columns=400)
    assert done.returncode == 2
    return done.stderr


def _without_root(ws: Workspace) -> str:
    """docs/emulation.md: what a machine without root and without `ip` is told. This one has both,
    so the command runs with neither (its euid and PATH made so for it alone)."""
    code = (
        "import os, shutil, sys; os.geteuid = lambda: 1000; shutil.which = lambda *a, **k: None; "
        "sys.argv = ['rtcbench', 'run', 'rfc8867-5.1', '--mode', 'emulate', '--out', 'results/x']; "
        "from rtcbench.cli import main; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ws.root, capture_output=True, text=True, check=False
    )
    assert done.returncode == 2, done.stderr
    return done.stderr


def _small_queues(ws: Workspace) -> str:
    """docs/emulation.md: a scenario whose TCP flows rely on the sending host's own queue."""
    done = _cli(
        "run",
        "seed000-5.2.8",
        "--mode",
        "emulate",
        "--out",
        "results/x",
        cwd=ws.root,
        check=False,
        columns=400,
    )
    assert done.returncode == 2, done.stderr
    return done.stderr.removeprefix("error: ")


def _opennetlab_rtt(ws: Workspace) -> str:
    """docs/capacity-traces.md: an OpenNetLab trace with an RTT rtcbench would not apply."""
    (ws.root / "traces").mkdir(exist_ok=True)
    (ws.root / "traces" / "4G.json").write_text(
        '{"type": "video", "uplink": {"trace_pattern": [{"duration": 1000, "capacity": 1500, "rtt": 89}]}}'
    )
    (ws.root / "my.toml").write_text(
        'id = "my"\nduration = "5s"\n[[links]]\nname = "forward"\nfrom = "A"\nto = "B"\n'
        'capacity_trace = { file = "traces/4G.json" }\nqueue = { size = "100ms" }\n'
        '[[links]]\nname = "backward"\nfrom = "B"\nto = "A"\n[[calls]]\nfrom = "A"\nto = "B"\n'
    )
    done = _cli("run", "my.toml", "--out", "results/x", cwd=ws.root, check=False, columns=400)
    assert done.returncode == 2, done.stderr
    return done.stderr


def _train_bwe(ws: Workspace) -> str:
    """docs/env.md: the example's whole training (about 30 s on two cores), every fifth iteration
    and the last, as the page shows it, and its evaluation."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "train_bwe.py")],
        cwd=ws.root, capture_output=True, text=True, check=True,
    )  # fmt: skip
    lines = done.stdout.splitlines()
    iterations = [ln for ln in lines if ln.startswith("iteration ")]
    shown = [ln for ln in iterations if int(ln.split()[1].rstrip(":")) % 5 == 0 or ln == iterations[-1]]
    return "\n".join([*shown, *(ln for ln in lines if not ln.startswith("iteration "))]) + "\n"


OUTPUTS: dict[str, Callable[[Workspace], str]] = {
    "demo": _demo,
    "controllers-compared": _controllers_compared,
    "compare-terminal": _compare_terminal,
    "compare-in-short": _compare_in_short,
    "compare-no-run": _compare_no_run,
    "suite-unknown": _suite_unknown,
    "emulation-without-root": _without_root,
    "emulation-small-queues": _small_queues,
    "trace-rtt": _opennetlab_rtt,
    "train-bwe": _train_bwe,
}


def _marked(name: str) -> Block:
    found = [b for page in PAGES for mark, n, b in _blocks(page) if mark == "output" and n == name]
    assert len(found) == 1, f"<!-- output: {name} --> marks {len(found)} blocks"
    return found[0]


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_a_pages_output_is_its_commands(name: str, workspace: Workspace) -> None:
    block = _marked(name)
    produced = OUTPUTS[name](workspace)
    if os.environ.get("RTCBENCH_UPDATE_SNAPSHOTS") == "1" and "..." not in block.text:
        text = block.page.read_text(encoding="utf-8")
        block.page.write_text(text[: block.start] + produced + text[block.end :], encoding="utf-8")
        return
    problem = _shown(block.text, produced)
    assert problem is None, f"{block.page.relative_to(ROOT)}:{block.line} ({name}): {problem}"
