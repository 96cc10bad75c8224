"""The SDP a browser call negotiates: what its payload types and header extensions mean, read so
that the relay's packet log can be told apart into flows (`rtcbench.browser.trace`), and
the few edits that carry a scenario's call settings into Chromium where no API does
(docs/browser.md, "Scenario settings in a browser").

Chromium reads three codec parameters of its own from the video codec's `a=fmtp` line,
`x-google-min-bitrate`, `x-google-start-bitrate` and `x-google-max-bitrate` (kbit/s: the bounds
and the start of its bandwidth estimate, libwebrtc `media/engine/webrtc_video_engine.cc`; the
bounds are one setting of the transport, which an audio section without them clears: measured,
docs/browser.md), and
enables NACK and PLI per codec from `a=rtcp-fb` lines (RFC 4585 §4.2): removing `nack` turns
retransmission requests off, removing `nack pli` leaves FIR (`ccm fir`, RFC 5104 §7.1) as the
keyframe request. An edit is made to a description as it passes from one page to the other, so
both ends agree on it.

Which congestion control feedback a call uses is negotiated here too, and SRTCP hides it on the
wire (its reports are encrypted): RFC 8888's, offered as `a=rtcp-fb:* ack ccfb` or, as Chromium
156 writes it in its L4S mode, `a=rtcp-fb:<pt> ack ccfb` for each payload type (RFC 8888 §6), or
transport-wide congestion control (`a=rtcp-fb:<pt> transport-cc`);
`feedback_of` reads which from an offer and its answer.

One edit is hygiene between browsers: Firefox 153, given codec preferences, still writes
`a=rtcp-fb` lines for the codecs it left out of the `m=` line (VP9, AV1), and Chromium 156 refuses
such an offer ("Failed to parse codecs correctly"); `drop_unlisted` removes them (RFC 8866 §5.14:
a section's attributes describe the formats its `m=` line lists).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "TRANSPORT_CC",
    "Described",
    "MediaSection",
    "describe",
    "drop_unlisted",
    "edit_video",
    "feedback_of",
]

TRANSPORT_CC = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"
"""The transport-wide sequence number extension's URI (draft-holmer-rmcat-transport-wide-cc-
extensions-01 §2)."""

_RTPMAP = re.compile(r"^a=rtpmap:(\d+) ([^/\s]+)/(\d+)")
_FMTP = re.compile(r"^a=fmtp:(\d+) (.*)$")
_EXTMAP = re.compile(r"^a=extmap:(\d+)(?:/\S+)? (\S+)")


@dataclass
class MediaSection:
    """One `m=` section: its kind, codecs by payload type (upper-case names: `VP8`, `RTX`, `RED`,
    `ULPFEC`, `OPUS`, `FLEXFEC-03`, ...), each RTX payload type's `apt`, and the header extensions by
    id."""

    kind: str
    mid: str | None = None
    codecs: dict[int, str] = field(default_factory=dict)
    apt: dict[int, int] = field(default_factory=dict)
    extensions: dict[int, str] = field(default_factory=dict)


@dataclass
class Described:
    """What a session description says about the packets of its session."""

    sections: list[MediaSection]

    def payload_types(self, kind: str) -> dict[int, str]:
        """Codec names by payload type over the sections of `kind` (`video`, `audio`)."""
        return {pt: name for s in self.sections if s.kind == kind for pt, name in s.codecs.items()}

    def transport_cc_id(self) -> int | None:
        """The id of the transport-wide sequence number extension (one for the whole BUNDLE
        group, RFC 8843 §9.2), or None if it was not negotiated."""
        ids = {i for s in self.sections for i, uri in s.extensions.items() if uri == TRANSPORT_CC}
        return min(ids) if ids else None


def _lines(sdp: str) -> list[str]:
    return sdp.replace("\r\n", "\n").strip("\n").split("\n")


def describe(sdp: str) -> Described:
    """Reads `sdp`'s media sections (RFC 8866 §5.14), codecs (`a=rtpmap`, `a=fmtp` apt) and header
    extensions (`a=extmap`, RFC 8285 §8)."""
    sections: list[MediaSection] = []
    for line in _lines(sdp):
        if line.startswith("m="):
            sections.append(MediaSection(kind=line[2:].split(" ", 1)[0]))
            continue
        if not sections:
            continue
        s = sections[-1]
        if line.startswith("a=mid:"):
            s.mid = line[6:].strip()
        elif m := _RTPMAP.match(line):
            s.codecs[int(m.group(1))] = m.group(2).upper()
        elif m := _FMTP.match(line):
            params = dict(p.split("=", 1) for p in m.group(2).split(";") if "=" in p)
            if "apt" in params:
                s.apt[int(m.group(1))] = int(params["apt"])
        elif m := _EXTMAP.match(line):
            s.extensions[int(m.group(1))] = m.group(2)
    return Described(sections)


_RTCP_FB = re.compile(r"^a=rtcp-fb:(\S+)[ \t]+(.*?)\s*$")


def _feedbacks(sdp: str) -> set[str]:
    """The `a=rtcp-fb` feedback types `sdp` offers or accepts for any payload type (`ack ccfb`,
    `transport-cc`, `nack`, ...)."""
    return {m.group(2) for line in _lines(sdp) if (m := _RTCP_FB.match(line))}


def feedback_of(offer: str, answer: str) -> str | None:
    """The congestion control feedback an offer and its answer agreed on: `ccfb` (RFC 8888,
    `a=rtcp-fb:* ack ccfb` or for a payload type, in both), else `transport-cc` (in both), else
    None."""
    both = _feedbacks(offer) & _feedbacks(answer)
    if "ack ccfb" in both:
        return "ccfb"
    return "transport-cc" if "transport-cc" in both else None


_PT_ATTRIBUTE = re.compile(r"^a=(?:rtpmap|fmtp|rtcp-fb):(\d+)[ \t]")


def drop_unlisted(sdp: str) -> str:
    """`sdp` without the `a=rtpmap`, `a=fmtp` and `a=rtcp-fb` lines of payload types that their
    section's `m=` line does not list (`a=rtcp-fb:*` stays). Unchanged if there are none."""
    out: list[str] = []
    listed: set[str] = set()
    for line in _lines(sdp):
        if line.startswith("m="):
            listed = set(line.split()[3:])
        elif (m := _PT_ATTRIBUTE.match(line)) and m.group(1) not in listed:
            continue
        out.append(line)
    return "\r\n".join(out) + "\r\n"


def edit_video(
    sdp: str,
    codec: str,
    *,
    bitrates_kbps: dict[str, int] | None = None,
    nack: bool = True,
    pli: bool = True,
) -> str:
    """`sdp` with the video codec `codec`'s settings changed in every video section: Chromium's
    `x-google-<name>-bitrate` parameters (`bitrates_kbps`: `min`, `start`, `max`) on its
    `a=fmtp` line, and without its `nack` feedback (`nack=False`) or `nack pli` (`pli=False`,
    leaving `ccm fir`). Line endings stay CRLF, as JSEP writes them."""
    out: list[str] = []
    kind = ""
    section_end = 0
    lines = _lines(sdp)
    pts = {
        pt
        for s in describe(sdp).sections
        if s.kind == "video"
        for pt, name in s.codecs.items()
        if name == codec.upper()
    }
    params = ";".join(f"x-google-{k}-bitrate={v}" for k, v in (bitrates_kbps or {}).items())
    for k, line in enumerate(lines):
        if line.startswith("m="):
            kind = line[2:].split(" ", 1)[0]
            section_end = next((j for j in range(k + 1, len(lines)) if lines[j].startswith("m=")), len(lines))
        if kind == "video":
            if (m := _FMTP.match(line)) and params and int(m.group(1)) in pts:
                line = f"{line};{params}"
            elif line.startswith("a=rtcp-fb:"):
                pt_text, _, what = line[len("a=rtcp-fb:") :].partition(" ")
                dropped = (not nack and what.strip() == "nack") or (not pli and what.strip() == "nack pli")
                if pt_text.isdigit() and int(pt_text) in pts and dropped:
                    continue
        out.append(line)
        m = _RTPMAP.match(line)
        if kind == "video" and m and params and int(m.group(1)) in pts:
            # A codec without parameters gets an `a=fmtp` line of its own after its `a=rtpmap`.
            pt = int(m.group(1))
            if not any(x.startswith(f"a=fmtp:{pt} ") for x in lines[k + 1 : section_end]):
                out.append(f"a=fmtp:{pt} {params}")
    return "\r\n".join(out) + "\r\n"
