"""The report's comparison section (docs/report.md, "Comparison"), in every report of more than
one controller or folder: for each side compared with the baseline, a matrix of who is better per
case and metric, then per case a sentence and the full rows of `rtcbench.compare` (means, B − A,
its bootstrap interval, Cliff's δ and the verdict). The numbers are `rtcbench compare`'s: the page
and the terminal say the same."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rtcbench import compare
from rtcbench.report import tables as tb
from rtcbench.report.runs import Problem, case_id, slug

__all__ = ["MATRIX_METRICS", "ComparedCase", "ComparedSide", "ComparisonSection", "comparison_section"]

MATRIX_METRICS = (
    "mean_goodput_bps",
    "freezes",
    "fps_mean",
    "frame_delay_p95_ms",
    "qdelay_p95_ms",
    "loss_ratio",
    "startup_s",
    "recovery_s",
    "utilization",
)
"""The matrix's columns: the picture the call got, then what it cost the network."""

CASE_COLUMNS = ("B − A", "95 % CI of B − A", "Cliff's δ", "runs A/B", "verdict")
"""The columns of a case's table after its metric and the two means."""

_VERDICT_CLASS = {"improvement": "v-pass", "regression": "v-fail", "no change": None}
"""Cells coloured as the scorecard's: green where B is better, red where A is."""


@dataclass(frozen=True)
class ComparedCase:
    """One case of one side: its `rtcbench compare` rows as a table, and its sentence."""

    id: str
    name: str
    case_id: str
    sentence: str
    table: tb.Table


@dataclass(frozen=True)
class ComparedSide:
    """One side compared with the baseline: the matrix, the verdict counts, its cases."""

    id: str
    title: str
    counts: str
    matrix: tb.Table
    cases: tuple[ComparedCase, ...]


@dataclass(frozen=True)
class ComparisonSection:
    baseline: str
    sides: tuple[ComparedSide, ...]
    notes: tuple[str, ...]
    once: str | None = None
    """What a comparison without verdicts says once (`compare.Comparison.note_once`)."""

    def sentences(self, case: str) -> list[str]:
        """What each side's comparison says of the case with id `case`, in side order."""
        return [c.sentence for s in self.sides for c in s.cases if c.case_id == case and c.sentence]

    @property
    def tables(self) -> list[tb.Table]:
        return [t for s in self.sides for t in (s.matrix, *(c.table for c in s.cases))]


def comparison_section(
    dirs: Sequence[Path],
    labels: Sequence[str],
    *,
    several: bool,
    min_reps: int = compare.MIN_REPS,
    baseline: str | None = None,
    problems: list[Problem],
) -> ComparisonSection | None:
    """The section for the runs under `dirs`: one folder compares its controllers (`labels`, the
    first the baseline unless `baseline` names another), several folders compare the folders
    (`labels` names them). None, with a
    Problem saying why, where `rtcbench.compare` cannot pair any case."""
    try:
        chosen = list(dirs) if several else [dirs[0]]
        result = compare.comparison(chosen, list(labels), min_reps=min_reps, baseline=baseline)
    except compare.CompareError as e:
        problems.append(Problem("comparison", f"{e}; the section is left out"))
        return None
    sides = tuple(_side(result, b, min_reps) for b in result.labels[1:])
    return ComparisonSection(result.baseline, sides, result.notes, result.note_once())


def _case_name(r: dict[str, Any], mode: str) -> str:
    name = r["scenario"] + (f" [{r['variant']}]" if r["variant"] else "")
    return f"{name} · {r['controller_a']}" if mode == "folders" else name


def _side(result: compare.Comparison, b: str, min_reps: int) -> ComparedSide:
    a = result.baseline
    side_id = f"cmp--{slug(b)}"
    rows = result.table.filter(result.table.get_column("b") == b)
    sentences = dict(result.in_short_cases(b))
    judged = result.note_once() is None
    matrix_rows: list[tuple[tb.Cell, ...]] = []
    cases: list[ComparedCase] = []
    for key, grouped in itertools.groupby(
        rows.iter_rows(named=True), lambda r: (r["scenario"], r["variant"], r["controller_a"])
    ):
        group = {r["metric"]: r for r in grouped}
        first = next(iter(group.values()))
        name = _case_name(first, result.mode)
        cid = f"{side_id}--{slug(name)}"
        link = tb.Cell(name, title=f"details below (#{cid})")
        matrix_rows.append((link, *(_matrix_cell(group.get(m), a, b, judged) for m in MATRIX_METRICS)))
        cases.append(
            ComparedCase(
                id=cid,
                name=name,
                case_id=case_id(first["scenario"], first["variant"]),
                sentence=sentences.get(key, ""),
                table=_case_table(f"tbl-{cid}", name, a, b, list(group.values()), judged),
            )
        )
    counts = result.counts(b)
    said = "" if result.note_once() else ", ".join(f"{n} {verdict}" for verdict, n in counts.items() if n)
    matrix = tb.Table(
        id=f"tbl-{side_id}",
        kind="comparison-matrix",
        caption=f"Who is better, {b} against {a}: per case and metric"
        if judged
        else f"The change, {b} against {a}: per case and metric",
        header=("case", *(compare.BY_NAME[m].heading for m in MATRIX_METRICS)),
        rows=tuple(matrix_rows),
        filter=len(matrix_rows) > 10,
        note=(
            f"Each cell gives the change of {b} against {a} (B − A over A); hover it for the runs."
            if not judged
            else f"A cell names the better side and by how much, where the {min_reps}+ "
            "repetitions of each side support a verdict: the 95 % bootstrap interval of B − A "
            "excludes 0, and the change exceeds both 5 % and the metric's floor, the smallest "
            "difference that matters (docs/compare.md: 10 ms of delay, half a percentage point of "
            f"loss, ...). Green where {b} is better, red where {a} is. ≈: no clear difference. In "
            "grey, the change without a verdict (too few repetitions). Hover a cell for its interval "
            "and effect size."
        ),
    )
    return ComparedSide(side_id, f"{b} compared with {a}", said, matrix, tuple(cases))


def _matrix_cell(r: dict[str, Any] | None, a: str, b: str, judged: bool = True) -> tb.Cell:
    if r is None:
        return tb.Cell("", cls="v-na")
    m = compare.BY_NAME[r["metric"]]
    verdict = r["verdict"]
    size = f" {100 * abs(r['rel_diff']):.0f} %" if r["rel_diff"] is not None else ""
    title = _interval(m, r)
    if verdict in ("improvement", "regression"):
        winner = b if verdict == "improvement" else a
        return tb.Cell(f"{winner}{size}", title=title, cls=_VERDICT_CLASS[verdict])
    if verdict == "no change":
        return tb.Cell("≈", title=title)
    change = "-" if r["rel_diff"] is None else f"{100 * r['rel_diff']:+.0f} %"
    if not judged:  # one run each: the change, nothing to say of it
        return tb.Cell(change, title=f"runs {r['n_a']}/{r['n_b']}", cls="v-na")
    return tb.Cell(change, title=f"{verdict}; {title}", cls="v-na")


def _interval(m: compare.Metric, r: dict[str, Any]) -> str:
    unit = f" {m.unit}" if m.unit else ""
    interval = m.interval(r)
    ci = "no interval" if interval is None else f"95 % CI of B − A {interval}{unit}"
    effect = "" if r["effect"] is None else f"; Cliff's δ {_effect(r['effect'])}"
    return f"{ci}{effect}; runs {r['n_a']}/{r['n_b']}"


def _effect(delta: float) -> str:
    return f"{delta:+.2f} ({compare.effect_word(delta)})"


def _case_table(
    table_id: str, name: str, a: str, b: str, rows: list[dict[str, Any]], judged: bool = True
) -> tb.Table:
    """One case's rows of `rtcbench compare`; without the interval, effect size and verdict where
    every cell has one run a side (`judged` false: nothing to say of a single difference)."""
    body = []
    for r in rows:
        m = compare.BY_NAME[r["metric"]]
        diff = m.format(r["diff"], signed=True)
        if r["rel_diff"] is not None:
            diff += f" ({100 * r['rel_diff']:+.0f} %)"
        ci = m.interval(r) or "-"
        effect = "-" if r["effect"] is None else _effect(r["effect"])
        body.append(
            (
                tb.Cell(m.heading, title=m.definition),
                tb.Cell(m.format(r["mean_a"]), cls="num"),
                tb.Cell(m.format(r["mean_b"]), cls="num"),
                tb.Cell(diff, cls="num"),
                *((tb.Cell(ci, cls="num"), tb.Cell(effect, cls="num")) if judged else ()),
                tb.Cell(f"{r['n_a']}/{r['n_b']}", cls="num"),
                *((tb.Cell(r["verdict"], cls=_VERDICT_CLASS.get(r["verdict"], "v-na")),) if judged else ()),
            )
        )
    columns = CASE_COLUMNS if judged else ("B − A", "runs A/B")
    return tb.Table(
        id=table_id,
        kind="comparison",
        caption=f"{name}: {b} (B) against {a} (A)",
        header=("metric", f"{a} (A)", f"{b} (B)", *columns),
        rows=tuple(body),
    )
