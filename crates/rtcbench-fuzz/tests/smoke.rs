//! The fuzz targets in the default test suite: each runs its committed seeds and a few thousand
//! mutants of them (blind: the test build has no coverage), and none may crash, hang or allocate
//! too much. `make fuzz` and `fuzz.sh` run them for longer, with coverage.

use rtcbench_fuzz::runner::{self, Config};
use rtcbench_fuzz::targets::{self, TARGETS};

/// Mutants per target: about 2 s for all targets in the dev profile.
const EXECS: u64 = 20_000;

#[test]
fn every_target_survives_its_seeds_and_mutants() {
    let config = Config { execs: Some(EXECS), progress: None, ..Config::default() };
    let mut failures = Vec::new();
    for target in TARGETS {
        let report = runner::run(target, &config).expect("the committed corpus is readable");
        assert_eq!(report.execs, EXECS, "{}", target.name);
        assert!(
            report.seeds > 1,
            "{} has no committed seeds (cargo run -p rtcbench-fuzz --bin make-corpus)",
            target.name
        );
        for f in &report.findings {
            let at = f.path.as_ref().map_or_else(|| "not saved".into(), |p| p.display().to_string());
            failures.push(format!(
                "{}: {}: {} (input {}, {at})",
                target.name,
                f.kind.name(),
                f.detail,
                runner::hex(&f.input)
            ));
        }
    }
    targets::cleanup();
    assert!(failures.is_empty(), "fuzz findings:\n{}", failures.join("\n"));
}
