//! The sender's side of per-packet feedback: it numbers outgoing packets with the transport-wide
//! sequence number, remembers what it sent, and turns parsed feedback, transport-wide
//! (draft-holmer-rmcat-transport-wide-cc-extensions-01) or RFC 8888, into [`PacketResult`]
//! batches while tracking the bytes in flight (libwebrtc's `TransportFeedbackAdapter`, which
//! serves both formats the same way).

use std::collections::VecDeque;

use rtcbench_units::{DataSize, Duration, Instant, SeqNo, SeqUnwrapper};
use rtcbench_wire::rtcp::ccfb::{CcfbMetric, CcfbRepr};
use rtcbench_wire::rtcp::twcc::TransportFeedbackRepr;

use crate::feedback::{Ecn, FeedbackReport, PacketResult, ProbeInfo, SentPacket};

/// How long the sender remembers a packet waiting for feedback (libwebrtc
/// `kSendTimeHistoryWindow`).
pub const SEND_HISTORY_WINDOW: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug)]
struct SentRecord {
    size: DataSize,
    sent_at: Instant,
    is_audio: bool,
    probe: Option<ProbeInfo>,
    /// (SSRC, unwrapped RTP sequence number), the key RFC 8888 reports use.
    stream: Option<(u32, i64)>,
    /// Reported received; later reports of it are ignored.
    acked: bool,
    /// Counted in bytes in flight (neither acknowledged nor reported lost yet).
    in_flight: bool,
}

/// The packets of one SSRC in the send history: (unwrapped RTP sequence number, transport
/// sequence number), in RTP order. Packets of a stream are sent in RTP order, so a new one goes
/// at the back and the oldest leaves from the front; a number sent again (a retransmission on
/// the media SSRC) takes the later transport sequence number.
#[derive(Debug)]
struct StreamLog {
    ssrc: u32,
    unwrapper: SeqUnwrapper<16>,
    sent: VecDeque<(i64, i64)>,
}

impl StreamLog {
    fn record(&mut self, rtp: i64, seq: i64) {
        if self.sent.back().is_none_or(|&(last, _)| last < rtp) {
            self.sent.push_back((rtp, seq));
            return;
        }
        match self.sent.binary_search_by_key(&rtp, |&(r, _)| r) {
            Ok(i) => self.sent[i].1 = seq,
            Err(i) => self.sent.insert(i, (rtp, seq)),
        }
    }

    fn forget(&mut self, rtp: i64) {
        if self.sent.front().is_some_and(|&(first, _)| first == rtp) {
            self.sent.pop_front();
        } else if let Ok(i) = self.sent.binary_search_by_key(&rtp, |&(r, _)| r) {
            self.sent.remove(i);
        }
    }

    fn transport_seq(&self, rtp: i64) -> Option<i64> {
        let i = self.sent.binary_search_by_key(&rtp, |&(r, _)| r).ok()?;
        Some(self.sent[i].1)
    }
}

/// Send history and feedback → [`PacketResult`]s.
#[derive(Debug, Default)]
pub struct TransportFeedbackAdapter {
    /// `history[i]` is the packet with transport sequence number `first_seq + i`.
    history: VecDeque<SentRecord>,
    first_seq: i64,
    next_seq: i64,
    in_flight: DataSize,
    unwrapper: SeqUnwrapper<16>,
    /// Per SSRC sent, the packets in the history by RTP sequence number, for RFC 8888.
    streams: Vec<StreamLog>,
    /// Receiver clock → sender timeline, fixed by the first feedback (libwebrtc maps the first
    /// feedback's base time to its local arrival and advances by base-time deltas after that).
    offset: Option<Duration>,
    /// Every packet numbered below this one has left the bytes in flight: feedback has covered
    /// it or a later one (`settle_through`).
    settled_below: i64,
}

impl TransportFeedbackAdapter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes sent and neither acknowledged nor reported lost.
    pub fn in_flight(&self) -> DataSize {
        self.in_flight
    }

    /// Numbers a packet about to be sent and records it; the result goes to the controller.
    /// `stream` is its (SSRC, RTP sequence number), for feedback that refers to packets that way.
    pub fn on_sent(
        &mut self,
        now: Instant,
        size: DataSize,
        is_audio: bool,
        probe: Option<ProbeInfo>,
        stream: Option<(u32, SeqNo<16>)>,
    ) -> SentPacket {
        while self.history.front().is_some_and(|r| now - r.sent_at > SEND_HISTORY_WINDOW) {
            let r = self.history.pop_front().expect("checked");
            if r.in_flight {
                self.in_flight -= r.size;
            }
            if let Some((ssrc, rtp)) = r.stream {
                self.stream(ssrc).forget(rtp);
            }
            self.first_seq += 1;
        }
        if self.history.is_empty() {
            self.first_seq = self.next_seq;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let stream = stream.map(|(ssrc, rtp_seq)| {
            let log = self.stream(ssrc);
            let rtp = log.unwrapper.unwrap(rtp_seq);
            log.record(rtp, seq);
            (ssrc, rtp)
        });
        self.history.push_back(SentRecord {
            size,
            sent_at: now,
            is_audio,
            probe,
            stream,
            acked: false,
            in_flight: true,
        });
        self.in_flight += size;
        SentPacket { seq, size, sent_at: now, is_audio, probe, data_in_flight: self.in_flight }
    }

    /// The log of SSRC `ssrc`, new if it sent nothing before (a call has a few SSRCs).
    fn stream(&mut self, ssrc: u32) -> &mut StreamLog {
        let i = match self.streams.iter().position(|l| l.ssrc == ssrc) {
            Some(i) => i,
            None => {
                self.streams.push(StreamLog {
                    ssrc,
                    unwrapper: SeqUnwrapper::default(),
                    sent: VecDeque::new(),
                });
                self.streams.len() - 1
            }
        };
        &mut self.streams[i]
    }

    /// The 16-bit sequence number to write into the packet's header extension.
    pub fn wire_seq(seq: i64) -> SeqNo<16> {
        SeqNo::new(seq as u64)
    }

    /// The result for the packet with transport sequence number `seq`, or `None` if it is unknown
    /// (too old) or already acknowledged. A packet reported lost and later received is reported
    /// again as received.
    fn resolve(
        &mut self,
        seq: i64,
        arrival: Option<Instant>,
        ecn: Ecn,
        offset: Duration,
    ) -> Option<PacketResult> {
        let idx = usize::try_from(seq - self.first_seq).ok().filter(|&i| i < self.history.len())?;
        let rec = &mut self.history[idx];
        if rec.acked {
            return None;
        }
        if rec.in_flight {
            rec.in_flight = false;
            self.in_flight -= rec.size;
        }
        rec.acked = arrival.is_some();
        Some(PacketResult {
            seq,
            size: rec.size,
            sent_at: rec.sent_at,
            arrival: arrival.map(|a| a + offset),
            ecn,
            is_audio: rec.is_audio,
            probe: rec.probe,
        })
    }

    /// Takes every packet numbered up to `seq` out of the bytes in flight, reported or not. A
    /// feedback message that was lost leaves its packets unreported for good (the next one starts
    /// where it ended), so a sender that waited for their reports would count them in flight until
    /// the send history forgets them, a minute later; libwebrtc's adapter likewise stops counting
    /// everything up to the newest packet feedback has covered. Without this, a call that had lost
    /// feedback behind a long queue kept a standing phantom in flight, and GoogCC's window pushback
    /// held its encoder down long after the queue was gone (`docs/controllers/gcc.md`).
    fn settle_through(&mut self, seq: i64) {
        let from = self.settled_below.max(self.first_seq);
        for s in from..=seq {
            let Some(rec) = usize::try_from(s - self.first_seq).ok().and_then(|i| self.history.get_mut(i))
            else {
                break;
            };
            if rec.in_flight {
                rec.in_flight = false;
                self.in_flight -= rec.size;
            }
        }
        self.settled_below = self.settled_below.max(seq + 1);
    }

    fn report(&mut self, mut packets: Vec<PacketResult>, covered: Option<i64>) -> FeedbackReport {
        if let Some(last) = covered {
            self.settle_through(last);
        }
        packets.sort_by_key(|p| p.seq);
        FeedbackReport { packets, data_in_flight: self.in_flight, ..FeedbackReport::default() }
    }

    /// Turns one transport-wide feedback packet into results, in sequence order.
    pub fn on_twcc(&mut self, now: Instant, fb: &TransportFeedbackRepr) -> FeedbackReport {
        let offset = *self.offset.get_or_insert(now - fb.reference_instant());
        let mut packets = Vec::with_capacity(fb.packets.len());
        let mut covered = None;
        for (seq, arrival) in fb.arrivals() {
            let seq = self.unwrapper.unwrap(seq);
            covered = covered.max(Some(seq));
            packets.extend(self.resolve(seq, arrival, Ecn::NotEct, offset));
        }
        self.report(packets, covered)
    }

    /// Turns one RFC 8888 report into results (with their ECN marks), in send order.
    pub fn on_ccfb(&mut self, now: Instant, fb: &CcfbRepr) -> FeedbackReport {
        let offset = *self.offset.get_or_insert(now - fb.report_instant());
        let mut packets = Vec::new();
        let mut covered = None;
        for (ssrc, rtp_seq, arrival) in fb.arrivals() {
            let Some(log) = self.streams.iter().find(|l| l.ssrc == ssrc) else { continue };
            let Some(seq) = log.transport_seq(log.unwrapper.peek(rtp_seq)) else { continue };
            covered = covered.max(Some(seq));
            let ecn = match arrival.map(|(_, e)| e) {
                Some(CcfbMetric::ECN_CE) => Ecn::Ce,
                Some(CcfbMetric::ECN_ECT0) => Ecn::Ect0,
                Some(CcfbMetric::ECN_ECT1) => Ecn::Ect1,
                _ => Ecn::NotEct,
            };
            packets.extend(self.resolve(seq, arrival.map(|(t, _)| t), ecn, offset));
        }
        self.report(packets, covered)
    }
}
