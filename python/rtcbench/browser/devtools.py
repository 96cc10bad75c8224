"""Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`): commands on
the browser's fd 3, replies and events on its fd 4, each message JSON ended by a NUL byte. No
WebSocket client or browser-automation package is needed (docs/adr/0004-chromium-over-a-pipe.md).

    browser = launch(["--headless", ...], popen=subprocess.Popen)
    target = browser.devtools.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    ...
    browser.close()

Every wait has a deadline: a browser that hangs or dies ends the wait with `TimeoutError` or
`ConnectionError`, never a hang.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import re
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CHROMIUM",
    "HEADLESS_FLAGS",
    "Browser",
    "DevTools",
    "DevToolsError",
    "chromium",
    "chromium_version",
    "launch",
    "version_of",
]

CHROMIUM = "chromium"
"""The browser's executable (Debian's `chromium`, installed by `scripts/install-chromium.sh`)."""

HEADLESS_FLAGS = (
    "--headless",
    "--no-sandbox",  # as root (tests, CI containers, testbeds), where the sandbox cannot start
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
"""A quiet headless browser that fetches nothing of its own accord."""

DEFAULT_TIMEOUT_S = 30.0
"""How long one command may take to be answered."""


class DevToolsError(RuntimeError):
    """The browser answered a command with an error (one line: the method and its message)."""


def chromium() -> str | None:
    """The browser's path, or None if it is not installed."""
    return shutil.which(CHROMIUM)


@functools.cache
def chromium_version() -> str | None:
    """The installed Chromium's version ("156.0.8078.79"), or None if it is not installed or
    does not say. Asked once per process."""
    return version_of(chromium(), "Chromium")


def version_of(exe: str | None, product: str) -> str | None:
    """The version a browser's `exe --version` prints after `product` ("Chromium 156.0.8078.79",
    "Mozilla Firefox 153.7.0esr"), or None if there is no `exe` or it does not say in 30 s."""
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(rf"{product} (\S+)", out.stdout)
    return found.group(1) if found else None


class DevTools:
    """The protocol over the pipe: numbered commands, replies matched by id, and events kept in
    arrival order until someone waits for them."""

    def __init__(self, write_fd: int, read_fd: int) -> None:
        self.write_fd, self.read_fd = write_fd, read_fd
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer in time")
            ready, _, _ = select.select([self.read_fd], [], [], left)
            if ready:
                chunk = os.read(self.read_fd, 1 << 20)
                if not chunk:
                    raise ConnectionError("chromium closed its DevTools pipe")
                self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> Any:
        """Sends a command and returns its result; events that arrive meanwhile are kept."""
        deadline = time.monotonic() + timeout_s
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        try:
            os.write(self.write_fd, json.dumps(message).encode() + b"\0")
        except BrokenPipeError as e:
            raise ConnectionError("chromium closed its DevTools pipe") from e
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise DevToolsError(f"{method}: {reply['error'].get('message', reply['error'])}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_for(self, method: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
        """The first event `method` not yet taken, waiting for it if need be; it is taken."""
        for k, event in enumerate(self.events):
            if event["method"] == method:
                return self.events.pop(k)
        deadline = time.monotonic() + timeout_s
        while True:
            event = self._read_message(deadline)
            if "method" in event:
                if event["method"] == method:
                    return event
                self.events.append(event)


def _high_fd(fd: int) -> int:
    """A close-on-exec copy of `fd` numbered 10 or more, so that the child's redirections onto 3
    and 4 never land on one of our own pipe ends."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


@dataclass
class Browser:
    """A running browser and its DevTools pipe."""

    process: subprocess.Popen[Any]
    devtools: DevTools

    def close(self, timeout_s: float = 10.0) -> None:
        """Asks the browser to close, then kills its process group if it has not exited within
        `timeout_s`; closes the pipe. Safe to call twice."""
        if self.process.poll() is None:
            with contextlib.suppress(ConnectionError, TimeoutError, DevToolsError, OSError):
                self.devtools.send("Browser.close", timeout_s=min(timeout_s, 5.0))
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        for fd in (self.devtools.write_fd, self.devtools.read_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.devtools.write_fd = self.devtools.read_fd = -1


def launch(
    flags: Sequence[str],
    *,
    popen: Callable[..., subprocess.Popen[Any]] = subprocess.Popen,
    stderr: Any = subprocess.DEVNULL,
) -> Browser:
    """Starts Chromium with `flags` (and `--remote-debugging-pipe`) through `popen` (e.g. a
    testbed's, to start it in a node's namespace), in a process group of its own so that every
    renderer can be killed with it. Raises FileNotFoundError if Chromium is not installed."""
    exe = chromium()
    if exe is None:
        raise FileNotFoundError(f"{CHROMIUM} is not installed (make chromium)")
    to_chrome_r, to_chrome_w = (_high_fd(fd) for fd in os.pipe())
    from_chrome_r, from_chrome_w = (_high_fd(fd) for fd in os.pipe())
    # The protocol wants fds 3 and 4 exactly; bash (which, unlike dash, takes fd numbers above 9)
    # puts the pipe ends there, then becomes
    # the browser.
    script = f'exec "$0" "$@" 3<&{to_chrome_r} 4>&{from_chrome_w} {to_chrome_r}<&- {from_chrome_w}>&-'
    try:
        process = popen(
            ["bash", "-c", script, exe, *flags, "--remote-debugging-pipe"],
            pass_fds=(to_chrome_r, from_chrome_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
    except BaseException:
        for fd in (to_chrome_r, to_chrome_w, from_chrome_r, from_chrome_w):
            os.close(fd)
        raise
    os.close(to_chrome_r)
    os.close(from_chrome_w)
    return Browser(process, DevTools(to_chrome_w, from_chrome_r))
