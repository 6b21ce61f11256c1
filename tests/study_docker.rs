//! The 1996 study end to end, reduced: `experiments/reschke96.toml` itself, with its sweep cut
//! to the smallest and largest token, 1 and 7 pairs, one 1-second run per point, run on the
//! virtual cluster. The report must set the analytic model beside every token cell and hold
//! each of the paper's findings against a measurement. Needs docker and root.

#[path = "common/need.rs"]
mod need;
#[path = "vcluster_support.rs"]
mod support;

use std::path::PathBuf;

/// The study's experiment with a smaller sweep; everything else (topologies, patterns,
/// placements, report) as committed.
/// `model.csv`: each token cell, its measurement and the model's prediction.
struct ModelCells(Vec<std::collections::HashMap<String, String>>);

impl ModelCells {
    fn parse(csv: &str) -> ModelCells {
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let rows = lines
            .map(|l| {
                // The last column (a measured cause) may hold commas; the others do not.
                let values = l.splitn(header.len(), ',');
                header
                    .iter()
                    .map(|h| h.to_string())
                    .zip(values.map(str::to_owned))
                    .collect()
            })
            .collect();
        ModelCells(rows)
    }

    /// The measured aggregate of one cell, in Mbit/s (bonding as each topology has it).
    fn measured(&self, topology: &str, placement: &str, size: u64, pairs: u64) -> f64 {
        let row = self
            .0
            .iter()
            .find(|r| {
                r["topology"] == topology
                    && r["placement"] == placement
                    && r["size_bytes"] == size.to_string()
                    && r["pairs"] == pairs.to_string()
            })
            .unwrap_or_else(|| panic!("no cell {topology} {placement} {size} B x {pairs}"));
        row["measured_mbit_s"].parse().unwrap()
    }

    fn over_the_wire(&self) -> usize {
        self.0
            .iter()
            .filter(|r| r["over_the_wire"] == "true")
            .count()
    }

    /// Unbonded cells within the model's ±10%, and all unbonded cells.
    fn unbonded_within_tolerance(&self) -> (usize, usize) {
        let unbonded: Vec<_> = self.0.iter().filter(|r| r["bonding"] == "none").collect();
        let within = unbonded
            .iter()
            .filter(|r| r["within_tolerance"] == "true")
            .count();
        (within, unbonded.len())
    }

    /// Measured over model of every bonded cell, with the cell.
    fn bonded_ratios(&self) -> Vec<(String, f64)> {
        self.0
            .iter()
            .filter(|r| r["bonding"] != "none")
            .map(|r| {
                (
                    format!(
                        "{} {} {} B x {}",
                        r["topology"], r["placement"], r["size_bytes"], r["pairs"]
                    ),
                    r["measured_over_model"].parse().unwrap(),
                )
            })
            .collect()
    }
}

fn reduced_study(dir: &std::path::Path) -> PathBuf {
    let root = support::repo_root();
    let text = std::fs::read_to_string(root.join("experiments/reschke96.toml")).unwrap();
    let mut spec: toml::Table = text.parse().unwrap();
    let topologies: Vec<toml::Value> = spec["topologies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let p = root.join("experiments").join(t.as_str().unwrap());
            toml::Value::String(p.canonicalize().unwrap().display().to_string())
        })
        .collect();
    spec.insert("topologies".into(), toml::Value::Array(topologies));
    for w in spec["workload"].as_array_mut().unwrap() {
        let w = w.as_table_mut().unwrap();
        let token = w["pattern"].as_str() == Some("token");
        if token {
            let sizes = w["sizes"].as_array().unwrap();
            let (first, last) = (sizes[0].clone(), sizes[sizes.len() - 1].clone());
            w.insert("sizes".into(), toml::Value::Array(vec![first, last]));
            // Seconds per run rather than a count: a few dozen 4-byte exchanges finish before
            // seven pairs have all started, and a point whose pairs never overlap has no
            // aggregate. Three seconds and one warm-up exchange: seven pairs of 8 KiB tokens
            // on one bus of 486 hosts take their turns slowly, and a frame dropped after 16
            // collisions stalls its pair for a TCP retransmission timeout; with two seconds
            // and five warm-up exchanges one pair sometimes measured nothing (two CI runs here).
            w.remove("exchanges");
            // A run of a duration has no count to go past.
            w.remove("min_duration");
            w.insert("duration".into(), toml::Value::String("3s".into()));
            w.insert("warmup".into(), toml::Value::Integer(1));
        } else {
            w.insert("exchanges".into(), toml::Value::Integer(1));
        }
        w.insert(
            "pairs".into(),
            toml::Value::Array(vec![toml::Value::Integer(1), toml::Value::Integer(7)]),
        );
        w.insert("repetitions".into(), toml::Value::Integer(1));
    }
    let path = dir.join("reschke96.toml");
    std::fs::write(&path, toml::to_string(&spec).unwrap()).unwrap();
    path
}

#[test]
fn docker_reduced_reschke96_runs_end_to_end_and_reports_every_finding() {
    require_needs!();
    let tmp = tempfile::tempdir().unwrap();
    let exp = reduced_study(tmp.path());
    let out = tmp.path().join("out");
    let state = tmp.path().join("state");
    let run = support::orchestrate(&[
        "run",
        // Checks the chain, not timing: tests run side by side on few cores.
        "--timing",
        "record",
        exp.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--state-dir",
        state.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let dir = std::fs::read_dir(out.join("reschke96"))
        .unwrap()
        .next()
        .expect("a run directory")
        .unwrap()
        .path();

    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(
        manifest["topologies"].as_array().unwrap().len(),
        5,
        "{manifest}"
    );
    let points = std::fs::read_to_string(dir.join("points.jsonl")).unwrap();
    let failed: Vec<&str> = points
        .lines()
        .filter(|l| !l.contains(r#""status":"ok""#))
        .collect();
    assert!(failed.is_empty(), "failed points: {failed:?}");

    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let section = report
        .split("## Against the 1996 paper")
        .nth(1)
        .expect("the report compares with the 1996 paper")
        .split("\n## ")
        .next()
        .unwrap();
    // Each finding's verdict, as the full study's committed run has them: the reduced sweep
    // keeps the cells every verdict rests on (4 B and 8 KiB, 1 and 7 pairs).
    for (finding, verdicts) in [
        ("Local-wire peak", &["agrees"][..]),
        ("Remote-wire traffic", &["agrees"]),
        ("Switched channel bonding", &["agrees"]),
        ("Software routing vs switches", &["agrees"]),
        // One copy per point: the seven-copy ranking may come out either way at the margin.
        ("Disk/net balance", &["agrees", "agrees in part"]),
    ] {
        let heading = section
            .lines()
            .find(|l| l.starts_with(&format!("### {finding} — ")))
            .unwrap_or_else(|| panic!("no finding {finding:?} in:\n{section}"));
        let verdict = heading.rsplit(" — ").next().unwrap();
        assert!(
            verdicts.contains(&verdict),
            "{heading}: expected {verdicts:?}\n{section}"
        );
    }
    // The per-cell material is in the appendix.
    let appendix = std::fs::read_to_string(dir.join("appendix.md")).unwrap();
    assert!(appendix.contains("## Measured against the model"));
    // Every token cell has its prediction beside it.
    let model = std::fs::read_to_string(dir.join("model.csv")).unwrap();
    let summary = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    let token_cells = summary.lines().filter(|l| l.starts_with("token,")).count();
    let why = appendix
        .lines()
        .filter(|l| l.contains("never overlapped") || l.contains("reported errors"))
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(
        model.lines().count() - 1,
        token_cells,
        "a token cell has no aggregate ({why}):\n{model}"
    );

    // The directions the verdicts rest on, from the cells themselves.
    let cells = ModelCells::parse(&model);
    let mesh_local = cells.measured("switched-mesh-4x4", "local-wire", 8192, 7);
    let dual_local = cells.measured("bonded-dual-net", "local-wire", 8192, 7);
    assert!(
        mesh_local > 2.0 * dual_local,
        "local-wire 7 x 8 KiB: switched mesh {mesh_local} vs bonded dual net {dual_local} Mbit/s"
    );
    let routed = cells.measured("routed-mesh-4x4", "remote-wire", 8192, 7);
    let switched = cells.measured("switched-mesh-4x4", "remote-wire", 8192, 7);
    assert!(
        (0.75..=1.25).contains(&(routed / switched)),
        "remote-wire 7 x 8 KiB, heavy traffic: routed {routed} ~ switched {switched} Mbit/s"
    );
    let light_routed = cells.measured("routed-mesh-4x4", "remote-wire", 4, 1);
    let light_switched = cells.measured("switched-mesh-4x4", "remote-wire", 4, 1);
    assert!(
        light_routed < 0.8 * light_switched,
        "remote-wire 1 x 4 B, light traffic: routed {light_routed} below switched {light_switched}"
    );
    // None over its wires. Where the emulator and the model alone decide (no bond), the share
    // within the model's band the README states for this reduced run: at least 85% (19 of 20
    // in a CI run of 2026-12-06). The bonded cells run the worker's userspace bond, whose work
    // per frame the model does not hold (3-7x the kernel driver's CPU per MB, measured in the
    // bond-validation run): none above the model's band, none below 0.4 of the model (a broken
    // bond, not a slow one); 0.61-0.99 in that run, 4 of 12 within 10%.
    assert_eq!(cells.over_the_wire(), 0, "{model}");
    let (within, all) = cells.unbonded_within_tolerance();
    eprintln!("{within} of {all} unbonded token cells within 10% of the model");
    assert!(all >= 16, "the reduced study's unbonded cells:\n{model}");
    assert!(
        within * 20 >= all * 17,
        "{within} of {all} unbonded token cells within 10% of the model; at least 85% expected:\n{model}"
    );
    let bonded = cells.bonded_ratios();
    assert!(
        bonded.len() >= 8,
        "the reduced study's bonded cells:\n{model}"
    );
    for (cell, ratio) in &bonded {
        assert!(
            (0.4..=1.1).contains(ratio),
            "{cell}: measured {ratio:.2}x the model; the userspace bond between 0.4 of it and \
             its band expected:\n{model}"
        );
    }
    eprintln!(
        "{}",
        section
            .lines()
            .filter(|l| l.starts_with("###") || l.starts_with("- Here"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
