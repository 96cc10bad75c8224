"""What a link could carry: its capacity averaged over windows (for utilisation, lined up with
receptions) and its constant-capacity phases (`docs/metrics.md`, "Utilisation" and "Phases")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from rtcbench.analysis.flows import _flow, _flows
from rtcbench.tables import _US_PER_S, Tables, _duration_us, _link_segments


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


def _downstream_delay_us(t: Tables, flow: dict[str, Any]) -> int:
    """Propagation delay from the flow's bottleneck to its receiver (the bottleneck's own delay and
    every link after it): a packet received at x left the bottleneck queue at about x minus this."""
    delays = {str(link["name"]): int(link.get("delay_us", 0)) for link in t.meta.get("links", [])}
    path = [str(p) for p in flow.get("path", [])]
    bottleneck = flow.get("bottleneck")
    if bottleneck not in path:
        return 0
    return sum(delays.get(name, 0) for name in path[path.index(str(bottleneck)) :])


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
