"""Finding scenarios: a built-in id (`rtcbench list`) or a path to a TOML file."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from rtcbench import _core
from rtcbench.results import read_text

__all__ = [
    "MODELLED_CODEC",
    "BuiltinScenario",
    "ScenarioNotFound",
    "Variant",
    "builtin",
    "other_codecs",
    "resolve",
    "variant_fields",
]

MODELLED_CODEC = "vp8"
"""The video codec the simulator and the emulation's media agents model (RFC 7741's payload
descriptor, libvpx-like frame sizes); a browser run sends whichever `video.codec` names."""


class ScenarioNotFound(LookupError):
    """Neither a built-in scenario id nor a readable file."""


@dataclass(frozen=True)
class BuiltinScenario:
    id: str
    path: str
    title: str
    source: str


@dataclass(frozen=True)
class Variant:
    """One runnable variant of a scenario: its name, folder slug, fully resolved TOML and
    fingerprint (the SHA-256 of what it runs: `rtcbench.identity`)."""

    scenario_id: str
    variant: str
    slug: str
    toml: str
    fingerprint: str


_FIELD_START = re.compile(r",(?=[A-Za-z_][A-Za-z0-9_.-]*=)")


def variant_fields(variant: str) -> dict[str, str]:
    """The fields of a variant's name as `{name: value}`: ``"delay=50ms,queue=300ms"`` gives
    ``{"delay": "50ms", "queue": "300ms"}``. A value may hold commas (a list's label); a name
    starts each field. A name without ``=`` (a resolved file's own name) gives ``{}``."""
    if "=" not in variant:
        return {}
    return dict(part.partition("=")[::2] for part in _FIELD_START.split(variant))


def builtin() -> list[BuiltinScenario]:
    return [BuiltinScenario(*row) for row in _core.builtin_scenarios()]


def resolve(scenario: str | Path, sets: tuple[str, ...] | list[str] = ()) -> list[Variant]:
    """The variants of a built-in scenario id or a scenario file, with `--set` overrides applied.

    Raises `ScenarioNotFound` for an unknown id or missing file and `_core.ScenarioError` (a
    `ValueError`) for a scenario that cannot be used; both messages are one line for a person.
    """
    found = _core.builtin_text(str(scenario)) if isinstance(scenario, str) else None
    if found is not None:
        text, origin = found
    else:
        path = Path(scenario)
        if not path.is_file():
            known = ", ".join(b.id for b in builtin())
            raise ScenarioNotFound(
                f"no built-in scenario or file named {str(scenario)!r} (built-in: {known})"
            )
        text, origin = read_text(path), str(path)
    return [Variant(*row) for row in _core.expand(text, origin, list(sets))]


def other_codecs(variant: Variant) -> list[tuple[str, str]]:
    """(field, codec) of every call of `variant` whose `video.codec` is not `MODELLED_CODEC`: a
    `[[calls]]` entry's, or a conference's `call` table's."""
    spec = tomllib.loads(variant.toml)
    places = [(f"calls.{i}", c) for i, c in enumerate(spec.get("calls", []))]
    places += [
        (f"conferences.{i}.call", c.get("call", {})) for i, c in enumerate(spec.get("conferences", []))
    ]
    return [
        (f"{where}.video.codec", codec)
        for where, call in places
        if (codec := (call.get("video") or {}).get("codec", MODELLED_CODEC)) != MODELLED_CODEC
    ]
