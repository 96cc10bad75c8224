//! Where a field is in a scenario file, so that an error found after parsing (a value out of
//! range, two flows with one name) names the line as a syntax error does.
//!
//! Field paths are those of [`super::validate`]: dotted keys, with a list element named by its
//! `name` or its index (`links.forward.delay`, `calls.0.video.max`, `links.fwd.schedule[2]`).
//! The line is that of the deepest part of the path the file has: a field left to its default
//! is reported at its table.

use toml_edit::{Document, Item, Table, Value};

/// The segments of a field path: `links.fwd.schedule[2].capacity` → links, fwd, schedule, 2,
/// capacity.
pub(super) fn segments(path: &str) -> Vec<&str> {
    path.split(['.', '[', ']']).filter(|s| !s.is_empty()).collect()
}

/// The element of a list a segment names: by its `name`, else by its index.
fn element<'a, T>(items: Vec<(&'a T, Option<&'a str>)>, seg: &str) -> Option<&'a T> {
    if let Some((found, _)) = items.iter().find(|(_, name)| *name == Some(seg)) {
        return Some(found);
    }
    let k: usize = seg.parse().ok()?;
    items.get(k).map(|(item, _)| *item)
}

#[derive(Clone, Copy)]
enum Node<'a> {
    Item(&'a Item),
    Table(&'a Table),
    Value(&'a Value),
}

impl<'a> Node<'a> {
    fn span(self) -> Option<std::ops::Range<usize>> {
        match self {
            Self::Item(i) => i.span(),
            Self::Table(t) => t.span(),
            Self::Value(v) => v.span(),
        }
    }

    fn child(self, seg: &str) -> Option<Self> {
        let value = |v: &'a Value| match v {
            Value::InlineTable(t) => t.get(seg).map(Node::Value),
            Value::Array(a) => {
                let name =
                    |v: &'a Value| v.as_inline_table().and_then(|t| t.get("name")).and_then(Value::as_str);
                element(a.iter().map(|v| (v, name(v))).collect(), seg).map(Node::Value)
            }
            _ => None,
        };
        match self {
            Self::Item(Item::ArrayOfTables(aot)) => {
                let name = |t: &'a Table| t.get("name").and_then(Item::as_str);
                element(aot.iter().map(|t| (t, name(t))).collect(), seg).map(Node::Table)
            }
            Self::Item(Item::Table(t)) | Self::Table(t) => t.get(seg).map(Node::Item),
            Self::Item(Item::Value(v)) | Self::Value(v) => value(v),
            Self::Item(Item::None) => None,
        }
    }
}

/// The byte span of `field` in `text`, or of the deepest part of it the text has, and whether the
/// whole path was found; `None` if the text does not parse or has none of it.
fn span_of(text: &str, field: &str) -> Option<(std::ops::Range<usize>, bool)> {
    let doc: Document<&str> = Document::parse(text).ok()?;
    let mut node = Node::Table(doc.as_table());
    let mut span = None;
    let mut complete = true;
    for seg in segments(field) {
        let Some(next) = node.child(seg) else {
            complete = false;
            break;
        };
        node = next;
        span = node.span().or(span);
    }
    span.map(|s| (s, complete))
}

/// The 1-based line of `field` in `text`, or of the deepest part of it the text has; `None` if
/// the text does not parse or has none of it.
pub(super) fn line_of(text: &str, field: &str) -> Option<usize> {
    span_of(text, field).map(|(s, _)| super::line_of(text, s.start))
}

/// Whether the override `path` (a `--set` path, applied to give `text`) set `field` or a part of
/// it, or a table that holds it: both name the same place in `text`. A bare variant name (`delay`)
/// sets every field written `"$delay"`.
///
/// A field the text leaves to its default (the error is about its absence) was caused by an
/// override of another key of the same table.
pub(super) fn set_by(text: &str, path: &str, field: &str) -> bool {
    let (Some((set, true)), Some((found, complete))) = (span_of(text, path), span_of(text, field)) else {
        return variant_of(text, field).is_some_and(|name| name == path.trim());
    };
    if !complete {
        let parent = path.rsplit_once('.').map_or("", |(p, _)| p);
        return span_of(text, parent).is_some_and(|(table, whole)| whole && table == found);
    }
    (set.start <= found.start && found.end <= set.end) || (found.start <= set.start && set.end <= found.end)
}

/// The variant a field takes its value from (`"$delay"`), if it does.
fn variant_of(text: &str, field: &str) -> Option<String> {
    let (span, true) = span_of(text, field)? else { return None };
    let value = text.get(span)?.trim().trim_matches('"');
    value.strip_prefix('$').map(String::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = r#"id = "t"
duration = "10s"

[[links]]
name = "fwd"
from = "A"
to = "B"
schedule = [
  { at = "0s", capacity = "1Mbps" },
  { at = "5s", capacity = "2Mbps" },
]

[[calls]]
from = "A"
to = "B"
video = { min = "300kbps", max = "200kbps" }
"#;

    #[test]
    fn fields_are_found_by_name_index_and_element() {
        assert_eq!(line_of(TEXT, "duration"), Some(2));
        assert_eq!(line_of(TEXT, "links.fwd.to"), Some(7));
        assert_eq!(line_of(TEXT, "links.0.from"), Some(6));
        assert_eq!(line_of(TEXT, "links.fwd.schedule[1]"), Some(10));
        assert_eq!(line_of(TEXT, "links.fwd.schedule[1].capacity"), Some(10));
        assert_eq!(line_of(TEXT, "calls.0.video.max"), Some(16));
        // Absent: the deepest part present.
        assert_eq!(line_of(TEXT, "calls.0.feedback.twcc_interval"), Some(13));
        assert_eq!(line_of(TEXT, "links.fwd.queue.size"), Some(4));
        assert_eq!(line_of(TEXT, "nothing"), None);
        assert_eq!(line_of("not = [toml", "x"), None);
    }

    #[test]
    fn an_override_is_found_behind_the_field_it_set() {
        assert!(set_by(TEXT, "links.fwd.schedule", "links.fwd.schedule[1].capacity"));
        assert!(set_by(TEXT, "links.0.schedule", "links.fwd.schedule[0]"));
        assert!(set_by(TEXT, "calls.0.video.max", "calls.0.video.max"));
        assert!(set_by(TEXT, "calls.0.video", "calls.0.video.max"));
        assert!(!set_by(TEXT, "calls.0.video.max", "calls.0.video.min"));
        assert!(!set_by(TEXT, "duration", "links.fwd.schedule[1]"));
        // A default the override made wrong: another key of the same table.
        assert!(set_by(TEXT, "links.fwd.to", "links.fwd.queue"));
        assert!(!set_by(TEXT, "calls.0.to", "links.fwd.queue"));
        // A field that takes a variant's value.
        let with_var = TEXT.replace("duration = \"10s\"", "duration = \"$d\"");
        assert!(set_by(&with_var, "d", "duration"));
        assert!(!set_by(&with_var, "e", "duration"));
    }
}
