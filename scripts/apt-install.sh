#!/bin/sh
# Installs Debian packages for the test setup, once: `apt-install.sh COMMAND PACKAGE...` exits 0 at
# once if COMMAND is on PATH, and otherwise installs the packages with apt-get, non-interactively,
# as root or through sudo. Set DEBCONF_SELECTIONS to preseed debconf answers first, and
# APT_INSTALL_ALWAYS=1 when the caller has checked for more than a command (install-gstreamer.sh).
# Used by the install-*.sh scripts.
set -eu

command_name=$1
shift

if [ -z "${APT_INSTALL_ALWAYS:-}" ] && command -v "$command_name" >/dev/null 2>&1; then
    echo "$command_name already installed: $("$command_name" --version 2>/dev/null | head -n 1)"
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "apt-install.sh: $command_name is missing and installing it needs root (or sudo)" >&2
    exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "apt-install.sh: no apt-get; install $* with your package manager" >&2
    exit 1
fi

if [ -n "${DEBCONF_SELECTIONS:-}" ] && command -v debconf-set-selections >/dev/null 2>&1; then
    echo "$DEBCONF_SELECTIONS" | $SUDO debconf-set-selections
fi
$SUDO apt-get update
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"

"$command_name" --version 2>/dev/null | head -n 1
