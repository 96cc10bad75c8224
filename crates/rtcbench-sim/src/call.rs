//! A call's endpoints in the simulated world: the sans-IO sender and receiver of
//! [`rtcbench_rtp`], the flows and routes their datagrams take ([`CallPlumbing`]), and the
//! observer that writes what they report into the run's trace ([`CallTrace`]).

use rtcbench_cc::ControllerMetrics;
use rtcbench_media::video::Frame;
use rtcbench_rtp::sfu::SfuObserver;
use rtcbench_rtp::{CallObserver, FeedbackRow, Incoming, OutKind, Outgoing};
use rtcbench_units::{Bitrate, DataSize, Instant};

use crate::packet::{FlowId, Packet, PacketKind, RouteId};
use crate::trace::Trace;

pub use rtcbench_rtp::call::{
    FecScheme, FeedbackMode, KeyframeRequest, Pause, Receiver, Sender, SenderParts, StreamIds,
    AUDIO_CLOCK_HZ, PT_AUDIO, PT_FLEXFEC, PT_RED, PT_RTX, PT_RTX_RED, PT_ULPFEC, PT_VIDEO, VIDEO_CLOCK_HZ,
};

/// Where a call's packets go: flows for the trace, routes for the network.
#[derive(Clone, Copy, Debug)]
pub struct CallPlumbing {
    pub call: u32,
    pub video_flow: Option<FlowId>,
    pub audio_flow: Option<FlowId>,
    /// RTCP from the sender (SR) to the receiver.
    pub rtcp_tx_flow: FlowId,
    /// RTCP from the receiver (feedback, RR) to the sender.
    pub rtcp_rx_flow: FlowId,
    /// Sender → receiver.
    pub forward_route: RouteId,
    /// Receiver → sender.
    pub backward_route: RouteId,
}

impl CallPlumbing {
    /// The simulated packet that carries what the sender (`from_sender`) or the receiver sends
    /// `now`; the world numbers it.
    pub fn packet(&self, now: Instant, out: Outgoing, from_sender: bool) -> Packet {
        let (flow, kind) = match out.kind {
            OutKind::Video => {
                (self.video_flow.expect("a call with video has a video flow"), PacketKind::Media)
            }
            OutKind::Audio => {
                (self.audio_flow.expect("a call with audio has an audio flow"), PacketKind::Media)
            }
            OutKind::Padding => {
                (self.video_flow.or(self.audio_flow).expect("a media flow"), PacketKind::Padding)
            }
            OutKind::Retransmission => {
                (self.video_flow.expect("only video is retransmitted"), PacketKind::Rtx)
            }
            OutKind::Fec => (self.video_flow.expect("only video is protected"), PacketKind::Fec),
            OutKind::Rtcp if from_sender => (self.rtcp_tx_flow, PacketKind::Rtcp),
            OutKind::Rtcp => (self.rtcp_rx_flow, PacketKind::Rtcp),
        };
        Packet {
            id: 0,
            flow,
            kind,
            size: out.size,
            payload: out.payload,
            sent_at: now,
            route: if from_sender { self.forward_route } else { self.backward_route },
            hop: 0,
            data: out.data,
            seq: out.seq,
            frame: out.frame,
            ecn: out.ecn,
        }
    }
}

/// A simulated packet as the endpoint at the end of its route takes it: without the `framing`
/// its route added on the wire (a TURN relay's ChannelData header, which the endpoint's TURN
/// client strips).
pub fn incoming(pkt: &Packet, framing: DataSize) -> Incoming<'_> {
    Incoming { data: &pkt.data, size: pkt.size - framing, ecn: pkt.ecn, rtcp: pkt.kind == PacketKind::Rtcp }
}

/// Writes a call's events into the run's trace, under its call index and flows.
pub struct CallTrace<'a> {
    pub trace: &'a mut Trace,
    pub plumbing: &'a CallPlumbing,
    /// Other video flows that carry the frames this call's sender encodes: an SFU's forward
    /// legs of a published stream, whose frame rows start when the publisher encodes.
    pub mirrors: &'a [FlowId],
}

impl CallObserver for CallTrace<'_> {
    fn frame_encoded(&mut self, at: Instant, frame: &Frame, packets: u32) {
        let flow = self.plumbing.video_flow.expect("video flow exists with a video source");
        self.trace.frames.encoded(flow, at, frame, packets);
        for &flow in self.mirrors {
            self.trace.frames.encoded(flow, at, frame, packets);
        }
    }

    fn frame_completed(&mut self, frame: u64, first: Instant, at: Instant) {
        if let Some(flow) = self.plumbing.video_flow {
            self.trace.frames.completed(flow, frame, first, at);
        }
    }

    fn frame_rendered(&mut self, frame: u64, decoded: Instant, at: Instant, freeze: bool) {
        if let Some(flow) = self.plumbing.video_flow {
            self.trace.frames.rendered(flow, frame, decoded, at, freeze);
        }
    }

    fn packet_recovered(&mut self, at: Instant, seq: u16) {
        if let Some(flow) = self.plumbing.video_flow {
            self.trace.recovered(at, flow, seq);
        }
    }

    fn feedback(&mut self, at: Instant, row: FeedbackRow) {
        self.trace.feedback.record(at, self.plumbing.call, row);
    }

    fn controller(
        &mut self,
        at: Instant,
        target: Bitrate,
        pacing: Option<Bitrate>,
        metrics: &ControllerMetrics,
        remote: Option<&ControllerMetrics>,
    ) {
        self.trace.controller.record(at, self.plumbing.call, target, pacing, metrics, remote);
    }
}

/// Where an SFU's datagrams for one published stream go: the publish call's plumbing (feedback to
/// the publisher on its backward route) and each forward leg's (to its viewer).
#[derive(Clone, Debug)]
pub struct ForwarderPlumbing {
    pub uplink: CallPlumbing,
    pub legs: Vec<CallPlumbing>,
}

/// Writes an SFU's events into the run's trace: the uplink's under the publish call, each
/// downlink's under its forward leg.
pub struct SfuTrace<'a> {
    pub trace: &'a mut Trace,
    pub plumbing: &'a ForwarderPlumbing,
}

impl SfuObserver for SfuTrace<'_> {
    type Call<'b>
        = CallTrace<'b>
    where
        Self: 'b;

    fn uplink(&mut self) -> CallTrace<'_> {
        CallTrace { trace: &mut *self.trace, plumbing: &self.plumbing.uplink, mirrors: &[] }
    }

    fn downlink(&mut self, leg: usize) -> CallTrace<'_> {
        CallTrace { trace: &mut *self.trace, plumbing: &self.plumbing.legs[leg], mirrors: &[] }
    }
}
