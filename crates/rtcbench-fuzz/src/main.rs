//! `rtcbench-fuzz`: runs the fuzz targets (see `docs/fuzzing.md`).

use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use rtcbench_fuzz::runner::{self, Config};
use rtcbench_fuzz::targets::{self, Target, TARGETS};

const USAGE: &str = "\
usage: rtcbench-fuzz list
       rtcbench-fuzz run [options] TARGET... | all
       rtcbench-fuzz replay TARGET FILE...

run options:
  --execs N          stop each target after N execs
  --seconds S        stop each target after S seconds (with neither: 1000000 execs)
  --seed N           seed of the mutations (default 1)
  --jobs N           run the targets in N processes at once (default 1)
  --corpus DIR       seeds from DIR/<target>/ (default: the crate's corpus/)
  --findings DIR     write findings to DIR/<target>/ (default: the crate's findings/)
  --save-corpus DIR  write inputs that reach new edges to DIR/<target>/
  --quiet            no progress lines

Exit status: 0 if nothing was found, 1 if something was, 2 on a usage or file error.
Build with coverage through crates/rtcbench-fuzz/fuzz.sh; a plain build fuzzes blind.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("list") => {
            for t in TARGETS {
                println!("{:<17} {}", t.name, t.about);
            }
            Ok(ExitCode::SUCCESS)
        }
        Some("run") => {
            parse_run(&args[1..]).and_then(|(config, jobs, names)| run(&config, jobs, &names, &args[1..]))
        }
        Some("replay") => replay(&args[1..]),
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        _ => Err(USAGE.to_string()),
    };
    result.unwrap_or_else(|message| {
        eprintln!("rtcbench-fuzz: {message}");
        ExitCode::from(2)
    })
}

/// The options of `run`, the number of processes and the target names.
fn parse_run(args: &[String]) -> Result<(Config, usize, Vec<&'static str>), String> {
    let mut config = Config::default();
    let mut jobs = 1;
    let mut names: Vec<&'static str> = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |what: &str| it.next().cloned().ok_or_else(|| format!("{arg} needs {what}"));
        let number =
            |s: String, what: &str| s.parse::<u64>().map_err(|_| format!("{arg} takes {what}, not {s:?}"));
        match arg.as_str() {
            "--execs" => config.execs = Some(number(value("a count")?, "a whole number")?),
            "--seconds" => {
                let s = value("a number of seconds")?;
                let secs = s
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s > 0.0)
                    .ok_or_else(|| format!("--seconds takes a positive number, not {s:?}"))?;
                config.time = Some(Duration::from_secs_f64(secs));
            }
            "--seed" => config.seed = number(value("a number")?, "a whole number")?,
            "--jobs" => jobs = number(value("a count")?, "a whole number")?.max(1) as usize,
            "--corpus" => config.corpus = PathBuf::from(value("a folder")?),
            "--findings" => config.findings = PathBuf::from(value("a folder")?),
            "--save-corpus" => config.save_corpus = Some(PathBuf::from(value("a folder")?)),
            "--quiet" => config.progress = None,
            "all" => names.extend(TARGETS.iter().map(|t| t.name)),
            name if name.starts_with('-') => return Err(format!("unknown option {name}\n\n{USAGE}")),
            name => names.push(find(name)?.name),
        }
    }
    if names.is_empty() {
        return Err(format!("name the targets to run, or all (rtcbench-fuzz list)\n\n{USAGE}"));
    }
    names.dedup();
    Ok((config, jobs, names))
}

fn find(name: &str) -> Result<&'static Target, String> {
    targets::find(name).ok_or_else(|| {
        let known: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
        format!("no target {name:?}; the targets are {}", known.join(", "))
    })
}

fn run(config: &Config, jobs: usize, names: &[&'static str], args: &[String]) -> Result<ExitCode, String> {
    if jobs > 1 && names.len() > 1 {
        return run_in_processes(jobs, names, args);
    }
    let mut found = false;
    for name in names {
        let target = find(name)?;
        let report = runner::run(target, config)
            .map_err(|e| format!("{name}: cannot read its corpus under {}: {e}", config.corpus.display()))?;
        println!("{report}");
        found |= !report.findings.is_empty();
    }
    targets::cleanup();
    Ok(if found { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Splits the targets over `jobs` child processes (round robin) with the same options, and
/// prints their reports in target order once all have finished.
fn run_in_processes(jobs: usize, names: &[&'static str], args: &[String]) -> Result<ExitCode, String> {
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find this program to start it again: {e}"))?;
    let mut options: Vec<String> = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--jobs" => {
                it.next();
            }
            "--quiet" => options.push(arg.clone()),
            a if a.starts_with("--") => {
                options.push(arg.clone());
                options.extend(it.next().cloned());
            }
            _ => {}
        }
    }
    let mut children = Vec::new();
    for k in 0..jobs.min(names.len()) {
        let mine: Vec<&str> = names.iter().skip(k).step_by(jobs).copied().collect();
        let child = Command::new(&exe)
            .arg("run")
            .args(&options)
            .args(&mine)
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        children.push(child);
    }
    let mut lines = Vec::new();
    let mut status = 0;
    for child in children {
        let out = child.wait_with_output().map_err(|e| format!("a fuzzing process failed: {e}"))?;
        lines.extend(String::from_utf8_lossy(&out.stdout).lines().map(String::from));
        // A child ended by the watchdog or the allocator's limit exits with 1, as for a
        // finding; killed by a signal, it counts as one too.
        status = status.max(match out.status.code() {
            Some(0) => 0,
            Some(2) => 2,
            _ => 1,
        });
    }
    for name in names {
        lines.iter().filter(|l| l.split_whitespace().next() == Some(name)).for_each(|l| println!("{l}"));
    }
    Ok(ExitCode::from(status))
}

/// Runs each file once and says how it went: reproduces a finding.
fn replay(args: &[String]) -> Result<ExitCode, String> {
    let [name, files @ ..] = args else { return Err(USAGE.to_string()) };
    if files.is_empty() {
        return Err(format!("name the input files to replay\n\n{USAGE}"));
    }
    let target = find(name)?;
    let config = Config::default();
    let mut failed = false;
    for file in files {
        let input = std::fs::read(file).map_err(|e| format!("cannot read {file}: {e}"))?;
        let outcome = runner::exec(target, &input);
        let verdict = match &outcome.panic {
            Some(message) => format!("PANIC: {message}"),
            None if outcome.time > config.hang_limit => format!("SLOW (limit {:?})", config.hang_limit),
            None if outcome.peak > config.alloc_limit => {
                format!("LARGE (limit {} bytes)", config.alloc_limit)
            }
            None => "ok".into(),
        };
        failed |= verdict != "ok";
        println!(
            "{file}: {} bytes, {:?}, peak heap {} bytes: {verdict}",
            input.len(),
            outcome.time,
            outcome.peak
        );
    }
    targets::cleanup();
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
