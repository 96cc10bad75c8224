//! Units for rtcbench: time in integer microseconds, bit rates in bit/s, sizes in bytes, and
//! wrapping sequence numbers.
//!
//! Every public signature in rtcbench uses these types instead of bare integers, so a value can
//! never be confused between bits and bytes or milliseconds and microseconds. Text in scenario
//! files ("2.5Mbps", "300ms", "60KB") is parsed here, with SI prefixes (1 Mbps = 10^6 bit/s,
//! 1 KB = 1000 bytes), and a parse error names the text and what is allowed.

mod parse;
mod rate;
mod seq;
mod size;
mod time;

pub use parse::ParseError;
pub use rate::Bitrate;
pub use seq::{SeqNo, SeqUnwrapper};
pub use size::DataSize;
pub use time::{Duration, Instant};
