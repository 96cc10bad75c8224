//! The scenarios shipped with rtcbench (the files under `scenarios/`), compiled in so the
//! binary and the Python package need no data files at run time.

/// (id, file path relative to the repository, text).
pub const BUILTIN: &[(&str, &str, &str)] = &[
    ("rfc8867-5.1", "scenarios/rfc8867/5.1.toml", include_str!("../../../scenarios/rfc8867/5.1.toml")),
    ("rfc8867-5.2", "scenarios/rfc8867/5.2.toml", include_str!("../../../scenarios/rfc8867/5.2.toml")),
    ("rfc8867-5.3", "scenarios/rfc8867/5.3.toml", include_str!("../../../scenarios/rfc8867/5.3.toml")),
    ("rfc8867-5.4", "scenarios/rfc8867/5.4.toml", include_str!("../../../scenarios/rfc8867/5.4.toml")),
    ("rfc8867-5.5", "scenarios/rfc8867/5.5.toml", include_str!("../../../scenarios/rfc8867/5.5.toml")),
    ("rfc8867-5.6", "scenarios/rfc8867/5.6.toml", include_str!("../../../scenarios/rfc8867/5.6.toml")),
    ("rfc8867-5.7", "scenarios/rfc8867/5.7.toml", include_str!("../../../scenarios/rfc8867/5.7.toml")),
    (
        "rfc8867-5.7-burst30",
        "scenarios/rfc8867/5.7-burst30.toml",
        include_str!("../../../scenarios/rfc8867/5.7-burst30.toml"),
    ),
    ("rfc8867-5.8", "scenarios/rfc8867/5.8.toml", include_str!("../../../scenarios/rfc8867/5.8.toml")),
    ("rfc8867-6.1", "scenarios/rfc8867/6.1.toml", include_str!("../../../scenarios/rfc8867/6.1.toml")),
    ("rfc8867-6.2", "scenarios/rfc8867/6.2.toml", include_str!("../../../scenarios/rfc8867/6.2.toml")),
    (
        "rfc8867-6.2-l4s",
        "scenarios/rfc8867/6.2-l4s.toml",
        include_str!("../../../scenarios/rfc8867/6.2-l4s.toml"),
    ),
    ("rfc8867-6.3", "scenarios/rfc8867/6.3.toml", include_str!("../../../scenarios/rfc8867/6.3.toml")),
    (
        "seed000-5.2.6",
        "scenarios/seeds/000-5.2.6.toml",
        include_str!("../../../scenarios/seeds/000-5.2.6.toml"),
    ),
    (
        "seed001-staircase",
        "scenarios/seeds/001-5.1.1-staircase.toml",
        include_str!("../../../scenarios/seeds/001-5.1.1-staircase.toml"),
    ),
    (
        "seed001-sudden-reduction",
        "scenarios/seeds/001-5.1.1-sudden-reduction.toml",
        include_str!("../../../scenarios/seeds/001-5.1.1-sudden-reduction.toml"),
    ),
    (
        "seed001-sweden-to-china",
        "scenarios/seeds/001-5.1.1-sweden-to-china.toml",
        include_str!("../../../scenarios/seeds/001-5.1.1-sweden-to-china.toml"),
    ),
    (
        "seed000-5.2.5",
        "scenarios/seeds/000-5.2.5.toml",
        include_str!("../../../scenarios/seeds/000-5.2.5.toml"),
    ),
    (
        "seed000-5.2.7",
        "scenarios/seeds/000-5.2.7.toml",
        include_str!("../../../scenarios/seeds/000-5.2.7.toml"),
    ),
    (
        "seed000-5.2.8",
        "scenarios/seeds/000-5.2.8.toml",
        include_str!("../../../scenarios/seeds/000-5.2.8.toml"),
    ),
    ("seed002-grid", "scenarios/seeds/002-grid.toml", include_str!("../../../scenarios/seeds/002-grid.toml")),
    (
        "seed002-step-up",
        "scenarios/seeds/002-step-up.toml",
        include_str!("../../../scenarios/seeds/002-step-up.toml"),
    ),
    (
        "seed002-staircase",
        "scenarios/seeds/002-staircase.toml",
        include_str!("../../../scenarios/seeds/002-staircase.toml"),
    ),
    (
        "seed002-vs-tcp-gcc-first",
        "scenarios/seeds/002-vs-tcp-gcc-first.toml",
        include_str!("../../../scenarios/seeds/002-vs-tcp-gcc-first.toml"),
    ),
    (
        "seed002-vs-tcp-tcp-first",
        "scenarios/seeds/002-vs-tcp-tcp-first.toml",
        include_str!("../../../scenarios/seeds/002-vs-tcp-tcp-first.toml"),
    ),
    (
        "seed002-two-gcc",
        "scenarios/seeds/002-two-gcc.toml",
        include_str!("../../../scenarios/seeds/002-two-gcc.toml"),
    ),
    (
        "seed003-unconstrained",
        "scenarios/seeds/003-6.1.2-unconstrained.toml",
        include_str!("../../../scenarios/seeds/003-6.1.2-unconstrained.toml"),
    ),
    (
        "seed003-loss",
        "scenarios/seeds/003-6.1.3-loss.toml",
        include_str!("../../../scenarios/seeds/003-6.1.3-loss.toml"),
    ),
    (
        "seed003-delay",
        "scenarios/seeds/003-6.1.4-delay.toml",
        include_str!("../../../scenarios/seeds/003-6.1.4-delay.toml"),
    ),
    (
        "seed003-loss-delay",
        "scenarios/seeds/003-6.1.5-loss-delay.toml",
        include_str!("../../../scenarios/seeds/003-6.1.5-loss-delay.toml"),
    ),
    (
        "seed003-capacity-queue",
        "scenarios/seeds/003-6.1.6-capacity-queue.toml",
        include_str!("../../../scenarios/seeds/003-6.1.6-capacity-queue.toml"),
    ),
    (
        "seed003-parallel-2",
        "scenarios/seeds/003-6.3-parallel-2.toml",
        include_str!("../../../scenarios/seeds/003-6.3-parallel-2.toml"),
    ),
    (
        "seed003-parallel-3",
        "scenarios/seeds/003-6.3-parallel-3.toml",
        include_str!("../../../scenarios/seeds/003-6.3-parallel-3.toml"),
    ),
    (
        "seed003-loaded-100-10-udp",
        "scenarios/seeds/003-6.2-loaded-100-10-udp.toml",
        include_str!("../../../scenarios/seeds/003-6.2-loaded-100-10-udp.toml"),
    ),
    (
        "seed003-loaded-100-10-tcp",
        "scenarios/seeds/003-6.2-loaded-100-10-tcp.toml",
        include_str!("../../../scenarios/seeds/003-6.2-loaded-100-10-tcp.toml"),
    ),
    (
        "seed003-loaded-20-4-udp",
        "scenarios/seeds/003-6.2-loaded-20-4-udp.toml",
        include_str!("../../../scenarios/seeds/003-6.2-loaded-20-4-udp.toml"),
    ),
    (
        "seed003-loaded-20-4-tcp",
        "scenarios/seeds/003-6.2-loaded-20-4-tcp.toml",
        include_str!("../../../scenarios/seeds/003-6.2-loaded-20-4-tcp.toml"),
    ),
    (
        "trace-lte-drive",
        "scenarios/traces/lte-drive.toml",
        include_str!("../../../scenarios/traces/lte-drive.toml"),
    ),
    (
        "trace-lte-walk",
        "scenarios/traces/lte-walk.toml",
        include_str!("../../../scenarios/traces/lte-walk.toml"),
    ),
    (
        "trace-wifi-office",
        "scenarios/traces/wifi-office.toml",
        include_str!("../../../scenarios/traces/wifi-office.toml"),
    ),
    ("mesh-3", "scenarios/topologies/mesh-3.toml", include_str!("../../../scenarios/topologies/mesh-3.toml")),
    ("sfu-4", "scenarios/topologies/sfu-4.toml", include_str!("../../../scenarios/topologies/sfu-4.toml")),
    (
        "one-to-many-3",
        "scenarios/topologies/one-to-many.toml",
        include_str!("../../../scenarios/topologies/one-to-many.toml"),
    ),
    ("turn-relay", "scenarios/topologies/turn.toml", include_str!("../../../scenarios/topologies/turn.toml")),
    (
        "seed000-5.3.5",
        "scenarios/seeds/000-5.3.5-wifi.toml",
        include_str!("../../../scenarios/seeds/000-5.3.5-wifi.toml"),
    ),
    (
        "seed000-5.3.6",
        "scenarios/seeds/000-5.3.6-wifi.toml",
        include_str!("../../../scenarios/seeds/000-5.3.6-wifi.toml"),
    ),
    (
        "seed000-5.3.7",
        "scenarios/seeds/000-5.3.7-wifi.toml",
        include_str!("../../../scenarios/seeds/000-5.3.7-wifi.toml"),
    ),
    (
        "seed000-5.3.8",
        "scenarios/seeds/000-5.3.8-wifi.toml",
        include_str!("../../../scenarios/seeds/000-5.3.8-wifi.toml"),
    ),
    (
        "seed000-5.4.6",
        "scenarios/seeds/000-5.4.6-4g.toml",
        include_str!("../../../scenarios/seeds/000-5.4.6-4g.toml"),
    ),
    (
        "seed000-5.4.7",
        "scenarios/seeds/000-5.4.7-4g.toml",
        include_str!("../../../scenarios/seeds/000-5.4.7-4g.toml"),
    ),
    (
        "seed004-testbed",
        "scenarios/seeds/004-4.1-testbed.toml",
        include_str!("../../../scenarios/seeds/004-4.1-testbed.toml"),
    ),
    ("rfc8869-2.1", "scenarios/rfc8869/2.1.toml", include_str!("../../../scenarios/rfc8869/2.1.toml")),
    ("rfc8869-2.2", "scenarios/rfc8869/2.2.toml", include_str!("../../../scenarios/rfc8869/2.2.toml")),
    ("rfc8869-3.1-i", "scenarios/rfc8869/3.1-i.toml", include_str!("../../../scenarios/rfc8869/3.1-i.toml")),
    (
        "rfc8869-3.1-ii",
        "scenarios/rfc8869/3.1-ii.toml",
        include_str!("../../../scenarios/rfc8869/3.1-ii.toml"),
    ),
    (
        "rfc8869-3.1-iii",
        "scenarios/rfc8869/3.1-iii.toml",
        include_str!("../../../scenarios/rfc8869/3.1-iii.toml"),
    ),
    (
        "rfc8869-3.1-iv",
        "scenarios/rfc8869/3.1-iv.toml",
        include_str!("../../../scenarios/rfc8869/3.1-iv.toml"),
    ),
    ("rfc8869-3.1-v", "scenarios/rfc8869/3.1-v.toml", include_str!("../../../scenarios/rfc8869/3.1-v.toml")),
    ("rfc8869-3.2-a", "scenarios/rfc8869/3.2-a.toml", include_str!("../../../scenarios/rfc8869/3.2-a.toml")),
    ("rfc8869-3.2-b", "scenarios/rfc8869/3.2-b.toml", include_str!("../../../scenarios/rfc8869/3.2-b.toml")),
    ("rfc8869-3.2-c", "scenarios/rfc8869/3.2-c.toml", include_str!("../../../scenarios/rfc8869/3.2-c.toml")),
    ("rfc8869-3.2-d", "scenarios/rfc8869/3.2-d.toml", include_str!("../../../scenarios/rfc8869/3.2-d.toml")),
    ("rfc8869-3.2-e", "scenarios/rfc8869/3.2-e.toml", include_str!("../../../scenarios/rfc8869/3.2-e.toml")),
    ("rfc8869-3.2-f", "scenarios/rfc8869/3.2-f.toml", include_str!("../../../scenarios/rfc8869/3.2-f.toml")),
    ("l4s-5.1", "scenarios/l4s/5.1.toml", include_str!("../../../scenarios/l4s/5.1.toml")),
    ("l4s-mixed", "scenarios/l4s/mixed.toml", include_str!("../../../scenarios/l4s/mixed.toml")),
    ("l4s-cubic", "scenarios/l4s/cubic.toml", include_str!("../../../scenarios/l4s/cubic.toml")),
    ("l4s-interop", "scenarios/l4s/interop.toml", include_str!("../../../scenarios/l4s/interop.toml")),
    (
        "l4s-classic-ecn",
        "scenarios/l4s/classic-ecn.toml",
        include_str!("../../../scenarios/l4s/classic-ecn.toml"),
    ),
    ("l4s-bleach", "scenarios/l4s/bleach.toml", include_str!("../../../scenarios/l4s/bleach.toml")),
    ("l4s-wifi", "scenarios/l4s/wifi.toml", include_str!("../../../scenarios/l4s/wifi.toml")),
    ("l4s-lte", "scenarios/l4s/lte.toml", include_str!("../../../scenarios/l4s/lte.toml")),
];

/// The text of a built-in scenario and its origin for error messages.
pub fn find(id: &str) -> Option<(&'static str, String)> {
    BUILTIN.iter().find(|(i, _, _)| *i == id).map(|(_, path, text)| (*text, format!("builtin:{path}")))
}

/// The capacity traces the built-in scenarios use (`scenarios/traces/`, made by
/// `scripts/make_traces.py`): (path relative to the repository, text). A scenario names one as
/// `file = "lte-drive.mahimahi"` beside a built-in scenario, or `builtin:<path>` from anywhere.
pub const TRACES: &[(&str, &str)] = &[
    ("scenarios/traces/lte-drive.mahimahi", include_str!("../../../scenarios/traces/lte-drive.mahimahi")),
    ("scenarios/traces/lte-walk.csv", include_str!("../../../scenarios/traces/lte-walk.csv")),
    ("scenarios/traces/wifi-office.json", include_str!("../../../scenarios/traces/wifi-office.json")),
];

/// The text of a built-in trace.
pub fn trace(path: &str) -> Option<&'static str> {
    TRACES.iter().find(|(p, _)| *p == path).map(|(_, text)| *text)
}
