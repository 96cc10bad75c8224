//! A selective forwarding unit (SFU): the node between the participants of a group call that
//! receives each participant's stream once and forwards it to every other participant.
//!
//! A [`Forwarder`] serves one published stream. Its uplink is an ordinary call [`Receiver`]: it
//! sends the publisher transport-wide feedback (or RFC 8888, or the receive-side estimate) and
//! receiver reports, and NACKs what it misses. Every media packet it receives (video, its RED and
//! ULPFEC or FlexFEC packets, audio) goes out at once on every downlink, one per viewer, as
//! mediasoup, Jitsi's videobridge and libwebrtc-based SFUs do: SSRC, sequence number, timestamp
//! and payload unchanged, but a transport-wide sequence number and abs-send-time of the
//! downlink's own, since each downlink is a transport of its own with its own congestion
//! control. Forwarded media is not paced (an SFU sends what arrives as it arrives).
//!
//! Each downlink runs a controller (the run's controller kind, built as for a call) fed by its
//! viewer's feedback, receiver reports and, with NACK on, answers the viewer's NACKs from its own
//! history of what it forwarded, with RTX on an RTX stream of its own (RFC 4588), through a pacer
//! that also sends the controller's probes as RTX padding, as a call's sender does. What the SFU
//! never received cannot be resent: its uplink NACKs it, and the publisher's retransmission is
//! forwarded as the original packet when it arrives.
//!
//! A single-layer stream cannot be thinned at the SFU (no simulcast or SVC here), so the
//! publisher has to fit the narrowest downlink: the SFU tells it the minimum of its downlinks'
//! targets, and of its uplink's receive-side estimate if it has one, in a REMB
//! (draft-alvestrand-rmcat-remb-03), throttled as libwebrtc's `RembThrottler`
//! (`modules/congestion_controller/remb_throttler.cc`: at most every 200 ms, at once when the
//! value drops by more than 3 %). The uplink receiver's own keyframe requests are not sent: an
//! SFU does not decode; a viewer's PLI or FIR is forwarded to the publisher, at most one per
//! [`MIN_KEYFRAME_INTERVAL`].
//!
//! Sans-IO like the call's endpoints: packets from the publisher and RTCP from the viewers come
//! in with `now`; what to send goes to [`Forwarder::outbox`], addressed by [`Toward`]; the next
//! deadline is [`Forwarder::poll_timeout`]; what happens is told to an [`SfuObserver`].

use std::collections::BTreeSet;

use rtcbench_cc::gcc_draft::RembScheduler;
use rtcbench_cc::{AnyController, Controller, ControllerMetrics, SentPacket};
use rtcbench_media::history::{PacketHistory, RetransmissionLimiter, RTT_MARGIN};
use rtcbench_media::pacer::{Paced, PacedOutput, Pacer, PacerConfig};
use rtcbench_units::{Bitrate, DataSize, Duration, Instant, SeqNo, SeqUnwrapper};
use rtcbench_wire::rtcp::fir::FirRepr;
use rtcbench_wire::rtcp::pli::PliRepr;
use rtcbench_wire::rtcp::{parse_compound, RtcpMessage};
use rtcbench_wire::rtp::{abs_send_time_from, RtpHeaderRepr, IPV4_UDP_OVERHEAD};
use rtcbench_wire::rtx::{rtx_osn, OSN_LEN};
use rtcbench_wire::vp8::Vp8DescriptorRepr;
use rtcbench_wire::{Ecn, RedHeaderRepr, RembRepr};

use rtcbench_cc::adapter::TransportFeedbackAdapter;

use crate::call::{
    follow_controller, probe_padding, rtcp_out, rtp_clock, rtx_header_for, sender_report, ControllerRows,
    FeedbackIntake, Heard, KeyframeRequest, Receiver, StreamIds, Tail, FRAME_LABEL_LEN,
    MIN_KEYFRAME_INTERVAL, PT_AUDIO, PT_FLEXFEC, PT_RED, PT_RTX, PT_RTX_RED, PT_ULPFEC, PT_VIDEO,
    VIDEO_CLOCK_HZ,
};
use crate::observe::CallObserver;
use crate::{Incoming, OutKind, Outgoing};

/// libwebrtc `RembThrottler`'s `kRembSendInterval`: a REMB at most this often unless it drops.
pub const REMB_INTERVAL: Duration = Duration::from_millis(200);
/// A REMB goes out at once when its value is this fraction below the last one sent
/// (`RembThrottler`: `kSendThresholdPercent` = 103, i.e. the last value exceeds 1.03 × the new).
pub const REMB_DROP_TRIGGER: f64 = 0.03;
/// Forwarded video sequence numbers are remembered this far back, so that a late original and
/// its retransmission are not both forwarded.
const SEEN_WINDOW: u64 = 1 << 12;

/// Where a datagram from a [`Forwarder`] goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Toward {
    /// To the publisher: the uplink's feedback and reports, REMB, forwarded keyframe requests.
    Publisher,
    /// To viewer `k` (the `k`-th downlink): forwarded media, RTX, probe padding, sender reports.
    Viewer(usize),
}

/// Receives a forwarder's events: those of its uplink (the publish call) and of each downlink
/// (its own call), each as a call's endpoints report them.
pub trait SfuObserver {
    type Call<'a>: CallObserver
    where
        Self: 'a;
    /// The observer of the uplink's receive side.
    fn uplink(&mut self) -> Self::Call<'_>;
    /// The observer of downlink `leg`.
    fn downlink(&mut self, leg: usize) -> Self::Call<'_>;
}

impl SfuObserver for crate::Ignore {
    type Call<'a> = Self;
    fn uplink(&mut self) -> Self {
        Self
    }
    fn downlink(&mut self, _leg: usize) -> Self {
        Self
    }
}

/// What one downlink is made of.
pub struct DownlinkParts {
    /// The streams as its viewer receives them: the publisher's media SSRCs, numbers and
    /// timestamps, with an RTX SSRC and sequence of the downlink's own and the viewer's SSRC.
    pub ids: StreamIds,
    pub controller: AnyController,
    /// When its controller starts (the published stream's start).
    pub start: Instant,
    /// Its sender reports.
    pub report_interval: Duration,
    /// Answer the viewer's NACKs with RTX.
    pub nack: bool,
}

/// What a forwarder is made of; see [`Forwarder::new`].
pub struct ForwarderParts {
    /// The publisher's streams.
    pub publisher: StreamIds,
    /// The receive side of the uplink (`CallPlan::receiver` of the publish call).
    pub uplink: Receiver,
    /// The ECN field of forwarded media (the stream's, RFC 6679).
    pub ecn: Ecn,
    /// How a viewer's keyframe request is passed on: as the publisher's receivers ask.
    pub keyframe_request: KeyframeRequest,
    pub downlinks: Vec<DownlinkParts>,
}

/// A packet as forwarded: its header (the transport-wide extensions are written per downlink),
/// the bytes after it, and what the trace says of it.
#[derive(Clone, Debug)]
struct Forwarded {
    header: RtpHeaderRepr,
    tail: Tail,
    size: DataSize,
    payload: DataSize,
    kind: OutKind,
    frame: Option<u64>,
}

/// A retransmission waiting in a downlink's pacer.
#[derive(Clone, Debug)]
struct Resend {
    original: Forwarded,
    wire: DataSize,
}

impl Paced for Resend {
    fn size(&self) -> DataSize {
        self.wire
    }
    fn is_audio(&self) -> bool {
        false
    }
    fn is_retransmission(&self) -> bool {
        true
    }
}

/// One viewer's downlink: a sending transport without an encoder.
struct Downlink {
    ids: StreamIds,
    controller: AnyController,
    intake: FeedbackIntake,
    /// RTX and probe padding only: forwarded media is not paced.
    pacer: Pacer<Resend>,
    nack: bool,
    history: PacketHistory<Forwarded>,
    sent_video_seq: SeqUnwrapper<16>,
    last_video_seq: Option<u16>,
    limiter: RetransmissionLimiter,
    rtx_seq: u16,
    media_packets: u32,
    media_octets: u32,
    report_interval: Duration,
    next_report: Instant,
    controller_rows: ControllerRows,
}

impl Downlink {
    fn new(p: DownlinkParts) -> Self {
        let pacing = p.controller.pacing_rate().unwrap_or(Bitrate::ZERO);
        let mut leg = Self {
            ids: p.ids,
            pacer: Pacer::new(PacerConfig::default(), pacing),
            controller: p.controller,
            intake: FeedbackIntake::default(),
            nack: p.nack,
            history: PacketHistory::new(),
            sent_video_seq: SeqUnwrapper::new(),
            last_video_seq: None,
            limiter: RetransmissionLimiter::default(),
            rtx_seq: p.ids.rtx_seq0,
            media_packets: 0,
            media_octets: 0,
            report_interval: p.report_interval,
            next_report: p.start + p.report_interval,
            controller_rows: ControllerRows::default(),
        };
        leg.apply_controller(p.start, None::<&mut crate::Ignore>);
        leg
    }

    fn poll_timeout(&self) -> Instant {
        let mut t = self.next_report;
        if let Some(c) = self.controller.poll_timeout() {
            t = t.min(c);
        }
        if let Some(p) = self.pacer.poll_timeout() {
            t = t.min(p);
        }
        t
    }

    fn on_timeout<O: CallObserver>(&mut self, now: Instant, obs: &mut O, out: &mut Vec<Outgoing>) {
        if self.controller.poll_timeout().is_some_and(|t| t <= now) {
            self.controller.on_timeout(now);
            self.apply_controller(now, Some(&mut *obs));
        }
        if now >= self.next_report {
            while self.next_report <= now {
                self.next_report += self.report_interval;
            }
            let rtp_timestamp = self.ids.video_ts0.wrapping_add(rtp_clock(now, VIDEO_CLOCK_HZ));
            let counts = (self.media_packets, self.media_octets);
            out.push(sender_report(now, self.ids.video_ssrc, rtp_timestamp, counts, self.intake.last_rrtr));
        }
        self.drain_pacer(now, out);
    }

    /// Sends `f` now with this downlink's transport-wide number and abs-send-time.
    fn forward(&mut self, now: Instant, f: &Forwarded, ecn: Ecn, out: &mut Vec<Outgoing>) {
        let is_audio = f.kind == OutKind::Audio;
        let sent =
            self.intake.adapter.on_sent(now, f.size, is_audio, None, Some((f.header.ssrc, f.header.seq)));
        let data = stamped(f.header, &[], &f.tail, &sent, now);
        self.controller.on_packet_sent(now, &sent);
        if matches!(f.kind, OutKind::Video | OutKind::Audio) {
            self.media_packets = self.media_packets.wrapping_add(1);
            self.media_octets = self.media_octets.wrapping_add(f.payload.as_bytes() as u32);
        }
        if f.kind == OutKind::Video {
            let seq = self.sent_video_seq.unwrap(f.header.seq);
            self.last_video_seq = Some(f.header.seq.value() as u16);
            // Numbers only grow in the history: a repaired packet older than the newest
            // forwarded is not kept (the history ignores it).
            if self.nack && seq >= 0 {
                self.history.put(now, seq as u64, f.clone());
            }
        }
        out.push(Outgoing {
            kind: f.kind,
            size: f.size,
            payload: f.payload,
            data,
            seq: Some(f.header.seq.value() as u16),
            frame: f.frame,
            ecn,
        });
    }

    /// Queues RTX for what a NACK asks for and the history holds, as a call's sender does
    /// (`Sender::on_nack`: not twice within an RTT, within the retransmission budget).
    fn on_nack(&mut self, now: Instant, lost: &[u16]) {
        if !self.nack {
            return;
        }
        for &seq in lost {
            let Some(seq) = self.history.unwrap(seq) else { continue };
            let Some(original) = self.history.take_for_retransmission(now, seq) else { continue };
            let wire = original.size + DataSize::bytes(OSN_LEN as u64);
            if !self.limiter.try_use(now, wire) {
                self.history.cancel_retransmission(seq);
                break;
            }
            self.pacer.enqueue(now, Resend { original, wire });
        }
    }

    /// Sends the retransmissions and probe padding the pacer releases.
    fn drain_pacer(&mut self, now: Instant, out: &mut Vec<Outgoing>) {
        self.controller.on_send_queue(now, self.pacer.queue_size(), self.pacer.queue_time(now));
        while let Some(paced) = self.pacer.poll_send(now) {
            let probe = paced.probe();
            let seq = self.rtx_seq;
            self.rtx_seq = self.rtx_seq.wrapping_add(1);
            let (header, osn, tail, size, payload, kind, frame) = match paced {
                PacedOutput::Media { item, .. } => {
                    let o = item.original;
                    let osn = o.header.seq.value() as u16;
                    let sent = self.sent_video_seq.peek(o.header.seq);
                    self.history.retransmitted(now, sent.max(0) as u64);
                    let red = o.header.payload_type == PT_RED;
                    let h = rtx_header_for(
                        &self.ids,
                        seq,
                        o.header.marker,
                        o.header.timestamp,
                        o.header.frame_marking,
                        red,
                    );
                    (h, osn, o.tail, item.wire, o.payload, OutKind::Retransmission, o.frame)
                }
                PacedOutput::Padding { size, .. } => {
                    let osn = self.last_video_seq.unwrap_or(self.ids.video_seq0.wrapping_sub(1));
                    let (h, wire, payload) = probe_padding(&self.ids, seq, size);
                    (h, osn, Tail::new(), wire, payload, OutKind::Padding, None)
                }
            };
            let sent = self.intake.adapter.on_sent(now, size, false, probe, Some((header.ssrc, header.seq)));
            let data = stamped(header, &osn.to_be_bytes(), &tail, &sent, now);
            self.controller.on_packet_sent(now, &sent);
            out.push(Outgoing {
                kind,
                size,
                payload: if kind == OutKind::Padding { DataSize::ZERO } else { payload },
                data,
                // A retransmission is traced with the number of the packet it repairs.
                seq: Some(if kind == OutKind::Retransmission { osn } else { seq }),
                frame,
                ecn: Ecn::NotEct,
            });
        }
    }

    /// Reads the controller's decisions: pacing rate, retransmission budget, probes; traces it.
    fn apply_controller<O: CallObserver>(&mut self, now: Instant, obs: Option<&mut O>) {
        let target = self.controller.target_rate();
        follow_controller(&mut self.controller, &mut self.pacer, &mut self.limiter, target);
        if let Some(obs) = obs {
            self.controller_rows.record(now, &self.controller, target, obs);
        }
    }
}

/// The RTP bytes of `header` with the transport-wide number and abs-send-time of `sent`, then
/// `osn` (an RTX payload's original sequence number, or nothing) and `tail`.
fn stamped(mut header: RtpHeaderRepr, osn: &[u8], tail: &[u8], sent: &SentPacket, now: Instant) -> Vec<u8> {
    header.transport_seq = Some(TransportFeedbackAdapter::wire_seq(sent.seq));
    header.abs_send_time = Some(abs_send_time_from(now));
    let len = header.buffer_len();
    let mut data = Vec::with_capacity(len + osn.len() + tail.len());
    data.resize(len, 0);
    header.emit(&mut data).expect("buffer sized by buffer_len");
    data.extend_from_slice(osn);
    data.extend_from_slice(tail);
    data
}

/// The video sequence numbers forwarded lately (unwrapped).
#[derive(Debug, Default)]
struct Seen {
    unwrapper: SeqUnwrapper<16>,
    recent: BTreeSet<u64>,
}

impl Seen {
    /// Records `seq`; false if it was forwarded already (or is from before the stream began).
    fn first_time(&mut self, seq: SeqNo<16>) -> bool {
        let Ok(seq) = u64::try_from(self.unwrapper.unwrap(seq)) else { return false };
        if !self.recent.insert(seq) {
            return false;
        }
        let newest = *self.recent.last().expect("just inserted");
        while self.recent.first().is_some_and(|&s| s + SEEN_WINDOW < newest) {
            self.recent.pop_first();
        }
        true
    }
}

/// The SFU's handling of one published stream (see the module docs).
pub struct Forwarder {
    publisher: StreamIds,
    uplink: Receiver,
    legs: Vec<Downlink>,
    ecn: Ecn,
    seen: Seen,
    remb: RembScheduler,
    /// The uplink receiver's own estimate (receive-side estimation), from its REMBs.
    uplink_estimate: Option<Bitrate>,
    keyframe_request: KeyframeRequest,
    last_keyframe_request: Option<Instant>,
    fir_seq: u8,
    /// Per downlink, what it sends now (drained into `outbox`).
    leg_out: Vec<Outgoing>,
    pub outbox: Vec<(Toward, Outgoing)>,
}

impl Forwarder {
    pub fn new(p: ForwarderParts) -> Self {
        Self {
            publisher: p.publisher,
            uplink: p.uplink,
            legs: p.downlinks.into_iter().map(Downlink::new).collect(),
            ecn: p.ecn,
            seen: Seen::default(),
            remb: RembScheduler::new(REMB_INTERVAL, REMB_DROP_TRIGGER),
            uplink_estimate: None,
            keyframe_request: p.keyframe_request,
            last_keyframe_request: None,
            fir_seq: 0,
            leg_out: Vec::new(),
            outbox: Vec::new(),
        }
    }

    /// The earliest instant the forwarder wants to be woken.
    pub fn poll_timeout(&self) -> Instant {
        let mut t = self.uplink.poll_timeout();
        for leg in &self.legs {
            t = t.min(leg.poll_timeout());
        }
        if let Some(r) = self.remb.next_due() {
            t = t.min(r);
        }
        t
    }

    pub fn on_timeout<O: SfuObserver>(&mut self, now: Instant, obs: &mut O) {
        if now >= self.uplink.poll_timeout() {
            self.uplink.on_timeout(now, &mut obs.uplink());
            self.take_uplink_output();
        }
        for k in 0..self.legs.len() {
            if now >= self.legs[k].poll_timeout() {
                self.legs[k].on_timeout(now, &mut obs.downlink(k), &mut self.leg_out);
                self.flush_leg(k);
            }
        }
        self.send_remb(now);
    }

    /// A packet from the publisher: RTP, or its sender report (for the uplink's receiver).
    pub fn on_publisher_packet<O: SfuObserver>(&mut self, now: Instant, pkt: Incoming<'_>, obs: &mut O) {
        self.remb.start(now);
        self.uplink.on_packet(now, pkt, &mut obs.uplink());
        self.take_uplink_output();
        if !pkt.rtcp {
            if let Some(f) = self.forwarding(pkt) {
                for k in 0..self.legs.len() {
                    self.legs[k].forward(now, &f, self.ecn, &mut self.leg_out);
                    self.flush_leg(k);
                }
            }
        }
        self.send_remb(now);
    }

    /// RTCP from viewer `leg`: feedback for its controller, NACKs, keyframe requests.
    pub fn on_viewer_rtcp<O: SfuObserver>(
        &mut self,
        now: Instant,
        leg: usize,
        pkt: Incoming<'_>,
        obs: &mut O,
    ) {
        let Ok(messages) = parse_compound(pkt.data) else { return };
        let mut o = obs.downlink(leg);
        let l = &mut self.legs[leg];
        let mut heard = false;
        let mut keyframe = false;
        for m in messages {
            match l.intake.on_message(now, m, pkt.size, &l.ids, &mut o) {
                Heard::Feedback(report) => {
                    l.controller.on_feedback(now, &report);
                    heard = true;
                }
                Heard::ReceiverReport(report) => {
                    if let Some(rtt) = report.rtt {
                        l.history.set_rtt(rtt + RTT_MARGIN);
                    }
                    l.controller.on_feedback(now, &report);
                    heard = true;
                }
                Heard::Nack(lost) => l.on_nack(now, &lost),
                Heard::KeyframeRequest => keyframe = true,
                Heard::Nothing => {}
            }
        }
        l.apply_controller(now, heard.then_some(&mut o));
        l.drain_pacer(now, &mut self.leg_out);
        drop(o);
        self.flush_leg(leg);
        if keyframe {
            self.request_keyframe(now);
        }
        self.send_remb(now);
    }

    /// The uplink receiver's estimator state (receive-side estimation), for the publisher's
    /// trace.
    pub fn uplink_estimator_metrics(&self) -> Option<ControllerMetrics> {
        self.uplink.estimator_metrics()
    }

    /// The state of the receive-side estimator at viewer `leg`, traced with the downlink's
    /// controller (as a call's sender traces its receiver's).
    pub fn set_remote_metrics(&mut self, leg: usize, m: Option<ControllerMetrics>) {
        self.legs[leg].controller_rows.remote = m;
    }

    /// The target of downlink `leg`'s controller.
    pub fn downlink_target(&self, leg: usize) -> Bitrate {
        self.legs[leg].controller.target_rate()
    }

    fn flush_leg(&mut self, leg: usize) {
        self.outbox.extend(self.leg_out.drain(..).map(|o| (Toward::Viewer(leg), o)));
    }

    /// Passes the uplink receiver's RTCP on to the publisher, but for its REMB (its value goes
    /// into the SFU's own) and keyframe requests (the SFU does not decode).
    fn take_uplink_output(&mut self) {
        for o in self.uplink.outbox.drain(..) {
            // Payload-specific feedback (PT 206, RFC 4585 §6.3) is sent alone: PLI, FIR, REMB.
            if o.data.get(1) == Some(&206) {
                match parse_compound(&o.data).ok().and_then(|m| m.into_iter().next()) {
                    Some(RtcpMessage::Remb(r)) => {
                        self.uplink_estimate = Some(r.bitrate);
                        continue;
                    }
                    Some(RtcpMessage::Pli(_) | RtcpMessage::Fir(_)) => continue,
                    _ => {}
                }
            }
            self.outbox.push((Toward::Publisher, o));
        }
    }

    /// What to forward of an RTP packet from the publisher: media, FEC and audio as they came,
    /// a retransmission as the original it repairs (once), nothing of probe padding.
    fn forwarding(&mut self, pkt: Incoming<'_>) -> Option<Forwarded> {
        let (mut header, header_len) = RtpHeaderRepr::parse(pkt.data).ok()?;
        let after = &pkt.data[header_len..];
        let ids = &self.publisher;
        let headers = IPV4_UDP_OVERHEAD + DataSize::bytes(header_len as u64);
        let (kind, tail, size) = if header.ssrc == ids.video_ssrc {
            let fec = header.payload_type == PT_RED
                && RedHeaderRepr::parse(after)
                    .is_ok_and(|r| r.blocks.is_empty() && r.primary_pt == PT_ULPFEC);
            if !matches!(header.payload_type, PT_VIDEO | PT_RED) || !self.seen.first_time(header.seq) {
                return None;
            }
            (if fec { OutKind::Fec } else { OutKind::Video }, after, pkt.size)
        } else if header.ssrc == ids.audio_ssrc && header.payload_type == PT_AUDIO {
            (OutKind::Audio, after, pkt.size)
        } else if header.ssrc == ids.flexfec_ssrc && header.payload_type == PT_FLEXFEC {
            (OutKind::Fec, after, pkt.size)
        } else if header.ssrc == ids.rtx_ssrc && header.frame_marking.is_some() {
            // RFC 4588 §4: the original sequence number, then the original payload; probe
            // padding (no frame marking) is not forwarded.
            header.payload_type = match header.payload_type {
                PT_RTX => PT_VIDEO,
                PT_RTX_RED => PT_RED,
                _ => return None,
            };
            header.seq = SeqNo::new(u64::from(rtx_osn(after).ok()?));
            header.ssrc = ids.video_ssrc;
            if !self.seen.first_time(header.seq) {
                return None;
            }
            let osn = DataSize::bytes(OSN_LEN as u64);
            (OutKind::Video, &after[OSN_LEN..], pkt.size.saturating_sub(osn))
        } else {
            return None;
        };
        let (payload, frame) = match kind {
            OutKind::Video => {
                let red = usize::from(header.payload_type == PT_RED);
                let rest = tail.get(red..)?;
                let (_, descriptor_len) = Vp8DescriptorRepr::parse(rest).ok()?;
                let label = rest.get(descriptor_len..descriptor_len + FRAME_LABEL_LEN);
                let frame = label.map(|b| u64::from(u32::from_be_bytes(b.try_into().expect("4 bytes"))));
                (size.saturating_sub(headers + DataSize::bytes((red + descriptor_len) as u64)), frame)
            }
            OutKind::Audio => (size.saturating_sub(headers), None),
            _ => (DataSize::ZERO, None),
        };
        Some(Forwarded { header, tail: Tail::from_slice(tail), size, payload, kind, frame })
    }

    /// A viewer asked for a keyframe: ask the publisher, at most once per
    /// [`MIN_KEYFRAME_INTERVAL`] (it would ignore more).
    fn request_keyframe(&mut self, now: Instant) {
        if self.last_keyframe_request.is_some_and(|t| now - t < MIN_KEYFRAME_INTERVAL) {
            return;
        }
        self.last_keyframe_request = Some(now);
        let (sender_ssrc, media_ssrc) = (self.publisher.receiver_ssrc, self.publisher.video_ssrc);
        let data = match self.keyframe_request {
            KeyframeRequest::Pli => PliRepr { sender_ssrc, media_ssrc }.to_bytes(),
            KeyframeRequest::Fir => {
                self.fir_seq = self.fir_seq.wrapping_add(1);
                FirRepr { sender_ssrc, entries: vec![(media_ssrc, self.fir_seq)] }.to_bytes()
            }
        };
        self.outbox.push((Toward::Publisher, rtcp_out(data.expect("a keyframe request always encodes"))));
    }

    /// The REMB to the publisher, if one is due: the least of the downlinks' targets and the
    /// uplink's own estimate.
    fn send_remb(&mut self, now: Instant) {
        let downlinks = self.legs.iter().map(|l| l.controller.target_rate()).min();
        let Some(value) = downlinks.into_iter().chain(self.uplink_estimate).min() else { return };
        if let Some(bitrate) = self.remb.poll(now, value) {
            let remb = RembRepr {
                sender_ssrc: self.publisher.receiver_ssrc,
                bitrate,
                ssrcs: vec![self.publisher.video_ssrc, self.publisher.audio_ssrc],
            };
            self.outbox.push((Toward::Publisher, rtcp_out(remb.to_bytes().expect("a REMB always encodes"))));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    use rtcbench_cc::{ControllerKind, FeedbackReport};
    use rtcbench_wire::rtcp::nack::NackRepr;

    use super::*;
    use crate::call::FeedbackMode;
    use crate::plan::{CallPlan, VideoPlan};
    use crate::{Ignore, Sender};

    /// A controller whose target the test sets (scripted input for the REMB rule).
    struct Held(Arc<AtomicU64>);

    impl Controller for Held {
        fn on_packet_sent(&mut self, _now: Instant, _pkt: &SentPacket) {}
        fn on_feedback(&mut self, _now: Instant, _report: &FeedbackReport) {}
        fn on_timeout(&mut self, _now: Instant) {}
        fn poll_timeout(&self) -> Option<Instant> {
            None
        }
        fn target_rate(&self) -> Bitrate {
            Bitrate::bps(self.0.load(Ordering::Relaxed))
        }
        fn metrics(&self) -> ControllerMetrics {
            ControllerMetrics::new()
        }
    }

    fn held(kbps: u64) -> (AnyController, Arc<AtomicU64>) {
        let rate = Arc::new(AtomicU64::new(kbps * 1000));
        (AnyController::User(Box::new(Held(rate.clone()))), rate)
    }

    fn publisher() -> CallPlan {
        let ids = StreamIds {
            video_ssrc: 0x1111,
            rtx_ssrc: 0x2222,
            audio_ssrc: 0x3333,
            receiver_ssrc: 0x4444,
            video_seq0: 65_530,
            rtx_seq0: 100,
            audio_seq0: 200,
            video_ts0: 7,
            audio_ts0: 9,
            flexfec_ssrc: 0x5555,
            flexfec_seq0: 300,
            flexfec_ts0: 11,
        };
        let rate = Bitrate::kbps(300);
        CallPlan {
            call: 0,
            start: Duration::ZERO,
            stop: Duration::from_secs(20),
            ids,
            video: Some(VideoPlan {
                fps: 15.0,
                min_rate: rate,
                max_rate: rate,
                start_rate: rate,
                camera: (320, 180),
                seed: 5,
            }),
            audio: None,
            report_interval: Duration::from_secs(1),
            pauses: vec![],
            ecn: 0,
            min_rate: rate,
            max_rate: rate,
            start_rate: rate,
            uncapped: false,
            priority: 1.0,
            controller_seed: 1,
            gcc_draft_send_side: false,
            scream_competing_flows_compensation: None,
            twcc_interval: None,
            ccfb_interval: None,
            nack: true,
            fec: None,
            fec_rate: None,
            keyframe_request: KeyframeRequest::Pli,
            jitter_buffer: None,
        }
    }

    /// Downlink `k`'s streams: the publisher's media, an RTX stream and a viewer of its own.
    fn leg_ids(p: &StreamIds, k: u32) -> StreamIds {
        StreamIds { rtx_ssrc: 0x7000 + k, rtx_seq0: 1000 * k as u16, receiver_ssrc: 0x8000 + k, ..*p }
    }

    fn forwarder(controllers: Vec<AnyController>) -> Forwarder {
        let plan = publisher();
        let downlinks = controllers
            .into_iter()
            .enumerate()
            .map(|(k, controller)| DownlinkParts {
                ids: leg_ids(&plan.ids, k as u32),
                controller,
                start: Instant::ZERO,
                report_interval: Duration::from_secs(1),
                nack: true,
            })
            .collect();
        Forwarder::new(ForwarderParts {
            publisher: plan.ids,
            uplink: plan.receiver(FeedbackMode::Twcc { interval: Duration::from_millis(50) }),
            ecn: Ecn::NotEct,
            keyframe_request: KeyframeRequest::Pli,
            downlinks,
        })
    }

    fn fixed(kbps: u64) -> AnyController {
        let plan = publisher();
        let limits = rtcbench_cc::factory::RateLimits {
            min: Bitrate::kbps(kbps),
            max: Bitrate::kbps(kbps),
            start: Bitrate::kbps(kbps),
            uncapped: false,
        };
        rtcbench_cc::factory::build(ControllerKind::Fixed, &plan.options(), 1.0, limits, Instant::ZERO)
    }

    /// The publisher's video packets over its first `ms` milliseconds, with when they left.
    fn published(ms: i64) -> Vec<(Instant, Outgoing)> {
        let plan = publisher();
        let mut sender: Sender = plan.sender(fixed(300));
        let mut out = Vec::new();
        let end = Instant::from_millis(ms);
        let mut now = Instant::ZERO;
        while now < end {
            sender.on_timeout(now, &mut Ignore);
            out.extend(sender.outbox.drain(..).filter(|o| o.kind == OutKind::Video).map(|o| (now, o)));
            now = sender.poll_timeout();
        }
        out
    }

    fn incoming(o: &Outgoing) -> Incoming<'_> {
        Incoming { data: &o.data, size: o.size, ecn: o.ecn, rtcp: o.kind == OutKind::Rtcp }
    }

    fn header(o: &Outgoing) -> RtpHeaderRepr {
        RtpHeaderRepr::parse(&o.data).expect("an RTP packet").0
    }

    /// What the forwarder sent toward `to`, of `kind`.
    fn sent(f: &Forwarder, to: Toward, kind: OutKind) -> Vec<&Outgoing> {
        f.outbox.iter().filter(|(t, o)| *t == to && o.kind == kind).map(|(_, o)| o).collect()
    }

    #[test]
    fn forwarded_packets_keep_their_stream_numbers_and_take_each_downlinks_transport_numbers() {
        let mut f = forwarder(vec![fixed(500), fixed(500)]);
        let packets = published(1000);
        assert!(packets.len() > 30, "{} packets", packets.len());
        for (at, p) in &packets {
            f.on_publisher_packet(*at, incoming(p), &mut Ignore);
        }
        for leg in 0..2 {
            let out = sent(&f, Toward::Viewer(leg), OutKind::Video);
            assert_eq!(out.len(), packets.len());
            for (k, ((at, original), forwarded)) in packets.iter().zip(&out).enumerate() {
                let (a, b) = (header(original), header(forwarded));
                assert_eq!((b.ssrc, b.seq, b.timestamp, b.marker), (a.ssrc, a.seq, a.timestamp, a.marker));
                assert_eq!(b.frame_marking, a.frame_marking);
                // The downlink's own transport: numbered from 0, stamped when forwarded.
                assert_eq!(b.transport_seq, Some(SeqNo::new(k as u64)));
                assert_eq!(b.abs_send_time, Some(abs_send_time_from(*at)));
                // The payload (descriptor and frame label) and the sizes are the publisher's.
                let len = a.buffer_len();
                assert_eq!(forwarded.data[len..], original.data[len..]);
                assert_eq!((forwarded.size, forwarded.payload), (original.size, original.payload));
                assert_eq!(forwarded.frame, original.frame);
            }
        }
        // The uplink's own feedback goes back to the publisher.
        f.on_timeout(Instant::from_millis(1000), &mut Ignore);
        assert!(!sent(&f, Toward::Publisher, OutKind::Rtcp).is_empty());
    }

    #[test]
    fn a_retransmission_from_the_publisher_is_forwarded_once_as_the_original() {
        let mut f = forwarder(vec![fixed(500)]);
        let packets = published(500);
        // The third packet is lost on the uplink: the publisher's RTX brings it later.
        let (lost_at, lost) = &packets[2];
        for (at, p) in packets.iter().filter(|(_, p)| p.seq != lost.seq) {
            f.on_publisher_packet(*at, incoming(p), &mut Ignore);
        }
        let h = header(lost);
        let rtx = rtx_header_for(&f.publisher, 100, h.marker, h.timestamp, h.frame_marking, false);
        let after = h.buffer_len();
        let mut data = vec![0; rtx.buffer_len()];
        rtx.emit(&mut data).unwrap();
        data.extend_from_slice(&(h.seq.value() as u16).to_be_bytes());
        data.extend_from_slice(&lost.data[after..]);
        let size = lost.size + DataSize::bytes(OSN_LEN as u64);
        let repair = Outgoing { kind: OutKind::Retransmission, size, data, ..lost.clone() };
        let at = *lost_at + Duration::from_millis(600);
        for _ in 0..2 {
            f.on_publisher_packet(at, incoming(&repair), &mut Ignore);
        }
        let out = sent(&f, Toward::Viewer(0), OutKind::Video);
        assert_eq!(out.len(), packets.len(), "forwarded once, the duplicate dropped");
        let restored = out.last().unwrap();
        assert_eq!(header(restored).seq, h.seq);
        assert_eq!((header(restored).ssrc, header(restored).payload_type), (h.ssrc, h.payload_type));
        assert_eq!(restored.data[after..], lost.data[after..]);
        assert_eq!((restored.size, restored.payload, restored.frame), (lost.size, lost.payload, lost.frame));
    }

    #[test]
    fn a_viewers_nack_is_answered_from_the_forwarded_history_on_the_downlinks_rtx_stream() {
        let mut f = forwarder(vec![fixed(500), fixed(500)]);
        let packets = published(500);
        for (at, p) in &packets {
            f.on_publisher_packet(*at, incoming(p), &mut Ignore);
        }
        f.outbox.clear();
        let asked = header(&packets[3].1).seq.value() as u16;
        let never = header(&packets.last().unwrap().1).seq.value() as u16 + 10;
        let nack = NackRepr { sender_ssrc: 0x8001, media_ssrc: 0x1111, lost: vec![asked, never] };
        let data = nack.to_bytes().unwrap();
        let size = IPV4_UDP_OVERHEAD + DataSize::bytes(data.len() as u64);
        let now = Instant::from_millis(600);
        f.on_viewer_rtcp(now, 1, Incoming { data: &data, size, ecn: Ecn::NotEct, rtcp: true }, &mut Ignore);
        let rtx = sent(&f, Toward::Viewer(1), OutKind::Retransmission);
        assert_eq!(rtx.len(), 1, "only what was forwarded can be resent");
        assert!(sent(&f, Toward::Viewer(0), OutKind::Retransmission).is_empty());
        let h = header(rtx[0]);
        let original = &packets[3].1;
        assert_eq!((h.ssrc, h.seq.value(), h.payload_type), (0x7001, 1000, PT_RTX));
        assert_eq!(
            (h.timestamp, h.frame_marking),
            (header(original).timestamp, header(original).frame_marking)
        );
        let len = h.buffer_len();
        assert_eq!(rtx[0].data[len..len + OSN_LEN], asked.to_be_bytes());
        assert_eq!(rtx[0].data[len + OSN_LEN..], original.data[header(original).buffer_len()..]);
        assert_eq!(rtx[0].size, original.size + DataSize::bytes(OSN_LEN as u64));
        assert_eq!(rtx[0].seq, Some(asked));
        // The downlink's transport numbers go on after what it forwarded.
        assert_eq!(h.transport_seq, Some(SeqNo::new(packets.len() as u64)));
        // Asked again at once, it is not resent (libwebrtc: not twice within an RTT).
        f.outbox.clear();
        f.on_viewer_rtcp(now, 1, Incoming { data: &data, size, ecn: Ecn::NotEct, rtcp: true }, &mut Ignore);
        assert!(sent(&f, Toward::Viewer(1), OutKind::Retransmission).is_empty());
    }

    #[test]
    fn a_viewers_keyframe_request_reaches_the_publisher_at_most_every_300_ms() {
        let mut f = forwarder(vec![fixed(500), fixed(500)]);
        let pli =
            |viewer: u32| PliRepr { sender_ssrc: 0x8000 + viewer, media_ssrc: 0x1111 }.to_bytes().unwrap();
        let mut forwarded = Vec::new();
        for (ms, viewer) in [(100, 0), (200, 1), (350, 1), (420, 0)] {
            f.outbox.clear();
            let data = pli(viewer);
            let size = IPV4_UDP_OVERHEAD + DataSize::bytes(data.len() as u64);
            let pkt = Incoming { data: &data, size, ecn: Ecn::NotEct, rtcp: true };
            f.on_viewer_rtcp(Instant::from_millis(ms), viewer as usize, pkt, &mut Ignore);
            for o in sent(&f, Toward::Publisher, OutKind::Rtcp) {
                if let Ok(msgs) = parse_compound(&o.data) {
                    for m in msgs {
                        if let RtcpMessage::Pli(p) = m {
                            forwarded.push((ms, p));
                        }
                    }
                }
            }
        }
        let expected = PliRepr { sender_ssrc: 0x4444, media_ssrc: 0x1111 };
        assert_eq!(forwarded, vec![(100, expected), (420, expected)]);
    }

    /// The REMB values the forwarder sent the publisher.
    fn rembs(f: &mut Forwarder) -> Vec<Bitrate> {
        let out = f.outbox.drain(..).filter(|(t, _)| *t == Toward::Publisher).collect::<Vec<_>>();
        out.iter()
            .filter_map(|(_, o)| match parse_compound(&o.data).ok()?.into_iter().next()? {
                RtcpMessage::Remb(r) => Some(r.bitrate),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_publisher_is_told_the_least_downlink_target_every_200_ms_and_at_once_on_a_drop() {
        let (wide, _) = held(900);
        let (narrow, rate) = held(400);
        let mut f = forwarder(vec![wide, narrow]);
        let packets = published(2000);
        let mut values = Vec::new();
        let at_ms = |f: &mut Forwarder, ms: i64, values: &mut Vec<(i64, u64)>| {
            let now = Instant::from_millis(ms);
            for (t, p) in packets.iter().filter(|(t, _)| *t <= now && *t > now - Duration::from_millis(50)) {
                f.on_publisher_packet(*t, incoming(p), &mut Ignore);
            }
            f.on_timeout(now, &mut Ignore);
            values.extend(rembs(f).into_iter().map(|r| (ms, r.as_bps() / 1000)));
        };
        for ms in (50..=400).step_by(50) {
            at_ms(&mut f, ms, &mut values);
        }
        // The first packet starts it; then every 200 ms: the narrower downlink's target.
        assert_eq!(values.first().map(|v| v.1), Some(400));
        let times: Vec<i64> = values.iter().map(|v| v.0).collect();
        assert!(times.windows(2).all(|w| w[1] - w[0] >= 200), "{values:?}");
        assert!(times.len() >= 2 && times.last() > Some(&200), "{values:?}");
        // Within the period, a 2 % drop waits; a 5 % drop goes at once.
        let last = *times.last().unwrap();
        values.clear();
        rate.store(392_000, Ordering::Relaxed);
        at_ms(&mut f, last + 50, &mut values);
        assert!(values.is_empty(), "{values:?}");
        rate.store(380_000, Ordering::Relaxed);
        at_ms(&mut f, last + 60, &mut values);
        assert_eq!(values, vec![(last + 60, 380)]);
    }
}
