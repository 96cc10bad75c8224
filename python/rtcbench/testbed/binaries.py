"""The native programs of emulation (`crates/rtcbench-live`): `make build` puts them beside the
package, in `rtcbench/_bin`; an environment variable may name another build."""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO

from rtcbench.testbed.netns import TestbedUnavailable

PACKAGED = Path(__file__).resolve().parent.parent / "_bin"


def find(name: str, env: str, what: str) -> Path:
    """The executable `name`: `$env` if set, else the packaged one. `TestbedUnavailable` (one
    line, naming `what`) if it is not an executable."""
    path = Path(os.environ.get(env, PACKAGED / name))
    if not os.access(path, os.X_OK):
        how = f"${env} names {path}, which" if env in os.environ else f"{path}"
        raise TestbedUnavailable(f"the {what} is not built: {how} is not an executable; run `make build`")
    return path


def pipe(stream: IO[str] | None) -> IO[str]:
    """A child's stdin or stdout, for a child started with pipes (`subprocess.PIPE`)."""
    assert stream is not None, "the process is started with pipes"
    return stream
