//! Writes the committed seed corpus, `crates/rtcbench-fuzz/corpus/<target>/<hash>`, from
//! rtcbench's own output: the RTP headers, RTCP packets and TCP headers of short simulated calls
//! with each controller (so each feedback format appears as the simulator really sends it), their
//! UDP packets as IPv4 and IPv6 datagrams, the loss-recovery formats (NACK, PLI, FIR, RTX, RED,
//! ULPFEC, FlexFEC) as `rtcbench-wire` writes them, the shipped capacity traces, and built-in
//! scenarios.
//!
//! `cargo run -p rtcbench-fuzz --bin make-corpus` replaces the corpus folders' files;
//! `make-corpus TARGET...` replaces only those targets' folders. The simulation is
//! deterministic, so the same sources give the same files.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;

use rtcbench_cc::ControllerKind;
use rtcbench_fuzz::runner::hash;
use rtcbench_fuzz::targets::{SET_MARKER, TARGETS};
use rtcbench_scenario::{self as scenario, builtin};
use rtcbench_sim::{simulate_with, Captured, CapturedTransport, RunOptions};
use rtcbench_units::{DataSize, SeqNo};
use rtcbench_wire::ip::ipv4_udp_datagram;
use rtcbench_wire::rtcp::{
    emit_compound, RtcpMessage, FMT_AFB, FMT_CCFB, FMT_FIR, FMT_NACK, FMT_PLI, FMT_TWCC, PT_PSFB, PT_RR,
    PT_RTPFB, PT_SR, PT_XR,
};
use rtcbench_wire::rtp::{FrameMarking, RtpHeaderRepr};
use rtcbench_wire::{
    write_osn, Ecn, FirRepr, FlexfecHeaderRepr, NackRepr, PliRepr, ProtectedPacket, ReceiverReportRepr,
    RedBlock, RedHeaderRepr, UlpfecHeaderRepr, Vp8DescriptorRepr, OSN_LEN,
};

/// Distinct packets kept per packet target: enough shapes, a small corpus.
const PER_TARGET: usize = 40;

/// The runs whose captures seed the packet targets: (scenario, controller, overrides). Each
/// controller gets the feedback its spec prescribes: gcc transport-wide feedback, gcc-draft REMB
/// with RRs and XR (receive side) or TWCC (send side), nada and scream RFC 8888; the TCP and L4S
/// scenarios add TCP headers with SACK and ECN-marked CCFB reports.
const RUNS: &[(&str, ControllerKind, &[&str])] = &[
    ("rfc8867-5.1", ControllerKind::Gcc, &["duration=15s", "delay=50ms", "mechanism=link-rate"]),
    ("rfc8867-5.1", ControllerKind::GccDraft, &["duration=15s", "delay=50ms", "mechanism=link-rate"]),
    (
        "rfc8867-5.1",
        ControllerKind::GccDraft,
        &["duration=15s", "delay=50ms", "mechanism=link-rate", "controller.gcc-draft.deployment=send-side"],
    ),
    ("rfc8867-5.1", ControllerKind::Nada, &["duration=15s", "delay=50ms", "mechanism=link-rate"]),
    ("rfc8867-5.1", ControllerKind::Scream, &["duration=15s", "delay=50ms", "mechanism=link-rate"]),
    ("rfc8867-5.6", ControllerKind::Gcc, &["duration=15s"]),
    ("rfc8867-6.2-l4s", ControllerKind::Scream, &["duration=15s"]),
    ("rfc8867-6.2-l4s", ControllerKind::Nada, &["duration=15s"]),
];

/// Built-in scenarios copied as seeds (every RFC 8867 case and the trace scenarios, plus a few
/// of the seeds' experiments with other features).
const SCENARIOS: &[&str] = &[
    "rfc8867-5.1",
    "rfc8867-5.2",
    "rfc8867-5.3",
    "rfc8867-5.4",
    "rfc8867-5.5",
    "rfc8867-5.6",
    "rfc8867-5.7",
    "rfc8867-5.8",
    "rfc8867-6.1",
    "rfc8867-6.2",
    "rfc8867-6.2-l4s",
    "rfc8867-6.3",
    "seed000-5.2.6",
    "seed001-staircase",
    "seed002-vs-tcp-gcc-first",
    "seed003-loss-delay",
    "trace-lte-drive",
    "trace-lte-walk",
    "trace-wifi-office",
];

/// Scenario seeds with one override each, in the scenario target's format.
const WITH_SETS: &[(&str, &str)] = &[
    ("rfc8867-5.1", "links.forward.delay=80ms"),
    ("rfc8867-5.1", "delay=[\"10ms\", \"20ms\"]"),
    ("rfc8867-5.2", "duration=30s"),
    ("rfc8867-5.1", "controller.gcc-draft.deployment=send-side"),
    ("trace-wifi-office", "links.forward.capacity_trace.ignore=[\"rtt\"]"),
];

fn main() -> Result<(), String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let only: Vec<String> = std::env::args().skip(1).collect();
    if let Some(unknown) = only.iter().find(|name| !TARGETS.iter().any(|t| t.name == *name)) {
        return Err(format!("no target {unknown:?}; the targets are those `rtcbench-fuzz list` shows"));
    }
    let mut corpus: Vec<(&str, Vec<u8>)> = Vec::new();
    packets(&mut corpus)?;
    loss_recovery(&mut corpus)?;
    call_receiver(&mut corpus)?;
    traces(&mut corpus);
    scenarios(&mut corpus)?;
    event_logs(&mut corpus)?;
    for target in TARGETS.iter().filter(|t| only.is_empty() || only.iter().any(|name| name == t.name)) {
        let dir = root.join(target.name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| format!("cannot clear {}: {e}", dir.display()))?;
        }
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        let mine: Vec<&Vec<u8>> = corpus.iter().filter(|(t, _)| *t == target.name).map(|(_, d)| d).collect();
        let bytes: usize = mine.iter().map(|d| d.len()).sum();
        for data in &mine {
            let path = dir.join(format!("{:016x}", hash(data)));
            std::fs::write(&path, data).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        println!("{:<17} {:>3} seeds, {bytes:>6} bytes", target.name, mine.len());
    }
    Ok(())
}

/// What tells packets of one target apart: type, flags, length class.
type Shape = Vec<u8>;

/// Chooses the packets of each target: the first of each shape (type, flags, length class),
/// then others spread evenly over the run, up to [`PER_TARGET`] distinct packets.
#[derive(Default)]
struct Picker {
    /// Per target, its distinct packets in capture order with their shapes.
    seen: BTreeMap<&'static str, Vec<(Shape, Vec<u8>)>>,
    distinct: BTreeSet<(&'static str, Vec<u8>)>,
}

impl Picker {
    fn offer(&mut self, target: &'static str, shape: Vec<u8>, data: &[u8]) {
        if self.distinct.insert((target, data.to_vec())) {
            self.seen.entry(target).or_default().push((shape, data.to_vec()));
        }
    }

    fn pick(self, corpus: &mut Vec<(&'static str, Vec<u8>)>) {
        for (target, packets) in self.seen {
            let mut shapes = BTreeSet::new();
            let mut chosen: Vec<bool> =
                packets.iter().map(|(shape, _)| shapes.insert(shape.clone())).collect();
            let mut left = PER_TARGET.saturating_sub(shapes.len().min(PER_TARGET));
            let rest: Vec<usize> = (0..packets.len()).filter(|&k| !chosen[k]).collect();
            let step = (rest.len() / left.max(1)).max(1);
            for &k in rest.iter().step_by(step) {
                if left == 0 {
                    break;
                }
                chosen[k] = true;
                left -= 1;
            }
            let picked = packets.into_iter().zip(chosen).filter(|(_, c)| *c).map(|((_, data), _)| data);
            corpus.extend(picked.take(PER_TARGET).map(|data| (target, data)));
        }
    }
}

fn packets(corpus: &mut Vec<(&'static str, Vec<u8>)>) -> Result<(), String> {
    let mut picker = Picker::default();
    for &(id, cc, sets) in RUNS {
        let (text, origin) = builtin::find(id).ok_or_else(|| format!("no built-in scenario {id}"))?;
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let variant = scenario::load(text, &origin, &sets).map_err(|e| e.to_string())?.remove(0);
        let run =
            simulate_with(&variant, cc.into(), 1, RunOptions { capture: true, ..RunOptions::default() })
                .map_err(|e| e.to_string())?;
        for packet in &run.capture {
            let data = &packet.data;
            if let CapturedTransport::RtpUdp = packet.transport {
                ip(&mut picker, packet);
            }
            match packet.transport {
                CapturedTransport::Tcp if data.len() > 13 => {
                    // Flags and length: SYN, ACK, FIN, with and without SACK blocks.
                    picker.offer("tcp", vec![data[13], data.len() as u8], data);
                }
                CapturedTransport::RtpUdp if data.len() >= 2 && (192..=223).contains(&data[1]) => {
                    rtcp(&mut picker, data);
                }
                CapturedTransport::RtpUdp if data.len() >= 12 => {
                    // Payload type, marker and header length: video, audio, probes, extensions.
                    picker.offer("rtp", vec![data[0], data[1], data.len() as u8], data);
                }
                _ => {}
            }
        }
    }
    picker.pick(corpus);
    Ok(())
}

/// A captured UDP packet as the IPv4 datagram a relay reads (header bytes only: the payload is
/// zeros), with the ECN codepoint its sender set; and, once per shape, the same as IPv6.
fn ip(picker: &mut Picker, packet: &Captured) {
    let addr = |node: u16, port| SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, node as u8 + 1), port);
    let (src, dst) = (addr(packet.src, 5004), addr(packet.dst, 5004));
    let ecn = Ecn::from_bits(packet.ecn);
    let Ok(v4) = ipv4_udp_datagram(src, dst, ecn, &packet.data, 0) else { return };
    picker.offer("ip", vec![4, packet.ecn, (v4.len().min(1024) / 64) as u8], &v4);
    // IPv6 (RFC 8200 §3): version 6, the ECN bits in the traffic class, payload length, UDP (17),
    // hop limit 64, ::ffff-mapped addresses, then the IPv4 datagram's UDP header and data.
    let udp = &v4[20..];
    let mut v6 = vec![0x60, packet.ecn << 4, 0, 0];
    v6.extend_from_slice(&(udp.len() as u16).to_be_bytes());
    v6.extend_from_slice(&[17, 64]);
    v6.extend_from_slice(&src.ip().to_ipv6_mapped().octets());
    v6.extend_from_slice(&dst.ip().to_ipv6_mapped().octets());
    v6.extend_from_slice(udp);
    picker.offer("ip", vec![6, packet.ecn, (v6.len().min(1024) / 64) as u8], &v6);
}

/// A compound RTCP packet seeds the compound target, and each of its packets the target of its
/// type.
fn rtcp(picker: &mut Picker, data: &[u8]) {
    let mut shape = Vec::new();
    let mut at = 0;
    while at + 4 <= data.len() {
        let len = (usize::from(u16::from_be_bytes([data[at + 2], data[at + 3]])) + 1) * 4;
        let Some(packet) = data.get(at..at + len) else { break };
        let (fmt, pt) = (packet[0] & 0x1F, packet[1]);
        let target = match (pt, fmt) {
            (PT_SR, _) => Some("rtcp-sr"),
            (PT_RR, _) => Some("rtcp-rr"),
            (PT_RTPFB, FMT_TWCC) => Some("rtcp-twcc"),
            (PT_RTPFB, FMT_CCFB) => Some("rtcp-ccfb"),
            (PT_PSFB, FMT_AFB) if packet.get(12..16) == Some(b"REMB") => Some("rtcp-remb"),
            (PT_RTPFB, FMT_NACK) => Some("rtcp-nack"),
            (PT_PSFB, FMT_PLI) => Some("rtcp-pli"),
            (PT_PSFB, FMT_FIR) => Some("rtcp-fir"),
            (PT_XR, _) => Some("rtcp-xr"),
            _ => None,
        };
        // Within a type, lengths differ in blocks, chunks, reports and SSRCs.
        let size_class = (len.min(1024) / 8) as u8;
        if let Some(target) = target {
            picker.offer(target, vec![fmt, size_class], packet);
        }
        shape.extend([pt, fmt, size_class]);
        at += len;
    }
    picker.offer("rtcp-compound", shape, data);
}

/// Loss-recovery seeds written with `rtcbench-wire`'s emitters: NACK, PLI and FIR alone and in
/// compounds; retransmissions; RED payloads, one carrying ULPFEC; and FEC headers with each
/// mask length. (The simulator's NACKs and PLIs, if a run has losses, come from the captures.)
fn loss_recovery(corpus: &mut Vec<(&'static str, Vec<u8>)>) -> Result<(), String> {
    let e = |e: rtcbench_wire::WireError| e.to_string();
    let nack = |lost: Vec<u16>| NackRepr { sender_ssrc: 0x3333_0001, media_ssrc: 0x1111_1111, lost };
    let nacks = [
        nack(vec![7]),
        // A run across the wrap, then one more: two entries.
        nack((65530..=65535).chain(0..=12).collect()),
        // 41 losses in a row and every other packet of a range.
        nack((100..=140).chain((200..=240).step_by(2)).collect()),
    ];
    for n in &nacks {
        corpus.push(("rtcp-nack", n.to_bytes().map_err(e)?));
    }
    // The first NACK with a word of padding (RFC 3550 §6.4.1).
    let mut padded = nacks[0].to_bytes().map_err(e)?;
    padded[0] |= 0x20;
    padded[3] += 1;
    padded.extend_from_slice(&[0, 0, 0, 4]);
    corpus.push(("rtcp-nack", padded));

    let pli = PliRepr { sender_ssrc: 0x3333_0001, media_ssrc: 0x1111_1111 };
    corpus.push(("rtcp-pli", pli.to_bytes().map_err(e)?));
    let mut padded = pli.to_bytes().map_err(e)?;
    padded[0] |= 0x20;
    padded[3] += 1;
    padded.extend_from_slice(&[0, 0, 0, 4]);
    corpus.push(("rtcp-pli", padded));

    let firs = [
        FirRepr { sender_ssrc: 0x3333_0001, entries: vec![(0x1111_1111, 0)] },
        FirRepr { sender_ssrc: 0x3333_0001, entries: vec![(0x1111_1111, 255), (0x1111_2222, 1), (7, 9)] },
    ];
    for f in &firs {
        corpus.push(("rtcp-fir", f.to_bytes().map_err(e)?));
    }

    // What a receiver sends on losses, after its RR.
    let rr = RtcpMessage::ReceiverReport(ReceiverReportRepr { ssrc: 0x3333_0001, blocks: vec![] });
    let compounds = [
        vec![rr.clone(), RtcpMessage::Nack(nacks[1].clone())],
        vec![rr.clone(), RtcpMessage::Pli(pli), RtcpMessage::Fir(firs[1].clone())],
        vec![rr, RtcpMessage::Nack(nacks[0].clone()), RtcpMessage::Pli(pli)],
    ];
    for c in &compounds {
        corpus.push(("rtcp-compound", emit_compound(c).map_err(e)?));
    }

    // Retransmissions: a video header with extensions and one without, each with the OSN and
    // a few payload bytes.
    let rtx = |header: RtpHeaderRepr, osn: u16, payload: &[u8]| -> Result<Vec<u8>, String> {
        let mut bytes = vec![0; header.buffer_len() + OSN_LEN];
        let n = header.emit(&mut bytes).map_err(e)?;
        write_osn(&mut bytes[n..], osn).map_err(e)?;
        bytes.extend_from_slice(payload);
        Ok(bytes)
    };
    let video = RtpHeaderRepr {
        payload_type: 97,
        marker: true,
        seq: SeqNo::new(7),
        timestamp: 0xDEAD_BEEF,
        ssrc: 0x1111_2222,
        csrc: None,
        abs_send_time: Some(0x04_0000),
        transport_seq: Some(SeqNo::new(65535)),
        frame_marking: Some(FrameMarking { start: true, end: true, independent: false }),
        padding_len: 0,
    };
    let plain = RtpHeaderRepr {
        payload_type: 97,
        seq: SeqNo::new(65535),
        ssrc: 0x1111_2222,
        ..RtpHeaderRepr::default()
    };
    corpus.push(("rtx", rtx(video, 0x1234, &[0xAA; 6])?));
    corpus.push(("rtx", rtx(plain, 0, &[])?));

    // FEC over packets with varied fields, from a fixed hash of their index.
    let protected = |first: u16, n: u16| -> Vec<ProtectedPacket> {
        (0..n)
            .map(|k| {
                let r = u64::from(k)
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                ProtectedPacket {
                    seq: SeqNo::new(u64::from(first.wrapping_add(k))),
                    padding: r & 1 != 0,
                    extension: true,
                    csrc_count: 0,
                    marker: k == n - 1,
                    payload_type: 96,
                    timestamp: 90_000 + 3000 * u32::from(k / 4),
                    length: DataSize::bytes(200 + (r >> 40) % 1000),
                }
            })
            .collect()
    };
    for (first, n) in [(65535, 2), (1000, 5), (2000, 30)] {
        let mut bytes = UlpfecHeaderRepr::protect(&protected(first, n)).map_err(e)?.to_bytes().map_err(e)?;
        bytes.extend_from_slice(&[0x5A; 4]); // the start of the FEC payload
        corpus.push(("ulpfec", bytes));
    }
    for (first, n) in [(65535, 2), (1000, 20), (2000, 100)] {
        let mut bytes = FlexfecHeaderRepr::protect(&protected(first, n)).map_err(e)?.to_bytes().map_err(e)?;
        bytes.extend_from_slice(&[0x5A; 4]);
        corpus.push(("flexfec", bytes));
    }

    // RED: the primary block alone; two redundant Opus frames ahead of the primary one; and
    // WebRTC's use, a ULPFEC packet (PT 117) as the primary block.
    let red = |blocks: Vec<RedBlock>, primary_pt, data: &[u8]| -> Result<Vec<u8>, String> {
        let mut bytes = RedHeaderRepr { blocks, primary_pt }.to_bytes().map_err(e)?;
        bytes.extend_from_slice(data);
        Ok(bytes)
    };
    corpus.push(("red", red(vec![], 96, &[0x11; 4])?));
    let opus =
        vec![RedBlock { pt: 111, ts_offset: 1920, len: 3 }, RedBlock { pt: 111, ts_offset: 960, len: 2 }];
    corpus.push(("red", red(opus, 111, &[0x22; 8])?));
    let fec = UlpfecHeaderRepr::protect(&protected(500, 3)).map_err(e)?.to_bytes().map_err(e)?;
    corpus.push(("red", red(vec![], 117, &fec)?));

    // VP8 descriptors: libwebrtc's 15-bit picture ID form; the required byte alone; every
    // optional field with a 7-bit picture ID.
    let vp8 = Vp8DescriptorRepr { start_of_partition: true, picture_id: Some(0x7FFF), ..Default::default() };
    corpus.push(("vp8", vp8.to_bytes().map_err(e)?));
    corpus.push(("vp8", vec![0x10, 0x9D, 0x01, 0x2A]));
    corpus.push(("vp8", vec![0xA2, 0xF0, 0x55, 0x07, 0x40, 0x9D]));
    Ok(())
}

/// Seeds of `call-receiver`: what one call's receiver got in lossy runs with FEC (10 % loss,
/// 100 ms RTT: video, retransmissions, sender reports, and ULPFEC in RED or FlexFEC on its own
/// stream), in windows of about 4 kB.
fn call_receiver(corpus: &mut Vec<(&'static str, Vec<u8>)>) -> Result<(), String> {
    let (text, origin) =
        builtin::find("seed003-loss-delay").ok_or("no built-in scenario seed003-loss-delay")?;
    for (fec, pt_video, pt_rtx, pt_fec) in [("ulpfec", 116, 117, 116), ("flexfec", 96, 97, 35)] {
        let sets = ["duration=12s".to_string(), "delay=50ms".to_string(), format!("calls.0.fec={fec}")];
        let variant = scenario::load(text, &origin, &sets).map_err(|e| e.to_string())?.remove(0);
        let run = simulate_with(
            &variant,
            ControllerKind::Gcc.into(),
            1,
            RunOptions { capture: true, ..RunOptions::default() },
        )
        .map_err(|e| e.to_string())?;
        let rtp = |p: &&Captured| matches!(p.transport, CapturedTransport::RtpUdp) && p.data.len() >= 12;
        let ssrc = |d: &[u8]| u32::from_be_bytes([d[8], d[9], d[10], d[11]]);
        let first = |pt: u8| run.capture.iter().filter(rtp).find(|p| p.data[1] & 0x7F == pt);
        let (Some(video), Some(rtx), Some(repair)) = (first(pt_video), first(pt_rtx), first(pt_fec)) else {
            return Err(format!("the lossy run with {fec} sent no video, RTX or FEC"));
        };
        let ids = [ssrc(&video.data), ssrc(&rtx.data), if fec == "flexfec" { ssrc(&repair.data) } else { 0 }];
        if fec == "flexfec" {
            // A repair packet as sent: an RTP header with a CSRC, and the FlexFEC header.
            corpus.push(("rtp", repair.data.clone()));
            let (_, header_len) = RtpHeaderRepr::parse(&repair.data).map_err(|e| e.to_string())?;
            corpus.push(("flexfec", repair.data[header_len..].to_vec()));
        }
        let ours = |p: &&Captured| {
            let d = &p.data;
            if (192..=223).contains(&d[1]) {
                // The sender's reports only (the receiver's feedback goes the other way).
                return d[1] == 200 && u32::from_be_bytes([d[4], d[5], d[6], d[7]]) == ids[0];
            }
            ids.contains(&ssrc(d))
        };
        let datagrams: Vec<&Captured> = run.capture.iter().filter(rtp).filter(ours).collect();
        // Windows from 4 s on (FEC starts once loss is reported) and one from the start.
        for start in [0, datagrams.len() / 3, datagrams.len() / 2, 2 * datagrams.len() / 3] {
            let mut seed: Vec<u8> = ids.iter().flat_map(|id| id.to_be_bytes()).collect();
            for p in datagrams.iter().skip(start) {
                if seed.len() + 1 + p.data.len() > 4096 || p.data.len() > 255 {
                    break;
                }
                seed.push(p.data.len() as u8);
                seed.extend_from_slice(&p.data);
            }
            corpus.push(("call-receiver", seed));
        }
    }
    Ok(())
}

fn traces(corpus: &mut Vec<(&'static str, Vec<u8>)>) {
    for &(path, text) in builtin::TRACES {
        // The whole shipped file, and its first lines: small inputs mutate faster.
        let head: String = text.lines().take(40).map(|l| format!("{l}\n")).collect();
        if path.ends_with(".mahimahi") {
            corpus.push(("trace-mahimahi", text.as_bytes().to_vec()));
            corpus.push(("trace-mahimahi", head.into_bytes()));
        } else if path.ends_with(".csv") {
            corpus.push(("trace-csv", text.as_bytes().to_vec()));
            corpus.push(("trace-csv", head.into_bytes()));
        } else if path.ends_with(".json") {
            // The first byte is the target's options: '0' uplink, nothing ignored; '?' downlink,
            // loss, rtt and jitter ignored.
            for options in ["0", "?"] {
                corpus.push(("trace-opennetlab", format!("{options}{text}").into_bytes()));
            }
        }
    }
    let small = [
        ("trace-mahimahi", "1\n1\n2\n5\n"),
        ("trace-mahimahi", "0\r\n 3 \r\n3\n"),
        ("trace-csv", "# steps\ntime_ms,rate_mbps\n0,1.5\n2500,0\n4000,2\n"),
        ("trace-csv", "rate_bps , time_s\n1e6,0\n2e5,1.25\n"),
        (
            "trace-opennetlab",
            "6{\"type\":\"video\",\"downlink\":{},\"uplink\":{\"trace_pattern\":[{\"duration\":100.5,\"capacity\":300,\
             \"loss\":0,\"rtt\":20,\"jitter\":0,\"time\":0.0},{\"duration\":50,\"capacity\":0}]}}",
        ),
        (
            "trace-opennetlab",
            "1{\"uplink\":{\"trace_pattern\":[]},\"downlink\":{\"trace_pattern\":[{\"duration\":1,\"capacity\":1}]}}",
        ),
    ];
    corpus.extend(small.iter().map(|&(t, s)| (t, s.as_bytes().to_vec())));
}

fn scenarios(corpus: &mut Vec<(&'static str, Vec<u8>)>) -> Result<(), String> {
    let builtin_text = |id: &str| -> Result<String, String> {
        let (text, origin) = builtin::find(id).ok_or_else(|| format!("no built-in scenario {id}"))?;
        Ok(with_builtin_traces(text, &origin))
    };
    for id in SCENARIOS {
        corpus.push(("scenario", builtin_text(id)?.into_bytes()));
    }
    for (id, set) in WITH_SETS {
        corpus.push(("scenario", format!("{}{SET_MARKER}{set}\n", builtin_text(id)?).into_bytes()));
    }
    Ok(())
}

/// Chromium 156's RTC event logs that `rtcbench-eventlog`'s tests read, cut into their top-level
/// fields (each a log of one batch of events): the first two of each kind of event per log.
fn event_logs(corpus: &mut Vec<(&'static str, Vec<u8>)>) -> Result<(), String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../rtcbench-eventlog/tests/data");
    for name in ["chromium156-p2p-sender.log", "chromium156-p2p-receiver.log"] {
        let path = dir.join(name);
        let log = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut seen = BTreeMap::<u32, usize>::new();
        for field in rtcbench_eventlog::fields(&log) {
            let field = field.map_err(|e| format!("{}: {e}", path.display()))?;
            let count = seen.entry(field.number).or_default();
            *count += 1;
            if *count <= 2 {
                corpus.push(("eventlog", log[field.offset..field.body.end].to_vec()));
            }
        }
    }
    Ok(())
}

/// The fuzz target loads from an empty folder, where a trace named beside the scenario is not
/// found: name the compiled-in copy instead, so the seeds reach the trace parsers.
fn with_builtin_traces(text: &str, origin: &str) -> String {
    let dir = origin.strip_prefix("builtin:").and_then(|p| p.rsplit_once('/')).map_or("", |(d, _)| d);
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        match line.split_once("file = \"") {
            Some((head, rest)) if !rest.starts_with("builtin:") => {
                out.push_str(&format!("{head}file = \"builtin:{dir}/{rest}"));
            }
            _ => out.push_str(line),
        }
    }
    out
}
