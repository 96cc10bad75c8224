//! Runs a built-in scenario and prints per-second rates: a developer's quick look.
//! `cargo run --release -p rtcbench-sim --example quick -- rfc8867-5.1 gcc 1 [--state] [--summary]`
//!
//! `--state` adds the controller's own trace columns (the last row of each second) and the mean
//! sender-side delay (frame capture to transmission) of the second. `--summary` prints only the
//! closing summary: queuing delay (one-way delay − the run's minimum) mean / p95 from 5 s on,
//! and sender-side delay mean / p95 over the same packets.
//!
//! A fourth positional argument picks the scenario variant by index (default 0; `rfc8867-5.1`
//! 1 is the 100 ms delay). `--cols=a,b,c` prints those controller columns
//! (`out.trace.controller.columns`; `--cols=list` lists them) on each row; `--zoom=FROM-TO@MS`
//! prints rows of MS milliseconds between FROM and TO seconds instead of one row per second,
//! with the forward link's capacity and largest queue in each row.
use rtcbench_cc::ControllerKind;
use rtcbench_scenario::{builtin, load};
use rtcbench_sim::simulate;
use rtcbench_sim::trace::ColumnData;

/// Controller columns shown with `--state`, when the controller has them.
const STATE_COLUMNS: [&str; 10] = [
    "cwnd_bytes",
    "bytes_in_flight_bytes",
    "qdelay_ms",
    "srtt_ms",
    "state",
    "qdelay_trend",
    "rate_transmit_bps",
    "rate_ack_bps",
    "rate_media_bps",
    "rtp_qdelay_ms",
];

fn percentile(v: &mut [i64], p: f64) -> i64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[((v.len() - 1) as f64 * p) as usize]
}

fn mean(v: &[i64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<i64>() as f64 / v.len() as f64
    }
}

fn main() {
    let args: Vec<String> = std::env::args().filter(|a| !a.starts_with("--")).collect();
    let state = std::env::args().any(|a| a == "--state");
    let summary_only = std::env::args().any(|a| a == "--summary");
    let id = args.get(1).map_or("rfc8867-5.1", String::as_str);
    let cc = ControllerKind::from_name(args.get(2).map_or("gcc", String::as_str)).expect("controller");
    let seed: u64 = args.get(3).map_or(1, |s| s.parse().expect("seed"));
    let variant: usize = args.get(4).map_or(0, |s| s.parse().expect("variant index"));
    let flag = |name: &str| std::env::args().find_map(|a| a.strip_prefix(name).map(str::to_string));
    let cols = flag("--cols=");
    let zoom = flag("--zoom=");
    let (text, origin) = builtin::find(id).expect("built-in scenario");
    let variants = load(text, &origin, &[]).expect("scenario");
    let s = variants.get(variant).expect("variant index");
    println!("{id} variant {variant} '{}' {} seed {seed}", s.variant, cc.name());
    let t0 = std::time::Instant::now();
    let out = simulate(s, cc, seed).expect("run");
    let wall = t0.elapsed().as_secs_f64();
    let p = &out.trace.packets;
    let fr = &out.trace.frames;
    let secs = out.meta.duration_s as usize;
    let mut sent = vec![0i64; secs + 1];
    let mut recv = vec![0i64; secs + 1];
    let mut drop = vec![0i64; secs + 1];
    let mut qd = vec![0i64; secs + 1];
    let mut owd_sum = vec![0i64; secs + 1];
    let mut owd_n = vec![0i64; secs + 1];
    let mut wait_sum = vec![0i64; secs + 1];
    let mut wait_n = vec![0i64; secs + 1];
    let min_owd = (0..p.len())
        .filter(|&i| p.flow[i] == 0 && p.event[i] == 1)
        .map(|i| p.t_us[i] - p.sent_us[i])
        .min()
        .unwrap_or(0);
    let mut owds = Vec::new();
    let mut owds_t = Vec::new();
    let mut waits = Vec::new();
    for i in 0..p.len() {
        if p.flow[i] != 0 {
            continue;
        }
        let s = (p.t_us[i] / 1_000_000) as usize;
        match p.event[i] {
            0 => {
                sent[s] += p.size[i] as i64 * 8;
                // Sender-side delay: frame capture to transmission (includes the encoder's
                // jitter delay, < 0.9 frame interval).
                if p.frame[i] >= 0 {
                    let w = p.t_us[i] - fr.capture_us[p.frame[i] as usize];
                    wait_sum[s] += w;
                    wait_n[s] += 1;
                    if p.t_us[i] >= 5_000_000 {
                        waits.push(w);
                    }
                }
            }
            1 => {
                let owd = p.t_us[i] - p.sent_us[i];
                recv[s] += p.size[i] as i64 * 8;
                qd[s] = qd[s].max(owd);
                owd_sum[s] += owd - min_owd;
                owd_n[s] += 1;
                if p.t_us[i] >= 5_000_000 {
                    owds_t.push(p.t_us[i]);
                    owds.push(owd - min_owd);
                }
            }
            _ => drop[s] += 1,
        }
    }
    let c = &out.trace.controller;
    let col = |name: &str, i: usize| -> Option<String> {
        let column = c.columns.iter().find(|k| k.name == name)?;
        Some(match &column.data {
            ColumnData::Int(v) => format!("{}", v[i]),
            ColumnData::Float(v) => format!("{:.3}", v[i]),
            ColumnData::Text(v) => v[i].to_string(),
        })
    };
    if let Some(cols) = &cols {
        print_columns(&out, cols, zoom.as_deref().unwrap_or("0-1000000@1000"));
    }
    for k in 0..secs {
        if summary_only || cols.is_some() {
            break;
        }
        let row = (0..c.len()).rev().find(|&i| c.t_us[i] <= (k as i64 + 1) * 1_000_000);
        let tgt = row.map_or(0, |i| c.target_bps[i]);
        print!(
            "{k:4} s  target {:6} kbps  send {:6} kbps  recv {:6} kbps  max owd {:5} ms  drops {}",
            tgt / 1000,
            sent[k] / 1000,
            recv[k] / 1000,
            qd[k] / 1000,
            drop[k]
        );
        if state {
            print!(
                "  mean q {:5.1} ms  snd wait {:5.1} ms",
                owd_sum[k] as f64 / owd_n[k].max(1) as f64 / 1000.0,
                wait_sum[k] as f64 / wait_n[k].max(1) as f64 / 1000.0
            );
            if let Some(i) = row {
                for name in STATE_COLUMNS {
                    if let Some(v) = col(name, i) {
                        print!("  {name}={v}");
                    }
                }
            }
        }
        println!();
    }
    // Steady state: queuing delay of packets received more than 3 s after any capacity change of
    // link 0 (the transients of a step are left out).
    let changes: Vec<i64> = {
        let l = &out.trace.links;
        let mut last = -2;
        let mut v = Vec::new();
        for i in (0..l.t_us.len()).filter(|&i| l.link[i] == 0) {
            if l.capacity_bps[i] != last {
                last = l.capacity_bps[i];
                v.push(l.t_us[i]);
            }
        }
        v
    };
    let mut steady: Vec<i64> = owds
        .iter()
        .zip(&owds_t)
        .filter(|(_, &t)| !changes.iter().any(|&c| t >= c && t < c + 3_000_000))
        .map(|(&q, _)| q)
        .collect();
    let steady_share = steady.len() as f64 / owds.len().max(1) as f64;
    println!(
        "steady (>3 s after a capacity change, {:.0} % of packets): queuing delay mean {:.1} ms p50 {:.1} ms p95 {:.1} ms",
        100.0 * steady_share,
        mean(&steady) / 1000.0,
        percentile(&mut steady, 0.5) as f64 / 1000.0,
        percentile(&mut steady, 0.95) as f64 / 1000.0
    );
    let q_mean = mean(&owds) / 1000.0;
    let q_p95 = percentile(&mut owds, 0.95) as f64 / 1000.0;
    let w_mean = mean(&waits) / 1000.0;
    let w_p95 = percentile(&mut waits, 0.95) as f64 / 1000.0;
    let goodput = recv[5..secs].iter().sum::<i64>() as f64 / (secs - 5) as f64 / 1000.0;
    println!(
        "summary {id} {} seed {seed} (from 5 s): queuing delay mean {q_mean:.1} ms p95 {q_p95:.1} ms, \
         sender delay mean {w_mean:.1} ms p95 {w_p95:.1} ms, goodput {goodput:.0} kbps, drops {}",
        cc.name(),
        drop.iter().sum::<i64>()
    );
    // Loss and utilisation of the first link's capacity (flow 0, from 5 s on).
    let sent_n = (0..p.len()).filter(|&i| p.flow[i] == 0 && p.event[i] == 0).count();
    let l = &out.trace.links;
    let (mut cap_sum, mut cap_n) = (0.0f64, 0.0f64);
    for i in (0..l.t_us.len()).filter(|&i| l.link[i] == 0 && l.t_us[i] >= 5_000_000 && l.capacity_bps[i] >= 0)
    {
        cap_sum += l.capacity_bps[i] as f64;
        cap_n += 1.0;
    }
    println!(
        "loss {:.2} %, utilisation {:.3} (goodput / mean capacity of link 0 from 5 s)",
        100.0 * drop.iter().sum::<i64>() as f64 / sent_n.max(1) as f64,
        goodput * 1000.0 / (cap_sum / cap_n.max(1.0))
    );
    println!(
        "{} events, {} packet rows, wall {:.3} s, {:.0}x real time",
        out.events,
        p.len(),
        wall,
        out.meta.duration_s / wall
    );
}

/// `--cols` / `--zoom`: rows of `bin` ms between `from` and `to` s with send / receive rates of
/// flow 0, the forward link's capacity and largest queue, and the chosen controller columns.
fn print_columns(out: &rtcbench_sim::RunOutput, cols: &str, zoom: &str) {
    let (range, bin) = zoom.split_once('@').expect("--zoom=FROM-TO@MS");
    let (from, to) = range.split_once('-').expect("--zoom=FROM-TO@MS");
    let (from, to): (f64, f64) = (from.parse().expect("FROM"), to.parse().expect("TO"));
    let bin_us = bin.parse::<i64>().expect("MS") * 1000;
    let c = &out.trace.controller;
    if cols == "list" {
        let names: Vec<&str> = c.columns.iter().map(|k| k.name.as_str()).collect();
        println!("columns: {}", names.join(","));
        return;
    }
    let wanted: Vec<usize> =
        cols.split(',').filter_map(|w| c.columns.iter().position(|k| k.name == w)).collect();
    let n = (out.meta.duration_s * 1e6) as usize / bin_us as usize + 1;
    let (mut sent, mut recv, mut drop, mut owd) =
        (vec![0i64; n], vec![0i64; n], vec![0i64; n], vec![0i64; n]);
    let p = &out.trace.packets;
    for i in (0..p.len()).filter(|&i| p.flow[i] == 0) {
        let b = (p.t_us[i] / bin_us) as usize;
        match p.event[i] {
            0 => sent[b] += p.size[i] as i64 * 8,
            1 => {
                recv[b] += p.size[i] as i64 * 8;
                owd[b] = owd[b].max(p.t_us[i] - p.sent_us[i]);
            }
            _ => drop[b] += 1,
        }
    }
    let l = &out.trace.links;
    let (mut cap, mut queue) = (vec![-1000i64; n], vec![0i64; n]);
    for i in (0..l.t_us.len()).filter(|&i| l.link[i] == 0) {
        let b = (l.t_us[i] / bin_us) as usize;
        if b < n {
            cap[b] = l.capacity_bps[i];
            queue[b] = queue[b].max(l.queue_bytes[i]);
        }
    }
    let kbps = |bits: i64| bits * 1000 / bin_us;
    for k in 0..n - 1 {
        let t0 = k as i64 * bin_us;
        if (t0 as f64) < from * 1e6 || (t0 as f64) >= to * 1e6 {
            continue;
        }
        let row = (0..c.len()).rev().find(|&i| c.t_us[i] <= t0 + bin_us);
        let mut line = format!(
            "{:7.1} s cap {:5} target {:5} send {:5} recv {:5} queue {:6} B owd {:4} ms drops {:2}",
            t0 as f64 / 1e6,
            cap[k] / 1000,
            row.map_or(0, |i| c.target_bps[i]) / 1000,
            kbps(sent[k]),
            kbps(recv[k]),
            queue[k],
            owd[k] / 1000,
            drop[k]
        );
        for &ci in &wanted {
            let col = &c.columns[ci];
            let v = match (&col.data, row) {
                (_, None) => "-".to_string(),
                (ColumnData::Int(v), Some(i)) if col.name.ends_with("_bps") => format!("{}", v[i] / 1000),
                (ColumnData::Int(v), Some(i)) => format!("{}", v[i]),
                (ColumnData::Float(v), Some(i)) => format!("{:.2}", v[i]),
                (ColumnData::Text(v), Some(i)) => v[i].to_string(),
            };
            line.push_str(&format!(" {} {v}", col.name.trim_end_matches("_bps")));
        }
        println!("{line}");
    }
}
