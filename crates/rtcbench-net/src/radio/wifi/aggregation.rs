//! A-MPDU aggregation under a BlockAck agreement, and the receiver's reordering buffer
//! (802.11-2020 §10.12, §10.25; ns-3's `MpduAggregator` and `BlockAckManager`).
//!
//! An A-MPDU carries MPDUs for one receiver and one access category: as many as fit all of the
//! BlockAck window (64 sequence numbers from the oldest MPDU not yet acknowledged), the maximum
//! A-MPDU length, aPPDUMaxTime (5.484 ms) and, if the category has one, the TXOP limit. Its
//! MPDUs succeed or fail one by one and the BlockAck reports each; failed ones go again, first,
//! in a later A-MPDU. Agreements are taken as set up at association (no ADDBA exchange), and a
//! transmitter that gives up an MPDU moves the receiver's window on at once, as the BlockAckReq
//! it would send does (the BlockAckReq's own airtime is not modelled).
//!
//! The receiver hands MPDUs up in sequence order (the receive reordering of an HT-immediate
//! BlockAck agreement, as mac80211's reorder buffer does): one received after a gap waits for the missing one, or for the transmitter to
//! give it up. Duplicates (a retransmission whose first copy got through but whose
//! acknowledgement was lost) are discarded. A link without aggregation sends one MPDU at a time
//! and never has a gap.

use std::collections::VecDeque;

use rtcbench_units::DataSize;
use serde::{Deserialize, Serialize};

use super::dcf::AccessCategory;

/// Which access categories aggregate, and the A-MPDU limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AggregationConfig {
    /// Maximum A-MPDU length: 65 535 B for HT (aPSDUMaxLength, ns-3 `BE_MaxAmpduSize` default).
    pub max_length: DataSize,
    /// BlockAck window, in MPDUs: 64 for HT and VHT.
    pub window: u16,
    /// Whether BK, BE, VI, VO aggregate: ns-3 aggregates BE and VI only by default.
    pub categories: [bool; 4],
}

impl Default for AggregationConfig {
    /// ns-3's defaults (`wifi-mac.cc`).
    fn default() -> Self {
        Self { max_length: DataSize::bytes(65_535), window: 64, categories: [false, true, true, false] }
    }
}

impl AggregationConfig {
    pub fn aggregates(&self, ac: AccessCategory) -> bool {
        self.categories[ac.index()]
    }
}

/// One sequence number's place in the reordering window.
#[derive(Debug)]
enum Slot<T> {
    /// Not received yet.
    Missing,
    /// Received after a gap, waiting for it to close.
    Held(T),
    /// Given up by the transmitter.
    Skipped,
}

/// The receiver's reordering buffer of one (transmitter, receiver, access category).
#[derive(Debug)]
pub(crate) struct ReorderBuffer<T> {
    /// The next sequence number to hand up (sequence numbers are counted without the 12-bit
    /// wrap, which the simulation has no need of).
    next: u32,
    /// `window[i]` is sequence number `next + i`.
    window: VecDeque<Slot<T>>,
}

impl<T> Default for ReorderBuffer<T> {
    fn default() -> Self {
        Self { next: 0, window: VecDeque::new() }
    }
}

impl<T> ReorderBuffer<T> {
    /// An MPDU with sequence number `seq` arrived; returns it if it can go up now (the
    /// caller then drains [`ReorderBuffer::release`]), and keeps it otherwise.
    pub(crate) fn receive(&mut self, seq: u32, item: T) -> Option<T> {
        if seq == self.next && self.window.is_empty() {
            self.next += 1;
            return Some(item);
        }
        // Behind the window can only be what the transmitter gave up and sent anyway, which
        // it does not; hand it up rather than lose it.
        let Some(at) = seq.checked_sub(self.next) else { return Some(item) };
        let at = at as usize;
        if self.window.len() <= at {
            self.window.resize_with(at + 1, || Slot::Missing);
        }
        self.window[at] = Slot::Held(item);
        None
    }

    /// The transmitter gave up `seq`: the gap it leaves no longer holds anything back.
    pub(crate) fn skip(&mut self, seq: u32) {
        let Some(at) = seq.checked_sub(self.next) else { return };
        let at = at as usize;
        if self.window.len() <= at {
            self.window.resize_with(at + 1, || Slot::Missing);
        }
        if let Slot::Missing = self.window[at] {
            self.window[at] = Slot::Skipped;
        }
    }

    /// The next MPDU whose predecessors have all been handed up or given up.
    pub(crate) fn release(&mut self) -> Option<T> {
        loop {
            match self.window.front()? {
                Slot::Missing => return None,
                _ => {
                    self.next += 1;
                    if let Some(Slot::Held(item)) = self.window.pop_front() {
                        return Some(item);
                    }
                }
            }
        }
    }

    /// MPDUs waiting for a gap to close.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.window.iter().filter(|s| matches!(s, Slot::Held(_))).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(b: &mut ReorderBuffer<u32>) -> Vec<u32> {
        std::iter::from_fn(|| b.release()).collect()
    }

    #[test]
    fn mpdus_go_up_in_order_and_a_gap_waits() {
        let mut b = ReorderBuffer::default();
        assert_eq!(b.receive(0, 0), Some(0));
        assert_eq!(b.receive(2, 2), None);
        assert_eq!(b.receive(3, 3), None);
        assert_eq!(drain(&mut b), Vec::<u32>::new(), "1 is missing");
        assert_eq!(b.held(), 2);
        assert_eq!(b.receive(1, 1), None);
        assert_eq!(drain(&mut b), [1, 2, 3]);
        assert_eq!(b.receive(4, 4), Some(4));
    }

    #[test]
    fn a_given_up_mpdu_releases_those_behind_it() {
        let mut b = ReorderBuffer::default();
        assert_eq!(b.receive(1, 1), None);
        b.skip(0);
        assert_eq!(drain(&mut b), [1]);
        // Skipping what already went up, or what is held, changes nothing.
        b.skip(0);
        assert_eq!(b.receive(3, 3), None);
        b.skip(3);
        b.skip(2);
        assert_eq!(drain(&mut b), [3]);
        assert_eq!(b.receive(4, 4), Some(4));
    }
}
