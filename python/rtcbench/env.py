"""A gymnasium environment for learning bandwidth estimation on any rtcbench scenario (docs/env.md).

Every step (60 ms by default, as OpenNetLab's gym), the agent sets the target rate of one call of
the scenario and observes what that call's feedback said during the step: receive rate, queuing
delay, jitter, loss and round-trip time. The simulator is the same deterministic one `rtcbench
run` uses, stepped from Python (`_core.Simulation`); the call's controller is
`rtcbench_cc::external::ExternalRate` ("external" in traces), every other call runs a built-in
controller. An episode is one run of the scenario and ends (``terminated``) at its end.

    >>> import gymnasium as gym
    >>> import rtcbench.env  # registers rtcbench/BandwidthEstimation-v0
    >>> env = gym.make("rtcbench/BandwidthEstimation-v0", scenario="seed001-staircase")  # doctest: +SKIP

gymnasium is an optional dependency: ``pip install 'rtcbench[gym]'``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

try:
    import gymnasium as gym
    from gymnasium import spaces
except ImportError as e:  # pragma: no cover (the dev extra installs it)
    raise ImportError("rtcbench.env needs gymnasium: pip install 'rtcbench[gym]' (or gymnasium>=0.29)") from e

from rtcbench import _core, learned
from rtcbench._malloc import fix_mmap_threshold
from rtcbench.runner import (
    MAX_MEMORY_ROWS,
    RunResult,
    TraceTooLarge,
    check_codecs,
    controllers,
    summarize_core,
)
from rtcbench.scenarios import Variant, resolve

__all__ = [
    "CHALLENGE_ENV_ID",
    "CHALLENGE_REWARDS",
    "ENV_ID",
    "FEATURES",
    "BandwidthEstimationEnv",
    "ChallengeEnv",
    "ChallengeQoeReward",
    "Interval",
    "QoeReward",
    "RewardFn",
]

ENV_ID = "rtcbench/BandwidthEstimation-v0"
"""The id `gymnasium.make` knows the environment by, once `rtcbench.env` is imported."""
CHALLENGE_ENV_ID = "rtcbench/ChallengeBandwidthEstimation-v0"
"""`ChallengeEnv`'s id."""

FEATURES: tuple[str, ...] = (
    "receive_rate",
    "send_rate",
    "target_rate",
    "qdelay_mean",
    "qdelay_max",
    "jitter",
    "loss",
    "rtt",
)
"""The observation's features per interval, in order; docs/env.md gives each one's unit."""

# Scales that bring each feature to O(1): rates by the top of the action's range, delays by
# 100 ms, jitter by 10 ms. Values are clipped to [0, _HIGH] so the space is bounded.
_DELAY_UNIT_US = 100_000.0
_JITTER_UNIT_US = 10_000.0
_RATE_HIGH = 10.0
_DELAY_HIGH = 50.0
_HIGH = np.array([_RATE_HIGH] * 3 + [_DELAY_HIGH] * 3 + [1.0, _DELAY_HIGH], dtype=np.float32)


@dataclass(slots=True)
class Interval:
    """What the agent's call learnt from its feedback in one step, in plain units; None where the
    step's feedback reported no received packet. `info["interval"]` of every step holds a new one.
    (Not frozen: a frozen dataclass takes 5 µs to build, a tenth of a step.)

    Rates count bytes on the wire (IP/UDP/RTP headers included), as every rate in rtcbench does.
    Delays are one-way delays above the smallest seen since the start of the episode (queuing
    delay); jitter is the mean absolute difference between consecutive one-way delays; the
    round-trip time is GoogCC's estimate from feedback timing (docs/env.md).
    """

    t_s: float
    """End of the step, seconds since the start of the run."""
    duration_s: float
    target_bps: float
    """The target rate the agent set for the step."""
    send_bps: float
    receive_bps: float
    loss_ratio: float
    """Packets reported lost over packets reported (0 if none were)."""
    packets_received: int
    packets_lost: int
    qdelay_mean_ms: float | None
    qdelay_min_ms: float | None
    qdelay_max_ms: float | None
    jitter_ms: float | None
    rtt_ms: float | None
    min_rate_bps: float
    """The bottom of the action's range, for normalising (constant over an episode)."""
    max_rate_bps: float
    """The top of the action's range."""


RewardFn = Callable[[Interval], float]
"""A reward: a number from one step's `Interval`."""


@dataclass(frozen=True)
class QoeReward:
    """The default reward, a quality-of-experience score of one step:

        r = rate · log(receive / min_rate) / log(max_rate / min_rate)
            − delay · queuing delay (mean over the step) / 100 ms
            − loss · loss ratio

    The rate term is 0 at the bottom of the action's range and 1 at its top (logarithmic, as
    perceived video quality grows with the rate; 0 below the bottom); 100 ms of queuing costs as
    much as the whole range of rates. A step without received packets has no delay term.
    """

    rate: float = 1.0
    delay: float = 1.0
    loss: float = 1.0

    def __call__(self, i: Interval) -> float:
        receive = max(i.receive_bps, i.min_rate_bps)
        r = self.rate * math.log(receive / i.min_rate_bps) / math.log(i.max_rate_bps / i.min_rate_bps)
        if i.qdelay_mean_ms is not None:
            r -= self.delay * i.qdelay_mean_ms / 100.0
        return r - self.loss * i.loss_ratio


REWARDS: dict[str, RewardFn] = {"qoe": QoeReward()}
"""Rewards by name."""


def _one_variant(scenario: str | Path, sets: Sequence[str]) -> Variant:
    variants = resolve(scenario, list(sets))
    if len(variants) != 1:
        names = ", ".join(v.variant for v in variants)
        raise ValueError(
            f"scenario {str(scenario)!r} has {len(variants)} variants ({names}); pick one with "
            f"sets, e.g. sets={[f'{kv}' for kv in variants[0].variant.split(',')]!r}"
        )
    return variants[0]


def _other_calls_controller(controller: str) -> str:
    known = [n for n, _ in controllers()]
    if controller not in known:
        raise ValueError(
            f"unknown controller {controller!r} for the other calls (allowed: {', '.join(known)})"
        )
    return controller


def _call_index(call: int) -> int:
    if not (isinstance(call, int) and call >= 0):
        raise ValueError(f"call is the index of one of the scenario's calls; got {call!r}")
    return call


F = TypeVar("F")


def _pick_reward(reward: str | F, named: Mapping[str, F], what: str) -> F:
    """A reward given by name (one of `named`) or as a function."""
    if isinstance(reward, str):
        if reward not in named:
            raise ValueError(f"unknown reward {reward!r} (allowed: {', '.join(named)}, or a function)")
        return named[reward]
    if callable(reward):
        return reward
    raise TypeError(f"reward is a name ({', '.join(named)}) or {what}; got {reward!r}")


def _ms(us: int | None) -> float | None:
    return None if us is None else us / 1e3


class _CallEnv(gym.Env[npt.NDArray[np.float32], npt.NDArray[np.float32]]):
    """What both environments share: one variant of a scenario in the simulator, one of its calls
    driven by the agent (`agent`: at its receiver, as a learned policy; else at its sender, its
    rate) and every other call by the built-in `controller`; an episode is one run, its trace
    kept for `episode_result` up to a bound."""

    # An instance attribute in gymnasium's Env, overridden per class as gymnasium's own do.
    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012

    def _setup(
        self,
        scenario: str | Path,
        sets: Sequence[str],
        controller: str,
        call: int,
        rate_range: tuple[float, float] | None,
        render_mode: str | None,
        keep_trace: bool,
        *,
        agent: bool,
    ) -> None:
        """Checks the arguments both environments take and sets what they share. The call's run
        is built once here so that a scenario the simulator cannot run, or a call it does not
        have, fails now, and so that its rates are known: its start rate, and (low, high) of
        `rate_range`, by default the call's media limits."""
        if render_mode is not None:
            raise ValueError(f"render_mode {render_mode!r}: this environment renders nothing (None)")
        self.render_mode = render_mode
        # The episode's trace is kept for `episode_result` up to `MAX_MEMORY_ROWS` rows (dropped
        # beyond, so a long episode stays in bounded memory); `keep_trace=False` keeps none.
        self._trace_bound = MAX_MEMORY_ROWS if keep_trace else 0
        self._trace_whole = True
        self._agent = agent
        self.variant: Variant = _one_variant(scenario, sets)
        self.controller = _other_calls_controller(controller)
        self.call = _call_index(call)
        check_codecs(self.variant)
        info = _core.Simulation(self.variant.core, controller, 0, external_call=call, agent=agent).call_info
        low, high = rate_range if rate_range is not None else (info.min_rate_bps, info.max_rate_bps)
        if not (math.isfinite(low) and math.isfinite(high) and 0 < low < high):
            raise ValueError(
                f"rate_range is (lowest, highest) bit/s, 0 < lowest < highest; got {rate_range!r}"
            )
        self.start_rate_bps = float(info.start_rate_bps)
        self.min_rate_bps, self.max_rate_bps = float(low), float(high)
        self._sim: _core.Simulation | None = None
        self.seed_used: int | None = None
        """The scenario seed of the current episode."""

    def _start_episode(self, seed: int | None) -> _core.Simulation:
        """A new episode's run: with `seed`, the run `rtcbench run --seed` makes; without, the
        next seed from the environment's generator."""
        super().reset(seed=seed)
        run_seed = seed if seed is not None else int(self.np_random.integers(0, 2**63))
        self.seed_used = run_seed
        fix_mmap_threshold()
        self._sim = _core.Simulation(
            self.variant.core, self.controller, run_seed, external_call=self.call, agent=self._agent
        )
        self._trace_whole = True
        return self._sim

    def _bound_trace(self, sim: _core.Simulation) -> None:
        """Drops the trace once it holds more rows than the environment keeps."""
        if sim.trace_rows > self._trace_bound:
            sim.drop_trace()
            self._trace_whole = False

    def episode_result(self) -> RunResult:
        """The episode as `rtcbench.run_variant` reports a run: summary metrics per flow and phase,
        trace tables and timeseries (the agent's call is named ``external``). If the episode has
        not ended, the rest of it runs at the last rate or estimate set. Ends the episode; `reset`
        starts another."""
        sim, self._sim = self._sim, None
        if sim is None:
            raise RuntimeError("call reset() first: there is no episode")
        if not self._trace_whole:
            raise TraceTooLarge(
                "the episode's trace was not kept (keep_trace=False, or more than "
                f"{MAX_MEMORY_ROWS:,} rows); run the scenario with rtcbench.run(..., out=...) to measure it"
            )
        raw = sim.finish()
        summary, tables, ts = summarize_core(
            self.variant, f"external+{self.controller}", self.seed_used or 0, raw
        )
        return RunResult(path=None, summary=summary, tables=tables, timeseries=ts)

    @property
    def meta(self) -> dict[str, Any]:
        """The current episode's links, calls and flows (`meta` of `summary.json`)."""
        if self._sim is None:
            raise RuntimeError("call reset() first: there is no episode")
        meta: dict[str, Any] = json.loads(self._sim.meta)
        return meta

    def close(self) -> None:
        self._sim = None


class BandwidthEstimationEnv(_CallEnv):
    """Bandwidth estimation on one call of an rtcbench scenario, as a gymnasium environment.

    Arguments:

    - ``scenario``: a built-in scenario id (`rtcbench list`) or a scenario file; with ``sets``
      (``--set`` overrides: ``"delay=50ms"``, ``"duration=30s"``) it must describe exactly one
      variant.
    - ``step_ms``: simulated time per step (60 ms).
    - ``history``: how many steps the observation covers (5).
    - ``reward``: ``"qoe"`` (`QoeReward` with its default weights), or any function of an `Interval`.
    - ``controller``: the built-in controller of every other call of the scenario (``"gcc"``).
    - ``call``: the index of the call the agent controls (0, the first).
    - ``rate_range``: (lowest, highest) target rate in bit/s that actions map to; the call's media
      limits by default (totals over its video and audio: 170 kbit/s to 1.52 Mbit/s for the RFC 8867
      defaults).

    The action is one number in [-1, 1] (clipped), mapped logarithmically onto ``rate_range``:
    ``rate = low · (high / low) ** ((action + 1) / 2)``; 0 is the geometric middle. The observation
    is ``history`` rows of `FEATURES` (oldest first), flattened; see docs/env.md for the units.

    ``reset(seed=n)`` runs the scenario with seed ``n``, the run `rtcbench run --seed n` makes; a
    reset without a seed draws the next one from the environment's generator, so one seeded reset
    makes a whole sequence of episodes reproducible. The first observation covers the first step,
    sent at the call's start rate.
    """

    def __init__(
        self,
        scenario: str | Path,
        *,
        sets: Sequence[str] = (),
        step_ms: float = 60.0,
        history: int = 5,
        reward: str | RewardFn = "qoe",
        controller: str = "gcc",
        call: int = 0,
        rate_range: tuple[float, float] | None = None,
        render_mode: str | None = None,
        keep_trace: bool = True,
    ) -> None:
        self._setup(scenario, sets, controller, call, rate_range, render_mode, keep_trace, agent=False)
        if not (isinstance(step_ms, int | float) and math.isfinite(step_ms) and step_ms >= 0.001):
            raise ValueError(f"step_ms is a duration of at least 0.001 ms; got {step_ms!r}")
        self.step_us = round(step_ms * 1000)
        if not (isinstance(history, int) and history >= 1):
            raise ValueError(f"history is a number of steps, at least 1; got {history!r}")
        self.reward_fn: RewardFn = _pick_reward(reward, REWARDS, "a function of an Interval")
        low, high = self.min_rate_bps, self.max_rate_bps
        self._log_low = math.log(low)
        self._log_span = math.log(high / low)
        self.history = history
        self.action_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        self.observation_space = spaces.Box(
            0.0, np.tile(_HIGH, history), shape=(history * len(FEATURES),), dtype=np.float32
        )
        self._obs = np.zeros((history, len(FEATURES)), dtype=np.float32)
        # Delay, jitter and RTT of the latest step that had them: a step without received packets
        # repeats them in the observation.
        self._last_delays = [0.0, 0.0, 0.0, 0.0]

    def action_to_rate(self, action: float) -> float:
        """The target rate (bit/s) an action in [-1, 1] sets (clipped to it)."""
        a = min(max(action, -1.0), 1.0)
        return math.exp(self._log_low + (a + 1.0) / 2.0 * self._log_span)

    def rate_to_action(self, rate_bps: float) -> float:
        """The action that sets a rate (bit/s), clipped to [-1, 1]: the inverse of `action_to_rate`."""
        a = 2.0 * (math.log(rate_bps) - self._log_low) / self._log_span - 1.0
        return min(max(a, -1.0), 1.0)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[npt.NDArray[np.float32], dict[str, Any]]:
        self._start_episode(seed)
        self._obs[:] = 0.0
        self._last_delays = [0.0, 0.0, 0.0, 0.0]
        obs, interval = self._advance()
        return obs, {"interval": interval, "seed": self.seed_used}

    def step(
        self, action: npt.NDArray[np.float32]
    ) -> tuple[npt.NDArray[np.float32], float, bool, bool, dict[str, Any]]:
        sim = self._sim
        if sim is None:
            raise RuntimeError("call reset() before step()")
        if sim.done:
            raise RuntimeError("the episode has ended (terminated); call reset() to start another")
        a = float(action[0]) if isinstance(action, np.ndarray | list | tuple) else float(action)
        if not math.isfinite(a):
            raise ValueError(f"an action is a number in [-1, 1]; got {action!r}")
        sim.set_target(self.action_to_rate(a))
        obs, interval = self._advance()
        return obs, self.reward_fn(interval), sim.done, False, {"interval": interval}

    def _advance(self) -> tuple[npt.NDArray[np.float32], Interval]:
        """Runs one step and returns the observation and what the step's feedback said."""
        sim = self._sim
        assert sim is not None
        sim.run_until(sim.now_us + self.step_us)
        self._bound_trace(sim)
        s = sim.take_interval()
        # Positional: keywords would double the cost of building it.
        i = Interval(
            s.end_us / 1e6,
            (s.end_us - s.start_us) / 1e6,
            float(s.target_bps),
            float(s.send_bps),
            float(s.receive_bps),
            s.loss_ratio,
            s.packets_received,
            s.packets_lost,
            _ms(s.qdelay_mean_us),
            _ms(s.qdelay_min_us),
            _ms(s.qdelay_max_us),
            _ms(s.jitter_us),
            _ms(s.rtt_us),
            self.min_rate_bps,
            self.max_rate_bps,
        )
        last = self._last_delays
        if s.qdelay_mean_us is not None:
            last[0] = s.qdelay_mean_us / _DELAY_UNIT_US
            last[1] = (s.qdelay_max_us or 0) / _DELAY_UNIT_US
        if s.jitter_us is not None:
            last[2] = s.jitter_us / _JITTER_UNIT_US
        if s.rtt_us is not None:
            last[3] = s.rtt_us / _DELAY_UNIT_US
        top = self.max_rate_bps
        # Every feature is at least 0 by construction; clipped to the space's top here, in
        # Python, which is five times faster than numpy on eight numbers.
        rates, delays = _RATE_HIGH, _DELAY_HIGH
        row = (
            min(s.receive_bps / top, rates),
            min(s.send_bps / top, rates),
            min(s.target_bps / top, rates),
            min(last[0], delays),
            min(last[1], delays),
            min(last[2], delays),
            s.loss_ratio,
            min(last[3], delays),
        )
        obs = self._obs
        obs[:-1] = obs[1:]
        obs[-1] = row
        return obs.flatten(), i


ChallengeRewardFn = Callable[[npt.NDArray[np.float32], float, float], float]
"""A reward of `ChallengeEnv`: a number from one observation (150 float32) and the (lowest,
highest) rate in bit/s of the reward's range."""


@dataclass(frozen=True)
class ChallengeQoeReward:
    """`QoeReward` read from the challenge's observation after a step: its most recent 60 ms
    interval at the receiver,

        r = rate · log(receiving rate / low) / log(high / low)
            − delay · queuing delay (ms) / 100 − loss · loss ratio

    with the receiving rate floored at `low` (the rate term is 0 to 1 over the call's media
    rates) and no delay term in an interval that received nothing.
    """

    rate: float = 1.0
    delay: float = 1.0
    loss: float = 1.0

    def __call__(self, obs: npt.NDArray[np.float32], low: float, high: float) -> float:
        receive = max(float(obs[_RECEIVING_RATE]), low)
        r = self.rate * math.log(receive / low) / math.log(high / low)
        if obs[_RECEIVED_PACKETS] > 0:
            r -= self.delay * float(obs[_QUEUING_DELAY]) / 100.0
        return r - self.loss * float(obs[_LOSS_RATIO])


_RECEIVING_RATE = learned.feature_index("receiving_rate_bps", long=False, i=0)
_RECEIVED_PACKETS = learned.feature_index("received_packets", long=False, i=0)
_QUEUING_DELAY = learned.feature_index("queuing_delay_ms", long=False, i=0)
_LOSS_RATIO = learned.feature_index("loss_ratio", long=False, i=0)

CHALLENGE_REWARDS: dict[str, ChallengeRewardFn] = {"qoe": ChallengeQoeReward()}
"""`ChallengeEnv`'s rewards by name."""


class ChallengeEnv(_CallEnv):
    """The MMSys 2024 bandwidth estimation challenge's task on one call of any rtcbench scenario,
    on the path `--cc onnx:MODEL` runs a model on (docs/env.md, "The challenge's task").

    Every 60 ms, on the run's grid after the call starts, the policy at the call's receiver is
    given the challenge's observation (150 float32, `rtcbench.learned.FEATURES`, computed by the
    receiver from the packets that arrived before the decision's instant) and returns an
    estimate in bit/s; the receiver sends it in a REMB and the sender follows it within the
    call's limits. So an agent that gives a model's estimates makes the run `rtcbench run --cc
    onnx:MODEL` makes, table for table (tests/test_env_challenge.py), and a policy trained here
    runs back through `--cc onnx:` unchanged.

    Arguments are `BandwidthEstimationEnv`'s (``scenario``, ``sets``, ``controller`` of the other
    calls, ``call``, ``keep_trace``), and:

    - ``reward``: ``"qoe"`` (`ChallengeQoeReward`) or a function of (observation, low, high).
    - ``rate_range``: the (low, high) bit/s the reward's rate term spans; the call's media limits
      by default.

    The action is the estimate, bit/s, as the challenge's `output[0, 0, 0]` (a finite number
    >= 0; the sender clamps what it follows to the call's limits). Wrap the environment to act
    on another scale (the training example acts on log(rate)). The observation after `reset` is
    the first decision's; each `step` takes that decision and runs to the next one (``info``:
    ``t_us``, its instant). The episode ends (``terminated``) when the next decision would fall
    after the run's end.
    """

    def __init__(
        self,
        scenario: str | Path,
        *,
        sets: Sequence[str] = (),
        reward: str | ChallengeRewardFn = "qoe",
        controller: str = "gcc",
        call: int = 0,
        rate_range: tuple[float, float] | None = None,
        render_mode: str | None = None,
        keep_trace: bool = True,
    ) -> None:
        self._setup(scenario, sets, controller, call, rate_range, render_mode, keep_trace, agent=True)
        self.reward_fn: ChallengeRewardFn = _pick_reward(
            reward, CHALLENGE_REWARDS, "a function of (observation, low, high)"
        )
        self.action_space = spaces.Box(0.0, np.inf, shape=(1,), dtype=np.float32)
        self.observation_space = spaces.Box(
            -np.inf, np.inf, shape=(learned.OBSERVATION_LEN,), dtype=np.float32
        )
        self._next_us = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[npt.NDArray[np.float32], dict[str, Any]]:
        self._start_episode(seed)
        obs, _ = self._to_next_decision()
        return obs, {"t_us": self._next_us, "seed": self.seed_used}

    def step(
        self, action: npt.NDArray[np.float32]
    ) -> tuple[npt.NDArray[np.float32], float, bool, bool, dict[str, Any]]:
        sim = self._sim
        if sim is None:
            raise RuntimeError("call reset() before step()")
        if sim.done or self._next_us > sim.end_us:
            raise RuntimeError("the episode has ended (terminated); call reset() to start another")
        a = float(action[0]) if isinstance(action, np.ndarray | list | tuple) else float(action)
        if not (math.isfinite(a) and a >= 0):
            raise ValueError(f"an action is an estimate in bit/s, a finite number >= 0; got {action!r}")
        sim.set_estimate(a)
        sim.run_until(self._next_us)
        obs, terminated = self._to_next_decision()
        reward = self.reward_fn(obs, self.min_rate_bps, self.max_rate_bps)
        return obs, reward, terminated, False, {"t_us": self._next_us}

    def _to_next_decision(self) -> tuple[npt.NDArray[np.float32], bool]:
        """Runs every event before the next decision and returns its observation, and whether
        it falls after the run's end (then the run has reached its end)."""
        sim = self._sim
        assert sim is not None
        at = sim.next_decision_us
        if at is None:
            raise RuntimeError(f"the call's policy stopped deciding: {sim.agent_failure}")
        terminated = at > sim.end_us
        sim.run_until(min(at - 1, sim.end_us))
        self._bound_trace(sim)
        nxt = sim.next_observation()
        assert nxt is not None and nxt[0] == at, "nothing decides between two steps"
        self._next_us, obs = nxt
        return obs, terminated


if ENV_ID not in gym.registry:
    gym.register(id=ENV_ID, entry_point="rtcbench.env:BandwidthEstimationEnv")
if CHALLENGE_ENV_ID not in gym.registry:
    gym.register(id=CHALLENGE_ENV_ID, entry_point="rtcbench.env:ChallengeEnv")
