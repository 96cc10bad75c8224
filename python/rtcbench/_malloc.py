"""glibc's allocator, set once per process before a simulation starts (docs/limits.md, "Memory").

By default glibc raises its mmap threshold to the size of each mapped block a process frees (up
to 32 MiB). After the first pieces of trace, the simulator's piece-sized columns (megabytes each)
then come from the heap instead of their own mappings, and the heap keeps freed pages resident:
two hours of 16 calls and 4 CUBIC flows grew from 460 to 517 MiB between 900 and 3600 simulated
seconds, with the trace pieces discarded as they came from 246 to 298 MiB. With the threshold
set, the adjustment is off and those blocks are mapped and unmapped at their own size: 387 and
388 MiB (the simulator alone: 142 and 152). Speed is within noise (`benches/memory.py`).
"""

from __future__ import annotations

import ctypes
import functools
import sys

M_MMAP_THRESHOLD = -3
"""`mallopt`'s parameter number for the mmap threshold (glibc's malloc.h)."""
MMAP_THRESHOLD = 128 * 1024
"""glibc's own initial threshold (`DEFAULT_MMAP_THRESHOLD_MIN`), kept fixed."""


@functools.cache
def fix_mmap_threshold() -> bool:
    """Sets glibc's mmap threshold (once per process); False where the C library is not glibc or
    refuses, which leaves its default in place."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(ctypes.c_int(M_MMAP_THRESHOLD), ctypes.c_int(MMAP_THRESHOLD)))
    except (OSError, AttributeError):
        return False
