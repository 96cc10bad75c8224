"""Shared by the behaviour tests: which controllers a test runs in which tier, and how a known
miss is recorded."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest


def controllers(
    known_failures: dict[str, str] | None = None,
    *,
    default: Sequence[str] = ("gcc",),
    slow: Sequence[str] = ("gcc-draft", "nada", "scream"),
) -> list[Any]:
    """Parameters for a `controller` argument: `default` in the default tier, `slow` in the slow
    tier. `known_failures` maps a controller to the measured reason it misses the expectation;
    its test becomes a strict expected failure, which fails the day the controller passes."""
    known = known_failures or {}

    def param(cc: str, is_slow: bool) -> Any:
        marks = [pytest.mark.slow] if is_slow else []
        if cc in known:
            marks.append(pytest.mark.xfail(strict=True, reason=known[cc]))
        return pytest.param(cc, marks=marks)

    return [*(param(cc, False) for cc in default), *(param(cc, True) for cc in slow)]
