//! The two ends of a media call.
//!
//! [`Sender`]: video (RFC 8593 model) and audio sources → RTP packetisation → pacer (driven by
//! the controller's pacing rate and probe requests) → the network, with transport-wide sequence
//! numbers and abs-send-time on every packet and an RTCP sender report every report interval.
//! Feedback arrives as RTCP bytes, is parsed, and reaches the controller as a
//! [`FeedbackReport`].
//!
//! With NACK on (the default, as in Chrome), the sender keeps what it sent in a history and
//! answers a generic NACK (RFC 4585 §6.2.1) with RTX retransmissions (RFC 4588) on the RTX SSRC
//! and payload type, paced before queued video, limited to the target rate over 500 ms, and taken
//! out of the encoder's share of the target as libwebrtc does (`rtcbench_media::history`). A PLI
//! (RFC 4585 §6.3.1) makes the encoder send a keyframe, at most one per 300 ms.
//!
//! With FEC on (the default, as Chrome sends VP8), video goes out in RED (RFC 2198) and ULPFEC
//! packets (RFC 5109) follow in the same stream: libwebrtc's protection level from the reported
//! loss and the RTT (`rtcbench_media::fec`), packets protected as they leave the pacer and the
//! FEC packets queued behind them, their share taken off the encoder like retransmissions'.
//! With [`FecScheme::Flexfec`] the same protection goes out as FlexFEC (RFC 8627) repair packets
//! on their own SSRC, sequence numbers and payload type, naming the video SSRC as their CSRC,
//! and video goes without RED, as libwebrtc's `FlexfecSender` does.
//!
//! Every video payload starts with the VP8 payload descriptor (RFC 7741, with the picture ID a
//! receiver decodes frames in order by) and the frame's index (4 bytes, big-endian: the trace's
//! label, which FEC rebuilds with the rest of a lost packet); the rest of a payload is zeros.
//!
//! [`Receiver`]: parses each RTP header, records arrivals for transport-wide feedback (sent every
//! feedback interval), keeps RFC 3550 receiver statistics (an RR every report interval, with
//! LSR/DLSR for the sender's RTT), rebuilds lost video packets from ULPFEC or FlexFEC
//! ([`FecDecoder`]), and hands video packets (originals, retransmissions and recovered ones) to
//! [`VideoReceiver`]: frame assembly, NACKs, decoding in order, keyframe requests, rendering and
//! freezes.
//!
//! Both are sans-IO (the crate's docs): inputs with `now`, outputs collected in an outbox, the
//! next deadline from `poll_timeout`, what they measure told to a [`CallObserver`].

use std::collections::BTreeMap;

use rtcbench_cc::adapter::TransportFeedbackAdapter;
use rtcbench_cc::ccfb::CcfbReceiver;
pub use rtcbench_cc::factory::FeedbackMode;
use rtcbench_cc::feedback::Ecn;
use rtcbench_cc::gcc_draft::RembEstimator;
use rtcbench_cc::learned::LearnedEstimator;
use rtcbench_cc::twcc::TwccReceiver;
use rtcbench_cc::{AnyController, Controller, ControllerMetrics, FeedbackReport, LossReport};
use rtcbench_media::audio::AudioSource;
use rtcbench_media::encoder::{Encoder, ExternalEncoder};
use rtcbench_media::fec::generator::FecGenerator;
use rtcbench_media::fec::protection::{FecController, FecInputs, FecParams, Protection};
use rtcbench_media::history::{PacketHistory, RetransmissionLimiter, SendRates, SentKind, RTT_MARGIN};
use rtcbench_media::pacer::{Paced, PacedOutput, Pacer, PacerConfig};
use rtcbench_media::packetizer::Packetizer;
use rtcbench_media::playout::{VideoEvent, VideoReceiver};
use rtcbench_media::video::VideoSource;
use rtcbench_media::VideoPacket;
use rtcbench_units::{Bitrate, DataSize, Duration, Instant, SeqNo, SeqUnwrapper};
use rtcbench_wire::fec::decoder::{FecDecoder, ProtectedBytes};
use rtcbench_wire::fec::{xor_bytes, FecHeader};
use rtcbench_wire::red::PRIMARY_HEADER_LEN;
use rtcbench_wire::rtcp::fir::FirRepr;
use rtcbench_wire::rtcp::nack::NackRepr;
use rtcbench_wire::rtcp::pli::PliRepr;
use rtcbench_wire::rtcp::{emit_compound, parse_compound, RtcpMessage};
use rtcbench_wire::rtp::{abs_send_time_from, FrameMarking, RtpHeaderRepr, IPV4_UDP_OVERHEAD};
use rtcbench_wire::rtx::{rtx_osn, OSN_LEN};
use rtcbench_wire::vp8::{Vp8DescriptorRepr, PICTURE_ID_MODULO};
use rtcbench_wire::{
    ntp, DlrrSubBlock, FlexfecHeaderRepr, ProtectedPacket, ReceiverReportRepr, ReceiverStats, RedHeaderRepr,
    RembRepr, SenderReportRepr, UlpfecHeaderRepr, XrRepr,
};
use smallvec::SmallVec;

use crate::observe::{CallObserver, FeedbackKind, FeedbackRow, Ignore};
use crate::{Incoming, OutKind, Outgoing};

/// Payload types (dynamic range, as Chrome's SDP offer maps them).
pub const PT_VIDEO: u8 = 96;
pub const PT_RTX: u8 = 97;
pub const PT_AUDIO: u8 = 111;
/// RED (RFC 2198) carrying video or ULPFEC, its RTX (`apt=116`), and ULPFEC inside RED.
pub const PT_RED: u8 = 116;
pub const PT_RTX_RED: u8 = 117;
pub const PT_ULPFEC: u8 = 118;
/// FlexFEC (RFC 8627) repair packets, on their own SSRC: a dynamic payload type (RFC 3551 §3),
/// fixed here as the others are, since rtcbench negotiates no SDP.
pub const PT_FLEXFEC: u8 = 35;
/// The frame index at the start of a video payload (after the VP8 descriptor), for the trace.
pub const FRAME_LABEL_LEN: usize = 4;
/// RTP clock rates (RFC 3551: 90 kHz video; Opus runs at 48 kHz).
pub const VIDEO_CLOCK_HZ: u32 = 90_000;
pub const AUDIO_CLOCK_HZ: u32 = 48_000;
/// Controller state is traced at most this often per call (and whenever the target changes).
pub(crate) const CONTROLLER_ROW_MIN_GAP: Duration = Duration::from_millis(10);
/// A full-size video packet on the wire: 1200 B payload + 28 B RTP header and extensions + 28 B
/// IPv4/UDP.
const FULL_SIZE_PACKET: DataSize = DataSize::bytes(1256);
/// libwebrtc `kMinKeyframeSendIntervalMs`: keyframe requests closer than this to the last one
/// honoured are ignored by the sender.
pub const MIN_KEYFRAME_INTERVAL: Duration = Duration::from_millis(300);

/// SSRCs and random initial values of a call's streams (RFC 3550 §5.1: random initial sequence
/// numbers and timestamps).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamIds {
    pub video_ssrc: u32,
    pub rtx_ssrc: u32,
    pub audio_ssrc: u32,
    pub receiver_ssrc: u32,
    pub video_seq0: u16,
    pub rtx_seq0: u16,
    pub audio_seq0: u16,
    pub video_ts0: u32,
    pub audio_ts0: u32,
    /// The FlexFEC stream's SSRC, initial sequence number and timestamp offset.
    pub flexfec_ssrc: u32,
    pub flexfec_seq0: u16,
    pub flexfec_ts0: u32,
}

/// How a receiver asks for a keyframe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyframeRequest {
    /// A picture loss indication (RFC 4585 §6.3.1): what Chrome sends.
    #[default]
    Pli,
    /// A full intra request (RFC 5104 §4.3.1), with a command sequence number that tells a new
    /// request from a repeated one.
    Fir,
}

/// When the receiving jitter buffer of GStreamer's RTP stack (`rtpjitterbuffer`, which
/// `--mode gstreamer --cc rtpgccbwe` runs) asks for a retransmission. Each field left out keeps
/// GStreamer's own setting. rtcbench's receivers and the browsers' ask on a gap in the sequence
/// numbers, as libwebrtc's `NackRequester` does, and have no such settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JitterBuffer {
    /// `rtx-next-seqnum`: also ask for the packet after the newest one when it is later than
    /// the packets' spacing and `rtx-delay` allow, with no gap seen (GStreamer's default: on).
    /// Off, only a gap in the sequence numbers prompts a request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtx_next_seqnum: Option<bool>,
    /// `rtx-min-delay`: the least time to wait before a packet's first request (GStreamer's
    /// default: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtx_min_delay: Option<Duration>,
}

/// How a call protects its video with FEC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FecScheme {
    /// ULPFEC (RFC 5109) inside RED (RFC 2198), in the video stream: what Chrome sends with VP8.
    Ulpfec,
    /// FlexFEC (RFC 8627) on its own SSRC and payload type; video goes without RED.
    Flexfec,
}

/// An FEC packet waiting in the pacer: its FEC header, the XOR of the protected packets'
/// written bytes, and the RTP timestamp it goes out with (ULPFEC: that of the last packet it
/// protects; FlexFEC: its own stream's clock when it was made, as libwebrtc's `FlexfecSender`).
#[derive(Clone, Debug)]
struct QueuedFec {
    header: FecHeader,
    body: Vec<u8>,
    timestamp: u32,
}

/// A packet waiting in the pacer: everything needed to write its RTP header when it leaves.
#[derive(Clone, Debug)]
struct QueuedRtp {
    is_audio: bool,
    /// Media bytes after the RTP header and, for video, the payload descriptor (the frame label
    /// included).
    payload: DataSize,
    /// Video packets are numbered when they leave the pacer (as libwebrtc's `PacketSequencer`
    /// does), so that FEC packets take the numbers between them; audio when queued.
    seq: u16,
    timestamp: u32,
    marker: bool,
    marking: Option<FrameMarking>,
    frame: Option<u64>,
    /// Wire size, for the pacing budget.
    wire: DataSize,
    /// A retransmission of video packet `seq`, to go out on the RTX stream.
    retransmission: bool,
    /// The video frame's VP8 picture ID.
    picture_id: u16,
    /// An FEC packet of the video stream rather than media.
    fec: Option<Box<QueuedFec>>,
}

impl Paced for QueuedRtp {
    fn size(&self) -> DataSize {
        self.wire
    }
    fn is_audio(&self) -> bool {
        self.is_audio
    }
    fn is_retransmission(&self) -> bool {
        self.retransmission
    }
}

/// The RTX header (RFC 4588 §4) of a retransmission of `original`: the RTX SSRC, payload type
/// (that associated with RED when video goes in RED) and sequence number; the original's
/// timestamp, marker and frame marking.
fn rtx_header(ids: &StreamIds, rtx_seq: u16, original: &QueuedRtp, red: bool) -> RtpHeaderRepr {
    rtx_header_for(ids, rtx_seq, original.marker, original.timestamp, original.marking, red)
}

/// The RTX header of a retransmission of a packet with `marker`, `timestamp` and `marking`
/// ([`rtx_header`]; an SFU retransmits what it forwarded with it too).
pub(crate) fn rtx_header_for(
    ids: &StreamIds,
    rtx_seq: u16,
    marker: bool,
    timestamp: u32,
    marking: Option<FrameMarking>,
    red: bool,
) -> RtpHeaderRepr {
    RtpHeaderRepr {
        payload_type: if red { PT_RTX_RED } else { PT_RTX },
        marker,
        seq: SeqNo::new(u64::from(rtx_seq)),
        timestamp,
        ssrc: ids.rtx_ssrc,
        csrc: None,
        abs_send_time: Some(0),
        transport_seq: Some(SeqNo::new(0)),
        frame_marking: marking,
        padding_len: 0,
    }
}

/// A probe padding packet of `size` (its original sequence number included, which the caller
/// writes after the header) as packet `seq` of the RTX stream: its header, wire size and payload.
///
/// Probe padding goes out on the RTX stream, as libwebrtc prefers over padding-only packets; it
/// belongs to the video flow. Its payload starts with an original sequence number (that of the
/// last video packet sent) like any RTX payload, but it carries no frame marking: the receiver
/// takes it for padding, not for a piece of a frame.
pub(crate) fn probe_padding(
    ids: &StreamIds,
    seq: u16,
    size: DataSize,
) -> (RtpHeaderRepr, DataSize, DataSize) {
    let h = RtpHeaderRepr {
        payload_type: PT_RTX,
        marker: false,
        seq: SeqNo::new(u64::from(seq)),
        timestamp: ids.video_ts0,
        ssrc: ids.rtx_ssrc,
        csrc: None,
        abs_send_time: Some(0),
        transport_seq: Some(SeqNo::new(0)),
        frame_marking: None,
        padding_len: 0,
    };
    // The requested size includes the original sequence number.
    let payload = size.saturating_sub(DataSize::bytes(OSN_LEN as u64));
    (h, wire_size(&h, payload) + DataSize::bytes(OSN_LEN as u64), payload)
}

/// The RTP header of a media packet as it will be sent (the extension values are filled in when
/// the pacer releases it; their size is already right).
fn media_header(
    ids: &StreamIds,
    audio: bool,
    seq: u16,
    timestamp: u32,
    marker: bool,
    marking: Option<FrameMarking>,
) -> RtpHeaderRepr {
    RtpHeaderRepr {
        payload_type: if audio { PT_AUDIO } else { PT_VIDEO },
        marker,
        seq: SeqNo::new(u64::from(seq)),
        timestamp,
        ssrc: if audio { ids.audio_ssrc } else { ids.video_ssrc },
        csrc: None,
        abs_send_time: Some(0),
        transport_seq: Some(SeqNo::new(0)),
        frame_marking: marking,
        padding_len: 0,
    }
}

/// The RTP header of a FlexFEC repair packet (RFC 8627 §4.1): its own SSRC, sequence number and
/// timestamp, the protected video SSRC as its one CSRC, no marker, and the transport-wide
/// extensions every packet carries (libwebrtc's `FlexfecSender` registers only those and MID).
fn flexfec_header(ids: &StreamIds, seq: u16, timestamp: u32) -> RtpHeaderRepr {
    RtpHeaderRepr {
        payload_type: PT_FLEXFEC,
        marker: false,
        seq: SeqNo::new(u64::from(seq)),
        timestamp,
        ssrc: ids.flexfec_ssrc,
        csrc: Some(ids.video_ssrc),
        abs_send_time: Some(0),
        transport_seq: Some(SeqNo::new(0)),
        frame_marking: None,
        padding_len: 0,
    }
}

/// `t` on an RTP clock of `hz` (before the stream's random offset), wrapping at 32 bits.
pub(crate) fn rtp_clock(t: Instant, hz: u32) -> u32 {
    ((t.as_micros() as u128 * u128::from(hz)) / 1_000_000) as u32
}

/// Wire size of an RTP packet: IPv4 + UDP + RTP header with extensions + payload.
pub(crate) fn wire_size(header: &RtpHeaderRepr, payload: DataSize) -> DataSize {
    IPV4_UDP_OVERHEAD + DataSize::bytes(header.buffer_len() as u64) + payload
}

/// Bytes between a video packet's RTP header and its media: the RED header when video goes in
/// RED, and the VP8 payload descriptor.
fn video_prefix_len(red: bool) -> usize {
    usize::from(red) + rtcbench_wire::vp8::DESCRIPTOR_LEN
}

/// What follows an RTP header in `data` (OSN, RED header, descriptor, label, FEC headers and
/// body); the rest of the packet is zeros. Media fits on the stack.
pub(crate) type Tail = SmallVec<[u8; 16]>;

/// Appends what follows a video packet's RTP header up to the zeros of its payload: the RED
/// header (if `red`), the VP8 descriptor and as much of the frame label as the payload holds.
fn write_video_head(out: &mut Tail, red: bool, item: &QueuedRtp) {
    if red {
        out.push(PT_VIDEO);
    }
    let descriptor = Vp8DescriptorRepr {
        start_of_partition: item.marking.is_some_and(|m| m.start),
        picture_id: Some(item.picture_id),
        ..Vp8DescriptorRepr::default()
    };
    let mut bytes = [0; rtcbench_wire::vp8::DESCRIPTOR_LEN];
    descriptor.emit(&mut bytes).expect("a 15-bit picture ID in 4 bytes");
    out.extend_from_slice(&bytes);
    let label = (item.frame.unwrap_or(0) as u32).to_be_bytes();
    let room = (item.payload.as_bytes() as usize).min(FRAME_LABEL_LEN);
    out.extend_from_slice(&label[..room]);
}

/// The FEC state of a sender: the protection controller and the generator.
struct SenderFec {
    scheme: FecScheme,
    controller: FecController,
    generator: FecGenerator<ProtectedBytes>,
    /// A fixed rate for every frame, each protected by itself, instead of the controller's.
    fixed: Option<FecParams>,
}

/// Previous report block values per SSRC, to turn cumulative counters into interval deltas.
#[derive(Clone, Copy, Debug, Default)]
struct LastBlock {
    cumulative_lost: i32,
    extended_highest_seq: u32,
}

/// What a media sender makes of one RTCP message from its receiver ([`FeedbackIntake`]).
pub(crate) enum Heard {
    /// Transport-wide or RFC 8888 feedback, or a REMB: for the controller.
    Feedback(FeedbackReport),
    /// A receiver report's RTT and loss, for the controller (and the sender's history and FEC).
    ReceiverReport(FeedbackReport),
    /// A generic NACK (RFC 4585 §6.2.1) for the video stream: the sequence numbers it asks for.
    Nack(Vec<u16>),
    /// A PLI, or a FIR with a new command sequence number, for the video stream.
    KeyframeRequest,
    /// Nothing for the sender to act on (an RRTR is kept for the next sender report).
    Nothing,
}

/// The sending side's reading of its receiver's RTCP, shared by a call's [`Sender`] and an
/// SFU's downlinks (`crate::sfu`): it numbers the packets sent (transport-wide sequence numbers,
/// [`TransportFeedbackAdapter`]), turns feedback into [`FeedbackReport`]s, keeps what interval
/// deltas and RTT need, and traces every message it reads.
#[derive(Debug, Default)]
pub(crate) struct FeedbackIntake {
    pub(crate) adapter: TransportFeedbackAdapter,
    last_blocks: BTreeMap<u32, LastBlock>,
    /// The last receiver reference time (RFC 3611 §4.4) heard: (receiver SSRC, LRR, arrival).
    pub(crate) last_rrtr: Option<(u32, u32, Instant)>,
    /// The command sequence number of the last FIR heard for the video stream.
    last_fir_seq: Option<u8>,
}

impl FeedbackIntake {
    /// One message of a compound packet of `size` on the wire, about the streams `ids`.
    pub(crate) fn on_message<O: CallObserver>(
        &mut self,
        now: Instant,
        m: RtcpMessage,
        size: DataSize,
        ids: &StreamIds,
        obs: &mut O,
    ) -> Heard {
        match m {
            RtcpMessage::TransportFeedback(fb) => {
                let report = self.adapter.on_twcc(now, &fb);
                obs.feedback(now, FeedbackRow::reporting(FeedbackKind::Twcc, size, fb.packets.len()));
                Heard::Feedback(report)
            }
            RtcpMessage::CongestionControlFeedback(fb) => {
                let report = self.adapter.on_ccfb(now, &fb);
                let reported = fb.streams.iter().map(|s| s.reports.len()).sum();
                let ce = report.packets.iter().filter(|p| p.arrival.is_some() && p.ecn == Ecn::Ce).count();
                let row = FeedbackRow {
                    ce_reported: Some(ce as u32),
                    ..FeedbackRow::reporting(FeedbackKind::Ccfb, size, reported)
                };
                obs.feedback(now, row);
                Heard::Feedback(report)
            }
            RtcpMessage::Remb(remb) => {
                let report = FeedbackReport {
                    remb: Some(remb.bitrate),
                    data_in_flight: self.adapter.in_flight(),
                    ..FeedbackReport::default()
                };
                obs.feedback(now, FeedbackRow::reporting(FeedbackKind::Remb, size, 0));
                Heard::Feedback(report)
            }
            RtcpMessage::ReceiverReport(rr) => {
                let report = self.receiver_report(now, &rr, ids);
                obs.feedback(
                    now,
                    FeedbackRow {
                        kind: FeedbackKind::Rr,
                        size,
                        rtt: report.rtt,
                        fraction_lost: report.loss.map(|l| l.fraction_lost),
                        packets_reported: None,
                        ce_reported: None,
                    },
                );
                Heard::ReceiverReport(report)
            }
            RtcpMessage::ExtendedReport(XrRepr { sender_ssrc, rrtr: Some(ntp64), .. }) => {
                self.last_rrtr = Some((sender_ssrc, ntp::compact(ntp64), now));
                Heard::Nothing
            }
            RtcpMessage::Nack(nack) if nack.media_ssrc == ids.video_ssrc => {
                obs.feedback(now, FeedbackRow::reporting(FeedbackKind::Nack, size, nack.lost.len()));
                Heard::Nack(nack.lost)
            }
            RtcpMessage::Pli(pli) if pli.media_ssrc == ids.video_ssrc => {
                obs.feedback(now, FeedbackRow::reporting(FeedbackKind::Pli, size, 0));
                Heard::KeyframeRequest
            }
            RtcpMessage::Fir(fir) => {
                // RFC 5104 §4.3.1.2: a FIR repeating the last command sequence number is the
                // same request (libwebrtc's RTCPReceiver::HandleFir skips it).
                let ours = fir.entries.iter().find(|&&(ssrc, _)| ssrc == ids.video_ssrc);
                let Some(&(_, seq)) = ours else { return Heard::Nothing };
                obs.feedback(now, FeedbackRow::reporting(FeedbackKind::Fir, size, 0));
                if self.last_fir_seq == Some(seq) {
                    return Heard::Nothing;
                }
                self.last_fir_seq = Some(seq);
                Heard::KeyframeRequest
            }
            _ => Heard::Nothing,
        }
    }

    /// RTT (RFC 3550 §6.4.1: A - LSR - DLSR) and loss over the interval from an RR's blocks
    /// about our streams.
    fn receiver_report(&mut self, now: Instant, rr: &ReceiverReportRepr, ids: &StreamIds) -> FeedbackReport {
        let ours = [ids.video_ssrc, ids.audio_ssrc, ids.rtx_ssrc, ids.flexfec_ssrc];
        let mut rtt: Option<Duration> = None;
        let mut lost = 0i64;
        let mut expected = 0i64;
        let mut fraction: f64 = 0.0;
        for b in rr.blocks.iter().filter(|b| ours.contains(&b.ssrc)) {
            if let Some(r) = ntp::rtt_from_report(now, b.lsr, b.dlsr) {
                rtt = Some(rtt.map_or(r, |x| x.max(r)));
            }
            let last = self.last_blocks.insert(
                b.ssrc,
                LastBlock {
                    cumulative_lost: b.cumulative_lost,
                    extended_highest_seq: b.extended_highest_seq,
                },
            );
            if let Some(last) = last {
                lost += i64::from(b.cumulative_lost) - i64::from(last.cumulative_lost);
                expected += i64::from(b.extended_highest_seq.wrapping_sub(last.extended_highest_seq));
            }
            // The repair streams' losses count, but not in the loss fraction (that of media).
            if b.ssrc != ids.rtx_ssrc && b.ssrc != ids.flexfec_ssrc {
                fraction = fraction.max(f64::from(b.fraction_lost) / 256.0);
            }
        }
        let lost = lost.max(0) as u64;
        let received = (expected.max(0) as u64).saturating_sub(lost);
        FeedbackReport {
            rtt,
            loss: Some(LossReport {
                fraction_lost: fraction,
                packets_lost_delta: lost,
                packets_received_delta: received,
            }),
            data_in_flight: self.adapter.in_flight(),
            ..FeedbackReport::default()
        }
    }
}

/// An RTCP sender report (RFC 3550 §6.4.1) for stream `ssrc` with the media `(packets,
/// octets)` sent so far, and the answer to the receiver's last reference time (RFC 3611 §4.5:
/// a DLRR, so that it can measure the RTT).
pub(crate) fn sender_report(
    now: Instant,
    ssrc: u32,
    rtp_timestamp: u32,
    (packets, octets): (u32, u32),
    last_rrtr: Option<(u32, u32, Instant)>,
) -> Outgoing {
    let sr = SenderReportRepr {
        ssrc,
        ntp: ntp::to_ntp64(now),
        rtp_timestamp,
        packet_count: packets,
        octet_count: octets,
        blocks: Vec::new(),
    };
    let mut messages = vec![RtcpMessage::SenderReport(sr)];
    if let Some((receiver, lrr, heard)) = last_rrtr {
        let dlrr = DlrrSubBlock { ssrc: receiver, lrr, dlrr: ntp::duration_to_compact(now - heard) };
        messages.push(RtcpMessage::ExtendedReport(XrRepr {
            sender_ssrc: ssrc,
            rrtr: None,
            dlrr: vec![dlrr],
        }));
    }
    rtcp_out(emit_compound(&messages).expect("an SR and a DLRR always encode"))
}

/// The encoder target under congestion-window pushback, as libwebrtc's
/// `VideoStreamEncoder::UpdateTargetBitrate` computes it: above a 1 % ratio, shed
/// min(target × ratio, target − codec minimum), but at most half (one frame in two). libwebrtc
/// also drops that one frame in N before the encoder; here the synthetic encoder is given the
/// lower target at its full frame rate. Measured, Chromium's encoder then sends about (1 − 1/N) of
/// the lower target, so under pushback this sends more than Chromium (docs/controllers/gcc.md).
fn cwnd_pushback(target: Bitrate, ratio: f64, codec_min: Bitrate) -> Bitrate {
    if ratio <= 0.01 || target <= codec_min {
        return target;
    }
    let reduce = (target.as_bps_f64() * ratio).min((target - codec_min).as_bps_f64());
    if reduce <= 0.0 {
        return target;
    }
    let interval = ((target.as_bps_f64() / reduce) as u64).max(2);
    target - Bitrate::bps(target.as_bps() / interval)
}

/// How many sequence numbers a mask needs to cover all of `seqs` (across the 16-bit wrap): one
/// more than the largest distance from the lowest of them. 0 for none.
fn seq_span(seqs: impl Iterator<Item = u16> + Clone) -> u16 {
    seqs.clone()
        .map(|base| seqs.clone().map(|s| s.wrapping_sub(base)).max().unwrap_or(0))
        .min()
        .map_or(0, |widest| widest.saturating_add(1))
}

/// Audio's share of a wire-rate target: its payload `rate` plus a header every `interval`.
pub(crate) fn audio_wire_rate(ids: &StreamIds, rate: Bitrate, interval: Duration) -> Bitrate {
    let header = media_header(ids, true, 0, 0, false, None);
    wire_size(&header, DataSize::ZERO) / interval + rate
}

/// An RTCP compound packet to send.
pub(crate) fn rtcp_out(data: Vec<u8>) -> Outgoing {
    Outgoing {
        kind: OutKind::Rtcp,
        size: IPV4_UDP_OVERHEAD + DataSize::bytes(data.len() as u64),
        payload: DataSize::ZERO,
        data,
        seq: None,
        frame: None,
        ecn: Ecn::NotEct,
    }
}

/// The encoder rate that fills a wire rate: every controller's target counts bytes on the wire,
/// so the headers of the packets a frame needs come off before the encoder gets it, as
/// libwebrtc's `RtpVideoSender` does when the estimate includes overhead. A frame of
/// `wire / fps` bytes on the wire needs `n = ceil(frame / (max_payload + header))` packets.
/// (Without this, every controller's media overshot its target by about 5 % and SCReAM, whose
/// rate rule has no integral term, kept a standing queue at its 100 ms target.)
fn video_payload_rate(wire: Bitrate, fps: f64, max_payload: DataSize, header: DataSize) -> Bitrate {
    let frame_bytes = wire.as_bps_f64() / 8.0 / fps;
    let packets = (frame_bytes / (max_payload + header).as_bytes() as f64).ceil().max(1.0);
    wire.saturating_sub(Bitrate::from_bps_f64(packets * fps * header.as_bits() as f64))
}

/// The sending end of a call.
pub struct Sender {
    ids: StreamIds,
    start: Instant,
    stop: Instant,
    controller: AnyController,
    video: Option<Encoder>,
    packetizer: Packetizer,
    audio: Option<AudioSource>,
    audio_rate: Bitrate,
    pacer: Pacer<QueuedRtp>,
    /// Feedback from the receiver: transport-wide numbering, reports, NACK and keyframe requests.
    intake: FeedbackIntake,
    video_seq: u16,
    rtx_seq: u16,
    audio_seq: u16,
    media_packets: u32,
    media_octets: u32,
    report_interval: Duration,
    next_report: Instant,
    controller_rows: ControllerRows,
    pauses: Vec<Pause>,
    ecn: Ecn,
    /// NACK/RTX on.
    nack: bool,
    history: PacketHistory<QueuedRtp>,
    sent_video_seq: SeqUnwrapper<16>,
    /// The last video sequence number sent, which probe padding names as its original.
    last_video_seq: Option<u16>,
    limiter: RetransmissionLimiter,
    send_rates: SendRates,
    last_keyframe_request: Option<Instant>,
    /// FEC on: RED + ULPFEC, or FlexFEC.
    fec: Option<Box<SenderFec>>,
    /// Video goes in RED (RED + ULPFEC on).
    red: bool,
    flexfec_seq: u16,
    /// The next frame's VP8 picture ID (15 bits).
    picture_id: u16,
    /// The last encoded frame's resolution, for the FEC controller.
    resolution: (u16, u16),
    /// The loss fraction and RTT of the last receiver report, for the FEC controller.
    reported_loss: f64,
    reported_rtt: Duration,
    pub outbox: Vec<Outgoing>,
}

/// An interval in which a sender's media is off (RFC 8867 §5.8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pause {
    pub from: Instant,
    pub to: Instant,
    /// Audio pauses too.
    pub audio: bool,
}

/// What a sender is made of; see [`Sender::new`].
pub struct SenderParts {
    pub ids: StreamIds,
    pub start: Instant,
    pub stop: Instant,
    pub controller: AnyController,
    pub video: Option<VideoSource>,
    pub audio: Option<AudioSource>,
    pub report_interval: Duration,
    pub pauses: Vec<Pause>,
    /// The ECN field of media packets (RFC 6679).
    pub ecn: Ecn,
    /// Answer NACKs with RTX retransmissions.
    pub nack: bool,
    /// Protect video with FEC: ULPFEC in RED, or FlexFEC.
    pub fec: Option<FecScheme>,
    /// A fixed FEC rate (FEC packets per media packet, 0 to 1) instead of libwebrtc's choice.
    pub fec_rate: Option<f64>,
}

impl Sender {
    pub fn new(p: SenderParts) -> Self {
        let audio_rate = p
            .audio
            .as_ref()
            .map_or(Bitrate::ZERO, |a| audio_wire_rate(&p.ids, a.config().rate, a.config().packet_interval));
        let resolution = p.video.as_ref().map_or((0, 0), |v| v.config().camera);
        let mut s = Self {
            ids: p.ids,
            start: p.start,
            stop: p.stop,
            pacer: Pacer::new(
                PacerConfig {
                    burst_time: p.controller.pacing_burst().unwrap_or(PacerConfig::default().burst_time),
                    ..PacerConfig::default()
                },
                p.controller.pacing_rate().unwrap_or(Bitrate::ZERO),
            ),
            controller: p.controller,
            video: p.video.map(Encoder::Model),
            packetizer: Packetizer::default(),
            audio: p.audio,
            audio_rate,
            intake: FeedbackIntake::default(),
            video_seq: p.ids.video_seq0,
            rtx_seq: p.ids.rtx_seq0,
            audio_seq: p.ids.audio_seq0,
            media_packets: 0,
            media_octets: 0,
            report_interval: p.report_interval,
            next_report: p.start + p.report_interval,
            controller_rows: ControllerRows::default(),
            pauses: p.pauses,
            ecn: p.ecn,
            nack: p.nack,
            history: PacketHistory::new(),
            sent_video_seq: SeqUnwrapper::new(),
            last_video_seq: None,
            limiter: RetransmissionLimiter::default(),
            send_rates: SendRates::default(),
            last_keyframe_request: None,
            fec: p.fec.map(|scheme| {
                Box::new(SenderFec {
                    scheme,
                    controller: FecController::new(p.nack, Packetizer::default().max_payload()),
                    generator: FecGenerator::new(),
                    fixed: p
                        .fec_rate
                        .map(|r| FecParams { rate: (r * 256.0).round().min(255.0) as u8, max_frames: 1 }),
                })
            }),
            red: p.fec == Some(FecScheme::Ulpfec),
            flexfec_seq: p.ids.flexfec_seq0,
            picture_id: 0,
            resolution,
            reported_loss: 0.0,
            reported_rtt: Duration::ZERO,
            outbox: Vec::new(),
        };
        s.apply_controller(p.start, None::<&mut Ignore>);
        s
    }

    /// Replaces the video model by a real encoder outside ([`ExternalEncoder`]) with the same
    /// settings, asked for the target the controller has now. The host pushes the real encoder's
    /// frames into [`Self::external_encoder`] and applies what the sender asks of it. False for a
    /// call without video.
    pub fn use_external_encoder(&mut self, now: Instant) -> bool {
        let Some(video) = &mut self.video else { return false };
        *video = Encoder::External(ExternalEncoder::new(video.config().clone()));
        self.apply_controller(now, None::<&mut Ignore>);
        true
    }

    /// The real encoder outside, after [`Self::use_external_encoder`].
    pub fn external_encoder(&mut self) -> Option<&mut ExternalEncoder> {
        match &mut self.video {
            Some(Encoder::External(e)) => Some(e),
            _ => None,
        }
    }

    /// The controller, for a caller that sets an external controller's rate (the world then
    /// wakes the sender so it reads the new rate in its own event).
    pub fn controller_mut(&mut self) -> &mut AnyController {
        &mut self.controller
    }

    /// The earliest instant the sender wants to be woken.
    pub fn poll_timeout(&self) -> Instant {
        let mut t = self.next_report;
        if let Some(c) = self.controller.poll_timeout() {
            t = t.min(c);
        }
        // A sender held back by the congestion window waits for feedback, not for the pacer.
        if let Some(p) = self.pacer.poll_timeout().filter(|_| !self.window_full()) {
            t = t.min(p);
        }
        if let Some(v) = &self.video {
            t = t.min(v.poll_timeout().max(self.start));
        }
        if let Some(a) = &self.audio {
            t = t.min(a.poll_timeout().max(self.start));
        }
        t
    }

    pub fn on_timeout<O: CallObserver>(&mut self, now: Instant, obs: &mut O) {
        if self.controller.poll_timeout().is_some_and(|t| t <= now) {
            self.controller.on_timeout(now);
            self.apply_controller(now, Some(&mut *obs));
        }
        self.capture(now, obs);
        if now >= self.next_report {
            while self.next_report <= now {
                self.next_report += self.report_interval;
            }
            self.send_report(now);
        }
        self.drain_pacer(now);
    }

    /// Encoders produce what is due; packets go to the pacer.
    fn capture<O: CallObserver>(&mut self, now: Instant, obs: &mut O) {
        let live = now >= self.start && now < self.stop;
        let paused =
            |audio: bool| self.pauses.iter().any(|p| (p.from..p.to).contains(&now) && (p.audio || !audio));
        let (video_live, audio_live) = (live && !paused(false), live && !paused(true));
        if let Some(video) = &mut self.video {
            while video.poll_timeout() <= now {
                let Some(frame) = video.on_timeout(now) else { break };
                if !video_live {
                    continue;
                }
                let timestamp = self.ids.video_ts0.wrapping_add(rtp_clock(frame.capture, VIDEO_CLOCK_HZ));
                let plans: Vec<_> = self.packetizer.packetize(frame.size).collect();
                obs.frame_encoded(now, &frame, plans.len() as u32);
                self.resolution = (frame.width, frame.height);
                self.controller.on_media_frame(now, frame.size);
                if let Some(fec) = &mut self.fec {
                    fec.controller.on_encoded_frame(now, frame.size, frame.keyframe);
                }
                let prefix = DataSize::bytes(video_prefix_len(self.red) as u64);
                for plan in plans {
                    let marking = Some(FrameMarking {
                        start: plan.first_in_frame,
                        end: plan.last_in_frame,
                        independent: frame.keyframe,
                    });
                    let header = media_header(&self.ids, false, 0, timestamp, plan.last_in_frame, marking);
                    self.pacer.enqueue(
                        now,
                        QueuedRtp {
                            is_audio: false,
                            payload: plan.payload,
                            seq: 0,
                            timestamp,
                            marker: plan.last_in_frame,
                            marking,
                            frame: Some(frame.index),
                            wire: wire_size(&header, plan.payload) + prefix,
                            retransmission: false,
                            picture_id: self.picture_id,
                            fec: None,
                        },
                    );
                }
                self.picture_id = ((u32::from(self.picture_id) + 1) % PICTURE_ID_MODULO) as u16;
            }
        }
        if let Some(audio) = &mut self.audio {
            while audio.poll_timeout() <= now {
                let Some(f) = audio.on_timeout(now) else { break };
                if !audio_live {
                    continue;
                }
                let timestamp = self.ids.audio_ts0.wrapping_add(rtp_clock(f.capture, AUDIO_CLOCK_HZ));
                let seq = self.audio_seq;
                self.audio_seq = self.audio_seq.wrapping_add(1);
                let header = media_header(&self.ids, true, seq, timestamp, false, None);
                self.pacer.enqueue(
                    now,
                    QueuedRtp {
                        is_audio: true,
                        payload: f.size,
                        seq,
                        timestamp,
                        marker: false,
                        marking: None,
                        frame: None,
                        wire: wire_size(&header, f.size),
                        retransmission: false,
                        picture_id: 0,
                        fec: None,
                    },
                );
            }
        }
    }

    /// True when a window-based controller (SCReAM) allows no further full-size packet in flight:
    /// RFC 8298 §4.1.2.5 sends a packet only if it fits the send window. The size of the next
    /// packet is not known before the pacer releases it, so a full-size one is assumed (a smaller
    /// packet may wait for the next feedback; the window is never exceeded).
    fn window_full(&self) -> bool {
        self.controller
            .congestion_window()
            .is_some_and(|window| self.intake.adapter.in_flight() + FULL_SIZE_PACKET > window)
    }

    fn drain_pacer(&mut self, now: Instant) {
        self.controller.on_send_queue(now, self.pacer.queue_size(), self.pacer.queue_time(now));
        let red = self.red;
        while !self.window_full() {
            let Some(out) = self.pacer.poll_send(now) else { break };
            let probe = out.probe();
            let mut tail = Tail::new();
            // A video packet to protect: its descriptor and label, payload, keyframe flag.
            let mut protect = None;
            let (mut header, size, payload, kind, frame, is_audio) = match out {
                PacedOutput::Media { item, .. } if item.retransmission => {
                    let seq = self.rtx_seq;
                    self.rtx_seq = self.rtx_seq.wrapping_add(1);
                    let sent = self.sent_video_seq.peek(SeqNo::new(u64::from(item.seq))) as u64;
                    self.history.retransmitted(now, sent);
                    // The original sequence number (RFC 4588 §4), then the original payload.
                    tail.extend_from_slice(&item.seq.to_be_bytes());
                    write_video_head(&mut tail, red, &item);
                    let h = rtx_header(&self.ids, seq, &item, red);
                    (h, item.wire, item.payload, OutKind::Retransmission, item.frame, false)
                }
                PacedOutput::Media { item, .. } if item.fec.is_some() => {
                    let fec = item.fec.expect("matched");
                    let h = match fec.header {
                        // ULPFEC in RED takes the next number of the video stream.
                        FecHeader::Ulpfec(_) => {
                            let seq = self.next_video_seq();
                            tail.push(PT_ULPFEC);
                            RtpHeaderRepr {
                                payload_type: PT_RED,
                                ..media_header(&self.ids, false, seq, fec.timestamp, false, None)
                            }
                        }
                        FecHeader::Flexfec(_) => {
                            let seq = self.flexfec_seq;
                            self.flexfec_seq = self.flexfec_seq.wrapping_add(1);
                            flexfec_header(&self.ids, seq, fec.timestamp)
                        }
                    };
                    let mut header = [0; rtcbench_wire::fec::MAX_HEADER_LEN];
                    let len = fec.header.emit(&mut header).expect("protect() built it within the format");
                    tail.extend_from_slice(&header[..len]);
                    tail.extend_from_slice(&fec.body);
                    (h, item.wire, DataSize::ZERO, OutKind::Fec, None, false)
                }
                PacedOutput::Media { mut item, .. } => {
                    if !item.is_audio {
                        item.seq = self.next_video_seq();
                    }
                    let mut h = media_header(
                        &self.ids,
                        item.is_audio,
                        item.seq,
                        item.timestamp,
                        item.marker,
                        item.marking,
                    );
                    self.media_packets = self.media_packets.wrapping_add(1);
                    self.media_octets = self.media_octets.wrapping_add(item.payload.as_bytes() as u32);
                    if !item.is_audio {
                        if red {
                            h.payload_type = PT_RED;
                        }
                        write_video_head(&mut tail, red, &item);
                        let keyframe = item.marking.is_some_and(|m| m.independent);
                        protect = Some((item.payload, keyframe));
                        let seq = self.sent_video_seq.unwrap(SeqNo::new(u64::from(item.seq))) as u64;
                        self.last_video_seq = Some(item.seq);
                        if self.nack {
                            self.history.put(now, seq, item.clone());
                        }
                    }
                    let kind = if item.is_audio { OutKind::Audio } else { OutKind::Video };
                    (h, item.wire, item.payload, kind, item.frame, item.is_audio)
                }
                PacedOutput::Padding { size, .. } => {
                    let seq = self.rtx_seq;
                    self.rtx_seq = self.rtx_seq.wrapping_add(1);
                    let osn = self.last_video_seq.unwrap_or(self.ids.video_seq0.wrapping_sub(1));
                    tail.extend_from_slice(&osn.to_be_bytes());
                    let (h, wire, payload) = probe_padding(&self.ids, seq, size);
                    (h, wire, payload, OutKind::Padding, None, false)
                }
            };
            match kind {
                OutKind::Video => self.send_rates.on_sent(now, SentKind::Media, size),
                OutKind::Retransmission => self.send_rates.on_sent(now, SentKind::Retransmission, size),
                OutKind::Fec => self.send_rates.on_sent(now, SentKind::Fec, size),
                _ => {}
            }
            let sent =
                self.intake.adapter.on_sent(now, size, is_audio, probe, Some((header.ssrc, header.seq)));
            header.transport_seq = Some(TransportFeedbackAdapter::wire_seq(sent.seq));
            header.abs_send_time = Some(abs_send_time_from(now));
            let header_len = header.buffer_len();
            let mut data = Vec::with_capacity(header_len + tail.len());
            data.resize(header_len, 0);
            header.emit(&mut data).expect("buffer sized by buffer_len");
            if let Some((media, keyframe)) = protect {
                self.protect(now, &data, &tail[usize::from(red)..], &header, media, keyframe);
            }
            data.extend_from_slice(&tail);
            self.controller.on_packet_sent(now, &sent);
            self.outbox.push(Outgoing {
                kind,
                size,
                payload: if kind == OutKind::Padding { DataSize::ZERO } else { payload },
                data,
                // A retransmission is traced with the number of the packet it repairs.
                seq: Some(if kind == OutKind::Retransmission {
                    u16::from_be_bytes([tail[0], tail[1]])
                } else {
                    header.seq.value() as u16
                }),
                frame,
                ecn: self.ecn,
            });
        }
    }

    /// The next sequence number of the video stream (media and FEC share it).
    fn next_video_seq(&mut self) -> u16 {
        let seq = self.video_seq;
        self.video_seq = self.video_seq.wrapping_add(1);
        seq
    }

    /// A video packet left: FEC may now protect the set it ends (libwebrtc protects packets as
    /// they leave the pacer and queues the FEC packets behind what is waiting).
    fn protect(
        &mut self,
        now: Instant,
        header_bytes: &[u8],
        descriptor_and_label: &[u8],
        header: &RtpHeaderRepr,
        media: DataSize,
        keyframe: bool,
    ) {
        let Some(fec) = &mut self.fec else { return };
        // The packet as FEC protects it (RFC 5109 §8): the original, PT 96, not its RED form.
        let payload = media.as_bytes() + rtcbench_wire::vp8::DESCRIPTOR_LEN as u64;
        let packet = ProtectedBytes::from_rtp(header_bytes, PT_VIDEO, payload, descriptor_and_label)
            .expect("a header we wrote");
        let Some(batch) = fec.generator.add(packet, keyframe, header.marker) else { return };
        // libwebrtc's `ForwardErrorCorrection::EncodeFec` makes no FEC for a set whose sequence
        // numbers span more than one mask covers (`InsertZerosInPacketMasks` gives up). With
        // ULPFEC that happens: its packets take the video stream's numbers as they leave, and
        // while a long queue drains fast (a window-limited sender's RTP queue after the window
        // reopens) the FEC of the sets just sent leaves among the next video packets.
        let max_span = match fec.scheme {
            FecScheme::Ulpfec => rtcbench_wire::fec::ulpfec::MAX_SPAN,
            FecScheme::Flexfec => rtcbench_wire::fec::flexfec::MAX_SPAN,
        };
        if seq_span(batch.iter().flatten().map(|p| p.packet.seq.value() as u16)) > max_span {
            return;
        }
        // ULPFEC goes out with the protected stream's header (without frame marking) and the
        // timestamp of the last packet protected; FlexFEC with its own, stamped now.
        let (rtp, timestamp) = match fec.scheme {
            FecScheme::Ulpfec => {
                (media_header(&self.ids, false, 0, header.timestamp, false, None), header.timestamp)
            }
            FecScheme::Flexfec => {
                let ts = self.ids.flexfec_ts0.wrapping_add(rtp_clock(now, VIDEO_CLOCK_HZ));
                (flexfec_header(&self.ids, 0, ts), ts)
            }
        };
        for protected in batch {
            let fields: Vec<ProtectedPacket> = protected.iter().map(|p| p.packet).collect();
            let body = xor_bytes(protected.iter().map(|p| p.body.as_slice()));
            // The FEC payload is as long as the longest protected packet after its fixed header
            // (the body is its start); ULPFEC goes in RED, behind a one-byte header.
            let longest = fields.iter().map(|p| p.length.as_bytes() as usize).max().unwrap_or(0);
            let (fec_header, red): (FecHeader, usize) = match fec.scheme {
                FecScheme::Ulpfec => {
                    (UlpfecHeaderRepr::protect(&fields).expect("at most 48 consecutive packets").into(), 1)
                }
                FecScheme::Flexfec => {
                    (FlexfecHeaderRepr::protect(&fields).expect("at most 48 consecutive packets").into(), 0)
                }
            };
            let len = red + fec_header.buffer_len() + longest;
            let item = QueuedRtp {
                is_audio: false,
                payload: DataSize::ZERO,
                seq: 0,
                timestamp: header.timestamp,
                marker: false,
                marking: None,
                frame: None,
                wire: wire_size(&rtp, DataSize::bytes(len as u64)),
                retransmission: false,
                picture_id: 0,
                fec: Some(Box::new(QueuedFec { header: fec_header, body, timestamp })),
            };
            self.pacer.enqueue(now, item);
        }
    }

    /// An RTCP sender report for the video (or audio) stream.
    fn send_report(&mut self, now: Instant) {
        let ssrc = if self.video.is_some() { self.ids.video_ssrc } else { self.ids.audio_ssrc };
        let rtp_timestamp = self.ids.video_ts0.wrapping_add(rtp_clock(now, VIDEO_CLOCK_HZ));
        let counts = (self.media_packets, self.media_octets);
        self.outbox.push(sender_report(now, ssrc, rtp_timestamp, counts, self.intake.last_rrtr));
    }

    /// Feedback (RTCP bytes, `size` on the wire) arrived.
    pub fn on_rtcp<O: CallObserver>(&mut self, now: Instant, pkt: Incoming<'_>, obs: &mut O) {
        // Malformed RTCP is counted and dropped, never a panic (STYLE.md §7); ours is well formed.
        let Ok(messages) = parse_compound(pkt.data) else { return };
        // A controller row is due only after the controller heard something: a compound with
        // nothing but a NACK or PLI leaves its state as it was.
        let mut heard = false;
        for m in messages {
            match self.intake.on_message(now, m, pkt.size, &self.ids, obs) {
                Heard::Feedback(report) => {
                    self.controller.on_feedback(now, &report);
                    heard = true;
                }
                Heard::ReceiverReport(report) => {
                    if let Some(rtt) = report.rtt {
                        // libwebrtc gives the history the RTCP RTT plus 5 ms.
                        self.history.set_rtt(rtt + RTT_MARGIN);
                        self.reported_rtt = rtt;
                    }
                    self.reported_loss = report.loss.map_or(0.0, |l| l.fraction_lost);
                    self.controller.on_feedback(now, &report);
                    heard = true;
                }
                Heard::Nack(lost) => self.on_nack(now, &lost),
                Heard::KeyframeRequest => self.on_keyframe_request(now),
                Heard::Nothing => {}
            }
        }
        self.apply_controller(now, heard.then_some(obs));
        self.drain_pacer(now);
    }

    /// Retransmits what a NACK asks for (libwebrtc `RTPSender::OnReceivedNack`): each packet
    /// still in the history, not already queued and not resent within the last RTT, while the
    /// retransmission budget allows; the first refusal by the budget ends the NACK.
    fn on_nack(&mut self, now: Instant, lost: &[u16]) {
        if !self.nack {
            return;
        }
        for &seq in lost {
            let Some(seq) = self.history.unwrap(seq) else { continue };
            let Some(mut item) = self.history.take_for_retransmission(now, seq) else { continue };
            let red = self.red;
            let header = rtx_header(&self.ids, 0, &item, red);
            let head = OSN_LEN + video_prefix_len(red);
            item.wire = wire_size(&header, item.payload) + DataSize::bytes(head as u64);
            if !self.limiter.try_use(now, item.wire) {
                self.history.cancel_retransmission(seq);
                break;
            }
            item.retransmission = true;
            self.pacer.enqueue(now, item);
        }
    }

    /// A PLI or a new FIR: the next frame is a keyframe, unless one was requested less than
    /// [`MIN_KEYFRAME_INTERVAL`] ago (libwebrtc `EncoderRtcpFeedback`).
    fn on_keyframe_request(&mut self, now: Instant) {
        let Some(video) = &mut self.video else { return };
        if self.last_keyframe_request.is_some_and(|t| now - t < MIN_KEYFRAME_INTERVAL) {
            return;
        }
        self.last_keyframe_request = Some(now);
        video.request_keyframe();
    }

    /// The receiver-side estimator's state, for the trace (set by the world after the receiver
    /// ran).
    pub fn set_remote_metrics(&mut self, m: Option<ControllerMetrics>) {
        self.controller_rows.remote = m;
    }

    /// The receiver's learned policy took a decision (its metrics set by
    /// [`Sender::set_remote_metrics`]): a controller row now, however soon after the last, so
    /// that the trace holds every decision beside the sender's target at that instant.
    pub fn record_remote_decision<O: CallObserver>(&mut self, now: Instant, obs: &mut O) {
        let target = self.controller.target_rate();
        self.controller_rows.write(now, &self.controller, target, obs);
    }

    /// Reads the controller's decisions: encoder target, pacing rate, probes.
    fn apply_controller<O: CallObserver>(&mut self, now: Instant, obs: Option<&mut O>) {
        let target = self.controller.target_rate();
        if let Some(video) = &mut self.video {
            // Audio is CBR and takes its share first, as libwebrtc's bitrate allocator does.
            let allocation = target.saturating_sub(self.audio_rate);
            let ratio = self.controller.encoder_pushback_ratio();
            let wire = cwnd_pushback(allocation, ratio, video.config().min_rate);
            let header = wire_size(
                &media_header(&self.ids, false, 0, 0, false, Some(FrameMarking::default())),
                DataSize::bytes(video_prefix_len(self.red) as u64),
            );
            let payload = video_payload_rate(wire, video.config().fps, self.packetizer.max_payload(), header);
            if let Some(fec) = &mut self.fec {
                let inputs = FecInputs {
                    rate: payload,
                    fps: video.config().fps,
                    loss: self.reported_loss,
                    rtt: self.reported_rtt,
                    width: u32::from(self.resolution.0),
                    height: u32::from(self.resolution.1),
                };
                let protection = match fec.fixed {
                    Some(p) => Protection { delta: p, key: p },
                    None => fec.controller.update(now, &inputs),
                };
                fec.generator.set_protection(protection);
            }
            // Retransmissions (and FEC) sent over the last second come off the encoder's share,
            // as libwebrtc's FecControllerDefault::UpdateFecRates does.
            let protection = self.send_rates.protection_overhead(now);
            video.set_target(now, payload * (1.0 - protection));
        }
        follow_controller(&mut self.controller, &mut self.pacer, &mut self.limiter, target);
        if let Some(obs) = obs {
            self.controller_rows.record(now, &self.controller, target, obs);
        }
    }
}

/// What a sender takes from its controller besides the encoder's rate (a call's sender and an
/// SFU's downlink alike): the pacing rate (2.5 × the target unless the controller sets one, as
/// libwebrtc's pacing factor), the retransmission budget, and the probes it asks for.
pub(crate) fn follow_controller<T: Paced>(
    controller: &mut AnyController,
    pacer: &mut Pacer<T>,
    limiter: &mut RetransmissionLimiter,
    target: Bitrate,
) {
    pacer.set_pacing_rate(controller.pacing_rate().unwrap_or(target * 2.5));
    limiter.set_max_rate(target);
    while let Some(p) = controller.poll_probe() {
        pacer.start_probe(p);
    }
}

/// A sender's controller rows in the trace: at most one per `CONTROLLER_ROW_MIN_GAP`, and one
/// whenever the target changes, with the receiver-side estimator's state as last known.
#[derive(Debug, Default)]
pub(crate) struct ControllerRows {
    last: Option<(Instant, Bitrate)>,
    /// State of the receiver-side estimator (gcc-draft's REMB chain), traced with the sender's.
    pub(crate) remote: Option<ControllerMetrics>,
}

impl ControllerRows {
    pub(crate) fn record<O: CallObserver>(
        &mut self,
        now: Instant,
        controller: &AnyController,
        target: Bitrate,
        obs: &mut O,
    ) {
        if self.last.is_none_or(|(t, last)| now - t >= CONTROLLER_ROW_MIN_GAP || last != target) {
            self.write(now, controller, target, obs);
        }
    }

    /// A row now, whatever the gap since the last.
    pub(crate) fn write<O: CallObserver>(
        &mut self,
        now: Instant,
        controller: &AnyController,
        target: Bitrate,
        obs: &mut O,
    ) {
        self.last = Some((now, target));
        obs.controller(now, target, controller.pacing_rate(), &controller.metrics(), self.remote.as_ref());
    }
}

/// A REMB of `bitrate` from the receiver of `ids`, for its video and audio streams.
fn remb(ids: &StreamIds, bitrate: Bitrate) -> Vec<u8> {
    let repr =
        RembRepr { sender_ssrc: ids.receiver_ssrc, bitrate, ssrcs: vec![ids.video_ssrc, ids.audio_ssrc] };
    repr.to_bytes().expect("our own feedback always encodes")
}

/// The receiver's feedback generator for the chosen mode.
#[derive(Debug)]
enum FeedbackGen {
    Twcc(TwccReceiver),
    Ccfb(CcfbReceiver),
    Remb(Box<RembEstimator>),
    Learned(Box<LearnedEstimator>),
}

impl FeedbackGen {
    fn new(mode: FeedbackMode, ids: &StreamIds, now: Instant) -> Self {
        match mode {
            FeedbackMode::Twcc { interval } => {
                Self::Twcc(TwccReceiver::new(ids.receiver_ssrc, ids.video_ssrc, interval, now))
            }
            FeedbackMode::Ccfb { interval } => {
                Self::Ccfb(CcfbReceiver::new(ids.receiver_ssrc, interval, now))
            }
            FeedbackMode::Remb { config, start_rate } => {
                Self::Remb(Box::new(RembEstimator::new(*config, start_rate, now)))
            }
            FeedbackMode::Learned(policy) => Self::Learned(Box::new(LearnedEstimator::new(&policy, now))),
        }
    }

    /// An RTP packet arrived (`payload`: what follows its header).
    fn on_rtp(
        &mut self,
        now: Instant,
        h: &RtpHeaderRepr,
        payload: &[u8],
        size: DataSize,
        ecn: Ecn,
        ids: &StreamIds,
    ) {
        match self {
            Self::Twcc(g) => {
                if let Some(seq) = h.transport_seq {
                    g.on_packet(now, seq);
                }
            }
            // RFC 8888 §3.1: the ECN field of the packet as it arrived (CE if a queue marked it).
            Self::Ccfb(g) => g.on_packet(now, h.ssrc, h.seq, ecn.bits()),
            Self::Remb(g) => {
                if let Some(abs) = h.abs_send_time {
                    g.on_packet(now, abs, size);
                }
            }
            Self::Learned(g) => {
                if let Some(abs) = h.abs_send_time {
                    let (class, seq) = crate::learned::classify(ids, h, payload);
                    g.on_packet(now, abs, size, seq, class);
                }
            }
        }
    }

    fn poll_timeout(&self) -> Instant {
        match self {
            Self::Twcc(g) => g.poll_timeout(),
            Self::Ccfb(g) => g.poll_timeout(),
            Self::Remb(g) => g.poll_timeout().unwrap_or(Instant::FAR_FUTURE),
            Self::Learned(g) => g.poll_timeout().unwrap_or(Instant::FAR_FUTURE),
        }
    }

    /// RTCP packets due at `now` (for REMB: whenever the estimator decides to send one).
    fn poll_transmit(&mut self, now: Instant, ids: &StreamIds) -> Vec<Vec<u8>> {
        let encodes = "our own feedback always encodes";
        match self {
            Self::Twcc(g) => g.on_timeout(now).expect(encodes),
            Self::Ccfb(g) => g.on_timeout(now).expect(encodes).into_iter().collect(),
            Self::Remb(g) => {
                if g.poll_timeout().is_some_and(|t| t <= now) {
                    g.on_timeout(now);
                }
                g.poll_remb(now).map(|bitrate| remb(ids, bitrate)).into_iter().collect()
            }
            Self::Learned(g) => {
                g.on_timeout(now);
                g.poll_remb().map(|bitrate| remb(ids, bitrate)).into_iter().collect()
            }
        }
    }

    fn estimator_metrics(&self) -> Option<ControllerMetrics> {
        match self {
            Self::Remb(g) => Some(g.metrics()),
            Self::Learned(g) => Some(g.metrics()),
            _ => None,
        }
    }

    /// Whether the receiver needs its own RTT (GCC-02 §5.5's response_time, at the receiver),
    /// and so sends receiver reference times (RFC 3611 §4.4).
    fn needs_rtt(&self) -> bool {
        matches!(self, Self::Remb(_))
    }

    fn set_rtt(&mut self, rtt: Duration) {
        if let Self::Remb(g) = self {
            g.set_rtt(rtt);
        }
    }
}

/// The receiving end of a call.
pub struct Receiver {
    ids: StreamIds,
    feedback: FeedbackGen,
    stats: BTreeMap<u32, (ReceiverStats, u32)>,
    video_seq: SeqUnwrapper<16>,
    /// The newest video sequence number received (unwrapped).
    newest_video: Option<u64>,
    video: VideoReceiver,
    /// Send RFC 3611 receiver reference times, for an RTT at the receiver (GCC-02's REMB
    /// estimator and the NACK timing need one).
    needs_rtt: bool,
    /// (RTP timestamp, frame index) of frames not yet rendered, in frame order (a frame whose
    /// packets were all lost is first heard of from a retransmission, after later frames), from
    /// the frame labels of video payloads (used only to label trace rows).
    frame_of_ts: std::collections::VecDeque<(u32, u64)>,
    picture_ids: SeqUnwrapper<15>,
    /// FEC recovery of the video stream (ULPFEC or FlexFEC), if the call sends FEC.
    fec: Option<Box<FecDecoder>>,
    keyframe_request: KeyframeRequest,
    /// The command sequence number of the last FIR sent (RFC 5104 §4.3.1.1).
    fir_seq: u8,
    last_sr: Option<(u32, Instant)>,
    report_interval: Duration,
    next_report: Instant,
    pub outbox: Vec<Outgoing>,
}

impl Receiver {
    /// A receiver sending `feedback`, NACKs if `nack`, rebuilding lost video packets if the
    /// sender sends FEC (`fec`), and asking for keyframes with `keyframe_request`.
    pub fn new(
        ids: StreamIds,
        start: Instant,
        feedback: FeedbackMode,
        report_interval: Duration,
        nack: bool,
        fec: bool,
        keyframe_request: KeyframeRequest,
    ) -> Self {
        let feedback = FeedbackGen::new(feedback, &ids, start);
        Self {
            ids,
            needs_rtt: nack || feedback.needs_rtt(),
            feedback,
            stats: BTreeMap::new(),
            video_seq: SeqUnwrapper::new(),
            newest_video: None,
            video: VideoReceiver::new(nack),
            frame_of_ts: Default::default(),
            picture_ids: SeqUnwrapper::new(),
            fec: fec.then(Box::default),
            keyframe_request,
            fir_seq: 0,
            last_sr: None,
            report_interval,
            next_report: start + report_interval,
            outbox: Vec::new(),
        }
    }

    pub fn poll_timeout(&self) -> Instant {
        self.feedback.poll_timeout().min(self.next_report).min(self.video.poll_timeout())
    }

    pub fn on_timeout<O: CallObserver>(&mut self, now: Instant, obs: &mut O) {
        if now >= self.video.poll_timeout() {
            self.video.on_timeout(now);
            self.video_events(obs);
        }
        if now >= self.feedback.poll_timeout() {
            for data in self.feedback.poll_transmit(now, &self.ids) {
                self.send_rtcp(data);
            }
        }
        if now >= self.next_report {
            while self.next_report <= now {
                self.next_report += self.report_interval;
            }
            let blocks = self.stats.values_mut().map(|(s, _)| s.report_block(now, self.last_sr)).collect();
            let rr = ReceiverReportRepr { ssrc: self.ids.receiver_ssrc, blocks };
            let mut messages = vec![RtcpMessage::ReceiverReport(rr)];
            if self.needs_rtt {
                let rrtr = XrRepr {
                    sender_ssrc: self.ids.receiver_ssrc,
                    rrtr: Some(ntp::to_ntp64(now)),
                    dlrr: vec![],
                };
                messages.push(RtcpMessage::ExtendedReport(rrtr));
            }
            self.send_rtcp(emit_compound(&messages).expect("at most a few blocks and an RRTR"));
        }
    }

    /// The receiver-side estimator's state (gcc-draft receive-side, a learned policy), if there
    /// is one.
    pub fn estimator_metrics(&self) -> Option<ControllerMetrics> {
        self.feedback.estimator_metrics()
    }

    /// The learned policy's estimator, if the receiver runs one (its next decision and the
    /// observation it will see, for a driver that decides from outside).
    pub fn learned_estimator(&self) -> Option<&LearnedEstimator> {
        match &self.feedback {
            FeedbackGen::Learned(g) => Some(g),
            _ => None,
        }
    }

    /// Whether a learned policy decided since the last call.
    pub fn take_decision(&mut self) -> bool {
        match &mut self.feedback {
            FeedbackGen::Learned(g) => g.take_decided(),
            _ => false,
        }
    }

    fn send_rtcp(&mut self, data: Vec<u8>) {
        self.outbox.push(rtcp_out(data));
    }

    /// A packet from the sender arrived (RTP or an SR).
    pub fn on_packet<O: CallObserver>(&mut self, now: Instant, pkt: Incoming<'_>, obs: &mut O) {
        if pkt.rtcp {
            if let Ok(messages) = parse_compound(pkt.data) {
                for m in messages {
                    match m {
                        RtcpMessage::SenderReport(sr) => self.last_sr = Some((ntp::compact(sr.ntp), now)),
                        // RFC 3611 §4.5: RTT = A − LRR − DLRR, as from an RR's LSR and DLSR.
                        RtcpMessage::ExtendedReport(xr) => {
                            let ours = xr.dlrr.iter().find(|b| b.ssrc == self.ids.receiver_ssrc);
                            if let Some(rtt) = ours.and_then(|b| ntp::rtt_from_report(now, b.lrr, b.dlrr)) {
                                self.feedback.set_rtt(rtt);
                                self.video.set_rtt(rtt);
                            }
                        }
                        _ => {}
                    }
                }
            }
            return;
        }
        let Ok((h, header_len)) = RtpHeaderRepr::parse(pkt.data) else { return };
        self.feedback.on_rtp(now, &h, &pkt.data[header_len..], pkt.size, pkt.ecn, &self.ids);
        if matches!(self.feedback, FeedbackGen::Remb(_) | FeedbackGen::Learned(_)) {
            // A REMB goes out at once when the estimate drops (GCC-02 §3), or when a learned
            // policy decided before this packet.
            for data in self.feedback.poll_transmit(now, &self.ids) {
                self.send_rtcp(data);
            }
        }
        let clock = if h.payload_type == PT_AUDIO { AUDIO_CLOCK_HZ } else { VIDEO_CLOCK_HZ };
        let (stats, _) = self.stats.entry(h.ssrc).or_insert_with(|| (ReceiverStats::new(h.ssrc), clock));
        stats.on_packet(h.seq, h.timestamp, now, clock);
        let after_header = &pkt.data[header_len..];
        // Bytes on the wire that are not media: IP/UDP, RTP header, OSN, RED header, descriptor.
        let mut headers = IPV4_UDP_OVERHEAD + DataSize::bytes(header_len as u64);
        let (seq, at) = if h.ssrc == self.ids.video_ssrc {
            // A packet older than the first one received has no place in the stream (a reordered
            // start, or garbage): unwrapped it would be negative.
            let Ok(seq) = u64::try_from(self.video_seq.unwrap(h.seq)) else { return };
            self.newest_video = Some(self.newest_video.map_or(seq, |n| n.max(seq)));
            match h.payload_type {
                PT_VIDEO => (seq, 0),
                PT_RED => match RedHeaderRepr::parse(after_header) {
                    Ok(red) if red.blocks.is_empty() && red.primary_pt == PT_VIDEO => (seq, red.buffer_len()),
                    Ok(red) if red.blocks.is_empty() && red.primary_pt == PT_ULPFEC => {
                        self.on_fec(now, seq, &after_header[red.buffer_len()..], obs);
                        return;
                    }
                    _ => return,
                },
                _ => return,
            }
        } else if h.ssrc == self.ids.rtx_ssrc && h.frame_marking.is_some() {
            // RFC 4588 §4: the original sequence number starts the payload. A retransmission
            // carries its original's frame marking (probe padding carries none), and repairs a
            // packet older than the newest seen; anything else on the RTX stream is not media.
            let red = match h.payload_type {
                PT_RTX => 0,
                PT_RTX_RED => PRIMARY_HEADER_LEN,
                _ => return,
            };
            let Ok(osn) = rtx_osn(after_header) else { return };
            let seq = self.video_seq.peek(SeqNo::new(u64::from(osn)));
            match self.newest_video {
                Some(newest) if seq >= 0 && seq as u64 <= newest => (seq as u64, OSN_LEN + red),
                _ => return,
            }
        } else if h.ssrc == self.ids.flexfec_ssrc && h.payload_type == PT_FLEXFEC {
            self.on_flexfec(now, &h, after_header, obs);
            return;
        } else {
            return;
        };
        let Some(rest) = after_header.get(at..) else { return };
        let Ok((descriptor, descriptor_len)) = Vp8DescriptorRepr::parse(rest) else { return };
        headers += DataSize::bytes((at + descriptor_len) as u64);
        let payload = pkt.size.saturating_sub(headers);
        let label = &rest[descriptor_len..];
        if let Some(fec) = &mut self.fec {
            // The original packet, as FEC protects it (PT 96, not RED): a retransmission restores
            // it, with the RTX packet's header extension as libwebrtc's RTX receiver leaves it
            // (libwebrtc hands repaired packets to its FEC receiver too).
            let protected = descriptor_len as u64 + payload.as_bytes();
            let Ok(mut original) =
                ProtectedBytes::from_rtp(&pkt.data[..header_len], PT_VIDEO, protected, rest)
            else {
                return;
            };
            original.packet.seq = SeqNo::new(seq % (1 << 16));
            let recovered = fec.on_media(original);
            self.deliver(now, seq, &h, descriptor, label, payload, false);
            self.deliver_recovered(now, recovered, obs);
            self.video_events(obs);
            return;
        }
        self.deliver(now, seq, &h, descriptor, label, payload, false);
        self.video_events(obs);
    }

    /// An ULPFEC packet (`fec`: its payload after the RED header) arrived as video packet `seq`.
    fn on_fec<O: CallObserver>(&mut self, now: Instant, seq: u64, fec: &[u8], obs: &mut O) {
        self.video.on_non_media(now, seq);
        if let (Some(decoder), Ok((header, len))) = (&mut self.fec, UlpfecHeaderRepr::parse(fec)) {
            let recovered = decoder.on_fec(header, fec[len..].to_vec());
            self.deliver_recovered(now, recovered, obs);
        }
        self.video_events(obs);
    }

    /// A FlexFEC repair packet (`payload`: its RTP payload) arrived on the FlexFEC stream. It
    /// protects the video stream if its CSRC names it (RFC 8627 §4.1); its sequence numbers are
    /// its own, so the video stream has no gap for it.
    fn on_flexfec<O: CallObserver>(&mut self, now: Instant, h: &RtpHeaderRepr, payload: &[u8], obs: &mut O) {
        if h.csrc != Some(self.ids.video_ssrc) {
            return;
        }
        if let (Some(decoder), Ok((header, len))) = (&mut self.fec, FlexfecHeaderRepr::parse(payload)) {
            let recovered = decoder.on_fec(header, payload[len..].to_vec());
            self.deliver_recovered(now, recovered, obs);
            self.video_events(obs);
        }
    }

    /// Video packets rebuilt by FEC: their RTP header is put back together from the recovered
    /// fields and bytes, and they go on as if they had arrived.
    fn deliver_recovered<O: CallObserver>(
        &mut self,
        now: Instant,
        recovered: Vec<ProtectedBytes>,
        obs: &mut O,
    ) {
        for p in recovered {
            let bytes = p.rtp_bytes(self.ids.video_ssrc);
            let Ok((h, header_len)) = RtpHeaderRepr::parse(&bytes) else { continue };
            let Some(rest) = bytes.get(header_len..) else { continue };
            let Ok((descriptor, descriptor_len)) = Vp8DescriptorRepr::parse(rest) else { continue };
            // The recovered length counts every byte after the fixed header.
            let overhead = (header_len + descriptor_len - rtcbench_wire::rtp::FIXED_HEADER_LEN) as u64;
            let payload = p.packet.length.saturating_sub(DataSize::bytes(overhead));
            let seq = self.video_seq.peek(h.seq);
            if seq < 0 {
                continue;
            }
            obs.packet_recovered(now, h.seq.value() as u16);
            let label = rest[descriptor_len..].to_vec();
            self.deliver(now, seq as u64, &h, descriptor, &label, payload, true);
        }
    }

    /// A video packet (arrived, retransmitted or `recovered`) goes to the receive side.
    #[allow(clippy::too_many_arguments)]
    fn deliver(
        &mut self,
        now: Instant,
        seq: u64,
        h: &RtpHeaderRepr,
        descriptor: Vp8DescriptorRepr,
        label: &[u8],
        payload: DataSize,
        recovered: bool,
    ) {
        if let Ok(label) = <[u8; FRAME_LABEL_LEN]>::try_from(label.get(..FRAME_LABEL_LEN).unwrap_or_default())
        {
            let frame = u64::from(u32::from_be_bytes(label));
            if let Err(k) = self.frame_of_ts.binary_search_by_key(&frame, |&(_, f)| f) {
                self.frame_of_ts.insert(k, (h.timestamp, frame));
            }
        }
        let marking = h.frame_marking.unwrap_or_default();
        let picture_id =
            descriptor.picture_id.map(|id| self.picture_ids.unwrap(SeqNo::new(u64::from(id))).max(0) as u64);
        let packet = VideoPacket {
            seq,
            rtp_timestamp: h.timestamp,
            start: marking.start,
            end: marking.end,
            keyframe: marking.independent,
            payload,
            nacked: false,
            picture_id,
        };
        self.video.on_packet(now, packet, recovered);
    }

    /// Acts on what the video receive side decided: trace rows, NACKs and PLIs.
    fn video_events<O: CallObserver>(&mut self, obs: &mut O) {
        while let Some(event) = self.video.poll_event() {
            match event {
                VideoEvent::Completed(done) => {
                    if let Some(&(_, frame)) =
                        self.frame_of_ts.iter().find(|&&(ts, _)| ts == done.rtp_timestamp)
                    {
                        obs.frame_completed(frame, done.first_arrival, done.completed_at);
                    }
                }
                VideoEvent::Rendered { frame: done, decoded, at, freeze } => {
                    if let Some(k) = self.frame_of_ts.iter().position(|&(ts, _)| ts == done.rtp_timestamp) {
                        let (_, frame) = self.frame_of_ts[k];
                        obs.frame_rendered(frame, decoded, at, freeze);
                        // Frames before this one can no longer be rendered.
                        self.frame_of_ts.drain(..=k);
                    }
                }
                VideoEvent::Nack(seqs) => {
                    let nack = NackRepr {
                        sender_ssrc: self.ids.receiver_ssrc,
                        media_ssrc: self.ids.video_ssrc,
                        lost: seqs.iter().map(|&s| s as u16).collect(),
                    };
                    self.send_rtcp(nack.to_bytes().expect("a NACK of our own always encodes"));
                }
                VideoEvent::KeyframeRequest => {
                    let sender_ssrc = self.ids.receiver_ssrc;
                    let data = match self.keyframe_request {
                        KeyframeRequest::Pli => {
                            PliRepr { sender_ssrc, media_ssrc: self.ids.video_ssrc }.to_bytes()
                        }
                        KeyframeRequest::Fir => {
                            // Each new request takes the next number (libwebrtc's
                            // RTCPSender::BuildFIR increments before it sends).
                            self.fir_seq = self.fir_seq.wrapping_add(1);
                            FirRepr { sender_ssrc, entries: vec![(self.ids.video_ssrc, self.fir_seq)] }
                                .to_bytes()
                        }
                    };
                    self.send_rtcp(data.expect("a keyframe request of our own always encodes"));
                }
            }
        }
    }

    /// Counters of the video receive side.
    pub fn video_stats(&self) -> rtcbench_media::PlayoutStats {
        self.video.stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{CallPlan, VideoPlan};
    use rtcbench_cc::factory;
    use rtcbench_cc::ControllerKind;

    /// Records what the receiver reports.
    #[derive(Default)]
    struct Seen {
        recovered: Vec<u16>,
        rendered: Vec<u64>,
    }

    impl CallObserver for Seen {
        fn packet_recovered(&mut self, _at: Instant, seq: u16) {
            self.recovered.push(seq);
        }
        fn frame_rendered(&mut self, frame: u64, _decoded: Instant, _at: Instant, _freeze: bool) {
            self.rendered.push(frame);
        }
    }

    fn plan(fec: Option<FecScheme>) -> CallPlan {
        let ids = StreamIds {
            video_ssrc: 0x1111,
            rtx_ssrc: 0x2222,
            audio_ssrc: 0x3333,
            receiver_ssrc: 0x4444,
            video_seq0: 65_500,
            rtx_seq0: 100,
            audio_seq0: 200,
            video_ts0: 7,
            audio_ts0: 9,
            flexfec_ssrc: 0x5555,
            flexfec_seq0: 65_530,
            flexfec_ts0: 11,
        };
        CallPlan {
            call: 0,
            start: Duration::ZERO,
            stop: Duration::from_secs(20),
            ids,
            video: Some(VideoPlan {
                fps: 30.0,
                min_rate: Bitrate::kbps(1000),
                max_rate: Bitrate::kbps(1000),
                start_rate: Bitrate::kbps(1000),
                camera: (640, 480),
                seed: 3,
            }),
            audio: None,
            report_interval: Duration::from_millis(500),
            pauses: vec![],
            ecn: 0,
            min_rate: Bitrate::kbps(1000),
            max_rate: Bitrate::kbps(1000),
            start_rate: Bitrate::kbps(1000),
            uncapped: false,
            priority: 1.0,
            controller_seed: 1,
            gcc_draft_send_side: false,
            scream_competing_flows_compensation: None,
            twcc_interval: None,
            ccfb_interval: None,
            nack: true,
            fec,
            fec_rate: None,
            keyframe_request: KeyframeRequest::Pli,
            jitter_buffer: None,
        }
    }

    /// A video-flow packet as sent: its kind and RTP header.
    type Sent = (OutKind, RtpHeaderRepr);

    /// Runs a call for `secs` over a 25 ms path each way that drops the media packets `drop`
    /// picks; returns the receiver's observer and the video-flow packets sent.
    fn run(fec: Option<FecScheme>, secs: i64, mut drop: impl FnMut(&Outgoing) -> bool) -> (Seen, Vec<Sent>) {
        let plan = plan(fec);
        let controller =
            factory::build(ControllerKind::Fixed, &plan.options(), 1.0, plan.limits(), Instant::ZERO);
        let mut sender = plan.sender(controller);
        let mut receiver = plan.receiver(FeedbackMode::Twcc { interval: Duration::from_millis(50) });
        let (mut seen, mut ignore) = (Seen::default(), Ignore);
        let mut forward: Vec<(Instant, Outgoing)> = Vec::new();
        let mut backward: Vec<(Instant, Outgoing)> = Vec::new();
        let mut sent = Vec::new();
        let delay = Duration::from_millis(25);
        let end = Instant::ZERO + Duration::from_secs(secs);
        let mut now = Instant::ZERO;
        while now < end {
            let next_arrival = forward.iter().chain(&backward).map(|(t, _)| *t).min().unwrap_or(end);
            now = sender.poll_timeout().min(receiver.poll_timeout()).min(next_arrival).min(end);
            if sender.poll_timeout() <= now {
                sender.on_timeout(now, &mut ignore);
            }
            if receiver.poll_timeout() <= now {
                receiver.on_timeout(now, &mut seen);
            }
            for (_, out) in extract_due(&mut forward, now) {
                let incoming = Incoming {
                    data: &out.data,
                    size: out.size,
                    ecn: out.ecn,
                    rtcp: out.kind == OutKind::Rtcp,
                };
                receiver.on_packet(now, incoming, &mut seen);
            }
            for (_, out) in extract_due(&mut backward, now) {
                let incoming = Incoming { data: &out.data, size: out.size, ecn: out.ecn, rtcp: true };
                sender.on_rtcp(now, incoming, &mut ignore);
            }
            for out in sender.outbox.drain(..) {
                if matches!(out.kind, OutKind::Video | OutKind::Fec | OutKind::Retransmission) {
                    sent.push((out.kind, RtpHeaderRepr::parse(&out.data).unwrap().0));
                }
                if !drop(&out) {
                    forward.push((now + delay, out));
                }
            }
            for out in receiver.outbox.drain(..) {
                backward.push((now + delay, out));
            }
        }
        (seen, sent)
    }

    fn extract_due(queue: &mut Vec<(Instant, Outgoing)>, now: Instant) -> Vec<(Instant, Outgoing)> {
        let (due, later) = std::mem::take(queue).into_iter().partition(|(t, _)| *t <= now);
        *queue = later;
        due
    }

    /// One video packet in twenty is lost after the first 270. Retransmissions repair the
    /// losses until the sender, told of them, sends FEC; from then on they are lost too.
    fn drop_every_20th_then_repair_only_by_fec() -> impl FnMut(&Outgoing) -> bool {
        let (mut video, mut fec_started) = (0, false);
        move |out: &Outgoing| match out.kind {
            OutKind::Video => {
                video += 1;
                video > 270 && video % 20 == 0
            }
            OutKind::Fec => {
                fec_started = true;
                false
            }
            OutKind::Retransmission => fec_started,
            _ => false,
        }
    }

    /// Sequence numbers that follow each other with no gap and no repeat (across the wrap).
    fn consecutive<'a>(headers: impl Iterator<Item = &'a RtpHeaderRepr>) -> bool {
        let numbers: Vec<u64> = headers.map(|h| h.seq.value()).collect();
        numbers.windows(2).all(|w| w[1] == (w[0] + 1) % 65_536)
    }

    /// Every frame is rendered, in order: a rebuilt packet completed its frame although the lost
    /// packets were never retransmitted.
    fn assert_every_frame_rendered(seen: &Seen) {
        let frames = seen.rendered.len() as u64;
        assert!(frames > 270, "{frames} frames");
        assert_eq!(seen.rendered, (0..frames).collect::<Vec<_>>());
    }

    #[test]
    fn fec_rebuilds_a_lost_packet_with_its_frame_marking_and_label() {
        let (seen, sent) = run(Some(FecScheme::Ulpfec), 10, drop_every_20th_then_repair_only_by_fec());
        let fec = sent.iter().filter(|(k, _)| *k == OutKind::Fec).count();
        assert!(fec > 20, "{fec} FEC packets");
        // Video and FEC packets share one sequence, with no gap and no repeat (it wraps).
        assert!(consecutive(sent.iter().filter(|(k, _)| *k != OutKind::Retransmission).map(|(_, h)| h)));
        assert!(sent.iter().all(|(k, h)| *k == OutKind::Retransmission || h.payload_type == PT_RED));
        assert!(!seen.recovered.is_empty());
        assert_every_frame_rendered(&seen);
    }

    #[test]
    fn flexfec_rebuilds_the_same_losses_from_its_own_stream() {
        let (seen, sent) = run(Some(FecScheme::Flexfec), 10, drop_every_20th_then_repair_only_by_fec());
        let repair: Vec<&RtpHeaderRepr> =
            sent.iter().filter(|(k, _)| *k == OutKind::Fec).map(|(_, h)| h).collect();
        assert!(repair.len() > 20, "{} FlexFEC packets", repair.len());
        // RFC 8627 §4.1: its own SSRC and numbers (they wrap), the video SSRC as the CSRC.
        assert!(repair.iter().all(|h| h.payload_type == PT_FLEXFEC
            && h.ssrc == 0x5555
            && h.csrc == Some(0x1111)
            && !h.marker
            && h.frame_marking.is_none()));
        assert!(consecutive(repair.iter().copied()));
        assert_eq!(repair[0].seq.value(), 65_530);
        // Video is plain VP8 (no RED) and its numbers have no gaps for FEC.
        let video: Vec<&RtpHeaderRepr> =
            sent.iter().filter(|(k, _)| *k == OutKind::Video).map(|(_, h)| h).collect();
        assert!(video.iter().all(|h| h.payload_type == PT_VIDEO && h.csrc.is_none()));
        assert!(consecutive(video.iter().copied()));
        assert!(!seen.recovered.is_empty());
        assert_every_frame_rendered(&seen);
    }

    #[test]
    fn a_video_packet_older_than_the_first_one_received_is_ignored() {
        // A network that reorders the call's first packets (or sends garbage) can deliver a
        // sequence number from before the first one: it has no place in the stream.
        let ids = plan(None).ids;
        let feedback = FeedbackMode::Twcc { interval: Duration::from_millis(50) };
        let mut rx = Receiver::new(
            ids,
            Instant::ZERO,
            feedback,
            Duration::from_secs(1),
            true,
            true,
            KeyframeRequest::Pli,
        );
        let mut seen = Seen::default();
        for (k, seq) in [0u16, 65_535, 1].into_iter().enumerate() {
            // 65535 is not the end of its frame: the assembler would walk past the top of the
            // sequence numbers looking for it.
            let end = seq != 65_535;
            let h = RtpHeaderRepr {
                payload_type: PT_VIDEO,
                marker: end,
                seq: SeqNo::new(u64::from(seq)),
                timestamp: 3000 * u32::from(seq),
                ssrc: ids.video_ssrc,
                csrc: None,
                abs_send_time: Some(0),
                transport_seq: Some(SeqNo::new(k as u64)),
                frame_marking: Some(FrameMarking { start: true, end, independent: true }),
                padding_len: 0,
            };
            let mut data = vec![0; h.buffer_len()];
            h.emit(&mut data).unwrap();
            data.extend_from_slice(&[0x90, 0x80, 0x80, 0x00, 0, 0, 0, k as u8]);
            let size = IPV4_UDP_OVERHEAD + DataSize::bytes(data.len() as u64 + 500);
            let now = Instant::from_millis(10 * k as i64);
            rx.on_packet(now, Incoming { data: &data, size, ecn: Ecn::NotEct, rtcp: false }, &mut seen);
            rx.on_timeout(rx.poll_timeout().max(now), &mut seen);
        }
        assert_eq!(rx.video_stats().frames_completed, 2, "0 and 1");
    }

    #[test]
    fn without_fec_the_same_losses_stall_the_picture() {
        let mut video = 0;
        let drop_every_20th = |out: &Outgoing| match out.kind {
            OutKind::Video => {
                video += 1;
                video > 270 && video % 20 == 0
            }
            OutKind::Retransmission => true,
            _ => false,
        };
        let (seen, sent) = run(None, 10, drop_every_20th);
        assert!(sent.iter().all(|(k, _)| *k != OutKind::Fec));
        assert!(seen.recovered.is_empty());
        assert!((seen.rendered.len() as u64) < 150, "{} frames", seen.rendered.len());
    }

    #[test]
    fn a_fir_asks_for_a_keyframe_once_per_command_sequence_number() {
        /// Capture times of the keyframes encoded, and the FIR rows traced.
        #[derive(Default)]
        struct Keyframes(Vec<Instant>, usize);
        impl CallObserver for Keyframes {
            fn frame_encoded(&mut self, _at: Instant, frame: &rtcbench_media::video::Frame, _packets: u32) {
                if frame.keyframe {
                    self.0.push(frame.capture);
                }
            }
            fn feedback(&mut self, _at: Instant, row: FeedbackRow) {
                self.1 += usize::from(row.kind == FeedbackKind::Fir);
            }
        }
        let plan = plan(None);
        let controller =
            factory::build(ControllerKind::Fixed, &plan.options(), 1.0, plan.limits(), Instant::ZERO);
        let mut sender = plan.sender(controller);
        let mut seen = Keyframes::default();
        let fir = |ssrc: u32, seq: u8| {
            FirRepr { sender_ssrc: 0x4444, entries: vec![(ssrc, seq)] }.to_bytes().unwrap()
        };
        // A new request, its repetition, the next one, and one for another stream.
        let mut requests =
            vec![(5, fir(0x1111, 1)), (6, fir(0x1111, 1)), (7, fir(0x1111, 2)), (8, fir(0x9999, 3))];
        let mut now = Instant::ZERO;
        while now < Instant::from_secs(9) {
            now = sender.poll_timeout().min(Instant::from_secs(9));
            if let Some(k) = requests.iter().position(|(at, _)| Instant::from_secs(*at) <= now) {
                let (_, data) = requests.remove(k);
                let size = IPV4_UDP_OVERHEAD + DataSize::bytes(data.len() as u64);
                sender.on_rtcp(now, Incoming { data: &data, size, ecn: Ecn::NotEct, rtcp: true }, &mut seen);
            }
            sender.on_timeout(now, &mut seen);
            sender.outbox.clear();
        }
        let after = |s: i64| {
            seen.0
                .iter()
                .filter(|&&t| t >= Instant::from_secs(s) && t < Instant::from_millis(s * 1000 + 500))
                .count()
        };
        assert_eq!([after(5), after(6), after(7), after(8)], [1, 0, 1, 0], "{:?}", seen.0);
        // Every FIR naming the video stream is traced, the repeated one too.
        assert_eq!(seen.1, 3);
    }

    #[test]
    fn the_encoder_gets_the_wire_rate_less_headers() {
        // 1 Mbit/s at 30 fps: 4167 B frames on the wire, 4 packets of up to 1256 B, 224 B of
        // headers per frame = 53.76 kbit/s.
        let max = DataSize::bytes(1200);
        let header = DataSize::bytes(56);
        assert_eq!(video_payload_rate(Bitrate::mbps(1), 30.0, max, header), Bitrate::bps(1_000_000 - 53_760));
        // 150 kbit/s: one packet per frame, 56 B × 30 × 8 = 13.44 kbit/s.
        assert_eq!(video_payload_rate(Bitrate::kbps(150), 30.0, max, header), Bitrate::bps(150_000 - 13_440));
        // The headers of what was produced, plus the payload, give back the wire rate.
        let fps = 30.0;
        let payload = video_payload_rate(Bitrate::mbps(2), fps, max, header).as_bps_f64();
        let per_frame = payload / 8.0 / fps;
        let n = (per_frame / 1200.0).ceil();
        let wire = payload + n * fps * 56.0 * 8.0;
        assert!((wire - 2e6).abs() < 1.0, "{wire}");
    }

    /// Sends one-packet frames with sequence numbers `seqs` through the ULPFEC generator at a
    /// protection that closes a set every three frames; returns the bytes of FEC queued.
    fn fec_queued_for(seqs: [u16; 3]) -> DataSize {
        let plan = plan(Some(FecScheme::Ulpfec));
        let controller =
            factory::build(ControllerKind::Fixed, &plan.options(), 1.0, plan.limits(), Instant::ZERO);
        let mut sender = plan.sender(controller);
        // 100/256: a lone packet would get a whole FEC packet (too much overhead), four are
        // needed above 80/256, so the set runs to max_frames and gets one FEC packet.
        let params = FecParams { rate: 100, max_frames: 3 };
        sender.fec.as_mut().unwrap().generator.set_protection(Protection { delta: params, key: params });
        let descriptor_and_label = [0; rtcbench_wire::vp8::DESCRIPTOR_LEN + 4];
        for (i, seq) in seqs.into_iter().enumerate() {
            let marking = FrameMarking { start: true, end: true, independent: false };
            let header = media_header(&plan.ids, false, seq, 90 * i as u32, true, Some(marking));
            let mut data = vec![0; header.buffer_len()];
            header.emit(&mut data).unwrap();
            let now = Instant::from_millis(33 * i as i64);
            sender.protect(now, &data, &descriptor_and_label, &header, DataSize::bytes(600), false);
        }
        sender.pacer.queue_size()
    }

    #[test]
    fn an_fec_set_wider_than_one_mask_gets_no_fec_as_in_libwebrtc() {
        // Nine FEC packets of earlier sets between each two of these: a set within 48 numbers.
        assert!(fec_queued_for([1000, 1010, 1020]) > DataSize::ZERO);
        // 29 between each two, as when a long queue drains fast: the set spans 61 numbers, more
        // than a ULPFEC mask covers, and libwebrtc's EncodeFec makes no FEC for it. This used to
        // panic ("at most 48 consecutive packets"; seed000-5.4.7 with SCReAM, seed 2).
        assert_eq!(fec_queued_for([1000, 1030, 1060]), DataSize::ZERO);
        // Across the 16-bit wrap, as close together as the first set.
        assert!(fec_queued_for([65_530, 4, 14]) > DataSize::ZERO);
    }

    #[test]
    fn seq_span_counts_across_the_wrap() {
        assert_eq!(seq_span([5u16].into_iter()), 1);
        assert_eq!(seq_span([1000u16, 1047].into_iter()), 48);
        assert_eq!(seq_span([65_535u16, 46].into_iter()), 48);
        assert_eq!(seq_span([7u16, 3, 5].into_iter()), 5);
        assert_eq!(seq_span(std::iter::empty::<u16>()), 0);
    }

    #[test]
    fn cwnd_pushback_follows_libwebrtc() {
        let min = Bitrate::kbps(150);
        // Below 1 %: untouched.
        assert_eq!(cwnd_pushback(Bitrate::kbps(1000), 0.005, min), Bitrate::kbps(1000));
        // 20 % → drop one frame in five → 800 kbit/s.
        assert_eq!(cwnd_pushback(Bitrate::kbps(1000), 0.2, min), Bitrate::kbps(800));
        // 73 % is capped at one frame in two.
        assert_eq!(cwnd_pushback(Bitrate::kbps(1000), 0.73, min), Bitrate::kbps(500));
        // Near the codec minimum the cut is bounded by target − min: 10 kbit/s, one frame in 16.
        assert_eq!(cwnd_pushback(Bitrate::kbps(160), 0.5, min), Bitrate::kbps(150));
    }
}
