"""Real Chromium peers over the emulated network (issue 15, first part; docs/browser.md): one
headless Chromium per participant in its node's namespace, a fake camera playing a clip made at
set-up, local signalling, and `getStats()` sampled in the pages every 500 ms.

As root with Chromium installed (`make chromium`): a 30 s point-to-point call through the relay
on a 1 Mbit/s link, whose receive rate after 10 s is 0.75-0.95 of the link, with its set-up time
and the browsers' CPU and memory recorded; a 3-party mesh and a 4-party call through an SFU
(Janus's VideoRoom) at low resolution in which every peer decodes every other; a call relayed
through a TURN server (coturn, relay-only ICE); and a call whose path drops everything, which
ends with one line instead of a hang.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import rtcbench
from rtcbench import testbed
from rtcbench.testbed import browser, devtools, relay, sfu, turn

MISSING = testbed.missing() or (None if devtools.chromium() else "chromium is not installed (make chromium)")
NO_JANUS = None if sfu.janus() else "janus is not installed (make janus)"
NO_COTURN = None if turn.turnserver() else "coturn is not installed (make coturn)"
needs_testbed = pytest.mark.skipif(MISSING is not None, reason=f"runs browsers in namespaces: {MISSING}")

P2P = """
id = "browser-p2p"
duration = "40s"

[[links]]
name = "ab"
from = "A"
to = "B"
capacity = "1Mbps"
delay = "25ms"
queue = {{ size = "300ms" }}
{loss}

[[links]]
name = "ba"
from = "B"
to = "A"
delay = "25ms"
{loss}

[[calls]]
from = "A"
to = "B"
"""


def _variant(tmp_path: Path, loss: str = "") -> rtcbench.Variant:
    path = tmp_path / "p2p.toml"
    path.write_text(P2P.format(loss=loss))
    return rtcbench.resolve(str(path))[0]


def _video(samples: list[dict[str, Any]], kind: str) -> list[tuple[float, dict[str, Any]]]:
    """(seconds from the first sample, the video stream's report of type `kind`) per sample."""
    t0 = samples[0]["t"]
    out = []
    for s in samples:
        reports = [r for r in s["stats"] if r["type"] == kind and r.get("kind") == "video"]
        if reports:
            out.append(((s["t"] - t0) / 1000.0, reports[0]))
    return out


def _every_stream(
    samples: browser.Samples, nodes: Sequence[str], key: Callable[[str], str]
) -> Iterator[tuple[str, str, float, float]]:
    """(viewer, sender, frames decoded per second, bytes received per second × 8) of every
    stream between `nodes`, over the second half of the samples; `key` names the viewer's
    connection that carries the sender's video."""
    for node in nodes:
        for other in nodes:
            if other == node:
                continue
            inbound = _video(samples.of(node, key(other)), "inbound-rtp")
            (t0, first), (t1, last) = inbound[len(inbound) // 2], inbound[-1]
            fps = (last["framesDecoded"] - first["framesDecoded"]) / (t1 - t0)
            rate = (last["bytesReceived"] - first["bytesReceived"]) * 8 / (t1 - t0)
            yield node, other, fps, rate


def test_the_camera_clip_is_i420_and_repeatable(tmp_path: Path) -> None:
    a = browser.noise_clip(tmp_path / "a.y4m", width=64, height=36, fps=10, seconds=0.5, seed=3)
    b = browser.noise_clip(tmp_path / "b.y4m", width=64, height=36, fps=10, seconds=0.5, seed=3)
    data = a.read_bytes()
    assert data == b.read_bytes()
    header, rest = data.split(b"\n", 1)
    assert header == b"YUV4MPEG2 W64 H36 F10:1 Ip A1:1 C420jpeg"
    frames = rest.split(b"FRAME\n")[1:]
    assert len(frames) == 5 and all(len(f) == 64 * 36 * 3 // 2 for f in frames)
    # Fresh noise in every frame on a gradient; flat chroma.
    lumas = [np.frombuffer(f[: 64 * 36], dtype=np.uint8).astype(int) for f in frames]
    assert all(np.abs(x - y).mean() > 5 for x, y in itertools.pairwise(lumas))
    assert set(frames[0][64 * 36 :]) == {128}
    with pytest.raises(ValueError, match="even"):
        browser.noise_clip(tmp_path / "c.y4m", width=63, height=36, fps=10)


@needs_testbed
def test_a_point_to_point_call_fills_an_emulated_megabit(tmp_path: Path) -> None:
    variant = _variant(tmp_path)
    clip = browser.noise_clip(tmp_path / "camera.y4m", width=640, height=360, fps=30)
    with testbed.build(variant) as bed:
        r = relay.start(bed, variant, seed=1, out_dir=tmp_path / "relay")
        r.go()
        with (
            browser.Peer.start(bed, "A", tmp_path / "A", clip) as a,
            browser.Peer.start(bed, "B", tmp_path / "B") as b,
        ):
            call = browser.connect(a, b, browser.VideoSettings(max_bitrate_bps=2_500_000))
            samples = browser.sample([call], 30.0)
        r.stop()
    # A sample every 500 ms at each end.
    sent, got = samples.of("A", "B"), samples.of("B", "A")
    assert 55 <= len(got) <= 62 and 55 <= len(sent) <= 62
    # What arrived after 10 s: RTP headers and payload, without IP/UDP (2-3 % of the link) or
    # SRTP's tag.
    inbound = [(t, r) for t, r in _video(got, "inbound-rtp") if t >= 10.0]
    (t0, first), (t1, last) = inbound[0], inbound[-1]
    received = [r["bytesReceived"] + r["headerBytesReceived"] for r in (first, last)]
    rate = (received[1] - received[0]) * 8 / (t1 - t0)
    assert 0.75e6 <= rate <= 0.95e6, rate
    assert last["framesDecoded"] > first["framesDecoded"]
    # The sender's side of the same call: its encoder target and the estimate it came from.
    outbound = _video(sent, "outbound-rtp")
    assert outbound[-1][1]["targetBitrate"] > 0 and outbound[-1][1]["framesEncoded"] > 0
    # Each browser's processes, read from /proc as often: the browser, a renderer and more; CPU
    # time only grows; the encoding side works harder than the decoding one.
    for node in ("A", "B"):
        u = samples.usage[node]
        assert 59 <= len(u) <= 62
        assert all(x.processes >= 3 and x.pss_bytes > 50e6 for x in u)
        assert all(b.cpu_s >= a.cpu_s for a, b in itertools.pairwise(u))
    busy = {node: (u[-1].cpu_s - u[0].cpu_s) / (u[-1].t - u[0].t) for node, u in samples.usage.items()}
    assert busy["A"] > busy["B"] > 0.02, busy
    # Set-up: offer to ICE connected, and to the first frame shown, both within seconds.
    setup = call.setup_s()
    assert setup["connected"] is not None and 0 < setup["connected"] < 5
    assert setup["first_frame"] is not None and setup["connected"] <= setup["first_frame"] < 10
    assert setup["first_frame_back"] is None  # one way


@needs_testbed
def test_a_call_that_cannot_connect_ends_with_one_line(tmp_path: Path) -> None:
    # Every packet is lost both ways: ICE never connects; the call ends at its time limit.
    variant = _variant(tmp_path, loss='loss = { model = "bernoulli", rate = 1.0 }')
    with testbed.build(variant) as bed:
        r = relay.start(bed, variant, seed=1, out_dir=tmp_path / "relay")
        r.go()
        with (
            browser.Peer.start(bed, "A", tmp_path / "A") as a,
            browser.Peer.start(bed, "B", tmp_path / "B") as b,
        ):
            started = time.monotonic()
            with pytest.raises(browser.BrowserError) as failed:
                browser.connect(a, b, browser.VideoSettings(), timeout_s=3.0)
            assert time.monotonic() - started < 6.0
        r.stop()
    line = str(failed.value)
    assert "\n" not in line and "A → B" in line and "did not connect" in line


def _network(tmp_path: Path, name: str, links: Sequence[tuple[str, str, str, str]]) -> rtcbench.Variant:
    """A scenario `name` of the `links` (from, to, capacity, one-way delay; 200 ms queues), with
    a call from A to B that only makes it valid: the browsers make the calls."""
    text = f'id = "{name}"\nduration = "20s"\n\n' + "".join(
        f'[[links]]\nname = "{a}{b}"\nfrom = "{a}"\nto = "{b}"\ncapacity = "{capacity}"\n'
        f'delay = "{delay}"\nqueue = {{ size = "200ms" }}\n\n'
        for a, b, capacity, delay in links
    )
    path = tmp_path / f"{name}.toml"
    path.write_text(text + '[[calls]]\nfrom = "A"\nto = "B"\n')
    return rtcbench.resolve(str(path))[0]


@needs_testbed
def test_a_three_party_mesh_delivers_every_stream(tmp_path: Path) -> None:
    # Three peers, a peer connection per pair, each sending its camera (low resolution) to the
    # other two over 2 Mbit/s links with 20 ms each way.
    nodes = ("A", "B", "C")
    variant = _network(
        tmp_path, "browser-mesh", [(a, b, "2Mbps", "20ms") for a in nodes for b in nodes if a != b]
    )
    clip = browser.noise_clip(tmp_path / "camera.y4m", width=320, height=180, fps=15)
    video = browser.VideoSettings(width=320, height=180, fps=15, max_bitrate_bps=500_000)
    with testbed.build(variant) as bed:
        r = relay.start(bed, variant, seed=1, out_dir=tmp_path / "relay")
        r.go()
        with contextlib.ExitStack() as stack:
            peers = [stack.enter_context(browser.Peer.start(bed, n, tmp_path / n, clip)) for n in nodes]
            calls = browser.mesh(peers, video)
            samples = browser.sample(calls, 15.0)
        r.stop()
    assert len(calls) == 3
    for call in calls:
        setup = call.setup_s()
        assert setup["connected"] is not None and setup["connected"] < 5, setup
        assert setup["first_frame"] is not None and setup["first_frame_back"] is not None, setup
    # Every peer decodes the video of both others, and keeps receiving it.
    for node, remote, fps, rate in _every_stream(samples, nodes, lambda remote: remote):
        assert fps > 10 and rate > 50_000, (node, remote, fps, rate)


@needs_testbed
@pytest.mark.skipif(NO_JANUS is not None, reason=str(NO_JANUS))
def test_a_four_party_sfu_call_delivers_every_stream(tmp_path: Path) -> None:
    # Four peers and Janus's VideoRoom in node S: each publishes its camera (320x180, 15 fps,
    # 300 kbit/s) on 1 Mbit/s up to S and views the three others on 3 Mbit/s down from S.
    nodes = ("A", "B", "C", "D")
    links = [link for n in nodes for link in ((n, "S", "1Mbps", "20ms"), ("S", n, "3Mbps", "20ms"))]
    variant = _network(tmp_path, "browser-sfu", links)
    clip = browser.noise_clip(tmp_path / "camera.y4m", width=320, height=180, fps=15)
    video = browser.VideoSettings(width=320, height=180, fps=15, max_bitrate_bps=300_000)
    with testbed.build(variant) as bed:
        r = relay.start(bed, variant, seed=1, out_dir=tmp_path / "relay")
        r.go()
        with sfu.Janus.start(bed, "S", tmp_path / "janus") as janus, contextlib.ExitStack() as stack:
            peers = [stack.enter_context(browser.Peer.start(bed, n, tmp_path / n, clip)) for n in nodes]
            subscriptions = sfu.videoroom(janus, peers, video)
            samples = browser.sample_peers(peers, 15.0)
            setup = {
                (p.node, key): p.evaluate(f"rtcbench.times({json.dumps(key)})", "read the set-up times")
                for p in peers
                for key in ["sfu"] + [f"sfu:{q.node}" for q in peers if q is not p]
            }
            browser.close(peers)
        r.stop()
    assert len(subscriptions) == 12
    # Every connection to the SFU came up within seconds; every view showed a first frame.
    for (node, key), t in setup.items():
        assert t["ice"] == "connected" and 0 < t["connected"] - t["offer"] < 5000, (node, key, t)
        if key != "sfu":
            assert 0 < t["firstFrame"] - t["offer"] < 5000, (node, key, t)
    # Every peer decodes the three others, forwarded by the SFU, at their rate.
    for node, other, fps, rate in _every_stream(samples, nodes, lambda other: f"sfu:{other}"):
        assert fps > 10 and 150_000 < rate < 400_000, (node, other, fps, rate)


@needs_testbed
@pytest.mark.skipif(NO_COTURN is not None, reason=str(NO_COTURN))
def test_a_call_relayed_through_turn_goes_through_the_relay_node(tmp_path: Path) -> None:
    # Relay-only ICE through coturn in node T (as seed 003's relayed calls): A and B have links
    # only to and from T, so nothing else could carry the call.
    links = [link for n in ("A", "B") for link in ((n, "T", "2Mbps", "10ms"), ("T", n, "2Mbps", "10ms"))]
    variant = _network(tmp_path, "browser-turn", links)
    clip = browser.noise_clip(tmp_path / "camera.y4m", width=320, height=180, fps=15)
    video = browser.VideoSettings(width=320, height=180, fps=15, max_bitrate_bps=500_000)
    with testbed.build(variant) as bed:
        r = relay.start(bed, variant, seed=1, out_dir=tmp_path / "relay")
        r.go()
        with (
            turn.Turn.start(bed, "T", tmp_path / "turn") as server,
            browser.Peer.start(bed, "A", tmp_path / "A", clip) as a,
            browser.Peer.start(bed, "B", tmp_path / "B") as b,
        ):
            for peer in (a, b):
                peer.configure(server.ice_servers(), relay_only=True)
            call = browser.connect(a, b, video)
            routes = (a.route("B"), b.route("A"))
            samples = browser.sample([call], 10.0)
        report = r.stop()
    assert routes == ({"local": "relay", "remote": "relay"},) * 2
    setup = call.setup_s()
    assert setup["connected"] is not None and setup["connected"] < 5
    assert setup["first_frame"] is not None
    inbound = _video(samples.of("B", "A"), "inbound-rtp")
    (t0, first), (t1, last) = inbound[len(inbound) // 2], inbound[-1]
    rate = (last["bytesReceived"] - first["bytesReceived"]) * 8 / (t1 - t0)
    assert (last["framesDecoded"] - first["framesDecoded"]) / (t1 - t0) > 10 and rate > 300_000, rate
    # The media crossed A → T and T → B: each link carried at least what B received.
    received = last["bytesReceived"]
    assert report.links["AT"].bytes_in > received and report.links["TB"].bytes_in > received
