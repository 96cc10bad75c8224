"""The emulation relay: a Rust process (`crates/rtcbench-live`, `rtcbench-relay`) in a testbed's
net namespace that carries every IPv4 packet between the hosts through the scenario's links, built
from the same elements the simulator runs (docs/emulation.md, "The relay";
docs/adr/0001-relay-packet-io.md).

    with testbed.build(variant) as bed:
        relay = testbed.relay.start(bed, variant, seed=1, out_dir=run_dir)
        t0 = relay.go()            # the run's time zero: capacity schedules count from here
        ...                        # traffic between the hosts
        report = relay.stop()      # relay.json: timing error, counts per link, drops

`start` raises `RelayError` (one line) when the relay cannot start; `stop` raises it when the relay
failed while running.
"""

from __future__ import annotations

import contextlib
import json
import select
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rtcbench import _core
from rtcbench.scenarios import Variant
from rtcbench.testbed import binaries
from rtcbench.testbed.binaries import pipe
from rtcbench.testbed.netns import Testbed, TestbedError

RELAY_ENV = "RTCBENCH_RELAY"
"""Names the relay binary to use instead of the one `make build-release` puts in the package."""
READY_TIMEOUT_S = 5.0
STOP_TIMEOUT_S = 5.0
GO_MARGIN_S = 0.05
"""How far ahead `go` puts time zero by default, so every process it starts has it in time."""
LATENESS_GOAL_US = 200.0
UDP_HEAD = 12
"""Bytes of each UDP payload the packet log shows by default: an RTP fixed header (RFC 3550
§5.1), or an RTCP packet's first words; what an emulated run's tables need."""
MAX_UDP_HEAD = 96
"""The most the relay shows (`crates/rtcbench-live` `config::MAX_UDP_HEAD`)."""


class RelayError(TestbedError):
    """The relay could not start, refused the scenario, or failed while running (one line)."""


def binary() -> Path:
    """The relay executable: `$RTCBENCH_RELAY`, else the one built beside the package."""
    return binaries.find("rtcbench-relay", RELAY_ENV, "emulation relay")


@dataclass(frozen=True)
class LinkReport:
    name: str
    packets_in: int
    bytes_in: int
    packets_out: int
    bytes_out: int
    dropped: dict[str, int]
    background_in: int
    """Of `packets_in`, the UDP background packets the relay generated (RFC 8867 §4.2)."""


@dataclass(frozen=True)
class ElementTiming:
    """How late the relay ran one element's events against their instants in the scenario (a
    link's serialisation ends and deliveries; a BSS's backoff ends, transmission starts and ends;
    a cell's TTIs)."""

    name: str
    kind: str
    """"link", "wifi", "lte" or "other"."""
    events: int
    p50_us: float
    p99_us: float
    max_us: float


@dataclass(frozen=True)
class RelayReport:
    """What the relay says about its run (`relay.json`). Lateness is how long after the instant
        its last element delivered a frame the relay sent it: the emulation's own timing error; per
    element, how late the relay ran that element's events (`elements`)."""

    scheduling: str
    departures: int
    lateness_p50_us: float
    lateness_p99_us: float
    lateness_max_us: float
    keeping_up: bool
    frames_in: int
    frames_out: int
    refused: dict[str, int]
    oversize: int
    late_arrivals: int
    socket_drops: list[int]
    records_lost: int
    links: dict[str, LinkReport]
    elements: list[ElementTiming]
    wall_s: float
    cpu_s: float
    """CPU time of the whole relay from `go` to its end (its forwarding thread and its writer)."""
    forwarding_cpu_s: float
    """CPU time of the relay's forwarding thread alone: what one core must keep up with."""
    processed_until_s: float
    """The last instant of the scenario the relay processed: its links ran up to here."""
    cpu: int | None = None
    """The CPU its forwarding thread was kept on, the namespaces' packet processing off it
    (`rtcbench.testbed.netns.relay_cpu`); None: it ran wherever the kernel put it."""
    send_waits: int = 0
    """Departures that found their interface's send buffer full and waited for room (frames a
    host has not consumed yet count against the relay's socket); the forwarding stops meanwhile."""
    send_wait_max_ms: float = 0.0
    send_wait_total_s: float = 0.0

    @classmethod
    def read(cls, path: Path) -> RelayReport:
        r = json.loads(path.read_text())
        late = r["lateness"]
        links = {
            link["name"]: LinkReport(
                name=link["name"],
                packets_in=link["packets_in"],
                bytes_in=link["bytes_in"],
                packets_out=link["packets_out"],
                bytes_out=link["bytes_out"],
                dropped=dict(link["dropped"]),
                background_in=link["background_in"],
            )
            for link in r["links"]
        }
        return cls(
            scheduling=r["scheduling"],
            departures=late["departures"],
            lateness_p50_us=late["p50_us"],
            lateness_p99_us=late["p99_us"],
            lateness_max_us=late["max_us"],
            keeping_up=r["keeping_up"],
            frames_in=r["frames_in"],
            frames_out=r["frames_out"],
            refused=dict(r["refused"]),
            oversize=r["oversize"],
            late_arrivals=r["late_arrivals"],
            socket_drops=list(r["socket_drops"]),
            records_lost=r["records_lost"],
            links=links,
            elements=[
                ElementTiming(
                    name=e["name"],
                    kind=e["kind"],
                    events=e["lateness"]["departures"],
                    p50_us=e["lateness"]["p50_us"],
                    p99_us=e["lateness"]["p99_us"],
                    max_us=e["lateness"]["max_us"],
                )
                for e in r["elements"]
            ],
            wall_s=r["wall_s"],
            cpu_s=r["cpu_s"],
            forwarding_cpu_s=r["forwarding_cpu_s"],
            processed_until_s=r["processed_until_us"] / 1e6,
            cpu=r.get("cpu"),
            send_waits=sum(r.get("send_waits", [])),
            send_wait_max_ms=float(r.get("send_wait_max_ms", 0.0)),
            send_wait_total_s=float(r.get("send_wait_total_s", 0.0)),
        )

    def warning(self) -> str | None:
        """One line when the emulation's timing cannot be trusted, else None."""
        if not self.keeping_up:
            late = [e for e in self.elements if e.p99_us > LATENESS_GOAL_US]
            elements = "".join(f", {e.name}'s events by {e.p99_us:.0f} µs" for e in late)
            waits = (
                f"; it waited for room in a full send buffer {self.send_waits} times, up to "
                f"{self.send_wait_max_ms:.0f} ms, {self.send_wait_total_s:.1f} s in all"
                if self.send_waits
                else ""
            )
            return (
                f"the relay could not keep up: departures late by {self.lateness_p99_us:.0f} µs at p99"
                f"{elements} (goal {LATENESS_GOAL_US:.0f} µs; scheduling {self.scheduling}"
                f"{'' if self.cpu is None else f' on CPU {self.cpu}'}; forwarding "
                f"used {self.forwarding_cpu_s / max(self.wall_s, 1e-9):.0%} of a core{waits}); timing on "
                "this path is not the scenario's"
            )
        if any(self.socket_drops) or self.records_lost:
            return (
                f"the relay lost frames outside the scenario: {sum(self.socket_drops)} at full socket "
                f"buffers, {self.records_lost} capture records"
            )
        return None


@dataclass
class Relay:
    """A started relay (`start`): ready, running once `go` is called, done after `stop`."""

    process: subprocess.Popen[str]
    out_dir: Path
    stderr_path: Path
    t0: float | None = None
    report: RelayReport | None = None

    def go(self, t0: float | None = None) -> float:
        """Starts the run at `t0` (`time.monotonic()` seconds; default: `GO_MARGIN_S` from now)."""
        if self.t0 is not None:
            raise RuntimeError("the relay is already going")
        self.t0 = time.monotonic() + GO_MARGIN_S if t0 is None else t0
        try:
            pipe(self.process.stdin).write(f"go {round(self.t0 * 1e9)}\n")
            pipe(self.process.stdin).flush()
        except BrokenPipeError:
            self.stop()  # raises with the relay's own message
        return self.t0

    def stop(self) -> RelayReport:
        """Ends the run (the relay finishes its files) and returns its report."""
        if self.report is not None:
            return self.report
        stdin = pipe(self.process.stdin)
        if not stdin.closed:
            try:
                stdin.write("stop\n")
                stdin.flush()
            except BrokenPipeError:
                pass  # it has ended already (a signal): its status says how
            finally:
                with contextlib.suppress(BrokenPipeError):
                    stdin.close()
        try:
            self.process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise RelayError(f"the relay did not stop within {STOP_TIMEOUT_S} s") from None
        if self.process.returncode != 0:
            raise RelayError(f"the relay failed: {self.last_error()}")
        if self.t0 is None:
            raise RelayError("the relay was stopped before it was started (`go`)")
        self.report = RelayReport.read(self.out_dir / "relay.json")
        return self.report

    def last_error(self) -> str:
        lines = [ln.strip() for ln in self.stderr_path.read_text(errors="replace").splitlines() if ln.strip()]
        if lines:
            return lines[-1].removeprefix("rtcbench-relay: ")
        return f"it ended with status {self.process.returncode} and said nothing"


def config(
    bed: Testbed,
    variant: Variant,
    seed: int,
    out_dir: Path,
    *,
    capture: bool = False,
    trace: bool = False,
    udp_head: int = UDP_HEAD,
) -> dict[str, Any]:
    """The relay's configuration: the simulator's plan of the scenario's network for `seed`, and
    the testbed's interfaces."""
    plan = json.loads(_core.network_plan(variant.core, seed))
    interfaces = [
        {
            "node": h.node,
            "name": h.net_interface,
            "host_ip": str(h.address.ip),
            "host_mac": h.mac,
        }
        for h in bed.topology.hosts
    ]
    return {
        "plan": plan,
        "interfaces": interfaces,
        "out_dir": str(out_dir),
        "capture": capture,
        "trace": trace,
        "udp_head": udp_head,
        "cpu": bed.relay_cpu,
    }


def start(
    bed: Testbed,
    variant: Variant,
    *,
    seed: int,
    out_dir: Path,
    capture: bool = False,
    trace: bool = False,
    udp_head: int = UDP_HEAD,
) -> Relay:
    """Starts the relay for `variant` in `bed`'s net namespace and waits until its sockets are
    open; it forwards nothing until `Relay.go`. Its files go to `out_dir`: with `capture`, the
    pcaps; with `trace`, the packet log and link samples an emulated or browser run's tables are
    made from (`rtcbench.emulation.trace`), showing the first `udp_head` bytes of each UDP payload
    (at most `MAX_UDP_HEAD`)."""
    exe = binary()
    out_dir.mkdir(parents=True, exist_ok=True)
    cfg = config(bed, variant, seed, out_dir, capture=capture, trace=trace, udp_head=udp_head)
    stderr_path = out_dir / "relay.stderr"
    process = binaries.launch(bed, None, exe, cfg, out_dir / "relay-config.json", stderr_path)
    relay = Relay(process, out_dir, stderr_path)
    stdout = pipe(process.stdout)
    readable, _, _ = select.select([stdout], [], [], READY_TIMEOUT_S)
    line = stdout.readline() if readable else ""
    stdout.close()
    if line.strip() != "ready":
        if process.poll() is None:
            process.kill()
        process.wait()
        with contextlib.suppress(BrokenPipeError):
            pipe(process.stdin).close()
        raise RelayError(f"the relay did not start: {relay.last_error()}")
    return relay
