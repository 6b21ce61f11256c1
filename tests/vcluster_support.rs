//! Helpers shared by the virtual cluster's docker tests (included with `#[path]`; as a test
//! target of its own it has no tests).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `orchestrate` with the given arguments from the repository root.
pub fn orchestrate(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_orchestrate"))
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("orchestrate runs");
    eprintln!(
        "$ orchestrate {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Like [`orchestrate`], but the command must succeed; returns stdout and the wall time.
pub fn orchestrate_ok(args: &[&str]) -> (String, Duration) {
    let t = Instant::now();
    let out = orchestrate(args);
    assert!(
        out.status.success(),
        "orchestrate {} failed",
        args.join(" ")
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        t.elapsed(),
    )
}

/// A four-node topology with every kind of wire: a shared bus over all four nodes, emulated
/// frame by frame by the medium emulator, and two switched segments joined by a switch, shaped
/// by token buckets (`emulation = "rate"`).
pub const FOUR_NODES: &str = r#"
name = "vc-four"
nodes = ["n[1-4]"]

[[segment]]
name = "bus"
rate = "10mbit"
medium = "shared"
members = ["n[1-4]:eth1"]

[[segment]]
name = "left"
rate = "10mbit"
medium = "switched"
emulation = "rate"
members = ["n[1-2]:eth2"]

[[segment]]
name = "right"
rate = "10mbit"
medium = "switched"
emulation = "rate"
members = ["n[3-4]:eth2"]

[[switch]]
name = "core"
segments = ["left", "right"]
"#;

pub fn write_four_nodes(dir: &Path) -> PathBuf {
    let p = dir.join("vc-four.toml");
    std::fs::write(&p, FOUR_NODES).unwrap();
    p
}

/// Runs `remote` on a node with plain OpenSSH, exactly as the inventory says, host key checked.
pub fn ssh(host: &orchestrate::remote::Host, remote: &str) -> Output {
    let known_hosts = host
        .known_hosts
        .as_ref()
        .expect("the inventory pins host keys");
    let identity = host.identity.as_ref().expect("the inventory names a key");
    Command::new("ssh")
        .args([
            "-F",
            "/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=yes",
        ])
        .arg("-o")
        .arg(format!("UserKnownHostsFile={}", known_hosts.display()))
        .args([
            "-o",
            "GlobalKnownHostsFile=/dev/null",
            "-o",
            "ConnectTimeout=10",
            "-i",
        ])
        .arg(identity)
        .args([
            "-p",
            &host.port.expect("the inventory gives the port").to_string(),
            "-l",
            host.user.as_deref().expect("the inventory gives the user"),
            "--",
            &host.address,
            remote,
        ])
        .output()
        .expect("ssh runs")
}

/// The JSON lines of a run file (records.jsonl, media.jsonl, ...); the file must exist.
pub fn jsonl(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Everything on the host a cluster could leave behind.
pub fn host_snapshot() -> Vec<String> {
    let run = |prog: &str, args: &[&str]| -> String {
        let o = Command::new(prog)
            .args(args)
            .output()
            .expect("host command runs");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let mut lines = Vec::new();
    for l in run("ip", &["-o", "link", "show"]).lines() {
        // "12: name@if11: <...>": the name (and index) says which interface it is.
        let name: Vec<&str> = l.splitn(3, ": ").take(2).collect();
        lines.push(format!("link {}", name.join(" ")));
    }
    for l in run("tc", &["qdisc", "show"]).lines() {
        lines.push(format!("qdisc {l}"));
    }
    for l in run("docker", &["network", "ls", "-q", "--no-trunc"]).lines() {
        lines.push(format!("network {l}"));
    }
    for l in run("docker", &["ps", "-aq", "--no-trunc"]).lines() {
        lines.push(format!("container {l}"));
    }
    // Medium emulators (`orchestrate medium serve`), by pid and command line.
    for l in run("pgrep", &["-af", "medium serve"]).lines() {
        if !l.contains("pgrep") {
            lines.push(format!("process {l}"));
        }
    }
    lines.sort();
    lines
}
