#!/bin/sh
# Installs Debian's firefox-esr, which the browser tests run as peers beside Chromium (driven over
# WebDriver BiDi, which it speaks natively: no driver program). Idempotent: exits 0 at once if
# firefox-esr is on PATH.
set -eu
exec sh "$(dirname "$0")/apt-install.sh" firefox-esr firefox-esr
