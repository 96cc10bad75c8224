"""Finding scenarios: a built-in id (`rtcbench list`) or a path to a TOML file.

A variant's resolved scenario is parsed here (`Variant.spec` and its accessors, parsed once):
loading and checking a scenario is the Rust loader's (`_core.expand`), and what Python reads here
is the text that loader resolved. The other TOML documents rtcbench accepts (a sweep file,
scorecard thresholds, a results folder's `scenario.toml`) are read by `rtcbench.documents`.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any

from rtcbench import _core
from rtcbench.results import read_text

__all__ = [
    "MODELLED_CODEC",
    "BuiltinScenario",
    "ScenarioNotFound",
    "Table",
    "Variant",
    "builtin",
    "call_tables",
    "numeric_value",
    "other_codecs",
    "resolve",
    "typed_fields",
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


Table = Mapping[str, Any]
"""A TOML table as `Variant.spec` gives it: read-only, its arrays tuples."""


def _frozen(value: Any) -> Any:
    """`value` (parsed TOML) with every table a read-only mapping and every array a tuple: one
    parse is shared by every reader of a variant, so none may change it."""
    if isinstance(value, dict):
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


@dataclass(frozen=True)
class Variant:
    """One runnable variant of a scenario: its name, folder slug, fully resolved TOML and
    fingerprint (the SHA-256 of what it runs: `rtcbench.identity`).

    `core` is the variant as the Rust loader loaded and checked it: running it, planning its
    network and calls, or computing its `meta` takes it as it is (`_core.Run(variant.core, ...)`),
    with no second parse. `spec` is the resolved TOML as data, parsed on first use; the accessors
    below give its arrays of tables (empty when the scenario has none), for the testbed to read
    what the relay and the agents are not given as plans (`_core.network_plan`,
    `_core.call_plans`)."""

    scenario_id: str
    variant: str
    slug: str
    toml: str
    fingerprint: str
    core: _core.Resolved = field(compare=False, repr=False)

    @cached_property
    def spec(self) -> Table:
        """The resolved scenario, parsed once; read-only (tables are mappings, arrays tuples)."""
        spec: Table = _frozen(tomllib.loads(self.toml))
        return spec

    def __getstate__(self) -> dict[str, Any]:
        # Pickled (to a worker) without the parsed `spec`, which pickle cannot copy (read-only
        # mappings); the worker parses it again if it needs it.
        return {k: v for k, v in self.__dict__.items() if k != "spec"}

    def _tables(self, key: str) -> tuple[Table, ...]:
        tables: tuple[Table, ...] = self.spec.get(key, ())
        return tables

    @property
    def duration(self) -> str:
        """`duration` as the loader resolved it (`"30s"`)."""
        return str(self.spec["duration"])

    @property
    def links(self) -> tuple[Table, ...]:
        """`[[links]]`."""
        return self._tables("links")

    @property
    def calls(self) -> tuple[Table, ...]:
        """`[[calls]]` (a conference's calls are in its `call` table: `conferences`)."""
        return self._tables("calls")

    @property
    def conferences(self) -> tuple[Table, ...]:
        """`[[conferences]]`."""
        return self._tables("conferences")

    @property
    def tcp(self) -> tuple[Table, ...]:
        """`[[tcp]]`: TCP cross traffic."""
        return self._tables("tcp")

    @property
    def cbr(self) -> tuple[Table, ...]:
        """`[[cbr]]`: constant-rate UDP cross traffic."""
        return self._tables("cbr")

    @property
    def wifi(self) -> tuple[Table, ...]:
        """`[[wifi]]`: 802.11 BSSs."""
        return self._tables("wifi")

    @property
    def lte(self) -> tuple[Table, ...]:
        """`[[lte]]`: LTE cells."""
        return self._tables("lte")


_FIELD_START = re.compile(r",(?=[A-Za-z_][A-Za-z0-9_.-]*=)")


def variant_fields(variant: str) -> dict[str, str]:
    """The fields of a variant's name as `{name: value}`: ``"delay=50ms,queue=300ms"`` gives
    ``{"delay": "50ms", "queue": "300ms"}``. A value may hold commas (a list's label); a name
    starts each field. A name without ``=`` (a resolved file's own name) gives ``{}``."""
    if "=" not in variant:
        return {}
    return dict(part.partition("=")[::2] for part in _FIELD_START.split(variant))


_PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def numeric_value(text: str) -> tuple[str, float] | None:
    """A variant's or a sweep point's value as a number, with the suffix its column takes: a
    duration in seconds (``"100ms"`` → ``("_s", 0.1)``), a rate in bit/s (``"2.5Mbps"`` →
    ``("_bps", 2500000.0)``), both parsed as scenarios parse them, or a plain number
    (``("_value", …)``); None for anything else (a label, a boolean). So that a table of runs
    sorts and plots "25ms" before "100ms"."""
    try:
        return "_s", float(_core.duration_s(text))
    except ValueError:
        pass
    try:
        return "_bps", float(_core.rate_bps(text))
    except ValueError:
        pass
    if _PLAIN_NUMBER.fullmatch(text.strip()):
        return "_value", float(text)
    return None


def typed_fields(fields: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """`fields` as table columns named `prefix + name`, each followed by its numeric companion
    (`numeric_value`) where its value has one: ``{"delay": "100ms"}`` gives ``variant.delay`` =
    ``"100ms"`` and ``variant.delay_s`` = 0.1 with the prefix ``variant.``."""
    out: dict[str, Any] = {}
    for name, value in fields.items():
        out[prefix + name] = value
        typed = numeric_value(value) if isinstance(value, str) else None
        if typed is not None:
            out[prefix + name + typed[0]] = typed[1]
    return out


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
        size = path.stat().st_size
        if size > _core.MAX_SCENARIO_BYTES:
            # Refused before it is read: loading takes memory in proportion to the text.
            raise _core.ScenarioError(f"{path}: {_core.scenario_too_large(size)}")
        text, origin = read_text(path), str(path)
    return [Variant(*row) for row in _core.expand(text, origin, list(sets))]


def call_tables(variant: Variant) -> list[tuple[str, Mapping[str, Any]]]:
    """(field, table) of every table that describes calls of `variant`: each `[[calls]]` entry,
    and each conference's `call` table."""
    places = [(f"calls.{i}", c) for i, c in enumerate(variant.calls)]
    places += [(f"conferences.{i}.call", c.get("call", {})) for i, c in enumerate(variant.conferences)]
    return places


def degradation_sets(variant: Variant, degradation: str) -> list[str]:
    """The `--set` overrides that give every call of `variant` (each `call_tables` entry) the
    `video.degradation` `degradation`."""
    return [f"{where}.video.degradation={degradation}" for where, _ in call_tables(variant)]


def other_codecs(variant: Variant) -> list[tuple[str, str]]:
    """(field, codec) of every call of `variant` whose `video.codec` is not `MODELLED_CODEC`: a
    `[[calls]]` entry's, or a conference's `call` table's."""
    return [
        (f"{where}.video.codec", codec)
        for where, call in call_tables(variant)
        if (codec := (call.get("video") or {}).get("codec", MODELLED_CODEC)) != MODELLED_CODEC
    ]
