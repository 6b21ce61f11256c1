//! The `[[reference]]` values an experiment ships with hold on the latest run committed
//! beside it: a reference its own experiment's latest run fails would make the quick start
//! fail on a machine of the kind it was measured on, and one no run was checked against
//! would be a guess.

mod common;

use std::path::{Path, PathBuf};

use orchestrate::report::{ReportOptions, build, check_references};
use orchestrate::results::RunDir;

/// The newest run directory of an experiment under reports/ (directories are named by their
/// UTC start, so the last in name order).
fn latest_run(experiment: &str) -> PathBuf {
    let dir = common::root().join("reports").join(experiment);
    let mut runs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("manifest.json").is_file())
        .collect();
    runs.sort();
    runs.pop().expect("a committed run")
}

fn check(experiment: &Path, run: &Path) -> orchestrate::report::ReferenceChecks {
    let report = build(&RunDir::new(run), &ReportOptions::default()).unwrap();
    check_references(experiment, &report).unwrap()
}

#[test]
fn the_quick_starts_references_hold_on_its_latest_committed_run() {
    let experiment = common::root().join("experiments/grid4x4.toml");
    let run = latest_run("grid4x4");
    let refs = check(&experiment, &run);
    assert_eq!(refs.cluster, "docker");
    let quantities: Vec<&str> = refs.checks.iter().map(|c| c.quantity).collect();
    assert!(
        quantities.contains(&"throughput") && quantities.contains(&"latency"),
        "grid4x4 checks throughput and latency: {quantities:?}"
    );
    // Every configuration of the study has its references.
    for topology in ["routed-mesh-4x4", "switched-mesh-4x4", "bonded-dual-net"] {
        assert!(
            refs.checks
                .iter()
                .any(|c| c.reference.starts_with(topology)),
            "no reference for {topology}"
        );
    }
    let failing: Vec<String> = refs
        .checks
        .iter()
        .filter(|c| !c.passed())
        .map(|c| {
            format!(
                "{}: {} ({})",
                c.reference,
                c.verdict.as_str(),
                c.measured_text()
            )
        })
        .collect();
    assert!(
        failing.is_empty(),
        "{} fails on {}: {failing:?}",
        experiment.display(),
        run.display()
    );
}
