//! Tests of `scream2`: each equation of draft-ietf-ccwg-rfc8298bis-screamv2-01 tick by tick
//! against values computed by hand from the draft, the `Controller` surface, and a closed loop
//! against the authors' L4S rate relation.

use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

use super::config::{Mode, Scream2Config};
use super::media_rate::MediaRateControl;
use super::network_cc::{IncreaseInput, L4sAlpha, QueueDelayAverage, ReductionInput, RefWindow};
use super::*;
use crate::feedback::{Ecn, PacketResult};

fn ms(v: i64) -> Duration {
    Duration::from_millis(v)
}
fn at(v: i64) -> Instant {
    Instant::from_millis(v)
}
fn bytes(v: u64) -> DataSize {
    DataSize::bytes(v)
}
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}
fn cfg(mode: Mode) -> Scream2Config {
    Scream2Config { mode, ..Scream2Config::default() }
}

// ---- §4.2.1.3 l4s_alpha ----

#[test]
fn l4s_alpha_is_a_fast_attack_slow_decay_ewma_updated_every_10_ms() {
    let mut a = L4sAlpha::new(&Scream2Config::default(), at(0));
    let s_rtt = Some(ms(50));
    // 5 ms after the last update: counted, not yet averaged (min(10 ms, s_rtt) = 10 ms).
    a.on_ack(at(5), 4, 1, s_rtt);
    assert_eq!(a.get(), 0.0);
    // 10 ms: fraction 2/8 = 0.25 ≥ 0 → alpha = 1/8 · 0.25 = 0.03125.
    a.on_ack(at(10), 4, 1, s_rtt);
    assert!(close(a.get(), 0.03125));
    assert!(close(a.last_fraction_marked(), 0.25));
    // 20 ms: fraction 0 < alpha → alpha · (1 − 1/128) = 0.031005859375.
    a.on_ack(at(20), 10, 0, s_rtt);
    assert!(close(a.get(), 0.031_005_859_375));
    // 30 ms: fraction 1 → 1/8 + 7/8 · 0.031005859375 = 0.152130126953125.
    a.on_ack(at(30), 2, 2, s_rtt);
    assert!(close(a.get(), 0.152_130_126_953_125));
    // s_rtt 4 ms < 10 ms: the interval is s_rtt. 34 ms: fraction 1/2 ≥ alpha →
    // 0.0625 + 7/8 · 0.152130126953125 = 0.195613861083984375.
    a.on_ack(at(34), 2, 1, Some(ms(4)));
    assert!(close(a.get(), 0.0625 + 0.875 * 0.152_130_126_953_125));
}

// ---- §4.2.1.4 qdelay_avg and ref_wnd_delay_scale ----

#[test]
fn qdelay_avg_attacks_slowly_and_decays_at_once() {
    let mut q = QueueDelayAverage::new(&Scream2Config::default(), at(0));
    let (s_rtt, v) = (Some(ms(100)), ms(25));
    // Updated every min(VIRTUAL_RTT, s_rtt) = 25 ms: 40 ms at 25 ms → 1/4 · 40 = 10 ms.
    q.update(at(25), ms(40), s_rtt, v);
    assert_eq!(q.qdelay_avg(), ms(10));
    q.update(at(40), ms(40), s_rtt, v);
    assert_eq!(q.qdelay_avg(), ms(10), "15 ms after the last update: no update");
    // 1/4 · 40 + 3/4 · 10 = 17.5 ms.
    q.update(at(50), ms(40), s_rtt, v);
    assert_eq!(q.qdelay_avg(), Duration::from_micros(17_500));
    // A sample below the average replaces it.
    q.update(at(75), ms(2), s_rtt, v);
    assert_eq!(q.qdelay_avg(), ms(2));
    assert_eq!(q.ref_wnd_delay_scale(), 1.0, "REDUCE_JITTER off: the scale stays 1");
}

#[test]
fn reduce_jitter_scales_from_the_max_min_queue_delay_difference() {
    let c = Scream2Config { reduce_jitter: true, ..Scream2Config::default() };
    let mut q = QueueDelayAverage::new(&c, at(0));
    // Start: qdelay_max_avg = qdelay_target = 60 ms, qdelay_min_avg = 0.
    // Samples 10 ms and 2 ms: max = min(60, max(10, 60)) = 60, min = min(2, 0) = 0.
    q.on_acked_packet(ms(10), ms(60));
    q.on_acked_packet(ms(2), ms(60));
    // Update at 25 ms: max = 60 · 15/16 = 56.25 ms; min = 0 · 15/16 + 56.25/16 = 3.515625 ms;
    // dev = 1/32 · 52.734375 = 1.64794921875 ms; scale = 1 − 1.64794921875/10 = 0.835205078125.
    q.update(at(25), ms(10), Some(ms(100)), ms(25));
    assert!((q.qdelay_dev_avg().as_secs_f64() - 0.001_647_949_218_75).abs() < 1e-6, "{}", q.qdelay_dev_avg());
    assert!((q.ref_wnd_delay_scale() - 0.835_205_078_125).abs() < 1e-6, "{}", q.ref_wnd_delay_scale());
    // A steady queue: the max decays, the min follows it, the deviation and so the scale
    // recover: after 20 s of 2 ms samples the scale is back at 1.
    let mut t = 25;
    while t < 20_000 {
        t += 25;
        q.on_acked_packet(ms(2), ms(60));
        q.update(at(t), ms(2), Some(ms(100)), ms(25));
    }
    assert!(q.ref_wnd_delay_scale() > 0.99, "{}", q.ref_wnd_delay_scale());
}

// ---- §4.2.2.1 reference window reduction ----

fn reduction(l4s_alpha: f64, qdelay_ms: i64, qdelay_avg_ms: i64, s_rtt_ms: i64) -> ReductionInput {
    ReductionInput {
        l4s_alpha,
        qdelay: ms(qdelay_ms),
        qdelay_avg: ms(qdelay_avg_ms),
        qdelay_target: ms(60),
        s_rtt: Some(ms(s_rtt_ms)),
        ref_wnd_delay_scale: 1.0,
        max_bytes_in_flight_prev: bytes(15_000),
    }
}

fn window(mode: Mode, ref_wnd: f64, ref_wnd_i: f64) -> RefWindow {
    let mut w = RefWindow::new(&cfg(mode), at(0));
    // Last congestion and reaction at 9 s; "now" in these tests is 10 s.
    w.set_for_test(ref_wnd, ref_wnd_i, at(9000), at(9000));
    w
}

#[test]
fn l4s_ce_backs_off_by_alpha_over_two_scaled_for_rtt() {
    // Far from ref_wnd_i: scl = ((20000 − 10000)/10000 · 8)^2 = 64 → 1.
    let mut w = window(Mode::L4s, 20_000.0, 10_000.0);
    assert_eq!(w.scl(), 1.0);
    w.on_signals(false, true);
    // backoff = alpha/2 / max(1, s_rtt/VIRTUAL_RTT) = 0.4/2 / (100/25) = 0.05;
    // qdelay 30 ms ≥ target/4 = 15 ms: no scl scaling. 20000 · 0.95 = 19000.
    let r = w.reduce(at(10_000), w.scl(), &reduction(0.4, 30, 0, 100));
    assert!(r.ce && !r.loss && !r.virtual_ce);
    assert!(close(w.ref_wnd_bytes(), 19_000.0));
    assert!(close(w.last_backoff(), 0.05));
    assert_eq!(w.ref_wnd_i(), 20_000.0, "ref_wnd_i takes ref_wnd at the first congestion after growth");
    // Within min(VIRTUAL_RTT, s_rtt) = 25 ms of that reaction: no further reduction.
    w.on_signals(false, true);
    let r = w.reduce(at(10_020), w.scl(), &reduction(0.4, 30, 0, 100));
    assert_eq!(r, network_cc::Reaction::default());
    assert!(close(w.ref_wnd_bytes(), 19_000.0));
    // 25 ms later, and close to ref_wnd_i with a low qdelay: scl = ((19000 − 20000)/20000 · 8)^2
    // = 0.16; backoff = 0.05 · max(0.25, 0.16) · max(0.25, 1) = 0.0125 → 19000 · 0.9875 = 18762.5.
    let scl = w.scl();
    assert!(close(scl, 0.16));
    let r = w.reduce(at(10_025), scl, &reduction(0.4, 10, 0, 100));
    assert!(r.ce);
    assert!(close(w.ref_wnd_bytes(), 18_762.5), "{}", w.ref_wnd_bytes());
}

#[test]
fn l4s_ce_after_a_long_uncongested_time_first_limits_to_the_last_bytes_in_flight() {
    // Last reaction at 9 s; at 20 s that is 11 s > 100 · max(25 ms, 100 ms) = 10 s:
    // ref_wnd = min(40000, max_bytes_in_flight_prev 15000) = 15000, then · (1 − 0.05) = 14250.
    let mut w = window(Mode::L4s, 40_000.0, 10_000.0);
    w.on_signals(false, true);
    w.reduce(at(20_000), w.scl(), &reduction(0.4, 30, 0, 100));
    assert!(close(w.ref_wnd_bytes(), 14_250.0), "{}", w.ref_wnd_bytes());
}

#[test]
fn classic_ce_scales_by_beta_ecn_and_loss_by_beta_loss_first() {
    let mut w = window(Mode::ClassicEcn, 20_000.0, 10_000.0);
    w.on_signals(false, true);
    assert!(w.reduce(at(10_000), w.scl(), &reduction(0.4, 30, 0, 100)).ce);
    assert!(close(w.ref_wnd_bytes(), 16_000.0), "BETA_ECN = 0.8");
    // Loss and CE in the same interval: loss wins (is_loss_t, else is_ce_t).
    w.on_signals(true, true);
    let r = w.reduce(at(10_100), w.scl(), &reduction(0.4, 30, 0, 100));
    assert!(r.loss && !r.ce);
    assert!(close(w.ref_wnd_bytes(), 11_200.0), "BETA_LOSS = 0.7");
    // Never below MIN_REF_WND.
    let mut w = window(Mode::Delay, 3500.0, 1000.0);
    w.on_signals(true, false);
    w.reduce(at(10_000), w.scl(), &reduction(0.0, 0, 0, 100));
    assert!(close(w.ref_wnd_bytes(), 3000.0));
}

#[test]
fn virtual_l4s_marking_backs_off_by_the_queue_delay_beyond_half_the_target() {
    // qdelay_avg 45 ms, target 60 ms: l4s_alpha_v = (45 − 30)/30 = 0.5; backoff = 0.5/2 /
    // max(1, 50/25) = 0.125 → 20000 · 0.875 = 17500. Delay mode: the same as with L4S.
    for mode in [Mode::Delay, Mode::L4s] {
        let mut w = window(mode, 20_000.0, 10_000.0);
        let r = w.reduce(at(10_000), w.scl(), &reduction(0.0, 45, 45, 50));
        assert!(r.virtual_ce && !r.ce);
        assert!(close(w.l4s_alpha_v(), 0.5));
        assert!(close(w.ref_wnd_bytes(), 17_500.0), "{mode:?}: {}", w.ref_wnd_bytes());
    }
    // qdelay_avg at or below target/2: nothing; above the target: alpha_v = 1 → backoff 0.5/2.
    let mut w = window(Mode::Delay, 20_000.0, 10_000.0);
    assert!(!w.reduce(at(10_000), w.scl(), &reduction(0.0, 30, 30, 50)).any());
    w.reduce(at(10_000), w.scl(), &reduction(0.0, 90, 90, 50));
    assert!(close(w.ref_wnd_bytes(), 15_000.0));
}

// ---- §4.2.2.2 reference window increase ----

fn increase(acked: u64, acked_ce: u64, s_rtt_ms: i64, max_bif: u64) -> IncreaseInput {
    IncreaseInput {
        bytes_newly_acked: bytes(acked),
        bytes_newly_acked_ce: bytes(acked_ce),
        s_rtt: Some(ms(s_rtt_ms)),
        ref_wnd_delay_scale: 1.0,
        max_bytes_in_flight: bytes(max_bif),
        max_bytes_in_flight_prev: bytes(13_000),
        below_max_rate: true,
    }
}

#[test]
fn increase_is_acked_bytes_times_mss_over_ref_wnd_scaled_by_post_congestion_and_mul_factor() {
    // ref_wnd 20000, far from ref_wnd_i (scl 1), last congestion at 9 s, now 14 s.
    // increment = (5000 − 1000) · MSS/ref_wnd (0.05) = 200; · min(1, 100/25) · scl 1 · scale 1;
    // ref_wnd_scale_factor = 1 + 0.02 · 20000/1000 = 1.4; post_congestion_scale =
    // (14 − 9)/(100 · max(25 ms, 100 ms)) = 0.5 → factor 1 + 0.4 · 0.5 · 1 = 1.2 → 240.
    let mut w = window(Mode::L4s, 20_000.0, 10_000.0);
    w.increase(at(14_000), w.scl(), &increase(5000, 1000, 100, 14_000));
    assert!(close(w.ref_wnd_bytes(), 20_240.0), "{}", w.ref_wnd_bytes());
    // Right after congestion (post 0): additive, 4000 · 1000/20240 = 197.628...
    let mut w = window(Mode::L4s, 20_240.0, 10_000.0);
    w.set_for_test(20_240.0, 10_000.0, at(14_000), at(14_000));
    w.increase(at(14_000), w.scl(), &increase(5000, 1000, 100, 14_000));
    assert!(close(w.ref_wnd_bytes(), 20_240.0 + 4000.0 * 1000.0 / 20_240.0));
    // s_rtt 10 ms < VIRTUAL_RTT: · 10/25 = 0.4; close to ref_wnd_i (scl = ((20000 − 19500)/19500
    // · 8)^2 = 0.042 → 0.1): · max(0.25, 0.1) and factor 1 + 0.4 · 1 · 0.1 = 1.04 (post: 5 s over
    // 100 · 25 ms = 2.5 s → 1). 200 · 0.4 · 0.25 · 1.04 = 20.8.
    let mut w = window(Mode::L4s, 20_000.0, 19_500.0);
    w.increase(at(14_000), w.scl(), &increase(5000, 1000, 10, 14_000));
    assert!(close(w.ref_wnd_bytes(), 20_020.8), "{}", w.ref_wnd_bytes());
}

#[test]
fn increase_stops_beyond_the_bytes_in_flight_slack_and_at_the_max_rate() {
    // MSS + max(12000, 13000) · 1.5 = 20500 < 20240? no: 20240 ≤ 20500 grows ...
    let mut w = window(Mode::L4s, 20_000.0, 10_000.0);
    w.increase(at(14_000), w.scl(), &increase(5000, 1000, 100, 12_000));
    assert!(close(w.ref_wnd_bytes(), 20_240.0));
    // ... but with max in flight 12000 and prev 12000: 1000 + 18000 = 19000 < 20240: held.
    let mut w = window(Mode::L4s, 20_000.0, 10_000.0);
    let held = IncreaseInput { max_bytes_in_flight_prev: bytes(12_000), ..increase(5000, 1000, 100, 12_000) };
    w.increase(at(14_000), w.scl(), &held);
    assert_eq!(w.ref_wnd_bytes(), 20_000.0);
    // At TARGET_BITRATE_MAX: held.
    let at_max = IncreaseInput { below_max_rate: false, ..increase(5000, 1000, 100, 14_000) };
    w.increase(at(14_000), w.scl(), &at_max);
    assert_eq!(w.ref_wnd_bytes(), 20_000.0);
}

// ---- §4.3 send window and pacing ----

#[test]
fn send_window_is_ref_wnd_times_overhead_minus_bytes_in_flight() {
    let c = Scream2Config::default();
    assert_eq!(transmission::ref_wnd_overhead(&c, 1.0), 3.0);
    assert_eq!(transmission::ref_wnd_overhead(&c, 0.0), 1.5);
    assert_eq!(transmission::ref_wnd_overhead(&c, 0.5), 2.25);
    assert_eq!(transmission::send_window(bytes(10_000), 3.0, bytes(25_000)), bytes(5000));
    assert_eq!(transmission::send_window(bytes(10_000), 2.25, bytes(25_000)), DataSize::ZERO);
    assert_eq!(transmission::send_window_limit(bytes(10_000), 2.25), bytes(22_500));
}

#[test]
fn pacing_has_headroom_and_relaxes_near_the_max_rate() {
    let c = Scream2Config::default();
    let max = Bitrate::mbps(3);
    // Nominal 1/3 < 0.8: no relaxing; 1 Mbit/s · 1.5.
    assert_eq!(transmission::pace_bitrate(&c, Bitrate::mbps(1), max), Bitrate::kbps(1500));
    // Nominal 0.9: scale = 1 − (0.9 − 0.8)/0.2 = 0.5 → 2.7 · 1.5 / 0.5 = 8.1 Mbit/s.
    let p = transmission::pace_bitrate(&c, Bitrate::kbps(2700), max);
    assert!((p.as_bps_f64() - 8.1e6).abs() < 1.0, "{p}");
    // At the max: scale 0 → 1/MAX_RELAXED_PACING_FACTOR → 3 · 1.5 · 4 = 18 Mbit/s.
    assert_eq!(transmission::pace_bitrate(&c, max, max), Bitrate::mbps(18));
    // Below RATE_PACE_MIN: 50 kbit/s · 1.5.
    assert_eq!(transmission::pace_bitrate(&c, Bitrate::kbps(30), max), Bitrate::kbps(75));
    // t_pace = 1000 B · 8 / 1.5 Mbit/s = 5.333 ms (rounded up to the microsecond).
    assert_eq!(
        crate::scream::network_cc::t_pace(bytes(1000), Bitrate::kbps(1500)),
        Duration::from_micros(5334)
    );
}

// ---- §4.4 media rate control ----

#[test]
fn target_is_k_times_8_ref_wnd_over_s_rtt() {
    let c = Scream2Config::default();
    let mut m = MediaRateControl::new(&c, Bitrate::kbps(100), Bitrate::mbps(10), Bitrate::mbps(1));
    // No s_rtt: the start rate stays.
    m.update(bytes(20_000), 0.05, None);
    assert_eq!(m.target_bitrate(), Bitrate::mbps(1));
    // ref_wnd 20000 (ratio 0.05 → no small-window term): k = 1000/1020 / 1.2 = 0.81699...;
    // target = k · 8 · 20000 / 0.1 s = 1 307 189.5 bit/s.
    let k = 1000.0 / 1020.0 / 1.2;
    assert!(close(m.k(0.05), k));
    m.update(bytes(20_000), 0.05, Some(ms(100)));
    assert!((m.target_bitrate().as_bps_f64() - k * 1.6e6).abs() <= 1.0, "{}", m.target_bitrate());
    // ref_wnd 4000 (ratio 0.25): × (1 − min(0.2, 0.25 − 0.1)) = 0.85.
    assert!(close(m.k(0.25), 0.85 * k));
    // ref_wnd 1000 (ratio 1): × (1 − 0.2) = 0.8.
    assert!(close(m.k(1.0), 0.8 * k));
    // Clamped to [TARGET_BITRATE_MIN, MAX].
    m.update(bytes(3000), 0.33, Some(Duration::from_secs(1)));
    assert_eq!(m.target_bitrate(), Bitrate::kbps(100));
    m.update(bytes(1_000_000), 0.001, Some(ms(10)));
    assert_eq!(m.target_bitrate(), Bitrate::mbps(10));
}

#[test]
fn rate_adjust_factor_integrates_media_queue_delay_and_frame_size_dev_large_frames() {
    let c = Scream2Config::default();
    let mut m = MediaRateControl::new(&c, Bitrate::kbps(100), Bitrate::mbps(10), Bitrate::mbps(1));
    // Frames every 20 ms keep frame_period at its 20 ms start.
    m.on_send_queue(ms(25));
    // error = (25 − 20/4)/20 = 1 → rate_adjust_factor = 1/16. Nominal frame = 1 Mbit/s · 20 ms / 8
    // = 2500 B; a 5000 B frame deviates by 1 → frame_size_dev = 1/64.
    m.on_media_frame(at(0), bytes(5000));
    assert!(close(m.rate_adjust_factor(), 0.0625));
    assert!(close(m.frame_size_dev(), 1.0 / 64.0));
    // A short queue (0 ms): error = −0.25 → 0.0625 − 0.015625 = 0.046875. A small frame
    // deviates by max(0, ...) = 0 → frame_size_dev · 63/64.
    m.on_send_queue(Duration::ZERO);
    m.on_media_frame(at(20), bytes(1000));
    assert_eq!(m.frame_period(), ms(20));
    assert!(close(m.rate_adjust_factor(), 0.046_875));
    assert!(close(m.frame_size_dev(), 63.0 / 64.0 / 64.0));
    // k uses both: 1000/1020 / (1.2 + 0.046875 + 0.015380859375).
    assert!(close(m.k(0.05), 1000.0 / 1020.0 / (1.2 + 0.046_875 + 63.0 / 4096.0)));
    // Capped: rate_adjust_factor ≤ 0.5, frame_size_dev ≤ 0.2.
    m.on_send_queue(Duration::from_secs(1));
    for i in 0..400 {
        m.on_media_frame(at(40 + 20 * i), bytes(100_000));
    }
    assert_eq!((m.rate_adjust_factor(), m.frame_size_dev()), (0.5, 0.2));
    // The frame period follows the frames' spacing (33 ms at 30 frames/s).
    for i in 0..200 {
        m.on_media_frame(at(10_000 + 33 * i), bytes(1000));
    }
    assert!((m.frame_period().as_secs_f64() - 0.033).abs() < 1e-4, "{}", m.frame_period());
}

// ---- the Controller surface ----

fn scream2(mode: Mode) -> Scream2 {
    Scream2::new(cfg(mode), Bitrate::kbps(100), Bitrate::mbps(3), Bitrate::kbps(300), Instant::ZERO)
}

#[test]
fn metric_names_are_stable_and_typed() {
    let s = scream2(Mode::L4s);
    let m = s.metrics();
    let names: Vec<&str> = m.values.iter().map(|(n, _)| *n).collect();
    for name in [
        "ref_wnd",
        "bytes_in_flight",
        "send_window",
        "l4s_alpha",
        "l4s_alpha_v",
        "qdelay_avg",
        "qdelay_target",
        "media_rate",
        "pacing",
        "srtt",
        "rate_adjust_factor",
        "ce_packets",
        "lost_packets",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    assert_eq!(m.values[0].1, Metric::Size(Some(bytes(3000))), "ref_wnd = MIN_REF_WND");
    assert!(m.values.contains(&("mode", Metric::State("l4s"))));
    assert!(m.values.contains(&("qdelay_target", Metric::Time(Some(ms(60))))));
    assert_eq!(s.metrics().values.len(), m.values.len());
}

#[test]
fn initial_window_and_pacing() {
    let s = scream2(Mode::Delay);
    // MIN_REF_WND · REF_WND_OVERHEAD_MAX (ref_wnd_delay_scale = 1).
    assert_eq!(s.congestion_window(), Some(bytes(9000)));
    assert_eq!(s.send_window(), bytes(9000));
    // The 300 kbit/s start rate · 1.5.
    assert_eq!(s.pacing_rate(), Some(Bitrate::kbps(450)));
    assert_eq!(s.poll_timeout(), None, "nothing in flight, nothing to wait for");
}

/// One feedback per call, packets `seqs` sent at `sent` and received at `sent + owd`, the
/// packets in `ce` marked.
fn ack(s: &mut Scream2, now: i64, seqs: std::ops::Range<i64>, owd: i64, ce: &[i64]) {
    let packets = seqs
        .map(|seq| PacketResult {
            seq,
            size: bytes(1000),
            sent_at: at(seq),
            arrival: Some(at(seq + owd)),
            ecn: if ce.contains(&seq) { Ecn::Ce } else { Ecn::Ect1 },
            is_audio: false,
            probe: None,
        })
        .collect();
    s.on_feedback(at(now), &FeedbackReport { packets, ..FeedbackReport::default() });
}

fn send(s: &mut Scream2, seqs: std::ops::Range<i64>) {
    for seq in seqs {
        let pkt = SentPacket {
            seq,
            size: bytes(1000),
            sent_at: at(seq),
            is_audio: false,
            probe: None,
            data_in_flight: DataSize::ZERO,
        };
        s.on_packet_sent(at(seq), &pkt);
    }
}

#[test]
fn feedback_drives_alpha_ref_wnd_and_the_target_in_the_drafts_order() {
    let mut s = scream2(Mode::L4s);
    send(&mut s, 0..8);
    // Packets 0..4 acked at 50 ms (one way 25 ms): s_rtt = 50 − 3 = 47 ms; 4000 B newly acked,
    // no marks. l4s_alpha: 50 ms ≥ min(10 ms, s_rtt) → fraction 0 → stays 0. Increase:
    // 4000 · 1000/3000 · min(1, 47/25) · scl 1 · (1 + 0.06 · post (50 ms / 4.7 s)) …
    ack(&mut s, 50, 0..4, 25, &[]);
    assert_eq!(s.network().s_rtt(), Some(ms(47)));
    let post = 0.050 / (100.0 * 0.047);
    let expected = 3000.0 + 4000.0 * 1000.0 / 3000.0 * (1.0 + 0.06 * post);
    assert!(
        close(s.network().window().ref_wnd_bytes(), expected),
        "{}",
        s.network().window().ref_wnd_bytes()
    );
    // Target: k (ratio 1000/4334 → 1 − 0.1307…) · 8 · ref_wnd / 47 ms.
    let ref_wnd = s.network().ref_wnd().as_bytes() as f64;
    let k = (1.0 - (1000.0 / expected - 0.1)) * 1000.0 / 1020.0 / 1.2;
    let target = k * 8.0 * ref_wnd / 0.047;
    assert!((s.target_rate().as_bps_f64() - target).abs() < 1.0, "{} vs {target}", s.target_rate());
    // Packets 4..8 at 60 ms, two CE. s_rtt = 7/8 · 47 + 1/8 · (60 − 7) = 47.75 ms. l4s_alpha
    // first: 10 ms since its last update, fraction 2/4 → 1/8 · 0.5 = 0.0625. Then the CE
    // reaction (60 ms since the start ≥ min(25 ms, s_rtt)): backoff = 0.0625/2 / (47.75/25);
    // qdelay 0 < target/4, scl 1 (ref_wnd_i was 1) and ref_wnd_delay_scale 1 leave it. Then the
    // increase counts only the 2000 unmarked bytes, additively (congestion just now: post 0).
    let before = s.network().window().ref_wnd_bytes();
    ack(&mut s, 60, 4..8, 25, &[5, 6]);
    assert_eq!(s.network().s_rtt(), Some(Duration::from_micros(47_750)));
    assert!(close(s.network().l4s_alpha(), 1.0 / 16.0));
    assert_eq!(s.network().ce_packets(), 2);
    let reduced = before * (1.0 - 0.0625 / 2.0 / (47.75 / 25.0));
    let expected = reduced + 2000.0 * 1000.0 / reduced;
    assert!(
        close(s.network().window().ref_wnd_bytes(), expected),
        "{}",
        s.network().window().ref_wnd_bytes()
    );
    assert_eq!(s.network().window().ref_wnd_i(), before, "the inflection point is the pre-backoff window");
}

#[test]
fn feedback_silence_writes_off_the_flight_and_counts_as_loss() {
    let mut s = scream2(Mode::Delay);
    send(&mut s, 0..5);
    // No s_rtt: the timeout is FEEDBACK_TIMEOUT_MIN = 500 ms after the first send.
    assert_eq!(s.poll_timeout(), Some(at(500)));
    s.on_timeout(at(500));
    assert_eq!(s.bytes_in_flight(), DataSize::ZERO);
    assert_eq!(s.network().lost_packets(), 5);
    // The loss reduces ref_wnd at the next feedback (ref_wnd is updated on feedback):
    // 3000 · BETA_LOSS = 2100 → MIN_REF_WND 3000; then the additive increase for 1000 B acked,
    // 1000 · 1000/3000 (post-congestion scale 0).
    send(&mut s, 5..6);
    ack(&mut s, 600, 5..6, 25, &[]);
    assert!(close(s.network().window().ref_wnd_bytes(), 3000.0 + 1000.0 * 1000.0 / 3000.0));
}

// ---- closed loop: the L4S rate relation ----

/// What a closed-loop run settled at.
#[derive(Debug)]
struct Settled {
    /// Mean target over the second half, bit/s.
    target: f64,
    /// Mean sending rate over the second half, bit/s.
    sent: f64,
    l4s_alpha: f64,
    /// CE marks per RTT seen over the second half.
    marks_per_rtt: f64,
}

/// A greedy sender of 1000-byte (MSS) ECT(1) packets at the pacing rate, limited by the window,
/// whose media always has data at the target (no media queue), over a path with a fixed RTT
/// `rtt` (no bottleneck queue: qdelay 0) that marks every `every`-th packet CE (a deterministic
/// marking probability p = 1/every); RFC 8888-style feedback of every packet every 20 ms.
fn closed_loop(rtt: Duration, every: u64, secs: i64) -> Settled {
    const STEP: Duration = Duration::from_micros(100);
    const FEEDBACK_INTERVAL: Duration = Duration::from_millis(20);
    let one_way = rtt / 2;
    let mut s = Scream2::new(
        cfg(Mode::L4s),
        Bitrate::kbps(100),
        Bitrate::mbps(1000),
        Bitrate::kbps(300),
        Instant::ZERO,
    );
    let mut seq = 0_i64;
    let mut next_send = Instant::ZERO;
    let mut in_network: std::collections::VecDeque<(Instant, PacketResult)> = Default::default();
    let mut received = Vec::new();
    let mut feedback: std::collections::VecDeque<(Instant, FeedbackReport)> = Default::default();
    let mut next_feedback = Instant::ZERO + FEEDBACK_INTERVAL;
    let end = Instant::from_secs(secs);
    let half = Instant::from_secs(secs / 2);
    let (mut target_sum, mut alpha_sum, mut samples) = (0.0, 0.0, 0.0);
    let (mut sent_bytes, mut marks) = (0_u64, 0_u64);
    let mut now = Instant::ZERO;
    while now < end {
        while s.poll_timeout().is_some_and(|t| t <= now) {
            s.on_timeout(now);
        }
        let size = bytes(1000);
        while now >= next_send
            && s.bytes_in_flight() + size <= s.congestion_window().unwrap_or(DataSize::INFINITE)
        {
            let pkt =
                SentPacket { seq, size, sent_at: now, is_audio: false, probe: None, data_in_flight: size };
            s.on_packet_sent(now, &pkt);
            // Paced at the target (the media rate), not the pacing rate: a media source produces
            // no more than the target; pacing headroom only shortens bursts.
            next_send += s.target_rate().transmit_time(size);
            next_send = next_send.max(now - Duration::from_millis(5));
            let ce = (seq as u64 + 1).is_multiple_of(every);
            let ecn = if ce { Ecn::Ce } else { Ecn::Ect1 };
            if now >= half {
                sent_bytes += 1000;
                marks += u64::from(ce);
            }
            let r = PacketResult {
                seq,
                size,
                sent_at: now,
                arrival: Some(now + one_way),
                ecn,
                is_audio: false,
                probe: None,
            };
            in_network.push_back((now + one_way, r));
            seq += 1;
        }
        while in_network.front().is_some_and(|p| p.0 <= now) {
            received.push(in_network.pop_front().map(|p| p.1).expect("non-empty"));
        }
        if now >= next_feedback {
            if !received.is_empty() {
                let report =
                    FeedbackReport { packets: std::mem::take(&mut received), ..FeedbackReport::default() };
                feedback.push_back((now + one_way, report));
            }
            next_feedback += FEEDBACK_INTERVAL;
        }
        while feedback.front().is_some_and(|f| f.0 <= now) {
            let (_, report) = feedback.pop_front().expect("non-empty");
            s.on_feedback(now, &report);
        }
        if now >= half && (now - half).as_micros() % 10_000 == 0 {
            target_sum += s.target_rate().as_bps_f64();
            alpha_sum += s.network().l4s_alpha();
            samples += 1.0;
        }
        now += STEP;
    }
    let span = (end - half).as_secs_f64();
    Settled {
        target: target_sum / samples,
        sent: sent_bytes as f64 * 8.0 / span,
        l4s_alpha: alpha_sum / samples,
        marks_per_rtt: marks as f64 / (span / rtt.as_secs_f64()),
    }
}

/// k of §4.4 for ref_wnd ≫ MSS with no media queue and constant frames: MSS/(MSS + 20)/1.2.
const K_SMALL_RATIO: f64 = 1000.0 / 1020.0 / 1.2;

/// The authors' L4S relation (EricssonResearch/scream README; the draft's §7 "two marked packets
/// per RTT"): rate ≈ (2 / p) · MSS · 8 / RTT. Measured with the loop above over 60 s (the second
/// half averaged), sent rate / relation:
///
/// | RTT | p = 1/5 | 1/10 | 1/20 | 1/50 | l4s_alpha / p | marks per RTT |
/// |---|---|---|---|---|---|---|
/// | 25 ms  | 0.70 | 0.72 | 0.74 | 0.76 | 1.14-1.35 | 1.4-1.5 |
/// | 50 ms  | 0.32 | 0.50 | 0.53 | 0.52 | 2.2-3.7   | 0.6-1.1 |
/// | 100 ms | 0.46 | 0.54 | 0.56 | 0.46 | 3.7-4.4   | 0.9-1.1 |
///
/// The relation does not hold as printed; three parts of the draft explain the gap:
/// 1. §4.4 sets the rate to k · 8 · ref_wnd / s_rtt with k = MSS/(MSS + 20)/1.2 = 0.817, so the
///    window carries 0.817 × the rate the relation gives for the same ref_wnd;
/// 2. l4s_alpha is not p: the fast-attack (1/8) slow-decay (1/128) EWMA of §4.2.1.3 follows
///    the upper envelope of the per-update marked fractions, and each update sees one feedback's
///    packets (20 ms), so when a feedback holds a few packets and every 1/p-th is marked, the
///    fractions are 0 or ≫ p and l4s_alpha sits well above p (1.1-1.4 × at 25 ms where feedbacks
///    hold 10-60 packets; 2-4 × at 50-100 ms where the rates, and so the packets per feedback,
///    are lower). With l4s_alpha in place of p, the 25 ms rates are 0.97-1.26 × k · (2/alpha) ·
///    MSS · 8 / RTT;
/// 3. above VIRTUAL_RTT the backoff is divided by s_rtt / VIRTUAL_RTT on the assumption of a
///    reaction every VIRTUAL_RTT, but a reaction needs a mark since the last one, and there is
///    about one mark per RTT: so marks per RTT settle near 1 instead of 2, which the draft's §7
///    allows ("SCReAM can settle for a lower number of marked packets per RTT").
///
/// The bands are those measurements with a margin of about 0.05: at RTT = VIRTUAL_RTT, where
/// the RTT scaling is neutral, the rate is 0.65-0.82 of the relation (the top is k); at 50 ms
/// 0.28-0.6 and at 100 ms 0.4-0.6. A change to the equations that moves the settled rate shows up here.
#[test]
fn l4s_closed_loop_settles_at_a_measured_fraction_of_two_marks_per_rtt() {
    for (rtt, band) in [(25, (0.65, K_SMALL_RATIO)), (50, (0.28, 0.6)), (100, (0.4, 0.6))] {
        for every in [5, 10, 20, 50] {
            let r = closed_loop(ms(rtt), every, 60);
            let relation = 2.0 * every as f64 * 1000.0 * 8.0 / (rtt as f64 / 1000.0);
            let ratio = r.sent / relation;
            assert!(
                ratio >= band.0 && ratio <= band.1,
                "RTT {rtt} ms, p = 1/{every}: sent {:.0} kbit/s = {ratio:.2} × the relation ({:.0} kbit/s); {r:?}",
                r.sent / 1e3,
                relation / 1e3
            );
            assert!((r.target - r.sent).abs() <= 0.01 * r.sent, "the source follows the target: {r:?}");
            assert!(r.l4s_alpha >= 1.0 / every as f64, "l4s_alpha below p: {r:?}");
            if rtt == 25 {
                let with_alpha = 2.0 / r.l4s_alpha * 1000.0 * 8.0 * 40.0 * K_SMALL_RATIO;
                let fit = r.sent / with_alpha;
                assert!((0.92..=1.3).contains(&fit), "with l4s_alpha for p: {fit:.2}; {r:?}");
                assert!((1.3..=1.6).contains(&r.marks_per_rtt), "{r:?}");
            }
        }
    }
}

#[test]
#[ignore = "prints the closed-loop table for the docs"]
fn closed_loop_table() {
    for rtt in [25, 50, 100] {
        for every in [5, 10, 20, 50] {
            let r = closed_loop(ms(rtt), every, 60);
            let expected = 2.0 * every as f64 * 1000.0 * 8.0 / (rtt as f64 / 1000.0);
            // The relation with l4s_alpha in place of p and the media rate control's k.
            let with_alpha = 2.0 / r.l4s_alpha * 1000.0 * 8.0 / (rtt as f64 / 1000.0) * K_SMALL_RATIO;
            println!(
                "RTT {rtt:>3} ms p 1/{every:<3} expected {:>7.0} kbit/s target {:>7.0} sent {:>7.0} ratio {:.2} \
                 alpha {:.3} alpha/p {:.2} marks/RTT {:.2} sent/(k·2/alpha·MSS·8/RTT) {:.2}",
                expected / 1e3,
                r.target / 1e3,
                r.sent / 1e3,
                r.sent / expected,
                r.l4s_alpha,
                r.l4s_alpha * every as f64,
                r.marks_per_rtt,
                r.sent / with_alpha,
            );
        }
    }
}
