"""The emulated network of a scenario, as data: for every scenario node, its network namespace,
the veth pair that joins it to the "net" namespace in the middle, and the addresses and MACs at
both ends. The relay and the agents read it; `rtcbench.testbed.build` makes it real.

Planning is pure (no root, no system call): the same scenario always gets the same interfaces,
addresses and MACs, and only the per-run prefix in the names differs, so the frames of two runs
of one scenario compare byte for byte.

Addressing, with nodes numbered from 0 in the order the run lists them (`scenario_nodes`: the
`[[links]]`' `from` and `to`, then the members of each BSS and cell):

- node i has 10.0.{i+1}.2/24 on its veth end, MAC 02:72:62:00:{i+1:02x}:02;
- the net namespace has 10.0.{i+1}.1/24 on the other end, MAC 02:72:62:00:{i+1:02x}:01, and that
  address is node i's default gateway.

(02 marks a locally administered unicast MAC; 72:62 is "rb".) Every node reaches every other
through the net namespace; the neighbour entries at both ends are permanent, so no ARP crosses.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from ipaddress import IPv4Interface
from typing import TYPE_CHECKING, Any

from rtcbench import _core

if TYPE_CHECKING:
    from rtcbench.scenarios import Variant

__all__ = [
    "IFNAMSIZ",
    "MAX_NODES",
    "MTU",
    "PREFIX_PATTERN",
    "Host",
    "Topology",
    "scenario_nodes",
]

IFNAMSIZ = 16
"""Linux's buffer for an interface name, with its terminating NUL: names have at most 15 bytes."""

MTU = 1500
"""Of every veth: frames are at most 1514 bytes (Ethernet header included)."""

MAX_NODES = 254
"""Nodes one topology can have: one /24 per node under 10.0.0.0/16, from 10.0.1.0 on."""

PREFIX_PATTERN = re.compile(r"rb[0-9a-f]{6}")
"""A run's prefix: `rb` and six hex digits, chosen at random and recorded while the run lives."""

_SAFE_NODE = re.compile(r"[A-Za-z0-9_.]{1,32}")
"""Node names used as they are in namespace names; others (and `net`) become `node-<index>`."""


@dataclass(frozen=True)
class Host:
    """One scenario node: its namespace, and the veth pair between it and the net namespace."""

    node: str
    """The node's name in the scenario."""
    index: int
    """Its position in the scenario (order of first appearance in `[[links]]`), from 0."""
    netns: str
    """The node's network namespace (`ip netns exec NAME ...`)."""
    interface: str
    """The veth end in the node's namespace."""
    address: IPv4Interface
    """The node's address on `interface`, with its /24."""
    mac: str
    """MAC of `interface`."""
    net_interface: str
    """The veth end in the net namespace: where the relay reads this node's frames and writes
    frames for it."""
    net_address: IPv4Interface
    """The address on `net_interface`: the node's default gateway."""
    net_mac: str
    """MAC of `net_interface`: the destination of every frame the node sends off its subnet."""


@dataclass(frozen=True)
class Topology:
    """The namespaces and veth pairs of one run: `hosts` in scenario order, all joined to the
    namespace `net_netns`. Every name begins with `prefix`."""

    prefix: str
    net_netns: str
    hosts: tuple[Host, ...]

    @classmethod
    def plan(cls, nodes: list[str] | tuple[str, ...], prefix: str) -> Topology:
        """The topology of `nodes` (distinct names, in scenario order) under `prefix`."""
        if not PREFIX_PATTERN.fullmatch(prefix):
            raise ValueError(f"prefix {prefix!r} is not `rb` and six hex digits")
        if len(set(nodes)) != len(nodes):
            raise ValueError(f"node names repeat: {list(nodes)}")
        if not 1 <= len(nodes) <= MAX_NODES:
            raise ValueError(f"an emulated network has 1 to {MAX_NODES} nodes, not {len(nodes)}")
        hosts = []
        for i, node in enumerate(nodes):
            subnet = i + 1
            use_name = _SAFE_NODE.fullmatch(node) is not None and node != "net"
            hosts.append(
                Host(
                    node=node,
                    index=i,
                    netns=f"{prefix}-{node}" if use_name else f"{prefix}-node-{i}",
                    interface=f"{prefix}-h{i}",
                    address=IPv4Interface(f"10.0.{subnet}.2/24"),
                    mac=f"02:72:62:00:{subnet:02x}:02",
                    net_interface=f"{prefix}-r{i}",
                    net_address=IPv4Interface(f"10.0.{subnet}.1/24"),
                    net_mac=f"02:72:62:00:{subnet:02x}:01",
                )
            )
        return cls(prefix=prefix, net_netns=f"{prefix}-net", hosts=tuple(hosts))

    @property
    def namespaces(self) -> tuple[str, ...]:
        """Every namespace of the run: the net namespace, then the nodes'."""
        return (self.net_netns, *(h.netns for h in self.hosts))

    def host(self, node: str) -> Host:
        """The host of the scenario node named `node`; `KeyError` naming the known ones if none."""
        for h in self.hosts:
            if h.node == node:
                return h
        raise KeyError(f"no node {node!r} (nodes: {', '.join(h.node for h in self.hosts)})")

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready description, for the relay and the agents (addresses as `10.0.1.2/24`)."""
        return {
            "prefix": self.prefix,
            "net_netns": self.net_netns,
            "mtu": MTU,
            "hosts": [
                {
                    "node": h.node,
                    "index": h.index,
                    "netns": h.netns,
                    "interface": h.interface,
                    "address": str(h.address),
                    "mac": h.mac,
                    "net_interface": h.net_interface,
                    "net_address": str(h.net_address),
                    "net_mac": h.net_mac,
                }
                for h in self.hosts
            ],
        }


def scenario_nodes(variant: Variant) -> list[str]:
    """Every node of a resolved scenario, in the order its run lists them (`meta.nodes`): the
    `from` and `to` of its `[[links]]` in order of first appearance, then the members of its
    BSSes (AP, stations) and cells (eNB, UEs). Calls and cross traffic may only use these."""
    nodes: list[str] = json.loads(_core.run_meta(variant.core, "", 0))["nodes"]
    return nodes
