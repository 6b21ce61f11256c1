//! Every bad inventory under tests/inventories/bad/ (and every experiment there whose inventory
//! lacks something) must fail with its expected message at its expected place; each file's
//! first line says what: `# expect: LINE:COLUMN: message fragment`. Good inventories load,
//! `validate` takes both, and a run refuses a bad inventory before it creates anything.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use orchestrate::plan;
use orchestrate::remote::Inventory;
use orchestrate::spec::SpecErrors;

fn corpus() -> PathBuf {
    common::root().join("tests/inventories")
}

/// Loads `path` as `orchestrate validate` reads it: an experiment with its inventory, or an
/// inventory on its own.
fn load(path: &Path) -> Result<(), SpecErrors> {
    let text = std::fs::read_to_string(path).unwrap();
    let table: toml::Table = text.parse().unwrap_or_default();
    if table.contains_key("topologies") {
        let e = plan::load(path)?;
        plan::check_inventory(&e).map(|_| ())
    } else {
        Inventory::load(path).map(|_| ())
    }
}

/// `(line, column, fragment)` from a file's `# expect:` line.
fn expectation(f: &Path) -> (usize, usize, String) {
    let text = std::fs::read_to_string(f).unwrap();
    let expect = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("# expect: "))
        .unwrap_or_else(|| {
            panic!(
                "{}: first line must be `# expect: LINE:COL: message`",
                f.display()
            )
        })
        .to_owned();
    let (loc, fragment) = expect.split_once(": ").unwrap_or((&expect, ""));
    let (line, col) = loc.split_once(':').expect("LINE:COL");
    (
        line.parse().unwrap(),
        col.parse().unwrap(),
        fragment.to_owned(),
    )
}

#[test]
fn every_bad_inventory_gets_its_message_and_location() {
    let mut files: Vec<_> = std::fs::read_dir(corpus().join("bad"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 30, "the corpus has {} files", files.len());
    let mut failures = Vec::new();
    for f in &files {
        let (line, col, fragment) = expectation(f);
        let name = f.file_name().unwrap().to_string_lossy();
        match load(f) {
            Ok(()) => failures.push(format!("{name}: loaded without error")),
            Err(errs) => {
                let first = &errs.errors[0];
                let got = (first.location.line, first.location.column);
                let full = format!("{} {}", first.message, first.help.as_deref().unwrap_or(""));
                if got != (line, col) || !full.contains(&fragment) {
                    failures.push(format!(
                        "{name}: expected {line}:{col} containing {fragment:?}, got {}:{} {full:?}",
                        got.0, got.1
                    ));
                }
                assert_eq!(first.location.file, *f, "errors name the file they are in");
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_problem_in_a_file_is_reported_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hosts.toml");
    std::fs::write(
        &path,
        "[defaults]\nport = 0\nuser = \"-x\"\n\n[[host]]\nnodes = \"n1\"\naddress = \"a b\"\n\
         jump = \"gw:99999\"\n\n[[host]]\nnodes = \"n1\"\naddress = \"c\"\nidentity = \"nope\"\n",
    )
    .unwrap();
    let errs = Inventory::load(&path).unwrap_err();
    let got: Vec<(usize, usize)> = errs
        .errors
        .iter()
        .map(|e| (e.location.line, e.location.column))
        .collect();
    assert_eq!(
        got,
        [(2, 8), (3, 8), (7, 11), (8, 8), (11, 9), (13, 12)],
        "{errs:?}"
    );
}

#[test]
fn a_good_inventory_loads_with_its_paths_resolved() {
    let inv = Inventory::load(&corpus().join("support/hosts.toml")).unwrap();
    assert_eq!(inv.hosts.len(), 3);
    let n2 = inv.host("n2").unwrap();
    assert_eq!(n2.address, "10.0.0.2");
    assert_eq!(
        n2.identity.as_deref(),
        Some(corpus().join("support/identity").as_path())
    );
}

#[test]
fn hosts_no_topology_uses_are_noted_where_they_are_listed() {
    let e = plan::load(&corpus().join("support/exp-good.toml")).unwrap();
    let checked = plan::check_inventory(&e)
        .unwrap()
        .expect("an inventory experiment");
    assert_eq!(checked.unused.len(), 1, "{:?}", checked.unused);
    let note = &checked.unused[0];
    assert_eq!((note.location.line, note.location.column), (7, 9));
    assert!(note.message.contains("node `n9`"), "{}", note.message);
}

fn orchestrate(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_orchestrate"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn validate_reads_inventories_alone_and_with_their_experiment() {
    let good = corpus().join("support/hosts.toml");
    let out = orchestrate(&["validate", good.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("inventory: 3 hosts"));

    let exp = corpus().join("support/exp-good.toml");
    let out = orchestrate(&["validate", exp.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("hosts-extra.toml:7:9") && stderr.contains("`n9`"),
        "{stderr}"
    );

    let bad = corpus().join("bad/exp-inventory-missing-node.toml");
    let out = orchestrate(&["validate", bad.to_str().unwrap()]);
    assert!(!out.status.success());
    // The report wraps long lines to the terminal's width, and the path's length decides where.
    let stderr = String::from_utf8_lossy(&out.stderr).replace('│', " ");
    let flowed = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flowed.contains("has no host for node `n3`"), "{out:?}");
}

#[test]
fn a_run_refuses_a_bad_inventory_before_it_creates_anything() {
    let out_root = tempfile::tempdir().unwrap();
    let exp = corpus().join("bad/exp-inventory-missing-node.toml");
    let out = orchestrate(&[
        "run",
        exp.to_str().unwrap(),
        "--out",
        out_root.path().to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    // The report wraps long lines to the terminal's width, and the path's length decides where.
    let stderr = String::from_utf8_lossy(&out.stderr).replace('│', " ");
    let flowed = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flowed.contains("has no host for node `n3`"), "{out:?}");
    assert_eq!(
        std::fs::read_dir(out_root.path()).unwrap().count(),
        0,
        "no run directory"
    );
}
