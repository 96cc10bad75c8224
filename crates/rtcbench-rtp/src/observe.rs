//! What a call's endpoints report as they go, for the trace: frames encoded and completed,
//! feedback messages, controller state. The simulator writes these into its trace tables; a live
//! agent into its own log.

use rtcbench_cc::ControllerMetrics;
use rtcbench_media::video::Frame;
use rtcbench_units::{Bitrate, DataSize, Duration, Instant};

/// Receives an endpoint's events. Every method has an empty default, so an observer takes only
/// what it records.
pub trait CallObserver {
    /// The sender's encoder produced `frame` at `at` (its capture instant is `frame.capture`),
    /// split into `packets` RTP packets that now wait in the sender's queue.
    fn frame_encoded(&mut self, _at: Instant, _frame: &Frame, _packets: u32) {}
    /// Every packet of video frame `frame` had arrived at the receiver at `at`, the first of them
    /// at `first`.
    fn frame_completed(&mut self, _frame: u64, _first: Instant, _at: Instant) {}
    /// Video frame `frame` left the receiver's jitter buffer for the decoder at `decoded` and was
    /// rendered at `at`; `freeze` if the wait for it was a freeze.
    fn frame_rendered(&mut self, _frame: u64, _decoded: Instant, _at: Instant, _freeze: bool) {}
    /// The receiver rebuilt lost video packet `seq` from FEC at `at`.
    fn packet_recovered(&mut self, _at: Instant, _seq: u16) {}
    /// The sender received a feedback message.
    fn feedback(&mut self, _at: Instant, _row: FeedbackRow) {}
    /// The sender's controller state (and that of its receiver-side part, if any), at most every
    /// 10 ms and whenever the target changes.
    fn controller(
        &mut self,
        _at: Instant,
        _target: Bitrate,
        _pacing: Option<Bitrate>,
        _metrics: &ControllerMetrics,
        _remote: Option<&ControllerMetrics>,
    ) {
    }
}

/// An observer that records nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ignore;

impl CallObserver for Ignore {}

/// What a feedback message was (`feedback.kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FeedbackKind {
    Twcc = 0,
    Rr = 1,
    Remb = 2,
    Ccfb = 3,
    /// A generic NACK (RFC 4585 §6.2.1); `packets_reported` is the number of packets requested.
    Nack = 4,
    /// A picture loss indication (RFC 4585 §6.3.1).
    Pli = 5,
    /// A full intra request (RFC 5104 §4.3.1).
    Fir = 6,
}

/// One feedback message as the sender received it (a row of `feedback.parquet`).
#[derive(Clone, Copy, Debug)]
pub struct FeedbackRow {
    pub kind: FeedbackKind,
    pub size: DataSize,
    pub rtt: Option<Duration>,
    pub fraction_lost: Option<f64>,
    pub packets_reported: Option<u32>,
    /// RFC 8888 only: how many of the packets it reported for the first time arrived CE-marked
    /// (RFC 8888 §3.1's ECN field), the marks the controller hears of.
    pub ce_reported: Option<u32>,
}

impl FeedbackRow {
    /// A per-packet feedback message (TWCC, RFC 8888, REMB) reporting on `packets` packets.
    pub fn reporting(kind: FeedbackKind, size: DataSize, packets: usize) -> Self {
        Self {
            kind,
            size,
            rtt: None,
            fraction_lost: None,
            packets_reported: Some(packets as u32),
            ce_reported: None,
        }
    }
}
