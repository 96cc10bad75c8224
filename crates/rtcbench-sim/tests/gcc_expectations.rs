//! GoogCC against its own published expectations: libwebrtc's scenario test
//! `UpdatesTargetRateBasedOnLinkCapacity` (`modules/congestion_controller/goog_cc/
//! goog_cc_network_control_unittest.cc`, read in the mirror maitrungduc1410/webrtc at 14bccf4c;
//! older revisions, e.g. signalapp/webrtc, ran it with a feedback-only factory and the
//! `WebRTC-SendSideBwe-WithOverhead` trial, the newer ones with the default factory as here). The
//! `goog_cc` crate ports the controller but not libwebrtc's `Scenario` framework, so it leaves
//! this test commented out; here our simulator plays the part of the framework.
//!
//! Upstream, with `GoogCcNetworkControllerFactory` defaults and transport rates min 10, max
//! 1500, start 300 kbit/s, one video stream (`VideoStreamConfig()`, 30 fps) crosses
//!
//! | from | send link            | return link | expectation at the end                  |
//! |------|----------------------|-------------|-----------------------------------------|
//! | 0 s  | 500 kbit/s, 100 ms   | 100 ms      | target 450 ± 100 kbit/s at 25 s         |
//! | 25 s | 800 kbit/s, 100 ms   | 100 ms      | target 750 ± 150 kbit/s at 45 s         |
//! | 45 s | 100 kbit/s, 200 ms   | 200 ms      | target 90 ± 25 kbit/s at 95 s           |
//!
//! with loss 0 and the emulator's default queue (`queue_length_packets = 0`: unbounded).
//!
//! Our setup mirrors that as far as the scenario format allows:
//! * Video only (`audio = { enabled = false }`): upstream creates only a video stream, and audio
//!   would add its rate to GoogCC's min/max/start and bypass the pacer.
//! * Video min/max/start 10/1500/300 kbit/s: the transport rates upstream; with no audio they are
//!   exactly what GoogCC is given. No max above 1500 kbit/s, so the ceiling is upstream's.
//! * No `queue` on the forward link (unbounded, as upstream) and no jitter (upstream has none).
//! * The encoder is our RFC 8593 model, not libwebrtc's fake encoder; feedback is transport-wide
//!   feedback every 50 ms plus 1 s RRs, where libwebrtc adapts the feedback interval.
//! * Deviation: a link's propagation delay cannot change during a run, so the last phase keeps
//!   100 ms each way (RTT 200 ms) instead of 200 ms (RTT 400 ms). The expectation there is about
//!   the capacity (90 ± 25 kbit/s on a 100 kbit/s link); the RTT changes how fast GoogCC's
//!   additive increase and detector react, so this phase is a weaker check than upstream's.
//!
//! The controller table's target in force at each instant (the last row at or before it) is
//! what `client->target_rate()` returns upstream.

use rtcbench_cc::ControllerKind;
use rtcbench_scenario::load;
use rtcbench_sim::{simulate, RunOutput};

const TARGET_CAPACITY: &str = r#"
id = "googcc-unit-target-capacity"
source = "libwebrtc goog_cc_network_control_unittest.cc, UpdatesTargetRateBasedOnLinkCapacity"
duration = "95s"

[[links]]
name = "forward"
from = "A"
to = "B"
delay = "100ms"
schedule = [
  { at = "0s", capacity = "500kbps" },
  { at = "25s", capacity = "800kbps" },
  { at = "45s", capacity = "100kbps" },
]
# Unbounded, as upstream's emulator.
queue = { size = "unlimited" }

[[links]]
name = "backward"
from = "B"
to = "A"
delay = "100ms"

[[calls]]
from = "A"
to = "B"
video = { min = "10kbps", max = "1500kbps", start = "300kbps", fps = 30 }
audio = { enabled = false }
"#;

fn run(seed: u64) -> RunOutput {
    let s = load(TARGET_CAPACITY, "gcc_expectations.rs", &[]).unwrap_or_else(|e| panic!("{e}")).remove(0);
    simulate(&s, ControllerKind::Gcc, seed).unwrap_or_else(|e| panic!("{e}"))
}

/// The target in force at `t_s` seconds, in kbit/s.
fn target_kbps_at(out: &RunOutput, t_s: i64) -> f64 {
    let c = &out.trace.controller;
    let row = (0..c.len()).rev().find(|&i| c.t_us[i] <= t_s * 1_000_000).expect("a controller row");
    c.target_bps[row] as f64 / 1e3
}

/// (instant, expected target, tolerance) in s and kbit/s: upstream's three `EXPECT_NEAR`s.
const EXPECTATIONS: [(i64, f64, f64); 3] = [(25, 450.0, 100.0), (45, 750.0, 150.0), (95, 90.0, 25.0)];

#[test]
fn updates_target_rate_based_on_link_capacity() {
    // Upstream runs one simulation. Ours draws frame sizes (RFC 8593 encoder model) from the
    // seed, so several seeds show the result is not one lucky draw.
    for seed in 1..=5 {
        let out = run(seed);
        for (t, expected, tolerance) in EXPECTATIONS {
            let got = target_kbps_at(&out, t);
            eprintln!("seed {seed}: target at {t} s = {got:.1} kbit/s (expected {expected} ± {tolerance})");
            assert!(
                (got - expected).abs() <= tolerance,
                "seed {seed}: target at {t} s is {got:.1} kbit/s, expected {expected} ± {tolerance} kbit/s"
            );
        }
    }
}
