"""The reproduction as Markdown: one section per seed table, the seed's value beside Chromium's and
the simulator's, each finding's verdicts, and the period comparison's totals. `rtcbench
reproduce` writes it to `<out>/reproduction.md`; docs/reproduction.md quotes it."""

from __future__ import annotations

from typing import Any

import polars as pl

from rtcbench.calibrate import DELAY_SLACK_MS, RATE_TOLERANCE
from rtcbench.reproduce import SPREAD_RUNS, SPREAD_WIDENING

__all__ = ["DELAY_GOAL", "RATE_GOAL", "SPREAD_GOAL", "fidelity", "markdown"]

RATE_GOAL = 0.90
"""Share of period comparisons of the sending rate that must agree (issue 34's bar)."""
DELAY_GOAL = 0.80
"""Share of period comparisons of queuing delay p95 that must agree."""
SPREAD_GOAL = 0.90
"""Share of periods, per metric, whose simulated mean must lie in Chromium's widened range of runs
(issue 62's goal (b))."""


def _num(value: float | None) -> str:
    if value is None:
        return "–"
    digits = 0 if abs(value) >= 100 else 1 if abs(value) >= 10 else 2
    return f"{value:.{digits}f}"


def _yes(value: bool | None) -> str:
    return "–" if value is None else "yes" if value else "**no**"


def fidelity(periods: pl.DataFrame, verdict: str = "agrees") -> dict[str, tuple[int, int]]:
    """Per period metric: (periods whose `verdict` column is true, periods judged), nulls left out:
    `agrees` for the comparison with Chromium's value, `in_spread` for its range of runs
    (`reproduce.with_spread`)."""
    out = {}
    for metric in ("send_rate_kbps", "qdelay_p95_ms"):
        judged = periods.filter((pl.col("metric") == metric) & pl.col(verdict).is_not_null())
        out[metric] = (int(judged.get_column(verdict).sum()), judged.height)
    return out


def _fidelity_lines(periods: pl.DataFrame) -> list[str]:
    (rate_ok, rate_n), (delay_ok, delay_n) = fidelity(periods).values()
    if not rate_n:
        return ["No period was compared (no browser runs)."]

    def share(ok: int, n: int) -> str:
        return f"{ok} of {n} ({ok / n:.0%})" if n else "none"

    lines = [
        f"- Sending rate within {RATE_TOLERANCE:.0%} of Chromium: {share(rate_ok, rate_n)} of the periods "
        f"(goal {RATE_GOAL:.0%}).",
        f"- Queuing delay p95 within {RATE_TOLERANCE:.0%} or {DELAY_SLACK_MS:g} ms: "
        f"{share(delay_ok, delay_n)} (goal {DELAY_GOAL:.0%}).",
    ]
    for metric, name in (("send_rate_kbps", "Sending rate"), ("qdelay_p95_ms", "Queuing delay p95")):
        ok, n = fidelity(periods, "in_spread")[metric]
        if n:
            lines.append(
                f"- {name} inside Chromium's range over {SPREAD_RUNS} or more runs, widened by "
                f"{SPREAD_WIDENING:.0%}: {share(ok, n)} (goal {SPREAD_GOAL:.0%})."
            )
    return lines


def _period_lines(periods: pl.DataFrame) -> list[str]:
    """Every period compared: Chromium's value beside its range over the committed runs, and the
    simulator's mean, with both verdicts."""
    compared = periods.filter(pl.col("agrees").is_not_null())
    if not compared.height:
        return []
    lines = [
        "## Every period",
        "",
        "| case | flow | period | metric | Chromium 156 | its range (runs) | simulator | agrees | in range |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in compared.iter_rows(named=True):
        runs = r["chromium_runs"]
        spread = f"{_num(r['chromium_low'])}-{_num(r['chromium_high'])} ({runs})" if runs else "–"
        lines.append(
            f"| {r['case']} | {r['flow']} | {r['start_s']:g}-{r['end_s']:g} s | {r['metric']} "
            f"| {_num(r['chromium'])} | {spread} | {_num(r['simulated'])} | {_yes(r['agrees'])} "
            f"| {_yes(r['in_spread'])} |"
        )
    return [*lines, ""]


def markdown(
    rows: pl.DataFrame, findings: pl.DataFrame, periods: pl.DataFrame, *, wall_s: float | None = None
) -> str:
    """The reproduction's tables as one Markdown document."""
    lines = ["# The seeds re-run: the seed, Chromium 156 and the simulator", ""]
    if wall_s is not None:
        lines += [f"Runs made now took {wall_s / 60:.0f} min of wall time.", ""]
    lines += ["## Fidelity over every period", "", *_fidelity_lines(periods), ""]
    for (table, source), t in rows.group_by(["table", "source"], maintain_order=True):
        lines += [f"## {source} (`{table}`)", ""]
        lines += [
            "| | seed | Chromium 156 | simulator (sd) | Chromium ≈ seed | simulator ≈ Chromium |",
            "|---|---|---|---|---|---|",
        ]
        for r in t.iter_rows(named=True):
            unit = f" ({r['unit']})" if r["unit"] else ""
            sim = _num(r["simulated"])
            if r["simulated_sd"] is not None and r["simulated_runs"] > 1:
                sim += f" ({_num(r['simulated_sd'])})"
            chromium = _num(r["chromium"]) + ("" if r["chromium_fair"] is not False else " (invalid run)")
            lines.append(
                f"| {r['label']}{unit} | {_num(r['seed'])} | {chromium} "
                f"| {sim} | {_yes(r['chromium_agrees_with_seed'])} "
                f"| {_yes(r['simulated_agrees_with_chromium'])} |"
            )
        lines += ["", "| finding | on the seed's numbers | Chromium 156 | simulator |", "|---|---|---|---|"]
        for f in findings.filter(pl.col("table") == table).iter_rows(named=True):
            # A finding is the seed's claim: where the seed printed no numbers to judge it on, it
            # is still what the seed says.
            seed = "claimed" if f["seed"] is None else _yes(f["seed"])
            chromium = _yes(f["chromium"]) + ("" if f["chromium_fair"] is not False else " (invalid run)")
            lines.append(f"| {f['finding']} | {seed} | {chromium} | {_yes(f['simulated'])} |")
        lines.append("")
    lines += _period_lines(periods)
    return "\n".join(lines)


def verdict_line(finding: dict[str, Any]) -> str:
    """One line per finding: does it hold for Chromium 156, does the simulator agree with it? (If
    a number it needs has no Chromium value, no browser run or no fair one in the reference: does
    it hold for the simulator?)"""
    c, s = finding["chromium"], finding["simulated"]
    sim = "not measured" if s is None else "holds" if s else "does not hold"
    if c is None:
        return f"{finding['finding']}: no Chromium 156 number for it; for the simulator it {sim}"
    holds = "holds" if c else "does not hold"
    invalid = " (an invalid run)" if finding["chromium_fair"] is False else ""
    agree = "not measured" if s is None else "agrees" if c == s else f"disagrees (it {sim})"
    return f"{finding['finding']}: {holds} for Chromium 156{invalid}; the simulator {agree}"
