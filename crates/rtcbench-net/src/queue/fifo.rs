//! The packet store every discipline builds on: a first-in first-out line of packets stamped
//! with their arrival time (RFC 8289 §5.4 and RFC 8033 §4.3 both timestamp at enqueue), and its
//! byte count.

use std::collections::VecDeque;

use rtcbench_units::{DataSize, Duration, Instant};

use crate::packet::{DropReason, NetPacket};

/// A waiting packet and when it arrived.
pub(super) struct Queued<P> {
    pub(super) pkt: P,
    pub(super) enqueued_at: Instant,
}

impl<P> Queued<P> {
    /// How long the packet has waited by `now`.
    pub(super) fn sojourn(&self, now: Instant) -> Duration {
        now - self.enqueued_at
    }
}

pub(super) struct Fifo<P> {
    packets: VecDeque<Queued<P>>,
    bytes: DataSize,
}

impl<P> Default for Fifo<P> {
    fn default() -> Self {
        Self { packets: VecDeque::new(), bytes: DataSize::ZERO }
    }
}

impl<P: NetPacket> Fifo<P> {
    pub(super) fn push(&mut self, now: Instant, pkt: P) {
        self.bytes += pkt.size();
        self.packets.push_back(Queued { pkt, enqueued_at: now });
    }

    /// Drop-tail: appends the packet if it fits under the byte `limit`, else refuses it.
    pub(super) fn push_within(
        &mut self,
        now: Instant,
        pkt: P,
        limit: Option<DataSize>,
    ) -> Result<(), (P, DropReason)> {
        if !self.has_room(pkt.size(), limit) {
            return Err((pkt, DropReason::QueueFull));
        }
        self.push(now, pkt);
        Ok(())
    }

    pub(super) fn pop(&mut self) -> Option<Queued<P>> {
        let q = self.packets.pop_front()?;
        self.bytes -= q.pkt.size();
        Some(q)
    }

    /// How long the packet at the head has waited by `now` (zero when empty): RFC 9332's
    /// `q.time()`, which the DualQ's PI controller samples between dequeues.
    pub(super) fn head_sojourn(&self, now: Instant) -> Duration {
        self.packets.front().map_or(Duration::ZERO, |q| q.sojourn(now))
    }

    pub(super) fn bytes(&self) -> DataSize {
        self.bytes
    }

    pub(super) fn len(&self) -> usize {
        self.packets.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    /// Whether a packet of `size` fits under a byte `limit` (`None` = unlimited).
    pub(super) fn has_room(&self, size: DataSize, limit: Option<DataSize>) -> bool {
        limit.is_none_or(|limit| self.bytes + size <= limit)
    }
}
