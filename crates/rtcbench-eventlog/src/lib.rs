//! A reader of libwebrtc's RTC event log: the file Chromium writes with
//! `--webrtc-event-logging=<dir>` or from chrome://webrtc-internals, and libwebrtc-based apps
//! write from production calls. It records every RTP packet sent and received (headers and
//! sizes, not payloads), every RTCP packet whole, and the bandwidth estimator's decisions.
//!
//! Only the new, protobuf-based format (`webrtc.rtclog2.EventStream`) is read; a legacy log
//! (`webrtc.rtclog.EventStream`, written before 2019) is named as such and refused. Events come
//! out as columns, one `*Rows` struct per kind, in the order the log holds them (batches of one kind
//! are written in time order, so each table is too). Times are the log's own milliseconds;
//! [`LogStart`] ties them to UTC.
//!
//! Reading is bounded: the caller gives the bytes (and bounds the file); every count in the log
//! is checked against the bytes that must hold it before anything is allocated for it; and any
//! damage ends the read with a [`LogError`] that names the event and its byte offset.

pub mod delta;
pub mod schema;

use prost::Message;
use rtcbench_units::{SeqNo, SeqUnwrapper};
use rtcbench_wire::RtcpMessage;
use schema::field;
use thiserror::Error;

/// Why a log could not be read: which event, at which byte offset of the file.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{what} at byte {offset}: {reason}")]
pub struct LogError {
    /// The kind of event (or framing) that failed, as the format names it.
    pub what: &'static str,
    /// Byte offset of its field in the file.
    pub offset: usize,
    /// What is wrong with it.
    pub reason: String,
}

/// Which way a packet went, seen from the logging endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Incoming,
    Outgoing,
}

impl Direction {
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Incoming => "in",
            Self::Outgoing => "out",
        }
    }
}

/// The log's start: its clock at the first event, the wall clock then, and the format version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogStart {
    pub timestamp_ms: i64,
    pub utc_time_ms: i64,
    pub version: u32,
}

/// One RTP packet's logged header fields and sizes. Sizes are of the RTP packet before SRTP
/// (header + payload + padding); what crosses the wire adds SRTP's tag and UDP/IP.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RtpRows {
    pub t_ms: Vec<i64>,
    pub direction: Vec<Direction>,
    pub ssrc: Vec<u32>,
    pub seq: Vec<u16>,
    pub rtp_timestamp: Vec<u32>,
    pub payload_type: Vec<u8>,
    pub marker: Vec<bool>,
    pub header_size: Vec<u32>,
    pub payload_size: Vec<u32>,
    pub padding_size: Vec<u32>,
    /// The transport-wide sequence number, where the packet carried the extension.
    pub transport_seq: Vec<Option<u16>>,
    /// The abs-send-time extension (6.18 fixed point seconds), where carried.
    pub abs_send_time: Vec<Option<u32>>,
    /// The audio level extension (-dBov), where carried.
    pub audio_level: Vec<Option<u8>>,
}

/// One RTCP message of a logged compound packet (a row per message; `index` orders the
/// messages of one compound packet).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RtcpRows {
    pub t_ms: Vec<i64>,
    pub direction: Vec<Direction>,
    /// Bytes of the whole compound packet the message came in.
    pub size: Vec<u32>,
    pub index: Vec<u16>,
    /// `sr`, `rr`, `twcc`, `ccfb`, `remb`, `nack`, `pli`, `fir`, `xr`, `other` or `malformed`
    /// (the compound packet did not parse; one row stands for it).
    pub kind: Vec<&'static str>,
    /// RTCP packet type and FMT/count, for every kind.
    pub packet_type: Vec<Option<u8>>,
    pub fmt: Vec<Option<u8>>,
    pub media_ssrc: Vec<Option<u32>>,
    /// Transport feedback: the first transport-wide sequence number it reports on (TWCC), or
    /// the first RTP sequence number of its first stream (RFC 8888).
    pub feedback_base_seq: Vec<Option<u16>>,
    /// Transport feedback: packets it reports on, and of those the ones received.
    pub feedback_packets: Vec<Option<u32>>,
    pub feedback_received: Vec<Option<u32>>,
    /// REMB's bitrate.
    pub remb_bps: Vec<Option<u64>>,
    /// NACK: packets it asks for.
    pub nack_packets: Vec<Option<u32>>,
    /// SR: the middle 32 bits of its NTP timestamp, which a report block about it echoes as
    /// LSR (RFC 3550 §6.4.1).
    pub sr_ntp_mid: Vec<Option<u32>>,
    /// SR or RR: its first report block's fraction lost (in 1/256), LSR and DLSR (in 1/65536 s;
    /// RFC 3550 §6.4.1), from which the endpoint that sent the SR computes the round trip.
    pub report_fraction_lost: Vec<Option<u8>>,
    pub report_lsr: Vec<Option<u32>>,
    pub report_dlsr: Vec<Option<u32>>,
}

/// Transport-wide feedback (TWCC) unrolled: a row per packet a feedback message reports on,
/// whether it arrived and when, on the clock of the endpoint that received the media.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TwccRows {
    /// When the feedback was logged (sent or received) on the logging endpoint's clock.
    pub t_ms: Vec<i64>,
    pub direction: Vec<Direction>,
    /// Which feedback message, counted from 0 in the log (per direction).
    pub message: Vec<u32>,
    /// The message's own 8-bit feedback packet count, which tells lost feedback apart.
    pub feedback_count: Vec<u8>,
    pub transport_seq: Vec<u16>,
    /// Arrival on the media receiver's clock, µs: the message's reference time (unwrapped
    /// across messages, so monotonic over a call) plus the deltas up to this packet. `None`:
    /// reported not received.
    pub arrival_us: Vec<Option<i64>>,
}

/// RFC 8888 congestion control feedback unrolled: a row per RTP packet a report covers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CcfbRows {
    /// When the feedback was logged on the logging endpoint's clock.
    pub t_ms: Vec<i64>,
    pub direction: Vec<Direction>,
    /// Which feedback message, counted from 0 in the log (per direction).
    pub message: Vec<u32>,
    pub media_ssrc: Vec<u32>,
    /// The RTP sequence number reported on.
    pub seq: Vec<u16>,
    /// The ECN codepoint it arrived with (RFC 3168: 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE);
    /// `None`: reported not received.
    pub ecn: Vec<Option<u8>>,
    /// Arrival on the media receiver's clock, µs: the report timestamp (compact NTP, unwrapped
    /// across messages) less the packet's arrival time offset (RFC 8888 §3.1). `None`: not
    /// received, or received with its offset over range.
    pub arrival_us: Vec<Option<i64>>,
}

/// The delay-based estimator's updates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DelayBasedRows {
    pub t_ms: Vec<i64>,
    pub bitrate_bps: Vec<u32>,
    /// 0 unknown, 1 normal, 2 underusing, 3 overusing.
    pub detector_state: Vec<i32>,
}

/// The loss-based estimator's updates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LossBasedRows {
    pub t_ms: Vec<i64>,
    pub bitrate_bps: Vec<u32>,
    /// floor(256 x lost / total).
    pub fraction_loss: Vec<u32>,
    pub total_packets: Vec<u32>,
}

/// Probe clusters the sender created.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProbeClusterRows {
    pub t_ms: Vec<i64>,
    pub id: Vec<u32>,
    pub bitrate_bps: Vec<u32>,
    pub min_packets: Vec<u32>,
    pub min_bytes: Vec<u32>,
}

/// Probe results: a bitrate where the probe succeeded, a failure reason where it did not
/// (1 invalid send/receive interval, 2 invalid send/receive ratio, 3 timeout, 0 unknown).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProbeResultRows {
    pub t_ms: Vec<i64>,
    pub id: Vec<u32>,
    pub bitrate_bps: Vec<Option<u32>>,
    pub failure: Vec<Option<i32>>,
}

/// Application-limited region changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlrRows {
    pub t_ms: Vec<i64>,
    pub in_alr: Vec<bool>,
}

/// Route changes: whether the route can send, and its per-packet overhead in bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouteRows {
    pub t_ms: Vec<i64>,
    pub connected: Vec<bool>,
    pub overhead: Vec<u32>,
}

/// The target rate handed to the encoders.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TargetRows {
    pub t_ms: Vec<i64>,
    pub target_bps: Vec<i32>,
}

/// The streams the endpoint configured: which SSRC carries what, which way.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StreamRows {
    pub t_ms: Vec<i64>,
    pub direction: Vec<Direction>,
    /// `audio` or `video`.
    pub media: Vec<&'static str>,
    pub ssrc: Vec<u32>,
    /// The video stream's RTX SSRC, where configured.
    pub rtx_ssrc: Vec<Option<u32>>,
}

/// Everything read from one log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventLog {
    pub start: Option<LogStart>,
    pub end_ms: Option<i64>,
    pub rtp: RtpRows,
    pub rtcp: RtcpRows,
    pub twcc: TwccRows,
    pub ccfb: CcfbRows,
    pub delay_based: DelayBasedRows,
    pub loss_based: LossBasedRows,
    pub probe_clusters: ProbeClusterRows,
    pub probe_results: ProbeResultRows,
    pub alr: AlrRows,
    pub routes: RouteRows,
    pub targets: TargetRows,
    pub streams: StreamRows,
    /// Top-level fields this reader does not read (ICE, DTLS, audio playout, generic packets,
    /// fields of newer writers), as (field number, count), by field number.
    pub skipped: Vec<(u32, u64)>,
}

impl EventLog {
    /// Reads a whole log from its bytes.
    pub fn parse(bytes: &[u8]) -> Result<Self, LogError> {
        let mut reader = Reader::default();
        let mut skipped = std::collections::BTreeMap::<u32, u64>::new();
        for event in fields(bytes) {
            let event = event?;
            match event_name(event.number) {
                Some(what) => reader.read_event(event.number, what, &bytes[event.body], event.offset)?,
                None => *skipped.entry(event.number).or_default() += 1,
            }
        }
        let mut log = reader.log;
        log.skipped = skipped.into_iter().collect();
        Ok(log)
    }
}

/// A feedback format's counters across its messages, per direction (in, out): its reference
/// clock unwrapped, and the messages read so far.
#[derive(Default)]
struct Unrolled<const BITS: u32> {
    reference: [SeqUnwrapper<BITS>; 2],
    messages: [u32; 2],
}

impl<const BITS: u32> Unrolled<BITS> {
    /// The message's reference, unwrapped, and its number in the log.
    fn next(&mut self, direction: Direction, reference: u64) -> (i64, u32) {
        let side = direction as usize;
        let message = self.messages[side];
        self.messages[side] += 1;
        (self.reference[side].unwrap(SeqNo::new(reference)), message)
    }
}

/// What a read keeps besides the log: the feedback formats' counters. TWCC's reference time
/// has 24 bits of 64 ms; RFC 8888's report timestamp is 32-bit compact NTP (1/65536 s).
#[derive(Default)]
struct Reader {
    log: EventLog,
    twcc: Unrolled<24>,
    ccfb: Unrolled<32>,
}

impl Reader {
    fn read_rtcp(
        &mut self,
        direction: Direction,
        m: &schema::RtcpPackets,
        body_len: usize,
    ) -> Result<(), String> {
        let n = deltas(m.number_of_deltas, body_len)?;
        let t_ms = full(
            column(m.timestamp_ms.map(|v| v as u64), m.timestamp_ms_deltas.as_ref(), n, "timestamp_ms")?,
            "timestamp_ms",
        )?;
        let first = m.raw_packet.as_deref().ok_or("its required field raw_packet is missing")?;
        let mut packets = vec![first];
        if n > 0 {
            packets.extend(blobs(m.raw_packet_blobs.as_deref().unwrap_or(&[]), n)?);
        }
        for (t_ms, packet) in t_ms.into_iter().zip(packets) {
            let t_ms = delta::as_i64(t_ms);
            let size = packet.len() as u32;
            let Ok(messages) = rtcbench_wire::parse_compound(packet) else {
                let row = RtcpRow { kind: "malformed", ..RtcpRow::default() };
                push_rtcp_row(&mut self.log.rtcp, t_ms, direction, size, 0, row);
                continue;
            };
            for (index, message) in messages.iter().enumerate() {
                push_rtcp_row(&mut self.log.rtcp, t_ms, direction, size, index as u16, RtcpRow::of(message));
                match message {
                    RtcpMessage::TransportFeedback(fb) => self.unroll_twcc(t_ms, direction, fb),
                    RtcpMessage::CongestionControlFeedback(fb) => self.unroll_ccfb(t_ms, direction, fb),
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// One TWCC message's packets into `twcc`. Its 24-bit reference time (64 ms ticks) is
    /// unwrapped across messages, so arrivals stay monotonic across a wrap.
    fn unroll_twcc(&mut self, t_ms: i64, direction: Direction, fb: &rtcbench_wire::TransportFeedbackRepr) {
        let (reference, message) = self.twcc.next(direction, u64::from(fb.reference_time as u32 & 0xff_ffff));
        let base = fb.reference_instant().as_micros();
        let t = &mut self.log.twcc;
        for (seq, arrival) in fb.arrivals() {
            t.t_ms.push(t_ms);
            t.direction.push(direction);
            t.message.push(message);
            t.feedback_count.push(fb.feedback_count);
            t.transport_seq.push(seq.value() as u16);
            t.arrival_us.push(arrival.map(|a| reference * 64_000 + (a.as_micros() - base)));
        }
    }

    /// One RFC 8888 message's packets into `ccfb`, its report timestamp unwrapped as TWCC's
    /// reference time is.
    fn unroll_ccfb(&mut self, t_ms: i64, direction: Direction, fb: &rtcbench_wire::CcfbRepr) {
        const MICROS_PER_COMPACT: f64 = 1e6 / 65_536.0;
        let (reference, message) = self.ccfb.next(direction, u64::from(fb.report_timestamp));
        let reference_us = (reference as f64 * MICROS_PER_COMPACT).round() as i64;
        let t = &mut self.log.ccfb;
        for stream in &fb.streams {
            for (i, report) in stream.reports.iter().enumerate() {
                t.t_ms.push(t_ms);
                t.direction.push(direction);
                t.message.push(message);
                t.media_ssrc.push(stream.media_ssrc);
                t.seq.push(stream.begin_seq.value().wrapping_add(i as u64) as u16);
                t.ecn.push(report.map(|m| m.ecn));
                t.arrival_us
                    .push(report.and_then(|m| m.arrival_offset).map(|d| reference_us - d.as_micros()));
            }
        }
    }

    fn read_event(
        &mut self,
        number: u32,
        what: &'static str,
        body: &[u8],
        offset: usize,
    ) -> Result<(), LogError> {
        let err = |reason: String| LogError { what, offset, reason };
        match number {
            field::INCOMING_RTP | field::OUTGOING_RTP => {
                let direction =
                    if number == field::INCOMING_RTP { Direction::Incoming } else { Direction::Outgoing };
                read_rtp(&mut self.log.rtp, direction, &decode(body, what, offset)?, body.len()).map_err(err)
            }
            field::INCOMING_RTCP | field::OUTGOING_RTCP => {
                let direction =
                    if number == field::INCOMING_RTCP { Direction::Incoming } else { Direction::Outgoing };
                self.read_rtcp(direction, &decode(body, what, offset)?, body.len()).map_err(err)
            }
            field::BEGIN_LOG => {
                let m: schema::BeginLogEvent = decode(body, what, offset)?;
                self.log.start = Some(LogStart {
                    timestamp_ms: required(m.timestamp_ms, "timestamp_ms").map_err(err)?,
                    utc_time_ms: required(m.utc_time_ms, "utc_time_ms").map_err(err)?,
                    version: m.version.unwrap_or(0),
                });
                Ok(())
            }
            field::END_LOG => {
                let m: schema::EndLogEvent = decode(body, what, offset)?;
                self.log.end_ms = Some(required(m.timestamp_ms, "timestamp_ms").map_err(err)?);
                Ok(())
            }
            field::DELAY_BASED_BWE => {
                read_delay_based(&mut self.log.delay_based, &decode(body, what, offset)?, body.len())
                    .map_err(err)
            }
            field::LOSS_BASED_BWE => {
                read_loss_based(&mut self.log.loss_based, &decode(body, what, offset)?, body.len())
                    .map_err(err)
            }
            field::PROBE_CLUSTER => {
                let m: schema::BweProbeCluster = decode(body, what, offset)?;
                let t = &mut self.log.probe_clusters;
                t.t_ms.push(required(m.timestamp_ms, "timestamp_ms").map_err(err)?);
                t.id.push(required(m.id, "id").map_err(err)?);
                t.bitrate_bps.push(required(m.bitrate_bps, "bitrate_bps").map_err(err)?);
                t.min_packets.push(m.min_packets.unwrap_or(0));
                t.min_bytes.push(m.min_bytes.unwrap_or(0));
                Ok(())
            }
            field::PROBE_SUCCESS => {
                let m: schema::BweProbeResultSuccess = decode(body, what, offset)?;
                let t = &mut self.log.probe_results;
                t.t_ms.push(required(m.timestamp_ms, "timestamp_ms").map_err(err)?);
                t.id.push(required(m.id, "id").map_err(err)?);
                t.bitrate_bps.push(Some(required(m.bitrate_bps, "bitrate_bps").map_err(err)?));
                t.failure.push(None);
                Ok(())
            }
            field::PROBE_FAILURE => {
                let m: schema::BweProbeResultFailure = decode(body, what, offset)?;
                let t = &mut self.log.probe_results;
                t.t_ms.push(required(m.timestamp_ms, "timestamp_ms").map_err(err)?);
                t.id.push(required(m.id, "id").map_err(err)?);
                t.bitrate_bps.push(None);
                t.failure.push(Some(m.failure.unwrap_or(0)));
                Ok(())
            }
            field::ALR_STATE => {
                let m: schema::AlrState = decode(body, what, offset)?;
                self.log.alr.t_ms.push(required(m.timestamp_ms, "timestamp_ms").map_err(err)?);
                self.log.alr.in_alr.push(required(m.in_alr, "in_alr").map_err(err)?);
                Ok(())
            }
            field::ROUTE_CHANGE => {
                let m: schema::RouteChange = decode(body, what, offset)?;
                self.log.routes.t_ms.push(required(m.timestamp_ms, "timestamp_ms").map_err(err)?);
                self.log.routes.connected.push(m.connected.unwrap_or(false));
                self.log.routes.overhead.push(m.overhead.unwrap_or(0));
                Ok(())
            }
            field::TARGET_RATE => {
                let m: schema::TargetRateBweUpdates = decode(body, what, offset)?;
                self.log.targets.t_ms.push(required(m.timestamp_ms, "timestamp_ms").map_err(err)?);
                self.log.targets.target_bps.push(required(m.target_rate, "target_rate").map_err(err)?);
                Ok(())
            }
            field::AUDIO_RECV_CONFIG
            | field::AUDIO_SEND_CONFIG
            | field::VIDEO_RECV_CONFIG
            | field::VIDEO_SEND_CONFIG => {
                let video = matches!(number, field::VIDEO_RECV_CONFIG | field::VIDEO_SEND_CONFIG);
                let send = matches!(number, field::AUDIO_SEND_CONFIG | field::VIDEO_SEND_CONFIG);
                let (t_ms, ssrc, rtx_ssrc) = if send {
                    let m: schema::SendStreamConfig = decode(body, what, offset)?;
                    (m.timestamp_ms, m.ssrc, m.rtx_ssrc)
                } else {
                    let m: schema::RecvStreamConfig = decode(body, what, offset)?;
                    (m.timestamp_ms, m.remote_ssrc, m.rtx_ssrc)
                };
                let t = &mut self.log.streams;
                t.t_ms.push(required(t_ms, "timestamp_ms").map_err(err)?);
                t.direction.push(if send { Direction::Outgoing } else { Direction::Incoming });
                t.media.push(if video { "video" } else { "audio" });
                t.ssrc.push(required(ssrc, if send { "ssrc" } else { "remote_ssrc" }).map_err(err)?);
                t.rtx_ssrc.push(rtx_ssrc.filter(|_| video));
                Ok(())
            }
            _ => unreachable!("event_name names only the events read_event reads"),
        }
    }
}

/// One top-level field of a log: a batch of events of one kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Its field number in `EventStream` ([`schema::field`]).
    pub number: u32,
    /// Byte offset of the field (its key) in the log.
    pub offset: usize,
    /// Where its message lies in the log.
    pub body: std::ops::Range<usize>,
}

/// The log's top-level fields in order, without decoding them; framing damage ends the walk
/// with its error. A legacy log is named as such at its first field.
pub fn fields(bytes: &[u8]) -> impl Iterator<Item = Result<Field, LogError>> + '_ {
    let mut pos = 0;
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed || pos >= bytes.len() {
            return None;
        }
        let field = next_field(bytes, &mut pos);
        failed = field.is_err();
        Some(field)
    })
}

fn next_field(bytes: &[u8], pos: &mut usize) -> Result<Field, LogError> {
    let offset = *pos;
    let framing = |reason: &str| LogError { what: "event framing", offset, reason: reason.into() };
    let key = varint(bytes, pos).ok_or_else(|| framing("a truncated field key"))?;
    let (number, wire_type) = ((key >> 3) as u32, key & 7);
    if number == field::LEGACY_EVENT && offset == 0 {
        return Err(LogError {
            what: "log",
            offset,
            reason: "a legacy-format (rtclog) event log; rtcbench reads the protobuf-based format \
                     libwebrtc has written since 2019 (rtclog2)"
                .into(),
        });
    }
    // EventStream holds only messages; any other wire type is damage.
    if wire_type != 2 {
        return Err(framing(&format!("field {number} has wire type {wire_type}, not a message")));
    }
    let len = varint(bytes, pos).ok_or_else(|| framing("a truncated length"))?;
    let end = usize::try_from(len)
        .ok()
        .and_then(|len| pos.checked_add(len))
        .filter(|end| *end <= bytes.len())
        .ok_or_else(|| framing(&format!("a field of {len} bytes runs past the end of the file")))?;
    let body = *pos..end;
    *pos = end;
    Ok(Field { number, offset, body })
}

/// The format's name of each event [`EventLog::parse`] reads; `None` for the others, which it
/// counts in `skipped`.
fn event_name(number: u32) -> Option<&'static str> {
    Some(match number {
        field::INCOMING_RTP => "incoming_rtp_packets",
        field::OUTGOING_RTP => "outgoing_rtp_packets",
        field::INCOMING_RTCP => "incoming_rtcp_packets",
        field::OUTGOING_RTCP => "outgoing_rtcp_packets",
        field::BEGIN_LOG => "begin_log_events",
        field::END_LOG => "end_log_events",
        field::LOSS_BASED_BWE => "loss_based_bwe_updates",
        field::DELAY_BASED_BWE => "delay_based_bwe_updates",
        field::PROBE_CLUSTER => "probe_clusters",
        field::PROBE_SUCCESS => "probe_success",
        field::PROBE_FAILURE => "probe_failure",
        field::ALR_STATE => "alr_states",
        field::ROUTE_CHANGE => "route_changes",
        field::TARGET_RATE => "target_rate_bwe_updates",
        field::AUDIO_RECV_CONFIG => "audio_recv_stream_configs",
        field::AUDIO_SEND_CONFIG => "audio_send_stream_configs",
        field::VIDEO_RECV_CONFIG => "video_recv_stream_configs",
        field::VIDEO_SEND_CONFIG => "video_send_stream_configs",
        _ => return None,
    })
}

fn decode<M: Message + Default>(body: &[u8], what: &'static str, offset: usize) -> Result<M, LogError> {
    M::decode(body).map_err(|e| LogError { what, offset, reason: format!("not a valid message ({e})") })
}

fn varint(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for i in 0..10 {
        let byte = *bytes.get(*pos)?;
        *pos += 1;
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

fn required<T>(value: Option<T>, name: &str) -> Result<T, String> {
    value.ok_or_else(|| format!("its required field {name} is missing"))
}

/// The later events a batch holds beyond its first, bounded by the bytes that must carry them:
/// every delta-encoded column of N values that is not constant needs at least N bits, and a
/// batch of events that are all identical to its first is no record anyone writes.
fn deltas(number_of_deltas: Option<u32>, body_len: usize) -> Result<usize, String> {
    let n = number_of_deltas.unwrap_or(0) as usize;
    let bound = 8 * body_len + 64;
    if n > bound {
        return Err(format!("{n} events claimed in a batch of {body_len} bytes"));
    }
    Ok(n)
}

/// One column of a batch: the base event's value, then its deltas' values.
fn column(
    base: Option<u64>,
    bytes: Option<&Vec<u8>>,
    n: usize,
    name: &str,
) -> Result<Vec<Option<u64>>, String> {
    let mut values = Vec::with_capacity(n + 1);
    values.push(base);
    if n > 0 {
        let later = delta::decode(bytes.map_or(&[][..], Vec::as_slice), base, n)
            .map_err(|e| format!("column {name}: {e}"))?;
        values.extend(later);
    }
    Ok(values)
}

/// A column every event must have.
fn full(values: Vec<Option<u64>>, name: &str) -> Result<Vec<u64>, String> {
    values.into_iter().map(|v| v.ok_or_else(|| format!("an event without its required {name}"))).collect()
}

fn read_rtp(
    t: &mut RtpRows,
    direction: Direction,
    m: &schema::RtpPackets,
    body_len: usize,
) -> Result<(), String> {
    let n = deltas(m.number_of_deltas, body_len)?;
    let t_ms = full(
        column(m.timestamp_ms.map(|v| v as u64), m.timestamp_ms_deltas.as_ref(), n, "timestamp_ms")?,
        "timestamp_ms",
    )?;
    let u = |v: Option<u32>| v.map(u64::from);
    let ssrc = full(column(u(m.ssrc), m.ssrc_deltas.as_ref(), n, "ssrc")?, "ssrc")?;
    let seq = full(
        column(u(m.sequence_number), m.sequence_number_deltas.as_ref(), n, "sequence_number")?,
        "sequence_number",
    )?;
    let rtp_ts = full(
        column(u(m.rtp_timestamp), m.rtp_timestamp_deltas.as_ref(), n, "rtp_timestamp")?,
        "rtp_timestamp",
    )?;
    let pt =
        full(column(u(m.payload_type), m.payload_type_deltas.as_ref(), n, "payload_type")?, "payload_type")?;
    let marker = full(column(m.marker.map(u64::from), m.marker_deltas.as_ref(), n, "marker")?, "marker")?;
    let header =
        full(column(u(m.header_size), m.header_size_deltas.as_ref(), n, "header_size")?, "header_size")?;
    let payload =
        full(column(u(m.payload_size), m.payload_size_deltas.as_ref(), n, "payload_size")?, "payload_size")?;
    let padding =
        full(column(u(m.padding_size), m.padding_size_deltas.as_ref(), n, "padding_size")?, "padding_size")?;
    let tseq = column(
        u(m.transport_sequence_number),
        m.transport_sequence_number_deltas.as_ref(),
        n,
        "transport_sequence_number",
    )?;
    let abs = column(u(m.absolute_send_time), m.absolute_send_time_deltas.as_ref(), n, "absolute_send_time")?;
    let level = column(u(m.audio_level), m.audio_level_deltas.as_ref(), n, "audio_level")?;
    for i in 0..=n {
        t.t_ms.push(delta::as_i64(t_ms[i]));
        t.direction.push(direction);
        t.ssrc.push(ssrc[i] as u32);
        t.seq.push(seq[i] as u16);
        t.rtp_timestamp.push(rtp_ts[i] as u32);
        t.payload_type.push(pt[i] as u8);
        t.marker.push(marker[i] != 0);
        t.header_size.push(header[i] as u32);
        t.payload_size.push(payload[i] as u32);
        t.padding_size.push(padding[i] as u32);
        t.transport_seq.push(tseq[i].map(|v| v as u16));
        t.abs_send_time.push(abs[i].map(|v| v as u32));
        t.audio_level.push(level[i].map(|v| v as u8));
    }
    Ok(())
}

/// `n` packets stored as every length (a varint each), then every packet, back to back.
fn blobs(bytes: &[u8], n: usize) -> Result<Vec<&[u8]>, String> {
    // Each length takes at least a byte.
    if n > bytes.len() {
        return Err(format!("{n} RTCP packets claimed in {} bytes", bytes.len()));
    }
    let mut pos = 0;
    let mut lengths = Vec::with_capacity(n);
    for _ in 0..n {
        let len = varint(bytes, &mut pos).ok_or("the RTCP packets' lengths are truncated")?;
        lengths.push(usize::try_from(len).map_err(|_| "an RTCP packet longer than memory")?);
    }
    let mut packets = Vec::with_capacity(n);
    for len in lengths {
        let end = pos
            .checked_add(len)
            .filter(|end| *end <= bytes.len())
            .ok_or("the RTCP packets run past their field")?;
        packets.push(&bytes[pos..end]);
        pos = end;
    }
    if pos != bytes.len() {
        return Err(format!("{} bytes after the last RTCP packet", bytes.len() - pos));
    }
    Ok(packets)
}

#[derive(Default)]
struct RtcpRow {
    kind: &'static str,
    packet_type: Option<u8>,
    fmt: Option<u8>,
    media_ssrc: Option<u32>,
    feedback_base_seq: Option<u16>,
    feedback_packets: Option<u32>,
    feedback_received: Option<u32>,
    remb_bps: Option<u64>,
    nack_packets: Option<u32>,
    sr_ntp_mid: Option<u32>,
    block: Option<rtcbench_wire::ReportBlock>,
}

impl RtcpRow {
    fn of(message: &RtcpMessage) -> Self {
        use rtcbench_wire::rtcp::{FMT_AFB, FMT_CCFB, FMT_FIR, FMT_NACK, FMT_PLI, FMT_TWCC};
        let (pt_rtpfb, pt_psfb) = (205, 206);
        match message {
            RtcpMessage::SenderReport(sr) => Self {
                kind: "sr",
                packet_type: Some(200),
                fmt: Some(sr.blocks.len() as u8),
                media_ssrc: sr.blocks.first().map(|b| b.ssrc),
                // The middle 32 bits of the 64-bit NTP timestamp (RFC 3550 §6.4.1, LSR).
                sr_ntp_mid: Some((sr.ntp >> 16) as u32),
                block: sr.blocks.first().copied(),
                ..Self::default()
            },
            RtcpMessage::ReceiverReport(rr) => Self {
                kind: "rr",
                packet_type: Some(201),
                fmt: Some(rr.blocks.len() as u8),
                media_ssrc: rr.blocks.first().map(|b| b.ssrc),
                block: rr.blocks.first().copied(),
                ..Self::default()
            },
            RtcpMessage::TransportFeedback(fb) => Self {
                kind: "twcc",
                packet_type: Some(pt_rtpfb),
                fmt: Some(FMT_TWCC),
                media_ssrc: Some(fb.media_ssrc),
                feedback_base_seq: Some(fb.base_seq.value() as u16),
                feedback_packets: Some(fb.packets.len() as u32),
                feedback_received: Some(fb.packets.iter().filter(|(_, at)| at.is_some()).count() as u32),
                ..Self::default()
            },
            RtcpMessage::CongestionControlFeedback(fb) => Self {
                kind: "ccfb",
                packet_type: Some(pt_rtpfb),
                fmt: Some(FMT_CCFB),
                media_ssrc: fb.streams.first().map(|s| s.media_ssrc),
                feedback_base_seq: fb.streams.first().map(|s| s.begin_seq.value() as u16),
                feedback_packets: Some(fb.streams.iter().map(|s| s.reports.len() as u32).sum()),
                feedback_received: Some(
                    fb.streams.iter().map(|s| s.reports.iter().flatten().count() as u32).sum(),
                ),
                ..Self::default()
            },
            RtcpMessage::Remb(remb) => Self {
                kind: "remb",
                packet_type: Some(pt_psfb),
                fmt: Some(FMT_AFB),
                media_ssrc: remb.ssrcs.first().copied(),
                remb_bps: Some(remb.bitrate.as_bps()),
                ..Self::default()
            },
            RtcpMessage::Nack(nack) => Self {
                kind: "nack",
                packet_type: Some(pt_rtpfb),
                fmt: Some(FMT_NACK),
                media_ssrc: Some(nack.media_ssrc),
                nack_packets: Some(nack.lost.len() as u32),
                ..Self::default()
            },
            RtcpMessage::Pli(pli) => Self {
                kind: "pli",
                packet_type: Some(pt_psfb),
                fmt: Some(FMT_PLI),
                media_ssrc: Some(pli.media_ssrc),
                ..Self::default()
            },
            RtcpMessage::Fir(_) => {
                Self { kind: "fir", packet_type: Some(pt_psfb), fmt: Some(FMT_FIR), ..Self::default() }
            }
            RtcpMessage::ExtendedReport(_) => Self { kind: "xr", packet_type: Some(207), ..Self::default() },
            RtcpMessage::Other { packet_type, fmt } => {
                Self { kind: "other", packet_type: Some(*packet_type), fmt: Some(*fmt), ..Self::default() }
            }
            // `RtcpMessage` is non-exhaustive: a kind added later reads as unnamed until named here.
            _ => Self { kind: "other", ..Self::default() },
        }
    }
}

fn push_rtcp_row(t: &mut RtcpRows, t_ms: i64, direction: Direction, size: u32, index: u16, row: RtcpRow) {
    t.t_ms.push(t_ms);
    t.direction.push(direction);
    t.size.push(size);
    t.index.push(index);
    t.kind.push(row.kind);
    t.packet_type.push(row.packet_type);
    t.fmt.push(row.fmt);
    t.media_ssrc.push(row.media_ssrc);
    t.feedback_base_seq.push(row.feedback_base_seq);
    t.feedback_packets.push(row.feedback_packets);
    t.feedback_received.push(row.feedback_received);
    t.remb_bps.push(row.remb_bps);
    t.nack_packets.push(row.nack_packets);
    t.sr_ntp_mid.push(row.sr_ntp_mid);
    t.report_fraction_lost.push(row.block.map(|b| b.fraction_lost));
    t.report_lsr.push(row.block.map(|b| b.lsr));
    t.report_dlsr.push(row.block.map(|b| b.dlsr));
}

fn read_delay_based(
    t: &mut DelayBasedRows,
    m: &schema::DelayBasedBweUpdates,
    body_len: usize,
) -> Result<(), String> {
    let n = deltas(m.number_of_deltas, body_len)?;
    let t_ms = full(
        column(m.timestamp_ms.map(|v| v as u64), m.timestamp_ms_deltas.as_ref(), n, "timestamp_ms")?,
        "timestamp_ms",
    )?;
    let rate = full(
        column(m.bitrate_bps.map(u64::from), m.bitrate_bps_deltas.as_ref(), n, "bitrate_bps")?,
        "bitrate_bps",
    )?;
    let state = column(
        m.detector_state.map(|v| u64::from(v as u32)),
        m.detector_state_deltas.as_ref(),
        n,
        "detector_state",
    )?;
    for i in 0..=n {
        t.t_ms.push(delta::as_i64(t_ms[i]));
        t.bitrate_bps.push(rate[i] as u32);
        t.detector_state.push(state[i].map_or(0, delta::as_i32));
    }
    Ok(())
}

fn read_loss_based(
    t: &mut LossBasedRows,
    m: &schema::LossBasedBweUpdates,
    body_len: usize,
) -> Result<(), String> {
    let n = deltas(m.number_of_deltas, body_len)?;
    let t_ms = full(
        column(m.timestamp_ms.map(|v| v as u64), m.timestamp_ms_deltas.as_ref(), n, "timestamp_ms")?,
        "timestamp_ms",
    )?;
    let rate = full(
        column(m.bitrate_bps.map(u64::from), m.bitrate_bps_deltas.as_ref(), n, "bitrate_bps")?,
        "bitrate_bps",
    )?;
    let loss = column(m.fraction_loss.map(u64::from), m.fraction_loss_deltas.as_ref(), n, "fraction_loss")?;
    let total = column(m.total_packets.map(u64::from), m.total_packets_deltas.as_ref(), n, "total_packets")?;
    for i in 0..=n {
        t.t_ms.push(delta::as_i64(t_ms[i]));
        t.bitrate_bps.push(rate[i] as u32);
        t.fraction_loss.push(loss[i].unwrap_or(0) as u32);
        t.total_packets.push(total[i].unwrap_or(0) as u32);
    }
    Ok(())
}
