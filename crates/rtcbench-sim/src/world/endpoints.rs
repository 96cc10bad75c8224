//! The endpoints' side of the drive loop: what a call's sender or receiver, an SFU's forwarder
//! or a cross-traffic source emitted goes onto its route, and its next wake-up is scheduled.

use rtcbench_rtp::sfu::Toward;
use rtcbench_units::Instant;

use super::{Event, Peer, World};
use crate::call::CallTrace;
use crate::packet::Packet;

/// Hands an element the buffer its outbox was emptied from, so that its next packets need no
/// allocation, unless it emitted more meanwhile (a packet sent may let TCP send again).
fn give_back<T>(outbox: &mut Vec<T>, emptied: Vec<T>) {
    if outbox.is_empty() {
        *outbox = emptied;
    }
}

impl World {
    /// Sends what a cross-traffic element emitted and schedules its next wake-up.
    pub(super) fn flush(&mut self, now: Instant, ev: Event) {
        let mut out = std::mem::take(self.cross_outbox(ev));
        for p in out.drain(..) {
            self.transmit(now, p);
        }
        give_back(self.cross_outbox(ev), out);
        self.wake(ev);
    }

    fn cross_outbox(&mut self, ev: Event) -> &mut Vec<Packet> {
        match ev {
            Event::TcpSource(i) => &mut self.tcp_sources[i as usize].outbox,
            Event::TcpSink(i) => &mut self.tcp_sinks[i as usize].outbox,
            Event::Cbr(i) => &mut self.cbrs[i as usize].outbox,
            _ => unreachable!("calls have their own outboxes"),
        }
    }

    pub(super) fn flush_sender(&mut self, now: Instant, i: u32) {
        let mut out = std::mem::take(&mut self.senders[i as usize].outbox);
        let plumbing = self.plumbings[i as usize];
        for o in out.drain(..) {
            self.transmit(now, plumbing.packet(now, o, true));
        }
        give_back(&mut self.senders[i as usize].outbox, out);
        self.wake(Event::Sender(i));
    }

    pub(super) fn flush_receiver(&mut self, now: Instant, i: u32) {
        let decided = self.receivers[i as usize].take_decision();
        if let Some(m) = self.receivers[i as usize].estimator_metrics() {
            match self.receiver_peers[i as usize] {
                Peer::Sender(s) => {
                    let sender = &mut self.senders[s as usize];
                    sender.set_remote_metrics(Some(m));
                    if decided {
                        let obs = &mut CallTrace {
                            trace: &mut self.trace,
                            plumbing: &self.plumbings[s as usize],
                            mirrors: &self.frame_mirrors[s as usize],
                        };
                        sender.record_remote_decision(now, obs);
                    }
                }
                Peer::Downlink(f, leg) => self.forwarders[f as usize].set_remote_metrics(leg, Some(m)),
            }
        }
        let mut out = std::mem::take(&mut self.receivers[i as usize].outbox);
        let plumbing = self.receiver_plumbings[i as usize];
        for o in out.drain(..) {
            self.transmit(now, plumbing.packet(now, o, false));
        }
        give_back(&mut self.receivers[i as usize].outbox, out);
        self.wake(Event::Receiver(i));
    }

    /// Sends what an SFU's forwarder emitted: to the publisher on the publish call's way back,
    /// to a viewer on its forward leg.
    pub(super) fn flush_forwarder(&mut self, now: Instant, f: u32) {
        if let Some(m) = self.forwarders[f as usize].uplink_estimator_metrics() {
            self.senders[self.forwarder_senders[f as usize] as usize].set_remote_metrics(Some(m));
        }
        let mut out = std::mem::take(&mut self.forwarders[f as usize].outbox);
        for (to, o) in out.drain(..) {
            let plumbing = &self.forwarder_plumbings[f as usize];
            let pkt = match to {
                Toward::Publisher => plumbing.uplink.packet(now, o, false),
                Toward::Viewer(leg) => plumbing.legs[leg].packet(now, o, true),
            };
            self.transmit(now, pkt);
        }
        give_back(&mut self.forwarders[f as usize].outbox, out);
        self.wake(Event::Forwarder(f));
    }
}
