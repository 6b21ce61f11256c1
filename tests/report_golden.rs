//! Golden tests: a fixed, generated study-shaped run gives exactly these outputs, and none of
//! its figures is more than its wires can carry.

#[path = "common/synthetic.rs"]
mod synthetic;

use std::path::Path;

use orchestrate::report::{ReportOptions, report_run};
use synthetic::{SynthSpec, write_run};

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// One build of the study for all its outputs (each snapshot keeps its own file).
#[test]
fn the_study_reports_as_expected() {
    let dir = tempfile::tempdir().unwrap();
    let spec = SynthSpec::study(7);
    write_run(dir.path(), &spec).unwrap();
    report_run(dir.path(), &ReportOptions::default()).unwrap();
    let summary = read(dir.path(), "summary.csv");
    within_the_wires(&spec, &summary);
    insta::assert_snapshot!("summary_csv_is_as_expected", summary);
    insta::assert_snapshot!(
        "comparison_csv_is_as_expected",
        read(dir.path(), "comparison.csv")
    );
    insta::assert_snapshot!("markdown_is_as_expected", read(dir.path(), "report.md"));
    insta::assert_snapshot!("appendix_is_as_expected", read(dir.path(), "appendix.md"));
    insta::assert_snapshot!(
        "latex_tables_are_as_expected",
        read(dir.path(), "tables.tex")
    );
}

/// Every cell's best repetition is within what its wires carry one way: a token comes back
/// over the same wires, so half their rate, of which 94% is payload.
fn within_the_wires(spec: &SynthSpec, summary: &str) {
    let mut lines = summary.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (topology, placement, best) = (at("topology"), at("placement"), at("best_mbit_s"));
    let mut checked = 0;
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        let config = spec
            .configs
            .iter()
            .find(|c| c.topology == f[topology] && c.placement.as_str() == f[placement])
            .unwrap_or_else(|| panic!("no configuration for {line}"));
        let capacity = config.wires * config.wire_mbit_s * 0.94 / 2.0;
        let value: f64 = f[best].parse().unwrap();
        assert!(value <= capacity, "{value} Mbit/s over {capacity}: {line}");
        checked += 1;
    }
    assert_eq!(
        checked,
        spec.configs.len() * spec.pairs.len() * spec.sizes.len()
    );
}
