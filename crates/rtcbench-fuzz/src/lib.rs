//! Fuzzing for rtcbench on stable Rust: a target per parser of untrusted input ([`targets`]) and
//! a mutation fuzzer that runs them ([`runner`], [`mutate`]), guided by edge coverage when the
//! binary is built with LLVM's SanitizerCoverage ([`coverage`]; `fuzz.sh` does that), blind
//! otherwise. Every exec is checked for panics, time and peak heap ([`alloc`]).
//!
//! `docs/fuzzing.md` says how to run it, what each target covers and what the runs found.

pub mod alloc;
pub mod coverage;
pub mod mutate;
pub mod runner;
pub mod targets;

pub use targets::{Target, TARGETS};

/// Every binary and test of this crate counts its heap, so that each exec's peak is known.
#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;
