//! The `orchestrate report` command line.

#[path = "common/synthetic.rs"]
mod synthetic;

use assert_cmd::Command;
use synthetic::{SynthSpec, write_run};

fn orchestrate() -> Command {
    Command::cargo_bin("orchestrate").unwrap()
}

#[test]
fn report_writes_into_the_run_directory_and_lists_files_as_json() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &SynthSpec::study(3)).unwrap();
    let out = orchestrate()
        .args(["report", "--json", "--statistic", "best"])
        .arg(dir.path())
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let written: Vec<&str> = v["written"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    for name in [
        "summary.csv",
        "comparison.csv",
        "report.md",
        "figures/netpipe.svg",
    ] {
        assert!(
            written.iter().any(|p| p.ends_with(name)),
            "{name} not in {written:?}"
        );
    }
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(
        md.contains("Headline statistic: **best** of the repetitions (as the 1996 study reported)")
    );
}

#[test]
fn compare_writes_into_out() {
    let root = tempfile::tempdir().unwrap();
    let (a, b, out) = (
        root.path().join("a"),
        root.path().join("b"),
        root.path().join("cmp"),
    );
    write_run(&a, &SynthSpec::study(1)).unwrap();
    write_run(&b, &SynthSpec::study(2)).unwrap();
    orchestrate()
        .args(["report", "--compare"])
        .args([&a, &b])
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    // One table of both runs: every row as wide as the header, and rows of each run.
    let csv = std::fs::read_to_string(out.join("comparison.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header[..2], ["run", "pattern"], "{csv}");
    let runs: std::collections::BTreeSet<&str> = lines
        .map(|l| {
            let fields: Vec<&str> = l.split(',').collect();
            assert_eq!(fields.len(), header.len(), "{l}");
            fields[0]
        })
        .collect();
    assert_eq!(runs.len(), 2, "{runs:?} in\n{csv}");
}

#[test]
fn a_directory_without_records_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = orchestrate();
    cmd.arg("report").arg(dir.path());
    let err = stderr_of_failure(cmd);
    assert!(
        err.contains("neither records.parquet nor records.jsonl found"),
        "{err}"
    );
}

#[test]
fn bad_netpipe_argument_is_refused() {
    let mut cmd = orchestrate();
    cmd.args(["report", "x", "--netpipe", "no-equals-sign"]);
    assert!(stderr_of_failure(cmd).contains("expected NAME=PATH"));
}

#[cfg(not(feature = "png"))]
#[test]
fn png_without_the_feature_says_how_to_get_it() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &SynthSpec::study(3)).unwrap();
    let mut cmd = orchestrate();
    cmd.args(["report", "--png"]).arg(dir.path());
    assert!(stderr_of_failure(cmd).contains("--features png"));
    // A flag that cannot work in this build is not offered.
    let help = orchestrate().args(["report", "--help"]).assert().success();
    let help = String::from_utf8_lossy(&help.get_output().stdout).into_owned();
    assert!(help.contains("--netpipe"), "{help}");
    assert!(!help.contains("--png"), "{help}");
}

#[cfg(feature = "png")]
#[test]
fn png_copies_are_written_on_request() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &SynthSpec::study(3)).unwrap();
    orchestrate()
        .args(["report", "--png"])
        .arg(dir.path())
        .assert()
        .success();
    let png = std::fs::read(dir.path().join("figures/throughput-vs-size-token-tcp.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
}

fn stderr_of_failure(mut cmd: Command) -> String {
    let out = cmd.assert().failure().get_output().stderr.clone();
    String::from_utf8(out).unwrap()
}

/// `--compare` says first what differs between the runs besides their numbers: the newer
/// reschke96 run added `host = "486dx4"`, which changes every cell.
#[test]
fn compare_names_what_changed_in_the_specs_before_any_cell() {
    let runs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/reschke96");
    let out = tempfile::tempdir().unwrap();
    let assert = orchestrate()
        .args(["report", "--compare"])
        .arg(runs.join("2026-12-01T06-43-38Z"))
        .arg(runs.join("2026-12-01T13-20-28Z"))
        .arg("--out")
        .arg(out.path())
        .assert()
        .success();
    let err = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(err.contains("warning: "), "{err}");
    assert!(err.contains("compared across changed specs"), "{err}");
    assert!(
        err.contains("--- experiment.toml\n+ host = \"486dx4\""),
        "{err}"
    );
}
