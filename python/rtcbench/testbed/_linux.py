"""The few Linux calls the testbed makes itself, through libc and ioctl: entering a network
namespace (setns(2)), dying with the parent (prctl(PR_SET_PDEATHSIG)), turning off a device's
offloads (the SIOCETHTOOL ioctl, as `ethtool -K` does) and finding the processes in a namespace
(as `ip netns pids` does).

Offloads go through the ioctl rather than the `ethtool` program: it needs no package on a fresh
machine, no process per interface, and names features exactly as `ethtool -k` prints them.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import signal
import socket
import struct
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

__all__ = [
    "active_offloads",
    "call_in_netns",
    "child_setup",
    "disable_offloads",
    "is_offload",
    "netns_pids",
    "start_time",
]

_CLONE_NEWNET = 0x40000000
_PR_SET_PDEATHSIG = 1

_SIOCETHTOOL = 0x8946
_ETHTOOL_GSTRINGS = 0x1B
_ETHTOOL_GSSET_INFO = 0x37
_ETHTOOL_GFEATURES = 0x3A
_ETHTOOL_SFEATURES = 0x3B
_ETH_SS_FEATURES = 4
_ETH_GSTRING_LEN = 32
_IFREQ_SIZE = 40

# By its soname: `ctypes.util.find_library` would run `ldconfig -p` in a subprocess at import.
_libc = ctypes.CDLL("libc.so.6", use_errno=True)
_T = TypeVar("_T")


def is_offload(feature: str) -> bool:
    """Whether the testbed turns off the ethtool feature `feature` (named as `ethtool -k` names
    it) on every veth: the features that merge, split or defer work on packets, so that a frame
    seen on a veth would not be a packet on the wire. Segmentation (TSO, GSO, UDP GSO and their
    kin), receive coalescing (GRO, LRO), and checksum offload (a frame captured or relayed with
    only a partial checksum is dropped by its receiver); scatter-gather too, which the kernel
    drops anyway once checksum offload is off."""
    return (
        feature.endswith("-segmentation")
        or feature.startswith("tx-checksum-")
        or feature
        in {
            "rx-checksum",
            "tx-scatter-gather",
            "tx-scatter-gather-fraglist",
            "tx-gso-list",
            "rx-gro",
            "rx-gro-hw",
            "rx-gro-list",
            "rx-udp-gro-forwarding",
            "rx-lro",
        }
    )


def _setns(fd: int) -> None:
    if _libc.setns(fd, _CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


def call_in_netns(netns: Path, fn: Callable[[], _T]) -> _T:
    """`fn()` run on a thread of its own that has entered the network namespace `netns` (a file
    such as /run/netns/NAME): sockets it opens and /proc/sys/net it writes belong to that
    namespace. The calling thread never changes namespace, so an interrupt cannot leave it in the
    wrong one."""
    outcome: list[_T] = []
    failure: list[BaseException] = []

    def body() -> None:
        try:
            fd = os.open(netns, os.O_RDONLY | os.O_CLOEXEC)
            try:
                _setns(fd)
            finally:
                os.close(fd)
            outcome.append(fn())
        except BaseException as e:
            failure.append(e)

    thread = threading.Thread(target=body, name=f"netns {netns.name}")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return outcome[0]


def child_setup(netns_fd: int, parent: int) -> Callable[[], None]:
    """A `preexec_fn` for `subprocess.Popen` that makes the child die with its parent (SIGKILL when
    the thread that started it exits, as after SIGKILL of the parent), then enters the network
    namespace open as `netns_fd`. A child whose parent died before the request took effect exits
    at once. Both calls are looked up here, not in the forked child."""
    prctl = _libc.prctl
    setns = _libc.setns

    def setup() -> None:
        if prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 or os.getppid() != parent:
            os._exit(127)
        if setns(netns_fd, _CLONE_NEWNET) != 0:
            os._exit(127)

    return setup


def netns_pids(netns: Iterable[Path]) -> set[int]:
    """The processes whose network namespace is one of `netns` (files such as /run/netns/NAME),
    found as `ip netns pids` finds them: by the namespace's inode under /proc/PID/ns/net."""
    wanted = set()
    for path in netns:
        try:
            st = os.stat(path)
        except OSError:
            continue
        wanted.add((st.st_dev, st.st_ino))
    found: set[int] = set()
    if not wanted:
        return found
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            st = os.stat(f"/proc/{entry.name}/ns/net")
        except OSError:
            continue  # gone, or a zombie (which holds no namespace)
        if (st.st_dev, st.st_ino) in wanted:
            found.add(int(entry.name))
    return found


def start_time(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot, /proc/PID/stat field 22), or None if it
    is gone or a zombie: with the pid, it names one process even after the pid is reused."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def _ethtool(sock: socket.socket, interface: str, request: ctypes.Array[ctypes.c_char]) -> None:
    ifreq = struct.pack("16sP", interface.encode(), ctypes.addressof(request)).ljust(_IFREQ_SIZE, b"\0")
    fcntl.ioctl(sock.fileno(), _SIOCETHTOOL, ifreq)


def _feature_names(sock: socket.socket, interface: str) -> list[str]:
    info = ctypes.create_string_buffer(struct.pack("=IIQI", _ETHTOOL_GSSET_INFO, 0, 1 << _ETH_SS_FEATURES, 0))
    _ethtool(sock, interface, info)
    count = struct.unpack_from("=IIQI", info.raw)[3]
    strings = ctypes.create_string_buffer(
        struct.pack("=III", _ETHTOOL_GSTRINGS, _ETH_SS_FEATURES, count) + bytes(count * _ETH_GSTRING_LEN)
    )
    _ethtool(sock, interface, strings)
    raw = strings.raw[12:]
    return [
        raw[i * _ETH_GSTRING_LEN : (i + 1) * _ETH_GSTRING_LEN].split(b"\0", 1)[0].decode()
        for i in range(count)
    ]


def _feature_blocks(sock: socket.socket, interface: str, count: int) -> list[tuple[int, int, int, int]]:
    """Per 32 features: (available, requested, active, never_changed) bit masks."""
    blocks = (count + 31) // 32
    request = ctypes.create_string_buffer(struct.pack("=II", _ETHTOOL_GFEATURES, blocks) + bytes(16 * blocks))
    _ethtool(sock, interface, request)
    return [struct.unpack_from("=IIII", request.raw, 8 + 16 * i) for i in range(blocks)]


def active_offloads(interface: str) -> list[str]:
    """The offloads (`is_offload`) active on `interface`, in the calling thread's namespace."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        names = _feature_names(sock, interface)
        blocks = _feature_blocks(sock, interface, len(names))
    return [n for i, n in enumerate(names) if is_offload(n) and blocks[i // 32][2] >> (i % 32) & 1]


def disable_offloads(interface: str) -> list[str]:
    """Turns off every offload (`is_offload`) `interface` lets us change (ETHTOOL_SFEATURES, what
    `ethtool -K` sends); returns those still active after (none on a veth)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        names = _feature_names(sock, interface)
        blocks = _feature_blocks(sock, interface, len(names))
        valid = [0] * len(blocks)
        for i, name in enumerate(names):
            if is_offload(name) and blocks[i // 32][0] >> (i % 32) & 1:
                valid[i // 32] |= 1 << (i % 32)
        # Requested bits stay 0: every valid feature is requested off.
        body = b"".join(struct.pack("=II", v, 0) for v in valid)
        request = ctypes.create_string_buffer(struct.pack("=II", _ETHTOOL_SFEATURES, len(blocks)) + body)
        _ethtool(sock, interface, request)
        after = _feature_blocks(sock, interface, len(names))
    return [n for i, n in enumerate(names) if is_offload(n) and after[i // 32][2] >> (i % 32) & 1]
