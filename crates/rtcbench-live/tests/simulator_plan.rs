//! The relay is configured with the plan the simulator builds its links from
//! (`rtcbench_scenario::elements::NetworkPlan`), as JSON from the Python testbed: for every
//! built-in scenario and variant (Wi-Fi and LTE ones too), the plan survives the trip through
//! JSON unchanged and configures a relay with the same elements.

use rtcbench_live::relay::Relay;
use rtcbench_scenario::elements::NetworkPlan;
use rtcbench_scenario::{builtin, load};

mod common;

#[test]
fn every_built_in_plan_configures_the_relay() {
    let (mut plans, mut background, mut radio) = (0, 0, 0);
    for (id, _, _) in builtin::BUILTIN {
        let (text, origin) = builtin::find(id).unwrap_or_else(|| panic!("no built-in {id}"));
        for s in load(text, &origin, &[]).unwrap_or_else(|e| panic!("{e}")) {
            let plan = NetworkPlan::new(&s, 1).unwrap_or_else(|e| panic!("{id}: {e}"));
            let cfg = common::relay_config(&plan).unwrap_or_else(|e| panic!("{id}@{}: {e}", s.variant));
            assert_eq!(cfg.plan.links, plan.links, "{id}@{}", s.variant);
            assert_eq!(cfg.plan.routes.len(), plan.routes.len());
            let relay = Relay::new(&cfg).unwrap_or_else(|e| panic!("{id}@{}: {e}", s.variant));
            assert_eq!(relay.counts.len(), plan.links.len() + plan.bsses.len() + plan.cells.len());
            radio += plan.bsses.len() + plan.cells.len();
            plans += 1;
            background += cfg.plan.background.len();
        }
    }
    assert!(
        plans >= 100 && background >= 1 && radio >= 20,
        "{plans} plans, {background} with UDP background, {radio} BSSes and cells"
    );
}
