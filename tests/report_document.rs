//! report.md and appendix.md as wholes: what comes first, what a paper can take as it is, and
//! the environment without repetition.

#[path = "common/synthetic.rs"]
mod synthetic;

use orchestrate::report::{ReportOptions, report_run};
use synthetic::{SynthSpec, write_run};

/// The text of a `## ` section, up to the next one.
fn section<'a>(md: &'a str, heading: &str) -> &'a str {
    let start = md.find(heading).unwrap_or_else(|| panic!("no {heading}"));
    let rest = &md[start..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 4);
    &rest[..end]
}

#[test]
fn facts_equal_on_every_node_are_listed_once_and_differences_per_node() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &SynthSpec::study(7)).unwrap();
    // Four nodes probed alike but for their host names.
    let path = dir.path().join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    manifest["nodes"] = (1..=4)
        .map(|i| {
            (
                format!("node{i}"),
                serde_json::json!({
                    "hostname": format!("host-{i}"),
                    "kernel": {"release": "6.18.0", "config_available": true},
                    "cpus": 2,
                    "nics": [{"name": "eth0", "mtu": 1500, "qdisc": "tbf"}],
                }),
            )
        })
        .collect::<serde_json::Map<_, _>>()
        .into();
    std::fs::write(&path, serde_json::to_vec(&manifest).unwrap()).unwrap();
    report_run(dir.path(), &ReportOptions::default()).unwrap();
    let md = std::fs::read_to_string(dir.path().join("appendix.md")).unwrap();
    let env = section(&md, "## Environment");
    assert!(env.contains("Equal on all 4 nodes"), "{env}");
    for fact in ["6.18.0", "| cpus ", "mtu=1500", "config_available=true"] {
        assert_eq!(env.matches(fact).count(), 1, "{fact} in\n{env}");
    }
    for i in 1..=4 {
        assert_eq!(env.matches(&format!("host-{i}")).count(), 1, "{env}");
        assert_eq!(env.matches(&format!("| node{i} ")).count(), 1, "{env}");
    }
}

#[test]
fn the_report_opens_with_a_summary_and_tables_and_the_appendix_holds_the_details() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &SynthSpec::study(7)).unwrap();
    report_run(dir.path(), &ReportOptions::default()).unwrap();
    let in_order = |file: &str, order: &[&str]| {
        let md = std::fs::read_to_string(dir.path().join(file)).unwrap();
        let positions: Vec<usize> = order
            .iter()
            .map(|h| md.find(h).unwrap_or_else(|| panic!("{file}: no {h}")))
            .collect();
        assert!(
            positions.windows(2).all(|w| w[0] < w[1]),
            "{file}: {order:?} at {positions:?}"
        );
        md
    };
    let paper = in_order(
        "report.md",
        &[
            "## Summary",
            "## Configurations",
            "## Results: token TCP, local-wire",
            "## Results: token TCP, remote-wire",
            "## Figures",
            "## Method",
            "## Setup",
        ],
    );
    assert!(paper.lines().nth(2).unwrap().starts_with("## Summary"));
    for detail in ["## Findings", "## Aggregate throughput", "## Environment"] {
        assert!(!paper.contains(detail), "report.md holds {detail}");
    }
    in_order(
        "appendix.md",
        &[
            "## Findings",
            "## Aggregate throughput",
            "## Failed points",
            "## Environment",
        ],
    );
}

/// Every line of a Markdown table in `md`.
fn table_rows(md: &str) -> Vec<&str> {
    md.lines().filter(|l| l.starts_with('|')).collect()
}

#[test]
fn report_md_fits_a_page_with_every_label_defined_once_in_its_legend() {
    let dir = tempfile::tempdir().unwrap();
    write_run(dir.path(), &SynthSpec::study(7)).unwrap();
    report_run(dir.path(), &ReportOptions::default()).unwrap();
    let paper = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    let rows = table_rows(&paper);
    assert!(rows.len() > 10, "{paper}");
    for row in &rows {
        assert!(
            row.chars().count() <= 100,
            "{} characters: {row}",
            row.chars().count()
        );
    }
    // The appendix keeps the full tables, whose rows are as wide as their configurations.
    let appendix = std::fs::read_to_string(dir.path().join("appendix.md")).unwrap();
    assert!(
        table_rows(&appendix)
            .iter()
            .any(|r| r.chars().count() > 100)
    );

    let cell = |row: &str, i: usize| row.split('|').nth(i + 1).unwrap().trim().to_owned();
    let legend = section(&paper, "## Configurations");
    let defined: Vec<String> = table_rows(legend)
        .iter()
        .skip(2)
        .map(|r| cell(r, 0))
        .collect();
    let mut unique = defined.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        unique.len(),
        defined.len(),
        "a label defined twice: {defined:?}"
    );
    let mut used: Vec<String> = Vec::new();
    for part in paper.split("## Results: ").skip(1) {
        for row in table_rows(part).iter().skip(2) {
            used.push(cell(row, 0));
        }
    }
    assert!(!used.is_empty());
    for label in &used {
        assert!(
            defined.contains(label),
            "{label} is not in the legend {defined:?}"
        );
    }
    // Each label is shorter than the configuration it stands for.
    assert!(
        defined.iter().all(|l| l.chars().count() <= 8),
        "{defined:?}"
    );

    // tables.tex: the same tables with booktabs' rules.
    let tex = std::fs::read_to_string(dir.path().join("tables.tex")).unwrap();
    let results = paper.matches("## Results: ").count();
    assert_eq!(
        tex.matches("\\begin{tabular}").count(),
        results + 1,
        "{tex}"
    );
    assert_eq!(tex.matches("\\toprule").count(), results + 1);
    assert_eq!(tex.matches("\\bottomrule").count(), results + 1);
    for label in &defined {
        assert!(
            tex.contains(&format!("\n{label} & ")),
            "{label} not in tables.tex"
        );
    }
}

#[test]
fn interval_headings_name_what_the_intervals_are() {
    let dir = tempfile::tempdir().unwrap();
    // Every configuration with three repetitions: no interval reaches 95%.
    let mut spec = SynthSpec::study(7);
    spec.reps = 3;
    for c in &mut spec.configs {
        c.reps = None;
    }
    spec.failed.clear();
    spec.broken_pairs.clear();
    spec.broken_trials.clear();
    write_run(dir.path(), &spec).unwrap();
    report_run(dir.path(), &ReportOptions::default()).unwrap();
    let md = std::fs::read_to_string(dir.path().join("appendix.md")).unwrap();
    let table = section(&md, "## Aggregate throughput");
    assert!(
        table.contains(
            "[min, max], too few repetitions for 95% (it covers the median with 75% at n=3)"
        ),
        "{table}"
    );
    assert!(!table.contains("95% confidence interval"), "{table}");
    assert!(
        !table.contains('†'),
        "one kind of interval needs no mark: {table}"
    );
}

/// Predicts the given token cells, one configuration at a time.
struct Model(Vec<(&'static str, &'static str, f64)>);

impl orchestrate::report::PredictThroughput for Model {
    fn predictions(&self) -> Vec<orchestrate::report::CellPrediction> {
        use orchestrate::plan::throughput_model::{Bound, Prediction};
        self.0
            .iter()
            .map(
                |&(topology, bonding, v)| orchestrate::report::CellPrediction {
                    topology: topology.into(),
                    bonding: bonding.into(),
                    placement: orchestrate::results::PlacementKind::LocalWire,
                    pairs: 1,
                    prediction: Prediction {
                        size_bytes: 64,
                        aggregate_mbit_s: v,
                        per_pair_mbit_s: vec![v],
                        bound: Bound::Latency,
                        host_bound: None,
                        one_way_us: 0.0,
                        wire_capacity_mbit_s: None,
                    },
                },
            )
            .collect()
    }
}

#[test]
fn a_cell_below_the_model_cites_the_counters_its_records_carry_or_says_unexplained() {
    // Point 0 is the bonded bus's one pair at 64 B: every record of its six repetitions
    // carries 3 retransmissions (1 pair × 4 trials × 2 ends × 6 repetitions = 144); the
    // routed mesh's point beside it counted none. The model predicts both at twice what
    // they measured.
    let dir = tempfile::tempdir().unwrap();
    let mut spec = SynthSpec::study(7);
    spec.tcp_retrans = Some((0..6).map(|rep| (0, rep)).collect());
    write_run(dir.path(), &spec).unwrap();
    let model = Model(vec![
        ("bonded-dual-net", "balance-rr", 2.5),
        ("routed-mesh-4x4", "none", 3.0),
    ]);
    let opts = ReportOptions {
        model: Some(&model),
        ..Default::default()
    };
    report_run(dir.path(), &opts).unwrap();
    let md = std::fs::read_to_string(dir.path().join("appendix.md")).unwrap();
    let table = section(&md, "## Measured against the model");
    let row = |topology: &str| {
        table
            .lines()
            .find(|l| l.starts_with(&format!("| {topology}")))
            .unwrap_or_else(|| panic!("no {topology} row in\n{table}"))
    };
    assert!(
        row("bonded-dual-net").contains("| 144 retransmissions"),
        "{table}"
    );
    assert!(row("routed-mesh-4x4").contains("| unexplained"), "{table}");
    assert!(
        table.contains("Of the 2 cells outside ±10%, 1 is unexplained"),
        "{table}"
    );
    // Without counters in the records nothing is cited: the same shortfall is unexplained.
    let bare = tempfile::tempdir().unwrap();
    write_run(bare.path(), &SynthSpec::study(7)).unwrap();
    report_run(bare.path(), &opts).unwrap();
    let md = std::fs::read_to_string(bare.path().join("appendix.md")).unwrap();
    let table = section(&md, "## Measured against the model");
    assert!(
        table.contains("Of the 2 cells outside ±10%, 2 are unexplained"),
        "{table}"
    );
}

#[test]
fn the_drift_check_is_compared_with_its_cell_and_counts_in_no_cell() {
    let report = |drift_check: Option<f64>| {
        let dir = tempfile::tempdir().unwrap();
        let spec = SynthSpec {
            drift_check,
            ..SynthSpec::study(7)
        };
        write_run(dir.path(), &spec).unwrap();
        report_run(dir.path(), &ReportOptions::default()).unwrap();
        let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap();
        (
            format!("{}\n{}", read("report.md"), read("appendix.md")),
            read("summary.csv"),
            read("comparison.csv"),
        )
    };
    let (_, cells, comparison) = report(None);
    for (factor, drifted) in [(0.85, true), (1.0, false)] {
        let (md, check_cells, check_comparison) = report(Some(factor));
        let drift = section(&md, "## Drift over the run");
        assert!(drift.contains("measuring its reference cell"), "{drift}");
        assert!(
            drift.contains("These repetitions count in no cell"),
            "{drift}"
        );
        assert_eq!(
            drift.contains("**the machine drifted between the first configuration and the last**"),
            drifted,
            "{factor}: {drift}"
        );
        assert_eq!(
            section(&md, "## Summary").contains("drifted between the first configuration"),
            drifted,
            "{factor}"
        );
        assert_eq!(check_cells, cells, "{factor}: the check changed a cell");
        assert_eq!(check_comparison, comparison, "{factor}");
    }
    let (md, _, _) = report(Some(0.85));
    assert!(
        md.contains("0.85× ["),
        "{}",
        section(&md, "## Drift over the run")
    );
}

#[test]
fn a_failed_point_shows_what_tcp_counted_on_its_connections_and_its_cell_does_not() {
    // Point 0 (the bonded bus's one pair at 64 B), repetition 3: its pair's trials end in an
    // error, and every record of it carries 3 retransmissions (4 trials × 2 ends = 24). The
    // other repetitions are clean; point 5's repetition 1 failed before any record.
    let dir = tempfile::tempdir().unwrap();
    let mut spec = SynthSpec::study(7);
    spec.tcp_retrans = Some(vec![(0, 3)]);
    spec.broken_pairs = vec![(0, 3, 0)];
    write_run(dir.path(), &spec).unwrap();
    let model = Model(vec![("bonded-dual-net", "balance-rr", 2.5)]);
    let opts = ReportOptions {
        model: Some(&model),
        ..Default::default()
    };
    report_run(dir.path(), &opts).unwrap();
    let md = std::fs::read_to_string(dir.path().join("appendix.md")).unwrap();
    let failed = section(&md, "## Failed points");
    assert!(failed.contains("TCP meanwhile"), "{failed}");
    let row = |point: &str, rep: &str| {
        failed
            .lines()
            .find(|l| {
                l.split('|').nth(1).map(str::trim) == Some(point)
                    && l.split('|').nth(2).map(str::trim) == Some(rep)
            })
            .unwrap_or_else(|| panic!("no row for {point}/{rep} in\n{failed}"))
    };
    assert!(
        row("0", "3").contains(
            "24 retransmissions, 0 out-of-order segments, 0 reorderings seen, 0 D-SACK \
             duplicates (8 trial records)"
        ),
        "{failed}"
    );
    assert!(row("5", "1").contains("no counters"), "{failed}");
    // The failed repetition's retransmissions are not its cell's: the shortfall is unexplained.
    let table = section(&md, "## Measured against the model");
    let bonded = table
        .lines()
        .find(|l| l.starts_with("| bonded-dual-net"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(bonded.contains("| unexplained"), "{table}");
}

#[test]
fn a_drift_check_without_samples_is_said_not_left_out() {
    // The synthetic study has 12 points; the drift check is point 12, and every repetition
    // of it failed.
    let dir = tempfile::tempdir().unwrap();
    let spec = SynthSpec {
        drift_check: Some(1.0),
        failed: (0..6).map(|rep| (12, rep)).collect(),
        ..SynthSpec::study(7)
    };
    write_run(dir.path(), &spec).unwrap();
    report_run(dir.path(), &ReportOptions::default()).unwrap();
    let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap();
    let md = format!("{}\n{}", read("report.md"), read("appendix.md"));
    let findings = section(&md, "## Summary");
    assert!(
        findings.contains("The drift check gave no comparison: 0 repetition(s)"),
        "{findings}"
    );
    let drift = section(&md, "## Drift over the run");
    assert!(
        drift.contains("0 repetition(s) at the end (6 more gave no sample"),
        "{drift}"
    );
    assert!(
        drift.contains("drift between configurations is not measured in this run"),
        "{drift}"
    );
}

#[test]
fn a_run_with_both_bond_drivers_compares_them_cell_by_cell_in_report_md() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = SynthSpec::study(11);
    let mut kernel = spec.configs[0].clone();
    kernel.topology = "bond4-kernel".into();
    kernel.bond_driver = Some(orchestrate::results::BondDriver::Kernel);
    // The kernel's driver a third faster per message than the stand-in.
    kernel.latency_us = 120.0;
    let mut userspace = spec.configs[0].clone();
    userspace.topology = "bond4-userspace".into();
    // TCP's counters clean on both, and the nodes busier with the stand-in: the report names
    // the CPU, and only because the records counted it.
    spec.tcp_retrans = Some(Vec::new());
    kernel.cpu_busy_ms_per_trial = Some(20.0);
    userspace.cpu_busy_ms_per_trial = Some(60.0);
    spec.configs = vec![kernel, userspace];
    spec.baseline = Some("bond4-kernel".into());
    write_run(dir.path(), &spec).unwrap();
    report_run(dir.path(), &ReportOptions::default()).unwrap();
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    let part = section(&md, "## The userspace bond against the kernel's driver");
    assert!(
        part.contains("(bond4-kernel)") && part.contains("(bond4-userspace)"),
        "{part}"
    );
    let rows: Vec<&str> = part.lines().filter(|l| l.starts_with("| token")).collect();
    assert_eq!(
        rows.len(),
        spec.pairs.len() * spec.sizes.len(),
        "one row per cell measured with both:\n{part}"
    );
    assert!(
        part.lines()
            .all(|l| l.chars().count() <= 100 || !l.starts_with('|')),
        "{part}"
    );
    // Slower per message, so below 1 where the hosts decide: said with the cause measured.
    assert!(part.contains("the userspace bond gives 0."), "{part}");
    let causes: Vec<&str> = part.lines().filter(|l| l.starts_with("- token")).collect();
    assert!(!causes.is_empty(), "{part}");
    for line in causes {
        assert!(
            line.contains("the difference is the stand-in's work per frame"),
            "{line}"
        );
    }
    // The CPU per MB beside each cell, userspace over kernel: three times the busy time per
    // trial, over no more bytes.
    for row in part.lines().filter(|l| l.starts_with("| token")) {
        let cpu = row.trim_end_matches('|').rsplit('|').next().unwrap().trim();
        let factor: f64 = cpu.trim_end_matches('×').parse().expect("a factor");
        assert!(factor >= 3.0, "{row}");
    }
}
