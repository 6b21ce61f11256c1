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

/// `orchestrate report FLAGS DIR`, which must exit with a failed check.
fn report_failing(flags: &[&str], dir: &Path) -> std::process::Output {
    orchestrate()
        .arg("report")
        .args(flags)
        .arg(dir)
        .assert()
        .code(CHECK_FAILED)
        .get_output()
        .clone()
}

/// A run directory as `run` makes them, `<root>/<experiment>/<time>`, so that the
/// experiment's history lands beside it in the temporary root.
struct ReportedRun {
    root: tempfile::TempDir,
    run: std::path::PathBuf,
}

impl ReportedRun {
    fn path(&self) -> &Path {
        &self.run
    }

    fn history(&self) -> String {
        std::fs::read_to_string(self.root.path().join("reschke96-small/history.csv")).unwrap()
    }
}

/// A run whose copy of its experiment names `references` (TOML `[[reference]]` tables).
fn run_with_references(references: &str) -> ReportedRun {
    let root = tempfile::tempdir().unwrap();
    let run = root.path().join("reschke96-small/2026-12-06T10-00-00Z");
    add_run(&run, references);
    ReportedRun { root, run }
}

fn add_run(run: &Path, references: &str) {
    std::fs::create_dir_all(run).unwrap();
    write_run(run, &SynthSpec::study(7)).unwrap();
    std::fs::write(
        RunDir::new(run).experiment_toml(),
        format!("name = \"reschke96-small\"\n{references}"),
    )
    .unwrap();
}

// At 7 pairs and 8 KiB the study run measures a median of about 31.3 Mbit/s on the routed
// mesh (local-wire) and 9.11 Mbit/s on the bonded bus (what their wires carry one way, less
// framing and latency). This one is in the first spelling: a value with a tolerance below it.
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
throughput = "12 Mbit/s"
lower = "-10%"
upper = "+10%"
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
        text.contains(
            "references (median throughput, median latency; docker cluster): 1 of 1 pass"
        ),
        "{text}"
    );
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(md.contains("## Reference values"), "{md}");
    assert!(
        md.contains(
            "- **within** routed-mesh-4x4 token/tcp 7 pairs 8KiB local-wire: expected 33.0 Mbit/s, \
             bounds -10% … none; measured 31.3 Mbit/s"
        ),
        "{md}"
    );
}

#[test]
fn a_reference_missed_by_more_than_its_bounds_fails_the_report() {
    let dir = run_with_references(&format!("{PASSING}{FAILING}"));
    let out = report_failing(&["--json"], dir.path());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let checks = v["references"]["checks"].as_array().unwrap();
    let verdicts: Vec<&str> = checks
        .iter()
        .map(|r| r["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["within", "below"]);
    assert_eq!(checks[1]["lower_bound"].as_f64(), Some(12.0 * 0.9));
    // The files are still written, and report.md says which reference failed.
    assert!(v["written"].as_array().unwrap().len() > 3);
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(md.contains("1 of 2 pass"), "{md}");
    assert!(
        md.contains(
            "- **BELOW** bonded-dual-net balance-rr token/tcp 7 pairs 8KiB local-wire: expected 12.0 \
             Mbit/s, bounds -10% … +10%; measured 9.11 Mbit/s"
        ),
        "{md}"
    );
    // The summary says which one fails before anything else.
    let summary = md
        .split("## Summary")
        .nth(1)
        .unwrap()
        .split("\n## ")
        .next()
        .unwrap();
    assert!(
        summary.contains("Reference values: 1 of 2 hold; **failing**: bonded-dual-net"),
        "{summary}"
    );
}

#[test]
fn a_measurement_above_its_upper_bound_fails_too() {
    // The routed mesh measures about 31.3 Mbit/s: more than 5% above 28.
    let above = PASSING
        .replace("value = \"33 Mbit/s\"", "throughput = \"28 Mbit/s\"")
        .replace("tolerance = \"10%\"", "upper = \"+5%\"");
    let dir = run_with_references(&above);
    let out = report_failing(&[], dir.path());
    let text = stdout(&out);
    assert!(text.contains("ABOVE"), "{text}");
    assert!(text.contains("bounds none … +5%"), "{text}");
}

/// The study run's one-way latency at 64 B, one pair, local-wire on the routed mesh, µs, as
/// its report gives it.
fn routed_latency_64b(dir: &ReportedRun) -> f64 {
    let summary = std::fs::read_to_string(dir.path().join("summary.csv")).unwrap();
    let header: Vec<&str> = summary.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    summary
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .find(|f| {
            f[col("topology")] == "routed-mesh-4x4"
                && f[col("placement")] == "local-wire"
                && f[col("pairs")] == "1"
                && f[col("size_bytes")] == "64"
        })
        .map(|f| f[col("latency_p50_us")].parse().unwrap())
        .expect("the study run has that cell")
}

#[test]
fn latency_references_check_the_cells_median_latency_on_their_cluster_kind_only() {
    let dir = run_with_references("");
    orchestrate()
        .arg("report")
        .arg(dir.path())
        .assert()
        .success();
    let latency = routed_latency_64b(&dir);
    let reference = |us: f64, cluster: &str| {
        format!(
            "[[reference]]\ntopology = \"routed-mesh-4x4\"\npattern = \"token\"\nsize = 64\n\
             pairs = 1\ncluster = {cluster}\nlatency = \"{us}us\"\nupper = \"+10%\"\n"
        )
    };
    // Within 10% above the measured latency, and far below it; the third is for netns runs
    // only, and this run (no [cluster] table) was on docker.
    let refs = format!(
        "{}{}{}",
        reference((latency * 0.95).round(), "\"docker\""),
        reference((latency * 0.5).round(), "[\"docker\", \"inventory\"]"),
        reference((latency * 0.5).round(), "\"netns\""),
    );
    std::fs::write(
        RunDir::new(dir.path()).experiment_toml(),
        format!("name = \"reschke96-small\"\n{refs}"),
    )
    .unwrap();
    let out = report_failing(&["--json"], dir.path());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let refs = &v["references"];
    assert_eq!(refs["cluster"], "docker");
    let checks = refs["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 2, "{refs}");
    assert_eq!(checks[0]["unit"], "µs");
    // summary.csv prints it to four decimals.
    let measured = checks[0]["measured"].as_f64().unwrap();
    assert!(
        (measured - latency).abs() < 1e-4,
        "{measured} against {latency}"
    );
    assert_eq!(checks[0]["verdict"], "within");
    assert_eq!(checks[1]["verdict"], "above");
    let others = refs["other_clusters"].as_array().unwrap();
    assert_eq!(others.len(), 1);
    assert!(
        others[0].as_str().unwrap().ends_with("(netns)"),
        "{others:?}"
    );
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(
        md.contains("Not checked, being for other kinds of cluster"),
        "{md}"
    );
}

#[test]
fn every_reported_run_is_kept_once_in_the_experiments_history() {
    let dir = run_with_references(&format!("{PASSING}{FAILING}"));
    for _ in 0..2 {
        report_failing(&[], dir.path());
    }
    let history = dir.history();
    let lines: Vec<&str> = history.lines().collect();
    assert_eq!(
        lines[0],
        "run,finished,commit,cluster,reference,quantity,unit,expected,lower_bound,upper_bound,measured,verdict"
    );
    assert_eq!(lines.len(), 3, "reported twice, kept once:\n{history}");
    assert!(lines[1].starts_with("2026-12-06T10-00-00Z,"), "{history}");
    assert!(lines[1].ends_with(",within"), "{history}");
    assert!(
        lines[2].contains(",throughput,Mbit/s,12.0000,10.8000,13.2000,9.1"),
        "{history}"
    );
    assert!(lines[2].ends_with(",below"), "{history}");

    // A later run of the same experiment comes after it; an earlier one before it.
    let parent = dir.path().parent().unwrap();
    for name in ["2026-12-07T10-00-00Z", "2026-12-05T10-00-00Z"] {
        add_run(&parent.join(name), PASSING);
        orchestrate()
            .arg("report")
            .arg(parent.join(name))
            .assert()
            .success();
    }
    let history = dir.history();
    let runs: Vec<&str> = history
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(
        runs,
        [
            "2026-12-05T10-00-00Z",
            "2026-12-06T10-00-00Z",
            "2026-12-06T10-00-00Z",
            "2026-12-07T10-00-00Z"
        ]
    );
    // The figure draws each reference over the runs: two panels, three runs on the first.
    let svg = std::fs::read_to_string(parent.join("history.svg")).unwrap();
    assert_eq!(svg.matches("class=\"plot-area\"").count(), 2, "{svg}");
    assert!(svg.contains("1 = 2026-12-05T10-00-00Z"), "{svg}");
}

#[test]
fn a_reference_to_a_cell_the_run_lacks_fails_as_missing() {
    let dir = run_with_references(&PASSING.replace("pairs = 7", "pairs = 3"));
    let out = report_failing(&[], dir.path());
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
    let md = std::fs::read_to_string(out.join("appendix.md")).unwrap();
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
    let md = std::fs::read_to_string(plain.join("appendix.md")).unwrap();
    assert!(!md.contains("more than its wires carry"), "{md}");
}
