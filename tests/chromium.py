"""Open a local HTML file in headless Chromium as a person would, and report what the page did.

Chromium is driven over the DevTools protocol on a pipe (`rtcbench.browser.devtools`), so the
tests need no WebSocket client or browser-automation package. The page is loaded with every host name
unresolvable, and everything it asked the network for is recorded: a report that fetched anything
would show up as a request (and fail), not pass silently because the machine happens to be online.

Collected per load: the DOM after the page's scripts ran, console errors (`console.error`,
failed assertions), uncaught exceptions, the browser's own error log entries (a resource that
failed to load) and the URL of every request.
"""

from __future__ import annotations

import base64
import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from rtcbench.browser import devtools

_FLAGS = (*devtools.HEADLESS_FLAGS, "--host-resolver-rules=MAP * ~NOTFOUND")


def available() -> bool:
    return devtools.chromium() is not None


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


def open_page(
    path: Path,
    *,
    screenshot: bool = False,
    element: str | None = None,
    width: int = 1280,
    height: int = 900,
    timeout_s: float = 90.0,
) -> PageLoad:
    """Loads `path` in a fresh headless Chromium and returns what the page did; with `screenshot`,
    a PNG of the whole page at `width` CSS pixels, or with `element` (a CSS selector) of that
    element alone, as laid out in the page."""
    profile = tempfile.mkdtemp(prefix="rtcbench-chromium-")
    page = PageLoad()
    browser = devtools.launch([*_FLAGS, f"--user-data-dir={profile}", "about:blank"])
    pipe = browser.devtools
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
        pipe.wait_for("Page.loadEventFired", timeout_s=timeout_s)
        result = pipe.send(
            "Runtime.evaluate",
            {"expression": "document.documentElement.outerHTML", "returnByValue": True},
            session=session,
        )
        page.dom = str(result["result"]["value"])
        if screenshot:
            capture: dict[str, object] = {"format": "png", "captureBeyondViewport": True}
            if element is not None:
                box = pipe.send(
                    "Runtime.evaluate",
                    {
                        "expression": f"(() => {{ const r = document.querySelector({json.dumps(element)})"
                        ".getBoundingClientRect();"
                        " return [r.x + scrollX, r.y + scrollY, r.width, r.height]; })()",
                        "returnByValue": True,
                    },
                    session=session,
                )["result"]["value"]
                x, y, w, h = (float(v) for v in box)
                capture["clip"] = {"x": x, "y": y, "width": w, "height": h, "scale": 1}
            shot = pipe.send("Page.captureScreenshot", capture, session=session)
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
    finally:
        browser.close()
        shutil.rmtree(profile, ignore_errors=True)
    return page
