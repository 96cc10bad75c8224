//! One IEEE 802.11 BSS, an AP and N stations sharing a channel, as a single sans-IO element
//! with N + 1 ports: port 0 is the AP, ports 1..=N the stations. `docs/wifi.md` describes the
//! model, its constants and their sources (IEEE 802.11-2020, ns-3's `src/wifi`, hostapd, Linux),
//! what it leaves out, and the reference numbers it was validated against.
//!
//! A packet pushed at a station's port goes up to the AP (and on to another station through the
//! AP's queue if that is its destination); one pushed at the AP goes down to its station. Each
//! node queues per access category (the AP per station too, [`ApQueueConfig`]) and contends for
//! the medium with DCF or EDCA ([`dcf`]): AIFS, a random backoff from [0, CW] that freezes while
//! the medium is busy, CW doubling after a failed exchange, post-backoff after every exchange,
//! EIFS after a frame received in error, the NAV of overheard frames. Frames go as one MPDU with
//! an ACK, or as an A-MPDU with a BlockAck ([`aggregation`]), with airtimes from the PHY mode
//! ([`phy`]). An exchange fails when two transmissions overlap at the receiver (same-slot
//! starters, or hidden stations that do not hear each other) or when the MPDUs are lost to
//! channel errors ([`errors`]); its MPDUs go again until their retry limit and are then dropped
//! ([`DropReason::RetryLimit`]). Rate adaptation is optional ([`rate`]).
//!
//! Nothing happens per slot: between two changes of the medium every contender's backoff end is
//! known, and the element's next deadline is the earliest of them (or of a frame's end, a
//! response, a timeout). A change costs O(N). Randomness (backoffs, per-MPDU errors) comes from
//! the generator passed to [`Bss::new`], so a run is a pure function of config, inputs and seed.
//!
//! # Driving a BSS
//!
//! As a [`crate::link::Link`] (crate docs, "Driving an element"):
//!
//! 1. a packet arriving at a node: [`Bss::push(now, from, to, pkt)`](Bss::push), which may refuse
//!    it ([`DropReason::QueueFull`]);
//! 2. at (or after) [`Bss::poll_timeout()`]: [`Bss::on_timeout(now)`](Bss::on_timeout), which
//!    runs the channel up to `now` on its own schedule;
//! 3. after either, drain [`Bss::poll_drop()`] (retry limit, lifetime, a relayed packet the AP
//!    had no room for) and [`Bss::poll_output(now)`](Bss::poll_output) (packets received at their destination
//!    port, with the instant they got there), then wait until the next `poll_timeout()`.

pub mod adaptation;
pub mod aggregation;
pub mod bianchi;
mod config;
pub mod dcf;
pub mod errors;
pub mod phy;
pub mod rate;

use std::collections::VecDeque;

use rand::{RngExt, SeedableRng};
use rtcbench_units::{DataSize, Duration, Instant};
use serde::{Deserialize, Serialize};

use crate::packet::{DropReason, NetPacket};
use crate::rng::SimRng;
pub use adaptation::{AdaptationState, RetryAdaptation};
use adaptation::{Adapter, Decision};
pub use aggregation::AggregationConfig;
use aggregation::ReorderBuffer;
pub use config::{ApQueueConfig, BssConfig, ConfigError, Interferer, QueueConfig, StationConfig};
use dcf::{AcParams, Backoff};
pub use dcf::{AccessCategory, EdcaParameterSet};
pub use errors::ErrorModel;
use phy::{frame, Airtime, PhyMode, PPDU_MAX_TIME};
pub use phy::{Band, PhyError};
use rate::LinkRate;
pub use rate::RateControl;

/// An attachment point of the BSS: port 0 the AP, port i station i (1-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Port(pub u16);

impl Port {
    pub const AP: Self = Self(0);

    /// Station `i`, counted from 1.
    pub const fn station(i: u16) -> Self {
        Self(i)
    }

    fn index(self) -> usize {
        usize::from(self.0)
    }
}

/// What one node did on the channel (for MAC metrics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// PPDUs sent: data frames and control responses.
    pub ppdus: u64,
    /// Airtime of those PPDUs.
    pub airtime: Duration,
    /// Frame exchanges whose ACK or BlockAck came back.
    pub exchanges_ok: u64,
    /// Frame exchanges without a response (collision, errors, hidden-station overlap).
    pub exchanges_failed: u64,
    /// MPDUs acknowledged.
    pub mpdus_acked: u64,
    /// MPDUs given up after their last attempt.
    pub mpdus_retry_dropped: u64,
    /// Data PPDUs sent: frame exchanges attempted (every exchange of a TXOP counts).
    pub data_ppdus: u64,
    /// Airtime of the data PPDUs alone (`airtime` also counts the ACKs and BlockAcks the node
    /// sent as a receiver).
    pub data_airtime: Duration,
    /// MPDU transmissions, retransmissions included: `mpdus_sent / data_ppdus` is the mean
    /// number of MPDUs per PPDU (1 without aggregation).
    pub mpdus_sent: u64,
    /// MPDU transmissions that were retransmissions: the MPDU had used an attempt before (on
    /// air, or in an internal collision).
    pub mpdu_retries: u64,
    /// MPDUs dropped because they had waited longer than the queue's `max_delay`.
    pub mpdus_lifetime_dropped: u64,
    /// Packets the node's queue had no room for: refused by [`Bss::push`], or (at the AP)
    /// relayed packets dropped on arrival.
    pub queue_full_drops: u64,
    /// Packets accepted into the node's queues (pushed or relayed).
    pub packets_queued: u64,
    /// Bytes of the packets acknowledged (as [`NetPacket::size`] counts them, without MAC
    /// overhead).
    pub acked_bytes: DataSize,
}

/// Derived timing constants.
#[derive(Clone, Copy, Debug)]
struct Timing {
    slot: Duration,
    sifs: Duration,
    /// ACKTimeout after a PPDU: aSIFSTime + aSlotTime + aRxPHYStartDelay, the last being the
    /// 20-µs non-HT PHY header of the response (802.11-2016 §10.3.2.9, as ns-3's
    /// FrameExchangeManager computes it).
    response_timeout: Duration,
}

/// One channel access function (DCF or EDCAF) of a node.
#[derive(Clone, Debug)]
struct Edcaf {
    params: AcParams,
    backoff: Backoff,
    /// MPDUs queued in this category at this node (all stations' at the AP).
    queued: u32,
}

/// What a node senses of the medium.
#[derive(Clone, Copy, Debug)]
struct Sense {
    /// End of the latest PPDU the node sent or heard (its CCA busy period).
    busy_end: Instant,
    nav_end: Instant,
    /// End of the ACK timeout of the node's last failed exchange.
    timeout_end: Instant,
    /// End of the last reception, and if it failed, EIFS − DIFS: the node defers by EIFS
    /// instead of DIFS (or AIFS) after it.
    rx_end: Instant,
    rx_error: Option<Duration>,
    /// End of the node's own PPDU on air (transmitting while `now < tx_end`).
    tx_end: Instant,
    /// PPDUs on air the node hears (not its own).
    heard: u32,
    rx: Rx,
}

impl Sense {
    /// The access grant start of ns-3's ChannelAccessManager: SIFS after the latest of the busy
    /// end, the NAV, the ACK timeout and the reception end (+ EIFS − DIFS after an error).
    #[inline]
    fn access_grant_start(&self, t: &Timing) -> Instant {
        let rx = self.rx_end + self.rx_error.unwrap_or(Duration::ZERO);
        self.busy_end.max(self.nav_end).max(self.timeout_end).max(rx) + t.sifs
    }

    fn busy(&self, now: Instant) -> bool {
        self.busy_end > now || self.nav_end > now
    }

    /// A PPDU the node hears (`id`, until `end`; EIFS − DIFS `eifs` if lost) starts at `now`.
    #[inline]
    fn ppdu_starts(
        &mut self,
        id: u64,
        now: Instant,
        end: Instant,
        eifs: Duration,
        eifs_after_collision: bool,
    ) {
        self.busy_end = self.busy_end.max(end);
        self.heard += 1;
        if self.tx_end > now {
            self.rx = Rx::Garbled { eifs: None };
            return;
        }
        match &mut self.rx {
            Rx::Idle => {
                self.rx_error = None;
                self.rx = Rx::Locked { ppdu: id, start: now, interfered: None, eifs };
            }
            // Two frames starting together: no PHY header is decoded.
            Rx::Locked { start, interfered: None, eifs, .. } if *start == now => {
                self.rx = Rx::Garbled { eifs: eifs_after_collision.then_some(*eifs) };
            }
            Rx::Locked { interfered: interfered @ None, .. } => *interfered = Some(now),
            _ => {}
        }
    }

    /// A PPDU the node heard, addressed to another node, ends at `now`.
    #[inline]
    fn bystander_end(&mut self, ppdu: &Ppdu, now: Instant, sifs: Duration) {
        self.heard -= 1;
        let error = match self.rx {
            Rx::Locked { ppdu: locked, interfered, .. } if locked == ppdu.id => {
                // A bystander sets its NAV from the Duration field of a data frame it decoded
                // (it covers SIFS and the response).
                if let (None, PpduKind::Data { response }) = (interfered, ppdu.kind) {
                    self.nav_end = self.nav_end.max(now + sifs + response);
                }
                interfered.map(|_| ppdu.eifs)
            }
            Rx::Garbled { eifs } if self.heard == 0 => eifs,
            _ => return,
        };
        self.reception_ends(now, error);
    }

    /// A reception ends at `now` with an error (EIFS − DIFS) or not: the node is idle again
    /// unless it still hears something.
    #[inline]
    fn reception_ends(&mut self, now: Instant, error: Option<Duration>) {
        if self.heard > 0 {
            self.rx = Rx::Garbled { eifs: error };
        } else {
            self.rx = Rx::Idle;
            self.rx_end = now;
            self.rx_error = error;
        }
    }

    /// An interferer's burst the node senses starts at `now`, until `end`.
    fn burst_starts(&mut self, now: Instant, end: Instant) {
        self.busy_end = self.busy_end.max(end);
        self.heard += 1;
        self.rx = match self.rx {
            Rx::Idle => Rx::Garbled { eifs: None },
            Rx::Locked { ppdu, start, interfered: None, eifs } => {
                Rx::Locked { ppdu, start, interfered: Some(now), eifs }
            }
            other => other,
        };
    }

    /// The burst ends at `now`.
    fn burst_ends(&mut self, now: Instant) {
        self.heard -= 1;
        if let (Rx::Garbled { eifs }, 0) = (self.rx, self.heard) {
            self.rx = Rx::Idle;
            self.rx_end = now;
            self.rx_error = eifs;
        }
    }

    /// Whether a node that senses this behaves from now on exactly as one that senses `other`,
    /// given the same events (its own transmissions aside): the same busy end, PPDUs heard and
    /// receiver state, and NAV, ACK timeout and reception end (+ EIFS − DIFS) each either equal
    /// or, in both, no later than the busy end. Those three count only through their maximum
    /// with the busy end (in `busy` the NAV matters only if later), and the busy end only
    /// grows, while the NAV and the ACK timeout only grow and the reception term only shrinks
    /// (a new reception clears its EIFS) or is set anew, to the same value in both: a term the
    /// busy end covers in both stays covered, or becomes equal.
    fn same_as(&self, other: &Self) -> bool {
        let b = self.busy_end;
        let term = |x: Instant, y: Instant| x == y || (x <= b && y <= b);
        let rx = |s: &Self| s.rx_end + s.rx_error.unwrap_or(Duration::ZERO);
        b == other.busy_end
            && self.heard == other.heard
            && self.rx == other.rx
            && term(self.nav_end, other.nav_end)
            && term(self.timeout_end, other.timeout_end)
            && term(rx(self), rx(other))
    }
}

/// The receiver state of a node's PHY.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rx {
    Idle,
    /// Synchronised on this PPDU (its PHY header decoded); `interfered` is when another
    /// transmission started to overlap it; `eifs` is EIFS − DIFS should it fail.
    Locked {
        ppdu: u64,
        start: Instant,
        interfered: Option<Instant>,
        eifs: Duration,
    },
    /// Hearing only overlapping energy until the medium clears; `eifs` is EIFS − DIFS if an
    /// error is reported when it does.
    Garbled {
        eifs: Option<Duration>,
    },
}

/// A data MPDU waiting at a node, or in flight.
#[derive(Debug)]
struct Mpdu<P> {
    /// Taken out when the MPDU is first received; a copy retransmitted after a lost ACK keeps
    /// its airtime but the receiver discards it.
    pkt: Option<P>,
    /// Final destination node (another station's, for a packet relayed by the AP).
    dest: usize,
    /// MPDU length: the packet plus MAC header, FCS and LLC/SNAP.
    bytes: DataSize,
    enqueued: Instant,
    /// When it reached the head of its queue, or was first sent within an A-MPDU if that came
    /// first: where Chen et al. 2015 (seed 004) §3.1.1's transmit delay starts.
    head_at: Option<Instant>,
    /// Sequence number, given at the first transmission.
    seq: Option<u32>,
    attempts: u32,
}

/// The data path from one node to one peer (AP → station, station → AP), with the receiver's
/// reordering buffers at the far end.
struct TxLink<P> {
    from: usize,
    to: usize,
    queues: [VecDeque<Mpdu<P>>; 4],
    next_seq: [u32; 4],
    rate: LinkRate,
    /// The airtimes of the rate in use.
    timing: LinkTiming,
    errors: ErrorModel,
    reorder: [ReorderBuffer<(P, usize)>; 4],
}

/// What a link's data mode implies, computed when the mode changes rather than per frame.
#[derive(Clone, Copy, Debug)]
struct LinkTiming {
    mode: PhyMode,
    airtime: Airtime,
    /// The ACK and BlockAck that answer a data frame, at the control response rate.
    ack: Duration,
    block_ack: Duration,
    /// EIFS − DIFS at a node that fails to receive a data frame, or its ACK / BlockAck.
    data_eifs: Duration,
    ack_eifs: Duration,
    block_ack_eifs: Duration,
}

impl LinkTiming {
    fn new(mode: PhyMode, cfg: &BssConfig) -> Self {
        let band = cfg.band;
        let response = phy::control_response_mode(&mode, &cfg.basic_rates_mbps);
        let eifs = |m: &PhyMode| band.sifs() + phy::estimated_response_time(m, band);
        Self {
            mode,
            airtime: mode.airtime(band),
            ack: response.ppdu_duration(frame::ACK, band),
            block_ack: response.ppdu_duration(frame::BLOCK_ACK, band),
            data_eifs: eifs(&mode),
            ack_eifs: eifs(&response),
            block_ack_eifs: eifs(&response),
        }
    }
}

/// The frame exchange (or TXOP) a node holds.
#[derive(Clone, Copy, Debug)]
struct Exchange {
    ac: AccessCategory,
    link: usize,
    /// The MPDUs in flight: the first `mpdus` of the link's queue.
    mpdus: usize,
    /// Which of them the receiver got (bit i: MPDU i).
    acked: u64,
    /// Under a BlockAck agreement (aggregating category).
    aggregated: bool,
    /// (Its airtimes are the link's: a link's mode changes only when an exchange on it ends.)
    txop_start: Instant,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PpduKind {
    /// Data; the addressee answers after SIFS with a response of this duration.
    Data { response: Duration },
    /// ACK or BlockAck.
    Response,
}

#[derive(Clone, Copy, Debug)]
struct Ppdu {
    id: u64,
    from: usize,
    to: usize,
    start: Instant,
    kind: PpduKind,
    /// EIFS − DIFS at a node that fails to receive it.
    eifs: Duration,
}

#[derive(Clone, Copy, Debug)]
enum TimerKind {
    PpduEnd(u64),
    /// The ACK timeout of `node`'s exchange expired.
    ExchangeFailed {
        node: usize,
    },
    /// `from` answers `to`'s data with a response of `duration`.
    Respond {
        from: usize,
        to: usize,
        duration: Duration,
        eifs: Duration,
    },
    /// `node` sends the next frame of its TXOP.
    TxopNext {
        node: usize,
    },
    /// A burst of an external interferer begins ([`Interferer`]).
    BurstStart {
        interferer: usize,
    },
    /// It ends.
    BurstEnd {
        interferer: usize,
    },
    /// Algorithm 1 of Chen et al. 2015 (seed 004) at `node`: an interval τ ended.
    AdaptationTick {
        node: usize,
    },
}

impl TimerKind {
    /// Order among events at one instant: frames end before anything starts (a transmission
    /// occupies [start, end)), and a node that senses a frame starting at the instant its
    /// backoff ends defers (backoff expiries run after every timer).
    fn rank(self) -> u8 {
        match self {
            // An interval [t − τ, t) of the adaptation's statistics ends before anything at t.
            Self::PpduEnd(_) | Self::BurstEnd { .. } | Self::AdaptationTick { .. } => 0,
            Self::ExchangeFailed { .. } => 1,
            Self::Respond { .. } | Self::TxopNext { .. } | Self::BurstStart { .. } => 2,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Timer {
    at: Instant,
    order: u64,
    kind: TimerKind,
}

impl Timer {
    /// The order timers run in: by instant, then rank, then the order they were scheduled in.
    #[inline]
    fn key(&self) -> (Instant, u8, u64) {
        (self.at, self.kind.rank(), self.order)
    }
}

/// One BSS carrying packets of type `P`.
pub struct Bss<P> {
    cfg: BssConfig,
    t: Timing,
    nodes: Vec<Node>,
    /// AP → station i at i − 1; station i → AP at N + i − 1.
    links: Vec<TxLink<P>>,
    /// Per transmitter, the nodes that hear it (itself excluded): a bitset of `words` words at
    /// `hearers[tx * words..]`.
    hearers: Vec<u64>,
    words: usize,
    ongoing: Vec<Ppdu>,
    /// Pending timers, latest first: the next one due is the last (ordered by
    /// [`Timer::key`], which no two timers share).
    timers: Vec<Timer>,
    /// The earliest backoff end of a node that may contend (exact unless `access_dirty`).
    next_access: Option<Instant>,
    /// The state changed since `next_access` was computed: it is computed again only when it
    /// could decide something, i.e. when no timer is due at or before `access_floor`.
    access_dirty: bool,
    /// A lower bound on every node's backoff end, now and later: SIFS and the least AIFS after
    /// the end of the latest PPDU or burst that every node sensed. A backoff ends no earlier
    /// than SIFS + AIFSN slots after the node's busy end, which only grows.
    access_floor: Instant,
    /// AIFS − SIFS of the category with the least AIFSN (of the AP's, the stations' and the DCF).
    min_aifs: Duration,
    /// Per node: every other node hears it.
    heard_by_all: Vec<bool>,
    /// What a node that never transmits senses of the PPDUs and bursts every node hears: the
    /// record of every node in step with it, updated once for all of them.
    shared: Sense,
    /// Bit n (of word n / 64): node n is not in step with `shared` and keeps its own record
    /// (`Node::sense`). A node in step senses what `shared` says (its own record is stale but
    /// for `tx_end`): it heard everything every node heard since it was last in step.
    unsynced: Vec<u64>,
    /// Bit n: node n has backoff slots left to count down (`Node::counting` is not zero).
    counting: Vec<u64>,
    /// Bit n: node n holds a frame exchange (or TXOP): it does not contend.
    exchanging: Vec<u64>,
    /// Bit n (of word n / 64): node n has an MPDU queued in some category. Only these nodes
    /// contend, so finding the next backoff end skips the others.
    backlogged: Vec<u64>,
    backoff_rng: SimRng,
    error_rng: SimRng,
    output: VecDeque<(Instant, Port, P)>,
    drops: VecDeque<(Port, P, DropReason)>,
    /// Per category, the station the AP serves next (round-robin mode).
    ap_next: [usize; 4],
    /// Per category, the packets the AP holds (the shared limit).
    ap_queued: [u32; 4],
    next_ppdu: u64,
    next_order: u64,
    /// Reused per backoff expiry: (node, category that transmits, categories that collided
    /// internally).
    starters: Vec<(usize, AccessCategory, u8)>,
}

/// In this order (`repr(C)`) the fields every change of the medium reads of each node, its
/// counting mask and what it senses, share its first two cache lines.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
struct Node {
    /// Bit a: category a has backoff slots left to count down.
    counting: u8,
    /// Bit a: category a has an MPDU queued.
    queued: u8,
    /// The node's earliest backoff end as last computed (exact while the element's
    /// `access_dirty` is false, for a node with something queued).
    access: Option<Instant>,
    sense: Sense,
    ac: [Edcaf; 4],
    exchange: Option<Exchange>,
    stats: NodeStats,
    /// Bytes of the packets queued at the node (waiting or in flight), as [`NetPacket::size`]
    /// counts them: kept as a running sum so [`Bss::queue_bytes`] is O(1).
    queued_bytes: DataSize,
    /// The station's retry-limit adaptation, if configured.
    adapter: Option<Adapter>,
}

/// The indices of the bits set in `mask`, lowest first.
#[inline]
fn bits(mut mask: u8) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let i = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            i
        })
    })
}

/// Sets or clears bit `i` of a bitset of words.
#[inline]
fn set_bit(words: &mut [u64], i: usize, on: bool) {
    let (w, bit) = (i / 64, 1 << (i % 64));
    if on {
        words[w] |= bit;
    } else {
        words[w] &= !bit;
    }
}

impl<P: NetPacket> Bss<P> {
    /// A BSS with every queue empty and the medium idle since time zero. Backoffs and per-MPDU
    /// errors draw from two streams seeded from `rng`, so an error model changes no backoff.
    pub fn new(cfg: BssConfig, mut rng: SimRng) -> Result<Self, ConfigError> {
        cfg.validate()?;
        let n = cfg.stations.len();
        let band = cfg.band;
        let t = Timing {
            slot: band.slot(),
            sifs: band.sifs(),
            response_timeout: band.sifs() + band.slot() + PhyMode::NonHt { mbps: 6 }.preamble(),
        };
        let nodes_sense = Sense {
            busy_end: Instant::ZERO,
            nav_end: Instant::ZERO,
            timeout_end: Instant::ZERO,
            rx_end: Instant::ZERO,
            rx_error: None,
            tx_end: Instant::ZERO,
            heard: 0,
            rx: Rx::Idle,
        };
        let node = |set: &EdcaParameterSet| {
            let params = |ac| if cfg.qos { set.get(ac) } else { cfg.dcf };
            let edcaf = |ac| {
                let params: AcParams = params(ac);
                Edcaf { params, backoff: Backoff::new(params.cw_min), queued: 0 }
            };
            Node {
                ac: AccessCategory::ALL.map(edcaf),
                sense: nodes_sense,
                counting: 0,
                queued: 0,
                access: None,
                exchange: None,
                stats: NodeStats::default(),
                queued_bytes: DataSize::ZERO,
                adapter: None,
            }
        };
        let mut nodes = vec![node(&cfg.edca_ap)];
        nodes.extend((0..n).map(|_| node(&cfg.edca_sta)));
        let link = |from: usize, to: usize, s: &StationConfig| TxLink {
            from,
            to,
            queues: Default::default(),
            next_seq: [0; 4],
            rate: LinkRate::new(s.phy, s.rate_control),
            timing: LinkTiming::new(s.phy, &cfg),
            errors: s.errors,
            reorder: Default::default(),
        };
        let mut links: Vec<TxLink<P>> =
            cfg.stations.iter().enumerate().map(|(i, s)| link(0, i + 1, s)).collect();
        links.extend(cfg.stations.iter().enumerate().map(|(i, s)| link(i + 1, 0, s)));
        let hears: Vec<bool> = match &cfg.hearing {
            Some(h) => h.iter().flatten().copied().collect(),
            None => vec![true; (n + 1) * (n + 1)],
        };
        let error_rng = SimRng::seed_from_u64(rng.random());
        let heard_by_all = (0..=n).map(|tx| (0..=n).all(|rx| rx == tx || hears[rx * (n + 1) + tx])).collect();
        let words = (n + 1).div_ceil(64);
        let mut hearers = vec![0u64; (n + 1) * words];
        for tx in 0..=n {
            for rx in (0..=n).filter(|&rx| rx != tx && hears[rx * (n + 1) + tx]) {
                hearers[tx * words + rx / 64] |= 1 << (rx % 64);
            }
        }
        let sets = [cfg.edca_ap, cfg.edca_sta];
        let aifsn = sets.iter().flat_map(|set| AccessCategory::ALL.map(|ac| set.get(ac).aifsn));
        let min_aifs = t.slot * i64::from(aifsn.chain([cfg.dcf.aifsn]).min().expect("parameters"));
        let mut bss = Self {
            t,
            nodes,
            links,
            hearers,
            words,
            ongoing: Vec::new(),
            timers: Vec::new(),
            next_access: None,
            access_dirty: false,
            access_floor: Instant::ZERO,
            min_aifs,
            heard_by_all,
            shared: nodes_sense,
            unsynced: vec![0; (n + 1).div_ceil(64)],
            counting: vec![0; (n + 1).div_ceil(64)],
            exchanging: vec![0; (n + 1).div_ceil(64)],
            backlogged: vec![0; (n + 1).div_ceil(64)],
            backoff_rng: rng,
            error_rng,
            output: VecDeque::new(),
            drops: VecDeque::new(),
            ap_next: [0; 4],
            ap_queued: [0; 4],
            next_ppdu: 0,
            next_order: 0,
            starters: Vec::with_capacity(n + 1),
            cfg,
        };
        for station in 1..=n {
            if let Some(a) = bss.cfg.stations[station - 1].retry_adaptation {
                let adapter = Adapter::new(a);
                bss.schedule(Instant::ZERO + adapter.interval(), TimerKind::AdaptationTick { node: station });
                bss.nodes[station].adapter = Some(adapter);
            }
        }
        for interferer in 0..bss.cfg.interferers.len() {
            if let Some(at) = bss.cfg.interferers[interferer].next_burst(Instant::ZERO) {
                bss.schedule(at, TimerKind::BurstStart { interferer });
            }
        }
        Ok(bss)
    }

    pub fn config(&self) -> &BssConfig {
        &self.cfg
    }

    /// Number of stations (ports 1..=N).
    pub fn stations(&self) -> usize {
        self.nodes.len() - 1
    }

    /// Packets waiting (or in flight) at a node in one access category.
    pub fn queue_len(&self, port: Port, ac: AccessCategory) -> usize {
        self.nodes[port.index()].ac[ac.index()].queued as usize
    }

    /// What the node at `port` did on the channel so far. Every counter is cumulative, so a
    /// tracer samples it and takes differences.
    pub fn stats(&self, port: Port) -> NodeStats {
        self.nodes[port.index()].stats
    }

    /// The retry-limit adaptation of the station at `port` (`None` if it has none): Chen et
    /// al. 2015 (seed 004)'s statistics over the last w intervals of τ, and its decisions.
    pub fn adaptation(&self, port: Port) -> Option<AdaptationState> {
        self.nodes[port.index()].adapter.as_ref().map(Adapter::state)
    }

    /// Bytes of the packets queued at the node at `port` over every access category (waiting
    /// or in flight, not yet acknowledged or given up), as [`NetPacket::size`] counts them.
    pub fn queue_bytes(&self, port: Port) -> DataSize {
        self.nodes[port.index()].queued_bytes
    }

    /// The PHY mode the next data frame from `from` to `to` (AP ↔ station) would use.
    pub fn phy_mode(&self, from: Port, to: Port) -> PhyMode {
        self.links[self.link_index(from.index(), to.index())].rate.mode()
    }

    /// Offers a packet arriving at node `from` for node `to`. Station to station goes through
    /// the AP. Its access category comes from its DSCP (best effort in a non-QoS BSS). Returns
    /// the packet if the node's queue is full.
    ///
    /// # Panics
    /// If a port is not in the BSS, or `from == to`: a route that does so is a programming
    /// error.
    pub fn push(&mut self, now: Instant, from: Port, to: Port, pkt: P) -> Result<(), (P, DropReason)> {
        let (from, to) = (from.index(), to.index());
        assert!(
            from < self.nodes.len() && to < self.nodes.len() && from != to,
            "no path from port {from} to port {to} in BSS {} with {} stations",
            self.cfg.name,
            self.stations()
        );
        let ac = if self.cfg.qos { AccessCategory::from_dscp(pkt.dscp()) } else { AccessCategory::Be };
        // Ar of Chen et al. 2015 (seed 004) eq. (4) counts what arrives from IP, refused or
        // not: counting only what the queue took would hide the excess once it is full.
        if let Some(a) = self.nodes[from].adapter.as_mut() {
            a.arrived(pkt.size());
        }
        let result = self.enqueue(now, from, to, ac, pkt);
        // Only `from` changed, and its backoff end can only have come earlier: it may now be the
        // earliest. (If the earliest is to be computed anyway, it will be then.)
        if !self.access_dirty {
            let access = self.node_access(from);
            self.nodes[from].access = access;
            if let Some(end) = access {
                self.next_access = Some(self.next_access.map_or(end, |x| x.min(end)));
            }
        }
        result
    }

    /// The next instant something happens in the BSS.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let timer = self.timers.last().map(|t| t.at);
        if self.access_dirty {
            // Only while a timer comes no later than any backoff can end (`settle_access`).
            return timer;
        }
        match (timer, self.next_access) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Runs the channel up to `now`: every event due by then happens at its own instant.
    pub fn on_timeout(&mut self, now: Instant) {
        loop {
            let timer_at = self.timers.last().map(|t| t.at);
            if self.access_dirty {
                // No backoff ends before `access_floor`: a timer at or before it goes first
                // whatever the backoffs, and with none due by `now` nothing happens yet.
                match timer_at {
                    Some(at) if at <= self.access_floor => {
                        if at > now {
                            break;
                        }
                        let timer = self.timers.pop().expect("a timer");
                        self.run_timer(timer);
                        continue;
                    }
                    _ if self.access_floor > now => break,
                    _ => self.update_next_access(),
                }
            }
            match (timer_at, self.next_access) {
                (Some(at), access) if at <= now && access.is_none_or(|a| at <= a) => {
                    let timer = self.timers.pop().expect("a timer");
                    self.run_timer(timer);
                }
                (_, Some(at)) if at <= now => self.access(at),
                _ => break,
            }
            self.access_dirty = true;
        }
        self.settle_access();
    }

    /// Computes the next backoff end unless the next timer comes no later than it can:
    /// [`Bss::poll_timeout`] then needs only the timer.
    fn settle_access(&mut self) {
        if self.access_dirty && self.timers.last().is_none_or(|t| t.at > self.access_floor) {
            self.update_next_access();
        }
    }

    /// The next packet that reached its destination port by `now`, with the instant it did.
    pub fn poll_output(&mut self, now: Instant) -> Option<(Instant, Port, P)> {
        super::pop_due(&mut self.output, now)
    }

    /// The next packet dropped inside the BSS, with the port of the node that held it.
    pub fn poll_drop(&mut self) -> Option<(Port, P, DropReason)> {
        self.drops.pop_front()
    }

    // ---- queues ----

    fn link_index(&self, from: usize, to: usize) -> usize {
        let n = self.stations();
        if from == 0 {
            to - 1
        } else {
            n + from - 1
        }
    }

    fn max_delay(&self, node: usize) -> Option<Duration> {
        if node == 0 {
            self.cfg.ap_queue.max_delay()
        } else {
            self.cfg.sta_queue.max_delay
        }
    }

    /// MAC header, FCS and LLC/SNAP around a packet.
    fn mpdu_overhead(&self) -> DataSize {
        if self.cfg.qos {
            frame::QOS_DATA_OVERHEAD
        } else {
            frame::DATA_OVERHEAD
        }
    }

    /// An MPDU of `bytes` (packet and MAC overhead) left `node`'s queue of category `a`.
    fn dequeued(&mut self, node: usize, a: usize, bytes: DataSize) {
        let overhead = self.mpdu_overhead();
        let n = &mut self.nodes[node];
        n.ac[a].queued -= 1;
        n.queued_bytes -= bytes - overhead;
        if n.ac[a].queued == 0 {
            n.queued &= !(1 << a);
            if n.queued == 0 {
                self.backlogged[node / 64] &= !(1 << (node % 64));
            }
        }
        if node == 0 {
            self.ap_queued[a] -= 1;
        }
    }

    /// The MPDU now at the head of `link`'s queue of category `a` starts its transmit delay
    /// (if it had not already, by going out in an A-MPDU).
    fn mark_head(&mut self, link: usize, a: usize, now: Instant) {
        if let Some(m) = self.links[link].queues[a].front_mut() {
            m.head_at.get_or_insert(now);
        }
    }

    /// Queues a packet at `node` for final destination `dest`.
    fn enqueue(
        &mut self,
        now: Instant,
        node: usize,
        dest: usize,
        ac: AccessCategory,
        pkt: P,
    ) -> Result<(), (P, DropReason)> {
        let (peer, a) = (if node == 0 { dest } else { 0 }, ac.index());
        let link = self.link_index(node, peer);
        let full = match self.cfg.ap_queue {
            _ if node != 0 => self.links[link].queues[a].len() >= self.cfg.sta_queue.packets as usize,
            ApQueueConfig::SharedPerAc { packets, .. } => self.ap_queued[a] >= packets,
            ApQueueConfig::PerStation { packets, .. } => self.links[link].queues[a].len() >= packets as usize,
        };
        if full {
            self.nodes[node].stats.queue_full_drops += 1;
            return Err((pkt, DropReason::QueueFull));
        }
        let size = pkt.size();
        let bytes = size + self.mpdu_overhead();
        let head_at = self.links[link].queues[a].is_empty().then_some(now);
        self.links[link].queues[a].push_back(Mpdu {
            pkt: Some(pkt),
            dest,
            bytes,
            enqueued: now,
            head_at,
            seq: None,
            attempts: 0,
        });
        if node == 0 {
            self.ap_queued[a] += 1;
        }
        let n = &mut self.nodes[node];
        n.stats.packets_queued += 1;
        n.queued_bytes += size;
        n.ac[a].queued += 1;
        if n.ac[a].queued == 1 {
            n.queued |= 1 << a;
            self.backlogged[node / 64] |= 1 << (node % 64);
            self.request_access(now, node, ac);
        }
        Ok(())
    }

    /// A category that had nothing to send got a frame (ns-3 `NeedBackoffUponAccess` and
    /// `RequestAccess`): with no backoff pending it may transmit once the medium has been idle
    /// for the AIFS (an EDCAF at the next slot boundary, a DCF a full DIFS after the frame
    /// arrived); on a busy medium it draws a backoff.
    fn request_access(&mut self, now: Instant, node: usize, ac: AccessCategory) {
        if self.nodes[node].exchange.is_some_and(|e| e.ac == ac) {
            return; // In its TXOP: the TXOP goes on or ends with a post-backoff.
        }
        self.count_down(node, now);
        let (t, qos) = (self.t, self.cfg.qos);
        let sense = self.sense(node);
        let (ags, busy) = (sense.access_grant_start(&t), sense.busy(now));
        let e = &mut self.nodes[node].ac[ac.index()];
        if e.backoff.slots > 0 {
            return;
        }
        if busy {
            self.draw(node, ac.index(), now);
        } else if qos {
            e.backoff.align_to_slot(now, ags, e.params.aifsn, t.slot);
        } else {
            e.backoff.start = now + t.sifs + t.slot * i64::from(e.params.aifsn);
        }
    }

    /// Draws a new backoff for `node`'s category `a` (`Backoff::draw`).
    fn draw(&mut self, node: usize, a: usize, now: Instant) {
        let n = &mut self.nodes[node];
        n.ac[a].backoff.draw(now, &mut self.backoff_rng);
        n.counting = (n.counting & !(1 << a)) | (u8::from(n.ac[a].backoff.slots > 0) << a);
        set_bit(&mut self.counting, node, n.counting != 0);
    }

    #[inline]
    fn synced(&self, node: usize) -> bool {
        self.unsynced[node / 64] & (1 << (node % 64)) == 0
    }

    /// What `node` senses.
    #[inline]
    fn sense(&self, node: usize) -> &Sense {
        if self.synced(node) {
            &self.shared
        } else {
            &self.nodes[node].sense
        }
    }

    /// Gives `node` its own record of the medium again, before something changes it that does
    /// not change the shared one.
    #[inline]
    fn unsync(&mut self, node: usize) {
        if self.synced(node) {
            let n = &mut self.nodes[node];
            n.sense = Sense { tx_end: n.sense.tx_end, ..self.shared };
            set_bit(&mut self.unsynced, node, true);
        }
    }

    /// `node` is in step with the shared record again if it senses the same and its own last
    /// PPDU ended before `now` (the shared record hears that PPDU, the node does not: its end
    /// must be behind both).
    #[inline]
    fn resync(&mut self, node: usize, now: Instant) {
        let n = &self.nodes[node];
        if n.sense.tx_end < now && n.sense.same_as(&self.shared) {
            set_bit(&mut self.unsynced, node, false);
        }
    }

    /// Counts down the backoffs of `node` up to `now`, before the medium it senses changes.
    #[inline]
    fn count_down(&mut self, node: usize, now: Instant) {
        // Nothing to count: the usual case of a node that has been idle a while.
        if self.nodes[node].counting != 0 {
            self.count_down_slots(node, now);
        }
    }

    fn count_down_slots(&mut self, node: usize, now: Instant) {
        let ags = self.sense(node).access_grant_start(&self.t);
        // No countdown starts before AIFS, at least a slot after the access grant start.
        if ags + self.t.slot <= now {
            self.count_down_from(node, now, ags);
        }
    }

    /// Counts down `node`'s slots up to `now` from the access grant start `ags` (of what it
    /// senses), at least a slot before `now`.
    fn count_down_from(&mut self, node: usize, now: Instant, ags: Instant) {
        let (t, qos) = (self.t, self.cfg.qos);
        let n = &mut self.nodes[node];
        // The other categories have no slots: their count-down changes nothing.
        for a in bits(n.counting) {
            let e = &mut n.ac[a];
            e.backoff.count_down(now, ags, e.params.aifsn, t.slot, qos);
            if e.backoff.slots == 0 {
                n.counting &= !(1 << a);
            }
        }
        if n.counting == 0 {
            set_bit(&mut self.counting, node, false);
        }
    }

    /// The earliest backoff end of a category with something to send, at a node not already in
    /// an exchange.
    fn update_next_access(&mut self) {
        let (mut next, mut any) = (Instant::FAR_FUTURE, false);
        // The access grant start of every node in step with the shared record.
        let shared_ags = self.shared.access_grant_start(&self.t);
        for w in 0..self.backlogged.len() {
            // Something queued and not in an exchange: it contends.
            let mut bits = self.backlogged[w] & !self.exchanging[w];
            while bits != 0 {
                let n = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let ags =
                    if self.synced(n) { shared_ags } else { self.nodes[n].sense.access_grant_start(&self.t) };
                let access = self.backoff_end(n, ags);
                self.nodes[n].access = access;
                if let Some(end) = access {
                    (next, any) = (next.min(end), true);
                }
            }
        }
        self.next_access = any.then_some(next);
        self.access_dirty = false;
    }

    /// The earliest backoff end at one node.
    #[inline]
    fn node_access(&self, node: usize) -> Option<Instant> {
        if self.nodes[node].exchange.is_some() {
            return None;
        }
        self.backoff_end(node, self.sense(node).access_grant_start(&self.t))
    }

    /// The earliest backoff end of `node`'s categories with something queued, given its access
    /// grant start.
    #[inline]
    fn backoff_end(&self, node: usize, ags: Instant) -> Option<Instant> {
        let n = &self.nodes[node];
        bits(n.queued).map(|a| n.ac[a].backoff.end(ags, n.ac[a].params.aifsn, self.t.slot)).min()
    }

    // ---- events ----

    #[inline]
    fn schedule(&mut self, at: Instant, kind: TimerKind) {
        let timer = Timer { at, order: self.next_order, kind };
        self.next_order += 1;
        // Latest first; keys are unique (`order`), so the position is exact. A new timer is
        // usually the earliest (it goes last) or nearly.
        let key = timer.key();
        let mut i = self.timers.len();
        while i > 0 && self.timers[i - 1].key() < key {
            i -= 1;
        }
        if i == self.timers.len() {
            self.timers.push(timer);
        } else {
            self.timers.insert(i, timer);
        }
    }

    fn run_timer(&mut self, timer: Timer) {
        let now = timer.at;
        match timer.kind {
            TimerKind::PpduEnd(id) => self.end_ppdu(now, id),
            TimerKind::ExchangeFailed { node } => self.exchange_failed(now, node),
            TimerKind::Respond { from, to, duration, eifs } => {
                self.start_ppdu(now, from, to, duration, PpduKind::Response, eifs);
            }
            TimerKind::TxopNext { node } => {
                let ex = self.nodes[node].exchange.expect("a TXOP");
                if !self.start_exchange(now, node, ex.ac, ex.txop_start) {
                    self.end_txop(now, node, ex.ac);
                }
            }
            TimerKind::BurstStart { interferer } => self.start_burst(now, interferer),
            TimerKind::BurstEnd { interferer } => self.end_burst(now, interferer),
            TimerKind::AdaptationTick { node } => {
                let adapter = self.nodes[node].adapter.as_mut().expect("an adapting station");
                adapter.tick();
                let next = now + adapter.interval();
                self.schedule(next, TimerKind::AdaptationTick { node });
            }
        }
    }

    /// An interferer's burst begins: every node that senses it finds the medium busy until its
    /// end (its backoff freezes) and loses what it was receiving from now on, as when a hidden
    /// station's PPDU overlaps (Chen et al. 2015 (seed 004) §4.1). Nobody decodes it, so it sets
    /// no NAV and, alone, brings no EIFS.
    fn start_burst(&mut self, now: Instant, interferer: usize) {
        let i = &self.cfg.interferers[interferer];
        let end = now + i.busy;
        let next = i.next_burst(now + i.period);
        if i.heard_by.iter().all(|&h| h) {
            self.access_floor = self.access_floor.max(end + self.t.sifs + self.min_aifs);
        }
        // Sensed by every node: as for a PPDU every node hears (`start_ppdu`).
        let all = self.cfg.interferers[interferer].heard_by.iter().all(|&h| h);
        for n in 0..self.nodes.len() {
            if !self.cfg.interferers[interferer].heard_by[n] {
                continue;
            }
            if self.synced(n) {
                if all {
                    self.count_down(n, now);
                    continue;
                }
                self.unsync(n);
            }
            self.count_down(n, now);
            self.nodes[n].sense.burst_starts(now, end);
        }
        if all {
            self.shared.burst_starts(now, end);
        }
        self.schedule(end, TimerKind::BurstEnd { interferer });
        if let Some(next) = next {
            self.schedule(next, TimerKind::BurstStart { interferer });
        }
    }

    /// The burst ends: a node that heard nothing else is idle again, deferring by EIFS if a
    /// reception it had locked onto was lost to the burst.
    fn end_burst(&mut self, now: Instant, interferer: usize) {
        let all = self.cfg.interferers[interferer].heard_by.iter().all(|&h| h);
        if all {
            self.shared.burst_ends(now);
        }
        for n in 0..self.nodes.len() {
            if !self.cfg.interferers[interferer].heard_by[n] {
                continue;
            }
            if self.synced(n) {
                if all {
                    continue;
                }
                self.unsync(n);
            }
            self.nodes[n].sense.burst_ends(now);
            if all {
                self.resync(n, now);
            }
        }
    }

    /// Backoffs end at `now`: every node whose backoff ends now transmits, so nodes that end
    /// in the same slot collide. A node whose categories end together sends the highest and
    /// treats the others as failed (an internal collision, 802.11-2016 §10.22.2.4).
    fn access(&mut self, now: Instant) {
        let slot = self.t.slot;
        let mut starters = std::mem::take(&mut self.starters);
        // Only a node that contends can start.
        let backlogged = (0..self.backlogged.len()).flat_map(|w| {
            let mut bits = self.backlogged[w] & !self.exchanging[w];
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let n = w * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    n
                })
            })
        });
        for i in backlogged {
            let n = &self.nodes[i];
            // Its backoff end is up to date (`next_access` is): none ends later than that.
            if n.access.is_none_or(|a| a > now) {
                continue;
            }
            let ags = self.sense(i).access_grant_start(&self.t);
            // Bit a: category a's backoff ends by now.
            let mut due = 0u8;
            for a in bits(n.queued) {
                let e = &n.ac[a];
                due |= u8::from(e.backoff.end(ags, e.params.aifsn, slot) <= now) << a;
            }
            if due != 0 {
                let top = 7 - due.leading_zeros() as usize;
                starters.push((i, AccessCategory::ALL[top], due & !(1 << top)));
            }
        }
        for &(node, ac, losers) in &starters {
            self.count_down(node, now);
            for loser in bits(losers) {
                self.internal_collision(now, node, AccessCategory::ALL[loser]);
            }
            if !self.start_exchange(now, node, ac, now) {
                // Everything it held expired: it counts down again from a slot boundary.
                self.nodes[node].ac[ac.index()].backoff.start = now;
            }
        }
        starters.clear();
        self.starters = starters;
    }

    /// Builds and sends the next data PPDU of `node`'s category `ac`; false if nothing is left
    /// to send (or, within a TXOP, nothing fits its remaining time).
    fn start_exchange(&mut self, now: Instant, node: usize, ac: AccessCategory, txop_start: Instant) -> bool {
        let a = ac.index();
        let params = self.nodes[node].ac[a].params;
        let aggregated = self.cfg.aggregation.is_some_and(|g| g.aggregates(ac));
        // Within a TXOP the exchanges after the first must fit its limit; the first always goes.
        let budget =
            (now > txop_start && !params.txop_limit.is_zero()).then(|| txop_start + params.txop_limit - now);
        let picked = loop {
            if self.nodes[node].ac[a].queued == 0 {
                break None;
            }
            let link = self.choose_link(node, ac);
            match self.select_mpdus(now, link, ac, aggregated, budget) {
                Some(psdu) => break Some((link, psdu)),
                // Nothing of this link left (expired) or nothing fits the TXOP.
                None if budget.is_some() => break None,
                None => {}
            }
        };
        let Some((link, (count, psdu))) = picked else { return false };
        let l = &mut self.links[link];
        let stats = &mut self.nodes[node].stats;
        stats.data_ppdus += 1;
        stats.mpdus_sent += count as u64;
        for m in l.queues[a].iter_mut().take(count) {
            if m.attempts > 0 {
                stats.mpdu_retries += 1;
            }
            m.attempts += 1;
            m.head_at.get_or_insert(now);
            if m.seq.is_none() {
                m.seq = Some(l.next_seq[a]);
                l.next_seq[a] += 1;
            }
        }
        let (to, timing) = (l.to, l.timing);
        let response = if count > 1 { timing.block_ack } else { timing.ack };
        set_bit(&mut self.exchanging, node, true);
        self.nodes[node].exchange =
            Some(Exchange { ac, link, mpdus: count, acked: 0, aggregated, txop_start });
        let duration = timing.airtime.ppdu(psdu.as_bytes());
        self.nodes[node].stats.data_airtime += duration;
        self.start_ppdu(now, node, to, duration, PpduKind::Data { response }, timing.data_eifs);
        true
    }

    /// The AP's next station in category `ac` (a station has one link).
    fn choose_link(&mut self, node: usize, ac: AccessCategory) -> usize {
        if node != 0 {
            return self.link_index(node, 0);
        }
        let (a, n) = (ac.index(), self.stations());
        match self.cfg.ap_queue {
            ApQueueConfig::PerStation { .. } => {
                let start = self.ap_next[a];
                let link = (0..n)
                    .map(|k| (start + k) % n)
                    .find(|&l| !self.links[l].queues[a].is_empty())
                    .expect("queued");
                self.ap_next[a] = link;
                link
            }
            ApQueueConfig::SharedPerAc { .. } => {
                (0..n)
                    .filter_map(|l| self.links[l].queues[a].front().map(|m| (m.enqueued, l)))
                    .min()
                    .expect("queued")
                    .1
            }
        }
    }

    /// The MPDUs of the next PPDU on `link`: how many from the head of the queue, and the PSDU
    /// length. Drops MPDUs past their lifetime on the way. `None` if none is left or, within a
    /// TXOP (`budget`), none fits.
    fn select_mpdus(
        &mut self,
        now: Instant,
        link: usize,
        ac: AccessCategory,
        aggregated: bool,
        budget: Option<Duration>,
    ) -> Option<(usize, DataSize)> {
        let a = ac.index();
        let sifs = self.t.sifs;
        let max_delay = self.max_delay(self.links[link].from);
        let agg = self.cfg.aggregation.unwrap_or_default();
        let timing = self.links[link].timing;
        let vht = matches!(timing.mode, PhyMode::Vht { .. });
        let (mut count, mut length) = (0usize, 0u64);
        let mut psdu = DataSize::ZERO;
        let mut head_seq = None;
        let mut next_new_seq = self.links[link].next_seq[a];
        while let Some(m) = self.links[link].queues[a].get(count) {
            if max_delay.is_some_and(|d| now - m.enqueued > d) {
                let m = self.links[link].queues[a].remove(count).expect("an MPDU");
                self.nodes[self.links[link].from].stats.mpdus_lifetime_dropped += 1;
                self.discard(now, link, ac, m, DropReason::Lifetime);
                continue;
            }
            let seq = m.seq.unwrap_or(next_new_seq);
            let head = *head_seq.get_or_insert(seq);
            if count > 0 && (!aggregated || seq - head >= u32::from(agg.window)) {
                break;
            }
            let bytes = m.bytes.as_bytes();
            let new_length = if count == 0 { 4 + bytes } else { length.next_multiple_of(4) + 4 + bytes };
            // One MPDU goes alone (an HT PSDU without delimiter), except in a VHT PPDU, which
            // always carries an A-MPDU (802.11-2020 §10.12.7).
            let candidate = if count == 0 && !vht { bytes } else { new_length };
            let duration = timing.airtime.ppdu(candidate);
            let exchange = duration + sifs + if count == 0 { timing.ack } else { timing.block_ack };
            let fits = (count == 0 || (new_length <= agg.max_length.as_bytes() && duration <= PPDU_MAX_TIME))
                && budget.is_none_or(|b| exchange <= b);
            if !fits {
                break;
            }
            if m.seq.is_none() {
                next_new_seq += 1;
            }
            count += 1;
            length = new_length;
            psdu = DataSize::bytes(candidate);
        }
        (count > 0).then_some((count, psdu))
    }

    /// Puts a PPDU on the air from `from` to `to`; a node that fails to receive it defers by
    /// `eifs` (EIFS − DIFS) more.
    fn start_ppdu(
        &mut self,
        now: Instant,
        from: usize,
        to: usize,
        duration: Duration,
        kind: PpduKind,
        eifs: Duration,
    ) {
        let id = self.next_ppdu;
        self.next_ppdu += 1;
        let end = now + duration;
        if self.heard_by_all[from] {
            // Every node is busy until `end` at least.
            self.access_floor = self.access_floor.max(end + self.t.sifs + self.min_aifs);
        }
        // The sender: its other categories freeze; it cannot receive while it sends.
        self.unsync(from);
        self.count_down(from, now);
        let s = &mut self.nodes[from];
        s.sense.busy_end = s.sense.busy_end.max(end);
        s.sense.tx_end = end;
        s.sense.rx_error = None;
        if s.sense.rx != Rx::Idle {
            s.sense.rx = Rx::Garbled { eifs: None };
        }
        s.stats.ppdus += 1;
        s.stats.airtime += duration;
        let eifs_after_collision = self.cfg.eifs_after_collision;
        // Heard by every node: the nodes in step with the shared record change with it (after
        // the loop: they count down against it as it was).
        let all = self.heard_by_all[from];
        for w in 0..self.words {
            let hearers = self.hearers[from * self.words + w];
            // Those in step with the shared record that have slots left count them down against
            // it (the others have nothing to do); the rest update their own record.
            let (mut in_step, mut own) = if all {
                (hearers & !self.unsynced[w] & self.counting[w], hearers & self.unsynced[w])
            } else {
                (0, hearers)
            };
            // They share the access grant start, and with it whether any slot has elapsed.
            let ags = self.shared.access_grant_start(&self.t);
            if ags + self.t.slot > now {
                in_step = 0;
            }
            while in_step != 0 {
                let n = w * 64 + in_step.trailing_zeros() as usize;
                in_step &= in_step - 1;
                self.count_down_from(n, now, ags);
            }
            while own != 0 {
                let n = w * 64 + own.trailing_zeros() as usize;
                own &= own - 1;
                self.unsync(n);
                self.count_down(n, now);
                self.nodes[n].sense.ppdu_starts(id, now, end, eifs, eifs_after_collision);
            }
        }
        if all {
            self.shared.ppdu_starts(id, now, end, eifs, eifs_after_collision);
        }
        self.ongoing.push(Ppdu { id, from, to, start: now, kind, eifs });
        self.schedule(end, TimerKind::PpduEnd(id));
    }

    /// A PPDU ends: every node that heard it finishes its reception; the addressee of a data
    /// PPDU delivers what it got and answers, the addressee of a response learns how its
    /// exchange went.
    fn end_ppdu(&mut self, now: Instant, id: u64) {
        let at = self.ongoing.iter().position(|p| p.id == id).expect("a PPDU on air");
        let ppdu = self.ongoing.swap_remove(at);
        let mut addressee_ok = false;
        // Heard by every node: the shared record ends the reception as a bystander does, once
        // for the nodes in step with it (the addressee takes its own record first).
        let all = self.heard_by_all[ppdu.from];
        if all {
            self.unsync(ppdu.to);
            self.shared.bystander_end(&ppdu, now, self.t.sifs);
        }
        for w in 0..self.words {
            // Only the nodes with their own record, if the shared one heard it.
            let mut hearers = self.hearers[ppdu.from * self.words + w];
            if all {
                hearers &= self.unsynced[w];
            }
            while hearers != 0 {
                let n = w * 64 + hearers.trailing_zeros() as usize;
                hearers &= hearers - 1;
                self.unsync(n);
                if n != ppdu.to {
                    self.nodes[n].sense.bystander_end(&ppdu, now, self.t.sifs);
                } else {
                    let sense = &mut self.nodes[n].sense;
                    sense.heard -= 1;
                    let error = match sense.rx {
                        Rx::Locked { ppdu: locked, interfered, .. } if locked == id => {
                            addressee_ok = match ppdu.kind {
                                PpduKind::Data { .. } => self.receive_data(now, &ppdu, interfered),
                                PpduKind::Response => interfered.is_none(),
                            };
                            (!addressee_ok).then_some(ppdu.eifs)
                        }
                        Rx::Garbled { eifs } if sense.heard == 0 => eifs,
                        _ => continue,
                    };
                    self.nodes[n].sense.reception_ends(now, error);
                }
                if all {
                    self.resync(n, now);
                }
            }
        }
        match ppdu.kind {
            PpduKind::Data { response } => {
                if addressee_ok {
                    let ex = self.nodes[ppdu.from].exchange.expect("an exchange");
                    let timing = &self.links[ex.link].timing;
                    let eifs = if ex.mpdus > 1 { timing.block_ack_eifs } else { timing.ack_eifs };
                    let respond =
                        TimerKind::Respond { from: ppdu.to, to: ppdu.from, duration: response, eifs };
                    self.schedule(now + self.t.sifs, respond);
                } else {
                    self.schedule(
                        now + self.t.response_timeout,
                        TimerKind::ExchangeFailed { node: ppdu.from },
                    );
                }
            }
            PpduKind::Response => {
                if addressee_ok {
                    self.exchange_succeeded(now, ppdu.to);
                } else {
                    self.exchange_failed(now, ppdu.to);
                }
            }
        }
    }

    /// The addressee decoded the PHY header of a data PPDU: each MPDU that ended before any
    /// overlap started gets through unless the channel loses it. Delivers those; true if any
    /// got through (the receiver then answers).
    fn receive_data(&mut self, now: Instant, ppdu: &Ppdu, interfered: Option<Instant>) -> bool {
        let ex = self.nodes[ppdu.from].exchange.expect("an exchange");
        let a = ex.ac.index();
        let link = &self.links[ex.link];
        let (mode, airtime) = (link.timing.mode, link.timing.airtime);
        let vht = matches!(mode, PhyMode::Vht { .. });
        let mut acked = 0u64;
        let mut offset = 0u64;
        for (i, m) in link.queues[a].iter().take(ex.mpdus).enumerate() {
            let single = ex.mpdus == 1 && !vht;
            offset =
                if single { m.bytes.as_bytes() } else { offset.next_multiple_of(4) + 4 + m.bytes.as_bytes() };
            let clean = interfered.is_none_or(|t| ppdu.start + airtime.byte_offset(offset) <= t);
            if !clean {
                break;
            }
            let per = link.errors.per(&mode, m.bytes.as_bytes());
            if per == 0.0 || self.error_rng.random::<f64>() >= per {
                acked |= 1 << i;
            }
        }
        self.nodes[ppdu.from].exchange.as_mut().expect("an exchange").acked = acked;
        for i in 0..ex.mpdus {
            if acked & (1 << i) == 0 {
                continue;
            }
            let m = &mut self.links[ex.link].queues[a][i];
            if let (Some(pkt), Some(seq)) = (m.pkt.take(), m.seq) {
                let dest = m.dest;
                let ready = self.links[ex.link].reorder[a].receive(seq, (pkt, dest));
                if let Some((pkt, dest)) = ready {
                    self.hand_up(now, ex.link, ex.ac, pkt, dest);
                }
                self.release(now, ex.link, ex.ac);
            }
        }
        acked != 0
    }

    /// Hands up what the reordering buffer of `link` no longer holds back.
    fn release(&mut self, now: Instant, link: usize, ac: AccessCategory) {
        while let Some((pkt, dest)) = self.links[link].reorder[ac.index()].release() {
            self.hand_up(now, link, ac, pkt, dest);
        }
    }

    /// A packet reached the receiver of `link`: out at its port, or into the AP's queue for the
    /// station it is for.
    fn hand_up(&mut self, now: Instant, link: usize, ac: AccessCategory, pkt: P, dest: usize) {
        let rx = self.links[link].to;
        if dest == rx {
            self.output.push_back((now, Port(rx as u16), pkt));
        } else if let Err((pkt, reason)) = self.enqueue(now, rx, dest, ac, pkt) {
            self.drops.push_back((Port(rx as u16), pkt, reason));
        }
    }

    /// Removes an MPDU given up by its sender: reports the packet (unless it had got through
    /// already) and lets the receiver's window move on.
    fn discard(&mut self, now: Instant, link: usize, ac: AccessCategory, m: Mpdu<P>, reason: DropReason) {
        let (a, from) = (ac.index(), self.links[link].from);
        self.dequeued(from, a, m.bytes);
        if let Some(adapter) = self.nodes[from].adapter.as_mut() {
            adapter.discarded(now - m.head_at.unwrap_or(now));
        }
        self.mark_head(link, a, now);
        if let Some(seq) = m.seq {
            self.links[link].reorder[a].skip(seq);
            self.release(now, link, ac);
        }
        if let Some(pkt) = m.pkt {
            self.drops.push_back((Port(from as u16), pkt, reason));
        }
    }

    /// The attempt limit of an MPDU of this exchange (`u32::MAX`: none).
    fn attempt_limit(&self, aggregated: bool) -> u32 {
        if aggregated {
            self.cfg.ampdu_retry_limit.unwrap_or(u32::MAX)
        } else {
            self.cfg.retry_limit
        }
    }

    /// Settles the MPDUs of an exchange: acknowledged ones leave the queue; the others stay
    /// first in line unless they used their last attempt. Returns whether any was given up.
    fn settle(&mut self, now: Instant, node: usize, ex: Exchange) -> bool {
        let limit = self.attempt_limit(ex.aggregated);
        let a = ex.ac.index();
        let (mut i, mut reset_cw) = (0, false);
        for k in 0..ex.mpdus {
            let queue = &mut self.links[ex.link].queues[a];
            if ex.acked & (1 << k) != 0 {
                let m = queue.remove(i).expect("an MPDU");
                self.dequeued(node, a, m.bytes);
                let size = m.bytes - self.mpdu_overhead();
                let n = &mut self.nodes[node];
                n.stats.mpdus_acked += 1;
                n.stats.acked_bytes += size;
                // Chen et al. 2015 (seed 004) eq. (6): Deliv and the transmit delay.
                if let Some(adapter) = n.adapter.as_mut() {
                    adapter.delivered(size, now - m.head_at.unwrap_or(now));
                }
            } else if queue[i].attempts >= limit {
                let attempts = queue[i].attempts;
                match self.at_retry_limit(node, ex.ac, attempts, limit) {
                    Decision::GiveUp => {
                        let m = self.links[ex.link].queues[a].remove(i).expect("an MPDU");
                        self.nodes[node].stats.mpdus_retry_dropped += 1;
                        self.discard(now, ex.link, ex.ac, m, DropReason::RetryLimit);
                        reset_cw = true;
                    }
                    Decision::Retry { reset_cw: reset } => {
                        reset_cw |= reset;
                        i += 1;
                    }
                }
            } else {
                i += 1;
            }
        }
        self.mark_head(ex.link, a, now);
        reset_cw
    }

    /// An MPDU of `node`'s category `ac` used `attempts` ≥ `limit` attempts, the last failed:
    /// 802.11 gives it up (§10.23.2.12); a station with Chen et al. 2015 (seed 004)'s
    /// adaptation runs its Algorithm 3, which may grant one more attempt.
    fn at_retry_limit(&mut self, node: usize, ac: AccessCategory, attempts: u32, limit: u32) -> Decision {
        let n = &mut self.nodes[node];
        let buffer = n.ac[ac.index()].queued;
        match n.adapter.as_mut() {
            Some(adapter) => adapter.decide(attempts, limit, buffer),
            None => Decision::GiveUp,
        }
    }

    /// The ACK or BlockAck came back.
    fn exchange_succeeded(&mut self, now: Instant, node: usize) {
        let ex = self.nodes[node].exchange.expect("an exchange");
        self.settle(now, node, ex);
        self.links[ex.link].rate.on_success();
        self.refresh_timing(ex.link);
        if node == 0 {
            if let ApQueueConfig::PerStation { .. } = self.cfg.ap_queue {
                self.ap_next[ex.ac.index()] = (ex.link + 1) % self.stations();
            }
        }
        let n = &mut self.nodes[node];
        n.stats.exchanges_ok += 1;
        let e = &mut n.ac[ex.ac.index()];
        e.backoff.reset(e.params.cw_min);
        let limit = e.params.txop_limit;
        if !limit.is_zero() && e.queued > 0 && now + self.t.sifs < ex.txop_start + limit {
            self.schedule(now + self.t.sifs, TimerKind::TxopNext { node });
        } else {
            self.end_txop(now, node, ex.ac);
        }
    }

    /// No response (ACK timeout), or a response that did not get through.
    fn exchange_failed(&mut self, now: Instant, node: usize) {
        let ex = self.nodes[node].exchange.take().expect("an exchange");
        set_bit(&mut self.exchanging, node, false);
        // CW resets when an MPDU is given up, and before the first attempt an adaptation grants
        // beyond the retry limit (Chen et al. 2015 (seed 004) Algorithm 3, lines 10-11).
        let reset_cw = self.settle(now, node, ex);
        self.links[ex.link].rate.on_failure();
        self.refresh_timing(ex.link);
        self.unsync(node);
        let n = &mut self.nodes[node];
        n.stats.exchanges_failed += 1;
        n.sense.timeout_end = n.sense.timeout_end.max(now);
        let e = &mut n.ac[ex.ac.index()];
        if reset_cw {
            e.backoff.reset(e.params.cw_min);
        } else {
            e.backoff.double(e.params.cw_max);
        }
        self.draw(node, ex.ac.index(), now);
    }

    /// After rate adaptation ran: the airtimes of the link's (new) mode.
    fn refresh_timing(&mut self, link: usize) {
        let mode = self.links[link].rate.mode();
        if mode != self.links[link].timing.mode {
            self.links[link].timing = LinkTiming::new(mode, &self.cfg);
        }
    }

    /// The TXOP is over: a new backoff (post-backoff) whether or not anything is left to send.
    fn end_txop(&mut self, now: Instant, node: usize, ac: AccessCategory) {
        self.nodes[node].exchange = None;
        set_bit(&mut self.exchanging, node, false);
        self.draw(node, ac.index(), now);
    }

    /// A lower category whose backoff ended with a higher one's: it counts as a failed
    /// attempt of its head MPDU, without going on air (ns-3 `NotifyInternalCollision`).
    fn internal_collision(&mut self, now: Instant, node: usize, ac: AccessCategory) {
        let link = self.choose_link(node, ac);
        let aggregated = self.cfg.aggregation.is_some_and(|g| g.aggregates(ac));
        let limit = self.attempt_limit(aggregated);
        let a = ac.index();
        let head = self.links[link].queues[a].front_mut().expect("queued");
        head.attempts += 1;
        let attempts = head.attempts;
        let decision = if attempts >= limit {
            self.at_retry_limit(node, ac, attempts, limit)
        } else {
            Decision::Retry { reset_cw: false }
        };
        let reset_cw = match decision {
            Decision::GiveUp => {
                let m = self.links[link].queues[a].pop_front().expect("queued");
                self.nodes[node].stats.mpdus_retry_dropped += 1;
                self.discard(now, link, ac, m, DropReason::RetryLimit);
                true
            }
            Decision::Retry { reset_cw } => reset_cw,
        };
        let n = &mut self.nodes[node];
        let e = &mut n.ac[a];
        if reset_cw {
            e.backoff.reset(e.params.cw_min);
        } else {
            e.backoff.double(e.params.cw_max);
        }
        self.draw(node, a, now);
    }
}
