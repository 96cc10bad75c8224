#!/bin/sh
# Installs Debian's janus, the SFU that tests/test_browser.py runs in a testbed namespace for a
# browser call through a VideoRoom (docs/browser.md, "SFU"). Idempotent: exits 0 at once if janus
# is on PATH.
set -eu
exec sh "$(dirname "$0")/apt-install.sh" janus janus
