"""Building a scenario's topology (`rtcbench.testbed.topology`) out of network namespaces and veth
pairs, running processes in it, and removing all of it whatever happens to the run.

Hygiene, in layers:

- `build` is a context manager: on leaving it, normally, by an exception or by Ctrl-C (SIGTERM
  too where `rtcbench.workers.interrupt_on_signals` is in force, as in the command line), the
  processes started with `Testbed.popen` get SIGTERM, then SIGKILL after `STOP_GRACE_S`;
  anything else still in the run's namespaces is killed; the namespaces are deleted, and their
  veths with them. Interrupts are held back meanwhile, so a second Ctrl-C cannot cut it short.
- Processes started with `Testbed.popen` die with the process that started them (SIGKILL through
  `prctl(PR_SET_PDEATHSIG)`), even one killed with SIGKILL.
- Every run records its prefix and its owner (pid and start time) in `STATE_DIR` before it
  creates anything, and forgets it only once everything is gone. Each `build` starts by removing
  what runs whose owner is gone left behind (`remove_stale`): their processes (a grandchild the
  death signal does not reach too) and namespaces.
- A watchdog process, in a session of its own, waits on a pipe that only the owner holds open:
  when the owner dies, even by SIGKILL, the pipe ends with nothing said, and once the owner is
  gone the watchdog removes what the run left as the next `build` would (`_WATCHDOG`). When the
  owner has removed the testbed itself, it says so on the pipe and the watchdog exits at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from rtcbench.scenarios import Variant
from rtcbench.testbed import _linux
from rtcbench.testbed.topology import MAX_NODES, MTU, PREFIX_PATTERN, Topology, scenario_nodes
from rtcbench.workers import STOP_GRACE_S, interrupts_held

__all__ = [
    "NETNS_DIR",
    "STATE_DIR",
    "Testbed",
    "TestbedError",
    "TestbedUnavailable",
    "build",
    "missing",
    "remove_stale",
    "require",
]

NETNS_DIR = Path("/run/netns")
"""Where `ip netns` keeps named namespaces."""

STATE_DIR = Path("/run/rtcbench/netns")
"""One `<prefix>.json` per live run: its owner and namespaces. Under /run, a tmpfs, like the
namespaces themselves: both are gone after a reboot."""

KILL_WAIT_S = 2.0
"""How long the removal of a run waits for the processes it killed in its namespaces to exit."""

OWNER_EXIT_S = 5.0
"""How long the watchdog waits, once its pipe has ended, for the owner to be gone: a dying process
closes its files before it exits."""

WATCHDOG_EXIT_S = 1.0
"""How long the owner waits for its watchdog to exit once it has removed the testbed itself."""

_WATCHDOG = """
import os, signal, sys, time
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})  # held by the owner
package_parent, pid, start, owner_exit_s = sys.argv[1:]
said = b""
while chunk := os.read(0, 4096):  # until the owner closes its end, or dies
    said += chunk
if not said:  # the owner died before it removed its testbed
    sys.path.insert(0, package_parent)
    from rtcbench.testbed import _linux, netns
    deadline = time.monotonic() + float(owner_exit_s)
    while _linux.start_time(int(pid)) == int(start) and time.monotonic() < deadline:
        time.sleep(0.01)
    netns.remove_stale()
"""
"""The watchdog, as `python -P -c` runs it: it imports nothing of rtcbench until it has something
to remove, so starting it costs a bare interpreter's start-up, not the package's imports."""


class TestbedError(RuntimeError):
    """The emulated network could not be built or removed; the message says why, in one line.
    The command line reports it as a problem of the environment (exit status 2)."""

    __test__ = False  # not a test class, though pytest would collect it by its name


class TestbedUnavailable(TestbedError):
    """This machine cannot host an emulated network: no root, no `ip`, no network namespaces. The
    message is one line that says what is missing."""


def missing() -> str | None:
    """What this machine lacks to build a testbed, as one line; None if nothing."""
    if sys.platform != "linux":
        return f"emulation needs Linux network namespaces; this system is {sys.platform}"
    lacks = []
    if os.geteuid() != 0:
        lacks.append("root (to create network namespaces and veth pairs)")
    if shutil.which("ip") is None:
        lacks.append("the `ip` command (Debian package iproute2)")
    if not Path("/proc/self/ns/net").exists():
        lacks.append("a kernel with network namespaces (CONFIG_NET_NS)")
    if not lacks:
        probe = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
        if probe.returncode != 0:
            lacks.append(f"a working `ip netns` (iproute2; `ip netns list` says: {_one_line(probe.stderr)})")
    return "emulation needs " + " and ".join(lacks) if lacks else None


def require() -> None:
    """`TestbedUnavailable` (one line saying what is missing) unless this machine can build a testbed."""
    problem = missing()
    if problem is not None:
        raise TestbedUnavailable(problem)


class Testbed:
    """A built topology and the processes started in it. Made by `build`, valid inside its block."""

    __test__ = False  # not a test class, whatever its name says to pytest

    def __init__(self, topology: Topology, relay_cpu: int | None = None) -> None:
        self.topology = topology
        self.processes: list[subprocess.Popen[Any]] = []
        """Every process started with `popen`, in order."""
        self.relay_cpu = relay_cpu
        """The CPU the relay forwards on, which the namespaces' packet processing was steered off
        (`relay_cpu`); None if it could not be (one CPU, or a kernel without RPS)."""

    def netns_path(self, node: str | None) -> Path:
        """The namespace file of scenario node `node`, or of the net namespace for None."""
        name = self.topology.net_netns if node is None else self.topology.host(node).netns
        return NETNS_DIR / name

    def popen(self, node: str | None, args: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """Starts `args` (`subprocess.Popen`'s other arguments allowed, but not `preexec_fn`) in the
        namespace of scenario node `node`, or of the net namespace (where the relay runs) for None.
        The process dies with the thread that starts it: start it from one that lasts, such as the
        main thread. It is stopped when the testbed is removed, if it has not ended by then."""
        if "preexec_fn" in kwargs:
            raise TypeError("Testbed.popen sets preexec_fn itself")
        fd = os.open(self.netns_path(node), os.O_RDONLY | os.O_CLOEXEC)
        try:
            process = subprocess.Popen(list(args), preexec_fn=_linux.child_setup(fd, os.getpid()), **kwargs)
        finally:
            os.close(fd)
        self.processes.append(process)
        return process

    def run(
        self,
        node: str | None,
        args: Sequence[str],
        *,
        input: Any = None,
        capture_output: bool = False,
        timeout: float | None = None,
        check: bool = False,
        **kwargs: Any,
    ) -> subprocess.CompletedProcess[Any]:
        """`popen`, then waits for the process as `subprocess.run` does (killing it on a timeout
        or an interrupt), with the same arguments."""
        if input is not None:
            kwargs["stdin"] = subprocess.PIPE
        if capture_output:
            kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
        process = self.popen(node, args, **kwargs)
        with process:
            try:
                out, err = process.communicate(input, timeout=timeout)
            except BaseException:
                process.kill()
                process.wait()
                raise
        result = subprocess.CompletedProcess(process.args, process.returncode, out, err)
        if check:
            result.check_returncode()
        return result


@contextlib.contextmanager
def build(variant: Variant) -> Iterator[Testbed]:
    """The topology of `variant` built out of namespaces and veths, for the block's duration:

        with build(rtcbench.resolve("rfc8867-5.1")[0]) as bed:
            bed.run("B", ["ip", "addr"])

    Raises `TestbedUnavailable` before touching anything if this machine cannot host it (`require`)
    and `TestbedError` if building fails (what was built is removed). On leaving the block,
    everything is removed (the module says how); a failure to remove raises `TestbedError` unless
    the block already raised, and leaves the run recorded so that a later `build` retries."""
    require()
    nodes = scenario_nodes(variant)
    if not 1 <= len(nodes) <= MAX_NODES:
        raise TestbedError(
            f"{variant.scenario_id}: an emulated network has 1 to {MAX_NODES} nodes, "
            f"this scenario has {len(nodes)}"
        )
    topology: Topology | None = None
    bed: Testbed | None = None
    watchdog: tuple[subprocess.Popen[bytes], int] | None = None
    try:
        # Held: once recorded, the run is sure to be removed by this block, its watchdog or a
        # later run.
        with interrupts_held(), _locked():
            _remove_stale()
            topology = _claim(nodes, f"{variant.scenario_id} {variant.variant}".strip())
            watchdog = _start_watchdog()
        _create(topology)
        bed = Testbed(topology, _steer_receive(topology, relay_cpu()))
        yield bed
    except BaseException:
        if topology is not None:
            with interrupts_held():
                _teardown(topology, bed.processes if bed else [])
                _release(watchdog)
        raise
    assert topology is not None and bed is not None
    with interrupts_held():
        problems = _teardown(topology, bed.processes)
        _release(watchdog)
    if problems:
        raise TestbedError(f"could not remove testbed {topology.prefix}: {'; '.join(problems)}")


def _start_watchdog() -> tuple[subprocess.Popen[bytes], int]:
    """Starts a watchdog of this process's run (`_WATCHDOG`); the watchdog and the write end of
    its pipe, which only this process holds (not inheritable)."""
    pid = os.getpid()
    read_end, write_end = os.pipe()
    try:
        process = subprocess.Popen(
            [sys.executable, "-P", "-c", _WATCHDOG, str(Path(__file__).resolve().parents[2]), str(pid),
             str(_linux.start_time(pid)), str(OWNER_EXIT_S)],
            stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True,  # neither Ctrl-C nor a kill of the run's process group reaches it
        )  # fmt: skip
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    return process, write_end


def _release(watchdog: tuple[subprocess.Popen[bytes], int] | None) -> None:
    """Tells the watchdog that this process has removed what it could (the run stays recorded if
    not, for a later run to retry), and waits for it to exit."""
    if watchdog is None:
        return
    process, write_end = watchdog
    try:
        os.write(write_end, b"done")
    finally:
        os.close(write_end)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(WATCHDOG_EXIT_S)


def remove_stale() -> list[str]:
    """Removes what runs whose owner process is gone left behind (processes in their namespaces,
    the namespaces, their veths) and forgets those runs; returns their prefixes. `build` does it
    first, every time."""
    with _locked():
        return _remove_stale()


def _remove_stale() -> list[str]:
    """`remove_stale`, under `_locked`."""
    removed = []
    for record in sorted(STATE_DIR.glob("rb*.json")):
        prefix = record.stem
        if not PREFIX_PATTERN.fullmatch(prefix):
            continue
        try:
            owner = json.loads(record.read_text())
            alive = _linux.start_time(int(owner["pid"])) == int(owner["start"])
        except (OSError, ValueError, KeyError, TypeError):
            alive = False  # records are renamed into place whole: this one is no live run's
        if alive:
            continue
        if not _remove(prefix):
            record.unlink(missing_ok=True)
            removed.append(prefix)
    return removed


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """Holds the lock under which runs are swept and prefixes chosen, across processes."""
    STATE_DIR.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(STATE_DIR / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _claim(nodes: list[str], what: str) -> Topology:
    """A fresh prefix, recorded with this process as its owner before anything is created (under
    `_locked`); the topology of `nodes` under it."""
    pid = os.getpid()
    start = _linux.start_time(pid)
    while True:
        prefix = "rb" + secrets.token_hex(3)
        record = STATE_DIR / f"{prefix}.json"
        if not record.exists() and not _namespaces(prefix):
            break
    topology = Topology.plan(nodes, prefix)
    state = {"prefix": prefix, "pid": pid, "start": start, "scenario": what, "netns": topology.namespaces}
    tmp = STATE_DIR / f".{prefix}.tmp"
    tmp.write_text(json.dumps(state) + "\n")
    tmp.rename(record)
    return topology


def _namespaces(prefix: str) -> list[str]:
    try:
        return sorted(n for n in os.listdir(NETNS_DIR) if n.startswith(prefix + "-"))
    except FileNotFoundError:
        return []


def _create(topology: Topology) -> None:
    net = topology.net_netns
    # One `ip` for every namespace and veth pair; each veth end is created in its namespace.
    commands = [f"netns add {ns}" for ns in topology.namespaces]
    for h in topology.hosts:
        commands.append(
            f"link add {h.interface} address {h.mac} mtu {MTU} netns {h.netns} type veth"
            f" peer name {h.net_interface} address {h.net_mac} mtu {MTU} netns {net}"
        )
    _ip([None], [commands])
    # While every link is down: no IPv6 (nothing crosses but what the nodes send), no offloads,
    # and no forwarding by the net namespace's kernel (the relay forwards).
    _in_netns(net, [h.net_interface for h in topology.hosts], ip_forward=False)
    for h in topology.hosts:
        _in_netns(h.netns, [h.interface])
    per_netns = {
        net: [
            line
            for h in topology.hosts
            for line in (
                f"addr add {h.net_address} dev {h.net_interface}",
                f"link set dev {h.net_interface} up",
                f"neigh replace {h.address.ip} lladdr {h.mac} dev {h.net_interface} nud permanent",
            )
        ]
    }
    for h in topology.hosts:
        per_netns[h.netns] = [
            "link set dev lo up",
            f"addr add {h.address} dev {h.interface}",
            f"link set dev {h.interface} up",
            f"neigh replace {h.net_address.ip} lladdr {h.net_mac} dev {h.interface} nud permanent",
            f"route add default via {h.net_address.ip} dev {h.interface}",
        ]
    _ip([*per_netns], list(per_netns.values()))


def relay_cpu() -> int | None:
    """The CPU the relay forwards on: the last one this process may use, if it may use two or more.
    The testbed steers the namespaces' packet processing to the others (`_steer_receive`)."""
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[-1] if len(cpus) > 1 else None


def _steer_receive(topology: Topology, cpu: int | None) -> int | None:
    """Receive packet steering (RPS) on every veth end, to every CPU but `cpu`: a veth delivers a
    frame by running the receiving namespace's stack on the sender's CPU, inside its send call,
    so without it a frame the relay sends makes the relay run the host's TCP (its ACKs, and the
    next window it sends back), and departures due meanwhile wait: measured on seed000-5.4.7
    with kernel CUBIC, p99 lateness 410-480 µs without, 120 µs with (docs/emulation.md). Returns
    `cpu`, or None if the kernel has no RPS (nothing is changed then)."""
    if cpu is None:
        return None
    mask = f"{sum(1 << c for c in os.sched_getaffinity(0) if c != cpu):x}"
    per_netns: dict[str, list[str]] = {topology.net_netns: [h.net_interface for h in topology.hosts]}
    for h in topology.hosts:
        per_netns.setdefault(h.netns, []).append(h.interface)
    # /sys/class/net shows the devices of the namespace sysfs was mounted in: `ip netns exec`
    # mounts one for the namespace it enters.
    processes = [
        subprocess.Popen(
            ["ip", "netns", "exec", netns, "sh", "-c", _RPS_SCRIPT, "rps", mask, *interfaces],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for netns, interfaces in per_netns.items()
    ]
    failed = [(p, p.communicate()[1]) for p in processes]
    failed = [(p, err) for p, err in failed if p.returncode != 0]
    if any(p.returncode == _NO_RPS for p, _ in failed):
        return None
    if failed:
        raise TestbedError(f"could not steer packet processing off CPU {cpu}: {_one_line(failed[0][1])}")
    return cpu


_NO_RPS = 3
"""`_RPS_SCRIPT`'s status when the kernel has no RPS (CONFIG_RPS off: no `rps_cpus` file)."""

_RPS_SCRIPT = """
mask=$1; shift
for i in "$@"; do
    for q in /sys/class/net/"$i"/queues/rx-*; do
        [ -e "$q/rps_cpus" ] || exit 3
        echo "$mask" > "$q/rps_cpus" || exit 1
    done
done
"""


def _in_netns(netns: str, interfaces: list[str], ip_forward: bool | None = None) -> None:
    """Sysctls and offloads in one namespace (on a thread that enters it)."""

    def configure() -> list[str]:
        sysctl = Path("/proc/sys/net")
        if (sysctl / "ipv6").exists():
            (sysctl / "ipv6/conf/all/disable_ipv6").write_text("1")
            (sysctl / "ipv6/conf/default/disable_ipv6").write_text("1")
        if ip_forward is not None:
            (sysctl / "ipv4/ip_forward").write_text("1" if ip_forward else "0")
        return [f"{i}: {', '.join(left)}" for i in interfaces if (left := _linux.disable_offloads(i))]

    try:
        left = _linux.call_in_netns(NETNS_DIR / netns, configure)
    except OSError as e:
        raise TestbedError(f"could not configure namespace {netns}: {e.strerror or e}") from None
    if left:
        raise TestbedError(f"offloads stay on in namespace {netns}: {'; '.join(left)}")


def _ip(netns: list[str | None], batches: list[list[str]]) -> None:
    """Runs the batches of `ip` commands (`ip -b -`) at once, batch i in namespace `netns[i]` (in
    this process's namespace for None)."""
    started = []
    for ns, commands in zip(netns, batches, strict=True):
        where = ["-n", ns] if ns else []
        argv = ["ip", *where, "-b", "-"]
        p = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        started.append((argv, commands, p))
    failures = []
    for argv, commands, p in started:
        _, err = p.communicate("\n".join(commands) + "\n")
        if p.returncode != 0:
            failures.append(f"{' '.join(argv)}: {_one_line(err)}")
    if failures:
        raise TestbedError(f"could not build the emulated network: {failures[0]}")


def _one_line(text: str) -> str:
    return "; ".join(line.strip() for line in text.splitlines() if line.strip()) or "(no message)"


def stop_processes(processes: Sequence[subprocess.Popen[Any]]) -> None:
    """Stops `processes`: SIGTERM to those still running, then SIGKILL to any that has not exited
    `STOP_GRACE_S` later."""
    for p in processes:
        if p.poll() is None:
            with contextlib.suppress(OSError):
                p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_S
    for p in processes:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _teardown(topology: Topology, processes: list[subprocess.Popen[Any]]) -> list[str]:
    """Stops `processes` (SIGTERM, then SIGKILL after `STOP_GRACE_S`), then removes the run
    (`_remove`) and, if that left nothing, its record. What could not be removed, as phrases."""
    stop_processes(processes)
    problems = _remove(topology.prefix)
    if not problems:
        (STATE_DIR / f"{topology.prefix}.json").unlink(missing_ok=True)
    return problems


def _remove(prefix: str) -> list[str]:
    """Kills every process in the namespaces of `prefix` and deletes those namespaces (which
    destroys their veths). A namespace that still has a process is kept (deleting its name would
    hide it from a later attempt). What could not be removed, as phrases."""
    names = _namespaces(prefix)
    if not names:
        return []
    problems = []
    survivors = _kill_all([NETNS_DIR / n for n in names])
    if survivors:
        problems.append(f"processes {sorted(survivors)} would not die")
        return problems
    deleted = subprocess.run(
        ["ip", "-force", "-b", "-"],
        input="".join(f"netns delete {n}\n" for n in names),
        capture_output=True,
        text=True,
        check=False,
    )
    left = _namespaces(prefix)
    if left:
        problems.append(f"namespaces {', '.join(left)} remain ({_one_line(deleted.stderr)})")
    return problems


def _kill_all(netns: list[Path]) -> set[int]:
    """SIGKILLs every process in `netns` until none is left, for at most `KILL_WAIT_S`; the pids
    still there after that."""
    me = os.getpid()
    deadline = time.monotonic() + KILL_WAIT_S
    while True:
        pids = _linux.netns_pids(netns) - {me}
        if not pids or time.monotonic() > deadline:
            return pids
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.002)
