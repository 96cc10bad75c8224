#!/usr/bin/env bash
# Builds rtcbench-fuzz with SanitizerCoverage (edge coverage on stable Rust, as cargo-afl does)
# and runs it with the arguments given, e.g. `fuzz.sh run --seconds 20 --jobs 2 all`.
#
# The build goes to target/fuzz so that its RUSTFLAGS do not rebuild the ordinary target/.
# --target is explicit so that RUSTFLAGS reach only the code that runs in the fuzzer, not build
# scripts or proc macros (which would then need the coverage callbacks). Release with debug
# assertions and overflow checks: fast, and an overflow is a finding, not a wrap.
set -euo pipefail
cd "$(dirname "$0")/../.."
host=$(rustc -vV | sed -n 's/^host: //p')
export RUSTFLAGS="-C passes=sancov-module -C llvm-args=-sanitizer-coverage-level=3 -C llvm-args=-sanitizer-coverage-trace-pc-guard"
export CARGO_TARGET_DIR=target/fuzz
export CARGO_PROFILE_RELEASE_LTO=false
export CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
export CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true
export CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true
cargo build --release -q -p rtcbench-fuzz --bin rtcbench-fuzz --target "$host" -j "${CARGO_BUILD_JOBS:-2}"
exec "target/fuzz/$host/release/rtcbench-fuzz" "$@"
