"""The analyses in experiments/ do what their READMEs claim, on runs where the answer is known."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

import rtcbench

EXPERIMENTS = Path(__file__).resolve().parent.parent / "experiments"


def _load(path: Path) -> ModuleType:
    name = f"experiments_{path.parent.name.replace('-', '_')}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("seed", [1, 4])
def test_the_link_capacity_replay_finds_the_ports_own_switch(tmp_path: Path, seed: int) -> None:
    """`gcc` is the `goog_cc` port of libwebrtc, so its switch from additive to multiplicative
    increase after `rfc8867-5.1`'s step is the rule the replay rebuilds. Seeds 1 and 4 switch at
    51.5 and 45.0 s (their last overuses before the step at 958 and 713 kbit/s), so a replay that
    predicted every run alike would miss one of them."""
    replay = _load(EXPERIMENTS / "gcc-additive-increase" / "replay.py")
    (result,) = rtcbench.run(
        "rfc8867-5.1", "gcc", seed, tmp_path, ("delay=50ms", "mechanism=link-rate"), figure=False
    )
    assert result.path is not None
    r = replay.replay(result.path, 40.0)
    assert 0.99 < r.send_ratio < 1.01
    assert len(r.samples) >= 3 and all(600 < s < 1000 for s in r.samples)  # a 1 Mbit/s link
    assert r.observed_s is not None and r.predicted_s is not None
    assert 40.0 < r.observed_s < 60.0
    assert abs(r.predicted_s - r.observed_s) <= 1.0
