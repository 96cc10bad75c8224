//! What the relay's tests share: a relay configuration for a plan, with interface k for node k
//! (host 10.0.k+1.2), as the Python testbed addresses them.

use rtcbench_live::config::RelayConfig;
use rtcbench_scenario::elements::NetworkPlan;

/// The relay configuration of `plan`, one interface per node in plan order.
pub(crate) fn relay_config(plan: &NetworkPlan) -> Result<RelayConfig, serde_json::Error> {
    let interfaces: Vec<_> = plan
        .nodes
        .iter()
        .enumerate()
        .map(|(k, node)| {
            serde_json::json!({
                "node": node,
                "name": format!("t-r{k}"),
                "host_ip": format!("10.0.{}.2", k + 1),
                "host_mac": format!("02:72:62:00:{:02x}:02", k + 1),
            })
        })
        .collect();
    serde_json::from_value(
        serde_json::json!({ "plan": plan, "interfaces": interfaces, "out_dir": "/nonexistent" }),
    )
}
