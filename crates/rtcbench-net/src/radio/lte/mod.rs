//! One LTE FDD cell, an eNB and N UEs, as a single sans-IO element with N + 1 ports: port 0 is
//! the eNB, ports 1..=N the UEs. `docs/lte.md` ("The cell model") maps each part to the 3GPP
//! section and the ns-3 code it follows, lists what is deliberately left out, and gives the
//! reference numbers the tests check.
//!
//! A packet pushed at a UE's port goes up to the eNB (uplink); one pushed at the eNB for a UE
//! goes down to it (downlink). Each (UE, direction) has one RLC/PDCP transmit buffer (one
//! default bearer): at the eNB for the downlink, at the UE for the uplink. Time runs in 1-ms
//! TTIs. In each TTI the downlink scheduler ([`DlScheduler`]: proportional fair or round robin)
//! shares the resource-block groups among the UEs with data, and the uplink scheduler shares the
//! PUSCH's PRBs equally among the UEs the eNB knows to have data ([`UlAccess`]: ideal knowledge,
//! or scheduling requests and buffer status reports with their delays), for the PUSCH
//! `ul_grant_to_pusch_ttis` later. A UE's CQI ([`ChannelQuality`]) gives its MCS and so, with
//! its PRBs, the transport block size ([`amc`], [`tbs`]). A transport block takes bytes from the
//! head of the buffer (a packet may span several) and reaches the far end at the end of its
//! TTI unless HARQ fails it ([`HarqConfig`]); it is then sent again 8 TTIs later, up to the last
//! allowed transmission, after which its packets are lost ([`DropReason::HarqFailure`]). The
//! receiver delivers packets in order, each when its last byte has arrived and every earlier
//! packet is through (RLC reassembly, TS 36.322 §5.1.2.2).
//!
//! Nothing happens in a TTI with nothing to do: the element sleeps until the next TTI in which
//! a buffer holds data, a retransmission is due, an uplink grant is used or a scheduling request
//! can be sent. Channel quality is a function of time, computed when needed, and every random
//! draw (HARQ outcomes, fading parameters) comes from the generator passed to [`Cell::new`], so a
//! run is a pure function of config, inputs and seed, however often the element is polled.
//!
//! # Driving a cell
//!
//! As a [`crate::link::Link`] (crate docs, "Driving an element"):
//!
//! 1. a packet arriving at a node: [`Cell::push(now, from, to, pkt)`](Cell::push), which may
//!    refuse it ([`DropReason::QueueFull`]);
//! 2. at (or after) [`Cell::poll_timeout()`]: [`Cell::on_timeout(now)`](Cell::on_timeout), which
//!    runs every TTI due by `now` at its own instant;
//! 3. after either, drain [`Cell::poll_drop()`] (HARQ failures, PDCP discards) and
//!    [`Cell::poll_output(now)`](Cell::poll_output) (packets at their destination port, with the
//!    instant they got there), then wait until the next `poll_timeout()`.
//!
//! `push` runs the TTIs due by `now` first, so a packet pushed at a TTI's first instant waits for
//! the next TTI whether or not the caller woke the cell before pushing.

pub mod amc;
mod channel;
mod config;
pub mod tbs;

use std::collections::VecDeque;

use rand::{RngExt, SeedableRng};
use rtcbench_units::{Bitrate, DataSize, Duration, Instant};
use serde::{Deserialize, Serialize};

use crate::packet::{DropReason, NetPacket};
use crate::rng::SimRng;
pub use amc::Bandwidth;
use amc::{bsr_reported, mcs_from_cqi, DL_MCS_TO_ITBS, UL_MCS_TO_ITBS};
use channel::Channel;
pub use config::{
    CellConfig, ChannelQuality, ConfigError, CqiReporting, CqiStep, DlScheduler, HarqConfig, RlcConfig,
    SinrStep, UeConfig, UlAccess,
};
use tbs::tbs_bits;

/// HARQ processes per UE and direction (FDD, TS 36.213 §7 and §8).
pub const HARQ_PROCESSES: usize = 8;
/// TTIs from a transmission to its retransmission: FDD's 8-ms HARQ round trip (a NACK 4 TTIs
/// after the transmission, TS 36.213 §7.3 and §9.1.2; the retransmission 4 after that, §8.0).
pub const HARQ_RTT_TTIS: u64 = 8;
/// A TTI (subframe) lasts 1 ms (TS 36.211 §4.1).
pub const TTI: Duration = Duration::from_millis(1);

/// A TTI index: TTI k runs from k ms to k + 1 ms.
type Tti = u64;

/// The averaged throughput T_j never falls below this many bytes/s, so that R_j / T_j stays
/// finite after a long idle period (ns-3's T_j only ever decays towards 0).
const PF_FLOOR: f64 = 1e-9;

/// An attachment point of the cell: port 0 the eNB, port i UE i (1-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Port(pub u16);

impl Port {
    pub const ENB: Self = Self(0);

    /// UE `i`, counted from 1.
    pub const fn ue(i: u16) -> Self {
        Self(i)
    }
}

/// Downlink (eNB → UE, PDSCH) or uplink (UE → eNB, PUSCH).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Downlink,
    Uplink,
}

/// What one direction of one UE did so far. Every counter is cumulative, so a tracer samples
/// it and takes differences.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirStats {
    /// Packets accepted into the RLC buffer.
    pub packets_queued: u64,
    /// Packets refused because the buffer was full.
    pub queue_full_drops: u64,
    /// Packets dropped by the PDCP discard timer.
    pub discard_drops: u64,
    /// Packets lost with a transport block that failed its last HARQ transmission.
    pub harq_failure_drops: u64,
    /// Packets delivered at the far end, and their bytes (as [`NetPacket::size`] counts them).
    pub delivered_packets: u64,
    pub delivered_bytes: DataSize,
    /// New transport blocks sent, and their size: the bytes the scheduler gave the UE (headers
    /// and, in the uplink, padding of a grant larger than the buffer included).
    pub new_tbs: u64,
    pub new_tb_bytes: DataSize,
    /// HARQ retransmissions sent.
    pub harq_retransmissions: u64,
    /// Transport blocks given up after their last transmission.
    pub harq_failures: u64,
    /// PRB·TTIs assigned (new data and retransmissions): the UE's resource share is this over
    /// [`Cell::dl_prb`] (or [`Cell::ul_prb`]) times the TTIs elapsed.
    pub rb_ttis: u64,
    /// TTIs in which the UE sent a transport block in this direction.
    pub ttis_scheduled: u64,
    /// Scheduling requests sent (uplink with [`UlAccess::SchedulingRequest`]).
    pub scheduling_requests: u64,
}

/// Both directions of one UE.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UeStats {
    pub dl: DirStats,
    pub ul: DirStats,
}

/// What the scheduler sees of one direction of one UE at an instant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkState {
    /// The CQI of the report in use (0: not schedulable).
    pub cqi: u8,
    /// The MCS that CQI maps to (capped at `ul_max_mcs` in the uplink).
    pub mcs: u8,
    /// The TBS index of that MCS (TS 36.213 Table 7.1.7.1-1 or 8.6.1-1).
    pub i_tbs: u8,
    /// The wideband SINR now, dB (`None` when the channel is given as CQI).
    pub sinr_db: Option<f64>,
    /// The whole band's rate at that MCS (every PRB the direction's scheduler assigns, every
    /// downlink layer): the UE's single-user rate.
    pub band_rate: Bitrate,
}

/// A packet in an RLC buffer: its bytes (with the PDCP header) are [start, end) of the
/// direction's byte stream.
#[derive(Debug)]
struct Entry<P> {
    /// Taken out when the packet is dropped before delivery; its bytes stay in the stream.
    pkt: Option<P>,
    start: u64,
    end: u64,
    arrival: Instant,
}

/// The transmitting and receiving RLC entities of one (UE, direction), over one byte stream:
/// bytes [0, tx) went into transport blocks, [0, rx) are resolved at the receiver (delivered or
/// known lost), [tx, next) wait.
#[derive(Debug)]
struct Rlc<P> {
    /// Packets not yet delivered or dropped, in stream order.
    entries: VecDeque<Entry<P>>,
    /// How many entries at the front have all their bytes in transport blocks.
    sent: usize,
    next: u64,
    tx: u64,
    rx: u64,
    /// Ranges resolved beyond `rx` (transport blocks through HARQ ahead of an earlier one),
    /// sorted by start, descending, so the next to merge is last.
    ahead: Vec<(u64, u64)>,
}

impl<P> Rlc<P> {
    fn new() -> Self {
        Self { entries: VecDeque::new(), sent: 0, next: 0, tx: 0, rx: 0, ahead: Vec::new() }
    }

    /// Bytes waiting for a transport block (PDCP headers included).
    fn unsent(&self) -> u64 {
        self.next - self.tx
    }

    fn push(&mut self, now: Instant, pkt: P, len: u64) {
        let start = self.next;
        self.next += len;
        self.entries.push_back(Entry { pkt: Some(pkt), start, end: self.next, arrival: now });
    }

    /// The oldest packet with bytes still waiting.
    fn head(&self) -> Option<&Entry<P>> {
        self.entries.get(self.sent)
    }

    /// Fills a new transport block with up to `cap` bytes from the head of the buffer and
    /// returns its stream range. With a PDCP discard `timer`, a packet none of which was sent
    /// yet is dropped instead (handed to `discarded`) when the block reaches it more than
    /// `timer` after its arrival; its bytes join the block's range without taking room, so they
    /// resolve with the block.
    fn take(
        &mut self,
        cap: u64,
        now: Instant,
        timer: Option<Duration>,
        mut discarded: impl FnMut(P),
    ) -> (u64, u64) {
        let start = self.tx;
        let mut left = cap;
        loop {
            if let Some(timer) = timer {
                while let Some(e) = self.entries.get_mut(self.sent).filter(|e| e.start == self.tx) {
                    if now - e.arrival <= timer {
                        break;
                    }
                    if let Some(p) = e.pkt.take() {
                        discarded(p);
                    }
                    self.tx = e.end;
                    self.sent += 1;
                }
            }
            let Some(e) = self.entries.get(self.sent).filter(|_| left > 0) else { break };
            let n = left.min(e.end - self.tx);
            self.tx += n;
            left -= n;
            if self.tx == e.end {
                self.sent += 1;
            }
        }
        (start, self.tx)
    }

    /// Takes out the packets with bytes in [start, end): a transport block carrying them was lost.
    fn lose(&mut self, start: u64, end: u64, mut lost: impl FnMut(P)) {
        let first = self.entries.partition_point(|e| e.end <= start);
        for e in self.entries.iter_mut().skip(first).take_while(|e| e.start < end) {
            if let Some(p) = e.pkt.take() {
                lost(p);
            }
        }
    }

    /// [start, end) is resolved at the receiver; hands over, in order, every packet now whole
    /// with all before it resolved.
    fn resolve(&mut self, start: u64, end: u64, mut deliver: impl FnMut(P)) {
        if end > start {
            if start == self.rx {
                self.rx = end;
                while self.ahead.last().is_some_and(|&(s, _)| s == self.rx) {
                    self.rx = self.ahead.pop().expect("a range").1;
                }
            } else {
                let at = self.ahead.partition_point(|&(s, _)| s > start);
                self.ahead.insert(at, (start, end));
            }
        }
        while self.entries.front().is_some_and(|e| e.end <= self.rx) {
            let e = self.entries.pop_front().expect("an entry");
            self.sent -= 1;
            if let Some(p) = e.pkt {
                deliver(p);
            }
        }
    }
}

/// A transport block: a stream range, its size, and its HARQ state.
#[derive(Clone, Copy, Debug)]
struct Tb {
    start: u64,
    end: u64,
    /// TBS, all layers.
    bits: u32,
    /// RBGs (downlink) or PRBs (uplink) it occupies, again in a retransmission.
    units: u16,
    /// Transmissions so far.
    tx: u8,
    /// When a retransmission is due (TTI of the PDSCH or PUSCH).
    due: Tti,
}

/// One direction of one UE: buffer, HARQ entity, channel, counters.
#[derive(Debug)]
struct Link<P> {
    rlc: Rlc<P>,
    /// Per HARQ process, the TTI from which it is free for new data: [`Tti::MAX`] while it holds
    /// a block to retransmit (in `retx`) or a grant for new data waits for its PUSCH.
    free_from: [Tti; HARQ_PROCESSES],
    retx: [Option<Tb>; HARQ_PROCESSES],
    /// Processes holding a retransmission.
    retx_pending: u8,
    channel: Channel,
    stats: DirStats,
}

impl<P> Link<P> {
    fn new(channel: Channel) -> Self {
        Self {
            rlc: Rlc::new(),
            free_from: [0; HARQ_PROCESSES],
            retx: [None; HARQ_PROCESSES],
            retx_pending: 0,
            channel,
            stats: DirStats::default(),
        }
    }

    /// A process free for new data at TTI `at`.
    fn free_process(&self, at: Tti) -> Option<usize> {
        self.free_from.iter().position(|&f| f <= at)
    }

    /// The process whose retransmission is due first, if one is due by `at`.
    fn due_retx(&self, at: Tti) -> Option<usize> {
        if self.retx_pending == 0 {
            return None;
        }
        (0..HARQ_PROCESSES)
            .filter_map(|i| self.retx[i].map(|tb| (tb.due, i)))
            .filter(|&(due, _)| due <= at)
            .min()
            .map(|(_, i)| i)
    }

    /// The earliest retransmission due date.
    fn next_retx(&self) -> Option<Tti> {
        if self.retx_pending == 0 {
            return None;
        }
        self.retx.iter().filter_map(|r| r.map(|tb| tb.due)).min()
    }
}

/// An uplink grant: the PUSCH of TTI `pusch` on `prb` PRBs, for new data or a retransmission.
#[derive(Clone, Copy, Debug)]
struct UlGrant {
    pusch: Tti,
    proc: usize,
    prb: u16,
    bits: u32,
    retx: Option<Tb>,
}

struct Ue<P> {
    dl: Link<P>,
    ul: Link<P>,
    /// T_j of the proportional-fair scheduler, bytes/s.
    pf_avg: f64,
    /// Grants for PUSCHs to come, in TTI order.
    grants: VecDeque<UlGrant>,
    /// Payload bytes of the new-data grants not yet used.
    inflight: u64,
    /// What the eNB believes waits at the UE beyond `inflight`, from the last BSR
    /// ([`UlAccess::SchedulingRequest`]).
    known: u64,
    /// A regular BSR is pending: data reached an empty buffer and no PUSCH has carried a BSR
    /// since (TS 36.321 §5.4.5). Without a grant for new data to carry it, it triggers an SR.
    bsr_pending: bool,
    /// The TTI at which the eNB answers an SR it received with a grant.
    sr_grant_at: Option<Tti>,
    sr_offset: u64,
    /// Bytes of new downlink transport blocks in the current TTI (for T_j).
    pf_bytes: u64,
}

impl<P> Ue<P> {
    /// Whether the UE sends an SR at its next opportunity: a regular BSR is pending, no grant
    /// for new data (which would carry it) is coming, and the eNB has not yet answered an
    /// earlier SR (TS 36.321 §5.4.4).
    fn wants_sr(&self) -> bool {
        self.bsr_pending && self.sr_grant_at.is_none() && !self.grants.iter().any(|g| g.retx.is_none())
    }

    fn link(&self, dir: Direction) -> &Link<P> {
        match dir {
            Direction::Downlink => &self.dl,
            Direction::Uplink => &self.ul,
        }
    }

    fn link_mut(&mut self, dir: Direction) -> &mut Link<P> {
        match dir {
            Direction::Downlink => &mut self.dl,
            Direction::Uplink => &mut self.ul,
        }
    }
}

/// A UE competing for resources in one TTI.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    ue: usize,
    i_tbs: u8,
    /// Bytes the eNB knows to be waiting (buffer, or BSR less grants in flight).
    bytes: u64,
    /// Proportional fair: R_j / T_j.
    metric: f64,
    /// An uplink grant answering a scheduling request (of the configured size).
    sr: bool,
    /// RBGs (downlink) or PRBs (uplink) given.
    give: u16,
}

/// One LTE FDD cell carrying packets of type `P`.
pub struct Cell<P> {
    cfg: CellConfig,
    ues: Vec<Ue<P>>,
    rbgs: u16,
    rbg_size: u16,
    ul_prb: u16,
    /// (MCS, I_TBS) per CQI in each direction (the uplink's with its MCS cap).
    dl_amc: [(u8, u8); 16],
    ul_amc: [(u8, u8); 16],
    /// 1 − 1/α of the proportional-fair average.
    pf_decay: f64,
    /// The TTI every T_j is up to date at (its start).
    pf_tti: Tti,
    /// The UE the round-robin downlink scheduler and the uplink scheduler serve first next.
    dl_next: usize,
    ul_next: usize,
    /// The first TTI neither run nor skipped as idle.
    clock: Tti,
    /// The next TTI with something to do.
    next_tti: Option<Tti>,
    harq_rng: SimRng,
    output: VecDeque<(Instant, Port, P)>,
    /// Dropped packets, with the UE (index) and direction of the buffer that held them.
    drops: VecDeque<(usize, Direction, P, DropReason)>,
    /// Reused per TTI.
    candidates: Vec<Candidate>,
    blocked: Vec<bool>,
}

impl<P: NetPacket> Cell<P> {
    /// A cell with every buffer empty. HARQ outcomes and fading processes draw from two
    /// streams seeded from `rng`, so adding fading changes no HARQ draw.
    pub fn new(cfg: CellConfig, mut rng: SimRng) -> Result<Self, ConfigError> {
        cfg.validate()?;
        let harq_rng = SimRng::seed_from_u64(rng.random());
        let mut fading_rng = SimRng::seed_from_u64(rng.random());
        let report = TTI * i64::from(cfg.cqi.period_ttis);
        let sr_period = match cfg.ul_access {
            UlAccess::SchedulingRequest { period_ttis, .. } => u64::from(period_ttis),
            UlAccess::Ideal => 1,
        };
        let ues = cfg
            .ues
            .iter()
            .enumerate()
            .map(|(i, u)| Ue {
                dl: Link::new(Channel::new(&u.dl, report, &mut fading_rng)),
                ul: Link::new(Channel::new(&u.ul, report, &mut fading_rng)),
                pf_avg: 1.0,
                grants: VecDeque::with_capacity(cfg.ul_grant_to_pusch_ttis as usize + 1),
                inflight: 0,
                known: 0,
                bsr_pending: false,
                sr_grant_at: None,
                sr_offset: u.sr_offset_ttis.map_or(i as u64 % sr_period, u64::from),
                pf_bytes: 0,
            })
            .collect();
        let pf_decay = match cfg.dl_scheduler {
            DlScheduler::ProportionalFair { window_ttis } => 1.0 - 1.0 / window_ttis,
            DlScheduler::RoundRobin => 1.0,
        };
        let n = cfg.ues.len();
        let dl_amc = std::array::from_fn(|cqi| {
            let mcs = mcs_from_cqi(cqi as u8);
            (mcs, DL_MCS_TO_ITBS[usize::from(mcs)])
        });
        let ul_amc = std::array::from_fn(|cqi| {
            let mcs = cfg.ul_max_mcs.map_or(mcs_from_cqi(cqi as u8), |m| mcs_from_cqi(cqi as u8).min(m));
            (mcs, UL_MCS_TO_ITBS[usize::from(mcs)])
        });
        Ok(Self {
            dl_amc,
            ul_amc,
            rbgs: cfg.bandwidth.dl_rbgs(),
            rbg_size: cfg.bandwidth.rbg_size(),
            ul_prb: cfg.ul_prb(),
            pf_decay,
            pf_tti: 0,
            dl_next: 0,
            ul_next: 0,
            clock: 0,
            next_tti: None,
            harq_rng,
            output: VecDeque::new(),
            drops: VecDeque::new(),
            candidates: Vec::with_capacity(n),
            blocked: vec![false; n],
            ues,
            cfg,
        })
    }

    pub fn config(&self) -> &CellConfig {
        &self.cfg
    }

    /// Number of UEs (ports 1..=N).
    pub fn ues(&self) -> usize {
        self.ues.len()
    }

    /// PRBs the downlink scheduler assigns per TTI: whole RBGs only ([`Bandwidth::dl_rbgs`]).
    pub fn dl_prb(&self) -> u16 {
        self.rbgs * self.rbg_size
    }

    /// PRBs the uplink scheduler assigns per TTI.
    pub fn ul_prb(&self) -> u16 {
        self.ul_prb
    }

    /// What UE `port` did so far, both directions.
    pub fn stats(&self, port: Port) -> UeStats {
        let u = &self.ues[self.ue_index(port)];
        UeStats { dl: u.dl.stats, ul: u.ul.stats }
    }

    /// Bytes waiting for a transport block in UE `port`'s buffer of direction `dir` (at the eNB
    /// for the downlink, at the UE for the uplink), PDCP headers included: what the buffer limit
    /// and a BSR count.
    pub fn queue_bytes(&self, port: Port, dir: Direction) -> DataSize {
        DataSize::bytes(self.ues[self.ue_index(port)].link(dir).rlc.unsent())
    }

    /// How long the oldest packet with bytes still waiting in that buffer has been there.
    pub fn head_sojourn(&self, now: Instant, port: Port, dir: Direction) -> Option<Duration> {
        self.ues[self.ue_index(port)].link(dir).rlc.head().map(|e| now - e.arrival)
    }

    /// The channel quality the scheduler would use for UE `port` in direction `dir` in the TTI
    /// containing `now`, and the SINR at `now`.
    pub fn link_state(&self, now: Instant, port: Port, dir: Direction) -> LinkState {
        let (cqi, mcs, i_tbs) = self.amc_state(now, port, dir);
        let sinr_db = self.ues[self.ue_index(port)].link(dir).channel.sinr_db(now);
        LinkState { cqi, mcs, i_tbs, sinr_db, band_rate: self.band_rate(dir, cqi) }
    }

    /// The rate of the whole band for UE `port` in direction `dir` at the MCS the scheduler would
    /// use in the TTI containing `now` (every PRB the direction's scheduler assigns, every
    /// downlink layer): its single-user rate, with the CQI of that report. Cheaper than
    /// [`Cell::link_state`], which also evaluates the SINR: a tracer calls it every sample. It
    /// remembers the report as the scheduler does (which changes no result: a report's CQI is a
    /// function of the report alone), so that a fading channel is turned on from it.
    pub fn full_band_rate(&mut self, now: Instant, port: Port, dir: Direction) -> (u8, Bitrate) {
        let report = self.report_tti(tti_of(now));
        let ue = self.ue_index(port);
        let cqi = self.ues[ue].link_mut(dir).channel.cqi_of_report(report);
        (cqi, self.band_rate(dir, cqi))
    }

    /// The whole band's rate in direction `dir` at the MCS of `cqi` (0 when out of range): the
    /// single-user rate of a UE reporting `cqi`.
    pub fn band_rate(&self, dir: Direction, cqi: u8) -> Bitrate {
        if cqi == 0 {
            return Bitrate::ZERO;
        }
        let (_, i_tbs) = self.mcs(dir, cqi);
        let (prb, layers) = match dir {
            Direction::Downlink => (self.dl_prb(), u64::from(self.cfg.dl_layers)),
            Direction::Uplink => (self.ul_prb, 1),
        };
        Bitrate::bps(u64::from(tbs::tbs_bits(i_tbs, prb)) * layers * 1000)
    }

    /// (CQI, MCS, I_TBS) of the report in use in the TTI containing `now`.
    fn amc_state(&self, now: Instant, port: Port, dir: Direction) -> (u8, u8, u8) {
        let link = self.ues[self.ue_index(port)].link(dir);
        let report = self.report_tti(tti_of(now));
        let cqi = link.channel.cqi_at(Instant::from_millis(report as i64));
        let (mcs, i_tbs) = self.mcs(dir, cqi);
        (cqi, mcs, i_tbs)
    }

    /// The TTIs the cell is done with at `now`: every TTI before this index has run or had
    /// nothing to do. A tracer divides the differences of [`DirStats`] counters by differences
    /// of this, so each TTI counts in exactly one sample whatever the order of events at a TTI
    /// boundary.
    pub fn ttis_done(&self, now: Instant) -> u64 {
        self.clock.max(tti_of(now))
    }

    /// T_j, UE `port`'s downlink throughput averaged by the proportional-fair scheduler (as of
    /// the last TTI it ran).
    pub fn averaged_throughput(&self, port: Port) -> Bitrate {
        Bitrate::from_bps_f64(self.ues[self.ue_index(port)].pf_avg * 8.0)
    }

    /// Offers a packet arriving at node `from` for node `to`: eNB → UE is downlink, UE → eNB
    /// uplink. Runs the TTIs due by `now` first; the packet can go from the next TTI on.
    /// Returns it if its buffer has no room ([`RlcConfig::buffer`]).
    ///
    /// # Panics
    /// If a port is not in the cell, or neither is the eNB: UE to UE goes through the core
    /// network (push it at the UE for the eNB, then at the eNB for the other UE).
    pub fn push(&mut self, now: Instant, from: Port, to: Port, pkt: P) -> Result<(), (P, DropReason)> {
        let n = self.ues.len();
        let (ue, dir) = match (from, to) {
            (Port::ENB, Port(u)) if u != 0 && usize::from(u) <= n => {
                (usize::from(u) - 1, Direction::Downlink)
            }
            (Port(u), Port::ENB) if u != 0 && usize::from(u) <= n => (usize::from(u) - 1, Direction::Uplink),
            _ => panic!(
                "no path from port {} to port {} in LTE cell {} (eNB port 0, UEs 1..={n}): a packet \
                 goes eNB → UE or UE → eNB",
                from.0, to.0, self.cfg.name
            ),
        };
        self.advance(now);
        let len = (pkt.size() + self.cfg.rlc.pdcp_header).as_bytes().max(1);
        let sr = matches!(self.cfg.ul_access, UlAccess::SchedulingRequest { .. });
        let limit = match dir {
            Direction::Downlink => self.cfg.rlc.buffer,
            Direction::Uplink => self.cfg.rlc.ue_buffer.unwrap_or(self.cfg.rlc.buffer),
        }
        .as_bytes();
        let u = &mut self.ues[ue];
        let link = u.link_mut(dir);
        if link.rlc.unsent() + len > limit {
            link.stats.queue_full_drops += 1;
            return Err((pkt, DropReason::QueueFull));
        }
        // Data reaching an empty buffer triggers a regular BSR (TS 36.321 §5.4.5).
        let empty = link.rlc.unsent() == 0;
        link.rlc.push(now, pkt, len);
        link.stats.packets_queued += 1;
        if dir == Direction::Uplink && sr && empty {
            u.bsr_pending = true;
        }
        // A packet only adds reasons to wake: the earliest of the old deadline and this UE's.
        let (clock, ue_next) = (self.clock, self.ue_wakeup(ue, self.clock));
        self.next_tti = match (self.next_tti, ue_next) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
        .map(|t| t.max(clock));
        Ok(())
    }

    /// The next instant something happens: a TTI with work, or a delivery falling due.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let tti = self.next_tti.map(|k| Instant::from_millis(k as i64));
        let out = self.output.front().map(|&(t, _, _)| t);
        match (tti, out) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Runs every TTI due by `now`, each at its own instant.
    pub fn on_timeout(&mut self, now: Instant) {
        self.advance(now);
    }

    /// The next packet that reached its destination port by `now`, with the instant it did.
    pub fn poll_output(&mut self, now: Instant) -> Option<(Instant, Port, P)> {
        super::pop_due(&mut self.output, now)
    }

    /// The next packet dropped inside the cell, with the port of the node that held it.
    pub fn poll_drop(&mut self) -> Option<(Port, P, DropReason)> {
        self.drops.pop_front().map(|(ue, dir, pkt, reason)| (holder(ue, dir), pkt, reason))
    }

    /// The next packet dropped inside the cell, with the buffer that held it (as
    /// [`Cell::buffer`] numbers them).
    pub(crate) fn poll_drop_buffer(&mut self) -> Option<(u16, P, DropReason)> {
        self.drops.pop_front().map(|(ue, dir, pkt, reason)| (buffer(ue, dir), pkt, reason))
    }

    /// How many buffers the cell has: a downlink one (at the eNB) and an uplink one (at the UE)
    /// per UE.
    pub fn buffers(&self) -> usize {
        2 * self.ues.len()
    }

    /// The number of the buffer a packet from port `from` to port `to` waits in: UE i's (from
    /// 1) downlink buffer is 2 (i − 1), its uplink buffer the next.
    pub fn buffer(&self, from: Port, to: Port) -> u16 {
        let (ue, dir) = if from == Port::ENB { (to, Direction::Downlink) } else { (from, Direction::Uplink) };
        buffer(self.ue_index(ue), dir)
    }

    // ---- time ----

    fn ue_index(&self, port: Port) -> usize {
        let i = usize::from(port.0);
        assert!(
            i >= 1 && i <= self.ues.len(),
            "port {} is not a UE of LTE cell {} (UEs 1..={})",
            port.0,
            self.cfg.name,
            self.ues.len()
        );
        i - 1
    }

    fn advance(&mut self, now: Instant) {
        let now_tti = tti_of(now);
        while let Some(k) = self.next_tti.filter(|&k| k <= now_tti) {
            self.run_tti(k);
            self.clock = k + 1;
            self.next_tti = self.next_wakeup(self.clock);
        }
        // TTIs up to `now` that were not run had nothing to do.
        self.clock = self.clock.max(now_tti + 1);
    }

    /// The first TTI at or after `after` in which something can happen.
    fn next_wakeup(&self, after: Tti) -> Option<Tti> {
        let mut best: Option<Tti> = None;
        for ue in 0..self.ues.len() {
            match self.ue_wakeup(ue, after) {
                Some(t) if t == after => return Some(after),
                Some(t) => best = Some(best.map_or(t, |b| b.min(t))),
                None => {}
            }
        }
        best
    }

    /// The first TTI at or after `after` in which something can happen to UE `ue`.
    fn ue_wakeup(&self, ue: usize, after: Tti) -> Option<Tti> {
        let u = &self.ues[ue];
        let mut best: Option<Tti> = None;
        let mut at = |t: Tti| best = Some(best.map_or(t.max(after), |b| b.min(t.max(after))));
        if u.dl.rlc.unsent() > 0 {
            return Some(after);
        }
        if let Some(due) = u.dl.next_retx() {
            at(due);
        }
        if let Some(g) = u.grants.front() {
            at(g.pusch);
        }
        if let Some(due) = u.ul.next_retx() {
            at(due.saturating_sub(u64::from(self.cfg.ul_grant_to_pusch_ttis)));
        }
        match self.cfg.ul_access {
            UlAccess::Ideal => {
                if u.ul.rlc.unsent() > u.inflight {
                    return Some(after);
                }
            }
            UlAccess::SchedulingRequest { period_ttis, .. } => {
                if u.known > 0 {
                    return Some(after);
                }
                if u.wants_sr() {
                    let p = u64::from(period_ttis);
                    at(after + (p + u.sr_offset - after % p) % p);
                }
                if let Some(g) = u.sr_grant_at {
                    at(g);
                }
            }
        }
        best
    }

    /// The CQI report the scheduler uses in TTI `k`.
    fn report_tti(&self, k: Tti) -> Tti {
        let (period, delay) = (u64::from(self.cfg.cqi.period_ttis), u64::from(self.cfg.cqi.delay_ttis));
        let r = k.saturating_sub(delay);
        r - r % period
    }

    /// MCS and I_TBS for a CQI.
    #[inline]
    fn mcs(&self, dir: Direction, cqi: u8) -> (u8, u8) {
        let table = match dir {
            Direction::Downlink => &self.dl_amc,
            Direction::Uplink => &self.ul_amc,
        };
        table[usize::from(cqi.min(15))]
    }

    fn run_tti(&mut self, k: Tti) {
        self.downlink(k);
        self.uplink(k);
    }

    // ---- downlink ----

    /// Bits of a downlink transport block on `rbgs` RBGs (all layers).
    fn dl_bits(&self, i_tbs: u8, rbgs: u16) -> u32 {
        tbs_bits(i_tbs, rbgs * self.rbg_size) * u32::from(self.cfg.dl_layers)
    }

    /// The fewest RBGs, at most `max`, whose transport block carries `bytes` of buffer.
    fn dl_need(&self, i_tbs: u8, bytes: u64, max: u16) -> u16 {
        let want = bytes + self.cfg.rlc.rlc_mac_header.as_bytes();
        least(max, |m| u64::from(self.dl_bits(i_tbs, m) / 8) >= want)
    }

    /// The PDSCH of TTI `k`: retransmissions first, then new data as the scheduler shares the
    /// RBGs left.
    fn downlink(&mut self, k: Tti) {
        let pf = matches!(self.cfg.dl_scheduler, DlScheduler::ProportionalFair { .. });
        if pf && k > self.pf_tti {
            // The TTIs skipped as idle served nobody: T_j decayed in each.
            let gap = (k - self.pf_tti).min(i32::MAX as u64) as i32;
            let d = self.pf_decay.powi(gap);
            for u in &mut self.ues {
                u.pf_avg = (u.pf_avg * d).max(PF_FLOOR);
            }
        }
        let mut free = self.rbgs;
        // Non-adaptive retransmissions on as many RBGs as before. A UE with one due gets no new
        // data in this TTI (ns-3 PfFfMacScheduler), even while its retransmission waits for room.
        for ue in 0..self.ues.len() {
            let due = self.ues[ue].dl.due_retx(k);
            self.blocked[ue] = due.is_some();
            let Some(p) = due else { continue };
            let tb = self.ues[ue].dl.retx[p].expect("a retransmission");
            if tb.units <= free {
                free -= tb.units;
                let link = &mut self.ues[ue].dl;
                link.retx[p] = None;
                link.retx_pending -= 1;
                self.transmit(k, ue, Direction::Downlink, p, tb);
            }
        }
        let mut cands = std::mem::take(&mut self.candidates);
        cands.clear();
        let report = self.report_tti(k);
        for ue in 0..self.ues.len() {
            let link = &self.ues[ue].dl;
            if self.blocked[ue] || link.rlc.unsent() == 0 || link.free_process(k).is_none() {
                continue;
            }
            let cqi = self.ues[ue].dl.channel.cqi_of_report(report);
            if cqi == 0 {
                continue;
            }
            let (_, i_tbs) = self.mcs(Direction::Downlink, cqi);
            let u = &self.ues[ue];
            // R_j, bytes/s: the UE's rate over the whole band. ns-3 sums per-RBG rates, the TBS
            // of one RBG; as the TBS table is not linear in N_PRB at low I_TBS, that would give
            // a UE at MCS 6 a 12 % smaller time share than one at MCS 28 (docs/lte.md).
            let rate = f64::from(self.dl_bits(i_tbs, self.rbgs) / 8) * 1000.0;
            let bytes = u.dl.rlc.unsent();
            cands.push(Candidate { ue, i_tbs, bytes, metric: rate / u.pf_avg, sr: false, give: 0 });
        }
        if !cands.is_empty() && free > 0 {
            match self.cfg.dl_scheduler {
                // Each RBG to the UE with the largest R_j / T_j: with one wideband CQI per UE that
                // is the same UE for every RBG until its buffer fits, then the next.
                DlScheduler::ProportionalFair { .. } => {
                    cands.sort_unstable_by(|a, b| b.metric.total_cmp(&a.metric).then(a.ue.cmp(&b.ue)));
                    for c in &mut cands {
                        if free == 0 {
                            break;
                        }
                        c.give = self.dl_need(c.i_tbs, c.bytes, free);
                        free -= c.give;
                    }
                }
                DlScheduler::RoundRobin => self.round_robin(&mut cands, free),
            }
            for c in &cands {
                if c.give > 0 {
                    self.send_new_dl(k, c.ue, c.i_tbs, c.give);
                }
            }
        }
        self.candidates = cands;
        if pf {
            // T_j ← (1 − 1/α)·T_j + (1/α)·(bytes sent in TTI k) / 1 ms, every UE (ns-3).
            let (d, w) = (self.pf_decay, 1.0 - self.pf_decay);
            for u in &mut self.ues {
                u.pf_avg = (u.pf_avg * d + w * std::mem::take(&mut u.pf_bytes) as f64 * 1000.0).max(PF_FLOOR);
            }
            self.pf_tti = k + 1;
        }
    }

    /// Round robin (ns-3 RrFfMacScheduler): the RBGs split equally among the UEs with data, from
    /// the one after the last served; unlike ns-3, RBGs a UE does not need (and the remainder
    /// of the division) go to the next ones rather than unused.
    fn round_robin(&mut self, cands: &mut [Candidate], free: u16) {
        let n = self.ues.len();
        let start = self.dl_next;
        cands.sort_unstable_by_key(|c| (c.ue + n - start) % n);
        let m = cands.len() as u16;
        let (share, mut extra) = (free / m, free % m);
        let mut left = free;
        for c in cands.iter_mut() {
            let mut quota = share;
            if extra > 0 {
                quota += 1;
                extra -= 1;
            }
            c.give = self.dl_need(c.i_tbs, c.bytes, quota.min(left).max(1)).min(left);
            left -= c.give;
        }
        for c in cands.iter_mut() {
            if left == 0 {
                break;
            }
            let more = self.dl_need(c.i_tbs, c.bytes, c.give + left) - c.give;
            c.give += more;
            left -= more;
        }
        let last = cands.iter().rev().find(|c| c.give > 0).map(|c| c.ue);
        self.dl_next = if cands.iter().all(|c| c.give > 0) {
            (cands[0].ue + 1) % n
        } else {
            last.map_or(self.dl_next, |l| (l + 1) % n)
        };
    }

    /// A new downlink transport block for `ue` on `rbgs` RBGs in TTI `k`.
    fn send_new_dl(&mut self, k: Tti, ue: usize, i_tbs: u8, rbgs: u16) {
        let bits = self.dl_bits(i_tbs, rbgs);
        let cap = u64::from(bits / 8).saturating_sub(self.cfg.rlc.rlc_mac_header.as_bytes());
        let (start, end) = self.fill(k, ue, Direction::Downlink, cap);
        let u = &mut self.ues[ue];
        let link = &mut u.dl;
        let p = link.free_process(k).expect("a free HARQ process");
        link.stats.new_tbs += 1;
        link.stats.new_tb_bytes += DataSize::bytes(u64::from(bits / 8));
        u.pf_bytes += u64::from(bits / 8);
        self.transmit(k, ue, Direction::Downlink, p, Tb { start, end, bits, units: rbgs, tx: 0, due: 0 });
    }

    // ---- uplink ----

    /// The fewest PRBs, at most `max`, whose transport block carries `bytes`.
    fn ul_need(&self, i_tbs: u8, bytes: u64, max: u16) -> u16 {
        let want = bytes + self.cfg.rlc.rlc_mac_header.as_bytes();
        least(max, |n| u64::from(tbs_bits(i_tbs, n) / 8) >= want)
    }

    /// TTI `k` of the uplink: scheduling requests sent, grants for the PUSCH of k + K, and the
    /// PUSCH of k.
    fn uplink(&mut self, k: Tti) {
        if let UlAccess::SchedulingRequest { period_ttis, sr_to_grant_ttis, .. } = self.cfg.ul_access {
            let phase = k % u64::from(period_ttis);
            for u in &mut self.ues {
                if u.sr_offset == phase && u.wants_sr() {
                    u.sr_grant_at = Some(k + u64::from(sr_to_grant_ttis));
                    u.ul.stats.scheduling_requests += 1;
                }
            }
        }
        self.schedule_ul(k, k + u64::from(self.cfg.ul_grant_to_pusch_ttis));
        for ue in 0..self.ues.len() {
            while let Some(g) = self.ues[ue].grants.front().copied().filter(|g| g.pusch <= k) {
                self.ues[ue].grants.pop_front();
                self.send_ul(k, ue, g);
            }
        }
    }

    /// The grants decided in TTI `k` for the PUSCH of TTI `pusch`: retransmissions due by then
    /// first, then the PRBs left split equally among the UEs the eNB knows to have data (ns-3's
    /// uplink scheduler): ⌊PRB / flows⌋ each, at least `ul_min_prb`, no more than a UE's data
    /// needs, from the UE after the last one served; who does not fit waits for a later TTI.
    fn schedule_ul(&mut self, k: Tti, pusch: Tti) {
        let n = self.ues.len();
        let mut free = self.ul_prb;
        let mut retx = 0usize;
        for ue in 0..n {
            let due = self.ues[ue].ul.due_retx(pusch);
            self.blocked[ue] = due.is_some();
            let Some(p) = due else { continue };
            retx += 1;
            let tb = self.ues[ue].ul.retx[p].expect("a retransmission");
            if tb.units <= free {
                free -= tb.units;
                let u = &mut self.ues[ue];
                u.ul.retx[p] = None;
                u.ul.retx_pending -= 1;
                u.grants.push_back(UlGrant { pusch, proc: p, prb: tb.units, bits: tb.bits, retx: Some(tb) });
            }
        }
        let mut cands = std::mem::take(&mut self.candidates);
        cands.clear();
        let report = self.report_tti(k);
        for ue in (self.ul_next..n).chain(0..self.ul_next) {
            let u = &self.ues[ue];
            if self.blocked[ue] || u.ul.free_process(pusch).is_none() {
                continue;
            }
            let (bytes, sr) = match self.cfg.ul_access {
                UlAccess::Ideal => (u.ul.rlc.unsent().saturating_sub(u.inflight), false),
                UlAccess::SchedulingRequest { .. } => {
                    (u.known, u.known == 0 && u.sr_grant_at.is_some_and(|g| g <= k))
                }
            };
            if bytes == 0 && !sr {
                continue;
            }
            let cqi = self.ues[ue].ul.channel.cqi_of_report(report);
            if cqi == 0 {
                continue;
            }
            let (_, i_tbs) = self.mcs(Direction::Uplink, cqi);
            cands.push(Candidate { ue, i_tbs, bytes, metric: 0.0, sr, give: 0 });
        }
        if !cands.is_empty() {
            let share = (self.ul_prb / (cands.len() + retx) as u16).max(self.cfg.ul_min_prb);
            let mut stopped = None;
            for c in &cands {
                let want = match self.cfg.ul_access {
                    UlAccess::SchedulingRequest { sr_grant_prb, .. } if c.sr => sr_grant_prb,
                    _ => self.ul_need(c.i_tbs, c.bytes, share),
                };
                let give = want.min(free);
                if give == 0 || give < want.min(self.cfg.ul_min_prb) {
                    stopped = Some(c.ue);
                    break;
                }
                free -= give;
                let bits = tbs_bits(c.i_tbs, give);
                let cap = u64::from(bits / 8).saturating_sub(self.cfg.rlc.rlc_mac_header.as_bytes());
                let u = &mut self.ues[c.ue];
                let p = u.ul.free_process(pusch).expect("a free HARQ process");
                u.ul.free_from[p] = Tti::MAX;
                u.inflight += cap;
                u.known = u.known.saturating_sub(cap);
                u.sr_grant_at = None;
                u.grants.push_back(UlGrant { pusch, proc: p, prb: give, bits, retx: None });
            }
            self.ul_next = stopped.unwrap_or((cands[0].ue + 1) % n);
        }
        self.candidates = cands;
    }

    /// The PUSCH of grant `g` in TTI `k`: the UE fills a new transport block from its buffer,
    /// with a BSR of what stays behind, or repeats the block of a retransmission.
    fn send_ul(&mut self, k: Tti, ue: usize, g: UlGrant) {
        if let Some(tb) = g.retx {
            self.transmit(k, ue, Direction::Uplink, g.proc, tb);
            return;
        }
        let cap = u64::from(g.bits / 8).saturating_sub(self.cfg.rlc.rlc_mac_header.as_bytes());
        self.ues[ue].inflight -= cap;
        let (start, end) = self.fill(k, ue, Direction::Uplink, cap);
        let sr = matches!(self.cfg.ul_access, UlAccess::SchedulingRequest { .. });
        let u = &mut self.ues[ue];
        u.ul.stats.new_tbs += 1;
        u.ul.stats.new_tb_bytes += DataSize::bytes(u64::from(g.bits / 8));
        if sr {
            // The BSR in this PUSCH: the eNB reads it at the end of the TTI and subtracts the
            // grants it has already issued (TS 36.321 §5.4.5; a pending SR is cancelled, §5.4.4).
            u.known = bsr_reported(u.ul.rlc.unsent()).saturating_sub(u.inflight);
            u.bsr_pending = false;
        }
        let tb = Tb { start, end, bits: g.bits, units: g.prb, tx: 0, due: 0 };
        self.transmit(k, ue, Direction::Uplink, g.proc, tb);
    }

    // ---- HARQ and RLC ----

    /// A new transport block for `ue`'s direction `dir` in TTI `k`: up to `cap` bytes from its
    /// buffer, PDCP discard on the way.
    fn fill(&mut self, k: Tti, ue: usize, dir: Direction, cap: u64) -> (u64, u64) {
        let (now, timer) = (Instant::from_millis(k as i64), self.cfg.rlc.discard_timer);
        let drops = &mut self.drops;
        let Link { rlc, stats, .. } = self.ues[ue].link_mut(dir);
        rlc.take(cap, now, timer, |pkt| {
            stats.discard_drops += 1;
            drops.push_back((ue, dir, pkt, DropReason::Lifetime));
        })
    }

    /// Sends transport block `tb` of HARQ process `p` in TTI `k`: it gets through, waits for a
    /// retransmission 8 TTIs later, or (after its last allowed transmission) is lost.
    fn transmit(&mut self, k: Tti, ue: usize, dir: Direction, p: usize, mut tb: Tb) {
        tb.tx += 1;
        let bler = self.cfg.harq.bler[usize::from(tb.tx) - 1];
        let last = usize::from(tb.tx) == self.cfg.harq.bler.len();
        let failed = match bler {
            b if b <= 0.0 => false,
            b if b >= 1.0 => true,
            b => self.harq_rng.random::<f64>() < b,
        };
        let prb = match dir {
            Direction::Downlink => tb.units * self.rbg_size,
            Direction::Uplink => tb.units,
        };
        let link = self.ues[ue].link_mut(dir);
        link.stats.rb_ttis += u64::from(prb);
        link.stats.ttis_scheduled += 1;
        if tb.tx > 1 {
            link.stats.harq_retransmissions += 1;
        }
        if failed && !last {
            tb.due = k + HARQ_RTT_TTIS;
            (link.free_from[p], link.retx[p]) = (Tti::MAX, Some(tb));
            link.retx_pending += 1;
            return;
        }
        (link.free_from[p], link.retx[p]) = (k + HARQ_RTT_TTIS, None);
        if failed {
            link.stats.harq_failures += 1;
            let Link { rlc, stats, .. } = link;
            let drops = &mut self.drops;
            rlc.lose(tb.start, tb.end, |pkt| {
                stats.harq_failure_drops += 1;
                drops.push_back((ue, dir, pkt, DropReason::HarqFailure));
            });
        }
        let at = Instant::from_millis(k as i64 + 1) + self.cfg.core_delay;
        self.resolve(at, ue, dir, tb.start, tb.end);
    }

    /// Stream range [start, end) of `ue`'s direction `dir` is settled at the receiver by `at`:
    /// the packets now complete in order leave at their port then.
    fn resolve(&mut self, at: Instant, ue: usize, dir: Direction, start: u64, end: u64) {
        let port = match dir {
            Direction::Downlink => Port(ue as u16 + 1),
            Direction::Uplink => Port::ENB,
        };
        let Link { rlc, stats, .. } = self.ues[ue].link_mut(dir);
        let output = &mut self.output;
        rlc.resolve(start, end, |pkt| {
            stats.delivered_packets += 1;
            stats.delivered_bytes += pkt.size();
            output.push_back((at, port, pkt));
        });
    }
}

/// The node that holds `ue`'s buffer of direction `dir`: the eNB, or the UE.
/// The number of UE `ue`'s (index) buffer of direction `dir` ([`Cell::buffer`]).
fn buffer(ue: usize, dir: Direction) -> u16 {
    2 * ue as u16 + u16::from(dir == Direction::Uplink)
}

fn holder(ue: usize, dir: Direction) -> Port {
    match dir {
        Direction::Downlink => Port::ENB,
        Direction::Uplink => Port(ue as u16 + 1),
    }
}

/// The least m in 1..=max with `fits(m)`, or `max` (`fits` is monotone in m).
fn least(max: u16, fits: impl Fn(u16) -> bool) -> u16 {
    let (mut lo, mut hi) = (1u16, max.max(1));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

fn tti_of(t: Instant) -> Tti {
    (t.as_micros().max(0) / TTI.as_micros()) as Tti
}
