"""Runs every built-in scenario (every variant) with several controllers and hashes what each run
wrote: every column of every Parquet table and the summary (`result_hashes.py`). Used to prove a
refactoring leaves behaviour bit-identical (docs/simulator.md, "Proving a change changes
nothing"): record the hashes at the base commit, make the change, record again and compare.

    make build-release && python scripts/hash_outputs.py record base.json [--cc gcc,fixed] [--jobs 2]
    make build-release && python scripts/hash_outputs.py record after.json
    python scripts/hash_outputs.py compare base.json after.json

It runs the installed extension: rebuild it (`make build-release`) at each commit first.

`record` writes each run to a temporary folder (as `rtcbench run` does, figures off), hashes its
files and deletes them, `--jobs` scenarios at a time. A run is keyed by scenario, variant,
controller and seed; the run key of its folder (a hash of the scenario text) is left out, so a
reworded scenario description does not count as a change. `--set` applies overrides to every
scenario (`--set duration=20s` for a quick pass). `compare` prints how many runs, tables and
columns matched and every one that did not, and exits with status 1 if any differs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

CONTROLLERS = ("gcc", "gcc-draft", "nada", "scream", "fixed")
"""Every built-in controller the snapshot tests use."""


def _result_hashes() -> ModuleType:
    path = Path(__file__).with_name("result_hashes.py")
    spec = importlib.util.spec_from_file_location("result_hashes", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run_one(task: tuple[str, str, int, tuple[str, ...]]) -> tuple[dict[str, Any], float, str | None]:
    """Hashes of every variant of one scenario with one controller, keyed without the run key;
    or why the scenario cannot run as asked (a bad `--set`), as one line: the core's errors do
    not cross back from a worker process."""
    import rtcbench  # imported in the worker: each process loads the extension once

    scenario, cc, seed, sets = task
    hashes = _result_hashes()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rtcbench-hash-") as tmp:
        try:
            rtcbench.run(scenario, cc, seed, out=tmp, sets=sets, figure=False)
        except ValueError as e:
            return {}, 0.0, str(e).splitlines()[0]
        found = hashes.hashes(Path(tmp))
    out: dict[str, Any] = {}
    for path, h in found.items():
        # <scenario[@variant]>/<controller>/<run key>/seed-<n>: drop the run key.
        parts = path.split("/")
        out["/".join([*parts[:2], *parts[3:]])] = h
    return out, time.perf_counter() - start, None


def record(args: argparse.Namespace) -> int:
    import rtcbench

    scenarios = args.scenario or [b.id for b in rtcbench.builtin()]
    ccs = [c for c in args.cc.split(",") if c]
    tasks = [(s, cc, args.seed, tuple(args.set)) for s in scenarios for cc in ccs]
    result: dict[str, Any] = {}
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for (scenario, cc, _, _), (hashes, wall, error) in zip(tasks, pool.map(_run_one, tasks), strict=True):
            if error is not None:
                pool.shutdown(cancel_futures=True)
                print(f"error: {scenario} with {cc}: {error}", file=sys.stderr)
                return 2
            result.update(hashes)
            print(f"{scenario:<28} {cc:<10} {len(hashes):>3} runs {wall:6.1f} s", file=sys.stderr)
    meta = {"seed": args.seed, "controllers": ccs, "sets": args.set, "scenarios": scenarios}
    Path(args.output).write_text(json.dumps({"meta": meta, "runs": result}, indent=1, sort_keys=True) + "\n")
    print(
        f"{len(result)} runs of {len(scenarios)} scenarios x {len(ccs)} controllers hashed in "
        f"{time.perf_counter() - start:.0f} s -> {args.output}",
        file=sys.stderr,
    )
    return 0


def compare(args: argparse.Namespace) -> int:
    a = json.loads(Path(args.before).read_text())
    b = json.loads(Path(args.after).read_text())
    if a["meta"] != b["meta"]:
        print(f"warning: recorded with different settings: {a['meta']} vs {b['meta']}")
    runs_a, runs_b = a["runs"], b["runs"]
    differences: list[str] = []
    for key in sorted(set(runs_a) ^ set(runs_b)):
        differences.append(f"{key}: only in {'before' if key in runs_a else 'after'}")
    counts = {"runs": 0, "tables": 0, "columns": 0, "rows": 0}
    for key in sorted(set(runs_a) & set(runs_b)):
        ra, rb = runs_a[key], runs_b[key]
        counts["runs"] += 1
        if ra["summary"] != rb["summary"]:
            differences.append(f"{key}: summary.json")
        for table in sorted(set(ra) | set(rb)):
            if table == "summary":
                continue
            ta, tb = ra.get(table), rb.get(table)
            if ta is None or tb is None:
                differences.append(f"{key}: {table} only {'before' if tb is None else 'after'}")
                continue
            counts["tables"] += 1
            counts["rows"] += ta["rows"]
            if ta["rows"] != tb["rows"]:
                differences.append(f"{key}: {table}: {ta['rows']} rows before, {tb['rows']} after")
            for column in sorted(set(ta) | set(tb)):
                if column == "rows":
                    continue
                counts["columns"] += 1
                if ta.get(column) != tb.get(column):
                    differences.append(f"{key}: {table}.{column}")
    print(
        f"compared {counts['runs']} runs, {counts['tables']} tables, {counts['columns']} columns "
        f"({counts['rows']:,} rows) and {counts['runs']} summaries"
    )
    for d in differences:
        print(f"DIFFERS {d}")
    print("all equal" if not differences else f"{len(differences)} differences")
    return 0 if not differences else 1


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="run and hash every built-in scenario")
    rec.add_argument("output")
    rec.add_argument("--cc", default=",".join(CONTROLLERS), help="comma-separated controllers")
    rec.add_argument("--seed", type=int, default=1)
    rec.add_argument("--jobs", type=int, default=2)
    rec.add_argument("--scenario", action="append", help="only these scenarios (repeatable)")
    rec.add_argument("--set", action="append", default=[], help="override applied to every scenario")
    cmp = sub.add_parser("compare", help="compare two recordings")
    cmp.add_argument("before")
    cmp.add_argument("after")
    args = parser.parse_args()
    return record(args) if args.command == "record" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
