//! rtcbench's one scenario loader. Scenarios: loading a TOML file, applying `--set` overrides, expanding sets of values into
//! variants (RFC 8867 §3: "[x, y]" means one run per value) and validating each variant once,
//! with errors that name the file, the field, the line when known, and what is allowed. Loading
//! also reads the capacity traces the scenario names ([`traces`]).

pub mod builtin;
pub mod calls;
pub mod cross;
pub mod elements;
pub mod limits;
mod locate;
pub mod lte;
mod param;
pub mod run;
pub mod schema;
mod traces;
pub mod wifi;

use std::fmt;
use std::sync::Arc;

use rtcbench_units::{Bitrate, DataSize, Duration};

use param::{Segment, Shape};
use rtcbench_net::link::capacity_trace::CapacityTrace;
use rtcbench_net::radio::lte::Port as LtePort;
use rtcbench_net::radio::wifi::Port as WifiPort;
pub use schema::*;

/// Index of a flow in a run (`meta.flows` in the trace).
pub type FlowId = u32;
/// Index of a link in a run: the scenario's links, then the BSSes' queues, then the cells'
/// buffers (`meta.links`).
pub type LinkId = u16;
/// Index of a route (the hops from a sender to a receiver) in a run.
pub type RouteId = u16;

/// A scenario that cannot be used, described for a person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ScenarioError {
    /// The file (or `builtin:<id>`).
    pub origin: String,
    /// The field path, e.g. `links[0].delay`.
    pub field: Option<String>,
    /// 1-based line in the file, when the error points at text.
    pub line: Option<usize>,
    pub message: String,
    /// Other fields the error is about (a call's start and the run's duration): a `--set` of any
    /// of them is named as the cause.
    pub related: Vec<String>,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.origin)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": {field}")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl ScenarioError {
    pub fn new(origin: &str, field: Option<String>, message: impl Into<String>) -> Self {
        Self { origin: origin.to_string(), field, line: None, message: message.into(), related: Vec::new() }
    }

    /// The error is also about `field`.
    pub(crate) fn about(mut self, field: &str) -> Self {
        self.related.push(field.to_string());
        self
    }
}

/// One runnable variant of a scenario: every field holds one value and it has been validated.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub spec: ScenarioSpec,
    /// `delay=50ms` style name of the variant; empty if the file has a single variant.
    pub variant: String,
    /// The capacity trace of each link (`spec.links[k]`), read when the scenario was loaded.
    pub capacity_traces: Vec<Option<Arc<CapacityTrace>>>,
    /// What this variant runs, as SHA-256 (hex): see [`fingerprint`].
    pub fingerprint: String,
}

impl Scenario {
    /// The variant as a file-name-safe slug (`delay-50ms`), or `default`.
    pub fn variant_slug(&self) -> String {
        if self.variant.is_empty() {
            return "default".into();
        }
        self.variant
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '_' { c } else { '-' })
            .collect()
    }

    /// The resolved scenario as TOML; loading it again gives the same scenario.
    pub fn to_toml(&self) -> String {
        toml::to_string(&self.spec).expect("a resolved scenario always serialises")
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Parses a scenario file (no expansion yet).
pub fn parse(text: &str, origin: &str) -> Result<ScenarioSpec, ScenarioError> {
    let de = toml::Deserializer::parse(text).map_err(|e| ScenarioError {
        origin: origin.into(),
        field: None,
        line: e.span().map(|s| line_of(text, s.start)),
        message: e.message().trim().to_string(),
        related: Vec::new(),
    })?;
    serde_path_to_error::deserialize::<_, ScenarioSpec>(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        ScenarioError {
            origin: origin.into(),
            field: (path != ".").then_some(path),
            line: inner.span().map(|s| line_of(text, s.start)),
            message: inner.message().trim().to_string(),
            related: Vec::new(),
        }
    })
}

/// Applies `path=value` overrides to scenario text. Path segments name table keys; an element
/// of a list of tables is chosen by its `name` (`links.forward.delay`) or its index
/// (`calls.0.video.max`). The value is read as TOML (numbers, lists, inline tables) or, failing
/// that, taken as a string (`--set duration=30s`). A bare name of a variant parameter pins it to
/// one value (`--set delay=50ms` is `variants.delay = ["50ms"]`).
pub fn apply_overrides<'a>(
    text: &'a str,
    origin: &str,
    sets: &[String],
) -> Result<std::borrow::Cow<'a, str>, ScenarioError> {
    if sets.is_empty() {
        return Ok(text.into());
    }
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| ScenarioError {
        origin: origin.into(),
        field: None,
        line: e.span().map(|s| line_of(text, s.start)),
        message: e.message().trim().to_string(),
        related: Vec::new(),
    })?;
    for set in sets {
        let err = |m: String| ScenarioError::new(origin, Some(format!("--set {set}")), m);
        let (path, raw) = set
            .split_once('=')
            .ok_or_else(|| err("an override is written path=value, e.g. links.forward.delay=80ms".into()))?;
        let raw = raw.trim();
        let value: toml_edit::Value = raw.parse().unwrap_or_else(|_| toml_edit::Value::from(raw));
        let mut segments: Vec<&str> = path.trim().split('.').filter(|s| !s.is_empty()).collect();
        if segments.is_empty() {
            return Err(err("the path is empty".into()));
        }
        let is_variant = |name: &str| doc.get("variants").and_then(|v| v.get(name)).is_some();
        let value = if let [name] = segments[..] {
            if is_variant(name) {
                segments.insert(0, "variants");
                match value {
                    toml_edit::Value::Array(_) => value,
                    one => toml_edit::Value::Array(std::iter::once(one).collect()),
                }
            } else {
                value
            }
        } else {
            value
        };
        set_in(doc.as_item_mut(), &segments, &value).map_err(err)?;
    }
    Ok(doc.to_string().into())
}

fn set_in(item: &mut toml_edit::Item, segs: &[&str], value: &toml_edit::Value) -> Result<(), String> {
    let select = |len: usize, names: Vec<Option<String>>, seg: &str| -> Result<usize, String> {
        match seg.parse::<usize>() {
            Ok(k) if k < len => Ok(k),
            _ => names.iter().position(|n| n.as_deref() == Some(seg)).ok_or_else(|| {
                let known: Vec<String> = names.into_iter().flatten().collect();
                format!("no element {seg:?} in this list (by name: {known:?}, or an index below {len})")
            }),
        }
    };
    // An element is named by its `name`, or, for a BSS's stations and a cell's UEs, by its `node`.
    if let Some(aot) = item.as_array_of_tables_mut() {
        let names = aot
            .iter()
            .map(|t| t.get("name").or_else(|| t.get("node")).and_then(|n| n.as_str()).map(String::from))
            .collect();
        let idx = select(aot.len(), names, segs[0])?;
        let table = aot.get_mut(idx).expect("index checked");
        return set_in_table(table, &segs[1..], value);
    }
    if let Some(arr) = item.as_array_mut() {
        let names = arr
            .iter()
            .map(|v| {
                let t = v.as_inline_table()?;
                t.get("name").or_else(|| t.get("node")).and_then(|n| n.as_str()).map(String::from)
            })
            .collect();
        let idx = select(arr.len(), names, segs[0])?;
        let elem = arr.get_mut(idx).expect("index checked");
        if segs.len() == 1 {
            *elem = value.clone();
            return Ok(());
        }
        let table = elem.as_inline_table_mut().ok_or("this list element is not a table")?;
        return set_in_table(table, &segs[1..], value);
    }
    let table =
        item.as_table_like_mut().ok_or_else(|| format!("{:?} is inside a value, not a table", segs[0]))?;
    set_in_table(table, segs, value)
}

fn set_in_table(
    table: &mut dyn toml_edit::TableLike,
    segs: &[&str],
    value: &toml_edit::Value,
) -> Result<(), String> {
    let Some((key, rest)) = segs.split_first() else {
        return Err("the path names a list element, not a field".into());
    };
    if rest.is_empty() {
        table.insert(key, toml_edit::Item::Value(value.clone()));
        return Ok(());
    }
    if table.get(key).is_none() {
        table.insert(key, toml_edit::Item::Value(toml_edit::InlineTable::new().into()));
    }
    set_in(table.get_mut(key).expect("present"), rest, value)
}

/// Loads scenario text: overrides, parsing, expansion into variants, validation, and the
/// capacity traces it names. `origin` is where the text comes from, for error messages and to
/// find trace files given relative to it: a file path, or `builtin:<path>` for a built-in
/// scenario (other text, e.g. "resolved scenario", finds relative traces from the working
/// directory).
///
/// An error names the line of the field it is about, or the `--set` that gave the field its value.
pub fn load(text: &str, origin: &str, sets: &[String]) -> Result<Vec<Scenario>, ScenarioError> {
    if text.len() > limits::MAX_SCENARIO_BYTES {
        return Err(ScenarioError::new(origin, None, too_large(text.len())));
    }
    let edited = apply_overrides(text, origin, sets)?;
    if edited.len() > limits::MAX_SCENARIO_BYTES {
        return Err(ScenarioError::new(origin, Some("--set".into()), too_large(edited.len())));
    }
    expand(&edited, origin).map_err(|e| place(e, origin, text, &edited, sets))
}

/// Why a scenario text of `bytes` is refused.
pub fn too_large(bytes: usize) -> String {
    format!(
        "{bytes} bytes; a scenario is at most {} MiB (for a long or fine capacity variation, give the link \
         a capacity trace file: docs/scenarios.md)",
        limits::MAX_SCENARIO_BYTES >> 20
    )
}

/// Points an error about the scenario text from `origin` at what caused it: the `--set` that set
/// its field (the field then goes in the message), else the field's line in the file. (An error
/// in a capacity trace file names that file and its own line.)
fn place(mut e: ScenarioError, origin: &str, text: &str, edited: &str, sets: &[String]) -> ScenarioError {
    let Some(field) = e.field.clone() else { return e };
    if field.starts_with("--set ") || e.origin != origin {
        return e;
    }
    let culprit = sets.iter().rev().find(|set| {
        let path = set.split_once('=').map_or(set.as_str(), |(p, _)| p);
        std::iter::once(&field).chain(&e.related).any(|f| locate::set_by(edited, path, f))
    });
    if let Some(set) = culprit {
        e.field = Some(format!("--set {set}"));
        e.message = format!("{field}: {}", e.message);
        e.line = None;
    } else if e.line.is_none() {
        e.line = locate::line_of(text, &field);
    }
    e
}

/// A field's path as errors write it, as `validate` does: an element of `links`, `wifi` or `lte`
/// by its `name` (their names are required and unique), a schedule's step as `schedule[k]`, any
/// other list element by its index (`links.fwd.schedule[0].capacity`, `calls.0.video.max`,
/// `wifi.wlan.stations.1.per`).
fn field_path(tree: &toml::Table, path: &[Segment]) -> String {
    let mut out = String::new();
    let mut parent = "";
    for (depth, seg) in path.iter().enumerate() {
        match seg {
            Segment::Key(k) => {
                if depth > 0 {
                    out.push('.');
                }
                out.push_str(k);
                parent = k;
            }
            Segment::Index(i) if parent == "schedule" => out.push_str(&format!("[{i}]")),
            Segment::Index(i) => {
                // Named as `--set` names them: by `name`, a station or a UE by its `node`.
                let by_name = (depth == 1 && ["links", "wifi", "lte"].contains(&parent))
                    || ["stations", "ues"].contains(&parent);
                let element = by_name.then(|| param::at(tree, &path[..=depth])).flatten();
                let name = element.and_then(|e| e.get("name").or_else(|| e.get("node")));
                match name.and_then(toml::Value::as_str) {
                    Some(name) => out.push_str(&format!(".{name}")),
                    None => out.push_str(&format!(".{i}")),
                }
            }
        }
    }
    out
}

/// Reads scenario text and expands its sets of values into one resolved, validated scenario per
/// combination. Named sets (`[variants]`) come first in name order, then anonymous sets in schema
/// order (the order in which the structs of [`schema`] declare their fields); the last varies
/// fastest.
///
/// Expansion works on the file's TOML tree: each variant is the tree with every set replaced by
/// one of its values, read into a [`ScenarioSpec`] in which every parameter is one value. The
/// types alone say which fields take a set ([`Param`], see `param.rs`), so a new `Param` field
/// varies with no other change.
pub fn expand(text: &str, origin: &str) -> Result<Vec<Scenario>, ScenarioError> {
    let spec = parse(text, origin)?;
    let mut tree: toml::Table = toml::from_str(text).expect("the text parsed as a scenario above");
    let err = |tree: &toml::Table, path: &[Segment], message: String| {
        ScenarioError::new(origin, Some(field_path(tree, path)), message)
    };
    // Discover the axes.
    let named: Vec<(String, Vec<toml::Value>)> = spec.variants.clone().into_iter().collect();
    let sets = param::find_sets(&spec);
    let mut anonymous: Vec<(String, &[String])> = Vec::new();
    // For each set: its axis, named (index in `named`) or anonymous (index in `anonymous`).
    let mut axes: Vec<Axis> = Vec::with_capacity(sets.len());
    let mut used: Vec<bool> = vec![false; named.len()];
    for set in &sets {
        match &set.shape {
            Shape::Many(labels) => {
                let short = match set.path.last() {
                    Some(Segment::Key(k)) => k.clone(),
                    _ => field_path(&tree, &set.path),
                };
                anonymous.push((short, labels));
                axes.push(Axis::Anonymous(anonymous.len() - 1));
            }
            Shape::Var(name) => {
                let Some(k) = named.iter().position(|(n, _)| n == name) else {
                    let known: Vec<&str> = named.iter().map(|(n, _)| n.as_str()).collect();
                    return Err(err(
                        &tree,
                        &set.path,
                        format!("\"${name}\" is not a set declared in [variants] (declared: {known:?})"),
                    ));
                };
                used[k] = true;
                axes.push(Axis::Named(k));
            }
        }
    }
    if let Some(k) = used.iter().position(|u| !u) {
        return Err(ScenarioError::new(
            origin,
            Some(format!("variants.{}", named[k].0)),
            "this set is declared but no field uses it (write \"$name\" in a field)",
        ));
    }
    for (name, values) in &named {
        if values.is_empty() {
            return Err(ScenarioError::new(
                origin,
                Some(format!("variants.{name}")),
                "a set must not be empty",
            ));
        }
    }

    let sizes: Vec<usize> =
        named.iter().map(|(_, v)| v.len()).chain(anonymous.iter().map(|(_, l)| l.len())).collect();
    // Bounded before anything is allocated: the product of a few dozen small sets overflows, and
    // a few sets of ten already ask for more variants than anyone runs from one file.
    let total = sizes
        .iter()
        .try_fold(1usize, |n, &size| n.checked_mul(size).filter(|&n| n <= limits::MAX_VARIANTS))
        .ok_or_else(|| {
            let shown: Vec<String> = sizes.iter().map(usize::to_string).collect();
            ScenarioError::new(
                origin,
                Some("variants".into()),
                format!(
                    "the sets ({} values) make more than {} variants; use a sweep file for large grids",
                    shown.join(" × "),
                    limits::MAX_VARIANTS
                ),
            )
        })?;
    let mut out = Vec::with_capacity(total);
    let mut traces = traces::TraceCache::default();
    for combo in 0..total {
        // Mixed-radix digits of `combo`, last axis fastest.
        let mut idx = vec![0; sizes.len()];
        let mut rest = combo;
        for (d, size) in idx.iter_mut().zip(&sizes).rev() {
            *d = rest % size;
            rest /= size;
        }
        // A file without sets is its one variant: its tree is not copied (a long schedule is
        // most of a large file).
        let mut variant_tree = if sets.is_empty() { std::mem::take(&mut tree) } else { tree.clone() };
        for (set, axis) in sets.iter().zip(&axes) {
            let value = match *axis {
                Axis::Named(k) => {
                    let value = named[k].1[idx[k]].clone();
                    (set.check)(&value).map_err(|m| err(&tree, &set.path, m))?;
                    value
                }
                Axis::Anonymous(k) => {
                    let values = param::at(&tree, &set.path).and_then(toml::Value::as_array);
                    values.expect("a set is a list")[idx[named.len() + k]].clone()
                }
            };
            *param::at_mut(&mut variant_tree, &set.path).expect("the set is in the tree") = value;
        }
        let mut spec: ScenarioSpec = param::read_resolved(toml::Value::Table(variant_tree)).map_err(|e| {
            // Not expected: every value was read or checked as its field's type above.
            let path = e.path().to_string();
            ScenarioError::new(origin, Some(path), e.into_inner().message().trim())
        })?;
        let mut parts: Vec<String> = named
            .iter()
            .enumerate()
            .map(|(k, (name, values))| format!("{name}={}", param_label(&values[idx[k]])))
            .collect();
        parts.extend(
            anonymous
                .iter()
                .enumerate()
                .map(|(k, (short, labels))| format!("{short}={}", labels[idx[named.len() + k]])),
        );
        let variant = parts.join(",");
        spec.variants.clear();
        // A resolved file (results' scenario.toml) keeps the variant name it was written with.
        let variant = if variant.is_empty() { spec.variant.clone().unwrap_or_default() } else { variant };
        spec.variant = (!variant.is_empty()).then(|| variant.clone());
        validate(&spec, origin)?;
        let loaded = traces.load(&mut spec, origin)?;
        let digests: Vec<Option<&str>> = loaded.iter().map(|l| l.as_ref().map(|(_, d)| d.as_str())).collect();
        let fingerprint = fingerprint(&spec, &digests);
        let capacity_traces = loaded.into_iter().map(|l| l.map(|(trace, _)| trace)).collect();
        out.push(Scenario { spec, variant, capacity_traces, fingerprint });
    }
    Ok(out)
}

/// Which axis of the variants' grid a set is.
enum Axis {
    /// `[variants]`'s `k`-th set.
    Named(usize),
    /// The `k`-th anonymous set.
    Anonymous(usize),
}

/// SHA-256 of `bytes`, as 64 lowercase hex digits.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The identity of a resolved variant: the SHA-256 of its TOML with the words that do not change
/// what runs left out (`title`, `source`, `description`, the variant's name) and each capacity
/// trace file replaced by the SHA-256 of its text (`trace_digests[k]` for `spec.links[k]`). Two
/// variants run the same network, traffic and controller parameters exactly when their
/// fingerprints are equal, wherever their files are; results folders are keyed by it.
fn fingerprint(spec: &ScenarioSpec, trace_digests: &[Option<&str>]) -> String {
    let mut canonical = spec.clone();
    canonical.title = None;
    canonical.source = None;
    canonical.description = None;
    canonical.variant = None;
    for (link, digest) in canonical.links.iter_mut().zip(trace_digests) {
        if let (Some(trace), Some(digest)) = (&mut link.capacity_trace, digest) {
            trace.file = Param::One(format!("sha256:{digest}"));
        }
    }
    let text = toml::to_string(&canonical).expect("a resolved scenario always serialises");
    sha256_hex(text.as_bytes())
}

/// RFC 8867 §4.2's UDP mechanism needs a constant physical rate at least as high as every
/// capacity it is to leave free.
fn validate_udp_background(l: &LinkSpec, p: &str, origin: &str) -> Result<(), ScenarioError> {
    let err = |field: String, m: String| Err(ScenarioError::new(origin, Some(field), m));
    let Some(physical) = l.physical_capacity.as_ref().map(|c| *c.get()) else {
        return err(
            format!("{p}.physical_capacity"),
            "the udp-background mechanism needs it (RFC 8867: 4Mbps)".into(),
        );
    };
    let reference = l.reference_capacity.as_ref().map(|c| *c.get());
    let rates: Vec<rtcbench_units::Bitrate> = match (&l.schedule, &l.capacity) {
        (Some(steps), _) => steps
            .iter()
            .map(|st| {
                st.capacity
                    .as_ref()
                    .map_or_else(|| reference.unwrap_or_default() * st.ratio.unwrap_or(0.0), |c| *c.get())
            })
            .collect(),
        (None, Some(c)) => vec![*c.get()],
        (None, None) => {
            return err(p.to_string(), "the udp-background mechanism needs a `capacity` or `schedule`".into())
        }
    };
    match rates.iter().max() {
        Some(&max) if max > physical => err(
            format!("{p}.physical_capacity"),
            format!("{physical} is below the highest scheduled capacity ({max})"),
        ),
        _ => Ok(()),
    }
}

/// A capacity trace replaces the link's `capacity` and `schedule`, drives the link's own rate,
/// and takes OpenNetLab's options only for an OpenNetLab file.
fn validate_capacity_trace(
    l: &LinkSpec,
    t: &CapacityTraceSpec,
    p: &str,
    origin: &str,
) -> Result<(), ScenarioError> {
    let err = |field: String, m: String| Err(ScenarioError::new(origin, Some(field), m));
    let others: Vec<&str> = [
        ("capacity", l.capacity.is_some()),
        ("schedule", l.schedule.is_some()),
        ("reference_capacity", l.reference_capacity.is_some()),
    ]
    .iter()
    .filter_map(|&(name, set)| set.then_some(name))
    .collect();
    if !others.is_empty() {
        return err(
            p.to_string(),
            format!(
                "give the capacity as one of `capacity`, `schedule` or `capacity_trace`; this link also has `{}`",
                others.join("`, `")
            ),
        );
    }
    if l.mechanism.as_ref().is_some_and(|m| *m.get() == CapacityMechanism::UdpBackground) {
        return err(
            format!("{p}.mechanism"),
            "a capacity trace drives the link's own rate: the mechanism must be link-rate (udp-background needs a `capacity` or `schedule`)"
                .into(),
        );
    }
    let format = traces::format_of(t)
        .map_err(|m| ScenarioError::new(origin, Some(format!("{p}.capacity_trace.format")), m))?;
    if format != TraceFormat::Opennetlab {
        for (name, set) in [("direction", t.direction.is_some()), ("ignore", !t.ignore.is_empty())] {
            if set {
                return err(
                    format!("{p}.capacity_trace.{name}"),
                    format!("only OpenNetLab traces have it; this trace is {}", format.name()),
                );
            }
        }
    }
    Ok(())
}

/// Parameters that only some disciplines read are rejected on the others, so that a typo'd
/// scenario does not silently run another experiment.
fn validate_queue(q: &QueueSpec, p: &str, origin: &str) -> Result<(), ScenarioError> {
    let kind = q.kind();
    let name = kind.name();
    let reject = |field: &str, allowed: &str| {
        Err(ScenarioError::new(
            origin,
            Some(format!("{p}.{field}")),
            format!("not used by {name} (only by {allowed})"),
        ))
    };
    let aqm = matches!(kind, QueueKind::Codel | QueueKind::FqCodel | QueueKind::Pie);
    if q.target.is_some() && !aqm && kind != QueueKind::Dualpi2 {
        return reject("target", "codel, fq-codel, pie, dualpi2");
    }
    if kind != QueueKind::Dualpi2 {
        if let Some(field) = q.dualpi2_fields_set().first() {
            return reject(field, "dualpi2");
        }
    }
    if q.interval.is_some() && !matches!(kind, QueueKind::Codel | QueueKind::FqCodel) {
        return reject("interval", "codel, fq-codel");
    }
    if q.threshold.is_some() && kind != QueueKind::Step {
        return reject("threshold", "step");
    }
    if q.ecn.is_some() && !aqm {
        return reject("ecn", "codel, fq-codel, pie; step and dualpi2 always mark");
    }
    Ok(())
}

/// The ranges of DualPI2's own fields (docs/limits.md); `target`, `rtt_max` and `l_min_th`
/// are checked with the other AQM times.
fn validate_dualpi2(q: &QueueSpec, qp: &str, origin: &str) -> Result<(), ScenarioError> {
    use limits::*;
    let field = |name: &str| format!("{qp}.{name}");
    if let Some(t) = q.t_update {
        within(origin, field("t_update"), t, MIN_DUALPI2_T_UPDATE, MAX_AQM_TIME)?;
    }
    if let Some(r) = q.l_range {
        within(origin, field("l_range"), r, Duration::ZERO, MAX_AQM_TIME)?;
    }
    for (name, gain) in [("alpha", q.alpha), ("beta", q.beta)] {
        if let Some(g) = gain {
            within(origin, field(name), g, 0.0, MAX_DUALPI2_GAIN)?;
        }
    }
    if let Some(k) = q.coupling {
        within(origin, field("coupling"), k, MIN_DUALPI2_COUPLING, MAX_DUALPI2_COUPLING)?;
    }
    if let Some(n) = q.th_len {
        within(origin, field("th_len"), n, 0, MAX_DUALPI2_TH_LEN)?;
    }
    if let Some(w) = q.classic_weight {
        within(origin, field("classic_weight"), w, 0.0, 1.0)?;
    }
    if let Some(b) = q.min_backlog {
        within(origin, field("min_backlog"), b, DataSize::ZERO, MAX_QUEUE_BYTES)?;
    }
    Ok(())
}

fn param_label(v: &toml::Value) -> String {
    param::label_of(v)
}

/// `Err` naming `field` unless a source's `start` is before the end of the run.
fn starts_in_run(
    origin: &str,
    field: String,
    start: Option<Duration>,
    duration: Duration,
) -> Result<(), ScenarioError> {
    match start {
        Some(t) if t >= duration => Err(ScenarioError::new(
            origin,
            Some(field),
            format!("{t} is not before the end of the run ({duration}): the flow would never start"),
        )
        .about("duration")),
        _ => Ok(()),
    }
}

/// Checks the settings of a call (`calls.N`) or of a conference's streams
/// (`conferences.N.call`): everything but its ends.
fn validate_call_settings(
    c: &CallSpec,
    p: &str,
    duration: Duration,
    origin: &str,
) -> Result<(), ScenarioError> {
    use limits::*;
    let err = |field: String, m: String| Err(ScenarioError::new(origin, Some(field), m));
    let starts_in_run =
        |field: String, start: Option<Duration>| starts_in_run(origin, field, start, duration);
    if let (Some(start), Some(stop)) = (c.start, c.stop) {
        if stop <= start {
            return err(format!("{p}.stop"), "must be after `start`".into());
        }
    }
    starts_in_run(format!("{p}.start"), c.start)?;
    if let Some(v) = &c.video {
        let get = |x: &Option<Param<rtcbench_units::Bitrate>>| x.as_ref().map(|p| *p.get());
        for (name, rate) in [("min", get(&v.min)), ("max", get(&v.max)), ("start", get(&v.start))] {
            if let Some(r) = rate {
                within(origin, format!("{p}.video.{name}"), r, Bitrate::bps(1), MAX_RATE)?;
            }
        }
        // RFC 8867 §4.3's defaults apply to what is not given (`elements::DEFAULT_VIDEO_MIN`, `_MAX`).
        let min = get(&v.min).unwrap_or(Bitrate::kbps(150));
        let max = get(&v.max).unwrap_or(Bitrate::kbps(1500));
        if min > max {
            return err(format!("{p}.video.max"), format!("max ({max}) is below min ({min})"));
        }
        if let Some(start) = get(&v.start) {
            if start > max {
                return err(format!("{p}.video.start"), format!("start ({start}) is above max ({max})"));
            }
            if start < min {
                return err(format!("{p}.video.start"), format!("start ({start}) is below min ({min})"));
            }
        }
        if let Some(fps) = v.fps {
            if !(fps > 0.0 && fps <= 240.0) {
                return err(format!("{p}.video.fps"), "must be in (0, 240]".into());
            }
        }
    }
    if let Some(a) = &c.audio {
        if let Some(r) = a.rate {
            within(origin, format!("{p}.audio.rate"), r, Bitrate::bps(1), MAX_AUDIO_RATE)?;
        }
        if let Some(t) = a.packet_interval {
            within(origin, format!("{p}.audio.packet_interval"), t, MIN_AUDIO_INTERVAL, MAX_AUDIO_INTERVAL)?;
        }
        // One packet a codec frame (`rtcbench_media::audio`): with its headers it must fit in
        // the MTU, as Opus's largest packets do.
        let rate = a.rate.unwrap_or(elements::DEFAULT_AUDIO_RATE);
        let interval = a.packet_interval.unwrap_or(elements::DEFAULT_AUDIO_INTERVAL);
        let bytes = (rate.as_bps() as f64 * interval.as_secs_f64() / 8.0).ceil() as u64;
        let most = limits::MAX_AUDIO_PAYLOAD.as_bytes();
        if bytes > most {
            let field = if a.rate.is_some() { "rate" } else { "packet_interval" };
            return Err(ScenarioError::new(
                origin,
                Some(format!("{p}.audio.{field}")),
                format!(
                    "{rate} for {interval} is {bytes} bytes a packet; an audio packet carries at most {most} \
                     (one packet a frame, within a 1500-byte MTU): lower the rate or the packet interval"
                ),
            )
            .about(&format!("{p}.audio.packet_interval")));
        }
    }
    if let Some(f) = &c.feedback {
        for (name, t) in [
            ("twcc_interval", f.twcc_interval),
            ("ccfb_interval", f.ccfb_interval),
            ("report_interval", f.report_interval),
        ] {
            if let Some(t) = t {
                within(
                    origin,
                    format!("{p}.feedback.{name}"),
                    t,
                    MIN_FEEDBACK_INTERVAL,
                    MAX_FEEDBACK_INTERVAL,
                )?;
            }
        }
    }
    for (k, pause) in c.pause.iter().enumerate() {
        let pp = format!("{p}.pause[{k}]");
        if pause.to <= pause.from {
            return err(pp, "`to` must be after `from`".into());
        }
        if k > 0 && pause.from < c.pause[k - 1].to {
            return err(pp, "pauses must be in order and must not overlap".into());
        }
    }
    if let Some(w) = c.priority {
        if !(w > 0.0 && w.is_finite()) {
            return err(format!("{p}.priority"), "must be a positive number".into());
        }
    }
    if let Some(r) = c.fec_rate {
        if !(0.0..=1.0).contains(&r) {
            return err(
                format!("{p}.fec_rate"),
                format!("{r} is not a rate of FEC packets per media packet (allowed: 0 to 1)"),
            );
        }
        if c.fec.as_ref().is_some_and(|f| f.get().scheme().is_none()) {
            return err(format!("{p}.fec_rate"), "needs FEC on (`fec = false` for this call)".into());
        }
    }
    if let Some(jb) = &c.jitter_buffer {
        if c.nack == Some(false) {
            return err(format!("{p}.jitter_buffer"), "needs NACK on (`nack = false` for this call)".into());
        }
        if let Some(d) = jb.rtx_min_delay {
            within(origin, format!("{p}.jitter_buffer.rtx_min_delay"), d, Duration::ZERO, MAX_RTX_MIN_DELAY)?;
        }
    }
    Ok(())
}

/// Checks what a conference is made of: its participants, the fields its topology needs and no
/// other, and its streams' settings. Routes are checked with every call's (`validate`).
fn validate_conferences(
    s: &ScenarioSpec,
    is_node: &dyn Fn(&str) -> bool,
    duration: Duration,
    origin: &str,
) -> Result<(), ScenarioError> {
    let err = |field: String, m: String| Err(ScenarioError::new(origin, Some(field), m));
    for (i, c) in s.conferences.iter().enumerate() {
        let p = format!("conferences.{i}");
        if c.participants.len() < 2 {
            return err(
                format!("{p}.participants"),
                format!("a conference needs at least 2 participants; it has {}", c.participants.len()),
            );
        }
        for (k, node) in c.participants.iter().enumerate() {
            if !is_node(node) {
                return err(
                    format!("{p}.participants"),
                    format!("node {node:?} is not a node: no link, BSS or cell has it"),
                );
            }
            if c.participants[..k].contains(node) {
                return err(format!("{p}.participants"), format!("{node:?} is listed twice"));
            }
        }
        let needs =
            |field: &str, value: &Option<String>, needed: bool, what: &str| -> Result<(), ScenarioError> {
                match (value, needed) {
                    (None, true) => err(format!("{p}.{field}"), format!("a{what} conference needs it")),
                    (Some(_), false) => err(
                        format!("{p}.{field}"),
                        format!(
                            "not used by a{what} conference (`source`: one-to-many only; `sfu`: sfu only)"
                        ),
                    ),
                    _ => Ok(()),
                }
            };
        let what = match c.topology {
            Topology::Mesh => " mesh",
            Topology::OneToMany => " one-to-many",
            Topology::Sfu => "n sfu",
        };
        needs("source", &c.source, c.topology == Topology::OneToMany, what)?;
        needs("sfu", &c.sfu, c.topology == Topology::Sfu, what)?;
        if let Some(source) = &c.source {
            if !c.participants.contains(source) {
                return err(format!("{p}.source"), format!("{source:?} is not one of the participants"));
            }
        }
        if let Some(sfu) = &c.sfu {
            if !is_node(sfu) {
                return err(
                    format!("{p}.sfu"),
                    format!("node {sfu:?} is not a node: no link, BSS or cell has it"),
                );
            }
            if c.participants.contains(sfu) {
                return err(
                    format!("{p}.sfu"),
                    format!("{sfu:?} is a participant; the SFU runs on a node of its own"),
                );
            }
        }
        if let Some(via) = &c.via {
            if c.topology == Topology::Sfu {
                return err(
                    format!("{p}.via"),
                    "an sfu conference's media goes through its SFU; `via` (a TURN relay) is for mesh and \
                     one-to-many"
                        .into(),
                );
            }
            if !is_node(via) {
                return err(
                    format!("{p}.via"),
                    format!("node {via:?} is not a node: no link, BSS or cell has it"),
                );
            }
            if c.participants.contains(via) {
                return err(format!("{p}.via"), format!("the relay {via:?} must not be a participant"));
            }
        }
        validate_call_settings(&c.call.0, &format!("{p}.call"), duration, origin)?;
    }
    Ok(())
}

/// One hop of a route: a link, or a BSS crossed from the node at one of its ports to the node at
/// another (a station's packet to the AP, the AP's to a station, or a station's to another through
/// the AP's queue: one hop, as the BSS relays it itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hop {
    /// Index into the scenario's `links` (which are the run's first links).
    Link(LinkId),
    /// Index into the scenario's `wifi`, and the ports (0 the AP, i the i-th station).
    Wifi { bss: u16, from: WifiPort, to: WifiPort },
    /// Index into the scenario's `lte`, and the ports (0 the eNB, i the i-th UE): a UE's uplink
    /// or its downlink. UE to UE is two hops, through the eNB's node.
    Lte { cell: u16, from: LtePort, to: LtePort },
}

/// The fewest-hop route from `from` to `to` over the scenario's links, BSSes and cells, or `None`
/// if there is none (or `from == to`). Ties go to links before BSSes before cells, and to the
/// earlier in the file, so the route is a function of the scenario alone.
pub fn find_route(
    links: &[LinkSpec],
    wifi: &[WifiSpec],
    lte: &[LteSpec],
    from: &str,
    to: &str,
) -> Option<Vec<Hop>> {
    let mut prev: std::collections::BTreeMap<&str, Option<(Hop, &str)>> = [(from, None)].into();
    let mut frontier = vec![from];
    while !frontier.is_empty() && !prev.contains_key(to) {
        let mut next = Vec::new();
        for node in frontier {
            let by_link = links
                .iter()
                .enumerate()
                .filter(|(_, l)| l.from == node)
                .map(|(i, l)| (Hop::Link(i as LinkId), l.to.as_str()));
            let by_bss = wifi.iter().enumerate().flat_map(|(b, w)| {
                let port = w.port_of(node);
                w.members().enumerate().filter_map(move |(q, member)| {
                    let p = port?;
                    (usize::from(p) != q).then_some((
                        Hop::Wifi { bss: b as u16, from: WifiPort(p), to: WifiPort(q as u16) },
                        member,
                    ))
                })
            });
            // A UE reaches only its eNB, and the eNB each of its UEs.
            let by_cell = lte.iter().enumerate().flat_map(|(c, l)| {
                let port = l.port_of(node);
                l.members().enumerate().filter_map(move |(q, member)| {
                    let p = port?;
                    let one_end_enb = (p == 0) != (q == 0);
                    one_end_enb.then_some((
                        Hop::Lte { cell: c as u16, from: LtePort(p), to: LtePort(q as u16) },
                        member,
                    ))
                })
            });
            for (hop, next_node) in by_link.chain(by_bss).chain(by_cell) {
                if !prev.contains_key(next_node) {
                    prev.insert(next_node, Some((hop, node)));
                    next.push(next_node);
                }
            }
        }
        frontier = next;
    }
    let mut path = Vec::new();
    let mut node = to;
    while let Some(Some((hop, before))) = prev.get(node) {
        path.push(*hop);
        node = before;
    }
    (prev.contains_key(to) && node == from && from != to).then(|| {
        path.reverse();
        path
    })
}

/// Fewest-hop path over directed links (ties: links in file order), as link indices: the route
/// [`find_route`] takes when there is no BSS.
pub fn find_path(links: &[LinkSpec], from: &str, to: &str) -> Option<Vec<LinkId>> {
    let route = find_route(links, &[], &[], from, to)?;
    Some(
        route
            .into_iter()
            .map(|hop| match hop {
                Hop::Link(i) => i,
                Hop::Wifi { .. } | Hop::Lte { .. } => unreachable!("no BSS or cell was given"),
            })
            .collect(),
    )
}

/// `Err` naming `field` unless `lo <= v <= hi`; `what` says what the value is, for the message.
fn within<T: PartialOrd + std::fmt::Display>(
    origin: &str,
    field: impl Into<String>,
    v: T,
    lo: T,
    hi: T,
) -> Result<(), ScenarioError> {
    if v < lo || v > hi {
        return Err(ScenarioError::new(
            origin,
            Some(field.into()),
            format!("{v} is out of range (allowed: {lo} to {hi})"),
        ));
    }
    Ok(())
}

/// The names of every flow the scenario makes, in the trace's order, with the field that names
/// each (flows of one `[[tcp]]` group share its field).
fn flow_names(s: &ScenarioSpec) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for c in calls::run_calls(s) {
        for (_, suffix, _) in c.spec.flows() {
            out.push((format!("{}.{suffix}", c.name), format!("{}.name", c.field)));
        }
    }
    for (i, t) in s.tcp.iter().enumerate() {
        for k in 0..t.count.unwrap_or(1) {
            let name = t.flow_name(i, k);
            out.push((format!("{name}.ack"), format!("tcp.{i}.name")));
            out.push((name, format!("tcp.{i}.name")));
        }
    }
    for (i, c) in s.cbr.iter().enumerate() {
        out.push((c.name_or_default(i), format!("cbr.{i}.name")));
    }
    for l in &s.links {
        if l.mechanism.as_ref().is_some_and(|m| *m.get() == CapacityMechanism::UdpBackground) {
            out.push((format!("{}.udp-background", l.name), format!("links.{}.mechanism", l.name)));
        }
    }
    out
}

/// Checks the limits of `limits` and what the schema cannot: consistency between fields.
fn validate(s: &ScenarioSpec, origin: &str) -> Result<(), ScenarioError> {
    use limits::*;
    let err = |field: String, m: String| Err(ScenarioError::new(origin, Some(field), m));
    if let Some(m) = id_error(&s.id) {
        return err("id".into(), m);
    }
    let duration = *s.duration.get();
    if duration.as_micros() <= 0 {
        return err("duration".into(), "must be positive".into());
    }
    within(origin, "duration", duration, Duration::from_micros(1), MAX_DURATION)?;
    let starts_in_run =
        |field: String, start: Option<Duration>| starts_in_run(origin, field, start, duration);
    if s.links.is_empty() {
        return err("links".into(), "a scenario needs at least one link".into());
    }
    if s.links.len() > MAX_LINKS {
        return err("links".into(), format!("{} links; at most {MAX_LINKS}", s.links.len()));
    }
    for (i, l) in s.links.iter().enumerate() {
        let p = format!("links.{}", l.name);
        if s.links[..i].iter().any(|o| o.name == l.name) {
            return err(format!("{p}.name"), format!("link name {:?} is used twice", l.name));
        }
        if l.from == l.to {
            return err(p, "a link joins two different nodes (from != to)".into());
        }
        if l.capacity.is_some() && l.schedule.is_some() {
            return err(p, "give either `capacity` or `schedule`, not both".into());
        }
        if let Some(d) = &l.delay {
            within(origin, format!("{p}.delay"), *d.get(), Duration::ZERO, MAX_DELAY)?;
        }
        for (name, rate) in [
            ("capacity", &l.capacity),
            ("reference_capacity", &l.reference_capacity),
            ("physical_capacity", &l.physical_capacity),
        ] {
            if let Some(r) = rate {
                within(origin, format!("{p}.{name}"), *r.get(), Bitrate::bps(1), MAX_RATE)?;
            }
        }
        let limited = l.capacity.is_some()
            || l.schedule.is_some()
            || l.capacity_trace.is_some()
            || l.physical_capacity.is_some();
        if limited && l.queue.is_none() {
            return err(
                format!("{p}.queue"),
                "a link with a capacity needs a queue size, e.g. queue = { size = \"300ms\" } (RFC 8867 §4.2) \
                 or { size = \"60KB\" }; a buffer without limit grows without bound, write size = \"unlimited\" \
                 if that is what you want"
                    .into(),
            );
        }
        if let Some(q) = &l.queue {
            let qp = format!("{p}.queue");
            match *q.size.get() {
                QueueSize::Time(t) => {
                    within(origin, format!("{qp}.size"), t, Duration::from_micros(1), MAX_QUEUE_TIME)?
                }
                QueueSize::Bytes(b) => {
                    within(origin, format!("{qp}.size"), b, MIN_QUEUE_BYTES, MAX_QUEUE_BYTES)?
                }
                QueueSize::Unlimited => {}
            }
            for (name, t) in [
                ("target", q.target),
                ("interval", q.interval),
                ("threshold", q.threshold),
                ("rtt_max", q.rtt_max),
                ("l_min_th", q.l_min_th),
            ] {
                if let Some(t) = t {
                    within(origin, format!("{qp}.{name}"), t, Duration::from_micros(1), MAX_AQM_TIME)?;
                }
            }
            validate_dualpi2(q, &qp, origin)?;
        }
        if let Some(t) = &l.capacity_trace {
            validate_capacity_trace(l, t, &p, origin)?;
        }
        if let Some(steps) = &l.schedule {
            if steps.is_empty() {
                return err(format!("{p}.schedule"), "a schedule needs at least one step".into());
            }
            if steps.len() > MAX_SCHEDULE_STEPS {
                return err(
                    format!("{p}.schedule"),
                    format!("{} steps; at most {MAX_SCHEDULE_STEPS}", steps.len()),
                );
            }
            if steps[0].at != Duration::ZERO {
                return err(
                    format!("{p}.schedule[0].at"),
                    format!("the first step is at {}; a schedule starts at 0s (the capacity before it would be undefined)", steps[0].at),
                );
            }
            for (k, st) in steps.iter().enumerate() {
                let sp = format!("{p}.schedule[{k}]");
                if k > 0 && st.at <= steps[k - 1].at {
                    return err(sp, "steps must be in increasing `at` order".into());
                }
                if let Some(c) = &st.capacity {
                    within(origin, format!("{sp}.capacity"), *c.get(), Bitrate::ZERO, MAX_RATE)?;
                }
                // A step at or after the end never applies; allowed so that `--set duration=…` can
                // shorten a scenario without editing its schedule.
                match (&st.capacity, st.ratio) {
                    (Some(_), None) => {}
                    (None, Some(r)) if (0.0..=1000.0).contains(&r) => {
                        if l.reference_capacity.is_none() {
                            return err(sp, "`ratio` needs the link's `reference_capacity`".into());
                        }
                    }
                    (None, Some(r)) => {
                        return err(
                            format!("{sp}.ratio"),
                            format!("{r} is out of range (allowed: 0 to 1000)"),
                        )
                    }
                    _ => return err(sp, "each step gives exactly one of `capacity` or `ratio`".into()),
                }
            }
        }
        if let Some(j) = &l.jitter {
            let n = j.n_std.as_ref().map_or(3.0, |n| *n.get());
            if !(n > 0.0 && n <= MAX_JITTER_N_STD) {
                return err(
                    format!("{p}.jitter.n_std"),
                    format!("{n} is out of range (allowed: above 0, up to {MAX_JITTER_N_STD})"),
                );
            }
            within(origin, format!("{p}.jitter.std"), *j.std.get(), Duration::ZERO, MAX_JITTER_STD)?;
        }
        if l.mechanism.as_ref().is_some_and(|m| *m.get() == CapacityMechanism::UdpBackground) {
            validate_udp_background(l, &p, origin)?;
        }
        if let Some(q) = &l.queue {
            validate_queue(q, &format!("{p}.queue"), origin)?;
        }
        let probability = |name: &str, v: f64| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                err(format!("{p}.loss.{name}"), format!("{v} is not a probability (allowed: 0 to 1)"))
            }
        };
        match &l.loss {
            Some(LossSpec::Bernoulli { rate }) => probability("rate", *rate.get())?,
            Some(LossSpec::GilbertElliott { p: gp, r, loss_good, loss_bad }) => {
                probability("p", *gp.get())?;
                probability("r", *r.get())?;
                probability("loss_good", loss_good.as_ref().map_or(0.0, |v| *v.get()))?;
                probability("loss_bad", loss_bad.as_ref().map_or(1.0, |v| *v.get()))?;
            }
            None => {}
        }
    }
    if s.calls.is_empty() && s.conferences.is_empty() && s.tcp.is_empty() && s.cbr.is_empty() {
        return err("calls".into(), "a scenario needs at least one call, conference, TCP or CBR flow".into());
    }
    if s.cbr.len() > MAX_CBR_FLOWS {
        return err("cbr".into(), format!("{} CBR flows; at most {MAX_CBR_FLOWS}", s.cbr.len()));
    }
    let tcp_flows: u64 = s.tcp.iter().map(|t| u64::from(t.count.unwrap_or(1))).sum();
    if tcp_flows > MAX_TCP_FLOWS {
        return err("tcp".into(), format!("{tcp_flows} TCP flows in all; at most {MAX_TCP_FLOWS}"));
    }
    let link_nodes = s.links.iter().flat_map(|l| [l.from.as_str(), l.to.as_str()]);
    let nodes: Vec<&str> = link_nodes
        .chain(s.wifi.iter().flat_map(|w| w.members()))
        .chain(s.lte.iter().flat_map(|l| l.members()))
        .collect();
    let is_node = |node: &str| nodes.contains(&node);
    for (i, c) in s.calls.iter().enumerate() {
        let p = format!("calls.{i}");
        for (what, node) in [("from", &c.from), ("to", &c.to)] {
            if !is_node(node) {
                return err(
                    format!("{p}.{what}"),
                    format!("node {node:?} is not a node: no link, BSS or cell has it"),
                );
            }
        }
        if let Some(via) = &c.via {
            if !is_node(via) {
                return err(
                    format!("{p}.via"),
                    format!("node {via:?} is not a node: no link, BSS or cell has it"),
                );
            }
            if via == &c.from || via == &c.to {
                return err(
                    format!("{p}.via"),
                    format!("the relay {via:?} must be a node other than the call's ends"),
                );
            }
        }
        validate_call_settings(c, &p, duration, origin)?;
    }
    validate_conferences(s, &is_node, duration, origin)?;
    let calls = calls::count(s);
    if calls > MAX_CALLS {
        return err(
            "calls".into(),
            format!("{calls} calls (conferences' streams included); at most {MAX_CALLS}"),
        );
    }
    let endpoints = |p: &str,
                     from: &str,
                     to: &str,
                     start: Option<rtcbench_units::Duration>,
                     stop: Option<rtcbench_units::Duration>| {
        for (what, node) in [("from", from), ("to", to)] {
            if !nodes.contains(&node) {
                return err(
                    format!("{p}.{what}"),
                    format!("node {node:?} is not a node: no link, BSS or cell has it"),
                );
            }
        }
        if from == to {
            return err(p.to_string(), "`from` and `to` must be different nodes".into());
        }
        match (start, stop) {
            (Some(start), Some(stop)) if stop <= start => {
                err(format!("{p}.stop"), "must be after `start`".into())
            }
            _ => Ok(()),
        }
    };
    for (i, t) in s.tcp.iter().enumerate() {
        let p = format!("tcp.{i}");
        endpoints(&p, &t.from, &t.to, t.start, t.stop)?;
        starts_in_run(format!("{p}.start"), t.start)?;
        let count = t.count.unwrap_or(1);
        if count == 0 {
            return err(format!("{p}.count"), "must be at least 1".into());
        }
        if t.ecn == Some(false) && t.cc.as_ref().is_some_and(|c| *c.get() == TcpCc::Prague) {
            return err(
                format!("{p}.ecn"),
                "prague always sends ECT(1) with Accurate ECN feedback (RFC 9331 §4); leave `ecn` out or set it true".into(),
            );
        }
        if t.ecn == Some(true) && t.cc.as_ref().is_some_and(|c| *c.get() == TcpCc::Bbr) {
            return err(
                format!("{p}.ecn"),
                "bbr (v1, as Linux's tcp_bbr) does not respond to ECN marks; leave `ecn` out or set it false"
                    .into(),
            );
        }
        if let Some(WorkloadSpec::Short { size_min, size_max, files, initially_on, idle_mean }) = &t.workload
        {
            if size_min > size_max || size_min.as_bytes() == 0 {
                return err(format!("{p}.workload"), "needs 0 < size_min <= size_max".into());
            }
            within(origin, format!("{p}.workload.size_max"), *size_max, DataSize::bytes(1), MAX_FILE_SIZE)?;
            within(
                origin,
                format!("{p}.workload.idle_mean"),
                *idle_mean,
                Duration::from_micros(1),
                MAX_IDLE_MEAN,
            )?;
            if let Some(n) = files {
                within(origin, format!("{p}.workload.files"), *n, 1, MAX_FILES)?;
            }
            if initially_on.is_some_and(|n| n > count) {
                return err(format!("{p}.workload.initially_on"), format!("must be at most count ({count})"));
            }
        }
    }
    for (i, c) in s.cbr.iter().enumerate() {
        let p = format!("cbr.{i}");
        endpoints(&p, &c.from, &c.to, c.start, c.stop)?;
        starts_in_run(format!("{p}.start"), c.start)?;
        within(origin, format!("{p}.rate"), *c.rate.get(), Bitrate::bps(1), MAX_RATE)?;
        if c.packet_size.is_some_and(|b| b.as_bytes() < 28 || b.as_bytes() > 1500) {
            return err(
                format!("{p}.packet_size"),
                "must be 28 to 1500 bytes (IPv4 + UDP headers to the MTU)".into(),
            );
        }
    }
    wifi::validate(s, origin)?;
    lte::validate(s, origin)?;
    let cell_queues = s.lte.iter().flat_map(|l| {
        (0..l.ues.len()).flat_map(move |k| lte::LteDirection::BOTH.map(|d| l.queue_name(k, d)))
    });
    let queue_names = s
        .wifi
        .iter()
        .flat_map(|w| (0..=w.stations.len() as u16).map(|port| w.queue_name(port)))
        .chain(cell_queues);
    for name in queue_names {
        if s.links.iter().any(|l| l.name == name) {
            return err(
                format!("links.{name}"),
                format!(
                    "a link may not be named {name:?}: that names a Wi-Fi node's queues (`<bss>:<node>`) or a UE's buffer (`<cell>:<ue>:dl|ul`)"
                ),
            );
        }
    }
    let names = flow_names(s);
    for (k, (name, field)) in names.iter().enumerate() {
        if let Some((_, first)) = names[..k].iter().find(|(n, _)| n == name) {
            return err(
                field.clone(),
                format!("makes a flow named {name:?}, as {first} does: flow names must differ (give `name`)"),
            );
        }
    }
    use calls::Role;
    let route = |field: String, from: &str, to: &str, what: &str| {
        if find_route(&s.links, &s.wifi, &s.lte, from, to).is_none() {
            return err(field, format!("no links lead from {from:?} to {to:?} ({what})"));
        }
        Ok(())
    };
    for c in calls::run_calls(s) {
        let (p, spec) = (&c.field, &c.spec);
        let (to, from) = match (c.conference, c.role) {
            (None, _) => (format!("{p}.to"), format!("{p}.from")),
            (Some(_), Role::Call) => (format!("{p}.participants"), format!("{p}.participants")),
            (Some(_), _) => (format!("{p}.sfu"), format!("{p}.sfu")),
        };
        // A conference's stream is named, as the conference's fields are shared by its streams.
        let of = c.conference.map(|_| format!(" of {}", c.name)).unwrap_or_default();
        let (media, feedback) = (format!("the media{of}"), format!("the feedback{of}"));
        match &spec.via {
            None => {
                route(to, &spec.from, &spec.to, &media)?;
                route(from, &spec.to, &spec.from, &feedback)?;
            }
            Some(via) => {
                let field = format!("{p}.via");
                route(field.clone(), &spec.from, via, &media)?;
                route(field.clone(), via, &spec.to, &media)?;
                route(field.clone(), &spec.to, via, &feedback)?;
                route(field, via, &spec.from, &feedback)?;
            }
        }
    }
    for (i, t) in s.tcp.iter().enumerate() {
        route(format!("tcp.{i}.to"), &t.from, &t.to, "the data")?;
        route(format!("tcp.{i}.from"), &t.to, &t.from, "the acknowledgements")?;
    }
    for (i, c) in s.cbr.iter().enumerate() {
        route(format!("cbr.{i}.to"), &c.from, &c.to, "the packets")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtcbench_rtp::call::FecScheme;

    const MINIMAL: &str = r#"
id = "t"
duration = "10s"
[[links]]
name = "fwd"
from = "A"
to = "B"
capacity = "1Mbps"
queue = { size = "100ms" }
[[links]]
name = "bwd"
from = "B"
to = "A"
[[calls]]
from = "A"
to = "B"
"#;

    #[test]
    fn every_builtin_loads_and_its_id_matches() {
        for (id, path, text) in builtin::BUILTIN {
            // The origin `builtin::find` gives: relative trace files are found beside the file.
            let variants = load(text, &format!("builtin:{path}"), &[]).unwrap_or_else(|e| panic!("{e}"));
            assert!(!variants.is_empty());
            for v in &variants {
                assert_eq!(v.spec.id, *id);
                // The resolved scenario reloads to itself, with the same capacity traces.
                let again = load(&v.to_toml(), "resolved", &[]).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(again.len(), 1);
                assert_eq!(again[0].to_toml(), v.to_toml());
                assert_eq!(again[0].capacity_traces, v.capacity_traces);
            }
        }
    }

    #[test]
    fn sets_expand_into_variants_named_sets_move_together() {
        let v = load(builtin::find("rfc8867-5.1").unwrap().0, "x", &[]).unwrap();
        assert_eq!(
            v.iter().map(|s| s.variant.as_str()).collect::<Vec<_>>(),
            [
                "delay=50ms,mechanism=link-rate",
                "delay=50ms,mechanism=udp-background",
                "delay=100ms,mechanism=link-rate",
                "delay=100ms,mechanism=udp-background"
            ]
        );
        for s in &v {
            let fwd = s.spec.links[0].delay.as_ref().unwrap().get();
            let bwd = s.spec.links[1].delay.as_ref().unwrap().get();
            assert_eq!(fwd, bwd);
        }
        assert_eq!(v[3].variant_slug(), "delay-100ms-mechanism-udp-background");
        let seed = load(builtin::find("seed000-5.2.6").unwrap().0, "x", &[]).unwrap();
        assert_eq!(seed.len(), 6);
        assert_eq!(seed[0].variant, "delay=25ms,first=1Mbps");
    }

    /// `MINIMAL` with `n` named sets of `k` rates each, every one a call's video maximum.
    fn with_sets(n: usize, k: usize) -> String {
        let values: Vec<String> = (0..k).map(|i| format!("\"{}Mbps\"", i + 2)).collect();
        let mut text = MINIMAL.replace("to = \"B\"\n\"#", "to = \"B\"\n");
        text.push_str("[variants]\n");
        for s in 0..n {
            text.push_str(&format!("s{s} = [{}]\n", values.join(", ")));
        }
        for s in 0..n {
            text.push_str(&format!(
                "[[calls]]\nname = \"c{s}\"\nfrom = \"A\"\nto = \"B\"\nvideo = {{ max = \"$s{s}\" }}\n"
            ));
        }
        text
    }

    #[test]
    fn the_number_of_variants_is_bounded_before_any_is_built() {
        // Found by the fuzzer's allocation check (docs/fuzzing.md): 20 sets of 10 overflowed the
        // product, 16 sets of 16 wrapped it to exactly 0 (a file of no variants), 8 sets of 10
        // reserved 34 GB before the first variant was validated.
        assert_eq!(load(&with_sets(2, 3), "x", &[]).unwrap().len(), 9);
        for (n, k) in [(20, 10), (16, 16), (8, 10), (5, 7)] {
            let e = load(&with_sets(n, k), "x.toml", &[]).unwrap_err();
            assert_eq!(e.field.as_deref(), Some("variants"), "{n} sets of {k}: {e}");
            assert!(e.to_string().contains("more than 10000 variants"), "{e}");
        }
        assert_eq!(load(&with_sets(4, 10), "x", &[]).unwrap().len(), 10_000);
    }

    #[test]
    fn the_fingerprint_is_what_runs_not_how_it_is_written() {
        let fp = |text: &str, sets: &[&str]| {
            let sets: Vec<String> = sets.iter().map(|s| (*s).to_string()).collect();
            load(text, "x.toml", &sets).unwrap()[0].fingerprint.clone()
        };
        let base = fp(MINIMAL, &[]);
        assert_eq!(base.len(), 64);
        // Words and layout do not change what runs.
        let described = MINIMAL.replace("id = \"t\"", "id = \"t\"\ntitle = \"x\"\ndescription = \"y\"");
        assert_eq!(fp(&described, &[]), base);
        assert_eq!(fp(&MINIMAL.replace("capacity = \"1Mbps\"", "capacity = \"1000kbps\""), &[]), base);
        // An override, a value, a controller parameter do.
        assert_ne!(fp(MINIMAL, &["duration=11s"]), base);
        assert_ne!(fp(MINIMAL, &["controller.gcc-draft.deployment=send-side"]), base);
        // The resolved scenario a results folder keeps has the fingerprint of what it resolves.
        for v in
            load(builtin::find("rfc8867-5.1").unwrap().0, "builtin:scenarios/rfc8867/5.1.toml", &[]).unwrap()
        {
            assert_eq!(load(&v.to_toml(), "resolved", &[]).unwrap()[0].fingerprint, v.fingerprint);
        }
    }

    #[test]
    fn a_capacity_trace_counts_by_its_content_not_its_path() {
        let dir = std::env::temp_dir().join(format!("rtcbench-fp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, text: &str| {
            std::fs::write(dir.join(name), text).unwrap();
            dir.join(name).display().to_string()
        };
        let with_trace = |file: &str| {
            let text = MINIMAL.replace(
                "capacity = \"1Mbps\"",
                &format!("capacity_trace = {{ file = {file:?}, format = \"csv\" }}"),
            );
            load(&text, "x.toml", &[]).unwrap()[0].fingerprint.clone()
        };
        let a = with_trace(&write("a.csv", "time_s,rate_kbps\n0,1000\n5,500\n"));
        let same_elsewhere = with_trace(&write("b.csv", "time_s,rate_kbps\n0,1000\n5,500\n"));
        let edited = with_trace(&write("a.csv", "time_s,rate_kbps\n0,1000\n5,400\n"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(a, same_elsewhere);
        assert_ne!(a, edited);
    }

    #[test]
    fn a_bare_variant_name_pins_the_set_to_one_value_or_a_list() {
        let text = builtin::find("seed000-5.2.6").unwrap().0;
        let pinned = load(text, "x", &["first=2Mbps".to_string()]).unwrap();
        let names: Vec<_> = pinned.iter().map(|s| s.variant.as_str()).collect();
        assert_eq!(names, ["delay=25ms,first=2Mbps", "delay=50ms,first=2Mbps", "delay=100ms,first=2Mbps"]);
        let two = load(text, "x", &["delay=[\"25ms\", \"100ms\"]".to_string(), "first=1Mbps".to_string()]);
        assert_eq!(two.unwrap().len(), 2);
        // Not a variant parameter: a top-level field, as before.
        let v = load(text, "x", &["duration=30s".to_string()]).unwrap();
        assert_eq!(*v[0].spec.duration.get(), rtcbench_units::Duration::from_secs(30));
    }

    #[test]
    fn anonymous_sets_are_a_cartesian_product() {
        let text = MINIMAL.replace(
            "capacity = \"1Mbps\"",
            "capacity = [\"1Mbps\", \"2Mbps\"]\ndelay = [\"10ms\", \"20ms\", \"30ms\"]",
        );
        let v = load(&text, "x", &[]).unwrap();
        assert_eq!(v.len(), 6);
        assert_eq!(v[0].variant, "delay=10ms,capacity=1Mbps");
        assert_eq!(v[5].variant, "delay=30ms,capacity=2Mbps");
    }

    #[test]
    fn a_list_where_the_schema_takes_a_list_is_a_value_not_a_set() {
        // A schedule, a call's pauses, a conference's participants, a trace's ignored fields: lists
        // the fields' types take whole. Only the `Param` fields among them make variants.
        let text = MINIMAL
            .replace(
                "capacity = \"1Mbps\"",
                "schedule = [{ at = \"0s\", capacity = [\"1Mbps\", \"3Mbps\"] }, { at = \"5s\", ratio = 0.5 }]\n\
                 reference_capacity = \"2Mbps\"",
            )
            .replace("[[calls]]\nfrom", "[[calls]]\npause = [{ from = \"4s\", to = \"6s\" }]\nfrom");
        let v = load(&text, "x", &[]).unwrap();
        assert_eq!(
            v.iter().map(|s| s.variant.as_str()).collect::<Vec<_>>(),
            ["capacity=1Mbps", "capacity=3Mbps"]
        );
        for (s, rate) in v.iter().zip([1, 3]) {
            let steps = s.spec.links[0].schedule.as_ref().unwrap();
            assert_eq!(steps.len(), 2);
            assert_eq!(*steps[0].capacity.as_ref().unwrap().get(), Bitrate::kbps(rate * 1000));
            assert_eq!(steps[1].ratio, Some(0.5));
            assert_eq!(s.spec.calls[0].pause.len(), 1);
        }
        // A list of lists at a list field is a wrong value, not a set of lists.
        let nested = star(&MESH.replace(
            "participants = [\"A\", \"B\", \"C\"]",
            "participants = [[\"A\", \"B\"], [\"B\", \"C\"]]",
        ));
        let e = load(&nested, "my.toml", &[]).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("conferences[0].participants[0]"), "{e}");
    }

    #[test]
    fn a_value_put_in_place_of_a_set_is_read_as_a_value() {
        // A trace file named "$x" in a set is a file name, not a reference to a set `x`.
        let text = MINIMAL.replace(
            "capacity = \"1Mbps\"",
            "capacity_trace = { file = [\"$x\", \"y.csv\"], format = \"csv\" }",
        );
        let e = load(&text, "my.toml", &[]).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("links.fwd.capacity_trace.file"), "{e}");
        assert!(e.message.contains("cannot read the trace \"$x\""), "{e}");
        // A named set's value that is a list is a wrong value for the field, not a set within a set.
        let text = format!(
            "{}[variants]\nd = [[\"1ms\", \"2ms\"]]\n",
            MINIMAL.replace("capacity = \"1Mbps\"", "delay = \"$d\"")
        );
        let e = load(&text, "my.toml", &[]).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("links.fwd.delay"), "{e}");
        assert_eq!(e.line, Some(8), "{e}");
        assert!(e.message.starts_with("invalid type: sequence, expected a duration"), "{e}");
    }

    #[test]
    fn an_audio_packet_must_fit_in_a_datagram() {
        let call = "[[calls]]\nfrom = \"A\"\nto = \"B\"\n";
        let with = |audio: &str| MINIMAL.replace(call, &format!("{call}audio = {{ {audio} }}\n"));
        // 10 Mbit/s a second apart was accepted, and sent 1.25 MB "packets".
        let e = load(&with("rate = \"10Mbps\", packet_interval = \"1s\""), "my.toml", &[]).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("calls.0.audio.rate"));
        assert_eq!(e.line, Some(17));
        assert!(e.message.contains("1250000 bytes a packet") && e.message.contains("at most 1448"), "{e}");
        // The default interval (20 ms) counts too; 579.2 kbit/s at 20 ms is 1448 bytes, the most.
        assert!(load(&with("rate = \"579200bps\""), "my.toml", &[]).is_ok());
        assert!(load(&with("rate = \"579201bps\""), "my.toml", &[]).is_err());
        // The default rate (20 kbit/s) a second apart is 2500 bytes: the interval is named.
        let e = load(&with("packet_interval = \"1s\""), "my.toml", &[]).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("calls.0.audio.packet_interval"));
    }

    #[test]
    fn a_scenario_text_over_the_bound_is_refused_before_it_is_parsed() {
        let big = format!("{MINIMAL}# {}\n", "x".repeat(limits::MAX_SCENARIO_BYTES));
        let e = load(&big, "big.toml", &[]).unwrap_err();
        assert_eq!((e.origin.as_str(), e.field.as_deref(), e.line), ("big.toml", None, None));
        assert!(e.message.contains("a scenario is at most 8 MiB"), "{e}");
        // A `--set` cannot make it larger than the bound either.
        let sets = [format!("title={}", "y".repeat(limits::MAX_SCENARIO_BYTES))];
        let e = load(MINIMAL, "my.toml", &sets).unwrap_err();
        assert!(e.message.contains("a scenario is at most 8 MiB"), "{e}");
    }

    #[test]
    fn errors_name_file_field_line_and_what_is_allowed() {
        let bad = MINIMAL.replace("capacity = \"1Mbps\"", "capacity = \"1 Mbit\"");
        let e = load(&bad, "my.toml", &[]).unwrap_err();
        assert_eq!(e.origin, "my.toml");
        assert_eq!(e.line, Some(8));
        assert_eq!(e.field.as_deref(), Some("links[0].capacity"));
        assert!(e.message.contains("\"1 Mbit\"") && e.message.contains("kbps"), "{e}");

        let unknown = MINIMAL.replace("capacity = \"1Mbps\"", "capacty = \"1Mbps\"");
        let e = load(&unknown, "my.toml", &[]).unwrap_err();
        assert!(e.message.contains("unknown field `capacty`") && e.message.contains("capacity"), "{e}");
        assert_eq!(e.line, Some(8));

        let kind =
            MINIMAL.replace("queue = { size = \"100ms\" }", "queue = { kind = \"red\", size = \"1s\" }");
        let e = load(&kind, "my.toml", &[]).unwrap_err();
        assert!(e.message.contains("droptail"), "{e}");

        let loss = MINIMAL.replace("capacity = \"1Mbps\"", "loss = { model = \"bernoulli\", rate = 1.5 }");
        let e = load(&loss, "my.toml", &[]).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("links.fwd.loss.rate"));
        assert!(e.message.contains("0 to 1"), "{e}");

        let var = MINIMAL.replace("capacity = \"1Mbps\"", "capacity = \"$cap\"");
        let e = load(&var, "my.toml", &[]).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("links.fwd.capacity"));
        assert!(e.message.contains("$cap"), "{e}");

        let syntax = "id = \n";
        let e = load(syntax, "s.toml", &[]).unwrap_err();
        assert_eq!(e.line, Some(1));
        assert!(e.to_string().starts_with("s.toml:1"), "{e}");
    }

    #[test]
    fn a_video_codec_is_one_of_four_and_is_written_back() {
        for (value, codec) in [
            ("vp8", VideoCodec::Vp8),
            ("vp9", VideoCodec::Vp9),
            ("h264", VideoCodec::H264),
            ("av1", VideoCodec::Av1),
        ] {
            let s = load(MINIMAL, "x", &[format!("calls.0.video.codec={value}")]).unwrap().remove(0);
            assert_eq!(s.spec.calls[0].video.as_ref().unwrap().codec, Some(codec));
            assert!(s.to_toml().contains(&format!("codec = \"{value}\"")), "{}", s.to_toml());
        }
        let e = load(MINIMAL, "my.toml", &["calls.0.video.codec=h265".to_string()]).unwrap_err();
        let line = e.to_string();
        assert!(
            !line.contains('\n') && line.contains("calls[0].video.codec") && line.contains("`av1`"),
            "{line}"
        );
    }

    #[test]
    fn a_degradation_preference_is_one_of_three_and_is_written_back() {
        for (value, preference) in [
            ("balanced", Degradation::Balanced),
            ("maintain-framerate", Degradation::MaintainFramerate),
            ("maintain-resolution", Degradation::MaintainResolution),
        ] {
            let s = load(MINIMAL, "x", &[format!("calls.0.video.degradation={value}")]).unwrap().remove(0);
            assert_eq!(s.spec.calls[0].video.as_ref().unwrap().degradation, Some(preference));
            assert!(s.to_toml().contains(&format!("degradation = \"{value}\"")), "{}", s.to_toml());
        }
        let plain = load(MINIMAL, "x", &[]).unwrap().remove(0);
        assert_eq!(plain.spec.calls[0].video.as_ref().and_then(|v| v.degradation), None);
        assert!(!plain.to_toml().contains("degradation"));
        let e = load(MINIMAL, "my.toml", &["calls.0.video.degradation=maintain-quality".to_string()])
            .unwrap_err();
        let line = e.to_string();
        assert!(
            !line.contains('\n')
                && line.contains("calls[0].video.degradation")
                && line.contains("`maintain-resolution`"),
            "{line}"
        );
    }

    #[test]
    fn fec_is_on_off_or_a_scheme_and_is_written_back_as_given() {
        for (value, scheme) in [
            ("true", Some(FecScheme::Ulpfec)),
            ("false", None),
            ("\"ulpfec\"", Some(FecScheme::Ulpfec)),
            ("flexfec", Some(FecScheme::Flexfec)),
        ] {
            let s = load(MINIMAL, "x", &[format!("calls.0.fec={value}")]).unwrap().remove(0);
            let fec = *s.spec.calls[0].fec.as_ref().unwrap().get();
            assert_eq!(fec.scheme(), scheme, "{value}");
            // A scenario's identity depends on what it says, not on how FEC is resolved.
            let back = toml::to_string(&s.spec.calls[0]).unwrap();
            assert!(back.contains(&format!("fec = {}", value.replace("flexfec", "\"flexfec\""))), "{back}");
        }
        let e = load(MINIMAL, "my.toml", &["calls.0.fec=fecfec".to_string()]).unwrap_err();
        let line = e.to_string();
        assert!(!line.contains('\n'), "{line}");
        assert!(
            line.contains("my.toml") && line.contains("calls[0].fec") && line.contains("\"flexfec\""),
            "{line}"
        );
        let e = load(MINIMAL, "my.toml", &["calls.0.fec=2".to_string()]).unwrap_err();
        assert!(e.to_string().contains("true, false"), "{e}");
        let e = load(MINIMAL, "my.toml", &["calls.0.keyframe_request=idr".to_string()]).unwrap_err();
        assert!(
            e.to_string().contains("calls[0].keyframe_request") && e.to_string().contains("`fir`"),
            "{e}"
        );
    }

    #[test]
    fn a_fixed_fec_rate_is_a_share_and_needs_fec() {
        let ok = load(MINIMAL, "x", &["calls.0.fec_rate=0.5".to_string()]).unwrap();
        assert_eq!(ok[0].spec.calls[0].fec_rate, Some(0.5));
        let e = load(MINIMAL, "my.toml", &["calls.0.fec_rate=1.5".to_string()]).unwrap_err();
        let line = e.to_string();
        assert!(line.contains("calls.0.fec_rate") && line.contains("0 to 1"), "{e}");
        let off = ["calls.0.fec=false".to_string(), "calls.0.fec_rate=0.2".to_string()];
        let e = load(MINIMAL, "my.toml", &off).unwrap_err();
        assert!(e.message.contains("needs FEC on"), "{e}");
    }

    #[test]
    fn a_jitter_buffer_needs_nack_and_a_bounded_delay_and_keys_the_run() {
        let plain = load(MINIMAL, "x", &[]).unwrap();
        let sets =
            ["calls.0.jitter_buffer={ rtx_next_seqnum = false, rtx_min_delay = \"20ms\" }".to_string()];
        let set = load(MINIMAL, "x", &sets).unwrap();
        let jb = set[0].spec.calls[0].jitter_buffer.unwrap();
        assert_eq!(jb.rtx_next_seqnum, Some(false));
        assert_eq!(jb.rtx_min_delay, Some(Duration::from_millis(20)));
        assert_ne!(plain[0].fingerprint, set[0].fingerprint);
        assert_eq!(plain[0].spec.calls[0].jitter_buffer, None);
        let e = load(MINIMAL, "my.toml", &["calls.0.jitter_buffer={ rtx_min_delay = \"11s\" }".to_string()])
            .unwrap_err();
        assert!(e.to_string().contains("calls.0.jitter_buffer.rtx_min_delay"), "{e}");
        let off = [
            "calls.0.nack=false".to_string(),
            "calls.0.jitter_buffer={ rtx_next_seqnum = false }".to_string(),
        ];
        let e = load(MINIMAL, "my.toml", &off).unwrap_err();
        assert!(e.message.contains("needs NACK on"), "{e}");
        let e = load(MINIMAL, "my.toml", &["calls.0.jitter_buffer={ rtx_delay = \"5ms\" }".to_string()])
            .unwrap_err();
        assert!(e.to_string().contains("rtx_delay"), "{e}");
    }

    #[test]
    fn overrides_edit_fields_by_name_or_index() {
        let sets = vec![
            "links.fwd.delay=80ms".to_string(),
            "calls.0.video.max=3Mbps".to_string(),
            "duration=30s".to_string(),
            "links.fwd.queue={ size = \"60KB\" }".to_string(),
        ];
        let v = load(MINIMAL, "x", &sets).unwrap();
        let s = &v[0].spec;
        assert_eq!(*s.duration.get(), rtcbench_units::Duration::from_secs(30));
        assert_eq!(*s.links[0].delay.as_ref().unwrap().get(), rtcbench_units::Duration::from_millis(80));
        assert_eq!(
            *s.calls[0].video.as_ref().unwrap().max.as_ref().unwrap().get(),
            rtcbench_units::Bitrate::mbps(3)
        );
        assert_eq!(
            *s.links[0].queue.as_ref().unwrap().size.get(),
            QueueSize::Bytes(rtcbench_units::DataSize::kbytes(60))
        );
        let e = load(MINIMAL, "x", &["links.nope.delay=1ms".to_string()]).unwrap_err();
        assert!(e.message.contains("fwd"), "{e}");
        let e = load(MINIMAL, "x", &["delay".to_string()]).unwrap_err();
        assert!(e.message.contains("path=value"), "{e}");
    }

    /// A fresh folder for a test's files.
    fn scratch(test: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("rtcbench-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// MINIMAL with the forward link's capacity given by `trace` (the inside of an inline table).
    fn with_trace(trace: &str) -> String {
        MINIMAL.replace("capacity = \"1Mbps\"", &format!("capacity_trace = {{ {trace} }}"))
    }

    #[test]
    fn capacity_traces_load_beside_the_scenario_file_and_resolve_absolutely() {
        let dir = scratch("trace-paths");
        std::fs::create_dir_all(dir.join("t")).unwrap();
        std::fs::write(dir.join("t/ten.up"), "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n").unwrap();
        std::fs::write(dir.join("t/steps.csv"), "time_s,rate_kbps\n0,500\n2,1000\n").unwrap();
        let origin = dir.join("my.toml").display().to_string();
        let v = load(&with_trace(r#"file = "t/ten.up""#), &origin, &[]).unwrap();
        let Some(CapacityTrace::Opportunities(o)) = v[0].capacity_traces[0].as_deref() else {
            panic!("a mahimahi trace: {:?}", v[0].capacity_traces)
        };
        assert_eq!(o.len(), 10);
        assert!(v[0].capacity_traces[1].is_none());
        // The resolved scenario names the file absolutely and its format explicitly.
        let t = v[0].spec.links[0].capacity_trace.as_ref().unwrap();
        assert_eq!(t.file.get(), &dir.join("t/ten.up").display().to_string());
        assert_eq!(t.format, Some(TraceFormat::Mahimahi));
        // A set of files: one variant each.
        let v = load(&with_trace(r#"file = ["t/ten.up", "t/steps.csv"]"#), &origin, &[]).unwrap();
        assert_eq!(
            v.iter().map(|s| s.variant.as_str()).collect::<Vec<_>>(),
            ["file=t/ten.up", "file=t/steps.csv"]
        );
        assert!(matches!(v[1].capacity_traces[0].as_deref(), Some(CapacityTrace::Rate(_))));
        // A shipped trace from any scenario.
        let v = load(&with_trace(r#"file = "builtin:scenarios/traces/lte-walk.csv""#), &origin, &[]).unwrap();
        assert!(v[0].capacity_traces[0].is_some());
        // `--set` replaces the file like any field.
        let v = load(
            &with_trace(r#"file = "t/ten.up""#),
            &origin,
            &["links.fwd.capacity_trace.file=t/steps.csv".into()],
        );
        assert!(matches!(v.unwrap()[0].capacity_traces[0].as_deref(), Some(CapacityTrace::Rate(_))));
    }

    #[test]
    fn capacity_trace_mistakes_name_the_file_the_line_or_field_and_what_is_allowed() {
        let dir = scratch("trace-errors");
        std::fs::write(dir.join("back.mahimahi"), "1\n5\n4\n").unwrap();
        std::fs::write(
            dir.join("rtt.json"),
            r#"{"uplink": {"trace_pattern": [{"duration": 5, "capacity": 1, "rtt": 80}]}}"#,
        )
        .unwrap();
        std::fs::write(dir.join("ok.up"), "5\n").unwrap();
        let origin = dir.join("my.toml").display().to_string();
        let e = |trace: &str, extra: &str| {
            let text = with_trace(trace).replace("name = \"fwd\"", &format!("name = \"fwd\"\n{extra}"));
            let e = load(&text, &origin, &[]).expect_err("the scenario is invalid");
            assert!(!e.to_string().contains('\n'), "one line: {e}");
            e
        };

        // Mutually exclusive with the other ways to give a capacity, and with udp-background.
        for other in ["capacity = \"1Mbps\"", "schedule = [{ at = \"0s\", capacity = \"1Mbps\" }]"] {
            let err = e(r#"file = "ok.up""#, other);
            assert_eq!(err.field.as_deref(), Some("links.fwd"), "{err}");
            assert!(err.message.contains("one of `capacity`, `schedule` or `capacity_trace`"), "{err}");
        }
        let err = e(r#"file = "ok.up""#, "mechanism = \"udp-background\"\nphysical_capacity = \"4Mbps\"");
        assert_eq!(err.field.as_deref(), Some("links.fwd.mechanism"), "{err}");
        assert!(err.message.contains("link-rate"), "{err}");

        // Unknown format, unknown extension, options of another format, unknown key.
        let err = e(r#"file = "ok.up", format = "pcap""#, "");
        assert_eq!(err.line, Some(9), "{err}");
        assert!(
            err.message.contains("mahimahi")
                && err.message.contains("opennetlab")
                && err.message.contains("csv"),
            "{err}"
        );
        let err = e(r#"file = "ok.txt""#, "");
        assert_eq!(err.field.as_deref(), Some("links.fwd.capacity_trace.format"), "{err}");
        assert!(err.message.contains(".json") && err.message.contains("format = \"mahimahi\""), "{err}");
        let err = e(r#"file = "ok.up", direction = "downlink""#, "");
        assert_eq!(err.field.as_deref(), Some("links.fwd.capacity_trace.direction"), "{err}");
        assert!(err.message.contains("only OpenNetLab"), "{err}");
        let err = e(r#"file = "ok.up", ignore = ["rtt"]"#, "");
        assert_eq!(err.field.as_deref(), Some("links.fwd.capacity_trace.ignore"), "{err}");
        let err = e(r#"file = "rtt.json", ignore = ["latency"]"#, "");
        assert!(err.message.contains("loss") && err.message.contains("jitter"), "{err}");
        let err = e(r#"fil = "ok.up""#, "");
        assert!(err.message.contains("unknown field `fil`") && err.message.contains("file"), "{err}");

        // Missing files, on disk or built in.
        let err = e(r#"file = "nope.csv""#, "");
        assert_eq!(err.field.as_deref(), Some("links.fwd.capacity_trace.file"), "{err}");
        assert!(err.message.contains("cannot read the trace") && err.message.contains("nope.csv"), "{err}");
        let err = e(r#"file = "builtin:scenarios/traces/nope.csv""#, "");
        assert!(
            err.message.contains("scenarios/traces/lte-drive.mahimahi"),
            "lists the built-in traces: {err}"
        );

        // A bad trace: the trace file, its line or field, and the scenario field.
        let err = e(r#"file = "back.mahimahi""#, "");
        assert_eq!(err.origin, dir.join("back.mahimahi").display().to_string());
        assert_eq!(err.line, Some(3));
        assert!(
            err.message.contains("must not decrease") && err.message.contains("links.fwd.capacity_trace in"),
            "{err}"
        );
        assert!(
            err.to_string().starts_with(&format!("{}:3: ", dir.join("back.mahimahi").display())),
            "{err}"
        );
        let err = e(r#"file = "rtt.json""#, "");
        assert_eq!(err.field.as_deref(), Some("uplink.trace_pattern[0].rtt"), "{err}");
        assert!(load(&with_trace(r#"file = "rtt.json", ignore = ["rtt"]"#), &origin, &[]).is_ok());
    }

    /// MINIMAL with competing traffic, an AQM and a paused call.
    const CROSS: &str = r#"
[[tcp]]
from = "A"
to = "B"
cc = ["newreno", "cubic"]
count = 10
workload = { kind = "short", size_min = "30KB", size_max = "50KB", idle_mean = "10s", initially_on = 2 }
[[cbr]]
from = "A"
to = "B"
rate = "500kbps"
"#;

    fn cross(extra: &str) -> String {
        let with_call_extras = MINIMAL.replace(
            "[[calls]]\nfrom = \"A\"\nto = \"B\"\n",
            "[[calls]]\nfrom = \"A\"\nto = \"B\"\npriority = 2.0\necn = \"ect1\"\npause = [{ from = \"4s\", to = \"6s\" }]\n",
        );
        format!(
            "{}{CROSS}{extra}",
            with_call_extras.replace(
                "queue = { size = \"100ms\" }",
                "queue = { kind = \"fq-codel\", size = \"100ms\", ecn = true }"
            )
        )
    }

    #[test]
    fn cross_traffic_queues_and_call_timelines_load() {
        let v = load(&cross(""), "x", &[]).unwrap();
        assert_eq!(v.iter().map(|s| s.variant.as_str()).collect::<Vec<_>>(), ["cc=newreno", "cc=cubic"]);
        let s = &v[1].spec;
        assert_eq!(s.links[0].queue.as_ref().unwrap().kind(), QueueKind::FqCodel);
        assert_eq!(*s.tcp[0].cc.as_ref().unwrap().get(), TcpCc::Cubic);
        assert_eq!(s.tcp[0].count, Some(10));
        assert!(matches!(s.tcp[0].workload, Some(WorkloadSpec::Short { initially_on: Some(2), .. })));
        assert_eq!(*s.cbr[0].rate.get(), rtcbench_units::Bitrate::kbps(500));
        assert_eq!(s.calls[0].ecn, Some(EcnCodepoint::Ect1));
        assert_eq!(s.calls[0].pause.len(), 1);
    }

    #[test]
    fn cross_traffic_and_queue_mistakes_name_the_field() {
        let cases: [(&str, &str, &str); 6] = [
            ("tcp.0.count=0", "tcp.0.count", "at least 1"),
            ("tcp.0.to=Z", "tcp.0.to", "not a node"),
            ("tcp.0.workload.initially_on=11", "tcp.0.workload.initially_on", "at most count"),
            ("links.fwd.queue.threshold=\"1ms\"", "links.fwd.queue.threshold", "only by step"),
            ("links.fwd.mechanism=udp-background", "links.fwd.physical_capacity", "needs it"),
            ("cbr.0.packet_size=\"9KB\"", "cbr.0.packet_size", "1500"),
        ];
        for (set, field, message) in cases {
            // The error names the override that caused it, and the field in its message.
            let e = load(&cross(""), "x", &[set.to_string()]).unwrap_err();
            assert_eq!(e.field, Some(format!("--set {set}")), "{set}: {e}");
            assert!(
                e.message.starts_with(&format!("{field}: ")) && e.message.contains(message),
                "{set}: {e}"
            );
            assert_eq!(e.line, None, "{set}: not a line of the file");
            // The same mistake written in the file names its line.
            let (path, value) = set.split_once('=').unwrap();
            let _ = (path, value);
        }
        let e = load(&cross(""), "x", &["links.fwd.queue.kind=red".to_string()]).unwrap_err();
        assert!(e.message.contains("fq-codel") && e.message.contains("pie"), "{e}");
        let e = load(
            &cross(""),
            "x",
            &[
                "links.fwd.physical_capacity=500kbps".to_string(),
                "links.fwd.mechanism=udp-background".to_string(),
            ],
        )
        .unwrap_err();
        assert!(e.message.contains("below the highest scheduled capacity"), "{e}");
    }

    /// MINIMAL with the forward link's queue written as `queue`.
    fn with_queue(queue: &str) -> String {
        MINIMAL.replace("queue = { size = \"100ms\" }", queue)
    }

    /// The discipline the forward link of `text` is built with.
    fn forward_discipline(text: &str) -> rtcbench_net::queue::QueueDiscipline {
        let v = load(text, "x", &[]).unwrap_or_else(|e| panic!("{e}"));
        elements::link_config(&v[0].spec.links[0], None, rtcbench_units::Instant::from_secs(10)).discipline
    }

    #[test]
    fn dualpi2_queues_start_from_a_named_set_and_take_every_field() {
        use rtcbench_net::queue::{DualPi2Config, PiQueueDelay, QueueDiscipline};
        let dp = |queue: &str| match forward_discipline(&with_queue(queue)) {
            QueueDiscipline::DualPi2(cfg) => cfg,
            other => panic!("{other:?}"),
        };
        assert_eq!(dp(r#"queue = { kind = "dualpi2", size = "100ms" }"#), DualPi2Config::rfc9332());
        assert_eq!(
            dp(r#"queue = { kind = "dualpi2", size = "100ms", defaults = "linux" }"#),
            DualPi2Config::linux()
        );
        // Every field over the Linux set.
        let cfg = dp(r#"queue = { kind = "dualpi2", size = "100ms", defaults = "linux", target = "5ms",
            t_update = "10ms", alpha = 0.3, beta = 4, coupling = 1.5, l_min_th = "2ms", l_range = "1ms",
            th_len = 3, pi_delay = "classic", classic_weight = 0.25, drop_overload = false, min_backlog = "0B" }"#);
        let want = DualPi2Config {
            target: Duration::from_millis(5),
            t_update: Duration::from_millis(10),
            alpha: 0.3,
            beta: 4.0,
            coupling: 1.5,
            l_min_th: Duration::from_millis(2),
            l_range: Duration::from_millis(1),
            th_len: 3,
            pi_delay: PiQueueDelay::Classic,
            classic_weight: 0.25,
            drop_overload: false,
            min_backlog: DataSize::ZERO,
        };
        assert_eq!(cfg, want);
        // Under the RFC set, RTT_max and target derive Tupdate, alpha and beta (Fig. 2 ll. 12-14).
        let cfg = dp(r#"queue = { kind = "dualpi2", size = "100ms", rtt_max = "30ms" }"#);
        assert_eq!(cfg.t_update, Duration::from_millis(10));
        assert!(
            (cfg.alpha - 0.1 * 0.010 / 0.0009).abs() < 1e-12 && (cfg.beta - 10.0).abs() < 1e-12,
            "{cfg:?}"
        );
        let cfg = dp(r#"queue = { kind = "dualpi2", size = "100ms", target = "5ms", alpha = 0.2 }"#);
        assert_eq!((cfg.t_update, cfg.alpha), (Duration::from_millis(5), 0.2));
        // The scenario writes back what it read.
        let text =
            with_queue(r#"queue = { kind = "dualpi2", size = "100ms", defaults = "linux", coupling = 3 }"#);
        let v = load(&text, "x", &[]).unwrap();
        assert_eq!(load(&v[0].to_toml(), "resolved", &[]).unwrap()[0].to_toml(), v[0].to_toml());
    }

    #[test]
    fn dualpi2_fields_out_of_range_or_on_another_discipline_are_one_line_errors() {
        let text = with_queue(r#"queue = { kind = "dualpi2", size = "100ms" }"#);
        let cases = [
            ("links.fwd.queue.coupling=0.5", "links.fwd.queue.coupling", "out of range (allowed: 1 to 255)"),
            ("links.fwd.queue.classic_weight=1.5", "links.fwd.queue.classic_weight", "(allowed: 0 to 1)"),
            ("links.fwd.queue.alpha=-1", "links.fwd.queue.alpha", "(allowed: 0 to 100)"),
            ("links.fwd.queue.t_update=\"100us\"", "links.fwd.queue.t_update", "out of range"),
            ("links.fwd.queue.th_len=20000", "links.fwd.queue.th_len", "(allowed: 0 to 10000)"),
            ("links.fwd.queue.l_min_th=\"0ms\"", "links.fwd.queue.l_min_th", "out of range"),
            ("links.fwd.queue.ecn=true", "links.fwd.queue.ecn", "dualpi2 always mark"),
            ("links.fwd.queue.defaults=bsd", "links[0].queue.defaults", "expected `rfc9332` or `linux`"),
        ];
        for (set, field, message) in cases {
            let e = load(&text, "x", &[set.to_string()]).unwrap_err();
            assert!(
                e.message.starts_with(&format!("{field}: ")) && e.message.contains(message),
                "{set}: {e}"
            );
            assert!(!e.to_string().contains('\n'), "{set}: {e}");
        }
        // DualPI2's fields on another discipline are rejected, naming the one that reads them.
        let e = load(&cross(""), "x", &["links.fwd.queue.coupling=2".to_string()]).unwrap_err();
        assert!(
            e.message.starts_with("links.fwd.queue.coupling: not used by fq-codel (only by dualpi2)"),
            "{e}"
        );
    }

    /// Nodes A, B, C, S and T, each linked to and from a hub H.
    fn star(extra: &str) -> String {
        let mut text = String::from("id = \"t\"\nduration = \"10s\"\n");
        for n in ["A", "B", "C", "S", "T"] {
            for (from, to) in [(n, "H"), ("H", n)] {
                text += &format!("[[links]]\nname = \"{from}{to}\"\nfrom = \"{from}\"\nto = \"{to}\"\n");
            }
        }
        text + extra
    }

    const MESH: &str = r#"
[[conferences]]
name = "m"
topology = "mesh"
participants = ["A", "B", "C"]
call = { video = { max = "500kbps", fps = 15 }, audio = { enabled = false } }
"#;

    const SFU: &str = r#"
[[conferences]]
topology = "sfu"
participants = ["A", "B", "C"]
sfu = "S"
call = { video = { max = "300kbps" } }
"#;

    #[test]
    fn conferences_expand_into_calls_in_meta_order_with_their_settings() {
        let text = star(&format!("[[calls]]\nfrom = \"A\"\nto = \"B\"\nvia = \"T\"\n{MESH}{SFU}"));
        let s = load(&text, "x", &[]).unwrap().remove(0).spec;
        let run = calls::run_calls(&s);
        let names: Vec<&str> = run.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "call0",
                "m.A-B",
                "m.A-C",
                "m.B-A",
                "m.B-C",
                "m.C-A",
                "m.C-B",
                "conf1.A-S",
                "conf1.B-S",
                "conf1.C-S",
                "conf1.A-B",
                "conf1.A-C",
                "conf1.B-A",
                "conf1.B-C",
                "conf1.C-A",
                "conf1.C-B",
            ]
        );
        assert_eq!(run[0].spec.via.as_deref(), Some("T"));
        assert_eq!((run[0].label.as_str(), run[0].topology(&s)), ("call0", "p2p"));
        let m = &run[3];
        assert_eq!((m.spec.from.as_str(), m.spec.to.as_str(), m.topology(&s)), ("B", "A", "mesh"));
        assert_eq!(m.label, "conference/m.B-A");
        assert_eq!(*m.spec.video.as_ref().unwrap().max.as_ref().unwrap().get(), Bitrate::kbps(500));
        assert!(m.spec.audio.as_ref().is_some_and(|a| !a.enabled));
        let publish = &run[8];
        assert_eq!(
            (publish.role, publish.spec.to.as_str(), publish.sfu.as_deref()),
            (calls::Role::Publish, "S", Some("S"))
        );
        // conf1.B-C: B's stream, forwarded by S to C.
        let leg = &run[13];
        assert_eq!(
            (leg.role, leg.forwards, leg.spec.from.as_str(), leg.spec.to.as_str()),
            (calls::Role::Forward, Some(8), "S", "C")
        );
        assert_eq!(*leg.spec.video.as_ref().unwrap().max.as_ref().unwrap().get(), Bitrate::kbps(300));
        // A resolved scenario writes `call` without ends and reloads to itself.
        let resolved = toml::to_string(&s).unwrap();
        let again = load(&resolved, "resolved", &[]).unwrap().remove(0).spec;
        assert_eq!(toml::to_string(&again).unwrap(), resolved);
        let names_again: Vec<String> = calls::run_calls(&again).into_iter().map(|c| c.name).collect();
        assert_eq!(names_again, names);
    }

    #[test]
    fn a_conferences_call_settings_vary_and_take_overrides_as_a_calls_do() {
        let varied = MESH
            .replace("max = \"500kbps\"", "max = \"$max\"")
            .replace("fps = 15 }", "fps = 15, min = [\"50kbps\", \"100kbps\"] }");
        let text = star(&format!("[variants]\nmax = [\"300kbps\", \"600kbps\"]\n{varied}"));
        let v = load(&text, "x", &[]).unwrap();
        let labels: Vec<&str> = v.iter().map(|s| s.variant.as_str()).collect();
        assert_eq!(
            labels,
            [
                "max=300kbps,min=50kbps",
                "max=300kbps,min=100kbps",
                "max=600kbps,min=50kbps",
                "max=600kbps,min=100kbps"
            ]
        );
        let max =
            |s: &Scenario| *s.spec.conferences[0].call.0.video.as_ref().unwrap().max.as_ref().unwrap().get();
        assert_eq!(max(&v[2]), Bitrate::kbps(600));
        let set = load(&star(MESH), "x", &["conferences.0.call.video.max=800kbps".into()]).unwrap();
        assert_eq!(max(&set[0]), Bitrate::kbps(800));
        let by_name = load(&star(MESH), "x", &["conferences.m.call.nack=false".into()]).unwrap();
        assert_eq!(by_name[0].spec.conferences[0].call.0.nack, Some(false));
        // A bad value names the conference's field, from the file or from the override.
        let e = load(&star(&MESH.replace("500kbps", "fast")), "my.toml", &[]).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("conferences[0].call.video.max"), "{e}");
        assert!(e.line.is_some(), "{e}");
        let e = load(
            &star(MESH),
            "my.toml",
            &["conferences.0.call.video.max=1bps".into(), "conferences.0.call.video.min=2bps".into()],
        )
        .unwrap_err();
        assert!(e.message.starts_with("conferences.0.call.video.max: "), "{e}");
        let e = load(&star(MESH), "my.toml", &["conferences.0.call.start=20s".into()]).unwrap_err();
        assert!(
            e.message.starts_with("conferences.0.call.start: ") && e.message.contains("end of the run"),
            "{e}"
        );
    }

    /// The one-line error `extra` (conference fields) makes in the star network.
    fn conference_error(conference: &str) -> ScenarioError {
        let e = load(&star(conference), "my.toml", &[]).expect_err("the scenario is invalid");
        assert!(!e.to_string().contains('\n'), "one line: {e}");
        e
    }

    #[test]
    fn conference_mistakes_name_the_field_and_what_is_allowed() {
        let cases: [(&str, &str, &str, &str); 14] = [
            ("topology = \"mesh\"", "topology = \"star\"", "conferences[0].topology", "`one-to-many`"),
            (
                "participants = [\"A\", \"B\", \"C\"]",
                "participants = [\"A\"]",
                "conferences.0.participants",
                "at least 2",
            ),
            (
                "participants = [\"A\", \"B\", \"C\"]",
                "participants = [\"A\", \"Z\"]",
                "conferences.0.participants",
                "\"Z\" is not a node",
            ),
            (
                "participants = [\"A\", \"B\", \"C\"]",
                "participants = [\"A\", \"B\", \"A\"]",
                "conferences.0.participants",
                "listed twice",
            ),
            ("topology = \"mesh\"", "topology = \"one-to-many\"", "conferences.0.source", "needs it"),
            (
                "topology = \"mesh\"",
                "topology = \"mesh\"\nsource = \"A\"",
                "conferences.0.source",
                "one-to-many only",
            ),
            (
                "topology = \"mesh\"",
                "topology = \"one-to-many\"\nsource = \"S\"",
                "conferences.0.source",
                "not one of the participants",
            ),
            ("topology = \"mesh\"", "topology = \"sfu\"", "conferences.0.sfu", "needs it"),
            ("topology = \"mesh\"", "topology = \"mesh\"\nsfu = \"S\"", "conferences.0.sfu", "sfu only"),
            (
                "topology = \"mesh\"",
                "topology = \"sfu\"\nsfu = \"A\"",
                "conferences.0.sfu",
                "is a participant",
            ),
            (
                "topology = \"mesh\"",
                "topology = \"sfu\"\nsfu = \"S\"\nvia = \"T\"",
                "conferences.0.via",
                "mesh and one-to-many",
            ),
            (
                "topology = \"mesh\"",
                "topology = \"mesh\"\nvia = \"A\"",
                "conferences.0.via",
                "must not be a participant",
            ),
            ("call = {", "call = { from = \"A\",", "conferences[0].call", "`from` is not a setting"),
            ("call = {", "call = { vidoe = {}, ", "conferences[0].call", "unknown field `vidoe`"),
        ];
        for (old, new, field, message) in cases {
            let e = conference_error(&MESH.replace(old, new));
            assert_eq!(e.field.as_deref(), Some(field), "{new}: {e}");
            assert!(e.message.contains(message), "{new}: {e}");
            assert!(e.line.is_some(), "{new}: {e}");
        }
        // Two conferences may not make a flow of the same name.
        let e =
            conference_error(&format!("{MESH}{}", MESH.replace("[\"A\", \"B\", \"C\"]", "[\"B\", \"A\"]")));
        assert_eq!(e.field.as_deref(), Some("conferences.1.name"), "{e}");
        assert!(e.message.contains("\"m.B-A.video\""), "{e}");
        // A stream needs a route both ways.
        let one_way = star(SFU)
            .replace("name = \"HS\"\nfrom = \"H\"\nto = \"S\"", "name = \"HS\"\nfrom = \"H\"\nto = \"T\"");
        let e = load(&one_way, "my.toml", &[]).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("conferences.0.sfu"), "{e}");
        assert!(e.message.contains("no links lead from \"A\" to \"S\" (the media of conf0.A-S)"), "{e}");
    }

    #[test]
    fn a_relayed_call_needs_a_relay_node_other_than_its_ends_and_routes_through_it() {
        let call = |via: &str| star(&format!("[[calls]]\nfrom = \"A\"\nto = \"B\"\nvia = \"{via}\"\n"));
        assert!(load(&call("T"), "x", &[]).is_ok());
        for (via, message) in [
            ("Z", "not a node: no link, BSS or cell has it"),
            ("A", "other than the call's ends"),
            ("B", "other than"),
        ] {
            let e = load(&call(via), "my.toml", &[]).unwrap_err();
            assert_eq!(e.field.as_deref(), Some("calls.0.via"), "{e}");
            assert!(e.message.contains(message) && !e.to_string().contains('\n'), "{e}");
        }
        // T reaches nobody: the media cannot go on from the relay.
        let dead_end = call("T")
            .replace("name = \"TH\"\nfrom = \"T\"\nto = \"H\"", "name = \"TH\"\nfrom = \"H\"\nto = \"T\"");
        let e = load(&dead_end, "my.toml", &[]).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("calls.0.via"), "{e}");
        assert!(e.message.contains("no links lead from \"T\" to \"B\""), "{e}");
    }
}
