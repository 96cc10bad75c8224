//! The plans every driver builds from: the network (`NetworkPlan`, what an emulation relay is
//! configured with), the calls (`CallPlan`, what live agents build their endpoints from) and the
//! run (`RunPlan`, its `meta`). They must survive their trip through JSON unchanged, for every
//! built-in scenario.

use rtcbench_net::link::LinkConfig;
use rtcbench_scenario::elements::NetworkPlan;
use rtcbench_scenario::{builtin, load};

#[test]
fn every_built_in_link_configuration_survives_json() {
    let (mut links, mut traced, mut mahimahi, mut aqm, mut radio) = (0, 0, 0, 0, 0);
    for (id, _, _) in builtin::BUILTIN {
        let (text, origin) = builtin::find(id).unwrap_or_else(|| panic!("no built-in {id}"));
        for s in load(text, &origin, &[]).unwrap_or_else(|e| panic!("{e}")) {
            let plan = NetworkPlan::new(&s, 7).unwrap_or_else(|e| panic!("{id}: {e}"));
            let json = serde_json::to_value(&plan).expect("a plan serialises");
            let back: Vec<LinkConfig> =
                serde_json::from_value(json["links"].clone()).unwrap_or_else(|e| panic!("{id}: {e}"));
            assert_eq!(back, plan.links, "{id}@{}", s.variant);
            links += back.len();
            traced += s.capacity_traces.iter().flatten().count();
            mahimahi += back.iter().filter(|l| l.opportunities.is_some()).count();
            aqm += back.iter().filter(|l| l.discipline != Default::default()).count();
            let elements = plan.links.len() + plan.bsses.len() + plan.cells.len();
            for route in &plan.routes {
                assert!(!route.hops.is_empty() && route.hops.iter().all(|h| (h.element as usize) < elements));
            }
            let back: NetworkPlan = serde_json::from_value(json).unwrap_or_else(|e| panic!("{id}: {e}"));
            assert_eq!((back.bsses, back.cells), (plan.bsses.clone(), plan.cells.clone()), "{id}");
            radio += plan.bsses.len() + plan.cells.len();
        }
    }
    // The round trip covered capacity traces and AQMs, not only constant drop-tail links.
    assert!(
        links >= 200 && traced >= 3 && mahimahi >= 1 && aqm >= 4 && radio >= 20,
        "{links} links, {traced} traced ({mahimahi} mahimahi), {aqm} with an AQM, {radio} BSSes and cells"
    );
}

#[test]
fn a_route_is_the_fewest_hop_chain_in_both_directions() {
    let (text, origin) = builtin::find("rfc8867-5.1").expect("built in");
    let s = load(text, &origin, &[]).expect("loads").remove(0);
    let plan = NetworkPlan::new(&s, 1).expect("plans");
    let names = |r: &rtcbench_scenario::elements::RoutePlan| {
        r.hops.iter().map(|h| plan.links[h.element as usize].name.as_str()).collect::<Vec<_>>()
    };
    assert_eq!(plan.routes.len(), plan.nodes.len() * (plan.nodes.len() - 1));
    for r in &plan.routes {
        let chain = names(r);
        assert_eq!(chain.len(), 1, "{} → {}: {chain:?}", r.from, r.to);
    }
}

#[test]
fn every_built_in_call_plan_survives_json() {
    use rtcbench_rtp::CallPlan;
    use rtcbench_scenario::calls::run_calls;
    use rtcbench_scenario::elements::call_plan;
    use rtcbench_units::Instant;
    let mut calls = 0;
    for (id, _, _) in builtin::BUILTIN {
        let (text, origin) = builtin::find(id).unwrap_or_else(|| panic!("no built-in {id}"));
        for s in load(text, &origin, &[]).unwrap_or_else(|e| panic!("{e}")) {
            let end = Instant::ZERO + *s.spec.duration.get();
            for (k, c) in run_calls(&s.spec).iter().enumerate() {
                let plan = call_plan(&c.spec, k as u32, &c.label, &s.spec.controller, 5, end);
                let json = serde_json::to_string(&plan).expect("a plan serialises");
                let back: CallPlan = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{id}: {e}"));
                assert_eq!(back, plan, "{id}@{} call {k}", s.variant);
                calls += 1;
            }
        }
    }
    assert!(calls >= 180, "{calls} calls");
}

/// A run's `meta` is planned from the scenario alone, the same for every driver: for every
/// built-in variant it is consistent (flow ids are positions, every flow's bottleneck is on its
/// path, every path names links of the run) and survives JSON both ways.
#[test]
fn every_built_in_run_is_planned_without_running() {
    use rtcbench_scenario::run::{Meta, RunPlan};
    let (mut runs, mut radio_flows) = (0, 0);
    for (id, _, _) in builtin::BUILTIN {
        let (text, origin) = builtin::find(id).unwrap_or_else(|| panic!("no built-in {id}"));
        for s in load(text, &origin, &[]).unwrap_or_else(|e| panic!("{e}")) {
            let plan = RunPlan::new(&s, "gcc", 3).unwrap_or_else(|e| panic!("{id}: {e}"));
            let meta = &plan.meta;
            let link_names: Vec<&str> = meta.links.iter().map(|l| l.name.as_str()).collect();
            for (k, f) in meta.flows.iter().enumerate() {
                assert_eq!(f.id as usize, k, "{id}: flow ids are positions");
                assert!(!f.path.is_empty(), "{id}: {} has a path", f.name);
                assert!(f.path.iter().all(|p| link_names.contains(&p.as_str())), "{id}: {:?}", f.path);
                assert!(f.path.contains(&f.bottleneck), "{id}: {} bottleneck {}", f.name, f.bottleneck);
                assert!(f.start_s <= f.stop_s && f.stop_s <= meta.duration_s);
            }
            radio_flows += meta.flows.iter().filter(|f| f.path.iter().any(|p| p.contains(':'))).count();
            let planned_flows = plan.calls.len() * 2 + plan.tcp.len() * 2 + plan.cbr.len();
            assert!(meta.flows.len() >= planned_flows, "{id}: every call, connection and source has flows");
            assert_eq!(plan.calls.len(), meta.calls.len());
            let back: Meta = serde_json::from_str(&serde_json::to_string(meta).expect("serialises"))
                .unwrap_or_else(|e| panic!("{id}: {e}"));
            assert_eq!(&back, meta, "{id}@{}", s.variant);
            runs += 1;
        }
    }
    assert!(runs >= 100 && radio_flows >= 20, "{runs} runs, {radio_flows} flows over a BSS or a cell");
}

/// Every variant of a built-in scenario gives each flow (by name) the same bottleneck: the same
/// link where the flow's path is the same in every variant, else a link of the same kind (a wired
/// link, a BSS node's queue, an LTE buffer). Phases, periods, fair shares and Jain's index per
/// bottleneck follow the bottleneck, so variants that differ only in a station's position must
/// have the same one for their tables to line up (docs/scenarios.md, "A path's bottleneck").
#[test]
fn every_variant_gives_a_flow_the_same_bottleneck() {
    use std::collections::BTreeMap;

    use rtcbench_scenario::run::{LinkMeta, RunPlan};
    let kind = |l: &LinkMeta| match (&l.wifi, &l.lte) {
        (Some(_), _) => "wifi",
        (_, Some(_)) => "lte",
        _ => "wired",
    };
    let (mut compared, mut radio, mut moved) = (0, 0, 0);
    for (id, _, _) in builtin::BUILTIN {
        let (text, origin) = builtin::find(id).unwrap_or_else(|| panic!("no built-in {id}"));
        // Per flow name: the first variant's (variant, path, bottleneck, its kind).
        let mut first: BTreeMap<String, (String, Vec<String>, String, &str)> = BTreeMap::new();
        for s in load(text, &origin, &[]).unwrap_or_else(|e| panic!("{e}")) {
            let meta = RunPlan::new(&s, "gcc", 1).unwrap_or_else(|e| panic!("{id}: {e}")).meta;
            for f in &meta.flows {
                let link = meta.links.iter().find(|l| l.name == f.bottleneck).expect("a link of the run");
                let Some((variant, path, bottleneck, k)) = first.get(&f.name) else {
                    first.insert(
                        f.name.clone(),
                        (s.variant.clone(), f.path.clone(), f.bottleneck.clone(), kind(link)),
                    );
                    continue;
                };
                let at = format!("{id}: {} in {variant} and {}", f.name, s.variant);
                if *path == f.path {
                    assert_eq!(*bottleneck, f.bottleneck, "{at}: the same path, another bottleneck");
                } else {
                    assert_eq!(*k, kind(link), "{at}: {bottleneck} and {}", f.bottleneck);
                    moved += 1;
                }
                compared += 1;
                radio += usize::from(kind(link) != "wired");
            }
        }
    }
    // The seeds' Wi-Fi and LTE experiments vary the nodes' positions: radio bottlenecks were
    // compared across variants, not only wired ones.
    assert!(
        compared >= 500 && radio >= 200,
        "{compared} flows compared, {radio} at a radio hop, {moved} moved"
    );
}
