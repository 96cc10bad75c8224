"""Guerrero Viveros 2019 (seed 000) §5.2.6 / §6.2.2 (Experiment 2): one call over 2 → 3 → 1 → 2 Mbit/s
sections of 40 s, at 25, 50 and 100 ms one way. Table 6.1 reports Chrome's GCC; `gcc` (goog_cc)
is held to it, and every controller to bands. The first section is 2 Mbit/s, as Table 6.1's
1.69 Mbit/s = 84.5 % implies (`first=2Mbps`; docs/scenarios.md).

Table 6.1, per section (three delays): utilisation 82-84.5 %, 76.7-80 % (the encoder's 2.5 Mbit/s
cap in a 3 Mbit/s section), 80-83 %, 75.5-84 %; maximum loss 0 except at the 3 → 1 Mbit/s drop,
44.8-66.9 %; "similar results with different delays". Not reproduced: the queuing-delay p95 of
207-225 ms in the third section (here 40-110 ms for goog_cc). Sjölund and Kevo 2022 §5.4.4
suspects Chrome's pacer queue draining into the bottleneck after a drop; here goog_cc's
congestion-window pushback stops the encoder first. Not investigated further.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rtcbench import analysis
from rtcbench.runner import RunResult

SEEDS = [1, 2, 3, *(pytest.param(s, marks=pytest.mark.slow) for s in range(4, 11))]
FIRST = ("first=2Mbps",)
CONTROLLERS = ("gcc", "gcc-draft", "nada", "scream")
DROP_S = 80.0  # the 3 → 1 Mbit/s section


def _section_metrics(r: RunResult) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    (flow,) = [f["id"] for f in r.summary["meta"]["flows"] if f["kind"] == "video"]
    out = []
    for p in r.summary["phases"]:
        start, end = round(p["start_s"] * 1e6), round(p["end_s"] * 1e6)
        out.append((p, analysis.flow_metrics(r.tables, r.timeseries, flow, start, end)))
    return out


def _utilisation(p: dict[str, Any], m: dict[str, Any]) -> float:
    return float(m["mean_recv_rate_bps"]) / float(p["capacity_bps"])


# Table 6.1's utilisation per section, widened by 0.1 on each side for run-to-run spread (its
# standard deviation of the rate was "around 0.2 Mbps").
GCC_UTILISATION = [(0.72, 0.95), (0.66, 0.90), (0.70, 0.93), (0.65, 0.94)]
# Section 4 starts wherever goog_cc is in section 3's 14-16 s back-off cycle at 1 Mbit/s: from
# the top of the cycle it turns multiplicative within ~5 s, from the bottom it climbs additively
# for ~20 s. Over seeds 1-10 at 100 ms its utilisation spans 0.63-0.84 (0.67-0.82 before losses
# were repaired; means 0.73 and 0.74), so a single run is held to a band 0.05 wider below, and
# the mean over seeds to Table 6.1's (`test_gcc_section_4_matches_table_6_1_over_seeds`).
SECTION_4_SINGLE_RUN = (0.60, 0.94)


SECTION_2_AT_100MS_LOW: dict[int, str] = {}
"""Seeds whose single run misses Table 6.1's band, kept visible as strict expected failures. Seed 5
did (section 2 at 100 ms: 0.658, below the band's 0.66) until `gcc`'s loss-based estimator took
Chromium 156's defaults (model revision 14): it reads 0.763 there since, and seeds 1-10 all
meet the bands."""


@pytest.mark.parametrize(
    "seed",
    [
        1,
        2,
        3,
        *(
            pytest.param(
                s,
                marks=[
                    pytest.mark.slow,
                    *(
                        [pytest.mark.xfail(strict=True, reason=SECTION_2_AT_100MS_LOW[s])]
                        if s in SECTION_2_AT_100MS_LOW
                        else []
                    ),
                ],
            )
            for s in range(4, 11)
        ),
    ],
)
def test_gcc_matches_table_6_1(simulate: Callable[..., tuple[RunResult, ...]], seed: int) -> None:
    runs = simulate("seed000-5.2.6", "gcc", seed, FIRST)
    assert len(runs) == 3
    by_delay = []
    for r in runs:
        sections = _section_metrics(r)
        utilisation = [_utilisation(p, m) for p, m in sections]
        bands = [*GCC_UTILISATION[:3], SECTION_4_SINGLE_RUN]
        for u, (lo, hi) in zip(utilisation, bands, strict=True):
            assert lo <= u <= hi, f"{r.summary['variant']}: {utilisation}"
        max_loss = [m["max_window_loss_ratio"] for _, m in sections]
        assert max_loss[2] >= 0.3, f"{r.summary['variant']}: the drop loses a burst ({max_loss})"
        assert max_loss[0] == max_loss[1] == max_loss[3] == 0.0, f"{r.summary['variant']}: {max_loss}"
        by_delay.append(utilisation)
    # "Similar results with different delays": per section within 0.15 across 25/50/100 ms (for
    # section 4, over seeds).
    for section in list(zip(*by_delay, strict=True))[:3]:
        assert max(section) - min(section) <= 0.15, by_delay


@pytest.mark.parametrize(
    "seeds",
    [
        pytest.param((1, 2, 3), id="seeds-1-3"),
        pytest.param(tuple(range(1, 11)), id="seeds-1-10", marks=pytest.mark.slow),
    ],
)
def test_gcc_section_4_matches_table_6_1_over_seeds(
    simulate: Callable[..., tuple[RunResult, ...]], seeds: tuple[int, ...]
) -> None:
    """Section 4's utilisation, averaged over seeds, in Table 6.1's band at each delay and
    similar across delays."""
    per_seed = []
    for seed in seeds:
        runs = simulate("seed000-5.2.6", "gcc", seed, FIRST)
        per_seed.append([_utilisation(*_section_metrics(r)[3]) for r in runs])
    means = [sum(col) / len(col) for col in zip(*per_seed, strict=True)]
    lo, hi = GCC_UTILISATION[3]
    assert all(lo <= u <= hi for u in means), means
    assert max(means) - min(means) <= 0.15, means


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("controller", CONTROLLERS)
def test_every_controller_tracks_each_section_and_loses_only_at_the_drop(
    simulate: Callable[..., tuple[RunResult, ...]], controller: str, seed: int
) -> None:
    """After the start-up section (GCC-02's loss-based 5 % per report makes gcc-draft's slow):
    at least half of each section's capacity, never more than all of it, and no loss in a
    window except in the section that starts with the drop to 1 Mbit/s."""
    for r in simulate("seed000-5.2.6", controller, seed, FIRST):
        for p, m in _section_metrics(r)[1:]:
            u = _utilisation(p, m)
            assert 0.5 <= u <= 1.0, f"{r.summary['variant']} from {p['start_s']} s: {u:.2f}"
            if p["start_s"] != DROP_S:
                assert m["max_window_loss_ratio"] == 0.0, f"{r.summary['variant']} from {p['start_s']} s"
