"""A TURN relay for browser calls: Debian's coturn (`turnserver`) in a node's namespace, with one
long-term credential, listening on the node's address (docs/browser.md, "TURN"). Peers told to use
only relayed candidates (`Peer.configure(..., relay_only=True)`) then send every packet through
it, as in seed 003's relayed calls.

    with turn.Turn.start(bed, "T", work / "turn") as relay:
        for peer in peers:
            peer.configure(relay.ice_servers(), relay_only=True)
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rtcbench.testbed.netns import Testbed, TestbedError, stop_processes

__all__ = ["TURNSERVER", "Turn", "TurnError", "turnserver"]

TURNSERVER = "turnserver"
"""coturn's executable (Debian's `coturn`, installed by `scripts/install-coturn.sh`)."""
PORT = 3478
START_TIMEOUT_S = 10.0
USER, PASSWORD, REALM = "rtcbench", "rtcbench", "rtcbench"


class TurnError(TestbedError):
    """The TURN server did not start (one line)."""


def turnserver() -> str | None:
    """coturn's path, or None if it is not installed."""
    return shutil.which(TURNSERVER)


@dataclass
class Turn:
    """A running TURN server at `address`:`PORT` (UDP)."""

    node: str
    address: str
    process: subprocess.Popen[Any]

    @classmethod
    @contextlib.contextmanager
    def start(cls, bed: Testbed, node: str, work: Path) -> Iterator[Turn]:
        """Starts coturn in `node`'s namespace, listening and relaying on the node's address, its
        log under `work`; stops it when the block ends."""
        exe = turnserver()
        if exe is None:
            raise TurnError(f"{TURNSERVER} is not installed (make coturn)")
        work.mkdir(parents=True, exist_ok=True)
        address = str(bed.topology.host(node).address.ip)
        log_path = work / "turnserver.log"
        log = log_path.open("wb")
        args = [
            exe,
            "-n",  # no configuration file: everything is here
            "--no-cli",
            "--no-tls",
            "--no-dtls",
            f"--listening-ip={address}",
            f"--relay-ip={address}",
            f"--listening-port={PORT}",
            "--min-port=49152",
            "--max-port=65535",
            "--lt-cred-mech",
            f"--user={USER}:{PASSWORD}",
            f"--realm={REALM}",
            "--fingerprint",
            "--log-file=stdout",
            "--simple-log",
            # Its pid file and (unused) user database in the run's folder, not in /var.
            f"--pidfile={work / 'turnserver.pid'}",
            f"--userdb={work / 'turndb'}",
        ]
        process = bed.popen(node, args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            # The listeners are up once coturn has made its servers.
            while "Total General servers" not in log_path.read_text(errors="replace"):
                if process.poll() is not None:
                    raise TurnError(
                        f"turnserver in {node} exited with status {process.returncode} (see {log_path})"
                    )
                if time.monotonic() > deadline:
                    raise TurnError(f"turnserver in {node} did not listen within {START_TIMEOUT_S:g} s")
                time.sleep(0.05)
            yield cls(node, address, process)
        finally:
            stop_processes([process])
            log.close()

    def ice_servers(self) -> list[dict[str, Any]]:
        """The RTCIceServer list that points a peer at this server."""
        return [
            {"urls": f"turn:{self.address}:{PORT}?transport=udp", "username": USER, "credential": PASSWORD}
        ]
