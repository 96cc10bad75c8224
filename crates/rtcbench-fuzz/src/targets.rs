//! The fuzz targets: one per parser of untrusted input. Each is a thin call that must return,
//! quickly and without panicking, whatever bytes it gets; what a parser returns is ignored,
//! except that a value it accepted is written back (`to_bytes`/`emit`), which must not panic
//! either: whatever parses, rtcbench may later send.
//!
//! To add a target, write a `fn(&[u8])` here, add it to [`TARGETS`], and give it seeds under
//! `corpus/<name>/` (`make-corpus` writes them; see `docs/fuzzing.md`).

use std::borrow::Cow;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use rtcbench_net::{IpFrame, NetPacket};
use rtcbench_rtp::{Ignore, Incoming};
use rtcbench_scenario as scenario;
use rtcbench_sim::call::{FeedbackMode, KeyframeRequest, Receiver, StreamIds};
use rtcbench_sim::link::capacity_trace::opennetlab::{Direction, Unapplied};
use rtcbench_sim::link::capacity_trace::{csv, mahimahi, opennetlab};
use rtcbench_sim::traffic::tcp::wire::TcpRepr;
use rtcbench_units::{DataSize, Duration, Instant};
use rtcbench_wire::ip::{self, FiveTuple};
use rtcbench_wire::rtcp::{emit_compound, parse_compound, RtcpMessage};
use rtcbench_wire::{
    rtx_osn, write_osn, CcfbRepr, FirRepr, FlexfecHeaderRepr, NackRepr, PliRepr, ReceiverReportRepr,
    RedHeaderRepr, RembRepr, RtpHeader, RtpHeaderRepr, SenderReportRepr, TransportFeedbackRepr,
    UlpfecHeaderRepr, Vp8DescriptorRepr, XrRepr,
};
use rtcbench_wire::{Ecn, IPV4_UDP_OVERHEAD};

/// What a target's input is, which picks the mutations that make sense for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// Packet bytes.
    Binary,
    /// Binary, made of RTCP packets: the fuzzer sometimes rewrites the length fields so that
    /// the packets tile the input, which gets mutated bodies past the compound check.
    Rtcp,
    /// Text (read as UTF-8, invalid sequences replaced).
    Text,
}

/// One fuzz target.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// The name on the command line, of its corpus folder and of its findings folder.
    pub name: &'static str,
    /// What it calls, in one line, for `list` and the docs.
    pub about: &'static str,
    pub run: fn(&[u8]),
    pub input: Input,
    /// Mutated inputs are cut to this length.
    pub max_len: usize,
    /// Tokens the mutator inserts or substitutes, besides the words of the seeds (text targets).
    pub dictionary: &'static [&'static str],
}

const RTCP_DICTIONARY: &[&str] = &["REMB"];

/// Numbers that every text format reads, at the edges of its ranges and of `f64`.
pub const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "-1",
    "+1",
    "1e308",
    "1e-308",
    "-1e308",
    "1e15",
    "1e12",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "0.0005",
    "0.4999999",
    "4294967296",
    "9223372036854775807",
    "18446744073709551616",
    "1000000000000",
    "999999999999",
    "99999999999999999999999999",
];

const MAHIMAHI_DICTIONARY: &[&str] = &["\n", "\r\n", "\r", " ", "\t", "\u{a0}", "\u{2028}"];

const CSV_DICTIONARY: &[&str] =
    &["time_s", "time_ms", "rate_bps", "rate_kbps", "rate_mbps", ",", "\n", "\r\n", "#", " ", ",,", "\""];

const JSON_DICTIONARY: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    "\"",
    "null",
    "true",
    "false",
    "\"uplink\"",
    "\"downlink\"",
    "\"trace_pattern\"",
    "\"duration\"",
    "\"capacity\"",
    "\"loss\"",
    "\"rtt\"",
    "\"jitter\"",
    "\"time\"",
    "\"type\"",
    "[]",
    "{}",
    "\\u0000",
    "\\ud800",
];

const SCENARIO_DICTIONARY: &[&str] = &[
    "[variants]",
    "[[links]]",
    "[[calls]]",
    "[[tcp]]",
    "[[cbr]]",
    "[controller]",
    "\n",
    " = ",
    "=",
    "[",
    "]",
    "{",
    "}",
    "\"",
    "'",
    "'''",
    "\"\"\"",
    ",",
    ".",
    "\"$",
    "$",
    "ms",
    "us",
    "s",
    "h",
    "bps",
    "kbps",
    "Mbps",
    "Gbps",
    "B",
    "KB",
    "MB",
    "GB",
    "%",
    "1e30",
    "1e-30",
    "-1",
    "0",
    "nan",
    "inf",
    "-inf",
    "604800s",
    "604801s",
    "100000Mbps",
    "[\"1ms\", \"2ms\", \"3ms\", \"4ms\", \"5ms\", \"6ms\", \"7ms\", \"8ms\", \"9ms\", \"10ms\"]",
    "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]",
    "[\"1Mbps\", \"2Mbps\", \"3Mbps\", \"4Mbps\", \"5Mbps\", \"6Mbps\", \"7Mbps\", \"8Mbps\"]",
    "builtin:scenarios/traces/lte-drive.mahimahi",
    "builtin:scenarios/traces/lte-walk.csv",
    "builtin:scenarios/traces/wifi-office.json",
    "capacity_trace",
    "--set ",
];

/// Every target, in the order `all` runs them.
pub const TARGETS: &[Target] = &[
    Target {
        name: "rtp",
        about: "RtpHeaderRepr::parse and ::parse_packet, RtpHeader::new_checked (RTP header, RFC 8285 extensions)",
        run: rtp,
        input: Input::Binary,
        max_len: 1500,
        dictionary: &[],
    },
    Target {
        name: "rtcp-compound",
        about: "rtcp::parse_compound (compound RTCP, every message type)",
        run: rtcp_compound,
        input: Input::Rtcp,
        max_len: 1500,
        dictionary: RTCP_DICTIONARY,
    },
    Target {
        name: "rtcp-sr",
        about: "SenderReportRepr::parse (RFC 3550 §6.4.1)",
        run: rtcp_sr,
        input: Input::Rtcp,
        max_len: 1024,
        dictionary: &[],
    },
    Target {
        name: "rtcp-rr",
        about: "ReceiverReportRepr::parse (RFC 3550 §6.4.2)",
        run: rtcp_rr,
        input: Input::Rtcp,
        max_len: 1024,
        dictionary: &[],
    },
    Target {
        name: "rtcp-twcc",
        about: "TransportFeedbackRepr::parse (TWCC-01 §3)",
        run: rtcp_twcc,
        input: Input::Rtcp,
        max_len: 1500,
        dictionary: &[],
    },
    Target {
        name: "rtcp-remb",
        about: "RembRepr::parse (draft-alvestrand-rmcat-remb-03)",
        run: rtcp_remb,
        input: Input::Rtcp,
        max_len: 1024,
        dictionary: RTCP_DICTIONARY,
    },
    Target {
        name: "rtcp-ccfb",
        about: "CcfbRepr::parse (RFC 8888)",
        run: rtcp_ccfb,
        input: Input::Rtcp,
        max_len: 1500,
        dictionary: &[],
    },
    Target {
        name: "rtcp-xr",
        about: "XrRepr::parse (RFC 3611 RRTR and DLRR)",
        run: rtcp_xr,
        input: Input::Rtcp,
        max_len: 1024,
        dictionary: &[],
    },
    Target {
        name: "rtcp-nack",
        about: "NackRepr::parse (RFC 4585 §6.2.1 generic NACK); what parses must read back",
        run: rtcp_nack,
        input: Input::Rtcp,
        max_len: 1024,
        dictionary: &[],
    },
    Target {
        name: "rtcp-pli",
        about: "PliRepr::parse (RFC 4585 §6.3.1); what parses must read back",
        run: rtcp_pli,
        input: Input::Rtcp,
        max_len: 64,
        dictionary: &[],
    },
    Target {
        name: "rtcp-fir",
        about: "FirRepr::parse (RFC 5104 §4.3.1); what parses must read back",
        run: rtcp_fir,
        input: Input::Rtcp,
        max_len: 512,
        dictionary: &[],
    },
    Target {
        name: "rtx",
        about: "RtpHeaderRepr::parse, then rtx_osn on the payload (RFC 4588 §4)",
        run: rtx,
        input: Input::Binary,
        max_len: 256,
        dictionary: &[],
    },
    Target {
        name: "red",
        about: "RedHeaderRepr::parse (RFC 2198 §3); what parses must be written back to the same bytes",
        run: red,
        input: Input::Binary,
        max_len: 256,
        dictionary: &[],
    },
    Target {
        name: "ulpfec",
        about: "UlpfecHeaderRepr::parse (RFC 5109 §7.3, §7.4) and ::recover; what parses must read back",
        run: ulpfec,
        input: Input::Binary,
        max_len: 64,
        dictionary: &[],
    },
    Target {
        name: "flexfec",
        about: "FlexfecHeaderRepr::parse (RFC 8627 §4.2.2.1) and ::recover; what parses must read back",
        run: flexfec,
        input: Input::Binary,
        max_len: 64,
        dictionary: &[],
    },
    Target {
        name: "call-receiver",
        about: "a call's Receiver (rtcbench_rtp) fed datagrams: RED, ULPFEC recovery, RTX, VP8 \
                descriptors, NACK timing; input: video and RTX SSRC, then [len u8][bytes] records 2 ms apart",
        run: call_receiver,
        input: Input::Binary,
        max_len: 4096,
        dictionary: &[],
    },
    Target {
        name: "vp8",
        about: "Vp8DescriptorRepr::parse (RFC 7741 §4.2); what parses must be written and read back the same",
        run: vp8,
        input: Input::Binary,
        max_len: 16,
        dictionary: &[],
    },
    Target {
        name: "tcp",
        about: "TcpRepr::parse (TCP header with SACK, the simulator's cross traffic)",
        run: tcp,
        input: Input::Binary,
        max_len: 128,
        dictionary: &[],
    },
    Target {
        name: "ip",
        about: "ip::FiveTuple::parse, ip::ecn, ip::set_ecn, IpFrame (IPv4/IPv6 header, what a relay reads)",
        run: ip_packet,
        input: Input::Binary,
        max_len: 1500,
        dictionary: &[],
    },
    Target {
        name: "trace-mahimahi",
        about: "capacity_trace::mahimahi::parse",
        run: trace_mahimahi,
        input: Input::Text,
        max_len: 128 << 10,
        dictionary: MAHIMAHI_DICTIONARY,
    },
    Target {
        name: "trace-opennetlab",
        about: "capacity_trace::opennetlab::parse (first byte: direction and ignored fields)",
        run: trace_opennetlab,
        input: Input::Text,
        max_len: 64 << 10,
        dictionary: JSON_DICTIONARY,
    },
    Target {
        name: "eventlog",
        about: "EventLog::parse (libwebrtc's RTC event log, rtclog2)",
        run: eventlog,
        input: Input::Binary,
        max_len: 16 << 10,
        dictionary: &[],
    },
    Target {
        name: "trace-csv",
        about: "capacity_trace::csv::parse",
        run: trace_csv,
        input: Input::Text,
        max_len: 16 << 10,
        dictionary: CSV_DICTIONARY,
    },
    Target {
        name: "scenario",
        about: "scenario::load (TOML, variants, validation, built-in traces) with one --set override",
        run: scenario_load,
        input: Input::Text,
        max_len: 16 << 10,
        dictionary: SCENARIO_DICTIONARY,
    },
];

/// The target called `name`.
pub fn find(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

fn rtp(data: &[u8]) {
    if let Ok((repr, _)) = RtpHeaderRepr::parse(data) {
        let mut buf = vec![0; repr.buffer_len()];
        let _ = repr.emit(&mut buf);
    }
    let _ = RtpHeaderRepr::parse_packet(data);
    if let Ok(header) = RtpHeader::new_checked(data) {
        let _ = (header.header_len(), header.csrc_count(), header.extension());
    }
}

fn rtcp_compound(data: &[u8]) {
    if let Ok(messages) = parse_compound(data) {
        if !messages.iter().any(|m| matches!(m, RtcpMessage::Other { .. })) {
            let _ = emit_compound(&messages);
        }
        // The loss-recovery messages are written exactly as they read.
        for m in &messages {
            if matches!(m, RtcpMessage::Nack(_) | RtcpMessage::Pli(_) | RtcpMessage::Fir(_)) {
                let bytes = m.to_bytes().expect("a parsed NACK, PLI or FIR can be written");
                assert_eq!(parse_compound(&bytes).as_deref(), Ok(std::slice::from_ref(m)));
            }
        }
    }
}

fn rtcp_sr(data: &[u8]) {
    if let Ok(sr) = SenderReportRepr::parse(data) {
        let _ = sr.to_bytes();
    }
}

fn rtcp_rr(data: &[u8]) {
    if let Ok(rr) = ReceiverReportRepr::parse(data) {
        let _ = rr.to_bytes();
    }
}

fn rtcp_twcc(data: &[u8]) {
    if let Ok(fb) = TransportFeedbackRepr::parse(data) {
        let _ = (fb.to_bytes(), fb.arrivals(), fb.reference_instant());
    }
}

fn eventlog(data: &[u8]) {
    let _ = rtcbench_eventlog::EventLog::parse(data);
}

fn rtcp_remb(data: &[u8]) {
    if let Ok(remb) = RembRepr::parse(data) {
        let _ = remb.to_bytes();
    }
}

fn rtcp_ccfb(data: &[u8]) {
    if let Ok(ccfb) = CcfbRepr::parse(data) {
        let _ = (ccfb.to_bytes(), ccfb.arrivals(), ccfb.report_instant());
    }
}

fn rtcp_xr(data: &[u8]) {
    if let Ok(xr) = XrRepr::parse(data) {
        let _ = xr.to_bytes();
    }
}

fn rtcp_nack(data: &[u8]) {
    if let Ok(nack) = NackRepr::parse(data) {
        let bytes = nack.to_bytes().expect("a parsed NACK can be written");
        assert!(bytes.len() <= data.len(), "written NACK longer than the one read");
        assert_eq!(NackRepr::parse(&bytes), Ok(nack));
    }
}

fn rtcp_pli(data: &[u8]) {
    if let Ok(pli) = PliRepr::parse(data) {
        assert_eq!(PliRepr::parse(&pli.to_bytes().expect("a PLI can be written")), Ok(pli));
    }
}

fn rtcp_fir(data: &[u8]) {
    if let Ok(fir) = FirRepr::parse(data) {
        assert_eq!(FirRepr::parse(&fir.to_bytes().expect("a parsed FIR can be written")), Ok(fir));
    }
}

/// A retransmission as a receiver reads it: the RTP header, then the OSN after it.
fn rtx(data: &[u8]) {
    if let Ok((_, header_len)) = RtpHeaderRepr::parse(data) {
        if let Ok(osn) = rtx_osn(&data[header_len..]) {
            let mut payload = data[header_len..].to_vec();
            assert_eq!(write_osn(&mut payload, osn).map(|_| payload.as_slice()), Ok(&data[header_len..]));
        }
    }
}

fn red(data: &[u8]) {
    if let Ok(red) = RedHeaderRepr::parse(data) {
        let bytes = red.to_bytes().expect("parsed RED headers can be written");
        assert_eq!(bytes, data[..red.buffer_len()]);
        let _ = red.redundant_len();
    }
}

/// The header, written back and read again; and a recovery from no received packets, which
/// succeeds only when the mask protects exactly one packet.
fn ulpfec(data: &[u8]) {
    if let Ok((fec, len)) = UlpfecHeaderRepr::parse(data) {
        assert!(len <= data.len());
        let bytes = fec.to_bytes().expect("a parsed ULPFEC header can be written");
        assert_eq!(UlpfecHeaderRepr::parse(&bytes), Ok((fec, bytes.len())));
        if let Ok(packet) = fec.recover(&[]) {
            assert_eq!(fec.protected_seqs().collect::<Vec<_>>(), [packet.seq]);
        }
    }
}

/// As [`ulpfec`], for FlexFEC.
fn flexfec(data: &[u8]) {
    if let Ok((fec, len)) = FlexfecHeaderRepr::parse(data) {
        assert!(len <= data.len());
        let bytes = fec.to_bytes().expect("a parsed FlexFEC header can be written");
        assert_eq!(FlexfecHeaderRepr::parse(&bytes), Ok((fec, bytes.len())));
        if let Ok(packet) = fec.recover(&[]) {
            assert_eq!(fec.protected_seqs().collect::<Vec<_>>(), [packet.seq]);
        }
    }
}

/// A call's receiving end fed a sequence of datagrams (see the target's `about`): whatever the
/// network delivers, FEC recovery, retransmissions and frame assembly must not panic, and the
/// receiver's memory stays bounded.
fn call_receiver(data: &[u8]) {
    let ssrc = |at: usize| data.get(at..at + 4).map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    let ids = StreamIds {
        video_ssrc: ssrc(0),
        rtx_ssrc: ssrc(4),
        audio_ssrc: 3,
        receiver_ssrc: 4,
        video_seq0: 0,
        rtx_seq0: 0,
        audio_seq0: 0,
        video_ts0: 0,
        audio_ts0: 0,
        flexfec_ssrc: ssrc(8),
        flexfec_seq0: 0,
        flexfec_ts0: 0,
    };
    let feedback = FeedbackMode::Twcc { interval: Duration::from_millis(50) };
    let mut rx =
        Receiver::new(ids, Instant::ZERO, feedback, Duration::from_secs(1), true, true, KeyframeRequest::Pli);
    let mut now = Instant::ZERO;
    let mut rest = data.get(12..).unwrap_or_default();
    while let Some((&len, tail)) = rest.split_first() {
        let (datagram, next) = tail.split_at(usize::from(len).min(tail.len()));
        rest = next;
        now += Duration::from_millis(2);
        while rx.poll_timeout() <= now {
            let t = rx.poll_timeout();
            rx.on_timeout(t, &mut Ignore);
        }
        let rtcp = datagram.len() >= 2 && (192..=223).contains(&datagram[1]);
        let size = IPV4_UDP_OVERHEAD + DataSize::bytes(datagram.len() as u64 + 1000);
        rx.on_packet(now, Incoming { data: datagram, size, ecn: Ecn::NotEct, rtcp }, &mut Ignore);
        rx.outbox.clear();
    }
}

/// The descriptor, written back (in libwebrtc's form) and read again.
fn vp8(data: &[u8]) {
    if let Ok((repr, len)) = Vp8DescriptorRepr::parse(data) {
        assert!(len <= data.len());
        let bytes = repr.to_bytes().expect("a parsed VP8 descriptor can be written");
        assert_eq!(Vp8DescriptorRepr::parse(&bytes), Ok((repr, bytes.len())));
    }
}

fn tcp(data: &[u8]) {
    if let Ok(repr) = TcpRepr::parse(data) {
        let _ = repr.to_bytes();
    }
}

/// A raw packet as a relay hands it to a network element: classified, read and marked. Marking
/// CE must read back as CE and leave the 5-tuple alone.
fn ip_packet(data: &[u8]) {
    let tuple = FiveTuple::parse(data);
    let mut bytes = data.to_vec();
    if ip::set_ecn(&mut bytes, rtcbench_wire::Ecn::Ce).is_ok() {
        assert_eq!(ip::ecn(&bytes), Ok(rtcbench_wire::Ecn::Ce));
        assert_eq!(FiveTuple::parse(&bytes), tuple);
    }
    let mut frame = IpFrame::new(data.to_vec());
    let _ = (frame.size(), frame.flow_key());
    frame.set_ecn(rtcbench_wire::Ecn::Ce);
}

fn text(data: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(data)
}

fn trace_mahimahi(data: &[u8]) {
    let _ = mahimahi::parse(&text(data));
}

fn trace_csv(data: &[u8]) {
    let _ = csv::parse(&text(data));
}

/// The first byte picks the parser's options: bit 0 the downlink, bits 1-3 ignore loss, rtt and
/// jitter (so the seeds start with a digit).
fn trace_opennetlab(data: &[u8]) {
    let Some((&options, json)) = data.split_first() else { return };
    let direction = if options & 1 == 0 { Direction::Uplink } else { Direction::Downlink };
    let ignore: Vec<Unapplied> = [(2, Unapplied::Loss), (4, Unapplied::Rtt), (8, Unapplied::Jitter)]
        .into_iter()
        .filter_map(|(bit, u)| (options & bit != 0).then_some(u))
        .collect();
    let _ = opennetlab::parse(&text(json), direction, &ignore);
}

/// The line that separates a scenario input into the scenario text and one `--set` override.
pub const SET_MARKER: &str = "\n--set ";

/// Loads the scenario text; what follows the last `SET_MARKER` line, if any, is one override.
/// A scenario that loads is written out as TOML (`to_toml` must not fail) and the first variant
/// loaded again.
fn scenario_load(data: &[u8]) {
    let input = text(data);
    let (text, sets) = match input.rsplit_once(SET_MARKER) {
        Some((text, set)) => (text, vec![set.lines().next().unwrap_or("").to_string()]),
        None => (&*input, Vec::new()),
    };
    let origin = sandbox_origin();
    if !files_stay_in_sandbox(text, origin, &sets) {
        return;
    }
    let Ok(variants) = scenario::load(text, origin, &sets) else { return };
    for (k, variant) in variants.iter().take(4).enumerate() {
        let resolved = variant.to_toml();
        if k == 0 && files_stay_in_sandbox(&resolved, origin, &[]) {
            let _ = scenario::load(&resolved, origin, &[]);
        }
    }
}

/// The origin the scenario target loads from: a file in an empty folder of its own, so that a
/// relative trace `file` names nothing that exists.
fn sandbox_origin() -> &'static str {
    static ORIGIN: OnceLock<String> = OnceLock::new();
    ORIGIN.get_or_init(|| {
        let dir = sandbox_dir();
        // If the folder cannot be made, relative names find nothing all the same.
        let _ = std::fs::create_dir_all(&dir);
        dir.join("fuzz.toml").display().to_string()
    })
}

fn sandbox_dir() -> PathBuf {
    std::env::temp_dir().join(format!("rtcbench-fuzz-{}", std::process::id()))
}

/// Removes the scenario target's empty folder, if this process made one.
pub fn cleanup() {
    let _ = std::fs::remove_dir(sandbox_dir());
}

/// Whether every trace file the scenario could name stays inside the sandbox folder.
///
/// The loader reads (and never writes) the files that `capacity_trace.file` names; a fuzzed
/// scenario must not read `/dev/zero` or a FIFO, or anything outside the empty sandbox. A `file`
/// value is always one of the document's strings (a value, an element of a set, or of a
/// `[variants]` list), so the input is skipped unless every string of the document after the
/// overrides is `builtin:` (compiled in) or a relative path without `..`. A document that does
/// not parse reaches no trace either: the loader parses the same text with the same parser first.
fn files_stay_in_sandbox(text: &str, origin: &str, sets: &[String]) -> bool {
    let Ok(edited) = scenario::apply_overrides(text, origin, sets) else { return true };
    let Ok(doc) = edited.parse::<toml::Table>() else { return true };
    let mut safe = true;
    for value in doc.values() {
        visit_strings(value, &mut |s| safe &= s.starts_with("builtin:") || is_confined(s));
    }
    safe
}

fn is_confined(file: &str) -> bool {
    Path::new(file).components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

fn visit_strings(value: &toml::Value, f: &mut impl FnMut(&str)) {
    match value {
        toml::Value::String(s) => f(s),
        toml::Value::Array(items) => items.iter().for_each(|v| visit_strings(v, f)),
        toml::Value::Table(t) => t.values().for_each(|v| visit_strings(v, f)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_naming_files_outside_the_sandbox_are_skipped() {
        let origin = "/tmp/x/fuzz.toml";
        let with = |file: &str| format!("[[links]]\ncapacity_trace = {{ file = {file:?} }}\n");
        assert!(files_stay_in_sandbox(&with("builtin:scenarios/traces/lte-walk.csv"), origin, &[]));
        assert!(files_stay_in_sandbox(&with("a/./b.csv"), origin, &[]));
        assert!(!files_stay_in_sandbox(&with("/dev/zero"), origin, &[]));
        assert!(!files_stay_in_sandbox(&with("../../etc/passwd"), origin, &[]));
        // Through a set, a variant or an override.
        assert!(!files_stay_in_sandbox("[variants]\nf = [\"x\", \"/dev/stdin\"]\n", origin, &[]));
        let set = vec!["links.0.capacity_trace.file=/proc/self/mem".to_string()];
        assert!(!files_stay_in_sandbox(&with("x.csv"), origin, &set));
    }

    #[test]
    fn every_target_has_a_unique_name_and_takes_empty_input() {
        for (k, t) in TARGETS.iter().enumerate() {
            assert!(TARGETS[..k].iter().all(|o| o.name != t.name), "{} twice", t.name);
            (t.run)(&[]);
        }
        cleanup();
    }
}
