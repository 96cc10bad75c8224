//! The MAC counters a tracer samples ([`NodeStats`], [`Bss::queue_bytes`]), with exact values in
//! scripted scenarios: attempts and retries under a retry limit, an A-MPDU, lifetime drops, full
//! queues at a station and at a relaying AP.
//!
//! Timings at 5 GHz, HT MCS 7, 20 MHz, long GI: a 1500-B packet is a 1538-B MPDU of 228 µs;
//! ten of them in one A-MPDU take 1940 µs.

mod wifi_support;

use rtcbench_net::radio::wifi::phy::PhyMode;
use rtcbench_net::radio::wifi::{
    ApQueueConfig, Bss, BssConfig, ErrorModel, NodeStats, Port, QueueConfig, StationConfig,
};
use rtcbench_net::DropReason;
use rtcbench_units::{DataSize, Duration, Instant};
use wifi_support::{bss, Pkt};

fn us(v: i64) -> Instant {
    Instant::from_micros(v)
}

fn pkt(flow: usize, seq: u64) -> Pkt {
    Pkt { flow, seq, size: DataSize::bytes(1500), dscp: 0, sent: Instant::ZERO }
}

fn plain(n: usize) -> BssConfig {
    let mut cfg = BssConfig::new(vec![StationConfig::fixed(PhyMode::ht(7)); n]);
    cfg.aggregation = None;
    cfg
}

/// Runs until nothing is left to do or `until`; returns the drops.
fn drain(b: &mut Bss<Pkt>, until: Instant) -> Vec<(u16, u64, DropReason)> {
    let mut dropped = Vec::new();
    while let Some(t) = b.poll_timeout().filter(|&t| t <= until) {
        b.on_timeout(t);
        while let Some((port, p, reason)) = b.poll_drop() {
            dropped.push((port.0, p.seq, reason));
        }
        while b.poll_output(t).is_some() {}
    }
    dropped
}

#[test]
fn attempts_retries_and_a_full_queue() {
    let mut cfg = plain(1);
    cfg.stations[0].errors = ErrorModel::Fixed { per: 1.0 };
    cfg.retry_limit = 2;
    cfg.sta_queue = QueueConfig { packets: 3, max_delay: None };
    let mut b = bss(cfg, 1);
    let sta = Port::station(1);
    for seq in 0..3 {
        b.push(us(1000), sta, Port::AP, pkt(0, seq)).unwrap();
    }
    assert_eq!(b.push(us(1000), sta, Port::AP, pkt(0, 3)).unwrap_err().1, DropReason::QueueFull);
    assert_eq!(b.queue_bytes(sta), DataSize::bytes(3 * 1500));
    let dropped = drain(&mut b, us(1_000_000));
    assert_eq!(dropped.len(), 3);
    // Every packet: two attempts, both lost; nothing on air from the AP.
    let expected = NodeStats {
        ppdus: 6,
        airtime: Duration::from_micros(6 * 228),
        exchanges_ok: 0,
        exchanges_failed: 6,
        mpdus_acked: 0,
        mpdus_retry_dropped: 3,
        data_ppdus: 6,
        data_airtime: Duration::from_micros(6 * 228),
        mpdus_sent: 6,
        mpdu_retries: 3,
        mpdus_lifetime_dropped: 0,
        queue_full_drops: 1,
        packets_queued: 3,
        acked_bytes: DataSize::ZERO,
    };
    assert_eq!(b.stats(sta), expected);
    assert_eq!(b.stats(Port::AP), NodeStats::default());
    assert_eq!(b.queue_bytes(sta), DataSize::ZERO);
}

#[test]
fn an_a_mpdu_counts_one_ppdu_and_its_mpdus() {
    let mut b = bss(BssConfig::new(vec![StationConfig::fixed(PhyMode::ht(7))]), 1);
    let sta = Port::station(1);
    for seq in 0..10 {
        b.push(Instant::ZERO, sta, Port::AP, pkt(0, seq)).unwrap();
    }
    assert_eq!(b.queue_bytes(sta), DataSize::bytes(15_000));
    // In flight (43-1983 µs) the packets still count as queued.
    drain(&mut b, us(1000));
    assert_eq!(b.queue_bytes(sta), DataSize::bytes(15_000));
    assert!(drain(&mut b, us(100_000)).is_empty());
    let s = b.stats(sta);
    assert_eq!((s.data_ppdus, s.mpdus_sent, s.mpdu_retries, s.mpdus_acked), (1, 10, 0, 10));
    assert_eq!((s.data_airtime, s.acked_bytes), (Duration::from_micros(1940), DataSize::bytes(15_000)));
    assert_eq!(b.queue_bytes(sta), DataSize::ZERO);
    // The AP sent one BlockAck (32 µs at 24 Mbit/s) and no data.
    let ap = b.stats(Port::AP);
    assert_eq!((ap.ppdus, ap.data_ppdus, ap.airtime), (1, 0, Duration::from_micros(32)));
}

#[test]
fn lifetime_drops_are_counted() {
    let mut cfg = BssConfig::new(vec![StationConfig::fixed(PhyMode::ht(7))]);
    cfg.stations[0].errors = ErrorModel::Fixed { per: 1.0 };
    cfg.ampdu_retry_limit = None;
    cfg.sta_queue = QueueConfig { packets: 1000, max_delay: Some(Duration::from_millis(50)) };
    let mut b = bss(cfg, 1);
    for seq in 0..3 {
        b.push(us(1000), Port::station(1), Port::AP, pkt(0, seq)).unwrap();
    }
    let dropped = drain(&mut b, us(1_000_000));
    assert_eq!(dropped, (0..3).map(|seq| (1, seq, DropReason::Lifetime)).collect::<Vec<_>>());
    let s = b.stats(Port::station(1));
    assert_eq!((s.mpdus_lifetime_dropped, s.mpdus_retry_dropped), (3, 0));
    // Each A-MPDU carried the three MPDUs: all but the first PPDU's were retransmissions.
    assert_eq!((s.mpdus_sent, s.mpdu_retries), (3 * s.data_ppdus, 3 * (s.data_ppdus - 1)));
    assert_eq!(b.queue_bytes(Port::station(1)), DataSize::ZERO);
}

#[test]
fn a_relayed_packet_the_ap_has_no_room_for() {
    let mut cfg = plain(2);
    cfg.ap_queue = ApQueueConfig::SharedPerAc { packets: 1, max_delay: None };
    let mut b = bss(cfg, 1);
    // Station 1 sends to station 2 (on air 1006-1234 µs); the AP's own packet for station 2
    // arrives meanwhile and fills its queue, so the relayed one finds no room.
    b.push(us(1000), Port::station(1), Port::station(2), pkt(0, 0)).unwrap();
    drain(&mut b, us(1100));
    b.push(us(1100), Port::AP, Port::station(2), pkt(1, 0)).unwrap();
    assert_eq!(b.queue_bytes(Port::AP), DataSize::bytes(1500));
    let dropped = drain(&mut b, us(1234));
    assert_eq!(dropped, [(0, 0, DropReason::QueueFull)]);
    let ap = b.stats(Port::AP);
    assert_eq!((ap.queue_full_drops, ap.packets_queued), (1, 1));
    // The station's MPDU was acknowledged all the same: it reached the AP.
    drain(&mut b, us(100_000));
    assert_eq!(b.stats(Port::station(1)).mpdus_acked, 1);
    assert_eq!(b.stats(Port::AP).mpdus_acked, 1);
    assert_eq!(b.queue_bytes(Port::AP), DataSize::ZERO);
}
