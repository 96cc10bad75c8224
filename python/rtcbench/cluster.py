"""Real-time runs spread over a Ray cluster: `rtcbench reproduce --ray`, `calibrate --ray` and
`stacks --ray` (docs/reproduction.md, "On a cluster").

A browser, GStreamer or emulated call runs whole on one node, in that node's own network
namespaces, as a Ray task that takes a share of the node's `EMULATION_RESOURCE`: a node started
with one unit of it (`ray start --resources='{"rtcbench-emulation": 1}'`) runs one call at a
time, or `BROWSER_JOBS` calls of the kind that may share a machine (one call over wired links:
`reproduce.shares_the_machine`), as `rtcbench reproduce` does on one machine. A run that was not
a fair measurement beside another runs again alone, on a whole node. Each run writes its folder
under the command's results folder, which every node must see at the same path (a shared file
system); the tables are gathered and written by the machine that started the command, so a
cluster's tables are a local run's and an interrupted command resumes from what any node
finished.

Ray is an optional dependency (`pip install 'rtcbench[ray]'`); a command without `--ray` never
imports it.
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from rtcbench.results import InputError
from rtcbench.suite import EMULATION_RESOURCE, _Job
from rtcbench.workers import STOP_GRACE_S, WAKE_S

__all__ = ["CONNECT_S", "Task", "needs_ray", "reachable", "run_tasks", "session"]

_T = TypeVar("_T")

Task = tuple[Callable[[_Job], Any], _Job, float]
"""What one Ray task runs: a picklable function of one job, the job, and the share of a node's
`EMULATION_RESOURCE` it takes (1.0: the node alone)."""


def needs_ray() -> Any:
    """The `ray` module, or `InputError` in one line saying how to install it."""
    try:
        import ray
    except ImportError as e:
        raise InputError("--ray needs Ray: pip install 'rtcbench[ray]'") from e
    return ray


@contextlib.contextmanager
def session(address: str | None) -> Iterator[None]:
    """Connects this process to the Ray cluster at `address` ("auto": the one this machine joined)
    for the block, unless it is connected already or `address` is None; disconnects at its end
    if it connected. A command connects once, for its simulated and its real-time runs."""
    if address is None:
        yield
        return
    ray = needs_ray()
    if ray.is_initialized():
        yield
        return
    reachable(address)
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise InputError(f"--ray {address}: no Ray cluster there ({e})") from None
    try:
        yield
    finally:
        ray.shutdown()


CONNECT_S = 3.0
"""How long `reachable` waits for a cluster's head to answer: Ray itself retries for minutes."""


def reachable(address: str) -> None:
    """Raises `InputError` in one line unless something listens at `address` (HOST:PORT; "auto"
    and `ray://` addresses are left to Ray), so that a mistyped address fails at once instead of
    in Ray's own minutes of retries."""
    if address == "auto" or address.startswith("ray://"):
        return
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise InputError(f"--ray {address}: not HOST:PORT, 'auto' or ray://HOST:PORT")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_S).close()
    except OSError as e:
        raise InputError(f"--ray {address}: no Ray cluster answers there ({e.strerror or e})") from None


def run_tasks(tasks: Sequence[Task], on_done: Callable[[int, Any], list[Task] | None]) -> None:
    """Runs `tasks` on the connected cluster (`session`), each as a Ray task holding its share of
    a node's `EMULATION_RESOURCE` and no CPU of Ray's count (a call's processes are the node's
    own), and calls `on_done(index, result)` in this process as each ends; what `on_done`
    returns is run next, numbered after the tasks before it. On an interrupt or an error every
    task still running is cancelled (its run removes what it made, as a local run does) and
    given `STOP_GRACE_S` to end."""
    ray = needs_ray()
    remote = {}

    def submit(fn: Callable[[_Job], Any], job: _Job, share: float) -> Any:
        if share not in remote:
            remote[share] = ray.remote(num_cpus=0, resources={EMULATION_RESOURCE: share}, max_retries=0)(
                _call
            )
        return remote[share].remote(fn, job)

    pending = {submit(*task): i for i, task in enumerate(tasks)}
    count = len(tasks)
    try:
        while pending:
            # With a timeout, so that an interrupt is taken at once (`workers.WAKE_S`).
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=WAKE_S)
            for ref in ready:
                i = pending.pop(ref)
                for task in on_done(i, ray.get(ref)) or []:
                    pending[submit(*task)] = count
                    count += 1
    except BaseException:
        for ref in pending:
            ray.cancel(ref)
        with contextlib.suppress(Exception):
            ray.wait(list(pending), num_returns=len(pending), timeout=STOP_GRACE_S)
        raise


def _call(fn: Callable[[_Job], _T], job: _Job) -> _T:
    """The body of every Ray task: `fn(job)` on the node the cluster chose."""
    return fn(job)
