//! An emulation relay is configured with the elements the simulator builds (`NetworkPlan`): they
//! must survive their trip through JSON unchanged, for every link of every built-in scenario.

use rtcbench_net::link::LinkConfig;
use rtcbench_scenario::elements::NetworkPlan;
use rtcbench_scenario::{builtin, load};

#[test]
fn every_built_in_link_configuration_survives_json() {
    let (mut links, mut traced, mut mahimahi, mut aqm) = (0, 0, 0, 0);
    for (id, _, _) in builtin::BUILTIN {
        let (text, origin) = builtin::find(id).unwrap_or_else(|| panic!("no built-in {id}"));
        for s in load(text, &origin, &[]).unwrap_or_else(|e| panic!("{e}")) {
            let plan = NetworkPlan::new(&s, 7);
            let json = serde_json::to_value(&plan).expect("a plan serialises");
            let back: Vec<LinkConfig> =
                serde_json::from_value(json["links"].clone()).unwrap_or_else(|e| panic!("{id}: {e}"));
            assert_eq!(back, plan.links, "{id}@{}", s.variant);
            links += back.len();
            traced += s.capacity_traces.iter().flatten().count();
            mahimahi += back.iter().filter(|l| l.opportunities.is_some()).count();
            aqm += back.iter().filter(|l| l.discipline != Default::default()).count();
            for route in &plan.routes {
                assert!(!route.links.is_empty() && route.links.iter().all(|&l| l < plan.links.len()));
            }
        }
    }
    // The round trip covered capacity traces and AQMs, not only constant drop-tail links.
    assert!(
        links >= 200 && traced >= 3 && mahimahi >= 1 && aqm >= 4,
        "{links} links, {traced} traced ({mahimahi} mahimahi), {aqm} with an AQM"
    );
}

#[test]
fn a_route_is_the_fewest_hop_chain_in_both_directions() {
    let (text, origin) = builtin::find("rfc8867-5.1").expect("built in");
    let s = load(text, &origin, &[]).expect("loads").remove(0);
    let plan = NetworkPlan::new(&s, 1);
    let names = |r: &rtcbench_scenario::elements::RoutePlan| {
        r.links.iter().map(|&l| plan.links[l].name.as_str()).collect::<Vec<_>>()
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
