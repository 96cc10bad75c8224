"""An SFU for browser calls: Debian's Janus (`janus`, VideoRoom plugin) in a node's namespace,
driven over its Unix-socket transport (a socket file works across namespaces, so this process
talks to Janus without a route into the testbed; docs/browser.md, "SFU").

    with sfu.Janus.start(bed, "S", work / "janus") as janus, <peers> as peers:
        calls = sfu.videoroom(janus, peers, video)     # every peer publishes; each views the others
        samples = browser.sample_peers(peers, 20.0)

Each participant publishes its camera on one peer connection (browser offer, Janus answer) and
views each other participant on one more (Janus offer, browser answer): an SFU forwards, it does
not mix. Every request and event has a time limit; Janus that does not start, refuses a request,
or dies ends with a one-line `SfuError`.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import select
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rtcbench.browser.chromium import AudioSettings, Page, VideoSettings, limit_js, video_json
from rtcbench.testbed.netns import Testbed, TestbedError, stop_processes

__all__ = ["JANUS", "Janus", "SfuError", "Subscription", "janus", "videoroom"]

JANUS = "janus"
"""Janus's executable (Debian's `janus`, installed by `scripts/install-janus.sh`)."""
ROOM = 1234
START_TIMEOUT_S = 10.0
REQUEST_TIMEOUT_S = 10.0
_PLUGINS = "/usr/lib/x86_64-linux-gnu/janus"


class SfuError(TestbedError):
    """Janus did not start, refused a request, or did not answer in time (one line)."""


def janus() -> str | None:
    """Janus's path, or None if it is not installed."""
    return shutil.which(JANUS)


def _config(folder: Path, socket_path: Path, publishers: int, bitrate_bps: int) -> None:
    """Janus's configuration: the VideoRoom plugin with one VP8 room, the Unix-socket transport
    only, no session timeout (the calls are timed by the caller), host candidates only."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "janus.jcfg").write_text(
        f"""general: {{
    configs_folder = "{folder}"
    plugins_folder = "{_PLUGINS}/plugins"
    transports_folder = "{_PLUGINS}/transports"
    events_folder = "{_PLUGINS}/events"
    loggers_folder = "{_PLUGINS}/loggers"
    debug_level = 3
    session_timeout = 0
}}
media: {{ rtp_port_range = "20000-40000" }}
nat: {{ ice_ignore_list = "lo" }}
plugins: {{ disable = "libjanus_audiobridge.so,libjanus_duktape.so,libjanus_echotest.so,libjanus_lua.so,\
libjanus_nosip.so,libjanus_recordplay.so,libjanus_sip.so,libjanus_streaming.so,libjanus_textroom.so,\
libjanus_videocall.so,libjanus_voicemail.so" }}
transports: {{ disable = "libjanus_http.so,libjanus_websockets.so,libjanus_mqtt.so,libjanus_nanomsg.so,\
libjanus_rabbitmq.so" }}
events: {{ broadcast = false }}
"""
    )
    (folder / "janus.transport.pfunix.jcfg").write_text(
        f"""general: {{
    enabled = true
    json = "plain"
    path = "{socket_path}"
    type = "SOCK_SEQPACKET"
}}
admin: {{ admin_enabled = false }}
"""
    )
    (folder / "janus.plugin.videoroom.jcfg").write_text(
        f"""general: {{ }}
room-{ROOM}: {{
    description = "rtcbench"
    publishers = {publishers}
    bitrate = {bitrate_bps}
    fir_freq = 10
    videocodec = "vp8"
    audiocodec = "opus"
}}
"""
    )


@dataclass
class Janus:
    """A running Janus and a session on it."""

    node: str
    process: subprocess.Popen[Any]
    sock: socket.socket
    session: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    @contextlib.contextmanager
    def start(
        cls, bed: Testbed, node: str, work: Path, *, publishers: int = 6, bitrate_bps: int = 1_000_000
    ) -> Iterator[Janus]:
        """Starts Janus in `node`'s namespace with its configuration, socket and log under
        `work`, and opens a session; stops it when the block ends."""
        exe = janus()
        if exe is None:
            raise SfuError(f"{JANUS} is not installed (make janus)")
        work.mkdir(parents=True, exist_ok=True)
        # A Unix socket's path holds at most 107 bytes (sockaddr_un): the socket lives in a short
        # folder of its own, not in the run's (which may be deep), and goes with it.
        folder = Path(tempfile.mkdtemp(prefix="rtcbench-janus-"))
        path = folder / "janus.sock"
        _config(work / "config", path, publishers, bitrate_bps)
        log = (work / "janus.log").open("wb")
        try:
            process = bed.popen(
                node,
                [exe, "-F", str(work / "config"), "-C", str(work / "config" / "janus.jcfg")],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        except BaseException:
            log.close()
            shutil.rmtree(folder, ignore_errors=True)
            raise
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            while True:
                if process.poll() is not None:
                    raise SfuError(
                        f"janus in {node} exited with status {process.returncode} (see {work}/janus.log)"
                    )
                try:
                    sock.connect(str(path))
                    break
                except (FileNotFoundError, ConnectionRefusedError):
                    if time.monotonic() > deadline:
                        raise SfuError(
                            f"janus in {node} did not open {path} within {START_TIMEOUT_S:g} s"
                        ) from None
                    time.sleep(0.05)
            j = cls(node, process, sock)
            j.session = j.request({"janus": "create"})["data"]["id"]
            yield j
        finally:
            sock.close()
            stop_processes([process])
            log.close()
            shutil.rmtree(folder, ignore_errors=True)

    def _receive(self, deadline: float) -> dict[str, Any]:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([self.sock], [], [], left)[0]:
            raise SfuError(f"janus in {self.node} did not answer within {REQUEST_TIMEOUT_S:g} s")
        data = self.sock.recv(1 << 20)
        if not data:
            raise SfuError(f"janus in {self.node} closed its socket")
        message: dict[str, Any] = json.loads(data)
        return message

    def request(self, message: dict[str, Any], *, handle: int | None = None) -> dict[str, Any]:
        """Sends `message` (with a new transaction, the session and `handle`) and returns Janus's
        reply: its `success`, or for a plugin message the plugin's asynchronous `event`."""
        transaction = secrets.token_hex(8)
        message = {**message, "transaction": transaction}
        if self.session:
            message["session_id"] = self.session
        if handle is not None:
            message["handle_id"] = handle
        self.sock.send(json.dumps(message).encode())
        deadline = time.monotonic() + REQUEST_TIMEOUT_S
        while True:
            reply = self._receive(deadline)
            if reply.get("transaction") != transaction:
                self.events.append(reply)
                continue
            kind = reply.get("janus")
            if kind == "error":
                raise SfuError(f"janus refused {message.get('janus')}: {reply['error'].get('reason')}")
            if kind == "ack":
                continue  # the plugin's event follows
            if kind == "event":
                data = reply.get("plugindata", {}).get("data", {})
                if "error" in data:
                    raise SfuError(
                        f"janus videoroom refused {message['body'].get('request')}: {data['error']}"
                    )
            return reply

    def create_room(self, room: int, *, publishers: int, bitrate_bps: int) -> None:
        """A VideoRoom room `room` for `publishers`, whose publishers Janus caps at `bitrate_bps`
        (its REMB to them)."""
        handle = self.attach()
        self.message(
            handle,
            {"request": "create", "room": room, "publishers": publishers, "bitrate": bitrate_bps,
             "videocodec": "vp8", "audiocodec": "opus", "fir_freq": 10},
        )  # fmt: skip

    def attach(self) -> int:
        handle: int = self.request({"janus": "attach", "plugin": "janus.plugin.videoroom"})["data"]["id"]
        return handle

    def message(
        self, handle: int, body: dict[str, Any], jsep: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        request: dict[str, Any] = {"janus": "message", "body": body}
        if jsep is not None:
            request["jsep"] = jsep
        return self.request(request, handle=handle)


@dataclass
class Subscription:
    """`viewer` receives `publisher`'s video through the SFU."""

    viewer: Page
    publisher: Page


def videoroom(
    janus: Janus,
    peers: Sequence[Page],
    video: VideoSettings,
    *,
    room: int = ROOM,
    audio: AudioSettings | None = None,
    publish_key: Callable[[Page], str] = lambda publisher: "sfu",
    view_key: Callable[[Page, Page], str] = lambda viewer, publisher: f"sfu:{publisher.node}",
) -> list[Subscription]:
    """Every peer publishes its camera (and microphone, with `audio`) to `room`, then views every
    other peer's: one publishing and len(peers) − 1 viewing peer connections per page, known
    as `publish_key(publisher)` and `view_key(viewer, publisher)` (by default `sfu` and
    `sfu:<publisher>`). `video`'s edits (`VideoSettings.edit`) are made to the descriptions each
    page takes from Janus. Returns the subscriptions."""
    feeds: dict[str, int] = {}
    for peer in peers:
        handle = janus.attach()
        joined = janus.message(
            handle, {"request": "join", "ptype": "publisher", "room": room, "display": peer.node}
        )
        feeds[peer.node] = joined["plugindata"]["data"]["id"]
        key = json.dumps(publish_key(peer))
        offer = peer.evaluate(
            f"rtcbench.offer({key}, {video_json(video)}, false, {json.dumps(audio is not None)}, false)",
            "offer to publish",
        )
        answered = janus.message(
            handle,
            {"request": "publish", "video": True, "audio": audio is not None},
            {"type": "offer", "sdp": offer},
        )
        peer.evaluate(
            f"rtcbench.accept({key}, {json.dumps(video.edit(answered['jsep']['sdp']))})",
            "accept the SFU's answer",
        )
        peer.evaluate(limit_js(publish_key(peer), video, audio), "set the sender's parameters")
    # A feed can be viewed once its publisher's connection is up (Janus's `webrtcup`).
    deadline = time.monotonic() + REQUEST_TIMEOUT_S
    for peer in peers:
        while peer.evaluate(
            f"rtcbench.times({json.dumps(publish_key(peer))})", "read the publisher's state"
        ).get("ice") not in ("connected", "completed"):
            if time.monotonic() > deadline:
                raise SfuError(f"{peer.node}'s publishing connection to the SFU did not connect")
            time.sleep(0.05)
    subscriptions = []
    for viewer in peers:
        for publisher in peers:
            if publisher is viewer:
                continue
            handle = janus.attach()
            join = {"request": "join", "ptype": "subscriber", "room": room, "feed": feeds[publisher.node]}
            while True:
                try:
                    attached = janus.message(handle, join)
                    break
                except SfuError as e:
                    # ICE may be up at the browser a moment before Janus has the feed.
                    if "No such feed" not in str(e) or time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            key = json.dumps(view_key(viewer, publisher))
            answer = viewer.evaluate(
                f"rtcbench.answer({key}, {json.dumps(video.edit(attached['jsep']['sdp']))}, null)",
                "answer the SFU's offer",
            )
            janus.message(handle, {"request": "start", "room": room}, {"type": "answer", "sdp": answer})
            subscriptions.append(Subscription(viewer, publisher))
    return subscriptions
