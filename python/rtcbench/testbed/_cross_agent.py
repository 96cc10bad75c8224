"""The cross-traffic agent: kernel TCP and UDP CBR between emulated hosts (docs/emulation.md,
"Cross traffic"; why our own agent and not iperf3: docs/adr/0002-cross-traffic-agents.md).

One process per node and role, started by `rtcbench.testbed.cross` in the node's namespace:

- a **source** runs every flow that starts at its node: TCP flows (bulk, or the on/off
  application of RFC 8868 §5.1 / RFC 8867 §5.7, one connection per flow as in the simulator) and
  CBR flows paced by the monotonic clock;
- a **sink** receives every flow that ends at its node and counts what it delivers.

Standard library only, run by path (`python -I -S _cross_agent.py ROLE`): it starts in tens of
milliseconds, without rtcbench's own imports.

Protocol on stdin/stdout: the agent reads one line of JSON (its configuration), opens its sockets,
writes `ready`, then waits for one line `go T0_NS`: T0_NS is the run's start instant on
CLOCK_MONOTONIC, which every namespace shares, and every time in the configuration and the logs
is in seconds after it. A setup error is one line on stderr and exit status 2.

The log is JSON Lines, one record per line, every record with `flow`, `event` and `t` (seconds
after the start instant); `rtcbench.testbed.cross.read_logs` reads it. Each agent first writes
`scheduling` (flow null; `policy`: fifo or normal, `AGENT_PRIORITY`). A source writes `start`,
`connected` (with the socket's `cc`), `burst` (`start`, `size`; `t` is when the last byte was
acknowledged), `stop` (`sent` bytes, `datagrams`) and `error` (`message`). A sink writes
`accepted`, `delivered` per interval (`t` is the interval's start; `bytes` of payload,
`datagrams` for CBR), `closed` (`how`: eof or reset) and, at its end, `end` (`bytes`,
`datagrams`, `first` and `last` delivery, or null). A source ends with `timing` (flow null):
how late it kept its schedule (`deadlines`: `count`, `p50_us`, `p99_us`, `max_us`; `Lateness`).

The on/off application and the CBR schedule are sans-IO (`OnOff`, `CbrSchedule`), as in the
simulator (`crates/rtcbench-sim/src/traffic/{on_off,cbr}.rs`), which they follow step by step.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import math
import os
import random
import selectors
import signal
import socket
import struct
import sys
import termios
import time
from collections.abc import Callable
from typing import IO, Any

TCP_CONGESTION_NAME_MAX = 16
"""Bytes of a congestion control's name (Linux TCP_CA_NAME_MAX)."""

UDP_IPV4_HEADERS = 28
"""IPv4 (20) and UDP (8) headers: a CBR datagram's payload is its packet size less these."""

CBR_HEADER = struct.Struct("!QQ")
"""What a CBR payload starts with, where it has room: sequence number and send time (ns after the
start instant). The rest is zeros."""

FINE_WAIT_S = 0.002
"""Below this, the agent sleeps to the deadline (nanosecond timer) instead of waiting in epoll,
whose timeout counts whole milliseconds."""

ACK_POLL_S = 0.001
"""While an on/off burst is written but not yet acknowledged, how often the source asks the
kernel how much is outstanding (SIOCOUTQ): the kernel signals no event when all is acknowledged."""

SINK_LINGER_S = 0.25
"""A sink stays this long after the end of the run, reading but counting nothing, so that no
source whose flow stops at the end sees it reset by a sink that ended first."""

CHUNK = 1 << 18
"""Bytes a source hands the kernel per send call."""

AGENT_PRIORITY = 1
"""An agent runs SCHED_FIFO at this priority, the lowest real-time one, where it may (root): at
normal priority on a busy 2-core machine a source's departures were late by 6.5 ms at p99, at this
one by 0.07-1 ms (ADR 0002), and a sink read a datagram 90 ms after it arrived while two busy
loops held both cores. Agents never spin, and the relay must run above them."""

_SIOCOUTQ = termios.TIOCOUTQ
_PR_SET_TIMERSLACK = 29


class SetupError(Exception):
    """A flow cannot be set up; the message is one line naming the flow."""


class Stopped(Exception):
    """SIGTERM: end now, with complete logs."""


# -- sans-IO models --------------------------------------------------------------------------------


def idle_time(rng: random.Random, mean_s: float) -> float:
    """An exponentially distributed idle time (inverse transform of a uniform draw), as the
    simulator's `on_off::idle_time`."""
    return -math.log(1.0 - rng.random()) * mean_s


class OnOff:
    """The on/off application of a short TCP flow (RFC 8868 §5.1, RFC 8867 §5.7), as
    `rtcbench-sim`'s `traffic::on_off::OnOff`: a burst of `files` files of uniform size in
    [size_min, size_max] bytes, then an exponential idle time of mean `idle_mean_s` once the burst
    is acknowledged. Draws come from `rng` in the simulator's order (the initial idle time if
    `on` is false; per burst, the files' sizes; per acknowledged burst, the idle time)."""

    def __init__(
        self,
        size_min: int,
        size_max: int,
        files: int,
        idle_mean_s: float,
        on: bool,
        start_s: float,
        rng: random.Random,
    ) -> None:
        self.size_min, self.size_max, self.files, self.idle_mean_s = size_min, size_max, files, idle_mean_s
        self.rng = rng
        self.idle_until: float | None = start_s if on else start_s + idle_time(rng, idle_mean_s)
        self.busy: tuple[float, int] | None = None
        """(start, size) of the burst being sent."""

    def poll_timeout(self) -> float | None:
        """When the next burst begins, while idle."""
        return self.idle_until

    def on_timeout(self, now: float) -> int | None:
        """The bytes of a burst that begins at `now`, if one is due."""
        if self.idle_until is None or self.idle_until > now:
            return None
        size = sum(self.rng.randint(self.size_min, self.size_max) for _ in range(self.files))
        self.idle_until, self.busy = None, (now, size)
        return size

    def on_all_acked(self, now: float) -> tuple[float, int] | None:
        """Everything written is acknowledged at `now`: the burst (start, size) is over and an idle
        time starts."""
        if self.busy is None:
            return None
        burst, self.busy = self.busy, None
        self.idle_until = now + idle_time(self.rng, self.idle_mean_s)
        return burst


class CbrSchedule:
    """Constant-bit-rate emissions, as `rtcbench-sim`'s `traffic::cbr::CbrSource` at a constant
    rate: packet i leaves at start + i · size / rate, none at or after `stop`."""

    def __init__(self, rate_bps: int, packet_size: int, start_s: float, stop_s: float) -> None:
        self.interval_s = packet_size * 8 / rate_bps
        self.start_s, self.stop_s = start_s, stop_s
        self.sent = 0

    def instant(self, i: int) -> float:
        """When packet i leaves."""
        return self.start_s + i * self.interval_s

    def poll_timeout(self) -> float | None:
        """When the next packet leaves, if any."""
        t = self.instant(self.sent)
        return t if t < self.stop_s else None

    def on_timeout(self, now: float) -> int:
        """How many packets are due at `now` (more than one if the caller woke late: the rate is
        kept, as a token bucket of one packet would)."""
        due = 0
        while (t := self.poll_timeout()) is not None and t <= now:
            self.sent += 1
            due += 1
        return due


class Lateness:
    """How late a source acted against its schedule (each CBR packet against its instant, each
    TCP flow's start and stop, each on/off burst's start), in 1 µs bins as the relay and the media
    agents keep theirs (`rtcbench_live::stats`), so its percentiles are exact to the microsecond.
    The run's validity holds it to a goal (`rtcbench.testbed.timing`)."""

    def __init__(self) -> None:
        self.bins: dict[int, int] = {}
        self.count = 0
        self.max_us = 0.0

    def record(self, late_s: float) -> None:
        late_us = max(0.0, late_s * 1e6)
        k = int(late_us)
        self.bins[k] = self.bins.get(k, 0) + 1
        self.count += 1
        self.max_us = max(self.max_us, late_us)

    def quantile_us(self, q: float) -> float:
        """The upper edge of the bin that holds the `q` quantile (never above the maximum)."""
        if self.count == 0:
            return 0.0
        rank = min(max(1, math.ceil(q * self.count)), self.count)
        seen = 0
        for k in sorted(self.bins):
            seen += self.bins[k]
            if seen >= rank:
                return min(float(k + 1), self.max_us)
        return self.max_us

    def summary(self) -> dict[str, float]:
        return {
            "count": self.count,
            "p50_us": self.quantile_us(0.5),
            "p99_us": self.quantile_us(0.99),
            "max_us": round(self.max_us, 3),
        }


# -- I/O ---------------------------------------------------------------------------------------


class Clock:
    """Seconds after the run's start instant, on CLOCK_MONOTONIC (shared by every namespace)."""

    def __init__(self, t0_ns: int) -> None:
        self.t0_ns = t0_ns

    def now(self) -> float:
        return (time.monotonic_ns() - self.t0_ns) / 1e9

    def ns(self) -> int:
        return time.monotonic_ns() - self.t0_ns


class Log:
    """The agent's JSON Lines log, line-buffered so that a killed agent loses at most a line."""

    def __init__(self, path: str) -> None:
        self.file: IO[str] = open(path, "w", buffering=1)  # noqa: SIM115 (closed by close())

    def write(self, flow: str | None, event: str, t: float, **fields: Any) -> None:
        record = {"flow": flow, "event": event, "t": round(t, 6), **fields}
        self.file.write(json.dumps(record, separators=(",", ":")) + "\n")

    def close(self) -> None:
        self.file.close()


def _cc_name(sock: socket.socket) -> str:
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, TCP_CONGESTION_NAME_MAX)
    return raw.split(b"\0", 1)[0].decode()


class TcpSource:
    """One TCP flow at its source: connects at `start`, sends (bulk, or the on/off bursts) until
    `stop`, then closes abruptly (SO_LINGER 0: a reset, and whatever is queued is dropped), as the
    simulator's source "falls silent" at `stop`."""

    def __init__(self, cfg: dict[str, Any], address: str, log: Log, late: Lateness) -> None:
        self.name: str = cfg["name"]
        self.start_s: float = cfg["start_s"]
        self.stop_s: float = cfg["stop_s"]
        self.peer = (cfg["dst_address"], cfg["dst_port"])
        self.log = log
        self.late = late
        self.state = "waiting"  # connecting, open, done
        self.sent = 0
        self.remaining = 0  # bytes of the current burst not yet handed to the kernel
        self.draining = False  # the burst is written; waiting until all is acknowledged
        self.error: str | None = None
        on_off = cfg.get("on_off")
        self.on_off = (
            OnOff(
                on_off["size_min"],
                on_off["size_max"],
                on_off["files"],
                on_off["idle_mean_s"],
                on_off["initially_on"],
                self.start_s,
                random.Random(cfg["rng_key"]),
            )
            if on_off
            else None
        )
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.sock.bind((address, cfg["src_port"]))
            try:
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cfg["cc"].encode())
            except OSError as e:
                raise SetupError(
                    f"{self.name}: the kernel refuses TCP congestion control {cfg['cc']!r} ({e.strerror})"
                ) from None
            # The simulator's sender sends what it has at once (TCP_NODELAY, docs/tcp.md).
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.sock.setblocking(False)
        except OSError as e:
            self.sock.close()
            raise SetupError(f"{self.name}: cannot open its socket on {address}: {e.strerror}") from None
        self.buffer = memoryview(bytes(CHUNK))

    @property
    def done(self) -> bool:
        return self.state == "done"

    def deadline(self, now: float) -> float:
        """When `on_time` has something to do next."""
        if self.state == "waiting":
            return self.start_s
        times = [self.stop_s]
        if self.on_off is not None and (next_burst := self.on_off.poll_timeout()) is not None:
            times.append(next_burst)
        if self.draining:
            times.append(now + ACK_POLL_S)
        return min(times)

    def on_time(self, now: float, sel: selectors.BaseSelector) -> None:
        if self.state == "waiting" and now >= self.start_s:
            self.late.record(now - self.start_s)
            self.log.write(self.name, "start", now)
            err = self.sock.connect_ex(self.peer)
            if err not in (0, errno.EINPROGRESS):
                self._fail(now, sel, f"connect to {self.peer[0]}:{self.peer[1]}: {os.strerror(err)}")
                return
            self.state = "connecting"
            sel.register(self.sock, selectors.EVENT_WRITE, self)
        if self.state in ("connecting", "open") and now >= self.stop_s:
            self.late.record(now - self.stop_s)
            self.close(now, sel)
            return
        if self.on_off is not None and self.state in ("connecting", "open"):
            if self.draining and self._outstanding() == 0:
                self.draining = False
                burst = self.on_off.on_all_acked(now)
                if burst is not None:
                    self.log.write(self.name, "burst", now, start=round(burst[0], 6), size=burst[1])
            due = self.on_off.poll_timeout()
            size = self.on_off.on_timeout(now)
            if size and due is not None:
                self.late.record(now - due)
            if size:
                self.remaining += size
                if self.state == "open":  # idle, so waiting on nothing: now on the socket
                    sel.register(self.sock, selectors.EVENT_WRITE, self)

    def on_ready(self, now: float, sel: selectors.BaseSelector) -> None:
        if self.state == "connecting":
            err = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                self._fail(now, sel, f"connect to {self.peer[0]}:{self.peer[1]}: {os.strerror(err)}")
                return
            self.state = "open"
            self.log.write(self.name, "connected", now, cc=_cc_name(self.sock))
        if self.on_off is not None and self.remaining == 0:
            sel.unregister(self.sock)  # idle until the next burst
            return
        try:
            while self.on_off is None or self.remaining > 0:
                n = CHUNK if self.on_off is None else min(self.remaining, CHUNK)
                sent = self.sock.send(self.buffer[:n])
                self.sent += sent
                if self.on_off is not None:
                    self.remaining -= sent
        except BlockingIOError:
            return
        except OSError as e:
            self._fail(now, sel, f"the connection to {self.peer[0]} broke: {e.strerror}")
            return
        # An on/off burst is all in the kernel: wait for its acknowledgement.
        sel.unregister(self.sock)
        self.draining = True

    def _outstanding(self) -> int:
        """Bytes written and not yet acknowledged (SIOCOUTQ: unsent and unacknowledged)."""
        out: int = struct.unpack("i", fcntl.ioctl(self.sock.fileno(), _SIOCOUTQ, b"\0" * 4))[0]
        return out

    def close(self, now: float, sel: selectors.BaseSelector) -> None:
        """Ends the flow now (at `stop`, or when the agent is stopped)."""
        if self.state == "waiting":
            self.sock.close()
            self.state = "done"
            return
        with contextlib.suppress(KeyError, ValueError):
            sel.unregister(self.sock)
        self.sock.close()  # SO_LINGER 0: a reset
        self.state = "done"
        self.log.write(self.name, "stop", now, sent=self.sent)

    def _fail(self, now: float, sel: selectors.BaseSelector, message: str) -> None:
        self.log.write(self.name, "error", now, message=message)
        self.error = f"{self.name}: {message}"
        self.close(now, sel)


class CbrSource:
    """One CBR flow at its source: datagrams of `packet_size` bytes on the wire from `start` until
    `stop`, paced by the monotonic clock."""

    def __init__(self, cfg: dict[str, Any], address: str, log: Log, late: Lateness) -> None:
        self.name: str = cfg["name"]
        self.start_s: float = cfg["start_s"]
        self.stop_s: float = cfg["stop_s"]
        self.schedule = CbrSchedule(cfg["rate_bps"], cfg["packet_size"], self.start_s, self.stop_s)
        self.payload = bytearray(cfg["packet_size"] - UDP_IPV4_HEADERS)
        self.log = log
        self.late = late
        self.datagrams = 0
        self.send_errors = 0
        self.started = False
        self.stopped = False
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self.sock.bind((address, cfg["src_port"]))
            self.sock.connect((cfg["dst_address"], cfg["dst_port"]))
        except OSError as e:
            self.sock.close()
            raise SetupError(f"{self.name}: cannot open its socket on {address}: {e.strerror}") from None

    @property
    def done(self) -> bool:
        return self.stopped

    def deadline(self, now: float) -> float:
        """When `on_time` has something to do next."""
        next_packet = self.schedule.poll_timeout()
        return self.stop_s if next_packet is None else min(next_packet, self.stop_s)

    def on_time(self, now: float, clock: Clock) -> None:
        if self.stopped:
            return
        first = self.schedule.sent
        due = self.schedule.on_timeout(now)
        if due and not self.started:
            self.started = True
            self.log.write(self.name, "start", now)
        for i in range(first, first + due):
            # How late packet i leaves against its instant (a late wake-up sends what is due at once).
            self.late.record(clock.now() - self.schedule.instant(i))
            if len(self.payload) >= CBR_HEADER.size:
                CBR_HEADER.pack_into(self.payload, 0, self.datagrams, clock.ns())
            try:
                self.sock.send(self.payload)
            except OSError:
                self.send_errors += 1
            self.datagrams += 1
        if now >= self.stop_s:
            self.close(now)

    def close(self, now: float) -> None:
        """Ends the flow now (at `stop`, or when the agent is stopped)."""
        self.stopped = True
        self.sock.close()
        sent = self.datagrams * len(self.payload)
        self.log.write(
            self.name, "stop", now, sent=sent, datagrams=self.datagrams, send_errors=self.send_errors
        )


def run_source(cfg: dict[str, Any], go: Callable[[], Clock], log: Log) -> list[str]:
    """Sets up every flow of this node, waits for `go`, then runs them until each has stopped; the
    flows' errors, as lines. Stopped early (SIGTERM), it ends every flow first, logging it."""
    address = cfg["address"]
    tcp: list[TcpSource] = []
    cbr: list[CbrSource] = []
    sel = selectors.DefaultSelector()
    clock: Clock | None = None
    late = Lateness()
    try:
        for flow in cfg["flows"]:
            if flow["kind"] == "tcp":
                tcp.append(TcpSource(flow, address, log, late))
            else:
                cbr.append(CbrSource(flow, address, log, late))
        clock = go()
        while True:
            now = clock.now()
            for c in cbr:
                c.on_time(now, clock)
            for t in tcp:
                if not t.done:
                    t.on_time(now, sel)
            live: list[TcpSource | CbrSource] = [f for f in tcp if not f.done]
            live += [f for f in cbr if not f.done]
            if not live:
                return [t.error for t in tcp if t.error]
            _wait(clock, sel, min(f.deadline(now) for f in live))
    finally:
        now = clock.now() if clock else 0.0
        for t in tcp:
            if not t.done:
                t.close(now, sel)
        for c in cbr:
            if not c.done:
                c.close(now)
        sel.close()
        if clock is not None:
            log.write(None, "timing", now, deadlines=late.summary())


def _wait(clock: Clock, sel: selectors.BaseSelector, deadline: float) -> None:
    """Handles ready sockets until `deadline`, waking on time: epoll for long waits, a sleep on
    the nanosecond timer for the last `FINE_WAIT_S`."""
    wait = deadline - clock.now()
    for key, _ in sel.select(max(0.0, wait - FINE_WAIT_S)):
        key.data.on_ready(clock.now(), sel)
    rest = deadline - clock.now()
    if 0 < rest <= FINE_WAIT_S:
        time.sleep(rest)


class FlowCount:
    """What a sink has delivered of one flow: the current interval and the totals."""

    def __init__(self, name: str, cbr: bool) -> None:
        self.name, self.cbr = name, cbr
        self.bin = -1
        self.bin_bytes = self.bin_datagrams = 0
        self.bytes = self.datagrams = 0
        self.first: float | None = None
        self.last: float | None = None


class Sink:
    """Every flow that ends at this node: a TCP listener on the sink port, a UDP socket on the CBR
    port, and what each flow delivers per interval."""

    def __init__(self, cfg: dict[str, Any], log: Log) -> None:
        self.log = log
        self.interval_s: float = cfg["interval_s"]
        self.end_s: float = cfg["end_s"]
        self.finished = False
        self.flows: dict[tuple[str, int], FlowCount] = {}
        for f in cfg["flows"]:
            self.flows[(f["src_address"], f["src_port"])] = FlowCount(f["name"], f["kind"] == "cbr")
        self.sel = selectors.DefaultSelector()
        self.conns: dict[socket.socket, FlowCount | None] = {}
        self.buffer = bytearray(1 << 18)
        self.view = memoryview(self.buffer)
        address = cfg["address"]
        self.listener: socket.socket | None = None
        self.udp: socket.socket | None = None
        try:
            if any(f["kind"] == "tcp" for f in cfg["flows"]):
                self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                self.listener.bind((address, cfg["tcp_port"]))
                self.listener.listen(len(cfg["flows"]) + 8)
                self.listener.setblocking(False)
                self.sel.register(self.listener, selectors.EVENT_READ, "accept")
            if any(f["kind"] == "cbr" for f in cfg["flows"]):
                self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                # SO_RCVBUFFORCE (root): a late wake-up must not drop datagrams here.
                self.udp.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)
                self.udp.bind((address, cfg["cbr_port"]))
                self.udp.setblocking(False)
                self.sel.register(self.udp, selectors.EVENT_READ, "udp")
        except OSError as e:
            self.close()
            raise SetupError(f"cannot listen on {address}: {e.strerror}") from None

    def run(self, go: Callable[[], Clock]) -> None:
        """Waits for `go`, then counts until the end of the run (or until stopped: SIGTERM) and
        writes every flow's totals; then lingers (`SINK_LINGER_S`)."""
        clock: Clock | None = None
        try:
            clock = go()
            while (now := clock.now()) < self.end_s + SINK_LINGER_S:
                if now >= self.end_s and not self.finished:
                    self.finish(self.end_s)
                for key, _ in self.sel.select(min(self.end_s + SINK_LINGER_S - now, 1.0)):
                    if key.data == "accept":
                        self._accept(clock.now())
                    elif key.data == "udp":
                        self._datagrams(clock)
                    else:
                        self._receive(key.fileobj, clock.now())  # type: ignore[arg-type]
        finally:
            if clock is not None and not self.finished:
                self.finish(min(clock.now(), self.end_s))
            self.close()

    def _accept(self, now: float) -> None:
        assert self.listener is not None
        while True:
            try:
                conn, peer = self.listener.accept()
            except BlockingIOError:
                return
            conn.setblocking(False)
            flow = self.flows.get(peer)
            if flow is None:
                self.log.write(None, "unknown", now, peer=f"{peer[0]}:{peer[1]}")
            else:
                self.log.write(flow.name, "accepted", now)
            self.conns[conn] = flow
            self.sel.register(conn, selectors.EVENT_READ, "tcp")

    def _receive(self, conn: socket.socket, now: float) -> None:
        flow = self.conns[conn]
        how = None
        while True:
            try:
                n = conn.recv_into(self.buffer)
            except BlockingIOError:
                break
            except ConnectionResetError:
                how = "reset"
                break
            if n == 0:
                how = "eof"
                break
            if flow is not None:
                self._count(flow, now, n)
        if how is not None:
            self.sel.unregister(conn)
            conn.close()
            del self.conns[conn]
            if flow is not None:
                self.log.write(flow.name, "closed", now, how=how)

    def _datagrams(self, clock: Clock) -> None:
        assert self.udp is not None
        while True:
            try:
                n, peer = self.udp.recvfrom_into(self.buffer)
            except BlockingIOError:
                return
            flow = self.flows.get(peer)
            if flow is not None:
                self._count(flow, clock.now(), n, datagram=True)

    def _count(self, flow: FlowCount, now: float, n: int, datagram: bool = False) -> None:
        if self.finished:
            return  # after the end of the run
        k = math.floor(now / self.interval_s)
        if k != flow.bin:
            self._flush(flow)
            flow.bin = k
        flow.bin_bytes += n
        flow.bytes += n
        if datagram:
            flow.bin_datagrams += 1
            flow.datagrams += 1
        if flow.first is None:
            flow.first = now
        flow.last = now

    def _flush(self, flow: FlowCount) -> None:
        if flow.bin_bytes or flow.bin_datagrams:
            extra = {"datagrams": flow.bin_datagrams} if flow.cbr else {}
            self.log.write(flow.name, "delivered", flow.bin * self.interval_s, bytes=flow.bin_bytes, **extra)
        flow.bin_bytes = flow.bin_datagrams = 0

    def finish(self, now: float) -> None:
        """Writes what is counted and each flow's totals, once."""
        self.finished = True
        for flow in self.flows.values():
            self._flush(flow)
            extra = {"datagrams": flow.datagrams} if flow.cbr else {}
            first = None if flow.first is None else round(flow.first, 6)
            last = None if flow.last is None else round(flow.last, 6)
            self.log.write(flow.name, "end", now, bytes=flow.bytes, first=first, last=last, **extra)

    def close(self) -> None:
        for conn in self.conns:
            conn.close()
        self.conns.clear()
        for s in (self.listener, self.udp):
            if s is not None:
                s.close()
        self.sel.close()


def _on_stop(signum: int, frame: Any) -> None:
    raise Stopped


def _precise_timers() -> None:
    """Timer slack 1 µs (PR_SET_TIMERSLACK): the default 50 µs would delay every CBR packet."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_TIMERSLACK, 1000, 0, 0, 0)


def _schedule() -> str:
    """Puts the agent on SCHED_FIFO (`AGENT_PRIORITY`) where it may; the policy it has."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(AGENT_PRIORITY))
    except OSError:
        return "normal"
    return "fifo"


def main(argv: list[str]) -> int:
    try:
        return _main(argv)
    except Stopped:
        return 0


def _main(argv: list[str]) -> int:
    # Ctrl-C reaches the agents too (the terminal signals the whole process group): both end the
    # agent with complete logs, quietly.
    signal.signal(signal.SIGTERM, _on_stop)
    signal.signal(signal.SIGINT, _on_stop)
    role = argv[1] if len(argv) > 1 else ""
    if role not in ("source", "sink"):
        print(f"usage: {argv[0]} source|sink (configuration on stdin)", file=sys.stderr)
        return 2
    line = sys.stdin.readline()
    if not line:
        return 0
    cfg = json.loads(line)
    _precise_timers()
    log = Log(cfg["log"])
    log.write(None, "scheduling", 0.0, policy=_schedule())

    def go() -> Clock:
        """Says the agent is ready and waits for the start instant."""
        print("ready", flush=True)
        words = sys.stdin.readline().split()
        if len(words) != 2 or words[0] != "go":
            raise Stopped
        return Clock(int(words[1]))

    try:
        if role == "sink":
            Sink(cfg, log).run(go)
            return 0
        errors = run_source(cfg, go, log)
    except SetupError as e:
        print(e, file=sys.stderr)
        return 2
    except Stopped:
        return 0
    finally:
        log.close()
    for line in errors:
        print(line, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
