"""Measures rtcbench's cross-traffic agents on a real testbed (ADR 0002): how late CBR datagrams
leave (the send time each carries against its schedule), how late flows start and stop, and the
agents' CPU time. Runs as root from the repository: `.venv/bin/python
docs/adr/0002-cross-traffic-agents/measure.py`. The net namespace's kernel forwards (no relay
yet) and a tbf shaper at 20 Mbit/s stands in for B's link.

Bulk CUBIC from A to B (20 Mbit/s shaper) and two CBR flows from C to A, 2 and 12 Mbit/s of
1200-byte packets, for 10 s.
"""

from __future__ import annotations

import os
import socket
import struct
import tempfile
import threading
import time
from pathlib import Path

import rtcbench
from rtcbench import testbed
from rtcbench.testbed import _linux, cross

SCENARIO = """
id = "adr-0002"
duration = "11s"
[[links]]
name = "ab"
from = "A"
to = "B"
delay = "0ms"
[[links]]
name = "ba"
from = "B"
to = "A"
delay = "0ms"
[[links]]
name = "ca"
from = "C"
to = "A"
delay = "0ms"
[[links]]
name = "ac"
from = "A"
to = "C"
delay = "0ms"
[[tcp]]
from = "A"
to = "B"
start = "500ms"
stop = "10500ms"
[[cbr]]
from = "C"
to = "A"
rate = "2Mbps"
start = "500ms"
stop = "10500ms"
[[cbr]]
from = "C"
to = "A"
rate = "12Mbps"
start = "500ms"
stop = "10500ms"
"""


def percentiles(values: list[float]) -> str:
    v = sorted(values)
    p50, p99 = (v[min(len(v) - 1, int(q * len(v)))] * 1e6 for q in (0.5, 0.99))
    return f"p50 {p50:.0f} µs, p99 {p99:.0f} µs, max {v[-1] * 1e6:.0f} µs ({len(v)} packets)"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.toml"
        path.write_text(SCENARIO)
        variant = rtcbench.resolve(path)[0]
        flows = cross.plan(variant)
        with testbed.build(variant) as bed:
            bed.run(None, ["sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"], check=True)
            dev = bed.topology.host("B").net_interface
            tbf = ["tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", "20mbit"]
            bed.run(None, [*tbf, "burst", "20kb", "limit", "30000"], check=True)
            c = bed.topology.host("C").net_interface

            def open_capture() -> socket.socket:
                s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
                s.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)  # SO_RCVBUFFORCE
                s.bind((c, 0))
                s.settimeout(0.2)
                return s

            capture = _linux.call_in_netns(bed.netns_path(None), open_capture)
            frames: list[bytes] = []
            done = threading.Event()

            def read() -> None:
                while not done.is_set():
                    try:
                        frames.append(capture.recv(2048))
                    except TimeoutError:
                        continue

            reader = threading.Thread(target=read)
            reader.start()
            traffic = cross.start(bed, flows, end_s=11.0, log_dir=Path(tmp) / "logs")
            t0 = traffic.go()
            time.sleep(max(0.0, t0 + 10.4 - time.monotonic()))
            ticks = os.sysconf("SC_CLK_TCK")
            cpu = {}
            for a in traffic.agents:
                fields = Path(f"/proc/{a.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
                cpu[f"{a.role} at {a.node}"] = (int(fields[11]) + int(fields[12])) / ticks
            traffic.wait(20)
            done.set()
            reader.join()
            capture.close()
        logs = traffic.logs()
    by_port = {f.src_port: f for f in flows if isinstance(f, cross.CbrFlow)}
    late: dict[str, list[float]] = {f.name: [] for f in by_port.values()}
    for frame in frames:
        ip = frame[14:]
        if ip[9] != 17:
            continue
        header = (ip[0] & 0x0F) * 4
        sport = struct.unpack("!H", ip[header : header + 2])[0]
        flow = by_port.get(sport)
        if flow is None:
            continue
        seq, t_ns = struct.unpack("!QQ", ip[header + 8 : header + 24])
        scheduled = flow.start_s + seq * flow.packet_size_bytes * 8 / flow.rate_bps
        late[flow.name].append(t_ns / 1e9 - scheduled)
    for name, values in late.items():
        print(f"{name} departures late by {percentiles(values)}")
    for name, log in logs.items():
        planned = next(f for f in flows if f.name == name)
        assert log.start_s is not None and log.stop_s is not None
        print(
            f"{name}: started {(log.start_s - planned.start_s) * 1e6:.0f} µs late, "
            f"stopped {(log.stop_s - planned.stop_s) * 1e6:.0f} µs late, "
            f"delivered {log.rate_bps(planned.start_s, planned.stop_s) / 1e6:.2f} Mbit/s of payload"
        )
    for agent, seconds in cpu.items():
        print(f"{agent}: {seconds:.2f} s of CPU over 10.4 s")


if __name__ == "__main__":
    main()
