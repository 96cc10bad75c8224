"""Which browser each peer of a browser run is (`--browser`), the Chromium field trials its
Chromium peers force (`--field-trials`), Chromium's L4S mode (`--cc scream2`, `--browser-l4s`)
whether the browsers write their libwebrtc's log (`--browser-log`) and whether Chromium writes
its RTC event log (`--browser-event-log`): what `rtcbench.runner`
keys a browser run by, and `rtcbench.browser.run` starts. Light on purpose: the runner reads it
before any testbed exists.

    Browsers.parse("firefox")                  # every peer Firefox
    Browsers.parse("firefox,B=chromium")       # Firefox, but node B Chromium
    Browsers.parse("A=firefox")                # Chromium, but node A Firefox
    Browsers.parse("", l4s="only_after_ce").for_controller("scream2")

Chromium's L4S mode is libwebrtc's (`modules/congestion_controller/goog_cc_scream_network_controller`),
switched on by two field trials in every Chromium peer (`l4s_trials`): RFC 8888 feedback
(`WebRTC-RFC8888CongestionControlFeedback`, offered in the SDP as `a=rtcp-fb:* ack ccfb`) and
`WebRTC-Bwe-ScreamV2` with its mode: `always` (ScreamV2 from the start, every media packet
ECT(1)), `only_after_ce` (GoogCC until the first CE mark reported, then ScreamV2) and
`goog_cc_with_ect1` (GoogCC sending ECT(1), which does not react to CE). The first two are
`--cc scream2` (`always` by default), the third `--cc gcc`: the run's controller names what
reacts to the marks. Firefox ESR 153's libwebrtc has the same controller compiled in, but Gecko
sets its libwebrtc's field trials in its own code, with no preference to change them: none of
these modes runs on Firefox (docs/browser.md, "Chromium's L4S mode").
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace

from rtcbench.results import InputError

__all__ = [
    "BROWSERS",
    "BROWSER_CONTROLLERS",
    "CCFB_TRIAL",
    "CHROMIUM",
    "FIREFOX",
    "L4S_MODES",
    "SCREAM_TRIAL",
    "Browsers",
    "l4s_trials",
]

CHROMIUM = "chromium"
FIREFOX = "firefox"
BROWSERS = (CHROMIUM, FIREFOX)
"""The browsers a peer can be: Debian's `chromium` and `firefox-esr`."""

_NODE = re.compile(r"[A-Za-z0-9_.-]+")

GCC = "gcc"
SCREAM2 = "scream2"
BROWSER_CONTROLLERS = (GCC, SCREAM2)
"""What `--cc` may be in a browser run: libwebrtc's GoogCC (rtcbench's `gcc` is its port) or
libwebrtc's ScreamV2 (`scream2`, Chromium's L4S mode; rtcbench's `scream2` is the draft's)."""
L4S_MODES = {
    "always": SCREAM2,
    "only_after_ce": SCREAM2,
    "goog_cc_with_ect1": GCC,
}
"""libwebrtc's `WebRTC-Bwe-ScreamV2` modes, each with the `--cc` it runs under: the controller
that reacts to CE marks (`scream2`), or GoogCC, which sends ECT(1) and ignores them."""
CCFB_TRIAL = "WebRTC-RFC8888CongestionControlFeedback"
"""RFC 8888 congestion control feedback: `Enabled,offer:true` offers it (`a=rtcp-fb:* ack ccfb`)."""
SCREAM_TRIAL = "WebRTC-Bwe-ScreamV2"
"""libwebrtc's ScreamV2 and its ECN modes (`mode:<L4S_MODES>`)."""


ALWAYS_ONLY_UNTIL = 156
"""The last Chromium major version measured whose libwebrtc knows ScreamV2's `always` mode (and
`Enabled`) only: Chromium 156.0.8078.108's binary names neither `only_after_ce` nor
`goog_cc_with_ect1` (nor their log lines), and forced anyway each ran GoogCC sending no ECT(1)
(docs/findings/2026-11-29-chromium-l4s.md). Such a Chromium refuses the two modes."""


def l4s_trials(mode: str) -> str:
    """The field trials of Chromium's L4S `mode` (one of `L4S_MODES`), as `--force-fieldtrials`
    takes them: RFC 8888 feedback offered and accepted, and ScreamV2's mode."""
    return f"{CCFB_TRIAL}/Enabled,offer:true/{SCREAM_TRIAL}/mode:{mode}/"


@dataclass(frozen=True)
class Browsers:
    """The browser of every peer: `default`, but the one `nodes` names for a node named there
    (only where it differs from `default`, so one choice has one form); the field trials
    (`chromium.field_trials`'s form, "" for none) every Chromium peer forces; whether every
    peer writes its libwebrtc's log into its browser's log file (`log`: docs/browser.md, "The
    browsers' own logs"); Chromium's L4S mode (`l4s`, one of `L4S_MODES`, "" for none: as
    asked until `for_controller` settles it with the run's controller); and whether every
    Chromium peer writes its RTC event log into its folder (`event_log`: docs/browser.md, "The
    RTC event log")."""

    default: str = CHROMIUM
    nodes: tuple[tuple[str, str], ...] = ()
    field_trials: str = ""
    log: bool = False
    l4s: str = ""
    event_log: bool = False

    @classmethod
    def parse(
        cls, text: str, field_trials: str = "", log: bool = False, l4s: str = "", event_log: bool = False
    ) -> Browsers:
        """`--browser`'s value: comma-separated items, each a browser (the default for every
        node, at most once) or `NODE=BROWSER`. `InputError`, one line naming `--browser` and the
        allowed values, for anything else; for field trials where no peer is Chromium; and for
        an `l4s` mode (`--browser-l4s`) that is not one of `L4S_MODES`."""
        default, nodes = CHROMIUM, {}
        defaults = 0
        for item in (text or CHROMIUM).split(","):
            node, named, name = item.strip().rpartition("=")
            if name not in BROWSERS or (named and not _NODE.fullmatch(node)) or node in nodes:
                raise InputError(
                    f"--browser must be {' or '.join(BROWSERS)}, or NODE={'|'.join(BROWSERS)} items "
                    f"separated by commas (each node once); got {text!r}"
                )
            if node:
                nodes[node] = name
            else:
                default, defaults = name, defaults + 1
        if defaults > 1:
            raise InputError(f"--browser names the default browser more than once; got {text!r}")
        kept = tuple(sorted((n, b) for n, b in nodes.items() if b != default))
        if l4s and l4s not in L4S_MODES:
            raise InputError(f"--browser-l4s must be one of {', '.join(L4S_MODES)}; got {l4s!r}")
        browsers = cls(default, kept, field_trials, log, l4s, event_log)
        if field_trials and not browsers.uses(CHROMIUM):
            raise InputError(
                f"--field-trials sets Chromium's field trials, and --browser {text} starts no Chromium"
            )
        if event_log and not browsers.uses(CHROMIUM):
            raise InputError(
                f"--browser-event-log records Chromium's RTC event log, and --browser {text} starts no "
                'Chromium (Firefox writes none: docs/browser.md, "The RTC event log")'
            )
        return browsers

    def for_controller(self, controller: str) -> Browsers:
        """These browsers as a run of `controller` starts them: the L4S mode settled (`scream2`
        runs `always` unless `only_after_ce` was asked for; `gcc` runs none unless
        `goog_cc_with_ect1` was). `InputError`, one line naming the option and its allowed
        values, for a mode of the other controller, for a controller no browser runs, for a mode
        the installed Chromium does not have (`ALWAYS_ONLY_UNTIL`), for an L4S mode with a
        Firefox peer (Gecko has no setting for it) and for `--field-trials`
        that set the L4S trials themselves."""
        if controller not in BROWSER_CONTROLLERS:
            raise InputError(
                f"--cc in a browser run is {' or '.join(BROWSER_CONTROLLERS)}: libwebrtc's GoogCC "
                f"(rtcbench's gcc is its port) or Chromium's ScreamV2 (L4S), not {controller}"
            )
        mode = self.l4s or ("always" if controller == SCREAM2 else "")
        if mode and L4S_MODES[mode] != controller:
            modes = [m for m, cc in L4S_MODES.items() if cc == controller]
            allowed = f"one of {', '.join(modes)}" if modes else "left out"
            raise InputError(
                f"--browser-l4s {mode} runs under --cc {L4S_MODES[mode]}; with --cc {controller} it is "
                f"{allowed}"
            )
        if mode and self.uses(FIREFOX):
            why = "--cc scream2" if controller == SCREAM2 and not self.l4s else f"--browser-l4s {mode}"
            raise InputError(
                f"{why} is Chromium's L4S mode, and Firefox ESR has no setting that turns it on: "
                f"--browser must be chromium for every peer (got {self.describe_choice()})"
            )
        if mode and mode != "always" and self.uses(CHROMIUM):
            # Imported here: this module is read before any browser module is needed.
            from rtcbench.browser import devtools

            version = devtools.chromium_version()
            if version is not None and int(version.split(".")[0]) <= ALWAYS_ONLY_UNTIL:
                raise InputError(
                    f"--browser-l4s {mode}: Chromium {version}'s libwebrtc has no such mode, only "
                    f"ScreamV2's always (--cc scream2); forced anyway, it runs GoogCC without ECT(1)"
                )
        named = {t.removeprefix("*") for t in self.field_trials.split("/")[::2] if t}
        if SCREAM_TRIAL in named or (mode and CCFB_TRIAL in named):
            raise InputError(
                f"--field-trials sets {SCREAM_TRIAL if SCREAM_TRIAL in named else CCFB_TRIAL}, which "
                f"Chromium's L4S mode sets: use --cc scream2 or --browser-l4s "
                f"{'|'.join(L4S_MODES)} instead"
            )
        return replace(self, l4s=mode)

    @property
    def forced_trials(self) -> str:
        """Every field trial each Chromium peer forces: the L4S mode's (`l4s_trials`), then
        `field_trials`."""
        return (l4s_trials(self.l4s) if self.l4s else "") + self.field_trials

    @property
    def controller(self) -> str:
        """The controller these browsers run (after `for_controller`)."""
        return L4S_MODES.get(self.l4s, GCC)

    def describe_choice(self) -> str:
        """The choice as `--browser` writes it: `firefox`, `chromium,A=firefox`."""
        return ",".join([self.default, *(f"{n}={b}" for n, b in self.nodes)])

    def at(self, node: str) -> str:
        """The browser of `node`'s peer."""
        return dict(self.nodes).get(node, self.default)

    def uses(self, browser: str) -> bool:
        """Whether any peer may be `browser` (the default reaches every node not named)."""
        return self.default == browser or any(b == browser for _, b in self.nodes)

    def versions(self) -> dict[str, str | None]:
        """The installed version of each browser, None for one this run does not start (or
        that does not say)."""
        # Imported here: this module is read before any browser module is needed.
        from rtcbench.browser import devtools

        versions: dict[str, str | None] = {CHROMIUM: None, FIREFOX: None}
        if self.uses(CHROMIUM):
            versions[CHROMIUM] = devtools.chromium_version()
        if self.uses(FIREFOX):
            from rtcbench.browser import firefox

            versions[FIREFOX] = firefox.firefox_version()
        return versions

    def unknown_nodes(self, peers: Collection[str]) -> list[str]:
        """The nodes `nodes` names that are not among `peers` (a run's browser nodes)."""
        return sorted(n for n, _ in self.nodes if n not in peers)

    def describe(self, versions: Mapping[str, str | None]) -> str | None:
        """Which browsers ran, from each one's version: Chromium's version alone for an
        all-Chromium run (as such runs were described before there was a choice), else the
        default browser and its version, then each node that differs (`firefox 153.7.0esr
        B=chromium 156.0.8078.108`). None for an all-Chromium run whose version is unknown."""
        if not self.nodes and self.default == CHROMIUM:
            return versions.get(CHROMIUM)
        parts = [f"{self.default} {versions.get(self.default)}"]
        parts += [f"{node}={b} {versions.get(b)}" for node, b in self.nodes]
        return " ".join(parts)
