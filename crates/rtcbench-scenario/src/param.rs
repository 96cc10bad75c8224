//! Scenario values that may be a set: `delay = "50ms"` (one value), `delay = ["50ms", "100ms"]`
//! (a set: one run per value, RFC 8867 §3) or `delay = "$delay"` (a value of the named set
//! `[variants] delay = [...]`, so several fields can vary together).

use std::fmt;
use std::marker::PhantomData;

use serde::de::{
    self, value, DeserializeOwned, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};
use serde::Deserialize;

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
        d.deserialize_any(ParamVisitor(PhantomData))
    }
}

/// How a value is shown in a variant name: strings without quotes.
pub(super) fn label_of(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
