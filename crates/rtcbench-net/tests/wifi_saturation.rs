//! One saturated station sending 1472-byte UDP payloads to the AP, per HT MCS at 20 MHz with the
//! long GI, AC_BE, 5 GHz, with and without A-MPDU: the simulated goodput within 1 % of
//! the closed form of one uncontended station (`docs/wifi.md`, "Validation": AIFS + CWmin/2 slots +
//! PPDU + SIFS + ACK/BlockAck per exchange), and with A-MPDU also within 1 % of ns-3's
//! `wifi-spectrum-saturation-example` figures (ns-3's `wifi-testing.rst`).

mod wifi_support;

use rtcbench_net::radio::wifi::phy::PhyMode;
use rtcbench_net::radio::wifi::{BssConfig, Port, StationConfig};
use rtcbench_units::{Duration, Instant};
use wifi_support::{bss, run_saturated, Flow};

/// Mbit/s per MCS 0-7: (reference closed form with A-MPDU, its MPDUs per A-MPDU, ns-3, closed
/// form without aggregation).
const A14C: [(f64, u64, f64, f64); 8] = [
    (5.84, 2, 5.81, 5.59),
    (11.86, 5, 11.83, 10.27),
    (17.85, 8, 17.79, 14.18),
    (23.89, 11, 23.80, 17.67),
    (35.86, 17, 35.73, 23.07),
    (47.78, 22, 47.62, 27.35),
    (53.78, 25, 53.61, 29.26),
    (59.75, 28, 59.55, 30.79),
];

const WARMUP: Instant = Instant::from_millis(200);
const UNTIL: Instant = Instant::from_millis(5200);

fn goodput(mcs: u8, aggregation: bool) -> (f64, f64) {
    let mut cfg = BssConfig::new(vec![StationConfig::fixed(PhyMode::ht(mcs))]);
    if !aggregation {
        cfg.aggregation = None;
    }
    let mut b = bss(cfg, 1);
    // 1472 B of UDP payload in a 1500-B IP packet.
    let flows = [Flow::new(Port::station(1), Port::AP, 1500)];
    let r = run_saturated(&mut b, &flows, WARMUP, UNTIL);
    assert!(r[0].dropped.is_empty());
    let s = b.stats(Port::station(1));
    assert_eq!(s.exchanges_failed, 0, "a lone station never collides");
    let mpdus_per_exchange = s.mpdus_acked as f64 / s.exchanges_ok as f64;
    (r[0].throughput(1472, UNTIL - WARMUP).as_mbps_f64(), mpdus_per_exchange)
}

fn within(got: f64, reference: f64, tolerance: f64) -> bool {
    ((got - reference) / reference).abs() <= tolerance
}

#[test]
fn single_station_with_ampdu_a14c() {
    for (mcs, &(closed_form, mpdus, ns3, _)) in A14C.iter().enumerate() {
        let (mbps, per_exchange) = goodput(mcs as u8, true);
        println!("MCS {mcs} A-MPDU: {mbps:.2} Mbit/s (reference {closed_form}, ns-3 {ns3}), {per_exchange:.2} MPDUs per A-MPDU");
        assert!(within(mbps, closed_form, 0.01), "MCS {mcs}: {mbps} vs {closed_form}");
        assert!(within(mbps, ns3, 0.01), "MCS {mcs}: {mbps} vs ns-3's {ns3}");
        // Saturated: every A-MPDU but the first few is as long as the limits allow.
        assert!((per_exchange - mpdus as f64).abs() < 0.01, "MCS {mcs}: {per_exchange} MPDUs per A-MPDU");
    }
}

#[test]
fn single_station_without_aggregation_a14c() {
    for (mcs, &(_, _, _, closed_form)) in A14C.iter().enumerate() {
        let (mbps, per_exchange) = goodput(mcs as u8, false);
        println!("MCS {mcs} no aggregation: {mbps:.2} Mbit/s (reference {closed_form})");
        assert!(within(mbps, closed_form, 0.01), "MCS {mcs}: {mbps} vs {closed_form}");
        assert_eq!(per_exchange, 1.0);
    }
}

#[test]
fn goodput_follows_the_exchange_cycle_exactly_enough() {
    // The closed form for MCS 7 without aggregation: 11 776 bits per AIFS 43 + 7.5 × 9 +
    // 228 + 16 + 28 µs = 382.5 µs, 30.787 Mbit/s. Over 5 s (13 000 exchanges) the mean backoff
    // is within a few tenths of a slot of 7.5, so the goodput within 0.2 %.
    let (mbps, _) = goodput(7, false);
    let exact = 11_776.0 / 382.5;
    assert!(within(mbps, exact, 0.002), "{mbps} vs {exact}");
    assert_eq!(UNTIL - WARMUP, Duration::from_secs(5));
}
