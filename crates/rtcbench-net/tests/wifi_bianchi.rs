//! Saturation throughput of n contending stations against Bianchi's model
//! (Bianchi 2000), the two tables `docs/wifi.md` prints under "Validation":
//!
//! * (a) ns-3's reference table for non-QoS 802.11a (`bianchi_11a_difs.txt` and the EIFS column
//!   of `wifi-bianchi.cc`): 1500 B of payload in a 1534-B MPDU, retries without limit, the
//!   ACK at the rate the table names. Our stations use the DCF, as ns-3's do, and the table is
//!   ns-3's variant of the model for that ([`Variant::Ns3Dcf`]).
//! * (b) Bianchi's original model solved for HT MCS 7 (1500 B + 36 B, DIFS, ACK at 24 Mbit/s), with
//!   R = ∞ and R = 7, from Bianchi's original equations. Our stations use EDCA with the DCF's
//!   parameters (AIFSN 2, CW 15-1023): EDCA's decrement at the end of the AIFS counts a busy
//!   period as a slot, which is the original model's chain.
//!
//! First our implementation of the model is checked against both tables; then the simulated BSS
//! is, within ns-3's own validation tolerance of 1.5 % (`wifi-bianchi.cc` maxRelativeError).
//! Each simulated point runs until about 40 000 frames got through (100 s of simulated time at
//! 6 Mbit/s, 15 s at 54), as ns-3 runs 100 s. `every_n_from_5_to_50` (ignored by default; about
//! 10 s in release mode, `cargo test -p rtcbench-net --release --test wifi_bianchi -- --ignored`)
//! runs every n in steps of 5 against the model, with another seed.

mod wifi_support;

use rtcbench_net::radio::wifi::bianchi::{saturation_throughput, Contention, Variant};
use rtcbench_net::radio::wifi::dcf::AcParams;
use rtcbench_net::radio::wifi::phy::{control_response_mode, frame, PhyMode};
use rtcbench_net::radio::wifi::{Band, BssConfig, EdcaParameterSet, Port, StationConfig};
use rtcbench_units::{Bitrate, DataSize, Duration, Instant};
use wifi_support::{bss, run_saturated, Flow};

const SLOT: Duration = Duration::from_micros(9);
const SIFS: Duration = Duration::from_micros(16);
const DIFS: Duration = Duration::from_micros(34);
const PAYLOAD: DataSize = DataSize::bytes(1500);
/// IP packets whose MPDU is the models' 1534 B (non-QoS: + 36 B) and 1536 B (QoS: + 38 B).
const PACKET_11A: u64 = 1498;
const PACKET_HT: u64 = 1498;
const RETRY_FOREVER: u32 = 65_535;

/// Table (a): n → Mbit/s for 6 (ACK 6), 12 (ACK 12), 24 (ACK 24), 54 (ACK 24) Mbit/s, and 54
/// with the EIFS model.
const TABLE_A: [(u32, [f64; 5]); 5] = [
    (5, [4.7087, 8.9515, 16.2470, 29.8324, 29.2861]),
    (10, [4.3453, 8.2901, 15.1426, 28.1519, 27.3763]),
    (20, [3.9899, 7.6319, 14.0072, 26.2925, 25.3325]),
    (30, [3.7824, 7.2447, 13.3288, 25.1434, 24.0944]),
    (50, [3.5071, 6.7278, 12.4144, 23.5618, 22.4162]),
];
const RATES_A: [u8; 4] = [6, 12, 24, 54];

/// Table (b): n → (S with R = ∞, p, S with R = 7), HT MCS 7.
const TABLE_B: [(u32, f64, f64, f64); 6] = [
    (1, 32.13, 0.0, 32.13),
    (2, 33.35, 0.105, 33.35),
    (5, 32.02, 0.272, 32.02),
    (10, 30.14, 0.384, 30.05),
    (20, 28.06, 0.481, 27.70),
    (50, 24.99, 0.595, 23.75),
];

/// One column of table (a) or (b): how the stations are set up and what the model expects.
#[derive(Clone, Copy, Debug)]
struct Column {
    mode: PhyMode,
    /// DCF (802.11a) or EDCA with DCF parameters (HT).
    qos: bool,
    eifs: bool,
    max_attempts: Option<u32>,
}

impl Column {
    fn ofdm(mbps: u8, eifs: bool) -> Self {
        Self { mode: PhyMode::NonHt { mbps }, qos: false, eifs, max_attempts: None }
    }

    fn ht(max_attempts: Option<u32>) -> Self {
        Self { mode: PhyMode::ht(7), qos: true, eifs: false, max_attempts }
    }

    fn mpdu(&self) -> DataSize {
        if self.qos {
            DataSize::bytes(1536)
        } else {
            DataSize::bytes(1534)
        }
    }

    /// The model's throughput for n stations, with T_s and T_c from our airtimes.
    fn model(&self, n: u32) -> (Bitrate, f64) {
        let data = self.mode.ppdu_duration(self.mpdu(), Band::Ghz5);
        let ack = control_response_mode(&self.mode, &[6, 12, 24]).ppdu_duration(frame::ACK, Band::Ghz5);
        let t_s = data + SIFS + ack + DIFS;
        // EIFS model: the others wait EIFS = SIFS + ACK + DIFS after a collision.
        let t_c = if self.eifs { data + DIFS + SIFS + ack } else { data + DIFS };
        let c = Contention { stations: n, cw_min: 15, cw_max: 1023, max_attempts: self.max_attempts };
        let fp = c.solve();
        let variant = if self.qos { Variant::Original } else { Variant::Ns3Dcf };
        (saturation_throughput(&c, fp, SLOT, t_s, t_c, PAYLOAD, variant), fp.p)
    }

    /// The simulated throughput of n saturated stations sending to the AP: the payload of the
    /// model (1500 B) per delivered packet, over about 40 000 deliveries.
    fn simulate(&self, n: u32, seed: u64) -> Bitrate {
        let mut cfg = BssConfig::new(vec![StationConfig::fixed(self.mode); n as usize]);
        cfg.qos = self.qos;
        cfg.aggregation = None;
        cfg.retry_limit = self.max_attempts.unwrap_or(RETRY_FOREVER);
        cfg.eifs_after_collision = self.eifs;
        if self.qos {
            cfg.edca_sta = EdcaParameterSet::uniform(AcParams::legacy_dcf());
            cfg.edca_ap = cfg.edca_sta;
        }
        let packet = if self.qos { PACKET_HT } else { PACKET_11A };
        let flows: Vec<Flow> =
            (1..=n).map(|i| Flow::new(Port::station(i as u16), Port::AP, packet)).collect();
        let (expected, _) = self.model(n);
        let secs = (40_000.0 * PAYLOAD.as_bits() as f64 / expected.as_bps_f64()).ceil() as i64;
        let warmup = Instant::from_secs(1);
        let results = run_saturated(&mut bss(cfg, seed), &flows, warmup, warmup + Duration::from_secs(secs));
        let delivered: u64 = results.iter().map(|r| r.delivered).sum();
        (PAYLOAD * delivered) / Duration::from_secs(secs)
    }
}

fn relative(got: Bitrate, reference: f64) -> f64 {
    (got.as_mbps_f64() - reference) / reference
}

#[test]
fn the_model_reproduces_ns3s_table_a() {
    // Bianchi11a.m picks τ on a grid of 10⁴ points; we solve exactly: within 0.1 %.
    for (n, row) in TABLE_A {
        for (k, &reference) in row.iter().enumerate() {
            let column = if k < 4 { Column::ofdm(RATES_A[k], false) } else { Column::ofdm(54, true) };
            let (s, _) = column.model(n);
            assert!(relative(s, reference).abs() < 0.001, "n {n}, {column:?}: {s} vs {reference}");
        }
    }
}

#[test]
fn the_model_reproduces_table_b() {
    for (n, s_inf, p, s_7) in TABLE_B {
        let (got_inf, got_p) = Column::ht(None).model(n);
        let (got_7, _) = Column::ht(Some(7)).model(n);
        // The reference prints two decimals.
        assert!((got_inf.as_mbps_f64() - s_inf).abs() <= 0.005, "n {n}: {got_inf} vs {s_inf}");
        assert!((got_7.as_mbps_f64() - s_7).abs() <= 0.005, "n {n}: {got_7} vs {s_7}");
        assert!((got_p - p).abs() <= 0.0005, "n {n}: p {got_p} vs {p}");
    }
}

#[test]
fn simulated_dcf_matches_table_a_within_1_5_percent() {
    for (n, row) in TABLE_A {
        for (k, &reference) in row.iter().enumerate() {
            let column = if k < 4 { Column::ofdm(RATES_A[k], false) } else { Column::ofdm(54, true) };
            let s = column.simulate(n, 1);
            let e = relative(s, reference);
            println!(
                "(a) n {n:2} {:>11}: {:.4} Mbit/s vs {reference} ({:+.2} %)",
                label(column),
                s.as_mbps_f64(),
                100.0 * e
            );
            assert!(e.abs() <= 0.015, "n {n}, {column:?}: {s} vs {reference}");
        }
    }
}

#[test]
fn simulated_edca_matches_table_b_within_1_5_percent() {
    for (n, s_inf, _, s_7) in TABLE_B {
        for (column, reference) in [(Column::ht(None), s_inf), (Column::ht(Some(7)), s_7)] {
            let s = column.simulate(n, 1);
            let e = relative(s, reference);
            println!(
                "(b) n {n:2} {:>11}: {:.4} Mbit/s vs {reference} ({:+.2} %)",
                label(column),
                s.as_mbps_f64(),
                100.0 * e
            );
            assert!(e.abs() <= 0.015, "n {n}, {column:?}: {s} vs {reference}");
        }
    }
}

#[test]
#[ignore = "70 simulations: every n from 5 to 50 against the model, ~10 s in release mode"]
fn every_n_from_5_to_50() {
    let columns = [
        Column::ofdm(6, false),
        Column::ofdm(12, false),
        Column::ofdm(24, false),
        Column::ofdm(54, false),
        Column::ofdm(54, true),
        Column::ht(None),
        Column::ht(Some(7)),
    ];
    for column in columns {
        for n in (5..=50).step_by(5) {
            let (model, _) = column.model(n);
            let s = column.simulate(n, 2);
            let e = relative(s, model.as_mbps_f64());
            println!(
                "n {n:2} {:>11}: {:.4} vs model {:.4} ({:+.2} %)",
                label(column),
                s.as_mbps_f64(),
                model.as_mbps_f64(),
                100.0 * e
            );
            assert!(e.abs() <= 0.015, "n {n}, {column:?}");
        }
    }
}

fn label(c: Column) -> String {
    match (c.mode, c.qos) {
        (PhyMode::NonHt { mbps }, _) => format!("11a {mbps}{}", if c.eifs { " EIFS" } else { "" }),
        _ => format!("HT7 R={}", c.max_attempts.map_or("inf".into(), |r| r.to_string())),
    }
}
