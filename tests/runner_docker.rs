//! `orchestrate run` end to end on the virtual cluster: every point measured and nodes left as
//! found (pre-existing addresses, routes and qdiscs included); a changed host key refused
//! before anything is configured; a node killed mid-run and a Ctrl-C mid-point each stop the
//! run with completed points on disk and every reachable node clean, and `--resume` finishes
//! the same points an uninterrupted run covers. Needs docker and root.

#[path = "common/need.rs"]
mod need;
#[path = "vcluster_support.rs"]
mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use orchestrate::remote::Inventory;

/// Both tests use the cluster named after their topology: one at a time, also under
/// `cargo test`'s threads (nextest runs docker tests one by one anyway).
static ONE_CLUSTER: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    ONE_CLUSTER.lock().unwrap_or_else(|p| p.into_inner())
}

/// A 2x2 routed mesh: four buses of two nodes, so remote-wire pairs cross a forwarding node.
const TOPOLOGY: &str = r#"
name = "rt-mesh"
[generator]
kind = "grid"
rows = 2
cols = 2
interconnect = "routed"
rate = "10mbit"
"#;

fn experiment(exchanges: u32) -> String {
    format!(
        r#"
name = "rt"
seed = 7
topologies = ["rt-mesh.toml"]

[[workload]]
pattern = "token"
sizes = [512, 4096]
pairs = [1, 2]
placement = ["local-wire", "remote-wire"]
exchanges = {exchanges}
repetitions = 2
statistic = "best"
"#
    )
}

struct Setup {
    tmp: tempfile::TempDir,
}

impl Setup {
    fn new(exchanges: u32) -> Setup {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("rt-mesh.toml"), TOPOLOGY).unwrap();
        std::fs::write(tmp.path().join("rt.toml"), experiment(exchanges)).unwrap();
        Setup { tmp }
    }
    fn p(&self, rel: &str) -> String {
        self.tmp.path().join(rel).display().to_string()
    }
    fn state(&self) -> String {
        self.p("state")
    }
    fn run_args(&self, extra: &[&str]) -> Vec<String> {
        // Checks the chain, not timing: tests run side by side on few cores.
        let mut a: Vec<String> = vec!["run".into(), "--timing".into(), "record".into()];
        a.extend(extra.iter().map(|s| s.to_string()));
        a.extend([
            "--out".into(),
            self.p("out"),
            "--state-dir".into(),
            self.state(),
        ]);
        a
    }
    fn inventory(&self) -> Inventory {
        Inventory::load(
            &self
                .tmp
                .path()
                .join("state/clusters/rt-mesh/inventory.toml"),
        )
        .unwrap()
    }
    /// The one run directory under out/rt/.
    fn run_dir(&self) -> PathBuf {
        let base = self.tmp.path().join("out/rt");
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(&base)
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        dirs.sort();
        dirs.pop().expect("a run directory")
    }
    fn down(&self) {
        support::orchestrate(&[
            "cluster",
            "down",
            "--name",
            "rt-mesh",
            "--state-dir",
            &self.state(),
        ]);
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        self.down();
    }
}

fn orchestrate_owned(args: &[String]) -> std::process::Output {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    support::orchestrate(&refs)
}

fn spawn(args: &[String]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_orchestrate"))
        .args(args)
        .current_dir(support::repo_root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn wait(child: Child, limit: Duration) -> std::process::Output {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => {
            let out = out.unwrap();
            eprintln!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            out
        }
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("orchestrate did not finish within {limit:?}");
        }
    }
}

fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn ok_points(dir: &Path) -> BTreeSet<u64> {
    lines(&dir.join("points.jsonl"))
        .iter()
        .filter(|p| p["status"] == "ok")
        .map(|p| p["point"].as_u64().unwrap())
        .collect()
}

fn planned_points(dir: &Path) -> BTreeSet<u64> {
    let plan: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("plan.json")).unwrap()).unwrap();
    plan["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_u64().unwrap())
        .collect()
}

/// Waits until the run directory exists and holds at least `n` finished points.
fn wait_for_points(s: &Setup, n: usize, limit: Duration) -> PathBuf {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(dir) = std::fs::read_dir(s.tmp.path().join("out/rt"))
            .ok()
            .and_then(|d| d.map(|e| e.unwrap().path()).next())
            && lines(&dir.join("points.jsonl")).len() >= n
        {
            return dir;
        }
        assert!(Instant::now() < deadline, "no {n} points within {limit:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// What a run may change on a node, to compare before and after.
const NODE_STATE: &str = "ip -4 -o addr show | sed 's/ *valid_lft.*//'; ip -4 route show table all; tc qdisc show | grep -v '^qdisc noqueue'; sysctl -n net.ipv4.ip_forward; ip -o link show | sed 's/ link\\/.*//'; ls -A /run/orchestrate 2>/dev/null; pgrep -a orchestrate-wor || true";

fn node_states(inv: &Inventory) -> Vec<(String, String)> {
    inv.hosts
        .iter()
        .map(|(n, h)| {
            let out = support::ssh(h, NODE_STATE);
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

fn node_ledgers_empty(inv: &Inventory, nodes: &[&str]) {
    for n in nodes {
        let out = support::ssh(inv.host(n).unwrap(), "test ! -s /run/orchestrate/ledger");
        assert!(out.status.success(), "{n} still has a ledger");
    }
}

#[test]
fn docker_run_measures_every_point_and_leaves_nodes_as_found() {
    require_needs!();
    let _one = exclusive();
    let s = Setup::new(100);
    support::orchestrate_ok(&[
        "cluster",
        "up",
        &s.p("rt-mesh.toml"),
        "--state-dir",
        &s.state(),
    ]);
    let inv = s.inventory();
    // State of its own on a node, which the run must leave exactly as it is.
    let out = support::ssh(
        inv.host("n01").unwrap(),
        "ip link set eth1 up && ip addr add 192.0.2.7/24 dev eth1 && ip route add 198.51.100.0/24 via 192.0.2.1 dev eth1 \
         && tc qdisc add dev eth2 root tbf rate 100mbit burst 32kb latency 50ms",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let before = node_states(&inv);

    // A changed host key is refused before anything is configured.
    let kh = s.tmp.path().join("state/clusters/rt-mesh/known_hosts");
    let pinned = std::fs::read_to_string(&kh).unwrap();
    let other = s.tmp.path().join("other_key");
    assert!(
        Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", ""])
            .arg("-f")
            .arg(&other)
            .status()
            .unwrap()
            .success()
    );
    let other_pub = std::fs::read_to_string(other.with_extension("pub")).unwrap();
    let other_key: Vec<&str> = other_pub.split_whitespace().take(2).collect();
    let n02_host = inv.host("n02").unwrap();
    let tampered: String = pinned
        .lines()
        .map(|l| {
            if l.starts_with(&n02_host.address) || l.starts_with(&format!("[{}]", n02_host.address))
            {
                format!(
                    "{} {}",
                    l.split_whitespace().next().unwrap(),
                    other_key.join(" ")
                )
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert_ne!(tampered, pinned, "n02's pinned key was found");
    std::fs::write(&kh, tampered + "\n").unwrap();
    let refused = orchestrate_owned(&s.run_args(&[&s.p("rt.toml")]));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        stderr.contains("n02") && stderr.contains("nothing was changed"),
        "{stderr}"
    );
    std::fs::write(&kh, &pinned).unwrap();
    assert_eq!(node_states(&inv), before, "a refused run touched a node");
    std::fs::remove_dir_all(s.tmp.path().join("out")).unwrap();

    let out = orchestrate_owned(&s.run_args(&[&s.p("rt.toml")]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = s.run_dir();
    assert_eq!(
        ok_points(&dir),
        planned_points(&dir),
        "every planned point measured"
    );
    assert_eq!(planned_points(&dir).len(), 16);
    let records = lines(&dir.join("records.jsonl"));
    assert!(
        records.len() >= 2 * 16,
        "client and server records per pair"
    );
    for r in &records {
        assert!(r["error"].is_null(), "{r}");
        assert_eq!(
            r["bytes"].as_u64().unwrap(),
            r["size_bytes"].as_u64().unwrap() * 100,
            "100 tokens each way: {r}"
        );
    }
    // Remote-wire pairs went through a forwarding node; the record's peer is the planned target.
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(
        manifest["nodes"].as_object().unwrap().len(),
        4,
        "a probe per node"
    );
    assert!(manifest["finished_unix_ns"].as_u64().is_some());
    for f in [
        "report.md",
        "summary.csv",
        "experiment.toml",
        "topologies/rt-mesh.toml",
        "scripts/0-rt-mesh/n01.apply.sh",
    ] {
        assert!(dir.join(f).exists(), "{f} missing");
    }
    assert!(!dir.join("ledger.json").exists());
    assert_eq!(node_states(&inv), before, "the run left a node changed");
}

#[test]
fn docker_killed_node_and_ctrl_c_keep_what_was_measured_and_resume_finishes() {
    require_needs!();
    let _one = exclusive();
    // Points of about a second each, so there is time to act mid-run.
    let s = Setup::new(400);
    let child = spawn(&s.run_args(&[&s.p("rt.toml")]));
    let dir = wait_for_points(&s, 2, Duration::from_secs(300));
    let status: serde_json::Value = serde_json::from_slice(
        &support::orchestrate(&[
            "cluster",
            "status",
            "--name",
            "rt-mesh",
            "--state-dir",
            &s.state(),
            "--json",
        ])
        .stdout,
    )
    .unwrap();
    let n04 = status["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "n04")
        .unwrap()["container"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        Command::new("docker")
            .args(["kill", &n04])
            .status()
            .unwrap()
            .success()
    );
    let out = wait(child, Duration::from_secs(300));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("n04"),
        "the failure names the node: {stderr}"
    );
    let kept = ok_points(&dir);
    assert!(kept.len() >= 2, "completed points are on disk");
    let records = lines(&dir.join("records.jsonl"));
    for p in &kept {
        assert!(
            records.iter().any(|r| r["point"].as_u64() == Some(*p)),
            "point {p} has records"
        );
    }
    // The run took down the cluster it brought up; with it went the dead node's changes. The
    // reachable nodes were torn down before that: the run log says so for each.
    let log = std::fs::read_to_string(dir.join("run.log")).unwrap();
    assert!(
        log.contains("torn down") || log.contains("teardown left changes"),
        "{log}"
    );
    let ledger: Option<serde_json::Value> = std::fs::read_to_string(dir.join("ledger.json"))
        .ok()
        .map(|t| serde_json::from_str(&t).unwrap());
    if let Some(l) = &ledger {
        assert_eq!(
            l["nodes"],
            serde_json::json!(["n04"]),
            "only the dead node may be left in the ledger"
        );
    }

    // Bring the node back (a fresh cluster) and finish.
    s.down();
    let out = orchestrate_owned(&s.run_args(&["--resume", dir.to_str().unwrap()]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        ok_points(&dir),
        planned_points(&dir),
        "resume covers exactly the planned points"
    );
    assert!(!dir.join("ledger.json").exists());

    // Ctrl-C mid-point: same guarantees.
    std::fs::remove_dir_all(s.tmp.path().join("out")).unwrap();
    support::orchestrate_ok(&[
        "cluster",
        "up",
        &s.p("rt-mesh.toml"),
        "--state-dir",
        &s.state(),
    ]);
    let inv = s.inventory();
    let before = node_states(&inv);
    let child = spawn(&s.run_args(&[&s.p("rt.toml")]));
    let dir = wait_for_points(&s, 1, Duration::from_secs(300));
    // Not a synchronisation: what follows holds wherever Ctrl-C lands. A moment into the
    // next point makes it likelier to land while servers and clients run on the nodes.
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    let out = wait(child, Duration::from_secs(120));
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!ok_points(&dir).is_empty());
    assert!(
        !dir.join("ledger.json").exists(),
        "every node was torn down"
    );
    node_ledgers_empty(&inv, &["n01", "n02", "n03", "n04"]);
    assert_eq!(
        node_states(&inv),
        before,
        "an interrupted run left a node changed"
    );
    let out = orchestrate_owned(&s.run_args(&["--resume", dir.to_str().unwrap()]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(ok_points(&dir), planned_points(&dir));
}
