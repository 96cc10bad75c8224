//! The event heap: events ordered by (time, insertion sequence), so events due at the same
//! instant run in the order they were scheduled (FIFO, as SimPy does) and a run is
//! deterministic.
//!
//! Beside the heap, a few *slots* each hold at most one pending event: for an element that
//! wakes far more often than the others (a Wi-Fi BSS wakes at every backoff end, PPDU end and
//! response), a slot saves a heap push and pop per wake-up, and an earlier wake-up replaces a
//! later one instead of leaving it to fire for nothing. Slot events take their sequence number
//! from the same counter, so they interleave with the heap's in the same (time, sequence) order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rtcbench_units::Instant;

struct Entry<E> {
    at: Instant,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

/// A min-heap of events keyed by (time, sequence number).
pub struct Scheduler<E> {
    heap: BinaryHeap<Reverse<Entry<E>>>,
    /// At most one pending event per slot.
    slots: Vec<Option<Entry<E>>>,
    next_seq: u64,
    now: Instant,
}

impl<E> Default for Scheduler<E> {
    fn default() -> Self {
        Self { heap: BinaryHeap::new(), slots: Vec::new(), next_seq: 0, now: Instant::ZERO }
    }
}

impl<E> Scheduler<E> {
    pub fn new() -> Self {
        Self::default()
    }

    /// The time of the event last popped.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Schedules `event` at `at`; an event in the past runs at the current time (time never
    /// goes backwards).
    pub fn schedule(&mut self, at: Instant, event: E) {
        let at = at.max(self.now);
        self.heap.push(Reverse(Entry { at, seq: self.next_seq, event }));
        self.next_seq += 1;
    }

    /// A new slot, empty; returns its index for [`Scheduler::schedule_in_slot`].
    pub fn add_slot(&mut self) -> usize {
        self.slots.push(None);
        self.slots.len() - 1
    }

    /// Schedules `event` at `at` in `slot` unless the slot already holds an event due no later:
    /// an element's next wake-up only ever moves earlier until it fires.
    ///
    /// # Panics
    /// If `slot` was not made by [`Scheduler::add_slot`].
    pub fn schedule_in_slot(&mut self, slot: usize, at: Instant, event: E) {
        let at = at.max(self.now);
        if self.slots[slot].as_ref().is_some_and(|e| e.at <= at) {
            return;
        }
        self.slots[slot] = Some(Entry { at, seq: self.next_seq, event });
        self.next_seq += 1;
    }

    /// The instant `slot`'s event is due, if it holds one.
    pub fn slot_time(&self, slot: usize) -> Option<Instant> {
        self.slots[slot].as_ref().map(|e| e.at)
    }

    /// The next event and its time, advancing the clock.
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        self.take_next(None)
    }

    /// The next event and its time if it is due at or before `limit`, advancing the clock; `None`
    /// (and the clock unchanged) otherwise. A run advanced in steps pops exactly the events a run
    /// to the last step's limit would.
    pub fn pop_due(&mut self, limit: Instant) -> Option<(Instant, E)> {
        self.take_next(Some(limit))
    }

    /// The next event, from the earliest slot or the heap (one look at each), unless it comes
    /// after `limit`.
    fn take_next(&mut self, limit: Option<Instant>) -> Option<(Instant, E)> {
        let heap = self.heap.peek().map(|Reverse(h)| h);
        let slot = self.earliest_slot().filter(|&i| heap.is_none_or(|h| self.slots[i].as_ref() < Some(h)));
        let at = match slot {
            Some(i) => self.slots[i].as_ref().expect("an occupied slot").at,
            None => heap?.at,
        };
        if limit.is_some_and(|l| at > l) {
            return None;
        }
        let e = match slot {
            Some(i) => self.slots[i].take().expect("an occupied slot"),
            None => self.heap.pop().expect("a pending event").0,
        };
        self.now = e.at;
        Some((e.at, e.event))
    }

    /// Pending events, in the heap and the slots.
    pub fn len(&self) -> usize {
        self.heap.len() + self.slots.iter().filter(|s| s.is_some()).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The occupied slot whose event comes first.
    fn earliest_slot(&self) -> Option<usize> {
        let mut best: Option<(usize, &Entry<E>)> = None;
        for (i, e) in self.slots.iter().enumerate() {
            if let Some(e) = e {
                if best.is_none_or(|(_, b)| e < b) {
                    best = Some((i, e));
                }
            }
        }
        best.map(|(i, _)| i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_time_then_insertion() {
        let mut s = Scheduler::new();
        s.schedule(Instant::from_millis(5), "c");
        s.schedule(Instant::from_millis(1), "a");
        s.schedule(Instant::from_millis(5), "d");
        s.schedule(Instant::from_millis(1), "b");
        let order: Vec<_> = std::iter::from_fn(|| s.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, ["a", "b", "c", "d"]);
    }

    #[test]
    fn pops_only_what_is_due() {
        let mut s = Scheduler::new();
        s.schedule(Instant::from_millis(5), "b");
        s.schedule(Instant::from_millis(1), "a");
        assert_eq!(s.pop_due(Instant::from_millis(4)), Some((Instant::from_millis(1), "a")));
        assert_eq!(s.pop_due(Instant::from_millis(4)), None);
        assert_eq!(s.now(), Instant::from_millis(1));
        assert_eq!(s.pop_due(Instant::from_millis(5)), Some((Instant::from_millis(5), "b")));
        assert_eq!(s.pop_due(Instant::FAR_FUTURE), None);
    }

    #[test]
    fn slot_events_interleave_with_the_heap_in_scheduling_order() {
        let mut s = Scheduler::new();
        let slot = s.add_slot();
        s.schedule(Instant::from_millis(5), "c");
        s.schedule_in_slot(slot, Instant::from_millis(5), "d");
        s.schedule(Instant::from_millis(5), "e");
        s.schedule(Instant::from_millis(1), "a");
        assert_eq!(s.len(), 4);
        let order: Vec<_> = std::iter::from_fn(|| s.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, ["a", "c", "d", "e"]);
    }

    #[test]
    fn a_slot_keeps_only_its_earliest_event() {
        let mut s = Scheduler::new();
        let slot = s.add_slot();
        s.schedule_in_slot(slot, Instant::from_millis(7), "late");
        s.schedule_in_slot(slot, Instant::from_millis(3), "early");
        s.schedule_in_slot(slot, Instant::from_millis(4), "later than pending");
        assert_eq!(s.slot_time(slot), Some(Instant::from_millis(3)));
        assert_eq!(s.pop_due(Instant::from_millis(2)), None);
        assert_eq!(s.pop_due(Instant::from_millis(9)), Some((Instant::from_millis(3), "early")));
        assert_eq!(s.pop(), None);
        // Empty again: a later event is taken.
        s.schedule_in_slot(slot, Instant::from_millis(8), "next");
        assert_eq!(s.pop(), Some((Instant::from_millis(8), "next")));
    }

    #[test]
    fn never_goes_back_in_time() {
        let mut s = Scheduler::new();
        s.schedule(Instant::from_millis(10), 1);
        assert_eq!(s.pop(), Some((Instant::from_millis(10), 1)));
        s.schedule(Instant::from_millis(3), 2);
        assert_eq!(s.pop(), Some((Instant::from_millis(10), 2)));
    }
}
