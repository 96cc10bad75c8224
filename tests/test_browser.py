"""Real Chromium peers over the emulated network (docs/browser.md): one headless Chromium per
participant in its node's namespace, a fake camera playing a clip made at set-up, local
signalling, and `getStats()` sampled in the pages every 500 ms.

As root with Chromium installed (`make chromium`): `--mode browser` runs a 30 s point-to-point
call through the relay on a 1 Mbit/s link into the trace tables, whose receive rate after 10 s
is 0.75-0.95 of the link, with its set-up time and the browsers' and the relay's CPU and memory;
a run whose call cannot connect ends with one line in its summary instead of a hang. Through the
Python API: a 3-party mesh and a 4-party call through an SFU (Janus's VideoRoom) at low
resolution in which every peer decodes every other, and a call relayed through a TURN server
(coturn, relay-only ICE).
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
import pandas as pd
import polars as pl
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
duration = "{duration}"

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
video = {{ camera = "640x360", start = "300kbps", max = "2.5Mbps" }}
audio = {{ enabled = false }}
"""


def _scenario(tmp_path: Path, loss: str = "", duration: str = "30s") -> Path:
    path = tmp_path / "p2p.toml"
    path.write_text(P2P.format(loss=loss, duration=duration))
    return path


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
    # `--mode browser`: the scenario's call between two Chromium peers, 30 s through the relay on
    # 1 Mbit/s with 25 ms each way, measured into the trace tables. Chromium's own start rate.
    (run,) = rtcbench.run(_scenario(tmp_path), "gcc", out=tmp_path / "out", mode="browser")
    s = run.summary
    assert s["mode"] == "browser" and s["browser"]["failure"] is None, s["browser"]
    assert s["browser"]["chromium"] and s["identity"]["browser"] == s["browser"]["chromium"]
    video = next(f for f in s["flows"] if f["name"] == "call0.video")
    # What crossed the link after 10 s, IP packets as the link counts them: 0.75-0.95 of it.
    ts = run.timeseries.filter((pl.col("flow") == video["id"]) & (pl.col("t_us") >= 10_000_000))
    rate = ts.get_column("recv_rate_bps").mean()
    assert isinstance(rate, float) and 0.75e6 <= rate <= 0.95e6, rate
    # Counted by the receiving browser (`stats`): 30 frames a second, no freeze; the sender
    # measured the RTCP round trip over the 50 ms path and its queue.
    assert video["fps_mean"] > 25 and video["freezes"] == 0, video
    assert 50 <= video["rtt_mean_ms"] < 150 and video["loss_ratio"] < 0.01, video
    # Every table is there: packets read off the relay (media with transport-wide numbers,
    # feedback), GoogCC's target every 500 ms, getStats() and usage samples.
    t = run.tables
    media = t.packets.filter((pl.col("flow") == video["id"]) & (pl.col("kind") == "media"))
    assert media.height > 2000 and media.get_column("transport_seq").null_count() == 0
    twcc = t.feedback.filter(pl.col("kind") == "twcc")
    assert twcc.height > 10 * 25, twcc.height  # every 50-100 ms
    assert 55 <= t.controller.height <= 62 and t.controller.get_column("target_bps").min() > 100_000
    for side in ("sender", "receiver"):
        assert 55 <= t.stats.filter((pl.col("flow") == video["id"]) & (pl.col("side") == side)).height <= 62
    for name in ("stats", "usage"):
        assert pd.read_parquet(run.path / f"{name}.parquet").shape[0] > 50
    # Set-up: offer to ICE connected, and to the first frame shown, within seconds.
    setup = s["browser"]["calls"]["call0"]["setup_s"]
    assert 0 < setup["connected"] < 5 and setup["connected"] <= setup["first_frame"] < 10, setup
    # Each browser's processes, and the relay's: the encoding side works harder than the
    # decoding one; a browser is 10-11 processes and some 300 MB.
    usage = s["browser"]["usage"]
    assert usage["A"]["cpu_cores"] > usage["B"]["cpu_cores"] > 0.02, usage
    assert all(usage[n]["processes_max"] >= 3 and usage[n]["pss_mb_max"] > 50 for n in "AB"), usage
    assert usage["relay"]["processes_max"] == 1 and usage["relay"]["cpu_cores"] > 0, usage
    u = t.usage.filter(pl.col("process") == "A").get_column("cpu_s").to_numpy()
    assert 55 <= len(u) <= 62 and np.all(np.diff(u) >= 0)


@needs_testbed
def test_a_call_that_cannot_connect_ends_the_run_with_one_line(tmp_path: Path) -> None:
    # Every packet is lost both ways: ICE never connects. The run ends when the call's time
    # limit (here the run's 5 s) is up, and its summary says why; the command says it too.
    scenario = _scenario(tmp_path, loss='loss = { model = "bernoulli", rate = 1.0 }', duration="5s")
    started = time.monotonic()
    (run,) = rtcbench.run(scenario, "gcc", out=tmp_path / "out", mode="browser")
    assert time.monotonic() - started < 20.0
    line = run.summary["browser"]["failure"]
    assert "\n" not in line and "A → B" in line and "did not connect" in line, line
    assert run.summary["browser"]["calls"]["call0"]["setup_s"] is None


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
            samples = browser.sample_peers(peers, 15.0, servers={"janus": janus.process.pid})
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
    # Janus's own CPU and memory: one process forwarding 12 streams of 300 kbit/s.
    u = samples.usage["janus"]
    assert len(u) >= 25 and all(x.processes == 1 and x.pss_bytes > 1e6 for x in u)
    assert u[-1].cpu_s > u[0].cpu_s


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
            samples = browser.sample([call], 10.0, servers={"coturn": server.process.pid})
        report = r.stop()
    assert routes == ({"local": "relay", "remote": "relay"},) * 2
    setup = call.setup_s()
    assert setup["connected"] is not None and setup["connected"] < 5
    assert setup["first_frame"] is not None
    inbound = _video(samples.of("B", "A"), "inbound-rtp")
    (t0, first), (t1, last) = inbound[len(inbound) // 2], inbound[-1]
    rate = (last["bytesReceived"] - first["bytesReceived"]) * 8 / (t1 - t0)
    assert (last["framesDecoded"] - first["framesDecoded"]) / (t1 - t0) > 10 and rate > 300_000, rate
    # coturn's own CPU and memory, relaying every packet of the call.
    u = samples.usage["coturn"]
    assert len(u) >= 15 and all(x.processes == 1 and x.pss_bytes > 1e5 for x in u)
    assert u[-1].cpu_s > u[0].cpu_s
    # The media crossed A → T and T → B: each link carried at least what B received.
    received = last["bytesReceived"]
    assert report.links["AT"].bytes_in > received and report.links["TB"].bytes_in > received
