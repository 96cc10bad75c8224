//! How fast the Wi-Fi BSS simulates: simulated seconds per wall-clock second for 10 stations,
//! saturated (with and without A-MPDU) and carrying call-like traffic (2.5 Mbit/s up and down
//! per station). Run with `cargo run --release -p rtcbench-net --example wifi_speed`.

use std::time::Instant as WallClock;

use rtcbench_net::radio::wifi::phy::PhyMode;
use rtcbench_net::radio::wifi::{Bss, BssConfig, Port, StationConfig};
use rtcbench_net::rng::rng_for;
use rtcbench_net::{Ecn, FlowKey, NetPacket};
use rtcbench_units::{DataSize, Duration, Instant};

struct Pkt {
    flow: u64,
}

impl NetPacket for Pkt {
    fn size(&self) -> DataSize {
        DataSize::bytes(1200)
    }
    fn flow_key(&self) -> FlowKey {
        FlowKey(self.flow)
    }
    fn ecn(&self) -> Ecn {
        Ecn::NotEct
    }
    fn set_ecn(&mut self, _: Ecn) {}
}

const STATIONS: u16 = 10;

/// Runs `simulated` of either saturated uplinks (every station keeps 64 packets queued) or
/// paced flows (one 1200-byte packet every `interval` per direction and station); returns
/// simulated seconds per wall second and the packets delivered.
fn run(aggregation: bool, paced: Option<Duration>, simulated: Duration) -> (f64, u64) {
    let mut cfg = BssConfig::new(vec![StationConfig::fixed(PhyMode::ht(7)); usize::from(STATIONS)]);
    if !aggregation {
        cfg.aggregation = None;
    }
    let mut bss = Bss::new(cfg, rng_for(1, "wifi")).expect("valid");
    let end = Instant::ZERO + simulated;
    let mut next_send = Instant::ZERO;
    let mut delivered = 0u64;
    let mut queued = [0u64; STATIONS as usize + 1];
    let wall = WallClock::now();
    let mut now = Instant::ZERO;
    loop {
        match paced {
            None => {
                for s in 1..=STATIONS {
                    while queued[usize::from(s)] < 64 {
                        let _ = bss.push(now, Port::station(s), Port::AP, Pkt { flow: u64::from(s) });
                        queued[usize::from(s)] += 1;
                    }
                }
            }
            Some(interval) => {
                while next_send <= now {
                    for s in 1..=STATIONS {
                        let _ = bss.push(next_send, Port::station(s), Port::AP, Pkt { flow: u64::from(s) });
                        let _ =
                            bss.push(next_send, Port::AP, Port::station(s), Pkt { flow: 100 + u64::from(s) });
                    }
                    next_send += interval;
                }
            }
        }
        let wake =
            bss.poll_timeout().map_or(next_send, |t| if paced.is_some() { t.min(next_send) } else { t });
        if wake > end {
            break;
        }
        now = wake;
        bss.on_timeout(now);
        while bss.poll_drop().is_some() {}
        while let Some((_, _, p)) = bss.poll_output(now) {
            delivered += 1;
            if p.flow < 100 {
                queued[p.flow as usize] -= 1;
            }
        }
    }
    (simulated.as_secs_f64() / wall.elapsed().as_secs_f64(), delivered)
}

fn main() {
    let cases = [
        ("saturated uplinks, A-MPDU", true, None),
        ("saturated uplinks, no aggregation", false, None),
        ("2.5 Mbit/s up and down per station, A-MPDU", true, Some(Duration::from_micros(3840))),
        ("2.5 Mbit/s up and down per station, no aggregation", false, Some(Duration::from_micros(3840))),
    ];
    for (what, aggregation, paced) in cases {
        let (speed, delivered) = run(aggregation, paced, Duration::from_secs(60));
        println!(
            "{STATIONS} stations, HT MCS 7, {what}: {speed:.0}x real time ({delivered} packets in 60 s)"
        );
    }
}
