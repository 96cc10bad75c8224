"""Type stubs of the native core (crates/rtcbench-py)."""

from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

Ecn = Literal["not-ect", "ect1", "ect0", "ce"]

class ScenarioError(ValueError):
    """A scenario file or override that cannot be used; the message names file, field and line."""

class ControllerError(RuntimeError):
    """A Python controller raised (its exception is `__cause__`) or returned a value the simulator
    cannot use; the message names the controller, its call and the method."""

class EventLogError(ValueError):
    """An RTC event log that cannot be read; the message names the event and its byte offset."""

def read_event_log(data: bytes) -> dict[str, Any]:
    """The tables of an RTC event log (`rtcbench_eventlog`): `{table: {column: list}}` for
    `rtp`, `rtcp`, `delay_based`, `loss_based`, `targets`, `probe_clusters`, `probe_results`,
    `alr`, `routes` and `streams`, plus `start` ((log ms, UTC ms, format version) or None),
    `end_ms` and `skipped` ([(field number, count)] of events not read)."""

class ProbeInfo:
    """Which probe cluster a packet belongs to (libwebrtc's `PacedPacketInfo`)."""

    @property
    def cluster_id(self) -> int: ...
    @property
    def min_probes(self) -> int: ...
    @property
    def min_bytes(self) -> int: ...
    def __init__(self, *, cluster_id: int, min_probes: int, min_bytes: int) -> None: ...

class SentPacket:
    """A packet the sender put on the wire."""

    @property
    def seq(self) -> int:
        """Transport-wide sequence number, unwrapped (unique and increasing per sender)."""
    @property
    def size(self) -> int:
        """Bytes on the wire (IPv4, UDP, RTP header with extensions, payload)."""
    @property
    def sent_us(self) -> int: ...
    @property
    def is_audio(self) -> bool: ...
    @property
    def probe(self) -> ProbeInfo | None: ...
    @property
    def data_in_flight(self) -> int:
        """Bytes sent and not yet acknowledged or declared lost, this packet included."""
    def __init__(
        self,
        *,
        seq: int,
        size: int,
        sent_us: int,
        is_audio: bool = False,
        probe: ProbeInfo | None = None,
        data_in_flight: int = 0,
    ) -> None: ...

class PacketResult:
    """What feedback says about one sent packet."""

    @property
    def seq(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def sent_us(self) -> int: ...
    @property
    def arrival_us(self) -> int | None:
        """Arrival on the receiver's clock mapped to the sender's timeline (only differences between
        arrivals are meaningful); None if the feedback reports the packet as not received."""
    @property
    def received(self) -> bool: ...
    @property
    def ecn(self) -> Ecn:
        """The ECN field as the packet arrived (RFC 8888 feedback only; "not-ect" otherwise)."""
    @property
    def is_audio(self) -> bool: ...
    @property
    def probe(self) -> ProbeInfo | None: ...
    def __init__(
        self,
        *,
        seq: int,
        size: int,
        sent_us: int,
        arrival_us: int | None,
        ecn: Ecn = "not-ect",
        is_audio: bool = False,
        probe: ProbeInfo | None = None,
    ) -> None: ...

class LossReport:
    """Loss over one receiver-report interval (RFC 3550 §6.4.1), over the sender's streams."""

    @property
    def fraction_lost(self) -> float: ...
    @property
    def packets_lost_delta(self) -> int: ...
    @property
    def packets_received_delta(self) -> int: ...
    def __init__(
        self, *, fraction_lost: float, packets_lost_delta: int, packets_received_delta: int
    ) -> None: ...

class FeedbackReport:
    """One parsed feedback message: per-packet results, receiver-report loss and RTT, or REMB."""

    @property
    def packets(self) -> tuple[PacketResult, ...]:
        """Per-packet results (transport-wide feedback or RFC 8888), in sequence order."""
    @property
    def data_in_flight(self) -> int:
        """Bytes sent and not yet acknowledged or declared lost, after this feedback."""
    @property
    def loss(self) -> LossReport | None: ...
    @property
    def rtt_us(self) -> int | None:
        """Round-trip time from a receiver report's LSR/DLSR."""
    @property
    def remb_bps(self) -> int | None: ...
    def __init__(
        self,
        *,
        packets: Sequence[PacketResult] = (),
        data_in_flight: int = 0,
        loss: LossReport | None = None,
        rtt_us: int | None = None,
        remb_bps: int | None = None,
    ) -> None: ...

class CallInfo:
    """A controller's call, as `Controller.on_start` learns it."""

    @property
    def call(self) -> int:
        """The call's index in the scenario (`meta.calls`)."""
    @property
    def start_us(self) -> int: ...
    @property
    def min_rate_bps(self) -> int:
        """Rate limits and start rate: totals over the call's streams (video and audio)."""
    @property
    def max_rate_bps(self) -> int: ...
    @property
    def start_rate_bps(self) -> int: ...
    @property
    def priority(self) -> float: ...
    @property
    def seed(self) -> int:
        """A seed for the controller's random draws, derived from the run's seed and the call."""
    def __init__(
        self,
        *,
        call: int = 0,
        start_us: int = 0,
        min_rate_bps: int,
        max_rate_bps: int,
        start_rate_bps: int,
        priority: float = 1.0,
        seed: int = 0,
    ) -> None: ...

def version() -> str: ...
def network_plan(resolved: Resolved | str, seed: int) -> str: ...
def run_meta(resolved: Resolved | str, controller: str, seed: int) -> str: ...
def trace_codes() -> dict[str, list[str]]: ...
def trace_schema() -> dict[str, list[tuple[str, str, str, str]]]: ...

MAX_SCENARIO_BYTES: int

def scenario_too_large(size: int) -> str: ...
def duration_s(text: str) -> float:
    """A duration as a scenario writes it (`"50ms"`), in seconds (the loader's parser)."""
    ...

def rate_bps(text: str) -> int:
    """A rate as a scenario writes it (`"2Mbps"`), in bit/s (the loader's parser)."""
    ...

def observations(
    arrival_us: np.ndarray,
    sent_us: np.ndarray,
    size: np.ndarray,
    stream: np.ndarray,
    seq: np.ndarray,
    class_code: np.ndarray,
    steps_us: np.ndarray,
) -> np.ndarray:
    """Learned estimators' observations (float32, one row of 150 per step) of the packets a
    receiver got (`rtcbench_cc::learned::observation`)."""

class Policy:
    """A learned policy in ONNX (`rtcbench_onnx`), loaded from its bytes; `ValueError` (one line)
    for a model without the challenge's interface (docs/controllers/onnx.md)."""

    def __init__(self, data: bytes, name: str) -> None: ...
    @property
    def name(self) -> str: ...
    @property
    def hidden_size(self) -> int: ...
    @property
    def has_cell_state(self) -> bool: ...
    @property
    def sha256(self) -> str: ...
    def state(self) -> list[list[float]]: ...
    def reset(self) -> None: ...
    def step(self, obs: np.ndarray) -> tuple[float, float | None]: ...
    def run(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...

def cross_plan(resolved: Resolved | str) -> str:
    """JSON: `{"tcp": [...], "cbr": [...]}`, every connection and flow as the simulator builds it
    (`rtcbench_scenario::cross::CrossPlan`)."""
    ...

def call_plans(resolved: Resolved | str, seed: int) -> str:
    """JSON: per call of `meta.calls`, its `id`, `name`, `from`, `to`, `via`, `role` and `plan`
    (the `CallPlan`; null for an SFU's forward leg)."""
    ...

def builtin_scenarios() -> list[tuple[str, str, str, str]]: ...
def builtin_text(id: str) -> tuple[str, str] | None: ...
def controllers() -> list[tuple[str, str]]: ...
def expand(
    text: str, origin: str, sets: list[str] = ...
) -> list[tuple[str, str, str, str, str, Resolved]]: ...

class Resolved:
    """One variant as the loader resolved and checked it; what runs or plans it takes it as it is,
    with no second parse (a resolved TOML string is loaded again). Pickles as its TOML."""

    def __init__(self, toml: str) -> None: ...
    @property
    def toml(self) -> str: ...
    @property
    def fingerprint(self) -> str: ...

class Run:
    """One run of a resolved variant on a thread of its own; its trace comes in pieces
    (`piece()`: the rows recorded since the previous piece, as dicts of numpy arrays with
    `codes`; None once the run is complete). An interrupt while waiting stops the run."""

    def __init__(
        self,
        resolved: Resolved | str,
        controller: str,
        seed: int,
        *,
        factory: Callable[[int, int], object] | None = None,
        policy: Policy | None = None,
        pcap: str | None = None,
        piece_rows: int = ...,
        slice_events: int = ...,
    ) -> None: ...
    def piece(self) -> dict[str, Any] | None: ...
    def close(self) -> None: ...
    @property
    def meta(self) -> str: ...
    @property
    def events(self) -> int | None: ...
    @property
    def sim_wall_s(self) -> float | None: ...

class IntervalStats:
    """What feedback said about the controlled call's packets in one step of a `Simulation`.
    Times are microseconds, rates bit/s; None where no packet was reported received."""

    @property
    def start_us(self) -> int: ...
    @property
    def end_us(self) -> int: ...
    @property
    def target_bps(self) -> int:
        """The target rate at the end of the interval."""
    @property
    def send_bps(self) -> int: ...
    @property
    def receive_bps(self) -> int:
        """Bytes reported received over the span of arrival times the interval's reports cover."""
    @property
    def packets_received(self) -> int: ...
    @property
    def packets_lost(self) -> int: ...
    @property
    def loss_ratio(self) -> float: ...
    @property
    def qdelay_mean_us(self) -> int | None:
        """One-way delay above the smallest seen since the start of the run."""
    @property
    def qdelay_min_us(self) -> int | None: ...
    @property
    def qdelay_max_us(self) -> int | None: ...
    @property
    def jitter_us(self) -> int | None:
        """Mean absolute difference between consecutive one-way delays."""
    @property
    def rtt_us(self) -> int | None:
        """GoogCC's round-trip estimate from feedback timing, averaged over the interval's reports."""
    @property
    def reports(self) -> int: ...

class Simulation:
    """A run of one resolved variant advanced in steps; call `external_call` sends at the rate
    `set_target` gives it (or, with `agent=True`, its receiver sends the estimates `set_estimate`
    gives, one per 60 ms decision), the other calls run the built-in `controller`."""

    def __init__(
        self,
        resolved: Resolved | str,
        controller: str,
        seed: int,
        *,
        external_call: int = 0,
        agent: bool = False,
    ) -> None: ...
    def run_until(self, t_us: int) -> None: ...
    def set_target(self, bps: float) -> None: ...
    def take_interval(self) -> IntervalStats: ...
    def next_observation(self) -> tuple[int, npt.NDArray[np.float32]] | None: ...
    def set_estimate(self, bps: float) -> None: ...
    @property
    def next_decision_us(self) -> int | None: ...
    @property
    def agent_failure(self) -> str | None: ...
    def finish(self) -> dict[str, Any]: ...
    def drop_trace(self) -> None: ...
    @property
    def trace_rows(self) -> int: ...
    @property
    def now_us(self) -> int: ...
    @property
    def end_us(self) -> int: ...
    @property
    def done(self) -> bool: ...
    @property
    def events(self) -> int: ...
    @property
    def external_call(self) -> int: ...
    @property
    def call_info(self) -> CallInfo: ...
    @property
    def meta(self) -> str: ...
