//! Edge coverage from LLVM's SanitizerCoverage, on stable Rust.
//!
//! Built with `-C passes=sancov-module -C llvm-args=-sanitizer-coverage-level=3
//! -C llvm-args=-sanitizer-coverage-trace-pc-guard` (`fuzz.sh`), every crate of the binary calls
//! `__sanitizer_cov_trace_pc_guard(guard)` on each control-flow edge, and each object file calls
//! `__sanitizer_cov_trace_pc_guard_init(start, stop)` once at start-up with its guards. Those two
//! C functions are defined here: init numbers the guards, and each hit bumps the guard's 8-bit
//! counter and, on its first hit since the last [`take`], records the guard in a touched list,
//! so that collecting one exec's edges costs the edges it hit, not the size of the binary.
//!
//! Without those flags nothing calls either function, [`guards`] is 0 and the runner fuzzes
//! blind (the smoke test does).
//!
//! The callbacks read and write plain static memory without synchronisation: the instrumented
//! code runs on the fuzzing thread, and the runner's watchdog thread (also instrumented) only
//! ever adds a few stray, harmless counts. That is what libFuzzer and AFL do too; atomics would
//! put a locked instruction on every edge, and a method call here would itself be instrumented.

// The callbacks must have these exact C names (`#[no_mangle]`) and take raw pointers.
#![allow(unsafe_code)]

/// Guards beyond this many are ignored (the whole fuzz binary has a few hundred thousand).
const MAX_GUARDS: usize = 1 << 21;

static mut GUARDS: u32 = 0;
static mut COUNTS: [u8; MAX_GUARDS] = [0; MAX_GUARDS];
static mut TOUCHED: [u32; MAX_GUARDS] = [0; MAX_GUARDS];
static mut TOUCHED_LEN: usize = 0;

/// Numbers the guards of one object file from 1 (0 means "not numbered"); the same range may
/// be passed twice.
///
/// # Safety
///
/// Called by the instrumented code's constructors with a valid `[start, stop)` range.
#[no_mangle]
pub unsafe extern "C" fn __sanitizer_cov_trace_pc_guard_init(start: *mut u32, stop: *mut u32) {
    if start == stop || *start != 0 {
        return;
    }
    let mut p = start;
    while p < stop {
        GUARDS += 1;
        *p = GUARDS;
        p = p.wrapping_add(1);
    }
}

/// One edge was taken. Only operators here: a call to an instrumented function would recurse.
///
/// # Safety
///
/// Called by instrumented code with a guard that init has numbered (or left at 0).
#[no_mangle]
pub unsafe extern "C" fn __sanitizer_cov_trace_pc_guard(guard: *const u32) {
    let i = *guard as usize;
    if i == 0 || i >= MAX_GUARDS {
        return;
    }
    let c = COUNTS[i];
    if c == 0 {
        let n = TOUCHED_LEN;
        if n < MAX_GUARDS {
            TOUCHED[n] = i as u32;
            TOUCHED_LEN = n + 1;
        }
    }
    if c != u8::MAX {
        COUNTS[i] = c + 1;
    }
}

/// The number of guards (edges) in the binary; 0 if it was not built with coverage.
pub fn guards() -> usize {
    // SAFETY: a plain read of a counter only init writes, before main.
    unsafe { (GUARDS as usize).min(MAX_GUARDS - 1) }
}

/// Forgets the edges hit so far (by the runner itself, between execs).
pub fn clear() {
    take(|_, _| {});
}

/// Calls `f(guard, hits)` for every edge hit since the last call and resets them.
pub fn take(mut f: impl FnMut(usize, u8)) {
    // SAFETY: the fuzzing thread is the only one that reads or resets the maps; a stray write
    // from the watchdog thread can at worst add or lose one count.
    unsafe {
        let n = TOUCHED_LEN.min(MAX_GUARDS);
        // An iterator would borrow the `static mut`, which the callbacks write through.
        #[allow(clippy::needless_range_loop)]
        for k in 0..n {
            let i = TOUCHED[k] as usize;
            let c = COUNTS[i];
            COUNTS[i] = 0;
            if c != 0 {
                f(i, c);
            }
        }
        TOUCHED_LEN = 0;
    }
}

/// AFL's hit-count classes: an edge taken 1, 2, 3, 4-7, 8-15, 16-31, 32-127 or 128+ times is
/// one bit each, so a loop that runs longer counts as new behaviour, but only by powers of two.
pub fn bucket(hits: u8) -> u8 {
    match hits {
        0 => 0,
        1 => 1,
        2 => 2,
        3 => 4,
        4..=7 => 8,
        8..=15 => 16,
        16..=31 => 32,
        32..=127 => 64,
        _ => 128,
    }
}
