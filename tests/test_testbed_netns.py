"""The emulated network's topology: one namespace per scenario node and one in the middle, veth
pairs with offloads off, addresses and routes that join every node to every other through the
middle, and nothing left behind after a run, whatever ends it (docs/emulation.md).

Root tests build real namespaces; they are skipped, saying why, where that is impossible. No relay
exists yet: where a packet must cross, the tests switch on the net namespace's own kernel
forwarding as a stand-in (`kernel_forwarding`), which the product never does.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from ipaddress import IPv4Address
from pathlib import Path

import pytest
import typer

import rtcbench
from doc_blocks import run_python_blocks
from rtcbench import testbed
from rtcbench.cli.errors import guarded
from rtcbench.testbed import Testbed, Topology, _linux, netns
from rtcbench.testbed.topology import IFNAMSIZ, MTU, PREFIX_PATTERN

ROOT = Path(__file__).resolve().parents[1]
TWO_NODES = "rfc8867-5.1"
MANY_NODES = "rfc8867-5.5"  # S1..S5 → A → B: seven nodes

MISSING = testbed.missing()
needs_root = pytest.mark.skipif(MISSING is not None, reason=f"builds network namespaces: {MISSING}")

ETH_P_ALL = 0x0003
ETH_HEADER = 14
PACKET_OUTGOING = 4


def variant(scenario: str) -> rtcbench.Variant:
    return rtcbench.resolve(scenario)[0]


# -- helpers ------------------------------------------------------------------------------------


def wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def alive(pid: int) -> bool:
    return _linux.start_time(pid) is not None


def kernel_forwarding(bed: Testbed) -> None:
    """THE TEST'S STAND-IN FOR THE RELAY: the net namespace's kernel routes between the veths."""
    bed.run(None, ["sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"], check=True)


def sock_in(bed: Testbed, node: str | None, *args: int) -> socket.socket:
    """A socket opened in `node`'s namespace (the net namespace for None), usable from here."""
    return _linux.call_in_netns(bed.netns_path(node), lambda: socket.socket(*args))


def udp_socket(bed: Testbed, node: str) -> socket.socket:
    s = sock_in(bed, node, socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((str(bed.topology.host(node).address.ip), 0))
    s.settimeout(5)
    return s


def capture(bed: Testbed, node: str) -> socket.socket:
    """Every frame on the net namespace's end of `node`'s veth, both ways (AF_PACKET)."""
    interface = bed.topology.host(node).net_interface

    def open_() -> socket.socket:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        s.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)  # SO_RCVBUFFORCE
        s.bind((interface, 0))  # resolves the name here, in the namespace
        s.setblocking(False)
        return s

    return _linux.call_in_netns(bed.netns_path(None), open_)


def frames(s: socket.socket) -> list[tuple[bytes, int]]:
    """What `capture` has seen so far: (frame, packet type)."""
    seen: list[tuple[bytes, int]] = []
    while True:
        try:
            data, address = s.recvfrom(1 << 17)
        except BlockingIOError:
            return seen
        seen.append((data, address[2]))


def checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total: int = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def udp_payload(frame: bytes) -> bytes | None:
    """The payload of an IPv4 UDP frame; None for any other frame."""
    if frame[12:14] != b"\x08\x00" or frame[ETH_HEADER + 9] != 17:
        return None
    ip = frame[ETH_HEADER:]
    return ip[(ip[0] & 0x0F) * 4 + 8 : struct.unpack("!H", ip[2:4])[0]]


def udp_checksum_ok(frame: bytes) -> bool:
    ip = frame[ETH_HEADER:]
    header = (ip[0] & 0x0F) * 4
    udp = ip[header : struct.unpack("!H", ip[2:4])[0]]
    pseudo = ip[12:20] + struct.pack("!BBH", 0, 17, len(udp))
    return checksum(pseudo + udp) == 0xFFFF


def namespace_inodes(topology: Topology) -> set[int]:
    return {os.stat(netns.NETNS_DIR / ns).st_ino for ns in topology.namespaces}


def holders(inodes: set[int]) -> list[str]:
    """Whatever keeps one of these namespaces alive: a task in it, an open handle, a mount."""
    found = []
    names = {f"net:[{i}]" for i in inodes}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            tasks = list((proc / "task").iterdir())
            for task in tasks:
                if os.stat(task / "ns/net").st_ino in inodes:
                    found.append(f"task {task.name} of {proc.name}")
            for fd in (proc / "fd").iterdir():
                if os.readlink(fd) in names:
                    found.append(f"fd {fd}")
        except OSError:
            continue
    mounts = Path("/proc/self/mountinfo").read_text()
    found += [f"mount {n}" for n in names if n in mounts]
    return found


def assert_gone(prefix: str, inodes: set[int]) -> None:
    """No namespace, record, process, handle or mount of the run is left: the kernel frees its
    namespaces, and the veths with them."""
    assert [n for n in os.listdir(netns.NETNS_DIR) if n.startswith(prefix)] == []
    assert not (netns.STATE_DIR / f"{prefix}.json").exists()
    assert holders(inodes) == []


@pytest.fixture
def built() -> Iterator[Callable[[str], Testbed]]:
    """`built(scenario)`: a testbed of the scenario's first variant, removed after the test."""
    with contextlib.ExitStack() as stack:
        yield lambda scenario: stack.enter_context(testbed.build(variant(scenario)))


# -- the plan (no root) -------------------------------------------------------------------------


def test_every_node_gets_a_namespace_a_veth_pair_and_a_subnet() -> None:
    nodes = testbed.scenario_nodes(variant(MANY_NODES))
    assert nodes == ["A", "B", "S1", "S2", "S3", "S4", "S5"]
    topo = Topology.plan(nodes, "rb0a1b2c")
    assert topo.net_netns == "rb0a1b2c-net"
    assert [h.netns for h in topo.hosts] == [f"rb0a1b2c-{n}" for n in nodes]
    s1 = topo.host("S1")
    assert (s1.interface, s1.net_interface) == ("rb0a1b2c-h2", "rb0a1b2c-r2")
    assert (str(s1.address), str(s1.net_address)) == ("10.0.3.2/24", "10.0.3.1/24")
    assert (s1.mac, s1.net_mac) == ("02:72:62:00:03:02", "02:72:62:00:03:01")
    assert json.loads(json.dumps(topo.as_dict()))["hosts"][2]["address"] == "10.0.3.2/24"
    # Only the prefix differs between runs: frames compare byte for byte.
    other = Topology.plan(nodes, "rbffffff")
    assert [(h.address, h.mac, h.net_mac) for h in other.hosts] == [
        (h.address, h.mac, h.net_mac) for h in topo.hosts
    ]


def test_names_fit_and_odd_node_names_fall_back_to_their_index() -> None:
    nodes = [f"n{i}" for i in range(250)] + ["net", "with space", "x" * 40, "ünï"]
    topo = Topology.plan(nodes, "rb123abc")
    interfaces = [i for h in topo.hosts for i in (h.interface, h.net_interface)]
    assert max(len(i.encode()) for i in interfaces) < IFNAMSIZ
    assert len(set(interfaces)) == len(interfaces)
    assert all(name.startswith("rb123abc-") for name in [*interfaces, *topo.namespaces])
    assert len(set(topo.namespaces)) == len(topo.namespaces)
    assert [h.netns for h in topo.hosts[250:]] == [f"rb123abc-node-{i}" for i in range(250, 254)]
    assert topo.hosts[-1].address.ip == IPv4Address("10.0.254.2")
    with pytest.raises(ValueError, match="1 to 254 nodes"):
        Topology.plan([*nodes, "one more"], "rb123abc")


def test_without_root_or_ip_one_line_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr("shutil.which", lambda _: None)
    message = testbed.missing()
    assert message == (
        "emulation needs root (to create network namespaces and veth pairs) and the `ip` command "
        "(Debian package iproute2)"
    )

    def no(*_: object) -> None:
        raise AssertionError("touched the system")

    monkeypatch.setattr(netns, "_locked", no)
    with pytest.raises(testbed.TestbedUnavailable) as e, testbed.build(variant(TWO_NODES)):
        pass
    assert str(e.value) == message and "\n" not in message


# -- building (root) ----------------------------------------------------------------------------


@needs_root
def test_a_two_node_topology_is_built_with_offloads_off(built: Callable[[str], Testbed]) -> None:
    bed = built(TWO_NODES)
    topo = bed.topology
    assert PREFIX_PATTERN.fullmatch(topo.prefix)
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    assert sorted(line.split()[0] for line in listed.splitlines() if line.startswith(topo.prefix)) == sorted(
        topo.namespaces
    )
    for where, expected in [
        (None, [h.net_interface for h in topo.hosts]),
        *((h.node, [h.interface]) for h in topo.hosts),
    ]:
        links = bed.run(where, ["ip", "-j", "addr"], capture_output=True, text=True, check=True).stdout
        found = {link["ifname"]: link for link in json.loads(links) if link["ifname"] != "lo"}
        assert sorted(found) == sorted(expected)
        for name, link in found.items():
            assert len(name.encode()) < IFNAMSIZ and name.startswith(topo.prefix)
            assert link["mtu"] == MTU and {"UP", "LOWER_UP"} <= set(link["flags"])
            assert [a["family"] for a in link["addr_info"]] == ["inet"], "IPv4 only"
            assert _linux.call_in_netns(bed.netns_path(where), partial(_linux.active_offloads, name)) == []
    a, b = topo.host("A"), topo.host("B")
    assert (a.address.ip, a.mac, b.address.ip) == (
        IPv4Address("10.0.1.2"),
        "02:72:62:00:01:02",
        IPv4Address("10.0.2.2"),
    )
    route = bed.run(
        "A", ["ip", "route", "get", "10.0.2.2"], capture_output=True, text=True, check=True
    ).stdout
    assert "via 10.0.1.1" in route


@needs_root
def test_a_datagram_crosses_through_the_net_namespace_whole(built: Callable[[str], Testbed]) -> None:
    bed = built(TWO_NODES)
    a, b = bed.topology.host("A"), bed.topology.host("B")
    sender, receiver = udp_socket(bed, "A"), udp_socket(bed, "B")
    to_b = (str(b.address.ip), receiver.getsockname()[1])
    at_a, at_b = capture(bed, "A"), capture(bed, "B")
    with sender, receiver, at_a, at_b:
        # Without a relay, the net namespace's kernel drops what it would have to forward.
        sender.sendto(b"dropped", to_b)
        kernel_forwarding(bed)
        sender.sendto(b"forwarded", to_b)
        # The first datagram to arrive is the second one sent.
        assert receiver.recvfrom(100) == (b"forwarded", sender.getsockname())
        # A process started in a node's namespace, the way agents will run, answers.
        script = (
            "import socket as s, sys; "
            "s.socket(s.AF_INET, s.SOCK_DGRAM).sendto(b'reply', (sys.argv[1], int(sys.argv[2])))"
        )
        args = [sys.executable, "-c", script, str(a.address.ip), str(sender.getsockname()[1])]
        bed.run("B", args, check=True, timeout=10)
        data, (source, _) = sender.recvfrom(100)
        assert (data, source) == (b"reply", str(b.address.ip))
        seen_a, seen_b = frames(at_a), frames(at_b)
    # Every frame on both veths: the datagrams and nothing else. No ICMP error for the dropped
    # one, no ARP (the neighbours are permanent), no IPv6 (it is off).
    from_a = [f for f, kind in seen_a if kind != PACKET_OUTGOING]
    to_a = [f for f, kind in seen_a if kind == PACKET_OUTGOING]
    from_b = [f for f, kind in seen_b if kind != PACKET_OUTGOING]
    to_b_frames = [f for f, kind in seen_b if kind == PACKET_OUTGOING]
    assert [udp_payload(f) for f in from_a] == [b"dropped", b"forwarded"]
    assert [udp_payload(f) for f in to_b_frames] == [b"forwarded"]
    assert [udp_payload(f) for f in from_b] == [udp_payload(f) for f in to_a] == [b"reply"]
    for frame, dst_mac, src_mac in [
        (from_a[1], a.net_mac, a.mac),
        (to_b_frames[0], b.mac, b.net_mac),
        (to_a[0], a.mac, a.net_mac),
    ]:
        assert frame[:12] == mac(dst_mac) + mac(src_mac)
        # Checksum offload off: complete checksums on the wire, as a relay must forward them.
        assert udp_checksum_ok(frame)


def mac(text: str) -> bytes:
    return bytes.fromhex(text.replace(":", ""))


@needs_root
def test_every_node_of_a_multi_node_scenario_reaches_every_other(built: Callable[[str], Testbed]) -> None:
    bed = built(MANY_NODES)
    nodes = [h.node for h in bed.topology.hosts]
    assert len(nodes) == 7
    kernel_forwarding(bed)
    sockets = {n: udp_socket(bed, n) for n in nodes}
    try:
        for src in nodes:
            for dst in nodes:
                if src != dst:
                    sockets[src].sendto(f"{src}>{dst}".encode(), sockets[dst].getsockname())
        for dst in nodes:
            got = sorted(sockets[dst].recv(100).decode() for _ in range(len(nodes) - 1))
            assert got == sorted(f"{src}>{dst}" for src in nodes if src != dst)
    finally:
        for s in sockets.values():
            s.close()


@needs_root
def test_no_frame_is_larger_than_the_mtu(built: Callable[[str], Testbed]) -> None:
    """With segmentation offload on, a TCP sender's veth would carry 64 KB frames; the relay must
    see (and delay, and drop) the packets a real link carries."""
    bed = built(TWO_NODES)
    kernel_forwarding(bed)
    server = sock_in(bed, "B", socket.AF_INET, socket.SOCK_STREAM)
    client = sock_in(bed, "A", socket.AF_INET, socket.SOCK_STREAM)
    at_a, at_b = capture(bed, "A"), capture(bed, "B")
    with server, client, at_a, at_b:
        server.bind((str(bed.topology.host("B").address.ip), 0))
        server.listen()
        client.connect(server.getsockname())
        peer, _ = server.accept()
        payload = bytes(512 * 1024)

        def send() -> None:
            client.sendall(payload)
            client.shutdown(socket.SHUT_WR)

        sending = threading.Thread(target=send)
        sending.start()
        received = 0
        with peer:
            while chunk := peer.recv(1 << 16):
                received += len(chunk)
        sending.join()
        assert received == len(payload)
        seen = [f for f, kind in frames(at_a) if kind != PACKET_OUTGOING]
        seen += [f for f, kind in frames(at_b) if kind == PACKET_OUTGOING]
    assert max(len(f) for f in seen) == ETH_HEADER + MTU
    assert len(seen) > 2 * len(payload) // MTU


# -- hygiene (root) -----------------------------------------------------------------------------


@dataclass
class Ended:
    """What a testbed had, and the processes it ran, once its block has ended."""

    prefix: str
    inodes: set[int]
    pids: list[int]


def run_and_end(ending: Callable[[Testbed], None]) -> Ended:
    """Builds a testbed, starts a process in a node and one in the net namespace, then `ending`
    ends the block."""
    with contextlib.suppress(RuntimeError, KeyboardInterrupt), testbed.build(variant(TWO_NODES)) as bed:
        ended = Ended(bed.topology.prefix, namespace_inodes(bed.topology), [])
        ended.pids = [bed.popen("A", ["sleep", "1000"]).pid, bed.popen(None, ["sleep", "1000"]).pid]
        assert (netns.STATE_DIR / f"{bed.topology.prefix}.json").is_file()
        ending(bed)
    return ended


def _raise(error: BaseException) -> Callable[[Testbed], None]:
    def end(_: Testbed) -> None:
        raise error

    return end


@needs_root
@pytest.mark.parametrize(
    "ending",
    [lambda _: None, _raise(RuntimeError("boom")), _raise(KeyboardInterrupt())],
    ids=["success", "error", "KeyboardInterrupt"],
)
def test_everything_is_removed_when_the_block_ends(ending: Callable[[Testbed], None]) -> None:
    ended = run_and_end(ending)
    assert not any(alive(p) for p in ended.pids)
    assert_gone(ended.prefix, ended.inodes)


@needs_root
def test_a_failure_while_building_removes_what_was_built(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []

    def fail(netns_name: str, interfaces: list[str], ip_forward: bool | None = None) -> None:
        made.append(netns_name)
        raise netns.TestbedError("offloads stay on")

    monkeypatch.setattr(netns, "_in_netns", fail)
    with pytest.raises(netns.TestbedError, match="offloads stay on"), testbed.build(variant(TWO_NODES)):
        pass
    prefix = made[0].split("-")[0]
    assert_gone(prefix, set())


# A process that builds a testbed, starts a sleeper in node A and a shell there whose own child
# sleeps too (a grandchild, which no death signal reaches), prints them, and waits to be stopped.
# It follows the command line's conventions: SIGTERM interrupts it as Ctrl-C does.
OWNER = """
import json, sys, time, rtcbench
from rtcbench import testbed
from rtcbench.testbed import netns
from rtcbench.workers import interrupt_on_signals
interrupt_on_signals()
try:
    with testbed.build(rtcbench.resolve("rfc8867-5.1")[0]) as bed:
        sleeper = bed.popen("A", ["sleep", "1000"])
        shell = bed.popen("B", ["sh", "-c", "sleep 1000 & echo $!; wait"], stdout=-1, text=True)
        grandchild = int(shell.stdout.readline())
        print(json.dumps({"prefix": bed.topology.prefix, "netns": list(bed.topology.namespaces),
                          "children": [sleeper.pid, shell.pid], "grandchild": grandchild}), flush=True)
        while True:
            time.sleep(0.05)  # wakes up for the interrupt, whichever thread the signal reached
except KeyboardInterrupt:
    sys.exit(130)
"""


@dataclass
class Owner:
    """What `OWNER` printed."""

    prefix: str
    netns: list[str]
    children: list[int]
    grandchild: int

    @property
    def inodes(self) -> set[int]:
        return {os.stat(netns.NETNS_DIR / n).st_ino for n in self.netns}


@contextlib.contextmanager
def owner() -> Iterator[tuple[subprocess.Popen[str], Owner]]:
    """The process running `OWNER`, and what it printed."""
    with subprocess.Popen([sys.executable, "-c", OWNER], stdout=subprocess.PIPE, text=True) as p:
        assert p.stdout is not None
        line = p.stdout.readline()
        try:
            assert line, "the owner failed to build its testbed"
            yield p, Owner(**json.loads(line))
        finally:
            p.kill()


@needs_root
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_owner_removes_everything_itself(sig: int) -> None:
    with owner() as (p, seen):
        inodes = seen.inodes
        p.send_signal(sig)
        assert p.wait(10) == 130
    assert not any(alive(pid) for pid in [*seen.children, seen.grandchild])
    assert_gone(seen.prefix, inodes)


@needs_root
def test_after_sigkill_children_die_and_the_next_build_removes_the_rest() -> None:
    # The state lock keeps the killed run's watchdog and any other build on the machine from
    # sweeping while we look.
    with owner() as (p, seen), netns._locked():
        inodes = seen.inodes
        p.kill()
        p.wait()
        # Its children die with it (PR_SET_PDEATHSIG); its namespaces, its record and the
        # grandchild are left to its watchdog or the next run, whichever takes the lock first.
        assert wait_until(lambda: not any(alive(c) for c in seen.children), 2), (
            "children outlived their parent"
        )
        assert alive(seen.grandchild)
        assert (netns.STATE_DIR / f"{seen.prefix}.json").is_file()
        assert all((netns.NETNS_DIR / n).exists() for n in seen.netns)
    with testbed.build(variant(TWO_NODES)) as bed:
        assert bed.topology.prefix != seen.prefix
        assert not alive(seen.grandchild)
        assert_gone(seen.prefix, inodes)


WATCHDOG_WITHIN_S = 10.0
"""The watchdog imports rtcbench once its owner is gone, then removes: seconds on a loaded host."""


@needs_root
def test_after_sigkill_the_watchdog_removes_everything_with_no_other_run() -> None:
    with owner() as (p, seen):
        inodes = seen.inodes
        p.kill()
        p.wait()
        record = netns.STATE_DIR / f"{seen.prefix}.json"
        assert wait_until(lambda: not record.exists(), WATCHDOG_WITHIN_S), "the namespaces stayed"
    assert not alive(seen.grandchild)
    assert_gone(seen.prefix, inodes)


@needs_root
def test_a_testbed_removed_by_its_owner_lets_its_watchdog_go_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[subprocess.Popen[bytes]] = []

    def spy() -> tuple[subprocess.Popen[bytes], int]:
        watchdog = real()
        started.append(watchdog[0])
        return watchdog

    real = netns._start_watchdog
    monkeypatch.setattr(netns, "_start_watchdog", spy)
    with testbed.build(variant(TWO_NODES)):
        (watchdog,) = started
        assert watchdog.poll() is None, "the watchdog runs while the testbed does"
    assert watchdog.poll() == 0, "the watchdog exits with the testbed"


@needs_root
def test_two_testbeds_at_once_do_not_collide() -> None:
    with testbed.build(variant(TWO_NODES)) as one, testbed.build(variant(TWO_NODES)) as two:
        assert one.topology.prefix != two.topology.prefix
        assert set(one.topology.namespaces).isdisjoint(two.topology.namespaces)
        # The same addresses in both, and each datagram stays in its own network.
        for bed in (one, two):
            kernel_forwarding(bed)
        pairs = [(udp_socket(bed, "A"), udp_socket(bed, "B")) for bed in (one, two)]
        (a1, b1), (a2, b2) = pairs
        try:
            # Sent in `one` to the port B listens on in `two`: it must not reach `two`.
            a1.sendto(b"one", (b1.getsockname()[0], b2.getsockname()[1]))
            a1.sendto(b"one", b1.getsockname())
            a2.sendto(b"two", b2.getsockname())
            assert b1.recv(10) == b"one" and b2.recv(10) == b"two"
        finally:
            for s in (a1, b1, a2, b2):
                s.close()


def test_the_command_line_says_what_is_missing_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    @guarded("nothing was written")
    def emulate() -> None:
        raise testbed.TestbedUnavailable("emulation needs root (to create network namespaces and veth pairs)")

    with pytest.raises(typer.Exit) as e:
        emulate()
    assert e.value.exit_code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: emulation needs root (to create network namespaces and veth pairs)"
    ]


@needs_root
def test_the_documented_example_prints_what_the_page_shows() -> None:
    assert run_python_blocks(ROOT / "docs" / "emulation.md", every_block_shows_output=True) == 2
