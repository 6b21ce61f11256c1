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
    // Root's home is the node's own: the host's dotfiles do not run in its sessions, and what
    // a session writes there stays in the node.
    let home_probe = format!("netns-home-probe-{}", std::process::id());
    ssh(&nodes[0], &format!("echo mine > ~/{home_probe}"));
    assert!(
        !Path::new("/root").join(&home_probe).exists(),
        "the node's home is the host's /root"
    );
    assert_eq!(
        ssh(
            &nodes[1],
            &format!("test -e ~/{home_probe} && echo shared || echo private")
        )
        .trim(),
        "private"
    );
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
    let removed = down(d, &name, &state_arg);
    assert!(removed.contains("network namespaces"), "{removed}");
    down(d, &name, &state_arg);
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
    // Each point line counts its records that carry progress samples (the report reads the
    // samples only where some point has them): as many as records.jsonl holds.
    let records = std::fs::read_to_string(runs[0].join("records.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = records
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for p in points
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
    {
        let sampled = records
            .iter()
            .filter(|r| r["point"] == p["point"] && r["rep"] == p["rep"])
            .filter(|r| r["progress_bytes"].is_array())
            .count();
        assert!(sampled > 0, "a token trial's timing side is sampled: {p}");
        assert_eq!(p["sampled_records"], sampled, "{p}");
    }

    settle(&cluster, &before);
    assert_eq!(host_snapshot(&cluster), before, "after the run");
    assert!(!cluster_dir.exists(), "the cluster's directory is removed");
    eprintln!("took {:.1} s", started.elapsed().as_secs_f64());
}

/// A grid topology of the generator's, named `name`.
fn grid(name: &str, side: u32, interconnect: &str) -> String {
    format!(
        "name = \"{name}\"\n[generator]\nkind = \"grid\"\nrows = {side}\ncols = {side}\n\
         interconnect = \"{interconnect}\"\nrate = \"10mbit\"\nmedium = \"shared\"\n"
    )
}

/// `orchestrate cluster down` of the cluster `name` in `state`, which must succeed: its
/// standard output.
fn down(d: &Path, name: &str, state: &str) -> String {
    orchestrate_ok(
        d,
        &["cluster", "down", "--name", name, "--state-dir", state],
    )
}

/// `orchestrate cluster ssh` on a node: its standard output.
fn on_node(d: &Path, name: &str, state: &str, node: &str, command: &str) -> String {
    orchestrate_ok(
        d,
        &[
            "cluster",
            "ssh",
            "--name",
            name,
            "--state-dir",
            state,
            node,
            "--",
            command,
        ],
    )
}

#[test]
fn netns_tun_sshd_iperf3_a_switched_mesh_passes_verify_on_its_buses_and_across_its_switches() {
    require_needs!();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let name = format!("nsw{}", std::process::id());
    let cluster = ClusterName::parse(&name).unwrap();
    std::fs::write(d.join("switched.toml"), grid(&name, 2, "switched")).unwrap();
    let state = d.join("state").display().to_string();
    let before = host_snapshot(&cluster);

    let up = orchestrate_ok(
        d,
        &[
            "cluster",
            "up",
            "switched.toml",
            "--kind",
            "netns",
            "--state-dir",
            &state,
        ],
    );
    assert!(
        up.contains(&format!("cluster {name} is up: 4 nodes")),
        "{up}"
    );
    let result = std::panic::catch_unwind(|| {
        // `cluster ssh` reaches a netns node as it does a container.
        assert_eq!(on_node(d, &name, &state, "n04", "hostname").trim(), "n04");
        // `verify` gives the wires addresses of its own and measures each bus, and across
        // each switch (a namespace of its own with a bridge) between buses it joins.
        let table = orchestrate_ok(
            d,
            &[
                "cluster",
                "verify",
                "--name",
                &name,
                "--state-dir",
                &state,
                "--seconds",
                "2",
            ],
        );
        assert!(table.contains("n01:eth1->"), "{table}");
        assert!(table.contains("switch "), "{table}");
        assert!(!table.contains("FAIL"), "{table}");
    });
    down(d, &name, &state);
    settle(&cluster, &before);
    assert_eq!(host_snapshot(&cluster), before, "after `cluster down`");
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

/// How long CI waits for clusters that are not this test's to go before `down --all`.
const OTHERS_GONE_WITHIN: Duration = Duration::from_secs(600);

/// [`other_clusters`], once they have had up to `wait` to go.
fn other_clusters_after(ours: &ClusterName, wait: Duration) -> Option<String> {
    let deadline = Instant::now() + wait;
    loop {
        let others = other_clusters(ours);
        if others.is_none() || Instant::now() >= deadline {
            return others;
        }
        eprintln!("waiting for other clusters to go before `down --all`: {others:?}");
        std::thread::sleep(Duration::from_secs(5));
    }
}

/// Another cluster's traces on this host (by its runtime directory, namespaces, links or
/// docker objects), which `down --all` would rightly remove too; `None` when there are none.
fn other_clusters(ours: &ClusterName) -> Option<String> {
    let mine = |n: &str| ours_by_name(n, ours) || n == ours.as_str();
    let listed = |dir: &str| -> Vec<String> {
        std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut others: Vec<String> = listed("/run/orchestrate")
        .into_iter()
        .chain(
            listed("/run/netns")
                .into_iter()
                .filter(|n| ClusterName::is_cluster_namespace(n)),
        )
        .filter(|n| !mine(n))
        .collect();
    others.extend(
        sh("ip -o link show")
            .lines()
            .filter_map(|l| l.split(": ").nth(1))
            .map(|n| n.split('@').next().unwrap_or(n).to_owned())
            .filter(|n| {
                (ClusterName::is_cluster_mgmt_link(n)
                    || ClusterName::is_cluster_wire(n)
                    || ClusterName::is_cluster_ifb(n))
                    && !mine(n)
            }),
    );
    let docker = Command::new("docker")
        .args(["ps", "-aq", "--filter", "label=org.orchestrate.cluster"])
        .output();
    if let Some(out) = docker.ok().filter(|o| o.status.success()) {
        others.extend(
            String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .map(|c| format!("container {c}")),
        );
    }
    (!others.is_empty()).then(|| others.join(", "))
}

/// Starts `cluster up` and kills it (SIGKILL) once `ready` holds, or fails after 60 s.
fn kill_up_when(d: &Path, args: &[&str], ready: impl Fn() -> bool) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_orchestrate"))
        .args(args)
        .current_dir(d)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("orchestrate starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("`cluster up` ended ({status}) before it could be killed halfway");
        }
        assert!(Instant::now() < deadline, "`cluster up` never got halfway");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn netns_tun_sshd_an_up_killed_halfway_is_removed_by_down_and_by_down_all_without_its_state() {
    require_needs!();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let name = format!("nsk{}", std::process::id());
    let cluster = ClusterName::parse(&name).unwrap();
    // 64 nodes: long enough an `up` to be caught in the middle.
    std::fs::write(d.join("mesh.toml"), grid(&name, 8, "routed")).unwrap();
    let state = d.join("state");
    let state_arg = state.display().to_string();
    let up = [
        "cluster",
        "up",
        "mesh.toml",
        "--kind",
        "netns",
        "--state-dir",
        &state_arg,
    ];
    let before = host_snapshot(&cluster);
    let namespaces_made = || {
        std::fs::read_dir("/run/netns").is_ok_and(|rd| {
            rd.flatten()
                .filter(|e| ours_by_name(&e.file_name().to_string_lossy(), &cluster))
                .count()
                >= 32
        })
    };
    let sshd_log = Path::new("/run/orchestrate").join(&name).join("sshd.log");
    let sshds_starting = || {
        std::fs::read_dir("/proc").is_ok_and(|rd| {
            rd.flatten()
                .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
                .any(|c| String::from_utf8_lossy(&c).contains("/run/node/sshd_config"))
        }) && sshd_log.exists()
    };

    // Killed while its namespaces are made, then while its sshds start: `down` with the
    // state `up` wrote removes all of it.
    for (when, ready) in [
        (
            "while making namespaces",
            &namespaces_made as &dyn Fn() -> bool,
        ),
        ("while starting sshds", &sshds_starting),
    ] {
        kill_up_when(d, &up, ready);
        assert_ne!(
            host_snapshot(&cluster),
            before,
            "killed {when}: nothing made yet"
        );
        down(d, &name, &state_arg);
        settle(&cluster, &before);
        assert_eq!(
            host_snapshot(&cluster),
            before,
            "killed {when}, then `down`"
        );
    }

    // Killed again, and the state directory lost: `down --all` finds the cluster by its
    // names alone. It removes every cluster on the host, so it runs only where this one is
    // alone (always in CI, which runs the cluster tests one at a time).
    kill_up_when(d, &up, sshds_starting);
    std::fs::remove_dir_all(&state).unwrap();
    // In CI it waits for them: another run of the suite may share the host's engine (its
    // cluster tests take minutes), and `down --all` would take that run's cluster too.
    let in_ci = std::env::var_os("CI").is_some();
    let wait = if in_ci {
        OTHERS_GONE_WITHIN
    } else {
        Duration::ZERO
    };
    match other_clusters_after(&cluster, wait) {
        Some(others) if !in_ci => {
            eprintln!("`down --all` not exercised: this host also holds {others}");
            down(d, &name, &state_arg);
        }
        Some(others) => {
            panic!("CI runs this test alone, yet after {wait:?} the host still holds {others}")
        }
        None => {
            let out = orchestrate_ok(d, &["cluster", "down", "--all", "--state-dir", &state_arg]);
            assert!(out.contains(&name), "{out}");
        }
    }
    settle(&cluster, &before);
    assert_eq!(
        host_snapshot(&cluster),
        before,
        "killed, state lost, then `down --all`"
    );
}
