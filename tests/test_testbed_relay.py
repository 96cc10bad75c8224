"""The emulation relay (crates/rtcbench-live; docs/emulation.md, "The relay"): real packets
between a testbed's namespaces through the scenario's links, built from the simulator's own
elements.

Without root: how the relay is configured and how it refuses what it cannot do. With root, on
real testbeds: a frame takes the links' delay and serialisation and no less; kernel CUBIC alone
fills a 2 Mbit/s link (issue 13's band: above 90 %); a link overloaded by UDP drops what its
queue cannot hold, and the relay's report, drop log and captures account for every frame; a
signal stops the relay at once with its files complete.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

import rtcbench
from rtcbench import _core, tables, testbed
from rtcbench.testbed import cross, relay
from rtcbench.testbed.relay import RelayError
from rtcbench.testbed.relay_log import RELAY_LINKS, relay_links

MISSING = testbed.missing()
needs_root = pytest.mark.skipif(MISSING is not None, reason=f"builds network namespaces: {MISSING}")

# A → B: 2 Mbit/s, 50 ms, a 300 ms buffer; B → A: 50 ms, no capacity limit.
PATH = """
duration = "{duration}"

[[links]]
name = "ab"
from = "A"
to = "B"
capacity = "2Mbps"
delay = "50ms"
queue = {{ size = "{queue}" }}

[[links]]
name = "ba"
from = "B"
to = "A"
delay = "50ms"
"""
CAPACITY_BPS = 2_000_000
CAPTURE_EPOCH_S = 1_767_225_600  # time zero in a capture: 2026-01-01 (rtcbench_wire::pcap)


def variant(
    tmp_path: Path, name: str, flows: str, *, duration: str = "10s", queue: str = "300ms"
) -> rtcbench.Variant:
    path = tmp_path / f"{name}.toml"
    path.write_text(f'id = "{name}"\n' + PATH.format(duration=duration, queue=queue) + flows)
    return rtcbench.resolve(path)[0]


BULK_CUBIC = """
[[tcp]]
name = "cubic"
from = "A"
to = "B"
cc = "cubic"
"""


def test_the_relay_runs_the_simulators_plan_of_the_network() -> None:
    (v,) = [v for v in rtcbench.resolve("rfc8867-5.1") if "link-rate" in v.variant and "50ms" in v.variant]
    plan = json.loads(_core.network_plan(v.toml, 3))
    assert [link["name"] for link in plan["links"]] == ["forward", "backward"]
    assert plan["seed"] == 3 and plan["duration"] == "100s"
    # Each route a list of element hops: link 0 (forward) and link 1 (backward), entered at port 0.
    hops = {
        (r["from"], r["to"]): [(h["element"], h["from"], h["to"]) for h in r["hops"]] for r in plan["routes"]
    }
    assert hops == {("A", "B"): [(0, 0, 1)], ("B", "A"): [(1, 0, 1)]}
    assert plan["queues"] == ["forward", "backward"] and plan["bsses"] == plan["cells"] == []
    assert plan["background"] == []
    forward = plan["links"][0]
    assert forward["delay"] == "50ms" and forward["queue"] == {"time": "300ms"}
    # RFC 8867 §5.1's steps: 1, 2.5, 0.6, 1 Mbit/s at 0, 40, 60 and 80 s.
    assert forward["capacity"]["steps_us"] == [
        [0, "1Mbps"],
        [40_000_000, "2500kbps"],
        [60_000_000, "600kbps"],
        [80_000_000, "1Mbps"],
    ]


def test_udp_background_is_planned_as_the_simulator_makes_it() -> None:
    (v,) = [
        v for v in rtcbench.resolve("rfc8867-5.1") if "udp-background" in v.variant and "50ms" in v.variant
    ]
    plan = json.loads(_core.network_plan(v.toml, 1))
    # RFC 8867 §4.2: 4 Mbit/s less the capacity left to the flows (1, 2.5, 0.6, 1 Mbit/s).
    assert plan["background"] == [
        {
            "link": 0,
            "steps_us": [
                [0, "3Mbps"],
                [40_000_000, "1500kbps"],
                [60_000_000, "3400kbps"],
                [80_000_000, "3Mbps"],
            ],
            "packet_size": "1200B",
        }
    ]
    assert plan["links"][0]["capacity"]["steps_us"] == [[0, "4Mbps"]]


def test_a_relay_that_is_not_built_is_a_missing_part_of_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(relay.RELAY_ENV, "/nonexistent/rtcbench-relay")
    with pytest.raises(testbed.TestbedUnavailable) as e:
        relay.binary()
    assert str(e.value) == (
        "the emulation relay is not built: $RTCBENCH_RELAY names /nonexistent/rtcbench-relay, which is "
        "not an executable; run `make build`"
    )


def test_a_configuration_the_relay_cannot_use_is_one_line_and_status_2(tmp_path: Path) -> None:
    cfg = tmp_path / "relay.json"
    cfg.write_text(json.dumps({"plan": {}, "interfaces": [], "out_dir": str(tmp_path)}))
    done = subprocess.run([relay.binary(), cfg], capture_output=True, text=True, timeout=10)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"rtcbench-relay: {cfg}: missing field `scenario`"), done.stderr


# -- on real testbeds ---------------------------------------------------------------------------

ECHO_SERVER = """
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 9000))
while True:
    data, peer = s.recvfrom(2048)
    s.sendto(data, peer)
"""
ECHO_CLIENT = """
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
for _ in range(int(sys.argv[2])):
    t = time.monotonic()
    s.sendto(b"x" * 1222, (sys.argv[1], 9000))  # 1250 bytes with the IPv4 and UDP headers
    s.recv(2048)
    print((time.monotonic() - t) * 1e3)
    time.sleep(0.05)
"""


@needs_root
def test_a_frame_takes_the_links_delay_and_serialisation_and_no_less(tmp_path: Path) -> None:
    v = variant(tmp_path, "relay-echo", BULK_CUBIC)  # the flow is not started: the echo is alone
    with testbed.build(v) as bed:
        r = relay.start(bed, v, seed=1, out_dir=tmp_path / "relay")
        r.go()
        bed.popen("B", [sys.executable, "-c", ECHO_SERVER])
        time.sleep(0.2)
        b = str(bed.topology.host("B").address.ip)
        done = bed.run(
            "A", [sys.executable, "-c", ECHO_CLIENT, b, "10"], capture_output=True, text=True, check=True
        )
        report = r.stop()
    rtts = [float(x) for x in done.stdout.split()]
    # 2 × 50 ms, and 1250 bytes at 2 Mbit/s (5 ms) on the way out; the way back has no limit.
    assert len(rtts) == 10 and min(rtts) >= 105.0, rtts
    # What the echo takes beyond 105 ms is the relay waking late for each frame (here 80 µs at the
    # median, under 300 µs at most) and the hosts' Python sockets and veths: a median of
    # 105.5-105.7 ms on an idle machine, at this code and at 82620cb alike, and 106.07 ms in CI
    # under memory reclaim (the full tier holds ~20 GB), which failed the 106 ms bound this had.
    # 107 ms still catches a relay that holds a frame for a scheduling tick.
    assert statistics.median(rtts) < 107.0, rtts
    assert report.links["ab"].packets_out == report.links["ba"].packets_out == 10
    assert report.scheduling == "fifo" and report.departures == 20


SEND_FOR = """
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    s.sendto(b"x" * 100, (sys.argv[1], 9000))
    time.sleep(0.01)
"""


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


@needs_root
def test_frames_before_go_do_not_keep_the_relay_busy(tmp_path: Path) -> None:
    # Before `go` the relay waits for its start; frames a host sends meanwhile (its browser
    # starting) stay in the relay's sockets. They made that wait a busy loop at real-time
    # priority on the forwarding CPU, which starved a relay already running there: Firefox's
    # runs side by side stalled 15-25 s, once per run, while the other one started.
    v = variant(tmp_path, "relay-before-go", BULK_CUBIC)
    with testbed.build(v) as bed:
        r = relay.start(bed, v, seed=1, out_dir=tmp_path / "relay")
        b = str(bed.topology.host("B").address.ip)
        sender = bed.popen("A", [sys.executable, "-c", SEND_FOR, b, "1.5"])
        time.sleep(0.3)
        before = _cpu_s(r.process.pid)
        time.sleep(1.0)
        busy = _cpu_s(r.process.pid) - before
        sender.wait(5)
        r.go()
        report = r.stop()
    # Measured: 0.97 s of CPU in that second before the fix (a whole core), 0.00 after.
    assert busy < 0.1, busy
    assert report.scheduling == "fifo"


def _allowed_cpus(pid: int, tid: int) -> str:
    status = Path(f"/proc/{pid}/task/{tid}/status").read_text()
    return next(line.split()[1] for line in status.splitlines() if line.startswith("Cpus_allowed_list"))


def _rps_mask(netns: str, interface: str) -> int:
    out = subprocess.run(
        ["ip", "netns", "exec", netns, "cat", f"/sys/class/net/{interface}/queues/rx-0/rps_cpus"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.strip().replace(",", ""), 16)


@needs_root
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="steering needs two CPUs")
def test_the_relay_forwards_on_a_cpu_the_namespaces_packet_processing_is_steered_off(
    tmp_path: Path,
) -> None:
    """A veth runs the receiving namespace's stack inside the sender's send call: the relay keeps
    one CPU and every veth end steers its receive processing (RPS) to the others."""
    v = variant(tmp_path, "relay-cpu", BULK_CUBIC)
    with testbed.build(v) as bed:
        cpu = bed.relay_cpu
        assert cpu == max(os.sched_getaffinity(0))
        others = sum(1 << c for c in os.sched_getaffinity(0) if c != cpu)
        ends = [(bed.topology.net_netns, h.net_interface) for h in bed.topology.hosts]
        ends += [(h.netns, h.interface) for h in bed.topology.hosts]
        assert {_rps_mask(ns, i) for ns, i in ends} == {others}
        r = relay.start(bed, v, seed=1, out_dir=tmp_path / "relay")
        r.go()
        pid = r.process.pid
        threads = {
            Path(f"/proc/{pid}/task/{t}/comm").read_text().strip(): _allowed_cpus(pid, int(t))
            for t in os.listdir(f"/proc/{pid}/task")
        }
        report = r.stop()
    assert threads["rtcbench-relay"] == str(cpu), threads
    assert str(cpu) not in threads["relay-writer"].split(","), threads
    assert report.cpu == cpu


@needs_root
def test_kernel_cubic_alone_fills_the_link(tmp_path: Path) -> None:
    v = variant(tmp_path, "relay-cubic", BULK_CUBIC, duration="12s")
    flows = cross.plan(v, seed=1)
    with testbed.build(v) as bed:
        r = relay.start(bed, v, seed=1, out_dir=tmp_path / "relay", capture=True)
        traffic = cross.start(bed, flows, end_s=12.0, log_dir=tmp_path / "cross")
        t0 = r.go()
        traffic.go(t0)
        traffic.wait(20.0)
        time.sleep(0.5)  # what was still on its way arrives
        report = r.stop()
    goodput = traffic.logs()["cubic"].rate_bps(4.0, 12.0)
    assert goodput > 0.9 * CAPACITY_BPS, f"{goodput / 1e6:.3f} Mbit/s"
    # Every frame is accounted for: delivered, dropped by a link, or refused.
    dropped = sum(n for link in report.links.values() for n in link.dropped.values())
    assert report.frames_in == report.frames_out + dropped + sum(report.refused.values())
    # And never faster than the link: in every second of the relay's capture of what it sent.
    departures = pcap_records(tmp_path / "relay" / "relay-out.pcap")
    sent_by_a = [(t, size) for t, size, dst in departures if dst == bed.topology.host("B").address.ip.packed]
    for second in range(12):
        sent = sum(size for t, size in sent_by_a if second <= t < second + 1)
        assert sent * 8 <= CAPACITY_BPS + 1500 * 8, (second, sent)


def pcap_records(path: Path) -> list[tuple[float, int, bytes]]:
    """(seconds since the run's start, length, IPv4 destination) of each packet of a relay's
    capture (little-endian libpcap, microsecond timestamps, raw IP)."""
    data = path.read_bytes()
    assert struct.unpack_from("<IHHiIII", data)[0::6] == (0xA1B2C3D4, 101)
    records, at = [], 24
    while at < len(data):
        sec, usec, incl, orig = struct.unpack_from("<IIII", data, at)
        packet = data[at + 16 : at + 16 + incl]
        records.append((sec + usec / 1e6 - CAPTURE_EPOCH_S, orig, packet[16:20]))
        at += 16 + incl
    return records


CBR_OVERLOAD = """
[[cbr]]
name = "cbr"
from = "A"
to = "B"
rate = "3Mbps"
start = "200ms"
stop = "2200ms"
"""


@needs_root
def test_an_overloaded_link_drops_what_its_queue_cannot_hold_and_says_so(tmp_path: Path) -> None:
    v = variant(tmp_path, "relay-overload", CBR_OVERLOAD, duration="3s", queue="50ms")
    (flow,) = cross.plan(v, seed=1)
    assert isinstance(flow, cross.CbrFlow)
    out = tmp_path / "relay"
    with testbed.build(v) as bed:
        r = relay.start(bed, v, seed=1, out_dir=out, capture=True)
        traffic = cross.start(bed, [flow], end_s=3.0, log_dir=tmp_path / "cross")
        t0 = r.go()
        traffic.go(t0)
        traffic.wait(10.0)
        report = r.stop()
    ab = report.links["ab"]
    sent = ab.packets_in
    # The host took every frame as it came: no departure waited for room in a send buffer.
    assert (report.send_waits, report.send_wait_max_ms, report.send_wait_total_s) == (0, 0.0, 0.0)
    # 3 Mbit/s into 2 Mbit/s for 2 s: a third is dropped, less the 50 ms the queue holds.
    assert ab.dropped == {"queue_full": pytest.approx(sent / 3, rel=0.1)}
    assert ab.packets_out + ab.dropped["queue_full"] == sent
    log = traffic.logs()["cbr"]
    assert log.delivered_datagrams == ab.packets_out
    assert log.rate_bps(0.5, 2.0) == pytest.approx(
        CAPACITY_BPS * (flow.packet_size_bytes - 28) / flow.packet_size_bytes, rel=0.03
    )

    drops = (out / "relay-drops.csv").read_text().splitlines()
    assert drops[0] == "t_us,arrived_us,link,reason,size,protocol,src,src_port,dst,dst_port"
    rows = [line.split(",") for line in drops[1:]]
    assert len(rows) == ab.dropped["queue_full"]
    assert {(row[2], row[3], row[4], row[5], row[9]) for row in rows} == {
        ("ab", "queue_full", str(flow.packet_size_bytes), "17", str(cross.CBR_PORT))
    }
    assert all(0.2e6 <= int(row[0]) <= 2.3e6 and row[0] == row[1] for row in rows)  # dropped on arrival
    # The captures hold every frame as it arrived and as it left, and tshark reads them.
    from tests.test_pcap import tshark_fields

    arrived = tshark_fields(out / "relay-in.pcap", "udp.dstport", "ip.len")
    left = tshark_fields(out / "relay-out.pcap", "udp.dstport", "ip.len")
    assert (len(arrived), len(left)) == (report.frames_in, report.frames_out)
    assert {tuple(row) for row in left} == {(str(cross.CBR_PORT), str(flow.packet_size_bytes))}
    assert sorted(p.name for p in out.iterdir()) == [
        "relay-config.json",
        "relay-drops.csv",
        "relay-in.pcap",
        "relay-out.pcap",
        "relay.json",
        "relay.stderr",
    ]


@needs_root
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_relay_at_once_with_its_report(sig: signal.Signals, tmp_path: Path) -> None:
    v = variant(tmp_path, "relay-signal", BULK_CUBIC)
    out = tmp_path / "relay"
    with testbed.build(v) as bed:
        r = relay.start(bed, v, seed=1, out_dir=out, capture=True)
        r.go()
        time.sleep(0.2)
        asked = time.monotonic()
        r.process.send_signal(sig)
        r.process.wait(5)
        took = time.monotonic() - asked
        report = r.stop()  # the report of a relay that has ended
    assert took < 1.0
    assert r.process.returncode == 0 and report.frames_in == 0
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


@needs_root
def test_a_relay_that_fails_to_start_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    v = variant(tmp_path, "relay-fail", BULK_CUBIC)
    real = relay.config

    def wrong_interface(*args: object, **kwargs: object) -> dict[str, object]:
        cfg = real(*args, **kwargs)  # type: ignore[arg-type]
        cfg["interfaces"][0]["name"] = "rb-missing"
        return cfg

    monkeypatch.setattr(relay, "config", wrong_interface)
    with testbed.build(v) as bed, pytest.raises(RelayError) as e:
        relay.start(bed, v, seed=1, out_dir=tmp_path / "relay")
    assert str(e.value) == "the relay did not start: interface rb-missing: No such device (os error 19)"


BACKGROUND = """
id = "relay-background"
duration = "10s"

[[links]]
name = "ab"
from = "A"
to = "B"
capacity = "1Mbps"
mechanism = "udp-background"
physical_capacity = "4Mbps"
delay = "50ms"
queue = { size = "300ms" }

[[links]]
name = "ba"
from = "B"
to = "A"
delay = "50ms"

[[tcp]]
from = "A"
to = "B"
"""


@needs_root
def test_udp_background_takes_its_share_of_the_link_and_reaches_no_host(tmp_path: Path) -> None:
    path = tmp_path / "background.toml"
    path.write_text(BACKGROUND)
    (v,) = rtcbench.resolve(path)
    with testbed.build(v) as bed:
        r = relay.start(bed, v, seed=1, out_dir=tmp_path / "relay")
        t0 = r.go()
        bed.popen("B", [sys.executable, "-c", ECHO_SERVER])
        time.sleep(0.3)
        b = str(bed.topology.host("B").address.ip)
        done = bed.run(
            "A", [sys.executable, "-c", ECHO_CLIENT, b, "10"], capture_output=True, text=True, check=True
        )
        time.sleep(max(0.0, t0 + 2.0 - time.monotonic()))
        report = r.stop()
    ab = report.links["ab"]
    # 3 Mbit/s of 1200-byte packets, one per 3.2 ms from time zero, until the relay stopped.
    assert report.processed_until_s >= 2.0
    assert ab.background_in == int(report.processed_until_s * 1e6) // 3200 + 1
    assert ab.packets_in == ab.background_in + 10 and ab.dropped == {}
    assert report.frames_out == 20  # the echo's frames; the background reached no host
    # The echo shares the 4 Mbit/s link: at most one background packet ahead of it (2.4 ms).
    rtts = [float(x) for x in done.stdout.split()]
    assert min(rtts) >= 102.5 and statistics.median(rtts) < 106.0, rtts


def test_a_relay_that_waited_for_room_in_a_send_buffer_says_so(tmp_path: Path) -> None:
    # relay.json as the relay writes it for a run whose forwarding stopped on a full send buffer
    # (Firefox's runs of seed000-5.2.8 stalled 18-23 s so; this is the line that names it).
    report = {
        "scheduling": "fifo", "cpu": 1, "keeping_up": False, "frames_in": 10, "frames_out": 10,
        "lateness": {"departures": 10, "p50_us": 19.0, "p99_us": 18874000.0, "max_us": 18874000.0},
        "refused": {"not_ipv4": 0, "no_host": 0, "no_route": 0}, "oversize": 0, "late_arrivals": 0,
        "socket_drops": [0, 0], "records_lost": 0, "links": [], "elements": [], "wall_s": 240.0,
        "cpu_s": 10.0, "forwarding_cpu_s": 9.0, "processed_until_us": 240_000_000,
        "send_waits": [0, 19], "send_wait_max_ms": 1000.4, "send_wait_total_s": 19.2,
    }  # fmt: skip
    (tmp_path / "relay.json").write_text(json.dumps(report))
    r = relay.RelayReport.read(tmp_path / "relay.json")
    assert (r.send_waits, r.send_wait_max_ms, r.send_wait_total_s) == (19, 1000.4, 19.2)
    assert "it waited for room in a full send buffer 19 times, up to 1000 ms, 19.2 s in all" in str(
        r.warning()
    )
    # A report from before the relay counted its waits reads as none.
    del report["send_waits"], report["send_wait_max_ms"], report["send_wait_total_s"]
    (tmp_path / "relay.json").write_text(json.dumps(report))
    old = relay.RelayReport.read(tmp_path / "relay.json")
    assert old.send_waits == 0 and "send buffer" not in str(old.warning())


def test_relay_link_samples_fill_every_column_of_the_links_table(tmp_path: Path) -> None:
    """`relay-links.csv` carries the links table's columns, the DualPI2 ones included, typed as
    the table types them; null where a column is not the element's."""
    columns = list(tables.dtypes("links"))
    dual = {"l_queue_bytes": "2500", "l_sojourn_us": "1200", "c_sojourn_us": "0", "p_base": "0.015625",
            "p_c": "0.000244140625", "p_cl": "0.03125", "p_l": "1", "l_marks": "3", "c_marks": "0",
            "l_drops": "1", "c_drops": "0"}  # fmt: skip
    rows = [
        {"t_us": "10000", "link": "ab", "capacity_bps": "1000000", "queue_bytes": "3750", **dual},
        {"t_us": "10000", "link": "ba", "queue_bytes": "0"},
    ]
    (tmp_path / RELAY_LINKS).write_text(
        "\n".join([",".join(columns), *(",".join(r.get(c, "") for c in columns) for r in rows)]) + "\n"
    )
    links = relay_links(tmp_path, end_us=20_000)
    assert links.schema == tables.dtypes("links")
    ab, ba = links.row(0, named=True), links.row(1, named=True)
    assert (ab["l_queue_bytes"], ab["p_c"], ab["l_marks"], ab["l_drops"]) == (2500, 0.000244140625, 3, 1)
    assert all(ba[c] is None for c in dual)
