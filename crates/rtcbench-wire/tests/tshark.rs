//! Captures written by `rtcbench_wire::pcap` open in tshark as RTP and RTCP, with every field
//! decoding to the value this crate's emitters wrote.
//!
//! Needs tshark on PATH: `scripts/install-tshark.sh` installs it (the Makefile runs it before the
//! tests). Without tshark these tests fail rather than skip, so a missing tool cannot pass CI.
//!
//! The capture is hand-made: a video RTP packet with all three header extensions and a 1200-byte
//! payload, an audio RTP packet, a sender report, a receiver report answering it, and a
//! transport-wide feedback packet built by `TwccEncoder` from known arrival times. Expected
//! values are literals worked out from the specifications, not recomputed with the crate.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::process::Command;

use rtcbench_units::{DataSize, Duration, Instant, SeqNo};
use rtcbench_wire::pcap::{PcapWriter, DEFAULT_PORT, TSHARK_ARGS};
use rtcbench_wire::rtp::{abs_send_time_from, FrameMarking, RtpHeaderRepr};
use rtcbench_wire::{ntp, ReceiverReportRepr, ReportBlock, SenderReportRepr, TwccEncoder};

const SENDER: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), DEFAULT_PORT);
const RECEIVER: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), DEFAULT_PORT);
const VIDEO_SSRC: u32 = 0x1111_1111;
const AUDIO_SSRC: u32 = 0x2222_0001;
const RECEIVER_SSRC: u32 = 0x3333_0001;

/// Frame numbers (1-based, as tshark counts) of the packets in [`write_capture`].
const VIDEO: usize = 1;
const AUDIO: usize = 2;
const SR: usize = 3;
const RR: usize = 4;
const TWCC: usize = 5;

/// Writes the capture to `path`; returns the wire size the writer reported for each packet.
fn write_capture(path: &Path) -> Vec<DataSize> {
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    let mut sizes = Vec::new();
    let rtp = |w: &mut PcapWriter<Vec<u8>>, t: Instant, repr: &RtpHeaderRepr, payload: u64| {
        let mut header = vec![0; repr.buffer_len()];
        repr.emit(&mut header).unwrap();
        w.write_udp(t, SENDER, RECEIVER, &header, DataSize::bytes(payload)).unwrap()
    };

    // 1: video at 1 s, the last packet of a keyframe; abs-send-time 1 * 2^18 = 0x040000.
    let video = RtpHeaderRepr {
        payload_type: 96,
        marker: true,
        seq: SeqNo::new(0x1234),
        timestamp: 0xDEAD_BEEF,
        ssrc: VIDEO_SSRC,
        csrc: None,
        abs_send_time: Some(abs_send_time_from(Instant::from_millis(1000))),
        transport_seq: Some(SeqNo::new(65534)),
        frame_marking: Some(FrameMarking { start: true, end: true, independent: true }),
        padding_len: 0,
    };
    sizes.push(rtp(&mut w, Instant::from_millis(1000), &video, 1200));

    // 2: audio at 1.005 s: abs-send-time and transport seq only, 80-byte payload.
    let audio = RtpHeaderRepr {
        payload_type: 111,
        marker: false,
        seq: SeqNo::new(7),
        timestamp: 48_000,
        ssrc: AUDIO_SSRC,
        csrc: None,
        abs_send_time: Some(abs_send_time_from(Instant::from_millis(1005))),
        transport_seq: Some(SeqNo::new(65535)),
        frame_marking: None,
        padding_len: 0,
    };
    sizes.push(rtp(&mut w, Instant::from_millis(1005), &audio, 80));

    // 3: sender report at 1 + 1/64 s. Times in this test that RTCP converts to NTP are multiples
    // of 1/64 s, which are exact in compact NTP (1024 units of 1/65536 s), so round-trip
    // arithmetic has no rounding.
    let sr_time = Instant::from_micros(1_015_625);
    let sr = SenderReportRepr {
        ssrc: VIDEO_SSRC,
        ntp: ntp::to_ntp64(sr_time),
        rtp_timestamp: 90_900,
        packet_count: 1,
        octet_count: 1200,
        blocks: vec![],
    };
    sizes.push(w.write_udp(sr_time, SENDER, RECEIVER, &sr.to_bytes().unwrap(), DataSize::ZERO).unwrap());

    // 4: receiver report about the video stream, answering the SR after DLSR = 62.5 ms, sent
    // at 1.203125 s: the round trip is 1.203125 - 1.015625 - 0.0625 = 125 ms.
    let rr = ReceiverReportRepr {
        ssrc: RECEIVER_SSRC,
        blocks: vec![ReportBlock {
            ssrc: VIDEO_SSRC,
            fraction_lost: 26,
            cumulative_lost: -2,
            extended_highest_seq: 0x0001_1235,
            jitter: 345,
            lsr: ntp::compact(ntp::to_ntp64(sr_time)),
            dlsr: ntp::duration_to_compact(Duration::from_micros(62_500)),
        }],
    };
    let rr_time = Instant::from_micros(1_203_125);
    sizes.push(w.write_udp(rr_time, RECEIVER, SENDER, &rr.to_bytes().unwrap(), DataSize::ZERO).unwrap());

    // 5: transport-wide feedback at 1.300 s. Arrivals: 65534 at 1.030 s, 65535 lost, 65536 (0)
    // at 1.0325 s, 65537 (1) reordered before it at 1.030 s, 65538 (2) at 1.250 s.
    let arrivals = [
        (65534, Some(Instant::from_micros(1_030_000))),
        (65535, None),
        (65536, Some(Instant::from_micros(1_032_500))),
        (65537, Some(Instant::from_micros(1_030_000))),
        (65538, Some(Instant::from_micros(1_250_000))),
    ];
    let mut encoder = TwccEncoder::new(RECEIVER_SSRC, VIDEO_SSRC).with_feedback_count(7);
    let feedback = encoder.encode(&arrivals).unwrap();
    assert_eq!(feedback.len(), 1);
    let t = Instant::from_millis(1300);
    sizes.push(w.write_udp(t, RECEIVER, SENDER, &feedback[0], DataSize::ZERO).unwrap());

    std::fs::write(path, w.into_writer()).unwrap();
    sizes
}

/// Runs tshark on `path` with [`TSHARK_ARGS`] (and `extra` options); returns, per frame, each
/// requested field's occurrences (empty when the field is absent).
fn tshark_fields(path: &Path, extra: &[&str], fields: &[&str]) -> Vec<BTreeMap<String, Vec<String>>> {
    const AGGREGATOR: &str = "|";
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(path).args(TSHARK_ARGS).args(extra);
    cmd.args(["-T", "fields", "-E", "header=n", "-E", "separator=/t", "-E", "occurrence=a"]);
    cmd.args(["-E", &format!("aggregator={AGGREGATOR}")]);
    for field in fields {
        cmd.args(["-e", field]);
    }
    let output = match cmd.output() {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
            "tshark is not installed (or not on PATH): run scripts/install-tshark.sh, which the \
             Makefile runs before the tests"
        ),
        Err(e) => panic!("could not run tshark: {e}"),
    };
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        output.status.success(),
        "tshark failed ({}): {}\n{stdout}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .map(|line| {
            let values: Vec<&str> = line.split('\t').collect();
            assert_eq!(values.len(), fields.len(), "tshark line {line:?}");
            fields
                .iter()
                .zip(values)
                .map(|(field, value)| {
                    let occurrences = match value {
                        "" => vec![],
                        v => v.split(AGGREGATOR).map(str::to_owned).collect(),
                    };
                    ((*field).to_owned(), occurrences)
                })
                .collect()
        })
        .collect()
}

/// A fresh capture for one test, kept under Cargo's per-crate temporary directory for inspection.
fn capture(name: &str) -> (PathBuf, Vec<DataSize>) {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("tshark-{name}.pcap"));
    let sizes = write_capture(&path);
    (path, sizes)
}

/// The single occurrence of `field` in `frame`.
fn one<'a>(frame: &'a BTreeMap<String, Vec<String>>, field: &str) -> &'a str {
    match frame[field].as_slice() {
        [value] => value,
        other => panic!("{field}: expected one value, found {other:?}"),
    }
}

fn all<'a>(frame: &'a BTreeMap<String, Vec<String>>, field: &str) -> Vec<&'a str> {
    frame[field].iter().map(String::as_str).collect()
}

#[test]
fn every_packet_dissects_as_rtp_or_rtcp_with_good_checksums() {
    let (path, sizes) = capture("frames");
    let frames = tshark_fields(
        &path,
        &[],
        &[
            "frame.protocols",
            "frame.len",
            "frame.time_epoch",
            "ip.len",
            "ip.ttl",
            "ip.checksum.status",
            "udp.length",
            "udp.checksum.status",
            "_ws.malformed",
            "_ws.expert",
            "_ws.expert.message",
        ],
    );
    assert_eq!(frames.len(), 5);

    let expected = [
        // (protocols, capture time, bytes on the wire)
        ("raw:ip:udp:rtp", "1767225601.000000000", 20 + 8 + 28 + 1200),
        ("raw:ip:udp:rtp", "1767225601.005000000", 20 + 8 + 24 + 80),
        ("raw:ip:udp:rtp:rtcp", "1767225601.015625000", 20 + 8 + 28),
        ("raw:ip:udp:rtp:rtcp", "1767225601.203125000", 20 + 8 + 8 + 24),
        // RTPFB header and two SSRCs (12) + TWCC fields (8) + one status-vector chunk (2)
        // + deltas 1 + 1 + 2 + 2 bytes, padded to 28.
        ("raw:ip:udp:rtp:rtcp", "1767225601.300000000", 20 + 8 + 28),
    ];
    for (i, (frame, (protocols, time, len))) in frames.iter().zip(expected).enumerate() {
        let n = i + 1;
        assert_eq!(one(frame, "frame.protocols"), protocols, "frame {n}");
        assert_eq!(one(frame, "frame.time_epoch"), time, "frame {n}");
        assert_eq!(sizes[i], DataSize::bytes(len), "frame {n}: size returned by write_udp");
        assert_eq!(one(frame, "frame.len"), len.to_string(), "frame {n}");
        assert_eq!(one(frame, "ip.len"), len.to_string(), "frame {n}");
        assert_eq!(one(frame, "udp.length"), (len - 20).to_string(), "frame {n}");
        assert_eq!(one(frame, "ip.ttl"), "64", "frame {n}");
        // Checksum status 1 is "Good" (0 is "Bad", 2 "Unverified").
        assert_eq!(one(frame, "ip.checksum.status"), "1", "frame {n}");
        assert_eq!(one(frame, "udp.checksum.status"), "1", "frame {n}");
        assert_eq!(all(frame, "_ws.malformed"), Vec::<&str>::new(), "frame {n}");
        assert_eq!(all(frame, "_ws.expert"), Vec::<&str>::new(), "frame {n}");
        assert_eq!(all(frame, "_ws.expert.message"), Vec::<&str>::new(), "frame {n}");
    }
}

#[test]
fn rtp_headers_and_one_byte_extensions_decode_as_written() {
    let (path, _) = capture("rtp");
    let frames = tshark_fields(
        &path,
        &[],
        &[
            "rtp.version",
            "rtp.p_type",
            "rtp.marker",
            "rtp.seq",
            "rtp.timestamp",
            "rtp.ssrc",
            "rtp.ext.profile",
            "rtp.ext.len",
            "rtp.ext.rfc5285.id",
            "rtp.ext.rfc5285.len",
            "rtp.ext.rfc5285.data",
            "rtp.payload",
        ],
    );

    let video = &frames[VIDEO - 1];
    assert_eq!(one(video, "rtp.version"), "2");
    assert_eq!(one(video, "rtp.p_type"), "96");
    assert_eq!(one(video, "rtp.marker"), "1");
    assert_eq!(one(video, "rtp.seq"), "4660");
    assert_eq!(one(video, "rtp.timestamp"), "3735928559");
    assert_eq!(one(video, "rtp.ssrc"), "0x11111111");
    assert_eq!(one(video, "rtp.ext.profile"), "0xbede");
    // 1+3 + 1+2 + 1+1 = 9 bytes of elements, padded to 3 words.
    assert_eq!(one(video, "rtp.ext.len"), "3");
    assert_eq!(all(video, "rtp.ext.rfc5285.id"), ["2", "4", "5"]);
    assert_eq!(all(video, "rtp.ext.rfc5285.len"), ["3", "2", "1"]);
    // abs-send-time 0x040000 (1 s in 6.18 fixed point), transport seq 65534, frame marking
    // S|E|I = 0xe0.
    assert_eq!(all(video, "rtp.ext.rfc5285.data"), ["040000", "fffe", "e0"]);
    let payload = one(video, "rtp.payload");
    assert_eq!(payload.len(), 2 * 1200, "1200 payload bytes as hex");
    assert!(payload.bytes().all(|c| c == b'0'));

    let audio = &frames[AUDIO - 1];
    assert_eq!(one(audio, "rtp.p_type"), "111");
    assert_eq!(one(audio, "rtp.marker"), "0");
    assert_eq!(one(audio, "rtp.seq"), "7");
    assert_eq!(one(audio, "rtp.timestamp"), "48000");
    assert_eq!(one(audio, "rtp.ssrc"), "0x22220001");
    assert_eq!(one(audio, "rtp.ext.len"), "2");
    assert_eq!(all(audio, "rtp.ext.rfc5285.id"), ["2", "4"]);
    // 1.005 s * 2^18 = 263454.72 -> 263455 = 0x04051f.
    assert_eq!(all(audio, "rtp.ext.rfc5285.data"), ["04051f", "ffff"]);
    assert_eq!(one(audio, "rtp.payload").len(), 2 * 80);

    for rtcp in &frames[SR - 1..] {
        assert_eq!(all(rtcp, "rtp.p_type"), Vec::<&str>::new(), "RTCP must not dissect as RTP");
    }
}

#[test]
fn sender_and_receiver_reports_decode_as_written() {
    let (path, _) = capture("reports");
    let frames = tshark_fields(
        &path,
        // Wireshark then computes the round trip from the RR's LSR and DLSR and the capture
        // times, which checks that capture time and NTP time share one epoch.
        &["-o", "rtcp.show_roundtrip_calculation:TRUE", "-o", "rtcp.roundtrip_min_threshhold:1"],
        &[
            "rtcp.pt",
            "rtcp.rc",
            "rtcp.length_check",
            "rtcp.senderssrc",
            "rtcp.timestamp.ntp.msw",
            "rtcp.timestamp.ntp.lsw",
            "rtcp.timestamp.rtp",
            "rtcp.sender.packetcount",
            "rtcp.sender.octetcount",
            "rtcp.ssrc.identifier",
            "rtcp.ssrc.fraction",
            "rtcp.ssrc.cum_nr",
            "rtcp.ssrc.ext_high",
            "rtcp.ssrc.high_cycles",
            "rtcp.ssrc.high_seq",
            "rtcp.ssrc.jitter",
            "rtcp.ssrc.lsr",
            "rtcp.ssrc.dlsr",
            "rtcp.roundtrip-delay",
        ],
    );

    let sr = &frames[SR - 1];
    assert_eq!(one(sr, "rtcp.pt"), "200");
    assert_eq!(one(sr, "rtcp.rc"), "0");
    assert_eq!(one(sr, "rtcp.length_check"), "1");
    assert_eq!(one(sr, "rtcp.senderssrc"), "0x11111111");
    // 2026-01-01 00:00:01.015625 UTC: NTP seconds 3976214401, fraction 2^32 / 64 = 67108864.
    assert_eq!(one(sr, "rtcp.timestamp.ntp.msw"), "3976214401");
    assert_eq!(one(sr, "rtcp.timestamp.ntp.lsw"), "67108864");
    assert_eq!(one(sr, "rtcp.timestamp.rtp"), "90900");
    assert_eq!(one(sr, "rtcp.sender.packetcount"), "1");
    assert_eq!(one(sr, "rtcp.sender.octetcount"), "1200");

    let rr = &frames[RR - 1];
    assert_eq!(one(rr, "rtcp.pt"), "201");
    assert_eq!(one(rr, "rtcp.rc"), "1");
    assert_eq!(one(rr, "rtcp.length_check"), "1");
    assert_eq!(one(rr, "rtcp.senderssrc"), "0x33330001");
    assert_eq!(one(rr, "rtcp.ssrc.identifier"), "0x11111111");
    assert_eq!(one(rr, "rtcp.ssrc.fraction"), "26");
    assert_eq!(one(rr, "rtcp.ssrc.cum_nr"), "-2");
    assert_eq!(one(rr, "rtcp.ssrc.ext_high"), "70197");
    assert_eq!(one(rr, "rtcp.ssrc.high_cycles"), "1");
    assert_eq!(one(rr, "rtcp.ssrc.high_seq"), "4661");
    assert_eq!(one(rr, "rtcp.ssrc.jitter"), "345");
    // LSR: low 16 bits of the SR's seconds (0x3781) and high 16 of its fraction (0x0400):
    // 0x37810400 = 931202048.
    assert_eq!(one(rr, "rtcp.ssrc.lsr"), "931202048");
    // DLSR: 62.5 ms * 65536 = 4096.
    assert_eq!(one(rr, "rtcp.ssrc.dlsr"), "4096");
    assert_eq!(one(rr, "rtcp.roundtrip-delay"), "125");
}

#[test]
fn transport_wide_feedback_decodes_as_encoded() {
    let (path, _) = capture("twcc");
    let frames = tshark_fields(
        &path,
        &[],
        &[
            "rtcp.pt",
            "rtcp.rtpfb.fmt",
            "rtcp.length_check",
            "rtcp.senderssrc",
            "rtcp.mediassrc",
            "rtcp.rtpfb.transportcc.baseseq",
            "rtcp.rtpfb.transportcc.statuscount",
            "rtcp.rtpfb.transportcc.reftime",
            "rtcp.rtpfb.transportcc.pktcount",
            "rtcp.rtpfb.transportcc.pktchunk",
            "rtcp.rtpfb.transportcc.recv_delta",
            "rtcp.rtpfb.transportcc_bad",
        ],
    );

    let fb = &frames[TWCC - 1];
    assert_eq!(one(fb, "rtcp.pt"), "205");
    assert_eq!(one(fb, "rtcp.rtpfb.fmt"), "15");
    assert_eq!(one(fb, "rtcp.length_check"), "1");
    assert_eq!(one(fb, "rtcp.senderssrc"), "0x33330001");
    assert_eq!(one(fb, "rtcp.mediassrc"), "0x11111111");
    assert_eq!(one(fb, "rtcp.rtpfb.transportcc.baseseq"), "65534");
    assert_eq!(one(fb, "rtcp.rtpfb.transportcc.statuscount"), "5");
    // The first arrival, 1.030 s, floored to 64 ms: 16 * 64 ms = 1.024 s.
    assert_eq!(one(fb, "rtcp.rtpfb.transportcc.reftime"), "16");
    assert_eq!(one(fb, "rtcp.rtpfb.transportcc.pktcount"), "7");
    assert_eq!(all(fb, "rtcp.rtpfb.transportcc_bad"), Vec::<&str>::new());
    // One two-bit status vector: 1 1 | small, not received, small, large, large, (unused x2)
    // = 11 01 00 01 10 10 00 00 = 0xd1a0.
    assert_eq!(all(fb, "rtcp.rtpfb.transportcc.pktchunk"), ["53664"]);
    // Receive deltas in 250 us ticks, tshark prints them as hex of the wire width: 1.030 - 1.024
    // s = 24 ticks; +2.5 ms = 10; -2.5 ms = -10 (16-bit); +220 ms = 880 (16-bit).
    let deltas: Vec<i16> = all(fb, "rtcp.rtpfb.transportcc.recv_delta")
        .iter()
        .map(|hex| {
            let digits = hex.strip_prefix("0x").unwrap();
            match digits.len() {
                2 => i16::from(u8::from_str_radix(digits, 16).unwrap()),
                4 => u16::from_str_radix(digits, 16).unwrap() as i16,
                _ => panic!("unexpected recv_delta {hex}"),
            }
        })
        .collect();
    assert_eq!(deltas, [24, 10, -10, 880]);
}
