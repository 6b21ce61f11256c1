//! What `orchestrate run` tells a log file and a program: with stderr piped to a file, plain
//! lines (one per configuration and per point, each with the time left) and no escape codes;
//! with `--events`, one valid JSON object per line, one `point_finished` per point, between
//! `run_started` and `run_finished`. Needs docker and root (only the virtual cluster can run
//! points on this machine).

#[path = "common/need.rs"]
mod need;
#[path = "vcluster_support.rs"]
mod support;

use std::process::{Command, Stdio};

/// A 2x2 routed mesh, named for this test alone so its cluster meets no other test's.
const TOPOLOGY: &str = r#"
name = "out-mesh"
[generator]
kind = "grid"
rows = 2
cols = 2
interconnect = "routed"
rate = "10mbit"
"#;

const EXPERIMENT: &str = r#"
name = "out"
seed = 3
topologies = ["out-mesh.toml"]

[[workload]]
pattern = "token"
sizes = [512, 4096]
pairs = [1]
placement = ["local-wire", "remote-wire"]
exchanges = 50
repetitions = 1
"#;

#[test]
fn docker_run_piped_writes_plain_lines_and_one_json_event_per_line() {
    require_needs!();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("out-mesh.toml"), TOPOLOGY).unwrap();
    std::fs::write(dir.join("out.toml"), EXPERIMENT).unwrap();
    let stderr_log = dir.join("stderr.log");
    let events = dir.join("events.jsonl");
    let state = dir.join("state");
    let status = Command::new(env!("CARGO_BIN_EXE_orchestrate"))
        .arg("run")
        // Checks the chain, not timing: tests run side by side on few cores.
        .args(["--timing", "record"])
        .arg(dir.join("out.toml"))
        .arg("--out")
        .arg(dir.join("reports"))
        .arg("--state-dir")
        .arg(&state)
        .arg("--events")
        .arg(&events)
        .current_dir(support::repo_root())
        .env_remove("NO_COLOR")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_log).unwrap())
        .status()
        .unwrap();
    let log = std::fs::read_to_string(&stderr_log).unwrap();
    eprintln!("{log}");
    support::orchestrate(&[
        "cluster",
        "down",
        "--name",
        "out-mesh",
        "--state-dir",
        state.to_str().unwrap(),
    ]);
    assert!(status.success(), "{log}");

    // Plain lines: no escape sequence at all, a line per point ending in the time left.
    assert!(!log.contains('\x1b'), "escape codes in the log:\n{log:?}");
    let point_lines: Vec<&str> = log.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(point_lines.len(), 4, "{log}");
    for (i, l) in point_lines.iter().enumerate() {
        assert!(l.starts_with(&format!("[{}/4] point ", i + 1)), "{l}");
        assert!(
            l.contains(" out-mesh token ") && l.contains(": ok in "),
            "{l}"
        );
        assert!(l.ends_with(" left)"), "{l}");
    }
    assert!(
        log.contains("configuration 1/1: out-mesh (none) on 4 node(s)"),
        "{log}"
    );

    // Events: every line one JSON object with a type and a time.
    let text = std::fs::read_to_string(&events).unwrap();
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    for e in &events {
        assert!(e["type"].is_string() && e["time"].is_string(), "{e}");
    }
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"run_started"), "{types:?}");
    assert_eq!(types.last(), Some(&"run_finished"), "{types:?}");
    assert_eq!(events[0]["points"], 4);
    let count = |t: &str| types.iter().filter(|x| **x == t).count();
    assert_eq!(count("configuration_up"), 1, "{types:?}");
    assert_eq!(count("point_started"), 4, "{types:?}");
    assert_eq!(count("point_finished"), 4, "{types:?}");
    assert_eq!(count("teardown"), 1, "{types:?}");
    assert_eq!(count("failure"), 0, "{types:?}");
    let finished: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["type"] == "point_finished")
        .collect();
    for (i, e) in finished.iter().enumerate() {
        assert_eq!(e["status"], "ok", "{e}");
        assert_eq!(e["done"], i + 1, "{e}");
        assert_eq!(e["figures"]["pairs"], 1, "{e}");
        assert!(
            e["figures"]["throughput_mbit_s"].as_f64().unwrap() > 0.0,
            "{e}"
        );
    }
    assert_eq!(finished.last().unwrap()["left_s"], 0.0);
    let end = events.last().unwrap();
    assert_eq!(
        (end["ok"].as_u64(), end["failed"].as_u64()),
        (Some(4), Some(0))
    );
    assert!(end["error"].is_null() && end["stopped"].is_null(), "{end}");
}
