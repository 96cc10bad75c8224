//! The scenarios shipped with rtcbench (the files under `scenarios/`), compiled in so the
//! binary and the Python package need no data files at run time.

/// (id, file path relative to the repository, text).
pub const BUILTIN: &[(&str, &str, &str)] = &[
    ("rfc8867-5.1", "scenarios/rfc8867/5.1.toml", include_str!("../../../../scenarios/rfc8867/5.1.toml")),
    ("rfc8867-5.2", "scenarios/rfc8867/5.2.toml", include_str!("../../../../scenarios/rfc8867/5.2.toml")),
    ("rfc8867-5.3", "scenarios/rfc8867/5.3.toml", include_str!("../../../../scenarios/rfc8867/5.3.toml")),
    ("rfc8867-5.4", "scenarios/rfc8867/5.4.toml", include_str!("../../../../scenarios/rfc8867/5.4.toml")),
    ("rfc8867-5.5", "scenarios/rfc8867/5.5.toml", include_str!("../../../../scenarios/rfc8867/5.5.toml")),
    ("rfc8867-5.6", "scenarios/rfc8867/5.6.toml", include_str!("../../../../scenarios/rfc8867/5.6.toml")),
    ("rfc8867-5.7", "scenarios/rfc8867/5.7.toml", include_str!("../../../../scenarios/rfc8867/5.7.toml")),
    (
        "rfc8867-5.7-burst30",
        "scenarios/rfc8867/5.7-burst30.toml",
        include_str!("../../../../scenarios/rfc8867/5.7-burst30.toml"),
    ),
    ("rfc8867-5.8", "scenarios/rfc8867/5.8.toml", include_str!("../../../../scenarios/rfc8867/5.8.toml")),
    ("rfc8867-6.1", "scenarios/rfc8867/6.1.toml", include_str!("../../../../scenarios/rfc8867/6.1.toml")),
    ("rfc8867-6.2", "scenarios/rfc8867/6.2.toml", include_str!("../../../../scenarios/rfc8867/6.2.toml")),
    (
        "rfc8867-6.2-l4s",
        "scenarios/rfc8867/6.2-l4s.toml",
        include_str!("../../../../scenarios/rfc8867/6.2-l4s.toml"),
    ),
    ("rfc8867-6.3", "scenarios/rfc8867/6.3.toml", include_str!("../../../../scenarios/rfc8867/6.3.toml")),
    (
        "seed000-5.2.6",
        "scenarios/seeds/000-5.2.6.toml",
        include_str!("../../../../scenarios/seeds/000-5.2.6.toml"),
    ),
    (
        "seed001-staircase",
        "scenarios/seeds/001-5.1.1-staircase.toml",
        include_str!("../../../../scenarios/seeds/001-5.1.1-staircase.toml"),
    ),
    (
        "seed001-sudden-reduction",
        "scenarios/seeds/001-5.1.1-sudden-reduction.toml",
        include_str!("../../../../scenarios/seeds/001-5.1.1-sudden-reduction.toml"),
    ),
    (
        "seed001-sweden-to-china",
        "scenarios/seeds/001-5.1.1-sweden-to-china.toml",
        include_str!("../../../../scenarios/seeds/001-5.1.1-sweden-to-china.toml"),
    ),
];

/// The text of a built-in scenario and its origin for error messages.
pub fn find(id: &str) -> Option<(&'static str, String)> {
    BUILTIN.iter().find(|(i, _, _)| *i == id).map(|(_, path, text)| (*text, format!("builtin:{path}")))
}
