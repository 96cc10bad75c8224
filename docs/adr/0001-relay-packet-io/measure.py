"""Runs relaybench.c (ADR 0001) on a fresh two-node testbed, for each packet I/O and wait mode.

    gcc -O2 -o /tmp/relaybench docs/adr/0001-relay-packet-io/relaybench.c
    .venv/bin/python docs/adr/0001-relay-packet-io/measure.py /tmp/relaybench [chrt -f 50]

The arguments after the binary prefix its command line (e.g. `chrt -f 50` for SCHED_FIFO).
"""

from __future__ import annotations

import subprocess
import sys

import rtcbench
from rtcbench import testbed

RATE_PPS = 5000
PACKETS = 10000


def main() -> None:
    binary, prefix = sys.argv[1], sys.argv[2:]
    variant = rtcbench.resolve("rfc8867-5.1")[0]
    for mode in ("packet", "tun"):
        for spin_us in (0, 50):
            with testbed.build(variant) as bed:
                a, b = bed.topology.host("A"), bed.topology.host("B")
                device = b.net_interface if mode == "packet" else f"{bed.topology.prefix}-tun"
                args = [
                    *prefix,
                    binary,
                    mode,
                    str(bed.netns_path(None)),
                    str(bed.netns_path("B")),
                    device,
                    str(a.address.ip),
                    str(b.address.ip),
                    b.mac,
                    b.net_mac,
                    str(RATE_PPS),
                    str(PACKETS),
                    str(spin_us),
                ]
                out = subprocess.run(args, capture_output=True, text=True, check=True)
                print(out.stdout.strip())


if __name__ == "__main__":
    main()
