"""Cross traffic on the emulated network: kernel TCP (CUBIC, Reno, BBR; bulk and on/off) and UDP
CBR between the hosts, planned from a scenario as the simulator plans it (docs/emulation.md,
"Cross traffic"; docs/adr/0002-cross-traffic-agents.md).

The plan and the agents' models are checked without root. The root tests run one 6 s scenario on
a real testbed (`ran`, shared by the module) and ask it each question; no relay exists yet, so
the net namespace's kernel forwards (the stand-in of tests/test_testbed_netns.py) and a `tc tbf`
on its veth ends stands in for the capacity of a link. Then an interrupted run, and an agent that
fails.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

import rtcbench
from rtcbench import _core, testbed
from rtcbench.testbed import Testbed, _cross_agent, _linux, cross, netns
from rtcbench.testbed.cross import CbrFlow, CrossTrafficError, TcpFlow

MISSING = testbed.missing()
needs_root = pytest.mark.skipif(MISSING is not None, reason=f"builds network namespaces: {MISSING}")

# Bulk CUBIC, Reno and BBR from A to B through a 20 Mbit/s shaper; on/off flows from B to A; CBR
# from C to A; Reno from C to D without delayed ACKs and from C to E with them (10 Mbit/s each).
SCENARIO = """
id = "cross-test"
duration = "6s"

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

[[links]]
name = "cd"
from = "C"
to = "D"
delay = "0ms"

[[links]]
name = "dc"
from = "D"
to = "C"
delay = "0ms"

[[links]]
name = "ce"
from = "C"
to = "E"
delay = "0ms"

[[links]]
name = "ec"
from = "E"
to = "C"
delay = "0ms"

[[tcp]]
name = "cubic"
from = "A"
to = "B"
cc = "cubic"
start = "500ms"
stop = "3s"

[[tcp]]
name = "reno"
from = "A"
to = "B"
cc = "newreno"
start = "500ms"
stop = "3s"

[[tcp]]
name = "bbr"           # the scenario format has no BBR: the test asks the kernel for it
from = "A"
to = "B"
start = "500ms"
stop = "3s"

[[tcp]]
name = "web"
from = "B"
to = "A"
count = 3
stop = "4s"

[tcp.workload]
kind = "short"
size_min = "20KB"
size_max = "40KB"
idle_mean = "300ms"
files = 2
initially_on = 2

[[tcp]]
from = "C"
to = "D"
cc = "newreno"
delayed_ack = false
start = "1s"
stop = "3s"

[[tcp]]
from = "C"
to = "E"
cc = "newreno"
start = "1s"
stop = "9s"            # after the end: the end

[[cbr]]
from = "C"
to = "A"
rate = "2Mbps"
start = "500ms"
stop = "5500ms"
"""
END_S = 6.0
SEED = 7
SHAPERS = {"B": "20mbit", "D": "10mbit", "E": "10mbit"}
SHAPER_LIMIT = 30_000  # bytes the shaper queues: 12 ms at 20 Mbit/s, 24 ms at 10 Mbit/s
# Tests that stop 300 ms after the flows start queue the three bulk flows' initial windows
# (3 x 10 segments): with 20 segments a flow can lose its whole first window, wait out a
# retransmission timeout past the stop, and rightly have delivered nothing.
EARLY_STOP_LIMIT = 4 * SHAPER_LIMIT
STOP_S = 0.05  # how late a flow may start or stop


@pytest.fixture(scope="module")
def variant(tmp_path_factory: pytest.TempPathFactory) -> rtcbench.Variant:
    path = tmp_path_factory.mktemp("scenario") / "cross.toml"
    path.write_text(SCENARIO)
    return rtcbench.resolve(path)[0]


def flows_of(variant: rtcbench.Variant) -> list[cross.CrossFlow]:
    """The scenario's plan, with the flow named "bbr" on BBR."""
    return [
        dataclasses.replace(f, cc="bbr") if isinstance(f, TcpFlow) and f.name == "bbr" else f
        for f in cross.plan(variant, seed=SEED)
    ]


# -- the plan and the models (no root) ----------------------------------------------------------


def test_the_plan_names_and_times_flows_as_the_simulator_does(tmp_path: Path) -> None:
    # The simulator's own table of flows, from a simulation built but not run (it needs a call).
    path = tmp_path / "with-a-call.toml"
    path.write_text(SCENARIO + '\n[[calls]]\nname = "call"\nfrom = "A"\nto = "B"\n')
    variant = rtcbench.resolve(path)[0]
    meta = json.loads(_core.Simulation(variant.toml, "gcc", 1).meta)
    links = {link["name"]: link for link in meta["links"]}
    simulated = {
        f["name"]: (
            f["kind"],
            links[f["path"][0]]["from"],
            links[f["path"][-1]]["to"],
            f["start_s"],
            f["stop_s"],
        )
        for f in meta["flows"]
        if f["kind"] in ("tcp", "cbr")
    }
    planned = {f.name: (f.kind, f.src, f.dst, f.start_s, f.stop_s) for f in cross.plan(variant)}
    assert planned == simulated
    assert list(planned) == ["cubic", "reno", "bbr", "web.0", "web.1", "web.2", "tcp4", "tcp5", "cbr0"]
    assert planned["tcp5"][4] == END_S


def test_the_plan_maps_every_field_of_rfc8867_5_7() -> None:
    newreno, cubic = rtcbench.resolve("rfc8867-5.7")
    flows = cross.plan(newreno, seed=3)
    assert [f.name for f in flows] == [f"web.{k}" for k in range(10)]
    assert all(isinstance(f, TcpFlow) for f in flows)
    tcp = [f for f in flows if isinstance(f, TcpFlow)]
    assert {(f.src, f.dst, f.start_s, f.stop_s, f.cc, f.delayed_ack, f.dst_port) for f in tcp} == {
        ("A", "B", 0.0, 300.0, "reno", True, 5201)
    }
    assert [f.src_port for f in tcp] == list(range(49152, 49162))
    assert [f.on_off.initially_on for f in tcp if f.on_off] == [True] * 2 + [False] * 8
    assert {f.on_off for f in tcp} == {
        cross.OnOff(
            size_min_bytes=30_000, size_max_bytes=50_000, files=1, idle_mean_s=10.0, initially_on=True
        ),
        cross.OnOff(
            size_min_bytes=30_000, size_max_bytes=50_000, files=1, idle_mean_s=10.0, initially_on=False
        ),
    }
    assert len({f.rng_key for f in tcp}) == 10 and tcp[0].rng_key == "3/tcp/web/0/workload"
    assert {f.cc for f in cross.plan(cubic) if isinstance(f, TcpFlow)} == {"cubic"}


def test_what_the_kernel_cannot_do_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(CrossTrafficError) as e:
        cross.plan(rtcbench.resolve("seed000-5.2.8")[0])
    assert str(e.value) == (
        "seed000-5.2.8: tcp.0.small_queues = true cannot be emulated: the kernel's TCP Small Queues act "
        "on the sending host's own queue, and the emulated links are in the relay"
    )
    mixed = tmp_path / "mixed.toml"
    mixed.write_text(SCENARIO.replace('[[tcp]]\nfrom = "C"\nto = "E"', '[[tcp]]\nfrom = "C"\nto = "D"'))
    with pytest.raises(CrossTrafficError) as e:
        cross.plan(rtcbench.resolve(mixed)[0])
    assert str(e.value).startswith("cross-test: tcp.5.delayed_ack = true differs from tcp.4 from C to D")
    assert "\n" not in str(e.value)


def test_a_missing_congestion_control_is_one_line_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    available = tmp_path / "available"
    available.write_text("reno cubic\n")
    monkeypatch.setattr(cross, "AVAILABLE_CC", available)
    monkeypatch.setattr("shutil.which", lambda _: None)
    flow = TcpFlow("tcp0", "A", "B", 0.0, 1.0, cc="bbr")
    with pytest.raises(CrossTrafficError) as e:
        cross.start(None, [flow], end_s=1.0, log_dir=tmp_path)  # type: ignore[arg-type]  # not touched
    assert str(e.value) == (
        "tcp0: this kernel has no TCP congestion control 'bbr' (available: cubic reno; "
        "no `modprobe` to load tcp_bbr)"
    )
    cross.require_congestion_controls([dataclasses.replace(flow, cc="reno")])


def test_the_agents_models_follow_the_simulators() -> None:
    # traffic/cbr.rs: 1200 B at 960 kbit/s is a packet every 10 ms from the start, none at the stop.
    cbr = _cross_agent.CbrSchedule(960_000, 1200, 0.0, 0.1)
    times = []
    while (t := cbr.poll_timeout()) is not None:
        assert cbr.on_timeout(t) == 1
        times.append(t)
    assert times == pytest.approx([k * 0.01 for k in range(10)])
    late = _cross_agent.CbrSchedule(960_000, 1200, 0.0, 1.0)
    assert late.on_timeout(0.035) == 4  # woken late: the rate is kept
    # traffic/on_off.rs: a burst waits for its acknowledgement before the idle time.
    on = _cross_agent.OnOff(30_000, 50_000, 1, 10.0, True, 5.0, random.Random("k"))
    assert on.poll_timeout() == 5.0 and on.on_timeout(4.9) is None
    size = on.on_timeout(5.0)
    assert size is not None and 30_000 <= size <= 50_000
    assert on.poll_timeout() is None and on.on_timeout(100.0) is None
    assert on.on_all_acked(5.3) == (5.0, size)
    idle = on.poll_timeout()
    assert idle is not None and idle > 5.3
    # 30 files of U[30, 50] KB: 1.2 MB a burst; Exp(10 s) idle times.
    busy = _cross_agent.OnOff(30_000, 50_000, 30, 10.0, False, 0.0, random.Random(3))
    sizes, idles, last_end = [], [], 0.0
    for _ in range(2000):
        t = busy.poll_timeout()
        assert t is not None
        idles.append(t - last_end)
        sizes.append(busy.on_timeout(t))
        last_end = t
        busy.on_all_acked(t)
    assert sum(s or 0 for s in sizes) / 2000 == pytest.approx(1_200_000, abs=5_000)
    assert sum(idles) / 2000 == pytest.approx(10.0, abs=0.5)


# -- a run on a real testbed (root) -------------------------------------------------------------


@dataclass
class Ran:
    """What the module's run left: the flows' logs, and what the kernel said during it."""

    flows: dict[str, cross.CrossFlow]
    logs: dict[str, cross.FlowLog]
    socket_cc: dict[int, str]
    """Source port → congestion control, from `ss -ti` in A's namespace."""
    ss_looks: list[tuple[float, str]]
    """Each look at `ss -tinH`: seconds after the start, and what it printed."""
    tcp_segments: dict[str, tuple[int, int]]
    """Node → (segments received, segments sent), /proc/net/snmp in its namespace."""
    pids: list[int]
    prefix: str
    inodes: set[int]


def kernel_forwarding_and_shapers(bed: Testbed, limit: int = SHAPER_LIMIT) -> None:
    """THE TEST'S STAND-IN FOR THE RELAY: the net namespace's kernel forwards, and a token bucket
    on its veth end towards a node limits what that node receives (queueing `limit` bytes)."""
    bed.run(None, ["sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"], check=True)
    for node, rate in SHAPERS.items():
        dev = bed.topology.host(node).net_interface
        tbf = ["tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", rate]
        bed.run(None, [*tbf, "burst", "20kb", "limit", str(limit)], check=True)


SS_OPTIONS = {"ts", "sack", "ecn", "ecnseen", "fastopen", "noecn"}
"""Words `ss -i` may print before a connection's congestion control (the options it negotiated)."""


def congestion_controls(ss: str) -> dict[int, str]:
    """Source port → congestion control of the connections to a sink that `ss -tinH` lists: a
    connection is a line, then an indented line of details (the negotiated options, then the
    congestion control). Read line by line, not two by two, so that a socket listed without
    details cannot shift the pairs; a connection whose details name none is "?"."""
    found: dict[int, str] = {}
    peer_port: int | None = None
    for line in ss.splitlines():
        words = line.split()
        if not line[:1].isspace():
            peer_port = None
            if len(words) >= 5 and words[4].endswith(f":{cross.TCP_SINK_PORT}"):
                peer_port = int(words[3].rsplit(":", 1)[1])
                found[peer_port] = "?"
        elif peer_port is not None:
            found[peer_port] = next((w for w in words if w not in SS_OPTIONS), "?")
            peer_port = None
    return found


SS_WATCHER = """
import subprocess, sys, time
while True:
    out = subprocess.run(["ss", "-tinH"], capture_output=True, text=True).stdout
    sys.stdout.write(f"@ {time.monotonic()!r}\\n{out}")
    sys.stdout.flush()
    time.sleep(0.05)
"""
"""Lists the namespace's TCP sockets every 50 ms, each look after a line `@ <time.monotonic()>`."""


def ss_looks(out: str) -> list[tuple[float, str]]:
    """The watcher's looks: (`time.monotonic()` when listed, what `ss -tinH` printed)."""
    looks: list[tuple[float, list[str]]] = []
    for line in out.splitlines():
        if line.startswith("@ "):
            looks.append((float(line[2:]), []))
        elif looks:
            looks[-1][1].append(line)
    return [(at, "\n".join(lines)) for at, lines in looks]


def tcp_segments(bed: Testbed, node: str) -> tuple[int, int]:
    snmp = bed.run(node, ["cat", "/proc/net/snmp"], capture_output=True, text=True, check=True).stdout
    names, values = (line.split() for line in snmp.splitlines() if line.startswith("Tcp:"))
    row = dict(zip(names, values, strict=True))
    return int(row["InSegs"]), int(row["OutSegs"])


@pytest.fixture(scope="module")
def ran(variant: rtcbench.Variant, tmp_path_factory: pytest.TempPathFactory) -> Ran:
    if MISSING is not None:
        pytest.skip(f"builds network namespaces: {MISSING}")
    flows = flows_of(variant)
    logs = tmp_path_factory.mktemp("logs")
    with testbed.build(variant) as bed:
        inodes = {(netns.NETNS_DIR / n).stat().st_ino for n in bed.topology.namespaces}
        kernel_forwarding_and_shapers(bed)
        # A watcher in A's namespace lists its sockets every 50 ms from before the flows start,
        # so that no look depends on how soon this process is scheduled: on a loaded machine a
        # look spawned from here once came 2.4 s late, after A's flows (0.5-3.0 s) had ended.
        with (logs / "ss.txt").open("w") as listed:
            watcher = bed.popen("A", [sys.executable, "-c", SS_WATCHER], stdout=listed)
        traffic = cross.start(bed, flows, end_s=END_S, log_dir=logs)
        t0 = traffic.go()
        traffic.wait(END_S + 10)
        watcher.kill()
        watcher.wait()
        listed_looks = ss_looks((logs / "ss.txt").read_text())
        looks = [(at - t0, ss) for at, ss in listed_looks if 0.5 < at - t0 < 3.0]
        socket_cc: dict[int, str] = {}
        for _, ss in looks:
            socket_cc |= {
                port: cc for port, cc in congestion_controls(ss).items() if socket_cc.get(port, "?") == "?"
            }
        segments = {node: tcp_segments(bed, node) for node in ("D", "E")}
        pids = [a.process.pid for a in traffic.agents]
        prefix = bed.topology.prefix
    return Ran(
        {f.name: f for f in flows},
        traffic.logs(),
        socket_cc,
        looks,
        segments,
        pids,
        prefix,
        inodes,
    )


def test_ss_lines_are_read_one_connection_at_a_time() -> None:
    # A connection listed without details, options before the congestion control, and a
    # connection from a sink (its peer is not the sink's port) do not shift the others.
    ss = (
        "ESTAB 0 0 10.0.0.1:49152 10.0.0.2:5201\n\t ts sack cubic wscale:7,7 rto:204\n"
        "SYN-SENT 0 1 10.0.0.1:49153 10.0.0.2:5201\n"
        "ESTAB 0 0 10.0.0.1:5201 10.0.0.2:40000\n\t reno wscale:7,7\n"
        "ESTAB 0 0 10.0.0.1:49154 10.0.0.2:5201\n\t bbr wscale:7,7 bbr:(bw:1Mbps)\n"
    )
    assert congestion_controls(ss) == {49152: "cubic", 49153: "?", 49154: "bbr"}


@needs_root
def test_bulk_cubic_reno_and_bbr_flows_each_deliver_data(ran: Ran) -> None:
    bulk = ["cubic", "reno", "bbr"]
    rates = {name: ran.logs[name].rate_bps(0.5, 3.0) for name in bulk}
    # Each gets a share of the 20 Mbit/s shaper; together they fill it (TCP payload is 1448 of
    # every 1514 bytes a frame carries).
    assert all(rate > 2e6 for rate in rates.values()), rates
    assert 0.85 * 20e6 * 1448 / 1514 < sum(rates.values()) < 1.02 * 20e6, rates
    for name in bulk:
        log = ran.logs[name]
        assert log.connections == 1 and log.errors == []
        assert 0 < log.delivered_bytes <= log.sent_bytes


@needs_root
def test_each_socket_runs_the_congestion_control_asked_for(ran: Ran) -> None:
    # As the kernel reports it (`ss -ti`) while the flows run, and as the agent read it back.
    asked = {f.src_port: f.cc for f in ran.flows.values() if isinstance(f, TcpFlow) and f.src == "A"}
    assert asked == {49152: "cubic", 49153: "reno", 49154: "bbr"}
    looks = "\n".join(f"at {at:.2f} s:\n{out}" for at, out in ran.ss_looks[:3])
    said = f"{len(ran.ss_looks)} looks at A's sockets while they ran, the first three:\n{looks}"
    assert ran.socket_cc == asked, said
    for f in ran.flows.values():
        if isinstance(f, TcpFlow):
            assert ran.logs[f.name].cc == f.cc


@needs_root
def test_cbr_delivers_its_rate_within_2_percent(ran: Ran) -> None:
    flow, log = ran.flows["cbr0"], ran.logs["cbr0"]
    assert isinstance(flow, CbrFlow)
    span = flow.stop_s - flow.start_s
    # One 1200-byte packet every 4.8 ms over 5 s: 1042 packets, all delivered.
    assert log.sent_datagrams == 1042
    rate = log.delivered_datagrams * flow.packet_size_bytes * 8 / span
    assert rate == pytest.approx(flow.rate_bps, rel=0.02)
    assert log.delivered_bytes == log.delivered_datagrams * (flow.packet_size_bytes - 28)


@needs_root
def test_on_off_flows_send_their_bursts_over_one_connection_each(ran: Ran) -> None:
    """As the simulator does: a flow's bursts follow each other on its one connection (the
    kernel restarts the window after idle, as `docs/tcp.md` describes)."""
    for k in range(3):
        flow, log = ran.flows[f"web.{k}"], ran.logs[f"web.{k}"]
        assert isinstance(flow, TcpFlow) and flow.on_off is not None
        assert log.connections == 1 and log.errors == []
        assert len(log.bursts) >= 3
        sizes = [size for _, _, size in log.bursts]
        assert all(40_000 <= size <= 80_000 for size in sizes)
        # Each burst ends (all acknowledged) before the next begins, after an idle time.
        for (start, end, _), (next_start, _, _) in zip(log.bursts, log.bursts[1:], strict=False):
            assert start < end < next_start
        first = log.bursts[0][0]
        assert first < STOP_S if flow.on_off.initially_on else first > 0.01
        # Everything acknowledged was delivered; the draws are the seeded model's.
        assert sum(sizes) <= log.delivered_bytes <= log.sent_bytes
        assert sizes == replayed_sizes(flow, len(sizes))


def replayed_sizes(flow: TcpFlow, n: int) -> list[int]:
    """The first `n` burst sizes `flow`'s on/off model draws (whatever the times)."""
    assert flow.on_off is not None
    o = flow.on_off
    model = _cross_agent.OnOff(
        o.size_min_bytes,
        o.size_max_bytes,
        o.files,
        o.idle_mean_s,
        o.initially_on,
        0.0,
        random.Random(flow.rng_key),
    )
    sizes = []
    for _ in range(n):
        t = model.poll_timeout()
        assert t is not None
        size = model.on_timeout(t)
        assert size is not None
        sizes.append(size)
        model.on_all_acked(t)
    return sizes


@needs_root
def test_start_and_stop_times_are_honoured_within_50_ms(ran: Ran) -> None:
    for name, flow in ran.flows.items():
        log = ran.logs[name]
        assert log.scheduling == log.sink_scheduling == "fifo", name  # real-time, as root: precise times
        assert log.start_s is not None and log.stop_s is not None, name
        assert flow.start_s <= log.start_s < flow.start_s + STOP_S, name
        assert flow.stop_s <= log.stop_s < flow.stop_s + STOP_S, name
        assert log.first_delivery_s is not None and log.last_delivery_s is not None, name
        assert log.first_delivery_s >= flow.start_s, name
        # After the stop, only what the shaper still queued arrives.
        rate = SHAPERS.get(flow.dst)
        drain = SHAPER_LIMIT * 8 / (float(rate.removesuffix("mbit")) * 1e6) if rate else 0.0
        assert log.last_delivery_s < flow.stop_s + STOP_S + drain, name


@needs_root
def test_delayed_acks_are_off_where_the_scenario_says(ran: Ran) -> None:
    """D receives Reno with delayed_ack = false: about an ACK per segment (`quickack` on its
    route back); E receives Reno with delayed ACKs: about one per two."""
    received, sent = ran.tcp_segments["D"]
    assert sent / received > 0.9
    received, sent = ran.tcp_segments["E"]
    assert sent / received < 0.75


@needs_root
def test_no_agent_outlives_the_testbed(ran: Ran) -> None:
    assert len(ran.pids) == 7  # sinks at A, B, D and E; sources at A, B and C
    assert not any(_linux.start_time(pid) is not None for pid in ran.pids)
    assert [n for n in netns.NETNS_DIR.iterdir() if n.name.startswith(ran.prefix)] == []


@needs_root
def test_an_interrupted_run_stops_every_agent_and_completes_the_logs(
    variant: rtcbench.Variant, tmp_path: Path
) -> None:
    pids: list[int] = []
    with contextlib.suppress(KeyboardInterrupt), testbed.build(variant) as bed:
        kernel_forwarding_and_shapers(bed, limit=EARLY_STOP_LIMIT)
        traffic = cross.start(bed, flows_of(variant), end_s=END_S, log_dir=tmp_path)
        pids = [a.process.pid for a in traffic.agents]
        t0 = traffic.go()
        time.sleep(max(0.0, t0 + 0.8 - time.monotonic()))
        interrupted = time.monotonic() - t0
        raise KeyboardInterrupt
    assert len(pids) == 7
    assert not any(_linux.start_time(pid) is not None for pid in pids)
    logs = cross.read_logs(tmp_path)
    # Every source closed its flows, every sink wrote its totals, when the testbed stopped them.
    for name in ("cubic", "web.0", "cbr0"):
        assert logs[name].stop_s == pytest.approx(interrupted, abs=0.5)
        assert logs[name].last_delivery_s is not None and logs[name].delivered_bytes > 0
    assert logs["tcp4"].start_s is None  # it would have started at 1 s


@needs_root
def test_stopping_early_closes_every_flow_without_errors(variant: rtcbench.Variant, tmp_path: Path) -> None:
    with testbed.build(variant) as bed:
        kernel_forwarding_and_shapers(bed, limit=EARLY_STOP_LIMIT)
        traffic = cross.start(bed, flows_of(variant), end_s=END_S, log_dir=tmp_path)
        t0 = traffic.go()
        time.sleep(max(0.0, t0 + 0.8 - time.monotonic()))
        asked = time.monotonic() - t0
        traffic.stop()  # sources first, then sinks; raises if an agent failed
        stopped = time.monotonic() - t0
        assert all(a.process.returncode == 0 for a in traffic.agents)
    logs = traffic.logs()
    started = [name for name, log in logs.items() if log.start_s is not None]
    assert sorted(started) == ["bbr", "cbr0", "cubic", "reno", "web.0", "web.1", "web.2"]
    for name in started:
        assert logs[name].errors == [], name
        stop_s = logs[name].stop_s
        assert stop_s is not None and asked <= stop_s <= stopped, name
        assert logs[name].delivered_bytes > 0, name


@needs_root
def test_an_agent_that_fails_says_why_in_one_line(
    variant: rtcbench.Variant, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cross, "require_congestion_controls", lambda flows: None)
    flow = TcpFlow("tcp0", "A", "B", 0.0, 1.0, cc="no-such-cc")
    with testbed.build(variant) as bed, pytest.raises(CrossTrafficError) as e:
        cross.start(bed, [flow], end_s=1.0, log_dir=tmp_path)
    assert str(e.value) == (
        "cross traffic (source at A): tcp0: the kernel refuses TCP congestion control 'no-such-cc' "
        "(No such file or directory)"
    )
