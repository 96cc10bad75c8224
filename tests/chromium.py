"""Open a local HTML file in headless Chromium as a person would, and report what the page did.

Chromium is driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: commands on
its fd 3, replies and events on its fd 4, each message JSON ended by a NUL byte), so the tests
need no WebSocket client or browser-automation package. The page is loaded with every host name
unresolvable, and everything it asked the network for is recorded: a report that fetched anything
would show up as a request (and fail), not pass silently because the machine happens to be online.

Collected per load: the DOM after the page's scripts ran, console errors (`console.error`,
failed assertions), uncaught exceptions, the browser's own error log entries (a resource that
failed to load) and the URL of every request.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = "chromium"

_FLAGS = (
    "--headless",
    "--no-sandbox",  # tests run as root in CI containers, where the sandbox cannot start
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--remote-debugging-pipe",
)


def available() -> bool:
    return shutil.which(CHROMIUM) is not None


@dataclass
class PageLoad:
    """What one page load showed."""

    dom: str = ""
    console_errors: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    log_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    screenshot: bytes | None = None

    @property
    def errors(self) -> list[str]:
        return [*self.console_errors, *self.exceptions, *self.log_errors]


class _Pipe:
    """The DevTools protocol over Chromium's pipe: numbered commands, replies matched by id, and
    events kept in arrival order."""

    def __init__(self, write_fd: int, read_fd: int, deadline: float) -> None:
        self.write_fd, self.read_fd, self.deadline = write_fd, read_fd, deadline
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def _read_message(self) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            left = self.deadline - time.monotonic()
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

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> Any:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self.write_fd, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read_message()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_for(self, method: str) -> dict[str, Any]:
        for event in self.events:
            if event["method"] == method:
                return event
        while True:
            event = self._read_message()
            if "method" in event:
                self.events.append(event)
                if event["method"] == method:
                    return event


def _high_fd(fd: int) -> int:
    """A close-on-exec copy of `fd` numbered 10 or more, so the spawn's dup2 onto 3 and 4 never
    lands on one of our own pipe ends."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


def open_page(
    path: Path, *, screenshot: bool = False, width: int = 1280, height: int = 900, timeout_s: float = 90.0
) -> PageLoad:
    """Loads `path` in a fresh headless Chromium and returns what the page did; with `screenshot`,
    a PNG of the whole page at `width` CSS pixels."""
    to_chrome_r, to_chrome_w = (_high_fd(fd) for fd in os.pipe())
    from_chrome_r, from_chrome_w = (_high_fd(fd) for fd in os.pipe())
    profile = tempfile.mkdtemp(prefix="rtcbench-chromium-")
    exe = shutil.which(CHROMIUM)
    assert exe is not None, "chromium is not installed (scripts/install-chromium.sh)"
    pid = os.posix_spawn(
        exe,
        [exe, *_FLAGS, f"--user-data-dir={profile}", "about:blank"],
        dict(os.environ),
        file_actions=[
            (os.POSIX_SPAWN_DUP2, to_chrome_r, 3),
            (os.POSIX_SPAWN_DUP2, from_chrome_w, 4),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
        ],
    )
    os.close(to_chrome_r)
    os.close(from_chrome_w)
    page = PageLoad()
    pipe = _Pipe(to_chrome_w, from_chrome_r, time.monotonic() + timeout_s)
    try:
        target = pipe.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            pipe.send(f"{domain}.enable", session=session)
        pipe.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        pipe.send("Page.navigate", {"url": path.resolve().as_uri()}, session=session)
        pipe.wait_for("Page.loadEventFired")
        result = pipe.send(
            "Runtime.evaluate",
            {"expression": "document.documentElement.outerHTML", "returnByValue": True},
            session=session,
        )
        page.dom = str(result["result"]["value"])
        if screenshot:
            shot = pipe.send(
                "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=session
            )
            page.screenshot = base64.b64decode(shot["data"])
        for event in pipe.events:
            params = event.get("params", {})
            match event["method"]:
                case "Runtime.consoleAPICalled" if params.get("type") in ("error", "assert"):
                    args = params.get("args", [])
                    page.console_errors.append(
                        " ".join(str(a.get("value", a.get("description"))) for a in args)
                    )
                case "Runtime.exceptionThrown":
                    details = params.get("exceptionDetails", {})
                    page.exceptions.append(str(details.get("exception", {}).get("description", details)))
                case "Log.entryAdded" if params.get("entry", {}).get("level") == "error":
                    entry = params["entry"]
                    page.log_errors.append(f"{entry.get('text')} {entry.get('url', '')}".strip())
                case "Network.requestWillBeSent":
                    page.requests.append(str(params.get("request", {}).get("url")))
        with contextlib.suppress(ConnectionError, TimeoutError):
            pipe.send("Browser.close")
    finally:
        os.close(to_chrome_w)
        os.close(from_chrome_r)
        _reap(pid)
        shutil.rmtree(profile, ignore_errors=True)
    return page


def _reap(pid: int) -> None:
    """Waits for the browser we started to exit after Browser.close, and kills it (by its pid)
    if it does not within a few seconds."""
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return
        select.select([], [], [], 0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
