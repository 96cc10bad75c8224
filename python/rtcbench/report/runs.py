"""Finding the runs under the folders a report is asked for, and saying what is wrong with them.

A report is read from results folders alone (ARCHITECTURE.md, "Results on disk"): a run's folder,
a suite's `--out` (a folder of run folders), or several suites. Folders are found by what they
hold, not by their depth, so a hand-made layout works too. A run folder that lacks a file, or whose
`summary.json` cannot be read, becomes a `Problem` that names it; the report leaves out only what
needed the missing part, and says so.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rtcbench.results import (
    LINK_READ,
    MAX_SUMMARY_BYTES,
    RUN_FILES,
    SUMMARY,
    InputError,
    PlantedLink,
    read_file,
    read_summary,
    run_folders,
    table_problem,
    unlinked,
)
from rtcbench.tables import MEDIA_KINDS, VIDEO

__all__ = [
    "EXPECTED_FILES",
    "TIMESERIES",
    "Problem",
    "Run",
    "Source",
    "case_id",
    "find_runs",
    "natural_key",
    "runs_ids",
    "slug",
    "source_labels",
    "video_flows",
]

TIMESERIES = "timeseries.parquet"
_REPORTED_KEYS = ("scenario", "controller", "seed", "flows", "phases", "meta")
"""What the report needs of a summary (older runs lack the sharing keys; the report says so)."""
EXPECTED_FILES = RUN_FILES
"""What every run folder holds (figures aside): `results.RUN_FILES`."""


@dataclass(frozen=True)
class Problem:
    """Something the report could not use: where it is, and what is wrong. Shown in the report's
    Problems section and on stderr."""

    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


@dataclass(frozen=True)
class Source:
    """One folder given to the report, with the label that tells its runs apart from another's."""

    path: Path
    label: str


@dataclass(frozen=True)
class Run:
    """One run folder with a readable `summary.json`; `missing` names the expected files it lacks;
    `digest` is the SHA-256 of the summary's bytes, which record every trace file's SHA-256: what
    the run's figures are cached by (`rtcbench.report.cache`). `config` is the first digits of
    its scenario's fingerprint when runs of another configuration share its scenario and variant
    names (another --set, an edited trace), so they are not pooled as one case."""

    path: Path
    source: Source
    summary: dict[str, Any]
    missing: tuple[str, ...] = field(default=())
    digest: str = ""
    config: str = ""
    unreadable: tuple[str, ...] = field(default=())
    """The tables of `missing` that are there but not what rtcbench writes: already named in the
    problems, so what leaves them out says nothing more."""

    @property
    def scenario(self) -> str:
        return str(self.summary["scenario"])

    @property
    def variant(self) -> str:
        """The variant's name, with the configuration's digits when they tell cases apart, and
        "emulated" for a run on an emulated network (docs/emulation.md): never pooled with the
        simulated runs of its case."""
        name = str(self.summary.get("variant") or "")
        if self.config:
            name = f"{name} #{self.config}".strip()
        suffix = {"emulate": "emulated", "gstreamer": "gstreamer"}.get(self.mode)
        return f"{name} {suffix}".strip() if suffix else name

    @property
    def mode(self) -> str:
        """`simulate`, `emulate`, `browser` or `gstreamer` (runs written before modes existed were
        simulated)."""
        return str(self.summary.get("mode") or "simulate")

    @property
    def controller(self) -> str:
        return str(self.summary["controller"])

    @property
    def seed(self) -> int:
        return int(self.summary["seed"])

    @property
    def case(self) -> tuple[str, str]:
        """The test case and its variant: runs that differ only in controller and seed."""
        return (self.scenario, self.variant)

    def has(self, name: str) -> bool:
        return name not in self.missing

    def order(self) -> tuple[Any, ...]:
        """Where the run comes in the report: by case, variant (`natural_key`), folder, controller
        and seed."""
        return (
            natural_key(self.scenario), natural_key(self.variant), self.source.label, self.controller,
            self.seed, str(self.path),
        )  # fmt: skip

    def title(self) -> str:
        variant = f" [{self.variant}]" if self.variant else ""
        return f"{self.scenario}{variant} · {self.controller} · seed {self.seed}"


def slug(text: str) -> str:
    """`text` with every character outside [A-Za-z0-9._@-] replaced by '-': safe in a file name
    and an HTML id, and stable."""
    out = re.sub(r"[^A-Za-z0-9._@-]+", "-", text).strip("-")
    return out or "-"


_NUMBER = re.compile(r"(\d+(?:\.\d+)?)")


def case_id(scenario: str, variant: str) -> str:
    """A case's id in the report (`case--<id>`, and its figures' `<kind>--<id>`)."""
    return slug(scenario) + (f"@{slug(variant)}" if variant else "")


def natural_key(text: str) -> tuple[tuple[int, float, str], ...]:
    """A sort key that compares the numbers inside `text` as numbers, so variants come in the order
    of their values: "50ms" before "100ms", "1Mbps" before "2.5Mbps" before "10Mbps"."""
    return tuple(
        (0, float(part), "") if i % 2 else (1, 0.0, part)
        for i, part in enumerate(_NUMBER.split(text))
        if part
    )


def source_labels(paths: list[Path]) -> list[str]:
    """A short label per folder: its name, or as many trailing path parts as it takes to tell the
    folders apart (two suites named `results` in different places)."""
    resolved = [p.resolve() for p in paths]
    for depth in range(1, max((len(p.parts) for p in resolved), default=1) + 1):
        labels = ["/".join(p.parts[-depth:]) or str(p) for p in resolved]
        if len(set(labels)) == len(labels):
            return labels
    return [f"{label}#{i + 1}" for i, label in enumerate(str(p) for p in resolved)]


def runs_ids(runs: Sequence[Run], several: bool) -> dict[Path, str]:
    """Each run's id in a report and in figure file names: `<case>--<controller>--seed-<n>`,
    after its folder's label with `several` folders, and numbered where two would share one."""
    ids: dict[Path, str] = {}
    taken: set[str] = set()
    for run in runs:
        base = f"{case_id(run.scenario, run.variant)}--{slug(run.controller)}--seed-{run.seed}"
        if several:
            base = f"{slug(run.source.label)}--{base}"
        rid, n = base, 1
        while rid in taken:
            n += 1
            rid = f"{base}-{n}"
        taken.add(rid)
        ids[run.path] = rid
    return ids


def find_runs(sources: list[Source], problems: list[Problem]) -> list[Run]:
    """Every run folder under the sources. A folder without a readable `summary.json`, or one
    that is a link below its source (`results.LINK_READ`), is reported in `problems` and left
    out; a run lacking another file is kept, with the file listed in `Run.missing` and in
    `problems`."""
    runs: list[Run] = []
    for source in sources:
        if not source.path.is_dir():
            problems.append(Problem(str(source.path), "not a folder"))
            continue
        folders = run_folders(source.path)
        if not folders:
            problems.append(Problem(str(source.path), "holds no run folder (none has a summary.json)"))
        for folder in folders:
            try:
                unlinked(source.path, folder, LINK_READ)
            except PlantedLink as e:
                problems.append(Problem(str(e.link), e.what))
                continue
            present = {p.name for p in folder.iterdir()} if folder.is_dir() else set()
            missing = tuple(name for name in EXPECTED_FILES if name not in present)
            if "summary.json" in missing:
                problems.append(
                    Problem(str(folder), f"missing {', '.join(missing)}; the run is left out of the report")
                )
                continue
            try:
                summary = read_summary(folder, required=_REPORTED_KEYS)
            except InputError as e:
                problems.append(Problem(str(folder), f"{e}; the run is left out of the report"))
                continue
            if missing:
                problems.append(
                    Problem(str(folder), f"missing {', '.join(missing)}; what needs it is left out")
                )
            # A table that is not what rtcbench writes is left out as a missing one is, named in
            # the line `score`, `figure` and `reproduce` give for it (`results.read_table`).
            unreadable: tuple[str, ...] = ()
            for name in [n for n in EXPECTED_FILES if n.endswith(".parquet") and n not in missing]:
                if (problem := table_problem(folder / name)) is not None:
                    problems.append(Problem(str(folder / name), f"{problem}; what needs it is left out"))
                    unreadable += (name,)
            try:
                digest = hashlib.sha256(read_file(folder / SUMMARY, MAX_SUMMARY_BYTES)).hexdigest()
            except (OSError, InputError) as e:
                problems.append(Problem(str(folder), f"summary.json unreadable ({e}); the run is left out"))
                continue
            runs.append(Run(folder, source, summary, (*missing, *unreadable), digest, unreadable=unreadable))
    return _told_apart(runs)


CONFIG_DIGITS = 8
"""Digits of a scenario fingerprint shown to tell configurations of one variant apart."""


def _told_apart(runs: list[Run]) -> list[Run]:
    """`runs`, those whose scenario and variant names are shared by several configurations marked
    with their configuration (`Run.config`)."""
    configs: dict[tuple[str, str], set[str]] = {}
    for r in runs:
        configs.setdefault(r.case, set()).add(_fingerprint(r))
    return [
        replace(r, config=_fingerprint(r)[:CONFIG_DIGITS]) if len(configs[r.case]) > 1 else r for r in runs
    ]


def _fingerprint(r: Run) -> str:
    identity = r.summary.get("identity")
    sha = identity.get("scenario_sha256") if isinstance(identity, dict) else None
    return str(sha) if sha else ""


def video_flows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's video flows (summary `flows`), or its media flows if it has no video."""
    flows: list[dict[str, Any]] = summary["flows"]
    video = [f for f in flows if f.get("kind") == VIDEO]
    return video or [f for f in flows if f.get("kind") in MEDIA_KINDS]
