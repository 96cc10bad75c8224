//! The fuzzing loop: load the seeds, mutate, run, check each exec, keep the inputs that reach
//! new edges (when the binary has coverage), save what fails.
//!
//! Each exec is checked three ways: a panic is a crash; longer than [`Config::hang_limit`] is a
//! hang (timed again twice, so that a descheduled exec on a busy host is not reported); a peak
//! of more than [`Config::alloc_limit`] heap bytes above what was live before is an allocation
//! finding. Two things cannot be checked after the fact, so a watchdog thread and the allocator
//! handle them, saving the input before ending the process: an exec still running after
//! [`HARD_HANG`], and one that would take the live heap past [`alloc::HARD_LIMIT`].

use std::cell::Cell;
use std::collections::BTreeSet;
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, Once, OnceLock};
use std::time::{Duration, Instant};

use crate::mutate::{Mutator, Rng};
use crate::targets::Target;
use crate::{alloc, coverage};

/// An exec still running after this long ends the process (the watchdog saves it as a hang).
pub const HARD_HANG: Duration = Duration::from_secs(10);
/// At most this many hang or allocation findings are saved per run; crashes are saved once per
/// panic location.
const MAX_FINDINGS_PER_KIND: usize = 5;

/// How long and how to fuzz.
#[derive(Clone, Debug)]
pub struct Config {
    /// Stop after this many execs (seeds included)...
    pub execs: Option<u64>,
    /// ...or after this long, whichever comes first; with neither, one million execs.
    pub time: Option<Duration>,
    pub seed: u64,
    /// Seeds are read from `<corpus>/<target>/`.
    pub corpus: PathBuf,
    /// Findings are written to `<findings>/<target>/<kind>-<hash>`.
    pub findings: PathBuf,
    /// Inputs that reached new edges are written to `<dir>/<target>/<hash>` if set.
    pub save_corpus: Option<PathBuf>,
    pub hang_limit: Duration,
    pub alloc_limit: usize,
    /// Print a progress line this often (never if `None`).
    pub progress: Option<Duration>,
}

impl Default for Config {
    fn default() -> Self {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        Self {
            execs: None,
            time: None,
            seed: 1,
            corpus: here.join("corpus"),
            findings: here.join("findings"),
            save_corpus: None,
            hang_limit: Duration::from_millis(100),
            alloc_limit: alloc::EXEC_LIMIT,
            progress: Some(Duration::from_secs(10)),
        }
    }
}

/// What went wrong with one input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Crash,
    Hang,
    Alloc,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Crash => "crash",
            Self::Hang => "hang",
            Self::Alloc => "alloc",
        }
    }
}

/// A failing input, as saved.
#[derive(Clone, Debug)]
pub struct Finding {
    pub kind: Kind,
    /// The panic message and location, or the time or bytes measured.
    pub detail: String,
    pub input: Vec<u8>,
    /// Where it was written, if it could be.
    pub path: Option<PathBuf>,
}

/// How one exec went.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The panic's location and message.
    pub panic: Option<String>,
    pub time: Duration,
    /// Peak heap bytes above those live before the exec.
    pub peak: usize,
}

/// A finished run of one target.
#[derive(Clone, Debug)]
pub struct Report {
    pub target: &'static str,
    pub execs: u64,
    pub elapsed: Duration,
    pub seeds: usize,
    /// Seeds plus the inputs kept for new edges.
    pub corpus: usize,
    /// Edges (guards) hit at least once, and guards in the binary (0 without coverage).
    pub edges: usize,
    pub guards: usize,
    pub findings: Vec<Finding>,
}

impl Report {
    pub fn execs_per_second(&self) -> f64 {
        self.execs as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:<17} execs {:>10}  time {:>6.1} s  execs/s {:>8.0}  corpus {:>5} ({} seeds)",
            self.target,
            self.execs,
            self.elapsed.as_secs_f64(),
            self.execs_per_second(),
            self.corpus,
            self.seeds,
        )?;
        if self.guards > 0 {
            write!(f, "  edges {}/{}", self.edges, self.guards)?;
        }
        write!(f, "  findings {}", self.findings.len())
    }
}

/// The input of the exec in progress, for the watchdog and the allocator's hard limit, which
/// save it before they end the process.
struct Current {
    target: &'static str,
    findings: PathBuf,
    input: Vec<u8>,
}

static CURRENT: Mutex<Option<Current>> = Mutex::new(None);
/// When the exec in progress started, in ns since [`epoch`] plus one; 0 between execs.
static EXEC_START: AtomicU64 = AtomicU64::new(0);
/// The last panic's message, from the quiet hook.
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

thread_local! {
    /// Whether this thread is running an exec, whose panics the hook keeps quiet.
    static IN_EXEC: Cell<bool> = const { Cell::new(false) };
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Wraps the panic hook so that a panic inside an exec keeps its message instead of printing it
/// (a fuzzer panics on purpose millions of times; other panics print as before), sets the
/// allocator's hard-limit hook and starts the watchdog. Once per process.
fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        epoch();
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if IN_EXEC.get() {
                // The backtrace names the parser's line when the panic is inside std (an
                // overflow in `Iterator::product`, an index out of bounds).
                let trace = std::backtrace::Backtrace::force_capture();
                *LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()) = Some(format!("{info}\n{trace}"));
            } else {
                previous(info);
            }
        }));
        alloc::set_hard_limit_hook(|size| {
            save_current(
                Kind::Alloc,
                &format!(
                    "an allocation of {size} bytes would take the live heap past {} bytes",
                    alloc::HARD_LIMIT
                ),
            );
        });
        std::thread::spawn(|| loop {
            std::thread::sleep(Duration::from_millis(250));
            let start = EXEC_START.load(Relaxed);
            if start != 0 && epoch().elapsed().as_nanos() as u64 > start - 1 + HARD_HANG.as_nanos() as u64 {
                save_current(
                    Kind::Hang,
                    &format!("still running after {HARD_HANG:?}; the process was stopped"),
                );
                std::process::exit(1);
            }
        });
    });
}

/// Saves the exec in progress as a finding from the watchdog or the allocator, and says so.
fn save_current(kind: Kind, detail: &str) {
    let Ok(guard) = CURRENT.try_lock() else {
        eprintln!("rtcbench-fuzz: {}: {detail} (the input could not be saved)", kind.name());
        return;
    };
    if let Some(c) = guard.as_ref() {
        let path = write_finding(&c.findings, c.target, kind, &c.input, detail);
        let at = path.map_or_else(|e| format!("not saved: {e}"), |p| p.display().to_string());
        eprintln!("rtcbench-fuzz: {}: {}: {detail}; input {at}", c.target, kind.name());
    }
}

/// FNV-1a: a stable name for an input.
pub fn hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xCBF2_9CE4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01B3))
}

fn write_finding(
    root: &Path,
    target: &str,
    kind: Kind,
    input: &[u8],
    detail: &str,
) -> std::io::Result<PathBuf> {
    let dir = root.join(target);
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("{}-{:016x}", kind.name(), hash(input)));
    std::fs::write(&path, input)?;
    let note = format!(
        "target: {target}\nkind: {}\n{detail}\ninput ({} bytes, hex): {}\nreproduce: crates/rtcbench-fuzz/fuzz.sh replay {target} {}\n",
        kind.name(),
        input.len(),
        hex(input),
        path.display()
    );
    std::fs::write(path.with_extension("txt"), note)?;
    Ok(path)
}

/// Lower-case hex, for reports.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The seeds of a target: the files of `<corpus>/<target>/`, by name; one empty input if none.
pub fn load_corpus(corpus: &Path, target: &str) -> std::io::Result<Vec<Vec<u8>>> {
    let dir = corpus.join(target);
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file() && !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    files.sort();
    let mut seeds = files.iter().map(std::fs::read).collect::<std::io::Result<Vec<_>>>()?;
    if seeds.is_empty() {
        seeds.push(Vec::new());
    }
    Ok(seeds)
}

/// Runs `target` on `input` once, catching a panic and measuring time and peak heap.
pub fn exec(target: &Target, input: &[u8]) -> Outcome {
    install();
    if let Ok(mut current) = CURRENT.lock() {
        if let Some(c) = current.as_mut() {
            c.input.clear();
            c.input.extend_from_slice(input);
        }
    }
    let run = target.run;
    alloc::reset_peak();
    let before = alloc::live();
    let t0 = Instant::now();
    EXEC_START.store(t0.duration_since(epoch()).as_nanos() as u64 + 1, Relaxed);
    IN_EXEC.set(true);
    let result = panic::catch_unwind(AssertUnwindSafe(|| run(input)));
    IN_EXEC.set(false);
    let time = t0.elapsed();
    EXEC_START.store(0, Relaxed);
    let peak = alloc::peak().saturating_sub(before);
    let panic = result.err().map(|payload| {
        LAST_PANIC.lock().unwrap_or_else(|e| e.into_inner()).take().unwrap_or_else(|| {
            payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into())
        })
    });
    Outcome { panic, time, peak }
}

/// What, if anything, is wrong with `outcome` under `config`'s limits; a slow exec is timed
/// again before it counts.
fn judge(target: &Target, input: &[u8], outcome: &Outcome, config: &Config) -> Option<(Kind, String)> {
    if let Some(message) = &outcome.panic {
        return Some((Kind::Crash, message.clone()));
    }
    if outcome.peak > config.alloc_limit {
        return Some((
            Kind::Alloc,
            format!("peak heap {} bytes (limit {})", outcome.peak, config.alloc_limit),
        ));
    }
    if outcome.time > config.hang_limit {
        let fastest = (0..2).map(|_| exec(target, input).time).fold(outcome.time, Duration::min);
        if fastest > config.hang_limit {
            return Some((Kind::Hang, format!("{fastest:?} at best of 3 (limit {:?})", config.hang_limit)));
        }
    }
    None
}

/// Fuzzes one target.
pub fn run(target: &'static Target, config: &Config) -> std::io::Result<Report> {
    install();
    let seeds = load_corpus(&config.corpus, target.name)?;
    *CURRENT.lock().unwrap_or_else(|e| e.into_inner()) =
        Some(Current { target: target.name, findings: config.findings.clone(), input: Vec::new() });
    let mutator = Mutator::new(target, &seeds);
    let guards = coverage::guards();
    let mut seen = vec![0u8; if guards > 0 { guards + 1 } else { 0 }];
    let mut edges = 0;
    let mut rng = Rng::new(config.seed ^ hash(target.name.as_bytes()));
    let budget = config.execs.unwrap_or(if config.time.is_some() { u64::MAX } else { 1_000_000 });
    let start = Instant::now();
    let mut last_progress = start;
    let mut findings: Vec<Finding> = Vec::new();
    let mut crash_sites: BTreeSet<String> = BTreeSet::new();
    let mut corpus: Vec<Vec<u8>> = Vec::with_capacity(seeds.len());
    let mut execs = 0u64;
    let mut child = Vec::with_capacity(target.max_len);

    // The seeds run first, unmutated; then mutants of the corpus.
    let mut pending = seeds.into_iter();
    let seed_count = pending.len();
    loop {
        if execs >= budget || config.time.is_some_and(|t| start.elapsed() >= t) {
            break;
        }
        let is_seed = if let Some(seed) = pending.next() {
            child = seed;
            true
        } else {
            if corpus.is_empty() {
                // Every seed failed: mutate the empty input rather than nothing.
                corpus.push(Vec::new());
            }
            // The shorter of two random entries: inputs that reach new hit counts by being
            // longer would otherwise take over the corpus and slow every exec.
            let (a, b) = (rng.below(corpus.len()), rng.below(corpus.len()));
            let parent = if corpus[a].len() <= corpus[b].len() { &corpus[a] } else { &corpus[b] };
            let other = &corpus[rng.below(corpus.len())];
            let mut out = std::mem::take(&mut child);
            mutator.mutate(&mut rng, parent, other, &mut out);
            child = out;
            false
        };
        coverage::clear();
        let outcome = exec(target, &child);
        execs += 1;
        let mut new_edges = false;
        coverage::take(|i, hits| {
            let bit = coverage::bucket(hits);
            if let Some(s) = seen.get_mut(i) {
                if *s & bit == 0 {
                    if *s == 0 {
                        edges += 1;
                    }
                    *s |= bit;
                    new_edges = true;
                }
            }
        });
        if let Some((kind, detail)) = judge(target, &child, &outcome, config) {
            let site = detail.lines().next().unwrap_or("").to_string();
            let fresh = match kind {
                Kind::Crash => crash_sites.insert(site),
                _ => findings.iter().filter(|f| f.kind == kind).count() < MAX_FINDINGS_PER_KIND,
            };
            if fresh {
                let path = write_finding(&config.findings, target.name, kind, &child, &detail);
                if let Err(e) = &path {
                    eprintln!(
                        "rtcbench-fuzz: cannot write a finding under {}: {e}",
                        config.findings.display()
                    );
                }
                let at = path.as_ref().map_or_else(|_| "(not saved)".into(), |p| p.display().to_string());
                let summary: Vec<&str> = detail.lines().take(2).collect();
                eprintln!("[{}] {}: {} -> {at}", target.name, kind.name(), summary.join(" "));
                findings.push(Finding { kind, detail, input: child.clone(), path: path.ok() });
            }
            continue;
        }
        if is_seed || new_edges {
            if !is_seed {
                if let Some(dir) = &config.save_corpus {
                    let dir = dir.join(target.name);
                    std::fs::create_dir_all(&dir)?;
                    std::fs::write(dir.join(format!("{:016x}", hash(&child))), &child)?;
                }
            }
            corpus.push(child.clone());
        }
        if let Some(every) = config.progress {
            if last_progress.elapsed() >= every {
                last_progress = Instant::now();
                let secs = start.elapsed().as_secs_f64();
                eprintln!(
                    "[{}] {execs} execs in {secs:.0} s ({:.0}/s), corpus {}, edges {edges}, findings {}",
                    target.name,
                    execs as f64 / secs,
                    corpus.len(),
                    findings.len()
                );
            }
        }
    }
    *CURRENT.lock().unwrap_or_else(|e| e.into_inner()) = None;
    Ok(Report {
        target: target.name,
        execs,
        elapsed: start.elapsed(),
        seeds: seed_count,
        corpus: corpus.len(),
        edges,
        guards,
        findings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::targets::Input;

    fn target(name: &'static str, run: fn(&[u8])) -> &'static Target {
        Box::leak(Box::new(Target {
            name,
            about: "",
            run,
            input: Input::Binary,
            max_len: 64,
            dictionary: &[],
        }))
    }

    fn config(findings: &Path) -> Config {
        Config {
            execs: Some(200),
            corpus: findings.join("no-corpus"),
            findings: findings.to_path_buf(),
            progress: None,
            hang_limit: Duration::from_millis(2),
            alloc_limit: 1 << 20,
            ..Config::default()
        }
    }

    #[test]
    fn panics_slow_execs_and_large_allocations_are_saved_as_findings() {
        let dir = std::env::temp_dir().join(format!("rtcbench-fuzz-test-{}", std::process::id()));
        let config = config(&dir);
        let crash = run(target("t-crash", |d| assert!(d.len() < 3, "too long")), &config).unwrap();
        // Once per panic location, however many inputs reach it.
        assert_eq!(crash.findings.len(), 1);
        let f = &crash.findings[0];
        assert_eq!(f.kind, Kind::Crash);
        assert!(f.detail.contains("too long") && f.detail.contains("runner.rs"), "{}", f.detail);
        assert!(f.input.len() >= 3);
        let path = f.path.as_ref().unwrap();
        assert_eq!(std::fs::read(path).unwrap(), f.input);
        assert!(path.file_name().unwrap().to_string_lossy().starts_with("crash-"));

        // A busy exec, not a sleeping one: what is measured is the time the parser takes.
        let slow = run(
            target("t-hang", |d| {
                let t = Instant::now();
                while d.len() > 2 && t.elapsed() < Duration::from_millis(5) {}
            }),
            &config,
        )
        .unwrap();
        assert!(!slow.findings.is_empty() && slow.findings.iter().all(|f| f.kind == Kind::Hang));
        assert!(slow.findings.len() <= MAX_FINDINGS_PER_KIND);

        let large = run(target("t-alloc", |d| drop(vec![1u8; d.len() << 16])), &config).unwrap();
        assert!(large.findings.iter().all(|f| f.kind == Kind::Alloc && f.input.len() > 16));
        assert!(!large.findings.is_empty());

        let fine = run(target("t-fine", |d| drop(d.to_vec())), &config).unwrap();
        assert!(fine.findings.is_empty());
        assert_eq!(fine.execs, 200);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
