//! What the command line writes for programs and for log files: `validate --json` as one JSON
//! document with every problem located; log lines with colour only on a terminal, and not
//! even there under NO_COLOR.

mod common;
#[path = "common/need.rs"]
mod need;

use std::path::Path;
use std::process::{Command, Output};

fn orchestrate(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_orchestrate"));
    cmd.args(args)
        .current_dir(common::root())
        .env_remove("NO_COLOR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("orchestrate runs")
}

/// A topology whose only problem is at line 5, column 8: a rate that is not one.
const BAD_TOPOLOGY: &str = "name = \"bad\"\nnodes = [\"n[1-2]\"]\n[[segment]]\nname = \"a\"\n\
                            rate = \"10 furlongs\"\nmembers = [\"n[1-2]:eth1\"]\n";

fn write_bad(dir: &Path) -> String {
    let path = dir.join("bad.toml");
    std::fs::write(&path, BAD_TOPOLOGY).unwrap();
    path.display().to_string()
}

#[test]
fn validate_json_is_one_document_with_each_problem_located() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = write_bad(tmp.path());
    let out = orchestrate(
        &[
            "validate",
            "--json",
            "experiments/grid4x4.toml",
            &bad,
            "topologies/single-net.toml",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "a bad file fails the check");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stdout));
    });
    assert_eq!(v["ok"], false);
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), 3);

    let experiment = &files[0];
    assert_eq!(experiment["kind"], "experiment");
    assert_eq!(experiment["ok"], true);
    assert!(
        experiment["summary"]
            .as_str()
            .unwrap()
            .starts_with("experiment grid4x4: 3 topologies"),
        "{experiment}"
    );
    assert_eq!(experiment["errors"].as_array().unwrap().len(), 0);

    let broken = &files[1];
    assert_eq!(
        (&broken["kind"], &broken["ok"]),
        (&"topology".into(), &false.into())
    );
    assert!(broken["summary"].is_null());
    let e = &broken["errors"][0];
    assert_eq!(e["file"], bad.as_str());
    assert_eq!(
        (e["line"].as_u64(), e["column"].as_u64()),
        (Some(5), Some(8)),
        "{e}"
    );
    assert!(e["message"].as_str().unwrap().contains("furlongs"), "{e}");
    assert!(
        e.get("help").is_some(),
        "help is always there, null or not: {e}"
    );

    assert_eq!(files[2]["ok"], true);
    assert_eq!(files[2]["kind"], "topology");
}

#[test]
fn validate_json_of_good_files_exits_zero_and_the_example_inventory_is_good() {
    let out = orchestrate(
        &[
            "validate",
            "--json",
            "experiments/grid4x4.toml",
            "topologies/single-net.toml",
            "examples/hosts.toml",
        ],
        &[],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["files"][2]["kind"], "inventory");
    assert_eq!(v["files"][2]["summary"], "inventory: 16 hosts");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn piped_log_lines_and_errors_carry_no_escape_codes() {
    let tmp = tempfile::tempdir().unwrap();
    let graphs = tmp.path().join("graphs");
    let out = orchestrate(
        &[
            "plan",
            "experiments/grid4x4.toml",
            "--graph",
            graphs.to_str().unwrap(),
        ],
        &[],
    );
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(log.contains("wrote "), "the log lines are there: {log}");
    assert!(!log.contains('\x1b'), "{log:?}");

    let bad = write_bad(tmp.path());
    let out = orchestrate(&["validate", &bad], &[]);
    let errors = String::from_utf8_lossy(&out.stderr);
    assert!(errors.contains("furlongs"), "{errors}");
    assert!(!errors.contains('\x1b'), "{errors:?}");
}

/// Runs `args` on a pseudo-terminal (util-linux `script`), returning all it wrote there.
fn on_a_terminal(args: &[&str], env: &[(&str, &str)]) -> String {
    let exe = env!("CARGO_BIN_EXE_orchestrate");
    let line = std::iter::once(exe)
        .chain(args.iter().copied())
        .map(|a| shlex::try_quote(a).unwrap().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let mut cmd = Command::new("script");
    cmd.args(["-q", "-e", "-c", &line, "/dev/null"])
        .current_dir(common::root())
        .env_remove("NO_COLOR")
        .env("TERM", "xterm");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("script runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn pty_on_a_terminal_log_lines_are_coloured_unless_no_color_is_set() {
    require_needs!();
    let tmp = tempfile::tempdir().unwrap();
    let graphs = tmp.path().join("graphs");
    let args = [
        "plan",
        "experiments/grid4x4.toml",
        "--graph",
        graphs.to_str().unwrap(),
    ];
    let coloured = on_a_terminal(&args, &[]);
    assert!(coloured.contains("wrote "), "{coloured}");
    assert!(
        coloured.contains('\x1b'),
        "no colour on a terminal: {coloured:?}"
    );
    let plain = on_a_terminal(&args, &[("NO_COLOR", "1")]);
    assert!(plain.contains("wrote "), "{plain}");
    assert!(
        !plain.contains('\x1b'),
        "colour despite NO_COLOR: {plain:?}"
    );
}
