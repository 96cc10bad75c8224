//! How a packet crosses the network: from its sender through the elements of its route, hop by
//! hop, to the endpoint at its end; what the trace records on the way, and when a TCP source
//! under small queues may send again.

use rtcbench_net::{Element, ElementHop, HostRelease};
use rtcbench_units::{DataSize, Instant};

use super::capture::{Captured, CapturedTransport};
use super::network::{on_element, Network};
use super::{Event, World};
use crate::call::{incoming, CallTrace, SfuTrace};
use crate::packet::{DropReason, FlowId, LinkId, Packet, PacketKind};
use crate::trace::PacketEvent;
use crate::traffic::tcp::wire::IPV4_HEADER;

/// Where a route ends.
#[derive(Clone, Copy, Debug)]
pub(super) enum Endpoint {
    Sender(u32),
    Receiver(u32),
    /// An SFU, receiving a publisher's stream.
    Forwarder(u32),
    /// An SFU, receiving the RTCP of one of its downlinks' viewers: (forwarder, downlink).
    Downlink(u32, u16),
    /// A TCP sender, receiving ACKs.
    TcpSource(u32),
    TcpSink(u32),
    /// Packets that only need to arrive (CBR).
    Sink,
}

pub(super) struct Route {
    pub(super) hops: Vec<ElementHop>,
    pub(super) dest: Endpoint,
    /// First and last node (indices into `Meta::nodes`), for captures.
    pub(super) src_node: u16,
    pub(super) dst_node: u16,
    /// Bytes the route adds to every packet on the wire: a TURN relay's ChannelData header.
    pub(super) framing: DataSize,
}

/// Whose controller traces a receiver's receive-side estimator.
#[derive(Clone, Copy, Debug)]
pub(super) enum Peer {
    /// A call's sender.
    Sender(u32),
    /// An SFU's downlink: (forwarder, downlink).
    Downlink(u32, usize),
}

impl World {
    /// A packet leaves its sender.
    pub(super) fn transmit(&mut self, now: Instant, mut pkt: Packet) {
        pkt.id = self.next_packet_id;
        self.next_packet_id += 1;
        pkt.hop = 0;
        let framing = self.routes[pkt.route as usize].framing;
        if !framing.is_zero() {
            pkt.size += framing;
        }
        self.trace.packet(now, PacketEvent::Sent, &pkt, None);
        if let Some(capture) = &mut self.capture {
            let route = &self.routes[pkt.route as usize];
            let (transport, headers) = match pkt.kind {
                PacketKind::Media
                | PacketKind::Padding
                | PacketKind::Rtx
                | PacketKind::Fec
                | PacketKind::Rtcp => (CapturedTransport::RtpUdp, rtcbench_wire::rtp::IPV4_UDP_OVERHEAD),
                PacketKind::Tcp | PacketKind::TcpAck => (CapturedTransport::Tcp, IPV4_HEADER),
                PacketKind::Cbr => (CapturedTransport::CbrUdp, rtcbench_wire::rtp::IPV4_UDP_OVERHEAD),
            };
            capture.push(Captured {
                t: now,
                src: route.src_node,
                dst: route.dst_node,
                transport,
                ecn: pkt.ecn.bits(),
                data: pkt.data.clone(),
                // Everything after the header bytes: media payload, the RTX payload of a probe,
                // TCP or CBR payload (the endpoints' packets, without a relay's framing).
                payload: pkt.size.saturating_sub(headers + framing + DataSize::bytes(pkt.data.len() as u64)),
            });
        }
        self.enter_hop(now, pkt);
    }

    /// A packet enters the element of its route's current hop. One its host hands over may
    /// leave the host at once (`HostRelease::Accepted`).
    fn enter_hop(&mut self, now: Instant, pkt: Packet) {
        let step = self.routes[pkt.route as usize].hops[pkt.hop as usize];
        on_element!(self, step.element, |i, element| self.enter(now, step, i, element, pkt))
    }

    /// [`World::enter_hop`] into `step`'s element, which is `element(net, i)`.
    fn enter<E: Element<Packet> + ?Sized>(
        &mut self,
        now: Instant,
        step: ElementHop,
        i: u32,
        element: fn(&mut Network, u32) -> &mut E,
        pkt: Packet,
    ) {
        let (first, flow, size) = (pkt.hop == 0, pkt.flow, pkt.size);
        match element(&mut self.net, i).push(now, step.from, step.to, pkt) {
            Err((pkt, reason)) => {
                let queue = element(&mut self.net, i).queue_of(step.from, step.to);
                let at = self.net.beside[step.element as usize].first_queue + queue;
                self.dropped(now, at, &pkt, reason)
            }
            Ok(()) if first && self.net.beside[step.element as usize].release == HostRelease::Accepted => {
                self.left_host(now, flow, size)
            }
            Ok(()) => {}
        }
        self.wake_element(step.element, i, element);
    }

    /// A packet dropped at `l`; at its route's first hop, it left its host.
    pub(super) fn dropped(&mut self, now: Instant, l: LinkId, pkt: &Packet, reason: DropReason) {
        self.trace.packet(now, PacketEvent::Dropped, pkt, Some((l, reason)));
        if pkt.hop == 0 {
            self.left_host(now, pkt.flow, pkt.size);
        }
    }

    /// A packet left its host's interface (serialised or dropped there): a TCP source under
    /// TCP Small Queues may send more. It sends in its own event, not from inside the link's.
    pub(super) fn left_host(&mut self, now: Instant, flow: FlowId, size: DataSize) {
        if let Some(&Some(i)) = self.small_queues.get(flow as usize) {
            self.tcp_sources[i as usize].on_left_host(now, size);
            self.wake(Event::TcpSource(i));
        }
    }

    /// A packet reached the end of a link: next link or its destination.
    pub(super) fn forward(&mut self, now: Instant, mut pkt: Packet) {
        pkt.hop += 1;
        let route = &self.routes[pkt.route as usize];
        if (pkt.hop as usize) < route.hops.len() {
            self.enter_hop(now, pkt);
            return;
        }
        self.trace.packet(now, PacketEvent::Received, &pkt, None);
        let framing = route.framing;
        match route.dest {
            Endpoint::Sender(i) => {
                let obs = &mut CallTrace {
                    trace: &mut self.trace,
                    plumbing: &self.plumbings[i as usize],
                    mirrors: &self.frame_mirrors[i as usize],
                };
                self.senders[i as usize].on_rtcp(now, incoming(&pkt, framing), obs);
                self.flush_sender(now, i);
            }
            Endpoint::Receiver(i) => {
                let obs = &mut CallTrace {
                    trace: &mut self.trace,
                    plumbing: &self.receiver_plumbings[i as usize],
                    mirrors: &[],
                };
                self.receivers[i as usize].on_packet(now, incoming(&pkt, framing), obs);
                self.flush_receiver(now, i);
            }
            Endpoint::Forwarder(i) => {
                let obs =
                    &mut SfuTrace { trace: &mut self.trace, plumbing: &self.forwarder_plumbings[i as usize] };
                self.forwarders[i as usize].on_publisher_packet(now, incoming(&pkt, framing), obs);
                self.flush_forwarder(now, i);
            }
            Endpoint::Downlink(i, leg) => {
                let obs =
                    &mut SfuTrace { trace: &mut self.trace, plumbing: &self.forwarder_plumbings[i as usize] };
                self.forwarders[i as usize].on_viewer_rtcp(now, leg as usize, incoming(&pkt, framing), obs);
                self.flush_forwarder(now, i);
            }
            Endpoint::TcpSource(i) => {
                self.tcp_sources[i as usize].on_packet(now, &pkt);
                self.flush(now, Event::TcpSource(i));
            }
            Endpoint::TcpSink(i) => {
                self.tcp_sinks[i as usize].on_packet(now, &pkt);
                self.flush(now, Event::TcpSink(i));
            }
            Endpoint::Sink => {}
        }
    }
}
