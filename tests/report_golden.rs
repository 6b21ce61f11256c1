//! Golden tests: a fixed, generated study-shaped run gives exactly these outputs.

#[path = "common/synthetic.rs"]
mod synthetic;

use std::path::Path;

use orchestrate::report::{ReportOptions, report_run};
use synthetic::{SynthSpec, write_run};

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn study_run() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &SynthSpec::study(7)).unwrap();
    report_run(dir.path(), &ReportOptions::default()).unwrap();
    dir
}

#[test]
fn summary_csv_is_as_expected() {
    let dir = study_run();
    insta::assert_snapshot!(read(dir.path(), "summary.csv"));
}

#[test]
fn comparison_csv_is_as_expected() {
    let dir = study_run();
    insta::assert_snapshot!(read(dir.path(), "comparison.csv"));
}

#[test]
fn markdown_is_as_expected() {
    let dir = study_run();
    insta::assert_snapshot!(read(dir.path(), "report.md"));
}
