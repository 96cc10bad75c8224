//! A scenario's LTE cells (`[[lte]]`, `docs/scenarios.md` "LTE"): how their nodes join the
//! network, what may be written, and the [`CellConfig`] each becomes. The element itself, its
//! model and its sources are `rtcbench_net::radio::lte` (`docs/lte.md`).

use rtcbench_net::radio::lte::{
    CellConfig, ChannelQuality, CqiReporting, DlScheduler, HarqConfig, RlcConfig, UeConfig, UlAccess,
};
use rtcbench_units::{DataSize, Duration};

use super::limits::{MAX_DURATION, MAX_LTE_BUFFER, MAX_LTE_UES};
use super::{
    within, LteScheduler, LteSpec, LteUlAccess, Param, ScenarioError, ScenarioSpec, UeRadioSpec, UeSpec,
};

/// The carrier of a fading channel that gives none, GHz: the 2-GHz band of 3GPP's macro-cell
/// cases (TR 36.814), which RFC 8869 §2 uses.
pub const DEFAULT_CARRIER_GHZ: f64 = 2.0;

/// How often a UE reports its channel quality in a scenario that does not say: periodic wideband
/// CQI reports come every 2 to 160 ms (TS 36.213 §7.2.2); 5 ms is a common configuration, and
/// finer than a fading channel at walking or city speeds changes (its coherence time at 30 km/h
/// and 2 GHz is about 8 ms).
pub const DEFAULT_CQI_PERIOD: Duration = Duration::from_millis(5);

/// SR periods TS 36.213 Table 10.1.5-1 allows, ms.
const SR_PERIODS_MS: [u32; 7] = [1, 2, 5, 10, 20, 40, 80];

/// Downlink or uplink, as the queue names and the links table say them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LteDirection {
    /// The eNB's buffer for the UE.
    Down,
    /// The UE's own buffer.
    Up,
}

impl LteDirection {
    pub const BOTH: [Self; 2] = [Self::Down, Self::Up];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Down => "dl",
            Self::Up => "ul",
        }
    }
}

impl LteSpec {
    /// The cell's nodes by port: the eNB (port 0), then the UEs in file order.
    pub fn members(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.enb.as_str()).chain(self.ues.iter().map(|u| u.node.as_str()))
    }

    /// The port of `node` in this cell (0 for the eNB, i for the i-th UE), if it is a member.
    pub fn port_of(&self, node: &str) -> Option<u16> {
        self.members().position(|n| n == node).map(|p| p as u16)
    }

    /// A UE's channel: its own fields, or those of its `position`.
    pub fn radio<'a>(&'a self, ue: &'a UeSpec) -> &'a UeRadioSpec {
        ue.position.as_ref().and_then(|p| self.positions.get(p.get())).unwrap_or(&ue.radio)
    }

    /// The channel in direction `dir` of every place the scenario allows the cell's UEs: each of
    /// its `positions` (a UE at one has its channel, whichever a variant picks) and each UE's own.
    pub fn allowed_channels(&self, dir: LteDirection) -> impl Iterator<Item = ChannelQuality> + '_ {
        let own = self.ues.iter().filter(|u| u.position.is_none()).map(|u| &u.radio);
        self.positions.values().chain(own).filter_map(move |r| r.channel(dir))
    }

    /// The name UE `k`'s buffer of direction `dir` has in `meta.links` and the links table:
    /// `<cell>:<ue>:dl` (at the eNB) or `<cell>:<ue>:ul` (at the UE).
    pub fn queue_name(&self, k: usize, dir: LteDirection) -> String {
        format!("{}:{}:{}", self.name, self.ues[k].node, dir.as_str())
    }
}

impl UeRadioSpec {
    fn own(&self) -> bool {
        self.cqi.is_some()
            || self.dl_cqi.is_some()
            || self.ul_cqi.is_some()
            || self.sinr_db.is_some()
            || self.dl_sinr_db.is_some()
            || self.ul_sinr_db.is_some()
            || self.speed_kmh.is_some()
            || self.carrier_ghz.is_some()
    }

    /// One direction's channel: its own SINR or CQI, else the CQI or SINR given for both, with
    /// fading on a SINR when a speed is given.
    fn channel(&self, dir: LteDirection) -> Option<ChannelQuality> {
        let (own_cqi, own_sinr) = match dir {
            LteDirection::Down => (&self.dl_cqi, &self.dl_sinr_db),
            LteDirection::Up => (&self.ul_cqi, &self.ul_sinr_db),
        };
        let cqi = |c: &Param<u8>| ChannelQuality::Cqi { cqi: *c.get() };
        let sinr = |s: &Param<f64>| match &self.speed_kmh {
            Some(v) => ChannelQuality::Fading {
                mean_sinr_db: *s.get(),
                speed_kmh: *v.get(),
                carrier_ghz: self.carrier_ghz.unwrap_or(DEFAULT_CARRIER_GHZ),
            },
            None => ChannelQuality::Sinr { sinr_db: *s.get() },
        };
        own_sinr
            .as_ref()
            .map(sinr)
            .or_else(|| own_cqi.as_ref().map(cqi))
            .or_else(|| self.cqi.as_ref().map(cqi))
            .or_else(|| self.sinr_db.as_ref().map(sinr))
    }
}

/// The cell a validated `[[lte]]` entry describes.
pub fn cell_config(l: &LteSpec) -> CellConfig {
    let ues = l
        .ues
        .iter()
        .map(|u| {
            let radio = l.radio(u);
            let channel = |dir| radio.channel(dir).expect("validated: every UE has a channel");
            UeConfig { dl: channel(LteDirection::Down), ul: channel(LteDirection::Up), sr_offset_ttis: None }
        })
        .collect();
    let mut cfg = CellConfig::new(ues);
    cfg.name = l.name.clone();
    if let Some(b) = l.bandwidth {
        cfg.bandwidth = b;
    }
    cfg.dl_layers = l.dl_layers.unwrap_or(1);
    cfg.dl_scheduler = match l.scheduler.unwrap_or_default() {
        LteScheduler::Pf => DlScheduler::proportional_fair(),
        LteScheduler::Rr => DlScheduler::RoundRobin,
    };
    cfg.ul_max_mcs = l.ul_max_mcs;
    cfg.ul_pucch_prb = l.ul_pucch_prb.unwrap_or(0);
    cfg.ul_access = match &l.ul_access {
        Some(LteUlAccess::Named(_)) => UlAccess::Ideal,
        Some(LteUlAccess::Sr { sr_period }) => {
            let mut sr = UlAccess::scheduling_request();
            if let UlAccess::SchedulingRequest { period_ttis, .. } = &mut sr {
                *period_ttis = sr_period.as_millis() as u32;
            }
            sr
        }
        None => UlAccess::scheduling_request(),
    };
    if let Some(bler) = &l.harq_bler {
        cfg.harq = HarqConfig { bler: bler.clone() };
    }
    let cqi_period = l.cqi_period.unwrap_or(DEFAULT_CQI_PERIOD);
    cfg.cqi = CqiReporting { period_ttis: (cqi_period.as_micros() / 1000) as u32, delay_ttis: 0 };
    cfg.rlc = RlcConfig {
        buffer: l.buffer.as_ref().map_or(RlcConfig::deep().buffer, |b| *b.get()),
        ue_buffer: l.ue_buffer.as_ref().map(|b| *b.get()),
        discard_timer: l.discard_timer.as_ref().map(|d| *d.get()),
        ..RlcConfig::deep()
    };
    cfg.core_delay = l.core_delay.unwrap_or(Duration::ZERO);
    cfg
}

pub(super) fn validate(s: &ScenarioSpec, origin: &str) -> Result<(), ScenarioError> {
    let err = |field: String, m: String| Err(ScenarioError::new(origin, Some(field), m));
    let on_link = |node: &str| s.links.iter().any(|l| l.from == node || l.to == node);
    let in_wifi = |node: &str| s.wifi.iter().any(|w| w.members().any(|n| n == node));
    for (i, l) in s.lte.iter().enumerate() {
        let p = format!("lte.{}", l.name);
        if l.name.is_empty() || l.name.contains([':', '.']) {
            return err(
                format!("{p}.name"),
                "a cell needs a name without ':' or '.' (it names its buffers)".into(),
            );
        }
        if s.lte[..i].iter().any(|o| o.name == l.name) || s.wifi.iter().any(|w| w.name == l.name) {
            return err(format!("{p}.name"), format!("name {:?} is used twice (cells and BSSes)", l.name));
        }
        if s.lte[..i].iter().any(|o| o.members().any(|n| n == l.enb)) || in_wifi(&l.enb) {
            return err(format!("{p}.enb"), format!("{:?} is already a node of another cell or BSS", l.enb));
        }
        if l.ues.is_empty() || l.ues.len() > MAX_LTE_UES {
            return err(
                format!("{p}.ues"),
                format!("a cell needs 1 to {MAX_LTE_UES} UEs, not {}", l.ues.len()),
            );
        }
        if let Some(n) = l.dl_layers {
            within(origin, format!("{p}.dl_layers"), n, 1, 2)?;
        }
        if let Some(m) = l.ul_max_mcs {
            within(origin, format!("{p}.ul_max_mcs"), m, 0, 28)?;
        }
        if let Some(LteUlAccess::Sr { sr_period }) = &l.ul_access {
            let ms = sr_period.as_micros();
            if ms % 1000 != 0 || !SR_PERIODS_MS.contains(&((ms / 1000) as u32)) {
                return err(
                    format!("{p}.ul_access.sr_period"),
                    format!(
                        "must be one of {SR_PERIODS_MS:?} ms (TS 36.213 Table 10.1.5-1), not {sr_period}"
                    ),
                );
            }
        }
        if let Some(c) = l.cqi_period {
            let us = c.as_micros();
            if us % 1000 != 0 || !(1..=160).contains(&(us / 1000)) {
                return err(format!("{p}.cqi_period"), format!("must be a whole 1 to 160 ms, not {c}"));
            }
        }
        if let Some(bler) = &l.harq_bler {
            let ok = (1..=8).contains(&bler.len())
                && bler.iter().all(|b| (0.0..=1.0).contains(b))
                && bler.last().is_some_and(|&b| b < 1.0);
            if !ok {
                return err(
                    format!("{p}.harq_bler"),
                    format!(
                        "1 to 8 probabilities in [0, 1], one per HARQ transmission, the last below 1; found {bler:?}"
                    ),
                );
            }
        }
        for (name, b) in [("buffer", &l.buffer), ("ue_buffer", &l.ue_buffer)] {
            if let Some(b) = b {
                within(origin, format!("{p}.{name}"), *b.get(), DataSize::bytes(1500), MAX_LTE_BUFFER)?;
            }
        }
        if let Some(d) = &l.discard_timer {
            within(origin, format!("{p}.discard_timer"), *d.get(), Duration::from_millis(1), MAX_DURATION)?;
        }
        if let Some(d) = l.core_delay {
            within(origin, format!("{p}.core_delay"), d, Duration::ZERO, Duration::from_secs(10))?;
        }
        for (k, u) in l.ues.iter().enumerate() {
            let up = format!("{p}.ues.{k}");
            if u.node == l.enb || l.ues[..k].iter().any(|o| o.node == u.node) {
                return err(format!("{up}.node"), format!("{:?} is already a node of this cell", u.node));
            }
            let elsewhere = s.lte.iter().enumerate().any(|(j, o)| j != i && o.members().any(|n| n == u.node));
            if elsewhere || in_wifi(&u.node) {
                return err(
                    format!("{up}.node"),
                    format!("{:?} is already a node of another cell or BSS", u.node),
                );
            }
            if on_link(&u.node) {
                return err(
                    format!("{up}.node"),
                    format!(
                        "{:?} is also a link's node; a UE reaches the network through its cell only",
                        u.node
                    ),
                );
            }
            if let Some(at) = &u.position {
                if u.radio.own() {
                    return err(
                        up,
                        "give either a `position` or the UE's own cqi, sinr_db and speed_kmh".into(),
                    );
                }
                if !l.positions.contains_key(at.get()) {
                    let known: Vec<&str> = l.positions.keys().map(String::as_str).collect();
                    return err(
                        format!("{up}.position"),
                        format!("{:?} is not one of the cell's positions ({known:?})", at.get()),
                    );
                }
            }
            validate_radio(l.radio(u), &up, origin)?;
        }
        for (name, at) in &l.positions {
            validate_radio(at, &format!("{p}.positions.{name}"), origin)?;
        }
        cell_config(l).validate().map_err(|e| ScenarioError::new(origin, Some(p.clone()), e.to_string()))?;
    }
    Ok(())
}

fn validate_radio(r: &UeRadioSpec, field: &str, origin: &str) -> Result<(), ScenarioError> {
    for (name, cqi) in [("cqi", &r.cqi), ("dl_cqi", &r.dl_cqi), ("ul_cqi", &r.ul_cqi)] {
        if let Some(c) = cqi {
            within(origin, format!("{field}.{name}"), *c.get(), 0, 15)?;
        }
    }
    for (name, sinr) in
        [("sinr_db", &r.sinr_db), ("dl_sinr_db", &r.dl_sinr_db), ("ul_sinr_db", &r.ul_sinr_db)]
    {
        if let Some(v) = sinr {
            within(origin, format!("{field}.{name}"), *v.get(), -20.0, 60.0)?;
        }
    }
    if let Some(v) = &r.speed_kmh {
        within(origin, format!("{field}.speed_kmh"), *v.get(), 0.0, 500.0)?;
        let sinr = r.sinr_db.is_some() || r.dl_sinr_db.is_some() || r.ul_sinr_db.is_some();
        if !sinr {
            return Err(ScenarioError::new(
                origin,
                Some(format!("{field}.speed_kmh")),
                "fading needs a mean SINR (sinr_db, dl_sinr_db or ul_sinr_db)".to_string(),
            ));
        }
    }
    if let Some(f) = r.carrier_ghz {
        within(origin, format!("{field}.carrier_ghz"), f, 0.4, 6.0)?;
    }
    for dir in LteDirection::BOTH {
        if r.channel(dir).is_none() {
            return Err(ScenarioError::new(
                origin,
                Some(field.to_string()),
                format!(
                    "the {} channel needs a quality: cqi or {d}_cqi (0-15), or sinr_db or {d}_sinr_db (dB)",
                    if dir == LteDirection::Down { "downlink" } else { "uplink" },
                    d = dir.as_str()
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use rtcbench_net::radio::lte::Bandwidth;

    use super::super::{find_route, load, Hop, ScenarioError};
    use super::*;
    use rtcbench_net::radio::lte::Port as LtePort;

    /// A wired node W behind the eNB, two UEs (U1 at a position, U2 with its own fading
    /// channel) and a call from U1 to W.
    const CELL: &str = r#"
id = "c"
duration = "10s"
[[links]]
name = "up"
from = "ENB"
to = "W"
capacity = "1Gbps"
queue = { size = "100ms" }
[[links]]
name = "down"
from = "W"
to = "ENB"
[[lte]]
name = "cell"
enb = "ENB"
bandwidth = "10MHz"
dl_layers = 2
scheduler = "rr"
ul_max_mcs = 20
ul_access = { sr_period = "5ms" }
harq_bler = [0.2, 0.02]
buffer = "1MB"
ue_buffer = "100kB"
discard_timer = "300ms"
positions = { near = { dl_cqi = 13, ul_cqi = 10 } }
[[lte.ues]]
node = "U1"
position = "near"
[[lte.ues]]
node = "U2"
sinr_db = 12.0
ul_cqi = 4
speed_kmh = 30.0
[[calls]]
from = "U1"
to = "W"
"#;

    fn spec(text: &str) -> ScenarioSpec {
        load(text, "c.toml", &[]).unwrap_or_else(|e| panic!("{e}")).remove(0).spec
    }

    fn error(text: &str) -> ScenarioError {
        load(text, "c.toml", &[]).expect_err("a mistake")
    }

    #[test]
    fn routes_reach_a_ue_through_its_enb_only() {
        let s = spec(CELL);
        let route = |from, to| find_route(&s.links, &s.wifi, &s.lte, from, to).unwrap();
        let up1 = Hop::Lte { cell: 0, from: LtePort(1), to: LtePort(0) };
        assert_eq!(route("U1", "W"), [up1, Hop::Link(0)]);
        assert_eq!(route("W", "U2"), [Hop::Link(1), Hop::Lte { cell: 0, from: LtePort(0), to: LtePort(2) }]);
        // UE to UE: up to the eNB's node, then down.
        assert_eq!(route("U1", "U2"), [up1, Hop::Lte { cell: 0, from: LtePort(0), to: LtePort(2) }]);
        assert_eq!(find_route(&s.links, &s.wifi, &s.lte, "U1", "U1"), None);
    }

    #[test]
    fn a_cell_entry_becomes_its_cell_config() {
        let s = spec(CELL);
        let l = &s.lte[0];
        assert_eq!(l.queue_name(1, LteDirection::Down), "cell:U2:dl");
        assert_eq!(l.queue_name(0, LteDirection::Up), "cell:U1:ul");
        let c = cell_config(l);
        assert_eq!((c.name.as_str(), c.bandwidth, c.dl_layers), ("cell", Bandwidth::Mhz10, 2));
        assert_eq!(c.dl_scheduler, DlScheduler::RoundRobin);
        assert_eq!(c.ul_max_mcs, Some(20));
        assert!(matches!(c.ul_access, UlAccess::SchedulingRequest { period_ttis: 5, .. }));
        assert_eq!(c.harq.bler, [0.2, 0.02]);
        assert_eq!(c.cqi, CqiReporting { period_ttis: 5, delay_ttis: 0 });
        assert_eq!(
            (c.rlc.buffer, c.rlc.ue_buffer),
            (DataSize::bytes(1_000_000), Some(DataSize::bytes(100_000)))
        );
        assert_eq!(c.rlc.discard_timer, Some(Duration::from_millis(300)));
        // The position's CQIs; the UE's own SINR with fading down, its own CQI up.
        assert_eq!(c.ues[0].dl, ChannelQuality::Cqi { cqi: 13 });
        assert_eq!(c.ues[0].ul, ChannelQuality::Cqi { cqi: 10 });
        let fading =
            ChannelQuality::Fading { mean_sinr_db: 12.0, speed_kmh: 30.0, carrier_ghz: DEFAULT_CARRIER_GHZ };
        assert_eq!(c.ues[1].dl, fading);
        assert_eq!(c.ues[1].ul, ChannelQuality::Cqi { cqi: 4 });
        assert!(c.validate().is_ok());
    }

    #[test]
    fn mistakes_name_their_field() {
        let cases = [
            ("dl_layers = 2", "dl_layers = 4", "lte.cell.dl_layers"),
            (
                "ul_access = { sr_period = \"5ms\" }",
                "ul_access = { sr_period = \"7ms\" }",
                "lte.cell.ul_access.sr_period",
            ),
            ("harq_bler = [0.2, 0.02]", "harq_bler = [0.2, 1.0]", "lte.cell.harq_bler"),
            ("harq_bler = [0.2, 0.02]", "cqi_period = \"0.5ms\"", "lte.cell.cqi_period"),
            ("ue_buffer = \"100kB\"", "ue_buffer = \"100B\"", "lte.cell.ue_buffer"),
            ("position = \"near\"", "position = \"far\"", "lte.cell.ues.0.position"),
            ("ul_cqi = 4", "ul_cqi = 16", "lte.cell.ues.1.ul_cqi"),
            ("node = \"U2\"", "node = \"W\"", "lte.cell.ues.1.node"),
            ("name = \"cell\"", "name = \"a:b\"", "lte.a:b.name"),
        ];
        for (from, to, field) in cases {
            assert!(CELL.contains(from), "{from}");
            let e = error(&CELL.replacen(from, to, 1));
            assert_eq!(e.field.as_deref(), Some(field), "{to}: {e}");
        }
        // A UE with no channel for a direction.
        let e = error(&CELL.replacen("sinr_db = 12.0\n", "", 1).replacen("speed_kmh = 30.0\n", "", 1));
        assert_eq!(e.field.as_deref(), Some("lte.cell.ues.1"), "{e}");
        assert!(e.to_string().contains("downlink channel needs a quality"), "{e}");
        // A link may not take a buffer's name.
        let e = error(&CELL.replacen("name = \"up\"", "name = \"cell:U1:ul\"", 1));
        assert!(e.to_string().contains("UE's buffer"), "{e}");
    }

    #[test]
    fn positions_and_channels_take_sets_of_values() {
        let text = CELL.replacen("dl_cqi = 13", "dl_cqi = [13, 7]", 1);
        let runs = load(&text, "c.toml", &[]).unwrap_or_else(|e| panic!("{e}"));
        let cqis: Vec<_> = runs.iter().map(|r| cell_config(&r.spec.lte[0]).ues[0].dl.clone()).collect();
        assert_eq!(cqis, [ChannelQuality::Cqi { cqi: 13 }, ChannelQuality::Cqi { cqi: 7 }]);
    }
}
