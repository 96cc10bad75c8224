//! The one definition of the trace tables' columns (`docs/traces.md`): their names, in the order
//! the tables hand them out ([`super::PacketTable::into_columns`] and its siblings), what each
//! holds once read, whether every producer writes it, and how the core's array becomes it.
//! `rtcbench-py` exports it (`_core.trace_schema()`); Python types and checks every run's
//! tables with it (`rtcbench.tables`), whichever mode made them, and decodes the simulator's
//! arrays by it (`rtcbench.results.piece_frames`).

/// What a column holds in a run's tables (Parquet, polars).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    Bool,
    Int32,
    Int64,
    Float64,
    Text,
}

impl ColumnType {
    pub const fn name(self) -> &'static str {
        match self {
            Self::Bool => "bool",
            Self::Int32 => "int32",
            Self::Int64 => "int64",
            Self::Float64 => "float64",
            Self::Text => "text",
        }
    }
}

/// Which producers (simulator, emulation, browser) write a column, and so what a reader does
/// when a table lacks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Presence {
    /// Every producer writes it: a table without it is an error.
    Required,
    /// A producer that cannot fill it may leave it out: it is added as nulls.
    Nullable,
    /// No metric reads it: cast when present, not added when missing.
    Optional,
    /// The simulator writes it for people and tools; readers leave it as it is.
    Extra,
}

impl Presence {
    pub const fn name(self) -> &'static str {
        match self {
            Self::Required => "required",
            Self::Nullable => "nullable",
            Self::Optional => "optional",
            Self::Extra => "extra",
        }
    }
}

/// How the core hands a column out (`_core` arrays) and how it becomes the table's column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// As it is.
    Plain,
    /// `-1` (integers) or NaN (floats) stands for null.
    Sentinel,
    /// An integer code, named by the list of that name in `_core.trace_codes()` (an empty name
    /// is null).
    Coded(&'static str),
    /// A link id, named by `meta.links`; `-1` is null.
    Link,
}

impl Encoding {
    /// `plain`, `sentinel`, `link`, or the name of the codes list.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Plain => "plain",
            Self::Sentinel => "sentinel",
            Self::Coded(codes) => codes,
            Self::Link => "link",
        }
    }
}

/// One column of a trace table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    pub ty: ColumnType,
    pub presence: Presence,
    pub encoding: Encoding,
}

const fn col(name: &'static str, ty: ColumnType, presence: Presence, encoding: Encoding) -> Column {
    Column { name, ty, presence, encoding }
}

use ColumnType::{Bool, Float64, Int32, Int64, Text};
use Encoding::{Coded, Link, Plain, Sentinel};
use Presence::{Extra, Nullable, Optional, Required};

/// `packets.parquet`: one row per packet event.
pub const PACKETS: [Column; 13] = [
    col("t_us", Int64, Required, Plain),
    col("event", Text, Required, Coded("event")),
    col("packet", Int64, Optional, Plain),
    col("flow", Int32, Required, Plain),
    col("kind", Text, Required, Coded("kind")),
    col("size", Int32, Required, Plain),
    col("payload", Int32, Required, Plain),
    col("sent_us", Int64, Required, Plain),
    col("seq", Int32, Nullable, Sentinel),
    col("frame", Int64, Optional, Sentinel),
    col("link", Text, Optional, Link),
    col("reason", Text, Optional, Coded("reason")),
    col("ecn", Text, Extra, Coded("ecn")),
];

/// `frames.parquet`: one row per video frame.
pub const FRAMES: [Column; 17] = [
    col("flow", Int32, Required, Plain),
    col("frame", Int64, Required, Plain),
    col("capture_us", Int64, Required, Plain),
    col("size", Int32, Required, Plain),
    col("keyframe", Bool, Required, Plain),
    col("width", Int32, Extra, Plain),
    col("height", Int32, Extra, Plain),
    col("packets", Int32, Required, Plain),
    col("encoded_us", Int64, Nullable, Sentinel),
    col("first_sent_us", Int64, Nullable, Sentinel),
    col("last_sent_us", Int64, Nullable, Sentinel),
    col("first_us", Int64, Nullable, Sentinel),
    col("last_arrival_us", Int64, Nullable, Sentinel),
    col("complete_us", Int64, Nullable, Sentinel),
    col("decode_us", Int64, Nullable, Sentinel),
    col("render_us", Int64, Nullable, Sentinel),
    col("freeze", Bool, Required, Plain),
];

/// `controller.parquet`: the columns every controller has; its own follow (`ControllerTable`).
pub const CONTROLLER: [Column; 4] = [
    col("t_us", Int64, Required, Plain),
    col("call", Int32, Required, Plain),
    col("target_bps", Int64, Required, Sentinel),
    col("pacing_bps", Int64, Nullable, Sentinel),
];

/// `links.parquet`: every link's (and Wi-Fi node's, and LTE buffer's) state over time.
pub const LINKS: [Column; 30] = [
    col("t_us", Int64, Required, Plain),
    col("link", Text, Required, Link),
    col("capacity_bps", Int64, Nullable, Sentinel),
    col("queue_bytes", Int64, Required, Plain),
    col("queue_limit_bytes", Int64, Nullable, Sentinel),
    col("airtime_share", Float64, Nullable, Sentinel),
    col("mac_retries", Int64, Nullable, Sentinel),
    col("mac_drops", Int64, Nullable, Sentinel),
    col("queue_drops", Int64, Nullable, Sentinel),
    col("ampdu_mpdus", Float64, Nullable, Sentinel),
    col("phy_rate_bps", Int64, Nullable, Sentinel),
    col("delivered_bps", Int64, Nullable, Sentinel),
    col("congestion_level", Float64, Nullable, Sentinel),
    col("mac_capacity_bps", Int64, Nullable, Sentinel),
    col("extended_attempts", Int64, Nullable, Sentinel),
    col("rb_share", Float64, Nullable, Sentinel),
    col("scheduled_bps", Int64, Nullable, Sentinel),
    col("queue_delay_us", Int64, Nullable, Sentinel),
    col("cqi", Int64, Nullable, Sentinel),
    col("l_queue_bytes", Int64, Nullable, Sentinel),
    col("l_sojourn_us", Int64, Nullable, Sentinel),
    col("c_sojourn_us", Int64, Nullable, Sentinel),
    col("p_base", Float64, Nullable, Sentinel),
    col("p_c", Float64, Nullable, Sentinel),
    col("p_cl", Float64, Nullable, Sentinel),
    col("p_l", Float64, Nullable, Sentinel),
    col("l_marks", Int64, Nullable, Sentinel),
    col("c_marks", Int64, Nullable, Sentinel),
    col("l_drops", Int64, Nullable, Sentinel),
    col("c_drops", Int64, Nullable, Sentinel),
];

/// `feedback.parquet`: one row per feedback message a sender received.
pub const FEEDBACK: [Column; 8] = [
    col("t_us", Int64, Required, Plain),
    col("call", Int32, Required, Plain),
    col("kind", Text, Required, Coded("feedback_kind")),
    col("size", Int32, Required, Plain),
    col("rtt_us", Int64, Nullable, Sentinel),
    col("fraction_lost", Float64, Nullable, Sentinel),
    col("packets_reported", Int32, Nullable, Sentinel),
    col("ce_reported", Int32, Nullable, Sentinel),
];

/// Every table, by the name of its file.
pub const TABLES: [(&str, &[Column]); 5] = [
    ("packets", &PACKETS),
    ("frames", &FRAMES),
    ("controller", &CONTROLLER),
    ("links", &LINKS),
    ("feedback", &FEEDBACK),
];

/// A column's values as a table hands them out.
#[derive(Debug)]
pub enum Values {
    Bool(Vec<bool>),
    U8(Vec<u8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F64(Vec<f64>),
}

impl Values {
    /// Whether values of this kind can be the column `c` (a code or a link id is an integer
    /// that becomes text): what keeps a table's values in step with its schema.
    pub fn fits(&self, c: &Column) -> bool {
        match (self, c.encoding) {
            (Self::U8(_), Coded(_)) | (Self::I16(_), Link) => c.ty == Text,
            (_, Coded(_) | Link) => false,
            (Self::Bool(_), _) => c.ty == Bool,
            (Self::I32(_), _) => c.ty == Int32,
            (Self::I64(_), _) => c.ty == Int64,
            (Self::F64(_), _) => c.ty == Float64,
            (Self::U8(_) | Self::I16(_), _) => false,
        }
    }
}

/// The columns `values` with the names of `schema`, in its order.
pub(super) fn named<const N: usize>(
    schema: &'static [Column; N],
    values: [Values; N],
) -> Vec<(&'static str, Values)> {
    debug_assert!(schema.iter().zip(&values).all(|(c, v)| v.fits(c)), "values out of step with {schema:?}");
    schema.iter().map(|c| c.name).zip(values).collect()
}

impl super::PacketTable {
    /// The table's columns, named and ordered by [`PACKETS`].
    pub fn into_columns(self) -> Vec<(&'static str, Values)> {
        use Values::*;
        let values = [
            I64(self.t_us),
            U8(self.event),
            I64(self.packet),
            I32(self.flow),
            U8(self.kind),
            I32(self.size),
            I32(self.payload),
            I64(self.sent_us),
            I32(self.seq),
            I64(self.frame),
            I16(self.link),
            U8(self.reason),
            U8(self.ecn),
        ];
        named(&PACKETS, values)
    }
}

impl super::FrameTable {
    /// The table's columns, named and ordered by [`FRAMES`].
    pub fn into_columns(self) -> Vec<(&'static str, Values)> {
        use Values::*;
        let values = [
            I32(self.flow),
            I64(self.frame),
            I64(self.capture_us),
            I32(self.size),
            Bool(self.keyframe),
            I32(self.width),
            I32(self.height),
            I32(self.packets),
            I64(self.encoded_us),
            I64(self.first_sent_us),
            I64(self.last_sent_us),
            I64(self.first_us),
            I64(self.last_arrival_us),
            I64(self.complete_us),
            I64(self.decode_us),
            I64(self.render_us),
            Bool(self.freeze),
        ];
        named(&FRAMES, values)
    }
}

impl super::ControllerTable {
    /// The columns every controller has, named and ordered by [`CONTROLLER`], and the
    /// controller's own ([`super::ControllerTable::columns`]).
    pub fn into_columns(self) -> (Vec<(&'static str, Values)>, Vec<super::Column>) {
        use Values::*;
        let values = [I64(self.t_us), I32(self.call), I64(self.target_bps), I64(self.pacing_bps)];
        (named(&CONTROLLER, values), self.columns)
    }
}

/// One DualPI2 column of a links table of `rows` rows: `null` (the sentinel) on every row but a
/// DualPI2 link's, whose sample gives `value`.
fn dualpi2_column<T: Copy>(
    samples: &[(usize, super::DualPi2Sample)],
    rows: usize,
    null: T,
    value: impl Fn(&super::DualPi2Sample) -> T,
) -> Vec<T> {
    let mut column = vec![null; rows];
    for (row, d) in samples {
        column[*row] = value(d);
    }
    column
}

impl super::LinkTable {
    /// The table's columns, named and ordered by [`LINKS`].
    pub fn into_columns(self) -> Vec<(&'static str, Values)> {
        use Values::*;
        let rows = self.t_us.len();
        let values = [
            I64(self.t_us),
            I16(self.link),
            I64(self.capacity_bps),
            I64(self.queue_bytes),
            I64(self.queue_limit_bytes),
            F64(self.airtime_share),
            I64(self.mac_retries),
            I64(self.mac_drops),
            I64(self.queue_drops),
            F64(self.ampdu_mpdus),
            I64(self.phy_rate_bps),
            I64(self.delivered_bps),
            F64(self.congestion_level),
            I64(self.mac_capacity_bps),
            I64(self.extended_attempts),
            F64(self.rb_share),
            I64(self.scheduled_bps),
            I64(self.queue_delay_us),
            I64(self.cqi),
            I64(dualpi2_column(&self.dualpi2, rows, -1, |d| d.state.l_bytes.as_bytes() as i64)),
            I64(dualpi2_column(&self.dualpi2, rows, -1, |d| d.state.l_sojourn.as_micros())),
            I64(dualpi2_column(&self.dualpi2, rows, -1, |d| d.state.c_sojourn.as_micros())),
            F64(dualpi2_column(&self.dualpi2, rows, f64::NAN, |d| d.state.p_base)),
            F64(dualpi2_column(&self.dualpi2, rows, f64::NAN, |d| d.state.p_c)),
            F64(dualpi2_column(&self.dualpi2, rows, f64::NAN, |d| d.state.p_cl)),
            F64(dualpi2_column(&self.dualpi2, rows, f64::NAN, |d| d.state.p_l)),
            I64(dualpi2_column(&self.dualpi2, rows, -1, |d| d.l_marks as i64)),
            I64(dualpi2_column(&self.dualpi2, rows, -1, |d| d.c_marks as i64)),
            I64(dualpi2_column(&self.dualpi2, rows, -1, |d| d.l_drops as i64)),
            I64(dualpi2_column(&self.dualpi2, rows, -1, |d| d.c_drops as i64)),
        ];
        named(&LINKS, values)
    }
}

impl super::FeedbackTable {
    /// The table's columns, named and ordered by [`FEEDBACK`].
    pub fn into_columns(self) -> Vec<(&'static str, Values)> {
        use Values::*;
        let values = [
            I64(self.t_us),
            I32(self.call),
            U8(self.kind),
            I32(self.size),
            I64(self.rtt_us),
            F64(self.fraction_lost),
            I32(self.packets_reported),
            I32(self.ce_reported),
        ];
        named(&FEEDBACK, values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Trace;

    /// Every table's values fit its schema, column by column (a column added to a table but
    /// not to the schema, or in another place, fails here, in release builds too).
    #[test]
    fn every_table_hands_out_its_columns_as_the_schema_says() {
        let t = Trace::default();
        let (controller, _) = t.controller.into_columns();
        let tables = [
            (&PACKETS[..], t.packets.into_columns()),
            (&FRAMES[..], t.frames.into_columns()),
            (&CONTROLLER[..], controller),
            (&LINKS[..], t.links.into_columns()),
            (&FEEDBACK[..], t.feedback.into_columns()),
        ];
        for (schema, columns) in tables {
            assert_eq!(schema.len(), columns.len());
            for (c, (name, values)) in schema.iter().zip(&columns) {
                assert_eq!(c.name, *name);
                assert!(values.fits(c), "{name}: {values:?} is not {:?} ({:?})", c.ty, c.encoding);
            }
        }
        let names: Vec<&str> = TABLES.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["packets", "frames", "controller", "links", "feedback"]);
    }

    #[test]
    fn a_coded_column_names_a_list_of_codes() {
        let lists = ["event", "kind", "ecn", "reason", "feedback_kind"];
        for (_, table) in TABLES {
            for c in table {
                if let Encoding::Coded(list) = c.encoding {
                    assert!(lists.contains(&list), "{}: no codes list {list}", c.name);
                }
            }
        }
    }
}
