//! The capacity trace files a scenario names: where each is, reading and parsing it once per
//! load, and errors that name the trace file, its line or field, and the scenario field.
//!
//! A relative `file` is found beside the scenario file: the scenario's origin is its path, or
//! `builtin:<path in the repository>` for a built-in scenario, whose traces are compiled in
//! ([`super::builtin::TRACES`]). `builtin:<path>` in `file` names a shipped trace from anywhere.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rtcbench_net::link::capacity_trace::{
    csv, mahimahi, opennetlab, CapacityTrace, TraceFormat, MAX_FILE_BYTES,
};

use super::{builtin, CapacityTraceSpec, Param, ScenarioError, ScenarioSpec};

const BUILTIN: &str = "builtin:";

/// Where a trace file is.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Location {
    /// Compiled in: its path in the repository.
    Builtin(String),
    File(PathBuf),
}

impl Location {
    /// Where `file`, written in a scenario that came from `origin`, is.
    fn of(file: &str, origin: &str) -> Self {
        if let Some(path) = file.strip_prefix(BUILTIN) {
            return Self::Builtin(normalize(path));
        }
        let path = Path::new(file);
        if path.is_absolute() {
            return Self::File(path.to_path_buf());
        }
        if let Some(scenario) = origin.strip_prefix(BUILTIN) {
            let dir = scenario.rsplit_once('/').map_or("", |(dir, _)| dir);
            return Self::Builtin(normalize(&format!("{dir}/{file}")));
        }
        Self::File(Path::new(origin).parent().unwrap_or(Path::new("")).join(path))
    }

    /// The file as errors name it.
    fn label(&self) -> String {
        match self {
            Self::Builtin(path) => format!("{BUILTIN}{path}"),
            Self::File(path) => path.display().to_string(),
        }
    }

    /// The file as a resolved scenario names it: the same file from any working directory.
    fn resolved(&self) -> String {
        match self {
            Self::Builtin(_) => self.label(),
            Self::File(path) => {
                std::path::absolute(path).unwrap_or_else(|_| path.clone()).display().to_string()
            }
        }
    }

    fn read(&self) -> Result<std::borrow::Cow<'static, str>, String> {
        match self {
            Self::Builtin(path) => builtin::trace(path).map(Into::into).ok_or_else(|| {
                let known: Vec<&str> = builtin::TRACES.iter().map(|(p, _)| *p).collect();
                format!("no built-in trace {path:?} (built-in traces: {})", known.join(", "))
            }),
            Self::File(path) => read_file(path, MAX_FILE_BYTES).map(Into::into).map_err(|e| {
                let resolved = self.resolved();
                format!("cannot read the trace {:?} ({resolved}): {e}", path.display().to_string())
            }),
        }
    }
}

/// The text of a trace file of at most `limit` bytes. Only a regular file is opened: a FIFO
/// would block the load, and a device (`/dev/zero`) never ends and claims a size of 0. The kind
/// is checked before opening (opening some devices acts on them), and again on the open file
/// (opened without blocking, in case it was replaced meanwhile); the read stops at `limit`, so a
/// file that grows while it is read cannot exceed it either.
fn read_file(path: &Path, limit: u64) -> Result<String, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;

    let regular = |meta: std::fs::Metadata| -> Result<u64, String> {
        if !meta.is_file() {
            return Err(format!("not a regular file ({})", kind(meta.file_type())));
        }
        if meta.len() > limit {
            return Err(format!("{} bytes; a trace file is at most {limit}", meta.len()));
        }
        Ok(meta.len())
    };
    regular(std::fs::metadata(path).map_err(|e| e.to_string())?)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| e.to_string())?;
    let size = regular(file.metadata().map_err(|e| e.to_string())?)?;
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > limit {
        return Err(format!("grew past {limit} bytes while it was read; a trace file is at most {limit}"));
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        format!("not UTF-8 text (byte {:#04x} at offset {at})", e.as_bytes()[at])
    })
}

/// What a file that is not a regular file is, for errors.
fn kind(t: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a folder"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

/// `a/./b/../c` → `a/c`, so that built-in paths compare as written in [`builtin::TRACES`].
fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// The format of a trace: as written, or from the file's extension.
pub(super) fn format_of(t: &CapacityTraceSpec) -> Result<TraceFormat, String> {
    let file = t.file.get();
    t.format.or_else(|| TraceFormat::from_file_name(file)).ok_or_else(|| {
        format!(
            "cannot tell the format of {file:?} from its extension ({}); write format = \"mahimahi\", \
             \"opennetlab\" or \"csv\"",
            TraceFormat::EXTENSIONS
        )
    })
}

/// What a parsed trace depends on besides the text.
type Key = (Location, TraceFormat, String);

/// A parsed trace and the SHA-256 of the text it was parsed from (hex), which stands for the
/// file in a scenario's fingerprint: the same trace anywhere on disk, or built in, is the same.
type Loaded = (Arc<CapacityTrace>, String);

/// Traces already read while loading one scenario file (its variants share them).
#[derive(Default)]
pub(super) struct TraceCache(BTreeMap<Key, Loaded>);

impl TraceCache {
    /// The trace of each link of a validated variant (`None` for links without one), read and
    /// parsed, with the SHA-256 of its text. Each `file` is rewritten to where it was found and
    /// `format` is written out, so the resolved scenario names the same trace wherever it is
    /// loaded from.
    pub(super) fn load(
        &mut self,
        spec: &mut ScenarioSpec,
        origin: &str,
    ) -> Result<Vec<Option<Loaded>>, ScenarioError> {
        let mut out = Vec::with_capacity(spec.links.len());
        for l in &mut spec.links {
            let Some(t) = &mut l.capacity_trace else {
                out.push(None);
                continue;
            };
            let field = format!("links.{}.capacity_trace", l.name);
            let format =
                format_of(t).map_err(|m| ScenarioError::new(origin, Some(format!("{field}.format")), m))?;
            let location = Location::of(t.file.get(), origin);
            let options = format!("{:?}/{:?}", t.direction, t.ignore);
            let key = (location.clone(), format, options);
            let loaded = match self.0.get(&key) {
                Some(loaded) => loaded.clone(),
                None => {
                    let text = location
                        .read()
                        .map_err(|m| ScenarioError::new(origin, Some(format!("{field}.file")), m))?;
                    let trace = Arc::new(parse(format, &text, t).map_err(|e| ScenarioError {
                        origin: location.label(),
                        field: e.field,
                        line: e.line,
                        message: format!("{} ({field} in {origin})", e.message),
                        related: Vec::new(),
                    })?);
                    let loaded = (trace, super::sha256_hex(text.as_bytes()));
                    self.0.insert(key, loaded.clone());
                    loaded
                }
            };
            t.file = Param::One(location.resolved());
            t.format = Some(format);
            out.push(Some(loaded));
        }
        Ok(out)
    }
}

fn parse(
    format: TraceFormat,
    text: &str,
    t: &CapacityTraceSpec,
) -> Result<CapacityTrace, rtcbench_net::link::capacity_trace::TraceError> {
    Ok(match format {
        TraceFormat::Mahimahi => CapacityTrace::Opportunities(mahimahi::parse(text)?),
        TraceFormat::Opennetlab => {
            CapacityTrace::Rate(opennetlab::parse(text, t.direction.unwrap_or_default(), &t.ignore)?)
        }
        TraceFormat::Csv => CapacityTrace::Rate(csv::parse(text)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_files_are_found_beside_the_scenario() {
        assert_eq!(
            Location::of("lte.mahimahi", "builtin:scenarios/traces/lte.toml"),
            Location::Builtin("scenarios/traces/lte.mahimahi".into())
        );
        assert_eq!(
            Location::of("../traces/./x.csv", "builtin:scenarios/seeds/a.toml"),
            Location::Builtin("scenarios/traces/x.csv".into())
        );
        assert_eq!(
            Location::of("builtin:scenarios/traces/x.csv", "/home/me/my.toml"),
            Location::Builtin("scenarios/traces/x.csv".into())
        );
        assert_eq!(Location::of("t/x.csv", "exp/my.toml"), Location::File("exp/t/x.csv".into()));
        assert_eq!(Location::of("x.csv", "my.toml"), Location::File("x.csv".into()));
        assert_eq!(Location::of("/abs/x.csv", "exp/my.toml"), Location::File("/abs/x.csv".into()));
        // An absolute path stays one in a built-in scenario (`--set ...capacity_trace.file=/x`).
        assert_eq!(
            Location::of("/abs/x.csv", "builtin:scenarios/traces/a.toml"),
            Location::File("/abs/x.csv".into())
        );
        // Resolved: absolute, so a results folder's scenario.toml finds it from anywhere.
        assert!(Path::new(&Location::of("x.csv", "exp/my.toml").resolved()).is_absolute());
    }

    #[test]
    fn only_a_regular_file_within_the_limit_is_read() {
        let dir = std::env::temp_dir().join(format!("rtcbench-traces-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("t.up");
        std::fs::write(&file, "1\n2\n").unwrap();
        assert_eq!(read_file(&file, 4).unwrap(), "1\n2\n");
        let e = read_file(&file, 3).unwrap_err();
        assert!(e.contains("4 bytes; a trace file is at most 3"), "{e}");
        // A FIFO would block the load, /dev/zero would never end (and says it holds 0 bytes):
        // neither is opened. A symbolic link is followed to what it names.
        let fifo = dir.join("fifo.up");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        let zero = dir.join("zero.up");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        for (path, kind) in [(&fifo, "a FIFO"), (&zero, "a character device"), (&dir, "a folder")] {
            let e = read_file(path, MAX_FILE_BYTES).unwrap_err();
            assert_eq!(e, format!("not a regular file ({kind})"));
        }
        std::fs::write(&file, b"1\n\xff\n").unwrap();
        assert_eq!(read_file(&file, 10).unwrap_err(), "not UTF-8 text (byte 0xff at offset 2)");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
