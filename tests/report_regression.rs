//! Regression checks: `report --compare OLD NEW --threshold` and an experiment's
//! `[[reference]]` values, through the command line and its exit status.

#[path = "common/synthetic.rs"]
mod synthetic;

use std::path::Path;

use assert_cmd::Command;
use orchestrate::results::{RecordRow, RunDir};
use synthetic::{SynthSpec, write_run};

/// The exit status of a failed check, as `report --help` documents it.
const CHECK_FAILED: i32 = 3;

/// Point 6 of the study-shaped run: routed mesh, local-wire, 7 pairs, 64 B (6 clean reps).
const DEGRADED_POINT: u32 = 6;

fn orchestrate() -> Command {
    Command::cargo_bin("orchestrate").unwrap()
}

/// Scales the bytes of every record of `point` by `factor`, as if that cell ran slower.
fn degrade(run: &Path, point: u32, factor: f64) {
    let path = RunDir::new(run).records_jsonl();
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out = String::new();
    for line in text.lines() {
        let mut row: RecordRow = serde_json::from_str(line).unwrap();
        if row.point == point {
            row.record.bytes = (row.record.bytes as f64 * factor).round() as u64;
        }
        out.push_str(&serde_json::to_string(&row).unwrap());
        out.push('\n');
    }
    std::fs::write(&path, out).unwrap();
}

fn two_runs(
    old_seed: u64,
    new_seed: u64,
) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let (old, new) = (root.path().join("old"), root.path().join("new"));
    write_run(&old, &SynthSpec::study(old_seed)).unwrap();
    write_run(&new, &SynthSpec::study(new_seed)).unwrap();
    (root, old, new)
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn two_runs_of_the_same_setup_pass_the_check() {
    let (_root, old, new) = two_runs(1, 2);
    let out = orchestrate()
        .args(["report", "--threshold", "5%", "--compare"])
        .args([&old, &new])
        .assert()
        .success()
        .get_output()
        .clone();
    let text = stdout(&out);
    assert!(text.contains("12 cells: 0 worse, 0 missing"), "{text}");
    assert!(text.contains("rule: worse = change below -5%"), "{text}");
    assert!(!text.contains("FAILED"), "{text}");
}

#[test]
fn a_cell_degraded_by_a_fifth_fails_the_check_by_name() {
    let (_root, old, new) = two_runs(1, 1);
    degrade(&new, DEGRADED_POINT, 0.8);
    let out = orchestrate()
        .args(["report", "--compare"])
        .args([&old, &new])
        .args(["--threshold", "5%"])
        .assert()
        .code(CHECK_FAILED)
        .get_output()
        .clone();
    let text = stdout(&out);
    assert!(text.contains("FAILED: 1 cell(s) regressed:"), "{text}");
    assert!(
        text.contains("  token/tcp routed-mesh-4x4 local-wire, 7 pairs, 64 B: -20.0%"),
        "{text}"
    );
    assert!(text.contains("1 worse, 0 missing"), "{text}");

    // The same as JSON: exactly that cell is worse, with both runs' intervals.
    let out = orchestrate()
        .args(["report", "--json", "--threshold", "5%", "--compare"])
        .args([&old, &new])
        .assert()
        .code(CHECK_FAILED)
        .get_output()
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let worse: Vec<&serde_json::Value> = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["verdict"] == "worse")
        .collect();
    assert_eq!(worse.len(), 1, "{v:#}");
    let c = worse[0];
    assert_eq!(
        (
            &c["topology"],
            &c["placement"],
            &c["pairs"],
            &c["size_bytes"]
        ),
        (
            &serde_json::json!("routed-mesh-4x4"),
            &serde_json::json!("local-wire"),
            &serde_json::json!(7),
            &serde_json::json!(64)
        )
    );
    let change = c["change_percent"].as_f64().unwrap();
    assert!((change + 20.0).abs() < 0.5, "{change}");
    assert!(
        c["old"]["ci_low_mbit_s"].as_f64().unwrap() > c["new"]["ci_high_mbit_s"].as_f64().unwrap()
    );
}

#[test]
fn a_drop_within_the_threshold_is_the_same() {
    let (_root, old, new) = two_runs(1, 1);
    degrade(&new, DEGRADED_POINT, 0.8);
    orchestrate()
        .args(["report", "--threshold", "25%", "--compare"])
        .args([&old, &new])
        .assert()
        .success();
}

#[test]
fn a_cell_that_no_longer_measures_is_missing_and_fails() {
    let (_root, old, mut_new) = two_runs(1, 1);
    let mut spec = SynthSpec::study(1);
    // Every repetition of point 6 fails in the new run.
    spec.failed.extend((0..6).map(|rep| (DEGRADED_POINT, rep)));
    write_run(&mut_new, &spec).unwrap();
    let out = orchestrate()
        .args(["report", "--threshold", "5%", "--compare"])
        .args([&old, &mut_new])
        .assert()
        .code(CHECK_FAILED)
        .get_output()
        .clone();
    let text = stdout(&out);
    assert!(
        text.contains(
            "token/tcp routed-mesh-4x4 local-wire, 7 pairs, 64 B: no value in the new run"
        ),
        "{text}"
    );
}

#[test]
fn the_check_compares_exactly_two_runs() {
    let (root, old, new) = two_runs(1, 2);
    let third = root.path().join("third");
    write_run(&third, &SynthSpec::study(3)).unwrap();
    let out = orchestrate()
        .args(["report", "--threshold", "5%", "--compare"])
        .args([&old, &new, &third])
        .assert()
        .failure()
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("exactly two runs, OLD and NEW; 3 were given"),
        "{err}"
    );
    // Without --threshold, three runs still go side by side.
    orchestrate()
        .args(["report", "--compare"])
        .args([&old, &new, &third])
        .arg("--out")
        .arg(root.path().join("cmp"))
        .assert()
        .success();
}

#[test]
fn a_threshold_must_be_a_percentage() {
    let out = orchestrate()
        .args(["report", "--compare", "a", "b", "--threshold", "0.05"])
        .assert()
        .failure()
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("followed by %"), "{err}");
}

/// A run whose copy of its experiment names `references` (TOML `[[reference]]` tables).
fn run_with_references(references: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &SynthSpec::study(7)).unwrap();
    std::fs::write(
        RunDir::new(dir.path()).experiment_toml(),
        format!("name = \"reschke96-small\"\n{references}"),
    )
    .unwrap();
    dir
}

// At 7 pairs and 8 KiB the study run measures a median of about 31.3 Mbit/s on the routed
// mesh (local-wire) and 9.11 Mbit/s on the bonded bus (what their wires carry one way, less
// framing and latency).
const PASSING: &str = r#"
[[reference]]
topology = "routed-mesh-4x4"
pattern = "token"
size = "8KiB"
pairs = 7
placement = "local-wire"
value = "33 Mbit/s"
tolerance = "10%"
"#;

const FAILING: &str = r#"
[[reference]]
topology = "bonded-dual-net"
bonding = "balance-rr"
pattern = "token"
size = "8KiB"
pairs = 7
value = "12 Mbit/s"
tolerance = "10%"
"#;

#[test]
fn references_that_hold_pass_and_show_in_the_report() {
    let dir = run_with_references(PASSING);
    let out = orchestrate()
        .arg("report")
        .arg(dir.path())
        .assert()
        .success()
        .get_output()
        .clone();
    let text = stdout(&out);
    assert!(
        text.contains("references (median throughput): 1 of 1 pass"),
        "{text}"
    );
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(md.contains("## Reference values"), "{md}");
    assert!(
        md.contains("| routed-mesh-4x4 token/tcp 7 pairs 8KiB local-wire | 33.0 | 10% | 31.3 |"),
        "{md}"
    );
}

#[test]
fn a_reference_missed_by_more_than_its_tolerance_fails_the_report() {
    let dir = run_with_references(&format!("{PASSING}{FAILING}"));
    let out = orchestrate()
        .args(["report", "--json"])
        .arg(dir.path())
        .assert()
        .code(CHECK_FAILED)
        .get_output()
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let verdicts: Vec<&str> = v["references"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["same", "worse"]);
    // The files are still written, and report.md says which reference failed.
    assert!(v["written"].as_array().unwrap().len() > 3);
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(md.contains("1 of 2 pass"), "{md}");
    assert!(
        md.contains(
            "| bonded-dual-net balance-rr token/tcp 7 pairs 8KiB local-wire | 12.0 | 10% | 9.11 |"
        ),
        "{md}"
    );
    assert!(md.contains("| WORSE |"), "{md}");
}

#[test]
fn a_reference_to_a_cell_the_run_lacks_fails_as_missing() {
    let dir = run_with_references(&PASSING.replace("pairs = 7", "pairs = 3"));
    let out = orchestrate()
        .arg("report")
        .arg(dir.path())
        .assert()
        .code(CHECK_FAILED)
        .get_output()
        .clone();
    let text = stdout(&out);
    assert!(text.contains("MISSING"), "{text}");
    assert!(text.contains("the run has no such cell"), "{text}");
}

#[test]
fn a_malformed_reference_is_a_located_error() {
    let dir = run_with_references(&PASSING.replace("33 Mbit/s", "9 MB/s"));
    let out = orchestrate()
        .arg("report")
        .arg(dir.path())
        .assert()
        .code(1)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("experiment.toml:9:9:"), "{err}");
    assert!(err.contains("1 MB/s = 8 Mbit/s"), "{err}");
}

#[test]
fn an_experiment_with_a_reference_it_measures_validates() {
    let dir = tempfile::tempdir().unwrap();
    let topology = Path::new(env!("CARGO_MANIFEST_DIR")).join("topologies/routed-mesh-4x4.toml");
    let path = dir.path().join("with-reference.toml");
    let experiment = format!(
        "topologies = [{topology:?}]\n\
         [[workload]]\npattern = \"token\"\nsizes = [64, \"8KiB\"]\npairs = [1, 7]\n\
         placement = [\"local-wire\", \"remote-wire\"]\nexchanges = 10\n{}",
        PASSING.replace("local-wire", "remote-wire")
    );
    std::fs::write(&path, experiment).unwrap();
    orchestrate().arg("validate").arg(&path).assert().success();
    // The same reference to a placement no workload uses is refused, with its place.
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "placement = [\"local-wire\", \"remote-wire\"]",
        "placement = [\"local-wire\"]",
    );
    std::fs::write(&path, text).unwrap();
    let out = orchestrate()
        .arg("validate")
        .arg(&path)
        .assert()
        .failure()
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    // (miette wraps the message at the terminal's width, so match its two ends.)
    assert!(
        err.contains("with-reference.toml:14:13: reference to placement"),
        "{err}"
    );
    assert!(err.contains("which no token workload uses"), "{err}");
}

/// Gives one cell of the run in a directory named `new` a capacity far below what it
/// measured; nothing for any other run.
struct NarrowWireInNew;

impl orchestrate::report::RunWires for NarrowWireInNew {
    fn capacities_of(&self, run_dir: &Path) -> Vec<orchestrate::report::CellCapacity> {
        if !run_dir.ends_with("new") {
            return Vec::new();
        }
        vec![orchestrate::report::CellCapacity {
            topology: "routed-mesh-4x4".into(),
            bonding: "none".into(),
            placement: orchestrate::results::PlacementKind::LocalWire,
            pairs: 7,
            pattern: orchestrate_worker::record::Pattern::Token,
            size_bytes: Some(64),
            capacity_mbit_s: 0.01,
        }]
    }
}

#[test]
fn runs_compared_are_each_held_to_their_own_wires() {
    let (root, old, new) = two_runs(1, 1);
    let out = root.path().join("comparison");
    let opts = orchestrate::report::ReportOptions {
        wires: Some(&NarrowWireInNew),
        ..Default::default()
    };
    orchestrate::report::compare(&[old.clone(), new.clone()], &out, &opts).unwrap();
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let over: Vec<&str> = md
        .lines()
        .filter(|l| l.contains("is more than its wires carry (0.010 Mbit/s)"))
        .collect();
    // Every repetition of the new run's cell, none of the old run's.
    assert_eq!(over.len(), 6, "{md}");
    assert!(over.iter().all(|l| l.contains("new")), "{over:#?}");
    // Without the wires, the same comparison sets nothing aside.
    let plain = root.path().join("plain");
    orchestrate::report::compare(&[old, new], &plain, &Default::default()).unwrap();
    let md = std::fs::read_to_string(plain.join("report.md")).unwrap();
    assert!(!md.contains("more than its wires carry"), "{md}");
}
