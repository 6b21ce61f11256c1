//! The commands beside the study: `schema` (for editors), `completions` (for shells) and
//! `medium simulate` (the MAC model in simulated time). Each is checked for what a user relies
//! on, not only that it prints.

mod common;

use std::process::{Command, Output};

fn orchestrate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_orchestrate"))
        .args(args)
        .current_dir(common::root())
        .output()
        .expect("orchestrate runs")
}

fn stdout_of_success(args: &[&str]) -> String {
    let out = orchestrate(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Every top-level key of every spec the project ships is in the schema an editor is given:
/// a key the loaders accept and the schema lacks would be flagged in the user's editor. Each
/// format's schema is one document an editor loads on its own: a JSON Schema at the top, with
/// the file's keys as its properties.
#[test]
fn the_schema_knows_every_key_the_shipped_specs_use() {
    let mut checked = 0;
    let mut references_checked = 0;
    for (format, dir) in [("experiment", "experiments"), ("topology", "topologies")] {
        let schema: serde_json::Value =
            serde_json::from_str(&stdout_of_success(&["schema", format])).unwrap();
        assert!(
            schema["$schema"]
                .as_str()
                .is_some_and(|s| s.contains("json-schema.org")),
            "{format}: not a JSON Schema document at the top"
        );
        let known = schema["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("no properties for {format}"));
        for entry in std::fs::read_dir(common::root().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|x| x != "toml") {
                continue;
            }
            let spec: toml::Table = std::fs::read_to_string(&path).unwrap().parse().unwrap();
            for key in spec.keys() {
                assert!(
                    known.contains_key(key),
                    "{}: `{key}` is not in the {format} schema",
                    path.display()
                );
            }
            // And every key of its `[[reference]]` tables.
            let references = spec.get("reference").and_then(|r| r.as_array());
            for table in references.into_iter().flatten() {
                let fields = &schema["$defs"]["Reference"]["properties"];
                for key in table.as_table().unwrap().keys() {
                    assert!(
                        fields.get(key).is_some(),
                        "{}: reference key `{key}` is not in the schema",
                        path.display()
                    );
                }
                references_checked += 1;
            }
            checked += 1;
        }
    }
    assert!(checked >= 11, "only {checked} shipped specs checked");
    assert!(
        references_checked >= 8,
        "grid4x4's references were not read"
    );
}

/// The inventory has a schema too, with every key the inventory module documents.
#[test]
fn the_inventory_schema_knows_defaults_and_hosts() {
    let schema: serde_json::Value =
        serde_json::from_str(&stdout_of_success(&["schema", "inventory"])).unwrap();
    let props = schema["properties"].as_object().expect("properties");
    assert!(
        props.contains_key("defaults") && props.contains_key("host"),
        "{schema}"
    );
    let text = schema.to_string();
    for key in [
        "user",
        "port",
        "identity",
        "known_hosts",
        "jump",
        "sudo",
        "nodes",
        "address",
    ] {
        assert!(
            text.contains(&format!("\"{key}\"")),
            "`{key}` missing: {text}"
        );
    }
}

#[test]
fn bash_completion_offers_the_subcommands() {
    let script = stdout_of_success(&["completions", "bash"]);
    assert!(script.contains("complete -F"), "not a bash completion");
    for sub in ["run", "report", "plan", "validate", "cluster", "medium"] {
        assert!(
            script.split_whitespace().any(|w| w == sub),
            "`{sub}` is not offered"
        );
    }
}

/// Rows of `medium simulate`: (frame bytes, stations, Mbit/s, Metcalfe & Boggs's Mbit/s).
fn simulate(args: &[&str]) -> Vec<(u32, usize, f64, f64)> {
    let mut all = vec!["medium", "simulate"];
    all.extend(args);
    stdout_of_success(&all)
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                f[6].parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn medium_simulate_is_deterministic_and_between_the_formula_and_the_wire() {
    let args = ["--stations", "1,8", "--frames", "64,1536", "--seconds", "1"];
    let rows = simulate(&args);
    assert_eq!(rows.len(), 4, "{rows:?}");
    assert_eq!(rows, simulate(&args), "the same seed gave another run");
    for (frame, stations, mbit_s, formula) in rows {
        // Frame bits over frame, preamble and gap: 7.62 Mbit/s for 64 B, 9.87 for 1536 B.
        let ceiling = 10.0 * frame as f64 / (frame as f64 + 8.0 + 12.0);
        // The formula is a floor where stations contend; one station alone never does, and its
        // turnaround (12.8 µs, not the gap's 9.6) keeps it under the formula's framing alone.
        let floor = if stations > 1 {
            formula * 0.99
        } else {
            0.9 * ceiling
        };
        assert!(
            (floor..=ceiling).contains(&mbit_s),
            "{stations} stations, {frame} B: {mbit_s} outside [{floor:.2}, {ceiling:.2}]"
        );
    }
}

#[test]
fn medium_simulates_a_rate_spelt_as_topologies_and_papers_spell_it() {
    let args = |rate: &str| {
        [
            "--stations",
            "8",
            "--frames",
            "1536",
            "--seconds",
            "1",
            "--rate",
            rate,
        ]
        .map(String::from)
    };
    let run = |rate: &str| {
        let a = args(rate);
        simulate(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let bare = run("100000000");
    assert!(
        bare[0].2 > 50.0,
        "100 Mbit/s carries more than 50: {bare:?}"
    );
    for spelt in ["100mbit", "100 Mbit/s", "100Mbit/s", "0.1gbit"] {
        assert_eq!(run(spelt), bare, "{spelt}");
    }
    let out = orchestrate(&["medium", "simulate", "--rate", "100mbps"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did you mean"), "{err}");
}

#[test]
fn medium_simulate_refuses_a_frame_ethernet_cannot_carry() {
    let out = orchestrate(&["medium", "simulate", "--frames", "20"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("20 is not an Ethernet frame length (64 to 1536 bytes)"),
        "{err}"
    );
}

/// A file that cannot be read has no place in it to point at: its error names the file alone
/// (no made-up 1:1), and a directory is told what to give instead.
#[test]
fn an_unreadable_spec_is_named_without_a_made_up_place() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_orchestrate"))
        .arg("validate")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let named = format!("{}: cannot read the file", dir.path().display());
    assert!(err.contains(&named), "{err}");
    assert!(!err.contains(":1:1"), "{err}");
    assert!(err.contains("it is a directory"), "{err}");
}
