"""How a browser run is read (docs/browser.md, "What a browser run records"), without browsers:
the first bytes of SRTP and SRTCP packets as the relay logs them, the session descriptions that
say what their payload types are, the edits that carry a scenario's settings into Chromium, the
metrics of a video flow whose frames a browser counted, and the scenario settings browser mode
refuses, each with one line naming its field."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

import rtcbench
from rtcbench.analysis import flow_metrics, timeseries
from rtcbench.browser import sdp
from rtcbench.browser.chromium import VideoSettings, limit_js
from rtcbench.browser.run import BrowserModeError, connections
from rtcbench.browser.trace import _number_frames, parse_head, turn_allocations
from rtcbench.emulation.run import planned_meta
from rtcbench.identity import BROWSER, run_key
from rtcbench.results import InputError
from rtcbench.scenarios import other_codecs
from rtcbench.tables import Tables
from rtcbench.testbed.relay_log import background_flows, packet_events

# An offer as Chromium writes one (trimmed to what is read): BUNDLE of a video and an audio
# section, VP8 with RTX, RED and ULPFEC, Opus; transport-wide sequence numbers as extension 3.
OFFER = "\r\n".join(
    [
        "v=0",
        "o=- 1 2 IN IP4 127.0.0.1",
        "s=-",
        "t=0 0",
        "a=group:BUNDLE 0 1",
        "m=video 9 UDP/TLS/RTP/SAVPF 96 97 116 117 118",
        "a=mid:0",
        "a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time",
        "a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01",
        "a=rtpmap:96 VP8/90000",
        "a=rtcp-fb:96 goog-remb",
        "a=rtcp-fb:96 transport-cc",
        "a=rtcp-fb:96 ccm fir",
        "a=rtcp-fb:96 nack",
        "a=rtcp-fb:96 nack pli",
        "a=rtpmap:97 rtx/90000",
        "a=fmtp:97 apt=96",
        "a=rtpmap:116 red/90000",
        "a=rtpmap:117 rtx/90000",
        "a=fmtp:117 apt=116",
        "a=rtpmap:118 ulpfec/90000",
        "m=audio 9 UDP/TLS/RTP/SAVPF 111",
        "a=mid:1",
        "a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01",
        "a=rtpmap:111 opus/48000/2",
        "a=fmtp:111 minptime=10;useinbandfec=1",
        "",
    ]
)


def test_a_description_says_what_each_payload_type_carries() -> None:
    d = sdp.describe(OFFER)
    assert d.payload_types("video") == {96: "VP8", 97: "RTX", 116: "RED", 117: "RTX", 118: "ULPFEC"}
    assert d.payload_types("audio") == {111: "OPUS"}
    assert d.sections[0].apt == {97: 96, 117: 116}
    assert d.sections[1].mid == "1"
    assert d.transport_cc_id() == 3


def test_edits_carry_bitrates_nack_and_fir_into_the_video_codec() -> None:
    edited = VideoSettings(
        min_bitrate_bps=150_000, start_bitrate_bps=300_000, max_bitrate_bps=2_000_000, nack=False,
        keyframe_request="fir",
    ).edit(OFFER)  # fmt: skip
    lines = edited.split("\r\n")
    # VP8 had no fmtp line: it gets one right after its rtpmap; RTX's keeps its own.
    k = lines.index("a=rtpmap:96 VP8/90000")
    assert (
        lines[k + 1]
        == "a=fmtp:96 x-google-min-bitrate=150;x-google-start-bitrate=300;x-google-max-bitrate=2000"
    )
    assert "a=fmtp:97 apt=96" in lines
    # No NACK and no PLI: FIR remains the keyframe request; nothing else changes.
    assert "a=rtcp-fb:96 nack" not in lines and "a=rtcp-fb:96 nack pli" not in lines
    assert "a=rtcp-fb:96 ccm fir" in lines and "a=rtcp-fb:96 transport-cc" in lines
    assert "a=fmtp:111 minptime=10;useinbandfec=1" in lines
    assert edited.endswith("\r\n") and "\n" not in edited.replace("\r\n", "")
    # The defaults edit nothing.
    assert VideoSettings().edit(OFFER) == OFFER
    # An existing fmtp line gets the parameters appended.
    with_fmtp = OFFER.replace("a=rtpmap:96 VP8/90000\r\n", "a=rtpmap:96 VP8/90000\r\na=fmtp:96 foo=1\r\n")
    assert "a=fmtp:96 foo=1;x-google-max-bitrate=500" in VideoSettings(max_bitrate_bps=500_000).edit(
        with_fmtp
    )


def _rtp(
    pt: int,
    seq: int,
    ssrc: int,
    *,
    marker: bool = False,
    padding: bool = False,
    ext: bytes = b"",
    timestamp: int = 1234,
) -> bytes:
    b0 = 0x80 | (0x20 if padding else 0) | (0x10 if ext else 0)
    head = bytes([b0, (0x80 if marker else 0) | pt]) + seq.to_bytes(2) + timestamp.to_bytes(4)
    head += ssrc.to_bytes(4)
    if ext:
        head += ext
    return head


def test_an_rtp_header_is_read_with_its_transport_wide_sequence_number() -> None:
    # One-byte elements (RFC 8285 §4.2): abs-send-time (id 2, 3 bytes), transport-cc (id 3, 2
    # bytes), one byte of padding: two words.
    elements = bytes([0x22, 1, 2, 3, 0x31, 0x12, 0x34, 0x00])
    ext = (0xBEDE).to_bytes(2) + (2).to_bytes(2) + elements
    h = parse_head(_rtp(96, 40000, 0xCAFEBABE, marker=True, ext=ext) + b"\xff" * 20, transport_cc=3)
    assert (h.what, h.pt, h.seq, h.ssrc, h.padding) == ("rtp", 96, 40000, 0xCAFEBABE, False)
    assert h.header_len == 12 + 4 + 8 and h.transport_seq == 0x1234
    # Two-byte elements (§4.3), the same number behind another element.
    elements = bytes([5, 1, 0xAA, 3, 2, 0xBE, 0xEF, 0])
    ext = (0x1000).to_bytes(2) + (2).to_bytes(2) + elements
    assert parse_head(_rtp(97, 1, 7, padding=True, ext=ext), transport_cc=3).transport_seq == 0xBEEF
    assert parse_head(_rtp(97, 1, 7, padding=True, ext=ext), transport_cc=3).padding
    # Not negotiated, or cut off by the log: no number, and a header length only if known.
    assert parse_head(_rtp(96, 1, 7, ext=ext), transport_cc=None).transport_seq is None
    cut = parse_head(_rtp(96, 1, 7, ext=ext)[:14], transport_cc=3)
    assert cut.seq == 1 and cut.header_len is None and cut.transport_seq is None


def test_video_packets_are_numbered_by_the_frame_their_rtp_timestamp_names() -> None:
    h = parse_head(_rtp(96, 5, 7, marker=True, timestamp=0xFFFFFF00), transport_cc=None)
    assert (h.timestamp, h.marker) == (0xFFFFFF00, True)
    assert not parse_head(_rtp(96, 6, 7), transport_cc=None).marker

    def row(flow: int, kind: str, timestamp: int, media: str = "video") -> dict[str, object]:
        return {"flow": flow, "kind": kind, "frame": None, "_media": media, "_timestamp": timestamp}

    # Two frames of flow 0 across the timestamp's wrap, a retransmission of the first, padding;
    # flow 2's own frames; audio; a retransmission of a frame never seen; an SFU's forward leg
    # (no timestamp kept).
    rows = [
        row(0, "media", 0xFFFFFF00), row(0, "media", 0xFFFFFF00), row(2, "media", 50),
        row(0, "media", 0x00000B00), row(0, "rtx", 0xFFFFFF00), row(0, "padding", 0x00000B00),
        row(1, "media", 960, media="audio"), row(2, "media", 3050), row(0, "rtx", 77),
        {"flow": 3, "kind": "media", "frame": None, "_media": "video"},
    ]  # fmt: skip
    _number_frames(rows)
    assert [r["frame"] for r in rows] == [0, 0, 0, 1, 0, None, None, 1, None, None]


def test_rtcp_stun_and_dtls_are_told_apart_by_their_first_bytes() -> None:
    # RFC 5761: RTCP where RTP's marker and payload type would be 192-223; RFC 4585 FMT in the
    # first byte; the sender's SSRC after the length (RFC 3711 §3.4 leaves it in the clear).
    twcc = parse_head(bytes([0x8F, 205, 0, 5]) + (99).to_bytes(4), transport_cc=3)
    assert (twcc.what, twcc.pt, twcc.fmt, twcc.ssrc) == ("rtcp", 205, 15, 99)
    rr = parse_head(bytes([0x81, 201, 0, 7]) + (5).to_bytes(4), transport_cc=3)
    assert (rr.what, rr.pt, rr.fmt) == ("rtcp", 201, None)
    assert parse_head(bytes([0x00, 0x01, 0, 0]), None).what == "stun"  # RFC 5389 binding request
    assert parse_head(bytes([0x16, 0xFE, 0xFD]), None).what == "dtls"  # RFC 9147 handshake
    assert parse_head(bytes([0x2F, 0x01]), None).what == "dtls"  # DTLS 1.3 unified header
    assert parse_head(b"", None).what == "other"


def _tables(stats_rows: list[dict[str, object]], duration_s: float = 4.0) -> Tables:
    meta = {
        "duration_s": duration_s,
        "flows": [
            {
                "id": 0,
                "name": "call0.video",
                "kind": "video",
                "call": 0,
                "path": [],
                "bottleneck": None,
                "start_s": 0.0,
                "stop_s": duration_s,
            },
        ],
        "links": [],
        "unobserved": ["frame_delay", "residual_loss", "fec_overhead"],
    }
    return Tables(
        packets=pl.DataFrame(),
        frames=pl.DataFrame(),
        controller=pl.DataFrame(),
        links=pl.DataFrame(),
        feedback=pl.DataFrame(),
        meta=meta,
        stats=pl.DataFrame(stats_rows),
    )


def test_a_browsers_counts_give_the_video_metrics_where_no_frames_were_recorded() -> None:
    # The receiver decoded 30 frames a second from 1 s on and froze once (0.4 s) at 3 s; the
    # sender encoded 31 a second; its RTCP round trips took 40 ms, then 60 ms.
    rows: list[dict[str, object]] = []
    for k in range(9):
        t_us = 500_000 * k
        decoded = max(0, 30 * (t_us - 1_000_000) // 1_000_000)
        rows.append(
            {"t_us": t_us, "flow": 0, "side": "receiver", "frames_decoded": decoded, "frame_height": 360,
             "freeze_count": int(t_us >= 3_000_000), "total_freezes_duration_s": 0.4 * (t_us >= 3_000_000),
             "jitter_buffer_delay_s": 0.05 * decoded, "jitter_buffer_emitted_count": decoded,
             "total_processing_delay_s": 0.058 * decoded}
        )  # fmt: skip
        rows.append(
            {"t_us": t_us, "flow": 0, "side": "sender", "frames_encoded": 31 * t_us // 1_000_000,
             "round_trip_time_measurements": k,
             "total_round_trip_time_s": 0.04 * min(k, 4) + 0.06 * max(0, k - 4),
             "packets_sent": 100 * k, "total_packet_send_delay_s": 0.002 * 100 * k}
        )  # fmt: skip
    t = _tables(rows)
    ts = timeseries(t)
    fps = ts.filter(pl.col("flow") == 0).get_column("fps").to_numpy()
    assert np.allclose(fps[:5], 0.0) and np.allclose(fps[5:], 30.0)
    assert ts.get_column("frame_delay_ms").null_count() == ts.height
    m = flow_metrics(t, ts, 0, 0, 4_000_000)
    assert m["fps_mean"] == pytest.approx(22.5)  # 90 frames in 4 s
    assert m["freezes"] == 1 and m["freeze_duration_ms"] == pytest.approx(400.0)
    assert m["height_mean_px"] == 360
    assert m["jitter_buffer_ms"] == pytest.approx(50.0)  # 50 ms for each frame it emitted
    assert m["frame_loss_ratio"] == pytest.approx(1 - 90 / 124)
    assert m["rtt_mean_ms"] == pytest.approx((4 * 40 + 4 * 60) / 8)
    late = flow_metrics(t, ts, 0, 2_000_000, 4_000_000)
    assert late["rtt_mean_ms"] == pytest.approx(60.0) and late["fps_mean"] == pytest.approx(30.0)
    # What a browser run cannot see is not guessed.
    assert m["frame_delay_p50_ms"] is None and m["residual_loss_ratio"] is None and m["fec_overhead"] is None
    # Its frames' stages, from the counters (docs/metrics.md, "Frame delay by stage"): 2 ms in
    # the pacer a packet, 50 ms in the jitter buffer a frame and 8 ms more to decode it; the
    # encoder and the repair wait are not counted apart, and no stage has a p95.
    assert m["stage_send_queue_ms"] == pytest.approx(2.0)
    assert m["stage_jitter_buffer_ms"] == pytest.approx(50.0)
    assert m["stage_decode_ms"] == pytest.approx(8.0)
    assert m["stage_encode_ms"] is None and m["stage_repair_ms"] is None
    assert m["stage_send_queue_p95_ms"] is None and m["frame_delay_mean_ms"] is None


def _variant(tmp_path: Path, call: str) -> rtcbench.Variant:
    path = tmp_path / "s.toml"
    path.write_text(
        'id = "b"\nduration = "10s"\n[[links]]\nname = "ab"\nfrom = "A"\nto = "B"\n'
        '[[links]]\nname = "ba"\nfrom = "B"\nto = "A"\n'
        f'[[calls]]\nfrom = "A"\nto = "B"\n{call}\n'
    )
    return rtcbench.resolve(str(path))[0]


@pytest.mark.parametrize(
    ("call", "field", "words"),
    [
        ('ecn = "ect1"', "calls.0.ecn", "no ECN"),
        ('fec = "flexfec"', "calls.0.fec", "FlexFEC"),
        ("fec_rate = 0.3", "calls.0.fec_rate", "FEC rate"),
        ('feedback = { twcc_interval = "100ms" }', "calls.0.feedback.twcc_interval", "own timing"),
        ("priority = 3.0", "calls.0.priority", "0.5, 1, 2, 4"),
        ("video = { fps = 29.97 }", "calls.0.video.fps", "whole number"),
        ('audio = { packet_interval = "40ms" }', "calls.0.audio.packet_interval", "20ms"),
    ],
)
def test_what_chromium_cannot_do_is_refused_with_one_line(
    tmp_path: Path, call: str, field: str, words: str
) -> None:
    v = _variant(tmp_path, call)
    with pytest.raises(BrowserModeError) as refused:
        connections(v, planned_meta(v, "gcc", 1), 1)
    line = str(refused.value)
    assert "\n" not in line and line.startswith(field) and words in line and "--mode simulate" in line


def test_a_call_becomes_a_connection_with_the_scenarios_settings(tmp_path: Path) -> None:
    v = _variant(
        tmp_path,
        'video = { min = "100kbps", start = "400kbps", max = "1Mbps", camera = "320x180", fps = 15,\n'
        '          codec = "h264", degradation = "maintain-resolution" }\n'
        'nack = false\nkeyframe_request = "fir"\npriority = 2.0\nstart = "1s"\nstop = "8s"\n'
        'pause = [{ from = "3s", to = "4s", audio = false }]',
    )
    (c,) = connections(v, planned_meta(v, "gcc", 1), 1)
    (s,) = c.streams
    assert (c.key, c.offerer, c.answerer, s.src, s.dst) == ("call0", "A", "B", "A", "B")
    assert s.video == VideoSettings(
        codec="H264",
        width=320, height=180, fps=15, max_bitrate_bps=1_000_000, min_bitrate_bps=100_000,
        start_bitrate_bps=400_000, fec=True, nack=False, keyframe_request="fir", priority="medium",
        degradation="maintain-resolution",
    )  # fmt: skip
    # The page sets it on the video sender, with the rate and priority.
    expected = 'rtcbench.limit("call0", 1000000, "medium", 20000, "maintain-resolution")'
    assert limit_js("call0", s.video, s.audio) == expected
    assert s.audio is not None and s.audio.max_bitrate_bps == 20_000  # RFC 8867 §4.3's audio
    assert (s.start_s, s.stop_s, s.pauses) == (1.0, 8.0, [(3.0, 4.0, False)])
    assert s.flows == {"video": 0, "audio": 1, "rtcp-rx": 2, "rtcp-tx": 3}


def test_a_browser_run_is_keyed_by_the_chromium_that_ran_it() -> None:
    cc = {"name": "gcc", "source_sha256": None, "state_sha256": None}
    keys = {run_key("f" * 64, cc, BROWSER, v) for v in ("156.0.8078.79", "157.0.1.2")}
    assert len(keys) == 2 and run_key("f" * 64, cc, BROWSER, None) not in keys


def test_a_relayed_datagram_is_read_inside_its_channel_data() -> None:
    # RFC 8656 §12.4: channel 0x4000, the length, then the RTP packet as it left its sender.
    ext = (0xBEDE).to_bytes(2) + (1).to_bytes(2) + bytes([0x31, 0x00, 0x07, 0x00])
    rtp = _rtp(96, 9, 42, ext=ext)
    h = parse_head((0x4000).to_bytes(2) + len(rtp).to_bytes(2) + rtp, transport_cc=3)
    assert h.relayed_len == len(rtp) and (h.what, h.pt, h.seq, h.ssrc, h.transport_seq) == (
        "rtp",
        96,
        9,
        42,
        7,
    )


def test_a_relayed_datagram_is_read_inside_a_send_indication() -> None:
    # RFC 8656 §11.4, as Firefox relays: a STUN Send indication (0x0016, the magic cookie, a
    # transaction id), XOR-PEER-ADDRESS, then DATA holding the RTP packet; a Data indication
    # (0x0017) the same way back. Attributes are padded to 4 bytes.
    ext = (0xBEDE).to_bytes(2) + (1).to_bytes(2) + bytes([0x31, 0x00, 0x07, 0x00])
    rtp = _rtp(96, 9, 42, ext=ext)
    peer = (0x0012).to_bytes(2) + (8).to_bytes(2) + bytes(8)
    software = (0x8022).to_bytes(2) + (5).to_bytes(2) + b"nICEr" + bytes(3)
    data = (0x0013).to_bytes(2) + len(rtp).to_bytes(2) + rtp
    for kind in (0x0016, 0x0017):
        body = software + peer + data
        stun = kind.to_bytes(2) + len(body).to_bytes(2) + (0x2112A442).to_bytes(4) + bytes(12) + body
        h = parse_head(stun, transport_cc=3)
        assert (h.what, h.pt, h.seq, h.ssrc, h.transport_seq, h.relayed_len) == (
            "rtp",
            96,
            9,
            42,
            7,
            len(rtp),
        )
        # Cut off by the log before DATA, or not a STUN message: not read as media.
        assert parse_head(stun[:40], transport_cc=3).what == "stun"
    assert parse_head(bytes([0, 0x16, 0, 0]) + bytes(16), transport_cc=3).what == "stun"


def test_a_turn_allocation_names_the_socket_behind_a_relayed_address() -> None:
    # coturn's Allocate success response to 10.0.1.2:39390 as the relay logged it: its
    # XOR-RELAYED-ADDRESS is 10.0.2.2:49260, the relay candidate the page's statistics name.
    head = (
        "010300582112a4426f2b47364146744c5a556b4d001600080001e17e2b12a640002000080001b8cc2b12a5"
        "40000d00040000025880220014436f7475726e2d34"
    )
    log = pl.DataFrame(
        {"event": ["in"], "protocol": [17], "src": ["10.0.2.2"], "src_port": [3478], "dst": ["10.0.1.2"],
         "dst_port": [39390], "head": [head]}
    )  # fmt: skip
    assert turn_allocations(log) == {("10.0.2.2", 49260): (("10.0.1.2", 39390), ("10.0.2.2", 3478))}


def test_only_a_browser_run_sends_another_codec_than_vp8(tmp_path: Path) -> None:
    v = _variant(tmp_path, 'video = { codec = "av1" }')
    assert other_codecs(v) == [("calls.0.video.codec", "av1")]
    with pytest.raises(InputError) as refused:
        rtcbench.runner.run_variant(v, "gcc", 1)
    line = str(refused.value)
    assert "\n" not in line and "calls.0.video.codec = 'av1'" in line and "--mode browser" in line


def _stats_and_usage(fps: dict[int, list[float]], cores: list[float]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A browser run's `stats` (each video flow's encoded frames a second, one sample a second)
    and `usage` (two processes sharing `cores[k]` in second k, sampled every 500 ms)."""
    stats = pl.DataFrame(
        [
            {"t_us": k * 1_000_000 + 500_000, "flow": flow, "side": "sender", "frames_per_second": f}
            for flow, series in fps.items()
            for k, f in enumerate(series)
        ],
        schema={"t_us": pl.Int64, "flow": pl.Int32, "side": pl.String, "frames_per_second": pl.Float64},
    )
    usage, spent = [], {"PC1": 0.0, "relay": 0.0}
    for half in range(2 * len(cores) + 1):
        for process, share in (("PC1", 0.9), ("relay", 0.1)):
            usage.append({"t_us": half * 500_000, "process": process, "cpu_s": spent[process]})
            if half < 2 * len(cores):
                spent[process] += share * cores[half // 2] * 0.5
    return stats, pl.DataFrame(usage)


def test_the_machine_is_named_where_encoders_fell_behind_on_a_busy_machine() -> None:
    # Measured in Table 6.4's Chromium run (Guerrero Viveros 2019): five calls at 60 fps, the
    # competing ones encoding 16-27 frames a second from 120 s with the run at 1.66-1.81 of 2 cores.
    from rtcbench.browser.machine import starved_warning, starved_windows

    asked = {0: ("up.video", 60.0), 4: ("comp4.video", 60.0)}
    fps = {0: [60.0] * 30, 4: [60.0] * 10 + [20.0] * 20}
    stats, usage = _stats_and_usage(fps, [0.7] * 10 + [0.8] * 10 + [1.8] * 10)
    windows = starved_windows(stats, usage, asked, cores=2)
    # 10-20 s: behind, but the machine had room (a network that made the encoder drop frames).
    assert [(w["start_s"], w["flow"], w["fps_median"]) for w in windows] == [(20.0, "comp4.video", 20.0)]
    assert windows[0]["cores_used"] == pytest.approx(1.8, rel=0.02)
    assert "comp4.video encoded a median 20 of its 60 frames a second" in str(starved_warning(windows, 2))
    # A busy machine whose encoders keep up (seed 003's three calls at 30 fps: 1.57-1.66 cores).
    busy = _stats_and_usage({0: [30.0] * 30}, [1.7] * 30)
    assert starved_windows(*busy, {0: ("A1.video", 30.0)}, cores=2) == []
    # The same run on a machine of four cores had room.
    assert starved_windows(stats, usage, asked, cores=4) == []
    assert starved_warning([], 2) is None


def test_the_relays_own_background_traffic_has_its_flows_in_a_browser_run_too() -> None:
    # RFC 8867 §5.1's udp-background variants: the relay sends the background itself, and a
    # browser run's packets table maps it to its flows as an emulated run's does (it used to map
    # it to none, and the trace failed on the first such packet).
    meta = {
        "flows": [
            {"id": 0, "name": "call0.video"},
            {"id": 5, "name": "forward.udp-background", "workload": "udp-background"},
        ]
    }
    assert background_flows(meta) == {"forward": 5}
    relay = pl.DataFrame(
        {"id": [1, 1], "event": ["bg_in", "bg_out"], "t_us": [10, 20], "link": ["forward", "forward"],
         "reason": [None, None], "ecn": [None, None], "size": [1200, 1200]}
    )  # fmt: skip
    sent = pl.DataFrame(schema={"id": pl.Int64, "t_us": pl.Int64, "flow": pl.Int32, "kind": pl.String})
    packets = packet_events(relay, sent, background_flows(meta), end_us=100)
    assert packets.get_column("flow").to_list() == [5, 5] and packets.get_column("event").to_list() == [
        "sent",
        "received",
    ]
