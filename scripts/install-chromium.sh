#!/bin/sh
# Installs Debian's chromium, which tests/test_report.py runs headless to open the HTML report as a
# person would: it loads the file offline, and the test reads the page's console errors and the
# DOM after its scripts ran. Idempotent: exits 0 at once if chromium is on PATH.
set -eu

if command -v chromium >/dev/null 2>&1; then
    echo "chromium already installed: $(chromium --version 2>/dev/null | head -n 1)"
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "install-chromium.sh: chromium is missing and installing it needs root (or sudo)" >&2
    exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-chromium.sh: no apt-get; install Chromium with your package manager" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
# Fonts for the screenshot in docs/report.png; chromium itself pulls in no font package.
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium fonts-dejavu-core

chromium --version 2>/dev/null | head -n 1
