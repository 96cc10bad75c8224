//! What the LTE tests share: a packet type, traffic sources, and a drive loop that runs a cell
//! the way the crate docs drive an element, recording every delivery and drop.

#![allow(dead_code)] // Each test file uses part of it.

use rtcbench_net::radio::lte::{Cell, CellConfig, Direction, Port};
use rtcbench_net::rng::rng_for;
use rtcbench_net::{DropReason, Ecn, FlowKey, NetPacket};
use rtcbench_units::{DataSize, Duration, Instant};

/// A packet of UE `ue` (from 1) in direction `dir`, numbered from 0 in push order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pkt {
    pub(crate) ue: u16,
    pub(crate) dir: Direction,
    pub(crate) seq: u64,
    pub(crate) size: DataSize,
    pub(crate) sent: Instant,
}

impl NetPacket for Pkt {
    fn size(&self) -> DataSize {
        self.size
    }
    fn flow_key(&self) -> FlowKey {
        FlowKey(u64::from(self.ue) * 2 + u64::from(self.dir == Direction::Uplink))
    }
    fn ecn(&self) -> Ecn {
        Ecn::NotEct
    }
    fn set_ecn(&mut self, _: Ecn) {}
}

/// How a source offers packets to one (UE, direction).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Traffic {
    /// One packet of `bytes` every `interval`, from `start`, none at or after `stop`.
    Cbr { bytes: u64, interval: Duration, start: Duration, stop: Duration },
    /// Keeps at least `backlog` bytes waiting (checked at every wake-up and TTI boundary).
    Saturate { bytes: u64, backlog: u64 },
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Source {
    pub(crate) ue: u16,
    pub(crate) dir: Direction,
    pub(crate) traffic: Traffic,
}

impl Source {
    pub(crate) fn new(ue: u16, dir: Direction, traffic: Traffic) -> Self {
        Self { ue, dir, traffic }
    }
}

/// Everything a run produced.
#[derive(Debug, Default)]
pub(crate) struct Run {
    pub(crate) delivered: Vec<(Instant, Port, Pkt)>,
    pub(crate) dropped: Vec<(Port, Pkt, DropReason)>,
    /// Packets refused by `push`.
    pub(crate) refused: Vec<Pkt>,
    pub(crate) pushed: u64,
}

impl Run {
    /// One-way delays, ms, of the packets of (ue, dir) delivered, in delivery order.
    pub(crate) fn delays_ms(&self, ue: u16, dir: Direction) -> Vec<f64> {
        self.delivered
            .iter()
            .filter(|(_, _, p)| p.ue == ue && p.dir == dir)
            .map(|(t, _, p)| (*t - p.sent).as_millis_f64())
            .collect()
    }

    /// Whether every (UE, direction)'s packets left in push order.
    pub(crate) fn in_order(&self) -> bool {
        let mut last = std::collections::BTreeMap::new();
        self.delivered.iter().all(|(_, _, p)| {
            let prev = last.insert((p.ue, p.dir == Direction::Uplink), p.seq);
            prev.is_none_or(|s| s < p.seq)
        })
    }
}

/// Builds a cell from `cfg` with the generator of `seed`.
pub(crate) fn cell(cfg: CellConfig, seed: u64) -> Cell<Pkt> {
    Cell::new(cfg, rng_for(seed, "lte")).expect("a valid cell")
}

/// Runs `cell` with `sources` until `until`.
pub(crate) fn drive(cell: &mut Cell<Pkt>, sources: &[Source], until: Instant) -> Run {
    drive_with(cell, sources, until, &[], |_, _| {})
}

/// Runs `cell` with `sources` until `until`, also waking it at every instant of
/// `extra_wakeups` (which must change nothing), and calls `on_tti` after the cell ran up to a TTI
/// boundary (every boundary while a source saturates, else the ones the run wakes at).
pub(crate) fn drive_with(
    cell: &mut Cell<Pkt>,
    sources: &[Source],
    until: Instant,
    extra_wakeups: &[Instant],
    mut on_tti: impl FnMut(&Cell<Pkt>, Instant),
) -> Run {
    let mut run = Run::default();
    let mut seq = vec![0u64; sources.len()];
    // Next push of each CBR source; saturating sources top up at every TTI boundary.
    let mut next: Vec<Option<Instant>> = sources
        .iter()
        .map(|s| match s.traffic {
            Traffic::Cbr { start, .. } => Some(Instant::ZERO + start),
            Traffic::Saturate { .. } => None,
        })
        .collect();
    let saturating = sources.iter().any(|s| matches!(s.traffic, Traffic::Saturate { .. }));
    let mut extra = extra_wakeups.iter().copied().peekable();
    let mut next_tti = Instant::ZERO;
    let mut now = Instant::ZERO;
    loop {
        // Sources first at `now`: push runs the TTIs due by then itself.
        for (i, s) in sources.iter().enumerate() {
            let (from, to) = match s.dir {
                Direction::Downlink => (Port::ENB, Port::ue(s.ue)),
                Direction::Uplink => (Port::ue(s.ue), Port::ENB),
            };
            let offer = |cell: &mut Cell<Pkt>, bytes: u64, at: Instant, seq: &mut u64, run: &mut Run| {
                let pkt = Pkt { ue: s.ue, dir: s.dir, seq: *seq, size: DataSize::bytes(bytes), sent: at };
                *seq += 1;
                run.pushed += 1;
                if let Err((p, reason)) = cell.push(at, from, to, pkt) {
                    assert_eq!(reason, DropReason::QueueFull);
                    run.refused.push(p);
                }
            };
            match s.traffic {
                Traffic::Cbr { bytes, interval, stop, .. } => {
                    while let Some(at) = next[i].filter(|&t| t <= now) {
                        offer(cell, bytes, at, &mut seq[i], &mut run);
                        next[i] = Some(at + interval).filter(|&t| t < Instant::ZERO + stop);
                    }
                }
                Traffic::Saturate { bytes, backlog } => {
                    while cell.queue_bytes(Port::ue(s.ue), s.dir).as_bytes() < backlog {
                        offer(cell, bytes, now, &mut seq[i], &mut run);
                    }
                }
            }
        }
        cell.on_timeout(now);
        while let Some(d) = cell.poll_drop() {
            run.dropped.push(d);
        }
        while let Some(o) = cell.poll_output(now) {
            run.delivered.push(o);
        }
        if now >= next_tti {
            on_tti(cell, now);
        }
        // The next instant: the cell's, a source's, a TTI boundary (for saturation and
        // sampling), or an extra wake-up.
        while next_tti <= now {
            next_tti += Duration::from_millis(1);
        }
        let mut wake = cell.poll_timeout().unwrap_or(Instant::FAR_FUTURE);
        for t in next.iter().flatten() {
            wake = wake.min(*t);
        }
        if saturating {
            wake = wake.min(next_tti);
        }
        while extra.peek().is_some_and(|&t| t <= now) {
            extra.next();
        }
        if let Some(&t) = extra.peek() {
            wake = wake.min(t);
        }
        if wake > until {
            break;
        }
        now = wake;
    }
    run
}

/// The mean of `xs`.
pub(crate) fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// The q-quantile of `xs` (nearest rank).
pub(crate) fn quantile(xs: &[f64], q: f64) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1]
}
