"""examples/train_bwe.py runs end to end, briefly: a few iterations of the cross-entropy method on
20 s of RFC 8867 §5.1. The full run and its learning curve are in docs/env.md."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from tests.modules import load

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "train_bwe.py"


@pytest.fixture(scope="module")
def train_bwe() -> ModuleType:
    return load(EXAMPLE)


def test_a_short_training_runs_and_is_no_worse_than_random_actions(train_bwe: ModuleType) -> None:
    sets = [*train_bwe.SETS, "duration=20s"]
    theta, curve = train_bwe.train(iterations=3, population=6, seed=0, sets=sets, quiet=True)
    assert theta.shape == (5 * 8 + 1,) and np.isfinite(theta).all()
    assert [c.iteration for c in curve] == [0, 1, 2]
    assert all(c.elite_mean >= c.population_mean for c in curve)
    learnt, metrics = train_bwe.evaluate(theta, [1], sets)
    random = train_bwe.random_policy_return(1, sets)
    # Uniformly random rates overshoot the 1 Mbit/s bottleneck half the time; even a policy that
    # learnt only to hold back scores better.
    assert learnt > random
    assert 0 < metrics["utilization"] <= 1


def test_the_command_line_runs(train_bwe: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    # One iteration of a population of two: the whole script, evaluation included.
    train_bwe.main(["--iterations", "1", "--population", "2"])
    out = capsys.readouterr().out
    assert "iteration   0:" in out and "learnt policy" in out and "random actions" in out
