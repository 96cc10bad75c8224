"""Captures checked by a real dissector: Debian's tshark (installed by `make tshark`) must
recognise every packet of a run as RTP or RTCP, report none as malformed, and decode the values
the trace says were sent. RFC 8888 feedback, which Debian 12's tshark 4.0 does not dissect, is
decoded by Pion's RTCP library (Go, `tests/interop/pion-ccfb`)."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest

import rtcbench

PION_CCFB = Path(__file__).parent / "interop" / "pion-ccfb"
CAPTURE_EPOCH_US = 1_767_225_600_000_000  # Instant::ZERO in a capture: 2026-01-01 (rtcbench_wire::pcap)
TSHARK_ARGS = [
    *("-d", "udp.port==5004,rtp"),
    *("-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE"),
]


def tshark_fields(path: Path, *fields: str) -> list[list[str]]:
    tshark = shutil.which("tshark")
    assert tshark, "tshark is not installed: run scripts/install-tshark.sh (make tshark)"
    cmd = [tshark, "-r", str(path), *TSHARK_ARGS, "-T", "fields", "-E", "occurrence=f", "-E", "separator=;"]
    for f in fields:
        cmd += ["-e", f]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return [line.split(";") for line in out.stdout.splitlines()]


@pytest.mark.parametrize("controller", [name for name, _ in rtcbench.controllers()])
def test_every_packet_of_a_run_dissects_cleanly(controller: str, tmp_path: Path) -> None:
    cap = tmp_path / "call.pcap"
    (r,) = rtcbench.run(
        "seed001-sudden-reduction", controller, 1, figure=False, pcap=cap, sets=["duration=8s"]
    )
    rows = tshark_fields(
        cap,
        "frame.protocols",
        "_ws.malformed",
        "_ws.expert",
        "ip.checksum.status",
        "udp.checksum.status",
        "frame.len",
        "rtp.seq",
        "rtcp.pt",
    )
    sent = r.tables.packets.filter(pl.col("event") == "sent").sort("packet")
    assert len(rows) == sent.height > 100
    protocols = [row[0] for row in rows]
    assert all(p.endswith(":rtp") or ":rtcp" in p for p in protocols), set(protocols)
    assert not any(row[1] or row[2] for row in rows), [row for row in rows if row[1] or row[2]][:3]
    assert all(row[3] == "1" and row[4] == "1" for row in rows), "IP/UDP checksums are good"
    # Frame sizes are exactly the wire sizes the trace counts, in the same order.
    assert [int(row[5]) for row in rows] == sent["size"].to_list()
    # RTP sequence numbers match the trace; every RTCP row is feedback, SR or RR.
    rtp = [int(row[6]) for row in rows if row[6]]
    assert rtp == sent.filter(pl.col("kind") != "rtcp")["seq"].to_list()
    assert {row[7] for row in rows if row[7]} <= {"200", "201", "205", "206"}


def test_transport_wide_feedback_fields_decode(tmp_path: Path) -> None:
    cap = tmp_path / "gcc.pcap"
    rtcbench.run("seed001-sudden-reduction", "gcc", 1, figure=False, pcap=cap, sets=["duration=5s"])
    rows = tshark_fields(
        cap,
        "rtcp.rtpfb.fmt",
        "rtcp.rtpfb.transportcc.baseseq",
        "rtcp.rtpfb.transportcc.statuscount",
        "rtcp.rtpfb.transportcc.pktcount",
        "rtp.ext.rfc5285.id",
    )
    fb = [row for row in rows if row[0] == "15"]
    assert len(fb) > 50
    # Feedback packets count up from 0 and cover consecutive ranges of sequence numbers.
    counts = [int(row[3]) for row in fb]
    assert counts[:5] == [0, 1, 2, 3, 4]
    for prev, cur in itertools.pairwise(fb):
        assert int(cur[1]) == (int(prev[1]) + int(prev[2])) % 65536
    # Every RTP packet carries the one-byte extensions (first element: abs-send-time, ID 2).
    assert {row[4] for row in rows if row[4]} == {"2"}


def test_remb_fields_decode_to_the_estimates_the_sender_received(tmp_path: Path) -> None:
    cap = tmp_path / "gcc-draft.pcap"
    (r,) = rtcbench.run(
        "seed001-sudden-reduction", "gcc-draft", 1, figure=False, pcap=cap, sets=["duration=10s"]
    )
    rows = tshark_fields(
        cap,
        "rtcp.psfb.fmt",
        "rtcp.psfb.remb.identifier",
        "rtcp.psfb.remb.fci.br_exp",
        "rtcp.psfb.remb.fci.br_mantissa",
        "rtcp.psfb.remb.fci.number_ssrcs",
    )
    remb = [row for row in rows if row[0] == "15"]
    assert len(remb) >= 10
    assert {row[1] for row in remb} == {"REMB"} and {row[4] for row in remb} == {"2"}
    # tshark's mantissa << exponent is exactly what the sender parsed and traced.
    decoded = {int(row[3]) << int(row[2]) for row in remb}
    traced = set(r.tables.controller["remb_bps"].drop_nulls().to_list())
    assert traced <= decoded and len(traced) > 1


def test_rtcp_xr_reference_time_and_dlrr_decode(tmp_path: Path) -> None:
    """The gcc-draft receiver's RRTR (RFC 3611 §4.4) rides with its RR, and the sender's DLRR
    (§4.5) with its SR: tshark finds both block types, and every DLRR echoes a fresh LRR held
    for less than the 1 s report interval."""
    cap = tmp_path / "gcc-draft.pcap"
    rtcbench.run("seed001-sudden-reduction", "gcc-draft", 1, figure=False, pcap=cap, sets=["duration=10s"])
    rows = tshark_fields(cap, "rtcp.pt", "rtcp.xr.bt", "rtcp.xr.lrr", "rtcp.xr.dlrr")
    blocks = [row for row in rows if row[1]]
    rrtr = [row for row in blocks if row[1] == "4"]
    dlrr = [row for row in blocks if row[1] == "5"]
    assert len(rrtr) >= 9 and {row[0] for row in rrtr} == {"201"}  # compound RR + XR
    assert len(dlrr) >= 8 and {row[0] for row in dlrr} == {"200"}  # compound SR + XR
    lrr = [int(row[2]) for row in dlrr]
    assert all(x > 0 for x in lrr) and len(set(lrr)) == len(lrr)
    assert all(0 <= int(row[3]) < 65536 for row in dlrr)


def pion_ccfb_reports(path: Path) -> list[dict[str, int]]:
    """Every RFC 8888 per-packet report in a capture, decoded by Pion's RTCP library."""
    go = shutil.which("go")
    assert go, "Go is needed to decode RFC 8888 with Pion (tests/interop/pion-ccfb)"
    out = subprocess.run([go, "run", ".", str(path)], cwd=PION_CCFB, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


@pytest.mark.parametrize("controller", ["nada", "scream"])
def test_rfc8888_feedback_decodes_with_an_independent_parser(controller: str, tmp_path: Path) -> None:
    """Debian 12's tshark has no RFC 8888 dissector, so Pion's decoder reads the CCFB packets
    instead. Every report must agree with the trace: a packet reported received arrived at
    report time − ATO (to the 1/1024 s of RFC 8888 §3.1), one reported lost had not arrived,
    and the report timestamps advance with the capture's clock."""
    cap = tmp_path / "call.pcap"
    (r,) = rtcbench.run(
        "seed001-sudden-reduction", controller, 1, figure=False, pcap=cap, sets=["duration=8s"]
    )
    reports = pion_ccfb_reports(cap)
    video_ssrc = max({row["media_ssrc"] for row in reports}, key=[row["media_ssrc"] for row in reports].count)
    video = [row for row in reports if row["media_ssrc"] == video_ssrc]
    assert len(video) > 300

    (flow,) = [f["id"] for f in r.summary["meta"]["flows"] if f["kind"] == "video"]
    received = r.tables.packets.filter(
        (pl.col("event") == "received") & (pl.col("flow") == flow) & (pl.col("kind") == "media")
    )
    arrival = dict(zip(received["seq"].to_list(), received["t_us"].to_list(), strict=True))
    tick_us = 1e6 / 1024
    for row in video:
        report_t = row["t_us"] - CAPTURE_EPOCH_US
        if row["received"]:
            assert abs(report_t - row["ato"] * tick_us - arrival[row["seq"]]) <= tick_us, row
        else:
            assert arrival.get(row["seq"], report_t + 1) > report_t, row
        assert row["ecn"] == 0  # the network does not mark yet: Not-ECT
    assert any(not row["received"] for row in video)  # the capacity drop loses packets

    first = video[0]
    for row in video[1:]:
        rts_s = ((row["report_timestamp"] - first["report_timestamp"]) % 2**32) / 65536
        assert abs(rts_s - (row["t_us"] - first["t_us"]) / 1e6) <= 2 / 65536


def test_cross_traffic_is_captured_with_real_tcp_headers(tmp_path: Path) -> None:
    """RFC 8867 §5.6 (NewReno, 8 s) and §5.1 under UDP background: TCP segments and ACKs dissect
    as TCP with good checksums and SACK blocks, CBR as plain UDP, media as RTP/RTCP; every sent
    packet is in the capture, none is malformed."""
    tcp_cap, udp_cap = tmp_path / "tcp.pcap", tmp_path / "udp.pcap"
    (r,) = rtcbench.run(
        "rfc8867-5.6",
        "gcc",
        1,
        figure=False,
        pcap=tcp_cap,
        sets=["duration=8s", "queue=300ms", "tcp_cc=newreno"],
    )
    rows = tshark_fields(
        tcp_cap, "frame.protocols", "tcp.checksum.status", "_ws.malformed", "tcp.options.sack_le"
    )
    sent = r.tables.packets.filter(pl.col("event") == "sent")
    assert len(rows) == sent.height
    tcp = [row for row in rows if ":tcp" in row[0]]
    assert len(tcp) == sent.filter(pl.col("kind").is_in(["tcp", "tcp_ack"])).height > 1000
    assert {row[1] for row in tcp} == {"1"}, "every TCP checksum is good"
    assert not any(row[2] for row in rows)
    assert any(row[3] for row in tcp), "SACK blocks decode"
    assert all(p.endswith((":rtp", ":rtcp", ":tcp", ":tcp:data")) for p in (row[0] for row in rows))

    (u, *_) = rtcbench.run(
        "rfc8867-5.1",
        "gcc",
        1,
        figure=False,
        pcap=udp_cap,
        sets=["duration=5s", "delay=50ms", "mechanism=udp-background"],
    )
    rows = tshark_fields(udp_cap, "frame.protocols", "udp.srcport", "udp.checksum.status")
    cbr = [row for row in rows if row[1] == "9"]
    assert (
        len(cbr)
        == u.tables.packets.filter((pl.col("event") == "sent") & (pl.col("kind") == "cbr")).height
        > 1000
    )
    assert {row[0] for row in cbr} == {"raw:ip:udp:data"} and {row[2] for row in cbr} == {"1"}


def test_the_ecn_field_of_ect_media_is_in_the_capture(tmp_path: Path) -> None:
    """RFC 8867 §6.2: media sent ECT(0) shows ECN = 2 in the IPv4 header; RTCP stays Not-ECT."""
    cap = tmp_path / "ecn.pcap"
    rtcbench.run("rfc8867-6.2", "nada", 1, figure=False, pcap=cap, sets=["duration=5s", "delay=50ms"])
    rows = tshark_fields(cap, "frame.protocols", "ip.dsfield.ecn")
    assert {row[1] for row in rows if row[0].endswith(":rtp")} == {"2"}
    assert {row[1] for row in rows if row[0].endswith(":rtcp")} == {"0"}


def test_prague_sends_ect1_and_its_acks_carry_the_ace_counter(tmp_path: Path) -> None:
    """RFC 9331 §4.1 and RFC 9768 §3.2.2: a TCP Prague flow through a 1 ms step marker sends
    every data segment ECT(1) (the capture is taken as packets are sent, before any mark), and its
    receiver's ACKs carry the CE count modulo 8 in AE, CWR and ECE (the ACE field), from 5, which
    adds up to the marks the trace counts. tshark 4.0 decodes the three flags but names
    them ACE only after an AccECN handshake, which the simulator does not send, so the test reads
    the flags."""
    cap = tmp_path / "prague.pcap"
    (r,) = rtcbench.run(
        "rfc8867-5.6",
        "gcc",
        1,
        figure=False,
        pcap=cap,
        sets=["duration=8s", "queue=300ms", "tcp_cc=prague", "links.forward.queue.kind=step"],
    )
    rows = tshark_fields(
        cap,
        "frame.protocols",
        "ip.dsfield.ecn",
        "tcp.len",
        "tcp.flags.ae",
        "tcp.flags.cwr",
        "tcp.flags.ece",
        "_ws.malformed",
    )
    data = [row for row in rows if ":tcp" in row[0] and row[2] not in ("", "0")]
    acks = [row for row in rows if ":tcp" in row[0] and row[2] == "0"]
    assert len(data) > 500 and len(acks) > 200
    assert {row[1] for row in data} == {"1"}, "every Prague segment ECT(1)"
    assert {row[1] for row in acks} == {"0"}, "ACKs are not ECN-capable"
    assert not any(row[6] for row in rows)
    aces = [4 * int(row[3]) + 2 * int(row[4]) + int(row[5]) for row in acks]
    assert set(aces) == set(range(8)), sorted(set(aces))
    # Each ACK reports at most two new marks (the receiver ACKs every second one), and the marks
    # reported from r.cep's start at 5 add up to the CE-marked segments the trace says arrived
    # (less at most one not yet acknowledged, and any that arrived as the run ended).
    steps = [(b - a) % 8 for a, b in itertools.pairwise(aces)]
    assert set(steps) <= {0, 1, 2}, sorted(set(steps))
    reported = (aces[0] - 5) % 8 + sum(steps)
    received = r.tables.packets.filter((pl.col("event") == "received") & (pl.col("kind") == "tcp"))
    ce = received.filter(pl.col("ecn") == "ce").height
    assert ce > 100 and ce - 2 <= reported <= ce, (reported, ce)
