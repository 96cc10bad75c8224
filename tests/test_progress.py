"""A suite's progress line says how long the rest will take from what each case costs: a mixed
suite's time left does not jump tenfold when its first Wi-Fi case comes up (`suite._Cost`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtcbench import runner
from rtcbench.scenarios import resolve
from rtcbench.suite import _Cost, _Job


def _plan(tmp_path: Path) -> list[_Job]:
    wired = resolve("rfc8867-5.1", ["delay=50ms", "mechanism=link-rate"])[0]
    wifi = resolve("seed000-5.3.8", ["pc3=A", "pc4=A"])[0]
    cc = runner.resolve_controller("gcc")
    return [_Job.plan(v, "gcc", cc, seed, tmp_path, None) for v in (wired, wifi) for seed in (1, 2, 3)]


def test_a_case_costs_what_its_finished_runs_took(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    cost = _Cost(plan)
    # Before anything ran: the priors, a BSS eight times as costly per simulated second.
    assert cost.of(3) / cost.of(0) == pytest.approx(8.0 * 240 / 100)
    # The machine is twice as slow as the priors say, and the wired runs at 2 500x: the wired
    # case costs what its run took, the Wi-Fi case its prior times the machine's factor.
    cost.learn(0, {"wall_s": 0.04, "simulated_s": 100.0})
    assert cost.of(1) == pytest.approx(0.04)
    assert cost.of(3) == pytest.approx(240 / 500 * 1.6)
    cost.learn(3, {"wall_s": 0.5, "simulated_s": 240.0})
    assert cost.of(4) == pytest.approx(0.5)
    # A summary without timings (a run read back from an older rtcbench) teaches nothing.
    cost.learn(5, {"wall_s": None, "simulated_s": 240.0})
    assert cost.of(5) == pytest.approx(0.5)


def test_the_time_left_holds_when_the_slow_case_comes_up(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    took = [0.04, 0.04, 0.04, 0.5, 0.5, 0.5]  # a wired call at 2 500x, a BSS at 480x
    cost = _Cost(plan)
    left = []
    elapsed = 0.0
    for i, t in enumerate(took):
        elapsed += t
        cost.learn(i, {"wall_s": t, "simulated_s": cost.sim[i]})
        work = [cost.of(k) for k in range(len(plan))]
        done = sum(work[: i + 1])
        # What a progress bar shows: the rate so far applied to the work left.
        left.append(elapsed / done * (sum(work) - done))
    # Against the actual time left at each step, within a factor of two from the first run on (by
    # simulated seconds alone, the first estimate was 0.37 s of 1.58: four times too short).
    actual = [sum(took[i + 1 :]) for i in range(len(took))]
    for guess, real in zip(left[:-1], actual[:-1], strict=True):
        assert real / 2 <= guess <= real * 2, (left, actual)
