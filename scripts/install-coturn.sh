#!/bin/sh
# Installs Debian's coturn, the TURN server that tests/test_browser.py runs in a testbed namespace
# for a browser call relayed through it (docs/browser.md, "TURN"). Idempotent: exits 0 at once if
# turnserver is on PATH.
set -eu
exec sh "$(dirname "$0")/apt-install.sh" turnserver coturn
