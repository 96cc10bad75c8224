"""Which browser each peer of a browser run is (`--browser`), the Chromium field trials its
Chromium peers force (`--field-trials`) and whether the browsers write their libwebrtc's log
(`--browser-log`): what `rtcbench.runner` keys a browser run by, and `rtcbench.browser.run`
starts. Light on purpose: the runner reads it before any testbed exists.

    Browsers.parse("firefox")                  # every peer Firefox
    Browsers.parse("firefox,B=chromium")       # Firefox, but node B Chromium
    Browsers.parse("A=firefox")                # Chromium, but node A Firefox
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from rtcbench.results import InputError

__all__ = ["BROWSERS", "CHROMIUM", "FIREFOX", "Browsers"]

CHROMIUM = "chromium"
FIREFOX = "firefox"
BROWSERS = (CHROMIUM, FIREFOX)
"""The browsers a peer can be: Debian's `chromium` and `firefox-esr`."""

_NODE = re.compile(r"[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Browsers:
    """The browser of every peer: `default`, but the one `nodes` names for a node named there
    (only where it differs from `default`, so one choice has one form); the field trials
    (`chromium.field_trials`'s form, "" for none) every Chromium peer forces; and whether every
    peer writes its libwebrtc's log into its browser's log file (`log`: docs/browser.md, "The
    browsers' own logs")."""

    default: str = CHROMIUM
    nodes: tuple[tuple[str, str], ...] = ()
    field_trials: str = ""
    log: bool = False

    @classmethod
    def parse(cls, text: str, field_trials: str = "", log: bool = False) -> Browsers:
        """`--browser`'s value: comma-separated items, each a browser (the default for every
        node, at most once) or `NODE=BROWSER`. `InputError`, one line naming `--browser` and the
        allowed values, for anything else; and for field trials where no peer is Chromium."""
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
        browsers = cls(default, kept, field_trials, log)
        if field_trials and not browsers.uses(CHROMIUM):
            raise InputError(
                f"--field-trials sets Chromium's field trials, and --browser {text} starts no Chromium"
            )
        return browsers

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
