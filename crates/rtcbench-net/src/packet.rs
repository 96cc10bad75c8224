//! What an element needs of the packets it carries ([`NetPacket`]), and why it drops one
//! ([`DropReason`]).

use rtcbench_units::DataSize;
use rtcbench_wire::Ecn;

/// A packet as a network element sees it: how long it is, which flow it belongs to, and its ECN
/// field. The simulator's packet implements it with fields; a raw IP packet ([`crate::IpFrame`])
/// from its header bytes. Elements are generic over it, as str0m's `netem` is over its `WithLen`
/// and smoltcp's `FaultInjector` over a device, so both pass through the same code.
pub trait NetPacket {
    /// Bytes on the wire: what serialisation takes time for and what buffer limits count.
    fn size(&self) -> DataSize;
    /// The packet's flow (equal for every packet of one flow); FQ-CoDel hashes it into one of its
    /// queues (RFC 8290 §4.1).
    fn flow_key(&self) -> FlowKey;
    /// The ECN field of the IP header (RFC 3168 §5).
    fn ecn(&self) -> Ecn;
    /// Rewrites the ECN field: a marking queue sets CE (RFC 3168 §5).
    fn set_ecn(&mut self, ecn: Ecn);
    /// The DSCP of the IP header (RFC 2474 §3), from which a Wi-Fi MAC chooses the packet's
    /// access category ([`crate::radio::wifi::AccessCategory::from_dscp`]). Packets that do not
    /// model it are default forwarding, DSCP 0 (best effort).
    fn dscp(&self) -> u8 {
        0
    }
}

/// Identifies a flow: the simulator's flow id, or a hash of an IP packet's 5-tuple. Only
/// equality matters; FQ-CoDel mixes it with its own perturbation before choosing a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey(pub u64);

/// Why the network dropped a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// The queue had no room for it on arrival.
    QueueFull,
    /// The link's random loss process chose it.
    RandomLoss,
    /// An AQM's control law chose it: CoDel at dequeue, PIE at enqueue.
    Aqm,
    /// The buffer was full and FQ-CoDel dropped it from the head of its fattest flow queue
    /// (RFC 8290 §4.1) to make room for an arrival.
    Overflow,
    /// A Wi-Fi MAC gave up on it after its last allowed transmission attempt (the retry limit,
    /// dot11ShortRetryLimit in IEEE 802.11-2020).
    RetryLimit,
    /// It waited in a Wi-Fi MAC queue longer than the queue's lifetime limit (ns-3's
    /// `WifiMacQueue::MaxDelay`, 802.11's MSDU lifetime), or in an LTE RLC buffer longer than
    /// PDCP's discard timer (TS 36.323 §5.4).
    Lifetime,
    /// An LTE transport block carrying part of it failed its last HARQ transmission (TS 36.321
    /// §5.3.2.2, §5.4.2.2; 4 transmissions in ns-3).
    HarqFailure,
}

impl DropReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::QueueFull => "queue_full",
            Self::RandomLoss => "random_loss",
            Self::Aqm => "aqm",
            Self::Overflow => "overflow",
            Self::RetryLimit => "retry_limit",
            Self::Lifetime => "lifetime",
            Self::HarqFailure => "harq_failure",
        }
    }
}
