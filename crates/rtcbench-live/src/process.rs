//! What the live binaries (`rtcbench-relay`, `rtcbench-media`, `rtcbench-prague`) share as processes: they take one
//! argument, a JSON configuration; they fail in one line on stderr, with status 2 for a
//! configuration they cannot use and 1 for a system call that failed; they write their files
//! atomically.

use std::fs::{self, File};
use std::io::{self, BufRead, Write};
use std::path::Path;
use std::process::ExitCode;

use rtcbench_units::{Duration, Instant};

use crate::sys;

/// Why a live binary stopped before its end.
pub enum Failure {
    /// The configuration cannot be used: exit status 2.
    Config(String),
    /// A system call failed: exit status 1.
    Io(String, io::Error),
}

/// Turns an `io::Error` into a [`Failure`] that says what was being done.
pub fn io_context(what: impl Into<String>) -> impl FnOnce(io::Error) -> Failure {
    let what = what.into();
    move |e| Failure::Io(what, e)
}

/// The `main` of a live binary called `name`: `name CONFIG.json`, then `run` on that path.
pub fn main_with(name: &str, run: impl FnOnce(&Path) -> Result<(), Failure>) -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, config] = args.as_slice() else {
        eprintln!("usage: {name} CONFIG.json");
        return ExitCode::from(2);
    };
    match run(Path::new(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Config(msg)) => {
            eprintln!("{name}: {msg}");
            ExitCode::from(2)
        }
        Err(Failure::Io(what, e)) => {
            eprintln!("{name}: {what}: {e}");
            ExitCode::from(1)
        }
    }
}

/// Writes `bytes` to a hidden temporary file beside `path`, syncs it and renames it into place:
/// a reader sees the whole file or none.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("out");
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let mut f = File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    fs::rename(tmp, path)
}

/// The run's clock: scenario instants (µs from time zero) on CLOCK_MONOTONIC, time zero being
/// the `go <t0>` every process of a run is handed.
#[derive(Clone, Copy, Debug)]
pub struct RunClock {
    /// Time zero, CLOCK_MONOTONIC nanoseconds.
    pub t0_ns: i128,
}

impl RunClock {
    /// The scenario instant of a CLOCK_MONOTONIC reading (time zero before it).
    pub fn instant(self, monotonic_ns: i128) -> Instant {
        let us = (monotonic_ns - self.t0_ns).max(0) / 1000;
        Instant::ZERO + Duration::from_micros(i64::try_from(us).unwrap_or(i64::MAX))
    }

    /// The CLOCK_MONOTONIC reading of a scenario instant.
    pub fn monotonic_ns(self, t: Instant) -> i128 {
        self.t0_ns + i128::from((t - Instant::ZERO).as_micros()) * 1000
    }

    /// Now, as a scenario instant.
    pub fn now(self) -> Instant {
        self.instant(sys::monotonic_ns())
    }
}

/// Says `ready` on stdout, then waits for `go <t0>` on stdin (the run's time zero, CLOCK_MONOTONIC
/// nanoseconds): the run's clock, or None when told `stop` (or stdin ends) first.
pub fn ready_then_go() -> Result<Option<RunClock>, Failure> {
    println!("ready");
    io::stdout().flush().map_err(io_context("stdout"))?;
    let mut line = String::new();
    io::stdin().lock().read_line(&mut line).map_err(io_context("stdin"))?;
    match line.split_whitespace().collect::<Vec<_>>().as_slice() {
        ["go", t0] => {
            let t0_ns = t0.parse().map_err(|_| Failure::Config(format!("bad start instant {t0:?}")))?;
            Ok(Some(RunClock { t0_ns }))
        }
        [] | ["stop"] => Ok(None),
        _ => Err(Failure::Config(format!("expected `go <monotonic ns>` on stdin, got {line:?}"))),
    }
}

/// Reads the command waiting on stdin: whether it says to stop (`stop`, or stdin ended).
pub fn stdin_says_stop() -> bool {
    let mut line = String::new();
    match io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => true,
        Ok(_) => line.trim() == "stop",
    }
}
