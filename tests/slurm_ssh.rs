//! `[cluster] kind = "slurm"` with a faked `SLURM_JOB_NODELIST`: a topology's nodes land on
//! the allocation's hosts in order (proved over SSH against a real sshd on three loopback
//! addresses: each node answers from the address it was given), the `[cluster]` table's SSH
//! settings reach ssh, and `run` refuses to start outside an allocation or in one too small,
//! before it creates anything. A run on hosts that refuse connections also shows what `run`
//! writes without docker: plain progress lines when piped, `--events`, and `-q`.

mod common;
#[path = "common/need.rs"]
mod need;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::sshd::Sshd;
use orchestrate::plan::{self, experiment::Cluster};
use orchestrate::remote::slurm::{Allocation, NODELIST_VAR};
use orchestrate::remote::{ConnectOptions, Inventory, NodeSource, SlurmAllocation};
use orchestrate::spec::NodeName;

/// Three nodes on one bus, listed out of alphabetical order: "in order" means the topology's.
const TRIO: &str = r#"
name = "trio"
nodes = ["zeta", "alpha", "mid"]

[[segment]]
name = "bus"
rate = "10mbit"
medium = "shared"
members = ["zeta:eth1", "alpha:eth1", "mid:eth1"]
"#;

/// An experiment on `trio` in a Slurm allocation, with `cluster` as its extra `[cluster]` keys.
fn write_experiment(dir: &Path, cluster: &str) -> PathBuf {
    std::fs::write(dir.join("trio.toml"), TRIO).unwrap();
    let text = format!(
        "name = \"slurm-trio\"\ntopologies = [\"trio.toml\"]\n\n[cluster]\nkind = \"slurm\"\n{cluster}\n\n\
         [[workload]]\npattern = \"pingpong\"\nsizes = [64]\npairs = [1]\nplacement = [\"local-wire\"]\n\
         exchanges = 10\n"
    );
    let path = dir.join("experiment.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `[cluster]` keys that reach `sshd` with its key, host key pinned.
fn ssh_keys(port: u16) -> String {
    format!(
        "user = \"{}\"\nport = {port}\nidentity = \"client_key\"\nknown_hosts = \"known_hosts\"",
        std::env::var("USER").unwrap_or_else(|_| "root".into())
    )
}

#[tokio::test]
async fn sshd_nodes_land_on_the_allocations_hosts_in_topology_order() {
    require_needs!();
    let hosts = ["127.0.0.1", "127.0.0.2", "127.0.0.3"];
    let sshd = Sshd::start_on(&hosts);
    let dir = sshd.dir.path();
    let e = plan::load(&write_experiment(dir, &ssh_keys(sshd.port))).unwrap();
    let Cluster::Slurm { ssh, sudo } = &e.cluster else {
        panic!("not a Slurm cluster: {:?}", e.cluster);
    };
    let topology = &e.topologies[0];
    let source = SlurmAllocation {
        // One host more than needed: it stays unused.
        allocation: Ok(Allocation::parse("127.0.0.[1-4]").unwrap()),
        ssh: ssh.clone(),
        sudo: *sudo,
        dir: dir.to_owned(),
    };
    let nodes = source.obtain(topology).await.unwrap();
    assert_eq!(nodes.inventory, dir.join("slurm-trio.toml"));

    let inventory = Inventory::load(&nodes.inventory).unwrap();
    let names: Vec<NodeName> = topology.nodes.iter().map(|n| n.name.clone()).collect();
    assert_eq!(names, ["zeta", "alpha", "mid"].map(|n| n.parse().unwrap()));
    let cluster =
        orchestrate::remote::Sessions::connect(&inventory, &names, &ConnectOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
    for (node, want) in names.iter().zip(hosts) {
        // "client-ip client-port server-ip server-port": the server address is the host the
        // node was mapped to.
        let out = cluster
            .run(node, "echo $SSH_CONNECTION", None, Duration::from_secs(10))
            .await
            .unwrap();
        let server = out.stdout.split_whitespace().nth(2).unwrap_or_default();
        assert_eq!(server, want, "{node}: {}", out.stdout);
    }
    cluster.close().await;
}

fn orchestrate(args: &[&str], nodelist: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_orchestrate"));
    cmd.args(args).env_remove(NODELIST_VAR).env("NO_COLOR", "1");
    if let Some(list) = nodelist {
        cmd.env(NODELIST_VAR, list);
    }
    cmd.output().expect("orchestrate runs")
}

/// `run` of the experiment in `dir` into `dir/reports`, with a stand-in worker binary (it is
/// only read: no run here gets as far as installing it).
fn run(dir: &Path, nodelist: Option<&str>) -> (Output, PathBuf) {
    run_with(dir, nodelist, &[])
}

fn run_with(dir: &Path, nodelist: Option<&str>, extra: &[&str]) -> (Output, PathBuf) {
    let out_root = dir.join("reports");
    let experiment = dir.join("experiment.toml");
    let mut args = vec![
        "run",
        experiment.to_str().unwrap(),
        "--out",
        out_root.to_str().unwrap(),
        "--worker",
        experiment.to_str().unwrap(),
    ];
    args.extend(extra);
    (orchestrate(&args, nodelist), out_root)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn outside_an_allocation_run_says_so_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write_experiment(dir.path(), "");
    let (out, reports) = run(dir.path(), None);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("SLURM_JOB_NODELIST is not set") && err.contains("salloc"),
        "{err}"
    );
    assert!(!reports.exists(), "a run directory was created");
}

#[test]
fn too_small_an_allocation_names_what_is_needed_and_what_was_given() {
    let dir = tempfile::tempdir().unwrap();
    write_experiment(dir.path(), "");
    let (out, reports) = run(dir.path(), Some("cn[1-2]"));
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("topology `trio` needs 3 node(s) but the Slurm allocation has 2"),
        "{err}"
    );
    assert!(err.contains("cn[1-2]"), "{err}");
    assert!(!reports.exists(), "a run directory was created");
}

#[test]
fn a_run_in_an_allocation_writes_its_inventory_in_order_into_the_run_directory() {
    // Nothing listens on this port, so the run stops at connecting, before any change (and
    // would on a machine without sshd too): what it wrote by then is the inventory.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    write_experiment(dir.path(), &format!("port = {port}\nsudo = true"));
    let events = dir.path().join("events.jsonl");
    let (out, reports) = run_with(
        dir.path(),
        Some("127.0.0.[5-9]"),
        &["--events", events.to_str().unwrap()],
    );
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("nothing was changed"), "{err}");
    // Piped, the progress is plain lines.
    assert!(
        err.contains("\nconfiguration 1/1: trio (none) on 3 node(s)\n"),
        "{err}"
    );
    assert!(!err.contains('\x1b'), "{err:?}");
    // The events say what happened, one JSON object per line.
    let events: Vec<serde_json::Value> = std::fs::read_to_string(&events)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        types,
        ["run_started", "failure", "run_finished"],
        "{events:?}"
    );
    assert!(events.iter().all(|e| e["time"].is_string()));
    let run_dir = PathBuf::from(events[0]["run_dir"].as_str().unwrap());
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("plan.json")).unwrap()).unwrap();
    assert_eq!(
        events[0]["points"],
        plan["points"].as_array().unwrap().len()
    );
    assert_eq!(events[1]["configuration"], 0);
    assert!(
        events[2]["error"]
            .as_str()
            .is_some_and(|e| e.contains("nothing was changed")),
        "{}",
        events[2]
    );
    let inventories: Vec<PathBuf> = walk(&reports)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "slurm-trio.toml"))
        .collect();
    assert_eq!(inventories.len(), 1, "{inventories:?}\n{err}");
    let inv = Inventory::load(&inventories[0]).unwrap();
    let placed: Vec<(String, String)> = inv
        .hosts
        .values()
        .map(|h| (h.node.to_string(), h.address.clone()))
        .collect();
    assert_eq!(
        placed,
        [
            ("alpha", "127.0.0.6"),
            ("mid", "127.0.0.7"),
            ("zeta", "127.0.0.5")
        ]
        .map(|(n, a)| (n.to_owned(), a.to_owned()))
    );
    assert!(inv.hosts.values().all(|h| h.port == Some(port) && h.sudo));
}

#[test]
fn quiet_leaves_only_the_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    write_experiment(dir.path(), &format!("port = {port}"));
    let (out, _) = run_with(dir.path(), Some("127.0.0.[5-9]"), &["-q"]);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(err.starts_with("error: cannot reach every node"), "{err}");
    assert!(
        !err.contains("run directory") && !err.contains("configuration 1/1"),
        "{err}"
    );
}

#[test]
fn ssh_settings_belong_to_slurm_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_experiment(dir.path(), "");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("kind = \"slurm\"", "kind = \"docker\"\nuser = \"me\"");
    std::fs::write(&path, text).unwrap();
    let err = plan::load(&path).unwrap_err();
    let e = &err.errors[0];
    assert!(
        e.message.contains("`user` is for `kind = \"slurm\"`"),
        "{}",
        e.message
    );
    assert_eq!((e.location.line, e.location.column), (6, 8));
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .flat_map(|e| {
            let p = e.path();
            if p.is_dir() { walk(&p) } else { vec![p] }
        })
        .collect()
}
