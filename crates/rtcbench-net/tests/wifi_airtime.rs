//! Frame airtimes and PHY rates against the values `docs/wifi.md` lists
//! ("Validation"), to the microsecond, and the HT rate tables of 802.11-2020 §19.5 to 0.1 Mbit/s.

use rtcbench_net::radio::wifi::phy::{ampdu_length, control_response_mode, frame, Band, PhyMode};
use rtcbench_units::{DataSize, Duration};

const BASIC: [u8; 3] = [6, 12, 24];
const GHZ24: Band = Band::Ghz2_4 { short_slot: true };

fn us(mode: PhyMode, bytes: u64, band: Band) -> i64 {
    mode.ppdu_duration(DataSize::bytes(bytes), band).as_micros()
}

#[test]
fn control_frames_at_basic_rates_a6() {
    let (r24, r6) = (PhyMode::NonHt { mbps: 24 }, PhyMode::NonHt { mbps: 6 });
    // (frame, bytes) → (@24 Mbit/s 5 GHz, @6 Mbit/s 5 GHz, @24 Mbit/s 2.4 GHz)
    let table = [
        (frame::ACK, [28, 44, 34]),
        (frame::CTS, [28, 44, 34]),
        (frame::RTS, [28, 52, 34]),
        (frame::BLOCK_ACK_REQ, [32, 56, 38]),
        (frame::BLOCK_ACK, [32, 68, 38]),
    ];
    for (f, expected) in table {
        let got = [
            us(r24, f.as_bytes(), Band::Ghz5),
            us(r6, f.as_bytes(), Band::Ghz5),
            us(r24, f.as_bytes(), GHZ24),
        ];
        assert_eq!(got, expected, "{f}");
    }
}

#[test]
fn data_frames_a6_worked_examples() {
    // HT MCS 7, 20 MHz, long GI, 5 GHz: 1224 B = 188 µs, a 1538-B MPDU = 228 µs;
    // 2 streams, MCS 15: 136 µs.
    assert_eq!(us(PhyMode::ht(7), 1224, Band::Ghz5), 188);
    assert_eq!(us(PhyMode::ht(7), 1538, Band::Ghz5), 228);
    assert_eq!(us(PhyMode::ht(15), 1538, Band::Ghz5), 136);
    // A 1472-B UDP payload is a 1538-B MPDU: + UDP 8, IPv4 20, LLC/SNAP 8, QoS header 26, FCS 4.
    assert_eq!(DataSize::bytes(1472 + 28) + frame::QOS_DATA_OVERHEAD, DataSize::bytes(1538));
    // MMSys'15's cycle T(1224) = DATA + SIFS + ACK + DIFS = 188 + 16 + 28 + 34 = 266 µs by these
    // formulas (the paper rounds to 0.25 ms).
    let ack = control_response_mode(&PhyMode::ht(7), &BASIC).ppdu_duration(frame::ACK, Band::Ghz5);
    assert_eq!(us(PhyMode::ht(7), 1224, Band::Ghz5) + 16 + ack.as_micros() + 34, 266);
}

#[test]
fn preambles_a6() {
    let ht = |mcs| PhyMode::ht(mcs).preamble().as_micros();
    assert_eq!([ht(7), ht(15), ht(23), ht(31)], [36, 40, 48, 48]);
    assert_eq!(PhyMode::NonHt { mbps: 54 }.preamble(), Duration::from_micros(20));
    // VHT-SIG-B included (802.11-2020 §21.3.8.3.6; ns-3 would give 36 µs).
    let vht = PhyMode::Vht { mcs: 0, nss: 1, width_mhz: 80, short_gi: false };
    assert_eq!(vht.preamble(), Duration::from_micros(40));
}

#[test]
fn control_responses_use_the_highest_basic_rate_not_above_the_reference_rate() {
    let rate = |mode: PhyMode| match control_response_mode(&mode, &BASIC) {
        PhyMode::NonHt { mbps } => mbps,
        other => panic!("{other:?}"),
    };
    // MCS 0..7 have non-HT reference rates 6, 12, 18, 24, 36, 48, 54, 54.
    assert_eq!((0..8).map(|m| rate(PhyMode::ht(m))).collect::<Vec<_>>(), [6, 12, 12, 24, 24, 24, 24, 24]);
    assert_eq!(rate(PhyMode::ht(15)), 24);
    assert_eq!(rate(PhyMode::NonHt { mbps: 9 }), 6);
}

#[test]
fn ht_rates_a5() {
    // Mbit/s per MCS 0-7 (1 stream) and 8-15 (2 streams): 20 MHz long GI, 20 short, 40 long,
    // 40 short, as 802.11-2020 tabulates them (to 0.1).
    let table: [[f64; 8]; 8] = [
        [6.5, 7.2, 13.5, 15.0, 13.0, 14.4, 27.0, 30.0],
        [13.0, 14.4, 27.0, 30.0, 26.0, 28.9, 54.0, 60.0],
        [19.5, 21.7, 40.5, 45.0, 39.0, 43.3, 81.0, 90.0],
        [26.0, 28.9, 54.0, 60.0, 52.0, 57.8, 108.0, 120.0],
        [39.0, 43.3, 81.0, 90.0, 78.0, 86.7, 162.0, 180.0],
        [52.0, 57.8, 108.0, 120.0, 104.0, 115.6, 216.0, 240.0],
        [58.5, 65.0, 121.5, 135.0, 117.0, 130.0, 243.0, 270.0],
        [65.0, 72.2, 135.0, 150.0, 130.0, 144.4, 270.0, 300.0],
    ];
    for (mcs, row) in table.iter().enumerate() {
        for (k, &expected) in row.iter().enumerate() {
            let mode = PhyMode::Ht {
                mcs: mcs as u8 + if k >= 4 { 8 } else { 0 },
                width_mhz: if k % 4 >= 2 { 40 } else { 20 },
                short_gi: k % 2 == 1,
            };
            let got = mode.rate().as_mbps_f64();
            assert!((got - expected).abs() < 0.051, "{mode:?}: {got} vs {expected}");
        }
    }
    // VHT, 1 stream, 80 MHz, MCS 9: 390 / 433.3 Mbit/s.
    let vht = |short_gi| PhyMode::Vht { mcs: 9, nss: 1, width_mhz: 80, short_gi }.rate().as_mbps_f64();
    assert!((vht(false) - 390.0).abs() < 1e-9 && (vht(true) - 433.3).abs() < 0.05);
}

#[test]
fn ampdu_sizes_a14c() {
    // How many 1538-B MPDUs one A-MPDU takes at each MCS before aPPDUMaxTime (5.484 ms) or the
    // 65 535-B limit stops it: the MPDU counts of the saturation closed form.
    let expected = [2, 5, 8, 11, 17, 22, 25, 28];
    for (mcs, &n) in expected.iter().enumerate() {
        let mode = PhyMode::ht(mcs as u8);
        let fits = |k: usize| {
            let len = ampdu_length(vec![DataSize::bytes(1538); k]);
            len.as_bytes() <= 65_535 && mode.ppdu_duration(len, Band::Ghz5).as_micros() <= 5484
        };
        assert!(fits(n) && !fits(n + 1), "MCS {mcs}: {n} MPDUs");
    }
}
