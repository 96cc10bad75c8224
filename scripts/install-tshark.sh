#!/bin/sh
# Installs Debian's tshark, which crates/rtcbench-wire/tests/tshark.rs runs to check that the
# captures rtcbench writes dissect as RTP/RTCP. Idempotent: exits 0 at once if tshark is on PATH.
#
# Non-interactive: wireshark-common asks (debconf) whether non-root users may capture packets;
# the answer is preseeded to "no", since rtcbench only reads capture files.
set -eu

if command -v tshark >/dev/null 2>&1; then
    echo "tshark already installed: $(tshark --version | head -n 1)"
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "install-tshark.sh: tshark is missing and installing it needs root (or sudo)" >&2
    exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-tshark.sh: no apt-get; install tshark (Wireshark's CLI) with your package manager" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# With a noninteractive frontend debconf would take the default (also "no"); say it explicitly.
if command -v debconf-set-selections >/dev/null 2>&1; then
    echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
fi
$SUDO apt-get update
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends tshark

tshark --version | head -n 1
