"""The challenge's task as a gymnasium environment (`rtcbench.env.ChallengeEnv`, docs/env.md):
the agent decides where an ONNX policy does, at the call's receiver every 60 ms, from the same
observation, so an agent that gives a model's estimates makes the model's `--cc onnx:` run, table
for table; and a driver that misuses the stepped simulation is told in one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

import rtcbench
from rtcbench import _core, learned, onnx_policy
from rtcbench.scenarios import resolve

pytest.importorskip("onnx")
gym = pytest.importorskip("gymnasium")
import rtcbench.env as env_module  # noqa: E402

SETS = ["delay=50ms", "mechanism=link-rate", "duration=20s"]


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    w = onnx_policy.LstmWeights.random(16, seed=11)
    w.obs_scale = np.full(150, 1e-3, dtype=np.float32)
    w.head_b = np.array([0.5, 0.0], dtype=np.float32)
    return onnx_policy.save(onnx_policy.lstm_policy(w), tmp_path_factory.mktemp("agent") / "lstm16.onnx")


def test_an_agent_giving_a_models_estimates_makes_the_models_run(model_path: Path, tmp_path: Path) -> None:
    run = rtcbench.run("rfc8867-5.1", f"onnx:{model_path}", 4, tmp_path, SETS, figure=False)[0]

    env = gym.make(env_module.CHALLENGE_ENV_ID, scenario="rfc8867-5.1", sets=SETS)
    policy = _core.Policy(model_path.read_bytes(), "agent")
    obs, info = env.reset(seed=4)
    steps, rewards, done = [info["t_us"]], [], False
    while not done:
        assert obs.shape == (150,) and obs.dtype == np.float32
        estimate, _ = policy.step(obs)
        obs, reward, done, truncated, info = env.step(np.array([estimate], dtype=np.float32))
        assert not truncated
        steps.append(info["t_us"])
        rewards.append((reward, obs))
    result = env.unwrapped.episode_result()

    # The decisions fall on the run's 60 ms grid, to the first one past the end.
    assert steps[0] == 60_000 and np.all(np.diff(steps) == 60_000) and steps[-1] > 20_000_000 >= steps[-2]
    mine, theirs = result.tables, run.tables
    assert mine.packets.equals(theirs.packets), "the same packets, sent and received at the same instants"
    estimate = learned.POLICY_ESTIMATE
    ours = mine.controller.filter(pl.col(estimate).is_not_null()).select("t_us", estimate)
    model = theirs.controller.filter(pl.col(estimate).is_not_null()).select("t_us", estimate)
    assert ours.equals(model)
    decided = mine.controller[learned.DECIDED_AT].drop_nulls().unique()
    assert len(decided) == len(steps) - 1, "one decision per step"
    assert result.summary["meta"]["calls"][0]["controller"] == "external"
    # The reward reads the latest 60 ms at the receiver: a rate term in [0, 1] over the call's
    # media rates (170 - 1520 kbit/s), minus queuing delay per 100 ms, minus the loss ratio.
    f = {name: learned.feature_index(name, long=False, i=0) for name in learned.FEATURES}
    for reward, o32 in rewards:
        o = o32.astype(np.float64)
        rate = np.log(max(o[f["receiving_rate_bps"]], 170e3) / 170e3) / np.log(1520e3 / 170e3)
        delay = o[f["queuing_delay_ms"]] / 100 if o[f["received_packets"]] > 0 else 0.0
        assert reward == pytest.approx(rate - delay - o[f["loss_ratio"]], rel=1e-6, abs=1e-9)
    # This untrained policy overshoots the capacity: the queue it builds costs more than its rate.
    assert np.mean([r for r, _ in rewards]) < 0 < max(r for r, _ in rewards) <= 1


def test_the_observation_is_the_one_the_exporter_computes(model_path: Path) -> None:
    """The observations the agent was given are what `learned.observations` reads from the
    episode's tables at the same steps."""
    env = env_module.ChallengeEnv("rfc8867-5.1", sets=[*SETS[:2], "duration=6s"])
    obs, info = env.reset(seed=1)
    given, steps = [obs], [info["t_us"]]
    done = False
    while not done:
        obs, _, done, _, info = env.step(np.array([600e3], dtype=np.float32))
        if not done:
            given.append(obs)
            steps.append(info["t_us"])
    tables = env.episode_result().tables
    exported_steps, exported = learned.observations(tables, 0)
    np.testing.assert_array_equal(exported_steps, steps)
    np.testing.assert_array_equal(exported, np.array(given))


def test_the_agent_is_checked_where_a_model_is() -> None:
    env = env_module.ChallengeEnv("rfc8867-5.1", sets=[*SETS[:2], "duration=2s"])
    with pytest.raises(RuntimeError, match=r"call reset\(\) before step"):
        env.step(np.array([1e6], dtype=np.float32))
    env.reset(seed=0)
    for bad in (np.nan, -1.0, np.inf):
        with pytest.raises(ValueError, match="an estimate in bit/s, a finite number >= 0"):
            env.step(np.array([bad], dtype=np.float32))
    done = False
    while not done:
        _, _, done, _, _ = env.step(np.array([1e6], dtype=np.float32))
    with pytest.raises(RuntimeError, match="the episode has ended"):
        env.step(np.array([1e6], dtype=np.float32))
    with pytest.raises(ValueError, match="rate_range"):
        env_module.ChallengeEnv("rfc8867-5.1", sets=[*SETS[:2], "duration=2s"], rate_range=(2e6, 1e6))
    with pytest.raises(ValueError, match="unknown reward"):
        env_module.ChallengeEnv("rfc8867-5.1", sets=[*SETS[:2], "duration=2s"], reward="utility")


def test_a_stepped_simulation_with_an_agent_names_what_went_wrong() -> None:
    (variant,) = resolve("rfc8867-5.1", [*SETS[:2], "duration=2s"])
    sim = _core.Simulation(variant.core, "gcc", 0, agent=True)
    with pytest.raises(RuntimeError, match="use set_estimate"):
        sim.set_target(1e6)
    with pytest.raises(ValueError, match="at least 0"):
        sim.set_estimate(-5.0)
    sim.run_until(1_000_000)  # through decisions nobody set an estimate for
    assert sim.agent_failure is not None
    assert "the decision at 0.060 s failed: no estimate was set" in sim.agent_failure
    assert sim.next_observation() is None
    plain = _core.Simulation(variant.core, "gcc", 0)
    with pytest.raises(RuntimeError, match="agent=True"):
        plain.set_estimate(1e6)
