//! Typed trace records, kept as columns (one `Vec` per column) so a run's tables cross into
//! Python as arrays without per-row work. The tables and their columns are documented in
//! `docs/traces.md`. Nullable integer columns use `-1` and nullable floats `NaN` here; the
//! Python layer turns both into real nulls.
//!
//! A long run does not keep its trace: its owner takes the rows recorded so far
//! ([`Trace::take_final`]) and writes them out while the run goes on, so memory stays bounded by
//! what is recorded between two takes. Every table only appends rows except `frames`, whose row
//! is completed when the frame is; a frame row is handed out once nothing can change it any more
//! (see [`FrameTable::take_final`]), so the rows taken in pieces are the rows one take at the end
//! would give, in the same order.
//!
//! The columns' names, types and encodings are defined once, in [`schema`].

pub mod schema;

use std::collections::VecDeque;

use rtcbench_cc::{ControllerMetrics, Metric};
use rtcbench_media::video::Frame;
use rtcbench_units::{Bitrate, DataSize, Instant};

use crate::packet::{DropReason, FlowId, LinkId, Packet, PacketKind};

/// `packets.event`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PacketEvent {
    Sent = 0,
    Received = 1,
    Dropped = 2,
    /// A lost media packet rebuilt from FEC at the receiver: a row with no packet (`packet` −1),
    /// the video flow, `kind` media, its sequence number, and `sent_us` the time of recovery.
    Recovered = 3,
}

impl PacketEvent {
    pub const NAMES: [&'static str; 4] = ["sent", "received", "dropped", "recovered"];
}

/// Codes of `packets.kind`, in [`PacketKind`] order.
pub const KIND_NAMES: [&str; 8] = ["media", "padding", "rtcp", "tcp", "tcp_ack", "cbr", "rtx", "fec"];
/// Codes of `packets.reason` (0 = null).
pub const REASON_NAMES: [&str; 8] =
    ["", "queue_full", "random_loss", "aqm", "overflow", "retry_limit", "lifetime", "harq_failure"];
/// Names of `packets.ecn`, indexed by the two ECN bits (RFC 3168 §5).
pub const ECN_NAMES: [&str; 4] = rtcbench_wire::Ecn::NAMES;
/// Codes of `feedback.kind`, in [`FeedbackKind`] order.
pub const FEEDBACK_KIND_NAMES: [&str; 7] = ["twcc", "rr", "remb", "ccfb", "nack", "pli", "fir"];

/// What a feedback message was (`feedback.kind`), and one message (a row of `feedback`): the
/// endpoints report them ([`rtcbench_rtp::CallObserver`]).
pub use rtcbench_rtp::observe::{FeedbackKind, FeedbackRow};

fn kind_code(k: PacketKind) -> u8 {
    match k {
        PacketKind::Media => 0,
        PacketKind::Padding => 1,
        PacketKind::Rtcp => 2,
        PacketKind::Tcp => 3,
        PacketKind::TcpAck => 4,
        PacketKind::Cbr => 5,
        PacketKind::Rtx => 6,
        PacketKind::Fec => 7,
    }
}

/// `packets.parquet`.
#[derive(Debug, Default)]
pub struct PacketTable {
    pub t_us: Vec<i64>,
    pub event: Vec<u8>,
    pub packet: Vec<i64>,
    pub flow: Vec<i32>,
    pub kind: Vec<u8>,
    pub size: Vec<i32>,
    pub payload: Vec<i32>,
    pub sent_us: Vec<i64>,
    pub seq: Vec<i32>,
    pub frame: Vec<i64>,
    pub link: Vec<i16>,
    pub reason: Vec<u8>,
    /// The packet's ECN field (RFC 3168 bits: 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE).
    pub ecn: Vec<u8>,
}

impl PacketTable {
    pub fn len(&self) -> usize {
        self.t_us.len()
    }
    pub fn is_empty(&self) -> bool {
        self.t_us.is_empty()
    }

    fn record(&mut self, t: Instant, event: PacketEvent, p: &Packet, drop: Option<(LinkId, DropReason)>) {
        self.t_us.push(t.as_micros());
        self.event.push(event as u8);
        self.packet.push(p.id as i64);
        self.flow.push(p.flow as i32);
        self.kind.push(kind_code(p.kind));
        self.size.push(p.size.as_bytes() as i32);
        self.payload.push(p.payload.as_bytes() as i32);
        self.sent_us.push(p.sent_at.as_micros());
        self.seq.push(p.seq.map_or(-1, i32::from));
        self.frame.push(p.frame.map_or(-1, |f| f as i64));
        self.link.push(drop.map_or(-1, |(l, _)| l as i16));
        self.reason.push(match drop {
            None => 0,
            Some((_, DropReason::QueueFull)) => 1,
            Some((_, DropReason::RandomLoss)) => 2,
            Some((_, DropReason::Aqm)) => 3,
            Some((_, DropReason::Overflow)) => 4,
            // A Wi-Fi MAC's drops (rtcbench-net's radio::wifi).
            Some((_, DropReason::RetryLimit)) => 5,
            Some((_, DropReason::Lifetime)) => 6,
            // An LTE cell's (rtcbench-net's radio::lte).
            Some((_, DropReason::HarqFailure)) => 7,
        });
        self.ecn.push(p.ecn.bits());
    }

    /// A [`PacketEvent::Recovered`] row.
    fn recovered(&mut self, t: Instant, flow: FlowId, seq: u16) {
        self.t_us.push(t.as_micros());
        self.event.push(PacketEvent::Recovered as u8);
        self.packet.push(-1);
        self.flow.push(flow as i32);
        self.kind.push(kind_code(PacketKind::Media));
        self.size.push(0);
        self.payload.push(0);
        self.sent_us.push(t.as_micros());
        self.seq.push(i32::from(seq));
        self.frame.push(-1);
        self.link.push(-1);
        self.reason.push(0);
        self.ecn.push(0);
    }
}

/// `frames.parquet`.
///
/// Holds the rows not yet taken; `base` rows were taken before them. A row is final, and may be
/// taken, once its frame was rendered, or a later frame of the same flow was rendered: frames
/// render in order, so the receiver has then given up on the earlier ones
/// (`rtcbench_media::playout`). A frame's packets may all have arrived or been dropped without its
/// row being final: a retransmission may still complete it, or it may wait for the frame it
/// depends on.
#[derive(Debug, Default)]
pub struct FrameTable {
    pub flow: Vec<i32>,
    pub frame: Vec<i64>,
    pub capture_us: Vec<i64>,
    pub size: Vec<i32>,
    pub keyframe: Vec<bool>,
    pub width: Vec<i32>,
    pub height: Vec<i32>,
    pub packets: Vec<i32>,
    /// When the frame left the encoder for the sender's queue.
    pub encoded_us: Vec<i64>,
    /// When the first and the last of its original packets (not retransmissions) left the sender.
    pub first_sent_us: Vec<i64>,
    pub last_sent_us: Vec<i64>,
    pub first_us: Vec<i64>,
    /// When the last of its original packets to arrive arrived: the frame would have been
    /// complete then, had none of them been lost.
    pub last_arrival_us: Vec<i64>,
    pub complete_us: Vec<i64>,
    /// When it left the jitter buffer for the decoder.
    pub decode_us: Vec<i64>,
    pub render_us: Vec<i64>,
    pub freeze: Vec<bool>,
    /// Rows taken before the first row held here.
    base: usize,
    /// Per flow: where each of its frames' rows is.
    flows: Vec<FlowFrames>,
}

/// The rows of one flow's frames. Frames of a flow are numbered 0, 1, 2, ... (a frame never sent,
/// during a pause, has no row), so a deque indexed by frame number minus `first` finds the row.
#[derive(Debug, Default)]
struct FlowFrames {
    /// The frame number `rows[0]` stands for.
    first: u64,
    /// Row (counted from the start of the table) of each frame; [`NO_ROW`] for a frame never sent.
    rows: VecDeque<usize>,
    /// Every frame numbered below this one is final: a later frame was rendered.
    final_below: u64,
}

/// A frame number without a row.
const NO_ROW: usize = usize::MAX;

impl FlowFrames {
    /// The table row of frame `frame`, if it still has one here.
    fn row(&self, frame: u64) -> Option<usize> {
        let k = usize::try_from(frame.checked_sub(self.first)?).ok()?;
        self.rows.get(k).copied().filter(|&r| r != NO_ROW)
    }
}

impl FrameTable {
    /// Rows held (not yet taken).
    pub fn len(&self) -> usize {
        self.flow.len()
    }
    pub fn is_empty(&self) -> bool {
        self.flow.is_empty()
    }

    /// A frame of `flow` the encoder produced at `at`, sent as `packets` RTP packets.
    pub fn encoded(&mut self, flow: FlowId, at: Instant, encoded: &Frame, packets: u32) {
        let Frame { index: frame, capture, size, keyframe: key, width, height, .. } = *encoded;
        let f = flow as usize;
        if self.flows.len() <= f {
            self.flows.resize_with(f + 1, FlowFrames::default);
        }
        let frames = &mut self.flows[f];
        if frames.rows.is_empty() {
            frames.first = frame;
        }
        let k = (frame - frames.first) as usize;
        debug_assert!(frames.rows.len() <= k, "frames are recorded in order");
        frames.rows.resize(k, NO_ROW);
        frames.rows.push_back(self.base + self.flow.len());
        self.flow.push(flow as i32);
        self.frame.push(frame as i64);
        self.capture_us.push(capture.as_micros());
        self.size.push(size.as_bytes() as i32);
        self.keyframe.push(key);
        self.width.push(i32::from(width));
        self.height.push(i32::from(height));
        self.packets.push(packets as i32);
        self.encoded_us.push(at.as_micros());
        self.first_sent_us.push(-1);
        self.last_sent_us.push(-1);
        self.first_us.push(-1);
        self.last_arrival_us.push(-1);
        self.complete_us.push(-1);
        self.decode_us.push(-1);
        self.render_us.push(-1);
        self.freeze.push(false);
    }

    /// The held row of `frame` of `flow`, as an index into the columns.
    fn local_row(&self, flow: FlowId, frame: u64) -> Option<usize> {
        // Rows taken are gone from `flows`, so what is found is held.
        Some(self.flows.get(flow as usize)?.row(frame)? - self.base)
    }

    /// An original packet of `frame` of `flow` left its sender at `at`.
    fn original_sent(&mut self, flow: FlowId, frame: u64, at: Instant) {
        if let Some(row) = self.local_row(flow, frame) {
            if self.first_sent_us[row] < 0 {
                self.first_sent_us[row] = at.as_micros();
            }
            self.last_sent_us[row] = at.as_micros();
        }
    }

    /// An original packet of `frame` of `flow` reached its receiver at `at`. One that arrives
    /// after its frame was complete (overtaken by its retransmission) does not count.
    fn original_arrived(&mut self, flow: FlowId, frame: u64, at: Instant) {
        if let Some(row) = self.local_row(flow, frame).filter(|&r| self.complete_us[r] < 0) {
            self.last_arrival_us[row] = self.last_arrival_us[row].max(at.as_micros());
        }
    }

    /// Every packet of `frame` of `flow` had arrived at `at`, the first of them at `first`.
    pub fn completed(&mut self, flow: FlowId, frame: u64, first: Instant, at: Instant) {
        if let Some(row) = self.local_row(flow, frame) {
            self.first_us[row] = first.as_micros();
            self.complete_us[row] = at.as_micros();
        }
    }

    /// `frame` of `flow` left the jitter buffer at `decoded` and was rendered at `at`.
    pub fn rendered(&mut self, flow: FlowId, frame: u64, decoded: Instant, at: Instant, freeze: bool) {
        if let Some(row) = self.local_row(flow, frame) {
            self.decode_us[row] = decoded.as_micros();
            self.render_us[row] = at.as_micros();
            self.freeze[row] = freeze;
        }
        if let Some(frames) = self.flows.get_mut(flow as usize) {
            frames.final_below = frames.final_below.max(frame);
        }
    }

    fn is_final(&self, row: usize) -> bool {
        let flow = &self.flows[self.flow[row] as usize];
        self.render_us[row] >= 0 || (self.frame[row] as u64) < flow.final_below
    }

    /// Takes the first `n` rows held.
    fn take_rows(&mut self, n: usize) -> Self {
        fn front<T>(v: &mut Vec<T>, n: usize) -> Vec<T> {
            let rest = v.split_off(n);
            std::mem::replace(v, rest)
        }
        let taken = Self {
            flow: front(&mut self.flow, n),
            frame: front(&mut self.frame, n),
            capture_us: front(&mut self.capture_us, n),
            size: front(&mut self.size, n),
            keyframe: front(&mut self.keyframe, n),
            width: front(&mut self.width, n),
            height: front(&mut self.height, n),
            packets: front(&mut self.packets, n),
            encoded_us: front(&mut self.encoded_us, n),
            first_sent_us: front(&mut self.first_sent_us, n),
            last_sent_us: front(&mut self.last_sent_us, n),
            first_us: front(&mut self.first_us, n),
            last_arrival_us: front(&mut self.last_arrival_us, n),
            complete_us: front(&mut self.complete_us, n),
            decode_us: front(&mut self.decode_us, n),
            render_us: front(&mut self.render_us, n),
            freeze: front(&mut self.freeze, n),
            base: self.base,
            flows: Vec::new(),
        };
        self.base += n;
        for frames in &mut self.flows {
            while frames.rows.front().is_some_and(|&r| r == NO_ROW || r < self.base) {
                frames.rows.pop_front();
                frames.first += 1;
            }
        }
        taken
    }

    /// The held rows up to the first that can still change, in table order.
    pub fn take_final(&mut self) -> Self {
        let n = (0..self.len()).find(|&row| !self.is_final(row)).unwrap_or(self.len());
        self.take_rows(n)
    }

    /// Every held row, final or not (the end of a run).
    pub fn take_all(&mut self) -> Self {
        self.take_rows(self.len())
    }
}

/// How a controller metric is stored.
#[derive(Debug)]
pub enum ColumnData {
    /// Rates in bit/s and sizes in bytes (-1 = null).
    Int(Vec<i64>),
    /// Durations in ms and dimensionless values (NaN = null).
    Float(Vec<f64>),
    /// State names.
    Text(Vec<&'static str>),
}

/// One controller-specific column: its name carries the unit (`_bps`, `_ms`, `_bytes`).
#[derive(Debug)]
pub struct Column {
    pub name: String,
    pub data: ColumnData,
}

/// `controller.parquet`.
#[derive(Debug, Default)]
pub struct ControllerTable {
    pub t_us: Vec<i64>,
    pub call: Vec<i32>,
    pub target_bps: Vec<i64>,
    pub pacing_bps: Vec<i64>,
    pub columns: Vec<Column>,
    /// The first row has set the controller-specific columns.
    described: bool,
}

impl ControllerTable {
    pub fn len(&self) -> usize {
        self.t_us.len()
    }
    pub fn is_empty(&self) -> bool {
        self.t_us.is_empty()
    }

    /// Takes the rows held; the columns keep their names and kinds for the rows to come.
    pub fn take(&mut self) -> Self {
        let columns = self
            .columns
            .iter_mut()
            .map(|c| {
                let data = match &mut c.data {
                    ColumnData::Int(v) => ColumnData::Int(std::mem::take(v)),
                    ColumnData::Float(v) => ColumnData::Float(std::mem::take(v)),
                    ColumnData::Text(v) => ColumnData::Text(std::mem::take(v)),
                };
                Column { name: c.name.clone(), data }
            })
            .collect();
        Self {
            t_us: std::mem::take(&mut self.t_us),
            call: std::mem::take(&mut self.call),
            target_bps: std::mem::take(&mut self.target_bps),
            pacing_bps: std::mem::take(&mut self.pacing_bps),
            columns,
            described: self.described,
        }
    }

    /// One row: the sender's controller state `m` and, if the controller has a receiver-side
    /// part, its state `remote` (columns prefixed `rx_`).
    pub fn record(
        &mut self,
        t: Instant,
        call: u32,
        target: Bitrate,
        pacing: Option<Bitrate>,
        m: &ControllerMetrics,
        remote: Option<&ControllerMetrics>,
    ) {
        let values = || {
            let local = m.values.iter().map(|(n, v)| ("", *n, v));
            local.chain(remote.into_iter().flat_map(|r| r.values.iter().map(|(n, v)| ("rx_", *n, v))))
        };
        if !self.described {
            self.described = true;
            self.columns = values()
                .map(|(prefix, name, v)| {
                    let data = match v {
                        Metric::Rate(_) | Metric::Size(_) => ColumnData::Int(Vec::new()),
                        Metric::State(_) => ColumnData::Text(Vec::new()),
                        _ => ColumnData::Float(Vec::new()),
                    };
                    Column { name: format!("{prefix}{name}{}", v.unit_suffix()), data }
                })
                .collect();
        }
        self.t_us.push(t.as_micros());
        self.call.push(call as i32);
        self.target_bps.push(target.as_bps() as i64);
        self.pacing_bps.push(pacing.map_or(-1, |p| p.as_bps() as i64));
        for (col, (_, _, v)) in self.columns.iter_mut().zip(values()) {
            match (&mut col.data, v) {
                (ColumnData::Int(c), Metric::Rate(r)) => c.push(r.map_or(-1, |r| r.as_bps() as i64)),
                (ColumnData::Int(c), Metric::Size(s)) => c.push(s.map_or(-1, |s| s.as_bytes() as i64)),
                (ColumnData::Float(c), Metric::Time(d)) => c.push(d.map_or(f64::NAN, |d| d.as_millis_f64())),
                (ColumnData::Float(c), Metric::Real(x)) => c.push(x.unwrap_or(f64::NAN)),
                (ColumnData::Text(c), Metric::State(s)) => c.push(s),
                _ => unreachable!("a controller's metrics keep their names and kinds"),
            }
        }
    }
}

/// `links.parquet`: a row per link, and per node of a BSS, every sample.
#[derive(Debug, Default)]
pub struct LinkTable {
    pub t_us: Vec<i64>,
    pub link: Vec<i16>,
    pub capacity_bps: Vec<i64>,
    pub queue_bytes: Vec<i64>,
    pub queue_limit_bytes: Vec<i64>,
    /// Wi-Fi nodes only (NaN or −1 for links): [`MacSample`].
    pub airtime_share: Vec<f64>,
    pub mac_retries: Vec<i64>,
    pub mac_drops: Vec<i64>,
    pub queue_drops: Vec<i64>,
    pub ampdu_mpdus: Vec<f64>,
    pub phy_rate_bps: Vec<i64>,
    pub delivered_bps: Vec<i64>,
    /// Stations that run Chen et al. 2015's retry-limit adaptation only: [`Adaptation`].
    pub congestion_level: Vec<f64>,
    pub mac_capacity_bps: Vec<i64>,
    pub extended_attempts: Vec<i64>,
    /// LTE buffers only (NaN or −1 otherwise): [`RadioSample`]. An LTE buffer also fills
    /// `mac_retries` (HARQ retransmissions), `mac_drops` (transport blocks lost after their last
    /// HARQ transmission), `queue_drops` and `phy_rate_bps` (the whole band at the UE's MCS).
    pub rb_share: Vec<f64>,
    pub scheduled_bps: Vec<i64>,
    pub queue_delay_us: Vec<i64>,
    pub cqi: Vec<i64>,
    /// DualPI2 links only: (row, its queue's sample), in row order. Most rows are not a DualPI2
    /// link's, so the columns ([`schema::LINKS`] `l_queue_bytes` to `c_drops`) are made from these
    /// when the table is handed out, null elsewhere, rather than pushed on every row.
    pub dualpi2: Vec<(usize, DualPi2Sample)>,
}

pub use rtcbench_net::queue::DualPi2Sample;
pub use rtcbench_net::radio::sample::{Adaptation, MacSample, RadioSample};

impl LinkTable {
    /// Rows held.
    pub fn len(&self) -> usize {
        self.t_us.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_us.is_empty()
    }

    /// Rows that fit before a column must grow.
    pub fn capacity(&self) -> usize {
        self.t_us.capacity()
    }

    /// Room for `rows` more rows in every column at once.
    pub fn reserve_exact(&mut self, rows: usize) {
        let Self {
            t_us,
            link,
            capacity_bps,
            queue_bytes,
            queue_limit_bytes,
            airtime_share,
            mac_retries,
            mac_drops,
            queue_drops,
            ampdu_mpdus,
            phy_rate_bps,
            delivered_bps,
            congestion_level,
            mac_capacity_bps,
            extended_attempts,
            rb_share,
            scheduled_bps,
            queue_delay_us,
            cqi,
            dualpi2: _,
        } = self;
        link.reserve_exact(rows);
        for c in [
            t_us,
            capacity_bps,
            queue_bytes,
            queue_limit_bytes,
            mac_retries,
            mac_drops,
            queue_drops,
            phy_rate_bps,
            delivered_bps,
            mac_capacity_bps,
            extended_attempts,
            scheduled_bps,
            queue_delay_us,
            cqi,
        ] {
            c.reserve_exact(rows);
        }
        for c in [airtime_share, ampdu_mpdus, congestion_level, rb_share] {
            c.reserve_exact(rows);
        }
    }

    #[inline(always)]
    pub fn record(
        &mut self,
        t: Instant,
        link: LinkId,
        capacity: Option<Bitrate>,
        queue: DataSize,
        limit: Option<DataSize>,
        dualpi2: Option<DualPi2Sample>,
    ) {
        self.push(t, link, capacity, queue, limit);
        self.airtime_share.push(f64::NAN);
        self.mac_retries.push(-1);
        self.mac_drops.push(-1);
        self.queue_drops.push(-1);
        self.ampdu_mpdus.push(f64::NAN);
        self.phy_rate_bps.push(-1);
        self.delivered_bps.push(-1);
        self.push_adaptation(None);
        self.push_radio(None);
        if let Some(d) = dualpi2 {
            self.dualpi2.push((self.t_us.len() - 1, d));
        }
    }

    /// A Wi-Fi node's row: its queues (no capacity, a limit in packets rather than bytes) and
    /// its MAC.
    pub fn record_mac(&mut self, t: Instant, link: LinkId, queue: DataSize, mac: MacSample) {
        self.push(t, link, None, queue, None);
        self.airtime_share.push(mac.airtime_share.unwrap_or(f64::NAN));
        self.mac_retries.push(mac.retries as i64);
        self.mac_drops.push(mac.drops as i64);
        self.queue_drops.push(mac.queue_drops as i64);
        self.ampdu_mpdus.push(mac.ampdu_mpdus.unwrap_or(f64::NAN));
        self.phy_rate_bps.push(mac.phy_rate.map_or(-1, |r| r.as_bps() as i64));
        self.delivered_bps.push(mac.delivered.map_or(-1, |r| r.as_bps() as i64));
        self.push_adaptation(mac.adaptation);
        self.push_radio(None);
    }

    /// An LTE UE's buffer in one direction: bytes waiting (no capacity, no fixed limit) and what
    /// the scheduler gave it.
    pub fn record_radio(&mut self, t: Instant, link: LinkId, queue: DataSize, r: RadioSample) {
        self.push(t, link, None, queue, None);
        self.airtime_share.push(f64::NAN);
        self.mac_retries.push(r.retransmissions as i64);
        self.mac_drops.push(r.failures as i64);
        self.queue_drops.push(r.queue_drops as i64);
        self.ampdu_mpdus.push(f64::NAN);
        self.phy_rate_bps.push(r.full_band_rate.as_bps() as i64);
        self.delivered_bps.push(-1);
        self.push_adaptation(None);
        self.push_radio(Some(r));
    }

    #[inline(always)]
    fn push_radio(&mut self, r: Option<RadioSample>) {
        self.rb_share.push(r.and_then(|r| r.rb_share).unwrap_or(f64::NAN));
        self.scheduled_bps.push(r.and_then(|r| r.scheduled).map_or(-1, |b| b.as_bps() as i64));
        self.queue_delay_us.push(r.map_or(-1, |r| r.head_sojourn.map_or(0, |d| d.as_micros())));
        self.cqi.push(r.map_or(-1, |r| i64::from(r.cqi)));
    }

    #[inline(always)]
    fn push_adaptation(&mut self, a: Option<Adaptation>) {
        self.congestion_level.push(a.map_or(f64::NAN, |a| a.congestion_level));
        self.mac_capacity_bps.push(a.map_or(-1, |a| a.mac_capacity.as_bps() as i64));
        self.extended_attempts.push(a.map_or(-1, |a| a.extended_attempts as i64));
    }

    #[inline(always)]
    fn push(
        &mut self,
        t: Instant,
        link: LinkId,
        capacity: Option<Bitrate>,
        queue: DataSize,
        limit: Option<DataSize>,
    ) {
        self.t_us.push(t.as_micros());
        self.link.push(link as i16);
        self.capacity_bps.push(capacity.map_or(-1, |c| c.as_bps() as i64));
        self.queue_bytes.push(queue.as_bytes() as i64);
        self.queue_limit_bytes.push(limit.map_or(-1, |l| l.as_bytes() as i64));
    }
}

/// `feedback.parquet`.
#[derive(Debug, Default)]
pub struct FeedbackTable {
    pub t_us: Vec<i64>,
    pub call: Vec<i32>,
    pub kind: Vec<u8>,
    pub size: Vec<i32>,
    pub rtt_us: Vec<i64>,
    pub fraction_lost: Vec<f64>,
    pub packets_reported: Vec<i32>,
    pub ce_reported: Vec<i32>,
}

impl FeedbackTable {
    pub fn record(&mut self, t: Instant, call: u32, r: FeedbackRow) {
        self.t_us.push(t.as_micros());
        self.call.push(call as i32);
        self.kind.push(r.kind as u8);
        self.size.push(r.size.as_bytes() as i32);
        self.rtt_us.push(r.rtt.map_or(-1, |d| d.as_micros()));
        self.fraction_lost.push(r.fraction_lost.unwrap_or(f64::NAN));
        self.packets_reported.push(r.packets_reported.map_or(-1, |n| n as i32));
        self.ce_reported.push(r.ce_reported.map_or(-1, |n| n as i32));
    }
}

/// Every table of a run.
#[derive(Debug, Default)]
pub struct Trace {
    pub packets: PacketTable,
    pub frames: FrameTable,
    pub controller: ControllerTable,
    pub links: LinkTable,
    pub feedback: FeedbackTable,
}

impl Trace {
    /// A packet event. An original video packet's departure and arrival also date its frame's
    /// stages (`frames.parquet`: `first_sent_us`, `last_sent_us`, `last_arrival_us`).
    pub fn packet(&mut self, t: Instant, event: PacketEvent, p: &Packet, drop: Option<(LinkId, DropReason)>) {
        self.packets.record(t, event, p, drop);
        if let (PacketKind::Media, Some(frame)) = (p.kind, p.frame) {
            match event {
                PacketEvent::Sent => self.frames.original_sent(p.flow, frame, t),
                PacketEvent::Received => self.frames.original_arrived(p.flow, frame, t),
                _ => {}
            }
        }
    }

    /// A lost video packet of `flow` rebuilt from FEC.
    pub fn recovered(&mut self, t: Instant, flow: FlowId, seq: u16) {
        self.packets.recovered(t, flow, seq);
    }

    /// Rows held in all tables.
    pub fn rows(&self) -> usize {
        self.packets.len()
            + self.frames.len()
            + self.controller.len()
            + self.links.len()
            + self.feedback.t_us.len()
    }

    /// Takes every row that can no longer change: all rows of every table but the frames still
    /// waiting for packets (and the frames recorded after them).
    pub fn take_final(&mut self) -> Self {
        Self {
            packets: std::mem::take(&mut self.packets),
            frames: self.frames.take_final(),
            controller: self.controller.take(),
            links: std::mem::take(&mut self.links),
            feedback: std::mem::take(&mut self.feedback),
        }
    }

    /// Takes every row (the end of a run).
    pub fn take_all(&mut self) -> Self {
        Self {
            packets: std::mem::take(&mut self.packets),
            frames: self.frames.take_all(),
            controller: self.controller.take(),
            links: std::mem::take(&mut self.links),
            feedback: std::mem::take(&mut self.feedback),
        }
    }
}
