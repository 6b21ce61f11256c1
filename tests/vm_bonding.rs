//! The kernel's own bonding driver, end to end, on VM nodes (`--kind vm`): two QEMU guests
//! booting Debian's kernel (TCG where KVM does not work), each with a NIC on each of two
//! emulated 10 Mbit/s buses. The project's own scripts (`netconf::render`, as a run renders
//! them) configure a balance-rr bond and then an active-backup bond with `driver = "kernel"`;
//! `/proc/net/bonding/bond0` shows the mode and both slaves up; traffic crosses the bond (in
//! balance-rr on both slaves); each teardown leaves the node as it found it. Then `orchestrate
//! run` measures a stream over the kernel bond on the same cluster, and `cluster down` leaves
//! the host as before.

mod common;
#[path = "common/need.rs"]
mod need;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Instant;

/// Two nodes on two buses, bonded; `{mode}` filled in per test step.
const TOPOLOGY: &str = r#"
name = "{name}"

[generator]
kind = "bus"
nodes = 2
buses = 2
rate = "10mbit"
medium = "shared"
bond = { mode = "{mode}", miimon = 100, driver = "kernel" }
"#;

const EXPERIMENT: &str = r#"
name = "vmbond"
seed = 7
topologies = ["balance-rr.toml"]

[cluster]
kind = "vm"

[[workload]]
pattern = "stream"
sizes = [8192]
pairs = [1]
placement = ["local-wire"]
duration = "2s"
repetitions = 1
"#;

fn orchestrate(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_orchestrate"))
        .args(args)
        .env("NO_COLOR", "1")
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

/// A cluster up for the test, down on drop.
struct Cluster {
    name: String,
    state: String,
}

impl Cluster {
    /// `command` on `node` through `cluster ssh`, `stdin` on its standard input.
    fn ssh(&self, node: &str, command: &str, stdin: &[u8]) -> Output {
        let mut child = Command::new(env!("CARGO_BIN_EXE_orchestrate"))
            .args([
                "cluster",
                "ssh",
                "--name",
                &self.name,
                "--state-dir",
                &self.state,
            ])
            .args([node, "--", command])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("orchestrate runs");
        use std::io::Write;
        child.stdin.take().unwrap().write_all(stdin).unwrap();
        child.wait_with_output().unwrap()
    }

    fn must(&self, node: &str, command: &str) -> String {
        let out = self.ssh(node, command, b"");
        assert!(
            out.status.success(),
            "{node}: {command}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// What the node's scripts may change, and must put back.
    fn node_state(&self, node: &str) -> String {
        self.must(
            node,
            "ip -4 -o addr show; ip -4 route show table all; tc qdisc show; \
             ip -o link show | sed 's/ link\\/ether.*//'; sysctl net.ipv4.ip_forward; \
             ls /sys/class/net",
        )
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = orchestrate(&[
            "cluster",
            "down",
            "--name",
            &self.name,
            "--state-dir",
            &self.state,
        ]);
    }
}

/// Applies `mode`'s scripts on both nodes, checks the bond and the traffic, tears down and
/// checks each node is as before.
fn bond_on_both(c: &Cluster, dir: &Path, mode: &str, expected_mode_line: &str) {
    let path = dir.join(format!("{mode}.toml"));
    std::fs::write(
        &path,
        TOPOLOGY.replace("{name}", &c.name).replace("{mode}", mode),
    )
    .unwrap();
    let t = orchestrate::topology::load(&path).unwrap();
    let nodes = ["n01", "n02"];
    let before: Vec<String> = nodes.iter().map(|n| c.node_state(n)).collect();
    for n in nodes {
        let scripts = orchestrate::netconf::render(&t, t.node(&n.parse().unwrap()).unwrap());
        let out = c.ssh(
            n,
            "cat >/tmp/apply.sh && sh /tmp/apply.sh /tmp/ledger",
            scripts.apply.as_bytes(),
        );
        assert!(
            out.status.success(),
            "{mode} {n}: apply failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let bonding = c.must(n, "cat /proc/net/bonding/bond0");
        assert!(
            bonding.contains(expected_mode_line),
            "{mode} {n}:\n{bonding}"
        );
        let up_slaves = bonding
            .split("Slave Interface: ")
            .skip(1)
            .filter(|s| {
                s.lines()
                    .nth(1)
                    .is_some_and(|l| l.trim() == "MII Status: up")
            })
            .count();
        assert_eq!(up_slaves, 2, "{mode} {n}: both slaves up:\n{bonding}");
        std::fs::write(
            dir.join(format!("{mode}-{n}-teardown.sh")),
            &scripts.teardown,
        )
        .unwrap();
    }
    // Traffic across the bond: n01 pings n02's bond address; in balance-rr both slaves carry
    // it, in active-backup one does.
    let t2 = t.node(&"n02".parse().unwrap()).unwrap();
    let peer = t2
        .bonds
        .first()
        .map(|b| b.address.addr().to_string())
        .expect("n02's bond has an address");
    let tx = |n: &str| -> Vec<u64> {
        ["eth1", "eth2"]
            .iter()
            .map(|i| {
                c.must(n, &format!("cat /sys/class/net/{i}/statistics/tx_packets"))
                    .trim()
                    .parse()
                    .unwrap()
            })
            .collect()
    };
    let was = tx("n01");
    let ping = c.must("n01", &format!("ping -c 40 -i 0.05 -W 2 -q {peer}"));
    assert!(ping.contains(" 0% packet loss"), "{mode}: {ping}");
    let now = tx("n01");
    let sent: Vec<u64> = now.iter().zip(&was).map(|(a, b)| a - b).collect();
    eprintln!("{mode}: n01 sent {sent:?} frames on eth1, eth2 for 40 pings");
    if mode == "balance-rr" {
        assert!(
            sent.iter().all(|&s| s >= 15),
            "{mode}: round robin over both: {sent:?}"
        );
    } else {
        assert!(
            sent.iter().filter(|&&s| s >= 40).count() == 1,
            "{mode}: one active slave: {sent:?}"
        );
    }
    for (n, was) in nodes.iter().zip(&before) {
        let teardown = std::fs::read(dir.join(format!("{mode}-{n}-teardown.sh"))).unwrap();
        let out = c.ssh(
            n,
            "cat >/tmp/teardown.sh && sh /tmp/teardown.sh /tmp/ledger",
            &teardown,
        );
        assert!(
            out.status.success(),
            "{mode} {n}: teardown failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(&c.node_state(n), was, "{mode} {n}: not as found");
    }
}

#[test]
fn netns_tun_qemu_kernel_bonds_on_vm_nodes_balance_and_fail_over_and_leave_them_as_found() {
    require_needs!();
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let name = format!("vmb{}", std::process::id());
    let state = d.join("state").display().to_string();
    std::fs::write(
        d.join("balance-rr.toml"),
        TOPOLOGY
            .replace("{name}", &name)
            .replace("{mode}", "balance-rr"),
    )
    .unwrap();
    let worker = common::worker_binary();
    let up = orchestrate(&[
        "cluster",
        "up",
        d.join("balance-rr.toml").to_str().unwrap(),
        "--kind",
        "vm",
        "--state-dir",
        &state,
        "--worker",
        worker.to_str().unwrap(),
    ]);
    let c = Cluster {
        name: name.clone(),
        state: state.clone(),
    };
    assert!(up.status.success(), "cluster up --kind vm failed");
    eprintln!("up after {:.1} s", started.elapsed().as_secs_f64());
    // Each node is a guest with Debian's kernel, not this host's.
    let host_kernel =
        String::from_utf8(Command::new("uname").arg("-r").output().unwrap().stdout).unwrap();
    for n in ["n01", "n02"] {
        let kernel = c.must(n, "uname -r");
        assert_ne!(
            kernel.trim(),
            host_kernel.trim(),
            "{n} runs the host's kernel"
        );
        assert_eq!(c.must(n, "hostname").trim(), n);
    }

    bond_on_both(
        &c,
        d,
        "balance-rr",
        "Bonding Mode: load balancing (round-robin)",
    );
    bond_on_both(
        &c,
        d,
        "active-backup",
        "Bonding Mode: fault-tolerance (active-backup)",
    );
    eprintln!(
        "bonds checked after {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // A run measures over the kernel bond on the cluster that is up.
    std::fs::write(d.join("vmbond.toml"), EXPERIMENT).unwrap();
    let out = orchestrate(&[
        "run",
        d.join("vmbond.toml").to_str().unwrap(),
        "--out",
        d.join("out").to_str().unwrap(),
        "--state-dir",
        &state,
        "--worker",
        worker.to_str().unwrap(),
        "--timing",
        "record",
        "--keep-cluster",
    ]);
    assert!(out.status.success(), "the run failed");
    let runs: Vec<PathBuf> = std::fs::read_dir(d.join("out/vmbond"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let points = std::fs::read_to_string(runs[0].join("points.jsonl")).unwrap();
    assert!(points.contains("\"status\":\"ok\""), "{points}");
    let records = std::fs::read_to_string(runs[0].join("summary.csv")).unwrap();
    eprintln!("{records}");
    let manifest = std::fs::read_to_string(runs[0].join("manifest.json")).unwrap();
    // The manifest says what the nodes ran on.
    assert!(
        manifest.contains("VM nodes: QEMU with TCG")
            || manifest.contains("VM nodes: QEMU with KVM"),
        "{manifest}"
    );
    drop(c);
    eprintln!("took {:.1} s", started.elapsed().as_secs_f64());
}
