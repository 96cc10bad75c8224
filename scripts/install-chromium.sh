#!/bin/sh
# Installs Debian's chromium, which tests/test_report.py runs headless to open the HTML report as a
# person would: it loads the file offline, and the test reads the page's console errors and the
# DOM after its scripts ran. Idempotent: exits 0 at once if chromium is on PATH. The fonts are for
# the screenshot in docs/report.png; chromium itself pulls in no font package.
set -eu
exec sh "$(dirname "$0")/apt-install.sh" chromium chromium fonts-dejavu-core
