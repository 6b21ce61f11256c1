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

/// A cluster name for one test in this run: the test's word and this process's id. A cluster
/// a killed earlier run left on the engine, or one another run of the suite has up right now,
/// then never stands in this test's way (nor this test in theirs).
pub fn cluster_name(word: &str) -> String {
    let name = format!("{word}-{}", std::process::id());
    orchestrate::vcluster::ClusterName::parse(&name).expect("a valid cluster name");
    name
}

fn host_output(prog: &str, args: &[&str]) -> String {
    let o = Command::new(prog)
        .args(args)
        .output()
        .expect("host command runs");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The docker networks and containers of clusters other than `own` right now, by their
/// labels.
struct OtherClusters {
    networks: Vec<String>,
    containers: Vec<String>,
}

impl OtherClusters {
    fn now(own: &str) -> OtherClusters {
        let label = orchestrate::vcluster::LABEL_CLUSTER;
        let format = format!("{{{{.Label \"{label}\"}}}}");
        let filter = format!("label={label}");
        let mut names: Vec<String> = ["ps -a", "network ls"]
            .iter()
            .flat_map(|cmd| {
                let mut args: Vec<&str> = cmd.split(' ').collect();
                args.extend(["--filter", &filter, "--format", &format]);
                host_output("docker", &args)
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .filter(|n| n != own)
            .collect();
        names.sort();
        names.dedup();
        let ids = |cmd: &[&str], name: &str| -> Vec<String> {
            let mut args = cmd.to_vec();
            let filter = format!("label={label}={name}");
            args.extend(["-q", "--no-trunc", "--filter", &filter]);
            host_output("docker", &args)
                .split_whitespace()
                .map(str::to_owned)
                .collect()
        };
        let networks = names
            .iter()
            .flat_map(|n| ids(&["network", "ls"], n))
            .collect();
        let containers = names.iter().flat_map(|n| ids(&["ps", "-a"], n)).collect();
        OtherClusters {
            networks,
            containers,
        }
    }

    /// Whether host interface `ifname` (its `ip -o link` line is `line`) is another cluster's:
    /// a name of a cluster's form (`oc` and five hex digits: ifbs, wire ends, the bridges and
    /// ports of clusters without containers) not `own`'s, the bridge of another cluster's
    /// docker network, or a container port on such a bridge.
    fn own_link(&self, own: &str, ifname: &str, line: &str) -> bool {
        let mark = orchestrate::vcluster::ClusterName::IFB_MARK;
        let ours = orchestrate::vcluster::ClusterName::parse(own)
            .expect("a valid cluster name")
            .ifb_prefix();
        let clusters_form = ifname.strip_prefix(mark).is_some_and(|rest| {
            rest.len() > 5 && rest.as_bytes()[..5].iter().all(u8::is_ascii_hexdigit)
        });
        let bridges: Vec<String> = self
            .networks
            .iter()
            .map(|id| format!("br-{}", &id[..12.min(id.len())]))
            .collect();
        (clusters_form && !ifname.starts_with(&ours))
            || bridges
                .iter()
                .any(|b| ifname == b || line.contains(&format!(" master {b} ")))
    }
}

/// Fails naming what `what` added to or took from the host between two [`host_snapshot`]s.
pub fn assert_host_as_found(before: &[String], after: &[String], what: &str) {
    let appeared: Vec<_> = after.iter().filter(|l| !before.contains(l)).collect();
    let vanished: Vec<_> = before.iter().filter(|l| !after.contains(l)).collect();
    assert!(
        appeared.is_empty() && vanished.is_empty(),
        "{what} changed the host:\n  appeared: {appeared:#?}\n  vanished: {vanished:#?}"
    );
}

/// Everything on the host a cluster could leave behind, apart from what belongs to other
/// clusters (another run of the suite may share the engine): interfaces, qdiscs, docker
/// networks and containers, medium emulators.
pub fn host_snapshot(own: &str) -> Vec<String> {
    let others = OtherClusters::now(own);
    let mut lines = Vec::new();
    let mut theirs = Vec::new();
    for l in host_output("ip", &["-o", "link", "show"]).lines() {
        // "12: name@if11: <...>": the name (and index) says which interface it is.
        let name: Vec<&str> = l.splitn(3, ": ").take(2).collect();
        let ifname = name.get(1).map_or("", |n| n.split('@').next().unwrap_or(n));
        if others.own_link(own, ifname, l) {
            theirs.push(ifname.to_owned());
            continue;
        }
        lines.push(format!("link {}", name.join(" ")));
    }
    for l in host_output("tc", &["qdisc", "show"]).lines() {
        let dev = l.split_whitespace().skip_while(|w| *w != "dev").nth(1);
        if dev.is_some_and(|d| theirs.iter().any(|t| t == d)) {
            continue;
        }
        lines.push(format!("qdisc {l}"));
    }
    for l in host_output("docker", &["network", "ls", "-q", "--no-trunc"]).lines() {
        if !others.networks.iter().any(|n| n == l) {
            lines.push(format!("network {l}"));
        }
    }
    for l in host_output("docker", &["ps", "-aq", "--no-trunc"]).lines() {
        if !others.containers.iter().any(|c| c == l) {
            lines.push(format!("container {l}"));
        }
    }
    // Medium emulators (`orchestrate medium serve`), by pid and command line: each names its
    // cluster's directory (`/run/orchestrate/<name>/medium.json`); one naming another's is
    // another cluster's.
    for l in host_output("pgrep", &["-af", "medium serve"]).lines() {
        let another = l.contains("/medium.") && !l.contains(&format!("/{own}/medium."));
        if !l.contains("pgrep") && !another {
            lines.push(format!("process {l}"));
        }
    }
    lines.sort();
    lines
}
