//! Scenario values that may be a set: `delay = "50ms"` (one value), `delay = ["50ms", "100ms"]`
//! (a set: one run per value, RFC 8867 §3) or `delay = "$delay"` (a value of the named set
//! `[variants] delay = [...]`, so several fields can vary together).
//!
//! Which fields take a set is said by their type alone: a field is a `Param<T>` or it is not, and
//! nothing else lists them. Expansion ([`super::expand`]) works on the file's TOML tree and asks
//! the types two things, through the two [`Mode`]s of `Param`'s serde impls:
//!
//! - *Where are the sets?* ([`find_sets`]) The scenario, read as written, is serialised with
//!   every set (`Many`, `Var`) written as a numbered marker; the markers' places in the resulting
//!   tree are the sets' paths, in the same tree shape as the file (flattened and tagged structs
//!   included), and their numbers give the schema's order (serialisation follows the order in
//!   which the structs declare their fields). Each set also leaves a check that a value fits its
//!   type, for the values of `[variants]`, which nothing has read yet.
//! - *What is a variant?* ([`read_resolved`]) Once the chosen values are in the tree, it is read
//!   with every `Param` taking its value as a plain `T`: a list or a `"$…"` string put there is a
//!   value, not a set again.
//!
//! The mode is a thread-local set for the duration of one call and restored after it (also on
//! unwinding): serde gives no way to pass context to a field's impl through derived, flattened
//! and internally tagged structs, and the alternative, a hand-kept list of every field that may
//! vary, is what this replaced.

use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{
    self, value, DeserializeOwned, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};
use serde::{Deserialize, Serialize, Serializer};

/// A scenario value before variants are expanded.
#[derive(Clone, Debug, PartialEq)]
pub enum Param<T> {
    One(T),
    /// A set of values; `labels` are their text as written, for variant names.
    Many(Vec<T>, Vec<String>),
    /// A reference to a named set in `[variants]`.
    Var(String),
}

impl<T> From<T> for Param<T> {
    fn from(v: T) -> Self {
        Self::One(v)
    }
}

struct ParamVisitor<T>(PhantomData<T>);

impl<'de, T: DeserializeOwned> Visitor<'de> for ParamVisitor<T> {
    type Value = Param<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a value, a list of values (one run each), or \"$name\" of a [variants] set")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        if let Some(name) = v.strip_prefix('$') {
            return Ok(Param::Var(name.to_string()));
        }
        T::deserialize(value::StrDeserializer::<E>::new(v)).map(Param::One)
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        self.visit_str(&v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        T::deserialize(v.into_deserializer()).map(Param::One)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        T::deserialize(v.into_deserializer()).map(Param::One)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        T::deserialize(v.into_deserializer()).map(Param::One)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        T::deserialize(v.into_deserializer()).map(Param::One)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        T::deserialize(value::MapAccessDeserializer::new(map)).map(Param::One)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut values = Vec::new();
        let mut labels = Vec::new();
        while let Some(v) = seq.next_element::<toml::Value>()? {
            labels.push(label_of(&v));
            values.push(T::deserialize(v).map_err(|e| de::Error::custom(e.message().to_string()))?);
        }
        if values.is_empty() {
            return Err(de::Error::custom("a set of values must not be empty"));
        }
        Ok(Param::Many(values, labels))
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Param<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        if MODE.with_borrow(|m| matches!(m, Mode::Resolved)) {
            return T::deserialize(d).map(Param::One);
        }
        d.deserialize_any(ParamVisitor(PhantomData))
    }
}

impl<T: Serialize + DeserializeOwned> Serialize for Param<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let shape = match self {
            Self::One(v) => return v.serialize(s),
            Self::Many(_, labels) => Shape::Many(labels.clone()),
            Self::Var(name) => Shape::Var(name.clone()),
        };
        let finding = MODE.with_borrow_mut(|m| match m {
            Mode::Find(sets) => {
                sets.push(Set { path: Vec::new(), shape: shape.clone(), check: fits::<T> });
                Some(sets.len() - 1)
            }
            _ => None,
        });
        match (finding, self) {
            (Some(k), _) => {
                toml::Table::from_iter([(MARKER.to_string(), toml::Value::from(k as i64))]).serialize(s)
            }
            (None, Self::Many(values, _)) => values.serialize(s),
            (None, Self::Var(name)) => s.serialize_str(&format!("${name}")),
            (None, Self::One(_)) => unreachable!("written above"),
        }
    }
}

/// What `Param`'s serde impls do.
enum Mode {
    /// Read and write a scenario as written: a list is a set, `"$name"` a named set's value.
    File,
    /// Write each set as a marker, and note it (`find_sets`).
    Find(Vec<Set>),
    /// Read every value as one value (`read_resolved`).
    Resolved,
}

thread_local! {
    static MODE: RefCell<Mode> = const { RefCell::new(Mode::File) };
}

/// Runs `f` with `mode` and gives back the mode it left; the mode before is restored after `f`,
/// also if it panics.
fn with_mode<R>(mode: Mode, f: impl FnOnce() -> R) -> (R, Mode) {
    struct Restore(Option<Mode>);
    impl Drop for Restore {
        fn drop(&mut self) {
            if let Some(before) = self.0.take() {
                MODE.set(before);
            }
        }
    }
    let mut restore = Restore(Some(MODE.replace(mode)));
    let out = f();
    let after = MODE.replace(restore.0.take().expect("restored once"));
    (out, after)
}

/// The key of the table a set is written as while sets are found: `{ "\0set" = k }` for the
/// `k`-th set. No field read from a file serialises as a table of this key and an integer.
const MARKER: &str = "\u{0}set";

/// What a set holds.
#[derive(Clone, Debug)]
pub(super) enum Shape {
    /// A list of values, with their text as written (for variant names).
    Many(Vec<String>),
    /// `"$name"`: the values of `[variants] name`.
    Var(String),
}

/// A field of a scenario that holds a set.
pub(super) struct Set {
    /// Where it is in the scenario's TOML tree.
    pub path: Vec<Segment>,
    pub shape: Shape,
    /// Whether a value fits the field: the message of the error reading it if not.
    pub check: Check,
}

/// See [`Set::check`].
pub(super) type Check = fn(&toml::Value) -> Result<(), String>;

/// Whether `value` reads as a `T`.
fn fits<T: DeserializeOwned>(value: &toml::Value) -> Result<(), String> {
    T::deserialize(value.clone()).map(drop).map_err(|e| e.message().trim().to_string())
}

/// A step of a path in a TOML tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Segment {
    Key(String),
    Index(usize),
}

/// The sets of a scenario read as written, in schema order (the order in which its structs
/// declare their fields; map entries by key, list elements by index).
pub(super) fn find_sets<S: Serialize>(spec: &S) -> Vec<Set> {
    let (marked, mode) = with_mode(Mode::Find(Vec::new()), || toml::Value::try_from(spec));
    let Mode::Find(mut sets) = mode else { unreachable!("find_sets sets Find") };
    let marked = marked.expect("a scenario that was read serialises");
    let mut path = Vec::new();
    mark_paths(&marked, &mut path, &mut sets);
    debug_assert!(sets.iter().all(|s| !s.path.is_empty()), "every set is in the tree");
    sets
}

/// Notes, for each marker under `value` (at `path`), its path in the set it stands for.
fn mark_paths(value: &toml::Value, path: &mut Vec<Segment>, sets: &mut [Set]) {
    match value {
        toml::Value::Table(t) => {
            if let (1, Some(toml::Value::Integer(k))) = (t.len(), t.get(MARKER)) {
                sets[*k as usize].path = path.clone();
                return;
            }
            for (key, v) in t {
                path.push(Segment::Key(key.clone()));
                mark_paths(v, path, sets);
                path.pop();
            }
        }
        toml::Value::Array(a) => {
            for (k, v) in a.iter().enumerate() {
                path.push(Segment::Index(k));
                mark_paths(v, path, sets);
                path.pop();
            }
        }
        _ => {}
    }
}

/// The child of a TOML value at `seg`, if it has one.
fn child<'a>(value: &'a toml::Value, seg: &Segment) -> Option<&'a toml::Value> {
    match seg {
        Segment::Key(k) => value.get(k.as_str()),
        Segment::Index(i) => value.get(*i),
    }
}

/// The value at `path` in `tree`.
pub(super) fn at<'a>(tree: &'a toml::Table, path: &[Segment]) -> Option<&'a toml::Value> {
    let (Segment::Key(first), rest) = path.split_first()? else { return None };
    rest.iter().try_fold(tree.get(first)?, |v, seg| child(v, seg))
}

/// The value at `path` in `tree`, to replace it.
pub(super) fn at_mut<'a>(tree: &'a mut toml::Table, path: &[Segment]) -> Option<&'a mut toml::Value> {
    let (Segment::Key(first), rest) = path.split_first()? else { return None };
    rest.iter().try_fold(tree.get_mut(first)?, |v, seg| match seg {
        Segment::Key(k) => v.get_mut(k.as_str()),
        Segment::Index(i) => v.get_mut(*i),
    })
}

/// Reads a scenario whose sets have been replaced by one value each: every `Param` takes the
/// value in its place as it is (a list there is a wrong value, not a set).
pub(super) fn read_resolved<T: DeserializeOwned>(
    tree: toml::Value,
) -> Result<T, serde_path_to_error::Error<toml::de::Error>> {
    with_mode(Mode::Resolved, || serde_path_to_error::deserialize(tree)).0
}

/// How a value is shown in a variant name: strings without quotes.
pub(super) fn label_of(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A schema no list knows of: the sets are found from the types alone, through a flattened
    /// struct, an internally tagged enum, a map and lists of tables, and a list field is no set.
    #[derive(Deserialize, Serialize)]
    struct Outer {
        first: Param<u32>,
        names: Vec<String>,
        #[serde(flatten)]
        inner: Inner,
        tagged: Tagged,
        by_name: std::collections::BTreeMap<String, Inner>,
        items: Vec<Inner>,
    }

    #[derive(Deserialize, Serialize)]
    struct Inner {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rate: Option<Param<f64>>,
        #[serde(default)]
        label: String,
    }

    #[derive(Deserialize, Serialize)]
    #[serde(tag = "kind", rename_all = "kebab-case")]
    enum Tagged {
        Some { p: Param<String> },
    }

    const TEXT: &str = r#"
first = [1, 2]
names = ["a", "b"]
rate = "$r"
label = "$not-a-set"
tagged = { kind = "some", p = ["x", "$y"] }
by_name = { b = { rate = 0.5 }, a = { rate = [0.1, 0.2] } }
items = [{ label = "l" }, { rate = "$s" }]
"#;

    fn key(k: &str) -> Segment {
        Segment::Key(k.into())
    }

    #[test]
    fn sets_are_found_by_their_type_in_schema_order_with_their_paths() {
        let outer: Outer = toml::from_str(TEXT).unwrap();
        let sets = find_sets(&outer);
        let found: Vec<(Vec<Segment>, String)> =
            sets.iter().map(|s| (s.path.clone(), format!("{:?}", s.shape))).collect();
        assert_eq!(
            found,
            [
                (vec![key("first")], "Many([\"1\", \"2\"])".to_string()),
                (vec![key("rate")], "Var(\"r\")".into()),
                (vec![key("tagged"), key("p")], "Many([\"x\", \"$y\"])".into()),
                (vec![key("by_name"), key("a"), key("rate")], "Many([\"0.1\", \"0.2\"])".into()),
                (vec![key("items"), Segment::Index(1), key("rate")], "Var(\"s\")".into()),
            ]
        );
        // Each set checks a value against its own type.
        assert!((sets[0].check)(&toml::Value::from(3)).is_ok());
        assert!((sets[0].check)(&toml::Value::from("3")).unwrap_err().contains("expected u32"));
        // The mode is restored: the scenario writes back as it was read.
        let again = toml::Value::try_from(&outer).unwrap();
        assert_eq!(again["first"], toml::Value::Array(vec![1.into(), 2.into()]));
        assert_eq!(again["rate"], toml::Value::from("$r"));
    }

    #[test]
    fn a_resolved_tree_is_read_value_for_value() {
        let mut tree: toml::Table = toml::from_str(TEXT).unwrap();
        let sets = find_sets(&toml::from_str::<Outer>(TEXT).unwrap());
        for set in &sets {
            *at_mut(&mut tree, &set.path).unwrap() = toml::Value::from("$y");
        }
        // Every set now holds "$y": a plain value for a string, a wrong value for a number.
        let e = read_resolved::<Outer>(toml::Value::Table(tree.clone())).err().unwrap();
        assert!(e.inner().message().starts_with("invalid type: string \"$y\", expected"), "{e}");
        *at_mut(&mut tree, &sets[0].path).unwrap() = toml::Value::from(7);
        for set in &sets[1..] {
            if set.path.last() == Some(&key("rate")) {
                *at_mut(&mut tree, &set.path).unwrap() = toml::Value::from(0.25);
            }
        }
        let outer: Outer = read_resolved(toml::Value::Table(tree)).unwrap();
        assert_eq!(outer.first, Param::One(7));
        assert_eq!(outer.inner.rate, Some(Param::One(0.25)));
        assert_eq!(outer.inner.label, "$not-a-set");
        let Tagged::Some { p } = outer.tagged;
        assert_eq!(p, Param::One("$y".to_string()));
        assert_eq!(outer.items[1].rate, Some(Param::One(0.25)));
    }
}
