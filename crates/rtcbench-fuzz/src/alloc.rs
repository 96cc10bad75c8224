//! A global allocator that counts live heap bytes and their peak, so that the runner can tell how
//! much one exec allocated (the goal is at most [`EXEC_LIMIT`]), and that stops the process
//! cleanly, with the input saved, before an input takes the machine's memory ([`HARD_LIMIT`]).

// GlobalAlloc is an unsafe trait: its methods hand out raw memory. They only forward to
// `System` and count.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::OnceLock;

/// An exec that allocates more than this at its peak is a finding.
pub const EXEC_LIMIT: usize = 64 << 20;

/// Live bytes beyond this end the process: the runner's hook saves the input first. An input
/// that passes [`EXEC_LIMIT`] is usually stopped here long before the host runs out of memory.
pub const HARD_LIMIT: usize = 1 << 30;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// Set once the hard limit was crossed: the hook itself allocates, and must not trip it again.
static OVER: AtomicBool = AtomicBool::new(false);
/// What to do when the hard limit is crossed (see [`set_hard_limit_hook`]).
static HOOK: OnceLock<fn(usize)> = OnceLock::new();

/// Counts what [`System`] hands out.
pub struct Counting;

impl Counting {
    /// Books `size` more live bytes; false if that crosses the hard limit (nothing is booked).
    fn grow(size: usize) -> bool {
        let live = LIVE.fetch_add(size, Relaxed).saturating_add(size);
        if live > HARD_LIMIT && !OVER.load(Relaxed) {
            LIVE.fetch_sub(size, Relaxed);
            return false;
        }
        PEAK.fetch_max(live, Relaxed);
        true
    }

    fn over_limit(size: usize) -> ! {
        OVER.store(true, Relaxed);
        if let Some(hook) = HOOK.get() {
            hook(size);
        }
        eprintln!("rtcbench-fuzz: an allocation of {size} bytes would pass {HARD_LIMIT} live bytes");
        std::process::exit(1);
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; the counters
// are atomics, so the bookkeeping is safe from any thread.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !Self::grow(layout.size()) {
            Self::over_limit(layout.size());
        }
        let p = System.alloc(layout);
        if p.is_null() {
            LIVE.fetch_sub(layout.size(), Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !Self::grow(layout.size()) {
            Self::over_limit(layout.size());
        }
        let p = System.alloc_zeroed(layout);
        if p.is_null() {
            LIVE.fetch_sub(layout.size(), Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = layout.size();
        if new_size > old && !Self::grow(new_size - old) {
            Self::over_limit(new_size);
        }
        let p = System.realloc(ptr, layout, new_size);
        if p.is_null() {
            if new_size > old {
                LIVE.fetch_sub(new_size - old, Relaxed);
            }
        } else if new_size < old {
            LIVE.fetch_sub(old - new_size, Relaxed);
        }
        p
    }
}

/// Live heap bytes now.
pub fn live() -> usize {
    LIVE.load(Relaxed)
}

/// Starts a new peak measurement from the bytes live now.
pub fn reset_peak() {
    PEAK.store(LIVE.load(Relaxed), Relaxed);
}

/// The most bytes live since [`reset_peak`].
pub fn peak() -> usize {
    PEAK.load(Relaxed)
}

/// `hook(size)` runs when an allocation would cross [`HARD_LIMIT`], before the process exits;
/// it may allocate. The first hook set stays.
pub fn set_hard_limit_hook(hook: fn(usize)) {
    let _ = HOOK.set(hook);
}
