"""What a link could carry: its capacity averaged over windows (for utilisation, lined up with
receptions) and its constant-capacity phases (`docs/metrics.md`, "Utilisation" and "Phases")."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from rtcbench.analysis.flows import _flow, _flows, active_span_us
from rtcbench.tables import _US_PER_S, CROSS_KINDS, MEDIA_KINDS, Tables, _duration_us, _link_segments


@dataclass(frozen=True)
class Phase:
    """An interval of constant capacity of one link: [start_s, end_s); capacity None = unlimited."""

    start_s: float
    end_s: float
    capacity_bps: int | None

    @property
    def start_us(self) -> int:
        return round(self.start_s * _US_PER_S)

    @property
    def end_us(self) -> int:
        return round(self.end_s * _US_PER_S)


def _capacity_of(t: Tables, link: str) -> pl.DataFrame:
    """`_link_segments` of a link, computed once per run for the flows' bottlenecks."""
    seg = t._capacity.get(link)
    return _link_segments(t, link) if seg is None else seg


def _window_capacity(
    t: Tables,
    link: str,
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    duration_us: int,
    shift_us: int = 0,
) -> npt.NDArray[np.float64]:
    """Time-weighted mean capacity of `link` over each window [start, end); NaN where the link is
    unlimited at any instant of the window (a utilisation against "infinity" would be meaningless).

    `shift_us` lines the capacity up with receptions: a packet received at x was carried by the
    capacity in force at x - shift_us (the propagation delay after the bottleneck). Without it, a
    320 ms path makes a 3 s capacity dip look 10 % over-used. Integrates exactly in integer bit·µs
    (≤ 1e9 bit/s x 1e8 µs fits Int64), then divides once.
    """
    seg = _capacity_of(t, link)
    if seg.height == 0:
        return np.full(starts.shape, np.nan)
    seg_t = seg.get_column("t_us").to_numpy().astype(np.int64) + shift_us
    seg_t[0] = min(int(seg_t[0]), 0)
    cap_col = seg.get_column("capacity_bps")
    unlimited = cap_col.is_null().to_numpy().astype(np.int64)
    cap = cap_col.fill_null(0).to_numpy().astype(np.int64)
    seg_end = np.append(seg_t[1:], max(duration_us, int(seg_t[-1])))
    length = seg_end - seg_t
    cum_cap = np.concatenate(([0], np.cumsum(cap * length)))
    cum_unl = np.concatenate(([0], np.cumsum(unlimited * length)))

    def integral(cum: npt.NDArray[np.int64], rate: npt.NDArray[np.int64], x: npt.NDArray[np.int64]) -> Any:
        i = np.clip(np.searchsorted(seg_t, x, side="right") - 1, 0, len(seg_t) - 1)
        return cum[i] + rate[i] * (x - seg_t[i])

    bits = integral(cum_cap, cap, ends) - integral(cum_cap, cap, starts)
    unl = integral(cum_unl, unlimited, ends) - integral(cum_unl, unlimited, starts)
    out: npt.NDArray[np.float64] = bits.astype(np.float64) / (ends - starts).astype(np.float64)
    out[unl > 0] = np.nan
    return out


def phases(t: Tables, flow_or_link: int | str) -> list[Phase]:
    """Intervals of constant capacity of a flow's bottleneck link (or of a named link).

    `flow_or_link` is a flow id, a flow name or a link name. Consecutive samples with equal capacity
    merge; the first phase starts at 0 and the last ends at `meta.duration_s`. A link without samples
    is one unlimited phase. These are the "sections" of Tables 6.1-6.3 of Guerrero Viveros 2019. A
    link driven by a capacity trace (`capacity_trace` in its `meta.links` entry) changes capacity
    every few hundred milliseconds, so its run is one phase, whose capacity is the mean over the run
    (rounded to bit/s).
    """
    dur = _duration_us(t)
    link: str | None
    if isinstance(flow_or_link, int):
        link = _flow(t, flow_or_link).get("bottleneck")
    else:
        names = {str(f.get("name")): f for f in _flows(t)}
        link_names = {str(lk.get("name")) for lk in t.meta.get("links", [])}
        if flow_or_link in names and flow_or_link not in link_names:
            link = names[flow_or_link].get("bottleneck")
        else:
            link = flow_or_link
    if link is None:
        return [Phase(0.0, dur / _US_PER_S, None)]
    seg = _capacity_of(t, link)
    if seg.height == 0:
        return [Phase(0.0, dur / _US_PER_S, None)]
    if any(lk.get("name") == link and lk.get("capacity_trace") for lk in t.meta.get("links", [])):
        mean = _window_capacity(t, link, np.array([0]), np.array([max(dur, 1)]), dur)[0]
        return [Phase(0.0, dur / _US_PER_S, None if np.isnan(mean) else round(float(mean)))]
    # Capacities are whole bit/s well below 2**53, so exact as floats; NaN stands for unlimited.
    values = seg.get_column("capacity_bps").to_numpy().astype(np.float64)
    unlimited = np.isnan(values)
    changed = np.ones(values.size, dtype=bool)
    changed[1:] = (values[1:] != values[:-1]) & ~(unlimited[1:] & unlimited[:-1])
    at = np.flatnonzero(changed)
    times = [int(x) for x in seg.get_column("t_us").to_numpy()[at]]
    caps = [None if unlimited[i] else int(values[i]) for i in at]
    times[0] = 0
    bounds = [*times, dur]
    return [Phase(bounds[i] / _US_PER_S, bounds[i + 1] / _US_PER_S, caps[i]) for i in range(len(caps))]


@dataclass(frozen=True)
class Period(Phase):
    """A part of a capacity phase of a link during which the same flows share it: phases are cut
    again wherever a flow that shares the link, or the radio medium it is a hop of, starts or stops
    (`periods`)."""

    phase: int
    """The index of the capacity phase it lies in (`phases`)."""
    flows: tuple[int, ...]
    """The ids of the flows bottlenecked at the link that run in it, in `meta.flows` order."""
    sharing: tuple[int, ...] = ()
    """The ids of every media and competing flow that shares the link or its medium and runs in
    it (those of `flows` too), in `meta.flows` order."""
    joined: tuple[int, ...] = ()
    """Of those, the ones that started where it starts."""
    left: tuple[int, ...] = ()
    """The sharing flows that stopped where it starts (they ran in the period before)."""

    @property
    def capacity_changed(self) -> bool:
        """It starts where the link's capacity changed (not at the start of the run)."""
        return self.phase > 0 and self.start_us == self.phase_start_us

    phase_start_us: int = 0
    """Where its capacity phase starts."""


SHARING_KINDS = (*MEDIA_KINDS, *CROSS_KINDS)
"""The flows whose start or stop begins a new period: media and competing traffic (a call's
feedback starts and stops with its media)."""


def sharing_flows(t: Tables, link: str) -> list[dict[str, Any]]:
    """The media and competing flows that share `link`: those bottlenecked there and, when the link
    is a radio hop (a Wi-Fi node's queue, an LTE buffer), every one whose path crosses a hop of
    the same medium (a BSS's airtime, a cell's PRBs in one direction; `radio_links`), wherever its
    bottleneck is: a TCP download to another station takes the same airtime as the call."""
    medium = radio_links(t.meta).get(link)
    on_medium = {name for name, m in radio_links(t.meta).items() if m == medium} if medium else set()
    return [
        f
        for f in _flows(t)
        if f.get("kind") in SHARING_KINDS
        and (f.get("bottleneck") == link or on_medium.intersection(str(p) for p in f.get("path", [])))
    ]


def periods(t: Tables, link: str) -> list[Period]:
    """The phases of `link` (`phases`), each cut wherever one of the flows that share it
    (`sharing_flows`: bottlenecked there, or on the same radio medium) starts or stops
    (`active_span_us`), so that such a flow runs through a period or not at all: what a call got
    while it had the link to itself, then beside a TCP flow, then alone again. A stretch in which
    no media or competing flow bottlenecked at `link` runs is not a period. `t.meta["flows"]` must
    list every flow of the run (the boundaries come from all of them)."""
    dur = _duration_us(t)
    here = [f for f in _flows(t) if f.get("bottleneck") == link]
    spans = {int(f["id"]): active_span_us(f, dur) for f in here}
    own = {int(f["id"]) for f in here if f.get("kind") in SHARING_KINDS}
    shared = {int(f["id"]): active_span_us(f, dur) for f in sharing_flows(t, link)}
    starts_stops = {x for a_b in shared.values() for x in a_b}
    out: list[Period] = []
    for i, ph in enumerate(phases(t, link)):
        cuts = sorted({ph.start_us, ph.end_us, *(x for x in starts_stops if ph.start_us < x < ph.end_us)})
        for s, e in pairwise(cuts):
            running = tuple(fid for fid, (a, b) in spans.items() if a < e and s < b)
            if own.intersection(running):
                out.append(
                    Period(
                        s / _US_PER_S,
                        e / _US_PER_S,
                        ph.capacity_bps,
                        i,
                        running,
                        sharing=tuple(fid for fid, (a, b) in shared.items() if a < e and s < b),
                        joined=tuple(fid for fid, (a, _) in shared.items() if a == s and s > 0),
                        left=tuple(fid for fid, (_, b) in shared.items() if b == s),
                        phase_start_us=ph.start_us,
                    )
                )
    return out


# ------------------------------------------------------------------------------------------------
# The capacity of a radio hop: what a shared medium could have carried for one node


def radio_links(meta: dict[str, Any]) -> dict[str, str]:
    """Every Wi-Fi node's and LTE buffer's link, with the medium it shares: `wifi:<bss>` (every
    node of a BSS shares its airtime) or `lte:<cell>:<direction>` (every UE of a cell shares the
    PRBs of a direction)."""
    out = {}
    for lk in meta.get("links", []):
        if lk.get("wifi"):
            out[str(lk["name"])] = f"wifi:{lk['wifi']['bss']}"
        elif lk.get("lte"):
            out[str(lk["name"])] = f"lte:{lk['lte']['cell']}:{lk['lte']['direction']}"
    return out


def radio_hops(meta: dict[str, Any], flow: dict[str, Any]) -> list[str]:
    """The links of a flow's path that are a radio hop (`radio_links`), in path order."""
    radio = radio_links(meta)
    return [str(p) for p in flow.get("path", []) if str(p) in radio]


def radio_flows(meta: dict[str, Any]) -> set[int]:
    """The ids of the flows whose path crosses a radio hop (a BSS's airtime, a cell's PRBs): their
    path has no capacity of its own, only a share of a medium, so the tables show no utilisation
    for them (docs/compare.md)."""
    return {int(f["id"]) for f in meta.get("flows", []) if radio_hops(meta, f)}


def _delay_after_us(meta: dict[str, Any], flow: dict[str, Any], link: str) -> int:
    """Propagation delay from `link` (its own included) to the flow's receiver."""
    delays = {str(lk["name"]): int(lk.get("delay_us", 0)) for lk in meta.get("links", [])}
    path = [str(p) for p in flow.get("path", [])]
    return sum(delays.get(name, 0) for name in path[path.index(link) :]) if link in path else 0


def wired_hop_keys(meta: dict[str, Any], flow: dict[str, Any]) -> list[tuple[str, int]]:
    """The (wired link, propagation delay after it) pairs whose capacity bounds `flow`'s path
    (`path_capacity`; the delay lines a link's capacity up with the receptions): its bottleneck,
    or, if the path crosses a radio hop, every wired link of the path. A radio medium is the
    bottleneck of a path across it unless a wired link is narrower than the medium's lowest rate
    (docs/scenarios.md, "A path's bottleneck"), but what it gives a node varies with its load and
    may exceed a wider wired link in some windows: seed000-5.3.8's AP at location A could have
    given 121 Mbit/s behind its 100 Mbit/s Ethernet."""
    path = [str(p) for p in flow.get("path", [])]
    radio = radio_links(meta)
    if any(p in radio for p in path):
        links = [p for p in path if p not in radio]
    else:
        links = [str(flow["bottleneck"])] if flow.get("bottleneck") is not None else []
    return [(link, _delay_after_us(meta, flow, link)) for link in links]


def capacity_links(meta: dict[str, Any]) -> list[str]:
    """The links whose capacity the metrics read, sorted: every flow's bottleneck (phases,
    periods, fair shares) and the wired links that bound a path across a radio hop
    (`wired_hop_keys`)."""
    flows = meta.get("flows", [])
    names = {str(f["bottleneck"]) for f in flows if f.get("bottleneck") is not None}
    return sorted(names.union(link for f in flows for link, _ in wired_hop_keys(meta, f)))


def radio_hop_keys(meta: dict[str, Any], flows: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """The (radio link, delay after it) pairs of `flows`' paths: the hop capacities their time
    series need (`radio_window_capacity`)."""
    return sorted({(hop, _delay_after_us(meta, f, hop)) for f in flows for hop in radio_hops(meta, f)})


_PPB = 1_000_000_000
"""Parts per billion: the unit shares of the medium are added in (`radio_window_capacity`)."""
_RADIO_SCHEMA = {"link": pl.String, "shift_us": pl.Int64, "_w": pl.Int64, "capacity_bps": pl.Float64}


def radio_window_capacity(
    links: pl.LazyFrame, meta: dict[str, Any], hops: list[tuple[str, int]], window_us: int
) -> pl.DataFrame:
    """Per radio hop (`radio_hop_keys`: a link and the propagation delay after it) and window of
    `window_us`, the capacity the hop could have given its node: the rate the node carries while
    it has the medium, over all of the medium the other nodes left unused (`docs/metrics.md`,
    "Utilisation"). Columns `link`, `shift_us`, `_w`, `capacity_bps`; a window without a value
    (a Wi-Fi node that sent nothing, an LTE UE out of range) has no row.

    - Wi-Fi node: its delivered bits over its airtime (`delivered_bps / airtime_share`), times
      1 minus the airtime share of the BSS's other nodes (at least its own share: collisions
      count twice), their means over the window.
    - LTE buffer: the rate of the whole band at its CQI's MCS (`phy_rate_bps`), times 1 minus the
      PRB share of the other UEs of its cell in that direction, per sample, then the mean.

    A sample covers the time since the previous one (10 ms) and counts in the window of its last
    instant; like a link's capacity (`_window_capacity`), it is lined up with the receptions by the
    propagation delay after the hop."""
    if not hops:
        return pl.DataFrame(schema=_RADIO_SCHEMA)
    radio = radio_links(meta)
    media = sorted({radio[link] for link, _ in hops})
    members = [link for link, medium in radio.items() if medium in media]
    medium = pl.col("link").replace_strict(radio, default=None, return_dtype=pl.String)
    # Shares in parts per billion, and rates in whole bit/s, so that every sum below is of
    # integers: exact in any order, whether the rows come from memory or stream from a file.
    share = (pl.coalesce("airtime_share", "rb_share") * _PPB).round().cast(pl.Int64)
    rows = (
        links.filter(pl.col("link").is_in(members))
        .select("t_us", "link", "delivered_bps", "phy_rate_bps", _medium=medium, _share=share)
        .filter(pl.col("_share").is_not_null())
    )
    totals = rows.group_by("_medium", "t_us").agg(_total=pl.col("_share").sum())
    keys = pl.LazyFrame(
        {"link": [h for h, _ in hops], "shift_us": [s for _, s in hops]},
        schema={"link": pl.String, "shift_us": pl.Int64},
    )
    others = (pl.col("_total") - pl.col("_share")).clip(0, _PPB)
    lte_sample = (pl.col("phy_rate_bps").cast(pl.Float64) * (_PPB - pl.col("_others")) / _PPB).round()
    per_sample = (
        rows.join(totals, on=["_medium", "t_us"], how="left")
        .join(keys, on="link", how="inner")
        .with_columns(
            _w=(pl.col("t_us") - 1 + pl.col("shift_us")) // window_us,
            _others=others,
            _lte=pl.col("_medium").str.starts_with("lte:"),
        )
        .with_columns(_lte_bps=pl.when(pl.col("_lte")).then(lte_sample.cast(pl.Int64)))
    )
    own = pl.col("_share").sum().cast(pl.Float64)
    n = pl.len().cast(pl.Int64)
    # Collisions and hidden stations put two nodes on air at once, so the shares can add up to
    # more than 1: a node could have had at least the airtime it used.
    free = pl.max_horizontal(n * _PPB - pl.col("_others").sum(), pl.col("_share").sum())
    wifi = pl.col("delivered_bps").sum().cast(pl.Float64) * free.cast(pl.Float64) / (own * n)
    out = (
        per_sample.group_by("link", "shift_us", "_w")
        .agg(
            capacity_bps=pl.when(pl.col("_lte").first())
            .then(pl.col("_lte_bps").sum().cast(pl.Float64) / n)
            .when(pl.col("_share").sum() > 0)
            .then(wifi)
        )
        .filter(pl.col("capacity_bps").is_not_null())
        .sort("link", "shift_us", "_w")
        .collect(engine="streaming")
    )
    return out.cast(_RADIO_SCHEMA)  # type: ignore[arg-type]


def _hop_windows(
    radio: pl.DataFrame, hop: tuple[str, int], index: npt.NDArray[np.int64]
) -> npt.NDArray[np.float64]:
    """One hop's capacity in the windows numbered `index` (consecutive) of
    `radio_window_capacity`; NaN where it has none."""
    out = np.full(index.size, np.nan)
    if index.size == 0:
        return out
    rows = radio.filter((pl.col("link") == hop[0]) & (pl.col("shift_us") == hop[1]))
    w = rows.get_column("_w").to_numpy() - index[0]
    inside = (w >= 0) & (w < index.size)
    out[w[inside]] = rows.get_column("capacity_bps").to_numpy()[inside]
    return out


def path_capacity(
    wired: npt.NDArray[np.float64],
    radio: pl.DataFrame,
    hops: list[tuple[str, int]],
    index: npt.NDArray[np.int64],
) -> npt.NDArray[np.float64]:
    """A flow's capacity in the windows numbered `index` (consecutive): its wired links'
    (`wired`: the least of `wired_hop_keys`, NaN = unlimited), or, if its path has radio hops, the
    least of theirs and the wired one; NaN where a radio hop's is unknown."""
    if not hops:
        return wired
    hop_caps = np.vstack([_hop_windows(radio, hop, index) for hop in hops])
    least = hop_caps.min(axis=0)  # NaN where any hop is unknown
    out: npt.NDArray[np.float64] = np.where(np.isnan(wired), least, np.minimum(least, wired))
    return out
