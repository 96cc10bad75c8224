"""Cross traffic on the emulated network: kernel TCP and UDP CBR between the hosts, from a
resolved scenario's `[[tcp]]` and `[[cbr]]` entries (docs/emulation.md, "Cross traffic").

    flows = cross.plan(variant, seed=1)                 # pure: no root, no system call
    with testbed.build(variant) as bed:
        traffic = cross.start(bed, flows, end_s=30.0, log_dir=out)   # agents ready, waiting
        traffic.go(t0)                                  # the run's start instant (monotonic)
        traffic.wait()
    logs = cross.read_logs(out)                         # per flow: start, stop, bytes delivered

`plan` takes the cross traffic as the simulator builds it, from the core
(`crates/rtcbench-scenario/src/cross.rs`): the same flow names, counts, start and stop times,
ports and on/off parameters; what the kernel cannot do as the simulator does is refused there,
in one line naming the field (`CrossTrafficError`).
`start` runs one agent per node and role (`_cross_agent.py`: a source where flows start, a sink
where they end) through `Testbed.popen`, so they are stopped with the testbed whatever ends it.
Why our own agent and not iperf3: docs/adr/0002-cross-traffic-agents.md. TCP Prague, which this
kernel lacks, runs in a native agent of its own (`rtcbench-prague`, `crates/rtcbench-live/src/
prague.rs`): the simulator's Prague sender and AccECN receiver over UDP, one per node and role
beside the others, speaking the same protocol and writing the same log records.
"""

from __future__ import annotations

import json
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rtcbench import _core
from rtcbench.scenarios import Variant
from rtcbench.testbed import binaries
from rtcbench.testbed.binaries import pipe
from rtcbench.testbed.netns import Testbed, TestbedError
from rtcbench.testbed.timing import CROSS_GOAL, MEDIA_GOAL, ProcessTiming, agent_timing
from rtcbench.testbed.topology import MTU

__all__ = [
    "AVAILABLE_CC",
    "CBR_PORT",
    "FIRST_SOURCE_PORT",
    "KERNEL_CC",
    "LOG_INTERVAL_S",
    "TCP_SINK_PORT",
    "CbrFlow",
    "CrossFlow",
    "CrossTraffic",
    "CrossTrafficError",
    "FlowLog",
    "OnOff",
    "TcpFlow",
    "available_congestion_controls",
    "plan",
    "read_logs",
    "require_congestion_controls",
    "run",
    "start",
]

AGENT = Path(__file__).with_name("_cross_agent.py")
"""The agent, run by path with the standard library only (`python -I -S`)."""

KERNEL_CC = {"newreno": "reno", "cubic": "cubic", "bbr": "bbr"}
"""A scenario's `cc` → the Linux congestion control set with TCP_CONGESTION (Linux calls
NewReno "reno"; "bbr" is upstream Linux's BBR v1, which the simulator models, docs/tcp.md). A
`TcpFlow` may ask for any congestion control the kernel has."""

PRAGUE = "prague"
"""A scenario's `cc = "prague"`: not the kernel's (L4STeam's out-of-tree `tcp_prague` is not in
mainline Linux, and where a kernel has it the run would depend on the machine), but
`rtcbench-prague`, the simulator's Prague over UDP (`TcpFlow.udp`)."""

PRAGUE_ENV = "RTCBENCH_PRAGUE"
"""Names the Prague agent binary to use instead of the one `make build` puts in the package."""

PRAGUE_TCP_HEADER = 20
"""Bytes of TCP header in front of a Prague datagram's payload: data segments carry no TCP
options (the simulator's choice), so a data datagram's TCP payload is its UDP payload less 20."""

AVAILABLE_CC = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")

TCP_SINK_PORT = 5201
"""Where every TCP sink listens, as in the simulator (iperf's port)."""
FIRST_SOURCE_PORT = 49152
"""Source ports count up from the first ephemeral port (RFC 6335 §6), TCP flows first, in the
simulator's order, then CBR flows."""
CBR_PORT = 9
"""CBR datagrams go to the discard port (RFC 863), as in the simulator's captures."""

DEFAULT_CBR_PACKET = 1200
"""Bytes on the wire of a CBR packet unless the scenario says otherwise (the simulator's)."""
UDP_IPV4_HEADERS = 28

LOG_INTERVAL_S = 0.1
"""A sink counts what each flow delivers per interval of this length (half the 200 ms window
of `timeseries.parquet`)."""

READY_TIMEOUT_S = 10.0
"""How long `start` waits for an agent to say it is ready (it takes tens of milliseconds)."""

GO_MARGIN_S = 0.02
"""`go()` without a start instant starts this long after the call."""


class CrossTrafficError(TestbedError):
    """Cross traffic cannot run as asked: a scenario field the kernel cannot match, a congestion
    control this kernel lacks, an agent that failed. One line, naming the field or the flow."""


# -- the plan ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class OnOff:
    """The on/off application of a short TCP flow (RFC 8868 §5.1, RFC 8867 §5.7): bursts of
    `files` files of uniform size in [`size_min_bytes`, `size_max_bytes`], then an exponential idle time
    of mean `idle_mean_s` once the burst is acknowledged; the first burst at `start` if
    `initially_on`, else after an idle time."""

    size_min_bytes: int
    size_max_bytes: int
    files: int
    idle_mean_s: float
    initially_on: bool


@dataclass(frozen=True)
class TcpFlow:
    """One kernel TCP connection from `src` to `dst` (scenario nodes), open from `start_s` to
    `stop_s` (seconds after the run's start). `cc` is the kernel's name (`KERNEL_CC`); `on_off`
    None is a bulk transfer. `rng_key` seeds the on/off draws."""

    name: str
    src: str
    dst: str
    start_s: float
    stop_s: float
    cc: str
    delayed_ack: bool = True
    on_off: OnOff | None = None
    src_port: int = FIRST_SOURCE_PORT
    dst_port: int = TCP_SINK_PORT
    rng_key: str = ""
    udp: bool = False
    """Carried over UDP by `rtcbench-prague` (the simulator's TCP model, `cc` "prague") rather
    than by the kernel's TCP."""

    kind = "tcp"


@dataclass(frozen=True)
class CbrFlow:
    """UDP datagrams of `packet_size_bytes` on the wire (IPv4 and UDP headers included) at
    `rate_bps` from `src` to `dst`, from `start_s` until `stop_s`."""

    name: str
    src: str
    dst: str
    start_s: float
    stop_s: float
    rate_bps: int
    packet_size_bytes: int = DEFAULT_CBR_PACKET
    src_port: int = FIRST_SOURCE_PORT
    dst_port: int = CBR_PORT

    kind = "cbr"


CrossFlow = TcpFlow | CbrFlow


def plan(variant: Variant, seed: int = 0) -> list[CrossFlow]:
    """The cross traffic of a resolved scenario as the simulator builds it
    (`rtcbench_scenario::cross::CrossPlan`, from `_core.cross_plan`): every `[[tcp]]` entry's
    `count` connections, named, timed and configured as in the simulator, then every `[[cbr]]`
    flow; a stop after the end of the run is the end. `seed` keys the on/off draws (the same
    distributions as the simulator's, not the same draws). CBR flows take the source ports after
    the TCP connections'.

    Raises `CrossTrafficError` for what the kernel cannot do as the simulator does:
    `small_queues = true`, or `delayed_ack` that differs between two kernel `[[tcp]]` entries to
    the same node from the same node (the kernel turns delayed ACKs off per route); and for an
    on/off Prague flow, which `rtcbench-prague` does not run."""
    where = variant.scenario_id
    cross = json.loads(_core.cross_plan(variant.core))
    end_s = _core.duration_s(variant.duration)
    flows: list[CrossFlow] = []
    delayed_ack: dict[tuple[str, str], tuple[bool, int]] = {}
    for t in cross["tcp"]:
        field_ = f"tcp.{t['entry']}"
        if t["small_queues"]:
            raise CrossTrafficError(
                f"{where}: {field_}.small_queues = true cannot be emulated: the kernel's TCP Small "
                "Queues act on the sending host's own queue, and the emulated links are in the relay"
            )
        if t["ecn"] and t["cc"] != "prague":
            raise CrossTrafficError(
                f"{where}: {field_}.ecn = true cannot be emulated yet: the testbed does not set "
                "net.ipv4.tcp_ecn in the sending namespace"
            )
        ends = (t["from"], t["to"])
        delack = t["delayed_ack"]
        # rtcbench-prague's receiver delays ACKs per flow, as the simulator's; the kernel per route.
        kernel_route = t["cc"] != PRAGUE
        if kernel_route and ends in delayed_ack and delayed_ack[ends][0] != delack:
            raise CrossTrafficError(
                f"{where}: {field_}.delayed_ack = {str(delack).lower()} differs from "
                f"tcp.{delayed_ack[ends][1]} from {ends[0]} to {ends[1]}: the kernel turns delayed "
                "ACKs off per route (quickack), for every connection between two hosts"
            )
        if kernel_route:
            delayed_ack.setdefault(ends, (delack, t["entry"]))
        o = t["on_off"]
        prague = t["cc"] == PRAGUE
        if prague and o is not None:
            raise CrossTrafficError(
                f'{where}: {field_}.on_off with cc = "prague" cannot be emulated yet: rtcbench-prague '
                'runs bulk flows only (allowed: no on_off, or cc = "newreno" or "cubic")'
            )
        on_off = None
        if o is not None:
            on_off = OnOff(
                size_min_bytes=o["size_min_bytes"],
                size_max_bytes=o["size_max_bytes"],
                files=o["files"],
                idle_mean_s=o["idle_mean_us"] / 1e6,
                initially_on=o["initially_on"],
            )
        flows.append(
            TcpFlow(
                name=t["name"],
                src=t["from"],
                dst=t["to"],
                start_s=t["start_us"] / 1e6,
                stop_s=min(t["stop_us"] / 1e6, end_s),
                cc=PRAGUE if prague else KERNEL_CC[t["cc"]],
                delayed_ack=delack,
                on_off=on_off,
                src_port=t["src_port"],
                dst_port=t["dst_port"],
                rng_key=f"{seed}/{t['rng_path']}/workload",
                udp=prague,
            )
        )
    port = FIRST_SOURCE_PORT + len(flows)
    for c in cross["cbr"]:
        flows.append(
            CbrFlow(
                name=c["name"],
                src=c["from"],
                dst=c["to"],
                start_s=c["start_us"] / 1e6,
                stop_s=min(c["stop_us"] / 1e6, end_s),
                rate_bps=c["rate_bps"],
                packet_size_bytes=c["packet_size_bytes"],
                src_port=port,
            )
        )
        port += 1
    return flows


# -- congestion controls -----------------------------------------------------------------------


def available_congestion_controls() -> set[str]:
    """The TCP congestion controls this kernel offers (the same in every network namespace)."""
    try:
        return set(AVAILABLE_CC.read_text().split())
    except OSError:
        return set()


def require_congestion_controls(flows: Sequence[CrossFlow]) -> None:
    """`CrossTrafficError` (one line) unless the kernel has every congestion control the TCP
    flows ask for. A missing one is loaded first if it is a module (`modprobe tcp_<name>`). Prague
    runs in rtcbench's own agent (`TcpFlow.udp`) and needs nothing of the kernel."""
    wanted = {f.cc: f.name for f in flows if isinstance(f, TcpFlow) and not f.udp}
    have = available_congestion_controls()
    missing = sorted(set(wanted) - have)
    modprobe = shutil.which("modprobe")
    if missing and modprobe:
        for cc in missing:
            subprocess.run([modprobe, f"tcp_{cc}"], capture_output=True, check=False)
        have = available_congestion_controls()
        missing = sorted(set(wanted) - have)
    if missing:
        cc = missing[0]
        tried = f"`modprobe tcp_{cc}` did not add it" if modprobe else f"no `modprobe` to load tcp_{cc}"
        raise CrossTrafficError(
            f"{wanted[cc]}: this kernel has no TCP congestion control {cc!r} "
            f"(available: {' '.join(sorted(have)) or 'none'}; {tried})"
        )


# -- running -----------------------------------------------------------------------------------


@dataclass
class Agent:
    """One agent process: a node's `source` or `sink`."""

    node: str
    role: str
    process: subprocess.Popen[str]
    stderr: Path
    log: Path
    ready: bool = False
    prague: bool = False
    """`rtcbench-prague`, not the kernel-TCP and CBR agent."""

    def last_error(self) -> str:
        lines = [line for line in self.stderr.read_text(errors="replace").splitlines() if line.strip()]
        return lines[-1].strip() if lines else f"exit status {self.process.returncode}"


@dataclass
class CrossTraffic:
    """The agents of one run, started by `start`: ready, then running once `go` is called."""

    flows: tuple[CrossFlow, ...]
    log_dir: Path
    agents: list[Agent] = field(default_factory=list)
    t0: float | None = None
    """The start instant given to `go` (`time.monotonic()` seconds)."""
    stopped: bool = False

    def go(self, t0: float | None = None) -> float:
        """Starts the run at `t0` (CLOCK_MONOTONIC seconds, as `time.monotonic()`; default: in
        `GO_MARGIN_S`): every flow's start and stop count from there. Returns `t0`."""
        if self.t0 is not None:
            raise RuntimeError("cross traffic is already going")
        self.t0 = time.monotonic() + GO_MARGIN_S if t0 is None else t0
        line = f"go {round(self.t0 * 1e9)}\n"
        for a in self.agents:
            stdin = pipe(a.process.stdin)
            try:
                stdin.write(line)
                stdin.close()
            except BrokenPipeError:
                pass  # the agent has ended: `wait` says why
        return self.t0

    def timings(self) -> list[ProcessTiming]:
        """How late each source kept its schedule (its log's `timing` record, written as it
        ends); a source that wrote none (it failed) is left out. Sinks keep no schedule: they read
        what arrives when it arrives."""
        out = []
        for a in self.agents:
            if a.role != "source" or not a.log.is_file():
                continue
            for line in a.log.read_text().splitlines():
                r = json.loads(line)
                if r.get("event") == "timing" and a.prague:
                    # A paced sender, held to the media agents' goal.
                    name = f"Prague source at {a.node}"
                    out.append(agent_timing(name, "cross", "deadlines", r["deadlines"], MEDIA_GOAL))
                elif r.get("event") == "timing":
                    name = f"cross-traffic source at {a.node}"
                    out.append(agent_timing(name, "cross", "schedule", r["deadlines"], CROSS_GOAL))
        return out

    def wait(self, timeout: float | None = None) -> None:
        """Waits until every agent has ended (sources after their flows' stops, sinks at the end
        of the run); `CrossTrafficError` naming the first that failed, with its message."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for a in self.agents:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            a.process.wait(left)
        self._close_pipes()
        for a in self.agents:
            if a.process.returncode != 0 and not (self.stopped and a.process.returncode < 0):
                raise CrossTrafficError(f"cross traffic ({a.role} at {a.node}): {a.last_error()}")

    def stop(self) -> None:
        """Ends every agent now (SIGTERM): open flows are closed and the logs completed."""
        self.stopped = True
        # Sources first: a flow whose sink ended first would end in a reset, logged as an error.
        for role in ("source", "sink"):
            mine = [a for a in self.agents if a.role == role]
            for a in mine:
                if a.process.poll() is None:
                    a.process.send_signal(signal.SIGTERM)
            for a in mine:
                a.process.wait(READY_TIMEOUT_S)
        self.wait(READY_TIMEOUT_S)

    def logs(self) -> dict[str, FlowLog]:
        """What the agents logged, per flow (`read_logs`)."""
        return read_logs(self.log_dir)

    def _close_pipes(self) -> None:
        for a in self.agents:
            for stream in (a.process.stdin, a.process.stdout):
                if stream is not None and not stream.closed:
                    stream.close()


def start(
    bed: Testbed,
    flows: Sequence[CrossFlow],
    *,
    end_s: float,
    log_dir: Path,
    interval_s: float = LOG_INTERVAL_S,
) -> CrossTraffic:
    """Starts the agents of `flows` in their nodes' namespaces of `bed` (sinks first) and waits
    until each is ready; they begin at `CrossTraffic.go`. Sinks count until `end_s`. The logs and
    each agent's stderr go to `log_dir`.

    Checks first that the kernel has every congestion control asked for and that every CBR packet
    fits the MTU, and turns delayed ACKs off where flows ask (`quickack` on the route back to the
    source, in the sink's namespace). Raises `CrossTrafficError` (one line) if anything fails; the
    agents already started are stopped with the testbed."""
    flows = tuple(flows)
    _check(flows, end_s)
    require_congestion_controls(flows)
    log_dir.mkdir(parents=True, exist_ok=True)
    topo = bed.topology
    kernel = [f for f in flows if not (isinstance(f, TcpFlow) and f.udp)]
    prague = [f for f in flows if isinstance(f, TcpFlow) and f.udp]
    binary = prague_agent() if prague else None
    for src, dst in sorted({(f.src, f.dst) for f in kernel if isinstance(f, TcpFlow) and not f.delayed_ack}):
        s, d = topo.host(src), topo.host(dst)
        route = ["ip", "route", "replace", f"{s.address.ip}/32", "via", str(d.net_address.ip)]
        route += ["dev", d.interface, "quickack", "1"]
        done = bed.run(dst, route, capture_output=True, text=True)
        if done.returncode != 0:
            raise CrossTrafficError(f"cannot turn delayed ACKs off at {dst}: {done.stderr.strip()}")

    def address(node: str) -> str:
        return str(topo.host(node).address.ip)

    traffic = CrossTraffic(flows, log_dir)

    def ends(of: Sequence[CrossFlow], role: str) -> list[str]:
        """The nodes where `of`'s flows start (sources) or end (sinks), in host order."""
        return sorted({f.dst if role == "sink" else f.src for f in of}, key=lambda n: topo.host(n).index)

    try:
        for role in ("sink", "source"):
            for group in (prague, kernel):
                for node in ends(group, role):
                    mine = [f for f in group if (f.dst if role == "sink" else f.src) == node]
                    index = topo.host(node).index
                    cfg: dict[str, Any] = {
                        "address": address(node),
                        "flows": [_agent_flow(f, address) for f in mine],
                    }
                    if group is prague:
                        assert binary is not None
                        stem = log_dir / f"{role}-h{index}-prague"
                        cfg |= {"role": role, "log": str(stem.with_suffix(".jsonl"))}
                        if role == "sink":
                            cfg |= {"interval_s": interval_s, "end_s": end_s, "port": TCP_SINK_PORT}
                        traffic.agents.append(_launch_prague(bed, binary, node, role, cfg, stem))
                        continue
                    cfg["log"] = str(log_dir / f"{role}-h{index}.jsonl")
                    if role == "sink":
                        cfg |= {
                            "interval_s": interval_s,
                            "end_s": end_s,
                            "tcp_port": TCP_SINK_PORT,
                            "cbr_port": CBR_PORT,
                        }
                    stderr = log_dir / f"{role}-h{index}.stderr"
                    traffic.agents.append(_launch(bed, node, role, cfg, stderr))
            # Sinks listen before any source exists.
            _await_ready(traffic)
    except BaseException:
        # The agents end with the testbed; without their pipes they end at once (no `go`).
        traffic._close_pipes()
        raise
    return traffic


def run(bed: Testbed, flows: Sequence[CrossFlow], *, end_s: float, log_dir: Path) -> dict[str, FlowLog]:
    """`start`, `go` at once, `wait`: the flows' logs."""
    traffic = start(bed, flows, end_s=end_s, log_dir=log_dir)
    traffic.go()
    traffic.wait(end_s + READY_TIMEOUT_S)
    return traffic.logs()


def _check(flows: tuple[CrossFlow, ...], end_s: float) -> None:
    """`CrossTrafficError` for flows the agents cannot run as asked (`plan` never makes them)."""
    names = [f.name for f in flows]
    if len(set(names)) != len(names):
        raise CrossTrafficError(f"flow names repeat: {names}")
    back: dict[tuple[str, str], TcpFlow] = {}
    for f in flows:
        if not 0 <= f.start_s < f.stop_s <= end_s:
            raise CrossTrafficError(
                f"{f.name}: runs from {f.start_s} s to {f.stop_s} s; it must start at 0 s or later and stop "
                f"after it starts and by the end of the run ({end_s} s)"
            )
        if isinstance(f, CbrFlow) and not UDP_IPV4_HEADERS <= f.packet_size_bytes <= MTU:
            raise CrossTrafficError(
                f"{f.name}: packet_size {f.packet_size_bytes} B is not {UDP_IPV4_HEADERS} to {MTU} bytes"
            )
        if isinstance(f, TcpFlow) and not f.udp:
            other = back.setdefault((f.src, f.dst), f)
            if other.delayed_ack != f.delayed_ack:
                raise CrossTrafficError(
                    f"{f.name}: delayed ACKs {'on' if f.delayed_ack else 'off'} while {other.name}, from "
                    f"{f.src} to {f.dst} too, has them {'on' if other.delayed_ack else 'off'}: the kernel "
                    "sets them per route"
                )


def _agent_flow(f: CrossFlow, address: Any) -> dict[str, Any]:
    """A flow as the agents read it (`_cross_agent.py`; a Prague flow as `rtcbench-prague`)."""
    out: dict[str, Any] = {
        "name": f.name,
        "start_s": f.start_s,
        "stop_s": f.stop_s,
        "src_address": address(f.src),
        "src_port": f.src_port,
        "dst_address": address(f.dst),
        "dst_port": f.dst_port,
    }
    if isinstance(f, TcpFlow) and f.udp:
        return out | {"delayed_ack": f.delayed_ack}
    out["kind"] = f.kind
    if isinstance(f, TcpFlow):
        out |= {"cc": f.cc, "rng_key": f.rng_key}
        if f.on_off is not None:
            o = f.on_off
            out["on_off"] = {
                "size_min": o.size_min_bytes,
                "size_max": o.size_max_bytes,
                "files": o.files,
                "idle_mean_s": o.idle_mean_s,
                "initially_on": o.initially_on,
            }
    else:
        out |= {"rate_bps": f.rate_bps, "packet_size": f.packet_size_bytes}
    return out


def _launch(bed: Testbed, node: str, role: str, cfg: dict[str, Any], stderr: Path) -> Agent:
    with stderr.open("w") as err:
        process = bed.popen(
            node,
            [sys.executable, "-I", "-S", str(AGENT), role],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    stdin = pipe(process.stdin)
    stdin.write(json.dumps(cfg) + "\n")
    stdin.flush()
    return Agent(node, role, process, stderr, Path(cfg["log"]))


def prague_agent() -> Path:
    """The `rtcbench-prague` binary (`$RTCBENCH_PRAGUE`, or the packaged one)."""
    return binaries.find("rtcbench-prague", PRAGUE_ENV, "Prague agent")


def _launch_prague(
    bed: Testbed, binary: Path, node: str, role: str, cfg: dict[str, Any], stem: Path
) -> Agent:
    """`rtcbench-prague` with its configuration in a file beside its log."""
    stderr = stem.with_suffix(".stderr")
    process = binaries.launch(bed, node, binary, cfg, stem.with_suffix(".json"), stderr)
    return Agent(node, role, process, stderr, Path(cfg["log"]), prague=True)


def _await_ready(traffic: CrossTraffic) -> None:
    """Waits for every agent's `ready` line; `CrossTrafficError` if one ends or is silent."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    waiting = {pipe(a.process.stdout).fileno(): a for a in traffic.agents if not a.ready}
    while waiting:
        left = deadline - time.monotonic()
        if left <= 0:
            a = next(iter(waiting.values()))
            raise CrossTrafficError(
                f"cross traffic ({a.role} at {a.node}) was not ready in {READY_TIMEOUT_S} s"
            )
        readable, _, _ = select.select(list(waiting), [], [], left)
        for fd in readable:
            a = waiting.pop(fd)
            line = pipe(a.process.stdout).readline()
            if line.strip() != "ready":
                a.process.wait()
                raise CrossTrafficError(f"cross traffic ({a.role} at {a.node}): {a.last_error()}")
            a.ready = True
            pipe(a.process.stdout).close()  # nothing more comes from it


# -- logs --------------------------------------------------------------------------------------


@dataclass
class FlowLog:
    """What the agents logged of one flow, times in seconds after the run's start instant. From
    the source: when it started, connected (TCP, with the congestion control the socket really
    has), stopped, each on/off burst, bytes handed to the kernel (TCP) or sent (CBR). From the
    sink: connections accepted, bytes delivered per interval (`delivered`: interval start and
    payload bytes; `datagrams` for CBR), totals and the first and last delivery."""

    name: str
    scheduling: str | None = None
    """How its source was scheduled: `fifo` (real-time, precise) or `normal` (its sink's is in
    `sink_scheduling`)."""
    sink_scheduling: str | None = None
    start_s: float | None = None
    connected_s: float | None = None
    cc: str | None = None
    stop_s: float | None = None
    sent_bytes: int = 0
    sent_datagrams: int = 0
    bursts: list[tuple[float, float, int]] = field(default_factory=list)
    """(start, end, size) of every completed burst; end is when its last byte was acknowledged."""
    connections: int = 0
    closed: list[tuple[float, str]] = field(default_factory=list)
    delivered: list[tuple[float, int]] = field(default_factory=list)
    datagrams: list[tuple[float, int]] = field(default_factory=list)
    delivered_bytes: int = 0
    delivered_datagrams: int = 0
    first_delivery_s: float | None = None
    last_delivery_s: float | None = None
    errors: list[str] = field(default_factory=list)

    def rate_bps(self, from_s: float, to_s: float) -> float:
        """Payload bit rate delivered over the intervals that start in [from_s, to_s)."""
        got = sum(b for t, b in self.delivered if from_s <= t + 1e-9 < to_s)
        return got * 8 / (to_s - from_s)


def read_logs(log_dir: Path) -> dict[str, FlowLog]:
    """Every flow's `FlowLog` from the agents' logs in `log_dir` (`source-*.jsonl`,
    `sink-*.jsonl`)."""
    flows: dict[str, FlowLog] = {}
    for path in sorted(log_dir.glob("source-*.jsonl")) + sorted(log_dir.glob("sink-*.jsonl")):
        policy = None
        for line in path.read_text().splitlines():
            r = json.loads(line)
            if r["event"] == "scheduling":
                policy = r["policy"]
            if r["flow"] is None:
                continue
            f = flows.setdefault(r["flow"], FlowLog(r["flow"]))
            if path.name.startswith("source-"):
                f.scheduling = policy
            else:
                f.sink_scheduling = policy
            _apply(f, r)
    return flows


def _apply(f: FlowLog, r: dict[str, Any]) -> None:
    event, t = r["event"], r["t"]
    if event == "start":
        f.start_s = t
    elif event == "connected":
        f.connected_s, f.cc = t, r["cc"]
    elif event == "burst":
        f.bursts.append((r["start"], t, r["size"]))
    elif event == "stop":
        f.stop_s, f.sent_bytes = t, r["sent"]
        f.sent_datagrams = r.get("datagrams", 0)
    elif event == "error":
        f.errors.append(r["message"])
    elif event == "accepted":
        f.connections += 1
    elif event == "closed":
        f.closed.append((t, r["how"]))
    elif event == "delivered":
        f.delivered.append((t, r["bytes"]))
        if "datagrams" in r:
            f.datagrams.append((t, r["datagrams"]))
    elif event == "end":
        f.delivered_bytes, f.delivered_datagrams = r["bytes"], r.get("datagrams", 0)
        f.first_delivery_s, f.last_delivery_s = r["first"], r["last"]
