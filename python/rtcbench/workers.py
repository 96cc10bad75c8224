"""Worker processes that stop when their parent is interrupted and die with it.

A suite, a sweep and a report share work between spawned worker processes. Three rules keep a
machine clean, whatever happens to the command that started them:

- an interrupt reaches every worker: Ctrl-C in a terminal signals the whole process group, and a
  SIGINT or SIGTERM sent to the parent alone is passed on by `stop` (workers turn SIGTERM into
  KeyboardInterrupt, so the run they hold removes its temporary folder and they exit);
- a worker dies with its parent, even one killed with SIGKILL: Linux sends it SIGTERM when the
  parent goes (`prctl(PR_SET_PDEATHSIG)`), and a worker started after its parent died exits at once;
- the parent waits at most `STOP_GRACE_S` for its workers, then kills what is left.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import time
from concurrent.futures import ProcessPoolExecutor
from types import FrameType

__all__ = ["STOP_GRACE_S", "init_worker", "interrupt_on_sigterm", "stop"]

STOP_GRACE_S = 0.8
"""How long `stop` waits for workers to finish their clean-up before it kills them."""

_PR_SET_PDEATHSIG = 1


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def interrupt_on_sigterm() -> None:
    """Makes SIGTERM interrupt this process as Ctrl-C does (KeyboardInterrupt), so what a command
    was writing is cleaned up the same way."""
    signal.signal(signal.SIGTERM, _raise_interrupt)


def _die_with_parent(parent: int) -> None:
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(libc_name, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        # The parent died before the request took effect: nobody will collect this worker's work.
        os._exit(1)


def init_worker(parent: int) -> None:
    """Initializer of every worker process: dies with `parent` (its pid) and stops on SIGTERM
    or SIGINT with KeyboardInterrupt."""
    _die_with_parent(parent)
    interrupt_on_sigterm()
    signal.signal(signal.SIGINT, signal.default_int_handler)


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
    pool.shutdown(wait=False, cancel_futures=True)
