"""Worker processes that stop when their parent is interrupted and die with it.

A suite, a sweep and a report share work between spawned worker processes. These rules keep a
machine clean, whatever happens to the command that started them:

- an interrupt reaches every worker: Ctrl-C in a terminal signals the whole process group, and a
  SIGINT or SIGTERM sent to the parent alone is passed on by `stop`. A worker interrupted in a
  job lets the job clean up (a run removes its temporary folder), deaf to further interrupts, and
  exits with status 130; an idle worker exits at once. Neither prints a traceback;
- a worker dies with its parent, even one killed with SIGKILL: Linux sends it SIGTERM when the
  parent goes (`prctl(PR_SET_PDEATHSIG)`), and a worker whose parent died before that request
  took effect exits at once;
- workers are started with interrupts held back (`spawning`), so none is ever left half-started
  and unknown to its parent; they take the held-back interrupt once they can handle it;
- the parent waits at most `STOP_GRACE_S` for its workers, then kills what is left.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from types import FrameType
from typing import ParamSpec, TypeVar

__all__ = [
    "INTERRUPTED",
    "STOP_GRACE_S",
    "WAKE_S",
    "cpus",
    "init_worker",
    "interrupt_on_signals",
    "interrupts_held",
    "job",
    "pool",
    "single_threaded_polars",
    "spawning",
    "stop",
    "stopping",
    "worker_count",
]

STOP_GRACE_S = 0.8
"""How long `stop` waits for workers to finish their clean-up before it kills them."""

MANAGER_EXIT_S = 0.2
"""How long `stop` then waits for the pool's manager thread, which ends at once once the workers
are gone (see `stop`)."""

WAKE_S = 0.1
"""Longest the parent waits for its workers in one go: a signal may be delivered to any thread,
and Python runs its handler (raising the interrupt) only when the main thread wakes up."""

INTERRUPTED = 130
"""Exit status of an interrupted worker (and command): 128 + SIGINT, as a shell reports it."""

_REDELIVER_S = 0.001
"""How long after an interrupt was swallowed (see `_take_swallowed_interrupts`) it comes again."""

_PR_SET_PDEATHSIG = 1
_SIGNALS = {signal.SIGINT, signal.SIGTERM}
_in_job = False
"""In a worker: whether it is running a job (an interrupt then unwinds the job first)."""

_P = ParamSpec("_P")
_T = TypeVar("_T")


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def interrupt_on_signals(sigint: object = None) -> None:
    """Makes SIGINT and SIGTERM interrupt this process as Ctrl-C does (KeyboardInterrupt), so what
    a command was writing is cleaned up the same way. SIGINT too, because a process started in
    the background (`cmd &` or `nohup cmd &` in a script, some CI wrappers) inherits it ignored,
    and Python then leaves it ignored: `kill -INT` would do nothing. A handler already set
    (Python's own, as usual) is kept; `sigint` names it when the one in force is a stand-in (the
    command line's while it loads), so each handler is replaced at once, never by the default."""
    current = signal.getsignal(signal.SIGINT) if sigint is None else sigint
    signal.signal(signal.SIGINT, current if callable(current) else signal.default_int_handler)
    signal.signal(signal.SIGTERM, _raise_interrupt)


def _take_swallowed_interrupts() -> None:
    # Python runs a signal's handler between two bytecodes of the main thread, which may be inside
    # a finalizer or a callback from C (polars' `DataTypeClass` was one): the KeyboardInterrupt it
    # raises there cannot propagate, and Python prints "Exception ignored in" and a traceback and
    # carries on as if nothing had happened. In a worker (only there: in the command's own process
    # an interrupt already unwinding can be reported this way too, and a second one then killed it
    # at exit) such an interrupt is delivered again a moment later instead, from another thread:
    # delivered at once, the handler would run inside this hook, which cannot raise either.
    # "A moment later" may still be inside the hook: `Thread.start` waits for the new thread,
    # and on a loaded machine the timer fired first in 6 of 80 tries; that interrupt was lost in
    # turn and the job ran on, deaf. So one that lands here is caught and delivered again.
    default = sys.unraisablehook
    main = threading.main_thread().ident

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        if not issubclass(unraisable.exc_type, KeyboardInterrupt) or main is None:
            default(unraisable)
            return
        while True:
            try:
                if _in_job:
                    # `_worker_interrupt` made the worker deaf to further interrupts: hear this
                    # one again.
                    signal.signal(signal.SIGINT, _worker_interrupt)
                again = threading.Timer(_REDELIVER_S, signal.pthread_kill, (main, signal.SIGINT))
                again.daemon = True
                again.start()
                return
            except KeyboardInterrupt:
                continue

    sys.unraisablehook = hook


def _worker_interrupt(signum: int, frame: FrameType | None) -> None:
    if not _in_job:
        os._exit(INTERRUPTED)
    # One interrupt is enough: Ctrl-C signals the whole process group and the parent passes it on
    # too (`stop`), and a second KeyboardInterrupt raised inside the job's clean-up would cut it
    # short (a temporary folder left behind, "Exception ignored" and a traceback from a generator
    # closed half-way). The parent kills a worker whose clean-up outlasts `STOP_GRACE_S`.
    # A handler that does nothing, not SIG_IGN: a signal that arrived meanwhile would then raise
    # "Signal 15 ignored due to race condition" when Python takes it.
    for sig in _SIGNALS:
        signal.signal(sig, _ignore)
    raise KeyboardInterrupt


def _ignore(signum: int, frame: FrameType | None) -> None:
    pass


def _die_with_parent(parent: int) -> None:
    # glibc by its soname (`ctypes.util.find_library` would spawn `ldconfig -p`).
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        # The parent died before the request took effect: nobody will collect this worker's work.
        os._exit(INTERRUPTED)


def init_worker(parent: int) -> None:
    """Initializer of every worker process (`parent` is the parent's pid): handles interrupts
    as the module says, takes any interrupt held back while it started, and dies with its parent."""
    for sig in _SIGNALS:
        signal.signal(sig, _worker_interrupt)
    _take_swallowed_interrupts()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
    _die_with_parent(parent)


def job(fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """Runs `fn` in a worker as one job: an interrupt unwinds it (its clean-up runs), then the
    worker exits with `INTERRUPTED` instead of taking the next job."""
    global _in_job
    _in_job = True
    try:
        return fn(*args, **kwargs)
    except KeyboardInterrupt:
        os._exit(INTERRUPTED)
    finally:
        _in_job = False


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """Holds back SIGINT and SIGTERM for the block, and takes them after it: for work that must
    not stop half done. Call it on the main thread. Blocking the signals there is not enough: the
    kernel may deliver one to another thread (polars' pool, started earlier, does not block
    them), and Python then runs the handler on the main thread all the same. So the block also
    records a signal instead of acting on it, and raises it again once the handlers are back."""
    held: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        held.append(signum)

    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    previous = {sig: signal.signal(sig, hold) for sig in _SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        for signum in dict.fromkeys(held):
            signal.raise_signal(signum)


@contextlib.contextmanager
def spawning() -> Iterator[None]:
    """Holds back SIGINT and SIGTERM while worker processes are started (`submit` may start one):
    a process is then either not started or known to its pool, never in between. The children
    inherit the held-back signals until `init_worker`."""
    with interrupts_held():
        yield


@contextlib.contextmanager
def single_threaded_polars() -> Iterator[None]:
    """Workers started meanwhile run polars on one thread: one worker per core already uses every
    core, and polars' own pool on top made the RFC 8867 suite about 10 % slower on 2 cores.
    (Spawned workers read their environment once, at start.)"""
    saved = os.environ.get("POLARS_MAX_THREADS")
    os.environ["POLARS_MAX_THREADS"] = "1"
    try:
        yield
    finally:
        if saved is None:
            del os.environ["POLARS_MAX_THREADS"]
        else:
            os.environ["POLARS_MAX_THREADS"] = saved


def cpus() -> int:
    """CPUs this process may run on (a container or `taskset` may allow fewer than the machine has)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def worker_count(jobs: int | None) -> int:
    """How many worker processes `jobs` asks for (None: one per CPU), never more than `cpus()`:
    runs and figures keep a core busy each, so more workers only compete for the cores, and each
    holds its own copy of polars and rtcbench (16 workers on 2 cores took 4 GB and ran slower)."""
    return min(jobs or cpus(), cpus())


def pool(workers: int) -> ProcessPoolExecutor:
    """A pool of `workers` spawned (not forked: polars starts threads, which a fork would not
    copy) worker processes that follow the module's rules. Submit to it inside `spawning`, jobs
    wrapped in `job`, and use it inside `stopping`."""
    ctx = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(
        max_workers=workers, mp_context=ctx, initializer=init_worker, initargs=(os.getpid(),)
    )


@contextlib.contextmanager
def stopping(pool: ProcessPoolExecutor) -> Iterator[None]:
    """Stops the pool's workers (`stop`) on an interrupt or any error in the block. A pool broken
    because its workers were interrupted (Ctrl-C reached them first) is an interrupt, not an
    error: KeyboardInterrupt is raised then."""
    try:
        yield
    except BrokenProcessPool:
        stop(pool)
        # A broken pool may already have dropped its table of processes (None).
        processes = list((getattr(pool, "_processes", None) or {}).values())
        if any(p.exitcode in (INTERRUPTED, -signal.SIGTERM, -signal.SIGINT) for p in processes):
            raise KeyboardInterrupt from None
        raise
    except BaseException:
        stop(pool)
        raise


def stop(pool: ProcessPoolExecutor) -> None:
    """Interrupts every worker of `pool` (SIGTERM), drops the work not started, waits up to
    `STOP_GRACE_S` for the workers to exit and kills those still there."""
    processes = list(getattr(pool, "_processes", {}).values())
    for p in processes:
        with contextlib.suppress(OSError, ValueError):
            p.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for p in processes:
        with contextlib.suppress(OSError, ValueError):
            p.join(max(0.0, deadline - time.monotonic()))
    for p in processes:
        with contextlib.suppress(OSError, ValueError):
            if p.is_alive():
                p.kill()
                p.join(1.0)
    # The pool's manager thread closes its wake-up pipe as it ends, while the interpreter's exit
    # hook (concurrent.futures.process._python_exit) writes to the same pipe; CPython 3.11 does
    # not lock the two, and an interrupted command could end with "Exception ignored ... Bad file
    # descriptor" and a traceback. With the workers gone the thread ends at once: wait for it
    # (taken before `shutdown`, which forgets it).
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    if manager is not None and manager is not threading.current_thread():
        manager.join(MANAGER_EXIT_S)
