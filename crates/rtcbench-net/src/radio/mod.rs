//! Shared media: one element with several attachment points (ports), so a route crosses it as
//! (element, port in, port out) rather than as a point-to-point link. [`wifi`]: one IEEE 802.11
//! BSS. [`lte`]: one LTE FDD cell (eNB and UEs).

pub mod lte;
pub mod sample;
pub mod wifi;

use std::collections::VecDeque;

use rtcbench_units::Instant;

/// The front of a medium's output queue, ordered by the instant each packet reaches its port, if
/// it is due by `now`: what a medium's `poll_output(now)` returns.
fn pop_due<A, B>(queue: &mut VecDeque<(Instant, A, B)>, now: Instant) -> Option<(Instant, A, B)> {
    if queue.front().is_some_and(|(t, _, _)| *t <= now) {
        queue.pop_front()
    } else {
        None
    }
}
