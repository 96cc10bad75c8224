"""Bad input, as a table: every case runs the real command line (`rtcbench.cli.main`, in this
process) and must end with the expected status and one line on stderr that names the file, the
field or the option, and says what is allowed; never a traceback, and nothing half-written.

A case is (id, files to create, arguments, status, what the line must say). Scenario files are
made from MINIMAL by replacing its lines; `{tmp}` in files and arguments is the test's folder.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import rtcbench
from rtcbench import cli as rtcbench_cli
from rtcbench.cli import run as run_command
from rtcbench.results import SUMMARY

MINIMAL = """id = "minimal"
duration = "10s"

[[links]]
name = "forward"
from = "A"
to = "B"
delay = "20ms"
capacity = "1Mbps"
queue = { size = "100ms" }

[[links]]
name = "backward"
from = "B"
to = "A"
delay = "20ms"

[[calls]]
name = "c"
from = "A"
to = "B"
video = { min = "150kbps", max = "1Mbps", start = "300kbps" }
"""


def scenario(*edits: tuple[str, str], append: str = "") -> str:
    """MINIMAL with each (old, new) replaced, once, and `append` added."""
    text = MINIMAL
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text + append


CONFERENCE = '\n[[conferences]]\ntopology = "mesh"\nparticipants = ["A", "B"]\n'
TCP = '\n[[tcp]]\nname = "t"\nfrom = "A"\nto = "B"\n'
CBR = '\n[[cbr]]\nname = "u"\nfrom = "A"\nto = "B"\nrate = "100kbps"\n'
WITH_QUEUE = ('queue = { size = "100ms" }', 'queue = { size = "{size}" }')


def run(*extra: str) -> list[str]:
    return ["run", "{tmp}/s.toml", "--no-figure", "--out", "{tmp}/out", *extra]


def queue(size: str) -> str:
    return scenario(('queue = { size = "100ms" }', f'queue = {{ size = "{size}" }}'))


def trace(file: str) -> str:
    return scenario(('capacity = "1Mbps"', f'capacity_trace = {{ file = "{file}" }}'))


# (id, files, args, status, needles)
Case = tuple[str, dict[str, str | bytes], list[str], int, list[str]]

CASES: list[Case] = [
    # --- the scenario id names a results folder ------------------------------------------------
    ("id-parent", {"s.toml": scenario(('"minimal"', '"../../x"'))}, run(), 2, ["s.toml:1: id:", "'/'"]),
    ("id-absolute", {"s.toml": scenario(('"minimal"', '"/abs/path"'))}, run(), 2, ["s.toml:1: id:", "'/'"]),
    ("id-empty", {"s.toml": scenario(('"minimal"', '""'))}, run(), 2, ["id: must not be empty"]),
    ("id-nul", {"s.toml": scenario(('"minimal"', '"a\\u0000b"'))}, run(), 2, ["id:", "has '\\0'"]),
    ("id-hidden", {"s.toml": scenario(('"minimal"', '".x"'))}, run(), 2, ["id:", "starts with '.'"]),
    ("id-long", {"s.toml": scenario(('"minimal"', '"' + "x" * 101 + '"'))}, run(), 2, ["at most 100"]),
    ("id-set", {"s.toml": MINIMAL}, run("--set", "id=../x"), 2, ["--set id=../x: id:", "'/'"]),
    ("id-set-space", {"s.toml": MINIMAL}, run("--set", "id=a b"), 2, ["--set id=a b", "' '"]),
    # --- durations, rates, delays, queues --------------------------------------------------------
    ("duration-zero", {"s.toml": scenario(('"10s"', '"0s"'))}, run(), 2, ["s.toml:2: duration: must be positive"]),
    ("duration-huge", {"s.toml": scenario(('"10s"', '"1000000000s"'))}, run(), 2, ["duration:", "out of range"]),
    ("duration-set", {"s.toml": MINIMAL}, run("--set", "duration=1e9s"), 2, ["--set duration=1e9s: duration:"]),
    ("delay-huge", {"s.toml": scenario(('delay = "20ms"', 'delay = "1e12s"'))}, run(), 2,
     ["s.toml:8: links.forward.delay:", "out of range (allowed: 0 ms to 60 s)"]),
    ("capacity-huge", {"s.toml": scenario(('"1Mbps"', '"1e30Mbps"'))}, run(), 2,
     ["s.toml:9: links.forward.capacity:", "out of range"]),
    ("capacity-below-resolution", {"s.toml": scenario(('"1Mbps"', '"0.5bps"'))}, run(), 2,
     ["s.toml:9: links[0].capacity:", "0, or at least 1 bps"]),
    ("capacity-zero", {"s.toml": scenario(('"1Mbps"', '"0Mbps"'))}, run(), 2, ["links.forward.capacity:", "out of range"]),
    ("queue-zero-time", {"s.toml": queue("0ms")}, run(), 2, ["s.toml:10: links.forward.queue.size:", "out of range"]),
    ("queue-zero-bytes", {"s.toml": queue("0B")}, run(), 2, ["links.forward.queue.size:", "1500 B"]),
    ("queue-huge", {"s.toml": queue("2min")}, run(), 2, ["links.forward.queue.size:", "60 s"]),
    ("queue-missing", {"s.toml": scenario(('queue = { size = "100ms" }\n', ""))}, run(), 2,
     ["links.forward.queue:", "needs a queue size", '"unlimited"']),
    ("queue-words", {"s.toml": queue("big")}, run(), 2, ["s.toml:10: links[0].queue.size:", '"unlimited"']),
    ("aqm-zero-target", {"s.toml": scenario(('{ size = "100ms" }', '{ kind = "codel", size = "100ms", target = "0ms" }'))},
     run(), 2, ["links.forward.queue.target:", "out of range"]),
    ("ecn-codepoint-unknown",
     {"s.toml": scenario(('name = "c"', 'name = "c"\necn = "ect2"'))},
     run(), 2, ["s.toml:20: calls[0].ecn:", "unknown variant `ect2`", "`not-ect`, `ect0`, `ect1`"]),
    ("bleach-not-a-boolean",
     {"s.toml": scenario(('queue = { size = "100ms" }', 'queue = { size = "100ms" }\nbleach_ecn = "yes"'))},
     run(), 2, ["s.toml:11: links[0].bleach_ecn:", "expected a boolean"]),
    ("dualpi2-coupling-zero",
     {"s.toml": scenario(('{ size = "100ms" }', '{ kind = "dualpi2", size = "100ms", coupling = 0 }'))},
     run(), 2, ["s.toml:10: links.forward.queue.coupling:", "out of range (allowed: 1 to 255)"]),
    ("jitter-huge", {"s.toml": scenario(('delay = "20ms"', 'delay = "20ms"\njitter = { std = "20s" }'))}, run(), 2,
     ["links.forward.jitter.std:", "out of range"]),
    ("jitter-n-zero", {"s.toml": scenario(('delay = "20ms"', 'delay = "20ms"\njitter = { std = "5ms", n_std = 0 }'))},
     run(), 2, ["links.forward.jitter.n_std:", "out of range"]),
    ("loss-above-one", {"s.toml": scenario(('delay = "20ms"', 'delay = "20ms"\nloss = { model = "bernoulli", rate = 1.5 }'))},
     run(), 2, ["links.forward.loss.rate:", "0 to 1"]),
    ("schedule-late-start",
     {"s.toml": scenario(('capacity = "1Mbps"', 'schedule = [{ at = "3s", capacity = "1Mbps" }]'))}, run(), 2,
     ["links.forward.schedule[0].at:", "starts at 0s"]),
    ("schedule-unordered",
     {"s.toml": scenario(('capacity = "1Mbps"',
                          'schedule = [{ at = "0s", capacity = "1Mbps" }, { at = "5s", capacity = "1Mbps" },\n'
                          '  { at = "2s", capacity = "2Mbps" }]'))}, run(), 2,
     ["links.forward.schedule[2]: steps must be in increasing `at` order"]),
    ("schedule-ratio",
     {"s.toml": scenario(('capacity = "1Mbps"',
                          'reference_capacity = "1Mbps"\nschedule = [{ at = "0s", ratio = 5000.0 }]'))}, run(), 2,
     ["links.forward.schedule[0].ratio:", "0 to 1000"]),
    ("variants-too-many",
     {"s.toml": scenario(('delay = "20ms"\ncapacity', 'delay = "$d"\ncapacity'),
                         append="".join(f'[[cbr]]\nname = "u{k}"\nfrom = "A"\nto = "B"\nrate = "$r{k}"\n' for k in range(2))
                         + "[variants]\nd = [" + ", ".join(f'"{i}ms"' for i in range(101)) + "]\n"
                         + "".join(f"r{k} = [" + ", ".join(f'"{i + 1}kbps"' for i in range(10)) + "]\n" for k in range(2)))},
     run(), 2, ["variants:", "101 × 10 × 10 values", "more than 10000 variants"]),
    ("unit-typo", {"s.toml": scenario(('"1Mbps"', '"1 Mbit"'))}, run(), 2, ["s.toml:9: links[0].capacity:", "kbps"]),
    ("field-typo", {"s.toml": scenario(('capacity =', 'capacty ='))}, run(), 2, ["unknown field `capacty`"]),
    ("toml-syntax", {"s.toml": MINIMAL + "\n[[links]\n"}, run(), 2, ["s.toml:24:", "expected `]`"]),
    ("not-utf8", {"s.toml": b'id = "x\xff"\n'}, run(), 2, ["s.toml:1: not UTF-8 text"]),
    ("scenario-folder", {"s.toml/a": "x"}, run(), 2, ["no built-in scenario or file named"]),
    ("scenario-missing", {}, run(), 2, ["no built-in scenario or file named", "built-in: rfc8867-5.1"]),
    # --- calls, TCP, CBR ---------------------------------------------------------------------------
    ("call-late", {"s.toml": scenario(('from = "A"\nto = "B"\nvideo', 'from = "A"\nto = "B"\nstart = "10s"\nvideo'))},
     run(), 2, ["calls.0.start:", "not before the end of the run"]),
    ("call-late-set", {"s.toml": MINIMAL}, run("--set", "duration=1s", "--set", "calls.0.start=2s"), 2,
     ["--set calls.0.start=2s: calls.0.start:"]),
    ("tcp-late", {"s.toml": MINIMAL + TCP + 'start = "20s"\n'}, run(), 2, ["tcp.0.start:", "would never start"]),
    ("tcp-cc-unknown", {"s.toml": MINIMAL + TCP + 'cc = "vegas"\n'}, run(), 2,
     ["s.toml:", "tcp", "cc", "newreno", "cubic", "prague", "bbr"]),
    ("tcp-prague-without-ecn", {"s.toml": MINIMAL + TCP + 'cc = "prague"\necn = false\n'}, run(), 2,
     ["tcp.0.ecn:", "prague always sends ECT(1)"]),
    ("tcp-bbr-with-ecn", {"s.toml": MINIMAL + TCP + 'cc = "bbr"\necn = true\n'}, run(), 2,
     ["tcp.0.ecn:", "bbr (v1, as Linux's tcp_bbr) does not respond to ECN"]),
    ("cbr-late", {"s.toml": MINIMAL + CBR + 'start = "10s"\n'}, run(), 2, ["cbr.0.start:", "would never start"]),
    ("video-start-above-max", {"s.toml": scenario(('start = "300kbps"', 'start = "5Mbps"'))}, run(), 2,
     ["calls.0.video.start:", "above max"]),
    ("video-start-above-max-set", {"s.toml": MINIMAL}, run("--set", "calls.0.video.start=10Mbps"), 2,
     ["--set calls.0.video.start=10Mbps: calls.0.video.start:", "above max"]),
    ("video-min-above-max", {"s.toml": scenario(('min = "150kbps"', 'min = "2Mbps"'))}, run(), 2,
     ["calls.0.video.max:", "below min"]),
    ("video-fps-zero", {"s.toml": scenario(('start = "300kbps"', 'start = "300kbps", fps = 0'))}, run(), 2,
     ["calls.0.video.fps: must be in (0, 240]"]),
    ("audio-interval-zero", {"s.toml": MINIMAL + 'audio = { packet_interval = "0ms" }\n'}, run(), 2,
     ["calls.0.audio.packet_interval:", "out of range (allowed: 1 ms"]),
    ("audio-rate-huge", {"s.toml": MINIMAL + 'audio = { rate = "100Mbps" }\n'}, run(), 2, ["calls.0.audio.rate:"]),
    # 10 Mbit/s a second apart sent 1.25 MB "packets" (issue "Hardening II").
    ("audio-over-a-datagram", {"s.toml": MINIMAL + 'audio = { rate = "10Mbps", packet_interval = "1s" }\n'}, run(), 2,
     ["s.toml:23: calls.0.audio.rate:", "1250000 bytes a packet", "at most 1448"]),
    # 9 MiB of comment: refused before it is read or parsed (loading takes ~47x the text).
    ("scenario-too-large", {"s.toml": MINIMAL + "#" + "x" * (9 << 20) + "\n"}, run(), 2,
     ["s.toml: 9437495 bytes; a scenario is at most 8 MiB"]),
    ("twcc-zero", {"s.toml": MINIMAL + 'feedback = { twcc_interval = "0ms" }\n'}, run(), 2,
     ["calls.0.feedback.twcc_interval:", "out of range"]),
    ("report-zero", {"s.toml": MINIMAL + 'feedback = { report_interval = "0us" }\n'}, run(), 2,
     ["calls.0.feedback.report_interval:"]),
    ("tcp-count-huge", {"s.toml": MINIMAL + TCP + "count = 100000\n"}, run(), 2, ["tcp:", "at most 1000"]),
    ("tcp-count-zero", {"s.toml": MINIMAL + TCP + "count = 0\n"}, run(), 2, ["tcp.0.count: must be at least 1"]),
    ("cbr-rate-huge", {"s.toml": MINIMAL + CBR.replace('"100kbps"', '"1e30Mbps"')}, run(), 2, ["cbr.0.rate:", "out of range"]),
    ("calls-same-name", {"s.toml": MINIMAL + '\n[[calls]]\nname = "c"\nfrom = "A"\nto = "B"\n'}, run(), 2,
     ["calls.1.name:", '"c.video"', "flow names must differ"]),
    ("call-and-tcp-same-name", {"s.toml": MINIMAL + TCP.replace('"t"', '"c.audio"')}, run(), 2,
     ["tcp.0.name:", '"c.audio"']),
    ("links-same-name", {"s.toml": MINIMAL.replace('name = "backward"', 'name = "forward"')}, run(), 2,
     ["links.forward.name:", "used twice"]),
    ("call-unknown-node", {"s.toml": scenario(('from = "A"\nto = "B"\nvideo', 'from = "A"\nto = "Z"\nvideo'))}, run(), 2,
     ["calls.0.to:", "is not a node: no link, BSS or cell has it"]),
    ("call-no-way-back",
     {"s.toml": MINIMAL.replace('name = "backward"\nfrom = "B"\nto = "A"', 'name = "backward"\nfrom = "B"\nto = "C"')},
     run(), 2, ["calls.0.from:", "no links lead from \"B\" to \"A\" (the feedback)"]),
    ("call-via-unknown-node", {"s.toml": scenario(('to = "B"\nvideo', 'to = "B"\nvia = "Z"\nvideo'))}, run(), 2,
     ["s.toml:22: calls.0.via:", 'node "Z" is not a node: no link, BSS or cell has it']),
    ("call-via-an-end", {"s.toml": scenario(('to = "B"\nvideo', 'to = "B"\nvia = "A"\nvideo'))}, run(), 2,
     ["calls.0.via:", "other than the call's ends"]),
    ("conference-topology", {"s.toml": MINIMAL + CONFERENCE.replace('"mesh"', '"star"')}, run(), 2,
     ["conferences[0].topology:", "`mesh`, `one-to-many`, `sfu`"]),
    ("conference-no-source", {"s.toml": MINIMAL + CONFERENCE.replace('"mesh"', '"one-to-many"')}, run(), 2,
     ["conferences.0.source:", "needs it"]),
    ("conference-sfu-participant",
     {"s.toml": MINIMAL + CONFERENCE.replace('"mesh"', '"sfu"\nsfu = "A"')}, run(), 2,
     ["conferences.0.sfu:", '"A" is a participant']),
    ("conference-call-end", {"s.toml": MINIMAL + CONFERENCE + 'call = { to = "B" }\n'}, run(), 2,
     ["conferences[0].call:", "`to` is not a setting of a conference's streams"]),
    ("conference-set-max", {"s.toml": MINIMAL + CONFERENCE}, run("--set", "conferences.0.call.video.max=fast"), 2,
     ["--set conferences.0.call.video.max=fast:", "fast"]),
    # --- capacity traces ---------------------------------------------------------------------------
    ("trace-missing", {"s.toml": trace("nope.csv")}, run(), 2, ["links.forward.capacity_trace.file", "nope.csv"]),
    ("trace-tiny-segments",
     {"s.toml": trace("t.json"), "t.json": '{"uplink": {"trace_pattern": [{"duration": 0.5, "capacity": 500}]}}'},
     run(), 2, ["t.json: uplink.trace_pattern[0].duration:", "1 ms or more"]),
    ("trace-csv-close-steps", {"s.toml": trace("t.csv"), "t.csv": "time_s,rate_kbps\n0,500\n0.0005,600\n"},
     run(), 2, ["t.csv:3:", "at least 1 ms apart"]),
    ("trace-mahimahi-back", {"s.toml": trace("t.up"), "t.up": "1\n5\n4\n"}, run(), 2, ["t.up:3:", "must not decrease"]),
    ("trace-not-utf8", {"s.toml": trace("t.csv"), "t.csv": b"time_s,rate_kbps\n0,5\xff\n"}, run(), 2,
     ["cannot read the trace", "t.csv"]),
    # --- --set -------------------------------------------------------------------------------------
    ("set-no-equals", {"s.toml": MINIMAL}, run("--set", "delay"), 2, ["--set delay:", "path=value"]),
    ("set-unknown-element", {"s.toml": MINIMAL}, run("--set", "links.nope.delay=1ms"), 2,
     ["--set links.nope.delay=1ms:", "by name: [\"forward\", \"backward\"]"]),
    ("set-bad-value", {"s.toml": MINIMAL}, run("--set", "links.forward.delay=fast"), 2,
     ["--set links.forward.delay=fast:", "fast"]),
    ("set-duration-zero", {"s.toml": MINIMAL}, run("--set", "duration=0s"), 2, ["--set duration=0s: duration: must be positive"]),
    ("set-newline", {"s.toml": MINIMAL}, run("--set", "duration=1s\nx"), 2, ["--set duration=1s\\nx: duration:"]),
    # --- options -----------------------------------------------------------------------------------
    ("seed-negative", {"s.toml": MINIMAL}, run("--seed", "-1"), 2, ["--seed must be an integer from 0 to 2**64 - 1"]),
    ("seed-float", {"s.toml": MINIMAL}, run("--seed", "1e20"), 2, ["'--seed'", "(see rtcbench run --help)"]),
    ("seed-too-big", {"s.toml": MINIMAL}, run("--seed", str(2**64)), 2, ["--seed must be an integer from 0"]),
    ("unknown-option", {"s.toml": MINIMAL}, run("--frobnicate"), 2, ["--frobnicate"]),
    ("cc-unknown", {"s.toml": MINIMAL}, run("--cc", "bbr"), 2, ["unknown controller 'bbr'", "allowed: gcc"]),
    ("cc-missing-file", {"s.toml": MINIMAL}, run("--cc", "{tmp}/nope.py:C"), 2, ["no file"]),
    ("out-is-a-file", {"s.toml": MINIMAL, "file": "x"}, ["run", "{tmp}/s.toml", "--out", "{tmp}/file"], 2,
     ["{tmp}/file", "Not a directory"]),
    ("out-read-only", {"s.toml": MINIMAL}, ["run", "{tmp}/s.toml", "--no-figure", "--out", "/sys/rtcbench-test"], 2,
     ["/sys/rtcbench-test"]),
    ("pcap-no-folder", {"s.toml": MINIMAL}, run("--pcap", "{tmp}/nowhere/c.pcap"), 2,
     ["cannot write the capture", "nowhere/c.pcap"]),
    # Chromium's L4S mode (docs/browser.md): refused before any browser or namespace starts.
    ("l4s-unknown-mode", {"s.toml": MINIMAL}, run("--mode", "browser", "--browser-l4s", "sometimes"), 2,
     ["--browser-l4s must be one of always, only_after_ce, goog_cc_with_ect1; got 'sometimes'"]),
    ("l4s-mode-of-scream2-with-gcc", {"s.toml": MINIMAL}, run("--mode", "browser", "--browser-l4s", "always"), 2,
     ["--browser-l4s always runs under --cc scream2; with --cc gcc it is one of goog_cc_with_ect1"]),
    ("l4s-mode-of-gcc-with-scream2", {"s.toml": MINIMAL},
     run("--mode", "browser", "--cc", "scream2", "--browser-l4s", "goog_cc_with_ect1"), 2,
     ["--browser-l4s goog_cc_with_ect1 runs under --cc gcc; with --cc scream2 it is one of always, only_after_ce"]),
    ("l4s-scream2-with-firefox", {"s.toml": MINIMAL}, run("--mode", "browser", "--cc", "scream2", "--browser", "firefox"),
     2, ["--cc scream2 is Chromium's L4S mode", "Firefox ESR has no setting that turns it on", "--browser must be chromium"]),
    ("l4s-mode-with-a-firefox-peer", {"s.toml": MINIMAL},
     run("--mode", "browser", "--browser-l4s", "goog_cc_with_ect1", "--browser", "B=firefox"), 2,
     ["--browser-l4s goog_cc_with_ect1 is Chromium's L4S mode", "chromium,B=firefox"]),
    ("l4s-mode-in-a-simulation", {"s.toml": MINIMAL}, run("--browser-l4s", "always"), 2,
     ["--browser-l4s sets Chromium's L4S mode: it applies to --mode browser, not --mode simulate"]),
    ("l4s-trial-by-hand", {"s.toml": MINIMAL},
     run("--mode", "browser", "--field-trials", "WebRTC-Bwe-ScreamV2/mode:always/"), 2,
     ["--field-trials sets WebRTC-Bwe-ScreamV2", "use --cc scream2 or --browser-l4s"]),
    ("scream2-without-rfc8888", {"s.toml": MINIMAL},
     run("--mode", "browser", "--cc", "scream2", "--field-trials", "WebRTC-RFC8888CongestionControlFeedback/Disabled/"),
     2, ["--field-trials sets WebRTC-RFC8888CongestionControlFeedback", "use --cc scream2 or --browser-l4s"]),
    ("browser-cc-other", {"s.toml": MINIMAL}, run("--mode", "browser", "--cc", "nada"), 2,
     ["--cc in a browser run is gcc or scream2", "not nada"]),
    ("suite-reps-zero", {}, ["suite", "rfc8867-5.1", "--reps", "0", "--out", "{tmp}/o"], 2, ["--reps must be from 1"]),
    ("suite-reps-huge", {}, ["suite", "rfc8867-5.1", "--reps", "100000", "--out", "{tmp}/o"], 2, ["--reps must be from 1 to 10,000"]),
    ("suite-jobs-zero", {}, ["suite", "rfc8867-5.1", "--jobs", "0", "--out", "{tmp}/o"], 2, ["--jobs must be at least 1"]),
    ("suite-seed-overflow", {}, ["suite", "rfc8867-5.1", "--seed", str(2**64 - 1), "--reps", "2", "--out", "{tmp}/o"], 2,
     ["the last repetition's seed"]),
    ("suite-unknown", {}, ["suite", "rfc9999", "--out", "{tmp}/o"], 2, ["no suite, built-in scenario or file named 'rfc9999'"]),
    ("table-unknown", {}, ["table", "rfc9999"], 2, ["no built-in scenario or file named 'rfc9999'"]),
    # --- sweeps ------------------------------------------------------------------------------------
    ("sweep-not-utf8", {"w.toml": b'scenarios = ["x\xfe"]\n'}, ["sweep", "{tmp}/w.toml", "--out", "{tmp}/o"], 2,
     ["w.toml:1: not UTF-8 text"]),
    ("sweep-same-controller", {"w.toml": 'scenarios = ["rfc8867-5.1"]\ncontrollers = ["gcc", "nada", "gcc"]\n'},
     ["sweep", "{tmp}/w.toml", "--out", "{tmp}/o"], 2, ["w.toml: controllers: 'gcc' listed twice"]),
    ("sweep-same-seed", {"w.toml": 'scenarios = ["rfc8867-5.1"]\nseeds = [1, 2, 1]\n'},
     ["sweep", "{tmp}/w.toml", "--out", "{tmp}/o"], 2, ["w.toml: seeds: 1 listed twice"]),
    ("sweep-negative-seed", {"w.toml": 'scenarios = ["rfc8867-5.1"]\nseeds = [-1]\n'},
     ["sweep", "{tmp}/w.toml", "--out", "{tmp}/o"], 2, ["seeds: -1 is not a seed"]),
    ("sweep-unknown-field", {"w.toml": 'scenarios = ["rfc8867-5.1"]\ngrids = {}\n'},
     ["sweep", "{tmp}/w.toml", "--out", "{tmp}/o"], 2, ["unknown field 'grids'"]),
    ("sweep-bad-point", {"w.toml": 'scenarios = ["rfc8867-5.1"]\n[grid]\n"links.forward.delay" = ["fast"]\n'},
     ["sweep", "{tmp}/w.toml", "--out", "{tmp}/o"], 2, ["w.toml: rfc8867-5.1", "fast"]),
    ("sweep-toml-syntax", {"w.toml": 'scenarios = ["rfc8867-5.1"]\n[grid\n'}, ["sweep", "{tmp}/w.toml", "--out", "{tmp}/o"],
     2, ["w.toml:2: Expected ']' at the end of a table declaration (column 6)"]),
    ("sweep-toml-open-array", {"w.toml": 'scenarios = ["rfc8867-5.1"]\nseeds = [1, 2\n'},
     ["sweep", "{tmp}/w.toml", "--out", "{tmp}/o"], 2, ["w.toml:2: Unclosed array (at the end of the file)"]),
    ("sweep-toml-deep-key", {"w.toml": 'scenarios = ["rfc8867-5.1"]\n' + "a." * 100_000 + "b = 1\n"},
     ["sweep", "{tmp}/w.toml", "--out", "{tmp}/o"], 2, ["w.toml:2: a dotted key of more than 64 parts"]),
    ("sweep-toml-deep-array", {"w.toml": 'scenarios = ["rfc8867-5.1"]\nseeds = ' + "[" * 100_000 + "]" * 100_000},
     ["sweep", "{tmp}/w.toml", "--out", "{tmp}/o"], 2, ["w.toml:2: arrays and inline tables nested more than 64"]),
    ("sweep-toml-deep-header", {"w.toml": "[" + "a." * 100_000 + "b]\n"},
     ["sweep", "{tmp}/w.toml", "--out", "{tmp}/o"], 2, ["w.toml:1: a dotted key of more than 64 parts"]),
    # --- the command line itself: bytes that are not UTF-8 (PEP 383 hands them over as surrogates)
    ("argv-set-not-utf8", {"s.toml": MINIMAL}, run("--set", "duration=5s\udcff"), 2,
     ["the value of --set, 'duration=5s\\xff', is not valid UTF-8 (byte 0xff)"]),
    ("argv-path-not-utf8", {}, ["run", "{tmp}/s\udcff.toml", "--out", "{tmp}/out"], 2,
     ["argument 2, '{tmp}/s\\xff.toml', is not valid UTF-8"]),
    ("argv-out-not-utf8", {"s.toml": MINIMAL}, ["run", "{tmp}/s.toml", "--out", "{tmp}/o\udcff"], 2,
     ["the value of --out, '{tmp}/o\\xff', is not valid UTF-8"]),
    ("argv-out-equals-not-utf8", {"s.toml": MINIMAL}, ["run", "{tmp}/s.toml", "--out={tmp}/o\udcfe"], 2,
     ["the value of --out, '{tmp}/o\\xfe'"]),
    ("argv-command-not-utf8", {}, ["r\udcffun"], 2, ["argument 1, 'r\\xffun', is not valid UTF-8"]),
    # --- reading results ---------------------------------------------------------------------------
    ("score-not-a-folder", {}, ["score", "{tmp}/nothing"], 2, ["{tmp}/nothing: not a folder"]),
    ("score-empty", {"empty/x": "x"}, ["score", "{tmp}/empty"], 2, ["no run folders"]),
    ("score-thresholds-deep", {"empty/x": "x", "t.toml": "a = " + "{b = " * 100_000 + "}" * 100_000},
     ["score", "{tmp}/empty", "--thresholds", "{tmp}/t.toml"], 2,
     ["t.toml:1: arrays and inline tables nested more than 64 levels deep"]),
    ("score-thresholds-not-utf8", {"empty/x": "x", "t.toml": b"\xff"}, ["score", "{tmp}/empty", "--thresholds", "{tmp}/t.toml"],
     2, ["t.toml:1: not UTF-8 text"]),
    ("compare-tolerance", {"empty/x": "x"}, ["compare", "{tmp}/empty", "--tolerance", "-1"], 2, ["--tolerance must be"]),
    ("compare-resamples", {"empty/x": "x"}, ["compare", "{tmp}/empty", "--resamples", "0"], 2, ["--resamples must be at least 1"]),
    ("report-run-figures", {"empty/x": "x"}, ["report", "{tmp}/empty", "--run-figures", "some"], 2, ["first, all or none"]),
    ("report-nothing", {"empty/x": "x"}, ["report", "{tmp}/empty"], 2,
     ["no run could be read under {tmp}/empty: {tmp}/empty: holds no run folder", "no report was written"]),
]  # fmt: skip


def main(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Runs the command line as `rtcbench ARGS` would, in this process."""
    saved_argv, saved_term = sys.argv, signal.getsignal(signal.SIGTERM)
    sys.argv = ["rtcbench", *args]
    try:
        rtcbench_cli.main()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.argv = saved_argv
        signal.signal(signal.SIGTERM, saved_term)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_table_has_sixty_cases_or_more() -> None:
    assert len(CASES) >= 60 and len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize(
    ("files", "args", "status", "needles"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_ends_with_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    files: dict[str, str | bytes],
    args: list[str],
    status: int,
    needles: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    before = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    code, _, err = main([a.replace("{tmp}", str(tmp_path)) for a in args], capsys)
    assert code == status, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"one line, got {len(lines)}:\n{err}"
    for needle in needles:
        assert needle.replace("{tmp}", str(tmp_path)) in err, f"{needle!r} not in {err!r}"
    # Nothing was written (an output folder may exist, empty, only where it was asked for).
    after = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    assert [p for p in after if p not in before and p not in ("out", "o")] == []


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(scenario(('"10s"', '"0s"')))
    for env, args in (({}, ["--debug"]), ({"RTCBENCH_DEBUG": "1"}, [])):
        out = subprocess.run(
            [sys.executable, "-m", "rtcbench.cli", *args, "run", str(tmp_path / "s.toml"), "--out", str(tmp_path)],
            capture_output=True, text=True, check=False, env={**os.environ, **env},
        )  # fmt: skip
        assert out.returncode != 0 and "Traceback" in out.stderr, out.stderr
        assert "duration: must be positive" in out.stderr


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    for seed in (1, 2):
        rtcbench.run("seed001-sudden-reduction", "gcc", seed, out=root, sets=["duration=5s"], figure=False)
    return root


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def _runs(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.rglob(SUMMARY))


@pytest.mark.parametrize(
    ("damage", "named"),
    [
        (lambda run: (run / SUMMARY).write_text('{"scenario": '), "not a complete summary"),
        (lambda run: (run / SUMMARY).write_text("[1, 2]"), "not a JSON object"),
        (lambda run: (run / SUMMARY).write_bytes(b"\xff\xfe"), "not a complete summary"),
        (lambda run: (run / "timeseries.parquet").write_bytes(b"PAR1"), "timeseries.parquet is 4 bytes"),
        (
            lambda run: (run / "packets.parquet").write_bytes((run / "packets.parquet").read_bytes()[:-100]),
            "packets.parquet is",
        ),
        (lambda run: (run / "frames.parquet").unlink(), "frames.parquet is missing"),
    ],
    ids=[
        "truncated-summary",
        "summary-not-object",
        "summary-not-utf8",
        "timeseries",
        "truncated-packets",
        "no-frames",
    ],
)
def test_score_compare_and_report_skip_a_corrupt_run_and_name_it(
    two_runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: object, named: str
) -> None:
    root = _copy(two_runs, tmp_path / "runs")
    broken = _runs(root)[1]
    damage(broken)  # type: ignore[operator]
    code, _, err = main(["score", str(root)], capsys)
    assert code == 0 and "Traceback" not in err
    assert f"skipped: {broken}" in err and named in err, err
    code, _, err = main(["report", str(root), "--jobs", "1", "--run-figures", "none"], capsys)
    assert code == 0 and "Traceback" not in err
    assert str(broken) in err and named in err, err


def test_a_summary_that_parses_but_lacks_what_it_needs_is_skipped(
    two_runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _copy(two_runs, tmp_path / "runs")
    broken = _runs(root)[0]
    summary = json.loads((broken / SUMMARY).read_text())
    summary["flows"] = "none"
    (broken / SUMMARY).write_text(json.dumps(summary))
    code, _, err = main(["score", str(root)], capsys)
    assert code == 0 and f"skipped: {broken / SUMMARY}: malformed" in err, err


def test_environment_problems_keep_their_traceback_out_but_bugs_do_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A bug (an exception no input explains) still shows where it happened.
    def broken(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(run_command, "run", broken)
    monkeypatch.setattr(run_command, "run_parallel", broken)
    (tmp_path / "s.toml").write_text(MINIMAL)
    with pytest.raises(ZeroDivisionError):
        main(["run", str(tmp_path / "s.toml")], capsys)


def test_a_full_disk_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from rtcbench import results

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / "out"))

    monkeypatch.setattr(results.TraceWriter, "write_piece", full)
    (tmp_path / "s.toml").write_text(MINIMAL)
    code, _, err = main(
        ["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "out"), "--no-figure"], capsys
    )
    assert code == 2 and err.strip().count("\n") == 0 and "No space left on device" in err, err
    assert not [p for p in (tmp_path / "out").rglob("*") if p.name.startswith(".")], (
        "no temporary folder left"
    )


@pytest.mark.parametrize("command", ["suite", "sweep"])
def test_a_full_disk_leaves_no_folder_behind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    import errno

    from rtcbench import results

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(results.TraceWriter, "write_piece", full)
    (tmp_path / "s.toml").write_text(MINIMAL)
    (tmp_path / "w.toml").write_text('scenarios = ["s.toml"]\ncontrollers = ["gcc", "fixed"]\n')
    what = (
        [str(tmp_path / "s.toml"), "--cc", "gcc,fixed"] if command == "suite" else [str(tmp_path / "w.toml")]
    )
    out = tmp_path / "new" / "out"
    code, _, err = main([command, *what, "--jobs", "1", "--out", str(out)], capsys)
    assert code == 2 and err.count("\n") == 1 and "No space left on device" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml", "w.toml"], (
        "folders made for the runs are removed"
    )


def _rehash(run: Path) -> None:
    """Records the run folder's files as they are now, as a hostile or careless tool would after
    changing one: the folder passes the size and SHA-256 check, only its contents are wrong."""
    from rtcbench.results import FILES_KEY, file_records

    summary = json.loads((run / SUMMARY).read_text())
    summary[FILES_KEY] = file_records(run)
    (run / SUMMARY).write_text(json.dumps(summary))


@pytest.mark.parametrize(
    ("swap", "named"),
    [
        (
            ("timeseries.parquet", "packets.parquet"),
            "timeseries.parquet: lacks column(s) flow_name, send_rate_bps",
        ),
        (("links.parquet", "frames.parquet"), "links.parquet: lacks column(s)"),
        (("frames.parquet", "controller.parquet"), "frames.parquet: lacks column(s)"),
    ],
    ids=["timeseries-is-packets", "links-is-frames", "frames-is-controller"],
)
def test_a_swapped_table_is_named_in_one_line_the_same_by_every_command(
    two_runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], swap: tuple[str, str], named: str
) -> None:
    # `reproduce --browser kept` on a run whose time series was swapped (and the folder's hashes
    # recomputed) ended in polars' ColumnNotFoundError; the report named the run in ten lines.
    import shutil

    root = _copy(two_runs, tmp_path / "runs")
    broken = _runs(root)[1]
    shutil.copyfile(broken / swap[1], broken / swap[0])
    _rehash(broken)
    line = f"{broken / swap[0]}: "
    # The reader every command uses (`reproduce` measures kept runs through it).
    with pytest.raises(rtcbench.results.InputError) as e:
        run = rtcbench.RunResult(broken, rtcbench.read_summary(broken))
        _ = run.timeseries if swap[0] == "timeseries.parquet" else run.tables
    assert str(e.value).startswith(line) and named in str(e.value)
    if swap[0] == "timeseries.parquet":
        # `reproduce` reads a kept browser run's time series for its late starts.
        from rtcbench import reproduce

        with pytest.raises(rtcbench.results.InputError, match=re.escape(line + "lacks column(s)")):
            reproduce.late_starts(rtcbench.read_summary(broken), broken)
    for args in (
        ["report", str(root), "--jobs", "1", "--run-figures", "all", "--out", str(tmp_path / "report")],
        ["figure", str(broken), "--out", str(tmp_path / "figures")],
        *([["score", str(root)]] if swap[0] == "timeseries.parquet" else []),
    ):
        _, _, err = main(args, capsys)
        assert "Traceback" not in err, err
        assert named in err, (args[0], err)
        # Every line that names the run gives that reason (`figure` of this run alone also ends
        # with it: nothing could be drawn).
        naming = [ln for ln in err.splitlines() if str(broken) in ln]
        assert naming and all(f"{broken}/{named}" in ln for ln in naming), (args[0], err)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("a." * 100_000 + "b = 1\n", "scenario.toml:1: a dotted key of more than 64 parts"),
        (
            "a = " + "[" * 100_000 + "]" * 100_000,
            "scenario.toml:1: arrays and inline tables nested more than 64",
        ),
    ],
    ids=["dotted-key", "nested-arrays"],
)
def test_a_deep_scenario_toml_in_a_run_folder_is_one_line(
    two_runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, named: str
) -> None:
    # `score` read a run's scenario.toml with tomllib: RecursionError for the arrays, and for the
    # dotted key 21 GB before the kernel killed it.
    root = _copy(two_runs, tmp_path / "runs")
    broken = _runs(root)[1]
    (broken / "scenario.toml").write_text(text)
    _rehash(broken)
    code, _, err = main(["score", str(root)], capsys)
    assert code == 0 and "Traceback" not in err, err
    assert f"skipped: {broken}/{named}" in err, err
