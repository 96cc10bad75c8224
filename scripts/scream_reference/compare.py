"""rtcbench's `scream2` beside the authors' SCReAM v2 simulator on the same bottlenecks.

    python scripts/scream_reference/compare.py /path/to/scream_sim [--out DIR] [--seed 1]

`scream_sim` is EricssonResearch/scream's `code/scream_simulator.cpp` built by
`build_reference.sh` (its bottleneck constants read from the environment); README.md beside this
file says how and what differs between the two setups. For each bottleneck (one TOML file here)
the script runs rtcbench's `scream2` and the reference for 30 s and prints, over 10-30 s: the
delivered media rate, the mean target, the queue delay (one-way delay over its minimum, per media
packet in rtcbench and per logged acknowledgement in the reference), the fraction of delivered
media marked CE, the mean packet size and round trip, and the authors' expected L4S rate
(2 / p_mark) · MSS · 8 / RTT with each run's own p_mark, packet size and RTT. Nothing of the
reference is read but its log's numbers.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import polars as pl

import rtcbench

HERE = Path(__file__).resolve().parent
DURATION_S = 30.0
STEADY_S = (10.0, 30.0)
"""The window every mean is taken over: after the start-up, to the end of the run."""
REFERENCE_PACKET_BYTES = 1012
"""The reference simulator's largest packet: 1000 bytes of payload and a 12-byte RTP header. Its
bottleneck measures a packet's queue delay up to the end of the packet's own transmission,
rtcbench's up to its start, so the reference's thresholds are moved up by one such packet's
transmission time."""
STEP_WIDTH_S = 1e-6
"""The reference marks with a linear ramp; a step is a ramp this narrow."""

# Columns of the reference's detailed log (one line per acknowledgement of a frame's last packet or
# of the last packet of a feedback), as its writer orders them.
REF_TIME, REF_QDELAY, REF_RTT = 0, 1, 2
REF_SEQ, REF_ACKED_BYTES, REF_CE_BYTES, REF_TARGET = 8, 9, 10, 17


@dataclass(frozen=True)
class Bottleneck:
    name: str
    """The scenario file `<name>.toml` beside this script."""
    rate_bps: float
    rtt_s: float
    marker: str
    """"ramp", "step" or "none" (not ECN-capable)."""
    threshold_s: float = 0.0
    """Where marking starts, as rtcbench measures sojourn."""
    ramp_s: float = 0.0

    def reference_env(self) -> dict[str, str]:
        tx_s = REFERENCE_PACKET_BYTES * 8 / self.rate_bps
        low = self.threshold_s + tx_s
        high = low + (self.ramp_s if self.marker == "ramp" else STEP_WIDTH_S)
        return {
            "SCREAM_TMAX": f"{DURATION_S}",
            "SCREAM_CH_RATE": "0",
            "SCREAM_RATE": f"{self.rate_bps}",
            "SCREAM_RTT": f"{self.rtt_s}",
            "SCREAM_ECN": "0" if self.marker == "none" else "1",
            "SCREAM_L4S": "0" if self.marker == "none" else "1",
            "SCREAM_TH_LO": f"{low}",
            "SCREAM_TH_HI": f"{high}",
        }


BOTTLENECKS = (
    Bottleneck("ramp-10M-25ms", 10e6, 0.025, "ramp", 0.008, 0.004),
    Bottleneck("step-5M-50ms", 5e6, 0.050, "step", 0.002),
    Bottleneck("step-20M-25ms", 20e6, 0.025, "step", 0.001),
    Bottleneck("delay-10M-50ms", 10e6, 0.050, "none"),
)


@dataclass(frozen=True)
class Stats:
    rate_bps: float
    """Delivered media, bytes as each counts them (rtcbench: on the wire; reference: RTP)."""
    target_bps: float
    qdelay_mean_ms: float
    qdelay_p95_ms: float
    mark_fraction: float
    packet_bytes: float
    rtt_s: float

    @property
    def expected_bps(self) -> float | None:
        """The authors' L4S relation, (2 / p_mark) · MSS · 8 / RTT."""
        if self.mark_fraction <= 0:
            return None
        return 2 / self.mark_fraction * self.packet_bytes * 8 / self.rtt_s

    @property
    def marks_per_rtt(self) -> float:
        return self.mark_fraction * self.rate_bps * self.rtt_s / (8 * self.packet_bytes)


def run_reference(binary: Path, traces: Path, b: Bottleneck, folder: Path) -> Stats:
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / "traces"
    if not link.exists():
        link.symlink_to(traces)
    subprocess.run(
        [str(binary)],
        cwd=folder,
        env={**os.environ, **b.reference_env()},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    rows = [
        [float(x) for x in line.split(",")]
        for line in (folder / "log.txt").read_text().splitlines()
        if line.strip()
    ]
    log = pl.DataFrame(rows, orient="row").select(
        pl.col(f"column_{REF_TIME}").alias("t"),
        pl.col(f"column_{REF_QDELAY}").alias("qdelay"),
        pl.col(f"column_{REF_RTT}").alias("rtt"),
        pl.col(f"column_{REF_SEQ}").alias("seq"),
        pl.col(f"column_{REF_ACKED_BYTES}").alias("acked"),
        pl.col(f"column_{REF_CE_BYTES}").alias("ce"),
        pl.col(f"column_{REF_TARGET}").alias("target"),
    )
    # Sequence numbers are 16 bits: unwrap them to count packets.
    seq = log["seq"].to_list()
    unwrapped: list[float] = []
    base = 0.0
    for i, s in enumerate(seq):
        if i and s + base < unwrapped[-1] - 32768:
            base += 65536
        unwrapped.append(s + base)
    log = log.with_columns(pl.Series("seq", unwrapped))
    before = log.filter(pl.col("t") < STEADY_S[0])
    w = log.filter(pl.col("t").is_between(*STEADY_S, closed="left"))
    acked = float(w["acked"].sum())
    packets = float(w["seq"].max()) - float(before["seq"].max())  # type: ignore[arg-type]
    return Stats(
        rate_bps=acked * 8 / (STEADY_S[1] - STEADY_S[0]),
        target_bps=float(w["target"].mean()),  # type: ignore[arg-type]
        qdelay_mean_ms=1000 * float(w["qdelay"].mean()),  # type: ignore[arg-type]
        qdelay_p95_ms=1000 * float(w["qdelay"].quantile(0.95)),  # type: ignore[arg-type]
        mark_fraction=float(w["ce"].sum()) / acked,
        packet_bytes=acked / packets,
        rtt_s=float(w["rtt"].mean()),  # type: ignore[arg-type]
    )


def run_rtcbench(b: Bottleneck, out: Path, seed: int) -> Stats:
    (result,) = rtcbench.run(HERE / f"{b.name}.toml", "scream2", seed, out, figure=False)
    tables = result.tables
    media = tables.packets.filter(
        (pl.col("event") == "received") & (pl.col("kind") == "media") & (pl.col("flow") == 0)
    ).with_columns(owd_ms=(pl.col("t_us") - pl.col("sent_us")) / 1000)
    media = media.with_columns(qdelay_ms=pl.col("owd_ms") - pl.col("owd_ms").min())
    lo, hi = (int(t * 1e6) for t in STEADY_S)
    w = media.filter(pl.col("t_us").is_between(lo, hi, closed="left"))
    cc = tables.controller.filter(pl.col("t_us").is_between(lo, hi, closed="left"))
    size = float(w["size"].sum())
    return Stats(
        rate_bps=size * 8 / (STEADY_S[1] - STEADY_S[0]),
        target_bps=float(cc["target_bps"].mean()),  # type: ignore[arg-type]
        qdelay_mean_ms=float(w["qdelay_ms"].mean()),  # type: ignore[arg-type]
        qdelay_p95_ms=float(w["qdelay_ms"].quantile(0.95)),  # type: ignore[arg-type]
        mark_fraction=w.filter(pl.col("ecn") == "ce").height / w.height,
        packet_bytes=size / w.height,
        rtt_s=float(cc["srtt_ms"].mean()) / 1000,  # type: ignore[arg-type]
    )


def row(b: Bottleneck, who: str, s: Stats) -> str:
    expected = s.expected_bps
    cells = [
        b.name,
        who,
        f"{s.rate_bps / 1e6:.2f}",
        f"{s.rate_bps / b.rate_bps:.2f}",
        f"{s.target_bps / 1e6:.2f}",
        f"{s.qdelay_mean_ms:.1f} / {s.qdelay_p95_ms:.1f}",
        f"{100 * s.mark_fraction:.2f}",
        f"{s.packet_bytes:.0f}",
        f"{1000 * s.rtt_s:.1f}",
        "-" if expected is None else f"{expected / 1e6:.2f}",
        "-" if expected is None else f"{s.rate_bps / expected:.2f}",
        f"{s.marks_per_rtt:.2f}",
    ]
    return "| " + " | ".join(cells) + " |"


HEADER = (
    "| bottleneck | run | delivered Mbit/s | of capacity | target Mbit/s | qdelay mean / p95 ms "
    "| CE % | packet B | RTT ms | (2/p)·MSS·8/RTT Mbit/s | delivered / expected | marks per RTT |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reference", type=Path, help="the reference simulator built by build_reference.sh")
    ap.add_argument("--traces", type=Path, help="its frame-size traces (default: ../../traces from it)")
    ap.add_argument("--out", type=Path, help="where both write their runs (default: a temporary folder)")
    ap.add_argument("--seed", type=int, default=1, help="rtcbench's seed (the reference has none)")
    ap.add_argument("--only", action="append", help="run only this bottleneck (repeatable)")
    args = ap.parse_args(argv)
    binary: Path = args.reference.resolve()
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        sys.exit(f"{binary}: not an executable; build it with scripts/scream_reference/build_reference.sh")
    traces: Path = (args.traces or binary.parent.parent / "traces").resolve()
    if not traces.is_dir():
        sys.exit(f"{traces}: no frame-size traces folder; pass --traces")
    chosen = [b for b in BOTTLENECKS if not args.only or b.name in args.only]
    if not chosen:
        sys.exit(f"--only: none of {args.only} is one of {[b.name for b in BOTTLENECKS]}")
    with tempfile.TemporaryDirectory(prefix="scream-reference-") as tmp:
        out: Path = args.out or Path(tmp)
        print(HEADER)
        for b in chosen:
            mine = run_rtcbench(b, out / "rtcbench", args.seed)
            print(row(b, "rtcbench scream2", mine), flush=True)
            theirs = run_reference(binary, traces, b, out / "reference" / b.name)
            print(row(b, "reference", theirs), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
