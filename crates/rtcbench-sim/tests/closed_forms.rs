//! The simulator against closed forms: a constant-bit-rate flow through one link behaves as
//! queueing theory says, to the microsecond or to the packet.
//!
//! The CBR source is a call with video disabled and audio only under `fixed`: audio bypasses the
//! pacer, so the sender emits one packet of rate × interval payload bytes every interval, and on
//! the wire each is payload + 28 B (IPv4 + UDP) + 24 B (RTP: 12 B fixed header, 4 B extension
//! header, abs-send-time 1 + 3 B, transport-wide sequence number 1 + 2 B, padded to 8 B). Unless a
//! test is about RTCP, sender and receiver reports are pushed beyond the end of the run
//! (`report_interval = "1000s"`) so the media flow is alone on the forward link; transport-wide
//! feedback still runs, on the backward link.

use rtcbench_cc::ControllerKind;
use rtcbench_scenario::load;
use rtcbench_sim::trace::PacketTable;
use rtcbench_sim::{simulate, RunOutput};
use rtcbench_units::{Bitrate, DataSize, Duration};

const SENT: u8 = 0;
const RECEIVED: u8 = 1;
const DROPPED: u8 = 2;
const QUEUE_FULL: u8 = 1;
const RANDOM_LOSS: u8 = 2;
/// Link indices: links are numbered in file order and every scenario here lists forward first.
const FORWARD: i16 = 0;
const BACKWARD: i16 = 1;
/// Bytes a media packet carries on top of its payload (see the module docs).
const WIRE_OVERHEAD: u64 = 28 + 24;
const SEC: i64 = 1_000_000;

/// Runs the only variant of a scenario written in this file.
fn run(text: &str, controller: ControllerKind, seed: u64) -> RunOutput {
    let mut variants = load(text, "closed_forms.rs", &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(variants.len(), 1, "test scenarios have a single variant");
    simulate(&variants.remove(0), controller, seed).unwrap_or_else(|e| panic!("{e}"))
}

/// A scenario: A → B over `forward`, B → A over `backward`, one call A → B whose only media
/// is CBR audio of `rate` in packets every `interval`. `forward` and `backward` are extra TOML
/// keys of each link; `reports` is the SR/RR interval.
fn cbr_scenario(duration: &str, forward: &str, backward: &str, audio: (&str, &str), reports: &str) -> String {
    let (rate, interval) = audio;
    format!(
        r#"
id = "closed-form"
duration = "{duration}"

[[links]]
name = "forward"
from = "A"
to = "B"
{forward}

[[links]]
name = "backward"
from = "B"
to = "A"
{backward}

[[calls]]
from = "A"
to = "B"
video = {{ enabled = false }}
audio = {{ rate = "{rate}", packet_interval = "{interval}" }}
feedback = {{ report_interval = "{reports}" }}
"#
    )
}

/// Reports beyond the end of every run here: the CBR flow is alone on the forward link.
const NO_REPORTS: &str = "1000s";

/// The id of the flow named `name` (e.g. "call0.audio").
fn flow(out: &RunOutput, name: &str) -> i32 {
    let f = out.meta.flows.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("no flow {name}"));
    f.id as i32
}

/// Rows of `flow` with `event`, in trace (time) order.
fn rows(p: &PacketTable, flow: i32, event: u8) -> Vec<usize> {
    (0..p.len()).filter(|&i| p.flow[i] == flow && p.event[i] == event).collect()
}

/// One-way delay of a received row, in microseconds.
fn owd(p: &PacketTable, i: usize) -> i64 {
    p.t_us[i] - p.sent_us[i]
}

/// Fate of each packet of a flow in send order: `Some(true)` dropped, `Some(false)` received,
/// `None` still in flight at the end of the run.
fn fates(p: &PacketTable, flow: i32) -> Vec<Option<bool>> {
    let sent = rows(p, flow, SENT);
    let first = p.packet[sent[0]];
    let mut fate = vec![None; (p.packet[*sent.last().unwrap()] - first + 1) as usize];
    for i in (0..p.len()).filter(|&i| p.flow[i] == flow && p.event[i] != SENT) {
        fate[(p.packet[i] - first) as usize] = Some(p.event[i] == DROPPED);
    }
    // Packet ids are global; keep only this flow's, in send order.
    sent.iter().map(|&i| fate[(p.packet[i] - first) as usize]).collect()
}

#[test]
fn cbr_below_capacity_sees_exactly_propagation_plus_serialisation() {
    // 800 kbit/s in 10 ms packets = 1000 B payload, 1052 B on the wire; at 3 Mbit/s a packet
    // takes 8416 bits / 3 Mbit/s = 2805.33 µs, rounded up to 2806 µs as `transmit_time` does.
    // 2.8 ms < 10 ms between packets: no packet ever waits behind another.
    let capacity = Bitrate::mbps(3);
    let size = DataSize::bytes(1000 + WIRE_OVERHEAD);
    let serial = capacity.transmit_time(size);
    assert_eq!(serial, Duration::from_micros(2806));
    let delay = Duration::from_millis(40);
    let text = cbr_scenario(
        "10s",
        r#"delay = "40ms"
capacity = "3Mbps"
queue = { size = "unlimited" }"#,
        r#"delay = "40ms""#,
        ("800kbps", "10ms"),
        NO_REPORTS,
    );
    let out = run(&text, ControllerKind::Fixed, 1);
    let p = &out.trace.packets;
    let audio = flow(&out, "call0.audio");
    let sent = rows(p, audio, SENT);
    // One packet every 10 ms from t = 0 to the end of the 10 s run (the one due at 10 s too).
    assert!((1000..=1001).contains(&sent.len()), "{} packets sent", sent.len());
    for &i in &sent {
        assert_eq!(p.size[i] as u64, size.as_bytes(), "wire size of packet {}", p.packet[i]);
        assert_eq!(p.payload[i], 1000);
        assert_eq!(p.t_us[i] % 10_000, 0, "sent on the 10 ms grid");
    }
    let expected = (delay + serial).as_micros();
    let received = rows(p, audio, RECEIVED);
    for &i in &received {
        assert_eq!(owd(p, i), expected, "packet {} sent at {} us", p.packet[i], p.sent_us[i]);
    }
    // Everything sent early enough to arrive before the end arrived.
    let due = sent.iter().filter(|&&i| p.t_us[i] + expected <= 10 * SEC).count();
    assert_eq!(received.len(), due);
    assert!(rows(p, audio, DROPPED).is_empty());
}

#[test]
fn a_two_link_path_adds_both_delays_and_both_serialisations() {
    // A → M at 2 Mbit/s + 10 ms, then M → B at 1 Mbit/s + 20 ms. 400 kbit/s in 20 ms packets is
    // 1000 B payload, 1052 B on the wire: 4208 µs on the first link, 8416 µs on the second, both
    // shorter than the 20 ms between packets, so nothing waits at either hop.
    let text = r#"
id = "two-hops"
duration = "5s"

[[links]]
name = "a"
from = "A"
to = "M"
delay = "10ms"
capacity = "2Mbps"
queue = { size = "unlimited" }

[[links]]
name = "b"
from = "M"
to = "B"
delay = "20ms"
capacity = "1Mbps"
queue = { size = "unlimited" }

[[links]]
name = "back"
from = "B"
to = "A"
delay = "5ms"

[[calls]]
from = "A"
to = "B"
video = { enabled = false }
audio = { rate = "400kbps", packet_interval = "20ms" }
feedback = { report_interval = "1000s" }
"#;
    let out = run(text, ControllerKind::Fixed, 1);
    let p = &out.trace.packets;
    let audio = flow(&out, "call0.audio");
    let meta = out.meta.flows.iter().find(|f| f.id as i32 == audio).unwrap();
    assert_eq!(
        (meta.path.as_slice(), meta.bottleneck.as_str()),
        (&["a".to_string(), "b".to_string()][..], "b")
    );
    let size = DataSize::bytes(1000 + WIRE_OVERHEAD);
    let expected = (Duration::from_millis(30)
        + Bitrate::mbps(2).transmit_time(size)
        + Bitrate::mbps(1).transmit_time(size))
    .as_micros();
    assert_eq!(expected, 42_624);
    let received = rows(p, audio, RECEIVED);
    assert!(received.len() >= 248, "{} received", received.len());
    for i in received {
        assert_eq!(owd(p, i), expected, "packet {} sent at {} us", p.packet[i], p.sent_us[i]);
    }
}

/// Checks a CBR flow overloading a drop-tail link in steady state: loss and queueing delay.
///
/// Packets are all `size` bytes, arrive every 10 ms and take `serial` > 10 ms to serialise, so at
/// most one leaves between two arrivals. The queue (in-service packet included) holds
/// N = ⌊limit / size⌋ packets; once it is full it never holds fewer than N − 1, so every
/// admitted packet finds N − 1 ahead of it, the first already partly sent: its time from arrival
/// to the end of its own serialisation lies in ((N − 1)·serial, N·serial], which lies in
/// (limit/C − 2·serial, limit/C] since N·size ≤ limit < (N + 1)·size.
fn check_overload(out: &RunOutput, capacity: Bitrate, limit: DataSize, delay: Duration, size: DataSize) {
    let p = &out.trace.packets;
    let audio = flow(out, "call0.audio");
    let serial = capacity.transmit_time(size).as_micros();
    let n = (limit.as_bytes() / size.as_bytes()) as i64;
    let drain = (limit.as_bits() as f64 * 1e6 / capacity.as_bps_f64()) as i64;
    assert!((n - 1) * serial > drain - 2 * serial && n * serial <= drain);

    // Steady state: the queue fills in N / (1 - 10 ms / serial) arrivals (about 1-3 s here).
    let (from, to) = (5 * SEC, 25 * SEC);
    let in_window = |i: usize| (from..to).contains(&p.sent_us[i]);
    let mut queueing = Vec::new();
    for i in rows(p, audio, RECEIVED).into_iter().filter(|&i| in_window(i)) {
        let q = owd(p, i) - delay.as_micros();
        assert!(
            (n - 1) * serial < q && q <= n * serial,
            "packet {} queued {q} us, outside ({}, {}] us",
            p.packet[i],
            (n - 1) * serial,
            n * serial
        );
        queueing.push(q);
    }
    for i in rows(p, audio, DROPPED) {
        assert_eq!((p.link[i], p.reason[i]), (FORWARD, QUEUE_FULL), "only the full queue drops");
    }

    // Loss from wire bytes against 1 - C/R. The link never idles, so over the window it admits
    // what it serialises, C × window, give or take the packet in service at each edge (1 + 1)
    // and the change in queue occupancy between the edges (N - 1 or N: 1 packet); one more for
    // an arrival and a departure that share an instant (either may be handled first): 4 packets.
    let bytes = |ev: u8| -> f64 {
        (0..p.len())
            .filter(|&i| p.flow[i] == audio && p.event[i] == ev && in_window(i))
            .map(|i| f64::from(p.size[i]))
            .sum()
    };
    let (sent, dropped) = (bytes(SENT), bytes(DROPPED));
    let r = sent * 8.0 / ((to - from) as f64 / 1e6);
    let expected = 1.0 - capacity.as_bps_f64() / r;
    let loss = dropped / sent;
    let tol = 4.0 * size.as_bytes() as f64 / sent;
    assert!(tol < 0.01, "window too short for a 1 pp claim");
    assert!((loss - expected).abs() <= tol, "loss {loss:.5}, expected {expected:.5} ± {tol:.5}");
    eprintln!(
        "overload: loss {loss:.5} (1 - C/R = {expected:.5}), queueing {}..{} us, band ({}, {}] us",
        queueing.iter().min().unwrap(),
        queueing.iter().max().unwrap(),
        (n - 1) * serial,
        n * serial
    );
}

#[test]
fn cbr_above_capacity_loses_one_minus_c_over_r_and_queues_the_buffer() {
    // 1000 kbit/s in 10 ms packets: 1250 B payload, 1302 B on the wire, R = 1.0416 Mbit/s on the
    // wire. C = R / 1.25 = 833.28 kbit/s: 1 - C/R = 20 %, one packet serialises in 12.5 ms and
    // a 300 ms queue holds 31 248 B = 24 packets exactly.
    let capacity = Bitrate::bps(833_280);
    let text = cbr_scenario(
        "30s",
        r#"delay = "30ms"
capacity = "833280bps"
queue = { size = "300ms" }"#,
        r#"delay = "30ms""#,
        ("1000kbps", "10ms"),
        NO_REPORTS,
    );
    let out = run(&text, ControllerKind::Fixed, 1);
    let limit = capacity * Duration::from_millis(300);
    assert_eq!(limit, DataSize::bytes(31_248));
    assert!(out
        .trace
        .links
        .queue_limit_bytes
        .iter()
        .zip(&out.trace.links.link)
        .all(|(&l, &k)| k != FORWARD || l == 31_248));
    check_overload(&out, capacity, limit, Duration::from_millis(30), DataSize::bytes(1302));
}

#[test]
fn byte_sized_queue_holds_its_bytes_at_any_rate() {
    // Same overload against a 60 KB (SI: 60 000 B) queue: 46 packets of 1302 B fit, so queueing
    // lies within two serialisations below 60 000 × 8 / C = 576 ms.
    let capacity = Bitrate::bps(833_280);
    let text = cbr_scenario(
        "30s",
        r#"delay = "30ms"
capacity = "833280bps"
queue = { size = "60KB" }"#,
        r#"delay = "30ms""#,
        ("1000kbps", "10ms"),
        NO_REPORTS,
    );
    let out = run(&text, ControllerKind::Fixed, 1);
    let links = &out.trace.links;
    assert!((0..links.t_us.len())
        .filter(|&i| links.link[i] == FORWARD)
        .all(|i| links.queue_limit_bytes[i] == 60_000));
    check_overload(&out, capacity, DataSize::bytes(60_000), Duration::from_millis(30), DataSize::bytes(1302));
}

#[test]
fn throughput_follows_a_capacity_step_change() {
    // R = 1.0416 Mbit/s on the wire over 500 → 900 → 300 kbit/s: overloaded in every phase, so
    // the link never idles and delivers exactly its capacity.
    let text = cbr_scenario(
        "30s",
        r#"delay = "20ms"
schedule = [
  { at = "0s", capacity = "500kbps" },
  { at = "10s", capacity = "900kbps" },
  { at = "20s", capacity = "300kbps" },
]
queue = { size = "300ms" }"#,
        r#"delay = "20ms""#,
        ("1000kbps", "10ms"),
        NO_REPORTS,
    );
    let out = run(&text, ControllerKind::Fixed, 1);
    let p = &out.trace.packets;
    let audio = flow(&out, "call0.audio");
    let size_bits: f64 = 1302.0 * 8.0;
    let mut bits = [0.0f64; 30];
    for i in rows(p, audio, RECEIVED) {
        bits[(p.t_us[i] / SEC) as usize] += f64::from(p.size[i]) * 8.0;
    }
    for (start, end, c) in [(0, 10, 500e3_f64), (10, 20, 900e3), (20, 30, 300e3)] {
        // A receive window [k, k+1) holds the packets whose serialisation ended in
        // [k - 20 ms, k + 1 - 20 ms); that lies inside the phase for k in [start + 1, end - 1].
        // Over 1 s the link does exactly C × 1 s of work; counting each packet whole at its end
        // moves at most one packet's bits across each window edge (< 1 packet net), and each
        // serialisation is rounded up to the microsecond (≤ 1 µs × C per packet).
        let per_window_packets = (c / size_bits).ceil() + 1.0;
        let tol = size_bits + per_window_packets * c / 1e6;
        let mut worst = 0.0f64;
        for (k, &b) in bits.iter().enumerate().take(end).skip(start + 1) {
            assert!((b - c).abs() <= tol, "window {k} s: {b} bit/s received, capacity {c} ± {tol:.0}");
            worst = worst.max((b - c).abs());
        }
        eprintln!("phase {start}-{end} s at {c} bit/s: worst window off by {worst} bit (tolerance {tol:.0})");
    }
    // The link table samples every capacity change at its instant.
    let links = &out.trace.links;
    for (at, c) in [(10 * SEC, 900_000), (20 * SEC, 300_000)] {
        let row = (0..links.t_us.len()).find(|&i| links.link[i] == FORWARD && links.t_us[i] == at);
        let row = row.unwrap_or_else(|| panic!("no link sample at {at} us"));
        assert_eq!(links.capacity_bps[row], c);
    }
}

#[test]
fn jitter_never_reorders_and_spaces_arrivals_by_serialisation() {
    // Packets 10 ms apart under jitter of std 20 ms: the raw delays would reorder about half
    // of them. NR-RBPDV (RFC 8868 §4.5.2) delivers in send order, each at least one
    // serialisation (1052 B at 2 Mbit/s = 4208 µs) after the previous.
    let text = cbr_scenario(
        "20s",
        r#"delay = "50ms"
capacity = "2Mbps"
queue = { size = "unlimited" }
jitter = { model = "nr-rbpdv", std = "20ms", n_std = 3 }"#,
        r#"delay = "50ms""#,
        ("800kbps", "10ms"),
        NO_REPORTS,
    );
    let out = run(&text, ControllerKind::Fixed, 7);
    let p = &out.trace.packets;
    let audio = flow(&out, "call0.audio");
    let received = rows(p, audio, RECEIVED);
    assert!(received.len() > 1900, "{} received", received.len());
    let serial = Bitrate::mbps(2).transmit_time(DataSize::bytes(1052)).as_micros();
    assert_eq!(serial, 4208);
    let mut max_extra = 0;
    for w in received.windows(2) {
        let (a, b) = (w[0], w[1]);
        assert!(p.sent_us[a] < p.sent_us[b], "packet {} overtook packet {}", p.packet[b], p.packet[a]);
        assert!(
            p.t_us[b] - p.t_us[a] >= serial,
            "packets {} and {} closer than one serialisation",
            p.packet[a],
            p.packet[b]
        );
        max_extra = max_extra.max(owd(p, b) - 50_000 - serial);
    }
    // Jitter really acted (otherwise the order check proves nothing): some packet was delayed by
    // more than the 10 ms spacing.
    assert!(max_extra > 10_000, "largest extra delay {max_extra} us");
}

#[test]
fn jitter_of_sparse_packets_is_a_folded_truncated_gaussian() {
    // Packets 200 ms apart on an unlimited link: the no-reordering rule never binds (the extra
    // delay is at most 3 σ = 60 ms < 200 ms), so delay - propagation is the raw sample
    // |clamp(N(0, σ²), ±3σ)| with σ = 20 ms.
    let text = cbr_scenario(
        "300s",
        r#"delay = "50ms"
jitter = { model = "nr-rbpdv", std = "20ms", n_std = 3 }"#,
        r#"delay = "50ms""#,
        ("8kbps", "200ms"),
        NO_REPORTS,
    );
    let out = run(&text, ControllerKind::Fixed, 11);
    let p = &out.trace.packets;
    let audio = flow(&out, "call0.audio");
    let extra: Vec<f64> =
        rows(p, audio, RECEIVED).iter().map(|&i| (owd(p, i) - 50_000) as f64 / 1e3).collect();
    let n = extra.len() as f64;
    assert!(n > 1400.0, "{n} samples");
    let sigma = 20.0;
    for &e in &extra {
        assert!((0.0..=3.0 * sigma).contains(&e), "extra delay {e} ms outside [0, 3σ]");
    }
    // E|N(0, σ²)| = σ·sqrt(2/π) = 15.96 ms (clamping at 3σ changes it by < 0.1 %). The sample
    // mean's standard error is σ·sqrt(1 - 2/π)/sqrt(n) ≈ 0.31 ms, so ±10 % (1.6 ms) is > 5 SE.
    let mean = extra.iter().sum::<f64>() / n;
    let expected = sigma * (2.0 / std::f64::consts::PI).sqrt();
    assert!((mean - expected).abs() <= 0.1 * expected, "mean {mean:.2} ms, expected {expected:.2} ms ± 10 %");
    // P(|N| ≤ σ) = 68.27 %; binomial standard error sqrt(0.68 · 0.32 / n) ≈ 1.2 pp; allow 4 SE.
    let within = extra.iter().filter(|&&e| e <= sigma).count() as f64 / n;
    let se = (0.6827 * 0.3173 / n).sqrt();
    assert!((within - 0.6827).abs() <= 4.0 * se, "{within:.4} within σ");
    eprintln!(
        "jitter: mean {mean:.2} ms (expected {expected:.2}), {within:.4} within σ, max {:.1} ms",
        extra.iter().cloned().fold(0.0, f64::max)
    );
}

#[test]
fn bernoulli_loss_drops_its_rate() {
    // 20 000 packets (2 ms apart for 40 s) on an unlimited link with 5 % independent loss. The
    // binomial standard error is sqrt(0.05 · 0.95 / 20 000) = 0.15 pp; ±0.5 pp is 3.2 SE.
    let text = cbr_scenario(
        "40s",
        r#"delay = "10ms"
loss = { model = "bernoulli", rate = 0.05 }"#,
        r#"delay = "10ms""#,
        ("80kbps", "2ms"),
        NO_REPORTS,
    );
    let out = run(&text, ControllerKind::Fixed, 3);
    let p = &out.trace.packets;
    let audio = flow(&out, "call0.audio");
    let fate: Vec<bool> = fates(p, audio).into_iter().flatten().collect();
    assert!(fate.len() >= 19_990, "{} packets with a fate", fate.len());
    let loss = fate.iter().filter(|&&d| d).count() as f64 / fate.len() as f64;
    assert!((loss - 0.05).abs() <= 0.005, "loss {loss:.4}");
    for i in rows(p, audio, DROPPED) {
        assert_eq!((p.link[i], p.reason[i]), (FORWARD, RANDOM_LOSS));
    }
    eprintln!("bernoulli: loss {loss:.4}");
}

#[test]
fn gilbert_elliott_loss_matches_its_stationary_rate_and_is_bursty() {
    // p = 1 %, r = 20 %, Good never loses, Bad always: π_bad = p / (p + r) = 4.76 %, and a loss
    // follows a loss with P(stay Bad) = 1 - r = 80 %. Losses are correlated (λ = 1 - p - r =
    // 0.79), which inflates the variance of the measured rate by (1 + λ)/(1 - λ) ≈ 8.5: over
    // 100 000 packets (1 ms apart) the standard error is ≈ 0.2 pp, so ±0.7 pp is 3.5 SE.
    let text = cbr_scenario(
        "100s",
        r#"delay = "10ms"
loss = { model = "gilbert-elliott", p = 0.01, r = 0.2, loss_good = 0.0, loss_bad = 1.0 }"#,
        r#"delay = "10ms""#,
        ("80kbps", "1ms"),
        NO_REPORTS,
    );
    let out = run(&text, ControllerKind::Fixed, 5);
    let p = &out.trace.packets;
    let audio = flow(&out, "call0.audio");
    let fate: Vec<bool> = fates(p, audio).into_iter().flatten().collect();
    assert!(fate.len() >= 99_980, "{} packets with a fate", fate.len());
    let n = fate.len() as f64;
    let loss = fate.iter().filter(|&&d| d).count() as f64 / n;
    let stationary = 0.01 / (0.01 + 0.2);
    assert!((loss - stationary).abs() <= 0.007, "loss {loss:.4}, stationary {stationary:.4}");
    // Bursty: independent loss at the same rate would give P(loss | loss) = 4.76 %.
    let after_loss = fate.windows(2).filter(|w| w[0]).count() as f64;
    let both = fate.windows(2).filter(|w| w[0] && w[1]).count() as f64;
    let conditional = both / after_loss;
    assert!(conditional > 0.5, "P(loss | previous lost) = {conditional:.3}");
    eprintln!("gilbert-elliott: loss {loss:.4} (stationary {stationary:.4}), P(loss|loss) {conditional:.3}");
}

#[test]
fn loss_on_the_backward_link_drops_only_feedback() {
    // 20 % loss on the backward link only, default 1 s reports: feedback (TWCC every 50 ms and
    // RRs) is lost, media never.
    let text = cbr_scenario(
        "60s",
        r#"delay = "20ms""#,
        r#"delay = "20ms"
loss = { model = "bernoulli", rate = 0.2 }"#,
        ("80kbps", "10ms"),
        "1s",
    );
    let out = run(&text, ControllerKind::Fixed, 9);
    let p = &out.trace.packets;
    let (audio, rtcp_rx, rtcp_tx) =
        (flow(&out, "call0.audio"), flow(&out, "call0.rtcp-rx"), flow(&out, "call0.rtcp-tx"));
    for f in [audio, rtcp_tx] {
        assert!(rows(p, f, DROPPED).is_empty(), "flow {f} on the forward link lost packets");
        // Everything sent 20 ms before the end arrived.
        let due = rows(p, f, SENT).iter().filter(|&&i| p.t_us[i] + 20_000 <= 60 * SEC).count();
        assert_eq!(rows(p, f, RECEIVED).len(), due, "flow {f}");
    }
    let dropped = rows(p, rtcp_rx, DROPPED);
    for &i in &dropped {
        assert_eq!((p.link[i], p.reason[i]), (BACKWARD, RANDOM_LOSS));
    }
    // About 1260 feedback packets: binomial SE sqrt(0.2 · 0.8 / n) ≈ 1.1 pp; allow 4 SE.
    let n = rows(p, rtcp_rx, SENT).len() as f64;
    assert!(n > 1200.0, "{n} feedback packets");
    let loss = dropped.len() as f64 / n;
    let se = (0.2 * 0.8 / n).sqrt();
    assert!((loss - 0.2).abs() <= 4.0 * se, "feedback loss {loss:.4}");
}

#[test]
fn a_congested_forward_link_does_not_delay_feedback() {
    // The forward link is overloaded (R = 1.25 C, 300 ms queue): media waits ~300 ms. Feedback
    // crosses the backward link alone, which has no capacity limit: its one-way delay is the
    // backward propagation delay, exactly.
    let text = cbr_scenario(
        "20s",
        r#"delay = "30ms"
capacity = "833280bps"
queue = { size = "300ms" }"#,
        r#"delay = "50ms""#,
        ("1000kbps", "10ms"),
        "1s",
    );
    let out = run(&text, ControllerKind::Fixed, 1);
    let p = &out.trace.packets;
    let (audio, rtcp_rx) = (flow(&out, "call0.audio"), flow(&out, "call0.rtcp-rx"));
    // The forward link really is congested: past the fill-up, media queues for more than
    // 300 ms minus two 12.5 ms serialisations (see `check_overload`).
    let late = rows(p, audio, RECEIVED).into_iter().filter(|&i| p.sent_us[i] >= 5 * SEC);
    for i in late {
        assert!(
            owd(p, i) - 30_000 > 300_000 - 2 * 12_500,
            "packet {} queued only {} us",
            p.packet[i],
            owd(p, i) - 30_000
        );
    }
    let feedback = rows(p, rtcp_rx, RECEIVED);
    assert!(feedback.len() > 300, "{} feedback packets", feedback.len());
    for i in feedback {
        assert_eq!(owd(p, i), 50_000, "feedback packet {} sent at {} us", p.packet[i], p.sent_us[i]);
    }
}
