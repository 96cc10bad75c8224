"""Chromium's L4S mode in browser runs (docs/browser.md, "Chromium's L4S mode"): `--cc scream2`
runs libwebrtc's ScreamV2 with RFC 8888 feedback (`--browser-l4s` picks libwebrtc's other modes),
keyed apart from GoogCC's runs and refused with Firefox peers.

As root with Chromium installed: a 20 s call through a 1 Mbit/s DualPI2 bottleneck leaves
Chromium ECT(1) in every media packet, the bottleneck marks some CE, and the packets, feedback and
stats tables count them as Chromium's own statistics do.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from tests.realtime import assert_valid

import rtcbench
from rtcbench import runner, testbed
from rtcbench.browser import devtools
from rtcbench.browser import run as browser_run
from rtcbench.browser.choice import CCFB_TRIAL, SCREAM_TRIAL, Browsers, l4s_trials
from rtcbench.browser.sdp import feedback_of
from rtcbench.emulation.run import planned_meta
from rtcbench.results import InputError
from rtcbench.scenarios import resolve

MISSING = testbed.missing() or (None if devtools.chromium() else "chromium is not installed (make chromium)")
needs_testbed = pytest.mark.skipif(MISSING is not None, reason=f"runs browsers in namespaces: {MISSING}")

DUALPI2 = """
id = "browser-l4s"
duration = "{duration}"

[[links]]
name = "ab"
from = "A"
to = "B"
capacity = "1Mbps"
delay = "25ms"
queue = {{ kind = "dualpi2", size = "300ms" }}
{bleach}

[[links]]
name = "ba"
from = "B"
to = "A"
delay = "25ms"

[[calls]]
from = "A"
to = "B"
video = {{ camera = "640x360", start = "300kbps", max = "2.5Mbps" }}
audio = {{ enabled = false }}
{ecn}
"""


def _scenario(tmp_path: Path, *, duration: str = "20s", bleach: bool = False, ecn: str | None = None) -> Path:
    path = tmp_path / "l4s.toml"
    path.write_text(
        DUALPI2.format(
            duration=duration,
            bleach="bleach_ecn = true" if bleach else "",
            ecn=f'ecn = "{ecn}"' if ecn else "",
        )
    )
    return path


def test_scream2_is_chromiums_l4s_mode_and_keys_the_run_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `--cc scream2` forces the two trials with mode `always`; `only_after_ce` is its other mode
    # and `goog_cc_with_ect1` GoogCC's (in a Chromium that has them: after 156). Each is another
    # run: another folder, named in the identity.
    monkeypatch.setattr(devtools, "chromium_version", lambda: "157.0.1.2")
    (variant,) = resolve(str(_scenario(tmp_path)), [])
    scream = Browsers().for_controller("scream2")
    assert scream.l4s == "always" and scream.controller == "scream2"
    assert (
        scream.forced_trials
        == l4s_trials("always")
        == (f"{CCFB_TRIAL}/Enabled,offer:true/{SCREAM_TRIAL}/mode:always/")
    )
    assert Browsers().for_controller("gcc").forced_trials == ""
    extra = Browsers(field_trials="WebRTC-Foo/On/", l4s="only_after_ce").for_controller("scream2")
    assert extra.forced_trials == l4s_trials("only_after_ce") + "WebRTC-Foo/On/"
    folders = {
        runner.run_folder(tmp_path, variant, "gcc", 1, "browser"),
        runner.run_folder(tmp_path, variant, "scream2", 1, "browser"),
        runner.run_folder(tmp_path, variant, "scream2", 1, "browser", Browsers(l4s="only_after_ce")),
        runner.run_folder(tmp_path, variant, "gcc", 1, "browser", Browsers(l4s="goog_cc_with_ect1")),
        runner.run_folder(tmp_path, variant, "scream2", 1),  # rtcbench's own, simulated
    }
    assert len(folders) == 5
    # `--cc scream2` and `--cc scream2 --browser-l4s always` are one run.
    assert runner.run_folder(tmp_path, variant, "scream2", 1, "browser") == runner.run_folder(
        tmp_path, variant, "scream2", 1, "browser", Browsers(l4s="always")
    )
    identity = runner._identity(variant, "scream2", "browser")
    assert identity["l4s"] == "always" and identity["field_trials"] == l4s_trials("always")
    assert "l4s" not in runner._identity(variant, "gcc", "browser")
    with pytest.raises(InputError, match="Firefox ESR has no setting that turns it on"):
        Browsers.parse("A=firefox").for_controller("scream2")
    with pytest.raises(InputError, match="applies to --mode browser, not --mode simulate"):
        rtcbench.run(_scenario(tmp_path), "scream2", out=tmp_path / "out", browser_l4s="always")


def test_chromium_156_has_scream2s_always_mode_only(monkeypatch: pytest.MonkeyPatch) -> None:
    # Chromium 156's libwebrtc knows `Enabled` and `mode:always`; the other two modes are not in
    # its binary and ran GoogCC without ECT(1) (docs/findings/2026-11-29-chromium-l4s.md).
    monkeypatch.setattr(devtools, "chromium_version", lambda: "156.0.8078.108")
    assert Browsers().for_controller("scream2").l4s == "always"
    for mode, cc in (("only_after_ce", "scream2"), ("goog_cc_with_ect1", "gcc")):
        with pytest.raises(InputError) as e:
            Browsers(l4s=mode).for_controller(cc)
        assert str(e.value) == (
            f"--browser-l4s {mode}: Chromium 156.0.8078.108's libwebrtc has no such mode, only ScreamV2's "
            "always (--cc scream2); forced anyway, it runs GoogCC without ECT(1)"
        )


def test_a_call_says_ect1_only_in_chromiums_l4s_mode(tmp_path: Path) -> None:
    # The scenario's `ecn` says what the sender marks: ECT(1) in the L4S mode (or left out), and
    # nothing else; outside it, no ECN at all. Refused with one line naming the field.
    for ecn, l4s, refused in [
        ("ect1", "always", None),
        (None, "goog_cc_with_ect1", None),
        ("ect1", "", "calls.0.ecn: Chromium sends no ECN-capable media but in its L4S mode"),
        ("ect0", "always", "calls.0.ecn: Chromium's L4S mode (always) sends every media packet ECT(1)"),
    ]:
        (variant,) = resolve(str(_scenario(tmp_path, ecn=ecn)), [])
        meta = planned_meta(variant, "scream2", 1)
        if refused is None:
            assert browser_run.connections(variant, meta, 1, l4s)
        else:
            with pytest.raises(browser_run.BrowserModeError) as e:
                browser_run.connections(variant, meta, 1, l4s)
            assert refused in str(e.value) and "\n" not in str(e.value)


def test_the_feedback_an_offer_and_answer_agree_on() -> None:
    # RFC 8888 §6: `ack ccfb` for `*` or a payload type (Chromium 156 writes one per payload
    # type), in both; else transport-cc if both have it.
    ccfb = "v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=rtcp-fb:* ack ccfb\r\na=rtcp-fb:96 transport-cc\r\n"
    twcc = "v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=rtcp-fb:96 transport-cc\r\na=rtcp-fb:96 nack\r\n"
    assert feedback_of(ccfb, ccfb) == "ccfb"
    assert feedback_of(ccfb, ccfb.replace("*", "96")) == "ccfb"
    assert feedback_of(ccfb, twcc) == feedback_of(twcc, twcc) == "transport-cc"
    assert feedback_of(twcc, "v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n") is None


@needs_testbed
def test_chromiums_scream2_sends_ect1_and_counts_the_marks_of_a_dualpi2_bottleneck(tmp_path: Path) -> None:
    # `--mode browser --cc scream2`: 20 s through 1 Mbit/s with DualPI2 (RFC 9332), 25 ms each
    # way. Chromium 156 sends every media packet ECT(1), the L queue marks some CE, and each is
    # counted on the wire (the relay's `ecn`), in the summary and by Chromium's own statistics.
    (run,) = rtcbench.run(_scenario(tmp_path), "scream2", out=tmp_path / "out", mode="browser")
    s = run.summary
    assert s["browser"]["failure"] is None, s["browser"]
    assert_valid(run)
    assert s["controller"] == "scream2" and s["identity"]["l4s"] == "always"
    assert s["browser"]["l4s"] == "always" and SCREAM_TRIAL in s["browser"]["field_trials"]
    # RFC 8888 feedback was negotiated (the descriptions are kept: SRTCP hides the reports).
    assert s["browser"]["calls"]["call0"]["feedback"] == "ccfb"
    described = json.loads((run.path / "browser" / browser_run.SDP_FILE).read_text())
    # Chromium 156 writes it per payload type, and its answer drops transport-cc.
    answer = described["call0"]["B"]["local"]
    assert "ack ccfb" in described["call0"]["A"]["local"] and "ack ccfb" in answer
    assert "transport-cc" not in answer
    t = run.tables
    video = next(f for f in s["flows"] if f["name"] == "call0.video")
    rtcp = next(f for f in s["flows"] if f["name"] == "call0.rtcp-rx")
    sent = t.packets.filter((pl.col("flow") == video["id"]) & (pl.col("event") == "sent"))
    # Every video packet left Chromium ECT(1) (media, RTX, padding).
    by_ecn = sent.group_by("ecn").len()
    assert sent.height > 1000 and sent.get_column("ecn").unique().to_list() == ["ect1"], by_ecn
    marked = t.packets.filter(
        (pl.col("flow") == video["id"]) & (pl.col("event") == "received") & (pl.col("ecn") == "ce")
    ).height
    assert video["ect1_packets_sent"] == sent.height and video["ce_packets_received"] == marked
    assert 0.01 < video["ce_ratio"] < 0.3, video["ce_ratio"]
    # The receiver's feedback is RFC 8888's, every 25-50 ms, itself sent ECT(1).
    ccfb = t.feedback.filter(pl.col("kind") == "ccfb")
    assert ccfb.height > 20 * 15, t.feedback.group_by("kind").len()
    feedback = t.packets.filter((pl.col("flow") == rtcp["id"]) & (pl.col("event") == "sent"))
    assert (feedback.get_column("ecn") == "ect1").mean() > 0.9  # type: ignore[operator]
    # Chromium's own counts agree with the wire: ECT(1) sent, CE received (its receiver's and, a
    # feedback later, its sender's view of it).
    last = t.stats.filter(pl.col("flow") == video["id"]).group_by("side").agg(pl.all().drop_nulls().last())
    tx = last.filter(pl.col("side") == "sender").row(0, named=True)
    rx = last.filter(pl.col("side") == "receiver").row(0, named=True)
    assert 0.9 * sent.height <= tx["packets_sent_with_ect1"] <= sent.height, (tx, sent.height)
    assert 0.8 * marked <= rx["packets_received_with_ce"] <= marked, (rx, marked)
    assert 0 < tx["remote_packets_received_with_ce"] <= rx["packets_received_with_ce"], tx
    assert tx["remote_packets_bleached_ect1"] == 0 and tx["ccfb_messages_received"] > 300, tx
