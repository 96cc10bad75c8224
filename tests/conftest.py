"""Shared fixtures: runs are cached per session, since a scenario run is a pure function of
(scenario, controller, seed) and several tests look at the same one."""

from __future__ import annotations

import functools
from collections.abc import Callable

import pytest

import rtcbench
from rtcbench.runner import RunResult


@functools.cache
def _run(scenario: str, controller: str, seed: int, sets: tuple[str, ...]) -> tuple[RunResult, ...]:
    return tuple(rtcbench.run(scenario, controller, seed, sets=sets, figure=False))


@pytest.fixture(scope="session")
def simulate() -> Callable[..., tuple[RunResult, ...]]:
    """`simulate(scenario, controller="gcc", seed=1, sets=())`: every variant's result, cached."""

    def go(
        scenario: str, controller: str = "gcc", seed: int = 1, sets: tuple[str, ...] = ()
    ) -> tuple[RunResult, ...]:
        return _run(scenario, controller, seed, tuple(sets))

    return go
