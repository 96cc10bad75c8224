//! The scenarios shipped with rtcbench (the files under `scenarios/`), compiled in so the
//! binary and the Python package need no data files at run time.

/// (id, file path relative to the repository, text).
pub const BUILTIN: &[(&str, &str, &str)] = &[
    ("rfc8867-5.1", "scenarios/rfc8867/5.1.toml", include_str!("../../../../scenarios/rfc8867/5.1.toml")),
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
