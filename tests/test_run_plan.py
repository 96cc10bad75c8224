"""A run is planned before it runs (`_core.run_meta`, `rtcbench_scenario::run::RunPlan`): the
`meta` an emulated or browser run describes itself with is the one a simulated run of the same
variant, controller and seed writes, for every kind of network and call topology."""

from __future__ import annotations

import json

import pytest

from rtcbench import _core
from rtcbench.emulation.run import planned_meta
from rtcbench.scenarios import resolve

CASES = [
    "rfc8867-5.1",  # UDP background traffic on one variant
    "rfc8867-5.7",  # TCP cross traffic
    "seed000-5.3.8",  # a BSS
    "seed000-5.4.7",  # an LTE cell, TCP on the call's own UE
    "seed004-testbed",  # hidden station, many stations
    "sfu-4",  # SFU publish and forward legs
    "turn-relay",  # a relayed call
]


def _simulated_meta(toml: str, controller: str, seed: int) -> dict[str, object]:
    run = _core.Run(toml, controller, seed, factory=None, pcap=None, piece_rows=1, slice_events=1)
    try:
        meta: dict[str, object] = json.loads(run.meta)
    finally:
        run.close()
    return meta


@pytest.mark.parametrize("scenario", CASES)
def test_the_planned_meta_is_the_simulated_one(scenario: str) -> None:
    for v in resolve(scenario):
        assert planned_meta(v, "nada", 4) == _simulated_meta(v.toml, "nada", 4), v.variant


def test_a_planned_meta_names_every_flows_path_and_bottleneck() -> None:
    (v,) = [v for v in resolve("seed000-5.4.7") if v.variant == "location=far"]
    meta = planned_meta(v, "gcc", 1)
    flows = {f["name"]: f for f in meta["flows"]}
    # The call's uplink waits in its UE's buffer; TCP on the same UE shares it.
    assert flows["up.video"]["path"][0] == "cell:PC3:ul"
    assert flows["tcp-up1"]["path"][0] == "cell:PC3:ul"
    assert flows["up.video"]["bottleneck"] == "cell:PC3:ul"
    assert [c["controller"] for c in meta["calls"]] == ["gcc", "gcc"]
