#!/bin/sh
# Installs Debian's tshark, which crates/rtcbench-wire/tests/tshark.rs runs to check that the
# captures rtcbench writes dissect as RTP/RTCP. Idempotent: exits 0 at once if tshark is on PATH.
#
# Non-interactive: wireshark-common asks (debconf) whether non-root users may capture packets;
# the answer is preseeded to "no", since rtcbench only reads capture files.
set -eu
DEBCONF_SELECTIONS="wireshark-common wireshark-common/install-setuid boolean false" \
    exec sh "$(dirname "$0")/apt-install.sh" tshark tshark
