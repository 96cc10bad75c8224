//! The event heap: events ordered by (time, insertion sequence), so events due at the same
//! instant run in the order they were scheduled (FIFO, as SimPy does) and a run is
//! deterministic.

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
    next_seq: u64,
    now: Instant,
}

impl<E> Default for Scheduler<E> {
    fn default() -> Self {
        Self { heap: BinaryHeap::new(), next_seq: 0, now: Instant::ZERO }
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

    /// The next event and its time, advancing the clock.
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        let Reverse(e) = self.heap.pop()?;
        self.now = e.at;
        Some((e.at, e.event))
    }

    /// The next event and its time if it is due at or before `limit`, advancing the clock; `None`
    /// (and the clock unchanged) otherwise. A run advanced in steps pops exactly the events a run
    /// to the last step's limit would.
    pub fn pop_due(&mut self, limit: Instant) -> Option<(Instant, E)> {
        if self.peek_time()? > limit {
            return None;
        }
        self.pop()
    }

    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse(e)| e.at)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
    fn never_goes_back_in_time() {
        let mut s = Scheduler::new();
        s.schedule(Instant::from_millis(10), 1);
        assert_eq!(s.pop(), Some((Instant::from_millis(10), 1)));
        s.schedule(Instant::from_millis(3), 2);
        assert_eq!(s.pop(), Some((Instant::from_millis(10), 2)));
    }
}
