//! Multipath TCP on the virtual cluster, through `orchestrate run` with `[multipath] modes`:
//! on two shared 10 Mbit/s buses, one MPTCP stream gets at least 1.8x what plain TCP gets on the
//! same nodes and wires (mode "none": one bus), its records show that it used two subflows,
//! and the nodes are left with the MPTCP endpoints and limits they had.
//!
//! Needs docker and root; says SKIPPED otherwise.

#[path = "common/need.rs"]
mod need;
#[path = "vcluster_support.rs"]
mod support;

use std::path::{Path, PathBuf};

use orchestrate::remote::Inventory;

const TOPOLOGY: &str = r#"
name = "dual"
[generator]
kind = "bus"
nodes = 4
buses = 2
rate = "10mbit"
medium = "shared"
bond = { mode = "balance-rr", miimon = 100 }
"#;

const EXPERIMENT: &str = r#"
name = "mp"
seed = 7
topologies = ["dual.toml"]

[multipath]
modes = ["mptcp", "none"]

[[workload]]
pattern = "stream"
sizes = ["64KiB"]
pairs = [1]
placement = ["local-wire"]
duration = "4s"
repetitions = 3
statistic = "best"
"#;

/// What a run may change on a node for Multipath TCP, to compare before and after.
const MPTCP_STATE: &str = "ip mptcp limits show; ip mptcp endpoint show; ip -4 -o addr show | sed 's/ *valid_lft.*//'; ip -4 route show table all";

struct Setup {
    tmp: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("dual.toml"), TOPOLOGY).unwrap();
        std::fs::write(tmp.path().join("mp.toml"), EXPERIMENT).unwrap();
        Setup { tmp }
    }
    fn p(&self, rel: &str) -> String {
        self.tmp.path().join(rel).display().to_string()
    }
    fn inventory(&self) -> Inventory {
        Inventory::load(&self.tmp.path().join("state/clusters/dual/inventory.toml")).unwrap()
    }
    fn run_dir(&self) -> PathBuf {
        let base = self.tmp.path().join("out/mp");
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&base)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        dirs.sort();
        dirs.pop().expect("a run directory")
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        support::orchestrate(&[
            "cluster",
            "down",
            "--name",
            "dual",
            "--state-dir",
            &self.p("state"),
        ]);
    }
}

fn mptcp_states(inv: &Inventory) -> Vec<(String, String)> {
    inv.hosts
        .iter()
        .map(|(n, h)| {
            let out = support::ssh(h, MPTCP_STATE);
            assert!(
                out.status.success(),
                "{n}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            (
                n.to_string(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
            )
        })
        .collect()
}

/// The stream's receiving-side records of one mode (the side whose figure a stream reports).
fn stream_records(dir: &Path, mode: &str) -> Vec<serde_json::Value> {
    support::jsonl(&dir.join("records.jsonl"))
        .into_iter()
        .filter(|r| r["bonding"] == mode && r["role"] == "server")
        .collect()
}

fn best_mbit_s(records: &[serde_json::Value]) -> f64 {
    records
        .iter()
        .filter(|r| r["error"].is_null())
        .filter_map(|r| r["throughput_mbit_s"].as_f64())
        .fold(0.0, f64::max)
}

#[test]
fn docker_one_mptcp_stream_uses_both_buses_and_leaves_the_nodes_as_found() {
    require_needs!();
    let s = Setup::new();
    support::orchestrate_ok(&[
        "cluster",
        "up",
        &s.p("dual.toml"),
        "--state-dir",
        &s.p("state"),
    ]);
    let inv = s.inventory();
    let before = mptcp_states(&inv);
    support::orchestrate_ok(&[
        "run",
        // Checks the chain, not timing: tests run side by side on few cores.
        "--timing",
        "record",
        &s.p("mp.toml"),
        "--out",
        &s.p("out"),
        "--state-dir",
        &s.p("state"),
    ]);
    assert_eq!(
        mptcp_states(&inv),
        before,
        "the run left MPTCP limits, endpoints, addresses or routes changed"
    );

    let dir = s.run_dir();
    let mptcp = stream_records(&dir, "mptcp");
    let one_bus = best_mbit_s(&stream_records(&dir, "none"));
    let multipath = best_mbit_s(&mptcp);
    eprintln!(
        "one stream: plain TCP {one_bus:.2} Mbit/s, MPTCP {multipath:.2} Mbit/s: {:.2}x",
        multipath / one_bus
    );
    assert!(
        one_bus > 7.0,
        "one bus carries most of its 10 Mbit/s: {one_bus}"
    );
    assert!(
        multipath >= 1.8 * one_bus,
        "MPTCP {multipath:.2} vs one bus {one_bus:.2} Mbit/s"
    );
    assert!(!mptcp.is_empty());
    for r in &mptcp {
        assert_eq!(r["protocol"], "mptcp", "{r}");
        assert_eq!(r["subflows"], 2, "an MPTCP stream over two buses: {r}");
    }
    for r in stream_records(&dir, "none") {
        assert_eq!(r["protocol"], "tcp", "{r}");
        assert!(r["subflows"].is_null(), "plain TCP has no subflows: {r}");
    }
}
