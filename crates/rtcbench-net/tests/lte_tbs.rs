//! Transport block sizes and peak rates per bandwidth (TS 36.213 Table 7.1.7.2.1-1 at I_TBS 26,
//! MCS 28): the table's values, and what a cell with one saturated UE at CQI 15 actually sends
//! per TTI, SISO and 2×2 MIMO (two codewords, twice the single-layer TBS).

mod lte_support;

use lte_support::{cell, drive_with, Source, Traffic};
use rtcbench_net::radio::lte::tbs::tbs_bits;
use rtcbench_net::radio::lte::{Bandwidth, CellConfig, Direction, HarqConfig, Port, UeConfig};
use rtcbench_units::Instant;

#[test]
fn peak_tbs_per_bandwidth() {
    // 1.4, 3, 5, 10, 15, 20 MHz: 6, 15, 25, 50, 75, 100 PRB.
    let peaks: Vec<u32> = Bandwidth::ALL.iter().map(|b| tbs_bits(26, b.prb())).collect();
    assert_eq!(peaks, [4392, 11064, 18336, 36696, 55056, 75376]);
}

/// Bits per TTI one saturated UE at CQI 15 gets in each direction, over TTIs 11..=210.
fn measured(bandwidth: Bandwidth, layers: u8) -> (u64, u64) {
    let mut cfg = CellConfig::new(vec![UeConfig::fixed_cqi(15)]);
    cfg.bandwidth = bandwidth;
    cfg.dl_layers = layers;
    cfg.harq = HarqConfig::error_free();
    let mut cell = cell(cfg, 1);
    let sources = [
        Source::new(1, Direction::Downlink, Traffic::Saturate { bytes: 1500, backlog: 100_000 }),
        Source::new(1, Direction::Uplink, Traffic::Saturate { bytes: 1500, backlog: 100_000 }),
    ];
    let mut samples = Vec::new();
    drive_with(&mut cell, &sources, Instant::from_millis(210), &[], |c, now| {
        if now == Instant::from_millis(10) || now == Instant::from_millis(210) {
            samples.push(c.stats(Port::ue(1)));
        }
    });
    let (a, b) = (samples[0], samples[1]);
    let per_tti = |x: u64, y: u64| (y - x) * 8 / 200;
    (
        per_tti(a.dl.new_tb_bytes.as_bytes(), b.dl.new_tb_bytes.as_bytes()),
        per_tti(a.ul.new_tb_bytes.as_bytes(), b.ul.new_tb_bytes.as_bytes()),
    )
}

#[test]
fn a_saturated_ue_gets_the_peak_rate() {
    // The downlink allocates whole RBGs only, as ns-3: 6, 14, 24, 48, 72, 100 PRB; the uplink
    // all PRBs (no PUCCH reservation by default).
    let dl_prb = [6, 14, 24, 48, 72, 100];
    for (b, prb) in Bandwidth::ALL.into_iter().zip(dl_prb) {
        let (siso_dl, ul) = measured(b, 1);
        let (mimo_dl, mimo_ul) = measured(b, 2);
        println!("{} MHz: DL {siso_dl} bit/TTI SISO, {mimo_dl} 2×2; UL {ul}", b.mhz());
        assert_eq!(siso_dl, u64::from(tbs_bits(26, prb)), "{} MHz", b.mhz());
        assert_eq!(mimo_dl, 2 * siso_dl, "{} MHz", b.mhz());
        assert_eq!((ul, mimo_ul), (u64::from(tbs_bits(26, b.prb())), ul), "{} MHz", b.mhz());
    }
    // 5 MHz: 17 568 bit/TTI SISO (ns-3's 2 196 000 B/s), 35 136 with 2×2; 20 MHz 75 376 and
    // 150 752.
    assert_eq!(measured(Bandwidth::Mhz5, 2).0, 35_136);
    assert_eq!(measured(Bandwidth::Mhz20, 2).0, 150_752);
}
