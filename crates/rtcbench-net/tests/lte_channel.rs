//! Channel quality through the cell: what a saturated UE sends per TTI follows its CQI source
//! (fixed, traced, SINR through the Piro rule), the reporting period and delay, the uplink MCS
//! cap and PUCCH reservation; and a delivery waits the configured core delay.

mod lte_support;

use lte_support::{cell, drive, drive_with, Source, Traffic};
use rtcbench_net::radio::lte::tbs::tbs_bits;
use rtcbench_net::radio::lte::{
    CellConfig, ChannelQuality, CqiReporting, CqiStep, Direction, HarqConfig, Port, SinrStep, UeConfig,
};
use rtcbench_units::{Duration, Instant};

/// Bits each direction carried in each TTI 1..=ms of a single saturated UE.
fn bits_per_tti(cfg: CellConfig, ms: i64) -> (Vec<u64>, Vec<u64>) {
    let mut c = cell(cfg, 1);
    let sources = [
        Source::new(1, Direction::Downlink, Traffic::Saturate { bytes: 1500, backlog: 60_000 }),
        Source::new(1, Direction::Uplink, Traffic::Saturate { bytes: 1500, backlog: 60_000 }),
    ];
    let (mut dl, mut ul, mut last) = (Vec::new(), Vec::new(), None);
    drive_with(&mut c, &sources, Instant::from_millis(ms), &[], |c, _| {
        let s = c.stats(Port::ue(1));
        let now = (s.dl.new_tb_bytes.as_bytes() * 8, s.ul.new_tb_bytes.as_bytes() * 8);
        if let Some((d, u)) = last {
            dl.push(now.0 - d);
            ul.push(now.1 - u);
        }
        last = Some(now);
    });
    (dl, ul)
}

fn error_free(q: ChannelQuality) -> CellConfig {
    let mut cfg = CellConfig::new(vec![UeConfig { dl: q.clone(), ul: q, sr_offset_ttis: None }]);
    cfg.harq = HarqConfig::error_free();
    cfg
}

#[test]
fn an_sinr_maps_to_its_cqi_and_tbs() {
    // 10 dB: CQI 7 (from 9.96 dB), MCS 12, I_TBS 11 both ways: 24 PRB down, 25 up.
    let (dl, ul) = bits_per_tti(error_free(ChannelQuality::Sinr { sinr_db: 10.0 }), 50);
    assert_eq!(dl[20..40], vec![u64::from(tbs_bits(11, 24)); 20][..]);
    assert_eq!(ul[20..40], vec![u64::from(tbs_bits(11, 25)); 20][..]);
    let c = cell(error_free(ChannelQuality::Sinr { sinr_db: 10.0 }), 1);
    let s = c.link_state(Instant::from_millis(3), Port::ue(1), Direction::Downlink);
    assert_eq!((s.cqi, s.mcs, s.i_tbs, s.sinr_db), (7, 12, 11, Some(10.0)));
    // Just below the threshold: CQI 6, MCS 10, I_TBS 9.
    let (dl, _) = bits_per_tti(error_free(ChannelQuality::Sinr { sinr_db: 9.9 }), 30);
    assert_eq!(dl[20], u64::from(tbs_bits(9, 24)));
}

#[test]
fn traces_take_effect_at_the_next_report_after_the_delay() {
    // CQI 15, then 0 (nothing sent) from 40 ms, then 7 from 70.4 ms (an SINR step) with reports
    // every 5 TTIs, 3 TTIs late: the scheduler sees each step from the first TTI whose report
    // (a multiple of 5, at least 3 TTIs old) is at or after it.
    let cqi = ChannelQuality::CqiTrace {
        steps: vec![
            CqiStep { at: Duration::ZERO, cqi: 15 },
            CqiStep { at: Duration::from_millis(40), cqi: 0 },
        ],
    };
    let sinr = ChannelQuality::SinrTrace {
        steps: vec![
            SinrStep { at: Duration::ZERO, sinr_db: 30.0 },
            SinrStep { at: Duration::from_micros(40_000), sinr_db: -10.0 },
            SinrStep { at: Duration::from_micros(70_400), sinr_db: 10.0 },
        ],
    };
    for q in [cqi, sinr] {
        let mut cfg = error_free(q.clone());
        cfg.cqi = CqiReporting { period_ttis: 5, delay_ttis: 3 };
        let (dl, _) = bits_per_tti(cfg, 100);
        // dl[i] is TTI i + 1. Report 40 is used from TTI 43 on; report 75 (after 70.4 ms)
        // from TTI 78.
        let peak = u64::from(tbs_bits(26, 24));
        assert_eq!(dl[41], peak, "{q:?}: TTI 42 uses report 35");
        assert_eq!(dl[42], 0, "{q:?}: TTI 43 uses report 40");
        if let ChannelQuality::SinrTrace { .. } = q {
            assert_eq!(dl[76], 0, "TTI 77 uses report 70, before the step");
            assert_eq!(dl[77], u64::from(tbs_bits(11, 24)), "TTI 78 uses report 75");
        }
    }
}

#[test]
fn the_uplink_mcs_cap_and_pucch_reservation() {
    // A 16-QAM UE (MCS 20, I_TBS 19) on 23 PRB (2 kept for the PUCCH): 9912 bit per TTI.
    let mut cfg = error_free(ChannelQuality::Cqi { cqi: 15 });
    cfg.ul_max_mcs = Some(20);
    cfg.ul_pucch_prb = 2;
    let (dl, ul) = bits_per_tti(cfg, 40);
    assert_eq!(ul[20], 9912);
    assert_eq!(ul[20], u64::from(tbs_bits(19, 23)));
    assert_eq!(dl[20], u64::from(tbs_bits(26, 24)), "the downlink is not capped");
}

#[test]
fn the_core_delay_comes_on_top_of_the_tti() {
    let mut cfg = error_free(ChannelQuality::Cqi { cqi: 15 });
    cfg.core_delay = Duration::from_millis(3);
    let mut c = cell(cfg, 1);
    let (interval, start, stop) =
        (Duration::from_secs(1), Duration::from_micros(500), Duration::from_secs(1));
    let run = drive(
        &mut c,
        &[
            Source::new(1, Direction::Downlink, Traffic::Cbr { bytes: 100, interval, start, stop }),
            Source::new(1, Direction::Uplink, Traffic::Cbr { bytes: 100, interval, start, stop }),
        ],
        Instant::from_millis(50),
    );
    let at: Vec<_> = run.delivered.iter().map(|(t, port, _)| (t.as_micros(), *port)).collect();
    assert_eq!(at, [(5000, Port::ue(1)), (9000, Port::ENB)]);
}
