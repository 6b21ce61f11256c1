//! The virtual cluster without containers (`--kind netns`), end to end on this machine: four
//! nodes on a shared bus carried by the medium emulator, each a network namespace with its own
//! sshd. Each node is reached over plain ssh exactly as the inventory says (its hostname, its
//! `mgmt0`, a /tmp of its own); an experiment with `[cluster] kind = "netns"` brings up its
//! own cluster, measures a few token points and takes it down; and the host is then exactly as
//! before: links, qdiscs, network namespaces, /run/orchestrate, processes.
//!
//! Everything the test makes carries its process id (the topology's and so the cluster's
//! name); what belongs to another cluster is left out of the host's snapshots.

mod common;
#[path = "common/need.rs"]
mod need;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use orchestrate::vcluster::ClusterName;

fn topology(name: &str) -> String {
    format!(
        r#"
name = "{name}"
nodes = ["n[1-4]"]

[[segment]]
name = "bus"
rate = "10mbit"
medium = "shared"
members = ["n[1-4]:eth1"]
"#
    )
}

fn experiment(topology_file: &str) -> String {
    format!(
        r#"
name = "nstoken"
seed = 7
topologies = ["{topology_file}"]

[cluster]
kind = "netns"

[[workload]]
pattern = "token"
sizes = [512]
pairs = [1]
placement = ["local-wire"]
exchanges = 50
repetitions = 2
statistic = "best"
"#
    )
}

fn orchestrate(dir: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_orchestrate"))
        .args(args)
        .current_dir(dir)
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

fn orchestrate_ok(dir: &Path, args: &[&str]) -> String {
    let out = orchestrate(dir, args);
    assert!(
        out.status.success(),
        "orchestrate {} failed",
        args.join(" ")
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn sh(cmd: &str) -> String {
    let out = Command::new("sh")
        .args(["-c", cmd])
        .output()
        .expect("sh runs");
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether a host link or namespace name is of `ours`: every link and namespace a netns
/// cluster makes is named from its prefix. Other tests make and remove their own namespaces
/// and links meanwhile (and other clusters theirs), so only these are compared.
fn ours_by_name(name: &str, ours: &ClusterName) -> bool {
    name.starts_with(&ours.ifb_prefix())
}

/// What the cluster could leave on the host: its links and their qdiscs, its network
/// namespaces, its runtime directory, and the processes that serve nodes (sshds of netns
/// nodes, medium emulators).
fn host_snapshot(ours: &ClusterName) -> String {
    let links: BTreeSet<String> = sh("ip -o link show")
        .lines()
        .filter_map(|l| l.split(": ").nth(1))
        .map(|n| n.split('@').next().unwrap_or(n).to_owned())
        .filter(|n| ours_by_name(n, ours))
        .collect();
    let qdiscs: BTreeSet<String> = sh("tc qdisc show")
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .skip_while(|w| *w != "dev")
                .nth(1)
                .is_some_and(|dev| links.contains(dev))
        })
        .map(str::to_owned)
        .collect();
    let namespaces: BTreeSet<String> = std::fs::read_dir("/run/netns")
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| ours_by_name(n, ours))
                .collect()
        })
        .unwrap_or_default();
    let runtime: BTreeSet<String> = std::fs::read_dir("/run/orchestrate")
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n == ours.as_str())
                .collect()
        })
        .unwrap_or_default();
    let processes: BTreeSet<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| {
            c.contains("/run/node/sshd_config")
                || c.contains(&format!("/run/orchestrate/{ours}/"))
                || c.contains("orchestrate-node")
        })
        .collect();
    format!(
        "links: {links:?}\nqdiscs: {qdiscs:?}\nnamespaces: {namespaces:?}\n\
         /run/orchestrate: {runtime:?}\nprocesses: {processes:?}"
    )
}

/// A node as the inventory describes it.
struct Login {
    node: String,
    address: String,
    identity: PathBuf,
    known_hosts: PathBuf,
}

fn logins(cluster_dir: &Path) -> Vec<Login> {
    let text = std::fs::read_to_string(cluster_dir.join("inventory.toml")).unwrap();
    let inv: toml::Value = toml::from_str(&text).unwrap();
    let defaults = &inv["defaults"];
    assert_eq!(defaults["user"].as_str(), Some("root"));
    assert_eq!(defaults["port"].as_integer(), Some(22));
    let rel = |key: &str| cluster_dir.join(defaults[key].as_str().unwrap());
    inv["host"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| Login {
            node: h["nodes"].as_str().unwrap().to_owned(),
            address: h["address"].as_str().unwrap().to_owned(),
            identity: rel("identity"),
            known_hosts: rel("known_hosts"),
        })
        .collect()
}

/// Runs `cmd` on the node with plain ssh, as the inventory says (its key, its pinned host
/// key, root, port 22).
fn ssh(l: &Login, cmd: &str) -> String {
    let out = Command::new("ssh")
        .args([
            "-F",
            "/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=yes",
        ])
        .arg("-o")
        .arg(format!("UserKnownHostsFile={}", l.known_hosts.display()))
        .args(["-o", "IdentitiesOnly=yes", "-o", "ConnectTimeout=5", "-i"])
        .arg(&l.identity)
        .args(["-p", "22", "-l", "root", "--", &l.address, cmd])
        .output()
        .expect("ssh runs");
    assert!(
        out.status.success(),
        "{}: {cmd}: {}",
        l.node,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Waits up to 10 s for the host to look as `before` (the kernel finishes a deleted
/// namespace in the background), printing what differs while it does not.
fn settle(ours: &ClusterName, before: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = host_snapshot(ours);
        if now == before || Instant::now() > deadline {
            return;
        }
        for (was, is) in before.lines().zip(now.lines()).filter(|(a, b)| a != b) {
            eprintln!("differs:\n  before: {was}\n  now:    {is}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn netns_tun_sshd_a_four_node_cluster_serves_a_token_run_and_leaves_the_host_as_found() {
    require_needs!();
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let name = format!("nsq{}", std::process::id());
    let cluster = ClusterName::parse(&name).unwrap();
    std::fs::write(d.join("four.toml"), topology(&name)).unwrap();
    std::fs::write(d.join("nstoken.toml"), experiment("four.toml")).unwrap();
    let state = d.join("state");
    let state_arg = state.display().to_string();
    let before = host_snapshot(&cluster);

    let up = orchestrate_ok(
        d,
        &[
            "cluster",
            "up",
            "four.toml",
            "--kind",
            "netns",
            "--state-dir",
            &state_arg,
        ],
    );
    assert!(
        up.contains(&format!("cluster {name} is up: 4 nodes")),
        "{up}"
    );
    let cluster_dir = state.join("clusters").join(&name);
    let nodes = logins(&cluster_dir);
    assert_eq!(
        nodes.iter().map(|l| l.node.as_str()).collect::<Vec<_>>(),
        ["n1", "n2", "n3", "n4"]
    );
    for l in &nodes {
        assert_eq!(ssh(l, "hostname").trim(), l.node, "{}'s hostname", l.node);
        let mgmt = ssh(l, "ip -br addr show dev mgmt0");
        assert!(mgmt.contains(&l.address), "{}: {mgmt}", l.node);
        let eth1 = ssh(l, "ip -br link show dev eth1");
        assert!(eth1.contains("eth1"), "{}: {eth1}", l.node);
        assert!(
            ssh(l, "command -v orchestrate-worker").trim() == "/usr/local/bin/orchestrate-worker",
            "{}: the worker is on the PATH",
            l.node
        );
    }
    // A file written in one node's /tmp is that node's alone.
    let probe = format!("/tmp/netns-probe-{}", std::process::id());
    ssh(&nodes[0], &format!("echo mine > {probe}"));
    assert_eq!(ssh(&nodes[0], &format!("cat {probe}")).trim(), "mine");
    assert!(!Path::new(&probe).exists(), "the node's /tmp is the host's");
    assert_eq!(
        ssh(
            &nodes[1],
            &format!("test -e {probe} && echo shared || echo private")
        )
        .trim(),
        "private"
    );

    let status = orchestrate_ok(
        d,
        &[
            "cluster",
            "status",
            "--name",
            &name,
            "--state-dir",
            &state_arg,
        ],
    );
    assert!(status.contains("4 network namespaces"), "{status}");
    assert_eq!(status.matches(" running ").count(), 4, "{status}");

    // Down twice: the second finds nothing and succeeds.
    let down = orchestrate_ok(
        d,
        &[
            "cluster",
            "down",
            "--name",
            &name,
            "--state-dir",
            &state_arg,
        ],
    );
    assert!(down.contains("network namespaces"), "{down}");
    orchestrate_ok(
        d,
        &[
            "cluster",
            "down",
            "--name",
            &name,
            "--state-dir",
            &state_arg,
        ],
    );
    settle(&cluster, &before);
    assert_eq!(host_snapshot(&cluster), before, "after `cluster down`");

    // An experiment of kind netns brings up its own cluster and takes it down.
    let out = orchestrate(
        d,
        &[
            "run",
            "nstoken.toml",
            "--out",
            "out",
            "--state-dir",
            &state_arg,
            "--timing",
            "record",
        ],
    );
    assert!(out.status.success(), "the run failed");
    let runs: Vec<PathBuf> = std::fs::read_dir(d.join("out/nstoken"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let points = std::fs::read_to_string(runs[0].join("points.jsonl")).unwrap();
    let ok = points
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|p| p["status"] == "ok")
        .count();
    assert_eq!(ok, 2, "one point, two repetitions: {points}");

    settle(&cluster, &before);
    assert_eq!(host_snapshot(&cluster), before, "after the run");
    assert!(!cluster_dir.exists(), "the cluster's directory is removed");
    eprintln!("took {:.1} s", started.elapsed().as_secs_f64());
}
