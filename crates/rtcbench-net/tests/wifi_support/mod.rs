//! What the Wi-Fi tests share: a packet type, and a drive loop that keeps chosen flows
//! backlogged (saturated) the way the crate docs drive an element.

#![allow(dead_code)] // Each test file uses part of it.

use rtcbench_net::radio::wifi::{Bss, BssConfig, Port};
use rtcbench_net::rng::rng_for;
use rtcbench_net::{DropReason, Ecn, FlowKey, NetPacket};
use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

/// A packet of a numbered flow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pkt {
    pub(crate) flow: usize,
    pub(crate) seq: u64,
    pub(crate) size: DataSize,
    pub(crate) dscp: u8,
    pub(crate) sent: Instant,
}

impl NetPacket for Pkt {
    fn size(&self) -> DataSize {
        self.size
    }
    fn flow_key(&self) -> FlowKey {
        FlowKey(self.flow as u64)
    }
    fn ecn(&self) -> Ecn {
        Ecn::NotEct
    }
    fn set_ecn(&mut self, _: Ecn) {}
    fn dscp(&self) -> u8 {
        self.dscp
    }
}

/// A flow from one port to another, of `bytes`-byte IP packets.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Flow {
    pub(crate) from: Port,
    pub(crate) to: Port,
    pub(crate) bytes: u64,
    pub(crate) dscp: u8,
}

impl Flow {
    pub(crate) fn new(from: Port, to: Port, bytes: u64) -> Self {
        Self { from, to, bytes, dscp: 0 }
    }
}

/// What a saturated run measured per flow, from `warmup` to `until`.
#[derive(Clone, Debug, Default)]
pub(crate) struct FlowResult {
    pub(crate) delivered: u64,
    pub(crate) delivered_bytes: u64,
    pub(crate) dropped: Vec<DropReason>,
    /// Deliveries out of order (sequence number below one already delivered).
    pub(crate) reordered: u64,
    last_seq: Option<u64>,
}

impl FlowResult {
    /// Goodput over the measurement window, counting `payload` bytes per delivered packet.
    pub(crate) fn throughput(&self, payload: u64, window: Duration) -> Bitrate {
        DataSize::bytes(self.delivered * payload) / window
    }
}

/// How many packets each flow keeps waiting.
pub(crate) const BACKLOG: u64 = 64;

/// Runs `bss` with every flow kept at `BACKLOG` packets waiting, until `until`; counts what
/// arrives from `warmup` on.
pub(crate) fn run_saturated(
    bss: &mut Bss<Pkt>,
    flows: &[Flow],
    warmup: Instant,
    until: Instant,
) -> Vec<FlowResult> {
    let mut results = vec![FlowResult::default(); flows.len()];
    let mut pushed = vec![0u64; flows.len()];
    let mut done = vec![0u64; flows.len()];
    let mut now = Instant::ZERO;
    loop {
        for (i, f) in flows.iter().enumerate() {
            while pushed[i] - done[i] < BACKLOG {
                let pkt =
                    Pkt { flow: i, seq: pushed[i], size: DataSize::bytes(f.bytes), dscp: f.dscp, sent: now };
                pushed[i] += 1;
                if let Err((p, reason)) = bss.push(now, f.from, f.to, pkt) {
                    done[p.flow] += 1;
                    results[p.flow].dropped.push(reason);
                }
            }
        }
        let Some(t) = bss.poll_timeout() else { break };
        if t > until {
            break;
        }
        now = t;
        bss.on_timeout(now);
        while let Some((_, p, reason)) = bss.poll_drop() {
            done[p.flow] += 1;
            if now >= warmup {
                results[p.flow].dropped.push(reason);
            }
        }
        while let Some((at, port, p)) = bss.poll_output(now) {
            assert_eq!(port, flows[p.flow].to, "delivered at its destination");
            done[p.flow] += 1;
            let r = &mut results[p.flow];
            if r.last_seq.is_some_and(|s| p.seq < s) {
                r.reordered += 1;
            }
            r.last_seq = Some(r.last_seq.map_or(p.seq, |s| s.max(p.seq)));
            if at >= warmup {
                r.delivered += 1;
                r.delivered_bytes += p.size.as_bytes();
            }
        }
    }
    results
}

/// A BSS from a config, seeded as an element at `wifi/<seed>`.
pub(crate) fn bss(cfg: BssConfig, seed: u64) -> Bss<Pkt> {
    Bss::new(cfg, rng_for(seed, "wifi")).expect("a valid config")
}
