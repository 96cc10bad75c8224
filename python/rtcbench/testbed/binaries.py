"""The native programs of emulation (`crates/rtcbench-live`): `make build` puts them beside the
package, in `rtcbench/_bin`; an environment variable may name another build."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from rtcbench.testbed.netns import TestbedUnavailable

if TYPE_CHECKING:
    from rtcbench.testbed.netns import Testbed

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


def launch(
    bed: Testbed, node: str | None, exe: Path, cfg: dict[str, Any], config: Path, stderr: Path
) -> subprocess.Popen[str]:
    """Starts native program `exe` the way every one of them is started (`exe CONFIG.json`): its
    configuration written to `config`, in `node`'s namespace (None: the testbed's own), with
    stdin and stdout as text pipes (`ready`, then `go`) and stderr into the file `stderr`."""
    config.write_text(json.dumps(cfg))
    with stderr.open("w") as err:
        return bed.popen(
            node,
            [str(exe), str(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
