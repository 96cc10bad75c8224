"""Real Firefox peers (Debian's `firefox-esr`) in a testbed's namespaces, beside or instead of
Chromium's (docs/browser.md, "Firefox"). A Firefox peer answers to the same page script as a
Chromium one (`chromium.PEER_JS`, through `chromium.Page`), so calls, signalling, sampling and
the SFU take either, and a call may join the two browsers.

    with firefox.Peer.start(bed, "A", work / "A", clip) as a, chromium.Peer.start(bed, "B", ...) as b:
        call = chromium.connect(a, b, VideoSettings(max_bitrate_bps=2_000_000))

Firefox is driven over WebDriver BiDi, which it speaks natively: no driver program. It listens
on a WebSocket on the loopback of the node's namespace (`BIDI_PORT`; every peer has a namespace
of its own), which this process reaches with a socket opened inside that namespace
(`rtcbench.testbed._linux.call_in_netns`), the `websockets` package speaking the protocol over
it. Firefox has no fake camera that plays a file, as Chromium's
`--use-file-for-fake-video-capture` does: its page plays the same Y4M clip into a canvas and
sends the canvas (`PEER_JS`'s `useClip`), so both browsers encode the same pictures. Its
microphone is Firefox's fake device (a tone), its settings a profile's preferences (`PREFS`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.exceptions import ConnectionClosed, WebSocketException
from websockets.sync.client import ClientConnection, connect

from rtcbench.browser import devtools
from rtcbench.browser.chromium import PAGE_HTML, PEER_JS, STEP_TIMEOUT_S, BrowserError, Page, VideoSettings
from rtcbench.testbed import _linux
from rtcbench.testbed.netns import Testbed

__all__ = ["BIDI_PORT", "FIREFOX", "PREFS", "BiDi", "Peer", "firefox", "firefox_version", "preferences"]

FIREFOX = "firefox-esr"
"""The browser's executable (Debian's `firefox-esr`, installed by `scripts/install-firefox.sh`)."""
BIDI_PORT = 9222
"""The port Firefox's WebDriver BiDi listens on, on the loopback of its node's namespace."""
LOG_ENV = {"MOZ_LOG": "timestamp,webrtc_trace:4"}
"""What makes Firefox write its libwebrtc's log to its output, and so to the peer's `firefox.log`
(`--browser-log`): libwebrtc's messages at `LS_INFO` and up, timestamped, among them probe
results, the loss-based estimator's holds and each stream's send statistics at its end."""
START_TIMEOUT_S = 30.0
"""How long Firefox may take to listen for WebDriver BiDi."""
CLOSE_TIMEOUT_S = 1.0
"""How long closing the BiDi connection, or asking the browser to close, may take."""
EXIT_TIMEOUT_S = 5.0
"""How long Firefox may take to exit when asked (0.45 s measured) before it is killed."""

PREFS: Mapping[str, bool | int | str] = {
    # The page may use the microphone (and a camera) without asking; the microphone is a fake
    # device playing a tone, as Chromium's is. The camera is the page's canvas (`useClip`).
    "media.navigator.permission.disabled": True,
    "media.navigator.streams.fake": True,
    # Host candidates as addresses, not mDNS names, which nothing resolves in a testbed.
    "media.peerconnection.ice.obfuscate_host_addresses": False,
    # The page reads its clip from the folder it was loaded from (a file: URL).
    "security.fileuri.strict_origin_policy": False,
    "media.autoplay.default": 0,
    # A quiet browser that fetches nothing of its own accord (the namespaces have no route out).
    "app.update.enabled": False,
    "app.normandy.enabled": False,
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage_override.mstone": "ignore",
    "browser.safebrowsing.malware.enabled": False,
    "browser.safebrowsing.phishing.enabled": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "datareporting.healthreport.uploadEnabled": False,
    "toolkit.telemetry.enabled": False,
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
    "extensions.update.enabled": False,
}
"""Preferences of every Firefox peer's profile (its `user.js`)."""


@functools.cache
def firefox() -> str | None:
    """The browser's path, or None if it is not installed."""
    return shutil.which(FIREFOX)


@functools.cache
def firefox_version() -> str | None:
    """The installed Firefox's version ("153.7.0esr"), or None if it is not installed or does not
    say. Asked once per process."""
    return devtools.version_of(firefox(), "Firefox")


def environment(log: bool) -> dict[str, str]:
    """Firefox's environment: this process's, without the crash reporter, and with `LOG_ENV` if
    `log`."""
    return {**os.environ, "MOZ_CRASHREPORTER_DISABLE": "1", **(LOG_ENV if log else {})}


def preferences(video: VideoSettings | None) -> dict[str, bool | int | str]:
    """`PREFS`, with what a call's `video` asks of the encoder where Chromium reads it from the
    session description (`x-google-*-bitrate`, which Firefox ignores): Firefox's
    `media.peerconnection.video.{min,start,max}_bitrate` preferences, in kbit/s. They hold for
    every call of the browser."""
    prefs = dict(PREFS)
    if video is not None:
        for name, kbps in video.bitrates_kbps().items():
            prefs[f"media.peerconnection.video.{name}_bitrate"] = kbps
    return prefs


class BiDi:
    """WebDriver BiDi over one WebSocket: numbered commands, replies matched by id. Events are
    not subscribed to, so none arrive."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.next_id = 0

    def send(
        self, method: str, params: dict[str, Any] | None = None, timeout_s: float = STEP_TIMEOUT_S
    ) -> Any:
        """Sends a command and returns its result. `TimeoutError` if no reply comes within
        `timeout_s`, `ConnectionError` if the browser closed the connection, `RuntimeError` (one
        line: the method, the error and its message) if it answered with an error."""
        deadline = time.monotonic() + timeout_s
        self.next_id += 1
        try:
            self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params or {}}))
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{method}: firefox did not answer in {timeout_s:g} s")
                reply = json.loads(self.ws.recv(timeout=left))
                if reply.get("id") != self.next_id:
                    continue
                if reply.get("type") == "error":
                    raise RuntimeError(
                        f"{method}: {reply.get('error')}: {reply.get('message', '')}".rstrip(": ")
                    )
                return reply.get("result", {})
        except ConnectionClosed as e:
            raise ConnectionError("firefox closed its WebDriver BiDi connection") from e


def _listen(bed: Testbed, node: str, process: subprocess.Popen[Any], timeout_s: float) -> socket.socket:
    """A socket connected to `BIDI_PORT` in `node`'s namespace, once Firefox listens there."""
    netns = bed.netns_path(node)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return _linux.call_in_netns(
                netns, lambda: socket.create_connection(("127.0.0.1", BIDI_PORT), timeout=1.0)
            )
        except OSError:
            if process.poll() is not None:
                why = f"firefox exited ({process.returncode}) before it listened for WebDriver BiDi"
                raise BrowserError(f"peer {node}: {why}") from None
            if time.monotonic() >= deadline:
                raise BrowserError(
                    f"peer {node}: firefox did not listen for WebDriver BiDi within {timeout_s:g} s"
                ) from None
            time.sleep(0.1)


ESTIMATES_JS = """
(() => {
  // Firefox's parent process (system access): each open connection's bandwidth estimate, as
  // about:webrtc shows it (WebrtcGlobalInformation's `bandwidthEstimations`, libwebrtc's
  // Call::Stats::send_bandwidth_bps in bytes/s), with the SSRCs its sender sends on.
  const S = globalThis.rtcbenchEstimates ??= {samples: [], timer: null};
  S.start = intervalMs => {
    clearInterval(S.timer);
    S.timer = setInterval(() => {
      const t = performance.timeOrigin + performance.now();
      WebrtcGlobalInformation.getAllStats(({reports}) => {
        for (const r of reports) {
          const bw = (r.bandwidthEstimations ?? []).find(b => b.sendBandwidthBps != null);
          const ssrcs = (r.outboundRtpStreamStats ?? []).map(o => o.ssrc);
          if (!r.closed && bw && ssrcs.length) S.samples.push({t, ssrcs, bytes_per_s: bw.sendBandwidthBps});
        }
      });
    }, intervalMs);
    return true;
  };
  S.take = () => { const out = S.samples; S.samples = []; return out; };
  return true;
})()
"""
"""The sampler of Firefox's own bandwidth estimate, installed in its parent process: its
`getStats()` has no `availableOutgoingBitrate`, but the browser's privileged statistics (what
about:webrtc shows) carry the same number."""
ESTIMATE_MAX_AGE_MS = 1000.0
"""How old the parent process's estimate may be for a page's sample to take it."""


@dataclass
class Peer(Page):
    """One headless Firefox in a node's namespace, with one page that holds the calls."""

    node: str
    process: subprocess.Popen[Any]
    bidi: BiDi
    context: str = ""
    chrome: str = ""
    """The browser window's context in the parent process, where `ESTIMATES_JS` runs."""
    estimates: list[dict[str, Any]] = field(default_factory=list)
    """The parent process's estimates not yet older than every page sample taken."""

    @property
    def pid(self) -> int:
        return self.process.pid

    @classmethod
    @contextlib.contextmanager
    def start(
        cls,
        bed: Testbed,
        node: str,
        work: Path,
        clip: Path | None = None,
        video: VideoSettings | None = None,
        log: bool = False,
    ) -> Iterator[Peer]:
        """Starts Firefox in `node`'s namespace with its profile and page under `work`, playing
        `clip` as its camera, its encoder set as `video` asks (`preferences`), writing its
        libwebrtc's log into `work`'s `firefox.log` if `log` (`LOG_ENV`); closes it (killing it if
        need be) when the block ends."""
        exe = firefox()
        if exe is None:
            raise BrowserError(f"peer {node}: {FIREFOX} is not installed (make firefox)")
        work.mkdir(parents=True, exist_ok=True)
        profile = work / "profile"
        profile.mkdir(exist_ok=True)
        (profile / "user.js").write_text(
            "".join(f"user_pref({json.dumps(k)}, {json.dumps(v)});\n" for k, v in preferences(video).items())
        )
        (work / "peer.js").write_text(PEER_JS)
        (work / "peer.html").write_text(
            PAGE_HTML.replace("</head>", '<script src="peer.js"></script></head>')
        )
        if clip is not None:
            (work / "clip.y4m").unlink(missing_ok=True)
            (work / "clip.y4m").symlink_to(clip.resolve())
        args = [
            exe,
            "--headless",
            "--no-remote",
            "--profile",
            str(profile),
            f"--remote-debugging-port={BIDI_PORT}",
            # The parent process's scripts may be run (`ESTIMATES_JS`): the port is on the
            # loopback of the node's own namespace, which only this process reaches.
            "--remote-allow-system-access",
        ]
        with (work / "firefox.log").open("wb") as output:
            process = bed.popen(
                node,
                [*args, "about:blank"],
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=environment(log),
            )
        try:
            sock = _listen(bed, node, process, START_TIMEOUT_S)
            try:
                ws = connect(
                    f"ws://127.0.0.1:{BIDI_PORT}/session",
                    sock=sock,
                    max_size=None,
                    open_timeout=10,
                    close_timeout=CLOSE_TIMEOUT_S,
                )
            except (OSError, TimeoutError, WebSocketException) as e:
                sock.close()
                raise BrowserError(f"peer {node}: WebDriver BiDi did not open: {e}") from None
            with ws:
                try:
                    peer = cls(node, process, BiDi(ws))
                    peer._open(work / "peer.html", clip is not None)
                    yield peer
                    # Asked to close only when the block ended normally: after an interrupt or
                    # an error the connection may be mid-command, and the browser is killed.
                    with contextlib.suppress(
                        ConnectionError, TimeoutError, RuntimeError, OSError, WebSocketException
                    ):
                        peer.bidi.send("browser.close", timeout_s=CLOSE_TIMEOUT_S)
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        process.wait(EXIT_TIMEOUT_S)
                finally:
                    _kill(process)  # before the connection closes, so that closing it waits on nothing
        finally:
            _kill(process)

    def _command(
        self, method: str, params: dict[str, Any], step: str, timeout_s: float = STEP_TIMEOUT_S
    ) -> Any:
        try:
            return self.bidi.send(method, params, timeout_s)
        except (ConnectionError, TimeoutError, RuntimeError) as e:
            raise BrowserError(f"peer {self.node}: {step}: {e}") from None

    def _open(self, page: Path, clip: bool) -> None:
        self._command("session.new", {"capabilities": {}}, "start a WebDriver BiDi session")
        tree = self._command("browsingContext.getTree", {}, "find the page")
        self.context = tree["contexts"][0]["context"]
        params = {"context": self.context, "url": page.resolve().as_uri(), "wait": "complete"}
        self._command("browsingContext.navigate", params, "open the page")
        if clip:
            self.evaluate("rtcbench.useClip('clip.y4m')", "load the camera clip")
        chrome = self._command("browsingContext.getTree", {"moz:scope": "chrome"}, "find the browser window")
        self.chrome = chrome["contexts"][0]["context"]
        self._evaluate_in(self.chrome, ESTIMATES_JS, "install the estimate sampler")

    def evaluate(self, expression: str, step: str, timeout_s: float = STEP_TIMEOUT_S) -> Any:
        return self._evaluate_in(self.context, expression, step, timeout_s)

    def start_sampling(self, interval_s: float) -> None:
        super().start_sampling(interval_s)
        self._evaluate_in(
            self.chrome, f"rtcbenchEstimates.start({round(interval_s * 1000)})", "sample the estimates"
        )

    def take_samples(self) -> list[dict[str, Any]]:
        """The page's samples (`Page.take_samples`), each with its connection's bandwidth
        estimate from the parent process (`estimate_bps`, by the SSRC of each stream it sends)
        where one at most `ESTIMATE_MAX_AGE_MS` older than the sample was taken."""
        samples = super().take_samples()
        self.estimates.extend(
            self._evaluate_in(self.chrome, "rtcbenchEstimates.take()", "collect the estimates")
        )
        for sample in samples:
            t = float(sample["t"])
            sent = {
                str(r["ssrc"]) for r in sample["stats"] if r.get("type") == "outbound-rtp" and "ssrc" in r
            }
            latest: dict[str, int] = {}
            for e in self.estimates:  # oldest first: the last one taken before the sample wins
                if t - ESTIMATE_MAX_AGE_MS <= float(e["t"]) <= t:
                    for ssrc in sent.intersection(map(str, e["ssrcs"])):
                        latest[ssrc] = round(float(e["bytes_per_s"]) * 8)
            if latest:
                sample["estimate_bps"] = latest
        if samples:
            # What no later sample can take is dropped: memory does not grow with the call.
            last = float(samples[-1]["t"])
            self.estimates = [e for e in self.estimates if float(e["t"]) >= last - ESTIMATE_MAX_AGE_MS]
        return samples

    def _evaluate_in(
        self, context: str, expression: str, step: str, timeout_s: float = STEP_TIMEOUT_S
    ) -> Any:
        # The value comes back as JSON text: one string, rather than BiDi's typed tree of it.
        wrapped = f"(async () => JSON.stringify((await ({expression})) ?? null))()"
        params = {"expression": wrapped, "target": {"context": context}, "awaitPromise": True}
        reply = self._command("script.evaluate", params, step, timeout_s)
        if reply.get("type") == "exception":
            text = reply.get("exceptionDetails", {}).get("text", "an exception")
            raise BrowserError(f"peer {self.node}: {step}: {str(text).splitlines()[0]}")
        return json.loads(reply["result"]["value"])


def _kill(process: subprocess.Popen[Any]) -> None:
    """Kills Firefox's session (its content processes are in it), whatever it did, and reaps it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
