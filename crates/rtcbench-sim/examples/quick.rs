//! Runs a built-in scenario and prints per-second rates: a developer's quick look.
//! `cargo run --release -p rtcbench-sim --example quick -- rfc8867-5.1 gcc 1`
use rtcbench_cc::ControllerKind;
use rtcbench_sim::scenario::{builtin, load};
use rtcbench_sim::simulate;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let id = args.get(1).map_or("rfc8867-5.1", String::as_str);
    let cc = ControllerKind::from_name(args.get(2).map_or("gcc", String::as_str)).expect("controller");
    let seed: u64 = args.get(3).map_or(1, |s| s.parse().expect("seed"));
    let (text, origin) = builtin::find(id).expect("built-in scenario");
    let variants = load(text, &origin, &[]).expect("scenario");
    let s = &variants[0];
    let t0 = std::time::Instant::now();
    let out = simulate(s, cc, seed).expect("run");
    let wall = t0.elapsed().as_secs_f64();
    let p = &out.trace.packets;
    let secs = out.meta.duration_s as usize;
    let mut sent = vec![0i64; secs + 1];
    let mut recv = vec![0i64; secs + 1];
    let mut drop = vec![0i64; secs + 1];
    let mut qd = vec![0i64; secs + 1];
    for i in 0..p.len() {
        if p.flow[i] != 0 {
            continue;
        }
        let s = (p.t_us[i] / 1_000_000) as usize;
        match p.event[i] {
            0 => sent[s] += p.size[i] as i64 * 8,
            1 => {
                recv[s] += p.size[i] as i64 * 8;
                qd[s] = qd[s].max(p.t_us[i] - p.sent_us[i]);
            }
            _ => drop[s] += 1,
        }
    }
    let c = &out.trace.controller;
    for k in 0..secs {
        let tgt = (0..c.len())
            .rev()
            .find(|&i| c.t_us[i] <= (k as i64 + 1) * 1_000_000)
            .map_or(0, |i| c.target_bps[i]);
        println!(
            "{k:4} s  target {:6} kbps  send {:6} kbps  recv {:6} kbps  max owd {:5} ms  drops {}",
            tgt / 1000,
            sent[k] / 1000,
            recv[k] / 1000,
            qd[k] / 1000,
            drop[k]
        );
    }
    println!(
        "{} events, {} packet rows, wall {:.3} s, {:.0}x real time",
        out.events,
        p.len(),
        wall,
        out.meta.duration_s / wall
    );
}
