"""The learning environment (rtcbench.env, docs/env.md): gymnasium's checker, determinism per seed,
vectorised stepping, what the agent observes against what a built-in run measures, and errors."""

from __future__ import annotations

import functools
import math
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import rtcbench
from rtcbench import _core
from rtcbench.env import ENV_ID, FEATURES, BandwidthEstimationEnv, Interval, QoeReward

ONE_VARIANT = ["delay=50ms", "mechanism=link-rate"]
SHORT = [*ONE_VARIANT, "duration=5s"]
F = len(FEATURES)


def episode(
    env: BandwidthEstimationEnv, seed: int, actions: np.ndarray
) -> tuple[list[np.ndarray], list[float], list[Interval]]:
    """Observations, rewards and intervals of one episode with the given actions (cycled)."""
    obs, info = env.reset(seed=seed)
    observations, rewards, intervals = [obs], [], [info["interval"]]
    done, k = False, 0
    while not done:
        obs, reward, done, truncated, info = env.step(actions[k % len(actions)])
        assert not truncated
        observations.append(obs)
        rewards.append(reward)
        intervals.append(info["interval"])
        k += 1
    return observations, rewards, intervals


def random_actions(seed: int, n: int = 500) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, size=(n, 1)).astype(np.float32)


def test_gymnasium_s_checker_passes() -> None:
    env = gym.make(ENV_ID, scenario="rfc8867-5.1", sets=SHORT)
    check_env(env.unwrapped)
    assert env.spec is not None and env.spec.id == ENV_ID


def test_spaces_and_the_observation_layout() -> None:
    env = BandwidthEstimationEnv("rfc8867-5.1", sets=SHORT, history=4)
    assert env.action_space.shape == (1,) and env.observation_space.shape == (4 * F,)
    obs, info = env.reset(seed=3)
    for _ in range(30):
        obs, _, _, _, info = env.step(np.array([0.5], dtype=np.float32))
        assert obs in env.observation_space
    rows = obs.reshape(4, F)
    i: Interval = info["interval"]
    newest = dict(zip(FEATURES, rows[-1].tolist(), strict=True))
    assert newest["receive_rate"] == pytest.approx(i.receive_bps / env.max_rate_bps, rel=1e-6)
    assert newest["send_rate"] == pytest.approx(i.send_bps / env.max_rate_bps, rel=1e-6)
    assert newest["target_rate"] == pytest.approx(env.action_to_rate(0.5) / env.max_rate_bps, rel=1e-5)
    assert i.qdelay_mean_ms is not None and i.rtt_ms is not None and i.jitter_ms is not None
    assert newest["qdelay_mean"] == pytest.approx(i.qdelay_mean_ms / 100, rel=1e-5)
    assert newest["jitter"] == pytest.approx(i.jitter_ms / 10, rel=1e-5)
    assert newest["rtt"] == pytest.approx(i.rtt_ms / 100, rel=1e-5)
    assert newest["loss"] == pytest.approx(i.loss_ratio)
    # Oldest first: the row before the newest is the previous step's.
    assert not np.array_equal(rows[-2], rows[-1])
    # 50 ms each way and a near-empty queue at 600 kbit/s: an RTT a little over 100 ms.
    assert 100 <= i.rtt_ms < 160


def test_the_action_maps_logarithmically_onto_the_call_s_rates() -> None:
    env = BandwidthEstimationEnv("rfc8867-5.1", sets=SHORT)
    # RFC 8867 §4.3 defaults: video 150 kbit/s - 1.5 Mbit/s, audio 20 kbit/s.
    assert (env.min_rate_bps, env.max_rate_bps) == (170_000, 1_520_000)
    assert env.action_to_rate(-1) == pytest.approx(170_000)
    assert env.action_to_rate(1) == pytest.approx(1_520_000)
    assert env.action_to_rate(0) == pytest.approx(math.sqrt(170_000 * 1_520_000))
    assert env.action_to_rate(7) == pytest.approx(1_520_000), "clipped"
    assert env.rate_to_action(env.action_to_rate(0.3)) == pytest.approx(0.3)
    wide = BandwidthEstimationEnv("rfc8867-5.1", sets=SHORT, rate_range=(50_000, 5_000_000))
    assert wide.action_to_rate(0) == pytest.approx(500_000)


def test_same_seed_same_actions_give_the_same_episode() -> None:
    actions = random_actions(7)
    a = episode(BandwidthEstimationEnv("rfc8867-5.1", sets=SHORT), 11, actions)
    b = episode(BandwidthEstimationEnv("rfc8867-5.1", sets=SHORT), 11, actions)
    assert len(a[0]) == len(b[0]) == math.ceil(5000 / 60)
    assert all(np.array_equal(x, y) for x, y in zip(a[0], b[0], strict=True))
    assert a[1] == b[1]
    assert a[2] == b[2]
    # Reused: a second episode of the same environment repeats the first.
    env = BandwidthEstimationEnv("rfc8867-5.1", sets=SHORT)
    first, again = episode(env, 11, actions), episode(env, 11, actions)
    assert first[1] == again[1] == a[1]


def test_other_seeds_give_other_episodes() -> None:
    # The encoder's frame sizes and the links' jitter are drawn from the seed.
    actions = np.zeros((1, 1), dtype=np.float32)
    env = BandwidthEstimationEnv("rfc8867-5.1", sets=SHORT)
    one, two = episode(env, 1, actions), episode(env, 2, actions)
    assert one[1] != two[1]
    assert [i.receive_bps for i in one[2]] != [i.receive_bps for i in two[2]]


def test_unseeded_resets_follow_the_first_seed() -> None:
    def seeds(env: BandwidthEstimationEnv) -> list[int | None]:
        env.reset(seed=5)
        used = [env.seed_used]
        for _ in range(3):
            env.reset()
            used.append(env.seed_used)
        return used

    a = seeds(BandwidthEstimationEnv("rfc8867-5.1", sets=SHORT))
    b = seeds(BandwidthEstimationEnv("rfc8867-5.1", sets=SHORT))
    assert a == b and a[0] == 5 and len(set(a)) == 4


def test_a_constant_action_is_the_fixed_controller_at_that_rate() -> None:
    # `fixed` sends at the call's start rate: 380 kbit/s of video + 20 kbit/s of audio. The agent
    # sends the first 60 ms at the scenario's start rate (170 kbit/s), then at 400 kbit/s.
    sets = [*ONE_VARIANT, "calls.0.video.start=380kbps"]
    env = BandwidthEstimationEnv("rfc8867-5.1", sets=sets)
    action = np.array([env.rate_to_action(400_000)], dtype=np.float32)
    assert env.action_to_rate(float(action[0])) == pytest.approx(400_000, rel=1e-6)
    *_, intervals = episode(env, 1, action[None, :])
    agent = env.episode_result().summary["flows"][0]
    fixed = rtcbench.run_variant(env.variant, "fixed", 1, figure=False).summary["flows"][0]
    for key in ("mean_send_rate_bps", "mean_recv_rate_bps", "utilization"):
        assert agent[key] == pytest.approx(fixed[key], rel=0.01), key
    assert agent["qdelay_p95_ms"] == pytest.approx(fixed["qdelay_p95_ms"], abs=3.0)
    assert agent["loss_ratio"] == pytest.approx(fixed["loss_ratio"], abs=0.002)
    # What the agent observed agrees with what the trace measured: the mean receive rate over
    # the call (0-99 s) against the video and audio flows' goodput.
    seen = np.mean([i.receive_bps for i in intervals if 1 <= i.t_s <= 99])
    assert seen == pytest.approx(400_000, rel=0.03)


def test_the_episode_result_is_a_run_of_the_variant() -> None:
    env = BandwidthEstimationEnv("rfc8867-5.4", controller="nada")
    env.reset(seed=2)
    for _ in range(10):
        env.step(np.array([0.0], dtype=np.float32))
    calls = [c["controller"] for c in env.meta["calls"]]
    assert calls == ["external", "nada", "nada"]
    result = env.episode_result()
    assert result.summary["controller"] == "external+nada" and result.summary["seed"] == 2
    assert result.summary["simulated_s"] == 120
    assert len(result.summary["flows"]) >= 6
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.array([0.0], dtype=np.float32))


def test_the_default_reward_is_the_documented_qoe() -> None:
    env = BandwidthEstimationEnv("rfc8867-5.1", sets=SHORT)
    env.reset(seed=1)
    qoe = QoeReward()
    checked = 0
    for k in range(80):
        _, reward, _, _, info = env.step(np.array([1.0 if k < 40 else -1.0], dtype=np.float32))
        i: Interval = info["interval"]
        expected = math.log(max(i.receive_bps, 170_000) / 170_000) / math.log(1_520_000 / 170_000)
        expected -= (i.qdelay_mean_ms or 0.0) / 100 + i.loss_ratio
        assert reward == pytest.approx(expected) == qoe(i)
        checked += i.qdelay_mean_ms is not None
    assert checked > 60
    heavy = QoeReward(rate=0.0, delay=0.0, loss=1.0)
    custom = BandwidthEstimationEnv("rfc8867-5.1", sets=SHORT, reward=heavy)
    custom.reset(seed=1)
    _, reward, _, _, info = custom.step(np.array([0.0], dtype=np.float32))
    assert reward == -info["interval"].loss_ratio
    by_function = BandwidthEstimationEnv("rfc8867-5.1", sets=SHORT, reward=lambda i: i.send_bps / 1e6)
    by_function.reset(seed=1)
    _, reward, _, _, info = by_function.step(np.array([0.0], dtype=np.float32))
    assert reward == info["interval"].send_bps / 1e6 > 0


def test_overshooting_the_capacity_is_seen_and_costs() -> None:
    # The top of the range (1.52 Mbit/s) into 1 Mbit/s: the queue fills, packets are lost.
    env = BandwidthEstimationEnv("rfc8867-5.1", sets=[*ONE_VARIANT, "duration=10s"])
    top, _, low = (episode(env, 1, np.array([[a]], dtype=np.float32)) for a in (1.0, 0.0, -0.6))
    late = slice(100, None)
    assert sum(top[1][late]) < sum(low[1][late])
    assert max(i.qdelay_mean_ms or 0.0 for i in top[2]) > 250
    assert sum(i.packets_lost for i in top[2]) > 0
    assert sum(i.packets_lost for i in low[2]) == 0


def test_a_sync_vector_env_steps_and_resets_its_environments() -> None:
    n = 3
    envs = gym.vector.SyncVectorEnv(
        [functools.partial(BandwidthEstimationEnv, "rfc8867-5.1", sets=[*ONE_VARIANT, "duration=1s"])] * n
    )
    obs, _ = envs.reset(seed=[1, 2, 3])
    assert obs.shape == (n, 5 * F)
    steps = math.ceil(1000 / 60) - 1  # the reset ran the first step
    ended = []
    for k in range(steps + 3):
        obs, rewards, terminated, truncated, _ = envs.step(np.full((n, 1), 0.2, dtype=np.float32))
        assert obs.shape == (n, 5 * F) and rewards.shape == (n,) and not truncated.any()
        if terminated.any():
            ended.append(k)
            assert terminated.all()
    assert ended == [steps - 1], "every environment ends with the scenario, then starts again"
    envs.close()


def test_an_async_vector_env_runs_the_same_episodes_in_subprocesses() -> None:
    make = functools.partial(BandwidthEstimationEnv, "rfc8867-5.1", sets=[*ONE_VARIANT, "duration=2s"])
    actions = random_actions(3, 20).reshape(10, 2, 1)
    results = []
    for vector in (
        gym.vector.SyncVectorEnv([make, make]),
        gym.vector.AsyncVectorEnv([make, make], context="spawn"),
    ):
        obs, _ = vector.reset(seed=[4, 5])
        trajectory = [obs]
        for a in actions:
            obs, rewards, *_ = vector.step(a)
            trajectory += [obs, rewards]
        vector.close()
        results.append(trajectory)
    sync, subprocesses = results
    assert all(np.array_equal(x, y) for x, y in zip(sync, subprocesses, strict=True))
    assert not np.array_equal(sync[0][0], sync[0][1]), "two seeds, two episodes"


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (
            {"scenario": "rfc8867-5.1"},
            ValueError,
            r"has 4 variants .*sets=\['delay=50ms', 'mechanism=link-rate'\]",
        ),
        ({"scenario": "no-such-scenario"}, rtcbench.ScenarioNotFound, "no built-in scenario"),
        ({"step_ms": 0}, ValueError, "step_ms"),
        ({"history": 0}, ValueError, "history"),
        ({"reward": "fun"}, ValueError, "unknown reward 'fun'"),
        ({"reward": 3}, TypeError, "reward is a name"),
        ({"controller": "bbr"}, ValueError, "unknown controller 'bbr'"),
        ({"call": 1}, rtcbench.ScenarioError, "call 1, but the scenario has 1 call"),
        ({"call": -1}, ValueError, "call is the index"),
        ({"rate_range": (2e6, 1e6)}, ValueError, "rate_range"),
        ({"render_mode": "human"}, ValueError, "renders nothing"),
    ],
)
def test_bad_arguments_say_what_is_wrong(
    kwargs: dict[str, object], error: type[Exception], message: str
) -> None:
    args: dict[str, object] = {"scenario": "rfc8867-5.1", "sets": SHORT, **kwargs}
    if "scenario" in kwargs:
        args["sets"] = []
    with pytest.raises(error, match=message):
        BandwidthEstimationEnv(**args)  # type: ignore[arg-type]


def test_misuse_in_an_episode_says_what_to_do() -> None:
    env = BandwidthEstimationEnv("rfc8867-5.1", sets=[*ONE_VARIANT, "duration=1s"])
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(1, dtype=np.float32))
    env.reset(seed=1)
    with pytest.raises(ValueError, match="an action is a number"):
        env.step(np.array([np.nan], dtype=np.float32))
    done = False
    while not done:
        _, _, done, _, _ = env.step(np.zeros(1, dtype=np.float32))
    with pytest.raises(RuntimeError, match="episode has ended"):
        env.step(np.zeros(1, dtype=np.float32))


def test_a_scenario_file_works_as_a_built_in_id(tmp_path: Path) -> None:
    text = rtcbench.resolve("seed001-staircase")[0].toml
    path = tmp_path / "staircase.toml"
    path.write_text(text, encoding="utf-8")
    env = gym.make(ENV_ID, scenario=path, sets=["duration=3s"])
    obs, _ = env.reset(seed=1)
    assert obs.shape == (5 * F,)
    env.close()


def test_the_stepped_simulation_refuses_what_it_cannot_do() -> None:
    (variant,) = rtcbench.resolve("rfc8867-5.1", SHORT)
    with pytest.raises(ValueError, match='unknown controller "bbr"'):
        _core.Simulation(variant.toml, "bbr", 1)
    sim = _core.Simulation(variant.toml, "gcc", 1)
    for bad in (0.0, -5.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="a target rate is a finite number"):
            sim.set_target(bad)
    sim.run_until(2_000_000)
    assert (sim.now_us, sim.done, sim.external_call) == (2_000_000, False, 0)
    raw = sim.finish()
    assert raw["events"] > 0 and '"controller":"external"' in raw["meta"]
    with pytest.raises(RuntimeError, match="finished"):
        sim.run_until(3_000_000)
    with pytest.raises(RuntimeError, match="finished"):
        sim.finish()


def test_an_episode_without_its_trace_keeps_memory_bounded() -> None:
    env = BandwidthEstimationEnv("rfc8867-5.1", sets=[*ONE_VARIANT, "duration=20s"], keep_trace=False)
    env.reset(seed=1)
    held = []
    terminated = False
    while not terminated:
        _, _, terminated, _, _ = env.step(np.array([0.0], dtype=np.float32))
        assert env._sim is not None
        held.append(env._sim.trace_rows)
    # Rows are dropped each step: no more than a few frames waiting for their packets.
    assert max(held) < 100, max(held)
    with pytest.raises(rtcbench.runner.TraceTooLarge, match="keep_trace=False"):
        env.episode_result()
    # By default the whole episode is kept and measured.
    kept = BandwidthEstimationEnv("rfc8867-5.1", sets=[*ONE_VARIANT, "duration=5s"])
    kept.reset(seed=1)
    assert kept.episode_result().summary["simulated_s"] == 5.0
