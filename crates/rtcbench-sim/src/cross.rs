//! Cross-traffic endpoints of a run: the sans-IO models of [`crate::traffic`] put on routes as
//! packets, as [`crate::call`] does for media. A TCP flow is a [`TcpSource`] (sender and its
//! application) and a [`TcpSink`] (receiver, sending ACKs back); a CBR flow is a [`CbrFlow`]
//! whose packets end at the far node.

use rtcbench_cc::feedback::Ecn;
use rtcbench_units::{DataSize, Duration, Instant};

use crate::packet::{FlowId, Packet, PacketKind, RouteId};
use crate::traffic::cbr::CbrSource;
use crate::traffic::on_off::{Burst, OnOff};
use crate::traffic::tcp::wire::{TcpRepr, HEADER_LEN as TCP_HEADER_LEN, IPV4_HEADER};
use crate::traffic::tcp::{ReceiverConfig, Segment, SenderEvent, TcpReceiver, TcpSender};

/// UDP and IPv4 headers of a CBR packet.
const UDP_IPV4_HEADERS: DataSize = DataSize::bytes(28);

/// Where an endpoint's packets go.
#[derive(Clone, Copy, Debug)]
pub struct Plumbing {
    pub flow: FlowId,
    pub route: RouteId,
}

fn segment_packet(now: Instant, at: Plumbing, seg: Segment) -> Packet {
    let size = seg.wire_size();
    Packet {
        id: 0,
        flow: at.flow,
        kind: if seg.payload > DataSize::ZERO { PacketKind::Tcp } else { PacketKind::TcpAck },
        size,
        payload: seg.payload,
        sent_at: now,
        route: at.route,
        hop: 0,
        data: seg.header,
        seq: None,
        frame: None,
        ecn: seg.ecn,
    }
}

/// The sending end of a TCP flow: between `start` and `stop`, a bulk transfer or an on/off
/// application. At `stop` it falls silent, as an application that closes its socket abruptly.
pub struct TcpSource {
    sender: TcpSender,
    app: Option<OnOff>,
    start: Instant,
    stop: Instant,
    /// Woken at `start` once: a bulk sender has no timer before it sends.
    started: bool,
    out: Plumbing,
    small_queues: Option<SmallQueues>,
    /// Completed bursts of an on/off application (flow completion times).
    pub bursts: Vec<Burst>,
    pub outbox: Vec<Packet>,
}

/// Linux's TCP Small Queues (`tcp_small_queue_check`, net/ipv4/tcp_output.c; Linux 3.6 on): a
/// socket may have only so many bytes queued below it on its own host (qdisc and NIC); more
/// data waits in the socket until one of its packets leaves the interface. It matters where the
/// bottleneck's queue is on the sending host (a `tc` shaper on the sender's egress, as in
/// Guerrero Viveros 2019 §5.2.3, seed 000): there a bulk flow keeps only a couple of packets in
/// the bottleneck queue instead of filling it. Here the host's queue is the flow's first link,
/// or a Wi-Fi station's MAC queues, which a packet leaves when the AP acknowledges it.
#[derive(Debug)]
struct SmallQueues {
    /// The time at the pacing rate the limit grows to: `sk_pacing_rate >> sk_pacing_shift`.
    pacing_time: Duration,
    /// Bytes of this flow in the first link's queue or being serialised onto it.
    queued: DataSize,
    /// A packet left the host while the flow was throttled: send again at this instant.
    resume: Option<Instant>,
    throttled: bool,
}

/// The TSQ limit's floor: two full packets (Linux: 2 × the skb's truesize).
const TSQ_MIN_PACKETS: u64 = 2;
/// The time at the pacing rate the limit grows to at higher rates (Linux:
/// `sk_pacing_rate >> sk_pacing_shift`, shift 10: 1/1024 s).
pub const TSQ_PACING_TIME: Duration = Duration::from_micros(977);
/// The same through a Wi-Fi interface: mac80211 sets the socket's pacing shift to 7 (8 ms,
/// `tx_sk_pacing_shift`, Linux 5.1 on), so that a station queues enough for its A-MPDUs.
pub const TSQ_WIFI_PACING_TIME: Duration = Duration::from_micros(7813);
/// `net.ipv4.tcp_limit_output_bytes`' default: the limit's ceiling.
const TSQ_MAX_BYTES: DataSize = DataSize::bytes(1 << 20);

impl TcpSource {
    pub fn new(sender: TcpSender, app: Option<OnOff>, start: Instant, stop: Instant, out: Plumbing) -> Self {
        Self {
            sender,
            app,
            start,
            stop,
            started: false,
            out,
            small_queues: None,
            bursts: Vec::new(),
            outbox: Vec::new(),
        }
    }

    /// Applies TCP Small Queues to this flow's first link (see [`SmallQueues`]), growing with
    /// `pacing_time` at the pacing rate ([`TSQ_PACING_TIME`], [`TSQ_WIFI_PACING_TIME`]); the
    /// world reports what leaves the host with [`TcpSource::on_left_host`].
    pub fn with_small_queues(mut self, pacing_time: Duration) -> Self {
        self.small_queues =
            Some(SmallQueues { pacing_time, queued: DataSize::ZERO, resume: None, throttled: false });
        self
    }

    /// Whether the flow applies TCP Small Queues.
    pub fn has_small_queues(&self) -> bool {
        self.small_queues.is_some()
    }

    /// A packet of this flow left its host (serialised onto the first link, or dropped there).
    pub fn on_left_host(&mut self, now: Instant, size: DataSize) {
        if let Some(tsq) = &mut self.small_queues {
            tsq.queued = tsq.queued.saturating_sub(size);
            if tsq.throttled && now < self.stop {
                tsq.resume = Some(now);
            }
        }
    }

    /// max(2 packets, ~1 ms (8 ms from a Wi-Fi station) at the pacing rate), at most 1 MiB.
    fn small_queue_limit(&self) -> DataSize {
        let smss = self.sender.config().smss;
        let full = IPV4_HEADER + DataSize::bytes(TCP_HEADER_LEN as u64) + smss;
        let floor = full * TSQ_MIN_PACKETS;
        let pacing_time = self.small_queues.as_ref().map_or(TSQ_PACING_TIME, |q| q.pacing_time);
        let paced = self.sender.pacing_rate().map_or(DataSize::ZERO, |r| r * pacing_time);
        floor.max(paced).min(TSQ_MAX_BYTES)
    }

    pub fn poll_timeout(&self) -> Instant {
        let next = if self.started {
            [
                self.sender.poll_timeout(),
                self.app.as_ref().and_then(OnOff::poll_timeout),
                self.small_queues.as_ref().and_then(|q| q.resume),
            ]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(Instant::FAR_FUTURE)
        } else {
            self.start
        };
        if next >= self.stop {
            Instant::FAR_FUTURE
        } else {
            next
        }
    }

    pub fn on_timeout(&mut self, now: Instant) {
        if now < self.start || now >= self.stop {
            return;
        }
        self.started = true;
        if let Some(tsq) = &mut self.small_queues {
            tsq.resume = tsq.resume.filter(|&t| t > now);
        }
        if let Some(size) = self.app.as_mut().and_then(|a| a.on_timeout(now)) {
            self.sender.write(size);
        }
        if self.sender.poll_timeout().is_some_and(|t| t <= now) {
            self.sender.on_timeout(now);
        }
        self.transmit(now);
    }

    /// An ACK arrived.
    pub fn on_packet(&mut self, now: Instant, pkt: &Packet) {
        if now >= self.stop {
            return;
        }
        // Our own receiver's headers always parse; anything else is ignored, never a panic.
        let Ok(header) = TcpRepr::parse(&pkt.data) else { return };
        self.sender.on_ack(now, &header);
        while let Some(SenderEvent::AllAcked { at, .. }) = self.sender.poll_event() {
            if let Some(burst) = self.app.as_mut().and_then(|a| a.on_all_acked(at)) {
                self.bursts.push(burst);
            }
        }
        self.transmit(now);
    }

    /// Sends what the windows allow and, with TCP Small Queues, what the host queue allows.
    fn transmit(&mut self, now: Instant) {
        loop {
            if let Some(tsq) = &self.small_queues {
                let throttled = tsq.queued >= self.small_queue_limit();
                if throttled {
                    self.sender.on_throttled();
                }
                if let Some(tsq) = &mut self.small_queues {
                    tsq.throttled = throttled;
                }
                if throttled {
                    return;
                }
            }
            let Some(seg) = self.sender.poll_transmit(now) else { return };
            let pkt = segment_packet(now, self.out, seg);
            if let Some(tsq) = &mut self.small_queues {
                tsq.queued += pkt.size;
            }
            self.outbox.push(pkt);
        }
    }
}

/// The receiving end of a TCP flow.
pub struct TcpSink {
    receiver: TcpReceiver,
    out: Plumbing,
    pub outbox: Vec<Packet>,
}

impl TcpSink {
    pub fn new(cfg: ReceiverConfig, out: Plumbing) -> Self {
        Self { receiver: TcpReceiver::new(cfg), out, outbox: Vec::new() }
    }

    pub fn poll_timeout(&self) -> Instant {
        self.receiver.poll_timeout().unwrap_or(Instant::FAR_FUTURE)
    }

    pub fn on_timeout(&mut self, now: Instant) {
        self.receiver.on_timeout(now);
        self.transmit(now);
    }

    /// A data segment arrived.
    pub fn on_packet(&mut self, now: Instant, pkt: &Packet) {
        let Ok(header) = TcpRepr::parse(&pkt.data) else { return };
        self.receiver.on_segment(now, &header, pkt.payload, pkt.ecn);
        self.transmit(now);
    }

    fn transmit(&mut self, now: Instant) {
        while let Some(seg) = self.receiver.poll_transmit(now) {
            self.outbox.push(segment_packet(now, self.out, seg));
        }
    }
}

/// A CBR UDP flow; its packets carry no header bytes of interest (the payload is a length).
pub struct CbrFlow {
    source: CbrSource,
    out: Plumbing,
    pub outbox: Vec<Packet>,
}

impl CbrFlow {
    pub fn new(source: CbrSource, out: Plumbing) -> Self {
        Self { source, out, outbox: Vec::new() }
    }

    pub fn poll_timeout(&self) -> Instant {
        self.source.poll_timeout().unwrap_or(Instant::FAR_FUTURE)
    }

    pub fn on_timeout(&mut self, now: Instant) {
        while self.source.on_timeout(now) {
            let size = self.source.packet_size();
            self.outbox.push(Packet {
                id: 0,
                flow: self.out.flow,
                kind: PacketKind::Cbr,
                size,
                payload: size.saturating_sub(UDP_IPV4_HEADERS),
                sent_at: now,
                route: self.out.route,
                hop: 0,
                data: Vec::new(),
                seq: None,
                frame: None,
                ecn: Ecn::NotEct,
            });
        }
    }
}
