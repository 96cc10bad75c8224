"""The emulated network that emulation and browser runs share (`rtcbench.emulation`,
`rtcbench.browser`): a scenario's topology built out of Linux network namespaces and veth pairs
(docs/emulation.md).

    >>> from rtcbench import resolve, testbed
    >>> with testbed.build(resolve("rfc8867-5.1")[0]) as bed:  # doctest: +SKIP
    ...     print(bed.topology.host("B").address)  # 10.0.2.2/24
    ...     bed.run("A", ["ip", "route"])

`topology` describes it (pure data, for the relay and the agents); `netns` builds and removes it;
`cross` runs the scenario's kernel TCP and CBR cross traffic in it; `relay` carries the
packets between the hosts through the scenario's links. Needs Linux, root and
iproute2's `ip` (`missing()` says what is lacking).
"""

from types import ModuleType

from rtcbench.testbed import cross, relay
from rtcbench.testbed.netns import (
    Testbed,
    TestbedError,
    TestbedUnavailable,
    build,
    missing,
    remove_stale,
    require,
)
from rtcbench.testbed.topology import Host, Topology, scenario_nodes

__all__ = [
    "Host",
    "Testbed",
    "TestbedError",
    "TestbedUnavailable",
    "Topology",
    "build",
    "cross",
    "media",
    "missing",
    "relay",
    "remove_stale",
    "require",
    "scenario_nodes",
]


def __getattr__(name: str) -> ModuleType:
    # `testbed.media` was this package's until the media agents moved to `rtcbench.emulation`;
    # imported on first use, as `rtcbench.emulation.media` imports this package.
    if name == "media":
        from rtcbench.emulation import media

        return media
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
