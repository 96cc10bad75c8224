//! A scenario's Wi-Fi access networks (`[[wifi]]`, `docs/scenarios.md` "Wi-Fi"): how their
//! nodes join the network, what may be written, and the [`BssConfig`] each becomes. The element
//! itself, its model and its sources are `rtcbench_net::radio::wifi` (`docs/wifi.md`).

use rtcbench_net::radio::wifi::phy::PhyMode;
use rtcbench_net::radio::wifi::PhyError;
use rtcbench_net::radio::wifi::{
    ApQueueConfig, Band, BssConfig, EdcaParameterSet, ErrorModel, Interferer, QueueConfig, RateControl,
    RetryAdaptation, StationConfig,
};
use rtcbench_units::{Bitrate, Duration};

use super::limits::{MAX_DURATION, MAX_WIFI_QUEUE_PACKETS, MAX_WIFI_RETRY_LIMIT, MAX_WIFI_STATIONS};
use super::{
    within, ApEdca, ApQueueMode, PhySpec, PhyStandard, RadioSpec, RateControlSpec, ScenarioError,
    ScenarioSpec, StationSpec, WifiBand, WifiSpec,
};

/// The PHY mode of stations that give none, in a BSS that gives none: HT MCS 7 at 20 MHz with the
/// long guard interval (65 Mbit/s), the mode of Chen et al. 2015's testbed.
pub const DEFAULT_MCS: u8 = 7;

impl WifiSpec {
    /// The BSS's nodes by port: the AP (port 0), then the stations in file order.
    pub fn members(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.ap.as_str()).chain(self.stations.iter().map(|s| s.node.as_str()))
    }

    /// The port of `node` in this BSS (0 for the AP, i for the i-th station), if it is a member.
    pub fn port_of(&self, node: &str) -> Option<u16> {
        self.members().position(|n| n == node).map(|p| p as u16)
    }

    /// A station's radio link: its own fields, or those of its `position`.
    pub fn radio<'a>(&'a self, st: &'a StationSpec) -> Radio<'a> {
        let own = Radio {
            phy: st.phy.as_ref(),
            per: st.per.as_ref().map(|p| *p.get()),
            snr_db: st.snr_db.as_ref().map(|p| *p.get()),
            rate_control: st.rate_control.unwrap_or_default(),
        };
        st.position.as_ref().and_then(|p| self.positions.get(p.get())).map_or(own, RadioSpec::radio)
    }

    /// The PHY rate of every radio link the scenario allows the BSS's stations: each of its
    /// `positions` (a station at one has its link, whichever a variant picks) and each station's
    /// own link. The AP sends to a station at the station's rate, so these are every rate the
    /// BSS's airtime is spent at (a station's configured mode; ARF moves about it at run time).
    pub fn allowed_rates(&self) -> impl Iterator<Item = Bitrate> + '_ {
        let positions = self.positions.values().map(|p| p.phy.as_ref());
        let own = self.stations.iter().filter(|s| s.position.is_none()).map(|s| s.phy.as_ref());
        positions.chain(own).map(|phy| phy_mode(phy.or(self.phy.as_ref())).rate())
    }

    /// The name the transmit queues of the BSS's node at `port` have in `meta.links` and the links
    /// table: `<bss>:<node>`.
    pub fn queue_name(&self, port: u16) -> String {
        let node = self.members().nth(usize::from(port)).expect("a port of this BSS");
        format!("{}:{node}", self.name)
    }
}

/// A station's radio link to the AP, as [`WifiSpec::radio`] resolves it.
#[derive(Clone, Copy, Debug)]
pub struct Radio<'a> {
    /// `None`: the BSS's `phy`.
    pub phy: Option<&'a PhySpec>,
    pub per: Option<f64>,
    pub snr_db: Option<f64>,
    pub rate_control: RateControlSpec,
}

impl RadioSpec {
    /// The link a position describes.
    pub fn radio(&self) -> Radio<'_> {
        Radio {
            phy: self.phy.as_ref(),
            per: self.per.as_ref().map(|p| *p.get()),
            snr_db: self.snr_db.as_ref().map(|p| *p.get()),
            rate_control: self.rate_control.unwrap_or_default(),
        }
    }
}

/// The PHY mode a `phy` table describes (not yet validated).
fn phy_mode(p: Option<&PhySpec>) -> PhyMode {
    let Some(p) = p else { return PhyMode::ht(DEFAULT_MCS) };
    let mcs = p.mcs.as_ref().map_or(DEFAULT_MCS, |m| *m.get());
    let width_mhz = p.width_mhz.unwrap_or(20);
    let short_gi = p.short_gi.unwrap_or(false);
    match p.standard.unwrap_or_default() {
        PhyStandard::Ht => PhyMode::Ht { mcs, width_mhz, short_gi },
        PhyStandard::Vht => PhyMode::Vht { mcs, nss: p.streams.unwrap_or(1), width_mhz, short_gi },
        PhyStandard::Ofdm => {
            let mbps = p.rate.map_or(0, |r| u8::try_from(r.as_bps() / 1_000_000).unwrap_or(u8::MAX));
            PhyMode::NonHt { mbps }
        }
    }
}

/// The element a `[[wifi]]` entry describes, as the simulator builds it.
pub fn bss_config(w: &WifiSpec) -> BssConfig {
    let bss_phy = w.phy.as_ref();
    let stations = w
        .stations
        .iter()
        .map(|s| {
            let radio = w.radio(s);
            let mut station = StationConfig::fixed(phy_mode(radio.phy.or(bss_phy)));
            station.errors = match (radio.per, radio.snr_db) {
                (Some(per), _) => ErrorModel::Fixed { per },
                (None, Some(snr_db)) => ErrorModel::Snr { snr_db },
                (None, None) => ErrorModel::None,
            };
            station.rate_control = match radio.rate_control {
                RateControlSpec::Fixed => RateControl::Fixed,
                RateControlSpec::Arf => RateControl::arf(),
            };
            station.retry_adaptation = s.retry_adaptation.as_ref().map(|r| RetryAdaptation {
                interval: r.interval.unwrap_or(RetryAdaptation::INTERVAL),
                window: r.window.unwrap_or(RetryAdaptation::WINDOW),
                extension: *r.extension.get(),
                cl_threshold: *r.cl_threshold.get(),
                buffer_threshold: *r.buffer_threshold.get(),
            });
            station
        })
        .collect();
    let mut cfg = BssConfig::new(stations);
    cfg.name = w.name.clone();
    cfg.band = match w.band.unwrap_or_default() {
        WifiBand::Ghz5 => Band::Ghz5,
        // An HT BSS at 2.4 GHz: every station supports the short slot.
        WifiBand::Ghz2_4 => Band::Ghz2_4 { short_slot: true },
    };
    cfg.qos = w.qos.unwrap_or(true);
    if !w.aggregation.unwrap_or(true) {
        cfg.aggregation = None;
    }
    if let Some(r) = &w.retry_limit {
        cfg.retry_limit = *r.get();
        cfg.ampdu_retry_limit = Some(*r.get());
    }
    if w.ap_edca == Some(ApEdca::Hostapd) {
        cfg.edca_ap = EdcaParameterSet::hostapd_ap();
    }
    if let Some(q) = &w.ap_queue {
        let default = match cfg.ap_queue {
            ApQueueConfig::SharedPerAc { packets, .. } | ApQueueConfig::PerStation { packets, .. } => packets,
        };
        let packets = q.packets.as_ref().map_or(default, |p| *p.get());
        cfg.ap_queue = match q.mode.unwrap_or_default() {
            ApQueueMode::Shared => ApQueueConfig::SharedPerAc { packets, max_delay: q.max_delay },
            ApQueueMode::PerStation => ApQueueConfig::PerStation { packets, max_delay: q.max_delay },
        };
    }
    if let Some(q) = &w.station_queue {
        cfg.sta_queue = QueueConfig {
            packets: q.packets.as_ref().map_or(cfg.sta_queue.packets, |p| *p.get()),
            max_delay: q.max_delay,
        };
    }
    cfg.interferers = w
        .interferers
        .iter()
        .map(|i| Interferer {
            period: *i.period.get(),
            busy: *i.busy.get(),
            offset: i.offset.unwrap_or(Duration::ZERO),
            start: i.start,
            stop: i.stop,
            heard_by: w.members().map(|n| i.heard_by.iter().any(|h| h == n)).collect(),
        })
        .collect();
    if !w.hidden.is_empty() {
        let n = w.stations.len() + 1;
        let mut hearing = vec![vec![true; n]; n];
        for [a, b] in &w.hidden {
            let (a, b) = (w.port_of(a).expect("validated"), w.port_of(b).expect("validated"));
            hearing[usize::from(a)][usize::from(b)] = false;
            hearing[usize::from(b)][usize::from(a)] = false;
        }
        cfg.hearing = Some(hearing);
    }
    cfg
}

/// Checks every `[[wifi]]` entry: names, membership, PHY modes, error models, limits.
pub(super) fn validate(s: &ScenarioSpec, origin: &str) -> Result<(), ScenarioError> {
    let err = |field: String, m: String| Err(ScenarioError::new(origin, Some(field), m));
    let on_link = |node: &str| s.links.iter().any(|l| l.from == node || l.to == node);
    for (i, w) in s.wifi.iter().enumerate() {
        let p = format!("wifi.{}", w.name);
        if w.name.is_empty() || w.name.contains([':', '.']) {
            return err(
                format!("{p}.name"),
                "a BSS needs a name without ':' or '.' (it names its queues)".into(),
            );
        }
        if s.wifi[..i].iter().any(|o| o.name == w.name) {
            return err(format!("{p}.name"), format!("BSS name {:?} is used twice", w.name));
        }
        if s.wifi[..i].iter().any(|o| o.members().any(|n| n == w.ap)) {
            return err(format!("{p}.ap"), format!("{:?} is already a node of another BSS", w.ap));
        }
        if w.stations.is_empty() {
            return err(format!("{p}.stations"), "a BSS needs at least one station".into());
        }
        if w.stations.len() > MAX_WIFI_STATIONS {
            return err(
                format!("{p}.stations"),
                format!("{} stations; at most {MAX_WIFI_STATIONS}", w.stations.len()),
            );
        }
        if w.aggregation == Some(true) && w.qos == Some(false) {
            return err(format!("{p}.aggregation"), "A-MPDU aggregation needs a QoS BSS (qos = true)".into());
        }
        if let Some(r) = &w.retry_limit {
            within(origin, format!("{p}.retry_limit"), *r.get(), 1, MAX_WIFI_RETRY_LIMIT)?;
        }
        let queue = |field: String, packets: Option<u32>, max_delay: Option<Duration>| {
            if let Some(n) = packets {
                within(origin, format!("{field}.packets"), n, 1, MAX_WIFI_QUEUE_PACKETS)?;
            }
            if let Some(d) = max_delay {
                within(origin, format!("{field}.max_delay"), d, Duration::from_micros(1), MAX_DURATION)?;
            }
            Ok(())
        };
        if let Some(q) = &w.ap_queue {
            queue(format!("{p}.ap_queue"), q.packets.as_ref().map(|n| *n.get()), q.max_delay)?;
        }
        if let Some(q) = &w.station_queue {
            queue(format!("{p}.station_queue"), q.packets.as_ref().map(|n| *n.get()), q.max_delay)?;
        }
        if let Some(phy) = &w.phy {
            validate_phy(phy, &format!("{p}.phy"), origin)?;
        }
        for (k, st) in w.stations.iter().enumerate() {
            let sp = format!("{p}.stations.{k}");
            if st.node == w.ap || w.stations[..k].iter().any(|o| o.node == st.node) {
                return err(format!("{sp}.node"), format!("{:?} is already a node of this BSS", st.node));
            }
            if s.wifi.iter().enumerate().any(|(j, o)| j != i && o.members().any(|n| n == st.node)) {
                return err(format!("{sp}.node"), format!("{:?} is already a node of another BSS", st.node));
            }
            if on_link(&st.node) {
                return err(
                    format!("{sp}.node"),
                    format!(
                        "{:?} is also a link's node; a station reaches the network through its BSS only",
                        st.node
                    ),
                );
            }
            if let Some(at) = &st.position {
                let own =
                    st.phy.is_some() || st.per.is_some() || st.snr_db.is_some() || st.rate_control.is_some();
                if own {
                    return err(
                        sp,
                        "give either a `position` or the station's own phy, per, snr_db and rate_control"
                            .into(),
                    );
                }
                if !w.positions.contains_key(at.get()) {
                    let known: Vec<&str> = w.positions.keys().map(String::as_str).collect();
                    return err(
                        format!("{sp}.position"),
                        format!("{:?} is not one of the BSS's positions ({known:?})", at.get()),
                    );
                }
            }
            validate_radio(w.radio(st), &sp, origin)?;
        }
        for (name, at) in &w.positions {
            validate_radio(at.radio(), &format!("{p}.positions.{name}"), origin)?;
        }
        for (k, i) in w.interferers.iter().enumerate() {
            let ip = format!("{p}.interferers.{k}");
            let (period, busy) = (*i.period.get(), *i.busy.get());
            within(origin, format!("{ip}.period"), period, Duration::from_micros(1), MAX_DURATION)?;
            within(origin, format!("{ip}.busy"), busy, Duration::from_micros(1), period)?;
            if busy == period {
                return err(format!("{ip}.busy"), "a burst must be shorter than the period".into());
            }
            if i.heard_by.is_empty() {
                return err(
                    format!("{ip}.heard_by"),
                    "name the nodes that sense it (the AP, stations)".into(),
                );
            }
            if let Some(n) = i.heard_by.iter().find(|n| w.port_of(n).is_none()) {
                return err(format!("{ip}.heard_by"), format!("{n:?} is not a node of this BSS"));
            }
            if let (Some(a), Some(b)) = (i.start, i.stop) {
                if b <= a {
                    return err(format!("{ip}.stop"), "must be after `start`".into());
                }
            }
        }
        for (k, st) in w.stations.iter().enumerate() {
            let Some(r) = &st.retry_adaptation else { continue };
            let rp = format!("{p}.stations.{k}.retry_adaptation");
            within(origin, format!("{rp}.extension"), *r.extension.get(), 0, MAX_WIFI_RETRY_LIMIT)?;
            within(origin, format!("{rp}.cl_threshold"), *r.cl_threshold.get(), 0.0, 1e6)?;
            within(
                origin,
                format!("{rp}.buffer_threshold"),
                *r.buffer_threshold.get(),
                1,
                MAX_WIFI_QUEUE_PACKETS,
            )?;
            if let Some(t) = r.interval {
                within(
                    origin,
                    format!("{rp}.interval"),
                    t,
                    Duration::from_millis(1),
                    Duration::from_secs(60),
                )?;
            }
            if let Some(n) = r.window {
                within(origin, format!("{rp}.window"), n, 1, 1000)?;
            }
        }
        for (k, [a, b]) in w.hidden.iter().enumerate() {
            let field = format!("{p}.hidden.{k}");
            for n in [a, b] {
                if !w.stations.iter().any(|st| &st.node == n) {
                    return err(field, format!("{n:?} is not a station of this BSS"));
                }
            }
            if a == b {
                return err(field, "a station always hears itself; name two stations".into());
            }
        }
        if let Err(e) = bss_config(w).validate() {
            // What the checks above do not catch (a PHY mode that the element refuses).
            return err(p, e.to_string());
        }
    }
    Ok(())
}

fn validate_radio(r: Radio<'_>, p: &str, origin: &str) -> Result<(), ScenarioError> {
    if let Some(phy) = r.phy {
        validate_phy(phy, &format!("{p}.phy"), origin)?;
    }
    match (r.per, r.snr_db) {
        (Some(_), Some(_)) => {
            Err(ScenarioError::new(origin, Some(p.to_string()), "give either `per` or `snr_db`, not both"))
        }
        (Some(per), None) => within(origin, format!("{p}.per"), per, 0.0, 1.0),
        (None, Some(snr)) => within(origin, format!("{p}.snr_db"), snr, -20.0, 80.0),
        (None, None) => Ok(()),
    }
}

fn validate_phy(phy: &PhySpec, p: &str, origin: &str) -> Result<(), ScenarioError> {
    let err = |field: String, m: String| Err(ScenarioError::new(origin, Some(field), m));
    let standard = phy.standard.unwrap_or_default();
    match standard {
        PhyStandard::Ofdm => {
            if phy.rate.is_none() {
                return err(
                    format!("{p}.rate"),
                    "an OFDM mode needs its rate (6, 9, 12, 18, 24, 36, 48 or 54Mbps)".into(),
                );
            }
            for (name, set) in [
                ("mcs", phy.mcs.is_some()),
                ("streams", phy.streams.is_some()),
                ("width_mhz", phy.width_mhz.is_some()),
                ("short_gi", phy.short_gi.is_some()),
            ] {
                if set {
                    return err(format!("{p}.{name}"), "not a field of an OFDM (802.11a/g) mode".into());
                }
            }
        }
        PhyStandard::Ht | PhyStandard::Vht => {
            if phy.rate.is_some() {
                return err(
                    format!("{p}.rate"),
                    "HT and VHT modes are chosen by `mcs`; `rate` is for standard = \"ofdm\"".into(),
                );
            }
            if standard == PhyStandard::Ht && phy.streams.is_some() {
                return err(
                    format!("{p}.streams"),
                    "an HT MCS fixes its streams (MCS i has i / 8 + 1); `streams` is for VHT".into(),
                );
            }
        }
    }
    if let Err(e) = phy_mode(Some(phy)).validate() {
        let field = match e {
            PhyError::NonHtRate(_) => "rate",
            PhyError::HtMcs(_) | PhyError::VhtMcs(_) | PhyError::VhtCombination { .. } => "mcs",
            PhyError::Streams(_) => "streams",
            PhyError::Width { .. } => "width_mhz",
        };
        return err(format!("{p}.{field}"), e.to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use rtcbench_net::radio::wifi::{ApQueueConfig, Band, ErrorModel, RateControl};

    use super::super::{find_route, load, Hop, ScenarioError};
    use super::*;
    use rtcbench_net::radio::wifi::Port as WifiPort;

    /// A wired node W behind the AP, two stations (S1 at a position, S2 with its own link) and a
    /// call from S1 to W.
    const HOME: &str = r#"
id = "w"
duration = "10s"
[[links]]
name = "up"
from = "AP"
to = "W"
capacity = "10Mbps"
queue = { size = "100ms" }
[[links]]
name = "down"
from = "W"
to = "AP"
[[wifi]]
name = "wlan"
ap = "AP"
band = "2.4GHz"
aggregation = false
retry_limit = 5
ap_edca = "hostapd"
ap_queue = { mode = "per-station", packets = 50, max_delay = "300ms" }
station_queue = { packets = 20 }
phy = { mcs = 11 }
hidden = [["S1", "S2"]]
positions = { far = { phy = { mcs = 3 }, per = 0.1, rate_control = "arf" } }
[[wifi.interferers]]
period = "33ms"
busy = "10.75ms"
stop = "5s"
heard_by = ["AP"]
[[wifi.stations]]
node = "S1"
position = "far"
retry_adaptation = { extension = 3, cl_threshold = 0.5, buffer_threshold = 50 }
[[wifi.stations]]
node = "S2"
snr_db = 20.0
[[calls]]
from = "S1"
to = "W"
"#;

    fn spec(text: &str) -> ScenarioSpec {
        load(text, "w.toml", &[]).unwrap_or_else(|e| panic!("{e}")).remove(0).spec
    }

    fn error(text: &str) -> ScenarioError {
        load(text, "w.toml", &[]).expect_err("a mistake")
    }

    #[test]
    fn routes_cross_the_bss_as_one_hop_between_ports() {
        let s = spec(HOME);
        let route = |from, to| find_route(&s.links, &s.wifi, &[], from, to).unwrap();
        let up = Hop::Wifi { bss: 0, from: WifiPort(1), to: WifiPort(0) };
        assert_eq!(route("S1", "W"), [up, Hop::Link(0)]);
        assert_eq!(
            route("W", "S2"),
            [Hop::Link(1), Hop::Wifi { bss: 0, from: WifiPort(0), to: WifiPort(2) }]
        );
        // Station to station: one hop, which the BSS relays through the AP's queue.
        assert_eq!(route("S1", "S2"), [Hop::Wifi { bss: 0, from: WifiPort(1), to: WifiPort(2) }]);
        assert_eq!(route("S2", "AP"), [Hop::Wifi { bss: 0, from: WifiPort(2), to: WifiPort(0) }]);
        assert_eq!(find_route(&s.links, &s.wifi, &[], "S1", "S1"), None);
    }

    #[test]
    fn every_field_reaches_the_element() {
        let s = spec(HOME);
        let w = &s.wifi[0];
        assert_eq!(w.queue_name(0), "wlan:AP");
        assert_eq!(w.queue_name(2), "wlan:S2");
        let cfg = bss_config(w);
        assert_eq!(cfg.name, "wlan");
        assert_eq!(cfg.band, Band::Ghz2_4 { short_slot: true });
        assert!(cfg.qos && cfg.aggregation.is_none());
        assert_eq!((cfg.retry_limit, cfg.ampdu_retry_limit), (5, Some(5)));
        assert_eq!(cfg.edca_ap, EdcaParameterSet::hostapd_ap());
        let ms300 = Some(Duration::from_millis(300));
        assert_eq!(cfg.ap_queue, ApQueueConfig::PerStation { packets: 50, max_delay: ms300 });
        assert_eq!(cfg.sta_queue, QueueConfig { packets: 20, max_delay: None });
        // S1 takes its position's link; S2 its own, at the BSS's MCS.
        assert_eq!(cfg.stations[0].phy, PhyMode::ht(3));
        assert_eq!(cfg.stations[0].errors, ErrorModel::Fixed { per: 0.1 });
        assert_eq!(cfg.stations[0].rate_control, RateControl::arf());
        assert_eq!(cfg.stations[1].phy, PhyMode::ht(11));
        assert_eq!(cfg.stations[1].errors, ErrorModel::Snr { snr_db: 20.0 });
        assert_eq!(cfg.stations[1].rate_control, RateControl::Fixed);
        assert_eq!(cfg.stations[0].retry_adaptation, Some(RetryAdaptation::new(3, 0.5, 50)));
        assert_eq!(cfg.stations[1].retry_adaptation, None);
        let mut interferer = Interferer::periodic(
            Duration::from_millis(33),
            Duration::from_micros(10_750),
            vec![true, false, false],
        );
        interferer.stop = Some(Duration::from_secs(5));
        assert_eq!(cfg.interferers, [interferer]);
        let hearing = cfg.hearing.expect("a hidden pair");
        assert!(!hearing[1][2] && !hearing[2][1] && hearing[0][1] && hearing[2][0]);
    }

    #[test]
    fn defaults_are_ns3s_5ghz_ht_bss() {
        let s = spec(&HOME.replace("phy = { mcs = 11 }\n", "").replace("snr_db = 20.0\n", ""));
        let mut w = s.wifi[0].clone();
        w.band = None;
        w.aggregation = None;
        w.retry_limit = None;
        w.ap_edca = None;
        w.ap_queue = None;
        w.station_queue = None;
        w.hidden.clear();
        let cfg = bss_config(&w);
        let ns3 =
            BssConfig::new(vec![StationConfig::fixed(PhyMode::ht(3)), StationConfig::fixed(PhyMode::ht(7))]);
        assert_eq!(cfg.stations[1], ns3.stations[1]);
        assert_eq!(
            (cfg.band, cfg.qos, cfg.aggregation, cfg.retry_limit, cfg.edca_ap, cfg.ap_queue, cfg.sta_queue),
            (ns3.band, ns3.qos, ns3.aggregation, ns3.retry_limit, ns3.edca_ap, ns3.ap_queue, ns3.sta_queue)
        );
    }

    #[test]
    fn mistakes_name_the_field_and_what_is_allowed() {
        let cases: &[(&str, &str, &str, &str)] = &[
            ("name = \"wlan\"", "name = \"w.lan\"", "wifi.w.lan.name", "without ':' or '.'"),
            ("node = \"S2\"", "node = \"W\"", "wifi.wlan.stations.1.node", "also a link's node"),
            ("node = \"S2\"", "node = \"S1\"", "wifi.wlan.stations.1.node", "already a node of this BSS"),
            ("[[\"S1\", \"S2\"]]", "[[\"S1\", \"X\"]]", "wifi.wlan.hidden.0", "\"X\" is not a station"),
            (
                "aggregation = false",
                "aggregation = true\nqos = false",
                "wifi.wlan.aggregation",
                "needs a QoS BSS",
            ),
            ("snr_db = 20.0", "snr_db = 20.0\nper = 0.1", "wifi.wlan.stations.1", "either `per` or `snr_db`"),
            ("snr_db = 20.0", "per = 1.5", "wifi.wlan.stations.1.per", "out of range"),
            (
                "position = \"far\"",
                "position = \"far\"\nper = 0.2",
                "wifi.wlan.stations.0",
                "either a `position`",
            ),
            ("position = \"far\"", "position = \"near\"", "wifi.wlan.stations.0.position", "[\"far\"]"),
            ("phy = { mcs = 11 }", "phy = { mcs = 40 }", "wifi.wlan.phy.mcs", "allowed: 0 to 31"),
            ("phy = { mcs = 11 }", "phy = { mcs = 1, width_mhz = 80 }", "wifi.wlan.phy.width_mhz", "allowed"),
            ("phy = { mcs = 11 }", "phy = { standard = \"ofdm\" }", "wifi.wlan.phy.rate", "needs its rate"),
            (
                "phy = { mcs = 11 }",
                "phy = { standard = \"ofdm\", rate = \"11Mbps\" }",
                "wifi.wlan.phy.rate",
                "54",
            ),
            ("phy = { mcs = 11 }", "phy = { mcs = 3, streams = 2 }", "wifi.wlan.phy.streams", "VHT"),
            ("retry_limit = 5", "retry_limit = 0", "wifi.wlan.retry_limit", "out of range"),
            ("packets = 20", "packets = 0", "wifi.wlan.station_queue.packets", "out of range"),
            ("band = \"2.4GHz\"", "band = \"6GHz\"", "wifi", "unknown variant"),
            (
                "busy = \"10.75ms\"",
                "busy = \"33ms\"",
                "wifi.wlan.interferers.0.busy",
                "shorter than the period",
            ),
            ("busy = \"10.75ms\"", "busy = \"40ms\"", "wifi.wlan.interferers.0.busy", "out of range"),
            (
                "heard_by = [\"AP\"]",
                "heard_by = [\"W\"]",
                "wifi.wlan.interferers.0.heard_by",
                "not a node of this BSS",
            ),
            (
                "stop = \"5s\"",
                "stop = \"5s\"\nstart = \"6s\"",
                "wifi.wlan.interferers.0.stop",
                "after `start`",
            ),
            (
                "extension = 3",
                "extension = 100",
                "wifi.wlan.stations.0.retry_adaptation.extension",
                "out of range",
            ),
            (
                "cl_threshold = 0.5, ",
                "",
                "wifi[0].stations[0].retry_adaptation",
                "missing field `cl_threshold`",
            ),
        ];
        for (old, new, field, message) in cases {
            assert!(HOME.contains(old), "{old}");
            let e = error(&HOME.replacen(old, new, 1));
            assert!(e.field.as_deref().unwrap_or_default().starts_with(field), "{new}: {e}");
            assert!(e.to_string().contains(message), "{new}: {e}");
            assert!(e.line.is_some(), "{new}: {e}");
        }
        // A link may not take a name the BSS's queues have.
        let e = error(&HOME.replace("name = \"up\"", "name = \"wlan:AP\""));
        assert_eq!(e.field.as_deref(), Some("links.wlan:AP"), "{e}");
        // Calls reach stations, and nothing else that is not a node.
        let e = error(&HOME.replace("from = \"S1\"\nto = \"W\"", "from = \"S3\"\nto = \"W\""));
        assert!(e.to_string().contains("\"S3\" is not a node"), "{e}");
    }

    #[test]
    fn a_set_of_positions_varies_a_stations_whole_link() {
        let text = HOME
            .replace("positions = {", "positions = { near = { phy = { mcs = 7 } }, ")
            .replace("position = \"far\"", "position = [\"near\", \"far\"]");
        let v = load(&text, "w.toml", &[]).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].variant, "position=near");
        let phys: Vec<PhyMode> = v.iter().map(|s| bss_config(&s.spec.wifi[0]).stations[0].phy).collect();
        assert_eq!(phys, [PhyMode::ht(7), PhyMode::ht(3)]);
        // A resolved variant reloads to itself.
        let again = load(&v[1].to_toml(), "r", &[]).unwrap();
        assert_eq!(again[0].to_toml(), v[1].to_toml());
    }

    #[test]
    fn an_override_names_a_station_by_its_node() {
        let sets = ["wifi.wlan.stations.S2.snr_db=12".to_string()];
        let v = load(HOME, "w.toml", &sets).unwrap();
        assert_eq!(v[0].spec.wifi[0].stations[1].snr_db.as_ref().map(|p| *p.get()), Some(12.0));
        // By its index as before; an unknown node is named with those there are.
        let v = load(HOME, "w.toml", &["wifi.wlan.stations.1.snr_db=15".to_string()]).unwrap();
        assert_eq!(v[0].spec.wifi[0].stations[1].snr_db.as_ref().map(|p| *p.get()), Some(15.0));
        let e = load(HOME, "w.toml", &["wifi.wlan.stations.S9.snr_db=12".to_string()]).unwrap_err();
        assert!(e.message.contains("\"S1\", \"S2\""), "{e}");
    }
}
