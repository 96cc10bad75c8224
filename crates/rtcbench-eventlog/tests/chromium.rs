//! Logs Chromium 156 wrote (`--webrtc-event-logging`) of a 30 s one-way video call over a
//! 1 Mbit/s, 50 ms RTT path emulated by rtcbench (`browser-p2p`): the sender's log and the
//! receiver's, read whole, and damaged every way a file can be.

use std::collections::BTreeSet;

use rtcbench_eventlog::{Direction, EventLog};

fn read(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

const SENDER: &str = "chromium156-p2p-sender.log";
const RECEIVER: &str = "chromium156-p2p-receiver.log";

#[test]
fn the_senders_log_holds_its_packets_feedback_and_estimates() {
    let log = EventLog::parse(&read(SENDER)).unwrap();
    let start = log.start.unwrap();
    assert_eq!(start.version, 2);
    let rtp = &log.rtp;
    assert!(rtp.direction.iter().all(|d| *d == Direction::Outgoing));
    assert_eq!(rtp.t_ms.len(), 2695);
    // Transport-wide sequence numbers are one counter over every stream the sender paces:
    // every number from 1 up, each once.
    let tseq: Vec<u16> = rtp.transport_seq.iter().map(|s| s.unwrap()).collect();
    let distinct: BTreeSet<u16> = tseq.iter().copied().collect();
    assert_eq!(distinct.len(), tseq.len());
    assert_eq!((*distinct.first().unwrap(), *distinct.last().unwrap() as usize), (1, tseq.len()));
    // Two SSRCs: the video stream and its RTX stream, as the send config names them.
    let ssrcs: BTreeSet<u32> = rtp.ssrc.iter().copied().collect();
    assert_eq!(ssrcs.len(), 2);
    assert!(ssrcs.contains(&log.streams.rtx_ssrc[0].unwrap()));
    // Within a stream, RTP sequence numbers advance by one.
    for ssrc in ssrcs {
        let seq: Vec<u16> = (0..rtp.seq.len()).filter(|i| rtp.ssrc[*i] == ssrc).map(|i| rtp.seq[i]).collect();
        assert!(seq.windows(2).all(|w| w[1] == w[0].wrapping_add(1)), "ssrc {ssrc}");
    }
    // Chromium's two initial probes (3x and 6x the 300 kbit/s start rate), both succeeded.
    assert_eq!(log.probe_clusters.bitrate_bps, [900_000, 1_800_000]);
    assert!(log.probe_results.failure.iter().all(Option::is_none));
    // The delay-based estimate stays near the 1 Mbit/s bottleneck, and the detector saw
    // over-use at least once.
    let rates = &log.delay_based.bitrate_bps;
    assert!(rates.len() > 300);
    assert!(rates.iter().all(|r| (700_000..1_200_000).contains(r)), "{rates:?}");
    assert!(log.delay_based.detector_state.contains(&3));
    // The sender receives transport feedback and sends sender reports.
    let kinds = |d| -> BTreeSet<&str> {
        (0..log.rtcp.kind.len()).filter(|i| log.rtcp.direction[*i] == d).map(|i| log.rtcp.kind[i]).collect()
    };
    assert!(kinds(Direction::Incoming).contains("twcc"));
    assert!(kinds(Direction::Outgoing).contains("sr"));
    // ICE and DTLS events are counted, not read.
    assert!(log.skipped.iter().any(|(field, _)| *field == 26));
}

#[test]
fn the_senders_reports_echoed_give_the_paths_round_trip() {
    // Each receiver report B sent back echoes the middle of an SR's NTP timestamp A had sent
    // (LSR) and how long B held it (DLSR): arrival - SR sent - DLSR is the round trip, on A's
    // clock alone (RFC 3550 §6.4.1). The path's propagation is 2 x 25 ms, plus whatever queue
    // the 1 Mbit/s link held.
    let log = EventLog::parse(&read(SENDER)).unwrap();
    let c = &log.rtcp;
    let sent: Vec<(u32, i64)> =
        (0..c.kind.len()).filter_map(|i| c.sr_ntp_mid[i].map(|mid| (mid, c.t_ms[i]))).collect();
    let mut rtts = Vec::new();
    for i in (0..c.kind.len()).filter(|i| c.kind[*i] == "rr" && c.direction[*i] == Direction::Incoming) {
        let (lsr, dlsr) = (c.report_lsr[i].unwrap(), c.report_dlsr[i].unwrap());
        if lsr == 0 {
            continue;
        }
        let at = sent.iter().find(|(mid, _)| *mid == lsr).expect("an LSR echoes an SR the log holds").1;
        rtts.push(c.t_ms[i] - at - (i64::from(dlsr) * 1000 / 65536));
    }
    assert!(rtts.len() >= 20, "{rtts:?}");
    let least = *rtts.iter().min().unwrap();
    assert!((49..=60).contains(&least), "{rtts:?}");
    assert!(rtts.iter().all(|r| (49..400).contains(r)), "{rtts:?}");
    // Nothing was lost on the way: every block says so.
    assert!((0..c.kind.len()).filter(|i| c.kind[*i] == "rr").all(|i| c.report_fraction_lost[i] == Some(0)));
}

#[test]
fn the_receivers_log_holds_the_same_packets_arriving() {
    let sender = EventLog::parse(&read(SENDER)).unwrap();
    let receiver = EventLog::parse(&read(RECEIVER)).unwrap();
    assert!(receiver.rtp.direction.iter().all(|d| *d == Direction::Incoming));
    let sent: BTreeSet<u16> = sender.rtp.transport_seq.iter().flatten().copied().collect();
    let arrived: BTreeSet<u16> = receiver.rtp.transport_seq.iter().flatten().copied().collect();
    // The sender's browser closed its log 0.7 s before the receiver's: the receiver logged 72
    // more packets. Up to the sender's last, every packet sent arrived (a 300 ms queue at
    // 1 Mbit/s drops nothing here) and no other did.
    let last_sent = *sent.last().unwrap();
    assert_eq!((sent.len(), arrived.len()), (2695, 2767));
    assert_eq!(arrived.iter().copied().filter(|s| *s <= last_sent).collect::<BTreeSet<_>>(), sent);
    // A packet's logged sizes are the same at both ends.
    let size = |log: &EventLog| -> std::collections::BTreeMap<u16, u32> {
        (0..log.rtp.t_ms.len())
            .map(|i| {
                (
                    log.rtp.transport_seq[i].unwrap(),
                    log.rtp.header_size[i] + log.rtp.payload_size[i] + log.rtp.padding_size[i],
                )
            })
            .collect()
    };
    let (sent_sizes, arrived_sizes) = (size(&sender), size(&receiver));
    assert!(arrived_sizes
        .iter()
        .filter(|(seq, _)| **seq <= last_sent)
        .all(|(seq, bytes)| sent_sizes[seq] == *bytes));
    // The receiver sends the transport feedback the sender receives.
    let out_twcc = (0..receiver.rtcp.kind.len())
        .filter(|i| receiver.rtcp.kind[*i] == "twcc" && receiver.rtcp.direction[*i] == Direction::Outgoing)
        .count();
    assert!(out_twcc > 400, "{out_twcc}");
}

#[test]
fn a_truncated_log_names_the_event_and_offset_and_never_panics() {
    let bytes = read(SENDER);
    let whole = EventLog::parse(&bytes).unwrap();
    let mut errors = 0;
    // Every 7th cut keeps the test quick and still lands inside every kind of event.
    for cut in (1..bytes.len()).step_by(7) {
        match EventLog::parse(&bytes[..cut]) {
            Ok(part) => assert!(part.rtp.t_ms.len() <= whole.rtp.t_ms.len()),
            Err(e) => {
                errors += 1;
                assert!(e.offset < cut, "{e}");
                assert!(e.to_string().contains(" at byte "), "{e}");
            }
        }
    }
    assert!(errors > 0);
}

#[test]
fn flipped_bytes_give_errors_or_other_values_never_a_panic() {
    let bytes = read(RECEIVER);
    for at in (0..bytes.len()).step_by(13) {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut damaged = bytes.clone();
            damaged[at] ^= flip;
            let _ = EventLog::parse(&damaged);
        }
    }
}

#[test]
fn a_legacy_log_and_a_foreign_file_are_named_as_such() {
    // A legacy log starts with field 1 (`repeated Event stream`), a message.
    let legacy = EventLog::parse(&[0x0a, 0x02, 0x08, 0x01]).unwrap_err();
    assert!(legacy.reason.contains("legacy-format"), "{legacy}");
    // A PNG's first byte is not a message field's key.
    let png = EventLog::parse(b"\x89PNG\r\n\x1a\n").unwrap_err();
    assert_eq!((png.what, png.offset), ("event framing", 0), "{png}");
    // A field that claims more bytes than the file holds.
    let long = EventLog::parse(&[0x1a, 0xff, 0xff, 0xff, 0x0f]).unwrap_err();
    assert!(long.reason.contains("runs past the end"), "{long}");
    assert_eq!(EventLog::parse(&[]).unwrap(), EventLog::default());
}

#[test]
fn transport_feedback_unrolls_into_the_arrivals_the_receiver_logged() {
    // The receiver's outgoing TWCC gives each packet's arrival on its own clock (250 µs steps);
    // its log gives the same packets' arrivals in whole milliseconds of its log clock. One
    // offset maps one to the other: 98 % of packets within those two resolutions, every one
    // within 5.5 ms (measured: the log's time is up to 4.25 ms later for a few, packets logged
    // after a wait in the receiver, not at the socket).
    let receiver = EventLog::parse(&read(RECEIVER)).unwrap();
    let logged: std::collections::BTreeMap<u16, i64> = (0..receiver.rtp.t_ms.len())
        .map(|i| (receiver.rtp.transport_seq[i].unwrap(), receiver.rtp.t_ms[i] * 1000))
        .collect();
    let twcc = &receiver.twcc;
    assert!(twcc.direction.iter().all(|d| *d == Direction::Outgoing));
    let pairs: Vec<(i64, i64)> = (0..twcc.transport_seq.len())
        .filter_map(|i| Some((twcc.arrival_us[i]?, *logged.get(&twcc.transport_seq[i])?)))
        .collect();
    assert!(pairs.len() > 2500, "{}", pairs.len());
    let mut offsets: Vec<i64> = pairs.iter().map(|(fb, log)| fb - log).collect();
    offsets.sort_unstable();
    let (low, high) = (offsets[0], offsets[offsets.len() - 1]);
    let q = |p: usize| offsets[offsets.len() * p / 100];
    assert!(q(99) - q(1) <= 2_000, "{} {}", q(1), q(99));
    assert!(high - low <= 5_500, "{low} {high}");
    // Messages are counted in order, and the feedback count of consecutive messages steps
    // by one (none was lost between the receiver's RTCP and its log).
    assert_eq!(twcc.message.first(), Some(&0));
    let mut last = None;
    for i in 0..twcc.message.len() {
        if last != Some(twcc.message[i]) {
            if let Some(prev) = last.map(|m: u32| m as usize) {
                let prev_row = twcc.message.iter().position(|m| *m as usize == prev).unwrap();
                assert_eq!(twcc.feedback_count[i], twcc.feedback_count[prev_row].wrapping_add(1));
            }
            last = Some(twcc.message[i]);
        }
    }
    // The sender received the same feedback: every packet it sent up to its last is reported.
    let sender = EventLog::parse(&read(SENDER)).unwrap();
    let reported: BTreeSet<u16> = sender.twcc.transport_seq.iter().copied().collect();
    let last_reported = *reported.last().unwrap();
    assert!(sender
        .rtp
        .transport_seq
        .iter()
        .flatten()
        .filter(|s| **s <= last_reported)
        .all(|s| reported.contains(s)));
}

/// A log of one batch of incoming RTCP packets, written with the schema's own messages.
fn rtcp_log(packets: &[Vec<u8>], times_ms: &[i64]) -> Vec<u8> {
    use prost::Message;
    let mut out = Vec::new();
    for (packet, t) in packets.iter().zip(times_ms) {
        let batch = rtcbench_eventlog::schema::RtcpPackets {
            timestamp_ms: Some(*t),
            raw_packet: Some(packet.clone()),
            ..Default::default()
        };
        // Field 4, incoming RTCP, a message.
        out.push((4 << 3) | 2);
        batch.encode_length_delimited(&mut out).unwrap();
    }
    out
}

#[test]
fn rfc_8888_feedback_unrolls_per_packet_across_a_report_timestamp_wrap() {
    use rtcbench_units::{Duration, SeqNo};
    use rtcbench_wire::{CcfbMetric, CcfbRepr, CcfbStream};
    let report = |ts: u32, begin: u64, reports: Vec<Option<CcfbMetric>>| {
        let fb = CcfbRepr {
            sender_ssrc: 1,
            report_timestamp: ts,
            streams: vec![CcfbStream { media_ssrc: 7, begin_seq: SeqNo::new(begin), reports }],
        };
        fb.to_bytes().unwrap()
    };
    let got =
        |ms: i64, ecn: u8| Some(CcfbMetric { ecn, arrival_offset: Some(Duration::from_micros(ms * 1000)) });
    // The second report's timestamp has wrapped past 2^32 (compact NTP, 1/65536 s): 0.5 s
    // after the first.
    let first = u32::MAX - 16_383;
    let second = 16_384;
    let log = rtcp_log(
        &[report(first, 65_534, vec![got(250, 1), None]), report(second, 0, vec![got(0, 3)])],
        &[1_000, 1_500],
    );
    let log = EventLog::parse(&log).unwrap();
    let c = &log.ccfb;
    assert_eq!(c.seq, [65_534, 65_535, 0]);
    assert_eq!(c.message, [0, 0, 1]);
    assert_eq!(c.ecn, [Some(1), None, Some(3)]);
    assert_eq!(c.arrival_us[1], None);
    // 250 ms before the first report, and at the second, 500 ms later: 750 ms apart, not 18 h.
    let (a, b) = (c.arrival_us[0].unwrap(), c.arrival_us[2].unwrap());
    assert!((b - a - 750_000).abs() <= 1_000, "{}", b - a);
    assert_eq!(log.rtcp.kind, ["ccfb", "ccfb"]);
}
