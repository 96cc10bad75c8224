//! How fast the LTE cell simulates: TTIs per wall-clock second (and µs per TTI) for 10 UEs
//! with saturated downlinks and uplinks, at fixed CQIs and with Rayleigh fading, at 5 and
//! 20 MHz; and for 10 UEs carrying call-like traffic within the cell's capacity. Run with
//! `cargo run --release -p rtcbench-net --example lte_speed`.

use std::time::Instant as WallClock;

use rtcbench_net::radio::lte::{
    Bandwidth, Cell, CellConfig, ChannelQuality, CqiReporting, Direction, Port, UeConfig, UlAccess,
};
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

const UES: u16 = 10;

/// Runs `simulated` with every UE's downlink and uplink kept 20 kB deep (`paced`: None) or
/// offered one 1200-byte packet every `paced`; returns TTIs per wall second and the packets
/// delivered.
fn run(cfg: CellConfig, simulated: Duration, paced: Option<Duration>) -> (f64, u64) {
    let mut cell: Cell<Pkt> = Cell::new(cfg, rng_for(1, "lte")).expect("valid");
    let end = Instant::ZERO + simulated;
    let mut delivered = 0u64;
    let wall = WallClock::now();
    let mut now = Instant::ZERO;
    let mut next_send = Instant::ZERO;
    while now <= end {
        for ue in 1..=UES {
            for (dir, from, to) in
                [(Direction::Downlink, Port::ENB, Port::ue(ue)), (Direction::Uplink, Port::ue(ue), Port::ENB)]
            {
                match paced {
                    None => {
                        while cell.queue_bytes(Port::ue(ue), dir).as_bytes() < 20_000 {
                            let _ = cell.push(now, from, to, Pkt { flow: u64::from(ue) });
                        }
                    }
                    Some(_) if next_send <= now => {
                        let _ = cell.push(now, from, to, Pkt { flow: u64::from(ue) });
                    }
                    Some(_) => {}
                }
            }
        }
        if let Some(interval) = paced.filter(|_| next_send <= now) {
            next_send += interval;
        }
        cell.on_timeout(now);
        while cell.poll_drop().is_some() {}
        while cell.poll_output(now).is_some() {
            delivered += 1;
        }
        now = match (cell.poll_timeout(), paced) {
            (Some(t), None) => t,
            (t, Some(_)) => t.map_or(next_send, |t| t.min(next_send)),
            (None, None) => unreachable!("saturated"),
        };
    }
    (simulated.as_millis() as f64 / wall.elapsed().as_secs_f64(), delivered)
}

fn main() {
    let fixed: Vec<UeConfig> = (0..UES).map(|i| UeConfig::fixed_cqi(6 + (i % 10) as u8)).collect();
    let fading: Vec<UeConfig> = (0..UES)
        .map(|i| {
            let q = ChannelQuality::Fading {
                mean_sinr_db: 5.0 + 1.5 * f64::from(i),
                speed_kmh: 30.0,
                carrier_ghz: 2.0,
            };
            UeConfig { dl: q.clone(), ul: q, sr_offset_ttis: None }
        })
        .collect();
    let simulated = Duration::from_secs(60);
    for bandwidth in [Bandwidth::Mhz5, Bandwidth::Mhz20] {
        let cases = [
            ("fixed CQI 6..15, ideal UL access", fixed.clone(), 1, false),
            ("fixed CQI 6..15, SR/BSR UL access", fixed.clone(), 1, true),
            ("Rayleigh fading 30 km/h, CQI every TTI", fading.clone(), 1, false),
            ("Rayleigh fading 30 km/h, CQI every 5 TTIs", fading.clone(), 5, false),
        ];
        for (what, ues, period, sr) in cases {
            let mut cfg = CellConfig::new(ues);
            cfg.bandwidth = bandwidth;
            cfg.cqi = CqiReporting { period_ttis: period, delay_ttis: 0 };
            if sr {
                cfg.ul_access = UlAccess::scheduling_request();
            }
            let (ttis, delivered) = run(cfg, simulated, None);
            println!(
                "{} MHz, {UES} UEs saturated both ways, {what}: {ttis:.0} TTI/s = {:.2} µs/TTI = {:.0}x real time ({delivered} packets in 60 s)",
                bandwidth.mhz(),
                1e6 / ttis,
                ttis / 1000.0
            );
        }
        // Call-like load within capacity: 0.5 Mbit/s each way per UE at 5 MHz, 2.5 at 20 MHz.
        let (mbps, interval) = match bandwidth {
            Bandwidth::Mhz5 => ("0.5", Duration::from_micros(19_200)),
            _ => ("2.5", Duration::from_micros(3840)),
        };
        let mut cfg = CellConfig::new(fixed.clone());
        cfg.bandwidth = bandwidth;
        cfg.ul_access = UlAccess::scheduling_request();
        let (ttis, delivered) = run(cfg, simulated, Some(interval));
        println!(
            "{} MHz, {UES} UEs at {mbps} Mbit/s each way, fixed CQI 6..15, SR/BSR UL access: {:.0}x real time = {:.2} µs per simulated ms ({delivered} packets in 60 s)",
            bandwidth.mhz(),
            ttis / 1000.0,
            1e6 / ttis
        );
    }
}
